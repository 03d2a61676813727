/**
 * Knative's autoscaler-keda annotation API, read as autoscaler-keda reads it (issue 23) and
 * turned into the `keda.sh/v1alpha1` ScaledObject its `DesiredScaledObject` builds, in memory:
 * it is never written to the API. What KEDA makes of that ScaledObject (the HPA, the metrics and
 * how they are served) is the KEDA code of core/keda/ (issue 47, point 6): one translation, not
 * two. The source is a PodAutoscaler of class `hpa.autoscaling.knative.dev` (the annotations
 * Serving copies from the revision) or a Deployment or StatefulSet carrying the class annotation
 * in its own metadata.
 *
 * The ScaledObject is upstream's: named after the source, in its namespace, with its labels and
 * annotations, the scale target of the PA (or the workload itself),
 * `advanced.horizontalPodAutoscalerConfig.name` the source's name (so the HPA is too),
 * `maxReplicaCount` max-scale (else 2147483647), `minReplicaCount` min-scale when > 0 (1 for the
 * cpu and memory triggers), the triggers in upstream's order (`default-trigger-cpu`,
 * `default-trigger-memory` or the custom prometheus trigger, then the extra ones),
 * `scalingModifiers`, the window and the scale-up and scale-down rules as the HPA's behavior, or
 * the whole `scaled-object-override` with those fields forced. Its HPA is owned by the source,
 * not by the ScaledObject (which does not exist in the API).
 *
 * Upstream's rules are followed in upstream's order, except where upstream has a bug:
 * - a custom target is exact (`threshold: "0.5"`, not `0`; `1000`, not `1k`, which KEDA cannot
 *   read);
 * - memory with `Utilization` works (`value` is `ceil(target)`, not a quantity KEDA refuses);
 * - `Utilization` for a custom metric, a `Value` for cpu or memory, a trigger type other than
 *   prometheus and a metric type outside the three are errors here, not later inside KEDA;
 * - `invalid metric type:` prints the value, and a missing query says which annotation to set;
 * - a path-only or opaque `prometheus-address` (which upstream lets through) is an error;
 * - a scaled-object-override without `horizontalPodAutoscalerConfig` does not crash.
 *
 * Where upstream says nothing:
 * - the source's name must fit in a label value (63 characters): KEDA selects its metrics with
 *   `scaledobject.keda.sh/name: <name>`;
 * - unknown JSON fields and trigger metadata keys (`customHeaders`, `pollingInterval` ...) are
 *   errors, not silently dropped as Go's decoder drops them;
 * - a formula names prometheus triggers only, each by its name (what KEDA computes it from);
 * - the adapter's endpoint policy (`--allowed-metric-endpoints`, `--endpoints-in-own-namespace`)
 *   and PromQL scoping (`--prometheus-enforce-namespace-label`) apply to the prometheus triggers
 *   as to an HPA's own annotations: a refused server is an error, a scoped query replaces the
 *   trigger's query;
 * - quantities are written as the API server stores them (`1024` Mi is `1Gi`).
 *
 * @module
 */
import { quote } from "../quote.ts";
import { binaryQuantity, parseQuantity, storedQuantity } from "../kubernetes/quantity.ts";
import { parseDuration } from "../duration.ts";
import { checkFormula, compileFormula } from "../formula.ts";
import { parseGoFloat } from "../estafette/guard.ts";
import { checkEndpoint, type EndpointPolicy } from "../endpoint_policy.ts";
import type { PromQLScoper } from "../kube_metrics_adapter/collector_config.ts";
import { DEFAULT_KNATIVE_PROMETHEUS_ADDRESS } from "./defaults.ts";
import type { FallbackBehavior } from "../fallback.ts";
import {
  type KedaHpa,
  kedaHpaFor,
  type KedaHpaOwner,
  type KedaHpaStatus,
  kedaMilliQuantity,
  type KedaTriggerMetric,
} from "../keda/hpa.ts";
import { KEDA_API_VERSION, KEDA_SCALED_OBJECT_LABEL } from "../keda/names.ts";
import type { ScaledObject, ScaledObjectTrigger } from "../keda/scaled_object.ts";
import type { TriggerParams } from "../keda/typed_config.ts";

// ---------------------------------------------------------------------------------------------
// Names

const A = "autoscaling.knative.dev/";

/** The annotation keys read, as Knative Serving and autoscaler-keda spell them. */
export const KNATIVE_ANNOTATIONS = {
  class: `${A}class`,
  metric: `${A}metric`,
  target: `${A}target`,
  minScale: `${A}min-scale`,
  minScaleAlias: `${A}minScale`,
  maxScale: `${A}max-scale`,
  maxScaleAlias: `${A}maxScale`,
  initialScale: `${A}initial-scale`,
  initialScaleAlias: `${A}initialScale`,
  window: `${A}window`,
  metricType: `${A}metric-type`,
  prometheusAddress: `${A}prometheus-address`,
  prometheusQuery: `${A}prometheus-query`,
  triggerPrometheusName: `${A}trigger-prometheus-name`,
  triggerPrometheusAuthName: `${A}trigger-prometheus-auth-name`,
  triggerPrometheusAuthKind: `${A}trigger-prometheus-auth-kind`,
  triggerPrometheusAuthModes: `${A}trigger-prometheus-auth-modes`,
  extraPrometheusTriggers: `${A}extra-prometheus-triggers`,
  scalingModifiers: `${A}scaling-modifiers`,
  hpaScaleUpRules: `${A}hpa-scale-up-rules`,
  hpaScaleDownRules: `${A}hpa-scale-down-rules`,
  scaledObjectOverride: `${A}scaled-object-override`,
  scaledObjectAutoCreate: `${A}scaled-object-auto-create`,
} as const;

/** The class annotation. */
export const KNATIVE_CLASS_ANNOTATION = KNATIVE_ANNOTATIONS.class;
/** The class whose PodAutoscalers (and annotated workloads) get an HPA from this mapping. */
export const KNATIVE_HPA_CLASS = "hpa.autoscaling.knative.dev";
/** The `apiVersion` of Knative's PodAutoscaler. */
export const KNATIVE_PA_API_VERSION = "autoscaling.internal.knative.dev/v1alpha1";
/** The kind of Knative's PodAutoscaler. */
export const KNATIVE_PA_KIND = "PodAutoscaler";
export { DEFAULT_KNATIVE_PROMETHEUS_ADDRESS };
/** The name of the custom metric's trigger when `trigger-prometheus-name` is not set. */
export const DEFAULT_KNATIVE_TRIGGER_NAME = "default-trigger-custom";
/** The cpu target when none is given (autoscaler-keda's `defaultCPUTarget`). */
export const DEFAULT_KNATIVE_CPU_TARGET = 70;

const MAX_INT32 = 2_147_483_647;
/** The largest memory target in Mi whose bytes fit in an int64. */
const MAX_MEMORY_MI = 2 ** 43 - 1;
const PROMETHEUS = "prometheus";

// ---------------------------------------------------------------------------------------------
// Types

/** The `config-autoscaler` and `config-autoscaler-keda` values the mapping reads. */
export interface KnativeConfig {
  /** `autoscaler.keda.prometheus-address`; {@linkcode DEFAULT_KNATIVE_PROMETHEUS_ADDRESS}. */
  prometheusAddress?: string;
  /** `config-autoscaler` `min-scale` (0). */
  minScale?: number;
  /** `config-autoscaler` `max-scale` (0: unbounded). */
  maxScale?: number;
  /** `config-autoscaler` `initial-scale` (1). */
  initialScale?: number;
  /** `config-autoscaler` `allow-zero-initial-scale` (false). */
  allowZeroInitialScale?: boolean;
  /** `autoscaler.keda.scaledobject-autocreate` (true). */
  scaledObjectAutoCreate?: boolean;
}

/** autoscaling/v2 HPAScalingPolicy. */
export interface KnativeScalingPolicy {
  type: "Pods" | "Percent";
  value: number;
  periodSeconds: number;
}

/** autoscaling/v2 HPAScalingRules. */
export interface KnativeScalingRules {
  stabilizationWindowSeconds?: number;
  selectPolicy?: "Max" | "Min" | "Disabled";
  policies?: KnativeScalingPolicy[];
  tolerance?: string;
}

/** autoscaling/v2 HorizontalPodAutoscalerBehavior. */
export interface KnativeHpaBehavior {
  scaleUp?: KnativeScalingRules;
  scaleDown?: KnativeScalingRules;
}

/** The kinds {@linkcode knativeScaledObjectFor} maps. */
export type KnativeSourceKind = "PodAutoscaler" | "Deployment" | "StatefulSet";

/** Options of {@linkcode knativeScaledObjectFor}. */
export interface KnativeScaledObjectOptions {
  /**
   * The kind of the source, for objects read without `apiVersion` and `kind` (list items of
   * some clients); its `apiVersion` is then the kind's (`apps/v1` for workloads). An object
   * that names another kind is an error.
   */
  kind?: KnativeSourceKind;
  /** Where a prometheus trigger's `serverAddress` may point (the serve and plan flags). */
  endpointPolicy?: EndpointPolicy;
  /** Scopes a prometheus trigger's query to the source's namespace (the serve flag). */
  scopePromQL?: PromQLScoper;
}

/** What every outcome of the mapping carries. */
export interface KnativeMappingCommon {
  /**
   * Whether the HPA is created and kept up to date (`scaled-object-auto-create`, else the
   * configuration). When false the HPA is the user's: an error of the mapping is moot then.
   */
  autoCreate: boolean;
  /** The min-scale in effect, as Knative's `ScaleBounds` gives it (0 for an unreachable PA). */
  minScale: number;
  /**
   * The initial scale in effect (Knative's `GetInitialScale`): the PA is
   * ScaleTargetInitialized once the HPA's current replicas reach max(minScale, initialScale).
   */
  initialScale: number;
  /** Values that were ignored or replaced, with what was used instead. */
  warnings: string[];
}

