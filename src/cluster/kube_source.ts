/**
 * The cluster view over the Kubernetes API: one informer (list + watch) per kind, started on
 * first use, and the adapter's few writes (status, scale, events).
 *
 * An informer lists the kind, then watches it from the list's resourceVersion, as client-go's
 * reflector: a watch the server ended (its `timeoutSeconds`) or that stalled resumes at once
 * from the last resourceVersion; one closed early resumes after a delay (1 s doubling to 30 s,
 * reset by any event); 410 Gone (an answer or an ERROR event) lists again, and the cache is
 * brought to the list (DELETED for what is gone). On any other error the informer stops and is
 * restarted with a back-off (1 s doubling to 30 s), from its last resourceVersion. A kind whose
 * CRD is not installed (404 on list) counts as synced and empty, and is retried every 60 s. A
 * kind whose list fails otherwise (403 without RBAC for it, 500) releases `ensure` after the
 * first failure, empty, with the error in `kindError`, and is retried with the back-off.
 *
 * Every request, watches included, goes through `KubeHttp` (kube_http.ts). Lists and watch
 * events are plain JSON, trimmed to what the adapter reads (trim.ts).
 */
import { type KubeConfig, loadKubeConfig } from "./kubeconfig.ts";
import {
  describeError,
  KubeApiError,
  KubeHttp,
  type KubeHttpOptions,
  statusCodeOf,
} from "./kube_http.ts";
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

