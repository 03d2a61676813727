/**
 * `--prometheus-enforce-namespace-label` (issue 25): the scoper the planner and the replica
 * guard apply to every PromQL query an HPA writes. The PromQL parser (core/promql_scope.ts
 * and the Prometheus project's grammar) is loaded only when the flag is set, so an adapter
 * that does not enforce namespaces does not carry it.
 */
import { UsageError } from "./command.ts";
import type { PromQLScoper } from "../core/kube_metrics_adapter/collector_config.ts";
import { type FlagValues, stringFlag } from "./flags.ts";

/**
 * The scoper of `--prometheus-enforce-namespace-label=LABEL`, or undefined when it is not set.
 * A label that cannot be matched on (`__name__`, not a label name) is a usage error.
 *
 * @example
 * ```ts
 * const scope = await promqlScoperFromFlags({ "prometheus-enforce-namespace-label": "namespace" });
 * scope?.("sum(up)", "shop"); // 'sum(up{namespace="shop"})'
 * ```
 */
export async function promqlScoperFromFlags(
  flags: FlagValues,
): Promise<PromQLScoper | undefined> {
  const label = stringFlag(flags, "prometheus-enforce-namespace-label");
  if (label === undefined || label === null || label === "") return undefined;
  const { scopePromQL } = await import("../core/promql_scope.ts");
  try {
    scopePromQL("up", { label, value: "default" });
  } catch (e) {
    throw new UsageError(
      `invalid value "${label}" for --prometheus-enforce-namespace-label: ${(e as Error).message}`,
    );
  }
  return (query, namespace) => scopePromQL(query, { label, value: namespace });
}
