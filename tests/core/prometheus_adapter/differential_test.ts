/**
 * src/core/prometheus_adapter against prometheus-adapter v0.12.0 itself (its pkg/config and
 * pkg/naming, built from its Go module in tests/core/prometheus_adapter/reference): generated
 * one-rule config files and reads, the same answers: whether the config loads, whether a
 * series is kept, its API name, its resources and namespacing, and the rendered query or that
 * it fails; then resourceRules reads (the queries rendered for PodMetrics and NodeMetrics reads,
 * and the usage made of generated answers, through its resource provider over a fake
 * Prometheus) and discovery (the metrics its custom and external registries serve for
 * generated series, and the query each generated read gets). Seeded: PA_DIFF_SEED=<n> replays
 * a run, PA_DIFF_RUNS=<n> sets its size (the resource and discovery parts run a third each).
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import process from "node:process";
import fc from "fast-check";
import { dump, load } from "js-yaml";
import { parseSelector } from "../../../src/core/kubernetes/label_selector.ts";
import {
  type CustomMetricInfo,
  discoverCustomMetrics,
  discoverExternalMetrics,
  keepsSeries,
  metricNameForSeries,
  metricNamers,
  nodeMetricsFromVectors,
  type NodeUsage,
  parsePrometheusAdapterConfig,
  podMetricsFromVectors,
  podReadsByNamespace,
  type PodUsage,
  renderCustomQuery,
  renderExternalQuery,
  renderNodeMetricsQueries,
  renderPodMetricsQueries,
  ResourceConverter,
  resourceMetricsReader,
  type ResourceSample,
  type ResourceVectors,
  type SeriesLabels,
  staticResourceMapper,
} from "../../../src/core/prometheus_adapter/mod.ts";
import {
  kindsFromResourceLists,
  legacyGroups,
} from "../../../src/core/prometheus_adapter/rest_mapper.ts";
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

/**
 * Input per run of the reference: at most BATCH cases and BATCH_BYTES bytes, so that the input
 * fits in a pipe's buffer (Deno's spawnSync stalls when it does not); the reference holds its
 * answers until its input ends.
 */
const BATCH = 250;
const BATCH_BYTES = 48 << 10;

function reference(cases: readonly object[]): Answer[] {
  const binary = ensurePrometheusAdapterReference();
  const answers: Answer[] = [];
  const lines = cases.map((c) => JSON.stringify(c) + "\n");
  for (let i = 0; i < lines.length;) {
    let input = lines[i++];
    for (let n = 1; n < BATCH && i < lines.length; n++, i++) {
      if (input.length + lines[i].length > BATCH_BYTES) break;
      input += lines[i];
    }
    const r = spawnSync(binary, [], { input, maxBuffer: 64 << 20 });
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

// ---------------------------------------------------------------------------------------------
// resourceRules reads: the rendered queries, then PodMetrics and NodeMetrics from the answers

/** A generated answer to one query, values written as Prometheus writes them. */
interface GenAnswer {
  error?: boolean;
  scalar?: boolean;
  vector?: Array<{ labels: Record<string, string>; value: string; timestamp: number }>;
}

interface ResourceCase {
  op: "resource";
  config: string;
  pods: Array<{ namespace: string; name: string }>;
  nodes: string[];
  cpu: Record<string, GenAnswer>;
  memory: Record<string, GenAnswer>;
}

interface ResourceAnswer {
  configError?: string;
  podQueries: Array<{ namespace: string; cpu?: string; memory?: string; error: boolean }>;
  nodeQueries: { namespace: string; cpu?: string; memory?: string; error: boolean };
  pods: PodUsage[];
  nodes: NodeUsage[];
}

function promValue(s: string): number {
  return s === "+Inf" ? Infinity : s === "-Inf" ? -Infinity : Number(s);
}

function oursResource(c: ResourceCase): ResourceAnswer {
  const answer: ResourceAnswer = {
    podQueries: [],
    nodeQueries: { namespace: "", error: false },
    pods: [],
    nodes: [],
  };
  let reader;
  try {
    const config = parsePrometheusAdapterConfig(load(c.config));
    if (config.resourceRules === null) throw new Error("no resourceRules");
    reader = resourceMetricsReader(config.resourceRules, TEST_MAPPER);
  } catch (err) {
    return { ...answer, configError: (err as Error).message };
  }
  const vectorOf = (a: GenAnswer | undefined): ResourceSample[] | null =>
    a?.error || a?.scalar
      ? null
      : (a?.vector ?? []).map((s) => ({ ...s, value: promValue(s.value) }));
  const answered = (namespace: string): ResourceVectors | null => {
    const cpu = vectorOf(c.cpu[namespace]);
    const memory = vectorOf(c.memory[namespace]);
    return cpu === null || memory === null ? null : { cpu, memory };
  };
  const vectors = new Map<string, ResourceVectors>();
  for (const read of podReadsByNamespace(c.pods)) {
    const r = renderPodMetricsQueries(reader, read.namespace, read.names);
    if ("error" in r) answer.podQueries.push({ namespace: read.namespace, error: true });
    else {
      answer.podQueries.push({ namespace: read.namespace, ...r.queries, error: false });
      const v = answered(read.namespace);
      if (v !== null) vectors.set(read.namespace, v);
    }
  }
  answer.pods = podMetricsFromVectors(reader, c.pods, vectors);
  for (const p of answer.pods) p.containers.sort((a, b) => a.name < b.name ? -1 : 1);
  if (c.nodes.length > 0) {
    const r = renderNodeMetricsQueries(reader, c.nodes);
    if ("error" in r) answer.nodeQueries = { namespace: "", error: true };
    else {
      answer.nodeQueries = { namespace: "", ...r.queries, error: false };
      answer.nodes = nodeMetricsFromVectors(reader, c.nodes, answered(""));
    }
  }
  return answer;
}

function comparableResource(a: ResourceAnswer): unknown {
  if (a.configError !== undefined) return { configError: true };
  return { ...a };
}

const RESOURCE_OVERRIDES = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constant({
      namespace: { resource: "namespace" },
      pod: { resource: "pod" },
      instance: { resource: "node" },
    }),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      undefined,
      { kube_namespace: { resource: "namespaces" }, kube_pod: { resource: "pods" } },
      { instance: { resource: "node" } },
    ),
  },
);

