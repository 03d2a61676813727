/**
 * The engine: watches HPAs, plans each one, and runs one collector per distinct backend query
 * at its interval, writing values and failures into the store.
 *
 * - Reconcile per HPA on add/update/delete: only plans whose inputs changed are restarted; a
 *   bad metric of an HPA does not stop its good ones; a deleted HPA's plans leave the store.
 * - Plans with the same collector query key share one collection (a "job") per interval.
 * - One global bound on concurrent collections; each collection has a deadline
 *   (`--collection-timeout`, or the collector's own timeout when longer); at the deadline a
 *   collector may still return what it has (the pods that answered).
 * - Failures keep the last good value (until its TTL), are logged once per change of the error
 *   text and reported as a Warning event on the HPA when the reason changes (leader only; a
 *   follower keeps them and writes them once it leads). A kind that cannot be listed is the
 *   failure of the plans that read it.
 * - Conflicts between plans are checked on reconcile and after collections that may reveal
 *   them, and reported once per change.
 */
import { setMaxListeners } from "node:events";
import type { ClusterView, ClusterWriter, Kind, KubeObject } from "../cluster/types.ts";
import type { FlagValues } from "../cli/flags.ts";
import { enabledCollectors } from "../cli/flags.ts";
import type { CollectorRegistry } from "../collectors/registry.ts";
import type { Collector, CollectResult } from "../collectors/types.ts";
import { formatDuration } from "../core/duration.ts";
import { shortenValues } from "../core/quote.ts";
import { planHpa, planKey, queryKey } from "../core/plan.ts";
import type { MetricPlan } from "../core/types.ts";
import { SmallMap } from "../core/small_map.ts";
import type { MetricStore } from "../store/store.ts";
import { describedKindFor } from "../store/store.ts";
import type { ServedAt, StoredPlan } from "../store/types.ts";
import type { Logger } from "./logger.ts";
import { silentLogger } from "./logger.ts";
import { servedAtOf } from "./served_at.ts";

/** The store operations the engine uses. */
export type EngineStore = Pick<
  MetricStore,
  | "upsertPlan"
  | "removePlan"
  | "recordSuccess"
  | "recordFailure"
  | "removeObject"
  | "gc"
  | "conflicts"
  | "conflictVersion"
>;

/** Reported after every collection (own metrics count these). */
export interface CollectionReport {
  /** Collector type (`json-path`, `scaling-schedule`, ...). */
  collector: string;
  queryKey: string;
  /** Keys of the plans that received the result. */
  planKeys: string[];
  ok: boolean;
  error?: string;
  warnings: string[];
  /** ms since the epoch. */
  startedAt: number;
  durationMs: number;
}

/** A plan as the engine runs it (status page, tests). */
export interface PlanStatus {
  key: string;
  plan: MetricPlan;
  /** Why the plan does not run (planning or collector error), or null. */
  problem: string | null;
  /** The shared collection's query key, when running. */
  queryKey: string | null;
  /** The last collection error of its query, or null. */
  lastError: string | null;
}

/** Options of {@linkcode Engine}. */
export interface EngineOptions {
  cluster: ClusterView;
  store: EngineStore;
  registry: CollectorRegistry;
  /** Parsed serve flags. */
  flags: FlagValues;
  /** The clock, ms since the epoch. */
  now?: () => number;
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (handle: unknown) => void;
  fetch?: typeof fetch;
  /** In [0, 1): jitter of the collection intervals. */
  random?: () => number;
  logger?: Logger;
  /** Writes events; without it (or when not leader) no events are written. */
  writer?: ClusterWriter;
  /** Whether this replica may write (leader election). Default: always. */
  isLeader?: () => boolean;
  onCollection?: (report: CollectionReport) => void;
  /**
   * Called once per HPA reconcile (every add, update and resync), with `ok` when every metric
   * of the HPA was planned and its collector created (own metrics
   * `kube_metrics_adapter_updates_success` / `_updates_error` count these).
   */
  onReconcile?: (report: ReconcileReport) => void;
  /**
   * Called after the start, each time at least `newCollectionsBurst` collections created since
   * the last call (HPAs added while running: a cluster's first deploy, a restore) have all
   * ended their first attempt and no other was created for 10 s, with their number. The end of
   * that burst of work, as `firstRound` is the end of the start's (serve.ts gives the freed
   * memory back then).
   */
  onNewCollectionsDone?: (count: number) => void;
  /** See `onNewCollectionsDone` (default 200). */
  newCollectionsBurst?: number;
}

