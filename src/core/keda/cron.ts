/**
 * The 5-field cron schedules of KEDA's cron trigger, as robfig/cron v3's parser with
 * `Minute | Hour | Dom | Month | Dow` reads them (no seconds, no descriptors): each field a
 * comma-separated list of `*`, `?`, `n`, `a-b`, with an optional `/step`; month and weekday
 * names (case-insensitive) where they apply. Errors in robfig's words.
 *
 * @module
 */
import { Temporal } from "temporal-polyfill";

/** A parsed schedule: for each field, the set of values it matches. */
export interface CronSchedule {
  minutes: ReadonlySet<number>;
  hours: ReadonlySet<number>;
  /** Days of the month, and whether the field was `*` or `?` (robfig's star bit). */
  days: ReadonlySet<number>;
  daysStar: boolean;
  months: ReadonlySet<number>;
  weekdays: ReadonlySet<number>;
  weekdaysStar: boolean;
}

interface Bounds {
  min: number;
  max: number;
  names?: Readonly<Record<string, number>>;
}

const MONTHS: Record<string, number> = {
  jan: 1,
  feb: 2,
  mar: 3,
  apr: 4,
  may: 5,
  jun: 6,
  jul: 7,
  aug: 8,
  sep: 9,
  oct: 10,
  nov: 11,
  dec: 12,
};
const WEEKDAYS: Record<string, number> = { sun: 0, mon: 1, tue: 2, wed: 3, thu: 4, fri: 5, sat: 6 };

const FIELDS: readonly Bounds[] = [
  { min: 0, max: 59 },
  { min: 0, max: 23 },
  { min: 1, max: 31 },
  { min: 1, max: 12, names: MONTHS },
  { min: 0, max: 6, names: WEEKDAYS },
];

/** Go's `strconv.Atoi`, with robfig's words around its error. */
function mustParseInt(expr: string): number {
  if (!/^[+-]?[0-9]+$/.test(expr)) {
    throw new Error(
      `failed to parse int from ${expr}: strconv.Atoi: parsing ${
        JSON.stringify(expr)
      }: invalid syntax`,
    );
  }
  const n = Number(expr);
  if (!Number.isSafeInteger(n) || Math.abs(n) > 9223372036854775807) {
    throw new Error(
      `failed to parse int from ${expr}: strconv.Atoi: parsing ${
        JSON.stringify(expr)
      }: value out of range`,
    );
  }
  if (n < 0) throw new Error(`negative number (${n}) not allowed: ${expr}`);
  return n;
}

function parseIntOrName(expr: string, b: Bounds): number {
  const named = b.names?.[expr.toLowerCase()];
  return named ?? mustParseInt(expr);
}

/** One comma element: its values added to `out`; whether it was a star. */
function getRange(expr: string, b: Bounds, out: Set<number>): boolean {
  const rangeAndStep = expr.split("/");
  const lowAndHigh = rangeAndStep[0].split("-");
  const single = lowAndHigh.length === 1;
  let start: number;
  let end: number;
  let star = false;
  if (lowAndHigh[0] === "*" || lowAndHigh[0] === "?") {
    start = b.min;
    end = b.max;
    star = true;
  } else {
    start = parseIntOrName(lowAndHigh[0], b);
    if (lowAndHigh.length === 1) end = start;
    else if (lowAndHigh.length === 2) end = parseIntOrName(lowAndHigh[1], b);
    else throw new Error(`too many hyphens: ${expr}`);
  }
  let step = 1;
  if (rangeAndStep.length === 2) {
    step = mustParseInt(rangeAndStep[1]);
    if (single) end = b.max;
    if (step > 1) star = false;
  } else if (rangeAndStep.length > 2) throw new Error(`too many slashes: ${expr}`);
  if (start < b.min) {
    throw new Error(`beginning of range (${start}) below minimum (${b.min}): ${expr}`);
  }
  if (end > b.max) throw new Error(`end of range (${end}) above maximum (${b.max}): ${expr}`);
  if (start > end) {
    throw new Error(`beginning of range (${start}) beyond end of range (${end}): ${expr}`);
  }
  if (step === 0) throw new Error(`step of range should be a positive number: ${expr}`);
  for (let v = start; v <= end; v += step) out.add(v);
  return star;
}

/**
 * Parses a 5-field schedule; throws robfig's error (`empty spec string`, `expected exactly 5
 * fields, found 6: [...]`, `failed to parse int from ...`).
 */
export function parseCronSchedule(spec: string): CronSchedule {
  if (spec.length === 0) throw new Error("empty spec string");
  if (spec.startsWith("@")) throw new Error(`parser does not accept descriptors: ${spec}`);
  const fields = spec.split(/[ \t\n\r\v\f]+/).filter((f) => f !== "");
  if (fields.length !== 5) {
    throw new Error(`expected exactly 5 fields, found ${fields.length}: [${fields.join(" ")}]`);
  }
  const sets: Set<number>[] = [];
  const stars: boolean[] = [];
  for (const [i, field] of fields.entries()) {
    const out = new Set<number>();
    let star = false;
    for (const expr of field.split(",")) star = getRange(expr, FIELDS[i], out) || star;
    sets.push(out);
    stars.push(star);
  }
  return {
    minutes: sets[0],
    hours: sets[1],
    days: sets[2],
    daysStar: stars[2],
    months: sets[3],
    weekdays: sets[4],
    weekdaysStar: stars[4],
  };
}

