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

/** How often `serve` releases memory when `--memory-release-interval` is not given, seconds. */
export const DEFAULT_MEMORY_RELEASE_SECONDS = 30;

/**
 * The release interval `serve` uses, seconds (0: none): the flag's value when given; else
 * {@linkcode DEFAULT_MEMORY_RELEASE_SECONDS}, or none for a replica that shares the collection
 * (`--shard-collection`, issue 29).
 *
 * Why not on a sharded replica: `Bun.shrink()` drops all compiled code, and JavaScriptCore
 * compiles a function again only after it ran a number of times. A replica that collects a
 * third of the queries and answers a third of the reads runs its hot code a third as often, so
 * after each release it takes three times as long to compile it back. Measured on the bench's
 * sharded row (500 HPAs x 20 pods every 7.5 s, three replicas, from 60 s after every value was
 * held): with a release every 30 s (or every 120 s) each replica's JIT thread stayed at
 * 0.009-0.014 cores and a replica cost 0.068-0.104 cores (mean 0.092), the most loaded 0.45-0.54
 * of the single replica; without it, JIT 0.003-0.004 cores, 0.070-0.086 cores a replica (mean
 * 0.076), the most loaded 0.37-0.42 of the single replica, RSS 145-159 MiB against 135-148.
 * The release after the first round (the start's peak) stays.
 */
export function memoryReleaseSeconds(flag: number | null, sharded: boolean): number {
  if (flag !== null) return flag;
  return sharded ? 0 : DEFAULT_MEMORY_RELEASE_SECONDS;
}

/** Options of {@linkcode startMemoryRelease}. */
export interface MemoryReleaseOptions {
  /** How often to release, ms (> 0). */
  intervalMs: number;
  /** Requests answered so far: a release waits for a quiet moment (no new request). */
  requests: () => number;
  /** Does the release; returns whether anything was done (default {@linkcode releaseUnusedMemory}). */
  release?: () => boolean;
  /** How long no request must come before a release, ms (default 250). */
  quietMs?: number;
  /** How long to wait before looking for a quiet moment again, ms (default 1000). */
  retryMs?: number;
  /**
   * The process's resident memory, bytes: with it, an interval releases only when it grew by
   * `minGrowthBytes` since the last release (or the start), and otherwise does nothing.
   */
  rss?: () => number;
  /** How much `rss` must grow for a release (default {@linkcode MEMORY_RELEASE_GROWTH_BYTES}). */
  minGrowthBytes?: number;
  setTimeout?: (fn: () => void, ms: number) => unknown;
  clearTimeout?: (handle: unknown) => void;
}

/**
 * How much resident memory must have grown since the last release for the next one: 8 MiB.
 * A release costs CPU (a full collection, and compiling the hot code again after
 * `Bun.shrink()`), and at rest the memory grows back by less than this and stays there.
 * Measured next to prometheus-adapter (bench/peers, 50 pods, 20 HPAs, one session each): a
 * release every 30 s took CPU at rest from 0.32 to 0.46 s a minute (the peer's 0.36) for
 * 4 MiB less RSS (70.7 against 74.5, the peer's 69.2); after a burst (the serving runs: a
 * peak of 92 MiB) the memory grows by more, and is released.
 */
export const MEMORY_RELEASE_GROWTH_BYTES = 8 * 1024 * 1024;

/**
 * Release unused memory every `intervalMs` (when `rss` grew by `minGrowthBytes` since the last
 * release, if given), at a quiet moment: a full collection blocks the
 * event loop (~45 ms at 2,000 HPAs) and `Bun.shrink()` drops compiled code, which the hot paths
 * compile again. So it waits until no request came for `quietMs`, looking again every
 * `retryMs`; when the server is busy for a whole interval it releases all the same (at 2,000
 * HPAs the HPA controller reads ~270 values a second, evenly: never 250 ms without one).
 * Measured on the binary at 2,000 HPAs in file mode (RSS median of 20 s from 30 s after the
 * start, two runs each): 130.1-130.6 MiB without, 119.6-120.4 with a release
 * every 15 s, 119.5-123.1 every 30 s (the default of `serve`). Returns `stop()`.
 *
 * @example
 * ```ts
 * let served = 0;
 * const stop = startMemoryRelease({ intervalMs: 60_000, requests: () => served });
 * ```
 */
export function startMemoryRelease(options: MemoryReleaseOptions): () => void {
  const release = options.release ?? releaseUnusedMemory;
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
  let stopped = false;
  let waited = 0;
  let seen = 0;
  const minGrowth = options.minGrowthBytes ?? MEMORY_RELEASE_GROWTH_BYTES;
  let baseline = options.rss?.() ?? 0;
  /** Whether memory grew enough for a release (always, without `rss`). */
  const grown = () => options.rss === undefined || options.rss() - baseline >= minGrowth;
  const schedule = (fn: () => void, ms: number) => {
    if (!stopped) timer = set(fn, ms);
  };
  const look = () => {
    if (!grown()) {
      schedule(look, options.intervalMs);
      return;
    }
    seen = options.requests();
    schedule(check, quietMs);
  };
  const check = () => {
    waited += quietMs + retryMs;
    // a quiet moment; or busy a whole interval, as a server the HPA controller reads all the
    // time is: release now, at one pause a round, rather than never
    if (options.requests() === seen || waited >= options.intervalMs) {
      release();
      baseline = options.rss?.() ?? 0;
      waited = 0;
      schedule(look, options.intervalMs);
    } else {
      schedule(look, retryMs);
    }
  };
  schedule(look, options.intervalMs);
  return () => {
    stopped = true;
    if (timer !== null) clear(timer);
  };
}
