/**
 * A differential test of our HTTP/1.1 parser's response mode (src/runtime/http1_parser.ts, as
 * the collectors' client reads answers: http1_client.ts) against llhttp's response mode, the
 * parser of Node, Deno and Bun, through `_http_common`'s `HTTPParser` in strict mode, as Node's
 * own client uses it (a HEAD's answer has no body: its head callback returns 1).
 *
 * The client reads one answer per request: any 1xx heads, then the final response (its body
 * read to its end, the connection's EOF ending a body read until the close). So a verdict is
 * that final response (status, reason, version, headers, body, keep-alive), or a failure. Both
 * parsers read the same bytes in the same chunks. The oracle is llhttp's verdict, where:
 * - llhttp accepts what ours refuses on purpose (DIFFERENCES, each with the RFC text that
 *   allows it): ours must refuse;
 * - llhttp refuses what the RFC has a recipient accept (BEYOND_LLHTTP): ours may accept it.
 * Otherwise both fail, or both accept the same response.
 *
 * The property mutates a seed corpus of responses (ours, written for this test). It is seeded:
 * HTTP1_RESPONSE_DIFF_SEED=<n> replays a run; a failure prints the seed and the bytes,
 * JSON-escaped.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createRequire } from "node:module";
import process from "node:process";
import fc from "fast-check";
import { Http1Parser } from "../../src/runtime/http1_parser.ts";
import { chunked, everyByte, mutate, mutationOf } from "../support/http1_fuzz.ts";

/** A response a parser read whole. */
interface Message {
  status: number;
  reason: string;
  /** "1.1", "1.0" (llhttp also reads "0.9" and "2.0"). */
  version: string;
  headers: [string, string][];
  /** The body's bytes as latin1 text. */
  body: string;
  keepAlive: boolean;
}

/** What a parser made of the bytes of one answer: the 1xx heads and the final response. */
interface Verdict {
  /** Every head read before the final one (1xx), then the final response; [] when none. */
  messages: Message[];
  /** The final response was read whole. */
  ok: boolean;
  why: string;
}

const CR = 0x0d;
const LF = 0x0a;

function pairs(flat: string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i], flat[i + 1]]);
  return out;
}

function latin1(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1");
}

/** An interim response (1xx but 101, which ends the answer as a final one would). */
function interim(status: number): boolean {
  return status >= 100 && status <= 199 && status !== 101;
}

// ---- llhttp ------------------------------------------------------------------------------

const require = createRequire(import.meta.url);
const { HTTPParser } = require("_http_common") as { HTTPParser: any };

interface LlhttpRun {
  messages: Message[];
  current: Message | null;
  body: string[];
  headers: string[];
  head: boolean;
  final: boolean;
}

let run: LlhttpRun = {
  messages: [],
  current: null,
  body: [],
  headers: [],
  head: false,
  final: false,
};

function noop(): void {}

const llhttp = new HTTPParser();
llhttp[HTTPParser.kOnMessageBegin] = noop;
llhttp[HTTPParser.kOnExecute] = noop;
llhttp[HTTPParser.kOnTimeout] = noop;
llhttp[HTTPParser.kOnHeaders] = function onHeaders(headers: string[]): void {
  if (run.current !== null) return; // trailers
  for (const h of headers) run.headers.push(h);
};
llhttp[HTTPParser.kOnHeadersComplete] = function onHeadersComplete(
  major: number,
  minor: number,
  headers: string[] | undefined,
  _method: number,
  _url: string | undefined,
  status: number,
  reason: string,
  _upgrade: boolean,
  keepAlive: boolean,
): number {
  const flat = headers === undefined ? run.headers : run.headers.concat(headers);
  run.headers = [];
  run.body = [];
  run.current = {
    status,
    reason,
    version: `${major}.${minor}`,
    headers: pairs(flat),
    body: "",
    keepAlive: !!keepAlive,
  };
  // Node's client: no body after a HEAD (llhttp knows 1xx, 204 and 304 itself)
  return run.head ? 1 : 0;
};
llhttp[HTTPParser.kOnBody] = function onBody(b: Uint8Array): void {
  if (!run.final) run.body.push(latin1(b));
};
llhttp[HTTPParser.kOnMessageComplete] = function onMessageComplete(): void {
  if (run.final || run.current === null) return;
  const m = run.current;
  m.body = run.body.join("");
  run.messages.push(m);
  run.current = null;
  if (!interim(m.status)) run.final = true;
};

