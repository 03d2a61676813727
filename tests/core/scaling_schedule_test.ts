import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  mayNeedAdjustment,
  parseScalingSchedule,
  planAdjustment,
  type ScalingScheduleSpec,
  type Schedule,
  scheduleActive,
  type ScheduleDay,
  type ScheduleMetric,
  type ScheduleOptions,
  scheduleStatusUpdate,
  scheduleValue,
  scheduleWindows,
} from "../../src/core/kube_metrics_adapter/scaling_schedule.ts";

const OPTIONS: ScheduleOptions = {
  defaultTimeZone: "Europe/Berlin",
  defaultScalingWindowSeconds: 600,
  rampSteps: 10,
};

const MIN = 60_000;
const ms = (iso: string): number => Date.parse(iso);

/** A spec with the given schedules; `window` sets scalingWindowDurationMinutes. */
function spec(schedules: Schedule[], window?: number): ScalingScheduleSpec {
  return window === undefined ? { schedules } : { scalingWindowDurationMinutes: window, schedules };
}

function repeating(
  days: ScheduleDay[],
  startTime: string,
  rest: Partial<Schedule> & { endTime?: string; timezone?: string } = {},
): Schedule {
  const { endTime, timezone, ...schedule } = rest;
  return {
    type: "Repeating",
    value: 100,
    ...schedule,
    period: {
      startTime,
      days,
      ...(endTime !== undefined ? { endTime } : {}),
      ...(timezone !== undefined ? { timezone } : { timezone: "Europe/Berlin" }),
    },
  };
}

type Row = [at: string, expected: number];

function assertValues(s: ScalingScheduleSpec, rows: Row[], options = OPTIONS): void {
  const got = rows.map(([at]) => [at, scheduleValue(s, ms(at), options)]);
  assert.deepEqual(got, rows);
}

describe("scheduleValue: OneTime", () => {
  it("holds the value from date for durationMinutes, start-inclusive and end-exclusive", () => {
    const s = spec([
      { type: "OneTime", date: "2024-06-10T10:00:00+02:00", durationMinutes: 30, value: 100 },
    ], 0);
    assertValues(s, [
      ["2024-06-10T07:59:59.999Z", 0],
      ["2024-06-10T08:00:00Z", 100],
      ["2024-06-10T08:29:59.999Z", 100],
      ["2024-06-10T08:30:00Z", 0],
    ]);
  });

  it("ends at endDate when it is later than date + durationMinutes", () => {
    const s = spec([{
      type: "OneTime",
      date: "2024-06-10T10:00:00+02:00",
      endDate: "2024-06-10T12:00:00+02:00",
      durationMinutes: 30,
      value: 100,
    }], 0);
    assertValues(s, [["2024-06-10T09:59:59.999Z", 100], ["2024-06-10T10:00:00Z", 0]]);
  });

  it("ends at date + durationMinutes when endDate is earlier", () => {
    const s = spec([{
      type: "OneTime",
      date: "2024-06-10T10:00:00+02:00",
      endDate: "2024-06-10T10:10:00+02:00",
      durationMinutes: 30,
      value: 100,
    }], 0);
    assertValues(s, [["2024-06-10T08:20:00Z", 100], ["2024-06-10T08:30:00Z", 0]]);
  });

  it("a schedule without endDate or duration only ramps (full value at its instant)", () => {
    const s = spec([{ type: "OneTime", date: "2024-06-10T10:00:00Z", value: 100 }]);
    assertValues(s, [
      ["2024-06-10T09:55:00Z", 50],
      ["2024-06-10T10:00:00Z", 100],
      ["2024-06-10T10:00:00.001Z", 90],
      ["2024-06-10T10:10:00Z", 0],
    ]);
    assertValues(spec(s.schedules, 0), [["2024-06-10T10:00:00Z", 0]]);
  });
});

