import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  compareMetricRank,
  hpaCreatedAt,
  namespaceLimitMessage,
  overNamespaceLimit,
} from "../../src/core/namespace_limit.ts";
import type { MetricPlan } from "../../src/core/types.ts";

function plan(namespace: string, hpa: string, index: number, metricName = "rps"): MetricPlan {
  return {
    hpa: { namespace, name: hpa },
    index,
    metricType: "External",
    metricName,
    metricSelector: null,
    target: { type: "Value", value: "1" },
    describedObject: null,
    scaleTargetRef: { kind: "Deployment", name: hpa },
    collector: "json-path",
    intervalSeconds: 60,
    perReplica: false,
    minPodReadyAgeSeconds: 0,
    config: {},
    error: null,
  };
}

describe("hpaCreatedAt", () => {
  it("reads metadata.creationTimestamp, 0 without a valid one", () => {
    assert.equal(
      hpaCreatedAt({ metadata: { creationTimestamp: "2024-01-02T03:04:05Z" } }),
      Date.UTC(2024, 0, 2, 3, 4, 5),
    );
    assert.equal(hpaCreatedAt({ metadata: {} }), 0);
    assert.equal(hpaCreatedAt({ metadata: { creationTimestamp: "yesterday" } }), 0);
    assert.equal(hpaCreatedAt({ metadata: { creationTimestamp: 5 } }), 0);
    assert.equal(hpaCreatedAt(null), 0);
  });
});

describe("compareMetricRank", () => {
  it("orders by creation time, then HPA name, then metric index", () => {
    const ranks = [
      { createdAt: 2, hpa: "a", index: 0 },
      { createdAt: 1, hpa: "z", index: 1 },
      { createdAt: 1, hpa: "z", index: 0 },
      { createdAt: 1, hpa: "b", index: 3 },
    ];
    assert.deepEqual([...ranks].sort(compareMetricRank), [
      { createdAt: 1, hpa: "b", index: 3 },
      { createdAt: 1, hpa: "z", index: 0 },
      { createdAt: 1, hpa: "z", index: 1 },
      { createdAt: 2, hpa: "a", index: 0 },
    ]);
    assert.equal(compareMetricRank(ranks[0], { ...ranks[0] }), 0);
  });
});

describe("overNamespaceLimit", () => {
  it("refuses the plans past the limit in each namespace, the newest HPA's first, with the message", () => {
    const old = { plan: plan("a", "web-old", 0), createdAt: 1000 };
    const newer0 = { plan: plan("a", "api", 0), createdAt: 2000 };
    const newer1 = { plan: plan("a", "api", 1, "queue"), createdAt: 2000 };
    const other = { plan: plan("b", "zz", 0), createdAt: 3000 };
    const refused = overNamespaceLimit([newer1, other, newer0, old], 2);
    assert.deepEqual([...refused], [
      [
        newer1,
        "namespace a has more metrics than --max-metrics-per-namespace 2: External metric `queue` of HPA a/api is not collected (the oldest HPAs' metrics are collected first)",
      ],
    ]);
  });

  it("refuses nothing at 0 (no limit) or within the limit", () => {
    const plans = [0, 1, 2].map((i) => ({ plan: plan("a", "web", i), createdAt: 0 }));
    assert.equal(overNamespaceLimit(plans, 0).size, 0);
    assert.equal(overNamespaceLimit(plans, 3).size, 0);
    assert.deepEqual([...overNamespaceLimit(plans, 1).keys()], [plans[1], plans[2]]);
  });

  it("orders HPAs with the same creation time (manifests without one) by name", () => {
    const b = { plan: plan("a", "b", 0), createdAt: 0 };
    const a = { plan: plan("a", "a", 0), createdAt: 0 };
    assert.deepEqual([...overNamespaceLimit([b, a], 1).keys()], [b]);
  });
});

describe("namespaceLimitMessage", () => {
  it("names the namespace, the limit, the metric and the HPA", () => {
    assert.equal(
      namespaceLimitMessage(plan("a", "web-731", 0), 500),
      "namespace a has more metrics than --max-metrics-per-namespace 500: External metric `rps` of HPA a/web-731 is not collected (the oldest HPAs' metrics are collected first)",
    );
  });
});
