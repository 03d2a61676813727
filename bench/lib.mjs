// Helpers of the benchmark: child processes (every one is stopped by its PID), loopback HTTPS
// requests, /proc readings, wrk.
import { spawn, spawnSync } from "node:child_process";
import { closeSync, openSync, readFileSync, readSync, statSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { createServer } from "node:net";
import { cpus, release, totalmem } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** Every child still running, by PID (stopped on exit, whatever happens). */
const children = new Map();

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Like sleep, but does not keep the process alive. */
const sleepUnref = (ms) => new Promise((r) => setTimeout(r, ms).unref());

/** A free TCP port on 127.0.0.1. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * Start a child process with stdout piped (lines handed to `onLine`) and stderr to `logFile`.
 * Returns { pid, proc, exited, stop() }; stop sends SIGTERM, then SIGKILL after 3 s.
 */
export function startProcess(cmd, args, { logFile, onLine, env, cwd } = {}) {
  const err = logFile ? openSync(logFile, "a") : "ignore";
  const proc = spawn(cmd, args, {
    stdio: ["ignore", "pipe", err],
    env: { ...process.env, ...env },
    cwd,
  });
  if (typeof err === "number") closeSync(err);
  const startedAt = performance.now();
  const exited = new Promise((resolve) => proc.once("exit", (code, sig) => resolve({ code, sig })));
  children.set(proc.pid, proc);
  exited.then(() => children.delete(proc.pid));
  let buf = "";
  proc.stdout.setEncoding("utf8");
  proc.stdout.on("data", (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      onLine?.(line);
    }
  });
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    proc.kill("SIGTERM");
    const t = setTimeout(() => proc.kill("SIGKILL"), 3000);
    await exited;
    clearTimeout(t);
  };
  return { pid: proc.pid, proc, exited, stop, startedAt };
}

/** Kill what is still running (exit path); by PID only. */
export function killAll() {
  for (const p of children.values()) {
    try {
      p.kill("SIGKILL");
    } catch { /* gone */ }
  }
}

/** Start a child that prints one JSON line `{"ready":true,...}`; resolves with that object. */
export async function startReadyLine(cmd, args, { logFile, timeoutMs = 60000, env } = {}) {
  let resolveLine;
  const line = new Promise((r) => (resolveLine = r));
  const child = startProcess(cmd, args, {
    logFile,
    env,
    onLine: (l) => {
      if (l.startsWith("{")) resolveLine(JSON.parse(l));
    },
  });
  const timeout = sleepUnref(timeoutMs).then(() => ({ timeout: true }));
  const r = await Promise.race([line, child.exited.then((e) => ({ exited: e })), timeout]);
  if (!r.ready) {
    await child.stop();
    throw new Error(`${cmd} ${args.join(" ").slice(0, 200)} did not start: ${JSON.stringify(r)}`);
  }
  return { ...child, info: r };
}

/** GET over HTTP(S) on loopback, no certificate check, a new connection each time. */
export function get(url, { timeoutMs = 10000, method = "GET", tls = null } = {}) {
  const fn = url.startsWith("https:") ? httpsRequest : httpRequest;
  // tls: { cert, key, headers } of a client certificate (PEM text) and the headers to send
  const extra = tls ? { cert: tls.cert, key: tls.key, headers: tls.headers } : {};
  return new Promise((resolve, reject) => {
    const req = fn(url, { method, rejectUnauthorized: false, agent: false, ...extra }, (res) => {
      const chunks = [];
      res.on("data", (d) => chunks.push(d));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString("utf8"),
        }));
      res.on("error", reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end();
  });
}

