/**
 * The `requests-per-second` External collector (`--external-rps-metrics`): requests per second
 * of a set of hostnames from a per-host counter in Prometheus (`--external-rps-metric-name`,
 * Skipper's by default), times a weight, with the PromQL kube-metrics-adapter builds:
 *
 *     scalar(sum(rate(<metric>{host=~"<a_org|b_org>"}[1m])) * <weight>)
 *
 * Config keys: `hostnames` (comma-separated DNS names, required) and `weight` (percent of the
 * traffic, default 100). Hostnames are checked as DNS names (the original accepted any run of
 * letters, digits, dots and dashes), and a negative weight is refused.
 */
import type { MetricPlan } from "../core/types.ts";
import {
  collectPrometheus,
  defaultPrometheusServer,
  type PrometheusBackends,
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
import { BackendNotConfiguredError } from "./types.ts";

const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i;
const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** Whether `host` is a DNS name: dot-separated labels of letters, digits and inner dashes. */
export function isDnsName(host: string): boolean {
  if (host.length === 0 || host.length > 253) return false;
  return host.split(".").every((label) => DNS_LABEL.test(label));
}

/** Options of {@linkcode externalRpsQuery}. */
export interface ExternalRpsQueryOptions {
  /** The per-host counter (`--external-rps-metric-name`). */
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

/** Parsed config of one plan. */
export interface ExternalRpsConfig {
  hostnames: string[];
  /** A fraction: `weight` percent / 100 (1 by default). */
  weight: number;
}

/**
 * Read `hostnames` and `weight` from a plan's config. Throws naming the metric and the bad
 * value.
 */
export function parseExternalRpsConfig(plan: MetricPlan): ExternalRpsConfig {
  const metric = plan.metricName;
  const raw = plan.config.hostnames;
  if (raw === undefined || raw === "") {
    throw new Error(`missing config "hostnames" for metric ${metric}`);
  }
  const hostnames = raw.split(",");
  for (const h of hostnames) {
    if (!isDnsName(h)) {
      throw new Error(`invalid hostname "${h}" for metric ${metric}: want a DNS name`);
    }
  }
  let weight = 1;
  const w = plan.config.weight;
  if (w !== undefined) {
    const n = Number(w);
    if (!DECIMAL.test(w) || !Number.isFinite(n) || n < 0) {
      throw new Error(`invalid weight "${w}" for metric ${metric}: want a percentage from 0`);
    }
    weight = n / 100;
  }
  return { hostnames, weight };
}

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

  /** The engine's deadline is at least `--prometheus-query-timeout`. */
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
 * External `requests-per-second` (`--external-rps-metrics`), queried on `--prometheus-server`.
 */
export const externalRpsFactory: CollectorFactory = {
  type: "requests-per-second",
  metricTypes: ["External"],
  create(options: CollectorFactoryOptions): Collector {
    const { plan, flags } = options;
    const { hostnames, weight } = parseExternalRpsConfig(plan);
    if (flags["external-rps-metrics"] !== true) {
      throw new BackendNotConfiguredError(
        `requests-per-second metrics are not enabled (start with --external-rps-metrics)`,
      );
    }
    const { backends, client } = defaultPrometheusServer(flags, {
      type: "requests-per-second",
      metricName: plan.metricName,
    });
    const name = flags["external-rps-metric-name"];
    const metricName = typeof name === "string" ? name : SKIPPER_RPS_SERIES;
    if (!METRIC_NAME.test(metricName)) {
      throw new Error(`invalid --external-rps-metric-name "${metricName}"`);
    }
    const query = externalRpsQuery({ metricName, hostnames, weight });
    return new ExternalRpsCollector(plan, query, client, backends);
  },
};
