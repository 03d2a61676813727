/**
 * Issue 25's fair share through the engine, on a fake clock: collections due beyond
 * --max-concurrent-collections start in turn by namespace, --max-metrics-per-namespace
 * collects the oldest HPAs' metrics and refuses the others with a served error and one event
 * each until room is made, and --min-collection-interval refuses a shorter annotation.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/cluster/types.ts";
import { createCollectorRegistry } from "../../src/collectors/registry.ts";
import type { CollectContext, Collector, CollectorFactory } from "../../src/collectors/types.ts";
import { parseSelector } from "../../src/core/kubernetes/label_selector.ts";
import { hpaCreatedAt, overNamespaceLimit } from "../../src/core/namespace_limit.ts";
import { planHpa, planKey } from "../../src/core/kube_metrics_adapter/plan.ts";
import { Engine, type EngineOptions } from "../../src/engine/engine.ts";
import { formatTimestamp, MetricStore } from "../../src/store/store.ts";
import { ManualTimers, MemoryCluster, RecordingWriter, settle } from "./support.ts";

/** A fake backend: each endpoint host is one query; collections can be held until released. */
class Backend {
  /** Endpoint hosts in the order their collections started. */
  readonly started: string[] = [];
  /** Held collections, in the order they started. */
  readonly held: { host: string; release: () => void }[] = [];
  hold = false;

  factory(): CollectorFactory {
    return {
      type: "json-path",
      metricTypes: ["External"],
      create: ({ plan }): Collector => {
        const host = new URL(plan.config["endpoint"]).hostname;
        return {
          queryKey: `fake|${host}`,
          collect: async (ctx: CollectContext) => {
            this.started.push(host);
            if (this.hold) {
              await new Promise<void>((release) => this.held.push({ host, release }));
            }
            return { samples: [{ value: 7, timestamp: ctx.now() }] };
          },
        };
      },
    };
  }

  /** Let the oldest held collection end. */
  async releaseOne(): Promise<void> {
    this.held.shift()!.release();
    await settle();
  }
}

interface Metric {
  name: string;
  /** The endpoint host (one query per host). */
  host: string;
  interval?: string;
}

function hpa(
  namespace: string,
  name: string,
  metrics: Metric[],
  created?: string,
): KubeObject {
  const annotations: Record<string, string> = {};
  for (const m of metrics) {
    annotations[`metric-config.external.${m.name}.json-path/endpoint`] = `http://${m.host}/`;
    annotations[`metric-config.external.${m.name}.json-path/json-key`] = "$.n";
    if (m.interval) annotations[`metric-config.external.${m.name}.json-path/interval`] = m.interval;
  }
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: {
      name,
      namespace,
      annotations,
      ...(created ? { creationTimestamp: created } : {}),
    },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name },
      maxReplicas: 10,
      metrics: metrics.map((m) => ({
        type: "External",
        external: {
          metric: { name: m.name, selector: { matchLabels: { type: "json-path" } } },
          target: { type: "AverageValue", averageValue: "10" },
        },
      })),
    },
  };
}

