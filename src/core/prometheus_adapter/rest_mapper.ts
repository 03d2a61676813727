/**
 * The cluster's kinds from its discovery documents, in the priority order client-go's discovery
 * RESTMapper gives them (`restmapper.NewDiscoveryRESTMapper`: the core group first, then the
 * groups as `/apis` lists them; in each group the preferred version first, then the others as
 * listed), for a {@linkcode staticResourceMapper}: prometheus-adapter resolves its rules'
 * `resources` with that mapper, refreshed every `--discovery-interval` (10 minutes).
 *
 * Two forms are read: aggregated discovery (`apidiscovery.k8s.io` v2 or v2beta1
 * `APIGroupDiscoveryList`, one document for `/api` and one for `/apis`, versions already in
 * preference order), and the legacy documents (`APIGroupList` and one `APIResourceList` per
 * group version). Subresources (`pods/status`) are left out. As client-go's mapper does, each
 * group version also maps the guessed resources of the kinds `<Kind>List` and `List`
 * (`podlists`, `lists`): a label template can name them. Pure: the caller fetches.
 *
 * @module
 */
import type { KindInfo } from "./naming.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

function isObject(v: unknown): v is Record<string, Json> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function str(v: unknown): string {
  return typeof v === "string" ? v : "";
}

/** Whether a document is an aggregated discovery list (v2 or v2beta1). */
export function isAggregatedDiscovery(doc: unknown): boolean {
  return isObject(doc) && doc.kind === "APIGroupDiscoveryList" &&
    /^apidiscovery\.k8s\.io\/v2(beta1)?$/.test(str(doc.apiVersion));
}

/**
 * The kinds of aggregated discovery documents (`/api`'s first, then `/apis`'), in priority
 * order. A malformed entry is skipped.
 *
 * @example
 * ```ts
 * kindsFromAggregatedDiscovery([{ kind: "APIGroupDiscoveryList", apiVersion: "apidiscovery.k8s.io/v2",
 *   items: [{ metadata: { name: "" }, versions: [{ version: "v1", resources: [{ resource: "pods",
 *   singularResource: "pod", scope: "Namespaced", responseKind: { group: "", version: "v1", kind: "Pod" } }] }] }] }]);
 * // [{ group: "", kind: "Pod", plural: "pods", singular: "pod", version: "v1", namespaced: true }]
 * ```
 */
export function kindsFromAggregatedDiscovery(docs: readonly unknown[]): KindInfo[] {
  const out: KindInfo[] = [];
  for (const doc of docs) {
    if (!isAggregatedDiscovery(doc)) continue;
    for (const item of Array.isArray((doc as Json).items) ? (doc as Json).items : []) {
      if (!isObject(item)) continue;
      const group = str(item.metadata?.name);
      for (const v of Array.isArray(item.versions) ? item.versions : []) {
        if (!isObject(v)) continue;
        const version = str(v.version);
        const listed: KindInfo[] = [];
        for (const r of Array.isArray(v.resources) ? v.resources : []) {
          if (!isObject(r)) continue;
          const plural = str(r.resource);
          const kind = str(r.responseKind?.kind);
          if (plural === "" || plural.includes("/") || kind === "" || version === "") continue;
          listed.push({
            group,
            kind,
            plural,
            ...(str(r.singularResource) !== "" ? { singular: str(r.singularResource) } : {}),
            version,
            namespaced: r.scope === "Namespaced",
          });
        }
        if (version !== "") out.push(...withListGuesses(group, version, listed));
      }
    }
  }
  return out;
}

/** A group as `/apis` (APIGroupList) or `/api` (APIVersions) lists it. */
export interface LegacyGroup {
  group: string;
  /** Its versions, the preferred one first. */
  versions: string[];
  /** Its versions as listed, when that differs from `versions`. */
  listed?: string[];
}

/**
 * The groups of the legacy documents: `/api`'s versions (the core group) and `/apis`' groups,
 * each with its preferred version first.
 */
export function legacyGroups(api: unknown, apis: unknown): LegacyGroup[] {
  const out: LegacyGroup[] = [];
  if (isObject(api) && Array.isArray(api.versions)) {
    const versions = api.versions.map(str).filter((v: string) => v !== "");
    if (versions.length > 0) out.push({ group: "", versions });
  }
  if (isObject(apis) && Array.isArray(apis.groups)) {
    for (const g of apis.groups) {
      if (!isObject(g)) continue;
      const name = str(g.name);
      const listed = (Array.isArray(g.versions) ? g.versions : []).map((v: Json) => str(v?.version))
        .filter((v: string) => v !== "");
      const preferred = str(g.preferredVersion?.version);
      const versions = preferred !== "" && listed.includes(preferred)
        ? [preferred, ...listed.filter((v: string) => v !== preferred)]
        : listed;
      if (name === "" || versions.length === 0) continue;
      out.push({
        group: name,
        versions,
        ...(versions[0] !== listed[0] ? { listed } : {}),
      });
    }
  }
  return out;
}

/**
 * The kinds of the legacy documents: for each group and version in order, its
 * `APIResourceList` (`lists` by `group/version`, `v1` for the core group; a version without one,
 * such as an aggregated API that did not answer, is skipped).
 */
export function kindsFromResourceLists(
  groups: readonly LegacyGroup[],
  lists: ReadonlyMap<string, unknown>,
): KindInfo[] {
  const out: KindInfo[] = [];
  for (const { group, versions, listed } of groups) {
    // the preferred version first (priority), each kind with its place in the listed order
    const place = new Map((listed ?? versions).map((v, i) => [v, i]));
    const start = out.length;
    for (const version of versions) {
      const list = lists.get(group === "" ? version : `${group}/${version}`);
      if (!isObject(list) || !Array.isArray(list.resources)) continue;
      const listedKinds: KindInfo[] = [];
      for (const r of list.resources) {
        if (!isObject(r)) continue;
        const plural = str(r.name);
        const kind = str(r.kind);
        if (plural === "" || plural.includes("/") || kind === "") continue;
        listedKinds.push({
          group,
          kind,
          plural,
          ...(str(r.singularName) !== "" ? { singular: str(r.singularName) } : {}),
          version,
          namespaced: r.namespaced === true,
        });
      }
      out.push(...withListGuesses(group, version, listedKinds));
    }
    if (listed !== undefined) {
      const group = out.slice(start);
      const order = [...group].sort((a, b) =>
        place.get(a.version!)! - place.get(b.version!)! || group.indexOf(a) - group.indexOf(b)
      );
      for (const k of group) k.listed = start + order.indexOf(k);
    }
  }
  return out;
}

/**
 * A group version's kinds, then the `<Kind>List` of each and `List` (their resources guessed
 * from the kind), as client-go's NewDiscoveryRESTMapper adds them after the version's own.
 */
function withListGuesses(group: string, version: string, kinds: KindInfo[]): KindInfo[] {
  return [
    ...kinds,
    ...kinds.map((k): KindInfo => ({
      group,
      kind: `${k.kind}List`,
      version,
      ...(k.namespaced !== undefined ? { namespaced: k.namespaced } : {}),
    })),
    { group, kind: "List", version, namespaced: false },
  ];
}
