/**
 * An HTTP/1.1 request parser (RFC 9112) for the one server that needs its own: Bun's TLS
 * connections that carry a client certificate (see `http1_server.ts`). It takes bytes as they
 * arrive and gives back whole requests, in order, or the first error. No I/O, no clock.
 *
 * Strict where leniency has bitten servers (request smuggling, header injection): a bare LF or
 * CR, a folded header line, whitespace before a header's colon, a malformed or repeated
 * Content-Length, Content-Length beside Transfer-Encoding, or any transfer coding but a lone
 * `chunked` is an error, and the connection is closed after the error's answer.
 */
import { Buffer } from "node:buffer";

/** A request, read whole (head and body). */
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
  /** Whether the connection stays open after the answer. */
  keepAlive: boolean;
  /** The body (null when the request has none). */
  body: Uint8Array | null;
}

/** A request the parser refuses: answer `status` and close the connection. */
export interface Http1Error {
  status: 400 | 408 | 413 | 431 | 501;
  reason: string;
}

/** Sizes the parser accepts. */
export interface Http1Limits {
  /** Bytes of a request line and its headers (default 16 KiB, Node's default). */
  maxHeadBytes?: number;
  /** Bytes of a request body (default 64 MiB). */
  maxBodyBytes?: number;
}

const TOKEN_RE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const TARGET_RE = /^[\x21-\x7e]+$/;
// field-value: visible characters, obs-text, SP and HTAB; never CR, LF or NUL
const VALUE_RE = /^[\t\x20-\x7e\x80-\xff]*$/;
const DIGITS_RE = /^[0-9]+$/;
const CHUNK_SIZE_RE = /^([0-9A-Fa-f]{1,15})[ \t]*(;.*)?$/;
const CRLF = Buffer.from("\r\n", "latin1");
const HEAD_END = Buffer.from("\r\n\r\n", "latin1");
// a CR not before an LF, an LF not after a CR, or a NUL
const BARE_RE = /\r(?!\n)|(?<!\r)\n|\0/;

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

/** A request's head as read, and how its body comes. */
interface Head extends Omit<Http1Request, "body"> {
  /** Content-Length, or -1 for a chunked body. */
  length: number;
  expectContinue: boolean;
}

/** The state of a chunked body being read. */
interface Chunked {
  parts: Uint8Array[];
  size: number;
  /** Bytes of the current chunk's data still to come (-1: a chunk-size line is next). */
  left: number;
  /** Reading the trailer section after the last chunk. */
  trailers: boolean;
}

function readHead(text: string): Head | Http1Error {
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
  if (!TARGET_RE.test(target)) return { status: 400, reason: "malformed request target" };
  if (version !== "HTTP/1.1" && version !== "HTTP/1.0") {
    return { status: 400, reason: `unsupported version "${version}"` };
  }
  const minor = version === "HTTP/1.1" ? 1 : 0;
  const rawHeaders: string[] = [];
  // no prototype: a header may be called __proto__ or constructor
  const headers: Record<string, string | string[]> = Object.create(null);
  let length: string | null = null;
  let coding: string | null = null;
  let connection = "";
  let expectContinue = false;
  for (let i = 1; i < lines.length; i++) {
    const l = lines[i];
    const colon = l.indexOf(":");
    if (colon <= 0) return { status: 400, reason: "malformed header line" };
    const name = l.slice(0, colon);
    if (!TOKEN_RE.test(name)) return { status: 400, reason: "malformed header name" };
    const value = l.slice(colon + 1).trim();
    if (!VALUE_RE.test(value)) return { status: 400, reason: `malformed value of header ${name}` };
    rawHeaders.push(name, value);
    const key = name.toLowerCase();
    const had = headers[key];
    if (key === "content-length") {
      if (!DIGITS_RE.test(value) || (length !== null && length !== value)) {
        return { status: 400, reason: "malformed content-length" };
      }
      length = value;
    } else if (key === "transfer-encoding") {
      coding = coding === null ? value : `${coding}, ${value}`;
    } else if (key === "connection") {
      connection = connection === "" ? value.toLowerCase() : `${connection},${value.toLowerCase()}`;
    } else if (key === "expect" && value.toLowerCase() === "100-continue") {
      expectContinue = true;
    }
    if (had === undefined) headers[key] = key === "set-cookie" ? [value] : value;
    else if (key === "set-cookie") (had as string[]).push(value);
    else if (!SINGLE.has(key)) headers[key] = `${had}, ${value}`;
  }
  const options = connection.split(",").map((o) => o.trim());
  const keepAlive = minor === 1 ? !options.includes("close") : options.includes("keep-alive");
  let size = 0;
  if (coding !== null) {
    if (length !== null) {
      return { status: 400, reason: "both content-length and transfer-encoding" };
    }
    if (coding.toLowerCase() !== "chunked") {
      return { status: 501, reason: `unsupported transfer-encoding "${coding}"` };
    }
    size = -1;
  } else if (length !== null) {
    size = Number(length);
    if (!Number.isSafeInteger(size)) return { status: 400, reason: "malformed content-length" };
  }
  return { method, target, minor, rawHeaders, headers, keepAlive, length: size, expectContinue };
}

