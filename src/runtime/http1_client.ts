/**
 * An HTTP/1.1 client on `node:net` and `node:tls`, reading answers with our own parser
 * (`http1_parser.ts`, response mode): the collectors' connection to endpoints an HPA author
 * chooses (pods' JSON endpoints, HTTP endpoints, backends' URLs).
 *
 * Why not the runtime's: each runtime's client reads what a hostile endpoint sends with its own
 * leniency and costs. Measured before this client (a body capped at 1 MiB, within one
 * deadline): Node's llhttp (undici) spent unbounded CPU on chunk-extension floods and on
 * chunk sizes padded with zeros; Bun's fetch on trailer and extension floods; Deno's fetch grew
 * its RSS by 95 MiB on a body of one-byte chunks; Bun's and Deno's accepted two
 * Content-Lengths, Content-Length beside Transfer-Encoding, and bare LF. Here every runtime
 * reads answers by one set of rules, in time and memory linear in the bytes read:
 * - the parser caps a head at `maxHeadBytes` (64 KiB), a chunk-size line at 4,096 bytes, the
 *   chunk lines' overhead against the data they carry (Go's rule) and the trailers;
 * - a body is read only as fast as its reader pulls: past 64 KiB held, the socket is paused,
 *   so a reader's cap (fetchCapped's) bounds what is read off the wire;
 * - a response that breaks the framing rules fails the request and closes the connection.
 *
 * One request per connection at a time (no pipelining); a connection whose response was whole
 * and framed (not read until close) is kept for the next request to the same origin for
 * `keepAliveTimeoutMs` (default 4,000, as undici). A request that finds its kept connection
 * closed by the server before any byte of an answer is sent again once on a new connection
 * when it is a GET or HEAD (as Go's Transport retries a replayable request).
 */
import { Buffer } from "node:buffer";
import * as net from "node:net";
import * as tls from "node:tls";
import { type Http1Error, Http1Parser, type Http1Response } from "./http1_parser.ts";
import type { ProxyFor } from "./http_proxy.ts";

/** TLS settings of connections to https URLs (node:tls options, PEM text). */
export interface Http1ClientTls {
  ca?: string;
  cert?: string;
  key?: string;
  rejectUnauthorized?: boolean;
  servername?: string;
}

/** Options of {@linkcode Http1Client}. */
export interface Http1ClientOptions {
  /** Idle keep-alive connections are closed after this long, ms (default 4,000). */
  keepAliveTimeoutMs?: number;
  /** Bytes of a response's status line and headers, and of its trailers (default 64 KiB). */
  maxHeadBytes?: number;
  /**
   * Idle connections kept at most, over all origins (default 100, as Go's DefaultTransport):
   * past it the one idle longest is closed. Collectors that scrape thousands of pods every
   * 15 s never reuse a pod's connection within the keep-alive time, and would hold one each.
   */
  maxIdle?: number;
  /** TLS settings of https connections (default: verify against the runtime's roots). */
  tls?: Http1ClientTls;
  /**
   * The proxy of each request (`proxyFromEnv(process.env)`): an http proxy, spoken to in absolute
   * form for http URLs and with CONNECT for https ones. None by default.
   */
  proxy?: ProxyFor;
}

/** One request. */
export interface Http1ClientRequest {
  method?: string;
  /** Header names and values (`host` and `content-length` are the client's). */
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  signal?: AbortSignal;
  /**
   * Connect to this address instead of resolving the URL's host (which still names the server:
   * Host header, TLS server name). Ignored through a proxy, which resolves the host itself.
   */
  address?: string;
}

/** A response's body, read piece by piece. */
export interface Http1Body {
  /** The next piece (a copy), null at the end; rejects when the body fails to arrive. */
  read(): Promise<Uint8Array | null>;
  /** Stops reading: the connection is closed unless the body was whole. */
  cancel(): void;
}

/** A response: its head as the parser read it, and its body. */
export interface Http1ClientResponse {
  head: Http1Response;
  body: Http1Body;
}

/** A failure of the connection or of the answer's framing, in short words. */
export class Http1ClientError extends Error {
  override name = "Http1ClientError";
}

/** Past this many body bytes held unread, the socket is paused. */
const HIGH_WATER = 64 * 1024;
/** A read hands out at most this many bytes, joined from the pieces held. */
const READ_BYTES = 64 * 1024;

