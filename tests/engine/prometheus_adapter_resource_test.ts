/**
 * prometheus-adapter's `resourceRules` served as `metrics.k8s.io/v1beta1` (issue 49) against
 * the REAL Prometheus: discovery, PodMetrics of one pod, of a namespace (labelSelector,
 * fieldSelector), of every namespace, NodeMetrics of one node and of all; pods that are not
 * running or have no samples left out (404 for a get), the queries rendered as upstream renders
 * them (one cpu and one memory containerQuery per namespace, one nodeQuery each for the nodes),
 * and later reads answered from the cache, on the fast path, without a query.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ApiApp, createApp } from "../../src/api/app.ts";
import { PrometheusClient } from "../../src/collectors/prometheus_client.ts";
import type { KubeObject } from "../../src/cluster/types.ts";
import { memoryLogger } from "../../src/engine/logger.ts";
import {
  type ScrapedExporter,
  scrapedExporter,
  servingOptions,
} from "./prometheus_adapter_support.ts";
import { PrometheusAdapterServing } from "../../src/engine/prometheus_adapter.ts";
import { MetricStore } from "../../src/store/store.ts";
import type { RealPrometheus } from "../fakes/prometheus_server.ts";
import { startServer } from "../collectors/servers.ts";

const EXPOSITION = [
  "# TYPE cpu_usage gauge",
  'cpu_usage{namespace="web",pod="web-a",container="app"} 0.25',
  'cpu_usage{namespace="web",pod="web-a",container="sidecar"} 0.0015',
  'cpu_usage{namespace="web",pod="web-b",container="app"} 1.5',
  'cpu_usage{namespace="other",pod="x",container="app"} 2',
  'cpu_usage{node="n1",id="/"} 3.75',
  'cpu_usage{node="n2",id="/"} 0.5',
  "# TYPE mem_usage gauge",
  'mem_usage{namespace="web",pod="web-a",container="app"} 1048576',
  'mem_usage{namespace="web",pod="web-b",container="app"} 1000',
  'mem_usage{namespace="web",pod="web-b",container="init"} 2048',
  'mem_usage{namespace="other",pod="x",container="app"} 3145728',
  'mem_usage{node="n1",id="/"} 8589934592',
  'mem_usage{node="n2",id="/"} 1500.5',
  "",
].join("\n");

const CONFIG = `
resourceRules:
  cpu:
    containerQuery: 'sum(cpu_usage{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    nodeQuery: 'sum(cpu_usage{<<.LabelMatchers>>,id="/"}) by (<<.GroupBy>>)'
    resources:
      overrides:
        namespace: {resource: namespace}
        pod: {resource: pod}
        node: {resource: node}
    containerLabel: container
  memory:
    containerQuery: 'sum(mem_usage{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
    nodeQuery: 'sum(mem_usage{<<.LabelMatchers>>,id="/"}) by (<<.GroupBy>>)'
    resources:
      overrides:
        namespace: {resource: namespace}
        pod: {resource: pod}
        node: {resource: node}
    containerLabel: container
  window: 5m
`;

function pod(
  namespace: string,
  name: string,
  labels: Record<string, string>,
  phase = "Running",
): KubeObject {
  return { metadata: { name, namespace, labels }, status: { phase } };
}

const PODS = [
  pod("web", "web-a", { app: "web" }),
  pod("web", "web-b", { app: "web", tier: "b" }),
  pod("web", "web-c", { app: "other" }),
  pod("web", "web-done", { app: "web" }, "Succeeded"),
  pod("other", "x", {}),
];

const NODES: KubeObject[] = [
  { metadata: { name: "n1", labels: { zone: "a" } } },
  { metadata: { name: "n2", labels: { zone: "b" } } },
  { metadata: { name: "n3" } },
];

const BASE = "/apis/metrics.k8s.io/v1beta1";

let scraped: ScrapedExporter;
let prom: RealPrometheus;
let dir: string;
let serving: PrometheusAdapterServing;
let app: ApiApp;
const sent: string[] = [];

before(async () => {
  scraped = await scrapedExporter(() => EXPOSITION, "mem_usage");
  prom = scraped.prom;
  dir = await mkdtemp(join(tmpdir(), "padapter-resource-"));
  const path = join(dir, "config.yaml");
  await writeFile(path, CONFIG);
  const recording: typeof fetch = (input, init) => {
    const url = new URL(String(input));
    const params = init?.method === "POST"
      ? new URLSearchParams(String(init.body))
      : url.searchParams;
    if (url.pathname === "/api/v1/query") sent.push(params.get("query")!);
    return fetch(input, init);
  };
  serving = await PrometheusAdapterServing.start({
    ...servingOptions(path, { url: prom.url, fetch: recording, logger: memoryLogger() }),
  });
  app = createApp({
    store: new MetricStore(),
    pods: {
      listPods: (ns) => PODS.filter((p) => p.metadata.namespace === ns),
      listAllPods: () => PODS,
    },
    nodes: { listNodes: () => NODES },
    now: () => Date.now(),
    ready: () => true,
    prometheusAdapter: serving,
    resourceMetrics: serving,
  });
});

after(async () => {
  await serving?.stop();
  await scraped?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function get(path: string): Promise<{ status: number; body: any }> {
  const res = await app.request(path);
  return { status: res.status, body: await res.json() };
}

/** The body with its timestamps checked (recent, RFC 3339 seconds) and removed. */
function withoutTimes(body: any): any {
  const check = (t: string) => {
    assert.match(t, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const age = Date.now() - Date.parse(t);
    assert.ok(age >= -1000 && age < 60_000, `${t} is not recent`);
  };
  for (const item of body.items ?? [body]) {
    check(item.timestamp);
    check(item.metadata.creationTimestamp);
    delete item.timestamp;
    delete item.metadata.creationTimestamp;
  }
  return body;
}

describe("metrics.k8s.io from resourceRules against the real Prometheus", () => {
  it("lists the group and its nodes and pods resources as metrics-server's API does", async () => {
    const groups = await get("/apis");
    assert.deepEqual(groups.body.groups.map((g: any) => g.name), [
      "custom.metrics.k8s.io",
      "external.metrics.k8s.io",
      "metrics.k8s.io",
    ]);
    assert.deepEqual((await get("/apis/metrics.k8s.io")).body, {
      kind: "APIGroup",
      apiVersion: "v1",
      name: "metrics.k8s.io",
      versions: [{ groupVersion: "metrics.k8s.io/v1beta1", version: "v1beta1" }],
      preferredVersion: { groupVersion: "metrics.k8s.io/v1beta1", version: "v1beta1" },
    });
    assert.deepEqual((await get(BASE)).body, {
      kind: "APIResourceList",
      apiVersion: "v1",
      groupVersion: "metrics.k8s.io/v1beta1",
      resources: [
        {
          name: "nodes",
          singularName: "",
          namespaced: false,
          kind: "NodeMetrics",
          verbs: ["get", "list"],
        },
        {
          name: "pods",
          singularName: "",
          namespaced: true,
          kind: "PodMetrics",
          verbs: ["get", "list"],
        },
      ],
    });
  });

  it("reads one pod: per-container usage, cpu DecimalSI milli, memory BinarySI, the window", async () => {
    const { status, body } = await get(`${BASE}/namespaces/web/pods/web-a`);
    assert.equal(status, 200);
    assert.deepEqual(withoutTimes(body), {
      kind: "PodMetrics",
      apiVersion: "metrics.k8s.io/v1beta1",
      metadata: { name: "web-a", namespace: "web", labels: { app: "web" } },
      window: "5m0s",
      containers: [
        { name: "app", usage: { cpu: "250m", memory: "1Mi" } },
        // no memory sample: 0, as upstream fills it
        { name: "sidecar", usage: { cpu: "1m", memory: "0" } },
      ],
    });
    // one query pair for the namespace's running pods, grouped by pod and container
    assert.deepEqual(sent.slice(0, 2).sort(), [
      'sum(cpu_usage{namespace="web",pod=~"web-a|web-b|web-c"}) by (pod,container)',
      'sum(mem_usage{namespace="web",pod=~"web-a|web-b|web-c"}) by (pod,container)',
    ]);
  });

  it("serves the namespace's other reads from the cache, on the fast path, without a query", async () => {
    const before = sent.length;
    const { status, body } = await get(`${BASE}/namespaces/web/pods?labelSelector=app%3Dweb`);
    assert.equal(status, 200);
    assert.deepEqual(withoutTimes(body), {
      kind: "PodMetricsList",
      apiVersion: "metrics.k8s.io/v1beta1",
      metadata: {},
      items: [
        {
          metadata: { name: "web-a", namespace: "web", labels: { app: "web" } },
          window: "5m0s",
          containers: [
            { name: "app", usage: { cpu: "250m", memory: "1Mi" } },
            { name: "sidecar", usage: { cpu: "1m", memory: "0" } },
          ],
        },
        {
          metadata: { name: "web-b", namespace: "web", labels: { app: "web", tier: "b" } },
          window: "5m0s",
          containers: [
            // under 1Ki a BinarySI quantity is written in decimal
            { name: "app", usage: { cpu: "1500m", memory: "1k" } },
            { name: "init", usage: { cpu: "0", memory: "2Ki" } },
          ],
        },
      ],
    });
    const fast = app.fastFetch({
      method: "GET",
      url: `${BASE}/namespaces/web/pods?fieldSelector=metadata.name%3Dweb-b`,
      headers: {},
    } as any);
    assert.equal(fast?.status, 200);
    assert.deepEqual(
      JSON.parse(fast!.body).items.map((i: any) => i.metadata.name),
      ["web-b"],
    );
    assert.equal(sent.length, before);
  });

  it("leaves out pods without samples and pods not running; a get of them is 404", async () => {
    const { body } = await get(`${BASE}/namespaces/web/pods`);
    assert.deepEqual(body.items.map((i: any) => i.metadata.name), ["web-a", "web-b"]);
    const missing = await get(`${BASE}/namespaces/web/pods/web-c`);
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.body, {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: 'podmetrics.metrics.k8s.io "web/web-c" not found',
      reason: "NotFound",
      details: { name: "web/web-c", group: "metrics.k8s.io", kind: "podmetrics" },
      code: 404,
    });
    const done = await get(`${BASE}/namespaces/web/pods/web-done`);
    assert.equal(done.status, 404);
    assert.equal(done.body.message, 'pods "web-done" not found');
    assert.deepEqual(done.body.details, { name: "web-done", kind: "pods" });
  });

  it("lists the pods of every namespace, sorted by namespace and name", async () => {
    const { status, body } = await get(`${BASE}/pods`);
    assert.equal(status, 200);
    assert.deepEqual(
      body.items.map((i: any) => `${i.metadata.namespace}/${i.metadata.name}`),
      ["other/x", "web/web-a", "web/web-b"],
    );
    assert.deepEqual(body.items[0].containers, [
      { name: "app", usage: { cpu: "2", memory: "3Mi" } },
    ]);
    assert.equal(body.items[0].metadata.labels, undefined);
  });

  it("reads nodes with one nodeQuery each for cpu and memory; a node without samples is left out", async () => {
    const before = sent.length;
    const { status, body } = await get(`${BASE}/nodes`);
    assert.equal(status, 200);
    assert.deepEqual(withoutTimes(body), {
      kind: "NodeMetricsList",
      apiVersion: "metrics.k8s.io/v1beta1",
      metadata: {},
      items: [
        {
          metadata: { name: "n1", labels: { zone: "a" } },
          window: "5m0s",
          usage: { cpu: "3750m", memory: "8Gi" },
        },
        {
          metadata: { name: "n2", labels: { zone: "b" } },
          window: "5m0s",
          usage: { cpu: "500m", memory: "1500500m" },
        },
      ],
    });
    assert.deepEqual(sent.slice(before).sort(), [
      'sum(cpu_usage{node=~"n1|n2|n3",id="/"}) by (node)',
      'sum(mem_usage{node=~"n1|n2|n3",id="/"}) by (node)',
    ]);
    const one = await get(`${BASE}/nodes/n2?labelSelector=zone%3Da`);
    assert.equal(one.status, 200);
    assert.equal(one.body.kind, "NodeMetrics");
    assert.equal(one.body.metadata.name, "n2");
    const selected = await get(`${BASE}/nodes?labelSelector=zone%3Da`);
    assert.deepEqual(selected.body.items.map((i: any) => i.metadata.name), ["n1"]);
    const none = await get(`${BASE}/nodes/n3`);
    assert.equal(none.status, 404);
    assert.equal(none.body.message, 'nodemetrics.metrics.k8s.io "n3" not found');
    const unknown = await get(`${BASE}/nodes/n9`);
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.message, 'node "n9" not found');
    assert.deepEqual(unknown.body.details, { name: "n9", kind: "node" });
    assert.equal(sent.length, before + 2);
  });

  it("answers 400 for a bad fieldSelector and 404 for paths it does not serve", async () => {
    const bad = await get(`${BASE}/nodes?fieldSelector=metadata.name`);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.reason, "BadRequest");
    assert.equal((await get(`${BASE}/namespaces/web/nodes`)).status, 404);
    assert.equal((await get(`${BASE}/namespaces/web/pods/web-a/x`)).status, 404);
    const post = await app.request(`${BASE}/nodes`, { method: "POST" });
    assert.equal(post.status, 405);
  });
});

