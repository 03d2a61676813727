/**
 * Delegation (issue 26) with real adapters on loopback: adapter A (`serve` in file mode) owns
 * the metrics APIs and delegates both to adapter B (another `serve`), which serves metrics A
 * has no collector for; a third adapter delegates to a fake delegate that hangs, answers 500,
 * or answers garbage. Authentication and authorization of A and B go through fakes of the
 * Kubernetes API (TokenReview, SubjectAccessReview), so the test knows who asked what: B's
 * SubjectAccessReviews (not cached) count the requests that reached it.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createCertificate } from "../../src/api/cert_issue.ts";
import { type FakeAuthApi, startFakeAuthApi } from "../fakes/auth_api.ts";
import { writeFakeKubeconfig } from "../fakes/kubeconfig.ts";
import {
  type AdapterProcess,
  getApi,
  httpGet,
  makeTempDir,
  startAdapterProcess,
  waitFor,
  writeManifests,
} from "./support.ts";
import { freePort } from "./formula_support.ts";

const EXT = "/apis/external.metrics.k8s.io/v1beta1";
const CUSTOM = "/apis/custom.metrics.k8s.io/v1beta2";
/** The HPA controller, as A's TokenReview fake knows it. */
const HPA_USER = "system:serviceaccount:kube-system:horizontal-pod-autoscaler";
/** Adapter A's identity, as B's TokenReview fake knows it. */
const A_USER = "system:serviceaccount:hpa-metrics-adapter:hpa-metrics-adapter";

function externalHpa(name: string, metric: string, path: string, port: number): object {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: {
      name,
      namespace: "shop",
      annotations: {
        [`metric-config.external.${metric}.json-path/endpoint`]: `http://127.0.0.1:${port}${path}`,
        [`metric-config.external.${metric}.json-path/json-key`]: "$.value",
        [`metric-config.external.${metric}.json-path/interval`]: "1h",
      },
    },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name },
      minReplicas: 1,
      maxReplicas: 10,
      metrics: [{
        type: "External",
        external: {
          metric: { name: metric, selector: { matchLabels: { type: "json-path" } } },
          target: { type: "Value", value: "1" },
        },
      }],
    },
  };
}

/** An HPA on a ScalingSchedule (the scaling-schedule collector, off unless --scaling-schedule). */
const SCHEDULE_HPA = {
  apiVersion: "autoscaling/v2",
  kind: "HorizontalPodAutoscaler",
  metadata: {
    name: "schedule",
    namespace: "shop",
    annotations: { "metric-config.object.peak.scaling-schedule/interval": "1h" },
  },
  spec: {
    scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "schedule" },
    minReplicas: 1,
    maxReplicas: 10,
    metrics: [{
      type: "Object",
      object: {
        describedObject: { apiVersion: "zalando.org/v1", kind: "ScalingSchedule", name: "peak" },
        metric: { name: "peak" },
        target: { type: "Value", value: "10" },
      },
    }],
  },
};

/** Over long ago: its value is 0 at any time. */
const SCHEDULE = {
  apiVersion: "zalando.org/v1",
  kind: "ScalingSchedule",
  metadata: { name: "peak", namespace: "shop" },
  spec: {
    schedules: [{ type: "OneTime", date: "2020-01-01T00:00:00Z", durationMinutes: 60, value: 30 }],
  },
};

