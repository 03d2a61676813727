import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  checkFormula,
  compileFormula,
  evaluateFormula,
  FormulaError,
  formulaIdentifier,
  truncateToMilli,
} from "../../src/core/formula.ts";

type Inputs = Record<string, number | undefined>;

function run(source: string, inputs: Inputs = {}): number | null {
  return evaluateFormula(compileFormula(source), inputs);
}

/** The FormulaError message of running `source`, failing if it does not throw one. */
function errorOf(source: string, inputs: Inputs = {}): string {
  try {
    run(source, inputs);
  } catch (err) {
    assert.ok(err instanceof FormulaError, `${source}: ${err}`);
    return err.message;
  }
  assert.fail(`${source} did not throw`);
}

describe("evaluateFormula", () => {
  const cases: [string, Inputs, number | null][] = [
    // numbers and identifiers
    ["42", {}, 42],
    ["1.5e3", {}, 1500],
    [".25", {}, 0.25],
    ["a", { a: 7 }, 7],
    ["queue_length", { queue_length: 3 }, 3],
    ["5xx_rate * 2", { "5xx_rate": 4 }, 8],
    ["2e+3", {}, 2000],
    // arithmetic
    ["a + b", { a: 1, b: 2 }, 3],
    ["a - b", { a: 1, b: 2 }, -1],
    ["a * b", { a: 3, b: 4 }, 12],
    ["7 / 2", {}, 3.5],
    ["1 / 3", {}, 1 / 3],
    ["7 % 3", {}, 1],
    ["-7 % 3", {}, -1],
    ["7.5 % 2", {}, 1.5],
    ["2 ** 10", {}, 1024],
    ["2 ** 3 ** 2", {}, 512],
    ["-2 ** 2", {}, -4],
    ["-a", { a: 3 }, -3],
    ["+a", { a: 3 }, 3],
    ["- -a", { a: 3 }, 3],
    ["1 + 2 * 3", {}, 7],
    ["(1 + 2) * 3", {}, 9],
    ["10 - 4 - 3", {}, 3],
    ["0 * -1", {}, 0],
    // comparisons, logic, ternaries
    ["a < b ? 1 : 0", { a: 1, b: 2 }, 1],
    ["a <= b ? 1 : 0", { a: 2, b: 2 }, 1],
    ["a > b ? 1 : 0", { a: 2, b: 2 }, 0],
    ["a >= b ? 1 : 0", { a: 2, b: 2 }, 1],
    ["a == b ? 1 : 0", { a: 2, b: 2 }, 1],
    ["a != b ? 1 : 0", { a: 2, b: 2 }, 0],
    ["a > 1 && b > 1 ? 1 : 0", { a: 2, b: 1 }, 0],
    ["a > 1 || b > 1 ? 1 : 0", { a: 2, b: 1 }, 1],
    ["!(a > 1) ? 1 : 0", { a: 2 }, 0],
    ["a > 1 and not (b > 1) ? 1 : 0", { a: 2, b: 1 }, 1],
    ["a > 5 or b > 5 ? 1 : 0", { a: 2, b: 1 }, 0],
    ["true ? 1 : 2", {}, 1],
    ["false ? 1 : 2", {}, 2],
    ["a > 1 ? 10 : a > 0 ? 5 : 0", { a: 0.5 }, 5],
    ["a > 1 ? 10 : a > 0 ? 5 : 0", { a: -1 }, 0],
    ["false || a == 2 ? 1 : 0", { a: 2 }, 1],
    // short circuits do not read the other side
    ["a > 0 || b > 0 ? 1 : 0", { a: 1, b: undefined }, 1],
    ["a > 0 ? a : b", { a: 1, b: undefined }, 1],
    // ?? and nil
    ["a ?? b", { a: 1, b: 2 }, 1],
    ["a ?? b", { a: undefined, b: 2 }, 2],
    ["a ?? b", { a: undefined, b: undefined }, null],
    ["a ?? b ?? 5", { a: undefined, b: undefined }, 5],
    ["a ?? b + 1", { a: undefined, b: 2 }, 3],
    ["a ?? 0 + b ?? 0", { a: undefined, b: undefined }, 0],
    ["a", { a: undefined }, null],
    ["nil", {}, null],
    ["a == nil ? 0 : a", { a: undefined }, 0],
    ["a != nil ? a : 9", { a: 4 }, 4],
    ["a > 0 ? b : 1", { a: 1, b: undefined }, null],
    // builtins
    ["min(a, b, 3)", { a: 5, b: 4 }, 3],
    ["max(a, b, 3)", { a: 5, b: 4 }, 5],
    ["min([a, b])", { a: 5, b: 4 }, 4],
    ["max([a, b], 9)", { a: 5, b: 4 }, 9],
    ["max(-1)", {}, -1],
    ["abs(-2.5)", {}, 2.5],
    ["ceil(1.2)", {}, 2],
    ["ceil(-1.2)", {}, -1],
    ["ceil(-0.5)", {}, 0],
    ["floor(1.8)", {}, 1],
    ["floor(-1.2)", {}, -2],
    ["round(2.5)", {}, 3],
    ["round(-2.5)", {}, -3],
    ["round(2.4)", {}, 2],
    ["float(3)", {}, 3],
    ["float(a / 2)", { a: 3 }, 1.5],
    ["int(2.9)", {}, 2],
    ["int(-2.9)", {}, -2],
    ["count([a, b, 3], {# > 1})", { a: 1, b: 2 }, 2],
    ["count([], {# > 1})", {}, 0],
    ["count([a, b], {# ?? 0 > 1})", { a: undefined, b: 2 }, 1],
    ["count([[1, 2], [3]], {count(#, {# > 1}) > 0})", {}, 2],
    ["count([1, 2, 3], {# % 2 == 1}) * 10", {}, 20],
    // KEDA's examples
    ["trigger1 + trigger2", { trigger1: 3, trigger2: 4 }, 7],
    ["(trigger1 + trigger2)/2", { trigger1: 3, trigger2: 4 }, 3.5],
    ["workload_trig < 5 ? cron_trig + workload_trig : 5", { workload_trig: 2, cron_trig: 6 }, 8],
    ["workload_trig < 5 ? cron_trig + workload_trig : 5", { workload_trig: 7, cron_trig: 6 }, 5],
    ["count([trig_one,trig_two],{#>1}) > 1 ? 5 : 0", { trig_one: 2, trig_two: 3 }, 5],
    ["count([trig_one,trig_two],{#>1}) > 1 ? 5 : 0", { trig_one: 2, trig_two: 1 }, 0],
    ["float(trig_one < 2 ? trig_one+trig_two >= 2 ? 5 : 10 : 0)", { trig_one: 1, trig_two: 1 }, 5],
    [
      "float(trig_one < 2 ? trig_one+trig_two >= 2 ? 5 : 10 : 0)",
      { trig_one: 1, trig_two: 0.5 },
      10,
    ],
    ["float(trig_one < 2 ? trig_one+trig_two >= 2 ? 5 : 10 : 0)", { trig_one: 3, trig_two: 1 }, 0],
    ["trig_one ?? trig_two ?? 5", { trig_one: 1, trig_two: 2 }, 1],
    ["trig_one ?? trig_two ?? 5", { trig_one: undefined, trig_two: 2 }, 2],
    ["trig_one ?? trig_two ?? 5", { trig_one: undefined, trig_two: undefined }, 5],
  ];
  for (const [source, inputs, want] of cases) {
    it(`${source} with ${JSON.stringify(inputs)} is ${want}`, () => {
      assert.equal(run(source, inputs), want);
    });
  }

  it("never returns -0", () => {
    assert.ok(Object.is(run("-a", { a: 0 }), 0));
    assert.ok(Object.is(run("ceil(-0.5)"), 0));
  });

  it("re-compiles a formula object it did not make from its source", () => {
    assert.equal(evaluateFormula({ source: "a * 2", identifiers: ["a"] }, { a: 4 }), 8);
  });
});

