/**
 * The prometheus collector and its client, against the REAL Prometheus server (started once
 * for this file, scraping a tiny exporter run by the test) and against small local servers for
 * the failure modes a real server does not produce on demand.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createPrometheusFactory,
  prometheusBackends,
  prometheusValue,
  scaleTargetReplicas,
} from "../../src/collectors/prometheus.ts";
import type { Collector } from "../../src/collectors/types.ts";
import { prometheusOptionsFromFlags } from "../../src/cli/prometheus_options.ts";
import type { FlagValues } from "../../src/cli/flags.ts";
import {
  parseQueryResponse,
  parseSampleValue,
  PrometheusClient,
  PrometheusQueryError,
  type QueryResult,
} from "../../src/collectors/prometheus_client.ts";
import { skipperRpsQuery } from "../../src/collectors/skipper.ts";
import { externalRpsQuery } from "../../src/collectors/external_rps.ts";
import type { Kind, KubeObject } from "../../src/cluster/types.ts";
import type { MetricPlan } from "../../src/core/types.ts";
import { type RealPrometheus, startPrometheus } from "../fakes/prometheus_server.ts";
import {
  context,
  externalPlan,
  type FakePrometheusApi,
  objectPlan,
  rejectsMatching,
  scalarBody,
  startFakePrometheusApi,
  startSilentServer,
  StaticCluster,
  throwsMatching,
  workload,
} from "./prometheus_support.ts";
import { startServer, type TestServer } from "./servers.ts";

const EXPOSITION = [
  "# TYPE test_gauge gauge",
  'test_gauge{instance_name="a",zone="z1"} 3',
  'test_gauge{instance_name="b",zone="z2"} 4.5',
  "# TYPE test_single gauge",
  "test_single 42",
  "# TYPE skipper_serve_host_duration_seconds_count counter",
  'skipper_serve_host_duration_seconds_count{host="example_org"} 100',
  'skipper_serve_host_duration_seconds_count{host="www_example_org"} 50',
  "",
].join("\n");

let exporter: TestServer;
let prom: RealPrometheus;
let fake: FakePrometheusApi;
let silent: { url: string; close(): Promise<void> };
let dir: string;

before(async () => {
  exporter = await startServer("127.0.0.1", 0, (_req, res) => {
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
    res.end(EXPOSITION);
  });
  fake = await startFakePrometheusApi();
  silent = await startSilentServer();
  dir = await mkdtemp(join(tmpdir(), "hpa-prom-test-"));
  // Last: the slow one; if it fails, the others are still stopped in after().
  prom = await startPrometheus({
    targets: [`127.0.0.1:${exporter.port}`],
    readyQuery: "test_single",
  });
});

after(async () => {
  await prom?.stop();
  await exporter?.close();
  await fake?.close();
  await silent?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The collection time of the last live() context: real time (Prometheus holds recent data). */
let clock = 0;

/** A collect context on the real clock. */
function live(
  cluster: StaticCluster = new StaticCluster(),
  signal?: AbortSignal,
): ReturnType<typeof context> {
  clock = Date.now();
  return { ...context(cluster, signal), now: () => clock };
}

