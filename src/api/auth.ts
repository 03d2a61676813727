/**
 * Delegated authentication and authorization, as k8s.io/apiserver does it for an aggregated
 * API server: the options, the lifecycle of the config in force, and the two request paths put
 * together.
 *
 * - authentication, first success wins: the front proxy (a client certificate that chains to
 *   the requestheader CA, with an allowed CN; identity from `X-Remote-User`, `X-Remote-Group`,
 *   `X-Remote-Extra-*`), then a client certificate that chains to the client CA (user = CN,
 *   groups = O), then `Authorization: Bearer` through a TokenReview. A presented credential
 *   that fails, with none that succeeds, is 401. No credential at all is anonymous, allowed
 *   only on the always-allowed paths (401 elsewhere; the Go server would ask a
 *   SubjectAccessReview for `system:anonymous` instead, which clusters deny).
 * - authorization: always-allow paths, then always-allow groups (`system:masters`), then a
 *   SubjectAccessReview, allowed and denied answers cached (10 s by default). 403 with the Go
 *   server's message when denied. A user that asks about a second object of one API group
 *   within the allow TTL (the HPA controller, every sync) is asked about the whole group once
 *   (resource `*`); its allow decides all the group's requests of that verb (auth_review.ts).
 *
 * CA bundles and header names come from the options or from the
 * `kube-system/extension-apiserver-authentication` ConfigMap, polled for changes
 * (auth_config.ts). The TLS layer verifies a client certificate against the union of both CAs
 * (see {@linkcode DelegatedAuth.clientCaBundle}); client_cert.ts then checks which CA the
 * verified chain ends at. With no CA and no cluster (local use) every request is allowed, with
 * one warning at start.
 *
 * The parts: request_attributes.ts, front_proxy.ts, client_cert.ts, auth_config.ts, the request
 * path with I/O (auth_review.ts), the fast path without I/O (auth_fast_path.ts), the Hono
 * middleware (auth_middleware.ts), the error answers (auth_status.ts).
 *
 * @module
 */
import type { ConnectionInfo, PlainRequest } from "../runtime/serve.ts";
import {
  activate,
  type ActiveConfigRef,
  type AuthenticationConfig,
  configFromConfigMapResponse,
  CONFIGMAP_PATH,
  isLocal,
  sameConfig,
} from "./auth_config.ts";
import { createFastPath } from "./auth_fast_path.ts";
import {
  type AuthLogger,
  type AuthResult,
  createReviewPath,
  type RequestPathOptions,
  type ReviewStats,
} from "./auth_review.ts";
import type { RequestHeaderConfig } from "./front_proxy.ts";
import type { KubeRequest } from "./kube_request.ts";

// (tests/fakes/auth_api.ts imports the type from here)
export type { KubeRequest } from "./kube_request.ts";

/** Options of {@linkcode createDelegatedAuth}; defaults in {@linkcode DELEGATED_AUTH_DEFAULTS}. */
export interface DelegatedAuthOptions {
  /** The client CA bundle (PEM); when set, the ConfigMap's `client-ca-file` is not used. */
  clientCa?: string | null;
  /**
   * The front-proxy settings with the CA contents; when set, none of the ConfigMap's
   * requestheader keys are used.
   */
  requestHeader?: RequestHeaderConfig | null;
  /** The Kubernetes API; null outside a cluster (no TokenReview, SubjectAccessReview, ConfigMap). */
  kubeRequest?: KubeRequest | null;
  /** Read the extension-apiserver-authentication ConfigMap. */
  lookupConfigMap?: boolean;
  /** Start even if the ConfigMap cannot be read. */
  tolerateLookupFailure?: boolean;
  /** Seconds between ConfigMap polls. */
  configMapPollSeconds?: number;
  /** How long TokenReview answers are cached, seconds. */
  tokenCacheTtlSeconds?: number;
  /** Paths allowed without authorization; a trailing `*` is a prefix. */
  alwaysAllowPaths?: string[];
  /** Groups allowed without a SubjectAccessReview. */
  alwaysAllowGroups?: string[];
  /** How long allowed SubjectAccessReview answers are cached, seconds. */
  allowCacheTtlSeconds?: number;
  /** How long denied SubjectAccessReview answers are cached, seconds. */
  denyCacheTtlSeconds?: number;
  /**
   * Ask about a user's whole API group (resource `*`) once it asks about a second object of
   * it within the allow TTL (auth_review.ts; default true).
   */
  groupReviews?: boolean;
  /** The clock, ms since the epoch (default `Date.now`). */
  now?: () => number;
  log?: AuthLogger;
}

