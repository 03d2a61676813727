/**
 * The Knative HPA-class reconciler (issue 23) on an in-memory cluster: what it creates, patches,
 * deletes and writes in PodAutoscaler status, and what it leaves alone.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/cluster/types.ts";
import { hpaPatch, KnativeReconciler } from "../../src/controllers/knative.ts";
import { memoryLogger } from "../../src/engine/logger.ts";
import { MemoryCluster, RecordingWriter, settle } from "../engine/support.ts";

// deno-lint-ignore no-explicit-any
type Obj = any;

const NOW = Date.parse("2026-11-25T10:00:00Z");
const CLASS = { "autoscaling.knative.dev/class": "hpa.autoscaling.knative.dev" };

function pa(name: string, annotations: Record<string, string>, uid = `uid-${name}`): KubeObject {
  return {
    apiVersion: "autoscaling.internal.knative.dev/v1alpha1",
    kind: "PodAutoscaler",
    metadata: {
      name,
      namespace: "shop",
      uid,
      generation: 1,
      labels: { "serving.knative.dev/service": "web" },
      annotations: { ...CLASS, ...annotations },
    },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: `${name}-deployment` },
      protocolType: "http1",
    },
  };
}

function deployment(name: string, annotations: Record<string, string>): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: "shop", uid: `uid-${name}`, annotations },
    spec: { replicas: 1, selector: { matchLabels: { app: name } } },
  };
}

function setup(
  objects: [string, KubeObject][],
  options: { leader?: boolean; write?: boolean } = {},
) {
  const replans: string[] = [];
  const cluster = new MemoryCluster();
  for (const [kind, o] of objects) cluster.set(kind as never, o);
  const writer = new RecordingWriter(cluster);
  const logger = memoryLogger();
  const reconciler = new KnativeReconciler({
    cluster,
    writer,
    write: options.write ?? true,
    config: { prometheusAddress: "http://prometheus:9090" },
    version: "1.2.3",
    onPlansChanged: (ns, name) => replans.push(`${ns}/${name}`),
    now: () => NOW,
    setTimer: () => null,
    clearTimer: () => {},
    logger,
    isLeader: () => options.leader ?? true,
  });
  const get = (kind: string, name: string) => cluster.get(kind as never, "shop", name);
  const run = async () => {
    await settle();
    await reconciler.idle();
    await settle();
    await reconciler.idle();
  };
  return { cluster, writer, logger, reconciler, get, run, replans };
}

const CUSTOM = {
  "autoscaling.knative.dev/metric": "rps",
  "autoscaling.knative.dev/target": "5",
  "autoscaling.knative.dev/prometheus-query":
    'sum(rate(requests{pod=~"{{ .revisionName }}.*"}[1m]))',
  "autoscaling.knative.dev/max-scale": "10",
};

describe("KnativeReconciler: PodAutoscalers", () => {
  it("creates the HPA and the SKS owned by the PA, then writes the PA status from them", async () => {
    const s = setup([["PodAutoscaler", pa("rev-1", CUSTOM)]]);
    await s.reconciler.start();
    await s.run();
    const hpa = s.get("HorizontalPodAutoscaler", "rev-1")!;
    assert.equal((hpa.metadata.ownerReferences as Obj[])[0].uid, "uid-rev-1");
    assert.equal((hpa.metadata.ownerReferences as Obj[])[0].controller, true);
    assert.equal(hpa.metadata.labels?.["app.kubernetes.io/managed-by"], "hpa-metrics-adapter");
    assert.deepEqual(hpa.spec.scaleTargetRef, {
      apiVersion: "apps/v1",
      kind: "Deployment",
      name: "rev-1-deployment",
    });
    assert.deepEqual([hpa.spec.minReplicas, hpa.spec.maxReplicas], [1, 10]);
    // KEDA's HPA of the ScaledObject autoscaler-keda would create
    assert.deepEqual(hpa.metadata.labels, {
      "app.kubernetes.io/name": "rev-1",
      "app.kubernetes.io/version": "1.2.3",
      "app.kubernetes.io/part-of": "rev-1",
      "app.kubernetes.io/managed-by": "hpa-metrics-adapter",
      "serving.knative.dev/service": "web",
      "scaledobject.keda.sh/name": "rev-1",
    });
    assert.deepEqual(hpa.spec.metrics, [{
      type: "External",
      external: {
        metric: {
          name: "s0-prometheus",
          selector: { matchLabels: { "scaledobject.keda.sh/name": "rev-1" } },
        },
        target: { type: "AverageValue", averageValue: "5" },
      },
    }]);
    // its metric: KEDA's plan, the trigger's values for the collector, KEDA's serving answer
    const plans = s.reconciler.plansFor(hpa)!;
    assert.deepEqual(
      plans.plans.map((p) => [p.metricName, p.collector, p.config["keda-scaled-object"], p.error]),
      [["s0-prometheus", "keda-prometheus", "shop/rev-1", null]],
    );
    const trigger = s.reconciler.trigger("shop/rev-1", 0)!;
    assert.deepEqual(
      [trigger.type, trigger.values.query, trigger.values.serverAddress, trigger.values.namespace],
      ["prometheus", 'sum(rate(requests{pod=~"rev-1.*"}[1m]))', "http://prometheus:9090", "shop"],
    );
    assert.equal(trigger.digest, plans.plans[0].config["keda-params"]);
    assert.deepEqual(s.reconciler.scaledObject("shop", "rev-1"), {
      hpaName: "rev-1",
      metricNames: ["s0-prometheus"],
    });
    assert.deepEqual(s.replans, ["shop/rev-1"]);
    const sks = s.get("ServerlessService", "rev-1")!;
    assert.equal(sks.spec.mode, "Serve");
    assert.equal((sks.metadata.ownerReferences as Obj[])[0].uid, "uid-rev-1");
    const status = s.writer.statusUpdates.at(-1)!.status as {
      conditions: { type: string; status: string; reason?: string }[];
    };
    assert.deepEqual(
      status.conditions.map((c) => `${c.type}=${c.status}${c.reason ? `(${c.reason})` : ""}`),
      [
        "Active=True",
        "Ready=Unknown(NotReady)",
        "SKSReady=Unknown(NotReady)",
        "ScaleTargetInitialized=Unknown",
      ],
    );
    // the HPA controller and the SKS reconciler report: the PA follows
    s.cluster.set("ServerlessService", {
      ...sks,
      status: {
        serviceName: "rev-1",
        privateServiceName: "rev-1-private",
        conditions: [{ type: "Ready", status: "True" }],
      },
    });
    s.cluster.set("HorizontalPodAutoscaler", {
      ...s.get("HorizontalPodAutoscaler", "rev-1")!,
      status: { desiredReplicas: 5, currentReplicas: 3 },
    });
    await s.run();
    const paNow = s.get("PodAutoscaler", "rev-1")!;
    assert.deepEqual(
      [paNow.status.desiredScale, paNow.status.actualScale, paNow.status.metricsServiceName],
      [5, 3, "rev-1-private"],
    );
    assert.equal(
      paNow.status.conditions.find((c: { type: string }) => c.type === "Ready").status,
      "True",
    );
    // nothing changes: nothing is written
    const writes = [
      s.writer.statusUpdates.length,
      s.writer.patches.length,
      s.writer.creates.length,
    ];
    s.reconciler.resync();
    await s.run();
    assert.deepEqual(
      [s.writer.statusUpdates.length, s.writer.patches.length, s.writer.creates.length],
      writes,
    );
    await s.reconciler.stop();
  });

  it("patches the HPA when the annotations change, and only what it sets", async () => {
    const s = setup([["PodAutoscaler", pa("rev-1", CUSTOM)]]);
    await s.reconciler.start();
    await s.run();
    const p = s.get("PodAutoscaler", "rev-1")!;
    s.cluster.set("PodAutoscaler", {
      ...p,
      metadata: {
        ...p.metadata,
        annotations: { ...p.metadata.annotations, "autoscaling.knative.dev/max-scale": "4" },
      },
    });
    await s.run();
    assert.equal(s.get("HorizontalPodAutoscaler", "rev-1")!.spec.maxReplicas, 4);
    assert.equal(s.writer.patches.length, 1);
    assert.deepEqual(Object.keys(s.writer.patches[0].patch as object).sort(), ["metadata", "spec"]);
    await s.reconciler.stop();
  });

  it("says NotOwned for an HPA of the PA's name that another owns, and never touches it", async () => {
    const foreign: KubeObject = {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "rev-1", namespace: "shop" },
      spec: { scaleTargetRef: { kind: "Deployment", name: "x" }, maxReplicas: 2 },
    };
    const s = setup([["HorizontalPodAutoscaler", foreign], ["PodAutoscaler", pa("rev-1", CUSTOM)]]);
    await s.reconciler.start();
    await s.run();
    assert.deepEqual([s.writer.patches, s.writer.creates.map((c) => c.kind)], [[], []]);
    const active = s.get("PodAutoscaler", "rev-1")!.status.conditions.find((c: { type: string }) =>
      c.type === "Active"
    );
    assert.deepEqual([active.status, active.reason, active.message], [
      "False",
      "NotOwned",
      'There is an existing HorizontalPodAutoscaler "rev-1" that we do not own.',
    ]);
    await s.reconciler.stop();
  });

  it("puts a mapping error in an InvalidConfiguration condition naming the annotation", async () => {
    const s = setup([[
      "PodAutoscaler",
      pa("rev-1", { ...CUSTOM, "autoscaling.knative.dev/metric-type": "foo" }),
    ]]);
    await s.reconciler.start();
    await s.run();
    assert.equal(s.writer.creates.length, 0);
    const active = s.get("PodAutoscaler", "rev-1")!.status.conditions.find((c: { type: string }) =>
      c.type === "Active"
    );
    assert.equal(active.reason, "InvalidConfiguration");
    assert.match(active.message, /metric-type/);
    assert.match(active.message, /foo/);
    await s.reconciler.stop();
  });

  it("resolves a TriggerAuthentication's bearer token as KEDA does, for the collector only, and says KEDA's error without it", async () => {
    const AUTH = {
      ...CUSTOM,
      "autoscaling.knative.dev/trigger-prometheus-auth-name": "prom-auth",
      "autoscaling.knative.dev/trigger-prometheus-auth-modes": "bearer",
    };
    const missing = setup([["PodAutoscaler", pa("rev-1", AUTH)]]);
    await missing.reconciler.start();
    await missing.run();
    assert.equal(missing.writer.creates.length, 0);
    const active = missing.get("PodAutoscaler", "rev-1")!.status.conditions.find((
      c: { type: string },
    ) => c.type === "Active");
    assert.equal(active.reason, "InvalidConfiguration");
    assert.equal(
      active.message,
      "trigger 0 of the ScaledObject (annotation autoscaling.knative.dev/metric): failed to ensure HPA is correctly created for ScaledObject: error parsing prometheus metadata: error parsing prometheus metadata: bearer token=<empty> is required when bearer auth is enabled",
    );
    assert.equal(missing.reconciler.trigger("shop/rev-1", 0), undefined);
    await missing.reconciler.stop();

    const s = setup([
      ["TriggerAuthentication", {
        apiVersion: "keda.sh/v1alpha1",
        kind: "TriggerAuthentication",
        metadata: { name: "prom-auth", namespace: "shop" },
        spec: {
          secretTargetRef: [{ parameter: "bearerToken", name: "prom-secret", key: "token" }],
        },
      }],
      ["Secret", {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "prom-secret", namespace: "shop" },
        data: { token: btoa("s3cret") },
      } as KubeObject],
      ["PodAutoscaler", pa("rev-1", AUTH)],
    ]);
    await s.reconciler.start();
    await s.run();
    const hpa = s.get("HorizontalPodAutoscaler", "rev-1")!;
    const trigger = s.reconciler.trigger("shop/rev-1", 0)!;
    assert.deepEqual([trigger.values.authModes, trigger.values.bearerToken], ["bearer", "s3cret"]);
    // the secret never appears in the HPA or the plans
    assert.ok(!JSON.stringify(hpa).includes("s3cret"));
    assert.ok(!JSON.stringify(s.reconciler.plansFor(hpa)).includes("s3cret"));
    await s.reconciler.stop();
  });

  it("on a follower: the ScaledObject, its plans and triggers (every replica serves), and no write", async () => {
    const s = setup([["PodAutoscaler", pa("rev-1", CUSTOM)]], { leader: false });
    await s.reconciler.start();
    await s.run();
    assert.deepEqual([s.writer.creates, s.writer.patches, s.writer.statusUpdates], [[], [], []]);
    assert.equal(s.reconciler.trigger("shop/rev-1", 0)?.type, "prometheus");
    assert.deepEqual(s.reconciler.scaledObject("shop", "rev-1")?.metricNames, ["s0-prometheus"]);
    await s.reconciler.stop();
  });

  it("plans only the HPAs it made; a PA going away forgets its ScaledObject", async () => {
    const s = setup([["PodAutoscaler", pa("rev-1", CUSTOM)]]);
    await s.reconciler.start();
    await s.run();
    const hpa = s.get("HorizontalPodAutoscaler", "rev-1")!;
    const foreign = { ...hpa, metadata: { ...hpa.metadata, labels: {} } } as KubeObject;
    assert.equal(s.reconciler.plansFor(foreign), undefined);
    s.cluster.delete("PodAutoscaler", "shop", "rev-1");
    s.reconciler.resync();
    await s.reconciler.idle();
    s.cluster.set("PodAutoscaler", pa("rev-2", CUSTOM));
    await s.run();
    assert.equal(s.reconciler.scaledObject("shop", "rev-1"), undefined);
    assert.deepEqual(s.reconciler.plansFor(hpa), { plans: [], inputs: "knative:none" });
    await s.reconciler.stop();
  });

  it("marks FailedCreate when the HPA cannot be created", async () => {
    const s = setup([["PodAutoscaler", pa("rev-1", CUSTOM)]]);
    s.writer.failCreate = new Error("forbidden");
    await s.reconciler.start();
    await s.run();
    const active = s.get("PodAutoscaler", "rev-1")!.status.conditions.find((c: { type: string }) =>
      c.type === "Active"
    );
    assert.deepEqual([active.reason, active.message], [
      "FailedCreate",
      'Failed to create HorizontalPodAutoscaler "rev-1".',
    ]);
    await s.reconciler.stop();
  });

  it("creates nothing with scaled-object-auto-create false, and still follows the user's HPA", async () => {
    const own: KubeObject = {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "rev-1", namespace: "shop" },
      spec: { scaleTargetRef: { kind: "Deployment", name: "x" }, maxReplicas: 2 },
      status: { desiredReplicas: 2, currentReplicas: 2 },
    };
    const s = setup([
      ["HorizontalPodAutoscaler", own],
      [
        "PodAutoscaler",
        pa("rev-1", { ...CUSTOM, "autoscaling.knative.dev/scaled-object-auto-create": "false" }),
      ],
    ]);
    await s.reconciler.start();
    await s.run();
    assert.deepEqual(s.writer.creates.map((c) => c.kind), ["ServerlessService"]);
    assert.deepEqual(s.writer.patches, []);
    const status = s.get("PodAutoscaler", "rev-1")!.status;
    assert.deepEqual([status.desiredScale, status.actualScale], [2, 2]);
    await s.reconciler.stop();
  });

  it("writes nothing as a follower or in file mode", async () => {
    for (const options of [{ leader: false }, { write: false }]) {
      const s = setup([["PodAutoscaler", pa("rev-1", CUSTOM)]], options);
      await s.reconciler.start();
      await s.run();
      assert.deepEqual(
        [s.writer.creates, s.writer.patches, s.writer.statusUpdates],
        [[], [], []],
        JSON.stringify(options),
      );
      await s.reconciler.stop();
    }
  });

  it("leaves PodAutoscalers of another class alone", async () => {
    const kpa = pa("rev-1", CUSTOM);
    kpa.metadata.annotations!["autoscaling.knative.dev/class"] = "kpa.autoscaling.knative.dev";
    const s = setup([["PodAutoscaler", kpa]]);
    await s.reconciler.start();
    await s.run();
    assert.deepEqual([s.writer.creates, s.writer.statusUpdates], [[], []]);
    await s.reconciler.stop();
  });
});

describe("KnativeReconciler: annotated workloads", () => {
  const ANNOTATED = {
    ...CLASS,
    "autoscaling.knative.dev/metric": "cpu",
    "autoscaling.knative.dev/target": "60",
    "autoscaling.knative.dev/max-scale": "6",
  };

  it("creates an HPA owned by the Deployment, and deletes it when the class annotation goes", async () => {
    const s = setup([["Deployment", deployment("api", ANNOTATED)]]);
    await s.reconciler.start();
    await s.run();
    const hpa = s.get("HorizontalPodAutoscaler", "api")!;
    assert.deepEqual(hpa.spec.scaleTargetRef, {
      apiVersion: "apps/v1",
      kind: "Deployment",
      name: "api",
    });
    assert.deepEqual(hpa.spec.metrics, [{
      type: "Resource",
      resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 60 } },
    }]);
    assert.equal((hpa.metadata.ownerReferences as Obj[])[0].kind, "Deployment");
    assert.equal(s.get("ServerlessService", "api"), undefined);
    const d = s.get("Deployment", "api")!;
    s.cluster.set("Deployment", { ...d, metadata: { ...d.metadata, annotations: {} } });
    await s.run();
    assert.equal(s.get("HorizontalPodAutoscaler", "api"), undefined);
    assert.deepEqual(s.writer.deletes, [{ kind: "HorizontalPodAutoscaler", name: "shop/api" }]);
    await s.reconciler.stop();
  });

  it("reports a webhook violation as one Warning event on the workload", async () => {
    const s = setup([[
      "Deployment",
      deployment("api", { ...ANNOTATED, "autoscaling.knative.dev/window": "3s" }),
    ]]);
    await s.reconciler.start();
    await s.run();
    s.reconciler.resync();
    await s.run();
    assert.equal(s.writer.creates.length, 0);
    assert.equal(s.writer.events.length, 1);
    assert.equal(s.writer.events[0].event.reason, "InvalidAutoscalingAnnotations");
    assert.match(s.writer.events[0].event.message, /window/);
    assert.match(s.writer.events[0].event.message, /3s/);
    await s.reconciler.stop();
  });

  it("never deletes an HPA it did not make", async () => {
    const users: KubeObject = {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "api", namespace: "shop" },
      spec: { scaleTargetRef: { kind: "Deployment", name: "api" }, maxReplicas: 2 },
    };
    const s = setup([["HorizontalPodAutoscaler", users], ["Deployment", deployment("api", {})]]);
    await s.reconciler.start();
    await s.run();
    assert.deepEqual(s.writer.deletes, []);
    await s.reconciler.stop();
  });
});

describe("hpaPatch", () => {
  it("sees no difference in fields the API server defaulted, and removes a top-level field we dropped", () => {
    const desired = {
      metadata: { name: "a", labels: { x: "1" } },
      spec: {
        minReplicas: 1,
        maxReplicas: 3,
        metrics: [{
          type: "Resource",
          resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 70 } },
        }],
      },
    } as unknown as KubeObject;
    desired.spec.behavior = {
      scaleUp: { stabilizationWindowSeconds: 60 },
      scaleDown: { stabilizationWindowSeconds: 60 },
    };
    // what the API server fills in around the rules we set
    const served = structuredClone(desired);
    served.spec.behavior.scaleUp.selectPolicy = "Max";
    served.spec.behavior.scaleUp.policies = [{ type: "Pods", value: 4, periodSeconds: 15 }];
    served.spec.behavior.scaleDown.selectPolicy = "Max";
    assert.equal(hpaPatch(served, desired), null);
    delete desired.spec.behavior;
    const withBehavior = structuredClone(desired);
    withBehavior.spec.behavior = { scaleUp: { stabilizationWindowSeconds: 60 } };
    assert.deepEqual(hpaPatch(withBehavior, desired), {
      spec: { ...desired.spec, behavior: null },
    });
  });
});
