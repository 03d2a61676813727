/**
 * The pods a wildcard pods read may serve: ready, not being deleted, matching the read's
 * `labelSelector`, from the pod lister's watch cache (never a LIST per read).
 *
 * @module
 */
import type { KubeObject } from "../cluster/types.ts";
import type { CustomLookupOptions } from "../store/store.ts";
import type { OkSelector } from "./selectors.ts";

/** Where pods come from, for `labelSelector` on pods (served from a watch cache, no LIST). */
export interface PodLister {
  /** The pods of a namespace. */
  listPods(namespace: string): KubeObject[];
  /** The pods of every namespace (metrics.k8s.io's `/pods`); none when absent. */
  listAllPods?(): KubeObject[];
  /** One pod by name; when given, wildcard reads look up only the pods that have values. */
  getPod?(namespace: string, name: string): KubeObject | undefined;
  /**
   * A counter that changes whenever a pod of the namespace does; when given, the servable pods
   * matching a `labelSelector` are worked out once and reused until it changes.
   */
  version?(namespace: string): number;
}

/** Ready (condition Ready=True) and not being deleted. */
export function isServablePod(pod: KubeObject): boolean {
  if (pod.metadata.deletionTimestamp) return false;
  const conditions: unknown = pod.status?.conditions;
  if (!Array.isArray(conditions)) return false;
  for (const c of conditions) {
    if (
      c && typeof c === "object" && (c as { type?: unknown }).type === "Ready" &&
      (c as { status?: unknown }).status === "True"
    ) return true;
  }
  return false;
}

/** Pod sets of (namespace, labelSelector) remembered, before the cache starts over. */
const POD_SET_CACHE_LIMIT = 1024;

/**
 * The names of the servable pods matching a `labelSelector` in a namespace, kept while the pod
 * lister's version of the namespace stays the same (pods only change on watch events).
 */
export function podSetCache(): (
  namespace: string,
  labelSelector: OkSelector,
  pods: PodLister & { version(namespace: string): number },
) => ReadonlySet<string> {
  const cache = new Map<string, { version: number; names: ReadonlySet<string> }>();
  return (namespace, labelSelector, pods) => {
    const key = `${namespace}\u0000${labelSelector.canonical}`;
    const version = pods.version(namespace);
    const hit = cache.get(key);
    if (hit !== undefined && hit.version === version) return hit.names;
    const names = new Set<string>();
    for (const pod of pods.listPods(namespace)) {
      if (isServablePod(pod) && labelSelector.matches(pod.metadata.labels ?? {})) {
        names.add(pod.metadata.name);
      }
    }
    if (hit === undefined && cache.size >= POD_SET_CACHE_LIMIT) cache.clear();
    cache.set(key, { version, names });
    return names;
  };
}

/** A cache of pod sets (see {@linkcode podSetCache}). */
export type PodSetCache = ReturnType<typeof podSetCache>;

/** Which pods a wildcard read may serve: ready, not deleting, matching `labelSelector`. */
export function podFilter(
  caches: { podSets: PodSetCache },
  namespace: string,
  labelSelector: OkSelector,
  pods: PodLister,
): CustomLookupOptions {
  if (pods.version) {
    return { names: caches.podSets(namespace, labelSelector, pods as Required<PodLister>) };
  }
  const matches = labelSelector.matches;
  const ok = (pod: KubeObject | undefined): boolean =>
    !!pod && isServablePod(pod) && matches(pod.metadata.labels ?? {});
  if (pods.getPod) {
    const get = pods.getPod.bind(pods);
    return { accept: (name) => ok(get(namespace, name)) };
  }
  const names = new Set<string>();
  for (const pod of pods.listPods(namespace)) if (ok(pod)) names.add(pod.metadata.name);
  return { names };
}
