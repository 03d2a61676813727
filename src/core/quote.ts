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

/** The longest message {@linkcode shortenValues} returns, before its length. */
const LONGEST = 2_000;

/** A quoted value that {@linkcode shortenValues} shortens (after a space or a parenthesis). */
const LONG_QUOTED = new RegExp(`(^|[\\s(])"([^"]{${WHOLE + 1},})"(?=$|[\\s:;,)])`, "g");
/** An unquoted run (a URL, a query without spaces) that {@linkcode shortenValues} shortens. */
const LONG_RUN = /[^\s"]{201,}/g;

/**
 * A message with its long values shortened as {@linkcode quote} does: every quoted value of
 * more than 64 characters, and every run of over 200 characters without a space (a URL); what
 * is still longer than 2,000 characters is cut there.
 * Messages built from HPA authors' values pass through it before they reach a 404 answer, an
 * event, a log line or `plan`.
 *
 * @example
 * ```ts
 * shortenValues(`invalid json-key "$.${"a".repeat(5000)}" for metric m`);
 * // `invalid json-key "$.aaaa(38 a)..." (5002 characters) for metric m`
 * ```
 */
export function shortenValues(message: string): string {
  if (message.length <= WHOLE) return message;
  const out = message
    .replace(LONG_QUOTED, (_, before: string, inner: string) => before + quote(inner))
    .replace(LONG_RUN, (run) => `${run.slice(0, KEPT)}... (${run.length} characters)`);
  // a long value with quotes and spaces inside escapes both rules: the message is cut
  return out.length <= LONGEST ? out : `${out.slice(0, LONGEST)}... (${out.length} characters)`;
}
