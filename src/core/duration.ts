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
  if (seconds === 0) return "0s";
  const sign = seconds < 0 ? "-" : "";
  let rest = Math.abs(seconds);
  if (rest < 1) {
    const ms = Math.round(rest * 1e6) / 1e3;
    return ms >= 1 ? `${sign}${ms}ms` : `${sign}${Math.round(rest * 1e9)}ns`;
  }
  let out = "";
  const h = Math.floor(rest / 3600);
  if (h > 0) {
    out += `${h}h`;
    rest -= h * 3600;
  }
  const m = Math.floor(rest / 60);
  if (m > 0 || h > 0) {
    out += `${m}m`;
    rest -= m * 60;
  }
  const s = Math.round(rest * 1e9) / 1e9;
  out += `${s}s`;
  return sign + out;
}
