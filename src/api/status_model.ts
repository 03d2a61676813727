/**
 * The status page's facts as one versioned JSON document (`GET /status.json`), built by a pure
 * function from what the adapter knows: the engine's plans and fallbacks, the HPAs of the
 * cluster view, the store's conflicts, the recent values kept per plan, the replica guard's last
 * decisions and the ScalingSchedules the HPAs use. The HTML pages (status_page.ts) render this
 * document and nothing else.
 *
 * The inputs are described here by their shape (the engine's `PlanStatus`, `FallbackStatus` and
 * `PlanHistory`, the replica guard's `GuardLastDecision` fit them), so that this layer does not
 * import the engine or the controllers.
 *
 * Version 1 grew, backward compatibly (fields added, none removed or changed): `schedules` (the
 * next 24 hours of each schedule an HPA uses), `replicaGuard` per HPA, `selector` and
 * `schedule` per metric, and the fallback's last episode (`activeSince`, `endedAt`, `value`,
 * `replicas`, `reason`, `endReason`), and the state `delegated` with the metric's `delegate`.
 *
 * @module
 */
import type { KubeObject } from "../cluster/types.ts";
import {
  computeDesiredReplicas,
  type HpaAlgorithmBehavior,
  type HpaMetricObservation,
} from "../core/kubernetes/hpa_algorithm.ts";
import { ESTAFETTE_ENABLED_ANNOTATION } from "../core/estafette/guard.ts";
import { labelSelectorString } from "../core/kubernetes/label_selector.ts";
import { planHpa, type PlanOptions } from "../core/kube_metrics_adapter/plan.ts";
import {
  parseScalingSchedule,
  scalingWindowMs,
  scheduleActive,
  type ScheduleOptions,
} from "../core/kube_metrics_adapter/scaling_schedule.ts";
import {
  rampStepMs,
  scheduleChanges,
  scheduleSteps,
} from "../core/kube_metrics_adapter/schedule_series.ts";
import type { LabelSelector, MetricPlan, MetricTarget, ObjectReference } from "../core/types.ts";

/** The version of the document's shape; bumped on an incompatible change. */
export const STATUS_VERSION = 1;

/** A plan as the engine runs it (the engine's `PlanStatus`). */
export interface StatusPlanInput {
  key: string;
  plan: MetricPlan;
  /** Why the plan does not run, or null. */
  problem: string | null;
  /** No collector here takes it (unknown or disabled), so a delegate may serve it. */
  incompatible?: boolean;
}

/** A plan with a fallback (the engine's `FallbackStatus`). */
export interface StatusFallbackInput {
  hpa: { namespace: string; name: string };
  metricType: string;
  metricName: string;
  active: boolean;
  consecutiveFailures: number;
  /** The last time its fallback value was served (the engine's `FallbackEpisode`), if ever. */
  last?: StatusFallbackEpisodeInput | null;
}

/** One episode of a fallback (times in ms since the epoch). */
export interface StatusFallbackEpisodeInput {
  since: number;
  endedAt: number | null;
  value: number;
  replicas: number;
  cause: string;
  endReason: string | null;
}

/** The replica guard's last decision for one HPA (the guard's `GuardLastDecision`). */
export interface StatusGuardInput {
  /** ms since the epoch. */
  at: number;
  query: string | null;
  queryValue: number | null;
  minReplicas: number | null;
  maxScaleDown: number | null;
  scaleDownMinimum: number | null;
  message: string | null;
  changed: boolean;
  written: boolean;
  error: string | null;
}

