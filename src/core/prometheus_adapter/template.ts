/**
 * The part of Go's text/template that prometheus-adapter configs use, with its `<<` `>>`
 * delimiters: text; actions with trim markers (`<<-`, `->>`); a `/*` comment as a whole
 * action; pipelines of commands joined by `|`; operands `.`, `.Field.Key` (struct fields, map keys),
 * `$`, `$var.Field`, string (quoted and raw), integer and boolean literals, parenthesised
 * pipelines; variables (`$x := ...`, `$x = ...`); `if` / `else if` / `else`, `range` (over
 * slices and maps in key order, with `$i, $v :=`), `with`, `end`; the functions `index`,
 * `len`, `print`, `printf` (verbs `%s %v %q %d %%`), `println`, `eq`, `ne`, `not`, `and`,
 * `or`. Values print as `fmt.Print` prints them (`[a b]` for a slice, `map[k:v]` for a map,
 * `<no value>` for a missing map key read as a field, "" for one read by `index`).
 * Anything else (`define`, `template`, `block`, `break`, Go's other functions) is refused
 * when the template is parsed; a function Go does not have (`join`) is refused as Go refuses
 * it (`function "join" not defined`).
 *
 * @module
 */

/** A struct value: its type name (for messages) and fields in declaration order. */
export interface GoStruct {
  readonly type: string;
  readonly fields: ReadonlyMap<string, GoValue>;
}

/** A template value; undefined is Go's invalid value (a missing map key). */
export type GoValue =
  | string
  | number
  | boolean
  | readonly string[]
  | ReadonlyMap<string, string>
  | GoStruct
  | undefined;

type Operand =
  | { k: "dot"; fields: string[] }
  | { k: "var"; name: string; fields: string[] }
  | { k: "lit"; value: GoValue }
  | { k: "fn"; name: string }
  | { k: "pipe"; pipe: Pipeline; fields: string[] };

interface Command {
  args: Operand[];
}

interface Pipeline {
  decl: string[];
  assign: boolean;
  cmds: Command[];
}

type Node =
  | { k: "text"; text: string }
  | { k: "action"; pipe: Pipeline }
  | { k: "if" | "with"; pipe: Pipeline; then: Node[]; else: Node[] }
  | { k: "range"; pipe: Pipeline; then: Node[]; else: Node[] };

/** A parsed template. */
export interface GoTemplate {
  readonly source: string;
  readonly nodes: readonly Node[];
}

const FUNCTIONS = new Set([
  "index",
  "len",
  "print",
  "printf",
  "println",
  "eq",
  "ne",
  "not",
  "and",
  "or",
]);

const GO_BUILTINS = new Set([
  ...FUNCTIONS,
  "call",
  "html",
  "js",
  "slice",
  "urlquery",
  "lt",
  "le",
  "gt",
  "ge",
]);

const SPACE = /^[ \t\r\n]/;

// ---- lexing ----------------------------------------------------------------------------

type Token =
  | { t: "field"; v: string[] } // .A.B, or [] for `.`
  | { t: "var"; v: string; fields: string[] }
  | { t: "ident"; v: string }
  | { t: "string"; v: string }
  | { t: "number"; v: number }
  | { t: "(" | ")" | "|" | ":=" | "=" | "," }
  | { t: "fields"; v: string[] }; // .A.B right after a )

function unquoteGo(s: string): string {
  // Go's interpreted string: \n \t \\ \" \xHH \uHHHH \UHHHHHHHH \ooo \a \b \f \r \v
  let out = "";
  for (let i = 1; i < s.length - 1; i++) {
    const c = s[i];
    if (c !== "\\") {
      out += c;
      continue;
    }
    const e = s[++i];
    const simple: Record<string, string> = {
      n: "\n",
      t: "\t",
      "\\": "\\",
      '"': '"',
      "'": "'",
      a: "\x07",
      b: "\b",
      f: "\f",
      r: "\r",
      v: "\v",
    };
    if (e in simple) out += simple[e];
    else if (e === "x" || e === "u" || e === "U") {
      const n = e === "x" ? 2 : e === "u" ? 4 : 8;
      const hex = s.slice(i + 1, i + 1 + n);
      if (!/^[0-9A-Fa-f]+$/.test(hex) || hex.length !== n) throw new Error(`invalid syntax: ${s}`);
      out += String.fromCodePoint(parseInt(hex, 16));
      i += n;
    } else if (/[0-7]/.test(e)) {
      const oct = s.slice(i, i + 3);
      if (!/^[0-7]{3}$/.test(oct)) throw new Error(`invalid syntax: ${s}`);
      out += String.fromCharCode(parseInt(oct, 8));
      i += 2;
    } else throw new Error(`invalid syntax: ${s}`);
  }
  return out;
}

