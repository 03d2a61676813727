/**
 * Giving back memory the runtime holds but no longer uses, the one thing here only Bun needs.
 *
 * JavaScriptCore keeps the heap it grew to at a peak (the start's reading, planning and first
 * collection of every metric) and returns little of it by itself: measured on the binary at
 * 2,000 HPAs, RSS stayed ~137 MiB after the start's work, and went to ~127 MiB after a full
 * collection followed by `Bun.shrink()` (a full collection alone changed nothing). V8 (Node,
 * Deno) gives memory back on its own: nothing is done there.
 *
 * @module
 */

interface BunMemory {
  gc?: (force: boolean) => void;
  shrink?: () => void;
}

/**
 * Collect garbage and return the freed heap to the operating system, where the runtime can be
 * asked to (Bun). Blocks for one full collection: call it after a burst of work, not per
 * request. Returns whether anything was done.
 *
 * @example
 * ```ts
 * await engine.firstRound();
 * releaseUnusedMemory();
 * ```
 */
export function releaseUnusedMemory(): boolean {
  const bun = (globalThis as { Bun?: BunMemory }).Bun;
  if (typeof bun?.gc !== "function" || typeof bun.shrink !== "function") return false;
  bun.gc(true);
  bun.shrink();
  return true;
}

/** Options of {@linkcode startMemoryRelease}. */
export interface MemoryReleaseOptions {
  /** How often to look whether a release is worth it, ms (> 0). */
  intervalMs: number;
  /** Requests answered so far: a release waits for a quiet moment (no new request). */
  requests: () => number;
  /** Does the release; returns whether anything was done (default {@linkcode releaseUnusedMemory}). */
  release?: () => boolean;
  /**
   * The process's resident memory, bytes (default `process.memoryUsage.rss()`); throwing, or
   * missing where there is no `process`, makes every round release.
   */
  rss?: () => number;
  /**
   * A round releases only when resident memory is at least this much above the lowest it was
   * since the last release, first read one second after it (bytes, default
   * {@linkcode MEMORY_RELEASE_MIN_GROWTH}; 0: every round).
   */
  minGrowthBytes?: number;
  /** How long no request must come before a release, ms (default 250). */
  quietMs?: number;
  /** How long to wait before looking for a quiet moment again, ms (default 1000). */
  retryMs?: number;
  setTimeout?: (fn: () => void, ms: number) => unknown;
  clearTimeout?: (handle: unknown) => void;
}

/**
 * How much resident memory must grow after a release before the next one is worth its cost
 * (8 MiB). A release is not free: `Bun.shrink()` drops every function's compiled code, and the
 * JIT compiles the hot paths again (measured on the sharded bench row, issue 29: ~0.01 cores of
 * each replica's JIT threads in steady state with a release every 30 s, ~0.002 without), while
 * in steady state the memory it frees comes back within the interval.
 */
export const MEMORY_RELEASE_MIN_GROWTH = 8 * 1024 * 1024;

function processRss(): number {
  return (globalThis as { process?: { memoryUsage: { rss(): number } } }).process!.memoryUsage
    .rss();
}

/**
 * Every `intervalMs`, release unused memory if resident memory grew by `minGrowthBytes` since
 * just after the last release (a burst of work: the start, HPAs added, a full read), at a quiet
 * moment: a full collection blocks the event loop (~45 ms at 2,000 HPAs) and `Bun.shrink()`
 * drops compiled code, which the hot paths compile again. So it waits until no request came for
 * `quietMs`, looking again every `retryMs`; when the server is busy for a whole interval it
 * releases all the same (at 2,000 HPAs the HPA controller reads ~270 values a second, evenly:
 * never 250 ms without one). In steady state, where what a release frees comes back within
 * an interval, no round releases, and the JIT keeps its code. Measured on the binary at 2,000
 * HPAs in file mode with a release every round (RSS median of 20 s from 30 s after the start,
 * two runs each): 130.1-130.6 MiB without, 119.6-120.4 with a release every 15 s, 119.5-123.1
 * every 30 s. Returns `stop()`.
 *
 * @example
 * ```ts
 * let served = 0;
 * const stop = startMemoryRelease({ intervalMs: 60_000, requests: () => served });
 * ```
 */
export function startMemoryRelease(options: MemoryReleaseOptions): () => void {
  const release = options.release ?? releaseUnusedMemory;
  const rss = options.rss ?? processRss;
  const minGrowth = options.minGrowthBytes ?? MEMORY_RELEASE_MIN_GROWTH;
  const quietMs = options.quietMs ?? 250;
  const retryMs = options.retryMs ?? 1000;
  const set = options.setTimeout ??
    ((fn: () => void, ms: number) => {
      const t = setTimeout(fn, ms);
      (t as { unref?: () => void }).unref?.();
      return t;
    });
  const clear = options.clearTimeout ??
    ((h: unknown) => clearTimeout(h as ReturnType<typeof setTimeout>));
  let timer: unknown = null;
  let settleTimer: unknown = null;
  let stopped = false;
  let waited = 0;
  let seen = 0;
  /** The lowest resident memory read since the last release (null: none read yet). */
  let floor: number | null = null;
  const readRss = (): number | null => {
    try {
      const r = rss();
      return Number.isFinite(r) ? r : null;
    } catch {
      return null;
    }
  };
  const schedule = (fn: () => void, ms: number) => {
    if (!stopped) timer = set(fn, ms);
  };
  // what is resident once the release (the caller's, before the first round; then ours) is done
  const settle = () => {
    if (stopped) return;
    settleTimer = set(() => {
      settleTimer = null;
      floor = readRss();
    }, 1000);
  };
  const round = () => {
    if (minGrowth > 0 && floor !== null) {
      const now = readRss();
      if (now !== null && now < floor + minGrowth) {
        floor = Math.min(floor, now);
        schedule(round, options.intervalMs);
        return;
      }
    }
    look();
  };
  const look = () => {
    seen = options.requests();
    schedule(check, quietMs);
  };
  const check = () => {
    waited += quietMs + retryMs;
    // a quiet moment; or busy a whole interval, as a server the HPA controller reads all the
    // time is: release now, at one pause a round, rather than never
    if (options.requests() === seen || waited >= options.intervalMs) {
      release();
      waited = 0;
      floor = null;
      settle();
      schedule(round, options.intervalMs);
    } else {
      schedule(look, retryMs);
    }
  };
  settle();
  schedule(round, options.intervalMs);
  return () => {
    stopped = true;
    if (timer !== null) clear(timer);
    if (settleTimer !== null) clear(settleTimer);
  };
}