/** Where the schedules come from and how they are evaluated (the serve flags). */
export interface StatusScheduleSource {
  options: ScheduleOptions;
  /** One ScalingSchedule (namespaced) or ClusterScalingSchedule (namespace undefined). */
  get(kind: ScheduleKind, namespace: string | undefined, name: string): KubeObject | undefined;
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
  /**
   * The schedule objects: with it, `schedules` holds the next {@linkcode SCHEDULE_HOURS} hours of
   * each schedule the reported HPAs use, computed now (nothing of it is kept).
   */
  schedules?: StatusScheduleSource;
  /**
   * The replica guard's last decision for an HPA; given only when the guard runs
   * (`--estafette-hpa-scaler`). Without it, `replicaGuard` is null for every HPA.
   */
  replicaGuard?: (namespace: string, name: string) => StatusGuardInput | null;
  /**
   * The ScaledObject that controls an HPA (`--keda-scaled-objects`): given only when the KEDA
   * controller runs. Without it, `scaledObject` is null for every HPA.
   */
  scaledObject?: (hpa: KubeObject) => ScaledObjectStatus | null;
  /** Report only this HPA (one HPA's page). */
  only?: { namespace: string; name: string };
  /**
   * The delegates' URLs by metrics API (`--delegate-custom-metrics`, `--delegate-external-metrics`):
   * a metric no collector here takes is `delegated` when its API has one.
   */
  delegates?: { custom?: string; external?: string };
  /**
   * The rule of `--prometheus-adapter-config` that serves a metric no collector here takes, as
   * `prometheus-adapter's rules[0]`, else undefined: such a metric is `delegated` to it (before
   * the delegate, as a read goes).
   */
  servedByRules?: (plan: MetricPlan) => string | undefined;
  /** prometheus-adapter's rules and what they discovered (`--prometheus-adapter-config`). */
  prometheusAdapter?: () => PrometheusAdapterStatus;
}

/**
 * What serves `plan`'s metric when no collector here takes it: prometheus-adapter's rule, else
 * the URL of its API's delegate, if any.
 */
function delegateOf(plan: MetricPlan, input: StatusInput): string | undefined {
  return input.servedByRules?.(plan) ??
    (plan.metricType === "External" ? input.delegates?.external : input.delegates?.custom);
}

/** How the page and `explain` say who serves a `delegated` metric. */
export function delegatedText(delegate: string | null | undefined): string {
  if (!delegate) return "served by the delegate";
  return delegate.startsWith(RULES_PREFIX)
    ? `served by ${delegate}`
    : `served by the delegate ${delegate}`;
}

/** How {@linkcode StatusInput.servedByRules} names a rule: `prometheus-adapter's rules[0]`. */
export const RULES_PREFIX = "prometheus-adapter's ";

/** How far ahead a schedule is computed. */
export const SCHEDULE_HOURS = 24;

/** The kinds of schedule objects. */
export type ScheduleKind = "ScalingSchedule" | "ClusterScalingSchedule";

/** The collector types that read a schedule object, and its kind. */
const SCHEDULE_COLLECTORS: Readonly<Record<string, ScheduleKind>> = {
  "scaling-schedule": "ScalingSchedule",
  "cluster-scaling-schedule": "ClusterScalingSchedule",
};

/**
 * The state of a metric, from the worst: `invalid` (cannot be collected: its configuration or
 * collector), `failing` (its last collections failed), `conflict` (another HPA collects the same
 * metric differently: neither is served), `expired` (the last value is older than the TTL),
 * `fallback` (the fallback value is served), `pending` (not collected yet), `collected`, `hidden`
 * (a formula input that is collected, never served), `delegated` (no collector here takes it and
 * the other adapter of `--delegate-external-metrics` / `--delegate-custom-metrics` serves it).
 */
export type MetricState =
  | "invalid"
  | "failing"
  | "conflict"
  | "expired"
  | "fallback"
  | "pending"
  | "collected"
  | "hidden"
  | "delegated";

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
  "delegated",
  "none",
];

/** One kept outcome. */
export type StatusPoint =
  | { at: string; value: number }
  | { at: string; value: null; failed: true }
  | { at: string; value: null };

/** Which schedule object a metric reads (`namespace` null for a ClusterScalingSchedule). */
export interface ScheduleRef {
  kind: ScheduleKind;
  namespace: string | null;
  name: string;
}

/** A metric's fallback: whether it is active, and its last episode. */
export interface FallbackState {
  active: boolean;
  consecutiveFailures: number;
  /** When the fallback value was last first served (RFC 3339), null if never. */
  activeSince: string | null;
  /** When that episode ended, null while active or if never. */
  endedAt: string | null;
  /** The value served then (per pod for a Pods metric), null if never. */
  value: number | null;
  /** The replica count that value stands for, null if never. */
  replicas: number | null;
  /** Why it started, null if never. */
  reason: string | null;
  /** Why it ended, null while active or if never. */
  endReason: string | null;
}

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
  /**
   * The configuration as planned: the selector's matchLabels (External, Object) overridden by
   * the `metric-config.*` annotations (secret-looking keys and URL credentials redacted).
   */
  config: Record<string, string>;
  /**
   * `metric.selector` of the entry (matchLabels redacted as `config`), null when none. The pages
   * show it apart from the annotations.
   */
  selector: LabelSelector | null;
  /** The schedule object of a ScalingSchedule metric (see the report's `schedules`), else null. */
  schedule: ScheduleRef | null;
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
  fallback: FallbackState | null;
  /** The URL of the delegate that serves it (state `delegated`), else null. */
  delegate: string | null;
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

