/**
 * HTTP for every collector that speaks to a backend over fetch: one request under a deadline
 * combined with the collection's AbortSignal, a cap on the bytes read, and errors that name the
 * URL. Also the helpers of the json-path collectors (Go-duration timeout keys, JSON extraction).
 */
import { parseDuration } from "../core/duration.ts";
import { extractJsonValue, validateJsonExtraction } from "../core/json_extract.ts";
import type { JsonExtractionOptions } from "../core/json_extract.ts";

/** Default `request-timeout` and `connect-timeout` of kube-metrics-adapter, seconds. */
export const DEFAULT_HTTP_TIMEOUT_SECONDS = 15;

/** Default cap on a backend response, bytes (the default of `--max-response-bytes`). */
export const DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024;

/** The `--max-response-bytes` flag, or {@linkcode DEFAULT_MAX_RESPONSE_BYTES}. */
export function maxResponseBytes(flags: Record<string, unknown>): number {
  const v = flags["max-response-bytes"];
  return typeof v === "number" && v > 0 ? v : DEFAULT_MAX_RESPONSE_BYTES;
}

/** Thrown when the caller's signal aborted a request: not worth a retry. */
export class RequestAbortedError extends Error {
  /** Set the name so logs say what happened. */
  override name = "RequestAbortedError";
}

/** Thrown when a response is larger than the cap. */
export class ResponseTooLargeError extends Error {
  /** Set the name so logs say what happened. */
  override name = "ResponseTooLargeError";
  /** HTTP status of the oversized response. */
  readonly status: number;

  /** An error for a response of `status` larger than the cap. */
  constructor(message: string, status: number) {
    super(message);
    this.status = status;
  }
}

/**
 * Why `signal` aborted, for an error message: the reason's message, "timed out" for
 * `AbortSignal.timeout`, or "aborted".
 */
export function abortReasonText(signal: AbortSignal): string {
  const r = signal.reason;
  if (r instanceof Error) {
    return r.name === "TimeoutError" ? "timed out" : r.message;
  }
  return typeof r === "string" ? r : "aborted";
}

/** A signal that aborts after a deadline or with the caller's signal; dispose when done. */
export interface Deadline {
  signal: AbortSignal;
  dispose(): void;
}

/**
 * A signal that aborts with `timed out after <seconds>s` once `timeoutSeconds` pass, or with
 * `signal`'s reason when `signal` aborts first. Call `dispose` to clear the timer.
 *
 * @example
 * ```ts
 * const d = requestDeadline(AbortSignal.timeout(15_000), 10);
 * try {
 *   await fetch("http://127.0.0.1:9090/-/ready", { signal: d.signal });
 * } finally {
 *   d.dispose();
 * }
 * ```
 */
export function requestDeadline(signal: AbortSignal, timeoutSeconds: number): Deadline {
  const deadline = new AbortController();
  const timer = setTimeout(() => {
    deadline.abort(new Error(`timed out after ${timeoutSeconds}s`));
  }, Math.max(1, Math.round(timeoutSeconds * 1000)));
  const onAbort = (): void => deadline.abort(signal.reason);
  if (signal.aborted) onAbort();
  else signal.addEventListener("abort", onAbort, { once: true });
  return {
    signal: deadline.signal,
    dispose(): void {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
    },
  };
}

/** Options of {@linkcode fetchCapped}. */
export interface FetchCappedOptions {
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
  /** Redirect mode of fetch; `follow` by default. */
  redirect?: RequestRedirect;
  /** Statuses whose body is not read (it is cancelled and `text` is empty). */
  skipBody?: (status: number) => boolean;
}

/** A response read in full. */
export interface CappedResponse {
  status: number;
  statusText: string;
  headers: Headers;
  text: string;
}

/**
 * Send one request and read its body (of any status) up to `maxBytes`. Throws, with a message
 * naming the URL, on a network error or the deadline (`request to <url> failed: <why>`), an
 * abort of `signal` ({@linkcode RequestAbortedError}, same words) and a body larger than
 * `maxBytes` ({@linkcode ResponseTooLargeError}, `response from <url> exceeds <n> bytes`). The
 * status is the caller's to judge.
 *
 * @example
 * ```ts
 * const res = await fetchCapped("http://127.0.0.1:8080/metrics", {
 *   fetch, signal: AbortSignal.timeout(15_000), timeoutSeconds: 10, maxBytes: 1 << 20,
 * });
 * res.status; // 200
 * ```
 */
