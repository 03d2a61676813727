/**
 * The `requests-per-second` External collector: requests per second of a set of hostnames from
 * a per-host counter in Prometheus (`ExternalRpsOptions.metricName`, Skipper's by default),
 * times a weight, with the PromQL kube-metrics-adapter builds:
 *
 *     scalar(sum(rate(<metric>{host=~"<a_org|b_org>"}[1m])) * <weight>)
 *
 * Config keys (see src/core/kube_metrics_adapter/configs/requests_per_second.ts): `hostnames` (comma-separated DNS
 * names, required) and `weight` (percent of the traffic, default 100). Hostnames are checked as
 * DNS names (the original accepted any run of letters, digits, dots and dashes), and a
 * negative weight is refused.
 */
import {
  isDnsName,
  requestsPerSecondDescriptor,
} from "../core/kube_metrics_adapter/configs/requests_per_second.ts";
import type { MetricPlan } from "../core/types.ts";
import {
  collectPrometheus,
  defaultPrometheusServer,
  type PrometheusBackends,
  prometheusBackends,
  type PrometheusOptions,
} from "./prometheus.ts";
import type { PrometheusClient } from "./prometheus_client.ts";
import { formatWeight, SKIPPER_RPS_SERIES } from "./skipper.ts";
import type {
  CollectContext,
  Collector,
  CollectorFactory,
  CollectorFactoryOptions,
  CollectResult,
} from "./types.ts";
import { BackendNotConfiguredError, planConfig } from "./types.ts";

/** Re-exported from the config's schema, where hostnames are checked. */
export { isDnsName };

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/** Whether `name` is a Prometheus metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`). */
export function isPrometheusMetricName(name: string): boolean {
  return METRIC_NAME.test(name);
}

/** Options of {@linkcode externalRpsQuery}. */
export interface ExternalRpsQueryOptions {
  /** The per-host counter (`ExternalRpsOptions.metricName`). */
  metricName: string;
  hostnames: readonly string[];
  /** Share of the traffic, a fraction (`weight` percent / 100). */
  weight: number;
}

/**
 * The PromQL of the requests per second of `hostnames` times `weight`.
 *
 * @example
 * ```ts
 * externalRpsQuery({
 *   metricName: "skipper_serve_host_duration_seconds_count",
 *   hostnames: ["example.org", "www.example.org"],
 *   weight: 0.5,
 * });
 * // scalar(sum(rate(skipper_serve_host_duration_seconds_count{host=~"example_org|www_example_org"}[1m])) * 0.5000)
 * ```
 */
export function externalRpsQuery(options: ExternalRpsQueryOptions): string {
  const hosts = options.hostnames.join("|").replaceAll(".", "_");
  return `scalar(sum(rate(${options.metricName}{host=~"${hosts}"}[1m])) * ${
    formatWeight(options.weight)
  })`;
}

/** What the operator sets for External requests-per-second metrics. */
export interface ExternalRpsOptions {
  /** Serve them (default false). */
  enabled?: boolean;
  /** The per-host request counter (default {@linkcode EXTERNAL_RPS_DEFAULTS}: Skipper's). */
  metricName?: string;
  /** The Prometheus server the queries go to (its default server). */
  prometheus?: PrometheusOptions;
}

/** The defaults of {@linkcode ExternalRpsOptions}. */
export const EXTERNAL_RPS_DEFAULTS: { readonly enabled: boolean; readonly metricName: string } = {
  enabled: false,
  metricName: SKIPPER_RPS_SERIES,
};

class ExternalRpsCollector implements Collector {
  readonly queryKey: string;
  readonly #query: string;
  readonly #metricName: string;
  readonly #client: PrometheusClient;
  readonly #backends: PrometheusBackends;

  constructor(
    plan: MetricPlan,
    query: string,
    client: PrometheusClient,
    backends: PrometheusBackends,
  ) {
    this.#query = query;
    this.#metricName = plan.metricName;
    this.#client = client;
    this.#backends = backends;
    this.queryKey = `requests-per-second|${JSON.stringify([client.url, query])}`;
  }

  /** The engine's deadline is at least the query timeout. */
  timeoutMs(): number {
    return this.#backends.timeoutSeconds * 1000;
  }

  async collect(ctx: CollectContext): Promise<CollectResult> {
    return await collectPrometheus(this.#client, this.#query, {
      backends: this.#backends,
      ctx,
      metricName: this.#metricName,
    });
  }
}

/**
 * External `requests-per-second` (when `enabled`), queried on the default server of
 * `options.prometheus`. Config keys (read by {@linkcode requestsPerSecondDescriptor}'s
 * schema): `hostnames` (required) and `weight`. Throws when enabled with a `metricName` that
 * is not a Prometheus metric name, or when a server URL of the Prometheus options is not an
 * http(s) URL.
 *
 * @example
 * ```ts
 * const factory = createExternalRpsFactory({
 *   enabled: true,
 *   prometheus: { server: { url: "http://prometheus:9090" } },
 * });
 * factory.type; // "requests-per-second"
 * ```
 */
export function createExternalRpsFactory(rps: ExternalRpsOptions = {}): CollectorFactory {
  const backends = prometheusBackends(rps.prometheus ?? {});
  const enabled = rps.enabled ?? EXTERNAL_RPS_DEFAULTS.enabled;
  const metricName = rps.metricName ?? EXTERNAL_RPS_DEFAULTS.metricName;
  if (enabled && !isPrometheusMetricName(metricName)) {
    throw new Error(
      `invalid requests-per-second metric name "${metricName}": want a Prometheus metric name`,
    );
  }
  return {
    type: "requests-per-second",
    metricTypes: ["External"],
    create(options: CollectorFactoryOptions): Collector {
      const { plan } = options;
      const { hostnames, weight } = planConfig(requestsPerSecondDescriptor, plan, {
        allowLinkLocalTargets: backends.allowLinkLocal,
      });
      if (!enabled) {
        throw new BackendNotConfiguredError(
          `requests-per-second metrics are not enabled (start with --external-rps-metrics)`,
        );
      }
      const client = defaultPrometheusServer(backends, {
        type: "requests-per-second",
        metricName: plan.metricName,
      });
      const query = externalRpsQuery({ metricName, hostnames, weight });
      return new ExternalRpsCollector(plan, query, client, backends);
    },
  };
}
