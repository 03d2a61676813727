/**
 * Series discovery against prometheus-adapter v0.12.0's own table
 * (pkg/custom-provider/series_registry_test.go: its series on cmd/config-gen's
 * DefaultConfig(1m, "kube_"), its RESTMapper with Ingress and Deployment in `extensions`, the
 * 17 metrics it lists and the 12 queries it builds), plus the duplicate, ordering and failure
 * rules of its registries and listers.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { load } from "js-yaml";
import { parseSelector } from "../../../src/core/kubernetes/label_selector.ts";
import {
  type CustomMetricInfo,
  discoverCustomMetrics,
  discoverExternalMetrics,
  distinctSeriesQueries,
  metricNamers,
  parsePrometheusAdapterConfig,
  renderCustomQuery,
  renderExternalQuery,
  type SeriesLabels,
} from "../../../src/core/prometheus_adapter/mod.ts";
import { DEFAULT_CONFIG_1M_KUBE, REGISTRY_TEST_MAPPER as MAPPER } from "./fixtures.ts";

const CONTAINERS = '{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}';
const OTHERS = '{kube_namespace!="",__name__!~"^container_.*"}';

/** seriesRegistryTestSeries, as the two distinct series queries of the config answer it. */
const SERIES = new Map<string, SeriesLabels[]>([
  [CONTAINERS, [
    {
      __name__: "container_some_time_seconds_total",
      pod: "somepod",
      namespace: "somens",
      container: "somecont",
    },
    {
      __name__: "container_some_count_total",
      pod: "somepod",
      namespace: "somens",
      container: "somecont",
    },
    {
      __name__: "container_some_usage",
      pod: "somepod",
      namespace: "somens",
      container: "somecont",
    },
  ]],
  [OTHERS, [
    { __name__: "node_gigawatts", kube_node: "somenode" },
    { __name__: "service_proxy_packets", kube_service: "somesvc", kube_namespace: "somens" },
    {
      __name__: "ingress_hits_total",
      kube_ingress: "someingress",
      kube_service: "somesvc",
      kube_pod: "backend1",
      kube_namespace: "somens",
    },
    {
      __name__: "ingress_hits_total",
      kube_ingress: "someingress",
      kube_service: "somesvc",
      kube_pod: "backend2",
      kube_namespace: "somens",
    },
    { __name__: "volume_claims_total", kube_persistentvolume: "somepv" },
    {
      __name__: "work_queue_wait_seconds_total",
      kube_deployment: "somedep",
      kube_namespace: "somens",
    },
    { __name__: "node_fan_seconds_total", kube_node: "somenode" },
  ]],
]);

function namersOf(yaml: string, external = false) {
  const config = parsePrometheusAdapterConfig(load(yaml));
  return metricNamers(external ? config.externalRules : config.rules, MAPPER);
}

const key = (m: CustomMetricInfo) => `${m.group}/${m.resource}/${m.namespaced}/${m.metric}`;

