#!/usr/bin/env node
// Side by side with the peers (issue 51): this adapter and a real peer (prometheus-adapter
// v0.12.0, KEDA v2.20.2, kube-metrics-adapter) on the same e2e control plane
// (tests/e2e/harness.ts), the same fleet and the same sources, one at a time behind the
// APIServices, then both at once for a correctness pass. Writes bench/peers/results/NAME.json
// and the table between the markers peers:NAME of bench/README.md.
//
// usage: npm run bench:peers -- [--quick] [--peer all|prometheus-adapter|keda|
//          kube-metrics-adapter] [--fleet NAME] [--artifacts DIR] [--rest-seconds N]
//          [--no-write] [--keep] [--ours-flag FLAG]...
//          (--keep: the work folder, with every process's log, is kept; it is kept anyway when
//          the run fails)
//          (--ours-flag: a flag added to ours' command line, for experiments)
//        npm run bench:peers -- --render-only [--peer P] [--fleet NAME]
//          (the tables again from bench/peers/results/)
// --peer all, the default: every peer's every fleet in turn, one build of ours for all.
// --fleet: for a peer with several fleets (kube-metrics-adapter: serving, the default, and pods);
// their results are bench/peers/results/PEER-FLEET.json, their tables between the markers
// peers:PEER-FLEET of bench/README.md. Importing this file runs nothing.
//
// Needs root (the harness's network namespace), Go (the harness builds kube-apiserver, the
// peer and bench/loadgen from their modules), Debian's prometheus, kubectl. It takes the e2e
// lock (/tmp/hpa-e2e.lock, flock) for its whole run, starts the harness with the
// discovery-only stand-in adapter (HPA_E2E_ADAPTER=stub) and its audit log, stops the stand-in,
// and starts each adapter under test in its place (10.213.0.2:6443, the Service's endpoint), so
// the APIServices are never edited. Every process it starts is stopped by its PID, and the
// harness is brought down at the end, whatever happens.
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  auditCounts,
  auditTail,
  buildLoadgen,
  get,
  HPA_CONTROLLER_USER,
  killAll,
  loadgen,
  machineAndCommit,
  mapLimit,
  median,
  perMinute,
  procStats,
  quantityMilli,
  sleep,
  startProcess,
} from "../lib.mjs";
import { createKubeClient, loadKubeconfig } from "../../tests/e2e/kube_client.ts";
import { CONFIG_YAML } from "./fleet.mjs";
import { KEDA_FLEET, PROMETHEUS_ADAPTER_FLEET } from "./fleets.mjs";
import { KMA_PODS_FLEET, KMA_SERVING_FLEET } from "./fleet_kma.mjs";
import { oursCommand, peerProcesses, PEERS } from "./peers.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const here = fileURLToPath(new URL(".", import.meta.url));
const LOCK = "/tmp/hpa-e2e.lock";

/** The harness's fixed addresses (tests/e2e/harness.ts E2E). */
const NETNS = "hpa-e2e";
const APISERVER = "https://10.213.0.1:6443";
const ADAPTER_IP = "10.213.0.2";
/** The address of the second adapter in the correctness pass (as the e2e suite runs the peer). */
const SECOND_IP = "10.213.0.3";
const PORT = 6443;
const HARNESS = join(root, ".e2e");
const PKI = (f) => join(HARNESS, "pki", f);

/**
 * The identity the aggregator forwards for the HPA controller (as bench/run.mjs's cluster
 * section): the direct reads present the front proxy's certificate and these headers.
 */
const HPA_CONTROLLER_HEADERS = {
  "X-Remote-User": HPA_CONTROLLER_USER,
  "X-Remote-Group": [
    "system:serviceaccounts",
    "system:serviceaccounts:kube-system",
    "system:authenticated",
  ],
};

/** prometheus-adapter's relist interval, the same for both (its chart's default). */
const RELIST = "1m";

function parseArgs(argv) {
  const o = {
    quick: false,
    peer: "all",
    fleet: null,
    artifacts: null,
    restSeconds: 60,
    write: true,
    oursFlags: [],
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === "--quick") o.quick = true;
    else if (a === "--peer") o.peer = val();
    else if (a === "--fleet") o.fleet = val();
    else if (a === "--artifacts") o.artifacts = val();
    else if (a === "--rest-seconds") o.restSeconds = Number(val());
    else if (a === "--no-write") o.write = false;
    else if (a === "--keep") o.keep = true;
    else if (a === "--ours-flag") o.oursFlags.push(val());
    else if (a === "--render-only") o.renderOnly = true;
    else throw new Error(`unknown option ${a}`);
  }
  if (o.peer === "all") {
    if (o.fleet !== null) throw new Error("--fleet needs --peer");
    return o;
  }
  if (!PEERS[o.peer]) {
    throw new Error(`unknown peer "${o.peer}": want all, ${Object.keys(PEERS).join(", ")}`);
  }
  const fleets = FLEETS[PEERS[o.peer].fleet];
  if (fleets.default) {
    if (o.fleet !== null) throw new Error(`peer "${o.peer}" has one fleet: no --fleet`);
  } else {
    o.fleet ??= Object.keys(fleets)[0];
    if (!fleets[o.fleet]) {
      throw new Error(
        `unknown fleet "${o.fleet}" of ${o.peer}: want ${Object.keys(fleets).join(", ")}`,
      );
    }
  }
  return o;
}

/**
 * The fleets of each peer (bench/peers/fleets.mjs, fleet_kma.mjs): one (`default`), or several
 * by name, the first the default of --fleet.
 */
const FLEETS = {
  "prometheus-adapter": { default: PROMETHEUS_ADAPTER_FLEET },
  keda: { default: KEDA_FLEET },
  "kube-metrics-adapter": { serving: KMA_SERVING_FLEET, pods: KMA_PODS_FLEET },
};

