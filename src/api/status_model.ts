/**
 * The status page's facts as one versioned JSON document (`GET /status.json`), built by a pure
 * function from what the adapter knows: the engine's plans and fallbacks, the HPAs of the
 * cluster view, the store's conflicts and the recent values kept per plan. The HTML pages
 * (status_page.ts) render this document and nothing else.
 *
 * The inputs are described here by their shape (the engine's `PlanStatus`, `FallbackStatus` and
 * `PlanHistory` fit them), so that this layer does not import the engine.
 *
 * @module
 */
import type { KubeObject } from "../cluster/types.ts";
import {
  computeDesiredReplicas,
  type HpaAlgorithmBehavior,
  type HpaMetricObservation,
} from "../core/hpa_algorithm.ts";
import { planHpa, type PlanOptions } from "../core/plan.ts";
import type { MetricPlan, MetricTarget, ObjectReference } from "../core/types.ts";

/** The version of the document's shape; bumped on an incompatible change. */
export const STATUS_VERSION = 1;

/** A plan as the engine runs it (the engine's `PlanStatus`). */
export interface StatusPlanInput {
  key: string;
  plan: MetricPlan;
  /** Why the plan does not run, or null. */
  problem: string | null;
}

/** A plan with a fallback (the engine's `FallbackStatus`). */
export interface StatusFallbackInput {
  hpa: { namespace: string; name: string };
  metricType: string;
  metricName: string;
  active: boolean;
  consecutiveFailures: number;
}

/** What is kept of a plan's recent outcomes (the engine's `PlanHistory`). */
export interface StatusHistoryInput {
  points: readonly { at: number; value: number | null; failed: boolean }[];
  lastValue: number | null;
  lastSuccessAt: number | null;
  lastSampleCount: number;
  failures: number;
  failingSince: number | null;
  lastError: string | null;
  lastErrorAt: number | null;
}

/** Everything {@linkcode buildStatus} reads. */
export interface StatusInput {
  /** ms since the epoch. */
  now: number;
  /** `--metrics-ttl`, seconds: an older value is not served. */
  ttlSeconds: number;
  /** The HPAs of the cluster view. */
  hpas: readonly KubeObject[];
  plans: readonly StatusPlanInput[];
  fallbacks: readonly StatusFallbackInput[];
  /** The store's conflicted plans with their messages. */
  conflicts: readonly { plan: { key: string }; message: string }[];
  history: (planKey: string) => StatusHistoryInput | null;
  /**
   * How the engine plans HPAs: an HPA it does not run is planned again with these to say why.
   */
  planOptions?: PlanOptions;
  /** The HPA controller's `--horizontal-pod-autoscaler-tolerance`; default 0.1. */
  tolerance?: number;
}

/**
 * The state of a metric, from the worst: `invalid` (cannot be collected: its configuration or
 * collector), `failing` (its last collections failed), `conflict` (another HPA collects the same
 * metric differently: neither is served), `expired` (the last value is older than the TTL),
 * `fallback` (the fallback value is served), `pending` (not collected yet), `collected`, `hidden`
 * (a formula input that is collected, never served).
 */
export type MetricState =
  | "invalid"
  | "failing"
  | "conflict"
  | "expired"
  | "fallback"
  | "pending"
  | "collected"
  | "hidden";

/** An HPA's state: its worst metric's, or `none` when the adapter serves none of its metrics. */
export type HpaState = MetricState | "none";

/** Every state, worst first (the overview's order). */
export const STATES: readonly HpaState[] = [
  "invalid",
  "failing",
  "conflict",
  "expired",
  "fallback",
  "pending",
  "collected",
  "hidden",
  "none",
];

/** One kept outcome. */
export type StatusPoint =
  | { at: string; value: number }
  | { at: string; value: null; failed: true }
  | { at: string; value: null };

