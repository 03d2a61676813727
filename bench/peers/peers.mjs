// The peers bench/peers/run.mjs compares this adapter with: how each is built and started on
// the e2e harness. One entry a peer; the runner needs nothing else of it.
import { existsSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import {
  ensurePrometheusAdapter,
  prometheusAdapterVersion,
} from "../../tests/e2e/prometheus_adapter_tool.ts";
import { ensureKeda, kedaCerts, kedaVersion } from "../../tests/e2e/keda_tool.ts";

/**
 * The serving and delegated authentication flags of custom-metrics-apiserver, which all three
 * peers' metrics servers are built on: address, port, the harness's serving certificate, a
 * scratch certificate folder, and the adapter service account's kubeconfig for the lister,
 * authentication and authorization.
 */
function apiserverFlags(o) {
  return [
    `--bind-address=${o.ip}`,
    `--secure-port=${o.port}`,
    `--tls-cert-file=${o.servingCert}`,
    `--tls-private-key-file=${o.servingKey}`,
    `--cert-dir=${o.dir}`,
    `--lister-kubeconfig=${o.kubeconfig}`,
    `--authentication-kubeconfig=${o.kubeconfig}`,
    `--authorization-kubeconfig=${o.kubeconfig}`,
  ];
}

/**
 * Each peer: `fleet` (its fleet in bench/peers/fleets.mjs), `version()`, `ensure()` (its
 * binaries, built if needed: may take minutes) and either `command(bin, o)`, its command line,
 * or `processes(bins, o)`, its processes ([{ name, argv, env }]), on address `o.ip`, port
 * `o.port`, with the harness's PKI (`o.servingCert`, `o.servingKey`), the adapter service
 * account's kubeconfig `o.kubeconfig` (so that the audit log, which records that user's requests,
 * counts its requests as it counts ours), the Prometheus server `o.prometheusUrl`,
 * prometheus-adapter's config file `o.config`, its relist interval `o.relist` ("1m"), a
 * scratch folder `o.dir` and what the fleet's correctness pass adds (KEDA:
 * `o.watchNamespaces`).
 * kube-metrics-adapter reads neither `o.config` nor `o.relist`: its HPAs say what to collect
 * (their `metric-config.*` annotations), and it lists the HPAs every 30 s.
 */
export const PEERS = {
  "prometheus-adapter": {
    fleet: "prometheus-adapter",
    version: () => prometheusAdapterVersion(),
    ensure: () => ensurePrometheusAdapter(),
    command: (bin, o) => [
      bin,
      ...apiserverFlags(o),
      `--prometheus-url=${o.prometheusUrl}`,
      `--metrics-relist-interval=${o.relist}`,
      `--config=${o.config}`,
      "--v=1",
    ],
  },
  /**
   * KEDA v2.20.2 (tests/e2e/keda_tool.ts), as its manifests deploy it (config/manager: the
   * operator with `--leader-elect`), out of cluster: the operator (ScaledObject controller, HPA
   * writer, scale loop, the gRPC metrics service on loopback) and the metrics API server
   * (external.metrics.k8s.io, asking the operator), linked by certificates made in `o.dir`
   * (its `--cert-dir`); no certificate rotation or webhook patching (nothing to rotate here).
   */
  keda: {
    fleet: "keda",
    version: () => kedaVersion(),
    ensure: () => ensureKeda(),
    processes: (bins, o) => {
      kedaCerts(o.dir, [o.ip]);
      const env = {
        KUBECONFIG: o.kubeconfig,
        WATCH_NAMESPACE: o.watchNamespaces ?? "",
        POD_NAMESPACE: "keda",
        KEDA_CLUSTER_OBJECT_NAMESPACE: "keda",
      };
      return [
        {
          name: "operator",
          env,
          argv: [
            bins.operator,
            "--leader-elect",
            "--enable-cert-rotation=false",
            `--cert-dir=${o.dir}`,
            "--metrics-bind-address=127.0.0.1:18080",
            "--health-probe-bind-address=127.0.0.1:18081",
            "--metrics-service-bind-address=127.0.0.1:19666",
            "--zap-log-level=info",
            "--zap-encoder=console",
          ],
        },
        {
          name: "metrics-server",
          env,
          argv: [
            bins.adapter,
            ...apiserverFlags(o),
            "--metrics-service-address=127.0.0.1:19666",
            "--port=18082",
            "--zap-log-level=info",
            "--zap-encoder=console",
          ],
        },
      ];
    },
  },
  // kube-metrics-adapter (KMA) at commit 1079c7d, its custom and external metrics APIs, its
  // ScalingSchedule collection and the Prometheus collector on; AWS, ZMON, Nakadi, InfluxDB and
  // Skipper are off unless a flag names them, so none is named. It has no leader election and
  // one kubeconfig for everything (bench/README.md has the flags' sources in its code).
  "kube-metrics-adapter": {
    fleet: "kube-metrics-adapter",
    version: () => KMA_VERSION,
    ensure: () => kubeMetricsAdapterBinary(),
    command: (bin, o) => [
      bin,
      // --lister-kubeconfig is its client for everything (collectors, HPA lists, schedules):
      // without it, in-cluster config
      ...apiserverFlags(o),
      // its Prometheus metrics (and net/http/pprof): ":7979", every address, by default
      `--metrics-address=${o.ip}:7979`,
      "--enable-custom-metrics-api=true",
      "--enable-external-metrics-api=true",
      // the Prometheus collector (HPAs' prometheus-query annotations) when there is a Prometheus
      ...(o.prometheusUrl ? [`--prometheus-server=${o.prometheusUrl}`] : []),
      "--scaling-schedule",
    ],
  },
};

/** A peer's processes on `o` (peers with one command line: that one). */
export function peerProcesses(name, bins, o) {
  const peer = PEERS[name];
  return peer.processes
    ? peer.processes(bins, o)
    : [{ name: "adapter", argv: peer.command(bins, o), env: {} }];
}

/** kube-metrics-adapter's version: `git describe --tags` of the pinned commit. */
const KMA_VERSION = "v0.2.9-36-g1079c7d";

/**
 * A kube-metrics-adapter binary of the pinned commit: `KMA_BIN`, else the one in the cache
 * (~/.cache/hpa-e2e/kube-metrics-adapter-1079c7d/kube-metrics-adapter; XDG_CACHE_HOME moves
 * it). The Go module proxy serves no module to build it from: bench/README.md says where it
 * comes from.
 */
function kubeMetricsAdapterBinary() {
  const bin = process.env.KMA_BIN;
  if (bin) {
    if (!existsSync(bin)) throw new Error(`KMA_BIN=${bin}: no such file`);
    return bin;
  }
  const cache = process.env.XDG_CACHE_HOME || join(process.env.HOME ?? "/root", ".cache");
  const path = join(cache, "hpa-e2e", "kube-metrics-adapter-1079c7d", "kube-metrics-adapter");
  if (existsSync(path)) return path;
  throw new Error(
    `no kube-metrics-adapter binary at ${path}: put one there, or set KMA_BIN to one, built ` +
      `from github.com/zalando-incubator/kube-metrics-adapter at commit 1079c7d ` +
      `(${KMA_VERSION}; bench/README.md, "kube-metrics-adapter")`,
  );
}

/**
 * Our adapter's common command line, with its defaults otherwise (leader election on), as it
 * would be deployed in the peer's place; each fleet adds what serves the peer's configuration
 * (fleets.mjs `ours`: prometheus-adapter's config file, KEDA's ScaledObjects ...).
 */
export function oursCommand(bin, o) {
  return [
    bin,
    "serve",
    `--kubeconfig=${o.kubeconfig}`,
    `--bind-address=${o.ip}`,
    `--secure-port=${o.port}`,
    `--tls-cert-file=${o.servingCert}`,
    `--tls-private-key-file=${o.servingKey}`,
    `--cert-dir=${o.dir}`,
    `--metrics-address=${o.ip}:7979`,
    `--leader-elect-resource-namespace=hpa-metrics-adapter`,
    "--v=1",
  ];
}
