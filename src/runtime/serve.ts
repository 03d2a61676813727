/**
 * HTTPS and HTTP serving for Node, Deno and Bun: the only module that knows which runtime it
 * runs on. Everything above it sees a web-standard `fetch(request, env)` app; `env.connection`
 * carries the client certificate the TLS layer saw, so that authentication stays runtime-blind.
 *
 * Client certificates, measured (Node 20.20, Deno 2.9.6, Bun 1.4.5; `requestCert: true`,
 * `rejectUnauthorized: false`, `ca` = the client CA bundle):
 * - Node `node:https`: requests an optional client certificate; `socket.authorized`,
 *   `authorizationError` and `getPeerCertificate(true)` (with `raw` DER and the issuer chain)
 *   work. A client without a certificate connects (`authorized: false`,
 *   `UNABLE_TO_GET_ISSUER_CERT`); one from an unknown CA connects with
 *   `UNABLE_TO_VERIFY_LEAF_SIGNATURE`.
 * - Deno `node:https`: the same, field for field.
 * - Bun `node:https`: requests and verifies (`socket.authorized` is right) but the request's
 *   socket has no `getPeerCertificate` ("TypeError: s.getPeerCertificate is not a function"),
 *   so the handler cannot learn who the client is. `Bun.serve` has `tls.requestCert` but no API
 *   that returns the peer certificate. Bun's `node:tls` server does expose it on its sockets
 *   (`getPeerCertificate(true)` with `raw` and the chain, `getPeerX509Certificate()`), and a
 *   `node:http` server accepts those sockets through `emit("connection", socket)`, but parses
 *   HTTP/1 in JavaScript with a stream per request (measured: half the requests a second of
 *   our own parser). So with a client CA the Bun path below serves its own HTTP/1.1 on those
 *   sockets (http1_server.ts): a `bun build --compile` binary verifies client certificates;
 *   without a client CA Bun's node:https serves (no certificate to read).
 * - `node:crypto` `X509Certificate` (`checkIssued`, `verify`, `fingerprint256`) works on all
 *   three; Deno leaves `keyUsage` undefined.
 */
import * as http from "node:http";
import * as https from "node:https";
import * as tls from "node:tls";
import type { AddressInfo, Socket } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { LINGER_MS, serveHttp1 } from "./http1_server.ts";
import type { ConnectionInfo, FetchApp, PeerCertificate, PlainRequest } from "./serve_types.ts";

export type {
  ConnectionInfo,
  FetchApp,
  PeerCertificate,
  PlainRequest,
  PlainResponse,
  ServeEnv,
} from "./serve_types.ts";

/** Options of {@linkcode serveHttps}. */
export interface ServeHttpsOptions {
  /** Address to bind (`0.0.0.0`, `127.0.0.1`, `::`). */
  hostname: string;
  /** Port; 0 picks a free one (see `RunningServer.port`). */
  port: number;
  /** Serving certificate (PEM), intermediates after the leaf. */
  cert: string;
  /** Private key (PEM). */
  key: string;
  /**
   * CA bundle (PEM) that verifies client certificates. A certificate is requested but never
   * required: clients without one (kubectl, probes) connect and their requests carry
   * `peerCertificate: null`.
   */
  clientCa?: string;
  /** Minimum TLS version (default TLSv1.2). */
  minVersion?: "TLSv1.2" | "TLSv1.3";
  /** Called once listening, with the bound port. */
  onListen?: (info: { hostname: string; port: number }) => void;
}

/** Options of {@linkcode serveHttp}. */
export interface ServeHttpOptions {
  hostname: string;
  port: number;
  onListen?: (info: { hostname: string; port: number }) => void;
}

/** The new TLS material of {@linkcode RunningServer.updateTls}; omitted fields stay. */
export interface TlsUpdate {
  cert?: string;
  key?: string;
  /** New client CA bundle; "" stops verifying client certificates against any CA. */
  clientCa?: string;
}

/** A server that is listening. */
export interface RunningServer {
  /** The bound port. */
  port: number;
  /** Replaces the serving certificate or the client CA bundle for new connections (HTTPS). */
  updateTls(update: TlsUpdate): void;
  /** Stops listening and closes every connection, idle or not. */
  close(): Promise<void>;
}

/** The runtime this process runs on. */
export function runtimeName(): "node" | "deno" | "bun" {
  const g = globalThis as Record<string, unknown>;
  if (g.Bun !== undefined) return "bun";
  if (g.Deno !== undefined) return "deno";
  return "node";
}

interface NodePeerCertificate {
  subject?: Record<string, string | string[]>;
  raw?: Uint8Array;
  fingerprint256?: string;
  valid_to?: string;
  issuerCertificate?: NodePeerCertificate;
}

