/**
 * The engine: watches HPAs, plans each one, and runs one collector per distinct backend query
 * at its interval, writing values and failures into the store. It coordinates the parts that
 * sit beside it:
 *
 * - Reconcile per HPA on add/update/delete (here): only plans whose inputs changed are
 *   restarted; a bad metric of an HPA does not stop its good ones; a deleted HPA's plans leave
 *   the store.
 * - scheduler.ts: plans with the same collector query key share one collection (a "job") per
 *   interval. One global bound on concurrent collections; those due beyond it start in turn by
 *   namespace (fair_queue.ts), so one namespace's many HPAs cannot delay another's. Each
 *   collection has a deadline (`collectionTimeoutSeconds`, or the collector's own timeout when
 *   longer; deadline.ts); at the deadline a collector may still return what it has (the pods
 *   that answered). kinds.ts ensures the kinds the collectors read.
 * - namespace_limits.ts: `--max-metrics-per-namespace`: the plans of a namespace past the limit
 *   (the oldest HPAs' run first; core/namespace_limit.ts) are not collected and serve the
 *   reason as their error until others go.
 * - formulas.ts computes the formula plans from their inputs; fallback.ts serves a plan's
 *   fallback value while its source keeps failing (fallback_values.ts).
 * - Failures keep the last good value (until its TTL), are logged once per change of the error
 *   text and reported as a Warning event on the HPA when the reason changes (leader only; a
 *   follower keeps them and writes them once it leads; event_reporter.ts). A kind that cannot
 *   be listed is the failure of the plans that read it.
 * - Conflicts between plans are checked on reconcile and after collections that may reveal
 *   them, and reported once per change (conflict_index.ts).
 * - sharding.ts: `--shard-collection`, the records of the queries other replicas collect.
 */
import { fnv1a, FNV_PRIME } from "../core/hash.ts";
import type { ClusterView, ClusterWriter, KubeObject } from "../cluster/types.ts";
import type { CollectorRegistry } from "../collectors/registry.ts";
import type { Collector, CollectResult } from "../collectors/types.ts";
import { formatDuration } from "../core/duration.ts";
import { FORMULA_TYPE } from "../core/kube_metrics_adapter/configs/formula.ts";
import { planHpa, planKey, type PlanOptions, queryKey } from "../core/kube_metrics_adapter/plan.ts";
import type { MetricPlan } from "../core/types.ts";
import { SmallMap } from "../core/small_map.ts";
import { describedKindFor } from "../store/store.ts";
import type { ServedAt, StoredPlan } from "../store/types.ts";
import { ConflictIndex } from "./conflict_index.ts";
import { CollectionDeadline } from "./deadline.ts";
import { errorText } from "./error_text.ts";
import { EventReporter } from "./event_reporter.ts";
import { FallbackEpisodes, type FallbackStatus, fallbackStatus } from "./fallback.ts";
import { fallbackKinds } from "./fallback_values.ts";
import { compilePlanFormula, Formulas } from "./formulas.ts";
import { hpaKeyOf } from "./hpa_key.ts";
import { KindWatch } from "./kinds.ts";
import type { Logger } from "./logger.ts";
import { silentLogger } from "./logger.ts";
import { NamespaceLimits, namespaceOf } from "./namespace_limits.ts";
import { Scheduler } from "./scheduler.ts";
import { servedAtOf } from "./served_at.ts";
import { type PeerOutcome, type RecordStore, Sharding } from "./sharding.ts";
import type { EngineStore, HpaState, Job, PlanEntry } from "./state.ts";

export type { EngineStore, FallbackEpisode } from "./state.ts";
export type { FallbackStatus } from "./fallback.ts";
export { collectionPhase } from "./scheduler.ts";

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
  /** No collector here takes it (unknown or disabled): another adapter's, or a delegate's. */
  incompatible?: boolean;
}

