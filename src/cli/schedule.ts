/**
 * `schedule`: evaluate a ScalingSchedule or ClusterScalingSchedule from manifests, offline.
 * `schedule value` prints the metric value at one instant; `schedule preview` prints a table and
 * a bar chart over a time range, so a person can see the ramps before applying the object.
 */
import { SCHEDULE_INFO } from "./command_info.ts";
import { Temporal } from "temporal-polyfill";
import { readManifests } from "../cluster/manifests.ts";
import type { KubeObject } from "../cluster/types.ts";
import { formatDuration } from "../core/duration.ts";
import {
  isValidTimeZone,
  parseScalingSchedule,
  type ScalingScheduleObject,
  type ScalingScheduleSpec,
  scalingWindowMs,
  type ScheduleOptions,
  scheduleValue,
  scheduleWindows,
  scheduleWindowValue,
} from "../core/kube_metrics_adapter/scaling_schedule.ts";
import { type Command, type CommandIO, UsageError } from "./command.ts";
import {
  type FlagDef,
  type FlagValues,
  listFlag,
  numberFlag,
  parseArgs,
  stringFlag,
} from "./flags.ts";

const GROUP = "schedule";
const KINDS = new Set(["ScalingSchedule", "ClusterScalingSchedule"]);
/** Most rows `schedule preview` prints. */
export const MAX_PREVIEW_ROWS = 10_000;
const BAR_WIDTH = 40;
const HOUR_MS = 3_600_000;

const COMMON_FLAGS: FlagDef[] = [
  {
    group: GROUP,
    name: "f",
    type: "stringArray",
    default: [],
    help: "manifest file or folder (repeatable)",
    aliases: ["filename"],
  },
  {
    group: GROUP,
    name: "name",
    type: "string",
    default: null,
    help: "the object to use: NAME or NAMESPACE/NAME",
  },
  {
    group: GROUP,
    name: "scaling-window",
    type: "duration",
    default: 600,
    help: "ramp window of objects without scalingWindowDurationMinutes",
    aliases: ["scaling-schedule-default-scaling-window"],
  },
  {
    group: GROUP,
    name: "ramp-steps",
    type: "int",
    default: 10,
    help: "steps of a ramp",
    aliases: ["scaling-schedule-ramp-steps"],
  },
  {
    group: GROUP,
    name: "default-time-zone",
    type: "string",
    default: "Europe/Berlin",
    help: "time zone of Repeating schedules that name none",
    aliases: ["scaling-schedule-default-time-zone"],
  },
];

const VALUE_FLAGS: FlagDef[] = [
  ...COMMON_FLAGS,
  { group: GROUP, name: "at", type: "string", default: null, help: "RFC3339 time" },
];

const PREVIEW_FLAGS: FlagDef[] = [
  ...COMMON_FLAGS,
  { group: GROUP, name: "from", type: "string", default: null, help: "RFC3339 start" },
  { group: GROUP, name: "to", type: "string", default: null, help: "RFC3339 end (inclusive)" },
  { group: GROUP, name: "step", type: "duration", default: 900, help: "time between rows" },
];

function parseTime(flag: string, raw: string): number {
  try {
    return Temporal.Instant.from(raw).epochMilliseconds;
  } catch {
    throw new UsageError(
      `invalid value "${raw}" for --${flag}: want an RFC3339 time such as 2024-06-10T08:00:00+02:00`,
    );
  }
}

function scheduleOptions(values: FlagValues): ScheduleOptions {
  const rampSteps = numberFlag(values, "ramp-steps");
  if (rampSteps < 1) {
    throw new UsageError(`invalid value "${rampSteps}" for --ramp-steps: want at least 1`);
  }
  const window = numberFlag(values, "scaling-window");
  if (window < 0) {
    throw new UsageError(
      `invalid value "${formatDuration(window)}" for --scaling-window: must not be negative`,
    );
  }
  const defaultTimeZone = stringFlag(values, "default-time-zone") ?? "Europe/Berlin";
  if (!isValidTimeZone(defaultTimeZone)) {
    throw new UsageError(`unknown time zone "${defaultTimeZone}" for --default-time-zone`);
  }
  return { defaultTimeZone, defaultScalingWindowSeconds: window, rampSteps };
}

/** "ScalingSchedule shop/peak" or "ClusterScalingSchedule sale". */
function label(obj: KubeObject): string {
  const ns = obj.kind === "ScalingSchedule" && obj.metadata.namespace
    ? `${obj.metadata.namespace}/`
    : "";
  return `${obj.kind} ${ns}${obj.metadata.name}`;
}

function matchesName(obj: KubeObject, name: string): boolean {
  if (obj.metadata.name === name) return true;
  return obj.kind === "ScalingSchedule" &&
    `${obj.metadata.namespace ?? ""}/${obj.metadata.name}` === name;
}

/** Read the files and pick the one schedule object; null (after printing why) on failure. */
async function loadSchedule(
  values: FlagValues,
  io: CommandIO,
): Promise<ScalingScheduleObject | null> {
  const files = listFlag(values, "f");
  if (files.length === 0) throw new UsageError("missing -f FILE");
  const { objects, errors } = await readManifests(files);
  if (errors.length > 0) {
    for (const e of errors) io.stderr(`${e}\n`);
    return null;
  }
  const where = files.join(", ");
  const schedules = objects.filter((o) => KINDS.has(o.object.kind ?? ""));
  const names = schedules.map((o) => label(o.object)).join(", ");
  if (schedules.length === 0) {
    io.stderr(`no ScalingSchedule or ClusterScalingSchedule in ${where}\n`);
    return null;
  }
  const name = stringFlag(values, "name");
  const chosen = name === null ? schedules : schedules.filter((o) => matchesName(o.object, name));
  if (chosen.length === 0) {
    io.stderr(
      `no ScalingSchedule or ClusterScalingSchedule named "${name}" in ${where} (found: ${names})\n`,
    );
    return null;
  }
  if (chosen.length > 1) {
    const which = chosen.map((o) => label(o.object)).join(", ");
    throw new UsageError(
      name === null
        ? `${where} holds ${chosen.length} schedules, pick one with --name: ${which}`
        : `--name "${name}" matches ${chosen.length} schedules, use NAMESPACE/NAME: ${which}`,
    );
  }
  try {
    return parseScalingSchedule(chosen[0].object);
  } catch (e) {
    io.stderr(`${chosen[0].source}: ${(e as Error).message}\n`);
    return null;
  }
}

