/**
 * Go `time.Duration` strings, as kube-metrics-adapter's flags and annotations use them
 * (`30s`, `1m30s`, `1.5h`, `500ms`). Kept in seconds as a float. The one parser of durations:
 * flags, annotations and collector config all read them here.
 */
import { quote } from "./quote.ts";

/** Nanoseconds per unit, as Go's `time` package counts them. */
const UNIT_NANOS: Readonly<Record<string, bigint>> = {
  ns: 1n,
  us: 1_000n,
  "µs": 1_000n,
  "μs": 1_000n,
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};

/** Go's `time.Duration` is an int64 of nanoseconds: nothing longer exists there. */
const MAX_NANOS = (1n << 63n) - 1n;

/** The longest duration Go can hold (`2562047h47m16.854775807s`), in seconds. */
export const MAX_DURATION_SECONDS = Number(MAX_NANOS) / 1e9;

const DURATION_RE = /^([+-]?)((?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+)$/;
const PART_RE = /(\d*)(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h)/g;

/** Thrown by {@linkcode parseDuration}; `reason` is the message without the value. */
export class DurationError extends Error {
  /** Set the name so logs say what happened. */
  override name = "DurationError";
  /** What is wrong, e.g. `longer than Go's maximum 2562047h47m16.854775807s`. */
  readonly reason: string;

  /** An error with its whole message and its reason. */
  constructor(message: string, reason: string) {
    super(message);
    this.reason = reason;
  }
}

/** What a malformed duration is told. */
const GO_FORM = "use Go's form, e.g. 30s, 1m30s, 1h";

/** What a duration past Go's range is told. */
export const TOO_LONG = "longer than Go's maximum 2562047h47m16.854775807s";

/**
 * Parse a Go duration string into seconds, with Go's `time.ParseDuration` rules and limits:
 * counted in whole nanoseconds (finer fractions are dropped), at most
 * `2562047h47m16.854775807s` ({@linkcode MAX_DURATION_SECONDS}) either way. Throws on anything
 * Go rejects: a bare number other than 0, a missing or unknown unit, an empty string, an
 * overflow (a value that would read as Infinity here).
 *
 * @example
 * ```ts
 * parseDuration("1m30s"); // 90
 * ```
 */
export function parseDuration(input: string): number {
  const s = input.trim();
  if (s === "0" || s === "+0" || s === "-0") return 0;
  const m = DURATION_RE.exec(s);
  if (!m) {
    throw new DurationError(`invalid duration ${quote(input)} (${GO_FORM})`, GO_FORM);
  }
  let total = 0n;
  for (const part of m[2].matchAll(PART_RE)) {
    const unit = UNIT_NANOS[part[3]];
    const whole = part[1] === "" ? 0n : BigInt(part[1]);
    // Go keeps the fraction's digits only as far as they change whole nanoseconds
    const fraction = part[2] ?? "";
    let nanos = whole * unit;
    if (fraction !== "") {
      const scale = 10n ** BigInt(fraction.length);
      nanos += (BigInt(fraction) * unit) / scale;
    }
    total += nanos;
    if (total > MAX_NANOS + 1n) break;
  }
  const limit = m[1] === "-" ? MAX_NANOS + 1n : MAX_NANOS;
  if (total > limit) {
    throw new DurationError(`invalid duration ${quote(input)}: ${TOO_LONG}`, TOO_LONG);
  }
  const seconds = Number(total / 1_000_000_000n) + Number(total % 1_000_000_000n) / 1e9;
  return m[1] === "-" ? -seconds : seconds;
}

/**
 * Format seconds as a Go duration string (`90` -> `1m30s`, `0.5` -> `500ms`, `0` -> `0s`).
 */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) throw new Error(`invalid duration ${seconds}`);
  const sign = seconds < 0 ? "-" : "";
  // whole nanoseconds, as Go counts; a double holds Go's extremes only roughly
  // (the whole seconds apart: multiplying the whole value by 1e9 would round it again)
  const abs = Math.abs(seconds);
  const whole = Math.trunc(abs);
  const ns = BigInt(whole) * 1_000_000_000n + BigInt(Math.round((abs - whole) * 1e9));
  if (ns === 0n) return "0s";
  if (ns > MAX_NANOS) return `${sign}2562047h47m16.85477580${sign ? 8 : 7}s`;
  if (ns < 1_000_000_000n) {
    // as Go: below a second in the largest unit under it
    if (ns < 1_000n) return `${sign}${ns}ns`;
    if (ns < 1_000_000n) return `${sign}${decimal(ns, 1_000n)}µs`;
    return `${sign}${decimal(ns, 1_000_000n)}ms`;
  }
  const h = ns / 3_600_000_000_000n;
  const m = (ns / 60_000_000_000n) % 60n;
  const s = decimal(ns % 60_000_000_000n, 1_000_000_000n);
  return h > 0n ? `${sign}${h}h${m}m${s}s` : m > 0n ? `${sign}${m}m${s}s` : `${sign}${s}s`;
}

/** `value / unit` written in decimal without trailing zeros (`1500000n, 1000000n` -> `1.5`). */
function decimal(value: bigint, unit: bigint): string {
  const whole = value / unit;
  const fraction = value % unit;
  if (fraction === 0n) return String(whole);
  const digits = String(unit).length - 1;
  return `${whole}.${String(fraction).padStart(digits, "0").replace(/0+$/, "")}`;
}
