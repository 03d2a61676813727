/**
 * The cluster's kinds, read from kube-apiserver's discovery as client-go's discovery client
 * reads them: aggregated discovery (`/api` and `/apis` in the `apidiscovery.k8s.io` v2 or
 * v2beta1 form) when the server answers it, else the legacy documents (`/api`, `/apis`, and one
 * resource list per group version; one that fails, such as an aggregated API that is down, is
 * left out). For prometheus-adapter's rules (`--prometheus-adapter-config`), whose `resources`
 * name the cluster's resources.
 *
 * @module
 */
import type { KindInfo } from "../core/prometheus_adapter/naming.ts";
import {
  isAggregatedDiscovery,
  kindsFromAggregatedDiscovery,
  kindsFromResourceLists,
  legacyGroups,
} from "../core/prometheus_adapter/rest_mapper.ts";

/** What the discovery is read through (a `KubeHttp`). */
export interface DiscoveryHttp {
  request(
    method: string,
    path: string,
    options?: { headers?: Record<string, string> },
  ): Promise<{ status: number; body: Uint8Array }>;
}

const AGGREGATED_ACCEPT = [
  "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
  "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
  "application/json",
].join(",");

async function getJson(http: DiscoveryHttp, path: string, accept: string): Promise<unknown> {
  const res = await http.request("GET", path, { headers: { Accept: accept } });
  const text = new TextDecoder().decode(res.body);
  if (res.status < 200 || res.status > 299) {
    throw new Error(`GET ${path}: HTTP ${res.status}: ${text.slice(0, 200)}`);
  }
  return JSON.parse(text);
}

/**
 * The kinds the cluster serves, in client-go's RESTMapper priority order. Throws when `/api` or
 * `/apis` cannot be read.
 */
export async function discoverKinds(http: DiscoveryHttp): Promise<KindInfo[]> {
  const [api, apis] = await Promise.all([
    getJson(http, "/api", AGGREGATED_ACCEPT),
    getJson(http, "/apis", AGGREGATED_ACCEPT),
  ]);
  if (isAggregatedDiscovery(api) && isAggregatedDiscovery(apis)) {
    return kindsFromAggregatedDiscovery([api, apis]);
  }
  const groups = legacyGroups(api, apis);
  const paths = groups.flatMap(({ group, versions }) =>
    versions.map((v) => group === "" ? v : `${group}/${v}`)
  );
  const answers = await Promise.allSettled(
    paths.map((gv) =>
      getJson(http, gv.includes("/") ? `/apis/${gv}` : `/api/${gv}`, "application/json")
    ),
  );
  const lists = new Map<string, unknown>();
  answers.forEach((a, i) => {
    if (a.status === "fulfilled") lists.set(paths[i], a.value);
  });
  return kindsFromResourceLists(groups, lists);
}

/**
 * The names of the objects of a resource that a label selector selects, listed from
 * kube-apiserver as metadata only (`PartialObjectMetadataList`), in the order it lists them.
 * Throws with the status when the list is refused.
 */
export async function listObjectNames(
  http: DiscoveryHttp,
  list: {
    group: string;
    version: string;
    resource: string;
    /** null: cluster-scoped. */
    namespace: string | null;
    labelSelector: string;
  },
): Promise<string[]> {
  const base = list.group === "" ? `/api/${list.version}` : `/apis/${list.group}/${list.version}`;
  const scope = list.namespace === null ? "" : `/namespaces/${encodeURIComponent(list.namespace)}`;
  const query = list.labelSelector === ""
    ? ""
    : `?labelSelector=${encodeURIComponent(list.labelSelector)}`;
  const body = await getJson(
    http,
    `${base}${scope}/${list.resource}${query}`,
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
  ) as { items?: { metadata?: { name?: unknown } }[] };
  return (body.items ?? []).map((i) => i.metadata?.name).filter((n): n is string =>
    typeof n === "string"
  );
}
