/**
 * KEDA's scale-loop activity (core/keda/activity.ts): thresholds per trigger type, errors,
 * fallback, cpu/memory-only ScaledObjects and scalingModifiers' activationTarget.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { kedaActivity, type KedaReading } from "../../../src/core/keda/activity.ts";
import { parseScaledObject } from "../../../src/core/keda/scaled_object.ts";

// deno-lint-ignore no-explicit-any
type Obj = any;

function so(triggers: Obj[], advanced?: Obj) {
  return parseScaledObject({
    apiVersion: "keda.sh/v1alpha1",
    kind: "ScaledObject",
    metadata: { name: "web", namespace: "shop" },
    spec: { scaleTargetRef: { name: "web" }, triggers, ...(advanced ? { advanced } : {}) },
  });
}

const PROM = { type: "prometheus", metadata: {} };
const CRON = { type: "cron", metadata: {} };
const reading = (index: number, metricName: string, extra: Partial<KedaReading>): KedaReading => ({
  index,
  metricName,
  values: {},
  ...extra,
});

describe("kedaActivity", () => {
  it("is active above the activation threshold, not at it", () => {
    const o = so([PROM, CRON]);
    const at = kedaActivity(o, [
      reading(0, "s0-prometheus", { value: 5, values: { activationThreshold: 5 } }),
      reading(1, "s1-cron", { value: 0 }),
    ]);
    assert.deepEqual(at, { active: false, error: false, activeTriggers: [], fallback: false });
    const above = kedaActivity(o, [
      reading(0, "s0-prometheus", { value: 5.001, values: { activationThreshold: 5 } }),
      reading(1, "s1-cron", { value: 3 }),
    ]);
    assert.deepEqual(above, {
      active: true,
      error: false,
      activeTriggers: ["s0-prometheus", "s1-cron"],
      fallback: false,
    });
  });

  it("reads each type's threshold field", () => {
    for (
      const [type, field] of [
        ["metrics-api", "activationTargetValue"],
        ["aws-sqs-queue", "activationQueueLength"],
        ["influxdb", "activationThresholdValue"],
      ]
    ) {
      const o = so([{ type, metadata: {} }]);
      assert.equal(
        kedaActivity(o, [reading(0, "s0", { value: 2, values: { [field]: 2 } })]).active,
        false,
        type,
      );
      assert.equal(
        kedaActivity(o, [reading(0, "s0", { value: 3, values: { [field]: 2 } })]).active,
        true,
        type,
      );
    }
  });

  it("counts a failure as an error, and a fallback answer as active", () => {
    const o = so([PROM, CRON]);
    assert.deepEqual(
      kedaActivity(o, [
        reading(0, "s0-prometheus", { error: "down" }),
        reading(1, "s1-cron", { value: 2 }),
      ]),
      { active: true, error: true, activeTriggers: ["s1-cron"], fallback: false },
    );
    assert.deepEqual(
      kedaActivity(o, [
        reading(0, "s0-prometheus", { fallback: true }),
        reading(1, "s1-cron", { value: 0 }),
      ]),
      { active: true, error: false, activeTriggers: ["s0-prometheus"], fallback: true },
    );
  });

  it("makes a ScaledObject of only cpu and memory active unless something failed", () => {
    const o = so([{ type: "cpu", metadata: {} }, { type: "memory", metadata: {} }]);
    assert.equal(kedaActivity(o, []).active, true);
    const mixed = so([{ type: "cpu", metadata: {} }, PROM]);
    assert.equal(kedaActivity(mixed, [reading(1, "s1-prometheus", { value: 0 })]).active, false);
  });

  it("uses the composite value against activationTarget with scalingModifiers", () => {
    const o = so([{ ...PROM, name: "a" }, { ...CRON, name: "b" }], {
      scalingModifiers: { formula: "a + b", target: "10", activationTarget: "4" },
    });
    const readings = [
      reading(0, "s0-prometheus", { value: 9 }),
      reading(1, "s1-cron", { value: 0 }),
    ];
    assert.deepEqual(kedaActivity(o, readings, 4), {
      active: false,
      error: false,
      activeTriggers: [],
      fallback: false,
    });
    assert.deepEqual(kedaActivity(o, readings, 4.5).activeTriggers, ["composite-metric"]);
    // an error: never active
    assert.equal(
      kedaActivity(o, [reading(0, "s0-prometheus", { error: "x" }), readings[1]], 50).active,
      false,
    );
  });
});
