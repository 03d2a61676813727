/**
 * HorizontalPodAutoscalers of the older API versions converted to autoscaling/v2 the way
 * kube-apiserver converts them (k8s.io/kubernetes pkg/apis/autoscaling/v1 and v2beta2
 * conversion.go and defaults.go): the version's defaults, its conversion to the internal type,
 * the internal type to v2, and v2's defaults (applied when the stored object is read back), so
 * the result is what `kubectl get hpa.v2.autoscaling` shows after the manifest is applied.
 *
 * - `autoscaling/v1`: `minReplicas` defaults to 1; `targetCPUUtilizationPercentage` becomes a
 *   cpu Resource metric with `averageUtilization`; the JSON kept in the annotations
 *   `autoscaling.alpha.kubernetes.io/metrics` (v1 MetricSpecs, listed before the cpu metric),
 *   `.../behavior` (the *internal* Go type, without JSON tags: keys `ScaleUp`, `Policies`, ...,
 *   matched case-insensitively as Go's encoding/json does), `.../current-metrics` and
 *   `.../conditions` are read; an annotation that does not decode is ignored whole, as Go
 *   ignores it. No metric at all gives cpu at 80%.
 * - `autoscaling/v2beta2`: the v2 shape without `tolerance`, which comes from the annotations
 *   `autoscaling.alpha.kubernetes.io/scale-up-tolerance` and `.../scale-down-tolerance` (a
 *   malformed one refuses the object, as the API server does).
 *
 * Both remove the six round-trip annotations (the four above and the two tolerance ones). The
 * top-level fields are copied as given (what is not a valid HPA stays for {@linkcode parseHpa}
 * to name); quantities keep their spelling (the API server would re-print them canonically).
 *
 * Differentially tested against Kubernetes' own conversion (v1: v1.36.3, the release the e2e
 * control plane runs; v2beta2: v1.35.4, the last release that has it) in
 * tests/core/kubernetes/hpa_conversion_differential_test.ts.
 */

/** The round-trip annotations of k8s.io/kubernetes pkg/apis/autoscaling/annotations.go. */
export const METRIC_SPECS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics";
export const METRIC_STATUSES_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics";
export const CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions";
export const BEHAVIOR_ANNOTATION = "autoscaling.alpha.kubernetes.io/behavior";
export const SCALE_DOWN_TOLERANCE_ANNOTATION =
  "autoscaling.alpha.kubernetes.io/scale-down-tolerance";
export const SCALE_UP_TOLERANCE_ANNOTATION = "autoscaling.alpha.kubernetes.io/scale-up-tolerance";

const ROUND_TRIP_ANNOTATIONS = [
  METRIC_SPECS_ANNOTATION,
  BEHAVIOR_ANNOTATION,
  SCALE_DOWN_TOLERANCE_ANNOTATION,
  SCALE_UP_TOLERANCE_ANNOTATION,
  METRIC_STATUSES_ANNOTATION,
  CONDITIONS_ANNOTATION,
];

/** The HPA versions {@linkcode convertHpaToV2} converts. */
export const CONVERTED_HPA_VERSIONS: readonly string[] = ["autoscaling/v1", "autoscaling/v2beta2"];

/** The CPU utilization of an HPA with no metric (autoscaling.DefaultCPUUtilization). */
export const DEFAULT_CPU_UTILIZATION = 80;

/** An object the API server would refuse to convert (a malformed tolerance annotation). */
export class HpaConversionError extends Error {
  override name = "HpaConversionError";
}

type Obj = Record<string, unknown>;

