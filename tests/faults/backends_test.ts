/**
 * The fault suite of issue 30: one adapter (a child process of the runtime under test, file
 * mode, loopback) whose HPAs mix good External metrics with json-path and Prometheus backends
 * that misbehave: a slow head, a slow body, a connection cut mid-body, 500/503, a redirect
 * loop, invalid JSON, NaN / Infinity / a string value, a 1 GiB body, a gzip bomb, and a
 * "Prometheus" answering garbage, nothing, a matrix, an error and NaN. The adapter must stay
 * ready, serve every good metric exactly, answer every bad one with a 404 that names the
 * backend, and keep its RSS within 32 MiB of what it was before the bad backends were added.
 *
 * The `it`s run in order and build on each other: the first adds only the good metrics and
 * reads the RSS baseline; the second adds the bad ones and waits for several rounds.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { createGzip } from "node:zlib";
import {
  type AdapterProcess,
  currentRuntime,
  externalHpa,
  type ExternalMetricSpec,
  getExternalMetric,
  isReady,
  makeTempDir,
  readRssBytes,
  sleep,
  startAdapterProcess,
  waitFor,
  writeManifests,
} from "./support.ts";

const NAMESPACE = "faults";
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
/**
 * `--max-response-bytes` of the adapter under test: 1 MiB, as in the run that found the gzip
 * bomb. A bomb then inflates 256 times the cap unless decompression stops at the cap; what the
 * capped reads themselves cost stays small next to the 32 MiB bound.
 */
const MAX_RESPONSE_BYTES = MiB;
/** What the slow backends wait before answering: well past the metrics' 1s request-timeout. */
const SLOW_MS = 4_000;
/** The bad metrics whose bodies are large: added last, their RSS cost measured alone. */
const LARGE = ["huge", "gzip-bomb"];

// ---- the misbehaving backend ------------------------------------------------------------

/** What the fake backend saw: requests per path, and how each 1 GiB body ended. */
interface BackendLog {
  hits: Map<string, number>;
  /** Bytes written of each 1 GiB response that has closed, and whether it was sent in full. */
  hugeBodies: { sent: number; complete: boolean }[];
}

/** 256 MiB of zeros, gzipped once (about 255 KiB), built a MiB at a time. */
async function gzipBomb(): Promise<Buffer> {
  const gz = createGzip({ level: 9 });
  const out: Buffer[] = [];
  gz.on("data", (d: Buffer) => out.push(d));
  const zeros = Buffer.alloc(MiB);
  for (let i = 0; i < 256; i++) {
    if (!gz.write(zeros)) await once(gz, "drain");
  }
  gz.end();
  await once(gz, "end");
  return Buffer.concat(out);
}

function json(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}

/** A Prometheus instant-vector answer with one sample per value. */
function promVector(values: string[]): string {
  return JSON.stringify({
    status: "success",
    data: {
      resultType: "vector",
      result: values.map((v, i) => ({ metric: { series: String(i) }, value: [1700000000, v] })),
    },
  });
}

/** Stream `{"value":[0,0,0,...` up to 1 GiB, with backpressure; stop when the client leaves. */
function streamHuge(res: ServerResponse, log: BackendLog): void {
  const chunk = Buffer.from("0,".repeat(32 * 1024));
  let sent = 0;
  let closed = false;
  res.on("close", () => {
    closed = true;
    log.hugeBodies.push({ sent, complete: res.writableFinished });
  });
  res.writeHead(200, { "content-type": "application/json" }); // chunked: no length given
  res.write('{"value":[');
  const pump = (): void => {
    while (!closed && sent < GiB) {
      sent += chunk.length;
      if (!res.write(chunk)) {
        res.once("drain", pump);
        return;
      }
    }
    if (!closed) res.end("0]}");
  };
  pump();
}

/** Answer after `ms`, unless the client went away first. */
function later(res: ServerResponse, ms: number, fn: () => void): void {
  const t = setTimeout(fn, ms);
  res.on("close", () => clearTimeout(t));
}

