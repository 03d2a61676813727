import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  type Fallback,
  fallbackActive,
  type FallbackBehavior,
  fallbackReplicaCount,
  fallbackValue,
  type FallbackValueOptions,
  parseFallback,
} from "../../src/core/fallback.ts";
import {
  computeDesiredReplicas,
  type HpaMetricObservation,
  type HpaPod,
} from "../../src/core/kubernetes/hpa_algorithm.ts";
import { formatQuantity, parseQuantity } from "../../src/core/kubernetes/quantity.ts";
import { planHpa } from "../../src/core/kube_metrics_adapter/plan.ts";

const T = 1_700_000_000_000;

function fb(behavior: FallbackBehavior, replicas: number, failureThreshold = 3): Fallback {
  return { failureThreshold, replicas, behavior };
}

/** n running, ready pods p0..p(n-1). */
function readyPods(n: number): HpaPod[] {
  return Array.from({ length: n }, (_, i) => ({ name: `p${i}` }));
}

/** The HPA's default tolerance band, as it checks it (1.1 is inside). */
function withinTolerance(ratio: number): boolean {
  return 1.0 - 0.1 <= ratio && ratio <= 1.0 + 0.1;
}

/**
 * The replica count the HPA controller proposes for one metric (before min/max and rate
 * limits), from what we serve; fails on a metric error.
 */
function hpaProposal(metric: HpaMetricObservation, current: number, pods: HpaPod[]): number {
  const r = computeDesiredReplicas({
    now: T,
    currentReplicas: current,
    maxReplicas: 10_000,
    metrics: [metric],
    pods,
    recommendations: [],
  });
  assert.equal(r.error, undefined, r.error);
  assert.equal(r.perMetric.length, 1);
  assert.notEqual(r.perMetric[0].replicas, null, r.perMetric[0].error);
  return r.perMetric[0].replicas!;
}

/** Serve the fallback value of an External/Object metric and let the HPA compute from it. */
function serveAndCompute(
  o: Omit<FallbackValueOptions, "target"> & { target: string },
  current: number,
  pods: HpaPod[],
): number {
  const value = formatQuantity(fallbackValue({ ...o, target: parseQuantity(o.target) }));
  const target = o.targetType === "Value"
    ? { type: "Value" as const, value: o.target }
    : { type: "AverageValue" as const, averageValue: o.target };
  if (o.metricType === "External") {
    return hpaProposal(
      { type: "External", metricName: "queue", target, values: [value] },
      current,
      pods,
    );
  }
  if (o.metricType === "Object") {
    return hpaProposal(
      { type: "Object", metricName: "rps", describedObjectKind: "Ingress", target, value },
      current,
      pods,
    );
  }
  const values: Record<string, string> = {};
  for (const p of pods) {
    if ((p.phase ?? "Running") === "Running" && p.ready !== false) {
      values[p.name] = value;
    }
  }
  return hpaProposal(
    {
      type: "Pods",
      metricName: "queue",
      target: { type: "AverageValue", averageValue: o.target },
      values,
    },
    current,
    pods,
  );
}

