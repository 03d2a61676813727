/**
 * An HTTP/1.1 parser (RFC 9112) of requests, for the one server that needs its own (Bun's TLS
 * connections that carry a client certificate, see `http1_server.ts`), and of responses, for
 * the collectors' client (`http1_client.ts`), which reads answers from endpoints an HPA author
 * chooses. It takes bytes as they arrive and gives back heads, in order, and the body of each
 * piece by piece, or the first error. No I/O, no clock.
 *
 * It reads what strangers send (before they are authenticated, or from a URL anyone may put in
 * an annotation), so:
 * - Time is linear in the bytes pushed, and memory is bounded: the bytes pushed are held as a
 *   list of the chunks received (never joined); a head that spans chunks is copied once into
 *   a buffer of at most the head limit; body bytes are handed out as copies, never as views
 *   that would keep a larger buffer alive; the chunk-size lines and trailers of a body are
 *   capped, and so is their overhead against the data they carry (as Go's net/http caps it).
 * - It is as strict as llhttp and Go's net/http where leniency has bitten servers (request
 *   smuggling, header injection): a bare LF or CR anywhere in a head or a chunk line is an
 *   error as soon as it arrives; so are NUL, a request target in none of the four forms, a
 *   folded header line, whitespace before a header's colon, a value padded with anything but
 *   SP and HTAB, a malformed or repeated Content-Length, Content-Length beside
 *   Transfer-Encoding, Transfer-Encoding in HTTP/1.0, a final transfer coding that is not a
 *   bare `chunked` (400) or a coding before it (501), a missing, repeated or malformed Host
 *   (RFC 9112 3.2), and Content-Length or Transfer-Encoding among the trailers.
 *   tests/runtime/http1_differential_test.ts compares its verdicts with llhttp's on mutated
 *   requests, with the intended differences listed there.
 *
 * After an error it takes nothing more: the server answers it and closes the connection.
 */
import { Buffer } from "node:buffer";

/** A request's head, and how its body comes. */
export interface Http1Request {
  method: string;
  /** The request target as sent: `/path?query`, or an absolute URL. */
  target: string;
  /** 0 for HTTP/1.0, 1 for HTTP/1.1. */
  minor: 0 | 1;
  /** Header names and values as received: `[name, value, name, value, ...]`. */
  rawHeaders: string[];
  /**
   * Headers by lower-case name, as Node's `IncomingMessage.headers`: repeated headers joined
   * with ", " (`set-cookie` a list, and the headers Node keeps once: their first value).
   */
  headers: Record<string, string | string[]>;
  /** Whether the connection may stay open after the answer. */
  keepAlive: boolean;
  /** How the body comes: 0 none, n > 0 the bytes of its Content-Length, -1 chunked. */
  bodyLength: number;
  /** The client waits for `100 Continue` before it sends the body. */
  expectContinue: boolean;
  /**
   * CONNECT, or an `Upgrade` with `Connection: upgrade` (llhttp's upgrade): what follows its
   * head is not HTTP, so the server answers it (never with 101) and closes.
   */
  upgrade: boolean;
}

/** A response's head, and how its body comes. */
export interface Http1Response {
  /** 100 to 599. */
  status: number;
  /** The reason phrase as sent ("" when none). */
  reason: string;
  /** 0 for HTTP/1.0, 1 for HTTP/1.1. */
  minor: 0 | 1;
  /** Header names and values as received: `[name, value, name, value, ...]`. */
  rawHeaders: string[];
  /** Headers by lower-case name, joined as in {@linkcode Http1Request}. */
  headers: Record<string, string | string[]>;
  /** Whether the connection may carry another request after this response. */
  keepAlive: boolean;
  /**
   * How the body comes: 0 none, n > 0 the bytes of its Content-Length, -1 chunked, -2 until
   * the server closes the connection (then call `finish()` at EOF).
   */
  bodyLength: number;
}

/**
 * A message the parser refuses. For a request: answer `status` and close the connection. For
 * a response, 502: the client closes the connection and fails the request with `reason`.
 */
export interface Http1Error {
  status: 400 | 408 | 413 | 431 | 501 | 502;
  reason: string;
}

/** Sizes the parser accepts. */
export interface Http1Limits {
  /** Bytes of a request line and its headers, and of a body's trailers (default 16 KiB). */
  maxHeadBytes?: number;
}