describe("formula errors", () => {
  const cases: [string, Inputs, string][] = [
    ["", {}, "formula is empty"],
    ["   ", {}, "formula is empty"],
    ["a +", { a: 1 }, "unexpected end of expression at position 3"],
    ["(a + 1", { a: 1 }, 'expected ")" but found the end at position 6'],
    ["a + )", { a: 1 }, 'unexpected ")" at position 4'],
    ["a b", { a: 1, b: 1 }, 'unexpected "b" at position 2'],
    ["a $ b", {}, 'unexpected "$" at position 2'],
    ["'x'", {}, `unexpected "'" at position 0`],
    ["a ? 1", { a: 1 }, 'expected ":" but found the end at position 5'],
    ["sqrt(4)", {}, "unknown function sqrt at position 0"],
    ["abs(1, 2)", {}, "function abs takes 1 argument, got 2 at position 0"],
    ["count([1])", {}, "function count takes 2 arguments, got 1 at position 0"],
    ["min()", {}, "function min takes at least 1 argument, got 0 at position 0"],
    ["#", {}, '"#" outside a predicate at position 0'],
    [
      "{# > 1}",
      {},
      'unexpected "{" at position 0 (a predicate is only the second argument of count)',
    ],
    ["x + 1", {}, "unknown identifier x at position 0"],
    ["a + 1", { a: undefined }, "input a has no value at position 0"],
    [
      "queue_length * 2",
      { queue_length: undefined },
      "input queue_length has no value at position 0",
    ],
    ["max(a, 1)", { a: undefined }, "input a has no value at position 4"],
    ["a > 1 ? 1 : 0", { a: undefined }, "input a has no value at position 0"],
    ["float(a)", { a: undefined }, "input a has no value at position 6"],
    ["count([a], {# > 1})", { a: undefined }, "input a has no value at position 7"],
    ["(a ?? b) * 2", { a: undefined, b: undefined }, "input b has no value at position 6"],
    ["nil + 1", {}, 'operator "+" needs a number, got nil at position 4'],
    ["a > 1", { a: 2 }, "result is a boolean, not a number"],
    ["[a, 1]", { a: 2 }, "result is an array of 2, not a number"],
    ["true + 1", {}, 'operator "+" needs a number, got a boolean at position 5'],
    ["a && true ? 1 : 0", { a: 1 }, 'operator "&&" needs a boolean, got a number at position 2'],
    ["!a", { a: 1 }, 'operator "!" needs a boolean, got a number at position 0'],
    ["a ? 1 : 0", { a: 1 }, 'operator "?" needs a boolean, got a number at position 2'],
    ["float(true)", {}, "float() needs a number, got a boolean at position 0"],
    ["count(1, {# > 0})", {}, "count() needs an array, got a number at position 0"],
    [
      "count([1], {#})",
      {},
      "count() predicate needs a boolean, got a number at position 12",
    ],
    ["min([])", {}, "min() of an empty array at position 0"],
    ["[1] == [1] ? 1 : 0", {}, 'operator "==" cannot compare an array of 1 at position 4'],
    ["a / 0", { a: 1 }, "division by zero at position 2"],
    ["a / (b - b)", { a: 1, b: 2 }, "division by zero at position 2"],
    ["a % 0", { a: 1 }, "division by zero at position 2"],
    ["1e308 * 10", {}, 'operator "*" gives +Inf at position 6'],
    ["-1e308 - 1e308", {}, 'operator "-" gives -Inf at position 7'],
    ["a", { a: NaN }, "input a is NaN, not a finite number"],
    ["a + 1", { a: Infinity }, "input a is +Inf, not a finite number"],
    ["(-8) ** 0.5", {}, 'operator "**" gives NaN at position 5'],
    ["a".repeat(4097), {}, "expression longer than 4096 characters"],
    ["(".repeat(65) + "1" + ")".repeat(65), {}, "expression nested too deeply"],
    ["1 ? ".repeat(65) + "1" + " : 1".repeat(65), {}, "expression nested too deeply"],
    ["-".repeat(65) + "1", {}, "expression nested too deeply"],
  ];
  for (const [source, inputs, want] of cases) {
    it(`${source.slice(0, 40)} with ${JSON.stringify(inputs)}: ${want}`, () => {
      assert.equal(errorOf(source, inputs), want);
    });
  }

  it("accepts 64 nested parentheses", () => {
    assert.equal(run("(".repeat(63) + "1" + ")".repeat(63)), 1);
  });

  it("compiles a long flat sum within the length limit", () => {
    assert.equal(run(Array(2048).fill("1").join("+")), 2048);
  });

  it("is a FormulaError named FormulaError", () => {
    assert.throws(() => compileFormula(""), (err: Error) => {
      return err instanceof FormulaError && err instanceof Error && err.name === "FormulaError";
    });
  });
});

