/**
 * The pure parts of serving `rules` and `externalRules` reads as prometheus-adapter v0.12.0's
 * providers answer them (pkg/custom-provider provider.go, pkg/external-provider
 * metric_converter.go): values by object name, Quantity strings, external items; plus what
 * this adapter adds: a read whose object names would make the query longer than a limit is
 * split into several queries, and a read of a name not discovered yet asks only the rules
 * that could give that name.
 *
 * @module
 */

import type { DiscoveryRule } from "./config.ts";
import type { KindInfo } from "./naming.ts";
import { decimalMilli, goMilli } from "./resource.ts";

/** A sample of an instant vector, as the Prometheus client reads it. */
export interface PromSample {
  labels: Readonly<Record<string, string>>;
  value: number;
  /** ms since the epoch. */
  timestamp: number;
}

/**
 * The Quantity of a custom metric value (upstream's metricFor): NaN is `0`, anything else
 * `resource.NewMilliQuantity(int64(v*1000), DecimalSI)` (truncated; out of the int64 range,
 * as amd64 converts, -2^63 milli).
 *
 * @example
 * ```ts
 * customQuantity(1.2345); // "1234m"
 * customQuantity(NaN); // "0"
 * ```
 */
export function customQuantity(v: number): string {
  return Number.isNaN(v) ? "0" : decimalMilli(goMilli(v));
}

/**
 * The Quantity of an external metric value (upstream's convertSample and convertScalar):
 * `NewMilliQuantity(int64(v*1000), DecimalSI)` with no special case (NaN gives -2^63 milli).
 */
export function externalQuantity(v: number): string {
  return decimalMilli(goMilli(v));
}

/**
 * The value of each object a custom read's vector names, by the resource label (upstream's
 * MatchValuesToNames): a sample without the label is filed under `""`; when several samples
 * name one object the last one counts.
 */
export function valuesByName(
  samples: readonly PromSample[],
  resourceLabel: string,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of samples) {
    out.set(Object.hasOwn(s.labels, resourceLabel) ? s.labels[resourceLabel] : "", s.value);
  }
  return out;
}

/** One custom item of a read, in the read's name order. */
export interface NamedValue {
  name: string;
  value: number;
  quantity: string;
}

/**
 * The items of a custom read (upstream's metricsFor): for each name asked, in order, the value
 * the vectors give it; names without one are left out.
 */
export function customItems(
  names: readonly string[],
  values: ReadonlyMap<string, number>,
): NamedValue[] {
  const out: NamedValue[] = [];
  for (const name of names) {
    const v = values.get(name);
    if (v === undefined) continue;
    out.push({ name, value: Number.isNaN(v) ? 0 : v, quantity: customQuantity(v) });
  }
  return out;
}

/** One external item (upstream's ExternalMetricValue). */
export interface ExternalValue {
  /** The sample's labels; null for a scalar (upstream writes `metricLabels: null`). */
  labels: Record<string, string> | null;
  value: number;
  quantity: string;
  /** The sample's time, ms since the epoch. */
  timestamp: number;
}

/** What an instant query answered, as the external converter reads it. */
export type ExternalQueryData =
  | { resultType: "vector"; series: readonly PromSample[] }
  | { resultType: "scalar"; value: number; timestamp: number }
  | { resultType: string };

/**
 * The items of an external read (upstream's metricConverter): every vector sample an item with
 * all its labels (`__name__` too, when the query keeps it), a scalar one item without labels;
 * any other result type throws.
 */
export function externalItems(data: ExternalQueryData): ExternalValue[] {
  if (data.resultType === "vector" && "series" in data) {
    return data.series.map((s) => ({
      labels: { ...s.labels },
      value: s.value,
      quantity: externalQuantity(s.value),
      timestamp: s.timestamp,
    }));
  }
  if (data.resultType === "scalar" && "value" in data) {
    return [{
      labels: null,
      value: data.value,
      quantity: externalQuantity(data.value),
      timestamp: data.timestamp,
    }];
  }
  throw new Error("encountered an unexpected query result type");
}

/** The queries of a read split by {@linkcode splitNamesForQuery}. */
export interface NameChunk {
  names: string[];
  query: string;
}

