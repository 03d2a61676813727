/**
 * Delegation (issue 26) in the API layer: the delegate client (`MetricsDelegate`) against a
 * fake delegate on loopback HTTPS, and the app's routing with a recording delegate: reads of
 * ours are answered from the store and never forwarded, reads nobody here asks for are
 * forwarded (never on the fast path), discovery merges the delegate's resources.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { mkdtemp, rm, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../../src/api/app.ts";
import { createCertificate } from "../../src/api/cert_issue.ts";
import {
  type ApiDelegate,
  type DelegateObservation,
  MetricsDelegate,
  type MetricsDelegateOptions,
  tokenFile,
} from "../../src/api/delegate.ts";
import type { PlainResponse } from "../../src/runtime/serve.ts";
import { MetricStore } from "../../src/store/store.ts";
import type { StoredPlan } from "../../src/store/types.ts";

const EXT = "/apis/external.metrics.k8s.io/v1beta1";
const LIST =
  '{"kind":"ExternalMetricValueList","apiVersion":"external.metrics.k8s.io/v1beta1","metadata":{},"items":[{"metricName":"q","metricLabels":{},"timestamp":"2024-01-02T03:04:05Z","value":"5"}]}';

interface Received {
  url: string;
  headers: Record<string, string | string[] | undefined>;
}

/** A fake delegate: answers by path from `routes` (404 Status otherwise); records requests. */
async function startFake(tls: { cert: string; key: string }) {
  const received: Received[] = [];
  const routes = new Map<string, { status: number; type: string; body: string } | "hang">();
  const sockets = new Set<Socket>();
  const server: Server = createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    received.push({ url: req.url ?? "", headers: req.headers });
    const route = routes.get((req.url ?? "").split("?")[0]);
    if (route === "hang") return;
    const r = route ?? {
      status: 404,
      type: "application/json",
      body:
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nope","reason":"NotFound","code":404}',
    };
    res.writeHead(r.status, { "content-type": r.type });
    res.end(r.body);
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    routes,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

function resourceList(groupVersion: string, names: unknown[]): string {
  return JSON.stringify({
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion,
    resources: names.map((n) =>
      typeof n === "string" ? { name: n, namespaced: true, kind: "ExternalMetricValueList" } : n
    ),
  });
}

describe("MetricsDelegate", () => {
  let fake: Awaited<ReturnType<typeof startFake>>;
  let ca: string;
  let dir: string;
  const observed: DelegateObservation[] = [];
  const open: MetricsDelegate[] = [];

  const delegate = (extra: Partial<MetricsDelegateOptions> = {}): MetricsDelegate => {
    const d = new MetricsDelegate({
      group: "external.metrics.k8s.io",
      versions: ["v1beta1"],
      url: `${fake.url}/`,
      flag: "--delegate-external-metrics",
      tls: { ca },
      timeoutSeconds: 1,
      maxBytes: 4096,
      observer: { observe: (o) => observed.push(o) },
      ...extra,
    });
    open.push(d);
    return d;
  };
  const named = (): string =>
    `the delegate of external.metrics.k8s.io (--delegate-external-metrics ${fake.url})`;

  before(async () => {
    const caPair = createCertificate({ commonName: "test-ca", isCa: true });
    ca = caPair.cert;
    fake = await startFake(createCertificate({
      commonName: "127.0.0.1",
      hosts: ["127.0.0.1"],
      issuer: caPair,
      extendedKeyUsages: ["serverAuth"],
    }));
    dir = await mkdtemp(join(tmpdir(), "delegate-test-"));
  });

  after(async () => {
    for (const d of open) await d.close();
    await fake?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("forwards the path and query as they came, with the token, and answers status, body and content type as the delegate did", async () => {
    fake.routes.set(`${EXT}/namespaces/shop/q`, {
      status: 200,
      type: "application/json; charset=utf-8",
      body: LIST,
    });
    const d = delegate({ token: () => Promise.resolve("t0k3n") });
    const before = fake.received.length;
    const r = await d.forward(`${EXT}/namespaces/shop/q?labelSelector=a%3Db%2Cc%21%3Dd`);
    assert.deepEqual(r, {
      status: 200,
      headers: { "content-type": "application/json; charset=utf-8" },
      body: LIST,
    });
    const got = fake.received.slice(before);
    assert.equal(got.length, 1);
    assert.equal(got[0].url, `${EXT}/namespaces/shop/q?labelSelector=a%3Db%2Cc%21%3Dd`);
    assert.equal(got[0].headers.authorization, "Bearer t0k3n");
    assert.equal(got[0].headers.accept, "application/json");
    assert.equal(got[0].headers["accept-encoding"], "identity");
    // a 404 Status is passed on too
    const miss = await d.forward(`${EXT}/namespaces/shop/other`);
    assert.equal(miss.status, 404);
    assert.equal(JSON.parse(miss.body).message, "nope");
    assert.deepEqual(
      observed.filter((o) => o.request === "read").slice(-2).map((o) => [o.code, o.reason]),
      [["200", null], ["404", null]],
    );
  });

  it("sends no authorization without a token", async () => {
    const d = delegate();
    const before = fake.received.length;
    await d.forward(`${EXT}/namespaces/shop/q`);
    assert.equal(fake.received[before].headers.authorization, undefined);
  });

  it("answers an answer over the size cap with an error naming the delegate", async () => {
    fake.routes.set(`${EXT}/namespaces/shop/big`, {
      status: 200,
      type: "application/json",
      body: `{"kind":"ExternalMetricValueList","items":[],"pad":"${"x".repeat(5000)}"}`,
    });
    const r = await delegate().forward(`${EXT}/namespaces/shop/big`);
    assert.equal(r.status, 500);
    assert.equal(
      JSON.parse(r.body).message,
      `${named()} answered too much: response from ${fake.url}${EXT}/namespaces/shop/big exceeds 4096 bytes`,
    );
    assert.equal(observed.at(-1)?.reason, "too-large");
  });

  it("answers a list of the wrong kind with an error naming the delegate", async () => {
    fake.routes.set(`${EXT}/namespaces/shop/wrong`, {
      status: 200,
      type: "application/json",
      body: '{"kind":"MetricValueList","items":[]}',
    });
    const r = await delegate().forward(`${EXT}/namespaces/shop/wrong`);
    assert.deepEqual([r.status, JSON.parse(r.body).message], [
      500,
      `${named()} answered ${EXT}/namespaces/shop/wrong with "200 OK" and a body that is not an ExternalMetricValueList: kind "MetricValueList"`,
    ]);
  });

  it("answers 503 at once past the reads in flight allowed, and ends the reads in flight when closed", async () => {
    fake.routes.set(`${EXT}/namespaces/shop/hang`, "hang");
    const d = delegate({ maxInFlight: 1, timeoutSeconds: 60 });
    const first = d.forward(`${EXT}/namespaces/shop/hang`);
    const before = fake.received.length;
    const second = await d.forward(`${EXT}/namespaces/shop/q`);
    assert.deepEqual([second.status, JSON.parse(second.body).message], [
      503,
      `${named()} has 1 reads in flight, the most allowed: try again later`,
    ]);
    assert.equal(fake.received.length, before, "the delegate was not asked");
    await d.close();
    const r = await first;
    assert.deepEqual([r.status, JSON.parse(r.body).message], [
      503,
      `${named()} did not answer: request to ${fake.url}${EXT}/namespaces/shop/hang failed: the adapter is stopping`,
    ]);
  });

  it("says why a delegate that does not listen did not answer", async () => {
    const closed = await startFake(createCertificate({ commonName: "x", hosts: ["127.0.0.1"] }));
    await closed.close();
    const d = delegate({ url: closed.url });
    const r = await d.forward(`${EXT}/namespaces/shop/q`);
    const message = JSON.parse(r.body).message;
    assert.equal(r.status, 503);
    assert.ok(
      message.startsWith(
        `the delegate of external.metrics.k8s.io (--delegate-external-metrics ${closed.url}) did not answer: request to ${closed.url}${EXT}/namespaces/shop/q failed: `,
      ),
      message,
    );
    // undici's fetch alone says "fetch failed": its cause says what
    assert.doesNotMatch(message, /failed: fetch failed$/);
  });

  it("discovers the resources of each version, drops out when it cannot be asked, and comes back", async () => {
    const d = delegate();
    fake.routes.set(EXT, {
      status: 200,
      type: "application/json",
      body: resourceList("external.metrics.k8s.io/v1beta1", [
        "externalmetrics",
        "s0-queue",
        { namespaced: true },
        "not an object",
      ]),
    });
    assert.deepEqual([d.resources("v1beta1"), d.generation()], [[], 0]);
    await d.refresh();
    assert.deepEqual(d.resources("v1beta1").map((r) => r.name), [
      "externalmetrics",
      "s0-queue",
      "not an object",
    ]);
    assert.equal(d.generation(), 1);
    await d.refresh();
    assert.equal(d.generation(), 1, "the same list: no new generation");
    fake.routes.set(EXT, { status: 503, type: "text/plain", body: "down" });
    await d.refresh();
    assert.deepEqual([d.resources("v1beta1"), d.generation()], [[], 2]);
    fake.routes.set(EXT, {
      status: 200,
      type: "application/json",
      body: resourceList("custom.metrics.k8s.io/v1beta1", ["pods/rps"]),
    });
    await d.refresh();
    assert.deepEqual([d.resources("v1beta1"), d.generation()], [[], 2], "another group's list");
    fake.routes.set(EXT, {
      status: 200,
      type: "application/json",
      body: resourceList("external.metrics.k8s.io/v1beta1", ["s1-queue"]),
    });
    await d.refresh();
    assert.deepEqual(
      [d.resources("v1beta1").map((r) => r.name), d.generation()],
      [["s1-queue"], 3],
    );
  });
});

describe("tokenFile", () => {
  it("reads the token, again when the file changes, and null while there is none", async () => {
    const dir = await mkdtemp(join(tmpdir(), "delegate-token-"));
    try {
      const path = join(dir, "token");
      const token = tokenFile(path);
      assert.equal(await token(), null);
      await writeFile(path, "one\n");
      assert.equal(await token(), "one");
      await writeFile(path, "two-longer\n");
      assert.equal(await token(), "two-longer");
      await unlink(path);
      assert.equal(await token(), null);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/** A delegate that records what it is asked and answers 299 with the path. */
function recordingDelegate(resources: Record<string, unknown>[] = []) {
  const forwarded: string[] = [];
  let generation = 0;
  let list = resources;
  const d: ApiDelegate & { forwarded: string[]; set(r: Record<string, unknown>[]): void } = {
    forwarded,
    forward(pathAndQuery: string): Promise<PlainResponse> {
      forwarded.push(pathAndQuery);
      return Promise.resolve({
        status: 299,
        headers: { "content-type": "application/vnd.test+json" },
        body: JSON.stringify({ forwarded: pathAndQuery }),
      });
    },
    resources: (version) => version === "v1beta1" ? list : [],
    generation: () => generation,
    set(r) {
      list = r;
      generation++;
    },
  };
  return d;
}

const T0 = Date.UTC(2024, 0, 2, 3, 4, 5);

function externalPlan(hpa: string, metric: string, extra: Partial<StoredPlan> = {}): StoredPlan {
  return {
    key: `shop/${hpa}#0/External/${metric}`,
    hpa: { namespace: "shop", name: hpa },
    servedAt: { kind: "external", namespace: "shop", metricName: metric, metricLabels: {} },
    queryKey: `q-${hpa}`,
    ...extra,
  };
}

function appWith(delegates: { custom?: ApiDelegate; external?: ApiDelegate } | undefined) {
  const store = new MetricStore();
  store.upsertPlan(externalPlan("ours", "ours-queue"), T0);
  store.recordSuccess("shop/ours#0/External/ours-queue", [{ value: 7, timestamp: T0 }], T0);
  // ours, not collected yet
  store.upsertPlan(externalPlan("pending", "pending-queue"), T0);
  // KEDA's: no collector of ours takes it
  store.upsertPlan(
    externalPlan("keda", "s0-queue", { uncollectable: true, incompatible: true }),
    T0,
  );
  const app = createApp({
    store,
    pods: { listPods: () => [] },
    now: () => T0,
    ready: () => true,
    delegates,
  });
  const fast = (url: string) =>
    app.fastFetch({
      method: "GET",
      url,
      headers: {},
      connection: {
        remoteAddress: "127.0.0.1",
        encrypted: true,
        peerCertificate: null,
        rawHeaders: [],
      },
    });
  return { app, fast, store };
}

describe("the app with delegates", () => {
  it("answers reads of ours from the store and forwards only the others, off the fast path", async () => {
    const external = recordingDelegate();
    const custom = recordingDelegate();
    const { app, fast } = appWith({ external, custom });
    const ours = await app.request(`${EXT}/namespaces/shop/ours-queue`);
    assert.equal(ours.status, 200);
    assert.equal((await ours.json()).items[0].value, "7");
    const pending = await app.request(`${EXT}/namespaces/shop/pending-queue`);
    assert.equal(pending.status, 404);
    assert.match((await pending.json()).message, /: not collected yet \(planned at /);
    assert.deepEqual(external.forwarded, []);

    const keda = await app.request(`${EXT}/namespaces/shop/s0-queue?labelSelector=a%3Db`);
    assert.equal(keda.status, 299);
    assert.equal(keda.headers.get("content-type"), "application/vnd.test+json");
    assert.deepEqual(await keda.json(), {
      forwarded: `${EXT}/namespaces/shop/s0-queue?labelSelector=a%3Db`,
    });
    const nobody = await app.request(
      "/apis/custom.metrics.k8s.io/v1beta1/namespaces/shop/pods/*/http_requests",
    );
    assert.equal(nobody.status, 299);
    assert.deepEqual(external.forwarded, [`${EXT}/namespaces/shop/s0-queue?labelSelector=a%3Db`]);
    assert.deepEqual(custom.forwarded, [
      "/apis/custom.metrics.k8s.io/v1beta1/namespaces/shop/pods/*/http_requests",
    ]);

    // the fast path answers ours and leaves the others to the regular path
    assert.equal(fast(`${EXT}/namespaces/shop/ours-queue`)?.status, 200);
    assert.equal(fast(`${EXT}/namespaces/shop/s0-queue`), null);
    assert.equal(external.forwarded.length, 1);
  });

  it("answers 404 for a read nobody asks for when its API has no delegate", async () => {
    const external = recordingDelegate();
    const { app } = appWith({ external });
    const r = await app.request(
      "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/http_requests",
    );
    assert.equal(r.status, 404);
    const none = appWith(undefined);
    const keda = await none.app.request(`${EXT}/namespaces/shop/s0-queue`);
    assert.equal(keda.status, 404);
    assert.equal(
      (await keda.json()).message,
      "the server could not find the metric s0-queue for provided labels: not collected yet (planned at 2024-01-02T03:04:05Z)",
    );
    assert.deepEqual(external.forwarded, []);
  });

  it("lists the delegate's resources after ours in discovery, anew when they change", async () => {
    const external = recordingDelegate([
      {
        name: "externalmetrics",
        namespaced: true,
        kind: "ExternalMetricValueList",
        verbs: ["get"],
      },
      { name: "ours-queue", namespaced: true, kind: "ExternalMetricValueList", verbs: ["get"] },
      { name: "s9-queue", namespaced: true, kind: "ExternalMetricValueList", verbs: ["get"] },
    ]);
    const { app } = appWith({ external });
    const names = async (): Promise<string[]> =>
      (await (await app.request(EXT)).json()).resources.map((r: { name: string }) => r.name);
    assert.deepEqual(await names(), [
      "externalmetrics",
      "ours-queue",
      "pending-queue",
      "s0-queue",
      "s9-queue",
    ]);
    external.set([]);
    assert.deepEqual(await names(), ["externalmetrics", "ours-queue", "pending-queue", "s0-queue"]);
  });
});
