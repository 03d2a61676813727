/**
 * The engine: watches HPAs, plans each one, and runs one collector per distinct backend query
 * at its interval, writing values and failures into the store.
 *
 * - Reconcile per HPA on add/update/delete: only plans whose inputs changed are restarted; a
 *   bad metric of an HPA does not stop its good ones; a deleted HPA's plans leave the store.
 * - Plans with the same collector query key share one collection (a "job") per interval.
 * - One global bound on concurrent collections; those due beyond it start in turn by
 *   namespace (fair_queue.ts), so one namespace's many HPAs cannot delay another's. Each
 *   collection has a deadline (`collectionTimeoutSeconds`, or the collector's own timeout when
 *   longer; deadline.ts); at the deadline a collector may still return what it has (the pods
 *   that answered).
 * - `--max-metrics-per-namespace`: the plans of a namespace past the limit (the oldest HPAs'
 *   run first; core/namespace_limit.ts) are not collected and serve the reason as their error
 *   until others go.
 * - Failures keep the last good value (until its TTL), are logged once per change of the error
 *   text and reported as a Warning event on the HPA when the reason changes (leader only; a
 *   follower keeps them and writes them once it leads; event_reporter.ts). A kind that cannot
 *   be listed is the failure of the plans that read it.
 * - Conflicts between plans are checked on reconcile and after collections that may reveal
 *   them, and reported once per change (conflict_index.ts).
 */
import { fnv1a, FNV_PRIME } from "../core/hash.ts";
import type { ClusterView, ClusterWriter, Kind, KubeObject } from "../cluster/types.ts";
import type { CollectorRegistry } from "../collectors/registry.ts";
import type { Collector, CollectResult } from "../collectors/types.ts";
import { formatDuration } from "../core/duration.ts";
import { FORMULA_TYPE } from "../core/kube_metrics_adapter/configs/formula.ts";
import { fallbackActive } from "../core/fallback.ts";
import {
  type CompiledFormula,
  compileFormula,
  evaluateFormula,
  truncateToMilli,
} from "../core/formula.ts";
import { planHpa, planKey, type PlanOptions, queryKey } from "../core/kube_metrics_adapter/plan.ts";
import {
  compareMetricRank,
  hpaCreatedAt,
  type MetricRank,
  namespaceLimitMessage,
} from "../core/namespace_limit.ts";
import type { MetricPlan } from "../core/types.ts";
import { SmallMap } from "../core/small_map.ts";
import type { MetricStore } from "../store/store.ts";
import { describedKindFor } from "../store/store.ts";
import type { ServedAt, StoredPlan } from "../store/types.ts";
import { ConflictIndex } from "./conflict_index.ts";
import { FALLBACK_ACTIVE_REASON, FALLBACK_ENDED_REASON } from "./event_reporter.ts";
import { CollectionDeadline } from "./deadline.ts";
import { errorText } from "./error_text.ts";
import { EventReporter } from "./event_reporter.ts";
import { FairQueue } from "./fair_queue.ts";
import {
  fallbackEndMessage,
  fallbackKinds,
  fallbackSamples,
  fallbackStartMessage,
  inputValue,
} from "./fallback_values.ts";
import { hpaKeyOf } from "./hpa_key.ts";
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

/** A plan with a fallback, for own metrics. */
export interface FallbackStatus {
  hpa: { namespace: string; name: string };
  metricType: string;
  metricName: string;
  /** Whether the fallback value is served now. */
  active: boolean;
  /** Consecutive failed collections (of a formula: the most of any input). */
  consecutiveFailures: number;
  /** Its last fallback episode; absent while it never was active. */
  last?: FallbackEpisode;
}

/** The last time a plan's fallback value was served (the status page shows it). */
export interface FallbackEpisode {
  /** When it became active, ms since the epoch. */
  since: number;
  /** When it ended, ms since the epoch; null while active. */
  endedAt: number | null;
  /** The value served last (per pod for a Pods metric) and the replica count it stands for. */
  value: number;
  replicas: number;
  /** Why it started; why it ended (null while active). */
  cause: string;
  endReason: string | null;
}

