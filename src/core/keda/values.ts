/**
 * The values KEDA v2.20.2's scalers read from what their backends answer, as pure functions
 * (the request is made elsewhere): a Prometheus instant query's result
 * (`prometheus_scaler.go ExecutePromQuery`), and a metrics-api answer in JSON (its
 * `valueLocation` a GJSON path), YAML (a dotted path) or the Prometheus text format (a
 * PromQL selector), with KEDA's errors.
 *
 * GJSON: the subset KEDA's tests and documentation use, and no more: keys separated by `.`,
 * `\` escaping a `.` (or any character) in a key, a number indexing an array, `#` the length of
 * an array, and `<array>.#.<key>` collecting a key of every element (a JSON result). Wildcards,
 * queries (`#(...)`), modifiers (`@...`) and multipaths are not read: such a path finds nothing
 * (`got Null`), as it would in GJSON for a key of that name.
 *
 * @module
 */
import { parseQuantity } from "../kubernetes/quantity.ts";

/** What KEDA's Prometheus scaler reads of a trigger to judge a query's result. */
export interface PrometheusResultOptions {
  query: string;
  ignoreNullValues: boolean;
}

/** Go's `strconv.ParseFloat(s, 64)`; undefined when Go refuses it. */
export function goParseFloat(s: string): number | undefined {
  const t = s.toLowerCase();
  if (/^[+-]?(?:inf|infinity)$/.test(t)) return t.startsWith("-") ? -Infinity : Infinity;
  if (t === "nan" || t === "+nan" || t === "-nan") return t === "nan" ? NaN : undefined;
  if (/^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/.test(t)) return Number(s);
  return undefined;
}