describe("fallbackReplicaCount and fallbackValue: KEDA's examples (AverageValue target 10)", () => {
  const cases: Array<[string, Fallback, number, number, number]> = [
    // name, fallback, current replicas C, want R, want served value
    ["static, replicas 10", fb("static", 10), 6, 10, 100],
    ["currentReplicas, C 6", fb("currentReplicas", 10), 6, 6, 60],
    ["currentReplicasIfHigher, replicas 10, C 6", fb("currentReplicasIfHigher", 10), 6, 10, 100],
    ["currentReplicasIfHigher, replicas 10, C 15", fb("currentReplicasIfHigher", 10), 15, 15, 150],
    ["currentReplicasIfHigher, replicas 10, C 10", fb("currentReplicasIfHigher", 10), 10, 10, 100],
    ["static, C 15", fb("static", 10), 15, 10, 100],
    ["currentReplicasIfLower, replicas 10, C 6", fb("currentReplicasIfLower", 10), 6, 6, 60],
    ["currentReplicasIfLower, replicas 10, C 15", fb("currentReplicasIfLower", 10), 15, 10, 100],
    ["currentReplicasIfLower, replicas 10, C 10", fb("currentReplicasIfLower", 10), 10, 10, 100],
    ["currentReplicas, C 0", fb("currentReplicas", 10), 0, 0, 0],
    ["static, replicas 0", fb("static", 0), 6, 0, 0],
  ];
  for (const [name, fallback, current, wantR, wantValue] of cases) {
    it(`${name}: R ${wantR}, serves ${wantValue}`, () => {
      const r = fallbackReplicaCount(fallback, current);
      assert.equal(r, wantR);
      for (const metricType of ["External", "Object"] as const) {
        assert.equal(
          fallbackValue({ metricType, targetType: "AverageValue", target: 10, replicas: r }),
          wantValue,
          metricType,
        );
      }
    });
  }

  it("scalingModifiers falls back to fallback-replicas whatever C is", () => {
    assert.equal(fallbackReplicaCount(fb("scalingModifiers", 7), 3), 7);
    assert.equal(fallbackReplicaCount(fb("scalingModifiers", 7), 30), 7);
  });

  it("static ignores C; a behaviour that reads C rejects one that is not an integer >= 0", () => {
    assert.equal(fallbackReplicaCount(fb("static", 4), NaN), 4);
    for (
      const behavior of [
        "currentReplicas",
        "currentReplicasIfHigher",
        "currentReplicasIfLower",
      ] as const
    ) {
      for (const c of [-1, 2.5, NaN]) {
        assert.throws(() => fallbackReplicaCount(fb(behavior, 4), c), {
          message:
            `invalid current replicas ${c} for fallback behavior ${behavior}: want an integer >= 0`,
        });
      }
    }
  });
});

describe("fallbackActive", () => {
  it("is active only when the consecutive failures are strictly more than the threshold", () => {
    const cases: Array<[number, number, boolean]> = [
      [3, 0, false],
      [3, 3, false],
      [3, 4, true],
      [3, 10, true],
      [0, 0, false],
      [0, 1, true],
    ];
    for (const [threshold, failures, want] of cases) {
      assert.equal(
        fallbackActive(fb("static", 5, threshold), failures),
        want,
        `${threshold} ${failures}`,
      );
    }
  });
});

