/**
 * Formula (composite) metrics of issue 21: an expression over an HPA's input metrics, in the
 * subset of expr-lang that KEDA's `advanced.scalingModifiers.formula` users write.
 *
 * - numbers; identifiers (letters, digits, `_`; an input metric name with `-` written as
 *   `_`); `nil`, `true`, `false`
 * - `+ - * / % **` (`/` always floating; by zero is an error), unary `- + !`
 * - comparisons `< <= > >= == !=`, `&& || !` (also `and`, `or`, `not`)
 * - `c ? a : b` (right-associative) and `a ?? b` (the first present value; as in expr-lang it
 *   binds tighter than every other operator: `a ?? b + 1` is `(a ?? b) + 1`)
 * - `min`, `max` (several arguments or one array), `abs`, `ceil`, `floor`, `round` (half away
 *   from zero), `float`, `int` (toward zero), array literals `[a, b]` and
 *   `count([a, b], {# > 1})` (a predicate with `#` as the element)
 *
 * A missing input is nil: `??` takes its right side, `==`/`!=` compare it, and any other use
 * is an error naming the input. Nothing is evaluated as JavaScript; the tokenizer, parser and
 * limits are json-eval's (src/core/expression.ts).
 *
 * @module
 */

import {
  type Grammar,
  type Lexicon,
  type Node,
  parseExpression,
  type Parser,
  roundHalfAway,
  type Token,
} from "./expression.ts";

/** A compiled formula: its source and the input identifiers it names, in first-use order. */
export interface CompiledFormula {
  /** The expression as written. */
  readonly source: string;
  /** The input identifiers it names, each once, in the order they first appear. */
  readonly identifiers: readonly string[];
}

/** Thrown for a formula that does not compile or evaluate; `message` says what and where. */
export class FormulaError extends Error {
  /** A formula error with `message` (lower case, naming the offending part). */
  constructor(message: string) {
    super(message);
    this.name = "FormulaError";
  }
}

interface Compiled {
  ast: Node;
  /** Where each identifier first appears. */
  positions: ReadonlyMap<string, number>;
}

/** The parsed form of each formula compileFormula returned. */
const COMPILED = new WeakMap<CompiledFormula, Compiled>();

const FUNCTIONS: Readonly<Record<string, { min: number; max: number }>> = {
  abs: { min: 1, max: 1 },
  ceil: { min: 1, max: 1 },
  floor: { min: 1, max: 1 },
  round: { min: 1, max: 1 },
  float: { min: 1, max: 1 },
  int: { min: 1, max: 1 },
  min: { min: 1, max: Infinity },
  max: { min: 1, max: Infinity },
  count: { min: 2, max: 2 },
};

const KEYWORDS: Readonly<Record<string, unknown>> = { nil: null, true: true, false: false };

const LEXICON: Lexicon = {
  operators: [
    "==",
    "!=",
    "<=",
    ">=",
    "&&",
    "||",
    "??",
    "**",
    "+",
    "-",
    "*",
    "/",
    "%",
    "<",
    ">",
    "!",
    "?",
    ":",
    "(",
    ")",
    ",",
    "[",
    "]",
    "{",
    "}",
    "#",
  ],
  aliases: { and: "&&", or: "||", not: "!" },
  digitIdentifiers: true,
};

/** The words, arrays and predicates of one formula being parsed, and the names it uses. */
class FormulaGrammar implements Grammar {
  readonly levels = [
    ["||"],
    ["&&"],
    ["==", "!=", "<", "<=", ">", ">="],
    ["+", "-"],
    ["*", "/", "%"],
  ];
  readonly prefix = ["-", "+", "!"];
  readonly power = "**";
  readonly tightest = "??";
  readonly ternary = true;
  readonly positions = new Map<string, number>();
  #predicates = 0;

  primary(p: Parser, t: Token, depth: number): Node | undefined {
    if (t.k === "id") {
      if (p.isOp(["("])) return this.#call(p, t.v, t.pos, depth);
      if (Object.hasOwn(KEYWORDS, t.v)) return { t: "lit", v: KEYWORDS[t.v], pos: t.pos };
      if (!this.positions.has(t.v)) this.positions.set(t.v, t.pos);
      return { t: "name", name: t.v, pos: t.pos };
    }
    if (t.k !== "op") return undefined;
    switch (t.v) {
      case "[": {
        const items = p.list("]", () => p.expression(depth + 1));
        return { t: "array", items, pos: t.pos };
      }
      case "#":
        if (this.#predicates === 0) {
          throw new Error(`"#" outside a predicate at position ${t.pos}`);
        }
        return { t: "element", pos: t.pos };
      case "{":
        throw new Error(
          `unexpected "{" at position ${t.pos} (a predicate is only the second argument of count)`,
        );
    }
    return undefined;
  }

