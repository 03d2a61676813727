/**
 * The HTTP layer under every request to the Kubernetes API: the kubeconfig's credentials
 * (headers from client-node's authenticators, TLS material from the cluster and user entries)
 * carried by `src/runtime/tls_fetch.ts`, because client-node's own layer loses the CA and client
 * certificate on Bun and cannot end an aborted watch on Deno.
 *
 * `KubeHttp` is a client-node `HttpLibrary` (for the typed API clients), a plain request helper,
 * and a watch with the `Watch.watch` signature that `ListWatch` calls. The watch asks the
 * server to end it after `timeoutSeconds` (5 to 10 minutes, as client-go) with bookmarks, and
 * cancels it itself when no byte arrived for `watchIdleMs` (a stalled stream or a half-open
 * connection); either way `ListWatch` resumes from the last resourceVersion at once. Every
 * other request (lists, typed clients, `request`) has a deadline of its own.
 */
import {
  type ApiType,
  type Configuration,
  createConfiguration,
  type HttpLibrary,
  type KubeConfig,
  Observable,
  type RequestContext,
  ResponseContext,
  ServerConfiguration,
} from "@kubernetes/client-node";
import { Buffer } from "node:buffer";
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

/** The headers and TLS settings of the kubeconfig's current context. */
export interface KubeCredentials {
  server: string;
  headers: Record<string, string>;
  tls: ClientTls;
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

function pem(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === "string") return v;
  if (v instanceof Uint8Array) return new TextDecoder().decode(v);
  return undefined;
}

/** The headers and TLS settings of the kubeconfig's current context (files are read now). */
export async function kubeCredentials(kc: KubeConfig): Promise<KubeCredentials> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("kubeconfig has no current cluster");
  const opts: {
    headers?: Record<string, unknown>;
    ca?: unknown;
    cert?: unknown;
    key?: unknown;
    auth?: string;
    rejectUnauthorized?: boolean;
    servername?: string;
  } = {};
  await kc.applyToHTTPSOptions(opts as never);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(opts.headers ?? {})) {
    if (v !== undefined) headers[k] = String(v);
  }
  if (opts.auth) {
    headers.Authorization = `Basic ${btoa(opts.auth)}`;
  }
  const tls: ClientTls = {};
  const ca = pem(opts.ca);
  const cert = pem(opts.cert);
  const key = pem(opts.key);
  if (ca !== undefined) tls.ca = ca;
  if (cert !== undefined) tls.cert = cert;
  if (key !== undefined) tls.key = key;
  if (opts.rejectUnauthorized === false || cluster.skipTLSVerify) tls.insecureSkipVerify = true;
  if (cluster.tlsServerName) tls.serverName = cluster.tlsServerName;
  const server = cluster.server.replace(/\/+$/, "");
  // plain http has no TLS to configure (and so gets each runtime's own fetch)
  return { server, headers, tls: server.startsWith("http:") ? {} : tls };
}

function timeoutError(message: string): Error {
  // ListWatch reconnects at once, without reporting an error, for this name
  const e = new Error(message);
  e.name = "TimeoutError";
  return e;
}

/** Requests and watches against the Kubernetes API with a kubeconfig's credentials. */
export class KubeHttp implements HttpLibrary {
  /** The kubeconfig whose current context is used (read again on every request). */
  readonly kubeConfig: KubeConfig;
  /** Deadline of each request other than a watch (ms). */
  readonly requestTimeoutMs: number;
  private readonly watchConnectTimeoutMs: number;
  private readonly watchIdleMs: number;
  private readonly watchTimeoutSeconds: number;
  private readonly random: () => number;
  private client?: { key: string; fetch: TlsFetch };

  constructor(kubeConfig: KubeConfig, options: KubeHttpOptions = {}) {
    this.kubeConfig = kubeConfig;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
    this.watchConnectTimeoutMs = options.watchConnectTimeoutMs ?? 30_000;
    this.watchIdleMs = options.watchIdleMs ?? 90_000;
    this.watchTimeoutSeconds = options.watchTimeoutSeconds ?? 300;
    this.random = options.random ?? Math.random;
  }

  /** A client-node API client (e.g. `AppsV1Api`) whose requests go through this layer. */
  apiClient<T extends ApiType>(api: new (config: Configuration) => T): T {
    const cluster = this.kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error("kubeconfig has no current cluster");
    const config = createConfiguration({
      baseServer: new ServerConfiguration(cluster.server.replace(/\/+$/, ""), {}),
      httpApi: this,
      authMethods: {
        default: {
          getName: () => "kubeconfig",
          applySecurityAuthentication: async (ctx: RequestContext): Promise<void> => {
            const { headers } = await this.withDeadline(
              ctx.getHttpMethod().toString(),
              ctx.getUrl(),
              undefined,
              () => kubeCredentials(this.kubeConfig),
            );
            for (const [k, v] of Object.entries(headers)) ctx.setHeaderParam(k, v);
          },
        },
      },
    });
    return new api(config);
  }

