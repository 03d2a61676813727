/**
 * The tokenizer, parser and limits shared by the core's two expression languages: json-eval
 * (src/core/kube_metrics_adapter/json_extract.ts) and formulas (src/core/formula.ts). Each language is a
 * `Lexicon` (its operators and words) and a `Grammar` (its levels and the primaries only it
 * has); each has its own evaluator, because their values differ (JSON values vs numbers,
 * booleans and nil). Nothing is ever evaluated as JavaScript.
 *
 * @module
 */

/** The longest expression accepted, in characters. */
export const MAX_EXPRESSION_LENGTH = 4096;
/** The deepest nesting accepted (parentheses, arguments, prefix operators, ternaries). */
export const MAX_DEPTH = 64;

/** One token; `pos` is its offset in the expression. */
export type Token =
  | { k: "num"; v: number; pos: number }
  | { k: "str"; v: string; pos: number }
  | { k: "id"; v: string; pos: number }
  | { k: "path"; v: string; pos: number }
  | { k: "op"; v: string; pos: number }
  | { k: "end"; pos: number };

/** A parsed expression. */
export type Node =
  | { t: "lit"; v: unknown; pos: number }
  | { t: "path"; path: string; pos: number }
  | { t: "name"; name: string; pos: number }
  | { t: "call"; name: string; args: Node[]; pos: number }
  | { t: "unary"; op: string; arg: Node; pos: number }
  | { t: "binary"; op: string; left: Node; right: Node; pos: number }
  | { t: "cond"; test: Node; yes: Node; no: Node; pos: number }
  | { t: "array"; items: Node[]; pos: number }
  | { t: "closure"; body: Node; pos: number }
  | { t: "element"; pos: number };

/** The words of a language. */
export interface Lexicon {
  /** Operators and punctuation; a longer one is listed before its prefixes. */
  operators: readonly string[];
  /** Spellings of operators, operators or words (`===` -> `==`, `and` -> `&&`). */
  aliases?: Readonly<Record<string, string>>;
  /** Quoted strings are tokens. */
  strings?: boolean;
  /** Where a JSONPath starting at `$` or `@` ends; without it `$` and `@` are unexpected. */
  scanPath?: (s: string, start: number) => number;
  /** A word may start with a digit (`5xx_rate`); a number wins where it is as long. */
  digitIdentifiers?: boolean;
}

/** Go's math.Round: half away from zero. */
export function roundHalfAway(x: number): number {
  return x < 0 ? -Math.round(-x) : Math.round(x);
}

/** Index of the quote closing the string that opens at `start`. */
export function endOfString(s: string, start: number): number {
  const quote = s[start];
  for (let i = start + 1; i < s.length; i++) {
    if (s[i] === "\\") i++;
    else if (s[i] === quote) return i;
  }
  throw new Error(`unterminated string at position ${start}`);
}

const NUMBER_RE = /^(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?/;
const WORD_RE = /^[A-Za-z_][A-Za-z0-9_]*/;
const DIGIT_WORD_RE = /^[A-Za-z0-9_]+/;

/** Split an expression into tokens; throws for a character no token starts with. */
export function tokenize(s: string, lexicon: Lexicon): Token[] {
  const tokens: Token[] = [];
  const aliases = lexicon.aliases ?? {};
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const rest = s.slice(i);
    const num = NUMBER_RE.exec(rest);
    const digitWord = lexicon.digitIdentifiers ? DIGIT_WORD_RE.exec(rest) : null;
    if (num && !(digitWord && digitWord[0].length > num[0].length)) {
      tokens.push({ k: "num", v: Number(num[0]), pos: i });
      i += num[0].length;
      continue;
    }
    if (lexicon.strings && (c === "'" || c === '"')) {
      const end = endOfString(s, i);
      const raw = s.slice(i + 1, end);
      tokens.push({ k: "str", v: raw.replace(/\\(.)/g, "$1"), pos: i });
      i = end + 1;
      continue;
    }
    if (lexicon.scanPath && (c === "$" || c === "@")) {
      const end = lexicon.scanPath(s, i);
      tokens.push({ k: "path", v: s.slice(i, end), pos: i });
      i = end;
      continue;
    }
    const word = digitWord ?? WORD_RE.exec(rest);
    if (word) {
      const op = Object.hasOwn(aliases, word[0]) ? aliases[word[0]] : undefined;
      tokens.push(op ? { k: "op", v: op, pos: i } : { k: "id", v: word[0], pos: i });
      i += word[0].length;
      continue;
    }
    const op = lexicon.operators.find((o) => rest.startsWith(o));
    if (!op) throw new Error(`unexpected "${c}" at position ${i}`);
    tokens.push({ k: "op", v: Object.hasOwn(aliases, op) ? aliases[op] : op, pos: i });
    i += op.length;
  }
  tokens.push({ k: "end", pos: s.length });
  return tokens;
}

/** The shape of a language: its operator levels and the primaries only it has. */
export interface Grammar {
  /** Left-associative binary operator levels, the loosest first. */
  levels: readonly (readonly string[])[];
  /** Prefix operators; they bind tighter than every level. */
  prefix: readonly string[];
  /** A right-associative operator tighter than a prefix on its left (`-2**2` is -4). */
  power?: string;
  /** A left-associative operator tighter than `power` (`??` in formulas). */
  tightest?: string;
  /** `c ? a : b`, looser than every level and right-associative. */
  ternary?: boolean;
  /** A primary that starts with a word or an operator the parser does not know. */
  primary(parser: Parser, token: Token, depth: number): Node | undefined;
}

