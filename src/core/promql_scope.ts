/**
 * PromQL namespace enforcement (issue 25): a query an HPA author wrote is rewritten so that
 * every vector and matrix selector in it carries `LABEL="<the HPA's namespace>"`, and so reads
 * only that namespace's series.
 *
 * The query is parsed with the Prometheus project's own grammar (`@prometheus-io/lezer-promql`),
 * never with a parser of ours, and the matcher is spliced into the text at the selectors'
 * positions: the rest of the query (spacing, comments, strings) stays as it was written.
 *
 * - `metric` -> `metric{LABEL="v"}`, `metric{a="b"}` -> `metric{a="b",LABEL="v"}`, `{}` ->
 *   `{LABEL="v"}`; selectors inside ranges, subqueries, functions, aggregations, binary
 *   expressions and `offset`/`@` modifiers alike.
 * - A selector that already has `LABEL="v"` (the same value, in any quoting) is left as it is;
 *   one with `LABEL="other"` is refused. `!=`, `=~` and `!~` on LABEL are kept and the equality
 *   is added: matchers are ANDed, so the result can only select less.
 * - Refused: a syntax error (lezer recovers from errors; we never do), `info()` (it joins info
 *   series that no selector of the query names), any construct the grammar puts where we do not
 *   expect it, and a query longer than {@linkcode MAX_PROMQL_LENGTH}.
 * - The result is parsed again and checked: every selector carries the matcher, and scoping it
 *   again changes nothing.
 *
 * @module
 */

import { parser } from "@prometheus-io/lezer-promql";
import { quote } from "./quote.ts";

/** The longest query accepted, in characters; longer ones are refused before parsing. */
export const MAX_PROMQL_LENGTH = 16_384;

/**
 * The most brackets a query may hold open at once, and the most ranges and subqueries (`[`) it
 * may chain: the grammar's parser builds its tree recursively, and a query like
 * `m[5m:][5m:]...` a few thousand deep overflows the stack. Real queries stay far below.
 */
export const MAX_PROMQL_NESTING = 200;

/** Options of {@linkcode scopePromQL}. */
export interface ScopePromQLOptions {
  /** The label every selector must match, e.g. `namespace`. */
  label: string;
  /** Its value, e.g. the HPA's namespace. */
  value: string;
}

/** A node of lezer's syntax tree (lezer-promql exports no name for it). */
type SyntaxNode = ReturnType<typeof parser.parse>["topNode"];

/** Text inserted at an offset of the query. */
interface Insertion {
  at: number;
  text: string;
}

/** Legacy Prometheus label names: the matcher is written unquoted, so 2.x servers read it. */
const LABEL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Selectors and other values longer than this are shortened in messages. */
const WHOLE = 64;
/** How much of a shortened value is kept. */
const KEPT = 40;

const encoder = new TextEncoder();

/**
 * Rewrite `query` so that every selector in it matches `label="value"`; returns the rewritten
 * text, or the query itself when it selects no series (`1`, `vector(1)`, `time()`). Throws an
 * Error naming the selector, its offset, the label and the value when a selector names another
 * value, and for a syntax error, `info()`, or a query over {@linkcode MAX_PROMQL_LENGTH}.
 *
 * @example
 * ```ts
 * scopePromQL('sum(rate(http_requests_total{code="500"}[5m]))', {
 *   label: "namespace",
 *   value: "shop",
 * });
 * // 'sum(rate(http_requests_total{code="500",namespace="shop"}[5m]))'
 * ```
 */
export function scopePromQL(query: string, options: ScopePromQLOptions): string {
  checkOptions(options);
  if (query.length > MAX_PROMQL_LENGTH) {
    throw new Error(
      `query ${quote(query)} is longer than the limit of ${MAX_PROMQL_LENGTH} characters`,
    );
  }
  checkNesting(query);
  let insertions: Insertion[];
  try {
    insertions = scopeInsertions(query, options);
  } catch (err) {
    // a shape the nesting check lets through may still be too deep for the parser's recursion
    if (err instanceof RangeError) {
      throw new Error(`query ${quote(query)} is nested too deeply to be parsed`);
    }
    throw err;
  }
  let out = query;
  for (const { at, text } of insertions.sort((a, b) => b.at - a.at)) {
    out = out.slice(0, at) + text + out.slice(at);
  }
  if (insertions.length > 0) verify(query, out, options);
  return out;
}

