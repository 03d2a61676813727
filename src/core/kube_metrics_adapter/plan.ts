/**
 * Metric plans: one HPA's `spec.metrics[]` resolved against its `metric-config.*` annotations
 * into what to collect, with which collector, how often, or a clear error saying what to add or
 * change. The collector is chosen as kube-metrics-adapter chooses it:
 *
 * - External: by `matchLabels.type`, else by the (legacy) metric name (`prometheus-query`,
 *   `flux-query`, `http`, `zmon-check`, or a collector type used as the name), else by the
 *   collector named in `metric-config.external.<metric>.<collector>/...` (an addition).
 * - Object: by `describedObject.kind` (`Ingress`/`RouteGroup` requests-per-second -> skipper,
 *   `ScalingSchedule`, `ClusterScalingSchedule`), else the `prometheus` annotation, on any kind
 *   (the original could not read Object metrics of kinds that had a collector of their own).
 * - Pods: the `json-path` annotation.
 *
 * Resource and ContainerResource metrics are served by metrics-server and produce no plan.
 */
import { parseHpa } from "../kubernetes/hpa.ts";
import { collectorDescriptor, EXTERNAL_ALIASES, EXTERNAL_COLLECTORS } from "./collectors.ts";
import {
  type ConfigContext,
  metricWhat,
  parseCollectorConfig,
  scopeConfigQueries,
} from "./collector_config.ts";
import { formatDuration } from "../duration.ts";
import { FORMULA_TYPE, type FormulaConfig, formulaDescriptor } from "./configs/formula.ts";
import { checkFormula, compileFormula, formulaIdentifier } from "../formula.ts";
import { parseQuantity } from "../kubernetes/quantity.ts";
import { shortenValues } from "../quote.ts";
import type {
  Hpa,
  HpaLabelSelector,
  HpaMetricTarget,
  HpaObjectReference,
} from "../kubernetes/hpa.ts";
import {
  annotationKey,
  annotationTypeSegment,
  type MetricAnnotations,
  parseMetricAnnotations,
  RESERVED_CONFIG_KEYS,
} from "./annotations.ts";
import type {
  FormulaInput,
  HpaRef,
  LabelSelector,
  MetricPlan,
  MetricTarget,
  MetricType,
  ObjectReference,
} from "../types.ts";

/** Options of `planHpa`; the config context is what the collectors will be created with. */
export interface PlanOptions extends ConfigContext {
  /** Interval of metrics without an `interval` annotation (`--default-collection-interval`); 60. */
  defaultIntervalSeconds?: number;
  /** Collector types that are enabled; undefined means all of them. */
  enabledCollectors?: ReadonlySet<string>;
  /**
   * How long a value may be served (`--metrics-ttl`): an interval longer than that is warned
   * of (the value expires between collections). No check when absent.
   */
  metricsTtlSeconds?: number;
  /**
   * The shortest interval an annotation may ask for (`--min-collection-interval`): a shorter
   * one is a plan error, never raised in silence. No bound when absent.
   */
  minIntervalSeconds?: number;
}

const OBJECT_KIND_COLLECTORS: Readonly<Record<string, string>> = {
  ScalingSchedule: "scaling-schedule",
  ClusterScalingSchedule: "cluster-scaling-schedule",
};

const SKIPPER_KINDS = new Set(["Ingress", "RouteGroup"]);
const RPS_METRIC = "requests-per-second";

function enableHint(collector: string, kind: string | undefined): string {
  const by = collectorDescriptor(collector)?.enabledBy;
  if (by === undefined) return "its flags";
  return typeof by === "string" ? by : by(kind);
}

/** The parts of a metric entry the collector choice looks at. */
interface Entry {
  metricType: MetricType;
  metricName: string;
  selector: HpaLabelSelector | undefined;
  describedObject: HpaObjectReference | undefined;
  annotations: MetricAnnotations | undefined;
}

/** What the choice decided: a collector, or an error; warnings either way. */
interface Choice {
  collector: string | null;
  error?: string;
  warnings: string[];
  /** The collector segment to suggest in annotation hints. */
  annotationCollector: string;
}

function annotationPrefix(e: Entry, collector: string): string {
  return `metric-config.${annotationTypeSegment(e.metricType)}.${e.metricName}.${collector}`;
}