/** The longest chunk-size line, with its extensions (Go's net/http: 4096). */
export const MAX_CHUNK_LINE_BYTES = 4096;
/**
 * How far the chunk lines of a body may outgrow its data (Go's net/http rule): each chunk may
 * carry 16 bytes of line plus twice its data; past that, 16 KiB of excess is an error.
 */
export const MAX_CHUNK_EXCESS_BYTES = 16 * 1024;

const CR = 0x0d;
const LF = 0x0a;
const TOKEN_RE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// origin-form, absolute-form, authority-form and asterisk-form: visible ASCII, no spaces
const TARGET_RE = /^[\x21-\x7e]+$/;
// field-value: visible characters, obs-text, SP and HTAB; never CR, LF, NUL or DEL
const VALUE_RE = /^[\t\x20-\x7e\x80-\xff]*$/;
const DIGITS_RE = /^[0-9]+$/;
// status-line (RFC 9112 4): HTTP-version SP 3DIGIT SP [ reason-phrase ]; the SP before an
// empty reason may be missing (as llhttp and Go read it)
const STATUS_LINE_RE = /^HTTP\/1\.([01]) ([1-5][0-9]{2})(?: ([\t\x20-\x7e\x80-\xff]*))?$/;
// uri-host (RFC 9110 7.2, RFC 3986 3.2.2): an IP literal (IPv6 or IPvFuture), or a reg-name
// (which covers IPv4) with "%" only in a pct-encoded octet
const URI_HOST = "(?:\\[(?:[0-9A-Fa-f:.]+|v[0-9A-Fa-f]+\\.[A-Za-z0-9\\-._~!$&'()*+,;=:]+)\\]|" +
  "(?:[A-Za-z0-9\\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)";
