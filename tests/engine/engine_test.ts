import { describe, it } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import type { Kind, KubeObject } from "../../src/cluster/types.ts";
import { createCollectorRegistry } from "../../src/collectors/registry.ts";
import { createPodJsonPathFactory } from "../../src/collectors/pod_json_path.ts";
import { createSkipperFactory } from "../../src/collectors/skipper.ts";
import type { CollectContext, Collector, CollectorFactory } from "../../src/collectors/types.ts";
import { parseSelector } from "../../src/core/kubernetes/label_selector.ts";
import { collectionPhase, Engine } from "../../src/engine/engine.ts";
import type { CollectionReport, EngineOptions, ReconcileReport } from "../../src/engine/engine.ts";
import { memoryLogger } from "../../src/engine/logger.ts";
import { MetricStore } from "../../src/store/store.ts";
import { ManualTimers, MemoryCluster, readyPod, RecordingWriter, settle } from "./support.ts";

/** What the fake backend answers per endpoint: a value, an error, or a promise to wait on. */
type Answer = number | Error | (() => Promise<number>);

interface Backend {
  answers: Map<string, Answer>;
  calls: Map<string, number>;
  signals: AbortSignal[];
  /** What the fake collectors report as their own timeout, ms (none when absent). */
  timeoutMs?: number;
}

function fakeExternal(backend: Backend): CollectorFactory {
  return {
    type: "json-path",
    metricTypes: ["External"],
    create({ plan }): Collector {
      // http://a.example/ is backend "A".
      const endpoint = new URL(plan.config["endpoint"]).hostname.split(".")[0].toUpperCase();
      if (endpoint === "BAD") throw new Error(`unusable endpoint for metric ${plan.metricName}`);
      return {
        queryKey: `fake|${endpoint}`,
        ...(backend.timeoutMs === undefined ? {} : { timeoutMs: () => backend.timeoutMs! }),
        async collect(ctx: CollectContext) {
          backend.calls.set(endpoint, (backend.calls.get(endpoint) ?? 0) + 1);
          backend.signals.push(ctx.signal);
          const a = backend.answers.get(endpoint) ?? 0;
          if (a instanceof Error) throw a;
          const value = typeof a === "function" ? await a() : a;
          return { samples: [{ value, timestamp: ctx.now() }] };
        },
      };
    },
  };
}

function fakePods(pods: () => string[]): CollectorFactory {
  return {
    type: "json-path",
    metricTypes: ["Pods"],
    create(): Collector {
      return {
        queryKey: "fake-pods",
        kinds: ["Pod"],
        collect(ctx: CollectContext) {
          return Promise.resolve({
            samples: pods().map((name, i) => ({
              objectName: name,
              value: i + 1,
              timestamp: ctx.now(),
            })),
          });
        },
      };
    },
  };
}

function externalHpa(
  name: string,
  metrics: { name: string; endpoint: string; type?: string; interval?: string }[],
  namespace = "default",
): KubeObject {
  const annotations: Record<string, string> = {};
  for (const m of metrics) {
    annotations[`metric-config.external.${m.name}.json-path/endpoint`] =
      `http://${m.endpoint.toLowerCase()}.example/`;
    annotations[`metric-config.external.${m.name}.json-path/json-key`] = "$.n";
    if (m.interval) annotations[`metric-config.external.${m.name}.json-path/interval`] = m.interval;
  }
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name, namespace, annotations },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name },
      minReplicas: 1,
      maxReplicas: 10,
      metrics: metrics.map((m) => ({
        type: "External",
        external: {
          metric: { name: m.name, selector: { matchLabels: { type: m.type ?? "json-path" } } },
          target: { type: "AverageValue", averageValue: "10" },
        },
      })),
    },
  };
}

/** An HPA with a Skipper requests-per-second Object metric on Ingress `web`. */
function skipperHpa(target: Record<string, string>): KubeObject {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name: "web", namespace: "default" },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
      maxReplicas: 10,
      metrics: [{
        type: "Object",
        object: {
          metric: { name: "requests-per-second" },
          describedObject: { apiVersion: "networking.k8s.io/v1", kind: "Ingress", name: "web" },
          target,
        },
      }],
    },
  };
}

/** A Prometheus query API answering every query with the scalar `value`; counts queries. */
function fakePrometheusFetch(value: string, calls: { n: number }): typeof fetch {
  return () => {
    calls.n++;
    const body = JSON.stringify({
      status: "success",
      data: { resultType: "scalar", result: [1709546400, value] },
    });
    return Promise.resolve(
      new Response(body, { status: 200, headers: { "content-type": "application/json" } }),
    );
  };
}

/** A cluster whose kinds can fail to list (`kindError`) or never sync. */
class FailingCluster extends MemoryCluster {
  readonly errors = new Map<Kind, string>();
  readonly never = new Set<Kind>();

  kindError(kind: Kind): string | null {
    return this.errors.get(kind) ?? null;
  }

  override ensure(kind: Kind): Promise<void> {
    return this.never.has(kind) ? new Promise<void>(() => {}) : super.ensure(kind);
  }
}

/** A Pods collector reading pods of a Rollout. */
function rolloutPods(): CollectorFactory {
  return {
    type: "json-path",
    metricTypes: ["Pods"],
    create: () => ({
      queryKey: "rollout-pods",
      kinds: ["Pod", "Rollout"],
      collect: (ctx) =>
        Promise.resolve({ samples: [{ objectName: "web-1", value: 4, timestamp: ctx.now() }] }),
    }),
  };
}

function rolloutHpa(): KubeObject {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: {
      name: "web",
      namespace: "default",
      annotations: {
        "metric-config.pods.rps.json-path/json-key": "$.rps",
        "metric-config.pods.rps.json-path/port": "9090",
      },
    },
    spec: {
      scaleTargetRef: { apiVersion: "argoproj.io/v1alpha1", kind: "Rollout", name: "web" },
      maxReplicas: 10,
      metrics: [{
        type: "Pods",
        pods: { metric: { name: "rps" }, target: { type: "AverageValue", averageValue: "1" } },
      }],
    },
  };
}