describe("metrics.k8s.io follows the config file", () => {
  it("stops serving the group once a reload drops resourceRules, and serves it again after", async () => {
    const path = join(dir, "reload.yaml");
    await writeFile(path, CONFIG);
    const reloading = await PrometheusAdapterServing.start({
      ...servingOptions(path, { url: prom.url, fetch, logger: memoryLogger() }),
    });
    try {
      const a = createApp({
        store: new MetricStore(),
        pods: { listPods: () => [] },
        nodes: { listNodes: () => NODES },
        now: () => Date.now(),
        ready: () => true,
        resourceMetrics: reloading,
      });
      assert.equal((await a.request(`${BASE}/nodes/n1`)).status, 200);
      await writeFile(path, "rules: []\n");
      await reloading.reloadConfig();
      assert.equal((await a.request(`${BASE}/nodes/n1`)).status, 404);
      assert.equal((await a.request(BASE)).status, 404);
      await writeFile(path, CONFIG);
      await reloading.reloadConfig();
      assert.equal((await a.request(`${BASE}/nodes/n1`)).status, 200);
    } finally {
      await reloading.stop();
    }
  });
});

describe("metrics.k8s.io when Prometheus fails", () => {
  it("keeps the last answer for its TTL, then leaves the objects out", async () => {
    let fail = false;
    let queries = 0;
    const fake = await startServer("127.0.0.1", 0, (req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      if (url.pathname === "/api/v1/query") {
        queries++;
        if (fail) {
          res.writeHead(503, { "content-type": "application/json" });
          res.end('{"status":"error","errorType":"unavailable","error":"down"}');
          return;
        }
        const node = (name: string, v: string) => ({ metric: { node: name }, value: [1, v] });
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({
          status: "success",
          data: { resultType: "vector", result: [node("n1", "2"), node("n2", "1024")] },
        }));
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"status":"success","data":[]}');
    });
    const path = join(dir, "failing.yaml");
    await writeFile(path, CONFIG);
    let clock = Date.now();
    const failing = await PrometheusAdapterServing.start({
      configPath: path,
      readConfig: () => readFile(path, "utf8"),
      client: new PrometheusClient({ url: `http://127.0.0.1:${fake.port}` }),
      fetch,
      relistIntervalSeconds: 600,
      maxAgeSeconds: 600,
      configPollSeconds: 600,
      collectionIntervalSeconds: 600,
      ttlSeconds: 60,
      maxQueryLength: 8192,
      queryTimeoutSeconds: 10,
      maxBytes: 1 << 20,
      now: () => clock,
      logger: memoryLogger(),
    });
    try {
      const nodes: KubeObject[] = [{ metadata: { name: "n1" } }];
      const a = createApp({
        store: new MetricStore(),
        pods: { listPods: () => [] },
        nodes: { listNodes: () => nodes },
        now: () => clock,
        ready: () => true,
        resourceMetrics: failing,
      });
      const names = async () =>
        (await (await a.request(`${BASE}/nodes`)).json()).items.map((i: any) => i.metadata.name);
      assert.deepEqual(await names(), ["n1"]);
      assert.equal(queries, 2);
      fail = true;
      // a new node makes a collection, which fails: the last answer serves (n2 is left out)
      nodes.push({ metadata: { name: "n2" } });
      clock += 30_000;
      assert.deepEqual(await names(), ["n1"]);
      assert.ok(queries > 2, "no collection for the new node");
      // past the TTL the failure is the answer: no node has metrics, the list is still a 200
      clock += 31_000;
      const res = await a.request(`${BASE}/nodes`);
      assert.equal(res.status, 200);
      assert.deepEqual((await res.json()).items, []);
      assert.equal((await a.request(`${BASE}/nodes/n1`)).status, 404);
      fail = false;
      clock += 61_000;
      assert.deepEqual(await names(), ["n1", "n2"]);
    } finally {
      await failing.stop();
      await fake.close();
    }
  });
});
