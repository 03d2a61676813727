/**
 * The engine's formula metrics and fallback (issue 21): a formula is computed from its inputs'
 * latest collections, an input in error makes it an error naming the input, and past the
 * fallback threshold the value that makes the HPA compute the fallback replica count is served,
 * with a Warning event when that starts and a Normal one when it ends.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/cluster/types.ts";
import { createCollectorRegistry } from "../../src/collectors/registry.ts";
import type { CollectContext, Collector, CollectorFactory } from "../../src/collectors/types.ts";
import { parseSelector } from "../../src/core/kubernetes/label_selector.ts";
import { Engine } from "../../src/engine/engine.ts";
import { memoryLogger } from "../../src/engine/logger.ts";
import { MetricStore } from "../../src/store/store.ts";
import { ManualTimers, MemoryCluster, readyPod, RecordingWriter, settle } from "./support.ts";

/** Per endpoint: a value or an error; how often each was asked. */
interface Backend {
  answers: Map<string, number | Error>;
  calls: Map<string, number>;
}

/** External json-path stand-in: `http://a.example/` is endpoint "A". */
function fakeExternal(backend: Backend): CollectorFactory {
  return {
    type: "json-path",
    metricTypes: ["External"],
    create({ plan }): Collector {
      const endpoint = new URL(plan.config["endpoint"]).hostname.split(".")[0].toUpperCase();
      return {
        queryKey: `fake|${endpoint}`,
        collect(ctx: CollectContext) {
          backend.calls.set(endpoint, (backend.calls.get(endpoint) ?? 0) + 1);
          const a = backend.answers.get(endpoint) ?? 0;
          if (a instanceof Error) return Promise.reject(a);
          return Promise.resolve({ samples: [{ value: a, timestamp: ctx.now() }] });
        },
      };
    },
  };
}

/** Pods json-path stand-in: every pod of `pods()` answers `value()` (or all fail). */
function fakePods(pods: () => string[], value: () => number | Error): CollectorFactory {
  return {
    type: "json-path",
    metricTypes: ["Pods"],
    create(): Collector {
      return {
        queryKey: "fake-pods",
        kinds: ["Pod"],
        collect(ctx: CollectContext) {
          const v = value();
          if (v instanceof Error) return Promise.reject(v);
          return Promise.resolve({
            samples: pods().map((objectName) => ({ objectName, value: v, timestamp: ctx.now() })),
          });
        },
      };
    },
  };
}

function setup(factories?: (b: Backend) => CollectorFactory[]) {
  const cluster = new MemoryCluster();
  const timers = new ManualTimers();
  const store = new MetricStore({ ttlSeconds: 900 });
  const backend: Backend = { answers: new Map(), calls: new Map() };
  const writer = new RecordingWriter(cluster);
  const logger = memoryLogger();
  const engine = new Engine({
    cluster,
    store,
    registry: createCollectorRegistry(factories?.(backend) ?? [fakeExternal(backend)]),
    now: timers.clock,
    setTimer: timers.setTimer,
    clearTimer: timers.clearTimer,
    random: () => 0.5,
    logger,
    writer,
  });
  return { cluster, timers, store, backend, writer, logger, engine };
}

type Setup = ReturnType<typeof setup>;

function external(s: Setup, metric: string, namespace = "default"): number[] | string {
  const r = s.store.lookupExternal(
    { namespace, metricName: metric, selector: parseSelector("") },
    s.timers.now,
  );
  return "items" in r ? r.items.map((i) => i.value) : r.miss.reason;
}

/** An HPA whose External metric `f` is `expression` over hidden External inputs. */
function formulaHpa(
  expression: string,
  inputs: Record<string, string>,
  extra: Record<string, string> = {},
  options: { name?: string; namespace?: string; target?: Record<string, string> } = {},
): KubeObject {
  const annotations: Record<string, string> = {
    "metric-config.external.f.formula/expression": expression,
  };
  for (const [input, endpoint] of Object.entries(inputs)) {
    annotations[`metric-config.external.${input}.json-path/endpoint`] =
      `http://${endpoint.toLowerCase()}.example/`;
    annotations[`metric-config.external.${input}.json-path/json-key`] = "$.n";
    annotations[`metric-config.external.${input}.json-path/interval`] = "10s";
  }
  Object.assign(annotations, extra);
  const name = options.name ?? "web";
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name, namespace: options.namespace ?? "default", annotations },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
      minReplicas: 1,
      maxReplicas: 20,
      metrics: [{
        type: "External",
        external: {
          metric: { name: "f", selector: { matchLabels: { type: "formula" } } },
          target: options.target ?? { type: "AverageValue", averageValue: "10" },
        },
      }],
    },
  };
}

