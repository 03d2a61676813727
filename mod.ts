/**
 * hpa-metrics-adapter's pure core, for tools that want to reason about HPAs the way the adapter
 * does (lint manifests in CI, preview schedules, predict replicas). No I/O, no clock: time comes
 * in as an argument. Runs under Node, Deno and Bun.
 *
 * @example
 * ```ts
 * import { formatQuantity, planHpa } from "./mod.ts";
 * formatQuantity(0.5); // "500m"
 * ```
 *
 * @module
 */
export * from "./src/core/types.ts";
export * from "./src/core/duration.ts";
export * from "./src/core/quantity.ts";
export * from "./src/core/label_selector.ts";
export * from "./src/core/aggregators.ts";
export * from "./src/core/json_extract.ts";
export * from "./src/core/formula.ts";
export * from "./src/core/annotations.ts";
export * from "./src/core/dictionary.ts";
export * from "./src/core/hpa.ts";
export * from "./src/core/plan.ts";
export * from "./src/core/collector_config.ts";
export * from "./src/core/collectors.ts";
export * from "./src/core/configs/json_path.ts";
export * from "./src/core/configs/prometheus.ts";
export * from "./src/core/configs/skipper.ts";
export * from "./src/core/configs/requests_per_second.ts";
export * from "./src/core/configs/influxdb.ts";
export * from "./src/core/configs/sqs.ts";
export * from "./src/core/configs/zmon.ts";
export * from "./src/core/configs/nakadi.ts";
export * from "./src/core/configs/formula.ts";
export * from "./src/core/link_local.ts";
export * from "./src/core/endpoint_policy.ts";
export * from "./src/core/quote.ts";
export * from "./src/core/scaling_schedule.ts";
export * from "./src/core/hpa_algorithm.ts";
export * from "./src/core/fallback.ts";
export * from "./src/core/estafette_guard.ts";
export * from "./src/core/knative.ts";
export * from "./src/core/promql_scope.ts";
export * from "./src/core/schedule_series.ts";
export * from "./src/core/namespace_limit.ts";
export * from "./src/core/shard.ts";
