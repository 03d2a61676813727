/**
 * The ScaledObject controller of `--keda-scaled-objects` (issue 47) on an in-memory cluster:
 * the HPA and status it writes (as KEDA v2.20.2 writes them), what it reverts, what it leaves
 * to KEDA's operator, its errors, and the resolved triggers and plans it hands the engine.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/cluster/types.ts";
import { KEDA_NOT_OURS_REASON, KedaController } from "../../src/controllers/keda.ts";
import { memoryLogger } from "../../src/engine/logger.ts";
import { MemoryCluster, RecordingWriter, settle } from "../engine/support.ts";

// deno-lint-ignore no-explicit-any
type Obj = any;

function deployment(env: Obj[] = []): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: "shop", uid: "uid-web" },
    spec: {
      replicas: 3,
      selector: { matchLabels: { app: "web" } },
      template: { spec: { containers: [{ name: "app", image: "x", env }] } },
    },
  };
}

function scaledObject(spec: Obj = {}, meta: Obj = {}): KubeObject {
  return {
    apiVersion: "keda.sh/v1alpha1",
    kind: "ScaledObject",
    metadata: { name: "web", namespace: "shop", uid: "uid-so", generation: 1, ...meta },
    spec: {
      scaleTargetRef: { name: "web" },
      maxReplicaCount: 10,
      triggers: [
        {
          type: "prometheus",
          metadata: {
            serverAddress: "http://prometheus:9090",
            query: "sum(rate(http_requests_total[1m]))",
            threshold: "100.5",
          },
          authenticationRef: { name: "prom-auth" },
        },
        {
          type: "cron",
          metadata: {
            timezone: "Europe/Berlin",
            start: "0 8 * * *",
            end: "0 20 * * *",
            desiredReplicas: "5",
          },
        },
        { type: "cpu", metricType: "Utilization", metadata: { value: "60" } },
      ],
      ...spec,
    },
  };
}

const AUTH: KubeObject = {
  apiVersion: "keda.sh/v1alpha1",
  kind: "TriggerAuthentication",
  metadata: { name: "prom-auth", namespace: "shop" },
  spec: {
    secretTargetRef: [{ parameter: "bearerToken", name: "prom-secret", key: "token" }],
  },
};
const SECRET: KubeObject = {
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name: "prom-secret", namespace: "shop" },
  // deno-lint-ignore no-explicit-any
  ...({ data: { token: btoa("s3cret\n") } } as any),
};

/** The HPA of ScaledObject shop/web as keda-operator writes it: left to KEDA. */
const KEDA_OPERATORS_HPA: KubeObject = {
  apiVersion: "autoscaling/v2",
  kind: "HorizontalPodAutoscaler",
  metadata: {
    name: "keda-hpa-web",
    namespace: "shop",
    labels: { "app.kubernetes.io/managed-by": "keda-operator" },
    ownerReferences: [{
      apiVersion: "keda.sh/v1alpha1",
      kind: "ScaledObject",
      name: "web",
      uid: "uid-so",
      controller: true,
    }],
  },
  spec: { maxReplicas: 10, metrics: [] },
};

function setup(
  objects: [string, KubeObject][],
  options: { leader?: boolean; selector?: string } = {},
) {
  const cluster = new MemoryCluster();
  for (const [kind, o] of objects) cluster.set(kind as never, o);
  const writer = new RecordingWriter(cluster);
  const logger = memoryLogger();
  const replans: string[] = [];
  const pendings: Obj[] = [];
  /** The writes made when each replan came. */
  const writesAtReplan: number[] = [];
  const controller = new KedaController({
    cluster,
    writer,
    write: true,
    version: "9.9.9",
    selector: options.selector ?? "",
    onPlansChanged: (ns, name, pending) => {
      replans.push(`${ns}/${name}`);
      pendings.push(pending ?? null);
      writesAtReplan.push(
        writer.creates.length + writer.patches.length + writer.statusUpdates.length,
      );
    },
    setTimer: () => null,
    clearTimer: () => {},
    logger,
    isLeader: () => options.leader ?? true,
  });
  const run = async () => {
    for (let i = 0; i < 3; i++) {
      await settle();
      await controller.idle();
    }
  };
  const get = (kind: string, name: string) => cluster.get(kind as never, "shop", name);
  return { cluster, writer, controller, run, get, replans, pendings, writesAtReplan, logger };
}

const ALL: [string, KubeObject][] = [
  ["Deployment", deployment()],
  ["TriggerAuthentication", AUTH],
  ["Secret", SECRET],
  ["ScaledObject", scaledObject()],
];

