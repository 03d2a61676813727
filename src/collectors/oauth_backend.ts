/**
 * What the ZMON and Nakadi collectors share: the platform IAM token (the `--token` flag, else
 * the file `<credentials-dir>/<name>-token-secret`, re-read when it changes); their requests
 * go through `fetchCapped` (http_get.ts).
 */
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { abortReasonText, RequestAbortedError } from "./http_get.ts";

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