/** Refuses a query that opens or chains more than {@linkcode MAX_PROMQL_NESTING} brackets. */
function checkNesting(query: string): void {
  let depth = 0;
  let deepest = 0;
  let ranges = 0;
  for (let i = 0; i < query.length; i++) {
    const c = query[i];
    if (c === '"' || c === "'" || c === "`") {
      // skip the string literal (a backslash escapes the next character, but not in backticks)
      for (i++; i < query.length && query[i] !== c; i++) if (c !== "`" && query[i] === "\\") i++;
    } else if (c === "(" || c === "{" || c === "[") {
      depth++;
      if (depth > deepest) deepest = depth;
      if (c === "[") ranges++;
    } else if ((c === ")" || c === "}" || c === "]") && depth > 0) depth--;
  }
  if (deepest > MAX_PROMQL_NESTING || ranges > MAX_PROMQL_NESTING) {
    throw new Error(
      `query ${quote(query)} nests or chains more than ${MAX_PROMQL_NESTING} brackets`,
    );
  }
}

function checkOptions({ label, value }: ScopePromQLOptions): void {
  if (!LABEL_NAME.test(label) || label.startsWith("__")) {
    throw new Error(
      `invalid label name ${
        quote(label)
      } for PromQL namespace enforcement: want letters, digits and underscores, not starting with a digit or "__"`,
    );
  }
  if (value === "") {
    throw new Error(
      `invalid value "" of label ${label} for PromQL namespace enforcement: the value is empty`,
    );
  }
  if (/\p{Cs}/u.test(value)) {
    throw new Error(
      `invalid value ${
        quote(value)
      } of label ${label} for PromQL namespace enforcement: the value is not valid unicode`,
    );
  }
}

/** Parse `query` and list what to insert, or throw for what cannot be scoped. */
function scopeInsertions(query: string, options: ScopePromQLOptions): Insertion[] {
  const tree = parser.parse(query);
  if (isEmpty(tree.topNode)) throw new Error("invalid PromQL at offset 0: empty query");
  const syntaxError = firstError(tree.topNode);
  if (syntaxError) {
    throw new Error(
      `invalid PromQL at offset ${syntaxError.from}: ${unexpected(query, syntaxError)}`,
    );
  }
  const insertions: Insertion[] = [];
  const want = `${options.label}="${escapeString(options.value)}"`;
  tree.iterate({
    enter(ref): boolean | void {
      const node = ref.node;
      switch (node.name) {
        case "VectorSelector": {
          const insertion = scopeSelector(query, node, options, want);
          if (insertion) insertions.push(insertion);
          return false;
        }
        case "FunctionCall":
          if (node.getChild("FunctionIdentifier")?.firstChild?.name === "Info") {
            throw new Error(
              `function info at offset ${node.from} cannot be scoped to ${want}: it reads info series that no selector of the query names`,
            );
          }
          return;
        // Anywhere but in a selector (which is not entered), these would select series that
        // the walk above does not scope.
        case "Identifier":
        case "LabelMatchers":
        case "UnquotedLabelMatcher":
        case "QuotedLabelMatcher":
        case "MetricName":
          throw unsupported(query, node, want);
      }
    },
  });
  return insertions;
}