describe("KedaController", () => {
  it("writes KEDA's HPA, the ScaledObject's label and status, and then nothing more", async () => {
    const s = setup(ALL);
    await s.controller.start();
    await s.run();
    const hpa = s.get("HorizontalPodAutoscaler", "keda-hpa-web")!;
    assert.deepEqual(hpa.metadata.labels, {
      "app.kubernetes.io/name": "keda-hpa-web",
      "app.kubernetes.io/version": "9.9.9",
      "app.kubernetes.io/part-of": "web",
      "app.kubernetes.io/managed-by": "hpa-metrics-adapter",
      "scaledobject.keda.sh/name": "web",
    });
    assert.deepEqual(hpa.metadata.ownerReferences, [{
      apiVersion: "keda.sh/v1alpha1",
      kind: "ScaledObject",
      name: "web",
      uid: "uid-so",
      controller: true,
      blockOwnerDeletion: true,
    }]);
    assert.deepEqual(hpa.spec, {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
      minReplicas: 1,
      maxReplicas: 10,
      metrics: [
        {
          type: "External",
          external: {
            metric: {
              name: "s0-prometheus",
              selector: { matchLabels: { "scaledobject.keda.sh/name": "web" } },
            },
            target: { type: "AverageValue", averageValue: "100.500" },
          },
        },
        {
          type: "External",
          external: {
            metric: {
              name: "s1-cron-Europe-Berlin-08xxx-020xxx",
              selector: { matchLabels: { "scaledobject.keda.sh/name": "web" } },
            },
            target: { type: "AverageValue", averageValue: "1" },
          },
        },
        {
          type: "Resource",
          resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 60 } },
        },
      ],
    });
    const so = s.get("ScaledObject", "web")!;
    assert.equal(so.metadata.labels?.["scaledobject.keda.sh/name"], "web");
    assert.deepEqual(so.status, {
      conditions: [
        {
          type: "Ready",
          status: "True",
          reason: "ScaledObjectReady",
          message: "ScaledObject is defined correctly and is ready for scaling",
        },
        { type: "Active", status: "Unknown" },
        {
          type: "Fallback",
          status: "False",
          reason: "NoFallbackFound",
          message: "No fallbacks are active on this scaled object",
        },
        { type: "Paused", status: "False" },
      ],
      scaleTargetKind: "apps/v1.Deployment",
      scaleTargetGVKR: {
        group: "apps",
        version: "v1",
        kind: "Deployment",
        resource: "deployments",
      },
      originalReplicaCount: 3,
      triggersTypes: "prometheus,cron,cpu",
      authenticationsTypes: "prom-auth",
      externalMetricNames: ["s0-prometheus", "s1-cron-Europe-Berlin-08xxx-020xxx"],
      resourceMetricNames: ["cpu"],
      hpaName: "keda-hpa-web",
    });
    assert.deepEqual(s.writer.events.map((e) => [e.event.type, e.event.reason]), [
      ["Normal", "ScaledObjectReady"],
    ]);
    const writes = s.writer.creates.length + s.writer.patches.length +
      s.writer.statusUpdates.length;
    // a resync changes nothing, so writes nothing
    s.controller.resync();
    await s.run();
    assert.equal(
      s.writer.creates.length + s.writer.patches.length + s.writer.statusUpdates.length,
      writes,
    );
    assert.deepEqual(s.replans, ["shop/keda-hpa-web"]);
    // the status page's view of it
    assert.deepEqual(s.controller.statusOf(hpa), {
      name: "web",
      owner: "hpa-metrics-adapter",
      ready: {
        status: "True",
        reason: "ScaledObjectReady",
        message: "ScaledObject is defined correctly and is ready for scaling",
      },
      triggers: [
        {
          index: 0,
          type: "prometheus",
          name: null,
          metricName: "s0-prometheus",
          activation: 0,
          active: null,
        },
        {
          index: 1,
          type: "cron",
          name: null,
          metricName: "s1-cron-Europe-Berlin-08xxx-020xxx",
          activation: null,
          active: null,
        },
        { index: 2, type: "cpu", name: null, metricName: null, activation: null, active: null },
      ],
      loop: {
        active: { status: "Unknown" },
        lastActiveTime: null,
        cooldownEndsAt: null,
        next: "its first check",
      },
    });
    assert.equal(s.controller.statusOf({ metadata: { name: "x", namespace: "shop" } }), null);
  });

  it("reads the trigger's Secret through its TriggerAuthentication, for its plan only", async () => {
    const s = setup(ALL);
    await s.controller.start();
    await s.run();
    const t = s.controller.trigger("shop/web", 0)!;
    assert.equal(t.type, "prometheus");
    assert.equal(t.values.bearerToken, "s3cret"); // trimmed, as KEDA's typed config reads it
    assert.equal(t.values.threshold, 100.5);
    const plans = s.controller.plansFor(s.get("HorizontalPodAutoscaler", "keda-hpa-web")!)!;
    assert.deepEqual(
      plans.plans.map((p) => [p.index, p.metricName, p.collector, p.intervalSeconds, p.error]),
      [
        [0, "s0-prometheus", "keda-prometheus", 10, null],
        [1, "s1-cron-Europe-Berlin-08xxx-020xxx", "keda-cron", 10, null],
      ],
    );
    assert.deepEqual(Object.keys(plans.plans[0].config), [
      "keda-scaled-object",
      "keda-trigger",
      "keda-params",
    ]);
    assert.equal(plans.plans[0].config["keda-params"], t.digest);
    assert.ok(!JSON.stringify(plans).includes("s3cret"));
    // a rotated Secret: a new digest, and the HPA is planned again
    s.cluster.set("Secret", { ...SECRET, ...({ data: { token: btoa("other") } } as Obj) });
    s.controller.resync();
    await s.run();
    const t2 = s.controller.trigger("shop/web", 0)!;
    assert.equal(t2.values.bearerToken, "other");
    assert.notEqual(t2.digest, t.digest);
    assert.deepEqual(s.replans, ["shop/keda-hpa-web", "shop/keda-hpa-web"]);
    // an HPA no ScaledObject controls is planned as usual
    assert.equal(s.controller.plansFor({ metadata: { name: "x", namespace: "shop" } }), undefined);
  });

  it("reverts an edit of a field KEDA sets, and keeps labels it does not set", async () => {
    const s = setup(ALL);
    await s.controller.start();
    await s.run();
    const hpa = s.get("HorizontalPodAutoscaler", "keda-hpa-web")!;
    s.cluster.set("HorizontalPodAutoscaler", {
      ...hpa,
      spec: { ...hpa.spec, maxReplicas: 50 },
    });
    await s.run();
    assert.equal(s.get("HorizontalPodAutoscaler", "keda-hpa-web")!.spec.maxReplicas, 10);
    const last = s.writer.patches.at(-1)!;
    assert.equal(last.kind, "HorizontalPodAutoscaler");
    assert.deepEqual(Object.keys(last.patch as Obj), ["spec"]);
  });

  it("leaves a ScaledObject whose HPA keda-operator manages to KEDA, with a Warning", async () => {
    const s = setup([...ALL, ["HorizontalPodAutoscaler", KEDA_OPERATORS_HPA]]);
    await s.controller.start();
    await s.run();
    assert.deepEqual(s.writer.creates, []);
    assert.deepEqual(
      s.writer.patches.filter((p) => p.kind === "HorizontalPodAutoscaler"),
      [],
    );
    assert.deepEqual(s.writer.statusUpdates, []);
    assert.deepEqual(s.writer.events.map((e) => [e.event.type, e.event.reason, e.event.message]), [[
      "Warning",
      KEDA_NOT_OURS_REASON,
      "HorizontalPodAutoscaler shop/keda-hpa-web is managed by keda-operator: this ScaledObject is left to KEDA",
    ]]);
    assert.deepEqual(s.controller.owned(), []);
    // its HPA gets no plans of ours (KEDA's metrics server, or the delegate, serves it)
    assert.deepEqual(s.controller.plansFor(KEDA_OPERATORS_HPA)?.plans, []);
    assert.equal(s.controller.statusOf(KEDA_OPERATORS_HPA)?.owner, "keda-operator");
  });

  it("sets Ready=False with KEDA's message and a Warning for a bad trigger; others go on", async () => {
    const bad = scaledObject({
      triggers: [{ type: "prometheus", metadata: { serverAddress: "http://p", query: "up" } }],
    }, { name: "bad", uid: "uid-bad" });
    const s = setup([...ALL, ["ScaledObject", bad]]);
    await s.controller.start();
    await s.run();
    const message =
      'failed to ensure HPA is correctly created for ScaledObject: error parsing prometheus metadata: error parsing prometheus metadata: missing required parameter "threshold" in [triggerMetadata]';
    const status = s.get("ScaledObject", "bad")!.status;
    assert.deepEqual(status.conditions[0], {
      type: "Ready",
      status: "False",
      reason: "ScaledObjectCheckFailed",
      message,
    });
    assert.deepEqual(status.conditions[1], {
      type: "Active",
      status: "Unknown",
      reason: "UnknownState",
      message: "ScaledObject check failed",
    });
    assert.equal(s.get("HorizontalPodAutoscaler", "keda-hpa-bad"), undefined);
    assert.ok(
      s.writer.events.some((e) =>
        e.name === "shop/bad" && e.event.type === "Warning" && e.event.message === message
      ),
    );
    assert.ok(s.get("HorizontalPodAutoscaler", "keda-hpa-web"));
    assert.deepEqual(s.controller.scaledObject("shop", "bad"), {
      hpaName: null,
      metricNames: [],
      error: message,
    });
  });

  it("names a missing scale target as KEDA does", async () => {
    const s = setup([["ScaledObject", scaledObject()]]);
    await s.controller.start();
    await s.run();
    assert.equal(
      s.get("ScaledObject", "web")!.status.conditions[0].message,
      'ScaledObject doesn\'t have correct scaleTargetRef specification: deployments.apps "web" not found',
    );
  });

  it("reads the scale target from its watch, and reconciles nothing when a status alone changes (issue 51)", async () => {
    const s = setup(ALL);
    await s.controller.start();
    await s.run();
    assert.ok(s.cluster.ensured.includes("Deployment"));
    // the Deployment (the target, and its containers' env) from the cache; the Secret and
    // TriggerAuthentication read from the API when planned at the start, then at each reconcile
    // but the first (it takes the start's, the ScaledObject unchanged since): two reconciles
    // (the first one labels the ScaledObject and adds KEDA's finalizer, which is a change of
    // its metadata)
    const once = ["TriggerAuthentication shop/prom-auth", "Secret shop/prom-secret"];
    assert.deepEqual(s.writer.reads, [...once, ...once]);
    const writes = () =>
      s.writer.patches.length + s.writer.statusUpdates.length + s.writer.creates.length;
    const before = writes();
    // the loop's own status writes and the HPA controller's: no reconcile, no request
    const so = s.get("ScaledObject", "web")!;
    s.cluster.set("ScaledObject", {
      ...so,
      status: { ...so.status, lastActiveTime: "2026-11-29T10:00:00Z" },
    });
    const hpa = s.get("HorizontalPodAutoscaler", "keda-hpa-web")!;
    s.cluster.set("HorizontalPodAutoscaler", {
      ...hpa,
      status: { currentReplicas: 3, desiredReplicas: 3 },
    });
    await s.run();
    assert.equal(s.writer.reads.length, 4);
    assert.equal(writes(), before);
    // a change of the spec is reconciled: the HPA follows
    const now = s.get("ScaledObject", "web")!;
    s.cluster.set("ScaledObject", { ...now, spec: { ...now.spec, maxReplicaCount: 20 } });
    await s.run();
    assert.equal(s.get("HorizontalPodAutoscaler", "keda-hpa-web")!.spec.maxReplicas, 20);
    // (and once more on the change of the HPA it patched)
    assert.deepEqual(s.writer.reads.slice(4), [...once, ...once]);
    // so is an edit of the HPA's spec (reverted)
    const edited = s.get("HorizontalPodAutoscaler", "keda-hpa-web")!;
    s.cluster.set("HorizontalPodAutoscaler", {
      ...edited,
      spec: { ...edited.spec, maxReplicas: 99 },
    });
    await s.run();
    assert.equal(s.get("HorizontalPodAutoscaler", "keda-hpa-web")!.spec.maxReplicas, 20);
  });

  it("plans every ScaledObject with its HPA to be before it writes anything (issue 51)", async () => {
    const s = setup(ALL);
    await s.controller.start();
    await s.run();
    // the start's planning, before the first reconcile's writes
    assert.deepEqual(s.replans, ["shop/keda-hpa-web"]);
    assert.deepEqual(s.writesAtReplan, [0]);
    // the HPA written is the one planned from
    const hpa = s.get("HorizontalPodAutoscaler", "keda-hpa-web")!;
    assert.deepEqual(s.pendings[0].spec, hpa.spec);
    assert.deepEqual(s.pendings[0].metadata.annotations, hpa.metadata.annotations);
    assert.deepEqual(s.pendings[0].metadata.labels, hpa.metadata.labels);
    // planned once: the reconcile found the same plans
    assert.deepEqual(s.replans, ["shop/keda-hpa-web"]);
  });

  it("plans nothing ahead for a ScaledObject whose target is missing or whose HPA is another's", async () => {
    const missing = setup([["ScaledObject", scaledObject()]]);
    await missing.controller.start();
    await missing.run();
    assert.deepEqual(missing.replans, []);
    const kedas = setup([...ALL, ["HorizontalPodAutoscaler", KEDA_OPERATORS_HPA]]);
    await kedas.controller.start();
    await kedas.run();
    assert.deepEqual(kedas.replans, []);
  });

  it("reads the scale target from the API when its kind cannot be listed", async () => {
    const s = setup(ALL);
    Object.assign(s.cluster, {
      kindError: (kind: string) =>
        kind === "Deployment" ? "GET /apis/apps/v1/deployments: HTTP 403: forbidden" : null,
    });
    await s.controller.start();
    await s.run();
    // the target and its containers' env, at the start's planning and the second reconcile; the
    // target alone at the first (its env from the start's resolution)
    assert.equal(s.writer.reads.filter((r) => r === "Deployment shop/web").length, 5);
    assert.equal(s.get("HorizontalPodAutoscaler", "keda-hpa-web")!.spec.maxReplicas, 10);
  });

  it("owns only the ScaledObjects its selector picks, and writes nothing off the leader", async () => {
    const s = setup(ALL, { selector: "autoscaler=hpa-metrics-adapter" });
    await s.controller.start();
    await s.run();
    assert.deepEqual(s.controller.owned(), []);
    assert.deepEqual(s.writer.creates, []);
    const f = setup(ALL, { leader: false });
    await f.controller.start();
    await f.run();
    assert.deepEqual(f.controller.owned(), ["shop/web"]);
    assert.deepEqual([f.writer.creates, f.writer.patches, f.writer.statusUpdates], [[], [], []]);
    // a follower still resolves the triggers it serves
    assert.equal(f.controller.trigger("shop/web", 0)?.values.bearerToken, "s3cret");
  });

  it("deletes the HPA of an old horizontalPodAutoscalerConfig.name", async () => {
    const s = setup(ALL);
    await s.controller.start();
    await s.run();
    const so = s.get("ScaledObject", "web")!;
    s.cluster.set("ScaledObject", {
      ...so,
      spec: { ...so.spec, advanced: { horizontalPodAutoscalerConfig: { name: "web-hpa" } } },
    });
    await s.run();
    assert.ok(s.get("HorizontalPodAutoscaler", "web-hpa"));
    assert.equal(s.get("HorizontalPodAutoscaler", "keda-hpa-web"), undefined);
    assert.deepEqual(s.writer.deletes, [{
      kind: "HorizontalPodAutoscaler",
      name: "shop/keda-hpa-web",
    }]);
    assert.equal(s.get("ScaledObject", "web")!.status.hpaName, "web-hpa");
  });

  it("resolves <key>FromEnv from the target container's env ($(VAR) expanded)", async () => {
    const so = scaledObject({
      triggers: [{
        type: "aws-sqs-queue",
        metadata: { queueURLFromEnv: "QUEUE_URL", awsRegion: "eu-central-1" },
        authenticationRef: { name: "aws" },
      }],
    });
    const s = setup([
      ["TriggerAuthentication", {
        apiVersion: "keda.sh/v1alpha1",
        kind: "TriggerAuthentication",
        metadata: { name: "aws", namespace: "shop" },
        spec: {
          secretTargetRef: [
            { parameter: "awsAccessKeyID", name: "aws", key: "id" },
            { parameter: "awsSecretAccessKey", name: "aws", key: "secret" },
          ],
        },
      }],
      ["Secret", {
        metadata: { name: "aws", namespace: "shop" },
        ...({ data: { id: btoa("AKID"), secret: btoa("SECRET") } } as Obj),
      }],
      [
        "Deployment",
        deployment([{ name: "HOST", value: "sqs.local" }, {
          name: "QUEUE_URL",
          value: "http://$(HOST)/000000000000/jobs",
        }]),
      ],
      ["ScaledObject", so],
    ]);
    await s.controller.start();
    await s.run();
    assert.equal(
      s.controller.trigger("shop/web", 0)?.values.queueURL,
      "http://sqs.local/000000000000/jobs",
    );
    assert.equal(s.controller.trigger("shop/web", 0)?.values.awsAccessKeyID, "AKID");
    assert.deepEqual(s.get("ScaledObject", "web")!.status.externalMetricNames, [
      "s0-aws-sqs-jobs",
    ]);
  });

  it("reads podIdentity aws roleArn and externalID, and a new role makes new trigger values", async () => {
    const auth = (roleArn: string) => ({
      apiVersion: "keda.sh/v1alpha1",
      kind: "TriggerAuthentication",
      metadata: { name: "aws", namespace: "shop" },
      spec: { podIdentity: { provider: "aws", roleArn, externalID: "ext-42" } },
    });
    const s = setup([
      ["TriggerAuthentication", auth("arn:aws:iam::111122223333:role/a")],
      ["Deployment", deployment([])],
      [
        "ScaledObject",
        scaledObject({
          triggers: [{
            type: "aws-sqs-queue",
            metadata: { queueURL: "http://sqs.local/000000000000/jobs", awsRegion: "eu-central-1" },
            authenticationRef: { name: "aws" },
          }],
        }),
      ],
    ]);
    await s.controller.start();
    await s.run();
    const t = s.controller.trigger("shop/web", 0)!;
    assert.equal(t.values.awsRoleArn, "arn:aws:iam::111122223333:role/a");
    assert.equal(t.values.awsExternalId, "ext-42");
    assert.equal(t.values.awsPodIdentity, true);
    s.cluster.set("TriggerAuthentication", auth("arn:aws:iam::111122223333:role/b"));
    s.controller.resync();
    await s.run();
    const t2 = s.controller.trigger("shop/web", 0)!;
    assert.equal(t2.values.awsRoleArn, "arn:aws:iam::111122223333:role/b");
    assert.notEqual(t2.digest, t.digest);
  });
});

