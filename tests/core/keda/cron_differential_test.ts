/**
 * KEDA's cron schedules (src/core/keda/cron.ts) against robfig/cron v3.0.1 itself, the parser
 * KEDA v2.20.2 vendors, built from its Go module (tests/core/keda/robfig, with Go's own zone
 * rules): the same specs and instants, the same next times (DST gaps and overlaps, 30- and
 * 45-minute offsets, leap days) and the same parse errors. Seeded: CRON_DIFF_SEED=<n> replays a
 * run.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import process from "node:process";
import fc from "fast-check";
import { Temporal } from "temporal-polyfill";
import { cronNext, kedaCronState, parseCronSchedule } from "../../../src/core/keda/cron.ts";
import { ensureRobfig } from "./robfig_tool.ts";

interface Case {
  spec: string;
  zone: string;
  at: number;
}

interface Answer {
  next: number | null;
  error?: string;
}

/** robfig's answers to `cases`, in order. */
function robfig(cases: readonly Case[]): Answer[] {
  const r = spawnSync(ensureRobfig(), [], {
    input: cases.map((c) => JSON.stringify(c)).join("\n") + "\n",
    maxBuffer: 64 << 20,
  });
  if (r.status !== 0) throw new Error(`robfig exited with ${r.status}: ${r.stderr}`);
  return r.stdout.toString().trim().split("\n").map((l) => JSON.parse(l) as Answer);
}

function ours(c: Case): Answer {
  try {
    const s = parseCronSchedule(c.spec);
    const next = cronNext(s, Temporal.Instant.fromEpochMilliseconds(c.at), c.zone);
    return { next: next === null ? null : next.epochMilliseconds };
  } catch (e) {
    return { next: null, error: (e as Error).message };
  }
}

// zones with DST at midnight (Sao Paulo until 2019, Havana, Santiago), half-hour DST (Lord
// Howe), 45-minute offsets (Chatham), none (Kolkata, UTC)
const ZONES = [
  "Etc/UTC",
  "Europe/Berlin",
  "America/New_York",
  "America/Sao_Paulo",
  "America/Havana",
  "America/Santiago",
  "Australia/Lord_Howe",
  "Pacific/Chatham",
  "Asia/Kolkata",
];

// instants near this zone set's transitions (2018-2026), and anywhere in those years
const TRANSITIONS = [
  "2018-11-04T02:30:00Z", // Sao Paulo's last midnight gap
  "2019-02-16T02:30:00Z",
  "2025-03-09T06:59:59Z", // New York's gap
  "2025-11-02T05:30:00Z", // New York's overlap
  "2025-03-30T00:59:30Z", // Berlin
  "2025-10-26T00:30:00Z",
  "2025-03-09T04:59:00Z", // Havana's midnight gap
  "2025-04-05T15:20:00Z", // Lord Howe's half hour
  "2025-09-27T13:44:00Z", // Chatham
  "2024-02-28T23:59:59Z", // a leap day
];

