/**
 * The HorizontalPodAutoscaler KEDA v2.20.2's operator writes for a ScaledObject
 * (`controllers/keda/hpa.go` `newHPAForScaledObject`, `getScaledObjectMetricSpecs`), and the
 * ScaledObject status fields that come with it, as a pure function: the ScaledObject, its
 * triggers' resolved parameters and this adapter's version in, the HPA or KEDA's error out.
 *
 * Where this adapter differs on purpose, it says so here and in the README:
 * - `app.kubernetes.io/managed-by` is `hpa-metrics-adapter` and `app.kubernetes.io/version`
 *   this adapter's version (so that KEDA's HPAs and ours are told apart; a ScaledObject whose
 *   HPA KEDA's operator manages is left to it);
 * - metric specs are sorted stably by their type's name (KEDA's `sort.Slice` is stable below
 *   13 entries, which is every ScaledObject in practice).
 *
 * @module
 */
import { formatQuantity, parseQuantity, storedQuantity } from "../quantity.ts";
import type { HpaBehavior, HpaMetricSpec } from "../hpa.ts";
import {
  KEDA_API_VERSION,
  KEDA_COMPOSITE_METRIC,
  KEDA_HPA_EXCLUDED_LABELS,
  KEDA_PAUSED_SCALE_IN,
  KEDA_PAUSED_SCALE_OUT,
  KEDA_SCALED_OBJECT_LABEL,
  kedaCronPart,
  kedaDefaultHpaName,
  kedaMetricName,
  kedaNameLabel,
  kedaNormalize,
  kedaSqsQueueName,
} from "./names.ts";
import type { ScaledObject, ScaledObjectTrigger } from "./scaled_object.ts";
import {
  lookupParam,
  missingParam,
  type ParamSource,
  parseFloatParam,
  parseIntParam,
  type TriggerParams,
} from "./typed_config.ts";

/** The `app.kubernetes.io/managed-by` of the HPAs this adapter writes for ScaledObjects. */
export const KEDA_HPA_MANAGER = "hpa-metrics-adapter";

/** The trigger types whose HPA metric this adapter builds. */
export const KEDA_TRIGGER_TYPES: readonly string[] = [
  "prometheus",
  "metrics-api",
  "aws-sqs-queue",
  "cron",
  "influxdb",
  "cpu",
  "memory",
];

/** The HorizontalPodAutoscaler written for a ScaledObject, complete, as it is created. */
export interface KedaHpa {
  apiVersion: "autoscaling/v2";
  kind: "HorizontalPodAutoscaler";
  metadata: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences: {
      apiVersion: string;
      kind: string;
      name: string;
      /** Absent for a ScaledObject read from a file. */
      uid?: string;
      controller: true;
      blockOwnerDeletion: true;
    }[];
  };
  spec: {
    scaleTargetRef: { apiVersion: string; kind: string; name: string };
    minReplicas: number;
    maxReplicas: number;
    metrics: HpaMetricSpec[];
    behavior?: HpaBehavior;
  };
}

/** The ScaledObject status fields that come with its HPA. */
export interface KedaHpaStatus {
  hpaName: string;
  /** The External metrics' names, in trigger order. */
  externalMetricNames: string[];
  /** The Resource metrics' names (`cpu`, `memory`), in trigger order. */
  resourceMetricNames: string[];
  /** The trigger types, comma-joined, each once, in order. */
  triggersTypes: string;
  /** The triggers' authenticationRef names, comma-joined, each once, in order ("" if none). */
  authenticationsTypes: string;
}

/** One trigger's metric: its HPA entry, its name, and the trigger it came from. */
export interface KedaTriggerMetric {
  index: number;
  type: string;
  /** The External metric's name, or the resource's (`cpu`, `memory`). */
  metricName: string;
  spec: HpaMetricSpec;
}

/** Options of {@linkcode kedaHpaFor}. */
export interface KedaHpaOptions {
  /** `app.kubernetes.io/version` of the HPA: this adapter's version. */
  version: string;
  /** Each trigger's resolved parameters (by trigger index); the metadata alone when absent. */
  params?: readonly (TriggerParams | undefined)[];
}

