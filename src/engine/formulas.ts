/**
 * Formula plans: each is wired to the entries of its inputs (the other plans of its HPA) on
 * every reconcile of the HPA, and computed after their collections from what they hold: the
 * value (truncated to milli), the fallback value when an input is past its threshold, or an
 * error naming the input.
 */
import { formatDuration } from "../core/duration.ts";
import { fallbackActive } from "../core/fallback.ts";
import { compileFormula, evaluateFormula, truncateToMilli } from "../core/formula.ts";
import type { MetricPlan } from "../core/types.ts";
import type { ConflictIndex } from "./conflict_index.ts";
import { errorText } from "./error_text.ts";
import type { EventReporter } from "./event_reporter.ts";
import type { FallbackEpisodes } from "./fallback.ts";
import { inputValue } from "./fallback_values.ts";
import type { Logger } from "./logger.ts";
import type { EngineStore, HpaState, PlanEntry } from "./state.ts";

/** A formula plan's compiled expression, not wired yet; throws when it does not compile. */
export function compilePlanFormula(plan: MetricPlan): NonNullable<PlanEntry["formula"]> {
  return { compiled: compileFormula(plan.formula?.expression ?? ""), inputs: [] };
}

/** What {@linkcode Formulas} reads and writes. */
export interface FormulasOptions {
  store: Pick<EngineStore, "recordSuccess" | "recordFailure">;
  /** The engine's HPAs (the events go to the HPA of the plan). */
  hpas: ReadonlyMap<string, HpaState>;
  events: EventReporter;
  conflicts: ConflictIndex;
  fallback: FallbackEpisodes;
  now: () => number;
  /** `--metrics-ttl`, ms: a formula never reads an input value older than that. */
  ttlMs: number;
  logger: Logger;
}

/**
 * Wires and computes the formula plans.
 *
 * @example
 * ```ts
 * const formulas = new Formulas({ store, hpas, events, conflicts, fallback, now, ttlMs, logger });
 * formulas.wire(hpaState); // after a reconcile of the HPA
 * formulas.evaluateDependents(job.subscribers.values(), now()); // after a collection
 * ```
 */
export class Formulas {
  readonly #store: Pick<EngineStore, "recordSuccess" | "recordFailure">;
  readonly #hpas: ReadonlyMap<string, HpaState>;
  readonly #events: EventReporter;
  readonly #conflicts: ConflictIndex;
  readonly #fallback: FallbackEpisodes;
  readonly #now: () => number;
  readonly #ttlMs: number;
  readonly #log: Logger;

  /** Computes and reports through what `options` gives. */
  constructor(options: FormulasOptions) {
    this.#store = options.store;
    this.#hpas = options.hpas;
    this.#events = options.events;
    this.#conflicts = options.conflicts;
    this.#fallback = options.fallback;
    this.#now = options.now;
    this.#ttlMs = options.ttlMs;
    this.#log = options.logger;
  }

  /** Connect each formula of an HPA to its input entries, and compute it from what they hold. */
  wire(state: HpaState): void {
    let any = false;
    for (const e of state.plans.values()) {
      e.dependents = null;
      if (e.formula) any = true;
    }
    if (!any) return;
    const at = this.#now();
    for (const e of state.plans.values()) {
      if (!e.formula || e.problem !== null) continue;
      e.formula.inputs = [];
      for (const input of e.plan.formula?.inputs ?? []) {
        const entry = state.plans.get(input.planKey);
        if (!entry) continue;
        e.formula.inputs.push({ identifier: input.identifier, entry });
        (entry.dependents ??= new Set()).add(e);
      }
      this.#evaluate(e, at);
    }
  }

