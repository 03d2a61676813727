/**
 * Warning events on HPAs about metrics that cannot be planned, collected or served: one event
 * per change of the message for a key (a plan key, or an HPA key for the HPA as a whole).
 *
 * Only the leader writes. A replica that does not lead keeps the events it would have written
 * and writes them once it leads (it checks every few seconds while some wait, and on
 * {@linkcode EventReporter.emitPending}), except those whose problem went away meanwhile.
 */
import type { ClusterWriter, KubeObject } from "../cluster/types.ts";
import { errorText } from "./error_text.ts";
import { hpaKeyOf } from "./hpa_key.ts";
import type { Logger } from "./logger.ts";

/** Event reason of metrics that cannot be planned, collected or served. */
export const COLLECTOR_EVENT_REASON = "CreateNewMetricsCollector";

/** Warning event reason: a metric's fallback value is served (issue 21). */
export const FALLBACK_ACTIVE_REASON = "FallbackActive";

/** Normal event reason: a metric's fallback ended. */
export const FALLBACK_ENDED_REASON = "FallbackEnded";

/** How often a replica with events waiting checks whether it became the leader, ms. */
const LEADER_CHECK_MS = 5000;

/** Options of {@linkcode EventReporter}. */
export interface EventReporterOptions {
  /** Writes events; without it none are written (the messages are still tracked). */
  writer?: ClusterWriter;
  /** Whether this replica may write (leader election). */
  isLeader: () => boolean;
  setTimer: (fn: () => void, ms: number) => unknown;
  clearTimer: (handle: unknown) => void;
  logger: Logger;
  /** Emit nothing about metrics whose collector is unknown or disabled. */
  disregardIncompatible: boolean;
}

/**
 * Reports problems as Warning events on their HPA, once per change of the message.
 *
 * @example
 * ```ts
 * const events = new EventReporter({ writer, isLeader, setTimer, clearTimer, logger, disregardIncompatible: false });
 * events.report("shop/web", hpa, "invalid interval \"5x\" for metric queue-depth", false);
 * events.clear("shop/web"); // the problem is gone: the same message is reported again later
 * ```
 */
export class EventReporter {
  readonly #writer?: ClusterWriter;
  readonly #isLeader: () => boolean;
  readonly #setTimer: (fn: () => void, ms: number) => unknown;
  readonly #clearTimer: (handle: unknown) => void;
  readonly #log: Logger;
  readonly #disregardIncompatible: boolean;
  /** Last event message per plan key (or HPA key), to emit only on change. */
  #events = new Map<string, string>();
  /** Events not written because this replica was not the leader, per plan key (or HPA key). */
  #pending = new Map<string, { hpa: KubeObject; message: string }>();
  #leaderTimer: unknown = null;
  #stopped = false;

  /** Creates a reporter with nothing reported. */
  constructor(options: EventReporterOptions) {
    this.#writer = options.writer;
    this.#isLeader = options.isLeader;
    this.#setTimer = options.setTimer;
    this.#clearTimer = options.clearTimer;
    this.#log = options.logger;
    this.#disregardIncompatible = options.disregardIncompatible;
  }

  /**
   * Write the events that waited for this replica to become the leader. Call it when
   * leadership is gained.
   */
  emitPending(): void {
    if (this.#stopped || this.#pending.size === 0 || !this.#isLeader()) return;
    const pending = [...this.#pending];
    this.#pending.clear();
    for (const [key, p] of pending) {
      if (this.#events.get(key) !== p.message) this.#write(key, p.hpa, p.message);
    }
  }

  /** The event message last emitted or waiting for `key`. */
  last(key: string): string | undefined {
    return this.#pending.get(key)?.message ?? this.#events.get(key);
  }

  /** The problem behind `key` is gone: forget its event, written or waiting. */
  clear(key: string): void {
    this.#events.delete(key);
    this.#pending.delete(key);
  }

  /**
   * A Warning event on the HPA, when the message for `key` changed. `incompatible`: the
   * metric's collector is unknown or disabled (the HPA may belong to another adapter).
   */
  report(key: string, hpa: KubeObject, message: string, incompatible: boolean): void {
    if (incompatible && this.#disregardIncompatible) return;
    if (this.#events.get(key) === message) {
      this.#pending.delete(key);
      return;
    }
    if (!this.#writer) {
      this.#events.set(key, message);
      return;
    }
    if (!this.#isLeader()) {
      // Written once this replica leads (another replica may have written it meanwhile; a
      // repeated event only raises its count).
      this.#pending.set(key, { hpa, message });
      this.#checkLeaderLater();
      return;
    }
    this.#pending.delete(key);
    this.#write(key, hpa, message);
  }

  /**
   * An event of its own kind on the HPA (fallback started or ended), written at once by the
   * leader; a replica that does not lead writes nothing (the leader says it).
   */
  notify(hpa: KubeObject, type: "Normal" | "Warning", reason: string, message: string): void {
    if (this.#stopped || !this.#writer || !this.#isLeader()) return;
    this.#writer.emitEvent("HorizontalPodAutoscaler", hpa, { type, reason, message }).catch((e) => {
      this.#log.error("failed to write event", { hpa: hpaKeyOf(hpa), error: errorText(e) });
    });
  }

  /** Stop checking for leadership; nothing waiting is written any more. */
  stop(): void {
    this.#stopped = true;
    if (this.#leaderTimer !== null) this.#clearTimer(this.#leaderTimer);
    this.#leaderTimer = null;
  }

  #checkLeaderLater(): void {
    if (this.#leaderTimer !== null || this.#stopped) return;
    this.#leaderTimer = this.#setTimer(() => {
      this.#leaderTimer = null;
      this.emitPending();
      if (this.#pending.size > 0) this.#checkLeaderLater();
    }, LEADER_CHECK_MS);
  }

  #write(key: string, hpa: KubeObject, message: string): void {
    this.#events.set(key, message);
    this.#writer!.emitEvent("HorizontalPodAutoscaler", hpa, {
      type: "Warning",
      reason: COLLECTOR_EVENT_REASON,
      message,
    }).catch((e) => {
      this.#log.error("failed to write event", { hpa: hpaKeyOf(hpa), error: errorText(e) });
    });
  }
}
