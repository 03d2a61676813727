import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  buildStatus,
  filterStatus,
  redactConfig,
  REPLICA_NOTE,
  STATUS_VERSION,
} from "../../src/api/status_model.ts";
import type { KubeObject } from "../../src/cluster/types.ts";
import { externalHpa, historyOf, plansOf, statusInput, T0 } from "./status_support.ts";

describe("buildStatus: the JSON document", () => {
  it("has the documented, versioned shape", () => {
    const hpa = externalHpa("web", "queue");
    const plans = plansOf(hpa);
    const report = buildStatus(
      statusInput([hpa], plans, { [plans[0].key]: historyOf([30, "boom", 45], T0 - 30_000) }),
    );
    assert.equal(STATUS_VERSION, 1);
    assert.deepEqual(report, {
      version: 1,
      generatedAt: "2026-01-01T12:00:00.000Z",
      hpas: [{
        namespace: "shop",
        name: "web",
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
        minReplicas: 1,
        maxReplicas: 10,
        state: "collected",
        errors: [],
        warnings: [],
        replicas: {
          current: 2,
          desired: 2,
          computed: 4,
          reasons: [
            "rate: the desired replica count is increasing faster than the maximum scale rate",
            "the controller has not acted on these values yet (it reads them every 15s), or a " +
            "scale-up policy limits it",
          ],
          note: REPLICA_NOTE,
        },
        metrics: [{
          key: "shop/web/0/External/queue",
          index: 0,
          type: "External",
          name: "queue",
          collector: "json-path",
          intervalSeconds: 15,
          target: { type: "AverageValue", averageValue: "10" },
          hidden: false,
          formula: null,
          config: { endpoint: "http://127.0.0.1:9/queue", "json-key": "$.n", type: "json-path" },
          state: "collected",
          value: 45,
          valueAt: "2026-01-01T12:00:00.000Z",
          ageSeconds: 0,
          samples: 1,
          error: null,
          failures: 0,
          failingSince: null,
          lastError: "boom",
          lastErrorAt: "2026-01-01T11:59:45.000Z",
          fallback: null,
          warnings: [],
          history: [
            { at: "2026-01-01T11:59:30.000Z", value: 30 },
            { at: "2026-01-01T11:59:45.000Z", value: null, failed: true },
            { at: "2026-01-01T12:00:00.000Z", value: 45 },
          ],
        }],
      }],
    });
    // what /status.json writes parses back to the same document
    assert.deepEqual(JSON.parse(JSON.stringify(report)), report);
  });
});

/** A formula HPA: External `total = q * 2` over the hidden json-path input `q`. */
function formulaHpa(): KubeObject {
  const hpa = externalHpa("formula", "total", {
    annotations: {
      "metric-config.external.total.formula/expression": "q * 2",
      "metric-config.external.q.json-path/endpoint": "http://127.0.0.1:9/q",
      "metric-config.external.q.json-path/json-key": "$.n",
    },
  });
  // the formula metric, not a json-path one
  hpa.spec.metrics[0].external.metric.selector.matchLabels = { type: "formula" };
  delete hpa.metadata.annotations!["metric-config.external.total.json-path/endpoint"];
  delete hpa.metadata.annotations!["metric-config.external.total.json-path/json-key"];
  delete hpa.metadata.annotations!["metric-config.external.total.json-path/interval"];
  return hpa;
}