const HOST_RE = new RegExp(`^${URI_HOST}(?::[0-9]*)?$`);
// authority-form (RFC 9112 3.2.3), CONNECT's only form: uri-host ":" port
const AUTHORITY_FORM_RE = new RegExp(`^${URI_HOST}:[0-9]*$`);
const SCHEME_RE = /^[A-Za-z][A-Za-z0-9+.-]*:/;
// an absolute-form's authority: URI characters (as leniently as llhttp), "@" at most once
const URI_AUTHORITY_RE =
  /^(?:[A-Za-z0-9\-._~!$&'()*+,;=:%[\]]*@)?[A-Za-z0-9\-._~!$&'()*+,;=:%[\]]*$/;
// chunk-size [ chunk-ext ] (RFC 9112 7.1.1): BWS around ";" and "=", a token or a quoted value
const CHUNK_LINE_RE =
  /^([0-9A-Fa-f]+)((?:[ \t]*;[ \t]*[!#$%&'*+.^_`|~0-9A-Za-z-]+(?:[ \t]*=[ \t]*(?:[!#$%&'*+.^_`|~0-9A-Za-z-]+|"(?:[\t\x20\x21\x23-\x5b\x5d-\x7e\x80-\xff]|\\[\t\x20-\x7e\x80-\xff])*"))?)*)$/;

// Headers Node keeps once (the first value), as `IncomingMessage.headers` does.
const SINGLE = new Set([
  "age",
  "authorization",
  "content-length",
  "content-type",
  "etag",
  "expires",
  "from",
  "host",
  "if-modified-since",
  "if-unmodified-since",
  "last-modified",
  "location",
  "max-forwards",
  "proxy-authorization",
  "referer",
  "retry-after",
  "server",
  "user-agent",
]);

/** The value of a header line: without the OWS (SP and HTAB only) around it. */
function fieldValue(line: string, from: number): string {
  let start = from;
  let end = line.length;
  while (start < end && (line.charCodeAt(start) === 0x20 || line.charCodeAt(start) === 0x09)) {
    start++;
  }
  while (end > start && (line.charCodeAt(end - 1) === 0x20 || line.charCodeAt(end - 1) === 0x09)) {
    end--;
  }
  return line.slice(start, end);
}

/** Whether `target` has one of the four request-target forms (RFC 9112 3.2). */
function isTargetForm(method: string, target: string): boolean {
  if (method === "CONNECT") return AUTHORITY_FORM_RE.test(target);
  // origin-form, asterisk-form
  if (target.charCodeAt(0) === 0x2f || target === "*") return true;
  // absolute-form: a scheme, then after "//" an authority that ends at the path or the query
  const scheme = SCHEME_RE.exec(target);
  if (scheme === null) return false;
  if (!target.startsWith("//", scheme[0].length)) return true;
  const rest = target.slice(scheme[0].length + 2);
  const end = rest.search(/[/?]/);
  return URI_AUTHORITY_RE.test(end < 0 ? rest : rest.slice(0, end));
}

/** How a Transfer-Encoding reads: chunked last and alone (ok), or why not. */
function codingProblem(coding: string): Http1Error | null {
  const codings = coding.split(",").map((c) => fieldValue(c, 0)).filter((c) => c !== "");
  const names = codings.map((c) => {
    const semi = c.indexOf(";");
    return fieldValue(semi < 0 ? c : c.slice(0, semi), 0).toLowerCase();
  });
  if (names.length === 0 || names[names.length - 1] !== "chunked") {
    return { status: 400, reason: `chunked is not the final transfer coding in "${coding}"` };
  }
  // chunked defines no parameters (RFC 9112 7.1), and llhttp refuses them
  if (codings[codings.length - 1].includes(";")) {
    return { status: 400, reason: `chunked with parameters in "${coding}"` };
  }
  if (names.indexOf("chunked") !== names.length - 1) {
    return { status: 400, reason: `chunked is applied more than once in "${coding}"` };
  }
  for (const name of names) {
    if (!TOKEN_RE.test(name)) {
      return { status: 400, reason: `malformed transfer-encoding "${coding}"` };
    }
  }
  if (names.length > 1) {
    return { status: 501, reason: `unsupported transfer coding "${names[0]}"` };
  }
  return null;
}

/** The header fields of a head, and what framing and connection control read of them. */
interface Fields {
  rawHeaders: string[];
  headers: Record<string, string | string[]>;
  /** The Content-Length value (one at most), or null. */
  length: string | null;
  /** Every Transfer-Encoding value, joined, or null. */
  coding: string | null;
  /** The Connection options, lower case. */
  options: string[];
  /** The Host values (a request must have exactly one, a valid uri-host). */
  hosts: string[];
  upgradeHeader: boolean;
  expectContinue: boolean;
}

/** Reads the header lines of a head (`lines` from index 1 on). */
function readFields(lines: string[]): Fields | Http1Error {
  const rawHeaders: string[] = [];
  // no prototype: a header may be called __proto__ or constructor
  const headers: Record<string, string | string[]> = Object.create(null);
  let length: string | null = null;
  let coding: string | null = null;
  let connection = "";
  const hosts: string[] = [];
  let upgradeHeader = false;
  let expectContinue = false;
  for (let i = 1; i < lines.length; i++) {
    const l = lines[i];
    const colon = l.indexOf(":");
    // a line that starts with SP or HTAB (obs-fold) has no token before its colon
    if (colon <= 0) return { status: 400, reason: "malformed header line" };
    const name = l.slice(0, colon);
    if (!TOKEN_RE.test(name)) return { status: 400, reason: "malformed header name" };
    const value = fieldValue(l, colon + 1);
    if (!VALUE_RE.test(value)) return { status: 400, reason: `malformed value of header ${name}` };
    rawHeaders.push(name, value);
    const key = name.toLowerCase();
    const had = headers[key];
    if (key === "content-length") {
      if (length !== null) return { status: 400, reason: "more than one content-length" };
      if (!DIGITS_RE.test(value)) return { status: 400, reason: "malformed content-length" };
      length = value;
    } else if (key === "transfer-encoding") {
      coding = coding === null ? value : `${coding}, ${value}`;
    } else if (key === "host") {
      hosts.push(value);
    } else if (key === "connection") {
      connection = connection === "" ? value.toLowerCase() : `${connection},${value.toLowerCase()}`;
    } else if (key === "upgrade") {
      // an empty Upgrade lists no protocol (RFC 9110 7.8): no upgrade, as llhttp reads it
      if (value !== "") upgradeHeader = true;
    } else if (key === "expect" && value.toLowerCase() === "100-continue") {
      expectContinue = true;
    }
    if (had === undefined) headers[key] = key === "set-cookie" ? [value] : value;
    else if (key === "set-cookie") (had as string[]).push(value);
    else if (!SINGLE.has(key)) headers[key] = `${had}, ${value}`;
  }
  const options = connection === "" ? [] : connection.split(",").map((o) => fieldValue(o, 0));
  return {
    rawHeaders,
    headers,
    length,
    coding,
    options,
    hosts,
    upgradeHeader,
    expectContinue,
  };
}

/**
 * How a message with these fields frames its body (RFC 9112 6.1-6.3): -1 chunked, n its
 * Content-Length, null neither, or why the framing is faulty.
 */
function framing(f: Fields, minor: 0 | 1): number | null | Http1Error {
  if (f.coding !== null) {
    // RFC 9112 6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing
    if (minor === 0) return { status: 400, reason: "transfer-encoding in HTTP/1.0" };
    if (f.length !== null) {
      return { status: 400, reason: "both content-length and transfer-encoding" };
    }
    return codingProblem(f.coding) ?? -1;
  }
  if (f.length === null) return null;
  const n = Number(f.length);
  return Number.isSafeInteger(n) ? n : { status: 400, reason: "malformed content-length" };
}

/** Reads a request head (without its final CRLF CRLF, with no bare CR or LF in it). */
function readHead(text: string): Http1Request | Http1Error {
  const lines = text.split("\r\n");
  const line = lines[0];
  const sp1 = line.indexOf(" ");
  const sp2 = sp1 < 0 ? -1 : line.indexOf(" ", sp1 + 1);
  if (sp2 < 0 || line.indexOf(" ", sp2 + 1) >= 0) {
    return { status: 400, reason: "malformed request line" };
  }
  const method = line.slice(0, sp1);
  const target = line.slice(sp1 + 1, sp2);
  const version = line.slice(sp2 + 1);
  if (!TOKEN_RE.test(method)) return { status: 400, reason: "malformed method" };
  if (!TARGET_RE.test(target) || !isTargetForm(method, target)) {
    return { status: 400, reason: "malformed request target" };
  }
  if (version !== "HTTP/1.1" && version !== "HTTP/1.0") {
    return { status: 400, reason: `unsupported version "${version}"` };
  }
  const minor = version === "HTTP/1.1" ? 1 : 0;
  const f = readFields(lines);
  if ("status" in f) return f;
  // RFC 9112 3.2: Host exactly once in HTTP/1.1, never twice, and a valid uri-host
  if (f.hosts.some((h) => !HOST_RE.test(h))) return { status: 400, reason: "malformed host" };
  if (f.hosts.length > 1) return { status: 400, reason: "more than one host" };
  if (f.hosts.length === 0 && minor === 1) return { status: 400, reason: "missing host" };
  const keepAlive = minor === 1 ? !f.options.includes("close") : f.options.includes("keep-alive");
  const upgrade = method === "CONNECT" || (f.upgradeHeader && f.options.includes("upgrade"));
  const body = framing(f, minor);
  if (body !== null && typeof body !== "number") {
    return minor === 0 && f.coding !== null
      ? { status: 400, reason: "transfer-encoding in an HTTP/1.0 request" }
      : body;
  }
  return {
    method,
    target,
    minor,
    rawHeaders: f.rawHeaders,
    headers: f.headers,
    keepAlive,
    bodyLength: body ?? 0,
    expectContinue: f.expectContinue,
    upgrade,
  };
}

/**
 * Reads a response head (as {@linkcode readHead}) to a request of `method`; errors are 502,
 * with the reason of the rule broken.
 */
function readResponseHead(text: string, method: string): Http1Response | Http1Error {
  const lines = text.split("\r\n");
  const m = STATUS_LINE_RE.exec(lines[0]);
  if (m === null) return { status: 502, reason: "malformed status line" };
  const minor = m[1] === "1" ? 1 : 0;
  const status = Number(m[2]);
  const f = readFields(lines);
  if ("status" in f) return { status: 502, reason: f.reason };
  let keepAlive = minor === 1 ? !f.options.includes("close") : f.options.includes("keep-alive");
  // framing is checked even where no body follows: a server that sends it faulty is not
  // trusted with the connection's next response either
  const body = framing(f, minor);
  if (body !== null && typeof body !== "number") return { status: 502, reason: body.reason };
  let bodyLength: number;
  // RFC 9112 6.3: no body after HEAD, 1xx, 204 and 304, whatever the fields say; a 2xx to
  // CONNECT turns the connection into a tunnel right after its head
  if (method === "HEAD" || status < 200 || status === 204 || status === 304) bodyLength = 0;
  else if (method === "CONNECT" && status <= 299) bodyLength = 0;
  else if (body !== null) bodyLength = body;
  else {
    // the body is the bytes until the server closes: nothing can follow it
    bodyLength = -2;
    keepAlive = false;
  }
  return {
    status,
    reason: m[3] ?? "",
    minor,
    rawHeaders: f.rawHeaders,
    headers: f.headers,
    keepAlive,
    bodyLength,
  };
}

/** Where the parser is. */
const enum State {
  /** Reading a head (or the empty lines before it). */
  Head,
  /** Reading the data of a body with a length (`#left` bytes to come). */
  Fixed,
  /** Reading a chunk-size line. */
  ChunkLine,
  /** Reading a chunk's data (`#left` bytes to come). */
  ChunkData,
  /** Reading the CRLF after a chunk's data. */
  ChunkEnd,
  /** Reading the trailer section after the last chunk. */
  Trailers,
  /** Reading a response's body until the server closes (`finish()`). */
  UntilClose,
  /** A body was read whole: `body()` answers "end" once. */
  BodyDone,
  /** Refused a request: nothing more is read. */
  Failed,
}

const EMPTY = Buffer.alloc(0);
/** `body()` gathers at most this many bytes of data into one piece. */
const GATHER_BYTES = 64 * 1024;
/** A step of `body()` gathered data and may go on. */
const GATHERED = 1;

/**
 * Reads requests from the bytes of one connection.
 *
 * @example
 * ```ts
 * const parser = new Http1Parser();
 * parser.push(new TextEncoder().encode("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"));
 * parser.next(); // { method: "GET", target: "/healthz", bodyLength: 0, ... }
 * parser.next(); // null: more bytes needed
 * ```
 */
export class Http1Parser {
  readonly #maxHead: number;
  /** The chunk being read, and where. */
  #cur: Buffer = EMPTY;
  #off = 0;
  /** Chunks pushed after it, in order (from `#qi` on). */
  #queue: Buffer[] = [];
  #qi = 0;
  /** Bytes pushed and not read yet. */
  #held = 0;
  #state = State.Head;
  // the head (or a chunk line, or a trailer line) being scanned:
  /** Its bytes from earlier chunks, copied (a head that spans chunks). */
  #acc: Buffer | null = null;
  #accLen = 0;
  /** The previous byte scanned (CR matters), and the bytes of the line so far. */
  #prevCr = false;
  #lineLen = 0;
  /** Bytes of this head (or trailer section) so far, empty lines before a head included. */
  #headLen = 0;
  /** Only empty lines so far (before a request line). */
  #leading = true;
  // the body being read:
  #left = 0;
  #bodyRead = 0;
  #excess = 0;
  /** The connection ended (`finish()`): nothing more will be pushed. */
  #eof = false;
  /** What the heads are, for errors: "request" or "response". */
  #what = "request";
  /** The piece of body being gathered by `body()`, and its bytes so far. */
  #out: Uint8Array | null = null;
  #outLen = 0;
  /** What `body()` gives next, found after the piece it gave ("end", an error). */
  #deferred: "end" | Http1Error | null = null;

  constructor(limits: Http1Limits = {}) {
    this.#maxHead = limits.maxHeadBytes ?? 16 * 1024;
  }

  /** Adds bytes as they came from the connection (held as they are, not copied). */
  push(chunk: Uint8Array): void {
    if (this.#state === State.Failed || chunk.byteLength === 0) return;
    const buf = asBuffer(chunk);
    this.#held += buf.byteLength;
    if (this.#off >= this.#cur.byteLength && this.#qi >= this.#queue.length) {
      this.#cur = buf;
      this.#off = 0;
      return;
    }
    this.#queue.push(buf);
  }

  /** Bytes pushed and not read yet (a server stops reading the socket past a bound). */
  get heldBytes(): number {
    return this.#held;
  }

  /** Whether part of a request is held or being read (a head begun, a body not ended). */
  get pending(): boolean {
    return this.#state !== State.Head || this.#headLen + this.#accLen + this.#held > 0;
  }

  /**
   * Tells the parser that the connection ended: a body read until the close is then whole;
   * a head or body cut short is an error (502) on the next call.
   */
  finish(): void {
    this.#eof = true;
  }

  /**
   * The next response's head, to a request of `method` (HEAD's have no body); null when more
   * bytes are needed; an error (502) once, after which the parser takes nothing more. A 1xx
   * head is given like any other (with no body): the caller reads the next. Read a body with
   * `body()` until "end", as a request's. The connection ended cleanly when `pending` is
   * false at EOF.
   */
  nextResponse(method: string): Http1Response | Http1Error | null {
    if (this.#state === State.Failed) return null;
    if (this.#state !== State.Head) throw new Error("the body of the last response is not read");
    this.#what = "response";
    const text = this.#scanLines(this.#maxHead, true);
    if (text === null) {
      return this.#eof && this.pending
        ? this.#fail({ status: 502, reason: "connection closed in a response head" })
        : null;
    }
    if (typeof text !== "string") return this.#fail({ status: 502, reason: text.reason });
    const head = readResponseHead(text, method);
    if ("minor" in head) this.#begin(head.bodyLength);
    else this.#fail(head);
    return head;
  }

  /** Starts reading a body framed as `bodyLength` says. */
  #begin(bodyLength: number): void {
    if (bodyLength > 0) {
      this.#state = State.Fixed;
      this.#left = bodyLength;
    } else if (bodyLength === -1) {
      this.#state = State.ChunkLine;
      this.#excess = 0;
    } else if (bodyLength === -2) this.#state = State.UntilClose;
    this.#bodyRead = 0;
  }

  /**
   * The next request's head; null when more bytes are needed; an error once, after which the
   * parser takes nothing more. After a head with a body, read the body with `body()` until
   * "end" before asking for the next head.
   */
  next(): Http1Request | Http1Error | null {
    if (this.#state === State.Failed) return null;
    if (this.#state !== State.Head) throw new Error("the body of the last request is not read");
    const text = this.#scanLines(this.#maxHead, true);
    if (text === null) return null;
    if (typeof text !== "string") return this.#fail(text);
    const head = readHead(text);
    if ("status" in head) return this.#fail(head);
    this.#begin(head.bodyLength);
    return head;
  }

  /**
   * The next piece of the current message's body (a copy); "end" once when it is whole (then
   * `next()` reads the next request); null when more bytes are needed; an error once (413
   * past `maxBytes`; 502 for a response's body cut short by `finish()`).
   */
  body(maxBytes: number): Uint8Array | "end" | Http1Error | null {
    if (this.#deferred !== null) {
      const d = this.#deferred;
      this.#deferred = null;
      return d;
    }
    // the data of every chunk held, gathered into one piece (one-byte chunks cost no object
    // each), up to GATHER_BYTES
    this.#out = null;
    this.#outLen = 0;
    for (;;) {
      const r = this.#bodyStep(maxBytes);
      if (r === GATHERED) {
        if (this.#outLen >= this.#out!.byteLength) break;
        continue;
      }
      if (this.#outLen === 0) return r;
      if (r !== null) this.#deferred = r;
      break;
    }
    const out = this.#out!;
    const n = this.#outLen;
    this.#out = null;
    this.#outLen = 0;
    // a piece owns its bytes: never a view of a larger buffer (a chunked body's pieces, sized
    // by the bytes held with their chunk lines, are copied to their size)
    return n === out.byteLength ? out : out.slice(0, n);
  }

  #bodyStep(maxBytes: number): typeof GATHERED | "end" | Http1Error | null {
    const piece = this.#body(maxBytes);
    if (piece === null && this.#eof && this.#state !== State.Failed) {
      if (this.#state === State.UntilClose) {
        this.#state = State.Failed;
        return "end";
      }
      return this.#fail({ status: 502, reason: "connection closed in the body" });
    }
    if (piece !== null && typeof piece === "object" && "status" in piece && this.#isResponse) {
      return piece.status === 413 ? piece : { status: 502, reason: piece.reason };
    }
    return piece;
  }

  get #isResponse(): boolean {
    return this.#what === "response";
  }

  #body(maxBytes: number): typeof GATHERED | "end" | Http1Error | null {
    for (;;) {
      switch (this.#state) {
        case State.Failed:
          return null;
        case State.Head:
          throw new Error("no body is being read");
        case State.BodyDone:
          this.#state = State.Head;
          return "end";
        case State.UntilClose: {
          if (this.#bodyRead + this.#held > maxBytes) {
            return this.#fail({ status: 413, reason: "body too large" });
          }
          const got = this.#gather(Infinity);
          if (got === 0) return null;
          this.#bodyRead += got;
          return GATHERED;
        }
        case State.Fixed:
        case State.ChunkData: {
          if (this.#bodyRead + this.#left > maxBytes) {
            return this.#fail({ status: 413, reason: `${this.#what} body too large` });
          }
          const got = this.#gather(this.#left);
          if (got === 0) return null;
          this.#left -= got;
          this.#bodyRead += got;
          if (this.#left === 0) {
            this.#state = this.#state === State.Fixed ? State.BodyDone : State.ChunkEnd;
          }
          return GATHERED;
        }
        case State.ChunkEnd: {
          const end = this.#chunkEnd();
          if (end !== true) return end;
          break;
        }
        case State.ChunkLine: {
          const line = this.#scanLines(MAX_CHUNK_LINE_BYTES, false);
          if (line === null) return null;
          if (typeof line !== "string") return this.#fail(line);
          const m = CHUNK_LINE_RE.exec(line);
          if (m === null) return this.#fail({ status: 400, reason: "malformed chunk size" });
          const digits = m[1].replace(/^0+(?=.)/, "");
          const size = digits.length > 13 ? Infinity : parseInt(digits, 16);
          if (this.#bodyRead + size > maxBytes) {
            return this.#fail({ status: 413, reason: `${this.#what} body too large` });
          }
          // the line and the CRLF after its data, less what the chunk's data pays for
          this.#excess = Math.max(0, this.#excess + line.length + 4 - 16 - 2 * size);
          if (this.#excess > MAX_CHUNK_EXCESS_BYTES) {
            return this.#fail({ status: 400, reason: "too much chunk overhead for the data" });
          }
          if (size === 0) this.#state = State.Trailers;
          else {
            this.#left = size;
            this.#state = State.ChunkData;
          }
          break;
        }
        case State.Trailers: {
          // the trailer section, read like a head's header lines and dropped
          const text = this.#scanLines(this.#maxHead, false, true);
          if (text === null) return null;
          if (typeof text !== "string") return this.#fail(text);
          for (const l of text === "" ? [] : text.split("\r\n")) {
            const colon = l.indexOf(":");
            if (
              colon <= 0 || !TOKEN_RE.test(l.slice(0, colon)) ||
              !VALUE_RE.test(fieldValue(l, colon + 1))
            ) return this.#fail({ status: 400, reason: "malformed trailer line" });
            // framing is the head's alone (RFC 9110 6.5.1); llhttp refuses these too
            if (/^(?:content-length|transfer-encoding)$/i.test(l.slice(0, colon))) {
              return this.#fail({ status: 400, reason: `${l.slice(0, colon)} among the trailers` });
            }
          }
          this.#state = State.Head;
          return "end";
        }
      }
    }
  }

  #fail(e: Http1Error): Http1Error {
    this.#state = State.Failed;
    this.#cur = EMPTY;
    this.#off = 0;
    this.#queue = [];
    this.#qi = 0;
    this.#held = 0;
    this.#acc = null;
    return e;
  }

  /** The current chunk, moving to the next one when it is read; null when none is left. */
  #chunk(): Buffer | null {
    while (this.#off >= this.#cur.byteLength) {
      if (this.#qi >= this.#queue.length) {
        if (this.#queue.length > 0) {
          this.#queue = [];
          this.#qi = 0;
        }
        return null;
      }
      this.#cur = this.#queue[this.#qi];
      this.#queue[this.#qi++] = EMPTY;
      this.#off = 0;
    }
    return this.#cur;
  }

  /**
   * Copies up to `n` bytes of the current chunk into the piece being gathered (made on first
   * use, as large as the data held may be, at most GATHER_BYTES); the bytes copied, 0 when
   * none is held or the piece is full.
   */
  #gather(n: number): number {
    const buf = this.#chunk();
    if (buf === null) return 0;
    this.#out ??= new Uint8Array(
      Math.min(GATHER_BYTES, this.#held, this.#state === State.Fixed ? this.#left : Infinity),
    );
    const room = this.#out.byteLength - this.#outLen;
    const end = Math.min(buf.byteLength, this.#off + n, this.#off + room);
    const got = end - this.#off;
    if (got <= 0) return 0;
    this.#out.set(buf.subarray(this.#off, end), this.#outLen);
    this.#outLen += got;
    this.#held -= got;
    this.#off = end;
    return got;
  }

  /** The CRLF after a chunk's data: true once read. */
  #chunkEnd(): true | Http1Error | null {
    for (;;) {
      const buf = this.#chunk();
      if (buf === null) return null;
      const b = buf[this.#off];
      if (!this.#prevCr) {
        if (b !== CR) return this.#fail({ status: 400, reason: "malformed chunk" });
        this.#prevCr = true;
      } else {
        if (b !== LF) return this.#fail({ status: 400, reason: "malformed chunk" });
        this.#prevCr = false;
        this.#state = State.ChunkLine;
      }
      this.#off++;
      this.#held--;
      if (this.#state === State.ChunkLine) return true;
    }
  }

  /**
   * Scans lines ended by CRLF until `whole` is met: a head (`head`: ends at an empty line,
   * after any empty lines before it), the trailer section (`section`: ends at an empty line),
   * or one line. The text without its last CRLF (or CRLF CRLF), null when more bytes are
   * needed, or an error: a bare CR or LF or a NUL as soon as it arrives, 431 past `max` bytes.
   */
  #scanLines(max: number, head: boolean, section = false): string | Http1Error | null {
    const many = head || section;
    for (;;) {
      const buf = this.#chunk();
      if (buf === null) return null;
      let start = this.#off;
      let i = start;
      const n = buf.byteLength;
      let end = -1;
      for (; i < n; i++) {
        const b = buf[i];
        if (b === LF) {
          if (!this.#prevCr) return this.#fail({ status: 400, reason: "bare LF" });
          this.#prevCr = false;
          if (!many) {
            end = i + 1;
            break;
          }
          if (this.#lineLen === 0) {
            if (head && this.#leading) {
              // an empty line before a request line is skipped (RFC 9112 2.2)
              this.#headLen += this.#accLen + (i + 1 - start);
              this.#accLen = 0;
              start = i + 1;
              if (this.#headLen > max) {
                return this.#fail({ status: 431, reason: `${this.#what} head too large` });
              }
              continue;
            }
            end = i + 1;
            break;
          }
          this.#lineLen = 0;
          continue;
        }
        if (this.#prevCr) return this.#fail({ status: 400, reason: "bare CR" });
        if (b === CR) {
          this.#prevCr = true;
          continue;
        }
        if (b === 0) return this.#fail({ status: 400, reason: "NUL" });
        this.#lineLen++;
        this.#leading = false;
      }
      const stop = end < 0 ? n : end;
      if (this.#headLen + this.#accLen + (stop - start) > max) {
        return this.#fail({
          status: 431,
          reason: head
            ? `${this.#what} head too large`
            : section
            ? "trailers too large"
            : "chunk line too large",
        });
      }
      this.#held -= stop - this.#off;
      this.#off = stop;
      if (end < 0) {
        // the line goes on in the next chunk: keep what came of it (copied, at most `max`)
        this.#keep(buf, start, n);
        continue;
      }
      // the text without its final CRLF, or CRLF CRLF (a section with no line is "")
      let text: string;
      const trim = many && this.#accLen + (end - start) > 2 ? 4 : 2;
      if (this.#accLen === 0) text = buf.toString("latin1", start, end - trim);
      else {
        this.#keep(buf, start, end);
        text = this.#acc!.toString("latin1", 0, this.#accLen - trim);
      }
      this.#accLen = 0;
      if (this.#acc !== null && this.#acc.byteLength > 1024) this.#acc = null;
      this.#lineLen = 0;
      this.#headLen = 0;
      this.#leading = true;
      return text;
    }
  }

  /** Copies `buf[from, to)` after the bytes of a line or head kept so far. */
  #keep(buf: Buffer, from: number, to: number): void {
    const need = this.#accLen + (to - from);
    if (this.#acc === null || this.#acc.byteLength < need) {
      const grown = Buffer.allocUnsafe(Math.max(256, need, 2 * (this.#acc?.byteLength ?? 0)));
      if (this.#acc !== null) this.#acc.copy(grown, 0, 0, this.#accLen);
      this.#acc = grown;
    }
    buf.copy(this.#acc, this.#accLen, from, to);
    this.#accLen = need;
  }
}

function asBuffer(chunk: Uint8Array): Buffer {
  return Buffer.isBuffer(chunk)
    ? chunk
    : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}
