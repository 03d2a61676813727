/**
 * The replica guard: estafette-k8s-hpa-scaler's annotations on an HPA, read and decided the way
 * that controller does, so its users can drop it and keep their annotations. For an HPA with
 * `estafette.io/hpa-scaler: "true"`, the guard sets `spec.minReplicas` to the larger of
 * `ceil(delta + value / requests-per-replica)` (from a Prometheus query) and a cap on each
 * scale-down (`status.currentReplicas` less `floor(currentReplicas x scale-down-max-ratio)`),
 * never below a lower bound, and raises `maxReplicas` to `minReplicas + 1` when it reaches it.
 *
 * Numbers are read with Go's `strconv.ParseFloat` and `strconv.ParseInt(s, 0, 32)` rules, the
 * maths is float64 in upstream's order, and the state annotation is the JSON Go's
 * `encoding/json` writes, keys in upstream's order.
 *
 * What differs from estafette-k8s-hpa-scaler, on purpose (bugs it has):
 * - (D1) a query value that is NaN or ±Inf, or a query minimum outside the int32 range, is an
 *   error (nothing is written), where upstream converts it to an undefined int32;
 * - (D2) a scale-down ratio that is not finite or outside [0, 1] counts as 1 (no cap), with a
 *   warning, where upstream lets a negative ratio raise minReplicas on every pass;
 * - (D3) the deployment-in-progress check counts the ReplicaSets of the HPA's namespace only,
 *   with the HPA's `app` label, or without one those controlled by the scale target, where
 *   upstream matches across namespaces and, through a loop-variable pointer, reads only the last
 *   ReplicaSet of the cluster;
 * - a malformed Prometheus response (a value that is not a string among others) is an error
 *   whose message says what is wrong, where upstream logs a Go error or panics;
 * - `lastUpdated` is UTC (`Z`), where upstream writes the controller's local time.
 *
 * @module
 */
import type { PromQLScoper } from "../kube_metrics_adapter/collector_config.ts";
import { checkEndpoint, type EndpointPolicy } from "../endpoint_policy.ts";
import { quote, shortenValues } from "../quote.ts";

/** The master switch: the guard acts only when this is exactly `"true"`. */
export const ESTAFETTE_ENABLED_ANNOTATION = "estafette.io/hpa-scaler";
/** The PromQL query whose first series gives the request rate (used verbatim). */
export const ESTAFETTE_QUERY_ANNOTATION = "estafette.io/hpa-scaler-prometheus-query";
/** Requests one replica takes (default 1); the query runs only when it is above 0. */
export const ESTAFETTE_REQUESTS_PER_REPLICA_ANNOTATION =
  "estafette.io/hpa-scaler-requests-per-replica";
/** Added to `value / requests-per-replica` before the ceiling (default 0). */
export const ESTAFETTE_DELTA_ANNOTATION = "estafette.io/hpa-scaler-delta";
/** A per-HPA Prometheus URL, used instead of the default one. */
export const ESTAFETTE_SERVER_URL_ANNOTATION = "estafette.io/hpa-scaler-prometheus-server-url";
/** The share of the current replicas one scale-down may remove, 0 to 1 (default 1: no cap). */
export const ESTAFETTE_SCALE_DOWN_MAX_RATIO_ANNOTATION =
  "estafette.io/hpa-scaler-scale-down-max-ratio";
/** `"true"`: no scale-down cap while the workload has more than one non-empty ReplicaSet. */
export const ESTAFETTE_DEPLOYMENT_CHECKING_ANNOTATION =
  "estafette.io/hpa-scaler-enable-scale-down-ratio-deployment-checking";
/** Written by the guard with each change (JSON); never read. */
export const ESTAFETTE_STATE_ANNOTATION = "estafette.io/hpa-scaler-state";

/** The annotations the guard reads, in upstream's order. */
export const ESTAFETTE_ANNOTATIONS: readonly string[] = [
  ESTAFETTE_ENABLED_ANNOTATION,
  ESTAFETTE_QUERY_ANNOTATION,
  ESTAFETTE_REQUESTS_PER_REPLICA_ANNOTATION,
  ESTAFETTE_DELTA_ANNOTATION,
  ESTAFETTE_SERVER_URL_ANNOTATION,
  ESTAFETTE_SCALE_DOWN_MAX_RATIO_ANNOTATION,
  ESTAFETTE_DEPLOYMENT_CHECKING_ANNOTATION,
];

/** The environment variable upstream reads the lower bound from. */
export const LOWER_BOUND_ENV = "MINIMUM_REPLICAS_LOWER_BOUND";
/** The lower bound when none (or an invalid one) is set. */
export const DEFAULT_LOWER_BOUND = 3;

const MAX_INT32 = 2_147_483_647;
const MIN_INT32 = -2_147_483_648;

// ---------------------------------------------------------------------------------------------
// Go's strconv number syntax

/** Go's two strconv errors, in its own words. */
type GoNumberError = "invalid syntax" | "value out of range";
const SYNTAX: GoNumberError = "invalid syntax";
const RANGE: GoNumberError = "value out of range";

function isDigit(c: string): boolean {
  return c >= "0" && c <= "9";
}

/** ASCII-only lower case, as Go's strconv compares prefixes and exponent letters. */
function lowerAscii(c: string | undefined): string {
  return c !== undefined && c >= "A" && c <= "Z"
    ? String.fromCharCode(c.charCodeAt(0) + 32)
    : c ?? "";
}

function isHexLetter(c: string): boolean {
  const l = lowerAscii(c);
  return l >= "a" && l <= "f" && l.length === 1;
}

/**
 * Go's rule for `_` in a number literal: only between digits, or between a base prefix and a
 * digit (checked on the whole literal, sign included).
 */
function underscoresOk(literal: string): boolean {
  let s = literal;
  if (s[0] === "+" || s[0] === "-") s = s.slice(1);
  // "^" start, "0" digit or base prefix, "_" underscore, "!" anything else
  let saw = "^";
  let i = 0;
  let hex = false;
  const prefix = lowerAscii(s[1]);
  if (s.length >= 2 && s[0] === "0" && (prefix === "b" || prefix === "o" || prefix === "x")) {
    i = 2;
    saw = "0";
    hex = prefix === "x";
  }
  for (; i < s.length; i++) {
    const c = s[i];
    if (isDigit(c) || (hex && isHexLetter(c))) {
      saw = "0";
      continue;
    }
    if (c === "_") {
      if (saw !== "0") return false;
      saw = "_";
      continue;
    }
    if (saw === "_") return false;
    saw = "!";
  }
  return saw !== "_";
}

const INFINITY_RE = /^[+-]?[iI][nN][fF](?:[iI][nN][iI][tT][yY])?$/;
const NAN_RE = /^[nN][aA][nN]$/;

