// The fake pod fleet (a child process of bench/run.mjs, run by node): one HTTP listener per fake
// pod address (127.0.x.y, loopback only) answering `{"rps":N}` on any path, and optionally the
// fake queue endpoint on 127.0.0.1 answering `{"length":N}` at /queue/I. It counts scrapes per
// pod and the longest gap between two scrapes of a pod, and reports them on a control listener;
// with `queueCount` N (and `queue`), the same per queue index 0..N-1 (`queue` in the stats).
//
// usage: node bench/fleet.mjs '{"port":P,"from":0,"count":10000,"base":1,"queue":false,
//          "queueCount":0}'
// prints one line `{"ready":true,"control":PORT,"failed":N}` once every listener is up.
import { createServer } from "node:http";
import { fakePodRps, fakeQueueLength, podAddress } from "./manifests.mjs";

const cfg = JSON.parse(process.argv[2]);
const { port, from, count, base = 1, queue = false, queueCount = 0, keepAliveMs = 1000 } = cfg;

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
// per queue index (queueCount > 0): reads, the last read, the longest gap between two reads
const qHits = new Uint32Array(queueCount);
const qLastHit = new Float64Array(queueCount);
const qMaxGap = new Float64Array(queueCount);

/** Count a hit of index `i` in `hits`/`last`/`gaps` (a gap only within the window). */
function hit(i, hits, last, gaps) {
  const now = performance.timeOrigin + performance.now();
  if (last[i] > 0 && last[i] >= windowStart) {
    const gap = now - last[i];
    if (gap > gaps[i]) gaps[i] = gap;
  }
  last[i] = now;
  hits[i]++;
}

function onPod(req, res) {
  const i = index.get(req.socket.localAddress);
  if (i === undefined) {
    res.writeHead(404).end();
    return;
  }
  hit(i, hits, lastHit, maxGap);
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
  const q = Number(m[1]);
  if (q < queueCount) hit(q, qHits, qLastHit, qMaxGap);
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

/**
 * Hits, never hit (`inWindow`: not since the window's start; else not ever), the longest gap
 * (and its index), the 99th percentile of the per-index longest gaps, the oldest last hit.
 */
function tally(n, hits, last, gaps, inWindow) {
  const now = performance.timeOrigin + performance.now();
  let total = 0;
  let never = 0;
  let worstGap = 0;
  let worstIndex = -1;
  let worstAge = 0;
  const sorted = [];
  for (let i = 0; i < n; i++) {
    total += hits[i];
    if (inWindow ? hits[i] === 0 : last[i] === 0) never++;
    if (last[i] > 0) worstAge = Math.max(worstAge, now - last[i]);
    if (gaps[i] > worstGap) {
      worstGap = gaps[i];
      worstIndex = i;
    }
    sorted.push(gaps[i]);
  }
  sorted.sort((a, b) => a - b);
  return {
    total,
    never,
    maxGapMs: Math.round(worstGap),
    worstIndex,
    p99MaxGapMs: Math.round(sorted[Math.floor(sorted.length * 0.99)] ?? 0),
    oldestAgeMs: Math.round(worstAge),
  };
}

function stats() {
  const p = tally(count, hits, lastHit, maxGap, false);
  const out = {
    pods: count,
    scrapes: p.total,
    queueHits,
    neverScraped: p.never,
    maxGapMs: p.maxGapMs,
    p99MaxGapMs: p.p99MaxGapMs,
    oldestScrapeAgeMs: p.oldestAgeMs,
  };
  if (queueCount > 0) {
    const q = tally(queueCount, qHits, qLastHit, qMaxGap, true);
    out.queue = {
      count: queueCount,
      reads: q.total,
      neverRead: q.never,
      maxGapMs: q.maxGapMs,
      worstIndex: q.worstIndex,
      p99MaxGapMs: q.p99MaxGapMs,
      oldestReadAgeMs: q.oldestAgeMs,
    };
  }
  return out;
}

const control = createServer((req, res) => {
  if (req.url === "/window" && req.method === "POST") {
    windowStart = performance.timeOrigin + performance.now();
    hits.fill(0);
    maxGap.fill(0);
    queueHits = 0;
    qHits.fill(0);
    qMaxGap.fill(0);
  }
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify(stats()));
});
await listen(control, "127.0.0.1", 0);
process.stdout.write(
  JSON.stringify({ ready: true, control: control.address().port, failed, firstError }) + "\n",
);
process.on("SIGTERM", () => process.exit(0));
