/**
 * Values in messages: annotation values are chosen by HPA authors and may be kilobytes long,
 * while messages go to 404 answers, events, logs and `plan`. A long value is shortened to its
 * start, with its length.
 */

/** Values up to this many characters are quoted whole. */
const WHOLE = 64;
/** How much of a longer value is kept. */
const KEPT = 40;

/**
 * A value quoted for a message: `"30s"`, or for a long one its first 40 characters and its
 * length: `"1000000000..." (402 characters)`.
 *
 * @example
 * ```ts
 * quote("30s"); // "\"30s\""
 * quote("x".repeat(100)); // "\"xxxxxxxx(40 x)...\" (100 characters)"
 * ```
 */
export function quote(value: string): string {
  if (value.length <= WHOLE) return `"${value}"`;
  return `"${value.slice(0, KEPT)}..." (${value.length} characters)`;
}