/** Poll the real server until `query` returns data (10 s at most). */
async function waitForData(url: string, query: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(query)}`);
    const doc = await res.json() as { data?: { result?: unknown[] } };
    if ((doc.data?.result?.length ?? 0) > 0) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`no data for ${query} after 10s`);
}

/** A fresh flags object (the options and their clients are cached per flags object). */
function flags(extra: FlagValues = {}): FlagValues {
  return { "prometheus-server": prom.url, "prometheus-query-timeout": 10, ...extra };
}

/** The collector of `plan`, from a factory built as serve builds it from `flags`. */
function create(plan: MetricPlan, f: FlagValues): Collector {
  return createPrometheusFactory(prometheusOptionsFromFlags(f)).create({ plan });
}

/** {@linkcode create} with named arguments. */
function createFrom(options: { plan: MetricPlan; flags: FlagValues }): Collector {
  return create(options.plan, options.flags);
}

function collectExternal(
  query: string,
  options: { flags?: FlagValues; config?: Record<string, string> } = {},
) {
  const c = create(
    externalPlan("prometheus", { query, ...options.config }),
    options.flags ?? flags(),
  );
  return c.collect(live());
}

describe("prometheus collector against a real Prometheus", () => {
  const values: [string, string, number][] = [
    ["a one-series vector is its value", "vector(3)", 3],
    ["a scalar is its value", "scalar(test_single)", 42],
    ["a scraped series is its value", "test_single", 42],
    ["several series are summed, not the first kept", "test_gauge", 7.5],
    ["a label matcher selects one series", 'test_gauge{zone="z2"}', 4.5],
    ["an aggregation is one series", "sum by (zone) (test_gauge) * 2", 15],
  ];
  for (const [name, query, want] of values) {
    it(name, async () => {
      assert.deepEqual(await collectExternal(query), {
        samples: [{ value: want, timestamp: clock }],
      });
    });
  }

  const failures: [string, string, RegExp][] = [
    [
      "an empty vector is an error naming the query",
      "test_missing",
      /^prometheus query "test_missing" at http:\/\/127\.0\.0\.1:\d+ returned an empty vector for metric queue-length$/,
    ],
    [
      "a NaN scalar is an error naming the query",
      "0/0",
      /^prometheus query "0\/0" at http:\/\/127\.0\.0\.1:\d+ returned NaN for metric queue-length$/,
    ],
    [
      "a NaN series is an error naming the query and series",
      "vector(0)/0",
      /^prometheus query "vector\(0\)\/0" at http:\/\/127\.0\.0\.1:\d+ returned NaN in series \{\} for metric queue-length$/,
    ],
    [
      "an infinite value is an error",
      "1/0",
      /^prometheus query "1\/0" at http:\/\/127\.0\.0\.1:\d+ returned \+Inf for metric queue-length$/,
    ],
    [
      "a matrix is an error naming the query",
      "test_single[5s]",
      /^prometheus query "test_single\[5s\]" at http:\/\/127\.0\.0\.1:\d+ returned a range vector \(matrix\); want an instant vector or a scalar for metric queue-length$/,
    ],
    [
      "a string is an error",
      '"hello"',
      /^prometheus query ""hello"" at http:\/\/127\.0\.0\.1:\d+ returned a string; want an instant vector or a scalar for metric queue-length$/,
    ],
    [
      "bad PromQL gives Prometheus' error type and text",
      "sum(test_gauge",
      /^prometheus query "sum\(test_gauge" for metric queue-length failed: bad_data: .*parse error.*unclosed left parenthesis/,
    ],
  ];
  for (const [name, query, want] of failures) {
    it(name, async () => {
      await rejectsMatching(collectExternal(query), want);
    });
  }

  it("reads the legacy query-name form", async () => {
    const c = createFrom({
      plan: externalPlan("prometheus", { "query-name": "my-query", "my-query": "test_single" }, {
        metricName: "prometheus-query",
      }),
      flags: flags(),
    });
    assert.deepEqual(await c.collect(live()), { samples: [{ value: 42, timestamp: clock }] });
  });

  it("an Object metric on any kind is the described object's value", async () => {
    const c = createFrom({
      plan: objectPlan("prometheus", { apiVersion: "v1", kind: "Service", name: "web-svc" }, {
        query: "sum(test_gauge)",
      }, { metricName: "queue-depth" }),
      flags: flags(),
    });
    assert.deepEqual(await c.collect(live()), {
      samples: [{ objectName: "web-svc", value: 7.5, timestamp: clock }],
    });
  });

  const perReplica: [string, Kind, MetricPlan["scaleTargetRef"], number][] = [
    ["Deployment", "Deployment", { apiVersion: "apps/v1", kind: "Deployment", name: "web" }, 3],
    ["StatefulSet", "StatefulSet", { apiVersion: "apps/v1", kind: "StatefulSet", name: "web" }, 5],
    ["Rollout", "Rollout", { apiVersion: "argoproj.io/v1alpha1", kind: "Rollout", name: "web" }, 2],
  ];
  for (const [name, kind, ref, replicas] of perReplica) {
    it(`per-replica divides by the ${name}'s status.replicas`, async () => {
      const c = createFrom({
        plan: objectPlan("prometheus", { apiVersion: "v1", kind: "Service", name: "web-svc" }, {
          query: "sum(test_gauge)",
        }, { perReplica: true, scaleTargetRef: ref }),
        flags: flags(),
      });
      assert.deepEqual(c.kinds, [kind]);
      const cluster = new StaticCluster([[kind, workload("web", replicas)]]);
      assert.deepEqual(await c.collect(live(cluster)), {
        samples: [{ objectName: "web-svc", value: 7.5 / replicas, timestamp: clock }],
      });
    });
  }

  it("per-replica applies to External metrics too", async () => {
    const c = createFrom({
      plan: externalPlan("prometheus", { query: "test_single" }, { perReplica: true }),
      flags: flags(),
    });
    const cluster = new StaticCluster([["Deployment", workload("web", 4)]]);
    assert.deepEqual(await c.collect(live(cluster)), {
      samples: [{ value: 10.5, timestamp: clock }],
    });
  });

  const replicaErrors: [string, [Kind, KubeObject][], RegExp][] = [
    [
      "zero replicas",
      [["Deployment", workload("web", 0)]],
      /^per-replica metric requests-per-second: scale target Deployment default\/web has 0 replicas \(status.replicas\)$/,
    ],
    [
      "replicas not reported yet",
      [["Deployment", workload("web", undefined)]],
      /has 0 replicas/,
    ],
    [
      "a missing scale target",
      [],
      /^per-replica metric requests-per-second: scale target Deployment default\/web not found$/,
    ],
  ];
  for (const [name, objects, want] of replicaErrors) {
    it(`per-replica with ${name} is an error, not a division`, async () => {
      const c = createFrom({
        plan: objectPlan("prometheus", { kind: "Service", name: "web-svc" }, {
          query: "sum(test_gauge)",
        }, { perReplica: true }),
        flags: flags(),
      });
      await rejectsMatching(c.collect(live(new StaticCluster(objects))), want);
    });
  }

  it("evaluates the skipper and external-rps queries (rate of a constant counter is 0)", async () => {
    // rate() needs two samples in its window.
    await waitForData(
      prom.url,
      "min(count_over_time(skipper_serve_host_duration_seconds_count[1m])) >= 2",
    );
    const queries = [
      skipperRpsQuery({ hosts: ["example.org", "www.example.org"], weight: 0.5 }),
      skipperRpsQuery({ hosts: ["*.example.org", "example.org"], weight: 1 }),
      externalRpsQuery({
        metricName: "skipper_serve_host_duration_seconds_count",
        hostnames: ["example.org"],
        weight: 1,
      }),
    ];
    for (const q of queries) {
      assert.deepEqual(await collectExternal(q), { samples: [{ value: 0, timestamp: clock }] }, q);
    }
  });

  it("a skipper query over hosts without traffic is an error (NaN), as in the original", async () => {
    const q = skipperRpsQuery({ hosts: ["nothing.example"], weight: 1 });
    await rejectsMatching(collectExternal(q), /returned NaN for metric queue-length$/);
  });
});