/** The defaults of {@linkcode EngineOptions} (the serve flags' defaults too). */
export const ENGINE_DEFAULTS: Readonly<{
  defaultIntervalSeconds: number;
  maxConcurrentCollections: number;
  collectionTimeoutSeconds: number;
  garbageCollectorIntervalSeconds: number;
  newCollectionsBurst: number;
  minCollectionIntervalSeconds: number;
  maxMetricsPerNamespace: number;
}> = {
  defaultIntervalSeconds: 60,
  maxConcurrentCollections: 64,
  collectionTimeoutSeconds: 15,
  garbageCollectorIntervalSeconds: 600,
  newCollectionsBurst: 200,
  minCollectionIntervalSeconds: 1,
  maxMetricsPerNamespace: 0,
};

/** Options of {@linkcode Engine}; the defaults are {@linkcode ENGINE_DEFAULTS}. */
export interface EngineOptions {
  cluster: ClusterView;
  store: EngineStore;
  registry: CollectorRegistry;
  /** Interval of metrics without an `interval` annotation, seconds. */
  defaultIntervalSeconds?: number;
  /**
   * Collections running at once, over all HPAs (at least 1). Those due beyond it wait, and
   * start in turn by namespace.
   */
  maxConcurrentCollections?: number;
  /**
   * The shortest interval an annotation may ask for, seconds (`--min-collection-interval`): a
   * shorter one is a plan error (given to `planHpa`). Default 1; 0 no bound.
   */
  minCollectionIntervalSeconds?: number;
  /**
   * Most plans collected per namespace, formulas and hidden formula inputs included
   * (`--max-metrics-per-namespace`): the oldest HPAs' first (core/namespace_limit.ts); the
   * others serve an error saying so until room is made. Default 0: no limit.
   */
  maxMetricsPerNamespace?: number;
  /** Deadline of one collection, seconds (a collector may ask for a longer one). */
  collectionTimeoutSeconds?: number;
  /** How often expired values are removed from the store, seconds; 0 never. */
  garbageCollectorIntervalSeconds?: number;
  /**
   * Emit no event, and log only at debug level, for metrics whose collector is unknown or
   * disabled (their HPA belongs to another adapter). Default false.
   */
  disregardIncompatibleHpas?: boolean;
  /**
   * The metrics APIs whose reads no HPA of ours asks for go to another adapter (issue 26): a
   * metric there whose collector is unknown or disabled is that adapter's, so it gets no event
   * and only a debug log line (as with `disregardIncompatibleHpas`). Default neither.
   */
  delegatedApis?: { custom: boolean; external: boolean };
  /**
   * Collector types that are enabled; a metric of another type is reported as not enabled.
   * Default: every type of the registry.
   */
  enabledCollectors?: ReadonlySet<string>;
  /**
   * HPA annotations may name link-local addresses (cloud metadata endpoints); given to
   * `planHpa` as its config context, as the collectors are. Default false.
   */
  allowLinkLocalTargets?: boolean;
  /** Where the URLs HPA annotations name may point (given to `planHpa`); default anywhere. */
  endpointPolicy?: PlanOptions["endpointPolicy"];
  /** Scopes the PromQL queries HPAs write to their namespace (given to `planHpa`); default none. */
  scopePromQL?: PlanOptions["scopePromQL"];
  /**
   * How long a value may be served, seconds (`--metrics-ttl`): a formula never reads an input
   * value older than that. Default 900.
   */
  metricsTtlSeconds?: number;
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
  /**
   * Whether this replica collects the query with this key (`--shard-collection`: the live
   * replicas split the keys; issue 29). A query it does not own keeps its timer but is not
   * collected: its plans' values come from the owner. Call {@linkcode Engine.reshard} when the
   * answer changes. Default: every query.
   */
  owns?: (queryKey: string) => boolean;
  onCollection?: (report: CollectionReport) => void;
  /**
   * Called once per HPA reconcile (every add, update and resync), with `ok` when every metric
   * of the HPA was planned and its collector created (own metrics
   * `kube_metrics_adapter_updates_success` / `_updates_error` count these).
   */
  onReconcile?: (report: ReconcileReport) => void;
  /**
   * Plans an HPA that another system's objects describe (a KEDA ScaledObject's, issue 47): its
   * plans and a fingerprint of what they were made from (the HPA is planned again when either
   * changes), or undefined to plan it from its annotations as usual.
   */
  planOverride?: (hpa: KubeObject) => { plans: MetricPlan[]; inputs: string } | undefined;
  /**
   * Called after the start, each time at least `newCollectionsBurst` collections created since
   * the last call (HPAs added while running: a cluster's first deploy, a restore) have all
   * ended their first attempt and no other was created for 10 s, with their number. The end of
   * that burst of work, as `firstRound` is the end of the start's (serve.ts gives the freed
   * memory back then).
   */
  onNewCollectionsDone?: (count: number) => void;
  /** See `onNewCollectionsDone`. */
  newCollectionsBurst?: number;
}