/** Whether this file is the script node runs (importing it runs nothing). */
const isMain = process.argv[1] !== undefined &&
  realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);

// What one run of one peer's fleet is (set by configure() before main() runs it).
let opts, quick, fleet, resultsName, size, ORDER, SETTLE_SECONDS, SERVE, work;
/** How long a session waits for the fleet's objects the adapter writes (KEDA's HPAs). */
const WRITTEN_LIMIT_SECONDS = 300;
/** From an adapter's start, the longest wait for its start's writes to settle (untilWritesSettled). */
const WRITES_SETTLE_LIMIT_SECONDS = 300;

/** The name of a peer's fleet's results and table: PEER, or PEER-FLEET (several fleets). */
const fleetName = (peer, f) => (f ? `${peer}-${f}` : peer);

/** The run of one peer's fleet that `o` (parseArgs) names. */
function configure(o) {
  opts = o;
  quick = o.quick;
  /** The peer's fleet, and the name of its results and table: PEER, or PEER-FLEET. */
  fleet = FLEETS[PEERS[o.peer].fleet][o.fleet ?? "default"];
  resultsName = fleetName(o.peer, o.fleet);
  size = fleet.size(quick);
  /** Sessions in turn: ours, peer, ours, peer (quick: one each). */
  ORDER = quick ? ["ours", "peer"] : ["ours", "peer", "ours", "peer"];
  SETTLE_SECONDS = quick ? 20 : 45;
  SERVE = { warmSeconds: 2, seconds: quick ? 5 : 10, connections: 8 };
}

const log = (msg) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${msg}`);
const round = (x, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

// -- the harness -------------------------------------------------------------------------------

/** kubectl with the harness's admin kubeconfig; throws with its output when it fails. */
function kubectl(args) {
  const r = spawnSync("kubectl", args, {
    encoding: "utf8",
    env: { ...process.env, KUBECONFIG: join(HARNESS, "kubeconfig") },
  });
  if (r.status !== 0) throw new Error(`kubectl ${args.join(" ")}: ${r.stderr || r.stdout}`);
  return r.stdout;
}

function harness(args) {
  const r = spawnSync(process.execPath, [
    "--import",
    "tsx",
    join(root, "tests/e2e/harness.ts"),
    ...args,
  ], {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 64 << 20,
    env: {
      ...process.env,
      // the discovery-only stand-in holds the adapter's address until the bench stops it
      HPA_E2E_ADAPTER: "stub",
      HPA_E2E_AUDIT_LOG: "1",
      // the HPA controller at Kubernetes' default sync period, not the suite's 2 s
      HPA_E2E_HPA_SYNC_PERIOD: "15",
    },
  });
  writeFileSync(join(work, "e2e-harness.log"), (r.stdout ?? "") + (r.stderr ?? ""), { flag: "a" });
  if (r.status !== 0) {
    throw new Error(
      `harness ${args[0]} exited ${r.status} (needs root, Go, kubectl):\n${
        (r.stderr || r.stdout || "").slice(-1500)
      }`,
    );
  }
}

/**
 * Wait (up to 30 minutes) while a network namespace hpa-e2e exists that this checkout's
 * harness did not make (another run of the harness without the lock, such as CI's): `up`
 * would refuse it.
 */
async function netnsFree() {
  const taken = () =>
    !existsSync(join(HARNESS, "network")) &&
    spawnSync("ip", ["netns", "list"], { encoding: "utf8" }).stdout.split("\n")
      .some((l) => l.split(" ")[0] === NETNS);
  for (let i = 0; taken(); i++) {
    if (i === 0) log(`network namespace ${NETNS} in use by another run: waiting`);
    if (i > 180) throw new Error(`network namespace ${NETNS} still in use after 30 minutes`);
    await sleep(10_000);
  }
}

/** The PID `up` recorded for `name` in .e2e/pids (the last one), or null. */
function harnessPid(name) {
  const pids = readFileSync(join(HARNESS, "pids"), "utf8");
  const all = [...pids.matchAll(new RegExp(`^${name} (\\d+) `, "gm"))];
  return all.length ? Number(all.at(-1)[1]) : null;
}

const alive = (pid) =>
  existsSync(`/proc/${pid}`) && !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));

/** Stop a process by PID (SIGTERM, then SIGKILL after 10 s). */
async function stopPid(pid) {
  if (!alive(pid)) return;
  process.kill(pid, "SIGTERM");
  for (let i = 0; i < 100 && alive(pid); i++) await sleep(100);
  if (alive(pid)) process.kill(pid, "SIGKILL");
}

// -- readings ----------------------------------------------------------------------------------

/** RSS, peak RSS (MiB) and CPU seconds of a process and every descendant, summed (/proc). */
function treeStats(pid) {
  const parent = new Map();
  for (const d of readdirProc()) {
    try {
      const s = readFileSync(`/proc/${d}/stat`, "utf8");
      parent.set(Number(d), Number(s.slice(s.lastIndexOf(")") + 2).split(" ")[1]));
    } catch { /* gone */ }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) {
    for (const [c, p] of parent) if (p === tree[i]) tree.push(c);
  }
  const sum = { rssMiB: 0, hwmMiB: 0, anonMiB: 0, fileMiB: 0, cpuSeconds: 0, processes: 0 };
  for (const p of tree) {
    try {
      const one = procStats(p);
      for (const k of ["rssMiB", "hwmMiB", "anonMiB", "fileMiB", "cpuSeconds"]) sum[k] += one[k];
      sum.processes++;
    } catch { /* gone */ }
  }
  return sum;
}

function readdirProc() {
  return readdirSync("/proc").filter((d) => /^\d+$/.test(d));
}

/**
 * Prometheus' own count of the requests it answered, by handler (`prometheus_http_requests_total`),
 * without its /metrics (this reading itself) and the scrapes.
 */
async function prometheusRequests(url) {
  const r = await get(`${url}/metrics`);
  const by = {};
  for (const m of r.body.matchAll(/^prometheus_http_requests_total\{([^}]*)\} (\S+)$/gm)) {
    const handler = /handler="([^"]*)"/.exec(m[1])?.[1] ?? "?";
    if (handler === "/metrics") continue;
    by[handler] = (by[handler] ?? 0) + Number(m[2]);
  }
  return by;
}

function diffCounts(a, b) {
  const out = {};
  for (const [k, v] of Object.entries(b)) {
    const d = v - (a[k] ?? 0);
    if (d > 0) out[k] = d;
  }
  return Object.fromEntries(Object.entries(out).sort((x, y) => y[1] - x[1]));
}

/**
 * The writes among audit counts ("verb resource" keys): creates, updates, patches and deletes,
 * without the reviews (SubjectAccessReviews, TokenReviews: questions, not state).
 */
function writesOf(byVerbResource) {
  return Object.fromEntries(
    Object.entries(byVerbResource).filter(([k]) =>
      /^(create|update|patch|delete|deletecollection) /.test(k) && !/reviews$/.test(k)
    ),
  );
}

/** The fleet's reads, as the HPA controller makes them. */
const allReads = () => fleet.reads(size);

/** A read answered with at least one item. */
const hasValue = (body) => Array.isArray(body?.items) && body.items.length > 0;

/** A read through kube-apiserver (the aggregator), with the harness's admin certificate. */
async function throughApiserver(path) {
  try {
    const r = await get(`${APISERVER}${path}`, {
      timeoutMs: 10_000,
      tls: { cert: readFileSync(PKI("admin.crt")), key: readFileSync(PKI("admin.key")) },
    });
    return { status: r.status, body: r.status === 200 ? JSON.parse(r.body) : r.body };
  } catch (e) {
    return { status: 0, body: String(e) };
  }
}

/** A read straight to an adapter, as the aggregator forwards the HPA controller's. */
async function direct(ip, path) {
  try {
    const r = await get(`https://${ip}:${PORT}${path}`, {
      timeoutMs: 10_000,
      tls: {
        cert: readFileSync(PKI("frontProxyClient.crt")),
        key: readFileSync(PKI("frontProxyClient.key")),
        headers: HPA_CONTROLLER_HEADERS,
      },
    });
    return { status: r.status, body: r.status === 200 ? JSON.parse(r.body) : r.body };
  } catch (e) {
    return { status: 0, body: String(e) };
  }
}