/** llhttp's verdict on `chunks`, executed one by one, then EOF. */
function llhttpVerdict(chunks: Uint8Array[], method: string): Verdict {
  run = {
    messages: [],
    current: null,
    body: [],
    headers: [],
    head: method === "HEAD",
    final: false,
  };
  llhttp.initialize(HTTPParser.RESPONSE, {}, 0, 0);
  for (const chunk of chunks) {
    const r = llhttp.execute(chunk);
    if (run.final) return { messages: run.messages, ok: true, why: "" };
    if (r instanceof Error) {
      return { messages: run.messages, ok: false, why: (r as Error & { code: string }).code };
    }
  }
  // Node and Bun answer an Error, Deno -1, when the input ends inside a message; the end
  // completes a body read until the close
  const f = llhttp.finish();
  const bad = f instanceof Error || (typeof f === "number" && f < 0);
  return { messages: run.messages, ok: run.final, why: bad ? "EOF" : run.final ? "" : "none" };
}

// ---- ours --------------------------------------------------------------------------------

/** Ours's verdict on `chunks`, pushed one by one, then EOF (`finish()`), as the client reads. */
function oursVerdict(chunks: Uint8Array[], method: string): Verdict {
  const parser = new Http1Parser({ maxHeadBytes: 64 * 1024 });
  const messages: Message[] = [];
  let current: Message | null = null;
  let body: string[] = [];
  const step = (): Verdict | null => {
    for (;;) {
      if (current !== null) {
        const piece = parser.body(Infinity);
        if (piece === null) return null;
        if (piece === "end") {
          current.body = body.join("");
          messages.push(current);
          return { messages, ok: true, why: "" };
        }
        if (piece instanceof Uint8Array) body.push(latin1(piece));
        else return { messages, ok: false, why: piece.reason };
        continue;
      }
      const r = parser.nextResponse(method);
      if (r === null) return null;
      if (!("minor" in r)) return { messages, ok: false, why: r.reason };
      const m: Message = {
        status: r.status,
        reason: r.reason,
        version: `1.${r.minor}`,
        headers: pairs(r.rawHeaders),
        body: "",
        keepAlive: r.keepAlive,
      };
      if (interim(r.status)) {
        messages.push(m);
        continue;
      }
      if (r.bodyLength === 0) {
        messages.push(m);
        return { messages, ok: true, why: "" };
      }
      current = m;
      body = [];
    }
  };
  for (const chunk of chunks) {
    parser.push(chunk);
    const v = step();
    if (v !== null) return v;
  }
  parser.finish();
  return step() ?? { messages, ok: false, why: "none" };
}

// ---- placing llhttp's final response in the input ----------------------------------------

/** Where llhttp's messages lie in the input: what the differences read of the raw bytes. */
interface Framed {
  /** What came before each status line (llhttp skips CR and LF). */
  gaps: string[];
  /** The chunk-size lines of the final response's body (with extensions). */
  chunkLines: string[];
  /** Its trailer lines. */
  trailers: string[];
  /** Every head's bytes, without the CRLF CRLF that ends it. */
  heads: string[];
}

function fieldValues(m: Message, name: string): string[] {
  return m.headers.filter(([n]) => n.toLowerCase() === name).map(([, v]) => v);
}

function withoutOws(v: string): string {
  return v.replace(/^[ \t]+|[ \t]+$/g, "");
}

/** A list-valued field's elements, without the empty ones (RFC 9110 5.6.1). */
function listElements(values: string[]): string[] {
  return values.join(",").split(",").map(withoutOws).filter((e) => e !== "");
}

function hasBody(m: Message, method: string): boolean {
  return method !== "HEAD" && m.status >= 200 && m.status !== 204 && m.status !== 304;
}

