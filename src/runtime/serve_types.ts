/**
 * The types a server and its app share: what the TLS layer knows about a connection, and the
 * app's two ways to answer (serve.ts and http1_server.ts both use them).
 */

/** The client certificate of a TLS connection, as the TLS layer verified it. */
export interface PeerCertificate {
  /** The chain verified against the `clientCa` bundle the server was given. */
  authorized: boolean;
  /** OpenSSL's reason when not authorized (`UNABLE_TO_VERIFY_LEAF_SIGNATURE`, ...). */
  authorizationError: string | null;
  /** Subject common name ("" when absent). */
  commonName: string;
  /** Subject organizations, in certificate order. */
  organizations: string[];
  /** DER of the leaf and of the issuers the TLS layer found for it, leaf first. */
  chain: Uint8Array[];
  /** End of validity, ms since the epoch. */
  notAfter: number;
}

/** What the server knows about the connection a request came on. */
export interface ConnectionInfo {
  remoteAddress: string;
  /** Whether the connection is TLS. */
  encrypted: boolean;
  /** The client certificate, or null when the client sent none (or on plain HTTP). */
  peerCertificate: PeerCertificate | null;
  /**
   * Request headers as received, `[name, value, name, value, ...]`: repeated headers stay
   * apart here while `Request.headers` joins them with ", ". Empty when not available.
   */
  rawHeaders: readonly string[];
}

/** The second argument of `app.fetch` (Hono's `c.env`). */
export interface ServeEnv {
  connection: ConnectionInfo;
}

/** A request as {@linkcode FetchApp.fastFetch} sees it: no web Request object is made. */
export interface PlainRequest {
  method: string;
  /** Path and query as received, e.g. `/apis/external.metrics.k8s.io/v1beta1/...?labelSelector=a%3Db`. */
  url: string;
  /** Request headers as the HTTP parser gave them (names in lower case). */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  connection: ConnectionInfo;
}

/** A response written as is: no web Response object, no body stream. */
export interface PlainResponse {
  status: number;
  headers: Readonly<Record<string, string>>;
  body: string;
  /** `body` encoded as UTF-8, when the app keeps it ready (then it is written as is). */
  bytes?: Uint8Array;
}

/** Anything with a web-standard fetch handler, e.g. a Hono app. */
export interface FetchApp {
  fetch(request: Request, env: ServeEnv): Response | Promise<Response>;
  /**
   * Optional fast path, tried first for every request: the answer `fetch` would give, made
   * without Request/Response objects, or null to let `fetch` answer. Must not throw.
   */
  fastFetch?(request: PlainRequest): PlainResponse | null;
  /**
   * The largest request body the app reads for a method and request target (the target as
   * sent: path and query), decided from the head alone; 0 (and the default) for a route that
   * takes none. A request that announces more is answered 413 and its connection closed
   * before a byte of its body is read.
   */
  bodyLimit?(method: string, target: string): number;
}
