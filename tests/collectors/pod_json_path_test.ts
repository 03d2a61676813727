import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  createPodJsonPathFactory,
  mapBounded,
  podJsonPathFactory,
  podMetricsUrl,
  selectReadyPods,
} from "../../src/collectors/pod_json_path.ts";
import type { ClusterView } from "../../src/cluster/types.ts";
import type { CollectContext } from "../../src/collectors/types.ts";
import type { MetricPlan } from "../../src/core/types.ts";
import { MemoryCluster, readyPod } from "../engine/support.ts";
import { json, startServers } from "./servers.ts";

const NOW = Date.parse("2024-03-04T10:00:00Z");

function plan(config: Record<string, string>, overrides: Partial<MetricPlan> = {}): MetricPlan {
  return {
    hpa: { namespace: "default", name: "web" },
    index: 0,
    metricType: "Pods",
    metricName: "rps",
    metricSelector: null,
    target: { type: "AverageValue", averageValue: "10" },
    describedObject: null,
    scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
    collector: "json-path",
    intervalSeconds: 60,
    perReplica: false,
    minPodReadyAgeSeconds: 0,
    config,
    error: null,
    ...overrides,
  };
}

function deployment(): MemoryCluster {
  const cluster = new MemoryCluster();
  cluster.set("Deployment", {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: "default" },
    spec: {
      selector: {
        matchLabels: { app: "web" },
        matchExpressions: [{ key: "track", operator: "NotIn", values: ["canary"] }],
      },
    },
  });
  return cluster;
}

function ctx(cluster: MemoryCluster, signal = new AbortController().signal): CollectContext {
  return { signal, now: () => NOW, fetch: (i, init) => fetch(i, init), cluster };
}

describe("podMetricsUrl", () => {
  const cases: [
    string,
    { scheme: string; port: number; path: string; rawQuery: string },
    string,
  ][] = [
    [
      "10.2.3.4",
      { scheme: "http", port: 9090, path: "/metrics", rawQuery: "" },
      "http://10.2.3.4:9090/metrics",
    ],
    [
      "fd00::12",
      { scheme: "http", port: 9090, path: "/metrics", rawQuery: "" },
      "http://[fd00::12]:9090/metrics",
    ],
    [
      "10.2.3.4",
      { scheme: "https", port: 443, path: "stats", rawQuery: "a=1&b=2" },
      "https://10.2.3.4:443/stats?a=1&b=2",
    ],
    ["10.2.3.4", { scheme: "http", port: 80, path: "", rawQuery: "" }, "http://10.2.3.4:80"],
  ];
  for (const [ip, opts, want] of cases) {
    it(`formats ${want}`, () => assert.equal(podMetricsUrl(ip, opts), want));
  }
});

