import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ByteBuffer } from "../../src/runtime/byte_buffer.ts";

describe("ByteBuffer", () => {
  it("holds what was appended, in order, small pieces and large ones mixed", () => {
    const b = new ByteBuffer();
    const expected: number[] = [];
    for (let i = 0; i < 1000; i++) {
      const chunk = Uint8Array.from(
        { length: i % 10 === 0 ? 3000 : i % 7 },
        (_, j) => (i + j) % 256,
      );
      b.append(chunk);
      expected.push(...chunk);
    }
    assert.equal(b.size, expected.length);
    assert.deepEqual(b.bytes(), Uint8Array.from(expected));
    assert.deepEqual(b.bytes(), Uint8Array.from(expected));
  });

  it("copies a million one-byte pieces into 16 KiB blocks, joined once", () => {
    const b = new ByteBuffer();
    const one = new Uint8Array([7]);
    for (let i = 0; i < 1_000_000; i++) b.append(one);
    const held = b.bytes();
    assert.deepEqual([held.byteLength, held.buffer.byteLength], [1_000_000, 1_000_000]);
    assert.equal(held[999_999], 7);
  });

  it("hands back a single large piece as it came, without a copy", () => {
    const b = new ByteBuffer();
    const piece = new Uint8Array(4096).fill(1);
    b.append(piece);
    assert.equal(b.bytes(), piece);
  });
});
