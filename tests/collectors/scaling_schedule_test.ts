import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  createClusterScalingScheduleFactory,
  createScalingScheduleFactory,
  SCHEDULE_WINDOW_SPAN_MS,
  ScheduleEvaluator,
} from "../../src/collectors/scaling_schedule.ts";
import {
  parseScalingSchedule,
  scheduleActive,
  scheduleValue,
} from "../../src/core/kube_metrics_adapter/scaling_schedule.ts";
import type { KubeObject } from "../../src/cluster/types.ts";
import type { MetricPlan } from "../../src/core/types.ts";
import { MemoryCluster } from "../engine/support.ts";

function plan(kind: string, name: string): MetricPlan {
  return {
    hpa: { namespace: "shop", name: "web" },
    index: 0,
    metricType: "Object",
    metricName: "peak",
    metricSelector: null,
    target: { type: "AverageValue", averageValue: "10" },
    describedObject: { apiVersion: "zalando.org/v1", kind, name },
    scaleTargetRef: { kind: "Deployment", name: "web" },
    collector: kind === "ScalingSchedule" ? "scaling-schedule" : "cluster-scaling-schedule",
    intervalSeconds: 60,
    perReplica: false,
    minPodReadyAgeSeconds: 0,
    config: {},
    error: null,
  };
}

const EVALUATOR = new ScheduleEvaluator({
  defaultTimeZone: "UTC",
  defaultScalingWindowSeconds: 600,
  rampSteps: 10,
});
const scalingScheduleFactory = createScalingScheduleFactory(EVALUATOR);
const clusterScalingScheduleFactory = createClusterScalingScheduleFactory(EVALUATOR);

function schedule(kind: string, name: string, namespace?: string) {
  return {
    apiVersion: "zalando.org/v1",
    kind,
    metadata: { name, ...(namespace ? { namespace } : {}) },
    spec: {
      schedules: [{
        type: "OneTime",
        date: "2024-03-04T12:00:00Z",
        durationMinutes: 60,
        value: 100,
      }],
    },
  };
}

function ctx(cluster: MemoryCluster, at: string) {
  return {
    signal: new AbortController().signal,
    now: () => Date.parse(at),
    fetch: (i: RequestInfo | URL, init?: RequestInit) => fetch(i, init),
    cluster,
  };
}

describe("scaling schedule collectors", () => {
  const cases: [string, number][] = [
    ["2024-03-04T11:00:00Z", 0],
    ["2024-03-04T11:55:00Z", 50],
    ["2024-03-04T12:30:00Z", 100],
    ["2024-03-04T13:05:00Z", 50],
  ];
  for (const [at, want] of cases) {
    it(`serves the ScalingSchedule value ${want} at ${at}`, async () => {
      const cluster = new MemoryCluster();
      cluster.set("ScalingSchedule", schedule("ScalingSchedule", "peak", "shop"));
      const c = scalingScheduleFactory.create({
        plan: plan("ScalingSchedule", "peak"),
      });
      assert.deepEqual(await c.collect(ctx(cluster, at)), {
        samples: [{ objectName: "peak", value: want, timestamp: Date.parse(at) }],
      });
    });
  }

  it("reads a ClusterScalingSchedule cluster-wide", async () => {
    const cluster = new MemoryCluster();
    cluster.set("ClusterScalingSchedule", schedule("ClusterScalingSchedule", "sale"));
    const c = clusterScalingScheduleFactory.create({
      plan: plan("ClusterScalingSchedule", "sale"),
    });
    const r = await c.collect(ctx(cluster, "2024-03-04T12:10:00Z"));
    assert.deepEqual(r.samples.map((s) => s.value), [100]);
    assert.equal(c.queryKey, "cluster-scaling-schedule|sale");
    assert.deepEqual(c.kinds, ["ClusterScalingSchedule"]);
  });

  it("names a missing schedule", async () => {
    const cluster = new MemoryCluster();
    // A schedule of the same name in another namespace is not ours.
    cluster.set("ScalingSchedule", schedule("ScalingSchedule", "peak", "other"));
    const c = scalingScheduleFactory.create({
      plan: plan("ScalingSchedule", "peak"),
    });
    await assert.rejects(c.collect(ctx(cluster, "2024-03-04T12:00:00Z")), {
      message: "ScalingSchedule shop/peak not found",
    });
  });

  it("names an invalid schedule", async () => {
    const cluster = new MemoryCluster();
    const bad = schedule("ScalingSchedule", "peak", "shop");
    (bad.spec.schedules[0] as Record<string, unknown>).date = undefined;
    cluster.set("ScalingSchedule", bad);
    const c = scalingScheduleFactory.create({
      plan: plan("ScalingSchedule", "peak"),
    });
    await assert.rejects(c.collect(ctx(cluster, "2024-03-04T12:00:00Z")), (e: Error) => {
      assert.match(e.message, /^invalid ScalingSchedule shop\/peak: spec\.schedules\[0\]/);
      return true;
    });
  });

  it("refuses a describedObject of another kind", () => {
    assert.throws(
      () => scalingScheduleFactory.create({ plan: plan("ClusterScalingSchedule", "x") }),
      {
        message:
          "metric peak of type scaling-schedule needs a describedObject of kind ScalingSchedule",
      },
    );
  });
});