/**
 * Read every path with `read` until each has answered a value once: ms from `t0` to the first
 * value of any, and to the last path's first value. Throws after `timeoutMs`.
 */
async function untilEveryValue(reads, read, t0, { timeoutMs = 240_000, exited } = {}) {
  const firstAt = new Map();
  let gone = false;
  exited?.then(() => (gone = true));
  const end = performance.now() + timeoutMs;
  let last = null;
  while (firstAt.size < reads.length) {
    if (gone) throw new Error("the adapter exited");
    if (performance.now() > end) {
      throw new Error(
        `${
          reads.length - firstAt.size
        } of ${reads.length} reads without a value after ${timeoutMs} ms; last: ${
          JSON.stringify(last).slice(0, 300)
        }`,
      );
    }
    // by index: two HPAs may make the same read (the same queue in the same namespace)
    const pending = reads.map((r, i) => ({ r, i })).filter(({ i }) => !firstAt.has(i));
    await mapLimit(pending, 8, async ({ r, i }) => {
      const a = await read(r.path);
      if (a.status === 200 && hasValue(a.body)) firstAt.set(i, performance.now() - t0);
      else last = a;
    });
    // a short pause between rounds: the first value's resolution is one round (a round of
    // 50 failing reads through kube-apiserver takes ~20 ms; 100 ms pauses made it ~150 ms)
    if (firstAt.size < reads.length) await sleep(25);
  }
  const times = [...firstAt.values()];
  return {
    firstValueMs: Math.round(Math.min(...times)),
    everyValueMs: Math.round(Math.max(...times)),
  };
}

// -- the adapters ------------------------------------------------------------------------------

/**
 * Start adapter `who` ("ours" or "peer") in the namespace at `ip`, with `extra` (the
 * correctness pass's: `ours`, flags of ours; `peer`, fields of the peer's options). Returns
 * { pids, stop, exited, t0 }: a peer may be several processes (KEDA's operator and metrics
 * server), stopped together; `exited` settles when any of them exits.
 */
function startAdapter(who, ip, art, tag, extra = {}) {
  const dir = join(work, `${who}-${tag}`);
  mkdirSync(dir, { recursive: true });
  const o = {
    ip,
    port: PORT,
    servingCert: PKI("adapterServing.crt"),
    servingKey: PKI("adapterServing.key"),
    kubeconfig: join(HARNESS, "adapter.kubeconfig"),
    prometheusUrl: art.prometheusUrl,
    config: art.config,
    relist: RELIST,
    dir,
    ...(who === "peer" ? extra.peer : {}),
  };
  const procs = who === "ours"
    ? [{
      name: "ours",
      argv: [
        ...oursCommand(art.ours, o),
        ...fleet.ours(o),
        ...(extra.ours ?? []),
        ...opts.oursFlags,
      ],
      env: {},
    }]
    : peerProcesses(opts.peer, art.peer, o);
  const t0 = performance.now();
  const started = procs.map((p) => {
    const logFile = join(work, `${who}-${tag}-${p.name}.log`);
    const env = Object.entries(p.env).map(([k, v]) => `${k}=${v}`);
    // `ip netns exec` and `env` exec the command in place: the PID is the adapter's own
    return startProcess("ip", ["netns", "exec", NETNS, "env", ...env, ...p.argv], {
      logFile,
      // relative paths a process writes (a metrics server's self-signed --cert-dir,
      // apiserver.local.config/) go to the work folder, not the checkout
      cwd: work,
      onLine: (l) => writeFileSync(logFile, l + "\n", { flag: "a" }),
    });
  });
  return {
    pids: started.map((p) => p.pid),
    stop: () => Promise.all(started.map((p) => p.stop())),
    exited: Promise.race(started.map((p) => p.exited)),
    t0,
  };
}

