/**
 * ScalingSchedule and ClusterScalingSchedule (zalando.org/v1): the schemas of the objects and
 * the time-based metric they define, with kube-metrics-adapter's ramp-up and ramp-down.
 *
 * What differs from kube-metrics-adapter, on purpose:
 * - a Repeating occurrence is found on whichever day it started: one that began yesterday and
 *   runs past midnight still counts, and so does a ramp-up that begins before midnight;
 * - `endTime` earlier than `startTime` means that time on the next day;
 * - a schedule without `period` (Repeating) or `date` (OneTime), an unknown time zone, a bad
 *   day name or a negative duration is a validation error naming the field, not a crash or a
 *   silent fallback;
 * - local times are resolved like RFC 5545 and Temporal's `compatible` mode: a start time that
 *   does not exist (skipped by a DST change) moves forward by the length of the gap (02:30 on a
 *   spring-forward day in Europe/Berlin becomes 03:30 CEST), and a start time that happens twice
 *   (fall-back) is the earlier of the two. Durations are elapsed time: 180 minutes is three real
 *   hours even across a DST change, while `endTime` is a wall-clock time.
 */
import { z } from "zod";
import { Temporal } from "temporal-polyfill";

/** The day names of `period.days`, as the CRD spells them. */
export const SCHEDULE_DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"] as const;

/** A day of `period.days`. */
export type ScheduleDay = typeof SCHEDULE_DAYS[number];

/** Temporal's `dayOfWeek` (1 = Monday ... 7 = Sunday) of each day name. */
const ISO_DAY: Record<ScheduleDay, number> = {
  Mon: 1,
  Tue: 2,
  Wed: 3,
  Thu: 4,
  Fri: 5,
  Sat: 6,
  Sun: 7,
};

const HH_MM = /^([01][0-9]|2[0-3]):([0-5][0-9])$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/;

/** True when Temporal (the runtime's time zone database) knows the IANA zone name. */
export function isValidTimeZone(name: string): boolean {
  try {
    new Temporal.ZonedDateTime(0n, name);
    return true;
  } catch {
    return false;
  }
}

function isRfc3339(s: string): boolean {
  if (!RFC3339.test(s)) return false;
  try {
    Temporal.Instant.from(s);
    return true;
  } catch {
    return false;
  }
}

const timeOfDaySchema = z.string().regex(HH_MM, {
  error: (iss) => `invalid time ${JSON.stringify(iss.input)} (want HH:MM, 00:00 to 23:59)`,
});

const dateSchema = z.string().refine(isRfc3339, {
  error: (iss) =>
    `invalid date ${
      JSON.stringify(iss.input)
    } (want RFC3339 with an offset, e.g. 2024-03-31T08:00:00+02:00)`,
});

/** `spec.schedules[].period`: when a Repeating schedule starts, on which days, in which zone. */
export const schedulePeriodSchema = z.object({
  startTime: timeOfDaySchema,
  endTime: timeOfDaySchema.optional(),
  days: z.array(z.enum(SCHEDULE_DAYS)),
  /** IANA zone; empty or missing means the adapter's default time zone. */
  timezone: z.string().refine((tz) => tz === "" || isValidTimeZone(tz), {
    error: (iss) => `unknown time zone ${JSON.stringify(iss.input)}`,
  }).optional(),
});

/** A Repeating schedule's period. */
export type SchedulePeriod = z.infer<typeof schedulePeriodSchema>;

/** One entry of `spec.schedules`. */
export const scheduleSchema = z.object({
  type: z.enum(["OneTime", "Repeating"]),
  period: schedulePeriodSchema.optional(),
  date: dateSchema.optional(),
  endDate: dateSchema.optional(),
  durationMinutes: z.int().min(0).optional(),
  value: z.int(),
}).superRefine((s, ctx) => {
  const missing = missingField(s);
  if (missing) ctx.addIssue({ code: "custom", path: [missing.field], message: missing.message });
});