/** Go's `time.Date(...)` in `zone`: a wall time in a gap or an overlap resolved as Go does. */
function goDate(
  zone: string,
  y: number,
  mo: number,
  d: number,
  h: number,
  mi: number,
): Temporal.ZonedDateTime {
  // the wall time normalized (Go's Date carries overflowing days and months over)
  const wall = Temporal.PlainDateTime.from({ year: y, month: 1, day: 1 })
    .add({ months: mo - 1, days: d - 1, hours: h, minutes: mi });
  const asUtc = wall.toZonedDateTime("UTC").epochMilliseconds;
  const offsetAt = (ms: number): number =>
    Temporal.Instant.fromEpochMilliseconds(ms).toZonedDateTimeISO(zone).offsetNanoseconds / 1e6;
  // Go: the offset in effect at the wall time read as UTC; if the instant it gives lies in
  // another period, the offset in effect at that instant
  const first = offsetAt(asUtc);
  let ms = asUtc - first;
  const second = offsetAt(ms);
  if (second !== first) ms = asUtc - second;
  return Temporal.Instant.fromEpochMilliseconds(ms).toZonedDateTimeISO(zone);
}

/**
 * robfig/cron v3's `SpecSchedule.Next` in `zone`: the first time after `after` (rounded up to
 * the next whole second) that the schedule matches, found field by field as robfig walks them
 * (DST included: a day that starts at 01:00 or 23:00 is moved back to its midnight); null when
 * none is found within five years.
 */
export function cronNext(
  s: CronSchedule,
  after: Temporal.Instant,
  zone: string,
): Temporal.Instant | null {
  const ms = after.epochMilliseconds;
  let t = Temporal.Instant.fromEpochMilliseconds(Math.floor(ms / 1000) * 1000 + 1000)
    .toZonedDateTimeISO(zone);
  let added = false;
  const yearLimit = t.year + 5;
  const dayMatches = (z: Temporal.ZonedDateTime): boolean => {
    const dom = s.days.has(z.day);
    const dow = s.weekdays.has(z.dayOfWeek % 7);
    return s.daysStar || s.weekdaysStar ? dom && dow : dom || dow;
  };
  const addHours = (z: Temporal.ZonedDateTime, n: number): Temporal.ZonedDateTime =>
    z.toInstant().add({ hours: n }).toZonedDateTimeISO(zone);
  wrap: for (;;) {
    if (t.year > yearLimit) return null;
    while (!s.months.has(t.month)) {
      if (!added) {
        added = true;
        t = goDate(zone, t.year, t.month, 1, 0, 0);
      }
      t = goDate(zone, t.year, t.month + 1, t.day, t.hour, t.minute);
      if (t.month === 1) continue wrap;
    }
    while (!dayMatches(t)) {
      if (!added) {
        added = true;
        t = goDate(zone, t.year, t.month, t.day, 0, 0);
      }
      t = goDate(zone, t.year, t.month, t.day + 1, t.hour, t.minute);
      if (t.hour !== 0) t = addHours(t, t.hour > 12 ? 24 - t.hour : -t.hour);
      if (t.day === 1) continue wrap;
    }
    while (!s.hours.has(t.hour)) {
      if (!added) {
        added = true;
        t = goDate(zone, t.year, t.month, t.day, t.hour, 0);
      }
      t = addHours(t, 1);
      if (t.hour === 0) continue wrap;
    }
    while (!s.minutes.has(t.minute)) {
      if (!added) {
        added = true;
        const m = Math.floor(t.epochMilliseconds / 60_000) * 60_000;
        t = Temporal.Instant.fromEpochMilliseconds(m).toZonedDateTimeISO(zone);
      }
      t = t.toInstant().add({ minutes: 1 }).toZonedDateTimeISO(zone);
      if (t.minute === 0) continue wrap;
    }
    // the standard parser matches second 0 only
    while (t.second !== 0) {
      if (!added) {
        added = true;
        const sec = Math.floor(t.epochMilliseconds / 1000) * 1000;
        t = Temporal.Instant.fromEpochMilliseconds(sec).toZonedDateTimeISO(zone);
      }
      t = t.toInstant().add({ seconds: 1 }).toZonedDateTimeISO(zone);
      if (t.second === 0) continue wrap;
    }
    return t.toInstant();
  }
}

/**
 * KEDA's cron trigger at `now`: active when the next end comes no later than the next start
 * (inside the window `[start, end)`), its value `desiredReplicas` then, else 0. Throws
 * `unable to load timezone: unknown time zone <zone>` for a zone it does not know.
 */
export function kedaCronState(
  start: CronSchedule,
  end: CronSchedule,
  zone: string,
  now: Temporal.Instant,
): boolean {
  try {
    now.toZonedDateTimeISO(zone);
  } catch {
    throw new Error(`unable to load timezone: unknown time zone ${zone}`);
  }
  const nextStart = cronNext(start, now, zone);
  const nextEnd = cronNext(end, now, zone);
  // Go's zero Time (no next time) is before every other
  const startMs = nextStart?.epochMilliseconds ?? -Infinity;
  const endMs = nextEnd?.epochMilliseconds ?? -Infinity;
  return !(startMs < endMs);
}
