import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/cluster/types.ts";
import { deployment, schedule, withSource } from "./kube_support.ts";

describe("KubeClusterSource", () => {
  it("replaces status with a merge patch on the status subresource", async () => {
    await withSource({
      objects: [
        schedule("night", { lastScaled: "a", extra: { x: 1, y: 2 } }),
        {
          apiVersion: "zalando.org/v1",
          kind: "ClusterScalingSchedule",
          metadata: { name: "global" },
          spec: { schedules: [] },
        },
      ],
    }, async ({ api, source }) => {
      await source.ensure("ScalingSchedule");
      await source.updateStatus("ScalingSchedule", "default", "night", {
        lastScaled: "b",
        extra: { x: 3 },
      });
      await source.updateStatus("ClusterScalingSchedule", undefined, "global", { active: true });
      const patches = api.requests.filter((r) => r.method === "PATCH");
      assert.deepEqual(
        patches.map((p) => [p.path, p.contentType, p.body]),
        [
          [
            "/apis/zalando.org/v1/namespaces/default/scalingschedules/night/status",
            "application/merge-patch+json",
            { status: { lastScaled: "b", extra: { x: 3, y: null } } },
          ],
          [
            "/apis/zalando.org/v1/clusterscalingschedules/global/status",
            "application/merge-patch+json",
            { status: { active: true } },
          ],
        ],
      );
      assert.deepEqual(
        api.object("zalando.org/v1", "ScalingSchedule", "default", "night")?.status,
        {
          lastScaled: "b",
          extra: { x: 3 },
        },
      );
      assert.deepEqual(
        api.object("zalando.org/v1", "ClusterScalingSchedule", undefined, "global")?.status,
        { active: true },
      );
      await assert.rejects(
        source.updateStatus("ScalingSchedule", "default", "missing", {}),
        /^Error: update status of ScalingSchedule default\/missing: PATCH \/apis\/zalando.org\/v1\/namespaces\/default\/scalingschedules\/missing\/status: HTTP 404: scalingschedules.zalando.org "missing" not found$/,
      );
    });
  });

  it("reads and sets replicas through the scale subresource", async () => {
    const rollout: KubeObject = {
      apiVersion: "argoproj.io/v1alpha1",
      kind: "Rollout",
      metadata: { name: "canary", namespace: "default" },
      spec: { replicas: 2 },
      status: { replicas: 2 },
    };
    await withSource({
      objects: [deployment("web", 3), rollout, {
        apiVersion: "apps/v1",
        kind: "StatefulSet",
        metadata: { name: "db", namespace: "default" },
        spec: { replicas: 1 },
        status: { replicas: 1 },
      }],
    }, async ({ api, source }) => {
      assert.deepEqual(await source.getScale("Deployment", "default", "web"), {
        specReplicas: 3,
        statusReplicas: 3,
      });
      await source.setScale("Deployment", "default", "web", 5);
      await source.setScale("StatefulSet", "default", "db", 2);
      await source.setScale("Rollout", "default", "canary", 7);
      assert.deepEqual(await source.getScale("Rollout", "default", "canary"), {
        specReplicas: 7,
        statusReplicas: 2,
      });
      const writes = api.requests.filter((r) => r.method !== "GET");
      assert.deepEqual(writes.map((w) => [w.method, w.path, w.contentType, w.body]), [
        [
          "PATCH",
          "/apis/apps/v1/namespaces/default/deployments/web/scale",
          "application/merge-patch+json",
          { spec: { replicas: 5 } },
        ],
        [
          "PATCH",
          "/apis/apps/v1/namespaces/default/statefulsets/db/scale",
          "application/merge-patch+json",
          { spec: { replicas: 2 } },
        ],
        [
          "PATCH",
          "/apis/argoproj.io/v1alpha1/namespaces/default/rollouts/canary/scale",
          "application/merge-patch+json",
          { spec: { replicas: 7 } },
        ],
      ]);
      assert.equal(api.object("apps/v1", "Deployment", "default", "web")?.spec.replicas, 5);
      assert.deepEqual(
        api.requestsTo("GET", /\/scale$/).map((r) => r.path),
        [
          "/apis/apps/v1/namespaces/default/deployments/web/scale",
          "/apis/argoproj.io/v1alpha1/namespaces/default/rollouts/canary/scale",
        ],
      );
      await assert.rejects(
        source.setScale("Deployment", "default", "nope", 1),
        /^Error: set scale of Deployment default\/nope: PATCH \/apis\/apps\/v1\/namespaces\/default\/deployments\/nope\/scale: HTTP 404: deployments.apps "nope" not found$/,
      );
      await assert.rejects(source.getScale("Pod", "default", "x"), /kind "Pod" has no scale/);
    });
  });

  it("patches an object itself with a JSON merge patch", async () => {
    const hpa: KubeObject = {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "web", namespace: "shop", annotations: { keep: "me" } },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
        minReplicas: 2,
        maxReplicas: 5,
      },
    };
    await withSource({ objects: [hpa] }, async ({ api, source }) => {
      const patch = {
        metadata: { annotations: { "estafette.io/hpa-scaler-state": "{}" } },
        spec: { minReplicas: 6, maxReplicas: 7 },
      };
      await source.patch("HorizontalPodAutoscaler", "shop", "web", patch);
      const writes = api.requests.filter((r) => r.method !== "GET");
      assert.deepEqual(writes.map((w) => [w.method, w.path, w.contentType, w.body]), [[
        "PATCH",
        "/apis/autoscaling/v2/namespaces/shop/horizontalpodautoscalers/web",
        "application/merge-patch+json",
        patch,
      ]]);
      const now = api.object("autoscaling/v2", "HorizontalPodAutoscaler", "shop", "web");
      assert.deepEqual([now?.spec.minReplicas, now?.spec.maxReplicas], [6, 7]);
      assert.deepEqual(now?.metadata.annotations, {
        keep: "me",
        "estafette.io/hpa-scaler-state": "{}",
      });
      await assert.rejects(
        source.patch("HorizontalPodAutoscaler", "shop", "nope", patch),
        /^Error: patch HorizontalPodAutoscaler shop\/nope: PATCH \/apis\/autoscaling\/v2\/namespaces\/shop\/horizontalpodautoscalers\/nope: HTTP 404: /,
      );
    });
  });

  it("creates, reads and deletes objects (a missing one reads as null and deletes as done)", async () => {
    await withSource({ objects: [] }, async ({ api, source }) => {
      const hpa: KubeObject = {
        metadata: { name: "rev-1", namespace: "shop", labels: { app: "rev" } },
        spec: {
          scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "rev-1" },
          maxReplicas: 3,
        },
      };
      const created = await source.create("HorizontalPodAutoscaler", hpa);
      assert.equal(created.metadata.name, "rev-1");
      const writes = api.requests.filter((r) => r.method !== "GET");
      assert.deepEqual(writes.map((w) => [w.method, w.path]), [
        ["POST", "/apis/autoscaling/v2/namespaces/shop/horizontalpodautoscalers"],
      ]);
      assert.deepEqual(
        (writes[0].body as KubeObject & { kind: string; apiVersion: string }).kind,
        "HorizontalPodAutoscaler",
      );
      const read = await source.read("HorizontalPodAutoscaler", "shop", "rev-1");
      assert.equal(read?.spec.maxReplicas, 3);
      assert.equal(await source.read("HorizontalPodAutoscaler", "shop", "nope"), null);
      await source.delete("HorizontalPodAutoscaler", "shop", "rev-1");
      assert.equal(await source.read("HorizontalPodAutoscaler", "shop", "rev-1"), null);
      await source.delete("HorizontalPodAutoscaler", "shop", "rev-1");
      await assert.rejects(
        source.create("HorizontalPodAutoscaler", { ...hpa, metadata: { ...hpa.metadata } }).then(
          () => source.create("HorizontalPodAutoscaler", hpa),
        ),
        /^Error: create HorizontalPodAutoscaler shop\/rev-1: POST .*HTTP 409/,
      );
    });
  });
});
