/**
 * The status page of issue 24 end to end in file mode: the adapter (`serve --manifests`, a child
 * process of the runtime under test) with its `--metrics-address`, and a real loopback JSON
 * endpoint: HPA `working` reads `{"queue": {"depth": 6.5}}` every second, HPA `broken` reads a
 * path that answers 500. `/status.json`, `/status` and `/status/<ns>/<name>` are read over HTTP.
 *
 * A second adapter runs the replica guard against the REAL Prometheus (`vector(22.54)`), a
 * ScalingSchedule that starts two hours after the test does, and a metric whose fallback is
 * served: their last decisions and the schedule's next 24 hours in `/status.json` and on the
 * HPAs' pages.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import {
  type AdapterProcess,
  currentRuntime,
  dailySchedule,
  httpGet,
  makeTempDir,
  type QueueEndpoint,
  scheduleHpa,
  startAdapterProcess,
  startQueueEndpoint,
  waitFor,
  writeManifests,
} from "./support.ts";
import { freePort } from "./formula_support.ts";
import { type RealPrometheus, startPrometheus } from "../fakes/prometheus_server.ts";

const NAMESPACE = "status";

function hpa(name: string, url: string): Record<string, unknown> {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: {
      name,
      namespace: NAMESPACE,
      annotations: {
        "metric-config.external.queue-depth.json-path/endpoint": url,
        "metric-config.external.queue-depth.json-path/json-key": "$.queue.depth",
        "metric-config.external.queue-depth.json-path/interval": "1s",
      },
    },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name },
      minReplicas: 1,
      maxReplicas: 10,
      metrics: [{
        type: "External",
        external: {
          metric: {
            name: "queue-depth",
            selector: { matchLabels: { type: "json-path", hpa: name } },
          },
          target: { type: "AverageValue", averageValue: "2" },
        },
      }],
    },
    status: { currentReplicas: 2, desiredReplicas: 2 },
  };
}

describe(`status page in file mode (${currentRuntime()})`, () => {
  let dir: string | undefined;
  let endpoint: QueueEndpoint | undefined;
  let adapter: AdapterProcess | undefined;
  let base = "";
  /** The endpoint's base URL. */
  let url = "";

  before(async () => {
    endpoint = await startQueueEndpoint();
    url = endpoint.url;
    dir = await makeTempDir("faults-status-");
    const manifests = join(dir, "manifests");
    await writeManifests(manifests, [
      hpa("working", `${url}/queue`),
      hpa("broken", `${url}/fail`),
    ], "hpas.yaml");
    const metricsPort = await freePort();
    base = `http://127.0.0.1:${metricsPort}`;
    adapter = await startAdapterProcess({
      manifests,
      certDir: join(dir, "certs"),
      // after support.ts' `--metrics-address ""`: the last one counts
      flags: ["--metrics-address", `127.0.0.1:${metricsPort}`],
    });
  });

  after(async () => {
    await adapter?.stop();
    await endpoint?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  // deno-lint-ignore no-explicit-any
  type Doc = any;

  async function statusJson(): Promise<Doc> {
    const r = await httpGet(`${base}/status.json`);
    assert.equal(r.status, 200, r.body);
    assert.equal(r.headers["content-type"], "application/json; charset=utf-8");
    return JSON.parse(r.body);
  }

  function logsTail(): string {
    return `--- adapter output ---\n${adapter?.logs().slice(-3000) ?? ""}`;
  }

  it("reports a collected metric and a failing one in /status.json", async () => {
    let doc: Doc = null;
    try {
      doc = await waitFor("a value of working and two failures of broken", async () => {
        const d = await statusJson();
        const byName = new Map(d.hpas.map((h: Doc) => [h.name, h]));
        const w: Doc = byName.get("working");
        const b: Doc = byName.get("broken");
        return w?.metrics[0]?.value === 6.5 && b?.metrics[0]?.failures >= 2 &&
            w.metrics[0].history.length >= 2
          ? d
          : null;
      }, { timeoutMs: 30_000 });
    } catch (e) {
      throw new Error(`${(e as Error).message}\n${JSON.stringify(doc)}\n${logsTail()}`);
    }
    assert.equal(doc.version, 1);
    assert.ok(!Number.isNaN(Date.parse(doc.generatedAt)));
    assert.deepEqual(doc.hpas.map((h: Doc) => [h.name, h.state]), [
      ["broken", "failing"],
      ["working", "collected"],
    ]);
    const [broken, working] = doc.hpas;
    assert.deepEqual(
      {
        state: broken.metrics[0].state,
        error: broken.metrics[0].error,
        value: broken.metrics[0].value,
        collector: broken.metrics[0].collector,
        intervalSeconds: broken.metrics[0].intervalSeconds,
      },
      {
        state: "failing",
        error: `unsuccessful response "500 Internal Server Error" from ${url}/fail`,
        value: null,
        collector: "json-path",
        intervalSeconds: 1,
      },
    );
    assert.ok(broken.metrics[0].history.every((p: Doc) => p.failed === true && p.value === null));
    assert.equal(typeof broken.metrics[0].failingSince, "string");
    assert.deepEqual(broken.replicas.computed, null);

    const m = working.metrics[0];
    assert.deepEqual(
      [m.type, m.name, m.state, m.value, m.samples, m.failures, m.error],
      ["External", "queue-depth", "collected", 6.5, 1, 0, null],
    );
    assert.ok(m.history.every((p: Doc) => p.value === 6.5), JSON.stringify(m.history));
    assert.ok(m.ageSeconds >= 0 && m.ageSeconds < 5, String(m.ageSeconds));
    assert.deepEqual(m.config, {
      endpoint: m.config.endpoint,
      hpa: "working",
      "json-key": "$.queue.depth",
      type: "json-path",
    });
    // 6.5 / 2 over 2 replicas: ceil(2 * 1.625) = 4, the legacy scale-up limit's bound
    assert.deepEqual(
      [working.replicas.current, working.replicas.desired, working.replicas.computed],
      [2, 2, 4],
    );
  });

  it("renders the overview, failing first, and filters it by state", async () => {
    const r = await httpGet(`${base}/status`);
    assert.equal(r.status, 200);
    assert.equal(r.headers["content-type"], "text/html; charset=utf-8");
    assert.match(r.body, /<meta http-equiv="refresh" content="\d+">/);
    const rows = r.body.split("\n").filter((l) => l.startsWith('<tr class="metric">'));
    assert.equal(rows.length, 2);
    assert.match(rows[0], /status\/broken<\/a>/);
    assert.ok(
      rows[0].includes(
        '<span class="err">unsuccessful response &quot;500 Internal Server Error&quot; from ' +
          `${url}/fail</span>`,
      ),
      rows[0],
    );
    assert.match(
      rows[0],
      /<span class="state s-failing">failing \d+ times since [0-9T:.-]+Z<\/span>/,
    );
    assert.match(rows[1], /status\/working<\/a>/);
    assert.match(rows[1], /<td>6\.5 <span class="muted">\(\d+s ago\)<\/span><\/td>/);
    assert.match(rows[1], /<polyline points="/);
    assert.ok(!/https?:\/\/(?!127\.0\.0\.1)/.test(r.body.replace(/href="\/[^"]*"/g, "")));

    const failing = await httpGet(`${base}/status?state=failing`);
    const failingRows = failing.body.split("\n").filter((l) => l.startsWith('<tr class="metric">'));
    assert.equal(failingRows.length, 1);
    assert.match(failingRows[0], /status\/broken<\/a>/);
  });

  it("renders one HPA's page with a plot of its values and its target", async () => {
    const r = await httpGet(`${base}/status/${NAMESPACE}/working`);
    assert.equal(r.status, 200);
    assert.match(r.body, /<h1>status\/working <span class="state s-collected">collected<\/span>/);
    assert.match(r.body, /<tr><th>computed here<\/th><td>4<\/td><\/tr>/);
    const plot = /<svg class="plot"[\s\S]*?<\/svg>/.exec(r.body)![0];
    assert.ok([...plot.matchAll(/<circle /g)].length >= 2);
    assert.match(plot, />target 2<\/text>/);
    const missing = await httpGet(`${base}/status/${NAMESPACE}/nope`);
    assert.equal(missing.status, 404);
  });
});

describe(`status page: guard, fallback and schedule in file mode (${currentRuntime()})`, () => {
  let dir: string | undefined;
  let endpoint: Server | undefined;
  let prom: RealPrometheus | undefined;
  let adapter: AdapterProcess | undefined;
  let base = "";
  let url = "";
  /** When the daily schedule starts next: two hours after the test's start, to the minute. */
  let start = 0;

  before(async () => {
    endpoint = createServer((req, res) => {
      res.writeHead(req.url === "/queue" ? 200 : 500, { "content-type": "application/json" });
      res.end(req.url === "/queue" ? JSON.stringify({ queue: { depth: 6.5 } }) : "{}");
    });
    endpoint.listen(0, "127.0.0.1");
    await once(endpoint, "listening");
    url = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}`;
    // nothing to scrape: the guard's query is a constant
    prom = await startPrometheus({ targets: ["127.0.0.1:9"], readyQuery: "vector(1)" });
    dir = await makeTempDir("faults-status-guard-");
    const manifests = join(dir, "manifests");
    start = Math.floor((Date.now() + 2 * 3_600_000) / 60_000) * 60_000;
    const guarded = hpa("guarded", `${url}/queue`);
    Object.assign((guarded.metadata as { annotations: object }).annotations, {
      "estafette.io/hpa-scaler": "true",
      "estafette.io/hpa-scaler-prometheus-query": "vector(22.54)",
      "estafette.io/hpa-scaler-requests-per-replica": "2.5",
      "estafette.io/hpa-scaler-delta": "-0.5",
    });
    const fallback = hpa("fallback", `${url}/fail`);
    Object.assign((fallback.metadata as { annotations: object }).annotations, {
      "metric-config.external.queue-depth.json-path/fallback-failure-threshold": "0",
      "metric-config.external.queue-depth.json-path/fallback-replicas": "3",
    });
    await writeManifests(manifests, [
      guarded,
      fallback,
      hpa("working", `${url}/queue`),
      scheduleHpa(NAMESPACE, "scheduled", "daily"),
      dailySchedule(NAMESPACE, "daily", new Date(start).toISOString().slice(11, 16)),
    ], "objects.yaml");
    const metricsPort = await freePort();
    base = `http://127.0.0.1:${metricsPort}`;
    adapter = await startAdapterProcess({
      manifests,
      certDir: join(dir, "certs"),
      flags: [
        "--metrics-address",
        `127.0.0.1:${metricsPort}`,
        "--scaling-schedule",
        "--estafette-hpa-scaler",
        "--estafette-prometheus-server-url",
        prom.url,
      ],
    });
  });

  after(async () => {
    await adapter?.stop();
    await prom?.stop();
    if (endpoint) {
      endpoint.closeAllConnections();
      await new Promise<void>((r) => endpoint!.close(() => r()));
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  // deno-lint-ignore no-explicit-any
  type Doc = any;

  it("reports the guard's decision, the fallback's episode and the schedule's next 24 hours", async () => {
    let doc: Doc = null;
    try {
      doc = await waitFor("the guard's pass, the fallback, every collection", async () => {
        const d = JSON.parse((await httpGet(`${base}/status.json`)).body);
        const by = new Map(d.hpas.map((h: Doc) => [h.name, h]));
        const g: Doc = by.get("guarded");
        const f: Doc = by.get("fallback");
        return g?.replicaGuard?.at && f?.metrics[0].fallback.active &&
            d.hpas.every((h: Doc) => h.state === "collected" || h.state === "fallback")
          ? d
          : null;
      }, { timeoutMs: 30_000 });
    } catch (e) {
      throw new Error(`${(e as Error).message}\n${adapter?.logs().slice(-3000)}`);
    }
    const by = new Map(doc.hpas.map((h: Doc) => [h.name, h]));
    const g: Doc = by.get("guarded");
    // ceil(-0.5 + 22.54 / 2.5) = 9; the cap floor(2 x 1) = 2 allows 0
    assert.deepEqual(g.replicaGuard, {
      at: g.replicaGuard.at,
      query: "vector(22.54)",
      queryValue: 22.54,
      minReplicas: 9,
      maxScaleDown: 2,
      scaleDownMinimum: 0,
      message: "minReplicas 1 -> 9: query 22.54 / 2.5 - 0.5",
      changed: true,
      written: false,
      error: null,
    });
    // the guard is on, but not for these
    assert.equal((by.get("working") as Doc).replicaGuard, null);
    assert.equal((by.get("scheduled") as Doc).replicaGuard, null);

    const fb: Doc = (by.get("fallback") as Doc).metrics[0].fallback;
    assert.deepEqual(
      [fb.active, fb.value, fb.replicas, fb.endedAt, typeof fb.activeSince],
      [true, 6, 3, null, "string"],
    );
    assert.match(
      fb.reason,
      /^\d+ consecutive failed collections \(the last: unsuccessful response/,
    );

    assert.deepEqual((by.get("scheduled") as Doc).metrics[0].schedule, {
      kind: "ScalingSchedule",
      namespace: NAMESPACE,
      name: "daily",
    });
    assert.equal(doc.schedules.length, 1);
    const s = doc.schedules[0];
    assert.equal(s.from, doc.generatedAt);
    assert.equal(Date.parse(s.to) - Date.parse(s.from), 86_400_000);
    assert.deepEqual(
      [s.kind, s.namespace, s.name, s.error, s.active, s.scalingWindowSeconds, s.rampSteps],
      ["ScalingSchedule", NAMESPACE, "daily", null, false, 600, 10],
    );
    const iso = (ms: number): string => new Date(ms).toISOString();
    assert.deepEqual(s.steps, [
      { at: s.from, value: 0 },
      ...[5, 10, 15, 20, 25, 30, 35, 40, 45, 50].map((value, i) => ({
        at: iso(start - 540_000 + i * 60_000),
        value,
      })),
      ...[45, 40, 35, 30, 25, 20, 15, 10, 5, 0].map((value, i) => ({
        at: iso(start + 3_600_001 + i * 60_000),
        value,
      })),
    ]);
  });

  it("shows them on the HPAs' pages, and nothing of the guard where it is not on", async () => {
    const guarded = (await httpGet(`${base}/status/${NAMESPACE}/guarded`)).body;
    assert.match(
      guarded,
      /<h2>Replica guard<\/h2>\n<table class="guard"><tr><th>decided at<\/th><td>[0-9T:.-]+Z<\/td><\/tr><tr><th>query<\/th><td><code>vector\(22\.54\)<\/code><\/td><\/tr><tr><th>query result<\/th><td>22\.54<\/td><\/tr><tr><th>minReplicas<\/th><td>9<\/td><\/tr>/,
    );
    assert.ok(
      !(await httpGet(`${base}/status/${NAMESPACE}/working`)).body.includes("Replica guard"),
    );
    const scheduled = (await httpGet(`${base}/status/${NAMESPACE}/scheduled`)).body;
    const points = /<polyline class="steps" points="([^"]+)"/.exec(scheduled)![1].split(" ");
    assert.equal(points.length, 2 * 21);
    assert.ok(scheduled.includes("<h3>ScalingSchedule status/daily: next 24 hours</h3>"));
    const fallback = (await httpGet(`${base}/status/${NAMESPACE}/fallback`)).body;
    assert.match(
      fallback,
      /<tr><th>fallback<\/th><td>active since [0-9T:.-]+Z, serving 6 \(3 replicas\)/,
    );
  });
});
