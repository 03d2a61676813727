/**
 * Timers grouped into slots: every timer due in the same slot (250 ms by default) fires in one
 * wake-up of the event loop, from one runtime timer.
 *
 * Why: with thousands of HPAs the engine keeps a timer per collection (its next tick) and one
 * per collection in flight (its deadline). Measured on Bun 1.4.5, each separate wake-up of an
 * idle event loop costs about 100 us of CPU whatever the callback does: 4,000 collections per
 * 30 s spent ~290 us of main-thread CPU each, nearly all of it waking up. In slots of 100 ms
 * that fell to ~105 us, in slots of 250 ms to ~75 us (the serving benchmark's set, binary,
 * idle). A collection that runs a quarter of a second late changes nothing for an HPA.
 * Setting and clearing a timer here is a map operation, not a runtime call.
 *
 * A timer fires at or after its time, at most one slot late; the order of timers in one slot
 * is the order they were set. Delays shorter than a slot go straight to the runtime. The
 * timers of a slot run in batches ({@linkcode DEFAULT_TIMER_BATCH}, one by default), one batch
 * per turn of the event loop (`setImmediate`): the collections a batch starts run their first
 * steps before the next batch, and requests that arrived meanwhile are answered in between
 * (with 10,000 HPAs a slot holds ~170 collections).
 */

/**
 * Timers a turn of the event loop runs by default: one.
 *
 * Why: a collection's first steps run in the turn that starts it (they follow the fair
 * queue's grant, a microtask of that turn): a Pods collection of 20 pods sends its 20 requests
 * there, ~1 ms of JavaScript on Bun, and their answers follow close behind. In the bench's
 * sharded row (one replica, 500 HPAs x 20 pods every 7.5 s: ~17 collections a slot), batches
 * of 16 held the event loop 10-25 ms after every slot, four times a second, and the HPA
 * controller's reads (200/s) waited behind them. Three runs of 6,000 reads each, alternated:
 * read p99 7.6-9.5 ms (mean 8.6) in batches of 16, 6.1-7.8 ms (mean 6.8) one a turn; the bare
 * floor's 2.8-3.0; the replica's CPU 0.19-0.20 cores against 0.19-0.22.
 */
export const DEFAULT_TIMER_BATCH = 1;

/** The longest delay runtimes' `setTimeout` takes as it is (a signed 32-bit count of ms). */
const MAX_TIMEOUT_MS = 2_147_483_647;

/** The runtime's timer functions and a monotonic clock (ms), injectable for tests. */
export interface TimerWheelOptions {
  /** Slot length, ms (default 250). */
  slotMs?: number;
  setTimeout?: (fn: () => void, ms: number) => unknown;
  clearTimeout?: (handle: unknown) => void;
  /** Monotonic clock in ms (default `performance.now`). */
  now?: () => number;
  /**
   * Called with what a callback threw; the other timers still fire. Default: rethrown from a
   * microtask, an uncaught error as from a runtime timer.
   */
  onError?: (error: unknown) => void;
  /** Timers run per turn of the event loop (default {@linkcode DEFAULT_TIMER_BATCH}). */
  batch?: number;
  /** Runs `fn` on the next turn of the event loop (default `setImmediate`). */
  defer?: (fn: () => void) => void;
}

interface WheelTimer {
  fn: () => void;
  /** The slot's timers, or null once fired or cleared. */
  slot: Set<WheelTimer> | null;
  slotNumber: number;
}

/** A timer handed to the runtime (delays shorter than a slot). */
interface DirectTimer {
  direct: unknown;
}

/**
 * Timers in slots: `setTimer`/`clearTimer` have the signature the engine takes.
 *
 * @example
 * ```ts
 * const wheel = new TimerWheel();
 * const engine = new Engine({ ...options, setTimer: wheel.setTimer, clearTimer: wheel.clearTimer });
 * ```
 */
export class TimerWheel {
  readonly #slotMs: number;
  readonly #setTimeout: (fn: () => void, ms: number) => unknown;
  readonly #clearTimeout: (handle: unknown) => void;
  readonly #now: () => number;
  readonly #onError: (error: unknown) => void;
  readonly #batch: number;
  readonly #defer: (fn: () => void) => void;
  /** Timers of fired slots still to run (from `#head` on), and whether a turn is asked for. */
  #queue: WheelTimer[] = [];
  #head = 0;
  #draining = false;
  /** Timers by slot number (time / slotMs, rounded up). */
  readonly #slots = new Map<number, Set<WheelTimer>>();
  /** The numbers of the slots in `#slots`, in a binary min-heap (each number once). */
  readonly #heap: number[] = [];
  /** The slot the runtime timer is set for, and that timer. */
  #armedSlot = Infinity;
  #armed: unknown = null;