/** Poll `url` until it answers 200; resolves with ms since `since` (performance.now()). */
export async function waitFor200(url, { since, timeoutMs = 60000, everyMs = 5, exited } = {}) {
  const end = performance.now() + timeoutMs;
  let gone = false;
  exited?.then(() => (gone = true));
  while (performance.now() < end && !gone) {
    try {
      const r = await get(url, { timeoutMs: 2000 });
      if (r.status === 200) return performance.now() - since;
    } catch { /* not listening yet */ }
    await sleep(everyMs);
  }
  throw new Error(`${url} not 200 ${gone ? "(process exited)" : `within ${timeoutMs} ms`}`);
}

const CLK_TCK = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout) || 100;

/**
 * RSS, peak RSS (MiB) and CPU seconds so far of a process; RSS also in its two parts: anonymous
 * (the process's own heap and stacks) and file-backed (the pages of its binary and libraries it
 * touched: clean, shared with every process that maps the same file, dropped under pressure).
 */
export function procStats(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? 0);
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // fields 14 and 15 (utime, stime) are at 11 and 12 after the command name
  const cpuSeconds = (Number(f[11]) + Number(f[12])) / CLK_TCK;
  return {
    rssMiB: kb("VmRSS") / 1024,
    hwmMiB: kb("VmHWM") / 1024,
    anonMiB: kb("RssAnon") / 1024,
    fileMiB: (kb("RssFile") + kb("RssShmem")) / 1024,
    cpuSeconds,
  };
}

/** Whether taskset (util-linux) can pin processes here. */
export function haveTaskset() {
  return spawnSync("taskset", ["-p", String(process.pid)], { encoding: "utf8" }).status === 0;
}

/** Pin every thread of process `pid` (and the threads it starts later) to `cpus` ("0"). */
export function pin(pid, cpus) {
  const r = spawnSync("taskset", ["-a", "-p", "-c", cpus, String(pid)], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`taskset -a -p -c ${cpus} ${pid}: ${r.stderr.trim()}`);
}

/** Whether wrk is installed. */
export function haveWrk() {
  return spawnSync("wrk", ["--version"], { encoding: "utf8" }).error === undefined;
}

/** Run wrk against `url`; resolves with its numbers (latencies in ms). */
export function wrk(url, { seconds, connections, script, cpus = null, delayMs = null }) {
  return runGenerator("wrk", [
    "-t1",
    `-c${connections}`,
    `-d${seconds}s`,
    "--timeout",
    "5s",
    "-s",
    script,
    url,
  ], {
    cpus,
    env: delayMs === null ? process.env : { ...process.env, WRK_DELAY_MS: String(delayMs) },
  });
}

/**
 * Run a load generator (on `cpus` with taskset when given: off the server's core) and resolve
 * with the numbers of its BENCHJSON line.
 */
function runGenerator(bin, args, { cpus = null, env = process.env } = {}) {
  return new Promise((resolve, reject) => {
    const [cmd, pre] = cpus === null ? [bin, []] : ["taskset", ["-c", cpus, bin]];
    const p = spawn(cmd, [...pre, ...args], { stdio: ["ignore", "pipe", "pipe"], env });
    children.set(p.pid, p);
    let out = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (out += d));
    p.on("exit", (code) => {
      children.delete(p.pid);
      const r = benchJson(out);
      if (code !== 0 || !r) {
        return reject(new Error(`${bin} exited ${code}: ${out.slice(-500)}`));
      }
      resolve(r);
    });
  });
}

/** The numbers of the `BENCHJSON {...}` line that wrk_report.lua and loadgen print. */
function benchJson(out) {
  const line = out.split("\n").find((l) => l.startsWith("BENCHJSON "));
  if (!line) return null;
  const r = JSON.parse(line.slice("BENCHJSON ".length));
  return {
    rps: r.requests / (r.durationUs / 1e6),
    p50Ms: r.p50Us / 1000,
    p90Ms: r.p90Us / 1000,
    p99Ms: r.p99Us / 1000,
    maxMs: r.maxUs / 1000,
    requests: r.requests,
    errors: r.errConnect + r.errRead + r.errWrite + r.errStatus + r.errTimeout,
    statusErrors: r.errStatus,
    ...(r.passes === undefined ? {} : { passes: r.passes, statuses: r.statuses }),
  };
}

