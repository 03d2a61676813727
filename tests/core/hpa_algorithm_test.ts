import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  computeDesiredReplicas,
  type HpaAlgorithmBehavior,
  type HpaAlgorithmInput,
  type HpaMetricObservation,
  type HpaPod,
} from "../../src/core/kubernetes/hpa_algorithm.ts";

const T = 1_700_000_000_000;
const s = (seconds: number): number => T - seconds * 1000;

/** n running, ready pods p0..p(n-1). */
function pods(n: number, overrides: Record<number, Partial<HpaPod>> = {}): HpaPod[] {
  return Array.from({ length: n }, (_, i) => ({ name: `p${i}`, ...overrides[i] }));
}

/** A Pods metric with values for p0.. (null: no value for that pod). */
function podsMetric(values: (string | null)[], averageValue: string): HpaMetricObservation {
  const record: Record<string, string> = {};
  values.forEach((v, i) => {
    if (v !== null) record[`p${i}`] = v;
  });
  return {
    type: "Pods",
    metricName: "queue",
    target: { type: "AverageValue", averageValue },
    values: record,
  };
}

function objectMetric(
  value: string,
  target: { type: "Value"; value: string } | { type: "AverageValue"; averageValue: string },
): HpaMetricObservation {
  return { type: "Object", metricName: "rps", describedObjectKind: "Ingress", target, value };
}

function externalMetric(
  values: string[],
  target: { type: "Value"; value: string } | { type: "AverageValue"; averageValue: string },
): HpaMetricObservation {
  return { type: "External", metricName: "backlog", target, values };
}

/** Defaults for a steady state: history present (no first-reconcile hold-back). */
function input(over: Partial<HpaAlgorithmInput>): HpaAlgorithmInput {
  return {
    now: T,
    currentReplicas: 1,
    maxReplicas: 100,
    metrics: [],
    recommendations: [],
    ...over,
  };
}

interface Case {
  name: string;
  input: HpaAlgorithmInput;
  /** Expected proposal of the first metric. */
  metric?: number | null;
  desired: number;
  condition?: string | null;
}

function run(cases: Case[]): void {
  for (const c of cases) {
    it(c.name, () => {
      const r = computeDesiredReplicas(c.input);
      if (c.metric !== undefined) assert.equal(r.perMetric[0].replicas, c.metric);
      assert.equal(r.desiredReplicas, c.desired);
      if (c.condition !== undefined) assert.equal(r.condition, c.condition);
    });
  }
}