/** CPU seconds so far of kube-apiserver, etcd and kube-controller-manager together. */
function controlPlaneCpu() {
  let sum = 0;
  for (const name of ["kube-apiserver", "etcd", "kube-controller-manager"]) {
    const pid = harnessPid(name);
    if (pid !== null && alive(pid)) sum += procStats(pid).cpuSeconds;
  }
  return sum;
}

/** The summed stats of every process tree of an adapter. */
function adapterStats(a) {
  const sum = { rssMiB: 0, hwmMiB: 0, anonMiB: 0, fileMiB: 0, cpuSeconds: 0, processes: 0 };
  for (const pid of a.pids) {
    const one = treeStats(pid);
    for (const k of Object.keys(sum)) sum[k] += one[k];
  }
  return sum;
}

/** Serving: bench/loadgen on one path for `SERVE.seconds` (after a warm-up). */
async function serve(lg, url, tls) {
  await loadgen(lg, url, { seconds: SERVE.warmSeconds, connections: SERVE.connections, tls });
  const r = await loadgen(lg, url, { seconds: SERVE.seconds, connections: SERVE.connections, tls });
  return {
    rps: round(r.rps),
    p50Ms: round(r.p50Ms, 2),
    p99Ms: round(r.p99Ms, 2),
    errors: r.errors,
    requests: r.requests,
  };
}

/**
 * One session: `who` alone behind the APIServices. Start to first value and to every HPA's
 * value (through kube-apiserver); after SETTLE_SECONDS, a window at rest (the HPA controller
 * reads every 15 s; nobody else): RSS each second, CPU, requests to kube-apiserver (audit log),
 * queries to Prometheus; then serving, directly and through kube-apiserver.
 */
async function session(who, art, lg, index) {
  log(`session ${index + 1}/${ORDER.length}: ${who}`);
  await fleet.reset?.(art.ctx, size);
  const startedAt = Date.now();
  const auditFrom = statSync(art.auditLog).size;
  const a = startAdapter(who, ADAPTER_IP, art, `s${index + 1}`);
  try {
    const reads = allReads();
    // what the adapter writes (KEDA's HPAs), checked every second from the start on
    // (a peer held back by its client's rate limit may not get there: how many it wrote then)
    const written = fleet.written && (async () => {
      for (let i = 0;; i++) {
        const w = await fleet.written(art.ctx, size);
        if (w.done) return { ms: Math.round(performance.now() - a.t0), of: w.of, count: w.count };
        if (i >= WRITTEN_LIMIT_SECONDS) return { ms: null, of: w.of, count: w.count };
        await sleep(1000);
      }
    })();
    const times = await untilEveryValue(reads, throughApiserver, a.t0, { exited: a.exited });
    if (written) {
      const w = await written;
      times.everyWrittenMs = w.ms;
      times.written = { count: w.count, of: w.of };
    }
    log(
      `${who}: first value after ${times.firstValueMs} ms, every HPA's after ${times.everyValueMs} ms` +
        (times.written
          ? times.everyWrittenMs !== null
            ? `, every object written after ${times.everyWrittenMs} ms`
            : `, ${times.written.count} of ${times.written.of} objects written after ${WRITTEN_LIMIT_SECONDS} s`
          : ""),
    );
    await sleep(SETTLE_SECONDS * 1000);
    // a fleet whose adapter writes at rest (KEDA's status patches): the window waits until the
    // writes of its start are done (their rate back to the fleet's due one)
    times.writesSettledMs = await untilWritesSettled(art, a.t0, auditFrom);
    const from = Date.now();
    const s0 = adapterStats(a);
    const cp0 = controlPlaneCpu();
    const q0 = await prometheusRequests(art.prometheusUrl);
    // the fleet's own counts over the window (KMA's: the reads of its endpoints)
    const rest = fleet.rest?.(art.ctx, size);
    const rss = [];
    const anon = [];
    const file = [];
    const end = performance.now() + opts.restSeconds * 1000;
    while (performance.now() < end) {
      const st = adapterStats(a);
      rss.push(st.rssMiB);
      anon.push(st.anonMiB);
      file.push(st.fileMiB);
      await sleep(1000);
    }
    const q1 = await prometheusRequests(art.prometheusUrl);
    const s1 = adapterStats(a);
    const cp1 = controlPlaneCpu();
    const to = Date.now();
    const restCounts = rest?.end((to - from) / 1000) ?? {};
    await sleep(1500); // the audit log's last events
    const seconds = (to - from) / 1000;
    const audit = auditCounts(art.auditLog, from, to);
    // the HPA controller's reads of the metrics APIs (the aggregator proxies each to the
    // adapter): what the control plane did for it, and how many it answered
    const hpaReads = auditCounts(art.auditLog, from, to, { hpaController: true });
    const queries = diffCounts(q0, q1);
    const queriesTotal = Object.values(queries).reduce((x, y) => x + y, 0);
    const path = reads[0].path;
    const direct_ = await serve(lg, `https://${ADAPTER_IP}:${PORT}${path}`, {
      certFile: PKI("frontProxyClient.crt"),
      keyFile: PKI("frontProxyClient.key"),
      headers: {
        "X-Remote-User": HPA_CONTROLLER_HEADERS["X-Remote-User"],
        "X-Remote-Group": "system:authenticated",
      },
    });
    const viaApi = await serve(lg, `${APISERVER}${path}`, {
      certFile: PKI("admin.crt"),
      keyFile: PKI("admin.key"),
      headers: {},
    });
    const out = {
      adapter: who,
      ...times,
      rssMiB: round(median(rss)),
      rssMaxMiB: round(Math.max(...rss)),
      // its two parts (medians at rest): the process's own memory, and its binary's pages
      rssAnonMiB: round(median(anon)),
      rssFileMiB: round(median(file)),
      // the high-water mark at the end of the rest window: the start, the first values and
      // rest, before the serving runs (where ours answers thousands of requests a second, and
      // prometheus-adapter a few, behind its client's rate limit)
      peakBeforeServingMiB: round(s1.hwmMiB),
      peakMiB: round(adapterStats(a).hwmMiB),
      processes: s1.processes,
      restSeconds: round(seconds),
      cpuSecondsPerMinute: round(((s1.cpuSeconds - s0.cpuSeconds) * 60) / seconds, 3),
      // what serving this adapter costs the control plane at rest (the aggregator's proxying of
      // the HPA controller's reads, the adapter's own requests and watches, their SARs)
      controlPlaneCpuSecondsPerMinute: round(((cp1 - cp0) * 60) / seconds, 3),
      apiRequestsPerMinute: round((audit.total * 60) / seconds),
      apiRequestsByVerbResource: perMinute(audit.byVerbResource, seconds),
      hpaMetricReadsPerMinute: round((hpaReads.total * 60) / seconds),
      hpaMetricReadsAnsweredPerMinute: round((hpaReads.answered * 60) / seconds),
      subjectAccessReviewsPerMinute: round(
        ((audit.byVerbResource["create subjectaccessreviews"] ?? 0) * 60) / seconds,
      ),
      ...restCounts,
      // what it wrote from its start to the end of the rest window (leases, events, status)
      writesSinceStart: writesOf(auditCounts(art.auditLog, startedAt, to).byVerbResource),
      prometheusQueriesPerMinute: round((queriesTotal * 60) / seconds),
      prometheusQueriesByHandler: perMinute(queries, seconds),
      servingPath: path,
      servingDirect: direct_,
      servingThroughApiserver: viaApi,
      load1: round(loadavg()[0], 2),
    };
    log(`${who}: ${JSON.stringify(out)}`);
    return out;
  } finally {
    await a.stop();
  }
}

