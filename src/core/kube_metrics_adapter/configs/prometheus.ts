/**
 * The config of `prometheus` metrics: External (`type: prometheus`, legacy metric name
 * `prometheus-query`) and Object on any kind. Keys, as kube-metrics-adapter reads them:
 * `query` (PromQL), or for External metrics the legacy `query-name` naming the key that holds
 * it; `prometheus-server` (an http(s) URL the HPA chooses, not link-local unless allowed) or
 * `prometheus-server-alias` (a server the operator configured; whether it exists is the
 * collector's check). An empty value counts as not set.
 *
 * Three keys give KEDA's Prometheus scaler semantics (for the metrics Knative's autoscaler-keda
 * annotations map to; any HPA may set them):
 * - `namespace`: a Kubernetes namespace name sent as the query's `namespace` HTTP parameter
 *   (Thanos/Cortex tenancy, as KEDA sends it; plain Prometheus ignores it).
 * - `ignore-null-values`: `"true"` makes an empty vector, and a NaN or ±Inf value, 0 instead
 *   of an error (default `"false"`).
 * - `multiple-series`: what several series of an instant vector give: `sum` (the default),
 *   `error` (KEDA: at most one series) or `first` (the first series of the answer, as
 *   kube-metrics-adapter kept it).
 *
 * `bearer-token-from` is refused ({@linkcode BEARER_TOKEN_FROM_REFUSED}): its tokens came from
 * the Knative reconciler, which no longer provides them, and a metric must not lose its token
 * silently.
 */
import { z } from "zod";
import {
  type CollectorDescriptor,
  type ConfigContext,
  configKey,
  type ConfigSchema,
  REQUIRED,
} from "../collector_config.ts";
import type { MetricType } from "../../types.ts";
import { hpaUrlKey } from "./json_path.ts";

/** What several series of an instant vector give (`multiple-series`). */
export type MultipleSeries = "sum" | "error" | "first";

/** The values of `multiple-series`, the default first. */
export const MULTIPLE_SERIES: readonly MultipleSeries[] = ["sum", "error", "first"];

/** A Kubernetes namespace name: a DNS-1123 label (lowercase, at most 63 characters). */
const NAMESPACE_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** A prometheus metric's config. */
export interface PrometheusConfig {
  /** The PromQL query (from `query`, or the key `query-name` names). */
  query: string;
  /** `prometheus-server`, normalised by the URL parser; undefined for the operator's. */
  server?: string;
  /** `prometheus-server-alias`; undefined when not set. */
  serverAlias?: string;
  /** `namespace`: sent as the query's `namespace` parameter; undefined when not set. */
  namespace?: string;
  /** `ignore-null-values`: an empty vector, NaN or ±Inf is 0, not an error (default false). */
  ignoreNullValues: boolean;
  /** `multiple-series` (default `sum`). */
  multipleSeries: MultipleSeries;
}

/**
 * Why a `bearer-token-from` value is refused, whatever it is: the Knative reconciler filled its
 * token store and now resolves a TriggerAuthentication as KEDA does, so nothing would send the
 * token.
 */
export const BEARER_TOKEN_FROM_REFUSED =
  "no longer read: it was filled by the Knative reconciler, which now resolves a TriggerAuthentication as KEDA does; set the token with --prometheus-server-token-file (the operator's server) or move the metric to a KEDA ScaledObject with a TriggerAuthentication";

/** A key whose empty value counts as absent. */
function unlessEmpty<T>(
  key: z.ZodType<T | undefined, string | undefined>,
): z.ZodType<T | undefined, string | undefined> {
  return z.preprocess((v) => (v === "" ? undefined : v), key) as z.ZodType<
    T | undefined,
    string | undefined
  >;
}

function schema(metricType: MetricType, context: ConfigContext): ConfigSchema<PrometheusConfig> {
  return z.looseObject({
    query: unlessEmpty(configKey((v) => v)),
    "query-name": unlessEmpty(configKey((v) => v)),
    "prometheus-server": unlessEmpty(hpaUrlKey(context).optional()),
    "prometheus-server-alias": unlessEmpty(configKey((v) => v)),
    namespace: unlessEmpty(configKey((v) => {
      if (!NAMESPACE_NAME.test(v)) {
        throw new Error(
          "want a Kubernetes namespace name (at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit)",
        );
      }
      return v;
    })),
    "ignore-null-values": unlessEmpty(configKey((v) => {
      if (v === "true") return true;
      if (v === "false") return false;
      throw new Error(`want "true" or "false"`);
    })),
    // Known, so that an HPA still setting it is told why, not left without its token.
    "bearer-token-from": unlessEmpty(configKey((): never => {
      throw new Error(BEARER_TOKEN_FROM_REFUSED);
    })),
    "multiple-series": unlessEmpty(configKey((v) => {
      if (!(MULTIPLE_SERIES as readonly string[]).includes(v)) {
        throw new Error(`want "sum", "error" or "first"`);
      }
      return v as MultipleSeries;
    })),
  }).transform((c, ctx): PrometheusConfig => {
    let query = c.query;
    const queryName = c["query-name"];
    if (query === undefined && metricType === "External" && queryName !== undefined) {
      // The legacy form: the query is the value of the key query-name names.
      const named = (c as Record<string, unknown>)[queryName];
      if (typeof named !== "string" || named === "") {
        ctx.addIssue({
          code: "custom",
          path: [queryName],
          message: `${REQUIRED} (the query named by query-name)`,
        });
      } else query = named;
    } else if (query === undefined) {
      ctx.addIssue({ code: "custom", path: ["query"], message: REQUIRED });
    }
    const out: PrometheusConfig = {
      query: query ?? "",
      ignoreNullValues: c["ignore-null-values"] ?? false,
      multipleSeries: c["multiple-series"] ?? "sum",
    };
    if (c["prometheus-server"] !== undefined) out.server = c["prometheus-server"];
    if (c["prometheus-server-alias"] !== undefined) out.serverAlias = c["prometheus-server-alias"];
    if (c.namespace !== undefined) out.namespace = c.namespace;
    return out;
  }) as unknown as ConfigSchema<PrometheusConfig>;
}

/**
 * `prometheus`: External and Object metrics from a PromQL query (legacy External type and
 * metric name `prometheus-query`).
 */
export const prometheusDescriptor: CollectorDescriptor<PrometheusConfig> = {
  type: "prometheus",
  aliases: ["prometheus-query"],
  metricTypes: ["Object", "External"],
  enabledBy: "--prometheus-server",
  schema(metricType: MetricType, context: ConfigContext): ConfigSchema<PrometheusConfig> {
    // (made once per metric type and context by parseCollectorConfig)
    return schema(metricType === "Object" ? "Object" : "External", context);
  },
  promqlKeys(config, metricType) {
    if (config.query !== undefined && config.query !== "") return ["query"];
    // the legacy External form: the query is the value of the key query-name names
    const named = config["query-name"];
    return metricType === "External" && named !== undefined && named !== "" &&
        typeof config[named] === "string" && config[named] !== ""
      ? [named]
      : [];
  },
};