/**
 * The names of a read in as few consecutive chunks as keep each rendered query at most
 * `maxLength` characters (0 or less: no limit); a name whose query alone is longer goes alone.
 * Upstream sends one query whatever its length, which Prometheus (or a proxy in front of it)
 * may refuse once the `pod=~"a|b|..."` matcher grows past its URL or form limits.
 *
 * @example
 * ```ts
 * const render = (names: readonly string[]) => `up{pod=~"${names.join("|")}"}`;
 * splitNamesForQuery(["a", "b", "c"], render, 14).map((c) => c.names); // [["a", "b"], ["c"]]
 * ```
 */
export function splitNamesForQuery(
  names: readonly string[],
  render: (names: readonly string[]) => string,
  maxLength: number,
): NameChunk[] {
  if (names.length === 0) return [];
  const whole = render(names);
  if (maxLength <= 0 || whole.length <= maxLength || names.length === 1) {
    return [{ names: [...names], query: whole }];
  }
  const chunks: NameChunk[] = [];
  let current: string[] = [];
  let query = "";
  for (const name of names) {
    const next = [...current, name];
    const rendered = render(next);
    if (current.length > 0 && rendered.length > maxLength) {
      chunks.push({ names: current, query });
      current = [name];
      query = render(current);
    } else {
      current = next;
      query = rendered;
    }
  }
  chunks.push({ names: current, query });
  return chunks;
}

/**
 * Whether `rule` could name a metric `metric`: always, unless its `name.as` refers to no
 * capture group (then only that very name). Used to pick the rules whose series are looked up
 * again when a read asks for a name not discovered yet.
 */
export function couldNameMetric(rule: DiscoveryRule, metric: string): boolean {
  return rule.nameAs.includes("$") || rule.nameAs === metric;
}

/**
 * The kinds a cluster serves out of the box (and the few CRDs this adapter knows), for a
 * {@linkcode staticResourceMapper} where the cluster's own RESTMapper is not asked: a rule's
 * `resources` naming anything else is refused as an unknown resource.
 */
export const COMMON_KINDS: readonly KindInfo[] = [
  { group: "", kind: "Pod", version: "v1" },
  { group: "", kind: "Service", version: "v1" },
  { group: "", kind: "Namespace", version: "v1" },
  { group: "", kind: "Node", version: "v1" },
  { group: "", kind: "PersistentVolume", version: "v1" },
  { group: "", kind: "PersistentVolumeClaim", version: "v1" },
  { group: "", kind: "ConfigMap", version: "v1" },
  { group: "", kind: "Secret", version: "v1" },
  { group: "", kind: "Endpoints", version: "v1" },
  { group: "", kind: "ServiceAccount", version: "v1" },
  { group: "", kind: "ReplicationController", version: "v1" },
  { group: "apps", kind: "Deployment", version: "v1" },
  { group: "apps", kind: "StatefulSet", version: "v1" },
  { group: "apps", kind: "ReplicaSet", version: "v1" },
  { group: "apps", kind: "DaemonSet", version: "v1" },
  { group: "batch", kind: "Job", version: "v1" },
  { group: "batch", kind: "CronJob", version: "v1" },
  { group: "networking.k8s.io", kind: "Ingress", version: "v1" },
  { group: "autoscaling", kind: "HorizontalPodAutoscaler", version: "v2" },
  { group: "zalando.org", kind: "RouteGroup", version: "v1" },
  { group: "zalando.org", kind: "ScalingSchedule", version: "v1" },
  { group: "argoproj.io", kind: "Rollout", version: "v1alpha1" },
  { group: "keda.sh", kind: "ScaledObject", version: "v1alpha1" },
];

/**
 * The `describedObject` kind and apiVersion of a kind as prometheus-adapter writes them
 * (custom-metrics-apiserver's `ReferenceFor`: `group + "/" + version`, so `/v1` for the core
 * group); null for a kind whose version is not known.
 *
 * @example
 * ```ts
 * describedKind({ group: "batch", kind: "Job", version: "v1" }); // { kind: "Job", apiVersion: "batch/v1" }
 * describedKind({ group: "", kind: "Pod", version: "v1" }); // { kind: "Pod", apiVersion: "/v1" }
 * ```
 */
export function describedKind(
  info: KindInfo | null,
): { kind: string; apiVersion: string } | null {
  if (info?.version === undefined) return null;
  return { kind: info.kind, apiVersion: `${info.group}/${info.version}` };
}
