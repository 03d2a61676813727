/**
 * The HorizontalPodAutoscaler controller's replica algorithm as one pure function, for the metric
 * types this adapter serves (Pods, Object, External). It mirrors kube-controller-manager
 * 1.33/1.34 (`pkg/controller/podautoscaler/horizontal.go` and `replica_calculator.go`,
 * including KEP-4951's per-direction `behavior.scaleUp/scaleDown.tolerance`) so that tools can
 * predict what a real controller will do: `explain`, manifest linting, and the end-to-end test
 * that compares the prediction with a real controller.
 *
 * Upstream keeps the recommendation and scale-event history in the controller's memory and reads
 * the clock; here both are explicit inputs and the updated history is part of the result.
 *
 * Numbers follow upstream exactly: every quantity becomes an integer milli-value (upstream
 * `Quantity.MilliValue()`, rounding up), averages use integer division, and ratios and products
 * are IEEE doubles like Go's float64, so `ceil(1.1 * 10)` is 12 here as it is there.
 *
 * @module
 */

import { parseQuantity } from "./quantity.ts";
import type { MetricTarget } from "../types.ts";

/** A metric value as served: a number or a Kubernetes Quantity string (`"1500m"`, `"2k"`). */
export type HpaQuantity = number | string;

/**
 * One pod selected by the scale target's selector, as the controller's pod lister sees it.
 * Only what the algorithm reads.
 */
export interface HpaPod {
  name: string;
  /** `status.phase`; default `Running`. */
  phase?: "Pending" | "Running" | "Succeeded" | "Failed" | "Unknown";
  /** The `Ready` condition is `True`; default true. Only Object/External Value targets read it. */
  ready?: boolean;
  /** `metadata.deletionTimestamp` is set. */
  deleting?: boolean;
}

/** A `type: Pods` entry of `spec.metrics` with the per-pod values the custom metrics API returned. */
export interface HpaPodsMetricObservation {
  type: "Pods";
  metricName: string;
  /** Upstream reads `target.averageValue` whatever `target.type` says. */
  target: MetricTarget;
  /** Values by pod name (the items of the custom metrics API answer). */
  values?: Record<string, HpaQuantity>;
  /** The metric could not be fetched (the API answered an error); the entry is invalid. */
  error?: string;
}

/** A `type: Object` entry of `spec.metrics` with the one value the custom metrics API returned. */
export interface HpaObjectMetricObservation {
  type: "Object";
  metricName: string;
  /** `describedObject.kind`, used in the metric's description only. */
  describedObjectKind?: string;
  target: MetricTarget;
  value?: HpaQuantity;
  error?: string;
}

/** A `type: External` entry of `spec.metrics` with the items the external metrics API returned. */
export interface HpaExternalMetricObservation {
  type: "External";
  metricName: string;
  target: MetricTarget;
  /** One value per returned item; upstream sums them. */
  values?: HpaQuantity[];
  error?: string;
}

/** One `spec.metrics[]` entry together with what was observed for it. */
export type HpaMetricObservation =
  | HpaPodsMetricObservation
  | HpaObjectMetricObservation
  | HpaExternalMetricObservation;

/** autoscaling/v2 HPAScalingPolicy. */
export interface HpaScalingPolicy {
  type: "Pods" | "Percent";
  value: number;
  periodSeconds: number;
}

/** autoscaling/v2 HPAScalingRules (one direction of `spec.behavior`). */
export interface HpaScalingRules {
  stabilizationWindowSeconds?: number;
  selectPolicy?: "Max" | "Min" | "Disabled";
  policies?: HpaScalingPolicy[];
  /** KEP-4951 tolerance (a Quantity such as `"0.05"` or `"50m"`). */
  tolerance?: HpaQuantity;
}

/** autoscaling/v2 HorizontalPodAutoscalerBehavior. */
export interface HpaAlgorithmBehavior {
  scaleUp?: HpaScalingRules;
  scaleDown?: HpaScalingRules;
}

/** A past unstabilized recommendation (upstream `timestampedRecommendation`). */
export interface HpaRecommendation {
  /** Epoch milliseconds. */
  timestamp: number;
  replicas: number;
}

/** A past rescale (upstream `timestampedScaleEvent`); `replicaChange` is positive in both lists. */
export interface HpaScaleEvent {
  /** Epoch milliseconds. */
  timestamp: number;
  replicaChange: number;
  /** Set once the event is older than the direction's longest policy period; slot reusable. */
  outdated?: boolean;
}

