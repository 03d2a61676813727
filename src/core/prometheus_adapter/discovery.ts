/**
 * Which metrics prometheus-adapter v0.12.0 serves, from the series its rules' `seriesQuery`s
 * find, as its listers and registries decide (pkg/custom-provider cachingMetricsLister and
 * basicSeriesRegistry, pkg/external-provider basicMetricLister and externalSeriesRegistry):
 *
 * - each distinct `seriesQuery` is asked once (`/api/v1/series`); rules with the same query
 *   share its answer. If any query fails the whole update fails and the previous metrics stay;
 * - each rule keeps the series its `seriesFilters` and `name.matches` keep
 *   ({@linkcode keepsSeries}), in the order Prometheus listed them;
 * - a custom metric is (group-resource, namespaced, API name) for every resource the series'
 *   labels name ({@linkcode ResourceConverter.resourcesForSeries}); metrics on namespaces,
 *   nodes and persistentvolumes are never namespaced. A series whose labels name no resource
 *   serves nothing;
 * - an external metric is the series' API name alone (its labels play no part);
 * - when several series (of one rule or of several) give the same metric, the **last** one,
 *   in rule order then series order, is the one read.
 *
 * Upstream lists metrics in Go map order (random); here in the order each first appears.
 *
 * @module
 */

import type { Selector } from "../kubernetes/label_selector.ts";
import type { DiscoveryRule, GroupResource } from "./config.ts";
import {
  keepsSeries,
  metricNameForSeries,
  ResourceConverter,
  type ResourceMapper,
} from "./naming.ts";
import { renderCustomQuery, renderExternalQuery } from "./query.ts";

/** A series as `/api/v1/series` lists it: its labels, the name as `__name__`. */
export type SeriesLabels = Readonly<Record<string, string>>;

/** A rule with its resource labels resolved against the cluster (upstream's MetricNamer). */
export interface MetricNamer {
  readonly rule: DiscoveryRule;
  readonly converter: ResourceConverter;
}

/**
 * The namers of `rules` or `externalRules` (upstream's NamersFromConfig); throws on the first
 * override that names no resource.
 */
export function metricNamers(
  rules: readonly DiscoveryRule[],
  mapper: ResourceMapper,
): MetricNamer[] {
  return rules.map((rule) => ({
    rule,
    converter: new ResourceConverter(rule.resources, mapper, rule.path),
  }));
}

/** The `seriesQuery`s to ask Prometheus, each once, in rule order. */
export function distinctSeriesQueries(namers: readonly MetricNamer[]): string[] {
  return [...new Set(namers.map((n) => n.rule.seriesQuery))];
}

/** A metric the custom metrics API serves. */
export interface CustomMetricInfo {
  /** The normalized (plural) group-resource it describes. */
  group: string;
  resource: string;
  namespaced: boolean;
  /** The API name. */
  metric: string;
}

/** What serves a metric: the rule and the Prometheus series name (not the API name). */
export interface MetricSource {
  readonly namer: MetricNamer;
  /** The index of the rule in its list (`rules` or `externalRules`). */
  readonly ruleIndex: number;
  readonly series: string;
}

/** A custom metric found for a read: its source and the group-resource normalized. */
export interface CustomMetricMatch extends MetricSource {
  readonly resource: GroupResource;
}

function seriesName(labels: SeriesLabels): string {
  return Object.hasOwn(labels, "__name__") ? labels.__name__ : "";
}

function labelNames(labels: SeriesLabels): string[] {
  return Object.keys(labels).filter((l) => l !== "__name__");
}

/**
 * What discovery reads of a series query's answer, to keep between relists in place of the
 * answer: discovery reads a series' `__name__` and its label names, never another label's
 * value, and many series have the same name and label names (a metric on every pod). So each
 * distinct shape (the name and the label names in order) is kept at its first and its last
 * place in the answer, in answer order, with every value but `__name__`'s blank (`""`).
 * {@linkcode discoverCustomMetrics} and {@linkcode discoverExternalMetrics} find the same of
 * the shapes as of the answer: a metric is listed where its first series is, and its source
 * is its last series' (a later series naming the same metric replaces the source), and those
 * places are kept. At the side-by-side bench's 10,000 series (three series queries: 15,000
 * label sets kept, ~2 MiB of the live heap) this is six label sets.
 */
