/**
 * External metrics of type `zmon` (legacy metric name `zmon-check`): the result of a ZMON check
 * as stored in ZMON's KairosDB (`--zmon-kariosdb-endpoint`), queried with
 * `POST <endpoint>/api/v1/datapoints/query` for the metric `zmon.check.<check-id>`.
 *
 * Config keys (selector labels; annotations win, so `key` and `tag-<name>` may use wildcards that
 * labels cannot hold): `check-id` (integer, required), `key`, `tag-<name>`, `duration` (Go
 * duration, default 10m) and `aggregators` (comma list of avg, count, last, max, min, sum, diff;
 * default last). The query is the one kube-metrics-adapter builds: `start_relative` and each
 * aggregator's sampling are the duration in its largest whole unit, `limit` 10000, tags as
 * one-element lists, and a `group_by` on the tag `key` when a key is set.
 *
 * The value is the last data point of the first result, served with the point's own time. No data
 * point is an error (kube-metrics-adapter silently reported nothing).
 *
 * @module
 */
import { parseAggregator } from "../core/aggregators.ts";
import { parseDuration } from "../core/duration.ts";
import type { MetricPlan } from "../core/types.ts";
import { fetchCapped, parseJsonBody } from "./http_get.ts";
import { bodyExcerpt, oauthBackendFromFlags } from "./oauth_backend.ts";
import type { OAuthBackend, TokenSource } from "./oauth_backend.ts";
import type {
  CollectContext,
  Collector,
  CollectorFactory,
  CollectorFactoryOptions,
  CollectResult,
} from "./types.ts";

/** Timeout of one KairosDB query, seconds (the engine's collection timeout may be shorter). */
export const ZMON_QUERY_TIMEOUT_SECONDS = 10;

/** KairosDB's relative time and sampling: a count of a unit. */
export interface KairosSampling {
  value: number;
  unit: string;
}

/** The KairosDB query body, as kube-metrics-adapter sends it. */
export interface KairosQuery {
  start_relative: KairosSampling;
  metrics: {
    name: string;
    limit: number;
    tags: Record<string, string[]>;
    group_by: { name: string; tags: string[] }[];
    aggregators: { name: string; sampling: KairosSampling }[];
  }[];
}

const UNITS: readonly [string, number][] = [
  ["years", 365 * 86400],
  ["months", 30 * 86400],
  ["weeks", 7 * 86400],
  ["days", 86400],
  ["hours", 3600],
  ["minutes", 60],
  ["seconds", 1],
  ["milliseconds", 0.001],
];

/**
 * A duration (seconds) as KairosDB sampling: the largest unit the duration reaches, and the
 * duration rounded to that unit (half away from zero, as Go's `Duration.Round`).
 *
 * @example
 * ```ts
 * durationToSampling(600); // { value: 10, unit: "minutes" }
 * durationToSampling(90); // { value: 2, unit: "minutes" }
 * ```
 */
export function durationToSampling(seconds: number): KairosSampling {
  // Work in whole nanoseconds like Go, so float noise cannot flip a unit.
  const ns = Math.round(seconds * 1e9);
  for (const [unit, unitSeconds] of UNITS) {
    const unitNs = Math.round(unitSeconds * 1e9);
    if (Math.trunc(ns / unitNs) >= 1) {
      return { value: Math.floor(ns / unitNs + 0.5), unit };
    }
  }
  return { value: 0, unit: "milliseconds" };
}

/** What a ZMON plan asks for. */
export interface ZmonQueryConfig {
  checkId: number;
  key: string;
  tags: Record<string, string>;
  durationSeconds: number;
  aggregators: string[];
}

/** Read and check a plan's ZMON config; throws naming the metric and the bad value. */
export function parseZmonConfig(plan: MetricPlan): ZmonQueryConfig {
  const c = plan.config;
  const metric = plan.metricName;
  const rawId = c["check-id"];
  if (rawId === undefined || rawId === "") {
    throw new Error(`missing check-id for metric ${metric}`);
  }
  if (!/^\d+$/.test(rawId) || !Number.isSafeInteger(Number(rawId))) {
    throw new Error(`invalid check-id "${rawId}" for metric ${metric}: want an integer`);
  }
  let durationSeconds = 600;
  const rawDuration = c["duration"];
  if (rawDuration !== undefined && rawDuration !== "") {
    try {
      durationSeconds = parseDuration(rawDuration);
    } catch {
      throw new Error(`invalid duration "${rawDuration}" for metric ${metric}`);
    }
    if (durationSeconds <= 0) {
      throw new Error(`invalid duration "${rawDuration}" for metric ${metric}: want more than 0`);
    }
  }
  const aggregators = (c["aggregators"] ?? "last").split(",").map((a) => a.trim());
  for (const a of aggregators) {
    try {
      parseAggregator(a);
    } catch (e) {
      throw new Error(`${(e as Error).message} for metric ${metric}`);
    }
  }
  const tags: Record<string, string> = {};
  for (const k of Object.keys(c).sort()) {
    if (k.startsWith("tag-") && k.length > 4) tags[k.slice(4)] = c[k];
  }
  return {
    checkId: Number(rawId),
    key: c["key"] ?? "",
    tags,
    durationSeconds,
    aggregators,
  };
}

