/**
 * The config of `influxdb` metrics (External; legacy metric name `flux-query`). Keys, as
 * kube-metrics-adapter reads them: `query` (a Flux query), or the legacy `query-name` naming
 * the key that holds it; `address` and `org` (`org-id` is the older spelling) override the
 * operator's server and organization; `token` (whether a token may come from an HPA is the
 * operator's decision, made by the collector).
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

/** An InfluxDB metric's config. */
export interface InfluxDbConfig {
  /** The Flux query (from `query`, or the key `query-name` names). */
  query: string;
  /** `address`: an http(s) URL without trailing slashes; undefined for the operator's. */
  address?: string;
  /** `org`, else `org-id`; undefined for the operator's. */
  org?: string;
  /** `token`, as given; undefined when the HPA names none. */
  token?: string;
}

function fluxQuery(value: string): string {
  if (value.trim() === "") throw new Error("want a Flux query");
  return value;
}

function nonBlank(want: string): (value: string) => string {
  return (value) => {
    if (value.trim() === "") throw new Error(`want ${want}`);
    return value;
  };
}

function schema(context: ConfigContext): ConfigSchema<InfluxDbConfig> {
  return z.looseObject({
    query: configKey(fluxQuery),
    "query-name": configKey(nonBlank("the name of the key that holds the query")),
    address: hpaUrlKey(context).optional(),
    org: configKey(nonBlank("an organization name")),
    "org-id": configKey(nonBlank("an organization name")),
    token: z.string().optional(),
  }).transform((c, ctx): InfluxDbConfig => {
    let query = c.query;
    const queryName = c["query-name"];
    if (query === undefined && queryName !== undefined) {
      // The legacy form: the query is the value of the key query-name names.
      const named = (c as Record<string, unknown>)[queryName];
      if (typeof named !== "string") {
        ctx.addIssue({
          code: "custom",
          path: [queryName],
          message: `${REQUIRED} (the query named by query-name)`,
        });
      } else if (named.trim() === "") {
        ctx.addIssue({ code: "custom", path: [queryName], message: "want a Flux query" });
      } else query = named;
    } else if (query === undefined) {
      ctx.addIssue({ code: "custom", path: ["query"], message: REQUIRED });
    }
    const out: InfluxDbConfig = { query: query ?? "" };
    if (c.address !== undefined) out.address = c.address.replace(/\/+$/, "");
    const org = c.org ?? c["org-id"];
    if (org !== undefined) out.org = org;
    if (c.token !== undefined) out.token = c.token;
    return out;
  }) as unknown as ConfigSchema<InfluxDbConfig>;
}

/** `influxdb`: External metrics from a Flux query (legacy metric name `flux-query`). */
export const influxDbDescriptor: CollectorDescriptor<InfluxDbConfig> = {
  type: "influxdb",
  aliases: ["flux-query"],
  metricTypes: ["External"],
  enabledBy: "--influxdb-address",
  schema(_metricType: MetricType, context: ConfigContext): ConfigSchema<InfluxDbConfig> {
    return schema(context);
  },
};
