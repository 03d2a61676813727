/**
 * One small interface for every backend (KEDA calls them scalers). A collector turns one metric
 * plan into samples; it does I/O only through what it is handed.
 */
import type { ClusterView, Kind } from "../cluster/types.ts";
import {
  type CollectorDescriptor,
  type ConfigContext,
  parseCollectorConfig,
  planOrigin,
} from "../core/kube_metrics_adapter/collector_config.ts";
import type { MetricPlan, MetricType } from "../core/types.ts";
import type { Sample } from "../store/types.ts";

/** What a collection may use. Time and I/O come in; nothing global is touched. */
export interface CollectContext {
  /** Aborted when the collection times out or the plan is stopped. */
  signal: AbortSignal;
  /** The clock, ms since the epoch. */
  now(): number;
  fetch: typeof fetch;
  cluster: ClusterView;
  /** Resolves host names for the link-local check (node:dns when absent; tests inject one). */
  lookup?: (hostname: string) => Promise<string[]>;
}

/** The outcome of one collection. */
export interface CollectResult {
  samples: Sample[];
  /** Partial failures that did not fail the whole collection (a pod that did not answer). */
  warnings?: string[];
}

/** A running plan's collector. Throws (with a message naming the metric and value) on failure. */
export interface Collector {
  /** Identity of the backend query: plans with equal keys share one collection per interval. */
  readonly queryKey: string;
  /** Cluster kinds the collection reads from `ctx.cluster` (the engine ensures them first). */
  readonly kinds?: readonly Kind[];
  /**
   * How long one collection may take, ms, when the collector's own timeouts need longer than
   * `--collection-timeout` (the engine's deadline is the larger of the two). Asked before each
   * collection: a Pods collection's time depends on how many pods it asks.
   */
  timeoutMs?(ctx: Pick<CollectContext, "cluster" | "now">): number;
  collect(ctx: CollectContext): Promise<CollectResult>;
}

/**
 * What a factory's `create` receives: the plan. What the operator set (servers, limits, what
 * is allowed) each factory took as typed options when it was made (src/cli/collectors.ts).
 */
export interface CollectorFactoryOptions {
  plan: MetricPlan;
}

/** Builds collectors of one type; registered by `type` in src/collectors/registry.ts. */
export interface CollectorFactory {
  /** The collector type as written in annotations and plans (`json-path`, `prometheus`, ...). */
  readonly type: string;
  /** Metric types this factory serves (all when absent): `json-path` is a Pods and an External type. */
  readonly metricTypes?: readonly MetricType[];
  /** Throws a clear error if the plan's config is unusable. */
  create(options: CollectorFactoryOptions): Collector;
}

/**
 * Thrown by a factory when the plan's config is fine but a backend it needs is not set up by
 * the flags (no `--prometheus-server`, a region not in `--aws-region`, a collector switch off).
 * Factories check the config first, so this comes only after every config error. `plan`
 * without collector flags assumes every backend set up and ignores it; `serve` reports it as
 * any other error.
 */
export class BackendNotConfiguredError extends Error {
  /** Set the name so logs say what happened. */
  override name = "BackendNotConfiguredError";
}

/**
 * A plan's config read with its collector's schema, as `plan` read it: the typed config, or
 * an Error with every problem (only a plan that `planHpa` did not check can fail here).
 */
export function planConfig<C>(
  descriptor: CollectorDescriptor<C>,
  plan: MetricPlan,
  context: ConfigContext,
): C {
  const r = parseCollectorConfig(descriptor, plan.config, planOrigin(plan), context);
  if (!r.ok) throw new Error(r.errors.join("; "));
  return r.config;
}