/** Options of `TokenBucket`. */
export interface TokenBucketOptions {
  /** Tokens added per second; 0 or less disables limiting. */
  qps: number;
  /** Bucket size (at least 1). */
  burst: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** An event waiting in `KubeClusterSource`'s queue. */
interface QueuedEvent {
  kind: Kind;
  obj: KubeObject;
  event: ObjectEvent;
  done: () => void;
}

/** `Kind namespace/name` (`Kind name` for a cluster-scoped object), for log lines. */
function describeObject(kind: Kind, obj: KubeObject): string {
  const ns = obj.metadata.namespace;
  return `${kind} ${ns ? `${ns}/` : ""}${obj.metadata.name}`;
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

/** The content type of a JSON merge patch (RFC 7386). */
const MERGE_PATCH = "application/merge-patch+json";

/** Kubernetes timestamps: RFC 3339 in seconds (metav1.Time). */
function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

interface KindState {
  kind: Kind;
  /** The collection's URL path (all namespaces). */
  path: string;
  objects: Map<string, KubeObject>;
  handlers: Set<WatchHandler>;
  ready: Promise<void>;
  resolveReady: () => void;
  synced: boolean;
  /** The CRD is not installed (last list answered 404). */
  notInstalled: boolean;
  /** The last list worked (false while one is in flight or after one failed). */
  listed: boolean;
  /** Why the last list failed (other than 404), or null after a list that worked. */
  error: string | null;
  failures: number;
  retry?: ReturnType<typeof setTimeout>;
  /** Where the next watch starts; "" lists first. */
  resourceVersion: string;
  /** Counts starts: work of an earlier start (a list, a watch, a delay) stops where it sees it. */
  run: number;
  /** The open watch. */
  watch?: WatchSlot;
  /** Delay before a watch that ended early is opened again; an event resets it. */
  reconnectDelayMs: number;
  /** A watch was opened since the last start (the first opens without delay). */
  hasConnected: boolean;
}

/** One watch request: its events count only while it is `live`. */
interface WatchSlot {
  live: boolean;
  controller?: AbortController;
}

/** End a kind's watch: nothing it still delivers counts. */
function endWatch(state: KindState): void {
  const w = state.watch;
  if (!w) return;
  w.live = false;
  w.controller?.abort();
  state.watch = undefined;
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
  private readonly delays = new Set<ReturnType<typeof setTimeout>>();
  /** Open watch requests, aborted by `close()`. */
  private readonly watches = new Set<AbortController>();
  private readonly recentEvents = new Map<string, RecentEvent>();
  /** Events waiting to be written, oldest first (see `emitEvent`). */
  private eventQueue: QueuedEvent[] = [];
  private eventsWriting = false;
  private eventsDropped = 0;
  private readonly maxQueuedEvents: number;
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
    this.maxQueuedEvents = Math.max(1, options.maxQueuedEvents ?? 1000);
    this.http = new KubeHttp(this.kubeConfig, options.http);
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
    // events still waiting are not written (each would fail on the closed client)
    const waiting = this.eventQueue;
    this.eventQueue = [];
    for (const e of waiting) e.done();
    if (this.resyncTimer !== undefined) clearInterval(this.resyncTimer);
    for (const t of this.delays) clearTimeout(t);
    this.delays.clear();
    for (const s of this.kinds.values()) {
      if (s.retry) clearTimeout(s.retry);
      s.handlers.clear();
      s.resolveReady();
      s.run++;
      endWatch(s);
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
      await this.http.json(
        "PATCH",
        `${collectionPath(kind, ns)}/${encodeURIComponent(name)}/status`,
        body,
        MERGE_PATCH,
      );
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
    await this.bucket.take();
    let scale: { spec?: { replicas?: number }; status?: { replicas?: number } } | null;
    try {
      scale = await this.http.json("GET", this.scalePath(kind, namespace, name)) as typeof scale;
    } catch (e) {
      throw new Error(`get scale of ${kind} ${namespace}/${name}: ${describeError(e)}`);
    }
    return {
      specReplicas: scale?.spec?.replicas ?? 0,
      statusReplicas: scale?.status?.replicas ?? 0,
    };
  }

  /** Set `spec.replicas` with a JSON merge patch on the scale subresource. */
  async setScale(kind: Kind, namespace: string, name: string, replicas: number): Promise<void> {
    const path = this.scalePath(kind, namespace, name);
    if (!Number.isInteger(replicas) || replicas < 0) {
      throw new Error(`invalid replicas ${replicas} for ${kind} ${namespace}/${name}`);
    }
    await this.bucket.take();
    try {
      await this.http.json("PATCH", path, { spec: { replicas } }, MERGE_PATCH);
    } catch (e) {
      throw new Error(`set scale of ${kind} ${namespace}/${name}: ${describeError(e)}`);
    }
  }

  /**
   * Record a core/v1 Event about an object. The same reason and message on the same object
   * within the dedupe window bumps `count` and `lastTimestamp` instead. Failures are logged,
   * not thrown: events are best effort.
   *
   * Events are written one at a time, in order, from a queue: an adapter that starts into
   * thousands of failing HPAs records an event for each, and those must neither hold the
   * rate limiter for half a minute ahead of status and scale writes nor keep thousands of
   * requests waiting in memory. When `maxQueuedEvents` wait, new events are dropped (one
   * warning, and the count once the queue drains). Resolves when the event is written, has
   * failed or was dropped.
   */
  emitEvent(kind: Kind, obj: KubeObject, event: ObjectEvent): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.eventQueue.length >= this.maxQueuedEvents) {
      if (this.eventsDropped++ === 0) {
        this.log(
          "warn",
          `${this.maxQueuedEvents} events wait to be written: new events are dropped until ` +
            `they are (the first: ${event.reason} on ${describeObject(kind, obj)})`,
        );
      }
      return Promise.resolve();
    }
    return new Promise<void>((done) => {
      this.eventQueue.push({ kind, obj, event, done });
      void this.writeQueuedEvents();
    });
  }

  private async writeQueuedEvents(): Promise<void> {
    if (this.eventsWriting) return;
    this.eventsWriting = true;
    try {
      for (let next = this.eventQueue.shift(); next; next = this.eventQueue.shift()) {
        try {
          await this.writeEvent(next.kind, next.obj, next.event);
        } finally {
          next.done();
        }
      }
    } finally {
      this.eventsWriting = false;
    }
    if (this.eventsDropped > 0) {
      const n = this.eventsDropped;
      this.log("warn", `${n} event${n === 1 ? " was" : "s were"} dropped while the queue was full`);
      this.eventsDropped = 0;
    }
  }

