/**
 * The recorder of core/v1 Events, as client-go's broadcaster: events wait in a bounded queue
 * and are written one at a time, in order; a repeat of an event within the dedupe window bumps
 * its `count` instead of creating another.
 *
 * @module
 */
import { describeError, type KubeHttp, statusCodeOf } from "./kube_http.ts";
import type { KubeLogger } from "./kube_logger.ts";
import { MERGE_PATCH } from "./merge_patch.ts";
import type { TokenBucket } from "./rate_limiter.ts";
import { apiVersionOf, type Kind, type KubeObject, type ObjectEvent } from "./types.ts";

/** Options of `EventRecorder`. */
export interface EventRecorderOptions {
  /** The HTTP layer the events are written through. */
  http: KubeHttp;
  /** The rate limit each write waits on. */
  bucket: TokenBucket;
  /** Where failures and dropped events are reported (must not throw). */
  log: KubeLogger;
  /** The clock, ms since the epoch (event timestamps and dedupe). */
  now: () => number;
  /** An equal event within this window bumps `count` instead of creating one. */
  dedupeMs: number;
  /** `source.component` and `reportingComponent` of events. */
  component: string;
  /** Beyond this many events waiting, new ones are dropped until the queue drains (at least 1). */
  maxQueuedEvents: number;
}

/** An event waiting in `EventRecorder`'s queue. */
interface QueuedEvent {
  kind: Kind;
  obj: KubeObject;
  event: ObjectEvent;
  done: () => void;
}

interface RecentEvent {
  name: string;
  namespace: string;
  count: number;
  last: number;
}

/** `Kind namespace/name` (`Kind name` for a cluster-scoped object), for log lines. */
function describeObject(kind: Kind, obj: KubeObject): string {
  const ns = obj.metadata.namespace;
  return `${kind} ${ns ? `${ns}/` : ""}${obj.metadata.name}`;
}

/** Kubernetes timestamps: RFC 3339 in seconds (metav1.Time). */
function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** Writes events about objects, one at a time from a bounded queue, best effort. */
export class EventRecorder {
  readonly #http: KubeHttp;
  readonly #bucket: TokenBucket;
  readonly #log: KubeLogger;
  readonly #now: () => number;
  readonly #dedupeMs: number;
  readonly #component: string;
  readonly #maxQueuedEvents: number;
  readonly #recentEvents = new Map<string, RecentEvent>();
  /** Events waiting to be written, oldest first (see `emit`). */
  #eventQueue: QueuedEvent[] = [];
  #eventsWriting = false;
  #eventsDropped = 0;
  #closed = false;

  constructor(options: EventRecorderOptions) {
    this.#http = options.http;
    this.#bucket = options.bucket;
    this.#log = options.log;
    this.#now = options.now;
    this.#dedupeMs = options.dedupeMs;
    this.#component = options.component;
    this.#maxQueuedEvents = Math.max(1, options.maxQueuedEvents);
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
  emit(kind: Kind, obj: KubeObject, event: ObjectEvent): Promise<void> {
    if (this.#closed) return Promise.resolve();
    if (this.#eventQueue.length >= this.#maxQueuedEvents) {
      if (this.#eventsDropped++ === 0) {
        this.#log(
          "warn",
          `${this.#maxQueuedEvents} events wait to be written: new events are dropped until ` +
            `they are (the first: ${event.reason} on ${describeObject(kind, obj)})`,
        );
      }
      return Promise.resolve();
    }
    return new Promise<void>((done) => {
      this.#eventQueue.push({ kind, obj, event, done });
      void this.#writeQueuedEvents();
    });
  }

  /** Take no more events; those still waiting are not written (their promises resolve). */
  close(): void {
    this.#closed = true;
    // events still waiting are not written (each would fail on the closed client)
    const waiting = this.#eventQueue;
    this.#eventQueue = [];
    for (const e of waiting) e.done();
  }

  async #writeQueuedEvents(): Promise<void> {
    if (this.#eventsWriting) return;
    this.#eventsWriting = true;
    try {
      for (let next = this.#eventQueue.shift(); next; next = this.#eventQueue.shift()) {
        try {
          await this.#writeEvent(next.kind, next.obj, next.event);
        } finally {
          next.done();
        }
      }
    } finally {
      this.#eventsWriting = false;
    }
    if (this.#eventsDropped > 0) {
      const n = this.#eventsDropped;
      this.#log(
        "warn",
        `${n} event${n === 1 ? " was" : "s were"} dropped while the queue was full`,
      );
      this.#eventsDropped = 0;
    }
  }

  async #writeEvent(kind: Kind, obj: KubeObject, event: ObjectEvent): Promise<void> {
    const now = this.#now();
    for (const [k, e] of this.#recentEvents) {
      if (now - e.last >= this.#dedupeMs) this.#recentEvents.delete(k);
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
      const recent = this.#recentEvents.get(dedupeKey);
      if (recent) {
        await this.#bucket.take();
        try {
          await this.#http.json(
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
        source: { component: this.#component },
        reportingComponent: this.#component,
        firstTimestamp: rfc3339(now),
        lastTimestamp: rfc3339(now),
        count: 1,
      };
      await this.#bucket.take();
      await this.#http.json(
        "POST",
        `/api/v1/namespaces/${encodeURIComponent(namespace)}/events`,
        body,
      );
      this.#recentEvents.set(dedupeKey, { name, namespace, count: 1, last: now });
    } catch (e) {
      this.#log("warn", `event ${event.reason} on ${where} not recorded: ${describeError(e)}`);
    }
  }
}