/** llhttp (strict) ends every line of a head and a chunked body with CRLF. */
function frame(s: string, messages: Message[], method: string): Framed {
  let at = 0;
  const f: Framed = { gaps: [], chunkLines: [], trailers: [], heads: [] };
  for (const m of messages) {
    const gapStart = at;
    while (at < s.length && (s.charCodeAt(at) === CR || s.charCodeAt(at) === LF)) at++;
    f.gaps.push(s.slice(gapStart, at));
    const headEnd = s.indexOf("\r\n\r\n", at);
    if (headEnd < 0) {
      // llhttp ended a head with something else than CRLF CRLF: a bare CR (a difference)
      f.heads.push(s.slice(at));
      if (!/\r(?!\n)/.test(s.slice(at))) {
        throw new Error("harness: llhttp's head has no end in the input");
      }
      return f;
    }
    f.heads.push(s.slice(at, headEnd));
    at = headEnd + 4;
    if (interim(m.status) || !hasBody(m, method)) continue;
    if (fieldValues(m, "transfer-encoding").length === 0) continue;
    for (;;) {
      const eol = s.indexOf("\r\n", at);
      if (eol < 0) return f;
      const line = s.slice(at, eol);
      f.chunkLines.push(line);
      const digits = /^[0-9A-Fa-f]+/.exec(line);
      const size = digits === null ? NaN : parseInt(digits[0], 16);
      if (size === 0) {
        // the trailer section, to its empty line
        const end = s.indexOf("\r\n\r\n", eol);
        if (end > eol) f.trailers = s.slice(eol + 2, end).split("\r\n");
        return f;
      }
      if (!(size > 0)) return f;
      at = eol + 2 + size + 2;
    }
  }
  return f;
}

// ---- the differences we intend -----------------------------------------------------------

const TCHAR = "[!#$%&'*+.^_`|~0-9A-Za-z-]";
const QUOTED =
  '"(?:[\\t\\x20\\x21\\x23-\\x5b\\x5d-\\x7e\\x80-\\xff]|\\\\[\\t\\x20-\\x7e\\x80-\\xff])*"';
const CHUNK_LINE = new RegExp(
  `^[0-9A-Fa-f]+(?:[ \\t]*;[ \\t]*${TCHAR}+(?:[ \\t]*=[ \\t]*(?:${TCHAR}+|${QUOTED}))?)*$`,
);

/** A response llhttp accepts that ours refuses on purpose. */
interface Difference {
  name: string;
  reason: string;
  applies(m: Message, f: Framed, method: string): boolean;
}

const DIFFERENCES: Difference[] = [
  {
    name: "HTTP/1.0 and HTTP/1.1 only",
    reason: "RFC 9112 2.3: ours reads HTTP/1.x; llhttp also takes HTTP/0.9 and HTTP/2.0 in a " +
      "status line, which no HTTP/1.1 server sends",
    applies: (m) => m.version !== "1.1" && m.version !== "1.0",
  },
  {
    name: "a status from 100 to 599",
    reason: "RFC 9110 15: status codes are 100 to 599 (llhttp takes 000 to 999), and fetch " +
      "refuses others",
    applies: (m) => m.status < 100 || m.status > 599,
  },
  {
    name: "a reason phrase of HTAB, SP, VCHAR and obs-text",
    reason: "RFC 9112 4: reason-phrase = 1*( HTAB / SP / VCHAR / obs-text ); llhttp takes " +
      "control characters in it",
    applies: (m) => /[^\t\x20-\x7e\x80-\xff]/.test(m.reason),
  },
  {
    name: "only CRLF pairs before a status line",
    reason: "RFC 9112 2.2: a bare CR MUST be treated as invalid; llhttp skips any mix of CR " +
      "and LF before a message",
    applies: (_m, f) => f.gaps.some((g) => !/^(?:\r\n)*$/.test(g)),
  },
  {
    name: "a bare CR in a head",
    reason: "RFC 9112 2.2: a bare CR MUST be treated as invalid (or replaced by SP); " +
      "llhttp's response mode takes one after the status line",
    applies: (_m, f) => f.heads.some((h) => /\r(?!\n)/.test(h)),
  },
  {
    name: "no Transfer-Encoding in HTTP/1.0",
    reason: "RFC 9112 6.1: a client MUST treat an HTTP/1.0 message with Transfer-Encoding as " +
      "if its framing were faulty; llhttp reads it as chunked",
    applies: (m) => m.version === "1.0" && fieldValues(m, "transfer-encoding").length > 0,
  },
  {
    name: "chunked alone as the transfer coding, whatever the status",
    reason: "RFC 9112 6.3 reads a response whose final coding is not chunked until the close, " +
      "and 6.1 lets a recipient refuse a coding it does not understand: ours decodes none but " +
      "chunked and refuses both (llhttp reads `gzip` until the close and hands `gzip, " +
      "chunked` on undecoded); framing is checked on a 1xx, 204, 304 or HEAD answer too",
    applies: (m) => {
      const te = fieldValues(m, "transfer-encoding");
      if (te.length === 0) return false;
      const codings = listElements(te);
      return codings.length !== 1 || codings[0].toLowerCase() !== "chunked";
    },
  },
  {
    name: "no Content-Length or Transfer-Encoding among the trailers",
    reason: "RFC 9110 6.5.1: a sender MUST NOT put framing fields in trailers; llhttp's " +
      "response mode reads them (its request mode refuses them, as ours does in both)",
    applies: (_m, f) => f.trailers.some((t) => /^(?:content-length|transfer-encoding):/i.test(t)),
  },
  {
    name: "chunk extensions as the grammar has them",
    reason: "RFC 9112 7.1.1: chunk-ext-val = token / quoted-string; llhttp takes `3;a=`",
    applies: (_m, f) => !f.chunkLines.every((l) => CHUNK_LINE.test(l)),
  },
];

