/**
 * The `metric-config.*` annotation grammar of kube-metrics-adapter:
 *
 * ```
 * metric-config.<metricType>.<metricName>.<collectorType>/<configKey>: <value>
 * ```
 *
 * The type segment `pods` means Pods, `object` means Object and anything else External. The
 * keys `interval`, `per-replica`, `min-pod-ready-age` and the fallback keys
 * (`fallback-failure-threshold`, `fallback-replicas`, `fallback-behavior`) are reserved; every
 * other key is collector config. Unlike the original, nothing here is silently skipped or
 * decided by map order: malformed keys become warnings, and bad values or conflicting
 * collectors become errors of the one metric they belong to.
 */
import { DurationError, parseDuration, TOO_LONG } from "../duration.ts";
import { type Fallback, FALLBACK_KEYS, parseFallback } from "../fallback.ts";
import { quote } from "../quote.ts";
import type { MetricType } from "../types.ts";

/** Every annotation key of the grammar starts with this. */
export const METRIC_CONFIG_PREFIX = "metric-config.";

/** Config keys with a meaning of their own; they never appear in a plan's `config`. */
export const RESERVED_CONFIG_KEYS: readonly string[] = [
  "interval",
  "per-replica",
  "min-pod-ready-age",
  ...FALLBACK_KEYS,
];

/** The annotations of one (metric type, metric name), merged over all collectors named. */
export interface MetricAnnotations {
  metricType: MetricType;
  metricName: string;
  /** Collector types named by the annotations, sorted; more than one is an error. */
  collectors: string[];
  /** Config keys (reserved keys excluded), from the annotations in sorted key order. */
  config: Record<string, string>;
  /** From `interval`, if given and valid; 0 means "use the default". */
  intervalSeconds?: number;
  /** From `per-replica`, if given and valid. */
  perReplica?: boolean;
  /** From `min-pod-ready-age`, if given and valid. */
  minPodReadyAgeSeconds?: number;
  /** From the `fallback-*` keys, if given and valid. */
  fallback?: Fallback;
  /** Problems that make this metric uncollectable (bad values, conflicting collectors). */
  errors: string[];
}

/** The result of reading one HPA's annotations. */
export interface ParsedAnnotations {
  /** Keyed by `annotationKey(metricType, metricName)`. */
  metrics: Map<string, MetricAnnotations>;
  /** `metric-config.` keys that do not follow the grammar (the original skips them silently). */
  warnings: string[];
}

/** The key of a metric in `ParsedAnnotations.metrics`. */
export function annotationKey(metricType: MetricType, metricName: string): string {
  return `${metricType}/${metricName}`;
}

/** The annotation type segment of a metric type (`Pods` -> `pods`). */
export function annotationTypeSegment(metricType: MetricType): string {
  return metricType.toLowerCase();
}

function metricTypeOf(segment: string): MetricType {
  switch (segment) {
    case "pods":
      return "Pods";
    case "object":
      return "Object";
    default:
      return "External";
  }
}

/**
 * Parse the `metric-config.*` annotations of one HPA. Keys are processed in sorted order, so
 * the result never depends on the order of the map.
 *
 * @example
 * ```ts
 * const parsed = parseMetricAnnotations({
 *   "metric-config.external.queue.prometheus/query": "sum(queue_depth)",
 *   "metric-config.external.queue.prometheus/interval": "30s",
 * });
 * parsed.metrics.get("External/queue")?.intervalSeconds; // 30
 * ```
 */
