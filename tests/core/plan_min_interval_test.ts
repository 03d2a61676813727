import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { planHpa } from "../../src/core/kube_metrics_adapter/plan.ts";

function hpa(annotations: Record<string, string>, metrics: unknown[]): unknown {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name: "web", namespace: "a", annotations },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
      maxReplicas: 3,
      metrics,
    },
  };
}

function external(name: string, type: string): unknown {
  return {
    type: "External",
    external: {
      metric: { name, selector: { matchLabels: { type } } },
      target: { type: "Value", value: "1" },
    },
  };
}

/** An External json-path metric `queue` asking for `interval`. */
function queue(interval: string): unknown {
  return hpa({
    "metric-config.external.queue.json-path/endpoint": "http://127.0.0.1:9/x",
    "metric-config.external.queue.json-path/json-key": "$.v",
    "metric-config.external.queue.json-path/interval": interval,
  }, [external("queue", "json-path")]);
}

describe("planHpa with minIntervalSeconds (--min-collection-interval)", () => {
  it("refuses an interval annotation below the minimum, naming the HPA, metric, annotation and value", () => {
    const [plan] = planHpa(queue("100ms"), { minIntervalSeconds: 1 });
    assert.equal(
      plan.error,
      "interval 100ms of External metric `queue` of HPA a/web (annotation metric-config.external.queue.json-path/interval) is below --min-collection-interval 1s",
    );
    assert.equal(plan.intervalSeconds, 0.1);
  });

  it("accepts the minimum itself and anything longer", () => {
    assert.equal(planHpa(queue("1s"), { minIntervalSeconds: 1 })[0].error, null);
    assert.equal(planHpa(queue("1.5s"), { minIntervalSeconds: 1 })[0].error, null);
    assert.equal(planHpa(queue("30s"), { minIntervalSeconds: 30 })[0].error, null);
  });

  it("names the minimum as a Go duration", () => {
    const [plan] = planHpa(queue("29s"), { minIntervalSeconds: 30 });
    assert.equal(
      plan.error,
      "interval 29s of External metric `queue` of HPA a/web (annotation metric-config.external.queue.json-path/interval) is below --min-collection-interval 30s",
    );
  });

  it("has no bound without the option, or at 0, and checks no default interval", () => {
    assert.equal(planHpa(queue("100ms"))[0].error, null);
    assert.equal(planHpa(queue("100ms"), { minIntervalSeconds: 0 })[0].error, null);
    // "0" asks for the default: the default is the operator's (the command line checks it)
    const [plan] = planHpa(queue("0s"), { minIntervalSeconds: 1, defaultIntervalSeconds: 0.5 });
    assert.equal(plan.error, null);
    assert.equal(plan.intervalSeconds, 0.5);
  });

  it("adds the refusal to the metric's other errors", () => {
    const [plan] = planHpa(
      hpa({
        "metric-config.external.queue.json-path/json-key": "$.v",
        "metric-config.external.queue.json-path/interval": "500ms",
      }, [external("queue", "json-path")]),
      { minIntervalSeconds: 1 },
    );
    assert.match(plan.error!, /endpoint/);
    assert.match(
      plan.error!,
      /; interval 500ms of External metric `queue` of HPA a\/web \(annotation metric-config\.external\.queue\.json-path\/interval\) is below --min-collection-interval 1s$/,
    );
  });

  it("refuses a hidden formula input's interval, and the formula says its input cannot be collected", () => {
    const plans = planHpa(
      hpa({
        "metric-config.external.total.formula/expression": "queue * 2",
        "metric-config.external.queue.json-path/endpoint": "http://127.0.0.1:9/x",
        "metric-config.external.queue.json-path/json-key": "$.v",
        "metric-config.external.queue.json-path/interval": "200ms",
      }, [external("total", "formula")]),
      { minIntervalSeconds: 1 },
    );
    assert.deepEqual(plans.map((p) => [p.metricName, p.hidden === true]), [
      ["total", false],
      ["queue", true],
    ]);
    const refusal =
      "interval 200ms of External metric `queue` of HPA a/web (annotation metric-config.external.queue.json-path/interval) is below --min-collection-interval 1s";
    assert.equal(plans[1].error, refusal);
    assert.equal(
      plans[0].error,
      `input \`queue\` (External metric queue) of the formula of External metric \`total\` of HPA a/web (annotation metric-config.external.total.formula/expression) cannot be collected: ${refusal}`,
    );
  });
});
