/**
 * Recent values per plan, for the status page: a fixed-size ring of the last collections'
 * outcomes (time, value, or a failure) with the last error text and the run of consecutive
 * failures. Fed by {@linkcode recordingStore}, which sits between the engine and the store: every
 * outcome the engine records (a collection, a formula's value or failure, a fallback value)
 * passes through it, so the engine itself does not change.
 *
 * Memory: no object per plan. Rings live in pooled typed arrays, 256 plans to a block (8 bytes a
 * sample, 480 for 60; 72 bytes of counters), found by a slot number kept in one map; the slot of
 * a removed plan is reused. A sample allocates nothing; a string is kept only for the last
 * error. (One `Uint32Array` per plan cost about twice its data in RSS under Bun.)
 */
import type { Sample } from "../store/types.ts";
import type { EngineStore } from "./engine.ts";

/** Samples kept per plan by default. */
export const DEFAULT_HISTORY_CAPACITY = 60;

/**
 * Sample times are kept as deciseconds after the first time the history saw (a `Uint32`: 13
 * years), values as 32-bit floats read back to 7 significant digits (the plots' precision; the
 * last value is kept exactly). A value slot holding NaN is a failure, +Infinity an empty
 * outcome: collected values are finite.
 */
const FAILED = NaN;
const EMPTY = Infinity;

/** Bit conversion between a 32-bit float and the `Uint32` slot that keeps it. */
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

function toBits(v: number): number {
  f32[0] = v;
  return u32[0];
}

function fromBits(bits: number): number {
  u32[0] = bits;
  return f32[0];
}

/** One kept outcome, oldest first in {@linkcode PlanHistory.points}. */
export interface HistoryPoint {
  /** ms since the epoch. */
  at: number;
  /** The value (see {@linkcode aggregateSamples}), null for a failure or an empty collection. */
  value: number | null;
  failed: boolean;
}

/** A copy of what is kept for one plan. */
export interface PlanHistory {
  points: HistoryPoint[];
  /** The last value, null when the last successful collection had none (or none yet). */
  lastValue: number | null;
  /** When the last successful collection ended (ms since the epoch), null before the first. */
  lastSuccessAt: number | null;
  /** How many samples (pods, series) the last value was made from. */
  lastSampleCount: number;
  /** Consecutive failures up to now (0 once a value came). */
  failures: number;
  /** When the current run of failures began, null when not failing. */
  failingSince: number | null;
  /** The text of the last failure (kept after a recovery), null before any. */
  lastError: string | null;
  lastErrorAt: number | null;
}

/** Plans per block of the pools. */
const BLOCK = 256;

/** The counters of a ring, one `Float64Array` row per plan (NaN: none). */
const HEAD = 0; // the slot written next
const SIZE = 1;
const LAST_VALUE = 2;
const LAST_SUCCESS_AT = 3;
const LAST_COUNT = 4;
const FAILURES = 5;
const FAILING_SINCE = 6;
const LAST_ERROR_AT = 7;
/** 1 for a Pods metric (its samples are averaged), else 0. */
const PODS = 8;
const COUNTERS = 9;

/**
 * The value a metric's HPA works with, from one collection's samples: the average over pods of
 * a Pods metric (the controller compares it with `averageValue`), else the sum (the series of an
 * External metric; the one value of an Object metric). Null without samples.
 *
 * @example
 * ```ts
 * aggregateSamples("Pods", [{ value: 1, timestamp: 0 }, { value: 2, timestamp: 0 }]); // 1.5
 * ```
 */
export function aggregateSamples(metricType: string, samples: readonly Sample[]): number | null {
  if (samples.length === 0) return null;
  let sum = 0;
  for (const s of samples) sum += s.value;
  return metricType === "Pods" ? sum / samples.length : sum;
}

/** Options of {@linkcode MetricHistory}. */
export interface MetricHistoryOptions {
  /** Samples kept per plan (at least 2). Default {@linkcode DEFAULT_HISTORY_CAPACITY}. */
  capacity?: number;
}

/**
 * Rings of recent outcomes by plan key.
 *
 * @example
 * ```ts
 * const history = new MetricHistory({ capacity: 60 });
 * history.success("ns/web/0/Pods/rps", 12.5, 3, Date.now());
 * history.get("ns/web/0/Pods/rps")?.lastValue; // 12.5
 * ```
 */
