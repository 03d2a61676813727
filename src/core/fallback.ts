/**
 * Fallback: the value to serve when a metric's source keeps failing, so that the HPA controller
 * computes a chosen replica count instead of freezing (KEDA's `fallback`, in our annotation
 * grammar). A metric's fallback comes from its reserved keys `fallback-failure-threshold`,
 * `fallback-replicas` and `fallback-behavior`; it is active while the consecutive failed
 * collections are strictly more than the threshold. The replica count R follows the behaviour,
 * and the served value is the one from which the HPA's replica algorithm computes R.
 *
 * @module
 */
import { quote } from "./quote.ts";

/** How the fallback replica count follows the scale target's current replicas. */
export type FallbackBehavior =
  | "static"
  | "currentReplicas"
  | "currentReplicasIfHigher"
  | "currentReplicasIfLower"
  | "scalingModifiers";

/** A metric's fallback, from its reserved annotation keys. */
export interface Fallback {
  /** Fallback is active once the consecutive failures are strictly more than this. */
  failureThreshold: number;
  /** `fallback-replicas`. */
  replicas: number;
  /** `fallback-behavior`; `static` when not given. */
  behavior: FallbackBehavior;
}

/** The reserved key of the failure threshold. */
export const FALLBACK_FAILURE_THRESHOLD_KEY = "fallback-failure-threshold";
/** The reserved key of the fallback replica count. */
export const FALLBACK_REPLICAS_KEY = "fallback-replicas";
/** The reserved key of the fallback behaviour. */
export const FALLBACK_BEHAVIOR_KEY = "fallback-behavior";

/** The reserved keys of a fallback, in the order they are checked. */
export const FALLBACK_KEYS: readonly string[] = [
  FALLBACK_FAILURE_THRESHOLD_KEY,
  FALLBACK_REPLICAS_KEY,
  FALLBACK_BEHAVIOR_KEY,
];

const PLAIN_BEHAVIORS: readonly FallbackBehavior[] = [
  "static",
  "currentReplicas",
  "currentReplicasIfHigher",
  "currentReplicasIfLower",
];

/** KEDA's fields are int32. */
const MAX_INT32 = 2_147_483_647;

/** Options of {@linkcode parseFallback}. */
export interface ParseFallbackOptions {
  /** The metric is a formula: only then is `fallback-behavior: scalingModifiers` valid. */
  formula: boolean;
  /**
   * Where the keys come from, for messages: the metric (`External metric queue`) and the full
   * annotation of a key. Without it, messages name the bare keys.
   */
  where?: { metric: string; annotation: (key: string) => string };
}

/** The result of {@linkcode parseFallback}: a fallback when the keys make a valid one. */
export interface ParsedFallback {
  fallback?: Fallback;
  errors: string[];
}

/**
 * Read the fallback keys of one metric: `fallback-failure-threshold` (integer >= 0),
 * `fallback-replicas` (integer >= 0), `fallback-behavior` (`static` by default; `scalingModifiers`
 * only on a formula metric). No key set: no fallback and no error. Threshold and replicas are
 * both required once any key is set.
 *
 * @example
 * ```ts
 * parseFallback({ "fallback-failure-threshold": "3", "fallback-replicas": "10" }, { formula: false });
 * // { fallback: { failureThreshold: 3, replicas: 10, behavior: "static" }, errors: [] }
 * ```
 */
