/**
 * Fallback episodes (issue 21): a plan with a fallback whose source keeps failing serves an
 * error up to its threshold, then its fallback value (fallback_values.ts computes it). An
 * episode starts with a Warning event and ends with a Normal one; the last episode of each
 * plan is kept for the status page.
 */
import type { ClusterView } from "../cluster/types.ts";
import { fallbackActive } from "../core/fallback.ts";
import { errorText } from "./error_text.ts";
import {
  type EventReporter,
  FALLBACK_ACTIVE_REASON,
  FALLBACK_ENDED_REASON,
} from "./event_reporter.ts";
import { fallbackEndMessage, fallbackSamples, fallbackStartMessage } from "./fallback_values.ts";
import type { Logger } from "./logger.ts";
import type { EngineStore, FallbackEpisode, HpaState, PlanEntry } from "./state.ts";

/** A plan with a fallback, for own metrics. */
export interface FallbackStatus {
  hpa: { namespace: string; name: string };
  metricType: string;
  metricName: string;
  /** Whether the fallback value is served now. */
  active: boolean;
  /** Consecutive failed collections (of a formula: the most of any input). */
  consecutiveFailures: number;
  /** Its last fallback episode; absent while it never was active. */
  last?: FallbackEpisode;
}

/** What {@linkcode FallbackEpisodes} reads and writes. */
export interface FallbackEpisodesOptions {
  /** The scale targets and pods a fallback value is computed from. */
  cluster: ClusterView;
  store: Pick<EngineStore, "recordSuccess" | "recordFailure">;
  /** The engine's HPAs (the events go to the HPA of the plan). */
  hpas: ReadonlyMap<string, HpaState>;
  events: EventReporter;
  now: () => number;
  logger: Logger;
}

/**
 * Starts and ends the fallback episodes of plans, serving their fallback value meanwhile.
 *
 * @example
 * ```ts
 * const fallback = new FallbackEpisodes({ cluster, store, hpas, events, now, logger });
 * if (entry.plan.fallback) fallback.failure(entry, "connection refused", now());
 * fallback.end(entry, "its source answers again");
 * ```
 */
export class FallbackEpisodes {
  readonly #cluster: ClusterView;
  readonly #store: Pick<EngineStore, "recordSuccess" | "recordFailure">;
  readonly #hpas: ReadonlyMap<string, HpaState>;
  readonly #events: EventReporter;
  readonly #now: () => number;
  readonly #log: Logger;

  /** Serves and reports through what `options` gives. */
  constructor(options: FallbackEpisodesOptions) {
    this.#cluster = options.cluster;
    this.#store = options.store;
    this.#hpas = options.hpas;
    this.#events = options.events;
    this.#now = options.now;
    this.#log = options.logger;
  }

  /**
   * A failed collection of a plan with a fallback (its `failures` already counted): its value
   * goes (an error is served, not the last good value) up to the threshold, and past it the
   * fallback value is served. True when past the threshold.
   */
  failure(entry: PlanEntry, error: string, at: number): boolean {
    const fb = entry.plan.fallback!;
    if (fallbackActive(fb, entry.failures)) {
      this.serve(
        entry,
        `${entry.failures} consecutive failed collections (the last: ${error})`,
        at,
      );
      return true;
    }
    this.#store.recordSuccess(entry.key, [], at);
    this.#store.recordFailure(entry.key, error, at);
    return false;
  }

  /** Serve the fallback value of a plan (R from `replicas` when given, else its behaviour). */
  serve(entry: PlanEntry, cause: string, at: number, replicas?: number): void {
    const plan = entry.plan;
    let decision;
    try {
      decision = fallbackSamples(this.#cluster, plan, plan.fallback!, at, replicas);
    } catch (e) {
      const error = `${cause}; no fallback value: ${errorText(e)}`;
      this.#store.recordSuccess(entry.key, [], at);
      this.#store.recordFailure(entry.key, error, at);
      const state = this.#hpas.get(entry.hpaKey);
      if (state) {
        this.#events.report(
          entry.key,
          state.obj,
          `failed to compute the fallback of ${plan.metricType} metric ${plan.metricName}: ${error}`,
          false,
        );
      }
      return;
    }
    this.#store.recordSuccess(entry.key, decision.samples, at);
    if (entry.fallbackOn) {
      if (entry.fallbackLast) {
        entry.fallbackLast.value = decision.value;
        entry.fallbackLast.replicas = decision.replicas;
      }
      return;
    }
    entry.fallbackOn = true;
    entry.fallbackLast = {
      since: at,
      endedAt: null,
      value: decision.value,
      replicas: decision.replicas,
      cause,
      endReason: null,
    };
    const message = fallbackStartMessage(plan, cause, decision);
    this.#log.warn("fallback started", { plan: entry.key, message });
    const state = this.#hpas.get(entry.hpaKey);
    if (state) this.#events.notify(state.obj, "Warning", FALLBACK_ACTIVE_REASON, message);
  }

  /** End the fallback episode of a plan, if one is on, saying `why`. */
  end(entry: PlanEntry, why: string): void {
    if (!entry.fallbackOn) return;
    entry.fallbackOn = false;
    if (entry.fallbackLast) {
      entry.fallbackLast.endedAt = this.#now();
      entry.fallbackLast.endReason = why;
    }
    const message = fallbackEndMessage(entry.plan, why);
    this.#log.info("fallback ended", { plan: entry.key, message });
    const state = this.#hpas.get(entry.hpaKey);
    if (state) this.#events.notify(state.obj, "Normal", FALLBACK_ENDED_REASON, message);
  }
}

/** Every plan of `hpas` with a fallback: whether it is active, and its consecutive failures. */
export function fallbackStatus(hpas: Iterable<HpaState>): FallbackStatus[] {
  const out: FallbackStatus[] = [];
  for (const h of hpas) {
    for (const e of h.plans.values()) {
      if (!e.plan.fallback) continue;
      let failures = e.failures;
      for (const i of e.formula?.inputs ?? []) failures = Math.max(failures, i.entry.failures);
      out.push({
        hpa: { ...e.plan.hpa },
        metricType: e.plan.metricType,
        metricName: e.plan.metricName,
        active: e.fallbackOn,
        consecutiveFailures: failures,
        ...(e.fallbackLast ? { last: { ...e.fallbackLast } } : {}),
      });
    }
  }
  return out;
}
