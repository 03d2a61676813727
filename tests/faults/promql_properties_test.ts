/**
 * Property-based tests (fast-check, fixed seed, bounded runs) of the PromQL namespace rewriter
 * (src/core/promql_scope.ts), which reads queries HPA authors write:
 *
 * - any text gives a string or an Error with a message, never anything else, never a stack
 *   overflow; and whatever string it gives is scoped: it parses without error nodes, every
 *   selector in it matches `namespace="shop"` and no other namespace, and scoping it again
 *   changes nothing;
 * - a query generated from a small grammar of valid PromQL (selectors, ranges, subqueries,
 *   modifiers, aggregations, functions, binary operators) is scoped with exactly one
 *   `namespace="shop"` per selector, only by insertions (the input is a subsequence of the
 *   output, its string literals untouched);
 * - the same query with one selector of another namespace is refused, naming that selector at
 *   its offset.
 *
 * Each selector is checked on lezer's tree of the output, independently of the rewriter.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { parser } from "@prometheus-io/lezer-promql";
import { MAX_PROMQL_LENGTH, scopePromQL } from "../../src/core/promql_scope.ts";

/** The same inputs on every run and runtime; a failure prints its seed and path to replay. */
const SEED = 42;

const SHOP = { label: "namespace", value: "shop" };

type Outcome = { ok: true; value: string } | { ok: false; error: Error };

/** Scope `query`; a throw must be an Error with a message that is not a stack overflow. */
function outcome(query: string): Outcome {
  try {
    const value = scopePromQL(query, SHOP);
    assert.equal(typeof value, "string");
    return { ok: true, value };
  } catch (e) {
    assert.ok(e instanceof Error, `threw a non-Error: ${String(e)}`);
    assert.notEqual(e.message, "", "threw an Error with an empty message");
    assert.doesNotMatch(e.message, /call stack|too much recursion/i, "overflowed the stack");
    return { ok: false, error: e };
  }
}

/** What lezer sees in a query: its error nodes, and per selector its text and namespaces. */
interface Reading {
  errors: number;
  /** Per selector: the values of its `namespace="..."` (equality) matchers, decoded. */
  selectors: { text: string; from: number; namespaces: string[] }[];
  /** String literals outside selectors (label_replace's arguments ...), in order. */
  strings: string[];
}

/** A string literal's value: JSON rules for `"..."` (the generators use no other escapes). */
function decode(literal: string): string {
  if (literal.startsWith('"')) return JSON.parse(literal);
  return literal.slice(1, -1);
}

function read(query: string): Reading {
  const out: Reading = { errors: 0, selectors: [], strings: [] };
  parser.parse(query).iterate({
    enter(ref): boolean | void {
      if (ref.type.isError) out.errors++;
      if (ref.name === "StringLiteral") out.strings.push(query.slice(ref.from, ref.to));
      if (ref.name !== "VectorSelector") return;
      const namespaces: string[] = [];
      const matchers = ref.node.getChild("LabelMatchers");
      for (let m = matchers?.firstChild; m; m = m.nextSibling) {
        if (m.name !== "UnquotedLabelMatcher" && m.name !== "QuotedLabelMatcher") continue;
        const name = m.firstChild!;
        const label = name.name === "LabelName"
          ? query.slice(name.from, name.to)
          : decode(query.slice(name.from, name.to));
        const op = m.getChild("MatchOp")!.firstChild!.name;
        const value = m.getChild("StringLiteral")!;
        if (label === "namespace" && op === "EqlSingle") {
          namespaces.push(decode(query.slice(value.from, value.to)));
        }
      }
      out.selectors.push({ text: query.slice(ref.from, ref.to), from: ref.from, namespaces });
      return false;
    },
  });
  return out;
}

/** Whether `sub` is a subsequence of `text` (the rewriter only inserts). */
function isSubsequence(sub: string, text: string): boolean {
  let i = 0;
  for (let j = 0; i < sub.length && j < text.length; j++) if (sub[i] === text[j]) i++;
  return i === sub.length;
}

/** An output of the rewriter: parses cleanly, every selector in `shop` only, a fixed point. */
function assertScoped(input: string, output: string): Reading {
  const r = read(output);
  assert.equal(r.errors, 0, `${JSON.stringify(input)} -> ${JSON.stringify(output)} has errors`);
  for (const s of r.selectors) {
    assert.ok(s.namespaces.length >= 1, `${s.text} in ${JSON.stringify(output)} is not scoped`);
    for (const n of s.namespaces) assert.equal(n, "shop", `${s.text} in ${output}`);
  }
  assert.equal(scopePromQL(output, SHOP), output, `${JSON.stringify(output)} scoped again`);
  assert.ok(isSubsequence(input, output), `${input} -> ${output} is not only insertions`);
  return r;
}