export function parseFallback(
  keys: Readonly<Record<string, string | undefined>>,
  options: ParseFallbackOptions,
): ParsedFallback {
  const errors: string[] = [];
  const set = FALLBACK_KEYS.filter((k) => keys[k] !== undefined);
  if (set.length === 0) return { errors };
  const where = options.where;
  const at = (key: string): string =>
    where ? ` for ${where.metric} (annotation ${where.annotation(key)})` : "";

  const integer = (key: string): number | undefined => {
    const value = keys[key];
    if (value === undefined) return undefined;
    if (!/^[0-9]+$/.test(value)) {
      errors.push(`invalid ${key} ${quote(value)}${at(key)}: want an integer >= 0`);
      return undefined;
    }
    const n = Number(value);
    if (n > MAX_INT32) {
      errors.push(`invalid ${key} ${quote(value)}${at(key)}: want at most ${MAX_INT32}`);
      return undefined;
    }
    return n;
  };
  const failureThreshold = integer(FALLBACK_FAILURE_THRESHOLD_KEY);
  const replicas = integer(FALLBACK_REPLICAS_KEY);

  let behavior: FallbackBehavior | undefined = "static";
  const behaviorValue = keys[FALLBACK_BEHAVIOR_KEY];
  if (behaviorValue !== undefined) {
    const behaviorAt = at(FALLBACK_BEHAVIOR_KEY);
    if ((PLAIN_BEHAVIORS as readonly string[]).includes(behaviorValue)) {
      behavior = behaviorValue as FallbackBehavior;
    } else if (behaviorValue === "scalingModifiers") {
      if (options.formula) behavior = "scalingModifiers";
      else {
        behavior = undefined;
        errors.push(
          `invalid ${FALLBACK_BEHAVIOR_KEY} ${
            quote(behaviorValue)
          }${behaviorAt}: scalingModifiers is only valid on a formula metric`,
        );
      }
    } else {
      behavior = undefined;
      const valid = options.formula ? [...PLAIN_BEHAVIORS, "scalingModifiers"] : PLAIN_BEHAVIORS;
      errors.push(
        `invalid ${FALLBACK_BEHAVIOR_KEY} ${quote(behaviorValue)}${behaviorAt}: want ${
          valid.slice(0, -1).join(", ")
        } or ${valid[valid.length - 1]}`,
      );
    }
  }

  const missing = [FALLBACK_FAILURE_THRESHOLD_KEY, FALLBACK_REPLICAS_KEY].filter((k) =>
    keys[k] === undefined
  );
  if (missing.length > 0) {
    const given = set.map((k) => `${k} ${quote(keys[k]!)}`).join(" and ");
    const add = where ? ` (add ${missing.map((k) => where.annotation(k)).join(" and ")})` : "";
    errors.push(
      `missing ${missing.join(" and ")}${where ? ` for ${where.metric}` : ""}: ${given} ${
        set.length > 1 ? "are" : "is"
      } set and a fallback needs both ${FALLBACK_FAILURE_THRESHOLD_KEY} and ${FALLBACK_REPLICAS_KEY}${add}`,
    );
  }

  if (
    errors.length > 0 || failureThreshold === undefined || replicas === undefined ||
    behavior === undefined
  ) {
    return { errors };
  }
  return { fallback: { failureThreshold, replicas, behavior }, errors };
}

/**
 * Whether fallback is active: the consecutive failed collections are strictly more than the
 * threshold (at the threshold the error is still served).
 *
 * @example
 * ```ts
 * const fallback = { failureThreshold: 3, replicas: 10, behavior: "static" } as const;
 * fallbackActive(fallback, 3); // false
 * fallbackActive(fallback, 4); // true
 * ```
 */
export function fallbackActive(fallback: Fallback, consecutiveFailures: number): boolean {
  return consecutiveFailures > fallback.failureThreshold;
}

/**
 * The replica count R the HPA must compute, from the scale target's current replicas C:
 * `static` R = replicas; `currentReplicas` R = C; `currentReplicasIfHigher` R = C if C > replicas,
 * else replicas; `currentReplicasIfLower` R = C if C < replicas, else replicas. With
 * `scalingModifiers` the formula sees a failing input as missing and only a missing result
 * falls back, to `replicas` (the formula's own value is served otherwise), so R = replicas.
 *
 * Throws when a behaviour that reads C gets a C that is not an integer >= 0.
 *
 * @example
 * ```ts
 * fallbackReplicaCount({ failureThreshold: 3, replicas: 10, behavior: "currentReplicasIfHigher" }, 6); // 10
 * ```
 */
