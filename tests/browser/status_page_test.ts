/**
 * The status page of issue 24 in a real browser: Debian's Chromium (`/usr/bin/chromium`, or
 * `$HPA_TEST_CHROMIUM`) driven by playwright-core, against the adapter in file mode (`serve
 * --manifests`, a child process) with its `--metrics-address`, and a real loopback JSON endpoint.
 *
 * HPA `orders` reads `$.queue.depth` every second from an endpoint that answers five known
 * values (3, 4.5, 6, 5.5, 6.5) and then holds the sixth request open until the test ends (a
 * request-timeout and collection timeout of 120s): the engine skips ticks while a collection
 * runs, so the kept history is exactly those five samples and the state stays `collected`.
 * HPA `payments` reads a path that answers 500. HPA `scheduled` uses a ScalingSchedule written
 * for the test's own time: 50 every day for an hour from two hours after the test starts, ramps
 * of 10 minutes in 10 steps, so that its next 24 hours are exactly one peak of 21 steps. The
 * overview and the HPAs' pages are opened in headless Chromium, checked through the DOM, and
 * screenshots are kept in the test's temp folder (its path is printed).
 *
 * It runs on node, deno and bun alike (playwright-core drives Chromium over its
 * `--remote-debugging-pipe` pipes on all three); the adapter runs on the same runtime.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { rm, stat } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import process from "node:process";
import {
  type AdapterProcess,
  currentRuntime,
  dailySchedule,
  httpGet,
  makeTempDir,
  scheduleHpa,
  startAdapterProcess,
  waitFor,
  writeManifests,
} from "../faults/support.ts";
import { freePort } from "../faults/formula_support.ts";

const NAMESPACE = "shop";
/** What the endpoint answers for `working`, in order; the next request is held open. */
const VALUES = [3, 4.5, 6, 5.5, 6.5];
const CHROMIUM = process.env.HPA_TEST_CHROMIUM ?? "/usr/bin/chromium";

function hpa(name: string, url: string, target: string): Record<string, unknown> {
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
        "metric-config.external.queue-depth.json-path/request-timeout": "120s",
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
          target: { type: "AverageValue", averageValue: target },
        },
      }],
    },
    status: { currentReplicas: 2, desiredReplicas: 2 },
  };
}