function resourceQuery(kind: "cpu" | "mem", node: boolean): fc.Arbitrary<string> {
  const k = node ? `${kind}_node` : kind;
  return mostly(
    fc.constantFrom(
      `sum(rate(${k}_total{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)`,
      `${k}:<<.LabelMatchers>>:<<.GroupBySlice>>:[<<.Series>>]`,
      `${k} <<.LabelValuesByName>> <<.LabelMatchers>>`,
      `<<range .GroupBySlice>>${k}(<<.>>)<<end>>{<<.LabelMatchers>>}`,
      `${k}{<<.LabelMatchers>>} by (<<index .GroupBySlice 1>>)`, // nodes: index out of range
    ),
    fc.constantFrom(`${k}<<.Nope>>`, "<<.Series>>", `${k}<<`),
  );
}

function resourceRule(kind: "cpu" | "mem") {
  return fc.record({
    containerQuery: resourceQuery(kind, false),
    nodeQuery: resourceQuery(kind, true),
    resources: fc.record({
      template: fc.constantFrom(undefined, "kube_<<.Resource>>", "<<.Resource>>", "<<.Resource>>"),
      overrides: mostly(RESOURCE_OVERRIDES, BAD_OVERRIDES),
    }),
    containerLabel: fc.constantFrom(undefined, "container", "kube_container"),
  });
}

/** A label of a sample: absent now and then, else a value the reads ask for (or not). */
function sampleLabel(values: readonly string[]): fc.Arbitrary<string | undefined> {
  return fc.option(fc.constantFrom(...values), { freq: 8, nil: undefined });
}

const SAMPLE = fc.record({
  pod: sampleLabel(["p1", "p2", "p3", ""]),
  node: sampleLabel(["n1", "n2", "n3"]),
  container: sampleLabel(["c1", "c2", ""]),
  value: fc.constantFrom(
    "0.5",
    "1100",
    "-3",
    "NaN",
    "+Inf",
    "-Inf",
    "1e16",
    "2048",
    "1536.5",
    "0.0015",
    "1023.9999",
    "0",
    "1048576",
    "123456.789",
  ),
  timestamp: fc.integer({ min: 0, max: 1000 }),
}).map((g) => {
  // each object under the label names the generated configs may give it
  const labels: Record<string, string> = {};
  const set = (names: string[], v: string | undefined) => {
    if (v !== undefined) { for (const n of names) labels[n] = v; }
  };
  set(["pod", "kube_pod"], g.pod);
  set(["instance", "kube_node", "node"], g.node);
  set(["container", "kube_container"], g.container);
  return { labels, value: g.value, timestamp: g.timestamp };
});

