/**
 * The leader elector interface, and the elector of file mode (`InMemoryLeaderElector`): the one
 * process is always the leader. The Lease-based elector of cluster mode is in
 * leader_election.ts; this file loads nothing of the Kubernetes client.
 *
 * @module
 */

/**
 * The Lease timing of leader election when none is given, in seconds (that of Kubernetes' own
 * controllers); here, not in leader_election.ts, so that naming it loads no Kubernetes client.
 */
export const LEASE_TIMING_DEFAULTS: Readonly<{
  leaseDurationSeconds: number;
  renewDeadlineSeconds: number;
  retryPeriodSeconds: number;
}> = { leaseDurationSeconds: 15, renewDeadlineSeconds: 10, retryPeriodSeconds: 2 };

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
