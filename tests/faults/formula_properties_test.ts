/**
 * Property-based tests (fast-check, fixed seed, bounded runs) of the formula evaluator
 * (src/core/formula.ts over the parser of src/core/expression.ts), beyond the token-soup
 * property of tests/core/formula_test.ts:
 *
 * - hostile shapes at and past the limits (nesting of every kind up to hundreds deep, flat
 *   chains up to the length limit, arbitrary text and code units) with arbitrary input values
 *   (NaN, infinities, missing): compileFormula, evaluateFormula and checkFormula give a finite
 *   number, null or a FormulaError with a message, never another throw, never a stack
 *   overflow;
 * - arithmetic over the inputs agrees with the same arithmetic done in the test, or is a
 *   FormulaError exactly where a step divides by zero or leaves the finite numbers.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  checkFormula,
  compileFormula,
  evaluateFormula,
  FormulaError,
} from "../../src/core/formula.ts";
import { MAX_DEPTH, MAX_EXPRESSION_LENGTH } from "../../src/core/expression.ts";

/** The same inputs on every run and runtime; a failure prints its seed and path to replay. */
const SEED = 42;

type Inputs = Record<string, number | undefined>;

/** A throw must be a FormulaError with a message that is not the runtime's stack overflow. */
function assertFormulaError(err: unknown, what: string): void {
  assert.ok(err instanceof FormulaError, `${what} threw ${String(err)}`);
  assert.notEqual(err.message, "", `${what} threw an empty message`);
  assert.doesNotMatch(err.message, /call stack|too much recursion/i, `${what} overflowed`);
}

/** Compile, evaluate and check `source`; each gives its kind of result or a FormulaError. */
function exercise(source: string, inputs: Inputs): void {
  const what = JSON.stringify(source.length > 80 ? source.slice(0, 80) + "..." : source);
  let compiled;
  try {
    compiled = compileFormula(source);
  } catch (err) {
    assertFormulaError(err, `compile ${what}`);
    return;
  }
  for (const id of compiled.identifiers) assert.match(id, /^[A-Za-z0-9_]+$/, what);
  try {
    const result = evaluateFormula(compiled, inputs);
    assert.ok(result === null || Number.isFinite(result), `${what} gave ${result}`);
    assert.ok(!Object.is(result, -0), `${what} gave -0`);
  } catch (err) {
    assertFormulaError(err, `evaluate ${what}`);
  }
  try {
    checkFormula(source, Object.keys(inputs));
  } catch (err) {
    assertFormulaError(err, `check ${what}`);
  }
}

const value: fc.Arbitrary<number | undefined> = fc.option(
  fc.oneof(
    fc.double(),
    fc.integer(),
    fc.constantFrom(0, -0, 1, -1, 1e308, -1e308, 5e-324, NaN, Infinity, -Infinity),
  ),
  { nil: undefined },
);
const inputs: fc.Arbitrary<Inputs> = fc.record({ a: value, b: value, c: value });

/** `open` n times, `inner`, `close` n times. */
function nest(open: string, inner: string, close: string, n: number): string {
  return open.repeat(n) + inner + close.repeat(n);
}

/** Nesting of each kind the grammar has, around the depth limit and far past it. */
const deep: fc.Arbitrary<string> = fc.tuple(
  fc.oneof(
    fc.integer({ min: 0, max: MAX_DEPTH + 2 }),
    fc.integer({ min: MAX_DEPTH + 3, max: 1000 }),
  ),
  fc.constantFrom<(n: number) => string>(
    (n) => nest("(", "a", ")", n),
    (n) => nest("-", "a", "", n),
    (n) => nest("!", "true", "", n),
    (n) => nest("[", "a", "]", n),
    (n) => nest("min(", "a", ")", n),
    (n) => nest("abs(", "b", ")", n),
    (n) => nest("a ? ", "1", " : 2", n),
    (n) => nest("true ? ", "1", " : 2", n),
    (n) => nest("count([a, b], {", "# > 1", "}) > 0", n),
    (n) => nest("a ** ", "2", "", n),
    (n) => nest("(a ?? ", "b", ")", n),
    (n) => nest("-(", "a", ")", n),
    (n) => nest("[(", "c", ")]", n),
  ),
).map(([n, shape]) => shape(n));

