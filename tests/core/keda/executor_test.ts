/**
 * KEDA v2.20.2's scale loop decisions (src/core/keda/executor.ts), with the cases of KEDA's
 * `pkg/scaling/executor/scale_scaledobjects_test.go` (to and from zero, idle, minimum, paused,
 * paused-scale-in/out, forced activation, trigger errors with and without fallback) and the
 * cooldown rules.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { type KedaLoopState, kedaScaleDecision } from "../../../src/core/keda/executor.ts";
import { parseScaledObject } from "../../../src/core/keda/scaled_object.ts";

const NOW = Date.parse("2026-11-29T08:00:00Z");

function so(spec: Record<string, unknown> = {}, annotations?: Record<string, string>) {
  return parseScaledObject({
    apiVersion: "keda.sh/v1alpha1",
    kind: "ScaledObject",
    metadata: { name: "name", namespace: "namespace", ...(annotations ? { annotations } : {}) },
    spec: { scaleTargetRef: { name: "name" }, triggers: [{ type: "prometheus" }], ...spec },
  });
}

function state(more: Partial<KedaLoopState>): KedaLoopState {
  return {
    active: false,
    error: false,
    activeTriggers: [],
    currentReplicas: 10,
    createdAt: NOW - 3_600_000,
    now: NOW,
    scaleTargetKind: "apps/v1.Deployment",
    externalMetricNames: ["s0-prometheus"],
    ...more,
  };
}

const active = (d: ReturnType<typeof kedaScaleDecision>) =>
  d.conditions.find((c) => c.type === "Active");

describe("KEDA's scale loop (scale_scaledobjects_test.go)", () => {
  it("TestScaleToMinReplicasWhenNotActive: inactive past the cooldown, to min 0", () => {
    const d = kedaScaleDecision(so({ minReplicaCount: 0 }), state({}));
    assert.equal(d.scaleTo, 0);
    assert.deepEqual(d.event, {
      type: "Normal",
      reason: "KEDAScaleTargetDeactivated",
      message: "Deactivated apps/v1.Deployment namespace/name from 10 to 0",
    });
    assert.equal(active(d)?.reason, "ScalerNotActive");
    assert.deepEqual(d.triggersActivity, { "s0-prometheus": { isActive: false } });
  });

  it("TestScaleToMinReplicasFromLowerInitialReplicaCount: below min, to min", () => {
    const d = kedaScaleDecision(so({ minReplicaCount: 5 }), state({ currentReplicas: 1 }));
    assert.equal(d.scaleTo, 5);
    assert.equal(d.event, undefined);
  });

  it("TestScaleFromMinReplicasWhenActive: active at 0, to max(min, 1), with the triggers", () => {
    const d = kedaScaleDecision(
      so({ minReplicaCount: 0 }),
      state({ active: true, currentReplicas: 0, activeTriggers: ["s0-prometheus", "s1-cron"] }),
    );
    assert.equal(d.scaleTo, 1);
    assert.equal(d.lastActiveTime, NOW);
    assert.deepEqual(d.event, {
      type: "Normal",
      reason: "KEDAScaleTargetActivated",
      message:
        "Scaled apps/v1.Deployment namespace/name from 0 to 1, triggered by s0-prometheus;s1-cron",
    });
    assert.equal(active(d)?.reason, "ScalerActive");
  });

  it("TestScaleToIdleReplicasWhenNotActive and TestScaleFromIdleToMinReplicasWhenActive", () => {
    const idle = so({ idleReplicaCount: 0, minReplicaCount: 5 });
    assert.equal(kedaScaleDecision(idle, state({})).scaleTo, 0);
    const up = kedaScaleDecision(
      idle,
      state({ active: true, currentReplicas: 0, activeTriggers: ["s0-prometheus"] }),
    );
    assert.equal(up.scaleTo, 5);
    assert.match(up.event?.message ?? "", /from 0 to 5, triggered by s0-prometheus$/);
  });

  it("TestScaleToPausedReplicasCount: paused, nothing scaled here, Paused condition", () => {
    const d = kedaScaleDecision(
      so({}, { "autoscaling.keda.sh/paused-replicas": "2" }),
      state({ active: true }),
    );
    assert.equal(d.scaleTo, undefined);
    assert.deepEqual(d.conditions.find((c) => c.type === "Paused"), {
      type: "Paused",
      status: "True",
      reason: "ScaledObjectPaused",
      message: "ScaledObject is paused",
    });
  });

  it("no scale to min or idle with paused-scale-in, none from zero with paused-scale-out", () => {
    assert.equal(
      kedaScaleDecision(
        so({ minReplicaCount: 0 }, { "autoscaling.keda.sh/paused-scale-in": "true" }),
        state({}),
      ).scaleTo,
      undefined,
    );
    assert.equal(
      kedaScaleDecision(
        so({ minReplicaCount: 0 }, { "autoscaling.keda.sh/paused-scale-out": "true" }),
        state({ active: true, currentReplicas: 0 }),
      ).scaleTo,
      undefined,
    );
  });

  it("TestScaleFromMinReplicasWhenActivationForced", () => {
    const d = kedaScaleDecision(
      so({ minReplicaCount: 0 }, { "autoscaling.keda.sh/force-activation": "true" }),
      state({ currentReplicas: 0 }),
    );
    assert.equal(d.scaleTo, 1);
    assert.equal(
      d.event?.message,
      "Scaled apps/v1.Deployment namespace/name from 0 to 1, caused by forced activation annotation",
    );
    assert.equal(
      active(d)?.message,
      "Scaling is performed because activation is being forced by annotation",
    );
  });
});

describe("KEDA's cooldown and trigger errors", () => {
  it("cools down for cooldownPeriod after the last active time", () => {
    const s = so({ minReplicaCount: 0, cooldownPeriod: 60 });
    const cooling = kedaScaleDecision(s, state({ lastActiveTime: NOW - 59_000 }));
    assert.equal(cooling.scaleTo, undefined);
    assert.deepEqual(active(cooling), {
      type: "Active",
      status: "False",
      reason: "ScalerCooldown",
      message: "Scaler cooling down because triggers are not active",
    });
    assert.equal(kedaScaleDecision(s, state({ lastActiveTime: NOW - 61_000 })).scaleTo, 0);
    // 300 s by default
    assert.equal(
      kedaScaleDecision(so({ minReplicaCount: 0 }), state({ lastActiveTime: NOW - 299_000 }))
        .scaleTo,
      undefined,
    );
    // never active: initialCooldownPeriod after creation (0 by default)
    assert.equal(
      kedaScaleDecision(
        so({ minReplicaCount: 0, initialCooldownPeriod: 120 }),
        state({ createdAt: NOW - 60_000 }),
      ).scaleTo,
      undefined,
    );
  });

  it("an error with fallback replicas never scales to zero; without fallback, Ready False", () => {
    const withFallback = kedaScaleDecision(
      so({ minReplicaCount: 0, fallback: { failureThreshold: 3, replicas: 2 } }),
      state({ error: true }),
    );
    assert.equal(withFallback.scaleTo, undefined);
    const without = kedaScaleDecision(so({ minReplicaCount: 0 }), state({ error: true }));
    assert.equal(without.scaleTo, undefined);
    assert.deepEqual(without.conditions[0], {
      type: "Ready",
      status: "False",
      reason: "TriggerError",
      message: "Triggers defined in ScaledObject are not working correctly",
    });
  });

  it("active with an error elsewhere: Ready Unknown, PartialTriggerError", () => {
    const d = kedaScaleDecision(
      so({ minReplicaCount: 1 }),
      state({ active: true, error: true, currentReplicas: 3 }),
    );
    assert.deepEqual(d.conditions[0], {
      type: "Ready",
      status: "Unknown",
      reason: "PartialTriggerError",
      message: "Some triggers defined in ScaledObject are not working correctly",
    });
    assert.equal(d.lastActiveTime, undefined);
  });
});
