/**
 * The cluster view over the Kubernetes API: one informer (list + watch) per kind, started on
 * first use, and the adapter's few writes (status, scale, events).
 *
 * Informers are @kubernetes/client-node's `ListWatch` (what `makeInformer` builds), given a
 * cancellable reconnect delay so that `close()` leaves no timer or watch behind. The library
 * re-lists by itself on 410 Gone and reconnects a watch that ended; on any other error it stops,
 * and this file restarts it with a back-off (1 s doubling to 30 s). A kind whose CRD is not
 * installed (404 on list) counts as synced and empty, and is retried every 60 s. A kind whose
 * list fails otherwise (403 without RBAC for it, 500) releases `ensure` after the first failure,
 * empty, with the error in `kindError`, and is retried with the back-off.
 *
 * Every request, watches included, goes through `KubeHttp` (kube_http.ts), not the library's
 * HTTP layer: that one drops the kubeconfig's CA and client certificate on Bun and never ends an
 * aborted or dropped watch on Deno. Lists are parsed as plain JSON, as watch events are: the
 * typed clients would turn timestamps into Date objects and drop fields they do not know.
 */
import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  HttpMethod,
  KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  ListWatch,
  PatchStrategy,
  setHeaderOptions,
  type Watch,
} from "@kubernetes/client-node";
import { KubeHttp, type KubeHttpOptions } from "./kube_http.ts";
import { trimForCache } from "./trim.ts";
import {
  apiVersionOf,
  type ClusterView,
  type ClusterWriter,
  type Kind,
  KIND_RESOURCES,
  type KubeObject,
  type ObjectEvent,
  type WatchEventType,
  type WatchHandler,
} from "./types.ts";

/** Log levels of the source's logger. */
export type KubeLogLevel = "debug" | "info" | "warn" | "error";

/** Receives the source's log lines. */
export type KubeLogger = (level: KubeLogLevel, message: string) => void;

/** Options of `KubeClusterSource`. */
export interface KubeClusterSourceOptions {
  /** Path of a kubeconfig file; null or undefined means in-cluster config. */
  kubeconfig?: string | null;
  /** An already loaded config (takes precedence over `kubeconfig`). */
  kubeConfig?: KubeConfig;
  /** Requests per second for lists and writes (default 50; 0 or less: unlimited). */
  qps?: number;
  /** Burst of requests above `qps` (default 100). */
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

/** An error answer of the Kubernetes API, with its metav1.Status if there was one. */
export class KubeApiError extends Error {
  override name = "KubeApiError";
  /** The HTTP status code (the watch code reads `statusCode`). */
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

/** The HTTP status of an error from this file or from the typed clients, or undefined. */
export function statusCodeOf(e: unknown): number | undefined {
  if (e instanceof KubeApiError) return e.code;
  if (e instanceof ApiException) return e.code;
  const any = e as { statusCode?: unknown; code?: unknown } | null;
  if (typeof any?.statusCode === "number") return any.statusCode;
  if (typeof any?.code === "number") return any.code;
  return undefined;
}

/** A one-line description of an error from this file or from the typed clients. */
export function describeError(e: unknown): string {
  if (e instanceof ApiException) {
    let message = "";
    try {
      const body = typeof e.body === "string" ? JSON.parse(e.body) : e.body;
      if (typeof body?.message === "string") message = `: ${body.message}`;
    } catch {
      // not JSON: the code says enough
    }
    return `HTTP ${e.code}${message}`;
  }
  return e instanceof Error ? e.message : String(e);
}

/** Load a kubeconfig file, or the in-cluster config when `path` is null or undefined. */
export function loadKubeConfig(path: string | null | undefined): KubeConfig {
  const kc = new KubeConfig();
  if (path) kc.loadFromFile(path);
  else kc.loadFromCluster();
  return kc;
}

/** Options of `TokenBucket`. */
export interface TokenBucketOptions {
  /** Tokens added per second; 0 or less disables limiting. */
  qps: number;
  /** Bucket size (at least 1). */
  burst: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** A token bucket: `take()` resolves when a request may be sent. */
export class TokenBucket {
  private tokens: number;
  private last: number;
  private readonly qps: number;
  private readonly burst: number;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(options: TokenBucketOptions) {
    this.qps = options.qps;
    this.burst = Math.max(1, options.burst);
    this.now = options.now ?? (() => Date.now());
    this.sleep = options.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.tokens = this.burst;
    this.last = this.now();
  }

