/**
 * The cluster's kinds from its discovery documents (src/core/prometheus_adapter/rest_mapper.ts):
 * the aggregated form and the legacy one give the same kinds, in client-go's priority order,
 * and the mapper made of them resolves as client-go's discovery RESTMapper (the differential
 * test checks that against client-go itself for generated discoveries).
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  isAggregatedDiscovery,
  kindsFromAggregatedDiscovery,
  kindsFromResourceLists,
  legacyGroups,
  staticResourceMapper,
} from "../../../src/core/prometheus_adapter/mod.ts";
import { discoverKinds } from "../../../src/cluster/discovery.ts";

const AGGREGATED_API = {
  kind: "APIGroupDiscoveryList",
  apiVersion: "apidiscovery.k8s.io/v2",
  items: [{
    metadata: { name: "" },
    versions: [{
      version: "v1",
      resources: [
        {
          resource: "pods",
          responseKind: { group: "", version: "v1", kind: "Pod" },
          scope: "Namespaced",
          singularResource: "pod",
          subresources: [{ subresource: "status" }],
        },
        {
          resource: "nodes",
          responseKind: { group: "", version: "v1", kind: "Node" },
          scope: "Cluster",
          singularResource: "node",
        },
      ],
    }],
  }],
};

const AGGREGATED_APIS = {
  kind: "APIGroupDiscoveryList",
  apiVersion: "apidiscovery.k8s.io/v2",
  items: [
    {
      metadata: { name: "metrics.k8s.io" },
      versions: [{
        version: "v1beta1",
        resources: [
          {
            resource: "pods",
            responseKind: { group: "metrics.k8s.io", version: "v1beta1", kind: "PodMetrics" },
            scope: "Namespaced",
            singularResource: "",
          },
        ],
      }],
    },
    {
      metadata: { name: "keda.sh" },
      versions: [{
        version: "v1alpha1",
        resources: [{
          resource: "triggerauthentications",
          responseKind: { group: "keda.sh", version: "v1alpha1", kind: "TriggerAuthentication" },
          scope: "Namespaced",
          singularResource: "triggerauthentication",
        }],
      }],
    },
  ],
};

const LEGACY_API = { kind: "APIVersions", versions: ["v1"] };
const LEGACY_APIS = {
  kind: "APIGroupList",
  groups: [
    {
      name: "metrics.k8s.io",
      versions: [{ groupVersion: "metrics.k8s.io/v1beta1", version: "v1beta1" }],
      preferredVersion: { groupVersion: "metrics.k8s.io/v1beta1", version: "v1beta1" },
    },
    {
      name: "keda.sh",
      versions: [{ groupVersion: "keda.sh/v1alpha1", version: "v1alpha1" }],
      preferredVersion: { groupVersion: "keda.sh/v1alpha1", version: "v1alpha1" },
    },
  ],
};
const LEGACY_LISTS = new Map<string, unknown>([
  ["v1", {
    resources: [
      { name: "pods", singularName: "pod", namespaced: true, kind: "Pod" },
      { name: "pods/status", singularName: "", namespaced: true, kind: "Pod" },
      { name: "nodes", singularName: "node", namespaced: false, kind: "Node" },
    ],
  }],
  ["metrics.k8s.io/v1beta1", {
    resources: [{ name: "pods", singularName: "", namespaced: true, kind: "PodMetrics" }],
  }],
  ["keda.sh/v1alpha1", {
    resources: [{
      name: "triggerauthentications",
      singularName: "triggerauthentication",
      namespaced: true,
      kind: "TriggerAuthentication",
    }],
  }],
]);

describe("the cluster's kinds from discovery", () => {
  it("reads the aggregated and the legacy documents alike", () => {
    assert.equal(isAggregatedDiscovery(AGGREGATED_API), true);
    assert.equal(isAggregatedDiscovery(LEGACY_APIS), false);
    const aggregated = kindsFromAggregatedDiscovery([AGGREGATED_API, AGGREGATED_APIS]);
    const legacy = kindsFromResourceLists(legacyGroups(LEGACY_API, LEGACY_APIS), LEGACY_LISTS);
    assert.deepEqual(aggregated, legacy);
    // each version's kinds, then their List kinds and List, the core group first
    assert.deepEqual(
      aggregated.map((k) => `${k.group}/${k.version} ${k.kind} ${k.plural ?? "-"}`),
      [
        "/v1 Pod pods",
        "/v1 Node nodes",
        "/v1 PodList -",
        "/v1 NodeList -",
        "/v1 List -",
        "metrics.k8s.io/v1beta1 PodMetrics pods",
        "metrics.k8s.io/v1beta1 PodMetricsList -",
        "metrics.k8s.io/v1beta1 List -",
        "keda.sh/v1alpha1 TriggerAuthentication triggerauthentications",
        "keda.sh/v1alpha1 TriggerAuthenticationList -",
        "keda.sh/v1alpha1 List -",
      ],
    );
  });

  it("resolves as the cluster does: pods are the core group's, a CRD is known", () => {
    const mapper = staticResourceMapper(
      kindsFromAggregatedDiscovery([AGGREGATED_API, AGGREGATED_APIS]),
    );
    assert.deepEqual(mapper.resourceFor({ group: "", resource: "pod" }), {
      group: "",
      resource: "pods",
    });
    assert.deepEqual(mapper.resourceFor({ group: "metrics", resource: "pods" }), {
      group: "metrics.k8s.io",
      resource: "pods",
    });
    assert.deepEqual(mapper.resourceFor({ group: "keda.sh", resource: "triggerauthentication" }), {
      group: "keda.sh",
      resource: "triggerauthentications",
    });
    assert.equal(mapper.singular("pods"), "pod");
    assert.equal(mapper.singular("podlists"), "podlist");
    assert.deepEqual(
      mapper.kindOf({ group: "keda.sh", resource: "triggerauthentications" }),
      {
        group: "keda.sh",
        kind: "TriggerAuthentication",
        plural: "triggerauthentications",
        singular: "triggerauthentication",
        version: "v1alpha1",
        namespaced: true,
      },
    );
    assert.throws(() => mapper.resourceFor({ group: "", resource: "deployments" }), /no matches/);
  });

  it("asks kube-apiserver for aggregated discovery, and falls back to the legacy documents", async () => {
    const asked: string[] = [];
    const answer = (body: unknown) => ({
      status: 200,
      body: new TextEncoder().encode(JSON.stringify(body)),
    });
    const legacyServer = {
      request: (_method: string, path: string, options?: { headers?: Record<string, string> }) => {
        asked.push(`${path} ${options?.headers?.Accept?.split(",")[0]}`);
        if (path === "/api") return Promise.resolve(answer(LEGACY_API));
        if (path === "/apis") return Promise.resolve(answer(LEGACY_APIS));
        const gv = path.replace(/^\/apis?\//, "");
        // an aggregated API that is down: its kinds are left out
        if (gv === "metrics.k8s.io/v1beta1") {
          return Promise.resolve({ status: 503, body: new Uint8Array() });
        }
        return Promise.resolve(answer(LEGACY_LISTS.get(gv)));
      },
    };
    const kinds = await discoverKinds(legacyServer);
    assert.deepEqual(asked, [
      "/api application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
      "/apis application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
      "/api/v1 application/json",
      "/apis/metrics.k8s.io/v1beta1 application/json",
      "/apis/keda.sh/v1alpha1 application/json",
    ]);
    assert.deepEqual(kinds.map((k) => k.kind), [
      "Pod",
      "Node",
      "PodList",
      "NodeList",
      "List",
      "TriggerAuthentication",
      "TriggerAuthenticationList",
      "List",
    ]);
    const aggregatedServer = {
      request: (_method: string, path: string) =>
        Promise.resolve(answer(path === "/api" ? AGGREGATED_API : AGGREGATED_APIS)),
    };
    assert.equal((await discoverKinds(aggregatedServer)).length, 11);
  });
});
