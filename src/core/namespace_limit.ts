/**
 * `--max-metrics-per-namespace` (issue 25's fair share): which plans of a namespace are
 * collected when it has more than the limit, and what the others say.
 *
 * The order is the oldest HPA first (`metadata.creationTimestamp`), then the HPA's name, then
 * the metric's index (hidden formula inputs come after the listed metrics): a new HPA never
 * displaces the metrics of one that already runs, and every replica and every restart picks
 * the same plans (the API server keeps the timestamps). An HPA without a timestamp (a
 * manifest read from a file) counts as the oldest, so manifests alone go by name.
 */
import type { MetricPlan } from "./types.ts";

/** Where a plan stands in its namespace's order. */
export interface MetricRank {
  /** Its HPA's creation time, ms since the epoch (0 when unknown). */
  createdAt: number;
  /** Its HPA's name. */
  hpa: string;
  /** Its index among the HPA's plans. */
  index: number;
}

/**
 * The creation time of an HPA object, ms since the epoch; 0 when it has none or an invalid one.
 *
 * @example
 * ```ts
 * hpaCreatedAt({ metadata: { creationTimestamp: "2024-01-02T03:04:05Z" } }); // 1704164645000
 * ```
 */
export function hpaCreatedAt(hpa: unknown): number {
  const t = (hpa as { metadata?: { creationTimestamp?: unknown } } | null)?.metadata
    ?.creationTimestamp;
  const ms = typeof t === "string" ? Date.parse(t) : NaN;
  return Number.isFinite(ms) ? ms : 0;
}

/**
 * Orders plans for the limit: negative when `a` is collected before `b`.
 *
 * @example
 * ```ts
 * compareMetricRank({ createdAt: 1, hpa: "z", index: 0 }, { createdAt: 2, hpa: "a", index: 0 }); // < 0
 * ```
 */
export function compareMetricRank(a: MetricRank, b: MetricRank): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? -1 : 1;
  if (a.hpa !== b.hpa) return a.hpa < b.hpa ? -1 : 1;
  return a.index - b.index;
}

/**
 * Why a plan is not collected: its namespace has more plans that could run than `limit`. The
 * text names no count, so it stays the same while the namespace's HPAs come and go: one
 * event per refused metric, not one per change elsewhere in its namespace.
 *
 * @example
 * ```ts
 * namespaceLimitMessage(plan, 500);
 * // "namespace a has more metrics than --max-metrics-per-namespace 500: External metric `rps`
 * //  of HPA a/web-731 is not collected (the oldest HPAs' metrics are collected first)"
 * ```
 */
export function namespaceLimitMessage(
  plan: Pick<MetricPlan, "hpa" | "metricType" | "metricName">,
  limit: number,
): string {
  return `namespace ${plan.hpa.namespace} has more metrics than --max-metrics-per-namespace ${limit}: ${plan.metricType} metric \`${plan.metricName}\` of HPA ${plan.hpa.namespace}/${plan.hpa.name} is not collected (the oldest HPAs' metrics are collected first)`;
}

/** One plan that could run, with its HPA's creation time (see {@linkcode overNamespaceLimit}). */
export interface RankedPlan {
  plan: MetricPlan;
  /** Its HPA's creation time, ms since the epoch (see {@linkcode hpaCreatedAt}). */
  createdAt: number;
}

/**
 * The plans beyond `limit` in their namespace, each with its message (none when `limit` is 0).
 * `plans` are those that could run (no error); the offline commands use this, the engine
 * keeps the same order as plans come and go.
 *
 * @example
 * ```ts
 * const refused = overNamespaceLimit(plans.map((plan) => ({ plan, createdAt: 0 })), 500);
 * for (const [p, message] of refused) p.plan.error = message;
 * ```
 */
export function overNamespaceLimit<T extends RankedPlan>(
  plans: readonly T[],
  limit: number,
): Map<T, string> {
  const out = new Map<T, string>();
  if (!(limit > 0)) return out;
  const byNamespace = new Map<string, T[]>();
  for (const p of plans) {
    const list = byNamespace.get(p.plan.hpa.namespace);
    if (list) list.push(p);
    else byNamespace.set(p.plan.hpa.namespace, [p]);
  }
  const rank = (p: T): MetricRank => ({
    createdAt: p.createdAt,
    hpa: p.plan.hpa.name,
    index: p.plan.index,
  });
  for (const list of byNamespace.values()) {
    if (list.length <= limit) continue;
    const sorted = [...list].sort((a, b) => compareMetricRank(rank(a), rank(b)));
    for (const p of sorted.slice(limit)) {
      out.set(p, namespaceLimitMessage(p.plan, limit));
    }
  }
  return out;
}