/**
 * The replica guard's last decision for an HPA with `estafette.io/hpa-scaler: "true"`, while
 * the guard runs.
 */
export interface ReplicaGuardStatus {
  /**
   * When it last decided (RFC 3339), null before its first pass over the HPA (passes run on the
   * leader only, every `--estafette-hpa-scaler-interval`); the other fields are null then too.
   */
  at: string | null;
  /** The Prometheus query it ran, null when none runs (or it could not decide). */
  query: string | null;
  /** The query's result, null without a query. */
  queryValue: number | null;
  /** The minReplicas it computed, null when it could not decide. */
  minReplicas: number | null;
  /**
   * The scale-down cap: the most replicas one scale-down may remove (0 means one), null when
   * the cap is off during a rollout or it could not decide.
   */
  maxScaleDown: number | null;
  /** The lowest minReplicas the cap allows (currentReplicas minus the cap), or null. */
  scaleDownMinimum: number | null;
  /** The decision in words (`minReplicas 3 -> 11: query ...`, `minReplicas 3 unchanged: ...`). */
  message: string | null;
  /** Whether the decision changes the HPA. */
  changed: boolean;
  /** Whether the change was written (false in file mode, where it is only logged). */
  written: boolean;
  /** Why it did nothing: what failed (the query, the patch, an owner), else null. */
  error: string | null;
}

/**
 * The next {@linkcode SCHEDULE_HOURS} hours of a schedule object an HPA uses, computed on each
 * request with the collector's maths (core/kube_metrics_adapter/schedule_series.ts).
 */
export interface ScheduleStatus {
  kind: ScheduleKind;
  /** null for a ClusterScalingSchedule. */
  namespace: string | null;
  name: string;
  /** Why it has no values (not found, invalid), else null. */
  error: string | null;
  /** The range, RFC 3339: now to 24 hours later. */
  from: string;
  to: string;
  /** The ramp window it is evaluated with (its own, else the flag's), null with an error. */
  scalingWindowSeconds: number | null;
  /** `--scaling-schedule-ramp-steps`. */
  rampSteps: number;
  /** Whether any of its schedules is active now, ramps included (`status.active`), or null. */
  active: boolean | null;
  /**
   * Its value over the range as steps: each value holds from its `at` until the next step's
   * (the last one's until `to`); the first step is at `from` (the value now), then one at every
   * change, every ramp step included. Empty with an error.
   */
  steps: { at: string; value: number }[];
}

/** The ScaledObject behind an HPA, as the KEDA controller knows it. */
export interface ScaledObjectStatus {
  name: string;
  /** Ours (`--keda-scaled-objects` and the selector), or KEDA's operator's, or another's. */
  owner: "hpa-metrics-adapter" | "keda-operator" | "other";
  /** Its `Ready` condition as written (null before the first write). */
  ready: { status: string; reason?: string; message?: string } | null;
  /**
   * Each trigger: its index, type, name, External metric (null for Resource ones), activation
   * threshold (null where none applies) and its activity as the scale loop last wrote it.
   */
  triggers: {
    index: number;
    type: string;
    name: string | null;
    metricName: string | null;
    activation: number | null;
    active: boolean | null;
  }[];
  /** The scale loop's view (ours only): its `Active` condition, the last active time, the cooldown. */
  loop: {
    active: { status: string; reason?: string; message?: string } | null;
    /** RFC 3339, as written. */
    lastActiveTime: string | null;
    /** When the cooldown after the last active time ends (RFC 3339), while inactive. */
    cooldownEndsAt: string | null;
    /** What the loop does next, in words. */
    next: string;
  } | null;
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
  /** The replica guard's last decision; null when the guard is off or not on for this HPA. */
  replicaGuard: ReplicaGuardStatus | null;
  /** The KEDA ScaledObject that controls it; null when none does (or the controller is off). */
  scaledObject: ScaledObjectStatus | null;
  metrics: MetricStatus[];
}

