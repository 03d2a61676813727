/**
 * What `plan` (and the admission webhook) say of an HPA metric that prometheus-adapter's rules
 * serve (`--prometheus-adapter-config`, issue 49): the read the HPA controller makes for it, the
 * rule that answers it and the query that rule sends, as the serving engine renders it.
 *
 * The HPA controller reads (pkg/controller/podautoscaler/metrics/client.go):
 * - a Pods metric as `pods/*` of the HPA's namespace, with the target's selector as
 *   `labelSelector`: the pods are known at each read only, so the query is shown with the
 *   placeholder names {@linkcode PLAN_POD_NAMES};
 * - an Object metric on a Namespace as the root-scoped `namespaces/<the HPA's namespace>` (the
 *   object's own name is ignored), any other as `<resource>/<name>` in the HPA's namespace;
 * - an External metric in the HPA's namespace, with `metric.selector` as `labelSelector`.
 * `metric.selector` of a Pods or Object metric is the `metricLabelSelector`.
 *
 * Pure: the registries (what discovery found) are passed in; without them (no Prometheus to
 * ask) the rules that could name the metric are listed instead.
 *
 * @module
 */
import { labelSelectorString, parseSelector, type Selector } from "../kubernetes/label_selector.ts";
import type { MetricPlan } from "../types.ts";
import type { GroupResource } from "./config.ts";
import type { CustomMetricRegistry, ExternalMetricRegistry, MetricNamer } from "./discovery.ts";
import type { ResourceMapper } from "./naming.ts";
import { couldNameMetric } from "./serving.ts";

/** The pod names a Pods metric's query is shown with (the real ones are known at each read). */
export const PLAN_POD_NAMES: readonly string[] = ["<pod-1>", "<pod-2>"];

/** An HPA metric, as the HPA controller asks for it. */
export interface AdapterPlanAsk {
  metricType: "Object" | "Pods" | "External";
  metricName: string;
  /** The HPA's namespace. */
  namespace: string;
  /** Object metrics: `describedObject`. */
  describedObject?: { apiVersion?: string; kind: string; name: string } | null;
  /** `metric.selector`, as the HPA controller sends it. */
  selector: Selector;
}

/** What serves an HPA metric from prometheus-adapter's rules. */
export interface AdapterPlan {
  /** The read, as the HPA controller sends it (`custom.metrics.k8s.io .../pods/*\/name`). */
  read: string;
  /** The rule that serves it (`rules[3]`, `externalRules[0]`). */
  rule?: string;
  /** The Prometheus series the rule names it from. */
  series?: string;
  /** The query sent (for pods: with {@linkcode PLAN_POD_NAMES}). */
  query?: string;
  /** Why the query cannot be rendered (upstream answers the read as not found). */
  error?: string;
  /**
   * No discovery to look in (offline): the rules that could name the metric, when its series
   * exist in Prometheus.
   */
  candidates?: string[];
}

/** What a plan is made from: the rules loaded and, when Prometheus was asked, what it found. */
export interface AdapterPlanContext {
  custom: readonly MetricNamer[];
  external: readonly MetricNamer[];
  /** The registries of the last discovery; null when Prometheus was not asked. */
  discovered: { custom: CustomMetricRegistry; external: ExternalMetricRegistry } | null;
  /**
   * A metric discovery did not find but a rule could name is planned as served once its series
   * appear (the admission webhook: an HPA applied with the workload whose series come later);
   * else it is an error naming the rules.
   */
  unknownAsCandidates?: boolean;
  mapper: ResourceMapper;
}

function groupOf(apiVersion: string | undefined): string {
  const v = apiVersion ?? "";
  const slash = v.indexOf("/");
  return slash < 0 ? "" : v.slice(0, slash);
}

function qualified(gr: GroupResource): string {
  return gr.group === "" ? gr.resource : `${gr.resource}.${gr.group}`;
}

/** The custom read of a Pods or Object metric; `{ error }` for an unknown kind. */
function customRead(
  ask: AdapterPlanAsk,
  mapper: ResourceMapper,
):
  | { resource: GroupResource; namespaced: boolean; name: string; read: string }
  | { error: string } {
  const selector = ask.selector.length > 0 ? " with metricLabelSelector" : "";
  if (ask.metricType === "Pods") {
    return {
      resource: { group: "", resource: "pods" },
      namespaced: true,
      name: "*",
      read: `custom.metrics.k8s.io namespaces/${ask.namespace}/pods/*/${ask.metricName}${selector}`,
    };
  }
  const obj = ask.describedObject;
  if (!obj) return { error: "an Object metric without describedObject" };
  const group = groupOf(obj.apiVersion);
  if (group === "" && obj.kind === "Namespace") {
    return {
      resource: { group: "", resource: "namespaces" },
      namespaced: false,
      name: ask.namespace,
      read: `custom.metrics.k8s.io namespaces/${ask.namespace}/${ask.metricName}${selector}`,
    };
  }
  let resource: GroupResource;
  try {
    resource = mapper.resourceFor({ group, resource: obj.kind.toLowerCase() });
  } catch (e) {
    return {
      error: `describedObject kind ${obj.kind} (apiVersion ${
        obj.apiVersion ?? ""
      }) is not a resource prometheus-adapter's rules know: ${(e as Error).message}`,
    };
  }
  return {
    resource,
    namespaced: true,
    name: obj.name,
    read: `custom.metrics.k8s.io namespaces/${ask.namespace}/${
      qualified(resource)
    }/${obj.name}/${ask.metricName}${selector}`,
  };
}

