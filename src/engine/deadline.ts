/**
 * One collection under its deadline: the engine's collection timeout, or the collector's own
 * timeout when longer. At the deadline the collector's signal is aborted; it may still return
 * what it has (a Pods collection the pods that answered) within a short grace, else the
 * collection timed out.
 */
import { setMaxListeners } from "node:events";
import type { ClusterView } from "../cluster/types.ts";
import type { Collector, CollectResult } from "../collectors/types.ts";
import { formatDuration } from "../core/duration.ts";
import { errorText } from "./error_text.ts";
import type { Logger } from "./logger.ts";

/** How long a collection that reached its deadline may take to return what it has. */
const ABORT_GRACE_MS = 1000;

/** What {@linkcode CollectionDeadline} reads and sets on the job whose collection it runs. */
export interface DeadlineJob {
  /** The query key (logs). */
  readonly id: string;
  readonly collector: Collector;
  /** Whether the job was stopped: a stopped job waits for no grace. */
  readonly stopped: boolean;
  /** The controller of the collection running, else null (stopping the job aborts it). */
  abort: AbortController | null;
  /** Set while the job waits for a grace: stopping the job calls it to end the wait. */
  wake: (() => void) | null;
  /** When its last collection started, ms since the epoch. */
  startedAt: number;
}

/** Options of {@linkcode CollectionDeadline}. */
export interface CollectionDeadlineOptions {
  /** Handed to the collectors. */
  cluster: ClusterView;
  /** The clock, ms since the epoch (handed to the collectors). */
  now: () => number;
  /** Handed to the collectors. */
  fetch: typeof fetch;
  setTimer: (fn: () => void, ms: number) => unknown;
  clearTimer: (handle: unknown) => void;
  logger: Logger;
  /** The deadline of a collection whose collector asks for no longer one, seconds. */
  timeoutSeconds: number;
}

/** The message of a collection that reached its deadline and returned nothing in the grace. */
function timedOut(deadlineMs: number): string {
  return `collection timed out after ${formatDuration(Math.ceil(deadlineMs / 1000))}`;
}

/** `p`, or a rejection with the signal's reason as soon as it aborts. */
function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason ?? new Error("aborted"));
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * Runs collections under their deadline.
 *
 * @example
 * ```ts
 * const deadline = new CollectionDeadline({ cluster, now, fetch, setTimer, clearTimer, logger, timeoutSeconds: 15 });
 * const outcome = await deadline.collect(job);
 * if (typeof outcome === "string") console.log("failed:", outcome);
 * ```
 */
export class CollectionDeadline {
  readonly #cluster: ClusterView;
  readonly #now: () => number;
  readonly #fetch: typeof fetch;
  readonly #setTimer: (fn: () => void, ms: number) => unknown;
  readonly #clearTimer: (handle: unknown) => void;
  readonly #log: Logger;
  readonly #timeoutSeconds: number;
  #stopped = false;

  /** Creates a runner; it runs nothing until asked. */
  constructor(options: CollectionDeadlineOptions) {
    this.#cluster = options.cluster;
    this.#now = options.now;
    this.#fetch = options.fetch;
    this.#setTimer = options.setTimer;
    this.#clearTimer = options.clearTimer;
    this.#log = options.logger;
    this.#timeoutSeconds = options.timeoutSeconds;
  }

  /** From now on, a collection aborted at its deadline waits for no grace. */
  stop(): void {
    this.#stopped = true;
  }

  /**
   * Run one collection of `job` (setting its `abort` while it runs and its `startedAt`):
   * its result, or the text of its error.
   */
  async collect(job: DeadlineJob): Promise<CollectResult | string> {
    const abort = new AbortController();
    // A Pods collection listens on its signal once per pod request: no leak warning (Node's
    // limit is 10 listeners).
    setMaxListeners(0, abort.signal);
    job.abort = abort;
    const deadlineMs = this.#deadlineMs(job);
    let expired = false;
    const timeout = this.#setTimer(() => {
      expired = true;
      abort.abort(new Error(timedOut(deadlineMs)));
    }, deadlineMs);
    job.startedAt = this.#now();
    let pending: Promise<CollectResult>;
    try {
      pending = job.collector.collect({
        signal: abort.signal,
        now: this.#now,
        fetch: this.#fetch,
        cluster: this.#cluster,
      });
    } catch (e) {
      pending = Promise.reject(e);
    }
    try {
      return await raceAbort(pending, abort.signal);
    } catch (e) {
      if (expired && !job.stopped && !this.#stopped) {
        return await this.#afterDeadline(job, pending) ?? timedOut(deadlineMs);
      }
      return errorText(e);
    } finally {
      this.#clearTimer(timeout);
      job.abort = null;
    }
  }

  /** The deadline of a collection, ms: the engine's timeout, or the collector's own if longer. */
  #deadlineMs(job: DeadlineJob): number {
    let own = 0;
    try {
      own = job.collector.timeoutMs?.({ cluster: this.#cluster, now: this.#now }) ?? 0;
    } catch (e) {
      this.#log.debug(1, "collector timeout unknown", { query: job.id, error: errorText(e) });
    }
    return Math.max(this.#timeoutSeconds * 1000, Number.isFinite(own) ? own : 0);
  }

  /**
   * After its deadline aborted it, a collector may still return what it has (a Pods collection
   * the pods that answered) within a short grace; else null.
   */
  #afterDeadline(job: DeadlineJob, pending: Promise<CollectResult>): Promise<CollectResult | null> {
    return new Promise((resolve) => {
      const done = (r: CollectResult | null): void => {
        this.#clearTimer(grace);
        job.wake = null;
        resolve(r);
      };
      const grace = this.#setTimer(() => done(null), ABORT_GRACE_MS);
      job.wake = () => done(null);
      pending.then(done, () => done(null));
    });
  }
}
