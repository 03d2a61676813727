import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createMetricsApp, MetricsRegistry } from "../../src/api/own_metrics.ts";
import {
  buildStatus,
  type StatusGuardInput,
  type StatusReport,
} from "../../src/api/status_model.ts";
import {
  escapeHtml,
  metricPlot,
  renderHpaPage,
  renderOverview,
  schedulePlot,
  sparkline,
  type StatusRequest,
} from "../../src/api/status_page.ts";
import type { KubeObject } from "../../src/cluster/types.ts";
import {
  externalHpa,
  historyOf,
  plansOf,
  scheduleHpa,
  scheduleObject,
  statusInput,
  T0,
} from "./status_support.ts";

const SCRIPT = "<script>alert(1)</script>";

/** HPAs in several states; `web`'s json-key annotation holds a script tag. */
function report(): StatusReport {
  const web = externalHpa("web", "queue", {
    annotations: {
      "metric-config.external.queue.json-path/json-key": SCRIPT,
      "metric-config.external.queue.json-path/bearer-token": "s3cr3t-token",
    },
  });
  const ok = externalHpa("ok", "queue", { namespace: "blue" });
  const failing = externalHpa("failing", "queue");
  const pending = externalHpa("pending", "queue");
  const fallback = externalHpa("fallback", "queue", {
    annotations: {
      "metric-config.external.queue.json-path/fallback-failure-threshold": "1",
      "metric-config.external.queue.json-path/fallback-replicas": "3",
    },
  });
  const expired = externalHpa("expired", "queue");
  const conflict = externalHpa("conflict", "queue");
  const plans = [web, ok, failing, pending, fallback, expired, conflict].flatMap((h) => plansOf(h));
  return buildStatus(
    statusInput([web, ok, failing, pending, fallback, expired, conflict], plans, {
      "shop/web/0/External/queue": historyOf([1, "x"], T0 - 15_000),
      "blue/ok/0/External/queue": historyOf([30, "boom <b>", 45], T0 - 30_000),
      "shop/failing/0/External/queue": historyOf([30, "timeout", "refused"], T0 - 30_000),
      "shop/fallback/0/External/queue": historyOf(["a", "b"], T0 - 15_000),
      "shop/expired/0/External/queue": historyOf([7], T0 - 1_000_000),
      "shop/conflict/0/External/queue": historyOf([7], T0),
    }, {
      conflicts: [{ plan: { key: "shop/conflict/0/External/queue" }, message: "taken" }],
      fallbacks: [{
        hpa: { namespace: "shop", name: "fallback" },
        metricType: "External",
        metricName: "queue",
        active: true,
        consecutiveFailures: 2,
      }],
    }),
  );
}

/** The state labels of the overview's metric rows, by HPA. */
function rowStates(html: string): [string, string][] {
  const out: [string, string][] = [];
  for (const row of html.split("\n").filter((l) => l.startsWith('<tr class="metric">'))) {
    const hpa = /<a href="\/status\/[^"]+">([^<]+)<\/a>/.exec(row)![1];
    const labels = [...row.matchAll(/<span class="state s-[a-z]+">([^<]*)<\/span>/g)];
    out.push([hpa, labels[labels.length - 1][1]]);
  }
  return out;
}

