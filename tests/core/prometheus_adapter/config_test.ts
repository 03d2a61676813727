/**
 * Reading prometheus-adapter's config file: cmd/config-gen's default config, defaults
 * (pkg/naming/metric_namer.go's `as`), errors naming rule and field, RE2 syntax, naming
 * (upstream regex_matcher_test.go's three cases) and resource labels.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { load } from "js-yaml";
import {
  compileGoRegexp,
  expandGoTemplate,
  keepsSeries,
  metricNameForSeries,
  parsePrometheusAdapterConfig,
  PrometheusAdapterConfigError,
  ResourceConverter,
} from "../../../src/core/prometheus_adapter/mod.ts";
import { DEFAULT_CONFIG, TEST_MAPPER } from "./fixtures.ts";

function problems(obj: unknown): readonly string[] {
  try {
    parsePrometheusAdapterConfig(obj);
  } catch (err) {
    assert.ok(err instanceof PrometheusAdapterConfigError);
    return err.problems;
  }
  assert.fail("the config was accepted");
}

describe("parsePrometheusAdapterConfig", () => {
  it("reads cmd/config-gen's default config with its defaults", () => {
    const config = parsePrometheusAdapterConfig(load(DEFAULT_CONFIG));
    assert.equal(config.rules.length, 6);
    assert.equal(config.externalRules.length, 0);
    assert.deepEqual(config.rules.map((r) => r.nameAs), ["$1", "$1", "$1", "$0", "$1", "$1"]);
    assert.deepEqual(config.rules.map((r) => r.resources.template), [
      "",
      "",
      "",
      "<<.Resource>>",
      "<<.Resource>>",
      "<<.Resource>>",
    ]);
    assert.equal(
      config.rules[1].metricsQuery,
      'sum(rate(<<.Series>>{<<.LabelMatchers>>,container!="POD"}[5m])) by (<<.GroupBy>>)',
    );
    assert.equal(config.resourceRules?.windowSeconds, 300);
    assert.equal(config.resourceRules?.cpu.containerLabel, "container");
    assert.deepEqual(config.resourceRules?.memory.resources.overrides, [
      ["instance", { group: "", resource: "node" }],
      ["namespace", { group: "", resource: "namespace" }],
      ["pod", { group: "", resource: "pod" }],
    ]);
  });

  it("reads an empty document as an empty config", () => {
    assert.deepEqual(parsePrometheusAdapterConfig(null), {
      rules: [],
      externalRules: [],
      resourceRules: null,
    });
  });

  it("defaults namespaced to true and reads scalars as strings as yaml.v2 does", () => {
    const config = parsePrometheusAdapterConfig({
      externalRules: [{ seriesQuery: 5, metricsQuery: "q", resources: { namespaced: false } }, {
        metricsQuery: "q",
      }],
    });
    assert.equal(config.externalRules[0].seriesQuery, "5");
    assert.equal(config.externalRules[0].resources.namespaced, false);
    assert.equal(config.externalRules[1].resources.namespaced, true);
  });

  it("names the rule and field of every problem", () => {
    assert.deepEqual(
      problems({
        rules: [
          { metricsQuery: "q" },
          { name: { matches: "(" }, metricsQuery: "q" },
          { seriesFilters: [{ is: "a", isNot: "b" }, {}], metricsQuery: "<<.Series" },
          { name: { matches: "(a)(b)" }, metricsQuery: "q" },
        ],
        externalRules: [{ resources: { template: "<<.Group>>" }, metricsQuery: "q" }],
      }),
      [
        "rules[1].name.matches: error parsing regexp: missing closing ): `(`",
        'rules[2].metricsQuery: invalid template "<<.Series": template: 1: unclosed action',
        'rules[2].seriesFilters[0]: cannot have both an "is" ("a") and "isNot" ("b") expression in a single filter',
        'rules[2].seriesFilters[1]: must have either an "is" or "isNot" expression in a filter',
        'rules[3].name.as: required when name.matches "(a)(b)" has 2 capture groups',
        "externalRules[0].resources.template: must include at least <<.Resource>> in the label template",
      ],
    );
  });

  it("refuses unknown fields as yaml.UnmarshalStrict does", () => {
    assert.deepEqual(problems({ rules: [{ metricQuery: "q" }] }), [
      'rules[0]: Unrecognized key: "metricQuery"',
    ]);
  });

  it("refuses functions that Go's text/template does not define", () => {
    assert.deepEqual(problems({ rules: [{ metricsQuery: '<<join .GroupBySlice ",">>' }] }), [
      'rules[0].metricsQuery: invalid template "<<join .GroupBySlice \\",\\">>": template: 1: function "join" not defined',
    ]);
  });
});

describe("Go regular expressions (RE2)", () => {
  const refused: Array<[string, string]> = [
    [
      "(?=x)",
      "error parsing regexp: invalid or unsupported Perl syntax: `(?=` (lookarounds are not in Go's RE2 syntax)",
    ],
    [
      "(?<!x)y",
      "error parsing regexp: invalid or unsupported Perl syntax: `(?<` (lookarounds are not in Go's RE2 syntax)",
    ],
    [
      "(a)\\1",
      "error parsing regexp: invalid escape sequence: `\\1` (backreferences are not in Go's RE2 syntax)",
    ],
    ["a*+", "error parsing regexp: invalid nested repetition operator: `*+`"],
    ["a{1001}", "error parsing regexp: invalid repeat count: `{1001}`"],
    ["*a", "error parsing regexp: missing argument to repetition operator: `*`"],
    ["[a", "error parsing regexp: missing closing ]: `[a`"],
    ["a)", "error parsing regexp: unexpected ): `a)`"],
    ["\\q", "error parsing regexp: invalid escape sequence: `\\q`"],
  ];
  for (const [pattern, message] of refused) {
    it(`refuses ${pattern} as RE2 does`, () => {
      assert.throws(() => compileGoRegexp(pattern), { message });
    });
  }

  const matching: Array<[string, string, boolean]> = [
    ["^container_(.*)$", "container_x", true],
    ["\\Aa.c\\z", "a\nc", false], // . does not match a newline
    ["(?s)^a.c$", "a\nc", true],
    ["(?m)^b$", "a\nb\nc", true],
    ["^b$", "a\nb", false],
    ["[[:upper:]]+_\\d", "AB_1", true],
    ["\\s", "\u00a0", false], // \s is ASCII only in Go
    ["\\Qa.b\\E", "axb", false],
    ["x{,2}", "x{,2}", true], // not a repeat in RE2: literal text
    ["(?i)http", "HTTP_requests", true],
    ["(?U)a+", "aaa", true],
  ];
  for (const [pattern, input, want] of matching) {
    it(`${pattern} ${want ? "matches" : "does not match"} ${JSON.stringify(input)}`, () => {
      assert.equal(compileGoRegexp(pattern).regexp.test(input), want);
    });
  }

  it("expands $1, ${1}, $name, ${name} and $$ as Go's ExpandString does", () => {
    const re = compileGoRegexp("^(?P<base>.*)_(?P<unit>[a-z]+)$");
    assert.equal(
      expandGoTemplate(re, "${unit}_of_$base $1 $$ $9 $unitx ${x", "a_b_sec"),
      "sec_of_a_b a_b $   ${x",
    );
    assert.equal(expandGoTemplate(re, "$1", "NOPE"), null);
  });
});

describe("naming", () => {
  const config = parsePrometheusAdapterConfig({
    rules: [
      { seriesFilters: [{ is: "my_.*" }], metricsQuery: "q" },
      { seriesFilters: [{ isNot: "my_.*" }], metricsQuery: "q" },
      { name: { matches: "^(.*)_total$", as: "${1}_per_second" }, metricsQuery: "q" },
    ],
  });

  it("keeps a series by an is filter (upstream TestReMatcherIs)", () => {
    assert.equal(keepsSeries(config.rules[0], "my_label"), true);
    assert.equal(keepsSeries(config.rules[0], "your_label"), false);
  });

  it("drops a series by an isNot filter (upstream TestReMatcherIsNot)", () => {
    assert.equal(keepsSeries(config.rules[1], "my_label"), false);
    assert.equal(keepsSeries(config.rules[1], "your_label"), true);
  });

  it("adds name.matches as a filter and names by name.as", () => {
    assert.equal(keepsSeries(config.rules[2], "http_requests"), false);
    assert.equal(
      metricNameForSeries(config.rules[2], "http_requests_total"),
      "http_requests_per_second",
    );
    assert.throws(() => metricNameForSeries(config.rules[2], "up"), {
      message: 'series name "up" did not match expected pattern "^(.*)_total$"',
    });
  });
});

describe("ResourceConverter", () => {
  const config = parsePrometheusAdapterConfig({
    rules: [
      {
        resources: {
          template: "kube_<<.Group>>_<<.Resource>>",
          overrides: {
            ns: { resource: "namespace" },
            microservice: { group: "apps", resource: "deployment" },
          },
        },
        metricsQuery: "q",
      },
      { resources: { overrides: { pod: { resource: "widget" } } }, metricsQuery: "q" },
    ],
  });
  const converter = new ResourceConverter(config.rules[0].resources, TEST_MAPPER, "rules[0]");

  it("names a resource's label by its override, else by the template", () => {
    assert.equal(converter.labelForResource({ group: "", resource: "namespaces" }), "ns");
    assert.equal(
      converter.labelForResource({ group: "apps", resource: "deployments" }),
      "microservice",
    );
    assert.equal(
      converter.labelForResource({ group: "networking.k8s.io", resource: "ingresses" }),
      "kube_networking_k8s_io_ingress",
    );
  });

  it("reads labels back into resources", () => {
    assert.deepEqual(
      converter.resourcesForSeries(["ns", "kube_apps_statefulset", "kube_x_widget"]),
      {
        resources: [{ group: "", resource: "namespaces" }, {
          group: "apps",
          resource: "statefulsets",
        }],
        namespaced: true,
      },
    );
    assert.deepEqual(converter.resourcesForSeries(["ns"]), {
      resources: [{ group: "", resource: "namespaces" }],
      namespaced: false,
    });
  });

  it("refuses an override the cluster does not know, naming the rule and label", () => {
    assert.throws(
      () => new ResourceConverter(config.rules[1].resources, TEST_MAPPER, "rules[1]"),
      {
        message:
          "rules[1].resources.overrides.pod: unable to normalize group-resource widget: no matches for , Resource=widget",
      },
    );
  });
});
