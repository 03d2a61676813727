import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createApp } from "../../src/api/app.ts";
import { isServablePod } from "../../src/api/pods.ts";
import type { KubeObject } from "../../src/cluster/types.ts";
import { CM, custom, fixture, get, getJson, POD_REF, PODS, status, T0, TS } from "./app_support.ts";

describe("custom.metrics.k8s.io pods metrics", () => {
  for (const star of ["*", "%2A", "%2a"]) {
    it(`v1beta2 serves ready, not deleting pods matching labelSelector (name ${star})`, async () => {
      const { options } = fixture();
      const r = await get(
        options,
        `${CM}/v1beta2/namespaces/default/pods/${star}/rps?labelSelector=${
          encodeURIComponent("app in (web,api)")
        }`,
      );
      assert.equal(r.status, 200);
      assert.equal(
        r.body,
        JSON.stringify({
          kind: "MetricValueList",
          apiVersion: "custom.metrics.k8s.io/v1beta2",
          metadata: {},
          items: [
            {
              describedObject: POD_REF("web-1"),
              metric: { name: "rps" },
              timestamp: TS,
              windowSeconds: 60,
              value: "1500m",
            },
            {
              describedObject: POD_REF("web-5"),
              metric: { name: "rps" },
              timestamp: TS,
              value: "2500",
            },
          ],
        }),
      );
    });
  }

  it("v1beta1 writes metricName, window and a null selector", async () => {
    const { options } = fixture();
    const [code, body] = await getJson(
      options,
      `${CM}/v1beta1/namespaces/default/pods/*/rps?labelSelector=app%3Dweb`,
    );
    assert.equal(code, 200);
    assert.deepEqual(body, {
      kind: "MetricValueList",
      apiVersion: "custom.metrics.k8s.io/v1beta1",
      metadata: {},
      items: [{
        describedObject: POD_REF("web-1"),
        metricName: "rps",
        timestamp: TS,
        window: 60,
        value: "1500m",
        selector: null,
      }],
    });
  });

  it("serves every ready pod with a value when there is no labelSelector", async () => {
    const { options } = fixture();
    const [, body] = await getJson(options, `${CM}/v1beta2/namespaces/default/pods/*/rps`);
    assert.deepEqual(
      (body as { items: { describedObject: { name: string } }[] }).items.map((i) =>
        i.describedObject.name
      ),
      ["web-1", "web-2", "web-5"],
    );
  });

  it("uses getPod when the lister has it", async () => {
    const asked: string[] = [];
    const { options } = fixture();
    options.pods = {
      listPods: () => {
        throw new Error("listPods must not be called");
      },
      getPod: (ns, name) => {
        asked.push(`${ns}/${name}`);
        return PODS.find((p) => p.metadata.name === name);
      },
    };
    const [code, body] = await getJson(
      options,
      `${CM}/v1beta2/namespaces/default/pods/*/rps?labelSelector=app%3Dapi`,
    );
    assert.equal(code, 200);
    assert.equal((body as { items: unknown[] }).items.length, 1);
    assert.deepEqual(asked, [
      "default/web-1",
      "default/web-2",
      "default/web-3",
      "default/web-4",
      "default/web-5",
    ]);
  });

  it("reuses the servable pod set until the lister's version changes", async () => {
    const { options } = fixture();
    let listed = 0;
    let version = 1;
    let pods: KubeObject[] = PODS;
    options.pods = {
      listPods: (ns) => {
        listed++;
        return ns === "default" ? pods : [];
      },
      getPod: () => {
        throw new Error("getPod must not be called when the lister has a version");
      },
      version: () => version,
    };
    const app = createApp(options);
    const names = async (): Promise<string[]> => {
      const res = await app.request(`${CM}/v1beta2/namespaces/default/pods/*/rps`);
      const body = await res.json() as { items: { describedObject: { name: string } }[] };
      return body.items.map((i) => i.describedObject.name);
    };
    assert.deepEqual(await names(), ["web-1", "web-2", "web-5"]);
    assert.deepEqual(await names(), ["web-1", "web-2", "web-5"]);
    assert.equal(listed, 1);
    // a pod leaves without a version change: still the cached set
    pods = PODS.filter((p) => p.metadata.name !== "web-2");
    assert.deepEqual(await names(), ["web-1", "web-2", "web-5"]);
    version++;
    assert.deepEqual(await names(), ["web-1", "web-5"]);
    assert.equal(listed, 2);
  });

  it("serves one pod by name", async () => {
    const { options } = fixture();
    const [code, body] = await getJson(options, `${CM}/v1beta2/namespaces/default/pods/web-2/rps`);
    assert.equal(code, 200);
    assert.deepEqual(body, {
      kind: "MetricValueList",
      apiVersion: "custom.metrics.k8s.io/v1beta2",
      metadata: {},
      items: [{
        describedObject: POD_REF("web-2"),
        metric: { name: "rps" },
        timestamp: TS,
        value: "2",
      }],
    });
  });

  it("answers 404 saying why when no ready pod matches", async () => {
    const { options } = fixture();
    const [code, body] = await getJson(
      options,
      `${CM}/v1beta2/namespaces/default/pods/*/rps?labelSelector=app%3Dnone`,
    );
    assert.equal(code, 404);
    assert.deepEqual(
      body,
      status(
        404,
        "NotFound",
        'the server could not find the metric rps for pods *: no ready pod matching labelSelector "app=none" has a value (values are stored for 5 pods in namespace default)',
      ),
    );
  });

  it("answers 404 with the TTL reason once values expired", async () => {
    const { options, clock } = fixture();
    clock.now = T0 + 900_001;
    const [code, body] = await getJson(options, `${CM}/v1beta2/namespaces/default/pods/*/rps`);
    assert.equal(code, 404);
    assert.deepEqual(
      body,
      status(
        404,
        "NotFound",
        `the server could not find the metric rps for pods *: value expired: last collected at ${TS}, older than the TTL 15m0s`,
      ),
    );
  });

  it("excludes unready and deleting pods", () => {
    assert.deepEqual(PODS.map(isServablePod), [true, true, false, false, true]);
    assert.equal(isServablePod({ metadata: { name: "x" } }), false);
  });
});

