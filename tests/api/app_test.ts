import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { MiddlewareHandler } from "hono";
import { createApp } from "../../src/api/app.ts";
import type { RequestObservation } from "../../src/api/own_metrics.ts";
import {
  createAdapterMetrics,
  createMetricsApp,
  MetricsRegistry,
} from "../../src/api/own_metrics.ts";
import { CM, EM, fixture, get, getJson, status, T0 } from "./app_support.ts";

describe("errors", () => {
  const table: { name: string; path: string; code: number; reason: string; message: string }[] = [
    {
      name: "rejects a malformed labelSelector",
      path: `${CM}/v1beta2/namespaces/default/pods/*/rps?labelSelector=${
        encodeURIComponent("app in (a")
      }`,
      code: 400,
      reason: "BadRequest",
      message:
        'invalid labelSelector: invalid label selector "app in (a": found "end of string", expected a value, "," or ")"',
    },
    {
      name: "rejects a malformed metricLabelSelector",
      path: `${CM}/v1beta1/namespaces/default/pods/*/rps?metricLabelSelector=a%20b`,
      code: 400,
      reason: "BadRequest",
      message:
        'invalid metricLabelSelector: invalid label selector "a b": found "b", expected one of in, notin, =, ==, !=, >, <',
    },
    {
      name: "rejects a labelSelector on objects other than pods",
      path: `${CM}/v1beta2/namespaces/default/deployments.apps/*/requests?labelSelector=a%3Db`,
      code: 400,
      reason: "BadRequest",
      message: 'labelSelector "a=b" is supported for pods only, not for deployments.apps',
    },
    {
      name: "answers 404 for an unknown version",
      path: `${CM}/v1/namespaces/default/pods/*/rps`,
      code: 404,
      reason: "NotFound",
      message: "the server could not find the requested resource",
    },
    {
      name: "answers 404 for a path of the wrong shape",
      path: `${CM}/v1beta2/namespaces/default/pods/rps`,
      code: 404,
      reason: "NotFound",
      message: "the server could not find the requested resource",
    },
    {
      name: "answers 404 for an unknown group",
      path: "/apis/metrics.k8s.io/v1beta1",
      code: 404,
      reason: "NotFound",
      message: "the server could not find the requested resource",
    },
    {
      name: "names the metric and object when no HPA asks",
      path: `${CM}/v1beta2/namespaces/default/pods/web-1/latency`,
      code: 404,
      reason: "NotFound",
      message:
        'the server could not find the metric latency for pods web-1: no HPA in namespace default asks for metric "latency" on pods/web-1',
    },
  ];
  for (const t of table) {
    it(t.name, async () => {
      const { options } = fixture();
      const [code, body] = await getJson(options, t.path);
      assert.equal(code, t.code);
      assert.deepEqual(body, status(t.code, t.reason, t.message));
    });
  }

  it("answers 405 for other methods", async () => {
    const { options } = fixture();
    const r = await get(options, `${CM}/v1beta2/namespaces/default/pods/*/rps`, {
      method: "POST",
    });
    assert.equal(r.status, 405);
    assert.deepEqual(
      JSON.parse(r.body),
      status(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
      ),
    );
  });

  it("answers 503 for metric reads until the initial sync is done, discovery still 200", async () => {
    const { options, state } = fixture();
    state.ready = false;
    const [code, body] = await getJson(options, `${CM}/v1beta2/namespaces/default/pods/*/rps`);
    assert.equal(code, 503);
    assert.deepEqual(
      body,
      status(
        503,
        "ServiceUnavailable",
        "the adapter has not finished its initial sync; metrics are served once it has",
      ),
    );
    assert.equal((await get(options, `${CM}/v1beta2`)).status, 200);
  });

  it("answers 500 InternalError when something throws", async () => {
    const { options } = fixture();
    options.pods = {
      listPods: () => {
        throw new Error("informer gone");
      },
    };
    const [code, body] = await getJson(options, `${CM}/v1beta2/namespaces/default/pods/*/rps`);
    assert.equal(code, 500);
    assert.deepEqual(
      body,
      status(500, "InternalError", "Internal error occurred: informer gone", {
        causes: [{ message: "informer gone" }],
      }),
    );
  });

  it("answers a plain 404 outside /apis", async () => {
    const { options } = fixture();
    const r = await get(options, "/nope");
    assert.deepEqual([r.status, r.body], [404, "404 page not found\n"]);
  });
});

