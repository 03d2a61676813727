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
import { formatQuantity, parseQuantity, storedQuantity } from "../kubernetes/quantity.ts";
import type { HpaBehavior, HpaMetricSpec } from "../kubernetes/hpa.ts";
import {
  KEDA_API_VERSION,
  KEDA_COMPOSITE_METRIC,
  KEDA_HPA_EXCLUDED_LABELS,
  KEDA_PAUSED_SCALE_IN,
  KEDA_PAUSED_SCALE_OUT,
  KEDA_SCALED_OBJECT_LABEL,
  kedaDefaultHpaName,
  kedaMetricName,
  kedaNameLabel,
  kedaNormalize,
} from "./names.ts";
import {
  kedaBoolAnnotation,
  kedaUsesModifiers,
  type ScaledObject,
  type ScaledObjectTrigger,
} from "./scaled_object.ts";
import type { TriggerParams } from "./typed_config.ts";
import { readTrigger, TriggerError } from "./triggers.ts";

/** The `app.kubernetes.io/managed-by` of the HPAs this adapter writes for ScaledObjects. */
export const KEDA_HPA_MANAGER = "hpa-metrics-adapter";

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
  /** The Resource metrics' names (`cpu`, `memory`), in trigger order (not ContainerResource). */
  resourceMetricNames: string[];
  /** The trigger types, comma-joined, each once, in order. */
  triggersTypes: string;
  /** The triggers' authenticationRef names, comma-joined, each once, in order ("" if none). */
  authenticationsTypes: string;
  /** `composite-metric` when scalingModifiers are used. */
  compositeScalerName?: string;
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
  /** Each trigger's TriggerAuthentication `podIdentity.provider` (by trigger index). */
  podIdentities?: readonly (string | undefined)[];
  /**
   * The HPA's controller instead of the ScaledObject: for a ScaledObject that exists only in
   * memory (Knative's, core/knative/mapping.ts), the object that owns it (its PodAutoscaler or
   * workload), so that the garbage collector removes the HPA with it.
   */
  owner?: KedaHpaOwner;
}

/** The controller of an HPA given by {@linkcode KedaHpaOptions.owner}. */
export interface KedaHpaOwner {
  apiVersion: string;
  kind: string;
  name: string;
  /** Absent (or empty) for an object read from a file. */
  uid?: string;
}

/** The HPA and status of a ScaledObject, or the `Ready=False` message KEDA sets. */
export type KedaHpaResult =
  | { hpa: KedaHpa; status: KedaHpaStatus; metrics: KedaTriggerMetric[] }
  | {
    /** The `Ready` condition's message, as KEDA writes it. */
    error: string;
    /** The trigger the error is about, when it is one trigger's. */
    trigger?: number;
    metrics: KedaTriggerMetric[];
  };

/**
 * A value as KEDA's `quantityFromFloat64` writes it (HPA targets, served values): NaN, ±Inf and
 * negatives are `0`; else `%.3f` (Go's rounding: ties to even), parsed as a Quantity, whose
 * string is the text as written when it has at most 18 digits, does not start with `0` (a
 * value below 1) and does not end with `000`, else the canonical form (`100.5` is `100.500`,
 * `0.25` is `250m`, `1000` is `1k`).
 */
export function kedaMilliQuantity(v: number): string {
  if (!Number.isFinite(v) || v < 0) return "0";
  let milli: bigint;
  const sixteenths = v * 16; // exact: a power of two
  if (Number.isInteger(sixteenths) && sixteenths % 2 === 1 && sixteenths < 2 ** 53) {
    // an exact tie at the third decimal (v = odd / 16): Go rounds to the even neighbour
    const twice = BigInt(sixteenths) * 125n; // v * 2000, odd
    const down = (twice - 1n) / 2n;
    milli = down % 2n === 0n ? down : down + 1n;
  } else if (v < 1e21) {
    const fixed = v.toFixed(3);
    milli = BigInt(fixed.replace(".", ""));
  } else {
    milli = BigInt(Math.round(v)) * 1000n;
  }
  const digits = milli.toString().padStart(4, "0");
  const text = `${digits.slice(0, -3)}.${digits.slice(-3)}`;
  const all = digits;
  if (all.length <= 18 && !all.endsWith("000") && !all.startsWith("0")) return text;
  return formatQuantity(parseQuantity(text));
}

/** KEDA's `GetMetricTarget`: an integer target, canonical (`1000` is `1k`). */
function intQuantity(n: number): string {
  return formatQuantity(n);
}

function externalSpec(
  name: string,
  scaledObject: string,
  metricType: string | undefined,
  target: string,
): HpaMetricSpec {
  return {
    type: "External",
    external: {
      metric: { name, selector: { matchLabels: { [KEDA_SCALED_OBJECT_LABEL]: scaledObject } } },
      target: metricType === "AverageValue" || metricType === undefined || metricType === ""
        ? { type: "AverageValue", averageValue: target }
        : { type: "Value", value: target },
    },
  };
}

/**
 * One trigger's metric entry, as its KEDA scaler makes it; throws {@linkcode TriggerError} with
 * KEDA's words.
 */
