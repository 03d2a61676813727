/**
 * prometheus-adapter's config file served (issue 49) against the REAL Prometheus: discovery
 * through `/api/v1/series`, custom reads (one object, a pods list with a labelSelector,
 * namespaced and cluster-scoped metrics), external reads (vector, selector, `namespaced: false`,
 * scalar), a read split into several queries under the length limit, a new series found on its
 * first read, values served from the cache and collected on a schedule until nobody reads
 * them, and the file's reload (a good edit replaces it, a bad one keeps the last good one).
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ApiApp, createApp } from "../../src/api/app.ts";
import type { KubeObject } from "../../src/cluster/types.ts";
import { memoryLogger } from "../../src/engine/logger.ts";
import {
  type PrometheusAdapterOptions,
  PrometheusAdapterServing,
} from "../../src/engine/prometheus_adapter.ts";
import { MetricStore } from "../../src/store/store.ts";
import {
  type ScrapedExporter,
  scrapedExporter,
  servingOptions,
} from "./prometheus_adapter_support.ts";
import type { RealPrometheus } from "../fakes/prometheus_server.ts";

const EXPOSITION = [
  "# TYPE http_requests_total counter",
  'http_requests_total{namespace="web",pod="web-a"} 10',
  'http_requests_total{namespace="web",pod="web-b"} 20',
  'http_requests_total{namespace="other",pod="web-a"} 5',
  "# TYPE queue_depth gauge",
  'queue_depth{namespace="web",queue="orders"} 7',
  'queue_depth{namespace="web",queue="billing"} 3',
  'queue_depth{namespace="other",queue="x"} 1',
  "# TYPE node_load gauge",
  'node_load{node="n1"} 1.5',
  "",
].join("\n");

/** Appears once a test sets it: the series of the first-read discovery. */
const LATE_SERIES = 'http_errors_total{namespace="web",pod="web-a"} 4\n';

const CONFIG = `
rules:
- seriesQuery: '{__name__=~"^http_.*_total$",namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: "^(.*)_total$", as: "\${1}_sum"}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: 'node_load{node!=""}'
  resources:
    overrides:
      node: {resource: node}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'queue_depth{namespace!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
- seriesQuery: 'queue_depth{namespace!=""}'
  resources: {namespaced: false}
  name: {matches: "^queue_depth$", as: "queue_depth_all"}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
- seriesQuery: 'queue_depth{namespace!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
  name: {matches: "^queue_depth$", as: "queue_depth_scalar"}
  metricsQuery: 'scalar(sum(<<.Series>>{<<.LabelMatchers>>}))'
`;

function pod(name: string, labels: Record<string, string>): KubeObject {
  return { metadata: { name, namespace: "web", labels } };
}

const PODS = [
  pod("web-a", { app: "web" }),
  pod("web-b", { app: "web" }),
  pod("web-c", { app: "other" }),
];

/** A request the serving sent to Prometheus. */
interface Sent {
  path: string;
  params: URLSearchParams;
  at: number;
}

let scraped: ScrapedExporter;
let prom: RealPrometheus;
let late = false;
const dirs: string[] = [];
const servings: PrometheusAdapterServing[] = [];

before(async () => {
  scraped = await scrapedExporter(
    () => EXPOSITION + (late ? "# TYPE http_errors_total counter\n" + LATE_SERIES : ""),
    "node_load",
  );
  prom = scraped.prom;
});

after(async () => {
  for (const s of servings) await s.stop();
  await scraped?.stop();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function configFile(text: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "padapter-"));
  dirs.push(dir);
  const path = join(dir, "config.yaml");
  await writeFile(path, text);
  return path;
}

/** A serving of `path` whose Prometheus requests are recorded in `sent`. */
async function serve(
  path: string,
  overrides: Partial<PrometheusAdapterOptions> = {},
): Promise<
  {
    serving: PrometheusAdapterServing;
    app: ApiApp;
    sent: Sent[];
    log: ReturnType<typeof memoryLogger>;
  }