describe("scheduleValue: Repeating", () => {
  // The README's example: Mon, Wed, Fri at 15:45 Berlin time (CEST in June) for 10 minutes.
  const s = spec(
    [repeating(["Mon", "Wed", "Fri"], "15:45", { durationMinutes: 10, value: 120 })],
    0,
  );

  it("fires on each listed day at startTime in its time zone", () => {
    assertValues(s, [
      ["2024-06-10T13:44:59.999Z", 0], // Mon 15:44:59 CEST
      ["2024-06-10T13:45:00Z", 120], // Mon 15:45
      ["2024-06-11T13:45:00Z", 0], // Tue
      ["2024-06-12T13:50:00Z", 120], // Wed
      ["2024-06-14T13:54:59.999Z", 120], // Fri 15:54:59.999
      ["2024-06-14T13:55:00Z", 0], // Fri 15:55
      ["2024-06-15T13:45:00Z", 0], // Sat
      ["2024-06-16T13:45:00Z", 0], // Sun
      ["2024-06-17T13:45:00Z", 120], // next Mon
    ]);
  });

  it("uses the default time zone when period.timezone is empty or missing", () => {
    const noZone = spec([repeating(["Mon"], "09:00", { durationMinutes: 60, timezone: "" })], 0);
    assertValues(noZone, [["2024-06-10T07:00:00Z", 100], ["2024-06-10T13:00:00Z", 0]]);
    assertValues(
      noZone,
      [["2024-06-10T07:00:00Z", 0], ["2024-06-10T13:00:00Z", 100]],
      { ...OPTIONS, defaultTimeZone: "America/New_York" },
    );
  });

  it("keeps the local start time when the offset changes between weeks", () => {
    const weekly = spec([repeating(["Fri", "Mon"], "08:00", { durationMinutes: 1 })], 0);
    assertValues(weekly, [
      ["2024-03-29T07:00:00Z", 100], // Fri 08:00 CET
      ["2024-04-01T06:00:00Z", 100], // Mon 08:00 CEST
      ["2024-04-01T07:00:00Z", 0],
    ]);
  });

  it("a Repeating occurrence that started yesterday and runs past midnight still counts", () => {
    // Mon 23:00 Berlin for 2 hours; upstream only looks at today's occurrence and returns 0.
    const late = spec([repeating(["Mon"], "23:00", { durationMinutes: 120 })], 0);
    assertValues(late, [
      ["2024-06-10T21:00:00Z", 100], // Mon 23:00 CEST
      ["2024-06-10T22:30:00Z", 100], // Tue 00:30 CEST
      ["2024-06-10T22:59:59.999Z", 100],
      ["2024-06-10T23:00:00Z", 0], // Tue 01:00
    ]);
  });

  it("a ramp-up that begins before midnight counts for a start just after it", () => {
    const early = spec([repeating(["Tue"], "00:00", { durationMinutes: 60 })]);
    assertValues(early, [
      ["2024-06-10T21:50:00Z", 0], // Mon 23:50 CEST, ramp start
      ["2024-06-10T21:55:00Z", 50], // Mon 23:55
      ["2024-06-10T22:00:00Z", 100], // Tue 00:00
    ]);
  });

  it("a ramp-down that continues past midnight counts on the next day", () => {
    const late = spec([repeating(["Mon"], "23:00", { durationMinutes: 60 })]);
    assertValues(late, [["2024-06-10T22:05:00Z", 50], ["2024-06-10T22:10:00Z", 0]]);
  });

  it("endTime earlier than startTime means that time on the next day", () => {
    // Fri 22:00 to Sat 02:00 Berlin, although Sat is not in days; upstream ends it at once.
    const night = spec([repeating(["Fri"], "22:00", { endTime: "02:00" })], 0);
    assertValues(night, [
      ["2024-06-14T19:59:59.999Z", 0], // Fri 21:59:59.999 CEST
      ["2024-06-14T20:00:00Z", 100], // Fri 22:00
      ["2024-06-14T23:00:00Z", 100], // Sat 01:00
      ["2024-06-14T23:59:59.999Z", 100], // Sat 01:59:59.999
      ["2024-06-15T00:00:00Z", 0], // Sat 02:00
    ]);
  });

  it("endTime later than startTime + durationMinutes ends the window", () => {
    const day = spec([repeating(["Mon"], "09:00", { endTime: "17:00", durationMinutes: 60 })], 0);
    assertValues(day, [["2024-06-10T14:59:59.999Z", 100], ["2024-06-10T15:00:00Z", 0]]);
  });

  it("durationMinutes wins when it outlasts endTime; endTime equal to startTime adds nothing", () => {
    const long = spec([repeating(["Mon"], "09:00", { endTime: "10:00", durationMinutes: 180 })], 0);
    assertValues(long, [["2024-06-10T09:59:59.999Z", 100], ["2024-06-10T10:00:00Z", 0]]);
    const same = spec([repeating(["Mon"], "09:00", { endTime: "09:00", durationMinutes: 30 })], 0);
    assertValues(same, [["2024-06-10T07:29:59.999Z", 100], ["2024-06-10T07:30:00Z", 0]]);
  });

  it("a schedule with no days never fires", () => {
    assertValues(spec([repeating([], "09:00", { durationMinutes: 60 })], 0), [
      ["2024-06-10T07:30:00Z", 0],
    ]);
  });
});