export function fallbackReplicaCount(fallback: Fallback, currentReplicas: number): number {
  const c = currentReplicas;
  const readsCurrent = fallback.behavior !== "static" && fallback.behavior !== "scalingModifiers";
  if (readsCurrent && !(Number.isInteger(c) && c >= 0)) {
    throw new Error(
      `invalid current replicas ${c} for fallback behavior ${fallback.behavior}: want an integer >= 0`,
    );
  }
  switch (fallback.behavior) {
    case "currentReplicas":
      return c;
    case "currentReplicasIfHigher":
      return c > fallback.replicas ? c : fallback.replicas;
    case "currentReplicasIfLower":
      return c < fallback.replicas ? c : fallback.replicas;
    default:
      return fallback.replicas;
  }
}

/** Options of {@linkcode fallbackValue}. */
export interface FallbackValueOptions {
  /** The type of the metric in `spec.metrics`. */
  metricType: "Pods" | "Object" | "External";
  /** The HPA target's type; a Pods metric takes `AverageValue` only. */
  targetType: "Value" | "AverageValue";
  /** The HPA target (`value` or `averageValue`) as a number, > 0. */
  target: number;
  /** The replica count R the HPA must compute (see {@linkcode fallbackReplicaCount}). */
  replicas: number;
  /**
   * Running and Ready pods of the scale target; read by `Value` targets and Pods metrics only,
   * where 0 or unknown is an error.
   */
  readyPods?: number;
}

/**
 * The value to serve so that the HPA controller computes R:
 * - External or Object with an `AverageValue` target: `R x target` (the HPA computes
 *   `ceil(value / target)`);
 * - `Value` target: `R x target / readyPods` (the HPA computes `ceil(value / target x readyPods)`);
 * - Pods (`AverageValue`): the value for every ready pod, `R x target / readyPods` (the HPA
 *   computes `ceil(average / target x pods)`).
 *
 * The result is truncated toward zero at milli precision, as KEDA serves it: a value a little
 * under the exact one still makes the HPA's ceiling land on R, where one a little over would
 * give R + 1. Within the HPA's tolerance (10% by default) of the current size, the HPA keeps
 * the current size instead.
 *
 * Throws an Error for a target that is not a number > 0, an R that is not an integer >= 0,
 * a Pods metric with a `Value` target, and no (or unknown) ready pods where they are needed.
 *
 * @example
 * ```ts
 * fallbackValue({ metricType: "External", targetType: "AverageValue", target: 10, replicas: 6 }); // 60
 * fallbackValue({ metricType: "External", targetType: "Value", target: 10, replicas: 10, readyPods: 3 }); // 33.333
 * ```
 */
export function fallbackValue(options: FallbackValueOptions): number {
  const { metricType, targetType, target, replicas, readyPods } = options;
  if (!(Number.isFinite(target) && target > 0)) {
    throw new Error(`invalid fallback target ${target}: want a number > 0`);
  }
  if (!(Number.isInteger(replicas) && replicas >= 0)) {
    throw new Error(`invalid fallback replicas ${replicas}: want an integer >= 0`);
  }
  if (metricType === "Pods" && targetType !== "AverageValue") {
    throw new Error(`invalid target type ${targetType} for a Pods metric: want AverageValue`);
  }
  let perTarget = replicas;
  if (targetType === "Value" || metricType === "Pods") {
    const what = metricType === "Pods" ? "a Pods metric" : `a Value target`;
    if (readyPods === undefined) {
      throw new Error(`cannot compute the fallback value of ${what}: the ready pods are unknown`);
    }
    if (!(Number.isInteger(readyPods) && readyPods >= 0)) {
      throw new Error(`invalid ready pods ${readyPods}: want an integer >= 0`);
    }
    if (readyPods === 0) {
      throw new Error(
        `cannot compute the fallback value of ${what} for ${replicas} replicas: no ready pods`,
      );
    }
    perTarget = replicas / readyPods;
  }
  // KEDA: MilliQuantity(int64(target * 1000 * R)), in this order
  const milli = Math.trunc(target * 1000 * perTarget);
  return milli === 0 ? 0 : milli / 1000;
}