/** The outcome of one HPA reconcile. */
export interface ReconcileReport {
  /** `namespace/name` of the HPA. */
  hpa: string;
  ok: boolean;
}

/** Event reason of metrics that cannot be planned, collected or served. */
export const COLLECTOR_EVENT_REASON = "CreateNewMetricsCollector";

/** How long no collection may be created before a burst of new ones counts as over (ms). */
const BURST_QUIET_MS = 10_000;

/** Largest share of an interval removed at random from each wait. */
const JITTER = 0.1;

/** How often a replica with events waiting checks whether it became the leader, ms. */
const LEADER_CHECK_MS = 5000;

/** How long a collection that reached its deadline may take to return what it has. */
const ABORT_GRACE_MS = 1000;

interface PlanEntry {
  key: string;
  hpaKey: string;
  plan: MetricPlan;
  job: Job | null;
  problem: string | null;
  /** Collector unknown or disabled: the HPA may belong to another adapter. */
  incompatible: boolean;
}

interface HpaState {
  key: string;
  obj: KubeObject;
  plans: SmallMap<string, PlanEntry>;
}

interface Job {
  id: string;
  type: string;
  collector: Collector;
  subscribers: SmallMap<string, PlanEntry>;
  intervalMs: number;
  timer: unknown;
  /** Whether the first collection has started: the period is anchored there. */
  anchored: boolean;
  /** When the current tick was due, ms since the epoch (the next is due one delay later). */
  due: number;
  running: boolean;
  stopped: boolean;
  abort: AbortController | null;
  /** Ends what the job waits for (its kinds, a grace period) when it is stopped. */
  wake: (() => void) | null;
  ready: Promise<void>;
  /** Whether `ready` resolved. */
  kindsReady: boolean;
  last: { samples: CollectResult["samples"]; at: number; warnings?: string[] } | null;
  lastError: string | null;
  lastWarnings: string;
}

/** An error's message, with long values (an HPA author's) shortened. */
function errorText(e: unknown): string {
  return shortenValues(e instanceof Error ? e.message : String(e));
}

function hpaKeyOf(obj: KubeObject): string {
  return `${obj.metadata.namespace ?? "default"}/${obj.metadata.name}`;
}

/**
 * Everything a plan's collector and stored plan are made from: its query key and every plan
 * field (interval, perReplica, minPodReadyAge, scaleTargetRef, describedObject, selector,
 * config, error) except the target's numbers, of which only the type and whether it has an
 * `averageValue` reach a collector (Skipper divides by replicas without one). A plan whose
 * fingerprint changed gets a new collector; a new target value alone restarts nothing.
 */
function fingerprintOf(plan: MetricPlan): string {
  const { target, warnings: _w, ...rest } = plan;
  return JSON.stringify([
    queryKey(plan),
    rest,
    target.type,
    target.averageValue !== undefined,
  ]);
}

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
  // FNV-1a, 32 bits
  let h = 0x811c9dc5;
  for (let i = 0; i < queryKey.length; i++) {
    h ^= queryKey.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return ((h >>> 0) % 10_000 + 1) / 10_000;
}

function numberOr(flags: FlagValues, name: string, dflt: number): number {
  const v = flags[name];
  return typeof v === "number" && Number.isFinite(v) ? v : dflt;
}

function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason ?? new Error("aborted"));
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * Plans every HPA of the cluster view and keeps its metrics collected.
 *
 * @example
 * ```ts
 * const engine = new Engine({ cluster, store, registry, flags });
 * await engine.start();
 * // ... later
 * await engine.stop();
 * ```
 */
export class Engine {
  readonly #cluster: ClusterView;
  readonly #store: EngineStore;
  readonly #registry: CollectorRegistry;
  readonly #flags: FlagValues;
  readonly #now: () => number;
  readonly #setTimer: (fn: () => void, ms: number) => unknown;
  readonly #clearTimer: (handle: unknown) => void;
  readonly #fetch: typeof fetch;
  readonly #random: () => number;
  readonly #log: Logger;
  readonly #writer?: ClusterWriter;
  readonly #isLeader: () => boolean;
  readonly #onCollection?: (report: CollectionReport) => void;
  readonly #onReconcile?: (report: ReconcileReport) => void;
  readonly #onNewCollectionsDone?: (count: number) => void;
  readonly #newCollectionsBurst: number;
  readonly #enabled: ReadonlySet<string>;
  readonly #maxCollections: number;
  readonly #timeoutSeconds: number;