/** The outcome of one HPA reconcile. */
export interface ReconcileReport {
  /** `namespace/name` of the HPA. */
  hpa: string;
  ok: boolean;
}

/** How long no collection may be created before a burst of new ones counts as over (ms). */
const BURST_QUIET_MS = 10_000;

/**
 * Width of the jitter of each wait, as a share of the interval: a wait is the interval plus or
 * minus half of this, uniformly, so collections are spread around their interval while their
 * average rate stays one per interval (a one-sided jitter that only shortens waits collected
 * about 5% more often).
 */
const JITTER = 0.1;

interface PlanEntry {
  key: string;
  hpaKey: string;
  plan: MetricPlan;
  job: Job | null;
  problem: string | null;
  /** Collector unknown or disabled: the HPA may belong to another adapter. */
  incompatible: boolean;
  /** Consecutive failed collections of its query since it joined; a success resets it. */
  failures: number;
  /** Its fallback value is served now. */
  fallbackOn: boolean;
  /** Its last fallback episode, null until it has one (an object only for plans that had one). */
  fallbackLast: FallbackEpisode | null;
  /** The formulas that read it (wired on each reconcile of its HPA). */
  dependents: Set<PlanEntry> | null;
  /** A formula: its compiled expression and the entries of its inputs. */
  formula: { compiled: CompiledFormula; inputs: { identifier: string; entry: PlanEntry }[] } | null;
  /** A formula: the message of its last failure (logged once per change). */
  formulaError: string | null;
  /** Its collector, made when planned; subscribed while it runs. */
  collector: Collector | null;
  /** Under `--max-metrics-per-namespace`: its place in its namespace's order, else null. */
  rank: MetricRank | null;
  /** Its collector (or formula) runs. */
  admitted: boolean;
  /** Why it does not run although it could: over its namespace's limit (also its `problem`). */
  refused: string | null;
}

/** The plans of one namespace that could run, under `--max-metrics-per-namespace`. */
interface NamespacePlans {
  /** In their order (oldest HPA first); the first `limit` run. */
  ranked: PlanEntry[];
  /** Plans added, and the number removed, since the namespace was last settled. */
  added: PlanEntry[];
  removed: number;
}