describe("fallbackValue", () => {
  it("Value targets divide R x target over the ready pods (External and Object)", () => {
    const cases: Array<[number, number, number, number]> = [
      // target, R, ready pods, want
      [10, 10, 4, 25],
      [10, 10, 3, 33.333],
      [10, 10, 10, 10],
      [10, 1, 3, 3.333],
      [2, 7, 4, 3.5],
      [0.5, 9, 2, 2.25],
      [10, 0, 3, 0],
    ];
    for (const [target, replicas, ready, want] of cases) {
      for (const metricType of ["External", "Object"] as const) {
        assert.equal(
          fallbackValue({ metricType, targetType: "Value", target, replicas, readyPods: ready }),
          want,
          `${metricType} ${target} ${replicas} ${ready}`,
        );
      }
    }
  });

  it("Pods AverageValue gives every ready pod R x target / ready pods", () => {
    const cases: Array<[number, number, number, number]> = [
      [10, 6, 4, 15],
      [10, 7, 3, 23.333],
      [10, 4, 4, 10],
      [0.1, 5, 2, 0.25],
      [10, 0, 4, 0],
    ];
    for (const [target, replicas, ready, want] of cases) {
      assert.equal(
        fallbackValue({
          metricType: "Pods",
          targetType: "AverageValue",
          target,
          replicas,
          readyPods: ready,
        }),
        want,
        `${target} ${replicas} ${ready}`,
      );
    }
  });

  it("truncates toward zero at milli precision, as KEDA serves it", () => {
    const cases: Array<[FallbackValueOptions, string]> = [
      [{ metricType: "External", targetType: "AverageValue", target: 0.1, replicas: 3 }, "300m"],
      [
        { metricType: "External", targetType: "Value", target: 1.5, replicas: 1, readyPods: 7 },
        "214m",
      ],
      [
        { metricType: "External", targetType: "Value", target: 10, replicas: 2, readyPods: 3 },
        "6666m",
      ],
      [
        { metricType: "Pods", targetType: "AverageValue", target: 1, replicas: 2, readyPods: 3 },
        "666m",
      ],
      [{ metricType: "External", targetType: "AverageValue", target: 0.0004, replicas: 2 }, "0"],
    ];
    for (const [options, want] of cases) {
      assert.equal(formatQuantity(fallbackValue(options)), want, JSON.stringify(options));
    }
  });

  it("ignores the ready pods of External and Object AverageValue targets (0 ready pods is fine there)", () => {
    assert.equal(
      fallbackValue({
        metricType: "External",
        targetType: "AverageValue",
        target: 10,
        replicas: 5,
        readyPods: 0,
      }),
      50,
    );
    assert.equal(
      fallbackValue({ metricType: "Object", targetType: "AverageValue", target: 10, replicas: 5 }),
      50,
    );
  });

  it("makes no ready pods an error for Value targets and Pods metrics, not a guess", () => {
    assert.throws(
      () =>
        fallbackValue({
          metricType: "External",
          targetType: "Value",
          target: 10,
          replicas: 5,
          readyPods: 0,
        }),
      {
        message:
          "cannot compute the fallback value of a Value target for 5 replicas: no ready pods",
      },
    );
    assert.throws(
      () => fallbackValue({ metricType: "Object", targetType: "Value", target: 10, replicas: 5 }),
      {
        message: "cannot compute the fallback value of a Value target: the ready pods are unknown",
      },
    );
    assert.throws(
      () =>
        fallbackValue({
          metricType: "Pods",
          targetType: "AverageValue",
          target: 10,
          replicas: 5,
          readyPods: 0,
        }),
      {
        message: "cannot compute the fallback value of a Pods metric for 5 replicas: no ready pods",
      },
    );
    assert.throws(
      () =>
        fallbackValue({ metricType: "Pods", targetType: "AverageValue", target: 10, replicas: 5 }),
      { message: "cannot compute the fallback value of a Pods metric: the ready pods are unknown" },
    );
  });

  it("rejects a bad target, R, ready pods count, and a Pods metric with a Value target", () => {
    const base = {
      metricType: "External",
      targetType: "AverageValue",
      target: 10,
      replicas: 5,
    } as const;
    const cases: Array<[FallbackValueOptions, string]> = [
      [{ ...base, target: 0 }, "invalid fallback target 0: want a number > 0"],
      [{ ...base, target: -1 }, "invalid fallback target -1: want a number > 0"],
      [{ ...base, target: NaN }, "invalid fallback target NaN: want a number > 0"],
      [{ ...base, target: Infinity }, "invalid fallback target Infinity: want a number > 0"],
      [{ ...base, replicas: -1 }, "invalid fallback replicas -1: want an integer >= 0"],
      [{ ...base, replicas: 1.5 }, "invalid fallback replicas 1.5: want an integer >= 0"],
      [
        { ...base, targetType: "Value", readyPods: -1 },
        "invalid ready pods -1: want an integer >= 0",
      ],
      [
        { ...base, targetType: "Value", readyPods: 2.5 },
        "invalid ready pods 2.5: want an integer >= 0",
      ],
      [
        { ...base, metricType: "Pods", targetType: "Value", readyPods: 3 },
        "invalid target type Value for a Pods metric: want AverageValue",
      ],
    ];
    for (const [options, message] of cases) {
      assert.throws(() => fallbackValue(options), { message }, JSON.stringify(options));
    }
  });
});