  /** Wait for a token; how long was waited (ms). Tokens are reserved in call order. */
  async take(): Promise<number> {
    if (!(this.qps > 0)) return 0;
    const now = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
    this.tokens -= 1;
    if (this.tokens >= 0) return 0;
    const wait = Math.ceil((-this.tokens / this.qps) * 1000);
    await this.sleep(wait);
    return wait;
  }
}

/** The URL path of a kind's collection (all namespaces, or one). */
export function collectionPath(kind: Kind, namespace?: string): string {
  const r = KIND_RESOURCES[kind];
  const base = r.group === "" ? `/api/${r.version}` : `/apis/${r.group}/${r.version}`;
  const ns = r.namespaced && namespace !== undefined
    ? `/namespaces/${encodeURIComponent(namespace)}`
    : "";
  return `${base}${ns}/${r.plural}`;
}

/**
 * A JSON merge patch value that turns `from` into `to`: `to` itself, with null for every key of
 * `from` that `to` lacks (recursively in objects both have), so that the result replaces.
 */
export function replacingMergePatch(from: unknown, to: unknown): unknown {
  const isObj = (v: unknown): v is Record<string, unknown> =>
    typeof v === "object" && v !== null && !Array.isArray(v);
  if (!isObj(to) || !isObj(from)) return to ?? null;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(from)) if (!(k in to)) out[k] = null;
  for (const [k, v] of Object.entries(to)) out[k] = isObj(v) ? replacingMergePatch(from[k], v) : v;
  return out;
}

/** Whether a watch event's object can be read (an object; with a name unless ERROR). */
function wellFormed(phase: string, obj: unknown): boolean {
  if (typeof obj !== "object" || obj === null || Array.isArray(obj)) return false;
  if (phase === "ERROR") return true;
  const metadata = (obj as { metadata?: unknown }).metadata;
  if (typeof metadata !== "object" || metadata === null) return false;
  return phase === "BOOKMARK" || typeof (metadata as { name?: unknown }).name === "string";
}

/** Kubernetes timestamps: RFC 3339 in seconds (metav1.Time). */
function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

interface KindState {
  kind: Kind;
  informer: ListWatch<KubernetesObject>;
  objects: Map<string, KubeObject>;
  handlers: Set<WatchHandler>;
  ready: Promise<void>;
  resolveReady: () => void;
  synced: boolean;
  /** The CRD is not installed (last list answered 404). */
  notInstalled: boolean;
  /** Set by the list function; tells `start()`'s caller whether the list worked. */
  listed: boolean;
  /** Why the last list failed (other than 404), or null after a list that worked. */
  error: string | null;
  failures: number;
  retry?: ReturnType<typeof setTimeout>;
}

interface RecentEvent {
  name: string;
  namespace: string;
  count: number;
  last: number;
}

/** The Kubernetes API as a `ClusterView` and `ClusterWriter`. */
export class KubeClusterSource implements ClusterView, ClusterWriter {
  /** The loaded kubeconfig (for other clients, e.g. leader election). */
  readonly kubeConfig: KubeConfig;
  private readonly kinds = new Map<Kind, KindState>();
  private readonly bucket: TokenBucket;
  private readonly log: KubeLogger;
  private readonly now: () => number;
  /** The HTTP layer (credentials, TLS, watches), shared with other clients of this source. */
  readonly http: KubeHttp;
  private readonly custom: CustomObjectsApi;
  private readonly apps: AppsV1Api;
  private readonly core: CoreV1Api;
  private readonly delays = new Set<ReturnType<typeof setTimeout>>();
  /** Open watch requests, aborted by `close()`. */
  private readonly watches = new Set<AbortController>();
  private readonly recentEvents = new Map<string, RecentEvent>();
  private readonly notInstalledRetryMs: number;
  private readonly backoffBaseMs: number;
  private readonly backoffMaxMs: number;
  private readonly eventDedupeMs: number;
  private readonly component: string;
  private readonly resyncTimer?: ReturnType<typeof setInterval>;
  private closed = false;
  /** Change counters by kind and namespace (see `version`). */
  private readonly versions = new Map<string, number>();

