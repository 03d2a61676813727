/**
 * Pods metrics of type `json-path`: every Ready pod of the HPA's scaleTargetRef is asked for a
 * JSON document at `scheme://podIP:port/path?raw-query`, and the value at `json-key` (or
 * `json-eval`) becomes that pod's sample. Pods come from the cluster view (no LIST per
 * collection); requests are bounded in number, time and size; a pod that fails is skipped
 * and reported, only all pods failing fails the collection. A collection aborted at its deadline
 * returns the pods that answered, with a warning naming how many were not collected; its
 * deadline (`timeoutMs`) is the request timeout times the rounds of requests its pods need.
 */
import type { ClusterView, Kind, KubeObject } from "../cluster/types.ts";
import {
  jsonPathDescriptor,
  type PodJsonPathConfig,
} from "../core/kube_metrics_adapter/configs/json_path.ts";
import { fromLabelSelector, matchesSelector } from "../core/kubernetes/label_selector.ts";
import type { LabelSelector, MetricPlan, ObjectReference } from "../core/types.ts";
import type { Sample } from "../store/types.ts";
import { DEFAULT_MAX_RESPONSE_BYTES, extractJson, httpGetText, stableConfig } from "./http_get.ts";
import type {
  CollectContext,
  Collector,
  CollectorFactory,
  CollectorFactoryOptions,
  CollectResult,
} from "./types.ts";
import { planConfig } from "./types.ts";

/** Workload kinds whose pods can be found (their `spec.selector`). */
export const POD_TARGET_KINDS: readonly Kind[] = ["Deployment", "StatefulSet", "Rollout"];

/** Default of `--max-concurrent-pod-requests`. */
export const DEFAULT_MAX_POD_REQUESTS = 32;

/** Options of {@linkcode selectReadyPods}. */
export interface SelectPodsOptions {
  namespace: string;
  scaleTargetRef: ObjectReference;
  /** A pod must have been Ready for at least this long, seconds. */
  minReadyAgeSeconds: number;
  /** ms since the epoch. */
  now: number;
}

/** The pods a collection asks, and why others were left out. */
export interface PodSelection {
  pods: KubeObject[];
  /** Pods left out, by name, with the reason (not ready, deleting, too young). */
  skipped: { name: string; reason: string }[];
}

function readyCondition(pod: KubeObject): { status?: string; lastTransitionTime?: string } | null {
  const conditions = pod.status?.conditions;
  if (!Array.isArray(conditions)) return null;
  return conditions.find((c: { type?: string }) => c?.type === "Ready") ?? null;
}

/** A workload selector's pods as last selected, while the namespace's pods are unchanged. */
interface Selected {
  namespace: string;
  version: number;
  pods: KubeObject[];
}

/**
 * Selections by view and by the workload's `spec.selector` object (a workload object, and so
 * its selector, is replaced when it changes): each collection of a workload's pods reads its
 * namespace's pods only when one of them changed since the last (a namespace may hold
 * thousands; many HPAs collect each second).
 */
const selections = new WeakMap<ClusterView, WeakMap<LabelSelector, Selected>>();

/** The pods of `namespace` that `ls` selects, in the view's order. Do not mutate the array. */
function selectedPods(cluster: ClusterView, namespace: string, ls: LabelSelector): KubeObject[] {
  const version = cluster.version?.("Pod", namespace);
  let byView = version === undefined ? undefined : selections.get(cluster);
  const hit = byView?.get(ls);
  if (hit !== undefined && hit.version === version && hit.namespace === namespace) return hit.pods;
  const selector = fromLabelSelector(ls);
  const pods = cluster.list("Pod", namespace).filter((pod) =>
    matchesSelector(selector, pod.metadata.labels ?? {})
  );
  if (version !== undefined) {
    if (byView === undefined) selections.set(cluster, byView = new WeakMap());
    byView.set(ls, { namespace, version, pods });
  }
  return pods;
}

/**
 * The pods of a workload that may be asked for metrics: selected by the workload's
 * `spec.selector` (matchLabels and matchExpressions), Ready, not being deleted, and Ready for
 * at least `minReadyAgeSeconds` (since the Ready condition's `lastTransitionTime`, else the
 * pod's creation). Throws when the workload is missing or has no selector.
 */