/** Where one trigger of the ScaledObject comes from: the annotation and its value. */
export interface KnativeTriggerSource {
  annotation: string;
  value?: string;
}

/** The ScaledObject autoscaler-keda would create for the source (in memory only). */
export interface KnativeScaledObject extends KnativeMappingCommon {
  scaledObject: ScaledObject;
  /** The source as the controller of the HPA (the ScaledObject does not exist in the API). */
  owner: KedaHpaOwner;
  /** Where each trigger comes from, by trigger index (for errors of KEDA's step). */
  triggerSources: KnativeTriggerSource[];
}

/** The ScaledObject and what KEDA makes of it. */
export interface KnativeHpa extends KnativeScaledObject {
  /** KEDA's HPA, owned by the source. */
  hpa: KedaHpa;
  /** The triggers' metrics (the plans' input, core/keda/plan.ts). */
  metrics: KedaTriggerMetric[];
  /** The ScaledObject status fields KEDA would write. */
  status: KedaHpaStatus;
}

/** A mapping that failed: shown as a PA condition or a Warning event on the workload. */
export interface KnativeMappingError extends KnativeMappingCommon {
  /** What is wrong, naming the annotation and quoting the value. */
  error: string;
  /** The annotation at fault, when one is. */
  annotation?: string;
  /** Its value, when it is set. */
  value?: string;
}

/** The outcome of {@linkcode knativeScaledObjectFor}: `"error" in result` tells them apart. */
export type KnativeScaledObjectResult = KnativeScaledObject | KnativeMappingError;

/** The outcome of {@linkcode knativeHpaFor}: `"error" in result` tells them apart. */
export type KnativeHpaResult = KnativeHpa | KnativeMappingError;

/** Options of {@linkcode knativeHpaOf}: what KEDA's step needs besides the ScaledObject. */
export interface KnativeHpaOfOptions {
  /** `app.kubernetes.io/version` of the HPA: this adapter's version. */
  version: string;
  /** Each trigger's resolved parameters (the bearer token of its TriggerAuthentication ...). */
  params?: readonly (TriggerParams | undefined)[];
  /** Each trigger's TriggerAuthentication `podIdentity.provider`. */
  podIdentities?: readonly (string | undefined)[];
}

/** Options of {@linkcode knativeHpaFor}. */
export interface KnativeHpaForOptions extends KnativeScaledObjectOptions, KnativeHpaOfOptions {
  /** The `config-autoscaler` and `config-autoscaler-keda` values. */
  config?: KnativeConfig;
}

// ---------------------------------------------------------------------------------------------
// Problems

/** A problem that stops the mapping; it becomes the error result. */
class MappingProblem extends Error {
  annotation?: string;
  value?: string;
  constructor(message: string, annotation?: string, value?: string) {
    super(message);
    this.annotation = annotation;
    this.value = value;
  }
}

function at(annotation: string): string {
  return ` (annotation ${annotation})`;
}

/** `<subject> (annotation <key>)[: <why>]`, for that annotation and its value. */
function problem(subject: string, annotation: string, value?: string, why = ""): MappingProblem {
  return new MappingProblem(
    `${subject}${at(annotation)}${why === "" ? "" : `: ${why}`}`,
    annotation,
    value,
  );
}

/** `a, b or c`. */
function orList(items: readonly string[]): string {
  return items.length < 2 ? items.join("") : `${items.slice(0, -1).join(", ")} or ${items.at(-1)}`;
}

/** What a JSON value is, for messages. */
function kindOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "an object";
  if (typeof v === "string") return "a string";
  if (typeof v === "number") return "a number";
  return `a ${typeof v}`;
}

/** A JSON annotation, for messages. */
interface JsonSource {
  annotation: string;
  value: string;
  /** Upstream's noun: `extra prometheus triggers`, `scale up rules` ... */
  noun: string;
}

/** Upstream's unmarshal error: not JSON, or a value of the wrong JSON type. */
function unmarshal(src: JsonSource, detail: string): MappingProblem {
  return problem(`unable to unmarshal ${src.noun}: ${detail}`, src.annotation, src.value);
}

function parseJson(src: JsonSource): unknown {
  try {
    return JSON.parse(src.value);
  } catch {
    // the runtimes word JSON.parse's errors differently: the value says enough
    throw unmarshal(src, `invalid JSON ${quote(src.value)}`);
  }
}

/** JSON `null` is absent, as Go reads it into a pointer. */
function present(v: unknown): boolean {
  return v !== undefined && v !== null;
}

function objectAt(v: unknown, path: string, src: JsonSource): Record<string, unknown> {
  if (v === null || typeof v !== "object" || Array.isArray(v)) {
    throw unmarshal(src, `${path === "" ? "" : `${path}: `}want an object, got ${kindOf(v)}`);
  }
  return v as Record<string, unknown>;
}

function stringAt(
  o: Record<string, unknown>,
  key: string,
  prefix: string,
  src: JsonSource,
): string | undefined {
  const v = o[key];
  if (!present(v)) return undefined;
  if (typeof v !== "string") {
    throw unmarshal(src, `${prefix}${key}: want a string, got ${kindOf(v)}`);
  }
  return v;
}

function int32At(
  o: Record<string, unknown>,
  key: string,
  prefix: string,
  src: JsonSource,
): number | undefined {
  const v = o[key];
  if (!present(v)) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v > MAX_INT32 || v < -MAX_INT32 - 1) {
    const got = typeof v === "number" ? String(v) : kindOf(v);
    throw unmarshal(src, `${prefix}${key}: want an int32, got ${got}`);
  }
  return v;
}