interface Setup {
  cluster: MemoryCluster;
  timers: ManualTimers;
  store: MetricStore;
  backend: Backend;
  writer: RecordingWriter;
  logger: ReturnType<typeof memoryLogger>;
  reports: CollectionReport[];
  reconciles: ReconcileReport[];
  engine: Engine;
  leader: { value: boolean };
}

/** The engine's settings a test may change (the rest are the defaults). */
type EngineSettings = Pick<
  EngineOptions,
  | "defaultIntervalSeconds"
  | "random"
  | "maxConcurrentCollections"
  | "collectionTimeoutSeconds"
  | "garbageCollectorIntervalSeconds"
  | "disregardIncompatibleHpas"
  | "enabledCollectors"
  | "allowLinkLocalTargets"
>;

function setup(
  options: {
    engine?: EngineSettings;
    factories?: CollectorFactory[];
    writer?: boolean;
    /** Wraps the manual timers' setTimer (to make a timer fire late). */
    setTimer?: (set: ManualTimers["setTimer"]) => ManualTimers["setTimer"];
    fetch?: typeof fetch;
    cluster?: MemoryCluster;
    onNewCollectionsDone?: (count: number) => void;
    newCollectionsBurst?: number;
  } = {},
): Setup {
  const cluster = options.cluster ?? new MemoryCluster();
  const timers = new ManualTimers();
  const store = new MetricStore({ ttlSeconds: 900 });
  const backend: Backend = { answers: new Map(), calls: new Map(), signals: [] };
  const writer = new RecordingWriter(cluster);
  const logger = memoryLogger();
  const reports: CollectionReport[] = [];
  const reconciles: ReconcileReport[] = [];
  const leader = { value: true };
  const engine = new Engine({
    cluster,
    store,
    registry: createCollectorRegistry(options.factories ?? [fakeExternal(backend)]),
    ...options.engine,
    now: timers.clock,
    setTimer: options.setTimer?.(timers.setTimer) ?? timers.setTimer,
    clearTimer: timers.clearTimer,
    // by default every wait is 5% under the interval: 60s -> 57s
    random: options.engine?.random ?? (() => 0),
    logger,
    writer: options.writer === false ? undefined : writer,
    isLeader: () => leader.value,
    onCollection: (r) => reports.push(r),
    onReconcile: (r) => reconciles.push(r),
    ...(options.fetch ? { fetch: options.fetch } : {}),
    onNewCollectionsDone: options.onNewCollectionsDone,
    newCollectionsBurst: options.newCollectionsBurst,
  });
  return { cluster, timers, store, backend, writer, logger, reports, reconciles, engine, leader };
}

function external(s: Setup, metric: string, namespace = "default"): number[] | string {
  const r = s.store.lookupExternal(
    { namespace, metricName: metric, selector: parseSelector("") },
    s.timers.now,
  );
  return "items" in r ? r.items.map((i) => i.value) : r.miss.reason;
}