describe(`status page in Chromium (${currentRuntime()})`, () => {
  let dir: string | undefined;
  let shots = "";
  let endpoint: Server | undefined;
  /** Requests to /queue held open (answered when the test ends). */
  const held: ServerResponse[] = [];
  let answered = 0;
  let adapter: AdapterProcess | undefined;
  // deno-lint-ignore no-explicit-any
  let browser: any;
  // deno-lint-ignore no-explicit-any
  let page: any;
  let base = "";
  let url = "";
  /** When the daily schedule starts next: two hours after the test's start, to the minute. */
  let start = 0;

  before(async () => {
    endpoint = createServer((req: IncomingMessage, res: ServerResponse) => {
      if (req.url === "/queue") {
        if (answered < VALUES.length) {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify({ queue: { depth: VALUES[answered++] } }));
        } else {
          held.push(res);
        }
      } else {
        res.writeHead(500, { "content-type": "application/json" });
        res.end('{"error":"boom"}');
      }
    });
    endpoint.listen(0, "127.0.0.1");
    await once(endpoint, "listening");
    url = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}`;
    dir = await makeTempDir("browser-status-");
    shots = join(dir, "screenshots");
    const manifests = join(dir, "manifests");
    start = Math.floor((Date.now() + 2 * 3_600_000) / 60_000) * 60_000;
    await writeManifests(manifests, [
      hpa("orders", `${url}/queue`, "2"),
      hpa("payments", `${url}/fail`, "5"),
      scheduleHpa(NAMESPACE, "scheduled", "daily", { currentReplicas: 1, desiredReplicas: 1 }),
      dailySchedule(NAMESPACE, "daily", new Date(start).toISOString().slice(11, 16)),
    ], "hpas.yaml");
    const metricsPort = await freePort();
    base = `http://127.0.0.1:${metricsPort}`;
    adapter = await startAdapterProcess({
      manifests,
      certDir: join(dir, "certs"),
      flags: [
        "--metrics-address",
        `127.0.0.1:${metricsPort}`,
        "--collection-timeout",
        "120s",
        "--scaling-schedule",
      ],
    });
    assert.ok(
      existsSync(CHROMIUM),
      `${CHROMIUM} is missing: apt-get install chromium (or set HPA_TEST_CHROMIUM)`,
    );
    const { chromium } = await import("playwright-core");
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true });
    page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
  });

  after(async () => {
    await browser?.close();
    await adapter?.stop();
    for (const res of held) res.destroy();
    if (endpoint) {
      endpoint.closeAllConnections();
      await new Promise<void>((r) => endpoint!.close(() => r()));
    }
    if (dir) {
      // the screenshots stay; the manifests and the certificate go
      await rm(join(dir, "manifests"), { recursive: true, force: true });
      await rm(join(dir, "certs"), { recursive: true, force: true });
      console.log(`screenshots of the status page: ${shots}`);
    }
  });

  function logsTail(): string {
    return `--- adapter output ---\n${adapter?.logs().slice(-3000) ?? ""}`;
  }

  it("collects the five values and holds the sixth request, failing the other HPA", async () => {
    try {
      await waitFor("five values of orders, a held sixth request, three failures", async () => {
        const d = JSON.parse((await httpGet(`${base}/status.json`)).body);
        // deno-lint-ignore no-explicit-any
        const by = new Map(d.hpas.map((h: any) => [h.name, h.metrics[0]]));
        // deno-lint-ignore no-explicit-any
        const o: any = by.get("orders");
        // deno-lint-ignore no-explicit-any
        const p: any = by.get("payments");
        // deno-lint-ignore no-explicit-any
        const s: any = by.get("scheduled");
        return held.length === 1 && o?.history.length === 5 && p?.failures >= 3 &&
            s?.state === "collected"
          ? true
          : null;
      }, { timeoutMs: 40_000 });
    } catch (e) {
      throw new Error(`${(e as Error).message}\n${logsTail()}`);
    }
  });

  it("shows the overview: names, values, states, failing first, a sparkline per metric", async () => {
    const r = await page.goto(`${base}/status`);
    assert.equal(r.status(), 200);
    assert.equal(await page.title(), "HPA metrics adapter: status");
    // it reloads itself every 10 s: each check below reads a freshly loaded page well within that
    assert.equal(
      await page.locator('meta[http-equiv="refresh"]').getAttribute("content"),
      "10",
    );
    assert.equal(
      await page.locator("h1").textContent(),
      "HPA metrics adapter: status",
    );
    const rows = page.locator("tr.metric");
    // payments (failing) first, then orders and scheduled (collected)
    assert.equal(await rows.count(), 3);
    // deno-lint-ignore no-explicit-any
    const cells = async (i: number): Promise<string[]> =>
      (await rows.nth(i).locator("td").allInnerTexts()).map((t: string) => t.trim());

    const [failing, collected] = [await cells(0), await cells(1)];
    assert.equal(failing.length, 9, JSON.stringify(failing));
    assert.match(failing[0], /^shop\/payments\n+failing$/);
    assert.deepEqual(failing.slice(1, 6), [
      "Deployment/payments",
      "2 → 2",
      "External queue-depth",
      "json-path",
      "1s",
    ]);
    assert.equal(failing[6], "none");
    assert.match(
      failing[7],
      new RegExp(
        `^failing \\d+ times since \\d{4}-\\d\\d-\\d\\dT[0-9:.]+Z\\n+` +
          `unsuccessful response "500 Internal Server Error" from ${url}/fail$`,
      ),
    );
    assert.match(collected[0], /^shop\/orders\n+collected$/);
    assert.deepEqual(collected.slice(1, 6), [
      "Deployment/orders",
      "2 → 2",
      "External queue-depth",
      "json-path",
      "1s",
    ]);
    assert.match(collected[6], /^6\.5 \(\d+s ago\)$/);
    assert.equal(collected[7], "collected");
    // colours come from the page's CSS: red for failing, green for collected
    assert.equal(
      await rows.nth(0).locator("td").nth(7).locator(".state").evaluate((e: Element) =>
        getComputedStyle(e).color
      ),
      "rgb(176, 0, 32)",
    );
    assert.equal(
      await rows.nth(1).locator("td").nth(7).locator(".state").evaluate((e: Element) =>
        getComputedStyle(e).color
      ),
      "rgb(23, 105, 58)",
    );
    // the sparkline: one point per kept value; the failing metric has no line, only failure ticks
    const spark = rows.nth(1).locator("svg.spark");
    assert.equal(await spark.count(), 1);
    const points = await spark.locator("polyline").getAttribute("points");
    assert.equal(points.trim().split(/\s+/).length, VALUES.length, points);
    assert.equal(await rows.nth(0).locator("svg.spark polyline").count(), 0);
    assert.ok(await rows.nth(0).locator("svg.spark line.fail").count() >= 3);
    const box = await spark.boundingBox();
    assert.deepEqual([box.width, box.height], [120, 24]);

    await page.screenshot({ path: join(shots, "overview.png"), fullPage: true });
    assert.ok((await stat(join(shots, "overview.png"))).size > 1000);
  });

  it("filters the overview by state in the browser", async () => {
    await page.goto(`${base}/status`);
    await page.locator("nav a", { hasText: /^failing$/ }).click();
    await page.waitForURL(`${base}/status?state=failing`);
    assert.deepEqual(
      await page.locator("tr.metric td:first-child a").allTextContents(),
      ["shop/payments"],
    );
  });

  it("shows one HPA's page with a plot of exactly the kept values and the target", async () => {
    await page.goto(`${base}/status`);
    await page.locator("a", { hasText: "shop/orders" }).click();
    await page.waitForURL(`${base}/status/shop/orders`);
    assert.equal(await page.title(), "shop/orders: status");
    assert.equal(
      (await page.locator("h1").textContent()).trim(),
      "shop/orders collected",
    );
    const replicas = Object.fromEntries(
      (await page.locator("table.replicas tr").allInnerTexts()).map((t: string) =>
        t.split("\t").map((s) => s.trim())
      ),
    );
    // 6.5 / 2 per replica: ceil(3.25) = 4
    assert.deepEqual(replicas, {
      "current (HPA status)": "2",
      "desired (HPA status)": "2",
      "computed here": "4",
    });
    const facts = Object.fromEntries(
      (await page.locator("h2", { hasText: "External queue-depth" })
        .locator("xpath=following-sibling::table[1]").locator("tr").allInnerTexts()).map(
          (t: string) => {
            const [k, ...v] = t.split("\t");
            return [k.trim(), v.join("\t").trim()];
          },
        ),
    );
    assert.equal(facts.state, "collected");
    assert.equal(facts.collector, "json-path");
    assert.equal(facts.interval, "1s");
    assert.equal(facts.target, "averageValue 2");
    assert.match(facts.value, /^6\.5 \(\d+s ago\)$/);
    assert.equal(facts["config json-key"], "$.queue.depth");

    const plot = page.locator("svg.plot");
    assert.equal(await plot.count(), 1);
    const circles = plot.locator("circle");
    assert.equal(await circles.count(), VALUES.length);
    const titles = await plot.locator("circle title").allTextContents();
    assert.deepEqual(titles.map((t: string) => Number(t.split(": ").pop())), VALUES);
    const times = titles.map((t: string) => Date.parse(t.slice(0, t.lastIndexOf(": "))));
    for (let i = 1; i < times.length; i++) assert.ok(times[i] > times[i - 1], titles.join());
    const line = await plot.locator("polyline").getAttribute("points");
    assert.equal(line.trim().split(/\s+/).length, VALUES.length, line);
    assert.equal(await plot.locator("path.fail").count(), 0);
    // higher values are drawn higher: the circles' y follow the values
    const ys: number[] = [];
    for (let i = 0; i < VALUES.length; i++) {
      ys.push(Number(await circles.nth(i).getAttribute("cy")));
    }
    for (let i = 0; i < VALUES.length; i++) {
      for (let j = 0; j < VALUES.length; j++) {
        if (VALUES[i] > VALUES[j]) assert.ok(ys[i] < ys[j], `${ys}`);
      }
    }
    assert.equal(await plot.locator("text.target").textContent(), "target 2");
    const box = await plot.boundingBox();
    assert.deepEqual([box.width, box.height], [640, 180]);

    await page.screenshot({ path: join(shots, "hpa.png"), fullPage: true });
    assert.ok((await stat(join(shots, "hpa.png"))).size > 1000);
  });

  it("shows the failing HPA's page with no script and no external resource", async () => {
    const requests: string[] = [];
    page.on("request", (req: { url(): string }) => requests.push(req.url()));
    await page.goto(`${base}/status/shop/payments`);
    assert.equal((await page.locator("h1").textContent()).trim(), "shop/payments failing");
    assert.equal(await page.locator("script").count(), 0);
    assert.deepEqual(requests, [`${base}/status/shop/payments`]);
    await page.screenshot({ path: join(shots, "hpa-failing.png"), fullPage: true });
  });

  it("draws a ScalingSchedule's next 24 hours: one peak of 21 steps, its ramps' steps, its changes", async () => {
    await page.goto(`${base}/status/${NAMESPACE}/scheduled`);
    const plot = page.locator("svg.schedule");
    assert.equal(await plot.count(), 1);
    const box = await plot.boundingBox();
    assert.deepEqual([box.width, box.height], [640, 160]);
    const points: [number, number][] = (await plot.locator("polyline.steps").getAttribute("points"))
      .trim().split(/\s+/).map((p: string) => p.split(",").map(Number) as [number, number]);
    // two points per step: 0 now, nine steps up, 50, ten steps down to 0
    assert.equal(points.length, 42);
    const values = [0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 45, 40, 35, 30, 25, 20, 15, 10, 5, 0];
    // y: 130 at 0, 10 at the top value 50
    assert.deepEqual(
      points.map(([, y]) => y),
      values.flatMap((v) => [130 - 120 * v / 50, 130 - 120 * v / 50]),
    );
    for (let i = 1; i < points.length; i++) {
      assert.ok(points[i][0] >= points[i - 1][0], `${points}`);
    }
    assert.equal(points[0][0], 60);
    assert.equal(points[41][0], 620);
    // the ramps are 10 minutes: 560 px * 9 / 1440 = 3.5 px from the first step up to the top
    assert.ok(Math.abs(points[20][0] - points[2][0] - 3.5) <= 0.2, `${points}`);
    const iso = (ms: number): string => new Date(ms).toISOString();
    assert.deepEqual(await page.locator("ul.changes li").allTextContents(), [
      `up to 50 from ${iso(start - 540_000)} to ${iso(start)} (10 steps)`,
      `down to 0 from ${iso(start + 3_600_001)} to ${iso(start + 4_140_001)} (10 steps)`,
    ]);
    await page.screenshot({ path: join(shots, "hpa-schedule.png"), fullPage: true });
  });

  it("draws the target's label as plain text: not stroked or dashed like its line", async () => {
    await page.goto(`${base}/status/${NAMESPACE}/orders`);
    const label = page.locator("svg.plot text.target");
    const style = await label.evaluate((e: Element) => {
      const c = getComputedStyle(e);
      return [c.stroke, c.strokeDasharray, c.fill];
    });
    assert.deepEqual(style, ["none", "none", "rgb(23, 105, 58)"]);
    const line = await page.locator("svg.plot line.target").evaluate((e: Element) =>
      getComputedStyle(e).strokeDasharray
    );
    assert.equal(line, "4px, 3px");
  });

  it("stops reloading with the page's link, and keeps it stopped on the HPA it links to", async () => {
    await page.goto(`${base}/status`);
    assert.equal(await page.locator('meta[http-equiv="refresh"]').count(), 1);
    await page.locator("a.refresh", { hasText: "stop" }).click();
    await page.waitForURL(`${base}/status?refresh=0`);
    assert.equal(await page.locator('meta[http-equiv="refresh"]').count(), 0);
    await page.locator("a", { hasText: "shop/orders" }).click();
    await page.waitForURL(`${base}/status/shop/orders?refresh=0`);
    assert.equal(await page.locator('meta[http-equiv="refresh"]').count(), 0);
    await page.locator("a.refresh").click();
    await page.waitForURL(`${base}/status/shop/orders`);
    assert.equal(await page.locator('meta[http-equiv="refresh"]').count(), 1);
  });
});