  /** A wheel; nothing is scheduled with the runtime until a timer is set. */
  constructor(options: TimerWheelOptions = {}) {
    this.#slotMs = options.slotMs ?? 250;
    if (!(this.#slotMs > 0)) throw new Error(`invalid timer slot ${this.#slotMs} ms`);
    this.#setTimeout = options.setTimeout ?? ((fn, ms) => setTimeout(fn, ms));
    this.#clearTimeout = options.clearTimeout ??
      ((h) => clearTimeout(h as ReturnType<typeof setTimeout>));
    this.#now = options.now ?? (() => performance.now());
    this.#onError = options.onError ?? ((e) =>
      queueMicrotask(() => {
        throw e;
      }));
    this.#batch = Math.max(1, options.batch ?? DEFAULT_TIMER_BATCH);
    this.#defer = options.defer ??
      (typeof setImmediate === "function"
        ? (fn) => void setImmediate(fn)
        : (fn) => void this.#setTimeout(fn, 0));
  }

  /** Number of timers waiting, in slots or in the batches of a fired slot (for tests). */
  get size(): number {
    let n = 0;
    for (const s of this.#slots.values()) n += s.size;
    for (let i = this.#head; i < this.#queue.length; i++) if (this.#queue[i].slot) n++;
    return n;
  }

  /** Call `fn` once, `ms` from now (rounded up to the end of a slot). Returns a handle. */
  setTimer = (fn: () => void, ms: number): unknown => {
    if (!(ms >= this.#slotMs)) {
      const t: DirectTimer = { direct: null };
      t.direct = this.#setTimeout(fn, Math.max(0, ms || 0));
      return t;
    }
    const slot = Math.ceil((this.#now() + ms) / this.#slotMs);
    let timers = this.#slots.get(slot);
    if (!timers) {
      this.#slots.set(slot, timers = new Set());
      this.#push(slot);
    }
    const t: WheelTimer = { fn, slot: timers, slotNumber: slot };
    timers.add(t);
    if (slot < this.#armedSlot) this.#arm(slot);
    return t;
  };

  /** Cancel a timer from `setTimer`; a fired or cleared one is ignored. */
  clearTimer = (handle: unknown): void => {
    if (handle === null || typeof handle !== "object") return;
    if ("direct" in handle) {
      this.#clearTimeout((handle as DirectTimer).direct);
      return;
    }
    const t = handle as WheelTimer;
    const timers = t.slot;
    if (timers === null) return;
    t.slot = null;
    timers.delete(t);
    // No wake-up for an emptied slot (most deadlines are cleared in time). The slot stays
    // until its time, so that a later timer in it does not put its number twice in the heap.
    if (timers.size === 0 && t.slotNumber === this.#armedSlot) this.#rearm();
  };

  /** Stop the runtime timer and drop every waiting timer. */
  clear(): void {
    if (this.#armed !== null) this.#clearTimeout(this.#armed);
    this.#armed = null;
    this.#armedSlot = Infinity;
    for (const timers of this.#slots.values()) for (const t of timers) t.slot = null;
    for (const t of this.#queue) t.slot = null;
    this.#slots.clear();
    this.#heap.length = 0;
    this.#queue = [];
    this.#head = 0;
  }

  #arm(slot: number): void {
    if (this.#armed !== null) this.#clearTimeout(this.#armed);
    this.#armedSlot = slot;
    // Runtimes fire a delay above 2^31-1 ms at once (Node after 1 ms): a slot farther away
    // (an interval of 25 days or more) is reached in steps, or it would spin
    this.#armed = this.#setTimeout(
      () => this.#fire(),
      Math.min(MAX_TIMEOUT_MS, Math.max(0, slot * this.#slotMs - this.#now())),
    );
  }

  #fire(): void {
    this.#armed = null;
    this.#armedSlot = Infinity;
    const due = Math.floor(this.#now() / this.#slotMs);
    // Every slot due now is taken out into the queue before its timers run: a timer set by a
    // callback goes into a new slot and fires on a later wake-up, never in this one.
    while (this.#heap.length > 0 && this.#heap[0] <= due) {
      const slot = this.#pop();
      const timers = this.#slots.get(slot);
      if (!timers) continue;
      this.#slots.delete(slot);
      for (const t of timers) this.#queue.push(t);
    }
    this.#rearm();
    if (!this.#draining) this.#drain(); // (else the turn asked for runs these as well)
  }

  /** Run one batch of the queue; ask for another turn while timers are left. */
  #drain(): void {
    this.#draining = false;
    let ran = 0;
    while (this.#head < this.#queue.length && ran < this.#batch) {
      const t = this.#queue[this.#head++];
      if (t.slot === null) continue; // cleared by an earlier callback
      t.slot = null;
      ran++;
      try {
        t.fn();
      } catch (e) {
        this.#onError(e);
      }
    }
    if (this.#head < this.#queue.length) {
      this.#draining = true;
      this.#defer(() => this.#drain());
    } else {
      this.#queue = [];
      this.#head = 0;
    }
  }

  /** Set the runtime timer for the earliest slot that has timers (none when there is none). */
  #rearm(): void {
    while (this.#heap.length > 0) {
      const timers = this.#slots.get(this.#heap[0]);
      if (timers !== undefined && timers.size > 0) break;
      this.#slots.delete(this.#pop());
    }
    const next = this.#heap.length > 0 ? this.#heap[0] : Infinity;
    if (next === this.#armedSlot) return;
    if (next === Infinity) {
      if (this.#armed !== null) this.#clearTimeout(this.#armed);
      this.#armed = null;
      this.#armedSlot = Infinity;
      return;
    }
    this.#arm(next);
  }

  #push(slot: number): void {
    const h = this.#heap;
    let i = h.push(slot) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (h[parent] <= slot) break;
      h[i] = h[parent];
      i = parent;
    }
    h[i] = slot;
  }

  #pop(): number {
    const h = this.#heap;
    const top = h[0];
    const last = h.pop()!;
    if (h.length > 0) {
      let i = 0;
      while (true) {
        const l = 2 * i + 1;
        if (l >= h.length) break;
        const r = l + 1;
        const c = r < h.length && h[r] < h[l] ? r : l;
        if (h[c] >= last) break;
        h[i] = h[c];
        i = c;
      }
      h[i] = last;
    }
    return top;
  }
}