/**
 * After the start, an adapter that writes at rest catches up: KEDA's 1,000 ScaledObjects are
 * 1,000 labels, HPAs, events and statuses at its start, behind its client's rate limit (ours:
 * 50 a second, so every HPA after about 80 s), while their loops' ticks queue up; the queue
 * then drains at the limit while new ticks come at 2,000 a minute (ours: 3,000 status patches
 * a minute until about 130 s from its start, then 2,000). A window at rest starting before
 * counts the start's writes. The fleet's `dueWrites(size)` ({ what, perMinute }): the window
 * starts once the adapter's `what` requests in the last 10 s are at most 1.1 times the due
 * rate (an adapter whose client's limit is below the due rate, from the start: at once; KEDA
 * at 1,000 ScaledObjects, and ours at 3,000, whose window at rest is then at its limit), or
 * WRITES_SETTLE_LIMIT_SECONDS after the adapter's start. Returns ms from the adapter's start
 * (null: not settled).
 */
async function untilWritesSettled(art, t0, auditFrom) {
  const due = fleet.dueWrites?.(size);
  if (!due) return undefined;
  const limit = t0 + WRITES_SETTLE_LIMIT_SECONDS * 1000;
  // this session's part of the log (it holds every session's requests), read as it grows
  const tail = auditTail(art.auditLog, auditFrom, due.what);
  for (;;) {
    // the audit log's events come a second or so after their request
    const to = Date.now() - 1500;
    const count = tail().filter((t) => t >= to - 10_000 && t < to).length;
    if (count <= (due.perMinute / 6) * 1.1) {
      const ms = Math.round(performance.now() - t0);
      log(`writes settled after ${ms} ms (${count} ${due.what} in 10 s)`);
      return ms;
    }
    if (performance.now() >= limit) {
      log(
        `writes not settled after ${WRITES_SETTLE_LIMIT_SECONDS} s (${count} ${due.what} in 10 s)`,
      );
      return null;
    }
    await sleep(5000);
  }
}

/** Items of a read, for comparison: object or labels, and the value in milli (timestamps out). */
function itemsOf(body) {
  return (body?.items ?? []).map((i) => {
    const who = i.describedObject
      ? `${i.describedObject.kind}/${i.describedObject.name}`
      : JSON.stringify(Object.entries(i.metricLabels ?? {}).sort());
    const milli = quantityMilli(i.value);
    // v1beta1 items name the metric in metricName, v1beta2 ones in metric.name
    return `${i.metricName ?? i.metric?.name} ${who} ${milli === null ? i.value : `${milli}m`}`;
  }).sort();
}

/**
 * Both at once: ours behind the APIServices (10.213.0.2), the peer beside it (10.213.0.3);
 * once each has every value, the fleet's correctness reads (the same read, or each its own
 * copy of the same object: fleets.mjs) of both at the same moment, straight to each. Also
 * checked against the fleet's numbers.
 */
