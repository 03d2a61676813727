import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { MetricStore } from "../../src/store/store.ts";
import type { StoredPlan } from "../../src/store/types.ts";
import { CM, EM, fixture, getJson, status } from "./app_support.ts";

describe("discovery", () => {
  const customGroup = {
    name: "custom.metrics.k8s.io",
    versions: [
      { groupVersion: "custom.metrics.k8s.io/v1beta2", version: "v1beta2" },
      { groupVersion: "custom.metrics.k8s.io/v1beta1", version: "v1beta1" },
    ],
    preferredVersion: { groupVersion: "custom.metrics.k8s.io/v1beta2", version: "v1beta2" },
  };
  const externalGroup = {
    name: "external.metrics.k8s.io",
    versions: [{ groupVersion: "external.metrics.k8s.io/v1beta1", version: "v1beta1" }],
    preferredVersion: { groupVersion: "external.metrics.k8s.io/v1beta1", version: "v1beta1" },
  };

  it("lists both groups at /apis", async () => {
    const { options } = fixture();
    const [code, body] = await getJson(options, "/apis");
    assert.equal(code, 200);
    assert.deepEqual(body, {
      kind: "APIGroupList",
      apiVersion: "v1",
      groups: [customGroup, externalGroup],
    });
  });

  it("describes each group at /apis/{group}", async () => {
    const { options } = fixture();
    assert.deepEqual(await getJson(options, "/apis/custom.metrics.k8s.io"), [
      200,
      { kind: "APIGroup", apiVersion: "v1", ...customGroup },
    ]);
    assert.deepEqual(await getJson(options, "/apis/external.metrics.k8s.io/"), [
      200,
      { kind: "APIGroup", apiVersion: "v1", ...externalGroup },
    ]);
  });

  it("lists a fixed resource plus one per served metric, as upstream does", async () => {
    const { options } = fixture();
    const r = (name: string, namespaced: boolean, kind = "MetricValueList") => ({
      name,
      singularName: "",
      namespaced,
      kind,
      verbs: ["get"],
    });
    for (const v of ["v1beta1", "v1beta2"]) {
      assert.deepEqual(await getJson(options, `${CM}/${v}`), [200, {
        kind: "APIResourceList",
        apiVersion: "v1",
        groupVersion: `custom.metrics.k8s.io/${v}`,
        resources: [
          r("custommetrics", true),
          r("deployments.apps/requests", true),
          r("namespaces/jobs", true),
          r("nodes/load", false),
          r("pods/rps", true),
          r("scalingschedules.zalando.org/nightly", true),
        ],
      }]);
    }
    assert.deepEqual(await getJson(options, EM), [200, {
      kind: "APIResourceList",
      apiVersion: "v1",
      groupVersion: "external.metrics.k8s.io/v1beta1",
      resources: [
        r("externalmetrics", true, "ExternalMetricValueList"),
        r("queue-length", true, "ExternalMetricValueList"),
      ],
    }]);
  });

  it("lists a metric served after an earlier discovery read, and drops one no longer served", async () => {
    const store = new MetricStore();
    const { options } = fixture({ store });
    const names = async (): Promise<string[]> => {
      const [, body] = await getJson(options, EM);
      return (body as { resources: { name: string }[] }).resources.map((x) => x.name);
    };
    assert.deepEqual(await names(), ["externalmetrics"]);
    const plan: StoredPlan = {
      key: "default/worker#0/External/queue-length",
      hpa: { namespace: "default", name: "worker" },
      servedAt: {
        kind: "external",
        namespace: "default",
        metricName: "queue-length",
        metricLabels: { queue: "q1" },
      },
      queryKey: "q1",
    };
    store.upsertPlan(plan, Date.now());
    assert.deepEqual(await names(), ["externalmetrics", "queue-length"]);
    store.removePlan(plan.key);
    assert.deepEqual(await names(), ["externalmetrics"]);
  });

  it("keeps the resource list non-empty when nothing is served", async () => {
    const { options } = fixture({ store: new MetricStore() });
    const [, body] = await getJson(options, `${CM}/v1beta2`);
    assert.deepEqual((body as { resources: { name: string }[] }).resources.map((x) => x.name), [
      "custommetrics",
    ]);
  });

  for (const disabled of ["custom", "external"] as const) {
    it(`answers 404 on every ${disabled} path and hides the group when it is disabled`, async () => {
      const { options } = fixture(
        disabled === "custom" ? { enableCustom: false } : { enableExternal: false },
      );
      const [, list] = await getJson(options, "/apis");
      assert.deepEqual(list, {
        kind: "APIGroupList",
        apiVersion: "v1",
        groups: [disabled === "custom" ? externalGroup : customGroup],
      });
      const base = disabled === "custom" ? CM : "/apis/external.metrics.k8s.io";
      const paths = disabled === "custom"
        ? [base, `${base}/v1beta2`, `${base}/v1beta1/namespaces/default/pods/*/rps`]
        : [base, `${base}/v1beta1`, `${EM}/namespaces/default/queue-length`];
      for (const path of paths) {
        assert.deepEqual(await getJson(options, path), [
          404,
          status(404, "NotFound", "the server could not find the requested resource"),
        ], path);
      }
      const [, openapi] = await getJson(options, "/openapi/v2");
      const keys = Object.keys((openapi as { paths: Record<string, unknown> }).paths);
      assert.equal(keys.some((k) => k.includes(`${disabled}.metrics.k8s.io`)), false);
      assert.equal(keys.length > 0, true);
    });
  }

  it("reports the version", async () => {
    const { options } = fixture();
    assert.deepEqual(await getJson(options, "/version"), [200, {
      major: "0",
      minor: "1",
      gitVersion: "v0.1.0",
      gitCommit: "",
      gitTreeState: "",
      buildDate: "",
      goVersion: "node 20",
      compiler: "",
      platform: "linux/amd64",
    }]);
  });

  it("serves a Swagger 2.0 document with every metric path", async () => {
    const { options } = fixture();
    const [code, doc] = await getJson(options, "/openapi/v2");
    assert.equal(code, 200);
    const d = doc as { swagger: string; info: unknown; paths: Record<string, unknown> };
    assert.equal(d.swagger, "2.0");
    assert.deepEqual(d.info, { title: "hpa-metrics-adapter", version: "v0.1.0" });
    assert.deepEqual(Object.keys(d.paths), [
      "/apis/custom.metrics.k8s.io/v1beta2/namespaces/{namespace}/{resource}/{name}/{metric}",
      "/apis/custom.metrics.k8s.io/v1beta2/{resource}/{name}/{metric}",
      "/apis/custom.metrics.k8s.io/v1beta2/namespaces/{namespace}/metrics/{metric}",
      "/apis/custom.metrics.k8s.io/v1beta1/namespaces/{namespace}/{resource}/{name}/{metric}",
      "/apis/custom.metrics.k8s.io/v1beta1/{resource}/{name}/{metric}",
      "/apis/custom.metrics.k8s.io/v1beta1/namespaces/{namespace}/metrics/{metric}",
      "/apis/external.metrics.k8s.io/v1beta1/namespaces/{namespace}/{metric}",
    ]);
    // every $ref resolves
    const refs = JSON.stringify(doc).match(/#\/definitions\/[A-Za-z]+/g) ?? [];
    const defs = (doc as { definitions: Record<string, unknown> }).definitions;
    for (const ref of refs) assert.ok(defs[ref.slice(14)], ref);
  });
});