describe("Pods metrics (calcPlainMetricReplicas)", () => {
  run([
    {
      name: "doubles the replicas when the average is twice the target (docs: 200m vs 100m)",
      input: input({
        currentReplicas: 3,
        pods: pods(3),
        metrics: [podsMetric(["200m", "200m", "200m"], "100m")],
      }),
      metric: 6,
      desired: 6,
    },
    {
      name: "halves the replicas when the average is half the target (docs: 50m vs 100m)",
      input: input({
        currentReplicas: 4,
        pods: pods(4),
        metrics: [podsMetric(["50m", "50m", "50m", "50m"], "100m")],
      }),
      metric: 2,
      desired: 2,
    },
    {
      name: "keeps the replicas at ratio 1.1, the edge of the default tolerance",
      input: input({
        currentReplicas: 10,
        pods: pods(10),
        metrics: [podsMetric(Array(10).fill("110"), "100")],
      }),
      metric: 10,
      desired: 10,
    },
    {
      name: "scales at ratio 1.11, just outside the tolerance: ceil(1.11 * 10) = 12",
      input: input({
        currentReplicas: 10,
        pods: pods(10),
        metrics: [podsMetric(Array(10).fill("111"), "100")],
      }),
      metric: 12,
      desired: 12,
    },
    {
      name: "keeps the replicas at ratio 0.9, the lower edge of the tolerance",
      input: input({
        currentReplicas: 10,
        pods: pods(10),
        metrics: [podsMetric(Array(10).fill("90"), "100")],
      }),
      metric: 10,
      desired: 10,
    },
    {
      name: "scales down at ratio 0.89: ceil(0.89 * 10) = 9",
      input: input({
        currentReplicas: 10,
        pods: pods(10),
        metrics: [podsMetric(Array(10).fill("89"), "100")],
      }),
      metric: 9,
      desired: 9,
    },
    {
      name: "multiplies in float64 like math.Ceil upstream: 11/5 * 25 is 55.00000000000001, so 56",
      input: input({
        currentReplicas: 25,
        pods: pods(25),
        metrics: [podsMetric(Array(25).fill("11"), "5")],
      }),
      metric: 56,
      desired: 50,
    },
    {
      name: "averages integer milli-values with truncation (1m,1m,2m averages to 1m)",
      input: input({
        currentReplicas: 3,
        pods: pods(3),
        metrics: [podsMetric(["1m", "1m", "2m"], "1m")],
      }),
      metric: 3,
      desired: 3,
    },
    {
      name: "rounds values up to whole milli-units like MilliValue (0.0001 is 1m, ratio 1)",
      input: input({
        currentReplicas: 2,
        pods: pods(2),
        metrics: [podsMetric(["0.0001", "0.0001"], "1m")],
      }),
      metric: 2,
      desired: 2,
    },
    {
      name: "counts missing pods as 0 on a scale-up: 2x300m + 2 missing -> 1.5 * 4 = 6",
      input: input({
        currentReplicas: 4,
        pods: pods(4),
        metrics: [podsMetric(["300m", "300m", null, null], "100m")],
      }),
      metric: 6,
      desired: 6,
    },
    {
      name: "counts missing pods as the target on a scale-down: 2x20m + 2 missing -> 0.6 * 4 -> 3",
      input: input({
        currentReplicas: 4,
        pods: pods(4),
        metrics: [podsMetric(["20m", "20m", null, null], "100m")],
      }),
      metric: 3,
      desired: 3,
    },
    {
      name: "keeps the replicas when missing pods reverse the direction (1.5 becomes 0.37)",
      input: input({
        currentReplicas: 4,
        pods: pods(4),
        metrics: [podsMetric(["150m", null, null, null], "100m")],
      }),
      metric: 4,
      desired: 4,
    },
    {
      name: "keeps the replicas when the rebalanced ratio is within tolerance (1.2 becomes 1.05)",
      input: input({
        currentReplicas: 8,
        pods: pods(8),
        metrics: [podsMetric(["120", "120", "120", "120", "120", "120", "120", null], "100")],
      }),
      metric: 8,
      desired: 8,
    },
    {
      name: "counts Pending pods as 0 on a scale-up: 3x200m + 1 pending -> 1.5 * 4 = 6",
      input: input({
        currentReplicas: 4,
        pods: pods(4, { 3: { phase: "Pending" } }),
        metrics: [podsMetric(["200m", "200m", "200m", "900m"], "100m")],
      }),
      metric: 6,
      desired: 6,
    },
    {
      name: "leaves Pending pods out on a scale-down: ceil(0.2 * 3 ready pods) = 1",
      input: input({
        currentReplicas: 4,
        pods: pods(4, { 3: { phase: "Pending" } }),
        metrics: [podsMetric(["20m", "20m", "20m", "1000m"], "100m")],
      }),
      metric: 1,
      desired: 1,
    },
    {
      name: "ignores deleted and Failed pods and their values",
      input: input({
        currentReplicas: 4,
        pods: pods(4, { 0: { deleting: true }, 1: { phase: "Failed" } }),
        metrics: [podsMetric(["1000m", "1000m", "100m", "100m"], "100m")],
      }),
      metric: 4,
      desired: 4,
    },
    {
      name: "counts a Running pod with Ready false as ready (readiness only matters for CPU)",
      input: input({
        currentReplicas: 2,
        pods: pods(2, { 1: { ready: false } }),
        metrics: [podsMetric(["300m", "300m"], "100m")],
      }),
      metric: 6,
      desired: 4,
    },
  ]);

  it("fails the metric when no targeted pod has a value (all Pending)", () => {
    const r = computeDesiredReplicas(input({
      currentReplicas: 2,
      pods: pods(2, { 0: { phase: "Pending" }, 1: { phase: "Pending" } }),
      metrics: [podsMetric(["1", "1"], "1")],
    }));
    assert.equal(r.perMetric[0].replicas, null);
    assert.equal(
      r.perMetric[0].error,
      "did not receive metrics for targeted pods (pods might be unready)",
    );
    assert.equal(r.desiredReplicas, 2);
    assert.equal(r.metricDesiredReplicas, null);
    assert.deepEqual(r.scalingActive.status, false);
    assert.equal(r.scalingActive.reason, "FailedGetPodsMetric");
  });

  it("fails the metric, not the call, on an unparsable value", () => {
    const r = computeDesiredReplicas(input({
      currentReplicas: 1,
      pods: pods(1),
      metrics: [podsMetric(["12x"], "1")],
    }));
    assert.equal(r.perMetric[0].error, 'invalid quantity "12x" for pod p0 of metric queue');
    assert.equal(r.desiredReplicas, 1);
  });

  it("reads 2.007 as 2007m although 2.007 * 1000 is 2007.0000000000002 in float64", () => {
    const r = computeDesiredReplicas(input({
      currentReplicas: 1,
      pods: pods(1),
      metrics: [podsMetric(["2.007"], "1")],
    }));
    assert.equal(r.perMetric[0].current, 2.007);
    assert.equal(r.perMetric[0].ratio, 2.007);
  });

  it("reports the truncated average and the first ratio", () => {
    const r = computeDesiredReplicas(input({
      currentReplicas: 3,
      pods: pods(3),
      metrics: [podsMetric(["100m", "100m", "101m"], "50m")],
    }));
    assert.equal(r.perMetric[0].current, 0.1);
    assert.equal(r.perMetric[0].ratio, 2);
    assert.equal(r.perMetric[0].description, "pods metric queue");
  });
});