describe("custom.metrics.k8s.io object metrics", () => {
  it("serves an object metric with its metric selector in both versions", async () => {
    const { options } = fixture();
    const q = `?metricLabelSelector=${encodeURIComponent("path=api")}`;
    const ref = { kind: "Deployment", namespace: "default", name: "web", apiVersion: "apps/v1" };
    const [c2, v2] = await getJson(
      options,
      `${CM}/v1beta2/namespaces/default/deployments.apps/web/requests${q}`,
    );
    assert.equal(c2, 200);
    assert.deepEqual(v2, {
      kind: "MetricValueList",
      apiVersion: "custom.metrics.k8s.io/v1beta2",
      metadata: {},
      items: [{
        describedObject: ref,
        metric: { name: "requests", selector: { matchLabels: { path: "api" } } },
        timestamp: TS,
        value: "250m",
      }],
    });
    const [c1, v1] = await getJson(
      options,
      `${CM}/v1beta1/namespaces/default/deployments.apps/web/requests${q}`,
    );
    assert.equal(c1, 200);
    assert.deepEqual(v1, {
      kind: "MetricValueList",
      apiVersion: "custom.metrics.k8s.io/v1beta1",
      metadata: {},
      items: [{
        describedObject: ref,
        metricName: "requests",
        timestamp: TS,
        value: "250m",
        selector: { matchLabels: { path: "api" } },
      }],
    });
  });

  it("answers 404 for the same object without the metric selector", async () => {
    const { options } = fixture();
    const [code, body] = await getJson(
      options,
      `${CM}/v1beta2/namespaces/default/deployments.apps/web/requests`,
    );
    assert.equal(code, 404);
    assert.deepEqual(
      body,
      status(
        404,
        "NotFound",
        'the server could not find the metric requests for deployments.apps web: no HPA in namespace default asks for metric "requests" on deployments.apps/web',
      ),
    );
  });

  it("serves metrics of a CRD object (scalingschedules.zalando.org)", async () => {
    const { options } = fixture();
    const [, body] = await getJson(
      options,
      `${CM}/v1beta2/namespaces/default/scalingschedules.zalando.org/nightly/nightly`,
    );
    assert.deepEqual((body as { items: unknown[] }).items, [{
      describedObject: {
        kind: "ScalingSchedule",
        namespace: "default",
        name: "nightly",
        apiVersion: "zalando.org/v1",
      },
      metric: { name: "nightly" },
      timestamp: TS,
      value: "100",
    }]);
  });

  it("serves a cluster-scoped object without a namespace", async () => {
    const { options } = fixture();
    const [code, body] = await getJson(options, `${CM}/v1beta1/nodes/n1/load`);
    assert.equal(code, 200);
    assert.deepEqual((body as { items: unknown[] }).items, [{
      describedObject: { kind: "Node", name: "n1", apiVersion: "v1" },
      metricName: "load",
      timestamp: TS,
      value: "7",
      selector: null,
    }]);
  });

  for (const path of ["namespaces/default/metrics/jobs", "namespaces/default/jobs"]) {
    it(`serves the Namespace object's metric at ${path}`, async () => {
      const { options } = fixture();
      const [code, body] = await getJson(options, `${CM}/v1beta2/${path}`);
      assert.equal(code, 200);
      assert.deepEqual((body as { items: unknown[] }).items, [{
        describedObject: { kind: "Namespace", name: "default", apiVersion: "v1" },
        metric: { name: "jobs" },
        timestamp: TS,
        value: "12",
      }]);
    });
  }

  it("turns a request's matchExpressions into the served selector when the plan has none", async () => {
    const { options, store } = fixture();
    store.upsertPlan(
      custom("svc#0", {
        namespace: "default",
        groupResource: "services",
        objectName: "web",
        metricName: "hits",
        metricSelector: "code in (2xx,3xx),method=GET",
      }),
      T0,
    );
    store.recordSuccess("svc#0", [{ value: 5, timestamp: T0 }], T0);
    const q = encodeURIComponent("method=GET,code in (3xx,2xx)");
    const [code, body] = await getJson(
      options,
      `${CM}/v1beta2/namespaces/default/services/web/hits?metricLabelSelector=${q}`,
    );
    assert.equal(code, 200);
    assert.deepEqual((body as { items: { metric: unknown }[] }).items[0].metric, {
      name: "hits",
      selector: {
        matchLabels: { method: "GET" },
        matchExpressions: [{ key: "code", operator: "In", values: ["2xx", "3xx"] }],
      },
    });
  });
});