export function parseMetricAnnotations(
  annotations: Readonly<Record<string, string>> | null | undefined,
): ParsedAnnotations {
  const metrics = new Map<string, MetricAnnotations>();
  const warnings: string[] = [];
  // per metric: the fallback keys' values and the annotations they came from
  const fallbackKeys = new Map<MetricAnnotations, Map<string, [string, string]>>();
  const keys = Object.keys(annotations ?? {}).filter((k) => k.startsWith(METRIC_CONFIG_PREFIX))
    .sort();
  for (const key of keys) {
    const value = String(annotations![key]);
    const parts = key.split("/");
    if (parts.length !== 2) {
      warnings.push(
        `ignored annotation ${key}: want metric-config.<type>.<metric>.<collector>/<key> with exactly one "/"`,
      );
      continue;
    }
    const segments = parts[0].split(".");
    if (segments.length !== 4) {
      warnings.push(
        `ignored annotation ${key}: want 4 dot-separated parts before "/" (metric-config.<type>.<metric>.<collector>), got ${segments.length}` +
          (segments.length > 4 ? " (a metric name with dots cannot be configured)" : ""),
      );
      continue;
    }
    const [, typeSegment, metricName, collector] = segments;
    const configKey = parts[1];
    if (metricName === "" || collector === "" || configKey === "") {
      warnings.push(`ignored annotation ${key}: empty metric name, collector or config key`);
      continue;
    }
    if (typeSegment !== "pods" && typeSegment !== "object" && typeSegment !== "external") {
      warnings.push(
        `annotation ${key}: type "${typeSegment}" is read as external (use pods, object or external)`,
      );
    }
    const metricType = metricTypeOf(typeSegment);
    const mapKey = annotationKey(metricType, metricName);
    let entry = metrics.get(mapKey);
    if (!entry) {
      entry = { metricType, metricName, collectors: [], config: {}, errors: [] };
      metrics.set(mapKey, entry);
    }
    if (!entry.collectors.includes(collector)) {
      entry.collectors.push(collector);
      entry.collectors.sort();
    }
    const where = `for ${metricType} metric ${metricName} (annotation ${key})`;
    switch (configKey) {
      case "interval": {
        const seconds = durationValue(value, "interval", where, entry.errors);
        if (seconds !== undefined) entry.intervalSeconds = seconds;
        break;
      }
      case "min-pod-ready-age": {
        const seconds = durationValue(value, "min-pod-ready-age", where, entry.errors);
        if (seconds !== undefined) entry.minPodReadyAgeSeconds = seconds;
        break;
      }
      case "per-replica":
        if (value === "true") entry.perReplica = true;
        else if (value === "false") entry.perReplica = false;
        else {entry.errors.push(
            `invalid per-replica ${quote(value)} ${where}: want "true" or "false"`,
          );}
        break;
      default:
        if (FALLBACK_KEYS.includes(configKey)) {
          let given = fallbackKeys.get(entry);
          if (!given) fallbackKeys.set(entry, given = new Map());
          given.set(configKey, [value, key]);
        } else entry.config[configKey] = value;
    }
  }
  for (const [entry, given] of fallbackKeys) {
    // a missing key is named under the collector of the first key given
    const prefix = [...given.values()][0][1].split("/")[0];
    const parsed = parseFallback(
      Object.fromEntries([...given].map(([k, [value]]) => [k, value])),
      {
        // only a formula metric (its keys under the `formula` collector) takes scalingModifiers
        formula: entry.collectors.length === 1 && entry.collectors[0] === "formula",
        where: {
          metric: `${entry.metricType} metric ${entry.metricName}`,
          annotation: (k) => given.get(k)?.[1] ?? `${prefix}/${k}`,
        },
      },
    );
    entry.errors.push(...parsed.errors);
    if (parsed.fallback) entry.fallback = parsed.fallback;
  }
  for (const entry of metrics.values()) {
    if (entry.collectors.length > 1) {
      entry.errors.unshift(
        `annotations name different collectors for ${entry.metricType} metric ${entry.metricName}: ${
          entry.collectors.join(", ")
        }; use one collector in every metric-config.${
          annotationTypeSegment(entry.metricType)
        }.${entry.metricName}.<collector>/... key`,
      );
    }
  }
  return { metrics, warnings };
}

function durationValue(
  value: string,
  name: string,
  where: string,
  errors: string[],
): number | undefined {
  let seconds: number;
  try {
    seconds = parseDuration(value);
  } catch (e) {
    const why = e instanceof DurationError && e.reason === TOO_LONG
      ? TOO_LONG
      : "want a Go duration like 30s, 1m30s, 2h";
    errors.push(`invalid ${name} ${quote(value)} ${where}: ${why}`);
    return undefined;
  }
  if (seconds < 0) {
    errors.push(`invalid ${name} ${quote(value)} ${where}: must not be negative`);
    return undefined;
  }
  return seconds;
}