describe("selectReadyPods", () => {
  it("keeps Ready pods of the selector and skips unready, deleting, young and unselected ones", () => {
    const cluster = deployment();
    cluster.set("Pod", readyPod("ok", { ip: "127.0.0.2" }));
    cluster.set("Pod", readyPod("unready", { ip: "127.0.0.3", ready: false }));
    cluster.set("Pod", readyPod("deleting", { ip: "127.0.0.4", deleting: true }));
    cluster.set("Pod", readyPod("young", { ip: "127.0.0.5", readySince: "2024-03-04T09:59:50Z" }));
    cluster.set(
      "Pod",
      readyPod("canary", { ip: "127.0.0.6", labels: { app: "web", track: "canary" } }),
    );
    cluster.set("Pod", readyPod("other", { ip: "127.0.0.7", labels: { app: "api" } }));
    cluster.set("Pod", readyPod("elsewhere", { ip: "127.0.0.8", namespace: "prod" }));
    const sel = selectReadyPods(cluster, {
      namespace: "default",
      scaleTargetRef: { kind: "Deployment", name: "web" },
      minReadyAgeSeconds: 30,
      now: NOW,
    });
    assert.deepEqual(sel.pods.map((p) => p.metadata.name), ["ok"]);
    assert.deepEqual(sel.skipped, [
      { name: "unready", reason: "not Ready" },
      { name: "deleting", reason: "being deleted" },
      { name: "young", reason: "Ready for 10s, less than 30s" },
    ]);
  });

  it("reads the namespace's pods again only when one of them or the workload changed", () => {
    // the view of a cluster: a change counter per kind and namespace, and its lists counted
    const cluster = deployment();
    let version = 0;
    let lists = 0;
    const view: ClusterView = {
      ensure: (kind) => cluster.ensure(kind),
      get: (kind, namespace, name) => cluster.get(kind, namespace, name),
      watch: (kind, handler) => cluster.watch(kind, handler),
      close: () => cluster.close(),
      version: () => version,
      list: (kind, namespace) => {
        lists++;
        return cluster.list(kind, namespace);
      },
    };
    cluster.set("Pod", readyPod("a", { ip: "127.0.0.2" }));
    cluster.set("Pod", readyPod("other", { ip: "127.0.0.3", labels: { app: "api" } }));
    const names = () =>
      selectReadyPods(view, {
        namespace: "default",
        scaleTargetRef: { kind: "Deployment", name: "web" },
        minReadyAgeSeconds: 0,
        now: NOW,
      }).pods.map((p) => p.metadata.name);
    assert.deepEqual(names(), ["a"]);
    assert.deepEqual(names(), ["a"]);
    assert.equal(lists, 1, "the second collection reads no pod list");
    // a pod comes: the namespace's counter changes
    cluster.set("Pod", readyPod("b", { ip: "127.0.0.4" }));
    assert.deepEqual(names(), ["a"], "the counter did not change: the selection stands");
    version++;
    assert.deepEqual(names(), ["a", "b"]);
    assert.equal(lists, 2);
    // a pod turns unready: selected by labels, skipped as before, on every read
    cluster.set("Pod", readyPod("b", { ip: "127.0.0.4", ready: false }));
    version++;
    assert.deepEqual(names(), ["a"]);
    assert.equal(lists, 3);
    // the workload's selector changes (a new object): selected anew at the same counter
    cluster.set("Deployment", {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web", namespace: "default" },
      spec: { selector: { matchLabels: { app: "api" } } },
    });
    assert.deepEqual(names(), ["other"]);
    assert.equal(lists, 4);
  });

  it("names a missing scale target", () => {
    assert.throws(
      () =>
        selectReadyPods(new MemoryCluster(), {
          namespace: "default",
          scaleTargetRef: { kind: "StatefulSet", name: "db" },
          minReadyAgeSeconds: 0,
          now: NOW,
        }),
      { message: "StatefulSet default/db not found" },
    );
  });
});