function handle(
  req: IncomingMessage,
  res: ServerResponse,
  log: BackendLog,
  bomb: Buffer,
): void {
  req.resume();
  const path = (req.url ?? "/").split("?")[0];
  log.hits.set(path, (log.hits.get(path) ?? 0) + 1);
  switch (path) {
    case "/good":
      return json(res, 200, '{"queue":{"length":42.5}}');
    case "/good-2":
      return json(res, 200, '{"queue":{"length":1234}}');
    case "/slow-head":
      return later(res, SLOW_MS, () => json(res, 200, '{"queue":{"length":1}}'));
    case "/slow-body":
      res.writeHead(200, { "content-type": "application/json", "content-length": 22 });
      res.write('{"queue":{"len'); // the rest of {"queue":{"length":1}} comes too late
      return later(res, SLOW_MS, () => res.end('gth":1}}'));
    case "/cut":
      res.writeHead(200, { "content-type": "application/json", "content-length": 1000 });
      res.write('{"queue":{"length":');
      return later(res, 50, () => res.socket?.destroy());
    case "/status-500":
      return json(res, 500, '{"error":"boom"}');
    case "/status-503":
      return json(res, 503, '{"error":"unavailable"}');
    case "/redirect-loop":
      res.writeHead(302, { location: "/redirect-loop", "content-length": 0 });
      return void res.end();
    case "/invalid-json":
      return json(res, 200, '{"queue":{"length":12');
    case "/nan":
      return json(res, 200, '{"queue":{"length":"NaN"}}');
    case "/infinity":
      // JSON.parse reads 1e999 as Infinity
      return json(res, 200, '{"queue":{"length":1e999}}');
    case "/string":
      return json(res, 200, '{"queue":{"length":"many"}}');
    case "/huge":
      return streamHuge(res, log);
    case "/gzip-bomb":
      res.writeHead(200, {
        "content-type": "application/json",
        "content-encoding": "gzip",
        "content-length": bomb.length,
      });
      return void res.end(bomb);
    case "/prom-good/api/v1/query":
      return json(res, 200, promVector(["3", "4"]));
    case "/prom-garbage/api/v1/query":
      res.writeHead(200, { "content-type": "text/html" });
      return void res.end("<html><body>502 Bad Gateway (but said 200)</body></html>");
    case "/prom-empty/api/v1/query":
      return json(res, 200, "");
    case "/prom-matrix/api/v1/query":
      return json(
        res,
        200,
        JSON.stringify({
          status: "success",
          data: {
            resultType: "matrix",
            result: [{ metric: { a: "1" }, values: [[1700000000, "1"], [1700000015, "2"]] }],
          },
        }),
      );
    case "/prom-error/api/v1/query":
      return json(
        res,
        400,
        '{"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected end of input"}',
      );
    case "/prom-nan/api/v1/query":
      return json(res, 200, promVector(["NaN"]));
    default:
      return json(res, 404, '{"error":"no such path"}');
  }
}

interface Backend {
  url: string;
  log: BackendLog;
  close(): Promise<void>;
}

async function startBackend(bomb: Buffer): Promise<Backend> {
  const log: BackendLog = { hits: new Map(), hugeBodies: [] };
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => handle(req, res, log, bomb));
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    log,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

// ---- the HPAs ---------------------------------------------------------------------------

/** A bad metric and what its 404 must say besides the backend's URL. */
interface BadMetric {
  name: string;
  /** The backend URL the message must name. */
  url: string;
  reason: RegExp;
}

function jsonPathMetric(name: string, endpoint: string): ExternalMetricSpec {
  return {
    name,
    matchLabels: { type: "json-path" },
    collector: "json-path",
    config: {
      endpoint,
      "json-key": "$.queue.length",
      "request-timeout": "1s",
      interval: "1s",
    },
  };
}

function prometheusMetric(name: string, server: string): ExternalMetricSpec {
  return {
    name,
    matchLabels: { type: "prometheus" },
    collector: "prometheus",
    config: {
      query: `sum(queue_length{queue="${name}"})`,
      "prometheus-server": server,
      interval: "1s",
    },
  };
}

// ---- the suite --------------------------------------------------------------------------

