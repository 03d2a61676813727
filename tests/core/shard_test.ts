import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { LivenessTracker, sameMembers, ShardRing } from "../../src/core/shard.ts";

const keys = Array.from(
  { length: 3000 },
  (_, i) => `json-path/External|ns-${i % 37}|http://q-${i}.example/`,
);

function owners(ring: ShardRing): Map<string, string> {
  return new Map(keys.map((k) => [k, ring.owner(k)!]));
}

describe("ShardRing (rendezvous hashing)", () => {
  it("gives every key one owner, the same whatever order the members are listed in", () => {
    const a = owners(new ShardRing(["r-a", "r-b", "r-c"]));
    const b = owners(new ShardRing(["r-c", "r-a", "r-b", "r-a"]));
    assert.deepEqual([...a], [...b]);
    const ring = new ShardRing(["r-b", "r-a"]);
    assert.deepEqual(ring.members, ["r-a", "r-b"]);
    for (const k of keys.slice(0, 50)) {
      assert.equal(
        ["r-a", "r-b"].filter((m) => ring.owns(m, k)).length,
        1,
        `exactly one owner of ${k}`,
      );
    }
  });

  it("splits 3,000 keys about evenly among three members", () => {
    const counts = new Map<string, number>();
    for (const o of owners(new ShardRing(["r-a", "r-b", "r-c"])).values()) {
      counts.set(o, (counts.get(o) ?? 0) + 1);
    }
    assert.deepEqual([...counts.keys()].sort(), ["r-a", "r-b", "r-c"]);
    for (const [m, n] of counts) assert.ok(n > 900 && n < 1100, `${m} owns ${n} of 3000`);
  });

  it("moves only the keys of a member that leaves, and only keys to a member that joins", () => {
    const three = owners(new ShardRing(["r-a", "r-b", "r-c"]));
    const two = owners(new ShardRing(["r-a", "r-c"]));
    let moved = 0;
    for (const k of keys) {
      if (three.get(k) !== "r-b") assert.equal(two.get(k), three.get(k), `${k} kept its owner`);
      else moved++;
    }
    assert.ok(moved > 900 && moved < 1100, `${moved} keys moved`);
    const four = owners(new ShardRing(["r-a", "r-b", "r-c", "r-d"]));
    for (const k of keys) {
      if (four.get(k) !== "r-d") assert.equal(four.get(k), three.get(k), `${k} kept its owner`);
    }
  });

  it("has no owner without members", () => {
    const ring = new ShardRing([]);
    assert.equal(ring.owner("x"), null);
    assert.equal(ring.owns("r-a", "x"), false);
  });
});

describe("LivenessTracker", () => {
  const lease = (identity: string, renewTime: string) => ({
    identity,
    address: `https://10.0.0.${identity.length}:6443`,
    renewTime,
    leaseDurationSeconds: 15,
  });

  it("keeps a member live while its renew time changes within the lease duration, on our clock", () => {
    const T = Date.parse("2026-11-25T08:00:00Z");
    const t = new LivenessTracker();
    // b's clock is 10 s ahead of ours: tolerated (up to a lease duration)
    t.observe([lease("b", "2026-11-25T08:00:11.000000Z")], T + 1_000);
    assert.deepEqual(t.live(T + 15_999).map((m) => m.identity), ["b"]);
    t.observe([lease("b", "2026-11-25T08:00:11.000000Z")], T + 10_000);
    assert.deepEqual(t.live(T + 16_000), [], "unchanged for 15 s on our clock: gone");
    // a change counts when we see it, whatever the time written
    t.observe([lease("b", "2020-01-01T00:00:00.000000Z")], T + 17_000);
    assert.deepEqual(t.live(T + 31_999).map((m) => m.identity), ["b"]);
    assert.deepEqual(t.live(T + 32_000), []);
  });

  it("does not take a Lease seen for the first time and renewed long ago for a live member", () => {
    const T = Date.parse("2026-11-25T08:00:00Z");
    const t = new LivenessTracker();
    // renewed 40 s ago (a killed replica's), 25 s ago (within skew: live 5 s more), 1 s ago
    t.observe([
      lease("dead", "2026-11-25T07:59:20.000000Z"),
      lease("late", "2026-11-25T07:59:35.000000Z"),
      lease("fresh", "2026-11-25T07:59:59.000000Z"),
    ], T);
    assert.deepEqual(t.live(T).map((m) => m.identity), ["fresh", "late"]);
    assert.deepEqual(t.live(T + 5_000).map((m) => m.identity), ["fresh"]);
    // a renew time that does not parse counts from when we see it
    const u = new LivenessTracker();
    u.observe([lease("odd", "yesterday")], T);
    assert.deepEqual(u.live(T + 14_999).map((m) => m.identity), ["odd"]);
  });

  it("drops a member whose Lease is no longer listed, and sorts by identity", () => {
    const t = new LivenessTracker();
    t.observe([lease("c", "1"), lease("a", "1"), lease("bb", "1")], 0);
    assert.deepEqual(t.live(1).map((m) => m.identity), ["a", "bb", "c"]);
    assert.deepEqual(t.live(1)[1], { identity: "bb", address: "https://10.0.0.2:6443" });
    t.observe([lease("a", "2")], 2);
    assert.deepEqual(t.live(3).map((m) => m.identity), ["a"]);
  });

  it("compares member lists by identity and address", () => {
    const a = [{ identity: "a", address: "https://1" }];
    assert.equal(sameMembers(a, [{ identity: "a", address: "https://1" }]), true);
    assert.equal(sameMembers(a, [{ identity: "a", address: "https://2" }]), false);
    assert.equal(sameMembers(a, []), false);
  });
});