/** Two series, `{a="x"} 1` then `{a="y"} 2` (Prometheus keeps the order of `or`'s sides). */
const TWO =
  'label_replace(vector(1), "a", "x", "", "") or label_replace(vector(2), "a", "y", "", "")';
/** Two series, `{a="x"} 2` then `{a="y"} 1`. */
const TWO_REVERSED =
  'label_replace(vector(2), "a", "x", "", "") or label_replace(vector(1), "a", "y", "", "")';
/** Two series, `{a="x"} NaN` then `{a="y"} 2`. */
const NAN_FIRST =
  'label_replace(vector(NaN), "a", "x", "", "") or label_replace(vector(2), "a", "y", "", "")';
/** Two series, `{a="x"} 3` then `{a="y"} +Inf`. */
const INF_SECOND =
  'label_replace(vector(3), "a", "x", "", "") or label_replace(vector(+Inf), "a", "y", "", "")';
const EMPTY = 'up{job="nope"}';

describe("KEDA semantics (namespace, ignore-null-values, multiple-series) against a real Prometheus", () => {
  /** What the collector says for `query` under `config`: its value, or its error message. */
  async function outcome(query: string, config: Record<string, string>): Promise<number | string> {
    try {
      const r = await collectExternal(query, { config });
      assert.equal(r.samples.length, 1);
      assert.equal(r.warnings, undefined);
      return r.samples[0].value;
    } catch (e) {
      return (e as Error).message;
    }
  }
  const failed = (query: string, why: string): string =>
    `prometheus query "${query}" at ${prom.url} ${why} for metric queue-length`;
  const ERROR = { "multiple-series": "error" };
  const FIRST = { "multiple-series": "first" };
  const SUM = { "multiple-series": "sum" };
  const IGNORE = { "ignore-null-values": "true" };
  const STRICT = { "ignore-null-values": "false" };

  /** [name, query, config, the value or the whole error message (a function of the query)]. */
  const cases: [string, string, Record<string, string>, number | ((q: string) => string)][] = [
    // multiple-series
    ["two series are summed by default", TWO, {}, 3],
    ["two series are summed under sum", TWO, SUM, 3],
    [
      "two series are an error under error, with the count",
      TWO,
      ERROR,
      (q) => failed(q, "returned 2 series; multiple-series is error: want at most one"),
    ],
    [
      "three series under error say 3",
      `${TWO} or label_replace(vector(3), "a", "z", "", "")`,
      ERROR,
      (q) => failed(q, "returned 3 series; multiple-series is error: want at most one"),
    ],
    ["one series under error is its value", "vector(5)", ERROR, 5],
    ["a scalar under error is its value", "scalar(vector(6))", ERROR, 6],
    ["first keeps the first series Prometheus returned", TWO, FIRST, 1],
    ["first follows the answer's order", TWO_REVERSED, FIRST, 2],
    ["first after sort_desc is the largest", `sort_desc(${TWO})`, FIRST, 2],
    ["first of one series is its value", "vector(7)", FIRST, 7],
    ["first ignores a later infinite series", INF_SECOND, FIRST, 3],
    // ignore-null-values on an empty vector
    [
      "an empty vector is an error by default",
      EMPTY,
      {},
      (q) => failed(q, "returned an empty vector"),
    ],
    [
      "an empty vector is an error with ignore-null-values false",
      EMPTY,
      STRICT,
      (q) => failed(q, "returned an empty vector"),
    ],
    ["an empty vector is 0 with ignore-null-values true", EMPTY, IGNORE, 0],
    ["an empty vector is 0 under error too", EMPTY, { ...IGNORE, ...ERROR }, 0],
    ["an empty vector is 0 under first too", EMPTY, { ...IGNORE, ...FIRST }, 0],
    // ignore-null-values on NaN and ±Inf
    [
      "vector(NaN) is an error by default",
      "vector(NaN)",
      {},
      (q) => failed(q, "returned NaN in series {}"),
    ],
    [
      "vector(NaN) is an error with ignore-null-values false",
      "vector(NaN)",
      STRICT,
      (q) => failed(q, "returned NaN in series {}"),
    ],
    ["vector(NaN) is 0 with ignore-null-values true", "vector(NaN)", IGNORE, 0],
    ["a NaN scalar is 0 with ignore-null-values true", "NaN", IGNORE, 0],
    ["vector(+Inf) is 0 with ignore-null-values true", "vector(+Inf)", IGNORE, 0],
    ["vector(-Inf) is 0 with ignore-null-values true", "vector(-Inf)", IGNORE, 0],
    [
      "a scalar -Inf is an error with ignore-null-values false",
      "-Inf",
      STRICT,
      (q) => failed(q, "returned -Inf"),
    ],
    [
      "a NaN series in a sum is an error naming it",
      NAN_FIRST,
      {},
      (q) => failed(q, 'returned NaN in series {a="x"}'),
    ],
    ["a NaN series makes a sum 0 (PromQL's sum is NaN)", NAN_FIRST, IGNORE, 0],
    [
      "a NaN first series is an error under first",
      NAN_FIRST,
      FIRST,
      (q) => failed(q, 'returned NaN in series {a="x"}'),
    ],
    ["a NaN first series is 0 under first with ignore-null-values", NAN_FIRST, {
      ...IGNORE,
      ...FIRST,
    }, 0],
    [
      "ignore-null-values does not excuse several series under error",
      TWO,
      { ...IGNORE, ...ERROR },
      (q) => failed(q, "returned 2 series; multiple-series is error: want at most one"),
    ],
    [
      "ignore-null-values does not excuse a matrix",
      "vector(1)[5s:1s]",
      IGNORE,
      (q) => failed(q, "returned a range vector (matrix); want an instant vector or a scalar"),
    ],
    // namespace (plain Prometheus ignores the parameter)
    ["a namespace does not change a plain Prometheus' answer", TWO, { namespace: "team-a" }, 3],
  ];
  for (const [name, query, config, want] of cases) {
    it(name, async () => {
      assert.equal(
        await outcome(query, config),
        typeof want === "function" ? want(query) : want,
      );
    });
  }

  it("an Object metric reads the keys too", async () => {
    const c = createFrom({
      plan: objectPlan("prometheus", { apiVersion: "v1", kind: "Service", name: "web-svc" }, {
        query: EMPTY,
        "ignore-null-values": "true",
      }),
      flags: flags(),
    });
    assert.deepEqual(await c.collect(live()), {
      samples: [{ objectName: "web-svc", value: 0, timestamp: clock }],
    });
    const first = createFrom({
      plan: objectPlan("prometheus", { apiVersion: "v1", kind: "Service", name: "web-svc" }, {
        query: TWO_REVERSED,
        "multiple-series": "first",
      }),
      flags: flags(),
    });
    assert.deepEqual(await first.collect(live()), {
      samples: [{ objectName: "web-svc", value: 2, timestamp: clock }],
    });
  });

  it("sends namespace=<value> after query, time and timeout (POST and the GET fallback)", async () => {
    fake.seen.length = 0;
    fake.reply = (req) =>
      req.method === "POST"
        ? { status: 405, body: "method not allowed", headers: { "content-type": "text/plain" } }
        : { status: 200, body: scalarBody("4") };
    const r = await collectExternal("sum(up)", {
      flags: { "prometheus-server": fake.url, "prometheus-query-timeout": 7 },
      config: { namespace: "team-a" },
    });
    assert.deepEqual(r, { samples: [{ value: 4, timestamp: clock }] });
    const params = {
      query: "sum(up)",
      time: String(clock / 1000),
      timeout: "7",
      namespace: "team-a",
    };
    assert.deepEqual(fake.seen.map((s) => [s.method, s.params]), [
      ["POST", params],
      ["GET", params],
    ]);
    assert.deepEqual(Object.keys(fake.seen[0].params), ["query", "time", "timeout", "namespace"]);
  });

  it("sends namespace to a prometheus-server the HPA names", async () => {
    fake.seen.length = 0;
    fake.reply = () => ({ status: 200, body: scalarBody("1") });
    await collectExternal("up", {
      flags: { "prometheus-server": prom.url },
      config: { "prometheus-server": fake.url, namespace: "kube-system" },
    });
    assert.equal(fake.seen.length, 1);
    assert.equal(fake.seen[0].params.namespace, "kube-system");
  });

  it("sends no namespace parameter without the key (or with an empty one)", async () => {
    fake.seen.length = 0;
    fake.reply = () => ({ status: 200, body: scalarBody("1") });
    await collectExternal("up", { flags: { "prometheus-server": fake.url } });
    await collectExternal("up", {
      flags: { "prometheus-server": fake.url },
      config: { namespace: "" },
    });
    assert.deepEqual(fake.seen.map((s) => Object.keys(s.params)), [
      ["query", "time", "timeout"],
      ["query", "time", "timeout"],
    ]);
  });

  it("query keys differ by namespace, ignore-null-values and multiple-series", () => {
    const key = (config: Record<string, string>): string =>
      create(externalPlan("prometheus", { query: "up", ...config }), flags()).queryKey;
    const base = key({});
    // The defaults, spelled out or empty, are the same semantics: one collection.
    assert.equal(key({ "ignore-null-values": "false", "multiple-series": "sum" }), base);
    assert.equal(key({ namespace: "", "ignore-null-values": "", "multiple-series": "" }), base);
    const others = [
      key({ namespace: "a" }),
      key({ namespace: "b" }),
      key({ "ignore-null-values": "true" }),
      key({ "multiple-series": "error" }),
      key({ "multiple-series": "first" }),
    ];
    assert.equal(new Set([base, ...others]).size, 6);
  });
});

