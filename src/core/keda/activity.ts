/**
 * Whether a ScaledObject is active, as KEDA v2.20.2's scale loop decides it each polling interval
 * (`pkg/scaling/scale_handler.go getScaledObjectState`, `getScalerState`, and each scaler's
 * `GetMetricsAndActivity`): a trigger is active when its value is above its activation
 * threshold (cron: inside its window), or when its fallback answers; a trigger that failed
 * without a fallback answer is an error; cpu and memory triggers are neither, but a
 * ScaledObject of only cpu and memory triggers is active unless something failed. With
 * `scalingModifiers`, activity is the composite value above `activationTarget` (0 by default),
 * and none when any trigger failed.
 *
 * @module
 */
import type { ParsedValue } from "./typed_config.ts";
import type { ScaledObject } from "./scaled_object.ts";

/** One External trigger metric's last collection, as the loop reads it. */
export interface KedaReading {
  /** The trigger's index in `spec.triggers`. */
  index: number;
  /** Its External metric's name. */
  metricName: string;
  /** The trigger's typed config (core/keda/triggers.ts). */
  values: Readonly<Record<string, ParsedValue>>;
  /** The value collected last, when that collection succeeded. */
  value?: number;
  /** The last collection failed (and no fallback answered). */
  error?: string;
  /** The fallback answers for it (failures past the threshold). */
  fallback?: boolean;
}

/** The loop's view of a ScaledObject's triggers. */
export interface KedaActivity {
  active: boolean;
  error: boolean;
  /** The active triggers' metric names, in trigger order (the event names them). */
  activeTriggers: string[];
  /** Some trigger's fallback answers. */
  fallback: boolean;
}

const num = (v: ParsedValue | undefined): number => (typeof v === "number" ? v : 0);

/** The activation threshold of a trigger type's value (the value must be above it). */
export function kedaActivationThreshold(
  type: string,
  values: Readonly<Record<string, ParsedValue>>,
): number {
  switch (type) {
    case "prometheus":
      return num(values.activationThreshold);
    case "metrics-api":
      return num(values.activationTargetValue);
    case "aws-sqs-queue":
      return num(values.activationQueueLength);
    case "influxdb":
      return num(values.activationThresholdValue);
    default:
      // cron: its value is desiredReplicas (never 0) inside the window, 0 outside
      return 0;
  }
}

/**
 * The ScaledObject's activity from its External triggers' readings (in trigger order) and, with
 * `scalingModifiers`, the composite value computed from them (undefined when it could not be).
 */
export function kedaActivity(
  so: ScaledObject,
  readings: readonly KedaReading[],
  composite?: number,
): KedaActivity {
  let active = false;
  let error = false;
  let fallback = false;
  const activeTriggers: string[] = [];
  for (const r of readings) {
    const t = so.spec.triggers[r.index];
    if (r.fallback) {
      fallback = true;
      active = true;
      activeTriggers.push(r.metricName);
      continue;
    }
    if (r.error !== undefined || r.value === undefined) {
      error = true;
      continue;
    }
    if (r.value > kedaActivationThreshold(t.type, r.values)) {
      active = true;
      activeTriggers.push(r.metricName);
    }
  }
  const modifiers = so.spec.advanced?.scalingModifiers;
  if (modifiers?.formula) {
    active = false;
    activeTriggers.length = 0;
    if (!error && composite !== undefined) {
      const threshold = modifiers.activationTarget ? Number(modifiers.activationTarget) : 0;
      if (composite > threshold) {
        active = true;
        activeTriggers.push("composite-metric");
      }
    }
  }
  const resources = so.spec.triggers.filter((t) => t.type === "cpu" || t.type === "memory");
  if (so.spec.triggers.length <= resources.length && !error) active = true;
  return { active, error, activeTriggers, fallback };
}