export class MetricHistory {
  readonly #capacity: number;
  /** Plan key -> slot number (block `slot >> 8`, row `slot & 255`). */
  readonly #slots = new Map<string, number>();
  /** Per block: `[time, value]` pairs, `2 * capacity` per row. */
  readonly #data: Uint32Array[] = [];
  readonly #counters: Float64Array[] = [];
  /** The last error by slot. */
  readonly #errors: (string | null)[] = [];
  /** Slots of removed plans, to reuse. */
  readonly #free: number[] = [];
  #next = 0;
  /** The time the kept times count from (deciseconds are kept), set by the first outcome. */
  #base = NaN;

  /** Creates an empty history. */
  constructor(options: MetricHistoryOptions = {}) {
    const c = Math.floor(options.capacity ?? DEFAULT_HISTORY_CAPACITY);
    this.#capacity = Number.isFinite(c) ? Math.max(2, c) : DEFAULT_HISTORY_CAPACITY;
  }

  /** Samples kept per plan. */
  get capacity(): number {
    return this.#capacity;
  }

  /** Plans with a ring. */
  get size(): number {
    return this.#slots.size;
  }

  /**
   * A successful outcome: `value` made from `count` samples, or null (no sample). Only a value
   * ends a run of failures: the engine clears a value (an empty outcome) right before it records
   * a failure at the same time.
   */
  success(key: string, value: number | null, count: number, at: number): void {
    const slot = this.#slot(key);
    const c = this.#counters[slot >> 8];
    const row = (slot & (BLOCK - 1)) * COUNTERS;
    const empty = value === null || !Number.isFinite(value);
    if (!this.#push(slot, at, empty ? EMPTY : value)) return;
    c[row + LAST_SUCCESS_AT] = at;
    c[row + LAST_VALUE] = empty ? NaN : value;
    c[row + LAST_COUNT] = empty ? 0 : count;
    if (!empty) {
      c[row + FAILURES] = 0;
      c[row + FAILING_SINCE] = NaN;
    }
  }

  /**
   * A successful collection's samples, aggregated per {@linkcode aggregateSamples} by the
   * metric type of the plan key (`namespace/name/index/Type/metric`).
   */
  successSamples(key: string, samples: readonly Sample[], at: number): void {
    const slot = this.#slot(key);
    const pods = this.#counters[slot >> 8][(slot & (BLOCK - 1)) * COUNTERS + PODS] === 1;
    let sum = 0;
    for (let i = 0; i < samples.length; i++) sum += samples[i].value;
    const value = samples.length === 0 ? null : pods ? sum / samples.length : sum;
    this.success(key, value, samples.length, at);
  }

  /** A failed outcome with its error text. */
  failure(key: string, error: string, at: number): void {
    const slot = this.#slot(key);
    if (!this.#push(slot, at, FAILED)) return;
    const c = this.#counters[slot >> 8];
    const row = (slot & (BLOCK - 1)) * COUNTERS;
    if (c[row + FAILURES] === 0) c[row + FAILING_SINCE] = at;
    c[row + FAILURES]++;
    c[row + LAST_ERROR_AT] = at;
    this.#errors[slot] = error;
  }

  /** Forget a plan. */
  remove(key: string): void {
    const slot = this.#slots.get(key);
    if (slot === undefined) return;
    this.#slots.delete(key);
    this.#errors[slot] = null;
    this.#free.push(slot);
  }

  /**
   * A copy of a plan's history, or null when nothing was recorded for it. Point times are
   * rounded to 100 ms, point values to 7 significant digits.
   */
  get(key: string): PlanHistory | null {
    const slot = this.#slots.get(key);
    if (slot === undefined) return null;
    const c = this.#counters[slot >> 8];
    const row = (slot & (BLOCK - 1)) * COUNTERS;
    const data = this.#data[slot >> 8];
    const cap = this.#capacity;
    const first = (slot & (BLOCK - 1)) * 2 * cap;
    const head = c[row + HEAD];
    const size = c[row + SIZE];
    const points: HistoryPoint[] = [];
    for (let i = 0; i < size; i++) {
      const at = first + 2 * ((head - size + i + cap) % cap);
      const v = fromBits(data[at + 1]);
      points.push({
        at: this.#base + data[at] * 100,
        value: Number.isFinite(v) ? Number(v.toPrecision(7)) : null,
        failed: Number.isNaN(v),
      });
    }
    const orNull = (n: number): number | null => Number.isNaN(n) ? null : n;
    const failures = c[row + FAILURES];
    return {
      points,
      lastValue: orNull(c[row + LAST_VALUE]),
      lastSuccessAt: orNull(c[row + LAST_SUCCESS_AT]),
      lastSampleCount: c[row + LAST_COUNT],
      failures,
      failingSince: failures > 0 ? orNull(c[row + FAILING_SINCE]) : null,
      lastError: this.#errors[slot] ?? null,
      lastErrorAt: orNull(c[row + LAST_ERROR_AT]),
    };
  }

  /** The slot of a plan, made (and its counters reset) on its first outcome. */
  #slot(key: string): number {
    let slot = this.#slots.get(key);
    if (slot !== undefined) return slot;
    slot = this.#free.pop() ?? this.#next++;
    const block = slot >> 8;
    if (block === this.#data.length) {
      this.#data.push(new Uint32Array(BLOCK * 2 * this.#capacity));
      this.#counters.push(new Float64Array(BLOCK * COUNTERS));
    }
    const c = this.#counters[block];
    const row = (slot & (BLOCK - 1)) * COUNTERS;
    c.fill(NaN, row, row + COUNTERS);
    c[row + HEAD] = 0;
    c[row + SIZE] = 0;
    c[row + LAST_COUNT] = 0;
    c[row + FAILURES] = 0;
    c[row + PODS] = metricTypeOfKey(key) === "Pods" ? 1 : 0;
    this.#errors[slot] = null;
    this.#slots.set(key, slot);
    return slot;
  }

  /**
   * Keep one outcome; false when it is older than the newest kept (a plan joining a shared
   * collection is handed its last result again). One at the newest's time replaces it.
   */
  #push(slot: number, at: number, value: number): boolean {
    const cap = this.#capacity;
    if (Number.isNaN(this.#base)) this.#base = Math.floor(at / 100) * 100;
    const raw = Math.round((at - this.#base) / 100);
    const c = this.#counters[slot >> 8];
    const row = (slot & (BLOCK - 1)) * COUNTERS;
    const data = this.#data[slot >> 8];
    const first = (slot & (BLOCK - 1)) * 2 * cap;
    const head = c[row + HEAD];
    const size = c[row + SIZE];
    let i = head;
    if (size > 0) {
      const newest = (head - 1 + cap) % cap;
      const newestTime = data[first + 2 * newest];
      if (raw < newestTime) return false;
      if (raw === newestTime) i = newest;
    }
    data[first + 2 * i] = Math.min(0xffffffff, Math.max(0, raw));
    data[first + 2 * i + 1] = toBits(value);
    if (i === head) {
      c[row + HEAD] = (head + 1) % cap;
      if (size < cap) c[row + SIZE] = size + 1;
    }
    return true;
  }
}

/**
 * The metric type in a plan key (`namespace/name/index/Type/metric`, see `planKey` in
 * core/kube_metrics_adapter/plan.ts), "" when the key has another form.
 */
function metricTypeOfKey(key: string): string {
  const parts = key.split("/", 4);
  return parts.length === 4 ? parts[3] : "";
}

/**
 * A store for the engine that also records every outcome in `history`: values (aggregated per
 * {@linkcode aggregateSamples}) after the store took them, failures, and a removed plan's ring.
 * Hidden formula inputs, which the store ignores, are recorded too.
 *
 * @example
 * ```ts
 * const history = new MetricHistory();
 * const engine = new Engine({ cluster, registry, store: recordingStore(store, history) });
 * ```
 */
export function recordingStore(store: EngineStore, history: MetricHistory): EngineStore {
  return {
    upsertPlan: (plan, at) => store.upsertPlan(plan, at),
    removePlan: (key) => {
      history.remove(key);
      store.removePlan(key);
    },
    recordSuccess: (key, samples, at, warnings) => {
      // the store checks the values first: what it refuses becomes a failure (engine)
      store.recordSuccess(key, samples, at, warnings);
      history.successSamples(key, samples, at);
    },
    recordFailure: (key, error, at) => {
      store.recordFailure(key, error, at);
      history.failure(key, error, at);
    },
    removeObject: (namespace, groupResource, name) =>
      store.removeObject(namespace, groupResource, name),
    gc: (now) => store.gc(now),
    conflicts: () => store.conflicts(),
    get conflictVersion(): number {
      return store.conflictVersion;
    },
  };
}