async function correctness(art) {
  log("correctness: both at once");
  const c = await fleet.correctness(art.ctx, size);
  const from = Date.now();
  const ours = startAdapter("ours", ADAPTER_IP, art, "both", c);
  const peer = startAdapter("peer", SECOND_IP, art, "both", c);
  try {
    const { reads } = c;
    await Promise.all([
      untilEveryValue(
        reads.map((r) => ({ path: r.ours })),
        (p) => direct(ADAPTER_IP, p),
        ours.t0,
        { exited: ours.exited },
      ),
      untilEveryValue(
        reads.map((r) => ({ path: r.peer })),
        (p) => direct(SECOND_IP, p),
        peer.t0,
        { exited: peer.exited },
      ),
    ]);
    let same = 0;
    let expected = 0;
    const differences = [];
    await mapLimit(reads, 4, async (r) => {
      const [o, p] = await Promise.all([direct(ADAPTER_IP, r.ours), direct(SECOND_IP, r.peer)]);
      const oi = itemsOf(o.body);
      const pi = itemsOf(p.body);
      const want = fleet.wanted(r, size);
      if (o.status === p.status && JSON.stringify(oi) === JSON.stringify(pi)) same++;
      else if (differences.length < 10) {
        differences.push({ path: r.ours, ours: [o.status, ...oi], peer: [p.status, ...pi] });
      }
      if (JSON.stringify(oi) === JSON.stringify(want)) expected++;
    });
    const to = Date.now();
    await sleep(1500); // the audit log's last events
    const out = {
      reads: reads.length,
      seconds: round((to - from) / 1000),
      // both adapters' writes (one service account) from their start to the last read
      writes: writesOf(auditCounts(art.auditLog, from, to).byVerbResource),
      same,
      different: reads.length - same,
      oursAsFleet: expected,
      differences,
    };
    log(`correctness: ${JSON.stringify(out)}`);
    return out;
  } finally {
    await Promise.all([ours.stop(), peer.stop()]);
  }
}

// -- the report --------------------------------------------------------------------------------

/** The markers of a peer's (or a peer's fleet's) table in bench/README.md. */
const markers = (name) => [`<!-- peers:${name}:start -->`, `<!-- peers:${name}:end -->`];
/** Where a peer's (or a peer's fleet's) last results are. */
const resultsFile = (name) => join(here, "results", `${name}.json`);

/** "median (min-max)" of a number over sessions, or the one value. */
function spread(xs) {
  const m = round(median(xs), 2);
  if (xs.length < 2) return `${m}`;
  return `${m} (${round(Math.min(...xs), 2)}-${round(Math.max(...xs), 2)})`;
}

/** "verb resource N, ..." of the first session's counts (all sessions in results.json). */
function countsText(c) {
  const e = Object.entries(c);
  return e.length ? e.map(([k, v]) => `${k} ${v}`).join(", ") : "none";
}

function renderTable(report) {
  const peer = report.peer.name;
  const ours = report.sessions.filter((s) => s.adapter === "ours");
  const theirs = report.sessions.filter((s) => s.adapter === "peer");
  const row = (what, f) => {
    const a = ours.map(f);
    const b = theirs.map(f);
    // two significant digits below 0.1 (a latency ratio would round to 0)
    const r = median(a) / median(b);
    const ratio = !Number.isFinite(r)
      ? "-"
      : r < 0.1
      ? `${Number(r.toPrecision(2))}`
      : `${round(r, 2)}`;
    return `| ${what} | ${spread(a)} | ${spread(b)} | ${ratio} |`;
  };
  const c = report.correctness;
  /** A row of times some sessions may not reach: such a session's cell says so (`missed(s)`). */
  const reachedRow = (what, f, missed) => {
    const cell = (ss) =>
      ss.every((s) => f(s) !== null)
        ? spread(ss.map(f))
        : ss.map((s) => (f(s) !== null ? `${f(s)}` : missed(s))).join(", ");
    const a = ours.map(f);
    const b = theirs.map(f);
    const ratio = a.includes(null) || b.includes(null) ? "-" : `${round(median(a) / median(b), 2)}`;
    return `| ${what} | ${cell(ours)} | ${cell(theirs)} | ${ratio} |`;
  };
  const writtenRow = () =>
    reachedRow(
      "start to every HPA written, ms",
      (s) => s.everyWrittenMs,
      (s) =>
        `not in ${report.settings.writtenLimitSeconds} s (${s.written.count} of ${s.written.of})`,
    );
  const settledRow = () =>
    reachedRow(
      "start to the start's writes settled (the window at rest begins), ms",
      (s) => s.writesSettledMs,
      () => `not in ${report.settings.writesSettleLimitSeconds} s`,
    );
  const extra = report.fleet.rows ?? {};
  const lines = [
    `Last run: ${report.date} (${report.mode}, ${report.durationSeconds} s), commit ${report.commit}, ` +
    `${report.machine.cores} cores, load average ${report.machine.load1.join(", ")}. ` +
    `${peer} ${report.peer.version}; ours: ${report.ours}. Fleet: ${report.fleet.text}. Sessions: ${
      report.sessions.map((s) => s.adapter).join(", ")
    }; ` +
    `each adapter alone at 10.213.0.2:6443, behind the APIServices. ` +
    `Numbers: median of the sessions (lowest-highest when more than one); ratio = ours / peer.`,
    "",
    `| per session | ours | ${peer} | ratio |`,
    "| --- | --- | --- | --- |",
    row("start to first value, ms", (s) => s.firstValueMs),
    row("start to every HPA's value, ms", (s) => s.everyValueMs),
    ...(ours.every((s) => s.everyWrittenMs !== undefined) ? [writtenRow()] : []),
    ...(ours.every((s) => s.writesSettledMs !== undefined) ? [settledRow()] : []),
    row("RSS settled, MiB (median at rest)", (s) => s.rssMiB),
    ...(ours.every((s) => s.rssAnonMiB !== undefined)
      ? [
        row("- of which anonymous (heap, stacks), MiB", (s) => s.rssAnonMiB),
        row("- of which file-backed (the binary's pages, shared), MiB", (s) => s.rssFileMiB),
      ]
      : []),
    ...(ours.every((s) => s.peakBeforeServingMiB !== undefined)
      ? [
        row("RSS peak before serving, MiB (VmHWM after the rest window)", (s) =>
          s.peakBeforeServingMiB),
      ]
      : []),
    row("RSS peak, MiB (VmHWM, serving included)", (s) => s.peakMiB),
    row("CPU s per 60 s at rest", (s) => s.cpuSecondsPerMinute),
    ...(ours.every((s) => s.controlPlaneCpuSecondsPerMinute !== undefined)
      ? [
        row(
          "control plane CPU s per 60 s at rest (kube-apiserver, etcd, controller manager)",
          (s) => s.controlPlaneCpuSecondsPerMinute,
        ),
      ]
      : []),
    row("requests to kube-apiserver per 60 s at rest", (s) => s.apiRequestsPerMinute),
    ...(ours.every((s) => s.hpaMetricReadsPerMinute !== undefined)
      ? [
        row(
          `the HPA controller's metric reads per 60 s at rest (${
            report.fleet.hpaReadsDue ?? "?"
          } due), made`,
          (s) => s.hpaMetricReadsPerMinute,
        ),
        row("- of them answered (200)", (s) => s.hpaMetricReadsAnsweredPerMinute),
      ]
      : []),
    ...(extra.subjectAccessReviews
      ? [row("SubjectAccessReviews per 60 s at rest", (s) => s.subjectAccessReviewsPerMinute)]
      : []),
    ...(extra.fleetReads ? [row(extra.fleetReads, (s) => s.fleetReadsPerMinute)] : []),
    // (none when no HPA of the fleet reads Prometheus)
    ...(report.sessions.some((s) => s.prometheusQueriesPerMinute > 0)
      ? [row("queries to Prometheus per 60 s at rest", (s) => s.prometheusQueriesPerMinute)]
      : []),
    row("serving direct, req/s", (s) => s.servingDirect.rps),
    row("serving direct, p50 ms", (s) => s.servingDirect.p50Ms),
    row("serving direct, p99 ms", (s) => s.servingDirect.p99Ms),
    row("serving through kube-apiserver, req/s", (s) => s.servingThroughApiserver.rps),
    row("serving through kube-apiserver, p50 ms", (s) => s.servingThroughApiserver.p50Ms),
    row("serving through kube-apiserver, p99 ms", (s) => s.servingThroughApiserver.p99Ms),
    "",
    `At rest, by verb and resource (first session of each): ours ${
      countsText(ours[0].apiRequestsByVerbResource)
    }; ` +
    `${peer} ${countsText(theirs[0].apiRequestsByVerbResource)}. Prometheus, by handler: ours ` +
    `${countsText(ours[0].prometheusQueriesByHandler)}; ${peer} ${
      countsText(theirs[0].prometheusQueriesByHandler)
    }.`,
    "",
    `Correctness, both at once (ours at 10.213.0.2, ${peer} at 10.213.0.3, each read directly as ` +
    `the aggregator forwards the HPA controller's reads, the same read of both at the same moment): ` +
    `${c.same} of ${c.reads} reads the same (status, items, values), ${c.different} different; ` +
    `ours equal to the fleet's numbers in ${c.oursAsFleet} of ${c.reads}.` +
    (c.writes
      ? ` Writes to kube-apiserver of both in that pass (${c.seconds} s from their start): ${
        countsText(c.writes)
      }.`
      : ""),
  ];
  if (ours[0].writesSinceStart && theirs[0].writesSinceStart) {
    // after the counts at rest, before the correctness paragraph
    lines.splice(
      lines.length - 1,
      0,
      `Writes to kube-apiserver from the start to the end of the window at rest (first ` +
        `session of each): ours ${countsText(ours[0].writesSinceStart)}; ${peer} ${
          countsText(theirs[0].writesSinceStart)
        }.`,
      "",
    );
  }
  return lines.join("\n") + "\n";
}

