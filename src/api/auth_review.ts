/**
 * The request path of delegated authentication and authorization, with I/O: the union
 * authenticator (front proxy, client certificate, then a bearer token through a TokenReview)
 * and the authorizer (always-allowed paths and groups, then a SubjectAccessReview), with their
 * short caches. The fast path (auth_fast_path.ts) answers from what this path has cached.
 *
 * Group reviews: the HPA controller reads every metric of every HPA each sync (15 s by
 * default), each its own question (namespace, object, metric name), and the answers are cached
 * for only 10 s, so 2,000 HPAs with a ScalingSchedule metric each cost a steady ~130
 * SubjectAccessReviews a second. A user who asks about a second object of one API group and
 * verb within the allow TTL is asked about the whole group instead (resource `*`, no
 * subresource, all namespaces, all names: "may this user get every resource of
 * custom.metrics.k8s.io?"). Allowed, that one cached answer decides every such request of the
 * user (RBAC allows resource `*` only through a rule for every resource, which covers every
 * subresource, name and namespace too). Denied, it is cached as well and requests are asked
 * about one by one, as before.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { ConnectionInfo } from "../runtime/serve.ts";
import { type ActiveConfigRef, isLocal } from "./auth_config.ts";
import { forbiddenResponse, internalErrorResponse, unauthorizedResponse } from "./auth_status.ts";
import { ANONYMOUS, type UserInfo, withAuthenticatedGroup } from "./auth_user.ts";
import { verifyPeer } from "./client_cert.ts";
import { headerValues, identityHeaderNames, stripHeaders, userFromHeaders } from "./front_proxy.ts";
import { asRecord, type KubeRequest } from "./kube_request.ts";
import {
  pathAlwaysAllowed,
  type RequestAttributes,
  requestAttributes,
} from "./request_attributes.ts";

/** Where warnings go (a `Logger` from src/engine/logger.ts fits). */
export interface AuthLogger {
  warn(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
}

/** The outcome of {@linkcode ReviewPath.check}: the user, or the error response to send. */
export type AuthResult = { user: UserInfo; response?: undefined } | { response: Response };

/** What both request paths (this one and the fast path) decide with. */
export interface RequestPathOptions {
  /** The config in force. */
  config: ActiveConfigRef;
  /** The Kubernetes API; null outside a cluster. */
  kubeRequest: KubeRequest | null;
  alwaysAllowPaths: readonly string[];
  alwaysAllowGroups: readonly string[];
  /** The clock, ms since the epoch. */
  now: () => number;
}

/** Options of {@linkcode createReviewPath} beyond what both paths share. */
export interface ReviewPathOptions {
  tokenTtlMs: number;
  allowTtlMs: number;
  denyTtlMs: number;
  /**
   * Ask about the whole API group once a user asks about a second object of it within the
   * allow TTL (see the module doc; default true).
   */
  groupReviews?: boolean;
  /** SubjectAccessReviews in flight at most; more wait their turn (default 16). */
  maxConcurrentReviews?: number;
  log?: AuthLogger;
}

/** Counters of the review path (for own metrics and the bench). */
export interface ReviewStats {
  /** SubjectAccessReview answers cached (expired ones included until they are pushed out). */
  cacheEntries: number;
  /** SubjectAccessReviews sent. */
  reviews: number;
  /** Of those, group reviews (resource `*`). */
  groupReviews: number;
  /** Requests decided by a cached group review's allow. */
  decidedByGroup: number;
}

/** A SubjectAccessReview's answer. */
export interface ReviewDecision {
  allowed: boolean;
  reason: string;
}

/** The request path with I/O, and its cache of SubjectAccessReview answers. */
export interface ReviewPath {
  /** Authenticates and authorizes one request. */
  check(request: Request, connection: ConnectionInfo | undefined): Promise<AuthResult>;
  /** SubjectAccessReview answers by the JSON of their spec ({@linkcode sarSpec}). */
  sarCache: TtlCache<ReviewDecision>;
  /**
   * The key of the cached group review answer whose allow decides `attrs` for `user`: null
   * when group reviews are off or `attrs` already asks about the whole group.
   */
  groupKey(user: UserInfo, attrs: RequestAttributes): string | null;
  /** The key of the cached answer to the request's own review. */
  exactKey(user: UserInfo, attrs: RequestAttributes): string;
  /** The counters. */
  stats(): ReviewStats;
}

const MAX_CACHE_ENTRIES = 10_000;
/** Expired entries a `set` drops from the front of the cache at most. */
const PRUNE_PER_SET = 4;

/**
 * A cache whose entries expire; past its size the oldest entry goes. Each `set` also drops
 * up to {@linkcode PRUNE_PER_SET} expired entries from the oldest end, so that entries nobody
 * asks for again do not stay until the cache is full.
 */
export class TtlCache<V> {
  #entries = new Map<string, { value: V; expires: number }>();
  /** Entries held, expired ones not yet dropped included. */
  get size(): number {
    return this.#entries.size;
  }
  get(key: string, now: number): V | undefined {
    const e = this.#entries.get(key);
    if (!e) return undefined;
    if (e.expires <= now) {
      this.#entries.delete(key);
      return undefined;
    }
    return e.value;
  }
  /** Store `value` under `key` until `expires`; `now` lets expired entries go. */
  set(key: string, value: V, expires: number, now?: number): void {
    this.#entries.delete(key);
    if (now !== undefined) {
      let pruned = 0;
      for (const [k, e] of this.#entries) {
        if (pruned >= PRUNE_PER_SET || e.expires > now) break;
        this.#entries.delete(k);
        pruned++;
      }
    }
    if (this.#entries.size >= MAX_CACHE_ENTRIES) {
      this.#entries.delete(this.#entries.keys().next().value as string);
    }
    this.#entries.set(key, { value, expires });
  }
  clear(): void {
    this.#entries.clear();
  }
}

function bearerToken(request: Request): string | null {
  const header = request.headers.get("authorization")?.trim();
  if (!header) return null;
  const parts = header.split(" ");
  if (parts.length < 2 || parts[0].toLowerCase() !== "bearer" || !parts[1]) return null;
  return parts[1];
}

/**
 * The attributes of the group review that decides `attrs` when allowed: the same verb, API
 * group and version, resource `*`, no subresource, namespace or name; null for a non-resource
 * request or one that already asks about the whole group.
 */
export function groupAttributes(attrs: RequestAttributes): RequestAttributes | null {
  if (!attrs.isResourceRequest) return null;
  if (
    attrs.resource === "*" && attrs.subresource === "" && attrs.namespace === "" &&
    attrs.name === ""
  ) {
    return null;
  }
  return { ...attrs, namespace: "", resource: "*", subresource: "", name: "" };
}

/** The spec of the SubjectAccessReview that decides `attrs` for `user`. */
export function sarSpec(user: UserInfo, attrs: RequestAttributes): Record<string, unknown> {
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

/**
 * Build the request path with I/O.
 *
 * @example
 * ```ts
 * const review = createReviewPath(paths, { tokenTtlMs: 10_000, allowTtlMs: 10_000, denyTtlMs: 10_000 });
 * const result = await review.check(request, connection);
 * ```
 */
export function createReviewPath(
  paths: RequestPathOptions,
  options: ReviewPathOptions,
): ReviewPath {
  const { config, kubeRequest, alwaysAllowPaths, alwaysAllowGroups, now } = paths;
  const tokenTtl = options.tokenTtlMs;
  const allowTtl = options.allowTtlMs;
  const denyTtl = options.denyTtlMs;
  const tokenCache = new TtlCache<UserInfo | null>();
  const sarCache = new TtlCache<ReviewDecision>();
  const inflight = new Map<string, Promise<ReviewDecision>>();
  const hasCluster = kubeRequest !== null;
  const groupReviews = options.groupReviews ?? true;
  /** Per group review key: how many of the group's requests were asked about one by one. */
  const askedInGroup = new TtlCache<{ count: number }>();
  const stats = { reviews: 0, groupReviews: 0, decidedByGroup: 0 };
  const maxReviews = options.maxConcurrentReviews ?? 16;
  let reviewsInFlight = 0;
  const waiting: Array<() => void> = [];

  /** Run `send` when fewer than `maxReviews` reviews are in flight. */
  async function bounded<T>(send: () => Promise<T>): Promise<T> {
    if (reviewsInFlight >= maxReviews) await new Promise<void>((go) => waiting.push(go));
    reviewsInFlight++;
    try {
      return await send();
    } finally {
      reviewsInFlight--;
      waiting.shift()?.();
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
    tokenCache.set(key, user, now() + tokenTtl, now());
    return user;
  }

  /** Go's union authenticator: first success wins, else any error is 401, else anonymous. */
  async function authenticate(
    request: Request,
    connection: ConnectionInfo | undefined,
  ): Promise<{ user: UserInfo; frontProxy: boolean } | { errors: string[] }> {
    const errors: string[] = [];
    const peer = connection?.peerCertificate ?? null;
    const active = config.active;
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

  /** The answer to the review of `spec` (cached under `key`), asked once for concurrent askers. */
  async function review(
    key: string,
    spec: Record<string, unknown>,
    ofGroup: boolean,
  ): Promise<ReviewDecision> {
    const cached = sarCache.get(key, now());
    if (cached) return cached;
    let pending = inflight.get(key);
    if (!pending) {
      pending = bounded(async () => {
        stats.reviews++;
        if (ofGroup) stats.groupReviews++;
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
        const t = now();
        sarCache.set(key, decision, t + (decision.allowed ? allowTtl : denyTtl), t);
        return decision;
      }).finally(() => inflight.delete(key));
      inflight.set(key, pending);
    }
    return await pending;
  }

  /** The group review's spec and key for `attrs` (null without group reviews). */
  function groupReview(
    user: UserInfo,
    attrs: RequestAttributes,
  ): { key: string; spec: Record<string, unknown> } | null {
    if (!groupReviews) return null;
    const wide = groupAttributes(attrs);
    if (wide === null) return null;
    const spec = sarSpec(user, wide);
    return { key: JSON.stringify(spec), spec };
  }

  function groupKey(user: UserInfo, attrs: RequestAttributes): string | null {
    return groupReview(user, attrs)?.key ?? null;
  }

  /**
   * Decide `attrs` for `user`: a cached allow of the group review, else the request's own
   * cached (or pending) answer, else (when the user asked about another object of the group
   * within the allow TTL, and the group review is not cached) the group review, else the
   * request's own review. A failed group review falls back to the request's own.
   */
  async function subjectAccessReview(
    user: UserInfo,
    attrs: RequestAttributes,
  ): Promise<ReviewDecision> {
    const spec = sarSpec(user, attrs);
    const key = JSON.stringify(spec);
    const group = groupReview(user, attrs);
    const t = now();
    const groupCached = group ? sarCache.get(group.key, t) : undefined;
    if (groupCached?.allowed) {
      stats.decidedByGroup++;
      return groupCached;
    }
    const cached = sarCache.get(key, t);
    if (cached) return cached;
    const pending = inflight.get(key);
    if (pending) return await pending; // the same question, asked already
    if (group) {
      let asked = askedInGroup.get(group.key, t);
      if (asked && asked.count > 0 && groupCached === undefined) {
        try {
          const decision = await review(group.key, group.spec, true);
          if (decision.allowed) {
            stats.decidedByGroup++;
            return decision;
          }
        } catch (err) {
          options.log?.warn("group authorization review failed", {
            error: (err as Error).message,
          });
        }
      }
      if (!asked) {
        asked = { count: 0 };
        askedInGroup.set(group.key, asked, t + allowTtl, t);
      }
      asked.count++;
    }
    return await review(key, spec, false);
  }

  async function check(
    request: Request,
    connection: ConnectionInfo | undefined,
  ): Promise<AuthResult> {
    const url = new URL(request.url);
    if (isLocal(config.active, hasCluster)) {
      stripHeaders(request, identityHeaderNames(request, null));
      return { user: ANONYMOUS };
    }
    const authn = await authenticate(request, connection);
    // the app never sees identity headers: the front proxy's are consumed (as Go clears
    // them), anybody else's are ignored
    stripHeaders(request, identityHeaderNames(request, config.active.config.requestHeader));
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

  return {
    check,
    sarCache,
    groupKey,
    exactKey: (user, attrs) => JSON.stringify(sarSpec(user, attrs)),
    stats: () => ({ cacheEntries: sarCache.size, ...stats }),
  };
}
