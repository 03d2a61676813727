import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createMetricsApp, MetricsRegistry } from "../../src/api/own_metrics.ts";
import { buildStatus, type StatusReport } from "../../src/api/status_model.ts";
import {
  escapeHtml,
  metricPlot,
  renderHpaPage,
  renderOverview,
  sparkline,
} from "../../src/api/status_page.ts";
import { externalHpa, historyOf, plansOf, statusInput, T0 } from "./status_support.ts";

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
  const app = createMetricsApp(new MetricsRegistry(), { status: { report: () => r } });

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

  it("has no status routes without the option (--status-page=false)", async () => {
    const plain = createMetricsApp(new MetricsRegistry());
    for (const path of ["/status", "/status.json", "/status/blue/ok"]) {
      assert.equal((await plain.request(path)).status, 404, path);
    }
  });
});