describe("compileFormula", () => {
  it("lists identifiers once, in first-use order, without keywords", () => {
    assert.deepEqual(
      compileFormula("b + a * b ?? c > nil ? true : max(d, a)").identifiers,
      ["b", "a", "c", "d"],
    );
    assert.deepEqual(compileFormula("count([x, y], {# > 1})").identifiers, ["x", "y"]);
    assert.deepEqual(compileFormula("1 + 2").identifiers, []);
  });

  it("keeps the source", () => {
    assert.equal(compileFormula(" a + 1 ").source, " a + 1 ");
  });
});

describe("checkFormula", () => {
  it("returns the compiled formula of a valid one", () => {
    const f = checkFormula("(trigger1 + trigger2)/2", ["trigger1", "trigger2", "other"]);
    assert.deepEqual(f.identifiers, ["trigger1", "trigger2"]);
    assert.equal(evaluateFormula(f, { trigger1: 1, trigger2: 2 }), 1.5);
  });

  const cases: [string, string[], string][] = [
    ["", ["a"], "formula is empty"],
    ["a +", ["a"], "unexpected end of expression at position 3"],
    ["a + cpu", ["a"], "unknown identifier cpu at position 4"],
    ["a > b", ["a", "b"], "result is a boolean, not a number (with every input at -1)"],
    [
      "a > 0 ? 1 : a > b",
      ["a", "b"],
      "result is a boolean, not a number (with every input at -1)",
    ],
    ["[a]", ["a"], "result is an array of 1, not a number (with every input at -1)"],
    [
      "a && b ? 1 : 0",
      ["a", "b"],
      'operator "&&" needs a boolean, got a number at position 2 (with every input at -1)',
    ],
  ];
  for (const [source, known, want] of cases) {
    it(`rejects ${JSON.stringify(source)}: ${want}`, () => {
      assert.throws(
        () => checkFormula(source, known),
        (err: Error) => err instanceof FormulaError && err.message === want,
      );
    });
  }

  const valid: [string, string[]][] = [
    ["trigger1 + trigger2", ["trigger1", "trigger2"]],
    ["a / (b + 1)", ["a", "b"]], // divides by zero at -1: depends on values, not an error
    ["a % (b + 1)", ["a", "b"]],
    ["1e308 * 10 + a", ["a"]],
    ["a ?? b", ["a", "b"]],
    ["a > 0 ? a : nil", ["a"]], // nil is a result (fallback), not a type error
    ["trig_one ?? trig_two ?? 5", ["trig_one", "trig_two"]],
    ["count([trig_one,trig_two],{#>1}) > 1 ? 5 : 0", ["trig_one", "trig_two"]],
    ["float(trig_one < 2 ? trig_one+trig_two >= 2 ? 5 : 10 : 0)", ["trig_one", "trig_two"]],
  ];
  for (const [source, known] of valid) {
    it(`accepts ${source}`, () => {
      assert.equal(checkFormula(source, known).source, source);
    });
  }
});

