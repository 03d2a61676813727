import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { aggregateSamples, MetricHistory, recordingStore } from "../../src/engine/history.ts";
import type { EngineStore } from "../../src/engine/engine.ts";
import { MetricStore } from "../../src/store/store.ts";

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const KEY = "shop/web/0/External/queue";

describe("MetricHistory", () => {
  it("keeps the last `capacity` outcomes, oldest first", () => {
    const h = new MetricHistory({ capacity: 3 });
    for (let i = 0; i < 5; i++) h.success(KEY, i + 0.5, 1, T0 + i * 1000);
    const got = h.get(KEY)!;
    assert.deepEqual(got.points, [
      { at: T0 + 2000, value: 2.5, failed: false },
      { at: T0 + 3000, value: 3.5, failed: false },
      { at: T0 + 4000, value: 4.5, failed: false },
    ]);
    assert.equal(got.lastValue, 4.5);
    assert.equal(got.lastSuccessAt, T0 + 4000);
    assert.equal(got.failures, 0);
    assert.equal(got.failingSince, null);
  });

  it("keeps 7 significant digits in the points and the exact last value", () => {
    const h = new MetricHistory();
    h.success(KEY, 0.0019, 1, T0);
    h.success(KEY, 7.501923456, 1, T0 + 1000);
    const got = h.get(KEY)!;
    // 7.501923456 as a 32-bit float is 7.5019236...
    assert.deepEqual(got.points.map((p) => p.value), [0.0019, 7.501924]);
    assert.equal(got.lastValue, 7.501923456);
  });

  it("counts consecutive failures since the first, ended by a value", () => {
    const h = new MetricHistory();
    h.success(KEY, 4, 2, T0);
    h.failure(KEY, "boom 1", T0 + 1000);
    h.failure(KEY, "boom 2", T0 + 2000);
    let got = h.get(KEY)!;
    assert.equal(got.failures, 2);
    assert.equal(got.failingSince, T0 + 1000);
    assert.equal(got.lastError, "boom 2");
    assert.equal(got.lastErrorAt, T0 + 2000);
    // the last good value stays known (the store serves it until the TTL)
    assert.equal(got.lastValue, 4);
    assert.equal(got.lastSampleCount, 2);
    assert.deepEqual(got.points.map((p) => [p.value, p.failed]), [
      [4, false],
      [null, true],
      [null, true],
    ]);
    h.success(KEY, 5, 1, T0 + 3000);
    got = h.get(KEY)!;
    assert.equal(got.failures, 0);
    assert.equal(got.failingSince, null);
    assert.equal(got.lastError, "boom 2", "the last error is kept after a recovery");
  });

  it("takes a cleared value followed by a failure at the same time as one failure", () => {
    // what the engine does for a failing formula or a fallback below its threshold
    const h = new MetricHistory();
    h.success(KEY, 4, 1, T0);
    h.success(KEY, null, 0, T0 + 1000);
    h.failure(KEY, "input failed", T0 + 1000);
    h.success(KEY, null, 0, T0 + 2000);
    h.failure(KEY, "input failed", T0 + 2000);
    const got = h.get(KEY)!;
    assert.deepEqual(got.points, [
      { at: T0, value: 4, failed: false },
      { at: T0 + 1000, value: null, failed: true },
      { at: T0 + 2000, value: null, failed: true },
    ]);
    assert.equal(got.failures, 2);
    assert.equal(got.failingSince, T0 + 1000);
    assert.equal(got.lastValue, null, "the value was cleared");
  });

  it("ignores an outcome older than the newest kept (a replayed shared result)", () => {
    const h = new MetricHistory();
    h.success(KEY, 2, 1, T0 + 5000);
    h.success(KEY, 1, 1, T0);
    assert.deepEqual(h.get(KEY)!.points, [{ at: T0 + 5000, value: 2, failed: false }]);
  });

  it("starts a plan that takes a removed plan's place from nothing", () => {
    const h = new MetricHistory();
    h.failure(KEY, "boom", T0);
    h.remove(KEY);
    h.success("shop/other/0/Pods/rps", 3, 2, T0 + 1000);
    assert.deepEqual(h.get("shop/other/0/Pods/rps"), {
      points: [{ at: T0 + 1000, value: 3, failed: false }],
      lastValue: 3,
      lastSuccessAt: T0 + 1000,
      lastSampleCount: 2,
      failures: 0,
      failingSince: null,
      lastError: null,
      lastErrorAt: null,
    });
  });

  it("keeps the rings of many plans apart (past one block of 256)", () => {
    const h = new MetricHistory({ capacity: 4 });
    for (let round = 0; round < 6; round++) {
      for (let i = 0; i < 600; i++) {
        h.success(`ns/h${i}/0/External/m`, i * 10 + round, 1, T0 + round * 1000);
      }
    }
    for (const i of [0, 255, 256, 599]) {
      assert.deepEqual(
        h.get(`ns/h${i}/0/External/m`)!.points.map((p) => p.value),
        [i * 10 + 2, i * 10 + 3, i * 10 + 4, i * 10 + 5],
      );
    }
    assert.equal(h.size, 600);
  });

  it("forgets a removed plan", () => {
    const h = new MetricHistory();
    h.success(KEY, 2, 1, T0);
    assert.equal(h.size, 1);
    h.remove(KEY);
    assert.equal(h.get(KEY), null);
    assert.equal(h.size, 0);
  });
});