describe("prometheus servers", () => {
  it("prometheus-server in the config overrides the flag and sends no token", async () => {
    const tokenFile = join(dir, "override-token");
    await writeFile(tokenFile, "secret\n");
    fake.seen.length = 0;
    const r = await collectExternal("test_single", {
      flags: { "prometheus-server": prom.url, "prometheus-server-token-file": tokenFile },
      config: { "prometheus-server": fake.url },
    });
    assert.deepEqual(r, { samples: [{ value: 1, timestamp: clock }] });
    assert.equal(fake.seen.length, 1);
    assert.equal(fake.seen[0].authorization, undefined);
  });

  it("prometheus-server-alias picks an --additional-prometheus-server", async () => {
    const r = await collectExternal("test_single", {
      flags: {
        "prometheus-server": fake.url,
        "additional-prometheus-server": [`other=${prom.url}`],
      },
      config: { "prometheus-server-alias": "other" },
    });
    assert.deepEqual(r, { samples: [{ value: 42, timestamp: clock }] });
  });

  it("an alias works without a default server", async () => {
    const r = await collectExternal("test_single", {
      flags: { "additional-prometheus-server": [`other=${prom.url}`] },
      config: { "prometheus-server-alias": "other" },
    });
    assert.deepEqual(r, { samples: [{ value: 42, timestamp: clock }] });
  });

  const createErrors: [string, FlagValues, Record<string, string>, RegExp | string][] = [
    [
      "an unknown alias",
      { "additional-prometheus-server": ["a=http://127.0.0.1:1", "b=http://127.0.0.1:2"] },
      { "prometheus-server-alias": "nope" },
      /^unknown prometheus-server-alias "nope" for metric queue-length \(known: a, b\)$/,
    ],
    [
      "an alias without additional servers",
      { "prometheus-server": "http://127.0.0.1:1" },
      { "prometheus-server-alias": "nope" },
      /^unknown prometheus-server-alias "nope" for metric queue-length \(no --additional-prometheus-server given\)$/,
    ],
    [
      "no server at all",
      {},
      {},
      /^no Prometheus server for metric queue-length: start with --prometheus-server or set prometheus-server-alias$/,
    ],
    [
      "a link-local prometheus-server",
      { "prometheus-server": "http://127.0.0.1:1" },
      { "prometheus-server": "http://169.254.169.254/" },
      'invalid prometheus-server "http://169.254.169.254/" for External metric `queue-length` of HPA default/web (annotation metric-config.external.queue-length.prometheus/prometheus-server): a link-local address (allow with --allow-link-local-targets)',
    ],
    [
      "a prometheus-server that is no URL",
      { "prometheus-server": "http://127.0.0.1:1" },
      { "prometheus-server": "prometheus:9090" },
      'invalid prometheus-server "prometheus:9090" for External metric `queue-length` of HPA default/web (annotation metric-config.external.queue-length.prometheus/prometheus-server): want an http:// or https:// URL',
    ],
    [
      "a malformed --additional-prometheus-server",
      { "additional-prometheus-server": ["http://127.0.0.1:1"] },
      {},
      /^invalid --additional-prometheus-server "http:\/\/127.0.0.1:1": want alias=url$/,
    ],
    [
      "a repeated alias",
      { "additional-prometheus-server": ["a=http://127.0.0.1:1", "a=http://127.0.0.1:2"] },
      {},
      /^invalid --additional-prometheus-server "a=http:\/\/127.0.0.1:2": alias "a" repeated$/,
    ],
    [
      "a token file for an unknown alias",
      {
        "additional-prometheus-server": ["a=http://127.0.0.1:1"],
        "additional-prometheus-server-token-file": ["b=/tmp/token"],
      },
      {},
      /^invalid --additional-prometheus-server-token-file "b=\/tmp\/token": no --additional-prometheus-server with alias "b"$/,
    ],
    [
      "a missing query",
      { "prometheus-server": "http://127.0.0.1:1" },
      { query: "" },
      "External metric `queue-length` of HPA default/web needs matchLabels.query or annotation metric-config.external.queue-length.prometheus/query",
    ],
    [
      "a query-name naming no key",
      { "prometheus-server": "http://127.0.0.1:1" },
      { query: "", "query-name": "q1" },
      "External metric `queue-length` of HPA default/web needs matchLabels.q1 or annotation metric-config.external.queue-length.prometheus/q1 (the query named by query-name)",
    ],
  ];
  for (const [name, f, config, want] of createErrors) {
    it(`refuses ${name}`, () => {
      const make = () =>
        createFrom({
          plan: externalPlan("prometheus", { query: "up", ...config }),
          flags: { ...f },
        });
      if (typeof want === "string") assert.throws(make, { message: want });
      else throwsMatching(make, want);
    });
  }

  it("allows a link-local prometheus-server with --allow-link-local-targets", () => {
    const c = createFrom({
      plan: externalPlan("prometheus", {
        query: "up",
        "prometheus-server": "http://169.254.169.254/",
      }),
      flags: { "allow-link-local-targets": true },
    });
    assert.match(c.queryKey, /169\.254\.169\.254/);
  });

  it("refuses per-replica with a scale target whose replicas it cannot read", () => {
    throwsMatching(
      () =>
        createFrom({
          plan: objectPlan("prometheus", { kind: "Service", name: "s" }, { query: "up" }, {
            perReplica: true,
            scaleTargetRef: { apiVersion: "apps/v1", kind: "ReplicaSet", name: "rs" },
          }),
          flags: { "prometheus-server": "http://127.0.0.1:1" },
        }),
      /^per-replica metric requests-per-second needs a scale target of kind Deployment, StatefulSet, Rollout, not ReplicaSet\/rs$/,
    );
  });

  it("shares one client per server across collectors of one flags object", () => {
    const f = { "additional-prometheus-server": ["a=http://127.0.0.1:1"] };
    const backends = (): ReturnType<typeof prometheusBackends> =>
      prometheusBackends(prometheusOptionsFromFlags(f));
    assert.equal(backends(), backends());
    assert.equal(backends().aliases.get("a")?.url, "http://127.0.0.1:1");
  });

  it("query keys: equal for equal queries, different across servers, objects and targets", () => {
    const f = flags({ "additional-prometheus-server": ["a=http://127.0.0.1:1"] });
    const key = (plan: MetricPlan): string => create(plan, f).queryKey;
    const base = externalPlan("prometheus", { query: "up" });
    assert.equal(key(base), key(externalPlan("prometheus", { query: "up", other: "x" })));
    assert.notEqual(key(base), key(externalPlan("prometheus", { query: "up2" })));
    assert.notEqual(
      key(base),
      key(externalPlan("prometheus", { query: "up", "prometheus-server-alias": "a" })),
    );
    assert.notEqual(
      key(base),
      key(externalPlan("prometheus", { query: "up" }, { perReplica: true })),
    );
    const obj = (name: string) =>
      objectPlan("prometheus", { kind: "Service", name }, { query: "up" });
    assert.notEqual(key(obj("a")), key(obj("b")));
  });
});