/** Where llhttp refuses what the RFC has a recipient accept. */
interface Beyond {
  name: string;
  reason: string;
  covers(s: string, v: Verdict): boolean;
}

const BEYOND_LLHTTP: Beyond[] = [
  {
    name: "a Transfer-Encoding of chunked that llhttp misreads",
    reason: "RFC 9110 5.6.1: a recipient MUST ignore empty list elements (`chunked,`); RFC " +
      "9110 5.5: it MUST exclude the OWS around a value (llhttp refuses `chunked` then HTAB)",
    covers: (s, v) =>
      v.why === "HPE_INVALID_TRANSFER_ENCODING" &&
      [...s.matchAll(/\r\ntransfer-encoding:([^\r\n]*)/gi)].every((m) =>
        listElements([m[1]]).every((e) => e.toLowerCase() === "chunked")
      ),
  },
  {
    name: "BWS in a chunk extension",
    reason: "RFC 9112 7.1.1 and RFC 9110 5.6.3: BWS around a chunk extension's `;` and `=`, " +
      "which a recipient MUST parse; llhttp refuses `3 ;a` and `3; a`",
    covers: (s, v) => v.why !== "" && /\r\n[0-9A-Fa-f]+[ \t]*;[^\r\n]*[ \t]/.test(s),
  },
  {
    name: "HTAB around a Content-Length value",
    reason: "RFC 9110 5.6.3: HTAB is OWS; llhttp before 9.4.0 refuses it (nodejs/llhttp#810)",
    covers: (s, v) => v.why === "HPE_INVALID_CONTENT_LENGTH" && /content-length:[^\n]*\t/i.test(s),
  },
];

/** What llhttp reads otherwise than the RFC has it: ours reads it by the RFC. */
const MISREAD_BY_LLHTTP: Beyond[] = [
  {
    name: "chunked followed by HTAB",
    reason: "RFC 9110 5.5: a recipient MUST exclude the OWS (SP, HTAB) around a value; llhttp " +
      "reads `chunked` then HTAB as another coding, and the body until the close",
    covers: (s) => /\r\ntransfer-encoding:[ \t]*chunked[ \t]*\t[ \t]*\r\n/i.test(s),
  },
];

// ---- the oracle --------------------------------------------------------------------------

interface Comparison {
  ours: Verdict;
  llhttp: Verdict;
  ok: boolean;
  why: string;
}

function sameMessage(a: Message, b: Message): boolean {
  return a.status === b.status && a.reason === b.reason && a.version === b.version &&
    a.body === b.body && a.keepAlive === b.keepAlive &&
    JSON.stringify(a.headers) === JSON.stringify(b.headers);
}

/**
 * llhttp's keep-alive of a HEAD's answer that has neither Content-Length nor
 * Transfer-Encoding: it says false, as if a body until the close followed, because it decides
 * before its head callback says that no body follows. No body follows a HEAD's answer (RFC 9112
 * 6.3), so the connection persists as for any other (RFC 9112 9.3), as ours and Go's read it.
 */