// ---- arbitraries -----------------------------------------------------------------------

const SOUP = [
  "m",
  "up",
  "namespace",
  "sum",
  "by",
  "without",
  "offset",
  "@",
  "start()",
  "rate(",
  "info(",
  "label_replace(",
  "vector(",
  "{",
  "}",
  "[",
  "]",
  "(",
  ")",
  "[5m]",
  "[5m:1m]",
  "5m",
  ",",
  "=",
  "!=",
  "=~",
  "!~",
  '"shop"',
  '"other"',
  '"a.b"',
  "'shop'",
  "`x`",
  '"',
  "'",
  "`",
  "\\",
  "#",
  "\n",
  " ",
  "+",
  "-",
  "*",
  "/",
  "and",
  "or",
  "on",
  "group_left",
  "bool",
  ">",
  "1",
  "0x1F",
  "Inf",
  ":",
];

/** Token soup of PromQL pieces, and arbitrary text including lone surrogates. */
const anyText: fc.Arbitrary<string> = fc.oneof(
  fc.array(fc.constantFrom(...SOUP), { maxLength: 25 }).map((t) => t.join("")),
  fc.array(fc.constantFrom(...SOUP), { maxLength: 25 }).map((t) => t.join(" ")),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({
    unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
    maxLength: 20,
  }),
);

const NAMES = ["m", "up", "http_requests_total", "job:rate:5m", "sum", "by"];
const MATCHERS = [
  'a="b"',
  'code=~"5.."',
  'pod!="x"',
  '"a.b"="c"',
  'namespace=~"shop|x"',
  'namespace!="x"',
  '"namespace"!~"kube-.*"',
  'le!~"+Inf"',
  'namespace_name="other"',
];
const SAME = ['namespace="shop"', "namespace='shop'", '"namespace"="shop"', "namespace=`shop`"];

/** A vector selector; `bad` puts `namespace="other"` in it. */
function selectorArb(bad: boolean): fc.Arbitrary<string> {
  return fc.record({
    name: fc.option(fc.constantFrom(...NAMES), { nil: undefined }),
    quotedName: fc.boolean(),
    matchers: fc.array(fc.constantFrom(...MATCHERS), { maxLength: 3 }),
    same: fc.option(fc.constantFrom(...SAME), { nil: undefined, freq: 1 }),
    at: fc.nat(3),
    trailingComma: fc.boolean(),
    space: fc.constantFrom("", " ", "\n  "),
  }).map(({ name, quotedName, matchers, same, at, trailingComma, space }) => {
    const list = [...matchers];
    if (same) list.splice(Math.min(at, list.length), 0, same);
    if (bad) list.splice(Math.min(at, list.length), 0, 'namespace="other"');
    if (name && quotedName) list.unshift(`"${name}"`);
    const prefix = name && !quotedName ? name : "";
    if (list.length === 0 && prefix && at > 0) return prefix;
    const comma = trailingComma && list.length > 0 ? "," : "";
    return `${prefix}{${space}${list.join(`,${space}`)}${comma}${space}}`;
  });
}

const RANGES = ["[5m]", "[1h]", "[30s]"];
const MODIFIERS = ["", "", " offset 5m", " offset -1m", " @ 100", " @ start()", " @ end()"];

/** Valid PromQL (for lezer) of instant vectors; `selector` makes each leaf selector. */
function exprArb(selector: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const range = fc.tuple(selector, fc.constantFrom(...RANGES), fc.constantFrom(...MODIFIERS))
    .map(([s, r, m]) => `${s}${r}${m}`);
  return fc.letrec<{ e: string }>((tie) => ({
    e: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      fc.tuple(selector, fc.constantFrom(...MODIFIERS)).map(([s, m]) => `${s}${m}`),
      fc.tuple(
        fc.constantFrom("rate", "increase", "max_over_time", "absent_over_time", "changes"),
        range,
      ).map(([f, r]) => `${f}(${r})`),
      range.map((r) => `quantile_over_time(0.5, ${r})`),
      tie("e").map((e) => `(${e})`),
      tie("e").map((e) => `-${e}`),
      fc.tuple(
        fc.constantFrom("sum", "avg", "max", "min", "count", "stddev", "group"),
        fc.constantFrom("", "by (pod) ", "without (instance) ", "BY (a, b) "),
        tie("e"),
        fc.boolean(),
      ).map(([op, mod, e, after]) => after ? `${op}(${e}) ${mod}` : `${op} ${mod}(${e})`),
      fc.tuple(fc.constantFrom("topk(3, ", "quantile(0.9, ", 'count_values("v", '), tie("e"))
        .map(([f, e]) => `${f}${e})`),
      fc.tuple(
        fc.constantFrom("abs(", "sort(", "histogram_quantile(0.9, ", "absent(", "clamp_max("),
        tie("e"),
      ).map(([f, e]) => `${f}${e}${f === "clamp_max(" ? ", 1)" : ")"}`),
      tie("e").map((e) => `label_replace(${e}, "dst", "$1", "src", "(.*)")`),
      fc.tuple(tie("e"), fc.constantFrom("[5m:1m]", "[1h:]", "[10m:30s] offset 1m"))
        .map(([e, r]) => `max_over_time(${e}${r})`),
      fc.tuple(
        tie("e"),
        fc.constantFrom(
          " + ",
          " - ",
          " * ",
          " / ",
          " % ",
          " ^ ",
          " == ",
          " > bool ",
          " and ",
          " or ",
          " unless ",
          " + on(pod) group_left(node) ",
          " * ignoring(code) ",
          " atan2 ",
        ),
        tie("e"),
      ).map(([l, op, r]) => `${l}${op}${r}`),
      fc.tuple(tie("e"), fc.constantFrom(" * 2", " > 0", " or vector(0)", " - time()"))
        .map(([e, s]) => `${e}${s}`),
      fc.constantFrom("vector(1)", "time()", "scalar(vector(2)) * vector(3)"),
    ),
  })).e;
}

