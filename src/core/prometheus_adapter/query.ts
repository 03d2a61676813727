/**
 * `metricsQuery` rendered for one read, as prometheus-adapter v0.12.0 renders it
 * (pkg/naming/metrics_query.go). The template sees:
 *
 * - `Series`: the series name;
 * - `LabelMatchers`: the matchers, comma-joined: first the request's label selector, then the
 *   namespace label (`namespace="ns"`), then for custom metrics the resource label (`=` for one
 *   object, `=~"a|b"` for several);
 * - `LabelValuesByName`: a map from those labels to their values joined by `|`;
 * - `GroupBy` / `GroupBySlice`: the resource label (custom metrics), empty for external ones.
 *
 * A selector requirement becomes: `=`/`==` one value -> `="v"`, `!=` -> `!="v"`, `in` ->
 * `=~"a|b"` (also for one value), `notin` -> `!~"a|b"`, exists -> `!=""`, `!key` -> `=""`;
 * `>`/`<` are refused. Values are quoted as Go's `%q` quotes them and otherwise passed
 * through (a value may be a regular expression for `in`, as upstream allows).
 *
 * The template language is the subset described in template.ts.
 *
 * @module
 */

import type { Selector } from "../kubernetes/label_selector.ts";
import type { DiscoveryRule, GroupResource } from "./config.ts";
import type { ResourceConverter } from "./naming.ts";
import { NAMESPACES } from "./naming.ts";
import {
  executeGoTemplate,
  type GoStruct,
  type GoTemplate,
  type GoValue,
  quoteGoString,
} from "./template.ts";

/** A read of a custom metric (`rules`). */
export interface CustomQueryRequest {
  /** The series name (not the API metric name). */
  series: string;
  /** The described objects' resource, as the request names it (`pods`). */
  resource: GroupResource;
  /** "" for cluster-scoped objects. */
  namespace: string;
  /** The request's `metricLabelSelector`; empty for none. */
  selector: Selector;
  /** The objects' names. */
  names: readonly string[];
  /** Labels to group by after the resource label (resourceRules' container label). */
  extraGroupBy?: readonly string[];
}

/** A read of an external metric (`externalRules`). */
export interface ExternalQueryRequest {
  series: string;
  /** The HPA's namespace. */
  namespace: string;
  selector: Selector;
}

interface Part {
  label: string;
  values: readonly string[];
  operator: Selector[number]["operator"];
}

function matcher(label: string, op: string, value: string): string {
  return `${label}${op}${quoteGoString(value)}`;
}

/** Upstream's processQueryParts: the matchers and the values by label. */
function processParts(parts: readonly Part[]): { exprs: string[]; byName: Map<string, string> } {
  const exprs: string[] = [];
  const byName = new Map<string, string>();
  for (const p of parts) {
    if (p.label === "") throw new Error("label not specified");
    if (p.operator === "gt" || p.operator === "lt") {
      throw new Error("operator not supported by prometheus");
    }
    const n = p.values.length;
    const presence = p.operator === "exists" || p.operator === "!";
    if (n === 0 && !presence) throw new Error("operator requires values");
    if (n > 0 && presence) throw new Error("operator does not support values");
    let op: string;
    if (n === 0) op = p.operator === "exists" ? "!=" : "=";
    else if (n === 1) {
      op = p.operator === "=" || p.operator === "=="
        ? "="
        : p.operator === "!="
        ? "!="
        : p.operator === "in"
        ? "=~"
        : "!~";
    } else {
      op = p.operator === "=" || p.operator === "==" || p.operator === "in" ? "=~" : "!~";
    }
    const value = p.values.join("|");
    exprs.push(matcher(p.label, op, value));
    byName.set(p.label, value);
  }
  return { exprs, byName };
}

function selectorParts(selector: Selector): Part[] {
  return selector.map((r) => ({ label: r.key, values: r.values, operator: r.operator }));
}

function args(
  series: string,
  exprs: readonly string[],
  byName: ReadonlyMap<string, string>,
  groupBy: string,
  groupBySlice: readonly string[],
): GoStruct {
  return {
    type: "naming.queryTemplateArgs",
    fields: new Map<string, GoValue>([
      ["Series", series],
      ["LabelMatchers", exprs.join(",")],
      ["LabelValuesByName", byName],
      ["GroupBy", groupBy],
      ["GroupBySlice", groupBySlice],
    ]),
  };
}

