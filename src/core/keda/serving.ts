/**
 * What KEDA v2.20.2's metrics server answers for a ScaledObject's External metric
 * (`pkg/provider/provider.go`, `pkg/scaling/scale_handler.go GetScaledObjectMetrics`,
 * `pkg/metricsservice`): which ScaledObject a read is for, which of its metrics it names (case
 * folded: the HPA's client lowercases the name), the item (the spec's casing, the value as
 * `quantityFromFloat64` writes it, the timestamp cut to seconds), and KEDA's error texts.
 *
 * @module
 */
import { kedaMilliQuantity } from "./hpa.ts";
import { KEDA_SCALED_OBJECT_LABEL } from "./names.ts";

/** One item of an external metric value list, as KEDA serves it. */
export interface KedaMetricItem {
  metricName: string;
  metricLabels: null;
  /** RFC 3339, whole seconds, UTC. */
  timestamp: string;
  value: string;
}

/** The ScaledObject a read is for, by its selector's equalities; throws KEDA's error. */
export function kedaScaledObjectOfSelector(labels: ReadonlyMap<string, string>): string {
  const name = labels.get(KEDA_SCALED_OBJECT_LABEL) ?? "";
  if (name === "") throw new Error("scaledObject name is not specified");
  return name;
}

/** Go's `strings.EqualFold` for the names KEDA compares (ASCII and simple case folding). */
export function equalFold(a: string, b: string): boolean {
  return a === b || a.toLowerCase() === b.toLowerCase() || a.toUpperCase() === b.toUpperCase();
}

/** The metric of `names` (a ScaledObject's, in the spec's casing) that `requested` names. */
export function kedaMatchMetric(names: readonly string[], requested: string): string | undefined {
  return names.find((n) => equalFold(n, requested));
}

/** KEDA's item for a value of `metricName` read at `now` (ms since the epoch). */
export function kedaMetricItem(metricName: string, value: number, now: number): KedaMetricItem {
  const seconds = Math.floor(now / 1000) * 1000;
  return {
    metricName,
    metricLabels: null,
    timestamp: new Date(seconds).toISOString().replace(".000Z", "Z"),
    value: kedaMilliQuantity(value),
  };
}

/**
 * The message of KEDA's error for a read (HTTP 500, reason empty), as the HPA sees it: the
 * operator's error, through gRPC (`codes.Unknown`) and the metrics server unchanged.
 */
export function kedaReadError(kind: "failed" | "no match", requested: string): string {
  const err = kind === "failed"
    ? `metric:${requested} encountered error`
    : `no matching metrics found for ${requested}`;
  return `rpc error: code = Unknown desc = error when getting metric values ${err}`;
}
