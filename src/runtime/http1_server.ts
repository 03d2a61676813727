/**
 * HTTP/1.1 over Bun's `node:tls` sockets, for connections whose client certificate the app
 * must see (the aggregator's front-proxy certificate on every real cluster, the replicas'
 * certificates between peers). Bun's own HTTPS servers verify a client certificate but do not
 * show it; its `node:tls` server shows it, and before this module a `node:http` server took
 * those sockets (`emit("connection")`), parsing HTTP/1 in JavaScript with a stream, an
 * IncomingMessage and a ServerResponse per request. Here a request is parsed into plain
 * strings, answered by `app.fastFetch` when it can (one write of head and body), else by
 * `app.fetch` with a web Request.
 *
 * Requests of a connection are answered one at a time, in order (pipelined ones wait). The
 * connection closes after an answer when the client asked (`Connection: close`, HTTP/1.0
 * without keep-alive), after an upgrade request (answered as any other, never with 101), after
 * a malformed request (400, 413, 431, 501 with `Connection: close`), after `idleMs` without a
 * byte, and when a request's head takes over `headMs` to arrive.
 *
 * A body is decided on its head, before any of it is read (anyone who reaches the port is
 * served this far): a route that takes none (`app.bodyLimit`, 0 by default) answers 413 and
 * closes; one that takes a body gets it as a stream that reads the socket only when the app
 * pulls, so its authentication runs first and a refused request's body is never read (the
 * connection closes after the answer instead).
 */
import { Buffer } from "node:buffer";
import { STATUS_CODES } from "node:http";
import type { TLSSocket } from "node:tls";
import { type Http1Error, Http1Parser, type Http1Request } from "./http1_parser.ts";
import type { ConnectionInfo, FetchApp, PeerCertificate, PlainRequest } from "./serve_types.ts";

/** Options of {@linkcode serveHttp1}. */
export interface Http1Options {
  /** The client certificate the TLS layer verified, or null. */
  peerCertificate: PeerCertificate | null;
  /** Close a connection after this long without a byte from the client (default 90 s). */
  idleMs?: number;
  /** Refuse a request whose head has not arrived whole this long after its first byte (60 s). */
  headMs?: number;
  /** The clock (ms since the epoch), for the head deadline and the Date header. */
  now?: () => number;
}

let dateSecond = -1;
let dateText = "";

function httpDate(nowMs: number): string {
  const s = Math.floor(nowMs / 1000);
  if (s !== dateSecond) {
    dateSecond = s;
    dateText = new Date(s * 1000).toUTCString();
  }
  return dateText;
}

const NO_BODY = new Uint8Array(0);
/**
 * After an answer that closes the connection, how long the socket waits (reading nothing)
 * before it is destroyed (RFC 9112 9.6; Go's net/http waits 500 ms).
 */
export const LINGER_MS = 1_000;
const TEXT_LINES = "content-type: text/plain; charset=utf-8\r\n";

/** The status line and headers of an answer, with the framing headers this server owns. */
function headOf(
  status: number,
  headerLines: string,
  length: number,
  request: Http1Request | null,
  close: boolean,
  nowMs: number,
): string {
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r\n${headerLines}`;
  // 1xx, 204 and 304 carry no body, and no length (RFC 9110, 8.6)
  if (status >= 200 && status !== 204 && status !== 304) head += `content-length: ${length}\r\n`;
  head += `date: ${httpDate(nowMs)}\r\n`;
  if (close) head += "connection: close\r\n";
  else if (request !== null && request.minor === 0) head += "connection: keep-alive\r\n";
  return head + "\r\n";
}

/** `name: value` lines of the app's headers, without the framing headers this server owns. */
function linesOf(headers: Iterable<[string, string]>): string {
  let lines = "";
  for (const [name, value] of headers) {
    const key = name.toLowerCase();
    if (key === "content-length" || key === "transfer-encoding" || key === "connection") continue;
    if (key === "date" || key === "keep-alive") continue;
    lines += `${name}: ${value}\r\n`;
  }
  return lines;
}

// The lines of a frozen headers object (the app's answers share a few), made once.
const frozenLines = new WeakMap<object, string>();

function plainLines(headers: Readonly<Record<string, string>>): string {
  let lines = frozenLines.get(headers);
  if (lines === undefined) {
    lines = linesOf(Object.entries(headers));
    if (Object.isFrozen(headers)) frozenLines.set(headers, lines);
  }
  return lines;
}

/** How the body of a request handed to `app.fetch` went. */
interface BodyState {
  /** Read whole (or there was none). */
  done: boolean;
  /** `100 Continue` was sent. */
  continued: boolean;
  /** The parser refused the body (413 past the route's limit, or malformed chunks). */
  error: Http1Error | null;
}

/**
 * The web Request `app.fetch` gets for a parsed request, with its body as a stream (throws on
 * a target no URL can hold).
 */
function webRequest(r: Http1Request, body: ReadableStream<Uint8Array> | null): Request {
  let url: string;
  if (r.target.startsWith("/")) {
    // the parser let through only a uri-host: nothing that moves into the path or user part
    const host = typeof r.headers.host === "string" && r.headers.host !== ""
      ? r.headers.host
      : "localhost";
    url = `https://${host}${r.target}`;
  } else if (/^https?:\/\//i.test(r.target)) url = r.target;
  else throw new Error(`malformed request target "${r.target}"`);
  const headers = new Headers();
  for (let i = 0; i < r.rawHeaders.length; i += 2) {
    headers.append(r.rawHeaders[i], r.rawHeaders[i + 1]);
  }
  const withBody = body !== null && r.method !== "GET" && r.method !== "HEAD";
  return new Request(url, {
    method: r.method,
    headers,
    ...(withBody ? { body, duplex: "half" } : {}),
  } as RequestInit);
}

