/**
 * The informer of one kind: list + watch of the Kubernetes API into a cache, with handlers told
 * of every change.
 *
 * It lists the kind, then watches it from the list's resourceVersion, as client-go's reflector:
 * a watch the server ended (its `timeoutSeconds`) or that stalled resumes at once from the last
 * resourceVersion; one closed early resumes after a delay (1 s doubling to 30 s, reset by any
 * event); 410 Gone (an answer or an ERROR event) lists again, and the cache is brought to the
 * list (DELETED for what is gone). On any other error the informer stops and is restarted with a
 * back-off (1 s doubling to 30 s), from its last resourceVersion. A kind whose CRD is not
 * installed (404 on list) counts as synced and empty, and is retried every 60 s. A kind whose
 * list fails otherwise (403 without RBAC for it, 500) releases `ready` after the first failure,
 * empty, with the error in `error`, and is retried with the back-off.
 *
 * Lists and watch events are plain JSON from `KubeHttp` (kube_http.ts), trimmed to what the
 * adapter reads (trim.ts).
 *
 * @module
 */
import { describeError, KubeApiError, type KubeHttp, statusCodeOf } from "./kube_http.ts";
import type { KubeLogger } from "./kube_logger.ts";
import type { TokenBucket } from "./rate_limiter.ts";
import { trimForCache } from "./trim.ts";
import {
  apiVersionOf,
  collectionPath,
  type Kind,
  KIND_RESOURCES,
  type KubeObject,
  type WatchEventType,
  type WatchHandler,
} from "./types.ts";

/** Options of `Informer`, the same for every kind of a cluster source. */
export interface InformerOptions {
  /** The HTTP layer of lists and watches. */
  http: KubeHttp;
  /** The rate limit each list waits on (watches do not). */
  bucket: TokenBucket;
  /** Where failures, malformed events and handler errors are reported (must not throw). */
  log: KubeLogger;
  /** How often a kind whose CRD is not installed is listed again (ms). */
  notInstalledRetryMs: number;
  /** First delay after an error (ms), doubled up to `backoffMaxMs`. */
  backoffBaseMs: number;
  /** Longest delay after errors (ms). */
  backoffMaxMs: number;
}

/** One watch request: its events count only while it is `live`. */
interface WatchSlot {
  live: boolean;
  controller?: AbortController;
}

/** Whether a watch event's object can be read (an object; with a name unless ERROR). */
function wellFormed(phase: string, obj: unknown): boolean {
  if (typeof obj !== "object" || obj === null || Array.isArray(obj)) return false;
  if (phase === "ERROR") return true;
  const metadata = (obj as { metadata?: unknown }).metadata;
  if (typeof metadata !== "object" || metadata === null) return false;
  return phase === "BOOKMARK" || typeof (metadata as { name?: unknown }).name === "string";
}

/** List + watch of one kind into a cache; started by `start()`, stopped by `close()`. */
export class Informer {
  readonly kind: Kind;
  /** The collection's URL path (all namespaces). */
  readonly path: string;
  /**
   * Resolves after the first list, whether it worked, failed (see `error`) or found no CRD, and
   * on `close()`.
   */
  readonly ready: Promise<void>;
  readonly #resolveReady: () => void;
  readonly #namespaced: boolean;
  readonly #http: KubeHttp;
  readonly #bucket: TokenBucket;
  readonly #log: KubeLogger;
  readonly #notInstalledRetryMs: number;
  readonly #backoffBaseMs: number;
  readonly #backoffMaxMs: number;
  readonly #objects = new Map<string, KubeObject>();
  /** The same objects by namespace (namespaced kinds): a namespace's list reads only its own. */
  readonly #byNamespace = new Map<string, Map<string, KubeObject>>();
  readonly #handlers = new Set<WatchHandler>();
  /** Change counters by namespace (see `version`). */
  readonly #versions = new Map<string, number>();
  #synced = false;
  /** The CRD is not installed (last list answered 404). */
  #notInstalled = false;
  /** The last list worked (false while one is in flight or after one failed). */
  #listed = false;
  /** Why the last list failed (other than 404), or null after a list that worked. */
  #error: string | null = null;
  #failures = 0;
  #retry?: ReturnType<typeof setTimeout>;
  /** Where the next watch starts; "" lists first. */
  #resourceVersion = "";
  /** Counts starts: work of an earlier start (a list, a watch, a delay) stops where it sees it. */
  #run = 0;
  /** The open watch. */
  #watch?: WatchSlot;
  /** Delay before a watch that ended early is opened again; an event resets it. */
  #reconnectDelayMs = 0;
  /** A watch was opened since the last start (the first opens without delay). */
  #hasConnected = false;
  readonly #delays = new Set<ReturnType<typeof setTimeout>>();
  /** Open watch requests, aborted by `close()`. */
  readonly #watches = new Set<AbortController>();
  #closed = false;