/** The float64 nearest to `m x 2^e2` (ties to even), or null when it overflows. */
function binaryToFloat(hexDigits: string, e2: number): number | null {
  const digits = hexDigits.replace(/^0+/, "");
  if (digits === "") return 0;
  const m = BigInt("0x" + digits);
  const bits = 4 * (digits.length - 1) + (parseInt(digits[0], 16)).toString(2).length;
  // value = n x 2^k with n < 2^53 (53 bits of a normal number; fewer below 2^-1022)
  let k = Math.max(bits + e2 - 53, -1074);
  let n: bigint;
  const shift = k - e2;
  if (shift <= 0) n = m << BigInt(-shift);
  else {
    const s = BigInt(shift);
    n = m >> s;
    const rest = m - (n << s);
    const half = 1n << (s - 1n);
    if (rest > half || (rest === half && (n & 1n) === 1n)) n += 1n;
  }
  if (n === 0n) return 0;
  if (n === 1n << 53n) {
    n >>= 1n;
    k += 1;
  }
  const view = new DataView(new ArrayBuffer(8));
  if (n >= 1n << 52n) {
    const biased = k + 52 + 1023;
    if (biased >= 2047) return null;
    view.setBigUint64(0, (BigInt(biased) << 52n) | (n - (1n << 52n)));
  } else {
    view.setBigUint64(0, n); // subnormal: k is -1074
  }
  return view.getFloat64(0);
}

/** Go's `strconv.ParseFloat(s, 64)`: the value, or the error Go reports. */
function goFloat(s: string): number | GoNumberError {
  if (INFINITY_RE.test(s)) return s[0] === "-" ? -Infinity : Infinity;
  if (NAN_RE.test(s)) return NaN;
  const n = s.length;
  let i = 0;
  let negative = false;
  if (s[i] === "+") i++;
  else if (s[i] === "-") {
    negative = true;
    i++;
  }
  let hex = false;
  if (i + 2 < n && s[i] === "0" && lowerAscii(s[i + 1]) === "x") {
    hex = true;
    i += 2;
  }
  let digits = "";
  let fractionDigits = 0;
  let sawDot = false;
  let underscores = false;
  for (; i < n; i++) {
    const c = s[i];
    if (c === "_") {
      underscores = true;
      continue;
    }
    if (c === ".") {
      if (sawDot) break;
      sawDot = true;
      continue;
    }
    if (isDigit(c) || (hex && isHexLetter(c))) {
      digits += c;
      if (sawDot) fractionDigits++;
      continue;
    }
    break;
  }
  if (digits === "") return SYNTAX;
  let exponent = 0;
  if (i < n && lowerAscii(s[i]) === (hex ? "p" : "e")) {
    i++;
    if (i >= n) return SYNTAX;
    let sign = 1;
    if (s[i] === "+") i++;
    else if (s[i] === "-") {
      sign = -1;
      i++;
    }
    if (i >= n || !isDigit(s[i])) return SYNTAX;
    let e = 0;
    for (; i < n && (isDigit(s[i]) || s[i] === "_"); i++) {
      if (s[i] === "_") {
        underscores = true;
        continue;
      }
      // Go stops reading exponent digits once it is at 10000 (the value is 0 or Inf by then)
      if (e < 10_000) e = e * 10 + (s.charCodeAt(i) - 48);
    }
    exponent = sign * e;
  } else if (hex) {
    return SYNTAX; // a hex float needs its p exponent
  }
  if (i !== n) return SYNTAX;
  if (underscores && !underscoresOk(s)) return SYNTAX;
  if (hex) {
    const v = binaryToFloat(digits, exponent - 4 * fractionDigits);
    if (v === null) return RANGE;
    return negative ? -v : v;
  }
  // the decimal is rounded to nearest, ties to even, by both Go and the JS number grammar
  const v = Number(`${negative ? "-" : ""}${digits}e${exponent - fractionDigits}`);
  return Number.isFinite(v) ? v : RANGE;
}

/** Go's `strconv.ParseInt(s, 0, 32)`: the value, or the error Go reports. */
function goInt32(s: string): number | GoNumberError {
  let u = s;
  let negative = false;
  if (u[0] === "+") u = u.slice(1);
  else if (u[0] === "-") {
    negative = true;
    u = u.slice(1);
  }
  if (u === "") return SYNTAX;
  let base = 10;
  let digits = u;
  if (u[0] === "0") {
    const prefix = u.length >= 3 ? lowerAscii(u[1]) : "";
    base = prefix === "b" ? 2 : prefix === "o" ? 8 : prefix === "x" ? 16 : 8;
    digits = prefix === "b" || prefix === "o" || prefix === "x" ? u.slice(2) : u.slice(1);
  }
  let value = 0;
  let underscores = false;
  for (let i = 0; i < digits.length; i++) {
    const c = digits[i];
    if (c === "_") {
      underscores = true;
      continue;
    }
    const l = lowerAscii(c);
    let d: number;
    if (isDigit(c)) d = c.charCodeAt(0) - 48;
    else if (l >= "a" && l <= "z" && l.length === 1) d = l.charCodeAt(0) - 87;
    else return SYNTAX;
    if (d >= base) return SYNTAX;
    value = value * base + d;
    if (value > 0xffff_ffff) return RANGE; // ParseUint's 32-bit range, checked digit by digit
  }
  if (underscores && !underscoresOk(u)) return SYNTAX;
  if (negative ? value > -MIN_INT32 : value > MAX_INT32) return RANGE;
  return negative ? 0 - value : value;
}

/**
 * A number read as Go's `strconv.ParseFloat(s, 64)` reads it: decimal (`1e3`, `+1.5`, `.5`,
 * `5.`) and hexadecimal (`0x1p-2`, `0x1.8p1`) literals, `_` between digits, `Inf`,
 * `Infinity` and `NaN` in any case (a sign on Inf only); no spaces. Underflow gives 0.
 *
 * Throws on invalid syntax and on a value beyond the float64 range.
 *
 * @example
 * ```ts
 * parseGoFloat("0x1p-2"); // 0.25
 * parseGoFloat("1_000.5"); // 1000.5
 * parseGoFloat("-Inf"); // -Infinity
 * parseGoFloat("1,5"); // throws: invalid float "1,5": invalid syntax
 * ```
 */
export function parseGoFloat(s: string): number {
  const v = goFloat(s);
  if (typeof v === "string") throw new Error(`invalid float ${quote(s)}: ${v}`);
  return v;
}