describe("discoverCustomMetrics (upstream series_registry_test.go)", () => {
  const namers = namersOf(DEFAULT_CONFIG_1M_KUBE);
  const registry = discoverCustomMetrics(namers, SERIES, MAPPER);

  it("asks each distinct seriesQuery once", () => {
    assert.deepEqual(distinctSeriesQueries(namers), [CONTAINERS, OTHERS]);
  });

  it("lists all metrics", () => {
    const want: CustomMetricInfo[] = [
      { group: "", resource: "pods", namespaced: true, metric: "some_count" },
      { group: "", resource: "namespaces", namespaced: false, metric: "some_count" },
      { group: "", resource: "pods", namespaced: true, metric: "some_time" },
      { group: "", resource: "namespaces", namespaced: false, metric: "some_time" },
      { group: "", resource: "pods", namespaced: true, metric: "some_usage" },
      { group: "", resource: "namespaces", namespaced: false, metric: "some_usage" },
      { group: "", resource: "services", namespaced: true, metric: "ingress_hits" },
      { group: "extensions", resource: "ingresses", namespaced: true, metric: "ingress_hits" },
      { group: "", resource: "pods", namespaced: true, metric: "ingress_hits" },
      { group: "", resource: "namespaces", namespaced: false, metric: "ingress_hits" },
      { group: "", resource: "services", namespaced: true, metric: "service_proxy_packets" },
      { group: "", resource: "namespaces", namespaced: false, metric: "service_proxy_packets" },
      { group: "extensions", resource: "deployments", namespaced: true, metric: "work_queue_wait" },
      { group: "", resource: "namespaces", namespaced: false, metric: "work_queue_wait" },
      { group: "", resource: "nodes", namespaced: false, metric: "node_gigawatts" },
      { group: "", resource: "persistentvolumes", namespaced: false, metric: "volume_claims" },
      { group: "", resource: "nodes", namespaced: false, metric: "node_fan" },
    ];
    assert.deepEqual(registry.metrics.map(key).sort(), want.map(key).sort());
  });

  const cases: Array<{
    title: string;
    resource: { group: string; resource: string };
    namespaced: boolean;
    metric: string;
    namespace?: string;
    names: string[];
    selector?: string;
    want: string;
  }> = [
    {
      title: "container metrics gauge / multiple resource names",
      resource: { group: "", resource: "pods" },
      namespaced: true,
      metric: "some_usage",
      namespace: "somens",
      names: ["somepod1", "somepod2"],
      want:
        'sum(container_some_usage{namespace="somens",pod=~"somepod1|somepod2",container!="POD"}) by (pod)',
    },
    {
      title: "container metrics counter",
      resource: { group: "", resource: "pods" },
      namespaced: true,
      metric: "some_count",
      namespace: "somens",
      names: ["somepod1", "somepod2"],
      want:
        'sum(rate(container_some_count_total{namespace="somens",pod=~"somepod1|somepod2",container!="POD"}[1m])) by (pod)',
    },
    {
      title: "container metrics seconds counter",
      resource: { group: "", resource: "pods" },
      namespaced: true,
      metric: "some_time",
      namespace: "somens",
      names: ["somepod1", "somepod2"],
      want:
        'sum(rate(container_some_time_seconds_total{namespace="somens",pod=~"somepod1|somepod2",container!="POD"}[1m])) by (pod)',
    },
    {
      title: "namespaced metrics counter / multidimensional (service)",
      resource: { group: "", resource: "service" },
      namespaced: true,
      metric: "ingress_hits",
      namespace: "somens",
      names: ["somesvc"],
      want:
        'sum(rate(ingress_hits_total{kube_namespace="somens",kube_service="somesvc"}[1m])) by (kube_service)',
    },
    {
      title: "namespaced metrics counter / multidimensional (service) / selection using labels",
      resource: { group: "", resource: "service" },
      namespaced: true,
      metric: "ingress_hits",
      namespace: "somens",
      names: ["somesvc"],
      selector: "param1=value1",
      want:
        'sum(rate(ingress_hits_total{param1="value1",kube_namespace="somens",kube_service="somesvc"}[1m])) by (kube_service)',
    },
    {
      title: "namespaced metrics counter / multidimensional (ingress)",
      resource: { group: "extensions", resource: "ingress" },
      namespaced: true,
      metric: "ingress_hits",
      namespace: "somens",
      names: ["someingress"],
      want:
        'sum(rate(ingress_hits_total{kube_namespace="somens",kube_ingress="someingress"}[1m])) by (kube_ingress)',
    },
    {
      title: "namespaced metrics counter / multidimensional (pod)",
      resource: { group: "", resource: "pod" },
      namespaced: true,
      metric: "ingress_hits",
      namespace: "somens",
      names: ["somepod"],
      want:
        'sum(rate(ingress_hits_total{kube_namespace="somens",kube_pod="somepod"}[1m])) by (kube_pod)',
    },
    {
      title: "namespaced metrics gauge",
      resource: { group: "", resource: "service" },
      namespaced: true,
      metric: "service_proxy_packets",
      namespace: "somens",
      names: ["somesvc"],
      want:
        'sum(service_proxy_packets{kube_namespace="somens",kube_service="somesvc"}) by (kube_service)',
    },
    {
      title: "namespaced metrics seconds counter",
      resource: { group: "extensions", resource: "deployment" },
      namespaced: true,
      metric: "work_queue_wait",
      namespace: "somens",
      names: ["somedep"],
      want:
        'sum(rate(work_queue_wait_seconds_total{kube_namespace="somens",kube_deployment="somedep"}[1m])) by (kube_deployment)',
    },
    {
      title: "root scoped metrics gauge",
      resource: { group: "", resource: "node" },
      namespaced: false,
      metric: "node_gigawatts",
      names: ["somenode"],
      want: 'sum(node_gigawatts{kube_node="somenode"}) by (kube_node)',
    },
    {
      title: "root scoped metrics counter",
      resource: { group: "", resource: "persistentvolume" },
      namespaced: false,
      metric: "volume_claims",
      names: ["somepv"],
      want:
        'sum(rate(volume_claims_total{kube_persistentvolume="somepv"}[1m])) by (kube_persistentvolume)',
    },
    {
      title: "root scoped metrics seconds counter",
      resource: { group: "", resource: "node" },
      namespaced: false,
      metric: "node_fan",
      names: ["somenode"],
      want: 'sum(rate(node_fan_seconds_total{kube_node="somenode"}[1m])) by (kube_node)',
    },
  ];
  for (const c of cases) {
    it(`builds the query for ${c.title}`, () => {
      const found = registry.find(c.resource, c.metric, c.namespaced);
      assert.ok(found, `${c.metric} should be served`);
      const query = renderCustomQuery(found.namer.rule, found.namer.converter, {
        series: found.series,
        resource: found.resource,
        namespace: c.namespace ?? "",
        selector: parseSelector(c.selector ?? ""),
        names: c.names,
      });
      assert.equal(query, c.want);
    });
  }

  it("finds nothing for the wrong scope, an unknown metric or an unknown resource", () => {
    assert.equal(registry.find({ group: "", resource: "pods" }, "some_usage", false), undefined);
    assert.equal(registry.find({ group: "", resource: "nodes" }, "node_fan", true), undefined);
    assert.equal(registry.find({ group: "", resource: "pods" }, "nope", true), undefined);
    assert.equal(registry.find({ group: "", resource: "widgets" }, "some_usage", true), undefined);
    assert.equal(
      registry.find({ group: "", resource: "namespace" }, "some_usage", false)?.series,
      "container_some_usage",
    );
  });

  it("fails when a rule's series query has no answer", () => {
    assert.throws(
      () => discoverCustomMetrics(namers, new Map([[CONTAINERS, []]]), MAPPER),
      /no metrics retrieved for query "\{kube_namespace!=\\"\\",__name__!~\\"\^container_\.\*\\"\}"/,
    );
  });
});