describe("buildStatus: states", () => {
  const collected = externalHpa("collected", "queue");
  const pending = externalHpa("pending", "queue");
  const failing = externalHpa("failing", "queue");
  const expired = externalHpa("expired", "queue");
  const conflict = externalHpa("conflict", "queue");
  const fallback = externalHpa("fallback", "queue", {
    annotations: {
      "metric-config.external.queue.json-path/fallback-failure-threshold": "2",
      "metric-config.external.queue.json-path/fallback-replicas": "3",
    },
  });
  const invalid = externalHpa("invalid", "queue");
  const formula = formulaHpa();
  const noScaleTarget: KubeObject = {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name: "broken", namespace: "other" },
    spec: { maxReplicas: 3 },
  };
  const cpuOnly: KubeObject = {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name: "cpu", namespace: "other" },
    spec: {
      scaleTargetRef: { kind: "Deployment", name: "cpu" },
      maxReplicas: 3,
      metrics: [{
        type: "Resource",
        resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 50 } },
      }],
    },
  };
  const hpas = [
    collected,
    pending,
    failing,
    expired,
    conflict,
    fallback,
    invalid,
    formula,
    noScaleTarget,
    cpuOnly,
  ];
  const plans = [
    ...plansOf(collected),
    ...plansOf(pending),
    ...plansOf(failing),
    ...plansOf(expired),
    ...plansOf(conflict),
    ...plansOf(fallback),
    ...plansOf(invalid, { queue: 'collector "json-path" is not enabled' }),
    ...plansOf(formula),
  ];
  const report = buildStatus(statusInput(hpas, plans, {
    "shop/collected/0/External/queue": historyOf([12], T0),
    "shop/failing/0/External/queue": historyOf([30, "timeout", "refused"], T0 - 30_000),
    "shop/expired/0/External/queue": historyOf([30], T0 - 901_000),
    "shop/conflict/0/External/queue": historyOf([30], T0),
    "shop/fallback/0/External/queue": historyOf(["a", "b", "c"], T0 - 30_000),
    "shop/formula/0/External/total": historyOf([8], T0),
    "shop/formula/1/External/q": historyOf([4], T0),
  }, {
    conflicts: [{
      plan: { key: "shop/conflict/0/External/queue" },
      message: "HPA shop/other collects external metric queue differently",
    }],
    fallbacks: [{
      hpa: { namespace: "shop", name: "fallback" },
      metricType: "External",
      metricName: "queue",
      active: true,
      consecutiveFailures: 3,
    }],
  }));

  function metric(hpa: string, name: string) {
    const h = report.hpas.find((x) => x.name === hpa)!;
    return h.metrics.find((m) => m.name === name)!;
  }

  it("sorts the HPAs worst state first, then by namespace and name", () => {
    assert.deepEqual(report.hpas.map((h) => [h.namespace, h.name, h.state]), [
      ["other", "broken", "invalid"],
      ["shop", "invalid", "invalid"],
      ["shop", "failing", "failing"],
      ["shop", "conflict", "conflict"],
      ["shop", "expired", "expired"],
      ["shop", "fallback", "fallback"],
      ["shop", "pending", "pending"],
      ["shop", "collected", "collected"],
      ["shop", "formula", "collected"],
      ["other", "cpu", "none"],
    ]);
  });

  it("says why an HPA cannot be planned", () => {
    const h = report.hpas.find((x) => x.name === "broken")!;
    assert.deepEqual(h.errors, [
      "invalid HorizontalPodAutoscaler other/broken: spec.scaleTargetRef: required",
    ]);
    assert.deepEqual(h.metrics, []);
    assert.equal(h.scaleTargetRef, null);
  });

  it("gives a metric that cannot be collected its reason", () => {
    const m = metric("invalid", "queue");
    assert.equal(m.state, "invalid");
    assert.equal(m.error, 'collector "json-path" is not enabled');
  });

  it("counts the failures of a failing metric since the first, and keeps its last value", () => {
    const m = metric("failing", "queue");
    assert.equal(m.state, "failing");
    assert.equal(m.failures, 2);
    assert.equal(m.failingSince, "2026-01-01T11:59:45.000Z");
    assert.equal(m.error, "refused");
    assert.equal(m.value, 30);
    assert.equal(m.ageSeconds, 30);
  });

  it("marks a value older than the TTL expired", () => {
    const m = metric("expired", "queue");
    assert.equal(m.state, "expired");
    assert.equal(m.error, "the last value is older than the metrics TTL 900s");
    assert.equal(m.ageSeconds, 901);
  });

  it("names the conflict", () => {
    const m = metric("conflict", "queue");
    assert.equal(m.state, "conflict");
    assert.equal(m.error, "HPA shop/other collects external metric queue differently");
  });

  it("shows an active fallback with its failures", () => {
    const m = metric("fallback", "queue");
    assert.equal(m.state, "fallback");
    assert.deepEqual(m.fallback, { active: true, consecutiveFailures: 3 });
    assert.equal(m.error, "c");
  });

  it("says a metric without an outcome is not collected yet", () => {
    const m = metric("pending", "queue");
    assert.equal(m.state, "pending");
    assert.equal(m.value, null);
    assert.equal(m.valueAt, null);
    assert.deepEqual(m.history, []);
  });

  it("shows a formula with its expression and its hidden input", () => {
    const h = report.hpas.find((x) => x.name === "formula")!;
    assert.deepEqual(
      h.metrics.map((m) => [m.name, m.state, m.hidden, m.formula, m.value, m.collector]),
      [
        ["total", "collected", false, "q * 2", 8, "formula"],
        ["q", "hidden", true, null, 4, "json-path"],
      ],
    );
  });

  it("says when no metric of an HPA is served by this adapter", () => {
    const h = report.hpas.find((x) => x.name === "cpu")!;
    assert.deepEqual([h.state, h.errors, h.metrics], ["none", [], []]);
  });

  it("filters by namespace and by any metric's state", () => {
    assert.deepEqual(
      filterStatus(report, { namespace: "other" }).map((h) => h.name),
      ["broken", "cpu"],
    );
    assert.deepEqual(
      filterStatus(report, { state: "hidden" }).map((h) => h.name),
      ["formula"],
    );
    assert.deepEqual(
      filterStatus(report, { namespace: "shop", state: "failing" }).map((h) => h.name),
      ["failing"],
    );
  });
});