/** Flat chains up to and past the length limit (a deep tree without nesting). */
const long: fc.Arbitrary<string> = fc.tuple(
  fc.integer({ min: 1, max: MAX_EXPRESSION_LENGTH / 4 + 10 }),
  fc.constantFrom(" + ", " * ", " - ", " / ", " ?? ", " && ", " || ", " == ", " < ", ","),
  fc.constantFrom("a", "b", "1", "0", "true", "nil"),
).map(([n, op, leaf]) => Array(n).fill(leaf).join(op));

const PIECES = ["a", "b", "c", "1", "0", "nil", "+", "-", "*", "/", "%", "**", "(", ")", "?"];

/** Arbitrary text, also with lone surrogates, and token soup. */
const text: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 60 }),
  fc.string({ unit: "binary", maxLength: 60 }),
  fc.string({
    unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
    maxLength: 30,
  }),
  fc.array(fc.constantFrom(...PIECES, ":", "??", "[", "]", "{", "}", "#", ","), {
    maxLength: 60,
  }).map((p) => p.join("")),
);

describe("property: formulas of any shape", () => {
  it("give a finite number, null or a FormulaError, whatever the nesting and inputs", () => {
    fc.assert(
      fc.property(deep, inputs, (source, values) => exercise(source, values)),
      {
        seed: SEED,
        numRuns: 600,
        examples: [
          [nest("(", "a", ")", MAX_DEPTH), { a: 1, b: 2, c: 3 }],
          [nest("(", "a", ")", MAX_DEPTH + 1), { a: 1, b: 2, c: 3 }],
          [nest("(", "a", ")", 2000), { a: 1, b: 2, c: 3 }],
          [nest("-", "a", "", 4000), { a: 1, b: 2, c: 3 }],
          [nest("[", "a", "]", 2000), { a: 1, b: 2, c: 3 }],
        ],
      },
    );
  });

  it("give a finite number, null or a FormulaError for chains up to the length limit", () => {
    fc.assert(
      fc.property(long, inputs, (source, values) => exercise(source, values)),
      {
        seed: SEED,
        numRuns: 300,
        examples: [
          [Array(MAX_EXPRESSION_LENGTH / 2 - 1).fill("a").join("+"), { a: 1, b: 2, c: 3 }],
          [Array(MAX_EXPRESSION_LENGTH / 2).fill("a").join("+"), { a: 1, b: 2, c: 3 }],
          [Array(MAX_EXPRESSION_LENGTH / 4).fill("a").join(" ??"), { a: undefined, b: 2, c: 3 }],
          ["1e308 * ".repeat(500) + "1", { a: 1, b: 2, c: 3 }],
        ],
      },
    );
  });

  it("give a finite number, null or a FormulaError for any text", () => {
    fc.assert(
      fc.property(text, inputs, (source, values) => exercise(source, values)),
      { seed: SEED, numRuns: 1500 },
    );
  });

  it("stop nested count() predicates that multiply the work, at run and at plan time", () => {
    // 10^10 predicate runs unbounded (minutes of a blocked event loop) in 361 characters
    const ten = "[" + Array(10).fill("a").join(",") + "]";
    const source = Array(10).fill(0).reduce((inner) => `count(${ten}, {${inner} > 0})`, "#");
    assert.equal(source.length, 361);
    const formula = compileFormula(source);
    assert.throws(() => evaluateFormula(formula, { a: 1 }), {
      name: "FormulaError",
      message: "formula needs more than 100000 evaluation steps",
    });
    assert.throws(() => checkFormula(source, ["a"]), {
      name: "FormulaError",
      message: "formula needs more than 100000 evaluation steps (with every input at -1)",
    });
    // three levels, 10^3 predicate runs, are well within the bound
    const three = Array(3).fill(0).reduce((inner) => `count(${ten}, {${inner} > 0})`, "#");
    assert.equal(evaluateFormula(compileFormula(three), { a: 1 }), 10);
  });

  it("evaluate a 2047-term sum exactly (no recursion limit below the length limit)", () => {
    const source = Array(MAX_EXPRESSION_LENGTH / 2).fill("a").join("+");
    assert.equal(source.length, MAX_EXPRESSION_LENGTH - 1);
    assert.equal(evaluateFormula(compileFormula(source), { a: 1 }), MAX_EXPRESSION_LENGTH / 2);
  });
});