describe("discoverCustomMetrics: duplicates and order", () => {
  const yaml = `rules:
- seriesQuery: q
  resources: {template: "<<.Resource>>"}
  name: {matches: "^(.*)_total$"}
  metricsQuery: "first(<<.Series>>)"
- seriesQuery: q
  resources: {overrides: {svc: {resource: service}}}
  name: {matches: "^(.*)_count$"}
  metricsQuery: "second(<<.Series>>)"
`;
  const namers = namersOf(yaml);
  const registry = discoverCustomMetrics(
    namers,
    new Map<string, SeriesLabels[]>([["q", [
      { __name__: "a_total", pod: "p", namespace: "n" },
      { __name__: "b_total", node: "x" },
      { __name__: "a_total", service: "s", namespace: "n" },
      { __name__: "a_count", svc: "s" },
      { __name__: "unnamed_total", team: "x" },
      { __name__: "c_total", widget: "w" },
    ]]]),
    MAPPER,
  );

  it("keeps the first appearance's place and the last series", () => {
    assert.deepEqual(registry.metrics.map(key), [
      "/pods/true/a",
      "/namespaces/false/a",
      "/nodes/false/b",
      "/services/true/a",
    ]);
    const pods = registry.find({ group: "", resource: "pod" }, "a", true);
    assert.equal(pods?.ruleIndex, 0);
    // a_count (rule 1) is named "a" too and comes last
    const services = registry.find({ group: "", resource: "services" }, "a", true);
    assert.equal(services?.ruleIndex, 1);
    assert.equal(services?.series, "a_count");
    assert.equal(registry.find({ group: "", resource: "namespaces" }, "a", false)?.ruleIndex, 0);
  });
});

describe("discoverExternalMetrics", () => {
  const yaml = `externalRules:
- seriesQuery: '{__name__=~"queue_.*"}'
  name: {matches: "^queue_(.*)$"}
  metricsQuery: "sum(<<.Series>>{<<.LabelMatchers>>}) by (name)"
- seriesQuery: '{__name__=~"queue_.*"}'
  seriesFilters: [{isNot: "_total$"}]
  name: {matches: "^queue_(.*)_depth$", as: "$1"}
  resources: {namespaced: false}
  metricsQuery: "max(<<.Series>>{<<.LabelMatchers>>})"
- seriesQuery: '{job="x"}'
  metricsQuery: "<<.Series>>"
`;
  const namers = namersOf(yaml, true);
  const series = new Map<string, SeriesLabels[]>([
    ['{__name__=~"queue_.*"}', [
      { __name__: "queue_depth", name: "a" },
      { __name__: "queue_jobs_depth", name: "b", namespace: "n" },
      { __name__: "queue_jobs_total" },
      { __name__: "queue_depth", name: "c" },
    ]],
    ['{job="x"}', [{ job: "x" }, { __name__: "Jobs", job: "x" }]],
  ]);
  const registry = discoverExternalMetrics(namers, series);

  it("serves every named series once, the last one winning", () => {
    assert.deepEqual(registry.metrics, ["depth", "jobs_depth", "jobs_total", "jobs", "", "Jobs"]);
    assert.equal(registry.find("jobs")?.ruleIndex, 1);
    assert.equal(registry.find("jobs")?.series, "queue_jobs_depth");
    assert.equal(registry.find("jobs_depth")?.ruleIndex, 0);
    assert.equal(registry.find("depth")?.series, "queue_depth");
    // a series without __name__ is named "" by `.*`
    assert.equal(registry.find("")?.series, "");
    assert.equal(registry.find("jobs_DEPTH"), undefined);
  });

  it("renders the query of the rule that serves the name", () => {
    const found = registry.find("jobs")!;
    assert.equal(
      renderExternalQuery(found.namer.rule, found.namer.converter, {
        series: found.series,
        namespace: "team-a",
        selector: parseSelector("name=b"),
      }),
      'max(queue_jobs_depth{name="b"})',
    );
  });
});
