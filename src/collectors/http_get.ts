/**
 * HTTP for every collector that speaks to a backend over fetch: one request under a deadline
 * combined with the collection's AbortSignal, a cap on the bytes read, and errors that name the
 * URL. Also the JSON helpers of the json-path collectors.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import { ipv4Octets, ipv6Words, isLinkLocalAddress, isLinkLocalHost } from "../core/link_local.ts";
import { extractJsonValue } from "../core/kube_metrics_adapter/json_extract.ts";
import { ByteBuffer } from "../runtime/byte_buffer.ts";
import type { JsonExtractionOptions } from "../core/kube_metrics_adapter/json_extract.ts";

/** Default cap on a backend response, bytes (the default of `--max-response-bytes`). */
export const DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024;

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

/** Re-exported from core, where the address maths lives. */
export { isLinkLocalAddress, isLinkLocalHost };

/** Resolves a host name to all its addresses. */
export type HostLookup = (hostname: string) => Promise<string[]>;

/** A collect context may carry its own resolver (tests, a caching resolver). */
export interface LookupContext {
  /** Resolves host names for the link-local check; node:dns `lookup` when absent. */
  lookup?: HostLookup;
}

/** Every address of `hostname` by node:dns `lookup` (works on Node, Deno and Bun). */
export async function defaultHostLookup(hostname: string): Promise<string[]> {
  const all = await dnsLookup(hostname, { all: true });
  return all.map((a) => a.address);
}

/** Whether a request may reach link-local addresses, and how names are resolved. */
export interface LinkLocalPolicy {
  /** `--allow-link-local-targets`: no check at all. */
  allow: boolean;
  /** Resolver of host names; {@linkcode defaultHostLookup} when absent. */
  lookup?: HostLookup;
}

/**
 * Refuse a URL whose host is a link-local address (cloud metadata endpoints), or a name that
 * resolves to at least one, unless `policy.allow` (`--allow-link-local-targets`). Throws
 * `request to <url> refused: host "<host>" resolves to link-local address <ip> (allow with
 * --allow-link-local-targets)`, or `request to <url> failed: cannot resolve host ...`.
 *
 * Every collector that sends a request to a URL an HPA chooses calls this (through
 * {@linkcode fetchCapped}'s `linkLocal` option, or directly) right before connecting, and
 * returns the first address it accepted (undefined when the host was an address or the policy
 * allows all). fetchCapped has the collectors' fetch connect to that address, so a DNS answer
 * that changes in between (rebinding) reaches nothing new; a fetch that cannot (the runtime's,
 * in tests) resolves the name again. Redirects, the other easy path, are never followed (see
 * fetchCapped).
 *
 * @example
 * ```ts
 * await checkLinkLocalTarget("http://169.254.169.254/latest", { allow: false }); // throws
 * ```
 */
export async function checkLinkLocalTarget(
  url: string,
  policy: LinkLocalPolicy,
): Promise<string | undefined> {
  if (linkLocalDecided(url, policy)) return undefined;
  const host = hostOf(url);
  let addresses: string[];
  try {
    addresses = await (policy.lookup ?? defaultHostLookup)(host);
  } catch (e) {
    throw new Error(
      `request to ${url} failed: cannot resolve host "${host}": ${(e as Error).message}`,
    );
  }
  const bad = addresses.find(isLinkLocalAddress);
  if (bad !== undefined) throw refusal(url, host, `resolves to link-local address ${bad}`);
  return addresses[0];
}

/**
 * The request init field that asks the collectors' fetch (runtime/http_fetch.ts) to connect to
 * this address rather than resolve the URL's host again: the address the link-local check
 * accepted, so that a DNS answer that changes between the check and the connection (rebinding)
 * cannot reach a link-local address. Other fetches ignore it.
 */
export const CONNECT_ADDRESS_FIELD = "connectAddress";

function hostOf(url: string): string {
  return new URL(url).hostname.replace(/^\[|\]$/g, "").toLowerCase();
}

function refusal(url: string, host: string, how: string): Error {
  return new Error(
    `request to ${url} refused: host "${host}" ${how} (allow with --allow-link-local-targets)`,
  );
}

/**
 * The part of {@linkcode checkLinkLocalTarget} that needs no name lookup: true when the target
 * is allowed without one (the policy allows link-local targets, or the host is an IP address
 * that is not link-local); throws when the host is a link-local address; false when the host
 * is a name to resolve.
 */
function linkLocalDecided(url: string, policy: LinkLocalPolicy): boolean {
  if (policy.allow) return true;
  const host = hostOf(url);
  if (!ipv4Octets(host) && !ipv6Words(host)) return false;
  if (isLinkLocalAddress(host)) throw refusal(url, host, "is a link-local address");
  return true;
}