/** The document of `GET /status.json`. */
export interface StatusReport {
  version: typeof STATUS_VERSION;
  /** RFC 3339. */
  generatedAt: string;
  hpas: HpaStatus[];
  /**
   * Each schedule object the HPAs above use, once, sorted by kind, namespace and name (empty
   * when the schedules are not computed: the overview page does not).
   */
  schedules: ScheduleStatus[];
  /** prometheus-adapter's config (`--prometheus-adapter-config`), when it is served. */
  prometheusAdapter?: PrometheusAdapterStatus;
}

/** One rule on the status page. */
export interface PrometheusAdapterRuleStatus {
  /** Where it is in the file: `rules[2]`, `externalRules[0]`. */
  rule: string;
  seriesQuery: string;
  metricsQuery: string;
  /** The metrics it serves now (`pods/http_requests_per_second`; external: the name). */
  metrics: string[];
}

/** prometheus-adapter's config as the status page shows it. */
export interface PrometheusAdapterStatus {
  /** The file's path. */
  config: string;
  /** Why the file's last edit was refused (the last good config serves), or null. */
  refused: string | null;
  /** The last discovery of every rule (RFC 3339) and its error, or null before the first. */
  discovery: { at: string; error: string | null } | null;
  rules: PrometheusAdapterRuleStatus[];
  externalRules: PrometheusAdapterRuleStatus[];
  /** Whether `resourceRules` serve metrics.k8s.io. */
  resourceRules: boolean;
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
  // `query` is the value of the key `query-name` names (the legacy form): secret when that is
  const named = config["query-name"];
  const secretQuery = named !== undefined && isSecretKey(named) && config[named] === config.query;
  for (const key of Object.keys(config).sort()) {
    const v = config[key];
    out[key] = isSecretKey(key) || (key === "query" && secretQuery)
      ? "(redacted)"
      : v.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/gi, "$1");
  }
  return out;
}

function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key) && !/-from$/.test(key);
}

/** A selector as shown: its matchLabels redacted as a config ({@linkcode redactConfig}). */
export function redactSelector(s: LabelSelector | null | undefined): LabelSelector | null {
  if (!s) return null;
  const out: LabelSelector = {};
  if (s.matchLabels) out.matchLabels = redactConfig(s.matchLabels);
  if (s.matchExpressions) {
    out.matchExpressions = s.matchExpressions.map((e) => ({
      key: e.key,
      operator: e.operator,
      ...(e.values ? { values: [...e.values] } : {}),
    }));
  }
  return out;
}

/** A label selector as `key=value,key in (a,b)` (its JSON when it does not parse). */
export function selectorText(s: LabelSelector): string {
  try {
    return labelSelectorString(s);
  } catch {
    return JSON.stringify(s);
  }
}

/**
 * The entries of a metric's config that come from its `metric-config.*` annotations: those that
 * are not its selector's matchLabels (which the planner merges under them). Both redacted alike.
 *
 * @example
 * ```ts
 * annotationConfig({ type: "json-path", endpoint: "http://q" }, { matchLabels: { type: "json-path" } });
 * // [["endpoint", "http://q"]]
 * ```
 */
export function annotationConfig(
  config: Readonly<Record<string, string>>,
  selector: LabelSelector | null,
): [string, string][] {
  const labels = selector?.matchLabels ? redactConfig(selector.matchLabels) : {};
  return Object.entries(config).filter(([k, v]) => labels[k] !== v);
}

/** The schedule object a plan reads, or null. */
export function scheduleRefOf(plan: MetricPlan): ScheduleRef | null {
  const kind = plan.collector ? SCHEDULE_COLLECTORS[plan.collector] : undefined;
  if (kind === undefined || !plan.describedObject) return null;
  return {
    kind,
    namespace: kind === "ScalingSchedule" ? plan.hpa.namespace : null,
    name: plan.describedObject.name,
  };
}

function scheduleKey(r: ScheduleRef): string {
  return `${r.kind}/${r.namespace ?? ""}/${r.name}`;
}

/** `ScalingSchedule ns/name`, `ClusterScalingSchedule name`. */
export function scheduleLabel(r: ScheduleRef): string {
  return r.namespace === null ? `${r.kind} ${r.name}` : `${r.kind} ${r.namespace}/${r.name}`;
}

/**
 * A schedule object's next `hours` from `now`, with the collector's maths; an object that is
 * missing or invalid gives its error.
 *
 * @example
 * ```ts
 * scheduleStatus({ kind: "ClusterScalingSchedule", namespace: null, name: "launch" },
 *   cluster.get("ClusterScalingSchedule", undefined, "launch"), options, Date.now());
 * ```
 */