/** YAML nulls as absent (as hpa.ts reads them): Go decodes a null field to its zero value. */
function withoutNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutNulls);
  if (v === null || typeof v !== "object") return v;
  const out: Obj = Object.create(Object.getPrototypeOf(v));
  for (const [k, x] of Object.entries(v)) if (x !== null) out[k] = withoutNulls(x);
  return out;
}

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * An `autoscaling/v1` or `autoscaling/v2beta2` HorizontalPodAutoscaler as autoscaling/v2; any
 * other object is returned as it is. Pure: the input is not changed.
 *
 * @example
 * ```ts
 * convertHpaToV2({
 *   apiVersion: "autoscaling/v1", kind: "HorizontalPodAutoscaler", metadata: { name: "web" },
 *   spec: { scaleTargetRef: { kind: "Deployment", name: "web" }, maxReplicas: 5,
 *     targetCPUUtilizationPercentage: 70 },
 * }).spec;
 * // { scaleTargetRef: { kind: "Deployment", name: "web" }, minReplicas: 1, maxReplicas: 5,
 * //   metrics: [{ type: "Resource", resource: { name: "cpu",
 * //     target: { type: "Utilization", averageUtilization: 70 } } }] }
 * ```
 */
export function convertHpaToV2<T>(object: T): T | Obj {
  if (!isObj(object)) return object;
  const { apiVersion } = object;
  if (apiVersion === "autoscaling/v1") return fromV1(withoutNulls(object) as Obj);
  if (apiVersion === "autoscaling/v2beta2") return fromV2beta2(withoutNulls(object) as Obj);
  return object;
}

// ------------------------------------------------------------------ v1

function fromV1(hpa: Obj): Obj {
  const annotations = isObj(hpa.metadata) && isObj(hpa.metadata.annotations)
    ? hpa.metadata.annotations as Record<string, unknown>
    : {};
  const annotation = (key: string): string | undefined =>
    typeof annotations[key] === "string" ? annotations[key] as string : undefined;
  const spec = isObj(hpa.spec) ? hpa.spec : {};
  const out: Obj = { scaleTargetRef: scaleTargetRef(spec.scaleTargetRef) };
  // v1 defaults
  out.minReplicas = spec.minReplicas ?? 1;
  if (spec.maxReplicas !== undefined) out.maxReplicas = spec.maxReplicas;

  let metrics: Obj[] | undefined = spec.targetCPUUtilizationPercentage === undefined
    ? undefined
    : [cpuMetric(spec.targetCPUUtilizationPercentage)];
  const specsText = annotation(METRIC_SPECS_ANNOTATION);
  if (specsText !== undefined) {
    const others = goUnmarshal(specsText, slice(V1_METRIC_SPEC)) as Obj[] | undefined | Failed;
    if (others !== FAILED) metrics = [...(others ?? []).map(v1MetricSpec), ...(metrics ?? [])];
  }
  const behaviorText = annotation(BEHAVIOR_ANNOTATION);
  if (behaviorText !== undefined) {
    const behavior = goUnmarshal(behaviorText, INTERNAL_BEHAVIOR);
    if (behavior !== FAILED && isObj(behavior)) {
      const b = behavior as { ScaleUp?: Obj; ScaleDown?: Obj };
      if (b.ScaleUp !== undefined || b.ScaleDown !== undefined) {
        const converted: Obj = {};
        if (b.ScaleUp !== undefined) converted.scaleUp = internalRules(b.ScaleUp);
        if (b.ScaleDown !== undefined) converted.scaleDown = internalRules(b.ScaleDown);
        out.behavior = converted;
      }
    }
  }
  // v1 conversion's own default: cpu at 80% when no metric at all
  if (metrics === undefined || metrics.length === 0) {
    metrics = [cpuMetric(DEFAULT_CPU_UTILIZATION)];
  }
  out.metrics = metrics;

  const status = isObj(hpa.status) ? hpa.status : {};
  const st: Obj = {};
  if (status.observedGeneration !== undefined) st.observedGeneration = status.observedGeneration;
  if (status.lastScaleTime !== undefined) st.lastScaleTime = status.lastScaleTime;
  if (status.currentReplicas !== undefined && status.currentReplicas !== 0) {
    st.currentReplicas = status.currentReplicas;
  }
  st.desiredReplicas = status.desiredReplicas ?? 0;
  let currentMetrics: Obj[] | undefined = status.currentCPUUtilizationPercentage === undefined
    ? undefined
    : [{
      type: "Resource",
      resource: {
        name: "cpu",
        current: { averageUtilization: status.currentCPUUtilizationPercentage },
      },
    }];
  const statusesText = annotation(METRIC_STATUSES_ANNOTATION);
  if (statusesText !== undefined) {
    const current = goUnmarshal(statusesText, slice(V1_METRIC_STATUS));
    // ignore any existing status values: the annotation's have more information
    if (current !== FAILED) currentMetrics = ((current ?? []) as Obj[]).map(v1MetricStatus);
  }
  if (currentMetrics !== undefined) st.currentMetrics = currentMetrics;
  const conditionsText = annotation(CONDITIONS_ANNOTATION);
  if (conditionsText !== undefined) {
    const conditions = goUnmarshal(conditionsText, slice(V1_CONDITION));
    // an empty list is not shown (omitempty)
    if (conditions !== FAILED && Array.isArray(conditions) && conditions.length > 0) {
      st.conditions = (conditions as Obj[]).map((c) => {
        const o: Obj = { type: c.type ?? "", status: c.status ?? "" };
        if (c.lastTransitionTime !== undefined) o.lastTransitionTime = c.lastTransitionTime;
        if (c.reason) o.reason = c.reason;
        if (c.message) o.message = c.message;
        return o;
      });
    }
  }

  const result: Obj = {
    ...hpa,
    apiVersion: "autoscaling/v2",
    kind: hpa.kind ?? "HorizontalPodAutoscaler",
    metadata: withoutRoundTripAnnotations(hpa.metadata),
    spec: defaultV2(out),
  };
  if (isZeroStatus(st)) delete result.status;
  else result.status = st;
  return result;
}

