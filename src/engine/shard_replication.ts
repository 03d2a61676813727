/**
 * Every replica serves every value (`--shard-collection`, issue 29): what a replica writes to
 * its store for a plan (a collection's samples, a failure, a formula's or a fallback's value)
 * is also pushed to its live peers, which write it to theirs. Reads stay local on every
 * replica, owned value or not, so the HPA controller's read latency is the same as without
 * sharding; the cost is one POST per peer per 500 ms while values change, its body serialized
 * once for all peers.
 *
 * Why push rather than forwarding reads to the owner: a forwarded read costs a round trip on
 * the HPA controller's path (the budget is 20 ms p99 against < 5 ms local), the owner may be
 * gone at that moment, and a cache of forwarded answers holds the same values a push does.
 * At 2,000 HPAs x 2 metrics every 15 s the push is ~270 records a second in 4 POSTs.
 *
 * A peer that joins gets the latest record of every plan we wrote (so it serves everything
 * at once, not after an interval); a plan removed here is forgotten. Records for a plan a
 * receiver does not know (not planned there yet) are ignored by its store.
 *
 * The wire format (`POST /shard/v1/samples`, JSON, version 1):
 * `{"v":1,"from":"<identity>","records":[{"k":"<plan key>","at":<ms>,"s":[<Sample>...],"w":[...]}
 * | {"k":..,"at":..,"e":"<error>"}]}`.
 */
import type { Sample } from "../store/types.ts";
import { shardBatchBodies, type ShardMember } from "../core/shard.ts";
import type { EngineStore } from "./engine.ts";
import { errorText } from "./error_text.ts";
import type { Logger } from "./logger.ts";
import { silentLogger } from "./logger.ts";

/** One store write as it travels. */
export interface ShardRecord {
  /** The plan key. */
  k: string;
  /** When it was recorded, ms since the epoch (the owner's clock). */
  at: number;
  /** Samples of a success. */
  s?: Sample[];
  /** Warnings of a success. */
  w?: string[];
  /** The error of a failure. */
  e?: string;
}

/** One push. */
export interface ShardBatch {
  v: 1;
  from: string;
  records: ShardRecord[];
}

/** Where a received record goes (the engine's `peerRecord`, with the store bound). */
export type PeerRecordSink = (
  key: string,
  outcome: { samples: Sample[]; warnings?: string[] } | { error: string },
  at: number,
) => void;

/** Options of {@linkcode ShardReplicator}. */
export interface ShardReplicatorOptions {
  identity: string;
  /**
   * Sends one batch (a {@linkcode ShardBatch} as JSON) to one peer; rejects on failure (the
   * records are not sent again).
   */
  send: (peer: ShardMember, body: string) => Promise<void>;
  /** How long writes are gathered before a push, ms (default 500). */
  flushMs?: number;
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (handle: unknown) => void;
  logger?: Logger;
}

/** Counters for the own metrics. */
export interface ShardReplicationStats {
  peers: number;
  recordsSent: number;
  recordsReceived: number;
  sendFailures: number;
}

/** Pushes this replica's store writes to its peers and applies theirs. */
export class ShardReplicator {
  readonly #o: ShardReplicatorOptions;
  readonly #log: Logger;
  readonly #setTimer: (fn: () => void, ms: number) => unknown;
  readonly #clearTimer: (handle: unknown) => void;
  /** The latest record of each plan this replica wrote (sent in full to a peer that joins). */
  readonly #latest = new Map<string, ShardRecord>();
  #pending: ShardRecord[] = [];
  #peers: ShardMember[] = [];
  #timer: unknown = null;
  #inflight = new Set<Promise<void>>();
  #lastFailure = new Map<string, string>();
  #stats = { recordsSent: 0, recordsReceived: 0, sendFailures: 0 };