/** The insertion that scopes one selector, null if it already matches `want`. */
function scopeSelector(
  query: string,
  selector: SyntaxNode,
  options: ScopePromQLOptions,
  want: string,
): Insertion | null {
  let name: SyntaxNode | null = null;
  let matchers: SyntaxNode | null = null;
  for (let c = selector.firstChild; c; c = c.nextSibling) {
    if (c.name === "Identifier" && !name && !matchers) name = c;
    else if (c.name === "LabelMatchers" && !matchers) matchers = c;
    else if (c.name !== "LineComment") throw unsupported(query, c, want);
  }
  if (!matchers) {
    if (!name) throw unsupported(query, selector, want);
    return { at: name.to, text: `{${want}}` };
  }
  if (query[matchers.from] !== "{") throw unsupported(query, matchers, want);
  let last: SyntaxNode | null = null;
  let scoped = false;
  for (let m = matchers.firstChild; m; m = m.nextSibling) {
    switch (m.name) {
      case "LineComment":
        continue;
      case "QuotedLabelName": // the metric name, `{"my.metric"}`
        break;
      case "UnquotedLabelMatcher":
      case "QuotedLabelMatcher":
        if (matchesSame(query, selector, m, options, want)) scoped = true;
        break;
      default:
        throw unsupported(query, m, want);
    }
    last = m;
  }
  if (scoped) return null;
  return last ? { at: last.to, text: `,${want}` } : { at: matchers.from + 1, text: want };
}

/**
 * Whether matcher `m` is `label="value"`; throws when it is `label="other"`. Other operators
 * on the label, and other labels, are false.
 */
function matchesSame(
  query: string,
  selector: SyntaxNode,
  m: SyntaxNode,
  options: ScopePromQLOptions,
  want: string,
): boolean {
  const nameNode = m.firstChild;
  const op = m.getChild("MatchOp")?.firstChild;
  const valueNode = m.getChild("StringLiteral");
  if (!nameNode || !op || !valueNode) throw unsupported(query, m, want);
  let isLabel: boolean;
  if (nameNode.name === "LabelName") {
    isLabel = query.slice(nameNode.from, nameNode.to) === options.label;
  } else {
    const literal = nameNode.getChild("StringLiteral");
    if (nameNode.name !== "QuotedLabelName" || !literal) throw unsupported(query, m, want);
    isLabel = sameBytes(decodeLiteral(query, literal), encoder.encode(options.label));
  }
  if (!isLabel || op.name !== "EqlSingle") return false;
  if (sameBytes(decodeLiteral(query, valueNode), encoder.encode(options.value))) return true;
  throw new Error(
    `selector ${shorten(textOf(query, selector))} at offset ${selector.from} matches ${
      shorten(textOf(query, m))
    }: the query may select only ${want}`,
  );
}

/** Parse the rewritten query again: no error, and scoping it again adds nothing. */
function verify(query: string, out: string, options: ScopePromQLOptions): void {
  let again: Insertion[];
  try {
    again = scopeInsertions(out, options);
  } catch (err) {
    throw new Error(
      `cannot scope query ${quote(query)} to ${options.label}="${
        escapeString(options.value)
      }": the rewritten query ${quote(out)} is refused: ${(err as Error).message}`,
    );
  }
  if (again.length > 0) {
    throw new Error(
      `cannot scope query ${quote(query)} to ${options.label}="${
        escapeString(options.value)
      }": the rewritten query has a selector without the matcher at offset ${again[0].at}`,
    );
  }
}

/** The first error node of the tree, in document order. */
function firstError(top: SyntaxNode): SyntaxNode | null {
  let found: SyntaxNode | null = null;
  top.cursor().iterate((ref) => {
    if (found) return false;
    if (ref.type.isError) {
      found = ref.node;
      return false;
    }
  });
  return found;
}

/** Whether the query has no expression: only spaces and comments. */
function isEmpty(top: SyntaxNode): boolean {
  for (let c = top.firstChild; c; c = c.nextSibling) {
    if (c.name !== "LineComment" && !(c.type.isError && c.from === c.to)) return false;
  }
  return true;
}

/** What the parser did not expect at an error node. */
function unexpected(query: string, error: SyntaxNode): string {
  const text = error.from < error.to
    ? query.slice(error.from, error.to)
    : /^\s*(\S*)/.exec(query.slice(error.from, error.from + 200))![1];
  if (text === "") return "unexpected end of query";
  return `unexpected ${JSON.stringify(text.length > 20 ? text.slice(0, 20) + "..." : text)}`;
}

