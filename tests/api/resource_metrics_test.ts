/**
 * metrics.k8s.io/v1beta1 as the API serves it from a resource metrics source (the engine's
 * prometheus-adapter `resourceRules` cache is replaced by a fake here): the group served only
 * while the source has rules, PodMetrics/NodeMetrics bodies, what a failed collection does,
 * `fieldSelector`, Go durations, and authorization attributes of its URLs.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../../src/api/app.ts";
import type { AdapterResult } from "../../src/api/prometheus_adapter.ts";
import { requestAttributes } from "../../src/api/request_attributes.ts";
import {
  goDuration,
  type NodeMetricsRead,
  type PodMetricsRead,
  type ResourceMetricsSource,
} from "../../src/api/resource_metrics.ts";
import type { KubeObject } from "../../src/cluster/types.ts";
import type { NodeUsage, PodUsage } from "../../src/core/prometheus_adapter/resource.ts";
import { MetricStore } from "../../src/store/store.ts";
import { serveForTest, type TestServer } from "./serve_helper.ts";

const T = Date.parse("2026-01-02T03:04:05.678Z");
const BASE = "/apis/metrics.k8s.io/v1beta1";

class FakeSource implements ResourceMetricsSource {
  served = true;
  podReads: PodMetricsRead[] = [];
  nodeReads: NodeMetricsRead[] = [];
  pods = new Map<string, AdapterResult<PodUsage>>();
  nodes: AdapterResult<NodeUsage> = { items: [] };
  resourceMetricsServed(): boolean {
    return this.served;
  }
  podMetrics(read: PodMetricsRead): AdapterResult<PodUsage> {
    this.podReads.push(read);
    return this.pods.get(read.namespace) ?? { items: [] };
  }
  nodeMetrics(read: NodeMetricsRead): AdapterResult<NodeUsage> {
    this.nodeReads.push(read);
    return this.nodes;
  }
}

function pod(ns: string, name: string, phase = "Running"): KubeObject {
  return { metadata: { name, namespace: ns, labels: { app: name } }, status: { phase } };
}

function usage(ns: string, name: string): PodUsage {
  return {
    namespace: ns,
    name,
    timestamp: T,
    windowSeconds: 30,
    containers: [{ name: "c", cpu: "10m", memory: "1Ki" }],
  };
}

function app(source: FakeSource, pods: KubeObject[], nodes: KubeObject[] = []) {
  return createApp({
    store: new MetricStore(),
    pods: {
      listPods: (ns) => pods.filter((p) => p.metadata.namespace === ns),
      listAllPods: () => pods,
    },
    nodes: { listNodes: () => nodes },
    now: () => T,
    ready: () => true,
    resourceMetrics: source,
  });
}

async function get(a: ReturnType<typeof app>, path: string) {
  const res = await a.request(path);
  return { status: res.status, body: await res.json() };
}

describe("metrics.k8s.io served from a resource metrics source", () => {
  it("is served only while the source has resourceRules", async () => {
    const source = new FakeSource();
    const a = app(source, []);
    assert.equal((await get(a, BASE)).status, 200);
    source.served = false;
    assert.equal((await get(a, BASE)).status, 404);
    assert.equal((await get(a, `${BASE}/nodes`)).status, 404);
    assert.deepEqual(
      (await get(a, "/apis")).body.groups.map((g: { name: string }) => g.name),
      ["custom.metrics.k8s.io", "external.metrics.k8s.io"],
    );
    const none = createApp({
      store: new MetricStore(),
      pods: { listPods: () => [] },
      now: () => T,
      ready: () => true,
    });
    assert.equal((await none.request(BASE)).status, 404);
  });

  it("writes a PodMetrics as Go does: metadata order, creationTimestamp now, whole seconds", async () => {
    const source = new FakeSource();
    source.pods.set("ns", { items: [usage("ns", "a")] });
    const res = await app(source, [pod("ns", "a")]).request(`${BASE}/namespaces/ns/pods/a`);
    assert.equal(
      await res.text(),
      '{"kind":"PodMetrics","apiVersion":"metrics.k8s.io/v1beta1","metadata":{"name":"a","namespace":"ns","creationTimestamp":"2026-01-02T03:04:05Z","labels":{"app":"a"}},"timestamp":"2026-01-02T03:04:05Z","window":"30s","containers":[{"name":"c","usage":{"cpu":"10m","memory":"1Ki"}}]}',
    );
    assert.equal(res.headers.get("content-type"), "application/json");
  });

  it("asks the source per namespace for the wanted pods, collecting every running pod", async () => {
    const source = new FakeSource();
    source.pods.set("a", { items: [usage("a", "p2")] });
    source.pods.set("b", Promise.resolve({ items: [usage("b", "p1")] }));
    const pods = [pod("b", "p1"), pod("a", "p2"), pod("a", "p3"), pod("a", "p4", "Pending")];
    const { status, body } = await get(app(source, pods), `${BASE}/pods`);
    assert.equal(status, 200);
    assert.deepEqual(
      body.items.map((i: any) => `${i.metadata.namespace}/${i.metadata.name}`),
      ["a/p2", "b/p1"],
    );
    assert.deepEqual(
      source.podReads.map((r) => [r.namespace, r.wanted, r.names()]),
      [["b", ["p1"], ["p1"]], ["a", ["p2", "p3"], ["p2", "p3"]]],
    );
  });

  it("leaves out the pods of a namespace whose collection failed (a list still answers 200)", async () => {
    const source = new FakeSource();
    source.pods.set("a", { internalError: "unable to fetch metrics" });
    source.pods.set("b", { items: [usage("b", "p1")] });
    const a = app(source, [pod("a", "p0"), pod("b", "p1")]);
    const { status, body } = await get(a, `${BASE}/pods`);
    assert.equal(status, 200);
    assert.deepEqual(body.items.map((i: any) => i.metadata.name), ["p1"]);
    assert.equal((await get(a, `${BASE}/namespaces/a/pods/p0`)).status, 404);
  });

  it("filters by fieldSelector on metadata.name and metadata.namespace (=, ==, !=)", async () => {
    const source = new FakeSource();
    source.pods.set("a", { items: [usage("a", "p1"), usage("a", "p2")] });
    source.pods.set("b", { items: [usage("b", "p1")] });
    const a = app(source, [pod("a", "p1"), pod("a", "p2"), pod("b", "p1")]);
    const names = async (q: string) =>
      (await get(a, `${BASE}/pods?fieldSelector=${encodeURIComponent(q)}`)).body.items.map((
        i: any,
      ) => `${i.metadata.namespace}/${i.metadata.name}`);
    assert.deepEqual(await names("metadata.name=p1"), ["a/p1", "b/p1"]);
    assert.deepEqual(await names("metadata.name==p1,metadata.namespace!=a"), ["b/p1"]);
    assert.deepEqual(await names("metadata.uid=x"), []);
    assert.deepEqual(await names(""), ["a/p1", "a/p2", "b/p1"]);
    const bad = await get(a, `${BASE}/pods?fieldSelector=nope`);
    assert.equal(bad.status, 400);
    assert.equal(
      bad.body.message,
      "invalid selector: 'nope'; can't understand 'nope'",
    );
  });

  it("writes NodeMetrics without a namespace, and an empty list as items: []", async () => {
    const source = new FakeSource();
    source.nodes = {
      items: [{ name: "n1", timestamp: T, windowSeconds: 300, cpu: "1", memory: "2Gi" }],
    };
    const a = app(source, [], [{ metadata: { name: "n1" } }]);
    const res = await a.request(`${BASE}/nodes`);
    assert.equal(
      await res.text(),
      '{"kind":"NodeMetricsList","apiVersion":"metrics.k8s.io/v1beta1","metadata":{},"items":[{"metadata":{"name":"n1","creationTimestamp":"2026-01-02T03:04:05Z"},"timestamp":"2026-01-02T03:04:05Z","window":"5m0s","usage":{"cpu":"1","memory":"2Gi"}}]}',
    );
    const empty = await a.request(`${BASE}/nodes?labelSelector=x%3Dy`);
    assert.equal(
      await empty.text(),
      '{"kind":"NodeMetricsList","apiVersion":"metrics.k8s.io/v1beta1","metadata":{},"items":[]}',
    );
  });

  it("answers 503 before the initial sync, as the other reads do", async () => {
    const a = createApp({
      store: new MetricStore(),
      pods: { listPods: () => [] },
      now: () => T,
      ready: () => false,
      resourceMetrics: new FakeSource(),
    });
    assert.equal((await a.request(`${BASE}/nodes`)).status, 503);
  });
});

describe("goDuration", () => {
  it("writes durations as Go's time.Duration String does", () => {
    const cases: [number, string][] = [
      [0, "0s"],
      [30, "30s"],
      [300, "5m0s"],
      [3600, "1h0m0s"],
      [5400.5, "1h30m0.5s"],
      [1.5, "1.5s"],
      [0.25, "250ms"],
      [86400 * 7, "168h0m0s"],
    ];
    for (const [s, want] of cases) assert.equal(goDuration(s), want, `${s}s`);
  });
});

describe("authorization attributes of metrics.k8s.io URLs", () => {
  it("are resource requests on pods and nodes of the group, get or list", () => {
    const attrs = (path: string) => {
      const a = requestAttributes("GET", new URL(`https://x${path}`));
      return [a.verb, a.apiGroup, a.namespace, a.resource, a.name];
    };
    assert.deepEqual(attrs(`${BASE}/namespaces/ns/pods/p`), [
      "get",
      "metrics.k8s.io",
      "ns",
      "pods",
      "p",
    ]);
    assert.deepEqual(attrs(`${BASE}/namespaces/ns/pods`), [
      "list",
      "metrics.k8s.io",
      "ns",
      "pods",
      "",
    ]);
    assert.deepEqual(attrs(`${BASE}/pods`), ["list", "metrics.k8s.io", "", "pods", ""]);
    assert.deepEqual(attrs(`${BASE}/nodes/n1`), ["get", "metrics.k8s.io", "", "nodes", "n1"]);
  });
});

describe("kubectl top against metrics.k8s.io", () => {
  const KUBECTL = process.env.KUBECTL ?? "/usr/bin/kubectl";
  let server: TestServer;
  let dir: string;

  before(async () => {
    if (!existsSync(KUBECTL)) throw new Error(`kubectl is missing at ${KUBECTL}: set KUBECTL`);
    const source = new FakeSource();
    source.pods.set("default", {
      items: [{
        namespace: "default",
        name: "web-1",
        timestamp: T,
        windowSeconds: 300,
        containers: [
          { name: "app", cpu: "250m", memory: "64Mi" },
          { name: "sidecar", cpu: "5m", memory: "16Mi" },
        ],
      }],
    });
    source.nodes = {
      items: [{ name: "n1", timestamp: T, windowSeconds: 300, cpu: "1500m", memory: "2Gi" }],
    };
    server = await serveForTest(
      app(source, [pod("default", "web-1")], [{ metadata: { name: "n1" } }]),
    );
    dir = mkdtempSync(join(tmpdir(), "kubectl-top-"));
    writeFileSync(
      join(dir, "config"),
      "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n",
    );
  });

  after(async () => {
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function kubectl(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      execFile(
        KUBECTL,
        [
          `--kubeconfig=${join(dir, "config")}`,
          `--cache-dir=${join(dir, "cache")}`,
          `--server=${server.url}`,
          "--request-timeout=10s",
          ...args,
        ],
        { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir }, timeout: 30_000 },
        (err, stdout, stderr) => {
          const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
          resolve({ code, stdout: String(stdout), stderr: String(stderr) });
        },
      );
    });
  }

  // (kubectl top node reads the core API's nodes too, which this app does not serve)
  it("prints pods and their containers", async () => {
    const r = await kubectl("top", "pod", "--namespace=default", "--containers");
    assert.equal(r.stderr, "");
    assert.equal(r.code, 0);
    assert.deepEqual(r.stdout.trim().split("\n").map((l) => l.trim().split(/\s+/)), [
      ["POD", "NAME", "CPU(cores)", "MEMORY(bytes)"],
      ["web-1", "app", "250m", "64Mi"],
      ["web-1", "sidecar", "5m", "16Mi"],
    ]);
  });
});