export function seriesShapes(series: readonly SeriesLabels[]): SeriesLabels[] {
  const first = new Map<string, number>();
  const last = new Map<string, number>();
  series.forEach((labels, i) => {
    const key = JSON.stringify([seriesName(labels), labelNames(labels)]);
    if (!first.has(key)) first.set(key, i);
    last.set(key, i);
  });
  const places = new Set([...first.values(), ...last.values()]);
  const out: SeriesLabels[] = [];
  series.forEach((labels, i) => {
    if (!places.has(i)) return;
    const shape: Record<string, string> = {};
    for (const name of Object.keys(labels)) shape[name] = name === "__name__" ? labels[name] : "";
    out.push(shape);
  });
  return out;
}

/** Each namer's kept series, as the listers hand them to the registries. */
function keptSeries(
  namers: readonly MetricNamer[],
  seriesByQuery: ReadonlyMap<string, readonly SeriesLabels[]>,
): SeriesLabels[][] {
  return namers.map((n) => {
    const series = seriesByQuery.get(n.rule.seriesQuery);
    if (series === undefined) {
      throw new Error(
        `unable to update list of all metrics: no metrics retrieved for query ${
          JSON.stringify(n.rule.seriesQuery)
        }`,
      );
    }
    return series.filter((s) => keepsSeries(n.rule, seriesName(s)));
  });
}

function customKey(group: string, resource: string, namespaced: boolean, metric: string): string {
  return `${group}\0${resource}\0${namespaced ? 1 : 0}\0${metric}`;
}

const NEVER_NAMESPACED = new Set(["namespaces", "nodes", "persistentvolumes"]);

/** The custom metrics served (upstream's basicSeriesRegistry after SetSeries). */
export class CustomMetricRegistry {
  /** Every metric served, each once, in the order it first appeared. */
  readonly metrics: readonly CustomMetricInfo[];
  readonly #sources: ReadonlyMap<string, MetricSource>;
  readonly #mapper: ResourceMapper;

  /** Use {@linkcode discoverCustomMetrics}. */
  constructor(
    metrics: readonly CustomMetricInfo[],
    sources: ReadonlyMap<string, MetricSource>,
    mapper: ResourceMapper,
  ) {
    this.metrics = metrics;
    this.#sources = sources;
    this.#mapper = mapper;
  }

  /** The rule (its `path`, `rules[2]`) that serves a listed metric (the status page). */
  ruleOf(m: CustomMetricInfo): string | undefined {
    return this.#sources.get(customKey(m.group, m.resource, m.namespaced, m.metric))?.namer.rule
      .path;
  }

  /**
   * What serves `metric` on `resource` (as the request names it: `pod`, `pods`, `deployments`
   * with or without its group), namespaced or not; undefined when nothing does or the cluster
   * does not know the resource (upstream's QueryForMetric lookup).
   */
  find(
    resource: GroupResource,
    metric: string,
    namespaced: boolean,
  ): CustomMetricMatch | undefined {
    let normalized: GroupResource;
    try {
      normalized = this.#mapper.resourceFor(resource);
      this.#mapper.singular(normalized.resource);
    } catch {
      return undefined;
    }
    const source = this.#sources.get(
      customKey(normalized.group, normalized.resource, namespaced, metric),
    );
    return source === undefined ? undefined : { ...source, resource: normalized };
  }

  /**
   * The query for a read of a served metric (upstream's QueryForMetric): undefined when no
   * names are asked for or nothing serves it, `{ error }` when the query cannot be rendered.
   * Upstream answers both as "metric not found" (and logs the error).
   */
  queryFor(
    resource: GroupResource,
    metric: string,
    namespaced: boolean,
    read: { namespace: string; selector: Selector; names: readonly string[] },
  ): { query: string } | { error: string } | undefined {
    if (read.names.length === 0) return undefined;
    const found = this.find(resource, metric, namespaced);
    if (found === undefined) return undefined;
    try {
      return {
        query: renderCustomQuery(found.namer.rule, found.namer.converter, {
          series: found.series,
          resource: found.resource,
          namespace: read.namespace,
          selector: read.selector,
          names: read.names,
        }),
      };
    } catch (err) {
      return { error: (err as Error).message };
    }
  }
}