export function selectReadyPods(cluster: ClusterView, options: SelectPodsOptions): PodSelection {
  const ref = options.scaleTargetRef;
  const kind = ref.kind as Kind;
  if (!POD_TARGET_KINDS.includes(kind)) {
    throw new Error(
      `unsupported scaleTargetRef kind "${ref.kind}" (want ${POD_TARGET_KINDS.join(", ")})`,
    );
  }
  const workload = cluster.get(kind, options.namespace, ref.name);
  if (!workload) throw new Error(`${ref.kind} ${options.namespace}/${ref.name} not found`);
  const ls = workload.spec?.selector as LabelSelector | undefined;
  if (!ls || (!ls.matchLabels && !ls.matchExpressions)) {
    throw new Error(`${ref.kind} ${options.namespace}/${ref.name} has no spec.selector`);
  }
  const out: PodSelection = { pods: [], skipped: [] };
  const minAgeMs = options.minReadyAgeSeconds * 1000;
  for (const pod of selectedPods(cluster, options.namespace, ls)) {
    const name = pod.metadata.name;
    if (pod.metadata.deletionTimestamp) {
      out.skipped.push({ name, reason: "being deleted" });
      continue;
    }
    const ready = readyCondition(pod);
    if (!ready || ready.status !== "True") {
      out.skipped.push({ name, reason: "not Ready" });
      continue;
    }
    if (minAgeMs > 0) {
      const since = Date.parse(ready.lastTransitionTime ?? pod.metadata.creationTimestamp ?? "");
      if (Number.isFinite(since) && options.now - since < minAgeMs) {
        out.skipped.push({
          name,
          reason: `Ready for ${
            Math.max(0, Math.floor((options.now - since) / 1000))
          }s, less than ${options.minReadyAgeSeconds}s`,
        });
        continue;
      }
    }
    out.pods.push(pod);
  }
  return out;
}

/** The metrics URL of a pod: IPv6 addresses are bracketed, the path gets a leading slash. */
export function podMetricsUrl(
  podIP: string,
  options: { scheme: string; port: number; path: string; rawQuery: string },
): string {
  const host = podIP.includes(":") ? `[${podIP}]` : podIP;
  const path = options.path === "" || options.path.startsWith("/")
    ? options.path
    : `/${options.path}`;
  const query = options.rawQuery === "" ? "" : `?${options.rawQuery.replace(/^\?/, "")}`;
  return `${options.scheme}://${host}:${options.port}${path}${query}`;
}

/** Run `fn` over `items` with at most `limit` calls in flight. */
export async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<PromiseSettledResult<R>[]> {
  const results: PromiseSettledResult<R>[] = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      try {
        results[i] = { status: "fulfilled", value: await fn(items[i]) };
      } catch (e) {
        results[i] = { status: "rejected", reason: e };
      }
    }
  };
  const n = Math.max(1, Math.min(limit, items.length));
  await Promise.all(Array.from({ length: n }, worker));
  return results;
}

/** A pod request cut short (or never made) because the collection was aborted. */
const NOT_ASKED: unique symbol = Symbol("not asked");

function abortText(reason: unknown): string {
  return reason instanceof Error ? reason.message : String(reason ?? "aborted");
}

class PodJsonPathCollector implements Collector {
  readonly queryKey: string;
  readonly kinds: readonly Kind[];
  readonly #plan: MetricPlan;
  readonly #config: PodJsonPathConfig;
  readonly #maxRequests: number;
  readonly #maxBytes: number;

  constructor(plan: MetricPlan, config: PodJsonPathConfig, options: PodJsonPathOptions) {
    this.#plan = plan;
    this.#config = config;
    this.#maxRequests = Math.max(1, options.maxConcurrentPodRequests ?? DEFAULT_MAX_POD_REQUESTS);
    this.#maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    const ref = plan.scaleTargetRef;
    this.kinds = ["Pod", ref.kind as Kind];
    this.queryKey = [
      "json-path/Pods",
      plan.hpa.namespace,
      `${ref.kind}/${ref.name}`,
      `min-pod-ready-age=${plan.minPodReadyAgeSeconds}`,
      stableConfig(plan.config),
    ].join("|");
  }