describe("pod json-path collector", () => {
  it("collects one sample per ready pod and warns about a pod that times out", async () => {
    const hosts = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6"];
    const srv = await startServers(hosts, (host, req, res) => {
      if (host === "127.0.0.5") return; // never answers
      assert.equal(req.url, "/metrics?format=json");
      json(res, { http: { rps: Number(host.split(".")[3]) * 1.5 } });
    });
    try {
      const cluster = deployment();
      cluster.set("Pod", readyPod("web-2", { ip: "127.0.0.2" }));
      cluster.set("Pod", readyPod("web-3", { ip: "127.0.0.3" }));
      cluster.set("Pod", readyPod("web-4", { ip: "127.0.0.4", ready: false }));
      cluster.set("Pod", readyPod("web-5", { ip: "127.0.0.5" }));
      cluster.set("Pod", readyPod("web-6", { ip: "127.0.0.6", deleting: true }));
      const collector = podJsonPathFactory.create({
        plan: plan({
          "json-key": "$.http.rps",
          port: String(srv.port),
          path: "/metrics",
          "raw-query": "format=json",
          "request-timeout": "300ms",
        }),
      });
      const result = await collector.collect(ctx(cluster));
      assert.deepEqual(result.samples, [
        { objectName: "web-2", value: 3, timestamp: NOW },
        { objectName: "web-3", value: 4.5, timestamp: NOW },
      ]);
      assert.deepEqual(result.warnings, [
        `failed to get metric rps from pod default/web-5: request to http://127.0.0.5:${srv.port}/metrics?format=json failed: timed out after 0.3s`,
      ]);
    } finally {
      await srv.close();
    }
  });

  it("fails when every pod fails", async () => {
    const srv = await startServers(["127.0.0.2", "127.0.0.3"], (_h, _req, res) => {
      res.writeHead(503, "Service Unavailable");
      res.end();
    });
    try {
      const cluster = deployment();
      cluster.set("Pod", readyPod("web-2", { ip: "127.0.0.2" }));
      cluster.set("Pod", readyPod("web-3", { ip: "127.0.0.3" }));
      const collector = podJsonPathFactory.create({
        plan: plan({ "json-key": "$.rps", port: String(srv.port) }),
      });
      await assert.rejects(collector.collect(ctx(cluster)), {
        message:
          `all 2 pods failed; first: failed to get metric rps from pod default/web-2: unsuccessful response "503 Service Unavailable" from http://127.0.0.2:${srv.port}`,
      });
    } finally {
      await srv.close();
    }
  });

  it("bounds concurrent pod requests by --max-concurrent-pod-requests", async () => {
    const hosts = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6", "127.0.0.7"];
    let inFlight = 0;
    let peak = 0;
    const srv = await startServers(hosts, (_h, _req, res) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      setTimeout(() => {
        inFlight--;
        json(res, { v: 1 });
      }, 40);
    });
    try {
      const cluster = deployment();
      hosts.forEach((ip, i) => cluster.set("Pod", readyPod(`web-${i}`, { ip })));
      const collector = createPodJsonPathFactory({ maxConcurrentPodRequests: 2 }).create({
        plan: plan({ "json-key": "$.v", port: String(srv.port) }),
      });
      const result = await collector.collect(ctx(cluster));
      assert.equal(result.samples.length, 6);
      assert.equal(peak, 2);
    } finally {
      await srv.close();
    }
  });

  it("refuses a response larger than --max-response-bytes", async () => {
    const srv = await startServers(["127.0.0.2", "127.0.0.3"], (host, _req, res) => {
      json(res, host === "127.0.0.2" ? { v: 1, pad: "x".repeat(200) } : { v: 2 });
    });
    try {
      const cluster = deployment();
      cluster.set("Pod", readyPod("big", { ip: "127.0.0.2" }));
      cluster.set("Pod", readyPod("small", { ip: "127.0.0.3" }));
      const collector = createPodJsonPathFactory({ maxResponseBytes: 100 }).create({
        plan: plan({ "json-key": "$.v", port: String(srv.port) }),
      });
      const result = await collector.collect(ctx(cluster));
      assert.deepEqual(result.samples, [{ objectName: "small", value: 2, timestamp: NOW }]);
      assert.deepEqual(result.warnings, [
        `failed to get metric rps from pod default/big: response from http://127.0.0.2:${srv.port} exceeds 100 bytes`,
      ]);
    } finally {
      await srv.close();
    }
  });

  it("rejects unusable configs at creation", () => {
    const cases: [Record<string, string>, string][] = [
      [
        { "json-key": "$.v" },
        "Pods metric `rps` of HPA default/web needs annotation metric-config.pods.rps.json-path/port",
      ],
      [
        { "json-key": "$.v", port: "http" },
        'invalid port "http" for Pods metric `rps` of HPA default/web (annotation metric-config.pods.rps.json-path/port): want a number from 1 to 65535',
      ],
      [
        { "json-key": "$.v", port: "80", scheme: "ftp" },
        'invalid scheme "ftp" for Pods metric `rps` of HPA default/web (annotation metric-config.pods.rps.json-path/scheme): want http or https',
      ],
      [
        { "json-key": "$.v", port: "80", "request-timeout": "5" },
        'invalid request-timeout "5" for Pods metric `rps` of HPA default/web (annotation metric-config.pods.rps.json-path/request-timeout): want a Go duration like 2s or 500ms',
      ],
    ];
    for (const [config, message] of cases) {
      assert.throws(() => podJsonPathFactory.create({ plan: plan(config) }), {
        message,
      });
    }
  });

  it("shares the query key only for the same target and config", () => {
    const a = podJsonPathFactory.create({
      plan: plan({ "json-key": "$.v", port: "80" }),
    });
    const b = podJsonPathFactory.create({
      plan: plan({ "json-key": "$.v", port: "80" }, {
        hpa: { namespace: "default", name: "other" },
      }),
    });
    const c = podJsonPathFactory.create({
      plan: plan({ "json-key": "$.w", port: "80" }),
    });
    assert.equal(a.queryKey, b.queryKey);
    assert.notEqual(a.queryKey, c.queryKey);
    assert.deepEqual(a.kinds, ["Pod", "Deployment"]);
  });
});

