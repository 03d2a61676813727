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
  /** One pod by name; when given, wildcard reads look up only the pods that have values. */
  getPod?(namespace: string, name: string): KubeObject | undefined;
  /**
   * A counter that changes whenever a pod of the namespace does; when given, the servable pods
   * matching a `labelSelector` are worked out once and reused until it changes.
   */
  version?(namespace: string): number;
  /**
   * The names of the pods of a namespace changed since `version` was what `version` returned,
   * or null when unknown: when given, a remembered pod set is brought up to date by looking
   * only at those pods (a namespace may hold thousands; one of them changes often).
   */
  changedSince?(namespace: string, version: number): readonly string[] | null;
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
 * lister's version of the namespace stays the same (pods only change on watch events). After a
 * change, a lister that tells which pods changed (`changedSince`, with `getPod`) has only those
 * looked at again; the set is the same object while none of them joins or leaves it.
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
    const servable = (pod: KubeObject | undefined): pod is KubeObject =>
      pod !== undefined && isServablePod(pod) &&
      labelSelector.matches(pod.metadata.labels ?? {});
    let names: ReadonlySet<string> | null = null;
    if (hit !== undefined && pods.changedSince && pods.getPod) {
      const changed = pods.changedSince(namespace, hit.version);
      if (changed !== null) {
        names = updatedSet(hit.names, changed, (n) => servable(pods.getPod!(namespace, n)));
      }
    }
    if (names === null) {
      const all = new Set<string>();
      for (const pod of pods.listPods(namespace)) if (servable(pod)) all.add(pod.metadata.name);
      names = all;
    }
    if (hit === undefined && cache.size >= POD_SET_CACHE_LIMIT) cache.clear();
    cache.set(key, { version, names });
    return names;
  };
}

/**
 * `names` with each of `changed` in it or not as `isIn` says: `names` itself when that changes
 * nothing, else a new set (a reader may still hold the old one, and a changed set tells that
 * the answer built from it is out of date).
 */
function updatedSet(
  names: ReadonlySet<string>,
  changed: readonly string[],
  isIn: (name: string) => boolean,
): ReadonlySet<string> {
  let out: Set<string> | null = null;
  for (const name of changed) {
    const want = isIn(name);
    if (want === (out ?? names).has(name)) continue;
    out ??= new Set(names);
    if (want) out.add(name);
    else out.delete(name);
  }
  return out ?? names;
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