describe("status page rendering", () => {
  const r = report();

  it("renders each state in words, failing first", () => {
    assert.deepEqual(rowStates(renderOverview(r)), [
      ["shop/web", "cannot be collected"],
      ["shop/failing", "failing 2 times since 2026-01-01T11:59:45.000Z"],
      ["shop/conflict", "conflict with another HPA"],
      ["shop/expired", "expired"],
      ["shop/fallback", "fallback active"],
      ["shop/pending", "not collected yet"],
      ["blue/ok", "collected"],
    ]);
  });

  it("filters the overview by namespace and state", () => {
    assert.deepEqual(rowStates(renderOverview(r, { namespace: "blue" })), [
      ["blue/ok", "collected"],
    ]);
    assert.deepEqual(rowStates(renderOverview(r, { state: "expired" })), [
      ["shop/expired", "expired"],
    ]);
    assert.match(renderOverview(r, { state: "expired" }), /1 of 7 HPAs \(state expired\)/);
  });

  it("shows values with their age and reloads itself", () => {
    const html = renderOverview(r, {}, { refreshSeconds: 5 });
    assert.ok(html.includes('<meta http-equiv="refresh" content="5">'));
    assert.ok(html.includes('<td>45 <span class="muted">(0s ago)</span></td>'));
    assert.ok(html.includes('<td>7 <span class="muted">(16m40s ago)</span></td>'));
  });

  it("escapes what comes from the cluster: an annotation with a script tag is text", () => {
    const web = r.hpas.find((h) => h.name === "web")!;
    for (const html of [renderOverview(r), renderHpaPage(web, r)]) {
      assert.ok(!html.includes(SCRIPT), "a raw script tag");
      assert.ok(!/<script/i.test(html), "a script element");
      assert.ok(html.includes("&lt;script&gt;alert(1)&lt;/script&gt;"));
    }
    const ok = r.hpas.find((h) => h.name === "ok")!;
    assert.ok(renderHpaPage(ok, r).includes("boom &lt;b&gt;"));
    assert.equal(
      escapeHtml(`<a href="x">'&'</a>`),
      "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;",
    );
  });

  it("never shows a token", () => {
    const web = r.hpas.find((h) => h.name === "web")!;
    assert.equal(web.metrics[0].config["bearer-token"], "(redacted)");
    for (const text of [renderOverview(r), renderHpaPage(web, r), JSON.stringify(r)]) {
      assert.ok(!text.includes("s3cr3t-token"));
    }
  });

  it("lists the planner's errors on the HPA page", () => {
    const web = r.hpas.find((h) => h.name === "web")!;
    const html = renderHpaPage(web, r);
    assert.ok(
      html.includes(
        '<ul class="err"><li>External queue: invalid json-key &quot;&lt;script&gt;alert(1)' +
          "&lt;/script&gt;&quot; for External metric `queue` of HPA shop/web (annotation " +
          "metric-config.external.queue.json-path/json-key): a JSONPath starts with " +
          "&quot;$&quot;</li></ul>",
      ),
      html,
    );
  });

  it("shows the replica comparison with its reasons and note", () => {
    const ok = r.hpas.find((h) => h.name === "ok")!;
    const html = renderHpaPage(ok, r);
    assert.ok(html.includes("<tr><th>desired (HPA status)</th><td>2</td></tr>"));
    assert.ok(html.includes("<tr><th>computed here</th><td>4</td></tr>"));
    assert.ok(html.includes("<li>rate: the desired replica count is increasing faster"));
    assert.ok(html.includes("best effort: computed here"));
  });

  it("draws a sparkline of the values with the failures marked", () => {
    const ok = r.hpas.find((h) => h.name === "ok")!;
    assert.equal(
      sparkline(ok.metrics[0].history),
      '<svg class="spark" width="120" height="24" viewBox="0 0 120 24" role="img">' +
        '<polyline points="1,8.7 119,2"/><line class="fail" x1="60" y1="18" x2="60" y2="24"/>' +
        "</svg>",
    );
    assert.equal(
      sparkline([]),
      '<svg class="spark" width="120" height="24" viewBox="0 0 120 24" role="img"></svg>',
    );
  });

  it("plots a metric: a circle per value, a cross per failure, the target line", () => {
    const ok = r.hpas.find((h) => h.name === "ok")!;
    const svg = metricPlot(ok.metrics[0]);
    assert.equal([...svg.matchAll(/<circle /g)].length, 2);
    assert.equal([...svg.matchAll(/<path class="fail"/g)].length, 1);
    // 0..45 over 140 px from y 10: the target 10 is at 150 - 10/45 * 140
    assert.ok(svg.includes('<line class="target" x1="60" y1="118.9" x2="620" y2="118.9"/>'));
    assert.ok(svg.includes(">target 10</text>"));
    assert.ok(svg.includes("<title>2026-01-01T11:59:45.000Z: failed</title>"));
  });
});

