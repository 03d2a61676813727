import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  type ScalingScheduleSpec,
  type Schedule,
  type ScheduleOptions,
  scheduleValue,
} from "../../src/core/kube_metrics_adapter/scaling_schedule.ts";
import {
  MAX_RAMP_SAMPLES,
  rampStepMs,
  scheduleChanges,
  type ScheduleStep,
  scheduleSteps,
} from "../../src/core/kube_metrics_adapter/schedule_series.ts";

const OPTIONS: ScheduleOptions = {
  defaultTimeZone: "Europe/Berlin",
  defaultScalingWindowSeconds: 600,
  rampSteps: 10,
};
const ms = (iso: string): number => Date.parse(iso);
const iso = (at: number): string => new Date(at).toISOString();

function oneTime(date: string, durationMinutes: number, value: number): Schedule {
  return { type: "OneTime", date, durationMinutes, value };
}

/** The steps as [RFC 3339, value] pairs. */
function readable(steps: ScheduleStep[]): [string, number][] {
  return steps.map((s) => [iso(s.at), s.value]);
}

/** The value of a step list at `at`: the last step at or before it. */
function lookup(steps: ScheduleStep[], at: number): number {
  let v = steps[0].value;
  for (const s of steps) if (s.at <= at) v = s.value;
  return v;
}