  constructor(options: KubeClusterSourceOptions = {}) {
    this.kubeConfig = options.kubeConfig ?? loadKubeConfig(options.kubeconfig);
    this.now = options.now ?? (() => Date.now());
    this.bucket = new TokenBucket({ qps: options.qps ?? 50, burst: options.burst ?? 100 });
    const logger = options.logger ?? (() => {});
    // a logger that throws must not break the retry paths that log
    this.log = (level, message) => {
      try {
        logger(level, message);
      } catch {
        // nowhere left to report it
      }
    };
    this.notInstalledRetryMs = options.notInstalledRetryMs ?? 60_000;
    this.backoffBaseMs = options.backoffBaseMs ?? 1000;
    this.backoffMaxMs = options.backoffMaxMs ?? 30_000;
    this.eventDedupeMs = options.eventDedupeMs ?? 10 * 60_000;
    this.component = options.component ?? "hpa-metrics-adapter";
    this.http = new KubeHttp(this.kubeConfig, options.http);
    this.custom = this.http.apiClient(CustomObjectsApi);
    this.apps = this.http.apiClient(AppsV1Api);
    this.core = this.http.apiClient(CoreV1Api);
    if ((options.resyncMs ?? 0) > 0) {
      this.resyncTimer = setInterval(() => this.resync(), options.resyncMs);
    }
  }

  /** Pass every cached object to the handlers again (MODIFIED, `old` is the object itself). */
  resync(): void {
    for (const s of this.kinds.values()) {
      for (const obj of [...s.objects.values()]) this.notify(s, "MODIFIED", obj, obj);
    }
  }

  /**
   * Start watching a kind; resolves after its first list, whether it worked, failed (see
   * `kindError`) or found no CRD.
   */
  ensure(kind: Kind): Promise<void> {
    if (this.closed) return Promise.resolve();
    const existing = this.kinds.get(kind);
    if (existing) return existing.ready;
    if (!Object.hasOwn(KIND_RESOURCES, kind)) {
      return Promise.reject(new Error(`unknown kind "${kind}"`));
    }
    const state = this.newState(kind);
    this.kinds.set(kind, state);
    this.start(state);
    return state.ready;
  }

  /**
   * Why a watched kind has no data: the error of its last list (e.g. `GET
   * /apis/argoproj.io/v1alpha1/rollouts: HTTP 403: ...` when RBAC lacks it), or null once a
   * list worked, while the first list is in flight, for a kind not watched and for a kind whose
   * CRD is not installed (404: empty, see `installed`). The list is retried with back-off.
   */
  kindError(kind: Kind): string | null {
    return this.kinds.get(kind)?.error ?? null;
  }

  /** Whether a kind has synced and its CRD was found (false while missing or syncing). */
  installed(kind: Kind): boolean {
    const s = this.kinds.get(kind);
    return s !== undefined && s.synced && !s.notInstalled;
  }

  /** Objects of a kind from the informer cache. Do not mutate them. */
  list(kind: Kind, namespace?: string): KubeObject[] {
    const s = this.kinds.get(kind);
    if (!s) return [];
    const all = [...s.objects.values()];
    if (namespace === undefined || !KIND_RESOURCES[kind].namespaced) return all;
    return all.filter((o) => o.metadata.namespace === namespace);
  }

  /** One object from the informer cache (namespace defaults to "default" for namespaced kinds). */
  get(kind: Kind, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.kinds.get(kind)?.objects.get(this.key(kind, namespace, name));
  }

  /** A counter that changes whenever a cached object of `kind` in `namespace` does. */
  version(kind: Kind, namespace: string): number {
    return this.versions.get(`${kind}|${namespace}`) ?? 0;
  }

  /** Subscribe to changes of a kind and start watching it. */
  watch(kind: Kind, handler: WatchHandler): () => void {
    this.ensure(kind).catch((e) => this.log("error", describeError(e)));
    const s = this.kinds.get(kind);
    s?.handlers.add(handler);
    return () => void s?.handlers.delete(handler);
  }