/** The field a schedule's type requires and lacks (`period` or `date`), if any. */
function missingField(s: unknown): { field: string; message: string } | null {
  if (typeof s !== "object" || s === null) return null;
  const o = s as Record<string, unknown>;
  if (o.type === "Repeating" && o.period === undefined) {
    return { field: "period", message: "required for a Repeating schedule" };
  }
  if (o.type === "OneTime" && o.date === undefined) {
    return { field: "date", message: "required for a OneTime schedule" };
  }
  return null;
}

/** One schedule of a ScalingSchedule. */
export type Schedule = z.infer<typeof scheduleSchema>;

/** `spec` of both kinds. */
export const scalingScheduleSpecSchema = z.object({
  scalingWindowDurationMinutes: z.int().min(0).optional(),
  schedules: z.array(scheduleSchema),
});

/** The spec shared by ScalingSchedule and ClusterScalingSchedule. */
export type ScalingScheduleSpec = z.infer<typeof scalingScheduleSpecSchema>;

const metadataSchema = z.looseObject({
  name: z.string().min(1),
  namespace: z.string().optional(),
});

const statusSchema = z.looseObject({ active: z.boolean().optional() });

function objectSchema<K extends "ScalingSchedule" | "ClusterScalingSchedule">(kind: K) {
  return z.looseObject({
    apiVersion: z.literal("zalando.org/v1").optional(),
    kind: z.literal(kind),
    metadata: metadataSchema,
    spec: scalingScheduleSpecSchema,
    status: statusSchema.optional(),
  });
}

/** A namespaced `ScalingSchedule` object. */
export const scalingScheduleSchema = objectSchema("ScalingSchedule");

/** A cluster-scoped `ClusterScalingSchedule` object. */
export const clusterScalingScheduleSchema = objectSchema("ClusterScalingSchedule");

/** Either kind, as read and validated. */
export type ScalingScheduleObject =
  | z.infer<typeof scalingScheduleSchema>
  | z.infer<typeof clusterScalingScheduleSchema>;

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "an object";
  return JSON.stringify(value);
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const p of path) {
    if (typeof p === "number") out += `[${p}]`;
    else out += out === "" ? String(p) : `.${String(p)}`;
  }
  return out;
}

const EXPECTED: Record<string, string> = {
  int: "an integer",
  number: "a number",
  string: "a string",
  boolean: "true or false",
  object: "an object",
  array: "a list",
};

function issueMessage(issue: z.core.$ZodIssue): string {
  const input = (issue as { input?: unknown }).input;
  switch (issue.code) {
    case "invalid_type":
      if (input === undefined) return "required";
      return `want ${EXPECTED[issue.expected] ?? issue.expected}, got ${describe(input)}`;
    case "too_small":
      if (issue.origin === "string") return "must not be empty";
      return `must not be negative, got ${describe(input)}`;
    case "invalid_value":
      return `invalid value ${describe(input)} (want ${
        issue.values.map((v) => String(v)).join(", ")
      })`;
    default:
      return issue.message;
  }
}

/** "ScalingSchedule ns/name", "ClusterScalingSchedule name", as best the input allows. */
function objectLabel(obj: Record<string, unknown>, kind: string): string {
  const meta = obj.metadata as Record<string, unknown> | undefined;
  const name = typeof meta?.name === "string" && meta.name !== "" ? meta.name : "(no name)";
  const ns = typeof meta?.namespace === "string" && meta.namespace !== "" ? meta.namespace : "";
  return kind === "ScalingSchedule" && ns ? `${kind} ${ns}/${name}` : `${kind} ${name}`;
}

/**
 * Validate a ScalingSchedule or ClusterScalingSchedule object. Throws an `Error` whose message
 * names the object, every bad field (with its path) and the bad value, e.g.
 * `invalid ScalingSchedule default/peak: spec.schedules[0].period: required for a Repeating
 * schedule`.
 *
 * @example
 * ```ts
 * const obj = parseScalingSchedule(manifest);
 * scheduleValue(obj.spec, Date.parse("2024-03-31T08:00:00Z"), {
 *   defaultTimeZone: "Europe/Berlin",
 *   defaultScalingWindowSeconds: 600,
 *   rampSteps: 10,
 * });
 * ```
 */