/** One metric of an HPA. */
export interface MetricStatus {
  /** The plan key (`namespace/name/index/Type/metric`). */
  key: string;
  /** Position in `spec.metrics` (hidden inputs come after the listed entries). */
  index: number;
  type: string;
  name: string;
  collector: string | null;
  intervalSeconds: number;
  target: MetricTarget;
  /** A formula input that `spec.metrics` does not list. */
  hidden: boolean;
  /** A formula metric's expression, else null. */
  formula: string | null;
  /** The configuration as planned (secret-looking keys and URL credentials redacted). */
  config: Record<string, string>;
  state: MetricState;
  /** The value the HPA works with (Pods: the average over pods), or null. */
  value: number | null;
  /** When it was collected (RFC 3339), or null. */
  valueAt: string | null;
  ageSeconds: number | null;
  /** How many samples (pods, series) the value was made from. */
  samples: number;
  /** The error of the state (invalid, failing, conflict, expired), else null. */
  error: string | null;
  /** Consecutive failed collections. */
  failures: number;
  failingSince: string | null;
  /** The last failure's text, kept after a recovery, or null. */
  lastError: string | null;
  lastErrorAt: string | null;
  /** When the plan has a fallback. */
  fallback: { active: boolean; consecutiveFailures: number } | null;
  warnings: string[];
  /** Recent outcomes, oldest first. */
  history: StatusPoint[];
}

/** The replica count computed here next to the HPA's status (best effort). */
export interface ReplicaComparison {
  /** `status.currentReplicas`, or null. */
  current: number | null;
  /** `status.desiredReplicas`, or null. */
  desired: number | null;
  /** What the core's HPA algorithm computes from the values above, or null when it cannot. */
  computed: number | null;
  /** Why it differs from `desired`, or what it rests on; empty when nothing to say. */
  reasons: string[];
  /** What the computation leaves out. */
  note: string;
}

/** One HPA. */
export interface HpaStatus {
  namespace: string;
  name: string;
  scaleTargetRef: ObjectReference | null;
  minReplicas: number | null;
  maxReplicas: number | null;
  state: HpaState;
  /** Why it cannot be planned at all (an invalid HPA), else empty. */
  errors: string[];
  /** Warnings of the planner (malformed or unused annotations). */
  warnings: string[];
  replicas: ReplicaComparison;
  metrics: MetricStatus[];
}

/** The document of `GET /status.json`. */
export interface StatusReport {
  version: typeof STATUS_VERSION;
  /** RFC 3339. */
  generatedAt: string;
  hpas: HpaStatus[];
}

/** What the replica comparison says it does not do. */
export const REPLICA_NOTE =
  "best effort: computed here from the values above with the HPA controller's algorithm, " +
  "without its stabilization history, scaling events, Resource metrics and missing-pod rules";

const SEVERITY = new Map<HpaState, number>(STATES.map((s, i) => [s, i]));

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/** Config keys whose value is never shown. */
const SECRET_KEY = /token|secret|password|passwd|credential|authorization|api-?key|auth-header/i;

/**
 * A plan's config as shown: the value of a key that names a secret is `(redacted)`, and
 * credentials in a URL (`https://user:pass@host`) are removed.
 *
 * @example
 * ```ts
 * redactConfig({ "bearer-token": "abc", endpoint: "http://u:p@h/x" });
 * // { "bearer-token": "(redacted)", endpoint: "http://h/x" }
 * ```
 */
export function redactConfig(config: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Object.keys(config).sort()) {
    const v = config[key];
    out[key] = SECRET_KEY.test(key) && !/-from$/.test(key)
      ? "(redacted)"
      : v.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/gi, "$1");
  }
  return out;
}

function keyOf(ns: string, name: string): string {
  return `${ns}/${name}`;
}