function scaleTargetRef(ref: unknown): Obj {
  if (!isObj(ref)) return { kind: "", name: "" };
  const out: Obj = { kind: ref.kind ?? "", name: ref.name ?? "" };
  if (ref.apiVersion !== undefined && ref.apiVersion !== "") out.apiVersion = ref.apiVersion;
  return out;
}

function cpuMetric(utilization: unknown): Obj {
  return {
    type: "Resource",
    resource: { name: "cpu", target: { type: "Utilization", averageUtilization: utilization } },
  };
}

function isZeroStatus(st: Obj): boolean {
  return Object.keys(st).every((k) => k === "desiredReplicas") && st.desiredReplicas === 0;
}

/** A v2 MetricIdentifier. */
function identifier(name: unknown, selector: unknown): Obj {
  const out: Obj = { name: name ?? "" };
  if (selector !== undefined) out.selector = selector;
  return out;
}

/** A v2 MetricTarget or MetricValueStatus without its absent fields. */
function target(fields: Obj): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) out[k] = v;
  return out;
}

function reference(ref: Obj | undefined): Obj {
  const out: Obj = { kind: ref?.kind ?? "", name: ref?.name ?? "" };
  if (ref?.apiVersion) out.apiVersion = ref.apiVersion;
  return out;
}

const ZERO = "0";

/** A v1 MetricSpec (decoded from the annotation) as v2. */
function v1MetricSpec(m: Obj): Obj {
  const out: Obj = { type: m.type ?? "" };
  if (m.object !== undefined) {
    const o = m.object as Obj;
    const targetValue = (o.targetValue as string | undefined) ?? ZERO;
    // Kubernetes 1.36: an AverageValue target keeps targetValue only when it is not zero
    const value = o.averageValue === undefined
      ? targetValue
      : isZeroQuantity(targetValue)
      ? undefined
      : targetValue;
    out.object = {
      describedObject: reference(o.target as Obj | undefined),
      metric: identifier(o.metricName, o.selector),
      target: target({
        type: o.averageValue === undefined ? "Value" : "AverageValue",
        value,
        averageValue: o.averageValue,
      }),
    };
  }
  if (m.pods !== undefined) {
    const p = m.pods as Obj;
    out.pods = {
      metric: identifier(p.metricName, p.selector),
      target: { type: "AverageValue", averageValue: p.targetAverageValue ?? ZERO },
    };
  }
  if (m.resource !== undefined) {
    const r = m.resource as Obj;
    out.resource = { name: r.name ?? "", target: resourceTarget(r) };
  }
  if (m.containerResource !== undefined) {
    const r = m.containerResource as Obj;
    out.containerResource = {
      name: r.name ?? "",
      container: r.container ?? "",
      target: resourceTarget(r),
    };
  }
  if (m.external !== undefined) {
    const e = m.external as Obj;
    out.external = {
      metric: identifier(e.metricName, e.metricSelector),
      target: target({
        type: e.targetValue === undefined ? "AverageValue" : "Value",
        value: e.targetValue,
        averageValue: e.targetAverageValue,
      }),
    };
  }
  return out;
}

