/**
 * The engine's side of `--shard-collection` (issue 29): the live replicas split the queries
 * (`owns`); a replica keeps the timer of a query it does not own but does not collect it, takes
 * what its owner recorded (`peerRecord`) and withdraws the values of a query it has heard
 * nothing of for too long. Moving a query's collection here when it becomes ours is the
 * scheduler's (`Scheduler.reshard`).
 */
import type { CollectResult } from "../collectors/types.ts";
import type { ConflictIndex } from "./conflict_index.ts";
import type { EventReporter } from "./event_reporter.ts";
import type { Formulas } from "./formulas.ts";
import type { Logger } from "./logger.ts";
import type { EngineStore, HpaState, Job } from "./state.ts";

/** The store operations a peer's record, or a withdrawal, writes with. */
export type RecordStore = Pick<EngineStore, "recordSuccess" | "recordFailure">;

/** What a peer collected for a plan: its samples, or the text of its error. */
export type PeerOutcome = { samples: CollectResult["samples"]; warnings?: string[] } | {
  error: string;
};

/**
 * Note whether this replica collects `job` now: when it stops collecting it, that is the last
 * time it heard of the query.
 */
export function noteOwner(job: Job, owned: boolean, now: () => number): void {
  if (job.owned && !owned) job.heardAt = now();
  job.owned = owned;
}

/** What {@linkcode Sharding} reads and writes. */
export interface ShardingOptions {
  /** Whether this replica collects the query with this key. */
  owns: (queryKey: string) => boolean;
  /** The engine's HPAs and collections. */
  hpas: ReadonlyMap<string, HpaState>;
  jobs: ReadonlyMap<string, Job>;
  events: EventReporter;
  conflicts: ConflictIndex;
  formulas: Formulas;
  now: () => number;
  logger: Logger;
}

/**
 * Peers' records and the withdrawal of unheard queries.
 *
 * @example
 * ```ts
 * const sharding = new Sharding({ owns, hpas, jobs, events, conflicts, formulas, now, logger });
 * sharding.peerRecord(store, "team-a/web/0", { samples: [{ value: 3, timestamp: now() }] }, now());
 * sharding.withdrawUnheard(store, 15_000);
 * ```
 */
export class Sharding {
  readonly #owns: (queryKey: string) => boolean;
  readonly #hpas: ReadonlyMap<string, HpaState>;
  readonly #jobs: ReadonlyMap<string, Job>;
  readonly #events: EventReporter;
  readonly #conflicts: ConflictIndex;
  readonly #formulas: Formulas;
  readonly #now: () => number;
  readonly #log: Logger;

  /** Reads and reports through what `options` gives. */
  constructor(options: ShardingOptions) {
    this.#owns = options.owns;
    this.#hpas = options.hpas;
    this.#jobs = options.jobs;
    this.#events = options.events;
    this.#conflicts = options.conflicts;
    this.#formulas = options.formulas;
    this.#now = options.now;
    this.#log = options.logger;
  }

  /** See `Engine.peerRecord`. */
  peerRecord(store: RecordStore, key: string, outcome: PeerOutcome, at: number): void {
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
    if (job) this.#formulas.evaluateDependents([entry], at);
  }

  /** See `Engine.withdrawUnheard`. */
  withdrawUnheard(store: RecordStore, graceMs: number): number {
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

  /** How many queries this replica collects, of how many. */
  share(): { owned: number; total: number } {
    let owned = 0;
    for (const job of this.#jobs.values()) if (this.#owns(job.id)) owned++;
    return { owned, total: this.#jobs.size };
  }
}
