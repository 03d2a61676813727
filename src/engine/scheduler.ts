/**
 * The scheduling of collections. Plans with the same collector query key share one collection
 * (a job) run at the shortest of their intervals, jittered, its period anchored where its first
 * collection starts. One global bound on concurrent collections; those due beyond it start in
 * turn by namespace (fair_queue.ts). Each collection runs under its deadline (deadline.ts) once
 * the kinds it reads are synced. It also tells when the start's first round of collections
 * ended (`firstRound`), and when a burst of new collections did (`onNewCollectionsDone`).
 */
import type { Collector, CollectResult } from "../collectors/types.ts";
import { fnv1a } from "../core/hash.ts";
import { SmallMap } from "../core/small_map.ts";
import type { CollectionDeadline } from "./deadline.ts";
import { errorText } from "./error_text.ts";
import { FairQueue } from "./fair_queue.ts";
import type { KindWatch } from "./kinds.ts";
import type { Logger } from "./logger.ts";
import { noteOwner } from "./sharding.ts";
import type { Job, PlanEntry } from "./state.ts";

/** How long no collection may be created before a burst of new ones counts as over (ms). */
const BURST_QUIET_MS = 10_000;

/**
 * Width of the jitter of each wait, as a share of the interval: a wait is the interval plus or
 * minus half of this, uniformly, so collections are spread around their interval while their
 * average rate stays one per interval (a one-sided jitter that only shortens waits collected
 * about 5% more often).
 */
const JITTER = 0.1;

/**
 * Where in its interval a query's collections fall once they are spread, in (0, 1]: a hash of
 * the query key, so the same query keeps its phase across restarts.
 *
 * @example
 * ```ts
 * collectionPhase("json-path/Pods|team-a|Deployment/web|..."); // e.g. 0.412
 * ```
 */
export function collectionPhase(queryKey: string): number {
  return (fnv1a(queryKey) % 10_000 + 1) / 10_000;
}

/** What {@linkcode Scheduler} runs collections with, and where their outcomes go. */
export interface SchedulerOptions {
  now: () => number;
  setTimer: (fn: () => void, ms: number) => unknown;
  clearTimer: (handle: unknown) => void;
  /** In [0, 1): jitter of the intervals. */
  random: () => number;
  logger: Logger;
  /** Whether this replica collects the query with this key (sharding). */
  owns: (queryKey: string) => boolean;
  /** Collections running at once (at least 1). */
  maxCollections: number;
  /** See `EngineOptions.newCollectionsBurst`. */
  newCollectionsBurst: number;
  onNewCollectionsDone?: (count: number) => void;
  /** Runs one collection under its deadline. */
  deadline: CollectionDeadline;
  /** The kinds the collectors read. */
  kinds: KindWatch;
  /** The outcome of a collection: its result, or the text of its error. */
  collected: (job: Job, outcome: CollectResult | string) => void;
  /** A collection that cannot run: a kind it reads has no data. */
  kindFailed: (job: Job, error: string) => void;
}

/**
 * The jobs and their timers.
 *
 * @example
 * ```ts
 * const scheduler = new Scheduler({ now, setTimer, clearTimer, random, logger, owns,
 *   maxCollections: 64, newCollectionsBurst: 200, deadline, kinds, collected, kindFailed });
 * const joined = scheduler.subscribe(entry, collector); // null: a new collection started
 * scheduler.unsubscribe(entry);
 * await scheduler.stop();
 * ```
 */
export class Scheduler {
  readonly #now: () => number;
  readonly #setTimer: (fn: () => void, ms: number) => unknown;
  readonly #clearTimer: (handle: unknown) => void;
  readonly #random: () => number;
  readonly #log: Logger;
  readonly #owns: (queryKey: string) => boolean;
  readonly #maxCollections: number;
  readonly #newCollectionsBurst: number;
  readonly #onNewCollectionsDone?: (count: number) => void;
  readonly #deadline: CollectionDeadline;
  readonly #kinds: KindWatch;
  readonly #collected: (job: Job, outcome: CollectResult | string) => void;
  readonly #kindFailed: (job: Job, error: string) => void;