describe("scheduleValue: ramps", () => {
  // Start 10:00Z, end 11:00Z, window 10 minutes, 10 steps: every step boundary.
  const s = spec([{
    type: "OneTime",
    date: "2024-06-10T10:00:00Z",
    durationMinutes: 60,
    value: 100,
  }]);
  const start = ms("2024-06-10T10:00:00Z");
  const end = ms("2024-06-10T11:00:00Z");

  it("ramps up in 10 steps from start - window, each step starting at its boundary", () => {
    const got: [number, number, number][] = [];
    for (let k = 0; k <= 10; k++) {
      const at = start - 10 * MIN + k * MIN;
      got.push([k, scheduleValue(s, at - 1, OPTIONS), scheduleValue(s, at, OPTIONS)]);
    }
    assert.deepEqual(got, [
      [0, 0, 0],
      [1, 0, 10],
      [2, 10, 20],
      [3, 20, 30],
      [4, 30, 40],
      [5, 40, 50],
      [6, 50, 60],
      [7, 60, 70],
      [8, 70, 80],
      [9, 80, 90],
      [10, 90, 100],
    ]);
  });

  it("ramps down measured back from end + window: full value at end, 90 just after", () => {
    const got: [number, number, number][] = [];
    for (let k = 0; k <= 10; k++) {
      const at = end + k * MIN;
      got.push([k, scheduleValue(s, at, OPTIONS), scheduleValue(s, at + 1, OPTIONS)]);
    }
    assert.deepEqual(got, [
      [0, 100, 90],
      [1, 90, 80],
      [2, 80, 70],
      [3, 70, 60],
      [4, 60, 50],
      [5, 50, 40],
      [6, 40, 30],
      [7, 30, 20],
      [8, 20, 10],
      [9, 10, 0],
      [10, 0, 0],
    ]);
  });

  it("multiplies the floored step by value / steps and truncates (upstream's formula)", () => {
    const seven = spec([{
      type: "OneTime",
      date: "2024-06-10T10:00:00Z",
      durationMinutes: 60,
      value: 7,
    }]);
    assert.deepEqual(
      [
        scheduleValue(seven, start - 5 * MIN, OPTIONS), // p 0.5: 5 * 0.7 = 3.5
        scheduleValue(seven, start - 4.1 * MIN, OPTIONS), // p 0.59: 5 * 0.7, not floor(0.59 * 7) = 4
        scheduleValue(seven, start - 3 * MIN, OPTIONS), // p 0.7: 7 * 0.7 = 4.9
      ],
      [3, 3, 4],
    );
  });

  it("uses rampSteps buckets", () => {
    const five = { ...OPTIONS, rampSteps: 5 };
    assert.deepEqual(
      [start - 7 * MIN, start - 3 * MIN, start - 1 * MIN].map((at) => scheduleValue(s, at, five)),
      [20, 60, 80],
    );
  });

  it("takes the window from scalingWindowDurationMinutes, else the default", () => {
    const twenty = spec(s.schedules, 20);
    assert.equal(scheduleValue(twenty, start - 15 * MIN, OPTIONS), 20);
    assert.equal(scheduleValue(s, start - 15 * MIN, OPTIONS), 0);
    assert.equal(
      scheduleValue(s, start - 15 * MIN, { ...OPTIONS, defaultScalingWindowSeconds: 1800 }),
      50,
    );
    assert.equal(scheduleValue(spec(s.schedules, 0), start - 1, OPTIONS), 0);
  });
});