export function scheduleStatus(
  ref: ScheduleRef,
  obj: KubeObject | undefined,
  options: ScheduleOptions,
  now: number,
  hours: number = SCHEDULE_HOURS,
): ScheduleStatus {
  const to = now + hours * 3_600_000;
  const out: ScheduleStatus = {
    ...ref,
    error: null,
    from: new Date(now).toISOString(),
    to: new Date(to).toISOString(),
    scalingWindowSeconds: null,
    rampSteps: options.rampSteps,
    active: null,
    steps: [],
  };
  const label = scheduleLabel(ref);
  if (!obj) {
    out.error = `${label} not found`;
    return out;
  }
  try {
    const spec = parseScalingSchedule({ ...obj, kind: ref.kind }).spec;
    const steps = scheduleSteps(spec, { ...options, from: now, to });
    out.scalingWindowSeconds = scalingWindowMs(spec, options) / 1000;
    out.active = scheduleActive(spec, now, options);
    out.steps = steps.map((s) => ({ at: new Date(s.at).toISOString(), value: s.value }));
  } catch (e) {
    const msg = (e as Error).message;
    out.error = msg.includes(label) ? msg : `invalid ${label}: ${msg}`;
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
  delegate: () => string | undefined,
): { state: MetricState; error: string | null } {
  if (p.problem !== null && p.incompatible && !p.plan.hidden && delegate() !== undefined) {
    return { state: "delegated", error: null };
  }
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
    () => delegateOf(plan, input),
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
    selector: redactSelector(plan.metricSelector),
    schedule: scheduleRefOf(plan),
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
    fallback: plan.fallback ? fallbackState(fb) : null,
    delegate: state === "delegated" ? delegateOf(plan, input) ?? null : null,
    warnings: [...(plan.warnings ?? [])],
    history: points(h),
  };
}

function fallbackState(fb: StatusFallbackInput | undefined): FallbackState {
  const last = fb?.last ?? null;
  return {
    active: fb?.active ?? false,
    consecutiveFailures: fb?.consecutiveFailures ?? 0,
    activeSince: iso(last?.since ?? null),
    endedAt: iso(last?.endedAt ?? null),
    value: last?.value ?? null,
    replicas: last?.replicas ?? null,
    reason: last?.cause ?? null,
    endReason: last?.endReason ?? null,
  };
}

