/**
 * What KEDA v2.20.2's scale loop does with a ScaledObject's target each polling interval
 * (`pkg/scaling/executor/scale_scaledobjects.go RequestScale`), as a pure decision: from the
 * triggers' activity and errors, the target's current replicas and the times involved, the
 * replicas to set on `/scale` (to and from zero, or idle, or the minimum), the event, the
 * `lastActiveTime` to record, the conditions and `triggersActivity`. Issue 48 wires it.
 *
 * @module
 */
import { KEDA_PAUSED_SCALE_IN, KEDA_PAUSED_SCALE_OUT } from "./names.ts";
import { kedaBoolAnnotation, type ScaledObject } from "./scaled_object.ts";
import { type KedaCondition, type KedaEvent, setCondition } from "./status.ts";

/** The annotations of pausing and forced activation. */
export const KEDA_PAUSED = "autoscaling.keda.sh/paused";
export const KEDA_PAUSED_REPLICAS = "autoscaling.keda.sh/paused-replicas";
export const KEDA_FORCE_ACTIVATION = "autoscaling.keda.sh/force-activation";

const DEFAULT_COOLDOWN_SECONDS = 300;
const DEFAULT_INITIAL_COOLDOWN_SECONDS = 0;

/** What the loop knows when it decides. */
export interface KedaLoopState {
  /** Some trigger is active (value above its activation threshold, without error). */
  active: boolean;
  /** Some trigger failed. */
  error: boolean;
  /** The active triggers' metric names, in order (for the event). */
  activeTriggers: readonly string[];
  currentReplicas: number;
  /** `status.lastActiveTime` (ms), if any. */
  lastActiveTime?: number;
  /** `metadata.creationTimestamp` (ms). */
  createdAt: number;
  now: number;
  /** `status.scaleTargetKind` (`apps/v1.Deployment`), for the events. */
  scaleTargetKind: string;
  /** `status.externalMetricNames`, for `triggersActivity`. */
  externalMetricNames: readonly string[];
}

/** The loop's decision. */
export interface KedaScaleDecision {
  /** Replicas to set on the target's `/scale`, if any. */
  scaleTo?: number;
  event?: KedaEvent;
  /** `status.lastActiveTime` to record (ms). */
  lastActiveTime?: number;
  /** Conditions to set (merged into the ScaledObject's by type). */
  conditions: KedaCondition[];
  triggersActivity: Record<string, { isActive: boolean }>;
}

/** KEDA's `NeedToBePausedByAnnotation`: `paused-replicas` present, or `paused` true. */
export function kedaPausedByAnnotation(so: ScaledObject): boolean {
  return so.metadata.annotations?.[KEDA_PAUSED_REPLICAS] !== undefined ||
    kedaBoolAnnotation(so, KEDA_PAUSED);
}

/** KEDA's `RequestScale` for one polling interval; the replicas read succeeded. */
export function kedaScaleDecision(so: ScaledObject, s: KedaLoopState): KedaScaleDecision {
  const conditions: KedaCondition[] = [{
    type: "Ready",
    status: "True",
    reason: "ScaledObjectReady",
    message: "ScaledObject is defined correctly and is ready for scaling",
  }];
  const activeSet = new Set(s.activeTriggers);
  const triggersActivity: Record<string, { isActive: boolean }> = {};
  for (const name of s.externalMetricNames) {
    triggersActivity[name] = { isActive: activeSet.has(name) };
  }
  const out: KedaScaleDecision = { conditions, triggersActivity };
  const set = (c: KedaCondition): void => {
    out.conditions = setCondition(out.conditions, c);
  };
  if (kedaPausedByAnnotation(so)) {
    set({
      type: "Paused",
      status: "True",
      reason: "ScaledObjectPaused",
      message: "ScaledObject is paused",
    });
    return out;
  }
  const spec = so.spec;
  const min = spec.minReplicaCount ?? 0;
  const target = `${s.scaleTargetKind} ${
    so.metadata.namespace ?? "default"
  }/${spec.scaleTargetRef.name}`;
  const forced = kedaBoolAnnotation(so, KEDA_FORCE_ACTIVATION);
  if (s.active || forced) {
    set({
      type: "Active",
      status: "True",
      reason: "ScalerActive",
      message: forced
        ? "Scaling is performed because activation is being forced by annotation"
        : "Scaling is performed because triggers are active",
    });
    if (
      (spec.idleReplicaCount !== undefined && s.currentReplicas < min) || s.currentReplicas === 0
    ) {
      if (kedaBoolAnnotation(so, KEDA_PAUSED_SCALE_OUT)) return out;
      const replicas = spec.minReplicaCount !== undefined && spec.minReplicaCount > 0
        ? spec.minReplicaCount
        : 1;
      out.scaleTo = replicas;
      out.lastActiveTime = s.now;
      out.event = {
        type: "Normal",
        reason: "KEDAScaleTargetActivated",
        message: forced
          ? `Scaled ${target} from ${s.currentReplicas} to ${replicas}, caused by forced activation annotation`
          : `Scaled ${target} from ${s.currentReplicas} to ${replicas}, triggered by ${
            s.activeTriggers.join(";")
          }`,
      };
    } else if (s.error) {
      set({
        type: "Ready",
        status: "Unknown",
        reason: "PartialTriggerError",
        message: "Some triggers defined in ScaledObject are not working correctly",
      });
    } else out.lastActiveTime = s.now;
    return out;
  }
  set({
    type: "Active",
    status: "False",
    reason: "ScalerNotActive",
    message: "Scaling is not performed because triggers are not active",
  });
  if (s.error && spec.fallback !== undefined && spec.fallback.replicas !== 0) {
    // the HPA falls back to fallback.replicas: never to zero here
    return out;
  }
  if (s.error && spec.fallback === undefined) {
    set({
      type: "Ready",
      status: "False",
      reason: "TriggerError",
      message: "Triggers defined in ScaledObject are not working correctly",
    });
    return out;
  }
  if (
    (spec.idleReplicaCount !== undefined && s.currentReplicas > spec.idleReplicaCount) ||
    (s.currentReplicas > 0 && min === 0)
  ) {
    if (kedaBoolAnnotation(so, KEDA_PAUSED_SCALE_IN)) return out;
    const cooldown = (spec.cooldownPeriod ?? DEFAULT_COOLDOWN_SECONDS) * 1000;
    const initial = (spec.initialCooldownPeriod ?? DEFAULT_INITIAL_COOLDOWN_SECONDS) * 1000;
    const cooled = s.lastActiveTime === undefined
      ? s.createdAt + initial < s.now
      : s.lastActiveTime + cooldown < s.now;
    if (!cooled) {
      set({
        type: "Active",
        status: "False",
        reason: "ScalerCooldown",
        message: "Scaler cooling down because triggers are not active",
      });
      return out;
    }
    const replicas = spec.idleReplicaCount ?? spec.minReplicaCount ?? 0;
    out.scaleTo = replicas;
    out.event = {
      type: "Normal",
      reason: "KEDAScaleTargetDeactivated",
      message: `Deactivated ${target} from ${s.currentReplicas} to ${replicas}`,
    };
    return out;
  }
  if (spec.idleReplicaCount === undefined && s.currentReplicas < min) out.scaleTo = min;
  return out;
}