export async function fetchCapped(
  url: string,
  options: FetchCappedOptions,
): Promise<CappedResponse> {
  const deadline = requestDeadline(options.signal, options.timeoutSeconds);
  const failed = (e: unknown): Error => {
    if (options.signal.aborted) {
      return new RequestAbortedError(
        `request to ${url} failed: ${abortReasonText(options.signal)}`,
      );
    }
    if (deadline.signal.aborted) {
      return new Error(`request to ${url} failed: ${abortReasonText(deadline.signal)}`);
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
        redirect: options.redirect ?? "follow",
      });
    } catch (e) {
      throw failed(e);
    }
    const head = { status: res.status, statusText: res.statusText, headers: res.headers };
    if (options.skipBody?.(res.status)) {
      await res.body?.cancel().catch(() => {});
      return { ...head, text: "" };
    }
    const tooLarge = (): Error =>
      new ResponseTooLargeError(
        `response from ${url} exceeds ${options.maxBytes} bytes`,
        res.status,
      );
    const declared = Number(res.headers.get("content-length") ?? "NaN");
    if (Number.isFinite(declared) && declared > options.maxBytes) {
      await res.body?.cancel().catch(() => {});
      throw tooLarge();
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
            throw tooLarge();
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
    return { ...head, text: new TextDecoder().decode(all) };
  } finally {
    deadline.dispose();
  }
}

/** Options of {@linkcode httpGetText}. */
export type HttpGetOptions = Pick<
  FetchCappedOptions,
  "fetch" | "signal" | "timeoutSeconds" | "maxBytes"
>;

/**
 * GET `url` (accepting JSON) and return its body as text. Throws as {@linkcode fetchCapped}
 * does, and on a non-2xx status (`unsuccessful response "<status> <text>" from <url>`).
 */
export async function httpGetText(url: string, options: HttpGetOptions): Promise<string> {
  const failing = (status: number): boolean => status < 200 || status > 299;
  const res = await fetchCapped(url, {
    ...options,
    headers: { accept: "application/json" },
    skipBody: failing,
  });
  if (failing(res.status)) throw new Error(unsuccessfulResponse(res, url));
  return res.text;
}

/** `unsuccessful response "<status> <status text>" from <url>`, the words of a non-2xx error. */
export function unsuccessfulResponse(
  res: { status: number; statusText: string },
  url: string,
): string {
  return `unsuccessful response "${res.status}${
    res.statusText ? " " + res.statusText : ""
  }" from ${url}`;
}

/** Read a Go-duration config key in seconds (default when absent); rejects negative values. */
export function durationConfig(
  config: Record<string, string>,
  key: string,
  options: { metricName: string; defaultSeconds: number },
): number {
  const raw = config[key];
  if (raw === undefined || raw === "") return options.defaultSeconds;
  let seconds: number;
  try {
    seconds = parseDuration(raw);
  } catch {
    throw new Error(`invalid ${key} "${raw}" for metric ${options.metricName}`);
  }
  if (seconds < 0) throw new Error(`invalid ${key} "${raw}" for metric ${options.metricName}`);
  return seconds === 0 ? options.defaultSeconds : seconds;
}

/**
 * The request deadline of a json-path metric: `request-timeout` (Go duration, default 15s).
 * `connect-timeout` is checked too, but fetch() has no separate connect phase: the request
 * deadline bounds it (Node's fetch also gives up connecting after 10s).
 */
export function requestTimeoutConfig(config: Record<string, string>, metricName: string): number {
  const options = { metricName, defaultSeconds: DEFAULT_HTTP_TIMEOUT_SECONDS };
  durationConfig(config, "connect-timeout", options);
  return durationConfig(config, "request-timeout", options);
}

/** The `json-key` / `json-eval` / `aggregator` keys of a json-path metric; errors name it. */
export function jsonExtractionConfig(
  config: Record<string, string>,
  metricName: string,
): JsonExtractionOptions {
  try {
    return validateJsonExtraction(config);
  } catch (e) {
    throw new Error(`${(e as Error).message} for metric ${metricName}`);
  }
}

/** A stable string of a config map (sorted keys), for query keys. */
export function stableConfig(config: Record<string, string>): string {
  return JSON.stringify(Object.keys(config).sort().map((k) => [k, config[k]]));
}

/** Parse a response body as JSON; throws `invalid JSON from <url>: <why>`. */
export function parseJsonBody(body: string, url: string): unknown {
  try {
    return JSON.parse(body);
  } catch (e) {
    throw new Error(`invalid JSON from ${url}: ${(e as Error).message}`);
  }
}

/** Parse a JSON body and extract the metric value; errors name the URL. */
export function extractJson(body: string, url: string, options: JsonExtractionOptions): number {
  return extractJsonValue(parseJsonBody(body, url), options);
}