describe("status routes on the metrics app", () => {
  const r = report();
  const app = createMetricsApp(new MetricsRegistry(), {
    status: () => Promise.resolve({ report: () => r }),
  });

  it("serves /status.json", async () => {
    const res = await app.request("/status.json");
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/json; charset=utf-8");
    const doc = await res.json();
    assert.equal(doc.version, 1);
    assert.deepEqual(doc, JSON.parse(JSON.stringify(r)));
  });

  it("serves the overview, filtered by the query", async () => {
    const res = await app.request("/status?namespace=blue");
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8");
    assert.deepEqual(rowStates(await res.text()), [["blue/ok", "collected"]]);
  });

  it("serves one HPA's page, and 404 for an unknown one", async () => {
    const res = await app.request("/status/blue/ok");
    assert.equal(res.status, 200);
    assert.match(await res.text(), /<h1>blue\/ok <span class="state s-collected">collected/);
    const missing = await app.request("/status/blue/%3Cnope%3E");
    assert.equal(missing.status, 404);
    assert.match(await missing.text(), /no HPA blue\/&lt;nope&gt; is known/);
  });

  it("loads the page on its first request, and again after a failed load", async () => {
    let loads = 0;
    const app = createMetricsApp(new MetricsRegistry(), {
      status: () => {
        loads++;
        return loads === 1
          ? Promise.reject(new Error("not yet"))
          : Promise.resolve({ report: () => r });
      },
    });
    assert.equal((await app.request("/metrics")).status, 200);
    assert.equal(loads, 0, "nothing loaded before a status request");
    assert.equal((await app.request("/status.json")).status, 500);
    assert.equal((await app.request("/status.json")).status, 200);
    assert.equal((await app.request("/status/blue/ok")).status, 200);
    assert.equal((await app.request("/status")).status, 200);
    assert.equal(loads, 2);
  });

  it("has no status routes without the option (--status-page=false)", async () => {
    const plain = createMetricsApp(new MetricsRegistry());
    for (const path of ["/status", "/status.json", "/status/blue/ok"]) {
      assert.equal((await plain.request(path)).status, 404, path);
    }
  });
});

/** The rows of the table after the `<h2>` or `<h3>` that contains `heading`, as [th, td HTML]. */
function tableAfter(html: string, heading: string): [string, string][] {
  const at = html.indexOf(heading);
  assert.ok(at >= 0, `no ${heading}`);
  const table = /<table[^>]*>(.*?)<\/table>/s.exec(html.slice(at))![1];
  return [...table.matchAll(/<tr><th>(.*?)<\/th><td>(.*?)<\/td><\/tr>/g)].map((m) => [m[1], m[2]]);
}

describe("status page: turning the reload off", () => {
  const r = report();

  it("reloads by default and links to ?refresh=0", () => {
    const html = renderOverview(r, { namespace: "blue" });
    assert.ok(html.includes('<meta http-equiv="refresh" content="10">'));
    assert.ok(
      html.includes(
        'reloads every 10s (<a class="refresh" href="/status?namespace=blue&amp;refresh=0">stop</a>)',
      ),
      html,
    );
    assert.ok(html.includes('<a href="/status/blue/ok">blue/ok</a>'));
  });

  it("does not reload with refresh off, and keeps it off in every link it has", () => {
    const html = renderOverview(r, { namespace: "blue" }, { refresh: false });
    assert.ok(!html.includes("http-equiv"));
    assert.ok(
      html.includes(
        'not reloading (<a class="refresh" href="/status?namespace=blue">reload every 10s</a>)',
      ),
    );
    assert.ok(html.includes('<a href="/status/blue/ok?refresh=0">blue/ok</a>'));
    assert.ok(html.includes('<a href="/status?namespace=blue&amp;state=failing&amp;refresh=0">'));
    const ok = r.hpas.find((h) => h.name === "ok")!;
    const page = renderHpaPage(ok, r, { refresh: false });
    assert.ok(!page.includes("http-equiv"));
    assert.ok(page.includes('<p><a href="/status?refresh=0">&larr; all HPAs</a></p>'));
    assert.ok(
      page.includes(
        'not reloading (<a class="refresh" href="/status/blue/ok">reload every 10s</a>)',
      ),
    );
  });

  it("reads ?refresh=0 on every page", async () => {
    const app = createMetricsApp(new MetricsRegistry(), {
      status: () => Promise.resolve({ report: () => r }),
    });
    for (
      const path of ["/status?refresh=0", "/status/blue/ok?refresh=0", "/status/x/y?refresh=0"]
    ) {
      assert.ok(!(await (await app.request(path)).text()).includes("http-equiv"), path);
    }
    assert.ok((await (await app.request("/status/blue/ok")).text()).includes("http-equiv"));
  });
});