describe("KedaController: the scale loop (issue 48)", () => {
  function loopSetup(
    readings: Map<string, Obj>,
    so: KubeObject,
    leader: { is: boolean } = { is: true },
  ) {
    const cluster = new MemoryCluster();
    cluster.set("Deployment", deployment());
    cluster.set("ScaledObject", so);
    const writer = new RecordingWriter(cluster);
    const timers: (() => void)[] = [];
    let now = Date.parse("2026-11-29T10:00:00Z");
    const controller = new KedaController({
      cluster,
      writer,
      write: true,
      version: "9.9.9",
      reading: (_ns, _hpa, metric) => readings.get(metric),
      now: () => now,
      setTimer: (fn) => {
        timers.push(fn);
        return timers.length;
      },
      clearTimer: () => {},
      logger: memoryLogger(),
      isLeader: () => leader.is,
    });
    const run = async () => {
      for (let i = 0; i < 3; i++) {
        await settle();
        await controller.idle();
      }
    };
    /** Fire the loop's timer (the last one armed), then let it write. */
    const tick = async (advanceMs = 0) => {
      now += advanceMs;
      timers.at(-1)!();
      await run();
    };
    const advance = (ms: number) => {
      now += ms;
    };
    return { cluster, writer, controller, run, tick, advance };
  }

  const zeroable = (extra: Obj = {}) =>
    scaledObject({
      minReplicaCount: 0,
      cooldownPeriod: 60,
      pollingInterval: 5,
      triggers: [{
        type: "prometheus",
        metadata: {
          serverAddress: "http://prometheus:9090",
          query: "up",
          threshold: "10",
          activationThreshold: "2",
        },
      }],
      ...extra,
    }, { creationTimestamp: "2026-11-29T09:00:00Z" });

  it("scales to zero after the cooldown, and back from zero when active, with KEDA's events", async () => {
    const readings = new Map<string, Obj>([["s0-prometheus", {
      value: 1,
      failures: 0,
      fallback: false,
    }]]);
    const s = loopSetup(readings, zeroable());
    await s.controller.start();
    await s.run();
    // inactive (1 is not above 2), never active, created an hour ago: to zero at the first tick
    await s.tick(5_000);
    assert.deepEqual(s.writer.scales, [{ kind: "Deployment", name: "shop/web", replicas: 0 }]);
    const so = s.cluster.get("ScaledObject", "shop", "web")!;
    assert.deepEqual(so.status.conditions.find((c: Obj) => c.type === "Active"), {
      type: "Active",
      status: "False",
      reason: "ScalerNotActive",
      message: "Scaling is not performed because triggers are not active",
    });
    assert.deepEqual(so.status.triggersActivity, { "s0-prometheus": { isActive: false } });
    assert.deepEqual(s.writer.events.at(-1)!.event, {
      type: "Normal",
      reason: "KEDAScaleTargetDeactivated",
      message: "Deactivated apps/v1.Deployment shop/web from 3 to 0",
    });
    // active: back to one replica (minReplicaCount 0 starts at 1), lastActiveTime written
    readings.set("s0-prometheus", { value: 7, failures: 0, fallback: false });
    await s.tick(5_000);
    assert.deepEqual(s.writer.scales.at(-1), { kind: "Deployment", name: "shop/web", replicas: 1 });
    assert.deepEqual(s.writer.events.at(-1)!.event, {
      type: "Normal",
      reason: "KEDAScaleTargetActivated",
      message: "Scaled apps/v1.Deployment shop/web from 0 to 1, triggered by s0-prometheus",
    });
    const after = s.cluster.get("ScaledObject", "shop", "web")!.status;
    assert.equal(after.lastActiveTime, "2026-11-29T10:00:10Z");
    assert.deepEqual(after.triggersActivity, { "s0-prometheus": { isActive: true } });
    // inactive again but within the cooldown: stays, Active False ScalerCooldown
    readings.set("s0-prometheus", { value: 0, failures: 0, fallback: false });
    await s.tick(5_000);
    assert.equal(s.writer.scales.length, 2);
    assert.equal(
      s.cluster.get("ScaledObject", "shop", "web")!.status.conditions.find((c: Obj) =>
        c.type === "Active"
      ).reason,
      "ScalerCooldown",
    );
    // the status page's view: the cooldown's end and the next action
    const hpa = s.cluster.get("HorizontalPodAutoscaler", "shop", "keda-hpa-web")!;
    assert.deepEqual(s.controller.statusOf(hpa)?.loop, {
      active: {
        status: "False",
        reason: "ScalerCooldown",
        message: "Scaler cooling down because triggers are not active",
      },
      lastActiveTime: "2026-11-29T10:00:10Z",
      cooldownEndsAt: "2026-11-29T10:01:10Z",
      next: "scale to 0 when the cooldown ends (2026-11-29T10:01:10.000Z)",
    });
    assert.deepEqual(s.controller.statusOf(hpa)?.triggers[0].active, false);
    // the Deployment's replicas came from its watch at each check, as KEDA reads them
    assert.equal(s.writer.getScaleCalls, 0);
    await s.controller.stop();
  });

  it("a new leader mid-cooldown neither scales early nor forgets the last active time", async () => {
    // the previous leader saw the trigger active at 09:59:40 and wrote it in the status; the
    // target is at 3; this process starts as a follower at 10:00:00 with the trigger quiet
    const readings = new Map<string, Obj>([["s0-prometheus", {
      value: 0,
      failures: 0,
      fallback: false,
    }]]);
    const so = zeroable();
    so.status = {
      hpaName: "keda-hpa-web",
      externalMetricNames: ["s0-prometheus"],
      scaleTargetKind: "apps/v1.Deployment",
      lastActiveTime: "2026-11-29T09:59:40Z",
      conditions: [{
        type: "Active",
        status: "True",
        reason: "ScalerActive",
        message: "Scaling is performed because triggers are active",
      }],
    };
    const leader = { is: false };
    const s = loopSetup(readings, so, leader);
    await s.controller.start();
    await s.run();
    await s.tick(0);
    // a follower: no scale, no status, no event
    assert.deepEqual([s.writer.scales, s.writer.statusUpdates, s.writer.events], [[], [], []]);
    // elected at 10:00:05: 25 s into the 60 s cooldown, so it stays at 3 and says why
    leader.is = true;
    await s.tick(5_000);
    assert.deepEqual(s.writer.scales, []);
    let status = s.cluster.get("ScaledObject", "shop", "web")!.status;
    assert.equal(status.lastActiveTime, "2026-11-29T09:59:40Z");
    assert.deepEqual(status.conditions.find((c: Obj) => c.type === "Active"), {
      type: "Active",
      status: "False",
      reason: "ScalerCooldown",
      message: "Scaler cooling down because triggers are not active",
    });
    // 10:00:35: still 5 s short of 10:00:40
    await s.tick(30_000);
    assert.deepEqual(s.writer.scales, []);
    // 10:00:40: the cooldown's last instant (KEDA: lastActiveTime + cooldown strictly before now)
    await s.tick(5_000);
    assert.deepEqual(s.writer.scales, []);
    // 10:00:41: the cooldown that started under the old leader is over: to zero
    await s.tick(1_000);
    assert.deepEqual(s.writer.scales, [{ kind: "Deployment", name: "shop/web", replicas: 0 }]);
    assert.deepEqual(s.writer.events.at(-1)!.event, {
      type: "Normal",
      reason: "KEDAScaleTargetDeactivated",
      message: "Deactivated apps/v1.Deployment shop/web from 3 to 0",
    });
    status = s.cluster.get("ScaledObject", "shop", "web")!.status;
    assert.equal(status.lastActiveTime, "2026-11-29T09:59:40Z");
    await s.controller.stop();
  });

  it("ticks after its triggers' collection: at the first value, then once a polling interval", async () => {
    const readings = new Map<string, Obj>();
    const s = loopSetup(readings, zeroable());
    await s.controller.start();
    await s.run();
    // the first tick found nothing collected: no decision
    assert.deepEqual(s.writer.scales, []);
    const collected = async (key = "shop/keda-hpa-web/0/External/s0-prometheus") => {
      s.controller.collected([key]);
      await s.run();
    };
    // the first collection: a tick at once, inactive, to zero
    readings.set("s0-prometheus", { value: 1, failures: 0, fallback: false });
    await collected();
    assert.deepEqual(s.writer.scales, [{ kind: "Deployment", name: "shop/web", replicas: 0 }]);
    // active, collected 3.7 s later: under three quarters of the 5 s interval, no tick
    readings.set("s0-prometheus", { value: 7, failures: 0, fallback: false });
    s.advance(3_700);
    await collected();
    assert.equal(s.writer.scales.length, 1);
    // another HPA's collection: no tick
    s.advance(100);
    await collected("shop/other/0/External/s0-prometheus");
    assert.equal(s.writer.scales.length, 1);
    // 3.8 s after the last tick: a tick, from zero to one
    await collected();
    assert.deepEqual(s.writer.scales.at(-1), { kind: "Deployment", name: "shop/web", replicas: 1 });
    // that tick was due at 5 s: the next is due at 10 s, on the loop's own grid, not 5 s after
    // the tick (issue 51: under load, late collections made more ticks than intervals). A
    // collection 3.8 s after the tick (7.6 s) is more than a quarter interval early: no tick
    const ticks = () => s.writer.statusUpdates.length + s.writer.scales.length;
    readings.set("s0-prometheus", { value: 0, failures: 0, fallback: false });
    s.advance(3_800);
    const before = ticks();
    await collected();
    const status = () => s.cluster.get("ScaledObject", "shop", "web")!.status;
    assert.equal(
      status().conditions.find((c: Obj) => c.type === "Active").status,
      "True",
    );
    assert.equal(ticks(), before);
    // 8.8 s: within a quarter interval of 10 s: a tick (inactive now: cooling down)
    s.advance(1_200);
    await collected();
    assert.equal(
      status().conditions.find((c: Obj) => c.type === "Active").reason,
      "ScalerCooldown",
    );
    await s.controller.stop();
  });

  it("writes no status when the API server answers it with its keys sorted, as Go does", async () => {
    const readings = new Map<string, Obj>([["s0-prometheus", {
      value: 7,
      failures: 0,
      fallback: false,
    }]]);
    const s = loopSetup(readings, zeroable());
    await s.controller.start();
    await s.run();
    await s.tick(5_000);
    const writes = s.writer.statusUpdates.length;
    assert.ok(writes > 0);
    // what a GET of the ScaledObject gives back: every map's keys in Go's order
    const sorted = (v: unknown): unknown =>
      Array.isArray(v)
        ? v.map(sorted)
        : v !== null && typeof v === "object"
        ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted((v as Obj)[k])]))
        : v;
    const so = s.cluster.get("ScaledObject", "shop", "web")!;
    const resorted = sorted(so.status) as Obj;
    assert.notEqual(JSON.stringify(resorted), JSON.stringify(so.status));
    s.cluster.set("ScaledObject", { ...so, status: resorted });
    await s.run();
    // the same moment (an active trigger moves lastActiveTime on, which is a change)
    await s.tick(0);
    assert.equal(s.writer.statusUpdates.length, writes);
    await s.controller.stop();
  });

  it("activates on autoscaling.keda.sh/force-activation even when the triggers are quiet", async () => {
    const readings = new Map<string, Obj>([["s0-prometheus", {
      value: 0,
      failures: 0,
      fallback: false,
    }]]);
    const so = zeroable();
    so.metadata.annotations = { "autoscaling.keda.sh/force-activation": "true" };
    const s = loopSetup(readings, so);
    s.cluster.set("Deployment", { ...deployment(), spec: { ...deployment().spec, replicas: 0 } });
    await s.controller.start();
    await s.run();
    await s.tick(5_000);
    assert.deepEqual(s.writer.scales.at(-1), { kind: "Deployment", name: "shop/web", replicas: 1 });
    assert.deepEqual(s.writer.events.at(-1)!.event, {
      type: "Normal",
      reason: "KEDAScaleTargetActivated",
      message:
        "Scaled apps/v1.Deployment shop/web from 0 to 1, caused by forced activation annotation",
    });
    assert.deepEqual(
      s.cluster.get("ScaledObject", "shop", "web")!.status.conditions.find((c: Obj) =>
        c.type === "Active"
      ),
      {
        type: "Active",
        status: "True",
        reason: "ScalerActive",
        message: "Scaling is performed because activation is being forced by annotation",
      },
    );
    await s.controller.stop();
  });

  it("writes health and the Fallback condition when the ScaledObject has a fallback", async () => {
    const readings = new Map<string, Obj>([["s0-prometheus", {
      error: "down",
      failures: 4,
      fallback: true,
      value: 30,
    }]]);
    const s = loopSetup(
      readings,
      zeroable({ minReplicaCount: 1, fallback: { failureThreshold: 3, replicas: 3 } }),
    );
    await s.controller.start();
    await s.run();
    await s.tick(5_000);
    const status = s.cluster.get("ScaledObject", "shop", "web")!.status;
    assert.deepEqual(status.health, {
      "s0-prometheus": { numberOfFailures: 4, status: "Failing" },
    });
    assert.deepEqual(status.conditions.find((c: Obj) => c.type === "Fallback"), {
      type: "Fallback",
      status: "True",
      reason: "FallbackExists",
      message: "At least one trigger is falling back on this scaled object",
    });
    // a writer of nothing new: a second tick with the same readings writes no status
    const writes = s.writer.statusUpdates.length;
    await s.tick(0);
    assert.equal(s.writer.statusUpdates.length, writes);
    await s.controller.stop();
  });
});