describe("ScheduleEvaluator", () => {
  const options = {
    defaultTimeZone: "Europe/Berlin",
    defaultScalingWindowSeconds: 600,
    rampSteps: 10,
  };
  // Repeating across the spring DST change in Berlin, one crossing midnight, and a OneTime.
  const obj: KubeObject = {
    apiVersion: "zalando.org/v1",
    kind: "ScalingSchedule",
    metadata: { name: "mixed", namespace: "shop" },
    spec: {
      scalingWindowDurationMinutes: 20,
      schedules: [
        {
          type: "Repeating",
          period: { days: ["Sat", "Sun", "Mon"], startTime: "01:30", endTime: "03:10" },
          value: 40,
        },
        {
          type: "Repeating",
          period: { days: ["Sun"], startTime: "23:00", timezone: "UTC" },
          durationMinutes: 120,
          value: 70,
        },
        { type: "OneTime", date: "2024-03-31T12:00:00Z", durationMinutes: 45, value: 55 },
      ],
    },
  };

  it("gives the values and activity of the core maths at every time, across its window span", () => {
    const evaluator = new ScheduleEvaluator(options);
    const spec = parseScalingSchedule(obj).spec;
    const from = Date.parse("2024-03-30T00:00:00Z");
    const mismatches: string[] = [];
    let active = 0;
    let valued = 0;
    // 3 days in 7-minute steps: many window spans, ramps, DST and midnight included.
    for (let at = from; at < from + 3 * 86_400_000; at += 7 * 60_000) {
      const want = [scheduleValue(spec, at, options), scheduleActive(spec, at, options)];
      const got = [
        evaluator.value("ScalingSchedule", obj, at),
        evaluator.active("ScalingSchedule", obj, at),
      ];
      if (want[0] !== got[0] || want[1] !== got[1]) {
        mismatches.push(`${new Date(at).toISOString()}: ${got} != ${want}`);
      }
      if (want[0] !== 0) valued++;
      if (want[1]) active++;
    }
    assert.deepEqual(mismatches, []);
    assert.ok(valued > 20 && active > 20, `too few active times (${valued}, ${active})`);
  });

  it("re-evaluates a changed object and a time beyond the kept span", () => {
    const evaluator = new ScheduleEvaluator(options);
    const at = Date.parse("2024-03-31T12:10:00Z");
    assert.equal(evaluator.value("ScalingSchedule", obj, at), 55);
    const changed = structuredClone(obj);
    changed.spec.schedules[2].value = 60;
    assert.equal(evaluator.value("ScalingSchedule", changed, at), 60);
    assert.equal(evaluator.value("ScalingSchedule", obj, at), 55);
    const later = Date.parse("2024-04-07T12:10:00Z");
    assert.ok(later - at > SCHEDULE_WINDOW_SPAN_MS);
    assert.equal(evaluator.value("ScalingSchedule", obj, later), 0);
    assert.equal(evaluator.value("ScalingSchedule", obj, at - 60_000), 55);
  });

  it("throws the parse error of an invalid object every time", () => {
    const evaluator = new ScheduleEvaluator(options);
    const bad = structuredClone(obj);
    delete bad.spec.schedules[2].date;
    for (let i = 0; i < 2; i++) {
      assert.throws(
        () => evaluator.value("ScalingSchedule", bad, Date.parse("2024-03-31T12:10:00Z")),
        /date/,
      );
    }
  });
});