describe("status page: cosmetics", () => {
  const r = report();

  it("styles the target line dashed, and its label as plain text", () => {
    const html = renderOverview(r);
    const css = /<style>(.*?)<\/style>/s.exec(html)![1];
    // a rule on `.target` alone would stroke and dash the label's letters as well
    assert.ok(!/(^|[\s,}])svg \.target\b/.test(css), css);
    assert.ok(css.includes("svg line.target{stroke:#17693a;stroke-dasharray:4 3}"));
    assert.ok(css.includes("svg text.target{fill:#17693a}"));
  });

  it("cuts a long error in the overview, the whole text one click away", () => {
    const long = `unsuccessful response <b> ${"x".repeat(200)}`;
    const hpa = externalHpa("long", "queue");
    const plans = plansOf(hpa);
    const rr = buildStatus(statusInput([hpa], plans, { [plans[0].key]: historyOf([long], T0) }));
    const html = renderOverview(rr);
    const cut = escapeHtml(long.slice(0, 120));
    assert.ok(
      html.includes(
        `<td class="state-cell"><span class="state s-failing">failing 1 time since ` +
          `2026-01-01T12:00:00.000Z</span><br><details class="err"><summary>${cut}&hellip;` +
          `</summary>${escapeHtml(long)}</details></td>`,
      ),
      html,
    );
    // a short one is shown whole
    assert.ok(renderOverview(r).includes('<br><span class="err">refused</span></td>'));
  });

  it("shows the selector's labels as the selector, not as annotations", () => {
    const ok = r.hpas.find((h) => h.name === "ok")!;
    const rows = tableAfter(renderHpaPage(ok, r), "External queue</h2>");
    // the label `type` is not a `metric-config.` annotation
    assert.deepEqual(rows.slice(-3), [
      ["selector", "<code>type=json-path</code>"],
      ["config endpoint", "<code>http://127.0.0.1:9/queue</code>"],
      ["config json-key", "<code>$.n</code>"],
    ]);
    assert.deepEqual(ok.metrics[0].config, {
      endpoint: "http://127.0.0.1:9/queue",
      "json-key": "$.n",
      type: "json-path",
    });
  });
});