describe("Object metrics", () => {
  run([
    {
      name: "Value target: ceil(value / target * ready pods), 300/100 with 2 pods proposes 6",
      input: input({
        currentReplicas: 2,
        pods: pods(2),
        metrics: [objectMetric("300", { type: "Value", value: "100" })],
      }),
      metric: 6,
      desired: 4,
      condition: "ScaleUpLimit",
    },
    {
      name: "Value target counts Running and Ready pods, not spec.replicas",
      input: input({
        currentReplicas: 4,
        pods: pods(4, { 2: { ready: false }, 3: { phase: "Pending" } }),
        metrics: [objectMetric("200", { type: "Value", value: "100" })],
      }),
      metric: 4,
      desired: 4,
    },
    {
      name: "AverageValue target: ceil(value / target), 450 over 100 proposes 5",
      input: input({
        currentReplicas: 3,
        metrics: [objectMetric("450", { type: "AverageValue", averageValue: "100" })],
      }),
      metric: 5,
      desired: 5,
    },
    {
      name: "AverageValue tolerance is checked against status.replicas, which is proposed as is",
      input: input({
        currentReplicas: 4,
        statusReplicas: 3,
        metrics: [objectMetric("310", { type: "AverageValue", averageValue: "100" })],
      }),
      metric: 3,
      desired: 3,
    },
    {
      name: "scales from zero with minReplicas 0: ceil(250 / 100) = 3 without pods",
      input: input({
        currentReplicas: 0,
        minReplicas: 0,
        metrics: [objectMetric("250", { type: "Value", value: "100" })],
      }),
      metric: 3,
      desired: 3,
    },
  ]);

  it("fails a Value target without pods to count", () => {
    const r = computeDesiredReplicas(input({
      currentReplicas: 2,
      metrics: [objectMetric("300", { type: "Value", value: "100" })],
    }));
    assert.equal(r.perMetric[0].replicas, null);
    assert.match(r.perMetric[0].error ?? "", /no pods returned by selector/);
    assert.equal(r.error?.startsWith("invalid metrics (1 invalid out of 1)"), true);
  });
});