describe("prometheus client over HTTP", () => {
  function clientFlags(url: string, extra: FlagValues = {}): FlagValues {
    return { "prometheus-server": url, ...extra };
  }

  it("sends a form POST with query, time and timeout to /api/v1/query", async () => {
    fake.seen.length = 0;
    fake.reply = () => ({ status: 200, body: scalarBody("2.5") });
    const r = await collectExternal("sum(up)", {
      flags: clientFlags(`${fake.url}/prefix/`, { "prometheus-query-timeout": 7 }),
    });
    assert.deepEqual(r, { samples: [{ value: 2.5, timestamp: clock }] });
    assert.deepEqual(fake.seen, [{
      method: "POST",
      path: "/prefix/api/v1/query",
      params: { query: "sum(up)", time: String(clock / 1000), timeout: "7" },
      authorization: undefined,
    }]);
  });

  it("falls back to GET when POST is answered 405", async () => {
    fake.seen.length = 0;
    fake.reply = (req) =>
      req.method === "POST"
        ? { status: 405, body: "method not allowed", headers: { "content-type": "text/plain" } }
        : { status: 200, body: scalarBody("9") };
    const r = await collectExternal("up", { flags: clientFlags(fake.url) });
    assert.deepEqual(r, { samples: [{ value: 9, timestamp: clock }] });
    assert.deepEqual(fake.seen.map((s) => [s.method, s.params.query]), [["POST", "up"], [
      "GET",
      "up",
    ]]);
  });

  it("sends the token file's bearer token and re-reads it when the file changes", async () => {
    const tokenFile = join(dir, "token");
    await writeFile(tokenFile, "first-token\n");
    fake.seen.length = 0;
    fake.reply = (req) =>
      req.authorization === "Bearer first-token" || req.authorization === "Bearer second-token"
        ? { status: 200, body: scalarBody("1") }
        : { status: 401, body: "unauthorized", headers: { "content-type": "text/plain" } };
    const f = clientFlags(fake.url, { "prometheus-server-token-file": tokenFile });
    const c = createFrom({
      plan: externalPlan("prometheus", { query: "up" }),
      flags: f,
    });
    await c.collect(live());
    await c.collect(live());
    await writeFile(tokenFile, "second-token");
    await c.collect(live());
    assert.deepEqual(fake.seen.map((s) => s.authorization), [
      "Bearer first-token",
      "Bearer first-token",
      "Bearer second-token",
    ]);
    await writeFile(tokenFile, "wrong");
    await rejectsMatching(
      c.collect(live()),
      new RegExp(
        `^prometheus query "up" for metric queue-length failed: unsuccessful response "401 Unauthorized" from ${fake.url}/api/v1/query$`,
      ),
    );
  });

  it("sends an alias's own token file", async () => {
    const tokenFile = join(dir, "alias-token");
    await writeFile(tokenFile, "alias-token");
    fake.seen.length = 0;
    fake.reply = () => ({ status: 200, body: scalarBody("1") });
    await collectExternal("up", {
      flags: {
        "additional-prometheus-server": [`a=${fake.url}`],
        "additional-prometheus-server-token-file": [`a=${tokenFile}`],
      },
      config: { "prometheus-server-alias": "a" },
    });
    assert.equal(fake.seen[0].authorization, "Bearer alias-token");
  });

  it("a missing or empty token file is an error naming the file", async () => {
    const missing = join(dir, "no-such-token");
    await rejectsMatching(
      collectExternal("up", {
        flags: clientFlags(fake.url, { "prometheus-server-token-file": missing }),
      }),
      new RegExp(`failed: cannot read token file "${missing}": ENOENT`),
    );
    const empty = join(dir, "empty-token");
    await writeFile(empty, " \n");
    await rejectsMatching(
      collectExternal("up", {
        flags: clientFlags(fake.url, { "prometheus-server-token-file": empty }),
      }),
      new RegExp(`failed: cannot read token file "${empty}": the file is empty$`),
    );
  });

  it("times out on a server that never answers", async () => {
    const started = Date.now();
    await rejectsMatching(
      collectExternal("up", {
        flags: clientFlags(silent.url, { "prometheus-query-timeout": 0.3 }),
      }),
      new RegExp(
        `^prometheus query "up" for metric queue-length failed: request to ${silent.url}/api/v1/query failed: timed out after 0.3s$`,
      ),
    );
    assert.ok(Date.now() - started < 5000);
  });

  it("stops when the collection's signal aborts", async () => {
    const c = createFrom({
      plan: externalPlan("prometheus", { query: "up" }),
      flags: clientFlags(silent.url),
    });
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error("plan stopped")), 100);
    await rejectsMatching(c.collect(live(undefined, ac.signal)), /failed: plan stopped$/);
  });

  const broken: [
    string,
    { status: number; body: string; headers?: Record<string, string> },
    string,
  ][] = [
    [
      "garbage",
      { status: 200, body: "<html>hello</html>", headers: { "content-type": "text/html" } },
      "invalid JSON from URL: ",
    ],
    [
      "a non-200 answer without Prometheus' error JSON",
      { status: 502, body: "bad gateway", headers: { "content-type": "text/plain" } },
      'unsuccessful response "502 Bad Gateway" from URL',
    ],
    [
      "Prometheus' error JSON on 503",
      {
        status: 503,
        body: JSON.stringify({ status: "error", errorType: "timeout", error: "query timed out" }),
      },
      "timeout: query timed out",
    ],
    [
      "JSON that is not an API response",
      { status: 200, body: '{"hello":1}' },
      "invalid response from URL: not a Prometheus API response",
    ],
    [
      "a result that does not match its type",
      { status: 200, body: '{"status":"success","data":{"resultType":"vector","result":{}}}' },
      "invalid response from URL: invalid vector result",
    ],
    [
      "an oversized answer",
      { status: 200, body: scalarBody("1") + " ".repeat(5000) },
      "response from URL exceeds 1000 bytes",
    ],
  ];
  for (const [name, reply, want] of broken) {
    it(`records ${name} as an error`, async () => {
      fake.reply = () => reply;
      const err = await collectExternal("up", {
        flags: clientFlags(fake.url, { "max-response-bytes": 1000 }),
      }).then(() => null, (e: Error) => e);
      assert.ok(err instanceof Error, "collect must reject");
      const prefix = 'prometheus query "up" for metric queue-length failed: ';
      assert.ok(
        err.message.startsWith(prefix + want.replace("URL", `${fake.url}/api/v1/query`)),
        err.message,
      );
    });
  }

  it("an oversized answer without content-length is cut at the cap", async () => {
    const srv = await startServer("127.0.0.1", 0, (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write(scalarBody("1"));
      res.end(" ".repeat(5000));
    });
    try {
      await rejectsMatching(
        collectExternal("up", {
          flags: clientFlags(`http://127.0.0.1:${srv.port}`, { "max-response-bytes": 1000 }),
        }),
        /failed: response from http:\/\/127.0.0.1:\d+\/api\/v1\/query exceeds 1000 bytes$/,
      );
    } finally {
      await srv.close();
    }
  });
});