const FALLBACK = {
  "metric-config.external.f.formula/fallback-failure-threshold": "2",
  "metric-config.external.f.formula/fallback-replicas": "5",
};

function deployment(replicas: number): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: "default" },
    spec: { replicas, selector: { matchLabels: { app: "web" } } },
  };
}

describe("Engine: formula metrics", () => {
  it("serves the formula over hidden inputs, truncated to milli, and serves no input", async () => {
    const s = setup();
    s.backend.answers.set("A", 1.5);
    s.backend.answers.set("B", 0.23456);
    s.cluster.set(
      "HorizontalPodAutoscaler",
      formulaHpa("queue_len * 2 + b", { "queue-len": "A", b: "B" }),
    );
    await s.engine.start();
    await settle();
    assert.deepEqual(external(s, "f"), [3.234]);
    assert.match(external(s, "queue-len") as string, /no HPA/i);
    const status = s.engine.status();
    assert.deepEqual(
      status.map((p) => [p.plan.metricName, p.plan.hidden ?? false, p.problem]),
      [["f", false, null], ["queue-len", true, null], ["b", true, null]],
    );
    s.backend.answers.set("A", -0.5);
    await s.timers.advance(10_000);
    assert.deepEqual(external(s, "f"), [-0.765]); // -0.76544 truncated toward zero
    await s.engine.stop();
  });

  it("collects identical inputs of several HPAs once", async () => {
    const s = setup();
    s.backend.answers.set("A", 4);
    s.backend.answers.set("B", 6);
    s.cluster.set(
      "HorizontalPodAutoscaler",
      formulaHpa("a + b", { a: "A", b: "B" }, {}, { name: "one" }),
    );
    s.cluster.set(
      "HorizontalPodAutoscaler",
      formulaHpa("max(a, b)", { a: "A", b: "B" }, {}, { name: "two", namespace: "other" }),
    );
    await s.engine.start();
    await settle();
    assert.deepEqual(external(s, "f"), [10]);
    assert.deepEqual(external(s, "f", "other"), [6]);
    assert.equal(s.backend.calls.get("A"), 1);
    assert.equal(s.backend.calls.get("B"), 1);
    await s.engine.stop();
  });

  it("makes an input error the formula's error, naming the input, and serves no stale value", async () => {
    const s = setup();
    s.backend.answers.set("A", 4);
    s.backend.answers.set("B", 6);
    s.cluster.set("HorizontalPodAutoscaler", formulaHpa("a + b", { a: "A", b: "B" }));
    await s.engine.start();
    await settle();
    assert.deepEqual(external(s, "f"), [10]);
    s.backend.answers.set("B", new Error("connection refused"));
    await s.timers.advance(10_000);
    const reason = external(s, "f") as string;
    assert.match(
      reason,
      /last collection failed with "input `b` \(External metric b\) failed: connection refused"/,
    );
    assert.ok(
      s.writer.events.some((e) =>
        e.event.message ===
          "failed to compute External metric f: input `b` (External metric b) failed: connection refused"
      ),
      JSON.stringify(s.writer.events),
    );
    s.backend.answers.set("B", 1);
    await s.timers.advance(10_000);
    assert.deepEqual(external(s, "f"), [5]);
    await s.engine.stop();
  });

  it("never reads an input value older than the metrics TTL", async () => {
    const s = setup();
    const engine = new Engine({
      cluster: s.cluster,
      store: s.store,
      registry: createCollectorRegistry([fakeExternal(s.backend)]),
      now: s.timers.clock,
      setTimer: s.timers.setTimer,
      clearTimer: s.timers.clearTimer,
      random: () => 0.5,
      metricsTtlSeconds: 60,
    });
    s.backend.answers.set("A", 4);
    s.backend.answers.set("B", 6);
    s.cluster.set(
      "HorizontalPodAutoscaler",
      formulaHpa("a + b", { a: "A", b: "B" }, {
        "metric-config.external.b.json-path/interval": "5m",
      }),
    );
    await engine.start();
    await settle();
    assert.deepEqual(external(s, "f"), [10]);
    await s.timers.advance(60_000); // a: 6 more collections; b's value is 60 s old
    assert.deepEqual(external(s, "f"), [10]);
    await s.timers.advance(10_000);
    assert.match(
      external(s, "f") as string,
      /input `b` \(External metric b\) has no value younger than the metrics TTL 1m0s/,
    );
    await engine.stop();
  });

  it("makes a division by zero an error", async () => {
    const s = setup();
    s.backend.answers.set("A", 4);
    s.backend.answers.set("B", 0);
    s.cluster.set("HorizontalPodAutoscaler", formulaHpa("a / b", { a: "A", b: "B" }));
    await s.engine.start();
    await settle();
    assert.match(external(s, "f") as string, /formula a \/ b: division by zero/);
    await s.engine.stop();
  });

  it("serves fallback-replicas x target past the threshold, with a Warning event, and the formula again after recovery", async () => {
    const s = setup();
    s.backend.answers.set("A", 4);
    s.backend.answers.set("B", 6);
    s.cluster.set("HorizontalPodAutoscaler", formulaHpa("a + b", { a: "A", b: "B" }, FALLBACK));
    await s.engine.start();
    await settle();
    assert.deepEqual(external(s, "f"), [10]);
    s.backend.answers.set("A", new Error("boom"));
    s.backend.answers.set("B", new Error("bang"));
    await s.timers.advance(10_000); // 1 failure each
    assert.match(external(s, "f") as string, /input `a` \(External metric a\) failed: boom/);
    await s.timers.advance(10_000); // 2: at the threshold, still an error
    assert.match(external(s, "f") as string, /failed: boom/);
    assert.deepEqual(s.engine.fallbackStatus(), [{
      hpa: { namespace: "default", name: "web" },
      metricType: "External",
      metricName: "f",
      active: false,
      consecutiveFailures: 2,
    }]);
    await s.timers.advance(10_000); // 3 > 2: fallback, one value for both failing inputs
    assert.deepEqual(external(s, "f"), [50]);
    assert.equal(s.engine.fallbackStatus()[0].active, true);
    const active = s.writer.events.filter((e) => e.event.reason === "FallbackActive");
    assert.deepEqual(active.map((e) => [e.event.type, e.event.message]), [[
      "Warning",
      // a is collected first: past the threshold while b (2 failures, in error) is not, the
      // static behaviour serves the fallback value at once; b past it too changes nothing
      "fallback of External metric f: input `a` (External metric a) failed 3 consecutive collections, more than fallback-failure-threshold 2; serving 50 so that the HPA computes 5 replicas (fallback-behavior static)",
    ]]);
    await s.timers.advance(10_000);
    assert.deepEqual(external(s, "f"), [50]);
    assert.equal(s.writer.events.filter((e) => e.event.reason === "FallbackActive").length, 1);
    s.backend.answers.set("A", 1);
    s.backend.answers.set("B", 2);
    await s.timers.advance(10_000);
    assert.deepEqual(external(s, "f"), [3]);
    const ended = s.writer.events.filter((e) => e.event.reason === "FallbackEnded");
    assert.deepEqual(ended.map((e) => [e.event.type, e.event.message]), [[
      "Normal",
      "fallback of External metric f ended: its inputs answer again",
    ]]);
    assert.deepEqual(s.engine.fallbackStatus()[0].consecutiveFailures, 0);
    await s.engine.stop();
  });

  it("follows currentReplicasIfHigher from the scale target's spec.replicas", async () => {
    const s = setup();
    s.cluster.set("Deployment", deployment(8));
    s.backend.answers.set("A", new Error("down"));
    s.cluster.set(
      "HorizontalPodAutoscaler",
      formulaHpa("a", { a: "A" }, {
        ...FALLBACK,
        "metric-config.external.f.formula/fallback-failure-threshold": "0",
        "metric-config.external.f.formula/fallback-behavior": "currentReplicasIfHigher",
      }),
    );
    await s.engine.start();
    await settle();
    assert.deepEqual(external(s, "f"), [80]);
    await s.engine.stop();
  });

  it("with scalingModifiers, a failing input past the threshold is missing, ?? takes the next, and nil falls back to fallback-replicas", async () => {
    const s = setup();
    s.backend.answers.set("A", 16);
    s.backend.answers.set("B", 12);
    s.cluster.set(
      "HorizontalPodAutoscaler",
      formulaHpa("primary ?? secondary ?? 8", { primary: "A", secondary: "B" }, {
        "metric-config.external.f.formula/fallback-failure-threshold": "0",
        "metric-config.external.f.formula/fallback-replicas": "4",
        "metric-config.external.f.formula/fallback-behavior": "scalingModifiers",
      }, { target: { type: "AverageValue", averageValue: "2" } }),
    );
    await s.engine.start();
    await settle();
    assert.deepEqual(external(s, "f"), [16]);
    s.backend.answers.set("A", new Error("down"));
    await s.timers.advance(10_000);
    assert.deepEqual(external(s, "f"), [12]);
    s.backend.answers.set("B", new Error("down"));
    await s.timers.advance(10_000);
    assert.deepEqual(external(s, "f"), [8]); // the literal is a metric value
    await s.engine.stop();

    const t = setup();
    t.backend.answers.set("A", new Error("down"));
    t.cluster.set(
      "HorizontalPodAutoscaler",
      formulaHpa("a ?? nil", { a: "A" }, {
        "metric-config.external.f.formula/fallback-failure-threshold": "0",
        "metric-config.external.f.formula/fallback-replicas": "7",
        "metric-config.external.f.formula/fallback-behavior": "scalingModifiers",
      }, { target: { type: "AverageValue", averageValue: "2" } }),
    );
    await t.engine.start();
    await settle();
    assert.deepEqual(external(t, "f"), [14]);
    await t.engine.stop();
  });
});

