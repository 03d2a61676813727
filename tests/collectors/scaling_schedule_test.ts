import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  clusterScalingScheduleFactory,
  scalingScheduleFactory,
} from "../../src/collectors/scaling_schedule.ts";
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

const FLAGS = {
  "scaling-schedule-default-time-zone": "UTC",
  "scaling-schedule-default-scaling-window": 600,
  "scaling-schedule-ramp-steps": 10,
};

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
        flags: FLAGS,
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
      flags: FLAGS,
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
      flags: FLAGS,
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
      flags: FLAGS,
    });
    await assert.rejects(c.collect(ctx(cluster, "2024-03-04T12:00:00Z")), (e: Error) => {
      assert.match(e.message, /^invalid ScalingSchedule shop\/peak: spec\.schedules\[0\]/);
      return true;
    });
  });

  it("refuses a describedObject of another kind", () => {
    assert.throws(
      () =>
        scalingScheduleFactory.create({ plan: plan("ClusterScalingSchedule", "x"), flags: FLAGS }),
      {
        message:
          "metric peak of type scaling-schedule needs a describedObject of kind ScalingSchedule",
      },
    );
  });
});