/**
 * The rule that serves `ask` and its query, the rules that could (offline), or null when no
 * rule serves it (nor, offline, could).
 *
 * @example
 * ```ts
 * planAdapterMetric({ metricType: "External", metricName: "queue_depth", namespace: "shop",
 *   selector: parseSelector("queue=orders") }, context);
 * // { read: "external.metrics.k8s.io namespaces/shop/queue_depth with labelSelector",
 * //   rule: "externalRules[0]", series: "queue_depth",
 * //   query: 'sum(queue_depth{namespace="shop",queue="orders"}) by (queue)' }
 * ```
 */
export function planAdapterMetric(
  ask: AdapterPlanAsk,
  context: AdapterPlanContext,
): AdapterPlan | null {
  if (ask.metricType === "External") {
    const read = `external.metrics.k8s.io namespaces/${ask.namespace}/${ask.metricName}${
      ask.selector.length > 0 ? " with labelSelector" : ""
    }`;
    if (context.discovered === null) {
      const candidates = context.external.filter((n) => couldNameMetric(n.rule, ask.metricName))
        .map((n) => n.rule.path);
      return candidates.length === 0 ? null : { read, candidates };
    }
    const registry = context.discovered.external;
    const found = registry.find(ask.metricName);
    if (found === undefined) {
      return notDiscovered(context, context.external, ask.metricName, read, "");
    }
    const q = registry.queryFor(ask.metricName, {
      namespace: ask.namespace,
      selector: ask.selector,
    });
    const base = { read, rule: found.namer.rule.path, series: found.series };
    if (q === undefined) return null;
    return "error" in q ? { ...base, error: q.error } : { ...base, query: q.query };
  }
  const target = customRead(ask, context.mapper);
  if ("error" in target) {
    // served by no rule, whatever Prometheus has: said when a rule could name the metric
    const could = context.custom.some((n) => couldNameMetric(n.rule, ask.metricName));
    return could ? { read: `custom.metrics.k8s.io ${ask.metricName}`, error: target.error } : null;
  }
  if (context.discovered === null) {
    const candidates = context.custom.filter((n) => couldNameMetric(n.rule, ask.metricName))
      .map((n) => n.rule.path);
    return candidates.length === 0 ? null : { read: target.read, candidates };
  }
  const registry = context.discovered.custom;
  const found = registry.find(target.resource, ask.metricName, target.namespaced);
  if (found === undefined) {
    return notDiscovered(
      context,
      context.custom,
      ask.metricName,
      target.read,
      ` on ${qualified(target.resource)}`,
    );
  }
  const q = registry.queryFor(target.resource, ask.metricName, target.namespaced, {
    namespace: target.namespaced ? ask.namespace : "",
    selector: ask.selector,
    names: target.name === "*" ? PLAN_POD_NAMES : [target.name],
  });
  const base = { read: target.read, rule: found.namer.rule.path, series: found.series };
  if (q === undefined) return null;
  return "error" in q ? { ...base, error: q.error } : { ...base, query: q.query };
}

/** A metric the last discovery did not find: the rules that could name it, or null. */
function notDiscovered(
  context: AdapterPlanContext,
  namers: readonly MetricNamer[],
  metric: string,
  read: string,
  on: string,
): AdapterPlan | null {
  const candidates = namers.filter((n) => couldNameMetric(n.rule, metric)).map((n) => n.rule.path);
  if (candidates.length === 0) return null;
  if (context.unknownAsCandidates) return { read, candidates };
  return {
    read,
    candidates,
    error: `no series in Prometheus is named ${metric}${on} by prometheus-adapter's ${
      candidates.join(", ")
    }`,
  };
}

/**
 * {@linkcode planAdapterMetric} of an HPA metric's plan: its selector as the HPA controller
 * sends it (kube-apiserver's selector text, parsed as the API parses it).
 */
export function adapterPlanOf(plan: MetricPlan, context: AdapterPlanContext): AdapterPlan | null {
  let selector: Selector;
  try {
    selector = parseSelector(labelSelectorString(plan.metricSelector));
  } catch {
    // a selector kube-apiserver would refuse: the HPA controller sends no such read
    return null;
  }
  return planAdapterMetric({
    metricType: plan.metricType,
    metricName: plan.metricName,
    namespace: plan.hpa.namespace,
    describedObject: plan.describedObject,
    selector,
  }, context);
}
