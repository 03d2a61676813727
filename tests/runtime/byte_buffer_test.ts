import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ByteBuffer } from "../../src/runtime/byte_buffer.ts";

describe("ByteBuffer", () => {
  it("holds what was appended, in order, across growths", () => {
    const b = new ByteBuffer(2);
    const expected: number[] = [];
    for (let i = 0; i < 1000; i++) {
      const chunk = Uint8Array.from({ length: i % 7 }, (_, j) => (i + j) % 256);
      b.append(chunk);
      expected.push(...chunk);
    }
    assert.equal(b.size, expected.length);
    assert.deepEqual(b.bytes(), Uint8Array.from(expected));
  });

  it("grows by doubling: a million one-byte appends hold at most twice their bytes", () => {
    const b = new ByteBuffer(16);
    const one = new Uint8Array([7]);
    for (let i = 0; i < 1_000_000; i++) b.append(one);
    const held = b.bytes();
    assert.equal(held.byteLength, 1_000_000);
    // the buffer behind the view: 16 doubled up to 2^24 = 16,777,216 / 16 ... the first power of
    // two times 16 at or over a million
    assert.equal(held.buffer.byteLength, 16 * 2 ** 16);
    assert.equal(held[999_999], 7);
  });

  it("takes a chunk larger than twice what it holds in one growth", () => {
    const b = new ByteBuffer(4);
    b.append(new Uint8Array(100).fill(1));
    assert.deepEqual([b.size, b.bytes().buffer.byteLength], [100, 100]);
  });
});

describe("ByteBuffer with a limit", () => {
  it("grows to the limit at most, not to twice what it holds", () => {
    const b = new ByteBuffer(0, 1000);
    for (let i = 0; i < 10; i++) b.append(new Uint8Array(100));
    assert.deepEqual([b.size, b.bytes().buffer.byteLength], [1000, 1000]);
  });
});
