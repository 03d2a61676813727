/**
 * String maps whose keys come from data (annotations, labels) as dictionary objects.
 *
 * V8 (Node, Deno) gives a plain object a hidden class per sequence of keys added to it, and
 * remembers the step from `{}` to each first key, up to 1,536 of them. Annotation keys name the
 * metric (`metric-config.object.<metric>.scaling-schedule/interval`), so with thousands of HPAs
 * the objects that `JSON.parse`, js-yaml or zod build for annotations fill that table with keys
 * nobody else uses, for as long as those objects live. Every other object that starts from `{}`
 * and adds a key the table misses then gets a hidden class of its own: Node's own
 * `process.nextTick` among them. Measured with Node 20 and the 2,000 HPAs of the bench:
 * 100,000 `process.nextTick` calls took 250-300 ms instead of 8 ms, and the adapter served
 * 10-20k requests/s instead of 45-55k. A null-prototype object keeps its keys in a hash table
 * and takes no place in that table; the maps that were copied go away with the next GC.
 *
 * JavaScriptCore (Bun, the binary) gives a null-prototype object a Structure per sequence of
 * keys too, and keeps each step of the sequence alive while the object lives: an HPA whose first
 * annotation names its metric got a chain of Structures of its own, one per key (~4 per HPA of
 * the bench, ~650 KB live for 2,000 HPAs). Keys are therefore copied in sorted order: maps that
 * share keys (`metric-config.external.queue-length.json-path/...`) share the steps of those keys,
 * and the API server sends annotations and labels sorted anyway (Go marshals maps so).
 *
 * @module
 */

/**
 * A null-prototype copy of `map` (the same own enumerable keys and values, keys in sorted
 * order), or `map` itself when it is already one. Not for maps with `__proto__` semantics: keys
 * are plain data.
 *
 * @example
 * ```ts
 * const a = dictionaryOf({ "metric-config.object.peak.scaling-schedule/interval": "30s" });
 * Object.getPrototypeOf(a); // null
 * a["metric-config.object.peak.scaling-schedule/interval"]; // "30s"
 * ```
 */
export function dictionaryOf<V>(map: Readonly<Record<string, V>>): Record<string, V> {
  if (Object.getPrototypeOf(map) === null) return map as Record<string, V>;
  const out = Object.create(null) as Record<string, V>;
  // sorted: see the module's note on JavaScriptCore
  for (const key of Object.keys(map).sort()) out[key] = map[key];
  return out;
}

/**
 * Replace `metadata.annotations` and `metadata.labels` of a Kubernetes object, in place, by
 * {@linkcode dictionaryOf} copies; other values are left as they are. Returns `obj`.
 *
 * @example
 * ```ts
 * const hpa = settleStringMaps(JSON.parse(text));
 * ```
 */
export function settleStringMaps<T>(obj: T): T {
  const metadata = (obj as { metadata?: unknown } | null)?.metadata;
  if (typeof metadata !== "object" || metadata === null) return obj;
  const m = metadata as { annotations?: unknown; labels?: unknown };
  if (isMap(m.annotations)) m.annotations = dictionaryOf(m.annotations);
  if (isMap(m.labels)) m.labels = dictionaryOf(m.labels);
  return obj;
}

function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