  /** Compute the formulas that read any of `entries`, each once. */
  evaluateDependents(entries: Iterable<PlanEntry>, at: number): void {
    let formulas: Set<PlanEntry> | null = null;
    for (const e of entries) {
      if (!e.dependents) continue;
      for (const d of e.dependents) (formulas ??= new Set()).add(d);
    }
    if (formulas) { for (const f of formulas) this.#evaluate(f, at); }
  }

  /**
   * Compute a formula from its inputs' latest collections: the value (truncated to milli), the
   * fallback value when an input is past the threshold, or an error naming the input. Nothing
   * happens while an input has not been collected yet.
   */
  #evaluate(entry: PlanEntry, at: number): void {
    const f = entry.formula;
    if (!f || entry.problem !== null) return;
    const plan = entry.plan;
    const fb = plan.fallback;
    const values: Record<string, number | undefined> = {};
    const past: string[] = [];
    // an input in error below the threshold fails the formula, unless another input is past
    // it and the behaviour serves the fallback value whatever the formula would say
    let failure: string | null = null;
    let pending = false;
    for (const { identifier, entry: input } of f.inputs) {
      const what =
        `input \`${identifier}\` (${input.plan.metricType} metric ${input.plan.metricName})`;
      const job = input.job;
      if (input.problem !== null || !job) {
        failure ??= `${what} cannot be collected: ${input.problem ?? "no collector"}`;
        continue;
      }
      if (input.failures > 0) {
        if (fb && fallbackActive(fb, input.failures)) {
          past.push(`${what} failed ${input.failures} consecutive collections`);
          values[identifier] = undefined;
        } else failure ??= `${what} failed: ${job.lastError ?? "collection failed"}`;
        continue;
      }
      if (!job.last) {
        pending = true; // not collected yet
        continue;
      }
      if (job.last.at < at - this.#ttlMs) {
        failure ??= `${what} has no value younger than the metrics TTL ${
          formatDuration(this.#ttlMs / 1000)
        }`;
        continue;
      }
      try {
        values[identifier] = inputValue(job.last.samples, what);
      } catch (e) {
        failure ??= errorText(e);
      }
    }
    if (fb && past.length > 0 && fb.behavior !== "scalingModifiers") {
      this.#fallback.serve(entry, past.join("; "), at);
      return;
    }
    if (failure !== null) return this.#failed(entry, failure, at);
    if (pending) return;
    let result: number | null;
    try {
      result = evaluateFormula(f.compiled, values);
    } catch (e) {
      return this.#failed(entry, `formula ${plan.formula?.expression}: ${errorText(e)}`, at);
    }
    if (result === null) {
      if (!fb) {
        return this.#failed(
          entry,
          `formula ${plan.formula?.expression} evaluated to nil and no fallback is configured`,
          at,
        );
      }
      const cause = past.length > 0
        ? `${past.join("; ")}, and the formula evaluated to nil`
        : "the formula evaluated to nil";
      this.#fallback.serve(entry, cause, at, fb.replicas);
      return;
    }
    this.#store.recordSuccess(entry.key, [{ value: truncateToMilli(result), timestamp: at }], at);
    if (entry.formulaError !== null) {
      this.#log.info("formula recovered", { plan: entry.key });
      entry.formulaError = null;
    }
    if (!this.#conflicts.has(entry.key)) this.#events.clear(entry.key);
    this.#fallback.end(entry, "its inputs answer again");
  }

  /** A formula cannot be computed: no value is served (never a stale one), and it is said. */
  #failed(entry: PlanEntry, error: string, at: number): void {
    this.#store.recordSuccess(entry.key, [], at);
    this.#store.recordFailure(entry.key, error, at);
    if (entry.formulaError !== error) {
      this.#log.error("formula failed", { plan: entry.key, error });
      entry.formulaError = error;
    }
    this.#fallback.end(entry, "an error is served instead");
    const state = this.#hpas.get(entry.hpaKey);
    if (state) {
      this.#events.report(
        entry.key,
        state.obj,
        `failed to compute ${entry.plan.metricType} metric ${entry.plan.metricName}: ${error}`,
        false,
      );
    }
  }
}