describe("fallbackValue makes the HPA controller's algorithm compute R", () => {
  it("External and Object AverageValue: the proposal is R for every R and target", () => {
    for (const target of ["10", "0.5", "3", "250m", "7"]) {
      for (let r = 0; r <= 40; r++) {
        for (const current of [1, 5, 13]) {
          // within the tolerance band the HPA keeps the current size (tested below)
          if (withinTolerance(r / current)) continue;
          for (const metricType of ["External", "Object"] as const) {
            assert.equal(
              serveAndCompute(
                { metricType, targetType: "AverageValue", target, replicas: r },
                current,
                readyPods(current),
              ),
              r,
              `${metricType} target ${target} R ${r} current ${current}`,
            );
          }
        }
      }
    }
  });

  it("External and Object Value: the proposal is R for every R, target and ready pod count", () => {
    for (const target of ["10", "0.5", "3", "250m"]) {
      for (let r = 0; r <= 40; r++) {
        for (let ready = 1; ready <= 12; ready++) {
          if (withinTolerance(r / ready)) continue;
          for (const metricType of ["External", "Object"] as const) {
            assert.equal(
              serveAndCompute(
                { metricType, targetType: "Value", target, replicas: r, readyPods: ready },
                ready,
                readyPods(ready),
              ),
              r,
              `${metricType} target ${target} R ${r} ready ${ready}`,
            );
          }
        }
      }
    }
  });

  it("Value with pods that are not ready: divides by the ready ones, as the HPA multiplies by them", () => {
    // 6 replicas, 2 of them not ready: the HPA computes ceil(value / target x 4)
    const pods: HpaPod[] = [...readyPods(4), { name: "x", ready: false }, {
      name: "y",
      phase: "Pending",
    }];
    for (const r of [1, 2, 3, 9, 10, 17]) {
      assert.equal(
        serveAndCompute(
          { metricType: "External", targetType: "Value", target: "10", replicas: r, readyPods: 4 },
          6,
          pods,
        ),
        r,
        `R ${r}`,
      );
    }
  });

  it("Pods AverageValue (every ready pod gets the value): the proposal is R", () => {
    for (const target of ["10", "0.5", "3", "250m"]) {
      for (let r = 0; r <= 40; r++) {
        for (let ready = 1; ready <= 12; ready++) {
          if (withinTolerance(r / ready)) continue;
          assert.equal(
            serveAndCompute(
              {
                metricType: "Pods",
                targetType: "AverageValue",
                target,
                replicas: r,
                readyPods: ready,
              },
              ready,
              readyPods(ready),
            ),
            r,
            `Pods target ${target} R ${r} ready ${ready}`,
          );
        }
      }
    }
  });

  it("KEDA's example end to end: static 10 replicas from 6 scales to 10, currentReplicas holds 6", () => {
    const r = computeDesiredReplicas({
      now: T,
      currentReplicas: 6,
      maxReplicas: 20,
      pods: readyPods(6),
      recommendations: [],
      metrics: [{
        type: "External",
        metricName: "queue",
        target: { type: "AverageValue", averageValue: "10" },
        values: [formatQuantity(fallbackValue({
          metricType: "External",
          targetType: "AverageValue",
          target: 10,
          replicas: fallbackReplicaCount(fb("static", 10), 6),
        }))],
      }],
    });
    assert.equal(r.desiredReplicas, 10);
    const held = serveAndCompute(
      {
        metricType: "External",
        targetType: "AverageValue",
        target: "10",
        replicas: fallbackReplicaCount(fb("currentReplicas", 10), 6),
      },
      6,
      readyPods(6),
    );
    assert.equal(held, 6);
  });

  it("tolerance: a fallback within 10% of the current size keeps the current size (R 9 or 11 with 10 replicas stays at 10; R 8 and 12 move)", () => {
    const cases: Array<[number, number]> = [[9, 10], [11, 10], [8, 8], [12, 12]];
    for (const [r, want] of cases) {
      for (const metricType of ["External", "Object"] as const) {
        assert.equal(
          serveAndCompute(
            { metricType, targetType: "AverageValue", target: "10", replicas: r },
            10,
            readyPods(10),
          ),
          want,
          `${metricType} AverageValue R ${r}`,
        );
        assert.equal(
          serveAndCompute(
            { metricType, targetType: "Value", target: "10", replicas: r, readyPods: 10 },
            10,
            readyPods(10),
          ),
          want,
          `${metricType} Value R ${r}`,
        );
      }
      assert.equal(
        serveAndCompute(
          {
            metricType: "Pods",
            targetType: "AverageValue",
            target: "10",
            replicas: r,
            readyPods: 10,
          },
          10,
          readyPods(10),
        ),
        want,
        `Pods R ${r}`,
      );
    }
  });

  it("Pods: a running pod without a value is missing to the HPA; a scale-up still reaches R, a scale-down stops above it", () => {
    // 4 running pods, only 3 ready and served: the HPA counts the 4th at 0 going up, at the target going down
    const pods: HpaPod[] = [...readyPods(3), { name: "x", ready: false }];
    const up = serveAndCompute(
      { metricType: "Pods", targetType: "AverageValue", target: "10", replicas: 6, readyPods: 3 },
      4,
      pods,
    );
    assert.equal(up, 6);
    const down = serveAndCompute(
      { metricType: "Pods", targetType: "AverageValue", target: "10", replicas: 2, readyPods: 3 },
      4,
      pods,
    );
    assert.equal(down, 3);
  });
});

