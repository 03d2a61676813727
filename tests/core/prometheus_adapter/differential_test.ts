/**
 * src/core/prometheus_adapter against prometheus-adapter v0.12.0 itself (its pkg/config and
 * pkg/naming, built from its Go module in tests/core/prometheus_adapter/reference): generated
 * one-rule config files and reads, the same answers: whether the config loads, whether a
 * series is kept, its API name, its resources and namespacing, and the rendered query or that
 * it fails. Seeded: PA_DIFF_SEED=<n> replays a run, PA_DIFF_RUNS=<n> sets its size.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import process from "node:process";
import fc from "fast-check";
import { dump, load } from "js-yaml";
import { parseSelector } from "../../../src/core/kubernetes/label_selector.ts";
import {
  keepsSeries,
  metricNameForSeries,
  parsePrometheusAdapterConfig,
  renderCustomQuery,
  renderExternalQuery,
  ResourceConverter,
} from "../../../src/core/prometheus_adapter/mod.ts";
import { TEST_MAPPER } from "./fixtures.ts";
import { ensurePrometheusAdapterReference } from "./reference_tool.ts";

interface Case {
  config: string;
  external: boolean;
  rule: number;
  series: string;
  seriesLabels: string[];
  resource: { group: string; resource: string };
  namespace: string;
  selector: string;
  names: string[];
}

/** What both sides answer; errors compared by presence only (the wording differs). */
interface Answer {
  configError?: string;
  kept: boolean;
  name: string;
  nameError?: string;
  resources: Array<{ group: string; resource: string }>;
  namespaced: boolean;
  query: string;
  queryError?: string;
}

/** Cases per run of the reference: Deno's spawnSync stalls on a few megabytes of input. */
const BATCH = 250;

function reference(cases: readonly Case[]): Answer[] {
  const binary = ensurePrometheusAdapterReference();
  const answers: Answer[] = [];
  for (let i = 0; i < cases.length; i += BATCH) {
    const r = spawnSync(binary, [], {
      input: cases.slice(i, i + BATCH).map((c) => JSON.stringify(c)).join("\n") + "\n",
      maxBuffer: 64 << 20,
    });
    if (r.status !== 0) throw new Error(`reference exited with ${r.status}: ${r.stderr}`);
    answers.push(...r.stdout.toString().trim().split("\n").map((l) => JSON.parse(l) as Answer));
  }
  return answers;
}

function ours(c: Case): Answer {
  const answer: Answer = { kept: false, name: "", resources: [], namespaced: false, query: "" };
  let rule;
  let converter;
  try {
    const config = parsePrometheusAdapterConfig(load(c.config));
    rule = (c.external ? config.externalRules : config.rules)[c.rule];
    converter = new ResourceConverter(rule.resources, TEST_MAPPER, rule.path);
  } catch (err) {
    return { ...answer, configError: (err as Error).message };
  }
  answer.kept = keepsSeries(rule, c.series);
  try {
    answer.name = metricNameForSeries(rule, c.series);
  } catch (err) {
    answer.nameError = (err as Error).message;
  }
  const { resources, namespaced } = converter.resourcesForSeries(c.seriesLabels);
  answer.resources = resources.sort((a, b) =>
    a.group < b.group || (a.group === b.group && a.resource < b.resource) ? -1 : 1
  );
  answer.namespaced = namespaced;
  try {
    const selector = parseSelector(c.selector);
    answer.query = c.external
      ? renderExternalQuery(rule, converter, { series: c.series, namespace: c.namespace, selector })
      : renderCustomQuery(rule, converter, {
        series: c.series,
        resource: c.resource,
        namespace: c.namespace,
        selector,
        names: c.names,
      });
  } catch (err) {
    answer.queryError = (err as Error).message;
  }
  return answer;
}

/** The answer with errors reduced to their presence. */
function comparable(a: Answer): unknown {
  if (a.configError !== undefined) return { configError: true };
  return {
    kept: a.kept,
    name: a.nameError === undefined ? a.name : { error: true },
    resources: a.resources,
    namespaced: a.namespaced,
    query: a.queryError === undefined ? a.query : { error: true },
  };
}

const FILTER = fc.constantFrom(
  { is: "^container_.*" },
  { isNot: ".*_total$" },
  { isNot: "^container_.*_seconds_total$" },
  { is: "(?i)^HTTP_" },
  { is: "^[[:alpha:]_]+$" },
  { is: "_\\d+_" },
  { is: "a{2,}" },
);