  private async writeEvent(kind: Kind, obj: KubeObject, event: ObjectEvent): Promise<void> {
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
    const where = describeObject(kind, obj);
    try {
      const recent = this.recentEvents.get(dedupeKey);
      if (recent) {
        await this.bucket.take();
        try {
          await this.http.json(
            "PATCH",
            `/api/v1/namespaces/${encodeURIComponent(recent.namespace)}/events/${
              encodeURIComponent(recent.name)
            }`,
            { count: recent.count + 1, lastTimestamp: rfc3339(now) },
            MERGE_PATCH,
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
      await this.http.json(
        "POST",
        `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`,
        body,
      );
      this.recentEvents.set(dedupeKey, { name, namespace, count: 1, last: now });
    } catch (e) {
      this.log("warn", `event ${event.reason} on ${where} not recorded: ${describeError(e)}`);
    }
  }

  private scalePath(kind: Kind, namespace: string, name: string): string {
    if (!KIND_RESOURCES[kind].scale) throw new Error(`kind "${kind}" has no scale subresource`);
    return `${collectionPath(kind, namespace)}/${encodeURIComponent(name)}/scale`;
  }

  private key(kind: Kind, namespace: string | undefined, name: string): string {
    return KIND_RESOURCES[kind].namespaced ? `${namespace ?? "default"}/${name}` : name;
  }

  private newState(kind: Kind): KindState {
    let resolveReady = (): void => {};
    const ready = new Promise<void>((r) => (resolveReady = r));
    return {
      kind,
      path: collectionPath(kind),
      objects: new Map(),
      handlers: new Set(),
      ready,
      resolveReady,
      synced: false,
      notInstalled: false,
      listed: false,
      error: null,
      failures: 0,
      resourceVersion: "",
      run: 0,
      reconnectDelayMs: 0,
      hasConnected: false,
    };
  }

  /** (Re)start a kind's informer from its last resourceVersion (listing if it has none). */
  private start(state: KindState): void {
    if (this.closed) return;
    const run = ++state.run;
    endWatch(state);
    state.reconnectDelayMs = 0;
    state.hasConnected = false;
    this.connect(state, run).then(() => {
      if (run === state.run && state.listed && !state.synced) {
        state.synced = true;
        state.resolveReady();
      }
    }, (e) => this.failed(state, run, e));
  }

  /** An error of the work of start number `run`: reported and restarted unless a newer one runs. */
  private failed(state: KindState, run: number, err: unknown): void {
    if (run !== state.run) return;
    state.run++; // nothing of this run goes on
    endWatch(state);
    this.onError(state, err);
  }

  /** List if needed, wait the reconnect delay if any, and open the watch. */
  private async connect(state: KindState, run: number): Promise<void> {
    const current = (): boolean => !this.closed && run === state.run;
    if (!current()) return;
    if (state.resourceVersion === "") {
      await this.relist(state);
      if (!current()) return;
    }
    if (state.reconnectDelayMs > 0 && state.hasConnected) {
      await this.delay(state.reconnectDelayMs);
      if (!current()) return;
    }
    if (state.hasConnected) {
      state.reconnectDelayMs = Math.min(
        this.backoffMaxMs,
        state.reconnectDelayMs > 0 ? state.reconnectDelayMs * 2 : this.backoffBaseMs,
      );
    }
    state.hasConnected = true;
    endWatch(state);
    const slot: WatchSlot = { live: true };
    state.watch = slot;
    // events and `done` may come before `watch` returns (Bun delivers the first chunk at once)
    const live = (): boolean => slot.live && current();
    const c = await this.http.watch(
      state.path,
      { resourceVersion: state.resourceVersion },
      (type, obj) => {
        if (live()) this.onWatchEvent(state, run, type, obj);
      },
      (err) => {
        if (slot.controller) this.watches.delete(slot.controller);
        if (!live()) return;
        slot.live = false;
        state.watch = undefined;
        this.onWatchEnd(state, run, err);
      },
    );
    slot.controller = c;
    if (!live() || c.signal.aborted) {
      c.abort();
      return;
    }
    this.watches.add(c);
    c.signal.addEventListener("abort", () => this.watches.delete(c), { once: true });
  }

  /** A watch ended by itself: resume, list again (410 Gone) or report the error. */
  private onWatchEnd(state: KindState, run: number, err: unknown): void {
    if (statusCodeOf(err) === 410) state.resourceVersion = "";
    else if ((err as Error | null)?.name === "TimeoutError") state.reconnectDelayMs = 0;
    else if (err) return this.failed(state, run, err);
    this.connect(state, run).catch((e) => this.failed(state, run, e));
  }

  private onWatchEvent(state: KindState, run: number, type: string, raw: unknown): void {
    if (!wellFormed(type, raw)) {
      this.log(
        "error",
        `watch of ${state.kind} (${state.path}) sent a malformed ${type} event: ignored`,
      );
      return;
    }
    if (type === "ERROR") {
      const status = raw as { code?: unknown; message?: unknown };
      const code = typeof status.code === "number" ? status.code : 500;
      const message = typeof status.message === "string" ? status.message : JSON.stringify(raw);
      endWatch(state);
      if (code === 410) {
        // the resourceVersion is too old: list again
        state.resourceVersion = "";
        this.connect(state, run).catch((e) => this.failed(state, run, e));
      } else {
        this.failed(
          state,
          run,
          new KubeApiError(`watch ${state.path}: ERROR event: ${message}`, code, status as never),
        );
      }
      return;
    }
    if (type !== "ADDED" && type !== "MODIFIED" && type !== "DELETED" && type !== "BOOKMARK") {
      this.log(
        "error",
        `watch of ${state.kind} (${state.path}) sent an event of unknown type ${
          JSON.stringify(type)
        }: ignored`,
      );
      return;
    }
    const obj = raw as KubeObject;
    if (type === "DELETED") this.remove(state, trimForCache(state.kind, obj));
    else if (type !== "BOOKMARK") this.upsert(state, trimForCache(state.kind, obj));
    state.reconnectDelayMs = 0;
    const rv = obj.metadata.resourceVersion;
    if (typeof rv === "string" && rv !== "") state.resourceVersion = rv;
  }

  /** List the kind and bring the cache to the list (DELETED for what it lacks). */
  private async relist(state: KindState): Promise<void> {
    state.listed = false;
    await this.bucket.take();
    if (this.closed) throw new Error("cluster source closed");
    const list = await this.http.json("GET", state.path) as {
      metadata?: { resourceVersion?: unknown };
      items?: unknown;
    } | null;
    if (!Array.isArray(list?.items)) {
      throw new Error(`GET ${state.path}: the answer is not a list (no items)`);
    }
    const fresh = new Map<string, KubeObject>();
    for (const item of list.items) {
      if (!wellFormed("ADDED", item)) {
        this.log("error", `list of ${state.kind} (${state.path}) has a malformed item: ignored`);
        continue;
      }
      const obj = trimForCache(state.kind, item as KubeObject);
      fresh.set(this.key(state.kind, obj.metadata.namespace, obj.metadata.name), obj);
    }
    state.listed = true;
    state.error = null;
    state.failures = 0;
    if (state.notInstalled) {
      state.notInstalled = false;
      this.log("info", `${state.kind} (${state.path}) is served now`);
    }
    for (const [k, old] of [...state.objects]) {
      if (!fresh.has(k)) this.apply(state, "DELETED", old);
    }
    for (const obj of fresh.values()) this.upsert(state, obj);
    const rv = list.metadata?.resourceVersion;
    state.resourceVersion = typeof rv === "string" ? rv : "";
  }

  /** ADDED or MODIFIED, unless the cache has this very resourceVersion already. */
  private upsert(state: KindState, obj: KubeObject): void {
    const old = state.objects.get(this.key(state.kind, obj.metadata.namespace, obj.metadata.name));
    const rv = obj.metadata.resourceVersion;
    if (old && rv !== undefined && rv !== null && old.metadata.resourceVersion === rv) return;
    this.apply(state, old ? "MODIFIED" : "ADDED", obj);
  }

  private remove(state: KindState, obj: KubeObject): void {
    const key = this.key(state.kind, obj.metadata.namespace, obj.metadata.name);
    if (state.objects.has(key)) this.apply(state, "DELETED", obj);
  }

  private onError(state: KindState, err: unknown): void {
    if (this.closed) return;
    const code = statusCodeOf(err);
    const path = state.path;
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
      state.resourceVersion = "";
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

  /** A reconnect delay: a timer that `close()` cancels (never resolving). */
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
  apiRequest(
    method: "GET" | "POST",
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: unknown }> {
    return this.http.apiRequest(method, path, body);
  }
}