type CertSocket = Socket & {
  authorized?: boolean;
  authorizationError?: Error | string | null;
  getPeerCertificate?: (detailed: boolean) => NodePeerCertificate | null;
};

function asList(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}

/** Reads the peer certificate of a TLS socket; null when the client sent none. */
function readPeerCertificate(socket: CertSocket): PeerCertificate | null {
  if (typeof socket.getPeerCertificate !== "function") return null;
  const leaf = socket.getPeerCertificate(true);
  if (!leaf || !leaf.raw) return null;
  const chain: Uint8Array[] = [];
  const seen = new Set<string>();
  for (let c: NodePeerCertificate | undefined = leaf; c?.raw; c = c.issuerCertificate) {
    const id = c.fingerprint256 ?? String(chain.length);
    if (seen.has(id)) break; // a self-signed root is its own issuer
    seen.add(id);
    chain.push(new Uint8Array(c.raw));
  }
  const err = socket.authorizationError;
  const commonName = asList(leaf.subject?.CN);
  const notAfter = leaf.valid_to ? Date.parse(leaf.valid_to) : NaN;
  return {
    authorized: socket.authorized === true,
    authorizationError: err ? (typeof err === "string" ? err : err.message || String(err)) : null,
    commonName: commonName[commonName.length - 1] ?? "",
    organizations: asList(leaf.subject?.O),
    chain,
    notAfter: Number.isNaN(notAfter) ? 0 : notAfter,
  };
}

// One verdict per TLS connection: keep-alive requests reuse it.
const peerCache = new WeakMap<object, PeerCertificate | null>();

function connectionOf(incoming: http.IncomingMessage): ConnectionInfo {
  const socket = incoming.socket as CertSocket;
  let peer = peerCache.get(socket);
  if (peer === undefined) {
    peer = readPeerCertificate(socket);
    peerCache.set(socket, peer);
  }
  return {
    remoteAddress: socket.remoteAddress ?? "",
    encrypted: (socket as { encrypted?: boolean }).encrypted === true,
    peerCertificate: peer,
    rawHeaders: incoming.rawHeaders,
  };
}

/**
 * The request as the fast path sees it. Headers and the connection are read from the runtime's
 * request object only when asked for: Bun builds them on first access, and a read without
 * authorization needs neither.
 */
class IncomingView implements PlainRequest {
  readonly #incoming: http.IncomingMessage;
  #connection: ConnectionInfo | undefined;
  constructor(incoming: http.IncomingMessage) {
    this.#incoming = incoming;
  }
  get method(): string {
    return this.#incoming.method ?? "GET";
  }
  get url(): string {
    return this.#incoming.url ?? "/";
  }
  get headers(): PlainRequest["headers"] {
    return this.#incoming.headers;
  }
  get connection(): ConnectionInfo {
    return this.#connection ??= connectionOf(this.#incoming);
  }
}

/**
 * Deno: how much of a refused body is read and dropped before the connection is destroyed, once
 * the answer is written (Deno writes it only after it has read some of the body).
 */
const LINGER_BYTES = 256 * 1024;
/** Deno: past this much dropped, the connection goes even before its answer is written. */
const LINGER_BYTES_MAX = 1 << 20;
/** Deno: how long the client has to read the answer once it is written. */
const LINGER_READ_MS = 10;

/**
 * The server closes the connection once its answer is written; with the client's body still
 * unread that close is a reset, which loses the answer to a client still writing. Instead the
 * sending side is closed (a FIN), nothing more is read (the client's writes stall once the
 * socket buffers fill), and the socket is destroyed a second later (RFC 9112 9.6; Go's net/http
 * waits half a second): time enough for the client to read the answer.
 */
function lingerOnClose(incoming: http.IncomingMessage, outgoing: http.ServerResponse): void {
  const socket = incoming.socket as Socket & { destroySoon?: () => void };
  // Deno's node:http reads on regardless of a pause and holds what it read (measured: +78-86
  // MiB over the load test's rest level): there the body is read and dropped, up to 256 KiB
  const drop = runtimeName() === "deno";
  socket.destroySoon = (): void => {
    socket.end();
    if (!drop) socket.pause();
    const linger = setTimeout(() => socket.destroy(), LINGER_MS);
    socket.once("close", () => clearTimeout(linger));
  };
  if (!drop) {
    // Node reads an unread body to its end once the answer is sent (IncomingMessage's _dump):
    // not this one
    (incoming as http.IncomingMessage & { _dump?: () => void })._dump = (): void => {};
    return void incoming.pause();
  }
  // Deno writes the answer only after it has read some of the body: the socket goes once the
  // answer is out (destroyed before, the client saw EPIPE instead of the 413), or at the cap
  let dropped = 0;
  let answered = false;
  outgoing.once("finish", () => {
    answered = true;
    if (dropped > LINGER_BYTES) destroyLater();
  });
  let timer: ReturnType<typeof setTimeout> | null = null;
  const destroyLater = (): void => {
    timer ??= setTimeout(() => socket.destroy(), LINGER_READ_MS);
  };
  socket.once("close", () => {
    if (timer !== null) clearTimeout(timer);
  });
  incoming.on("data", (chunk: Buffer) => {
    dropped += chunk.byteLength;
    if (dropped > LINGER_BYTES_MAX) socket.destroy();
    else if (dropped > LINGER_BYTES && answered) destroyLater();
  });
}