export function parseScalingSchedule(obj: unknown): ScalingScheduleObject {
  if (typeof obj !== "object" || obj === null || Array.isArray(obj)) {
    throw new Error(`invalid ScalingSchedule: expected an object, got ${describe(obj)}`);
  }
  const o = obj as Record<string, unknown>;
  let schema;
  if (o.kind === "ScalingSchedule") schema = scalingScheduleSchema;
  else if (o.kind === "ClusterScalingSchedule") schema = clusterScalingScheduleSchema;
  else {
    throw new Error(
      `invalid ScalingSchedule: kind ${
        describe(o.kind)
      } is neither ScalingSchedule nor ClusterScalingSchedule`,
    );
  }
  const result = schema.safeParse(obj, { reportInput: true });
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => ({
    path: issue.path,
    text: `${formatPath(issue.path)}: ${issueMessage(issue)}`,
  }));
  // zod skips the refinement of a schedule with other errors: report a missing period or date
  // in the same message anyway, so one round of fixes is enough.
  const schedules = (o.spec as Record<string, unknown> | undefined)?.schedules;
  if (Array.isArray(schedules)) {
    schedules.forEach((s, i) => {
      const missing = missingField(s);
      if (!missing) return;
      const path = ["spec", "schedules", i, missing.field];
      const text = `${formatPath(path)}: ${missing.message}`;
      if (!problems.some((p) => p.text === text)) problems.push({ path, text });
    });
  }
  // Group the problems by schedule, in order (a stable sort on the schedule index).
  const scheduleIndex = (path: readonly PropertyKey[]): number =>
    path[0] === "spec" && path[1] === "schedules" && typeof path[2] === "number" ? path[2] : -1;
  problems.sort((a, b) => scheduleIndex(a.path) - scheduleIndex(b.path));
  throw new Error(`invalid ${objectLabel(o, o.kind)}: ${problems.map((p) => p.text).join("; ")}`);
}

/** How schedules are evaluated: the adapter's defaults (its flags). */
export interface ScheduleOptions {
  /** Zone of Repeating schedules that name none (`--scaling-schedule-default-time-zone`). */
  defaultTimeZone: string;
  /** Ramp window of objects without `scalingWindowDurationMinutes`, in seconds (600). */
  defaultScalingWindowSeconds: number;
  /** Steps of a ramp (`--scaling-schedule-ramp-steps`, 10). */
  rampSteps: number;
}

/** kube-metrics-adapter's defaults of {@linkcode ScheduleOptions}. */
export const DEFAULT_SCHEDULE_OPTIONS: Readonly<ScheduleOptions> = {
  defaultTimeZone: "Europe/Berlin",
  defaultScalingWindowSeconds: 600,
  rampSteps: 10,
};

/** Options of `scheduleWindows`: the defaults plus the time range of interest. */
export interface ScheduleWindowsOptions extends ScheduleOptions {
  /** Start of the range, epoch ms (inclusive). */
  from: number;
  /** End of the range, epoch ms (inclusive). */
  to: number;
}

/**
 * One occurrence of one schedule: the value holds in `[start, end)`; it ramps up in
 * `[rampStart, start)` and down in `[end, rampEnd)`. All times are epoch ms.
 */
export interface ScheduleWindow {
  /** Position of the schedule in `spec.schedules`. */
  index: number;
  type: "OneTime" | "Repeating";
  value: number;
  rampStart: number;
  start: number;
  end: number;
  rampEnd: number;
}

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