describe("scheduleValue: overlapping schedules", () => {
  it("returns the maximum over all schedules, ramps included", () => {
    const s = spec([
      { type: "OneTime", date: "2024-06-10T10:00:00Z", durationMinutes: 60, value: 100 },
      { type: "OneTime", date: "2024-06-10T10:30:00Z", durationMinutes: 15, value: 300 },
    ]);
    assertValues(s, [
      ["2024-06-10T10:22:00Z", 100], // second ramps at 60
      ["2024-06-10T10:25:00Z", 150], // second ramps at 150
      ["2024-06-10T10:40:00Z", 300],
      ["2024-06-10T10:50:00Z", 150], // second ramps down
      ["2024-06-10T11:05:00Z", 50], // first ramps down, second is over
    ]);
  });

  it("never goes below 0 for a negative value", () => {
    const s = spec([{
      type: "OneTime",
      date: "2024-06-10T10:00:00Z",
      durationMinutes: 60,
      value: -5,
    }]);
    assert.equal(scheduleValue(s, ms("2024-06-10T10:30:00Z"), OPTIONS), 0);
  });
});

describe("scheduleValue: daylight saving time", () => {
  const cases: {
    name: string;
    schedule: Schedule;
    rows: Row[];
  }[] = [
    {
      name: "Europe/Berlin spring-forward: a non-existent 02:30 start moves forward to 03:30 CEST",
      schedule: repeating(["Sun"], "02:30", { durationMinutes: 60 }),
      rows: [
        ["2024-03-31T01:29:59.999Z", 0],
        ["2024-03-31T01:30:00Z", 100], // 03:30 CEST
        ["2024-03-31T02:29:59.999Z", 100],
        ["2024-03-31T02:30:00Z", 0],
      ],
    },
    {
      name: "Europe/Berlin spring-forward: 180 minutes from 01:00 are 3 real hours, to 05:00 CEST",
      schedule: repeating(["Sun"], "01:00", { durationMinutes: 180 }),
      rows: [
        ["2024-03-30T23:59:59.999Z", 0],
        ["2024-03-31T00:00:00Z", 100], // 01:00 CET
        ["2024-03-31T02:59:59.999Z", 100],
        ["2024-03-31T03:00:00Z", 0], // 05:00 CEST
      ],
    },
    {
      name: "Europe/Berlin spring-forward: endTime is wall-clock, 01:00 to 04:00 lasts 2 hours",
      schedule: repeating(["Sun"], "01:00", { endTime: "04:00" }),
      rows: [["2024-03-31T01:59:59.999Z", 100], ["2024-03-31T02:00:00Z", 0]],
    },
    {
      name: "Europe/Berlin fall-back: an ambiguous 02:30 start is the earlier one (CEST)",
      schedule: repeating(["Sun"], "02:30", { durationMinutes: 30 }),
      rows: [
        ["2024-10-27T00:29:59.999Z", 0],
        ["2024-10-27T00:30:00Z", 100], // 02:30 CEST
        ["2024-10-27T01:00:00Z", 0], // 02:00 CET
        ["2024-10-27T01:30:00Z", 0], // 02:30 CET, the second one
      ],
    },
    {
      name: "Europe/Berlin fall-back: 180 minutes from 01:00 CEST end at 03:00 CET",
      schedule: repeating(["Sun"], "01:00", { durationMinutes: 180 }),
      rows: [
        ["2024-10-26T23:00:00Z", 100], // 01:00 CEST
        ["2024-10-27T01:59:59.999Z", 100],
        ["2024-10-27T02:00:00Z", 0], // 03:00 CET
      ],
    },
    {
      name: "Europe/Berlin fall-back: endTime is wall-clock, 01:00 to 04:00 lasts 4 hours",
      schedule: repeating(["Sun"], "01:00", { endTime: "04:00" }),
      rows: [["2024-10-27T02:59:59.999Z", 100], ["2024-10-27T03:00:00Z", 0]],
    },
    {
      name: "America/New_York spring-forward: a non-existent 02:30 start moves to 03:30 EDT",
      schedule: repeating(["Sun"], "02:30", { durationMinutes: 60, timezone: "America/New_York" }),
      rows: [
        ["2024-03-10T07:29:59.999Z", 0],
        ["2024-03-10T07:30:00Z", 100], // 03:30 EDT
        ["2024-03-10T08:29:59.999Z", 100],
        ["2024-03-10T08:30:00Z", 0],
      ],
    },
    {
      name: "America/New_York spring-forward: 180 minutes from 01:00 EST end at 05:00 EDT",
      schedule: repeating(["Sun"], "01:00", { durationMinutes: 180, timezone: "America/New_York" }),
      rows: [
        ["2024-03-10T06:00:00Z", 100], // 01:00 EST
        ["2024-03-10T08:59:59.999Z", 100],
        ["2024-03-10T09:00:00Z", 0], // 05:00 EDT
      ],
    },
    {
      name: "America/New_York fall-back: an ambiguous 01:30 start is the earlier one (EDT)",
      schedule: repeating(["Sun"], "01:30", { durationMinutes: 30, timezone: "America/New_York" }),
      rows: [
        ["2024-11-03T05:30:00Z", 100], // 01:30 EDT
        ["2024-11-03T05:59:59.999Z", 100],
        ["2024-11-03T06:00:00Z", 0], // 01:00 EST
        ["2024-11-03T06:30:00Z", 0], // 01:30 EST, the second one
      ],
    },
    {
      name: "America/New_York fall-back: 180 minutes from 00:00 EDT end at 02:00 EST",
      schedule: repeating(["Sun"], "00:00", { durationMinutes: 180, timezone: "America/New_York" }),
      rows: [
        ["2024-11-03T04:00:00Z", 100], // 00:00 EDT
        ["2024-11-03T06:59:59.999Z", 100],
        ["2024-11-03T07:00:00Z", 0], // 02:00 EST
      ],
    },
  ];
  for (const c of cases) {
    it(c.name, () => assertValues(spec([c.schedule], 0), c.rows));
  }
});

