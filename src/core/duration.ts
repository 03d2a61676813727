/**
 * Go `time.Duration` strings, as kube-metrics-adapter's flags and annotations use them
 * (`30s`, `1m30s`, `1.5h`, `500ms`). Kept in seconds as a float.
 */

const UNIT_SECONDS: Record<string, number> = {
  ns: 1e-9,
  us: 1e-6,
  "µs": 1e-6,
  "μs": 1e-6,
  ms: 1e-3,
  s: 1,
  m: 60,
  h: 3600,
};

/**
 * Parse a Go duration string into seconds. Throws on anything Go's `time.ParseDuration`
 * rejects (a bare number other than 0, an unknown unit, an empty string).
 *
 * @example
 * ```ts
 * parseDuration("1m30s"); // 90
 * ```
 */
export function parseDuration(input: string): number {
  const s = input.trim();
  if (s === "0" || s === "+0" || s === "-0") return 0;
  const m = /^([+-]?)((?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+)$/.exec(s);
  if (!m) throw new Error(`invalid duration "${input}" (use Go's form, e.g. 30s, 1m30s, 1h)`);
  let total = 0;
  for (const part of m[2].matchAll(/(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g)) {
    total += Number(part[1]) * UNIT_SECONDS[part[2]];
  }
  return m[1] === "-" ? -total : total;
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
