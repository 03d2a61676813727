import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { planHpa } from "../../src/core/kube_metrics_adapter/plan.ts";
import type { MetricPlan } from "../../src/core/types.ts";
import { servedAtOf } from "../../src/engine/served_at.ts";

function externalPlan(selector?: Record<string, unknown>): MetricPlan {
  const [plan] = planHpa({
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: {
      name: "web",
      namespace: "shop",
      annotations: {
        "metric-config.external.queue-length.json-path/endpoint": "http://queue/depth",
        "metric-config.external.queue-length.json-path/json-key": "$.depth",
      },
    },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
      maxReplicas: 10,
      metrics: [{
        type: "External",
        external: {
          metric: { name: "queue-length", ...(selector ? { selector } : {}) },
          target: { type: "AverageValue", averageValue: "10" },
        },
      }],
    },
  });
  return plan;
}

describe("servedAtOf", () => {
  it("serves an External plan under its own frozen matchLabels, not a copy", () => {
    const plan = externalPlan({ matchLabels: { type: "json-path", queue: "orders" } });
    const at = servedAtOf(plan);
    assert.deepEqual(at, {
      kind: "external",
      namespace: "shop",
      metricName: "queue-length",
      metricLabels: { queue: "orders", type: "json-path" },
    });
    assert.ok(at.kind === "external");
    assert.equal(at.metricLabels, plan.metricSelector!.matchLabels);
    assert.throws(() => {
      at.metricLabels.queue = "payments";
    }, TypeError);
  });

  it("freezes a copy of labels a plan did not freeze, and shares one empty set", () => {
    const plan = externalPlan({ matchLabels: { type: "json-path" } });
    const labels = { type: "json-path", queue: "orders" };
    const at = servedAtOf({ ...plan, metricSelector: { matchLabels: labels } });
    assert.ok(at.kind === "external");
    assert.deepEqual(at.metricLabels, labels);
    assert.notEqual(at.metricLabels, labels);
    assert.ok(Object.isFrozen(at.metricLabels) && !Object.isFrozen(labels));
    const a = servedAtOf({ ...plan, metricSelector: null });
    const b = servedAtOf({ ...plan, metricSelector: null });
    assert.ok(a.kind === "external" && b.kind === "external");
    assert.deepEqual(a.metricLabels, {});
    assert.equal(a.metricLabels, b.metricLabels);
    assert.ok(Object.isFrozen(a.metricLabels));
  });
});