  /**
   * The request timeout times the rounds of requests the pods need at
   * `--max-concurrent-pod-requests` in flight, capped at the interval (but never under one
   * request timeout).
   */
  timeoutMs(ctx: Pick<CollectContext, "cluster" | "now">): number {
    let pods = 1;
    try {
      pods = selectReadyPods(ctx.cluster, {
        namespace: this.#plan.hpa.namespace,
        scaleTargetRef: this.#plan.scaleTargetRef,
        minReadyAgeSeconds: this.#plan.minPodReadyAgeSeconds,
        now: ctx.now(),
      }).pods.length;
    } catch {
      // the collection itself reports a missing workload
    }
    const perRequest = this.#config.requestTimeoutSeconds * 1000;
    const rounds = Math.max(1, Math.ceil(pods / this.#maxRequests));
    return Math.min(perRequest * rounds, Math.max(perRequest, this.#plan.intervalSeconds * 1000));
  }

  async collect(ctx: CollectContext): Promise<CollectResult> {
    const ns = this.#plan.hpa.namespace;
    const selection = selectReadyPods(ctx.cluster, {
      namespace: ns,
      scaleTargetRef: this.#plan.scaleTargetRef,
      minReadyAgeSeconds: this.#plan.minPodReadyAgeSeconds,
      now: ctx.now(),
    });
    const warnings: string[] = [];
    const asked: KubeObject[] = [];
    for (const pod of selection.pods) {
      if (typeof pod.status?.podIP === "string" && pod.status.podIP !== "") asked.push(pod);
      else warnings.push(`pod ${ns}/${pod.metadata.name} has no pod IP`);
    }
    const cfg = this.#config;
    const results = await mapBounded(asked, this.#maxRequests, async (pod) => {
      if (ctx.signal.aborted) throw NOT_ASKED;
      const url = podMetricsUrl(pod.status.podIP, cfg);
      let body: string;
      try {
        body = await httpGetText(url, {
          fetch: ctx.fetch,
          signal: ctx.signal,
          timeoutSeconds: cfg.requestTimeoutSeconds,
          maxBytes: this.#maxBytes,
        });
      } catch (e) {
        throw ctx.signal.aborted ? NOT_ASKED : e;
      }
      const value = extractJson(body, url, cfg.extraction);
      return { objectName: pod.metadata.name, value, timestamp: ctx.now() } satisfies Sample;
    });
    const samples: Sample[] = [];
    const errors: string[] = [];
    let notAsked = 0;
    results.forEach((r, i) => {
      if (r.status === "fulfilled") samples.push(r.value);
      else if (r.reason === NOT_ASKED) notAsked++;
      else {
        errors.push(
          `failed to get metric ${this.#plan.metricName} from pod ${ns}/${
            asked[i].metadata.name
          }: ${(r.reason as Error).message}`,
        );
      }
    });
    if (notAsked > 0) {
      // What answered before the deadline is served; the rest is reported.
      const why = abortText(ctx.signal.reason);
      if (samples.length === 0) throw new Error(`collection aborted: ${why}`);
      warnings.push(
        `${notAsked} of ${asked.length} pods not collected for metric ${this.#plan.metricName}: ${why}`,
      );
    }
    if (samples.length === 0 && (errors.length > 0 || warnings.length > 0)) {
      const all = [...errors, ...warnings];
      throw new Error(
        all.length === 1 ? all[0] : `all ${all.length} pods failed; first: ${all[0]}`,
      );
    }
    warnings.push(...errors);
    return warnings.length > 0 ? { samples, warnings } : { samples };
  }
}

/** What the operator sets for Pods json-path collections. */
export interface PodJsonPathOptions {
  /** Requests to pods in flight within one collection (default {@linkcode DEFAULT_MAX_POD_REQUESTS}). */
  maxConcurrentPodRequests?: number;
  /** Largest pod response read (default {@linkcode DEFAULT_MAX_RESPONSE_BYTES}). */
  maxResponseBytes?: number;
}

/**
 * The pod json-path factory. Config keys (annotations `metric-config.pods.NAME.json-path/KEY`):
 * `json-key` or `json-eval`, `port` (required), `scheme` (http), `path`, `raw-query`,
 * `aggregator`, `request-timeout` and `connect-timeout` (Go durations, 15s).
 */
export function createPodJsonPathFactory(
  collectorOptions: PodJsonPathOptions = {},
): CollectorFactory {
  return {
    type: "json-path",
    metricTypes: ["Pods"],
    create(options: CollectorFactoryOptions): Collector {
      const { plan } = options;
      const kind = plan.scaleTargetRef.kind as Kind;
      if (!POD_TARGET_KINDS.includes(kind)) {
        throw new Error(
          `unsupported scaleTargetRef kind "${plan.scaleTargetRef.kind}" for pod metric ${plan.metricName} (want ${
            POD_TARGET_KINDS.join(", ")
          })`,
        );
      }
      const config = planConfig(jsonPathDescriptor, plan, {}) as PodJsonPathConfig;
      return new PodJsonPathCollector(plan, config, collectorOptions);
    },
  };
}

/** Pods `json-path` with the default options. */
export const podJsonPathFactory: CollectorFactory = createPodJsonPathFactory();
