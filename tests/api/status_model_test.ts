import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  annotationConfig,
  buildStatus,
  fallbackText,
  filterStatus,
  guardCapText,
  guardOutcomeText,
  redactConfig,
  redactSelector,
  REPLICA_NOTE,
  type ReplicaGuardStatus,
  scheduleChangeTexts,
  STATUS_VERSION,
  type StatusGuardInput,
  type StatusScheduleSource,
} from "../../src/api/status_model.ts";
import { stateLabel } from "../../src/api/status_page.ts";
import type { KubeObject } from "../../src/cluster/types.ts";
import type { MetricPlan } from "../../src/core/types.ts";
import {
  externalHpa,
  historyOf,
  plansOf,
  scheduleHpa,
  scheduleObject,
  statusInput,
  T0,
} from "./status_support.ts";

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
        replicaGuard: null,
        scaledObject: null,
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
          selector: { matchLabels: { type: "json-path" } },
          schedule: null,
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
          delegate: null,
          warnings: [],
          history: [
            { at: "2026-01-01T11:59:30.000Z", value: 30 },
            { at: "2026-01-01T11:59:45.000Z", value: null, failed: true },
            { at: "2026-01-01T12:00:00.000Z", value: 45 },
          ],
        }],
      }],
      schedules: [],
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
      last: {
        since: T0 - 15_000,
        endedAt: null,
        value: 30,
        replicas: 3,
        cause: "2 consecutive failed collections (the last: b)",
        endReason: null,
      },
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
    assert.deepEqual(m.fallback, {
      active: true,
      consecutiveFailures: 3,
      activeSince: "2026-01-01T11:59:45.000Z",
      endedAt: null,
      value: 30,
      replicas: 3,
      reason: "2 consecutive failed collections (the last: b)",
      endReason: null,
    });
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
        // (a reference: refused by the planner now, still shown as the HPA sets it)
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

/** A schedule source over `objects`, counting the look-ups. */
function scheduleSource(objects: KubeObject[]): StatusScheduleSource & { gets: string[] } {
  const gets: string[] = [];
  return {
    gets,
    options: { defaultTimeZone: "UTC", defaultScalingWindowSeconds: 600, rampSteps: 10 },
    get(kind, namespace, name) {
      gets.push(`${kind} ${namespace ?? ""}/${name}`);
      return objects.find((o) =>
        o.kind === kind && o.metadata.name === name && o.metadata.namespace === namespace
      );
    },
  };
}

describe("buildStatus: the next 24 hours of the schedules the HPAs use", () => {
  // 18:00 to 19:00 today at 30, ramps of 10 minutes in 10 steps; T0 is 12:00
  const peak = scheduleObject("ScalingSchedule", "peak", {
    date: "2026-01-01T18:00:00Z",
    minutes: 60,
    value: 30,
  });
  const broken = { ...scheduleObject("ScalingSchedule", "broken", peak.spec.schedules[0]) };
  broken.spec = { schedules: [{ type: "OneTime", value: 1 }] };
  const a = scheduleHpa("a", [
    { kind: "ScalingSchedule", name: "peak" },
    { kind: "ClusterScalingSchedule", name: "gone" },
  ]);
  const b = scheduleHpa("b", [
    { kind: "ScalingSchedule", name: "peak" },
    { kind: "ScalingSchedule", name: "broken" },
  ]);
  const plans = [...plansOf(a), ...plansOf(b)];

  it("computes each schedule once, with every ramp step, and refers to it from each metric", () => {
    const source = scheduleSource([peak, broken]);
    const report = buildStatus(statusInput([a, b], plans, {}, { schedules: source }));
    assert.deepEqual(source.gets, [
      "ClusterScalingSchedule /gone",
      "ScalingSchedule shop/broken",
      "ScalingSchedule shop/peak",
    ]);
    assert.deepEqual(report.hpas.find((h) => h.name === "b")!.metrics.map((m) => m.schedule), [
      { kind: "ScalingSchedule", namespace: "shop", name: "peak" },
      { kind: "ScalingSchedule", namespace: "shop", name: "broken" },
    ]);
    const [gone, invalid, ok] = report.schedules;
    assert.deepEqual(gone, {
      kind: "ClusterScalingSchedule",
      namespace: null,
      name: "gone",
      error: "ClusterScalingSchedule gone not found",
      from: "2026-01-01T12:00:00.000Z",
      to: "2026-01-02T12:00:00.000Z",
      scalingWindowSeconds: null,
      rampSteps: 10,
      active: null,
      steps: [],
    });
    assert.equal(
      invalid.error,
      "invalid ScalingSchedule shop/broken: spec.schedules[0].date: required for a OneTime schedule",
    );
    const up = [3, 6, 9, 12, 15, 18, 21, 24, 27].map((v, i) => ({
      at: `2026-01-01T17:5${i + 1}:00.000Z`,
      value: v,
    }));
    const down = [27, 24, 21, 18, 15, 12, 9, 6, 3, 0].map((v, i) => ({
      at: `2026-01-01T19:0${i}:00.001Z`,
      value: v,
    }));
    assert.deepEqual(ok, {
      kind: "ScalingSchedule",
      namespace: "shop",
      name: "peak",
      error: null,
      from: "2026-01-01T12:00:00.000Z",
      to: "2026-01-02T12:00:00.000Z",
      scalingWindowSeconds: 600,
      rampSteps: 10,
      active: false,
      steps: [
        { at: "2026-01-01T12:00:00.000Z", value: 0 },
        ...up,
        { at: "2026-01-01T18:00:00.000Z", value: 30 },
        ...down,
      ],
    });
    assert.deepEqual(scheduleChangeTexts(ok, 1), {
      changes: [
        "up to 30 from 2026-01-01T17:51:00.000Z to 2026-01-01T18:00:00.000Z (10 steps)",
      ],
      more: 1,
    });
    assert.deepEqual(scheduleChangeTexts(ok).changes.slice(1), [
      "down to 0 from 2026-01-01T19:00:00.001Z to 2026-01-01T19:09:00.001Z (10 steps)",
    ]);
  });

  it("computes nothing without a schedule source, and only the HPA asked for", () => {
    assert.deepEqual(buildStatus(statusInput([a, b], plans, {})).schedules, []);
    const source = scheduleSource([peak, broken]);
    const one = buildStatus(
      statusInput([a, b], plans, {}, { schedules: source, only: { namespace: "shop", name: "a" } }),
    );
    assert.deepEqual(one.hpas.map((h) => h.name), ["a"]);
    assert.deepEqual(one.schedules.map((s) => s.name), ["gone", "peak"]);
    assert.deepEqual(source.gets, ["ClusterScalingSchedule /gone", "ScalingSchedule shop/peak"]);
  });
});