describe("External metrics", () => {
  run([
    {
      name: "Value target sums the items: (30 + 20) / 10 * 2 ready pods proposes 10",
      input: input({
        currentReplicas: 2,
        pods: pods(2),
        metrics: [externalMetric(["30", "20"], { type: "Value", value: "10" })],
      }),
      metric: 10,
      desired: 4,
    },
    {
      name: "AverageValue target: ceil(sum / target) = ceil(4000m / 1) = 4",
      input: input({
        currentReplicas: 2,
        metrics: [externalMetric(["1500m", "2500m"], { type: "AverageValue", averageValue: "1" })],
      }),
      metric: 4,
      desired: 4,
    },
  ]);

  // upstream test/integration/autoscaling TestHPAWithTolerance: 5% up, 50% down, 100 per pod
  const tolerant: HpaAlgorithmBehavior = {
    scaleUp: { tolerance: "0.05" },
    scaleDown: { tolerance: "0.5", stabilizationWindowSeconds: 0 },
  };
  run([
    ["3700 at 35 replicas is +6%, beyond 5%: scales to 37", 35, "3700", 37],
    ["3800 at 37 replicas is +3%, within 5%: stays 37", 37, "3800", 37],
    ["1000 at 37 replicas is -74%, beyond 50%: scales to 10", 37, "1000", 10],
    ["800 at 10 replicas is -20%, within 50%: stays 10", 10, "800", 10],
  ].map(([name, current, value, want]) => ({
    name: `per-direction tolerance: ${name}`,
    input: input({
      currentReplicas: current as number,
      behavior: tolerant,
      metrics: [externalMetric([value as string], { type: "AverageValue", averageValue: "100" })],
    }),
    metric: want as number,
    desired: want as number,
  })));
});

describe("tolerance", () => {
  run([
    {
      name: "a 5% scale-up tolerance (50m) lets ratio 1.1 scale: 10 -> 11",
      input: input({
        currentReplicas: 10,
        pods: pods(10),
        behavior: { scaleUp: { tolerance: "50m" } },
        metrics: [podsMetric(Array(10).fill("110"), "100")],
      }),
      metric: 11,
      desired: 11,
    },
    {
      name: "the controller flag sets both directions when behavior has no tolerance",
      input: input({
        currentReplicas: 10,
        pods: pods(10),
        tolerance: 0.2,
        metrics: [podsMetric(Array(10).fill("81"), "100")],
      }),
      metric: 10,
      desired: 10,
    },
    {
      name: "behavior tolerance is ignored when the feature gate is off",
      input: input({
        currentReplicas: 10,
        pods: pods(10),
        configurableTolerance: false,
        behavior: { scaleUp: { tolerance: "0.5" } },
        metrics: [podsMetric(Array(10).fill("120"), "100")],
      }),
      metric: 12,
      desired: 12,
    },
    {
      name: "a large scale-down tolerance keeps replicas at ratio 0.6",
      input: input({
        currentReplicas: 10,
        pods: pods(10),
        behavior: { scaleDown: { tolerance: "0.5" } },
        metrics: [podsMetric(Array(10).fill("60"), "100")],
      }),
      metric: 10,
      desired: 10,
    },
  ]);
});

describe("across metrics (computeReplicasForMetrics)", () => {
  const up = podsMetric(["300m", "300m"], "100m"); // proposes 6 with 2 pods
  const down = podsMetric(["10m", "10m"], "100m"); // proposes 1
  const failed: HpaMetricObservation = {
    type: "External",
    metricName: "gone",
    target: { type: "Value", value: "1" },
    error: "the server could not find the requested resource",
  };
  run([
    {
      name: "takes the largest proposal",
      input: input({
        currentReplicas: 2,
        maxReplicas: 20,
        pods: pods(2),
        metrics: [down, externalMetric(["30"], { type: "Value", value: "10" }), up],
      }),
      metric: 1,
      desired: 4,
    },
    {
      name: "scales up on the valid metrics when another metric failed",
      input: input({ currentReplicas: 2, pods: pods(2), metrics: [failed, up] }),
      metric: null,
      desired: 4,
    },
    {
      name: "does not scale down when a metric failed",
      input: input({ currentReplicas: 2, pods: pods(2), metrics: [down, failed] }),
      metric: 1,
      desired: 2,
      condition: null,
    },
  ]);

  it("reports an error and keeps the replicas when every metric failed", () => {
    const r = computeDesiredReplicas(input({ currentReplicas: 3, metrics: [failed, failed] }));
    assert.equal(r.desiredReplicas, 3);
    assert.equal(r.metricDesiredReplicas, null);
    assert.equal(
      r.error,
      "invalid metrics (2 invalid out of 2), first error is: unable to get metric gone: " +
        "the server could not find the requested resource",
    );
    assert.deepEqual(r.scalingActive, {
      status: false,
      reason: "FailedGetExternalMetric",
      message: "the HPA was unable to compute the replica count: unable to get metric gone: " +
        "the server could not find the requested resource",
    });
    assert.deepEqual(r.recommendations, []);
  });

  it("names the metric that drove a scale-up in the rescale reason", () => {
    const r = computeDesiredReplicas(input({ currentReplicas: 2, pods: pods(2), metrics: [up] }));
    assert.equal(r.rescaleReason, "pods metric queue above target");
    assert.equal(r.scalingActive.reason, "ValidMetricFound");
    assert.equal(r.metricDesiredReplicas, 6);
  });
});