describe(`an adapter with misbehaving backends (${currentRuntime()})`, () => {
  let dir: string;
  let manifests: string;
  let backend: Backend;
  let adapter: AdapterProcess | undefined;
  let bombBytes = 0;
  let rssBefore = 0;
  let rssAfter = 0;
  const rssReadings: number[] = [];
  let goodJson: ExternalMetricSpec[];
  let goodProm: ExternalMetricSpec;
  let bad: BadMetric[];
  let hpas: () => unknown[];
  /** The bad metrics the manifests hold so far. */
  const included = new Set<string>();

  before(async () => {
    const bomb = await gzipBomb();
    bombBytes = bomb.length;
    backend = await startBackend(bomb);
    dir = await makeTempDir("faults-backends-");
    manifests = join(dir, "manifests");
    const b = backend.url;
    goodJson = [
      jsonPathMetric("good-json", `${b}/good`),
      jsonPathMetric("good-json-2", `${b}/good-2`),
    ];
    goodProm = prometheusMetric("good-prom", `${b}/prom-good`);
    const badJson: [string, string, RegExp][] = [
      ["slow-head", "/slow-head", /failed: timed out after 1s/],
      ["slow-body", "/slow-body", /failed: timed out after 1s/],
      ["cut", "/cut", /failed|terminated|closed|aborted/],
      ["status-500", "/status-500", /unsuccessful response "500 Internal Server Error"/],
      ["status-503", "/status-503", /unsuccessful response "503 Service Unavailable"/],
      [
        "redirect-loop",
        "/redirect-loop",
        /refused to follow redirect "302" .* to "\/redirect-loop"/,
      ],
      ["invalid-json", "/invalid-json", /invalid JSON/],
      ["nan", "/nan", /found a string where a number was expected/],
      ["infinity", "/infinity", /gave Infinity, not a finite number/],
      ["string", "/string", /found a string where a number was expected/],
      ["huge", "/huge", new RegExp(`exceeds ${MAX_RESPONSE_BYTES} bytes`)],
      ["gzip-bomb", "/gzip-bomb", new RegExp(`exceeds ${MAX_RESPONSE_BYTES} bytes`)],
    ];
    const badProm: [string, string, RegExp][] = [
      ["prom-garbage", "/prom-garbage", /not a Prometheus API response/],
      ["prom-empty", "/prom-empty", /not a Prometheus API response/],
      ["prom-matrix", "/prom-matrix", /returned a range vector \(matrix\)/],
      ["prom-error", "/prom-error", /"400 Bad Request".*\(prometheus error bad_data\)/],
      ["prom-nan", "/prom-nan", /returned NaN/],
    ];
    bad = [
      ...badJson.map(([name, path, reason]) => ({ name, url: b + path, reason })),
      ...badProm.map(([name, path, reason]) => ({ name, url: b + path, reason })),
    ];
    const badSpec = (name: string): ExternalMetricSpec => {
      const m = bad.find((x) => x.name === name)!;
      return name.startsWith("prom-") ? prometheusMetric(name, m.url) : jsonPathMetric(name, m.url);
    };
    // Each HPA mixes good and bad metrics; `include` says which bad ones it has yet.
    const hpa = (name: string, good: ExternalMetricSpec, badOnes: string[]): unknown =>
      externalHpa({
        namespace: NAMESPACE,
        name,
        metrics: [good, ...badOnes.filter((n) => included.has(n)).map(badSpec)],
      });
    hpas = () => [
      hpa("slow-and-failing", goodJson[0], [
        "slow-head",
        "slow-body",
        "cut",
        "status-500",
        "status-503",
        "redirect-loop",
      ]),
      hpa("bad-bodies", goodJson[1], [
        "invalid-json",
        "nan",
        "infinity",
        "string",
        "huge",
        "gzip-bomb",
      ]),
      hpa("bad-prometheus", goodProm, [
        "prom-garbage",
        "prom-empty",
        "prom-matrix",
        "prom-error",
        "prom-nan",
      ]),
    ];
    await writeManifests(manifests, hpas(), "hpas.yaml");
    adapter = await startAdapterProcess({
      manifests,
      certDir: join(dir, "certs"),
      flags: [
        "--max-response-bytes",
        String(MAX_RESPONSE_BYTES),
        "--collection-timeout",
        "2s",
        "--prometheus-query-timeout",
        "2s",
        "--default-collection-interval",
        "1s",
        // enables the prometheus collector; every metric names its own server
        "--prometheus-server",
        `${b}/prom-default`,
      ],
    });
  });

  after(async () => {
    await adapter?.stop();
    await backend?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** The 200 value of a metric, or null while there is none. */
  async function valueOf(name: string): Promise<string | null> {
    const r = await getExternalMetric(adapter!, NAMESPACE, name);
    return r.status === 200 && r.body.items?.length === 1 ? r.body.items[0].value : null;
  }

  async function assertGoodValues(): Promise<void> {
    const r1 = await getExternalMetric(adapter!, NAMESPACE, "good-json");
    assert.equal(r1.status, 200, JSON.stringify(r1.body));
    assert.deepEqual(
      r1.body.items.map((i: Record<string, unknown>) => [i.metricName, i.metricLabels, i.value]),
      [["good-json", { type: "json-path" }, "42500m"]],
    );
    const r2 = await getExternalMetric(adapter!, NAMESPACE, "good-json-2");
    assert.equal(r2.status, 200, JSON.stringify(r2.body));
    assert.equal(r2.body.items[0].value, "1234");
    const r3 = await getExternalMetric(adapter!, NAMESPACE, "good-prom");
    assert.equal(r3.status, 200, JSON.stringify(r3.body));
    assert.deepEqual(
      r3.body.items.map((i: Record<string, unknown>) => [i.metricName, i.metricLabels, i.value]),
      [["good-prom", { type: "prometheus" }, "7"]],
    );
  }

  it("builds a gzip bomb of 256 MiB of zeros in under 1 MiB", () => {
    assert.ok(bombBytes > 100 * 1024 && bombBytes < MiB, `${bombBytes} bytes`);
  });

  /** Requests each path got since `since` (a copy of the hit counts). */
  function hitsSince(since: Map<string, number>, path: string): number {
    return (backend.log.hits.get(path) ?? 0) - (since.get(path) ?? 0);
  }

  /** The path the fake backend sees for a bad metric. */
  function backendPath(name: string): string {
    const p = new URL(bad.find((m) => m.name === name)!.url).pathname;
    return p.startsWith("/prom-") ? `${p}/api/v1/query` : p;
  }

  /** Add bad metrics to the manifests, then wait until each backend was asked `rounds` times. */
  async function addAndRun(names: string[], rounds: number): Promise<void> {
    const since = new Map(backend.log.hits);
    for (const n of names) included.add(n);
    await writeManifests(manifests, hpas(), "hpas.yaml");
    await waitFor(`${rounds} rounds of ${names.join(", ")}`, async () => {
      rssReadings.push(await readRssBytes(adapter!.pid));
      return names.every((n) => hitsSince(since, backendPath(n)) >= rounds) ? true : null;
    }, { timeoutMs: 40_000, intervalMs: 500 });
  }

  /** The median of five RSS readings 300 ms apart (one reading is noisy). */
  async function settledRss(): Promise<number> {
    const readings: number[] = [];
    for (let i = 0; i < 5; i++) {
      if (i > 0) await sleep(300);
      readings.push(await readRssBytes(adapter!.pid));
    }
    return readings.sort((x, y) => x - y)[2];
  }

  it("serves the good metrics before any bad backend is configured", async () => {
    for (const name of ["good-json", "good-json-2", "good-prom"]) {
      await waitFor(`a value of ${name}`, () => valueOf(name));
    }
    await assertGoodValues();
  });

  it("collects the bad backends but the large bodies for several rounds, and its RSS is read then", async () => {
    await addAndRun(bad.map((m) => m.name).filter((n) => !LARGE.includes(n)), 3);
    rssBefore = await settledRss();
    assert.ok(adapter!.alive(), "the adapter exited");
  });

  it("collects the gzip bomb and the 1 GiB body too for several rounds", async () => {
    await addAndRun(LARGE, 5);
    rssAfter = await settledRss();
    assert.ok(adapter!.alive(), "the adapter exited");
  });

  it("stays alive and ready", async () => {
    assert.equal(adapter!.alive(), true, adapter!.logs().slice(-4000));
    assert.equal(await isReady(adapter!), true);
  });

  it("still serves every good metric with its exact value", async () => {
    await assertGoodValues();
  });

  const badNames = [
    "slow-head",
    "slow-body",
    "cut",
    "status-500",
    "status-503",
    "redirect-loop",
    "invalid-json",
    "nan",
    "infinity",
    "string",
    "huge",
    "gzip-bomb",
    "prom-garbage",
    "prom-empty",
    "prom-matrix",
    "prom-error",
    "prom-nan",
  ];
  for (const name of badNames) {
    it(`answers 404 for ${name}, naming the backend and what it did wrong`, async () => {
      const m = bad.find((x) => x.name === name)!;
      // a collection may be running still: wait (bounded) for its failure to be recorded
      const message = await waitFor(`a failure of ${name}`, async () => {
        const r = await getExternalMetric(adapter!, NAMESPACE, name);
        assert.notEqual(r.status, 200, `${name} served ${JSON.stringify(r.body)}`);
        const text: string = r.body?.message ?? "";
        return r.status === 404 && /failed/.test(text) ? text : null;
      }, { timeoutMs: 15_000 });
      const r = await getExternalMetric(adapter!, NAMESPACE, name);
      assert.equal(r.status, 404);
      assert.equal(r.body.kind, "Status");
      assert.equal(r.body.reason, "NotFound");
      assert.match(message, m.reason);
      assert.ok(message.includes(m.url), `the message does not name ${m.url}: ${message}`);
    });
  }

  it("stops reading a 1 GiB body at the size cap: no such response is sent in full", () => {
    const bodies = backend.log.hugeBodies;
    assert.ok(bodies.length >= 1, "no 1 GiB response has ended");
    for (const b of bodies) {
      assert.equal(b.complete, false, `a 1 GiB response was read to its end (${b.sent} bytes)`);
      assert.ok(b.sent < 256 * MiB, `${b.sent} bytes were sent before the adapter stopped`);
    }
  });

  it("keeps its RSS within 32 MiB of what it was without the gzip bomb and the 1 GiB body", () => {
    assert.ok(rssBefore > 0 && rssAfter > 0, "no RSS readings (an earlier step failed)");
    const grewMiB = (rssAfter - rssBefore) / MiB;
    assert.ok(
      grewMiB < 32,
      `RSS grew by ${grewMiB.toFixed(1)} MiB: ${(rssBefore / MiB).toFixed(1)} -> ${
        (rssAfter / MiB).toFixed(1)
      } MiB (highest reading ${(Math.max(...rssReadings) / MiB).toFixed(1)} MiB)`,
    );
  });
});