function num(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

/** The state of one metric and the error that goes with it. */
function metricState(
  p: StatusPlanInput,
  h: StatusHistoryInput | null,
  conflict: string | undefined,
  fallback: StatusFallbackInput | undefined,
  now: number,
  ttlMs: number,
): { state: MetricState; error: string | null } {
  if (p.problem !== null) return { state: "invalid", error: p.problem };
  if (conflict !== undefined) return { state: "conflict", error: conflict };
  if (fallback?.active) {
    return {
      state: "fallback",
      error: h?.lastError ?? `${fallback.consecutiveFailures} consecutive failed collections`,
    };
  }
  if (h !== null && h.failures > 0) return { state: "failing", error: h.lastError };
  if (h === null || h.lastSuccessAt === null) return { state: "pending", error: null };
  if (h.lastValue !== null && now - h.lastSuccessAt > ttlMs) {
    return {
      state: "expired",
      error: `the last value is older than the metrics TTL ${ttlMs / 1000}s`,
    };
  }
  return { state: p.plan.hidden ? "hidden" : "collected", error: null };
}

function points(h: StatusHistoryInput | null): StatusPoint[] {
  if (h === null) return [];
  return h.points.map((p): StatusPoint =>
    p.value !== null
      ? { at: iso(p.at)!, value: p.value }
      : p.failed
      ? { at: iso(p.at)!, value: null, failed: true }
      : { at: iso(p.at)!, value: null }
  );
}

function metricStatus(
  p: StatusPlanInput,
  input: StatusInput,
  conflicts: Map<string, string>,
  fallbacks: Map<string, StatusFallbackInput>,
): MetricStatus {
  const plan = p.plan;
  const h = input.history(p.key);
  const fb = plan.fallback
    ? fallbacks.get(
      `${keyOf(plan.hpa.namespace, plan.hpa.name)}/${plan.metricType}/${plan.metricName}`,
    )
    : undefined;
  const { state, error } = metricState(
    p,
    h,
    conflicts.get(p.key),
    fb,
    input.now,
    input.ttlSeconds * 1000,
  );
  const valueAt = h?.lastValue !== null ? h?.lastSuccessAt ?? null : null;
  return {
    key: p.key,
    index: plan.index,
    type: plan.metricType,
    name: plan.metricName,
    collector: plan.collector,
    intervalSeconds: plan.intervalSeconds,
    target: { ...plan.target },
    hidden: plan.hidden === true,
    formula: plan.formula?.expression ?? null,
    config: redactConfig(plan.config),
    state,
    value: valueAt === null ? null : h!.lastValue,
    valueAt: iso(valueAt),
    ageSeconds: valueAt === null ? null : Math.max(0, (input.now - valueAt) / 1000),
    samples: valueAt === null ? 0 : h!.lastSampleCount,
    error,
    failures: h?.failures ?? 0,
    failingSince: iso(h?.failingSince ?? null),
    lastError: h?.lastError ?? null,
    lastErrorAt: iso(h?.lastErrorAt ?? null),
    fallback: plan.fallback
      ? { active: fb?.active ?? false, consecutiveFailures: fb?.consecutiveFailures ?? 0 }
      : null,
    warnings: [...(plan.warnings ?? [])],
    history: points(h),
  };
}

/** A metric's value as the HPA controller would read it now, or why it cannot. */
function observation(m: MetricStatus): HpaMetricObservation {
  const usable = m.value !== null &&
    (m.state === "collected" || m.state === "fallback" || m.state === "failing");
  const error = usable ? undefined : m.error ?? `no value (${m.state})`;
  const base = { metricName: m.name, target: m.target };
  if (m.type === "Pods") {
    if (!usable) return { type: "Pods", ...base, error };
    // one value per pod is not kept: every pod at the average gives the same usage
    const values: Record<string, number> = {};
    for (let i = 0; i < Math.max(1, m.samples); i++) values[`pod-${i}`] = m.value!;
    return { type: "Pods", ...base, values };
  }
  if (m.type === "Object") {
    return usable
      ? { type: "Object", ...base, value: m.value! }
      : { type: "Object", ...base, error };
  }
  return usable
    ? { type: "External", ...base, values: [m.value!] }
    : { type: "External", ...base, error };
}

/** The replica count of the core's HPA algorithm from the served metrics, and why it differs. */
function compareReplicas(
  hpa: KubeObject,
  metrics: readonly MetricStatus[],
  input: StatusInput,
): ReplicaComparison {
  const spec = hpa.spec ?? {};
  const current = num(hpa.status?.currentReplicas);
  const desired = num(hpa.status?.desiredReplicas);
  const out: ReplicaComparison = {
    current,
    desired,
    computed: null,
    reasons: [],
    note: REPLICA_NOTE,
  };
  const served = metrics.filter((m) => !m.hidden);
  const maxReplicas = num(spec.maxReplicas);
  if (current === null) {
    out.reasons.push("the HPA has no status.currentReplicas yet");
    return out;
  }
  if (maxReplicas === null || served.length === 0) {
    out.reasons.push("no metric of this adapter to compute from");
    return out;
  }
  // the scale target's pods are not read here: as many as the status says (or as answered)
  const podCount = Math.max(current, ...served.map((m) => m.type === "Pods" ? m.samples : 0));
  let result;
  try {
    result = computeDesiredReplicas({
      now: input.now,
      currentReplicas: current,
      minReplicas: num(spec.minReplicas) ?? 1,
      maxReplicas,
      metrics: served.map(observation),
      pods: Array.from({ length: podCount }, (_, i) => ({ name: `pod-${i}` })),
      behavior: spec.behavior as HpaAlgorithmBehavior | undefined,
      tolerance: input.tolerance,
      // no past recommendation: the stabilization window is left out (see the note)
      recommendations: [],
    });
  } catch (e) {
    out.reasons.push(`cannot compute: ${(e as Error).message}`);
    return out;
  }
  if (result.metricDesiredReplicas === null) {
    out.reasons.push(
      result.error ?? result.scalingActive.message ?? "the metrics give no replica count",
    );
    return out;
  }
  out.computed = result.desiredReplicas;
  const tolerance = input.tolerance ?? 0.1;
  for (const p of result.perMetric) {
    if (
      p.ratio !== null && p.replicas === current && Math.abs(p.ratio - 1) <= tolerance &&
      p.ratio !== 1
    ) {
      out.reasons.push(
        `tolerance: ${p.description} is at ${(p.ratio * 100).toFixed(1)}% of its target, within ${
          tolerance * 100
        }%: no change`,
      );
    }
  }
  const limited = result.metricDesiredReplicas;
  if (result.condition === "TooManyReplicas") {
    out.reasons.push(`max: the metrics ask for ${limited}, maxReplicas is ${maxReplicas}`);
  } else if (result.condition === "TooFewReplicas") {
    out.reasons.push(
      `min: the metrics ask for ${limited}, minReplicas is ${num(spec.minReplicas) ?? 1}`,
    );
  } else if (result.condition === "ScaleUpLimit" || result.condition === "ScaleDownLimit") {
    out.reasons.push(`rate: ${result.reason}`);
  }
  if (result.error) out.reasons.push(result.error);
  if (desired !== null && desired !== out.computed) {
    if (out.computed < desired) {
      out.reasons.push(
        "stabilization: a scale-down waits for the downscale stabilization window " +
          "(300s unless spec.behavior.scaleDown says otherwise)",
      );
    } else {
      out.reasons.push(
        "the controller has not acted on these values yet (it reads them every 15s), " +
          "or a scale-up policy limits it",
      );
    }
    const resources = (Array.isArray(spec.metrics) ? spec.metrics : [])
      .filter((m: { type?: string }) => m?.type === "Resource" || m?.type === "ContainerResource");
    if (resources.length > 0) {
      out.reasons.push("the HPA's Resource metrics are not known here and may ask for more");
    }
  }
  return out;
}

function hpaStatus(
  hpa: KubeObject,
  plans: readonly StatusPlanInput[],
  input: StatusInput,
  conflicts: Map<string, string>,
  fallbacks: Map<string, StatusFallbackInput>,
): HpaStatus {
  const spec = hpa.spec ?? {};
  const ref = spec.scaleTargetRef;
  const errors: string[] = [];
  const warnings: string[] = [];
  const metrics = plans
    .map((p) => metricStatus(p, input, conflicts, fallbacks))
    .sort((a, b) => a.index - b.index);
  for (const m of metrics) for (const w of m.warnings) if (!warnings.includes(w)) warnings.push(w);
  if (plans.length === 0) {
    try {
      planHpa(hpa, input.planOptions);
    } catch (e) {
      errors.push((e as Error).message);
    }
  }
  let state: HpaState = errors.length > 0 ? "invalid" : "none";
  for (const m of metrics) {
    if (SEVERITY.get(m.state)! < SEVERITY.get(state)!) state = m.state;
  }
  return {
    namespace: hpa.metadata.namespace ?? "default",
    name: hpa.metadata.name,
    scaleTargetRef: ref && typeof ref.kind === "string" && typeof ref.name === "string"
      ? {
        ...(typeof ref.apiVersion === "string" ? { apiVersion: ref.apiVersion } : {}),
        kind: ref.kind,
        name: ref.name,
      }
      : null,
    minReplicas: num(spec.minReplicas),
    maxReplicas: num(spec.maxReplicas),
    state,
    errors,
    warnings,
    replicas: compareReplicas(hpa, metrics, input),
    metrics,
  };
}

/**
 * The status document: every HPA of the cluster view (sorted worst state first, then by
 * namespace and name) with each metric's state, value, age and recent values, and the replica
 * count the core's HPA algorithm computes next to the HPA's status.
 *
 * @example
 * ```ts
 * const report = buildStatus({
 *   now: Date.now(), ttlSeconds: 900, hpas: cluster.list("HorizontalPodAutoscaler"),
 *   plans: engine.status(), fallbacks: engine.fallbackStatus(), conflicts: store.conflicts(),
 *   history: (key) => history.get(key),
 * });
 * report.hpas[0].state; // "failing"
 * ```
 */
export function buildStatus(input: StatusInput): StatusReport {
  const byHpa = new Map<string, StatusPlanInput[]>();
  for (const p of input.plans) {
    const k = keyOf(p.plan.hpa.namespace, p.plan.hpa.name);
    let list = byHpa.get(k);
    if (!list) byHpa.set(k, list = []);
    list.push(p);
  }
  const conflicts = new Map<string, string>();
  for (const c of input.conflicts) conflicts.set(c.plan.key, c.message);
  const fallbacks = new Map<string, StatusFallbackInput>();
  for (const f of input.fallbacks) {
    fallbacks.set(`${keyOf(f.hpa.namespace, f.hpa.name)}/${f.metricType}/${f.metricName}`, f);
  }
  const hpas = input.hpas.map((hpa) =>
    hpaStatus(
      hpa,
      byHpa.get(keyOf(hpa.metadata.namespace ?? "default", hpa.metadata.name)) ?? [],
      input,
      conflicts,
      fallbacks,
    )
  );
  hpas.sort((a, b) =>
    SEVERITY.get(a.state)! - SEVERITY.get(b.state)! ||
    (a.namespace < b.namespace ? -1 : a.namespace > b.namespace ? 1 : 0) ||
    (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
  );
  return { version: STATUS_VERSION, generatedAt: new Date(input.now).toISOString(), hpas };
}

/** The HPAs of a report that pass the overview's filters (`namespace`, `state`: any metric's). */
export function filterStatus(
  report: StatusReport,
  filter: { namespace?: string | null; state?: string | null },
): HpaStatus[] {
  return report.hpas.filter((h) =>
    (!filter.namespace || h.namespace === filter.namespace) &&
    (!filter.state || h.state === filter.state || h.metrics.some((m) => m.state === filter.state))
  );
}
