import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  DEFAULT_TIMER_BATCH,
  TimerWheel,
  type TimerWheelOptions,
} from "../../src/engine/timer_wheel.ts";

/** A runtime's timers by hand: `advance(ms)` fires due runtime timers in time order. */
class FakeRuntime {
  now = 1_000;
  #next = 1;
  readonly timers = new Map<number, { at: number; fn: () => void }>();
  /** How many runtime timers were ever set (wake-ups asked for). */
  set = 0;
  /** How many runtime timers fired (wake-ups). */
  fired = 0;

  setTimeout = (fn: () => void, ms: number): unknown => {
    const id = this.#next++;
    this.set++;
    this.timers.set(id, { at: this.now + ms, fn });
    return id;
  };

  clearTimeout = (handle: unknown): void => {
    this.timers.delete(handle as number);
  };

  clock = (): number => this.now;

  advance(ms: number): void {
    const end = this.now + ms;
    while (true) {
      let due: [number, { at: number; fn: () => void }] | null = null;
      for (const e of this.timers) {
        if (e[1].at <= end && (!due || e[1].at < due[1].at)) due = e;
      }
      if (!due) break;
      this.timers.delete(due[0]);
      this.now = Math.max(this.now, due[1].at);
      this.fired++;
      due[1].fn();
    }
    this.now = end;
  }
}

/**
 * A wheel of 100 ms slots on `rt`'s timers and clock, running up to 16 timers a turn (the
 * tests of batches set their own); `extra` adds or replaces options.
 */
function wheelOn(rt: FakeRuntime, extra: TimerWheelOptions = {}): TimerWheel {
  return new TimerWheel({
    slotMs: 100,
    batch: 16,
    setTimeout: rt.setTimeout,
    clearTimeout: rt.clearTimeout,
    now: rt.clock,
    ...extra,
  });
}