describe("limits without behavior (normalizeDesiredReplicas)", () => {
  const objectValue = (value: string): HpaMetricObservation =>
    objectMetric(value, { type: "AverageValue", averageValue: "1" });
  run([
    {
      name: "raises to minReplicas: TooFewReplicas",
      input: input({ currentReplicas: 4, minReplicas: 3, metrics: [objectValue("1")] }),
      desired: 3,
      condition: "TooFewReplicas",
    },
    {
      name: "caps at maxReplicas when it is below the scale-up limit: TooManyReplicas",
      input: input({ currentReplicas: 10, maxReplicas: 12, metrics: [objectValue("30")] }),
      desired: 12,
      condition: "TooManyReplicas",
    },
    {
      name: "caps at 4 from 1 replica: the legacy limit max(2 * 1, 4)",
      input: input({ currentReplicas: 1, metrics: [objectValue("10")] }),
      desired: 4,
      condition: "ScaleUpLimit",
    },
    {
      name: "caps at 10 from 5 replicas: the legacy limit max(2 * 5, 4)",
      input: input({ currentReplicas: 5, metrics: [objectValue("30")] }),
      desired: 10,
      condition: "ScaleUpLimit",
    },
    {
      name: "within range: DesiredWithinRange",
      input: input({ currentReplicas: 5, metrics: [objectValue("7")] }),
      desired: 7,
      condition: "DesiredWithinRange",
    },
    {
      name: "goes straight to maxReplicas when the target is above it, without metrics",
      input: input({ currentReplicas: 20, maxReplicas: 8, metrics: [objectValue("30")] }),
      desired: 8,
      condition: null,
    },
    {
      name: "goes straight to minReplicas when the target is below it",
      input: input({ currentReplicas: 1, minReplicas: 3, metrics: [objectValue("1")] }),
      desired: 3,
      condition: null,
    },
    {
      name: "does nothing when the target is scaled to zero and minReplicas > 0",
      input: input({ currentReplicas: 0, metrics: [objectValue("30")] }),
      desired: 0,
      condition: null,
    },
  ]);

  it("keeps the highest recommendation of the downscale window and reuses an expired slot", () => {
    const r = computeDesiredReplicas(input({
      currentReplicas: 8,
      metrics: [objectValue("4")],
      recommendations: [{ timestamp: s(60), replicas: 8 }, { timestamp: s(400), replicas: 10 }],
    }));
    assert.equal(r.desiredReplicas, 8);
    assert.equal(r.stabilization, "ScaleDownStabilized");
    assert.deepEqual(r.recommendations, [
      { timestamp: s(60), replicas: 8 },
      { timestamp: T, replicas: 4 },
    ]);
  });

  it("scales down once the higher recommendations are older than the window", () => {
    const r = computeDesiredReplicas(input({
      currentReplicas: 8,
      metrics: [objectValue("4")],
      downscaleStabilizationWindowSeconds: 30,
      recommendations: [{ timestamp: s(60), replicas: 8 }],
    }));
    assert.equal(r.desiredReplicas, 4);
    assert.equal(r.stabilization, "ReadyForNewScale");
  });

  it("holds a scale-down on the first reconcile (the initial recommendation)", () => {
    const r = computeDesiredReplicas(input({
      currentReplicas: 8,
      metrics: [objectValue("4")],
      recommendations: undefined,
    }));
    assert.equal(r.desiredReplicas, 8);
    assert.deepEqual(r.recommendations, [
      { timestamp: T, replicas: 8 },
      { timestamp: T, replicas: 4 },
    ]);
  });

  it("stores no scale events without behavior", () => {
    const r = computeDesiredReplicas(input({ currentReplicas: 2, metrics: [objectValue("3")] }));
    assert.equal(r.desiredReplicas, 3);
    assert.deepEqual(r.scaleUpEvents, []);
  });
});