  constructor(kind: Kind, options: InformerOptions) {
    this.kind = kind;
    this.path = collectionPath(kind);
    this.#namespaced = KIND_RESOURCES[kind].namespaced;
    let resolveReady = (): void => {};
    this.ready = new Promise<void>((r) => (resolveReady = r));
    this.#resolveReady = resolveReady;
    this.#http = options.http;
    this.#bucket = options.bucket;
    this.#log = options.log;
    this.#notInstalledRetryMs = options.notInstalledRetryMs;
    this.#backoffBaseMs = options.backoffBaseMs;
    this.#backoffMaxMs = options.backoffMaxMs;
  }

  /**
   * Why the kind has no data: the error of its last list, or null once a list worked, while the
   * first list is in flight and when its CRD is not installed.
   */
  get error(): string | null {
    return this.#error;
  }

  /** Whether the kind has synced and its CRD was found (false while missing or syncing). */
  get installed(): boolean {
    return this.#synced && !this.#notInstalled;
  }

  /** Objects from the cache, in one namespace or all. Do not mutate them. */
  list(namespace?: string): KubeObject[] {
    if (namespace === undefined || !this.#namespaced) return [...this.#objects.values()];
    const inNamespace = this.#byNamespace.get(namespace);
    return inNamespace === undefined ? [] : [...inNamespace.values()];
  }

  /** One object from the cache (namespace defaults to "default" for namespaced kinds). */
  get(namespace: string | undefined, name: string): KubeObject | undefined {
    return this.#objects.get(this.#key(namespace, name));
  }

  /** A counter that changes whenever a cached object in `namespace` does. */
  version(namespace: string): number {
    return this.#versions.get(namespace) ?? 0;
  }

  /** Call `handler` on every change; returns the unsubscribe function. */
  subscribe(handler: WatchHandler): () => void {
    this.#handlers.add(handler);
    return () => void this.#handlers.delete(handler);
  }

  /** Pass every cached object to the handlers again (MODIFIED, `old` is the object itself). */
  resync(): void {
    for (const obj of [...this.#objects.values()]) this.#notify("MODIFIED", obj, obj);
  }

  /** (Re)start from the last resourceVersion (listing if there is none). */
  start(): void {
    if (this.#closed) return;
    const run = ++this.#run;
    this.#endWatch();
    this.#reconnectDelayMs = 0;
    this.#hasConnected = false;
    this.#connect(run).then(() => {
      if (run === this.#run && this.#listed && !this.#synced) {
        this.#synced = true;
        this.#resolveReady();
      }
    }, (e) => this.#failed(run, e));
  }

  /** Stop the watch, retries and delays; drop the handlers; `ready` resolves. */
  close(): void {
    this.#closed = true;
    for (const t of this.#delays) clearTimeout(t);
    this.#delays.clear();
    if (this.#retry) clearTimeout(this.#retry);
    this.#handlers.clear();
    this.#resolveReady();
    this.#run++;
    this.#endWatch();
    for (const c of this.#watches) c.abort();
    this.#watches.clear();
  }

  #key(namespace: string | undefined, name: string): string {
    return this.#namespaced ? `${namespace ?? "default"}/${name}` : name;
  }

  /** End the watch: nothing it still delivers counts. */
  #endWatch(): void {
    const w = this.#watch;
    if (!w) return;
    w.live = false;
    w.controller?.abort();
    this.#watch = undefined;
  }

  /** An error of the work of start number `run`: reported and restarted unless a newer one runs. */
  #failed(run: number, err: unknown): void {
    if (run !== this.#run) return;
    this.#run++; // nothing of this run goes on
    this.#endWatch();
    this.#onError(err);
  }

  /** List if needed, wait the reconnect delay if any, and open the watch. */
  async #connect(run: number): Promise<void> {
    const current = (): boolean => !this.#closed && run === this.#run;
    if (!current()) return;
    if (this.#resourceVersion === "") {
      await this.#relist();
      if (!current()) return;
    }
    if (this.#reconnectDelayMs > 0 && this.#hasConnected) {
      await this.#delay(this.#reconnectDelayMs);
      if (!current()) return;
    }
    if (this.#hasConnected) {
      this.#reconnectDelayMs = Math.min(
        this.#backoffMaxMs,
        this.#reconnectDelayMs > 0 ? this.#reconnectDelayMs * 2 : this.#backoffBaseMs,
      );
    }
    this.#hasConnected = true;
    this.#endWatch();
    const slot: WatchSlot = { live: true };
    this.#watch = slot;
    // events and `done` may come before `watch` returns (Bun delivers the first chunk at once)
    const live = (): boolean => slot.live && current();
    const c = await this.#http.watch(
      this.path,
      { resourceVersion: this.#resourceVersion },
      (type, obj) => {
        if (live()) this.#onWatchEvent(run, type, obj);
      },
      (err) => {
        if (slot.controller) this.#watches.delete(slot.controller);
        if (!live()) return;
        slot.live = false;
        this.#watch = undefined;
        this.#onWatchEnd(run, err);
      },
    );
    slot.controller = c;
    if (!live() || c.signal.aborted) {
      c.abort();
      return;
    }
    this.#watches.add(c);
    c.signal.addEventListener("abort", () => this.#watches.delete(c), { once: true });
  }

  /** A watch ended by itself: resume, list again (410 Gone) or report the error. */
  #onWatchEnd(run: number, err: unknown): void {
    if (statusCodeOf(err) === 410) this.#resourceVersion = "";
    else if ((err as Error | null)?.name === "TimeoutError") this.#reconnectDelayMs = 0;
    else if (err) return this.#failed(run, err);
    this.#connect(run).catch((e) => this.#failed(run, e));
  }

  #onWatchEvent(run: number, type: string, raw: unknown): void {
    if (!wellFormed(type, raw)) {
      this.#log(
        "error",
        `watch of ${this.kind} (${this.path}) sent a malformed ${type} event: ignored`,
      );
      return;
    }
    if (type === "ERROR") {
      const status = raw as { code?: unknown; message?: unknown };
      const code = typeof status.code === "number" ? status.code : 500;
      const message = typeof status.message === "string" ? status.message : JSON.stringify(raw);
      this.#endWatch();
      if (code === 410) {
        // the resourceVersion is too old: list again
        this.#resourceVersion = "";
        this.#connect(run).catch((e) => this.#failed(run, e));
      } else {
        this.#failed(
          run,
          new KubeApiError(`watch ${this.path}: ERROR event: ${message}`, code, status as never),
        );
      }
      return;
    }
    if (type !== "ADDED" && type !== "MODIFIED" && type !== "DELETED" && type !== "BOOKMARK") {
      this.#log(
        "error",
        `watch of ${this.kind} (${this.path}) sent an event of unknown type ${
          JSON.stringify(type)
        }: ignored`,
      );
      return;
    }
    const obj = raw as KubeObject;
    if (type === "DELETED") this.#remove(trimForCache(this.kind, obj));
    else if (type !== "BOOKMARK") this.#upsert(trimForCache(this.kind, obj));
    this.#reconnectDelayMs = 0;
    const rv = obj.metadata.resourceVersion;
    if (typeof rv === "string" && rv !== "") this.#resourceVersion = rv;
  }

  /** List the kind and bring the cache to the list (DELETED for what it lacks). */
  async #relist(): Promise<void> {
    this.#listed = false;
    await this.#bucket.take();
    if (this.#closed) throw new Error("cluster source closed");
    const list = await this.#http.json("GET", this.path) as {
      metadata?: { resourceVersion?: unknown };
      items?: unknown;
    } | null;
    if (!Array.isArray(list?.items)) {
      throw new Error(`GET ${this.path}: the answer is not a list (no items)`);
    }
    const fresh = new Map<string, KubeObject>();
    for (const item of list.items) {
      if (!wellFormed("ADDED", item)) {
        this.#log("error", `list of ${this.kind} (${this.path}) has a malformed item: ignored`);
        continue;
      }
      const obj = trimForCache(this.kind, item as KubeObject);
      fresh.set(this.#key(obj.metadata.namespace, obj.metadata.name), obj);
    }
    this.#listed = true;
    this.#error = null;
    this.#failures = 0;
    if (this.#notInstalled) {
      this.#notInstalled = false;
      this.#log("info", `${this.kind} (${this.path}) is served now`);
    }
    for (const [k, old] of [...this.#objects]) {
      if (!fresh.has(k)) this.#apply("DELETED", old);
    }
    for (const obj of fresh.values()) this.#upsert(obj);
    const rv = list.metadata?.resourceVersion;
    this.#resourceVersion = typeof rv === "string" ? rv : "";
  }

  /** ADDED or MODIFIED, unless the cache has this very resourceVersion already. */
  #upsert(obj: KubeObject): void {
    const old = this.#objects.get(this.#key(obj.metadata.namespace, obj.metadata.name));
    const rv = obj.metadata.resourceVersion;
    if (old && rv !== undefined && rv !== null && old.metadata.resourceVersion === rv) return;
    this.#apply(old ? "MODIFIED" : "ADDED", obj);
  }

  #remove(obj: KubeObject): void {
    const key = this.#key(obj.metadata.namespace, obj.metadata.name);
    if (this.#objects.has(key)) this.#apply("DELETED", obj);
  }

  #onError(err: unknown): void {
    if (this.#closed) return;
    const code = statusCodeOf(err);
    const path = this.path;
    if (code === 404 && !this.#listed) {
      if (!this.#notInstalled) {
        this.#log(
          "warn",
          `${this.kind} is not served (${path}: 404; is its CRD installed?): ` +
            `treating it as empty, retrying every ${Math.round(this.#notInstalledRetryMs / 1000)}s`,
        );
      }
      this.#notInstalled = true;
      this.#error = null;
      for (const obj of [...this.#objects.values()]) this.#apply("DELETED", obj);
      this.#resourceVersion = "";
      this.#synced = true;
      this.#resolveReady();
      this.#retryIn(this.#notInstalledRetryMs);
      return;
    }
    const wait = Math.min(this.#backoffMaxMs, this.#backoffBaseMs * 2 ** this.#failures);
    this.#failures++;
    if (!this.#listed) {
      // the kind has no data: callers waiting for it go on (its lists stay empty) and can tell why
      this.#error = describeError(err);
      this.#resolveReady();
    }
    this.#log(
      "warn",
      `watch of ${this.kind} (${path}) failed: ${describeError(err)}; retrying in ${wait}ms`,
    );
    this.#retryIn(wait);
  }

  #retryIn(ms: number): void {
    if (this.#retry) clearTimeout(this.#retry);
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      this.start();
    }, ms);
  }

  /** A reconnect delay: a timer that `close()` cancels (never resolving). */
  #delay(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.#closed) return;
      const t = setTimeout(() => {
        this.#delays.delete(t);
        resolve();
      }, ms);
      this.#delays.add(t);
    });
  }

  #apply(type: WatchEventType, raw: KubeObject): void {
    const obj = raw;
    obj.apiVersion ??= apiVersionOf(this.kind);
    obj.kind ??= this.kind;
    const key = this.#key(obj.metadata.namespace, obj.metadata.name);
    const old = this.#objects.get(key);
    if (type === "DELETED") this.#objects.delete(key);
    else this.#objects.set(key, obj);
    if (this.#namespaced) this.#index(key, type === "DELETED" ? undefined : obj, old);
    const v = obj.metadata.namespace ?? "";
    this.#versions.set(v, (this.#versions.get(v) ?? 0) + 1);
    this.#notify(type, obj, old);
  }

  /** Keep `#byNamespace` as `#objects`: `obj` (undefined: deleted) replaces `old` at `key`. */
  #index(key: string, obj: KubeObject | undefined, old: KubeObject | undefined): void {
    const was = old?.metadata.namespace;
    const now = obj?.metadata.namespace;
    if (was !== undefined && was !== now) {
      const from = this.#byNamespace.get(was);
      from?.delete(key);
      if (from?.size === 0) this.#byNamespace.delete(was);
    }
    if (obj === undefined || now === undefined) return;
    let into = this.#byNamespace.get(now);
    if (into === undefined) this.#byNamespace.set(now, into = new Map());
    into.set(key, obj);
  }

  #notify(type: WatchEventType, obj: KubeObject, old: KubeObject | undefined): void {
    for (const h of [...this.#handlers]) {
      try {
        h(type, obj, old);
      } catch (e) {
        this.#log("error", `watch handler of ${this.kind} failed: ${describeError(e)}`);
      }
    }
  }
}
