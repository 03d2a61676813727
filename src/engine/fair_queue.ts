/**
 * A queue that hands its items out round-robin by group: the engine's collections waiting for
 * a slot under `--max-concurrent-collections`, grouped by namespace (issue 25's fair share).
 *
 * Why: with one FIFO, a namespace whose thousand collections fall due together puts them all
 * ahead of another namespace's one, which then waits for the thousand. Here each group with
 * items waiting gets one start per turn, in the order the groups began to wait: an item whose
 * group had nothing waiting is handed out after at most one item of each other waiting group.
 *
 * `push` and `shift` are O(1) and allocate nothing once the buffers have grown to the largest
 * backlog seen (a group's record is reused when its group empties).
 */

/** A FIFO in a circular buffer whose capacity doubles when full (never shrinks). */
class Ring<T> {
  #items: (T | undefined)[] = new Array(4);
  #head = 0;
  #length = 0;

  get length(): number {
    return this.#length;
  }

  push(item: T): void {
    const items = this.#items;
    if (this.#length === items.length) {
      const grown: (T | undefined)[] = new Array(items.length * 2);
      for (let i = 0; i < this.#length; i++) grown[i] = items[(this.#head + i) % items.length];
      this.#items = grown;
      this.#head = 0;
    }
    this.#items[(this.#head + this.#length) % this.#items.length] = item;
    this.#length++;
  }

  shift(): T | undefined {
    if (this.#length === 0) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head] = undefined; // no reference kept to what was handed out
    this.#head = (this.#head + 1) % this.#items.length;
    this.#length--;
    return item;
  }
}

interface Group<T> {
  name: string;
  items: Ring<T>;
}

/** Emptied groups kept for reuse, at most this many. */
const SPARE_GROUPS = 64;

/**
 * Items handed out one group at a time, in turn.
 *
 * @example
 * ```ts
 * const q = new FairQueue<string>();
 * q.push("a", "a1"); q.push("a", "a2"); q.push("b", "b1");
 * [q.shift(), q.shift(), q.shift()]; // ["a1", "b1", "a2"]
 * ```
 */
export class FairQueue<T> {
  /** Groups with items waiting, by name. */
  readonly #groups = new Map<string, Group<T>>();
  /** The same groups in turn order: the next item comes from the first. */
  readonly #turns = new Ring<Group<T>>();
  readonly #spare: Group<T>[] = [];
  #size = 0;

  /** Items waiting, over all groups. */
  get size(): number {
    return this.#size;
  }

  /** Add an item at the end of its group; a group that had none takes the last turn. */
  push(group: string, item: T): void {
    let g = this.#groups.get(group);
    if (g === undefined) {
      g = this.#spare.pop() ?? { name: group, items: new Ring<T>() };
      g.name = group;
      this.#groups.set(group, g);
      this.#turns.push(g);
    }
    g.items.push(item);
    this.#size++;
  }

  /** The first item of the group whose turn it is (that group goes last), or undefined. */
  shift(): T | undefined {
    const g = this.#turns.shift();
    if (g === undefined) return undefined;
    const item = g.items.shift() as T;
    this.#size--;
    if (g.items.length > 0) this.#turns.push(g);
    else {
      this.#groups.delete(g.name);
      if (this.#spare.length < SPARE_GROUPS) this.#spare.push(g);
    }
    return item;
  }
}