const FIELD = (min: number, max: number, names: readonly string[] = []): fc.Arbitrary<string> => {
  const n = fc.integer({ min, max });
  const item = fc.oneof(
    { weight: 4, arbitrary: n.map(String) },
    { weight: 2, arbitrary: fc.tuple(n, n).map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`) },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: 13 }).map((s) => `*/${s}`) },
    {
      weight: 1,
      arbitrary: fc.tuple(n, fc.integer({ min: 1, max: 9 })).map(([a, s]) => `${a}/${s}`),
    },
    ...(names.length > 0 ? [{ weight: 1, arbitrary: fc.constantFrom(...names) }] : []),
  );
  return fc.oneof(
    { weight: 3, arbitrary: fc.constant("*") },
    {
      weight: 5,
      arbitrary: fc.array(item, { minLength: 1, maxLength: 3 }).map((a) => a.join(",")),
    },
  );
};

const SPEC = fc.tuple(
  FIELD(0, 59),
  FIELD(0, 23),
  fc.oneof({ weight: 1, arbitrary: fc.constant("?") }, { weight: 5, arbitrary: FIELD(1, 31) }),
  FIELD(1, 12, ["jan", "Feb", "DEC"]),
  fc.oneof({ weight: 1, arbitrary: fc.constant("?") }, {
    weight: 5,
    arbitrary: FIELD(0, 6, ["Mon", "sun"]),
  }),
).map((f) => f.join(" "));

// specs robfig refuses, and how
const BROKEN = fc.constantFrom(
  "",
  "@hourly",
  "* * * *",
  "0 0 * * * *",
  "60 * * * *",
  "* 24 * * *",
  "* * 0 * *",
  "* * * 13 *",
  "* * * * 7",
  "5-3 * * * *",
  "*/0 * * * *",
  "1-2-3 * * * *",
  "1/2/3 * * * *",
  "x * * * *",
  "-5 * * * *",
  "* * * foo *",
);

const AT = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.tuple(fc.constantFrom(...TRANSITIONS), fc.integer({ min: -7200, max: 7200 }))
      .map(([t, s]) => Date.parse(t) + s * 1000),
  },
  {
    weight: 2,
    arbitrary: fc.integer({
      min: Date.parse("2018-01-01T00:00:00Z"),
      max: Date.parse("2026-12-31T00:00:00Z"),
    }),
  },
);

const CASE = fc.record({
  spec: fc.oneof({ weight: 12, arbitrary: SPEC }, { weight: 1, arbitrary: BROKEN }),
  zone: fc.constantFrom(...ZONES),
  at: AT,
});

const RUNS = process.env.CRON_DIFF_RUNS === undefined ? 4000 : Number(process.env.CRON_DIFF_RUNS);
const SEED = process.env.CRON_DIFF_SEED === undefined ? 47_001 : Number(process.env.CRON_DIFF_SEED);

describe("cron schedules against robfig/cron v3.0.1", () => {
  it("KEDA's test specs and the midnight gaps, exactly", () => {
    const cases: Case[] = [];
    for (
      const spec of [
        "0 0 * * Thu",
        "59 23 * * Thu",
        "0 */2 * * *",
        "0 1-23/2 * * *",
        "0,30 * * * *",
      ]
    ) {
      for (const zone of ZONES) {
        for (const t of TRANSITIONS) cases.push({ spec, zone, at: Date.parse(t) });
      }
    }
    const want = robfig(cases);
    for (const [i, c] of cases.entries()) assert.deepEqual(ours(c), want[i], JSON.stringify(c));
  });

  it(`agrees on ${RUNS} generated cases (CRON_DIFF_SEED=${SEED})`, () => {
    const cases = fc.sample(CASE, { seed: SEED, numRuns: RUNS });
    const want = robfig(cases);
    let compared = 0;
    for (const [i, c] of cases.entries()) {
      const got = ours(c);
      assert.deepEqual(
        got,
        want[i],
        `CRON_DIFF_SEED=${SEED} case ${i}: ${JSON.stringify(c)} ` +
          `(${new Date(c.at).toISOString()}): ours ${JSON.stringify(got)}, robfig ${
            JSON.stringify(want[i])
          }`,
      );
      if (got.next !== null) compared++;
    }
    // most cases must give a next time, or the run proves little
    assert.ok(compared > RUNS / 2, `${compared} next times compared`);
  });
});

describe("KEDA's cron activity", () => {
  const at = (iso: string): Temporal.Instant => Temporal.Instant.from(iso);
  const eightToSix = [parseCronSchedule("0 8 * * 1-5"), parseCronSchedule("0 18 * * 1-5")] as const;

  it("is active inside [start, end) in the trigger's zone", () => {
    const [start, end] = eightToSix;
    // 2026-11-30 is a Monday; New York is UTC-5 then
    assert.equal(kedaCronState(start, end, "America/New_York", at("2026-11-30T12:59:59Z")), false);
    assert.equal(kedaCronState(start, end, "America/New_York", at("2026-11-30T13:00:00Z")), true);
    assert.equal(kedaCronState(start, end, "America/New_York", at("2026-11-30T22:59:59Z")), true);
    assert.equal(kedaCronState(start, end, "America/New_York", at("2026-11-30T23:00:00Z")), false);
    // a Saturday
    assert.equal(kedaCronState(start, end, "America/New_York", at("2026-11-28T15:00:00Z")), false);
  });

  it("says KEDA's words for a zone it does not know", () => {
    const [start, end] = eightToSix;
    assert.throws(() => kedaCronState(start, end, "Not/AZone", at("2026-11-30T12:00:00Z")), {
      message: "unable to load timezone: unknown time zone Not/AZone",
    });
  });
});
