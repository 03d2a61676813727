import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { memoryReleaseSeconds, startMemoryRelease } from "../../src/runtime/memory.ts";
import { optionalNumberFlag, parseArgs, SERVE_FLAGS } from "../../src/cli/flags.ts";

/** Timers on a fake clock: `advance(ms)` runs what falls due, in order. */
function fakeTimers() {
  let now = 0;
  let seq = 0;
  const timers = new Map<number, { at: number; fn: () => void }>();
  return {
    setTimeout: (fn: () => void, ms: number) => {
      const id = ++seq;
      timers.set(id, { at: now + ms, fn });
      return id;
    },
    clearTimeout: (h: unknown) => void timers.delete(h as number),
    advance(ms: number) {
      const end = now + ms;
      for (;;) {
        const next = [...timers.entries()].filter(([, t]) => t.at <= end)
          .sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
        if (!next) break;
        timers.delete(next[0]);
        now = next[1].at;
        next[1].fn();
      }
      now = end;
    },
    get now() {
      return now;
    },
    get pending() {
      return timers.size;
    },
  };
}

describe("startMemoryRelease", () => {
  it("releases once per interval, after 250 ms without a request", () => {
    const t = fakeTimers();
    const at: number[] = [];
    startMemoryRelease({
      intervalMs: 60_000,
      requests: () => 7,
      release: () => (at.push(t.now), true),
      setTimeout: t.setTimeout,
      clearTimeout: t.clearTimeout,
    });
    t.advance(60_249);
    assert.deepEqual(at, []);
    t.advance(1);
    assert.deepEqual(at, [60_250]);
    t.advance(60_250);
    assert.deepEqual(at, [60_250, 120_500]);
  });

  it("waits for a quiet moment, and releases anyway after a round that is busy throughout", () => {
    const t = fakeTimers();
    let served = 0;
    let busyUntil = 0;
    const at: number[] = [];
    startMemoryRelease({
      intervalMs: 10_000,
      // a request every 100 ms while busy
      requests: () => (t.now < busyUntil ? ++served : served),
      release: () => (at.push(t.now), true),
      setTimeout: t.setTimeout,
      clearTimeout: t.clearTimeout,
    });
    busyUntil = 12_000;
    t.advance(13_000);
    // looks at 10,000 (busy), 11,250 (busy), 12,500 (quiet from there): released at 12,750
    assert.deepEqual(at, [12_750]);
    busyUntil = 1e9;
    t.advance(40_000);
    // from 22,750 on, every look is busy: a look every 1,250 ms, and after eight of them (a
    // whole interval of looking) the release comes all the same
    assert.deepEqual(at, [12_750, 31_750, 50_750]);
    busyUntil = 0;
    t.advance(11_250);
    // quiet again: the next round releases at its first look
    assert.deepEqual(at, [12_750, 31_750, 50_750, 61_000]);
  });

  it("with the resident memory, releases only after it grew by 8 MiB since the last release", () => {
    const t = fakeTimers();
    const MiB = 1024 * 1024;
    let rss = 70 * MiB;
    const at: number[] = [];
    startMemoryRelease({
      intervalMs: 30_000,
      requests: () => 0,
      rss: () => rss,
      release: () => {
        at.push(t.now);
        rss = 70 * MiB;
        return true;
      },
      setTimeout: t.setTimeout,
      clearTimeout: t.clearTimeout,
    });
    // at rest, grown back by less than 8 MiB: no release, round after round
    rss = 77.9 * MiB;
    t.advance(120_000);
    assert.deepEqual(at, []);
    // a burst: released at the next round's quiet moment, and measured again from there
    rss = 92 * MiB;
    t.advance(30_250);
    assert.deepEqual(at, [150_250]);
    rss = 75 * MiB;
    t.advance(90_000);
    assert.deepEqual(at, [150_250]);
    rss = 78 * MiB;
    t.advance(30_250);
    assert.deepEqual(at, [150_250, 270_500]);
  });

  it("stops", () => {
    const t = fakeTimers();
    let released = 0;
    const stop = startMemoryRelease({
      intervalMs: 1_000,
      requests: () => 0,
      release: () => (released++, true),
      setTimeout: t.setTimeout,
      clearTimeout: t.clearTimeout,
    });
    t.advance(1_250);
    assert.equal(released, 1);
    stop();
    assert.equal(t.pending, 0);
    t.advance(10_000);
    assert.equal(released, 1);
  });
});

describe("memoryReleaseSeconds", () => {
  /** What `serve` releases at with these arguments: the flag as parsed, sharded or not. */
  const interval = (argv: string[]) => {
    const flags = parseArgs(argv, SERVE_FLAGS).values;
    return memoryReleaseSeconds(
      optionalNumberFlag(flags, "memory-release-interval"),
      flags["shard-collection"] === true,
    );
  };

  it("is 30 s by default, and off on a replica that shares the collection", () => {
    assert.equal(interval([]), 30);
    assert.equal(interval(["--shard-collection"]), 0);
  });

  it("is what the flag says when it is given, sharded or not", () => {
    assert.equal(interval(["--memory-release-interval=45s"]), 45);
    assert.equal(interval(["--memory-release-interval=0"]), 0);
    assert.equal(interval(["--shard-collection", "--memory-release-interval=2m"]), 120);
  });
});
