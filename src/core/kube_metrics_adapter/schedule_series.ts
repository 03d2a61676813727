/**
 * A ScalingSchedule's value over a time range as a step function, for previews and plots (the
 * status page's 24-hour plot, `explain`): the value at the start of the range and every instant
 * where it changes, each ramp step included, computed with the collector's maths
 * (scaling_schedule.ts). Pure: the range is passed in.
 *
 * @module
 */
import {
  type ScalingScheduleSpec,
  scalingWindowMs,
  type ScheduleOptions,
  type ScheduleWindow,
  scheduleWindows,
  scheduleWindowValue,
} from "./scaling_schedule.ts";

/** One step: `value` holds from `at` (epoch ms) until the next step's `at`. */
export interface ScheduleStep {
  at: number;
  value: number;
}

/** Options of {@linkcode scheduleSteps}: the adapter's schedule options and the range. */
export interface ScheduleStepsOptions extends ScheduleOptions {
  /** Start of the range, epoch ms: the first step is there. */
  from: number;
  /** End of the range, epoch ms (inclusive). */
  to: number;
}

/**
 * Ramp boundaries looked at per ramp: a ramp of more steps (`--scaling-schedule-ramp-steps`
 * above this) is sampled at this many evenly spread boundaries, so that the work stays bounded.
 */
export const MAX_RAMP_SAMPLES = 120;

/** The value of the windows at `at`: the largest, 0 when none applies. */
function valueAt(windows: readonly ScheduleWindow[], at: number, rampSteps: number): number {
  let value = 0;
  for (const w of windows) {
    if (at < w.rampStart || at >= w.rampEnd) continue;
    value = Math.max(value, scheduleWindowValue(w, at, rampSteps));
  }
  return value;
}

/**
 * The value of a schedule spec over `[from, to]` as steps: the value at `from`, then one step at
 * every instant where it changes. A ramp changes at its bucket boundaries: a ramp-up at each
 * boundary, a ramp-down one millisecond after it (the value at `end` is still the full value).
 * With ramps of more than {@linkcode MAX_RAMP_SAMPLES} steps, each ramp is sampled at that many
 * boundaries (each listed value is exact; changes between samples are not listed).
 *
 * Throws what `scheduleWindows` throws for invalid options or a spec that does not validate.
 *
 * @example
 * ```ts
 * const spec = { scalingWindowDurationMinutes: 10, schedules: [{ type: "OneTime" as const,
 *   date: "2026-01-01T12:00:00Z", durationMinutes: 10, value: 40 }] };
 * scheduleSteps(spec, { defaultTimeZone: "UTC", defaultScalingWindowSeconds: 600,
 *   rampSteps: 2, from: Date.parse("2026-01-01T11:00:00Z"), to: Date.parse("2026-01-01T13:00:00Z") });
 * // [{ at: 11:00, value: 0 }, { at: 11:55, value: 20 }, { at: 12:00, value: 40 },
 * //  { at: 12:10:00.001, value: 20 }, { at: 12:15:00.001, value: 0 }] (as epoch ms)
 * ```
 */
export function scheduleSteps(
  spec: ScalingScheduleSpec,
  options: ScheduleStepsOptions,
): ScheduleStep[] {
  const { from, to, rampSteps } = options;
  if (!(Number.isFinite(from) && Number.isFinite(to) && to >= from)) {
    throw new Error(`invalid range ${from}..${to}: want finite epoch ms, from <= to`);
  }
  const windows = scheduleWindows(spec, options);
  const windowMs = scalingWindowMs(spec, options);
  const samples = Math.min(rampSteps, MAX_RAMP_SAMPLES);
  const candidates: number[] = [];
  const near = (b: number, sampled = false): void => {
    // a boundary may be fractional, a ramp-down changes a millisecond after it, and float
    // noise may move a change by one more: the milliseconds from it on, each evaluated exactly,
    // find where the value really changes (the value before it is the previous candidate's).
    // A sampled ramp's boundary gets one look, a millisecond after it (its value is exact).
    const f = Math.floor(b);
    for (let t = sampled ? f + 1 : f; t <= f + (sampled ? 1 : 2); t++) {
      if (t > from && t <= to) candidates.push(t);
    }
  };
  for (const w of windows) {
    near(w.start);
    near(w.end);
    const sampled = samples < rampSteps;
    for (let i = 0; i <= samples && windowMs > 0; i++) {
      const k = Math.round(i * rampSteps / samples);
      near(w.rampStart + k * windowMs / rampSteps, sampled && k > 0 && k < rampSteps);
      near(w.end + k * windowMs / rampSteps, sampled && k > 0 && k < rampSteps);
    }
  }
  candidates.sort((a, b) => a - b);
  const steps: ScheduleStep[] = [{ at: from, value: valueAt(windows, from, rampSteps) }];
  let last = from;
  for (const at of candidates) {
    if (at === last) continue;
    last = at;
    const value = valueAt(windows, at, rampSteps);
    if (value !== steps[steps.length - 1].value) steps.push({ at, value });
  }
  return steps;
}

/** A run of changes in one direction: a ramp (several steps) or a single jump. */
export interface ScheduleChange {
  /** When the first change of the run happens, epoch ms. */
  from: number;
  /** When the last one happens (equal to `from` for a jump). */
  to: number;
  /** The value before the run. */
  fromValue: number;
  /** The value after it. */
  value: number;
  /** How many changes it has. */
  steps: number;
}

/**
 * The changes of a step list (from {@linkcode scheduleSteps}) after its first step, a ramp's
 * steps taken together: consecutive changes in the same direction at most `rampStepMs` (plus two
 * milliseconds, for rounding) apart form one change.
 *
 * @example
 * ```ts
 * scheduleChanges([{ at: 0, value: 0 }, { at: 60_000, value: 20 }, { at: 120_000, value: 40 },
 *   { at: 900_000, value: 0 }], 60_000);
 * // [{ from: 60000, to: 120000, fromValue: 0, value: 40, steps: 2 },
 * //  { from: 900000, to: 900000, fromValue: 40, value: 0, steps: 1 }]
 * ```
 */
export function scheduleChanges(
  steps: readonly ScheduleStep[],
  rampStepMs: number,
): ScheduleChange[] {
  const out: ScheduleChange[] = [];
  let run: ScheduleChange | null = null;
  for (let i = 1; i < steps.length; i++) {
    const prev = steps[i - 1];
    const s = steps[i];
    const up = s.value > prev.value;
    if (
      run !== null && (run.value > run.fromValue) === up && s.at - run.to <= rampStepMs + 2
    ) {
      run.to = s.at;
      run.value = s.value;
      run.steps++;
      continue;
    }
    run = { from: s.at, to: s.at, fromValue: prev.value, value: s.value, steps: 1 };
    out.push(run);
  }
  return out;
}

/**
 * The most time between two listed steps of one ramp in ms: the scaling window divided by the
 * ramp steps, or by the samples of a sampled ramp (0 without a ramp). What
 * {@linkcode scheduleChanges} takes.
 *
 * @example
 * ```ts
 * rampStepMs(600_000, 10); // 60000
 * ```
 */
export function rampStepMs(windowMs: number, rampSteps: number): number {
  if (!(rampSteps >= 1)) return windowMs;
  return windowMs * Math.ceil(rampSteps / Math.min(rampSteps, MAX_RAMP_SAMPLES)) / rampSteps;
}