function render(template: GoTemplate, field: string, data: GoStruct): string {
  let out: string;
  try {
    out = executeGoTemplate(template, data);
  } catch (err) {
    throw new Error(`${field}: ${(err as Error).message}`);
  }
  if (out === "") {
    throw new Error(`${field}: empty query produced by metrics query template`);
  }
  return out;
}

/**
 * The query for a custom metric read (upstream's `Build`). Throws with the rule's path when
 * the selector cannot be expressed, a label cannot be found or the template fails.
 *
 * @example
 * ```ts
 * // metricsQuery: sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)
 * renderCustomQuery(rule, converter, {
 *   series: "http_requests_total", resource: { group: "", resource: "pods" },
 *   namespace: "web", selector: [], names: ["a", "b"],
 * });
 * // 'sum(rate(http_requests_total{namespace="web",pod=~"a|b"}[1m])) by (pod)'
 * ```
 */
export function renderCustomQuery(
  rule: DiscoveryRule,
  converter: ResourceConverter,
  request: CustomQueryRequest,
): string {
  return renderQueryTemplate(
    rule.metricsQueryTemplate,
    `${rule.path}.metricsQuery`,
    converter,
    request,
  );
}

/**
 * {@linkcode renderCustomQuery} with any template (upstream's `Build`, which resourceRules'
 * `containerQuery` and `nodeQuery` use too). `field` names the template in errors
 * (`resourceRules.cpu.containerQuery`); other errors name the part before its last dot.
 */
export function renderQueryTemplate(
  template: GoTemplate,
  field: string,
  converter: ResourceConverter,
  request: CustomQueryRequest,
): string {
  const path = field.slice(0, field.lastIndexOf("."));
  const parts = selectorParts(request.selector);
  try {
    if (request.namespace !== "") {
      parts.push({
        label: converter.labelForResource(NAMESPACES),
        values: [request.namespace],
        operator: "=",
      });
    }
    const { exprs, byName } = processParts(parts);
    const resourceLabel = converter.labelForResource(request.resource);
    const target = request.names.join("|");
    exprs.push(matcher(resourceLabel, request.names.length > 1 ? "=~" : "=", target));
    byName.set(resourceLabel, target);
    const groupBy = [resourceLabel, ...(request.extraGroupBy ?? [])];
    return render(template, field, args(request.series, exprs, byName, groupBy.join(","), groupBy));
  } catch (err) {
    const message = (err as Error).message;
    if (message.startsWith(`${path}.`)) throw err;
    throw new Error(`${path}: ${message}`);
  }
}

/**
 * The query for an external metric read (upstream's `BuildExternal` as its external provider
 * calls it: no group-by): the selector's matchers and, unless `resources.namespaced` is false,
 * the namespace label's.
 *
 * @example
 * ```ts
 * // metricsQuery: sum(<<.Series>>{<<.LabelMatchers>>}) by (name)
 * renderExternalQuery(rule, converter, { series: "queue_depth", namespace: "web", selector: [] });
 * // 'sum(queue_depth{namespace="web"}) by (name)'
 * ```
 */
export function renderExternalQuery(
  rule: DiscoveryRule,
  converter: ResourceConverter,
  request: ExternalQueryRequest,
): string {
  const parts = selectorParts(request.selector);
  try {
    if (rule.resources.namespaced && request.namespace !== "") {
      parts.push({
        label: converter.labelForResource(NAMESPACES),
        values: [request.namespace],
        operator: "=",
      });
    }
    const { exprs, byName } = processParts(parts);
    return render(
      rule.metricsQueryTemplate,
      `${rule.path}.metricsQuery`,
      args(
        request.series,
        exprs,
        byName,
        "",
        [],
      ),
    );
  } catch (err) {
    const message = (err as Error).message;
    if (message.startsWith(`${rule.path}.`)) throw err;
    throw new Error(`${rule.path}: ${message}`);
  }
}