/** The HPA and status of a ScaledObject, or the error KEDA would set `Ready=False` with. */
export type KedaHpaResult =
  | { hpa: KedaHpa; status: KedaHpaStatus; metrics: KedaTriggerMetric[] }
  | { error: string; metrics: KedaTriggerMetric[] };

const METADATA: readonly ParamSource[] = ["triggerMetadata"];

function required(p: TriggerParams, key: string, order = METADATA): string {
  const v = lookupParam(p, key, order);
  if (v === undefined) throw missingParam(key, order);
  return v;
}

/**
 * A float target as KEDA's `GetMetricTargetMili` writes it: the value printed with three
 * decimals and parsed as a Quantity (`100.5` is `100.500`).
 */
export function kedaMilliQuantity(v: number): string {
  return kedaQuantityString(v.toFixed(3));
}

/**
 * The string apimachinery's Quantity keeps for `s` (the `%.3f` form): as written when it has
 * a non-zero integer part and fits the fast path, else its canonical form.
 */
function kedaQuantityString(s: string): string {
  return formatQuantity(parseQuantity(s));
}

function externalSpec(
  name: string,
  scaledObject: string,
  metricType: ScaledObjectTrigger["metricType"],
  target: string,
): HpaMetricSpec {
  if (metricType === "Utilization") {
    throw new Error("Utilization metric type is not supported for external metrics");
  }
  return {
    type: "External",
    external: {
      metric: { name, selector: { matchLabels: { [KEDA_SCALED_OBJECT_LABEL]: scaledObject } } },
      target: metricType === "Value"
        ? { type: "Value", value: target }
        : { type: "AverageValue", averageValue: target },
    },
  };
}

/** One trigger's metric entry, or KEDA's error for it. */
export function kedaTriggerMetric(
  so: ScaledObject,
  trigger: ScaledObjectTrigger,
  index: number,
  params: TriggerParams,
): KedaTriggerMetric {
  const name = so.metadata.name;
  const modifiers = so.spec.advanced?.scalingModifiers?.formula !== undefined;
  const ext = (part: string, target: string): KedaTriggerMetric => {
    const metricName = kedaMetricName(index, kedaNormalize(part));
    return {
      index,
      type: trigger.type,
      metricName,
      spec: externalSpec(metricName, name, trigger.metricType, target),
    };
  };
  switch (trigger.type) {
    case "prometheus": {
      required(params, "serverAddress");
      required(params, "query");
      const threshold = lookupParam(params, "threshold", METADATA);
      if (threshold === undefined && !modifiers) throw missingParam("threshold", METADATA);
      return ext(
        "prometheus",
        kedaMilliQuantity(threshold === undefined ? 0 : parseFloatParam("threshold", threshold)),
      );
    }
    case "metrics-api": {
      required(params, "url");
      const location = required(params, "valueLocation");
      const target = lookupParam(params, "targetValue", METADATA);
      if (target === undefined && !modifiers) throw missingParam("targetValue", METADATA);
      return ext(
        `metric-api-${location}`,
        kedaMilliQuantity(target === undefined ? 0 : parseFloatParam("targetValue", target)),
      );
    }
    case "aws-sqs-queue": {
      const order: ParamSource[] = ["triggerMetadata", "resolvedEnv"];
      const url = required(params, "queueURL", order);
      const length = lookupParam(params, "queueLength", METADATA);
      const n = length === undefined ? 5 : parseIntParam("queueLength", length);
      return ext(`aws-sqs-${kedaSqsQueueName(url)}`, String(n));
    }
    case "cron": {
      const tz = required(params, "timezone");
      const start = required(params, "start");
      const end = required(params, "end");
      return ext(`cron-${tz}-${kedaCronPart(start)}-${kedaCronPart(end)}`, "1");
    }
    case "influxdb": {
      required(params, "serverURL", ["triggerMetadata", "authParams"]);
      const org = required(params, "organizationName", ["triggerMetadata", "authParams"]);
      required(params, "query");
      const t = lookupParam(params, "thresholdValue", METADATA);
      const threshold = t === undefined ? 0 : parseFloatParam("thresholdValue", t);
      if (threshold === 0 && !modifiers) throw new Error("no threshold value given");
      return ext(`influxdb-${org}`, kedaMilliQuantity(threshold));
    }
    case "cpu":
    case "memory": {
      const value = required(params, "value");
      const container = lookupParam(params, "containerName", METADATA);
      const type = trigger.metricType ?? "Utilization";
      let target;
      if (type === "Utilization") {
        target = {
          type: "Utilization" as const,
          averageUtilization: parseIntParam("value", value),
        };
      } else if (type === "AverageValue") {
        let q: string;
        try {
          parseQuantity(value);
          q = storedQuantity(value);
        } catch {
          throw new Error(`invalid quantity "${value}" for ${trigger.type}`);
        }
        target = { type: "AverageValue" as const, averageValue: q };
      } else throw new Error(`unsupported metric type ${type} for ${trigger.type}`);
      const spec: HpaMetricSpec = container === undefined
        ? { type: "Resource", resource: { name: trigger.type, target } }
        : {
          type: "ContainerResource",
          containerResource: { name: trigger.type, container, target },
        };
      return { index, type: trigger.type, metricName: trigger.type, spec };
    }
    default:
      throw new Error(`no scaler found for type: ${trigger.type}`);
  }
}