/**
 * Reads requests from the bytes of one connection.
 *
 * @example
 * ```ts
 * const parser = new Http1Parser();
 * parser.push(new TextEncoder().encode("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"));
 * parser.next(); // { method: "GET", target: "/healthz", ... }
 * parser.next(); // null: more bytes needed
 * ```
 */
export class Http1Parser {
  readonly #maxHead: number;
  readonly #maxBody: number;
  #buf: Buffer = Buffer.alloc(0);
  #off = 0;
  /** Where to look for the end of the head next (bytes already searched are not again). */
  #scan = 0;
  #head: Head | null = null;
  #chunked: Chunked | null = null;
  #continued = false;
  #failed = false;

  constructor(limits: Http1Limits = {}) {
    this.#maxHead = limits.maxHeadBytes ?? 16 * 1024;
    this.#maxBody = limits.maxBodyBytes ?? 64 * 1024 * 1024;
  }

  /** Adds bytes as they came from the connection. */
  push(chunk: Uint8Array): void {
    if (this.#failed || chunk.byteLength === 0) return;
    if (this.#off >= this.#buf.byteLength) {
      this.#buf = asBuffer(chunk);
      this.#off = 0;
      this.#scan = 0;
      return;
    }
    const rest = this.#buf.byteLength - this.#off;
    const joined = Buffer.allocUnsafe(rest + chunk.byteLength);
    joined.set(this.#buf.subarray(this.#off), 0);
    joined.set(chunk, rest);
    this.#scan -= this.#off;
    this.#buf = joined;
    this.#off = 0;
  }

  /** Whether bytes of a request that is not whole yet are held. */
  get pending(): boolean {
    return this.#head !== null || this.#off < this.#buf.byteLength;
  }

  /**
   * The next whole request; `"continue"` once when a request that asked for it
   * (`Expect: 100-continue`) has its head read and its body still to come; null when more
   * bytes are needed; an error once, after which the parser takes nothing more.
   */
  next(): Http1Request | Http1Error | "continue" | null {
    if (this.#failed) return null;
    const r = this.#step();
    if (r !== null && r !== "continue" && "status" in r) {
      this.#failed = true;
      this.#buf = Buffer.alloc(0);
      this.#off = 0;
      this.#head = null;
    }
    return r;
  }

  #step(): Http1Request | Http1Error | "continue" | null {
    const buf = this.#buf;
    if (this.#head === null) {
      // at most one empty line may come before a request line (RFC 9112, 2.2); allow any
      while (
        this.#off + 1 < buf.byteLength && buf[this.#off] === 0x0d && buf[this.#off + 1] === 0x0a
      ) this.#off += 2;
      if (this.#scan < this.#off) this.#scan = this.#off;
      const end = buf.indexOf(HEAD_END, this.#scan);
      if (end < 0) {
        if (buf.byteLength - this.#off > this.#maxHead) {
          return { status: 431, reason: "request head too large" };
        }
        this.#scan = Math.max(this.#off, buf.byteLength - 3);
        return null;
      }
      if (end - this.#off > this.#maxHead) return { status: 431, reason: "request head too large" };
      const text = buf.toString("latin1", this.#off, end);
      if (BARE_RE.test(text)) {
        return { status: 400, reason: "bare CR, LF or NUL in the request head" };
      }
      const head = readHead(text);
      if ("status" in head) return head;
      if (head.length > this.#maxBody) return { status: 413, reason: "request body too large" };
      this.#off = end + 4;
      this.#scan = this.#off;
      this.#head = head;
      this.#continued = false;
      if (head.length < 0) this.#chunked = { parts: [], size: 0, left: -1, trailers: false };
    }
    const head = this.#head;
    if (head.length === 0) return this.#finish(null);
    if (head.length > 0) {
      if (buf.byteLength - this.#off < head.length) return this.#askContinue();
      const body = buf.slice(this.#off, this.#off + head.length);
      this.#off += head.length;
      return this.#finish(body);
    }
    return this.#readChunked();
  }

  #askContinue(): "continue" | null {
    if (this.#head?.expectContinue && this.#head.minor === 1 && !this.#continued) {
      this.#continued = true;
      return "continue";
    }
    return null;
  }

  #readChunked(): Http1Request | Http1Error | "continue" | null {
    const c = this.#chunked!;
    const buf = this.#buf;
    for (;;) {
      if (c.left > 0) {
        const have = Math.min(c.left, buf.byteLength - this.#off);
        if (have === 0) return this.#askContinue();
        c.parts.push(buf.slice(this.#off, this.#off + have));
        this.#off += have;
        c.left -= have;
        if (c.left > 0) return null;
        c.left = -2; // the CRLF after the data
      }
      if (c.left === -2) {
        if (buf.byteLength - this.#off < 2) return null;
        if (buf[this.#off] !== 0x0d || buf[this.#off + 1] !== 0x0a) {
          return { status: 400, reason: "malformed chunk" };
        }
        this.#off += 2;
        c.left = -1;
      }
      const eol = buf.indexOf(CRLF, this.#off);
      if (eol < 0) {
        if (buf.byteLength - this.#off > this.#maxHead) {
          return { status: 431, reason: "chunk line too large" };
        }
        return c.parts.length === 0 && !c.trailers ? this.#askContinue() : null;
      }
      const line = buf.toString("latin1", this.#off, eol);
      this.#off = eol + 2;
      if (/[\r\n\0]/.test(line)) return { status: 400, reason: "malformed chunk" };
      if (c.trailers) {
        if (line === "") {
          const body = new Uint8Array(c.size);
          let at = 0;
          for (const p of c.parts) {
            body.set(p, at);
            at += p.byteLength;
          }
          this.#chunked = null;
          return this.#finish(body);
        }
        if (line.indexOf(":") <= 0) return { status: 400, reason: "malformed trailer line" };
        continue; // trailer fields are read and dropped
      }
      const m = CHUNK_SIZE_RE.exec(line);
      if (!m) return { status: 400, reason: "malformed chunk size" };
      const size = parseInt(m[1], 16);
      if (c.size + size > this.#maxBody) return { status: 413, reason: "request body too large" };
      if (size === 0) c.trailers = true;
      else {
        c.size += size;
        c.left = size;
      }
    }
  }

  #finish(body: Uint8Array | null): Http1Request {
    const h = this.#head!;
    this.#head = null;
    this.#scan = this.#off;
    return {
      method: h.method,
      target: h.target,
      minor: h.minor,
      rawHeaders: h.rawHeaders,
      headers: h.headers,
      keepAlive: h.keepAlive,
      body,
    };
  }
}

function asBuffer(chunk: Uint8Array): Buffer {
  return Buffer.isBuffer(chunk)
    ? chunk
    : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}