  #call(p: Parser, name: string, pos: number, depth: number): Node {
    const arity = Object.hasOwn(FUNCTIONS, name) ? FUNCTIONS[name] : undefined;
    if (!arity) throw new Error(`unknown function ${name} at position ${pos}`);
    p.expect("(");
    const args = p.list(")", (i) => this.#argument(p, name, i, depth + 1));
    if (args.length < arity.min || args.length > arity.max) {
      const wanted = arity.max === Infinity
        ? `at least ${arity.min} argument`
        : `${arity.min} argument${arity.min === 1 ? "" : "s"}`;
      throw new Error(
        `function ${name} takes ${wanted}, got ${args.length} at position ${pos}`,
      );
    }
    return { t: "call", name, args, pos };
  }

  #argument(p: Parser, fn: string, index: number, depth: number): Node {
    const open = p.peek();
    if (fn !== "count" || index !== 1 || !p.isOp(["{"])) return p.expression(depth);
    p.next();
    this.#predicates++;
    const body = p.expression(depth + 1);
    this.#predicates--;
    p.expect("}");
    return { t: "closure", body, pos: open.pos };
  }
}

/**
 * Compile a formula; throws FormulaError for an empty expression, a syntax error (with its
 * position), or one too long or nested too deeply.
 *
 * @example
 * ```ts
 * compileFormula("(queue_length + backlog) / 2").identifiers; // ["queue_length", "backlog"]
 * ```
 */
export function compileFormula(source: string): CompiledFormula {
  if (source.trim() === "") throw new FormulaError("formula is empty");
  const grammar = new FormulaGrammar();
  let ast: Node;
  try {
    ast = parseExpression(source, { lexicon: LEXICON, grammar });
  } catch (err) {
    const message = (err as Error).message;
    throw new FormulaError(
      message === "unexpected end of expression"
        ? `${message} at position ${source.length}`
        : message,
    );
  }
  const formula: CompiledFormula = Object.freeze({
    source,
    identifiers: Object.freeze([...grammar.positions.keys()]),
  });
  COMPILED.set(formula, { ast, positions: grammar.positions });
  return formula;
}

function compiledOf(formula: CompiledFormula): Compiled {
  let compiled = COMPILED.get(formula);
  if (!compiled) {
    compiled = COMPILED.get(compileFormula(formula.source)) as Compiled;
    COMPILED.set(formula, compiled);
  }
  return compiled;
}

// ---- evaluation ----------------------------------------------------------------------

/** A missing value: from input `input` read at `pos`, or the `nil` literal (input null). */
class Nil {
  constructor(readonly input: string | null, readonly pos: number) {}
}

type Value = number | boolean | Nil | readonly Value[];

interface Scope {
  inputs: Readonly<Record<string, number | undefined>>;
  /** The elements of the predicates being run, innermost last. */
  elements: Value[];
  /** In the plan-time dry run, division by zero and non-finite values are not errors. */
  dryRun: boolean;
  /** Nodes evaluated so far, bounded by MAX_STEPS. */
  steps: number;
}

/**
 * The most nodes one evaluation visits: nested count() predicates multiply the work (ten
 * levels over ten-element arrays, 361 characters, would run for minutes).
 */
const MAX_STEPS = 100_000;

function describe(v: Value): string {
  if (v instanceof Nil) return "nil";
  if (Array.isArray(v)) return `an array of ${v.length}`;
  return typeof v === "boolean" ? "a boolean" : "a number";
}

/** A missing input's error, if `v` is one. */
function checkPresent(v: Value): void {
  if (v instanceof Nil && v.input !== null) {
    throw new FormulaError(`input ${v.input} has no value at position ${v.pos}`);
  }
}

function num(v: Value, what: string, pos: number): number {
  if (typeof v === "number") return v;
  checkPresent(v);
  throw new FormulaError(`${what} needs a number, got ${describe(v)} at position ${pos}`);
}

function bool(v: Value, what: string, pos: number): boolean {
  if (typeof v === "boolean") return v;
  checkPresent(v);
  throw new FormulaError(`${what} needs a boolean, got ${describe(v)} at position ${pos}`);
}