/**
 * Build bench/loadgen (Go, standard library only) into `dir`; returns the binary's path.
 * Throws, naming what is missing, when Go is not installed.
 */
export function buildLoadgen(dir) {
  const out = join(dir, "hma-loadgen");
  const r = spawnSync("go", ["build", "-o", out, "."], {
    cwd: join(dirname(fileURLToPath(import.meta.url)), "loadgen"),
    encoding: "utf8",
    env: { ...process.env, GOTOOLCHAIN: "local", GOFLAGS: "-mod=mod" },
  });
  if (r.error) {
    throw new Error(
      `go is not installed (the client-certificate rows build bench/loadgen): ${r.error.message}`,
    );
  }
  if (r.status !== 0) throw new Error(`go build bench/loadgen: ${r.stderr.trim()}`);
  return out;
}

/**
 * Run bench/loadgen against `url` with a client certificate (files) and extra headers:
 * what wrk does, for the TLS path wrk cannot take. Resolves with wrk's numbers.
 */
export function loadgen(bin, url, { seconds, connections, cpus = null, delayMs = null, tls }) {
  return runGenerator(bin, [
    "run",
    "-url",
    url,
    "-c",
    String(connections),
    "-d",
    `${seconds}s`,
    "-cert",
    tls.certFile,
    "-key",
    tls.keyFile,
    ...Object.entries(tls.headers).flatMap(([k, v]) => ["-H", `${k}: ${v}`]),
    ...(delayMs === null ? [] : ["-delay", `${delayMs}ms`]),
  ], { cpus });
}

/**
 * Run bench/loadgen over the request URIs of `pathsFile` (one a line, in turn) on the host of
 * `url`, `rate` requests a second between `connections` connections, with a client
 * certificate and `headers` ([name, value] pairs; a name may repeat). Resolves with wrk's
 * numbers plus `passes` (whole lists read) and `statuses` (answers by status code).
 */
export function loadgenPaths(
  bin,
  url,
  { pathsFile, rate, seconds, connections, certFile, keyFile, headers },
) {
  return runGenerator(bin, [
    "run",
    "-url",
    url,
    "-paths",
    pathsFile,
    "-rate",
    String(rate),
    "-c",
    String(connections),
    "-d",
    `${seconds}s`,
    "-cert",
    certFile,
    "-key",
    keyFile,
    ...headers.flatMap(([k, v]) => ["-H", `${k}: ${v}`]),
  ], {});
}