/** The outcome of one HPA reconcile. */
export interface ReconcileReport {
  /** `namespace/name` of the HPA. */
  hpa: string;
  ok: boolean;
}

/**
 * Two FNV-1a hashes (32 bits each, different offsets) of what planning reads of an HPA: its
 * annotations, labels, spec and creation time, not its status, which the HPA controller
 * rewrites every sync. A status update then costs a comparison instead of planning the HPA
 * again (at 2,000 HPAs that was most of the engine's CPU at rest in cluster mode).
 */
function planInputsHash(hpa: KubeObject): number {
  const m = hpa.metadata;
  const text = JSON.stringify([
    m.annotations ?? null,
    m.labels ?? null,
    m.creationTimestamp ?? null,
    (hpa as { spec?: unknown }).spec ?? null,
  ]);
  const a = fnv1a(text);
  const b = fnv1a(text, FNV_PRIME ^ text.length, 0x5bd1e995);
  // 53 bits of the two: a collision between two versions of one HPA is not a practical concern
  return a * 0x200000 + (b & 0x1fffff);
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

function finiteOr(value: number | undefined, dflt: number): number {
  return typeof value === "number" && Number.isFinite(value) ? value : dflt;
}

/**
 * Plans every HPA of the cluster view and keeps its metrics collected.
 *
 * @example
 * ```ts
 * const engine = new Engine({ cluster, store, registry, maxConcurrentCollections: 32 });
 * await engine.start();
 * // ... later
 * await engine.stop();
 * ```
 */
export class Engine {
  readonly #cluster: ClusterView;
  readonly #store: EngineStore;
  readonly #registry: CollectorRegistry;
  readonly #now: () => number;
  readonly #setTimer: (fn: () => void, ms: number) => unknown;
  readonly #clearTimer: (handle: unknown) => void;
  readonly #log: Logger;
  readonly #onCollection?: (report: CollectionReport) => void;
  readonly #onReconcile?: (report: ReconcileReport) => void;
  readonly #enabled: ReadonlySet<string>;
  /** What every HPA is planned with (interval default, enabled collectors, config context). */
  readonly #planOptions: PlanOptions;
  readonly #planOverride?: (hpa: KubeObject) => { plans: MetricPlan[]; inputs: string } | undefined;
  readonly #disregardIncompatible: boolean;
  readonly #delegatedApis: { custom: boolean; external: boolean };
  readonly #gcSeconds: number;
  readonly #events: EventReporter;
  readonly #conflicts: ConflictIndex;
  readonly #deadline: CollectionDeadline;
  readonly #kinds: KindWatch;
  readonly #scheduler: Scheduler;
  readonly #limits: NamespaceLimits;
  readonly #fallback: FallbackEpisodes;
  readonly #formulas: Formulas;
  readonly #sharding: Sharding;

  #hpas = new Map<string, HpaState>();
  #unwatch: (() => void)[] = [];
  #gcTimer: unknown = null;
  #started = false;
  #stopped = false;

  /** Creates an engine; nothing happens until {@linkcode Engine.start}. */
  constructor(options: EngineOptions) {
    this.#cluster = options.cluster;
    this.#store = options.store;
    this.#registry = options.registry;
    this.#now = options.now ?? (() => Date.now());
    this.#setTimer = options.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
    this.#clearTimer = options.clearTimer ??
      ((h) => clearTimeout(h as ReturnType<typeof setTimeout>));
    const ttlMs = finiteOr(options.metricsTtlSeconds, 900) * 1000;

    this.#log = options.logger ?? silentLogger();
    this.#onCollection = options.onCollection;
    const owns = options.owns ?? (() => true);
    this.#onReconcile = options.onReconcile;
    this.#planOverride = options.planOverride;
    this.#enabled = options.enabledCollectors ?? new Set(options.registry.types());
    this.#planOptions = {
      defaultIntervalSeconds: finiteOr(
        options.defaultIntervalSeconds,
        ENGINE_DEFAULTS.defaultIntervalSeconds,
      ),
      enabledCollectors: this.#enabled,
      allowLinkLocalTargets: options.allowLinkLocalTargets === true,
      endpointPolicy: options.endpointPolicy,
      scopePromQL: options.scopePromQL,
      minIntervalSeconds: finiteOr(
        options.minCollectionIntervalSeconds,
        ENGINE_DEFAULTS.minCollectionIntervalSeconds,
      ),
    };
    this.#limits = new NamespaceLimits({
      limit: Math.max(
        0,
        Math.floor(
          finiteOr(options.maxMetricsPerNamespace, ENGINE_DEFAULTS.maxMetricsPerNamespace),
        ),
      ),
      admit: (entry) => this.#admit(entry),
      refuse: (entry, message) => this.#refuse(entry, message),
    });
    this.#disregardIncompatible = options.disregardIncompatibleHpas === true;
    this.#delegatedApis = options.delegatedApis ?? { custom: false, external: false };
    this.#gcSeconds = finiteOr(
      options.garbageCollectorIntervalSeconds,
      ENGINE_DEFAULTS.garbageCollectorIntervalSeconds,
    );
    this.#events = new EventReporter({
      writer: options.writer,
      isLeader: options.isLeader ?? (() => true),
      setTimer: this.#setTimer,
      clearTimer: this.#clearTimer,
      logger: this.#log,
      disregardIncompatible: this.#disregardIncompatible,
    });
    this.#conflicts = new ConflictIndex({
      store: this.#store,
      events: this.#events,
      hpaOf: (hpaKey) => this.#hpas.get(hpaKey)?.obj,
      logger: this.#log,
    });
    this.#deadline = new CollectionDeadline({
      cluster: this.#cluster,
      now: this.#now,
      fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
      setTimer: this.#setTimer,
      clearTimer: this.#clearTimer,
      logger: this.#log,
      timeoutSeconds: finiteOr(
        options.collectionTimeoutSeconds,
        ENGINE_DEFAULTS.collectionTimeoutSeconds,
      ),
    });
    this.#kinds = new KindWatch({
      cluster: this.#cluster,
      logger: this.#log,
      onPodGone: (pod) => {
        this.#store.removeObject(pod.metadata.namespace ?? "default", "pods", pod.metadata.name);
        if (this.#conflicts.contested) this.#conflicts.check();
      },
    });
    this.#scheduler = new Scheduler({
      now: this.#now,
      setTimer: this.#setTimer,
      clearTimer: this.#clearTimer,
      random: options.random ?? Math.random,
      logger: this.#log,
      owns,
      maxCollections: Math.max(
        1,
        finiteOr(options.maxConcurrentCollections, ENGINE_DEFAULTS.maxConcurrentCollections),
      ),
      newCollectionsBurst: Math.max(
        1,
        options.newCollectionsBurst ?? ENGINE_DEFAULTS.newCollectionsBurst,
      ),
      onNewCollectionsDone: options.onNewCollectionsDone,
      deadline: this.#deadline,
      kinds: this.#kinds,
      collected: (job, outcome) => this.#collected(job, outcome),
      kindFailed: (job, error) => this.#kindFailed(job, error),
    });
    this.#fallback = new FallbackEpisodes({
      cluster: this.#cluster,
      store: this.#store,
      hpas: this.#hpas,
      events: this.#events,
      now: this.#now,
      logger: this.#log,
    });
    this.#formulas = new Formulas({
      store: this.#store,
      hpas: this.#hpas,
      events: this.#events,
      conflicts: this.#conflicts,
      fallback: this.#fallback,
      now: this.#now,
      ttlMs,
      logger: this.#log,
    });
    this.#sharding = new Sharding({
      owns,
      hpas: this.#hpas,
      jobs: this.#scheduler.jobs,
      events: this.#events,
      conflicts: this.#conflicts,
      formulas: this.#formulas,
      now: this.#now,
      logger: this.#log,
    });
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
    // under a namespace limit, in its order: the plans that will run start first
    const hpas = this.#limits.order(this.#cluster.list("HorizontalPodAutoscaler"));
    for (const hpa of hpas) this.reconcile(hpa);
    this.#scheduler.startRound();
    const gcSeconds = this.#gcSeconds;
    if (gcSeconds > 0) {
      const gc = (): void => {
        if (this.#stopped) return;
        const freed = this.#store.gc(this.#now());
        if (freed > 0) this.#log.debug(2, "expired values freed", { count: freed });
        if (freed > 0 && this.#conflicts.contested) this.#conflicts.check();
        this.#gcTimer = this.#setTimer(gc, gcSeconds * 1000);
      };
      this.#gcTimer = this.#setTimer(gc, gcSeconds * 1000);
    }
    this.#log.info("engine started", {
      hpas: this.#hpas.size,
      collections: this.#scheduler.jobs.size,
    });
  }

  /**
   * Resolves once every collection the start planned has ended its first attempt (or was
   * stopped): the end of the start's burst of work. Never resolves before `start()`.
   */
  firstRound(): Promise<void> {
    return this.#scheduler.firstRound();
  }

  /** Stop every timer and watch, abort collections in flight and wait for them to settle. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const u of this.#unwatch.splice(0)) u();
    this.#kinds.stop();
    if (this.#gcTimer !== null) this.#clearTimer(this.#gcTimer);
    this.#gcTimer = null;
    this.#events.stop();
    this.#deadline.stop();
    await this.#scheduler.stop();
  }

  /** Resolves when no collection is running or waiting (tests). */
  idle(): Promise<void> {
    return this.#scheduler.idle();
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
          ...(e.incompatible ? { incompatible: true } : {}),
        });
      }
    }
    return out.sort((a, b) => a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
  }

  /**
   * Plan the HPA `namespace/name` again as the cluster has it (its plan override changed); while
   * the cluster does not have it, as `pending` (the HPA its owner is about to write: its metrics
   * are collected from now on). Neither: the HPA's plans go (its owner dropped it before writing).
   */
  replan(namespace: string, name: string, pending?: KubeObject): void {
    const hpa = this.#cluster.get("HorizontalPodAutoscaler", namespace, name) ?? pending;
    if (hpa) this.reconcile(hpa);
    else if (this.#hpas.has(`${namespace}/${name}`)) this.#removeHpa(`${namespace}/${name}`);
  }

  /**
   * Re-plan one HPA and start, keep or stop its collectors. Called for every HPA add and
   * update; idempotent (an unchanged HPA changes nothing).
   */
  reconcile(hpa: KubeObject): void {
    if (this.#stopped) return;
    const hpaKey = hpaKeyOf(hpa);
    const override = this.#planOverride?.(hpa);
    const inputs = override ? fnv1a(override.inputs, planInputsHash(hpa)) : planInputsHash(hpa);
    const known = this.#hpas.get(hpaKey);
    if (known && known.inputs === inputs) {
      // a status update (or a resync): nothing planning reads changed
      known.obj = hpa;
      let ok = true;
      for (const entry of known.plans.values()) if (entry.problem !== null) ok = false;
      this.#onReconcile?.({ hpa: hpaKey, ok });
      return;
    }
    let plans: MetricPlan[];
    try {
      plans = override ? override.plans : planHpa(hpa, this.#planOptions);
    } catch (e) {
      const msg = errorText(e);
      this.#removeHpa(hpaKey);
      if (this.#events.last(hpaKey) !== msg) {
        this.#log.error("invalid HPA", { hpa: hpaKey, error: msg });
      }
      this.#events.report(hpaKey, hpa, msg, false);
      this.#onReconcile?.({ hpa: hpaKey, ok: false });
      return;
    }
    this.#events.clear(hpaKey);
    let state = this.#hpas.get(hpaKey);
    if (!state) {
      state = { key: hpaKey, obj: hpa, plans: new SmallMap(), inputs };
      this.#hpas.set(hpaKey, state);
    }
    state.obj = hpa;
    state.inputs = inputs;
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
    for (const [key, entry] of state.plans) {
      if (seen.has(key)) continue;
      this.#stopEntry(entry, true);
      state.plans.delete(key);
    }
    this.#limits.settle(namespaceOf(hpaKey));
    let ok = true;
    for (const entry of state.plans.values()) if (entry.problem !== null) ok = false;
    this.#formulas.wire(state);
    this.#conflicts.check();
    this.#onReconcile?.({ hpa: hpaKey, ok });
  }

  /**
   * How the last collection of an HPA's External metric (listed, else a formula's input) went (KEDA's scale loop reads
   * it): its last collected value, its error while it fails, its consecutive failures, whether
   * its fallback serves (a formula's value and a fallback's are the store's). Undefined when the
   * HPA has no such plan.
   */
  planReading(
    namespace: string,
    name: string,
    metricName: string,
  ): { value?: number; error?: string; failures: number; fallback: boolean } | undefined {
    const state = this.#hpas.get(`${namespace}/${name}`);
    if (!state) return undefined;
    let found: PlanEntry | undefined;
    for (const e of state.plans.values()) {
      const p = e.plan;
      if (p.metricType !== "External" || p.metricName !== metricName) continue;
      // a listed metric before a formula's hidden input of the same name
      if (!found || (found.plan.hidden && !p.hidden)) found = e;
    }
    if (!found) return undefined;
    const error = found.problem ?? found.formulaError ??
      (found.failures > 0 ? found.job?.lastError : null);
    // a collected plan's last value (a hidden one is never in the store); a formula's is there
    const value = found.job?.last?.samples[0]?.value;
    return {
      ...(value !== undefined ? { value } : {}),
      ...(error ? { error } : {}),
      failures: found.failures,
      fallback: found.fallbackOn,
    };
  }

  /** Every plan with a fallback: whether it is active, and its consecutive failures. */
  fallbackStatus(): FallbackStatus[] {
    return fallbackStatus(this.#hpas.values());
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
      failures: 0,
      fallbackOn: false,
      fallbackLast: null,
      dependents: null,
      formula: null,
      formulaError: null,
      collector: null,
      rank: null,
      admitted: false,
      refused: null,
    };
    const now = this.#now();
    let servedAt: ServedAt | null = null;
    try {
      // a hidden formula input is collected, never served
      if (!plan.hidden) servedAt = servedAtOf(plan);
    } catch (e) {
      entry.problem = errorText(e);
    }
    if (entry.problem === null && plan.error !== null) entry.problem = plan.error;
    const isFormula = plan.collector === FORMULA_TYPE;
    entry.incompatible = plan.collector === null ||
      (!isFormula && !this.#enabled.has(plan.collector));
    let collector: Collector | null = null;
    if (entry.problem === null && isFormula) {
      try {
        entry.formula = compilePlanFormula(plan);
      } catch (e) {
        entry.problem = errorText(e);
      }
    } else if (entry.problem === null) {
      const factory = this.#registry.lookup(plan.collector!, plan.metricType);
      if (!factory) {
        entry.incompatible = true;
        entry.problem =
          `collector "${plan.collector}" is not available for ${plan.metricType} metrics`;
      } else {
        try {
          collector = factory.create({ plan });
        } catch (e) {
          entry.problem = errorText(e);
        }
      }
    }
    if (servedAt) {
      const stored = this.#storedPlan(key, plan, servedAt);
      // a plan that can never be collected serves nothing, so it blocks no other HPA's value
      if (entry.problem !== null || (!collector && !entry.formula)) stored.uncollectable = true;
      if (entry.incompatible) stored.incompatible = true;
      this.#store.upsertPlan(stored, now);
      this.#conflicts.index(key, servedAt, stored.queryKey);
    }
    for (const w of plan.warnings ?? []) {
      this.#log.warn("metric configuration warning", { plan: key, warning: w });
    }
    if (entry.problem === null && plan.fallback) {
      // the scale target and its pods, read when a fallback value is computed
      void this.#kinds.ensureKinds(fallbackKinds(plan));
    }
    if (entry.problem === null && (entry.formula || collector)) {
      entry.collector = collector;
      if (this.#limits.limit === 0) this.#admit(entry);
      else {
        // started, or refused, when the reconcile settles its namespace
        entry.rank = this.#limits.rankOf(state.obj, plan);
        this.#limits.rank(entry);
      }
      return entry;
    }
    // it cannot run: its problem is served instead, and reported
    const problem = entry.problem ?? "no collector";
    if (servedAt) this.#store.recordFailure(key, problem, now);
    // served by the delegate of its API (a hidden formula input is never served)
    const delegated = entry.incompatible && servedAt !== null &&
      this.#delegatedApis[servedAt.kind];
    const log = (entry.incompatible && this.#disregardIncompatible) || delegated
      ? this.#log.debug.bind(this.#log, 1)
      : this.#log.warn.bind(this.#log);
    log("metric cannot be collected", { plan: key, error: problem });
    if (delegated) this.#events.clear(key);
    else {
      this.#events.report(
        key,
        state.obj,
        `failed to create metrics collector for ${plan.metricType} metric ${plan.metricName}: ${problem}`,
        entry.incompatible,
      );
    }
    return entry;
  }

  /** Start a plan that can run: its collector's job, or its formula. */
  #admit(entry: PlanEntry): void {
    const plan = entry.plan;
    const wasRefused = entry.refused !== null;
    entry.admitted = true;
    entry.refused = null;
    entry.problem = null;
    this.#events.clear(entry.key);
    if (wasRefused && !plan.hidden) {
      this.#store.upsertPlan(this.#storedPlan(entry.key, plan, servedAtOf(plan)), this.#now());
    }
    if (entry.formula) {
      // evaluated after its inputs' collections (wired at the end of the reconcile)
      this.#log.info("formula started", { plan: entry.key, expression: plan.formula?.expression });
      if (wasRefused) {
        const state = this.#hpas.get(entry.hpaKey);
        if (state) this.#formulas.wire(state);
      }
      return;
    }
    this.#log.info("collector started", {
      plan: entry.key,
      collector: plan.collector,
      interval: formatDuration(plan.intervalSeconds),
    });
    this.#subscribe(entry, entry.collector!);
  }

  /**
   * Stop (or never start) a plan that could run, over its namespace's limit: it serves the
   * reason as its error, not its last value, and says so once in an event.
   */
  #refuse(entry: PlanEntry, message: string): void {
    const wasAdmitted = entry.admitted;
    entry.admitted = false;
    entry.refused = message;
    entry.problem = message;
    if (entry.job) this.#scheduler.unsubscribe(entry);
    const at = this.#now();
    const plan = entry.plan;
    if (!plan.hidden) {
      const stored = this.#storedPlan(entry.key, plan, servedAtOf(plan));
      stored.uncollectable = true;
      this.#store.upsertPlan(stored, at);
      if (wasAdmitted) this.#store.recordSuccess(entry.key, [], at);
      this.#store.recordFailure(entry.key, message, at);
    }
    entry.failures = 0;
    this.#fallback.end(entry, "the metric is not collected: over its namespace's limit");
    this.#log.warn("metric not collected", { plan: entry.key, error: message });
    const state = this.#hpas.get(entry.hpaKey);
    if (state) {
      this.#events.report(
        entry.key,
        state.obj,
        `failed to create metrics collector for ${plan.metricType} metric ${plan.metricName}: ${message}`,
        false,
      );
    }
    this.#formulas.evaluateDependents([entry], at);
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
    if (entry.job) this.#scheduler.unsubscribe(entry);
    entry.admitted = false;
    if (entry.rank !== null) this.#limits.unrank(entry);
    if (removeFromStore) {
      this.#store.removePlan(entry.key);
      this.#conflicts.unindex(entry.key);
      this.#events.clear(entry.key);
      this.#conflicts.forget(entry.key);
      this.#log.info("collector stopped", { plan: entry.key });
    }
  }

  #removeHpa(hpaKey: string): void {
    const state = this.#hpas.get(hpaKey);
    if (!state) return;
    for (const entry of state.plans.values()) this.#stopEntry(entry, true);
    this.#hpas.delete(hpaKey);
    this.#limits.settle(namespaceOf(hpaKey));
    this.#events.clear(hpaKey);
    this.#conflicts.check();
  }

  /**
   * Write the events that waited for this replica to become the leader (the engine also checks
   * every few seconds while some wait). Call it when leadership is gained.
   */
  emitPendingEvents(): void {
    if (this.#stopped) return;
    this.#events.emitPending();
  }

  // -- collections ------------------------------------------------------------------------

  /** Collect a plan that runs: its query's job; joining a running one, its latest outcome. */
  #subscribe(entry: PlanEntry, collector: Collector): void {
    const job = this.#scheduler.subscribe(entry, collector);
    if (job === null) return;
    entry.failures = job.failures;
    // A plan joining a running query gets its latest result at once.
    if (job.last) {
      this.#recordSuccess(entry.key, job.last.samples, job.last.at, job.last.warnings);
    }
    if (job.lastError) this.#store.recordFailure(entry.key, job.lastError, this.#now());
  }

  /**
   * After a change of membership (`owns` answers differently): the queries that became ours
   * are collected now, not at their next tick, so that a replica that left leaves no value
   * without refresh for longer than it takes to notice. Returns how many started.
   */
  reshard(): number {
    return this.#scheduler.reshard();
  }

  /**
   * What a peer collected for a plan (sharding, issue 29): a success is written to the store;
   * a failure too, and it is reported as this replica's own failures are (a Warning event
   * when its text changes, written by the leader), so that the leader writes the events of
   * every replica's collections; a success clears the plan's event state. The query's state
   * here follows the owner's (last result, consecutive failures), and the formulas that read
   * the plan are evaluated again: a formula whose inputs are collected by different replicas
   * is computed on each of them from all its inputs.
   */
  peerRecord(store: RecordStore, key: string, outcome: PeerOutcome, at: number): void {
    this.#sharding.peerRecord(store, key, outcome, at);
  }

  /**
   * Sharding: the values of queries another replica collects and that nothing was heard of for
   * two intervals plus `graceMs` (the lease duration) are no longer served, here only (`store`
   * is the store without the push): a replica cut off from its peers serves no stale value.
   * The next record of the query brings them back. Returns how many queries were withdrawn.
   */
  withdrawUnheard(store: RecordStore, graceMs: number): number {
    return this.#sharding.withdrawUnheard(store, graceMs);
  }

  /** How many queries this replica collects, of how many (own metrics, status). */
  shardShare(): { owned: number; total: number } {
    return this.#sharding.share();
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

  /** Record the outcome of a collection (its result, or the text of its error). */
  #collected(job: Job, outcome: CollectResult | string): void {
    if (job.stopped || this.#stopped) return;
    const startedAt = job.startedAt;
    let result = typeof outcome === "string" ? null : outcome;
    let error = typeof outcome === "string" ? outcome : null;
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
      this.#formulas.evaluateDependents(job.subscribers.values(), at);
      // A Pods plan's pods (an External plan's series) are known once written: conflicts with
      // other plans of the same metric appear or go away here, not only on reconcile.
      if (this.#conflicts.mayConflict(job.subscribers.keys())) this.#conflicts.check();
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
    job.failures = 0;
    for (const entry of job.subscribers.values()) {
      entry.failures = 0;
      this.#fallback.end(entry, "its source answers again");
    }
    const w = warnings.join("; ");
    if (w !== job.lastWarnings) {
      if (w !== "") this.#log.warn("collection partly failed", { query: job.id, warnings: w });
      job.lastWarnings = w;
    }
    for (const key of job.subscribers.keys()) {
      if (!this.#conflicts.has(key)) this.#events.clear(key);
    }
  }

  #failed(job: Job, error: string, at: number): void {
    job.failures++;
    for (const entry of job.subscribers.values()) {
      entry.failures++;
      if (entry.plan.fallback) this.#fallback.failure(entry, error, at);
      else this.#store.recordFailure(entry.key, error, at);
    }
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
      // a plan serving its fallback has said so in its own event
      if (!state || entry.fallbackOn) continue;
      this.#events.report(
        entry.key,
        state.obj,
        `failed to collect ${entry.plan.metricType} metric ${entry.plan.metricName}: ${error}`,
        false,
      );
    }
    this.#formulas.evaluateDependents(job.subscribers.values(), at);
  }
}