/** The zone a person reads the preview in: the first Repeating schedule's, else the default. */
function displayTimeZone(spec: ScalingScheduleSpec, defaultTimeZone: string): string {
  for (const s of spec.schedules) {
    if (s.type === "Repeating" && s.period?.timezone) return s.period.timezone;
  }
  return defaultTimeZone;
}

function formatTime(at: number, timeZone: string, seconds: boolean): string {
  const z = Temporal.Instant.fromEpochMilliseconds(at).toZonedDateTimeISO(timeZone);
  const time = z.toPlainTime().toString({ smallestUnit: seconds ? "second" : "minute" });
  return `${z.toPlainDate().toString()} ${time} ${z.offset}`;
}

function checkArgs(positionals: string[]): void {
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
}

async function runValue(args: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseArgs(args, VALUE_FLAGS);
  checkArgs(positionals);
  const options = scheduleOptions(values);
  const atRaw = stringFlag(values, "at");
  if (atRaw === null) throw new UsageError("missing --at TIME (RFC3339)");
  const at = parseTime("at", atRaw);
  const obj = await loadSchedule(values, io);
  if (obj === null) return 1;
  io.stdout(`${scheduleValue(obj.spec, at, options)}\n`);
  return 0;
}

async function runPreview(args: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseArgs(args, PREVIEW_FLAGS);
  checkArgs(positionals);
  const options = scheduleOptions(values);
  const fromRaw = stringFlag(values, "from");
  const toRaw = stringFlag(values, "to");
  const stepMs = Math.round(numberFlag(values, "step") * 1000);
  if (stepMs <= 0) {
    throw new UsageError(
      `invalid value "${formatDuration(numberFlag(values, "step"))}" for --step: want at least 1ms`,
    );
  }
  const fromGiven = fromRaw === null ? null : parseTime("from", fromRaw);
  const toGiven = toRaw === null ? null : parseTime("to", toRaw);
  const obj = await loadSchedule(values, io);
  if (obj === null) return 1;
  const zone = displayTimeZone(obj.spec, options.defaultTimeZone);
  const from = fromGiven ?? Temporal.Instant.fromEpochMilliseconds(io.now())
    .toZonedDateTimeISO(zone).round({ smallestUnit: "hour", roundingMode: "floor" })
    .epochMilliseconds;
  const to = toGiven ?? from + 24 * HOUR_MS;
  if (to < from) throw new UsageError(`--to ${toRaw} is before --from ${fromRaw ?? "(now)"}`);
  const rows = Math.floor((to - from) / stepMs) + 1;
  if (rows > MAX_PREVIEW_ROWS) {
    throw new UsageError(
      `${rows} rows from --from to --to in steps of ${
        formatDuration(stepMs / 1000)
      }, more than ${MAX_PREVIEW_ROWS}: use a larger --step or a shorter range`,
    );
  }

  const windows = scheduleWindows(obj.spec, { ...options, from, to });
  const seconds = from % 60_000 !== 0 || stepMs % 60_000 !== 0;
  const table: { time: string; value: number; active: boolean }[] = [];
  for (let i = 0; i < rows; i++) {
    const at = from + i * stepMs;
    let value = 0;
    let active = false;
    for (const w of windows) {
      value = Math.max(value, scheduleWindowValue(w, at, options.rampSteps));
      if (at >= w.rampStart && at < w.rampEnd) active = true;
    }
    table.push({ time: formatTime(at, zone, seconds), value, active });
  }

  const max = Math.max(0, ...table.map((r) => r.value));
  const timeWidth = Math.max(4, ...table.map((r) => r.time.length));
  const valueWidth = Math.max(5, ...table.map((r) => String(r.value).length));
  const window = formatDuration(scalingWindowMs(obj.spec, options) / 1000);
  const lines = [
    `${
      label(obj as KubeObject)
    }: times in ${zone}, scaling window ${window}, ${options.rampSteps} ramp steps`,
    `${"TIME".padEnd(timeWidth)}  ${"VALUE".padStart(valueWidth)}  ACTIVE`,
  ];
  for (const r of table) {
    const bar = max > 0 ? "#".repeat(Math.round((Math.max(0, r.value) / max) * BAR_WIDTH)) : "";
    lines.push(
      `${r.time.padEnd(timeWidth)}  ${String(r.value).padStart(valueWidth)}  ${
        (r.active ? "yes" : "no").padEnd(6)
      }  ${bar}`.trimEnd(),
    );
  }
  io.stdout(lines.join("\n") + "\n");
  return 0;
}

/** `schedule value` and `schedule preview`. */
export const scheduleCommand: Command = {
  ...SCHEDULE_INFO,
  async run(args: string[], io: CommandIO): Promise<number> {
    const [sub, ...rest] = args;
    if (sub === "value") return await runValue(rest, io);
    if (sub === "preview") return await runPreview(rest, io);
    if (sub === undefined) throw new UsageError("missing subcommand: value or preview");
    throw new UsageError(`unknown subcommand "${sub}" for schedule: want value or preview`);
  },
};