describe("scheduleActive", () => {
  const s = spec([{
    type: "OneTime",
    date: "2024-06-10T10:00:00Z",
    durationMinutes: 60,
    value: 100,
  }]);
  it("is true from the start of the ramp-up to the end of the ramp-down, exclusive", () => {
    const rows: [string, boolean][] = [
      ["2024-06-10T09:49:59.999Z", false],
      ["2024-06-10T09:50:00Z", true], // ramp-up, value still 0
      ["2024-06-10T10:30:00Z", true],
      ["2024-06-10T11:09:59.999Z", true],
      ["2024-06-10T11:10:00Z", false],
    ];
    assert.deepEqual(rows.map(([at]) => [at, scheduleActive(s, ms(at), OPTIONS)]), rows);
  });

  it("counts a Repeating occurrence that started yesterday", () => {
    const late = spec([repeating(["Mon"], "23:00", { durationMinutes: 120 })], 0);
    assert.equal(scheduleActive(late, ms("2024-06-10T22:30:00Z"), OPTIONS), true);
    assert.equal(scheduleActive(late, ms("2024-06-10T23:00:00Z"), OPTIONS), false);
  });
});

describe("scheduleWindows", () => {
  it("lists every occurrence overlapping the range, sorted by start", () => {
    const s = spec([
      repeating(["Mon", "Tue"], "23:00", { durationMinutes: 120, value: 5 }),
      { type: "OneTime", date: "2024-06-11T12:00:00Z", durationMinutes: 30, value: 7 },
    ], 10);
    const got = scheduleWindows(s, {
      ...OPTIONS,
      from: ms("2024-06-10T00:00:00Z"),
      to: ms("2024-06-11T23:59:59Z"),
    }).map((w) => ({
      ...w,
      rampStart: new Date(w.rampStart).toISOString(),
      start: new Date(w.start).toISOString(),
      end: new Date(w.end).toISOString(),
      rampEnd: new Date(w.rampEnd).toISOString(),
    }));
    assert.deepEqual(got, [
      {
        index: 0,
        type: "Repeating",
        value: 5,
        rampStart: "2024-06-10T20:50:00.000Z",
        start: "2024-06-10T21:00:00.000Z",
        end: "2024-06-10T23:00:00.000Z",
        rampEnd: "2024-06-10T23:10:00.000Z",
      },
      {
        index: 1,
        type: "OneTime",
        value: 7,
        rampStart: "2024-06-11T11:50:00.000Z",
        start: "2024-06-11T12:00:00.000Z",
        end: "2024-06-11T12:30:00.000Z",
        rampEnd: "2024-06-11T12:40:00.000Z",
      },
      {
        index: 0,
        type: "Repeating",
        value: 5,
        rampStart: "2024-06-11T20:50:00.000Z",
        start: "2024-06-11T21:00:00.000Z",
        end: "2024-06-11T23:00:00.000Z",
        rampEnd: "2024-06-11T23:10:00.000Z",
      },
    ]);
  });

  it("rejects bad options instead of returning nonsense", () => {
    const s = spec([]);
    const range = { from: 0, to: 0 };
    assert.throws(
      () => scheduleWindows(s, { ...OPTIONS, ...range, rampSteps: 0 }),
      { message: "invalid ramp steps 0 (want a positive integer)" },
    );
    assert.throws(
      () => scheduleWindows(s, { ...OPTIONS, ...range, defaultTimeZone: "Mars/Olympus" }),
      { message: 'unknown default time zone "Mars/Olympus"' },
    );
    assert.throws(
      () => scheduleWindows(s, { ...OPTIONS, ...range, defaultScalingWindowSeconds: -1 }),
      { message: "invalid default scaling window -1s (must not be negative)" },
    );
  });
});

