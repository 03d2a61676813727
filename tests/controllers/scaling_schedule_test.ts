import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/cluster/types.ts";
import { ScheduleEvaluator } from "../../src/collectors/scaling_schedule.ts";
import {
  adjustmentMessage,
  SCHEDULE_CONTROLLER_DEFAULTS,
  ScheduleController,
  type ScheduleControllerOptions,
} from "../../src/controllers/scaling_schedule.ts";
import { ManualTimers, MemoryCluster, RecordingWriter, settle } from "../engine/support.ts";

function schedule(value: number, date = "2024-03-04T10:30:00Z"): KubeObject {
  return {
    apiVersion: "zalando.org/v1",
    kind: "ScalingSchedule",
    metadata: { name: "peak", namespace: "shop" },
    spec: {
      scalingWindowDurationMinutes: 10,
      schedules: [{ type: "OneTime", date, durationMinutes: 60, value }],
    },
  };
}

function hpa(
  options: { averageValue: string; maxReplicas: number; currentReplicas?: number },
): KubeObject {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name: "web", namespace: "shop" },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
      maxReplicas: options.maxReplicas,
      metrics: [{
        type: "Object",
        object: {
          metric: { name: "peak" },
          describedObject: { apiVersion: "zalando.org/v1", kind: "ScalingSchedule", name: "peak" },
          target: { type: "AverageValue", averageValue: options.averageValue },
        },
      }],
    },
    ...(options.currentReplicas === undefined
      ? {}
      : { status: { currentReplicas: options.currentReplicas } }),
  };
}

function setup(options: Partial<ScheduleControllerOptions> = {}) {
  const cluster = new MemoryCluster();
  const timers = new ManualTimers();
  const writer = new RecordingWriter(cluster);
  const leader = { value: true };
  const controller = new ScheduleController({
    cluster,
    writer,
    now: timers.clock,
    setTimer: timers.setTimer,
    clearTimer: timers.clearTimer,
    isLeader: () => leader.value,
    ...options,
  });
  return { cluster, timers, writer, leader, controller };
}

/** A Deployment "web" with 10 replicas and the HPA on it, for the adjuster. */
function adjusterSetup(
  value: number,
  averageValue: string,
  maxReplicas: number,
  options: Partial<ScheduleControllerOptions> = {},
) {
  const s = setup(options);
  s.timers.now = Date.parse("2024-03-04T11:00:00Z");
  s.cluster.set("ScalingSchedule", schedule(value));
  s.cluster.set("Deployment", {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: "shop" },
    spec: { replicas: 10 },
  });
  s.cluster.set("HorizontalPodAutoscaler", hpa({ averageValue, maxReplicas, currentReplicas: 10 }));
  return s;
}

/** A schedule without its own ramp window: the controller's default applies. */
function scheduleWithoutWindow(): KubeObject {
  const obj = schedule(100);
  return { ...obj, spec: { schedules: obj.spec.schedules } };
}

describe("SCHEDULE_CONTROLLER_DEFAULTS", () => {
  it("are kube-metrics-adapter's", () => {
    assert.deepEqual(SCHEDULE_CONTROLLER_DEFAULTS, {
      tolerance: 0.1,
      schedule: {
        defaultTimeZone: "Europe/Berlin",
        defaultScalingWindowSeconds: 600,
        rampSteps: 10,
      },
      intervalMs: 10_000,
    });
  });
});

describe("adjustmentMessage", () => {
  it("says what was scaled, why, and by how much", () => {
    assert.equal(
      adjustmentMessage({
        target: "Deployment ns/name",
        from: 10,
        to: 11,
        schedule: "ScalingSchedule ns/x",
        tolerance: 0.1,
      }),
      "scaled Deployment ns/name from 10 to 11 replicas for ScalingSchedule ns/x: desired 11 is within the HPA tolerance 0.1",
    );
  });
});

