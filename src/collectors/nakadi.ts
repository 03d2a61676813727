/**
 * External metrics of type `nakadi`: the consumer lag or the unconsumed events of Nakadi
 * subscriptions (`--nakadi-endpoint`).
 *
 * Config keys: `metric-type` (`consumer-lag-seconds`: the maximum over partitions, event types and
 * subscriptions; `unconsumed-events`: the sum), and either `subscription-id` or all of
 * `owning-application`, `event-types` (comma list) and `consumer-group`, which find the
 * subscriptions with `GET /subscriptions?owning_application=..&event_type=..&consumer_group=..`,
 * following `_links.next` page by page. Stats come from
 * `GET /subscriptions/<id>/stats?show_time_lag=true`.
 *
 * Each request is tried up to 3 times: 5xx answers and network errors are retried after 100 ms,
 * then 200 ms; a 429 waits its `Retry-After` (seconds or an HTTP date, at most 30 s) instead;
 * other 4xx answers fail at once. Every wait ends when the collection is aborted.
 *
 * Differences from kube-metrics-adapter: a filter that matches no subscription is an error (it
 * reported 0), an `event-types` without a name (only commas) is a config error, and a page link
 * to another host is refused. The config is read with the schema of src/core/kube_metrics_adapter/configs/nakadi.ts.
 *
 * @module
 */
import {
  type NakadiConfig,
  nakadiDescriptor,
  type NakadiMetricType,
  type SubscriptionFilter,
} from "../core/kube_metrics_adapter/configs/nakadi.ts";
import {
  type CappedResponse,
  fetchCapped,
  parseJsonBody,
  RequestAbortedError,
  ResponseTooLargeError,
} from "./http_get.ts";
import { bodyExcerpt, oauthBackend, sleep } from "./oauth_backend.ts";
import type { OAuthBackend, OAuthBackendOptions, TokenSource } from "./oauth_backend.ts";
import type {
  CollectContext,
  Collector,
  CollectorFactory,
  CollectorFactoryOptions,
  CollectResult,
} from "./types.ts";
import { planConfig } from "./types.ts";

export type { NakadiConfig, NakadiMetricType, SubscriptionFilter };

/** Timeout of one Nakadi request, seconds. */
export const NAKADI_REQUEST_TIMEOUT_SECONDS = 10;
/** Tries per request (the first and two retries). */
export const NAKADI_MAX_TRIES = 3;
/** First back-off, ms; doubled per retry. */
export const NAKADI_INITIAL_BACKOFF_MS = 100;
/** Longest wait for a 429's Retry-After, ms. */
export const NAKADI_MAX_RETRY_AFTER_MS = 30_000;
/** Most subscription pages followed. */
export const NAKADI_MAX_PAGES = 100;

/** The first page of the subscriptions matching a filter. */
export function subscriptionsUrl(
  endpoint: string,
  filter: { owningApplication: string; eventTypes: string[]; consumerGroup: string },
): string {
  const q = new URLSearchParams();
  q.append("owning_application", filter.owningApplication);
  for (const e of filter.eventTypes) q.append("event_type", e);
  q.append("consumer_group", filter.consumerGroup);
  return `${endpoint}/subscriptions?${q.toString()}`;
}

function parseRetryAfter(value: string, now: number): number | null {
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, at - now) : null;
}

interface Page {
  items: string[];
  next: string | null;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function parsePage(doc: unknown, url: string): Page {
  const bad = (what: string): Error =>
    new Error(`unexpected subscriptions response from ${url}: ${what}`);
  if (!isObject(doc) || !Array.isArray(doc.items)) throw bad("no items list");
  const items = doc.items.map((it, i) => {
    if (!isObject(it) || typeof it.id !== "string" || it.id === "") {
      throw bad(`items[${i}] has no id`);
    }
    return it.id;
  });
  const links = doc._links;
  let next: string | null = null;
  if (isObject(links) && isObject(links.next)) {
    const href = links.next.href;
    if (typeof href === "string" && href !== "") next = href;
  }
  return { items, next };
}

interface PartitionStats {
  unconsumed: number;
  lag: number;
}

function parseStats(doc: unknown, url: string): PartitionStats[] {
  const bad = (what: string): Error => new Error(`unexpected stats response from ${url}: ${what}`);
  if (!isObject(doc) || !Array.isArray(doc.items)) throw bad("no items list");
  if (doc.items.length === 0) throw bad("no event types");
  const out: PartitionStats[] = [];
  doc.items.forEach((et, i) => {
    if (!isObject(et) || !Array.isArray(et.partitions)) {
      throw bad(`items[${i}] has no partitions list`);
    }
    et.partitions.forEach((p, j) => {
      if (!isObject(p)) throw bad(`items[${i}].partitions[${j}] is not an object`);
      const num = (k: string): number => {
        const v = p[k];
        if (v === undefined || v === null) return 0;
        if (typeof v !== "number" || !Number.isFinite(v)) {
          throw bad(`items[${i}].partitions[${j}].${k} is ${JSON.stringify(v)}, want a number`);
        }
        return v;
      };
      out.push({ unconsumed: num("unconsumed_events"), lag: num("consumer_lag_seconds") });
    });
  });
  return out;
}

class NakadiCollector implements Collector {
  readonly queryKey: string;
  readonly #endpoint: string;
  readonly #config: NakadiConfig;
  readonly #tokens: TokenSource;
  readonly #maxBytes: number;

  constructor(options: OAuthBackend & { config: NakadiConfig }) {
    this.#endpoint = options.endpoint.replace(/\/+$/, "");
    this.#config = options.config;
    this.#tokens = options.tokens;
    this.#maxBytes = options.maxBytes;
    this.queryKey = `nakadi/External|${this.#endpoint}|${this.#config.metricType}|${
      JSON.stringify(this.#config.filter)
    }`;
  }

