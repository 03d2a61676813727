/**
 * Leader election: one replica makes the writes (status updates, events, scaling adjustments).
 *
 * `LeaseLeaderElector` follows client-go's Lease lock (coordination.k8s.io/v1): a candidate
 * takes the Lease when it has no holder or when its record has not changed for
 * `leaseDurationSeconds` as measured on the candidate's own clock (so clock skew between
 * replicas does not matter); the leader renews every `retryPeriodSeconds` and steps down when it
 * could not renew for `renewDeadlineSeconds`. Updates carry the Lease's resourceVersion, so two
 * candidates cannot both win (the loser gets 409 Conflict). A leader renews with one request, as
 * client-go does: an update of the Lease its last update returned, and only when that fails a
 * read and an update (a Lease renewed every 2 s costs 30 requests a minute, not 60). File mode uses
 * `InMemoryLeaderElector` (leader.ts), which does not load the Kubernetes client.
 */
import { describeError, KubeHttp, statusCodeOf } from "./kube_http.ts";
import type { KubeConfig } from "./kubeconfig.ts";
import { guardedLogger, type KubeLogger } from "./kube_logger.ts";
import { type LeaderElector, LEASE_TIMING_DEFAULTS } from "./leader.ts";

/** Options of `LeaseLeaderElector`. */
export interface LeaseLeaderElectorOptions {
  kubeConfig: KubeConfig;
  /**
   * The HTTP layer to send Lease requests through (e.g. the cluster source's `http`); default
   * one of its own for `kubeConfig`, closed by `stop()`.
   */
  http?: KubeHttp;
  /** Namespace and name of the Lease. */
  namespace: string;
  name: string;
  /** This candidate's identity (usually the pod name). */
  identity: string;
  /** How long a Lease is valid without renewal (default: `LEASE_TIMING_DEFAULTS`). */
  leaseDurationSeconds?: number;
  /** How long the leader fails to renew before it steps down (`LEASE_TIMING_DEFAULTS`). */
  renewDeadlineSeconds?: number;
  /** How often candidates try to acquire and the leader renews (`LEASE_TIMING_DEFAULTS`). */
  retryPeriodSeconds?: number;
  /** The clock, ms since the epoch. */
  now?: () => number;
  onStartedLeading?: () => void;
  onStoppedLeading?: () => void;
  /** Give the Lease up on `stop()` so another candidate takes over at once (default true). */
  releaseOnStop?: boolean;
  logger?: KubeLogger;
}

/** The fields of a coordination.k8s.io/v1 Lease this file reads and writes. */
interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

/** metav1.MicroTime: RFC 3339 with microseconds. */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/Z$/, "000Z");
}

/** Leader election through a coordination.k8s.io/v1 Lease. */
export class LeaseLeaderElector implements LeaderElector {
  readonly #http: KubeHttp;
  readonly #ownHttp?: KubeHttp;
  readonly #options: LeaseLeaderElectorOptions;
  readonly #leaseDurationMs: number;
  readonly #renewDeadlineMs: number;
  readonly #retryPeriodMs: number;
  readonly #now: () => number;
  readonly #log: KubeLogger;
  #leading = false;
  #running = false;
  #loop?: Promise<void>;
  #sleeping?: { timer: ReturnType<typeof setTimeout>; wake: () => void };
  /** The last Lease record seen (holder and renew time) and when it was first seen. */
  #observedRecord = "";
  #observedTime = 0;
  #lastRenew = 0;
  /** Another candidate holds an unexpired Lease (seen on the last attempt). */
  #heldByOther = false;
  /** The Lease as this candidate's last successful update returned it (null: read it first). */
  #ownLease: Lease | null = null;

