/**
 * The cluster view over the Kubernetes API: one informer (list + watch, informer.ts) per kind,
 * started on first use, and the adapter's few writes (status and scale, kube_writer.ts; events,
 * event_recorder.ts), all sharing one rate limit (rate_limiter.ts).
 *
 * Every request, watches included, goes through `KubeHttp` (kube_http.ts).
 *
 * @module
 */
import { EventRecorder } from "./event_recorder.ts";
import { Informer, type InformerOptions } from "./informer.ts";
import { describeError, KubeHttp, type KubeHttpOptions } from "./kube_http.ts";
import { guardedLogger, type KubeLogger } from "./kube_logger.ts";
import { type KubeConfig, loadKubeConfig } from "./kubeconfig.ts";
import { KubeWriter } from "./kube_writer.ts";
import { KUBE_CLIENT_DEFAULTS, TokenBucket } from "./rate_limiter.ts";
import {
  type ClusterView,
  type ClusterWriter,
  type Kind,
  KIND_RESOURCES,
  type KubeObject,
  type ObjectEvent,
  type WatchHandler,
} from "./types.ts";

/** Options of `KubeClusterSource`. */
export interface KubeClusterSourceOptions {
  /** Path of a kubeconfig file; null or undefined means in-cluster config. */
  kubeconfig?: string | null;
  /** An already loaded config (takes precedence over `kubeconfig`). */
  kubeConfig?: KubeConfig;
  /** Requests per second for lists and writes (default: `KUBE_CLIENT_DEFAULTS`; 0: unlimited). */
  qps?: number;
  /** Burst of requests above `qps` (default: `KUBE_CLIENT_DEFAULTS`). */
  burst?: number;
  logger?: KubeLogger;
  /** The clock, ms since the epoch (event timestamps and dedupe). */
  now?: () => number;
  /** How often a kind whose CRD is not installed is listed again (default 60000 ms). */
  notInstalledRetryMs?: number;
  /** First delay after an informer error (default 1000 ms), doubled up to `backoffMaxMs`. */
  backoffBaseMs?: number;
  /** Longest delay after informer errors (default 30000 ms). */
  backoffMaxMs?: number;
  /** An equal event within this window bumps `count` instead of creating one (default 10 min). */
  eventDedupeMs?: number;
  /** `source.component` and `reportingComponent` of events (default "hpa-metrics-adapter"). */
  component?: string;
  /**
   * Events wait in a queue and are written one at a time; beyond this many waiting (default
   * 1000, client-go's broadcaster queue) new ones are dropped until it drains.
   */
  maxQueuedEvents?: number;
  /**
   * Every this many ms, each cached object is passed to the handlers again as MODIFIED with
   * itself as `old` (client-go's resync), so that work missed or failed is redone. 0 (the
   * default) disables it.
   */
  resyncMs?: number;
  /**
   * Timeouts of the HTTP layer: each request other than a watch (`requestTimeoutMs`, default
   * 10 s, credentials included), watch connect, a watch's idle limit (a watch that receives
   * nothing for `watchIdleMs` is resumed) and the server-side watch timeout.
   */
  http?: KubeHttpOptions;
}

/** The Kubernetes API as a `ClusterView` and `ClusterWriter`. */
export class KubeClusterSource implements ClusterView, ClusterWriter {
  /** The loaded kubeconfig (for other clients, e.g. leader election). */
  readonly kubeConfig: KubeConfig;
  /** The HTTP layer (credentials, TLS, watches), shared with other clients of this source. */
  readonly http: KubeHttp;
  readonly #informers = new Map<Kind, Informer>();
  readonly #informerOptions: InformerOptions;
  readonly #writer: KubeWriter;
  readonly #events: EventRecorder;
  readonly #log: KubeLogger;
  readonly #resyncTimer?: ReturnType<typeof setInterval>;
  #closed = false;