describe("buildStatus: the replica guard's last decision", () => {
  const guarded = externalHpa("guarded", "queue", {
    annotations: { "estafette.io/hpa-scaler": "true" },
  });
  const waiting = externalHpa("waiting", "queue", {
    annotations: { "estafette.io/hpa-scaler": "true" },
  });
  const plain = externalHpa("plain", "queue");
  const hpas = [guarded, waiting, plain];
  const plans = hpas.flatMap((h) => plansOf(h));
  const decision: StatusGuardInput = {
    at: T0 - 5_000,
    query: "vector(22.54)",
    queryValue: 22.54,
    minReplicas: 9,
    maxScaleDown: 2,
    scaleDownMinimum: 2,
    message: "minReplicas 1 -> 9, maxReplicas 8 -> 10: query 22.54 / 2.5 - 0.5",
    changed: true,
    written: false,
    error: null,
  };
  const guard = (ns: string, name: string) => ns === "shop" && name === "guarded" ? decision : null;

  function byName(input: ReturnType<typeof statusInput>) {
    return Object.fromEntries(buildStatus(input).hpas.map((h) => [h.name, h.replicaGuard]));
  }

  it("is null for every HPA while the guard is off", () => {
    assert.deepEqual(byName(statusInput(hpas, plans, {})), {
      guarded: null,
      waiting: null,
      plain: null,
    });
  });

  it("reports the decision of an HPA the guard is on for, a pending one, and nothing else", () => {
    const r = byName(statusInput(hpas, plans, {}, { replicaGuard: guard }));
    assert.deepEqual(r.guarded, {
      at: "2026-01-01T11:59:55.000Z",
      query: "vector(22.54)",
      queryValue: 22.54,
      minReplicas: 9,
      maxScaleDown: 2,
      scaleDownMinimum: 2,
      message: "minReplicas 1 -> 9, maxReplicas 8 -> 10: query 22.54 / 2.5 - 0.5",
      changed: true,
      written: false,
      error: null,
    });
    assert.deepEqual(r.waiting, {
      at: null,
      query: null,
      queryValue: null,
      minReplicas: null,
      maxScaleDown: null,
      scaleDownMinimum: null,
      message: null,
      changed: false,
      written: false,
      error: null,
    });
    assert.equal(r.plain, null);
  });

  it("says the cap and the outcome in words", () => {
    const g = { ...decision, at: "x" } as ReplicaGuardStatus;
    assert.equal(
      guardCapText(g),
      "at most 2 replicas removed per scale-down: minReplicas at least 2",
    );
    assert.equal(
      guardCapText({ ...g, maxScaleDown: 0, scaleDownMinimum: 3 }),
      "at most 1 replica removed per scale-down: minReplicas at least 3",
    );
    assert.equal(
      guardCapText({ ...g, maxScaleDown: null }),
      "off while a deployment is in progress",
    );
    assert.equal(guardCapText({ ...g, minReplicas: null }), null);
    assert.equal(guardOutcomeText(g), "not written: file mode, decisions are logged");
    assert.equal(guardOutcomeText({ ...g, written: true }), "written");
    assert.equal(guardOutcomeText({ ...g, changed: false }), "nothing to write");
    assert.equal(guardOutcomeText({ ...g, error: "cannot patch" }), "not written");
  });
});

