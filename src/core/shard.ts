/**
 * Sharding the collection across replicas (issue 29), the decisions without I/O: which live
 * replica owns a collection (rendezvous hashing of its query key), and which replicas are live
 * from what their Leases showed over time.
 *
 * Rendezvous (highest random weight) hashing: every replica scores every key with a hash of
 * the pair and the highest score owns it. All replicas compute the same owner from the same
 * member list, without coordination; when a member joins or leaves, only the keys it wins or
 * held move (about 1/n of them), the rest keep their owner.
 *
 * Liveness follows client-go's leader election: a member is live while its Lease record (holder
 * and renew time) has changed within the lease duration *as measured on our own clock* since we
 * first saw that record, so clock skew between replicas does not matter. One exception, for a
 * replica that starts while a killed one's Lease is still listed: a record seen for the first
 * time counts as changed no later than its renew time plus one lease duration (skew up to a
 * lease duration is tolerated), so a Lease last renewed long ago is not live for a lease
 * duration more, with nobody collecting its share.
 *
 * @module
 */
import { fnv1a } from "./hash.ts";

/** A replica as the others see it. */
export interface ShardMember {
  /** Unique among the live replicas (the pod name and a random suffix). */
  identity: string;
  /** Where peers send it their new values: `https://<pod IP>:<secure port>`. */
  address: string;
}

/**
 * A push to the peers is split into bodies of at most this many bytes; one record larger than
 * that travels alone.
 */
export const SHARD_PUSH_SPLIT_BYTES = 1024 * 1024;

/**
 * The largest push body a replica reads (`POST /shard/v1/samples`): a split body, or one record
 * alone (about 45,000 pods' values of one Pods metric at ~90 bytes a sample). A record over it
 * is not pushed.
 */
export const MAX_SHARD_BATCH_BYTES = 4 * 1024 * 1024;

/**
 * The bodies of one push: the records (each already JSON) gathered in order into batches of
 * at most `split` bytes, a record larger than that alone; records whose batch alone would be
 * over `max` bytes are left out and returned apart.
 *
 * @example
 * ```ts
 * shardBatchBodies("replica-a", ['{"k":"a","at":1,"s":[]}']).bodies;
 * // [{ text: '{"v":1,"from":"replica-a","records":[{"k":"a","at":1,"s":[]}]}', records: 1 }]
 * ```
 */
export function shardBatchBodies(
  from: string,
  records: readonly string[],
  limits: { split?: number; max?: number } = {},
): { bodies: { text: string; records: number }[]; tooLarge: number[] } {
  const split = limits.split ?? SHARD_PUSH_SPLIT_BYTES;
  const max = limits.max ?? MAX_SHARD_BATCH_BYTES;
  const head = `{"v":1,"from":${JSON.stringify(from)},"records":[`;
  // the envelope's bytes: the head, "]}", and a comma a record after the first
  const envelope = utf8Length(head) + 2;
  const bodies: { text: string; records: number }[] = [];
  const tooLarge: number[] = [];
  let batch: string[] = [];
  let size = envelope;
  const flush = (): void => {
    if (batch.length > 0) {
      bodies.push({ text: `${head}${batch.join(",")}]}`, records: batch.length });
    }
    batch = [];
    size = envelope;
  };
  records.forEach((record, i) => {
    const bytes = utf8Length(record);
    if (envelope + bytes > max) {
      tooLarge.push(i);
      return;
    }
    if (batch.length > 0 && size + bytes + 1 > split) flush();
    size += bytes + (batch.length > 0 ? 1 : 0);
    batch.push(record);
  });
  flush();
  return { bodies, tooLarge };
}

/** Bytes of `text` in UTF-8. */
function utf8Length(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 2; // a surrogate pair: 4 bytes for 2 code units
      i++;
    } else n += 2;
  }
  return n;
}

/** MurmurHash3's 32-bit finalizer: every input bit flips about half of the output bits. */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The score of `key` at a member whose identity hashes to `memberHash`. */
function score(keyHash: number, memberHash: number): number {
  return mix(keyHash ^ mix(memberHash + 0x9e3779b9));
}

/**
 * Who owns which key, for one member list. Build one per change of membership; `owner` is
 * O(members) per key.
 *
 * @example
 * ```ts
 * const ring = new ShardRing(["a", "b", "c"]);
 * ring.owner("json-path/Pods|ns|Deployment/web|..."); // "b", on every replica
 * ring.owns("a", "json-path/Pods|ns|Deployment/web|..."); // false
 * ```
 */
export class ShardRing {
  readonly members: readonly string[];
  readonly #hashes: number[];

  constructor(members: Iterable<string>) {
    this.members = [...new Set(members)].sort();
    this.#hashes = this.members.map((m) => fnv1a(m));
  }

  /** The member that owns `key`, or null with no members. Ties go to the first identity. */
  owner(key: string): string | null {
    const k = fnv1a(key);
    let best = -1;
    let owner: string | null = null;
    for (let i = 0; i < this.members.length; i++) {
      const s = score(k, this.#hashes[i]);
      if (s > best) {
        best = s;
        owner = this.members[i];
      }
    }
    return owner;
  }

  /** Whether `member` owns `key` (with no members, nobody does). */
  owns(member: string, key: string): boolean {
    return this.owner(key) === member;
  }
}

/** A member's Lease as membership reads it. */
export interface MemberLease {
  identity: string;
  address: string;
  /** The Lease's spec.renewTime as written (compared as text, never parsed). */
  renewTime: string;
  leaseDurationSeconds: number;
}

/**
 * The live members from the Leases listed over time, on the local clock.
 *
 * @example
 * ```ts
 * const live = new LivenessTracker();
 * live.observe([{ identity: "b", address: "https://10.0.0.2:6443", renewTime: "t1", leaseDurationSeconds: 15 }], 0);
 * live.live(10_000); // [b]
 * live.live(15_000); // [] unless a later observe saw a new renewTime
 * ```
 */
export class LivenessTracker {
  #seen = new Map<string, { lease: MemberLease; changedAt: number }>();

  /** Records one listing at local time `now`; members absent from it are gone. */
  observe(leases: readonly MemberLease[], now: number): void {
    const next = new Map<string, { lease: MemberLease; changedAt: number }>();
    for (const lease of leases) {
      const prev = this.#seen.get(lease.identity);
      const same = prev !== undefined && prev.lease.renewTime === lease.renewTime;
      let changedAt = now;
      if (same) changedAt = prev.changedAt;
      else if (prev === undefined) {
        const renewed = Date.parse(lease.renewTime);
        const durationMs = Math.max(1, lease.leaseDurationSeconds) * 1000;
        if (Number.isFinite(renewed)) changedAt = Math.min(now, renewed + durationMs);
      }
      next.set(lease.identity, { lease, changedAt });
    }
    this.#seen = next;
  }

  /** The members live at local time `now`, sorted by identity. */
  live(now: number): ShardMember[] {
    const out: ShardMember[] = [];
    for (const { lease, changedAt } of this.#seen.values()) {
      if (now - changedAt < Math.max(1, lease.leaseDurationSeconds) * 1000) {
        out.push({ identity: lease.identity, address: lease.address });
      }
    }
    return out.sort((a, b) => (a.identity < b.identity ? -1 : a.identity > b.identity ? 1 : 0));
  }
}

/** Whether two member lists are the same (identities and addresses, in order). */
export function sameMembers(a: readonly ShardMember[], b: readonly ShardMember[]): boolean {
  return a.length === b.length &&
    a.every((m, i) => m.identity === b[i].identity && m.address === b[i].address);
}
