import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { planHpa } from "../../src/core/kube_metrics_adapter/plan.ts";

function hpa(interval: string): unknown {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: {
      name: "web",
      namespace: "shop",
      annotations: {
        "metric-config.external.q.json-path/endpoint": "http://127.0.0.1:9/x",
        "metric-config.external.q.json-path/json-key": "$.v",
        "metric-config.external.q.json-path/interval": interval,
      },
    },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
      maxReplicas: 3,
      metrics: [{
        type: "External",
        external: {
          metric: { name: "q", selector: { matchLabels: { type: "json-path" } } },
          target: { type: "Value", value: "1" },
        },
      }],
    },
  };
}

describe("planHpa interval against the metrics TTL", () => {
  it("warns of an interval longer than the TTL: the value expires between collections", () => {
    const [plan] = planHpa(hpa("1h"), { metricsTtlSeconds: 900 });
    assert.equal(plan.error, null);
    assert.deepEqual(plan.warnings, [
      "interval 1h0m0s of External metric `q` is longer than the metrics TTL 15m0s: its value expires between collections and is not served meanwhile",
    ]);
  });

  it("says nothing of an interval within the TTL, or when no TTL is given", () => {
    assert.equal(planHpa(hpa("15m"), { metricsTtlSeconds: 900 })[0].warnings, undefined);
    assert.equal(planHpa(hpa("1h"))[0].warnings, undefined);
  });

  it("refuses an interval past Go's maximum instead of warning", () => {
    const [plan] = planHpa(hpa("2562048h"), { metricsTtlSeconds: 900 });
    assert.equal(
      plan.error,
      'invalid interval "2562048h" for External metric q (annotation metric-config.external.q.json-path/interval): longer than Go\'s maximum 2562047h47m16.854775807s',
    );
    assert.equal(plan.warnings, undefined);
  });
});

describe("planHpa with fallback keys", () => {
  it("keeps the checked fallback on the plan, out of its config", () => {
    const obj = hpa("30s") as { metadata: { annotations: Record<string, string> } };
    obj.metadata.annotations["metric-config.external.q.json-path/fallback-failure-threshold"] = "3";
    obj.metadata.annotations["metric-config.external.q.json-path/fallback-replicas"] = "4";
    const [plan] = planHpa(obj);
    assert.equal(plan.error, null);
    assert.deepEqual(plan.fallback, { failureThreshold: 3, replicas: 4, behavior: "static" });
    assert.equal(plan.warnings, undefined);
    assert.equal(plan.config["fallback-replicas"], undefined);
  });
});
