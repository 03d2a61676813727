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
