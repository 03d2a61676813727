/**
 * seriesShapes: what the engine keeps of a series query's answer between relists. Discovery of
 * the shapes must find exactly what discovery of the whole answer finds: the metrics in order,
 * each metric's rule and series, and the queries rendered from them.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { load } from "js-yaml";
import { parseSelector } from "../../../src/core/kubernetes/label_selector.ts";
import {
  type CustomMetricRegistry,
  discoverCustomMetrics,
  discoverExternalMetrics,
  type ExternalMetricRegistry,
  metricNamers,
  parsePrometheusAdapterConfig,
  type SeriesLabels,
  seriesShapes,
} from "../../../src/core/prometheus_adapter/mod.ts";
import { DEFAULT_CONFIG_1M_KUBE, REGISTRY_TEST_MAPPER as MAPPER } from "./fixtures.ts";
import { prng } from "../../support/prng.ts";

function namersOf(yaml: string, external = false) {
  const config = parsePrometheusAdapterConfig(load(yaml));
  return metricNamers(external ? config.externalRules : config.rules, MAPPER);
}

/** Everything a custom registry answers: its metrics, and for each its source and queries. */
function customView(registry: CustomMetricRegistry) {
  return registry.metrics.map((m) => {
    const resource = { group: m.group, resource: m.resource };
    const found = registry.find(resource, m.metric, m.namespaced);
    const read = (selector: string) =>
      registry.queryFor(resource, m.metric, m.namespaced, {
        namespace: "ns-a",
        selector: parseSelector(selector),
        names: ["one", "two"],
      });
    return {
      metric: m,
      rule: registry.ruleOf(m),
      ruleIndex: found?.ruleIndex,
      series: found?.series,
      resource: found?.resource,
      queries: [read(""), read("x=y,z!=w")],
    };
  });
}

/** Everything an external registry answers: its metrics, and for each its source and query. */
function externalView(registry: ExternalMetricRegistry) {
  return registry.metrics.map((m) => {
    const found = registry.find(m);
    return {
      metric: m,
      ruleIndex: found?.ruleIndex,
      series: found?.series,
      rule: found?.namer.rule.path,
      query: registry.queryFor(m, { namespace: "ns-a", selector: parseSelector("queue=q1") }),
    };
  });
}

const NAMES = ["a_total", "a_count", "b_total", "b", "queue_depth", "queue_jobs_depth", "c_x"];
const LABELS = ["pod", "namespace", "service", "node", "svc", "queue", "kube_pod", "job"];

/** `n` series of random names and label names (in random order), some without `__name__`. */
function randomSeries(rand: () => number, n: number): SeriesLabels[] {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];
  return Array.from({ length: n }, () => {
    const labels: Record<string, string> = {};
    const names = LABELS.filter(() => rand() < 0.4).sort(() => rand() - 0.5);
    const at = Math.floor(rand() * (names.length + 1));
    names.forEach((l, i) => {
      if (i === at && rand() < 0.9) labels.__name__ = pick(NAMES);
      labels[l] = `v${Math.floor(rand() * 1000)}`;
    });
    if (at === names.length && rand() < 0.9) labels.__name__ = pick(NAMES);
    return labels;
  });
}

const RULES = `rules:
- seriesQuery: q
  resources: {template: "<<.Resource>>"}
  name: {matches: "^(.*)_(total|count)$", as: "$1"}
  metricsQuery: "first(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"
- seriesQuery: q
  seriesFilters: [{isNot: "^b"}]
  resources: {overrides: {svc: {resource: service}, namespace: {resource: namespace}}}
  metricsQuery: "second(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"
- seriesQuery: q
  resources: {template: "kube_<<.Resource>>"}
  name: {matches: "^(.*)$", as: "k_$1"}
  metricsQuery: "third(<<.Series>>{<<.LabelMatchers>>})"
externalRules:
- seriesQuery: q
  name: {matches: "^queue_(.*)$"}
  resources: {overrides: {namespace: {resource: namespace}}}
  metricsQuery: "sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)"
- seriesQuery: q
  seriesFilters: [{is: "depth$"}]
  name: {matches: "^(.*)_depth$", as: "$1"}
  resources: {namespaced: false}
  metricsQuery: "max(<<.Series>>{<<.LabelMatchers>>})"
- seriesQuery: q
  name: {matches: "^(.*)_(total|count)$", as: "$1"}
  metricsQuery: "<<.Series>>"
`;