describe("scheduleSteps", () => {
  it("lists the value at the start, each ramp step up, and each step down a millisecond after its boundary", () => {
    const spec: ScalingScheduleSpec = {
      scalingWindowDurationMinutes: 10,
      schedules: [oneTime("2026-01-01T12:00:00Z", 10, 40)],
    };
    const steps = scheduleSteps(spec, {
      ...OPTIONS,
      rampSteps: 2,
      from: ms("2026-01-01T11:00:00Z"),
      to: ms("2026-01-01T13:00:00Z"),
    });
    assert.deepEqual(readable(steps), [
      ["2026-01-01T11:00:00.000Z", 0],
      ["2026-01-01T11:55:00.000Z", 20],
      ["2026-01-01T12:00:00.000Z", 40],
      // at the end the value is still whole; the ramp-down's buckets are counted from rampEnd
      ["2026-01-01T12:10:00.001Z", 20],
      ["2026-01-01T12:15:00.001Z", 0],
    ]);
  });

  it("gives a 24-hour day of the demo's hourly peaks: 20 changes per peak, ramps of 1-minute steps", () => {
    const schedules: Schedule[] = [];
    for (let h = 0; h < 24; h++) {
      schedules.push({
        type: "Repeating",
        period: {
          days: ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"],
          startTime: `${String(h).padStart(2, "0")}:30`,
          timezone: "UTC",
        },
        durationMinutes: 10,
        value: 40,
      });
    }
    const spec: ScalingScheduleSpec = { scalingWindowDurationMinutes: 10, schedules };
    const from = ms("2026-11-22T10:25:00Z");
    const steps = scheduleSteps(spec, { ...OPTIONS, from, to: from + 86_400_000 });
    // 10:25 is in the ramp-up of 10:30 (5 of 10 steps); then the rest of that peak (5 up, 10
    // down) and 23 whole peaks of 20 changes; the last one (10:20 tomorrow) ramps up until the
    // end of the range, 10:25 included
    assert.equal(steps.length, 1 + 15 + 23 * 20 + 5);
    assert.deepEqual(readable(steps.slice(0, 8)), [
      ["2026-11-22T10:25:00.000Z", 20],
      ["2026-11-22T10:26:00.000Z", 24],
      ["2026-11-22T10:27:00.000Z", 28],
      ["2026-11-22T10:28:00.000Z", 32],
      ["2026-11-22T10:29:00.000Z", 36],
      ["2026-11-22T10:30:00.000Z", 40],
      ["2026-11-22T10:40:00.001Z", 36],
      ["2026-11-22T10:41:00.001Z", 32],
    ]);
    assert.deepEqual(readable(steps.slice(-2)), [
      ["2026-11-23T10:24:00.000Z", 16],
      ["2026-11-23T10:25:00.000Z", 20],
    ]);
  });

  it("agrees with scheduleValue at every step, just before it and at many instants between", () => {
    // overlapping windows, zones with a DST change, an endTime past midnight, odd ramp steps
    const spec: ScalingScheduleSpec = {
      scalingWindowDurationMinutes: 7,
      schedules: [
        oneTime("2026-03-29T00:30:00Z", 45, 17),
        oneTime("2026-03-29T00:50:00Z", 5, 33),
        {
          type: "Repeating",
          period: { days: ["Sat", "Sun"], startTime: "23:10", endTime: "01:05" },
          value: 9,
        },
        {
          type: "Repeating",
          period: { days: ["Sun"], startTime: "02:30", timezone: "Europe/Berlin" },
          durationMinutes: 20,
          value: 25,
        },
      ],
    };
    for (const rampSteps of [1, 3, 7, 10]) {
      const options = { ...OPTIONS, rampSteps };
      const from = ms("2026-03-28T20:00:00Z");
      const to = from + 86_400_000;
      const steps = scheduleSteps(spec, { ...options, from, to });
      for (let i = 1; i < steps.length; i++) {
        assert.ok(steps[i].at > steps[i - 1].at, `steps in order: ${iso(steps[i].at)}`);
        assert.notEqual(steps[i].value, steps[i - 1].value, `a change at ${iso(steps[i].at)}`);
        assert.equal(scheduleValue(spec, steps[i].at, options), steps[i].value);
        assert.equal(scheduleValue(spec, steps[i].at - 1, options), steps[i - 1].value);
      }
      for (let at = from; at <= to; at += 41_113) {
        assert.equal(
          lookup(steps, at),
          scheduleValue(spec, at, options),
          `${rampSteps} ${iso(at)}`,
        );
      }
    }
  });

  it("jumps without a scaling window", () => {
    const spec: ScalingScheduleSpec = {
      scalingWindowDurationMinutes: 0,
      schedules: [oneTime("2026-01-01T12:00:00Z", 60, 5)],
    };
    const steps = scheduleSteps(spec, {
      ...OPTIONS,
      from: ms("2026-01-01T00:00:00Z"),
      to: ms("2026-01-02T00:00:00Z"),
    });
    assert.deepEqual(readable(steps), [
      ["2026-01-01T00:00:00.000Z", 0],
      ["2026-01-01T12:00:00.000Z", 5],
      ["2026-01-01T13:00:00.000Z", 0],
    ]);
  });

  it("samples ramps of more than MAX_RAMP_SAMPLES steps, each listed value exact", () => {
    const spec: ScalingScheduleSpec = {
      scalingWindowDurationMinutes: 60,
      schedules: [oneTime("2026-01-01T12:00:00Z", 10, 100_000)],
    };
    const options = { ...OPTIONS, rampSteps: 100_000 };
    const steps = scheduleSteps(spec, {
      ...options,
      from: ms("2026-01-01T10:00:00Z"),
      to: ms("2026-01-01T14:00:00Z"),
    });
    // up: 119 sampled boundaries and the start; down: the change after the end, 119 sampled
    // boundaries and the ramp's end (0)
    assert.equal(MAX_RAMP_SAMPLES, 120);
    assert.equal(steps.length, 1 + 120 + 121);
    for (const s of steps) assert.equal(scheduleValue(spec, s.at, options), s.value);
    assert.equal(rampStepMs(3_600_000, 100_000), 3_600_000 * 834 / 100_000);
  });

  it("starts with the value at `from` inside a schedule, and refuses a reversed range", () => {
    const spec: ScalingScheduleSpec = { schedules: [oneTime("2026-01-01T12:00:00Z", 60, 5)] };
    const from = ms("2026-01-01T12:30:00Z");
    assert.deepEqual(
      readable(scheduleSteps(spec, { ...OPTIONS, from, to: from + 3_600_000 })).slice(0, 2),
      [["2026-01-01T12:30:00.000Z", 5], ["2026-01-01T13:00:00.001Z", 4]],
    );
    assert.throws(
      () => scheduleSteps(spec, { ...OPTIONS, from, to: from - 1 }),
      { message: `invalid range ${from}..${from - 1}: want finite epoch ms, from <= to` },
    );
  });
});

describe("scheduleChanges", () => {
  it("takes a ramp's steps together and keeps jumps and plateaus apart", () => {
    const steps: ScheduleStep[] = [
      { at: 0, value: 0 },
      { at: 60_000, value: 10 },
      { at: 120_000, value: 20 },
      // a plateau longer than a step: a new change
      { at: 600_000, value: 30 },
      { at: 660_001, value: 20 },
      { at: 720_001, value: 10 },
      { at: 3_600_000, value: 50 },
    ];
    assert.deepEqual(scheduleChanges(steps, 60_000), [
      { from: 60_000, to: 120_000, fromValue: 0, value: 20, steps: 2 },
      { from: 600_000, to: 600_000, fromValue: 20, value: 30, steps: 1 },
      { from: 660_001, to: 720_001, fromValue: 30, value: 10, steps: 2 },
      { from: 3_600_000, to: 3_600_000, fromValue: 10, value: 50, steps: 1 },
    ]);
    assert.deepEqual(scheduleChanges([{ at: 0, value: 3 }], 60_000), []);
    assert.equal(rampStepMs(600_000, 10), 60_000);
  });
});
