/**
 * Who shares the collection (`--shard-collection`, issue 29): each replica holds a Lease of its
 * own (coordination.k8s.io/v1, `<group>-<identity>`, labelled with the group) and renews it
 * every retry period; every retry period it also lists the group's Leases and reports the live
 * members (core/shard.ts: a member is live while its renew time keeps changing within the lease
 * duration on our own clock). The Lease carries the address peers push values to in an
 * annotation. A replica that stops deletes its Lease, so that the others take its share at
 * their next listing instead of a lease duration later.
 *
 * Requests per replica: one renewal and one list per retry period (2 s by default: 60 a minute;
 * `--shard-retry-period` trades that against how fast a departure is noticed).
 *
 * A replica that was killed leaves its Lease behind: a Lease of the group last renewed more than
 * ten lease durations (at least a minute) ago by our clock is deleted by whichever replica sees
 * it first (with its resourceVersion as precondition, so a renewal in between wins).
 */
import { LivenessTracker, type MemberLease, sameMembers, type ShardMember } from "../core/shard.ts";
import { describeError, type KubeHttp, statusCodeOf } from "./kube_http.ts";
import { guardedLogger, type KubeLogger } from "./kube_logger.ts";

/** The label that groups the members' Leases; its value is the group's name. */
export const SHARD_GROUP_LABEL = "hpa-metrics-adapter.io/shard-group";
/** The annotation with the address peers send values to. */
export const SHARD_ADDRESS_ANNOTATION = "hpa-metrics-adapter.io/peer-address";

/** Options of {@linkcode ShardMembership}. */
export interface ShardMembershipOptions {
  http: KubeHttp;
  namespace: string;
  /** The group's name (the Leases' label value and name prefix). */
  group: string;
  /** This replica: unique identity and the address its peers reach it at. */
  self: ShardMember;
  leaseDurationSeconds: number;
  retryPeriodSeconds: number;
  /** Called with the live members (self included while its Lease is renewed) on each change. */
  onChange: (members: ShardMember[]) => void;
  now?: () => number;
  logger?: KubeLogger;
}

/** metav1.MicroTime: RFC 3339 with microseconds. */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/Z$/, "000Z");
}

interface LeaseObject {
  metadata?: {
    name?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: { holderIdentity?: string; renewTime?: string; leaseDurationSeconds?: number };
}

/** A DNS-1123 subdomain made of the group and the identity (a Lease's name). */
export function memberLeaseName(group: string, identity: string): string {
  const raw = `${group}-${identity}`.toLowerCase().replace(/[^a-z0-9.-]+/g, "-");
  return raw.replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, "").slice(0, 253) || "member";
}

/** Announces this replica and follows the others through Leases. */
export class ShardMembership {
  readonly #o: ShardMembershipOptions;
  readonly #now: () => number;
  readonly #log: KubeLogger;
  readonly #tracker = new LivenessTracker();
  readonly #name: string;
  #members: ShardMember[] = [];
  #lastRenew = -Infinity;
  #running = false;
  #loop?: Promise<void>;
  #sleeping?: { timer: ReturnType<typeof setTimeout>; wake: () => void };

  constructor(options: ShardMembershipOptions) {
    if (!(options.leaseDurationSeconds > options.retryPeriodSeconds)) {
      throw new Error(
        `invalid shard timing: lease duration ${options.leaseDurationSeconds}s must be greater than retry period ${options.retryPeriodSeconds}s`,
      );
    }
    this.#o = options;
    this.#now = options.now ?? (() => Date.now());
    this.#log = guardedLogger(options.logger);
    this.#name = memberLeaseName(options.group, options.self.identity);
  }

  /** The live members as last reported. */
  members(): ShardMember[] {
    return this.#members;
  }

