/**
 * KEDA v2.20.2's typed trigger configuration (`pkg/scalers/scalersconfig/typed_config.go`), the
 * part this adapter reads: each parameter is looked up in its sources in order (the trigger's
 * `metadata`, the TriggerAuthentication's parameters, `<key>FromEnv` naming an env var of the
 * target's container); values are trimmed and an empty one is absent; numbers are JSON numbers
 * (`1e3` is 1000; `+5`, `.5`, `5.` and `NaN` are errors), integers too, booleans as Go's
 * `strconv.ParseBool`, maps `k=v,k2=v2`; errors in KEDA's words.
 *
 * @module
 */

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

/** A parameter's value and the source it came from, or undefined when absent everywhere. */
export function lookupParam(
  params: TriggerParams,
  key: string,
  order: readonly ParamSource[],
): string | undefined {
  for (const source of order) {
    let v: string | undefined;
    if (source === "triggerMetadata") v = params.metadata[key];
    else if (source === "authParams") v = params.authParams?.[key];
    else {
      const envName = params.metadata[`${key}FromEnv`];
      if (envName !== undefined) v = params.resolvedEnv?.[envName];
    }
    if (v === undefined) continue;
    const trimmed = v.trim();
    if (trimmed !== "") return trimmed;
  }
  return undefined;
}

/** A parameter that is required and absent: KEDA's words. */
export function missingParam(key: string, order: readonly ParamSource[]): Error {
  return new Error(`missing required parameter "${key}" in [${order.join(" ")}]`);
}

/** A parameter whose value does not parse: KEDA's words, with Go's reason. */
export function badParam(key: string, value: string, why: string): Error {
  return new Error(`unable to set param "${key}" value "${value}": ${why}`);
}

// A JSON number (RFC 8259): what Go's json.Unmarshal reads into a float64 or an int
const JSON_NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

/** The reason Go's `json.Unmarshal` gives for text that is not a JSON number. */
function jsonNumberProblem(s: string): string {
  // the first character decides Go's message for the common cases
  const c = s[0];
  if (c === undefined) return "unexpected end of JSON input";
  if (/[0-9-]/.test(c)) return `invalid character after number`;
  return `invalid character '${c}' looking for beginning of value`;
}

/** A float64 parameter, as KEDA reads it (a JSON number). */
export function parseFloatParam(key: string, value: string): number {
  if (!JSON_NUMBER.test(value)) throw badParam(key, value, jsonNumberProblem(value));
  const n = Number(value);
  if (!Number.isFinite(n)) {
    throw badParam(
      key,
      value,
      `json: cannot unmarshal number ${value} into Go value of type float64`,
    );
  }
  return n;
}

/** An int64 parameter, as KEDA reads it (a JSON number without fraction or exponent). */
export function parseIntParam(key: string, value: string): number {
  if (!JSON_NUMBER.test(value)) throw badParam(key, value, jsonNumberProblem(value));
  if (!/^-?[0-9]+$/.test(value)) {
    throw badParam(
      key,
      value,
      `json: cannot unmarshal number ${value} into Go value of type int64`,
    );
  }
  const n = BigInt(value);
  if (n > 9223372036854775807n || n < -9223372036854775808n) {
    throw badParam(
      key,
      value,
      `json: cannot unmarshal number ${value} into Go value of type int64`,
    );
  }
  return Number(n);
}

/** A bool parameter, as Go's `strconv.ParseBool` reads it. */
export function parseBoolParam(key: string, value: string): boolean {
  if (["1", "t", "T", "TRUE", "true", "True"].includes(value)) return true;
  if (["0", "f", "F", "FALSE", "false", "False"].includes(value)) return false;
  throw badParam(key, value, `strconv.ParseBool: parsing "${value}": invalid syntax`);
}

/** A map parameter `k=v,k2=v2` (each element trimmed; one without `=` is an error). */
export function parseMapParam(key: string, value: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const element of value.split(",")) {
    const e = element.trim();
    if (e === "") continue;
    const eq = e.indexOf("=");
    if (eq < 0) throw badParam(key, value, `invalid map element "${e}": want key=value`);
    out[e.slice(0, eq).trim()] = e.slice(eq + 1).trim();
  }
  return out;
}