/** The guard's last decision as reported, or null when the guard is not on for the HPA. */
function guardStatus(hpa: KubeObject, input: StatusInput): ReplicaGuardStatus | null {
  if (!input.replicaGuard) return null;
  if (hpa.metadata.annotations?.[ESTAFETTE_ENABLED_ANNOTATION] !== "true") return null;
  const d = input.replicaGuard(hpa.metadata.namespace ?? "default", hpa.metadata.name);
  if (!d) {
    return {
      at: null,
      query: null,
      queryValue: null,
      minReplicas: null,
      maxScaleDown: null,
      scaleDownMinimum: null,
      message: null,
      changed: false,
      written: false,
      error: null,
    };
  }
  return {
    at: iso(d.at),
    query: d.query,
    queryValue: d.queryValue,
    minReplicas: d.minReplicas,
    maxScaleDown: d.maxScaleDown,
    scaleDownMinimum: d.scaleDownMinimum,
    message: d.message,
    changed: d.changed,
    written: d.written,
    error: d.error,
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
  const scaledObject = input.scaledObject?.(hpa) ?? null;
  // a ScaledObject's HPA is planned from the ScaledObject (ours), or by KEDA (not here)
  if (plans.length === 0 && scaledObject === null) {
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
    replicaGuard: guardStatus(hpa, input),
    scaledObject,
    metrics,
  };
}

/**
 * The status document: every HPA of the cluster view (sorted worst state first, then by
 * namespace and name) with each metric's state, value, age and recent values, and the replica
 * count the core's HPA algorithm computes next to the HPA's status; with `schedules`, the next
 * 24 hours of each schedule object they use (each computed once per call).
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
  const only = input.only;
  const listed = only
    ? input.hpas.filter((h) =>
      (h.metadata.namespace ?? "default") === only.namespace && h.metadata.name === only.name
    )
    : input.hpas;
  const hpas = listed.map((hpa) =>
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
  const schedules: ScheduleStatus[] = [];
  const source = input.schedules;
  if (source) {
    const refs = new Map<string, ScheduleRef>();
    for (const h of hpas) {
      for (const m of h.metrics) if (m.schedule) refs.set(scheduleKey(m.schedule), m.schedule);
    }
    for (const key of [...refs.keys()].sort()) {
      const ref = refs.get(key)!;
      const obj = source.get(ref.kind, ref.namespace ?? undefined, ref.name);
      schedules.push(scheduleStatus(ref, obj, source.options, input.now));
    }
  }
  return {
    version: STATUS_VERSION,
    generatedAt: new Date(input.now).toISOString(),
    hpas,
    schedules,
    ...(input.prometheusAdapter && !only ? { prometheusAdapter: input.prometheusAdapter() } : {}),
  };
}

/**
 * A fallback's state and last episode in words: `active since T, serving 6 (3 replicas): why`,
 * `not active, 0 consecutive failures; last active from T1 to T2, served 6 (3 replicas): why;
 * ended: why`.
 */
export function fallbackText(f: NonNullable<MetricStatus["fallback"]>): string {
  const served = f.value === null
    ? ""
    : `serving ${number(f.value)} (${f.replicas} replica${f.replicas === 1 ? "" : "s"})`;
  if (f.active) {
    if (f.activeSince === null) return "active";
    return `active since ${f.activeSince}, ${served}${f.reason ? `: ${f.reason}` : ""}`;
  }
  const now = `not active, ${f.consecutiveFailures} consecutive failure${
    f.consecutiveFailures === 1 ? "" : "s"
  }`;
  if (f.activeSince === null) return now;
  return `${now}; last active from ${f.activeSince} to ${f.endedAt ?? "?"}, ${
    served.replace("serving", "served")
  }${f.reason ? `: ${f.reason}` : ""}${f.endReason ? `; ended: ${f.endReason}` : ""}`;
}

/** The replica guard's scale-down cap in words, null when it could not decide. */
export function guardCapText(g: ReplicaGuardStatus): string | null {
  if (g.minReplicas === null) return null;
  if (g.maxScaleDown === null) return "off while a deployment is in progress";
  const most = g.maxScaleDown === 0 ? 1 : g.maxScaleDown;
  return `at most ${most} replica${
    most === 1 ? "" : "s"
  } removed per scale-down: minReplicas at least ${g.scaleDownMinimum}`;
}

/** What became of the guard's decision. */
export function guardOutcomeText(g: ReplicaGuardStatus): string {
  if (!g.changed) return "nothing to write";
  if (g.written) return "written";
  return g.error === null ? "not written: file mode, decisions are logged" : "not written";
}

/** A number without the float noise of an average (33.199999999999996 is 33.2). */
function number(v: number): string {
  return String(Number(v.toPrecision(12)));
}

/**
 * A schedule's next changes in words, a ramp's steps taken together as one change (at most
 * `max`), and how many more such changes follow within its range.
 *
 * @example
 * ```ts
 * scheduleChangeTexts(schedule, 2);
 * // { changes: ["up to 40 from 2026-11-22T10:26:00.000Z to 2026-11-22T10:30:00.000Z (5 steps)",
 * //   "down to 0 from 2026-11-22T10:40:00.001Z to 2026-11-22T10:49:00.001Z (10 steps)"], more: 44 }
 * ```
 */
export function scheduleChangeTexts(
  s: ScheduleStatus,
  max = 3,
): { changes: string[]; more: number } {
  const steps = s.steps.map((x) => ({ at: Date.parse(x.at), value: x.value }));
  const gap = rampStepMs((s.scalingWindowSeconds ?? 0) * 1000, s.rampSteps);
  const changes = scheduleChanges(steps, gap);
  const iso = (ms: number): string => new Date(ms).toISOString();
  const texts = changes.slice(0, max).map((c) => {
    const dir = c.value > c.fromValue ? "up" : "down";
    return c.steps === 1
      ? `${dir} to ${c.value} at ${iso(c.from)}`
      : `${dir} to ${c.value} from ${iso(c.from)} to ${iso(c.to)} (${c.steps} steps)`;
  });
  return { changes: texts, more: Math.max(0, changes.length - max) };
}

/** The schedule object a metric reads, from a report's `schedules`, or undefined. */
export function findSchedule(
  report: Pick<StatusReport, "schedules">,
  ref: ScheduleRef,
): ScheduleStatus | undefined {
  return (report.schedules ?? []).find((s) =>
    s.kind === ref.kind && s.namespace === ref.namespace && s.name === ref.name
  );
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