describe("parseScalingSchedule", () => {
  const base = (spec: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    apiVersion: "zalando.org/v1",
    kind: "ScalingSchedule",
    metadata: { name: "peak", namespace: "shop" },
    spec,
    ...extra,
  });

  it("accepts both kinds and keeps metadata and status", () => {
    const obj = parseScalingSchedule(base({
      scalingWindowDurationMinutes: 5,
      schedules: [
        {
          type: "OneTime",
          date: "2024-06-10T10:00:00Z",
          endDate: "2024-06-10T11:00:00.5+02:00",
          value: 3,
        },
        repeating(["Mon"], "09:00", { durationMinutes: 60 }),
      ],
    }, { status: { active: true } }));
    assert.equal(obj.kind, "ScalingSchedule");
    assert.equal(obj.metadata.namespace, "shop");
    assert.equal(obj.status?.active, true);
    assert.equal(obj.spec.scalingWindowDurationMinutes, 5);
    assert.equal(obj.spec.schedules[1].period?.startTime, "09:00");
    const cluster = parseScalingSchedule({
      kind: "ClusterScalingSchedule",
      metadata: { name: "sale", labels: { team: "x" } },
      spec: { schedules: [] },
    });
    assert.equal(cluster.kind, "ClusterScalingSchedule");
    assert.deepEqual(cluster.metadata.labels, { team: "x" });
  });

  const errors: [name: string, input: unknown, message: string][] = [
    [
      "a Repeating schedule without period, naming the field",
      base({ schedules: [{ type: "Repeating", durationMinutes: 10, value: 1 }] }),
      "invalid ScalingSchedule shop/peak: spec.schedules[0].period: required for a Repeating schedule",
    ],
    [
      "a OneTime schedule without date, naming the field",
      base({ schedules: [{ type: "OneTime", durationMinutes: 10, value: 1 }] }),
      "invalid ScalingSchedule shop/peak: spec.schedules[0].date: required for a OneTime schedule",
    ],
    [
      "a missing field is reported together with the schedule's other problems",
      base({ schedules: [{ type: "Repeating", value: 1.5 }] }),
      "invalid ScalingSchedule shop/peak: spec.schedules[0].value: want an integer, got 1.5; " +
      "spec.schedules[0].period: required for a Repeating schedule",
    ],
    [
      "bad day names",
      base({ schedules: [repeating(["Mon", "Tuesday" as "Tue"], "09:00")] }),
      "invalid ScalingSchedule shop/peak: spec.schedules[0].period.days[1]: " +
      'invalid value "Tuesday" (want Sun, Mon, Tue, Wed, Thu, Fri, Sat)',
    ],
    [
      "bad HH:MM",
      base({ schedules: [repeating(["Mon"], "24:00", { endTime: "9:30" })] }),
      'invalid ScalingSchedule shop/peak: spec.schedules[0].period.startTime: invalid time "24:00" ' +
      '(want HH:MM, 00:00 to 23:59); spec.schedules[0].period.endTime: invalid time "9:30" ' +
      "(want HH:MM, 00:00 to 23:59)",
    ],
    [
      "an unknown time zone",
      base({ schedules: [repeating(["Mon"], "09:00", { timezone: "Europe/Atlantis" })] }),
      "invalid ScalingSchedule shop/peak: spec.schedules[0].period.timezone: " +
      'unknown time zone "Europe/Atlantis"',
    ],
    [
      "a negative durationMinutes",
      base({
        schedules: [{
          type: "OneTime",
          date: "2024-06-10T10:00:00Z",
          durationMinutes: -5,
          value: 1,
        }],
      }),
      "invalid ScalingSchedule shop/peak: spec.schedules[0].durationMinutes: must not be negative, got -5",
    ],
    [
      "a negative scalingWindowDurationMinutes",
      base({ scalingWindowDurationMinutes: -1, schedules: [] }),
      "invalid ScalingSchedule shop/peak: spec.scalingWindowDurationMinutes: must not be negative, got -1",
    ],
    [
      "a date that is not RFC3339 with an offset",
      base({
        schedules: [{
          type: "OneTime",
          date: "2024-06-10 10:00",
          endDate: "2024-13-01T00:00:00Z",
          value: 1,
        }],
      }),
      'invalid ScalingSchedule shop/peak: spec.schedules[0].date: invalid date "2024-06-10 10:00" ' +
      "(want RFC3339 with an offset, e.g. 2024-03-31T08:00:00+02:00); spec.schedules[0].endDate: " +
      'invalid date "2024-13-01T00:00:00Z" (want RFC3339 with an offset, e.g. 2024-03-31T08:00:00+02:00)',
    ],
    [
      "an unknown schedule type and a missing value",
      base({ schedules: [{ type: "Weekly" }] }),
      'invalid ScalingSchedule shop/peak: spec.schedules[0].type: invalid value "Weekly" ' +
      "(want OneTime, Repeating); spec.schedules[0].value: required",
    ],
    [
      "a missing spec and name on a ClusterScalingSchedule",
      { kind: "ClusterScalingSchedule", metadata: {} },
      "invalid ClusterScalingSchedule (no name): metadata.name: required; spec: required",
    ],
    [
      "schedules that are not a list, and a wrong apiVersion",
      base({ schedules: { type: "OneTime" } }, { apiVersion: "zalando.org/v2" }),
      'invalid ScalingSchedule shop/peak: apiVersion: invalid value "zalando.org/v2" (want ' +
      "zalando.org/v1); spec.schedules: want a list, got an object",
    ],
    [
      "another kind",
      { kind: "Deployment", metadata: { name: "x" } },
      'invalid ScalingSchedule: kind "Deployment" is neither ScalingSchedule nor ClusterScalingSchedule',
    ],
    ["not an object", "peak", 'invalid ScalingSchedule: expected an object, got "peak"'],
  ];
  for (const [name, input, message] of errors) {
    it(`rejects ${name}`, () => assert.throws(() => parseScalingSchedule(input), { message }));
  }
});

