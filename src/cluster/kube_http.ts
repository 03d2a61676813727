/**
 * The HTTP layer under every request to the Kubernetes API: the kubeconfig's credentials
 * (kubeconfig.ts) carried by `src/runtime/tls_fetch.ts`, which gives each runtime's fetch the
 * CA and client certificate.
 *
 * `KubeHttp` is a plain request helper (`request`, and `json` that turns error answers into
 * `KubeApiError`) and a watch. The watch asks the server to end it after `timeoutSeconds` (5 to
 * 10 minutes, as client-go) with bookmarks, and cancels it itself when no byte arrived for
 * `watchIdleMs` (a stalled stream or a half-open connection); either way the informer resumes
 * from the last resourceVersion at once. Every other request has a deadline of its own. A 401
 * answer makes the kubeconfig read its credentials again (a rotated token, an expired exec
 * credential).
 */
import type { KubeConfig } from "./kubeconfig.ts";
import { type ClientTls, createTlsFetch, type TlsFetch } from "../runtime/tls_fetch.ts";

/** Options of `KubeHttp`. */
export interface KubeHttpOptions {
  /**
   * Deadline of a request other than a watch, from the credentials (an exec plugin may hang) to
   * the end of the body (default 10000 ms). A request that misses it fails with
   * `METHOD PATH: request timed out after Nms`.
   */
  requestTimeoutMs?: number;
  /** Deadline for a watch's response headers (default 30000 ms). */
  watchConnectTimeoutMs?: number;
  /** A watch that receives no byte for this long is cancelled and resumed (default 90000 ms). */
  watchIdleMs?: number;
  /**
   * The server ends a watch after between this and twice this many seconds (`timeoutSeconds`;
   * default 300, as client-go).
   */
  watchTimeoutSeconds?: number;
  /** Random number in [0, 1) that spreads watch timeouts (default Math.random). */
  random?: () => number;
}

/** Called by a watch with each event (`type`, `object`, the whole event). */
export type WatchCallback = (type: string, object: any, event?: any) => void;

