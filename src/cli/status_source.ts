/**
 * Wires the status page of `serve`: what `buildStatus` (api/status_model.ts) reads, from the
 * running engine, store, cluster view, history and replica guard, with the serve flags that
 * shape it.
 */
import {
  buildStatus,
  type PrometheusAdapterStatus,
  RULES_PREFIX,
  type ScaledObjectStatus,
  type StatusGuardInput,
  type StatusReport,
} from "../api/status_model.ts";
import type { StatusRequest } from "../api/status_page.ts";
import type { ClusterView, KubeObject } from "../cluster/types.ts";
import {
  DEFAULT_SCHEDULE_OPTIONS,
  type ScheduleOptions,
} from "../core/kube_metrics_adapter/scaling_schedule.ts";
import type { Engine } from "../engine/engine.ts";
import type { MetricHistory } from "../engine/history.ts";
import type { MetricStore } from "../store/store.ts";
import type { MetricPlan } from "../core/types.ts";
import type { AdapterPlanContext } from "../core/prometheus_adapter/plan.ts";
import { servedByRules } from "./delegate_options.ts";
import { boolFlag, enabledCollectors, type FlagValues, numberFlag, stringFlag } from "./flags.ts";

/** What {@linkcode statusReporter} reads. */
export interface StatusSources {
  engine: Pick<Engine, "status" | "fallbackStatus">;
  store: Pick<MetricStore, "conflicts">;
  cluster: Pick<ClusterView, "list" | "get">;
  history: Pick<MetricHistory, "get">;
  /**
   * The replica guard's last decision for an HPA (`ReplicaGuard.lastDecision`); a function that
   * returns null until the guard exists. Omitted when `--estafette-hpa-scaler` is off.
   */
  replicaGuard?: (namespace: string, name: string) => StatusGuardInput | null;
  /** The ScaledObject behind an HPA (the KEDA controller); omitted without --keda-scaled-objects. */
  scaledObject?: (hpa: KubeObject) => ScaledObjectStatus | null;
  /** prometheus-adapter's rules (`--prometheus-adapter-config`); omitted without it. */
  prometheusAdapter?: () => PrometheusAdapterStatus;
  /** What prometheus-adapter's rules discovered last (a metric they serve is theirs). */
  prometheusAdapterRules?: () => AdapterPlanContext;
  flags: FlagValues;
  now: () => number;
}

/**
 * How the serve flags evaluate ScalingSchedules (`--scaling-schedule-default-time-zone`,
 * `--scaling-schedule-default-scaling-window`, `--scaling-schedule-ramp-steps`), as the
 * collectors do.
 */
export function scheduleOptionsFromFlags(flags: FlagValues): ScheduleOptions {
  return {
    defaultTimeZone: stringFlag(flags, "scaling-schedule-default-time-zone") ??
      DEFAULT_SCHEDULE_OPTIONS.defaultTimeZone,
    defaultScalingWindowSeconds: numberFlag(flags, "scaling-schedule-default-scaling-window"),
    rampSteps: numberFlag(flags, "scaling-schedule-ramp-steps"),
  };
}

/** A function that builds the status document now, as much as a request needs. */
export function statusReporter(
  sources: StatusSources,
): (request?: StatusRequest) => StatusReport {
  const { engine, store, cluster, history, flags, now } = sources;
  const planOptions = {
    defaultIntervalSeconds: numberFlag(flags, "default-collection-interval"),
    enabledCollectors: enabledCollectors(flags),
    allowLinkLocalTargets: boolFlag(flags, "allow-link-local-targets"),
  };
  const schedules = {
    options: scheduleOptionsFromFlags(flags),
    get: (
      kind: "ScalingSchedule" | "ClusterScalingSchedule",
      ns: string | undefined,
      name: string,
    ) => cluster.get(kind, ns, name),
  };
  // the APIs whose metrics no collector here takes go to these (issue 26)
  const delegates = {
    custom: stringFlag(flags, "delegate-custom-metrics") || undefined,
    external: stringFlag(flags, "delegate-external-metrics") || undefined,
  };
  const rules = sources.prometheusAdapterRules;
  return (request = { schedules: true }) =>
    buildStatus({
      now: now(),
      ttlSeconds: numberFlag(flags, "metrics-ttl"),
      hpas: cluster.list("HorizontalPodAutoscaler"),
      plans: engine.status(),
      fallbacks: engine.fallbackStatus(),
      conflicts: store.conflicts(),
      history: (key) => history.get(key),
      planOptions,
      tolerance: numberFlag(flags, "horizontal-pod-autoscaler-tolerance"),
      ...(request.schedules ? { schedules } : {}),
      ...(sources.replicaGuard ? { replicaGuard: sources.replicaGuard } : {}),
      ...(sources.scaledObject ? { scaledObject: sources.scaledObject } : {}),
      ...(sources.prometheusAdapter ? { prometheusAdapter: sources.prometheusAdapter } : {}),
      ...(rules ? { servedByRules: (plan: MetricPlan) => ruleText(plan, rules()) } : {}),
      ...(request.hpa ? { only: request.hpa } : {}),
      delegates,
    });
}

/**
 * The rule that serves `plan`, as the status names it, or undefined (asked for metrics no
 * collector here takes).
 */
function ruleText(plan: MetricPlan, context: AdapterPlanContext): string | undefined {
  const served = servedByRules(plan, context);
  if (served === null || served.error !== undefined) return undefined;
  if (served.rule !== undefined) return `${RULES_PREFIX}${served.rule}`;
  // a series not discovered yet: its first read looks it up
  return `${RULES_PREFIX}${
    served.candidates?.join(" or ")
  } once Prometheus has a series it names ${plan.metricName}`;
}