describe("aggregateSamples", () => {
  const samples = [{ value: 1, timestamp: 0 }, { value: 2, timestamp: 0 }, {
    value: 6,
    timestamp: 0,
  }];
  it("averages a Pods metric and sums the others", () => {
    assert.equal(aggregateSamples("Pods", samples), 3);
    assert.equal(aggregateSamples("External", samples), 9);
    assert.equal(aggregateSamples("Object", [{ value: 7, timestamp: 0 }]), 7);
    assert.equal(aggregateSamples("Pods", []), null);
  });
});

describe("recordingStore", () => {
  const servedAt = {
    kind: "custom" as const,
    namespace: "shop",
    groupResource: "pods",
    objectName: null,
    metricName: "rps",
    metricSelector: "",
  };
  const PODS = "shop/web/0/Pods/rps";

  function setup(): { store: MetricStore; history: MetricHistory; wrapped: EngineStore } {
    const store = new MetricStore();
    const history = new MetricHistory();
    const wrapped = recordingStore(store, history);
    wrapped.upsertPlan(
      { key: PODS, hpa: { namespace: "shop", name: "web" }, servedAt, queryKey: "q" },
      T0,
    );
    return { store, history, wrapped };
  }

  it("passes values to the store and records their average over pods", () => {
    const { store, history, wrapped } = setup();
    wrapped.recordSuccess(PODS, [
      { objectName: "a", value: 2, timestamp: T0 },
      { objectName: "b", value: 4, timestamp: T0 },
    ], T0);
    assert.equal(store.stats().customValues, 2);
    assert.equal(history.get(PODS)!.lastValue, 3);
    assert.equal(history.get(PODS)!.lastSampleCount, 2);
    wrapped.recordFailure(PODS, "timeout", T0 + 1000);
    assert.equal(history.get(PODS)!.failures, 1);
    assert.equal(wrapped.conflictVersion, store.conflictVersion);
  });

  it("records nothing for values the store refuses (the engine records the failure)", () => {
    const { history, wrapped } = setup();
    assert.throws(() => wrapped.recordSuccess(PODS, [{ value: 1, timestamp: T0 }], T0));
    assert.equal(history.get(PODS), null);
  });

  it("records a hidden formula input, which the store does not know", () => {
    const { history, wrapped } = setup();
    wrapped.recordSuccess("shop/web/1/External/hidden-input", [{ value: 5, timestamp: T0 }], T0);
    assert.equal(history.get("shop/web/1/External/hidden-input")!.lastValue, 5);
  });

  it("forgets a removed plan's values", () => {
    const { history, wrapped } = setup();
    wrapped.recordFailure(PODS, "x", T0);
    wrapped.removePlan(PODS);
    assert.equal(history.get(PODS), null);
  });
});
