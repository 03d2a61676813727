/**
 * The fast path of delegated auth: whether a request would be allowed from what is known now,
 * without I/O (local mode, or a verified client certificate or front-proxy identity that needs
 * no review or whose SubjectAccessReview answer is cached). The aggregator sends the same few
 * users and URLs over and over, and deriving the user, the request attributes and the
 * SubjectAccessReview key cost ~8 us a read: a memo keeps them, made anew with the config.
 *
 * @module
 */
import type { ConnectionInfo, PeerCertificate, PlainRequest } from "../runtime/serve.ts";
import { isLocal } from "./auth_config.ts";
import type { RequestPathOptions, ReviewPath } from "./auth_review.ts";
import { type UserInfo, withAuthenticatedGroup } from "./auth_user.ts";
import { verifyPeer } from "./client_cert.ts";
import {
  headerValues,
  identityHeadersSent,
  identityKey,
  sentAgain,
  userFromHeaders,
} from "./front_proxy.ts";
import {
  pathAlwaysAllowed,
  type RequestAttributes,
  requestAttributes,
} from "./request_attributes.ts";

/**
 * The SubjectAccessReview answers that decide a request, by their cache keys: the group
 * review's (one string shared by all the URLs of the group; null for none) and the request's
 * own, made the first time it is needed (while the group's allow is cached, never: each key
 * is ~350 bytes, and the HPA controller reads thousands of URLs).
 */
interface FastKeys {
  group: string | null;
  exact: string | null;
  method: string;
  url: string;
}

/** A user the fast path knows, with what was decided for its requests. */
interface FastIdentity {
  user: UserInfo;
  /**
   * By URL (`METHOD url` for other methods than GET): allowed without a review (true), never
   * on the fast path (false), or the answers that decide (a cached allow of either allows).
   */
  decisions: Map<string, boolean | FastKeys>;
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
  /** One copy of each group review key (many URLs share one). */
  groupKeys: Map<string, string>;
}

const FAST_USERS_LIMIT = 1_000;
const FAST_DECISIONS_LIMIT = 20_000;

function newFastMemo(): FastMemo {
  return {
    byHeaders: new Map(),
    lastSent: new WeakMap(),
    byCertificate: new WeakMap(),
    decisions: 0,
    groupKeys: new Map(),
  };
}

/** The fast path of {@linkcode createFastPath}. */
export interface FastPath {
  /** Whether the request is allowed without I/O; false means "ask the review path". */
  allows(request: PlainRequest): boolean;
  /** Drops the memo (call it when the config in force changes). */
  reset(): void;
}

/**
 * Build the fast path over the review path's SubjectAccessReview answers.
 *
 * @example
 * ```ts
 * const fast = createFastPath(paths, review);
 * if (fast.allows(request)) serveWithoutIo(request);
 * ```
 */
export function createFastPath(
  paths: RequestPathOptions,
  review: Pick<ReviewPath, "sarCache" | "groupKey" | "exactKey">,
): FastPath {
  const { sarCache } = review;
  const { config, kubeRequest, alwaysAllowPaths, alwaysAllowGroups, now } = paths;
  const hasCluster = kubeRequest !== null;
  /** The memo of the config in force. */
  let memo = newFastMemo();

  /**
   * The certificate-based part of `authenticate`, when it decides alone (else null): the
   * front proxy's user (its certificate checked on every request, its headers looked up in the
   * memo), else the client certificate's.
   */
  function fastIdentity(connection: ConnectionInfo): FastIdentity | null {
    const peer = connection.peerCertificate;
    if (!peer) return null;
    const active = config.active;
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
    memo.groupKeys.clear();
  }

  /** What decides `method url` for `identity`, as {@linkcode FastIdentity.decisions} keeps it. */
  function fastDecision(
    identity: FastIdentity,
    method: string,
    url: string,
  ): boolean | FastKeys {
    const key = method === "GET" ? url : `${method} ${url}`;
    let decision = identity.decisions.get(key);
    if (decision !== undefined) return decision;
    decision = decide(identity.user, method, url);
    if (memo.decisions >= FAST_DECISIONS_LIMIT) forgetFastPath(memo);
    memo.decisions++;
    identity.decisions.set(key, decision);
    return decision;
  }

  /** The request attributes of `method target`, or null when the target does not parse. */
  function attributesOf(method: string, target: string): RequestAttributes | null {
    try {
      return requestAttributes(method, new URL(target, "https://localhost"));
    } catch {
      return null;
    }
  }

  function decide(user: UserInfo, method: string, target: string): boolean | FastKeys {
    const attrs = attributesOf(method, target);
    if (attrs === null) return false;
    if (!attrs.isResourceRequest && pathAlwaysAllowed(attrs.path, alwaysAllowPaths)) return true;
    if (user.groups.some((g) => alwaysAllowGroups.includes(g))) return true;
    if (!kubeRequest) return true;
    let group = review.groupKey(user, attrs);
    if (group !== null) {
      const shared = memo.groupKeys.get(group);
      if (shared === undefined) memo.groupKeys.set(group, group);
      else group = shared;
    }
    return { group, exact: null, method, url: target };
  }

  function allowsWithoutIo(request: PlainRequest): boolean {
    if (isLocal(config.active, hasCluster)) return true;
    const identity = fastIdentity(request.connection);
    if (identity === null) return false;
    const decision = fastDecision(identity, request.method, request.url);
    if (typeof decision === "boolean") return decision;
    const t = now();
    if (decision.group !== null && sarCache.get(decision.group, t)?.allowed === true) return true;
    if (decision.exact === null) {
      // (decide parsed the same target, so it parses)
      decision.exact = review.exactKey(
        identity.user,
        attributesOf(decision.method, decision.url)!,
      );
    }
    return sarCache.get(decision.exact, t)?.allowed === true;
  }

  return {
    allows: allowsWithoutIo,
    reset() {
      memo = newFastMemo();
    },
  };
}
