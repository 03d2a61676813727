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
 * without keep-alive), after a malformed request (400, 413, 431, 501 with `Connection: close`),
 * after `idleMs` without a byte, and when a request's head takes over `headMs` to arrive.
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
const TEXT_LINES = "content-type: text/plain; charset=utf-8\r\n";
const HOST_RE = /^[^/?#@\\\s]+$/;

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

/** The web Request `app.fetch` gets for a parsed request (throws on a target no URL can hold). */
function webRequest(r: Http1Request): Request {
  let url: string;
  if (r.target.startsWith("/")) {
    const host = typeof r.headers.host === "string" && r.headers.host !== ""
      ? r.headers.host
      : "localhost";
    // a Host that would move into the URL's path, query or user part is not a host
    if (!HOST_RE.test(host)) throw new Error(`malformed host "${host}"`);
    url = `https://${host}${r.target}`;
  } else if (/^https?:\/\//i.test(r.target)) url = r.target;
  else throw new Error(`malformed request target "${r.target}"`);
  const headers = new Headers();
  for (let i = 0; i < r.rawHeaders.length; i += 2) {
    headers.append(r.rawHeaders[i], r.rawHeaders[i + 1]);
  }
  const withBody = r.body !== null && r.method !== "GET" && r.method !== "HEAD";
  return new Request(url, {
    method: r.method,
    headers,
    body: withBody ? r.body as Uint8Array<ArrayBuffer> : undefined,
  });
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
    socket.end();
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
  ): void => {
    const close = !r.keepAlive;
    const head = headOf(status, headerLines, body.byteLength, r, close, now());
    write(head, r.method === "HEAD" ? NO_BODY : body);
    if (close) end();
  };

  const viaFetch = (r: Http1Request): void => {
    busy = true;
    socket.pause();
    let request: Request;
    try {
      request = webRequest(r);
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
        if (!closed) answered(r, response.status, linesOf(responseHeaders(response)), body);
      })
      .catch((e: unknown) => {
        if (closed) return;
        const body = Buffer.from(`internal error: ${(e as Error)?.message ?? String(e)}\n`, "utf8");
        answered(r, 500, TEXT_LINES, body);
      })
      .finally(() => {
        busy = false;
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
      if (r === "continue") {
        if (!socket.write("HTTP/1.1 100 Continue\r\n\r\n")) blocked = true;
        continue;
      }
      if ("status" in r) return refuse(r);
      headSince = 0;
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
      if (answer === null) return viaFetch(r);
      const bytes = answer.bytes ?? Buffer.from(answer.body, "utf8");
      answered(r, answer.status, plainLines(answer.headers), bytes);
    }
    if (blocked && !closed) socket.pause();
  };

  socket.on("data", (chunk: Buffer) => {
    if (closed) return;
    parser.push(chunk);
    drain();
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
    if (!closed && !busy && !blocked) drain();
  });
  socket.on("close", () => {
    closed = true;
  });
  socket.setTimeout(options.idleMs ?? 90_000, () => socket.destroy());
}