/** KEDA's `getBoolAnnotation`: absent is false; a value that is not a boolean counts as true. */
function boolAnnotation(annotations: Record<string, string> | undefined, key: string): boolean {
  const v = annotations?.[key];
  if (v === undefined) return false;
  return !["0", "f", "F", "FALSE", "false", "False"].includes(v);
}

/** The behavior with the paused-scale-in/out annotations applied (a copy). */
function pausedBehavior(so: ScaledObject): HpaBehavior | undefined {
  const given = so.spec.advanced?.horizontalPodAutoscalerConfig?.behavior;
  const annotations = so.metadata.annotations;
  const pauseIn = boolAnnotation(annotations, KEDA_PAUSED_SCALE_IN);
  const pauseOut = boolAnnotation(annotations, KEDA_PAUSED_SCALE_OUT);
  if (!pauseIn && !pauseOut) return given;
  const behavior: HpaBehavior = structuredClone(given ?? {});
  if (pauseIn) behavior.scaleDown = { ...behavior.scaleDown, selectPolicy: "Disabled" };
  if (pauseOut) behavior.scaleUp = { ...behavior.scaleUp, selectPolicy: "Disabled" };
  return behavior;
}

/** Comma-joined, each once, in order. */
function joinedOnce(values: readonly string[]): string {
  return [...new Set(values)].join(",");
}

/**
 * The HPA KEDA writes for `so`, with the status fields that come with it; or the error that
 * sets `Ready=False` (a replica bound, a trigger's parameter, a duplicate metric name).
 *
 * @example
 * ```ts
 * const r = kedaHpaFor(parseScaledObject(yamlObject), { version: "0.1.0" });
 * if (!("error" in r)) r.hpa.metadata.name; // "keda-hpa-web"
 * ```
 */
