/**
 * The leader elector interface, and the elector of file mode (`InMemoryLeaderElector`): the one
 * process is always the leader. The Lease-based elector of cluster mode is in
 * leader_election.ts; this file loads nothing of the Kubernetes client.
 *
 * @module
 */

/**
 * The Lease timing of leader election when none is given, in seconds: Kubernetes' own
 * controllers' duration and deadline, renewed every 5 s instead of their 2 s (issue 51). A
 * renewal is a request to kube-apiserver, 30 a minute at 2 s: at rest the most this adapter
 * sent (the peers without leader election send none, KEDA's operator 30); 12 at 5 s. The cost
 * is failover: a new leader takes over at most 20 s after the last renewal instead of 17, and
 * the leader still tries twice before its 10 s deadline. Here, not in leader_election.ts, so
 * that naming it loads no Kubernetes client.
 */
export const LEASE_TIMING_DEFAULTS: Readonly<{
  leaseDurationSeconds: number;
  renewDeadlineSeconds: number;
  retryPeriodSeconds: number;
}> = { leaseDurationSeconds: 15, renewDeadlineSeconds: 10, retryPeriodSeconds: 5 };

/** Runs a campaign for leadership and reports when it is won and lost. */
export interface LeaderElector {
  /** Start campaigning (idempotent). */
  start(): void;
  /** Stop campaigning; a leader steps down (`onStoppedLeading` is called). */
  stop(): Promise<void>;
  isLeader(): boolean;
}

/** Options of `InMemoryLeaderElector`. */
export interface InMemoryLeaderElectorOptions {
  onStartedLeading?: () => void;
  onStoppedLeading?: () => void;
}

/** The elector of file mode: the only process leads from `start()` to `stop()`. */
export class InMemoryLeaderElector implements LeaderElector {
  readonly #options: InMemoryLeaderElectorOptions;
  #leading = false;

  constructor(options: InMemoryLeaderElectorOptions = {}) {
    this.#options = options;
  }

  /** Become the leader at once. */
  start(): void {
    if (this.#leading) return;
    this.#leading = true;
    this.#options.onStartedLeading?.();
  }

  /** Step down. */
  async stop(): Promise<void> {
    if (!this.#leading) return;
    this.#leading = false;
    this.#options.onStoppedLeading?.();
  }

  /** Whether `start()` was called and `stop()` was not. */
  isLeader(): boolean {
    return this.#leading;
  }
}
