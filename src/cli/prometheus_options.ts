/**
 * The Prometheus family's flags as the typed options their collectors own: `--prometheus-server`
 * and its token file, `--additional-prometheus-server alias=url` and their token files, the
 * query timeout, the response cap, link-local targets; the skipper and External
 * requests-per-second switches. Bad flags are errors naming the flag, made once per flags
 * object, so `serve` fails at start and every collector shares one client per server.
 */
import type { ExternalRpsOptions } from "../collectors/external_rps.ts";
import { EXTERNAL_RPS_DEFAULTS, isPrometheusMetricName } from "../collectors/external_rps.ts";
import {
  PROMETHEUS_DEFAULTS,
  prometheusBackends,
  type PrometheusOptions,
  type PrometheusServerOptions,
} from "../collectors/prometheus.ts";
import { SKIPPER_DEFAULTS, type SkipperOptions } from "../collectors/skipper.ts";
import { boolFlag, type FlagValues, listFlag, stringFlag } from "./flags.ts";

function positiveFlag(flags: FlagValues, name: string, dflt: number): number {
  const v = flags[name];
  return typeof v === "number" && Number.isFinite(v) && v > 0 ? v : dflt;
}

function splitPair(entry: string, flag: string, want: string): [string, string] {
  const eq = entry.indexOf("=");
  const key = eq > 0 ? entry.slice(0, eq).trim() : "";
  const value = eq > 0 ? entry.slice(eq + 1).trim() : "";
  if (key === "" || value === "") {
    throw new Error(`invalid --${flag} "${entry}": want ${want}`);
  }
  return [key, value];
}

const prometheusCache = new WeakMap<FlagValues, PrometheusOptions>();

/**
 * The Prometheus options of the flags. Throws on a malformed `alias=url` / `alias=path` entry,
 * a repeated alias, a token file for an alias that has no server, or a server that is not an
 * http(s) URL. The result is cached per flags object (and its clients per result), so every
 * collector shares one client and one token cache per server; call it at startup to fail fast
 * on bad flags.
 *
 * @example
 * ```ts
 * prometheusOptionsFromFlags({ "prometheus-server": "http://prometheus:9090" }).server;
 * // { url: "http://prometheus:9090", tokenFile: null }
 * ```
 */
export function prometheusOptionsFromFlags(flags: FlagValues): PrometheusOptions {
  const cached = prometheusCache.get(flags);
  if (cached) return cached;
  const url = stringFlag(flags, "prometheus-server");
  const server: PrometheusServerOptions | null = url === null
    ? null
    : { url, tokenFile: stringFlag(flags, "prometheus-server-token-file") };
  const urls = new Map<string, string>();
  for (const entry of listFlag(flags, "additional-prometheus-server")) {
    const [alias, u] = splitPair(entry, "additional-prometheus-server", "alias=url");
    if (urls.has(alias)) {
      throw new Error(
        `invalid --additional-prometheus-server "${entry}": alias "${alias}" repeated`,
      );
    }
    urls.set(alias, u);
  }
  const tokenFiles = new Map<string, string>();
  for (const entry of listFlag(flags, "additional-prometheus-server-token-file")) {
    const [alias, path] = splitPair(entry, "additional-prometheus-server-token-file", "alias=path");
    if (!urls.has(alias)) {
      throw new Error(
        `invalid --additional-prometheus-server-token-file "${entry}": no --additional-prometheus-server with alias "${alias}"`,
      );
    }
    tokenFiles.set(alias, path);
  }
  const additionalServers: Record<string, PrometheusServerOptions> = Object.fromEntries(
    [...urls].map(([alias, u]) => [alias, { url: u, tokenFile: tokenFiles.get(alias) ?? null }]),
  );
  const options: PrometheusOptions = {
    server,
    additionalServers,
    queryTimeoutSeconds: positiveFlag(
      flags,
      "prometheus-query-timeout",
      PROMETHEUS_DEFAULTS.queryTimeoutSeconds,
    ),
    maxResponseBytes: positiveFlag(
      flags,
      "max-response-bytes",
      PROMETHEUS_DEFAULTS.maxResponseBytes,
    ),
    allowLinkLocalTargets: boolFlag(flags, "allow-link-local-targets"),
  };
  // the clients check the server URLs; made now, they are the ones the collectors share
  prometheusBackends(options);
  prometheusCache.set(flags, options);
  return options;
}

/** The skipper options of the flags, on {@linkcode prometheusOptionsFromFlags}. */
export function skipperOptionsFromFlags(flags: FlagValues): SkipperOptions {
  const annotations = flags["skipper-backends-annotation"];
  return {
    ingressMetrics: boolFlag(flags, "skipper-ingress-metrics"),
    routeGroupMetrics: boolFlag(flags, "skipper-routegroup-metrics"),
    backendsAnnotations: Array.isArray(annotations)
      ? [...annotations]
      : SKIPPER_DEFAULTS.backendsAnnotations,
    prometheus: prometheusOptionsFromFlags(flags),
  };
}

/**
 * The External requests-per-second options of the flags, on
 * {@linkcode prometheusOptionsFromFlags}. Throws when `--external-rps-metrics` is on and
 * `--external-rps-metric-name` is not a Prometheus metric name.
 */
export function externalRpsOptionsFromFlags(flags: FlagValues): ExternalRpsOptions {
  const enabled = boolFlag(flags, "external-rps-metrics");
  const name = flags["external-rps-metric-name"];
  const metricName = typeof name === "string" ? name : EXTERNAL_RPS_DEFAULTS.metricName;
  if (enabled && !isPrometheusMetricName(metricName)) {
    throw new Error(`invalid --external-rps-metric-name "${metricName}"`);
  }
  return { enabled, metricName, prometheus: prometheusOptionsFromFlags(flags) };
}