/**
 * A request whose head announces a body the app does not take (`app.bodyLimit`): answered 413
 * with `Connection: close` before a byte of the body is read. True when it was.
 */
function refusedBody(
  app: FetchApp,
  incoming: http.IncomingMessage,
  outgoing: http.ServerResponse,
): boolean {
  const length = incoming.headers["content-length"];
  const chunked = incoming.headers["transfer-encoding"] !== undefined;
  if (!chunked && (length === undefined || length === "0")) return false;
  const limit = app.bodyLimit?.(incoming.method ?? "GET", incoming.url ?? "/") ?? 0;
  if (limit > 0 && (chunked || Number(length) <= limit)) return false;
  const reason = limit > 0 ? `request body over ${limit} bytes\n` : "this request takes no body\n";
  lingerOnClose(incoming, outgoing);
  outgoing.shouldKeepAlive = false;
  outgoing.writeHead(413, {
    "content-type": "text/plain; charset=utf-8",
    "content-length": String(Buffer.byteLength(reason)),
    connection: "close",
  });
  outgoing.end(reason);
  return true;
}

function requestListener(app: FetchApp): http.RequestListener {
  const viaFetch = getRequestListener(
    (request, bindings) =>
      app.fetch(request, { connection: connectionOf(bindings.incoming as http.IncomingMessage) }),
    // never replace the process-wide Request/Response (other code in the process uses them)
    { overrideGlobalObjects: false },
  ) as http.RequestListener;
  const fast = app.fastFetch?.bind(app);
  if (!fast) {
    return (incoming, outgoing) => {
      if (!refusedBody(app, incoming, outgoing)) viaFetch(incoming, outgoing);
    };
  }
  // The metric reads: a web Request/Response pair and a body stream per request cost more
  // than the read itself, so the app answers them as plain strings when it can.
  return (incoming, outgoing) => {
    if (refusedBody(app, incoming, outgoing)) return;
    const answer = fast(new IncomingView(incoming));
    if (answer === null) return viaFetch(incoming, outgoing);
    const body = answer.bytes ?? Buffer.from(answer.body);
    outgoing.writeHead(answer.status, {
      ...answer.headers,
      "content-length": String(body.byteLength),
    });
    outgoing.end(body);
  };
}

/** Tracks open sockets so that close() does not wait for idle keep-alive connections. */
function socketTracker(): { add(socket: Socket): void; destroyAll(): void } {
  const open = new Set<Socket>();
  return {
    add(socket) {
      open.add(socket);
      socket.on("close", () => open.delete(socket));
      // a reset by the peer must not become an uncaught error
      socket.on("error", () => {});
    },
    destroyAll() {
      for (const s of open) s.destroy();
      open.clear();
    },
  };
}

function listen(
  server: http.Server | tls.Server,
  options: { hostname: string; port: number; onListen?: ServeHttpsOptions["onListen"] },
): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    server.once("error", onError);
    server.listen(options.port, options.hostname, () => {
      server.off("error", onError);
      const port = (server.address() as AddressInfo).port;
      options.onListen?.({ hostname: options.hostname, port });
      resolve(port);
    });
  });
}

function closeServer(server: http.Server | tls.Server, tracker: { destroyAll(): void }) {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    tracker.destroyAll();
  });
}

function secureOptions(
  options: { cert: string; key: string; clientCa?: string; minVersion?: string },
): tls.SecureContextOptions & tls.TlsOptions {
  return {
    cert: options.cert,
    key: options.key,
    ...(options.clientCa ? { ca: options.clientCa } : {}),
    minVersion: (options.minVersion ?? "TLSv1.2") as tls.SecureVersion,
    requestCert: true,
    rejectUnauthorized: false,
  };
}

/**
 * Serve `app` over HTTPS, asking every client for a certificate (optional) and verifying it
 * against `clientCa`. The result of that check reaches the app as `env.connection`.
 *
 * @example
 * ```ts
 * const server = await serveHttps(app, { hostname: "127.0.0.1", port: 6443, cert, key });
 * await server.close();
 * ```
 */
