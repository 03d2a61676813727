/**
 * `metricsQuery` rendering against prometheus-adapter v0.12.0's own tables:
 * pkg/naming/metrics_query_test.go (TestBuildSelector, TestBuildExternalSelector; its mock
 * converter names a resource's label after the resource itself) and
 * pkg/custom-provider/series_registry_test.go (12 reads on cmd/config-gen's DefaultConfig(1m,
 * "kube_"), with exact PromQL).
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { load } from "js-yaml";
import { parseSelector } from "../../../src/core/kubernetes/label_selector.ts";
import {
  type DiscoveryRule,
  keepsSeries,
  metricNameForSeries,
  parsePrometheusAdapterConfig,
  renderCustomQuery,
  renderExternalQuery,
  ResourceConverter,
  type ResourceMapper,
} from "../../../src/core/prometheus_adapter/mod.ts";
import { DEFAULT_CONFIG_1M_KUBE, TEST_MAPPER } from "./fixtures.ts";

/** Upstream's resourceConverterMock: a resource's label is its resource name. */
const IDENTITY: ResourceMapper = {
  resourceFor: (gr) => gr,
  singular: (r) => r,
  kindOf: () => null,
};

function mockRule(metricsQuery: string, namespaced = true): [DiscoveryRule, ResourceConverter] {
  const config = parsePrometheusAdapterConfig({
    rules: [{ resources: { template: "<<.Resource>>", namespaced }, metricsQuery }],
  });
  const rule = config.rules[0];
  return [rule, new ResourceConverter(rule.resources, IDENTITY, rule.path)];
}

const RESOURCE = { group: "group", resource: "resource" };

describe("renderCustomQuery (upstream TestBuildSelector)", () => {
  const cases: Array<{
    name: string;
    template: string;
    series?: string;
    namespace?: string;
    selector?: string;
    names?: string[];
    extraGroupBy?: string[];
    want: string;
  }> = [
    { name: "series", template: "series <<.Series>>", series: "foo", want: "series foo" },
    {
      name: "multiple LabelMatchers values",
      template: "<<.LabelMatchers>>",
      names: ["bar", "baz"],
      want: 'resource=~"bar|baz"',
    },
    {
      name: "single LabelMatchers value",
      template: "<<.LabelMatchers>>",
      names: ["bar"],
      want: 'resource="bar"',
    },
    {
      name: "LabelMatchers with additional metrics filter",
      template: "<<.LabelMatchers>>",
      selector: "metric1=value1",
      names: ["bar"],
      want: 'metric1="value1",resource="bar"',
    },
    {
      name: "single LabelValuesByName value",
      template: '<<index .LabelValuesByName "resource">>',
      names: ["bar"],
      want: "bar",
    },
    {
      name: "multiple LabelValuesByName values",
      template: '<<index .LabelValuesByName "resource">>',
      names: ["bar", "baz"],
      want: "bar|baz",
    },
    {
      name: "multiple LabelValuesByName values with namespace",
      template: '<<index .LabelValuesByName "namespaces">> <<index .LabelValuesByName "resource">>',
      namespace: "default",
      names: ["bar", "baz"],
      want: "default bar|baz",
    },
    { name: "single GroupBy value", template: "<<.GroupBy>>", want: "resource" },
    {
      name: "multiple GroupBy values",
      template: "<<.GroupBy>>",
      extraGroupBy: ["extra", "groups"],
      want: "resource,extra,groups",
    },
    { name: "single GroupBySlice value", template: "<<.GroupBySlice>>", want: "[resource]" },
    {
      name: "multiple GroupBySlice values",
      template: "<<.GroupBySlice>>",
      extraGroupBy: ["extra", "groups"],
      want: "[resource extra groups]",
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const [rule, converter] = mockRule(c.template);
      const got = renderCustomQuery(rule, converter, {
        series: c.series ?? "",
        resource: RESOURCE,
        namespace: c.namespace ?? "",
        selector: parseSelector(c.selector ?? ""),
        names: c.names ?? [],
        extraGroupBy: c.extraGroupBy,
      });
      assert.equal(got, c.want);
    });
  }
});