  constructor(options: LeaseLeaderElectorOptions) {
    this.#options = options;
    this.#leaseDurationMs =
      (options.leaseDurationSeconds ?? LEASE_TIMING_DEFAULTS.leaseDurationSeconds) * 1000;
    this.#renewDeadlineMs =
      (options.renewDeadlineSeconds ?? LEASE_TIMING_DEFAULTS.renewDeadlineSeconds) * 1000;
    this.#retryPeriodMs = (options.retryPeriodSeconds ?? LEASE_TIMING_DEFAULTS.retryPeriodSeconds) *
      1000;
    if (!(this.#leaseDurationMs > this.#renewDeadlineMs)) {
      throw new Error(
        `invalid leader election timing: lease duration ${
          this.#leaseDurationMs / 1000
        }s must be greater than renew deadline ${this.#renewDeadlineMs / 1000}s`,
      );
    }
    if (!(this.#renewDeadlineMs > this.#retryPeriodMs) || !(this.#retryPeriodMs > 0)) {
      throw new Error(
        `invalid leader election timing: renew deadline ${
          this.#renewDeadlineMs / 1000
        }s must be greater than retry period ${
          this.#retryPeriodMs / 1000
        }s (which must be positive)`,
      );
    }
    if (options.identity === "") throw new Error("leader election identity must not be empty");
    this.#now = options.now ?? (() => Date.now());
    // a logger that throws must not end the campaign
    this.#log = guardedLogger(options.logger);
    if (!options.http) this.#ownHttp = new KubeHttp(options.kubeConfig);
    this.#http = (options.http ?? this.#ownHttp)!;
  }

  /** Start campaigning: one attempt now, then one every retry period. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#loop = (async () => {
      while (this.#running) {
        try {
          await this.step();
        } catch (e) {
          // step() catches its own failures; this keeps the campaign alive whatever happens
          this.#log("error", `leader election on lease ${this.#leaseName()}: ${describeError(e)}`);
        }
        if (!this.#running) break;
        await new Promise<void>((wake) => {
          this.#sleeping = { timer: setTimeout(wake, this.#retryPeriodMs), wake };
        });
        this.#sleeping = undefined;
      }
    })();
  }

  /** Stop campaigning; a leader releases the Lease (unless `releaseOnStop` is false) and steps down. */
  async stop(): Promise<void> {
    this.#running = false;
    if (this.#sleeping) {
      clearTimeout(this.#sleeping.timer);
      this.#sleeping.wake();
    }
    await this.#loop;
    this.#loop = undefined;
    if (this.#leading) {
      if (this.#options.releaseOnStop ?? true) await this.#release();
      this.#leading = false;
      this.#callback("onStoppedLeading");
    }
    await this.#ownHttp?.close();
  }

  /** Whether this candidate holds the Lease. */
  isLeader(): boolean {
    return this.#leading;
  }

  /**
   * One attempt to acquire or renew, with the leadership callbacks. `start()` calls it every
   * retry period; tests call it directly with an injected clock.
   */
  async step(): Promise<void> {
    const now = this.#now();
    let held = false;
    try {
      held = await this.#tryAcquireOrRenew(now);
    } catch (e) {
      this.#log("warn", `leader election on lease ${this.#leaseName()}: ${describeError(e)}`);
    }
    if (held) {
      this.#lastRenew = now;
      if (!this.#leading) {
        this.#leading = true;
        this.#log("info", `${this.#options.identity} is the leader (lease ${this.#leaseName()})`);
        this.#callback("onStartedLeading");
      }
    } else if (
      this.#leading && (this.#heldByOther || now - this.#lastRenew >= this.#renewDeadlineMs)
    ) {
      this.#leading = false;
      this.#log("warn", `${this.#options.identity} lost the lease ${this.#leaseName()}`);
      this.#callback("onStoppedLeading");
    }
  }

  /** Run a leadership callback; a throw is logged, so that it cannot end the campaign. */
  #callback(name: "onStartedLeading" | "onStoppedLeading"): void {
    try {
      this.#options[name]?.();
    } catch (e) {
      this.#log("error", `${name} of ${this.#options.identity} failed: ${describeError(e)}`);
    }
  }

  #leasesPath(): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${
      encodeURIComponent(this.#options.namespace)
    }/leases`;
  }

  async #readLease(): Promise<Lease> {
    const lease = await this.#http.json(
      "GET",
      `${this.#leasesPath()}/${encodeURIComponent(this.#options.name)}`,
    );
    if (typeof lease !== "object" || lease === null) {
      throw new Error(`lease ${this.#leaseName()} is not an object: ${JSON.stringify(lease)}`);
    }
    return lease as Lease;
  }

  #leaseName(): string {
    return `${this.#options.namespace}/${this.#options.name}`;
  }

  #observe(holder: string, renewTime: unknown, now: number): void {
    const record = JSON.stringify([holder, renewTime ?? null]);
    if (record !== this.#observedRecord) {
      this.#observedRecord = record;
      this.#observedTime = now;
    }
  }