function* responseHeaders(response: Response): Iterable<[string, string]> {
  for (const [name, value] of response.headers) {
    if (name === "set-cookie") continue;
    yield [name, value];
  }
  for (const cookie of response.headers.getSetCookie()) yield ["set-cookie", cookie];
}

/**
 * Serves HTTP/1.1 on a TLS socket (already past its handshake) with `app`.
 *
 * @example
 * ```ts
 * tls.createServer(options, (socket) => serveHttp1(socket, app, { peerCertificate: null }));
 * ```
 */
export function serveHttp1(socket: TLSSocket, app: FetchApp, options: Http1Options): void {
  const now = options.now ?? Date.now;
  const headMs = options.headMs ?? 60_000;
  const parser = new Http1Parser();
  const fast = app.fastFetch?.bind(app);
  const bodyLimit = app.bodyLimit?.bind(app) ?? (() => 0);
  const remoteAddress = socket.remoteAddress ?? "";
  const peerCertificate = options.peerCertificate;
  /** An answer of app.fetch is being waited for: later requests wait. */
  let busy = false;
  /** The socket did not take the last write whole: wait for "drain". */
  let blocked = false;
  let closed = false;
  /** The client has sent all it will (half-closed): close once its requests are answered. */
  let ending = false;
  /** When the head now held began to arrive (0: none pending). */
  let headSince = 0;
  /** The app's body stream waits for bytes: called again when some arrive. */
  let bodyWaiting: (() => void) | null = null;

  const connectionOf = (r: Http1Request): ConnectionInfo => ({
    remoteAddress,
    encrypted: true,
    peerCertificate,
    rawHeaders: r.rawHeaders,
  });

  const write = (head: string, body: Uint8Array): void => {
    const headLength = Buffer.byteLength(head, "latin1");
    const out = Buffer.allocUnsafe(headLength + body.byteLength);
    out.write(head, 0, headLength, "latin1");
    out.set(body, headLength);
    if (!socket.write(out)) blocked = true;
  };

  const end = (): void => {
    closed = true;
    bodyWaiting = null;
    // a FIN, and nothing more read (the client's writes stall once the socket buffers fill):
    // destroyed a second later, after the client could read the answer (closing with its bytes
    // unread would be a reset, which loses the answer)
    socket.end();
    socket.pause();
    const linger = setTimeout(() => socket.destroy(), LINGER_MS);
    socket.once("close", () => clearTimeout(linger));
  };

  const refuse = (e: Http1Error): void => {
    const body = Buffer.from(`${e.reason}\n`, "latin1");
    write(headOf(e.status, TEXT_LINES, body.byteLength, null, true, now()), body);
    end();
  };

  const answered = (
    r: Http1Request,
    status: number,
    headerLines: string,
    body: Uint8Array,
    mustClose = false,
  ): void => {
    // after an upgrade request the client may send anything but HTTP
    const close = mustClose || !r.keepAlive || r.upgrade;
    const head = headOf(status, headerLines, body.byteLength, r, close, now());
    // HEAD, 1xx, 204 and 304 answers carry no body (RFC 9110 6.4.1)
    const bodyless = r.method === "HEAD" || status < 200 || status === 204 || status === 304;
    write(head, bodyless ? NO_BODY : body);
    if (close) end();
  };

  /** The body of `r` as the app pulls it: read from the socket only then, up to `limit`. */
  const bodyStream = (
    r: Http1Request,
    limit: number,
    state: BodyState,
  ): ReadableStream<Uint8Array> =>
    new ReadableStream<Uint8Array>({
      pull: (controller) =>
        new Promise<void>((resolve) => {
          const step = (): void => {
            if (closed) {
              bodyWaiting = null;
              controller.error(new Error("connection closed while reading the body"));
              return resolve();
            }
            const piece = parser.body(limit);
            if (piece === null) {
              if (r.expectContinue && r.minor === 1 && !state.continued) {
                state.continued = true;
                if (!socket.write("HTTP/1.1 100 Continue\r\n\r\n")) blocked = true;
              }
              bodyWaiting = step;
              if (ending) {
                bodyWaiting = null;
                controller.error(new Error("connection closed while reading the body"));
                return resolve();
              }
              socket.resume();
              return;
            }
            bodyWaiting = null;
            socket.pause();
            if (piece === "end") {
              state.done = true;
              controller.close();
            } else if ("status" in piece) {
              state.error = piece;
              controller.error(new Error(piece.reason));
            } else controller.enqueue(piece);
            resolve();
          };
          step();
        }),
      cancel: () => {
        bodyWaiting = null;
      },
    }, { highWaterMark: 0 });

  const viaFetch = (r: Http1Request, limit: number): void => {
    busy = true;
    socket.pause();
    const state: BodyState = { done: r.bodyLength === 0, continued: false, error: null };
    let request: Request;
    try {
      request = webRequest(r, r.bodyLength === 0 ? null : bodyStream(r, limit, state));
    } catch (e) {
      busy = false;
      refuse({ status: 400, reason: (e as Error).message });
      return;
    }
    Promise.resolve()
      .then(() => app.fetch(request, { connection: connectionOf(r) }))
      .then(async (response) => {
        const body = response.body === null
          ? NO_BODY
          : new Uint8Array(await response.arrayBuffer());
        if (closed) return;
        if (state.error !== null) return refuse(state.error);
        // a body the app did not read (a refused request) is not read after the answer either
        answered(r, response.status, linesOf(responseHeaders(response)), body, !state.done);
      })
      .catch((e: unknown) => {
        if (closed) return;
        if (state.error !== null) return refuse(state.error);
        const body = Buffer.from(`internal error: ${(e as Error)?.message ?? String(e)}\n`, "utf8");
        answered(r, 500, TEXT_LINES, body, !state.done);
      })
      .finally(() => {
        busy = false;
        bodyWaiting = null;
        if (closed) return;
        if (!blocked) socket.resume();
        drain();
      });
  };

  const drain = (): void => {
    while (!busy && !blocked && !closed) {
      const r = parser.next();
      if (r === null) {
        if (ending) return end();
        if (!parser.pending) headSince = 0;
        else if (headSince === 0) headSince = now();
        else if (now() - headSince > headMs) {
          refuse({ status: 408, reason: "request head too slow" });
        }
        return;
      }
      if ("status" in r) return refuse(r);
      headSince = 0;
      if (r.bodyLength !== 0) {
        // decided on the head: a body is never read for a route that takes none
        const limit = bodyLimit(r.method, r.target);
        if (limit <= 0) return refuse({ status: 413, reason: "this request takes no body" });
        if (r.bodyLength > limit) {
          return refuse({ status: 413, reason: `request body over ${limit} bytes` });
        }
        return viaFetch(r, limit);
      }
      const answer = fast && r.method === "GET"
        ? fast(
          {
            method: r.method,
            url: r.target,
            headers: r.headers,
            connection: connectionOf(r),
          } satisfies PlainRequest,
        )
        : null;
      if (answer === null) return viaFetch(r, 0);
      const bytes = answer.bytes ?? Buffer.from(answer.body, "utf8");
      answered(r, answer.status, plainLines(answer.headers), bytes);
    }
    if (blocked && !closed) socket.pause();
  };

  socket.on("data", (chunk: Buffer) => {
    if (closed) return;
    parser.push(chunk);
    if (bodyWaiting !== null) bodyWaiting();
    else if (busy) socket.pause();
    else drain();
  });
  socket.on("drain", () => {
    if (!blocked || closed) return;
    blocked = false;
    if (!busy) {
      socket.resume();
      drain();
    }
  });
  socket.on("end", () => {
    // the client is done sending: answer what it sent, then close
    ending = true;
    if (bodyWaiting !== null) bodyWaiting();
    else if (!closed && !busy && !blocked) drain();
  });
  socket.on("close", () => {
    closed = true;
    if (bodyWaiting !== null) bodyWaiting();
  });
  socket.setTimeout(options.idleMs ?? 90_000, () => socket.destroy());
}