function isEnabled(collector: string, options: PlanOptions): boolean {
  return collector === FORMULA_TYPE || options.enabledCollectors === undefined ||
    options.enabledCollectors.has(collector);
}

/** The External type a `matchLabels.type`, metric name or annotation collector selects. */
function externalType(name: string): string | undefined {
  return name === FORMULA_TYPE ? FORMULA_TYPE : EXTERNAL_ALIASES[name];
}

function descriptorOf(collector: string) {
  return collector === FORMULA_TYPE ? formulaDescriptor : collectorDescriptor(collector);
}

function chooseExternal(e: Entry): Choice {
  const warnings: string[] = [];
  const annotated = e.annotations?.collectors.length === 1 ? e.annotations.collectors[0] : null;
  const annotatedType = annotated === null ? null : externalType(annotated) ?? null;
  const typeLabel = e.selector?.matchLabels?.type;
  const choices = [...EXTERNAL_COLLECTORS, FORMULA_TYPE].sort().join(", ");
  let collector: string;
  if (typeLabel !== undefined) {
    const t = externalType(typeLabel);
    if (t === undefined) {
      return {
        collector: null,
        error:
          `External metric \`${e.metricName}\` has unknown type "${typeLabel}"; set matchLabels.type to one of: ${choices}`,
        warnings,
        annotationCollector: annotated ?? typeLabel,
      };
    }
    collector = t;
  } else if (EXTERNAL_ALIASES[e.metricName] !== undefined) {
    collector = EXTERNAL_ALIASES[e.metricName];
    warnings.push(
      `External metric \`${e.metricName}\` selects its collector by metric name (deprecated); set matchLabels.type: ${collector}`,
    );
  } else if (annotatedType !== null) {
    collector = annotatedType;
  } else if (annotated !== null) {
    return {
      collector: null,
      error:
        `External metric \`${e.metricName}\` names unknown collector \`${annotated}\` in its annotations; use one of: ${choices}`,
      warnings,
      annotationCollector: annotated,
    };
  } else {
    return {
      collector: null,
      error:
        `External metric \`${e.metricName}\` has no \`type\` label; set matchLabels.type to one of: ${choices}`,
      warnings,
      annotationCollector: "<collector>",
    };
  }
  if (annotated !== null && annotatedType !== collector) {
    warnings.push(
      `annotations ${
        annotationPrefix(e, annotated)
      }/... name collector \`${annotated}\` but the metric is collected by \`${collector}\`; their config is still applied`,
    );
  }
  return { collector, warnings, annotationCollector: annotated ?? collector };
}

function isRpsMetric(name: string): boolean {
  return name === RPS_METRIC || name.startsWith(`${RPS_METRIC},`);
}

function chooseObject(e: Entry, options: PlanOptions): Choice {
  const warnings: string[] = [];
  const kind = e.describedObject?.kind ?? "";
  const ref = `${kind}/${e.describedObject?.name ?? ""}`;
  const annotated = e.annotations?.collectors.length === 1 ? e.annotations.collectors[0] : null;
  let byKind: string | null = OBJECT_KIND_COLLECTORS[kind] ?? null;
  if (SKIPPER_KINDS.has(kind) && isRpsMetric(e.metricName)) byKind = "skipper";
  if (byKind !== null) {
    // As the original: a kind's own collector wins, and only when it is not running does an
    // annotated prometheus query take over.
    if (
      !isEnabled(byKind, options) && annotated === "prometheus" && isEnabled("prometheus", options)
    ) {
      return { collector: "prometheus", warnings, annotationCollector: annotated };
    }
    if (annotated !== null && annotated !== byKind) {
      warnings.push(
        `annotations ${
          annotationPrefix(e, annotated)
        }/... name collector \`${annotated}\` but ${kind} metric \`${e.metricName}\` is collected by \`${byKind}\`; their config is still applied`,
      );
    }
    return { collector: byKind, warnings, annotationCollector: annotated ?? byKind };
  }
  if (annotated === "prometheus") {
    return { collector: "prometheus", warnings, annotationCollector: annotated };
  }
  if (annotated !== null) {
    let why = "it cannot collect Object metrics";
    if (annotated === "skipper") {
      why = "skipper serves only requests-per-second of Ingress and RouteGroup objects";
    } else if (Object.values(OBJECT_KIND_COLLECTORS).includes(annotated)) {
      why = `${annotated} serves only ${
        Object.keys(OBJECT_KIND_COLLECTORS).find((k) => OBJECT_KIND_COLLECTORS[k] === annotated)
      } objects`;
    }
    return {
      collector: null,
      error:
        `Object metric \`${e.metricName}\` on ${ref} names collector \`${annotated}\`, but ${why}; use annotation ${
          annotationPrefix(e, "prometheus")
        }/query`,
      warnings,
      annotationCollector: annotated,
    };
  }
  const skipperNote = SKIPPER_KINDS.has(kind)
    ? ` (skipper serves only ${RPS_METRIC} of ${kind} objects)`
    : "";
  return {
    collector: null,
    error:
      `Object metric \`${e.metricName}\` on ${ref} has no collector${skipperNote}; add annotation ${
        annotationPrefix(e, "prometheus")
      }/query`,
    warnings,
    annotationCollector: "prometheus",
  };
}