/** Everything one reconcile of one HPA depends on. */
export interface HpaAlgorithmInput {
  /** Epoch milliseconds of this reconcile. */
  now: number;
  /** The scale subresource's `spec.replicas`. */
  currentReplicas: number;
  /** The scale subresource's `status.replicas`; default `currentReplicas`. */
  statusReplicas?: number;
  /** `spec.minReplicas`; default 1. */
  minReplicas?: number;
  maxReplicas: number;
  metrics: HpaMetricObservation[];
  /** Pods matched by the scale selector; Pods metrics and Value targets need them. */
  pods?: HpaPod[];
  behavior?: HpaAlgorithmBehavior;
  /** The controller's `--horizontal-pod-autoscaler-tolerance`; default 0.1. */
  tolerance?: number;
  /** The controller's `--horizontal-pod-autoscaler-downscale-stabilization` in s; default 300. */
  downscaleStabilizationWindowSeconds?: number;
  /** Honour `behavior.*.tolerance` (feature gate HPAConfigurableTolerance); default true. */
  configurableTolerance?: boolean;
  /**
   * Past recommendations. Omit on the controller's first sight of the HPA: upstream then records
   * the current replica count first (`recordInitialRecommendation`), which holds back a
   * scale-down on the very first reconcile.
   */
  recommendations?: HpaRecommendation[];
  scaleUpEvents?: HpaScaleEvent[];
  scaleDownEvents?: HpaScaleEvent[];
}

/** What one metric proposed. */
export interface HpaMetricRecommendation {
  type: HpaMetricObservation["type"];
  metricName: string;
  /** Upstream's description of the metric (`pods metric queue-length`). */
  description: string;
  /** Proposed replica count, or null when the metric is invalid. */
  replicas: number | null;
  /** The usage ratio the decision started from, or null. */
  ratio: number | null;
  /** The current value as the HPA status reports it, or null. */
  current: number | null;
  error?: string;
}

/** Reasons of the `ScalingLimited` condition that normalization sets. */
export type HpaLimitReason =
  | "DesiredWithinRange"
  | "ScaleUpLimit"
  | "TooManyReplicas"
  | "TooFewReplicas"
  | "ScaleDownLimit";

/** The decision and the state to carry into the next reconcile. */
export interface HpaAlgorithmResult {
  /** The replica count the controller scales to (or keeps). */
  desiredReplicas: number;
  /** The max over valid metrics before stabilization and limits; null when not computed. */
  metricDesiredReplicas: number | null;
  perMetric: HpaMetricRecommendation[];
  /** `ScalingLimited` reason, null when normalization did not run. */
  condition: HpaLimitReason | null;
  /** The message that goes with `condition` (upstream returns it as "reason"). */
  reason: string;
  /** `ScalingLimited` status: the limits changed the stabilized recommendation. */
  scalingLimited: boolean;
  /** `AbleToScale` reason set by stabilization, null when normalization did not run. */
  stabilization: "ReadyForNewScale" | "ScaleUpStabilized" | "ScaleDownStabilized" | null;
  /** The recommendation after the stabilization window, before the rate limits. */
  stabilizedReplicas: number | null;
  /** `ScalingActive` condition. */
  scalingActive: { status: boolean; reason: string; message: string };
  /** Upstream's rescale reason for the event (`pods metric x above target`). */
  rescaleReason: string;
  /** Set when metrics failed; with `metricDesiredReplicas: null` nothing was scaled. */
  error?: string;
  recommendations: HpaRecommendation[];
  scaleUpEvents: HpaScaleEvent[];
  scaleDownEvents: HpaScaleEvent[];
}

const DEFAULT_TOLERANCE = 0.1;
const DEFAULT_DOWNSCALE_STABILIZATION_SECONDS = 300;
const MAX_INT32 = 2147483647;
const MIN_INT32 = -2147483648;

// --- quantities ---------------------------------------------------------------------------------

/** Kubernetes Quantity string to a number, naming what it was for when it is not one. */
function quantityNumber(input: string, what: string): number {
  try {
    return parseQuantity(input);
  } catch {
    throw new Error(`invalid quantity "${input}" for ${what}`);
  }
}

/**
 * Upstream `Quantity.MilliValue()`: the value in thousandths, rounded up. The small snap absorbs
 * the binary error of decimal input (`2.007 * 1000` is `2007.0000000000002`, which must stay 2007).
 */
function milliValue(v: HpaQuantity, what: string): number {
  const x = typeof v === "number" ? v : quantityNumber(v, what);
  if (!Number.isFinite(x)) throw new Error(`invalid quantity "${v}" for ${what}`);
  const m = x * 1000;
  const r = Math.round(m);
  if (Math.abs(m - r) <= 1e-9 * Math.max(1, Math.abs(m))) return r;
  return Math.ceil(m);
}

/** Upstream `Quantity.AsApproximateFloat64()`, as the tolerance is read. */
function approximateFloat(v: HpaQuantity, what: string): number {
  const x = typeof v === "number" ? v : quantityNumber(v, what);
  if (!Number.isFinite(x) || x < 0) throw new Error(`invalid tolerance "${v}" for ${what}`);
  return x;
}

// --- per-metric recommendations (replica_calculator.go) -----------------------------------------

