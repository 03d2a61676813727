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
export * from "./src/core/kubernetes/quantity.ts";
export * from "./src/core/kubernetes/label_selector.ts";
export * from "./src/core/kube_metrics_adapter/aggregators.ts";
export * from "./src/core/kube_metrics_adapter/json_extract.ts";
export * from "./src/core/formula.ts";
export * from "./src/core/kube_metrics_adapter/annotations.ts";
export * from "./src/core/dictionary.ts";
export * from "./src/core/kubernetes/hpa.ts";
export * from "./src/core/kube_metrics_adapter/plan.ts";
export * from "./src/core/kube_metrics_adapter/collector_config.ts";
export * from "./src/core/kube_metrics_adapter/collectors.ts";
export * from "./src/core/kube_metrics_adapter/configs/json_path.ts";
export * from "./src/core/kube_metrics_adapter/configs/prometheus.ts";
export * from "./src/core/kube_metrics_adapter/configs/skipper.ts";
export * from "./src/core/kube_metrics_adapter/configs/requests_per_second.ts";
export * from "./src/core/kube_metrics_adapter/configs/influxdb.ts";
export * from "./src/core/kube_metrics_adapter/configs/sqs.ts";
export * from "./src/core/kube_metrics_adapter/configs/zmon.ts";
export * from "./src/core/kube_metrics_adapter/configs/nakadi.ts";
export * from "./src/core/kube_metrics_adapter/configs/formula.ts";
export * from "./src/core/link_local.ts";
export * from "./src/core/endpoint_policy.ts";
export * from "./src/core/quote.ts";
export * from "./src/core/kube_metrics_adapter/scaling_schedule.ts";
export * from "./src/core/kubernetes/hpa_algorithm.ts";
export * from "./src/core/fallback.ts";
export * from "./src/core/estafette/guard.ts";
export * from "./src/core/knative/mapping.ts";
export * from "./src/core/promql_scope.ts";
export * from "./src/core/kube_metrics_adapter/schedule_series.ts";
export * from "./src/core/namespace_limit.ts";
export * from "./src/core/shard.ts";
