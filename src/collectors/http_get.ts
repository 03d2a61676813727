/**
 * The HTTP GET shared by the json-path collectors: a deadline through AbortSignal, a cap on the
 * bytes read, a clear error naming the URL, and the Go-duration timeout keys of the annotations.
 */
import { parseDuration } from "../core/duration.ts";
import { extractJsonValue } from "../core/json_extract.ts";
import type { JsonExtractionOptions } from "../core/json_extract.ts";

/** Default `request-timeout` and `connect-timeout` of kube-metrics-adapter, seconds. */
export const DEFAULT_HTTP_TIMEOUT_SECONDS = 15;

/** Options of {@linkcode httpGetText}. */
export interface HttpGetOptions {
  fetch: typeof fetch;
  /** Aborts the request (the collection's signal). */
  signal: AbortSignal;
  /** Deadline of the whole request, seconds. */
  timeoutSeconds: number;
  /** Largest body read, bytes. */
  maxBytes: number;
}

function abortReason(signal: AbortSignal): string {
  const r = signal.reason;
  if (r instanceof Error) return r.message;
  return typeof r === "string" ? r : "aborted";
}

/**
 * GET `url` and return its body as text. Throws on a non-2xx status, a body larger than
 * `maxBytes`, the deadline or an abort of `signal`, with a message naming the URL.
 */
export async function httpGetText(url: string, options: HttpGetOptions): Promise<string> {
  const deadline = new AbortController();
  const timeoutMs = Math.max(1, Math.round(options.timeoutSeconds * 1000));
  const timer = setTimeout(() => {
    deadline.abort(new Error(`timed out after ${options.timeoutSeconds}s`));
  }, timeoutMs);
  const onAbort = (): void => deadline.abort(options.signal.reason);
  if (options.signal.aborted) onAbort();
  else options.signal.addEventListener("abort", onAbort, { once: true });
  try {
    let res: Response;
    try {
      res = await options.fetch(url, {
        signal: deadline.signal,
        headers: { accept: "application/json" },
      });
    } catch (e) {
      if (deadline.signal.aborted) {
        throw new Error(`request to ${url} failed: ${abortReason(deadline.signal)}`);
      }
      throw new Error(`request to ${url} failed: ${(e as Error).message}`);
    }
    if (res.status < 200 || res.status > 299) {
      await res.body?.cancel().catch(() => {});
      throw new Error(
        `unsuccessful response "${res.status}${
          res.statusText ? " " + res.statusText : ""
        }" from ${url}`,
      );
    }
    const declared = Number(res.headers.get("content-length") ?? "NaN");
    if (Number.isFinite(declared) && declared > options.maxBytes) {
      await res.body?.cancel().catch(() => {});
      throw new Error(`response from ${url} exceeds ${options.maxBytes} bytes`);
    }
    return await readCapped(res, url, options.maxBytes, deadline.signal);
  } finally {
    clearTimeout(timer);
    options.signal.removeEventListener("abort", onAbort);
  }
}

async function readCapped(
  res: Response,
  url: string,
  maxBytes: number,
  signal: AbortSignal,
): Promise<string> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel().catch(() => {});
        throw new Error(`response from ${url} exceeds ${maxBytes} bytes`);
      }
      chunks.push(value);
    }
  } catch (e) {
    if (signal.aborted) {
      throw new Error(`request to ${url} failed: ${abortReason(signal)}`);
    }
    throw e;
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.byteLength;
  }
  return new TextDecoder().decode(all);
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

/** A stable string of a config map (sorted keys), for query keys. */
export function stableConfig(config: Record<string, string>): string {
  return JSON.stringify(Object.keys(config).sort().map((k) => [k, config[k]]));
}

/** Parse a JSON body and extract the metric value; errors name the URL. */
export function extractJson(body: string, url: string, options: JsonExtractionOptions): number {
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch (e) {
    throw new Error(`invalid JSON from ${url}: ${(e as Error).message}`);
  }
  return extractJsonValue(doc, options);
}
