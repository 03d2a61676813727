/**
 * Bytes gathered from a stream as a list of pieces, joined once at the end. Pieces of 1 KiB
 * and more are kept as they came (the common case: a runtime hands out 16-64 KiB); smaller
 * ones are copied into blocks of 16 KiB, so that a body sent in many tiny pieces (a sender's
 * one-byte chunks) costs about its bytes, not an object per piece. (A single buffer grown by
 * doubling held a body near its cap at twice its size, and under Deno that memory stayed.)
 */

/** Pieces smaller than this are copied into a block. */
const SMALL_PIECE = 1024;
/** The size of a block of small pieces. */
const BLOCK = 16 * 1024;

/**
 * A list of byte pieces.
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
  #pieces: Uint8Array[] = [];
  /** The block small pieces are copied into, and how much of it is used. */
  #block: Uint8Array | null = null;
  #blockLen = 0;
  #size = 0;

  /** Bytes appended so far. */
  get size(): number {
    return this.#size;
  }

  /** Adds `chunk` after the bytes held (kept as it is, or copied when small). */
  append(chunk: Uint8Array): void {
    const n = chunk.byteLength;
    if (n === 0) return;
    this.#size += n;
    if (n >= SMALL_PIECE) {
      this.#closeBlock();
      this.#pieces.push(chunk);
      return;
    }
    if (this.#block !== null && this.#blockLen + n > BLOCK) this.#closeBlock();
    this.#block ??= new Uint8Array(BLOCK);
    this.#block.set(chunk, this.#blockLen);
    this.#blockLen += n;
  }

  /** The bytes held, joined (the one piece itself when there is one). */
  bytes(): Uint8Array {
    this.#closeBlock();
    if (this.#pieces.length === 1) return this.#pieces[0];
    const all = new Uint8Array(this.#size);
    let at = 0;
    for (const p of this.#pieces) {
      all.set(p, at);
      at += p.byteLength;
    }
    this.#pieces = [all];
    return all;
  }

  /** Ends the block of small pieces: it joins the list (only its used part is kept). */
  #closeBlock(): void {
    if (this.#block === null) return;
    this.#pieces.push(this.#block.slice(0, this.#blockLen));
    this.#block = null;
    this.#blockLen = 0;
  }
}