// ---- arithmetic against the test's own ---------------------------------------------------

/** An arithmetic tree over a, b, c and small constants. */
type Expr =
  | { k: "leaf"; v: string }
  | { k: "neg"; e: Expr }
  | { k: "bin"; op: "+" | "-" | "*" | "/" | "%"; l: Expr; r: Expr };

const expr: fc.Arbitrary<Expr> = fc.letrec<{ e: Expr }>((tie) => ({
  e: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom("a", "b", "c", "0", "1", "2.5", "1e308").map((v): Expr => ({ k: "leaf", v })),
    tie("e").map((e): Expr => ({ k: "neg", e })),
    fc.tuple(
      fc.constantFrom<"+" | "-" | "*" | "/" | "%">("+", "-", "*", "/", "%"),
      tie("e"),
      tie("e"),
    )
      .map(([op, l, r]): Expr => ({ k: "bin", op, l, r })),
  ),
})).e;

/** Fully parenthesized, so that precedence is not what is tested here. */
function render(e: Expr): string {
  switch (e.k) {
    case "leaf":
      return e.v;
    case "neg":
      return `-(${render(e.e)})`;
    case "bin":
      return `(${render(e.l)} ${e.op} ${render(e.r)})`;
  }
}

/** The value, or "error" where a step divides by zero or is not finite. */
function reference(e: Expr, values: Record<string, number>): number | "error" {
  switch (e.k) {
    case "leaf":
      return e.v in values ? values[e.v] : Number(e.v);
    case "neg": {
      const v = reference(e.e, values);
      return v === "error" ? v : -v;
    }
    case "bin": {
      const l = reference(e.l, values);
      const r = reference(e.r, values);
      if (l === "error" || r === "error") return "error";
      if ((e.op === "/" || e.op === "%") && r === 0) return "error";
      const v = e.op === "+"
        ? l + r
        : e.op === "-"
        ? l - r
        : e.op === "*"
        ? l * r
        : e.op === "/"
        ? l / r
        : l % r;
      return Number.isFinite(v) ? v : "error";
    }
  }
}

describe("property: formula arithmetic", () => {
  it("agrees with the same arithmetic, or is a FormulaError where it divides by zero or overflows", () => {
    const finite = fc.oneof(
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.integer({ min: -5, max: 5 }),
    );
    fc.assert(
      fc.property(expr, fc.record({ a: finite, b: finite, c: finite }), (e, values) => {
        const source = render(e);
        const want = reference(e, values);
        let got: number | null | "error";
        try {
          got = evaluateFormula(compileFormula(source), values);
        } catch (err) {
          assertFormulaError(err, source);
          assert.match(
            (err as Error).message,
            /^(division by zero|operator "[-+*/%]" gives [-+]?(Inf|NaN)) at position \d+$|^expression nested too deeply$/,
          );
          if ((err as Error).message === "expression nested too deeply") return;
          got = "error";
        }
        const normal = want === "error" || want !== 0 ? want : 0; // no -0
        assert.equal(got, normal, `${source} with ${JSON.stringify(values)}`);
      }),
      { seed: SEED, numRuns: 1500 },
    );
  });
});