  constructor(options: KubeClusterSourceOptions = {}) {
    this.kubeConfig = options.kubeConfig ?? loadKubeConfig(options.kubeconfig);
    const now = options.now ?? (() => Date.now());
    const bucket = new TokenBucket({
      qps: options.qps ?? KUBE_CLIENT_DEFAULTS.qps,
      burst: options.burst ?? KUBE_CLIENT_DEFAULTS.burst,
    });
    const log = guardedLogger(options.logger);
    this.#log = log;
    this.http = new KubeHttp(this.kubeConfig, options.http);
    const http = this.http;
    this.#informerOptions = {
      http,
      bucket,
      log,
      notInstalledRetryMs: options.notInstalledRetryMs ?? 60_000,
      backoffBaseMs: options.backoffBaseMs ?? 1000,
      backoffMaxMs: options.backoffMaxMs ?? 30_000,
    };
    this.#writer = new KubeWriter({
      http,
      bucket,
      cached: (kind, namespace, name) => this.get(kind, namespace, name),
    });
    this.#events = new EventRecorder({
      http,
      bucket,
      log,
      now,
      dedupeMs: options.eventDedupeMs ?? 10 * 60_000,
      component: options.component ?? "hpa-metrics-adapter",
      maxQueuedEvents: options.maxQueuedEvents ?? 1000,
    });
    if ((options.resyncMs ?? 0) > 0) {
      this.#resyncTimer = setInterval(() => this.resync(), options.resyncMs);
    }
  }

  /** Pass every cached object to the handlers again (MODIFIED, `old` is the object itself). */
  resync(): void {
    for (const informer of this.#informers.values()) informer.resync();
  }

  /**
   * Start watching a kind; resolves after its first list, whether it worked, failed (see
   * `kindError`) or found no CRD.
   */
  ensure(kind: Kind): Promise<void> {
    if (this.#closed) return Promise.resolve();
    const existing = this.#informers.get(kind);
    if (existing) return existing.ready;
    if (!Object.hasOwn(KIND_RESOURCES, kind)) {
      return Promise.reject(new Error(`unknown kind "${kind}"`));
    }
    const informer = new Informer(kind, this.#informerOptions);
    this.#informers.set(kind, informer);
    informer.start();
    return informer.ready;
  }

  /**
   * Why a watched kind has no data: the error of its last list (e.g. `GET
   * /apis/argoproj.io/v1alpha1/rollouts: HTTP 403: ...` when RBAC lacks it), or null once a
   * list worked, while the first list is in flight, for a kind not watched and for a kind whose
   * CRD is not installed (404: empty, see `installed`). The list is retried with back-off.
   */
  kindError(kind: Kind): string | null {
    return this.#informers.get(kind)?.error ?? null;
  }

  /** Whether a kind has synced and its CRD was found (false while missing or syncing). */
  installed(kind: Kind): boolean {
    return this.#informers.get(kind)?.installed ?? false;
  }

  /** Objects of a kind from the informer cache. Do not mutate them. */
  list(kind: Kind, namespace?: string): KubeObject[] {
    return this.#informers.get(kind)?.list(namespace) ?? [];
  }

  /** One object from the informer cache (namespace defaults to "default" for namespaced kinds). */
  get(kind: Kind, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.#informers.get(kind)?.get(namespace, name);
  }

  /** A counter that changes whenever a cached object of `kind` in `namespace` does. */
  version(kind: Kind, namespace: string): number {
    return this.#informers.get(kind)?.version(namespace) ?? 0;
  }

  /** Subscribe to changes of a kind and start watching it. */
  watch(kind: Kind, handler: WatchHandler): () => void {
    this.ensure(kind).catch((e) => this.#log("error", describeError(e)));
    return this.#informers.get(kind)?.subscribe(handler) ?? (() => {});
  }

  /** Stop every informer, watch and timer; pending `ensure` calls resolve. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#events.close();
    if (this.#resyncTimer !== undefined) clearInterval(this.#resyncTimer);
    for (const informer of this.#informers.values()) informer.close();
    await this.http.close();
  }

  /** Replace `status` with a JSON merge patch on the status subresource. */
  updateStatus(
    kind: Kind,
    namespace: string | undefined,
    name: string,
    status: unknown,
  ): Promise<void> {
    return this.#writer.updateStatus(kind, namespace, name, status);
  }

  /** Read replicas through the scale subresource (Deployment, StatefulSet, Rollout). */
  getScale(
    kind: Kind,
    namespace: string,
    name: string,
  ): Promise<{ specReplicas: number; statusReplicas: number }> {
    return this.#writer.getScale(kind, namespace, name);
  }

  /** Change an object with a JSON merge patch on the object itself. */
  patch(kind: Kind, namespace: string | undefined, name: string, patch: unknown): Promise<void> {
    return this.#writer.patch(kind, namespace, name, patch);
  }

  /** Create an object. */
  create(kind: Kind, obj: KubeObject): Promise<KubeObject> {
    return this.#writer.create(kind, obj);
  }

  /** Delete an object (gone already counts as deleted). */
  delete(kind: Kind, namespace: string | undefined, name: string): Promise<void> {
    return this.#writer.delete(kind, namespace, name);
  }

  /** Read one object from the API; null when it does not exist. */
  read(kind: Kind, namespace: string | undefined, name: string): Promise<KubeObject | null> {
    return this.#writer.read(kind, namespace, name);
  }

  /** Set `spec.replicas` with a JSON merge patch on the scale subresource. */
  setScale(kind: Kind, namespace: string, name: string, replicas: number): Promise<void> {
    return this.#writer.setScale(kind, namespace, name, replicas);
  }

  /**
   * Record a core/v1 Event about an object, best effort: see `EventRecorder.emit` (a repeat
   * within the dedupe window bumps `count`; written one at a time from a bounded queue).
   */
  emitEvent(kind: Kind, obj: KubeObject, event: ObjectEvent): Promise<void> {
    return this.#events.emit(kind, obj, event);
  }

  /**
   * One request to the Kubernetes API with the kubeconfig's credentials; answers the status and
   * the parsed JSON body whatever the status (for TokenReview, SubjectAccessReview, ConfigMaps).
   */
  apiRequest(
    method: "GET" | "POST",
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: unknown }> {
    return this.http.apiRequest(method, path, body);
  }
}