/** The defaults of {@linkcode DelegatedAuthOptions} (those of the Go generic API server). */
export const DELEGATED_AUTH_DEFAULTS: Readonly<{
  lookupConfigMap: boolean;
  tolerateLookupFailure: boolean;
  configMapPollSeconds: number;
  tokenCacheTtlSeconds: number;
  alwaysAllowPaths: readonly string[];
  alwaysAllowGroups: readonly string[];
  allowCacheTtlSeconds: number;
  denyCacheTtlSeconds: number;
}> = Object.freeze({
  lookupConfigMap: true,
  tolerateLookupFailure: false,
  configMapPollSeconds: 60,
  tokenCacheTtlSeconds: 10,
  alwaysAllowPaths: Object.freeze(["/healthz", "/readyz", "/livez"]),
  alwaysAllowGroups: Object.freeze(["system:masters"]),
  allowCacheTtlSeconds: 10,
  denyCacheTtlSeconds: 10,
});

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
  /** The SubjectAccessReview cache and counters (for own metrics). */
  reviewStats?(): ReviewStats;
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
  const defaults = DELEGATED_AUTH_DEFAULTS;
  const now = options.now ?? (() => Date.now());
  const kubeRequest = options.kubeRequest ?? null;
  const hasCluster = kubeRequest !== null;
  const lookup = (options.lookupConfigMap ?? defaults.lookupConfigMap) && hasCluster;
  const tolerateLookupFailure = options.tolerateLookupFailure ?? defaults.tolerateLookupFailure;
  const pollSeconds = options.configMapPollSeconds ?? defaults.configMapPollSeconds;
  const given = {
    clientCa: options.clientCa ?? null,
    requestHeader: options.requestHeader ?? null,
  };
  const config: ActiveConfigRef = {
    active: activate({ clientCa: given.clientCa ?? "", requestHeader: given.requestHeader }),
  };
  const paths: RequestPathOptions = {
    config,
    kubeRequest,
    alwaysAllowPaths: options.alwaysAllowPaths ?? defaults.alwaysAllowPaths,
    alwaysAllowGroups: options.alwaysAllowGroups ?? defaults.alwaysAllowGroups,
    now,
  };
  const review = createReviewPath(paths, {
    tokenTtlMs: (options.tokenCacheTtlSeconds ?? defaults.tokenCacheTtlSeconds) * 1000,
    allowTtlMs: (options.allowCacheTtlSeconds ?? defaults.allowCacheTtlSeconds) * 1000,
    denyTtlMs: (options.denyCacheTtlSeconds ?? defaults.denyCacheTtlSeconds) * 1000,
    groupReviews: options.groupReviews,
    log: options.log,
  });
  const fast = createFastPath(paths, review);
  const listeners: Array<(bundle: string) => void> = [];
  let timer: ReturnType<typeof setInterval> | undefined;

  function apply(next: AuthenticationConfig, message: string): void {
    const active = config.active;
    if (sameConfig(next, active.config)) return;
    const parsed = activate(next);
    const bundleChanged = parsed.bundle !== active.bundle;
    config.active = parsed;
    // the fast path's users and decisions were made with the config before
    fast.reset();
    options.log?.info(message, {
      clientCa: parsed.clientCa !== null,
      requestHeaderCa: parsed.requestHeaderCa !== null,
    });
    if (bundleChanged) { for (const l of listeners) l(parsed.bundle); }
  }

  async function readConfigMap(): Promise<AuthenticationConfig> {
    return configFromConfigMapResponse(
      await kubeRequest!({ method: "GET", path: CONFIGMAP_PATH }),
      given,
    );
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

  return {
    allowsWithoutIo: fast.allows,
    async start() {
      if (lookup) {
        try {
          apply(await readConfigMap(), "authentication config loaded from the configmap");
        } catch (err) {
          if (!tolerateLookupFailure) throw err;
          options.log?.warn("starting without the extension-apiserver-authentication configmap", {
            error: (err as Error).message,
          });
        }
        timer = setInterval(() => void refresh(), pollSeconds * 1000);
        (timer as { unref?: () => void }).unref?.();
      }
      if (isLocal(config.active, hasCluster)) {
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
    mode: () => (isLocal(config.active, hasCluster) ? "local" : "delegated"),
    config: () => config.active.config,
    clientCaBundle: () => config.active.bundle,
    onClientCaChange(listener) {
      listeners.push(listener);
    },
    check: review.check,
    reviewStats: review.stats,
  };
}
