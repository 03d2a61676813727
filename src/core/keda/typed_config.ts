/**
 * KEDA v2.20.2's typed trigger configuration (`pkg/scalers/scalersconfig/typed_config.go`): each
 * field names its keys, the sources to look them up in (in order), whether it is optional, its
 * default, enum and exclusive set; values are trimmed and an empty one is absent; a key in
 * `resolvedEnv` is read through `<key>FromEnv`; numbers are JSON numbers as Go's
 * `json.Unmarshal` reads them, booleans as `strconv.ParseBool`, durations as a Go duration or
 * milliseconds, maps as `k=v,k2=v2`. Every field is read; the errors are joined with newlines
 * in field order, in KEDA's words. The vectors of KEDA's `typed_config_test.go` are in
 * tests/core/keda/typed_config_test.ts.
 *
 * @module
 */
import { parseDuration } from "../duration.ts";

/** Where a parameter is looked up, KEDA's names. */
export type ParamSource = "triggerMetadata" | "authParams" | "resolvedEnv";

/** What a trigger's parameters are read from. */
export interface TriggerParams {
  /** The trigger's `metadata`. */
  metadata: Readonly<Record<string, string>>;
  /** The parameters its TriggerAuthentication resolved (secrets, config maps, env). */
  authParams?: Readonly<Record<string, string>>;
  /** The env of the target's container (for `<key>FromEnv`). */
  resolvedEnv?: Readonly<Record<string, string>>;
}

/** A field's Go type, as far as the triggers read here use them. */
export type FieldType = "string" | "float64" | "int64" | "int" | "bool" | "duration" | "map";

/** One field of a trigger's typed config. */
export interface FieldSpec {
  /** Its keys, tried in order (`authModes;authMode`). */
  names: readonly string[];
  order: readonly ParamSource[];
  type: FieldType;
  optional?: boolean;
  /** Used (and parsed) when the key is absent. */
  default?: string;
  enum?: readonly string[];
  exclusiveSet?: readonly string[];
  /** Present means an error: `scaler <type> info: <message>`. */
  deprecated?: string;
  /** A list field (`[]string`): each comma-separated element trimmed. */
  list?: boolean;
}

/** A parsed value: by field, the first name's key. */
export type ParsedValue = string | number | boolean | Record<string, string> | string[];

/** The values read (absent optional fields are missing) and the errors, in field order. */
export interface TypedConfig {
  values: Record<string, ParsedValue>;
  errors: string[];
}

/** A parameter's value (trimmed, non-empty) from the first source that has it. */
export function lookupParam(
  params: TriggerParams,
  names: readonly string[],
  order: readonly ParamSource[],
): string | undefined {
  for (const source of order) {
    for (const name of names) {
      let v: string | undefined;
      if (source === "triggerMetadata") v = params.metadata[name];
      else if (source === "authParams") v = params.authParams?.[name];
      else {
        const envName = params.metadata[`${name}FromEnv`];
        if (envName !== undefined) v = params.resolvedEnv?.[envName];
      }
      if (v === undefined) continue;
      const trimmed = v.trim();
      if (trimmed !== "") return trimmed;
    }
  }
  return undefined;
}

/** Go's `%q` of a string: double-quoted, with Go's escapes for the few that need them. */
export function goQuote(s: string): string {
  return JSON.stringify(s).replace(/\\u007f/g, "\\x7f");
}

/** Go's quoting of one character in a JSON syntax error (`'x'`, `'\''`, `'"'`). */
function quoteChar(c: string): string {
  if (c === "'") return "'\\''";
  if (c === '"') return "'\"'";
  const q = JSON.stringify(c);
  return `'${q.slice(1, -1)}'`;
}

/**
 * The error Go's `json.Unmarshal` gives for `s` into a number of Go type `goType`, or null
 * when `s` is a JSON number that fits (a float64 that is finite, an integer in range).
 */
export function goJsonNumberError(s: string, goType: "float64" | "int64" | "int"): string | null {
  // the scanner: a number, then nothing (a value is trimmed before it is read)
  let i = 0;
  const at = (k: number): string => (k < s.length ? s[k] : " "); // EOF reads as a space
  const literal = /^(?:true|false|null)$/.test(s) || s.startsWith('"') || s.startsWith("[") ||
    s.startsWith("{");
  if (literal) {
    let kind: string | null = null;
    try {
      const v = JSON.parse(s);
      kind = v === null
        ? null
        : typeof v === "boolean"
        ? "bool"
        : typeof v === "string"
        ? "string"
        : Array.isArray(v)
        ? "array"
        : "object";
    } catch {
      return "unexpected end of JSON input";
    }
    if (kind === null) return `json: cannot unmarshal null into Go value of type ${goType}`;
    return `json: cannot unmarshal ${kind} into Go value of type ${goType}`;
  }
  if (s === "") return "unexpected end of JSON input";
  if (at(i) === "-") i++;
  if (at(i) === "0") i++;
  else if (/[1-9]/.test(at(i))) { while (/[0-9]/.test(at(i))) i++; }
  else {
    return i === 0
      ? `invalid character ${quoteChar(at(i))} looking for beginning of value`
      : `invalid character ${quoteChar(at(i))} in numeric literal`;
  }
  let integer = true;
  if (at(i) === ".") {
    integer = false;
    i++;
    if (!/[0-9]/.test(at(i))) {
      return `invalid character ${quoteChar(at(i))} after decimal point in numeric literal`;
    }
    while (/[0-9]/.test(at(i))) i++;
  }
  if (at(i) === "e" || at(i) === "E") {
    integer = false;
    i++;
    if (at(i) === "+" || at(i) === "-") i++;
    if (!/[0-9]/.test(at(i))) {
      return `invalid character ${quoteChar(at(i))} in exponent of numeric literal`;
    }
    while (/[0-9]/.test(at(i))) i++;
  }
  if (i < s.length) return `invalid character ${quoteChar(s[i])} after top-level value`;
  const cannot = `json: cannot unmarshal number ${s} into Go value of type ${goType}`;
  if (goType === "float64") return Number.isFinite(Number(s)) ? null : cannot;
  if (!integer) return cannot;
  const n = BigInt(s);
  const max = goType === "int64" || goType === "int" ? 9223372036854775807n : 0n;
  return n > max || n < -max - 1n ? cannot : null;
}