function choosePods(e: Entry): Choice {
  const annotated = e.annotations?.collectors.length === 1 ? e.annotations.collectors[0] : null;
  if (annotated === "json-path") {
    return { collector: "json-path", warnings: [], annotationCollector: annotated };
  }
  if (annotated !== null) {
    return {
      collector: null,
      error:
        `Pods metric \`${e.metricName}\` names collector \`${annotated}\`, but only json-path collects Pods metrics; use annotations ${
          annotationPrefix(e, "json-path")
        }/json-key and .../port`,
      warnings: [],
      annotationCollector: annotated,
    };
  }
  return {
    collector: null,
    error: `Pods metric \`${e.metricName}\` needs annotation ${
      annotationPrefix(e, "json-path")
    }/json-key (and ${annotationPrefix(e, "json-path")}/port)`,
    warnings: [],
    annotationCollector: "json-path",
  };
}

/**
 * The plan's copy of a metric selector, frozen all through: the engine and the store keep its
 * `matchLabels` as the metric labels they serve instead of copies of their own (one object per
 * plan, not four), and a frozen object cannot be changed under them.
 */
function copySelector(s: HpaLabelSelector | undefined): LabelSelector | null {
  if (s === undefined) return null;
  const out: LabelSelector = {};
  if (s.matchLabels !== undefined) out.matchLabels = Object.freeze({ ...s.matchLabels });
  if (s.matchExpressions !== undefined) {
    out.matchExpressions = Object.freeze(s.matchExpressions.map((r) =>
      Object.freeze(
        r.values === undefined
          ? { key: r.key, operator: r.operator }
          : { key: r.key, operator: r.operator, values: Object.freeze([...r.values]) as string[] },
      )
    )) as LabelSelector["matchExpressions"];
  }
  return Object.freeze(out);
}

function copyTarget(t: HpaMetricTarget): MetricTarget {
  const out: MetricTarget = { type: t.type };
  if (t.value !== undefined) out.value = t.value;
  if (t.averageValue !== undefined) out.averageValue = t.averageValue;
  if (t.averageUtilization !== undefined) out.averageUtilization = t.averageUtilization;
  return out;
}

function copyRef(r: HpaObjectReference): ObjectReference {
  return r.apiVersion === undefined
    ? { kind: r.kind, name: r.name }
    : { apiVersion: r.apiVersion, kind: r.kind, name: r.name };
}

function sortedRecord(r: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of Object.keys(r).sort()) out[k] = r[k];
  return out;
}

/** What one plan is made from: a `spec.metrics` entry, or a hidden formula input. */
interface PlanInput extends Entry {
  index: number;
  target: MetricTarget;
  hidden: boolean;
}

/**
 * The key holding the query a `prometheus` (External) or `influxdb` metric sends when it names
 * it by `query-name` (kube-metrics-adapter's legacy form: `query-name: rps` and `rps: <query>`)
 * rather than setting `query`; undefined when `query` is set or nothing is named. For a config
 * its collector accepted: `query` as the prometheus and influxdb schemas read it (an empty
 * prometheus `query` counts as not set).
 *
 * @example
 * ```ts
 * queryNamedBy("prometheus", "External", { "query-name": "rps", rps: "sum(rate(x[1m]))" }); // "rps"
 * ```
 */