describe("ScheduleController", () => {
  it("flips status.active at the ramp edges and writes only on change", async () => {
    const s = setup();
    s.timers.now = Date.parse("2024-03-04T10:00:00Z");
    s.cluster.set("ScalingSchedule", schedule(100));
    await s.controller.start();
    await settle();
    assert.equal(s.writer.statusUpdates.length, 0);
    await s.timers.advance(20 * 60_000); // 10:20, ramp-up begins
    assert.deepEqual(s.writer.statusUpdates.map((u) => u.status), [{ active: true }]);
    await s.timers.advance(60 * 60_000); // 11:20, ramp-down
    assert.equal(s.writer.statusUpdates.length, 1);
    await s.timers.advance(10 * 60_000); // 11:30, end of the schedule, ramping down
    assert.equal(s.writer.statusUpdates.length, 1);
    await s.timers.advance(10 * 60_000); // 11:40, end of the ramp
    assert.deepEqual(s.writer.statusUpdates.map((u) => u.status), [{ active: true }, {
      active: false,
    }]);
    await s.controller.stop();
    assert.equal(s.timers.pending, 0);
  });

  it("re-evaluates at once when a schedule changes", async () => {
    const s = setup();
    s.timers.now = Date.parse("2024-03-04T10:00:00Z");
    s.cluster.set("ScalingSchedule", schedule(100));
    await s.controller.start();
    await settle();
    s.cluster.set("ScalingSchedule", schedule(100, "2024-03-04T10:05:00Z"));
    await settle();
    assert.deepEqual(s.writer.statusUpdates.map((u) => u.status), [{ active: true }]);
    await s.controller.stop();
  });

  const adjusterCases: [string, number, string, number, number | null][] = [
    // value at 11:00 is 105; averageValue 10 -> 11 replicas wanted.
    ["scales 10 -> 11 inside the tolerance", 105, "10", 20, 11],
    ["caps at maxReplicas", 115, "5", 12, null],
    ["leaves a change outside the tolerance to the HPA", 150, "10", 20, null],
  ];
  for (const [name, value, averageValue, max, want] of adjusterCases) {
    it(`adjuster: ${name}`, async () => {
      const s = adjusterSetup(value, averageValue, max);
      await s.controller.runOnce();
      assert.deepEqual(
        s.writer.scales,
        want === null ? [] : [{ kind: "Deployment", name: "shop/web", replicas: want }],
      );
      assert.deepEqual(
        s.writer.events.map((e) => [e.name, e.event.type, e.event.reason, e.event.message]),
        want === null ? [] : [[
          "shop/web",
          "Normal",
          "ScalingAdjusted",
          `scaled Deployment shop/web from 10 to ${want} replicas for ScalingSchedule shop/peak: desired ${want} is within the HPA tolerance 0.1`,
        ]],
      );
      // A second pass finds the target at the wanted size and does nothing more.
      await s.controller.runOnce();
      assert.equal(s.writer.scales.length, want === null ? 0 : 1);
    });
  }

  it("adjuster caps the replicas at maxReplicas when that is still an increase", async () => {
    const s = setup();
    s.timers.now = Date.parse("2024-03-04T11:00:00Z");
    s.cluster.set("ScalingSchedule", schedule(2100));
    s.cluster.set("Deployment", {
      metadata: { name: "web", namespace: "shop" },
      spec: { replicas: 200 },
    });
    s.cluster.set(
      "HorizontalPodAutoscaler",
      hpa({ averageValue: "10", maxReplicas: 205, currentReplicas: 200 }),
    );
    await s.controller.runOnce();
    assert.deepEqual(s.writer.scales, [{ kind: "Deployment", name: "shop/web", replicas: 205 }]);
  });

  it("adjuster reads no scale of an HPA without status.currentReplicas or at 0", async () => {
    // 105 at 11:00 with averageValue 10 wants 11 of 10: adjusted when the status says 10.
    for (const [currentReplicas, reads, scales] of [[undefined, 0, 0], [0, 0, 0], [10, 1, 1]]) {
      const s = adjusterSetup(105, "10", 20);
      s.cluster.set(
        "HorizontalPodAutoscaler",
        hpa({ averageValue: "10", maxReplicas: 20, currentReplicas }),
      );
      for (let pass = 0; pass < 3; pass++) await s.controller.runOnce();
      assert.deepEqual(
        [s.writer.getScaleCalls, s.writer.scales.length],
        [reads === 0 ? 0 : 3, scales],
        `status.currentReplicas ${currentReplicas}`,
      );
    }
  });

  it("adjuster reads no scale while the schedules want one replica or none", async () => {
    const s = setup();
    s.cluster.set("Deployment", {
      metadata: { name: "web", namespace: "shop" },
      spec: { replicas: 1 },
    });
    s.cluster.set(
      "HorizontalPodAutoscaler",
      hpa({ averageValue: "10", maxReplicas: 20, currentReplicas: 1 }),
    );
    // 09:00: before the ramp (value 0); 10:25: in the ramp, 50 of 100 -> 5 wanted.
    for (const [at, value, reads] of [["09:00", 100, 0], ["11:00", 10, 0], ["10:25", 100, 1]]) {
      s.timers.now = Date.parse(`2024-03-04T${at}:00Z`);
      s.cluster.set("ScalingSchedule", schedule(value as number));
      await s.controller.runOnce();
      assert.equal(s.writer.getScaleCalls, reads, `at ${at} with value ${value}`);
    }
    assert.deepEqual(s.writer.scales, []); // 1 -> 5 is outside the tolerance: the HPA's call
  });

  it("runs one pass at a time when its own status writes emit watch events", async () => {
    const s = setup();
    s.timers.now = Date.parse("2024-03-04T10:00:00Z");
    for (const name of ["a", "b", "c"]) {
      const obj = schedule(100, "2024-03-04T10:05:00Z");
      s.cluster.set("ScalingSchedule", { ...obj, metadata: { ...obj.metadata, name } });
    }
    let passes = 0;
    let inPass = 0;
    let overlapped = false;
    const list = s.cluster.list.bind(s.cluster);
    s.cluster.list = (kind, namespace) => {
      if (kind === "ScalingSchedule") passes++;
      if (kind === "ScalingSchedule" && inPass++ > 0) overlapped = true;
      if (kind === "HorizontalPodAutoscaler") inPass = 0;
      return list(kind, namespace);
    };
    await s.controller.start();
    await settle();
    // The first pass writes all three; their events ask for one more pass, which writes none.
    assert.deepEqual(s.writer.statusUpdates.map((u) => [u.name, u.status]), [
      ["a", { active: true }],
      ["b", { active: true }],
      ["c", { active: true }],
    ]);
    assert.deepEqual({ passes, overlapped }, { passes: 2, overlapped: false });
    await s.controller.stop();
  });

  it("writes nothing when not the leader", async () => {
    const s = setup();
    s.leader.value = false;
    s.timers.now = Date.parse("2024-03-04T11:00:00Z");
    s.cluster.set("ScalingSchedule", schedule(105));
    s.cluster.set("Deployment", {
      metadata: { name: "web", namespace: "shop" },
      spec: { replicas: 10 },
    });
    s.cluster.set("HorizontalPodAutoscaler", hpa({ averageValue: "10", maxReplicas: 20 }));
    await s.controller.runOnce();
    assert.deepEqual([s.writer.statusUpdates, s.writer.scales, s.writer.events], [[], [], []]);
  });

  it("adjuster: scales outside the default tolerance when its tolerance option allows", async () => {
    // 120 / (10 x 10) = 1.2: outside 0.1, inside 0.2.
    const s = adjusterSetup(120, "10", 20, { tolerance: 0.2 });
    await s.controller.runOnce();
    assert.deepEqual(s.writer.scales, [{ kind: "Deployment", name: "shop/web", replicas: 12 }]);
    assert.deepEqual(
      s.writer.events.map((e) => e.event.message),
      [
        "scaled Deployment shop/web from 10 to 12 replicas for ScalingSchedule shop/peak: desired 12 is within the HPA tolerance 0.2",
      ],
    );
  });

  it("rejects a tolerance below 0 or not finite", () => {
    for (const [tolerance, text] of [[-0.1, "-0.1"], [NaN, "NaN"], [Infinity, "Infinity"]]) {
      assert.throws(
        () => setup({ tolerance: tolerance as number }),
        { message: `invalid tolerance ${text}: want a finite number of at least 0` },
      );
    }
  });

  // The schedule starts at 10:30; its ramp begins one default window earlier.
  const windowCases: [string, Partial<ScheduleControllerOptions>, string][] = [
    ["the default ramp window of 600 s", {}, "10:20"],
    [
      "the ramp window of its schedule option",
      { schedule: { defaultScalingWindowSeconds: 300 } },
      "10:25",
    ],
    [
      "the evaluator it is given, over its schedule option",
      {
        schedule: { defaultScalingWindowSeconds: 1200 },
        evaluator: new ScheduleEvaluator({
          ...SCHEDULE_CONTROLLER_DEFAULTS.schedule,
          defaultScalingWindowSeconds: 120,
        }),
      },
      "10:28",
    ],
  ];
  for (const [name, options, rampStart] of windowCases) {
    it(`marks a schedule active from ${rampStart} with ${name}`, async () => {
      const s = setup(options);
      s.cluster.set("ScalingSchedule", scheduleWithoutWindow());
      const before = Date.parse(`2024-03-04T${rampStart}:00Z`) - 1;
      s.timers.now = before;
      await s.controller.runOnce();
      assert.equal(s.writer.statusUpdates.length, 0);
      s.timers.now = before + 1;
      await s.controller.runOnce();
      assert.deepEqual(s.writer.statusUpdates.map((u) => u.status), [{ active: true }]);
    });
  }
});
