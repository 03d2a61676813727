/** How the engine words an error in logs, events and the store. */
import { shortenValues } from "../core/quote.ts";

/**
 * An error's message, with long values (an HPA author's) shortened.
 *
 * @example
 * ```ts
 * errorText(new Error("invalid interval \"5x\" for metric queue-depth")); // the same text
 * ```
 */
export function errorText(e: unknown): string {
  return shortenValues(e instanceof Error ? e.message : String(e));
}