/** Replace the text between the peer's markers in bench/README.md (they must be there once). */
function writeReadme(report) {
  const file = join(root, "bench", "README.md");
  const text = readFileSync(file, "utf8");
  const [start, end] = markers(report.name ?? report.peer.name);
  const a = text.indexOf(start);
  const b = text.indexOf(end);
  if (a < 0 || b < a || text.indexOf(start, a + 1) >= 0) {
    throw new Error(`bench/README.md must hold "${start}" and "${end}" once, in order`);
  }
  writeFileSync(file, text.slice(0, a + start.length) + "\n" + renderTable(report) + text.slice(b));
}

// -- main --------------------------------------------------------------------------------------

async function main() {
  const startedAt = new Date();
  const load = [loadavg()[0]];
  const peerBin = PEERS[opts.peer].ensure();
  const oursBin = opts.artifacts ? join(opts.artifacts, "hpa-metrics-adapter") : buildOurs();
  const lg = buildLoadgen(work);
  const config = join(work, "prometheus-adapter.yaml");
  writeFileSync(config, CONFIG_YAML);
  await netnsFree();
  log(`work folder ${work}; starting the e2e control plane (stand-in adapter, audit log)`);
  harness(["up", "--fresh"]);
  let exporter = null;
  try {
    const state = JSON.parse(readFileSync(join(HARNESS, "state.json"), "utf8"));
    if (!state.prometheus) {
      throw new Error("the harness has no Prometheus (Debian package prometheus)");
    }
    // the stand-in goes: each adapter under test takes its address in turn
    const stub = harnessPid("adapter");
    if (stub) await stopPid(stub);
    const client = createKubeClient(loadKubeconfig(join(HARNESS, "kubeconfig")));
    const ctx = { client, state, work, log, kubectl, netns: NETNS };
    exporter = await fleet.create(ctx, size);
    const art = {
      ours: oursBin,
      peer: peerBin,
      prometheusUrl: state.prometheus.url,
      config,
      auditLog: join(HARNESS, "logs", "audit.log"),
      ctx,
    };
    const sessions = [];
    for (const [i, who] of ORDER.entries()) {
      sessions.push(await session(who, art, lg, i));
      load.push(loadavg()[0]);
    }
    const corr = await correctness(art);
    load.push(loadavg()[0]);
    const report = {
      date: startedAt.toISOString(),
      durationSeconds: Math.round((Date.now() - startedAt.getTime()) / 1000),
      mode: quick ? "quick" : "full",
      ...machineAndCommit(root, load),
      ours: opts.artifacts && process.env.BENCH_PEERS_OURS_BUILT !== "1"
        ? `the binary in ${opts.artifacts}`
        : "the binary built from the working tree",
      name: resultsName,
      peer: { name: opts.peer, version: PEERS[opts.peer].version() },
      fleet: {
        name: fleet.name,
        ...size,
        text: fleet.describe(size),
        // the HPA controller reads each HPA's metrics every sync (15 s)
        hpaReadsDue: allReads().length * 4,
        // the fleet's extra rows of the table, with their labels
        ...(fleet.rows
          ? {
            rows: {
              subjectAccessReviews: fleet.rows.subjectAccessReviews ?? false,
              ...(fleet.rows.fleetReads ? { fleetReads: fleet.rows.fleetReads(size) } : {}),
            },
          }
          : {}),
      },
      settings: {
        relistInterval: RELIST,
        hpaSyncPeriodSeconds: 15,
        settleSeconds: SETTLE_SECONDS,
        writtenLimitSeconds: WRITTEN_LIMIT_SECONDS,
        writesSettleLimitSeconds: WRITES_SETTLE_LIMIT_SECONDS,
        restSeconds: opts.restSeconds,
        serving: SERVE,
        ...fleet.settings(size),
      },
      sessions,
      correctness: corr,
    };
    if (opts.write) {
      mkdirSync(join(here, "results"), { recursive: true });
      writeFileSync(resultsFile(resultsName), JSON.stringify(report, null, 2) + "\n");
      writeReadme(report);
      log(`wrote bench/peers/results/${resultsName}.json and its table in bench/README.md`);
    }
    console.log(renderTable(report));
  } finally {
    await exporter?.stop();
    log("bringing the e2e control plane down");
    harness(["down"]);
  }
}