function unsupported(query: string, node: SyntaxNode, want: string): Error {
  return new Error(
    `cannot scope ${shorten(textOf(query, node))} at offset ${node.from} to ${want}: ` +
      `unsupported PromQL construct ${node.name}`,
  );
}

/** A node's text with its whitespace runs (newlines too) as one space. */
function textOf(query: string, node: SyntaxNode): string {
  return query.slice(node.from, node.to).replace(/\s+/g, " ");
}

/** A value for a message: whole up to 64 characters, else its start and its length. */
function shorten(text: string): string {
  return text.length <= WHOLE ? text : `${text.slice(0, KEPT)}... (${text.length} characters)`;
}

/** `value` as the inside of a PromQL double-quoted string. */
function escapeString(value: string): string {
  let out = "";
  for (const c of value) {
    const code = c.codePointAt(0)!;
    if (c === '"' || c === "\\") out += "\\" + c;
    else if (c === "\n") out += "\\n";
    else if (c === "\r") out += "\\r";
    else if (c === "\t") out += "\\t";
    else if (code < 0x20 || code === 0x7f) out += "\\x" + code.toString(16).padStart(2, "0");
    else out += c;
  }
  return out;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** The bytes of a PromQL string literal, as Prometheus unquotes it; throws if it cannot. */
function decodeLiteral(query: string, node: SyntaxNode): Uint8Array {
  const literal = query.slice(node.from, node.to);
  const bytes = unquote(literal);
  if (bytes === null) {
    throw new Error(
      `invalid PromQL at offset ${node.from}: invalid string literal ${shorten(literal)}`,
    );
  }
  return bytes;
}

const SIMPLE_ESCAPES: Readonly<Record<string, number>> = {
  a: 7,
  b: 8,
  f: 12,
  n: 10,
  r: 13,
  t: 9,
  v: 11,
  "\\": 92,
};

/**
 * Go's unquoting of a `"..."`, `'...'` or raw `` `...` `` string as Prometheus applies it:
 * `\x` and octal escapes are bytes, `\u` and `\U` code points; null for an invalid literal.
 */
function unquote(literal: string): Uint8Array | null {
  const quote = literal[0];
  if (literal.length < 2 || literal[literal.length - 1] !== quote) return null;
  const body = literal.slice(1, -1);
  if (quote === "`") return body.includes("`") ? null : encoder.encode(body);
  if (quote !== '"' && quote !== "'") return null;
  const out: number[] = [];
  let i = 0;
  while (i < body.length) {
    const c = body[i];
    if (c === quote || c === "\n") return null;
    if (c !== "\\") {
      const code = body.codePointAt(i)!;
      const char = String.fromCodePoint(code);
      out.push(...encoder.encode(char));
      i += char.length;
      continue;
    }
    const e = body[i + 1];
    if (e === undefined) return null;
    if (Object.hasOwn(SIMPLE_ESCAPES, e)) {
      out.push(SIMPLE_ESCAPES[e]);
      i += 2;
    } else if (e === quote) {
      out.push(quote.charCodeAt(0));
      i += 2;
    } else if (e === "x" || e === "u" || e === "U") {
      const digits = e === "x" ? 2 : e === "u" ? 4 : 8;
      const hex = body.slice(i + 2, i + 2 + digits);
      if (!new RegExp(`^[0-9A-Fa-f]{${digits}}$`).test(hex)) return null;
      const n = parseInt(hex, 16);
      if (e === "x") out.push(n);
      else if (n > 0x10ffff || (n >= 0xd800 && n <= 0xdfff)) return null;
      else out.push(...encoder.encode(String.fromCodePoint(n)));
      i += 2 + digits;
    } else if (e >= "0" && e <= "7") {
      const oct = body.slice(i + 1, i + 4);
      if (!/^[0-7]{3}$/.test(oct) || parseInt(oct, 8) > 255) return null;
      out.push(parseInt(oct, 8));
      i += 4;
    } else {
      return null;
    }
  }
  return new Uint8Array(out);
}