describe("status page: the replica guard and the fallback", () => {
  const hpa = externalHpa("guarded", "queue", {
    annotations: {
      "estafette.io/hpa-scaler": "true",
      "metric-config.external.queue.json-path/fallback-failure-threshold": "1",
      "metric-config.external.queue.json-path/fallback-replicas": "3",
    },
  });
  const plans = plansOf(hpa);
  const decision: StatusGuardInput = {
    at: T0,
    query: 'sum(rate(x{a="<script>"}[1m]))',
    queryValue: 22.54,
    minReplicas: 9,
    maxScaleDown: 1,
    scaleDownMinimum: 1,
    message: "minReplicas 1 -> 9, maxReplicas 10 -> 10: query 22.54 / 2.5 - 0.5",
    changed: true,
    written: true,
    error: null,
  };
  const build = (guard?: StatusGuardInput | null) =>
    buildStatus(statusInput([hpa], plans, { [plans[0].key]: historyOf(["a", "b"], T0) }, {
      fallbacks: [{
        hpa: { namespace: "shop", name: "guarded" },
        metricType: "External",
        metricName: "queue",
        active: true,
        consecutiveFailures: 2,
        last: {
          since: T0,
          endedAt: null,
          value: 30,
          replicas: 3,
          cause: "2 consecutive failed collections (the last: <b>)",
          endReason: null,
        },
      }],
      ...(guard === undefined ? {} : { replicaGuard: () => guard }),
    }));

  it("shows the guard's last decision, its query escaped", () => {
    const r = build(decision);
    const html = renderHpaPage(r.hpas[0], r);
    assert.deepEqual(tableAfter(html, "<h2>Replica guard</h2>"), [
      ["decided at", "2026-01-01T12:00:00.000Z"],
      ["query", "<code>sum(rate(x{a=&quot;&lt;script&gt;&quot;}[1m]))</code>"],
      ["query result", "22.54"],
      ["minReplicas", "9"],
      ["scale-down cap", "at most 1 replica removed per scale-down: minReplicas at least 1"],
      [
        "decision",
        'minReplicas 1 -&gt; 9, maxReplicas 10 -&gt; 10: query 22.54 / 2.5 - 0.5 <span class="muted">(written)</span>',
      ],
    ]);
    assert.ok(!/<script/.test(html));
  });

  it("says the guard has not decided yet, and says nothing while it is off", () => {
    const waiting = build(null);
    assert.ok(
      renderHpaPage(waiting.hpas[0], waiting).includes(
        '<h2>Replica guard</h2>\n<p class="muted">no decision yet: the guard decides on the leader, once per pass</p>',
      ),
    );
    const off = build();
    assert.ok(!renderHpaPage(off.hpas[0], off).includes("Replica guard"));
  });

  it("shows the failure that kept the guard from deciding", () => {
    const r = build({
      ...decision,
      query: null,
      queryValue: null,
      minReplicas: null,
      maxScaleDown: null,
      scaleDownMinimum: null,
      message: null,
      changed: false,
      written: false,
      error: 'query "sum(": 400 Bad Request',
    });
    assert.deepEqual(tableAfter(renderHpaPage(r.hpas[0], r), "<h2>Replica guard</h2>"), [
      ["decided at", "2026-01-01T12:00:00.000Z"],
      ["error", '<span class="err">query &quot;sum(&quot;: 400 Bad Request</span>'],
    ]);
  });

  it("shows since when the fallback is active, what it serves and why", () => {
    const r = build();
    const row = tableAfter(renderHpaPage(r.hpas[0], r), "External queue</h2>")
      .find(([k]) => k === "fallback");
    assert.deepEqual(row, [
      "fallback",
      "active since 2026-01-01T12:00:00.000Z, serving 30 (3 replicas): 2 consecutive failed " +
      "collections (the last: &lt;b&gt;)",
    ]);
  });
});

