/**
 * Go regular expressions (RE2 syntax, as Go's `regexp.Compile` reads them) run on the
 * JavaScript engine: a pattern is checked against RE2's grammar and rewritten into an
 * equivalent JavaScript pattern. What RE2 refuses is refused here with Go's message (a
 * lookaround, a backreference, a possessive quantifier, a repeat count over 1000), even where
 * JavaScript would accept it; what both accept with different meanings is rewritten (`(?P<n>`
 * named groups, `\A`, `\z`, `\Q...\E`, POSIX classes, `\s`, `.`, `^`/`$`, the `s`, `m` and `U`
 * flags). Case-insensitivity is supported for the whole pattern only (`(?i)` first).
 *
 * @module
 */

/** A compiled Go regular expression. */
export interface GoRegexp {
  /** The pattern as written. */
  source: string;
  /** Its JavaScript translation (unanchored, global flag off). */
  regexp: RegExp;
  /** The name of every capture group, index 0 the whole match (`""` for unnamed ones). */
  groupNames: readonly string[];
}

class Re2Error extends Error {}

function fail(code: string, expr: string): never {
  throw new Re2Error(`error parsing regexp: ${code}: \`${expr}\``);
}

interface Flags {
  i: boolean;
  m: boolean;
  s: boolean;
  U: boolean;
}

const POSIX: Record<string, string> = {
  alnum: "0-9A-Za-z",
  alpha: "A-Za-z",
  ascii: "\\x00-\\x7f",
  blank: "\\t ",
  cntrl: "\\x00-\\x1f\\x7f",
  digit: "0-9",
  graph: "!-~",
  lower: "a-z",
  print: " -~",
  punct: "!-\\/:-@\\[-`{-~",
  space: "\\t\\n\\v\\f\\r ",
  upper: "A-Z",
  word: "0-9A-Za-z_",
  xdigit: "0-9A-Fa-f",
};

const PERL: Record<string, string> = {
  d: "0-9",
  s: "\\t\\n\\f\\r ",
  w: "0-9A-Za-z_",
};

const GENERAL_CATEGORY = /^(C[cfos]?|L[lmotu]?|M[cen]?|N[dlo]?|P[cdefios]?|S[ckmo]?|Z[lps]?)$/;

function isAlnum(c: string): boolean {
  return /^[0-9A-Za-z]$/.test(c);
}

/** A code point as a JavaScript (`u` flag) pattern literal, in a class or outside one. */
function lit(cp: number, inClass = false): string {
  if (cp < 0x20 || cp === 0x7f || (cp >= 0xd800 && cp <= 0xdfff)) {
    return `\\u{${cp.toString(16)}}`;
  }
  const c = String.fromCodePoint(cp);
  // the u flag allows escaping only syntax characters (and - in a class)
  if (/[\\^$.*+?()[\]{}|/]/.test(c) || (inClass && c === "-")) return `\\${c}`;
  return c;
}

/** One class item: the JavaScript text to put inside `[...]`. */
type ClassPart = string;

/** Translates one pattern; `pos` walks `src` by code points. */
class Translator {
  readonly #src: string;
  #pos = 0;
  readonly names: string[] = [""];
  #caseFoldWhole = false;

  constructor(src: string) {
    this.#src = src;
  }

  translate(): { source: string; ignoreCase: boolean } {
    const flags: Flags = { i: false, m: false, s: false, U: false };
    // a leading (?i...) that is not a group turns on the JavaScript i flag for the whole pattern
    const lead = /^\(\?([imsU]*)\)/.exec(this.#src);
    if (lead && lead[1].includes("i")) {
      this.#caseFoldWhole = true;
    }
    const out = this.#alternation(flags, 0);
    if (this.#pos < this.#src.length) {
      // only an unbalanced ) stops the top level early
      fail("unexpected )", this.#src);
    }
    return { source: out.text, ignoreCase: this.#caseFoldWhole };
  }

  #peek(offset = 0): string {
    return this.#src[this.#pos + offset] ?? "";
  }

  #rest(): string {
    return this.#src.slice(this.#pos);
  }

  #nextCodePoint(): number {
    const cp = this.#src.codePointAt(this.#pos)!;
    this.#pos += cp > 0xffff ? 2 : 1;
    return cp;
  }