describe("hooks", () => {
  it("runs authorize on every path except the health ones", async () => {
    const seen: string[] = [];
    const deny: MiddlewareHandler = async (c) => {
      seen.push(new URL(c.req.url).pathname);
      return c.json({ denied: true }, 403);
    };
    const { options } = fixture({ authorize: deny });
    assert.equal((await get(options, `${CM}/v1beta2/namespaces/default/pods/*/rps`)).status, 403);
    assert.equal((await get(options, "/apis")).status, 403);
    assert.equal((await get(options, "/version")).status, 403);
    for (const p of ["/healthz", "/livez", "/readyz?verbose", "/readyz/ping"]) {
      assert.equal((await get(options, p)).status, 200, p);
    }
    assert.deepEqual(seen, [`${CM}/v1beta2/namespaces/default/pods/*/rps`, "/apis", "/version"]);
  });

  it("lets authorized requests through", async () => {
    const allow: MiddlewareHandler = async (_c, next) => {
      await next();
    };
    const { options } = fixture({ authorize: allow });
    assert.equal((await get(options, `${CM}/v1beta2/namespaces/default/pods/*/rps`)).status, 200);
  });

  it("reports each request with its coarse route and code", async () => {
    const seen: RequestObservation[] = [];
    const { options } = fixture({ onRequest: (o) => seen.push(o) });
    await get(options, `${CM}/v1beta2/namespaces/default/pods/*/rps`);
    await get(options, `${EM}/namespaces/default/nope`);
    await get(options, "/apis");
    await get(options, "/readyz");
    await get(options, "/openapi/v2");
    await get(options, `${CM}/v1beta2`);
    await get(options, `${CM}/v1beta2/`);
    await get(options, `${EM}/namespaces`);
    await get(options, "/version");
    assert.deepEqual(seen.map((o) => [o.method, o.route, o.code]), [
      ["GET", "custom", 200],
      ["GET", "external", 404],
      ["GET", "discovery", 200],
      ["GET", "health", 200],
      ["GET", "openapi", 200],
      ["GET", "discovery", 200],
      ["GET", "discovery", 200],
      ["GET", "external", 404],
      ["GET", "version", 200],
    ]);
    for (const o of seen) assert.ok(o.durationSeconds >= 0 && o.durationSeconds < 5);
  });
});