describe("scheduleStatusUpdate", () => {
  const cases: [string, Record<string, unknown> | undefined, boolean, unknown][] = [
    ["writes active: true on an object without status", undefined, true, { active: true }],
    ["writes nothing when inactive and no status says otherwise", undefined, false, null],
    ["writes nothing when active already", { active: true }, true, null],
    ["writes active: false when the window ended", { active: true }, false, { active: false }],
    ["keeps the other status fields", { active: false, x: 1 }, true, { active: true, x: 1 }],
    ["takes a non-boolean active for false", { active: "true" }, true, { active: true }],
  ];
  for (const [name, status, active, want] of cases) {
    it(name, () => assert.deepEqual(scheduleStatusUpdate(status, active), want));
  }
});

const peak = (value: number, averageValue: number): ScheduleMetric => ({
  kind: "ScalingSchedule",
  name: "peak",
  value,
  averageValue,
});

describe("mayNeedAdjustment", () => {
  const cases: [string, ScheduleMetric[], number, number | undefined, boolean][] = [
    ["skips an HPA without status.currentReplicas", [peak(105, 10)], 20, undefined, false],
    ["skips an HPA at 0 replicas", [peak(105, 10)], 20, 0, false],
    ["reads the scale when the status has fewer replicas", [peak(105, 10)], 20, 10, true],
    ["skips when the status has the replicas wanted", [peak(105, 10)], 20, 11, false],
    ["skips when the status has maxReplicas", [peak(105, 10)], 10, 10, false],
    ["skips a wish of one replica", [peak(10, 10)], 20, 1, false],
    ["skips schedules at 0", [peak(0, 10)], 20, 1, false],
    ["skips a zero averageValue", [peak(105, 0)], 20, 1, false],
    ["skips when there are no schedule metrics", [], 20, 1, false],
    ["takes the metric asking for most", [peak(10, 10), peak(30, 10)], 20, 2, true],
  ];
  for (const [name, metrics, maxReplicas, statusReplicas, want] of cases) {
    it(name, () => assert.equal(mayNeedAdjustment(metrics, { maxReplicas, statusReplicas }), want));
  }
});