function checkOptions(options: ScheduleOptions): void {
  if (!Number.isInteger(options.rampSteps) || options.rampSteps < 1) {
    throw new Error(`invalid ramp steps ${options.rampSteps} (want a positive integer)`);
  }
  if (
    !Number.isFinite(options.defaultScalingWindowSeconds) ||
    options.defaultScalingWindowSeconds < 0
  ) {
    throw new Error(
      `invalid default scaling window ${options.defaultScalingWindowSeconds}s (must not be negative)`,
    );
  }
  if (!isValidTimeZone(options.defaultTimeZone)) {
    throw new Error(`unknown default time zone ${JSON.stringify(options.defaultTimeZone)}`);
  }
}

/** The ramp window of a spec in ms: its own `scalingWindowDurationMinutes`, else the default. */
export function scalingWindowMs(spec: ScalingScheduleSpec, options: ScheduleOptions): number {
  return spec.scalingWindowDurationMinutes !== undefined
    ? spec.scalingWindowDurationMinutes * MINUTE_MS
    : Math.round(options.defaultScalingWindowSeconds * 1000);
}

function parseTimeOfDay(s: string): { hour: number; minute: number } {
  const m = HH_MM.exec(s);
  if (!m) throw new Error(`invalid time ${JSON.stringify(s)} (want HH:MM, 00:00 to 23:59)`);
  return { hour: Number(m[1]), minute: Number(m[2]) };
}

function localDate(epochMs: number, timeZone: string): Temporal.PlainDate {
  return Temporal.Instant.fromEpochMilliseconds(epochMs).toZonedDateTimeISO(timeZone)
    .toPlainDate();
}

function repeatingWindows(
  schedule: Schedule & { period: SchedulePeriod },
  index: number,
  windowMs: number,
  options: ScheduleWindowsOptions,
  out: ScheduleWindow[],
): void {
  const period = schedule.period;
  const timeZone = period.timezone ? period.timezone : options.defaultTimeZone;
  const startTime = parseTimeOfDay(period.startTime);
  const endTime = period.endTime !== undefined ? parseTimeOfDay(period.endTime) : null;
  const endsNextDay = endTime !== null && period.endTime! < period.startTime;
  const durationMs = (schedule.durationMinutes ?? 0) * MINUTE_MS;
  const days = new Set(period.days.map((d) => ISO_DAY[d]));
  if (days.size === 0) return;
  // An occurrence lasts at most max(duration, ~1 day for an endTime on the next day); look back
  // that far plus the ramp, and a day more on each side for zones whose date can step back.
  const spanMs = Math.max(durationMs, DAY_MS + 3 * 3_600_000);
  let day = localDate(options.from - windowMs - spanMs, timeZone).subtract({ days: 1 });
  const last = localDate(options.to + windowMs, timeZone).add({ days: 1 });
  for (; Temporal.PlainDate.compare(day, last) <= 0; day = day.add({ days: 1 })) {
    if (!days.has(day.dayOfWeek)) continue;
    const start = day.toZonedDateTime({ timeZone, plainTime: startTime }).epochMilliseconds;
    let scheduledEnd = start;
    if (endTime !== null) {
      const endDay = endsNextDay ? day.add({ days: 1 }) : day;
      scheduledEnd = endDay.toZonedDateTime({ timeZone, plainTime: endTime }).epochMilliseconds;
    }
    const end = Math.max(scheduledEnd, start + durationMs);
    if (start - windowMs <= options.to && end + windowMs > options.from) {
      out.push({
        index,
        type: "Repeating",
        value: schedule.value,
        rampStart: start - windowMs,
        start,
        end,
        rampEnd: end + windowMs,
      });
    }
  }
}

/**
 * Every occurrence of every schedule of `spec` whose ramps or window overlap
 * `[options.from, options.to]`, sorted by start. Useful to preview a schedule.
 */