describe("renderExternalQuery (upstream TestBuildExternalSelector)", () => {
  // upstream's table passes groupBy/groupBySlice directly; its external provider always passes
  // "" and [], so the two cases that set them are rendered through a range instead
  const cases: Array<{
    name: string;
    template: string;
    namespaced?: boolean;
    series?: string;
    namespace?: string;
    selector?: string;
    want: string;
  }> = [
    { name: "series", template: "series <<.Series>>", series: "foo", want: "series foo" },
    { name: "empty GroupBy", template: "x<<.GroupBy>>", want: "x" },
    { name: "empty GroupBySlice", template: "<<.GroupBySlice>>", want: "[]" },
    {
      name: "namespace value by name",
      template: '<<index .LabelValuesByName "namespaces">> <<.GroupBySlice>>',
      namespace: "default",
      want: "default []",
    },
    {
      name: "namespace disabled",
      template: '<<index .LabelValuesByName "namespaces">> <<.GroupBySlice>>',
      namespaced: false,
      namespace: "default",
      want: " []",
    },
    {
      name: "single LabelMatchers value",
      template: "<<.LabelMatchers>>",
      selector: "foo=bar",
      want: 'foo="bar"',
    },
    {
      name: "single LabelMatchers value with namespace",
      template: "<<.LabelMatchers>>",
      namespace: "default",
      selector: "foo=bar",
      want: 'foo="bar",namespaces="default"',
    },
    {
      name: "multiple LabelMatchers value",
      template: "<<.LabelMatchers>>",
      selector: "foo=bar,qux in (bar,baz)",
      want: 'foo="bar",qux=~"bar|baz"',
    },
    {
      name: "single LabelValuesByName value",
      template: "<<.LabelValuesByName>>",
      selector: "foo=bar",
      want: "map[foo:bar]",
    },
    {
      name: "single LabelValuesByName with multiple selectors",
      template: "<<.LabelValuesByName>>",
      selector: "foo in (bar,baz)",
      want: "map[foo:bar|baz]",
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const [rule, converter] = mockRule(c.template, c.namespaced ?? true);
      const got = renderExternalQuery(rule, converter, {
        series: c.series ?? "",
        namespace: c.namespace ?? "",
        selector: parseSelector(c.selector ?? ""),
      });
      assert.equal(got, c.want);
    });
  }
});

describe("label selector translation", () => {
  const cases: Array<[string, string]> = [
    ["a=x", 'a="x"'],
    ["a==x", 'a="x"'],
    ["a!=x", 'a!="x"'],
    ["a in (x)", 'a=~"x"'],
    ["a in (y,x)", 'a=~"x|y"'],
    ["a notin (x)", 'a!~"x"'],
    ["a notin (x,y)", 'a!~"x|y"'],
    ["a", 'a!=""'],
    ["!a", 'a=""'],
    ["b=1,a=2", 'a="2",b="1"'],
  ];
  for (const [selector, want] of cases) {
    it(`renders ${selector} as ${want}`, () => {
      const [rule, converter] = mockRule("<<.LabelMatchers>>");
      assert.equal(
        renderExternalQuery(rule, converter, {
          series: "s",
          namespace: "",
          selector: parseSelector(selector),
        }),
        want,
      );
    });
  }

  it("refuses > and < with the rule's path", () => {
    const [rule, converter] = mockRule("<<.LabelMatchers>>");
    assert.throws(
      () =>
        renderExternalQuery(rule, converter, {
          series: "s",
          namespace: "",
          selector: parseSelector("a>5"),
        }),
      { message: "rules[0]: operator not supported by prometheus" },
    );
  });

  it("quotes values as Go's %q does", () => {
    const [rule, converter] = mockRule("<<.LabelMatchers>>");
    const selector = [{ key: "a", operator: "=" as const, values: ['q"\\\n\t\u0001é\u00a0'] }];
    assert.equal(
      renderExternalQuery(rule, converter, { series: "s", namespace: "", selector }),
      'a="q\\"\\\\\\n\\t\\x01é\\u00a0"',
    );
  });

  it("fails on an empty query with the rule's path", () => {
    const [rule, converter] = mockRule("<<.GroupBy>>");
    assert.throws(
      () => renderExternalQuery(rule, converter, { series: "s", namespace: "", selector: [] }),
      { message: "rules[0].metricsQuery: empty query produced by metrics query template" },
    );
  });
});