  readonly #jobs = new Map<string, Job>();
  /** Jobs of the start whose first collection has not ended yet (see `firstRound`). */
  #firstPending = new Set<Job>();
  /** Collections created after the start whose first attempt has not ended. */
  #burstPending = new Set<Job>();
  /** Collections created since the last `onNewCollectionsDone`; -1 until the start is done. */
  #burstCreated = -1;
  #burstTimer: unknown = null;
  #firstRoundDone: () => void = () => {};
  readonly #firstRound = new Promise<void>((resolve) => {
    this.#firstRoundDone = resolve;
  });
  #active = 0;
  /** Collections waiting for a slot, by namespace. */
  #waiters = new FairQueue<() => void>();
  #inflight = new Set<Promise<void>>();
  #stopped = false;

  /** Schedules with what `options` gives; no job until the first subscription. */
  constructor(options: SchedulerOptions) {
    this.#now = options.now;
    this.#setTimer = options.setTimer;
    this.#clearTimer = options.clearTimer;
    this.#random = options.random;
    this.#log = options.logger;
    this.#owns = options.owns;
    this.#maxCollections = options.maxCollections;
    this.#newCollectionsBurst = options.newCollectionsBurst;
    this.#onNewCollectionsDone = options.onNewCollectionsDone;
    this.#deadline = options.deadline;
    this.#kinds = options.kinds;
    this.#collected = options.collected;
    this.#kindFailed = options.kindFailed;
  }

  /** The jobs, by query key. */
  get jobs(): ReadonlyMap<string, Job> {
    return this.#jobs;
  }

  /**
   * The end of the start's reconciles: the jobs there are now make its first round, and the
   * jobs created from now on count towards bursts of new collections.
   */
  startRound(): void {
    for (const job of this.#jobs.values()) this.#firstPending.add(job);
    this.#burstCreated = 0;
    if (this.#firstPending.size === 0) this.#firstRoundDone();
  }

  /** See `Engine.firstRound`. */
  firstRound(): Promise<void> {
    return this.#firstRound;
  }

  #firstEnded(job: Job): void {
    if (this.#firstPending.delete(job) && this.#firstPending.size === 0) this.#firstRoundDone();
    if (
      this.#burstPending.delete(job) && this.#burstPending.size === 0 &&
      this.#burstCreated >= this.#newCollectionsBurst && !this.#stopped
    ) {
      // HPAs created one after another drain the set many times: the burst is over only once
      // nothing new came for a while
      this.#cancelBurstTimer();
      this.#burstTimer = this.#setTimer(() => {
        this.#burstTimer = null;
        if (this.#stopped || this.#burstPending.size > 0) return;
        const count = this.#burstCreated;
        this.#burstCreated = 0;
        try {
          this.#onNewCollectionsDone?.(count);
        } catch (e) {
          this.#log.error("onNewCollectionsDone failed", { error: errorText(e) });
        }
      }, BURST_QUIET_MS);
    }
  }

  #cancelBurstTimer(): void {
    if (this.#burstTimer !== null) this.#clearTimer(this.#burstTimer);
    this.#burstTimer = null;
  }

  /**
   * Stop every job and timer, and let the collections waiting for a slot go (they see the
   * stop); resolves once the collections in flight settled.
   */
  stop(): Promise<unknown> {
    this.#stopped = true;
    this.#cancelBurstTimer();
    for (const job of this.#jobs.values()) this.#stopJob(job);
    this.#jobs.clear();
    for (let w = this.#waiters.shift(); w !== undefined; w = this.#waiters.shift()) w();
    return Promise.allSettled([...this.#inflight]);
  }

  /** Resolves when no collection is running or waiting. */
  async idle(): Promise<void> {
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight]);
  }

  /**
   * Collect the plan with `collector` (its query key's job): a new job starts at once and the
   * result is null; else the plan joins the running job, returned (the caller gives the plan
   * the job's latest outcome), whose interval becomes the plan's when shorter.
   */
  subscribe(entry: PlanEntry, collector: Collector): Job | null {
    const intervalMs = Math.max(1, entry.plan.intervalSeconds) * 1000;
    let job = this.#jobs.get(collector.queryKey);
    if (!job) {
      job = {
        id: collector.queryKey,
        type: entry.plan.collector ?? "",
        namespace: entry.plan.hpa.namespace,
        collector,
        subscribers: new SmallMap([[entry.key, entry]]),
        intervalMs,
        timer: null,
        anchored: false,
        due: 0,
        running: false,
        stopped: false,
        abort: null,
        wake: null,
        startedAt: 0,
        ready: this.#kinds.ensureKinds(collector.kinds ?? []),
        kindsReady: false,
        last: null,
        lastError: null,
        failures: 0,
        lastWarnings: "",
        owned: true,
        heardAt: this.#now(),
        withdrawn: false,
      };
      entry.job = job;
      this.#jobs.set(job.id, job);
      if (this.#burstCreated >= 0) {
        this.#burstCreated++;
        this.#burstPending.add(job);
        this.#cancelBurstTimer();
      }
      this.#tick(job);
      return null;
    }
    job.subscribers.set(entry.key, entry);
    entry.job = job;
    if (intervalMs < job.intervalMs) {
      job.intervalMs = intervalMs;
      // Before its first collection starts, the job has no timer: that start schedules it.
      if (job.anchored) {
        if (job.timer !== null) this.#clearTimer(job.timer);
        job.due = this.#now();
        this.#schedule(job);
      }
    }
    return job;
  }

  /** The plan leaves its job; the last plan to leave stops it. */
  unsubscribe(entry: PlanEntry): void {
    const job = entry.job;
    entry.job = null;
    if (!job) return;
    job.subscribers.delete(entry.key);
    if (job.subscribers.size === 0) {
      this.#stopJob(job);
      this.#jobs.delete(job.id);
      return;
    }
    let min = Infinity;
    for (const s of job.subscribers.values()) {
      min = Math.min(min, Math.max(1, s.plan.intervalSeconds) * 1000);
    }
    job.intervalMs = min;
  }

  #stopJob(job: Job): void {
    job.stopped = true;
    this.#firstEnded(job);
    if (job.timer !== null) this.#clearTimer(job.timer);
    job.timer = null;
    job.abort?.abort(new Error("collector stopped"));
    job.wake?.();
  }

  #delay(job: Job): number {
    return Math.round(job.intervalMs * (1 + JITTER * (this.#random() - 0.5)));
  }

  #tick(job: Job): void {
    if (job.stopped || this.#stopped) return;
    const owned = this.#owns(job.id);
    noteOwner(job, owned, this.#now);
    if (!owned) {
      // another replica collects it: no timer here (reshard() starts it when it is ours)
      job.timer = null;
      this.#firstEnded(job);
      return;
    }
    if (job.anchored) this.#schedule(job);
    if (job.running) {
      this.#log.debug(2, "collection still running, interval skipped", { query: job.id });
      return;
    }
    const p = this.#run(job);
    this.#inflight.add(p);
    p.finally(() => this.#inflight.delete(p));
  }

  /**
   * The next tick, one (jittered) interval after the time this one was due, not after the
   * time its timer fired: a late timer (a busy event loop) makes the next wait shorter rather
   * than delaying every later collection. After a stall longer than a delay, missed ticks
   * are not made up: the next is one delay from now.
   */
  #schedule(job: Job, delay: number = this.#delay(job)): void {
    const now = this.#now();
    job.due = job.due + delay > now ? job.due + delay : now + delay;
    job.timer = this.#setTimer(() => this.#tick(job), job.due - now);
  }

  /** See `Engine.reshard`. */
  reshard(): number {
    let started = 0;
    for (const job of this.#jobs.values()) {
      const owned = this.#owns(job.id);
      if (owned && !job.owned && !job.stopped) {
        if (job.timer !== null) this.#clearTimer(job.timer);
        job.timer = null;
        job.due = this.#now();
        started++;
        if (!job.running) this.#tick(job);
        else {
          // its last collection (from before it went elsewhere) is still running: the next
          // one is an interval from now
          job.owned = true;
          if (job.anchored) this.#schedule(job);
        }
        // #tick rescheduled from `due`: the next collection is one interval from now
      } else noteOwner(job, owned, this.#now);
    }
    return started;
  }

  /**
   * Take a collection slot; true when the caller had to wait for one. Waiting collections get
   * the slots freed in turn by namespace, not in the order they came.
   */
  async #acquire(namespace: string): Promise<boolean> {
    if (this.#active < this.#maxCollections) {
      this.#active++;
      return false;
    }
    await new Promise<void>((resolve) => this.#waiters.push(namespace, resolve));
    return true;
  }

  /** Hand the slot to the next waiting collection, if any. */
  #release(): void {
    const next = this.#waiters.shift();
    if (next) next();
    else this.#active--;
  }

  async #run(job: Job): Promise<void> {
    job.running = true;
    try {
      if (!job.kindsReady) {
        // Until its kinds are synced; a stop ends the wait (a kind may never sync).
        await new Promise<void>((resolve) => {
          job.wake = resolve;
          job.ready.then(() => {
            job.kindsReady = true;
            resolve();
          });
        });
        job.wake = null;
      }
      if (job.stopped || this.#stopped) return;
      const queued = await this.#acquire(job.namespace);
      try {
        if (job.stopped || this.#stopped) return;
        if (!job.anchored) {
          // The period starts when the first collection does, not when the job was created.
          // Jobs created together (a start, a resync) queue behind the concurrency bound; a
          // job that had to queue has its second collection at its own point of the interval
          // (from its query key), so that the burst does not come back every interval.
          job.anchored = true;
          job.due = this.#now();
          this.#schedule(
            job,
            queued ? Math.max(1, Math.round(job.intervalMs * collectionPhase(job.id))) : undefined,
          );
        }
        const kindProblem = this.#kinds.problem(job.collector.kinds);
        if (kindProblem === null) this.#collected(job, await this.#deadline.collect(job));
        else this.#kindFailed(job, kindProblem);
      } finally {
        this.#release();
      }
    } finally {
      job.running = false;
      this.#firstEnded(job);
    }
  }
}
