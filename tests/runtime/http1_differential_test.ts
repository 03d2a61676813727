/**
 * A differential test of our HTTP/1.1 request parser (src/runtime/http1_parser.ts) against
 * llhttp, the parser of Node, Deno and Bun, reached through `_http_common`'s `HTTPParser` in
 * strict mode (no lenient flags) as Node's own server uses it.
 *
 * Both parsers read the same bytes, split into the same chunks. Each gives a verdict: the
 * requests it accepted in order (method, target, version, raw headers, body, keep-alive,
 * upgrade), then how the connection ended (`clean`, `incomplete` at EOF, or `refused`). The
 * oracle is llhttp's verdict adjusted by the differences we intend (DIFFERENCES, each with the
 * RFC text that allows it) and by the places where llhttp refuses what the RFC tells a
 * recipient to accept (BEYOND_LLHTTP): there only what came before is compared.
 *
 * The property mutates a seed corpus of requests (ours, written for this test) and compares
 * ours with the oracle. It is seeded: HTTP1_DIFF_SEED=<n> replays a run, and a failure prints
 * the seed and the request bytes, JSON-escaped.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createRequire } from "node:module";
import process from "node:process";
import fc from "fast-check";
import { type Http1Error, Http1Parser, type Http1Request } from "../../src/runtime/http1_parser.ts";
import { chunked, everyByte, mutate, mutationOf } from "../support/http1_fuzz.ts";

// ---- verdicts ----------------------------------------------------------------------------

/** How a parser's reading of a connection ended. */
type End = "clean" | "incomplete" | "refused";

/** A request a parser accepted: whole, or its head alone when it is an upgrade. */
interface Message {
  method: string;
  target: string;
  /** "1.1" or "1.0" (llhttp also reads "0.9" and "2.0"). */
  version: string;
  /** Names and values as received (values without the OWS around them). */
  headers: [string, string][];
  /** The body's bytes as latin1 text ("" for an upgrade: what follows its head is not read). */
  body: string;
  keepAlive: boolean;
  upgrade: boolean;
}

/** What a parser made of the bytes of one connection. */
interface Verdict {
  messages: Message[];
  end: End;
  /** Ours: the status of its refusal. */
  status?: number;
}

/** llhttp's verdict, and what the oracle needs to place it in the input. */
interface LlhttpVerdict extends Verdict {
  /** The head of the request llhttp was reading when it stopped (its body not whole). */
  pending: Message | null;
  /** The offset in the whole input where llhttp refused (-1 when it did not). */
  errorAt: number;
  code: string;
  /** It stopped reading after a request that closes the connection or upgrades it. */
  stopped: boolean;
}

/** The largest body the drivers read (ours answers 413 past it; llhttp has no such cap). */
const BODY_CAP = 1 << 20;

const CR = 0x0d;
const LF = 0x0a;
const CHUNKED = "Transfer-Encoding: chunked\r\n";
const POST = "POST /shard/samples HTTP/1.1\r\nHost: adapter:6443\r\n";

function pairs(flat: string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i], flat[i + 1]]);
  return out;
}

function latin1(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1");
}

// ---- llhttp ------------------------------------------------------------------------------

// Node's internal module, which Deno and Bun provide too (with llhttp inside).
const require = createRequire(import.meta.url);
const { HTTPParser, methods: LLHTTP_METHODS } = require("_http_common") as {
  HTTPParser: any;
  methods: string[];
};

/** What the callbacks of the one llhttp parser write during a run. */
interface LlhttpRun {
  messages: Message[];
  current: Message | null;
  body: string[];
  headers: string[];
  url: string;
  stopped: boolean;
}

let run: LlhttpRun = {
  messages: [],
  current: null,
  body: [],
  headers: [],
  url: "",
  stopped: false,
};
/** llhttp's method numbers (its enum): QUERY is 46, not its index in `methods`. */
const methodNames = new Map<number, string>();

function noop(): void {}

const llhttp = new HTTPParser();
llhttp[HTTPParser.kOnMessageBegin] = noop;
llhttp[HTTPParser.kOnExecute] = noop;
llhttp[HTTPParser.kOnTimeout] = noop;
// Node hands a head's fields over here past 32 of them, and then none to onHeadersComplete.
llhttp[HTTPParser.kOnHeaders] = function onHeaders(headers: string[], url: string): void {
  // after a head these are trailers, which no verdict holds
  if (run.current !== null) return;
  for (const h of headers) run.headers.push(h);
  run.url += url;
};
llhttp[HTTPParser.kOnHeadersComplete] = function onHeadersComplete(
  major: number,
  minor: number,
  headers: string[] | undefined,
  method: number,
  url: string | undefined,
  _status: number,
  _statusMessage: string,
  upgrade: boolean,
  keepAlive: boolean,
): number {
  if (run.stopped) return 0;
  const flat = headers === undefined ? run.headers : run.headers.concat(headers);
  const m: Message = {
    method: methodNames.get(method) ?? `#${method}`,
    target: run.url + (url ?? ""),
    version: `${major}.${minor}`,
    headers: pairs(flat),
    body: "",
    keepAlive: !!keepAlive,
    upgrade: !!upgrade,
  };
  run.headers = [];
  run.url = "";
  run.body = [];
  run.current = m;
  if (m.upgrade) {
    // the server answers an upgrade and closes: its body and what follows are not read
    run.messages.push(m);
    run.stopped = true;
  }
  return 0;
};
llhttp[HTTPParser.kOnBody] = function onBody(b: Uint8Array): void {
  if (!run.stopped) run.body.push(latin1(b));
};
llhttp[HTTPParser.kOnMessageComplete] = function onMessageComplete(): void {
  if (run.stopped || run.current === null) return;
  const m = run.current;
  m.body = run.body.join("");
  run.messages.push(m);
  run.current = null;
  // the server closes after it: llhttp would refuse anything more (HPE_CLOSED_CONNECTION)
  if (!m.keepAlive) run.stopped = true;
};

/** llhttp's verdict on `chunks`, executed one by one, then EOF. */
function llhttpVerdict(chunks: Uint8Array[]): LlhttpVerdict {
  run = { messages: [], current: null, body: [], headers: [], url: "", stopped: false };
  llhttp.initialize(HTTPParser.REQUEST, {}, 0, 0);
  let offset = 0;
  for (const chunk of chunks) {
    const r = llhttp.execute(chunk);
    if (run.stopped) break;
    if (r instanceof Error) {
      const e = r as Error & { code: string; bytesParsed: number };
      return {
        messages: run.messages,
        end: "refused",
        pending: run.current,
        errorAt: offset + e.bytesParsed,
        code: e.code,
        stopped: false,
      };
    }
    offset += chunk.byteLength;
  }
  let end: End = "clean";
  if (!run.stopped) {
    // Node and Bun answer an Error, Deno -1, when the input ends inside a request
    const f = llhttp.finish();
    if (f instanceof Error || (typeof f === "number" && f < 0)) end = "incomplete";
  }
  const pending = run.stopped ? null : run.current;
  return { messages: run.messages, end, pending, errorAt: -1, code: "", stopped: run.stopped };
}