function finite(n: number, what: string, pos: number, scope: Scope): number {
  if (!Number.isFinite(n) && !scope.dryRun) {
    throw new FormulaError(`${what} gives ${showNumber(n)} at position ${pos}`);
  }
  return n;
}

function showNumber(n: number): string {
  return Number.isNaN(n) ? "NaN" : n > 0 ? "+Inf" : "-Inf";
}

function evaluate(node: Node, scope: Scope): Value {
  if (++scope.steps > MAX_STEPS) {
    throw new FormulaError(`formula needs more than ${MAX_STEPS} evaluation steps`);
  }
  switch (node.t) {
    case "lit":
      return node.v === null ? new Nil(null, node.pos) : node.v as number | boolean;
    case "name": {
      const v = scope.inputs[node.name];
      if (v === undefined) return new Nil(node.name, node.pos);
      if (!Number.isFinite(v)) {
        throw new FormulaError(`input ${node.name} is ${showNumber(v)}, not a finite number`);
      }
      return v;
    }
    case "element":
      return scope.elements[scope.elements.length - 1];
    case "array":
      return node.items.map((item) => evaluate(item, scope));
    case "cond":
      return bool(evaluate(node.test, scope), `operator "?"`, node.pos)
        ? evaluate(node.yes, scope)
        : evaluate(node.no, scope);
    case "unary": {
      const v = evaluate(node.arg, scope);
      const what = `operator "${node.op}"`;
      if (node.op === "!") return !bool(v, what, node.pos);
      const n = num(v, what, node.pos);
      return node.op === "-" ? -n : n;
    }
    case "binary":
      return evaluateBinary(node.op, node.left, node.right, node.pos, scope);
    case "call":
      return call(node.name, node.args, node.pos, scope);
  }
  throw new FormulaError(`unexpected expression at position ${node.pos}`);
}

function evaluateBinary(op: string, l: Node, r: Node, pos: number, scope: Scope): Value {
  const what = `operator "${op}"`;
  switch (op) {
    case "??": {
      const left = evaluate(l, scope);
      return left instanceof Nil ? evaluate(r, scope) : left;
    }
    case "&&":
      return bool(evaluate(l, scope), what, pos) && bool(evaluate(r, scope), what, pos);
    case "||":
      return bool(evaluate(l, scope), what, pos) || bool(evaluate(r, scope), what, pos);
  }
  const left = evaluate(l, scope);
  const right = evaluate(r, scope);
  if (op === "==" || op === "!=") return equal(left, right, what, pos) === (op === "==");
  const a = num(left, what, pos);
  const b = num(right, what, pos);
  switch (op) {
    case "<":
      return a < b;
    case "<=":
      return a <= b;
    case ">":
      return a > b;
    case ">=":
      return a >= b;
    case "+":
      return finite(a + b, what, pos, scope);
    case "-":
      return finite(a - b, what, pos, scope);
    case "*":
      return finite(a * b, what, pos, scope);
    case "**":
      return finite(a ** b, what, pos, scope);
    case "/":
    case "%":
      if (b === 0 && !scope.dryRun) {
        throw new FormulaError(`division by zero at position ${pos}`);
      }
      return finite(op === "/" ? a / b : a % b, what, pos, scope);
  }
  throw new FormulaError(`unsupported ${what} at position ${pos}`);
}

/** Numbers with numbers, booleans with booleans, nil with anything; arrays are an error. */
function equal(a: Value, b: Value, what: string, pos: number): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    throw new FormulaError(
      `${what} cannot compare ${describe(Array.isArray(a) ? a : b)} at position ${pos}`,
    );
  }
  if (a instanceof Nil || b instanceof Nil) return a instanceof Nil && b instanceof Nil;
  return a === b;
}