describe("KedaController: pausing (issue 48)", () => {
  it("deletes the HPA and holds the target at paused-replicas, then restores both", async () => {
    const s = setup(ALL);
    await s.controller.start();
    await s.run();
    assert.ok(s.get("HorizontalPodAutoscaler", "keda-hpa-web"));
    const so = s.get("ScaledObject", "web")!;
    s.cluster.set("ScaledObject", {
      ...so,
      metadata: {
        ...so.metadata,
        annotations: { "autoscaling.keda.sh/paused-replicas": "2" },
      },
    });
    await s.run();
    assert.equal(s.get("HorizontalPodAutoscaler", "keda-hpa-web"), undefined);
    assert.deepEqual(s.writer.scales, [{ kind: "Deployment", name: "shop/web", replicas: 2 }]);
    const paused = s.get("ScaledObject", "web")!.status;
    assert.equal(paused.pausedReplicaCount, 2);
    assert.deepEqual(paused.conditions.find((c: Obj) => c.type === "Paused"), {
      type: "Paused",
      status: "True",
      reason: "ScaledObjectPaused",
      message: "ScaledObject is paused",
    });
    assert.deepEqual(paused.conditions.find((c: Obj) => c.type === "Ready"), {
      type: "Ready",
      status: "True",
      reason: "ScaledObjectReady",
      message: "ScaledObject is paused",
    });
    assert.ok(s.writer.events.some((e) => e.event.reason === "ScaledObjectPaused"));
    assert.deepEqual(s.controller.scaledObject("shop", "web")?.metricNames, []);
    // the pause removed: Unpaused, the count cleared, the HPA back
    const now = s.get("ScaledObject", "web")!;
    s.cluster.set("ScaledObject", { ...now, metadata: { ...now.metadata, annotations: {} } });
    await s.run();
    assert.ok(s.get("HorizontalPodAutoscaler", "keda-hpa-web"));
    const resumed = s.get("ScaledObject", "web")!.status;
    assert.equal(resumed.pausedReplicaCount, undefined);
    assert.deepEqual(resumed.conditions.find((c: Obj) => c.type === "Paused"), {
      type: "Paused",
      status: "False",
      reason: "ScaledObjectUnpaused",
      message: "pause annotation removed for ScaledObject",
    });
    assert.ok(s.writer.events.some((e) => e.event.reason === "ScaledObjectUnpaused"));
  });
});