function llhttpOf(input: string): LlhttpVerdict {
  return llhttpVerdict([Buffer.from(input, "latin1")]);
}

// Read llhttp's method numbers off llhttp itself (Node's `methods` list is not its enum).
for (const name of LLHTTP_METHODS) {
  const target = name === "CONNECT" ? "a:1" : "/";
  const m = llhttpOf(`${name} ${target} HTTP/1.1\r\n\r\n`).messages[0];
  const id = m === undefined ? NaN : Number(m.method.slice(1));
  assert.ok(Number.isInteger(id), `llhttp does not read the method ${name} it lists`);
  methodNames.set(id, name);
}

/**
 * Defects of older llhttp builds, found by asking the llhttp at hand (Node 20 has 9.3, Deno 9.4.1,
 * Bun 9.4.4): inputs that meet one are not compared on that runtime.
 */
const LLHTTP_DEFECTS: { name: string; present: boolean; meets: RegExp }[] = [
  {
    // HTAB is OWS (RFC 9110 5.6.3); fixed in llhttp 9.4.0 (nodejs/llhttp#810)
    name: "refuses HTAB around a Content-Length value",
    present: llhttpOf("POST / HTTP/1.1\r\nContent-Length:\t1\t\r\n\r\na").end === "refused",
    meets: /\ncontent-length:[^\n]*\t/i,
  },
  {
    // fixed in llhttp 9.4.2 (nodejs/llhttp#866)
    name: "keeps alive with `Connection: close` and a trailing HTAB",
    present:
      llhttpOf("GET / HTTP/1.1\r\nConnection: close\t\r\n\r\n").messages[0]?.keepAlive === true,
    meets: /\nconnection:[^\n]*\t/i,
  },
  {
    // an empty list has no chunked: 400 (RFC 9112 6.3); newer llhttp refuses it
    name: "reads an empty Transfer-Encoding as no body",
    present: llhttpOf(`${POST}Transfer-Encoding:\r\n\r\n`).end === "clean",
    meets: /\ntransfer-encoding:[ \t]*[\r\n]/i,
  },
];

// ---- ours --------------------------------------------------------------------------------

function messageOf(r: Http1Request): Message {
  return {
    method: r.method,
    target: r.target,
    version: `1.${r.minor}`,
    headers: pairs(r.rawHeaders),
    body: "",
    keepAlive: r.keepAlive,
    upgrade: r.upgrade,
  };
}

function refusal(messages: Message[], e: Http1Error): Verdict {
  return { messages, end: "refused", status: e.status };
}

/** Ours's verdict on `chunks`, pushed one by one with every request read after each. */
function oursVerdict(chunks: Uint8Array[]): Verdict {
  const parser = new Http1Parser();
  const messages: Message[] = [];
  let current: Message | null = null;
  let body: string[] = [];
  for (const chunk of chunks) {
    parser.push(chunk);
    for (;;) {
      if (current !== null) {
        const piece = parser.body(BODY_CAP);
        if (piece === null) break;
        if (piece === "end") {
          current.body = body.join("");
          messages.push(current);
          if (!current.keepAlive) return { messages, end: "clean" };
          current = null;
        } else if (piece instanceof Uint8Array) body.push(latin1(piece));
        else return refusal(messages, piece);
        continue;
      }
      const r = parser.next();
      if (r === null) break;
      if ("status" in r) return refusal(messages, r);
      const m = messageOf(r);
      if (r.upgrade) {
        messages.push(m);
        return { messages, end: "clean" };
      }
      if (r.bodyLength !== 0) {
        current = m;
        body = [];
      } else {
        messages.push(m);
        if (!m.keepAlive) return { messages, end: "clean" };
      }
    }
  }
  return { messages, end: current !== null || parser.pending ? "incomplete" : "clean" };
}

// ---- placing llhttp's requests in the input ----------------------------------------------

/** A request llhttp read, placed in the input for the differences that read raw bytes. */
interface Framed {
  message: Message;
  /** What llhttp skipped before the request line (any CR and LF). */
  gap: string;
  /** The request line and header lines, without the CRLF CRLF that ends them. */
  head: string;
  /** A chunked body's chunk-size lines (with extensions), each once whole. */
  chunkLines: string[];
  /** The sizes those lines announce (NaN for a line with no hex digits). */
  chunkSizes: number[];
  /** Its trailer lines, once the section is whole. */
  trailers: string[];
  /** Where the trailer section begins (-1: the last chunk is not read). */
  trailerStart: number;
  /** Where the next request's bytes begin (-1: the body is not whole in the input). */
  end: number;
}

function isChunked(m: Message): boolean {
  return m.headers.some(([name]) => name.toLowerCase() === "transfer-encoding");
}

function contentLength(m: Message): number {
  const v = m.headers.find(([name]) => name.toLowerCase() === "content-length");
  return v === undefined ? 0 : Number(v[1]);
}

/**
 * Where `m` lies in `s`, from `at` on. llhttp (strict) ends each line of a head and of a chunked
 * body with CRLF, so the head ends at the first CRLF CRLF and a body is framed by its sizes.
 */
function frame(s: string, at: number, m: Message): Framed {
  let start = at;
  while (start < s.length && (s.charCodeAt(start) === CR || s.charCodeAt(start) === LF)) start++;
  // an HTTP/0.9 request line (no version) may end with a bare LF: ours refuses it anyway
  const headEnd = m.version === "0.9" ? s.length : s.indexOf("\r\n\r\n", start);
  if (!s.startsWith(`${m.method} `, start) || headEnd < 0) {
    throw new Error(`harness: llhttp's ${m.method} request is not at ${start} of the input`);
  }
  const f: Framed = {
    message: m,
    gap: s.slice(at, start),
    head: s.slice(start, headEnd),
    chunkLines: [],
    chunkSizes: [],
    trailers: [],
    trailerStart: -1,
    end: -1,
  };
  let i = headEnd + 4;
  if (m.upgrade) return f;
  if (!isChunked(m)) {
    const n = contentLength(m);
    if (i + n <= s.length) f.end = i + n;
    return f;
  }
  for (;;) {
    const eol = s.indexOf("\r\n", i);
    if (eol < 0) return f;
    const line = s.slice(i, eol);
    const digits = /^[0-9A-Fa-f]+/.exec(line);
    const size = digits === null ? NaN : parseInt(digits[0], 16);
    f.chunkLines.push(line);
    f.chunkSizes.push(size);
    if (!(size >= 0)) return f;
    i = eol + 2;
    if (size === 0) break;
    i += size + 2;
    if (i > s.length) return f;
  }
  f.trailerStart = i;
  // the trailer section counts once whole (ours reads it so)
  const trailers: string[] = [];
  for (;;) {
    const eol = s.indexOf("\r\n", i);
    if (eol < 0) return f;
    if (eol === i) {
      f.trailers = trailers;
      f.end = i + 2;
      return f;
    }
    trailers.push(s.slice(i, eol));
    i = eol + 2;
  }
}