export function scheduleWindows(
  spec: ScalingScheduleSpec,
  options: ScheduleWindowsOptions,
): ScheduleWindow[] {
  checkOptions(options);
  const windowMs = scalingWindowMs(spec, options);
  const out: ScheduleWindow[] = [];
  spec.schedules.forEach((schedule, index) => {
    if (schedule.type === "Repeating") {
      if (!schedule.period) throw new Error(`schedule ${index}: period is required`);
      repeatingWindows(
        schedule as Schedule & { period: SchedulePeriod },
        index,
        windowMs,
        options,
        out,
      );
      return;
    }
    if (!schedule.date) throw new Error(`schedule ${index}: date is required`);
    const start = Temporal.Instant.from(schedule.date).epochMilliseconds;
    const scheduledEnd = schedule.endDate
      ? Temporal.Instant.from(schedule.endDate).epochMilliseconds
      : start;
    const end = Math.max(scheduledEnd, start + (schedule.durationMinutes ?? 0) * MINUTE_MS);
    if (start - windowMs <= options.to && end + windowMs > options.from) {
      out.push({
        index,
        type: "OneTime",
        value: schedule.value,
        rampStart: start - windowMs,
        start,
        end,
        rampEnd: end + windowMs,
      });
    }
  });
  return out.sort((a, b) => a.start - b.start || a.index - b.index);
}

/**
 * kube-metrics-adapter's ramp: `progress` in [0, 1] through the ramp window, cut into `steps`
 * buckets; the value of a bucket is truncated to an integer as Go's int64() does.
 */
function rampValue(progress: number, steps: number, value: number): number {
  return Math.trunc(Math.floor(progress * steps) * (value / steps));
}

/**
 * The value of one window at `at` (epoch ms): the full value inside `[start, end)`; on the
 * ramp-up, progress measured from `rampStart`; on the ramp-down, the remaining part of the ramp
 * measured back from `rampEnd` (so the value at `end` is the full value); 0 outside.
 */
export function scheduleWindowValue(window: ScheduleWindow, at: number, rampSteps: number): number {
  if (at >= window.start && at < window.end) return window.value;
  const windowMs = window.start - window.rampStart;
  if (windowMs === 0) return 0;
  if (at >= window.rampStart && at < window.start) {
    return rampValue((at - window.rampStart) / windowMs, rampSteps, window.value);
  }
  if (at >= window.end && at < window.rampEnd) {
    return rampValue((window.rampEnd - at) / windowMs, rampSteps, window.value);
  }
  return 0;
}

/**
 * The metric value of a schedule spec at `at` (epoch ms): the maximum over all schedules (0
 * when none applies), with ramps over the scaling window in `rampSteps` steps.
 *
 * @example
 * ```ts
 * scheduleValue(spec, Date.parse("2024-03-31T08:00:00Z"), {
 *   defaultTimeZone: "Europe/Berlin",
 *   defaultScalingWindowSeconds: 600,
 *   rampSteps: 10,
 * }); // e.g. 100
 * ```
 */
export function scheduleValue(
  spec: ScalingScheduleSpec,
  at: number,
  options: ScheduleOptions,
): number {
  let value = 0;
  for (const w of scheduleWindows(spec, { ...options, from: at, to: at })) {
    value = Math.max(value, scheduleWindowValue(w, at, options.rampSteps));
  }
  return value;
}

/**
 * Whether any schedule of `spec` is active at `at`, ramps included: the meaning of
 * `status.active`.
 */
export function scheduleActive(
  spec: ScalingScheduleSpec,
  at: number,
  options: ScheduleOptions,
): boolean {
  return scheduleWindows(spec, { ...options, from: at, to: at }).some((w) =>
    at >= w.rampStart && at < w.rampEnd
  );
}

/**
 * The status to write on a schedule object whose schedules are `active` now, or null when
 * `status.active` says so already (the other status fields are kept).
 *
 * @example
 * ```ts
 * scheduleStatusUpdate({ active: false }, true); // { active: true }
 * scheduleStatusUpdate({ active: true }, true); // null
 * ```
 */
export function scheduleStatusUpdate(
  status: Readonly<Record<string, unknown>> | undefined,
  active: boolean,
): Record<string, unknown> | null {
  if ((status?.active === true) === active) return null;
  return { ...(status ?? {}), active };
}

