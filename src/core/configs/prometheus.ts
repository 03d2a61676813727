/**
 * The config of `prometheus` metrics: External (`type: prometheus`, legacy metric name
 * `prometheus-query`) and Object on any kind. Keys, as kube-metrics-adapter reads them:
 * `query` (PromQL), or for External metrics the legacy `query-name` naming the key that holds
 * it; `prometheus-server` (an http(s) URL the HPA chooses, not link-local unless allowed) or
 * `prometheus-server-alias` (a server the operator configured; whether it exists is the
 * collector's check). An empty value counts as not set.
 */
import { z } from "zod";
import {
  type CollectorDescriptor,
  type ConfigContext,
  configKey,
  type ConfigSchema,
  REQUIRED,
} from "../collector_config.ts";
import type { MetricType } from "../types.ts";
import { hpaUrlKey } from "./json_path.ts";

/** A prometheus metric's config. */
export interface PrometheusConfig {
  /** The PromQL query (from `query`, or the key `query-name` names). */
  query: string;
  /** `prometheus-server`, normalised by the URL parser; undefined for the operator's. */
  server?: string;
  /** `prometheus-server-alias`; undefined when not set. */
  serverAlias?: string;
}

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
    const out: PrometheusConfig = { query: query ?? "" };
    if (c["prometheus-server"] !== undefined) out.server = c["prometheus-server"];
    if (c["prometheus-server-alias"] !== undefined) out.serverAlias = c["prometheus-server-alias"];
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
};
