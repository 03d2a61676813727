/**
 * Kubernetes label selectors (k8s.io/apimachinery/pkg/labels): the string form that the
 * metrics APIs receive as `labelSelector` / `metricLabelSelector`, and the object form
 * (`metav1.LabelSelector`) of HPA metric selectors. Both become one `Selector`, a list of
 * requirements that must all match. `matchExpressions` are honoured everywhere (where
 * kube-metrics-adapter only looked at `matchLabels`).
 *
 * @module
 */

import type { LabelSelector } from "../types.ts";

/**
 * Requirement operators, spelled as the string form writes them, except: `exists` (a bare
 * key), `!` (does not exist: `!key`), `gt` (`key>5`) and `lt` (`key<5`).
 */
export type SelectorOperator = "=" | "==" | "!=" | "in" | "notin" | "exists" | "!" | "gt" | "lt";

/** One requirement of a selector. `values` are sorted and unique. */
export interface Requirement {
  key: string;
  operator: SelectorOperator;
  values: readonly string[];
}

/** A label selector: all requirements must match. The empty list selects everything. */
export type Selector = readonly Requirement[];

const OPERATOR_ORDER: readonly SelectorOperator[] = [
  "exists",
  "!",
  "=",
  "==",
  "!=",
  "in",
  "notin",
  "gt",
  "lt",
];

const NAME_RE = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const VALUE_RE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const DNS1123_SUBDOMAIN_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const INTEGER_RE = /^[+-]?\d+$/;
const MIN_INT64 = -(1n << 63n);
const MAX_INT64 = (1n << 63n) - 1n;

/** Why `key` is not a valid label key (a Kubernetes qualified name), or null if it is. */
function labelKeyProblem(key: string): string | null {
  const parts = key.split("/");
  let name = key;
  if (parts.length === 2) {
    const prefix = parts[0];
    name = parts[1];
    if (prefix.length === 0) return "prefix part must be non-empty";
    if (prefix.length > 253) return "prefix part must be no more than 253 characters";
    if (!DNS1123_SUBDOMAIN_RE.test(prefix)) {
      return "prefix part must be a lowercase DNS subdomain (e.g. example.com)";
    }
  } else if (parts.length > 2) {
    return "a qualified name must be a name with an optional DNS subdomain prefix and '/' (e.g. example.com/MyName)";
  }
  if (name.length === 0) return "name part must be non-empty";
  if (name.length > 63) return "name part must be no more than 63 characters";
  if (!NAME_RE.test(name)) {
    return "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
  }
  return null;
}

function validateKey(key: unknown): string {
  if (typeof key !== "string") throw new Error(`invalid label key ${JSON.stringify(key)}`);
  const problem = labelKeyProblem(key);
  if (problem) throw new Error(`invalid label key "${key}": ${problem}`);
  return key;
}

function validateValue(key: string, value: unknown): string {
  if (typeof value !== "string") {
    throw new Error(`invalid label value ${JSON.stringify(value)} for key "${key}"`);
  }
  if (value.length > 63) {
    throw new Error(
      `invalid label value "${value}" for key "${key}": must be no more than 63 characters`,
    );
  }
  if (!VALUE_RE.test(value)) {
    throw new Error(
      `invalid label value "${value}" for key "${key}": must be empty or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`,
    );
  }
  return value;
}

function parseInt64(s: string): bigint | null {
  if (!INTEGER_RE.test(s)) return null;
  const n = BigInt(s);
  return n < MIN_INT64 || n > MAX_INT64 ? null : n;
}

