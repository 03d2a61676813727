/**
 * FNV-1a over a string's UTF-16 code units: the adapter's one non-cryptographic hash (query
 * phases, shard ownership, HPA change detection). Deterministic across runtimes and restarts.
 *
 * @module
 */

/** FNV-1a's 32-bit offset basis. */
export const FNV_OFFSET = 0x811c9dc5;
/** FNV-1a's 32-bit prime. */
export const FNV_PRIME = 0x01000193;

/**
 * FNV-1a, 32 bits, of `text`; another `seed` and `prime` give an independent second hash.
 *
 * @example
 * ```ts
 * fnv1a("a"); // 0xe40c292c
 * ```
 */
export function fnv1a(text: string, seed: number = FNV_OFFSET, prime: number = FNV_PRIME): number {
  let h = seed;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), prime);
  return h >>> 0;
}