  /** Whether this candidate holds the Lease after the attempt. Throws on API errors. */
  async #tryAcquireOrRenew(now: number): Promise<boolean> {
    const { namespace, name, identity } = this.#options;
    const leaseDurationSeconds = Math.round(this.#leaseDurationMs / 1000) || 1;
    this.#heldByOther = false;
    const own = this.#ownLease;
    this.#ownLease = null;
    if (own !== null && this.#leading) {
      // the leader renews the Lease of its last update; a conflict (someone else wrote it) or
      // any other failure falls back to a read and an update
      const t = microTime(now);
      try {
        const renewed = await this.#http.json(
          "PUT",
          `${this.#leasesPath()}/${encodeURIComponent(name)}`,
          { ...own, spec: { ...own.spec, renewTime: t } },
        );
        this.#keep(renewed);
        this.#observe(identity, t, now);
        return true;
      } catch {
        // read the Lease below
      }
    }
    let lease: Lease;
    try {
      lease = await this.#readLease();
    } catch (e) {
      if (statusCodeOf(e) !== 404) throw e;
      const t = microTime(now);
      const body = {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name, namespace },
        spec: {
          holderIdentity: identity,
          leaseDurationSeconds,
          acquireTime: t,
          renewTime: t,
          leaseTransitions: 0,
        },
      };
      try {
        this.#keep(await this.#http.json("POST", this.#leasesPath(), body));
      } catch (err) {
        if (statusCodeOf(err) === 409) return false; // another candidate created it first
        throw err;
      }
      this.#observe(identity, t, now);
      return true;
    }
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? "";
    this.#observe(holder, spec.renewTime, now);
    if (holder !== "" && holder !== identity) {
      const durationMs = (spec.leaseDurationSeconds ?? leaseDurationSeconds) * 1000;
      if (this.#observedTime + durationMs > now) {
        this.#heldByOther = true;
        return false;
      }
    }
    const t = microTime(now);
    const transitions = spec.leaseTransitions ?? 0;
    const body = {
      ...lease,
      spec: {
        ...spec,
        holderIdentity: identity,
        leaseDurationSeconds,
        acquireTime: holder === identity ? spec.acquireTime : t,
        renewTime: t,
        leaseTransitions: holder === identity ? transitions : transitions + 1,
      },
    };
    try {
      this.#keep(
        await this.#http.json("PUT", `${this.#leasesPath()}/${encodeURIComponent(name)}`, body),
      );
    } catch (e) {
      if (statusCodeOf(e) === 409) return false; // someone else updated it since we read it
      throw e;
    }
    this.#observe(identity, t, now);
    return true;
  }

  /** Keep the Lease an update answered with, for the next renewal (if it is one). */
  #keep(answer: unknown): void {
    const lease = answer as Lease | null;
    this.#ownLease = typeof lease === "object" && lease !== null &&
        typeof lease.metadata?.resourceVersion === "string" &&
        lease.spec?.holderIdentity === this.#options.identity
      ? lease
      : null;
  }

  /** Give the Lease up, as client-go does: no holder, a 1 s duration. */
  async #release(): Promise<void> {
    const { name, identity } = this.#options;
    try {
      const lease = await this.#readLease();
      if (lease.spec?.holderIdentity !== identity) return;
      const t = microTime(this.#now());
      const body = {
        ...lease,
        spec: {
          ...lease.spec,
          holderIdentity: undefined,
          leaseDurationSeconds: 1,
          acquireTime: t,
          renewTime: t,
        },
      };
      await this.#http.json("PUT", `${this.#leasesPath()}/${encodeURIComponent(name)}`, body);
    } catch (e) {
      this.#log("warn", `release of lease ${this.#leaseName()}: ${describeError(e)}`);
    }
  }
}
