// The peers bench/peers/run.mjs compares this adapter with: how each is built and started on
// the e2e harness. One entry a peer; the runner needs nothing else of it.
import {
  ensurePrometheusAdapter,
  prometheusAdapterVersion,
} from "../../tests/e2e/prometheus_adapter_tool.ts";
import { ensureKeda, kedaCerts, kedaVersion } from "../../tests/e2e/keda_tool.ts";

/**
 * Each peer: `fleet` (its fleet in bench/peers/fleets.mjs), `version()`, `ensure()` (its
 * binaries, built if needed: may take minutes) and either `command(bin, o)`, its command line,
 * or `processes(bins, o)`, its processes ([{ name, argv, env }]), on address `o.ip`, port
 * `o.port`, with the harness's PKI (`o.servingCert`, `o.servingKey`), the adapter service
 * account's kubeconfig `o.kubeconfig` (so that the audit log, which records that user only,
 * counts its requests as it counts ours), the Prometheus server `o.prometheusUrl`,
 * prometheus-adapter's config file `o.config`, its relist interval `o.relist` ("1m"), a
 * scratch folder `o.dir` and what the fleet's correctness pass adds (KEDA:
 * `o.watchNamespaces`).
 */
export const PEERS = {
  "prometheus-adapter": {
    fleet: "prometheus-adapter",
    version: () => prometheusAdapterVersion(),
    ensure: () => ensurePrometheusAdapter(),
    command: (bin, o) => [
      bin,
      `--bind-address=${o.ip}`,
      `--secure-port=${o.port}`,
      `--tls-cert-file=${o.servingCert}`,
      `--tls-private-key-file=${o.servingKey}`,
      `--cert-dir=${o.dir}`,
      `--lister-kubeconfig=${o.kubeconfig}`,
      `--authentication-kubeconfig=${o.kubeconfig}`,
      `--authorization-kubeconfig=${o.kubeconfig}`,
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
            `--bind-address=${o.ip}`,
            `--secure-port=${o.port}`,
            `--cert-dir=${o.dir}`,
            `--tls-cert-file=${o.servingCert}`,
            `--tls-private-key-file=${o.servingKey}`,
            `--lister-kubeconfig=${o.kubeconfig}`,
            `--authentication-kubeconfig=${o.kubeconfig}`,
            `--authorization-kubeconfig=${o.kubeconfig}`,
            "--metrics-service-address=127.0.0.1:19666",
            "--port=18082",
            "--zap-log-level=info",
            "--zap-encoder=console",
          ],
        },
      ];
    },
  },
};

/** A peer's processes on `o` (peers with one command line: that one). */
export function peerProcesses(name, bins, o) {
  const peer = PEERS[name];
  return peer.processes
    ? peer.processes(bins, o)
    : [{ name: "adapter", argv: peer.command(bins, o), env: {} }];
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
