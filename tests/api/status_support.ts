/**
 * Fixtures of the status page tests: HPAs planned by the real planner, and the inputs of
 * `buildStatus` made from them with a chosen history per plan.
 */
import type { KubeObject } from "../../src/cluster/types.ts";
import { planHpa, planKey } from "../../src/core/kube_metrics_adapter/plan.ts";
import type {
  StatusHistoryInput,
  StatusInput,
  StatusPlanInput,
} from "../../src/api/status_model.ts";

export const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

/** An autoscaling/v2 HPA with one External json-path metric `metric` (and `extra` metrics). */
export function externalHpa(
  name: string,
  metric: string,
  options: {
    namespace?: string;
    averageValue?: string;
    annotations?: Record<string, string>;
    status?: { currentReplicas: number; desiredReplicas: number } | null;
    maxReplicas?: number;
    extra?: unknown[];
  } = {},
): KubeObject {
  const annotations: Record<string, string> = {
    [`metric-config.external.${metric}.json-path/endpoint`]: "http://127.0.0.1:9/queue",
    [`metric-config.external.${metric}.json-path/json-key`]: "$.n",
    [`metric-config.external.${metric}.json-path/interval`]: "15s",
    ...options.annotations,
  };
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name, namespace: options.namespace ?? "shop", annotations },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name },
      minReplicas: 1,
      maxReplicas: options.maxReplicas ?? 10,
      metrics: [
        {
          type: "External",
          external: {
            metric: { name: metric, selector: { matchLabels: { type: "json-path" } } },
            target: { type: "AverageValue", averageValue: options.averageValue ?? "10" },
          },
        },
        ...(options.extra ?? []),
      ],
    },
    ...(options.status === null
      ? {}
      : { status: options.status ?? { currentReplicas: 2, desiredReplicas: 2 } }),
  };
}

/** The engine's view of an HPA: its plans, each without a problem unless `problems` says. */
export function plansOf(
  hpa: KubeObject,
  problems: Record<string, string> = {},
): StatusPlanInput[] {
  return planHpa(hpa).map((plan) => {
    const key = planKey(plan);
    return { key, plan, problem: problems[plan.metricName] ?? plan.error };
  });
}

/** A history of values (a number) and failures (a string) one interval apart from `start`. */
export function historyOf(
  outcomes: (number | string)[],
  start: number,
  intervalMs = 15_000,
): StatusHistoryInput {
  const h: StatusHistoryInput = {
    points: [],
    lastValue: null,
    lastSuccessAt: null,
    lastSampleCount: 0,
    failures: 0,
    failingSince: null,
    lastError: null,
    lastErrorAt: null,
  };
  const points: { at: number; value: number | null; failed: boolean }[] = [];
  outcomes.forEach((o, i) => {
    const at = start + i * intervalMs;
    if (typeof o === "number") {
      points.push({ at, value: o, failed: false });
      h.lastValue = o;
      h.lastSuccessAt = at;
      h.lastSampleCount = 1;
      h.failures = 0;
      h.failingSince = null;
    } else {
      points.push({ at, value: null, failed: true });
      if (h.failures === 0) h.failingSince = at;
      h.failures++;
      h.lastError = o;
      h.lastErrorAt = at;
    }
  });
  return { ...h, points };
}

/** `buildStatus`'s input over `hpas`, with histories by plan key and the rest empty. */
export function statusInput(
  hpas: KubeObject[],
  plans: StatusPlanInput[],
  histories: Record<string, StatusHistoryInput>,
  more: Partial<StatusInput> = {},
): StatusInput {
  return {
    now: T0,
    ttlSeconds: 900,
    hpas,
    plans,
    fallbacks: [],
    conflicts: [],
    history: (key) => histories[key] ?? null,
    ...more,
  };
}

/**
 * An autoscaling/v2 HPA with one Object metric per schedule object: `metric` on the
 * ScalingSchedule or ClusterScalingSchedule `name`, target averageValue 10.
 */
export function scheduleHpa(
  name: string,
  schedules: { kind: "ScalingSchedule" | "ClusterScalingSchedule"; name: string }[],
  options: { namespace?: string; annotations?: Record<string, string> } = {},
): KubeObject {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: {
      name,
      namespace: options.namespace ?? "shop",
      ...(options.annotations ? { annotations: options.annotations } : {}),
    },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name },
      minReplicas: 1,
      maxReplicas: 10,
      metrics: schedules.map((s) => ({
        type: "Object",
        object: {
          describedObject: { apiVersion: "zalando.org/v1", kind: s.kind, name: s.name },
          metric: { name: s.name },
          target: { type: "AverageValue", averageValue: "10" },
        },
      })),
    },
    status: { currentReplicas: 2, desiredReplicas: 2 },
  };
}

/**
 * A schedule object with one OneTime schedule: `value` from `date` for `minutes`, ramps of
 * `window` minutes.
 */
export function scheduleObject(
  kind: "ScalingSchedule" | "ClusterScalingSchedule",
  name: string,
  schedule: { date: string; minutes: number; value: number; window?: number },
  namespace = "shop",
): KubeObject {
  return {
    apiVersion: "zalando.org/v1",
    kind,
    metadata: kind === "ScalingSchedule" ? { name, namespace } : { name },
    spec: {
      scalingWindowDurationMinutes: schedule.window ?? 10,
      schedules: [{
        type: "OneTime",
        date: schedule.date,
        durationMinutes: schedule.minutes,
        value: schedule.value,
      }],
    },
  };
}