describe("status page: the next 24 hours of a ScalingSchedule", () => {
  const peak = scheduleObject("ScalingSchedule", "peak", {
    date: "2026-01-01T18:00:00Z",
    minutes: 60,
    value: 30,
  });
  const hpa = scheduleHpa("sched", [
    { kind: "ScalingSchedule", name: "peak" },
    { kind: "ClusterScalingSchedule", name: "launch<script>" },
  ]);
  const plans = plansOf(hpa);
  const objects: KubeObject[] = [peak];
  const r = buildStatus(statusInput([hpa], plans, {}, {
    schedules: {
      options: { defaultTimeZone: "UTC", defaultScalingWindowSeconds: 600, rampSteps: 10 },
      get: (kind, ns, name) =>
        objects.find((o) =>
          o.kind === kind && o.metadata.name === name && o.metadata.namespace === ns
        ),
    },
  }));

  it("draws the value as steps: a segment per step, the ramps' 1-minute steps as a slope", () => {
    const s = r.schedules.find((x) => x.name === "peak")!;
    const svg = schedulePlot(s);
    const points = /<polyline class="steps" points="([^"]+)"\/>/.exec(svg)![1].split(" ");
    // 21 steps (0, nine up, 30, ten down), two points each
    assert.equal(points.length, 42);
    // x: 60 + 560 px over 24 h from 12:00; y: 130 - 120 px * value / 30
    assert.deepEqual(points.slice(0, 5), [
      "60,130",
      "196.5,130",
      "196.5,118",
      "196.9,118",
      "196.9,106",
    ]);
    assert.deepEqual(points.slice(18, 22), ["199.6,22", "200,22", "200,10", "223.3,10"]);
    assert.deepEqual(points.slice(-2), ["226.8,130", "620,130"]);
    assert.ok(svg.includes(">30</text>"));
    assert.ok(svg.includes(">2026-01-01T12:00:00.000Z</text>"));
    assert.ok(svg.includes(">2026-01-02T12:00:00.000Z</text>"));
  });

  it("lists the value now and the next changes under the metric, names escaped", () => {
    const html = renderHpaPage(r.hpas[0], r);
    assert.ok(
      html.includes(
        "<h3>ScalingSchedule shop/peak: next 24 hours</h3>\n" +
          "<p>value now <b>0</b> (not active) &middot; ramps of 10 steps over 10m0s</p>\n",
      ),
      html,
    );
    assert.ok(
      html.includes(
        '<ul class="changes"><li>up to 30 from 2026-01-01T17:51:00.000Z to ' +
          "2026-01-01T18:00:00.000Z (10 steps)</li><li>down to 0 from " +
          "2026-01-01T19:00:00.001Z to 2026-01-01T19:09:00.001Z (10 steps)</li></ul>",
      ),
    );
    assert.ok(
      html.includes(
        "<h3>ClusterScalingSchedule launch&lt;script&gt;: next 24 hours</h3>\n" +
          '<p class="err">ClusterScalingSchedule launch&lt;script&gt; not found</p>',
      ),
    );
    assert.ok(!/<script/.test(html));
    assert.equal([...html.matchAll(/<svg class="schedule"/g)].length, 1);
  });

  it("asks for the schedules on one HPA's page and in the JSON, not for the overview", async () => {
    const requests: StatusRequest[] = [];
    const app = createMetricsApp(new MetricsRegistry(), {
      status: () =>
        Promise.resolve({
          report: (request: StatusRequest) => {
            requests.push(request);
            return r;
          },
        }),
    });
    await app.request("/status");
    const page = await (await app.request("/status/shop/sched")).text();
    const doc = await (await app.request("/status.json")).json();
    assert.deepEqual(requests, [
      { schedules: false },
      { hpa: { namespace: "shop", name: "sched" }, schedules: true },
      { schedules: true },
    ]);
    assert.equal([...page.matchAll(/<svg class="schedule"/g)].length, 1);
    assert.deepEqual(doc.schedules.map((s: { name: string }) => s.name), [
      "launch<script>",
      "peak",
    ]);
  });
});

describe("status page: the ScaledObject behind an HPA", () => {
  it("names it, who serves it, its Ready condition (escaped) and its triggers' metrics", () => {
    const r = report();
    const web = { ...r.hpas.find((h) => h.name === "web")! };
    web.scaledObject = {
      name: "web",
      owner: "hpa-metrics-adapter",
      ready: {
        status: "False",
        reason: "ScaledObjectCheckFailed",
        message: 'missing "threshold" <b>',
      },
      triggers: [
        {
          index: 0,
          type: "prometheus",
          name: "rps",
          metricName: "s0-prometheus",
          activation: 2.5,
          active: true,
        },
        { index: 1, type: "cpu", name: null, metricName: null, activation: null, active: null },
      ],
      loop: {
        active: { status: "False", reason: "ScalerCooldown" },
        lastActiveTime: "2026-01-01T11:59:00Z",
        cooldownEndsAt: "2026-01-01T12:04:00Z",
        next: "scale to 0 when the cooldown ends (2026-01-01T12:04:00.000Z)",
      },
    };
    const html = renderHpaPage(web, r);
    assert.deepEqual(tableAfter(html, "<h2>ScaledObject web</h2>"), [
      ["served by", "this adapter (--keda-scaled-objects)"],
      [
        "Ready",
        'False ScaledObjectCheckFailed: <span class="err">missing &quot;threshold&quot; &lt;b&gt;</span>',
      ],
      ["Active", "False ScalerCooldown"],
      ["last active", "2026-01-01T11:59:00Z"],
      ["cooldown ends", "2026-01-01T12:04:00Z"],
      ["next", "scale to 0 when the cooldown ends (2026-01-01T12:04:00.000Z)"],
    ]);
    assert.ok(
      html.includes(
        "<tr><td>0</td><td>prometheus</td><td>rps</td><td><code>s0-prometheus</code></td><td>&gt; 2.5</td><td>active</td></tr>",
      ),
    );
    assert.ok(
      html.includes(
        '<tr><td>1</td><td>cpu</td><td></td><td><span class="muted">Resource</span></td><td></td><td></td></tr>',
      ),
    );
    // without one, no section
    assert.ok(!renderHpaPage(r.hpas.find((h) => h.name === "web")!, r).includes("ScaledObject"));
  });
});