/** A JSON endpoint on loopback: `/ours` answers 7, `/theirs` 42. */
async function startValues(): Promise<{ port: number; close(): Promise<void> }> {
  const server: HttpServer = createHttpServer((req, res) => {
    const value = req.url === "/ours" ? 7 : req.url === "/theirs" ? 42 : null;
    res.writeHead(value === null ? 404 : 200, { "content-type": "application/json" });
    res.end(JSON.stringify(value === null ? {} : { value }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** The test PKI: a CA and a serving certificate for 127.0.0.1 it signed. */
function pki(): { ca: string; cert: string; key: string } {
  const ca = createCertificate({ commonName: "delegation-test-ca", isCa: true });
  const leaf = createCertificate({
    commonName: "127.0.0.1",
    hosts: ["127.0.0.1"],
    issuer: ca,
    extendedKeyUsages: ["serverAuth"],
  });
  return { ca: ca.cert, cert: leaf.cert, key: leaf.key };
}

function bearer(token: string): { headers: Record<string, string> } {
  return { headers: { authorization: `Bearer ${token}` } };
}

/** B's SubjectAccessReviews for metric reads (resource attributes), as `namespace/resource`. */
function metricReads(fake: FakeAuthApi): string[] {
  return fake.sars.filter((s) => s.resourceAttributes !== undefined).map((s) =>
    `${s.user} ${s.resourceAttributes.group} ${s.resourceAttributes.namespace}/${s.resourceAttributes.resource}`
  );
}

describe("an adapter that delegates to another adapter", () => {
  let dir: string;
  let values: Awaited<ReturnType<typeof startValues>>;
  let authA: FakeAuthApi;
  let authB: FakeAuthApi;
  let a: AdapterProcess;
  let b: AdapterProcess;
  const cleanups: (() => Promise<unknown>)[] = [];

  before(async () => {
    dir = await makeTempDir("delegation-");
    values = await startValues();
    const tls = pki();
    await writeFile(join(dir, "ca.crt"), tls.ca);
    await writeFile(join(dir, "b.crt"), tls.cert);
    await writeFile(join(dir, "b.key"), tls.key);
    await writeFile(join(dir, "a-token"), "a-token\n");
    authA = await startFakeAuthApi();
    authA.tokens.set("hpa-token", { username: HPA_USER, groups: ["system:serviceaccounts"] });
    authA.tokens.set("mallory-token", { username: "mallory", groups: [] });
    authA.decide = (spec) => ({ allowed: spec.user === HPA_USER });
    authB = await startFakeAuthApi();
    authB.tokens.set("a-token", { username: A_USER, groups: ["system:serviceaccounts"] });
    authB.tokens.set("b-reader", { username: "b-reader", groups: [] });
    authB.decide = (spec) => ({ allowed: spec.user === A_USER || spec.user === "b-reader" });
    const kubeA = await writeFakeKubeconfig(authA.url);
    const kubeB = await writeFakeKubeconfig(authB.url);
    cleanups.push(kubeA.remove, kubeB.remove);
    const auth = (path: string): string[] => [
      "--authentication-kubeconfig",
      path,
      "--authorization-kubeconfig",
      path,
      "--authentication-skip-lookup",
      // every request at B is reviewed: its reviews count what reached it
      "--authentication-token-webhook-cache-ttl",
      "0s",
      "--authorization-webhook-cache-authorized-ttl",
      "0s",
      "--authorization-webhook-cache-unauthorized-ttl",
      "0s",
    ];
    await writeManifests(join(dir, "b"), [
      externalHpa("theirs", "theirs-queue", "/theirs", values.port),
      SCHEDULE_HPA,
      SCHEDULE,
    ]);
    b = await startAdapterProcess({
      manifests: join(dir, "b"),
      certDir: join(dir, "b-certs"),
      flags: [
        "--scaling-schedule",
        "--tls-cert-file",
        join(dir, "b.crt"),
        "--tls-private-key-file",
        join(dir, "b.key"),
        ...auth(kubeB.path),
      ],
    });
    // A knows the schedule's HPA but has no scaling-schedule collector: that metric is B's
    await writeManifests(join(dir, "a"), [
      externalHpa("ours", "ours-queue", "/ours", values.port),
      SCHEDULE_HPA,
      SCHEDULE,
    ]);
    a = await startAdapterProcess({
      manifests: join(dir, "a"),
      certDir: join(dir, "a-certs"),
      flags: [
        "--delegate-external-metrics",
        b.baseUrl,
        "--delegate-custom-metrics",
        `${b.baseUrl}/`,
        "--delegate-ca-file",
        join(dir, "ca.crt"),
        "--delegate-token-file",
        join(dir, "a-token"),
        "--delegate-discovery-interval",
        "1s",
        ...auth(kubeA.path),
      ],
    });
  });

  after(async () => {
    await a?.stop();
    await b?.stop();
    await authA?.close();
    await authB?.close();
    await values?.close();
    for (const c of cleanups) await c();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("serves its own metric from its store, without asking the delegate", async () => {
    const r = await waitFor("A's own value", async () => {
      const r = await getApi(a, `${EXT}/namespaces/shop/ours-queue`, bearer("hpa-token"));
      return r.status === 200 ? r : null;
    });
    assert.deepEqual(r.body.items.map((i: any) => [i.metricName, i.value]), [["ours-queue", "7"]]);
    assert.deepEqual(metricReads(authB).filter((s) => s.includes("ours-queue")), []);
  });

  it("forwards a read no HPA of ours asks for with its path and query, and answers as the delegate did", async () => {
    const path = `${EXT}/namespaces/shop/theirs-queue?labelSelector=type%3Djson-path`;
    const direct = await waitFor("B's value", async () => {
      const r = await httpGet(b.baseUrl + path, bearer("b-reader"));
      return r.status === 200 ? r : null;
    });
    const before = metricReads(authB).length;
    const forwarded = await httpGet(a.baseUrl + path, bearer("hpa-token"));
    assert.equal(forwarded.status, 200);
    assert.equal(forwarded.body, direct.body);
    assert.equal(forwarded.headers["content-type"], direct.headers["content-type"]);
    assert.deepEqual(JSON.parse(forwarded.body).items.map((i: any) => i.value), ["42"]);
    // B saw A's identity (its token), not the caller's
    assert.deepEqual(metricReads(authB).slice(before), [
      `${A_USER} external.metrics.k8s.io shop/theirs-queue`,
    ]);
  });

  it("forwards a custom metric whose collector A does not run, and a miss of both as B words it", async () => {
    const path = `${CUSTOM}/namespaces/shop/scalingschedules.zalando.org/peak/peak`;
    const direct = await waitFor("B's schedule value", async () => {
      const r = await httpGet(b.baseUrl + path, bearer("b-reader"));
      return r.status === 200 ? r : null;
    });
    const forwarded = await httpGet(a.baseUrl + path, bearer("hpa-token"));
    assert.equal(forwarded.status, 200);
    assert.equal(forwarded.body, direct.body);
    assert.equal(JSON.parse(forwarded.body).items[0].value, "0");

    const miss = await getApi(a, `${EXT}/namespaces/shop/nobody-queue`, bearer("hpa-token"));
    assert.equal(miss.status, 404);
    assert.equal(
      miss.body.message,
      'the server could not find the metric nobody-queue for provided labels: no HPA in namespace shop asks for external metric "nobody-queue"',
    );
    assert.deepEqual(metricReads(authB).filter((s) => s.includes("nobody-queue")), [
      `${A_USER} external.metrics.k8s.io shop/nobody-queue`,
    ]);
  });

  it("writes no Warning event for the HPA whose metric the delegate serves", () => {
    assert.doesNotMatch(a.logs(), /event Warning \S+ on HorizontalPodAutoscaler shop\/schedule/);
    assert.match(a.logs(), /in discovery of external\.metrics\.k8s\.io\/v1beta1/);
  });

  it("checks the caller before forwarding: 403, and the delegate is not asked", async () => {
    const before = metricReads(authB).length;
    const r = await getApi(a, `${EXT}/namespaces/shop/theirs-queue`, bearer("mallory-token"));
    assert.equal(r.status, 403);
    assert.equal(
      r.body.message,
      'theirs-queue.external.metrics.k8s.io is forbidden: User "mallory" cannot list resource "theirs-queue" in API group "external.metrics.k8s.io" in the namespace "shop"',
    );
    assert.deepEqual(metricReads(authB).slice(before), []);
    assert.deepEqual(
      authA.sars.filter((s) => s.user === "mallory").map((s) => s.resourceAttributes?.resource),
      ["theirs-queue"],
    );
  });

  it("lists its resources and the delegate's in discovery", async () => {
    const names = async (path: string): Promise<string[]> => {
      const r = await getApi(a, path, bearer("hpa-token"));
      assert.equal(r.status, 200);
      return r.body.resources.map((x: any) => x.name);
    };
    await waitFor("B's resources in A's discovery", async () => {
      return (await names(EXT)).includes("theirs-queue") ? true : null;
    });
    assert.deepEqual(await names(EXT), ["externalmetrics", "ours-queue", "theirs-queue"]);
    assert.deepEqual(await names(CUSTOM), [
      "custommetrics",
      "scalingschedules.zalando.org/peak",
    ]);
  });

  it("keeps serving its own metrics when the delegate stops, with an error naming it, and drops it from discovery", async () => {
    const port = new URL(b.baseUrl).port;
    await b.stop();
    const r = await getApi(a, `${EXT}/namespaces/shop/theirs-queue`, bearer("hpa-token"));
    assert.equal(r.status, 503);
    assert.equal(r.body.reason, "ServiceUnavailable");
    assert.match(
      r.body.message,
      new RegExp(
        `^the delegate of external\\.metrics\\.k8s\\.io \\(--delegate-external-metrics https://127\\.0\\.0\\.1:${port}\\) did not answer: request to https://127\\.0\\.0\\.1:${port}/apis/external\\.metrics\\.k8s\\.io/v1beta1/namespaces/shop/theirs-queue failed: \\S`,
      ),
    );
    const own = await getApi(a, `${EXT}/namespaces/shop/ours-queue`, bearer("hpa-token"));
    assert.equal(own.status, 200);
    assert.equal(own.body.items[0].value, "7");
    const resources = await waitFor("B out of A's discovery", async () => {
      const d = await getApi(a, EXT, bearer("hpa-token"));
      const list = d.body.resources.map((x: any) => x.name);
      return list.includes("theirs-queue") ? null : list;
    });
    assert.deepEqual(resources, ["externalmetrics", "ours-queue"]);
    assert.equal(a.alive(), true);
  });
});

/** A delegate that misbehaves by metric name; it records each request's path and token. */
async function startBadDelegate(tls: { cert: string; key: string }): Promise<{
  port: number;
  requests: { path: string; authorization: string | undefined }[];
  close(): Promise<void>;
}> {
  const requests: { path: string; authorization: string | undefined }[] = [];
  const sockets = new Set<Socket>();
  const server: HttpsServer = createHttpsServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    const path = req.url ?? "";
    requests.push({ path, authorization: req.headers.authorization });
    if (path === EXT) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({
        kind: "APIResourceList",
        apiVersion: "v1",
        groupVersion: "external.metrics.k8s.io/v1beta1",
        resources: [{ name: "bad-metric", namespaced: true, kind: "ExternalMetricValueList" }],
      }));
      return;
    }
    const metric = path.split("?")[0].split("/").pop();
    if (metric === "hang-metric") return; // never answers
    if (metric === "status-500") {
      res.writeHead(500, { "content-type": "application/json; charset=utf-8" });
      res.end(
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"backend down","reason":"InternalError","code":500}',
      );
      return;
    }
    if (metric === "token-metric") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        '{"kind":"ExternalMetricValueList","apiVersion":"external.metrics.k8s.io/v1beta1","metadata":{},"items":[]}',
      );
      return;
    }
    if (metric === "text-500") {
      res.writeHead(500, { "content-type": "text/plain" });
      res.end("oops");
      return;
    }
    res.writeHead(200, { "content-type": "text/html" });
    res.end("<html>hello</html>");
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

describe("an adapter whose delegate hangs, fails or answers garbage", () => {
  let dir: string;
  let values: Awaited<ReturnType<typeof startValues>>;
  let bad: Awaited<ReturnType<typeof startBadDelegate>>;
  let a: AdapterProcess;
  let metricsPort: number;
  let delegate: string;

  before(async () => {
    dir = await makeTempDir("delegation-bad-");
    values = await startValues();
    const tls = pki();
    await writeFile(join(dir, "ca.crt"), tls.ca);
    await writeFile(join(dir, "token"), "first-token\n");
    bad = await startBadDelegate(tls);
    delegate = `https://127.0.0.1:${bad.port}`;
    await writeManifests(join(dir, "a"), [externalHpa("ours", "ours-queue", "/ours", values.port)]);
    metricsPort = await freePort();
    a = await startAdapterProcess({
      manifests: join(dir, "a"),
      certDir: join(dir, "a-certs"),
      flags: [
        "--delegate-external-metrics",
        delegate,
        "--delegate-ca-file",
        join(dir, "ca.crt"),
        "--delegate-token-file",
        join(dir, "token"),
        "--collection-timeout",
        "2s",
        "--metrics-address",
        `127.0.0.1:${metricsPort}`,
      ],
    });
    await waitFor("A's own value", async () => {
      const r = await getApi(a, `${EXT}/namespaces/shop/ours-queue`);
      return r.status === 200 ? r : null;
    });
  });

  after(async () => {
    await a?.stop();
    await bad?.close();
    await values?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const named = (): string =>
    `the delegate of external.metrics.k8s.io (--delegate-external-metrics ${delegate})`;

  it("answers its own metric while a read waits on a delegate that hangs, then a timeout naming the delegate", async () => {
    const path = `${EXT}/namespaces/shop/hang-metric`;
    let settled = false;
    const hanging = getApi(a, path, { timeoutMs: 30_000 }).finally(() => (settled = true));
    await waitFor(
      "the hanging read at the delegate",
      () => bad.requests.some((r) => r.path === path) ? true : null,
    );
    const own = await getApi(a, `${EXT}/namespaces/shop/ours-queue`);
    assert.equal(own.status, 200);
    assert.equal(own.body.items[0].value, "7");
    assert.equal(settled, false, "our own read was answered while the delegate's still waited");
    const r = await hanging;
    assert.equal(r.status, 503);
    assert.equal(
      r.body.message,
      `${named()} did not answer: request to ${delegate}${path} failed: timed out after 2s`,
    );
  });

  it("passes a 500 Status back as it came", async () => {
    const r = await httpGet(`${a.baseUrl}${EXT}/namespaces/shop/status-500?labelSelector=x%3Dy`);
    assert.equal(r.status, 500);
    assert.equal(r.headers["content-type"], "application/json; charset=utf-8");
    assert.equal(
      r.body,
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"backend down","reason":"InternalError","code":500}',
    );
    assert.equal(
      bad.requests.filter((q) => q.path.startsWith(`${EXT}/namespaces/shop/status-500`)).at(-1)
        ?.path,
      `${EXT}/namespaces/shop/status-500?labelSelector=x%3Dy`,
    );
  });

  it("answers a 500 that is not a Status, and a 200 that is not a metric list, with an error naming the delegate", async () => {
    const text = await getApi(a, `${EXT}/namespaces/shop/text-500`);
    assert.deepEqual([text.status, text.body.reason, text.body.message], [
      500,
      "InternalError",
      `${named()} answered ${EXT}/namespaces/shop/text-500 with "500 Internal Server Error" and a body that is not a Status: invalid JSON`,
    ]);
    const html = await getApi(a, `${EXT}/namespaces/shop/html-metric`);
    assert.deepEqual([html.status, html.body.reason, html.body.message], [
      500,
      "InternalError",
      `${named()} answered ${EXT}/namespaces/shop/html-metric with "200 OK" and a body that is not an ExternalMetricValueList: invalid JSON`,
    ]);
    assert.equal(a.alive(), true);
    assert.equal((await httpGet(`${a.baseUrl}/readyz`)).status, 200);
  });

  it("presents its token, read again when the file changes", async () => {
    const path = `${EXT}/namespaces/shop/token-metric`;
    await getApi(a, path);
    await writeFile(join(dir, "token"), "second-token-longer\n");
    await getApi(a, path);
    assert.deepEqual(
      bad.requests.filter((r) => r.path === path).map((r) => r.authorization),
      ["Bearer first-token", "Bearer second-token-longer"],
    );
  });

  it("counts each delegate's reads, failures and latency in its own metrics", async () => {
    const text = (await httpGet(`http://127.0.0.1:${metricsPort}/metrics`)).body;
    const reads = text.split("\n").filter((l) =>
      l.startsWith("hpa_metrics_adapter_delegate_") && l.includes('request="read"') &&
      !l.includes("_bucket")
    ).sort();
    const labels = `api="external",delegate="${delegate}",request="read"`;
    assert.deepEqual(
      reads,
      [
        `hpa_metrics_adapter_delegate_errors_total{${labels},reason="invalid-answer"} 2`,
        `hpa_metrics_adapter_delegate_errors_total{${labels},reason="timeout"} 1`,
        `hpa_metrics_adapter_delegate_request_duration_seconds_count{${labels}} 6`,
        reads.find((l) =>
          l.startsWith("hpa_metrics_adapter_delegate_request_duration_seconds_sum")
        )!,
        `hpa_metrics_adapter_delegate_requests_total{${labels},code="200"} 3`,
        `hpa_metrics_adapter_delegate_requests_total{${labels},code="500"} 2`,
        `hpa_metrics_adapter_delegate_requests_total{${labels},code="error"} 1`,
      ].sort(),
    );
  });
});