export function queryNamedBy(
  collector: string | null,
  metricType: MetricType,
  config: Readonly<Record<string, string>>,
): string | undefined {
  const name = config["query-name"];
  if (name === undefined || name === "query") return undefined;
  const named = config[name];
  if (typeof named !== "string") return undefined;
  if (collector === "prometheus" && metricType === "External") {
    return (config.query ?? "") === "" && name !== "" && named !== "" ? name : undefined;
  }
  if (collector === "influxdb") {
    return config.query === undefined && named.trim() !== "" ? name : undefined;
  }
  return undefined;
}

/** Plans one entry; also returns a formula's parsed config (when the entry is a valid one). */
function planEntry(
  input: PlanInput,
  ref: HpaRef,
  scaleTargetRef: ObjectReference,
  options: PlanOptions,
): { plan: MetricPlan; formula?: FormulaConfig } {
  const { metricType, metricName, describedObject } = input;
  const entry: Entry = input;
  let choice = metricType === "External"
    ? chooseExternal(entry)
    : metricType === "Object"
    ? chooseObject(entry, options)
    : choosePods(entry);
  if (input.hidden && metricType === "Object" && choice.error === undefined) {
    choice = {
      ...choice,
      error:
        `Object metric \`${metricName}\` is a formula input that spec.metrics does not list: an Object input needs its describedObject, so list it in spec.metrics`,
    };
  }
  if (input.hidden && choice.collector === FORMULA_TYPE) {
    choice = {
      ...choice,
      error:
        `External metric \`${metricName}\` is a formula that spec.metrics does not list: a formula cannot be the input of another`,
    };
  }

  const config: Record<string, string> = {};
  if (metricType !== "Pods") Object.assign(config, entry.selector?.matchLabels ?? {});
  Object.assign(config, entry.annotations?.config ?? {});
  for (const k of RESERVED_CONFIG_KEYS) delete config[k];

  const errors = [...(entry.annotations?.errors ?? [])];
  const conflict = (entry.annotations?.collectors.length ?? 0) > 1;
  let formula: FormulaConfig | undefined;
  if (choice.error !== undefined) {
    // with two collectors named, "no collector" would only repeat the conflict
    if (!conflict) errors.push(choice.error);
  } else if (choice.collector !== null) {
    const descriptor = descriptorOf(choice.collector);
    if (descriptor !== undefined) {
      const origin = {
        what: metricWhat(metricType, metricName, ref),
        annotationPrefix: annotationPrefix(entry, choice.annotationCollector),
        annotated: new Set(Object.keys(entry.annotations?.config ?? {})),
        metricType,
      };
      const parsed = parseCollectorConfig(descriptor, config, origin, options);
      if (!parsed.ok) errors.push(...parsed.errors);
      else if (choice.collector === FORMULA_TYPE) formula = parsed.config as FormulaConfig;
      else {
        // the queries the HPA wrote, scoped to its namespace (the plan keeps the scoped ones)
        errors.push(...scopeConfigQueries(descriptor, config, origin, options));
        // the legacy `query-name` form: the query sent, as `query` beside the keys naming it
        const named = queryNamedBy(choice.collector, metricType, config);
        if (named !== undefined) config.query = config[named];
      }
    }
    if (!isEnabled(choice.collector, options)) {
      errors.push(
        `collector \`${choice.collector}\` is not enabled (start with ${
          enableHint(choice.collector, describedObject?.kind)
        })`,
      );
    }
  }
  const interval = entry.annotations?.intervalSeconds;
  const min = options.minIntervalSeconds;
  if (interval !== undefined && interval > 0 && min !== undefined && interval < min) {
    errors.push(
      `interval ${formatDuration(interval)} of ${
        metricWhat(metricType, metricName, ref)
      } (annotation ${
        annotationPrefix(entry, choice.annotationCollector)
      }/interval) is below --min-collection-interval ${formatDuration(min)}`,
    );
  }
  const plan: MetricPlan = {
    hpa: ref,
    index: input.index,
    metricType,
    metricName,
    metricSelector: copySelector(entry.selector),
    target: input.target,
    describedObject: describedObject ? copyRef(describedObject) : null,
    scaleTargetRef,
    collector: choice.collector,
    intervalSeconds: interval !== undefined && interval > 0
      ? interval
      : options.defaultIntervalSeconds ?? 60,
    perReplica: entry.annotations?.perReplica ?? false,
    minPodReadyAgeSeconds: entry.annotations?.minPodReadyAgeSeconds ?? 0,
    config: sortedRecord(config),
    error: errors.length > 0 ? shortenValues(errors.join("; ")) : null,
  };
  if (input.hidden) plan.hidden = true;
  const fallback = entry.annotations?.fallback;
  if (fallback) plan.fallback = { ...fallback };
  const warnings = choice.warnings.map(shortenValues);
  const ttl = options.metricsTtlSeconds;
  if (ttl !== undefined && plan.error === null && plan.intervalSeconds > ttl) {
    warnings.push(
      `interval ${
        formatDuration(plan.intervalSeconds)
      } of ${metricType} metric \`${metricName}\` is longer than the metrics TTL ${
        formatDuration(ttl)
      }: its value expires between collections and is not served meanwhile`,
    );
  }
  if (warnings.length > 0) plan.warnings = warnings;
  return formula === undefined ? { plan } : { plan, formula };
}