describe("status page: prometheus-adapter's rules", () => {
  const status = {
    config: "/etc/adapter/config.yaml",
    refused: `rules[1].metricsQuery: invalid template ${SCRIPT}`,
    discovery: { at: "2026-01-01T12:00:00.000Z", error: null },
    rules: [{
      rule: "rules[0]",
      seriesQuery: '{__name__=~"^http_.*_total$",namespace!=""}',
      metricsQuery: "sum(rate(<<.Series>>{<<.LabelMatchers>>}[5m])) by (<<.GroupBy>>)",
      metrics: Array.from({ length: 22 }, (_, i) => `pods/m${i}`),
    }],
    externalRules: [{
      rule: "externalRules[0]",
      seriesQuery: "queue_depth",
      metricsQuery: "sum(<<.Series>>{<<.LabelMatchers>>})",
      metrics: [],
    }],
    resourceRules: true,
  };

  it("lists each rule with its queries and the metrics it serves, and a refused edit, escaped", () => {
    const html = renderOverview({ ...report(), prometheusAdapter: status });
    const section = html.slice(html.indexOf("<h2>prometheus-adapter rules</h2>"));
    assert.ok(section.length > 0);
    assert.ok(
      section.includes(
        "/etc/adapter/config.yaml &middot; discovery last 2026-01-01T12:00:00.000Z &middot; resourceRules served (metrics.k8s.io)",
      ),
    );
    assert.ok(
      section.includes(
        "the file&#39;s last edit was refused, the last good config serves: rules[1].metricsQuery: invalid template &lt;script&gt;alert(1)&lt;/script&gt;",
      ),
      section,
    );
    assert.ok(!section.includes(SCRIPT));
    const rows = section.split("\n").filter((l) => l.startsWith("<tr><td>"));
    assert.equal(rows.length, 2);
    assert.ok(
      rows[0].startsWith(
        "<tr><td>rules[0]</td><td><code>{__name__=~&quot;^http_.*_total$&quot;,namespace!=&quot;&quot;}</code></td><td><code>sum(rate(&lt;&lt;.Series&gt;&gt;{&lt;&lt;.LabelMatchers&gt;&gt;}[5m])) by (&lt;&lt;.GroupBy&gt;&gt;)</code></td><td>22</td><td>pods/m0<br>pods/m1<br>",
      ),
      rows[0],
    );
    // twenty named, the rest counted
    assert.ok(rows[0].endsWith('pods/m19<br><span class="muted">and 2 more</span></td></tr>'));
    assert.equal(
      rows[1],
      '<tr><td>externalRules[0]</td><td><code>queue_depth</code></td><td><code>sum(&lt;&lt;.Series&gt;&gt;{&lt;&lt;.LabelMatchers&gt;&gt;})</code></td><td>0</td><td><span class="muted">none</span></td></tr>',
    );
    // without the config, no section
    assert.ok(!renderOverview(report()).includes("prometheus-adapter rules"));
  });

  it("is in status.json's report, not in one HPA's", () => {
    const hpa = externalHpa("web", "queue");
    const input = { ...statusInput([hpa], [], {}), prometheusAdapter: () => status };
    assert.deepEqual(buildStatus(input).prometheusAdapter, status);
    assert.equal(
      buildStatus({ ...input, only: { namespace: "shop", name: "web" } }).prometheusAdapter,
      undefined,
    );
  });
});