  /** Case-insensitivity maps to the JavaScript i flag: only a leading `(?i)` can have it. */
  #checkFold(before: Flags, after: Flags, at: number, whole: string): void {
    if (before.i === after.i) return;
    if (after.i && at === 0 && this.#caseFoldWhole) return;
    throw new Re2Error(
      `unsupported regexp: case-insensitive matching is supported only for a whole pattern, by a leading (?i) (found \`${whole}\` in \`${this.#src}\`)`,
    );
  }

  /** alternation := concat ('|' concat)*; stops at ')' or the end. */
  #alternation(flags: Flags, depth: number): { text: string; maxRepeat: number } {
    if (depth > 1000) fail("expression nests too deeply", this.#src);
    const branches: string[] = [];
    let maxRepeat = 1;
    for (;;) {
      const c = this.#concat(flags, depth);
      // flags set by (?s) hold up to the end of the group, across |
      flags = c.flags;
      branches.push(c.text);
      maxRepeat = Math.max(maxRepeat, c.maxRepeat);
      if (this.#peek() === "|") {
        this.#pos++;
        continue;
      }
      break;
    }
    return { text: branches.join("|"), maxRepeat };
  }

  /** concat := (atom repeat?)*; flag groups `(?i)` change flags for the rest of it. */
  #concat(flags: Flags, depth: number): { text: string; maxRepeat: number; flags: Flags } {
    let text = "";
    let maxRepeat = 1;
    for (;;) {
      const c = this.#peek();
      if (c === "" || c === "|" || c === ")") break;
      const start = this.#pos;
      if (c === "*" || c === "+" || c === "?") {
        fail("missing argument to repetition operator", c);
      }
      if (c === "{" && this.#repeatBraces() !== null) {
        const end = this.#pos;
        this.#repeatBraces(true);
        fail("missing argument to repetition operator", this.#src.slice(end, this.#pos));
      }
      // a flag-only group changes this concat's flags
      const flagOnly = /^\(\?([imsU-]*)\)/.exec(this.#rest());
      if (flagOnly) {
        const next = this.#applyFlags(flags, flagOnly[1], flagOnly[0]);
        this.#checkFold(flags, next, start, flagOnly[0]);
        flags = next;
        this.#pos += flagOnly[0].length;
        continue;
      }
      const atom = this.#atom(flags, depth);
      const rep = this.#repeat(flags, atom, start);
      text += rep.text;
      maxRepeat = Math.max(maxRepeat, rep.maxRepeat);
    }
    return { text, maxRepeat, flags };
  }

  #applyFlags(flags: Flags, spec: string, whole: string): Flags {
    const next = { ...flags };
    let negate = false;
    let sawFlag = false;
    for (const ch of spec) {
      if (ch === "-") {
        if (negate) fail("invalid or unsupported Perl syntax", whole);
        negate = true;
        sawFlag = false;
        continue;
      }
      next[ch as keyof Flags] = !negate;
      sawFlag = true;
    }
    if (negate && !sawFlag) fail("invalid or unsupported Perl syntax", whole);
    return next;
  }

  /** `{n}`, `{n,}`, `{n,m}` at the position: [min, max (-1: none)], or null if not a repeat. */
  #repeatBraces(consume = false): [number, number] | null {
    const m = /^\{(\d+)(,(\d*))?\}/.exec(this.#rest());
    if (!m) return null;
    if (consume) this.#pos += m[0].length;
    const min = Number(m[1]);
    const max = m[2] === undefined ? min : m[3] === "" ? -1 : Number(m[3]);
    return [min, max];
  }

