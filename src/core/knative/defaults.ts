/**
 * The defaults of the Knative mapping that the flags need, apart from the mapping itself
 * (core/knative/mapping.ts): `serve` loads the mapping only with `--knative-autoscaler`, and its flags
 * are defined before that.
 *
 * @module
 */

/** autoscaler-keda's default Prometheus address (`autoscaler.keda.prometheus-address`). */
export const DEFAULT_KNATIVE_PROMETHEUS_ADDRESS = "http://prometheus-operated.default.svc:9090";
