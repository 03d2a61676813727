import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { replacingMergePatch } from "../../src/cluster/merge_patch.ts";

describe("replacingMergePatch", () => {
  const cases: Array<[string, unknown, unknown, unknown]> = [
    ["no old status", undefined, { a: 1 }, { a: 1 }],
    ["removed keys become null", { a: 1, b: 2 }, { a: 3 }, { a: 3, b: null }],
    ["nested objects", { o: { x: 1, y: 2 } }, { o: { x: 1 } }, { o: { x: 1, y: null } }],
    ["arrays replace", { l: [1, 2] }, { l: [3] }, { l: [3] }],
    ["null status", { a: 1 }, null, null],
  ];
  for (const [name, from, to, want] of cases) {
    it(name, () => assert.deepEqual(replacingMergePatch(from, to), want));
  }
});