/**
 * An integer read as Go's `strconv.ParseInt(s, 0, 32)` reads it: an optional sign, then
 * decimal, `0x`/`0o`/`0b` (any case) or a leading `0` for octal; `_` only between digits or
 * after a prefix; the int32 range.
 *
 * Throws on invalid syntax and on a value outside the int32 range.
 *
 * @example
 * ```ts
 * parseGoInt32("0x10"); // 16
 * parseGoInt32("010"); // 8
 * parseGoInt32("08"); // throws: invalid integer "08": invalid syntax
 * ```
 */
export function parseGoInt32(s: string): number {
  const v = goInt32(s);
  if (typeof v === "string") throw new Error(`invalid integer ${quote(s)}: ${v}`);
  return v;
}

/** The lower bound, and why the value given was not used. */
export interface ParsedLowerBound {
  lowerBound: number;
  /** Set when a value was given and is not an int32: the default is used. */
  warning?: string;
}

/**
 * The lower bound of every guarded HPA's minReplicas, from `MINIMUM_REPLICAS_LOWER_BOUND` (or a
 * flag): Go's `strconv.ParseInt(value, 0, 32)`; the default 3 when unset, empty or invalid (with
 * a warning for an invalid one). 0 and negative values are valid.
 *
 * @example
 * ```ts
 * parseLowerBound("0x10"); // { lowerBound: 16 }
 * parseLowerBound(undefined); // { lowerBound: 3 }
 * parseLowerBound("five");
 * // { lowerBound: 3, warning: 'invalid MINIMUM_REPLICAS_LOWER_BOUND "five": invalid syntax, using the default 3' }
 * ```
 */
export function parseLowerBound(
  value: string | undefined,
  name: string = LOWER_BOUND_ENV,
): ParsedLowerBound {
  if (value === undefined || value === "") return { lowerBound: DEFAULT_LOWER_BOUND };
  const v = goInt32(value);
  if (typeof v === "number") return { lowerBound: v };
  return {
    lowerBound: DEFAULT_LOWER_BOUND,
    warning: `invalid ${name} ${quote(value)}: ${v}, using the default ${DEFAULT_LOWER_BOUND}`,
  };
}

// ---------------------------------------------------------------------------------------------
// Go's encoding/json output

/**
 * A float64 as Go's `encoding/json` writes it: the shortest digits that read back the same,
 * exponent form below 1e-6 and from 1e21 (`1e+21`, `1e-7`), and `-0` for negative zero (the
 * same as JavaScript's `String`, but for that zero).
 *
 * Throws for NaN and ±Inf, which JSON cannot hold (Go's `json.Marshal` fails on them too).
 *
 * @example
 * ```ts
 * formatGoJsonFloat(2.5); // "2.5"
 * formatGoJsonFloat(1e21); // "1e+21"
 * formatGoJsonFloat(-0); // "-0"
 * ```
 */
export function formatGoJsonFloat(x: number): string {
  if (!Number.isFinite(x)) throw new Error(`json: unsupported value: ${goFloatText(x)}`);
  return Object.is(x, -0) ? "-0" : String(x);
}

/** A float64 in messages: Go's spelling of the special values, JSON's of the others. */
function goFloatText(x: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (x === Infinity) return "+Inf";
  if (x === -Infinity) return "-Inf";
  return Object.is(x, -0) ? "-0" : String(x);
}

/**
 * A string as Go's `encoding/json` writes it: `<`, `>`, `&`, U+2028 and U+2029 as `\u` escapes,
 * control characters as `\b \f \n \r \t` or `\u00xx`, other characters as they are; an unpaired
 * surrogate (invalid UTF-8 in Go) becomes U+FFFD.
 */
function goJsonString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22) out += '\\"';
    else if (c === 0x5c) out += "\\\\";
    else if (c < 0x20) {
      const short = SHORT_ESCAPES[c];
      out += short ?? `\\u00${c.toString(16).padStart(2, "0")}`;
    } else if (c === 0x3c || c === 0x3e || c === 0x26 || c === 0x2028 || c === 0x2029) {
      out += `\\u${c.toString(16).padStart(4, "0")}`;
    } else if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        out += s[i] + s[i + 1];
        i++;
      } else out += "\ufffd";
    } else if (c >= 0xdc00 && c <= 0xdfff) out += "\ufffd";
    else out += s[i];
  }
  return out + '"';
}

const SHORT_ESCAPES: Readonly<Record<number, string>> = {
  0x08: "\\b",
  0x0c: "\\f",
  0x0a: "\\n",
  0x0d: "\\r",
  0x09: "\\t",
};

// ---------------------------------------------------------------------------------------------
// The configuration

/** The guard's configuration of one HPA, from its annotations. */
export interface GuardConfig {
  /** `estafette.io/hpa-scaler` is exactly `"true"`. */
  enabled: boolean;
  /** The query, verbatim; `""` when absent (no query minimum). */
  prometheusQuery: string;
  /** Parsed; 1 when absent or invalid. May be NaN or ±Inf (Go accepts them). */
  requestsPerReplica: number;
  /** Parsed; 0 when absent or invalid. May be NaN or ±Inf (Go accepts them). */
  delta: number;
  /** The per-HPA annotation verbatim when present (even empty), else the default URL. */
  prometheusServerUrl: string;
  /** Where `prometheusServerUrl` comes from: the HPA's annotation or the default. */
  prometheusServerUrlSource: "annotation" | "default";
  /** The effective ratio, in [0, 1]: 1 when absent, invalid or out of range. */
  scaleDownMaxRatio: number;
  /** `estafette.io/hpa-scaler-enable-scale-down-ratio-deployment-checking` is exactly `"true"`. */
  deploymentChecking: boolean;
  /** That annotation verbatim, `"false"` when absent: upstream writes it so to the state. */
  deploymentCheckingValue: string;
}

/** Options of {@linkcode parseGuardConfig}. */
export interface GuardConfigOptions {
  /**
   * The Prometheus URL of HPAs without the per-HPA annotation (the guard's flag, else
   * `PROMETHEUS_SERVER_URL`, else the adapter's Prometheus).
   */
  defaultPrometheusUrl: string;
}

/** The result of {@linkcode parseGuardConfig}. */
export interface ParsedGuardConfig {
  config: GuardConfig;
  /** Values that were not used as written, and settings that cannot work; one line each. */
  warnings: string[];
}

function hasOwn(map: Readonly<Record<string, string>>, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(map, key);
}

