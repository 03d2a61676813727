/**
 * JSON merge patches (RFC 7386), the adapter's way of writing status, scale and event counts.
 *
 * @module
 */

/** The content type of a JSON merge patch (RFC 7386). */
export const MERGE_PATCH = "application/merge-patch+json";

/**
 * A JSON merge patch value that turns `from` into `to`: `to` itself, with null for every key of
 * `from` that `to` lacks (recursively in objects both have), so that the result replaces.
 */
export function replacingMergePatch(from: unknown, to: unknown): unknown {
  const isObj = (v: unknown): v is Record<string, unknown> =>
    typeof v === "object" && v !== null && !Array.isArray(v);
  if (!isObj(to) || !isObj(from)) return to ?? null;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(from)) if (!(k in to)) out[k] = null;
  for (const [k, v] of Object.entries(to)) out[k] = isObj(v) ? replacingMergePatch(from[k], v) : v;
  return out;
}
