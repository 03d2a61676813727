/**
 * External metrics of type `json-path` (and the legacy type `http`): one JSON document from
 * `endpoint`, one value at `json-key` (or `json-eval`), served with the metric selector's
 * matchLabels. Link-local targets (cloud metadata endpoints) are refused unless
 * `--allow-link-local-targets`: a literal address when the plan is made, a name when it
 * resolves to one right before each request; redirects are never followed.
 */
import {
  type HttpJsonPathConfig,
  jsonPathDescriptor,
} from "../core/kube_metrics_adapter/configs/json_path.ts";
import {
  DEFAULT_MAX_RESPONSE_BYTES,
  extractJson,
  httpGetText,
  isLinkLocalHost,
  type LookupContext,
} from "./http_get.ts";
import type {
  CollectContext,
  Collector,
  CollectorFactory,
  CollectorFactoryOptions,
  CollectResult,
} from "./types.ts";
import { planConfig } from "./types.ts";

/** Re-exported from http_get.ts, where every collector's link-local check lives. */
export { isLinkLocalHost };

class HttpJsonPathCollector implements Collector {
  readonly queryKey: string;
  readonly #config: HttpJsonPathConfig;
  readonly #maxBytes: number;
  readonly #allowLinkLocal: boolean;

  constructor(config: HttpJsonPathConfig, options: HttpJsonPathOptions) {
    this.#config = config;
    this.#maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.#allowLinkLocal = options.allowLinkLocalTargets === true;
    // The endpoint is global: equal queries share one request whatever HPA or namespace asks
    // (other selector labels only change how the value is served).
    this.queryKey = `json-path/External|${
      JSON.stringify([
        config.endpoint,
        config.extraction.jsonKey ?? null,
        config.extraction.jsonEval ?? null,
        config.extraction.aggregator ?? null,
      ])
    }|${config.requestTimeoutSeconds}`;
  }

  /** The engine's deadline is at least the `request-timeout` the HPA asked for. */
  timeoutMs(): number {
    return this.#config.requestTimeoutSeconds * 1000;
  }

  async collect(ctx: CollectContext & LookupContext): Promise<CollectResult> {
    const cfg = this.#config;
    // The endpoint is the HPA author's choice: a name may resolve to a metadata service.
    const body = await httpGetText(cfg.endpoint, {
      fetch: ctx.fetch,
      signal: ctx.signal,
      timeoutSeconds: cfg.requestTimeoutSeconds,
      maxBytes: this.#maxBytes,
      linkLocal: { allow: this.#allowLinkLocal, lookup: ctx.lookup },
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
export function createHttpJsonPathFactory(
  collectorOptions: HttpJsonPathOptions = {},
): CollectorFactory {
  return {
    type: "json-path",
    metricTypes: ["External"],
    create(options: CollectorFactoryOptions): Collector {
      const config = planConfig(jsonPathDescriptor, options.plan, {
        allowLinkLocalTargets: collectorOptions.allowLinkLocalTargets,
      }) as HttpJsonPathConfig;
      return new HttpJsonPathCollector(config, collectorOptions);
    },
  };
}

/** External `json-path` with the default options. */
export const httpJsonPathFactory: CollectorFactory = createHttpJsonPathFactory();

/** What the operator sets for External json-path collections. */
export interface HttpJsonPathOptions {
  /** Largest response read (default {@linkcode DEFAULT_MAX_RESPONSE_BYTES}). */
  maxResponseBytes?: number;
  /** Endpoints may be link-local addresses (default false). */
  allowLinkLocalTargets?: boolean;
}