describe("prometheus response parsing", () => {
  const url = "http://p/api/v1/query";
  const ok: [string, unknown, QueryResult][] = [
    [
      "scalar",
      { status: "success", data: { resultType: "scalar", result: [1.5, "3"] } },
      { resultType: "scalar", value: 3, timestamp: 1500 },
    ],
    [
      "string",
      { status: "success", data: { resultType: "string", result: [1, "x"] } },
      { resultType: "string", value: "x", timestamp: 1000 },
    ],
    [
      "vector with labels and warnings",
      {
        status: "success",
        warnings: ["w1"],
        data: {
          resultType: "vector",
          result: [{ metric: { __name__: "up", job: "a" }, value: [2, "+Inf"] }],
        },
      },
      {
        resultType: "vector",
        series: [{ labels: { __name__: "up", job: "a" }, value: Infinity, timestamp: 2000 }],
        warnings: ["w1"],
      },
    ],
    [
      "matrix",
      {
        status: "success",
        data: { resultType: "matrix", result: [{ metric: {}, values: [[1, "1"], [2, "-Inf"]] }] },
      },
      { resultType: "matrix", series: [{ labels: {}, values: [[1000, 1], [2000, -Infinity]] }] },
    ],
  ];
  for (const [name, doc, want] of ok) {
    it(`parses a ${name} result`, () => {
      assert.deepEqual(parseQueryResponse(JSON.stringify(doc), { url }), want);
    });
  }

  it("throws Prometheus' error with its type and status", () => {
    const body = JSON.stringify({ status: "error", errorType: "bad_data", error: "parse error" });
    assert.throws(() => parseQueryResponse(body, { url, status: 400 }), (e: unknown) => {
      assert.ok(e instanceof PrometheusQueryError);
      assert.equal(e.message, "bad_data: parse error");
      assert.equal(e.errorType, "bad_data");
      assert.equal(e.status, 400);
      return true;
    });
  });

  it("refuses a native histogram sample (no float value)", () => {
    const body = JSON.stringify({
      status: "success",
      data: { resultType: "vector", result: [{ metric: {}, histogram: [1, {}] }] },
    });
    throwsMatching(
      () => parseQueryResponse(body, { url }),
      /^invalid response from http:\/\/p\/api\/v1\/query: vector series \{\} has no float value$/,
    );
  });

  const samples: [unknown, number][] = [
    ["1", 1],
    ["-2.5e3", -2500],
    ["NaN", NaN],
    ["+Inf", Infinity],
    ["-Inf", -Infinity],
  ];
  for (const [raw, want] of samples) {
    it(`parses sample value ${JSON.stringify(raw)}`, () => {
      assert.ok(Object.is(parseSampleValue(raw), want));
    });
  }
  for (const raw of ["", "abc", 1, null]) {
    it(`refuses sample value ${JSON.stringify(raw)}`, () => {
      throwsMatching(() => parseSampleValue(raw), /^invalid sample value/);
    });
  }

  it("refuses a server URL that is not http(s)", () => {
    throwsMatching(
      () => new PrometheusClient({ url: "ftp://p" }),
      /^invalid Prometheus server URL "ftp:\/\/p": want http or https$/,
    );
  });
});

