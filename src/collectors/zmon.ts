/**
 * External metrics of type `zmon` (legacy metric name `zmon-check`): the result of a ZMON check
 * as stored in ZMON's KairosDB (`--zmon-kariosdb-endpoint`), queried with
 * `POST <endpoint>/api/v1/datapoints/query` for the metric `zmon.check.<check-id>`.
 *
 * Config keys (selector labels, read with the schema of src/core/kube_metrics_adapter/configs/zmon.ts; annotations
 * win, so `key` and `tag-<name>` may use wildcards that labels cannot hold): `check-id`
 * (integer, required), `key`, `tag-<name>`, `duration` (Go duration, default 10m) and
 * `aggregators` (comma list of avg, count, last, max, min, sum, diff; default last). The query
 * is the one kube-metrics-adapter builds: `start_relative` and each aggregator's sampling are
 * the duration in its largest whole unit, `limit` 10000, tags as one-element lists, and a
 * `group_by` on the tag `key` when a key is set.
 *
 * The value is the last data point of the first result, served with the point's own time. No data
 * point is an error (kube-metrics-adapter silently reported nothing).
 *
 * @module
 */
import { zmonDescriptor, type ZmonQueryConfig } from "../core/kube_metrics_adapter/configs/zmon.ts";
import { fetchCapped, parseJsonBody } from "./http_get.ts";
import { bodyExcerpt, oauthBackend } from "./oauth_backend.ts";
import type { OAuthBackend, OAuthBackendOptions, TokenSource } from "./oauth_backend.ts";
import type {
  CollectContext,
  Collector,
  CollectorFactory,
  CollectorFactoryOptions,
  CollectResult,
} from "./types.ts";
import { planConfig } from "./types.ts";

export type { ZmonQueryConfig };

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

/** The token name of ZMON when none is given: the file is `zmon-token-secret`. */
export const DEFAULT_ZMON_TOKEN_NAME = "zmon";

/** How the ZMON collector reaches KairosDB; the token name defaults to `zmon`. */
export interface ZmonOptions extends OAuthBackendOptions {}

/**
 * External `zmon` (legacy `zmon-check`) against the KairosDB at `options.endpoint`, with a
 * static token or the one in `<credentialsDir>/<tokenName>-token-secret`.
 *
 * @example
 * ```ts
 * const factory = createZmonFactory({ endpoint: "http://kairosdb:8083", token: "t" });
 * factory.create({ plan }).queryKey; // "zmon/External|http://kairosdb:8083/..."
 * ```
 */
export function createZmonFactory(options: ZmonOptions): CollectorFactory {
  return {
    type: "zmon",
    metricTypes: ["External"],
    create({ plan }: CollectorFactoryOptions): Collector {
      const config = planConfig(zmonDescriptor, plan, {});
      const backend = oauthBackend(options, {
        type: "zmon",
        defaultTokenName: DEFAULT_ZMON_TOKEN_NAME,
        endpointSetting: "--zmon-kariosdb-endpoint",
        metricName: plan.metricName,
      });
      return new ZmonCollector({ ...backend, config }, plan.metricName);
    },
  };
}
