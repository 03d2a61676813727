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
import { checkFormula } from "../formula.ts";
import { FORMULA_TYPE } from "../kube_metrics_adapter/configs/formula.ts";
import { planKey, queryKey } from "../kube_metrics_adapter/plan.ts";
import type { FormulaInput, MetricPlan, ObjectReference } from "../types.ts";
import type { KedaTriggerMetric } from "./hpa.ts";
import { KEDA_COMPOSITE_METRIC, KEDA_SCALED_OBJECT_LABEL } from "./names.ts";
import type { ScaledObject } from "./scaled_object.ts";
import { kedaHasValidFallback } from "./status.ts";
import type { Fallback } from "../fallback.ts";

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
 * collect gets a plan with an error that says so (its value is then not served, or, with
 * delegation, comes from the delegate). With `scalingModifiers`, the HPA's one External metric
 * is `composite-metric`: a formula plan over hidden plans of the triggers' metrics (collected,
 * never served), each named in the formula by its trigger's `name`, as KEDA's metrics server
 * computes it (the engine's formulas speak the expr-lang subset KEDA's users write).
 */
export function kedaPlans(so: ScaledObject, input: KedaPlanInput): MetricPlan[] {
  const ns = so.metadata.namespace ?? "default";
  const ref = so.spec.scaleTargetRef;
  const scaleTargetRef: ObjectReference = {
    apiVersion: ref.apiVersion || "apps/v1",
    kind: ref.kind || "Deployment",
    name: ref.name,
  };
  const base = (index: number, name: string, target: MetricPlan["target"]): MetricPlan => ({
    hpa: { namespace: ns, name: input.hpaName },
    index,
    metricType: "External",
    metricName: name,
    metricSelector: { matchLabels: { [KEDA_SCALED_OBJECT_LABEL]: so.metadata.name } },
    target: { ...target },
    describedObject: null,
    scaleTargetRef,
    collector: null,
    intervalSeconds: KEDA_FRESH_SECONDS,
    perReplica: false,
    minPodReadyAgeSeconds: 0,
    config: {},
    error: null,
  });
  /** The plan of one trigger's metric (an error when its type is not collected here). */
  const triggerPlan = (m: KedaTriggerMetric, plan: MetricPlan): MetricPlan => {
    const trigger = so.spec.triggers[m.index];
    if (!KEDA_COLLECTED_TYPES.has(trigger.type)) {
      return {
        ...plan,
        error:
          `ScaledObject ${ns}/${so.metadata.name} trigger ${m.index}: this adapter does not collect "${trigger.type}" triggers`,
      };
    }
    return {
      ...plan,
      collector: kedaCollectorType(trigger.type),
      intervalSeconds: kedaIntervalSeconds(so, trigger.useCachedMetrics === true),
      config: {
        [KEDA_PLAN_SCALED_OBJECT]: `${ns}/${so.metadata.name}`,
        [KEDA_PLAN_TRIGGER]: String(m.index),
        [KEDA_PLAN_PARAMS]: input.paramsDigest[m.index] ?? "",
      },
    };
  };
  // KEDA's fallback, as the engine serves it: past `failureThreshold` consecutive failed
  // collections, the value from which the HPA computes the fallback replicas
  const f = so.spec.fallback;
  const fallback: Fallback | undefined = f !== undefined && kedaHasValidFallback(so)
    ? {
      failureThreshold: f.failureThreshold,
      replicas: f.replicas,
      behavior: f.behavior ?? "static",
    }
    : undefined;
  const plans: MetricPlan[] = [];
  const hidden: MetricPlan[] = [];
  for (const [index, entry] of input.hpaMetrics.entries()) {
    const name = externalName(entry);
    if (name === undefined) continue;
    const target = (entry as { external: { target: MetricPlan["target"] } }).external.target;
    if (name === KEDA_COMPOSITE_METRIC) {
      const composite = base(index, name, target);
      if (fallback) composite.fallback = fallback;
      plans.push(compositePlan(so, composite, input, (m, i) => {
        const h: MetricPlan = {
          ...triggerPlan(
            m,
            base(input.hpaMetrics.length + i, m.metricName, {
              type: "AverageValue",
            }),
          ),
          hidden: true,
        };
        hidden.push(h);
        return h;
      }));
      continue;
    }
    const m = input.metrics.find((x) => x.spec.type === "External" && x.metricName === name);
    if (m === undefined) {
      plans.push({
        ...base(index, name, target),
        error: `ScaledObject ${ns}/${so.metadata.name} has no trigger of metric ${name}`,
      });
      continue;
    }
    const plan = triggerPlan(m, base(index, name, target));
    if (fallback && fallback.behavior !== "scalingModifiers") plan.fallback = fallback;
    plans.push(plan);
  }
  return [...plans, ...hidden];
}

/** The `composite-metric` plan: the formula over a hidden plan of each trigger's metric. */
function compositePlan(
  so: ScaledObject,
  plan: MetricPlan,
  input: KedaPlanInput,
  hiddenPlan: (m: KedaTriggerMetric, i: number) => MetricPlan,
): MetricPlan {
  const formula = so.spec.advanced?.scalingModifiers?.formula ?? "";
  const at = `the scalingModifiers formula of ScaledObject ${
    so.metadata.namespace ?? "default"
  }/${so.metadata.name}`;
  const inputs: FormulaInput[] = [];
  const errors: string[] = [];
  let i = 0;
  for (const m of input.metrics) {
    if (m.spec.type !== "External") continue;
    const name = so.spec.triggers[m.index].name ?? "";
    const h = hiddenPlan(m, i++);
    if (name === "") continue; // not nameable in the formula (KEDA: "trigger name not given")
    if (h.error !== null) errors.push(h.error);
    inputs.push({
      identifier: name,
      planKey: planKey(h),
      queryKey: queryKey(h),
      metricType: "External",
      metricName: h.metricName,
    });
  }
  try {
    checkFormula(formula, inputs.map((x) => x.identifier));
  } catch (e) {
    errors.push(`${at}: ${(e as Error).message}`);
  }
  const interval = Math.min(
    KEDA_FRESH_SECONDS,
    ...inputs.map((x) => {
      const m = input.metrics.find((y) => y.metricName === x.metricName);
      const t = m ? so.spec.triggers[m.index] : undefined;
      return kedaIntervalSeconds(so, t?.useCachedMetrics === true);
    }),
  );
  return {
    ...plan,
    collector: FORMULA_TYPE,
    intervalSeconds: interval,
    formula: { expression: formula, inputs },
    error: errors.length > 0 ? errors.join("; ") : null,
  };
}