/** Median of numbers. */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** Map with at most `limit` calls in flight. */
export async function mapLimit(items, limit, fn) {
  const out = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

const QUANTITY_EXPONENT = { n: -9, u: -6, m: -3, "": 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };

/**
 * A DecimalSI quantity as the adapter serves it ("1234m", "56", "1200k") in whole milli-units,
 * exactly (a BigInt); null when it is not one or is finer than a milli.
 */
export function quantityMilli(q) {
  const m = /^(-?)(\d+)(?:\.(\d+))?([numkMGTPE]?)$/.exec(String(q));
  if (!m) return null;
  const frac = m[3] ?? "";
  let n = BigInt(m[2] + frac);
  const e = QUANTITY_EXPONENT[m[4]] + 3 - frac.length;
  if (e >= 0) n *= 10n ** BigInt(e);
  else {
    const d = 10n ** BigInt(-e);
    if (n % d !== 0n) return null;
    n /= d;
  }
  return m[1] === "-" ? -n : n;
}

/** The HPA controller's user (tests/e2e/harness.ts HPA_CONTROLLER_USER), whose metric reads
 * the audit log also holds. */
export const HPA_CONTROLLER_USER = "system:serviceaccount:kube-system:horizontal-pod-autoscaler";

/**
 * The adapter's requests to kube-apiserver that the audit log (harness, HPA_E2E_AUDIT_LOG=1)
 * shows received in [fromMs, toMs): how many, and how many by "verb resource[/subresource]".
 * `{ hpaController: true }`: the HPA controller's reads of the metrics APIs instead, with how
 * many were answered (`answered`: status 200).
 */
export function auditCounts(file, fromMs, toMs, { hpaController = false } = {}) {
  const seen = new Set();
  const byVerbResource = {};
  let answered = 0;
  for (const e of auditEvents(readFileSync(file, "utf8").split("\n"))) {
    if ((e.user?.username === HPA_CONTROLLER_USER) !== hpaController) continue;
    if (seen.has(e.auditID)) continue; // a watch has two stages
    const t = Date.parse(e.requestReceivedTimestamp);
    if (!(t >= fromMs && t < toMs)) continue;
    seen.add(e.auditID);
    if (e.responseStatus?.code === 200) answered++;
    const what = auditRequestName(e);
    byVerbResource[what] = (byVerbResource[what] ?? 0) + 1;
  }
  const sorted = Object.fromEntries(Object.entries(byVerbResource).sort((a, b) => b[1] - a[1]));
  return { total: seen.size, answered, byVerbResource: sorted };
}

/**
 * A reader of the audit log from byte `offset` on: each call returns the request times (ms) of
 * the adapter's requests so far whose {@link auditRequestName} is `what`, reading only what was
 * added since the last call (a session's part of a log that holds every session's requests).
 */
export function auditTail(file, offset, what) {
  let rest = "";
  const seen = new Set();
  const times = [];
  return () => {
    const size = statSync(file).size;
    if (size <= offset) return times;
    const fd = openSync(file, "r");
    const buf = Buffer.alloc(size - offset);
    try {
      readSync(fd, buf, 0, buf.length, offset);
    } finally {
      closeSync(fd);
    }
    offset = size;
    const lines = (rest + buf.toString("utf8")).split("\n");
    rest = lines.pop() ?? "";
    for (const e of auditEvents(lines)) {
      if (e.user?.username === HPA_CONTROLLER_USER || seen.has(e.auditID)) continue;
      if (auditRequestName(e) !== what) continue;
      seen.add(e.auditID);
      times.push(Date.parse(e.requestReceivedTimestamp));
    }
    return times;
  };
}

/** The audit events of `lines` (JSON lines; a line cut short or empty is left out). */
function* auditEvents(lines) {
  for (const line of lines) {
    if (!line) continue;
    try {
      yield JSON.parse(line);
    } catch {
      // a line being written
    }
  }
}

/** A request's name in the counts: "verb resource[/subresource]", else "verb path". */
function auditRequestName(e) {
  const o = e.objectRef;
  return o?.resource
    ? `${e.verb} ${o.resource}${o.subresource ? `/${o.subresource}` : ""}`
    : `${e.verb} ${String(e.requestURI).split("?")[0]}`;
}

/** Counts of a window scaled to a minute, rounded to 0.1. */
export const perMinute = (counts, seconds) =>
  Object.fromEntries(
    Object.entries(counts).map(([k, v]) => [k, Math.round((v * 600) / seconds) / 10]),
  );

/**
 * What a results file says of where it ran: the machine (cpu, cores, memory, kernel, the load
 * averages `load`) and the commit, `+dirty` when src/ has changes.
 */
export function machineAndCommit(root, load) {
  const git = (args) => spawnSync("git", args, { cwd: root, encoding: "utf8" }).stdout.trim();
  const commit = git(["rev-parse", "--short", "HEAD"]);
  const dirty = git(["status", "--porcelain", "--", "src"]) !== "";
  return {
    machine: {
      cpu: cpus()[0]?.model ?? "unknown",
      cores: cpus().length,
      memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
      kernel: release(),
      load1: load.map((x) => Math.round(x * 100) / 100),
    },
    commit: `${commit}${dirty ? "+dirty" : ""}`,
  };
}