const ANSWER: fc.Arbitrary<GenAnswer> = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ error: true }) },
  { weight: 1, arbitrary: fc.constant({ scalar: true }) },
  { weight: 20, arbitrary: fc.record({ vector: fc.array(SAMPLE, { maxLength: 8 }) }) },
);

const RESOURCE_CASE: fc.Arbitrary<ResourceCase> = fc.record({
  cpu: resourceRule("cpu"),
  memory: resourceRule("mem"),
  window: fc.constantFrom(undefined, "1m", "90s", "1h30m"),
  pods: fc.array(
    fc.record({ namespace: fc.constantFrom("a", "b"), name: fc.constantFrom("p1", "p2", "p3") }),
    { maxLength: 5 },
  ),
  nodes: fc.array(fc.constantFrom("n1", "n2", "n3"), { maxLength: 3 }),
  cpuAnswers: fc.record({ a: ANSWER, b: ANSWER, "": ANSWER }),
  memoryAnswers: fc.record({ a: ANSWER, b: ANSWER, "": ANSWER }),
}).map((g): ResourceCase => ({
  op: "resource",
  config: dump(
    JSON.parse(JSON.stringify({
      resourceRules: { cpu: g.cpu, memory: g.memory, window: g.window },
    })),
    { lineWidth: -1 },
  ),
  pods: g.pods,
  nodes: g.nodes,
  cpu: g.cpuAnswers,
  memory: g.memoryAnswers,
}));

describe("prometheus-adapter differential: resourceRules reads", () => {
  const runs = Math.ceil(RUNS / 3);
  it(`reads ${runs} generated PodMetrics and NodeMetrics as prometheus-adapter v0.12.0 does (seed ${SEED})`, () => {
    const cases = fc.sample(RESOURCE_CASE, { numRuns: runs, seed: SEED });
    const want = reference(cases) as unknown as ResourceAnswer[];
    const mismatches: string[] = [];
    let pods = 0;
    let nodes = 0;
    cases.forEach((c, i) => {
      const got = oursResource(c);
      pods += want[i].pods?.length ?? 0;
      nodes += want[i].nodes?.length ?? 0;
      try {
        assert.deepEqual(comparableResource(got), comparableResource(want[i]));
      } catch {
        mismatches.push(
          `case ${i}: ${JSON.stringify(c)}\n  ours:     ${JSON.stringify(got)}\n  upstream: ${
            JSON.stringify(want[i])
          }`,
        );
      }
    });
    assert.equal(
      mismatches.length,
      0,
      `${mismatches.length} of ${runs} differ (PA_DIFF_SEED=${SEED}):\n${
        mismatches.slice(0, 3).join("\n")
      }`,
    );
    assert.ok(pods > runs / 8, `only ${pods} PodMetrics`);
    assert.ok(nodes > runs / 8, `only ${nodes} NodeMetrics`);
  });
});

// ---------------------------------------------------------------------------------------------
// discovery: the metrics served and the query each read gets

interface DiscoveryRead {
  group: string;
  resource: string;
  metric: string;
  namespaced: boolean;
  namespace: string;
  selector: string;
  names: string[];
}

interface DiscoveryCase {
  op: "discovery";
  config: string;
  external: boolean;
  series: Record<string, SeriesLabels[]>;
  reads: DiscoveryRead[];
}

interface DiscoveryAnswer {
  configError?: string;
  metrics: CustomMetricInfo[];
  reads: Array<{ found: boolean; query: string; error: boolean }>;
}

function discover(c: DiscoveryCase) {
  const config = parsePrometheusAdapterConfig(load(c.config));
  const namers = metricNamers(c.external ? config.externalRules : config.rules, TEST_MAPPER);
  const series = new Map(Object.entries(c.series));
  return c.external
    ? { external: discoverExternalMetrics(namers, series) }
    : { custom: discoverCustomMetrics(namers, series, TEST_MAPPER) };
}