/** Scale-down and scale-up tolerances (upstream `Tolerances`). */
interface Tolerances {
  scaleDown: number;
  scaleUp: number;
}

/** Upstream `Tolerances.isWithin`: the ratio is close enough to 1 to keep the current count. */
function isWithin(t: Tolerances, usageRatio: number): boolean {
  return 1.0 - t.scaleDown <= usageRatio && usageRatio <= 1.0 + t.scaleUp;
}

/** Upstream `int32(math.Ceil(x))`, capped at MaxInt32 as the newer code paths do. */
function ceilInt32(x: number): number {
  return x > MAX_INT32 ? MAX_INT32 : Math.ceil(x);
}

class MetricError extends Error {}

interface Proposal {
  replicas: number;
  ratio: number;
  current: number;
}

interface MetricContext {
  specReplicas: number;
  statusReplicas: number;
  pods: HpaPod[] | undefined;
  tolerances: Tolerances;
}

/** Upstream `GetMetricUsageRatio`: integer average of milli-values, then a float ratio. */
function metricUsageRatio(values: Map<string, number>, targetMilli: number): [number, number] {
  let total = 0;
  for (const v of values.values()) total += v;
  const currentUsage = Math.trunc(total / values.size);
  return [currentUsage / targetMilli, currentUsage];
}

function targetMilli(q: string | undefined, field: string, m: HpaMetricObservation): number {
  if (q === undefined) {
    throw new MetricError(`no ${field} target set for ${m.type} metric ${m.metricName}`);
  }
  const v = milliValue(q, `${m.type} metric ${m.metricName} target ${field}`);
  if (v <= 0) {
    throw new MetricError(`invalid ${field} target "${q}" for ${m.type} metric ${m.metricName}`);
  }
  return v;
}

/**
 * Pods metric, AverageValue target. Mirrors `GetMetricReplicas` -> `calcPlainMetricReplicas`
 * with `groupPods` for a non-CPU metric: deleted and Failed pods are ignored, Pending pods are
 * unready, pods without a value are missing, every other pod is ready. Missing pods count as the
 * target on a scale-down and as 0 on a scale-up, unready pods as 0 on a scale-up; the ratio is
 * then recomputed and a reversed direction or a ratio within tolerance keeps the current count.
 */
function podsMetricReplicas(m: HpaPodsMetricObservation, ctx: MetricContext): Proposal {
  const target = targetMilli(m.target.averageValue, "averageValue", m);
  const entries = Object.entries(m.values ?? {});
  if (entries.length === 0) {
    throw new MetricError(
      `unable to get metric ${m.metricName}: no metrics returned from custom metrics API`,
    );
  }
  const pods = ctx.pods ?? [];
  if (pods.length === 0) {
    throw new MetricError("no pods returned by selector while calculating replica count");
  }
  const metrics = new Map<string, number>();
  for (const [pod, v] of entries) {
    metrics.set(pod, milliValue(v, `pod ${pod} of metric ${m.metricName}`));
  }

  let readyPodCount = 0;
  const unready = new Set<string>();
  const missing = new Set<string>();
  const ignored = new Set<string>();
  for (const pod of pods) {
    const phase = pod.phase ?? "Running";
    if (pod.deleting || phase === "Failed") ignored.add(pod.name);
    else if (phase === "Pending") unready.add(pod.name);
    else if (!metrics.has(pod.name)) missing.add(pod.name);
    else readyPodCount++;
  }
  for (const name of ignored) metrics.delete(name);
  for (const name of unready) metrics.delete(name);
  if (metrics.size === 0) {
    throw new MetricError("did not receive metrics for targeted pods (pods might be unready)");
  }

  const [usageRatio, usage] = metricUsageRatio(metrics, target);
  const current = usage / 1000;
  const scaleUpWithUnready = unready.size > 0 && usageRatio > 1.0;
  if (!scaleUpWithUnready && missing.size === 0) {
    if (isWithin(ctx.tolerances, usageRatio)) {
      return { replicas: ctx.specReplicas, ratio: usageRatio, current };
    }
    return { replicas: ceilInt32(usageRatio * readyPodCount), ratio: usageRatio, current };
  }

  if (missing.size > 0) {
    if (usageRatio < 1.0) { for (const name of missing) metrics.set(name, target); }
    else if (usageRatio > 1.0) { for (const name of missing) metrics.set(name, 0); }
  }
  if (scaleUpWithUnready) { for (const name of unready) metrics.set(name, 0); }

  const [newUsageRatio] = metricUsageRatio(metrics, target);
  if (
    isWithin(ctx.tolerances, newUsageRatio) ||
    (usageRatio < 1.0 && newUsageRatio > 1.0) ||
    (usageRatio > 1.0 && newUsageRatio < 1.0)
  ) {
    return { replicas: ctx.specReplicas, ratio: usageRatio, current };
  }
  const newReplicas = ceilInt32(newUsageRatio * metrics.size);
  if (
    (newUsageRatio < 1.0 && newReplicas > ctx.specReplicas) ||
    (newUsageRatio > 1.0 && newReplicas < ctx.specReplicas)
  ) {
    return { replicas: ctx.specReplicas, ratio: usageRatio, current };
  }
  return { replicas: newReplicas, ratio: usageRatio, current };
}