describe("seriesShapes", () => {
  it("keeps each name and label names at their first and last place, values blank", () => {
    const answer: SeriesLabels[] = [
      { __name__: "a_total", namespace: "n1", pod: "p1" },
      { __name__: "a_total", namespace: "n1", pod: "p2" },
      { __name__: "b_total", node: "x" },
      { __name__: "a_total", namespace: "n2", pod: "p3" },
      { __name__: "a_total", pod: "p4", namespace: "n2" },
      { job: "j" },
      { __name__: "a_total", namespace: "n3", pod: "p5" },
      { __name__: "b_total", node: "y" },
      { job: "k" },
    ];
    assert.deepEqual(seriesShapes(answer), [
      { __name__: "a_total", namespace: "", pod: "" },
      { __name__: "b_total", node: "" },
      // the label names in another order are another shape
      { __name__: "a_total", pod: "", namespace: "" },
      { job: "" },
      { __name__: "a_total", namespace: "", pod: "" },
      { __name__: "b_total", node: "" },
      { job: "" },
    ]);
    // the order of a shape's labels is the series'
    assert.deepEqual(Object.keys(seriesShapes(answer)[2]), ["__name__", "pod", "namespace"]);
    assert.deepEqual(seriesShapes([]), []);
  });

  it("leaves a series that is its shape's only one once", () => {
    assert.deepEqual(seriesShapes([{ pod: "p", __name__: "x" }]), [{ pod: "", __name__: "x" }]);
  });

  it("discovers what the whole answer discovers (upstream's registry test series)", () => {
    const namers = namersOf(DEFAULT_CONFIG_1M_KUBE);
    const series = new Map<string, SeriesLabels[]>();
    for (const n of namers) {
      // the fixture's shapes, each on many objects
      series.set(
        n.rule.seriesQuery,
        Array.from({ length: 300 }, (_, i) => ({
          __name__: ["container_a_seconds_total", "container_b_usage", "kube_c_total"][i % 3],
          ...(i % 2 === 0 ? { pod: `p${i}`, namespace: `n${i % 7}` } : {}),
          ...(i % 5 === 0 ? { kube_namespace: "n", kube_service: `s${i}` } : {}),
          container: `c${i}`,
        })),
      );
    }
    const shapes = new Map([...series].map(([q, s]) => [q, seriesShapes(s)]));
    // 12 shapes (3 names, with or without pod and kube_ labels), each at two places
    assert.ok([...shapes.values()].every((s) => s.length === 24));
    assert.deepEqual(
      customView(discoverCustomMetrics(namers, shapes, MAPPER)),
      customView(discoverCustomMetrics(namers, series, MAPPER)),
    );
  });

  it("discovers what the whole answer discovers (random answers)", () => {
    const custom = namersOf(RULES);
    const external = namersOf(RULES, true);
    for (let seed = 1; seed <= 200; seed++) {
      const rand = prng(seed);
      const answer = randomSeries(rand, 1 + Math.floor(rand() * 60));
      const whole = new Map([["q", answer]]);
      const shapes = new Map([["q", seriesShapes(answer)]]);
      assert.deepEqual(
        customView(discoverCustomMetrics(custom, shapes, MAPPER)),
        customView(discoverCustomMetrics(custom, whole, MAPPER)),
        `seed ${seed}`,
      );
      assert.deepEqual(
        externalView(discoverExternalMetrics(external, shapes)),
        externalView(discoverExternalMetrics(external, whole)),
        `seed ${seed}`,
      );
    }
  });

  it("is what the side-by-side bench's fleet keeps: one shape per metric and label names", () => {
    const answer: SeriesLabels[] = [];
    for (let i = 0; i < 500; i++) {
      for (let k = 0; k < 10; k++) {
        answer.push({
          __name__: "bench_queue_depth",
          instance: "127.0.0.1:9100",
          job: "e2e",
          namespace: `peers-${i % 10}`,
          pod: `peer-${i}`,
          queue: `q${k}`,
        });
      }
    }
    assert.deepEqual(seriesShapes(answer), [
      { __name__: "bench_queue_depth", instance: "", job: "", namespace: "", pod: "", queue: "" },
      { __name__: "bench_queue_depth", instance: "", job: "", namespace: "", pod: "", queue: "" },
    ]);
  });
});