/** What an identifier of a formula may name on its HPA. */
type Candidate =
  | { kind: "plan"; plan: MetricPlan }
  | { kind: "hidden"; annotations: MetricAnnotations }
  | { kind: "resource"; name: string };

function candidateText(c: Candidate): string {
  switch (c.kind) {
    case "plan":
      return `${c.plan.metricType} metric ${c.plan.metricName}`;
    case "hidden":
      return `${c.annotations.metricType} metric ${c.annotations.metricName}`;
    default:
      return `Resource metric ${c.name}`;
  }
}

/** Why a formula's target cannot be one (`invalid <what>: <why>`), or undefined. */
function formulaTargetError(target: MetricTarget): { what: string; why: string } | undefined {
  if (target.type === "Utilization") {
    return { what: "target type Utilization", why: "want AverageValue or Value" };
  }
  const field = target.type === "Value" ? "value" : "averageValue";
  const raw = (target.type === "Value" ? target.value : target.averageValue) ?? "";
  let n = NaN;
  try {
    n = parseQuantity(raw);
  } catch {
    // not a quantity: reported as not a number > 0
  }
  return n > 0 ? undefined : { what: `target ${field} "${raw}"`, why: "want a number > 0" };
}

/**
 * Plan every Pods, Object and External entry of an HPA's `spec.metrics`, in order. A metric
 * that cannot be collected gets a plan with `error` set (and `collector` null when none could
 * be chosen); problems that do not stop collection are `warnings`.
 *
 * A formula (an External metric with `matchLabels.type: formula`) names other metrics of the
 * HPA: those `spec.metrics` lists, and those only its `metric-config.*` annotations define,
 * which get hidden plans after the listed ones (collected, not served). Each identifier is
 * checked (unknown, ambiguous, a Resource metric, another formula) and the expression is run
 * once with every input at -1; each problem is an error of the formula's plan.
 *
 * Throws `InvalidHpaError` (from `parseHpa`) when the object is not a valid HPA: there is
 * nothing to plan then, and the message names the HPA and the bad fields.
 *
 * @example
 * ```ts
 * const [plan] = planHpa(hpaObject, { enabledCollectors: new Set(["json-path"]) });
 * plan.error ?? plan.collector; // "json-path" or what to fix
 * ```
 */