describe('cmd/config-gen\'s DefaultConfig(1m, "kube_") (upstream series_registry_test.go)', () => {
  const config = parsePrometheusAdapterConfig(load(DEFAULT_CONFIG_1M_KUBE));
  const converters = config.rules.map((r) =>
    new ResourceConverter(r.resources, TEST_MAPPER, r.path)
  );

  /** The first rule that keeps the series and names it `metric`, as the registry finds it. */
  function query(
    series: string,
    metric: string,
    resource: { group: string; resource: string },
    namespace: string,
    names: string[],
    selector = "",
  ): string {
    const i = config.rules.findIndex((r) =>
      keepsSeries(r, series) && metricNameForSeries(r, series) === metric
    );
    assert.notEqual(i, -1, `no rule serves ${series}`);
    return renderCustomQuery(config.rules[i], converters[i], {
      series,
      resource: TEST_MAPPER.resourceFor(resource),
      namespace,
      selector: parseSelector(selector),
      names,
    });
  }

  const cases: Array<[string, () => string, string]> = [
    [
      "container metrics gauge / multiple resource names",
      () => query("container_some_usage", "some_usage", POD, "somens", ["somepod1", "somepod2"]),
      'sum(container_some_usage{namespace="somens",pod=~"somepod1|somepod2",container!="POD"}) by (pod)',
    ],
    [
      "container metrics counter",
      () =>
        query("container_some_count_total", "some_count", POD, "somens", ["somepod1", "somepod2"]),
      'sum(rate(container_some_count_total{namespace="somens",pod=~"somepod1|somepod2",container!="POD"}[1m])) by (pod)',
    ],
    [
      "container metrics seconds counter",
      () =>
        query("container_some_time_seconds_total", "some_time", POD, "somens", [
          "somepod1",
          "somepod2",
        ]),
      'sum(rate(container_some_time_seconds_total{namespace="somens",pod=~"somepod1|somepod2",container!="POD"}[1m])) by (pod)',
    ],
    [
      "namespaced metrics counter / multidimensional (service)",
      () => query("ingress_hits_total", "ingress_hits", SERVICE, "somens", ["somesvc"]),
      'sum(rate(ingress_hits_total{kube_namespace="somens",kube_service="somesvc"}[1m])) by (kube_service)',
    ],
    [
      "namespaced metrics counter / selection using labels",
      () =>
        query(
          "ingress_hits_total",
          "ingress_hits",
          SERVICE,
          "somens",
          ["somesvc"],
          "param1=value1",
        ),
      'sum(rate(ingress_hits_total{param1="value1",kube_namespace="somens",kube_service="somesvc"}[1m])) by (kube_service)',
    ],
    [
      "namespaced metrics counter / multidimensional (ingress)",
      () =>
        query(
          "ingress_hits_total",
          "ingress_hits",
          { group: "networking.k8s.io", resource: "ingress" },
          "somens",
          ["someingress"],
        ),
      'sum(rate(ingress_hits_total{kube_namespace="somens",kube_ingress="someingress"}[1m])) by (kube_ingress)',
    ],
    [
      "namespaced metrics counter / multidimensional (pod)",
      () => query("ingress_hits_total", "ingress_hits", POD, "somens", ["somepod"]),
      'sum(rate(ingress_hits_total{kube_namespace="somens",kube_pod="somepod"}[1m])) by (kube_pod)',
    ],
    [
      "namespaced metrics gauge",
      () => query("service_proxy_packets", "service_proxy_packets", SERVICE, "somens", ["somesvc"]),
      'sum(service_proxy_packets{kube_namespace="somens",kube_service="somesvc"}) by (kube_service)',
    ],
    [
      "namespaced metrics seconds counter",
      () =>
        query(
          "work_queue_wait_seconds_total",
          "work_queue_wait",
          { group: "apps", resource: "deployment" },
          "somens",
          ["somedep"],
        ),
      'sum(rate(work_queue_wait_seconds_total{kube_namespace="somens",kube_deployment="somedep"}[1m])) by (kube_deployment)',
    ],
    [
      "root scoped metrics gauge",
      () => query("node_gigawatts", "node_gigawatts", NODE, "", ["somenode"]),
      'sum(node_gigawatts{kube_node="somenode"}) by (kube_node)',
    ],
    [
      "root scoped metrics counter",
      () =>
        query(
          "volume_claims_total",
          "volume_claims",
          {
            group: "",
            resource: "persistentvolume",
          },
          "",
          ["somepv"],
        ),
      'sum(rate(volume_claims_total{kube_persistentvolume="somepv"}[1m])) by (kube_persistentvolume)',
    ],
    [
      "root scoped metrics seconds counter",
      () => query("node_fan_seconds_total", "node_fan", NODE, "", ["somenode"]),
      'sum(rate(node_fan_seconds_total{kube_node="somenode"}[1m])) by (kube_node)',
    ],
  ];
  for (const [title, build, want] of cases) {
    it(`builds the query for ${title}`, () => assert.equal(build(), want));
  }
});

const POD = { group: "", resource: "pod" };
const SERVICE = { group: "", resource: "service" };
const NODE = { group: "", resource: "node" };