  /** Stop every informer, watch and timer; pending `ensure` calls resolve. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.resyncTimer !== undefined) clearInterval(this.resyncTimer);
    for (const t of this.delays) clearTimeout(t);
    this.delays.clear();
    for (const s of this.kinds.values()) {
      if (s.retry) clearTimeout(s.retry);
      s.handlers.clear();
      s.resolveReady();
      await s.informer.stop();
    }
    for (const c of this.watches) c.abort();
    this.watches.clear();
    await this.http.close();
  }

  /** Replace `status` with a JSON merge patch on the status subresource. */
  async updateStatus(
    kind: Kind,
    namespace: string | undefined,
    name: string,
    status: unknown,
  ): Promise<void> {
    const r = KIND_RESOURCES[kind];
    const ns = r.namespaced ? namespace ?? "default" : undefined;
    const body = { status: replacingMergePatch(this.get(kind, ns, name)?.status, status) };
    await this.bucket.take();
    try {
      if (r.group === "") {
        await this.request(
          HttpMethod.PATCH,
          `${collectionPath(kind, ns)}/${encodeURIComponent(name)}/status`,
          body,
          PatchStrategy.MergePatch,
        );
      } else if (ns !== undefined) {
        await this.custom.patchNamespacedCustomObjectStatus(
          { group: r.group, version: r.version, namespace: ns, plural: r.plural, name, body },
          setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
        );
      } else {
        await this.custom.patchClusterCustomObjectStatus(
          { group: r.group, version: r.version, plural: r.plural, name, body },
          setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
        );
      }
    } catch (e) {
      throw new Error(
        `update status of ${kind} ${ns ? `${ns}/` : ""}${name}: ${describeError(e)}`,
      );
    }
  }

  /** Read replicas through the scale subresource (Deployment, StatefulSet, Rollout). */
  async getScale(
    kind: Kind,
    namespace: string,
    name: string,
  ): Promise<{ specReplicas: number; statusReplicas: number }> {
    const r = this.scaleResource(kind);
    await this.bucket.take();
    let scale: { spec?: { replicas?: number }; status?: { replicas?: number } };
    try {
      if (kind === "Deployment") {
        scale = await this.apps.readNamespacedDeploymentScale({ name, namespace });
      } else if (kind === "StatefulSet") {
        scale = await this.apps.readNamespacedStatefulSetScale({ name, namespace });
      } else {
        scale = await this.custom.getNamespacedCustomObjectScale({
          group: r.group,
          version: r.version,
          namespace,
          plural: r.plural,
          name,
        });
      }
    } catch (e) {
      throw new Error(`get scale of ${kind} ${namespace}/${name}: ${describeError(e)}`);
    }
    return {
      specReplicas: scale.spec?.replicas ?? 0,
      statusReplicas: scale.status?.replicas ?? 0,
    };
  }

  /** Set `spec.replicas` with a JSON merge patch on the scale subresource. */
  async setScale(kind: Kind, namespace: string, name: string, replicas: number): Promise<void> {
    const r = this.scaleResource(kind);
    if (!Number.isInteger(replicas) || replicas < 0) {
      throw new Error(`invalid replicas ${replicas} for ${kind} ${namespace}/${name}`);
    }
    const body = { spec: { replicas } };
    const merge = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
    await this.bucket.take();
    try {
      if (kind === "Deployment") {
        await this.apps.patchNamespacedDeploymentScale({ name, namespace, body }, merge);
      } else if (kind === "StatefulSet") {
        await this.apps.patchNamespacedStatefulSetScale({ name, namespace, body }, merge);
      } else {
        await this.custom.patchNamespacedCustomObjectScale(
          { group: r.group, version: r.version, namespace, plural: r.plural, name, body },
          merge,
        );
      }
    } catch (e) {
      throw new Error(`set scale of ${kind} ${namespace}/${name}: ${describeError(e)}`);
    }
  }

