/**
 * What the ZMON and Nakadi collectors share: the platform IAM token (the `--token` flag, else the
 * file `<credentials-dir>/<name>-token-secret`, re-read when it changes) and one HTTP request with
 * a deadline, an abort signal and a cap on the bytes read. Errors name the URL.
 */
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";

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

/** Default cap on a backend response, bytes (the default of `--max-response-bytes`). */
export const DEFAULT_BACKEND_MAX_BYTES = 10 * 1024 * 1024;

/** The `--max-response-bytes` flag, or the default. */
export function maxResponseBytes(flags: Record<string, unknown>): number {
  const v = flags["max-response-bytes"];
  return typeof v === "number" && v > 0 ? v : DEFAULT_BACKEND_MAX_BYTES;
}

/** Options of {@linkcode backendRequest}. */
export interface BackendRequestOptions {
  fetch: typeof fetch;
  /** Aborts the request (the collection's signal). */
  signal: AbortSignal;
  /** Deadline of the whole request including the body, seconds. */
  timeoutSeconds: number;
  /** Largest body read, bytes. */
  maxBytes: number;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
}

/** A response read in full. */
export interface BackendResponse {
  status: number;
  headers: Headers;
  text: string;
}

/** Thrown when the collection's signal aborted a request: not worth a retry. */
export class RequestAbortedError extends Error {
  /** Set the name so logs say what happened. */
  override name = "RequestAbortedError";
}

/** Thrown when a response is larger than the cap. */
export class ResponseTooLargeError extends Error {
  /** Set the name so logs say what happened. */
  override name = "ResponseTooLargeError";
}

function reasonText(signal: AbortSignal): string {
  const r = signal.reason;
  if (r instanceof Error) {
    return r.name === "TimeoutError" ? "timed out" : r.message;
  }
  return typeof r === "string" ? r : "aborted";
}

/**
 * Send one request and read its body (of any status) up to `maxBytes`. Throws on a network
 * error, the deadline, an abort of `signal` ({@linkcode RequestAbortedError}) and an oversized
 * body, with a message naming the URL. The status is the caller's to judge.
 */
export async function backendRequest(
  url: string,
  options: BackendRequestOptions,
): Promise<BackendResponse> {
  const deadline = new AbortController();
  const timer = setTimeout(() => {
    deadline.abort(new Error(`timed out after ${options.timeoutSeconds}s`));
  }, Math.max(1, Math.round(options.timeoutSeconds * 1000)));
  const onAbort = (): void => deadline.abort(options.signal.reason);
  if (options.signal.aborted) onAbort();
  else options.signal.addEventListener("abort", onAbort, { once: true });
  const failed = (e: unknown): Error => {
    if (options.signal.aborted) {
      return new RequestAbortedError(
        `request to ${url} failed: ${reasonText(options.signal)}`,
      );
    }
    if (deadline.signal.aborted) {
      return new Error(`request to ${url} failed: ${reasonText(deadline.signal)}`);
    }
    return new Error(`request to ${url} failed: ${(e as Error).message}`);
  };
  try {
    let res: Response;
    try {
      res = await options.fetch(url, {
        method: options.method ?? "GET",
        headers: options.headers,
        body: options.body,
        signal: deadline.signal,
        redirect: "error",
      });
    } catch (e) {
      throw failed(e);
    }
    const declared = Number(res.headers.get("content-length") ?? "NaN");
    if (Number.isFinite(declared) && declared > options.maxBytes) {
      await res.body?.cancel().catch(() => {});
      throw new ResponseTooLargeError(`response from ${url} exceeds ${options.maxBytes} bytes`);
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    if (res.body) {
      const reader = res.body.getReader();
      try {
        while (true) {
          const { done, value } = await reader.read();
          if (done) break;
          size += value.byteLength;
          if (size > options.maxBytes) {
            await reader.cancel().catch(() => {});
            throw new ResponseTooLargeError(
              `response from ${url} exceeds ${options.maxBytes} bytes`,
            );
          }
          chunks.push(value);
        }
      } catch (e) {
        if (deadline.signal.aborted) throw failed(e);
        throw e;
      }
    }
    const all = new Uint8Array(size);
    let at = 0;
    for (const c of chunks) {
      all.set(c, at);
      at += c.byteLength;
    }
    return { status: res.status, headers: res.headers, text: new TextDecoder().decode(all) };
  } finally {
    clearTimeout(timer);
    options.signal.removeEventListener("abort", onAbort);
  }
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
      reject(new RequestAbortedError(`${what} aborted: ${reasonText(signal)}`));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new RequestAbortedError(`${what} aborted: ${reasonText(signal)}`));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