function oursDiscovery(c: DiscoveryCase): DiscoveryAnswer {
  let found;
  try {
    found = discover(c);
  } catch (err) {
    return { configError: (err as Error).message, metrics: [], reads: [] };
  }
  const answer: DiscoveryAnswer = { metrics: [], reads: [] };
  for (const read of c.reads) {
    const selector = parseSelector(read.selector);
    const r = found.external
      ? found.external.queryFor(read.metric, { namespace: read.namespace, selector })
      : found.custom!.queryFor(read, read.metric, read.namespaced, { ...read, selector });
    if (r === undefined) answer.reads.push({ found: false, query: "", error: false });
    else if ("query" in r) answer.reads.push({ found: true, query: r.query, error: false });
    // upstream's custom registry answers a query it cannot build as not found
    else if (found.external) answer.reads.push({ found: true, query: "", error: true });
    else answer.reads.push({ found: false, query: "", error: false });
  }
  answer.metrics = found.external
    ? found.external.metrics.map((metric) => ({
      group: "",
      resource: "",
      namespaced: false,
      metric,
    }))
    : [...found.custom!.metrics];
  return answer;
}

function comparableDiscovery(a: DiscoveryAnswer): unknown {
  if (a.configError !== undefined) return { configError: true };
  const key = (m: CustomMetricInfo) =>
    JSON.stringify([m.group, m.resource, m.namespaced, m.metric]);
  return { metrics: a.metrics.map(key).sort(), reads: a.reads };
}

const DISCOVERY_LABELS = fc.uniqueArray(
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
    "kube_deployment",
    "kube_widget",
    "brand",
    "node",
    "service",
    "persistentvolume",
    "job",
  ),
  { maxLength: 4 },
);

const SERIES_LABELS: fc.Arbitrary<SeriesLabels> = fc.record({
  name: fc.option(SERIES, { freq: 8, nil: undefined }),
  labels: DISCOVERY_LABELS,
}).map((g) => {
  const out: Record<string, string> = {};
  if (g.name !== undefined) out.__name__ = g.name;
  for (const l of g.labels) out[l] = "x";
  return out;
});

const QUERIES = ["q1", '{__name__=~".+"}', '{job="x"}'];

const DISCOVERY_RULE = fc.record({
  seriesQuery: fc.constantFrom(...QUERIES),
  seriesFilters: fc.array(FILTER, { maxLength: 2 }),
  resources: fc.record({
    template: TEMPLATE,
    overrides: mostly(OVERRIDES, BAD_OVERRIDES),
    namespaced: fc.constantFrom(undefined, true, false),
  }),
  name: NAME,
  metricsQuery: QUERY,
});

const METRIC_NAMES = fc.constantFrom(
  "http_requests",
  "http_requests_total",
  "cpu_usage",
  "fixed_name",
  "queue_depth",
  "total",
  "",
);

const RESOURCES = fc.constantFrom(
  { group: "", resource: "pods" },
  { group: "", resource: "pod" },
  { group: "", resource: "services" },
  { group: "", resource: "nodes" },
  { group: "", resource: "namespaces" },
  { group: "apps", resource: "deployments" },
  { group: "", resource: "widgets" },
);

const READ = fc.record({
  resource: RESOURCES,
  metric: METRIC_NAMES,
  namespaced: fc.boolean(),
  namespace: fc.constantFrom("", "default"),
  selector: SELECTOR,
  names: fc.array(fc.constantFrom("web-1", "web-2", "db"), { maxLength: 3 }),
});

const DISCOVERY_CASE = fc.record({
  external: fc.boolean(),
  rules: fc.array(DISCOVERY_RULE, { minLength: 1, maxLength: 4 }),
  series: fc.tuple(...QUERIES.map(() => fc.array(SERIES_LABELS, { maxLength: 6 }))),
  reads: fc.array(READ, { maxLength: 4 }),
  /** Reads of what our discovery serves: which of them, and how they are asked for. */
  probes: fc.array(
    fc.record({
      pick: fc.nat(),
      singular: fc.boolean(),
      flip: fc.boolean(),
      namespace: fc.constantFrom("", "default"),
      selector: SELECTOR,
      names: fc.array(fc.constantFrom("web-1", "web-2", "db"), { minLength: 1, maxLength: 3 }),
    }),
    { minLength: 1, maxLength: 4 },
  ),
}).map((g): DiscoveryCase => {
  const rules = JSON.parse(JSON.stringify(g.rules));
  const c: DiscoveryCase = {
    op: "discovery",
    config: dump(g.external ? { externalRules: rules } : { rules }, { lineWidth: -1 }),
    external: g.external,
    series: Object.fromEntries(QUERIES.map((q, i) => [q, g.series[i]])),
    reads: g.reads.map((r) => ({ ...r.resource, ...r, resource: r.resource.resource })),
  };
  // add reads of metrics our side serves, so that most cases read something that exists
  let served: CustomMetricInfo[] = [];
  try {
    const found = discover(c);
    served = found.external
      ? found.external.metrics.map((metric) => ({
        group: "",
        resource: "pods",
        namespaced: true,
        metric,
      }))
      : [...found.custom!.metrics];
  } catch {
    // a config that fails: the reads above will do
  }
  if (served.length > 0) {
    for (const p of g.probes) {
      const m = served[p.pick % served.length];
      c.reads.push({
        group: m.group,
        resource: p.singular ? m.resource.replace(/s$/, "") : m.resource,
        metric: m.metric,
        namespaced: p.flip ? !m.namespaced : m.namespaced,
        namespace: p.namespace,
        selector: p.selector,
        names: p.names,
      });
    }
  }
  return c;
});

