/**
 * Planning formula metrics (issue 21): hidden inputs, identifier mapping, and every plan error
 * naming the HPA, the metric and the offending part.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { planHpa, planKey } from "../../src/core/kube_metrics_adapter/plan.ts";
import type { MetricPlan } from "../../src/core/types.ts";

type Metric = Record<string, unknown>;

function hpa(
  annotations: Record<string, string>,
  metrics: Metric[] = [formulaMetric("f")],
): unknown {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name: "web", namespace: "shop", annotations },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
      maxReplicas: 10,
      metrics,
    },
  };
}

function formulaMetric(
  name: string,
  target: Record<string, unknown> = { type: "AverageValue", averageValue: "10" },
): Metric {
  return {
    type: "External",
    external: { metric: { name, selector: { matchLabels: { type: "formula" } } }, target },
  };
}

const QUEUE = {
  "metric-config.external.queue-length.prometheus/query": "sum(queue)",
  "metric-config.external.queue-length.prometheus/interval": "15s",
};
const RPS = {
  "metric-config.pods.rps.json-path/json-key": "$.rps",
  "metric-config.pods.rps.json-path/port": "9090",
};

function byName(plans: MetricPlan[], name: string): MetricPlan {
  const p = plans.find((x) => x.metricName === name);
  assert.ok(p, `no plan ${name} in ${plans.map((x) => x.metricName)}`);
  return p;
}

const AT =
  "External metric `f` of HPA shop/web (annotation metric-config.external.f.formula/expression)";

describe("planHpa: formula metrics", () => {
  it("plans hidden inputs after the listed metrics, maps - to _, and keeps the formula's parts", () => {
    const plans = planHpa(hpa({
      "metric-config.external.f.formula/expression": "queue_length / 10 + max(rps, 5)",
      "metric-config.external.f.formula/activation-target": "1.5",
      ...QUEUE,
      ...RPS,
    }));
    assert.deepEqual(
      plans.map((
        p,
      ) => [p.index, p.metricType, p.metricName, p.collector, p.hidden ?? false, p.error]),
      [
        [0, "External", "f", "formula", false, null],
        [1, "External", "queue-length", "prometheus", true, null],
        [2, "Pods", "rps", "json-path", true, null],
      ],
    );
    const f = plans[0];
    assert.equal(f.formula?.expression, "queue_length / 10 + max(rps, 5)");
    assert.equal(f.formula?.activationTarget, 1.5);
    assert.deepEqual(
      f.formula?.inputs.map((i) => [i.identifier, i.planKey, i.metricType, i.metricName]),
      [
        ["queue_length", "shop/web/1/External/queue-length", "External", "queue-length"],
        ["rps", "shop/web/2/Pods/rps", "Pods", "rps"],
      ],
    );
    assert.equal(planKey(plans[1]), "shop/web/1/External/queue-length");
    assert.equal(plans[1].intervalSeconds, 15);
    assert.deepEqual(plans[1].target, { type: "AverageValue" });
    assert.equal(f.warnings, undefined);
  });

  it("uses a listed metric as an input without a hidden copy", () => {
    const plans = planHpa(hpa({
      "metric-config.external.f.formula/expression": "queue_length * 2",
      ...QUEUE,
    }, [
      formulaMetric("f"),
      {
        type: "External",
        external: {
          metric: { name: "queue-length", selector: { matchLabels: { type: "prometheus" } } },
          target: { type: "AverageValue", averageValue: "5" },
        },
      },
    ]));
    assert.equal(plans.length, 2);
    assert.equal(plans[1].hidden, undefined);
    assert.equal(plans[0].formula?.inputs[0].planKey, "shop/web/1/External/queue-length");
  });

  it("warns of definitions no formula names, and collects only those named", () => {
    const plans = planHpa(hpa({
      "metric-config.external.f.formula/expression": "rps",
      ...QUEUE,
      ...RPS,
    }));
    assert.deepEqual(plans.map((p) => p.metricName), ["f", "rps"]);
    assert.deepEqual(plans[0].warnings, [
      "annotations metric-config.external.queue-length.prometheus/... configure nothing: spec.metrics has no External metric `queue-length` and no formula names it",
    ]);
  });

  it("needs an expression", () => {
    const [f] = planHpa(hpa({ "metric-config.external.f.formula/expression": " " }));
    assert.equal(
      f.error,
      "External metric `f` of HPA shop/web needs matchLabels.expression or annotation metric-config.external.f.formula/expression (an empty formula computes nothing)",
    );
    const [g] = planHpa(hpa({}));
    assert.equal(
      g.error,
      "External metric `f` of HPA shop/web needs matchLabels.expression or annotation metric-config.external.f.formula/expression",
    );
  });

  it("names a syntax error's place", () => {
    const [f] = planHpa(hpa({ "metric-config.external.f.formula/expression": "rps +", ...RPS }));
    assert.match(
      f.error!,
      /^invalid expression "rps \+" for External metric `f` of HPA shop\/web \(annotation metric-config\.external\.f\.formula\/expression\): /,
    );
  });

  it("refuses an unknown identifier, listing the HPA's other metrics", () => {
    const [f] = planHpa(hpa({
      "metric-config.external.f.formula/expression": "rps + queue",
      ...RPS,
      ...QUEUE,
    }));
    assert.equal(
      f.error,
      `unknown identifier \`queue\` in the formula of ${AT}: the HPA's other metrics are queue_length, rps`,
    );
    const [g] = planHpa(hpa({ "metric-config.external.f.formula/expression": "x" }));
    assert.equal(
      g.error,
      `unknown identifier \`x\` in the formula of ${AT}: the HPA defines no other metric (add metric-config.<type>.<input>.<collector>/... annotations)`,
    );
    const [h] = planHpa(hpa({ "metric-config.external.f.formula/expression": "f + 1" }));
    assert.equal(
      h.error,
      `unknown identifier \`f\` in the formula of ${AT}: a formula cannot use itself`,
    );
  });

  it("refuses an identifier two metrics map to", () => {
    const [f] = planHpa(hpa({
      "metric-config.external.f.formula/expression": "queue_length",
      ...QUEUE,
      "metric-config.external.queue_length.prometheus/query": "sum(other)",
    }));
    assert.equal(
      f.error,
      `ambiguous identifier \`queue_length\` in the formula of ${AT}: it names External metric queue-length and External metric queue_length (rename one)`,
    );
    const [g] = planHpa(hpa({
      "metric-config.external.f.formula/expression": "rps",
      ...RPS,
      "metric-config.external.rps.prometheus/query": "sum(rps)",
    }));
    assert.equal(
      g.error,
      `ambiguous identifier \`rps\` in the formula of ${AT}: it names External metric rps and Pods metric rps (rename one)`,
    );
  });

  it("refuses an identifier bound to a Resource metric or to another formula", () => {
    const plans = planHpa(hpa({
      "metric-config.external.f.formula/expression": "cpu + g",
      "metric-config.external.g.formula/expression": "2",
    }, [
      formulaMetric("f"),
      formulaMetric("g"),
      {
        type: "Resource",
        resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 50 } },
      },
    ]));
    assert.equal(
      plans[0].error,
      `identifier \`cpu\` in the formula of ${AT} names Resource metric cpu, which metrics-server serves: a formula cannot read it; identifier \`g\` in the formula of ${AT} names formula metric g: a formula cannot use another formula`,
    );
    assert.equal(plans[1].error, null);
    assert.deepEqual(plans[1].formula?.inputs, []);
  });

  it("refuses a formula whose dry run gives a boolean", () => {
    const [f] = planHpa(hpa({ "metric-config.external.f.formula/expression": "rps > 1", ...RPS }));
    assert.match(f.error!, new RegExp(`^invalid formula of ${AT.replace(/[().]/g, "\\$&")}: `));
    assert.match(f.error!, /with every input at -1\)$/);
  });

  it("refuses a target that is not a number > 0", () => {
    for (
      const [target, text] of [
        [{ type: "AverageValue", averageValue: "0" }, 'target averageValue "0"'],
        [{ type: "Value", value: "-2" }, 'target value "-2"'],
      ] as const
    ) {
      const [f] = planHpa(
        hpa({ "metric-config.external.f.formula/expression": "rps", ...RPS }, [
          formulaMetric("f", target),
        ]),
      );
      assert.equal(
        f.error,
        `invalid ${text} for formula External metric \`f\` of HPA shop/web: want a number > 0`,
      );
    }
  });

  it("refuses a Utilization target as an invalid HPA", () => {
    assert.throws(
      () =>
        planHpa(
          hpa({ "metric-config.external.f.formula/expression": "2" }, [
            formulaMetric("f", { type: "Utilization", averageUtilization: 50 }),
          ]),
        ),
      /shop\/web.*External metrics take target type Value or AverageValue/s,
    );
  });

  it("makes an input that cannot be collected an error of the formula too", () => {
    const plans = planHpa(hpa({
      "metric-config.external.f.formula/expression": "rps",
      "metric-config.pods.rps.json-path/json-key": "$.rps",
    }));
    const rps = byName(plans, "rps");
    assert.equal(
      rps.error,
      "Pods metric `rps` of HPA shop/web needs annotation metric-config.pods.rps.json-path/port",
    );
    assert.equal(
      plans[0].error,
      `input \`rps\` (Pods metric rps) of the formula of ${AT} cannot be collected: ${rps.error}`,
    );
  });

  it("refuses a hidden Object input (it needs its describedObject)", () => {
    const plans = planHpa(hpa({
      "metric-config.external.f.formula/expression": "hits",
      "metric-config.object.hits.prometheus/query": "sum(hits)",
    }));
    assert.equal(
      byName(plans, "hits").error,
      "Object metric `hits` is a formula input that spec.metrics does not list: an Object input needs its describedObject, so list it in spec.metrics",
    );
  });

  it("takes fallback-behavior scalingModifiers on a formula only", () => {
    const plans = planHpa(hpa({
      "metric-config.external.f.formula/expression": "rps",
      "metric-config.external.f.formula/fallback-failure-threshold": "3",
      "metric-config.external.f.formula/fallback-replicas": "4",
      "metric-config.external.f.formula/fallback-behavior": "scalingModifiers",
      ...RPS,
    }));
    assert.equal(plans[0].error, null);
    assert.deepEqual(plans[0].fallback, {
      failureThreshold: 3,
      replicas: 4,
      behavior: "scalingModifiers",
    });
  });

  it("gives formulas over the same queries the same query key, and different ones another", async () => {
    const { queryKey } = await import("../../src/core/kube_metrics_adapter/plan.ts");
    const a = planHpa(hpa({ "metric-config.external.f.formula/expression": "rps", ...RPS }))[0];
    const b = planHpa(hpa({ "metric-config.external.f.formula/expression": "rps", ...RPS }))[0];
    const c = planHpa(hpa({
      "metric-config.external.f.formula/expression": "rps",
      "metric-config.pods.rps.json-path/json-key": "$.other",
      "metric-config.pods.rps.json-path/port": "9090",
    }))[0];
    assert.equal(queryKey(a), queryKey(b));
    assert.notEqual(queryKey(a), queryKey(c));
  });
});