describe("Engine: fallback of a plain metric", () => {
  function hpa(extra: Record<string, string>): KubeObject {
    return {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: {
        name: "web",
        namespace: "default",
        annotations: {
          "metric-config.external.q.json-path/endpoint": "http://a.example/",
          "metric-config.external.q.json-path/json-key": "$.n",
          "metric-config.external.q.json-path/interval": "10s",
          "metric-config.external.q.json-path/fallback-failure-threshold": "1",
          "metric-config.external.q.json-path/fallback-replicas": "6",
          ...extra,
        },
      },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
        maxReplicas: 20,
        metrics: [{
          type: "External",
          external: {
            metric: { name: "q", selector: { matchLabels: { type: "json-path" } } },
            target: { type: "Value", value: "10" },
          },
        }],
      },
    };
  }

  it("drops the value on failure up to the threshold, then serves R x target / ready pods", async () => {
    const s = setup();
    s.cluster.set("Deployment", deployment(3));
    for (const n of ["web-1", "web-2", "web-3"]) {
      s.cluster.set("Pod", readyPod(n, { ip: "10.0.0.1", labels: { app: "web" } }));
    }
    s.backend.answers.set("A", 7);
    s.cluster.set("HorizontalPodAutoscaler", hpa({}));
    await s.engine.start();
    await settle();
    assert.deepEqual(external(s, "q"), [7]);
    s.backend.answers.set("A", new Error("boom"));
    await s.timers.advance(10_000);
    assert.match(external(s, "q") as string, /last collection failed with "boom"/);
    await s.timers.advance(10_000);
    assert.deepEqual(external(s, "q"), [20]); // 6 x 10 / 3
    assert.equal(s.writer.events.filter((e) => e.event.reason === "FallbackActive").length, 1);
    s.backend.answers.set("A", 9);
    await s.timers.advance(10_000);
    assert.deepEqual(external(s, "q"), [9]);
    assert.equal(s.writer.events.filter((e) => e.event.reason === "FallbackEnded").length, 1);
    await s.engine.stop();
  });

  it("says why there is no fallback value with no ready pods", async () => {
    const s = setup();
    s.cluster.set("Deployment", deployment(3));
    s.backend.answers.set("A", new Error("boom"));
    s.cluster.set("HorizontalPodAutoscaler", hpa({}));
    await s.engine.start();
    await settle();
    await s.timers.advance(10_000);
    assert.match(
      external(s, "q") as string,
      /2 consecutive failed collections \(the last: boom\); no fallback value: cannot compute the fallback value of a Value target for 6 replicas: no ready pods/,
    );
    await s.engine.stop();
  });

  it("gives every ready pod of a Pods metric R x target / ready pods", async () => {
    let answer: number | Error = 3;
    const s = setup(() => [fakePods(() => ["web-1", "web-2"], () => answer)]);
    s.cluster.set("Deployment", deployment(2));
    for (const n of ["web-1", "web-2"]) {
      s.cluster.set("Pod", readyPod(n, { ip: "10.0.0.1", labels: { app: "web" } }));
    }
    s.cluster.set("HorizontalPodAutoscaler", {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: {
        name: "web",
        namespace: "default",
        annotations: {
          "metric-config.pods.rps.json-path/json-key": "$.n",
          "metric-config.pods.rps.json-path/port": "9090",
          "metric-config.pods.rps.json-path/interval": "10s",
          "metric-config.pods.rps.json-path/fallback-failure-threshold": "0",
          "metric-config.pods.rps.json-path/fallback-replicas": "5",
        },
      },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
        maxReplicas: 20,
        metrics: [{
          type: "Pods",
          pods: { metric: { name: "rps" }, target: { type: "AverageValue", averageValue: "4" } },
        }],
      },
    });
    await s.engine.start();
    await settle();
    const pods = () => {
      const r = s.store.lookupCustom(
        {
          namespace: "default",
          groupResource: "pods",
          name: "*",
          metricName: "rps",
          metricSelector: "",
        },
        s.timers.now,
      );
      return "items" in r ? r.items.map((i) => [i.objectName, i.value]) : r.miss.reason;
    };
    assert.deepEqual(pods(), [["web-1", 3], ["web-2", 3]]);
    answer = new Error("all pods failed");
    await s.timers.advance(10_000);
    assert.deepEqual(pods(), [["web-1", 10], ["web-2", 10]]); // 5 x 4 / 2
    await s.engine.stop();
  });
});