/** The KairosDB query for a ZMON plan (what kube-metrics-adapter's ZMON client sends). */
export function buildKairosQuery(config: ZmonQueryConfig): KairosQuery {
  const sampling = durationToSampling(config.durationSeconds);
  const tags: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(config.tags)) tags[k] = [v];
  const groupBy: { name: string; tags: string[] }[] = [];
  if (config.key !== "") {
    tags["key"] = [config.key];
    groupBy.push({ name: "tag", tags: ["key"] });
  }
  const sortedTags: Record<string, string[]> = {};
  for (const k of Object.keys(tags).sort()) sortedTags[k] = tags[k];
  return {
    start_relative: sampling,
    metrics: [{
      name: `zmon.check.${config.checkId}`,
      limit: 10000,
      tags: sortedTags,
      group_by: groupBy,
      aggregators: config.aggregators.map((name) => ({ name, sampling: { ...sampling } })),
    }],
  };
}

/** One KairosDB data point: time (ms since the epoch) and value. */
export interface DataPoint {
  timestamp: number;
  value: number;
}

/**
 * The data points of the first result of the first query of a KairosDB response body. Throws on
 * malformed JSON or points that are not `[time, number]`.
 */
export function parseKairosResponse(body: string, url: string): DataPoint[] {
  const doc = parseJsonBody(body, url);
  const bad = (what: string): Error =>
    new Error(`unexpected KairosDB response from ${url}: ${what}`);
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw bad("not an object");
  const queries = (doc as { queries?: unknown }).queries;
  if (!Array.isArray(queries)) throw bad("no queries list");
  if (queries.length === 0) return [];
  const results = (queries[0] as { results?: unknown })?.results;
  if (!Array.isArray(results)) throw bad("queries[0] has no results list");
  if (results.length === 0) return [];
  const values = (results[0] as { values?: unknown })?.values;
  if (!Array.isArray(values)) throw bad("queries[0].results[0] has no values list");
  return values.map((p, i) => {
    if (
      !Array.isArray(p) || p.length !== 2 || typeof p[0] !== "number" ||
      typeof p[1] !== "number" || !Number.isFinite(p[0]) || !Number.isFinite(p[1])
    ) {
      throw bad(
        `values[${i}] is ${bodyExcerpt(JSON.stringify(p) ?? String(p), 80)}, want [time, number]`,
      );
    }
    return { timestamp: p[0], value: p[1] };
  });
}

class ZmonCollector implements Collector {
  readonly queryKey: string;
  readonly #url: string;
  readonly #body: string;
  readonly #checkId: number;
  readonly #tokens: TokenSource;
  readonly #maxBytes: number;
  readonly #metric: string;

  constructor(
    options: OAuthBackend & { config: ZmonQueryConfig },
    metric: string,
  ) {
    this.#url = `${options.endpoint.replace(/\/+$/, "")}/api/v1/datapoints/query`;
    this.#body = JSON.stringify(buildKairosQuery(options.config));
    this.#checkId = options.config.checkId;
    this.#tokens = options.tokens;
    this.#maxBytes = options.maxBytes;
    this.#metric = metric;
    this.queryKey = `zmon/External|${this.#url}|${this.#body}`;
  }

  async collect(ctx: CollectContext): Promise<CollectResult> {
    const token = await this.#tokens.token();
    const res = await fetchCapped(this.#url, {
      fetch: ctx.fetch,
      signal: ctx.signal,
      timeoutSeconds: ZMON_QUERY_TIMEOUT_SECONDS,
      maxBytes: this.#maxBytes,
      method: "POST",
      body: this.#body,
      headers: {
        "content-type": "application/json",
        accept: "application/json",
        authorization: `Bearer ${token}`,
        "x-attribution": `hpa-metrics-adapter/${this.#checkId}`,
      },
      // fetchCapped never follows a redirect (the token would go along).
    });
    if (res.status !== 200) {
      throw new Error(
        `unsuccessful response "${res.status}" from ${this.#url}: ${bodyExcerpt(res.text)}`,
      );
    }
    const points = parseKairosResponse(res.text, this.#url);
    if (points.length === 0) {
      throw new Error(
        `no data points for zmon.check.${this.#checkId} of metric ${this.#metric} from ${this.#url}`,
      );
    }
    const last = points[points.length - 1];
    return { samples: [{ value: last.value, timestamp: last.timestamp }] };
  }
}

/**
 * External `zmon` (legacy `zmon-check`). Flags: `zmon-kariosdb-endpoint` (required), the token
 * (`token`, else `<credentials-dir>/<zmon-token-name>-token-secret`), `max-response-bytes`.
 */
export const zmonFactory: CollectorFactory = {
  type: "zmon",
  metricTypes: ["External"],
  create(options: CollectorFactoryOptions): Collector {
    const { plan, flags } = options;
    const config = parseZmonConfig(plan);
    const backend = oauthBackendFromFlags(flags, {
      type: "zmon",
      endpointFlag: "zmon-kariosdb-endpoint",
      metricName: plan.metricName,
    });
    return new ZmonCollector({ ...backend, config }, plan.metricName);
  },
};
