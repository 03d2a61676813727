/**
 * External metrics of type `json-path` (and the legacy type `http`): one JSON document from
 * `endpoint`, one value at `json-key` (or `json-eval`), served with the metric selector's
 * matchLabels. Link-local targets (cloud metadata endpoints) are refused unless
 * `--allow-link-local-targets`.
 */
import type { JsonExtractionOptions } from "../core/json_extract.ts";
import type { MetricPlan } from "../core/types.ts";
import {
  extractJson,
  httpGetText,
  jsonExtractionConfig,
  maxResponseBytes,
  requestTimeoutConfig,
} from "./http_get.ts";
import type {
  CollectContext,
  Collector,
  CollectorFactory,
  CollectorFactoryOptions,
  CollectResult,
} from "./types.ts";

function ipv4Octets(host: string): number[] | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (!m) return null;
  const o = m.slice(1).map(Number);
  return o.every((n) => n <= 255) ? o : null;
}

/**
 * Whether a URL host (as `new URL().hostname` gives it: IPv6 in brackets) is a link-local
 * address: 169.254.0.0/16, fe80::/10, or an IPv4-mapped IPv6 form of the former.
 */
export function isLinkLocalHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  const v4 = ipv4Octets(host);
  if (v4) return v4[0] === 169 && v4[1] === 254;
  if (!host.includes(":")) return false;
  // IPv4-mapped (::ffff:a.b.c.d, normalised by URL to ::ffff:xxxx:xxxx).
  const mapped = /^::ffff:(?:([0-9a-f]{1,4}):([0-9a-f]{1,4})|(\d+\.\d+\.\d+\.\d+))$/.exec(host);
  if (mapped) {
    if (mapped[3]) return isLinkLocalHost(mapped[3]);
    return parseInt(mapped[1], 16) === 0xa9fe;
  }
  const first = host.split(":")[0];
  if (first === "") return false;
  const word = parseInt(first, 16);
  return (word & 0xffc0) === 0xfe80;
}

interface HttpJsonPathConfig {
  endpoint: string;
  extraction: JsonExtractionOptions;
  timeoutSeconds: number;
}

function parseConfig(plan: MetricPlan, flags: Record<string, unknown>): HttpJsonPathConfig {
  const c = plan.config;
  const metric = plan.metricName;
  const endpoint = c["endpoint"];
  if (endpoint === undefined || endpoint === "") {
    throw new Error(`missing config "endpoint" for metric ${metric}`);
  }
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new Error(`invalid endpoint "${endpoint}" for metric ${metric}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(`invalid endpoint "${endpoint}" for metric ${metric} (want http or https)`);
  }
  if (isLinkLocalHost(url.hostname) && flags["allow-link-local-targets"] !== true) {
    throw new Error(
      `endpoint "${endpoint}" of metric ${metric} is a link-local address (allow with --allow-link-local-targets)`,
    );
  }
  const extraction = jsonExtractionConfig(c, metric);
  return { endpoint: url.href, extraction, timeoutSeconds: requestTimeoutConfig(c, metric) };
}

class HttpJsonPathCollector implements Collector {
  readonly queryKey: string;
  readonly #config: HttpJsonPathConfig;
  readonly #maxBytes: number;

  constructor(config: HttpJsonPathConfig, flags: Record<string, unknown>) {
    this.#config = config;
    this.#maxBytes = maxResponseBytes(flags);
    // The endpoint is global: equal queries share one request whatever HPA or namespace asks
    // (other selector labels only change how the value is served).
    this.queryKey = `json-path/External|${
      JSON.stringify([
        config.endpoint,
        config.extraction.jsonKey ?? null,
        config.extraction.jsonEval ?? null,
        config.extraction.aggregator ?? null,
      ])
    }|${config.timeoutSeconds}`;
  }

  async collect(ctx: CollectContext): Promise<CollectResult> {
    const cfg = this.#config;
    const body = await httpGetText(cfg.endpoint, {
      fetch: ctx.fetch,
      signal: ctx.signal,
      timeoutSeconds: cfg.timeoutSeconds,
      maxBytes: this.#maxBytes,
    });
    const value = extractJson(body, cfg.endpoint, cfg.extraction);
    return { samples: [{ value, timestamp: ctx.now() }] };
  }
}

/**
 * External `json-path` (the legacy type `http` is planned as `json-path`). Config keys
 * (selector labels or annotations): `endpoint` (required), `json-key` or `json-eval`,
 * `aggregator`, `request-timeout` and `connect-timeout` (15s).
 */
export const httpJsonPathFactory: CollectorFactory = {
  type: "json-path",
  metricTypes: ["External"],
  create(options: CollectorFactoryOptions): Collector {
    return new HttpJsonPathCollector(parseConfig(options.plan, options.flags), options.flags);
  },
};
