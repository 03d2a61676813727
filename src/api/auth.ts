/**
 * Delegated authentication and authorization, as k8s.io/apiserver does it for an aggregated
 * API server:
 *
 * - authentication, first success wins: the front proxy (a client certificate that chains to
 *   the requestheader CA, with an allowed CN; identity from `X-Remote-User`, `X-Remote-Group`,
 *   `X-Remote-Extra-*`), then a client certificate that chains to the client CA (user = CN,
 *   groups = O), then `Authorization: Bearer` through a TokenReview. A presented credential
 *   that fails, with none that succeeds, is 401. No credential at all is anonymous, allowed
 *   only on `--authorization-always-allow-paths` (401 elsewhere; the Go server would ask a
 *   SubjectAccessReview for `system:anonymous` instead, which clusters deny).
 * - authorization: always-allow paths, then always-allow groups (`system:masters`), then a
 *   SubjectAccessReview, allowed and denied answers cached (10 s by default). 403 with the Go
 *   server's message when denied.
 *
 * CA bundles and header names come from the flags or from the
 * `kube-system/extension-apiserver-authentication` ConfigMap, polled for changes. The TLS
 * layer verifies a client certificate against the union of both CAs (see
 * {@linkcode DelegatedAuth.clientCaBundle}); this module then checks which CA the verified
 * chain ends at. With no CA and no cluster (local use) every request is allowed, with one
 * warning at start.
 */
import type { MiddlewareHandler } from "hono";
import { createHash, X509Certificate } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { ConnectionInfo, PeerCertificate, PlainRequest } from "../runtime/serve.ts";
import { parseCertificateBundle } from "./certs.ts";
import { statusBody, type StatusDetails, type StatusReason } from "./status.ts";

/** An authenticated user (k8s.io/apiserver `user.Info`). */
export interface UserInfo {
  name: string;
  uid?: string;
  groups: string[];
  extra: Record<string, string[]>;
}

/** The front-proxy (requestheader) settings. */
export interface RequestHeaderConfig {
  /** CA bundle (PEM) that the front proxy's client certificate must chain to. */
  clientCa: string;
  /** Allowed common names of that certificate; empty allows any. */
  allowedNames: string[];
  usernameHeaders: string[];
  uidHeaders: string[];
  groupHeaders: string[];
  extraHeaderPrefixes: string[];
}

/** The authentication material in force. */
export interface AuthenticationConfig {
  /** CA bundle (PEM) for client-certificate users; "" for none. */
  clientCa: string;
  /** Front-proxy settings, or null for none. */
  requestHeader: RequestHeaderConfig | null;
}

/** A call to the Kubernetes API (injected: the serve command passes its cluster client). */
export type KubeRequest = (request: {
  method: "GET" | "POST";
  /** Absolute API path, e.g. `/apis/authorization.k8s.io/v1/subjectaccessreviews`. */
  path: string;
  body?: unknown;
}) => Promise<{ status: number; body: unknown }>;