  /**
   * Record a core/v1 Event about an object. The same reason and message on the same object
   * within the dedupe window bumps `count` and `lastTimestamp` instead. Failures are logged,
   * not thrown: events are best effort.
   */
  async emitEvent(kind: Kind, obj: KubeObject, event: ObjectEvent): Promise<void> {
    const now = this.now();
    for (const [k, e] of this.recentEvents) {
      if (now - e.last >= this.eventDedupeMs) this.recentEvents.delete(k);
    }
    const namespace = obj.metadata.namespace ?? "default";
    const dedupeKey = JSON.stringify([
      kind,
      namespace,
      obj.metadata.name,
      obj.metadata.uid ?? "",
      event.type,
      event.reason,
      event.message,
    ]);
    const where = `${kind} ${obj.metadata.namespace ? `${namespace}/` : ""}${obj.metadata.name}`;
    try {
      const recent = this.recentEvents.get(dedupeKey);
      if (recent) {
        await this.bucket.take();
        try {
          await this.core.patchNamespacedEvent(
            {
              name: recent.name,
              namespace: recent.namespace,
              body: { count: recent.count + 1, lastTimestamp: rfc3339(now) },
            },
            setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
          );
          recent.count++;
          recent.last = now;
          return;
        } catch (e) {
          if (statusCodeOf(e) !== 404) throw e;
          // the event expired on the server: create a new one
        }
      }
      const name = `${obj.metadata.name}.${(BigInt(Math.floor(now)) * 1_000_000n).toString(16)}`;
      const body = {
        apiVersion: "v1",
        kind: "Event",
        metadata: { name, namespace },
        involvedObject: {
          apiVersion: obj.apiVersion ?? apiVersionOf(kind),
          kind,
          name: obj.metadata.name,
          ...(obj.metadata.namespace ? { namespace: obj.metadata.namespace } : {}),
          ...(obj.metadata.uid ? { uid: obj.metadata.uid } : {}),
          ...(obj.metadata.resourceVersion
            ? { resourceVersion: obj.metadata.resourceVersion }
            : {}),
        },
        reason: event.reason,
        message: event.message,
        type: event.type,
        source: { component: this.component },
        reportingComponent: this.component,
        firstTimestamp: rfc3339(now),
        lastTimestamp: rfc3339(now),
        count: 1,
      };
      await this.bucket.take();
      // timestamps are sent as the strings Kubernetes expects; the typed model declares Date
      await this.core.createNamespacedEvent({ namespace, body: body as any });
      this.recentEvents.set(dedupeKey, { name, namespace, count: 1, last: now });
    } catch (e) {
      this.log("warn", `event ${event.reason} on ${where} not recorded: ${describeError(e)}`);
    }
  }

  private scaleResource(kind: Kind): (typeof KIND_RESOURCES)[Kind] {
    const r = KIND_RESOURCES[kind];
    if (!r.scale) throw new Error(`kind "${kind}" has no scale subresource`);
    return r;
  }

  private key(kind: Kind, namespace: string | undefined, name: string): string {
    return KIND_RESOURCES[kind].namespaced ? `${namespace ?? "default"}/${name}` : name;
  }

  private newState(kind: Kind): KindState {
    let resolveReady = (): void => {};
    const ready = new Promise<void>((r) => (resolveReady = r));
    const path = collectionPath(kind);
    const state: KindState = {
      kind,
      informer: undefined as unknown as ListWatch<KubernetesObject>,
      objects: new Map(),
      handlers: new Set(),
      ready,
      resolveReady,
      synced: false,
      notInstalled: false,
      listed: false,
      error: null,
      failures: 0,
    };
    const listFn = async (): Promise<KubernetesListObject<KubernetesObject>> => {
      state.listed = false;
      await this.bucket.take();
      if (this.closed) throw new Error("cluster source closed");
      const list = await this.request(HttpMethod.GET, path);
      const items = (list as { items?: unknown } | null)?.items;
      if (Array.isArray(items)) { for (const item of items) trimForCache(kind, item); }
      state.listed = true;
      state.error = null;
      state.failures = 0;
      if (state.notInstalled) {
        state.notInstalled = false;
        this.log("info", `${kind} (${path}) is served now`);
      }
      return list as KubernetesListObject<KubernetesObject>;
    };
    // the library's event and done handlers are async and nobody awaits them: a failure in them
    // (an event it cannot read, a list it cannot apply) is logged and the informer restarted
    // with back-off, never left as an unhandled rejection
    const guard = (run: () => unknown): void => {
      try {
        Promise.resolve(run()).catch((e) => this.onError(state, e));
      } catch (e) {
        this.onError(state, e);
      }
    };
    // the library may open a watch after stop() (a list or delay in flight): refuse it then
    const watch = {
      watch: async (
        p: string,
        query: Record<string, string | number | boolean | undefined>,
        callback: (phase: string, obj: any, watchObj?: any) => unknown,
        done: (err: any) => unknown,
      ): Promise<AbortController> => {
        if (this.closed) return new AbortController();
        const w = { finished: false, controller: undefined as AbortController | undefined };
        const onEvent = (phase: string, obj: any, watchObj?: any): void => {
          if (!wellFormed(phase, obj)) {
            this.log(
              "error",
              `watch of ${kind} (${path}) sent a malformed ${phase} event: ignored`,
            );
            return;
          }
          guard(() => callback(phase, trimForCache(kind, obj), watchObj));
        };
        const c = await this.http.watch(p, query, onEvent, (err: any) => {
          w.finished = true;
          if (w.controller) this.watches.delete(w.controller);
          guard(() => done(err));
        });
        w.controller = c;
        if (this.closed) c.abort();
        else if (!w.finished && !c.signal.aborted) {
          this.watches.add(c);
          c.signal.addEventListener("abort", () => this.watches.delete(c), { once: true });
        }
        return c;
      },
    } as unknown as Watch;
    const informer = new ListWatch<KubernetesObject>(
      path,
      watch,
      listFn,
      false,
      undefined,
      undefined,
      { delayFn: (ms) => this.delay(ms) },
    );
    informer.on("add", (o) => this.apply(state, "ADDED", o as KubeObject));
    informer.on("update", (o) => this.apply(state, "MODIFIED", o as KubeObject));
    informer.on("delete", (o) => this.apply(state, "DELETED", o as KubeObject));
    informer.on("error", (err) => this.onError(state, err));
    state.informer = informer;
    return state;
  }