describe("prometheusValue", () => {
  const vec = (...values: number[]): QueryResult => ({
    resultType: "vector",
    series: values.map((value, i) => ({ labels: { i: String(i) }, value, timestamp: 0 })),
  });
  it("sums every series", () => assert.equal(prometheusValue(vec(1, 2, 3.5), "q"), 6.5));
  it("names the bad series", () => {
    throwsMatching(
      () => prometheusValue(vec(1, NaN), "q"),
      /^query "q" returned NaN in series \{i="1"\}$/,
    );
  });
  it("first keeps the first series only", () => {
    assert.equal(prometheusValue(vec(4, NaN), "q", undefined, { multipleSeries: "first" }), 4);
  });
  it("error refuses several series, naming the server", () => {
    throwsMatching(
      () =>
        prometheusValue(vec(1, 2, 3), "q", "http://u:p@prom:9090/", { multipleSeries: "error" }),
      /^query "q" at http:\/\/prom:9090 returned 3 series; multiple-series is error: want at most one$/,
    );
  });
  it("ignore-null-values makes an overflowing sum 0", () => {
    assert.equal(
      prometheusValue(vec(Number.MAX_VALUE, Number.MAX_VALUE), "q", undefined, {
        ignoreNullValues: true,
      }),
      0,
    );
  });
  it("refuses a sum that overflows", () => {
    throwsMatching(
      () => prometheusValue(vec(Number.MAX_VALUE, Number.MAX_VALUE), "q"),
      /^query "q" returned a sum of \+Inf$/,
    );
  });
});

describe("scaleTargetReplicas", () => {
  it("reads status.replicas in the HPA's namespace", () => {
    const other = { ...workload("web", 9), metadata: { name: "web", namespace: "other" } };
    const cluster = new StaticCluster([["Deployment", other], ["Deployment", workload("web", 2)]]);
    assert.equal(
      scaleTargetReplicas(cluster, {
        namespace: "default",
        scaleTargetRef: { kind: "Deployment", name: "web" },
      }),
      2,
    );
  });
});