describe("Engine", () => {
  it("collects at once, then every interval give or take 5% jitter", async () => {
    const s = setup();
    s.backend.answers.set("A", 7);
    s.cluster.set(
      "HorizontalPodAutoscaler",
      externalHpa("web", [{ name: "q", endpoint: "A", interval: "60s" }]),
    );
    await s.engine.start();
    await settle();
    assert.equal(s.backend.calls.get("A"), 1);
    assert.deepEqual(external(s, "q"), [7]);
    await s.timers.advance(56_999); // random 0 -> 60s x (1 + 0.1 x (0 - 0.5)) = 57s
    assert.equal(s.backend.calls.get("A"), 1);
    await s.timers.advance(1);
    assert.equal(s.backend.calls.get("A"), 2);
    await s.engine.stop();
  });

  it("waits the interval on average: up to 5% more as well as up to 5% less", async () => {
    const draws = [0.999, 0.5];
    const s = setup({ engine: { random: () => draws.shift() ?? 0.5 } });
    s.backend.answers.set("A", 7);
    s.cluster.set(
      "HorizontalPodAutoscaler",
      externalHpa("web", [{ name: "q", endpoint: "A", interval: "60s" }]),
    );
    await s.engine.start();
    await settle();
    await s.timers.advance(62_993); // 60s x (1 + 0.1 x (0.999 - 0.5)) = 62.994s
    assert.equal(s.backend.calls.get("A"), 1);
    await s.timers.advance(1);
    assert.equal(s.backend.calls.get("A"), 2);
    await s.timers.advance(59_999); // random 0.5: the interval itself
    assert.equal(s.backend.calls.get("A"), 2);
    await s.timers.advance(1);
    assert.equal(s.backend.calls.get("A"), 3);
    await s.engine.stop();
  });

  it("spreads collections that queued behind the bound over the interval by query key", async () => {
    const s = setup({ engine: { maxConcurrentCollections: 1 } });
    let first = true;
    // A's first collection holds the only slot for 5s; B waits for it.
    s.backend.answers.set("A", () => {
      if (!first) return Promise.resolve(1);
      first = false;
      return new Promise<number>((r) => s.timers.setTimer(() => r(1), 5_000));
    });
    s.backend.answers.set("B", 2);
    for (const e of ["A", "B"]) {
      s.cluster.set(
        "HorizontalPodAutoscaler",
        externalHpa(`hpa-${e}`, [{ name: `q-${e}`, endpoint: e, interval: "60s" }]),
      );
    }
    await s.engine.start();
    await settle();
    assert.deepEqual(Object.fromEntries(s.backend.calls), { A: 1 });
    await s.timers.advance(5_000);
    assert.deepEqual(Object.fromEntries(s.backend.calls), { A: 1, B: 1 });
    // B queued: its second collection is at its phase of the interval after its start.
    const second = 5_000 + Math.round(60_000 * collectionPhase("fake|B"));
    assert.equal(second, 5_000 + 27_834);
    await s.timers.advance(second - 5_000 - 1);
    assert.deepEqual(Object.fromEntries(s.backend.calls), { A: 1, B: 1 });
    await s.timers.advance(1);
    assert.deepEqual(Object.fromEntries(s.backend.calls), { A: 1, B: 2 });
    // A did not queue: 57s after its start, as usual; then B every 57s from its second.
    await s.timers.advance(57_000 - second);
    assert.deepEqual(Object.fromEntries(s.backend.calls), { A: 2, B: 2 });
    await s.timers.advance(second - 1); // B's third is due at second + 57s
    assert.deepEqual(Object.fromEntries(s.backend.calls), { A: 2, B: 2 });
    await s.timers.advance(1);
    assert.deepEqual(Object.fromEntries(s.backend.calls), { A: 2, B: 3 });
    await s.engine.stop();
  });

  it("ends the first round when every collection of the start has ended once", async () => {
    const s = setup({ engine: { maxConcurrentCollections: 1 } });
    // A's first collection takes 5s and holds the only slot; B's fails at once after it.
    s.backend.answers.set(
      "A",
      () => new Promise<number>((r) => s.timers.setTimer(() => r(1), 5_000)),
    );
    s.backend.answers.set("B", () => Promise.reject(new Error("down")));
    for (const e of ["A", "B"]) {
      s.cluster.set(
        "HorizontalPodAutoscaler",
        externalHpa(`h-${e}`, [{ name: `q-${e}`, endpoint: e, interval: "60s" }]),
      );
    }
    let ended = false;
    void s.engine.firstRound().then(() => (ended = true));
    await s.engine.start();
    await settle();
    assert.equal(ended, false, "A is still collecting");
    await s.timers.advance(5_000);
    await settle();
    assert.deepEqual([s.backend.calls.get("A"), s.backend.calls.get("B"), ended], [1, 1, true]);
    await s.engine.stop();
  });

  it("ends the first round at once without HPAs, and when the start's collections stop", async () => {
    const empty = setup();
    await empty.engine.start();
    await empty.engine.firstRound();
    await empty.engine.stop();
    const s = setup();
    s.backend.answers.set("A", () => new Promise<number>(() => {}));
    s.cluster.set(
      "HorizontalPodAutoscaler",
      externalHpa("web", [{ name: "q", endpoint: "A", interval: "60s" }]),
    );
    let ended = false;
    void s.engine.firstRound().then(() => (ended = true));
    await s.engine.start();
    await settle();
    assert.equal(ended, false);
    s.cluster.delete("HorizontalPodAutoscaler", "default", "web");
    await settle();
    assert.equal(ended, true);
    await s.engine.stop();
  });

  it("reports a burst of collections created after the start once all have ended their first attempt", async () => {
    const done: number[] = [];
    const s = setup({ onNewCollectionsDone: (n) => done.push(n), newCollectionsBurst: 3 });
    s.backend.answers.set(
      "SLOW",
      () => new Promise<number>((r) => s.timers.setTimer(() => r(1), 5_000)),
    );
    s.cluster.set(
      "HorizontalPodAutoscaler",
      externalHpa("at-start", [{ name: "q0", endpoint: "A", interval: "60s" }]),
    );
    await s.engine.start();
    await s.engine.firstRound();
    await settle();
    assert.deepEqual(done, [], "the start's collections are the first round, not a burst");
    for (const [hpa, endpoint] of [["h1", "B"], ["h2", "C"], ["h3", "slow"]]) {
      s.cluster.set(
        "HorizontalPodAutoscaler",
        externalHpa(hpa, [{ name: `q-${hpa}`, endpoint, interval: "60s" }]),
      );
    }
    await settle();
    assert.deepEqual(done, [], "h3's first collection is still running");
    await s.timers.advance(5_000);
    await settle();
    assert.deepEqual(done, [], "10 s without a new collection have not passed");
    // one more HPA within the quiet time joins the burst
    await s.timers.advance(9_000);
    s.cluster.set(
      "HorizontalPodAutoscaler",
      externalHpa("h4", [{ name: "q-h4", endpoint: "D", interval: "60s" }]),
    );
    await settle();
    await s.timers.advance(9_999);
    await settle();
    assert.deepEqual(done, []);
    await s.timers.advance(1);
    await settle();
    assert.deepEqual(done, [4]);
    // fewer than the burst size since: nothing more
    s.cluster.set(
      "HorizontalPodAutoscaler",
      externalHpa("h5", [{ name: "q-h5", endpoint: "E", interval: "60s" }]),
    );
    await settle();
    await s.timers.advance(60_000);
    await settle();
    assert.deepEqual(done, [4]);
    await s.engine.stop();
  });

  it("gives every query key a fixed phase in (0, 1]", () => {
    assert.deepEqual(["fake|A", "fake|B", "fake|C", ""].map(collectionPhase), [
      0.702,
      0.4639,
      0.2258,
      0.6262,
    ]);
  });

  // Node warns past 10 listeners on an EventTarget; Deno and Bun do not (there the test could
  // not fail), so it is registered under Node only.
  if (!("Deno" in globalThis) && !("Bun" in globalThis)) {
    it("gives a collection a signal that takes a listener per pod without a leak warning", async () => {
      const warnings: string[] = [];
      const onWarning = (w: Error): void => void warnings.push(`${w.name}: ${w.message}`);
      process.on("warning", onWarning);
      try {
        const s = setup();
        s.backend.answers.set("A", 4);
        s.cluster.set(
          "HorizontalPodAutoscaler",
          externalHpa("web", [{ name: "q", endpoint: "A", interval: "60s" }]),
        );
        await s.engine.start();
        await settle();
        const [signal] = s.backend.signals;
        for (let i = 0; i < 50; i++) signal.addEventListener("abort", () => {});
        await settle();
        await new Promise((resolve) => setTimeout(resolve, 10));
        assert.deepEqual(warnings, []);
        await s.engine.stop();
      } finally {
        process.off("warning", onWarning);
      }
    });
  }

  it("frees expired values every --garbage-collector-interval", async () => {
    const s = setup({ engine: { garbageCollectorIntervalSeconds: 300 } });
    s.backend.answers.set("A", 4);
    s.cluster.set(
      "HorizontalPodAutoscaler",
      externalHpa("web", [{ name: "q", endpoint: "A", interval: "60s" }]),
    );
    await s.engine.start();
    await settle();
    assert.equal(s.store.stats().externalValues, 1);
    // the backend fails from now on: the last value stays until the TTL (900 s) ...
    s.backend.answers.set("A", new Error("backend down"));
    await s.timers.advance(900_000);
    assert.equal(s.store.stats().externalValues, 1);
    // ... is no longer served right after, and is freed at the next collector pass (1200 s)
    await s.timers.advance(1_000);
    assert.match(String(external(s, "q")), /backend down/);
    assert.equal(s.store.stats().externalValues, 1);
    await s.timers.advance(299_000);
    assert.equal(s.store.stats().externalValues, 0);
    await s.engine.stop();
  });

  it("keeps the period when a timer fires late: the next wait is shorter", async () => {
    let late = true;
    const s = setup({
      // The first 57s wait fires 3s late (a busy event loop).
      setTimer: (set) => (fn, ms) => {
        if (ms === 57_000 && late) {
          late = false;
          return set(fn, ms + 3_000);
        }
        return set(fn, ms);
      },
    });
    s.backend.answers.set("A", 7);
    s.cluster.set(
      "HorizontalPodAutoscaler",
      externalHpa("web", [{ name: "q", endpoint: "A", interval: "60s" }]),
    );
    await s.engine.start();
    await settle();
    await s.timers.advance(60_000);
    assert.equal(s.backend.calls.get("A"), 2);
    await s.timers.advance(53_999);
    assert.equal(s.backend.calls.get("A"), 2);
    await s.timers.advance(1); // 114s = 2 x 57s, not 60s + 57s
    assert.equal(s.backend.calls.get("A"), 3);
    await s.engine.stop();
  });

  it("restarts only the metric that changed", async () => {
    const s = setup();
    s.backend.answers.set("A", 1).set("B", 2).set("C", 3);
    s.cluster.set(
      "HorizontalPodAutoscaler",
      externalHpa("web", [{ name: "a", endpoint: "A" }, { name: "b", endpoint: "B" }]),
    );
    await s.engine.start();
    await settle();
    await s.timers.advance(30_000);
    s.cluster.set(
      "HorizontalPodAutoscaler",
      externalHpa("web", [{ name: "a", endpoint: "A" }, { name: "b", endpoint: "C" }]),
    );
    await settle();
    assert.deepEqual(Object.fromEntries(s.backend.calls), { A: 1, B: 1, C: 1 });
    assert.deepEqual(external(s, "b"), [3]);
    await s.timers.advance(27_000); // A's first wait (57s) ends; C started 30s later
    assert.deepEqual(Object.fromEntries(s.backend.calls), { A: 2, B: 1, C: 1 });
    await s.timers.advance(30_000);
    assert.deepEqual(Object.fromEntries(s.backend.calls), { A: 2, B: 1, C: 2 });
    await s.engine.stop();
  });

  it("restarts a Skipper metric whose target changes from Value to AverageValue, not for a new target value", async () => {
    const calls = { n: 0 };
    const s = setup({
      factories: [
        createSkipperFactory({
          ingressMetrics: true,
          prometheus: { server: { url: "http://127.0.0.1:9090" } },
        }),
      ],
      fetch: fakePrometheusFetch("12", calls),
    });
    s.cluster.set("Ingress", {
      apiVersion: "networking.k8s.io/v1",
      kind: "Ingress",
      metadata: { name: "web", namespace: "default" },
      spec: { rules: [{ host: "example.org" }] },
    });
    s.cluster.set("Deployment", {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web", namespace: "default" },
      spec: { replicas: 4 },
      status: { replicas: 4 },
    });
    const served = (): number[] | string => {
      const r = s.store.lookupCustom({
        namespace: "default",
        groupResource: "ingresses.networking.k8s.io",
        name: "web",
        metricName: "requests-per-second",
        metricSelector: "",
      }, s.timers.now);
      return "items" in r ? r.items.map((i) => i.value) : r.miss.reason;
    };
    s.cluster.set("HorizontalPodAutoscaler", skipperHpa({ type: "Value", value: "100" }));
    await s.engine.start();
    await settle();
    assert.deepEqual(served(), [3]); // 12 requests/s over 4 replicas
    s.cluster.set(
      "HorizontalPodAutoscaler",
      skipperHpa({ type: "AverageValue", averageValue: "100" }),
    );
    await settle();
    assert.deepEqual(served(), [12]);
    assert.equal(calls.n, 2);
    s.cluster.set(
      "HorizontalPodAutoscaler",
      skipperHpa({ type: "AverageValue", averageValue: "200" }),
    );
    await settle();
    assert.equal(calls.n, 2);
    assert.deepEqual(served(), [12]);
    await s.engine.stop();
  });

  it("serves an Object metric on a Namespace where the HPA controller asks: the HPA's namespace", async () => {
    const objects: CollectorFactory = {
      type: "prometheus",
      metricTypes: ["Object"],
      create: () => ({
        queryKey: "fake-object",
        collect: (ctx) => Promise.resolve({ samples: [{ value: 42, timestamp: ctx.now() }] }),
      }),
    };
    const s = setup({
      factories: [objects],
      engine: { enabledCollectors: new Set(["json-path", "prometheus"]) },
    });
    s.cluster.set("HorizontalPodAutoscaler", {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: {
        name: "web",
        namespace: "shop",
        annotations: { "metric-config.object.jobs.prometheus/query": "sum(jobs)" },
      },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
        maxReplicas: 10,
        metrics: [{
          type: "Object",
          object: {
            metric: { name: "jobs" },
            describedObject: { apiVersion: "v1", kind: "Namespace", name: "default" },
            target: { type: "Value", value: "10" },
          },
        }],
      },
    });
    await s.engine.start();
    await settle();
    // GET /apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/metrics/jobs, as src/api/app.ts
    // looks it up
    const r = s.store.lookupCustom({
      namespace: "shop",
      groupResource: "namespaces",
      name: "shop",
      metricName: "jobs",
      metricSelector: "",
    }, s.timers.now);
    assert.deepEqual(
      "items" in r
        ? r.items.map((i) => [i.namespace, i.groupResource, i.objectName, i.describedKind, i.value])
        : r,
      [["shop", "namespaces", "shop", { kind: "Namespace", apiVersion: "v1" }, 42]],
    );
    await s.engine.stop();
  });

  it("keeps the good metrics of an HPA with a bad one, and explains the bad one", async () => {
    const s = setup();
    s.backend.answers.set("A", 5);
    s.cluster.set(
      "HorizontalPodAutoscaler",
      externalHpa("web", [
        { name: "good", endpoint: "A" },
        { name: "broken", endpoint: "BAD" },
        { name: "prom", endpoint: "P", type: "prometheus" },
      ]),
    );
    await s.engine.start();
    await settle();
    assert.deepEqual(external(s, "good"), [5]);
    assert.match(String(external(s, "broken")), /unusable endpoint for metric broken/);
    assert.deepEqual(
      s.writer.events.map((e) => [e.name, e.event.type, e.event.reason, e.event.message]),
      [
        [
          "default/web",
          "Warning",
          "CreateNewMetricsCollector",
          "failed to create metrics collector for External metric broken: unusable endpoint for metric broken",
        ],
        [
          "default/web",
          "Warning",
          "CreateNewMetricsCollector",
          "failed to create metrics collector for External metric prom: External metric `prom` of HPA default/web needs matchLabels.query or annotation metric-config.external.prom.json-path/query; collector `prometheus` is not enabled (start with --prometheus-server)",
        ],
      ],
    );
    // The same HPA again (a resync) changes nothing and emits nothing.
    s.cluster.set(
      "HorizontalPodAutoscaler",
      s.cluster.get("HorizontalPodAutoscaler", "default", "web")!,
    );
    await settle();
    assert.equal(s.writer.events.length, 2);
    assert.equal(s.backend.calls.get("A"), 1);
    await s.engine.stop();
  });

  it("reports every HPA reconcile once, ok only when all its collectors were created", async () => {
    const s = setup();
    s.cluster.set("HorizontalPodAutoscaler", externalHpa("good", [{ name: "q", endpoint: "A" }]));
    s.cluster.set(
      "HorizontalPodAutoscaler",
      externalHpa("mixed", [{ name: "q", endpoint: "A" }, { name: "r", endpoint: "BAD" }]),
    );
    s.cluster.set("HorizontalPodAutoscaler", {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "invalid", namespace: "default" },
      spec: { maxReplicas: "ten" },
    });
    await s.engine.start();
    await settle();
    // a resync: the same objects again
    for (const name of ["good", "mixed"]) {
      s.cluster.set(
        "HorizontalPodAutoscaler",
        s.cluster.get("HorizontalPodAutoscaler", "default", name)!,
      );
    }
    assert.deepEqual(s.reconciles.map((r) => [r.hpa, r.ok]), [
      ["default/good", true],
      ["default/mixed", false],
      ["default/invalid", false],
      ["default/good", true],
      ["default/mixed", false],
    ]);
    await s.engine.stop();
  });

  it("plans a link-local endpoint only when allowLinkLocalTargets, as the collectors read it", async () => {
    const hpa = externalHpa("web", [{ name: "q", endpoint: "A" }]);
    hpa.metadata.annotations!["metric-config.external.q.json-path/endpoint"] =
      "http://169.254.169.254/";
    const refused = setup();
    const allowed = setup({ engine: { allowLinkLocalTargets: true } });
    for (const s of [refused, allowed]) {
      s.backend.answers.set("169", 3);
      s.cluster.set("HorizontalPodAutoscaler", hpa);
      await s.engine.start();
    }
    await settle();
    assert.deepEqual(refused.engine.status().map((p) => p.problem), [
      'invalid endpoint "http://169.254.169.254/" for External metric `q` of HPA default/web (annotation metric-config.external.q.json-path/endpoint): a link-local address (allow with --allow-link-local-targets)',
    ]);
    assert.equal(refused.backend.calls.size, 0);
    assert.deepEqual(allowed.engine.status().map((p) => p.problem), [null]);
    assert.deepEqual(external(allowed, "q"), [3]);
    await refused.engine.stop();
    await allowed.engine.stop();
  });

  it("suppresses events for incompatible metrics with --disregard-incompatible-hpas", async () => {
    const s = setup({ engine: { disregardIncompatibleHpas: true } });
    s.cluster.set(
      "HorizontalPodAutoscaler",
      externalHpa("web", [
        { name: "broken", endpoint: "BAD" },
        { name: "prom", endpoint: "P", type: "prometheus" },
      ]),
    );
    await s.engine.start();
    await settle();
    assert.deepEqual(s.writer.events.map((e) => e.event.message.split(":")[0]), [
      "failed to create metrics collector for External metric broken",
    ]);
    await s.engine.stop();
  });

  it("writes no events when not the leader", async () => {
    const s = setup();
    s.leader.value = false;
    s.backend.answers.set("A", new Error("boom"));
    s.cluster.set("HorizontalPodAutoscaler", externalHpa("web", [{ name: "q", endpoint: "A" }]));
    await s.engine.start();
    await settle();
    assert.equal(s.backend.calls.get("A"), 1);
    assert.deepEqual(s.writer.events, []);
    await s.engine.stop();
  });

  it("writes the problems found while not the leader once it leads, except those gone meanwhile", async () => {
    const s = setup();
    s.leader.value = false;
    s.backend.answers.set("A", 1);
    s.cluster.set(
      "HorizontalPodAutoscaler",
      externalHpa("web", [{ name: "a", endpoint: "BAD" }, { name: "b", endpoint: "BAD" }]),
    );
    await s.engine.start();
    await settle();
    s.cluster.set(
      "HorizontalPodAutoscaler",
      externalHpa("web", [{ name: "a", endpoint: "BAD" }, { name: "b", endpoint: "A" }]),
    );
    await s.timers.advance(10_000);
    assert.deepEqual(s.writer.events, []);
    s.leader.value = true;
    await s.timers.advance(5_000);
    const written = (): string[] => s.writer.events.map((e) => e.event.message);
    assert.deepEqual(written(), [
      "failed to create metrics collector for External metric a: unusable endpoint for metric a",
    ]);
    await s.timers.advance(60_000);
    s.engine.emitPendingEvents();
    assert.equal(written().length, 1);
    await s.engine.stop();
    assert.equal(s.timers.pending, 0);
  });

  it("runs identical queries of different HPAs once per interval and serves both", async () => {
    const s = setup();
    s.backend.answers.set("A", 9);
    s.cluster.set(
      "HorizontalPodAutoscaler",
      externalHpa("one", [{ name: "q", endpoint: "A" }], "team-a"),
    );
    s.cluster.set(
      "HorizontalPodAutoscaler",
      externalHpa("two", [{ name: "q", endpoint: "A" }], "team-b"),
    );
    await s.engine.start();
    await settle();
    assert.equal(s.backend.calls.get("A"), 1);
    assert.deepEqual(external(s, "q", "team-a"), [9]);
    assert.deepEqual(external(s, "q", "team-b"), [9]);
    await s.timers.advance(60_000);
    assert.equal(s.backend.calls.get("A"), 2);
    assert.deepEqual(s.reports.map((r) => r.planKeys.length), [2, 2]);
    await s.engine.stop();
  });

  it("reports a conflict among 100 HPAs of a namespace with a few events each, not one per pair", async () => {
    const s = setup();
    for (let i = 0; i < 100; i++) {
      const name = `calc-${String(i).padStart(3, "0")}`;
      s.backend.answers.set(`E${i}`, i);
      s.cluster.set(
        "HorizontalPodAutoscaler",
        externalHpa(name, [{ name: "q", endpoint: `E${i}` }]),
      );
    }
    await s.engine.start();
    await settle();
    for (let i = 100; i < 110; i++) {
      const name = `calc-${String(i).padStart(3, "0")}`;
      s.cluster.set(
        "HorizontalPodAutoscaler",
        externalHpa(name, [{ name: "q", endpoint: `E${i}` }]),
      );
    }
    await settle();
    const conflicts = s.writer.events.filter((e) => e.event.message.startsWith("conflict with"));
    // each HPA's message changes only while the group's first names change: at most 4 each
    assert.ok(conflicts.length <= 4 * 110, `${conflicts.length} conflict events`);
    assert.ok(conflicts.length >= 110, `${conflicts.length} conflict events`);
    await s.engine.stop();
  });

  it("keeps the last value on failure, records the error and logs and reports it once per text", async () => {
    const s = setup();
    s.backend.answers.set("A", 5);
    s.cluster.set(
      "HorizontalPodAutoscaler",
      externalHpa("web", [{ name: "q", endpoint: "A", interval: "10s" }]),
    );
    await s.engine.start();
    await settle();
    s.backend.answers.set("A", new Error("boom"));
    await s.timers.advance(10_000);
    await s.timers.advance(10_000);
    s.backend.answers.set("A", new Error("bang"));
    await s.timers.advance(10_000);
    assert.equal(s.backend.calls.get("A"), 4);
    assert.deepEqual(external(s, "q"), [5]);
    const failures = s.logger.entries.filter((e) => e.message === "collection failed");
    assert.deepEqual(failures.map((e) => e.fields.error), ["boom", "bang"]);
    assert.deepEqual(s.writer.events.map((e) => e.event.message), [
      "failed to collect External metric q: boom",
      "failed to collect External metric q: bang",
    ]);
    assert.deepEqual(s.reports.map((r) => r.ok), [true, false, false, false]);
    s.backend.answers.set("A", 6);
    await s.timers.advance(10_000);
    assert.deepEqual(external(s, "q"), [6]);
    assert.equal(s.logger.entries.filter((e) => e.message === "collection recovered").length, 1);
    await s.engine.stop();
  });

  it("removes a deleted HPA's plans from the store at once and stops its collector", async () => {
    const s = setup();
    s.backend.answers.set("A", 5);
    s.cluster.set("HorizontalPodAutoscaler", externalHpa("web", [{ name: "q", endpoint: "A" }]));
    await s.engine.start();
    await settle();
    assert.deepEqual(external(s, "q"), [5]);
    s.cluster.delete("HorizontalPodAutoscaler", "default", "web");
    assert.equal(typeof external(s, "q"), "string");
    assert.deepEqual(s.engine.status(), []);
    await s.timers.advance(120_000);
    assert.equal(s.backend.calls.get("A"), 1);
    await s.engine.stop();
  });

  it("watches pods only once a Pods plan exists, and drops a deleted pod's value at once", async () => {
    let pods = ["web-1", "web-2"];
    const s = setup({ factories: [fakePods(() => pods)] });
    await s.engine.start();
    assert.deepEqual(s.cluster.ensured, ["HorizontalPodAutoscaler"]);
    s.cluster.set("HorizontalPodAutoscaler", {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: {
        name: "web",
        namespace: "default",
        annotations: {
          "metric-config.pods.rps.json-path/json-key": "$.rps",
          "metric-config.pods.rps.json-path/port": "9090",
        },
      },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
        maxReplicas: 10,
        metrics: [{
          type: "Pods",
          pods: { metric: { name: "rps" }, target: { type: "AverageValue", averageValue: "1" } },
        }],
      },
    });
    s.cluster.set("Pod", readyPod("web-1", { ip: "10.0.0.1" }));
    s.cluster.set("Pod", readyPod("web-2", { ip: "10.0.0.2" }));
    await settle();
    assert.deepEqual(s.cluster.ensured, ["HorizontalPodAutoscaler", "Pod"]);
    const served = (): string[] => {
      const r = s.store.lookupCustom({
        namespace: "default",
        groupResource: "pods",
        name: "*",
        metricName: "rps",
        metricSelector: "",
      }, s.timers.now);
      return "items" in r ? r.items.map((i) => i.objectName) : [];
    };
    assert.deepEqual(served(), ["web-1", "web-2"]);
    pods = ["web-2"];
    s.cluster.delete("Pod", "default", "web-1");
    assert.deepEqual(served(), ["web-2"]);
    await s.engine.stop();
  });

  it("reports a conflict that a collection reveals, once, and its end", async () => {
    const podsOf: Record<string, string[]> = { web: ["web-1"], api: ["api-1"] };
    const byTarget: CollectorFactory = {
      type: "json-path",
      metricTypes: ["Pods"],
      create: ({ plan }) => ({
        queryKey: `pods|${plan.scaleTargetRef.name}`,
        collect: (ctx) =>
          Promise.resolve({
            samples: podsOf[plan.scaleTargetRef.name].map((objectName) => ({
              objectName,
              value: 1,
              timestamp: ctx.now(),
            })),
          }),
      }),
    };
    const s = setup({ factories: [byTarget] });
    for (const name of ["web", "api"]) {
      s.cluster.set("HorizontalPodAutoscaler", {
        apiVersion: "autoscaling/v2",
        kind: "HorizontalPodAutoscaler",
        metadata: {
          name,
          namespace: "default",
          annotations: {
            "metric-config.pods.rps.json-path/json-key": "$.rps",
            "metric-config.pods.rps.json-path/port": "9090",
          },
        },
        spec: {
          scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name },
          maxReplicas: 10,
          metrics: [{
            type: "Pods",
            pods: { metric: { name: "rps" }, target: { type: "AverageValue", averageValue: "1" } },
          }],
        },
      });
    }
    await s.engine.start();
    await settle();
    const logged = (): string[] =>
      s.logger.entries.filter((e) => e.message.startsWith("metric conflict")).map((e) =>
        `${e.message} ${e.fields.plan}`
      );
    assert.deepEqual(logged(), []);
    podsOf.api = ["api-1", "web-1"]; // the api Deployment's selector now takes in web-1
    await s.timers.advance(57_000);
    await s.timers.advance(57_000);
    assert.deepEqual(logged(), [
      "metric conflict default/api/0/Pods/rps",
      "metric conflict default/web/0/Pods/rps",
    ]);
    assert.deepEqual(s.writer.events.map((e) => [e.name, e.event.message.split(":")[0]]), [
      ["default/api", "conflict with HPA default/web"],
      ["default/web", "conflict with HPA default/api"],
    ]);
    podsOf.api = ["api-1"];
    await s.timers.advance(57_000);
    assert.deepEqual(logged().slice(2), [
      "metric conflict resolved default/api/0/Pods/rps",
      "metric conflict resolved default/web/0/Pods/rps",
    ]);
    assert.equal(s.writer.events.length, 2);
    await s.engine.stop();
  });

  it("serves an HPA's value beside an HPA that cannot collect the same metric, and a conflict once both can", async () => {
    const s = setup();
    s.backend.answers.set("A", 7);
    s.backend.answers.set("B", 9);
    const broken = externalHpa("broken", [{ name: "q", endpoint: "B" }]);
    broken.metadata.annotations!["metric-config.external.q.json-path/aggregator"] = "median";
    s.cluster.set("HorizontalPodAutoscaler", broken);
    s.cluster.set("HorizontalPodAutoscaler", externalHpa("web", [{ name: "q", endpoint: "A" }]));
    s.cluster.set("HorizontalPodAutoscaler", externalHpa("odd", [{ name: "q", endpoint: "BAD" }]));
    await s.engine.start();
    await settle();
    assert.deepEqual(external(s, "q"), [7]);
    assert.deepEqual(s.writer.events.map((e) => [e.name, e.event.message]), [
      [
        "default/broken",
        'failed to create metrics collector for External metric q: invalid aggregator "median" for External metric `q` of HPA default/broken (annotation metric-config.external.q.json-path/aggregator): want one of avg, min, max, sum, count, last, diff',
      ],
      [
        "default/odd",
        "failed to create metrics collector for External metric q: unusable endpoint for metric q",
      ],
    ]);
    assert.deepEqual(s.store.conflicts(), []);
    // fixed: two HPAs now collect one name and labels differently
    s.cluster.set("HorizontalPodAutoscaler", externalHpa("broken", [{ name: "q", endpoint: "B" }]));
    await settle();
    assert.deepEqual(
      s.store.conflicts().map((c) => [c.plan.key, c.message.split(":")[0]]),
      [
        ["default/broken/0/External/q", "conflict with HPA default/web"],
        ["default/web/0/External/q", "conflict with HPA default/broken"],
      ],
    );
    // broken again: the conflict is gone, web is served
    s.cluster.set("HorizontalPodAutoscaler", broken);
    await settle();
    assert.deepEqual(s.store.conflicts(), []);
    assert.deepEqual(external(s, "q"), [7]);
    await s.engine.stop();
  });

  it("bounds concurrent collections by --max-concurrent-collections", async () => {
    const s = setup({ engine: { maxConcurrentCollections: 2 } });
    let running = 0;
    let peak = 0;
    const release: (() => void)[] = [];
    for (const e of ["A", "B", "C", "D"]) {
      s.backend.answers.set(e, () => {
        running++;
        peak = Math.max(peak, running);
        return new Promise<number>((r) =>
          release.push(() => {
            running--;
            r(1);
          })
        );
      });
      s.cluster.set(
        "HorizontalPodAutoscaler",
        externalHpa(`hpa-${e}`, [{ name: "q", endpoint: e }]),
      );
    }
    await s.engine.start();
    await settle();
    assert.equal(peak, 2);
    assert.equal(s.backend.calls.size, 2);
    while (release.length > 0) {
      release.shift()!();
      await settle();
    }
    assert.equal(s.backend.calls.size, 4);
    assert.equal(peak, 2);
    await s.engine.stop();
  });

  it("fails a collection that outlives --collection-timeout and aborts its signal", async () => {
    const s = setup({ engine: { collectionTimeoutSeconds: 5 } });
    s.backend.answers.set("A", () => new Promise<number>(() => {}));
    s.cluster.set("HorizontalPodAutoscaler", externalHpa("web", [{ name: "q", endpoint: "A" }]));
    await s.engine.start();
    await settle();
    await s.timers.advance(5_000);
    assert.equal(s.backend.signals[0].aborted, true);
    assert.equal(s.reports.length, 0); // a second's grace to return what it has
    await s.timers.advance(1_000);
    assert.deepEqual(s.reports.map((r) => r.error), ["collection timed out after 5s"]);
    assert.match(String(external(s, "q")), /collection timed out after 5s/);
    await s.engine.stop();
  });

  it("waits for a collector's own timeout when it is longer than --collection-timeout", async () => {
    const s = setup();
    s.backend.timeoutMs = 30_000;
    let answer: (n: number) => void = () => {};
    s.backend.answers.set("A", () => new Promise<number>((r) => answer = r));
    s.cluster.set("HorizontalPodAutoscaler", externalHpa("web", [{ name: "q", endpoint: "A" }]));
    await s.engine.start();
    await settle();
    await s.timers.advance(20_000);
    assert.equal(s.reports.length, 0);
    answer(7);
    await settle();
    assert.deepEqual(s.reports.map((r) => [r.ok, r.durationMs]), [[true, 20_000]]);
    assert.deepEqual(external(s, "q"), [7]);
    s.backend.answers.set("A", () => new Promise<number>(() => {}));
    await s.timers.advance(40_000); // the next collection starts at 60s (57s with jitter)
    await s.timers.advance(30_000);
    assert.deepEqual(s.reports.map((r) => r.error ?? null), [
      null,
      "collection timed out after 30s",
    ]);
    await s.engine.stop();
  });

  it("serves the pods that answered when a Pods collection reaches its deadline", async () => {
    const answered = new Set(["10.0.0.1", "10.0.0.2"]);
    const s = setup({
      factories: [createPodJsonPathFactory({ maxConcurrentPodRequests: 2 })],
      fetch: (input, init) => {
        const host = new URL(String(input)).hostname;
        if (answered.has(host)) {
          return Promise.resolve(new Response(`{"rps": ${host.split(".")[3]}}`));
        }
        return new Promise((_resolve, reject) => {
          init?.signal?.addEventListener("abort", () => reject(init.signal!.reason));
        });
      },
    });
    s.cluster.set("Deployment", {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web", namespace: "default" },
      spec: { selector: { matchLabels: { app: "web" } } },
    });
    for (let i = 1; i <= 4; i++) s.cluster.set("Pod", readyPod(`web-${i}`, { ip: `10.0.0.${i}` }));
    s.cluster.set("HorizontalPodAutoscaler", {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: {
        name: "web",
        namespace: "default",
        annotations: {
          "metric-config.pods.rps.json-path/json-key": "$.rps",
          "metric-config.pods.rps.json-path/port": "9090",
          "metric-config.pods.rps.json-path/request-timeout": "10s",
        },
      },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
        maxReplicas: 10,
        metrics: [{
          type: "Pods",
          pods: { metric: { name: "rps" }, target: { type: "AverageValue", averageValue: "1" } },
        }],
      },
    });
    await s.engine.start();
    await settle();
    await s.timers.advance(15_000); // --collection-timeout; 4 pods need 2 rounds of 10s
    assert.equal(s.reports.length, 0);
    await s.timers.advance(5_000);
    await settle();
    assert.deepEqual(s.reports.map((r) => [r.ok, r.warnings]), [[true, [
      "2 of 4 pods not collected for metric rps: collection timed out after 20s",
    ]]]);
    const r = s.store.lookupCustom({
      namespace: "default",
      groupResource: "pods",
      name: "*",
      metricName: "rps",
      metricSelector: "",
    }, s.timers.now);
    assert.deepEqual("items" in r ? r.items.map((i) => [i.objectName, i.value]) : r, [
      ["web-1", 1],
      ["web-2", 2],
    ]);
    await s.engine.stop();
  });

  it("records a kind that cannot be listed as the failure of the plans that read it", async () => {
    const cluster = new FailingCluster();
    cluster.errors.set("Rollout", "list rollouts.argoproj.io: 403 Forbidden");
    const s = setup({ cluster, factories: [rolloutPods()] });
    s.cluster.set("HorizontalPodAutoscaler", rolloutHpa());
    await s.engine.start();
    await settle();
    const served = (): string | [string, number][] => {
      const r = s.store.lookupCustom({
        namespace: "default",
        groupResource: "pods",
        name: "*",
        metricName: "rps",
        metricSelector: "",
      }, s.timers.now);
      return "items" in r ? r.items.map((i) => [i.objectName, i.value]) : r.miss.reason;
    };
    const want = "cannot watch Rollout: list rollouts.argoproj.io: 403 Forbidden";
    assert.match(String(served()), new RegExp(want));
    assert.deepEqual(s.reports.map((r) => [r.ok, r.error]), [[false, want]]);
    assert.deepEqual(s.writer.events.map((e) => e.event.message), [
      `failed to collect Pods metric rps: ${want}`,
    ]);
    cluster.errors.delete("Rollout");
    await s.timers.advance(60_000);
    assert.deepEqual(served(), [["web-1", 4]]);
    await s.engine.stop();
  });

  it("stops without waiting for a kind that never syncs", async () => {
    const cluster = new FailingCluster();
    cluster.never.add("Rollout");
    const s = setup({ cluster, factories: [rolloutPods()] });
    s.cluster.set("HorizontalPodAutoscaler", rolloutHpa());
    await s.engine.start();
    await settle();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const outcome = await Promise.race([
      s.engine.stop().then(() => "stopped"),
      new Promise<string>((r) => timer = setTimeout(() => r("hung"), 2000)),
    ]);
    clearTimeout(timer);
    assert.equal(outcome, "stopped");
    assert.equal(s.reports.length, 0);
  });

  it("stops every timer and aborts collections in flight", async () => {
    const s = setup();
    s.backend.answers.set("A", () => new Promise<number>(() => {}));
    s.cluster.set("HorizontalPodAutoscaler", externalHpa("web", [{ name: "q", endpoint: "A" }]));
    await s.engine.start();
    await settle();
    await s.engine.stop();
    assert.equal(s.backend.signals[0].aborted, true);
    assert.equal(s.timers.pending, 0);
  });
});