/** Mostly `good`, sometimes `bad`: most generated configs must load. */
function mostly<G, B>(good: fc.Arbitrary<G>, bad: fc.Arbitrary<B>): fc.Arbitrary<G | B> {
  return fc.oneof({ weight: 12, arbitrary: good }, { weight: 1, arbitrary: bad });
}

const BAD_FILTER = fc.constantFrom(
  { is: "(?=x)" }, // a lookahead: RE2 refuses it
  { isNot: "(a)\\1" }, // a backreference
  { is: "x**" },
  { is: "(" },
  { is: "a", isNot: "b" },
  {},
);

const NAME = fc.constantFrom(
  undefined,
  { matches: "^(.*)_total$" },
  { matches: "^(.*)_total$", as: "${1}_per_second" },
  { matches: "^container_(.*)_seconds_total$" },
  { matches: "^(?P<base>.*)_(?P<unit>[a-z]+)$", as: "$unit_of_$base" },
  { matches: "^(?P<base>.*)_(?P<unit>[a-z]+)$", as: "${unit}_of_${base}" },
  { matches: "^(.*)_(.*)$", as: "$2-$1-$3-$$-$" },
  { matches: "total" },
  { matches: "(?i)Requests" },
  { matches: "^(a|b)?.*$", as: "[$1]" },
  { matches: "(?<x>.)", as: "$x$x" },
  { as: "fixed_name" },
);
const BAD_NAME = fc.constantFrom(
  { matches: "[z-a]" },
  { matches: "^(?P<base>.*)_(?P<unit>[a-z]+)$" }, // two groups and no as
);

const OVERRIDES = fc.constantFrom(
  undefined,
  { namespace: { resource: "namespace" }, pod: { resource: "pod" } },
  { namespace: { resource: "namespaces" }, svc: { resource: "service" } },
  { ns: { resource: "namespace" }, deployment: { group: "apps", resource: "deployment" } },
  { brand: { group: "cheese.io", resource: "brand" }, namespace: { resource: "namespace" } },
  { instance: { resource: "node" } },
);
const BAD_OVERRIDES = fc.constantFrom({ pod: { resource: "widget" } }); // unknown to the cluster

const TEMPLATE = fc.constantFrom(
  undefined,
  "kube_<<.Resource>>",
  "<<.Resource>>",
  "kube_<<.Group>>_<<.Resource>>",
  "<<.Group>>.<<.Resource>>",
  "x_<<.Resource>>_<<.Group>>",
  "<<if .Group>>g_<<.Group>>_<<end>><<.Resource>>",
  '<<printf "k_%s" .Resource>>',
);
const BAD_TEMPLATE = fc.constantFrom("<<.Group>>", "<<.Bogus>>"); // no .Resource, no such field

const QUERY = fc.constantFrom(
  "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)",
  'sum(rate(<<.Series>>{<<.LabelMatchers>>,container!="POD"}[2m])) by (<<.GroupBy>>)',
  "<<.Series>> <<.GroupBySlice>> <<.LabelValuesByName>>",
  '<<index .LabelValuesByName "namespace">>|<<index .LabelValuesByName "pod">>',
  "<<.LabelValuesByName.namespace>>/<<.LabelValuesByName.kube_pod>>",
  "<<range $i, $l := .GroupBySlice>><<if $i>>,<<end>>max(<<$l>>)<<end>>",
  "<<range .GroupBySlice>>[<<.>>]<<else>>none<<end>>",
  '<<- /* a comment */ ->>  <<.Series>>  <<- "x" >>',
  "<<with .GroupBy>>by (<<.>>)<<else>>no group<<end>>",
  "<<len .GroupBySlice>> <<len .Series>> <<len .LabelValuesByName>>",
  '<<printf "%s{%s}" .Series .LabelMatchers>> <<printf "%q" .GroupBy>>',
  '<<if eq .GroupBy "pod">>pods<<else if eq .GroupBy "">>none<<else>><<.GroupBy>><<end>>',
  '<<$s := .Series>><<$s>>:<<print .Series 1 2 "a">>',
  "<<if and .GroupBy (not .LabelMatchers)>>a<<else>>b<<end>>",
  '<<or .GroupBy "external">>',
  "<<index .GroupBySlice 0>>",
  "<<.Nope>>",
  "<<.GroupBy>>",
  "",
);
const BAD_QUERY = fc.constantFrom(
  '<<join .GroupBySlice ",">>', // Go has no join
  "<<.Series", // unclosed
  "<<end>>",
);