  /** Renew and list now, then every retry period. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#loop = (async () => {
      while (this.#running) {
        await this.step();
        if (!this.#running) break;
        await new Promise<void>((wake) => {
          this.#sleeping = {
            timer: setTimeout(wake, this.#o.retryPeriodSeconds * 1000),
            wake,
          };
        });
        this.#sleeping = undefined;
      }
    })();
  }

  /** Stops and deletes this replica's Lease (the others take its share at their next listing). */
  async stop(): Promise<void> {
    this.#running = false;
    if (this.#sleeping) {
      clearTimeout(this.#sleeping.timer);
      this.#sleeping.wake();
    }
    await this.#loop;
    try {
      await this.#o.http.json("DELETE", `${this.#path()}/${encodeURIComponent(this.#name)}`);
    } catch (e) {
      if (statusCodeOf(e) !== 404) {
        this.#log("warn", `shard lease ${this.#name}: ${describeError(e)}`);
      }
    }
  }

  /** One renewal and one listing (`start` calls it every retry period; tests directly). */
  async step(): Promise<void> {
    const now = this.#now();
    try {
      await this.#renew(now);
      this.#lastRenew = now;
    } catch (e) {
      this.#log("warn", `shard lease ${this.#o.namespace}/${this.#name}: ${describeError(e)}`);
    }
    try {
      const list = await this.#o.http.json(
        "GET",
        `${this.#path()}?labelSelector=${
          encodeURIComponent(`${SHARD_GROUP_LABEL}=${this.#o.group}`)
        }`,
      ) as { items?: LeaseObject[] } | null;
      const items = list?.items ?? [];
      this.#tracker.observe(membersOf(items), now);
      await this.#deleteAbandoned(items, now);
    } catch (e) {
      this.#log("warn", `shard leases in ${this.#o.namespace}: ${describeError(e)}`);
    }
    // ourselves only while our own renewals go through: a replica cut off from the API server
    // gives its share up (the others take it once our Lease expires)
    const selfLive = now - this.#lastRenew < this.#o.leaseDurationSeconds * 1000;
    const members = this.#tracker.live(now).filter((m) => m.identity !== this.#o.self.identity);
    if (selfLive) members.push(this.#o.self);
    members.sort((a, b) => (a.identity < b.identity ? -1 : a.identity > b.identity ? 1 : 0));
    if (!sameMembers(members, this.#members)) {
      this.#members = members;
      this.#log(
        "info",
        `shard members: ${members.map((m) => m.identity).join(", ") || "(none)"}`,
      );
      try {
        this.#o.onChange(members);
      } catch (e) {
        this.#log("error", `shard membership change: ${describeError(e)}`);
      }
    }
  }

  /** Deletes the group's Leases nobody renewed for ten lease durations (a minute at least). */
  async #deleteAbandoned(items: readonly LeaseObject[], now: number): Promise<void> {
    for (const l of items) {
      const name = l.metadata?.name;
      const renewed = Date.parse(String(l.spec?.renewTime ?? ""));
      const durationMs = Math.max(1, Number(l.spec?.leaseDurationSeconds ?? 0) || 1) * 1000;
      if (!name || name === this.#name || !Number.isFinite(renewed)) continue;
      if (now - renewed <= Math.max(60_000, 10 * durationMs)) continue;
      try {
        await this.#o.http.json("DELETE", `${this.#path()}/${encodeURIComponent(name)}`, {
          apiVersion: "v1",
          kind: "DeleteOptions",
          preconditions: { resourceVersion: l.metadata?.resourceVersion },
        });
        this.#log(
          "info",
          `deleted the shard lease ${this.#o.namespace}/${name}: not renewed since ${l.spec?.renewTime}`,
        );
      } catch (e) {
        const code = statusCodeOf(e);
        // gone already, or renewed (or deleted) by someone in between
        if (code !== 404 && code !== 409) {
          this.#log("warn", `shard lease ${this.#o.namespace}/${name}: ${describeError(e)}`);
        }
      }
    }
  }

  #path(): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${
      encodeURIComponent(this.#o.namespace)
    }/leases`;
  }

  async #renew(now: number): Promise<void> {
    const { namespace, group, self, leaseDurationSeconds } = this.#o;
    const spec = {
      holderIdentity: self.identity,
      leaseDurationSeconds: Math.max(1, Math.round(leaseDurationSeconds)),
      renewTime: microTime(now),
    };
    const patch = {
      metadata: {
        labels: { [SHARD_GROUP_LABEL]: group },
        annotations: { [SHARD_ADDRESS_ANNOTATION]: self.address },
      },
      spec,
    };
    try {
      await this.#o.http.json(
        "PATCH",
        `${this.#path()}/${encodeURIComponent(this.#name)}`,
        patch,
        "application/merge-patch+json",
      );
    } catch (e) {
      if (statusCodeOf(e) !== 404) throw e;
      await this.#o.http.json("POST", this.#path(), {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: this.#name, namespace, ...patch.metadata },
        spec: { ...spec, acquireTime: spec.renewTime },
      });
    }
  }
}

/** The members' Leases of a listing (those without holder or address are skipped). */
function membersOf(items: readonly LeaseObject[]): MemberLease[] {
  const out: MemberLease[] = [];
  for (const l of items) {
    const identity = l.spec?.holderIdentity;
    const address = l.metadata?.annotations?.[SHARD_ADDRESS_ANNOTATION];
    if (!identity || !address) continue;
    out.push({
      identity,
      address,
      renewTime: String(l.spec?.renewTime ?? ""),
      leaseDurationSeconds: Number(l.spec?.leaseDurationSeconds ?? 0) || 1,
    });
  }
  return out;
}