  #hpas = new Map<string, HpaState>();
  #jobs = new Map<string, Job>();
  #ensured = new Map<Kind, Promise<void>>();
  /** Kinds whose `ensure` failed, with the error (a source without `kindError`). */
  #ensureErrors = new Map<Kind, string>();
  #kindsReady = new Map<string, Promise<void>>();
  #unwatch: (() => void)[] = [];
  /** Last event message per plan key (or HPA key), to emit only on change. */
  #events = new Map<string, string>();
  /** Events not written because this replica was not the leader, per plan key (or HPA key). */
  #pendingEvents = new Map<string, { hpa: KubeObject; message: string }>();
  #leaderTimer: unknown = null;
  /** Conflict messages logged, per plan key. */
  #conflicts = new Map<string, string>();
  /** Slot and query key of every plan declared to the store. */
  #planSlots = new Map<string, { slot: string; query: string }>();
  /** Query keys of the plans per slot (where the store's values may collide), counted. */
  #slotQueries = new Map<string, SmallMap<string, number>>();
  /** Slots whose plans have different query keys: their collections may change conflicts. */
  #contested = new Set<string>();
  /** The store's conflict version at the last `#checkConflicts`. */
  #conflictsSeen = -1;
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
  #waiters: (() => void)[] = [];
  #inflight = new Set<Promise<void>>();
  #gcTimer: unknown = null;
  #started = false;
  #stopped = false;

  /** Creates an engine; nothing happens until {@linkcode Engine.start}. */
  constructor(options: EngineOptions) {
    this.#cluster = options.cluster;
    this.#store = options.store;
    this.#registry = options.registry;
    this.#flags = options.flags;
    this.#now = options.now ?? (() => Date.now());
    this.#setTimer = options.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
    this.#clearTimer = options.clearTimer ??
      ((h) => clearTimeout(h as ReturnType<typeof setTimeout>));
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#random = options.random ?? Math.random;
    this.#log = options.logger ?? silentLogger();
    this.#writer = options.writer;
    this.#isLeader = options.isLeader ?? (() => true);
    this.#onCollection = options.onCollection;
    this.#onReconcile = options.onReconcile;
    this.#onNewCollectionsDone = options.onNewCollectionsDone;
    this.#newCollectionsBurst = Math.max(1, options.newCollectionsBurst ?? 200);
    this.#enabled = enabledCollectors(options.flags);
    this.#maxCollections = Math.max(1, numberOr(options.flags, "max-concurrent-collections", 64));
    this.#timeoutSeconds = numberOr(options.flags, "collection-timeout", 15);
  }