describe("TimerWheel", () => {
  it("fires the timers of one slot in one wake-up, in the order they were set, at the slot's end", () => {
    const rt = new FakeRuntime();
    const wheel = wheelOn(rt);
    const log: string[] = [];
    // now 1000: 1000+130 and 1000+170 are both in the slot ending at 1200; 1000+250 ends at 1300
    wheel.setTimer(() => log.push(`b@${rt.now}`), 170);
    wheel.setTimer(() => log.push(`a@${rt.now}`), 130);
    wheel.setTimer(() => log.push(`c@${rt.now}`), 250);
    assert.equal(wheel.size, 3);
    assert.equal(rt.timers.size, 1); // one runtime timer, for the earliest slot
    rt.advance(199);
    assert.deepEqual(log, []);
    rt.advance(1);
    assert.deepEqual(log, ["b@1200", "a@1200"]);
    assert.equal(rt.fired, 1);
    rt.advance(100);
    assert.deepEqual(log, ["b@1200", "a@1200", "c@1300"]);
    assert.equal(rt.fired, 2);
    assert.equal(wheel.size, 0);
    assert.equal(rt.timers.size, 0);
  });

  it("arms the runtime timer again when an earlier slot gets a timer", () => {
    const rt = new FakeRuntime();
    const wheel = wheelOn(rt);
    const log: number[] = [];
    wheel.setTimer(() => log.push(rt.now), 5_000);
    wheel.setTimer(() => log.push(rt.now), 300);
    assert.equal(rt.timers.size, 1);
    assert.deepEqual([...rt.timers.values()].map((t) => t.at), [1_300]);
    rt.advance(10_000);
    assert.deepEqual(log, [1_300, 6_000]);
  });

  it("forgets a cleared timer, and an emptied slot asks for no wake-up", () => {
    const rt = new FakeRuntime();
    const wheel = wheelOn(rt);
    const log: string[] = [];
    const deadline = wheel.setTimer(() => log.push("deadline"), 150);
    wheel.setTimer(() => log.push("tick"), 1_000);
    assert.deepEqual([...rt.timers.values()].map((t) => t.at), [1_200]);
    wheel.clearTimer(deadline);
    wheel.clearTimer(deadline); // twice: ignored
    assert.deepEqual([...rt.timers.values()].map((t) => t.at), [2_000]);
    rt.advance(5_000);
    assert.deepEqual(log, ["tick"]);
    assert.equal(rt.fired, 1);
  });

  it("still fires once in a slot that was emptied and filled many times", () => {
    const rt = new FakeRuntime();
    const wheel = wheelOn(rt);
    const log: number[] = [];
    wheel.setTimer(() => log.push(rt.now), 900); // keeps a later slot armed meanwhile
    for (let i = 0; i < 1000; i++) wheel.clearTimer(wheel.setTimer(() => log.push(-1), 150));
    wheel.setTimer(() => log.push(rt.now), 150);
    assert.equal(wheel.size, 2);
    rt.advance(2_000);
    assert.deepEqual(log, [1_200, 1_900]);
    assert.equal(rt.fired, 2);
  });

  it("fires a timer set by a callback on a later wake-up, even for the same slot time", () => {
    const rt = new FakeRuntime();
    const wheel = wheelOn(rt);
    const log: string[] = [];
    let again = 3;
    const tick = (): void => {
      log.push(`tick@${rt.now}`);
      if (--again > 0) wheel.setTimer(tick, 100);
    };
    wheel.setTimer(tick, 100);
    rt.advance(1_000);
    assert.deepEqual(log, ["tick@1100", "tick@1200", "tick@1300"]);
    assert.equal(rt.fired, 3);
  });

  it("skips a timer of the same wake-up cleared by an earlier callback", () => {
    const rt = new FakeRuntime();
    const wheel = wheelOn(rt);
    const log: string[] = [];
    wheel.setTimer(() => {
      log.push("first");
      wheel.clearTimer(second);
    }, 120);
    const second = wheel.setTimer(() => log.push("second"), 140);
    rt.advance(500);
    assert.deepEqual(log, ["first"]);
  });

  it("hands delays shorter than a slot to the runtime as they are", () => {
    const rt = new FakeRuntime();
    const wheel = wheelOn(rt);
    const log: string[] = [];
    wheel.setTimer(() => log.push(`short@${rt.now}`), 30);
    const cleared = wheel.setTimer(() => log.push("cleared"), 0);
    wheel.clearTimer(cleared);
    assert.equal(wheel.size, 0);
    rt.advance(100);
    assert.deepEqual(log, ["short@1030"]);
  });

  it("reaches a slot more than 2^31-1 ms away in runtime timers the runtime can hold", () => {
    const rt = new FakeRuntime();
    const delays: number[] = [];
    const wheel = wheelOn(rt, {
      setTimeout: (fn, ms) => {
        delays.push(ms);
        return rt.setTimeout(fn, ms);
      },
    });
    const log: number[] = [];
    const thirtyDays = 30 * 24 * 3600 * 1000;
    wheel.setTimer(() => log.push(rt.now), thirtyDays);
    assert.deepEqual(delays, [2_147_483_647]);
    rt.advance(thirtyDays + 100);
    assert.deepEqual(delays, [2_147_483_647, thirtyDays - 2_147_483_647]);
    assert.deepEqual(log, [1_000 + thirtyDays]);
  });

  it("keeps firing the other timers when one throws, and reports the error", () => {
    const rt = new FakeRuntime();
    const errors: unknown[] = [];
    const wheel = wheelOn(rt, { onError: (e) => errors.push(e) });
    const log: string[] = [];
    wheel.setTimer(() => {
      throw new Error("boom");
    }, 110);
    wheel.setTimer(() => log.push("after"), 120);
    wheel.setTimer(() => log.push("later"), 400);
    rt.advance(1_000);
    assert.deepEqual(log, ["after", "later"]);
    assert.deepEqual(errors.map((e) => (e as Error).message), ["boom"]);
  });

  it("a late runtime timer fires every slot that became due", () => {
    const rt = new FakeRuntime();
    const wheel = wheelOn(rt);
    const log: number[] = [];
    wheel.setTimer(() => log.push(1), 100);
    wheel.setTimer(() => log.push(2), 200);
    wheel.setTimer(() => log.push(3), 900);
    // the event loop was busy: the runtime timer for 1100 runs at 1450
    const [id, t] = [...rt.timers][0];
    rt.timers.set(id, { ...t, at: 1_450 });
    rt.advance(460);
    assert.deepEqual(log, [1, 2]);
    assert.equal(rt.fired, 1);
    assert.deepEqual([...rt.timers.values()].map((x) => x.at), [1_900]);
    rt.advance(1_000);
    assert.deepEqual(log, [1, 2, 3]);
  });

  it("clear() drops every timer and the runtime timer", () => {
    const rt = new FakeRuntime();
    const wheel = wheelOn(rt);
    const log: string[] = [];
    const t = wheel.setTimer(() => log.push("x"), 500);
    wheel.setTimer(() => log.push("y"), 900);
    wheel.clear();
    wheel.clearTimer(t);
    assert.equal(wheel.size, 0);
    assert.equal(rt.timers.size, 0);
    rt.advance(5_000);
    assert.equal(log.length, 0);
    wheel.setTimer(() => log.push("z"), 100); // usable after a clear
    rt.advance(200);
    assert.deepEqual(log, ["z"]);
  });

  it("runs a full slot in batches, one per turn of the event loop", () => {
    const rt = new FakeRuntime();
    const turns: (() => void)[] = [];
    const wheel = wheelOn(rt, { batch: 2, defer: (fn) => turns.push(fn) });
    const log: string[] = [];
    const handles = ["a", "b", "c", "d", "e"].map((name) =>
      wheel.setTimer(() => log.push(name), 150)
    );
    wheel.setTimer(() => log.push("next slot"), 250);
    rt.advance(200); // the slot ending at 1200
    assert.deepEqual(log, ["a", "b"]);
    assert.equal(turns.length, 1);
    assert.equal(wheel.size, 4);
    wheel.clearTimer(handles[3]); // "d", waiting for its turn
    turns.shift()!();
    assert.deepEqual(log, ["a", "b", "c", "e"]);
    assert.equal(turns.length, 0);
    // the next slot has its runtime timer already
    rt.advance(100);
    assert.deepEqual(log, ["a", "b", "c", "e", "next slot"]);
  });

  it("runs one timer a turn by default, so that reads are answered between collections", () => {
    assert.equal(DEFAULT_TIMER_BATCH, 1);
    const rt = new FakeRuntime();
    const turns: (() => void)[] = [];
    const wheel = wheelOn(rt, { batch: undefined, defer: (fn) => turns.push(fn) });
    const log: string[] = [];
    for (const name of ["a", "b", "c"]) wheel.setTimer(() => log.push(name), 150);
    rt.advance(200);
    assert.deepEqual(log, ["a"]);
    assert.equal(turns.length, 1);
    turns.shift()!();
    assert.deepEqual(log, ["a", "b"]);
    assert.equal(turns.length, 1);
    turns.shift()!();
    assert.deepEqual(log, ["a", "b", "c"]);
    assert.equal(turns.length, 0);
    assert.equal(wheel.size, 0);
  });

  it("adds the timers of a slot that fires while batches are left to the same turns", () => {
    const rt = new FakeRuntime();
    const turns: (() => void)[] = [];
    const wheel = wheelOn(rt, { batch: 1, defer: (fn) => turns.push(fn) });
    const log: string[] = [];
    wheel.setTimer(() => log.push("a"), 150);
    wheel.setTimer(() => log.push("b"), 150);
    wheel.setTimer(() => log.push("c"), 250);
    rt.advance(200); // 1200: "a" runs, "b" waits for a turn
    rt.advance(100); // 1300: "c" joins the queue, no turn of its own
    assert.deepEqual(log, ["a"]);
    assert.equal(turns.length, 1);
    turns.shift()!();
    turns.shift()!();
    assert.deepEqual(log, ["a", "b", "c"]);
    assert.equal(turns.length, 0);
    assert.equal(wheel.size, 0);
  });

  it("rejects a slot that is not a positive number", () => {
    assert.throws(() => new TimerWheel({ slotMs: 0 }), /invalid timer slot 0 ms/);
  });

  it("runs on the runtime's own timers", async () => {
    const wheel = new TimerWheel({ slotMs: 20 });
    const started = performance.now();
    const fired = await new Promise<number[]>((resolve) => {
      const at: number[] = [];
      const done = (): void => {
        at.push(performance.now() - started);
        if (at.length === 3) resolve(at);
      };
      wheel.setTimer(done, 25);
      wheel.setTimer(done, 30);
      wheel.setTimer(done, 45);
    });
    for (const [i, ms] of [25, 30, 45].entries()) {
      assert.ok(fired[i] >= ms - 1, `timer ${i} fired at ${fired[i]} ms, before ${ms} ms`);
    }
    assert.equal(wheel.size, 0);
  });
});
