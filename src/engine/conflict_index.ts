/**
 * Conflicts between plans: where the store may find two plans' values colliding (a slot:
 * namespace, resource and metric), so that the store's conflicts are checked only after the
 * collections that may change them, and reported (logged and as an event) once per change.
 */
import type { KubeObject } from "../cluster/types.ts";
import { SmallMap } from "../core/small_map.ts";
import type { MetricStore } from "../store/store.ts";
import type { ServedAt } from "../store/types.ts";
import type { EventReporter } from "./event_reporter.ts";
import type { Logger } from "./logger.ts";

/** The plans of one slot: how many use each query key. */
interface SlotQueries {
  /** The slot's key, one string for all its plans. */
  key: string;
  queries: SmallMap<string, number>;
}

/** Options of {@linkcode ConflictIndex}. */
export interface ConflictIndexOptions {
  store: Pick<MetricStore, "conflicts" | "conflictVersion">;
  /** Where conflicts are reported, on the HPA of the plan. */
  events: EventReporter;
  /** The HPA of a key `namespace/name`, while the engine knows it. */
  hpaOf: (hpaKey: string) => KubeObject | undefined;
  logger: Logger;
}

/**
 * The slots of the plans declared to the store, and the conflicts reported.
 *
 * @example
 * ```ts
 * const conflicts = new ConflictIndex({ store, events, hpaOf, logger });
 * conflicts.index("shop/web/External/queue", servedAt, "json-path|...");
 * if (conflicts.mayConflict(["shop/web/External/queue"])) conflicts.check();
 * ```
 */
export class ConflictIndex {
  readonly #store: Pick<MetricStore, "conflicts" | "conflictVersion">;
  readonly #events: EventReporter;
  readonly #hpaOf: (hpaKey: string) => KubeObject | undefined;
  readonly #log: Logger;
  /** Conflict messages logged, per plan key. */
  #conflicts = new Map<string, string>();
  /** Slot and query key of every plan declared to the store. */
  #planSlots = new Map<string, { slot: SlotQueries; query: string }>();
  /**
   * The slots (where the store's values may collide), by key. A plan refers to its slot's
   * record, not to a key string of its own (thousands of plans, a string each, otherwise).
   */
  #slotQueries = new Map<string, SlotQueries>();
  /** Slots whose plans have different query keys: their collections may change conflicts. */
  #contested = new Set<string>();
  /** The store's conflict version at the last `check`. */
  #conflictsSeen = -1;

  /** Creates an empty index. */
  constructor(options: ConflictIndexOptions) {
    this.#store = options.store;
    this.#events = options.events;
    this.#hpaOf = options.hpaOf;
    this.#log = options.logger;
  }

  /** Whether some slot has plans with different queries (their collections may conflict). */
  get contested(): boolean {
    return this.#contested.size > 0;
  }

  /** Whether a conflict is reported for the plan `key`. */
  has(key: string): boolean {
    return this.#conflicts.has(key);
  }

  /** Forget the conflict reported for the plan `key` (the plan is gone). */
  forget(key: string): void {
    this.#conflicts.delete(key);
  }

  /**
   * Where the store may find two plans' values colliding (its slot: namespace, resource and
   * metric; a Pods plan's pods or an External plan's series are only known once collected).
   */
  index(key: string, at: ServedAt, query: string): void {
    const slot = at.kind === "custom"
      ? JSON.stringify(["c", at.namespace, at.groupResource, at.metricName, at.metricSelector])
      : JSON.stringify(["e", at.namespace, at.metricName]);
    const old = this.#planSlots.get(key);
    if (old?.slot.key === slot && old.query === query) return;
    if (old) this.unindex(key);
    let record = this.#slotQueries.get(slot);
    if (!record) this.#slotQueries.set(slot, record = { key: slot, queries: new SmallMap() });
    this.#planSlots.set(key, { slot: record, query });
    const queries = record.queries;
    queries.set(query, (queries.get(query) ?? 0) + 1);
    if (queries.size > 1) this.#contested.add(record.key);
  }

  /** The plan `key` left the store. */
  unindex(key: string): void {
    const old = this.#planSlots.get(key);
    if (!old) return;
    this.#planSlots.delete(key);
    const slot = old.slot.key;
    const queries = old.slot.queries;
    const n = queries.get(old.query)! - 1;
    if (n > 0) queries.set(old.query, n);
    else queries.delete(old.query);
    if (queries.size === 0) this.#slotQueries.delete(slot);
    if (queries.size <= 1) this.#contested.delete(slot);
  }

  /** Whether a collection for these plans may have changed the store's conflicts. */
  mayConflict(keys: Iterable<string>): boolean {
    if (this.#contested.size === 0) return false;
    for (const key of keys) {
      const slot = this.#planSlots.get(key)?.slot;
      if (slot !== undefined && this.#contested.has(slot.key)) return true;
    }
    return false;
  }

  /** Log and report the store's conflicts once per change of their message. */
  check(): void {
    // nothing started or stopped conflicting since the last check: nothing to report
    if (this.#store.conflictVersion === this.#conflictsSeen) return;
    this.#conflictsSeen = this.#store.conflictVersion;
    const current = new Set<string>();
    for (const c of this.#store.conflicts()) {
      current.add(c.plan.key);
      if (this.#conflicts.get(c.plan.key) === c.message) continue;
      this.#conflicts.set(c.plan.key, c.message);
      this.#log.warn("metric conflict", { plan: c.plan.key, error: c.message });
      const hpa = this.#hpaOf(`${c.plan.hpa.namespace}/${c.plan.hpa.name}`);
      if (hpa) this.#events.report(c.plan.key, hpa, c.message, false);
    }
    for (const [key, message] of [...this.#conflicts]) {
      if (current.has(key)) continue;
      this.#conflicts.delete(key);
      if (!this.#planSlots.has(key)) continue;
      this.#log.info("metric conflict resolved", { plan: key });
      // the same conflict coming back is reported again
      if (this.#events.last(key) === message) this.#events.clear(key);
    }
  }
}