  /** client-node's `HttpLibrary.send` (headers were set by the API client). */
  send(ctx: RequestContext): Observable<ResponseContext> {
    const run = async (): Promise<ResponseContext> => {
      const body = ctx.getBody();
      const res = await this.fetchWithDeadline(ctx.getUrl(), {
        method: ctx.getHttpMethod().toString(),
        headers: ctx.getHeaders(),
        ...(typeof body === "string" ? { body } : {}),
        ...(ctx.getSignal() ? { signal: ctx.getSignal() as AbortSignal } : {}),
      });
      const bytes = res.body;
      return new ResponseContext(res.status, res.headers, {
        text: () => Promise.resolve(new TextDecoder().decode(bytes)),
        binary: () => Promise.resolve(Buffer.from(bytes)),
        stream: () => new Blob([bytes as BlobPart]).stream(),
      });
    };
    return new Observable(run());
  }

  /** One request to `path` (below the server URL) with the kubeconfig's credentials. */
  async request(
    method: string,
    path: string,
    options: KubeRequestOptions = {},
  ): Promise<KubeResponse> {
    return await this.fetchWithDeadline(path, {
      method,
      headers: { Accept: "application/json", ...options.headers },
      ...(options.body !== undefined ? { body: options.body } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    }, true);
  }

  /**
   * Watch `path` from `query.resourceVersion`, with the signature of client-node's
   * `Watch.watch` (what `ListWatch` calls). `done` is called once when the watch ends by
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
      this.watchConnectTimeoutMs,
      () => finish(timeoutError(`watch ${path}: connect timed out`)),
    );
    try {
      const { server, headers, tls } = await kubeCredentials(this.kubeConfig);
      if (controller.signal.aborted) return controller;
      const url = new URL(server + path);
      url.searchParams.set("watch", "true");
      url.searchParams.set("allowWatchBookmarks", "true");
      const timeoutSeconds = Math.floor(this.watchTimeoutSeconds * (1 + this.random()));
      url.searchParams.set("timeoutSeconds", String(timeoutSeconds));
      for (const [k, v] of Object.entries(query)) {
        if (v !== undefined) url.searchParams.set(k, String(v));
      }
      const started = Date.now();
      const res = await this.fetchClient(tls).fetch(url.toString(), {
        method: "GET",
        headers: { Accept: "application/json", ...headers },
        signal: controller.signal,
      });
      if (res.status !== 200) {
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
        arm(this.watchIdleMs, () => {
          stalled = true;
          finish(timeoutError(`watch ${path} received nothing for ${this.watchIdleMs}ms`));
        });
      idle();
      void this.readEvents(reader, idle, callback, controller.signal).then(
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

  /** Close the connection pool (a later request opens a new one). */
  async close(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    await c?.fetch.close();
  }

  private async readEvents(
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
          const line = buffer.slice(0, nl).trim();
          buffer = buffer.slice(nl + 1);
          if (line === "") continue;
          let event: { type?: unknown; object?: unknown };
          try {
            event = JSON.parse(line);
          } catch {
            continue; // client-node skips what is not JSON too
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

  private fetchClient(tls: ClientTls): TlsFetch {
    const key = JSON.stringify(tls);
    if (this.client?.key !== key) {
      const old = this.client;
      this.client = { key, fetch: createTlsFetch(tls) };
      // rotated credentials: new requests use the new material; watches on the old pool resume
      void old?.fetch.close().catch(() => {});
    }
    return this.client.fetch;
  }

  /**
   * `fetch` of `url` (a path below the server with `withCredentials`: the kubeconfig's headers
   * are added) with the TLS settings of the kubeconfig, under one deadline that covers the
   * credentials, the answer and its body.
   */
  private fetchWithDeadline(
    url: string,
    init: RequestInit,
    withCredentials = false,
  ): Promise<KubeResponse> {
    const method = init.method ?? "GET";
    return this.withDeadline(method, url, init.signal ?? undefined, async (signal) => {
      const { server, headers, tls } = await kubeCredentials(this.kubeConfig);
      signal.throwIfAborted();
      const target = withCredentials ? server + url : url;
      const res = await this.fetchClient(tls).fetch(target, {
        ...init,
        ...(withCredentials
          ? { headers: { ...headers, ...(init.headers as Record<string, string>) } }
          : {}),
        signal,
      });
      // a body that stalls after the deadline: cancelling ends its read on every runtime
      signal.addEventListener("abort", () => void res.body?.cancel().catch(() => {}), {
        once: true,
      });
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
  private async withDeadline<T>(
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