/** Upstream `getReadyPodsCount`: pods in phase Running with condition Ready. */
function readyPodsCount(pods: HpaPod[] | undefined): number {
  if (!pods || pods.length === 0) {
    throw new MetricError(
      "unable to calculate ready pods: no pods returned by selector while calculating replica count",
    );
  }
  return pods.filter((p) => (p.phase ?? "Running") === "Running" && p.ready !== false).length;
}

/**
 * Upstream `getUsageRatioReplicaCount` (Object and External Value targets): within tolerance
 * keep the count, else `ceil(ratio * readyPods)`; from zero replicas, `ceil(ratio)`.
 */
function usageRatioReplicaCount(usageRatio: number, ctx: MetricContext): number {
  if (ctx.specReplicas !== 0) {
    if (isWithin(ctx.tolerances, usageRatio)) return ctx.specReplicas;
    return ceilInt32(usageRatio * readyPodsCount(ctx.pods));
  }
  return ceilInt32(usageRatio);
}

/**
 * Upstream `GetObjectPerPodMetricReplicas` / `GetExternalPerPodMetricReplicas` (AverageValue):
 * the tolerance applies to `usage / (target * statusReplicas)`; outside it the count is
 * `ceil(usage / target)`.
 */
function perPodReplicas(usage: number, target: number, ctx: MetricContext): Proposal {
  const usageRatio = usage / (target * ctx.statusReplicas);
  let replicas = ctx.statusReplicas;
  if (!isWithin(ctx.tolerances, usageRatio)) replicas = ceilInt32(usage / target);
  const current = ctx.statusReplicas === 0 ? NaN : Math.ceil(usage / ctx.statusReplicas) / 1000;
  return { replicas, ratio: usageRatio, current };
}

/**
 * Object metric. Mirrors `computeStatusForObjectMetric`: a `Value` target goes through
 * `GetObjectMetricReplicas` (ratio value / target against the ready pods), an `AverageValue`
 * target through `GetObjectPerPodMetricReplicas`.
 */
function objectMetricReplicas(m: HpaObjectMetricObservation, ctx: MetricContext): Proposal {
  if (m.target.type !== "Value" && m.target.type !== "AverageValue") {
    throw new MetricError(
      "invalid object metric source: neither a value target nor an average value target was set",
    );
  }
  if (m.value === undefined) {
    throw new MetricError(`unable to get metric ${m.metricName}: no value for the object`);
  }
  const usage = milliValue(m.value, `object metric ${m.metricName}`);
  if (m.target.type === "Value") {
    const target = targetMilli(m.target.value, "value", m);
    const usageRatio = usage / target;
    return {
      replicas: usageRatioReplicaCount(usageRatio, ctx),
      ratio: usageRatio,
      current: usage / 1000,
    };
  }
  return perPodReplicas(usage, targetMilli(m.target.averageValue, "averageValue", m), ctx);
}

/**
 * External metric. Mirrors `computeStatusForExternalMetric`, which looks at the fields, not at
 * `target.type`: `averageValue` first (`GetExternalPerPodMetricReplicas`), then `value`
 * (`GetExternalMetricReplicas`). The value is the sum of all returned items.
 */
function externalMetricReplicas(m: HpaExternalMetricObservation, ctx: MetricContext): Proposal {
  const values = m.values ?? [];
  if (m.target.averageValue === undefined && m.target.value === undefined) {
    throw new MetricError(
      "invalid external metric source: neither a value target nor an average value target was set",
    );
  }
  if (values.length === 0) {
    throw new MetricError(
      `unable to get external metric ${m.metricName}: no metrics returned from external metrics API`,
    );
  }
  let usage = 0;
  for (const v of values) usage += milliValue(v, `external metric ${m.metricName}`);
  if (m.target.averageValue !== undefined) {
    return perPodReplicas(usage, targetMilli(m.target.averageValue, "averageValue", m), ctx);
  }
  const usageRatio = usage / targetMilli(m.target.value, "value", m);
  return {
    replicas: usageRatioReplicaCount(usageRatio, ctx),
    ratio: usageRatio,
    current: usage / 1000,
  };
}

function describeMetric(m: HpaMetricObservation): string {
  if (m.type === "Pods") return `pods metric ${m.metricName}`;
  if (m.type === "Object" && m.target.type === "Value") {
    return `${m.describedObjectKind ?? "Object"} metric ${m.metricName}`;
  }
  // upstream names AverageValue object metrics "external metric" as well
  return `external metric ${m.metricName}`;
}