describe("own metrics", () => {
  it("writes counters, gauges and histograms in the text format with escaped labels", async () => {
    const registry = new MetricsRegistry();
    const c = registry.counter({ name: "c_total", help: "A counter\\with\nnewline" });
    const lc = registry.counter({ name: "lc_total", help: "Labelled", labelNames: ["x"] });
    registry.counter({ name: "unused_total", help: "Never set", labelNames: ["x"] });
    const g = registry.gauge({ name: "g", help: "A gauge" });
    const h = registry.histogram({
      name: "h_seconds",
      help: "A histogram",
      labelNames: ["k"],
      buckets: [0.1, 1],
    });
    c.inc();
    c.inc(undefined, 2);
    lc.inc({ x: 'a"b\\c\nd' });
    lc.inc({ x: "a" });
    g.set(-1.5);
    h.observe(0.05, { k: "v" });
    h.observe(0.5, { k: "v" });
    h.observe(3, { k: "v" });
    const res = await createMetricsApp(registry).request("/metrics");
    assert.equal(res.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
    assert.equal(
      await res.text(),
      [
        "# HELP c_total A counter\\\\with\\nnewline",
        "# TYPE c_total counter",
        "c_total 3",
        "# HELP lc_total Labelled",
        "# TYPE lc_total counter",
        'lc_total{x="a"} 1',
        'lc_total{x="a\\"b\\\\c\\nd"} 1',
        "# HELP g A gauge",
        "# TYPE g gauge",
        "g -1.5",
        "# HELP h_seconds A histogram",
        "# TYPE h_seconds histogram",
        'h_seconds_bucket{k="v",le="0.1"} 1',
        'h_seconds_bucket{k="v",le="1"} 2',
        'h_seconds_bucket{k="v",le="+Inf"} 3',
        'h_seconds_sum{k="v"} 3.55',
        'h_seconds_count{k="v"} 3',
        "",
      ].join("\n"),
    );
    assert.equal((await createMetricsApp(registry).request("/other")).status, 404);
  });

  it("rejects bad names, unknown labels and decreasing counters", () => {
    const registry = new MetricsRegistry();
    assert.throws(() => registry.counter({ name: "bad-name", help: "" }), {
      message: 'invalid metric name "bad-name"',
    });
    const c = registry.counter({ name: "a_total", help: "", labelNames: ["x"] });
    assert.throws(() => c.inc({ y: "1" }), { message: 'missing label "x" for metric a_total' });
    assert.throws(() => c.inc({ x: "1", y: "2" }), {
      message: 'unknown label "y" for metric a_total',
    });
    assert.throws(() => c.inc({ x: "1" }, -1), {
      message: "counter a_total cannot decrease (by -1)",
    });
    assert.throws(() => registry.counter({ name: "a_total", help: "" }), {
      message: "metric a_total is already registered",
    });
  });

  it("keeps kube-metrics-adapter's counter names and serves collection, store and request metrics", async () => {
    const { store, options } = fixture();
    const metrics = createAdapterMetrics({ storeStats: () => store.stats() });
    metrics.observeCollection("prometheus", true, 0.02);
    metrics.observeCollection("prometheus", false, 2);
    metrics.updatesSuccess.inc();
    options.onRequest = (o) => metrics.observeRequest(o);
    await get(options, "/apis");
    const text = await (await createMetricsApp(metrics.registry).request("/metrics")).text();
    for (
      const line of [
        "# HELP kube_metrics_adapter_collections_success The total number of successful collections",
        "# TYPE kube_metrics_adapter_collections_success counter",
        "kube_metrics_adapter_collections_success 1",
        "# HELP kube_metrics_adapter_collections_error The total number of failed collection attempts",
        "kube_metrics_adapter_collections_error 1",
        "# HELP kube_metrics_adapter_updates_success The total number of successful HPA updates",
        "kube_metrics_adapter_updates_success 1",
        "# HELP kube_metrics_adapter_updates_error The total number of failed HPA update attempts",
        "kube_metrics_adapter_updates_error 0",
        'kube_metrics_adapter_collector_collections_total{collector="prometheus",result="error"} 1',
        'kube_metrics_adapter_collector_collections_total{collector="prometheus",result="success"} 1',
        'kube_metrics_adapter_collection_duration_seconds_bucket{collector="prometheus",le="0.025"} 1',
        'kube_metrics_adapter_collection_duration_seconds_bucket{collector="prometheus",le="+Inf"} 2',
        'kube_metrics_adapter_collection_duration_seconds_sum{collector="prometheus"} 2.02',
        'kube_metrics_adapter_stored_values{api="custom"} 9',
        'kube_metrics_adapter_stored_values{api="external"} 1',
        "kube_metrics_adapter_plans 6",
        "kube_metrics_adapter_conflicted_plans 0",
        'kube_metrics_adapter_request_duration_seconds_count{route="discovery",code="200"} 1',
      ]
    ) {
      assert.ok(text.split("\n").includes(line), `missing line: ${line}\n${text}`);
    }
  });

  it("serves a fallback gauge pair per metric with a fallback, read at each scrape", async () => {
    let states = [{
      hpa: { namespace: "shop", name: "web" },
      metricType: "External",
      metricName: "load",
      active: true,
      consecutiveFailures: 4,
    }];
    const metrics = createAdapterMetrics({ fallbacks: () => states });
    const scrape = async () =>
      (await (await createMetricsApp(metrics.registry).request("/metrics")).text()).split("\n")
        .filter((l) => l.startsWith("hpa_metrics_adapter_"));
    assert.deepEqual(await scrape(), [
      'hpa_metrics_adapter_fallback_active{namespace="shop",hpa="web",metric_type="External",metric="load"} 1',
      'hpa_metrics_adapter_consecutive_failures{namespace="shop",hpa="web",metric_type="External",metric="load"} 4',
    ]);
    states = [{ ...states[0], active: false, consecutiveFailures: 0 }];
    assert.deepEqual(await scrape(), [
      'hpa_metrics_adapter_fallback_active{namespace="shop",hpa="web",metric_type="External",metric="load"} 0',
      'hpa_metrics_adapter_consecutive_failures{namespace="shop",hpa="web",metric_type="External",metric="load"} 0',
    ]);
    states = []; // the HPA was deleted: its series go
    assert.deepEqual(await scrape(), []);
  });
});

describe("fast path (fastFetch)", () => {
  const CONNECTION = {
    remoteAddress: "127.0.0.1",
    encrypted: true,
    peerCertificate: null,
    rawHeaders: [],
  };
  const plainRequest = (url: string, method = "GET") => ({
    method,
    url,
    headers: {},
    connection: CONNECTION,
  });

  // every read answers on the fast path exactly as through fetch: status, headers, body
  const SAME = [
    `${CM}/v1beta2/namespaces/default/pods/*/rps?labelSelector=app%3Dweb`,
    `${CM}/v1beta2/namespaces/default/pods/%2A/rps?labelSelector=app+in+%28web%2Capi%29`,
    `${CM}/v1beta1/namespaces/default/pods/*/rps?labelSelector=app%3Dweb`,
    `${CM}/v1beta2/namespaces/default/pods/*/rps?labelSelector=app%3Dnone`,
    `${CM}/v1beta2/namespaces/default/pods/web-1/rps`,
    `${CM}/v1beta2/namespaces/default/pods/*/rps?metricLabelSelector=a%3Db`,
    `${CM}/v1beta2/namespaces/default/deployments.apps/web/requests?metricLabelSelector=path%3Dapi`,
    `${CM}/v1beta1/namespaces/default/deployments.apps/web/requests?metricLabelSelector=path%3Dapi`,
    `${CM}/v1beta2/namespaces/default/deployments.apps/*/requests?labelSelector=a%3Db`,
    `${CM}/v1beta2/nodes/n1/load`,
    `${CM}/v1beta2/namespaces/default/metrics/jobs`,
    `${CM}/v1beta2/namespaces/default/scalingschedules.zalando.org/nightly/nightly`,
    `${CM}/v1beta2/namespaces/default/pods/*/rps?labelSelector=%3D%3D%3D`,
    `${CM}/v1beta2`,
    `${CM}/v1beta3/namespaces/default/pods/*/rps`,
    `${EM}/namespaces/default/queue-length?labelSelector=queue%3Dorders%2Ctype%3Dsqs`,
    `${EM}/namespaces/default/queue-length?labelSelector=queue%3Dorders`,
    `${EM}/namespaces/default/queue-length`,
    `${EM}/namespaces/other/queue-length?labelSelector=queue%3Dorders`,
    `${EM}/namespaces/default/queue-length?labelSelector=queue%3Dnone`,
    `${EM}/queue-length`,
    "/apis/custom.metrics.k8s.io",
    "/apis/nope.example.com/v1/x",
  ];
  for (const path of SAME) {
    it(`answers ${path} as fetch does`, async () => {
      const { options } = fixture();
      const app = createApp(options);
      const fast = app.fastFetch(plainRequest(path));
      assert.ok(fast, "answered on the fast path");
      const res = await app.request(path);
      assert.deepEqual(
        [fast.status, fast.headers["content-type"], fast.headers["cache-control"], fast.body],
        [
          res.status,
          res.headers.get("content-type"),
          res.headers.get("cache-control"),
          await res.text(),
        ],
      );
    });
  }

  it("answers the same bytes again after a value changes (no stale memo)", () => {
    const { options, store, clock } = fixture();
    const app = createApp(options);
    const path = `${CM}/v1beta2/namespaces/default/scalingschedules.zalando.org/nightly/nightly`;
    assert.match(app.fastFetch(plainRequest(path))!.body, /"value":"100"/);
    clock.now = T0 + 1000;
    store.recordSuccess("sched#0", [{ value: 7, timestamp: T0 + 1000 }], T0 + 1000);
    const body = app.fastFetch(plainRequest(path))!.body;
    assert.match(body, /"timestamp":"2024-01-02T03:04:06Z","value":"7"/);
  });

  it("keeps one answer per value, as bytes only, and its text decodes to the same body", () => {
    const { options, store, clock } = fixture();
    const app = createApp(options);
    const path = `${EM}/namespaces/default/queue-length?labelSelector=queue%3Dorders`;
    const first = app.fastFetch(plainRequest(path))!;
    const again = app.fastFetch(plainRequest(path))!;
    assert.equal(again, first, "the same answer object while the value is unchanged");
    assert.deepEqual(Object.keys(first).sort(), ["bytes", "headers", "status"], "no text kept");
    assert.equal(new TextDecoder().decode(first.bytes), first.body);
    assert.equal(
      first.body,
      '{"kind":"ExternalMetricValueList","apiVersion":"external.metrics.k8s.io/v1beta1",' +
        '"metadata":{},"items":[{"metricName":"queue-length","metricLabels":{"queue":"orders",' +
        '"type":"sqs"},"timestamp":"2024-01-02T03:04:05Z","value":"1200k"}]}',
    );
    clock.now = T0 + 1000;
    store.recordSuccess("worker#0", [{ value: 5, timestamp: T0 + 1000 }], T0 + 1000);
    const changed = app.fastFetch(plainRequest(path))!;
    assert.notEqual(changed, first);
    assert.match(changed.body, /"timestamp":"2024-01-02T03:04:06Z","value":"5"/);
  });

  it("serves an external value of a plan added after the selector was read", () => {
    const { options, store } = fixture();
    const app = createApp(options);
    const path = `${EM}/namespaces/default/queue-length?labelSelector=queue%3Dorders`;
    assert.equal(JSON.parse(app.fastFetch(plainRequest(path))!.body).items.length, 1);
    store.upsertPlan({
      key: "worker2#0",
      hpa: { namespace: "default", name: "worker2" },
      servedAt: {
        kind: "external",
        namespace: "default",
        metricName: "queue-length",
        metricLabels: { queue: "orders", type: "redis" },
      },
      queryKey: "redis:orders",
    }, T0);
    store.recordSuccess("worker2#0", [{ value: 3, timestamp: T0 }], T0);
    const items = JSON.parse(app.fastFetch(plainRequest(path))!.body).items;
    assert.deepEqual(items.map((i: { value: string }) => i.value), ["3", "1200k"]); // series key order
  });

  it("checks readiness, authorization and expiry on every read of a URL it has parsed before", () => {
    let allow = true;
    const authorize = Object.assign(
      async (_c: unknown, next: () => Promise<void>) => await next(),
      { fast: () => (allow ? true as const : null) },
    );
    const { options, state, clock } = fixture({ authorize });
    const app = createApp(options);
    const path = `${CM}/v1beta2/namespaces/default/scalingschedules.zalando.org/nightly/nightly`;
    state.ready = false;
    assert.equal(app.fastFetch(plainRequest(path))!.status, 503);
    state.ready = true;
    assert.match(app.fastFetch(plainRequest(path))!.body, /"value":"100"/);
    allow = false;
    assert.equal(app.fastFetch(plainRequest(path)), null);
    allow = true;
    clock.now = T0 + 3_600_000; // past the TTL of the fixture's store
    const expired = app.fastFetch(plainRequest(path))!;
    assert.equal(expired.status, 404);
    assert.match(expired.body, /expired/);
  });

  it("answers every URL right when more distinct URLs come than it keeps parsed", () => {
    const { options } = fixture();
    const app = createApp(options);
    const path = (q: string) => `${EM}/namespaces/default/queue-length?labelSelector=queue%3D${q}`;
    for (let i = 0; i < 5000; i++) {
      assert.equal(app.fastFetch(plainRequest(path(`q${i}`)))!.status, 404);
    }
    assert.deepEqual(
      JSON.parse(app.fastFetch(plainRequest(path("orders")))!.body).items[0].value,
      "1200k",
    );
    assert.equal(app.fastFetch(plainRequest(path("q0")))!.status, 404);
  });

  it("leaves health, non-GET and unusual URLs to fetch", () => {
    const { options } = fixture();
    const app = createApp(options);
    for (
      const [url, method] of [
        ["/readyz", "GET"],
        ["/version", "GET"],
        [`${CM}/v1beta2/namespaces/default/pods/*/rps`, "HEAD"],
        [`${CM}/v1beta2/namespaces/default/pods/*/rps`, "POST"],
        [`${CM}/v1beta2/namespaces/x/../default/pods/*/rps`, "GET"],
        [`${CM}/v1beta2/namespaces/default/pods/*/rps?labelSelector=a%3D"b"`, "GET"],
      ]
    ) {
      assert.equal(app.fastFetch(plainRequest(url, method)), null, `${method} ${url}`);
    }
  });

  it("runs only when authorize has a fast check that allows the request", () => {
    const path = `${CM}/v1beta2/namespaces/default/pods/*/rps`;
    const slowOnly: MiddlewareHandler = async (_c, next) => {
      await next();
    };
    assert.equal(
      createApp(fixture({ authorize: slowOnly }).options).fastFetch(plainRequest(path)),
      null,
    );
    const undecided = Object.assign(slowOnly, { fast: () => null });
    assert.equal(
      createApp(fixture({ authorize: undecided }).options).fastFetch(plainRequest(path)),
      null,
    );
    const allows = Object.assign(async (_c: unknown, next: () => Promise<void>) => await next(), {
      fast: () => true as const,
    });
    assert.equal(
      createApp(fixture({ authorize: allows }).options).fastFetch(plainRequest(path))?.status,
      200,
    );
  });

  it("reports fast-path requests with their route and code", () => {
    const seen: RequestObservation[] = [];
    const { options } = fixture({ onRequest: (o) => seen.push(o) });
    const app = createApp(options);
    app.fastFetch(plainRequest(`${CM}/v1beta2/namespaces/default/pods/*/rps`));
    app.fastFetch(plainRequest(`${EM}/namespaces/default/nope`));
    assert.deepEqual(seen.map((o) => [o.method, o.route, o.code]), [
      ["GET", "custom", 200],
      ["GET", "external", 404],
    ]);
  });
});

describe("own metrics children", () => {
  it("still rejects unknown and missing labels after a label set was seen", () => {
    const registry = new MetricsRegistry();
    const h = registry.histogram({ name: "r_seconds", help: "R", labelNames: ["route", "code"] });
    h.observe(0.001, { route: "custom", code: "200" });
    h.observe(0.002, { route: "custom", code: "200" });
    assert.throws(
      () => h.observe(0.001, { route: "custom", code: "200", extra: "x" }),
      { message: 'unknown label "extra" for metric r_seconds' },
    );
    assert.throws(() => h.observe(0.001, { route: "custom" }), {
      message: 'missing label "code" for metric r_seconds',
    });
  });

  it("records through an observer into the same child as observe, checking labels once", () => {
    const registry = new MetricsRegistry();
    const h = registry.histogram({
      name: "o_seconds",
      help: "O",
      labelNames: ["route"],
      buckets: [0.01, 0.1],
    });
    const custom = h.observer({ route: "custom" });
    custom(0.005);
    custom(0.05);
    h.observe(0.5, { route: "custom" });
    assert.throws(() => h.observer({ route: "custom", extra: "x" }), {
      message: 'unknown label "extra" for metric o_seconds',
    });
    assert.deepEqual(h.renderSamples(), [
      'o_seconds_bucket{route="custom",le="0.01"} 1',
      'o_seconds_bucket{route="custom",le="0.1"} 2',
      'o_seconds_bucket{route="custom",le="+Inf"} 3',
      'o_seconds_sum{route="custom"} 0.555',
      'o_seconds_count{route="custom"} 3',
    ]);
  });

  it("shows an incrementer's counter only once it was called, then counts each call", () => {
    const registry = new MetricsRegistry();
    const c = registry.counter({ name: "i_total", help: "I", labelNames: ["r"] });
    const ok = c.incrementer({ r: "ok" });
    c.incrementer({ r: "error" });
    assert.deepEqual(c.renderSamples(), []);
    ok();
    ok();
    c.inc({ r: "ok" });
    assert.deepEqual(c.renderSamples(), ['i_total{r="ok"} 3']);
  });

  it("counts collections per collector and result", () => {
    const metrics = createAdapterMetrics();
    metrics.observeCollection("json-path", true, 0.01);
    metrics.observeCollection("json-path", true, 0.02);
    metrics.observeCollection("json-path", false, 1);
    metrics.observeCollection("prometheus", true, 0.5);
    assert.deepEqual(metrics.collectorCollections.renderSamples(), [
      'kube_metrics_adapter_collector_collections_total{collector="json-path",result="error"} 1',
      'kube_metrics_adapter_collector_collections_total{collector="json-path",result="success"} 2',
      'kube_metrics_adapter_collector_collections_total{collector="prometheus",result="success"} 1',
    ]);
    assert.deepEqual(
      metrics.collectionDuration.renderSamples().filter((l) => l.includes("_count")),
      [
        'kube_metrics_adapter_collection_duration_seconds_count{collector="json-path"} 3',
        'kube_metrics_adapter_collection_duration_seconds_count{collector="prometheus"} 1',
      ],
    );
  });

  it("counts requests per route and code", () => {
    const metrics = createAdapterMetrics();
    for (const [route, code] of [["custom", 200], ["custom", 404], ["custom", 200]] as const) {
      metrics.observeRequest({ method: "GET", route, code, durationSeconds: 0.001 });
    }
    const count = (labels: Record<string, string>): number =>
      metrics.requestDuration.renderSamples().filter((l) =>
        l.startsWith("kube_metrics_adapter_request_duration_seconds_count{") &&
        l.includes(`route="${labels.route}",code="${labels.code}"`)
      ).map((l) => Number(l.split(" ")[1]))[0];
    assert.deepEqual([
      count({ route: "custom", code: "200" }),
      count({ route: "custom", code: "404" }),
    ], [2, 1]);
  });

  it("keeps label sets apart that would join to the same text", () => {
    const registry = new MetricsRegistry();
    const c = registry.counter({ name: "n_total", help: "N", labelNames: ["a", "b"] });
    c.inc({ a: "x\u0000", b: "y" });
    c.inc({ a: "x", b: "\u0000y" });
    c.inc({ a: "x", b: "\u0000y" });
    assert.deepEqual([c.get({ a: "x\u0000", b: "y" }), c.get({ a: "x", b: "\u0000y" })], [1, 2]);
  });
});