function resourceTarget(r: Obj): Obj {
  return target({
    type: r.targetAverageUtilization === undefined ? "AverageValue" : "Utilization",
    averageValue: r.targetAverageValue,
    averageUtilization: r.targetAverageUtilization,
  });
}

/** A v1 MetricStatus (decoded from the annotation) as v2. */
function v1MetricStatus(m: Obj): Obj {
  const out: Obj = { type: m.type ?? "" };
  if (m.object !== undefined) {
    const o = m.object as Obj;
    out.object = {
      metric: identifier(o.metricName, o.selector),
      current: target({ value: o.currentValue ?? ZERO, averageValue: o.averageValue }),
      describedObject: reference(o.target as Obj | undefined),
    };
  }
  if (m.pods !== undefined) {
    const p = m.pods as Obj;
    out.pods = {
      metric: identifier(p.metricName, p.selector),
      current: { averageValue: p.currentAverageValue ?? ZERO },
    };
  }
  const resourceCurrent = (r: Obj): Obj =>
    target({
      averageValue: r.currentAverageValue ?? ZERO,
      averageUtilization: r.currentAverageUtilization,
    });
  if (m.resource !== undefined) {
    const r = m.resource as Obj;
    out.resource = { name: r.name ?? "", current: resourceCurrent(r) };
  }
  if (m.containerResource !== undefined) {
    const r = m.containerResource as Obj;
    out.containerResource = {
      name: r.name ?? "",
      current: resourceCurrent(r),
      container: r.container ?? "",
    };
  }
  if (m.external !== undefined) {
    const e = m.external as Obj;
    out.external = {
      metric: identifier(e.metricName, e.metricSelector),
      current: target({ value: e.currentValue ?? ZERO, averageValue: e.currentAverageValue }),
    };
  }
  return out;
}

/** Internal HPAScalingRules (decoded from the behavior annotation) as v2. */
function internalRules(r: Obj): Obj {
  const out: Obj = {};
  if (r.StabilizationWindowSeconds !== undefined) {
    out.stabilizationWindowSeconds = r.StabilizationWindowSeconds;
  }
  if (r.SelectPolicy !== undefined) out.selectPolicy = r.SelectPolicy;
  if (r.Policies !== undefined) {
    out.policies = (r.Policies as Obj[]).map((p) => ({
      type: p.Type ?? "",
      value: p.Value ?? 0,
      periodSeconds: p.PeriodSeconds ?? 0,
    }));
  }
  if (r.Tolerance !== undefined) out.tolerance = r.Tolerance;
  return out;
}

// ------------------------------------------------------------------ v2beta2

