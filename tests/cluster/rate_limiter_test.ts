import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { TokenBucket } from "../../src/cluster/rate_limiter.ts";

describe("TokenBucket", () => {
  it("lets a burst through and then spaces requests by 1/qps", async () => {
    let now = 0;
    const slept: number[] = [];
    const bucket = new TokenBucket({
      qps: 10,
      burst: 2,
      now: () => now,
      sleep: async (ms) => void slept.push(ms),
    });
    const waits = [];
    for (let i = 0; i < 4; i++) waits.push(await bucket.take());
    assert.deepEqual(waits, [0, 0, 100, 200]);
    now = 1000;
    assert.equal(await bucket.take(), 0);
    assert.deepEqual(slept, [100, 200]);
  });

  it("does not limit with qps 0", async () => {
    const bucket = new TokenBucket({ qps: 0, burst: 1 });
    for (let i = 0; i < 3; i++) assert.equal(await bucket.take(), 0);
  });
});