  constructor(options: ShardReplicatorOptions) {
    this.#o = options;
    this.#log = options.logger ?? silentLogger();
    this.#setTimer = options.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
    this.#clearTimer = options.clearTimer ??
      ((h) => clearTimeout(h as ReturnType<typeof setTimeout>));
  }

  /** The live members (self may be among them: it is left out). A new peer gets everything. */
  setMembers(members: readonly ShardMember[]): void {
    const before = new Set(this.#peers.map((p) => `${p.identity} ${p.address}`));
    this.#peers = members.filter((m) => m.identity !== this.#o.identity);
    const joined = this.#peers.filter((p) => !before.has(`${p.identity} ${p.address}`));
    if (joined.length > 0 && this.#latest.size > 0) this.#push(joined, [...this.#latest.values()]);
    for (const key of [...this.#lastFailure.keys()]) {
      if (!this.#peers.some((p) => p.identity === key)) this.#lastFailure.delete(key);
    }
  }

  /** The store the engine writes to: `store`, with its plan writes also pushed. */
  wrap(store: EngineStore): EngineStore {
    const record = (r: ShardRecord): void => {
      this.#latest.set(r.k, r);
      // with no peer, nothing to send: a peer that comes gets `#latest`
      if (this.#peers.length === 0) return;
      this.#pending.push(r);
      if (this.#timer === null) {
        this.#timer = this.#setTimer(() => this.#flush(), this.#o.flushMs ?? 500);
      }
    };
    return {
      upsertPlan: (plan, at) => store.upsertPlan(plan, at),
      removePlan: (key) => {
        this.#latest.delete(key);
        store.removePlan(key);
      },
      recordSuccess: (key, samples, at, warnings) => {
        // the store checks the values first: what it refuses is not sent
        store.recordSuccess(key, samples, at, warnings);
        record({
          k: key,
          at,
          s: samples,
          ...(warnings && warnings.length > 0 ? { w: [...warnings] } : {}),
        });
      },
      recordFailure: (key, error, at) => {
        store.recordFailure(key, error, at);
        record({ k: key, at, e: error });
      },
      removeObject: (namespace, groupResource, name) =>
        store.removeObject(namespace, groupResource, name),
      gc: (now) => store.gc(now),
      conflicts: () => store.conflicts(),
      get conflictVersion(): number {
        return store.conflictVersion;
      },
    };
  }

  /**
   * Applies a peer's batch to `store`; the text of what is wrong with it, or null. A record
   * that does not fit is skipped and counted in the answer; the others are applied.
   */
  receive(body: unknown, apply: PeerRecordSink): string | null {
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      return "the body is not a JSON object";
    }
    const b = body as Partial<ShardBatch>;
    if (b.v !== 1) return `unsupported version ${JSON.stringify(b.v ?? null)} (want 1)`;
    if (!Array.isArray(b.records)) return "records is not an array";
    let bad = 0;
    let firstProblem = "";
    for (const r of b.records as unknown[]) {
      const problem = recordProblem(r);
      if (problem === null) {
        const rec = r as ShardRecord;
        try {
          apply(
            rec.k,
            rec.e !== undefined ? { error: rec.e } : { samples: rec.s!, warnings: rec.w },
            rec.at,
          );
          this.#stats.recordsReceived++;
          continue;
        } catch (e) {
          if (firstProblem === "") firstProblem = `record of ${rec.k}: ${errorText(e)}`;
        }
      } else if (firstProblem === "") firstProblem = problem;
      bad++;
    }
    return bad === 0
      ? null
      : `${bad} of ${b.records.length} records refused; first: ${firstProblem}`;
  }

  /** Sends what is pending now; resolves when every push ended. */
  async flush(): Promise<void> {
    if (this.#timer !== null) {
      this.#clearTimer(this.#timer);
      this.#timer = null;
    }
    this.#flush();
    while (this.#inflight.size > 0) await Promise.all([...this.#inflight]);
  }

  stats(): ShardReplicationStats {
    return { peers: this.#peers.length, ...this.#stats };
  }

  /** Stops the timer; pending records are dropped. */
  close(): void {
    if (this.#timer !== null) this.#clearTimer(this.#timer);
    this.#timer = null;
    this.#pending = [];
  }

  #flush(): void {
    this.#timer = null;
    if (this.#pending.length === 0) return;
    // the latest record per plan: a plan written twice in one flush travels once
    const byKey = new Map<string, ShardRecord>();
    for (const r of this.#pending) byKey.set(r.k, r);
    this.#pending = [];
    this.#push(this.#peers, [...byKey.values()]);
  }

  #push(peers: readonly ShardMember[], records: ShardRecord[]): void {
    // each body serialized once for all peers, none over what a peer reads
    const { bodies, tooLarge } = shardBatchBodies(
      this.#o.identity,
      records.map((r) => JSON.stringify(r)),
    );
    for (const i of tooLarge) {
      this.#stats.sendFailures++;
      this.#log.warn("a value is too large to push to shard peers", { key: records[i].k });
    }
    for (const body of bodies) {
      for (const peer of peers) this.#pushTo(peer, body.text, body.records);
    }
  }

  #pushTo(peer: ShardMember, body: string, count: number): void {
    const p = this.#o.send(peer, body).then(
      () => {
        this.#stats.recordsSent += count;
        if (this.#lastFailure.delete(peer.identity)) {
          this.#log.info("shard peer reachable again", { peer: peer.identity });
        }
      },
      (e) => {
        this.#stats.sendFailures++;
        const text = errorText(e);
        if (this.#lastFailure.get(peer.identity) !== text) {
          this.#lastFailure.set(peer.identity, text);
          this.#log.warn("cannot push values to shard peer", {
            peer: peer.identity,
            address: peer.address,
            error: text,
          });
        }
      },
    );
    this.#inflight.add(p);
    p.finally(() => this.#inflight.delete(p));
  }
}

/** What is wrong with one record, or null. */
function recordProblem(r: unknown): string | null {
  if (typeof r !== "object" || r === null) return "a record is not an object";
  const rec = r as Record<string, unknown>;
  if (typeof rec.k !== "string" || rec.k === "") return "a record has no plan key (k)";
  if (typeof rec.at !== "number" || !Number.isFinite(rec.at)) {
    return `record of ${rec.k}: at is not a finite number`;
  }
  if (rec.e !== undefined) {
    return typeof rec.e === "string" ? null : `record of ${rec.k}: e is not a string`;
  }
  if (!Array.isArray(rec.s)) return `record of ${rec.k}: neither samples (s) nor an error (e)`;
  for (const s of rec.s) {
    if (typeof s !== "object" || s === null) return `record of ${rec.k}: a sample is not an object`;
    const x = s as Record<string, unknown>;
    if (typeof x.value !== "number" || typeof x.timestamp !== "number") {
      return `record of ${rec.k}: a sample has no numeric value and timestamp`;
    }
    if (x.objectName !== undefined && typeof x.objectName !== "string") {
      return `record of ${rec.k}: a sample's objectName is not a string`;
    }
    if (x.labels !== undefined) {
      if (typeof x.labels !== "object" || x.labels === null || Array.isArray(x.labels)) {
        return `record of ${rec.k}: a sample's labels are not an object`;
      }
      for (const v of Object.values(x.labels)) {
        if (typeof v !== "string") return `record of ${rec.k}: a sample's label is not a string`;
      }
    }
    if (x.windowSeconds !== undefined && typeof x.windowSeconds !== "number") {
      return `record of ${rec.k}: a sample's windowSeconds is not a number`;
    }
  }
  if (rec.w !== undefined && (!Array.isArray(rec.w) || rec.w.some((w) => typeof w !== "string"))) {
    return `record of ${rec.k}: w is not a list of strings`;
  }
  return null;
}
