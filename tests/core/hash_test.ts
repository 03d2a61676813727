import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { fnv1a } from "../../src/core/hash.ts";

describe("fnv1a", () => {
  it("gives FNV-1a's published 32-bit values", () => {
    // the test vectors of the FNV reference (draft-eastlake-fnv)
    assert.equal(fnv1a(""), 0x811c9dc5);
    assert.equal(fnv1a("a"), 0xe40c292c);
    assert.equal(fnv1a("foobar"), 0xbf9cf968);
  });

  it("gives an independent hash for another seed and prime", () => {
    assert.notEqual(fnv1a("foobar", 0x01000193 ^ 6, 0x5bd1e995), fnv1a("foobar"));
    assert.equal(fnv1a("", 7, 0x5bd1e995), 7);
    assert.equal(fnv1a("a", 0, 3), (97 * 3) >>> 0);
  });
});