  #repeat(
    flags: Flags,
    atom: { text: string; maxRepeat: number; assertion: boolean },
    start: number,
  ): { text: string; maxRepeat: number } {
    const opStart = this.#pos;
    const c = this.#peek();
    let op: string;
    // the product of nested {n,m} counts, which RE2 bounds by 1000
    let maxRepeat = atom.maxRepeat;
    if (c === "*" || c === "+" || c === "?") {
      this.#pos++;
      op = c;
    } else if (c === "{" && this.#repeatBraces() !== null) {
      const [min, max] = this.#repeatBraces(true)!;
      const written = this.#src.slice(opStart, this.#pos);
      if (min > 1000 || max > 1000 || (max >= 0 && min > max)) {
        fail("invalid repeat count", written);
      }
      op = max === min ? `{${min}}` : max < 0 ? `{${min},}` : `{${min},${max}}`;
      const count = max < 0 ? min : max;
      maxRepeat = count === 0 ? 1 : count * atom.maxRepeat;
      if ((min >= 2 || max >= 2) && maxRepeat > 1000) {
        fail("invalid repeat count", this.#src.slice(start, this.#pos));
      }
    } else {
      return { text: atom.text, maxRepeat };
    }
    let lazy = false;
    if (this.#peek() === "?") {
      this.#pos++;
      lazy = true;
    }
    if (flags.U) lazy = !lazy;
    // RE2 refuses a repetition of a repetition (`a**`, `a*+`), though not `(a*)*`
    const after = this.#peek();
    if (
      after === "*" || after === "+" || after === "?" ||
      (after === "{" && this.#repeatBraces() !== null)
    ) {
      if (after === "{") this.#repeatBraces(true);
      else this.#pos++;
      fail("invalid nested repetition operator", this.#src.slice(opStart, this.#pos));
    }
    const text = atom.assertion ? `(?:${atom.text})` : atom.text;
    return { text: `(?:${text})${op}${lazy ? "?" : ""}`, maxRepeat };
  }

  #atom(flags: Flags, depth: number): { text: string; maxRepeat: number; assertion: boolean } {
    const start = this.#pos;
    const c = this.#peek();
    if (c === "(") return this.#group(flags, depth);
    if (c === "[") return { text: this.#class(), maxRepeat: 1, assertion: false };
    if (c === ".") {
      this.#pos++;
      return { text: flags.s ? "[\\s\\S]" : "[^\\n]", maxRepeat: 1, assertion: false };
    }
    if (c === "^") {
      this.#pos++;
      return { text: flags.m ? "(?<![^\\n])" : "(?<![\\s\\S])", maxRepeat: 1, assertion: true };
    }
    if (c === "$") {
      this.#pos++;
      return { text: flags.m ? "(?![^\\n])" : "(?![\\s\\S])", maxRepeat: 1, assertion: true };
    }
    if (c === "\\") return this.#escape(start);
    const cp = this.#nextCodePoint();
    return { text: lit(cp), maxRepeat: 1, assertion: false };
  }

  #group(flags: Flags, depth: number): { text: string; maxRepeat: number; assertion: boolean } {
    const rest = this.#rest();
    let prefix = "(";
    let inner = flags;
    if (rest.startsWith("(?")) {
      const named = /^\(\?P?<([^>]*)>/.exec(rest);
      if (rest.startsWith("(?P<") || rest.startsWith("(?<") && !/^\(\?<[=!]/.test(rest)) {
        if (!named) fail("invalid named capture", rest);
        const name = named![1];
        if (name === "" || !/^[0-9A-Za-z_]+$/.test(name)) fail("invalid named capture", named![0]);
        this.#pos += named![0].length;
        this.names.push(name);
      } else {
        const scoped = /^\(\?([imsU-]*):/.exec(rest);
        if (!scoped) {
          const shown = /^\(\?.?/.exec(rest)![0];
          const hint = /^\(\?<?[=!]/.test(rest) ? " (lookarounds are not in Go's RE2 syntax)" : "";
          throw new Re2Error(
            `error parsing regexp: invalid or unsupported Perl syntax: \`${shown}\`${hint}`,
          );
        }
        inner = this.#applyFlags(flags, scoped[1], scoped[0]);
        this.#checkFold(flags, inner, -1, scoped[0]);
        this.#pos += scoped[0].length;
        prefix = "(?:";
      }
    } else {
      this.#pos++;
      this.names.push("");
    }
    const body = this.#alternation(inner, depth + 1);
    if (this.#peek() !== ")") fail("missing closing )", this.#src);
    this.#pos++;
    return { text: `${prefix}${body.text})`, maxRepeat: body.maxRepeat, assertion: false };
  }

  /** An escape outside a class. */
  #escape(start: number): { text: string; maxRepeat: number; assertion: boolean } {
    const next = this.#peek(1);
    if (next === "") fail("trailing backslash at end of expression", "");
    const single = (text: string, assertion = false) => {
      this.#pos += 2;
      return { text, maxRepeat: 1, assertion };
    };
    switch (next) {
      case "A":
        return single("(?<![\\s\\S])", true);
      case "z":
        return single("(?![\\s\\S])", true);
      case "b":
        return single("\\b", true);
      case "B":
        return single("\\B", true);
      case "Q": {
        this.#pos += 2;
        const end = this.#src.indexOf("\\E", this.#pos);
        const quoted = end < 0 ? this.#src.slice(this.#pos) : this.#src.slice(this.#pos, end);
        this.#pos = end < 0 ? this.#src.length : end + 2;
        let text = "";
        for (const ch of quoted) {
          text += lit(ch.codePointAt(0)!);
        }
        return { text: `(?:${text})`, maxRepeat: 1, assertion: false };
      }
    }
    const part = this.#classEscape(start);
    if (part.literal !== undefined) {
      return { text: lit(part.literal), maxRepeat: 1, assertion: false };
    }
    return { text: `[${part.text}]`, maxRepeat: 1, assertion: false };
  }

  /**
   * An escape that stands for characters (in or out of a class): a literal code point, or
   * class text (`\d`, `\pL`).
   */
  #classEscape(start: number): { literal?: number; text: string } {
    this.#pos++; // the backslash
    if (this.#pos >= this.#src.length) fail("trailing backslash at end of expression", "");
    const c = this.#peek();
    const bad = (): never => fail("invalid escape sequence", this.#src.slice(start, this.#pos));
    if (c === "d" || c === "s" || c === "w") {
      this.#pos++;
      return { text: PERL[c] };
    }
    if (c === "D" || c === "S" || c === "W") {
      this.#pos++;
      return { text: `^${PERL[c.toLowerCase()]}` };
    }
    if (c === "p" || c === "P") {
      this.#pos++;
      let name: string;
      if (this.#peek() === "{") {
        const end = this.#src.indexOf("}", this.#pos);
        if (end < 0) fail("invalid character class range", this.#src.slice(start));
        name = this.#src.slice(this.#pos + 1, end);
        this.#pos = end + 1;
      } else {
        if (this.#pos >= this.#src.length) fail("invalid character class range", "\\" + c);
        name = String.fromCodePoint(this.#nextCodePoint());
      }
      let negate = c === "P";
      if (name.startsWith("^")) {
        negate = !negate;
        name = name.slice(1);
      }
      const expr = this.#src.slice(start, this.#pos);
      let prop: string;
      if (name === "Any") prop = "\\s\\S";
      else if (GENERAL_CATEGORY.test(name)) prop = `\\p{${name}}`;
      else if (/^[A-Z][A-Za-z_]*$/.test(name)) prop = `\\p{Script=${name}}`;
      else fail("invalid character class range", expr);
      try {
        new RegExp(`[${prop!}]`, "u");
      } catch {
        fail("invalid character class range", expr);
      }
      if (!negate) return { text: prop! };
      return { text: name === "Any" ? "^\\s\\S" : prop!.replace("\\p", "\\P") };
    }
    if (c >= "1" && c <= "7" && !/[0-7]/.test(this.#peek(1))) {
      this.#pos++;
      throw new Re2Error(
        `error parsing regexp: invalid escape sequence: \`${
          this.#src.slice(start, this.#pos)
        }\` (backreferences are not in Go's RE2 syntax)`,
      );
    }
    if (c >= "0" && c <= "7") {
      let v = 0;
      for (let i = 0; i < 3 && /[0-7]/.test(this.#peek()); i++) {
        v = v * 8 + Number(this.#peek());
        this.#pos++;
      }
      return { literal: v, text: "" };
    }
    if (c === "x") {
      this.#pos++;
      if (this.#peek() === "{") {
        const m = /^\{([0-9A-Fa-f]+)\}/.exec(this.#rest());
        if (!m || parseInt(m[1], 16) > 0x10ffff) {
          this.#pos = Math.min(this.#src.length, this.#pos + (m ? m[0].length : 1));
          bad();
        }
        this.#pos += m![0].length;
        return { literal: parseInt(m![1], 16), text: "" };
      }
      const m = /^[0-9A-Fa-f]{2}/.exec(this.#rest());
      if (!m) {
        this.#pos = Math.min(this.#src.length, this.#pos + 2);
        bad();
      }
      this.#pos += 2;
      return { literal: parseInt(m![0], 16), text: "" };
    }
    const simple: Record<string, number> = { a: 7, f: 12, n: 10, r: 13, t: 9, v: 11 };
    if (c in simple) {
      this.#pos++;
      return { literal: simple[c], text: "" };
    }
    const cp = this.#nextCodePoint();
    if (cp < 0x80 && !isAlnum(String.fromCodePoint(cp))) return { literal: cp, text: "" };
    return bad();
  }

  /** A bracket class `[...]`. */
  #class(): string {
    const start = this.#pos;
    this.#pos++;
    let negate = false;
    if (this.#peek() === "^") {
      negate = true;
      this.#pos++;
    }
    const parts: ClassPart[] = [];
    let first = true;
    for (;;) {
      if (this.#pos >= this.#src.length) fail("missing closing ]", this.#src.slice(start));
      const c = this.#peek();
      if (c === "]" && !first) {
        this.#pos++;
        break;
      }
      first = false;
      const posix = /^\[:(\^?)([a-z]+):\]/.exec(this.#rest());
      if (posix) {
        const set = POSIX[posix[2]];
        if (set === undefined) fail("invalid character class range", posix[0]);
        this.#pos += posix[0].length;
        parts.push(posix[1] ? this.#negatedPart(set) : set);
        continue;
      }
      const itemStart = this.#pos;
      const lo = this.#classAtom(start);
      if (typeof lo === "string") {
        parts.push(lo);
        continue;
      }
      if (this.#peek() === "-" && this.#peek(1) !== "]" && this.#peek(1) !== "") {
        this.#pos++;
        const hi = this.#classAtom(start);
        if (typeof hi === "string" || hi < lo) {
          fail("invalid character class range", this.#src.slice(itemStart, this.#pos));
        }
        parts.push(`${lit(lo)}-${lit(hi as number)}`);
        continue;
      }
      parts.push(lit(lo));
    }
    const body = parts.join("");
    if (!negate) return body === "" ? "[]" : `[${this.#flatten(parts)}]`;
    return `[^${this.#flatten(parts)}]`;
  }

  /** Class parts may hold negated sets (`\D`, `[:^alpha:]`): those become alternatives. */
  #flatten(parts: ClassPart[]): string {
    if (!parts.some((p) => p.startsWith("^"))) return parts.join("");
    // JavaScript's v flag would do it; without it, a negated set inside a class is spelled
    // with its complement over the code point range
    return parts.map((p) => (p.startsWith("^") ? complement(p.slice(1)) : p)).join("");
  }

  #negatedPart(set: string): ClassPart {
    return `^${set}`;
  }

  /** One item inside a class: a code point, or class text for `\d`, `\pL`. */
  #classAtom(classStart: number): number | string {
    const c = this.#peek();
    if (c === "\\") {
      const part = this.#classEscape(this.#pos);
      return part.literal ?? part.text;
    }
    if (c === "[" && this.#peek(1) === ":") {
      // not a valid POSIX class: RE2 reads `[` literally
    }
    void classStart;
    return this.#nextCodePoint();
  }
}

/** The complement of a class body made of ASCII ranges and literals, as class text. */
function complement(set: string): string {
  if (set.startsWith("\\p") || set.startsWith("\\P")) {
    return set.startsWith("\\p") ? set.replace("\\p", "\\P") : set.replace("\\P", "\\p");
  }
  if (set === "\\s\\S") return "";
  const covered = new Set<number>();
  const re = new RegExp(`[${set}]`, "u");
  for (let cp = 0; cp < 0x80; cp++) if (re.test(String.fromCodePoint(cp))) covered.add(cp);
  let out = "";
  let cp = 0;
  while (cp < 0x80) {
    if (covered.has(cp)) {
      cp++;
      continue;
    }
    const lo = cp;
    while (cp + 1 < 0x80 && !covered.has(cp + 1)) cp++;
    out += lo === cp ? lit(lo) : `${lit(lo)}-${lit(cp)}`;
    cp++;
  }
  // every sets named here is ASCII: all of the rest is outside it
  return `${out}\\u{80}-\\u{10ffff}`;
}

/**
 * Compile a Go regular expression. Throws Go's message for what RE2 refuses
 * (`error parsing regexp: missing closing ): \`(\``), with a hint where JavaScript would have
 * accepted it.
 *
 * @example
 * ```ts
 * const re = compileGoRegexp("^(?P<base>.*)_total$");
 * re.groupNames; // ["", "base"]
 * re.regexp.exec("http_requests_total")?.[1]; // "http_requests"
 * ```
 */
export function compileGoRegexp(pattern: string): GoRegexp {
  const t = new Translator(pattern);
  const { source, ignoreCase } = t.translate();
  let regexp: RegExp;
  try {
    regexp = new RegExp(source, ignoreCase ? "iu" : "u");
  } catch (err) {
    throw new Error(`unsupported regexp \`${pattern}\`: ${(err as Error).message}`);
  }
  return { source: pattern, regexp, groupNames: t.names };
}

/** Whether `re` matches somewhere in `s` (Go's `MatchString`). */
export function goMatch(re: GoRegexp, s: string): boolean {
  re.regexp.lastIndex = 0;
  return re.regexp.test(s);
}

/**
 * Go's `Regexp.ExpandString` for the leftmost match of `re` in `s`: `$1`, `${1}`, `$name`,
 * `${name}` replaced by the group's text (empty when unknown or unmatched), `$$` by `$`, a `$`
 * not followed by a name kept as is. Null when `re` does not match.
 *
 * @example
 * ```ts
 * expandGoTemplate(compileGoRegexp("^(.*)_total$"), "${1}_per_second", "hits_total"); // "hits_per_second"
 * ```
 */
export function expandGoTemplate(re: GoRegexp, template: string, s: string): string | null {
  re.regexp.lastIndex = 0;
  const m = re.regexp.exec(s);
  if (m === null) return null;
  let out = "";
  let rest = template;
  for (;;) {
    const at = rest.indexOf("$");
    if (at < 0) break;
    out += rest.slice(0, at);
    rest = rest.slice(at + 1);
    if (rest.startsWith("$")) {
      out += "$";
      rest = rest.slice(1);
      continue;
    }
    const ref = /^(\{)?([\p{L}\p{Nd}_]+)/u.exec(rest);
    if (ref === null || (ref[1] && rest[ref[0].length] !== "}")) {
      out += "$";
      continue;
    }
    const name = ref[2];
    rest = rest.slice(ref[0].length + (ref[1] ? 1 : 0));
    const isNumber = /^[0-9]+$/.test(name) && !(name.length > 1 && name[0] === "0") &&
      name.length <= 9;
    if (isNumber) {
      const n = Number(name);
      if (n < m.length && m[n] !== undefined) out += m[n];
    } else {
      const i = re.groupNames.findIndex((g, j) => g === name && m[j] !== undefined);
      if (i >= 0) out += m[i];
    }
  }
  return out + rest;
}