describe("parseFallback", () => {
  const ok = (keys: Record<string, string>, formula = false): Fallback | undefined => {
    const parsed = parseFallback(keys, { formula });
    assert.deepEqual(parsed.errors, []);
    return parsed.fallback;
  };
  const errors = (keys: Record<string, string | undefined>, formula = false): string[] => {
    const parsed = parseFallback(keys, { formula });
    assert.equal(parsed.fallback, undefined);
    return parsed.errors;
  };

  it("gives no fallback and no error when no key is set", () => {
    assert.deepEqual(parseFallback({}, { formula: false }), { errors: [] });
    assert.deepEqual(
      parseFallback({ query: "up", "fallback-replicas": undefined }, { formula: true }),
      { errors: [] },
    );
  });

  it("reads threshold and replicas, with static as the default behaviour", () => {
    assert.deepEqual(ok({ "fallback-failure-threshold": "3", "fallback-replicas": "10" }), {
      failureThreshold: 3,
      replicas: 10,
      behavior: "static",
    });
    assert.deepEqual(ok({ "fallback-failure-threshold": "0", "fallback-replicas": "0" }), {
      failureThreshold: 0,
      replicas: 0,
      behavior: "static",
    });
    assert.deepEqual(
      ok({ "fallback-failure-threshold": "2147483647", "fallback-replicas": "007" }),
      {
        failureThreshold: 2147483647,
        replicas: 7,
        behavior: "static",
      },
    );
  });

  it("reads every behaviour; scalingModifiers only on a formula", () => {
    for (
      const behavior of [
        "static",
        "currentReplicas",
        "currentReplicasIfHigher",
        "currentReplicasIfLower",
      ] as const
    ) {
      const keys = {
        "fallback-failure-threshold": "1",
        "fallback-replicas": "2",
        "fallback-behavior": behavior,
      };
      assert.deepEqual(ok(keys), { failureThreshold: 1, replicas: 2, behavior });
      assert.deepEqual(ok(keys, true), { failureThreshold: 1, replicas: 2, behavior });
    }
    const keys = {
      "fallback-failure-threshold": "1",
      "fallback-replicas": "2",
      "fallback-behavior": "scalingModifiers",
    };
    assert.deepEqual(ok(keys, true), {
      failureThreshold: 1,
      replicas: 2,
      behavior: "scalingModifiers",
    });
    assert.deepEqual(errors(keys), [
      'invalid fallback-behavior "scalingModifiers": scalingModifiers is only valid on a formula metric',
    ]);
  });

  it("rejects a threshold or replica count that is not an integer >= 0, naming key and value", () => {
    for (const key of ["fallback-failure-threshold", "fallback-replicas"]) {
      const other = key === "fallback-replicas"
        ? "fallback-failure-threshold"
        : "fallback-replicas";
      for (const value of ["-1", "abc", "1.5", "", " 3", "+3", "1e3", "0x10"]) {
        assert.deepEqual(
          errors({ [key]: value, [other]: "3" }),
          [`invalid ${key} "${value}": want an integer >= 0`],
          `${key} ${value}`,
        );
      }
      assert.deepEqual(errors({ [key]: "2147483648", [other]: "3" }), [
        `invalid ${key} "2147483648": want at most 2147483647`,
      ]);
    }
  });

  it("rejects an unknown behaviour, listing the valid ones (with scalingModifiers on a formula)", () => {
    const keys = {
      "fallback-failure-threshold": "1",
      "fallback-replicas": "2",
      "fallback-behavior": "Static",
    };
    assert.deepEqual(errors(keys), [
      'invalid fallback-behavior "Static": want static, currentReplicas, currentReplicasIfHigher or currentReplicasIfLower',
    ]);
    assert.deepEqual(errors(keys, true), [
      'invalid fallback-behavior "Static": want static, currentReplicas, currentReplicasIfHigher, currentReplicasIfLower or scalingModifiers',
    ]);
    assert.deepEqual(errors({ ...keys, "fallback-behavior": "" }), [
      'invalid fallback-behavior "": want static, currentReplicas, currentReplicasIfHigher or currentReplicasIfLower',
    ]);
  });

  it("requires both threshold and replicas once any key is set", () => {
    assert.deepEqual(errors({ "fallback-failure-threshold": "3" }), [
      'missing fallback-replicas: fallback-failure-threshold "3" is set and a fallback needs both fallback-failure-threshold and fallback-replicas',
    ]);
    assert.deepEqual(errors({ "fallback-replicas": "10" }), [
      'missing fallback-failure-threshold: fallback-replicas "10" is set and a fallback needs both fallback-failure-threshold and fallback-replicas',
    ]);
    assert.deepEqual(errors({ "fallback-behavior": "currentReplicas" }), [
      'missing fallback-failure-threshold and fallback-replicas: fallback-behavior "currentReplicas" is set and a fallback needs both fallback-failure-threshold and fallback-replicas',
    ]);
    assert.deepEqual(errors({ "fallback-replicas": "10", "fallback-behavior": "static" }), [
      'missing fallback-failure-threshold: fallback-replicas "10" and fallback-behavior "static" are set and a fallback needs both fallback-failure-threshold and fallback-replicas',
    ]);
  });

  it("reports every problem at once", () => {
    assert.deepEqual(errors({ "fallback-replicas": "x", "fallback-behavior": "never" }), [
      'invalid fallback-replicas "x": want an integer >= 0',
      'invalid fallback-behavior "never": want static, currentReplicas, currentReplicasIfHigher or currentReplicasIfLower',
      'missing fallback-failure-threshold: fallback-replicas "x" and fallback-behavior "never" are set and a fallback needs both fallback-failure-threshold and fallback-replicas',
    ]);
  });

  it("names the metric and the annotations when told where the keys come from", () => {
    const where = {
      metric: "External metric queue",
      annotation: (k: string) => `metric-config.external.queue.prometheus/${k}`,
    };
    assert.deepEqual(
      parseFallback({ "fallback-failure-threshold": "-3" }, { formula: false, where }),
      {
        errors: [
          'invalid fallback-failure-threshold "-3" for External metric queue (annotation metric-config.external.queue.prometheus/fallback-failure-threshold): want an integer >= 0',
          'missing fallback-replicas for External metric queue: fallback-failure-threshold "-3" is set and a fallback needs both fallback-failure-threshold and fallback-replicas (add metric-config.external.queue.prometheus/fallback-replicas)',
        ],
      },
    );
  });
});