function call(name: string, args: readonly Node[], pos: number, scope: Scope): Value {
  const what = `${name}()`;
  if (name === "count") {
    const list = evaluate(args[0], scope);
    if (!Array.isArray(list)) {
      checkPresent(list as Value);
      throw new FormulaError(
        `count() needs an array, got ${describe(list as Value)} at position ${pos}`,
      );
    }
    const predicate = args[1].t === "closure" ? args[1].body : args[1];
    let n = 0;
    for (const element of list as readonly Value[]) {
      scope.elements.push(element);
      try {
        if (bool(evaluate(predicate, scope), "count() predicate", predicate.pos)) n++;
      } finally {
        scope.elements.pop();
      }
    }
    return n;
  }
  if (name === "min" || name === "max") {
    const values: number[] = [];
    for (const arg of args) {
      const v = evaluate(arg, scope);
      for (const item of Array.isArray(v) ? v as readonly Value[] : [v]) {
        values.push(num(item, what, pos));
      }
    }
    if (values.length === 0) throw new FormulaError(`${what} of an empty array at position ${pos}`);
    return name === "min" ? Math.min(...values) : Math.max(...values);
  }
  const x = num(evaluate(args[0], scope), what, pos);
  switch (name) {
    case "abs":
      return Math.abs(x);
    case "ceil":
      return Math.ceil(x);
    case "floor":
      return Math.floor(x);
    case "round":
      return roundHalfAway(x);
    case "int":
      return Math.trunc(x);
    case "float":
      return x;
  }
  throw new FormulaError(`unknown function ${name} at position ${pos}`);
}

function run(
  formula: CompiledFormula,
  inputs: Readonly<Record<string, number | undefined>>,
  dryRun: boolean,
): number | null {
  const { ast, positions } = compiledOf(formula);
  for (const [name, pos] of positions) {
    if (!Object.hasOwn(inputs, name)) {
      throw new FormulaError(`unknown identifier ${name} at position ${pos}`);
    }
  }
  const result = evaluate(ast, { inputs, elements: [], dryRun, steps: 0 });
  if (result instanceof Nil) return null;
  if (typeof result !== "number") {
    throw new FormulaError(`result is ${describe(result)}, not a number`);
  }
  if (!Number.isFinite(result) && !dryRun) {
    throw new FormulaError(`result is ${showNumber(result)}, not a finite number`);
  }
  return result === 0 ? 0 : result; // no -0
}

/**
 * Evaluate a compiled formula with its inputs' values: a number, or undefined for a missing
 * input. Returns the number, or null when the result is nil (`a ?? b` with both missing).
 * Throws FormulaError for an identifier not in `inputs`, arithmetic on a missing input, a
 * boolean, array or non-finite result, a division by zero, or more than 100,000 evaluation
 * steps (nested count() predicates).
 *
 * @example
 * ```ts
 * evaluateFormula(compileFormula("a ?? b ?? 5"), { a: undefined, b: 2 }); // 2
 * ```
 */
export function evaluateFormula(
  formula: CompiledFormula,
  inputs: Readonly<Record<string, number | undefined>>,
): number | null {
  return run(formula, inputs, false);
}

/**
 * Check a formula at plan time: it compiles, every identifier is in `known`, and a dry run
 * with every input at -1 gives a number or nil (a boolean is an error, as in KEDA; a division
 * by zero is not, since it depends on the values). Returns the compiled formula.
 *
 * @example
 * ```ts
 * checkFormula("trigger1 + trigger2", ["trigger1", "trigger2"]).identifiers;
 * // ["trigger1", "trigger2"]
 * ```
 */
export function checkFormula(source: string, known: readonly string[]): CompiledFormula {
  const formula = compileFormula(source);
  const { positions } = compiledOf(formula);
  for (const [name, pos] of positions) {
    if (!known.includes(name)) {
      throw new FormulaError(`unknown identifier ${name} at position ${pos}`);
    }
  }
  const inputs: Record<string, number> = {};
  for (const name of formula.identifiers) inputs[name] = -1;
  try {
    run(formula, inputs, true);
  } catch (err) {
    throw new FormulaError(`${(err as Error).message} (with every input at -1)`);
  }
  return formula;
}

/**
 * The identifier of an input metric in formulas: its name with `-` written as `_`.
 *
 * @example
 * ```ts
 * formulaIdentifier("queue-length"); // "queue_length"
 * ```
 */
export function formulaIdentifier(metricName: string): string {
  return metricName.replaceAll("-", "_");
}

/**
 * A value truncated toward zero at milli precision, as KEDA serves a formula's result
 * (`int64(v * 1000)` milli-units). Non-finite values are returned as they are.
 *
 * @example
 * ```ts
 * truncateToMilli(1.23456); // 1.234
 * truncateToMilli(-1.2345); // -1.234
 * ```
 */
export function truncateToMilli(value: number): number {
  if (!Number.isFinite(value)) return value;
  const milli = Math.trunc(value * 1000);
  return milli === 0 ? 0 : milli / 1000;
}
