/**
 * Discovery: the API groups and versions served, their `APIGroup` and `APIResourceList`
 * documents (one resource per served metric), and `/version`.
 *
 * @module
 */
import type { MetricStore } from "../store/store.ts";
import type { ServedMetric } from "../store/types.ts";

/** The custom metrics API group. */
export const CUSTOM_GROUP = "custom.metrics.k8s.io";
/** The external metrics API group. */
export const EXTERNAL_GROUP = "external.metrics.k8s.io";
/** The versions of the custom metrics API, preferred first. */
export const CUSTOM_VERSIONS = ["v1beta2", "v1beta1"] as const;
/** The versions of the external metrics API. */
export const EXTERNAL_VERSIONS = ["v1beta1"] as const;

/** What `/version` reports (`version.Info`). */
export interface VersionInfo {
  /** e.g. `v0.1.0`. */
  gitVersion: string;
  gitCommit?: string;
  gitTreeState?: string;
  buildDate?: string;
  /** The runtime, e.g. `node 20.20.0` (Go servers write their Go version here). */
  goVersion?: string;
  compiler?: string;
  platform?: string;
}

/** The `version.Info` JSON of `/version`. */
export function versionJson(version: VersionInfo): Record<string, string> {
  return {
    major: version.gitVersion.replace(/^v/, "").split(".")[0] ?? "",
    minor: version.gitVersion.replace(/^v/, "").split(".")[1] ?? "",
    gitVersion: version.gitVersion,
    gitCommit: version.gitCommit ?? "",
    gitTreeState: version.gitTreeState ?? "",
    buildDate: version.buildDate ?? "",
    goVersion: version.goVersion ?? "",
    compiler: version.compiler ?? "",
    platform: version.platform ?? "",
  };
}

/** The resource metrics API group (`resourceRules` of `--prometheus-adapter-config`). */
export const METRICS_GROUP = "metrics.k8s.io";

/** The versions served of `group`, preferred first. */
export function groupVersions(group: string): readonly string[] {
  return group === CUSTOM_GROUP
    ? CUSTOM_VERSIONS
    : group === METRICS_GROUP
    ? METRICS_VERSIONS
    : EXTERNAL_VERSIONS;
}

/** The versions of the resource metrics API. */
export const METRICS_VERSIONS = ["v1beta1"] as const;

/** The `APIGroup` document of `group` (without kind and apiVersion). */
export function apiGroup(group: string): Record<string, unknown> {
  const versions = groupVersions(group).map((v) => ({ groupVersion: `${group}/${v}`, version: v }));
  return { name: group, versions, preferredVersion: versions[0] };
}

/**
 * The `APIResourceList` of a group version: a fixed entry, then one per served metric, then
 * the metrics prometheus-adapter's rules discovered (`discovered`), then the `delegated`
 * resources (a delegate's, issue 26) whose names are not listed yet.
 */
export function resourceList(
  group: string,
  version: string,
  store: MetricStore,
  delegated: readonly Record<string, unknown>[] = [],
  discovered: readonly ServedMetric[] = [],
): unknown {
  const resources: Record<string, unknown>[] = [];
  const kind = group === CUSTOM_GROUP ? "MetricValueList" : "ExternalMetricValueList";
  // A fixed entry keeps the list non-empty (clients warn about empty groups) and gives
  // `kubectl api-resources` a line for the group; the per-metric entries follow the upstream
  // custom-metrics-apiserver (`pods/rps`; external: the metric name).
  resources.push({
    name: group === CUSTOM_GROUP ? "custommetrics" : "externalmetrics",
    singularName: "",
    namespaced: true,
    kind,
    verbs: ["get"],
  });
  const seen = new Set<string>(resources.map((r) => r.name as string));
  for (const m of [...store.servedMetrics(), ...discovered]) {
    if ((m.kind === "custom") !== (group === CUSTOM_GROUP)) continue;
    const name = m.kind === "custom" ? `${m.groupResource}/${m.metricName}` : m.metricName;
    if (seen.has(name)) continue;
    seen.add(name);
    resources.push({
      name,
      singularName: "",
      namespaced: m.kind === "custom" ? m.namespaced ?? true : true,
      kind,
      verbs: ["get"],
    });
  }
  for (const r of delegated) {
    const name = r.name as string;
    if (seen.has(name)) continue;
    seen.add(name);
    resources.push(r);
  }
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: `${group}/${version}`,
    resources,
  };
}