/** Where warnings go (a `Logger` from src/engine/logger.ts fits). */
export interface AuthLogger {
  warn(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
}

/** Options of {@linkcode createDelegatedAuth}. */
export interface DelegatedAuthOptions {
  /** `--client-ca-file` contents; when set, the ConfigMap's `client-ca-file` is not used. */
  clientCa?: string | null;
  /**
   * `--requestheader-*` with the CA contents; when set, none of the ConfigMap's requestheader
   * keys are used.
   */
  requestHeader?: RequestHeaderConfig | null;
  /** The Kubernetes API; null outside a cluster (no TokenReview, SubjectAccessReview, ConfigMap). */
  kubeRequest?: KubeRequest | null;
  /** Read the extension-apiserver-authentication ConfigMap (default true; `--authentication-skip-lookup`). */
  lookupConfigMap?: boolean;
  /** Start even if the ConfigMap cannot be read (`--authentication-tolerate-lookup-failure`). */
  tolerateLookupFailure?: boolean;
  /** Seconds between ConfigMap polls (default 60). */
  configMapPollSeconds?: number;
  /** `--authentication-token-webhook-cache-ttl`, seconds (default 10). */
  tokenCacheTtlSeconds?: number;
  /** `--authorization-always-allow-paths` (default the health paths); a trailing `*` is a prefix. */
  alwaysAllowPaths?: string[];
  /** Groups allowed without a SubjectAccessReview (default `system:masters`, as the Go server). */
  alwaysAllowGroups?: string[];
  /** `--authorization-webhook-cache-authorized-ttl`, seconds (default 10). */
  allowCacheTtlSeconds?: number;
  /** `--authorization-webhook-cache-unauthorized-ttl`, seconds (default 10). */
  denyCacheTtlSeconds?: number;
  /** The clock, ms since the epoch. */
  now?: () => number;
  log?: AuthLogger;
}

/** Request attributes as the Go server's RequestInfoFactory derives them. */
export interface RequestAttributes {
  isResourceRequest: boolean;
  /** URL path, percent-decoded. */
  path: string;
  verb: string;
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
}

/** The outcome of {@linkcode DelegatedAuth.check}: the user, or the error response to send. */
export type AuthResult = { user: UserInfo; response?: undefined } | { response: Response };

/** What the serve command uses. */
export interface DelegatedAuth {
  /**
   * Reads the ConfigMap once (unless skipped) and starts polling it; logs the local-mode
   * warning. Throws when the lookup fails and failures are not tolerated.
   */
  start(): Promise<void>;
  /** Polls the ConfigMap now; keeps the last good config on failure. */
  refresh(): Promise<void>;
  /** Stops polling. */
  stop(): void;
  /** "local": no CA and no cluster, everything allowed. */
  mode(): "local" | "delegated";
  /** The config in force. */
  config(): AuthenticationConfig;
  /**
   * The CA bundle the TLS layer must verify client certificates against: the client CA and
   * the requestheader CA together ("" for none). Pass it to `serveHttps({ clientCa })`.
   */
  clientCaBundle(): string;
  /** Called with the new bundle whenever it changes (wire it to `RunningServer.updateTls`). */
  onClientCaChange(listener: (bundle: string) => void): void;
  /** Authenticates and authorizes one request. */
  check(request: Request, connection: ConnectionInfo | undefined): Promise<AuthResult>;
  /**
   * Whether `check` would allow the request from what is known now, without I/O: local mode,
   * or a verified client certificate / front-proxy identity that needs no review or whose
   * SubjectAccessReview answer is cached. False means "ask `check`" (not "denied").
   */
  allowsWithoutIo?(request: PlainRequest): boolean;
}

/** Hono variables set by the middleware. */
export interface AuthVariables {
  user: UserInfo;
}

const CONFIGMAP_PATH =
  "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication";
const ANONYMOUS: UserInfo = {
  name: "system:anonymous",
  groups: ["system:unauthenticated"],
  extra: {},
};
const MAX_CACHE_ENTRIES = 10_000;

// ---------------------------------------------------------------------------------------------
// Status responses (metav1.Status JSON, field order as Go writes it)

function statusResponse(
  reason: StatusReason,
  message: string,
  details?: StatusDetails,
): Response {
  const body = statusBody(reason, message, { details });
  // Only the content type: the app's own Status errors (statusResponse) also set cache-control.
  return new Response(JSON.stringify(body), {
    status: body.code,
    headers: { "content-type": "application/json" },
  });
}

/** 401 as the Go server sends it. */
export function unauthorizedResponse(): Response {
  return statusResponse("Unauthorized", "Unauthorized");
}

/** Go's `%q` for the strings we quote (JSON quoting agrees for printable text). */
function goQuote(s: string): string {
  return JSON.stringify(s);
}

function sanitize(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/**
 * The message of a 403, as k8s.io/apiserver's `responsewriters.Forbidden` words it, e.g.
 * `pods.custom.metrics.k8s.io "*" is forbidden: User "alice" cannot get resource
 * "pods/queue-length" in API group "custom.metrics.k8s.io" in the namespace "default"`.
 */
export function forbiddenMessage(user: UserInfo, attrs: RequestAttributes, reason: string): string {
  let msg: string;
  if (!attrs.isResourceRequest) {
    msg = `User ${goQuote(user.name)} cannot ${attrs.verb} path ${goQuote(attrs.path)}`;
  } else {
    const resource = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
    msg =
      `User ${goQuote(user.name)} cannot ${attrs.verb} resource ${goQuote(resource)} in API group ${
        goQuote(attrs.apiGroup)
      }` + (attrs.namespace
        ? ` in the namespace ${goQuote(attrs.namespace)}`
        : " at the cluster scope");
  }
  const err = reason ? `${sanitize(msg)}: ${reason}` : sanitize(msg);
  if (!attrs.isResourceRequest || (!attrs.resource && !attrs.apiGroup)) return `forbidden: ${err}`;
  const gr = attrs.apiGroup ? `${attrs.resource}.${attrs.apiGroup}` : attrs.resource;
  return attrs.name
    ? `${gr} ${goQuote(attrs.name)} is forbidden: ${err}`
    : `${gr} is forbidden: ${err}`;
}

/** 403 as the Go server sends it. */
export function forbiddenResponse(
  user: UserInfo,
  attrs: RequestAttributes,
  reason: string,
): Response {
  const details: StatusDetails = {};
  if (attrs.isResourceRequest) {
    if (attrs.name) details.name = attrs.name;
    if (attrs.apiGroup) details.group = attrs.apiGroup;
    if (attrs.resource) details.kind = attrs.resource;
  }
  return statusResponse("Forbidden", forbiddenMessage(user, attrs, reason), details);
}

function internalErrorResponse(message: string): Response {
  return statusResponse("InternalError", `Internal error occurred: ${message}`, {
    causes: [{ message }],
  });
}

// ---------------------------------------------------------------------------------------------
// Request attributes

function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * Derive the authorization attributes of a request as k8s.io/apiserver's RequestInfoFactory
 * does: `/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/pods/*\/m` is resource `pods`,
 * name `*`, subresource `m`, verb `get`; `/apis/external.metrics.k8s.io/v1beta1/namespaces/ns/m`
 * is resource `m`, verb `list`; `/apis`, `/openapi/v2` are non-resource paths.
 */
export function requestAttributes(method: string, url: URL): RequestAttributes {
  // (every metric read asks this: a path without escapes is taken as it is)
  const raw = url.pathname;
  const escaped = raw.includes("%");
  const path = escaped ? raw.split("/").map(decodeSegment).join("/") : raw;
  const trimmed = raw.replace(/^\/+|\/+$/g, "");
  const segments = trimmed === ""
    ? []
    : escaped
    ? trimmed.split("/").map(decodeSegment)
    : trimmed.split("/");
  const attrs: RequestAttributes = {
    isResourceRequest: false,
    path,
    verb: method.toLowerCase(),
    apiGroup: "",
    apiVersion: "",
    namespace: "",
    resource: "",
    subresource: "",
    name: "",
  };
  let parts = segments;
  if (parts.length < 3 || (parts[0] !== "apis" && parts[0] !== "api")) return attrs;
  const grouped = parts[0] === "apis";
  parts = parts.slice(1);
  if (grouped) {
    if (parts.length < 3) return attrs;
    attrs.apiGroup = parts[0];
    parts = parts.slice(1);
  }
  attrs.isResourceRequest = true;
  attrs.apiVersion = parts[0];
  parts = parts.slice(1);
  if ((parts[0] === "proxy" || parts[0] === "watch") && parts.length >= 2) {
    attrs.verb = parts[0];
    parts = parts.slice(1);
  } else {
    attrs.verb = VERBS.get(method.toUpperCase()) ?? "";
  }
  if (parts[0] === "namespaces") {
    if (parts.length > 1) {
      attrs.namespace = parts[1];
      if (parts.length > 2 && parts[2] !== "status" && parts[2] !== "finalize") {
        parts = parts.slice(2);
      }
    }
  }
  if (parts.length >= 3 && attrs.verb !== "proxy") attrs.subresource = parts[2];
  if (parts.length >= 2) attrs.name = parts[1];
  if (parts.length >= 1) attrs.resource = parts[0];
  if (!attrs.name && attrs.verb === "get") {
    const watch = url.searchParams.get("watch");
    attrs.verb = watch === null || watch.toLowerCase() === "false" || watch === "0"
      ? "list"
      : "watch";
  }
  if (!attrs.name && attrs.verb === "delete") attrs.verb = "deletecollection";
  return attrs;
}

/** The authorization verb of each HTTP method on a resource path (Kubernetes' RequestInfo). */
const VERBS = new Map([
  ["POST", "create"],
  ["GET", "get"],
  ["HEAD", "get"],
  ["PUT", "update"],
  ["PATCH", "patch"],
  ["DELETE", "delete"],
]);

/** Whether `path` is covered by always-allow paths (exact, or prefix with a trailing `*`). */
export function pathAlwaysAllowed(path: string, allowPaths: readonly string[]): boolean {
  const p = path.replace(/^\//, "");
  for (const entry of allowPaths) {
    const e = entry.replace(/^\//, "");
    if (e.endsWith("*") ? p.startsWith(e.slice(0, -1)) : p === e) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Headers

/** Header values by lower-cased name, keeping repeated headers apart. */
function headerValues(
  request: Request | null,
  connection: ConnectionInfo | undefined,
): Map<string, string[]> {
  const raw = connection?.rawHeaders ?? [];
  const byName = new Map<string, string[]>();
  if (raw.length > 0) {
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = raw[i].toLowerCase();
      const list = byName.get(name);
      if (list) list.push(raw[i + 1]);
      else byName.set(name, [raw[i + 1]]);
    }
  } else if (request) {
    // no raw headers: repeated headers arrive joined with ", "
    request.headers.forEach((value, name) => byName.set(name.toLowerCase(), value.split(", ")));
  }
  return byName;
}

function unescapeExtraKey(key: string): string {
  try {
    return decodeURIComponent(key);
  } catch {
    return key;
  }
}

/** Reads the front-proxy identity headers; null when no user name is set. */
function userFromHeaders(
  headers: Map<string, string[]>,
  config: RequestHeaderConfig,
): UserInfo | null {
  const first = (names: string[]): string => {
    for (const n of names) {
      const v = headers.get(n.trim().toLowerCase())?.[0];
      if (v) return v;
    }
    return "";
  };
  const name = first(config.usernameHeaders);
  if (!name) return null;
  const groups: string[] = [];
  for (const n of config.groupHeaders) {
    for (const v of headers.get(n.trim().toLowerCase()) ?? []) if (v) groups.push(v);
  }
  const extra: Record<string, string[]> = {};
  for (const prefix of config.extraHeaderPrefixes) {
    const p = prefix.trim().toLowerCase();
    for (const [headerName, values] of headers) {
      if (!headerName.startsWith(p)) continue;
      const key = unescapeExtraKey(headerName.slice(p.length));
      (extra[key] ??= []).push(...values);
    }
  }
  const uid = first(config.uidHeaders);
  return { name, ...(uid ? { uid } : {}), groups, extra };
}

/** Every header that may carry a front-proxy identity (removed before the app sees them). */
function identityHeaderNames(request: Request, config: RequestHeaderConfig | null): string[] {
  const names = new Set<string>(["x-remote-user", "x-remote-group", "x-remote-uid"]);
  const prefixes = ["x-remote-extra-"];
  if (config) {
    for (const n of [...config.usernameHeaders, ...config.groupHeaders, ...config.uidHeaders]) {
      names.add(n.trim().toLowerCase());
    }
    prefixes.push(...config.extraHeaderPrefixes.map((p) => p.trim().toLowerCase()));
  }
  const out = [...names].filter((n) => request.headers.has(n));
  request.headers.forEach((_v, name) => {
    const n = name.toLowerCase();
    if (prefixes.some((p) => p && n.startsWith(p))) out.push(n);
  });
  return out;
}

function stripHeaders(request: Request, names: string[]): void {
  for (const n of names) {
    try {
      request.headers.delete(n);
    } catch {
      // immutable headers: the identity is taken from the verified user anyway
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Certificates

interface ParsedBundle {
  pem: string;
  certs: X509Certificate[];
  fingerprints: Set<string>;
}

function parseBundle(pem: string, source: string): ParsedBundle | null {
  if (!pem.trim()) return null;
  const certs = parseCertificateBundle(pem, source);
  return { pem, certs, fingerprints: new Set(certs.map((c) => c.fingerprint256)) };
}

const parsedChains = new WeakMap<PeerCertificate, X509Certificate[]>();

function chainOf(peer: PeerCertificate): X509Certificate[] {
  let chain = parsedChains.get(peer);
  if (!chain) {
    chain = peer.chain.map((der) => new X509Certificate(der));
    parsedChains.set(peer, chain);
  }
  return chain;
}

/**
 * The outcome of {@linkcode chainEndsIn} for each bundle and peer certificate. A peer
 * certificate is one object per connection (runtime/serve.ts) and a bundle one object per
 * loaded CA file, so a connection's chain is checked once per bundle, not on every request: a
 * signature check took 18.6% of the CPU while the aggregator's reads went over 8 connections.
 */
const chainChecks = new WeakMap<ParsedBundle, WeakMap<PeerCertificate, string | null>>();

/**
 * Checks that the TLS layer verified `peer` and that its chain ends at a certificate of
 * `bundle`. Returns an error message, or null when it does.
 */
function verifyPeer(peer: PeerCertificate, bundle: ParsedBundle, now: number): string | null {
  if (!peer.authorized) {
    return `verifying certificate ${peerId(peer)} failed: ${
      peer.authorizationError ?? "not verified"
    }`;
  }
  if (peer.notAfter && peer.notAfter <= now) {
    return `verifying certificate ${peerId(peer)} failed: x509: certificate has expired`;
  }
  let checked = chainChecks.get(bundle);
  if (!checked) chainChecks.set(bundle, checked = new WeakMap());
  let outcome = checked.get(peer);
  if (outcome === undefined) {
    outcome = chainEndsIn(peer, bundle, peerId(peer));
    checked.set(peer, outcome);
  }
  return outcome;
}

/** How errors name a client certificate (made only for an error: it was made per request). */
function peerId(peer: PeerCertificate): string {
  return `CN=${goQuote(peer.commonName)}`;
}

/** The chain part of {@linkcode verifyPeer}: null when `peer`'s chain ends in `bundle`. */
function chainEndsIn(peer: PeerCertificate, bundle: ParsedBundle, id: string): string | null {
  let chain: X509Certificate[];
  try {
    chain = chainOf(peer);
  } catch (err) {
    return `verifying certificate ${id} failed: ${(err as Error).message}`;
  }
  for (let i = 0; i < chain.length; i++) {
    const cert = chain[i];
    if (bundle.fingerprints.has(cert.fingerprint256)) return null;
    const next = chain[i + 1];
    if (next) {
      if (!(cert.checkIssued(next) && cert.verify(next.publicKey))) break;
      continue;
    }
    // the TLS layer may stop below the root: accept an issuer from the bundle
    if (bundle.certs.some((ca) => cert.checkIssued(ca) && cert.verify(ca.publicKey))) return null;
  }
  return `verifying certificate ${id} failed: x509: certificate signed by unknown authority`;
}

// ---------------------------------------------------------------------------------------------
// Caches

class TtlCache<V> {
  #entries = new Map<string, { value: V; expires: number }>();
  get(key: string, now: number): V | undefined {
    const e = this.#entries.get(key);
    if (!e) return undefined;
    if (e.expires <= now) {
      this.#entries.delete(key);
      return undefined;
    }
    return e.value;
  }
  set(key: string, value: V, expires: number): void {
    this.#entries.delete(key);
    if (this.#entries.size >= MAX_CACHE_ENTRIES) {
      this.#entries.delete(this.#entries.keys().next().value as string);
    }
    this.#entries.set(key, { value, expires });
  }
  clear(): void {
    this.#entries.clear();
  }
}

// ---------------------------------------------------------------------------------------------
// Config from the ConfigMap

function jsonStrings(data: Record<string, string>, key: string): string[] {
  const raw = data[key];
  if (raw === undefined || raw === "") return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error(`invalid JSON in key "${key}" of configmap extension-apiserver-authentication`);
  }
  if (!Array.isArray(parsed) || parsed.some((v) => typeof v !== "string")) {
    throw new Error(
      `key "${key}" of configmap extension-apiserver-authentication is not a list of strings`,
    );
  }
  return parsed as string[];
}

/**
 * Reads the authentication config out of the `extension-apiserver-authentication` ConfigMap's
 * data. Flags win: a `clientCa` or `requestHeader` given in `flags` replaces its part.
 */
export function configFromConfigMap(
  data: Record<string, string>,
  flags: { clientCa?: string | null; requestHeader?: RequestHeaderConfig | null } = {},
): AuthenticationConfig {
  let requestHeader: RequestHeaderConfig | null = flags.requestHeader ?? null;
  if (!requestHeader && data["requestheader-client-ca-file"]) {
    requestHeader = {
      clientCa: data["requestheader-client-ca-file"],
      allowedNames: jsonStrings(data, "requestheader-allowed-names"),
      usernameHeaders: jsonStrings(data, "requestheader-username-headers"),
      uidHeaders: jsonStrings(data, "requestheader-uid-headers"),
      groupHeaders: jsonStrings(data, "requestheader-group-headers"),
      extraHeaderPrefixes: jsonStrings(data, "requestheader-extra-headers-prefix"),
    };
  }
  return { clientCa: flags.clientCa || data["client-ca-file"] || "", requestHeader };
}

interface ActiveConfig {
  config: AuthenticationConfig;
  clientCa: ParsedBundle | null;
  requestHeaderCa: ParsedBundle | null;
  bundle: string;
  /** The front proxy's identity header names, lower-cased (null without a requestheader CA). */
  identityHeaders: IdentityHeaders | null;
  /** The fast path's memo of users and decisions; made anew with the config. */
  fast: FastMemo;
}

function activate(config: AuthenticationConfig): ActiveConfig {
  const clientCa = parseBundle(config.clientCa, "the client CA bundle");
  const rh = config.requestHeader;
  const requestHeaderCa = rh ? parseBundle(rh.clientCa, "the requestheader CA bundle") : null;
  const pems = [clientCa?.pem, requestHeaderCa?.pem].filter((p): p is string => !!p);
  const bundle = pems.map((p) => p.trim()).join("\n") + (pems.length ? "\n" : "");
  const identityHeaders = rh && requestHeaderCa ? identityHeadersOf(rh) : null;
  return {
    config,
    clientCa,
    requestHeaderCa,
    bundle,
    identityHeaders,
    fast: {
      byHeaders: new Map(),
      lastSent: new WeakMap(),
      byCertificate: new WeakMap(),
      decisions: 0,
    },
  };
}

function sameConfig(a: AuthenticationConfig, b: AuthenticationConfig): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

// ---------------------------------------------------------------------------------------------
// The fast path's memo: the aggregator sends the same few users and URLs over and over, and
// deriving the user, the request attributes and the SubjectAccessReview key cost ~8 us a read

interface IdentityHeaders {
  /** Exact names (lower case) by length: most headers are passed over on their length. */
  byLength: Map<number, string[]>;
  /** Prefixes of extra headers (lower case). */
  prefixes: string[];
}

function identityHeadersOf(rh: RequestHeaderConfig): IdentityHeaders {
  const byLength = new Map<number, string[]>();
  for (const n of [...rh.usernameHeaders, ...rh.groupHeaders, ...rh.uidHeaders]) {
    const name = n.trim().toLowerCase();
    const same = byLength.get(name.length) ?? [];
    if (!same.includes(name)) same.push(name);
    byLength.set(name.length, same);
  }
  const prefixes = rh.extraHeaderPrefixes.map((p) => p.trim().toLowerCase()).filter((p) => p);
  return { byLength, prefixes };
}

/** Whether `name`, in ASCII lower case, starts with `lower` (header names are ASCII tokens). */
function startsWithLower(name: string, lower: string): boolean {
  if (name.length < lower.length) return false;
  for (let i = 0; i < lower.length; i++) {
    let c = name.charCodeAt(i);
    if (c >= 65 && c <= 90) c += 32;
    if (c !== lower.charCodeAt(i)) return false;
  }
  return true;
}

function isIdentityHeader(name: string, names: IdentityHeaders): boolean {
  const same = names.byLength.get(name.length);
  if (same !== undefined) {
    for (const n of same) if (name === n || startsWithLower(name, n)) return true;
  }
  for (const p of names.prefixes) if (startsWithLower(name, p)) return true;
  return false;
}

/** A user the fast path knows, with what was decided for its requests. */
interface FastIdentity {
  user: UserInfo;
  /**
   * By URL (`METHOD url` for other methods than GET): allowed without a review (true), never
   * on the fast path (false), or the key of the SubjectAccessReview answer that decides.
   */
  decisions: Map<string, boolean | string>;
}

/** The identity headers a connection sent last (names and values as sent) and their user. */
interface LastIdentity {
  sent: string[];
  identity: FastIdentity | null;
}

interface FastMemo {
  /** Front-proxy users by their identity headers (null: the headers name no user). */
  byHeaders: Map<string, FastIdentity | null>;
  /** The front proxy's last identity headers on each connection (by its certificate). */
  lastSent: WeakMap<PeerCertificate, LastIdentity>;
  /** Client-certificate users, by the connection's certificate. */
  byCertificate: WeakMap<PeerCertificate, FastIdentity>;
  /** Decisions kept in all identities; past {@linkcode FAST_DECISIONS_LIMIT} all are dropped. */
  decisions: number;
}

const FAST_USERS_LIMIT = 1_000;
const FAST_DECISIONS_LIMIT = 20_000;

/** Whether `raw` carries exactly the identity headers `sent` (same names, values and order). */
function sentAgain(raw: readonly string[], names: IdentityHeaders, sent: string[]): boolean {
  let j = 0;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i];
    if (!isIdentityHeader(name, names)) continue;
    if (j + 1 >= sent.length || sent[j] !== name || sent[j + 1] !== raw[i + 1]) return false;
    j += 2;
  }
  return j === sent.length;
}

/** The identity headers of `raw`, as sent, in order. */
function identityHeadersSent(raw: readonly string[], names: IdentityHeaders): string[] {
  const sent: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (isIdentityHeader(raw[i], names)) sent.push(raw[i], raw[i + 1]);
  }
  return sent;
}

/** A key of identity headers as sent: names lower-cased; the user is a function of it. */
function identityKey(sent: string[]): string {
  let key = "";
  for (let i = 0; i + 1 < sent.length; i += 2) key += `${sent[i].toLowerCase()}\n${sent[i + 1]}\n`;
  return key;
}

// ---------------------------------------------------------------------------------------------
// The authenticator and authorizer

function withAuthenticatedGroup(user: UserInfo): UserInfo {
  if (
    user.name === ANONYMOUS.name ||
    user.groups.includes("system:authenticated") ||
    user.groups.includes("system:unauthenticated")
  ) return user;
  return { ...user, groups: [...user.groups, "system:authenticated"] };
}

function bearerToken(request: Request): string | null {
  const header = request.headers.get("authorization")?.trim();
  if (!header) return null;
  const parts = header.split(" ");
  if (parts.length < 2 || parts[0].toLowerCase() !== "bearer" || !parts[1]) return null;
  return parts[1];
}

function asRecord(value: unknown): Record<string, any> {
  return value && typeof value === "object" ? value as Record<string, any> : {};
}

/**
 * Build the delegated authenticator and authorizer.
 *
 * @example
 * ```ts
 * const auth = createDelegatedAuth({ kubeRequest, log });
 * await auth.start();
 * const server = await serveHttps(app, { ...tls, clientCa: auth.clientCaBundle() });
 * auth.onClientCaChange((clientCa) => server.updateTls({ clientCa }));
 * ```
 */
export function createDelegatedAuth(options: DelegatedAuthOptions = {}): DelegatedAuth {
  const now = options.now ?? (() => Date.now());
  const kubeRequest = options.kubeRequest ?? null;
  const lookup = (options.lookupConfigMap ?? true) && kubeRequest !== null;
  const alwaysAllowPaths = options.alwaysAllowPaths ?? ["/healthz", "/readyz", "/livez"];
  const alwaysAllowGroups = options.alwaysAllowGroups ?? ["system:masters"];
  const tokenTtl = (options.tokenCacheTtlSeconds ?? 10) * 1000;
  const allowTtl = (options.allowCacheTtlSeconds ?? 10) * 1000;
  const denyTtl = (options.denyCacheTtlSeconds ?? 10) * 1000;
  const flags = {
    clientCa: options.clientCa ?? null,
    requestHeader: options.requestHeader ?? null,
  };
  let active = activate({ clientCa: flags.clientCa ?? "", requestHeader: flags.requestHeader });
  const listeners: Array<(bundle: string) => void> = [];
  const tokenCache = new TtlCache<UserInfo | null>();
  const sarCache = new TtlCache<{ allowed: boolean; reason: string }>();
  const inflight = new Map<string, Promise<{ allowed: boolean; reason: string }>>();
  let timer: ReturnType<typeof setInterval> | undefined;

  const isLocal = (): boolean =>
    kubeRequest === null && active.clientCa === null && active.requestHeaderCa === null;

  function apply(config: AuthenticationConfig, message: string): void {
    if (sameConfig(config, active.config)) return;
    const next = activate(config);
    const bundleChanged = next.bundle !== active.bundle;
    active = next;
    options.log?.info(message, {
      clientCa: next.clientCa !== null,
      requestHeaderCa: next.requestHeaderCa !== null,
    });
    if (bundleChanged) { for (const l of listeners) l(next.bundle); }
  }

  async function readConfigMap(): Promise<AuthenticationConfig> {
    const res = await kubeRequest!({ method: "GET", path: CONFIGMAP_PATH });
    if (res.status === 404) return configFromConfigMap({}, flags);
    if (res.status !== 200) {
      const message = asRecord(res.body).message;
      throw new Error(
        `reading configmap kube-system/extension-apiserver-authentication: status ${res.status}${
          message ? `: ${message}` : ""
        }`,
      );
    }
    return configFromConfigMap(asRecord(asRecord(res.body).data), flags);
  }

  async function refresh(): Promise<void> {
    if (!lookup) return;
    try {
      apply(await readConfigMap(), "authentication config changed");
    } catch (err) {
      options.log?.warn("keeping the last good authentication config", {
        error: (err as Error).message,
      });
    }
  }

  async function tokenReview(token: string): Promise<UserInfo | null> {
    const key = createHash("sha256").update(token).digest("hex");
    const cached = tokenCache.get(key, now());
    if (cached !== undefined) return cached;
    const res = await kubeRequest!({
      method: "POST",
      path: "/apis/authentication.k8s.io/v1/tokenreviews",
      body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token } },
    });
    if (res.status !== 200 && res.status !== 201) {
      throw new Error(`tokenreview failed with status ${res.status}`);
    }
    const status = asRecord(asRecord(res.body).status);
    let user: UserInfo | null = null;
    if (status.authenticated === true) {
      const u = asRecord(status.user);
      user = {
        name: String(u.username ?? ""),
        ...(u.uid ? { uid: String(u.uid) } : {}),
        groups: Array.isArray(u.groups) ? u.groups.map(String) : [],
        extra: asRecord(u.extra) as Record<string, string[]>,
      };
    }
    tokenCache.set(key, user, now() + tokenTtl);
    return user;
  }

  /** Go's union authenticator: first success wins, else any error is 401, else anonymous. */
  async function authenticate(
    request: Request,
    connection: ConnectionInfo | undefined,
  ): Promise<{ user: UserInfo; frontProxy: boolean } | { errors: string[] }> {
    const errors: string[] = [];
    const peer = connection?.peerCertificate ?? null;
    const rh = active.config.requestHeader;
    if (peer && rh && active.requestHeaderCa) {
      const err = verifyPeer(peer, active.requestHeaderCa, now());
      if (err) errors.push(err);
      else if (rh.allowedNames.length > 0 && !rh.allowedNames.includes(peer.commonName)) {
        errors.push(`x509: subject with cn=${peer.commonName} is not in the allowed list`);
      } else {
        const user = userFromHeaders(headerValues(request, connection), rh);
        if (user) return { user: withAuthenticatedGroup(user), frontProxy: true };
      }
    }
    if (peer && active.clientCa) {
      const err = verifyPeer(peer, active.clientCa, now());
      if (err) errors.push(err);
      else if (peer.commonName) {
        return {
          user: withAuthenticatedGroup({
            name: peer.commonName,
            groups: [...peer.organizations],
            extra: {},
          }),
          frontProxy: false,
        };
      }
    }
    const token = kubeRequest ? bearerToken(request) : null;
    if (token) {
      try {
        const user = await tokenReview(token);
        if (user) return { user: withAuthenticatedGroup(user), frontProxy: false };
        errors.push("invalid bearer token");
      } catch (err) {
        errors.push((err as Error).message);
      }
    }
    if (errors.length > 0) return { errors };
    return { user: ANONYMOUS, frontProxy: false };
  }

  function sarSpec(user: UserInfo, attrs: RequestAttributes): Record<string, unknown> {
    const spec: Record<string, unknown> = attrs.isResourceRequest
      ? {
        resourceAttributes: Object.fromEntries(
          Object.entries({
            namespace: attrs.namespace,
            verb: attrs.verb,
            group: attrs.apiGroup,
            version: attrs.apiVersion,
            resource: attrs.resource,
            subresource: attrs.subresource,
            name: attrs.name,
          }).filter(([, v]) => v !== ""),
        ),
      }
      : { nonResourceAttributes: { path: attrs.path, verb: attrs.verb } };
    spec.user = user.name;
    if (user.groups.length) spec.groups = user.groups;
    if (Object.keys(user.extra).length) spec.extra = user.extra;
    if (user.uid) spec.uid = user.uid;
    return spec;
  }

  async function subjectAccessReview(
    user: UserInfo,
    attrs: RequestAttributes,
  ): Promise<{ allowed: boolean; reason: string }> {
    const spec = sarSpec(user, attrs);
    const key = JSON.stringify(spec);
    const cached = sarCache.get(key, now());
    if (cached) return cached;
    let pending = inflight.get(key);
    if (!pending) {
      pending = (async () => {
        const res = await kubeRequest!({
          method: "POST",
          path: "/apis/authorization.k8s.io/v1/subjectaccessreviews",
          body: { apiVersion: "authorization.k8s.io/v1", kind: "SubjectAccessReview", spec },
        });
        if (res.status !== 200 && res.status !== 201) {
          throw new Error(`subjectaccessreview failed with status ${res.status}`);
        }
        const status = asRecord(asRecord(res.body).status);
        const decision = {
          allowed: status.allowed === true && status.denied !== true,
          reason: typeof status.reason === "string" ? status.reason : "",
        };
        sarCache.set(key, decision, now() + (decision.allowed ? allowTtl : denyTtl));
        return decision;
      })().finally(() => inflight.delete(key));
      inflight.set(key, pending);
    }
    return await pending;
  }

  async function check(
    request: Request,
    connection: ConnectionInfo | undefined,
  ): Promise<AuthResult> {
    const url = new URL(request.url);
    if (isLocal()) {
      stripHeaders(request, identityHeaderNames(request, null));
      return { user: ANONYMOUS };
    }
    const authn = await authenticate(request, connection);
    // the app never sees identity headers: the front proxy's are consumed (as Go clears
    // them), anybody else's are ignored
    stripHeaders(request, identityHeaderNames(request, active.config.requestHeader));
    if ("errors" in authn) {
      options.log?.warn("unable to authenticate the request", {
        path: url.pathname,
        errors: authn.errors.join("; "),
      });
      return { response: unauthorizedResponse() };
    }
    const attrs = requestAttributes(request.method, url);
    const user = authn.user;
    if (!attrs.isResourceRequest && pathAlwaysAllowed(attrs.path, alwaysAllowPaths)) {
      return { user };
    }
    if (user === ANONYMOUS) return { response: unauthorizedResponse() };
    if (user.groups.some((g) => alwaysAllowGroups.includes(g))) return { user };
    if (!kubeRequest) return { user }; // no cluster: authenticated users are allowed (warned at start)
    try {
      const decision = await subjectAccessReview(user, attrs);
      if (decision.allowed) return { user };
      return { response: forbiddenResponse(user, attrs, decision.reason) };
    } catch (err) {
      options.log?.warn("authorization failed", { error: (err as Error).message });
      return { response: internalErrorResponse((err as Error).message) };
    }
  }

  /**
   * The certificate-based part of `authenticate`, when it decides alone (else null): the
   * front proxy's user (its certificate checked on every request, its headers looked up in the
   * memo), else the client certificate's.
   */
  function fastIdentity(connection: ConnectionInfo): FastIdentity | null {
    const peer = connection.peerCertificate;
    if (!peer) return null;
    const memo = active.fast;
    const rh = active.config.requestHeader;
    if (rh && active.requestHeaderCa && active.identityHeaders) {
      if (verifyPeer(peer, active.requestHeaderCa, now()) !== null) return null;
      if (rh.allowedNames.length > 0 && !rh.allowedNames.includes(peer.commonName)) return null;
      const raw = connection.rawHeaders;
      if (raw.length === 0) return null;
      const names = active.identityHeaders;
      let last = memo.lastSent.get(peer);
      if (last === undefined || !sentAgain(raw, names, last.sent)) {
        const sent = identityHeadersSent(raw, names);
        const key = identityKey(sent);
        let identity = memo.byHeaders.get(key);
        if (identity === undefined) {
          const user = userFromHeaders(headerValues(null, connection), rh);
          identity = user ? { user: withAuthenticatedGroup(user), decisions: new Map() } : null;
          if (memo.byHeaders.size >= FAST_USERS_LIMIT) forgetFastPath(memo);
          memo.byHeaders.set(key, identity);
        }
        last = { sent, identity };
        memo.lastSent.set(peer, last);
      }
      const known = last.identity;
      if (known !== null) return known;
    }
    if (active.clientCa && peer.commonName) {
      if (verifyPeer(peer, active.clientCa, now()) !== null) return null;
      let known = memo.byCertificate.get(peer);
      if (known === undefined) {
        known = {
          user: withAuthenticatedGroup({
            name: peer.commonName,
            groups: [...peer.organizations],
            extra: {},
          }),
          decisions: new Map(),
        };
        memo.byCertificate.set(peer, known);
      }
      return known;
    }
    return null;
  }

  /** Drops every user and decision of the memo (it keeps to its limits this way). */
  function forgetFastPath(memo: FastMemo): void {
    memo.byHeaders.clear();
    memo.lastSent = new WeakMap();
    memo.byCertificate = new WeakMap();
    memo.decisions = 0;
  }

  /** What decides `method url` for `identity`, as {@linkcode FastIdentity.decisions} keeps it. */
  function fastDecision(identity: FastIdentity, method: string, url: string): boolean | string {
    const key = method === "GET" ? url : `${method} ${url}`;
    let decision = identity.decisions.get(key);
    if (decision !== undefined) return decision;
    decision = decide(identity.user, method, url);
    const memo = active.fast;
    if (memo.decisions >= FAST_DECISIONS_LIMIT) forgetFastPath(memo);
    memo.decisions++;
    identity.decisions.set(key, decision);
    return decision;
  }

  function decide(user: UserInfo, method: string, target: string): boolean | string {
    let url: URL;
    try {
      url = new URL(target, "https://localhost");
    } catch {
      return false;
    }
    const attrs = requestAttributes(method, url);
    if (!attrs.isResourceRequest && pathAlwaysAllowed(attrs.path, alwaysAllowPaths)) return true;
    if (user.groups.some((g) => alwaysAllowGroups.includes(g))) return true;
    if (!kubeRequest) return true;
    return JSON.stringify(sarSpec(user, attrs));
  }

  function allowsWithoutIo(request: PlainRequest): boolean {
    if (isLocal()) return true;
    const identity = fastIdentity(request.connection);
    if (identity === null) return false;
    const decision = fastDecision(identity, request.method, request.url);
    if (typeof decision === "boolean") return decision;
    return sarCache.get(decision, now())?.allowed === true;
  }

  return {
    allowsWithoutIo,
    async start() {
      if (lookup) {
        try {
          apply(await readConfigMap(), "authentication config loaded from the configmap");
        } catch (err) {
          if (!options.tolerateLookupFailure) throw err;
          options.log?.warn("starting without the extension-apiserver-authentication configmap", {
            error: (err as Error).message,
          });
        }
        timer = setInterval(() => void refresh(), (options.configMapPollSeconds ?? 60) * 1000);
        (timer as { unref?: () => void }).unref?.();
      }
      if (isLocal()) {
        options.log?.warn(
          "no client CA and no cluster: authentication and authorization are off, every request is allowed",
        );
      } else if (!kubeRequest) {
        options.log?.warn(
          "no cluster: bearer tokens and SubjectAccessReview are off, every authenticated request is allowed",
        );
      }
    },
    refresh,
    stop() {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
    },
    mode: () => (isLocal() ? "local" : "delegated"),
    config: () => active.config,
    clientCaBundle: () => active.bundle,
    onClientCaChange(listener) {
      listeners.push(listener);
    },
    check,
  };
}

/** Options of {@linkcode createAuthMiddleware}. */
export interface AuthMiddlewareOptions {
  auth: DelegatedAuth;
}

/**
 * Hono middleware for the app's `authorize` hook: answers 401/403/500 itself, or sets
 * `c.var.user` and continues. Reads the TLS peer from `c.env.connection` (set by
 * `serveHttps`).
 *
 * @example
 * ```ts
 * const app = createApp({ store, authorize: createAuthMiddleware({ auth }) });
 * ```
 */
export function createAuthMiddleware(
  options: AuthMiddlewareOptions,
): MiddlewareHandler<{ Variables: AuthVariables }> & {
  fast: (request: PlainRequest) => true | null;
} {
  const middleware: MiddlewareHandler<{ Variables: AuthVariables }> = async (c, next) => {
    const env = c.env as { connection?: ConnectionInfo } | undefined;
    const result = await options.auth.check(c.req.raw, env?.connection);
    if (result.response) return result.response;
    c.set("user", result.user);
    await next();
  };
  // the server's fast path (createApp's `authorize.fast`): requests allowed without I/O
  const fast = (request: PlainRequest): true | null =>
    options.auth.allowsWithoutIo?.(request) === true ? true : null;
  return Object.assign(middleware, { fast });
}

/** The flag values {@linkcode authOptionsFromFlags} reads (names as on the command line). */
export type AuthFlagValues = Record<string, string | number | boolean | string[] | null>;

/**
 * Turn the `serve` flags into {@linkcode DelegatedAuthOptions}, reading the CA files.
 * `kubeRequest` and `log` are added by the caller.
 */
export async function authOptionsFromFlags(flags: AuthFlagValues): Promise<DelegatedAuthOptions> {
  const read = async (flag: string): Promise<string | null> => {
    const path = flags[flag];
    if (typeof path !== "string" || path === "") return null;
    try {
      return await readFile(path, "utf8");
    } catch (err) {
      throw new Error(`cannot read --${flag} "${path}": ${(err as Error).message}`);
    }
  };
  const list = (flag: string): string[] => {
    const v = flags[flag];
    return Array.isArray(v) ? v : typeof v === "string" && v ? [v] : [];
  };
  const num = (flag: string, dflt: number): number =>
    typeof flags[flag] === "number" ? flags[flag] as number : dflt;
  const clientCa = await read("client-ca-file");
  const requestHeaderCa = await read("requestheader-client-ca-file");
  if (clientCa !== null) {
    parseCertificateBundle(clientCa, `--client-ca-file "${flags["client-ca-file"]}"`);
  }
  if (requestHeaderCa !== null) {
    parseCertificateBundle(
      requestHeaderCa,
      `--requestheader-client-ca-file "${flags["requestheader-client-ca-file"]}"`,
    );
  }
  return {
    clientCa,
    requestHeader: requestHeaderCa === null ? null : {
      clientCa: requestHeaderCa,
      allowedNames: list("requestheader-allowed-names"),
      usernameHeaders: list("requestheader-username-headers"),
      uidHeaders: list("requestheader-uid-headers"),
      groupHeaders: list("requestheader-group-headers"),
      extraHeaderPrefixes: list("requestheader-extra-headers-prefix"),
    },
    lookupConfigMap: flags["authentication-skip-lookup"] !== true,
    tolerateLookupFailure: flags["authentication-tolerate-lookup-failure"] === true,
    tokenCacheTtlSeconds: num("authentication-token-webhook-cache-ttl", 10),
    alwaysAllowPaths: flags["authorization-always-allow-paths"] === undefined
      ? undefined
      : list("authorization-always-allow-paths"),
    allowCacheTtlSeconds: num("authorization-webhook-cache-authorized-ttl", 10),
    denyCacheTtlSeconds: num("authorization-webhook-cache-unauthorized-ttl", 10),
  };
}