describe("prometheus-adapter differential: discovery", () => {
  const runs = Math.ceil(RUNS / 3);
  it(`discovers ${runs} generated rule sets and series as prometheus-adapter v0.12.0 does (seed ${SEED})`, () => {
    const cases = fc.sample(DISCOVERY_CASE, { numRuns: runs, seed: SEED });
    const want = reference(cases) as unknown as DiscoveryAnswer[];
    const mismatches: string[] = [];
    let metrics = 0;
    let queries = 0;
    cases.forEach((c, i) => {
      const got = oursDiscovery(c);
      metrics += want[i].metrics?.length ?? 0;
      queries += want[i].reads?.filter((r) => r.query !== "").length ?? 0;
      try {
        assert.deepEqual(comparableDiscovery(got), comparableDiscovery(want[i]));
      } catch {
        mismatches.push(
          `case ${i}: ${JSON.stringify(c)}\n  ours:     ${JSON.stringify(got)}\n  upstream: ${
            JSON.stringify(want[i])
          }`,
        );
      }
    });
    assert.equal(
      mismatches.length,
      0,
      `${mismatches.length} of ${runs} differ (PA_DIFF_SEED=${SEED}):\n${
        mismatches.slice(0, 3).join("\n")
      }`,
    );
    assert.ok(metrics > runs / 2, `only ${metrics} metrics discovered`);
    assert.ok(queries > runs / 4, `only ${queries} queries built`);
  });
});

/** A discovery group of the RESTMapper cases (the legacy documents' shape). */
interface RestGroup {
  name: string;
  versions: string[];
  preferred: string;
  resources: Record<
    string,
    { name: string; singularName: string; kind: string; namespaced: boolean }[]
  >;
}

interface RestCase {
  op: "restmapper";
  groups: RestGroup[];
  resourceFor: { group: string; resource: string }[];
  singular: string[];
}

interface RestAnswer {
  configError?: string;
  resourceFor: {
    error: boolean;
    group: string;
    resource: string;
    kindError: boolean;
    version: string;
    kind: string;
  }[];
  singular: { error: boolean; value: string }[];
}

// kinds whose names collide across groups (Pod, Node as metrics.k8s.io's), whose plural is not
// the guess (Endpoints, Policy), and whose singular is another's plural
const REST_KINDS = ["Pod", "Node", "Service", "Endpoints", "Policy", "Ingress", "Status", "Queue"];
const REST_GROUPS = ["", "apps", "metrics.k8s.io", "networking.k8s.io", "networking", "keda.sh"];
const REST_VERSIONS = ["v1", "v1beta1", "v2"];

const REST_RESOURCE = fc.record({
  kind: fc.constantFrom(...REST_KINDS),
  // the plural: the guess, a given one, or the singular itself
  plural: fc.constantFrom("guess", "given", "same"),
  singular: fc.constantFrom("", "lower", "other"),
  namespaced: fc.boolean(),
}).map((r) => {
  const lower = r.kind.toLowerCase();
  const guess = lower.endsWith("s")
    ? `${lower}es`
    : lower.endsWith("y")
    ? `${lower.slice(0, -1)}ies`
    : `${lower}s`;
  const name = r.plural === "guess" ? guess : r.plural === "given" ? `${lower}z` : lower;
  const singularName = r.singular === "" ? "" : r.singular === "lower" ? lower : `${lower}x`;
  return { name, singularName, kind: r.kind, namespaced: r.namespaced };
});