function lexAction(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const fieldsAt = (): string[] => {
    const m = /^(\.[\p{L}_][\p{L}\p{Nd}_]*)+/u.exec(src.slice(i));
    if (!m) return [];
    i += m[0].length;
    return m[0].slice(1).split(".");
  };
  while (i < src.length) {
    const c = src[i];
    if (SPACE.test(c)) {
      i++;
      continue;
    }
    if (c === "(" || c === "|" || c === ",") {
      tokens.push({ t: c });
      i++;
      continue;
    }
    if (c === ")") {
      tokens.push({ t: ")" });
      i++;
      if (src[i] === ".") tokens.push({ t: "fields", v: fieldsAt() });
      continue;
    }
    if (src.startsWith(":=", i)) {
      tokens.push({ t: ":=" });
      i += 2;
      continue;
    }
    if (c === "=") {
      tokens.push({ t: "=" });
      i++;
      continue;
    }
    if (c === ".") {
      if (/^\.[\p{L}_]/u.test(src.slice(i))) {
        tokens.push({ t: "field", v: fieldsAt() });
      } else {
        i++;
        tokens.push({ t: "field", v: [] });
      }
      continue;
    }
    if (c === "$") {
      const m = /^\$[\p{L}\p{Nd}_]*/u.exec(src.slice(i))!;
      i += m[0].length;
      tokens.push({ t: "var", v: m[0], fields: src[i] === "." ? fieldsAt() : [] });
      continue;
    }
    if (c === '"') {
      const m = /^"(?:[^"\\\n]|\\.)*"/.exec(src.slice(i));
      if (!m) throw new Error("unterminated quoted string");
      tokens.push({ t: "string", v: unquoteGo(m[0]) });
      i += m[0].length;
      continue;
    }
    if (c === "`") {
      const end = src.indexOf("`", i + 1);
      if (end < 0) throw new Error("unterminated raw quoted string");
      tokens.push({ t: "string", v: src.slice(i + 1, end) });
      i = end + 1;
      continue;
    }
    const num = /^[-+]?[0-9]+(?![\p{L}\p{Nd}_.])/u.exec(src.slice(i));
    if (num) {
      tokens.push({ t: "number", v: Number(num[0]) });
      i += num[0].length;
      continue;
    }
    const id = /^[\p{L}_][\p{L}\p{Nd}_]*/u.exec(src.slice(i));
    if (id) {
      tokens.push({ t: "ident", v: id[0] });
      i += id[0].length;
      continue;
    }
    throw new Error(`unexpected ${JSON.stringify(c)} in command`);
  }
  return tokens;
}

// ---- parsing ---------------------------------------------------------------------------

class PipelineParser {
  #i = 0;
  constructor(readonly tokens: Token[], readonly vars: Set<string>) {}

  done(): boolean {
    return this.#i >= this.tokens.length;
  }

