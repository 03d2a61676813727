/**
 * KEDA v2.20.2's fallback for a ScaledObject's metric (`pkg/fallback/fallback.go`), as a pure
 * step: each read of a metric (the HPA's, or the scale loop's) counts in `status.health`, and
 * past `failureThreshold` consecutive failures the read is answered with
 * `fallback replicas × target` (the behavior choosing the replicas), so that the HPA scales to
 * them. Only a ScaledObject with a valid fallback tracks health; the Fallback condition says
 * whether any metric is falling back.
 *
 * @module
 */
import { formatQuantity } from "../kubernetes/quantity.ts";
import { KEDA_COMPOSITE_METRIC } from "./names.ts";
import { kedaUsesModifiers, type ScaledObject } from "./scaled_object.ts";
import { type KedaCondition, kedaHasValidFallback } from "./status.ts";

/** One metric's `status.health` entry. */
export interface KedaHealth {
  numberOfFailures: number;
  status: "Happy" | "Failing";
}

/** What a read of the metric gave. */
export type KedaReadOutcome = { ok: true } | { ok: false; error: string };

/** The ScaledObject's state a fallback may need (read only when the behavior asks). */
export interface KedaFallbackContext {
  /** The target's current replicas (`/scale`), for the currentReplicas* behaviors. */
  currentReplicas?: number;
  /** Running and ready pods of the target, for a `Value` target. */
  readyReplicas?: number;
  /** The metric's HPA target: its type and value. */
  target: { type: "AverageValue" | "Value"; value: number };
}

/** What to answer the read with, and what to write. */
export interface KedaFallbackStep {
  /** The value read, an error, the fallback value, or the `-1` placeholder of `scalingModifiers`. */
  answer:
    | { kind: "value" }
    | { kind: "error"; error: string }
    | { kind: "fallback"; metricName: string; value: string }
    | { kind: "placeholder"; metricName: string; value: "-1" };
  /** `status.health` after the read, or null when it is not tracked (nothing to write). */
  health: Record<string, KedaHealth> | null;
  /** The Fallback condition after the read, when health is tracked. */
  condition: KedaCondition | null;
}

function fallbackCondition(
  health: Record<string, KedaHealth>,
  threshold: number,
): KedaCondition {
  const exceeded = Object.values(health).some((h) =>
    h.status === "Failing" && h.numberOfFailures > threshold
  );
  return exceeded
    ? {
      type: "Fallback",
      status: "True",
      reason: "FallbackExists",
      message: "At least one trigger is falling back on this scaled object",
    }
    : {
      type: "Fallback",
      status: "False",
      reason: "NoFallbackFound",
      message: "No fallbacks are active on this scaled object",
    };
}

/**
 * One read of `metricName` with fallback, as KEDA's `GetMetricsWithFallback`: a success resets
 * the metric's health to 0 failures (Happy); a failure counts one more (Failing) and, past the
 * threshold, answers the fallback value (`NewMilliQuantity(target × 1000 × replicas)`, the
 * replicas divided by the ready ones for a `Value` target); without a valid fallback the error
 * stands and health is not touched. Throws when the behavior needs a count the context lacks.
 */
export function kedaFallbackStep(
  so: ScaledObject,
  health: Readonly<Record<string, KedaHealth>> | undefined,
  metricName: string,
  outcome: KedaReadOutcome,
  ctx: KedaFallbackContext,
): KedaFallbackStep {
  const fallback = so.spec.fallback;
  const tracked = fallback !== undefined && kedaHasValidFallback(so);
  if (!tracked) {
    return {
      answer: outcome.ok ? { kind: "value" } : { kind: "error", error: outcome.error },
      health: null,
      condition: null,
    };
  }
  const next: Record<string, KedaHealth> = { ...health };
  if (outcome.ok) {
    next[metricName] = { numberOfFailures: 0, status: "Happy" };
    return {
      answer: { kind: "value" },
      health: next,
      condition: fallbackCondition(next, fallback.failureThreshold),
    };
  }
  next[metricName] = {
    numberOfFailures: (health?.[metricName]?.numberOfFailures ?? 0) + 1,
    status: "Failing",
  };
  const condition = fallbackCondition(next, fallback.failureThreshold);
  const error = { kind: "error" as const, error: outcome.error };
  if (next[metricName].numberOfFailures <= fallback.failureThreshold) {
    return { answer: error, health: next, condition };
  }
  const behavior = fallback.behavior ?? "static";
  if (behavior === "scalingModifiers") {
    return { answer: { kind: "placeholder", metricName, value: "-1" }, health: next, condition };
  }
  let replicas = fallback.replicas;
  if (behavior !== "static") {
    if (ctx.currentReplicas === undefined) {
      throw new Error("the target's current replicas are needed");
    }
    const current = ctx.currentReplicas;
    if (behavior === "currentReplicas") replicas = current;
    else if (behavior === "currentReplicasIfHigher") replicas = Math.max(current, replicas);
    else replicas = Math.min(current, replicas);
  }
  const modifiers = kedaUsesModifiers(so);
  const valueType = modifiers ? so.spec.advanced?.scalingModifiers?.metricType : ctx.target.type;
  if (valueType === "Value") {
    // per ready pod: KEDA gives up (an error) when none is ready
    if (!ctx.readyReplicas) {
      return {
        answer: { kind: "error", error: "error performing fallback" },
        health: next,
        condition,
      };
    }
    replicas /= ctx.readyReplicas;
  }
  const normalisation = modifiers
    ? Number(so.spec.advanced?.scalingModifiers?.target ?? "0")
    : ctx.target.value;
  const milli = Math.trunc(normalisation * 1000 * replicas);
  return {
    answer: {
      kind: "fallback",
      metricName: modifiers ? KEDA_COMPOSITE_METRIC : metricName,
      value: formatQuantity(milli / 1000),
    },
    health: next,
    condition,
  };
}