export function planHpa(hpa: unknown, options: PlanOptions = {}): MetricPlan[] {
  const parsed: Hpa = parseHpa(hpa);
  const ref: HpaRef = {
    namespace: parsed.metadata.namespace ?? "default",
    name: parsed.metadata.name,
  };
  // the config checks that depend on the HPA's namespace read it from the context
  options = { ...options, namespace: ref.namespace };
  const annotations = parseMetricAnnotations(parsed.metadata.annotations);
  const hpaWarnings = [...annotations.warnings];
  const used = new Set<string>();
  const plans: MetricPlan[] = [];
  const formulas = new Map<MetricPlan, FormulaConfig>();
  const resources: string[] = [];
  const scaleTargetRef = copyRef(parsed.spec.scaleTargetRef);
  const specMetrics = parsed.spec.metrics ?? [];

  specMetrics.forEach((metric, index) => {
    let source;
    let metricType: MetricType;
    let describedObject: HpaObjectReference | undefined;
    switch (metric.type) {
      case "Pods":
        metricType = "Pods";
        source = metric.pods;
        break;
      case "Object":
        metricType = "Object";
        source = metric.object;
        describedObject = metric.object.describedObject;
        break;
      case "External":
        metricType = "External";
        source = metric.external;
        break;
      case "Resource":
        resources.push(metric.resource.name);
        return;
      case "ContainerResource":
        resources.push(metric.containerResource.name);
        return;
      default:
        return;
    }
    const metricName = source.metric.name;
    const key = annotationKey(metricType, metricName);
    used.add(key);
    const { plan, formula } = planEntry(
      {
        metricType,
        metricName,
        selector: source.metric.selector,
        describedObject,
        annotations: annotations.metrics.get(key),
        index,
        target: copyTarget(source.target),
        hidden: false,
      },
      ref,
      scaleTargetRef,
      options,
    );
    plans.push(plan);
    if (plan.collector === FORMULA_TYPE) formulas.set(plan, formula ?? { expression: "" });
  });

  // formulas: resolve identifiers; definitions only annotations make become hidden inputs
  const hidden = new Map<string, MetricPlan>();
  if (formulas.size > 0) {
    const candidates = new Map<string, Candidate[]>();
    const add = (identifier: string, c: Candidate): void => {
      const list = candidates.get(identifier);
      if (list) list.push(c);
      else candidates.set(identifier, [c]);
    };
    for (const plan of plans) add(formulaIdentifier(plan.metricName), { kind: "plan", plan });
    const unused = [...annotations.metrics].filter(([key]) => !used.has(key))
      .sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
    for (const [, a] of unused) {
      add(formulaIdentifier(a.metricName), { kind: "hidden", annotations: a });
    }
    for (const name of resources) add(formulaIdentifier(name), { kind: "resource", name });

    for (const [plan, config] of formulas) {
      const errors: string[] = [];
      const at = `${
        metricWhat(plan.metricType, plan.metricName, ref)
      } (annotation metric-config.external.${plan.metricName}.${FORMULA_TYPE}/expression)`;
      const targetError = formulaTargetError(plan.target);
      if (targetError !== undefined) {
        errors.push(
          `invalid ${targetError.what} for formula ${
            metricWhat(plan.metricType, plan.metricName, ref)
          }: ${targetError.why}`,
        );
      }
      const inputs: FormulaInput[] = [];
      if (plan.error === null) {
        const identifiers = compileFormula(config.expression).identifiers;
        const names = [...candidates.keys()].filter((k) => k !== formulaIdentifier(plan.metricName))
          .sort();
        for (const identifier of identifiers) {
          const found = candidates.get(identifier) ?? [];
          const bound = found.find((c) => c.kind === "plan" && c.plan === plan);
          if (found.length === 0 || bound) {
            errors.push(
              `unknown identifier \`${identifier}\` in the formula of ${at}: ${
                bound
                  ? "a formula cannot use itself"
                  : names.length > 0
                  ? `the HPA's other metrics are ${names.join(", ")}`
                  : "the HPA defines no other metric (add metric-config.<type>.<input>.<collector>/... annotations)"
              }`,
            );
            continue;
          }
          if (found.length > 1) {
            errors.push(
              `ambiguous identifier \`${identifier}\` in the formula of ${at}: it names ${
                found.map(candidateText).join(" and ")
              } (rename one)`,
            );
            continue;
          }
          const c = found[0];
          if (c.kind === "resource") {
            errors.push(
              `identifier \`${identifier}\` in the formula of ${at} names Resource metric ${c.name}, which metrics-server serves: a formula cannot read it`,
            );
            continue;
          }
          if (c.kind === "plan" && c.plan.collector === FORMULA_TYPE) {
            errors.push(
              `identifier \`${identifier}\` in the formula of ${at} names formula metric ${c.plan.metricName}: a formula cannot use another formula`,
            );
            continue;
          }
          let input: MetricPlan;
          if (c.kind === "plan") input = c.plan;
          else {
            const key = annotationKey(c.annotations.metricType, c.annotations.metricName);
            let h = hidden.get(key);
            if (!h) {
              h = planEntry(
                {
                  metricType: c.annotations.metricType,
                  metricName: c.annotations.metricName,
                  selector: undefined,
                  describedObject: undefined,
                  annotations: c.annotations,
                  index: specMetrics.length + hidden.size,
                  target: { type: "AverageValue" },
                  hidden: true,
                },
                ref,
                scaleTargetRef,
                options,
              ).plan;
              hidden.set(key, h);
            }
            input = h;
          }
          inputs.push({
            identifier,
            planKey: planKey(input),
            queryKey: queryKey(input),
            metricType: input.metricType,
            metricName: input.metricName,
          });
          if (input.error !== null) {
            errors.push(
              `input \`${identifier}\` (${input.metricType} metric ${input.metricName}) of the formula of ${at} cannot be collected: ${input.error}`,
            );
          }
        }
        if (errors.length === 0) {
          try {
            checkFormula(config.expression, identifiers);
          } catch (e) {
            errors.push(`invalid formula of ${at}: ${(e as Error).message}`);
          }
        }
        plan.formula = config.activationTarget === undefined
          ? { expression: config.expression, inputs }
          : { expression: config.expression, activationTarget: config.activationTarget, inputs };
      }
      if (errors.length > 0) {
        const all = plan.error === null ? errors : [plan.error, ...errors];
        plan.error = shortenValues(all.join("; "));
      }
    }
    plans.push(...hidden.values());
  }

  for (const [key, entry] of annotations.metrics) {
    if (used.has(key) || hidden.has(key)) continue;
    hpaWarnings.push(
      `annotations metric-config.${annotationTypeSegment(entry.metricType)}.${entry.metricName}.${
        entry.collectors.join("|")
      }/... configure nothing: spec.metrics has no ${entry.metricType} metric \`${entry.metricName}\`${
        formulas.size > 0 ? " and no formula names it" : ""
      }`,
    );
  }
  if (hpaWarnings.length > 0) {
    const shortened = hpaWarnings.map(shortenValues);
    for (const plan of plans) plan.warnings = [...(plan.warnings ?? []), ...shortened];
  }
  return plans;
}

