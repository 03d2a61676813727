/**
 * The records the engine and its parts share: an HPA as planned (`HpaState`), each of its plans
 * (`PlanEntry`) and the collections the plans share (`Job`). They are plain objects; the module
 * that owns a concept (scheduler.ts, formulas.ts, fallback.ts, namespace_limits.ts,
 * sharding.ts) reads and writes the fields of its concept.
 */
import type { KubeObject } from "../cluster/types.ts";
import type { Collector, CollectResult } from "../collectors/types.ts";
import type { CompiledFormula } from "../core/formula.ts";
import type { MetricRank } from "../core/namespace_limit.ts";
import type { SmallMap } from "../core/small_map.ts";
import type { MetricPlan } from "../core/types.ts";
import type { MetricStore } from "../store/store.ts";

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

/** A plan as the engine runs it. */
export interface PlanEntry {
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

/** An HPA as the engine planned it. */
export interface HpaState {
  key: string;
  obj: KubeObject;
  plans: SmallMap<string, PlanEntry>;
  /** A hash of what planning reads (see `planInputsHash`): an update that keeps it replans nothing. */
  inputs: number;
}

/** One collection shared by the plans with the same query key, run at an interval. */
export interface Job {
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