describe("behavior (normalizeDesiredReplicasWithBehaviors)", () => {
  const want = (n: number): HpaMetricObservation =>
    objectMetric(String(n), { type: "AverageValue", averageValue: "1" });
  const docsScaleDown: HpaAlgorithmBehavior = {
    scaleDown: {
      stabilizationWindowSeconds: 0,
      policies: [
        { type: "Pods", value: 4, periodSeconds: 60 },
        { type: "Percent", value: 10, periodSeconds: 60 },
      ],
    },
  };
  run([
    {
      name: "scale-down window keeps the highest recent recommendation (default 300 s)",
      input: input({
        currentReplicas: 10,
        behavior: {},
        metrics: [want(5)],
        recommendations: [{ timestamp: s(100), replicas: 9 }, { timestamp: s(200), replicas: 7 }],
      }),
      desired: 9,
      condition: "DesiredWithinRange",
    },
    {
      name: "scale-down window ignores recommendations older than it",
      input: input({
        currentReplicas: 10,
        behavior: { scaleDown: { stabilizationWindowSeconds: 60 } },
        metrics: [want(5)],
        recommendations: [{ timestamp: s(100), replicas: 9 }],
      }),
      desired: 5,
    },
    {
      name: "scale-up window keeps the lowest recent recommendation",
      input: input({
        currentReplicas: 4,
        behavior: { scaleUp: { stabilizationWindowSeconds: 60 } },
        metrics: [want(8)],
        recommendations: [{ timestamp: s(30), replicas: 5 }],
      }),
      desired: 5,
    },
    {
      name: "default scale-up picks the larger of +4 pods and +100%: 10 -> 20",
      input: input({ currentReplicas: 10, behavior: {}, metrics: [want(50)] }),
      desired: 20,
      condition: "ScaleUpLimit",
    },
    {
      name: "selectPolicy Min picks the smaller: 10 -> 14",
      input: input({
        currentReplicas: 10,
        behavior: { scaleUp: { selectPolicy: "Min" } },
        metrics: [want(50)],
      }),
      desired: 14,
      condition: "ScaleUpLimit",
    },
    {
      name: "selectPolicy Disabled keeps the replicas",
      input: input({
        currentReplicas: 10,
        behavior: { scaleUp: { selectPolicy: "Disabled" } },
        metrics: [want(50)],
      }),
      desired: 10,
      condition: "ScaleUpLimit",
    },
    {
      name: "maxReplicas below the policy limit: TooManyReplicas",
      input: input({ currentReplicas: 10, maxReplicas: 15, behavior: {}, metrics: [want(50)] }),
      desired: 15,
      condition: "TooManyReplicas",
    },
    {
      name: "scale-ups within the period count: +4 ten seconds ago from 4 allows no more",
      input: input({
        currentReplicas: 8,
        behavior: {},
        metrics: [want(20)],
        scaleUpEvents: [{ timestamp: s(10), replicaChange: 4 }],
      }),
      desired: 8,
      condition: "ScaleUpLimit",
    },
    {
      name: "scale-ups older than the period do not count: 8 -> 16",
      input: input({
        currentReplicas: 8,
        behavior: {},
        metrics: [want(20)],
        scaleUpEvents: [{ timestamp: s(16), replicaChange: 4 }],
      }),
      desired: 16,
    },
    {
      name: "docs example: 80 -> 72 (10% beats 4 pods)",
      input: input({ currentReplicas: 80, behavior: docsScaleDown, metrics: [want(10)] }),
      desired: 72,
      condition: "ScaleDownLimit",
    },
    {
      name: "docs example: 72 -> 64 (7.2 pods rounds up to 8 removed)",
      input: input({
        currentReplicas: 72,
        behavior: docsScaleDown,
        metrics: [want(10)],
        scaleDownEvents: [{ timestamp: s(61), replicaChange: 8 }],
      }),
      desired: 64,
    },
    {
      name: "docs example: 30 -> 26 (below 40 replicas the 4 pods policy wins)",
      input: input({ currentReplicas: 30, behavior: docsScaleDown, metrics: [want(10)] }),
      desired: 26,
    },
    {
      name: "docs example: no further step while the last one is inside the period",
      input: input({
        currentReplicas: 72,
        behavior: docsScaleDown,
        metrics: [want(10)],
        scaleDownEvents: [{ timestamp: s(30), replicaChange: 8 }],
      }),
      desired: 72,
      condition: "ScaleDownLimit",
    },
    {
      name: "scale-down selectPolicy Min removes the fewest: 80 -> 76",
      input: input({
        currentReplicas: 80,
        behavior: { scaleDown: { ...docsScaleDown.scaleDown, selectPolicy: "Min" } },
        metrics: [want(10)],
      }),
      desired: 76,
    },
    {
      name: "a recent scale-up lowers the scale-down period start: 10 - 3 added - 2 = 5",
      input: input({
        currentReplicas: 10,
        behavior: {
          scaleDown: {
            stabilizationWindowSeconds: 0,
            policies: [{ type: "Pods", value: 2, periodSeconds: 60 }],
          },
        },
        metrics: [want(1)],
        scaleUpEvents: [{ timestamp: s(30), replicaChange: 3 }],
      }),
      desired: 5,
      condition: "ScaleDownLimit",
    },
    {
      name: "minReplicas above the policy limit: TooFewReplicas",
      input: input({
        currentReplicas: 10,
        minReplicas: 3,
        behavior: { scaleDown: { stabilizationWindowSeconds: 0 } },
        metrics: [want(1)],
      }),
      desired: 3,
      condition: "TooFewReplicas",
    },
    {
      name: "scale-down Disabled keeps the replicas",
      input: input({
        currentReplicas: 10,
        behavior: { scaleDown: { stabilizationWindowSeconds: 0, selectPolicy: "Disabled" } },
        metrics: [want(1)],
      }),
      desired: 10,
      condition: "ScaleDownLimit",
    },
  ]);

  it("records the scale event in the last expired slot", () => {
    const r = computeDesiredReplicas(input({
      currentReplicas: 10,
      behavior: {},
      metrics: [want(50)],
      scaleUpEvents: [
        { timestamp: s(100), replicaChange: 2 },
        { timestamp: s(50), replicaChange: 1 },
        { timestamp: s(5), replicaChange: 0 },
      ],
    }));
    // +0 five seconds ago keeps the period start at 10: 10 -> 20
    assert.equal(r.desiredReplicas, 20);
    assert.deepEqual(r.scaleUpEvents, [
      { timestamp: s(100), replicaChange: 2, outdated: true },
      { timestamp: T, replicaChange: 10, outdated: false },
      { timestamp: s(5), replicaChange: 0 },
    ]);
    assert.deepEqual(r.scaleDownEvents, []);
  });

  it("appends a scale-down event and records the unstabilized recommendation", () => {
    const r = computeDesiredReplicas(input({
      currentReplicas: 10,
      behavior: { scaleDown: { stabilizationWindowSeconds: 0 } },
      metrics: [want(4)],
      recommendations: [{ timestamp: s(400), replicas: 10 }],
    }));
    assert.equal(r.desiredReplicas, 4);
    assert.deepEqual(r.scaleDownEvents, [{ timestamp: T, replicaChange: 6, outdated: false }]);
    assert.deepEqual(r.recommendations, [{ timestamp: T, replicas: 4 }]);
  });

  it("reports stabilization and limits separately", () => {
    const r = computeDesiredReplicas(input({
      currentReplicas: 10,
      behavior: {},
      metrics: [want(5)],
      recommendations: [{ timestamp: s(100), replicas: 9 }],
    }));
    assert.equal(r.metricDesiredReplicas, 5);
    assert.equal(r.stabilizedReplicas, 9);
    assert.equal(r.stabilization, "ScaleDownStabilized");
    assert.equal(r.scalingLimited, false);
    assert.equal(r.reason, "the desired count is within the acceptable range");
    assert.equal(r.rescaleReason, "All metrics below target");
  });

  it("does not mutate its input", () => {
    const events = [{ timestamp: s(100), replicaChange: 2 }];
    const recs = [{ timestamp: s(400), replicas: 10 }];
    computeDesiredReplicas(input({
      currentReplicas: 10,
      behavior: {},
      metrics: [want(50)],
      scaleUpEvents: events,
      recommendations: recs,
    }));
    assert.deepEqual(events, [{ timestamp: s(100), replicaChange: 2 }]);
    assert.deepEqual(recs, [{ timestamp: s(400), replicas: 10 }]);
  });
});
