/**
 * The ScaledObject status KEDA v2.20.2's operator writes when it reconciles one
 * (`controllers/keda/scaledobject_controller.go`, `apis/keda/v1alpha1/condition_types.go`,
 * `gvkr.go`), as pure functions: the scale target's GVKR, the conditions (no
 * `lastTransitionTime`, KEDA's reasons and messages) and the fields that come with the HPA.
 *
 * @module
 */
import type { KedaHpaResult } from "./hpa.ts";
import { kedaUsesModifiers, type ScaledObject } from "./scaled_object.ts";

/** A condition as KEDA writes it. */
export interface KedaCondition {
  type: "Ready" | "Active" | "Fallback" | "Paused" | "HPAActive";
  status: "True" | "False" | "Unknown";
  reason?: string;
  message?: string;
}

/** `status.scaleTargetGVKR`: all four keys always present. */
export interface KedaGvkr {
  group: string;
  version: string;
  kind: string;
  resource: string;
}

/**
 * KEDA's `ParseGVKR`: `apps/v1` and `Deployment` by default; Deployment and StatefulSet map to
 * their resources without asking the cluster; any other kind asks `restMapping` (group, kind,
 * version) for its resource. Throws Go's error for a group/version with three parts or more.
 */
export function kedaScaleTarget(
  ref: { apiVersion?: string; kind?: string },
  restMapping: (group: string, kind: string, version: string) => string,
): KedaGvkr {
  const gv = ref.apiVersion || "apps/v1";
  const parts = gv.split("/");
  if (parts.length > 2) throw new Error(`unexpected GroupVersion string: ${gv}`);
  const [group, version] = parts.length === 1 ? ["", parts[0]] : [parts[0], parts[1]];
  const kind = ref.kind || "Deployment";
  const resource = kind === "Deployment"
    ? "deployments"
    : kind === "StatefulSet"
    ? "statefulsets"
    : restMapping(group, kind, version);
  return { group, version, kind, resource };
}

/** KEDA's `GVKString()`: `apps/v1.Deployment`, `/v1.Pod` for the core group. */
export function kedaGvkString(g: KedaGvkr): string {
  return `${g.group}/${g.version}.${g.kind}`;
}

const INITIAL: readonly KedaCondition[] = [
  { type: "Ready", status: "Unknown" },
  { type: "Active", status: "Unknown" },
  { type: "Fallback", status: "Unknown" },
  { type: "Paused", status: "False" },
];

/** KEDA's `SetCondition`: the condition of that type replaced where it is, else appended. */
export function setCondition(
  conditions: readonly KedaCondition[],
  c: KedaCondition,
): KedaCondition[] {
  const out = conditions.map((x) => ({ ...x }));
  const i = out.findIndex((x) => x.type === c.type);
  if (i < 0) out.push({ ...c });
  else out[i] = { ...c };
  return out;
}

/** The conditions, initialized as KEDA does when any of the four is missing. */
export function initializedConditions(
  current: readonly KedaCondition[] | undefined,
): KedaCondition[] {
  const have = current ?? [];
  const complete = INITIAL.every((i) => have.some((c) => c.type === i.type));
  return complete ? have.map((c) => ({ ...c })) : INITIAL.map((c) => ({ ...c }));
}

/** KEDA's `HasValidFallback` for a ScaledObject (modifiers need an integer target > 0). */
export function kedaHasValidFallback(so: ScaledObject): boolean {
  const f = so.spec.fallback;
  if (f === undefined) return false;
  if (f.failureThreshold < 0 || f.replicas < 0) return false;
  if (!kedaUsesModifiers(so)) return true;
  const target = so.spec.advanced?.scalingModifiers?.target ?? "";
  return /^[+-]?\d+$/.test(target) && Number(target) > 0;
}

/** An event KEDA's controller emits on the ScaledObject. */
export interface KedaEvent {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
}

/**
 * The conditions after a reconcile that made `result` (the HPA, or KEDA's error message), and
 * the event KEDA emits with them: Warning `ScaledObjectCheckFailed` on an error, Normal
 * `ScaledObjectReady` when it becomes ready. The Fallback condition says no fallback is active
 * whenever the ScaledObject has no valid one, whatever the result.
 */
export function kedaReconciledConditions(
  so: ScaledObject,
  current: readonly KedaCondition[] | undefined,
  result: KedaHpaResult,
): { conditions: KedaCondition[]; event: KedaEvent | null } {
  let c = initializedConditions(current);
  let event: KedaEvent | null = null;
  if ("error" in result) {
    c = setCondition(c, {
      type: "Ready",
      status: "False",
      reason: "ScaledObjectCheckFailed",
      message: result.error,
    });
    c = setCondition(c, {
      type: "Active",
      status: "Unknown",
      reason: "UnknownState",
      message: "ScaledObject check failed",
    });
    event = { type: "Warning", reason: "ScaledObjectCheckFailed", message: result.error };
  } else {
    const ready = c.find((x) => x.type === "Ready");
    if (ready === undefined || ready.status !== "True") {
      event = {
        type: "Normal",
        reason: "ScaledObjectReady",
        message: "ScaledObject is ready for scaling",
      };
    }
    c = setCondition(c, {
      type: "Ready",
      status: "True",
      reason: "ScaledObjectReady",
      message: "ScaledObject is defined correctly and is ready for scaling",
    });
  }
  if (!kedaHasValidFallback(so)) {
    c = setCondition(c, {
      type: "Fallback",
      status: "False",
      reason: "NoFallbackFound",
      message: "No fallbacks are active on this scaled object",
    });
  }
  return { conditions: c, event };
}