/** A plain request's options. */
export interface KubeRequestOptions {
  body?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** An HTTP answer with its body read. */
export interface KubeResponse {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
}

/** An error answer of the Kubernetes API, with its metav1.Status if there was one. */
export class KubeApiError extends Error {
  override name = "KubeApiError";
  /** The HTTP status code. */
  readonly statusCode: number;
  constructor(
    message: string,
    readonly code: number,
    readonly status?: { reason?: string; message?: string },
  ) {
    super(message);
    this.statusCode = code;
  }
}

/** The HTTP status of an error (a `KubeApiError` or a failed watch), or undefined. */
export function statusCodeOf(e: unknown): number | undefined {
  if (e instanceof KubeApiError) return e.code;
  const any = e as { statusCode?: unknown; code?: unknown } | null;
  if (typeof any?.statusCode === "number") return any.statusCode;
  if (typeof any?.code === "number") return any.code;
  return undefined;
}

/** A one-line description of an error. */
export function describeError(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function timeoutError(message: string): Error {
  // the informer reconnects at once, without reporting an error, for this name
  const e = new Error(message);
  e.name = "TimeoutError";
  return e;
}

/** Requests and watches against the Kubernetes API with a kubeconfig's credentials. */
export class KubeHttp {
  /** The kubeconfig whose current context is used (read again on every request). */
  readonly kubeConfig: KubeConfig;
  /** Deadline of each request other than a watch (ms). */
  readonly requestTimeoutMs: number;
  readonly #watchConnectTimeoutMs: number;
  readonly #watchIdleMs: number;
  readonly #watchTimeoutSeconds: number;
  readonly #random: () => number;
  #client?: { key: string; fetch: TlsFetch };

  constructor(kubeConfig: KubeConfig, options: KubeHttpOptions = {}) {
    this.kubeConfig = kubeConfig;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
    this.#watchConnectTimeoutMs = options.watchConnectTimeoutMs ?? 30_000;
    this.#watchIdleMs = options.watchIdleMs ?? 90_000;
    this.#watchTimeoutSeconds = options.watchTimeoutSeconds ?? 300;
    this.#random = options.random ?? Math.random;
  }

  /** One request to `path` (below the server URL) with the kubeconfig's credentials. */
  async request(
    method: string,
    path: string,
    options: KubeRequestOptions = {},
  ): Promise<KubeResponse> {
    return await this.#fetchWithDeadline(path, {
      method,
      headers: { Accept: "application/json", ...options.headers },
      ...(options.body !== undefined ? { body: options.body } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  /**
   * A JSON request answered whatever its status: the status and the parsed body (the text when
   * it is not JSON, null when empty). For TokenReview, SubjectAccessReview and ConfigMap reads,
   * whose callers look at the status themselves.
   */
  async apiRequest(
    method: "GET" | "POST",
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: unknown }> {
    const res = await this.request(method, path, {
      ...(body !== undefined
        ? { body: JSON.stringify(body), headers: { "Content-Type": "application/json" } }
        : {}),
    });
    const text = new TextDecoder().decode(res.body);
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = text;
    }
    return { status: res.status, body: parsed };
  }

  /**
   * A JSON request: the parsed answer of a 2xx status; otherwise a `KubeApiError` that names
   * the method, the path, the status and the API's message.
   */
  async json(
    method: string,
    path: string,
    body?: unknown,
    contentType = "application/json",
  ): Promise<unknown> {
    const res = await this.request(method, path, {
      ...(body !== undefined
        ? { body: JSON.stringify(body), headers: { "Content-Type": contentType } }
        : {}),
    });
    const text = new TextDecoder().decode(res.body);
    if (res.status < 200 || res.status > 299) {
      let status: { reason?: string; message?: string } | undefined;
      try {
        status = JSON.parse(text);
      } catch {
        status = undefined;
      }
      const message = typeof status?.message === "string" ? `: ${status.message}` : "";
      throw new KubeApiError(`${method} ${path}: HTTP ${res.status}${message}`, res.status, status);
    }
    try {
      return JSON.parse(text);
    } catch {
      throw new KubeApiError(
        `${method} ${path}: HTTP ${res.status} with a body that is not JSON: ${
          JSON.stringify(text.slice(0, 100))
        }`,
        res.status,
      );
    }
  }

  /**
   * Watch `path` from `query.resourceVersion`. `done` is called once when the watch ends by
   * itself: with null after a short stream, with a `TimeoutError` when the server's timeout
   * ended it or it stalled, or with the error. A watch aborted through the returned controller
   * calls nothing.
   */
  async watch(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    callback: WatchCallback,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    const controller = new AbortController();
    let finished = false;
    const finish = (err: unknown): void => {
      if (finished || controller.signal.aborted) return;
      finished = true;
      controller.abort();
      done(err);
    };
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = (ms: number, onTimeout: () => void): void => {
      if (timer !== undefined) clearTimeout(timer);
      timer = setTimeout(onTimeout, ms);
    };
    controller.signal.addEventListener("abort", () => clearTimeout(timer), { once: true });
    // the connect deadline covers the credentials too (an exec plugin may hang)
    arm(
      this.#watchConnectTimeoutMs,
      () => finish(timeoutError(`watch ${path}: connect timed out`)),
    );
    try {
      const { server, headers, tls } = await this.kubeConfig.credentials();
      if (controller.signal.aborted) return controller;
      const url = new URL(server + path);
      url.searchParams.set("watch", "true");
      url.searchParams.set("allowWatchBookmarks", "true");
      const timeoutSeconds = Math.floor(this.#watchTimeoutSeconds * (1 + this.#random()));
      url.searchParams.set("timeoutSeconds", String(timeoutSeconds));
      for (const [k, v] of Object.entries(query)) {
        if (v !== undefined) url.searchParams.set(k, String(v));
      }
      const started = Date.now();
      const res = await this.#fetchClient(tls).fetch(url.toString(), {
        method: "GET",
        headers: { Accept: "application/json", ...headers },
        signal: controller.signal,
      });
      if (res.status !== 200) {
        if (res.status === 401) this.kubeConfig.invalidate();
        const text = await res.text().catch(() => "");
        let message = "";
        try {
          const status = JSON.parse(text);
          if (typeof status?.message === "string") message = `: ${status.message}`;
        } catch {
          // not a Status: the code says enough
        }
        const err = new Error(`watch ${path}: HTTP ${res.status}${message}`) as Error & {
          statusCode: number;
        };
        err.statusCode = res.status;
        finish(err);
        return controller;
      }
      if (!res.body) {
        finish(null);
        return controller;
      }
      const reader = res.body.getReader();
      // an abort alone leaves a pending read unanswered on some runtimes; cancelling ends it
      controller.signal.addEventListener("abort", () => void reader.cancel().catch(() => {}), {
        once: true,
      });
      let stalled = false;
      const idle = (): void =>
        arm(this.#watchIdleMs, () => {
          stalled = true;
          finish(timeoutError(`watch ${path} received nothing for ${this.#watchIdleMs}ms`));
        });
      idle();
      void this.#readEvents(reader, idle, callback, controller.signal).then(
        () => {
          if (stalled) return;
          // a watch the server ended after a while (timeoutSeconds) resumes at once, a watch
          // closed right away after a back-off
          finish(
            Date.now() - started >= 1000 ? timeoutError(`watch ${path} ended by the server`) : null,
          );
        },
        (err) => finish(err),
      );
    } catch (err) {
      finish(err);
    }
    return controller;
  }