  /** Watch HPAs, plan the existing ones and start their collectors. */
  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    this.#unwatch.push(
      this.#cluster.watch("HorizontalPodAutoscaler", (type, obj) => {
        if (this.#stopped) return;
        if (type === "DELETED") this.#removeHpa(hpaKeyOf(obj));
        else this.reconcile(obj);
      }),
    );
    await this.#cluster.ensure("HorizontalPodAutoscaler");
    if (this.#stopped) return;
    const hpaError = this.#cluster.kindError?.("HorizontalPodAutoscaler") ?? null;
    if (hpaError !== null) {
      this.#log.error("cannot watch kind", { kind: "HorizontalPodAutoscaler", error: hpaError });
    }
    for (const hpa of this.#cluster.list("HorizontalPodAutoscaler")) this.reconcile(hpa);
    for (const job of this.#jobs.values()) this.#firstPending.add(job);
    this.#burstCreated = 0;
    if (this.#firstPending.size === 0) this.#firstRoundDone();
    const gcSeconds = numberOr(this.#flags, "garbage-collector-interval", 600);
    if (gcSeconds > 0) {
      const gc = (): void => {
        if (this.#stopped) return;
        const freed = this.#store.gc(this.#now());
        if (freed > 0) this.#log.debug(2, "expired values freed", { count: freed });
        if (freed > 0 && this.#contested.size > 0) this.#checkConflicts();
        this.#gcTimer = this.#setTimer(gc, gcSeconds * 1000);
      };
      this.#gcTimer = this.#setTimer(gc, gcSeconds * 1000);
    }
    this.#log.info("engine started", { hpas: this.#hpas.size, collections: this.#jobs.size });
  }

  /**
   * Resolves once every collection the start planned has ended its first attempt (or was
   * stopped): the end of the start's burst of work. Never resolves before `start()`.
   */
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

  /** Stop every timer and watch, abort collections in flight and wait for them to settle. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const u of this.#unwatch.splice(0)) u();
    if (this.#gcTimer !== null) this.#clearTimer(this.#gcTimer);
    this.#gcTimer = null;
    if (this.#leaderTimer !== null) this.#clearTimer(this.#leaderTimer);
    this.#leaderTimer = null;
    this.#cancelBurstTimer();
    for (const job of this.#jobs.values()) this.#stopJob(job);
    this.#jobs.clear();
    for (const w of this.#waiters.splice(0)) w();
    await Promise.allSettled([...this.#inflight]);
  }

  /** Resolves when no collection is running or waiting (tests). */
  async idle(): Promise<void> {
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight]);
  }

  /** Every plan the engine knows, sorted by key. */
  status(): PlanStatus[] {
    const out: PlanStatus[] = [];
    for (const h of this.#hpas.values()) {
      for (const e of h.plans.values()) {
        out.push({
          key: e.key,
          plan: e.plan,
          problem: e.problem,
          queryKey: e.job?.id ?? null,
          lastError: e.job?.lastError ?? null,
        });
      }
    }
    return out.sort((a, b) => a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
  }

  /**
   * Re-plan one HPA and start, keep or stop its collectors. Called for every HPA add and
   * update; idempotent (an unchanged HPA changes nothing).
   */
  reconcile(hpa: KubeObject): void {
    if (this.#stopped) return;
    const hpaKey = hpaKeyOf(hpa);
    let plans: MetricPlan[];
    try {
      plans = planHpa(hpa, {
        defaultIntervalSeconds: numberOr(this.#flags, "default-collection-interval", 60),
        enabledCollectors: this.#enabled,
      });
    } catch (e) {
      const msg = errorText(e);
      this.#removeHpa(hpaKey);
      if (this.#lastEvent(hpaKey) !== msg) {
        this.#log.error("invalid HPA", { hpa: hpaKey, error: msg });
      }
      this.#event(hpaKey, hpa, msg, false);
      this.#onReconcile?.({ hpa: hpaKey, ok: false });
      return;
    }
    this.#clearEvent(hpaKey);
    let state = this.#hpas.get(hpaKey);
    if (!state) {
      state = { key: hpaKey, obj: hpa, plans: new SmallMap() };
      this.#hpas.set(hpaKey, state);
    }
    state.obj = hpa;
    const seen = new Set<string>();
    for (const plan of plans) {
      const key = planKey(plan);
      seen.add(key);
      const old = state.plans.get(key);
      // Compared on demand rather than kept per plan: a reconcile is rare, plans are many.
      if (old && fingerprintOf(old.plan) === fingerprintOf(plan)) {
        old.plan = plan;
        continue;
      }
      if (old) this.#stopEntry(old, false);
      state.plans.set(key, this.#startEntry(state, plan, key));
    }
    let ok = true;
    for (const [key, entry] of state.plans) {
      if (seen.has(key)) {
        if (entry.problem !== null) ok = false;
        continue;
      }
      this.#stopEntry(entry, true);
      state.plans.delete(key);
    }
    this.#checkConflicts();
    this.#onReconcile?.({ hpa: hpaKey, ok });
  }

  // -- plans ------------------------------------------------------------------------------

  #startEntry(state: HpaState, plan: MetricPlan, key: string): PlanEntry {
    const entry: PlanEntry = {
      key,
      hpaKey: state.key,
      plan,
      job: null,
      problem: null,
      incompatible: false,
    };
    const now = this.#now();
    let servedAt: ServedAt | null = null;
    try {
      servedAt = servedAtOf(plan);
    } catch (e) {
      entry.problem = errorText(e);
    }
    if (entry.problem === null && plan.error !== null) entry.problem = plan.error;
    entry.incompatible = plan.collector === null || !this.#enabled.has(plan.collector);
    let collector: Collector | null = null;
    if (entry.problem === null) {
      const factory = this.#registry.lookup(plan.collector!, plan.metricType);
      if (!factory) {
        entry.incompatible = true;
        entry.problem =
          `collector "${plan.collector}" is not available for ${plan.metricType} metrics`;
      } else {
        try {
          collector = factory.create({ plan, flags: this.#flags });
        } catch (e) {
          entry.problem = errorText(e);
        }
      }
    }
    if (servedAt) {
      const stored = this.#storedPlan(key, plan, servedAt);
      // a plan that can never be collected serves nothing, so it blocks no other HPA's value
      if (entry.problem !== null || !collector) stored.uncollectable = true;
      this.#store.upsertPlan(stored, now);
      this.#indexSlot(key, servedAt, stored.queryKey);
    }
    for (const w of plan.warnings ?? []) {
      this.#log.warn("metric configuration warning", { plan: key, warning: w });
    }
    if (entry.problem !== null || !collector) {
      const problem = entry.problem ?? "no collector";
      if (servedAt) this.#store.recordFailure(key, problem, now);
      const log = entry.incompatible && this.#flags["disregard-incompatible-hpas"] === true
        ? this.#log.debug.bind(this.#log, 1)
        : this.#log.warn.bind(this.#log);
      log("metric cannot be collected", { plan: key, error: problem });
      this.#event(
        key,
        state.obj,
        `failed to create metrics collector for ${plan.metricType} metric ${plan.metricName}: ${problem}`,
        entry.incompatible,
      );
      return entry;
    }
    this.#clearEvent(key);
    this.#log.info("collector started", {
      plan: key,
      collector: plan.collector,
      interval: formatDuration(plan.intervalSeconds),
    });
    this.#subscribe(entry, collector);
    return entry;
  }

  #storedPlan(key: string, plan: MetricPlan, servedAt: ServedAt): StoredPlan {
    const stored: StoredPlan = { key, hpa: { ...plan.hpa }, servedAt, queryKey: queryKey(plan) };
    if (servedAt.kind === "custom") {
      const d = plan.describedObject;
      const known = describedKindFor(servedAt.groupResource);
      if (plan.metricType === "Object" && d) {
        stored.describedKind = {
          kind: d.kind,
          apiVersion: d.apiVersion ?? known?.apiVersion ?? "",
        };
      } else if (known) stored.describedKind = known;
      stored.metricSelectorObject = plan.metricSelector;
    }
    return stored;
  }

  #stopEntry(entry: PlanEntry, removeFromStore: boolean): void {
    if (entry.job) this.#unsubscribe(entry);
    if (removeFromStore) {
      this.#store.removePlan(entry.key);
      this.#unindexSlot(entry.key);
      this.#clearEvent(entry.key);
      this.#conflicts.delete(entry.key);
      this.#log.info("collector stopped", { plan: entry.key });
    }
  }

  #removeHpa(hpaKey: string): void {
    const state = this.#hpas.get(hpaKey);
    if (!state) return;
    for (const entry of state.plans.values()) this.#stopEntry(entry, true);
    this.#hpas.delete(hpaKey);
    this.#clearEvent(hpaKey);
    this.#checkConflicts();
  }

  /**
   * Where the store may find two plans' values colliding (its slot: namespace, resource and
   * metric; a Pods plan's pods or an External plan's series are only known once collected).
   */
  #indexSlot(key: string, at: ServedAt, query: string): void {
    const slot = at.kind === "custom"
      ? JSON.stringify(["c", at.namespace, at.groupResource, at.metricName, at.metricSelector])
      : JSON.stringify(["e", at.namespace, at.metricName]);
    const old = this.#planSlots.get(key);
    if (old?.slot === slot && old.query === query) return;
    if (old) this.#unindexSlot(key);
    this.#planSlots.set(key, { slot, query });
    let queries = this.#slotQueries.get(slot);
    if (!queries) this.#slotQueries.set(slot, queries = new SmallMap());
    queries.set(query, (queries.get(query) ?? 0) + 1);
    if (queries.size > 1) this.#contested.add(slot);
  }

  #unindexSlot(key: string): void {
    const old = this.#planSlots.get(key);
    if (!old) return;
    this.#planSlots.delete(key);
    const queries = this.#slotQueries.get(old.slot)!;
    const n = queries.get(old.query)! - 1;
    if (n > 0) queries.set(old.query, n);
    else queries.delete(old.query);
    if (queries.size === 0) this.#slotQueries.delete(old.slot);
    if (queries.size <= 1) this.#contested.delete(old.slot);
  }

  /** Whether a collection for these plans may have changed the store's conflicts. */
  #mayConflict(keys: Iterable<string>): boolean {
    if (this.#contested.size === 0) return false;
    for (const key of keys) {
      const slot = this.#planSlots.get(key)?.slot;
      if (slot !== undefined && this.#contested.has(slot)) return true;
    }
    return false;
  }

  /** Log and report the store's conflicts once per change of their message. */
  #checkConflicts(): void {
    // nothing started or stopped conflicting since the last check: nothing to report
    if (this.#store.conflictVersion === this.#conflictsSeen) return;
    this.#conflictsSeen = this.#store.conflictVersion;
    const current = new Set<string>();
    for (const c of this.#store.conflicts()) {
      current.add(c.plan.key);
      if (this.#conflicts.get(c.plan.key) === c.message) continue;
      this.#conflicts.set(c.plan.key, c.message);
      this.#log.warn("metric conflict", { plan: c.plan.key, error: c.message });
      const state = this.#hpas.get(`${c.plan.hpa.namespace}/${c.plan.hpa.name}`);
      if (state) this.#event(c.plan.key, state.obj, c.message, false);
    }
    for (const [key, message] of [...this.#conflicts]) {
      if (current.has(key)) continue;
      this.#conflicts.delete(key);
      if (!this.#planSlots.has(key)) continue;
      this.#log.info("metric conflict resolved", { plan: key });
      // the same conflict coming back is reported again
      if (this.#lastEvent(key) === message) this.#clearEvent(key);
    }
  }

  /**
   * Write the events that waited for this replica to become the leader (the engine also checks
   * every few seconds while some wait). Call it when leadership is gained.
   */
  emitPendingEvents(): void {
    if (this.#stopped || this.#pendingEvents.size === 0 || !this.#isLeader()) return;
    const pending = [...this.#pendingEvents];
    this.#pendingEvents.clear();
    for (const [key, p] of pending) {
      if (this.#events.get(key) !== p.message) this.#writeEvent(key, p.hpa, p.message);
    }
  }

  /** The event message last emitted or waiting for `key`. */
  #lastEvent(key: string): string | undefined {
    return this.#pendingEvents.get(key)?.message ?? this.#events.get(key);
  }

  /** The problem behind `key` is gone: forget its event, written or waiting. */
  #clearEvent(key: string): void {
    this.#events.delete(key);
    this.#pendingEvents.delete(key);
  }

  /** A Warning event on the HPA, when the message for `key` changed. */
  #event(key: string, hpa: KubeObject, message: string, incompatible: boolean): void {
    if (incompatible && this.#flags["disregard-incompatible-hpas"] === true) return;
    if (this.#events.get(key) === message) {
      this.#pendingEvents.delete(key);
      return;
    }
    if (!this.#writer) {
      this.#events.set(key, message);
      return;
    }
    if (!this.#isLeader()) {
      // Written once this replica leads (another replica may have written it meanwhile; a
      // repeated event only raises its count).
      this.#pendingEvents.set(key, { hpa, message });
      this.#checkLeaderLater();
      return;
    }
    this.#pendingEvents.delete(key);
    this.#writeEvent(key, hpa, message);
  }

  #checkLeaderLater(): void {
    if (this.#leaderTimer !== null || this.#stopped) return;
    this.#leaderTimer = this.#setTimer(() => {
      this.#leaderTimer = null;
      this.emitPendingEvents();
      if (this.#pendingEvents.size > 0) this.#checkLeaderLater();
    }, LEADER_CHECK_MS);
  }

  #writeEvent(key: string, hpa: KubeObject, message: string): void {
    this.#events.set(key, message);
    this.#writer!.emitEvent("HorizontalPodAutoscaler", hpa, {
      type: "Warning",
      reason: COLLECTOR_EVENT_REASON,
      message,
    }).catch((e) => {
      this.#log.error("failed to write event", { hpa: hpaKeyOf(hpa), error: errorText(e) });
    });
  }

  // -- jobs -------------------------------------------------------------------------------

  #subscribe(entry: PlanEntry, collector: Collector): void {
    const intervalMs = Math.max(1, entry.plan.intervalSeconds) * 1000;
    let job = this.#jobs.get(collector.queryKey);
    if (!job) {
      job = {
        id: collector.queryKey,
        type: entry.plan.collector ?? "",
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
        ready: this.#ensureKinds(collector.kinds ?? []),
        kindsReady: false,
        last: null,
        lastError: null,
        lastWarnings: "",
      };
      entry.job = job;
      this.#jobs.set(job.id, job);
      if (this.#burstCreated >= 0) {
        this.#burstCreated++;
        this.#burstPending.add(job);
        this.#cancelBurstTimer();
      }
      this.#tick(job);
      return;
    }
    job.subscribers.set(entry.key, entry);
    entry.job = job;
    // A plan joining a running query gets its latest result at once.
    if (job.last) {
      this.#recordSuccess(entry.key, job.last.samples, job.last.at, job.last.warnings);
    }
    if (job.lastError) this.#store.recordFailure(entry.key, job.lastError, this.#now());
    if (intervalMs < job.intervalMs) {
      job.intervalMs = intervalMs;
      // Before its first collection starts, the job has no timer: that start schedules it.
      if (job.anchored) {
        if (job.timer !== null) this.#clearTimer(job.timer);
        job.due = this.#now();
        this.#schedule(job);
      }
    }
  }

  #unsubscribe(entry: PlanEntry): void {
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
    return Math.round(job.intervalMs * (1 - JITTER * this.#random()));
  }

  #tick(job: Job): void {
    if (job.stopped || this.#stopped) return;
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

  /** One promise per distinct list of kinds, shared by the jobs that need them. */
  #ensureKinds(kinds: readonly Kind[]): Promise<void> {
    const key = kinds.join(",");
    let p = this.#kindsReady.get(key);
    if (!p) {
      p = Promise.all(kinds.map((k) => this.#ensure(k))).then(() => {});
      this.#kindsReady.set(key, p);
    }
    return p;
  }

  #ensure(kind: Kind): Promise<void> {
    let p = this.#ensured.get(kind);
    if (p) return p;
    if (kind === "Pod") {
      // Values of a pod that goes away leave the store at once, not at the next collection.
      this.#unwatch.push(this.#cluster.watch("Pod", (type, obj, old) => {
        const gone = type === "DELETED" ||
          (type === "MODIFIED" && obj.metadata.deletionTimestamp &&
            !old?.metadata.deletionTimestamp);
        if (gone) {
          this.#store.removeObject(obj.metadata.namespace ?? "default", "pods", obj.metadata.name);
          if (this.#contested.size > 0) this.#checkConflicts();
        }
      }));
    }
    p = this.#cluster.ensure(kind).then(() => {
      const error = this.#cluster.kindError?.(kind) ?? null;
      if (error !== null) this.#log.error("cannot watch kind", { kind, error });
    }, (e) => {
      this.#ensureErrors.set(kind, errorText(e));
      this.#log.error("cannot watch kind", { kind, error: errorText(e) });
    });
    this.#ensured.set(kind, p);
    return p;
  }

  /** Take a collection slot; true when the caller had to wait for one. */
  async #acquire(): Promise<boolean> {
    if (this.#active < this.#maxCollections) {
      this.#active++;
      return false;
    }
    await new Promise<void>((resolve) => this.#waiters.push(resolve));
    return true;
  }

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
      const queued = await this.#acquire();
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
        const kindProblem = this.#kindProblem(job);
        if (kindProblem === null) await this.#collect(job);
        else this.#kindFailed(job, kindProblem);
      } finally {
        this.#release();
      }
    } finally {
      job.running = false;
      this.#firstEnded(job);
    }
  }

  /** `cannot watch <Kind>: <error>` when a kind the collector reads cannot be listed, or null. */
  #kindProblem(job: Job): string | null {
    for (const kind of job.collector.kinds ?? []) {
      const error = this.#cluster.kindError?.(kind) ?? this.#ensureErrors.get(kind) ?? null;
      if (error !== null) return `cannot watch ${kind}: ${error}`;
    }
    return null;
  }

  /** A collection that cannot run: its kind has no data (the next tick checks again). */
  #kindFailed(job: Job, error: string): void {
    const at = this.#now();
    this.#failed(job, error, at);
    this.#onCollection?.({
      collector: job.type,
      queryKey: job.id,
      planKeys: [...job.subscribers.keys()],
      ok: false,
      error,
      warnings: [],
      startedAt: at,
      durationMs: 0,
    });
  }

  /** The deadline of a collection, ms: `--collection-timeout`, or the collector's own if longer. */
  #deadlineMs(job: Job): number {
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
   * the pods that answered) within a short grace; else the collection timed out.
   */
  #afterDeadline(job: Job, pending: Promise<CollectResult>): Promise<CollectResult | null> {
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

  async #collect(job: Job): Promise<void> {
    const abort = new AbortController();
    // A Pods collection listens on its signal once per pod request: no leak warning (Node's
    // limit is 10 listeners).
    setMaxListeners(0, abort.signal);
    job.abort = abort;
    const deadlineMs = this.#deadlineMs(job);
    const timedOut = (): string =>
      `collection timed out after ${formatDuration(Math.ceil(deadlineMs / 1000))}`;
    let expired = false;
    const timeout = this.#setTimer(() => {
      expired = true;
      abort.abort(new Error(timedOut()));
    }, deadlineMs);
    const startedAt = this.#now();
    let result: CollectResult | null = null;
    let error: string | null = null;
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
      result = await raceAbort(pending, abort.signal);
    } catch (e) {
      error = errorText(e);
      if (expired && !job.stopped && !this.#stopped) {
        result = await this.#afterDeadline(job, pending);
        if (!result) error = timedOut();
      }
    } finally {
      this.#clearTimer(timeout);
      job.abort = null;
    }
    if (job.stopped || this.#stopped) return;
    const at = this.#now();
    if (result) {
      try {
        for (const key of job.subscribers.keys()) {
          this.#store.recordSuccess(key, result.samples, at, result.warnings);
        }
        job.last = { samples: result.samples, at, warnings: result.warnings };
      } catch (e) {
        error = errorText(e);
        result = null;
      }
    }
    const warnings = result?.warnings ?? [];
    if (result) {
      this.#succeeded(job, warnings);
      // A Pods plan's pods (an External plan's series) are known once written: conflicts with
      // other plans of the same metric appear or go away here, not only on reconcile.
      if (this.#mayConflict(job.subscribers.keys())) this.#checkConflicts();
    } else this.#failed(job, error ?? "collection failed", at);
    this.#log.debug(2, "collection", {
      query: job.id,
      ok: result !== null,
      samples: result?.samples.length,
      ms: at - startedAt,
    });
    this.#onCollection?.({
      collector: job.type,
      queryKey: job.id,
      planKeys: [...job.subscribers.keys()],
      ok: result !== null,
      ...(result ? {} : { error: error ?? "collection failed" }),
      warnings,
      startedAt,
      durationMs: at - startedAt,
    });
  }

  #recordSuccess(
    key: string,
    samples: CollectResult["samples"],
    at: number,
    warnings: CollectResult["warnings"],
  ): void {
    try {
      this.#store.recordSuccess(key, samples, at, warnings);
    } catch (e) {
      this.#store.recordFailure(key, errorText(e), at);
    }
  }

  #succeeded(job: Job, warnings: string[]): void {
    if (job.lastError !== null) {
      this.#log.info("collection recovered", { query: job.id, plans: [...job.subscribers.keys()] });
    }
    job.lastError = null;
    const w = warnings.join("; ");
    if (w !== job.lastWarnings) {
      if (w !== "") this.#log.warn("collection partly failed", { query: job.id, warnings: w });
      job.lastWarnings = w;
    }
    for (const key of job.subscribers.keys()) {
      if (!this.#conflicts.has(key)) this.#clearEvent(key);
    }
  }

  #failed(job: Job, error: string, at: number): void {
    for (const key of job.subscribers.keys()) this.#store.recordFailure(key, error, at);
    if (job.lastError !== error) {
      this.#log.error("collection failed", {
        query: job.id,
        plans: [...job.subscribers.keys()],
        error,
      });
    }
    job.lastError = error;
    for (const entry of job.subscribers.values()) {
      const state = this.#hpas.get(entry.hpaKey);
      if (!state) continue;
      this.#event(
        entry.key,
        state.obj,
        `failed to collect ${entry.plan.metricType} metric ${entry.plan.metricName}: ${error}`,
        false,
      );
    }
  }
}
