/**
 * KEDA v2.20.2's fallback (src/core/keda/fallback.ts), with the cases of KEDA's
 * `pkg/fallback/fallback_test.go`: health counted per read, the fallback value past the
 * threshold by behavior, and the Fallback condition.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { kedaFallbackStep, type KedaHealth } from "../../../src/core/keda/fallback.ts";
import { parseScaledObject } from "../../../src/core/keda/scaled_object.ts";

const M = "some_metric_name";
const target = { type: "AverageValue" as const, value: 10 };

function so(fallback?: Record<string, unknown>, advanced?: Record<string, unknown>) {
  return parseScaledObject({
    apiVersion: "keda.sh/v1alpha1",
    kind: "ScaledObject",
    metadata: { name: "web", namespace: "shop" },
    spec: {
      scaleTargetRef: { name: "web" },
      triggers: [{ type: "prometheus", metadata: {} }],
      ...(fallback ? { fallback } : {}),
      ...(advanced ? { advanced } : {}),
    },
  });
}

const failing = (n: number, metric = M): Record<string, KedaHealth> => ({
  [metric]: { numberOfFailures: n, status: "Failing" },
});

describe("KEDA's fallback (fallback_test.go)", () => {
  it("passes the value through when fallback is disabled, and tracks nothing", () => {
    const r = kedaFallbackStep(so(), failing(5), M, { ok: true }, { target });
    assert.deepEqual(r, { answer: { kind: "value" }, health: null, condition: null });
  });

  it("initializes and resets the health on success when fallback is enabled", () => {
    const s = so({ failureThreshold: 3, replicas: 10 });
    for (const before of [undefined, failing(5)]) {
      const r = kedaFallbackStep(s, before, M, { ok: true }, { target });
      assert.deepEqual(r.health, { [M]: { numberOfFailures: 0, status: "Happy" } });
      assert.deepEqual(r.condition?.status, "False");
    }
  });

  it("propagates the error when fallback is disabled", () => {
    const r = kedaFallbackStep(so(), undefined, M, { ok: false, error: "some error" }, { target });
    assert.deepEqual(r.answer, { kind: "error", error: "some error" });
  });

  it("bumps the failures and keeps the error up to the threshold", () => {
    const r = kedaFallbackStep(
      so({ failureThreshold: 3, replicas: 10 }),
      { [M]: { numberOfFailures: 0, status: "Happy" } },
      M,
      { ok: false, error: "some error" },
      { target },
    );
    assert.deepEqual(r.answer, { kind: "error", error: "some error" });
    assert.deepEqual(r.health, { [M]: { numberOfFailures: 1, status: "Failing" } });
    assert.equal(r.condition?.status, "False");
  });

  it("answers fallback replicas times the target past the threshold, and sets the condition", () => {
    const r = kedaFallbackStep(
      so({ failureThreshold: 3, replicas: 10 }),
      { [M]: { numberOfFailures: 3, status: "Happy" } },
      M,
      { ok: false, error: "some error" },
      { target, currentReplicas: 5 },
    );
    assert.deepEqual(r.answer, { kind: "fallback", metricName: M, value: "100" });
    assert.deepEqual(r.health, { [M]: { numberOfFailures: 4, status: "Failing" } });
    assert.deepEqual(r.condition, {
      type: "Fallback",
      status: "True",
      reason: "FallbackExists",
      message: "At least one trigger is falling back on this scaled object",
    });
  });

  it("keeps the error when the fallback is invalid", () => {
    const r = kedaFallbackStep(
      so({ failureThreshold: -3, replicas: 10 }),
      failing(3),
      M,
      { ok: false, error: "some error" },
      { target },
    );
    assert.deepEqual(r, {
      answer: { kind: "error", error: "some error" },
      health: null,
      condition: null,
    });
  });

  const behaviors: [string, number, number][] = [
    ["currentReplicasIfHigher", 4, 100], // 10 fallback replicas (current 4 lower) x 10
    ["currentReplicasIfHigher", 12, 120],
    ["currentReplicas", 6, 60],
    ["currentReplicasIfLower", 4, 40],
    ["currentReplicasIfLower", 15, 100],
    ["static", 15, 100],
  ];
  for (const [behavior, current, value] of behaviors) {
    it(`behavior ${behavior} with ${current} current replicas gives ${value}`, () => {
      const r = kedaFallbackStep(
        so({ failureThreshold: 3, replicas: 10, behavior }),
        failing(3),
        M,
        { ok: false, error: "some error" },
        { target, currentReplicas: current },
      );
      assert.deepEqual(r.answer, { kind: "fallback", metricName: M, value: String(value) });
    });
  }

  it("divides by the ready replicas for a Value target, and gives up with none", () => {
    const s = so({ failureThreshold: 3, replicas: 10 });
    const vt = { type: "Value" as const, value: 2.5 };
    const r = kedaFallbackStep(s, failing(3), M, { ok: false, error: "e" }, {
      target: vt,
      readyReplicas: 4,
    });
    // 2.5 x 1000 x 10 / 4 = 6250 milli
    assert.deepEqual(r.answer, { kind: "fallback", metricName: M, value: "6250m" });
    const none = kedaFallbackStep(s, failing(3), M, { ok: false, error: "e" }, {
      target: vt,
      readyReplicas: 0,
    });
    assert.deepEqual(none.answer, { kind: "error", error: "error performing fallback" });
  });

  it("answers the composite metric with scalingModifiers, and -1 for behavior scalingModifiers", () => {
    const modifiers = { scalingModifiers: { formula: "a", target: "4" } };
    const r = kedaFallbackStep(
      so({ failureThreshold: 1, replicas: 3 }, modifiers),
      failing(1, "s0-prometheus"),
      "s0-prometheus",
      { ok: false, error: "e" },
      { target },
    );
    assert.deepEqual(r.answer, { kind: "fallback", metricName: "composite-metric", value: "12" });
    const p = kedaFallbackStep(
      so({ failureThreshold: 1, replicas: 3, behavior: "scalingModifiers" }, modifiers),
      failing(1, "s0-prometheus"),
      "s0-prometheus",
      { ok: false, error: "e" },
      { target },
    );
    assert.deepEqual(p.answer, { kind: "placeholder", metricName: "s0-prometheus", value: "-1" });
  });
});