const FAILED_REASON: Record<HpaMetricObservation["type"], string> = {
  Pods: "FailedGetPodsMetric",
  Object: "FailedGetObjectMetric",
  External: "FailedGetExternalMetric",
};

/** Upstream `computeReplicasForMetric` for one entry; never throws for a bad observation. */
function recommendForMetric(m: HpaMetricObservation, ctx: MetricContext): HpaMetricRecommendation {
  const base = { type: m.type, metricName: m.metricName, description: describeMetric(m) };
  try {
    if (m.error !== undefined) {
      throw new MetricError(`unable to get metric ${m.metricName}: ${m.error}`);
    }
    let p: Proposal;
    if (m.type === "Pods") p = podsMetricReplicas(m, ctx);
    else if (m.type === "Object") p = objectMetricReplicas(m, ctx);
    else if (m.type === "External") p = externalMetricReplicas(m, ctx);
    else throw new MetricError(`unknown metric source type "${(m as { type: string }).type}"`);
    return {
      ...base,
      replicas: p.replicas,
      ratio: p.ratio,
      current: Number.isFinite(p.current) ? p.current : null,
    };
  } catch (e) {
    return { ...base, replicas: null, ratio: null, current: null, error: (e as Error).message };
  }
}

// --- behavior defaults (pkg/apis/autoscaling/v2/defaults.go) ------------------------------------

interface Rules {
  stabilizationWindowSeconds: number;
  selectPolicy: "Max" | "Min" | "Disabled";
  policies: HpaScalingPolicy[];
}

/** Upstream `GenerateHPAScaleUpRules`: 0 s window, Max of 4 Pods and 100 Percent per 15 s. */
function scaleUpRules(r: HpaScalingRules | undefined): Rules {
  return {
    stabilizationWindowSeconds: r?.stabilizationWindowSeconds ?? 0,
    selectPolicy: r?.selectPolicy ?? "Max",
    policies: r?.policies ?? [
      { type: "Pods", value: 4, periodSeconds: 15 },
      { type: "Percent", value: 100, periodSeconds: 15 },
    ],
  };
}

/**
 * Upstream `GenerateHPAScaleDownRules` plus `maybeInitScaleDownStabilizationWindow`: the window
 * defaults to the controller's downscale stabilization flag; Max of 100 Percent per 15 s.
 */
function scaleDownRules(r: HpaScalingRules | undefined, windowSeconds: number): Rules {
  return {
    stabilizationWindowSeconds: r?.stabilizationWindowSeconds ?? windowSeconds,
    selectPolicy: r?.selectPolicy ?? "Max",
    policies: r?.policies ?? [{ type: "Percent", value: 100, periodSeconds: 15 }],
  };
}

// --- normalization (horizontal.go) --------------------------------------------------------------

/** Upstream `getReplicasChangePerPeriod`: sum of changes strictly newer than now - period. */
function replicasChangePerPeriod(
  periodSeconds: number,
  events: HpaScaleEvent[],
  now: number,
): number {
  const cutoff = now - periodSeconds * 1000;
  let replicas = 0;
  for (const e of events) if (e.timestamp > cutoff) replicas += e.replicaChange;
  return replicas;
}

/** Upstream `calculateScaleUpLimitWithScalingRules`. */
function scaleUpLimit(
  current: number,
  up: HpaScaleEvent[],
  down: HpaScaleEvent[],
  rules: Rules,
  now: number,
): number {
  if (rules.selectPolicy === "Disabled") return current;
  const pickMin = rules.selectPolicy === "Min";
  let result = pickMin ? MAX_INT32 : MIN_INT32;
  for (const policy of rules.policies) {
    const periodStart = current - replicasChangePerPeriod(policy.periodSeconds, up, now) +
      replicasChangePerPeriod(policy.periodSeconds, down, now);
    let proposed = 0;
    if (policy.type === "Pods") proposed = periodStart + policy.value;
    else if (policy.type === "Percent") {
      // rounded up so that a small percentage still adds a pod
      proposed = Math.ceil(periodStart * (1 + policy.value / 100));
    }
    result = pickMin ? Math.min(result, proposed) : Math.max(result, proposed);
  }
  return result;
}

/** Upstream `calculateScaleDownLimitWithBehaviors`; Percent truncates the remaining count. */
function scaleDownLimit(
  current: number,
  up: HpaScaleEvent[],
  down: HpaScaleEvent[],
  rules: Rules,
  now: number,
): number {
  if (rules.selectPolicy === "Disabled") return current;
  const pickMin = rules.selectPolicy === "Min";
  let result = pickMin ? MIN_INT32 : MAX_INT32;
  for (const policy of rules.policies) {
    const periodStart = current - replicasChangePerPeriod(policy.periodSeconds, up, now) +
      replicasChangePerPeriod(policy.periodSeconds, down, now);
    let proposed = 0;
    if (policy.type === "Pods") proposed = periodStart - policy.value;
    else if (policy.type === "Percent") {
      proposed = Math.trunc(periodStart * (1 - policy.value / 100));
    }
    // "Min" selects the smallest change, which on the way down is the largest count
    result = pickMin ? Math.max(result, proposed) : Math.min(result, proposed);
  }
  return result;
}