/**
 * Read an HPA's `estafette.io/hpa-scaler*` annotations with upstream's defaults and rules: the
 * switches count only when exactly `"true"`; numbers are Go floats (`parseGoFloat`), and one
 * that does not parse gives the default with a warning; a ratio that is not finite or outside
 * [0, 1] counts as 1 (no cap), with a warning (D2). Warnings also name a switch that is neither
 * `"true"` nor `"false"`, a query that cannot run (requests-per-replica not above 0, an empty
 * server URL), and a requests-per-replica or delta that is not finite (the state annotation
 * cannot hold it, so the guard never writes that HPA, as upstream). They are computed for a
 * disabled HPA too.
 *
 * @example
 * ```ts
 * parseGuardConfig({
 *   "estafette.io/hpa-scaler": "true",
 *   "estafette.io/hpa-scaler-prometheus-query": "sum(rate(requests_total[5m]))",
 *   "estafette.io/hpa-scaler-requests-per-replica": "2.5",
 *   "estafette.io/hpa-scaler-delta": "-0.5",
 *   "estafette.io/hpa-scaler-scale-down-max-ratio": "1.5",
 * }, { defaultPrometheusUrl: "http://prometheus:9090" });
 * // { config: { enabled: true, requestsPerReplica: 2.5, delta: -0.5, scaleDownMaxRatio: 1, ... },
 * //   warnings: ['invalid estafette.io/hpa-scaler-scale-down-max-ratio "1.5": want a number from 0 to 1, using 1 (no scale-down cap)'] }
 * ```
 */
export function parseGuardConfig(
  annotations: Readonly<Record<string, string>> | undefined,
  options: GuardConfigOptions,
): ParsedGuardConfig {
  const a = annotations ?? {};
  const get = (key: string): string | undefined => hasOwn(a, key) ? a[key] : undefined;
  const warnings: string[] = [];

  const switchOn = (key: string, what: string): boolean => {
    const v = get(key);
    if (v !== undefined && v !== "true" && v !== "false") {
      warnings.push(`${key} ${quote(v)} is not "true": ${what} is off (only "true" turns it on)`);
    }
    return v === "true";
  };
  const number = (key: string, fallback: number): number => {
    const v = get(key);
    if (v === undefined) return fallback;
    const parsed = goFloat(v);
    if (typeof parsed === "number") return parsed;
    const why = parsed === SYNTAX ? "not a number" : "beyond the float64 range";
    warnings.push(`invalid ${key} ${quote(v)}: ${why}, using the default ${fallback}`);
    return fallback;
  };

  const enabled = switchOn(ESTAFETTE_ENABLED_ANNOTATION, "the guard");
  const prometheusQuery = get(ESTAFETTE_QUERY_ANNOTATION) ?? "";
  const requestsPerReplica = number(ESTAFETTE_REQUESTS_PER_REPLICA_ANNOTATION, 1);
  const delta = number(ESTAFETTE_DELTA_ANNOTATION, 0);

  const urlValue = get(ESTAFETTE_SERVER_URL_ANNOTATION);
  const prometheusServerUrl = urlValue ?? options.defaultPrometheusUrl;

  let scaleDownMaxRatio = number(ESTAFETTE_SCALE_DOWN_MAX_RATIO_ANNOTATION, 1);
  if (!(Number.isFinite(scaleDownMaxRatio) && scaleDownMaxRatio >= 0 && scaleDownMaxRatio <= 1)) {
    const v = get(ESTAFETTE_SCALE_DOWN_MAX_RATIO_ANNOTATION) ?? "";
    warnings.push(
      `invalid ${ESTAFETTE_SCALE_DOWN_MAX_RATIO_ANNOTATION} ${
        quote(v)
      }: want a number from 0 to 1, using 1 (no scale-down cap)`,
    );
    scaleDownMaxRatio = 1;
  }

  const deploymentCheckingValue = get(ESTAFETTE_DEPLOYMENT_CHECKING_ANNOTATION) ?? "false";
  const deploymentChecking = switchOn(
    ESTAFETTE_DEPLOYMENT_CHECKING_ANNOTATION,
    "deployment checking",
  );

  if (prometheusQuery !== "") {
    if (!(requestsPerReplica > 0)) {
      const v = get(ESTAFETTE_REQUESTS_PER_REPLICA_ANNOTATION) ?? "";
      warnings.push(
        `${ESTAFETTE_REQUESTS_PER_REPLICA_ANNOTATION} ${
          quote(v)
        } is not above 0: the query is not run`,
      );
    } else if (urlValue === "") {
      warnings.push(`${ESTAFETTE_SERVER_URL_ANNOTATION} is empty: the query cannot run`);
    }
  }
  for (
    const [key, value] of [
      [ESTAFETTE_REQUESTS_PER_REPLICA_ANNOTATION, requestsPerReplica],
      [ESTAFETTE_DELTA_ANNOTATION, delta],
    ] as const
  ) {
    if (!Number.isFinite(value)) {
      warnings.push(
        `${key} ${
          quote(get(key) ?? "")
        } is not a finite number: the ${ESTAFETTE_STATE_ANNOTATION} ` +
          `annotation cannot hold it, so the guard never changes this HPA`,
      );
    }
  }

  return {
    config: {
      enabled,
      prometheusQuery,
      requestsPerReplica,
      delta,
      prometheusServerUrl,
      prometheusServerUrlSource: urlValue === undefined ? "default" : "annotation",
      scaleDownMaxRatio,
      deploymentChecking,
      deploymentCheckingValue,
    },
    warnings,
  };
}

/**
 * Whether the guard runs its query for this configuration: the query is not empty and
 * requests-per-replica is above 0 (NaN is not). Otherwise the query minimum is 0.
 *
 * @example
 * ```ts
 * guardRunsQuery({ ...config, prometheusQuery: "vector(1)", requestsPerReplica: 0 }); // false
 * ```
 */
export function guardRunsQuery(config: GuardConfig): boolean {
  return config.prometheusQuery.length > 0 && config.requestsPerReplica > 0;
}

/** Options of {@linkcode guardServerUrlProblem}. */
export interface GuardServerUrlOptions {
  /** The HPA whose annotations were read. */
  hpa: { namespace: string; name: string };
  /** Where HPA-chosen URLs may point; undefined allows every URL. */
  policy: EndpointPolicy | undefined;
}

/**
 * The guard's config with its query scoped to the HPA's namespace by `scope`
 * (`--prometheus-enforce-namespace-label`, issue 25), or why the query may not run: the guard
 * then neither asks Prometheus nor writes. Without a scoper, or without a query, the config as
 * it is.
 *
 * @example
 * ```ts
 * scopeGuardQuery(config, { namespace: "a", name: "web" }, scope);
 * // { config: { ...config, prometheusQuery: 'sum(rate(requests_total{namespace="a"}[5m]))' } }
 * ```
 */
export function scopeGuardQuery(
  config: GuardConfig,
  hpa: { namespace: string; name: string },
  scope?: PromQLScoper,
): { config: GuardConfig; error?: undefined } | { config?: undefined; error: string } {
  if (scope === undefined || config.prometheusQuery === "") return { config };
  try {
    return { config: { ...config, prometheusQuery: scope(config.prometheusQuery, hpa.namespace) } };
  } catch (e) {
    return {
      error: `invalid ${ESTAFETTE_QUERY_ANNOTATION} ${
        quote(config.prometheusQuery)
      } of HPA ${hpa.namespace}/${hpa.name}: ${(e as Error).message}`,
    };
  }
}

