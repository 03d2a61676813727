/**
 * Issue 25's limits from the flags: `--min-collection-interval` (a plan option) and
 * `--max-metrics-per-namespace` (the engine's, and what the offline commands apply to the
 * HPAs of the manifests they read, in the engine's order).
 */
import { formatDuration } from "../core/duration.ts";
import { hpaCreatedAt, overNamespaceLimit, type RankedPlan } from "../core/namespace_limit.ts";
import { planKey } from "../core/kube_metrics_adapter/plan.ts";
import type { MetricPlan } from "../core/types.ts";
import { UsageError } from "./command.ts";
import { type FlagValues, numberFlag } from "./flags.ts";

/** The limits of the flags. */
export interface CollectionLimits {
  /** `--min-collection-interval`, seconds (0: no bound). */
  minIntervalSeconds: number;
  /** `--max-metrics-per-namespace` (0: no limit). */
  maxMetricsPerNamespace: number;
}

/**
 * Read and check the limits: a negative value, or a `--default-collection-interval` below the
 * minimum (every metric without an annotation would be refused), is a UsageError.
 *
 * @example
 * ```ts
 * collectionLimitsFromFlags(flagDefaults(SERVE_FLAGS));
 * // { minIntervalSeconds: 1, maxMetricsPerNamespace: 0 }
 * ```
 */
export function collectionLimitsFromFlags(flags: FlagValues): CollectionLimits {
  const min = numberFlag(flags, "min-collection-interval");
  if (min < 0) {
    throw new UsageError(
      `invalid value "${formatDuration(min)}" for --min-collection-interval: want 0 or more`,
    );
  }
  const max = numberFlag(flags, "max-metrics-per-namespace");
  if (max < 0) {
    throw new UsageError(
      `invalid value "${max}" for --max-metrics-per-namespace: want 0 (no limit) or more`,
    );
  }
  const dflt = numberFlag(flags, "default-collection-interval");
  if (dflt > 0 && dflt < min) {
    throw new UsageError(
      `--default-collection-interval ${formatDuration(dflt)} is below --min-collection-interval ${
        formatDuration(min)
      }: raise the first or lower the second`,
    );
  }
  return { minIntervalSeconds: min, maxMetricsPerNamespace: max };
}

/** The plans of one HPA object, as the offline commands made them. */
export interface PlannedHpa {
  hpa: unknown;
  plans: MetricPlan[];
}

/**
 * Apply `--max-metrics-per-namespace` to planned HPAs as the engine does: the plans without an
 * error beyond the limit of their namespace get its message as their error, and a formula
 * whose input is one of them says so (the engine fails it when it computes).
 *
 * @example
 * ```ts
 * limitMetricsPerNamespace([{ hpa, plans: planHpa(hpa) }], 500);
 * ```
 */
export function limitMetricsPerNamespace(planned: readonly PlannedHpa[], limit: number): void {
  if (!(limit > 0)) return;
  const candidates: RankedPlan[] = [];
  for (const { hpa, plans } of planned) {
    const createdAt = hpaCreatedAt(hpa);
    for (const plan of plans) if (plan.error === null) candidates.push({ plan, createdAt });
  }
  const refused = new Map<string, string>();
  for (const [{ plan }, message] of overNamespaceLimit(candidates, limit)) {
    plan.error = message;
    refused.set(planKey(plan), message);
  }
  if (refused.size === 0) return;
  for (const { plan } of candidates) {
    if (plan.error !== null || !plan.formula) continue;
    const errors: string[] = [];
    for (const input of plan.formula.inputs) {
      const why = refused.get(input.planKey);
      if (why !== undefined) {
        errors.push(
          `input \`${input.identifier}\` (${input.metricType} metric ${input.metricName}) cannot be collected: ${why}`,
        );
      }
    }
    if (errors.length > 0) plan.error = errors.join("; ");
  }
}
