/**
 * A ScaledObject from its objects to the external metrics API (issue 47, point 4): the KEDA
 * controller resolves the triggers (a bearer token from a Secret), the engine collects them with
 * the KEDA collectors (a Prometheus query API that records what it is asked, a metrics-api
 * endpoint, a cron schedule), and the API answers the HPA controller's reads as KEDA's metrics
 * server does: the name matched without case, one item in the spec's casing, KEDA's quantities,
 * KEDA's errors in a 500 Status without a reason.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createApp } from "../../src/api/app.ts";
import type { KubeObject } from "../../src/cluster/types.ts";
import { kedaCollectorFactories } from "../../src/collectors/keda.ts";
import { createCollectorRegistry } from "../../src/collectors/registry.ts";
import { KedaController } from "../../src/controllers/keda.ts";
import { Engine } from "../../src/engine/engine.ts";
import { memoryLogger } from "../../src/engine/logger.ts";
import { MetricStore } from "../../src/store/store.ts";
import { parseSelector } from "../../src/core/kubernetes/label_selector.ts";
import { MemoryCluster, RecordingWriter, settle } from "../engine/support.ts";
import {
  type FakePrometheusApi,
  startFakePrometheusApi,
} from "../collectors/prometheus_support.ts";
import { startServer, type TestServer } from "../collectors/servers.ts";

// deno-lint-ignore no-explicit-any
type Obj = any;

const EM = "/apis/external.metrics.k8s.io/v1beta1";
const SELECTOR = "labelSelector=scaledobject.keda.sh%2Fname%3Dweb";

let prometheus: FakePrometheusApi;
let metricsApi: TestServer;
let metricsApiHeaders: Record<string, string | undefined> = {};

before(async () => {
  prometheus = await startFakePrometheusApi();
  prometheus.reply = () => ({
    status: 200,
    body: JSON.stringify({
      status: "success",
      data: {
        resultType: "vector",
        result: [{ metric: {}, value: [1700000000, "250.25"] }],
      },
    }),
  });
  metricsApi = await startServer("127.0.0.1", 0, (req: IncomingMessage, res: ServerResponse) => {
    metricsApiHeaders = { "x-api-key": req.headers["x-api-key"] as string | undefined };
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ queue: { depth: 7, items: [1, 2] } }));
  });
});

after(async () => {
  await prometheus.close();
  await metricsApi.close();
});

function objects(promUrl: string): [string, KubeObject][] {
  return [
    ["Deployment", {
      metadata: { name: "web", namespace: "shop", uid: "uid-web" },
      spec: { replicas: 2, template: { spec: { containers: [{ name: "app" }] } } },
    }],
    ["Secret", {
      metadata: { name: "creds", namespace: "shop" },
      ...({ data: { token: btoa("tok-1"), key: btoa("k-9") } } as Obj),
    }],
    ["TriggerAuthentication", {
      apiVersion: "keda.sh/v1alpha1",
      kind: "TriggerAuthentication",
      metadata: { name: "creds", namespace: "shop" },
      spec: {
        secretTargetRef: [
          { parameter: "bearerToken", name: "creds", key: "token" },
          { parameter: "apiKey", name: "creds", key: "key" },
        ],
      },
    }],
    ["ScaledObject", {
      apiVersion: "keda.sh/v1alpha1",
      kind: "ScaledObject",
      metadata: { name: "web", namespace: "shop", uid: "uid-so" },
      spec: {
        scaleTargetRef: { name: "web" },
        triggers: [
          {
            type: "prometheus",
            metadata: {
              serverAddress: promUrl,
              query: 'sum(rate(http_requests_total{app="web"}[1m]))',
              threshold: "100",
              authModes: "bearer",
              namespace: "shop",
            },
            authenticationRef: { name: "creds" },
          },
          {
            type: "metrics-api",
            metadata: {
              url: `http://127.0.0.1:${metricsApi.port}/stats`,
              valueLocation: "queue.depth",
              targetValue: "5",
              authMode: "apiKey",
            },
            authenticationRef: { name: "creds" },
          },
          {
            type: "cron",
            metadata: {
              timezone: "Etc/UTC",
              start: "0 0 * * *",
              end: "59 23 * * *",
              desiredReplicas: "4",
            },
          },
        ],
      },
    }],
  ];
}

async function setup(
  promUrl: string = prometheus.url,
  more: [string, KubeObject][] = [],
  failCreate: Error | null = null,
) {
  const cluster = new MemoryCluster();
  for (const [kind, o] of [...objects(promUrl), ...more]) cluster.set(kind as never, o);
  const writer = new RecordingWriter(cluster);
  writer.failCreate = failCreate;
  const logger = memoryLogger();
  const store = new MetricStore();
  let engine: Engine | null = null;
  const keda = new KedaController({
    cluster,
    writer,
    write: true,
    version: "9.9.9",
    onPlansChanged: (ns, name, pending) => engine?.replan(ns, name, pending),
    // the scale loop's readings, as serve.ts gives them: the engine's outcome, the store's value
    reading: (ns, hpaName, metricName, scaledObject) => {
      const r = engine?.planReading(ns, hpaName, metricName);
      if (r === undefined) return undefined;
      // the value served (a formula's, a fallback's), else the one collected last
      const found = store.lookupExternal({
        namespace: ns,
        metricName,
        selector: parseSelector(`scaledobject.keda.sh/name=${scaledObject}`),
      }, Date.now());
      const value = ("items" in found ? found.items[0]?.value : undefined) ?? r.value;
      return { ...r, ...(value !== undefined ? { value } : {}) };
    },
    logger,
  });
  engine = new Engine({
    cluster,
    store,
    registry: createCollectorRegistry(kedaCollectorFactories({ triggers: keda })),
    writer,
    logger,
    planOverride: (hpa) => keda.plansFor(hpa),
  });
  await keda.start();
  await engine.start();
  const app = createApp({
    store,
    pods: { listPods: () => [] },
    now: () => Date.now(),
    ready: () => true,
    version: { gitVersion: "v9.9.9", goVersion: "node", platform: "linux/amd64" },
    keda,
  });
  const read = async (
    metric: string,
    selector = SELECTOR,
  ): Promise<{ status: number; body: Obj }> => {
    const res = await app.request(`${EM}/namespaces/shop/${metric}?${selector}`);
    return { status: res.status, body: JSON.parse(await res.text()) };
  };
  const stop = async () => {
    await keda.stop();
    await engine!.stop();
  };
  return { cluster, keda, engine, store, read, stop, logger, writer };
}

/** Reads until the metric has a value (collections run on the engine's real timers). */
async function readWhenCollected(
  read: (m: string) => Promise<{ status: number; body: Obj }>,
  metric: string,
) {
  for (let i = 0; i < 200; i++) {
    const r = await read(metric);
    if (r.status === 200) return r;
    await new Promise((res) => setTimeout(res, 50));
  }
  return await read(metric);
}