export function kedaHpaFor(so: ScaledObject, options: KedaHpaOptions): KedaHpaResult {
  const metrics: KedaTriggerMetric[] = [];
  const fail = (error: string): KedaHpaResult => ({ error, metrics });
  const spec = so.spec;
  const min = spec.minReplicaCount !== undefined && spec.minReplicaCount > 0
    ? spec.minReplicaCount
    : 1;
  const max = spec.maxReplicaCount ?? 100;
  if ((spec.minReplicaCount ?? 0) > max) {
    return fail(
      `MinReplicaCount=${spec.minReplicaCount ?? 0} must be less than MaxReplicaCount=${max}`,
    );
  }
  if (spec.idleReplicaCount !== undefined && spec.idleReplicaCount >= (spec.minReplicaCount ?? 0)) {
    return fail(
      `IdleReplicaCount=${spec.idleReplicaCount} must be less than MinReplicaCount=${
        spec.minReplicaCount ?? 0
      }`,
    );
  }
  if (spec.triggers.length === 0) return fail("no triggers defined in the ScaledObject/ScaledJob");
  const names = new Set<string>();
  for (const t of spec.triggers) {
    if (t.useCachedMetrics && (t.type === "cpu" || t.type === "memory" || t.type === "cron")) {
      return fail(`property "useCachedMetrics" is not supported for "${t.type}" scaler`);
    }
    if (t.name === undefined || t.name === "") continue;
    if (names.has(t.name)) {
      return fail(
        `triggerName "${t.name}" is defined multiple times in the ScaledObject/ScaledJob, but it must be unique`,
      );
    }
    names.add(t.name);
  }
  for (const [i, t] of spec.triggers.entries()) {
    if (!KEDA_TRIGGER_TYPES.includes(t.type)) return fail(`no scaler found for type: ${t.type}`);
    const params = options.params?.[i] ?? { metadata: t.metadata ?? {} };
    try {
      metrics.push(kedaTriggerMetric(so, t, i, params));
    } catch (e) {
      return fail(`error parsing ${t.type} metadata: ${(e as Error).message}`);
    }
  }
  const seen = new Set<string>();
  for (const m of metrics) {
    if (m.spec.type !== "External") continue;
    if (seen.has(m.metricName)) {
      return fail(
        `metricName ${m.metricName} defined multiple times in ScaledObject ${so.metadata.name}`,
      );
    }
    seen.add(m.metricName);
  }
  let specs = metrics.map((m) => m.spec);
  const modifiers = spec.advanced?.scalingModifiers;
  if (modifiers?.formula !== undefined) {
    // the External entries give way to one composite metric; Resource entries stay
    const target = modifiers.target === undefined ? 0 : Number(modifiers.target);
    specs = [
      ...specs.filter((s) => s.type !== "External"),
      externalSpec(
        KEDA_COMPOSITE_METRIC,
        so.metadata.name,
        modifiers.metricType,
        kedaMilliQuantity(target),
      ),
    ];
  }
  if (specs.length === 0) return fail("no metrics found for the ScaledObject");
  specs = [...specs].sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));

  const hpaName = spec.advanced?.horizontalPodAutoscalerConfig?.name ||
    kedaDefaultHpaName(so.metadata.name);
  const excluded = new Set(
    (so.metadata.annotations?.[KEDA_HPA_EXCLUDED_LABELS] ?? "").split(",").map((l) => l.trim()),
  );
  const labels: Record<string, string> = {
    "app.kubernetes.io/name": kedaNameLabel(hpaName),
    "app.kubernetes.io/version": options.version,
    "app.kubernetes.io/part-of": so.metadata.name,
    "app.kubernetes.io/managed-by": KEDA_HPA_MANAGER,
  };
  // KEDA's operator labels the ScaledObject with its name before it writes the HPA
  const soLabels = { ...so.metadata.labels, [KEDA_SCALED_OBJECT_LABEL]: so.metadata.name };
  for (const [k, v] of Object.entries(soLabels)) if (!excluded.has(k)) labels[k] = v;
  const behavior = pausedBehavior(so);
  const hpa: KedaHpa = {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: {
      name: hpaName,
      namespace: so.metadata.namespace ?? "default",
      labels,
      ...(so.metadata.annotations !== undefined
        ? { annotations: { ...so.metadata.annotations } }
        : {}),
      ownerReferences: [{
        apiVersion: KEDA_API_VERSION,
        kind: "ScaledObject",
        name: so.metadata.name,
        ...(so.metadata.uid !== undefined ? { uid: so.metadata.uid } : {}),
        controller: true,
        blockOwnerDeletion: true,
      }],
    },
    spec: {
      scaleTargetRef: {
        apiVersion: spec.scaleTargetRef.apiVersion || "apps/v1",
        kind: spec.scaleTargetRef.kind || "Deployment",
        name: spec.scaleTargetRef.name,
      },
      minReplicas: min,
      maxReplicas: max,
      metrics: specs,
      ...(behavior !== undefined ? { behavior } : {}),
    },
  };
  const status: KedaHpaStatus = {
    hpaName,
    externalMetricNames: metrics.filter((m) => m.spec.type === "External").map((m) => m.metricName),
    resourceMetricNames: metrics.filter((m) => m.spec.type !== "External").map((m) => m.metricName),
    triggersTypes: joinedOnce(spec.triggers.map((t) => t.type)),
    authenticationsTypes: joinedOnce(
      spec.triggers.flatMap((t) => (t.authenticationRef ? [t.authenticationRef.name] : [])),
    ),
  };
  return { hpa, status, metrics };
}