// ---- the differences we intend -----------------------------------------------------------

/** A request llhttp accepts that ours refuses on purpose. */
interface Difference {
  name: string;
  /** Why, with the RFC text that allows or requires it. */
  reason: string;
  /** The status ours answers for `f`, or 0 when `f` is not a case of this difference. */
  refuses(f: Framed): number;
}

function fieldValues(m: Message, name: string): string[] {
  return m.headers.filter(([n]) => n.toLowerCase() === name).map(([, v]) => v);
}

/** A field value without the OWS around it (trim() would take NBSP too). */
function withoutOws(v: string): string {
  return v.replace(/^[ \t]+|[ \t]+$/g, "");
}

/** A list-valued field's elements, without the empty ones (RFC 9110 5.6.1). */
function listElements(values: string[]): string[] {
  return values.join(",").split(",").map(withoutOws).filter((e) => e !== "");
}

/** The header fields of the head that begins at `at` (after any CR and LF), if it is whole. */
function headFields(s: string, at: number): [string, string][] | null {
  let start = at;
  while (start < s.length && (s.charCodeAt(start) === CR || s.charCodeAt(start) === LF)) start++;
  const end = s.indexOf("\r\n\r\n", start);
  if (end < 0) return null;
  return s.slice(start, end).split("\r\n").slice(1).map((l): [string, string] => {
    const colon = l.indexOf(":");
    return [l.slice(0, colon), withoutOws(l.slice(colon + 1))];
  });
}

// uri-host [ ":" port ] (RFC 9110 7.2, RFC 3986 3.2.2): an IP literal or a reg-name (IPv4 too)
const HOST_VALUE =
  /^(?:\[[0-9A-Fa-f:.]+\]|\[v[0-9A-Fa-f]+\.[\w.~!$&'()*+,;=:-]+\]|(?:[\w.~!$&'()*+,;=-]|%[0-9A-Fa-f]{2})*)(?::\d*)?$/;
const TCHAR = "[!#$%&'*+.^_`|~0-9A-Za-z-]";
const QUOTED =
  '"(?:[\\t\\x20\\x21\\x23-\\x5b\\x5d-\\x7e\\x80-\\xff]|\\\\[\\t\\x20-\\x7e\\x80-\\xff])*"';
// chunk-size [ chunk-ext ] (RFC 9112 7.1.1), BWS where RFC 9110 5.6.3 has a recipient read it
const CHUNK_LINE = new RegExp(
  `^[0-9A-Fa-f]+(?:[ \\t]*;[ \\t]*${TCHAR}+(?:[ \\t]*=[ \\t]*(?:${TCHAR}+|${QUOTED}))?)*$`,
);

const DIFFERENCES: Difference[] = [
  {
    name: "only CRLF pairs before a request line",
    reason: "RFC 9112 2.2: a bare CR MUST be treated as invalid (or replaced by SP); a bare LF " +
      "as a line terminator is only a MAY, and llhttp skips any mix of CR and LF",
    refuses: (f) => /^(?:\r\n)*$/.test(f.gap) ? 0 : 400,
  },
  {
    name: "HTTP/1.0 and HTTP/1.1 only",
    reason: "RFC 9112 2.3: ours reads HTTP/1.x; llhttp also takes HTTP/0.9 (no version) and " +
      "HTTP/2.0 in a request line (RFC 9110 15.6.6 lets a server refuse a major version)",
    refuses: (f) => f.message.version === "1.1" || f.message.version === "1.0" ? 0 : 400,
  },
  {
    name: "a request line of exactly three words with one SP between",
    reason: "RFC 9112 3: request-line = method SP request-target SP HTTP-version; parsing " +
      "other whitespace is only a MAY, flagged for smuggling; llhttp takes `GET  / HTTP/1.1`",
    refuses: (f) => {
      const m = f.message;
      const line = f.head.slice(0, f.head.indexOf("\r\n") >>> 0);
      return line === `${m.method} ${m.target} HTTP/${m.version}` ? 0 : 400;
    },
  },
  {
    name: "a request target in one of the four forms",
    reason: "RFC 9112 3.2: the asterisk-form is `*` alone (llhttp takes `*x`), the " +
      'authority-form, uri-host ":" port, is CONNECT\'s only form (llhttp takes any URL ' +
      'chars), and an absolute-form\'s authority has one "@" at most (RFC 3986 3.2; llhttp ' +
      "takes `http://a@b@c/`)",
    refuses: (f) => {
      const { method, target } = f.message;
      if (method === "CONNECT") return HOST_VALUE.test(target) && /:\d*$/.test(target) ? 0 : 400;
      if (/^[A-Za-z]+:\/\/[^/?]*@[^/?]*@/.test(target)) return 400;
      return target.startsWith("*") && target !== "*" ? 400 : 0;
    },
  },
  {
    name: "exactly one valid Host in HTTP/1.1, at most one in HTTP/1.0",
    reason: "RFC 9112 3.2: a server MUST answer 400 to an HTTP/1.1 request without Host and " +
      "to any request with more than one Host or an invalid one; llhttp leaves it to Node",
    refuses: (f) => {
      const hosts = fieldValues(f.message, "host");
      if (hosts.length > 1 || (hosts.length === 0 && f.message.version === "1.1")) return 400;
      return hosts.every((h) => HOST_VALUE.test(h)) ? 0 : 400;
    },
  },
  {
    name: "no Transfer-Encoding in HTTP/1.0",
    reason: "RFC 9112 6.1: an HTTP/1.0 message with Transfer-Encoding MUST be treated as if " +
      "its framing were faulty; llhttp reads it as chunked",
    refuses: (f) => f.message.version === "1.0" && isChunked(f.message) ? 400 : 0,
  },
  {
    name: "chunked alone as the transfer coding, and last even in an upgrade",
    reason: "RFC 9112 6.3: a request whose final coding is not chunked MUST get 400 (llhttp " +
      "skips that check for an upgrade); RFC 9112 6.1: a coding the server does not " +
      "understand SHOULD get 501 (ours decodes none, llhttp takes `gzip, chunked`)",
    refuses: (f) => {
      const te = fieldValues(f.message, "transfer-encoding");
      if (te.length === 0) return 0;
      const codings = listElements(te);
      const names = codings.map((c) => withoutOws(c.split(";")[0]).toLowerCase());
      // chunked defines no parameters (RFC 9112 7.1)
      if (names[names.length - 1] !== "chunked" || codings[codings.length - 1].includes(";")) {
        return 400;
      }
      if (names.length === 1) return 0;
      // chunked twice is never valid (RFC 9112 7)
      return names.indexOf("chunked") === names.length - 1 ? 501 : 400;
    },
  },
  {
    name: "chunk extensions as the grammar has them",
    reason: "RFC 9112 7.1.1: chunk-ext-val = token / quoted-string; llhttp takes `3;a=` with " +
      "no value",
    refuses: (f) => f.chunkLines.every((l) => CHUNK_LINE.test(l)) ? 0 : 400,
  },
  {
    name: "a body larger than the reader's cap",
    reason: "ours caps a body (413 past body()'s maxBytes, as announced or as read); llhttp " +
      "has no cap and waits for the bytes",
    refuses: (f) => {
      if (f.message.upgrade) return 0;
      if (!isChunked(f.message)) return contentLength(f.message) > BODY_CAP ? 413 : 0;
      let sum = 0;
      for (const n of f.chunkSizes) {
        sum += n;
        if (sum > BODY_CAP) return 413;
      }
      return 0;
    },
  },
];