/** A pod fetch: hosts in `answer` reply `{"v": <last octet>}` at once, others wait for the abort. */
function podFetch(answer: ReadonlySet<string>): typeof fetch {
  return (input, init) => {
    const host = new URL(String(input)).hostname;
    if (answer.has(host)) {
      const body = JSON.stringify({ v: Number(host.split(".")[3]) });
      return Promise.resolve(new Response(body, { status: 200 }));
    }
    return new Promise((_resolve, reject) => {
      const signal = init?.signal;
      if (signal?.aborted) return reject(signal.reason);
      signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
  };
}

describe("pod json-path collector deadline", () => {
  const cases: [string, number, number, number][] = [
    // name, pods, interval (s), want ms at request-timeout 5s and 2 requests in flight
    ["no pods: one request timeout", 0, 60, 5_000],
    ["pods for one round", 2, 60, 5_000],
    ["pods for two rounds", 3, 60, 10_000],
    ["capped at the interval", 5, 12, 12_000],
    ["never under one request timeout", 1, 2, 5_000],
  ];
  for (const [name, pods, interval, want] of cases) {
    it(`reports its timeout: ${name}`, () => {
      const cluster = deployment();
      for (let i = 0; i < pods; i++) {
        cluster.set("Pod", readyPod(`web-${i}`, { ip: `10.0.0.${i + 1}` }));
      }
      const collector = createPodJsonPathFactory({ maxConcurrentPodRequests: 2 }).create({
        plan: plan({ "json-key": "$.v", port: "9090", "request-timeout": "5s" }, {
          intervalSeconds: interval,
        }),
      });
      assert.equal(collector.timeoutMs?.({ cluster, now: () => NOW }), want);
    });
  }

  it("returns the pods that answered before an abort, with a warning for the rest", async () => {
    const cluster = deployment();
    for (let i = 1; i <= 4; i++) cluster.set("Pod", readyPod(`web-${i}`, { ip: `10.0.0.${i}` }));
    const collector = createPodJsonPathFactory({ maxConcurrentPodRequests: 3 }).create({
      plan: plan({ "json-key": "$.v", port: "9090" }),
    });
    const abort = new AbortController();
    const pending = collector.collect({
      ...ctx(cluster, abort.signal),
      fetch: podFetch(new Set(["10.0.0.1", "10.0.0.3"])),
    });
    await new Promise((r) => setTimeout(r, 20));
    abort.abort(new Error("collection timed out after 20s"));
    const result = await pending;
    assert.deepEqual(result.samples, [
      { objectName: "web-1", value: 1, timestamp: NOW },
      { objectName: "web-3", value: 3, timestamp: NOW },
    ]);
    assert.deepEqual(result.warnings, [
      "2 of 4 pods not collected for metric rps: collection timed out after 20s",
    ]);
  });

  it("fails an aborted collection when no pod answered", async () => {
    const cluster = deployment();
    cluster.set("Pod", readyPod("web-1", { ip: "10.0.0.1" }));
    const collector = podJsonPathFactory.create({
      plan: plan({ "json-key": "$.v", port: "9090" }),
    });
    const abort = new AbortController();
    const pending = collector.collect({
      ...ctx(cluster, abort.signal),
      fetch: podFetch(new Set()),
    });
    await new Promise((r) => setTimeout(r, 20));
    abort.abort(new Error("collector stopped"));
    await assert.rejects(pending, { message: "collection aborted: collector stopped" });
  });
});

describe("mapBounded", () => {
  it("keeps input order and reports failures per item", async () => {
    const out = await mapBounded(
      [1, 2, 3],
      2,
      (n) => n === 2 ? Promise.reject(new Error("two")) : Promise.resolve(n * 10),
    );
    assert.deepEqual(
      out.map((r) => r.status === "fulfilled" ? r.value : (r.reason as Error).message),
      [10, "two", 30],
    );
  });
});