describe("truncateToMilli", () => {
  const cases: [number, number][] = [
    [1.23456, 1.234],
    [-0.5, -0.5],
    [-1.2345, -1.234],
    [0.0009, 0],
    [-0.0009, 0],
    [1e-12, 0],
    [0, 0],
    [2, 2],
    [1234.5678, 1234.567],
    [1.005, 1.004], // 1.005 * 1000 is 1004.9999999999999 in binary, as in KEDA's int64(v*1000)
  ];
  for (const [value, want] of cases) {
    it(`${value} -> ${want}`, () => {
      assert.ok(Object.is(truncateToMilli(value), want), `got ${truncateToMilli(value)}`);
    });
  }
});

describe("formulaIdentifier", () => {
  const cases: [string, string][] = [
    ["queue-length", "queue_length"],
    ["a-b-c", "a_b_c"],
    ["rps", "rps"],
    ["already_under", "already_under"],
  ];
  for (const [name, want] of cases) {
    it(`${name} -> ${want}`, () => assert.equal(formulaIdentifier(name), want));
  }
});

describe("formula properties", () => {
  const pieces = [
    "a",
    "b",
    "c",
    "nil",
    "true",
    "0",
    "1",
    "-1",
    "2.5",
    "1e308",
    "+",
    "-",
    "*",
    "/",
    "%",
    "**",
    "<",
    "==",
    "!=",
    "&&",
    "||",
    "!",
    "?",
    ":",
    "??",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "#",
    ",",
    "min(",
    "max(",
    "abs(",
    "ceil(",
    "round(",
    "int(",
    "float(",
    "count(",
    " ",
  ];
  const source = fc.oneof(
    fc.string({ maxLength: 40 }),
    fc.array(fc.constantFrom(...pieces), { maxLength: 30 }).map((p) => p.join("")),
    fc.array(fc.constantFrom(...pieces), { maxLength: 20 }).map((p) => p.join(" ")),
  );
  const value = fc.option(
    fc.oneof(
      fc.double(),
      fc.integer(),
      fc.constantFrom(0, -0, -1, 1, 1e308, NaN, Infinity, -Infinity),
    ),
    { nil: undefined },
  );
  const inputs = fc.record({ a: value, b: value, c: value });

  it("returns a finite number or null, or throws a FormulaError", () => {
    fc.assert(
      fc.property(source, inputs, (src, values) => {
        let compiled;
        try {
          compiled = compileFormula(src);
        } catch (err) {
          assert.ok(err instanceof FormulaError, `compile ${JSON.stringify(src)}: ${err}`);
          return;
        }
        try {
          const result = evaluateFormula(compiled, values);
          assert.ok(result === null || Number.isFinite(result), `${src} gave ${result}`);
        } catch (err) {
          assert.ok(err instanceof FormulaError, `evaluate ${JSON.stringify(src)}: ${err}`);
        }
        try {
          checkFormula(src, ["a", "b", "c"]);
        } catch (err) {
          assert.ok(err instanceof FormulaError, `check ${JSON.stringify(src)}: ${err}`);
        }
      }),
      { seed: 42, numRuns: 2000 },
    );
  });
});