function fromV2beta2(hpa: Obj): Obj {
  const spec: Obj = isObj(hpa.spec) ? { ...hpa.spec } : {};
  // v2beta2 has no tolerance: the field is unknown there, the annotations carry it
  if (isObj(spec.behavior)) {
    const behavior: Obj = { ...spec.behavior };
    for (const dir of ["scaleUp", "scaleDown"]) {
      if (isObj(behavior[dir])) {
        const rules = { ...behavior[dir] as Obj };
        delete rules.tolerance;
        behavior[dir] = rules;
      }
    }
    spec.behavior = behavior;
  }
  const annotations = isObj(hpa.metadata) && isObj(hpa.metadata.annotations)
    ? hpa.metadata.annotations as Record<string, unknown>
    : {};
  for (
    const [key, dir] of [
      [SCALE_DOWN_TOLERANCE_ANNOTATION, "scaleDown"],
      [SCALE_UP_TOLERANCE_ANNOTATION, "scaleUp"],
    ] as const
  ) {
    const text = annotations[key];
    if (typeof text !== "string") continue;
    if (!isGoQuantity(text)) {
      throw new HpaConversionError(
        `failed to parse annotation "${key}": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
      );
    }
    const behavior: Obj = isObj(spec.behavior) ? spec.behavior : {};
    behavior[dir] = { ...(isObj(behavior[dir]) ? behavior[dir] as Obj : {}), tolerance: text };
    spec.behavior = behavior;
  }
  return {
    ...hpa,
    apiVersion: "autoscaling/v2",
    metadata: withoutRoundTripAnnotations(hpa.metadata),
    spec: defaultV2(spec),
  };
}

// ------------------------------------------------------------------ v2 defaults

const DEFAULT_SCALE_UP: Obj = {
  stabilizationWindowSeconds: 0,
  selectPolicy: "Max",
  policies: [
    { type: "Pods", value: 4, periodSeconds: 15 },
    { type: "Percent", value: 100, periodSeconds: 15 },
  ],
};
const DEFAULT_SCALE_DOWN: Obj = {
  selectPolicy: "Max",
  policies: [{ type: "Percent", value: 100, periodSeconds: 15 }],
};

/** pkg/apis/autoscaling/v2 SetDefaults_HorizontalPodAutoscaler, on a spec (copied). */
function defaultV2(spec: Obj): Obj {
  const out: Obj = { ...spec };
  if (out.minReplicas === undefined) out.minReplicas = 1;
  if (!Array.isArray(out.metrics) || out.metrics.length === 0) {
    out.metrics = [cpuMetric(DEFAULT_CPU_UTILIZATION)];
  }
  if (isObj(out.behavior)) {
    const b = out.behavior;
    out.behavior = {
      ...b,
      scaleUp: defaultRules(b.scaleUp, DEFAULT_SCALE_UP),
      scaleDown: defaultRules(b.scaleDown, DEFAULT_SCALE_DOWN),
    };
  }
  return out;
}

function defaultRules(rules: unknown, defaults: Obj): Obj {
  const out: Obj = structuredClone(defaults);
  if (!isObj(rules)) return out;
  for (const key of ["selectPolicy", "stabilizationWindowSeconds", "policies", "tolerance"]) {
    if (rules[key] !== undefined) out[key] = rules[key];
  }
  // an empty list replaces the default ones, and is not shown (omitempty)
  if (Array.isArray(out.policies) && out.policies.length === 0) delete out.policies;
  return out;
}

function withoutRoundTripAnnotations(metadata: unknown): unknown {
  if (!isObj(metadata) || !isObj(metadata.annotations)) return metadata;
  const annotations = metadata.annotations as Record<string, unknown>;
  if (!ROUND_TRIP_ANNOTATIONS.some((k) => Object.hasOwn(annotations, k))) return metadata;
  const kept = Object.create(Object.getPrototypeOf(annotations)) as Record<string, unknown>;
  for (const [k, v] of Object.entries(annotations)) {
    if (!ROUND_TRIP_ANNOTATIONS.includes(k)) kept[k] = v;
  }
  return { ...metadata, annotations: kept };
}

// ------------------------------------------------------------------ Go's encoding/json

/** A Go type the annotations decode into, as encoding/json sees it. */
type GoType =
  | { kind: "string" | "int32" | "int64" | "quantity" | "time" }
  | { kind: "ptr"; to: GoType }
  | { kind: "slice"; of: GoType }
  | { kind: "map"; of: GoType }
  | { kind: "struct"; fields: Readonly<Record<string, GoType>> };

const FAILED: unique symbol = Symbol("failed");
type Failed = typeof FAILED;

const STRING: GoType = { kind: "string" };
const INT32: GoType = { kind: "int32" };
const QUANTITY: GoType = { kind: "quantity" };
const TIME: GoType = { kind: "time" };
const ptr = (to: GoType): GoType => ({ kind: "ptr", to });
const slice = (of: GoType): GoType => ({ kind: "slice", of });
const struct = (fields: Record<string, GoType>): GoType => ({ kind: "struct", fields });

const LABEL_SELECTOR = struct({
  matchLabels: { kind: "map", of: STRING },
  matchExpressions: slice(struct({ key: STRING, operator: STRING, values: slice(STRING) })),
});
const REFERENCE = struct({ kind: STRING, name: STRING, apiVersion: STRING });

/** k8s.io/api/autoscaling/v1 MetricSpec. */
const V1_METRIC_SPEC = struct({
  type: STRING,
  object: ptr(struct({
    target: REFERENCE,
    metricName: STRING,
    targetValue: QUANTITY,
    selector: ptr(LABEL_SELECTOR),
    averageValue: ptr(QUANTITY),
  })),
  pods: ptr(struct({
    metricName: STRING,
    targetAverageValue: QUANTITY,
    selector: ptr(LABEL_SELECTOR),
  })),
  resource: ptr(struct({
    name: STRING,
    targetAverageUtilization: ptr(INT32),
    targetAverageValue: ptr(QUANTITY),
  })),
  containerResource: ptr(struct({
    name: STRING,
    targetAverageUtilization: ptr(INT32),
    targetAverageValue: ptr(QUANTITY),
    container: STRING,
  })),
  external: ptr(struct({
    metricName: STRING,
    metricSelector: ptr(LABEL_SELECTOR),
    targetValue: ptr(QUANTITY),
    targetAverageValue: ptr(QUANTITY),
  })),
});

/** k8s.io/api/autoscaling/v1 MetricStatus. */
const V1_METRIC_STATUS = struct({
  type: STRING,
  object: ptr(struct({
    target: REFERENCE,
    metricName: STRING,
    currentValue: QUANTITY,
    selector: ptr(LABEL_SELECTOR),
    averageValue: ptr(QUANTITY),
  })),
  pods: ptr(struct({
    metricName: STRING,
    currentAverageValue: QUANTITY,
    selector: ptr(LABEL_SELECTOR),
  })),
  resource: ptr(struct({
    name: STRING,
    currentAverageUtilization: ptr(INT32),
    currentAverageValue: QUANTITY,
  })),
  containerResource: ptr(struct({
    name: STRING,
    currentAverageUtilization: ptr(INT32),
    currentAverageValue: QUANTITY,
    container: STRING,
  })),
  external: ptr(struct({
    metricName: STRING,
    metricSelector: ptr(LABEL_SELECTOR),
    currentValue: QUANTITY,
    currentAverageValue: ptr(QUANTITY),
  })),
});

/** k8s.io/api/autoscaling/v1 HorizontalPodAutoscalerCondition. */
const V1_CONDITION = struct({
  type: STRING,
  status: STRING,
  lastTransitionTime: TIME,
  reason: STRING,
  message: STRING,
});

/** The internal HPAScalingRules: Go field names, no JSON tags. */
const INTERNAL_RULES = struct({
  StabilizationWindowSeconds: ptr(INT32),
  SelectPolicy: ptr(STRING),
  Policies: slice(struct({ Type: STRING, Value: INT32, PeriodSeconds: INT32 })),
  Tolerance: ptr(QUANTITY),
});

/** The internal HorizontalPodAutoscalerBehavior. */
const INTERNAL_BEHAVIOR = struct({ ScaleUp: ptr(INTERNAL_RULES), ScaleDown: ptr(INTERNAL_RULES) });

/**
 * `json.Unmarshal(text, &v)` into a fresh value of `type`: the decoded value (absent fields
 * and nil pointers undefined, zero scalars as their zero), or FAILED when Go returns an error
 * (syntax, a value of the wrong JSON type, an int out of range, a malformed quantity or time).
 */
function goUnmarshal(text: string, type: GoType): unknown {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return FAILED;
  }
  const ok = { value: true };
  const value = decode(json, type, undefined, ok);
  return ok.value ? value : FAILED;
}

/** encoding/json's folding of a key: ASCII case, and the Kelvin and long s signs. */
function foldKey(key: string): string {
  return key.replace(/\u212a/g, "k").replace(/\u017f/g, "s").replace(
    /[A-Z]/g,
    (c) => c.toLowerCase(),
  );
}

function zeroOf(type: GoType): unknown {
  switch (type.kind) {
    case "string":
      return "";
    case "int32":
    case "int64":
      return 0;
    case "quantity":
      return ZERO;
    case "struct":
      return {};
    default:
      return undefined;
  }
}

/** Decode `json` into a value of `type` whose current value is `into` (Go decodes in place). */
function decode(json: unknown, type: GoType, into: unknown, ok: { value: boolean }): unknown {
  const fail = (): unknown => {
    ok.value = false;
    return into;
  };
  if (json === null) {
    // null: nil for pointers, slices and maps; a no-op for other kinds (a quantity zeroes)
    if (type.kind === "ptr" || type.kind === "slice" || type.kind === "map") return undefined;
    if (type.kind === "quantity") return ZERO;
    return into;
  }
  switch (type.kind) {
    case "ptr":
      return decode(json, type.to, into ?? zeroOf(type.to), ok);
    case "string":
      return typeof json === "string" ? json : fail();
    case "int32":
    case "int64": {
      const max = type.kind === "int32" ? 2 ** 31 : 2 ** 63;
      return typeof json === "number" && Number.isInteger(json) && json >= -max && json < max
        ? json
        : fail();
    }
    case "quantity": {
      const text = typeof json === "string"
        ? json.trim()
        : typeof json === "number"
        ? String(json)
        : undefined;
      return text !== undefined && isGoQuantity(text) ? text : fail();
    }
    case "time":
      return typeof json === "string" ? goTime(json) ?? fail() : fail();
    case "slice": {
      if (!Array.isArray(json)) return fail();
      return json.map((item) => decode(item, type.of, zeroOf(type.of), ok));
    }
    case "map": {
      if (!isObj(json)) return fail();
      const out: Obj = isObj(into) ? into : {};
      for (const [k, v] of Object.entries(json)) out[k] = decode(v, type.of, zeroOf(type.of), ok);
      return out;
    }
    case "struct": {
      if (!isObj(json)) return fail();
      const out: Obj = isObj(into) ? { ...into } : {};
      const names = Object.keys(type.fields);
      for (const [k, v] of Object.entries(json)) {
        const name = names.find((n) => n === k) ?? names.find((n) => foldKey(n) === foldKey(k));
        if (name === undefined) continue;
        const field = type.fields[name];
        out[name] = decode(v, field, out[name] ?? zeroOf(field), ok);
        if (out[name] === undefined) delete out[name];
      }
      return out;
    }
  }
}

/** metav1.Time's JSON: RFC 3339, shown in UTC to the second; undefined when malformed. */
function goTime(s: string): string | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/
    .exec(s);
  if (!m) return undefined;
  const ms = Date.parse(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}${m[8].toUpperCase()}`);
  if (Number.isNaN(ms)) return undefined;
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** What resource.ParseQuantity accepts (the suffixes Kubernetes knows). */
const GO_QUANTITY =
  /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$/;

function isGoQuantity(s: string): boolean {
  return GO_QUANTITY.test(s);
}

function isZeroQuantity(s: string): boolean {
  return /^[+-]?[0.]*(?:[eE][+-]?\d+|[A-Za-z]*)$/.test(s) && /\d/.test(s.replace(/[eE].*$/, ""));
}