  /** GET with retries; returns the parsed JSON of a 200 answer. */
  async #get(url: string, ctx: CollectContext): Promise<unknown> {
    let lastError = new Error(`no request to ${url}`);
    for (let attempt = 1; attempt <= NAKADI_MAX_TRIES; attempt++) {
      let waitMs = NAKADI_INITIAL_BACKOFF_MS * 2 ** (attempt - 1);
      const token = await this.#tokens.token();
      let res: CappedResponse | null = null;
      try {
        res = await fetchCapped(url, {
          fetch: ctx.fetch,
          signal: ctx.signal,
          timeoutSeconds: NAKADI_REQUEST_TIMEOUT_SECONDS,
          maxBytes: this.#maxBytes,
          // fetchCapped never follows a redirect (the token would go along).
          headers: { accept: "application/json", authorization: `Bearer ${token}` },
        });
      } catch (e) {
        // An abort ends the collection; an oversized answer will not shrink on a retry.
        if (e instanceof RequestAbortedError || e instanceof ResponseTooLargeError) throw e;
        lastError = e as Error;
      }
      if (res !== null) {
        if (res.status === 200) return parseJsonBody(res.text, url);
        const what = `unsuccessful response "${res.status}" from ${url}: ${bodyExcerpt(res.text)}`;
        if (res.status === 429) {
          const ra = res.headers.get("retry-after");
          if (ra !== null) {
            const ms = parseRetryAfter(ra, ctx.now());
            if (ms === null) throw new Error(`${what} (invalid Retry-After "${ra}")`);
            waitMs = Math.min(ms, NAKADI_MAX_RETRY_AFTER_MS);
          }
        } else if (res.status >= 400 && res.status < 500) {
          throw new Error(what);
        }
        lastError = new Error(what);
      }
      if (attempt < NAKADI_MAX_TRIES) await sleep(waitMs, ctx.signal, `request to ${url}`);
    }
    throw new Error(`${lastError.message} (after ${NAKADI_MAX_TRIES} tries)`);
  }

  async #subscriptionIds(ctx: CollectContext): Promise<string[]> {
    const filter = this.#config.filter;
    if ("subscriptionId" in filter) return [filter.subscriptionId];
    const origin = new URL(this.#endpoint).origin;
    let url: string | null = subscriptionsUrl(this.#endpoint, filter);
    const seen = new Set<string>();
    const ids: string[] = [];
    for (let page = 0; url !== null; page++) {
      if (page >= NAKADI_MAX_PAGES) {
        throw new Error(
          `more than ${NAKADI_MAX_PAGES} pages of subscriptions from ${this.#endpoint}`,
        );
      }
      if (seen.has(url)) throw new Error(`subscriptions page ${url} links to itself`);
      seen.add(url);
      const p = parsePage(await this.#get(url, ctx), url);
      for (const id of p.items) if (!ids.includes(id)) ids.push(id);
      if (p.next === null) break;
      // Nakadi sends a path (`/subscriptions?offset=..`); it is relative to the endpoint.
      const next: string = /^[a-z][a-z0-9+.-]*:/i.test(p.next)
        ? p.next
        : `${this.#endpoint}${p.next.startsWith("/") ? "" : "/"}${p.next}`;
      if (new URL(next).origin !== origin) {
        throw new Error(`subscriptions page link "${p.next}" leaves ${origin}`);
      }
      url = next;
    }
    if (ids.length === 0) {
      throw new Error(
        `no subscriptions match owning_application=${filter.owningApplication} event_type=${
          filter.eventTypes.join(",")
        } consumer_group=${filter.consumerGroup} at ${this.#endpoint}`,
      );
    }
    return ids;
  }

  async collect(ctx: CollectContext): Promise<CollectResult> {
    const ids = await this.#subscriptionIds(ctx);
    let max = 0;
    let total = 0;
    for (const id of ids) {
      const url = `${this.#endpoint}/subscriptions/${
        encodeURIComponent(id)
      }/stats?show_time_lag=true`;
      for (const p of parseStats(await this.#get(url, ctx), url)) {
        if (p.lag > max) max = p.lag;
        total += p.unconsumed;
      }
    }
    const value = this.#config.metricType === "consumer-lag-seconds" ? max : total;
    return { samples: [{ value, timestamp: ctx.now() }] };
  }
}

/** The token name of Nakadi when none is given: the file is `nakadi-token-secret`. */
export const DEFAULT_NAKADI_TOKEN_NAME = "nakadi";

/** How the Nakadi collector reaches Nakadi; the token name defaults to `nakadi`. */
export interface NakadiOptions extends OAuthBackendOptions {}

/**
 * External `nakadi` against the Nakadi API at `options.endpoint`, with a static token or the
 * one in `<credentialsDir>/<tokenName>-token-secret`.
 *
 * @example
 * ```ts
 * const factory = createNakadiFactory({ endpoint: "https://nakadi.example.org", token: "t" });
 * factory.create({ plan }); // throws naming the key when the config is unusable
 * ```
 */
export function createNakadiFactory(options: NakadiOptions): CollectorFactory {
  return {
    type: "nakadi",
    metricTypes: ["External"],
    create({ plan }: CollectorFactoryOptions): Collector {
      const config = planConfig(nakadiDescriptor, plan, {});
      const backend = oauthBackend(options, {
        type: "nakadi",
        defaultTokenName: DEFAULT_NAKADI_TOKEN_NAME,
        endpointSetting: "--nakadi-endpoint",
        metricName: plan.metricName,
      });
      return new NakadiCollector({ ...backend, config });
    },
  };
}
