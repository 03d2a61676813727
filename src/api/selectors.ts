/**
 * The `labelSelector` and `metricLabelSelector` query parameters of metric reads: read from
 * the query as Hono reads them, parsed once per distinct query, with their canonical text,
 * their `metav1.LabelSelector` form and a matcher.
 *
 * @module
 */
import {
  formatSelector,
  matchesSelector,
  parseSelector,
  type Selector,
} from "../core/kubernetes/label_selector.ts";
import type { LabelSelector } from "../core/types.ts";
import type { PlainResponse } from "../runtime/serve.ts";
import { statusPlain } from "./status.ts";

/** The request's metric selector as a `metav1.LabelSelector` (null when empty). */
function labelSelectorOf(sel: Selector): LabelSelector | null {
  if (sel.length === 0) return null;
  const matchLabels: Record<string, string> = {};
  const matchExpressions: NonNullable<LabelSelector["matchExpressions"]> = [];
  for (const r of sel) {
    switch (r.operator) {
      case "=":
      case "==":
        matchLabels[r.key] = r.values[0];
        break;
      case "in":
        matchExpressions.push({ key: r.key, operator: "In", values: [...r.values] });
        break;
      case "!=":
      case "notin":
        matchExpressions.push({ key: r.key, operator: "NotIn", values: [...r.values] });
        break;
      case "exists":
        matchExpressions.push({ key: r.key, operator: "Exists" });
        break;
      case "!":
        matchExpressions.push({ key: r.key, operator: "DoesNotExist" });
        break;
      default:
        // gt/lt have no LabelSelector form; the HPA never sends them
        break;
    }
  }
  return {
    ...(Object.keys(matchLabels).length ? { matchLabels } : {}),
    ...(matchExpressions.length ? { matchExpressions } : {}),
  };
}

/**
 * `matchesSelector(sel, labels)` as one function made once per selector: equality-only
 * selectors (what the HPA controller sends for pods) compare labels directly.
 */
function selectorMatcher(sel: Selector): (labels: Record<string, string>) => boolean {
  if (sel.length === 0) return () => true;
  const equality = sel.every((r) =>
    (r.operator === "=" || r.operator === "==" || r.operator === "in") && r.values.length === 1
  );
  if (!equality) return (labels) => matchesSelector(sel, labels);
  const keys = sel.map((r) => r.key);
  const values = sel.map((r) => r.values[0]);
  return (labels) => {
    for (let i = 0; i < keys.length; i++) {
      if (!Object.hasOwn(labels, keys[i]) || labels[keys[i]] !== values[i]) return false;
    }
    return true;
  };
}

/** The value of query parameter `name` as Hono's `c.req.query(name)` reads it (first one wins). */
export function queryParam(search: string, name: string): string | undefined {
  if (search.length <= 1) return undefined;
  for (const part of search.slice(1).split("&")) {
    const eq = part.indexOf("=");
    const key = decodeQuery(eq < 0 ? part : part.slice(0, eq));
    if (key === name) return eq < 0 ? "" : decodeQuery(part.slice(eq + 1));
  }
  return undefined;
}

function decodeQuery(s: string): string {
  if (!/[%+]/.test(s)) return s;
  const spaced = s.replace(/\+/g, " ");
  try {
    return decodeURIComponent(spaced);
  } catch {
    // keep what does not decode, as Hono does
    return spaced.replace(/(?:%[0-9A-Fa-f]{2})+/g, (m) => {
      try {
        return decodeURIComponent(m);
      } catch {
        return m;
      }
    });
  }
}

/**
 * A parsed selector parameter: the requirements and their canonical text, and (made at first
 * use, as most reads never need them) the `metav1.LabelSelector` form and a matcher.
 */
export class OkSelector {
  #labelSelector: LabelSelector | null | undefined;
  #matches: ((labels: Record<string, string>) => boolean) | undefined;
  constructor(readonly sel: Selector, readonly canonical: string) {}
  /** The selector as a `metav1.LabelSelector` (null when empty). */
  get labelSelector(): LabelSelector | null {
    if (this.#labelSelector === undefined) this.#labelSelector = labelSelectorOf(this.sel);
    return this.#labelSelector;
  }
  /** Whether labels match the selector. */
  get matches(): (labels: Record<string, string>) => boolean {
    return this.#matches ??= selectorMatcher(this.sel);
  }
}

/** A parsed selector parameter, or the error text of a bad one. */
export type ParsedSelector = OkSelector | { error: string };

/** Distinct queries remembered before the cache starts over. */
const SELECTOR_CACHE_LIMIT = 8192;

/**
 * Reads and parses a selector parameter of a query once per distinct query (the HPA
 * controller repeats its queries every sync period).
 */
export function selectorCache(): (search: string, name: string) => ParsedSelector {
  // parameter name -> query string -> parsed (no key string built per read)
  const byName = new Map<string, Map<string, ParsedSelector>>();
  let size = 0;
  return (search, name) => {
    let cache = byName.get(name);
    if (cache === undefined) byName.set(name, cache = new Map());
    let hit = cache.get(search);
    if (hit === undefined) {
      const raw = queryParam(search, name) ?? "";
      try {
        const sel = parseSelector(raw);
        hit = new OkSelector(sel, formatSelector(sel));
      } catch (err) {
        hit = { error: (err as Error).message };
      }
      if (++size > SELECTOR_CACHE_LIMIT) {
        for (const c of byName.values()) c.clear();
        size = 1;
      }
      cache.set(search, hit);
    }
    return hit;
  };
}

/** A cache of parsed selector parameters (see {@linkcode selectorCache}). */
export type SelectorCache = ReturnType<typeof selectorCache>;

/** The selector parameter `name` of `search`, or the 400 answer of a bad one. */
export function parseParam(
  selectors: SelectorCache,
  search: string,
  name: string,
): OkSelector | { error: PlainResponse } {
  const parsed = selectors(search, name);
  if ("error" in parsed) {
    return { error: statusPlain("BadRequest", `invalid ${name}: ${parsed.error}`) };
  }
  return parsed;
}
