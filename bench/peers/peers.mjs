// The peers bench/peers/run.mjs compares this adapter with: how each is built and started on
// the e2e harness. One entry a peer; the runner needs nothing else of it.
import {
  ensurePrometheusAdapter,
  prometheusAdapterVersion,
} from "../../tests/e2e/prometheus_adapter_tool.ts";

/**
 * Each peer: `version()`, `ensure()` (the path of its binary, built if needed: may take
 * minutes) and `command(bin, o)`: its command line on address `o.ip`, port `o.port`, with the
 * harness's PKI (`o.servingCert`, `o.servingKey`), the adapter service account's kubeconfig
 * `o.kubeconfig` (so that the audit log, which records that user only, counts its requests as
 * it counts ours), the Prometheus server `o.prometheusUrl`, prometheus-adapter's config file
 * `o.config`, its relist interval `o.relist` ("1m") and a scratch folder `o.dir`.
 */
export const PEERS = {
  "prometheus-adapter": {
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
};

/**
 * Our adapter's command line for the same part: serving prometheus-adapter's config file
 * (README "Coming from prometheus-adapter") with its defaults otherwise (leader election on,
 * collection every 60 s), as it would be deployed in the peer's place.
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
    `--prometheus-server=${o.prometheusUrl}`,
    `--prometheus-adapter-config=${o.config}`,
    `--metrics-relist-interval=${o.relist}`,
    "--v=1",
  ];
}