/** A recursive-descent parser over tokens, with the depth limit. */
export class Parser {
  #pos = 0;
  readonly #tokens: Token[];
  readonly #grammar: Grammar;
  readonly #baseDepth: number;

  constructor(tokens: Token[], grammar: Grammar, baseDepth: number) {
    this.#tokens = tokens;
    this.#grammar = grammar;
    this.#baseDepth = baseDepth;
  }

  /** The whole token list as one expression. */
  parse(): Node {
    const node = this.expression(0);
    const t = this.peek();
    if (t.k !== "end") throw new Error(`unexpected ${show(t)} at position ${t.pos}`);
    return node;
  }

  /** The next token, not consumed. */
  peek(): Token {
    return this.#tokens[this.#pos];
  }

  /** The next token, consumed. */
  next(): Token {
    return this.#tokens[this.#pos++];
  }

  /** The next token's operator if it is one of `values` (not consumed), else null. */
  isOp(values: readonly string[]): string | null {
    const t = this.peek();
    return t.k === "op" && values.includes(t.v) ? t.v : null;
  }

  /** Consume the operator `op`, or throw naming what is there instead. */
  expect(op: string): void {
    const t = this.peek();
    if (t.k !== "op" || t.v !== op) {
      throw new Error(`expected "${op}" but found ${show(t)} at position ${t.pos}`);
    }
    this.#pos++;
  }

  /**
   * Comma-separated items up to `closer`, which is consumed (the opener already is): call
   * arguments, array literals. `item` reads one, given how many came before it.
   */
  list<T>(closer: string, item: (index: number) => T): T[] {
    const items: T[] = [];
    if (!this.isOp([closer])) {
      items.push(item(0));
      while (this.isOp([","])) {
        this.next();
        items.push(item(items.length));
      }
    }
    this.expect(closer);
    return items;
  }

  /** One full expression (ternary included) at nesting `depth`. */
  expression(depth: number): Node {
    const test = this.#binary(0, depth);
    if (!this.#grammar.ternary || !this.isOp(["?"])) return test;
    const pos = this.next().pos;
    this.#checkDepth(depth + 1);
    const yes = this.expression(depth + 1);
    this.expect(":");
    const no = this.expression(depth + 1);
    return { t: "cond", test, yes, no, pos };
  }

  #checkDepth(depth: number): void {
    if (this.#baseDepth + depth > MAX_DEPTH) throw new Error("expression nested too deeply");
  }

  #binary(level: number, depth: number): Node {
    const levels = this.#grammar.levels;
    if (level >= levels.length) return this.#unary(depth);
    let left = this.#binary(level + 1, depth);
    let op: string | null;
    while ((op = this.isOp(levels[level])) !== null) {
      const pos = this.next().pos;
      const right = this.#binary(level + 1, depth);
      left = { t: "binary", op, left, right, pos };
    }
    return left;
  }

  #unary(depth: number): Node {
    this.#checkDepth(depth);
    const op = this.isOp(this.#grammar.prefix);
    if (op) {
      const pos = this.next().pos;
      return { t: "unary", op, arg: this.#unary(depth + 1), pos };
    }
    const base = this.#tightest(depth);
    const power = this.#grammar.power;
    if (power && this.isOp([power])) {
      const pos = this.next().pos;
      return { t: "binary", op: power, left: base, right: this.#unary(depth + 1), pos };
    }
    return base;
  }

  #tightest(depth: number): Node {
    let left = this.#primary(depth);
    const tightest = this.#grammar.tightest;
    while (tightest && this.isOp([tightest])) {
      const pos = this.next().pos;
      left = { t: "binary", op: tightest, left, right: this.#primary(depth), pos };
    }
    return left;
  }

  #primary(depth: number): Node {
    const t = this.next();
    switch (t.k) {
      case "num":
      case "str":
        return { t: "lit", v: t.v, pos: t.pos };
      case "path":
        return { t: "path", path: t.v, pos: t.pos };
      case "end":
        throw new Error("unexpected end of expression");
      case "op":
        if (t.v === "(") {
          const inner = this.expression(depth + 1);
          this.expect(")");
          return inner;
        }
    }
    const node = this.#grammar.primary(this, t, depth);
    if (node) return node;
    throw new Error(`unexpected ${show(t)} at position ${t.pos}`);
  }
}

/** A token as messages quote it. */
export function show(t: Token): string {
  return t.k === "end" ? "the end" : `"${String(t.v)}"`;
}

/** Tokenize and parse `expr` nested `depth` deep, within the length and depth limits. */
export function parseExpression(
  expr: string,
  language: { lexicon: Lexicon; grammar: Grammar },
  depth = 0,
): Node {
  if (depth > MAX_DEPTH) throw new Error("expression nested too deeply");
  if (expr.length > MAX_EXPRESSION_LENGTH) {
    throw new Error(`expression longer than ${MAX_EXPRESSION_LENGTH} characters`);
  }
  return new Parser(tokenize(expr, language.lexicon), language.grammar, depth).parse();
}