/** Go's `strconv.ParseBool`. */
export function goParseBool(s: string): boolean | undefined {
  if (["1", "t", "T", "TRUE", "true", "True"].includes(s)) return true;
  if (["0", "f", "F", "FALSE", "false", "False"].includes(s)) return false;
  return undefined;
}

/** A value that does not convert to its field's type: the inner error. */
class ConvertError extends Error {}

/** A value converted to the field's type; throws {@linkcode ConvertError}. */
function convert(f: FieldSpec, raw: string): ParsedValue {
  if (f.list) return raw.split(",").map((e) => e.trim());
  switch (f.type) {
    case "string":
      return raw;
    case "bool": {
      const b = goParseBool(raw);
      if (b !== undefined) return b;
      throw new ConvertError(
        `unable to parse boolean value ${goQuote(raw)}: strconv.ParseBool: parsing ${
          goQuote(raw)
        }: invalid syntax`,
      );
    }
    case "float64":
    case "int64":
    case "int": {
      const e = goJsonNumberError(raw, f.type);
      if (e !== null) throw new ConvertError(`unable to unmarshal to field type ${f.type}: ${e}`);
      return Number(raw);
    }
    case "duration": {
      let seconds: number | undefined;
      try {
        seconds = parseDuration(raw);
      } catch {
        seconds = undefined;
      }
      if (seconds !== undefined) {
        if (seconds < 0) throw new ConvertError(`duration cannot be negative: ${goQuote(raw)}`);
        return seconds;
      }
      if (/^[+-]?[0-9]+$/.test(raw)) {
        const ms = Number(raw);
        if (ms < 0) throw new ConvertError(`duration cannot be negative: ${ms} milliseconds`);
        return ms / 1000;
      }
      throw new ConvertError(
        `unable to parse duration value ${
          goQuote(raw)
        }: must be either a duration string (e.g. '30s', '5m') or a number of milliseconds`,
      );
    }
    case "map": {
      const out: Record<string, string> = {};
      for (const element of raw.split(",")) {
        const el = element.trim();
        const kv = el.split("=");
        if (kv.length !== 2) {
          throw new ConvertError(`expected format key=value, got ${goQuote(el)}`);
        }
        out[kv[0].trim()] = kv[1].trim();
      }
      return out;
    }
  }
}

/**
 * Reads `fields` from `params` as KEDA's typed config does, for a trigger of `triggerType`
 * (for the deprecation message). Every field is read: the errors are in field order.
 */
export function readTypedConfig(
  params: TriggerParams,
  fields: readonly FieldSpec[],
  triggerType: string,
): TypedConfig {
  const values: Record<string, ParsedValue> = {};
  const errors: string[] = [];
  for (const f of fields) {
    const key = f.names[0];
    const label = goQuote(f.names.join(","));
    let raw = lookupParam(params, f.names, f.order);
    if (raw !== undefined && f.deprecated !== undefined) {
      errors.push(`scaler ${triggerType} info: ${f.deprecated}`);
      continue;
    }
    if (raw === undefined) {
      if (f.default !== undefined && f.default !== "") raw = f.default;
      else if (f.optional || f.deprecated !== undefined) continue;
      else {
        errors.push(`missing required parameter ${label} in [${f.order.join(" ")}]`);
        continue;
      }
    }
    const elements = raw.split(",").map((e) => e.trim());
    if (f.enum !== undefined && elements.some((e) => !f.enum!.includes(e))) {
      errors.push(`parameter ${label} value ${goQuote(raw)} must be one of [${f.enum.join(" ")}]`);
      continue;
    }
    if (
      f.exclusiveSet !== undefined &&
      elements.filter((e) => f.exclusiveSet!.includes(e)).length > 1
    ) {
      errors.push(
        `parameter ${label} value ${goQuote(raw)} must contain only one of [${
          f.exclusiveSet.join(" ")
        }]`,
      );
      continue;
    }
    try {
      values[key] = convert(f, raw);
    } catch (e) {
      if (!(e instanceof ConvertError)) throw e;
      errors.push(`unable to set param ${goQuote(key)} value ${goQuote(raw)}: ${e.message}`);
    }
  }
  return { values, errors };
}
