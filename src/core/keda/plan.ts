/**
 * What this adapter collects for a ScaledObject it owns: one metric plan per External metric of
 * the HPA KEDA would write, collected by this adapter's engine like any other plan (one query per
 * interval, values in the store) and served under KEDA's names. The plan's config says which
 * ScaledObject and trigger it is, and a digest of the trigger's resolved parameters (so a rotated
 * Secret restarts the collection); the parameters themselves (secrets among them) stay with the
 * ScaledObject's controller and are never in a plan, a log or the status page.
 *
 * Interval: KEDA's metrics server asks the trigger's source on every read of the HPA (every
 * 15 s), unless the trigger says `useCachedMetrics` (then the scale loop's `pollingInterval`,
 * default 30 s, is how old a value may be). Collected every {@linkcode KEDA_FRESH_SECONDS}
 * (or the polling interval when shorter), a served value is never older than the HPA's period.
 *
 * @module
 */
import type { MetricPlan, ObjectReference } from "../types.ts";
import type { KedaTriggerMetric } from "./hpa.ts";
import { KEDA_SCALED_OBJECT_LABEL } from "./names.ts";
import type { ScaledObject } from "./scaled_object.ts";

/** Config key: the ScaledObject (`<namespace>/<name>`). */
export const KEDA_PLAN_SCALED_OBJECT = "keda-scaled-object";
/** Config key: the trigger's index. */
export const KEDA_PLAN_TRIGGER = "keda-trigger";
/** Config key: a digest of the trigger's resolved parameters. */
export const KEDA_PLAN_PARAMS = "keda-params";
/** The collector type of a trigger type: `keda-prometheus`, `keda-cron`, ... */
export function kedaCollectorType(triggerType: string): string {
  return `keda-${triggerType}`;
}
/** The trigger types whose values this adapter collects. */
export const KEDA_COLLECTED_TYPES: ReadonlySet<string> = new Set([
  "prometheus",
  "metrics-api",
  "cron",
  "aws-sqs-queue",
  "influxdb",
]);

/** Seconds between collections of a trigger without `useCachedMetrics`. */
export const KEDA_FRESH_SECONDS = 10;
/** KEDA's default `pollingInterval`. */
export const KEDA_DEFAULT_POLLING_SECONDS = 30;

/** The collection interval of a trigger of `so`. */
export function kedaIntervalSeconds(so: ScaledObject, useCachedMetrics: boolean): number {
  const polling = so.spec.pollingInterval !== undefined && so.spec.pollingInterval > 0
    ? so.spec.pollingInterval
    : KEDA_DEFAULT_POLLING_SECONDS;
  return useCachedMetrics ? polling : Math.min(polling, KEDA_FRESH_SECONDS);
}

/** What {@linkcode kedaPlans} needs besides the ScaledObject. */
export interface KedaPlanInput {
  /** The HPA's name (KEDA's, or `horizontalPodAutoscalerConfig.name`). */
  hpaName: string;
  /** The HPA's `spec.metrics`, in order (positions are the plans' indexes). */
  hpaMetrics: readonly unknown[];
  /** The triggers' metrics, as `kedaHpaFor` made them. */
  metrics: readonly KedaTriggerMetric[];
  /** A digest of each trigger's resolved parameters, by trigger index. */
  paramsDigest: readonly string[];
}

function externalName(entry: unknown): string | undefined {
  const e = entry as { type?: string; external?: { metric?: { name?: string } } };
  return e?.type === "External" ? e.external?.metric?.name : undefined;
}

/**
 * The plans of a ScaledObject's External metrics. A trigger whose type this adapter does not
 * collect, and the composite metric of `scalingModifiers`, get a plan with an error that says so
 * (its value is then not served, or, with delegation, comes from the delegate).
 */
export function kedaPlans(so: ScaledObject, input: KedaPlanInput): MetricPlan[] {
  const ns = so.metadata.namespace ?? "default";
  const ref = so.spec.scaleTargetRef;
  const scaleTargetRef: ObjectReference = {
    apiVersion: ref.apiVersion || "apps/v1",
    kind: ref.kind || "Deployment",
    name: ref.name,
  };
  const plans: MetricPlan[] = [];
  for (const [index, entry] of input.hpaMetrics.entries()) {
    const name = externalName(entry);
    if (name === undefined) continue;
    const spec = (entry as { external: { target: MetricPlan["target"] } }).external;
    const m = input.metrics.find((x) => x.spec.type === "External" && x.metricName === name);
    const base: MetricPlan = {
      hpa: { namespace: ns, name: input.hpaName },
      index,
      metricType: "External",
      metricName: name,
      metricSelector: { matchLabels: { [KEDA_SCALED_OBJECT_LABEL]: so.metadata.name } },
      target: { ...spec.target },
      describedObject: null,
      scaleTargetRef,
      collector: null,
      intervalSeconds: KEDA_FRESH_SECONDS,
      perReplica: false,
      minPodReadyAgeSeconds: 0,
      config: {},
      error: null,
    };
    if (m === undefined) {
      plans.push({
        ...base,
        error:
          `the composite metric of ScaledObject ${ns}/${so.metadata.name}'s scalingModifiers is not computed by this adapter yet`,
      });
      continue;
    }
    const trigger = so.spec.triggers[m.index];
    if (!KEDA_COLLECTED_TYPES.has(trigger.type)) {
      plans.push({
        ...base,
        error:
          `ScaledObject ${ns}/${so.metadata.name} trigger ${m.index}: this adapter does not collect "${trigger.type}" triggers`,
      });
      continue;
    }
    plans.push({
      ...base,
      collector: kedaCollectorType(trigger.type),
      intervalSeconds: kedaIntervalSeconds(so, trigger.useCachedMetrics === true),
      config: {
        [KEDA_PLAN_SCALED_OBJECT]: `${ns}/${so.metadata.name}`,
        [KEDA_PLAN_TRIGGER]: String(m.index),
        [KEDA_PLAN_PARAMS]: input.paramsDigest[m.index] ?? "",
      },
    });
  }
  return plans;
}