  pipeline(what: string, allowDecl: boolean): Pipeline {
    const decl: string[] = [];
    let assign = false;
    // `$x :=`, `$i, $v :=`, `$x =`
    const t0 = this.tokens[this.#i];
    if (allowDecl && t0?.t === "var" && t0.fields.length === 0) {
      const t1 = this.tokens[this.#i + 1];
      const t2 = this.tokens[this.#i + 2];
      const t3 = this.tokens[this.#i + 3];
      if (t1?.t === ":=" || t1?.t === "=") {
        decl.push(t0.v);
        assign = t1.t === "=";
        this.#i += 2;
      } else if (t1?.t === "," && t2?.t === "var" && t3?.t === ":=") {
        decl.push(t0.v, t2.v);
        this.#i += 4;
      }
      for (const v of decl) {
        if (assign && !this.vars.has(v)) throw new Error(`undefined variable "${v}"`);
        this.vars.add(v);
      }
    }
    const cmds: Command[] = [];
    for (;;) {
      const args: Operand[] = [];
      while (!this.done() && this.tokens[this.#i].t !== "|" && this.tokens[this.#i].t !== ")") {
        args.push(this.#operand());
      }
      if (args.length === 0) throw new Error(`missing value for ${what}`);
      cmds.push({ args });
      if (!this.done() && this.tokens[this.#i].t === "|") {
        this.#i++;
        continue;
      }
      break;
    }
    return { decl, assign, cmds };
  }

  #operand(): Operand {
    const t = this.tokens[this.#i++];
    switch (t.t) {
      case "field":
        return { k: "dot", fields: t.v };
      case "var":
        if (!this.vars.has(t.v)) throw new Error(`undefined variable "${t.v}"`);
        return { k: "var", name: t.v, fields: t.fields };
      case "string":
        return { k: "lit", value: t.v };
      case "number":
        return { k: "lit", value: t.v };
      case "ident":
        if (t.v === "true" || t.v === "false") return { k: "lit", value: t.v === "true" };
        if (t.v === "nil") throw new Error("nil is not a command");
        if (!GO_BUILTINS.has(t.v)) throw new Error(`function "${t.v}" not defined`);
        if (!FUNCTIONS.has(t.v)) {
          throw new Error(`function "${t.v}" is not supported here`);
        }
        return { k: "fn", name: t.v };
      case "(": {
        const pipe = this.pipeline("parenthesized pipeline", false);
        if (this.tokens[this.#i]?.t !== ")") throw new Error("unclosed left paren");
        this.#i++;
        const next = this.tokens[this.#i];
        if (next?.t === "fields") {
          this.#i++;
          return { k: "pipe", pipe, fields: next.v };
        }
        return { k: "pipe", pipe, fields: [] };
      }
      default:
        throw new Error(`unexpected "${t.t}" in operand`);
    }
  }
}

interface Frame {
  k: "root" | "if" | "with" | "range";
  nodes: Node[];
  node?: Node & { else: Node[] };
  inElse: boolean;
  /** `else if` opens an implicit frame closed by the same `end`. */
  chained: boolean;
}

/**
 * Parse a template with `<<` `>>` delimiters. Throws what is wrong, with the line
 * (`template: 1: function "join" not defined`).
 *
 * @example
 * ```ts
 * const t = parseGoTemplate("sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)");
 * ```
 */
export function parseGoTemplate(source: string): GoTemplate {
  const root: Frame = { k: "root", nodes: [], inElse: false, chained: false };
  const stack: Frame[] = [root];
  const vars = new Set<string>(["$"]);
  let pos = 0;
  let line = 1;
  const err = (msg: string): never => {
    throw new Error(`template: ${line}: ${msg}`);
  };
  const push = (n: Node): void => {
    const f = stack[stack.length - 1];
    if (f.inElse) f.node!.else.push(n);
    else f.nodes.push(n);
  };
  let trimNext = false;
  while (pos <= source.length) {
    const open = source.indexOf("<<", pos);
    let text = source.slice(pos, open < 0 ? source.length : open);
    if (trimNext) text = text.replace(/^[ \t\r\n]+/, "");
    trimNext = false;
    if (open < 0) {
      if (text !== "") push({ k: "text", text });
      break;
    }
    let inner = open + 2;
    if (source[inner] === "-" && SPACE.test(source[inner + 1] ?? "")) {
      text = text.replace(/[ \t\r\n]+$/, "");
      inner += 2;
    }
    if (text !== "") push({ k: "text", text });
    line += (source.slice(pos, open).match(/\n/g) ?? []).length;
    // a comment: << /* ... */ >>
    const afterSpace = inner;
    if (source.startsWith("/*", afterSpace)) {
      const end = source.indexOf("*/", afterSpace + 2);
      if (end < 0) err("unclosed comment");
      let close = end + 2;
      if (/^ -?>>|^-?>>/.test(source.slice(close)) === false) {
        err("comment ends before closing delimiter");
      }
      if (source.startsWith(" ->>", close)) {
        trimNext = true;
        close += 4;
      } else close += 2;
      line += (source.slice(open, close).match(/\n/g) ?? []).length;
      pos = close;
      continue;
    }
    // the action ends at the first >> outside a string
    let i = inner;
    let end = -1;
    while (i < source.length) {
      const c = source[i];
      if (c === '"') {
        const m = /^"(?:[^"\\\n]|\\.)*"/.exec(source.slice(i));
        if (!m) err("unterminated quoted string");
        i += m![0].length;
        continue;
      }
      if (c === "`") {
        const e = source.indexOf("`", i + 1);
        if (e < 0) err("unterminated raw quoted string");
        i = e + 1;
        continue;
      }
      if (source.startsWith(">>", i)) {
        end = i;
        break;
      }
      i++;
    }
    if (end < 0) err("unclosed action");
    let body = source.slice(inner, end);
    pos = end + 2;
    if (/[ \t\r\n]-$/.test(body)) {
      body = body.slice(0, -2);
      trimNext = true;
    }
    line += (source.slice(open, pos).match(/\n/g) ?? []).length;
    let tokens: Token[];
    try {
      tokens = lexAction(body);
    } catch (e) {
      return err((e as Error).message);
    }
    if (tokens.length === 0) err("missing value for command");
    const first = tokens[0];
    const keyword = first.t === "ident" ? first.v : "";
    try {
      switch (keyword) {
        case "if":
        case "with":
        case "range": {
          const p = new PipelineParser(tokens.slice(1), vars);
          const pipe = p.pipeline(keyword, true);
          if (!p.done()) throw new Error(`unexpected token in ${keyword}`);
          const node = { k: keyword, pipe, then: [], else: [] } as Node & { else: Node[] };
          push(node);
          stack.push({
            k: keyword,
            nodes: (node as { then: Node[] }).then,
            node,
            inElse: false,
            chained: false,
          });
          break;
        }
        case "else": {
          const f = stack[stack.length - 1];
          if (f.k === "root" || f.inElse) throw new Error("unexpected <<else>>");
          f.inElse = true;
          const rest = tokens.slice(1);
          if (rest.length > 0) {
            const kw = rest[0].t === "ident" ? rest[0].v : "";
            if (kw !== "if" && kw !== "with") throw new Error("unexpected token in else");
            const p = new PipelineParser(rest.slice(1), vars);
            const pipe = p.pipeline(kw, true);
            if (!p.done()) throw new Error(`unexpected token in ${kw}`);
            const node = { k: kw, pipe, then: [], else: [] } as Node & { else: Node[] };
            push(node);
            stack.push({
              k: kw,
              nodes: (node as { then: Node[] }).then,
              node,
              inElse: false,
              chained: true,
            });
          }
          break;
        }
        case "end": {
          if (tokens.length > 1) throw new Error("unexpected token in end");
          let f = stack.pop()!;
          if (f.k === "root") throw new Error("unexpected <<end>>");
          while (f.chained) f = stack.pop()!;
          break;
        }
        case "define":
        case "template":
        case "block":
        case "break":
        case "continue":
          throw new Error(`<<${keyword}>> is not supported here`);
        default: {
          const p = new PipelineParser(tokens, vars);
          const pipe = p.pipeline("command", true);
          if (!p.done()) throw new Error(`unexpected ")" in command`);
          push({ k: "action", pipe });
        }
      }
    } catch (e) {
      err((e as Error).message);
    }
  }
  if (stack.length > 1) err(`unexpected EOF`);
  return { source, nodes: root.nodes };
}

// ---- execution -------------------------------------------------------------------------

function isStruct(v: GoValue): v is GoStruct {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Map);
}

function typeOf(v: GoValue): string {
  if (v === undefined) return "<nil>";
  if (typeof v === "string") return "string";
  if (typeof v === "number") return "int";
  if (typeof v === "boolean") return "bool";
  if (Array.isArray(v)) return "[]string";
  if (v instanceof Map) return "map[string]string";
  return (v as GoStruct).type;
}

/** `fmt.Print`'s text for a value. */
export function formatGoValue(v: GoValue): string {
  if (v === undefined) return "<no value>";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  if (Array.isArray(v)) return `[${v.join(" ")}]`;
  if (v instanceof Map) {
    const keys = [...v.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return `map[${keys.map((k) => `${k}:${v.get(k)}`).join(" ")}]`;
  }
  const s = v as GoStruct;
  return `{${[...s.fields.values()].map((f) => formatNested(f)).join(" ")}}`;
}

function formatNested(v: GoValue): string {
  // inside a struct, a nil map prints as map[] and an invalid value as <nil>
  return v === undefined ? "<nil>" : formatGoValue(v);
}

function truth(v: GoValue): boolean {
  if (v === undefined) return false;
  if (typeof v === "string") return v !== "";
  if (typeof v === "number") return v !== 0;
  if (typeof v === "boolean") return v;
  if (Array.isArray(v)) return v.length > 0;
  if (v instanceof Map) return v.size > 0;
  return true;
}

function utf8Length(s: string): number {
  return new TextEncoder().encode(s).length;
}

function goQuote(s: string): string {
  return quoteGoString(s);
}

/**
 * Go's `strconv.Quote` (`%q`): printable characters kept, `\a \b \f \n \r \t \v \\ \"`,
 * other control characters as `\xHH`, other non-printable ones as `\uHHHH` / `\UHHHHHHHH`.
 */
export function quoteGoString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    switch (ch) {
      case '"':
        out += '\\"';
        continue;
      case "\\":
        out += "\\\\";
        continue;
      case "\x07":
        out += "\\a";
        continue;
      case "\b":
        out += "\\b";
        continue;
      case "\f":
        out += "\\f";
        continue;
      case "\n":
        out += "\\n";
        continue;
      case "\r":
        out += "\\r";
        continue;
      case "\t":
        out += "\\t";
        continue;
      case "\v":
        out += "\\v";
        continue;
    }
    if (cp >= 0xd800 && cp <= 0xdfff) {
      // a lone surrogate is not UTF-8: Go sees the replacement character's bytes
      out += "\\ufffd";
    } else if (cp < 0x20 || cp === 0x7f) {
      out += `\\x${cp.toString(16).padStart(2, "0")}`;
    } else if (cp === 0x20 || /[\p{L}\p{M}\p{N}\p{P}\p{S}]/u.test(ch)) {
      out += ch;
    } else if (cp < 0x10000) {
      out += `\\u${cp.toString(16).padStart(4, "0")}`;
    } else {
      out += `\\U${cp.toString(16).padStart(8, "0")}`;
    }
  }
  return out + '"';
}

function sprintf(format: string, args: GoValue[]): string {
  let out = "";
  let n = 0;
  for (let i = 0; i < format.length; i++) {
    const c = format[i];
    if (c !== "%") {
      out += c;
      continue;
    }
    const verb = format[++i];
    if (verb === "%") {
      out += "%";
      continue;
    }
    if (n >= args.length) {
      out += `%!${verb}(MISSING)`;
      continue;
    }
    const a = args[n++];
    switch (verb) {
      case "s":
      case "v":
        out += formatGoValue(a);
        break;
      case "q":
        if (typeof a !== "string") throw new Error(`printf: %q of ${typeOf(a)} is not supported`);
        out += goQuote(a);
        break;
      case "d":
        if (typeof a !== "number") throw new Error(`printf: %d of ${typeOf(a)} is not supported`);
        out += String(a);
        break;
      default:
        throw new Error(`printf: verb %${verb ?? ""} is not supported`);
    }
  }
  if (n < args.length) {
    out += `%!(EXTRA ${args.slice(n).map((a) => `${typeOf(a)}=${formatGoValue(a)}`).join(", ")})`;
  }
  return out;
}

/** fmt.Sprint: spaces between operands when neither is a string. */
function sprint(args: GoValue[]): string {
  let out = "";
  args.forEach((a, i) => {
    if (i > 0 && typeof a !== "string" && typeof args[i - 1] !== "string") out += " ";
    out += formatGoValue(a);
  });
  return out;
}

function basicEqual(a: GoValue, b: GoValue): boolean {
  if (typeof a !== typeof b || Array.isArray(a) || a instanceof Map || isStruct(a)) {
    throw new Error(`incompatible types for comparison`);
  }
  return a === b;
}

function callFunction(name: string, args: GoValue[]): GoValue {
  switch (name) {
    case "index": {
      if (args.length === 0) {
        throw new Error("wrong number of args for index: want at least 1 got 0");
      }
      let v = args[0];
      for (const key of args.slice(1)) {
        if (v instanceof Map) {
          if (typeof key !== "string") {
            throw new Error(`value has type ${typeOf(key)}; should be string`);
          }
          v = v.get(key) ?? "";
        } else if (Array.isArray(v)) {
          if (typeof key !== "number") {
            throw new Error(`cannot index slice/array with type ${typeOf(key)}`);
          }
          if (key < 0 || key >= v.length) throw new Error(`index out of range: ${key}`);
          v = v[key];
        } else throw new Error(`can't index item of type ${typeOf(v)}`);
      }
      return v;
    }
    case "len": {
      if (args.length !== 1) {
        throw new Error(`wrong number of args for len: want 1 got ${args.length}`);
      }
      const v = args[0];
      if (typeof v === "string") return utf8Length(v);
      if (Array.isArray(v)) return v.length;
      if (v instanceof Map) return v.size;
      throw new Error(`len of type ${typeOf(v)}`);
    }
    case "print":
      return sprint(args);
    case "println":
      return args.map(formatGoValue).join(" ") + "\n";
    case "printf": {
      if (typeof args[0] !== "string") throw new Error("printf needs a format string");
      return sprintf(args[0], args.slice(1));
    }
    case "eq": {
      if (args.length < 2) throw new Error("missing argument for comparison");
      return args.slice(1).some((b) => basicEqual(args[0], b));
    }
    case "ne": {
      if (args.length !== 2) {
        throw new Error(`wrong number of args for ne: want 2 got ${args.length}`);
      }
      return !basicEqual(args[0], args[1]);
    }
    case "not":
      if (args.length !== 1) {
        throw new Error(`wrong number of args for not: want 1 got ${args.length}`);
      }
      return !truth(args[0]);
    case "and": {
      let v: GoValue = args[0];
      for (const a of args) {
        v = a;
        if (!truth(a)) return a;
      }
      return v;
    }
    case "or": {
      let v: GoValue = args[0];
      for (const a of args) {
        v = a;
        if (truth(a)) return a;
      }
      return v;
    }
  }
  throw new Error(`function "${name}" not defined`);
}

class Executor {
  readonly #vars: Array<[string, GoValue]> = [];
  out = "";

  constructor(root: GoValue) {
    this.#vars.push(["$", root]);
  }

  #lookupVar(name: string): GoValue {
    for (let i = this.#vars.length - 1; i >= 0; i--) {
      if (this.#vars[i][0] === name) return this.#vars[i][1];
    }
    throw new Error(`undefined variable: ${name}`);
  }

  #setVar(name: string, v: GoValue): void {
    for (let i = this.#vars.length - 1; i >= 0; i--) {
      if (this.#vars[i][0] === name) {
        this.#vars[i][1] = v;
        return;
      }
    }
  }

  #fields(v: GoValue, fields: readonly string[], at: string): GoValue {
    for (const f of fields) {
      if (v instanceof Map) {
        v = v.get(f);
      } else if (isStruct(v)) {
        if (!v.fields.has(f)) {
          throw new Error(`at <${at}>: can't evaluate field ${f} in type ${v.type}`);
        }
        v = v.fields.get(f);
      } else if (v === undefined) {
        throw new Error(`at <${at}>: nil pointer evaluating interface {}.${f}`);
      } else {
        throw new Error(`at <${at}>: can't evaluate field ${f} in type ${typeOf(v)}`);
      }
    }
    return v;
  }

  #operand(op: Operand, dot: GoValue, final: GoValue | null): GoValue {
    switch (op.k) {
      case "dot":
        return this.#fields(dot, op.fields, `.${op.fields.join(".")}`);
      case "var":
        return this.#fields(
          this.#lookupVar(op.name),
          op.fields,
          `${op.name}${op.fields.map((f) => `.${f}`).join("")}`,
        );
      case "lit":
        return op.value;
      case "pipe":
        return this.#fields(this.pipeline(op.pipe, dot), op.fields, "(...)");
      case "fn":
        void final;
        return callFunction(op.name, []);
    }
  }

  #command(cmd: Command, dot: GoValue, final: GoValue | null): GoValue {
    const [head, ...rest] = cmd.args;
    if (head.k === "fn") {
      const args = rest.map((a) => this.#operand(a, dot, null));
      if (final !== null) args.push(final);
      return callFunction(head.name, args);
    }
    if (rest.length > 0 || final !== null) {
      throw new Error(`can't give argument to non-function ${describe(head)}`);
    }
    return this.#operand(head, dot, null);
  }

  pipeline(pipe: Pipeline, dot: GoValue): GoValue {
    let v: GoValue | null = null;
    for (const cmd of pipe.cmds) v = this.#command(cmd, dot, v);
    const value = v as GoValue;
    if (pipe.decl.length === 1) {
      if (pipe.assign) this.#setVar(pipe.decl[0], value);
      else this.#vars.push([pipe.decl[0], value]);
    }
    return value;
  }

  run(nodes: readonly Node[], dot: GoValue): void {
    for (const n of nodes) {
      switch (n.k) {
        case "text":
          this.out += n.text;
          break;
        case "action": {
          const v = this.pipeline(n.pipe, dot);
          if (n.pipe.decl.length === 0) this.out += formatGoValue(v);
          break;
        }
        case "if":
        case "with": {
          const mark = this.#vars.length;
          const v = this.pipeline({ ...n.pipe, decl: n.pipe.decl.slice(0, 1) }, dot);
          if (truth(v)) this.run(n.then, n.k === "with" ? v : dot);
          else this.run(n.else, dot);
          this.#vars.length = mark;
          break;
        }
        case "range": {
          const mark = this.#vars.length;
          const v = this.pipeline({ ...n.pipe, decl: [] }, dot);
          let entries: Array<[GoValue, GoValue]>;
          if (Array.isArray(v)) entries = v.map((x, i) => [i, x]);
          else if (v instanceof Map) {
            entries = [...v.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
              .map((k) => [k, v.get(k)]);
          } else if (typeof v === "number") {
            entries = Array.from({ length: Math.max(0, v) }, (_, i) => [i, i]);
          } else if (v === undefined) entries = [];
          else throw new Error(`range can't iterate over ${formatGoValue(v)}`);
          if (entries.length === 0) this.run(n.else, dot);
          for (const [key, elem] of entries) {
            const inner = this.#vars.length;
            if (n.pipe.decl.length === 1) this.#vars.push([n.pipe.decl[0], elem]);
            if (n.pipe.decl.length === 2) {
              this.#vars.push([n.pipe.decl[0], key], [n.pipe.decl[1], elem]);
            }
            this.run(n.then, elem);
            this.#vars.length = inner;
          }
          this.#vars.length = mark;
          break;
        }
      }
    }
  }
}

function describe(op: Operand): string {
  switch (op.k) {
    case "dot":
      return `.${op.fields.join(".")}`;
    case "var":
      return op.name;
    case "lit":
      return formatGoValue(op.value);
    default:
      return "(...)";
  }
}

/**
 * Execute a parsed template on `data`. Throws what went wrong (`at <.Foo>: can't evaluate
 * field Foo in type queryTemplateArgs`).
 *
 * @example
 * ```ts
 * const args: GoStruct = { type: "args", fields: new Map([["Series", "up"]]) };
 * executeGoTemplate(parseGoTemplate("<<.Series>>"), args); // "up"
 * ```
 */
export function executeGoTemplate(template: GoTemplate, data: GoValue): string {
  const ex = new Executor(data);
  ex.run(template.nodes, data);
  return ex.out;
}
