/**
 * The config of `json-path` metrics: Pods (each pod's JSON endpoint) and External (one
 * endpoint). Keys, as kube-metrics-adapter reads them: `json-key` (JSONPath) or `json-eval`
 * (expression), `aggregator`, `request-timeout` and `connect-timeout` (Go durations, 15s);
 * Pods: `port` (required), `scheme` (http), `path`, `raw-query`; External: `endpoint`.
 */
import { z } from "zod";
import { parseAggregator } from "../aggregators.ts";
import {
  type CollectorDescriptor,
  type ConfigContext,
  configKey,
  type ConfigSchema,
  REQUIRED,
} from "../collector_config.ts";
import { parseDuration } from "../../duration.ts";
import { checkEndpoint } from "../../endpoint_policy.ts";
import {
  checkJsonEvalSyntax,
  checkJsonKeySyntax,
  type JsonExtractionOptions,
} from "../json_extract.ts";
import { isLinkLocalHost } from "../../link_local.ts";
import type { MetricType } from "../../types.ts";

/** kube-metrics-adapter's default `request-timeout` and `connect-timeout`, seconds. */
export const DEFAULT_HTTP_TIMEOUT_SECONDS = 15;

/** What both kinds of json-path metric read. */
export interface JsonPathCommon {
  extraction: JsonExtractionOptions;
  /** `request-timeout`: the deadline of one request with its body, seconds. */
  requestTimeoutSeconds: number;
  /** `connect-timeout`, seconds (fetch has no connect phase: the request deadline bounds it). */
  connectTimeoutSeconds: number;
}

/** A Pods json-path metric's config. */
export interface PodJsonPathConfig extends JsonPathCommon {
  scheme: "http" | "https";
  port: number;
  /** `path`, as given ("" for none). */
  path: string;
  /** `raw-query`, as given ("" for none). */
  rawQuery: string;
}

/** An External json-path metric's config. */
export interface HttpJsonPathConfig extends JsonPathCommon {
  /** `endpoint`, normalised by the URL parser. */
  endpoint: string;
}

/** A Go duration that is not negative; 0 (or empty) means the default. */
export function timeoutKey(defaultSeconds: number): z.ZodType<number, string | undefined> {
  return configKey((v) => {
    if (v.trim() === "") return defaultSeconds;
    let seconds: number;
    try {
      seconds = parseDuration(v);
    } catch {
      throw new Error("want a Go duration like 2s or 500ms");
    }
    if (seconds < 0) throw new Error("must not be negative");
    return seconds === 0 ? defaultSeconds : seconds;
  }).transform((s) => s ?? defaultSeconds);
}

/**
 * An http(s) URL an HPA author chooses: normalised, refused when its host is a link-local
 * address unless the context allows it, and refused where the context's endpoint policy does
 * not allow it for the HPA's namespace (see endpoint_policy.ts).
 */
export function hpaUrlKey(context: ConfigContext): z.ZodType<string, string> {
  return configKey((v) => {
    let url: URL;
    try {
      url = new URL(v);
    } catch {
      throw new Error("want an http:// or https:// URL");
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new Error("want an http:// or https:// URL");
    }
    if (!context.allowLinkLocalTargets && isLinkLocalHost(url.hostname)) {
      throw new Error("a link-local address (allow with --allow-link-local-targets)");
    }
    const refused = checkEndpoint(url, {
      namespace: context.namespace ?? "",
      policy: context.endpointPolicy,
    });
    if (refused !== undefined) throw new Error(refused);
    return url.href;
  }, { required: true });
}

const common = {
  "json-key": configKey((v) => {
    if (v.trim() !== "") checkJsonKeySyntax(v);
    return v;
  }),
  "json-eval": configKey((v) => {
    if (v.trim() !== "") checkJsonEvalSyntax(v);
    return v;
  }),
  aggregator: configKey((v) => {
    try {
      return parseAggregator(v);
    } catch {
      throw new Error("want one of avg, min, max, sum, count, last, diff");
    }
  }),
  "request-timeout": timeoutKey(DEFAULT_HTTP_TIMEOUT_SECONDS),
  "connect-timeout": timeoutKey(DEFAULT_HTTP_TIMEOUT_SECONDS),
};

/** The extraction of the common keys: exactly one of json-key and json-eval. */
function extraction(
  c: {
    "json-key"?: string;
    "json-eval"?: string;
    aggregator?: JsonExtractionOptions["aggregator"];
  },
  ctx: z.RefinementCtx,
): JsonExtractionOptions {
  const key = c["json-key"]?.trim() ? c["json-key"] : undefined;
  const expression = c["json-eval"]?.trim() ? c["json-eval"] : undefined;
  if (key !== undefined && expression !== undefined) {
    ctx.addIssue({
      code: "custom",
      path: [],
      message: "sets both json-key and json-eval; keep one (they are mutually exclusive)",
    });
  } else if (key === undefined && expression === undefined) {
    ctx.addIssue({ code: "custom", path: ["json-key"], message: `${REQUIRED} (or json-eval)` });
  }
  const out: JsonExtractionOptions = key !== undefined
    ? { jsonKey: key }
    : { jsonEval: expression };
  if (c.aggregator !== undefined) out.aggregator = c.aggregator;
  return out;
}

const podSchema: ConfigSchema<PodJsonPathConfig> = z.object({
  ...common,
  port: configKey((v) => {
    if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 65535) {
      throw new Error("want a number from 1 to 65535");
    }
    return Number(v);
  }, { required: true }),
  scheme: configKey((v): "http" | "https" => {
    if (v !== "http" && v !== "https") throw new Error("want http or https");
    return v;
  }),
  path: z.string().optional(),
  "raw-query": z.string().optional(),
}).transform((c, ctx) => ({
  extraction: extraction(c, ctx),
  requestTimeoutSeconds: c["request-timeout"],
  connectTimeoutSeconds: c["connect-timeout"],
  scheme: c.scheme ?? "http",
  port: c.port,
  path: c.path ?? "",
  rawQuery: c["raw-query"] ?? "",
})) as unknown as ConfigSchema<PodJsonPathConfig>;

function externalSchema(context: ConfigContext): ConfigSchema<HttpJsonPathConfig> {
  return z.object({ ...common, endpoint: hpaUrlKey(context) }).transform((c, ctx) => ({
    extraction: extraction(c, ctx),
    requestTimeoutSeconds: c["request-timeout"],
    connectTimeoutSeconds: c["connect-timeout"],
    endpoint: c.endpoint,
  })) as unknown as ConfigSchema<HttpJsonPathConfig>;
}

/**
 * `json-path`: Pods metrics from each pod's JSON endpoint, External metrics from one endpoint
 * (legacy External type and metric name `http`).
 */
export const jsonPathDescriptor: CollectorDescriptor<PodJsonPathConfig | HttpJsonPathConfig> = {
  type: "json-path",
  aliases: ["http"],
  metricTypes: ["Pods", "External"],
  enabledBy: "nothing (always on)",
  schema(metricType: MetricType, context: ConfigContext) {
    return metricType === "Pods" ? podSchema : externalSchema(context);
  },
};