/** Our binary, built from the working tree into the work folder (dist/ is left alone). */
function buildOurs() {
  const out = join(work, "build");
  const r = spawnSync(process.execPath, [
    join(root, "scripts", "build.mjs"),
    "--outdir",
    out,
    "--quiet",
  ], {
    cwd: root,
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`build: ${(r.stderr || r.stdout).slice(-800)}`);
  return join(out, "hpa-metrics-adapter");
}

/** Every peer's fleets, in the order `--peer all` runs them: [peer, fleet or null]. */
const ALL = Object.entries(FLEETS).flatMap(([peer, fleets]) =>
  fleets.default ? [[peer, null]] : Object.keys(fleets).map((f) => [peer, f])
);

/**
 * `--peer all`: each peer's fleets in turn, each run by this script as its own process (under
 * the lock this one holds), all with one build of ours. A fleet that fails does not stop the
 * others; the run fails when one did.
 */
function runAll(o) {
  const built = o.artifacts === null;
  const artifacts = o.artifacts ?? dirname(buildOurs());
  const args = [
    ...(o.quick ? ["--quick"] : []),
    "--rest-seconds",
    String(o.restSeconds),
    ...(o.write ? [] : ["--no-write"]),
    ...(o.keep ? ["--keep"] : []),
    ...o.oursFlags.flatMap((f) => ["--ours-flag", f]),
    "--artifacts",
    artifacts,
  ];
  const failed = [];
  for (const [peer, f] of ALL) {
    const name = fleetName(peer, f);
    log(`=== ${name}`);
    const r = spawnSync(
      process.execPath,
      [
        "--import",
        "tsx",
        fileURLToPath(import.meta.url),
        ...args,
        "--peer",
        peer,
        ...(f ? ["--fleet", f] : []),
      ],
      {
        stdio: "inherit",
        cwd: root,
        env: {
          ...process.env,
          BENCH_PEERS_LOCKED: "1",
          ...(built ? { BENCH_PEERS_OURS_BUILT: "1" } : {}),
        },
      },
    );
    if (r.status !== 0) failed.push(name);
  }
  if (failed.length > 0) throw new Error(`failed: ${failed.join(", ")} (see above)`);
  log(`every peer's fleet ran: ${ALL.map(([p, f]) => fleetName(p, f)).join(", ")}`);
}

/** The table of `name` again, from its results. */
function renderOnly(name) {
  writeReadme(JSON.parse(readFileSync(resultsFile(name), "utf8")));
  log(`wrote the table in bench/README.md from bench/peers/results/${name}.json`);
}

if (isMain) {
  let o;
  try {
    o = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`bench:peers: ${e.message}`);
    process.exit(2);
  }
  // The whole run holds the e2e lock: run again under flock (it waits for the lock, never breaks
  // it).
  if (process.env.BENCH_PEERS_LOCKED !== "1" && !o.renderOnly) {
    const r = spawnSync(
      "flock",
      [
        LOCK,
        process.execPath,
        "--import",
        "tsx",
        fileURLToPath(import.meta.url),
        ...process.argv.slice(2),
      ],
      { stdio: "inherit", env: { ...process.env, BENCH_PEERS_LOCKED: "1" }, cwd: root },
    );
    process.exit(r.status ?? 1);
  }
  work = mkdtempSync(join(tmpdir(), "hma-peers-"));
  try {
    if (o.peer === "all") {
      if (o.renderOnly) {
        for (const [p, f] of ALL) {
          const name = fleetName(p, f);
          if (existsSync(resultsFile(name))) renderOnly(name);
        }
      } else runAll(o);
    } else {
      configure(o);
      if (o.renderOnly) renderOnly(resultsName);
      else await main();
    }
  } catch (e) {
    console.error(`bench:peers: ${e.stack ?? e}`);
    process.exitCode = 1;
  } finally {
    killAll();
    if (process.exitCode !== 1 && !o.keep) rmSync(work, { recursive: true, force: true });
    else console.error(`logs kept in ${work}`);
  }
}