/** Validate and normalise one requirement (values sorted and unique), as NewRequirement does. */
function makeRequirement(
  key: unknown,
  operator: SelectorOperator,
  values: readonly unknown[],
): Requirement {
  const k = validateKey(key);
  switch (operator) {
    case "in":
    case "notin":
      if (values.length === 0) {
        throw new Error(`requirement on "${k}": operator ${operator} needs at least one value`);
      }
      break;
    case "=":
    case "==":
    case "!=":
      if (values.length !== 1) {
        throw new Error(`requirement on "${k}": operator ${operator} needs exactly one value`);
      }
      break;
    case "exists":
    case "!":
      if (values.length !== 0) {
        throw new Error(
          `requirement on "${k}": operator ${
            operator === "!" ? "DoesNotExist" : "Exists"
          } takes no values, got ${JSON.stringify(values)}`,
        );
      }
      break;
    case "gt":
    case "lt":
      if (values.length !== 1) {
        throw new Error(`requirement on "${k}": operator ${operator} needs exactly one value`);
      }
      if (typeof values[0] !== "string" || parseInt64(values[0]) === null) {
        throw new Error(
          `requirement on "${k}": operator ${operator} needs an integer, got ${
            JSON.stringify(values[0])
          }`,
        );
      }
      break;
    default:
      throw new Error(`unknown selector operator "${String(operator)}"`);
  }
  const checked = values.map((v) => validateValue(k, v));
  return { key: k, operator, values: [...new Set(checked)].sort(compareStrings) };
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareRequirements(a: Requirement, b: Requirement): number {
  return compareStrings(a.key, b.key) ||
    OPERATOR_ORDER.indexOf(a.operator) - OPERATOR_ORDER.indexOf(b.operator) ||
    compareStrings(a.values.join(","), b.values.join(","));
}

function sortSelector(reqs: Requirement[]): Selector {
  return reqs.sort(compareRequirements);
}

// ---- the string form ------------------------------------------------------------------

type TokenKind =
  | "id"
  | "in"
  | "notin"
  | "!"
  | "="
  | "=="
  | "!="
  | ">"
  | "<"
  | "("
  | ")"
  | ","
  | "end";

interface Token {
  kind: TokenKind;
  text: string;
}

const SPECIAL = new Set(["=", "!", "(", ")", ",", ">", "<"]);
const WHITESPACE = new Set([" ", "\t", "\r", "\n"]);

function tokenize(s: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (true) {
    while (i < s.length && WHITESPACE.has(s[i])) i++;
    if (i >= s.length) {
      tokens.push({ kind: "end", text: "end of string" });
      return tokens;
    }
    if (SPECIAL.has(s[i])) {
      const two = s.slice(i, i + 2);
      if (two === "==" || two === "!=") {
        tokens.push({ kind: two, text: two });
        i += 2;
      } else {
        tokens.push({ kind: s[i] as TokenKind, text: s[i] });
        i += 1;
      }
      continue;
    }
    let j = i;
    while (j < s.length && !SPECIAL.has(s[j]) && !WHITESPACE.has(s[j])) j++;
    const text = s.slice(i, j);
    tokens.push({ kind: text === "in" || text === "notin" ? text : "id", text });
    i = j;
  }
}

class SelectorParser {
  private pos = 0;
  constructor(private readonly tokens: Token[]) {}

  /** The current token; `in`/`notin` read as identifiers where a value or key is expected. */
  private peek(asValue: boolean): Token {
    const t = this.tokens[this.pos];
    return asValue && (t.kind === "in" || t.kind === "notin") ? { kind: "id", text: t.text } : t;
  }

  private next(asValue: boolean): Token {
    const t = this.peek(asValue);
    this.pos++;
    return t;
  }

  parse(): Requirement[] {
    const reqs: Requirement[] = [];
    let t = this.peek(true);
    if (t.kind === "end") return reqs;
    while (true) {
      if (t.kind !== "id" && t.kind !== "!") {
        throw new Error(`found "${t.text}", expected "!", a key or the end`);
      }
      reqs.push(this.requirement());
      const after = this.next(true);
      if (after.kind === "end") return reqs;
      if (after.kind !== ",") throw new Error(`found "${after.text}", expected "," or the end`);
      t = this.peek(true);
      if (t.kind !== "id" && t.kind !== "!") {
        throw new Error(`found "${t.text}", expected a key after ","`);
      }
    }
  }

  private requirement(): Requirement {
    let t = this.next(true);
    let negated = false;
    if (t.kind === "!") {
      negated = true;
      t = this.next(true);
    }
    if (t.kind !== "id") throw new Error(`found "${t.text}", expected a key`);
    const key = validateKey(t.text);
    const look = this.peek(true);
    if (negated) return makeRequirement(key, "!", []);
    if (look.kind === "end" || look.kind === ",") return makeRequirement(key, "exists", []);
    const op = this.next(false);
    switch (op.kind) {
      case "in":
      case "notin":
        return makeRequirement(key, op.kind, this.valueSet());
      case "=":
      case "==":
      case "!=":
        return makeRequirement(key, op.kind, [this.exactValue()]);
      case ">":
        return makeRequirement(key, "gt", [this.exactValue()]);
      case "<":
        return makeRequirement(key, "lt", [this.exactValue()]);
      default:
        throw new Error(`found "${op.text}", expected one of in, notin, =, ==, !=, >, <`);
    }
  }

  /** `(a,b,c)`; empty entries are the empty value, as in Go (`()` and `(a,)` hold ""). */
  private valueSet(): string[] {
    const open = this.next(true);
    if (open.kind !== "(") throw new Error(`found "${open.text}", expected "("`);
    const values: string[] = [];
    let expectValue = true;
    while (true) {
      const t = this.next(true);
      if (t.kind === "id") {
        if (!expectValue) throw new Error(`found "${t.text}", expected "," or ")"`);
        values.push(t.text);
        expectValue = false;
      } else if (t.kind === ",") {
        if (expectValue) values.push("");
        expectValue = true;
      } else if (t.kind === ")") {
        if (expectValue) values.push("");
        return values;
      } else {
        throw new Error(`found "${t.text}", expected a value, "," or ")"`);
      }
    }
  }

  /** The value after `=`, `==`, `!=`, `>`, `<`; empty when a comma or the end follows. */
  private exactValue(): string {
    const t = this.peek(true);
    if (t.kind === "end" || t.kind === ",") return "";
    this.pos++;
    if (t.kind !== "id") throw new Error(`found "${t.text}", expected a value`);
    return t.text;
  }
}

/**
 * Parse the string form of a label selector (`a=b,c!=d,e in (x,y),f notin (z),g,!h`,
 * also `==`, `key>5`, `key<5`), as k8s.io/apimachinery/pkg/labels.Parse does: whitespace
 * between tokens is ignored, the empty string selects everything, keys and values are
 * validated. Throws with the selector quoted.
 *
 * @example
 * ```ts
 * parseSelector("app=web, tier in (a,b)");
 * // [{key: "app", operator: "=", values: ["web"]}, {key: "tier", operator: "in", values: ["a", "b"]}]
 * ```
 */
export function parseSelector(s: string): Selector {
  try {
    return sortSelector(new SelectorParser(tokenize(s)).parse());
  } catch (err) {
    throw new Error(`invalid label selector "${s}": ${(err as Error).message}`);
  }
}

/**
 * Turn a `metav1.LabelSelector` into a `Selector`: every `matchLabels` entry becomes an
 * equality requirement and every `matchExpressions` entry (In, NotIn, Exists, DoesNotExist)
 * its requirement; all must match. Throws on In/NotIn without values, Exists/DoesNotExist
 * with values, unknown operators and invalid keys or values.
 *
 * @example
 * ```ts
 * fromLabelSelector({ matchLabels: { app: "web" }, matchExpressions: [{ key: "tier", operator: "Exists" }] });
 * ```
 */
export function fromLabelSelector(ls: LabelSelector): Selector {
  const reqs: Requirement[] = [];
  for (const [key, value] of Object.entries(ls.matchLabels ?? {})) {
    reqs.push(makeRequirement(key, "=", [value]));
  }
  for (const expr of ls.matchExpressions ?? []) {
    const values = expr.values ?? [];
    switch (expr.operator) {
      case "In":
        reqs.push(makeRequirement(expr.key, "in", values));
        break;
      case "NotIn":
        reqs.push(makeRequirement(expr.key, "notin", values));
        break;
      case "Exists":
        reqs.push(makeRequirement(expr.key, "exists", values));
        break;
      case "DoesNotExist":
        reqs.push(makeRequirement(expr.key, "!", values));
        break;
      default:
        throw new Error(
          `"${String(expr.operator)}" is not a valid label selector operator for key "${
            String(expr.key)
          }" (use In, NotIn, Exists or DoesNotExist)`,
        );
    }
  }
  return sortSelector(reqs);
}

function requirementMatches(r: Requirement, labels: Record<string, string>): boolean {
  const has = Object.hasOwn(labels, r.key);
  const value = has ? labels[r.key] : undefined;
  switch (r.operator) {
    case "=":
    case "==":
    case "in":
      return has && r.values.includes(value as string);
    case "!=":
    case "notin":
      return !has || !r.values.includes(value as string);
    case "exists":
      return has;
    case "!":
      return !has;
    case "gt":
    case "lt": {
      if (!has) return false;
      const actual = parseInt64(value as string);
      const bound = parseInt64(r.values[0]);
      if (actual === null || bound === null) return false;
      return r.operator === "gt" ? actual > bound : actual < bound;
    }
  }
}

/**
 * Whether `labels` satisfy every requirement of `sel` (Kubernetes semantics: `!=` and
 * `notin` match when the key is absent; `gt`/`lt` need an integer label value).
 *
 * @example
 * ```ts
 * matchesSelector(parseSelector("app=web,!canary"), { app: "web" }); // true
 * ```
 */
export function matchesSelector(sel: Selector, labels: Record<string, string>): boolean {
  return sel.every((r) => requirementMatches(r, labels));
}

function formatRequirement(r: Requirement): string {
  const values = [...new Set(r.values)].sort(compareStrings).join(",");
  switch (r.operator) {
    case "exists":
      return r.key;
    case "!":
      return `!${r.key}`;
    case "=":
    case "==":
    case "!=":
      return `${r.key}${r.operator}${values}`;
    case "in":
    case "notin":
      return `${r.key} ${r.operator} (${values})`;
    case "gt":
      return `${r.key}>${values}`;
    case "lt":
      return `${r.key}<${values}`;
  }
}

/**
 * The canonical string of a selector, as k8s.io/apimachinery/pkg/labels prints it:
 * requirements sorted by key (then operator), joined by `,`; values sorted, `in (a,b)`.
 *
 * @example
 * ```ts
 * formatSelector(parseSelector("b in (y,x), a=1")); // "a=1,b in (x,y)"
 * ```
 */
export function formatSelector(sel: Selector): string {
  return [...sel].sort(compareRequirements).map(formatRequirement).join(",");
}

/**
 * The canonical string of an optional `metav1.LabelSelector`: "" when there is none or it is
 * empty. Throws when it is invalid.
 *
 * @example
 * ```ts
 * labelSelectorString({ matchLabels: { b: "2", a: "1" } }); // "a=1,b=2"
 * labelSelectorString(null); // ""
 * ```
 */
export function labelSelectorString(ls: LabelSelector | null | undefined): string {
  return ls ? formatSelector(fromLabelSelector(ls)) : "";
}

/**
 * Whether a selector selects everything: no requirements. Accepts a `Selector` or an optional
 * `metav1.LabelSelector` (null, `{}` and empty lists are empty).
 */
export function isEmptySelector(sel: Selector | LabelSelector | null | undefined): boolean {
  if (!sel) return true;
  if (Array.isArray(sel)) return sel.length === 0;
  const ls = sel as LabelSelector;
  return Object.keys(ls.matchLabels ?? {}).length === 0 && (ls.matchExpressions ?? []).length === 0;
}