export function kedaTriggerMetric(
  so: ScaledObject,
  trigger: ScaledObjectTrigger,
  index: number,
  params: TriggerParams,
  podIdentity?: string,
): KedaTriggerMetric {
  const name = so.metadata.name;
  const read = readTrigger(trigger.type, params, {
    modifiers: kedaUsesModifiers(so),
    metricType: trigger.metricType,
    podIdentity,
  });
  const v = read.values;
  const ext = (target: string): KedaTriggerMetric => {
    const metricName = kedaMetricName(index, kedaNormalize(read.namePart ?? trigger.type));
    return {
      index,
      type: trigger.type,
      metricName,
      spec: externalSpec(metricName, name, trigger.metricType, target),
    };
  };
  switch (trigger.type) {
    case "prometheus":
      return ext(kedaMilliQuantity(v.threshold as number));
    case "metrics-api":
      return ext(kedaMilliQuantity((v.targetValue as number | undefined) ?? 0));
    case "aws-sqs-queue":
      return ext(intQuantity(v.queueLength as number));
    case "cron":
      return ext("1");
    case "influxdb":
      return ext(kedaMilliQuantity((v.thresholdValue as number | undefined) ?? 0));
    default: {
      // cpu, memory
      const value = v.value as string;
      const container = v.containerName as string | undefined;
      let target;
      if (trigger.metricType === "Utilization") {
        target = { type: "Utilization" as const, averageUtilization: Number(value) };
      } else {
        let q: string;
        try {
          parseQuantity(value);
          q = storedQuantity(value);
        } catch {
          // KEDA's MustParse panics here; this adapter reports it
          throw new TriggerError(
            `error parsing ${trigger.type} metadata: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
          );
        }
        target = { type: "AverageValue" as const, averageValue: q };
      }
      const spec: HpaMetricSpec = container === undefined || container === ""
        ? { type: "Resource", resource: { name: trigger.type, target } }
        : {
          type: "ContainerResource",
          containerResource: { name: trigger.type, container, target },
        };
      return { index, type: trigger.type, metricName: trigger.type, spec };
    }
  }
}

/** The behavior with the paused-scale-in/out annotations applied (a copy). */
function pausedBehavior(so: ScaledObject): HpaBehavior | undefined {
  const given = so.spec.advanced?.horizontalPodAutoscalerConfig?.behavior;
  const pauseIn = kedaBoolAnnotation(so, KEDA_PAUSED_SCALE_IN);
  const pauseOut = kedaBoolAnnotation(so, KEDA_PAUSED_SCALE_OUT);
  if (!pauseIn && !pauseOut) return given;
  const behavior: HpaBehavior = structuredClone(given ?? {});
  if (pauseIn) behavior.scaleDown = { ...behavior.scaleDown, selectPolicy: "Disabled" };
  if (pauseOut) behavior.scaleUp = { ...behavior.scaleUp, selectPolicy: "Disabled" };
  return behavior;
}

/** The HPA's controller reference: `owner` (without an empty uid), else the ScaledObject. */
function ownerReference(
  so: ScaledObject,
  owner: KedaHpaOwner | undefined,
): KedaHpa["metadata"]["ownerReferences"][number] {
  const uid = owner !== undefined ? owner.uid || undefined : so.metadata.uid;
  return {
    apiVersion: owner?.apiVersion ?? KEDA_API_VERSION,
    kind: owner?.kind ?? "ScaledObject",
    name: owner?.name ?? so.metadata.name,
    ...(uid !== undefined ? { uid } : {}),
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** Comma-joined, each once, in order. */
function joinedOnce(values: readonly string[]): string {
  return [...new Set(values)].join(",");
}

/** The prefix of the errors of KEDA's HPA step (after the status got the trigger types). */
export const HPA_FAILED = "failed to ensure HPA is correctly created for ScaledObject: ";

/**
 * `status.triggersTypes` and `status.authenticationsTypes` as KEDA writes them (each value once,
 * in order, comma-joined; the authentications by `authenticationRef.name`), before its HPA step.
 */
export function kedaTypesStatus(
  so: ScaledObject,
): { triggersTypes: string; authenticationsTypes: string } {
  return {
    triggersTypes: joinedOnce(so.spec.triggers.map((t) => t.type)),
    authenticationsTypes: joinedOnce(
      so.spec.triggers.flatMap((t) => (t.authenticationRef ? [t.authenticationRef.name] : [])),
    ),
  };
}

/** Go's `sort.Slice` by type name, for the short lists it sorts stably (insertion sort). */
function byType(specs: readonly HpaMetricSpec[]): HpaMetricSpec[] {
  return [...specs].sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));
}

/**
 * The HPA KEDA writes for `so`, with the status fields that come with it; or the `Ready=False`
 * message of KEDA's reconcile (replica bounds, triggers, a trigger's metadata, a duplicate
 * metric name), checked in KEDA's order.
 *
 * @example
 * ```ts
 * const r = kedaHpaFor(parseScaledObject(yamlObject), { version: "0.1.0" });
 * if (!("error" in r)) r.hpa.metadata.name; // "keda-hpa-web"
 * ```
 */
export function kedaHpaFor(so: ScaledObject, options: KedaHpaOptions): KedaHpaResult {
  const metrics: KedaTriggerMetric[] = [];
  const fail = (error: string, trigger?: number): KedaHpaResult => ({
    error,
    ...(trigger !== undefined ? { trigger } : {}),
    metrics,
  });
  const spec = so.spec;
  const ns = so.metadata.namespace ?? "default";
  const min = spec.minReplicaCount !== undefined && spec.minReplicaCount > 0
    ? spec.minReplicaCount
    : 1;
  const max = spec.maxReplicaCount ?? 100;
  // KEDA's bounds check reads an unset minimum as 0 and an explicit 0 as 1
  const checkedMin = spec.minReplicaCount === undefined ? 0 : min;
  const bounds = "ScaledObject doesn't have correct Idle/Min/Max Replica Counts specification: ";
  if (checkedMin > max) {
    return fail(`${bounds}MinReplicaCount=${checkedMin} must be less than MaxReplicaCount=${max}`);
  }
  if (spec.idleReplicaCount !== undefined && spec.idleReplicaCount >= checkedMin) {
    return fail(
      `${bounds}IdleReplicaCount=${spec.idleReplicaCount} must be less than MinReplicaCount=${checkedMin}`,
    );
  }
  const triggers = "ScaledObject doesn't have correct triggers specification: ";
  if (spec.triggers.length === 0) {
    return fail(`${triggers}no triggers defined in the ScaledObject/ScaledJob`);
  }
  const names = new Set<string>();
  for (const [i, t] of spec.triggers.entries()) {
    if (t.useCachedMetrics && (t.type === "cpu" || t.type === "memory" || t.type === "cron")) {
      return fail(
        `${triggers}property "useCachedMetrics" is not supported for "${t.type}" scaler`,
        i,
      );
    }
    if (t.name === undefined || t.name === "") continue;
    if (names.has(t.name)) {
      return fail(
        `${triggers}triggerName "${t.name}" is defined multiple times in the ScaledObject/ScaledJob, but it must be unique`,
        i,
      );
    }
    names.add(t.name);
  }
  for (const [i, t] of spec.triggers.entries()) {
    const params = options.params?.[i] ?? { metadata: t.metadata ?? {} };
    try {
      metrics.push(kedaTriggerMetric(so, t, i, params, options.podIdentities?.[i]));
    } catch (e) {
      if (!(e instanceof TriggerError)) throw e;
      return fail(HPA_FAILED + e.message, i);
    }
  }
  const external: string[] = [];
  for (const m of metrics) {
    if (m.spec.type !== "External") continue;
    if (external.includes(m.metricName)) {
      return fail(
        `${HPA_FAILED}metricName ${m.metricName} defined multiple times in ScaledObject ${so.metadata.name}`,
        m.index,
      );
    }
    external.push(m.metricName);
  }
  let specs = byType(metrics.map((m) => m.spec));
  let composite = false;
  const modifiers = spec.advanced?.scalingModifiers;
  if (modifiers !== undefined && kedaUsesModifiers(so)) {
    const type = modifiers.metricType || "AverageValue";
    if (type === "Utilization") {
      return fail(
        `${HPA_FAILED}error metric target type is Utilization, but it needs to be AverageValue or Value for external metrics`,
      );
    }
    const target = Number(modifiers.target ?? "");
    if (
      Number.isFinite(target) && target > 0 &&
      /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/.test((modifiers.target ?? "").trim())
    ) {
      // the Resource entries (ContainerResource ones are dropped), then the composite metric
      composite = true;
      specs = [
        ...specs.filter((s) => s.type === "Resource"),
        externalSpec(
          KEDA_COMPOSITE_METRIC,
          so.metadata.name,
          type,
          formatQuantity(Math.trunc(target * 1000) / 1000),
        ),
      ];
    }
  }
  if (specs.length === 0) {
    return fail(
      `${HPA_FAILED}no metric specs returned from scalers for ScaledObject ${ns}/${so.metadata.name}`,
    );
  }

  const hpaName = spec.advanced?.horizontalPodAutoscalerConfig?.name ||
    kedaDefaultHpaName(so.metadata.name);
  // the annotation is split on "," and not trimmed
  const excluded = new Set((so.metadata.annotations?.[KEDA_HPA_EXCLUDED_LABELS] ?? "").split(","));
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
      namespace: ns,
      labels,
      ...(so.metadata.annotations !== undefined
        ? { annotations: { ...so.metadata.annotations } }
        : {}),
      ownerReferences: [ownerReference(so, options.owner)],
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
    externalMetricNames: external,
    resourceMetricNames: metrics.filter((m) => m.spec.type === "Resource").map((m) => m.metricName),
    ...kedaTypesStatus(so),
    ...(composite ? { compositeScalerName: KEDA_COMPOSITE_METRIC } : {}),
  };
  return { hpa, status, metrics };
}