function headKeepAlive(m: Message, method: string): Message {
  if (
    method !== "HEAD" || m.keepAlive || fieldValues(m, "content-length").length > 0 ||
    fieldValues(m, "transfer-encoding").length > 0
  ) return m;
  const options = listElements(fieldValues(m, "connection")).map((o) => o.toLowerCase());
  const persists = m.version === "1.1"
    ? !options.includes("close")
    : m.version === "1.0" && options.includes("keep-alive");
  return persists ? { ...m, keepAlive: true } : m;
}

function compare(input: string, cuts: number[], method: string): Comparison {
  const chunks = chunked(Buffer.from(input, "latin1"), cuts);
  const ll = llhttpVerdict(chunks, method);
  const ours = oursVerdict(chunks, method);
  const result = (ok: boolean, why: string): Comparison => ({ ours, llhttp: ll, ok, why });
  if (ll.ok) {
    const f = frame(input, ll.messages, method);
    const d = DIFFERENCES.find((d) => ll.messages.some((m) => d.applies(m, f, method)));
    if (d !== undefined) return result(!ours.ok, d.name);
    if (!ours.ok) return result(false, "llhttp accepts, ours refuses");
    const same = ours.messages.length === ll.messages.length &&
      ours.messages.every((m, i) => sameMessage(m, headKeepAlive(ll.messages[i], method)));
    if (same) return result(true, "both accept");
    const misread = MISREAD_BY_LLHTTP.find((b) => b.covers(input, ll));
    return result(misread !== undefined, misread?.name ?? "both accept, differently");
  }
  if (!ours.ok) return result(true, "both refuse");
  const beyond = BEYOND_LLHTTP.find((b) => b.covers(input, ll));
  return result(beyond !== undefined, beyond?.name ?? "llhttp refuses, ours accepts");
}

function report(input: string, cuts: number[], method: string, c: Comparison): string {
  return [
    `ours differs from the oracle (${c.why}) on ${method} ${JSON.stringify(input)} cut at ${
      JSON.stringify(cuts)
    }`,
    `ours: ${JSON.stringify(c.ours)}`,
    `llhttp: ${JSON.stringify(c.llhttp)}`,
  ].join("\n");
}

// ---- seed corpus -------------------------------------------------------------------------

const JSON_BODY = '{"queue":{"length":42},"rps":17.5}';
const CHUNKED = "Transfer-Encoding: chunked\r\n";