const REST_CASE: fc.Arbitrary<RestCase> = fc.record({
  groups: fc.uniqueArray(
    fc.record({
      name: fc.constantFrom(...REST_GROUPS),
      versions: fc.uniqueArray(fc.constantFrom(...REST_VERSIONS), { minLength: 1, maxLength: 2 }),
      preferredIndex: fc.nat(1),
      // a group version lists a name once
      resources: fc.array(
        fc.uniqueArray(REST_RESOURCE, { selector: (r) => r.name, maxLength: 4 }),
        {
          minLength: 2,
          maxLength: 2,
        },
      ),
    }),
    { selector: (g) => g.name, minLength: 1, maxLength: 5 },
  ),
  resourceFor: fc.array(
    fc.record({
      group: fc.constantFrom(...REST_GROUPS, "metrics", "networking.k8s", "nope"),
      resource: fc.constantFrom(
        ...REST_KINDS.flatMap((k) => [k.toLowerCase(), `${k.toLowerCase()}s`, k]),
        "endpoints",
        "policies",
        "statuses",
        "queues",
        "podz",
        "podlists",
        "lists",
        "list",
      ),
    }),
    { minLength: 1, maxLength: 6 },
  ),
  singular: fc.array(
    fc.constantFrom("pods", "pod", "nodes", "endpoints", "policies", "statuses", "podz", "nope"),
    { maxLength: 4 },
  ),
}).map((c) => ({
  op: "restmapper" as const,
  // the core group first, as discovery lists it
  groups: [...c.groups].sort((a, b) => (a.name === "" ? -1 : b.name === "" ? 1 : 0)).map((g) => {
    const versions = g.name === "" ? ["v1"] : g.versions;
    return {
      name: g.name,
      versions,
      preferred: versions[Math.min(g.preferredIndex, versions.length - 1)],
      resources: Object.fromEntries(versions.map((v, i) => [v, g.resources[i]])),
    };
  }),
  resourceFor: c.resourceFor,
  singular: c.singular,
}));

/** What our mapper answers for a RESTMapper case, through the legacy documents' reader. */
function oursRestMapper(c: RestCase): RestAnswer {
  const api = { versions: c.groups.find((g) => g.name === "")?.versions ?? [] };
  const apis = {
    groups: c.groups.filter((g) => g.name !== "").map((g) => ({
      name: g.name,
      versions: g.versions.map((v) => ({ groupVersion: `${g.name}/${v}`, version: v })),
      preferredVersion: { groupVersion: `${g.name}/${g.preferred}`, version: g.preferred },
    })),
  };
  const lists = new Map<string, unknown>();
  for (const g of c.groups) {
    for (const v of g.versions) {
      lists.set(g.name === "" ? v : `${g.name}/${v}`, { resources: g.resources[v] ?? [] });
    }
  }
  const mapper = staticResourceMapper(kindsFromResourceLists(legacyGroups(api, apis), lists));
  return {
    resourceFor: c.resourceFor.map((gr) => {
      let found;
      try {
        found = mapper.resourceFor(gr);
      } catch {
        return { error: true, group: "", resource: "", kindError: false, version: "", kind: "" };
      }
      const info = mapper.kindOf(found);
      return {
        error: false,
        ...found,
        kindError: info === null,
        version: info?.version ?? "",
        kind: info?.kind ?? "",
      };
    }),
    singular: c.singular.map((r) => {
      try {
        return { error: false, value: mapper.singular(r) };
      } catch {
        return { error: true, value: "" };
      }
    }),
  };
}

describe("prometheus-adapter differential: the cluster's RESTMapper", () => {
  const runs = Math.ceil(RUNS / 3);
  it(`resolves ${runs} generated discoveries as client-go's discovery RESTMapper does (seed ${SEED})`, () => {
    const cases = fc.sample(REST_CASE, { numRuns: runs, seed: SEED });
    const want = reference(cases) as unknown as RestAnswer[];
    const mismatches: string[] = [];
    let found = 0;
    cases.forEach((c, i) => {
      const got = oursRestMapper(c);
      found += want[i].resourceFor?.filter((r) => !r.error).length ?? 0;
      try {
        assert.equal(want[i].configError, undefined);
        assert.deepEqual(got, want[i]);
      } catch {
        mismatches.push(
          `case ${i}: ${JSON.stringify(c)}\n  ours:     ${JSON.stringify(got)}\n  upstream: ${
            JSON.stringify(want[i])
          }`,
        );
      }
    });
    assert.deepEqual(mismatches.slice(0, 3), [], `${mismatches.length} of ${runs} cases differ`);
    // the generator reaches resolved names, not only errors
    assert.ok(found > runs / 4, `only ${found} names resolved in ${runs} cases`);
  });
});
