/**
 * What the ZMON and Nakadi collectors share: the endpoint flag, the platform IAM token (the
 * `--token` flag, else the file `<credentials-dir>/<name>-token-secret`, re-read when it
 * changes) and the response cap; their requests go through `fetchCapped` (http_get.ts).
 */
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { abortReasonText, maxResponseBytes, RequestAbortedError } from "./http_get.ts";
import { BackendNotConfiguredError } from "./types.ts";

/** Gives the bearer token for a request. */
export interface TokenSource {
  /** The current token; throws with a message naming the file when there is none. */
  token(): Promise<string>;
}

/** Options of {@linkcode createTokenSource}. */
export interface TokenSourceOptions {
  /** A static token (`--token`); wins over the file when set. */
  staticToken?: string | null;
  /** Folder with token files (`--credentials-dir`). */
  credentialsDir: string;
  /** Token name (`--zmon-token-name`, `--nakadi-token-name`): the file is `<name>-token-secret`. */
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

/** Build the token source of a backend from the serve flags. */
export function tokenSourceFromFlags(
  flags: Record<string, unknown>,
  options: { nameFlag: string; defaultName: string },
): TokenSource {
  const str = (k: string): string | null => {
    const v = flags[k];
    return typeof v === "string" && v !== "" ? v : null;
  };
  return createTokenSource({
    staticToken: str("token"),
    credentialsDir: str("credentials-dir") ?? "/meta/credentials",
    name: str(options.nameFlag) ?? options.defaultName,
  });
}

/** What a ZMON or Nakadi collector takes from the serve flags. */
export interface OAuthBackend {
  /** The endpoint flag's http(s) URL, as given. */
  endpoint: string;
  tokens: TokenSource;
  /** `--max-response-bytes`. */
  maxBytes: number;
}

/** Options of {@linkcode oauthBackendFromFlags}. */
export interface OAuthBackendOptions {
  /** The collector type (`zmon`, `nakadi`): the token is `--<type>-token-name`, default `<type>`. */
  type: string;
  /** The flag holding the endpoint (`nakadi-endpoint`). */
  endpointFlag: string;
  /** Names the metric in errors. */
  metricName: string;
}

/**
 * Read a backend's endpoint, token source and response cap from the serve flags. Throws when
 * the endpoint flag is missing (`<type> metric <name> needs --<flag>`) or not an http(s) URL.
 */
export function oauthBackendFromFlags(
  flags: Record<string, unknown>,
  options: OAuthBackendOptions,
): OAuthBackend {
  const { type, endpointFlag } = options;
  const endpoint = flags[endpointFlag];
  if (typeof endpoint !== "string" || endpoint === "") {
    throw new BackendNotConfiguredError(
      `${type} metric ${options.metricName} needs --${endpointFlag}`,
    );
  }
  try {
    const u = new URL(endpoint);
    if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error("scheme");
  } catch {
    throw new Error(`invalid --${endpointFlag} "${endpoint}": want an http(s) URL`);
  }
  return {
    endpoint,
    tokens: tokenSourceFromFlags(flags, { nameFlag: `${type}-token-name`, defaultName: type }),
    maxBytes: maxResponseBytes(flags),
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