/** A stable key of one plan: `namespace/name/<index>/<Type>/<metricName>`. */
export function planKey(plan: MetricPlan): string {
  return `${plan.hpa.namespace}/${plan.hpa.name}/${plan.index}/${plan.metricType}/${plan.metricName}`;
}

function refKey(r: ObjectReference | null): string | null {
  return r === null ? null : `${r.apiVersion ?? ""}|${r.kind}|${r.name}`;
}

/**
 * The identity of a plan's backend query: equal for plans whose collections yield the same
 * value, so the engine can make one query per interval for all of them, and can tell two
 * metrics served under one name but collected differently apart. It covers the collector, the
 * metric type, the HPA's namespace, the config (sorted), the described object (Object), and
 * what the value depends on besides: the scale target for Pods metrics, per-replica division
 * and skipper's fallback average; the pod age filter; skipper's backend in the metric name.
 * The interval is not part of it.
 */
export function queryKey(plan: MetricPlan): string {
  const collector = plan.collector ?? "";
  const dependsOnTarget = plan.metricType === "Pods" || plan.perReplica ||
    (collector === "skipper" && plan.target.type !== "AverageValue");
  return JSON.stringify([
    collector,
    plan.metricType,
    plan.hpa.namespace,
    Object.keys(plan.config).sort().map((k) => [k, plan.config[k]]),
    plan.metricType === "Object" ? refKey(plan.describedObject) : null,
    dependsOnTarget ? refKey(plan.scaleTargetRef) : null,
    plan.perReplica,
    plan.metricType === "Pods" ? plan.minPodReadyAgeSeconds : null,
    collector === "skipper" ? plan.metricName : null,
    // what a formula computes from, and the value a fallback serves
    plan.formula ? plan.formula.inputs.map((i) => [i.identifier, i.queryKey]) : null,
    plan.fallback ? [plan.fallback, plan.target, refKey(plan.scaleTargetRef)] : null,
  ]);
}