/** An HPA with a formula `total = queue * 2` over a hidden input `queue` (host `q.<name>`). */
function formulaHpa(namespace: string, name: string, created: string): KubeObject {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: {
      name,
      namespace,
      creationTimestamp: created,
      annotations: {
        "metric-config.external.total.formula/expression": "queue * 2",
        "metric-config.external.queue.json-path/endpoint": `http://q.${name}/`,
        "metric-config.external.queue.json-path/json-key": "$.n",
      },
    },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name },
      maxReplicas: 10,
      metrics: [{
        type: "External",
        external: {
          metric: { name: "total", selector: { matchLabels: { type: "formula" } } },
          target: { type: "Value", value: "10" },
        },
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
  engine: Engine;
}

function setup(
  engine: Pick<
    EngineOptions,
    "maxConcurrentCollections" | "maxMetricsPerNamespace" | "minCollectionIntervalSeconds"
  > = {},
): Setup {
  const cluster = new MemoryCluster();
  const timers = new ManualTimers();
  const store = new MetricStore({ ttlSeconds: 900 });
  const backend = new Backend();
  const writer = new RecordingWriter(cluster);
  return {
    cluster,
    timers,
    store,
    backend,
    writer,
    engine: new Engine({
      cluster,
      store,
      registry: createCollectorRegistry([backend.factory()]),
      ...engine,
      now: timers.clock,
      setTimer: timers.setTimer,
      clearTimer: timers.clearTimer,
      random: () => 0.5,
      writer,
      isLeader: () => true,
    }),
  };
}

/** What the external metrics API answers for a metric: its values, or why none. */
function served(s: Setup, namespace: string, metric: string): number[] | string {
  const r = s.store.lookupExternal(
    { namespace, metricName: metric, selector: parseSelector("") },
    s.timers.now,
  );
  return "items" in r ? r.items.map((i) => i.value) : r.miss.reason;
}

function problems(s: Setup): [string, string | null][] {
  return s.engine.status().map((p) => [p.key, p.problem]);
}

function events(s: Setup): [string, string][] {
  return s.writer.events.map((e) => [e.name, e.event.message]);
}

function refusal(namespace: string, limit: number, hpaName: string, metric: string): string {
  return `namespace ${namespace} has more metrics than --max-metrics-per-namespace ${limit}: External metric \`${metric}\` of HPA ${namespace}/${hpaName} is not collected (the oldest HPAs' metrics are collected first)`;
}

function failedAt(s: Setup, message: string): string {
  return `last collection failed with "${message}" at ${formatTimestamp(s.timers.now)}`;
}

describe("fair scheduling by namespace", () => {
  it("starts a namespace's lone collection among the first, not after another's thousand", async () => {
    const s = setup({ maxConcurrentCollections: 2 });
    s.backend.hold = true;
    for (let i = 0; i < 1000; i++) {
      s.cluster.set(
        "HorizontalPodAutoscaler",
        hpa("a", `web-${i}`, [{ name: "q", host: `a${i}` }]),
      );
    }
    s.cluster.set("HorizontalPodAutoscaler", hpa("b", "lone", [{ name: "q", host: "b0" }]));
    await s.engine.start();
    await settle();
    assert.deepEqual(s.backend.started, ["a0", "a1"]);
    // a0 ends: a2 starts (namespace a waited first); a1 ends: b's turn
    await s.backend.releaseOne();
    await s.backend.releaseOne();
    assert.deepEqual(s.backend.started, ["a0", "a1", "a2", "b0"]);
    assert.equal(served(s, "b", "q"), "not collected yet (planned at 2024-03-04T10:00:00Z)");
    await s.backend.releaseOne(); // a2
    await s.backend.releaseOne(); // b0
    assert.deepEqual(s.backend.started, ["a0", "a1", "a2", "b0", "a3", "a4"]);
    assert.deepEqual(served(s, "b", "q"), [7]);
    s.backend.hold = false;
    for (const h of s.backend.held.splice(0)) h.release();
    await s.engine.stop();
  });

  it("starts a collection of a namespace that comes while another's wait at the next free slot", async () => {
    const s = setup({ maxConcurrentCollections: 1 });
    s.backend.hold = true;
    for (let i = 0; i < 100; i++) {
      s.cluster.set(
        "HorizontalPodAutoscaler",
        hpa("a", `web-${i}`, [{ name: "q", host: `a${i}` }]),
      );
    }
    await s.engine.start();
    await settle();
    await s.backend.releaseOne();
    await s.backend.releaseOne();
    assert.deepEqual(s.backend.started, ["a0", "a1", "a2"]);
    // 97 of a wait; b's HPA comes now (a watch event), then c's
    s.cluster.set("HorizontalPodAutoscaler", hpa("b", "new", [{ name: "q", host: "b0" }]));
    s.cluster.set("HorizontalPodAutoscaler", hpa("c", "new", [{ name: "q", host: "c0" }]));
    await settle();
    for (let i = 0; i < 4; i++) await s.backend.releaseOne();
    assert.deepEqual(s.backend.started, ["a0", "a1", "a2", "a3", "b0", "c0", "a4"]);
    s.backend.hold = false;
    for (const h of s.backend.held.splice(0)) h.release();
    await s.engine.stop();
  });
});

describe("--max-metrics-per-namespace", () => {
  const OLD = "2024-01-01T00:00:00Z";
  const MID = "2024-01-02T00:00:00Z";
  const NEW = "2024-01-03T00:00:00Z";

  /** Namespace a: old (1 metric), mid (2), new (1), listed newest first; b: one HPA. */
  function fill(s: Setup): void {
    s.cluster.set("HorizontalPodAutoscaler", hpa("a", "new", [{ name: "n", host: "new" }], NEW));
    s.cluster.set(
      "HorizontalPodAutoscaler",
      hpa("a", "mid", [{ name: "m0", host: "mid0" }, { name: "m1", host: "mid1" }], MID),
    );
    s.cluster.set("HorizontalPodAutoscaler", hpa("a", "old", [{ name: "o", host: "old" }], OLD));
    s.cluster.set("HorizontalPodAutoscaler", hpa("b", "web", [{ name: "w", host: "b" }], NEW));
  }

  it("collects the oldest HPAs' metrics up to the limit and serves the others' reason, with one event each", async () => {
    const s = setup({ maxMetricsPerNamespace: 2 });
    fill(s);
    await s.engine.start();
    await settle();
    assert.deepEqual([...s.backend.started].sort(), ["b", "mid0", "old"]);
    const m1 = refusal("a", 2, "mid", "m1");
    const n = refusal("a", 2, "new", "n");
    assert.deepEqual(problems(s), [
      ["a/mid/0/External/m0", null],
      ["a/mid/1/External/m1", m1],
      ["a/new/0/External/n", n],
      ["a/old/0/External/o", null],
      ["b/web/0/External/w", null],
    ]);
    assert.deepEqual(served(s, "a", "o"), [7]);
    assert.deepEqual(served(s, "a", "m0"), [7]);
    assert.equal(served(s, "a", "m1"), failedAt(s, m1));
    assert.equal(served(s, "a", "n"), failedAt(s, n));
    assert.deepEqual(served(s, "b", "w"), [7]);
    assert.deepEqual(events(s), [
      ["a/mid", `failed to create metrics collector for External metric m1: ${m1}`],
      ["a/new", `failed to create metrics collector for External metric n: ${n}`],
    ]);
    // a resync of every HPA, and a later interval, change nothing and say nothing again
    for (const o of s.cluster.list("HorizontalPodAutoscaler")) {
      s.cluster.set("HorizontalPodAutoscaler", o);
    }
    await s.timers.advance(60_000);
    assert.equal(s.writer.events.length, 2);
    assert.deepEqual(s.backend.started.filter((h) => h === "new" || h === "mid1"), []);
    await s.engine.stop();
  });

  it("refuses a new HPA's metric instead of displacing a running one", async () => {
    const s = setup({ maxMetricsPerNamespace: 2 });
    fill(s);
    await s.engine.start();
    await settle();
    s.cluster.set(
      "HorizontalPodAutoscaler",
      hpa("a", "aaa-newest", [{ name: "x", host: "x" }], "2024-02-01T00:00:00Z"),
    );
    await settle();
    const x = refusal("a", 2, "aaa-newest", "x");
    assert.equal(s.engine.status().find((p) => p.key === "a/aaa-newest/0/External/x")?.problem, x);
    assert.equal(served(s, "a", "x"), failedAt(s, x));
    assert.deepEqual(served(s, "a", "o"), [7]);
    assert.deepEqual(served(s, "a", "m0"), [7]);
    assert.deepEqual(events(s).at(-1), [
      "a/aaa-newest",
      `failed to create metrics collector for External metric x: ${x}`,
    ]);
    assert.equal(s.backend.started.includes("x"), false);
    await s.engine.stop();
  });

  it("collects refused metrics again, in order, as HPAs are removed", async () => {
    const s = setup({ maxMetricsPerNamespace: 2 });
    fill(s);
    await s.engine.start();
    await settle();
    s.cluster.delete("HorizontalPodAutoscaler", "a", "old");
    await settle();
    assert.deepEqual([...s.backend.started].sort(), ["b", "mid0", "mid1", "old"]);
    assert.deepEqual(served(s, "a", "m1"), [7]);
    assert.equal(served(s, "a", "n"), failedAt(s, refusal("a", 2, "new", "n")));
    assert.deepEqual(problems(s).filter(([, p]) => p !== null).map(([k]) => k), [
      "a/new/0/External/n",
    ]);
    s.cluster.delete("HorizontalPodAutoscaler", "a", "mid");
    await settle();
    assert.deepEqual(served(s, "a", "n"), [7]);
    assert.deepEqual(problems(s), [
      ["a/new/0/External/n", null],
      ["b/web/0/External/w", null],
    ]);
    // collected every interval from now on
    const before = s.backend.started.filter((h) => h === "new").length;
    await s.timers.advance(60_000);
    assert.equal(s.backend.started.filter((h) => h === "new").length, before + 1);
    await s.engine.stop();
  });

  it("stops a running metric an older HPA's new metric displaces, and serves the reason, not its last value", async () => {
    const s = setup({ maxMetricsPerNamespace: 2 });
    fill(s);
    await s.engine.start();
    await settle();
    assert.deepEqual(served(s, "a", "m0"), [7]);
    s.cluster.set(
      "HorizontalPodAutoscaler",
      hpa("a", "old", [{ name: "o", host: "old" }, { name: "o2", host: "old2" }], OLD),
    );
    await settle();
    const m0 = refusal("a", 2, "mid", "m0");
    assert.equal(served(s, "a", "m0"), failedAt(s, m0));
    assert.deepEqual(served(s, "a", "o2"), [7]);
    assert.deepEqual(events(s).at(-1), [
      "a/mid",
      `failed to create metrics collector for External metric m0: ${m0}`,
    ]);
    const calls = s.backend.started.filter((h) => h === "mid0").length;
    await s.timers.advance(120_000);
    assert.equal(s.backend.started.filter((h) => h === "mid0").length, calls);
    await s.engine.stop();
  });

  it("counts a hidden formula input: the formula serves why its input is not collected", async () => {
    const s = setup({ maxMetricsPerNamespace: 1 });
    s.cluster.set("HorizontalPodAutoscaler", formulaHpa("a", "f", OLD));
    await s.engine.start();
    await settle();
    const queue = refusal("a", 1, "f", "queue");
    assert.deepEqual(problems(s), [
      ["a/f/0/External/total", null],
      ["a/f/1/External/queue", queue],
    ]);
    const why = `input \`queue\` (External metric queue) cannot be collected: ${queue}`;
    assert.equal(served(s, "a", "total"), failedAt(s, why));
    assert.deepEqual(s.backend.started, []);
    assert.deepEqual(events(s), [
      ["a/f", `failed to create metrics collector for External metric queue: ${queue}`],
      ["a/f", `failed to compute External metric total: ${why}`],
    ]);
    await s.engine.stop();
  });

  it("refuses exactly what the limit's order says after any sequence of HPA changes", async () => {
    const s = setup({ maxMetricsPerNamespace: 5 });
    await s.engine.start();
    // a fixed pseudo-random sequence (xorshift) of adds, updates and deletes in two namespaces
    let x = 2463534242;
    const random = (n: number): number => {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      return (x >>> 0) % n;
    };
    for (let step = 0; step < 300; step++) {
      const namespace = random(4) === 0 ? "b" : "a";
      const name = `h${random(12)}`;
      if (random(4) === 0) s.cluster.delete("HorizontalPodAutoscaler", namespace, name);
      else {
        const metrics = Array.from({ length: 1 + random(3) }, (_, i) => ({
          name: `m${i}`,
          host: `${namespace}-${name}-${i}-${random(2)}`, // a new host restarts the metric
        }));
        const existing = s.cluster.get("HorizontalPodAutoscaler", namespace, name);
        const created = existing?.metadata.creationTimestamp ??
          new Date(Date.UTC(2024, 0, 1 + random(5))).toISOString();
        s.cluster.set("HorizontalPodAutoscaler", hpa(namespace, name, metrics, created));
      }
      const plans = s.cluster.list("HorizontalPodAutoscaler").flatMap((o) =>
        planHpa(o).map((plan) => ({ plan, createdAt: hpaCreatedAt(o) }))
      );
      const expected = [...overNamespaceLimit(plans, 5)].map((
        [p, message],
      ) => [planKey(p.plan), message]).sort();
      const actual = problems(s).filter(([, p]) => p !== null).sort();
      assert.deepEqual(actual, expected, `step ${step}`);
      // the others run: each has its collection
      for (const p of s.engine.status()) {
        assert.equal(p.queryKey !== null, p.problem === null, `step ${step}: ${p.key}`);
      }
    }
    await s.engine.stop();
  });

  it("collects every metric without a limit (0)", async () => {
    const s = setup({ maxMetricsPerNamespace: 0 });
    fill(s);
    await s.engine.start();
    await settle();
    assert.deepEqual([...s.backend.started].sort(), ["b", "mid0", "mid1", "new", "old"]);
    assert.deepEqual(events(s), []);
    await s.engine.stop();
  });
});

describe("--min-collection-interval through the engine", () => {
  it("refuses an annotation below the default minimum 1s with a plan error and an event, and collects the rest", async () => {
    const s = setup();
    s.cluster.set(
      "HorizontalPodAutoscaler",
      hpa("a", "web", [{ name: "fast", host: "fast", interval: "100ms" }, {
        name: "ok",
        host: "ok",
        interval: "1s",
      }]),
    );
    await s.engine.start();
    await settle();
    const why =
      "interval 100ms of External metric `fast` of HPA a/web (annotation metric-config.external.fast.json-path/interval) is below --min-collection-interval 1s";
    assert.deepEqual(problems(s), [
      ["a/web/0/External/fast", why],
      ["a/web/1/External/ok", null],
    ]);
    assert.equal(served(s, "a", "fast"), failedAt(s, why));
    assert.deepEqual(s.backend.started, ["ok"]);
    assert.deepEqual(events(s), [[
      "a/web",
      `failed to create metrics collector for External metric fast: ${why}`,
    ]]);
    await s.engine.stop();
  });

  it("takes another minimum, and none at 0", async () => {
    const strict = setup({ minCollectionIntervalSeconds: 30 });
    strict.cluster.set(
      "HorizontalPodAutoscaler",
      hpa("a", "web", [{ name: "q", host: "q", interval: "10s" }]),
    );
    await strict.engine.start();
    assert.equal(
      strict.engine.status()[0].problem,
      "interval 10s of External metric `q` of HPA a/web (annotation metric-config.external.q.json-path/interval) is below --min-collection-interval 30s",
    );
    await strict.engine.stop();
    const none = setup({ minCollectionIntervalSeconds: 0 });
    none.cluster.set(
      "HorizontalPodAutoscaler",
      hpa("a", "web", [{ name: "q", host: "q", interval: "100ms" }]),
    );
    await none.engine.start();
    await settle();
    assert.equal(none.engine.status()[0].problem, null);
    assert.deepEqual(none.backend.started, ["q"]);
    await none.engine.stop();
  });
});