export async function serveHttps(
  app: FetchApp,
  options: ServeHttpsOptions,
): Promise<RunningServer> {
  if (runtimeName() === "bun") return await serveHttpsBun(app, options);
  const listener = requestListener(app);
  let current = { cert: options.cert, key: options.key, clientCa: options.clientCa };
  const tracker = socketTracker();
  const server = httpsServerOf(listener, secureOptions({ ...current, ...options }), tracker);
  const port = await listen(server, options);
  return {
    port,
    updateTls(update) {
      current = mergeTls(current, update);
      server.setSecureContext(
        secureOptions({ ...current, minVersion: options.minVersion }),
      );
    },
    close: () => closeServer(server, tracker),
  };
}

/** TLS settings with the given ones replaced (what `updateTls` leaves out stays). */
function mergeTls<T extends { cert: string; key: string; clientCa?: string }>(
  current: T,
  update: Partial<T>,
): T {
  return {
    ...current,
    cert: update.cert ?? current.cert,
    key: update.key ?? current.key,
    clientCa: update.clientCa ?? current.clientCa,
  };
}

function httpsServerOf(
  listener: http.RequestListener,
  tlsOptions: tls.SecureContextOptions & tls.TlsOptions,
  tracker: { add(socket: Socket): void },
): https.Server {
  const server = https.createServer(tlsOptions, listener);
  server.on("connection", (socket: Socket) => tracker.add(socket));
  server.on("tlsClientError", () => {});
  return server;
}

/**
 * Bun's node:tls server (which shows the peer certificate) with this project's HTTP/1.1 server
 * on its sockets (http1_server.ts).
 */
function leanServerOf(
  app: FetchApp,
  tlsOptions: tls.SecureContextOptions & tls.TlsOptions,
  tracker: { add(socket: Socket): void },
): tls.Server {
  // half-open: a client that ends its side after its requests still gets the answers
  const tlsServer = tls.createServer({ ...tlsOptions, allowHalfOpen: true }, (socket) => {
    tracker.add(socket);
    serveHttp1(socket, app, { peerCertificate: readPeerCertificate(socket as CertSocket) });
  });
  tlsServer.on("tlsClientError", () => {});
  return tlsServer;
}

/**
 * Bun: with a client CA, node:tls (the only way to read the peer certificate) and
 * http1_server.ts; with none, nobody reads it and Bun's own node:https serves. When an update
 * adds or removes the client CA (or changes the certificate of the node:https server, which has
 * no setSecureContext on Bun), a new server takes over the port and the old connections are
 * closed (clients reconnect and are verified anew).
 */
async function serveHttpsBun(
  app: FetchApp,
  options: ServeHttpsOptions,
): Promise<RunningServer> {
  let listener: http.RequestListener | null = null;
  let current = { cert: options.cert, key: options.key, clientCa: options.clientCa };
  const tracker = socketTracker();
  const make = (): http.Server | tls.Server => {
    const tlsOptions = secureOptions({ ...current, minVersion: options.minVersion });
    return current.clientCa
      ? leanServerOf(app, tlsOptions, tracker)
      : httpsServerOf(listener ??= requestListener(app), tlsOptions, tracker);
  };
  let server = make();
  let bridged = Boolean(current.clientCa);
  const port = await listen(server, options);
  let swapping: Promise<void> = Promise.resolve();
  return {
    port,
    updateTls(update) {
      current = mergeTls(current, update);
      // Bun's https.Server has no setSecureContext: it is replaced like a change of kind
      if (Boolean(current.clientCa) === bridged && bridged) {
        (server as tls.Server).setSecureContext(
          secureOptions({ ...current, minVersion: options.minVersion }),
        );
        return;
      }
      bridged = Boolean(current.clientCa);
      swapping = swapping.then(async () => {
        await closeServer(server, tracker);
        server = make();
        await listen(server, { hostname: options.hostname, port });
      });
    },
    close: async () => {
      await swapping.catch(() => {});
      await closeServer(server, tracker);
    },
  };
}

/**
 * Serve `app` over plain HTTP (the own-metrics port). `env.connection.peerCertificate` is null.
 */
export async function serveHttp(app: FetchApp, options: ServeHttpOptions): Promise<RunningServer> {
  const tracker = socketTracker();
  const server = http.createServer(requestListener(app));
  server.on("connection", (socket: Socket) => tracker.add(socket));
  const port = await listen(server, options);
  return {
    port,
    updateTls() {
      throw new Error("updateTls on a plain HTTP server");
    },
    close: () => closeServer(server, tracker),
  };
}