interface Limited {
  replicas: number;
  condition: HpaLimitReason;
  reason: string;
}

const MSG = {
  ScaleUpLimit: "the desired replica count is increasing faster than the maximum scale rate",
  TooManyReplicas: "the desired replica count is more than the maximum replica count",
  TooFewReplicas: "the desired replica count is less than the minimum replica count",
  ScaleDownLimit: "the desired replica count is decreasing faster than the maximum scale rate",
  DesiredWithinRange: "the desired count is within the acceptable range",
} as const;

/**
 * Upstream `convertDesiredReplicasWithRules` (no `behavior`): clamp to minReplicas and to the
 * smaller of maxReplicas and the legacy scale-up limit `max(2 * current, 4)`.
 */
function convertWithRules(current: number, desired: number, min: number, max: number): Limited {
  const limit = Math.trunc(Math.max(2.0 * current, 4.0));
  const [maxAllowed, cond]: [number, HpaLimitReason] = max > limit
    ? [limit, "ScaleUpLimit"]
    : [max, "TooManyReplicas"];
  if (desired < min) {
    return { replicas: min, condition: "TooFewReplicas", reason: MSG.TooFewReplicas };
  }
  if (desired > maxAllowed) return { replicas: maxAllowed, condition: cond, reason: MSG[cond] };
  return { replicas: desired, condition: "DesiredWithinRange", reason: MSG.DesiredWithinRange };
}

/** Upstream `convertDesiredReplicasWithBehaviorRate`: policy limits and min/max. */
function convertWithBehaviorRate(
  a: { current: number; desired: number; min: number; max: number; up: Rules; down: Rules },
  upEvents: HpaScaleEvent[],
  downEvents: HpaScaleEvent[],
  now: number,
): Limited {
  if (a.desired > a.current) {
    const limit = Math.max(scaleUpLimit(a.current, upEvents, downEvents, a.up, now), a.current);
    const [maxAllowed, cond]: [number, HpaLimitReason] = a.max > limit
      ? [limit, "ScaleUpLimit"]
      : [a.max, "TooManyReplicas"];
    if (a.desired > maxAllowed) return { replicas: maxAllowed, condition: cond, reason: MSG[cond] };
  } else if (a.desired < a.current) {
    const limit = Math.min(scaleDownLimit(a.current, upEvents, downEvents, a.down, now), a.current);
    const [minAllowed, cond]: [number, HpaLimitReason] = a.min < limit
      ? [limit, "ScaleDownLimit"]
      : [a.min, "TooFewReplicas"];
    if (a.desired < minAllowed) return { replicas: minAllowed, condition: cond, reason: MSG[cond] };
  }
  return { replicas: a.desired, condition: "DesiredWithinRange", reason: MSG.DesiredWithinRange };
}

/** Record `replicas` at `now`, reusing the last slot `isOld` marks, as upstream does. */
function recordRecommendation(
  history: HpaRecommendation[],
  replicas: number,
  now: number,
  isOld: (r: HpaRecommendation) => boolean,
): HpaRecommendation[] {
  let oldIndex = -1;
  history.forEach((r, i) => {
    if (isOld(r)) oldIndex = i;
  });
  const next = history.slice();
  if (oldIndex >= 0) next[oldIndex] = { timestamp: now, replicas };
  else next.push({ timestamp: now, replicas });
  return next;
}

/**
 * Upstream `stabilizeRecommendation` (no `behavior`): the max of the recommendations newer than
 * the downscale window and the new one.
 */
function stabilizeLegacy(
  history: HpaRecommendation[],
  desired: number,
  now: number,
  windowSeconds: number,
): { replicas: number; history: HpaRecommendation[] } {
  const cutoff = now - windowSeconds * 1000;
  let max = desired;
  for (const r of history) if (!(r.timestamp < cutoff) && r.replicas > max) max = r.replicas;
  return {
    replicas: max,
    history: recordRecommendation(history, desired, now, (r) => r.timestamp < cutoff),
  };
}

/**
 * Upstream `stabilizeRecommendationWithBehaviors`: the recommendation is brought between the
 * min of the scale-up window and the max of the scale-down window, starting from the current
 * count.
 */