const TOKEN_RE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const VALUE_RE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** The connection's part of one request and its response. */
interface Exchange {
  method: string;
  /** Bytes of an answer received (a retry is safe only before the first). */
  received: number;
  phase: "head" | "body" | "done";
  resolveHead: (r: Http1ClientResponse) => void;
  rejectHead: (e: unknown) => void;
  /** A body read waiting for bytes. */
  pending: { resolve: (p: Uint8Array | null) => void; reject: (e: unknown) => void } | null;
  /** The body ended (its pieces may still be queued). */
  ended: boolean;
  /** The error the body failed with, once. */
  error: unknown;
  keepAlive: boolean;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | null;
}

/** One connection to an origin. */
class Connection {
  readonly key: string;
  readonly socket: net.Socket;
  readonly parser: Http1Parser;
  readonly #client: Http1Client;
  ex: Exchange | null = null;
  /** Requests it carried. */
  uses = 0;
  closed = false;
  #eof = false;
  #idle: ReturnType<typeof setTimeout> | null = null;
  #socketError: Error | null = null;

  constructor(client: Http1Client, key: string, socket: net.Socket, maxHeadBytes: number) {
    this.#client = client;
    this.key = key;
    this.socket = socket;
    this.parser = new Http1Parser({ maxHeadBytes });
    socket.on("data", (chunk: Buffer) => this.#data(chunk));
    socket.on("end", () => {
      this.#eof = true;
      this.parser.finish();
      if (this.ex === null) this.destroy();
      else this.#drive();
    });
    socket.on("error", (e: Error) => (this.#socketError = e));
    socket.on("close", () => this.#closed());
  }

  /** Starts an exchange on this connection (the request is already written). */
  begin(ex: Exchange): void {
    if (this.#idle !== null) {
      clearTimeout(this.#idle);
      this.#idle = null;
      this.socket.ref();
    }
    this.uses++;
    this.ex = ex;
  }

  /** Kept idle for the next request to its origin, or closed. */
  idle(timeoutMs: number): void {
    this.ex = null;
    this.socket.unref();
    this.#idle = setTimeout(() => this.destroy(), timeoutMs);
    this.#idle.unref?.();
  }

  destroy(e?: unknown): void {
    if (this.#idle !== null) clearTimeout(this.#idle);
    this.#idle = null;
    if (!this.closed) {
      this.closed = true;
      this.#client.forget(this);
      this.socket.destroy();
    }
    if (this.ex !== null) this.#fail(e ?? new Http1ClientError("connection closed"));
  }

  #data(chunk: Buffer): void {
    const ex = this.ex;
    if (ex === null) {
      // bytes nobody asked for: the connection cannot be trusted with the next request
      this.destroy();
      return;
    }
    ex.received += chunk.byteLength;
    this.parser.push(chunk);
    this.#drive();
  }

  #closed(): void {
    const wasClosed = this.closed;
    this.closed = true;
    if (!wasClosed) this.#client.forget(this);
    if (this.#idle !== null) clearTimeout(this.#idle);
    this.#idle = null;
    const ex = this.ex;
    if (ex === null || ex.phase === "done") return;
    // a close ends a body read until it (the "end" event came first), else it fails the request
    if (!this.#eof) {
      this.#eof = true;
      this.parser.finish();
    }
    this.#drive();
    if (this.ex !== null && this.ex.phase !== "done") {
      this.#fail(this.#closeError(this.ex));
    }
  }

  /** Why the connection ended under `ex`, in short words. */
  #closeError(ex: Exchange): Error {
    const cause = this.#socketError;
    if (ex.phase === "body") {
      return new Http1ClientError("connection closed while reading the body", { cause });
    }
    if (cause !== null && ex.received === 0) return cause;
    return new Http1ClientError(
      ex.received === 0 ? "connection closed before an answer" : "connection closed in the answer",
      cause === null ? undefined : { cause },
    );
  }

  /** Fails the exchange with `e` (once) and closes the connection. */
  #fail(e: unknown): void {
    const ex = this.ex;
    if (ex === null || ex.phase === "done") return;
    const phase = ex.phase;
    ex.phase = "done";
    ex.error = e;
    this.#client.settled(ex);
    if (phase === "head") ex.rejectHead(e);
    else if (ex.pending !== null) {
      const p = ex.pending;
      ex.pending = null;
      p.reject(e);
    }
    this.ex = null;
    if (!this.closed) this.destroy();
  }

  /** Reads what the parser can give the exchange now. */
  #drive(): void {
    const ex = this.ex;
    if (ex === null) return;
    if (ex.phase === "head") {
      for (;;) {
        const r = this.parser.nextResponse(ex.method);
        if (r === null) {
          if (this.#eof) this.#fail(this.#closeError(ex));
          return;
        }
        if (!("minor" in r)) return this.#fail(malformed(r));
        if (r.status === 101) {
          return this.#fail(
            new Http1ClientError("malformed answer: 101 to a request that asked no upgrade"),
          );
        }
        if (r.status < 200) continue; // 100 Continue, 103 Early Hints: the answer follows
        ex.phase = "body";
        ex.keepAlive = r.keepAlive;
        ex.ended = r.bodyLength === 0;
        ex.resolveHead({ head: r, body: this.#bodyOf(ex) });
        if (ex.ended) this.#done(ex);
        return;
      }
    }
    if (ex.phase !== "body") return;
    if (ex.pending === null) {
      // nobody reads: hold at most HIGH_WATER, then let the server wait
      if (this.parser.heldBytes > HIGH_WATER) this.socket.pause();
      return;
    }
    const piece = this.#piece(ex);
    if (piece === undefined) {
      this.socket.resume();
      return;
    }
    if (piece instanceof Error) {
      this.#fail(piece);
      return;
    }
    const p = ex.pending;
    ex.pending = null;
    p.resolve(piece);
    // the last piece: the connection is free before the reader asks for the end
    if (piece === null || ex.ended) this.#done(ex);
  }

  /**
   * The body's next piece: bytes (up to READ_BYTES of what is held, joined), null at its end,
   * an error, or undefined when more bytes are needed.
   */
  #piece(ex: Exchange): Uint8Array | null | Error | undefined {
    if (ex.ended) return null;
    let first: Uint8Array | null = null;
    let more: Uint8Array[] | null = null;
    let size = 0;
    while (size < READ_BYTES) {
      const r = this.parser.body(Infinity);
      if (r === null) break;
      if (r === "end") {
        ex.ended = true;
        break;
      }
      if (!(r instanceof Uint8Array)) {
        // a body cut short by the close, or one that breaks the framing rules
        return this.#eof && r.reason.startsWith("connection closed")
          ? this.#closeError(ex)
          : malformed(r);
      }
      if (first === null) first = r;
      else (more ??= [first]).push(r);
      size += r.byteLength;
    }
    if (first === null) return ex.ended ? null : undefined;
    return more === null ? first : Buffer.concat(more, size);
  }

  #bodyOf(ex: Exchange): Http1Body {
    return {
      read: (): Promise<Uint8Array | null> => {
        if (ex.pending !== null) return Promise.reject(new Error("a body read is pending"));
        if (ex.phase === "done") {
          return ex.error === null ? Promise.resolve(null) : Promise.reject(ex.error);
        }
        return new Promise((resolve, reject) => {
          ex.pending = { resolve, reject };
          if (this.ex === ex) this.#drive();
        });
      },
      cancel: (): void => {
        if (ex.phase === "done" || this.ex !== ex) return;
        this.#fail(new Http1ClientError("body cancelled"));
      },
    };
  }

  /** The response is whole: keep the connection for the next request, or close it. */
  #done(ex: Exchange): void {
    ex.phase = "done";
    ex.error = null;
    this.#client.settled(ex);
    // a response read until the close, a `Connection: close`, bytes past the response: closed
    if (ex.keepAlive && !this.#eof && !this.parser.pending) this.#client.release(this);
    else {
      this.ex = null;
      this.destroy();
    }
  }
}

function malformed(e: Http1Error): Error {
  return new Http1ClientError(`malformed answer: ${e.reason}`);
}

/** The request's bytes: its head (latin1) and body. */
function requestHead(
  method: string,
  url: URL,
  req: Http1ClientRequest,
  proxy: URL | null,
): string {
  if (!TOKEN_RE.test(method)) throw new TypeError(`invalid method "${method}"`);
  // through an http proxy, a plain request names the whole URL (absolute form)
  const target = proxy !== null && url.protocol === "http:"
    ? `${url.protocol}//${url.host}${url.pathname}${url.search}`
    : `${url.pathname}${url.search}`;
  let head = `${method} ${target} HTTP/1.1\r\nhost: ${url.host}\r\n`;
  if (proxy !== null && url.protocol === "http:") head += proxyAuthorization(proxy);
  let accept = false;
  for (const [name, value] of Object.entries(req.headers ?? {})) {
    const lower = name.toLowerCase();
    if (!TOKEN_RE.test(name) || !VALUE_RE.test(value)) {
      throw new TypeError(`invalid header ${JSON.stringify(name)}`);
    }
    if (lower === "host" || lower === "content-length" || lower === "transfer-encoding") continue;
    if (lower === "connection" || lower === "keep-alive" || lower === "upgrade") continue;
    if (lower === "accept") accept = true;
    head += `${lower}: ${value.replace(/^[ \t]+|[ \t]+$/g, "")}\r\n`;
  }
  // fetch's default
  if (!accept) head += "accept: */*\r\n";
  if (req.body !== undefined) {
    const length = typeof req.body === "string" ? Buffer.byteLength(req.body) : req.body.byteLength;
    head += `content-length: ${length}\r\n`;
  } else if (method === "POST" || method === "PUT" || method === "PATCH") {
    head += "content-length: 0\r\n";
  }
  return head + "\r\n";
}

/** `proxy-authorization: Basic ...` for a proxy URL with credentials, else "". */
function proxyAuthorization(proxy: URL): string {
  if (proxy.username === "" && proxy.password === "") return "";
  const user = decodeURIComponent(proxy.username);
  const password = decodeURIComponent(proxy.password);
  return `proxy-authorization: Basic ${Buffer.from(`${user}:${password}`).toString("base64")}\r\n`;
}

/**
 * A pool of HTTP/1.1 connections and the requests sent on them.
 *
 * @example
 * ```ts
 * const client = new Http1Client();
 * const res = await client.request("http://10.0.0.7:9090/metrics", { signal });
 * res.head.status; // 200
 * const piece = await res.body.read(); // bytes, or null at the end
 * await client.close();
 * ```
 */
export class Http1Client {
  readonly #keepAliveMs: number;
  readonly #maxHead: number;
  readonly #tls: Http1ClientTls;
  readonly #proxy: ProxyFor | undefined;
  readonly #maxIdle: number;
  /** Idle connections by origin, the most recently used last. */
  readonly #idle = new Map<string, Connection[]>();
  /** Every idle connection, the one idle longest first. */
  readonly #idleOrder = new Set<Connection>();
  /** Connections carrying a request. */
  readonly #busy = new Set<Connection>();
  #closed = false;

  constructor(options: Http1ClientOptions = {}) {
    this.#keepAliveMs = options.keepAliveTimeoutMs ?? 4_000;
    this.#maxHead = options.maxHeadBytes ?? 64 * 1024;
    this.#tls = options.tls ?? {};
    this.#maxIdle = options.maxIdle ?? 100;
    this.#proxy = options.proxy;
  }

  /** Connections open now: idle and busy (for tests). */
  get connections(): { idle: number; busy: number } {
    return { idle: this.#idleOrder.size, busy: this.#busy.size };
  }

  /**
   * Sends one request to `url` (http or https) and resolves with the response's head once it
   * is read (1xx heads skipped); its body is read from the result. Rejects with the socket's
   * error, an {@linkcode Http1ClientError} (a closed connection, a malformed answer) or the
   * signal's reason.
   */
  async request(url: string | URL, req: Http1ClientRequest = {}): Promise<Http1ClientResponse> {
    if (this.#closed) throw new Error("the client is closed");
    const u = typeof url === "string" ? new URL(url) : url;
    if (u.protocol !== "http:" && u.protocol !== "https:") {
      throw new TypeError(`unsupported protocol "${u.protocol}" in ${u.href}`);
    }
    const method = (req.method ?? "GET").toUpperCase();
    const proxy = this.#proxy?.(u) ?? null;
    if (proxy !== null && proxy.protocol !== "http:") {
      throw new Http1ClientError(
        `unsupported proxy ${proxy.protocol.slice(0, -1)}://${proxy.host} (only http proxies)`,
      );
    }
    const head = requestHead(method, u, req, proxy);
    const signal = req.signal;
    signal?.throwIfAborted();
    const address = proxy === null ? req.address : undefined;
    const key = proxy !== null
      ? `${u.protocol}//${u.host} via ${proxy.host}`
      : address !== undefined
      ? `${u.protocol}//${u.host} at ${address}`
      : `${u.protocol}//${u.host}`;
    const reused = this.#take(key);
    try {
      const c = reused ?? await this.#connect(u, key, proxy, signal, address);
      return await this.#send(c, method, head, req.body, signal);
    } catch (e) {
      // a kept connection the server closed before it read the request: once more on a new one
      if (
        reused !== null && e instanceof RetryableError && !signal?.aborted &&
        (method === "GET" || method === "HEAD")
      ) {
        const c = await this.#connect(u, key, proxy, signal, address);
        return await this.#send(c, method, head, req.body, signal);
      }
      throw e instanceof RetryableError ? e.cause : e;
    }
  }

  /** Closes every idle connection; busy ones close when their response ends. */
  close(): Promise<void> {
    this.#closed = true;
    for (const c of [...this.#idleOrder]) c.destroy();
    this.#idle.clear();
    this.#idleOrder.clear();
    return Promise.resolve();
  }

  /** An idle live connection to `key`, or null. */
  #take(key: string): Connection | null {
    const list = this.#idle.get(key);
    while (list !== undefined && list.length > 0) {
      const c = list.pop()!;
      if (list.length === 0) this.#idle.delete(key);
      this.#idleOrder.delete(c);
      if (!c.closed && !c.socket.destroyed) return c;
    }
    return null;
  }

  async #connect(
    u: URL,
    key: string,
    proxy: URL | null,
    signal: AbortSignal | undefined,
    address?: string,
  ): Promise<Connection> {
    const host = u.hostname.replace(/^\[|\]$/g, "");
    const dial = address ?? host;
    const https = u.protocol === "https:";
    const port = u.port === "" ? (https ? 443 : 80) : Number(u.port);
    let socket: net.Socket;
    if (proxy !== null) {
      const proxySocket = net.connect({
        host: proxy.hostname.replace(/^\[|\]$/g, ""),
        port: proxy.port === "" ? 80 : Number(proxy.port),
      });
      proxySocket.setNoDelay(true);
      if (!https) return new Connection(this, key, proxySocket, this.#maxHead);
      await tunnel(
        proxySocket,
        proxy,
        u.port === "" ? `${u.host}:${port}` : u.host,
        signal,
      );
      socket = this.#tlsConnect(host, port, proxySocket);
    } else if (https) socket = this.#tlsConnect(host, port, undefined, dial);
    else socket = net.connect({ host: dial, port });
    socket.setNoDelay(true);
    return new Connection(this, key, socket, this.#maxHead);
  }

  /** A TLS connection to `host`, over `over` (a proxy's tunnel) or a new TCP connection. */
  #tlsConnect(host: string, port: number, over?: net.Socket, dial = host): net.Socket {
    const t = this.#tls;
    return tls.connect({
      ...(over !== undefined ? { socket: over } : { host: dial, port }),
      ALPNProtocols: ["http/1.1"],
      ...(t.servername !== undefined
        ? { servername: t.servername }
        : net.isIP(host) === 0
        ? { servername: host }
        : {}),
      ...(t.ca !== undefined ? { ca: t.ca } : {}),
      ...(t.cert !== undefined ? { cert: t.cert } : {}),
      ...(t.key !== undefined ? { key: t.key } : {}),
      ...(t.rejectUnauthorized === false ? { rejectUnauthorized: false } : {}),
    });
  }

  #send(
    c: Connection,
    method: string,
    head: string,
    body: string | Uint8Array | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Http1ClientResponse> {
    const reused = c.uses > 0;
    return new Promise<Http1ClientResponse>((resolve, reject) => {
      const ex: Exchange = {
        method,
        received: 0,
        phase: "head",
        resolveHead: resolve,
        rejectHead: (e) => {
          // on a kept connection, a failure before any answer may be the server's idle close
          reject(reused && ex.received === 0 && !signal?.aborted ? new RetryableError(e) : e);
        },
        pending: null,
        ended: false,
        error: null,
        keepAlive: false,
        signal,
        onAbort: null,
      };
      if (signal !== undefined) {
        ex.onAbort = () => c.destroy(signal.reason);
        signal.addEventListener("abort", ex.onAbort, { once: true });
      }
      this.#busy.add(c);
      c.begin(ex);
      if (c.closed) {
        c.destroy();
        return;
      }
      c.socket.cork();
      c.socket.write(head, "latin1");
      if (body !== undefined && (typeof body === "string" ? body.length : body.byteLength) > 0) {
        c.socket.write(body);
      }
      c.socket.uncork();
    });
  }

  /** An exchange ended (whole or failed): its abort listener goes. */
  settled(ex: Exchange): void {
    if (ex.onAbort !== null) ex.signal?.removeEventListener("abort", ex.onAbort);
    ex.onAbort = null;
  }

  /** `c` ended its response whole: kept idle for its origin, unless the client is closed. */
  release(c: Connection): void {
    this.#busy.delete(c);
    if (this.#closed) {
      c.ex = null;
      c.destroy();
      return;
    }
    c.idle(this.#keepAliveMs);
    const list = this.#idle.get(c.key);
    if (list === undefined) this.#idle.set(c.key, [c]);
    else list.push(c);
    this.#idleOrder.add(c);
    if (this.#idleOrder.size > this.#maxIdle) {
      // the one idle longest goes (destroy() takes it out of the pool)
      this.#idleOrder.values().next().value!.destroy();
    }
  }

  /** `c` is closed: out of the pool. */
  forget(c: Connection): void {
    this.#busy.delete(c);
    this.#idleOrder.delete(c);
    const list = this.#idle.get(c.key);
    if (list === undefined) return;
    const i = list.indexOf(c);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) this.#idle.delete(c.key);
  }
}

/**
 * Opens a tunnel through an http proxy (`CONNECT authority`), resolving once the proxy answered
 * 2xx; rejects with the proxy's answer, the socket's error or the signal's reason (the socket is
 * destroyed then).
 */
function tunnel(
  socket: net.Socket,
  proxy: URL,
  authority: string,
  signal: AbortSignal | undefined,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const parser = new Http1Parser({ maxHeadBytes: 64 * 1024 });
    const done = (e?: unknown): void => {
      socket.off("data", onData);
      socket.off("error", onError);
      socket.off("close", onClose);
      signal?.removeEventListener("abort", onAbort);
      if (e === undefined) resolve();
      else {
        socket.destroy();
        reject(e);
      }
    };
    const onData = (chunk: Buffer): void => {
      parser.push(chunk);
      const r = parser.nextResponse("CONNECT");
      if (r === null) return;
      if (!("minor" in r)) {
        return done(new Http1ClientError(`malformed answer from the proxy: ${r.reason}`));
      }
      if (r.status < 200 || r.status > 299) {
        return done(
          new Http1ClientError(
            `proxy ${proxy.host} refused the tunnel to ${authority}: ${r.status}${
              r.reason ? ` ${r.reason}` : ""
            }`,
          ),
        );
      }
      // the server speaks after the client's TLS hello: nothing may follow the proxy's answer
      if (parser.heldBytes > 0) {
        return done(new Http1ClientError("the proxy sent bytes after its answer"));
      }
      done();
    };
    const onError = (e: Error): void => done(e);
    const onClose = (): void =>
      done(new Http1ClientError(`proxy ${proxy.host} closed the connection`));
    const onAbort = (): void => done(signal?.reason);
    socket.on("data", onData);
    socket.on("error", onError);
    socket.on("close", onClose);
    signal?.addEventListener("abort", onAbort, { once: true });
    socket.write(
      `CONNECT ${authority} HTTP/1.1\r\nhost: ${authority}\r\n${proxyAuthorization(proxy)}\r\n`,
      "latin1",
    );
  });
}

/** A failure on a kept connection before any answer: the request may be sent again. */
class RetryableError extends Error {
  constructor(cause: unknown) {
    super("retryable", { cause });
  }
}