/**
 * Why the guard may not ask the server that the HPA's
 * `estafette.io/hpa-scaler-prometheus-server-url` annotation names (the endpoint policy of
 * `--allowed-metric-endpoints` and `--endpoints-in-own-namespace`), or undefined when it may.
 * The default server (from flags) is not checked, nor a URL the client will refuse anyway (not
 * an http(s) URL).
 *
 * @example
 * ```ts
 * guardServerUrlProblem(config, { hpa: { namespace: "a", name: "web" }, policy });
 * // 'invalid estafette.io/hpa-scaler-prometheus-server-url "http://p.b:9090" of HPA a/web: not allowed: ...'
 * ```
 */
export function guardServerUrlProblem(
  config: GuardConfig,
  options: GuardServerUrlOptions,
): string | undefined {
  if (config.prometheusServerUrlSource !== "annotation") return undefined;
  let url: URL;
  try {
    url = new URL(config.prometheusServerUrl);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  const refused = checkEndpoint(url, {
    namespace: options.hpa.namespace,
    policy: options.policy,
  });
  return refused === undefined ? undefined : shortenValues(
    `invalid ${ESTAFETTE_SERVER_URL_ANNOTATION} ${
      quote(config.prometheusServerUrl)
    } of HPA ${options.hpa.namespace}/${options.hpa.name}: ${refused}`,
  );
}

/**
 * Go's `url.QueryEscape`: letters, digits and `-_.~` as they are, a space as `+`, every other
 * UTF-8 byte as `%XX`.
 */
function goQueryEscape(s: string): string {
  let out = "";
  for (const byte of new TextEncoder().encode(s)) {
    const c = String.fromCharCode(byte);
    if (/[A-Za-z0-9\-_.~]/.test(c)) out += c;
    else if (byte === 0x20) out += "+";
    else out += "%" + byte.toString(16).toUpperCase().padStart(2, "0");
  }
  return out;
}

/**
 * The URL of the guard's query, as upstream builds it: an instant query, no `time`,
 * `<server URL>/api/v1/query?query=<query>` with the query escaped as Go's `url.QueryEscape`
 * does (a space becomes `+`), and the server URL taken as it is (a trailing slash stays).
 *
 * @example
 * ```ts
 * guardQueryUrl("http://prometheus:9090", "sum(rate(x[5m])) by (app)");
 * // "http://prometheus:9090/api/v1/query?query=sum%28rate%28x%5B5m%5D%29%29+by+%28app%29"
 * ```
 */
export function guardQueryUrl(serverUrl: string, query: string): string {
  return `${serverUrl}/api/v1/query?query=${goQueryEscape(query)}`;
}

// ---------------------------------------------------------------------------------------------
// Errors

/**
 * Why the guard did not decide, for the own metrics: the Prometheus response (`not-json`,
 * `invalid-response`, `prometheus-error`, `wrong-result-type`, `empty-result`, `no-value`,
 * `invalid-value`), the value (`not-finite`, `out-of-range`: D1), or a state annotation JSON
 * cannot hold (`unencodable-state`).
 */
export type GuardErrorReason =
  | "not-json"
  | "invalid-response"
  | "prometheus-error"
  | "wrong-result-type"
  | "empty-result"
  | "no-value"
  | "invalid-value"
  | "not-finite"
  | "out-of-range"
  | "unencodable-state";

/** A reason not to write an HPA: the guard writes nothing on any of these. */
export class GuardError extends Error {
  override name = "GuardError";
  /** A short, fixed reason, for metric labels. */
  readonly reason: GuardErrorReason;
  /** An error with its reason. */
  constructor(reason: GuardErrorReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

// ---------------------------------------------------------------------------------------------
// The Prometheus response

function describeJson(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "an object";
  if (typeof v === "string") return quote(v);
  return String(v);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * The value the guard reads from the body of a Prometheus instant query, as upstream reads it:
 * `data.result[0].value[1]`, a string parsed as a Go float; the first series wins (Prometheus
 * does not order them). `status` and `resultType` are not checked when the value is there, and
 * the body must fit upstream's Go types (a `data.result` of objects, `value` a list), as Go's
 * `json.Unmarshal` requires.
 *
 * Throws a {@linkcode GuardError} for: a body that is not JSON or not an object; a scalar or
 * string result (`"result":[ts,"v"]`) and a matrix (no `value`); an empty result; a first
 * series without a value; a value that is not a string or not a number; and (D1) NaN or ±Inf.
 * When the body is a Prometheus error (`"status":"error"`), the message is Prometheus' own.
 *
 * @example
 * ```ts
 * prometheusGuardValue('{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000000,"225.4"]}]}}');
 * // 225.4
 * prometheusGuardValue('{"status":"success","data":{"resultType":"vector","result":[]}}');
 * // throws GuardError (empty-result): prometheus returned an empty result: the query matched no series
 * ```
 */
export function prometheusGuardValue(body: string): number {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new GuardError("not-json", `invalid prometheus response ${quote(body)}: not JSON`);
  }
  if (!isObject(parsed)) {
    throw new GuardError(
      "invalid-response",
      `invalid prometheus response ${quote(body)}: want a JSON object`,
    );
  }
  const root = parsed;
  const fail = (reason: GuardErrorReason, message: string): never => {
    if (root.status === "error") {
      const type = typeof root.errorType === "string" ? root.errorType : "";
      const error = typeof root.error === "string" ? root.error : "";
      throw new GuardError(
        "prometheus-error",
        shortenValues(
          type || error
            ? `prometheus returned an error: ${[type, error].filter((s) => s).join(": ")}`
            : `prometheus returned status "error"`,
        ),
      );
    }
    throw new GuardError(reason, message);
  };
  const mismatch = (path: string, v: unknown, want: string): never =>
    fail(
      "invalid-response",
      `invalid prometheus response: ${path} is ${describeJson(v)}, want ${want}`,
    );

  // the shape of upstream's Go types; null is allowed wherever Go allows it
  if (root.status != null && typeof root.status !== "string") {
    mismatch("status", root.status, "a string");
  }
  const data = root.data;
  if (data != null && !isObject(data)) mismatch("data", data, "an object");
  const d = isObject(data) ? data : {};
  const resultType = typeof d.resultType === "string" ? d.resultType : undefined;
  if (d.resultType != null && typeof d.resultType !== "string") {
    mismatch("data.resultType", d.resultType, "a string");
  }
  const wrongType = (): never =>
    fail(
      "wrong-result-type",
      `unexpected prometheus result type ${quote(resultType ?? "")}: want a vector`,
    );
  const result = d.result;
  if (result != null && !Array.isArray(result)) {
    if (resultType !== undefined && resultType !== "vector") wrongType();
    mismatch("data.result", result, "a list");
  }
  const series: unknown[] = Array.isArray(result) ? result : [];
  series.forEach((s, i) => {
    if (s != null && !isObject(s)) {
      if (resultType !== undefined && resultType !== "vector") wrongType();
      mismatch(`data.result[${i}]`, s, "an object");
    }
    if (isObject(s) && s.value != null && !Array.isArray(s.value)) {
      mismatch(`data.result[${i}].value`, s.value, "a list");
    }
  });

  if (series.length === 0) {
    fail("empty-result", "prometheus returned an empty result: the query matched no series");
  }
  const first = isObject(series[0]) ? series[0] : {};
  const value = Array.isArray(first.value) ? first.value : [];
  if (value.length < 2) {
    if (resultType === "matrix" || first.values !== undefined) wrongType();
    fail(
      "no-value",
      "prometheus returned no value for the first series: data.result[0].value is missing",
    );
  }
  const raw: unknown = value[1];
  if (typeof raw !== "string") {
    fail(
      "invalid-value",
      `invalid prometheus value ${describeJson(raw)} at data.result[0].value[1]: want a string`,
    );
  }
  const text = raw as string;
  const v = goFloat(text);
  if (typeof v === "string") {
    const why = v === SYNTAX ? "not a number" : "beyond the float64 range";
    fail("invalid-value", `invalid prometheus value ${quote(text)}: ${why}`);
  }
  const n = v as number;
  if (!Number.isFinite(n)) {
    fail("not-finite", `prometheus value ${quote(text)} is not a finite number`);
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// Deployment in progress

/** The fields of an ownerReference the check reads. */
export interface GuardOwnerReference {
  kind: string;
  name: string;
  uid?: string;
  controller?: boolean;
}

/** The fields of a ReplicaSet the check reads. */
export interface GuardReplicaSet {
  metadata: {
    name?: string;
    namespace?: string;
    labels?: Readonly<Record<string, string>>;
    ownerReferences?: readonly GuardOwnerReference[];
  };
  status?: { replicas?: number };
}

/** Inputs of {@linkcode deploymentInProgress}. */
export interface DeploymentInProgressInput {
  /** The HPA's namespace: only ReplicaSets there count. */
  namespace: string;
  /** The HPA's `metadata.labels`. */
  hpaLabels?: Readonly<Record<string, string>>;
  /** The HPA's `spec.scaleTargetRef`. */
  scaleTargetRef: { kind: string; name: string };
  /** ReplicaSets (any namespace; others are ignored). */
  replicaSets: readonly GuardReplicaSet[];
  /**
   * Deployments, when known: a ReplicaSet must then be controlled by the scale target's uid,
   * not only its name (a Deployment deleted and created again under the same name).
   */
  deployments?: readonly { metadata: { name?: string; namespace?: string; uid?: string } }[];
}

/** The result of {@linkcode deploymentInProgress}. */
export interface DeploymentProgress {
  /** More than one of the workload's ReplicaSets has replicas. */
  inProgress: boolean;
  /** How the workload's ReplicaSets were found: the HPA's `app` label, or the scale target. */
  matchedBy: "app-label" | "scale-target";
  /** Names of the workload's ReplicaSets with `status.replicas > 0`, in input order. */
  nonEmptyReplicaSets: string[];
}

/**
 * Whether a rollout is under way, as upstream means it (D3, fixed): the ReplicaSets of the
 * HPA's namespace with the HPA's own `app` label, or, when the HPA has no (or an empty) `app`
 * label, those whose controller ownerReference is the object of `scaleTargetRef` (kind and
 * name; the Deployment's uid when `deployments` holds it); in progress when more than one of
 * them has `status.replicas > 0`.
 *
 * @example
 * ```ts
 * deploymentInProgress({
 *   namespace: "shop",
 *   hpaLabels: { app: "web" },
 *   scaleTargetRef: { kind: "Deployment", name: "web" },
 *   replicaSets: [
 *     { metadata: { name: "web-1", namespace: "shop", labels: { app: "web" } }, status: { replicas: 3 } },
 *     { metadata: { name: "web-2", namespace: "shop", labels: { app: "web" } }, status: { replicas: 1 } },
 *   ],
 * }); // { inProgress: true, matchedBy: "app-label", nonEmptyReplicaSets: ["web-1", "web-2"] }
 * ```
 */
export function deploymentInProgress(input: DeploymentInProgressInput): DeploymentProgress {
  const labels = input.hpaLabels ?? {};
  const app = hasOwn(labels, "app") ? labels.app : "";
  const byLabel = app !== "";
  const ref = input.scaleTargetRef;
  let targetUid: string | undefined;
  if (!byLabel && input.deployments && ref.kind === "Deployment") {
    const target = input.deployments.find((d) =>
      d.metadata.name === ref.name && d.metadata.namespace === input.namespace
    );
    targetUid = target?.metadata.uid || undefined;
  }
  const nonEmptyReplicaSets: string[] = [];
  for (const rs of input.replicaSets) {
    if (rs.metadata.namespace !== input.namespace) continue;
    if (byLabel) {
      const rsLabels = rs.metadata.labels ?? {};
      if (!hasOwn(rsLabels, "app") || rsLabels.app !== app) continue;
    } else {
      const owner = rs.metadata.ownerReferences?.find((o) => o.controller === true);
      if (!owner || owner.kind !== ref.kind || owner.name !== ref.name) continue;
      if (targetUid !== undefined && owner.uid !== targetUid) continue;
    }
    if ((rs.status?.replicas ?? 0) > 0) nonEmptyReplicaSets.push(rs.metadata.name ?? "");
  }
  return {
    inProgress: nonEmptyReplicaSets.length > 1,
    matchedBy: byLabel ? "app-label" : "scale-target",
    nonEmptyReplicaSets,
  };
}

// ---------------------------------------------------------------------------------------------
// The decision

/** Inputs of {@linkcode decideGuard}: one enabled HPA, now. */
export interface GuardInput {
  /** The HPA's configuration; `enabled` must be true. */
  config: GuardConfig;
  /**
   * The query's value ({@linkcode prometheusGuardValue}); required when
   * {@linkcode guardRunsQuery} says the query runs, ignored otherwise.
   */
  queryValue?: number;
  /** The HPA's `status.currentReplicas` (0 when absent: Kubernetes omits a zero). */
  currentReplicas: number;
  /** The HPA's `spec.minReplicas` (1 when absent, the API default). */
  minReplicas: number;
  /** The HPA's `spec.maxReplicas`. */
  maxReplicas: number;
  /** From {@linkcode parseLowerBound}. */
  lowerBound: number;
  /**
   * From {@linkcode deploymentInProgress}; read only when the config's deployment checking is
   * on.
   */
  deploymentInProgress: boolean;
  /** Epoch ms, for the state annotation's `lastUpdated`. */
  now: number;
}

/** The rule that set the target. */
export type GuardRule = "query" | "no-query" | "scale-down-cap" | "lower-bound";

/** What to write on the HPA: a JSON merge patch of these (see {@linkcode guardPatch}). */
export interface GuardWrite {
  minReplicas: number;
  previousMinReplicas: number;
  /** Set only when raised: the target reached maxReplicas. */
  maxReplicas?: number;
  previousMaxReplicas: number;
  /** The value of `estafette.io/hpa-scaler-state`. */
  stateAnnotation: string;
}

/** The guard's decision for one HPA. */
export interface GuardDecision {
  /** The query value used, 0 when the query does not run (`estafette_hpa_scaler_request_rate`). */
  requestRate: number;
  /** Whether the query ran. */
  queryRan: boolean;
  /** q: `ceil(delta + value / requestsPerReplica)`, 0 when the query does not run. */
  queryMinimum: number;
  /** `status.currentReplicas`, as given (`estafette_hpa_scaler_actual_replicas`). */
  currentReplicas: number;
  /**
   * m = `floor(currentReplicas x ratio)`, the most replicas one scale-down may remove (0 means
   * one); null when the cap is off because a deployment is in progress.
   */
  maxScaleDown: number | null;
  /** g: `currentReplicas - m` (`- 1` when m is 0), or q while a deployment is in progress. */
  scaleDownMinimum: number;
  /** The cap was off: deployment checking is on and a deployment is in progress. */
  deploymentInProgress: boolean;
  /** The new minReplicas: max(q, g), at least the lower bound (`estafette_hpa_scaler_min_replicas`). */
  target: number;
  /** The lower bound applied. */
  lowerBound: number;
  /** Which rule set the target. */
  decidedBy: GuardRule;
  /** What to write, or null when the target is the current minReplicas (max is not checked). */
  write: GuardWrite | null;
}

function checkInt32(what: string, v: number, min: number): void {
  if (!(Number.isInteger(v) && v >= min && v <= MAX_INT32)) {
    throw new Error(`invalid ${what} ${v}: want an integer from ${min} to ${MAX_INT32}`);
  }
}

/**
 * The guard's rule for one enabled HPA, in upstream's order:
 * 1. q = `ceil(delta + value / requestsPerReplica)` when {@linkcode guardRunsQuery}, else 0;
 * 2. g = q while deployment checking is on and a deployment is in progress; otherwise, with
 *    m = `floor(currentReplicas x ratio)`, g = `currentReplicas - m`, or `currentReplicas - 1`
 *    when m is 0;
 * 3. target = max(q, g), raised to the lower bound;
 * 4. target equal to minReplicas: no write (maxReplicas is not checked, even when equal);
 *    otherwise minReplicas = target, maxReplicas = target + 1 when target >= maxReplicas, and
 *    the state annotation.
 *
 * Float maths as Go's float64 (the same operations in the same order). The result can lower
 * the user's minReplicas, as upstream's does; maxReplicas is only ever raised.
 *
 * Throws a {@linkcode GuardError} when q is not an int32 (D1: from a NaN or infinite value,
 * delta or quotient, or beyond ±2^31), when the raised maxReplicas would pass the int32 range,
 * and when the state annotation cannot be written (a non-finite requests-per-replica or delta).
 * Throws an Error for a disabled config, a missing query value, and counts that are not int32.
 *
 * @example
 * ```ts
 * decideGuard({ config, queryValue: 225.4, currentReplicas: 10, minReplicas: 3, maxReplicas: 50,
 *   lowerBound: 3, deploymentInProgress: false, now: Date.UTC(2024, 0, 1) });
 * // with requestsPerReplica 2.5 and delta -0.5: queryMinimum 90, target 90,
 * // write { minReplicas: 90, maxReplicas: 91, ... }
 * ```
 */
export function decideGuard(input: GuardInput): GuardDecision {
  const { config } = input;
  if (!config.enabled) throw new Error(`the guard is off for this HPA: nothing to decide`);
  checkInt32("currentReplicas", input.currentReplicas, 0);
  checkInt32("minReplicas", input.minReplicas, MIN_INT32);
  checkInt32("maxReplicas", input.maxReplicas, MIN_INT32);
  checkInt32("lower bound", input.lowerBound, MIN_INT32);

  const queryRan = guardRunsQuery(config);
  let requestRate = 0;
  let queryMinimum = 0;
  if (queryRan) {
    const value = input.queryValue;
    if (value === undefined) {
      throw new Error(`missing query value: the guard runs ${quote(config.prometheusQuery)}`);
    }
    if (!Number.isFinite(value)) {
      throw new GuardError(
        "not-finite",
        `prometheus value ${goFloatText(value)} is not a finite number`,
      );
    }
    const q = Math.ceil(config.delta + value / config.requestsPerReplica);
    if (!(q >= MIN_INT32 && q <= MAX_INT32)) {
      throw new GuardError(
        "out-of-range",
        `query minimum ceil(${goFloatText(config.delta)} + ${goFloatText(value)} / ${
          goFloatText(config.requestsPerReplica)
        }) = ${goFloatText(q)} is not an int32 replica count`,
      );
    }
    requestRate = value;
    queryMinimum = q + 0; // no -0 from ceil(-0.5)
  }

  const cur = input.currentReplicas;
  const capOff = config.deploymentChecking && input.deploymentInProgress;
  let maxScaleDown: number | null = null;
  let scaleDownMinimum = queryMinimum;
  if (!capOff) {
    maxScaleDown = Math.floor(cur * config.scaleDownMaxRatio) + 0;
    scaleDownMinimum = maxScaleDown === 0 ? cur - 1 : cur - maxScaleDown;
  }

  let target = queryMinimum;
  let decidedBy: GuardRule = queryRan ? "query" : "no-query";
  if (scaleDownMinimum > target) {
    target = scaleDownMinimum;
    decidedBy = "scale-down-cap";
  }
  if (target < input.lowerBound) {
    target = input.lowerBound;
    decidedBy = "lower-bound";
  }

  let write: GuardWrite | null = null;
  if (target !== input.minReplicas) {
    const raise = target >= input.maxReplicas;
    if (raise && target + 1 > MAX_INT32) {
      throw new GuardError(
        "out-of-range",
        `maxReplicas ${target + 1} (minReplicas ${target} + 1) is beyond the int32 range`,
      );
    }
    write = {
      minReplicas: target,
      previousMinReplicas: input.minReplicas,
      ...(raise ? { maxReplicas: target + 1 } : {}),
      previousMaxReplicas: input.maxReplicas,
      stateAnnotation: guardStateAnnotation(config, input.now),
    };
  }

  return {
    requestRate,
    queryRan,
    queryMinimum,
    currentReplicas: cur,
    maxScaleDown,
    scaleDownMinimum,
    deploymentInProgress: capOff,
    target,
    lowerBound: input.lowerBound,
    decidedBy,
    write,
  };
}

/** RFC3339 in UTC, whole seconds (Go's `time.RFC3339` truncates). */
function rfc3339(ms: number): string {
  if (!Number.isFinite(ms)) throw new Error(`invalid time ${ms}: want epoch milliseconds`);
  return new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");
}

/**
 * The value of `estafette.io/hpa-scaler-state`: upstream's JSON, keys in its order, numbers and
 * strings as Go's `encoding/json` writes them (so `<`, `>` and `&` in a query are `\u003c`,
 * `\u003e`, `\u0026`), the effective values (defaults included, the ratio after D2), the
 * deployment-checking annotation verbatim, and `lastUpdated` as RFC3339 in UTC.
 *
 * Throws a {@linkcode GuardError} (`unencodable-state`) when requests-per-replica or delta is
 * NaN or ±Inf: JSON cannot hold them (upstream's `json.Marshal` fails there, and it writes
 * nothing).
 *
 * @example
 * ```ts
 * guardStateAnnotation(config, Date.UTC(2024, 2, 31, 8, 0, 0, 789));
 * // '{"enabled":"true","prometheusQuery":"sum(rate(requests_total[5m]))","requestsPerReplica":2.5,
 * //   "delta":-0.5,"lastUpdated":"2024-03-31T08:00:00Z","prometheusServerUrl":"http://prometheus:9090",
 * //   "scaleDownMaxRatio":1,"enableScaleDownRatioDeploymentChecking":"false"}' (one line)
 * ```
 */
export function guardStateAnnotation(config: GuardConfig, now: number): string {
  const num = (key: string, x: number): string => {
    if (!Number.isFinite(x)) {
      throw new GuardError(
        "unencodable-state",
        `cannot write the ${ESTAFETTE_STATE_ANNOTATION} annotation: ${key} is ${
          goFloatText(x)
        }, which JSON cannot hold`,
      );
    }
    return formatGoJsonFloat(x);
  };
  const requestsPerReplica = num("requestsPerReplica", config.requestsPerReplica);
  const delta = num("delta", config.delta);
  const ratio = num("scaleDownMaxRatio", config.scaleDownMaxRatio);
  return `{"enabled":${goJsonString(config.enabled ? "true" : "false")}` +
    `,"prometheusQuery":${goJsonString(config.prometheusQuery)}` +
    `,"requestsPerReplica":${requestsPerReplica}` +
    `,"delta":${delta}` +
    `,"lastUpdated":${goJsonString(rfc3339(now))}` +
    `,"prometheusServerUrl":${goJsonString(config.prometheusServerUrl)}` +
    `,"scaleDownMaxRatio":${ratio}` +
    `,"enableScaleDownRatioDeploymentChecking":${goJsonString(config.deploymentCheckingValue)}}`;
}

/** A JSON merge patch of an HPA (autoscaling/v2 or v1: the fields are the same). */
export interface GuardPatch {
  metadata: { annotations: Record<string, string> };
  spec: { minReplicas: number; maxReplicas?: number };
}

/**
 * The JSON merge patch of a write: `spec.minReplicas`, `spec.maxReplicas` only when raised,
 * and the state annotation; nothing else of the HPA.
 *
 * @example
 * ```ts
 * guardPatch({ minReplicas: 10, previousMinReplicas: 3, maxReplicas: 11, previousMaxReplicas: 10,
 *   stateAnnotation: "{...}" });
 * // { metadata: { annotations: { "estafette.io/hpa-scaler-state": "{...}" } },
 * //   spec: { minReplicas: 10, maxReplicas: 11 } }
 * ```
 */
export function guardPatch(write: GuardWrite): GuardPatch {
  return {
    metadata: { annotations: { [ESTAFETTE_STATE_ANNOTATION]: write.stateAnnotation } },
    spec: write.maxReplicas === undefined
      ? { minReplicas: write.minReplicas }
      : { minReplicas: write.minReplicas, maxReplicas: write.maxReplicas },
  };
}

/** Why the target is what it is, in a few words. */
function guardReason(decision: GuardDecision, config: GuardConfig): string {
  const f = goFloatText;
  let reason: string;
  switch (decision.decidedBy) {
    case "query": {
      const d = config.delta;
      const delta = d > 0 ? ` + ${f(d)}` : d < 0 ? ` - ${f(-d)}` : "";
      reason = `query ${f(decision.requestRate)} / ${f(config.requestsPerReplica)}${delta}`;
      break;
    }
    case "scale-down-cap": {
      const cur = decision.currentReplicas;
      const floor = `floor(${cur} x ${f(config.scaleDownMaxRatio)})`;
      reason = decision.maxScaleDown === 0
        ? `scale-down cap ${cur} - 1 = ${decision.scaleDownMinimum} (${floor} = 0)`
        : `scale-down cap ${cur} - ${floor} = ${decision.scaleDownMinimum}`;
      break;
    }
    case "lower-bound":
      reason = `lower bound ${decision.lowerBound}`;
      break;
    default:
      reason = "no query";
  }
  return decision.deploymentInProgress
    ? `${reason} (no scale-down cap: deployment in progress)`
    : reason;
}

/**
 * The text of the guard's event for a decision: what changes and the rule that decided, e.g.
 * `minReplicas 3 -> 90, maxReplicas 50 -> 91: query 225.4 / 2.5 - 0.5`,
 * `minReplicas 8 -> 4: scale-down cap 8 - floor(8 x 0.5) = 4`, `minReplicas 5 -> 3: lower
 * bound 3`; without a write, `minReplicas 3 unchanged: ...` (for logs). A cap that is off
 * because of a rollout says so: `(no scale-down cap: deployment in progress)`.
 *
 * @example
 * ```ts
 * guardChangeMessage(decideGuard(input), input.config);
 * // "minReplicas 3 -> 11: query 225.4 / 25 + 1"
 * ```
 */
export function guardChangeMessage(decision: GuardDecision, config: GuardConfig): string {
  const reason = guardReason(decision, config);
  const w = decision.write;
  if (w === null) return `minReplicas ${decision.target} unchanged: ${reason}`;
  const max = w.maxReplicas === undefined
    ? ""
    : `, maxReplicas ${w.previousMaxReplicas} -> ${w.maxReplicas}`;
  return `minReplicas ${w.previousMinReplicas} -> ${w.minReplicas}${max}: ${reason}`;
}