describe("planAdjustment", () => {
  const cases: [string, number, number, ScheduleMetric[], number | null][] = [
    ["scales up inside the tolerance", 10, 20, [peak(105, 10)], 11],
    ["scales up at exactly 1 + tolerance", 10, 20, [peak(110, 10)], 11],
    ["leaves it to the HPA outside the tolerance", 10, 20, [peak(120, 10)], null],
    ["does nothing when the schedule wants fewer", 10, 20, [peak(90, 10)], null],
    ["does nothing when replicas already match", 11, 20, [peak(105, 10)], null],
    ["caps at maxReplicas", 10, 10, [peak(105, 10)], null],
    ["caps at maxReplicas above current", 20, 21, [peak(210, 10)], 21],
    ["does nothing for zero current replicas", 0, 20, [peak(105, 10)], null],
    ["takes the schedule asking for most replicas", 10, 20, [peak(50, 10), peak(104, 10)], 11],
    ["accepts fractional averageValue", 10, 20, [peak(5.2, 0.5)], 11],
  ];
  for (const [name, current, max, metrics, want] of cases) {
    it(name, () => {
      const got = planAdjustment({
        currentReplicas: current,
        maxReplicas: max,
        tolerance: 0.1,
        metrics,
      });
      assert.equal(got?.replicas ?? null, want);
    });
  }

  it("names the winning metric and the usage ratio", () => {
    const metrics = [peak(50, 10), { ...peak(105, 10), name: "launch" }];
    assert.deepEqual(
      planAdjustment({ currentReplicas: 10, maxReplicas: 20, tolerance: 0.1, metrics }),
      { replicas: 11, metric: metrics[1], usageRatio: 1.05 },
    );
  });
});