/** Where llhttp refuses what the RFC has a recipient accept: only what came before is compared. */
interface BeyondLlhttp {
  name: string;
  reason: string;
  /**
   * Whether llhttp's refusal in `v` is this case; `at` is where the refused request begins,
   * after `last` (the last request llhttp accepted, if any).
   */
  covers(s: string, at: number, v: LlhttpVerdict, last: Framed | null): boolean;
}

const BEYOND_LLHTTP: BeyondLlhttp[] = [
  {
    name: "Connection in a trailer",
    reason: "RFC 9110 6.5.1: a recipient may discard trailer fields, and connection control " +
      "is not one a sender may move there; ours drops them, llhttp closes after `close`",
    covers: (_s, _at, v, last) =>
      v.code === "HPE_CLOSED_CONNECTION" && last !== null &&
      last.trailers.some((t) => /^connection:/i.test(t)),
  },
  {
    name: "a Transfer-Encoding of chunked that llhttp misreads",
    reason: "RFC 9110 5.6.1: a recipient MUST ignore empty list elements (`chunked,`, and an " +
      "empty field beside chunked in newer llhttp); RFC 9110 5.5: it MUST exclude the OWS " +
      "around a value (llhttp refuses `chunked` then HTAB)",
    covers: (s, at, v) => {
      if (v.code !== "HPE_INVALID_TRANSFER_ENCODING") return false;
      const fields = headFields(s, at);
      if (fields === null) return false;
      const te = fields.filter(([n]) => n.toLowerCase() === "transfer-encoding").map(([, v]) => v);
      const elements = listElements(te);
      return elements.length === 1 && elements[0].toLowerCase() === "chunked";
    },
  },
  {
    name: "an absolute-form target llhttp cannot read",
    reason: "RFC 9112 3.2.2: a server MUST accept the absolute-form, and RFC 3986 3 lets a " +
      "scheme have digits, +, - and . and a hier-part go without //; llhttp wants letters and ://",
    covers: (s, at, v) => {
      if (v.pending !== null || v.code !== "HPE_INVALID_URL") return false;
      const m = /^[\r\n]*([!#$%&'*+.^_`|~0-9A-Za-z-]+) ([\x21-\x7e]*)/.exec(s.slice(at, at + 200));
      return m !== null && m[1] !== "CONNECT" && /^[A-Za-z][A-Za-z0-9+.-]*:/.test(m[2]) &&
        !/^[A-Za-z]+:\/\//.test(m[2]);
    },
  },
  {
    name: "a method llhttp does not list",
    reason: "RFC 9110 9.1: a method is any token (extension methods, case-sensitive); llhttp " +
      "knows a fixed list, so ours may accept `FOO` or `get` (or refuse them for another reason)",
    covers: (s, at, v) => {
      if (v.pending !== null) return false;
      const m = /^[\r\n]*([!#$%&'*+.^_`|~0-9A-Za-z-]+) /.exec(s.slice(at, at + 64));
      return m !== null && !LLHTTP_METHODS.includes(m[1]);
    },
  },
  {
    name: "BWS in a chunk extension",
    reason: "RFC 9112 7.1.1 and RFC 9110 5.6.3: BWS around a chunk extension's `;` and `=`, " +
      "which a recipient MUST parse; llhttp refuses `3 ;a` and `3; a`",
    covers: (s, _at, v) => {
      if (v.pending === null || !isChunked(v.pending)) return false;
      // the line llhttp refused in (a line cut off by EOF may still become valid)
      const lineStart = s.lastIndexOf("\r\n", v.errorAt - 1) + 2;
      const eol = s.indexOf("\r\n", v.errorAt);
      const line = s.slice(lineStart, eol < 0 ? s.length : eol);
      return /^[0-9A-Fa-f]+[ \t]*;/.test(line) && /[ \t]/.test(line) &&
        (eol < 0 || CHUNK_LINE.test(line));
    },
  },
];

/** Where llhttp stopped reading, and how ours reads the bytes from there. */
interface Stop {
  end: End;
  /** Where the bytes after the last request llhttp accepted begin. */
  at: number;
  length: number;
  /**
   * Between requests or in a head, what headScan finds there; in a body llhttp refused, whether
   * the line (or trailer section) it refused in is whole in the input; else "none".
   */
  scan: "bad" | "whole" | "empty" | "open" | "none";
}

/** A way ours ends differently from llhttp, on the bytes after its last request. */
interface EndDifference {
  name: string;
  reason: string;
  /** The ends ours may have at `stop`, or null when this is not the case. */
  ends(stop: Stop): End[] | null;
}

const END_DIFFERENCES: EndDifference[] = [
  {
    name: "a bare CR or LF, or NUL, in a head is refused as it arrives",
    reason: "RFC 9112 2.2: a bare CR MUST be treated as invalid and LF alone as a line " +
      "terminator is only a MAY; RFC 9110 5.5: NUL is invalid in a field. llhttp skips CR and " +
      "LF between requests, and waits where ours has already refused",
    ends: (stop) => stop.scan === "bad" ? ["refused"] : null,
  },
  {
    name: "a head, a chunk line or a trailer section is judged once whole",
    reason: "no RFC sets when to refuse; llhttp refuses at the first bad byte, ours once the " +
      "head (bounded by its 16 KiB, and by the server's head timer) or the line is whole, so " +
      "at EOF inside one it is incomplete where llhttp has refused",
    ends: (stop) =>
      stop.scan !== "open" ? null : stop.end === "refused" ? ["refused", "incomplete"] : [
        "incomplete",
      ],
  },
  {
    name: "empty lines before a request line hold the parser pending",
    reason: "RFC 9112 2.2: a server SHOULD ignore at least one empty line before a request " +
      "line, and both do; ours counts them as a head begun so that the server's head timer " +
      "bounds a client that sends only CRLF, so at EOF it is incomplete where llhttp is clean",
    ends: (stop) => stop.scan === "empty" && stop.at < stop.length ? ["incomplete"] : null,
  },
];

// ---- the oracle --------------------------------------------------------------------------

/** What ours must answer: these messages, then one of `ends`, or anything after them. */
interface Expected {
  messages: Message[];
  ends: End[];
  /** Compare `messages` only: after them llhttp refused what ours may accept. */
  prefixOnly: boolean;
  why: string;
}

function firstDifference(f: Framed): Difference | null {
  for (const d of DIFFERENCES) if (d.refuses(f) !== 0) return d;
  return null;
}

/** llhttp's verdict adjusted by the differences we intend. */
function oracle(s: string, v: LlhttpVerdict): Expected {
  const messages: Message[] = [];
  const prefixOnly = false;
  const refused = (why: string): Expected => ({ messages, ends: ["refused"], prefixOnly, why });
  let at = 0;
  let last: Framed | null = null;
  for (const m of v.messages) {
    const f = frame(s, at, m);
    last = f;
    const d = firstDifference(f);
    if (d !== null) return refused(d.name);
    messages.push(m);
    if (m.upgrade || !m.keepAlive) return { messages, ends: ["clean"], prefixOnly: false, why: "" };
    if (f.end < 0) throw new Error(`harness: llhttp's ${m.method} request has no end in the input`);
    at = f.end;
  }
  const pending = v.pending === null ? null : frame(s, at, v.pending);
  if (pending !== null) {
    const d = firstDifference(pending);
    if (d !== null) return refused(d.name);
  }
  if (v.end === "refused") {
    const beyond = BEYOND_LLHTTP.find((b) => b.covers(s, at, v, last));
    if (beyond) return { messages, ends: [], prefixOnly: true, why: beyond.name };
  }
  const stop: Stop = { end: v.end, at, scan: "none", length: s.length };
  if (pending === null) stop.scan = headScan(s.slice(at));
  else if (v.end === "refused") {
    // the chunk line, or the trailer section, llhttp refused in: whole in the input or not
    const whole = pending.trailerStart < 0
      ? s.indexOf("\r\n", v.errorAt) >= 0
      : s.startsWith("\r\n", pending.trailerStart) ||
        s.indexOf("\r\n\r\n", pending.trailerStart) >= 0;
    stop.scan = whole ? "whole" : "open";
  }
  for (const e of END_DIFFERENCES) {
    const ends = e.ends(stop);
    if (ends !== null) return { messages, ends, prefixOnly, why: e.name };
  }
  return { messages, ends: [v.end], prefixOnly, why: "" };
}

/**
 * How ours reads `rest` as the empty lines before a head and the head: a byte it refuses as
 * it arrives (a bare CR or LF, NUL), a whole head, only CRLF pairs, or the end of the input
 * inside a head (or after a CR).
 */
function headScan(rest: string): "bad" | "whole" | "empty" | "open" {
  let i = 0;
  while (rest.startsWith("\r\n", i)) i += 2;
  if (i === rest.length) return "empty";
  for (; i < rest.length; i++) {
    const c = rest.charCodeAt(i);
    if (c === 0 || c === LF) return "bad";
    if (c === CR) {
      if (i + 1 === rest.length) return "open";
      if (rest.charCodeAt(i + 1) !== LF) return "bad";
      if (rest.startsWith("\r\n", i + 2)) return "whole";
      i++;
    }
  }
  return "open";
}

function sameMessage(a: Message, b: Message): boolean {
  if (
    a.method !== b.method || a.target !== b.target || a.version !== b.version ||
    a.body !== b.body || a.keepAlive !== b.keepAlive || a.upgrade !== b.upgrade ||
    a.headers.length !== b.headers.length
  ) return false;
  for (let i = 0; i < a.headers.length; i++) {
    if (a.headers[i][0] !== b.headers[i][0] || a.headers[i][1] !== b.headers[i][1]) return false;
  }
  return true;
}

/** Whether ours's verdict is what the oracle expects. */
function agrees(ours: Verdict, exp: Expected): boolean {
  const n = exp.messages.length;
  if (exp.prefixOnly ? ours.messages.length < n : ours.messages.length !== n) return false;
  for (let i = 0; i < n; i++) if (!sameMessage(ours.messages[i], exp.messages[i])) return false;
  return exp.prefixOnly || exp.ends.includes(ours.end);
}

interface Comparison {
  ours: Verdict;
  llhttp: LlhttpVerdict;
  expected: Expected;
  ok: boolean;
}

function compare(input: string, cuts: number[]): Comparison {
  const bytes = Buffer.from(input, "latin1");
  const chunks = chunked(bytes, cuts);
  const ll = llhttpVerdict(chunks);
  const ours = oursVerdict(chunks);
  const expected = oracle(input, ll);
  return { ours, llhttp: ll, expected, ok: agrees(ours, expected) };
}

function report(input: string, cuts: number[], c: Comparison): string {
  return [
    `ours differs from the oracle on ${JSON.stringify(input)} cut at ${JSON.stringify(cuts)}`,
    `ours: ${JSON.stringify(c.ours)}`,
    `llhttp: ${JSON.stringify({ ...c.llhttp, pending: c.llhttp.pending?.method })}`,
    `expected: ${JSON.stringify(c.expected)}`,
  ].join("\n");
}

// ---- seed corpus -------------------------------------------------------------------------

const HPA_HEADERS = "Host: 10.96.0.12:443\r\n" +
  "User-Agent: kube-controller-manager/v1.31.2 (linux/amd64) kubernetes/5864a46/" +
  "system:serviceaccount:kube-system:horizontal-pod-autoscaler\r\n" +
  "Accept: application/vnd.kubernetes.protobuf, */*\r\n" +
  "Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2ln\r\n" +
  "X-Remote-User: system:serviceaccount:kube-system:horizontal-pod-autoscaler\r\n" +
  "X-Remote-Group: system:serviceaccounts\r\n" +
  "x-remote-group:\tsystem:authenticated \r\n" +
  "Accept-Encoding: gzip\r\n\r\n";

/** Requests written for this test: what the adapter serves, and what attacks parsers. */
const SEEDS: string[] = [
  "GET /apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/%2A/http_requests" +
  "?labelSelector=app%3Dweb HTTP/1.1\r\n" + HPA_HEADERS,
  "GET /apis/external.metrics.k8s.io/v1beta1/namespaces/prod/queue-depth HTTP/1.1\r\n" +
  "Host: adapter.monitoring.svc\r\nConnection: close\r\nAccept: application/json\r\n\r\n",
  "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\nGET /readyz?verbose HTTP/1.1\r\nHost: a\r\n\r\n" +
  "GET /livez HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, close\r\n\r\n",
  POST + 'Content-Type: application/json\r\nContent-Length: 27\r\n\r\n{"pod":"web-0","value":1.5}',
  POST + CHUNKED + '\r\n5;name=value\r\nhello\r\n6;q="a;b";x\r\n world\r\n' +
  "0\r\nX-Checksum: 3f\r\nX-Count: 2\r\n\r\n",
  POST + CHUNKED + "\r\nA\r\n0123456789\r\n000\r\n\r\nGET /healthz HTTP/1.1\r\nHost: a\r\n\r\n",
  POST + "Content-Length: 5\r\n\r\nhelloPOST /shard/samples HTTP/1.1\r\nHost: b\r\n" + CHUNKED +
  "\r\n3\r\nabc\r\n0\r\n\r\n",
  "GET /metrics HTTP/1.0\r\nHost: a\r\n\r\n",
  "GET /metrics HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\nHEAD / HTTP/1.0\r\n\r\n",
  '\r\nGET /openapi/v2 HTTP/1.1\r\nHost: [::1]:8443\r\nIf-None-Match: "abc"\r\n\r\n\r\n',
  "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
  "Sec-WebSocket-Version: 13\r\n\r\n\x81\x05hello",
  "CONNECT adapter:443 HTTP/1.1\r\nHost: adapter:443\r\n\r\nGET / HTTP/1.1\r\n\r\n",
  "OPTIONS * HTTP/1.1\r\nHost: a\r\nMax-Forwards: 0\r\n\r\n",
  "GET http://adapter.kube-system:443/apis?x=1#frag HTTP/1.1\r\nHost: adapter.kube-system:443\r\n\r\n",
  "PUT /x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length:  003 \r\n\r\nabc",
  "DELETE /apis/x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\nPATCH /y HTTP/1.1\r\nHost: a\r\n" +
  "Content-Length: 2\r\n\r\n{}",
  "GET / HTTP/1.1\r\nHost: a\r\n" +
  Array.from({ length: 36 }, (_, i) => `X-H${i}: v${i}\r\n`).join("") + "\r\n",
  // request smuggling: CL.TE, TE.CL and TE.TE
  POST + "Content-Length: 6\r\n" + CHUNKED + "\r\n0\r\n\r\nG",
  POST + CHUNKED + "Content-Length: 3\r\n\r\n8\r\nSMUGGLED\r\n0\r\n\r\n",
  POST + "Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
  POST + "Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
  POST + "Transfer-Encoding:\tchunked\r\n\r\n0\r\n\r\n",
  POST + CHUNKED + "Transfer-Encoding: identity\r\n\r\n0\r\n\r\n",
  POST + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
  POST + "Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n",
  POST + "Transfer-Encoding: gzip\r\n" + CHUNKED + "\r\n0\r\n\r\n",
  POST + "Content-Length: +5\r\n\r\nhello",
  POST + "Content-Length: -1\r\n\r\n",
  POST + "Content-Length: 5, 5\r\n\r\nhello",
  POST + "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
  POST + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
  "POST / HTTP/1.0\r\nHost: a\r\n" + CHUNKED + "\r\n3\r\nabc\r\n0\r\n\r\n",
  // line and value oddities
  "GET / HTTP/1.1\r\nHost: a\r\nX-Folded: one\r\n two\r\n\r\n",
  "GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n",
  "GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n",
  "GET / HTTP/1.1\nHost: a\r\n\r\n",
  "GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n",
  POST + CHUNKED + "\r\n3\nabc\r\n0\r\n\r\n",
  "GET / HTTP/1.1\r\nHost: a\r\nX: \x0bv\r\nY: v\x0c\r\n\r\n",
  "GET / HTTP/1.1\r\nHost: \xa0a\r\nX: v\xa0\r\nY: a\xa0b\r\n\r\n",
  "GET / HTTP/1.1\r\nHost : a\r\n\r\n",
  "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
  "GET /healthz HTTP/1.1\r\n\r\n",
  "GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
  "GET /\r\n\r\n",
  "FOO / HTTP/1.1\r\nHost: a\r\n\r\n",
  POST + CHUNKED + "\r\n3 ;a\r\nabc\r\n0\r\n\r\n",
];

// ---- mutations ---------------------------------------------------------------------------

/** Pieces of requests, inserted whole: they reach framing that single bytes rarely do. */
const FRAGMENTS = [
  "\r\n",
  "\r\n\r\n",
  ", ",
  " chunked",
  "Host: a\r\n",
  "Content-Length: 0\r\n",
  "Content-Length: 3\r\n",
  CHUNKED,
  "Transfer-Encoding: gzip\r\n",
  "Connection: close\r\n",
  "Connection: keep-alive\r\n",
  "Connection: upgrade\r\nUpgrade: h2c\r\n",
  "0\r\n\r\n",
  "3;x=1\r\nabc\r\n",
  "GET / HTTP/1.1\r\n",
  "POST /x HTTP/1.0\r\n",
];

const mutation = mutationOf(FRAGMENTS);

/** A seed, one to four mutations, and where to cut the bytes into chunks. */
const testCase = fc.record({
  seed: fc.nat({ max: SEEDS.length - 1 }),
  mutations: fc.array(mutation, { minLength: 1, maxLength: 4 }),
  cuts: fc.oneof(
    { weight: 12, arbitrary: fc.array(fc.nat({ max: 400 }), { maxLength: 4 }) },
    { weight: 1, arbitrary: fc.constant(null) },
  ),
});

// HTTP1_DIFF_RUNS=<n> runs longer (a soak); the default keeps the file under a few seconds
const NUM_RUNS = process.env.HTTP1_DIFF_RUNS === undefined
  ? 100_000
  : Number(process.env.HTTP1_DIFF_RUNS);
const SEED = process.env.HTTP1_DIFF_SEED === undefined
  ? 46_004
  : Number(process.env.HTTP1_DIFF_SEED);

// ---- tests -------------------------------------------------------------------------------

/** One fixed case: ours's exact answer and llhttp's verdict. */
interface Row {
  name: string;
  input: string;
  /**
   * The status ours refuses with, or the number of requests it accepts and how it ends then
   * (by default as llhttp: clean, or incomplete).
   */
  ours: { status: number } | { accepts: number; end?: End };
  llhttp: End;
  /** A header of ours's first request, exactly as it must read. */
  header?: [string, string];
}

const ROWS: Row[] = [
  {
    name: "GET /healthz without Host",
    input: "GET /healthz HTTP/1.1\r\n\r\n",
    ours: { status: 400 },
    llhttp: "clean",
  },
  {
    name: "two Host fields",
    input: "GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    ours: { status: 400 },
    llhttp: "clean",
  },
  {
    name: "a value padded with VT",
    input: "GET / HTTP/1.1\r\nHost: a\r\nX-Remote-User: \x0badmin\r\n\r\n",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "a value padded with FF",
    input: "GET / HTTP/1.1\r\nHost: a\r\nX-Remote-User: admin\x0c\r\n\r\n",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    // obs-text is part of the value (RFC 9110 5.5), as llhttp has it: never trimmed away
    name: "a value padded with NBSP",
    input: "GET / HTTP/1.1\r\nHost: a\r\nX-Remote-User: \xa0admin\xa0 \r\n\r\n",
    ours: { accepts: 1 },
    llhttp: "clean",
    header: ["X-Remote-User", "\xa0admin\xa0"],
  },
  {
    name: "a Host padded with NBSP",
    input: "GET / HTTP/1.1\r\nHost: a\xa0\r\n\r\n",
    ours: { status: 400 },
    llhttp: "clean",
  },
  {
    name: "NBSP inside a value",
    input: "GET / HTTP/1.1\r\nHost: a\r\nX: a\xa0b\r\n\r\n",
    ours: { accepts: 1 },
    llhttp: "clean",
  },
  {
    name: "HTTP/1.0 with Transfer-Encoding: chunked",
    input: "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    ours: { status: 400 },
    llhttp: "clean",
  },
  {
    name: "Transfer-Encoding: chunked, gzip",
    input: POST + "Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "Transfer-Encoding: gzip, chunked",
    input: POST + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
    ours: { status: 501 },
    llhttp: "clean",
  },
  {
    name: "Transfer-Encoding: gzip and chunked in two fields",
    input: POST + "Transfer-Encoding: gzip\r\n" + CHUNKED + "\r\n0\r\n\r\n",
    ours: { status: 501 },
    llhttp: "clean",
  },
  {
    name: "CL.TE: Content-Length then Transfer-Encoding",
    input: POST + "Content-Length: 6\r\n" + CHUNKED + "\r\n0\r\n\r\nG",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "TE.CL: Transfer-Encoding then Content-Length",
    input: POST + CHUNKED + "Content-Length: 3\r\n\r\n8\r\nSMUGGLED\r\n0\r\n\r\n",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "TE.TE: a space before the colon",
    input: POST + "Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "TE.TE: xchunked",
    input: POST + "Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "TE.TE: HTAB before chunked is OWS",
    input: POST + "Transfer-Encoding:\tchunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    ours: { accepts: 1 },
    llhttp: "clean",
  },
  {
    name: "TE.TE: chunked then identity",
    input: POST + CHUNKED + "Transfer-Encoding: identity\r\n\r\n0\r\n\r\n",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "TE.TE: chunked twice",
    input: POST + "Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "TE.TE: chunked with a parameter",
    input: POST + "Transfer-Encoding: chunked;q=1\r\n\r\n0\r\n\r\n",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "Content-Length: +5",
    input: POST + "Content-Length: +5\r\n\r\nhello",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "Content-Length: -1",
    input: POST + "Content-Length: -1\r\n\r\n",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "Content-Length: 5, 5",
    input: POST + "Content-Length: 5, 5\r\n\r\nhello",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "Content-Length twice with the same value",
    input: POST + "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "Content-Length twice with different values",
    input: POST + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "an obs-fold line",
    input: "GET / HTTP/1.1\r\nHost: a\r\nX-Folded: one\r\n two\r\n\r\n",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "NUL in a value",
    input: "GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "a bare CR in a value",
    input: "GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "a bare LF between header lines",
    input: "GET / HTTP/1.1\r\nHost: a\nTransfer-Encoding: chunked\r\n\r\n",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "a bare LF after a chunk size",
    input: POST + CHUNKED + "\r\n3\nabc\r\n0\r\n\r\n",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "a bare LF before a request line",
    input: "\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
    ours: { status: 400 },
    llhttp: "clean",
  },
  {
    name: "CRLF before a request line",
    input: "\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
    ours: { accepts: 1 },
    llhttp: "clean",
  },
  {
    name: "two SP after the method",
    input: "GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
    ours: { status: 400 },
    llhttp: "clean",
  },
  {
    name: "HTTP/0.9",
    input: "GET /\r\n\r\n",
    ours: { status: 400 },
    llhttp: "clean",
  },
  {
    name: "HTTP/2.0 in a request line",
    input: "GET / HTTP/2.0\r\nHost: a\r\n\r\n",
    ours: { status: 400 },
    llhttp: "clean",
  },
  {
    name: "a method llhttp does not know",
    input: "FOO / HTTP/1.1\r\nHost: a\r\n\r\n",
    ours: { accepts: 1 },
    llhttp: "refused",
  },
  {
    name: "an absolute-form target",
    input: "GET http://adapter:443/apis?x=1 HTTP/1.1\r\nHost: adapter:443\r\n\r\n",
    ours: { accepts: 1 },
    llhttp: "clean",
  },
  {
    name: "chunk extensions and trailers",
    input: POST + CHUNKED + '\r\n5;a=b;c="d;e"\r\nhello\r\n0;z\r\nX-Sum: 1\r\n\r\n',
    ours: { accepts: 1 },
    llhttp: "clean",
  },
  {
    name: "BWS before a chunk extension",
    input: POST + CHUNKED + "\r\n5 ;a=b\r\nhello\r\n0\r\n\r\n",
    ours: { accepts: 1 },
    llhttp: "refused",
  },
  {
    name: "a chunk extension with no value",
    input: POST + CHUNKED + "\r\n5;a=\r\nhello\r\n0\r\n\r\n",
    ours: { status: 400 },
    llhttp: "clean",
  },
  {
    name: "pipelined requests, the last closing",
    input: SEEDS[2],
    ours: { accepts: 3 },
    llhttp: "clean",
  },
  // found by the differential: targets in none of the forms, hosts, codings, trailers
  {
    name: "a target in none of the four forms",
    input: "GET a/metrics HTTP/1.1\r\nHost: a\r\n\r\n",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "an asterisk-form with more than the asterisk",
    input: "OPTIONS *a HTTP/1.1\r\nHost: a\r\n\r\n",
    ours: { status: 400 },
    llhttp: "clean",
  },
  {
    name: "CONNECT to a path",
    input: "CONNECT /x HTTP/1.1\r\nHost: a\r\n\r\n",
    ours: { status: 400 },
    llhttp: "clean",
  },
  {
    name: "an absolute-form whose authority has two @",
    input: "GET http://a@b@c/ HTTP/1.1\r\nHost: c\r\n\r\n",
    ours: { status: 400 },
    llhttp: "clean",
  },
  {
    name: "an absolute-form without //",
    input: "GET urn:example:metrics HTTP/1.1\r\nHost: a\r\n\r\n",
    ours: { accepts: 1 },
    llhttp: "refused",
  },
  {
    name: "a Host with a bad IP literal",
    input: "GET / HTTP/1.1\r\nHost: [::k]:8443\r\n\r\n",
    ours: { status: 400 },
    llhttp: "clean",
  },
  {
    name: "a Host with a bare %",
    input: "GET / HTTP/1.1\r\nHost: a%zz\r\n\r\n",
    ours: { status: 400 },
    llhttp: "clean",
  },
  {
    name: "Transfer-Encoding: chunked;",
    input: POST + "Transfer-Encoding: chunked;\r\n\r\n0\r\n\r\n",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "Content-Length among the trailers",
    input: POST + CHUNKED + "\r\n3\r\nabc\r\n0\r\nContent-Length: 3\r\n\r\n",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "Transfer-Encoding among the trailers",
    input: POST + CHUNKED + "\r\n0\r\nTransfer-Encoding: chunked\r\n\r\n",
    ours: { status: 400 },
    llhttp: "refused",
  },
  {
    name: "an upgrade whose coding is not chunked",
    input: POST + "Connection: upgrade\r\nUpgrade: h2c\r\nTransfer-Encoding: xchunked\r\n\r\n",
    ours: { status: 400 },
    llhttp: "clean",
  },
  {
    name: "an empty Upgrade is no upgrade",
    input: "GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade:\r\n\r\n" +
      "GET /b HTTP/1.1\r\nHost: a\r\n\r\n",
    ours: { accepts: 2 },
    llhttp: "clean",
  },
  {
    name: "a trailing CRLF after a request",
    input: "GET / HTTP/1.1\r\nHost: a\r\n\r\n\r\n",
    ours: { accepts: 1, end: "incomplete" },
    llhttp: "clean",
  },
  {
    name: "a request cut short in its body",
    input: POST + "Content-Length: 5\r\n\r\nhel",
    ours: { accepts: 0 },
    llhttp: "incomplete",
  },
];

describe("fixed cases", () => {
  for (const row of ROWS) {
    it(`${row.name}: ours ${JSON.stringify(row.ours)}, llhttp ${row.llhttp}`, () => {
      const cuts: number[] = [];
      const c = compare(row.input, cuts);
      assert.equal(c.llhttp.end, row.llhttp, "llhttp's verdict");
      if ("status" in row.ours) {
        assert.equal(c.ours.end, "refused", report(row.input, cuts, c));
        assert.equal(c.ours.status, row.ours.status);
      } else {
        const end = row.ours.end ?? (row.llhttp === "incomplete" ? "incomplete" : "clean");
        assert.equal(c.ours.end, end, report(row.input, cuts, c));
        assert.equal(c.ours.messages.length, row.ours.accepts);
      }
      if (row.header !== undefined) {
        const [name, value] = row.header;
        assert.deepEqual(c.ours.messages[0].headers.find(([n]) => n === name), [name, value]);
      }
      // the oracle agrees, whole and byte by byte
      assert.ok(c.ok, report(row.input, cuts, c));
      const bytewise = everyByte(row.input.length);
      const b = compare(row.input, bytewise);
      assert.ok(b.ok, report(row.input, bytewise, b));
    });
  }

  it("refuses a request line ended by a bare LF as soon as the LF arrives", () => {
    const parser = new Http1Parser();
    parser.push(Buffer.from("GET /healthz HTTP/1.1", "latin1"));
    assert.equal(parser.next(), null);
    parser.push(Buffer.from("\n", "latin1"));
    const r = parser.next();
    assert.equal(r !== null && "status" in r ? r.status : r, 400);
    assert.equal(llhttpOf("GET /healthz HTTP/1.1\n").end, "refused");
  });
});

describe("differential against llhttp", () => {
  it("reads every seed as the oracle says, whole and byte by byte", () => {
    for (const input of SEEDS) {
      for (const cuts of [[], everyByte(input.length)]) {
        const c = compare(input, cuts);
        assert.ok(c.ok, report(input, cuts, c));
      }
    }
  });

  it(`agrees with the oracle on ${NUM_RUNS} mutated requests (HTTP1_DIFF_SEED=${SEED})`, () => {
    let prefixOnly = 0;
    let skipped = 0;
    try {
      fc.assert(
        fc.property(testCase, (t) => {
          let input = SEEDS[t.seed];
          for (const m of t.mutations) input = mutate(input, m);
          if (LLHTTP_DEFECTS.some((d) => d.present && d.meets.test(input))) {
            skipped++;
            return true;
          }
          const cuts = t.cuts ?? everyByte(input.length);
          const c = compare(input, cuts);
          if (!c.ok) throw new Error(report(input, cuts, c));
          if (c.expected.prefixOnly) prefixOnly++;
          return true;
        }),
        { seed: SEED, numRuns: NUM_RUNS },
      );
    } catch (e) {
      // fast-check keeps the property's own error (with the request bytes) as the cause
      const cause = (e as Error).cause instanceof Error
        ? `\n${((e as Error).cause as Error).message}`
        : "";
      throw new Error(`HTTP1_DIFF_SEED=${SEED}: ${(e as Error).message}${cause}`);
    }
    // the oracle must mostly compare whole verdicts, or the test proves little
    assert.ok(prefixOnly + skipped < NUM_RUNS / 5, `${prefixOnly} prefix-only, ${skipped} skipped`);
  });
});
