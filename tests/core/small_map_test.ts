import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { SMALL_MAP_LIMIT, SmallMap } from "../../src/core/small_map.ts";

/** The same operations on a SmallMap and a Map must leave the same entries, in the same order. */
function same<K, V>(small: SmallMap<K, V>, map: Map<K, V>): void {
  assert.equal(small.size, map.size);
  assert.deepEqual([...small], [...map]);
  assert.deepEqual([...small.keys()], [...map.keys()]);
  assert.deepEqual([...small.values()], [...map.values()]);
  assert.deepEqual([...small.entries()], [...map.entries()]);
}

describe("SmallMap", () => {
  it("keeps insertion order, and a key set again keeps its place", () => {
    const s = new SmallMap<string, number>([["b", 1], ["a", 2]]);
    s.set("c", 3).set("b", 4);
    assert.deepEqual([...s], [["b", 4], ["a", 2], ["c", 3]]);
    assert.equal(s.get("b"), 4);
    assert.equal(s.get("z"), undefined);
    assert.equal(s.has("a"), true);
    assert.equal(s.has("z"), false);
  });

  it("deletes from the middle and reports whether the key was there", () => {
    const s = new SmallMap<string, number>([["a", 1], ["b", 2], ["c", 3]]);
    assert.equal(s.delete("b"), true);
    assert.equal(s.delete("b"), false);
    assert.deepEqual([...s], [["a", 1], ["c", 3]]);
    assert.equal(s.size, 2);
    s.clear();
    assert.equal(s.size, 0);
    assert.deepEqual([...s], []);
  });

  it("compares keys with SameValueZero, as Map does (NaN finds NaN, -0 finds 0)", () => {
    const s = new SmallMap<number, string>([[NaN, "nan"], [0, "zero"]]);
    assert.equal(s.get(NaN), "nan");
    assert.equal(s.get(-0), "zero");
    s.set(-0, "again");
    assert.deepEqual([...s], [[NaN, "nan"], [0, "again"]]);
    const objKey = {};
    const t = new SmallMap<object, number>([[objKey, 1]]);
    assert.equal(t.get({}), undefined);
    assert.equal(t.get(objKey), 1);
  });

  it("behaves as a Map past its small size, through growing, deleting and re-adding", () => {
    const s = new SmallMap<string, number>();
    const m = new Map<string, number>();
    const n = SMALL_MAP_LIMIT * 3;
    for (let i = 0; i < n; i++) {
      s.set(`k${i}`, i);
      m.set(`k${i}`, i);
      same(s, m);
    }
    for (let i = 0; i < n; i += 3) {
      assert.equal(s.delete(`k${i}`), m.delete(`k${i}`));
      same(s, m);
    }
    s.set("k1", -1);
    m.set("k1", -1);
    s.set("k0", 0);
    m.set("k0", 0);
    same(s, m);
    assert.equal(s.get("k1"), -1);
    assert.equal(s.get("k3"), undefined);
  });

  it("switches to a Map at the entry after its limit, with every entry in order", () => {
    const s = new SmallMap<number, number>();
    for (let i = 0; i <= SMALL_MAP_LIMIT; i++) s.set(i, i * 10);
    assert.equal(s.size, SMALL_MAP_LIMIT + 1);
    assert.deepEqual([...s.keys()], Array.from({ length: SMALL_MAP_LIMIT + 1 }, (_, i) => i));
    assert.equal(s.get(SMALL_MAP_LIMIT), SMALL_MAP_LIMIT * 10);
  });

  it("lets a loop delete the entry it is at and still visit every other one", () => {
    const s = new SmallMap<string, number>([["a", 1], ["b", 2], ["c", 3]]);
    const seen: string[] = [];
    for (const [k] of s) {
      seen.push(k);
      if (k !== "c") s.delete(k);
    }
    assert.deepEqual(seen, ["a", "b", "c"]);
    assert.deepEqual([...s], [["c", 3]]);
  });
});