/** Go ignores unknown fields; we refuse them, so that a typo is not a silent no-op. */
function onlyFields(
  o: Record<string, unknown>,
  allowed: readonly string[],
  prefix: string,
  src: JsonSource,
  hint = `want ${orList(allowed)}`,
): void {
  for (const k of Object.keys(o)) {
    if (!allowed.includes(k)) {
      throw problem(
        `unsupported field ${prefix}${k} in the ${src.noun}`,
        src.annotation,
        src.value,
        hint,
      );
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Go's parsers

/**
 * Go's `strconv.ParseBool`: `1 t T TRUE true True` and `0 f F FALSE false False`; undefined
 * for anything else.
 */
function parseGoBool(s: string): boolean | undefined {
  if (["1", "t", "T", "TRUE", "true", "True"].includes(s)) return true;
  if (["0", "f", "F", "FALSE", "false", "False"].includes(s)) return false;
  return undefined;
}

/** Go's `strconv.ParseInt(s, 10, 32)`; undefined when Go fails. */
function parseInt32(s: string): number | undefined {
  if (!/^[+-]?[0-9]+$/.test(s)) return undefined;
  const n = Number(s);
  return n >= -MAX_INT32 - 1 && n <= MAX_INT32 ? n : undefined;
}

/** Go's `strconv.ParseFloat(s, 64)`; undefined when Go fails. */
function parseFloat64(s: string): number | undefined {
  try {
    return parseGoFloat(s);
  } catch {
    return undefined;
  }
}

/** A JSON number as Go's `json.Unmarshal` reads it into a float64 (KEDA's `threshold`). */
function parseJsonNumber(s: string): number | undefined {
  if (!/^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/.test(s)) return undefined;
  const n = Number(s);
  return Number.isFinite(n) ? n : undefined;
}

/** A DNS-1123 label (a namespace name). */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

const isSpace = (c: string | undefined): boolean =>
  c === " " || c === "\t" || c === "\r" || c === "\n";

function trimStartSpace(s: string): string {
  let i = 0;
  while (i < s.length && isSpace(s[i])) i++;
  return s.slice(i);
}

function trimEndSpace(s: string): string {
  let i = s.length;
  while (i > 0 && isSpace(s[i - 1])) i--;
  return s.slice(0, i);
}

/**
 * Why Go's `url.ParseRequestURI` refuses a value (its own words), or undefined when it takes
 * it. Host and port are left to the WHATWG parser afterwards.
 */
function requestUriProblem(raw: string): string | undefined {
  // deno-lint-ignore no-control-regex
  if (/[\x00-\x1f\x7f]/.test(raw)) return "net/url: invalid control character in URL";
  if (raw === "") return "empty url";
  if (raw === "*") return undefined;
  let scheme = "";
  let rest = raw;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    if (/[A-Za-z]/.test(c)) continue;
    if (/[0-9+.-]/.test(c)) {
      if (i === 0) break;
      continue;
    }
    if (c === ":") {
      if (i === 0) return "missing protocol scheme";
      scheme = raw.slice(0, i);
      rest = raw.slice(i + 1);
    }
    break;
  }
  const q = rest.indexOf("?");
  if (q >= 0) rest = rest.slice(0, q);
  if (!rest.startsWith("/") && scheme === "") return "invalid URI for request";
  return undefined;
}

/**
 * Why a Prometheus address cannot be used, or undefined when it can: Go's
 * `url.ParseRequestURI` must take it (autoscaler-keda's check, with Go's words), and it must
 * be an absolute http(s) URL with a host, which is what the prometheus collector can query.
 * Upstream also lets a path-only (`/prom`) or opaque (`http:9090`) value through; not here.
 *
 * @example
 * ```ts
 * prometheusAddressProblem("http://prometheus:9090"); // undefined
 * prometheusAddressProblem("http//9090"); // "invalid URI for request"
 * prometheusAddressProblem("/prom"); // "want an http:// or https:// URL with a host"
 * ```
 */
export function prometheusAddressProblem(address: string): string | undefined {
  const goProblem = requestUriProblem(address);
  if (goProblem !== undefined) return goProblem;
  const want = "want an http:// or https:// URL with a host";
  if (!/^https?:\/\//i.test(address)) return want;
  let url: URL;
  try {
    url = new URL(address);
  } catch {
    return "invalid host or port";
  }
  return url.hostname === "" ? want : undefined;
}

/**
 * Render a query as autoscaler-keda does with Go's `text/template`, in the subset that queries
 * use: `{{ .revisionName }}` (any field: an unknown one renders `<no value>`, as Go prints a
 * missing map key), `{{ . }}`, comments `{{/* ... *\/}}`, and the trim markers `{{- ` and
 * ` -}}`. Anything else in `{{ }}` (pipelines, functions, `if`, `range`) is refused rather than
 * rendered wrongly. Throws an Error `template initialization failed: ...` naming the position of
 * the action.
 *
 * @example
 * ```ts
 * renderQueryTemplate('sum(rate(x{pod=~"{{ .revisionName }}.*"}[1m]))', { revisionName: "rev-1" });
 * // 'sum(rate(x{pod=~"rev-1.*"}[1m]))'
 * ```
 */
export function renderQueryTemplate(
  text: string,
  data: Readonly<Record<string, string>>,
): string {
  const fail = (why: string, pos: number, hint = ""): Error =>
    new Error(`template initialization failed: ${why} at position ${pos}${hint}`);
  let out = "";
  let i = 0;
  let trimNext = false;
  while (i <= text.length) {
    const open = text.indexOf("{{", i);
    let literal = open < 0 ? text.slice(i) : text.slice(i, open);
    if (trimNext) literal = trimStartSpace(literal);
    trimNext = false;
    if (open < 0) {
      out += literal;
      break;
    }
    let start = open + 2;
    if (text[start] === "-" && isSpace(text[start + 1])) {
      literal = trimEndSpace(literal);
      start += 2;
    }
    out += literal;
    if (text.startsWith("/*", start)) {
      const end = text.indexOf("*/", start + 2);
      if (end < 0) throw fail("unclosed comment", open);
      let after = end + 2;
      if (isSpace(text[after]) && text[after + 1] === "-" && text.startsWith("}}", after + 2)) {
        trimNext = true;
        after += 2;
      }
      if (!text.startsWith("}}", after)) throw fail("comment ends before closing delimiter", open);
      i = after + 2;
      continue;
    }
    const close = text.indexOf("}}", start);
    if (close < 0) throw fail("unclosed action", open);
    let inner = text.slice(start, close);
    if (inner.length >= 2 && isSpace(inner[inner.length - 2]) && inner.endsWith("-")) {
      trimNext = true;
      inner = inner.slice(0, -2);
    }
    const action = trimEndSpace(trimStartSpace(inner));
    if (action === "") throw fail("missing value for command", open);
    if (action === ".") {
      const entries = Object.keys(data).sort().map((k) => `${k}:${data[k]}`);
      out += `map[${entries.join(" ")}]`;
    } else if (/^\.[A-Za-z_][A-Za-z0-9_]*$/.test(action)) {
      const field = action.slice(1);
      out += Object.hasOwn(data, field) ? data[field] : "<no value>";
    } else {
      throw fail(
        `unsupported action ${quote(text.slice(open, close + 2))}`,
        open,
        ": only fields such as {{ .revisionName }}, {{ . }} and comments are rendered",
      );
    }
    i = close + 2;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The source

/** The object the HPA is made for, as read from a PodAutoscaler or a workload. */
interface Source {
  mode: "pa" | "workload";
  apiVersion: string;
  kind: string;
  name: string;
  namespace: string;
  uid: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  scaleTargetRef: { apiVersion: string; kind: string; name: string };
  unreachable: boolean;
}

const WORKLOAD_KINDS = ["Deployment", "StatefulSet"];

function stringMap(v: unknown, field: string, what: string): Record<string, string> {
  if (v === undefined || v === null) return {};
  if (typeof v !== "object" || Array.isArray(v)) {
    throw new MappingProblem(`invalid ${what}: ${field} must be a map of strings`);
  }
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) {
    if (typeof x !== "string") {
      throw new MappingProblem(`invalid ${what}: ${field}[${JSON.stringify(k)}] must be a string`);
    }
    out[k] = x;
  }
  return out;
}

function readSource(obj: unknown, declared: KnativeSourceKind | undefined): Source {
  if (obj === null || typeof obj !== "object" || Array.isArray(obj)) {
    throw new MappingProblem(
      `want a PodAutoscaler, a Deployment or a StatefulSet, got ${kindOf(obj)}`,
    );
  }
  const o = obj as Record<string, unknown>;
  // objects from a list or a watch may come without apiVersion and kind: the caller says
  const apiVersion = typeof o.apiVersion === "string" && o.apiVersion !== ""
    ? o.apiVersion
    : declared === undefined
    ? ""
    : declared === KNATIVE_PA_KIND
    ? KNATIVE_PA_API_VERSION
    : "apps/v1";
  const kind = typeof o.kind === "string" && o.kind !== "" ? o.kind : declared ?? "";
  if (declared !== undefined && kind !== declared) {
    throw new MappingProblem(`want a ${declared}, got ${quote(kind)}`);
  }
  let mode: Source["mode"];
  if (apiVersion === KNATIVE_PA_API_VERSION && kind === KNATIVE_PA_KIND) mode = "pa";
  else if (apiVersion === "apps/v1" && WORKLOAD_KINDS.includes(kind)) mode = "workload";
  else {
    throw new MappingProblem(
      `unsupported object ${quote(kind)} of apiVersion ${
        quote(apiVersion)
      }: want a PodAutoscaler (${KNATIVE_PA_API_VERSION}), a Deployment or a StatefulSet (apps/v1)`,
    );
  }
  const meta = (o.metadata ?? {}) as Record<string, unknown>;
  const name = typeof meta.name === "string" ? meta.name : "";
  if (name === "") throw new MappingProblem(`invalid ${kind}: metadata.name is required`);
  const namespace = typeof meta.namespace === "string" && meta.namespace !== ""
    ? meta.namespace
    : "default";
  const what = `${kind} ${namespace}/${name}`;
  const uid = typeof meta.uid === "string" ? meta.uid : "";
  const labels = stringMap(meta.labels, "metadata.labels", what);
  const annotations = stringMap(meta.annotations, "metadata.annotations", what);
  const spec = (o.spec ?? {}) as Record<string, unknown>;
  let scaleTargetRef: Source["scaleTargetRef"];
  if (mode === "pa") {
    const ref = (spec.scaleTargetRef ?? {}) as Record<string, unknown>;
    const field = (k: string) => typeof ref[k] === "string" ? ref[k] as string : "";
    if (field("apiVersion") === "" || field("kind") === "" || field("name") === "") {
      throw new MappingProblem(
        `invalid ${what}: spec.scaleTargetRef needs apiVersion, kind and name`,
      );
    }
    scaleTargetRef = { apiVersion: field("apiVersion"), kind: field("kind"), name: field("name") };
  } else scaleTargetRef = { apiVersion, kind, name };
  if (name.length > 63) {
    throw new MappingProblem(
      `name of ${what} is longer than 63 characters: label ${KEDA_SCALED_OBJECT_LABEL} of KEDA's metric selectors cannot hold it`,
    );
  }
  return {
    mode,
    apiVersion,
    kind,
    name,
    namespace,
    uid,
    labels,
    annotations,
    scaleTargetRef,
    unreachable: mode === "pa" && spec.reachability === "Unreachable",
  };
}

/** Knative's `kmap.KeyPriority.Get`: the first key present wins, even with a bad value. */
function firstPresent(
  annotations: Readonly<Record<string, string>>,
  keys: readonly string[],
): [string, string] | undefined {
  for (const k of keys) if (Object.hasOwn(annotations, k)) return [k, annotations[k]];
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// ---------------------------------------------------------------------------------------------
// The ScaledObject subset: what autoscaler-keda builds (or the override holds), before the HPA

type ResourceName = "cpu" | "memory";

/** What every trigger carries besides its own fields. */
interface TriggerBase {
  /** The KEDA trigger name ("" for none). */
  name: string;
  /** The trigger as it goes into the ScaledObject. */
  keda: ScaledObjectTrigger;
  /** The annotation it comes from and its value, for messages. */
  annotation: string;
  value: string | undefined;
}

interface ResourceTrigger extends TriggerBase {
  type: ResourceName;
}

interface PrometheusTrigger extends TriggerBase {
  type: "prometheus";
  query: string;
  serverAddress: string;
  /** Where the address comes from, for the endpoint policy's messages. */
  addressAnnotation?: string;
  /** Where the query comes from, for the PromQL scope's messages. */
  queryAnnotation?: string;
}

type Trigger = ResourceTrigger | PrometheusTrigger;

interface Modifiers {
  formula: string;
  /** The object as it goes into the ScaledObject (the strings as given). */
  keda: NonNullable<NonNullable<ScaledObject["spec"]["advanced"]>["scalingModifiers"]>;
  /** `the scaling modifiers` or where in the override, for messages. */
  where: string;
  annotation: string;
  value: string;
}

interface FallbackSpec {
  failureThreshold: number;
  replicas: number;
  behavior?: FallbackBehavior;
}

/** What the ScaledObject's spec is made from. */
interface Desired {
  /** Unset: KEDA's default (the HPA's minReplicas is then 1). */
  minReplicaCount?: number;
  triggers: Trigger[];
  /** Set (possibly empty) when the annotation or the override has it. */
  modifiers?: Modifiers | null;
  behavior?: KnativeHpaBehavior;
  fallback?: FallbackSpec;
}

const AUTH_KINDS: readonly string[] = ["TriggerAuthentication", "ClusterTriggerAuthentication"];
type AuthKind = "TriggerAuthentication" | "ClusterTriggerAuthentication";

/** A number > 0 that KEDA's milli quantity does not make 0 (its HPA targets have 3 decimals). */
function validTarget(n: number): boolean {
  return Number.isFinite(n) && n > 0 && kedaMilliQuantity(n) !== "0";
}

/** A quantity > 0 as stored, or undefined. */
function positiveQuantity(s: string): string | undefined {
  try {
    return parseQuantity(s) > 0 ? storedQuantity(s) : undefined;
  } catch {
    return undefined;
  }
}

const TRIGGER_FIELDS = [
  "type",
  "name",
  "metadata",
  "metricType",
  "authenticationRef",
  "useCachedMetrics",
];
const PROMETHEUS_METADATA = [
  "serverAddress",
  "query",
  "threshold",
  "activationThreshold",
  "namespace",
  "ignoreNullValues",
  "authModes",
];
const RESOURCE_METADATA = ["value", "containerName", "type"];

/** The triggers of one JSON annotation. */
interface TriggerList {
  src: JsonSource;
  /** The path of the list in the JSON (`` or `spec.triggers`). */
  path: string;
  /** How a trigger is named in messages. */
  label: (index: number, name: string) => string;
  /** The trigger types it takes. */
  types: readonly string[];
}

/** One KEDA `ScaleTriggers` entry of a JSON annotation. */
function readTrigger(raw: unknown, index: number, list: TriggerList): Trigger {
  const { src } = list;
  const path = `${list.path}[${index}]`;
  const o = objectAt(raw, path, src);
  const name = stringAt(o, "name", `${path}.`, src) ?? "";
  const where = list.label(index, name);
  const fail = (subject: string, why?: string) =>
    problem(`${subject} of ${where}`, src.annotation, src.value, why);
  const type = stringAt(o, "type", `${path}.`, src) ?? "";
  if (type === "") throw fail("missing type");
  if (!list.types.includes(type)) {
    throw fail(`unsupported type ${quote(type)}`, `want ${orList(list.types)}`);
  }
  onlyFields(o, TRIGGER_FIELDS, `${path}.`, src);
  const meta = objectAt(o.metadata ?? {}, `${path}.metadata`, src);
  const metadata: Record<string, string> = {};
  for (const k of Object.keys(meta)) {
    const v = stringAt(meta, k, `${path}.metadata.`, src);
    if (v !== undefined) metadata[k] = v;
  }
  const allowed = type === PROMETHEUS ? PROMETHEUS_METADATA : RESOURCE_METADATA;
  for (const k of Object.keys(metadata)) {
    if (!allowed.includes(k)) {
      throw fail(
        `unsupported metadata key ${quote(k)}`,
        `a ${type} trigger takes ${orList(allowed)}`,
      );
    }
  }
  const metricType = stringAt(o, "metricType", `${path}.`, src) ?? "";
  const cached = o.useCachedMetrics;
  if (present(cached) && typeof cached !== "boolean") {
    throw unmarshal(src, `${path}.useCachedMetrics: want a boolean, got ${kindOf(cached)}`);
  }
  // the trigger as Go decodes it (empty strings and nulls are absent)
  const keda: ScaledObjectTrigger = {
    type,
    ...(name !== "" ? { name } : {}),
    ...(typeof cached === "boolean" ? { useCachedMetrics: cached } : {}),
    metadata,
    ...(metricType !== "" ? { metricType: metricType as ScaledObjectTrigger["metricType"] } : {}),
  };
  const base = { name, keda, annotation: src.annotation, value: src.value };
  if (type !== PROMETHEUS) {
    resourceTrigger(type as ResourceName, metricType, metadata, fail);
    return { type: type as ResourceName, ...base };
  }

  if (metricType === "Utilization") {
    throw fail(
      `invalid metricType "Utilization"`,
      "'Utilization' metric type is unsupported for external metrics, allowed values are 'Value' or 'AverageValue'",
    );
  } else if (metricType !== "" && metricType !== "AverageValue" && metricType !== "Value") {
    throw fail(`invalid metricType ${quote(metricType)}`, "want AverageValue or Value");
  }
  const required = (k: string): string => {
    const v = metadata[k] ?? "";
    if (v === "") throw fail(`missing metadata.${k}`);
    return v;
  };
  const serverAddress = required("serverAddress");
  const addressProblem = prometheusAddressProblem(serverAddress);
  if (addressProblem !== undefined) {
    throw fail(
      `invalid prometheus address: ${quote(serverAddress)} in metadata.serverAddress`,
      addressProblem,
    );
  }
  const query = required("query");
  const thresholdText = required("threshold");
  const threshold = parseJsonNumber(thresholdText);
  if (threshold === undefined || !validTarget(threshold)) {
    throw fail(`invalid metadata.threshold ${quote(thresholdText)}`, "want a number > 0");
  }
  // activationThreshold is KEDA's 0 <-> 1 switch: checked, but an HPA never scales to zero
  const activation = metadata.activationThreshold ?? "";
  if (activation !== "" && parseJsonNumber(activation) === undefined) {
    throw fail(`invalid metadata.activationThreshold ${quote(activation)}`, "want a number");
  }
  const namespace = metadata.namespace ?? "";
  if (namespace !== "" && !DNS_LABEL.test(namespace)) {
    throw fail(
      `invalid metadata.namespace ${quote(namespace)}`,
      "want a Kubernetes namespace name",
    );
  }
  const ignore = metadata.ignoreNullValues ?? "";
  if (ignore !== "" && parseGoBool(ignore) === undefined) {
    throw fail(`invalid metadata.ignoreNullValues ${quote(ignore)}`, "want true or false");
  }
  const trigger: PrometheusTrigger = { type: "prometheus", ...base, query, serverAddress };
  const modes = metadata.authModes ?? "";
  if (present(o.authenticationRef)) {
    const refPath = `${path}.authenticationRef`;
    const ref = objectAt(o.authenticationRef, refPath, src);
    onlyFields(ref, ["name", "kind"], `${refPath}.`, src);
    const refName = stringAt(ref, "name", `${refPath}.`, src) ?? "";
    const refKind = stringAt(ref, "kind", `${refPath}.`, src) ?? "";
    if (refName === "") throw fail("missing authenticationRef.name");
    if (refKind !== "" && !AUTH_KINDS.includes(refKind)) {
      throw fail(`invalid auth kind: ${quote(refKind)}`, `want ${orList(AUTH_KINDS)}`);
    }
    if (modes === "") {
      throw fail(
        "you need to specify the authModes for authentication: no metadata.authModes",
        "set it to bearer",
      );
    }
    if (modes !== "bearer") {
      throw fail(`unsupported auth modes ${quote(modes)}`, "only bearer is supported");
    }
    keda.authenticationRef = {
      name: refName,
      ...(refKind !== "" ? { kind: refKind as AuthKind } : {}),
    };
  } else if (modes !== "") {
    throw fail(
      "you need to specify the name as well for authentication: metadata.authModes without authenticationRef",
    );
  }
  return trigger;
}

/** Check a cpu or memory trigger (of the override) as KEDA 2.20 reads it. */
function resourceTrigger(
  type: ResourceName,
  metricType: string,
  metadata: Record<string, string>,
  fail: (subject: string, why?: string) => MappingProblem,
): void {
  if (metricType !== "Utilization" && metricType !== "AverageValue") {
    throw fail(
      metricType === "" ? "missing metricType" : `invalid metricType ${quote(metricType)}`,
      `a ${type} trigger takes Utilization or AverageValue${
        metricType === "" && metadata.type !== undefined
          ? " (metadata.type was removed in KEDA 2.18)"
          : ""
      }`,
    );
  }
  const value = metadata.value ?? "";
  if (value === "") throw fail("missing metadata.value");
  if (metricType === "Utilization") {
    const n = parseInt32(value);
    if (n === undefined || n <= 0) {
      throw fail(
        `invalid metadata.value ${quote(value)}`,
        "Utilization takes a whole percentage > 0",
      );
    }
  } else if (positiveQuantity(value) === undefined) {
    throw fail(
      `invalid metadata.value ${quote(value)}`,
      "want a quantity > 0 such as 500m or 1Gi",
    );
  }
}

/** KEDA's scalingModifiers `{formula, target, activationTarget, metricType}`. */
function readModifiers(
  raw: unknown,
  path: string,
  src: JsonSource,
  where: string,
  warnings: string[],
): Modifiers | null {
  const o = objectAt(raw, path, src);
  const prefix = path === "" ? "" : `${path}.`;
  onlyFields(o, ["formula", "target", "activationTarget", "metricType"], prefix, src);
  const formula = stringAt(o, "formula", prefix, src) ?? "";
  const target = stringAt(o, "target", prefix, src) ?? "";
  const activation = stringAt(o, "activationTarget", prefix, src) ?? "";
  const metricType = stringAt(o, "metricType", prefix, src) ?? "";
  const fail = (subject: string, why?: string) =>
    problem(`${subject} in ${where}`, src.annotation, src.value, why);
  if (formula === "" && target === "" && activation === "" && metricType === "") {
    // KEDA: an empty scalingModifiers is no scalingModifiers
    warnings.push(`${where}${at(src.annotation)} set nothing: no formula is made`);
    return null;
  }
  if (formula === "") throw fail("ScalingModifiers.Formula is mandatory");
  if (target === "") throw fail("formula is given but target is empty");
  const t = parseFloat64(target);
  if (t === undefined || !validTarget(t)) {
    throw fail(`invalid target ${quote(target)}`, "want a number > 0");
  }
  const out: Modifiers = {
    formula,
    keda: {
      formula,
      target,
      ...(activation !== "" ? { activationTarget: activation } : {}),
      ...(metricType !== "" ? { metricType: metricType as "AverageValue" | "Value" } : {}),
    },
    where,
    annotation: src.annotation,
    value: src.value,
  };
  if (activation !== "") {
    const a = parseFloat64(activation);
    if (a === undefined || !Number.isFinite(a)) {
      throw fail(
        `scalingModifiers.ActivationTarget parsing error: ${quote(activation)}`,
        "want a number",
      );
    }
  }
  if (metricType === "Utilization") {
    throw fail(
      `invalid metricType "Utilization"`,
      "trigger type is Utilization, but it needs to be AverageValue or Value for external metrics",
    );
  } else if (metricType !== "" && metricType !== "AverageValue" && metricType !== "Value") {
    throw fail(`invalid metricType ${quote(metricType)}`, "want AverageValue or Value");
  }
  return out;
}

/** autoscaling/v2 HPAScalingRules, with the bounds the API server checks. */
function readRules(raw: unknown, path: string, src: JsonSource): KnativeScalingRules {
  const o = objectAt(raw, path, src);
  const prefix = path === "" ? "" : `${path}.`;
  const fail = (field: string, v: unknown, want: string) =>
    problem(
      `invalid ${prefix}${field} ${
        typeof v === "string" ? quote(v) : String(v)
      } in the ${src.noun}`,
      src.annotation,
      src.value,
      `want ${want}`,
    );
  onlyFields(
    o,
    ["stabilizationWindowSeconds", "selectPolicy", "policies", "tolerance"],
    prefix,
    src,
  );
  const out: KnativeScalingRules = {};
  const window = int32At(o, "stabilizationWindowSeconds", prefix, src);
  if (window !== undefined) {
    if (window < 0 || window > 3600) throw fail("stabilizationWindowSeconds", window, "0 to 3600");
    out.stabilizationWindowSeconds = window;
  }
  const select = stringAt(o, "selectPolicy", prefix, src);
  if (select !== undefined) {
    if (select !== "Max" && select !== "Min" && select !== "Disabled") {
      throw fail("selectPolicy", select, "Max, Min or Disabled");
    }
    out.selectPolicy = select;
  }
  if (present(o.policies)) {
    if (!Array.isArray(o.policies)) {
      throw unmarshal(src, `${prefix}policies: want a list, got ${kindOf(o.policies)}`);
    }
    out.policies = o.policies.map((p, i): KnativeScalingPolicy => {
      const pp = `${prefix}policies[${i}]`;
      const po = objectAt(p, pp, src);
      onlyFields(po, ["type", "value", "periodSeconds"], `${pp}.`, src);
      const type = stringAt(po, "type", `${pp}.`, src) ?? "";
      if (type !== "Pods" && type !== "Percent") {
        throw fail(`policies[${i}].type`, type, "Pods or Percent");
      }
      const value = int32At(po, "value", `${pp}.`, src) ?? 0;
      if (value < 1) throw fail(`policies[${i}].value`, value, "an integer > 0");
      const period = int32At(po, "periodSeconds", `${pp}.`, src) ?? 0;
      if (period < 1 || period > 1800) {
        throw fail(`policies[${i}].periodSeconds`, period, "1 to 1800");
      }
      return { type, value, periodSeconds: period };
    });
  }
  if (present(o.tolerance)) {
    const tolerance = o.tolerance;
    if (typeof tolerance !== "string" && typeof tolerance !== "number") {
      throw unmarshal(src, `${prefix}tolerance: want a quantity, got ${kindOf(tolerance)}`);
    }
    const text = String(tolerance);
    let n = NaN;
    try {
      n = parseQuantity(text);
    } catch {
      // not a quantity: NaN
    }
    if (!(n >= 0)) throw fail("tolerance", text, "a quantity >= 0");
    out.tolerance = storedQuantity(text);
  }
  return out;
}

const FALLBACK_BEHAVIORS: readonly FallbackBehavior[] = [
  "static",
  "currentReplicas",
  "currentReplicasIfHigher",
  "currentReplicasIfLower",
  "scalingModifiers",
];

/** KEDA's `spec.fallback` (of the override). */
function readFallback(raw: unknown, src: JsonSource): FallbackSpec {
  const path = "spec.fallback";
  const o = objectAt(raw, path, src);
  onlyFields(o, ["failureThreshold", "replicas", "behavior"], `${path}.`, src);
  const count = (key: string): number => {
    const v = int32At(o, key, `${path}.`, src);
    if (v === undefined) {
      throw problem(`missing ${path}.${key} in the ${src.noun}`, src.annotation, src.value);
    }
    if (v < 0) {
      throw problem(
        `invalid ${path}.${key} ${v} in the ${src.noun}`,
        src.annotation,
        src.value,
        "want an integer >= 0",
      );
    }
    return v;
  };
  const out: FallbackSpec = {
    failureThreshold: count("failureThreshold"),
    replicas: count("replicas"),
  };
  const behavior = stringAt(o, "behavior", `${path}.`, src) ?? "";
  if (behavior !== "") {
    if (!(FALLBACK_BEHAVIORS as readonly string[]).includes(behavior)) {
      throw problem(
        `invalid ${path}.behavior ${quote(behavior)} in the ${src.noun}`,
        src.annotation,
        src.value,
        `want ${orList(FALLBACK_BEHAVIORS)}`,
      );
    }
    out.behavior = behavior as FallbackBehavior;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// From the annotations (autoscaler-keda's DesiredScaledObject, steps 4 to 11)

/** The annotations only the custom metric's default trigger reads. */
const CUSTOM_ONLY: readonly string[] = [
  KNATIVE_ANNOTATIONS.prometheusQuery,
  KNATIVE_ANNOTATIONS.prometheusAddress,
  KNATIVE_ANNOTATIONS.triggerPrometheusName,
  KNATIVE_ANNOTATIONS.triggerPrometheusAuthName,
  KNATIVE_ANNOTATIONS.triggerPrometheusAuthKind,
  KNATIVE_ANNOTATIONS.triggerPrometheusAuthModes,
];

/** A Go duration as Go's `time.ParseDuration` reads it (no surrounding spaces), in seconds. */
function goDuration(s: string): number | undefined {
  if (s.trim() !== s) return undefined;
  try {
    return parseDuration(s);
  } catch {
    return undefined;
  }
}

function fromAnnotations(
  source: Source,
  config: KnativeConfig,
  minScale: number,
  warnings: string[],
): Desired {
  const ann = source.annotations;
  const K = KNATIVE_ANNOTATIONS;
  const desired: Desired = { triggers: [] };
  if (minScale > 0) desired.minReplicaCount = minScale;

  const modifiersText = ann[K.scalingModifiers];
  if (modifiersText !== undefined) {
    const src = { annotation: K.scalingModifiers, value: modifiersText, noun: "scaling modifiers" };
    desired.modifiers = readModifiers(parseJson(src), "", src, "the scaling modifiers", warnings);
  }

  const metric = ann[K.metric] ?? "cpu";
  const targetText = ann[K.target];
  let target: number | undefined;
  if (targetText !== undefined) {
    target = parseFloat64(targetText);
    if (target === undefined) {
      const instead = metric === "cpu" ? `, cpu uses ${DEFAULT_KNATIVE_CPU_TARGET}` : "";
      warnings.push(
        `invalid target ${quote(targetText)}${
          at(K.target)
        }: not a number, so there is no target${instead}`,
      );
    } else if (!(Number.isFinite(target) && target > 0)) {
      throw problem(
        `invalid target ${quote(targetText)}`,
        K.target,
        targetText,
        "want a number > 0",
      );
    }
  }
  if (target === undefined && metric === "cpu") target = DEFAULT_KNATIVE_CPU_TARGET;
  const resource = metric === "cpu" || metric === "memory";
  const ignored = (keys: readonly string[], why: string): void => {
    for (const k of keys) {
      if (Object.hasOwn(ann, k)) warnings.push(`annotation ${k} is ignored: ${why}`);
    }
  };
  if (resource) {
    ignored(CUSTOM_ONLY, `it configures the custom metric's trigger and the metric is ${metric}`);
  }

  if (target === undefined) {
    ignored(
      [K.metricType, ...(resource ? [] : CUSTOM_ONLY)],
      `metric ${
        quote(metric)
      } has no target (annotation ${K.target}), so there is no default trigger`,
    );
  } else {
    const typeText = ann[K.metricType];
    let metricType = metric === "cpu" ? "Utilization" : "AverageValue";
    if (typeText !== undefined) {
      const fail = (why: string) =>
        problem(`invalid metric type: ${quote(typeText)}`, K.metricType, typeText, why);
      if (!["AverageValue", "Utilization", "Value"].includes(typeText)) {
        throw fail("want AverageValue, Utilization or Value");
      }
      if (resource && typeText === "Value") {
        throw fail(`metric ${metric} takes Utilization or AverageValue`);
      }
      if (!resource && typeText === "Utilization") {
        throw fail(
          "a custom metric takes AverageValue or Value (an External metric has no Utilization)",
        );
      }
      metricType = typeText;
    }
    const percent = (): number => {
      const n = Math.ceil(target!);
      if (n > MAX_INT32) {
        throw problem(
          `invalid target ${quote(targetText!)}`,
          K.target,
          targetText,
          `want at most ${MAX_INT32}`,
        );
      }
      return n;
    };
    const resourceTrigger = (type: ResourceName, value: string): ResourceTrigger => ({
      type,
      name: `default-trigger-${type}`,
      keda: {
        type,
        name: `default-trigger-${type}`,
        metricType: metricType as "Utilization" | "AverageValue",
        metadata: { value },
      },
      annotation: K.metric,
      value: ann[K.metric],
    });
    if (metric === "cpu") {
      desired.triggers.push(resourceTrigger("cpu", String(percent())));
      desired.minReplicaCount ??= 1;
    } else if (metric === "memory") {
      let value: string;
      // upstream writes the Mi quantity for Utilization too, which KEDA cannot read
      if (metricType === "Utilization") value = String(percent());
      else {
        const mi = Math.trunc(target);
        if (mi < 1 || mi > MAX_MEMORY_MI) {
          throw problem(
            `invalid target ${quote(targetText!)}`,
            K.target,
            targetText,
            `a memory target counts whole Mi, want 1 to ${MAX_MEMORY_MI}`,
          );
        }
        value = binaryQuantity(BigInt(mi) << 20n);
      }
      desired.triggers.push(resourceTrigger("memory", value));
      desired.minReplicaCount ??= 1;
    } else {
      const type = metricType as "AverageValue" | "Value";
      desired.triggers.push(customTrigger(source, config, target, metric, type));
    }
  }

  const extrasText = ann[K.extraPrometheusTriggers];
  if (extrasText !== undefined) {
    const src = {
      annotation: K.extraPrometheusTriggers,
      value: extrasText,
      noun: "extra prometheus triggers",
    };
    const raw = parseJson(src);
    if (!Array.isArray(raw)) throw unmarshal(src, `want a list, got ${kindOf(raw)}`);
    const list: TriggerList = {
      src,
      path: "",
      label: (i, name) => name === "" ? `extra trigger [${i}]` : `extra trigger ${quote(name)}`,
      types: [PROMETHEUS],
    };
    raw.forEach((t, i) => desired.triggers.push(readTrigger(t, i, list)));
  }

  if (desired.triggers.length === 0) {
    throw new MappingProblem(
      "no triggers were specified, make sure a metric target is specified or extra triggers are added",
      K.target,
      targetText,
    );
  }

  const windowText = ann[K.window];
  if (windowText !== undefined) {
    const seconds = goDuration(windowText);
    if (seconds === undefined) {
      warnings.push(
        `invalid window ${quote(windowText)}${
          at(K.window)
        }: not a Go duration, so the stabilization windows are the HPA's defaults`,
      );
    } else {
      const s = Math.trunc(seconds);
      if (s < 0 || s > 3600) {
        throw problem(
          `invalid window ${quote(windowText)}`,
          K.window,
          windowText,
          "an HPA's stabilization window is 0s to 1h",
        );
      }
      // no policies: the Kubernetes defaults apply
      desired.behavior = {
        scaleUp: { stabilizationWindowSeconds: s },
        scaleDown: { stabilizationWindowSeconds: s },
      };
    }
  }
  for (
    const [key, side, noun] of [
      [K.hpaScaleUpRules, "scaleUp", "scale up rules"],
      [K.hpaScaleDownRules, "scaleDown", "scale down rules"],
    ] as const
  ) {
    const text = ann[key];
    if (text === undefined) continue;
    const src = { annotation: key, value: text, noun };
    desired.behavior = { ...desired.behavior, [side]: readRules(parseJson(src), "", src) };
  }
  return desired;
}

/** The custom metric's default trigger (step 7, custom). */
function customTrigger(
  source: Source,
  config: KnativeConfig,
  target: number,
  metric: string,
  metricType: "AverageValue" | "Value",
): PrometheusTrigger {
  const ann = source.annotations;
  const K = KNATIVE_ANNOTATIONS;
  const queryText = ann[K.prometheusQuery] ?? "";
  if (queryText === "") {
    throw new MappingProblem(
      `query is missing for custom metric ${quote(metric)}: set annotation ${K.prometheusQuery}`,
      K.prometheusQuery,
      ann[K.prometheusQuery],
    );
  }
  let query: string;
  try {
    query = renderQueryTemplate(queryText, { revisionName: source.name });
  } catch (e) {
    throw problem((e as Error).message, K.prometheusQuery, queryText);
  }
  const addressText = ann[K.prometheusAddress];
  const serverAddress = addressText ?? config.prometheusAddress ??
    DEFAULT_KNATIVE_PROMETHEUS_ADDRESS;
  const addressProblem = prometheusAddressProblem(serverAddress);
  if (addressProblem !== undefined) {
    if (addressText === undefined) {
      throw new MappingProblem(
        `invalid prometheus address: ${
          quote(serverAddress)
        } (the configured default): ${addressProblem}`,
      );
    }
    throw problem(
      `invalid prometheus address: ${quote(addressText)}`,
      K.prometheusAddress,
      addressText,
      addressProblem,
    );
  }
  const nameText = ann[K.triggerPrometheusName];
  const name = nameText ?? DEFAULT_KNATIVE_TRIGGER_NAME;
  if (!validTarget(target)) {
    throw problem(
      `invalid target ${quote(ann[K.target] ?? "")}`,
      K.target,
      ann[K.target],
      "want a number > 0",
    );
  }
  const metadata: Record<string, string> = {
    serverAddress,
    query,
    // exact, as KEDA reads a float (upstream truncates to an integer and writes 1000 as 1k)
    threshold: String(target),
    namespace: source.namespace,
  };
  const keda: ScaledObjectTrigger = { type: PROMETHEUS, name, metricType, metadata };
  const trigger: PrometheusTrigger = {
    type: "prometheus",
    name,
    keda,
    query,
    serverAddress,
    annotation: K.metric,
    value: ann[K.metric],
    queryAnnotation: K.prometheusQuery,
    ...(addressText !== undefined ? { addressAnnotation: K.prometheusAddress } : {}),
  };
  const authName = ann[K.triggerPrometheusAuthName];
  const authKind = ann[K.triggerPrometheusAuthKind];
  const authModes = ann[K.triggerPrometheusAuthModes];
  if (authName !== undefined) {
    const kind = authKind ?? "";
    if (kind !== "" && !AUTH_KINDS.includes(kind)) {
      throw problem(
        `invalid auth kind: ${quote(kind)}`,
        K.triggerPrometheusAuthKind,
        kind,
        `want ${orList(AUTH_KINDS)}`,
      );
    }
    if (authModes === undefined) {
      throw new MappingProblem(
        `you need to specify the authModes for authentication: set annotation ${K.triggerPrometheusAuthModes}`,
        K.triggerPrometheusAuthModes,
      );
    }
    if (authModes !== "bearer") {
      throw problem(
        `unsupported auth modes ${quote(authModes)}`,
        K.triggerPrometheusAuthModes,
        authModes,
        "only bearer is supported",
      );
    }
    metadata.authModes = authModes;
    keda.authenticationRef = {
      name: authName,
      ...(authKind !== undefined ? { kind: authKind as AuthKind } : {}),
    };
  } else if (authKind !== undefined || authModes !== undefined) {
    const key = authKind !== undefined ? K.triggerPrometheusAuthKind : K.triggerPrometheusAuthModes;
    throw problem(
      "you need to specify the name as well for authentication",
      key,
      ann[key],
      `set annotation ${K.triggerPrometheusAuthName}`,
    );
  }
  return trigger;
}

// ---------------------------------------------------------------------------------------------
// From the override (2.5): name, owner, labels, annotations, scale target, max-scale and the
// HPA's name stay forced from the source

const OVERRIDE_HINT =
  "an HPA is made from spec.triggers (prometheus, cpu, memory), spec.minReplicaCount, spec.advanced.horizontalPodAutoscalerConfig.behavior, spec.advanced.scalingModifiers and spec.fallback";

function fromOverride(text: string, warnings: string[]): Desired {
  const src: JsonSource = {
    annotation: KNATIVE_ANNOTATIONS.scaledObjectOverride,
    value: text,
    noun: "scaled object override",
  };
  const o = objectAt(parseJson(src), "", src);
  onlyFields(o, ["apiVersion", "kind", "metadata", "spec"], "", src, OVERRIDE_HINT);
  const spec = objectAt(o.spec ?? {}, "spec", src);
  const specFields = [
    "scaleTargetRef",
    "minReplicaCount",
    "maxReplicaCount",
    "advanced",
    "triggers",
    "fallback",
  ];
  onlyFields(spec, specFields, "spec.", src, OVERRIDE_HINT);
  const desired: Desired = {
    triggers: [],
  };
  const min = int32At(spec, "minReplicaCount", "spec.", src);
  if (min !== undefined) desired.minReplicaCount = min;
  // upstream crashes on an `advanced` without horizontalPodAutoscalerConfig; both are optional
  const advanced = objectAt(spec.advanced ?? {}, "spec.advanced", src);
  onlyFields(
    advanced,
    ["horizontalPodAutoscalerConfig", "scalingModifiers"],
    "spec.advanced.",
    src,
    OVERRIDE_HINT,
  );
  const configPath = "spec.advanced.horizontalPodAutoscalerConfig";
  const hpaConfig = objectAt(advanced.horizontalPodAutoscalerConfig ?? {}, configPath, src);
  onlyFields(hpaConfig, ["name", "behavior"], `${configPath}.`, src, OVERRIDE_HINT);
  if (present(hpaConfig.behavior)) {
    const path = `${configPath}.behavior`;
    const b = objectAt(hpaConfig.behavior, path, src);
    onlyFields(b, ["scaleUp", "scaleDown"], `${path}.`, src);
    const behavior: KnativeHpaBehavior = {};
    if (present(b.scaleUp)) behavior.scaleUp = readRules(b.scaleUp, `${path}.scaleUp`, src);
    if (present(b.scaleDown)) behavior.scaleDown = readRules(b.scaleDown, `${path}.scaleDown`, src);
    desired.behavior = behavior;
  }
  if (present(advanced.scalingModifiers)) {
    const path = "spec.advanced.scalingModifiers";
    const where = `${path} of the scaled object override`;
    desired.modifiers = readModifiers(advanced.scalingModifiers, path, src, where, warnings);
  }
  const triggers = spec.triggers ?? [];
  if (!Array.isArray(triggers)) {
    throw unmarshal(src, `spec.triggers: want a list, got ${kindOf(triggers)}`);
  }
  const list: TriggerList = {
    src,
    path: "spec.triggers",
    label: (i, name) =>
      `trigger ${name === "" ? `spec.triggers[${i}]` : quote(name)} of the scaled object override`,
    types: [PROMETHEUS, "cpu", "memory"],
  };
  triggers.forEach((t, i) => desired.triggers.push(readTrigger(t, i, list)));
  if (desired.triggers.length === 0) {
    throw problem("the scaled object override has no spec.triggers", src.annotation, text);
  }
  if (present(spec.fallback)) desired.fallback = readFallback(spec.fallback, src);
  return desired;
}

// ---------------------------------------------------------------------------------------------
// The ScaledObject (autoscaler-keda's setScaledObjectDefaults and what it builds)

function buildScaledObject(
  source: Source,
  desired: Desired,
  maxReplicas: number,
  override: string | undefined,
  options: KnativeScaledObjectOptions,
): { scaledObject: ScaledObject; triggerSources: KnativeTriggerSource[] } {
  const K = KNATIVE_ANNOTATIONS;
  // KEDA's ValidateTriggers: names are unique (said here with the annotation)
  const names = new Set<string>();
  for (const t of desired.triggers) {
    if (t.name === "") continue;
    if (names.has(t.name)) {
      throw problem(
        `trigger name ${quote(t.name)} is defined multiple times`,
        t.annotation,
        t.value,
        "trigger names must be unique",
      );
    }
    names.add(t.name);
  }
  const prometheus = desired.triggers.filter((t): t is PrometheusTrigger => t.type === PROMETHEUS);
  const resources = desired.triggers.filter((t): t is ResourceTrigger => t.type !== PROMETHEUS);

  // the adapter's endpoint policy and PromQL scope, as for an HPA's own annotations
  for (const t of prometheus) {
    const [addressKey, addressValue] = t.addressAnnotation !== undefined
      ? [t.addressAnnotation, source.annotations[t.addressAnnotation]]
      : [t.annotation, t.value];
    const refused = checkEndpoint(new URL(t.serverAddress), {
      namespace: source.namespace,
      policy: options.endpointPolicy,
    });
    if (refused !== undefined) {
      throw problem(
        `prometheus address ${quote(t.serverAddress)} of trigger ${quote(t.name)}`,
        addressKey,
        addressValue,
        refused,
      );
    }
    if (options.scopePromQL === undefined) continue;
    const queryKey = t.queryAnnotation ?? t.annotation;
    try {
      t.keda.metadata = {
        ...t.keda.metadata,
        query: options.scopePromQL(t.query, source.namespace),
      };
    } catch (e) {
      throw problem(
        `invalid query ${quote(t.query)} of trigger ${quote(t.name)}`,
        queryKey,
        source.annotations[queryKey],
        (e as Error).message,
      );
    }
  }

  // a formula reads the prometheus triggers, each by its name (what KEDA computes it from)
  const modifiers = desired.modifiers ?? undefined;
  if (modifiers !== undefined) {
    const fail = (why: string) =>
      problem(
        `invalid formula ${quote(modifiers.formula)} in ${modifiers.where}`,
        modifiers.annotation,
        modifiers.value,
        why,
      );
    const known = prometheus.map((t) => t.name).filter((n) => n !== "");
    let identifiers: readonly string[];
    try {
      identifiers = compileFormula(modifiers.formula).identifiers;
    } catch (e) {
      throw fail((e as Error).message);
    }
    for (const id of identifiers) {
      if (known.includes(id)) continue;
      const r = resources.find((r) => r.name === id);
      throw fail(
        r !== undefined
          ? `${id} is the ${r.type} trigger ${
            quote(r.name)
          }: a formula reads prometheus triggers only (cpu and memory stay Resource metrics of the HPA)`
          : `unknown identifier ${id}: the named prometheus triggers are ${
            known.length > 0 ? known.join(", ") : "none"
          }`,
      );
    }
    if (identifiers.length === 0) throw fail("it uses no trigger, so it would never be computed");
    try {
      checkFormula(modifiers.formula, identifiers);
    } catch (e) {
      throw fail((e as Error).message);
    }
  }

  const fallback = desired.fallback;
  if (fallback !== undefined) {
    const fail = (subject: string) => problem(subject, K.scaledObjectOverride, override);
    if (fallback.behavior === "scalingModifiers" && modifiers === undefined) {
      throw fail(
        "scalingModifiers fallback behavior requires scalingModifiers.formula to be defined",
      );
    }
    if (modifiers === undefined && prometheus.length === 0) {
      throw fail("spec.fallback needs at least one trigger that is not cpu or memory");
    }
  }

  const advanced: NonNullable<ScaledObject["spec"]["advanced"]> = {
    horizontalPodAutoscalerConfig: {
      name: source.name,
      ...(desired.behavior !== undefined ? { behavior: desired.behavior } : {}),
    },
  };
  if (desired.modifiers !== undefined) {
    advanced.scalingModifiers = desired.modifiers === null ? {} : desired.modifiers.keda;
  }
  const scaledObject: ScaledObject = {
    apiVersion: KEDA_API_VERSION,
    kind: "ScaledObject",
    metadata: {
      name: source.name,
      namespace: source.namespace,
      ...(Object.keys(source.labels).length > 0 ? { labels: { ...source.labels } } : {}),
      ...(Object.keys(source.annotations).length > 0
        ? { annotations: { ...source.annotations } }
        : {}),
    },
    spec: {
      scaleTargetRef: { ...source.scaleTargetRef },
      ...(desired.minReplicaCount !== undefined
        ? { minReplicaCount: desired.minReplicaCount }
        : {}),
      maxReplicaCount: maxReplicas,
      advanced,
      triggers: desired.triggers.map((t) => t.keda),
      ...(fallback !== undefined ? { fallback: { ...fallback } } : {}),
    },
  };
  const triggerSources = desired.triggers.map((t): KnativeTriggerSource => ({
    annotation: t.annotation,
    ...(t.value !== undefined ? { value: t.value } : {}),
  }));
  return { scaledObject, triggerSources };
}

// ---------------------------------------------------------------------------------------------
// Knative's webhook checks, for workloads (Serving's annotation_validation.go)

function webhookChecks(ann: Readonly<Record<string, string>>): void {
  const K = KNATIVE_ANNOTATIONS;
  const window = ann[K.window];
  if (window !== undefined) {
    const seconds = goDuration(window);
    if (seconds === undefined || seconds < 6 || seconds > 3600 || !Number.isInteger(seconds)) {
      throw problem(
        `invalid window ${quote(window)}`,
        K.window,
        window,
        "want a duration from 6s to 1h in whole seconds",
      );
    }
  }
  const target = ann[K.target];
  if (target !== undefined) {
    const t = parseFloat64(target);
    if (t === undefined || !(t >= 0.01)) {
      throw problem(`invalid target ${quote(target)}`, K.target, target, "want a number >= 0.01");
    }
  }
  const bound = (keys: readonly string[]): [string, number] | undefined => {
    const found = firstPresent(ann, keys);
    if (found === undefined) return undefined;
    const n = parseInt32(found[1]);
    if (n === undefined || n < 0) {
      const what = found[0].slice(A.length);
      throw problem(
        `invalid ${what} ${quote(found[1])}`,
        found[0],
        found[1],
        `want an integer from 0 to ${MAX_INT32}`,
      );
    }
    return [found[0], n];
  };
  const min = bound([K.minScale, K.minScaleAlias]);
  const max = bound([K.maxScale, K.maxScaleAlias]);
  if (min !== undefined && max !== undefined && max[1] !== 0 && max[1] < min[1]) {
    throw new MappingProblem(
      `max-scale ${max[1]} is less than min-scale ${min[1]} (annotations ${max[0]} and ${min[0]})`,
      max[0],
      ann[max[0]],
    );
  }
}

// ---------------------------------------------------------------------------------------------
// The mapping

/**
 * Whether an object carries the class annotation `autoscaling.knative.dev/class:
 * hpa.autoscaling.knative.dev` in its own metadata (a PodAutoscaler of that class, or a
 * workload that asks for the same mapping).
 *
 * @example
 * ```ts
 * isKnativeHpaClass({ metadata: { annotations: { "autoscaling.knative.dev/class": "hpa.autoscaling.knative.dev" } } }); // true
 * isKnativeHpaClass({ metadata: { annotations: { "autoscaling.knative.dev/class": "kpa.autoscaling.knative.dev" } } }); // false
 * ```
 */
export function isKnativeHpaClass(obj: unknown): boolean {
  const annotations = (obj as { metadata?: { annotations?: unknown } } | null)?.metadata
    ?.annotations;
  if (annotations === null || typeof annotations !== "object") return false;
  return (annotations as Record<string, unknown>)[KNATIVE_CLASS_ANNOTATION] === KNATIVE_HPA_CLASS;
}

/**
 * The `keda.sh/v1alpha1` ScaledObject autoscaler-keda's `DesiredScaledObject` would create for a
 * Knative PodAutoscaler of class `hpa.autoscaling.knative.dev`, or for a Deployment or
 * StatefulSet with that class annotation, from autoscaler-keda's annotations (or a clear error
 * naming the annotation and its value). It exists in memory only; {@linkcode knativeHpaOf} gives
 * what KEDA makes of it.
 *
 * - named after the source, in its namespace, with its labels and annotations; the scale target
 *   is the PA's `spec.scaleTargetRef`, or the workload itself; `horizontalPodAutoscalerConfig.name`
 *   is the source's name;
 * - `minReplicaCount` = min-scale (`min-scale`, else `minScale`; invalid: the configured default;
 *   ignored for an Unreachable PA) when > 0, else 1 for cpu and memory and unset for a custom
 *   metric; `maxReplicaCount` = max-scale when > 0, else 2147483647;
 * - cpu (target 70 by default): trigger `default-trigger-cpu`, `value` = `ceil(target)`, metric
 *   type `Utilization` (or `AverageValue`); memory: `default-trigger-memory`, `value` = whole Mi
 *   as a quantity (`AverageValue`) or `ceil(target)` (`Utilization`); any other `metric` is
 *   custom: a prometheus trigger named by `trigger-prometheus-name` (`default-trigger-custom`)
 *   with `prometheus-query` (a Go template with `{{ .revisionName }}`), `prometheus-address`
 *   (else the configured one), the exact target as `threshold`, the source's namespace, and
 *   `authenticationRef` / `authModes` from the trigger-prometheus-auth annotations;
 * - then each `extra-prometheus-triggers` entry as given;
 * - `scaling-modifiers` as `advanced.scalingModifiers`; `window` sets both stabilization windows
 *   of `advanced.horizontalPodAutoscalerConfig.behavior`, `hpa-scale-up-rules` /
 *   `hpa-scale-down-rules` replace a side wholesale;
 * - `scaled-object-override` replaces all of that with the ScaledObject it holds (the fields
 *   that make an HPA, fallback included); name, labels, annotations, scale target,
 *   max-scale and the HPA's name stay forced from the source.
 *
 * A workload is first checked as Knative's webhook checks a revision (window 6s to 1h in whole
 * seconds, target >= 0.01, integer scales, min-scale <= max-scale). Pure: nothing is read but
 * the arguments.
 *
 * @example
 * ```ts
 * const result = knativeScaledObjectFor({
 *   apiVersion: "autoscaling.internal.knative.dev/v1alpha1",
 *   kind: "PodAutoscaler",
 *   metadata: {
 *     name: "rev-1", namespace: "shop", uid: "u-1",
 *     annotations: {
 *       "autoscaling.knative.dev/class": "hpa.autoscaling.knative.dev",
 *       "autoscaling.knative.dev/metric": "cpu",
 *       "autoscaling.knative.dev/target": "75",
 *     },
 *   },
 *   spec: { scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "rev-1-deployment" } },
 * });
 * if (!("error" in result)) result.scaledObject.spec.triggers;
 * // [{ type: "cpu", name: "default-trigger-cpu", metricType: "Utilization", metadata: { value: "75" } }]
 * ```
 */
export function knativeScaledObjectFor(
  source: unknown,
  config: KnativeConfig = {},
  options: KnativeScaledObjectOptions = {},
): KnativeScaledObjectResult {
  const K = KNATIVE_ANNOTATIONS;
  const warnings: string[] = [];
  const common: KnativeMappingCommon = {
    autoCreate: config.scaledObjectAutoCreate ?? true,
    minScale: config.minScale ?? 0,
    initialScale: config.initialScale ?? 1,
    warnings,
  };
  const failed = (e: unknown): KnativeMappingError => {
    if (!(e instanceof MappingProblem)) throw e;
    const out: KnativeMappingError = { ...common, error: e.message };
    if (e.annotation !== undefined) out.annotation = e.annotation;
    if (e.value !== undefined) out.value = e.value;
    return out;
  };
  let src: Source;
  try {
    src = readSource(source, options.kind);
  } catch (e) {
    return failed(e);
  }
  const ann = src.annotations;
  const pa = src.mode === "pa";

  const autoCreateText = ann[K.scaledObjectAutoCreate];
  if (autoCreateText !== undefined) {
    const b = parseGoBool(autoCreateText);
    if (b !== undefined) common.autoCreate = b;
    else {
      warnings.push(
        `invalid scaled-object-auto-create ${quote(autoCreateText)}${
          at(K.scaledObjectAutoCreate)
        }: want true or false, using the configured ${common.autoCreate}`,
      );
    }
  }

  // Knative's ScaleBounds and GetInitialScale (for a workload, the webhook checks below make
  // a bad value an error instead)
  const bound = (keys: readonly string[], configured: number, what: string): number => {
    const found = firstPresent(ann, keys);
    if (found === undefined) return configured;
    const n = parseInt32(found[1]);
    if (n !== undefined) return n;
    if (pa) {
      warnings.push(
        `invalid ${what} ${quote(found[1])}${
          at(found[0])
        }: want an integer, using the configured ${configured}`,
      );
    }
    return configured;
  };
  const min = src.unreachable
    ? 0
    : bound([K.minScale, K.minScaleAlias], config.minScale ?? 0, "min-scale");
  const max = bound([K.maxScale, K.maxScaleAlias], config.maxScale ?? 0, "max-scale");
  common.minScale = min;
  const initialFound = firstPresent(ann, [K.initialScale, K.initialScaleAlias]);
  const initial = initialFound === undefined ? undefined : parseInt32(initialFound[1]);
  if (initial !== undefined && (initial !== 0 || config.allowZeroInitialScale === true)) {
    common.initialScale = initial;
  }

  try {
    const cls = ann[K.class];
    if (cls !== KNATIVE_HPA_CLASS) {
      throw new MappingProblem(
        `${src.kind} ${src.namespace}/${src.name} is not of class ${KNATIVE_HPA_CLASS}: annotation ${K.class} is ${
          cls === undefined ? "not set" : quote(cls)
        }`,
        K.class,
        cls,
      );
    }
    if (!pa) webhookChecks(ann);
    const maxKey = firstPresent(ann, [K.maxScale, K.maxScaleAlias])?.[0];
    const maxAt = maxKey !== undefined && parseInt32(ann[maxKey]) !== undefined
      ? `annotation ${maxKey}`
      : "the configured default";
    if (max < 0) {
      throw new MappingProblem(
        `invalid max-scale ${max} (${maxAt}): want an integer >= 0 (0 is unbounded)`,
        maxKey,
        maxKey !== undefined ? ann[maxKey] : undefined,
      );
    }
    const maxReplicas = max > 0 ? max : MAX_INT32;
    const override = ann[K.scaledObjectOverride];
    let desired: Desired;
    if (override !== undefined) {
      desired = fromOverride(override, warnings);
      const used: readonly string[] = [
        K.class,
        K.metric,
        K.maxScale,
        K.maxScaleAlias,
        K.initialScale,
        K.initialScaleAlias,
        K.scaledObjectOverride,
        K.scaledObjectAutoCreate,
      ];
      for (const k of Object.values(K)) {
        if (Object.hasOwn(ann, k) && !used.includes(k)) {
          warnings.push(
            `annotation ${k} is ignored: ${K.scaledObjectOverride} sets the whole ScaledObject`,
          );
        }
      }
    } else desired = fromAnnotations(src, config, min, warnings);

    const minReplicas = (desired.minReplicaCount ?? 0) > 0 ? desired.minReplicaCount! : 1;
    if (minReplicas > maxReplicas) {
      const minKey = firstPresent(ann, [K.minScale, K.minScaleAlias])?.[0];
      const minAt = override !== undefined
        ? `spec.minReplicaCount of annotation ${K.scaledObjectOverride}`
        : minKey !== undefined && parseInt32(ann[minKey]) !== undefined
        ? `annotation ${minKey}`
        : "the configured default";
      const key = maxKey ?? (override !== undefined ? K.scaledObjectOverride : minKey);
      throw new MappingProblem(
        `min-scale ${minReplicas} (${minAt}) is greater than max-scale ${maxReplicas} (${maxAt})`,
        key,
        key !== undefined ? ann[key] : undefined,
      );
    }
    const built = buildScaledObject(src, desired, maxReplicas, override, options);
    const owner: KedaHpaOwner = {
      apiVersion: src.apiVersion,
      kind: src.kind,
      name: src.name,
      uid: src.uid,
    };
    return { ...common, ...built, owner };
  } catch (e) {
    return failed(e);
  }
}

/**
 * What KEDA makes of a Knative ScaledObject (core/keda/hpa.ts, as for any ScaledObject): its
 * HPA, owned by the Knative source, with KEDA's metric names, selector and targets; or KEDA's
 * error, naming the annotation of the trigger at fault.
 *
 * @example
 * ```ts
 * const so = knativeScaledObjectFor(pa);
 * if (!("error" in so)) knativeHpaOf(so, { version: "0.1.0" });
 * ```
 */
export function knativeHpaOf(
  mapped: KnativeScaledObject,
  options: KnativeHpaOfOptions,
): KnativeHpaResult {
  const r = kedaHpaFor(mapped.scaledObject, {
    version: options.version,
    owner: mapped.owner,
    ...(options.params !== undefined ? { params: options.params } : {}),
    ...(options.podIdentities !== undefined ? { podIdentities: options.podIdentities } : {}),
  });
  const { autoCreate, minScale, initialScale, warnings } = mapped;
  if ("error" in r) {
    const from = r.trigger !== undefined ? mapped.triggerSources[r.trigger] : undefined;
    return {
      autoCreate,
      minScale,
      initialScale,
      warnings,
      error: from !== undefined
        ? `trigger ${r.trigger} of the ScaledObject${at(from.annotation)}: ${r.error}`
        : r.error,
      ...(from !== undefined ? { annotation: from.annotation } : {}),
      ...(from?.value !== undefined ? { value: from.value } : {}),
    };
  }
  return { ...mapped, hpa: r.hpa, metrics: r.metrics, status: r.status };
}

/**
 * {@linkcode knativeScaledObjectFor}, then {@linkcode knativeHpaOf}: the HPA the Knative
 * reconciler writes for a source (with the triggers' parameters as given, else their metadata).
 *
 * @example
 * ```ts
 * const r = knativeHpaFor(pa, { version: "0.1.0" });
 * if (!("error" in r)) r.hpa.spec.metrics;
 * // [{ type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 75 } } }]
 * ```
 */
export function knativeHpaFor(source: unknown, options: KnativeHpaForOptions): KnativeHpaResult {
  const mapped = knativeScaledObjectFor(source, options.config, options);
  return "error" in mapped ? mapped : knativeHpaOf(mapped, options);
}
