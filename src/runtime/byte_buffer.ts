/**
 * Bytes gathered from a stream into one buffer grown by doubling: a body that arrives in many
 * small pieces (a sender's one-byte chunks) costs its bytes and at most as many again, not an
 * object per piece, and it is copied about twice in all, not once per piece.
 */

/**
 * A growing byte buffer.
 *
 * @example
 * ```ts
 * const bytes = new ByteBuffer();
 * bytes.append(new Uint8Array([1, 2]));
 * bytes.append(new Uint8Array([3]));
 * bytes.bytes(); // Uint8Array [1, 2, 3]
 * ```
 */
export class ByteBuffer {
  #buf: Uint8Array;
  #size = 0;
  readonly #limit: number;

  /**
   * A buffer that first holds `initial` bytes (none: the first append's size), grown as needed
   * but never past `limit` (the caller's cap: a body near it is not held in twice its size).
   */
  constructor(initial = 0, limit = Infinity) {
    this.#buf = new Uint8Array(initial);
    this.#limit = limit;
  }

  /** Bytes appended so far. */
  get size(): number {
    return this.#size;
  }

  /** Copies `chunk` after the bytes held. */
  append(chunk: Uint8Array): void {
    const need = this.#size + chunk.byteLength;
    if (need > this.#buf.byteLength) {
      const grown = new Uint8Array(
        Math.max(need, Math.min(this.#limit, 2 * this.#buf.byteLength)),
      );
      grown.set(this.#buf.subarray(0, this.#size));
      this.#buf = grown;
    }
    this.#buf.set(chunk, this.#size);
    this.#size = need;
  }

  /** The bytes held (a view: valid until the next append). */
  bytes(): Uint8Array {
    return this.#buf.subarray(0, this.#size);
  }
}
