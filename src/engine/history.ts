/**
 * Recent values per plan, for the status page: a fixed-size ring of the last collections'
 * outcomes (time, value, or a failure) with the last error text and the run of consecutive
 * failures. Fed by {@linkcode recordingStore}, which sits between the engine and the store: every
 * outcome the engine records (a collection, a formula's value or failure, a fallback value)
 * passes through it, so the engine itself does not change.
 *
 * Memory: one `Uint32Array` of time and value pairs per plan (8 bytes a sample, 480 for 60),
 * allocated at its first outcome and reused; a sample allocates nothing. A string is kept only
 * for the last error.
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

class Ring {
  /** `[time0, value0, time1, value1, ...]` (see above), allocated at the first outcome. */
  data: Uint32Array | null = null;
  /** The slot written next. */
  head = 0;
  size = 0;
  lastValue = NaN;
  lastSuccessAt = NaN;
  lastSampleCount = 0;
  failures = 0;
  failingSince = NaN;
  lastError: string | null = null;
  lastErrorAt = NaN;
}

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
  readonly #rings = new Map<string, Ring>();
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
    return this.#rings.size;
  }

  /**
   * A successful outcome: `value` made from `count` samples, or null (no sample). Only a value
   * ends a run of failures: the engine clears a value (an empty outcome) right before it records
   * a failure at the same time.
   */
  success(key: string, value: number | null, count: number, at: number): void {
    const ring = this.#ring(key);
    const empty = value === null || !Number.isFinite(value);
    if (!this.#push(ring, at, empty ? EMPTY : value)) return;
    ring.lastSuccessAt = at;
    ring.lastValue = empty ? NaN : value;
    ring.lastSampleCount = empty ? 0 : count;
    if (!empty) {
      ring.failures = 0;
      ring.failingSince = NaN;
    }
  }

  /** A failed outcome with its error text. */
  failure(key: string, error: string, at: number): void {
    const ring = this.#ring(key);
    if (!this.#push(ring, at, FAILED)) return;
    if (ring.failures === 0) ring.failingSince = at;
    ring.failures++;
    ring.lastError = error;
    ring.lastErrorAt = at;
  }

  /** Forget a plan. */
  remove(key: string): void {
    this.#rings.delete(key);
  }

  /**
   * A copy of a plan's history, or null when nothing was recorded for it. Point times are
   * rounded to 100 ms, point values to 7 significant digits.
   */
  get(key: string): PlanHistory | null {
    const ring = this.#rings.get(key);
    if (!ring) return null;
    const points: HistoryPoint[] = [];
    const cap = this.#capacity;
    const data = ring.data!;
    for (let i = 0; i < ring.size; i++) {
      const slot = (ring.head - ring.size + i + cap) % cap;
      const v = fromBits(data[2 * slot + 1]);
      points.push({
        at: this.#base + data[2 * slot] * 100,
        value: Number.isFinite(v) ? Number(v.toPrecision(7)) : null,
        failed: Number.isNaN(v),
      });
    }
    const orNull = (n: number): number | null => Number.isNaN(n) ? null : n;
    return {
      points,
      lastValue: orNull(ring.lastValue),
      lastSuccessAt: orNull(ring.lastSuccessAt),
      lastSampleCount: ring.lastSampleCount,
      failures: ring.failures,
      failingSince: ring.failures > 0 ? orNull(ring.failingSince) : null,
      lastError: ring.lastError,
      lastErrorAt: orNull(ring.lastErrorAt),
    };
  }

  #ring(key: string): Ring {
    let ring = this.#rings.get(key);
    if (!ring) {
      ring = new Ring();
      this.#rings.set(key, ring);
    }
    return ring;
  }

  /**
   * Keep one outcome; false when it is older than the newest kept (a plan joining a shared
   * collection is handed its last result again). One at the newest's time replaces it.
   */
  #push(ring: Ring, at: number, value: number): boolean {
    const cap = this.#capacity;
    if (Number.isNaN(this.#base)) this.#base = Math.floor(at / 100) * 100;
    const raw = Math.round((at - this.#base) / 100);
    if (ring.data === null) ring.data = new Uint32Array(2 * cap);
    const data = ring.data;
    let slot = ring.head;
    if (ring.size > 0) {
      const newest = (ring.head - 1 + cap) % cap;
      if (raw < data[2 * newest]) return false;
      if (raw === data[2 * newest]) slot = newest;
    }
    const time = Math.min(0xffffffff, Math.max(0, raw));
    data[2 * slot] = time;
    data[2 * slot + 1] = toBits(value);
    if (slot === ring.head) {
      ring.head = (ring.head + 1) % cap;
      if (ring.size < cap) ring.size++;
    }
    return true;
  }
}

/**
 * The metric type in a plan key (`namespace/name/index/Type/metric`, see `planKey` in
 * core/plan.ts), "" when the key has another form.
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
      history.success(
        key,
        aggregateSamples(metricTypeOfKey(key), samples),
        samples.length,
        at,
      );
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