describe("the fallback's last episode and the selector, in words", () => {
  it("says when the fallback was active, what it served and why it ended", () => {
    const base = {
      active: false,
      consecutiveFailures: 0,
      activeSince: null,
      endedAt: null,
      value: null,
      replicas: null,
      reason: null,
      endReason: null,
    };
    assert.equal(fallbackText(base), "not active, 0 consecutive failures");
    assert.equal(fallbackText({ ...base, active: true }), "active");
    const episode = {
      ...base,
      activeSince: "2026-01-01T11:00:00.000Z",
      value: 6,
      replicas: 3,
      reason: "4 consecutive failed collections (the last: boom)",
    };
    assert.equal(
      fallbackText({ ...episode, active: true, consecutiveFailures: 4 }),
      "active since 2026-01-01T11:00:00.000Z, serving 6 (3 replicas): 4 consecutive failed " +
        "collections (the last: boom)",
    );
    assert.equal(
      fallbackText({
        ...episode,
        consecutiveFailures: 1,
        endedAt: "2026-01-01T11:05:00.000Z",
        endReason: "its source answers again",
      }),
      "not active, 1 consecutive failure; last active from 2026-01-01T11:00:00.000Z to " +
        "2026-01-01T11:05:00.000Z, served 6 (3 replicas): 4 consecutive failed collections " +
        "(the last: boom); ended: its source answers again",
    );
  });

  it("keeps the selector's labels apart from the annotations, both redacted", () => {
    const selector = redactSelector({
      matchLabels: { type: "json-path", "bearer-token": "s3cr3t" },
      matchExpressions: [{ key: "zone", operator: "In", values: ["a"] }],
    });
    assert.deepEqual(selector, {
      matchLabels: { "bearer-token": "(redacted)", type: "json-path" },
      matchExpressions: [{ key: "zone", operator: "In", values: ["a"] }],
    });
    assert.deepEqual(
      annotationConfig(
        redactConfig({
          type: "json-path",
          "bearer-token": "s3cr3t",
          endpoint: "http://q",
          // an annotation that overrides a label is an annotation
          zone: "b",
        }),
        { matchLabels: { type: "json-path", "bearer-token": "s3cr3t", zone: "a" } },
      ),
      [["endpoint", "http://q"], ["zone", "b"]],
    );
    assert.equal(redactSelector(null), null);
  });
});

describe("metrics served by a delegate (issue 26)", () => {
  // An External metric of a collector this adapter does not have (KEDA's) and a Pods one
  const hpa = externalHpa("keda", "queue", {
    annotations: {},
    extra: [{
      type: "Pods",
      pods: {
        metric: { name: "rps" },
        target: { type: "AverageValue", averageValue: "10" },
      },
    }],
  });
  const plans = plansOf(hpa, {
    queue: "no collector for External metric queue",
    rps: "no collector for Pods metric rps",
  }).map((p) => ({ ...p, incompatible: true }));
  const states = (delegates: { custom?: string; external?: string } | undefined) => {
    const r = buildStatus(statusInput([hpa], plans, {}, delegates ? { delegates } : {}));
    return r.hpas[0].metrics.map((m) => [m.name, m.state, m.error, m.delegate]);
  };

  it("marks a metric no collector here takes as delegated when its API has a delegate", () => {
    assert.deepEqual(states({ external: "https://keda:6443" }), [
      ["queue", "delegated", null, "https://keda:6443"],
      ["rps", "invalid", "no collector for Pods metric rps", null],
    ]);
    assert.deepEqual(states({ custom: "https://pa:6443", external: "https://keda:6443" }), [
      ["queue", "delegated", null, "https://keda:6443"],
      ["rps", "delegated", null, "https://pa:6443"],
    ]);
  });

  it("keeps the metric's problem without a delegate", () => {
    assert.deepEqual(states(undefined), [
      ["queue", "invalid", "no collector for External metric queue", null],
      ["rps", "invalid", "no collector for Pods metric rps", null],
    ]);
  });

  it("says which delegate serves it on the page", () => {
    const m = buildStatus(statusInput([hpa], plans, {}, { delegates: { external: "https://k" } }))
      .hpas[0].metrics[0];
    assert.equal(stateLabel("delegated", m), "served by the delegate https://k");
  });

  it("names prometheus-adapter's rule before the delegate, for the metrics a rule serves", () => {
    const r = buildStatus(statusInput([hpa], plans, {}, {
      delegates: { custom: "https://pa:6443", external: "https://keda:6443" },
      // the rules serve the Pods metric only
      servedByRules: (plan: MetricPlan) =>
        plan.metricName === "rps" ? "prometheus-adapter's rules[2]" : undefined,
    }));
    assert.deepEqual(r.hpas[0].metrics.map((m) => [m.name, m.state, m.error, m.delegate]), [
      ["queue", "delegated", null, "https://keda:6443"],
      ["rps", "delegated", null, "prometheus-adapter's rules[2]"],
    ]);
    assert.equal(
      stateLabel("delegated", r.hpas[0].metrics[1]),
      "served by prometheus-adapter's rules[2]",
    );
    assert.equal(
      stateLabel("delegated", r.hpas[0].metrics[0]),
      "served by the delegate https://keda:6443",
    );
  });
});