/** `promise`, or a rejection as soon as `signal` aborts (the promise itself runs on). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * Why a request failed, short: the first line and sentence of the error's message (a runtime
 * may append hints such as Bun's "For more information, pass `verbose: true` ...").
 */
function shortReason(e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  return message.split("\n")[0].split(/\.\s/)[0].replace(/\.$/, "") || "unknown error";
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
  /**
   * Check the host for link-local addresses right before connecting (URLs an HPA chooses);
   * no check when absent (operator-configured backends, pod IPs from the cluster).
   */
  linkLocal?: LinkLocalPolicy;
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
 * naming the URL, on a network error (also one while reading the body, and a body that does
 * not decode) or the deadline (`request to <url> failed: <why>`, the why cut to its first
 * sentence), an abort of `signal` ({@linkcode RequestAbortedError}, same words), a body
 * larger than `maxBytes` ({@linkcode ResponseTooLargeError}, `response from <url> exceeds <n> bytes`), a
 * redirect (`refused to follow redirect "<status>" from <url> to "<location>"`: a redirect
 * would carry the request past the link-local check, and headers with it) and a link-local
 * target under `linkLocal` ({@linkcode checkLinkLocalTarget}). Any other status is the
 * caller's to judge.
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
    return new Error(`request to ${url} failed: ${shortReason(e)}`);
  };
  try {
    // (an address in the URL is checked at once; only a name waits for its lookup)
    let connectAddress: string | undefined;
    if (options.linkLocal && !linkLocalDecided(url, options.linkLocal)) {
      try {
        connectAddress = await untilAborted(
          checkLinkLocalTarget(url, options.linkLocal),
          deadline.signal,
        );
      } catch (e) {
        if (deadline.signal.aborted) throw failed(e);
        throw e;
      }
    }
    let res: Response;
    try {
      res = await options.fetch(url, {
        method: options.method ?? "GET",
        headers: options.headers,
        body: options.body,
        signal: deadline.signal,
        redirect: "manual",
        ...(connectAddress !== undefined ? { [CONNECT_ADDRESS_FIELD]: connectAddress } : {}),
      } as RequestInit);
    } catch (e) {
      throw failed(e);
    }
    if (res.type === "opaqueredirect" || (res.status >= 300 && res.status <= 399)) {
      await res.body?.cancel().catch(() => {});
      const location = res.headers.get("location");
      throw new Error(
        `refused to follow redirect "${res.status}" from ${url} ${
          location === null ? "(no location)" : `to ${JSON.stringify(location.slice(0, 200))}`
        }`,
      );
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
    if (Number.isFinite(declared) && res.headers.get("content-encoding") === null) {
      // The length is known and within the cap, and the body arrives as sent (a compressed
      // body could inflate past the cap): read it in one call, without the stream reader's
      // objects per chunk (the common pod or endpoint answer).
      try {
        return { ...head, text: await res.text() };
      } catch (e) {
        throw failed(e);
      }
    }
    // one buffer: an answer sent in many small chunks costs no object per chunk
    const bytes = new ByteBuffer();
    if (res.body) {
      const reader = res.body.getReader();
      try {
        while (true) {
          const { done, value } = await reader.read();
          if (done) break;
          if (bytes.size + value.byteLength > options.maxBytes) {
            await reader.cancel().catch(() => {});
            throw tooLarge();
          }
          bytes.append(value);
        }
      } catch (e) {
        if (e instanceof ResponseTooLargeError && !deadline.signal.aborted) throw e;
        throw failed(e);
      }
    }
    return { ...head, text: new TextDecoder().decode(bytes.bytes()) };
  } finally {
    deadline.dispose();
  }
}

/** Options of {@linkcode httpGetText}. */
export type HttpGetOptions = Pick<
  FetchCappedOptions,
  "fetch" | "signal" | "timeoutSeconds" | "maxBytes" | "linkLocal"
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

/** A stable string of a config map (sorted keys), for query keys. */
export function stableConfig(config: Record<string, string>): string {
  return JSON.stringify(Object.keys(config).sort().map((k) => [k, config[k]]));
}

/**
 * Parse a response body as JSON; throws `invalid JSON from <url>`. Not the parser's words: they
 * quote the body, and errors are served in 404 messages and events.
 */
export function parseJsonBody(body: string, url: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    throw new Error(`invalid JSON from ${url}`);
  }
}

/**
 * Parse a JSON body and extract the metric value; errors name the URL (`json-key "$.v" gave
 * NaN, not a finite number, in the answer from <url>`).
 */
export function extractJson(body: string, url: string, options: JsonExtractionOptions): number {
  const parsed = parseJsonBody(body, url);
  try {
    return extractJsonValue(parsed, options);
  } catch (e) {
    throw new Error(`${(e as Error).message}, in the answer from ${url}`);
  }
}
