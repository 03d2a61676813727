/**
 * The Hono middleware of delegated auth, and its synchronous check for the server's fast path.
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import type { ConnectionInfo, PlainRequest } from "../runtime/serve.ts";
import type { DelegatedAuth } from "./auth.ts";
import type { UserInfo } from "./auth_user.ts";

/** Hono variables set by the middleware. */
export interface AuthVariables {
  user: UserInfo;
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