interface HpaState {
  key: string;
  obj: KubeObject;
  plans: SmallMap<string, PlanEntry>;
  /** A hash of what planning reads (see `planInputsHash`): an update that keeps it replans nothing. */
  inputs: number;
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

interface Job {
  id: string;
  type: string;
  /** Its plans' namespace (a query key includes it): collections wait in turn by namespace. */
  namespace: string;
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
  /** When its last collection started, ms since the epoch. */
  startedAt: number;
  ready: Promise<void>;
  /** Whether `ready` resolved. */
  kindsReady: boolean;
  last: { samples: CollectResult["samples"]; at: number; warnings?: string[] } | null;
  lastError: string | null;
  /** Consecutive failed collections; a success resets it. */
  failures: number;
  lastWarnings: string;
  /** Whether this replica collected it at its last tick (sharding; see `EngineOptions.owns`). */
  owned: boolean;
  /**
   * Sharding: when this replica last heard of the query (a peer's record, or the moment it
   * stopped collecting it), local ms; its values are withdrawn once that is too old.
   */
  heardAt: number;
  /** Sharding: its values were withdrawn for want of news (until the next record). */
  withdrawn: boolean;
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
  return (fnv1a(queryKey) % 10_000 + 1) / 10_000;
}

/** The namespace of an HPA key (`namespace/name`). */
function namespaceOf(hpaKey: string): string {
  return hpaKey.slice(0, hpaKey.indexOf("/"));
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
  readonly #random: () => number;
  readonly #log: Logger;
  readonly #onCollection?: (report: CollectionReport) => void;
  readonly #owns: (queryKey: string) => boolean;
  readonly #onReconcile?: (report: ReconcileReport) => void;
  readonly #onNewCollectionsDone?: (count: number) => void;
  readonly #newCollectionsBurst: number;
  readonly #enabled: ReadonlySet<string>;
  /** What every HPA is planned with (interval default, enabled collectors, config context). */
  readonly #planOptions: PlanOptions;
  readonly #planOverride?: (hpa: KubeObject) => { plans: MetricPlan[]; inputs: string } | undefined;
  readonly #disregardIncompatible: boolean;
  readonly #delegatedApis: { custom: boolean; external: boolean };
  readonly #maxCollections: number;
  readonly #gcSeconds: number;
  readonly #events: EventReporter;
  readonly #conflicts: ConflictIndex;
  readonly #deadline: CollectionDeadline;
  readonly #ttlMs: number;
  /** `--max-metrics-per-namespace`; 0 no limit. */
  readonly #limit: number;
  /** Under a limit: the plans that could run, per namespace. */
  #namespaces = new Map<string, NamespacePlans>();

  #hpas = new Map<string, HpaState>();
  #jobs = new Map<string, Job>();
  #ensured = new Map<Kind, Promise<void>>();
  /** Kinds whose `ensure` failed, with the error (a source without `kindError`). */
  #ensureErrors = new Map<Kind, string>();
  #kindsReady = new Map<string, Promise<void>>();
  #unwatch: (() => void)[] = [];
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
    this.#random = options.random ?? Math.random;
    this.#ttlMs = finiteOr(options.metricsTtlSeconds, 900) * 1000;

    this.#log = options.logger ?? silentLogger();
    this.#onCollection = options.onCollection;
    this.#owns = options.owns ?? (() => true);
    this.#onReconcile = options.onReconcile;
    this.#planOverride = options.planOverride;
    this.#onNewCollectionsDone = options.onNewCollectionsDone;
    this.#newCollectionsBurst = Math.max(
      1,
      options.newCollectionsBurst ?? ENGINE_DEFAULTS.newCollectionsBurst,
    );
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
    this.#limit = Math.max(
      0,
      Math.floor(finiteOr(options.maxMetricsPerNamespace, ENGINE_DEFAULTS.maxMetricsPerNamespace)),
    );
    this.#disregardIncompatible = options.disregardIncompatibleHpas === true;
    this.#delegatedApis = options.delegatedApis ?? { custom: false, external: false };
    this.#maxCollections = Math.max(
      1,
      finiteOr(options.maxConcurrentCollections, ENGINE_DEFAULTS.maxConcurrentCollections),
    );
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
    let hpas = this.#cluster.list("HorizontalPodAutoscaler");
    // under a namespace limit, in its order: the plans that will run start first, and no
    // collector is started and stopped again for an older HPA listed later
    if (this.#limit > 0) {
      const rank = (o: KubeObject): MetricRank => ({
        createdAt: hpaCreatedAt(o),
        hpa: o.metadata.name,
        index: 0,
      });
      hpas = [...hpas].sort((a, b) => compareMetricRank(rank(a), rank(b)));
    }
    for (const hpa of hpas) this.reconcile(hpa);
    for (const job of this.#jobs.values()) this.#firstPending.add(job);
    this.#burstCreated = 0;
    if (this.#firstPending.size === 0) this.#firstRoundDone();
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
    this.#events.stop();
    this.#deadline.stop();
    this.#cancelBurstTimer();
    for (const job of this.#jobs.values()) this.#stopJob(job);
    this.#jobs.clear();
    for (let w = this.#waiters.shift(); w !== undefined; w = this.#waiters.shift()) w();
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
          ...(e.incompatible ? { incompatible: true } : {}),
        });
      }
    }
    return out.sort((a, b) => a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
  }

  /**
   * Re-plan one HPA and start, keep or stop its collectors. Called for every HPA add and
   * update; idempotent (an unchanged HPA changes nothing).
   */
  /** Plan the HPA `namespace/name` again as the cluster has it (its plan override changed). */
  replan(namespace: string, name: string): void {
    const hpa = this.#cluster.get("HorizontalPodAutoscaler", namespace, name);
    if (hpa) this.reconcile(hpa);
  }

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
    this.#settleNamespace(namespaceOf(hpaKey));
    let ok = true;
    for (const entry of state.plans.values()) if (entry.problem !== null) ok = false;
    this.#wireFormulas(state);
    this.#conflicts.check();
    this.#onReconcile?.({ hpa: hpaKey, ok });
  }

  // -- formulas and fallback --------------------------------------------------------------

  /** Connect each formula of an HPA to its input entries, and compute it from what they hold. */
  #wireFormulas(state: HpaState): void {
    let any = false;
    for (const e of state.plans.values()) {
      e.dependents = null;
      if (e.formula) any = true;
    }
    if (!any) return;
    const at = this.#now();
    for (const e of state.plans.values()) {
      if (!e.formula || e.problem !== null) continue;
      e.formula.inputs = [];
      for (const input of e.plan.formula?.inputs ?? []) {
        const entry = state.plans.get(input.planKey);
        if (!entry) continue;
        e.formula.inputs.push({ identifier: input.identifier, entry });
        (entry.dependents ??= new Set()).add(e);
      }
      this.#evaluate(e, at);
    }
  }

  /**
   * Compute a formula from its inputs' latest collections: the value (truncated to milli), the
   * fallback value when an input is past the threshold, or an error naming the input. Nothing
   * happens while an input has not been collected yet.
   */
  #evaluate(entry: PlanEntry, at: number): void {
    const f = entry.formula;
    if (!f || entry.problem !== null) return;
    const plan = entry.plan;
    const fb = plan.fallback;
    const values: Record<string, number | undefined> = {};
    const past: string[] = [];
    // an input in error below the threshold fails the formula, unless another input is past
    // it and the behaviour serves the fallback value whatever the formula would say
    let failure: string | null = null;
    let pending = false;
    for (const { identifier, entry: input } of f.inputs) {
      const what =
        `input \`${identifier}\` (${input.plan.metricType} metric ${input.plan.metricName})`;
      const job = input.job;
      if (input.problem !== null || !job) {
        failure ??= `${what} cannot be collected: ${input.problem ?? "no collector"}`;
        continue;
      }
      if (input.failures > 0) {
        if (fb && fallbackActive(fb, input.failures)) {
          past.push(`${what} failed ${input.failures} consecutive collections`);
          values[identifier] = undefined;
        } else failure ??= `${what} failed: ${job.lastError ?? "collection failed"}`;
        continue;
      }
      if (!job.last) {
        pending = true; // not collected yet
        continue;
      }
      if (job.last.at < at - this.#ttlMs) {
        failure ??= `${what} has no value younger than the metrics TTL ${
          formatDuration(this.#ttlMs / 1000)
        }`;
        continue;
      }
      try {
        values[identifier] = inputValue(job.last.samples, what);
      } catch (e) {
        failure ??= errorText(e);
      }
    }
    if (fb && past.length > 0 && fb.behavior !== "scalingModifiers") {
      this.#serveFallback(entry, past.join("; "), at);
      return;
    }
    if (failure !== null) return this.#formulaFailed(entry, failure, at);
    if (pending) return;
    let result: number | null;
    try {
      result = evaluateFormula(f.compiled, values);
    } catch (e) {
      return this.#formulaFailed(entry, `formula ${plan.formula?.expression}: ${errorText(e)}`, at);
    }
    if (result === null) {
      if (!fb) {
        return this.#formulaFailed(
          entry,
          `formula ${plan.formula?.expression} evaluated to nil and no fallback is configured`,
          at,
        );
      }
      const cause = past.length > 0
        ? `${past.join("; ")}, and the formula evaluated to nil`
        : "the formula evaluated to nil";
      this.#serveFallback(entry, cause, at, fb.replicas);
      return;
    }
    this.#store.recordSuccess(entry.key, [{ value: truncateToMilli(result), timestamp: at }], at);
    if (entry.formulaError !== null) {
      this.#log.info("formula recovered", { plan: entry.key });
      entry.formulaError = null;
    }
    if (!this.#conflicts.has(entry.key)) this.#events.clear(entry.key);
    this.#endFallback(entry, "its inputs answer again");
  }

  /** A formula cannot be computed: no value is served (never a stale one), and it is said. */
  #formulaFailed(entry: PlanEntry, error: string, at: number): void {
    this.#store.recordSuccess(entry.key, [], at);
    this.#store.recordFailure(entry.key, error, at);
    if (entry.formulaError !== error) {
      this.#log.error("formula failed", { plan: entry.key, error });
      entry.formulaError = error;
    }
    this.#endFallback(entry, "an error is served instead");
    const state = this.#hpas.get(entry.hpaKey);
    if (state) {
      this.#events.report(
        entry.key,
        state.obj,
        `failed to compute ${entry.plan.metricType} metric ${entry.plan.metricName}: ${error}`,
        false,
      );
    }
  }

  /**
   * A failed collection of a plan with a fallback: its value goes (an error is served, not
   * the last good value) up to the threshold, and past it the fallback value is served.
   */
  #fallbackFailure(entry: PlanEntry, error: string, at: number): boolean {
    const fb = entry.plan.fallback!;
    if (fallbackActive(fb, entry.failures)) {
      this.#serveFallback(
        entry,
        `${entry.failures} consecutive failed collections (the last: ${error})`,
        at,
      );
      return true;
    }
    this.#store.recordSuccess(entry.key, [], at);
    this.#store.recordFailure(entry.key, error, at);
    return false;
  }

  /** Serve the fallback value of a plan (R from `replicas` when given, else its behaviour). */
  #serveFallback(entry: PlanEntry, cause: string, at: number, replicas?: number): void {
    const plan = entry.plan;
    let decision;
    try {
      decision = fallbackSamples(this.#cluster, plan, plan.fallback!, at, replicas);
    } catch (e) {
      const error = `${cause}; no fallback value: ${errorText(e)}`;
      this.#store.recordSuccess(entry.key, [], at);
      this.#store.recordFailure(entry.key, error, at);
      const state = this.#hpas.get(entry.hpaKey);
      if (state) {
        this.#events.report(
          entry.key,
          state.obj,
          `failed to compute the fallback of ${plan.metricType} metric ${plan.metricName}: ${error}`,
          false,
        );
      }
      return;
    }
    this.#store.recordSuccess(entry.key, decision.samples, at);
    if (entry.fallbackOn) {
      if (entry.fallbackLast) {
        entry.fallbackLast.value = decision.value;
        entry.fallbackLast.replicas = decision.replicas;
      }
      return;
    }
    entry.fallbackOn = true;
    entry.fallbackLast = {
      since: at,
      endedAt: null,
      value: decision.value,
      replicas: decision.replicas,
      cause,
      endReason: null,
    };
    const message = fallbackStartMessage(plan, cause, decision);
    this.#log.warn("fallback started", { plan: entry.key, message });
    const state = this.#hpas.get(entry.hpaKey);
    if (state) this.#events.notify(state.obj, "Warning", FALLBACK_ACTIVE_REASON, message);
  }

  #endFallback(entry: PlanEntry, why: string): void {
    if (!entry.fallbackOn) return;
    entry.fallbackOn = false;
    if (entry.fallbackLast) {
      entry.fallbackLast.endedAt = this.#now();
      entry.fallbackLast.endReason = why;
    }
    const message = fallbackEndMessage(entry.plan, why);
    this.#log.info("fallback ended", { plan: entry.key, message });
    const state = this.#hpas.get(entry.hpaKey);
    if (state) this.#events.notify(state.obj, "Normal", FALLBACK_ENDED_REASON, message);
  }

  /** Every plan with a fallback: whether it is active, and its consecutive failures. */
  fallbackStatus(): FallbackStatus[] {
    const out: FallbackStatus[] = [];
    for (const h of this.#hpas.values()) {
      for (const e of h.plans.values()) {
        if (!e.plan.fallback) continue;
        let failures = e.failures;
        for (const i of e.formula?.inputs ?? []) failures = Math.max(failures, i.entry.failures);
        out.push({
          hpa: { ...e.plan.hpa },
          metricType: e.plan.metricType,
          metricName: e.plan.metricName,
          active: e.fallbackOn,
          consecutiveFailures: failures,
          ...(e.fallbackLast ? { last: { ...e.fallbackLast } } : {}),
        });
      }
    }
    return out;
  }

  /** Compute the formulas that read any of `entries`, each once. */
  #evaluateDependents(entries: Iterable<PlanEntry>, at: number): void {
    let formulas: Set<PlanEntry> | null = null;
    for (const e of entries) {
      if (!e.dependents) continue;
      for (const d of e.dependents) (formulas ??= new Set()).add(d);
    }
    if (formulas) { for (const f of formulas) this.#evaluate(f, at); }
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
        entry.formula = { compiled: compileFormula(plan.formula?.expression ?? ""), inputs: [] };
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
      void this.#ensureKinds(fallbackKinds(plan));
    }
    if (entry.problem === null && (entry.formula || collector)) {
      entry.collector = collector;
      if (this.#limit === 0) this.#admit(entry);
      else {
        // started, or refused, when the reconcile settles its namespace
        entry.rank = { createdAt: hpaCreatedAt(state.obj), hpa: plan.hpa.name, index: plan.index };
        this.#rank(entry);
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
        if (state) this.#wireFormulas(state);
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
    if (entry.job) this.#unsubscribe(entry);
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
    this.#endFallback(entry, "the metric is not collected: over its namespace's limit");
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
    this.#evaluateDependents([entry], at);
  }

  // -- the namespace limit ----------------------------------------------------------------

  #namespacePlans(namespace: string): NamespacePlans {
    let ns = this.#namespaces.get(namespace);
    if (!ns) {
      ns = { ranked: [], added: [], removed: 0 };
      this.#namespaces.set(namespace, ns);
    }
    return ns;
  }

  /** The first index in `ranked` whose rank is not before `rank`. */
  #lowerBound(ranked: PlanEntry[], rank: MetricRank): number {
    let lo = 0;
    let hi = ranked.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareMetricRank(ranked[mid].rank!, rank) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Put a plan that could run in its namespace's order (it runs or not once settled). */
  #rank(entry: PlanEntry): void {
    const ns = this.#namespacePlans(entry.plan.hpa.namespace);
    const rank = entry.rank!;
    let i = this.#lowerBound(ns.ranked, rank);
    // after a plan of the same rank (the one it replaces, removed in the same reconcile)
    while (i < ns.ranked.length && compareMetricRank(ns.ranked[i].rank!, rank) === 0) i++;
    ns.ranked.splice(i, 0, entry);
    ns.added.push(entry);
  }

  /** Take a plan out of its namespace's order. */
  #unrank(entry: PlanEntry): void {
    const ns = this.#namespaces.get(entry.plan.hpa.namespace);
    if (!ns || entry.rank === null) return;
    let i = this.#lowerBound(ns.ranked, entry.rank);
    while (i < ns.ranked.length && ns.ranked[i] !== entry) i++;
    if (i === ns.ranked.length) return;
    ns.ranked.splice(i, 1);
    ns.removed++;
  }

  /**
   * Run the first `limit` plans of a namespace and refuse the others, after plans came or
   * went. Only the plans that may have crossed the limit are looked at: with `r` removed and
   * `a` added, the others moved by at most `r` places down or `a` up, so those now in
   * [limit - r, limit + a), and the added ones.
   */
  #settleNamespace(namespace: string): void {
    const ns = this.#namespaces.get(namespace);
    if (!ns || (ns.added.length === 0 && ns.removed === 0)) return;
    const limit = this.#limit;
    const { ranked } = ns;
    const count = ranked.length;
    const place = (entry: PlanEntry, i: number): void => {
      if (i < limit) {
        if (!entry.admitted) this.#admit(entry);
      } else if (entry.admitted || entry.refused === null) {
        this.#refuse(entry, namespaceLimitMessage(entry.plan, limit));
      }
    };
    const end = Math.min(count, limit + ns.added.length);
    for (let i = Math.max(0, limit - ns.removed); i < end; i++) place(ranked[i], i);
    for (const entry of ns.added) {
      let i = this.#lowerBound(ranked, entry.rank!);
      while (i < count && ranked[i] !== entry) i++;
      if (i < count) place(entry, i); // (not removed again in the same reconcile)
    }
    ns.added.length = 0;
    ns.removed = 0;
    if (count === 0) this.#namespaces.delete(namespace);
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
    entry.admitted = false;
    if (entry.rank !== null) this.#unrank(entry);
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
    this.#settleNamespace(namespaceOf(hpaKey));
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

  // -- jobs -------------------------------------------------------------------------------

  #subscribe(entry: PlanEntry, collector: Collector): void {
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
        ready: this.#ensureKinds(collector.kinds ?? []),
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
      return;
    }
    job.subscribers.set(entry.key, entry);
    entry.job = job;
    entry.failures = job.failures;
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
    return Math.round(job.intervalMs * (1 + JITTER * (this.#random() - 0.5)));
  }

  #tick(job: Job): void {
    if (job.stopped || this.#stopped) return;
    const owned = this.#owns(job.id);
    if (job.owned && !owned) job.heardAt = this.#now();
    job.owned = owned;
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

  /**
   * After a change of membership (`owns` answers differently): the queries that became ours
   * are collected now, not at their next tick, so that a replica that left leaves no value
   * without refresh for longer than it takes to notice. Returns how many started.
   */
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
      } else {
        if (job.owned && !owned) job.heardAt = this.#now();
        job.owned = owned;
      }
    }
    return started;
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
  peerRecord(
    store: Pick<EngineStore, "recordSuccess" | "recordFailure">,
    key: string,
    outcome: { samples: CollectResult["samples"]; warnings?: string[] } | { error: string },
    at: number,
  ): void {
    if ("error" in outcome) store.recordFailure(key, outcome.error, at);
    else store.recordSuccess(key, outcome.samples, at, outcome.warnings);
    const slash = key.indexOf("/", key.indexOf("/") + 1);
    const state = slash > 0 ? this.#hpas.get(key.slice(0, slash)) : undefined;
    const entry = state?.plans.get(key);
    if (!state || !entry || entry.job?.owned) return;
    const job = entry.job;
    if (job) {
      job.heardAt = this.#now();
      job.withdrawn = false;
    }
    if ("error" in outcome) {
      if (job) {
        entry.failures++;
        job.lastError = outcome.error;
      }
      if (!entry.fallbackOn) {
        this.#events.report(
          key,
          state.obj,
          `failed to collect ${entry.plan.metricType} metric ${entry.plan.metricName}: ${outcome.error}`,
          false,
        );
      }
    } else {
      if (job) {
        entry.failures = 0;
        job.lastError = null;
        job.last = { samples: outcome.samples, at, warnings: outcome.warnings };
      }
      if (!this.#conflicts.has(key)) this.#events.clear(key);
    }
    if (job) this.#evaluateDependents([entry], at);
  }

  /**
   * Sharding: the values of queries another replica collects and that nothing was heard of for
   * two intervals plus `graceMs` (the lease duration) are no longer served, here only (`store`
   * is the store without the push): a replica cut off from its peers serves no stale value.
   * The next record of the query brings them back. Returns how many queries were withdrawn.
   */
  withdrawUnheard(
    store: Pick<EngineStore, "recordSuccess" | "recordFailure">,
    graceMs: number,
  ): number {
    const now = this.#now();
    let withdrawn = 0;
    for (const job of this.#jobs.values()) {
      if (job.owned || job.withdrawn || job.stopped) continue;
      if (now - job.heardAt <= 2 * job.intervalMs + graceMs) continue;
      job.withdrawn = true;
      job.last = null;
      withdrawn++;
      const reason = `no news of this query from the replica that collects it since ${
        new Date(job.heardAt).toISOString().replace(/\.\d+Z$/, "Z")
      }`;
      for (const key of job.subscribers.keys()) {
        store.recordSuccess(key, [], now);
        store.recordFailure(key, reason, now);
      }
      this.#log.warn("values withdrawn: no news from the replica that collects them", {
        query: job.id,
        since: new Date(job.heardAt).toISOString(),
      });
    }
    return withdrawn;
  }

  /** How many queries this replica collects, of how many (own metrics, status). */
  shardShare(): { owned: number; total: number } {
    let owned = 0;
    for (const job of this.#jobs.values()) if (this.#owns(job.id)) owned++;
    return { owned, total: this.#jobs.size };
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
          if (this.#conflicts.contested) this.#conflicts.check();
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
        const kindProblem = this.#kindProblem(job);
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
      this.#evaluateDependents(job.subscribers.values(), at);
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
      this.#endFallback(entry, "its source answers again");
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
      if (entry.plan.fallback) this.#fallbackFailure(entry, error, at);
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
    this.#evaluateDependents(job.subscribers.values(), at);
  }
}