const RULE = fc.record({
  seriesQuery: fc.constant('{__name__=~".+"}'),
  seriesFilters: fc.array(mostly(FILTER, BAD_FILTER), { maxLength: 2 }),
  resources: fc.record({
    template: mostly(TEMPLATE, BAD_TEMPLATE),
    overrides: mostly(OVERRIDES, BAD_OVERRIDES),
    namespaced: fc.constantFrom(undefined, true, false),
  }),
  name: mostly(NAME, BAD_NAME),
  metricsQuery: mostly(QUERY, BAD_QUERY),
});

const LABELS = fc.uniqueArray(
  fc.constantFrom(
    "namespace",
    "pod",
    "svc",
    "container",
    "instance",
    "kube_pod",
    "kube_namespace",
    "kube_node",
    "kube_apps_deployment",
    "kube__service",
    "kube_deployment",
    "kube_widget",
    "apps.deployment",
    "brand",
    "x_pod_",
    "k_pod",
  ),
  { maxLength: 5 },
);

const SERIES = fc.constantFrom(
  "http_requests_total",
  "container_cpu_usage_seconds_total",
  "container_memory_working_set_bytes",
  "HTTP_requests",
  "queue_depth",
  "a_1_b",
  "aaa_total",
  "node_fan_seconds_total",
  "total",
  "ünïcode_total",
);

const SELECTOR = fc.constantFrom(
  "",
  "a=b",
  "a==b,c!=d",
  "tier in (web)",
  "tier in (web,db)",
  "tier notin (web)",
  "tier notin (web,db),env",
  "!canary",
  "canary,env=prod",
  "x>5",
  "y<3",
  "name=my-queue,topic in (a.b,c_d)",
);

const CASE = fc.record({
  rule: RULE,
  external: fc.boolean(),
  series: SERIES,
  seriesLabels: LABELS,
  resource: fc.constantFrom(
    { group: "", resource: "pods" },
    { group: "", resource: "pod" },
    { group: "", resource: "services" },
    { group: "", resource: "nodes" },
    { group: "apps", resource: "deployments" },
    { group: "networking.k8s.io", resource: "ingresses" },
    { group: "cheese.io", resource: "brands" },
    { group: "", resource: "widgets" },
  ),
  namespace: fc.constantFrom("", "default", "team-a"),
  selector: SELECTOR,
  names: fc.array(fc.constantFrom("web-1", "web-2", "db", "a.b"), { minLength: 1, maxLength: 3 }),
}).map((g): Case => {
  const rule = JSON.parse(JSON.stringify(g.rule));
  const config = g.external ? { externalRules: [rule] } : { rules: [rule] };
  return {
    config: dump(config, { lineWidth: -1 }),
    external: g.external,
    rule: 0,
    series: g.series,
    seriesLabels: g.seriesLabels,
    resource: g.resource,
    namespace: g.namespace,
    selector: g.selector,
    names: g.names,
  };
});

const RUNS = process.env.PA_DIFF_RUNS === undefined ? 3000 : Number(process.env.PA_DIFF_RUNS);
const SEED = process.env.PA_DIFF_SEED === undefined ? 49_001 : Number(process.env.PA_DIFF_SEED);

describe("prometheus-adapter differential (against its Go module)", () => {
  it(`answers ${RUNS} generated configs and reads as prometheus-adapter v0.12.0 does (seed ${SEED})`, () => {
    const cases = fc.sample(CASE, { numRuns: RUNS, seed: SEED });
    const want = reference(cases);
    const mismatches: string[] = [];
    let loaded = 0;
    let rendered = 0;
    cases.forEach((c, i) => {
      const got = ours(c);
      if (want[i].configError === undefined) loaded++;
      if (want[i].configError === undefined && want[i].queryError === undefined) rendered++;
      const a = comparable(got);
      const b = comparable(want[i]);
      try {
        assert.deepEqual(a, b);
      } catch {
        if (mismatches.length < 5) {
          mismatches.push(
            `case ${i}: ${JSON.stringify(c)}\n  ours:     ${JSON.stringify(got)}\n  upstream: ${
              JSON.stringify(want[i])
            }`,
          );
        } else mismatches.push("");
      }
    });
    assert.equal(
      mismatches.length,
      0,
      `${mismatches.length} of ${RUNS} differ (PA_DIFF_SEED=${SEED}):\n${
        mismatches.filter((m) => m).join("\n")
      }`,
    );
    // the generator must exercise both paths, not only errors
    assert.ok(loaded > RUNS / 3, `only ${loaded} configs loaded`);
    assert.ok(rendered > RUNS / 5, `only ${rendered} queries rendered`);
  });
});