describe("buildStatus: the replica count computed here", () => {
  function replicas(value: number | string, current: number, desired: number) {
    const hpa = externalHpa("web", "queue", {
      status: { currentReplicas: current, desiredReplicas: desired },
    });
    const plans = plansOf(hpa);
    return buildStatus(statusInput([hpa], plans, { [plans[0].key]: historyOf([value], T0) }))
      .hpas[0].replicas;
  }

  it("keeps the count when the usage is within the tolerance", () => {
    // 21 / (10 * 2) = 1.05
    const r = replicas(21, 2, 2);
    assert.equal(r.computed, 2);
    assert.deepEqual(r.reasons, [
      "tolerance: external metric queue is at 105.0% of its target, within 10%: no change",
    ]);
  });

  it("says when maxReplicas limits it, and that the status has not caught up", () => {
    const r = replicas(500, 8, 8);
    assert.equal(r.computed, 10);
    assert.deepEqual(r.reasons, [
      "max: the metrics ask for 50, maxReplicas is 10",
      "the controller has not acted on these values yet (it reads them every 15s), or a " +
      "scale-up policy limits it",
    ]);
  });

  it("names the stabilization window when the status is above the computed count", () => {
    const r = replicas(12, 3, 3);
    assert.equal(r.computed, 2);
    assert.deepEqual(r.reasons, [
      "stabilization: a scale-down waits for the downscale stabilization window (300s unless " +
      "spec.behavior.scaleDown says otherwise)",
    ]);
  });

  it("computes nothing from a metric without a value", () => {
    const r = replicas("connection refused", 2, 2);
    assert.equal(r.computed, null);
    assert.deepEqual(r.reasons, [
      "invalid metrics (1 invalid out of 1), first error is: unable to get metric queue: " +
      "connection refused",
    ]);
  });

  it("computes nothing before the HPA has a status", () => {
    const hpa = externalHpa("web", "queue", { status: null });
    const plans = plansOf(hpa);
    const r = buildStatus(statusInput([hpa], plans, { [plans[0].key]: historyOf([5], T0) }))
      .hpas[0].replicas;
    assert.deepEqual(r, {
      current: null,
      desired: null,
      computed: null,
      reasons: ["the HPA has no status.currentReplicas yet"],
      note: REPLICA_NOTE,
    });
  });
});

describe("redactConfig", () => {
  it("hides values of secret-looking keys and credentials in URLs, and keeps references", () => {
    assert.deepEqual(
      redactConfig({
        "bearer-token": "s3cr3t",
        "bearer-token-from": "TriggerAuthentication/keda-auth",
        password: "hunter2",
        endpoint: "https://user:pass@metrics.example:8443/q?x=1",
        query: "sum(rate(x[1m]))",
      }),
      {
        "bearer-token": "(redacted)",
        "bearer-token-from": "TriggerAuthentication/keda-auth",
        endpoint: "https://metrics.example:8443/q?x=1",
        password: "(redacted)",
        query: "sum(rate(x[1m]))",
      },
    );
  });
});