describe("KedaController: lifecycle (issue 48)", () => {
  it("adds KEDA's finalizer, and on delete restores the original replicas and removes it", async () => {
    const s = setup([
      ["Deployment", deployment()],
      ["TriggerAuthentication", AUTH],
      ["Secret", SECRET],
      ["ScaledObject", scaledObject({ advanced: { restoreToOriginalReplicaCount: true } })],
    ]);
    await s.controller.start();
    await s.run();
    const so = s.get("ScaledObject", "web")!;
    assert.deepEqual(so.metadata.finalizers, ["finalizer.keda.sh"]);
    assert.equal(so.status.originalReplicaCount, 3);
    // the target scaled meanwhile, then the ScaledObject deleted (the API server sets the time)
    s.cluster.set("Deployment", { ...deployment(), spec: { ...deployment().spec, replicas: 7 } });
    s.cluster.set("ScaledObject", {
      ...so,
      metadata: { ...so.metadata, deletionTimestamp: "2026-11-29T11:00:00Z" },
    });
    await s.run();
    assert.deepEqual(s.writer.scales, [{ kind: "Deployment", name: "shop/web", replicas: 3 }]);
    assert.deepEqual(s.get("ScaledObject", "web")!.metadata.finalizers, []);
    assert.deepEqual(s.controller.owned(), []);
  });

  it("mirrors the HPA's ScalingActive condition as HPAActive in the loop", async () => {
    const cluster = new MemoryCluster();
    cluster.set("Deployment", deployment());
    cluster.set(
      "ScaledObject",
      scaledObject({
        triggers: [{
          type: "prometheus",
          metadata: { serverAddress: "http://p:9090", query: "up", threshold: "1" },
        }],
      }),
    );
    const writer = new RecordingWriter(cluster);
    const timers: (() => void)[] = [];
    const controller = new KedaController({
      cluster,
      writer,
      write: true,
      version: "9.9.9",
      reading: () => ({ value: 5, failures: 0, fallback: false }),
      setTimer: (fn) => {
        timers.push(fn);
        return timers.length;
      },
      clearTimer: () => {},
      logger: memoryLogger(),
    });
    const run = async () => {
      for (let i = 0; i < 3; i++) {
        await settle();
        await controller.idle();
      }
    };
    await controller.start();
    await run();
    const hpa = cluster.get("HorizontalPodAutoscaler", "shop", "keda-hpa-web")!;
    cluster.set("HorizontalPodAutoscaler", {
      ...hpa,
      status: {
        conditions: [{
          type: "ScalingActive",
          status: "False",
          reason: "FailedGetExternalMetric",
          message: "the HPA was unable to compute the replica count",
        }],
      },
    });
    await run();
    timers.at(-1)!(); // the loop's next tick
    await run();
    const conds = cluster.get("ScaledObject", "shop", "web")!.status.conditions;
    assert.deepEqual(conds.find((c: Obj) => c.type === "HPAActive"), {
      type: "HPAActive",
      status: "False",
      reason: "FailedGetExternalMetric",
      message: "HPA is not actively scaling: the HPA was unable to compute the replica count",
    });
    assert.equal(conds.find((c: Obj) => c.type === "Active")?.reason, "ScalerActive");
    // appended after KEDA's four
    assert.deepEqual(conds.map((c: Obj) => c.type), [
      "Ready",
      "Active",
      "Fallback",
      "Paused",
      "HPAActive",
    ]);
    await controller.stop();
  });
});
