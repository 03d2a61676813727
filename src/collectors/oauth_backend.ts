/**
 * What the ZMON and Nakadi collectors share: the backend's endpoint, the platform IAM token (a
 * static token, else the file `<credentials dir>/<token name>-token-secret`, re-read when it
 * changes) and the response cap; their requests go through `fetchCapped` (http_get.ts).
 */
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { abortReasonText, DEFAULT_MAX_RESPONSE_BYTES, RequestAbortedError } from "./http_get.ts";
import { BackendNotConfiguredError } from "./types.ts";

/** The folder of the platform IAM token files when none is given. */
export const DEFAULT_CREDENTIALS_DIR = "/meta/credentials";

/** Gives the bearer token for a request. */
export interface TokenSource {
  /** The current token; throws with a message naming the file when there is none. */
  token(): Promise<string>;
}

/** Options of {@linkcode createTokenSource}. */
export interface TokenSourceOptions {
  /** A static token; wins over the file when set. */
  staticToken?: string | null;
  /** Folder with token files. */
  credentialsDir: string;
  /** Token name: the file is `<name>-token-secret`. */
  name: string;
}

/**
 * A token source as Zalando's platform IAM mounts tokens: one file per token, named
 * `<name>-token-secret`, rotated in place. The file is read again when its modification time,
 * size or inode changes.
 *
 * @example
 * ```ts
 * const source = createTokenSource({ credentialsDir: "/meta/credentials", name: "nakadi" });
 * await source.token(); // the content of /meta/credentials/nakadi-token-secret, trimmed
 * ```
 */
export function createTokenSource(options: TokenSourceOptions): TokenSource {
  const fixed = options.staticToken;
  if (fixed) return { token: () => Promise.resolve(fixed) };
  const path = join(options.credentialsDir, `${options.name}-token-secret`);
  let cachedStamp = "";
  let cached = "";
  return {
    async token(): Promise<string> {
      let stamp: string;
      try {
        const s = await stat(path);
        stamp = `${s.mtimeMs}/${s.size}/${s.ino}`;
        if (stamp === cachedStamp) return cached;
        const text = (await readFile(path, "utf8")).trim();
        if (text === "") throw new Error("the file is empty");
        cached = text;
        cachedStamp = stamp;
        return cached;
      } catch (e) {
        throw new Error(
          `cannot read token "${options.name}" from ${path}: ${
            (e as Error).message
          } (set --token or mount the file)`,
        );
      }
    },
  };
}

/** How a ZMON or Nakadi collector reaches its backend (what `--zmon-*`, `--nakadi-*` set). */
export interface OAuthBackendOptions {
  /** The backend's http(s) URL; unset or empty: the backend is not configured. */
  endpoint?: string | null;
  /** A static token; wins over the token file when set. */
  token?: string | null;
  /** Folder with token files; {@linkcode DEFAULT_CREDENTIALS_DIR} when unset. */
  credentialsDir?: string | null;
  /** The token file is `<tokenName>-token-secret`; each collector has its default. */
  tokenName?: string | null;
  /** Largest response read, bytes; `DEFAULT_MAX_RESPONSE_BYTES` (http_get.ts) when unset. */
  maxResponseBytes?: number | null;
}

/** What a ZMON or Nakadi collector uses: the endpoint, its token source, the response cap. */
export interface OAuthBackend {
  /** The endpoint's http(s) URL, as given. */
  endpoint: string;
  tokens: TokenSource;
  maxBytes: number;
}

/** What {@linkcode oauthBackend} needs besides the options: names for defaults and messages. */
export interface OAuthBackendContext {
  /** The collector type (`zmon`, `nakadi`), for messages. */
  type: string;
  /** The token name when the options give none (`zmon`, `nakadi`). */
  defaultTokenName: string;
  /** What sets the endpoint, for the "not configured" message (`--nakadi-endpoint`). */
  endpointSetting: string;
  /** Names the metric in errors. */
  metricName: string;
}

/**
 * A backend's endpoint, token source and response cap from its options. Throws
 * {@linkcode BackendNotConfiguredError} without an endpoint (`<type> metric <name> needs
 * <endpointSetting>`), and an Error when it is not an http(s) URL.
 */
export function oauthBackend(
  options: OAuthBackendOptions,
  context: OAuthBackendContext,
): OAuthBackend {
  const endpoint = options.endpoint;
  if (typeof endpoint !== "string" || endpoint === "") {
    throw new BackendNotConfiguredError(
      `${context.type} metric ${context.metricName} needs ${context.endpointSetting}`,
    );
  }
  try {
    const u = new URL(endpoint);
    if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error("scheme");
  } catch {
    throw new Error(`invalid ${context.endpointSetting} "${endpoint}": want an http(s) URL`);
  }
  const max = options.maxResponseBytes;
  return {
    endpoint,
    tokens: createTokenSource({
      staticToken: options.token || null,
      credentialsDir: options.credentialsDir || DEFAULT_CREDENTIALS_DIR,
      name: options.tokenName || context.defaultTokenName,
    }),
    maxBytes: typeof max === "number" && max > 0 ? max : DEFAULT_MAX_RESPONSE_BYTES,
  };
}

/** A short, single-line excerpt of a response body for error messages. */
export function bodyExcerpt(text: string, max = 200): string {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length > max ? `${one.slice(0, max)}...` : one;
}

/** Wait `ms`, or reject with {@linkcode RequestAbortedError} when `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(new RequestAbortedError(`${what} aborted: ${abortReasonText(signal)}`));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new RequestAbortedError(`${what} aborted: ${abortReasonText(signal)}`));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
