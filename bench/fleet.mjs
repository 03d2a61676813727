// The fake pod fleet (a child process of bench/run.mjs, run by node): one HTTP listener per fake
// pod address (127.0.x.y, loopback only) answering `{"rps":N}` on any path, and optionally the
// fake queue endpoint on 127.0.0.1 answering `{"length":N}` at /queue/I. It counts scrapes per
// pod and the longest gap between two scrapes of a pod, and reports them on a control listener.
//
// usage: node bench/fleet.mjs '{"port":P,"from":0,"count":10000,"base":1,"queue":false}'
// prints one line `{"ready":true,"control":PORT,"failed":N}` once every listener is up.
import { createServer } from "node:http";
import { fakePodRps, fakeQueueLength, podAddress } from "./manifests.mjs";

const cfg = JSON.parse(process.argv[2]);
const { port, from, count, base = 1, queue = false, keepAliveMs = 1000 } = cfg;

const index = new Map();
const bodies = [];
for (let i = 0; i < count; i++) {
  const addr = podAddress(from + i, base);
  index.set(addr, i);
  index.set(`::ffff:${addr}`, i);
  bodies.push(JSON.stringify({ rps: fakePodRps(from + i) }));
}
const hits = new Uint32Array(count);
const lastHit = new Float64Array(count);
const maxGap = new Float64Array(count);
let windowStart = 0;
let queueHits = 0;

function onPod(req, res) {
  const i = index.get(req.socket.localAddress);
  if (i === undefined) {
    res.writeHead(404).end();
    return;
  }
  const now = performance.timeOrigin + performance.now();
  if (lastHit[i] > 0 && lastHit[i] >= windowStart) {
    const gap = now - lastHit[i];
    if (gap > maxGap[i]) maxGap[i] = gap;
  }
  lastHit[i] = now;
  hits[i]++;
  res.writeHead(200, { "content-type": "application/json" });
  res.end(bodies[i]);
}

function onQueue(req, res) {
  const m = /^\/queue\/(\d+)$/.exec(req.url ?? "");
  if (!m) {
    res.writeHead(404).end();
    return;
  }
  queueHits++;
  res.writeHead(200, { "content-type": "application/json" });
  res.end(`{"length":${fakeQueueLength(Number(m[1]))}}`);
}

function listen(server, host, p) {
  return new Promise((resolve) => {
    server.once("error", (e) => resolve(e));
    server.listen(p, host, () => resolve(null));
  });
}

const servers = [];
let failed = 0;
let firstError = "";
for (const addr of new Set([...index.keys()].filter((a) => !a.startsWith("::")))) {
  const s = createServer(onPod);
  s.keepAliveTimeout = keepAliveMs;
  const err = await listen(s, addr, port);
  if (err) {
    failed++;
    firstError ||= `${addr}: ${err.message}`;
  } else servers.push(s);
}
if (queue) {
  const s = createServer(onQueue);
  const err = await listen(s, "127.0.0.1", port);
  if (err) {
    failed++;
    firstError ||= `127.0.0.1: ${err.message}`;
  } else servers.push(s);
}

function stats() {
  const now = performance.timeOrigin + performance.now();
  let total = 0;
  let never = 0;
  let worstGap = 0;
  let worstAge = 0;
  const gaps = [];
  for (let i = 0; i < count; i++) {
    total += hits[i];
    if (lastHit[i] === 0) never++;
    else worstAge = Math.max(worstAge, now - lastHit[i]);
    worstGap = Math.max(worstGap, maxGap[i]);
    gaps.push(maxGap[i]);
  }
  gaps.sort((a, b) => a - b);
  return {
    pods: count,
    scrapes: total,
    queueHits,
    neverScraped: never,
    maxGapMs: Math.round(worstGap),
    p99MaxGapMs: Math.round(gaps[Math.floor(gaps.length * 0.99)] ?? 0),
    oldestScrapeAgeMs: Math.round(worstAge),
  };
}

const control = createServer((req, res) => {
  if (req.url === "/window" && req.method === "POST") {
    windowStart = performance.timeOrigin + performance.now();
    hits.fill(0);
    maxGap.fill(0);
    queueHits = 0;
  }
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify(stats()));
});
await listen(control, "127.0.0.1", 0);
process.stdout.write(
  JSON.stringify({ ready: true, control: control.address().port, failed, firstError }) + "\n",
);
process.on("SIGTERM", () => process.exit(0));