const validQuery = exprArb(selectorArb(false));

/** A valid query with one selector of namespace "other", wherever the generator put it. */
const queryWithOther: fc.Arbitrary<string> = fc.tuple(
  exprArb(selectorArb(false)),
  selectorArb(true),
  fc.constantFrom(" + ", " and ", " or on(pod) "),
  fc.boolean(),
).map(([e, bad, op, left]) => left ? `${bad}${op}${e}` : `${e}${op}${bad}`);

// ---- properties ------------------------------------------------------------------------

describe("property: scopePromQL on any text", () => {
  it("gives a scoped string or an Error, never anything else", () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const r = outcome(text);
        if (r.ok) assertScoped(text, r.value);
      }),
      {
        seed: SEED,
        numRuns: 3000,
        examples: [
          ["(".repeat(5000) + "m" + ")".repeat(5000)],
          ["abs(".repeat(3000) + "m" + ")".repeat(3000)],
          ["-".repeat(MAX_PROMQL_LENGTH - 1) + "m"],
          ["m{" + 'a="b",'.repeat(2000) + "}"],
          ["({[".repeat(5000)],
          ['"'.repeat(MAX_PROMQL_LENGTH)],
          ["m" + "[5m:]".repeat(3000)],
          ["m".repeat(MAX_PROMQL_LENGTH + 1)],
        ],
      },
    );
  });
});

describe("property: scopePromQL on valid PromQL", () => {
  it('puts exactly one namespace="shop" on every selector, only by insertions', () => {
    fc.assert(
      fc.property(validQuery, (query) => {
        assert.equal(read(query).errors, 0, `the generator wrote invalid PromQL: ${query}`);
        const out = scopePromQL(query, SHOP);
        const r = assertScoped(query, out);
        for (const s of r.selectors) {
          assert.deepEqual(s.namespaces, ["shop"], `${s.text} in ${out}`);
        }
        const before = read(query);
        assert.equal(r.selectors.length, before.selectors.length);
        assert.deepEqual(r.strings, before.strings, "string literals are never touched");
      }),
      { seed: SEED, numRuns: 1000 },
    );
  });

  it("is the identity on its own output", () => {
    fc.assert(
      fc.property(validQuery, (query) => {
        const once = scopePromQL(query, SHOP);
        assert.equal(scopePromQL(once, SHOP), once);
      }),
      { seed: SEED, numRuns: 500 },
    );
  });

  it("refuses a query with a selector of another namespace, naming it at its offset", () => {
    fc.assert(
      fc.property(queryWithOther, (query) => {
        const r = outcome(query);
        assert.ok(!r.ok, `${query} was scoped to ${r.ok ? r.value : ""}`);
        const m =
          /^selector (.+) at offset (\d+) matches (.+): the query may select only namespace="shop"$/s
            .exec(r.error.message);
        assert.ok(m, r.error.message);
        const [, text, offset, matcher] = m;
        assert.equal(matcher, 'namespace="other"');
        const at = Number(offset);
        const selector = read(query).selectors.find((s) => s.from === at);
        assert.ok(selector, `no selector at offset ${at} of ${query}`);
        assert.ok(selector.namespaces.includes("other"), `${selector.text} at ${at}`);
        if (text.length <= 64 && !text.includes("... (")) {
          assert.equal(text, selector.text.replace(/\s+/g, " "));
        }
      }),
      { seed: SEED, numRuns: 500 },
    );
  });
});
