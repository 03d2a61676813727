/**
 * Knative's bring-your-own mode (issue 47, point 6) with both controllers on one cluster: a
 * PodAutoscaler of the HPA class with `scaled-object-auto-create: "false"` and the user's own
 * ScaledObject (its HPA named after the PodAutoscaler, as autoscaler-keda's users write it). The
 * ScaledObject controller writes KEDA's HPA; the Knative reconciler makes no HPA and reports the
 * PodAutoscaler's scale from that HPA.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/cluster/types.ts";
import { KedaController } from "../../src/controllers/keda.ts";
import { KnativeReconciler } from "../../src/controllers/knative.ts";
import { memoryLogger } from "../../src/engine/logger.ts";
import { MemoryCluster, RecordingWriter, settle } from "../engine/support.ts";

const PA: KubeObject = {
  apiVersion: "autoscaling.internal.knative.dev/v1alpha1",
  kind: "PodAutoscaler",
  metadata: {
    name: "rev-1",
    namespace: "shop",
    uid: "uid-pa",
    generation: 1,
    annotations: {
      "autoscaling.knative.dev/class": "hpa.autoscaling.knative.dev",
      "autoscaling.knative.dev/metric": "cpu",
      "autoscaling.knative.dev/target": "70",
      "autoscaling.knative.dev/scaled-object-auto-create": "false",
    },
  },
  spec: {
    scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "rev-1-deployment" },
    protocolType: "http1",
  },
};

const SO: KubeObject = {
  apiVersion: "keda.sh/v1alpha1",
  kind: "ScaledObject",
  metadata: { name: "rev-1", namespace: "shop", uid: "uid-so" },
  spec: {
    scaleTargetRef: { name: "rev-1-deployment" },
    minReplicaCount: 1,
    maxReplicaCount: 5,
    advanced: { horizontalPodAutoscalerConfig: { name: "rev-1" } },
    triggers: [{
      type: "prometheus",
      metadata: {
        serverAddress: "http://prometheus.monitoring:9090",
        query: 'sum(rate(http_requests_total{service="rev-1"}[1m]))',
        threshold: "5",
      },
    }],
  },
};

const DEPLOYMENT: KubeObject = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "rev-1-deployment", namespace: "shop", uid: "uid-d" },
  spec: { replicas: 1, template: { spec: { containers: [{ name: "user-container" }] } } },
};

describe("Knative bring-your-own ScaledObject", () => {
  it("scales through the user's ScaledObject: KEDA's HPA, the PodAutoscaler's status from it", async () => {
    const cluster = new MemoryCluster();
    for (
      const [kind, o] of [["Deployment", DEPLOYMENT], ["PodAutoscaler", PA], [
        "ScaledObject",
        SO,
      ]] as const
    ) cluster.set(kind, o);
    const writer = new RecordingWriter(cluster);
    const keda = new KedaController({
      cluster,
      writer,
      write: true,
      version: "9.9.9",
      setTimer: () => null,
      clearTimer: () => {},
      logger: memoryLogger(),
    });
    const knative = new KnativeReconciler({
      cluster,
      writer,
      write: true,
      config: { prometheusAddress: "http://prometheus.monitoring:9090" },
      version: "9.9.9",
      setTimer: () => null,
      clearTimer: () => {},
      logger: memoryLogger(),
    });
    await keda.start();
    await knative.start();
    for (let i = 0; i < 4; i++) {
      await settle();
      await keda.idle();
      await knative.idle();
    }
    // one HPA, KEDA's, named after the PodAutoscaler
    assert.deepEqual(
      writer.creates.filter((c) => c.kind === "HorizontalPodAutoscaler").map((c) => c.name),
      ["shop/rev-1"],
    );
    const hpa = cluster.get("HorizontalPodAutoscaler", "shop", "rev-1")!;
    assert.equal(hpa.metadata.labels?.["scaledobject.keda.sh/name"], "rev-1");
    assert.deepEqual(hpa.spec.metrics[0].external.metric.name, "s0-prometheus");
    // the HPA controller's view of it, and the PodAutoscaler following it
    cluster.set("HorizontalPodAutoscaler", {
      ...hpa,
      status: { currentReplicas: 3, desiredReplicas: 4 },
    });
    knative.resync();
    for (let i = 0; i < 3; i++) {
      await settle();
      await knative.idle();
    }
    const status = cluster.get("PodAutoscaler", "shop", "rev-1")!.status;
    assert.deepEqual([status.desiredScale, status.actualScale], [4, 3]);
    await keda.stop();
    await knative.stop();
  });
});