  /** Close the connection pool and kill running exec plugins (a later request starts anew). */
  async close(): Promise<void> {
    this.kubeConfig.close();
    const c = this.#client;
    this.#client = undefined;
    await c?.fetch.close();
  }

  async #readEvents(
    reader: ReadableStreamDefaultReader<Uint8Array>,
    onData: () => void,
    callback: WatchCallback,
    signal: AbortSignal,
  ): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (signal.aborted) return;
        if (done) break;
        onData();
        buffer += decoder.decode(value, { stream: true });
        let nl: number;
        while ((nl = buffer.indexOf("\n")) >= 0) {
          // a callback may end the watch (an ERROR event): the rest of the chunk is not delivered
          if (signal.aborted) return;
          const line = buffer.slice(0, nl).trim();
          buffer = buffer.slice(nl + 1);
          if (line === "") continue;
          let event: { type?: unknown; object?: unknown };
          try {
            event = JSON.parse(line);
          } catch {
            continue; // client-go's decoder ends the watch here; one bad line is not worth it
          }
          if (typeof event?.type === "string") callback(event.type, event.object, event);
        }
      }
    } catch (e) {
      if (signal.aborted) return;
      throw e;
    } finally {
      reader.releaseLock?.();
    }
  }

  #fetchClient(tls: ClientTls): TlsFetch {
    const key = JSON.stringify(tls);
    if (this.#client?.key !== key) {
      const old = this.#client;
      this.#client = { key, fetch: createTlsFetch(tls) };
      // rotated credentials: new requests use the new material; watches on the old pool resume
      void old?.fetch.close().catch(() => {});
    }
    return this.#client.fetch;
  }

  /**
   * `fetch` of `path` (below the server URL) with the kubeconfig's headers and TLS settings,
   * under one deadline that covers the credentials, the answer and its body.
   */
  #fetchWithDeadline(path: string, init: RequestInit): Promise<KubeResponse> {
    const method = init.method ?? "GET";
    return this.#withDeadline(method, path, init.signal ?? undefined, async (signal) => {
      const { server, headers, tls } = await this.kubeConfig.credentials();
      signal.throwIfAborted();
      const res = await this.#fetchClient(tls).fetch(server + path, {
        ...init,
        headers: { ...headers, ...(init.headers as Record<string, string>) },
        signal,
      });
      // a body that stalls after the deadline: cancelling ends its read on every runtime
      signal.addEventListener("abort", () => void res.body?.cancel().catch(() => {}), {
        once: true,
      });
      if (res.status === 401) this.kubeConfig.invalidate();
      const body = new Uint8Array(await res.arrayBuffer());
      const out: Record<string, string> = {};
      res.headers.forEach((v, k) => (out[k] = v));
      return { status: res.status, headers: out, body };
    });
  }

  /**
   * Run `work` with a signal that aborts after `requestTimeoutMs` (or with `signal`); a missed
   * deadline rejects at once, even when `work` ignores the signal (credentials from a hung exec
   * plugin, a body read that does not end), with an error naming the method and the path.
   */
  async #withDeadline<T>(
    method: string,
    url: string,
    signal: AbortSignal | undefined,
    work: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    const deadline = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const e = new Error(
          `${method} ${pathOf(url)}: request timed out after ${this.requestTimeoutMs}ms`,
        );
        deadline.abort(e);
        reject(e);
      }, this.requestTimeoutMs);
    });
    const combined = signal ? AbortSignal.any([signal, deadline.signal]) : deadline.signal;
    try {
      return await Promise.race([work(combined), timedOut]);
    } catch (e) {
      if (deadline.signal.aborted) throw deadline.signal.reason;
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The path and query of a URL (or of a path), for error messages. */
function pathOf(url: string): string {
  try {
    const u = new URL(url, "http://server");
    return u.pathname + u.search;
  } catch {
    return url;
  }
}