/** One schedule metric of an HPA (an Object metric on a schedule object), evaluated. */
export interface ScheduleMetric {
  kind: "ScalingSchedule" | "ClusterScalingSchedule";
  name: string;
  /** The schedule's value now. */
  value: number;
  /** The metric's `target.averageValue`, parsed. */
  averageValue: number;
}

/** Inputs of {@linkcode planAdjustment}. */
export interface AdjustmentInput {
  /** The scale target's current `spec.replicas`. */
  currentReplicas: number;
  maxReplicas: number;
  /** The HPA controller's tolerance (0.1 is its default). */
  tolerance: number;
  metrics: readonly ScheduleMetric[];
}

/** What the adjuster does: scale to `replicas` because of `metric`. */
export interface Adjustment {
  replicas: number;
  metric: ScheduleMetric;
  /** value / (averageValue x currentReplicas), as the HPA controller computes it. */
  usageRatio: number;
}

/**
 * Whether {@linkcode planAdjustment} may scale an HPA's target, judged without reading its
 * scale: the HPA's `status.currentReplicas` must be known and above 0 (as kube-metrics-adapter,
 * which returns at once otherwise: an HPA the controller has not synced yet, or one scaled to
 * zero, has nothing to adjust, and reading its scale every pass only costs requests), and the
 * schedules must ask for at least two replicas (it never scales down) and more than that.
 *
 * @example
 * ```ts
 * const metrics = [{ kind: "ScalingSchedule" as const, name: "peak", value: 105, averageValue: 10 }];
 * mayNeedAdjustment(metrics, { maxReplicas: 20, statusReplicas: 10 }); // true (11 wanted)
 * mayNeedAdjustment(metrics, { maxReplicas: 20, statusReplicas: 11 }); // false
 * mayNeedAdjustment(metrics, { maxReplicas: 20 }); // false (no status yet)
 * ```
 */
export function mayNeedAdjustment(
  metrics: readonly ScheduleMetric[],
  hpa: { maxReplicas: number; statusReplicas?: number },
): boolean {
  let wanted = 0;
  for (const m of metrics) {
    if (m.averageValue > 0 && m.value > 0) {
      wanted = Math.max(wanted, Math.ceil(m.value / m.averageValue));
    }
  }
  wanted = Math.min(wanted, hpa.maxReplicas);
  if (!(wanted >= 2)) return false;
  const current = hpa.statusReplicas;
  return current !== undefined && current > 0 && current < wanted;
}

/**
 * The adjuster's rule. Among the schedule metrics, the one asking for the most replicas,
 * ceil(value / averageValue), wins. If that is more than the current replicas (capped at
 * maxReplicas) while the usage ratio value / (averageValue x current) is at most 1 +
 * tolerance, the HPA controller would not scale, so the adjuster does. Otherwise null.
 *
 * @example
 * ```ts
 * planAdjustment({ currentReplicas: 10, maxReplicas: 20, tolerance: 0.1, metrics: [
 *   { kind: "ScalingSchedule", name: "peak", value: 105, averageValue: 10 },
 * ] }); // { replicas: 11, usageRatio: 1.05, metric: ... }
 * ```
 */
export function planAdjustment(input: AdjustmentInput): Adjustment | null {
  const current = input.currentReplicas;
  if (!(current > 0)) return null;
  let best: ScheduleMetric | null = null;
  let bestReplicas = 0;
  for (const m of input.metrics) {
    if (!(m.averageValue > 0) || !(m.value > 0)) continue;
    const wanted = Math.ceil(m.value / m.averageValue);
    if (wanted > bestReplicas) {
      bestReplicas = wanted;
      best = m;
    }
  }
  if (!best) return null;
  const replicas = Math.min(bestReplicas, input.maxReplicas);
  if (replicas <= current) return null;
  const usageRatio = best.value / (best.averageValue * current);
  // Rounding must not turn 110 / (10 x 10) = 1.1 into "outside a 0.1 tolerance".
  if (usageRatio - 1 > input.tolerance + 1e-9) return null;
  return { replicas, metric: best, usageRatio };
}
