import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  LivenessTracker,
  MAX_SHARD_BATCH_BYTES,
  sameMembers,
  SHARD_PUSH_SPLIT_BYTES,
  shardBatchBodies,
  ShardRing,
} from "../../src/core/shard.ts";

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

describe("shardBatchBodies", () => {
  const record = (k: string, bytes: number): string =>
    JSON.stringify({ k, at: 1, e: "x".repeat(bytes - JSON.stringify({ k, at: 1, e: "" }).length) });

  it("gathers records in order into bodies of at most the split size, each valid JSON", () => {
    const records = Array.from({ length: 10 }, (_, i) => record(`k${i}`, 30));
    const { bodies, tooLarge } = shardBatchBodies("a", records, { split: 100, max: 1000 });
    assert.deepEqual(tooLarge, []);
    // the envelope {"v":1,"from":"a","records":[]} is 31 bytes: two 30-byte records and a comma
    assert.deepEqual(bodies.map((b) => [b.records, b.text.length]), [
      [2, 92],
      [2, 92],
      [2, 92],
      [2, 92],
      [2, 92],
    ]);
    const keys = bodies.flatMap((b) => JSON.parse(b.text).records.map((r: { k: string }) => r.k));
    assert.deepEqual(keys, records.map((_, i) => `k${i}`));
    assert.deepEqual(JSON.parse(bodies[0].text).from, "a");
  });

  it("sends a record larger than the split alone, and leaves out one over the cap", () => {
    const records = [record("a", 40), record("big", 150), record("b", 40), record("huge", 990)];
    const { bodies, tooLarge } = shardBatchBodies("r", records, { split: 100, max: 1000 });
    assert.deepEqual(bodies.map((b) => JSON.parse(b.text).records.map((r: { k: string }) => r.k)), [
      ["a"],
      ["big"],
      ["b"],
    ]);
    assert.deepEqual(tooLarge, [3]);
    assert.ok(bodies.every((b) => new TextEncoder().encode(b.text).length <= 1000));
  });

  it("counts the bytes of a body in UTF-8", () => {
    // 20 two-byte characters: 60 characters are 80 bytes, so the two records do not fit in 120
    const { bodies } = shardBatchBodies("a", [record("ü".repeat(20), 60), record("b", 25)], {
      split: 120,
    });
    assert.deepEqual(bodies.map((b) => b.records), [1, 1]);
  });

  it("splits the join push of 10,000 Pods plans of 50 pods into bodies under the cap", () => {
    // a Pods plan's record as the engine writes it: 50 samples of a pod name, value and time
    const samples = Array.from({ length: 50 }, (_, i) => ({
      objectName: `shop-7d9f8b6c5d-${String(i).padStart(5, "x")}`,
      value: 1234.567,
      timestamp: 1_764_390_000_000,
      windowSeconds: 60,
    }));
    const records = Array.from(
      { length: 10_000 },
      (_, i) =>
        JSON.stringify({
          k: `ns-${i % 100}/hpa-${i}#0/Pods/requests-per-second`,
          at: 1,
          s: samples,
        }),
    );
    const { bodies, tooLarge } = shardBatchBodies("replica-0", records);
    assert.deepEqual(tooLarge, []);
    const sizes = bodies.map((b) => b.text.length);
    assert.ok(Math.max(...sizes) <= SHARD_PUSH_SPLIT_BYTES, `largest ${Math.max(...sizes)}`);
    assert.ok(SHARD_PUSH_SPLIT_BYTES < MAX_SHARD_BATCH_BYTES);
    assert.equal(bodies.reduce((n, b) => n + b.records, 0), 10_000);
    // 5,108 bytes a record: 205 a body, 49 bodies where one body of 51.1 MB went before
    assert.equal(records[0].length, 5_108);
    assert.deepEqual([bodies.length, bodies[0].records], [49, 205]);
  });
});