function stabilizeWithBehavior(
  history: HpaRecommendation[],
  a: { current: number; desired: number; up: Rules; down: Rules },
  now: number,
): {
  replicas: number;
  history: HpaRecommendation[];
  reason: "ScaleUpStabilized" | "ScaleDownStabilized";
} {
  const upCutoff = now - a.up.stabilizationWindowSeconds * 1000;
  const downCutoff = now - a.down.stabilizationWindowSeconds * 1000;
  let upRecommendation = a.desired;
  let downRecommendation = a.desired;
  for (const r of history) {
    if (r.timestamp > upCutoff) upRecommendation = Math.min(r.replicas, upRecommendation);
    if (r.timestamp > downCutoff) downRecommendation = Math.max(r.replicas, downRecommendation);
  }
  let replicas = a.current;
  if (replicas < upRecommendation) replicas = upRecommendation;
  if (replicas > downRecommendation) replicas = downRecommendation;
  return {
    replicas,
    history: recordRecommendation(
      history,
      a.desired,
      now,
      (r) => r.timestamp < upCutoff && r.timestamp < downCutoff,
    ),
    reason: a.desired >= a.current ? "ScaleUpStabilized" : "ScaleDownStabilized",
  };
}

/**
 * Upstream `storeScaleEvent` (only with `behavior`): mark events older than the direction's
 * longest policy period outdated, then put the new event in the last outdated slot or append.
 */
function storeScaleEvent(
  events: HpaScaleEvent[],
  rules: Rules,
  change: number,
  now: number,
): HpaScaleEvent[] {
  const longest = rules.policies.reduce((m, p) => Math.max(m, p.periodSeconds), 0);
  const cutoff = now - longest * 1000;
  const next = events.map((e) => (e.timestamp < cutoff ? { ...e, outdated: true } : { ...e }));
  let oldIndex = -1;
  next.forEach((e, i) => {
    if (e.outdated) oldIndex = i;
  });
  const event: HpaScaleEvent = { timestamp: now, replicaChange: change, outdated: false };
  if (oldIndex >= 0) next[oldIndex] = event;
  else next.push(event);
  return next;
}

/** Upstream `tolerancesForHpa`-style selection: the flag, overridden per direction (KEP-4951). */
function tolerancesFor(input: HpaAlgorithmInput): Tolerances {
  const flag = input.tolerance ?? DEFAULT_TOLERANCE;
  const t = { scaleDown: flag, scaleUp: flag };
  if (input.behavior && input.configurableTolerance !== false) {
    const down = input.behavior.scaleDown?.tolerance;
    const up = input.behavior.scaleUp?.tolerance;
    if (down !== undefined) t.scaleDown = approximateFloat(down, "behavior.scaleDown.tolerance");
    if (up !== undefined) t.scaleUp = approximateFloat(up, "behavior.scaleUp.tolerance");
  }
  return t;
}

/**
 * Compute the replica count the HPA controller sets in one reconcile, with the reasons it
 * reports and the history to pass to the next call. Mirrors `reconcileAutoscaler`:
 * 1. target at 0 replicas with minReplicas > 0: scaling disabled, nothing changes;
 *    above maxReplicas / below minReplicas: go straight to the bound;
 * 2. `computeReplicasForMetrics`: the max over the metrics' proposals; if every metric failed,
 *    or some failed and the valid ones would scale down, nothing is scaled (`error` set);
 * 3. without `behavior`, `normalizeDesiredReplicas` (downscale stabilization window, min/max,
 *    the legacy scale-up limit); with it, `normalizeDesiredReplicasWithBehaviors` (both windows,
 *    then the policies over their periods using the scale events, then min/max);
 * 4. on a change with `behavior`, `storeScaleEvent`.
 *
 * Throws only for malformed input (an unparsable tolerance); metric problems are reported in
 * `perMetric[].error` and `error`.
 *
 * @example
 * ```ts
 * const r = computeDesiredReplicas({
 *   now: Date.now(), currentReplicas: 2, maxReplicas: 10, recommendations: [],
 *   pods: [{ name: "a" }, { name: "b" }],
 *   metrics: [{ type: "Pods", metricName: "queue", target: { type: "AverageValue", averageValue: "100m" },
 *     values: { a: "200m", b: "200m" } }],
 * });
 * r.desiredReplicas; // 4
 * ```
 */
