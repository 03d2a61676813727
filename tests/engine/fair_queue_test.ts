import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FairQueue } from "../../src/engine/fair_queue.ts";

function drain<T>(q: FairQueue<T>): T[] {
  const out: T[] = [];
  for (let x = q.shift(); x !== undefined; x = q.shift()) out.push(x);
  return out;
}

describe("FairQueue", () => {
  it("hands out a lone item of another group second, not after a thousand of the first", () => {
    const q = new FairQueue<string>();
    for (let i = 0; i < 1000; i++) q.push("a", `a${i}`);
    q.push("b", "b0");
    assert.equal(q.size, 1001);
    const order = drain(q);
    assert.deepEqual(order.slice(0, 4), ["a0", "b0", "a1", "a2"]);
    assert.deepEqual(order.slice(1), ["b0", ...Array.from({ length: 999 }, (_, i) => `a${i + 1}`)]);
    assert.equal(q.size, 0);
    assert.equal(q.shift(), undefined);
  });

  it("takes the groups in turn, each in its own order, a group that starts waiting last", () => {
    const q = new FairQueue<string>();
    q.push("a", "a0");
    q.push("a", "a1");
    q.push("a", "a2");
    q.push("b", "b0");
    q.push("b", "b1");
    assert.equal(q.shift(), "a0");
    q.push("c", "c0"); // after b and a, which wait already
    assert.deepEqual(drain(q), ["b0", "a1", "c0", "b1", "a2"]);
  });

  it("gives a group that emptied and waits again the last turn", () => {
    const q = new FairQueue<string>();
    q.push("a", "a0");
    q.push("b", "b0");
    q.push("b", "b1");
    assert.equal(q.shift(), "a0"); // a is empty now
    q.push("a", "a1");
    assert.deepEqual(drain(q), ["b0", "a1", "b1"]);
  });

  it("keeps each group's order across the growth and wrap of its buffer", () => {
    const q = new FairQueue<number>();
    const out: number[] = [];
    let next = 0;
    // push three, take two, again and again: the buffer wraps and grows with items in it
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 3; i++) q.push("a", next++);
      out.push(q.shift()!, q.shift()!);
    }
    out.push(...drain(q));
    assert.deepEqual(out, Array.from({ length: 150 }, (_, i) => i));
  });

  it("serves three groups of a thousand one each in turn", () => {
    const q = new FairQueue<string>();
    for (const g of ["x", "y", "z"]) for (let i = 0; i < 1000; i++) q.push(g, `${g}${i}`);
    const order = drain(q);
    assert.equal(order.length, 3000);
    for (let i = 0; i < 1000; i++) {
      assert.deepEqual(order.slice(3 * i, 3 * i + 3), [`x${i}`, `y${i}`, `z${i}`]);
    }
  });
});