> {
  const sent: Sent[] = [];
  const recording: typeof fetch = (input, init) => {
    const url = new URL(String(input));
    const params = init?.method === "POST"
      ? new URLSearchParams(String(init.body))
      : url.searchParams;
    sent.push({ path: url.pathname, params, at: Date.now() });
    return fetch(input, init);
  };
  const log = memoryLogger();
  const serving = await PrometheusAdapterServing.start({
    ...servingOptions(path, { url: prom.url, fetch: recording, logger: log }),
    ...overrides,
  });
  servings.push(serving);
  const app = createApp({
    store: new MetricStore(),
    pods: { listPods: (ns) => PODS.filter((p) => p.metadata.namespace === ns) },
    now: () => Date.now(),
    ready: () => true,
    prometheusAdapter: serving,
  });
  return { serving, app, sent, log };
}

async function get(app: ApiApp, path: string): Promise<{ status: number; body: any }> {
  const res = await app.request(path);
  return { status: res.status, body: await res.json() };
}

/** The body with every item's timestamp checked (RFC 3339, seconds) and removed. */
function withoutTimestamps(body: any): any {
  for (const item of body.items ?? []) {
    assert.match(item.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const age = Date.now() - Date.parse(item.timestamp);
    assert.ok(age >= -1000 && age < 60_000, `timestamp ${item.timestamp} is not recent`);
    delete item.timestamp;
  }
  return body;
}

function queries(sent: Sent[]): string[] {
  return sent.filter((s) => s.path === "/api/v1/query").map((s) => s.params.get("query")!);
}

function resourceNames(body: any): string[] {
  return body.resources.map((r: any) => `${r.name}${r.namespaced ? "" : " (cluster)"}`).sort();
}

const CUSTOM = "/apis/custom.metrics.k8s.io";
const EXTERNAL = "/apis/external.metrics.k8s.io/v1beta1";

describe("prometheus-adapter config served against the real Prometheus", () => {
  let app: ApiApp;
  let sent: Sent[];
  let serving: PrometheusAdapterServing;

  before(async () => {
    ({ app, sent, serving } = await serve(await configFile(CONFIG)));
  });

  it("discovers each distinct seriesQuery once through /api/v1/series since now - max age", () => {
    const series = sent.filter((s) => s.path === "/api/v1/series");
    assert.deepEqual(series.map((s) => s.params.getAll("match[]")), [
      ['{__name__=~"^http_.*_total$",namespace!="",pod!=""}'],
      ['node_load{node!=""}'],
      ['queue_depth{namespace!=""}'],
    ]);
    for (const s of series) {
      assert.deepEqual([...s.params.keys()], ["match[]", "start"]);
      const start = Number(s.params.get("start")) * 1000;
      assert.ok(Math.abs(s.at - 600_000 - start) < 2000, `start ${start} is not now - 10m`);
    }
  });

  it("lists the discovered metrics in the discovery documents", async () => {
    for (const version of ["v1beta1", "v1beta2"]) {
      const { status, body } = await get(app, `${CUSTOM}/${version}`);
      assert.equal(status, 200);
      assert.deepEqual(resourceNames(body), [
        "custommetrics",
        "namespaces/http_requests_sum (cluster)",
        "nodes/node_load (cluster)",
        "pods/http_requests_sum",
      ]);
    }
    const { body } = await get(app, EXTERNAL);
    assert.deepEqual(resourceNames(body), [
      "externalmetrics",
      "queue_depth",
      "queue_depth_all",
      "queue_depth_scalar",
    ]);
  });

  it("tells the status page each rule's queries and the metrics it serves", () => {
    const status = serving.status();
    assert.equal(status.refused, null);
    assert.equal(status.discovery?.error, null);
    assert.equal(status.resourceRules, false);
    assert.deepEqual(
      status.rules.map((r) => [r.rule, r.seriesQuery, [...r.metrics].sort()]),
      [
        [
          "rules[0]",
          '{__name__=~"^http_.*_total$",namespace!="",pod!=""}',
          ["namespaces/http_requests_sum", "pods/http_requests_sum"],
        ],
        ["rules[1]", 'node_load{node!=""}', ["nodes/node_load"]],
      ],
    );
    assert.deepEqual(status.externalRules.map((r) => [r.rule, r.metrics]), [
      ["externalRules[0]", ["queue_depth"]],
      ["externalRules[1]", ["queue_depth_all"]],
      ["externalRules[2]", ["queue_depth_scalar"]],
    ]);
    assert.equal(
      status.externalRules[2].metricsQuery,
      "scalar(sum(<<.Series>>{<<.LabelMatchers>>}))",
    );
  });

  it("reads one pod's value, named by the pod label, as a truncated milli Quantity", async () => {
    const { status, body } = await get(
      app,
      `${CUSTOM}/v1beta2/namespaces/web/pods/web-a/http_requests_sum`,
    );
    assert.equal(status, 200);
    assert.deepEqual(withoutTimestamps(body), {
      kind: "MetricValueList",
      apiVersion: "custom.metrics.k8s.io/v1beta2",
      metadata: {},
      items: [{
        describedObject: { kind: "Pod", namespace: "web", name: "web-a", apiVersion: "/v1" },
        metric: { name: "http_requests_sum" },
        value: "10",
      }],
    });
    assert.ok(
      queries(sent).includes('sum(http_requests_total{namespace="web",pod="web-a"}) by (pod)'),
    );
  });

  it("reads the pods a labelSelector selects with one pod=~ query, in the pods' order", async () => {
    const { status, body } = await get(
      app,
      `${CUSTOM}/v1beta1/namespaces/web/pods/*/http_requests_sum?labelSelector=app%3Dweb`,
    );
    assert.equal(status, 200);
    assert.deepEqual(withoutTimestamps(body).items, [
      {
        describedObject: { kind: "Pod", namespace: "web", name: "web-a", apiVersion: "/v1" },
        metricName: "http_requests_sum",
        value: "10",
        selector: null,
      },
      {
        describedObject: { kind: "Pod", namespace: "web", name: "web-b", apiVersion: "/v1" },
        metricName: "http_requests_sum",
        value: "20",
        selector: null,
      },
    ]);
    assert.equal(
      queries(sent).at(-1),
      'sum(http_requests_total{namespace="web",pod=~"web-a|web-b"}) by (pod)',
    );
  });

  it("adds the metricLabelSelector to the matchers and serves it as the metric's selector", async () => {
    const { body } = await get(
      app,
      `${CUSTOM}/v1beta2/namespaces/web/pods/web-b/http_requests_sum?metricLabelSelector=job%3Dtest`,
    );
    assert.deepEqual(withoutTimestamps(body).items, [{
      describedObject: { kind: "Pod", namespace: "web", name: "web-b", apiVersion: "/v1" },
      metric: { name: "http_requests_sum", selector: { matchLabels: { job: "test" } } },
      value: "20",
    }]);
    assert.equal(
      queries(sent).at(-1),
      'sum(http_requests_total{job="test",namespace="web",pod="web-b"}) by (pod)',
    );
  });

  it("reads cluster-scoped metrics (a namespace, a node) without the namespace matcher", async () => {
    const ns = await get(app, `${CUSTOM}/v1beta2/namespaces/web/metrics/http_requests_sum`);
    assert.equal(ns.status, 200);
    assert.deepEqual(withoutTimestamps(ns.body).items, [{
      describedObject: { kind: "Namespace", name: "web", apiVersion: "/v1" },
      metric: { name: "http_requests_sum" },
      value: "30",
    }]);
    const node = await get(app, `${CUSTOM}/v1beta2/nodes/n1/node_load`);
    assert.equal(node.status, 200);
    assert.deepEqual(withoutTimestamps(node.body).items, [{
      describedObject: { kind: "Node", name: "n1", apiVersion: "/v1" },
      metric: { name: "node_load" },
      value: "1500m",
    }]);
    assert.deepEqual(queries(sent).slice(-2), [
      'sum(http_requests_total{namespace="web"}) by (namespace)',
      'sum(node_load{node="n1"}) by (node)',
    ]);
  });

  it("answers 404 for a namespaced read of a cluster-scoped metric and for a pod without a sample", async () => {
    const nodes = await get(app, `${CUSTOM}/v1beta2/namespaces/web/nodes/n1/node_load`);
    assert.equal(nodes.status, 404);
    const missing = await get(app, `${CUSTOM}/v1beta2/namespaces/web/pods/web-c/http_requests_sum`);
    assert.equal(missing.status, 404);
    assert.equal(
      missing.body.message,
      "the server could not find the metric http_requests_sum for pods web-c: Prometheus returned no sample for it",
    );
  });

  it("reads external metrics: every sample an item with its labels, the namespace matcher added", async () => {
    const { status, body } = await get(app, `${EXTERNAL}/namespaces/web/queue_depth`);
    assert.equal(status, 200);
    const items = withoutTimestamps(body).items.sort((a: any, b: any) =>
      a.metricLabels.queue.localeCompare(b.metricLabels.queue)
    );
    assert.deepEqual(items, [
      { metricName: "queue_depth", metricLabels: { queue: "billing" }, value: "3" },
      { metricName: "queue_depth", metricLabels: { queue: "orders" }, value: "7" },
    ]);
    assert.equal(queries(sent).at(-1), 'sum(queue_depth{namespace="web"}) by (queue)');
    const one = await get(
      app,
      `${EXTERNAL}/namespaces/web/queue_depth?labelSelector=queue%3Dorders`,
    );
    assert.deepEqual(withoutTimestamps(one.body).items, [
      { metricName: "queue_depth", metricLabels: { queue: "orders" }, value: "7" },
    ]);
    assert.equal(
      queries(sent).at(-1),
      'sum(queue_depth{queue="orders",namespace="web"}) by (queue)',
    );
  });

  it("leaves the namespace out with namespaced: false, and makes a scalar one item", async () => {
    const all = await get(app, `${EXTERNAL}/namespaces/web/queue_depth_all`);
    assert.deepEqual(withoutTimestamps(all.body).items, [
      { metricName: "queue_depth_all", metricLabels: {}, value: "11" },
    ]);
    assert.equal(queries(sent).at(-1), "sum(queue_depth{})");
    const scalar = await get(app, `${EXTERNAL}/namespaces/web/queue_depth_scalar`);
    assert.deepEqual(withoutTimestamps(scalar.body).items, [
      { metricName: "queue_depth_scalar", metricLabels: null, value: "10" },
    ]);
    assert.equal(queries(sent).at(-1), 'scalar(sum(queue_depth{namespace="web"}))');
  });

  it("serves a value read before from the cache, on the fast path, without a query", async () => {
    const path = `${EXTERNAL}/namespaces/web/queue_depth_all`;
    const before = sent.length;
    const fast = app.fastFetch({ method: "GET", url: path, headers: {} } as never);
    assert.ok(fast !== null, "the fast path answers a cached read");
    assert.equal(fast.status, 200);
    assert.equal((await get(app, path)).status, 200);
    assert.equal(sent.length, before);
  });

  it("finds a series that appeared after the last discovery on its first read", async () => {
    late = true;
    // wait until Prometheus has scraped it (the relist is 10 minutes away)
    const deadline = Date.now() + 15_000;
    for (;;) {
      const res = await fetch(`${prom.url}/api/v1/series?match[]=http_errors_total`);
      if (((await res.json()) as { data: unknown[] }).data.length > 0) break;
      assert.ok(Date.now() < deadline, "the new series never reached Prometheus");
      await new Promise((r) => setTimeout(r, 200));
    }
    const seriesBefore = sent.filter((s) => s.path === "/api/v1/series").length;
    const { status, body } = await get(
      app,
      `${CUSTOM}/v1beta2/namespaces/web/pods/web-a/http_errors_sum`,
    );
    assert.equal(status, 200);
    assert.equal(body.items[0].value, "4");
    const series = sent.filter((s) => s.path === "/api/v1/series");
    // the custom rules' queries only (both could name it), not the external rules'
    assert.deepEqual(series.slice(seriesBefore).map((s) => s.params.get("match[]")), [
      '{__name__=~"^http_.*_total$",namespace!="",pod!=""}',
      'node_load{node!=""}',
    ]);
    const { body: list } = await get(app, `${CUSTOM}/v1beta2`);
    assert.ok(resourceNames(list).includes("pods/http_errors_sum"));
  });

  it("looks an unknown name up once, then answers 404 at once until the rate limit passes", async () => {
    const path = `${CUSTOM}/v1beta2/namespaces/web/pods/web-a/no_such_sum`;
    const seriesBefore = sent.filter((s) => s.path === "/api/v1/series").length;
    const first = await get(app, path);
    assert.equal(first.status, 404);
    const second = await get(app, path);
    assert.equal(second.status, 404);
    assert.equal(sent.filter((s) => s.path === "/api/v1/series").length, seriesBefore + 2);
    assert.equal(serving.version() > 0, true);
  });
});

describe("prometheus-adapter reads: split, schedule and stop", () => {
  it("splits a pods read whose pod=~ matcher would pass the length limit, and merges the answers", async () => {
    const two = 'sum(http_requests_total{namespace="web",pod=~"web-a|web-b"}) by (pod)';
    const { app, sent } = await serve(await configFile(CONFIG), { maxQueryLength: two.length });
    const { status, body } = await get(
      app,
      `${CUSTOM}/v1beta2/namespaces/web/pods/*/http_requests_sum`,
    );
    assert.equal(status, 200);
    assert.deepEqual(
      withoutTimestamps(body).items.map((i: any) => [i.describedObject.name, i.value]),
      [["web-a", "10"], ["web-b", "20"]],
    );
    assert.deepEqual(queries(sent), [
      two,
      'sum(http_requests_total{namespace="web",pod="web-c"}) by (pod)',
    ]);
  });

  it("collects a read value every collection interval, and stops once nobody read it for a TTL", async () => {
    const { app, sent, serving } = await serve(await configFile(CONFIG), {
      collectionIntervalSeconds: 0.5,
      ttlSeconds: 1.5,
    });
    const path = `${EXTERNAL}/namespaces/web/queue_depth_scalar`;
    assert.equal((await get(app, path)).status, 200);
    assert.equal(queries(sent).length, 1);
    await new Promise((r) => setTimeout(r, 1200));
    const scheduled = queries(sent).length;
    assert.ok(scheduled >= 2, `collected ${scheduled} times in 1.2 s at a 0.5 s interval`);
    assert.equal(serving.collectedReads, 1);
    await new Promise((r) => setTimeout(r, 2000));
    assert.equal(serving.collectedReads, 0);
    const stopped = queries(sent).length;
    await new Promise((r) => setTimeout(r, 700));
    assert.equal(queries(sent).length, stopped);
  });
});

describe("prometheus-adapter config file: start and reload", () => {
  const BAD = CONFIG.replace(
    "metricsQuery: 'scalar(sum(<<.Series>>{<<.LabelMatchers>>}))'",
    "metricsQuery: 'scalar(<<.Series'",
  ).replace(
    "- seriesQuery: 'node_load{node!=\"\"}'",
    "- seriesQuery: 'a'\n  metricsQuery: 'x'\n- seriesQuery: 'node_load{node!=\"\"}'",
  ).replace(
    "  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'\nexternalRules:",
    "  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy'\nexternalRules:",
  );

  it("refuses a bad file at start, naming each rule and field", async () => {
    const path = await configFile(BAD);
    await assert.rejects(
      serve(path),
      (e: Error) => {
        assert.match(
          e.message,
          /^invalid prometheus-adapter config ".*config\.yaml": rules\[2\]\.metricsQuery: invalid template "sum\(<<\.Series>>\{<<\.LabelMatchers>>\}\) by \(<<\.GroupBy": .+; externalRules\[2\]\.metricsQuery: invalid template "scalar\(<<\.Series": .+$/,
        );
        return true;
      },
    );
  });

  it("re-reads the file through a ConfigMap's symlink swap: a good edit replaces it, a bad one is logged and the last good one serves", async () => {
    // the kubelet's layout: config.yaml -> ..data/config.yaml, ..data -> ..<timestamp>
    const dir = await mkdtemp(join(tmpdir(), "padapter-cm-"));
    dirs.push(dir);
    let generation = 0;
    const publish = async (text: string): Promise<void> => {
      const version = join(dir, `..v${++generation}`);
      await mkdir(version);
      await writeFile(join(version, "config.yaml"), text);
      await symlink(`..v${generation}`, join(dir, "..data_tmp"));
      await rename(join(dir, "..data_tmp"), join(dir, "..data"));
    };
    await publish(CONFIG);
    const path = join(dir, "config.yaml");
    await symlink("..data/config.yaml", path);
    const { app, serving, log } = await serve(path, { configPollSeconds: 0.1 });
    const externalNames = async (): Promise<string[]> =>
      resourceNames((await get(app, EXTERNAL)).body);
    const waitFor = async (what: string, ok: () => Promise<boolean> | boolean): Promise<void> => {
      const deadline = Date.now() + 10_000;
      while (!(await ok())) {
        assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };

    await publish(CONFIG.replace('as: "queue_depth_all"', 'as: "queue_depth_everywhere"'));
    await waitFor(
      "the edit",
      async () => (await externalNames()).includes("queue_depth_everywhere"),
    );
    assert.deepEqual(await externalNames(), [
      "externalmetrics",
      "queue_depth",
      "queue_depth_everywhere",
      "queue_depth_scalar",
    ]);
    assert.equal(serving.config.externalRules[1].nameAs, "queue_depth_everywhere");

    await publish(BAD);
    const refused = (): string[] =>
      log.entries.filter((e) => e.level === "error").map((e) => e.message);
    await waitFor("the bad edit's error", () => refused().length > 0);
    assert.equal(refused().length, 1);
    assert.match(
      refused()[0],
      /^invalid prometheus-adapter config ".*config\.yaml": rules\[2\]\.metricsQuery: invalid template .+; externalRules\[2\]\.metricsQuery: .+; the last good config is kept$/,
    );
    // logged once, not at every poll
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(refused().length, 1);
    // and on the status page, while the last good config's rules serve
    assert.match(
      serving.status().refused ?? "",
      /^invalid prometheus-adapter config ".*config\.yaml": rules\[2\]\.metricsQuery: invalid template .+; externalRules\[2\]\.metricsQuery: .+$/,
    );
    assert.deepEqual(serving.status().externalRules[1].metrics, ["queue_depth_everywhere"]);
    assert.equal(serving.config.externalRules[1].nameAs, "queue_depth_everywhere");
    const read = await get(app, `${EXTERNAL}/namespaces/web/queue_depth_everywhere`);
    assert.equal(read.status, 200);
    assert.equal(read.body.items[0].value, "11");
  });
});

describe("prometheus-adapter's resources resolved with the cluster's discovery", () => {
  // a rule naming a CRD the built-in kinds do not know, and a template that names it too
  const CRD_CONFIG = `
rules:
- seriesQuery: 'queue_depth{namespace!="",queue!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      queue: {group: keda.sh, resource: triggerauthentication}
  name: {matches: "^queue_depth$", as: "auth_depth"}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
`;
  const KINDS = [
    { group: "", kind: "Namespace", plural: "namespaces", version: "v1", namespaced: false },
    { group: "", kind: "Pod", plural: "pods", version: "v1", namespaced: true },
    {
      group: "keda.sh",
      kind: "TriggerAuthentication",
      plural: "triggerauthentications",
      singular: "triggerauthentication",
      version: "v1alpha1",
      namespaced: true,
    },
  ];

  it("refuses the override with the built-in kinds", async () => {
    await assert.rejects(serve(await configFile(CRD_CONFIG)), /triggerauthentication/);
  });

  it("serves the CRD's metric, its items described with the cluster's kind and version", async () => {
    let reads = 0;
    const { app, serving } = await serve(await configFile(CRD_CONFIG), {
      discoverKinds: () => {
        reads++;
        return Promise.resolve(KINDS);
      },
      kindsRefreshSeconds: 3600,
    });
    assert.equal(reads, 1);
    const doc = await get(app, `${CUSTOM}/v1beta2`);
    assert.deepEqual(resourceNames(doc.body), [
      "custommetrics",
      "namespaces/auth_depth (cluster)",
      "triggerauthentications.keda.sh/auth_depth",
    ]);
    const { status, body } = await get(
      app,
      `${CUSTOM}/v1beta2/namespaces/web/triggerauthentications.keda.sh/orders/auth_depth`,
    );
    assert.equal(status, 200, JSON.stringify(body));
    assert.deepEqual(withoutTimestamps(body).items, [{
      describedObject: {
        kind: "TriggerAuthentication",
        namespace: "web",
        name: "orders",
        apiVersion: "keda.sh/v1alpha1",
      },
      metric: { name: "auth_depth" },
      value: "7",
    }]);
    await serving.stop();
  });

  it("lists the objects of a * read from kube-apiserver with its labelSelector, at each read", async () => {
    const lists: unknown[] = [];
    const { app, serving } = await serve(await configFile(CRD_CONFIG), {
      discoverKinds: () => Promise.resolve(KINDS),
      listNames: (list) => {
        lists.push(list);
        return list.labelSelector === "team=shop"
          ? Promise.resolve(["orders", "gone"])
          : Promise.reject(new Error("HTTP 403: forbidden"));
      },
    });
    const path = `${CUSTOM}/v1beta2/namespaces/web/triggerauthentications.keda.sh/*/auth_depth`;
    const { status, body } = await get(app, `${path}?labelSelector=team%3Dshop`);
    assert.equal(status, 200, JSON.stringify(body));
    // the listed objects with a value ("gone" has none)
    assert.deepEqual(
      withoutTimestamps(body).items.map((i: any) => [i.describedObject.name, i.value]),
      [
        ["orders", "7"],
      ],
    );
    assert.deepEqual(lists, [{
      group: "keda.sh",
      version: "v1alpha1",
      resource: "triggerauthentications",
      namespace: "web",
      labelSelector: "team=shop",
    }]);
    // a list kube-apiserver refuses is upstream's internal error
    const refused = await get(app, path);
    assert.deepEqual([refused.status, refused.body.message], [
      500,
      "Internal error occurred: unable to list matching resources",
    ]);
    await serving.stop();
  });

  it("starts with the built-in kinds when the discovery cannot be read, and says so", async () => {
    const { serving, log } = await serve(await configFile(CONFIG), {
      discoverKinds: () => Promise.reject(new Error("GET /apis: HTTP 503")),
    });
    assert.deepEqual(
      log.entries.filter((e) => e.message.includes("cluster's resources")).map((e) => [
        e.level,
        e.message,
        e.fields?.error,
        e.fields?.using,
      ]),
      [[
        "error",
        "cannot read the cluster's resources for prometheus-adapter's rules",
        "GET /apis: HTTP 503",
        "built-in kinds",
      ]],
    );
    assert.ok(serving.servedMetrics().length > 0);
  });
});