export function computeDesiredReplicas(input: HpaAlgorithmInput): HpaAlgorithmResult {
  const now = input.now;
  const current = input.currentReplicas;
  const minReplicas = input.minReplicas ?? 1;
  const maxReplicas = input.maxReplicas;
  const tolerances = tolerancesFor(input);
  const windowSeconds = input.downscaleStabilizationWindowSeconds ??
    DEFAULT_DOWNSCALE_STABILIZATION_SECONDS;
  const behavior = input.behavior;
  const up = behavior ? scaleUpRules(behavior.scaleUp) : null;
  const down = behavior ? scaleDownRules(behavior.scaleDown, windowSeconds) : null;

  let recommendations = input.recommendations?.slice() ??
    [{ timestamp: now, replicas: current }];
  let scaleUpEvents = (input.scaleUpEvents ?? []).map((e) => ({ ...e }));
  let scaleDownEvents = (input.scaleDownEvents ?? []).map((e) => ({ ...e }));

  const result: HpaAlgorithmResult = {
    desiredReplicas: current,
    metricDesiredReplicas: null,
    perMetric: [],
    condition: null,
    reason: "",
    scalingLimited: false,
    stabilization: null,
    stabilizedReplicas: null,
    scalingActive: { status: true, reason: "", message: "" },
    rescaleReason: "",
    recommendations,
    scaleUpEvents,
    scaleDownEvents,
  };

  let desired: number;
  if (current === 0 && minReplicas !== 0) {
    result.desiredReplicas = 0;
    result.scalingActive = {
      status: false,
      reason: "ScalingDisabled",
      message: "scaling is disabled since the replica count of the target is zero",
    };
    return result;
  } else if (current > maxReplicas) {
    result.rescaleReason = "Current number of replicas above Spec.MaxReplicas";
    desired = maxReplicas;
  } else if (current < minReplicas) {
    result.rescaleReason = "Current number of replicas below Spec.MinReplicas";
    desired = minReplicas;
  } else {
    const ctx: MetricContext = {
      specReplicas: current,
      statusReplicas: input.statusReplicas ?? current,
      pods: input.pods,
      tolerances,
    };
    result.perMetric = input.metrics.map((m) => recommendForMetric(m, ctx));

    let replicas = 0;
    let metricDescription = "";
    let invalid = 0;
    let firstInvalid: HpaMetricRecommendation | undefined;
    for (const p of result.perMetric) {
      if (p.replicas === null) {
        if (invalid === 0) firstInvalid = p;
        invalid++;
      } else if (replicas === 0 || p.replicas > replicas) {
        replicas = p.replicas;
        metricDescription = p.description;
      }
    }
    if (invalid > 0) {
      result.error = `invalid metrics (${invalid} invalid out of ${input.metrics.length}), ` +
        `first error is: ${firstInvalid?.error}`;
    }
    if (
      input.metrics.length === 0 || invalid >= input.metrics.length ||
      (invalid > 0 && replicas < current)
    ) {
      if (input.metrics.length === 0) result.error = "no metrics to compute a replica count from";
      result.scalingActive = {
        status: false,
        reason: firstInvalid ? FAILED_REASON[firstInvalid.type] : "InvalidMetricSourceType",
        message: `the HPA was unable to compute the replica count: ${
          firstInvalid?.error ?? result.error
        }`,
      };
      return result;
    }
    result.scalingActive = {
      status: true,
      reason: "ValidMetricFound",
      message:
        `the HPA was able to successfully calculate a replica count from ${metricDescription}`,
    };
    result.metricDesiredReplicas = replicas;

    // reconcileAutoscaler starts from 0 and takes the metrics' proposal only when larger
    let prenormalized = 0;
    let rescaleMetric = "";
    if (replicas > prenormalized) {
      prenormalized = replicas;
      rescaleMetric = metricDescription;
    }
    if (prenormalized > current) result.rescaleReason = `${rescaleMetric} above target`;
    if (prenormalized < current) result.rescaleReason = "All metrics below target";

    let limited: Limited;
    let stabilized: number;
    if (!behavior || !up || !down) {
      const s = stabilizeLegacy(recommendations, prenormalized, now, windowSeconds);
      recommendations = s.history;
      stabilized = s.replicas;
      result.stabilization = stabilized !== prenormalized
        ? "ScaleDownStabilized"
        : "ReadyForNewScale";
      limited = convertWithRules(current, stabilized, minReplicas, maxReplicas);
    } else {
      const s = stabilizeWithBehavior(recommendations, {
        current,
        desired: prenormalized,
        up,
        down,
      }, now);
      recommendations = s.history;
      stabilized = s.replicas;
      result.stabilization = stabilized !== prenormalized ? s.reason : "ReadyForNewScale";
      limited = convertWithBehaviorRate(
        { current, desired: stabilized, min: minReplicas, max: maxReplicas, up, down },
        scaleUpEvents,
        scaleDownEvents,
        now,
      );
    }
    result.stabilizedReplicas = stabilized;
    result.condition = limited.condition;
    result.reason = limited.reason;
    result.scalingLimited = limited.replicas !== stabilized;
    desired = limited.replicas;
  }

  if (desired !== current && up && down) {
    if (desired > current) {
      scaleUpEvents = storeScaleEvent(scaleUpEvents, up, desired - current, now);
    } else scaleDownEvents = storeScaleEvent(scaleDownEvents, down, current - desired, now);
  }
  result.desiredReplicas = desired;
  result.recommendations = recommendations;
  result.scaleUpEvents = scaleUpEvents;
  result.scaleDownEvents = scaleDownEvents;
  return result;
}