/** Answers written for this test: what collectors read, and what attacks clients. */
const SEEDS: { method: string; text: string }[] = [
  {
    method: "GET",
    text: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
      `${JSON_BODY.length}\r\nDate: Sun, 29 Nov 2026 07:00:00 GMT\r\n\r\n${JSON_BODY}`,
  },
  {
    method: "GET",
    text: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + CHUNKED +
      '\r\n10;x=1;q="a;b"\r\n{"queue":{"leng\r\n13\r\nth":42},"rps":17.5}\r\n0\r\nX-Sum: 1\r\n\r\n',
  },
  {
    method: "POST",
    text: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n" +
      '\r\nHTTP/1.1 200 OK\r\nContent-Length: 48\r\n\r\n{"status":"success","data":{"resultType":"x"}}\r\n',
  },
  { method: "GET", text: "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nrps 12.5\n" },
  {
    method: "GET",
    text: "HTTP/1.1 200 OK\r\nConnection: close\r\nServer: skipper\r\n\r\n" + JSON_BODY,
  },
  {
    method: "GET",
    text: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n{}",
  },
  { method: "GET", text: "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n" },
  { method: "GET", text: 'HTTP/1.1 304 Not Modified\r\nETag: "abc"\r\nContent-Length: 9\r\n\r\n' },
  { method: "HEAD", text: "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" },
  { method: "HEAD", text: "HTTP/1.1 200 OK\r\n" + CHUNKED + "\r\n" },
  {
    method: "GET",
    text: "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\nContent-Length: 5\r\n\r\nbusy\n",
  },
  { method: "GET", text: "HTTP/1.1 302 Found\r\nLocation: http://169.254.169.254/\r\n\r\n" },
  { method: "GET", text: "HTTP/1.1 200\r\nContent-Length: 2\r\n\r\n{}" },
  { method: "GET", text: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n\x00\x00" },
  {
    method: "GET",
    text: "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nX-A: \xa0v\xa0\r\n" +
      "Content-Length: 3\r\n\r\nabc",
  },
  // smuggling and framing classics
  { method: "GET", text: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n" + CHUNKED + "\r\n0\r\n\r\n" },
  { method: "GET", text: "HTTP/1.1 200 OK\r\n" + CHUNKED + "Content-Length: 3\r\n\r\nabc" },
  { method: "GET", text: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc" },
  { method: "GET", text: "HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\n\r\nabc" },
  { method: "GET", text: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nabc" },
  { method: "GET", text: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nabc" },
  { method: "GET", text: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n" },
  { method: "GET", text: "HTTP/1.1 200 OK\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n" },
  { method: "GET", text: "HTTP/1.0 200 OK\r\n" + CHUNKED + "\r\n3\r\nabc\r\n0\r\n\r\n" },
  {
    method: "GET",
    text: "HTTP/1.1 200 OK\r\n" + CHUNKED + "\r\n3\r\nabc\r\n0\r\nContent-Length: 3\r\n\r\n",
  },
  { method: "GET", text: "HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 0\r\n\r\n" },
  { method: "GET", text: "HTTP/1.1 200 OK\r\nX: a\x00b\r\nContent-Length: 0\r\n\r\n" },
  { method: "GET", text: "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n" },
  { method: "GET", text: "HTTP/1.1 200 OK\r\n" + CHUNKED + "\r\n0003\r\nabc\r\n0\r\n\r\n" },
  { method: "GET", text: "HTTP/1.1 600 Weird\r\nContent-Length: 0\r\n\r\n" },
  { method: "GET", text: "HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n" },
];

const FRAGMENTS = [
  "\r\n",
  "\r\n\r\n",
  ", ",
  " chunked",
  "Content-Length: 0\r\n",
  "Content-Length: 3\r\n",
  CHUNKED,
  "Transfer-Encoding: gzip\r\n",
  "Connection: close\r\n",
  "Connection: keep-alive\r\n",
  "0\r\n\r\n",
  "3;x=1\r\nabc\r\n",
  "HTTP/1.1 100 Continue\r\n\r\n",
  "HTTP/1.0 200 OK\r\n",
  " 204",
  " 304",
];

const testCase = fc.record({
  seed: fc.nat({ max: SEEDS.length - 1 }),
  mutations: fc.array(mutationOf(FRAGMENTS), { minLength: 1, maxLength: 4 }),
  cuts: fc.oneof(
    { weight: 12, arbitrary: fc.array(fc.nat({ max: 300 }), { maxLength: 4 }) },
    { weight: 1, arbitrary: fc.constant(null) },
  ),
  head: fc.boolean(),
});

const NUM_RUNS = process.env.HTTP1_DIFF_RUNS === undefined
  ? 100_000
  : Number(process.env.HTTP1_DIFF_RUNS);
const SEED = process.env.HTTP1_RESPONSE_DIFF_SEED === undefined
  ? 46_006
  : Number(process.env.HTTP1_RESPONSE_DIFF_SEED);

// ---- tests -------------------------------------------------------------------------------

/** One fixed case: ours's exact verdict, and llhttp's. */
interface Row {
  name: string;
  input: string;
  method?: string;
  /** Ours reads the final response with this status and body, or refuses it (null). */
  ours: { status: number; body: string } | null;
  llhttp: "ok" | "refused";
}

const ROWS: Row[] = [
  {
    name: "two Content-Lengths with the same value",
    input: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
    ours: null,
    llhttp: "refused",
  },
  {
    name: "Content-Length then Transfer-Encoding",
    input: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n" + CHUNKED + "\r\n3\r\nabc\r\n0\r\n\r\n",
    ours: null,
    llhttp: "refused",
  },
  {
    name: "a status line ended by a bare LF",
    input: "HTTP/1.1 200 OK\nContent-Length: 3\r\n\r\nabc",
    ours: null,
    llhttp: "refused",
  },
  {
    name: "a header line ended by a bare LF",
    input: "HTTP/1.1 200 OK\r\nX: a\nContent-Length: 3\r\n\r\nabc",
    ours: null,
    llhttp: "refused",
  },
  {
    name: "Transfer-Encoding: gzip (llhttp reads it until the close, undecoded)",
    input: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nabc",
    ours: null,
    llhttp: "ok",
  },
  {
    name: "HTTP/1.0 with Transfer-Encoding: chunked",
    input: "HTTP/1.0 200 OK\r\n" + CHUNKED + "\r\n3\r\nabc\r\n0\r\n\r\n",
    ours: null,
    llhttp: "ok",
  },
  {
    name: "a status of 600",
    input: "HTTP/1.1 600 X\r\nContent-Length: 0\r\n\r\n",
    ours: null,
    llhttp: "ok",
  },
  {
    name: "a body read until the close",
    input: "HTTP/1.1 200 OK\r\n\r\n" + JSON_BODY,
    ours: { status: 200, body: JSON_BODY },
    llhttp: "ok",
  },
  {
    name: "a status line without a reason",
    input: "HTTP/1.1 200\r\nContent-Length: 2\r\n\r\n{}",
    ours: { status: 200, body: "{}" },
    llhttp: "ok",
  },
  {
    name: "interim answers before the final one",
    input: SEEDS[2].text,
    method: "POST",
    ours: { status: 200, body: '{"status":"success","data":{"resultType":"x"}}\r\n' },
    llhttp: "ok",
  },
  {
    name: "a HEAD's answer announces a body it does not carry",
    input: "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n",
    method: "HEAD",
    ours: { status: 200, body: "" },
    llhttp: "ok",
  },
  {
    name: "a 304 announces a body it does not carry",
    input: "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n",
    ours: { status: 304, body: "" },
    llhttp: "ok",
  },
  {
    name: "a chunked body cut short",
    input: "HTTP/1.1 200 OK\r\n" + CHUNKED + "\r\n3\r\nabc\r\n",
    ours: null,
    llhttp: "refused",
  },
  {
    name: "a head cut short",
    input: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n",
    ours: null,
    llhttp: "refused",
  },
];

describe("fixed cases (responses)", () => {
  for (const row of ROWS) {
    const method = row.method ?? "GET";
    it(`${row.name}: ours ${row.ours === null ? "refuses" : "reads it"}, llhttp ${row.llhttp}`, () => {
      const c = compare(row.input, [], method);
      assert.equal(c.llhttp.ok, row.llhttp === "ok", "llhttp's verdict");
      if (row.ours === null) assert.equal(c.ours.ok, false, report(row.input, [], method, c));
      else {
        const final = c.ours.messages[c.ours.messages.length - 1];
        assert.ok(c.ours.ok, report(row.input, [], method, c));
        assert.deepEqual([final.status, final.body], [row.ours.status, row.ours.body]);
      }
      assert.ok(c.ok, report(row.input, [], method, c));
      const bytewise = everyByte(row.input.length);
      const b = compare(row.input, bytewise, method);
      assert.ok(b.ok, report(row.input, bytewise, method, b));
    });
  }
});

describe("differential against llhttp's response mode", () => {
  it("reads every seed as the oracle says, whole and byte by byte", () => {
    for (const { method, text } of SEEDS) {
      for (const cuts of [[], everyByte(text.length)]) {
        const c = compare(text, cuts, method);
        assert.ok(c.ok, report(text, cuts, method, c));
      }
    }
  });

  it(`agrees with the oracle on ${NUM_RUNS} mutated responses (HTTP1_RESPONSE_DIFF_SEED=${SEED})`, () => {
    let accepted = 0;
    try {
      fc.assert(
        fc.property(testCase, (t) => {
          let input = SEEDS[t.seed].text;
          for (const m of t.mutations) input = mutate(input, m);
          const method = t.head ? "HEAD" : SEEDS[t.seed].method;
          const cuts = t.cuts ?? everyByte(input.length);
          const c = compare(input, cuts, method);
          if (!c.ok) throw new Error(report(input, cuts, method, c));
          if (c.ours.ok && c.llhttp.ok) accepted++;
          return true;
        }),
        { seed: SEED, numRuns: NUM_RUNS },
      );
    } catch (e) {
      const cause = (e as Error).cause instanceof Error
        ? `\n${((e as Error).cause as Error).message}`
        : "";
      throw new Error(`HTTP1_RESPONSE_DIFF_SEED=${SEED}: ${(e as Error).message}${cause}`);
    }
    // the run must compare many accepted responses, not only refusals, or it proves little
    assert.ok(accepted > NUM_RUNS / 5, `${accepted} accepted by both`);
  });
});
