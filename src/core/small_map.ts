/**
 * A map for the many maps here that hold one or two entries (the plans of one HPA, the plans
 * sharing one query, the values at one place): its entries in one array while there are at
 * most {@linkcode SMALL_MAP_LIMIT}, in a `Map` from the next one on.
 *
 * Why: a `Map` costs ~300 bytes with one entry under Bun (JavaScriptCore) and ~340 under Node,
 * most of it the hash table it starts with; the serving benchmark's 2,000 HPAs kept ~10,000 of
 * them. This one costs ~100 with one entry. Lookups in a short array are as fast as hashing.
 *
 * It behaves as a `Map` for what the adapter uses: insertion order (a key set again keeps its
 * place), SameValueZero keys, `size`, `get`, `has`, `set`, `delete`, `clear` and iteration.
 * One difference: while small, iteration runs over the entries as they were when it began, so
 * an entry added during a loop is not visited (deleting during a loop is safe either way).
 *
 * @module
 */

/** Entries kept in the array before the map switches to a `Map`. */
export const SMALL_MAP_LIMIT = 8;

function sameValueZero(a: unknown, b: unknown): boolean {
  // deno-lint-ignore no-self-compare
  return a === b || (a !== a && b !== b);
}

/**
 * A `Map` that is small while it holds few entries.
 *
 * @example
 * ```ts
 * const m = new SmallMap<string, number>([["a", 1]]);
 * m.set("b", 2);
 * [...m.keys()]; // ["a", "b"]
 * ```
 */
export class SmallMap<K, V> implements Iterable<[K, V]> {
  /** Keys and values interleaved (`[k0, v0, k1, v1, ...]`), or the `Map` once grown. */
  #data: unknown[] | Map<K, V> = [];

  /** A map of `entries` (in order; a repeated key keeps its first place, as with `Map`). */
  constructor(entries?: Iterable<readonly [K, V]>) {
    if (entries) { for (const [k, v] of entries) this.set(k, v); }
  }

  get size(): number {
    const d = this.#data;
    return Array.isArray(d) ? d.length >> 1 : d.size;
  }

  get(key: K): V | undefined {
    const d = this.#data;
    if (!Array.isArray(d)) return d.get(key);
    const i = indexOf(d, key);
    return i < 0 ? undefined : d[i + 1] as V;
  }

  has(key: K): boolean {
    const d = this.#data;
    return Array.isArray(d) ? indexOf(d, key) >= 0 : d.has(key);
  }

  set(key: K, value: V): this {
    const d = this.#data;
    if (!Array.isArray(d)) {
      d.set(key, value);
      return this;
    }
    const i = indexOf(d, key);
    if (i >= 0) d[i + 1] = value;
    else if (d.length < SMALL_MAP_LIMIT * 2) d.push(key, value);
    else {
      const map = new Map<K, V>();
      for (let j = 0; j < d.length; j += 2) map.set(d[j] as K, d[j + 1] as V);
      map.set(key, value);
      this.#data = map;
    }
    return this;
  }

  delete(key: K): boolean {
    const d = this.#data;
    if (!Array.isArray(d)) return d.delete(key);
    const i = indexOf(d, key);
    if (i < 0) return false;
    d.splice(i, 2);
    return true;
  }

  clear(): void {
    this.#data = [];
  }

  entries(): IterableIterator<[K, V]> {
    const d = this.#data;
    return Array.isArray(d) ? pairsOf(d) as IterableIterator<[K, V]> : d.entries();
  }

  keys(): IterableIterator<K> {
    const d = this.#data;
    return Array.isArray(d) ? everyOther(d, 0) as IterableIterator<K> : d.keys();
  }

  values(): IterableIterator<V> {
    const d = this.#data;
    return Array.isArray(d) ? everyOther(d, 1) as IterableIterator<V> : d.values();
  }

  [Symbol.iterator](): IterableIterator<[K, V]> {
    return this.entries();
  }
}

function indexOf(d: unknown[], key: unknown): number {
  for (let i = 0; i < d.length; i += 2) if (sameValueZero(d[i], key)) return i;
  return -1;
}

/** The entries of a small map's array as they are now (a copy: the loop may delete). */
function* pairsOf(d: unknown[]): IterableIterator<[unknown, unknown]> {
  const copy = d.slice();
  for (let i = 0; i < copy.length; i += 2) yield [copy[i], copy[i + 1]];
}

/** The keys (`from` 0) or values (1) of a small map's array as they are now. */
function* everyOther(d: unknown[], from: number): IterableIterator<unknown> {
  const copy = d.slice();
  for (let i = from; i < copy.length; i += 2) yield copy[i];
}
