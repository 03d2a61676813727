/**
 * What the engine serves for a metric whose source keeps failing (issue 21's fallback), and the
 * value of a formula's input: the glue between the core's pure maths (core/fallback.ts,
 * core/formula.ts) and the cluster (the scale target's replicas, its ready pods).
 */
import type { ClusterView, Kind } from "../cluster/types.ts";
import { selectReadyPods } from "../collectors/pod_json_path.ts";
import { scaleTargetKind } from "../collectors/prometheus.ts";
import { fallbackReplicaCount, fallbackValue } from "../core/fallback.ts";
import type { Fallback } from "../core/fallback.ts";
import { formatQuantity, parseQuantity } from "../core/kubernetes/quantity.ts";
import type { MetricPlan } from "../core/types.ts";
import type { Sample } from "../store/types.ts";

/** What a fallback value was computed from (for events and logs). */
export interface FallbackDecision {
  /** The replica count R the HPA is to compute. */
  replicas: number;
  /** The value served (for a Pods metric, the value of every ready pod). */
  value: number;
  samples: Sample[];
}

/** The kinds a plan's fallback reads: the scale target (replicas, selector) and its pods. */
export function fallbackKinds(plan: MetricPlan): Kind[] {
  const fb = plan.fallback;
  if (!fb) return [];
  const kind = scaleTargetKind(plan.scaleTargetRef);
  const readsCurrent = fb.behavior !== "static" && fb.behavior !== "scalingModifiers";
  const readsPods = plan.target.type === "Value" || plan.metricType === "Pods";
  const kinds: Kind[] = [];
  if (kind !== undefined && (readsCurrent || readsPods)) kinds.push(kind);
  if (readsPods) kinds.push("Pod");
  return kinds;
}

/**
 * `spec.replicas` of the scale target (nil counts as 1, as KEDA reads it). Throws when the
 * target cannot be read.
 */
function currentReplicas(cluster: ClusterView, plan: MetricPlan): number {
  const ref = plan.scaleTargetRef;
  const name = `${ref.kind} ${plan.hpa.namespace}/${ref.name}`;
  const kind = scaleTargetKind(ref);
  if (kind === undefined) {
    throw new Error(
      `cannot read the replicas of scale target ${name}: want a Deployment, StatefulSet or Rollout`,
    );
  }
  const obj = cluster.get(kind, plan.hpa.namespace, ref.name);
  if (!obj) throw new Error(`scale target ${name} not found`);
  const replicas = obj.spec?.replicas ?? 1;
  if (typeof replicas !== "number" || !Number.isInteger(replicas) || replicas < 0) {
    throw new Error(`scale target ${name} has spec.replicas ${JSON.stringify(replicas)}`);
  }
  return replicas;
}

/** The HPA target of a plan as a number (the `value` or `averageValue` its type reads). */
export function targetNumber(plan: MetricPlan): number {
  const t = plan.target;
  const raw = t.type === "Value" ? t.value : t.averageValue;
  return parseQuantity(raw ?? "");
}

/**
 * The samples that make the HPA controller compute the fallback replica count of `plan`
 * (with `replicas` instead of the behaviour's count when given: a formula whose result is nil
 * under `scalingModifiers` falls back to `fallback-replicas`). Throws an Error saying why
 * there is none (the scale target or its pods cannot be read, no ready pods for a Value target).
 */
export function fallbackSamples(
  cluster: ClusterView,
  plan: MetricPlan,
  fallback: Fallback,
  at: number,
  replicas?: number,
): FallbackDecision {
  const readsCurrent = replicas === undefined && fallback.behavior !== "static" &&
    fallback.behavior !== "scalingModifiers";
  const r = replicas ??
    fallbackReplicaCount(fallback, readsCurrent ? currentReplicas(cluster, plan) : 0);
  const targetType = plan.target.type === "Value" ? "Value" : "AverageValue";
  let pods: string[] | undefined;
  if (targetType === "Value" || plan.metricType === "Pods") {
    pods = selectReadyPods(cluster, {
      namespace: plan.hpa.namespace,
      scaleTargetRef: plan.scaleTargetRef,
      minReadyAgeSeconds: 0,
      now: at,
    }).pods.filter((p) => p.status?.phase === undefined || p.status.phase === "Running")
      .map((p) => p.metadata.name);
  }
  const value = fallbackValue({
    metricType: plan.metricType,
    targetType,
    target: targetNumber(plan),
    replicas: r,
    readyPods: pods?.length,
  });
  const samples: Sample[] = plan.metricType === "Pods"
    ? pods!.map((objectName) => ({ objectName, value, timestamp: at }))
    : [{ value, timestamp: at }];
  return { replicas: r, value, samples };
}

/**
 * The value of a formula input from its latest samples: one value, or the sum of several (the
 * pods of a Pods input, the series of an External one). Throws when there is none.
 */
export function inputValue(samples: readonly Sample[], what: string): number {
  if (samples.length === 0) throw new Error(`${what} returned no value`);
  let sum = 0;
  for (const s of samples) sum += s.value;
  return sum;
}

/** The Warning event's message when fallback starts. */
export function fallbackStartMessage(
  plan: MetricPlan,
  cause: string,
  decision: FallbackDecision,
): string {
  const fb = plan.fallback!;
  return `fallback of ${plan.metricType} metric ${plan.metricName}: ${cause}, more than fallback-failure-threshold ${fb.failureThreshold}; serving ${
    formatQuantity(decision.value)
  }${
    plan.metricType === "Pods" ? " for every ready pod" : ""
  } so that the HPA computes ${decision.replicas} replicas (fallback-behavior ${fb.behavior})`;
}

/** The Normal event's message when fallback ends. */
export function fallbackEndMessage(plan: MetricPlan, why: string): string {
  return `fallback of ${plan.metricType} metric ${plan.metricName} ended: ${why}`;
}