/**
 * The custom metrics `rules` serve, given what each `seriesQuery` answered (keyed by the query
 * text, see {@linkcode distinctSeriesQueries}). Throws when a rule's query has no answer (upstream
 * then keeps its previous metrics).
 *
 * @example
 * ```ts
 * const registry = discoverCustomMetrics(namers, new Map([[
 *   '{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}',
 *   [{ __name__: "container_some_usage", namespace: "ns", pod: "p", container: "c" }],
 * ]]), mapper);
 * registry.metrics; // [{ group: "", resource: "pods", namespaced: true, metric: "some_usage" },
 *                   //  { group: "", resource: "namespaces", namespaced: false, metric: "some_usage" }]
 * registry.find({ group: "", resource: "pod" }, "some_usage", true)?.series; // "container_some_usage"
 * ```
 */
export function discoverCustomMetrics(
  namers: readonly MetricNamer[],
  seriesByQuery: ReadonlyMap<string, readonly SeriesLabels[]>,
  mapper: ResourceMapper,
): CustomMetricRegistry {
  const kept = keptSeries(namers, seriesByQuery);
  const metrics = new Map<string, CustomMetricInfo>();
  const sources = new Map<string, MetricSource>();
  namers.forEach((namer, ruleIndex) => {
    for (const labels of kept[ruleIndex]) {
      const series = seriesName(labels);
      const { resources, namespaced } = namer.converter.resourcesForSeries(labelNames(labels));
      let metric: string;
      try {
        metric = metricNameForSeries(namer.rule, series);
      } catch {
        continue;
      }
      for (const gr of resources) {
        const info: CustomMetricInfo = {
          group: gr.group,
          resource: gr.resource,
          namespaced: namespaced && !(gr.group === "" && NEVER_NAMESPACED.has(gr.resource)),
          metric,
        };
        const key = customKey(info.group, info.resource, info.namespaced, metric);
        if (!metrics.has(key)) metrics.set(key, info);
        sources.set(key, { namer, ruleIndex, series });
      }
    }
  });
  return new CustomMetricRegistry([...metrics.values()], sources, mapper);
}

/** The external metrics served (upstream's externalSeriesRegistry). */
export class ExternalMetricRegistry {
  /** Every metric name served, each once, in the order it first appeared. */
  readonly metrics: readonly string[];
  readonly #sources: ReadonlyMap<string, MetricSource>;

  /** Use {@linkcode discoverExternalMetrics}. */
  constructor(sources: ReadonlyMap<string, MetricSource>) {
    this.metrics = [...sources.keys()];
    this.#sources = sources;
  }

  /** What serves the metric named exactly `metric` (case matters); undefined when none does. */
  find(metric: string): MetricSource | undefined {
    return this.#sources.get(metric);
  }

  /**
   * The query for a read (upstream's QueryForMetric): undefined when nothing serves the name,
   * `{ error }` when the query cannot be rendered (upstream: an internal error).
   */
  queryFor(
    metric: string,
    read: { namespace: string; selector: Selector },
  ): { query: string } | { error: string } | undefined {
    const found = this.find(metric);
    if (found === undefined) return undefined;
    try {
      return {
        query: renderExternalQuery(found.namer.rule, found.namer.converter, {
          series: found.series,
          namespace: read.namespace,
          selector: read.selector,
        }),
      };
    } catch (err) {
      return { error: (err as Error).message };
    }
  }
}

/**
 * The external metrics `externalRules` serve, given what each `seriesQuery` answered. Throws
 * when a rule's query has no answer.
 */
export function discoverExternalMetrics(
  namers: readonly MetricNamer[],
  seriesByQuery: ReadonlyMap<string, readonly SeriesLabels[]>,
): ExternalMetricRegistry {
  const kept = keptSeries(namers, seriesByQuery);
  const sources = new Map<string, MetricSource>();
  namers.forEach((namer, ruleIndex) => {
    for (const labels of kept[ruleIndex]) {
      const series = seriesName(labels);
      let metric: string;
      try {
        metric = metricNameForSeries(namer.rule, series);
      } catch {
        continue;
      }
      sources.set(metric, { namer, ruleIndex, series });
    }
  });
  return new ExternalMetricRegistry(sources);
}