  private start(state: KindState): void {
    if (this.closed) return;
    state.informer.start().then(() => {
      if (state.listed && !state.synced) {
        state.synced = true;
        state.resolveReady();
      }
    }).catch((e) => this.onError(state, e));
  }

  private onError(state: KindState, err: unknown): void {
    if (this.closed) return;
    const code = statusCodeOf(err);
    const path = collectionPath(state.kind);
    if (code === 404 && !state.listed) {
      if (!state.notInstalled) {
        this.log(
          "warn",
          `${state.kind} is not served (${path}: 404; is its CRD installed?): ` +
            `treating it as empty, retrying every ${Math.round(this.notInstalledRetryMs / 1000)}s`,
        );
      }
      state.notInstalled = true;
      state.error = null;
      for (const obj of [...state.objects.values()]) this.apply(state, "DELETED", obj);
      state.synced = true;
      state.resolveReady();
      this.retry(state, this.notInstalledRetryMs);
      return;
    }
    const wait = Math.min(this.backoffMaxMs, this.backoffBaseMs * 2 ** state.failures);
    state.failures++;
    if (!state.listed) {
      // the kind has no data: callers waiting for it go on (its lists stay empty) and can tell why
      state.error = describeError(err);
      state.resolveReady();
    }
    this.log(
      "warn",
      `watch of ${state.kind} (${path}) failed: ${describeError(err)}; retrying in ${wait}ms`,
    );
    this.retry(state, wait);
  }

  private retry(state: KindState, ms: number): void {
    if (state.retry) clearTimeout(state.retry);
    state.retry = setTimeout(() => {
      state.retry = undefined;
      this.start(state);
    }, ms);
  }

  /** The informer's reconnect delay: a timer that `close()` cancels (never resolving). */
  private delay(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed) return;
      const t = setTimeout(() => {
        this.delays.delete(t);
        resolve();
      }, ms);
      this.delays.add(t);
    });
  }

  private apply(state: KindState, type: WatchEventType, raw: KubeObject): void {
    const obj = raw;
    obj.apiVersion ??= apiVersionOf(state.kind);
    obj.kind ??= state.kind;
    const key = this.key(state.kind, obj.metadata.namespace, obj.metadata.name);
    const old = state.objects.get(key);
    if (type === "DELETED") state.objects.delete(key);
    else state.objects.set(key, obj);
    const v = `${state.kind}|${obj.metadata.namespace ?? ""}`;
    this.versions.set(v, (this.versions.get(v) ?? 0) + 1);
    this.notify(state, type, obj, old);
  }

  private notify(
    state: KindState,
    type: WatchEventType,
    obj: KubeObject,
    old: KubeObject | undefined,
  ): void {
    for (const h of [...state.handlers]) {
      try {
        h(type, obj, old);
      } catch (e) {
        this.log("error", `watch handler of ${state.kind} failed: ${describeError(e)}`);
      }
    }
  }

  /**
   * One request to the Kubernetes API with the kubeconfig's credentials; answers the status and
   * the parsed JSON body whatever the status (for TokenReview, SubjectAccessReview, ConfigMaps).
   */
  async apiRequest(
    method: "GET" | "POST",
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: unknown }> {
    const res = await this.http.request(method, path, {
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

  /** A request with the kubeconfig's credentials, answered as plain JSON. */
  private async request(
    method: HttpMethod,
    path: string,
    body?: unknown,
    contentType = "application/json",
  ): Promise<unknown> {
    const res = await this.http.request(method, path, {
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
      throw new KubeApiError(
        `${method} ${path}: HTTP ${res.status}${status?.message ? `: ${status.message}` : ""}`,
        res.status,
        status,
      );
    }
    return JSON.parse(text);
  }
}
