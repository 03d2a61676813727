/**
 * External metrics of type `json-path` (and the legacy type `http`): one JSON document from
 * `endpoint`, one value at `json-key` (or `json-eval`), served with the metric selector's
 * matchLabels. Link-local targets (cloud metadata endpoints) are refused unless
 * `--allow-link-local-targets`: a literal address when the plan is made, a name when it
 * resolves to one right before each request; redirects are never followed.
 */
import type { JsonExtractionOptions } from "../core/json_extract.ts";
import type { MetricPlan } from "../core/types.ts";
import {
  extractJson,
  httpGetText,
  isLinkLocalHost,
  jsonExtractionConfig,
  type LookupContext,
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

/** Re-exported from http_get.ts, where every collector's link-local check lives. */
export { isLinkLocalHost };

interface HttpJsonPathConfig {
  endpoint: string;
  extraction: JsonExtractionOptions;
  timeoutSeconds: number;
  allowLinkLocal: boolean;
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
  return {
    endpoint: url.href,
    extraction,
    timeoutSeconds: requestTimeoutConfig(c, metric),
    allowLinkLocal: flags["allow-link-local-targets"] === true,
  };
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

  /** The engine's deadline is at least the `request-timeout` the HPA asked for. */
  timeoutMs(): number {
    return this.#config.timeoutSeconds * 1000;
  }

  async collect(ctx: CollectContext & LookupContext): Promise<CollectResult> {
    const cfg = this.#config;
    // The endpoint is the HPA author's choice: a name may resolve to a metadata service.
    const body = await httpGetText(cfg.endpoint, {
      fetch: ctx.fetch,
      signal: ctx.signal,
      timeoutSeconds: cfg.timeoutSeconds,
      maxBytes: this.#maxBytes,
      linkLocal: { allow: cfg.allowLinkLocal, lookup: ctx.lookup },
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