describe("planHpa and fallback", () => {
  function hpa(annotations: Record<string, string>): unknown {
    return {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "web", namespace: "shop", annotations },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
        minReplicas: 1,
        maxReplicas: 10,
        metrics: [{
          type: "External",
          external: {
            metric: { name: "queue", selector: { matchLabels: { type: "prometheus" } } },
            target: { type: "AverageValue", averageValue: "10" },
          },
        }],
      },
    };
  }
  const query = { "metric-config.external.queue.prometheus/query": "sum(queue_depth)" };

  it("copies the fallback into the plan and keeps its keys out of the config", () => {
    const [plan] = planHpa(hpa({
      ...query,
      "metric-config.external.queue.prometheus/fallback-failure-threshold": "3",
      "metric-config.external.queue.prometheus/fallback-replicas": "10",
      "metric-config.external.queue.prometheus/fallback-behavior": "currentReplicasIfHigher",
    }));
    assert.equal(plan.error, null);
    assert.deepEqual(plan.fallback, {
      failureThreshold: 3,
      replicas: 10,
      behavior: "currentReplicasIfHigher",
    });
    assert.deepEqual(plan.config, { query: "sum(queue_depth)", type: "prometheus" });
  });

  it("has no fallback field without fallback keys, and a plan error for bad ones", () => {
    const [plain] = planHpa(hpa(query));
    assert.equal("fallback" in plain, false);
    const [bad] = planHpa(hpa({
      ...query,
      "metric-config.external.queue.prometheus/fallback-replicas": "ten",
      "metric-config.external.queue.prometheus/fallback-failure-threshold": "3",
    }));
    assert.equal("fallback" in bad, false);
    assert.equal(
      bad.error,
      'invalid fallback-replicas "ten" for External metric queue (annotation metric-config.external.queue.prometheus/fallback-replicas): want an integer >= 0',
    );
  });
});