/** Go's `%f` of a value KEDA refuses: `+Inf`, `-Inf`, `NaN`. */
function goPercentF(v: number): string {
  return Number.isNaN(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf";
}

/**
 * The value of a Prometheus instant query answered with `status` and `body`, as KEDA reads it:
 * one series or none (0 with `ignoreNullValues`), its sample's value a float (NaN and ±Inf 0
 * with `ignoreNullValues`). Throws KEDA's error otherwise.
 */
export function kedaPrometheusValue(
  status: number,
  body: string,
  options: PrometheusResultOptions,
): number {
  if (status < 200 || status > 299) {
    throw new Error(`prometheus query api returned error. status: ${status}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch (e) {
    throw new Error(`invalid JSON in the query's answer: ${(e as Error).message}`);
  }
  const data = (parsed as { data?: { result?: unknown } } | null)?.data;
  const result = Array.isArray(data?.result) ? data.result as unknown[] : [];
  if (result.length === 0) {
    if (options.ignoreNullValues) return 0;
    throw new Error("prometheus metrics 'prometheus' target may be lost, the result is empty");
  }
  if (result.length > 1) {
    throw new Error(`prometheus query ${options.query} returned multiple elements`);
  }
  const value = (result[0] as { value?: unknown } | null)?.value;
  const values = Array.isArray(value) ? value : [];
  if (values.length === 0) {
    if (options.ignoreNullValues) return 0;
    throw new Error("prometheus metrics 'prometheus' target may be lost, the value list is empty");
  }
  if (values.length < 2) {
    throw new Error(`prometheus query ${options.query} didn't return enough values`);
  }
  let v = -1;
  const sample = values[1];
  if (sample !== null) {
    if (typeof sample !== "string") {
      throw new Error(`prometheus query ${options.query} returned a sample that is not a string`);
    }
    const f = goParseFloat(sample);
    if (f === undefined) {
      throw new Error(`strconv.ParseFloat: parsing ${JSON.stringify(sample)}: invalid syntax`);
    }
    v = f;
  }
  if (!Number.isFinite(v)) {
    if (options.ignoreNullValues) return 0;
    throw new Error(`prometheus query returns ${goPercentF(v)}`);
  }
  return v;
}

/** GJSON's type names. */
type GjsonType = "Null" | "False" | "Number" | "String" | "True" | "JSON";

function gjsonType(v: unknown): GjsonType {
  if (v === undefined || v === null) return "Null";
  if (v === true) return "True";
  if (v === false) return "False";
  if (typeof v === "number") return "Number";
  if (typeof v === "string") return "String";
  return "JSON";
}

/** A GJSON path split into its keys (`\` escapes the next character). */
function gjsonKeys(path: string): string[] {
  const keys: string[] = [];
  let key = "";
  for (let i = 0; i < path.length; i++) {
    const c = path[i];
    if (c === "\\" && i + 1 < path.length) key += path[++i];
    else if (c === ".") {
      keys.push(key);
      key = "";
    } else key += c;
  }
  keys.push(key);
  return keys;
}

/** The value at a GJSON path (the subset above), or undefined when nothing is there. */
export function gjsonGet(document: unknown, path: string): unknown {
  const walk = (v: unknown, keys: readonly string[]): unknown => {
    if (keys.length === 0) return v;
    const [key, ...rest] = keys;
    if (Array.isArray(v)) {
      if (key === "#") {
        if (rest.length === 0) return v.length;
        return v.map((e) => walk(e, rest)).filter((e) => e !== undefined);
      }
      if (!/^\d+$/.test(key)) return undefined;
      return walk(v[Number(key)], rest);
    }
    if (v !== null && typeof v === "object") {
      return Object.hasOwn(v, key) ? walk((v as Record<string, unknown>)[key], rest) : undefined;
    }
    return undefined;
  };
  return walk(document, gjsonKeys(path));
}

const NOT_A_QUANTITY = (loc: string): string =>
  `valueLocation ${JSON.stringify(loc)} points to a string that is not parseable as a Quantity`;
const WRONG = (loc: string, got: string): string =>
  `valueLocation ${
    JSON.stringify(loc)
  } must point to a numeric value or a string parseable as a Quantity, got ${got}`;

/** A string read as a Quantity (`1k` is 1000), as KEDA reads a string value; throws. */
function quantityValue(s: string, loc: string): number {
  try {
    return parseQuantity(s);
  } catch {
    throw new Error(NOT_A_QUANTITY(loc));
  }
}

/**
 * The value of a metrics-api JSON answer at `valueLocation` (GJSON), as KEDA reads it: a number,
 * or a string parsed as a Quantity. Throws KEDA's error.
 */
export function kedaJsonValue(body: string, valueLocation: string): number {
  let document: unknown;
  try {
    document = JSON.parse(body);
  } catch {
    // GJSON reads what it can of invalid JSON; nothing is found in it here
    throw new Error(WRONG(valueLocation, "Null"));
  }
  const v = gjsonGet(document, valueLocation);
  if (typeof v === "string") return quantityValue(v, valueLocation);
  if (typeof v !== "number") throw new Error(WRONG(valueLocation, gjsonType(v)));
  return v;
}

/**
 * The value at a dotted path of a parsed YAML (or XML) answer, as KEDA's `GetValueByPath` and
 * metrics-api read it: a list is indexed by its position's digits; the first value that is not
 * a map or a list ends the walk (even with keys left); a string is parsed as a Quantity.
 */
export function kedaPathValue(document: unknown, valueLocation: string): number {
  const keys = valueLocation.split(".");
  let current: unknown = document;
  let found: unknown = undefined;
  let reached = false;
  for (const key of keys) {
    const map = current as Record<string, unknown>;
    if (current === null || typeof current !== "object" || !Object.hasOwn(map, key)) {
      throw new Error(`key '${key}' not found in path '${valueLocation}'`);
    }
    const v = map[key];
    if (v !== null && typeof v === "object") {
      current = v;
      continue;
    }
    found = v;
    reached = true;
    break;
  }
  if (!reached) throw new Error(`path '${valueLocation}' does not lead to a value`);
  if (typeof found === "number") return found;
  if (typeof found === "string") return quantityValue(found, valueLocation);
  const goType = found === null || found === undefined
    ? "<nil>"
    : typeof found === "boolean"
    ? "bool"
    : typeof found;
  throw new Error(WRONG(valueLocation, goType));
}

/** A PromQL selector's name and label equalities, or Prometheus's parse error. */
function parseSelector(s: string): { name: string; labels: [string, string][] } {
  const m = /^\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*(?:\{(.*)\})?\s*$/.exec(s);
  if (m === null) {
    throw new Error(`1:1: parse error: unexpected character in selector ${JSON.stringify(s)}`);
  }
  const labels: [string, string][] = [];
  const body = m[2] ?? "";
  const offset = s.indexOf("{") + 1; // 0-based column of the body's first character
  let i = 0;
  while (i < body.length) {
    while (body[i] === " " || body[i] === ",") i++;
    if (i >= body.length) break;
    const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(body.slice(i));
    if (name === null) {
      throw new Error(`1:${offset + i + 1}: parse error: unexpected character in label matching`);
    }
    i += name[0].length;
    while (body[i] === " ") i++;
    if (body[i] !== "=") {
      throw new Error(`1:${offset + i + 1}: parse error: unexpected character in label matching`);
    }
    i++;
    while (body[i] === " ") i++;
    if (body[i] !== '"') {
      const ident = /^[A-Za-z_][A-Za-z0-9_]*/.exec(body.slice(i));
      throw new Error(
        `1:${offset + i + 1}: parse error: unexpected ${
          ident ? `identifier ${JSON.stringify(ident[0])}` : "character"
        } in label matching, expected string`,
      );
    }
    const end = body.indexOf('"', i + 1);
    if (end < 0) throw new Error(`1:${offset + i + 1}: parse error: unterminated quoted string`);
    labels.push([name[0], body.slice(i + 1, end)]);
    i = end + 1;
  }
  return { name: m[1], labels };
}

/**
 * The value of a metrics-api answer in the Prometheus text format for a selector
 * (`name{label="v"}`), as KEDA reads it: the first sample of that name whose labels include
 * every given label. Throws KEDA's error.
 */
export function kedaPrometheusTextValue(body: string, valueLocation: string): number {
  const selector = parseSelector(valueLocation);
  let seen = false;
  for (const raw of body.replace(/\r\n/g, "\n").split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{([^}]*)\})?\s+(\S+)/.exec(line);
    if (m === null || m[1] !== selector.name) continue;
    seen = true;
    const labels = new Map<string, string>();
    for (const l of (m[2] ?? "").matchAll(/([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"/g)) {
      labels.set(l[1], l[2].replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c)));
    }
    if (selector.labels.every(([k, v]) => labels.get(k) === v)) {
      const v = goParseFloat(m[3]);
      if (v !== undefined) return v;
    }
  }
  if (!seen) throw new Error(`metric '${selector.name}' not found`);
  throw new Error(`value ${valueLocation} not found`);
}

/**
 * metrics-api's `format: xml`. KEDA v2.20.2 unmarshals the answer into a
 * `map[string]interface{}`, which Go's encoding/xml refuses whatever the document: every XML
 * answer fails, with Go's words, and so it does here (measured with Go 1.26: `unknown type
 * map[string]interface {}`).
 */
export function kedaXmlValue(_body: string, _valueLocation: string): number {
  throw new Error("unknown type map[string]interface {}");
}

/** The SQS attributes KEDA's aws-sqs-queue trigger sums, by its two switches. */
export function kedaSqsAttributes(scaleOnInFlight: boolean, scaleOnDelayed: boolean): string[] {
  return [
    "ApproximateNumberOfMessages",
    ...(scaleOnInFlight ? ["ApproximateNumberOfMessagesNotVisible"] : []),
    ...(scaleOnDelayed ? ["ApproximateNumberOfMessagesDelayed"] : []),
  ];
}

/**
 * An SQS queue's length as KEDA reads it: the sum of `attributes` (each an int64 in decimal)
 * in the answer's `Attributes`. Throws KEDA's (and Go's) error for a missing or bad one.
 */
export function kedaSqsQueueLength(
  answer: Readonly<Record<string, string>>,
  attributes: readonly string[],
): number {
  let sum = 0n;
  for (const name of attributes) {
    const v = answer[name];
    if (v === undefined) throw new Error(`metric ${name} not found in SQS queue attributes`);
    if (!/^[+-]?[0-9]+$/.test(v)) {
      throw new Error(`strconv.ParseInt: parsing ${JSON.stringify(v)}: invalid syntax`);
    }
    const n = BigInt(v);
    if (n > 9223372036854775807n || n < -9223372036854775808n) {
      throw new Error(`strconv.ParseInt: parsing ${JSON.stringify(v)}: value out of range`);
    }
    sum += n;
  }
  return Number(sum);
}

/**
 * An InfluxDB v2 query's value as KEDA reads it: the first record's `_value`, a float or an
 * integer. `records` are the query's records in order (their `_value` as the client decoded it:
 * a number for a double, a bigint or number for a long).
 */
export function kedaInfluxValue(records: readonly { _value?: unknown }[]): number {
  if (records.length === 0) throw new Error("no results found from query");
  const v = records[0]._value;
  if (typeof v === "number") return v;
  if (typeof v === "bigint") return Number(v);
  const goType = v === undefined || v === null
    ? "<nil>"
    : typeof v === "string"
    ? "string"
    : typeof v === "boolean"
    ? "bool"
    : typeof v;
  throw new Error(`value of type ${goType} could not be converted into a float`);
}