describe("KEDA ScaledObjects served", () => {
  it("collects each trigger and answers as KEDA's metrics server", async () => {
    const s = await setup();
    try {
      await settle();
      // the HPA controller's client lowercases the name: matched without case, answered as spec'd
      const cron = await readWhenCollected(s.read, "s2-cron-etc-utc-00xxx-5923xxx");
      assert.equal(cron.status, 200);
      assert.equal(cron.body.kind, "ExternalMetricValueList");
      assert.equal(cron.body.items.length, 1);
      const item = cron.body.items[0];
      assert.equal(item.metricName, "s2-cron-Etc-UTC-00xxx-5923xxx");
      assert.equal(item.metricLabels, null);
      assert.equal(item.value, "4");
      assert.match(item.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

      const prom = await readWhenCollected(s.read, "s0-prometheus");
      assert.deepEqual(
        [prom.status, prom.body.items[0].metricName, prom.body.items[0].value],
        [200, "s0-prometheus", "250.250"],
      );
      const asked = prometheus.seen.at(-1)!;
      assert.equal(asked.path, "/api/v1/query");
      assert.equal(asked.params.query, 'sum(rate(http_requests_total{app="web"}[1m]))');
      assert.equal(asked.params.namespace, "shop");
      assert.match(asked.params.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      assert.equal(asked.authorization, "Bearer tok-1");

      const api = await readWhenCollected(s.read, "s1-metric-api-queue-depth");
      assert.deepEqual(
        [api.status, api.body.items[0].metricName, api.body.items[0].value],
        [200, "s1-metric-api-queue-depth", "7"],
      );
      assert.equal(metricsApiHeaders["x-api-key"], "k-9");

      // a metric the ScaledObject does not have: KEDA's error
      const none = await s.read("s9-nothing");
      assert.deepEqual(none, {
        status: 500,
        body: {
          kind: "Status",
          apiVersion: "v1",
          metadata: {},
          status: "Failure",
          message:
            "rpc error: code = Unknown desc = error when getting metric values no matching metrics found for s9-nothing",
          code: 500,
        },
      });
      // nothing leaks into the logs
      assert.ok(!JSON.stringify(s.logger.entries).includes("tok-1"));
    } finally {
      await s.stop();
    }
  });

  it("serves a ScaledObject's metrics before its HPA is written, and forgets them with it (issue 51)", async () => {
    // the HPA's create fails (as it waits for the client's rate limit at a start with many)
    const s = await setup(prometheus.url, [], new Error("create refused"));
    try {
      await settle();
      assert.equal(s.cluster.get("HorizontalPodAutoscaler", "shop", "keda-hpa-web"), undefined);
      const prom = await readWhenCollected(s.read, "s0-prometheus");
      assert.deepEqual(
        [prom.status, prom.body.items[0].metricName, prom.body.items[0].value],
        [200, "s0-prometheus", "250.250"],
      );
      assert.deepEqual(s.engine.status().map((p) => p.key).filter((k) => k.includes("s0")), [
        "shop/keda-hpa-web/0/External/s0-prometheus",
      ]);
      // the ScaledObject goes before its HPA was ever written: so do its plans
      s.cluster.delete("ScaledObject", "shop", "web");
      await settle();
      await s.keda.idle();
      assert.deepEqual(s.engine.status(), []);
    } finally {
      await s.stop();
    }
  });

  it("answers KEDA's error while a trigger's source fails", async () => {
    const down = await startFakePrometheusApi();
    down.reply = () => ({ status: 503, body: "down" });
    const s = await setup(down.url);
    try {
      await settle();
      await readWhenCollected(s.read, "s2-cron-etc-utc-00xxx-5923xxx");
      // the first collection has failed by now (all three start together)
      let r = await s.read("s0-prometheus");
      for (let i = 0; i < 100 && down.seen.length === 0; i++) {
        await new Promise((res) => setTimeout(res, 50));
        r = await s.read("s0-prometheus");
      }
      assert.deepEqual([r.status, r.body.message], [
        500,
        "rpc error: code = Unknown desc = error when getting metric values metric:s0-prometheus encountered error",
      ]);
    } finally {
      await s.stop();
      await down.close();
    }
  });

  it("computes scalingModifiers' composite metric from the named triggers, as a milli quantity", async () => {
    const composite: KubeObject = {
      apiVersion: "keda.sh/v1alpha1",
      kind: "ScaledObject",
      metadata: { name: "mix", namespace: "shop", uid: "uid-mix" },
      spec: {
        scaleTargetRef: { name: "web" },
        advanced: { scalingModifiers: { formula: "prom + api * 2", target: "10" } },
        triggers: [
          {
            type: "prometheus",
            name: "prom",
            metadata: { serverAddress: prometheus.url, query: "up", threshold: "1" },
          },
          {
            type: "metrics-api",
            name: "api",
            metadata: {
              url: `http://127.0.0.1:${metricsApi.port}/stats`,
              valueLocation: "queue.depth",
            },
          },
        ],
      },
    };
    const s = await setup(prometheus.url, [["ScaledObject", composite]]);
    try {
      await settle();
      const hpa = s.cluster.get("HorizontalPodAutoscaler", "shop", "keda-hpa-mix")!;
      assert.deepEqual(hpa.spec.metrics, [{
        type: "External",
        external: {
          metric: {
            name: "composite-metric",
            selector: { matchLabels: { "scaledobject.keda.sh/name": "mix" } },
          },
          target: { type: "AverageValue", averageValue: "10" },
        },
      }]);
      const sel = "labelSelector=scaledobject.keda.sh%2Fname%3Dmix";
      let r = await s.read("composite-metric", sel);
      for (let i = 0; i < 200 && r.status !== 200; i++) {
        await new Promise((res) => setTimeout(res, 50));
        r = await s.read("composite-metric", sel);
      }
      // 250.25 + 7 * 2, set as milli: 264250m
      assert.deepEqual(
        [r.status, r.body.items?.[0]?.metricName, r.body.items?.[0]?.value],
        [200, "composite-metric", "264250m"],
      );
      // KEDA answers the composite whatever name is asked
      const other = await s.read("s0-prometheus", sel);
      assert.equal(other.body.items[0].metricName, "composite-metric");
    } finally {
      await s.stop();
    }
  });

  it("serves KEDA's fallback past failureThreshold failed collections", async () => {
    const down = await startFakePrometheusApi();
    down.reply = () => ({ status: 503, body: "down" });
    const withFallback: KubeObject = {
      apiVersion: "keda.sh/v1alpha1",
      kind: "ScaledObject",
      metadata: { name: "fb", namespace: "shop", uid: "uid-fb" },
      spec: {
        scaleTargetRef: { name: "web" },
        pollingInterval: 1,
        fallback: { failureThreshold: 1, replicas: 6 },
        triggers: [{
          type: "prometheus",
          metadata: { serverAddress: down.url, query: "up", threshold: "5" },
        }],
      },
    };
    const s = await setup(prometheus.url, [["ScaledObject", withFallback]]);
    try {
      await settle();
      const sel = "labelSelector=scaledobject.keda.sh%2Fname%3Dfb";
      let r = await s.read("s0-prometheus", sel);
      for (let i = 0; i < 200 && r.status !== 200; i++) {
        await new Promise((res) => setTimeout(res, 50));
        r = await s.read("s0-prometheus", sel);
      }
      // two failures (more than 1): 6 replicas x target 5
      assert.deepEqual([r.status, r.body.items?.[0]?.value], [200, "30"]);
      assert.ok(down.seen.length >= 2, `asked ${down.seen.length} times`);
    } finally {
      await s.stop();
      await down.close();
    }
  });

  it("runs KEDA's scale loop on the engine's collections: to zero while inactive", async () => {
    const zero: KubeObject = {
      apiVersion: "keda.sh/v1alpha1",
      kind: "ScaledObject",
      metadata: {
        name: "zero",
        namespace: "shop",
        uid: "uid-zero",
        creationTimestamp: "2026-01-01T00:00:00Z",
      },
      spec: {
        scaleTargetRef: { name: "web" },
        minReplicaCount: 0,
        cooldownPeriod: 0,
        pollingInterval: 1,
        triggers: [{
          type: "prometheus",
          metadata: {
            serverAddress: prometheus.url,
            query: "up",
            threshold: "10",
            activationThreshold: "1000",
          },
        }],
      },
    };
    const s = await setup(prometheus.url, [["ScaledObject", zero]]);
    try {
      let status: Obj = null;
      for (let i = 0; i < 100; i++) {
        await new Promise((res) => setTimeout(res, 50));
        status = s.cluster.get("ScaledObject", "shop", "zero")?.status;
        if (status?.triggersActivity) break;
      }
      // 250.25 is not above 1000: inactive, and the Deployment (2 replicas) goes to zero
      assert.deepEqual(status?.triggersActivity, { "s0-prometheus": { isActive: false } });
      assert.equal(s.cluster.get("Deployment", "shop", "web")!.spec.replicas, 0);
      assert.deepEqual(
        status.conditions.find((c: Obj) => c.type === "Active"),
        {
          type: "Active",
          status: "False",
          reason: "ScalerNotActive",
          message: "Scaling is not performed because triggers are not active",
        },
      );
    } finally {
      await s.stop();
    }
  });

  it("leaves reads for ScaledObjects it does not own to the store (and the delegate)", async () => {
    const s = await setup();
    try {
      const r = await s.read("s0-prometheus", "labelSelector=scaledobject.keda.sh%2Fname%3Dother");
      assert.equal(r.status, 404);
      assert.equal(r.body.reason, "NotFound");
    } finally {
      await s.stop();
    }
  });
});
