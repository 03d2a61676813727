/**
 * Issue 46, point 7 ("load held"): the adapter's HTTPS port, run as a child process by the
 * runtime this test runs on, keeps answering while clients without a certificate hold it busy:
 * 300 connections that trickle a request head and never finish it, and a client that streams a
 * body the adapter refuses. The child is started with a requestheader CA, so that on Bun the
 * server under test is http1_server.ts on node:tls (without a client CA Bun's node:https would
 * serve), and it authorizes through a fake SubjectAccessReview API.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, readlink, rm, writeFile } from "node:fs/promises";
import { type AddressInfo, createServer } from "node:net";
import { connect, type TLSSocket } from "node:tls";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { Buffer } from "node:buffer";
import { type FakeAuthApi, makeTestPki, startFakeAuthApi } from "../fakes/auth_api.ts";
import { writeFakeKubeconfig } from "../fakes/kubeconfig.ts";
import { prng } from "../support/prng.ts";

const root = new URL("../../", import.meta.url).pathname;

const TRICKLERS = 300;
const TRICKLE_HEAD = "GET /healthz HTTP/1.1\r\nHost: a\r\nX-Pad: ";
const REFUSED_LENGTH = 64 << 20;
const CHUNK = 16 << 10;
const REFUSED_PATH = "/apis/external.metrics.k8s.io/v1beta1/namespaces/x/y";
/** A liveness bound, not a performance target: an event loop blocked for seconds misses it. */
const DEADLINE_MS = 1_000;
const ROUNDS = 5;
const RSS_MARGIN_KIB = 48 << 10;

const METRIC_PATH =
  "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/scalingschedules.zalando.org/steady/steady";
/** Who the aggregator says is asking: the HPA controller. */
const HPA_USER = "system:serviceaccount:kube-system:horizontal-pod-autoscaler";

// A OneTime window from 2020 to 2100: the value is 42 whenever the test runs, with no backend.
const MANIFESTS = `apiVersion: zalando.org/v1
kind: ScalingSchedule
metadata: {name: steady, namespace: shop}
spec:
  schedules:
    - type: OneTime
      date: "2020-01-01T00:00:00Z"
      endDate: "2100-01-01T00:00:00Z"
      value: 42
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
  namespace: shop
  annotations:
    metric-config.object.steady.scaling-schedule/interval: 1s
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 10
  metrics:
    - type: Object
      object:
        describedObject: {apiVersion: zalando.org/v1, kind: ScalingSchedule, name: steady}
        metric: {name: steady}
        target: {type: Value, value: "10"}
`;

/** The entry point run by the runtime this test runs on, as `src/main.ts` is run in development. */
function mainCommand(): [string, string[]] {
  const g = globalThis as { Deno?: unknown; Bun?: unknown };
  if (g.Deno) return [process.execPath, ["run", "-A", "src/main.ts"]];
  if (g.Bun) return [process.execPath, ["src/main.ts"]];
  return [process.execPath, ["--import", "tsx", "src/main.ts"]];
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function mib(kib: number): string {
  return `${(kib / 1024).toFixed(1)} MiB`;
}

/** A port nobody listens on now (the child binds it a moment later). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function rssKiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (!m) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(m[1]);
}

/** The inode of the socket listening on 127.0.0.1:`port`, from /proc/net/tcp. */
async function listeningInode(port: number): Promise<string> {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  const table = await readFile("/proc/net/tcp", "utf8");
  for (const line of table.split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    // state 0A is LISTEN
    if (f[1] === local && f[3] === "0A") return f[9];
  }
  throw new Error(`no socket listens on 127.0.0.1:${port}`);
}

/** True when process `pid` holds the socket `inode` among its file descriptors. */
async function holdsSocket(pid: number, inode: string): Promise<boolean> {
  for (const fd of await readdir(`/proc/${pid}/fd`)) {
    try {
      if (await readlink(`/proc/${pid}/fd/${fd}`) === `socket:[${inode}]`) return true;
    } catch {
      // closed since readdir
    }
  }
  return false;
}

interface Head {
  status: number;
  headers: Record<string, string>;
  bodyStart: number;
}

function parseHead(data: Buffer): Head | null {
  const end = data.indexOf("\r\n\r\n");
  if (end < 0) return null;
  const lines = data.subarray(0, end).toString("latin1").split("\r\n");
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]);
  if (!m) throw new Error(`malformed status line "${lines[0]}"`);
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(m[1]), headers, bodyStart: end + 4 };
}

/** Every socket the test opened and has not closed yet: after() destroys what is left. */
const sockets = new Set<TLSSocket>();

function tlsConnect(port: number, cert?: { cert: string; key: string }): TLSSocket {
  const socket = connect({
    host: "127.0.0.1",
    port,
    rejectUnauthorized: false,
    ...(cert ? { cert: cert.cert, key: cert.key } : {}),
  });
  sockets.add(socket);
  socket.on("close", () => sockets.delete(socket));
  return socket;
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** From the connect to the answer's last byte. */
  ms: number;
}

/** Options of {@linkcode exchange}. */
interface ExchangeOptions {
  path: string;
  headers?: [string, string][];
  /** Client certificate to present; none by default. */
  cert?: { cert: string; key: string };
  /** Fail when the whole answer has not come this long after the connect began. */
  deadlineMs: number;
}

/** One GET on a new TLS connection. */
function exchange(port: number, options: ExchangeOptions): Promise<Answer> {
  const started = performance.now();
  const lines = (options.headers ?? []).map(([name, value]) => `${name}: ${value}\r\n`).join("");
  const head =
    `GET ${options.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${lines}Connection: close\r\n\r\n`;
  return new Promise((resolve, reject) => {
    const socket = tlsConnect(port, options.cert);
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (error: Error | null, answer?: Answer): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve(answer!);
    };
    const timer = setTimeout(
      () => finish(new Error(`no answer to GET ${options.path} within ${options.deadlineMs} ms`)),
      options.deadlineMs,
    );
    const parse = (closed: boolean): void => {
      const data = Buffer.concat(chunks);
      const h = parseHead(data);
      if (h === null) {
        if (closed) finish(new Error(`connection closed before an answer to GET ${options.path}`));
        return;
      }
      const body = data.subarray(h.bodyStart);
      const length = h.headers["content-length"];
      if (length !== undefined ? body.length >= Number(length) : closed) {
        finish(null, {
          status: h.status,
          headers: h.headers,
          body: body.toString("utf8"),
          ms: performance.now() - started,
        });
      }
    };
    socket.on("secureConnect", () => socket.write(head, "latin1"));
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      parse(false);
    });
    socket.on("end", () => parse(true));
    socket.on("close", () => parse(true));
    socket.on("error", (e: Error) => finish(e));
  });
}

/** A connection that sends a request head a byte at a time and never finishes it. */
interface Trickler {
  socket: TLSSocket;
  nextAt: number;
  closed: boolean;
  /** Bytes the adapter sent back (it should send none before the head is whole). */
  received: number;
}

function openTrickler(port: number): Promise<Trickler> {
  return new Promise((resolve, reject) => {
    const t: Trickler = { socket: tlsConnect(port), nextAt: 0, closed: false, received: 0 };
    t.socket.once("secureConnect", () => {
      t.socket.write(TRICKLE_HEAD, "latin1");
      resolve(t);
    });
    t.socket.on("data", (chunk: Buffer) => t.received += chunk.length);
    // after the handshake an error only ends the trickle (counted through `closed`)
    t.socket.on("error", reject);
    t.socket.on("close", () => t.closed = true);
  });
}

/** What one client streaming a refused body saw. */
interface RefusedBody {
  /** The answer's status, 0 when none came. */
  status: number;
  connection: string | undefined;
  /** Body bytes whose write had completed when the answer came (-1: no answer). */
  writtenAtAnswer: number;
  /** Body bytes whose write completed before the connection closed. */
  written: number;
  answerMs: number;
  closedMs: number;
  /** How the connection ended: "end" (the adapter's FIN) and the write errors' codes. */
  endings: string[];
}

/**
 * POST with a 64 MiB Content-Length, then 16 KiB chunks as fast as the socket takes them,
 * whatever comes back, until the connection closes or the whole body is sent.
 */
function streamRefusedBody(port: number): Promise<RefusedBody> {
  const started = performance.now();
  const head = `POST ${REFUSED_PATH} HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${REFUSED_LENGTH}\r\n\r\n`;
  const chunk = Buffer.alloc(CHUNK, 0x61);
  return new Promise((resolve) => {
    const socket = tlsConnect(port);
    const got: Buffer[] = [];
    const result: RefusedBody = {
      status: 0,
      connection: undefined,
      writtenAtAnswer: -1,
      written: 0,
      answerMs: -1,
      closedMs: -1,
      endings: [],
    };
    let queued = 0;
    const pump = (): void => {
      while (!socket.destroyed && queued < REFUSED_LENGTH) {
        queued += CHUNK;
        const more = socket.write(chunk, (err) => {
          if (!err) result.written += CHUNK;
        });
        if (!more) {
          socket.once("drain", pump);
          return;
        }
      }
      if (!socket.destroyed) socket.end();
    };
    socket.on("secureConnect", () => {
      socket.write(head, "latin1");
      pump();
    });
    socket.on("data", (data: Buffer) => {
      got.push(data);
      if (result.writtenAtAnswer >= 0) return;
      const h = parseHead(Buffer.concat(got));
      if (h === null) return;
      result.status = h.status;
      result.connection = h.headers["connection"];
      result.writtenAtAnswer = result.written;
      result.answerMs = performance.now() - started;
    });
    socket.on("end", () => result.endings.push("end"));
    socket.on("error", (e: Error & { code?: string }) => result.endings.push(e.code ?? e.message));
    // a connection the adapter never closes ends the client here, and fails its assertion
    const timer = setTimeout(() => {
      result.endings.push("not closed in 10 s");
      socket.destroy();
    }, 10_000);
    socket.on("close", () => {
      clearTimeout(timer);
      result.closedMs = performance.now() - started;
      resolve(result);
    });
  });
}

let dir = "";
let authz: FakeAuthApi | undefined;
let authzConfig: { path: string; remove(): Promise<void> } | undefined;
let child: ChildProcess | undefined;
let childExit: Promise<void> = Promise.resolve();
let childOutput = "";
let port = 0;
let restKiB = 0;
const timers = new Set<ReturnType<typeof setInterval>>();

/** What the load saw, for the assertions after it. */
interface LoadResult {
  /** Time to open the trickling connections. */
  establishedMs: number;
  tricklers: Trickler[];
  /** Per round: the answer times (ms) and the trickling connections open at its start. */
  rounds: { healthz: number; read: number; open: number }[];
  /** The refused-body client of each round. */
  refused: RefusedBody[];
  /** The adapter's RSS every 200 ms from the first trickling connection to the last round. */
  rssKiB: number[];
}

let load: LoadResult | null = null;

/** The child's last output, for failure messages. */
function outputTail(): string {
  return childOutput.slice(-4_000);
}

async function waitReady(): Promise<void> {
  const end = Date.now() + 20_000;
  for (;;) {
    if (child?.exitCode !== null || child?.signalCode !== null) {
      throw new Error(`the adapter exited before it was ready:\n${outputTail()}`);
    }
    try {
      const r = await exchange(port, { path: "/readyz", deadlineMs: DEADLINE_MS });
      if (r.status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > end) throw new Error(`the adapter was not ready in 20 s:\n${outputTail()}`);
    await sleep(100);
  }
}

const pki = makeTestPki();
const frontProxy = { cert: pki.frontProxy.cert, key: pki.frontProxy.key };
const aggregatorHeaders: [string, string][] = [
  ["X-Remote-User", HPA_USER],
  ["X-Remote-Group", "system:serviceaccounts"],
  ["X-Remote-Group", "system:authenticated"],
  ["Accept", "application/json"],
];

function metricRead(): Promise<Answer> {
  return exchange(port, {
    path: METRIC_PATH,
    headers: aggregatorHeaders,
    cert: frontProxy,
    deadlineMs: DEADLINE_MS,
  });
}

function healthz(): Promise<Answer> {
  return exchange(port, { path: "/healthz", deadlineMs: DEADLINE_MS });
}

/** Asserts the ScalingSchedule's value, 42, as the metrics API lists it. */
function assertValue(answer: Answer, context: string): void {
  assert.equal(answer.status, 200, `${context}: ${answer.body}`);
  const list = JSON.parse(answer.body);
  assert.match(list.items?.[0]?.timestamp ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/, context);
  assert.deepEqual(list, {
    kind: "MetricValueList",
    apiVersion: "custom.metrics.k8s.io/v1beta2",
    metadata: {},
    items: [{
      describedObject: {
        kind: "ScalingSchedule",
        namespace: "shop",
        name: "steady",
        apiVersion: "zalando.org/v1",
      },
      metric: { name: "steady" },
      timestamp: list.items[0].timestamp,
      value: "42",
    }],
  }, context);
}

function assertHealthy(answer: Answer, context: string): void {
  assert.deepEqual([answer.status, answer.body], [200, "ok"], context);
}

describe("the adapter's HTTPS port under load from clients without a certificate", () => {
  before(async () => {
    const started = performance.now();
    dir = await mkdtemp(join(tmpdir(), "https-load-"));
    await writeFile(join(dir, "manifests.yaml"), MANIFESTS);
    await writeFile(join(dir, "front-proxy-ca.crt"), pki.requestHeaderCa.cert);
    authz = await startFakeAuthApi();
    authz.decide = (spec) => ({
      allowed: spec.user === HPA_USER && spec.resourceAttributes?.verb === "get" &&
        spec.resourceAttributes?.group === "custom.metrics.k8s.io",
    });
    authzConfig = await writeFakeKubeconfig(authz.url);
    port = await freePort();
    const [cmd, prefix] = mainCommand();
    child = spawn(cmd, [
      ...prefix,
      "serve",
      "--manifests",
      join(dir, "manifests.yaml"),
      "--scaling-schedule",
      "--bind-address",
      "127.0.0.1",
      "--secure-port",
      String(port),
      "--metrics-address",
      "127.0.0.1:0",
      "--cert-dir",
      join(dir, "certs"),
      "--requestheader-client-ca-file",
      join(dir, "front-proxy-ca.crt"),
      "--requestheader-allowed-names",
      "front-proxy-client",
      "--authorization-kubeconfig",
      authzConfig.path,
    ], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    const spawned = child;
    childExit = new Promise((resolve) => spawned.once("exit", () => resolve()));
    // both pipes are read: a full pipe would stall the adapter's logging, and so the adapter
    const keep = (d: Buffer): void => {
      childOutput = (childOutput + d.toString("utf8")).slice(-16_000);
    };
    spawned.stdout!.on("data", keep);
    spawned.stderr!.on("data", keep);
    await waitReady();
    console.log(`# https load: adapter ready ${(performance.now() - started).toFixed(0)} ms`);
  });

  after(async () => {
    const started = performance.now();
    for (const t of timers) clearInterval(t);
    for (const s of sockets) s.destroy();
    sockets.clear();
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const exited = await Promise.race([
        childExit.then(() => true),
        sleep(5_000).then(() => false),
      ]);
      if (!exited) {
        child.kill("SIGKILL");
        await childExit;
      }
    }
    await authz?.close();
    await authzConfig?.remove();
    if (dir) await rm(dir, { recursive: true, force: true });
    console.log(`# https load: stopped in ${(performance.now() - started).toFixed(0)} ms`);
  });

  it("serves the schedule's value to the front proxy, from the process it spawned", async () => {
    const pid = child!.pid!;
    // RSS is read from this PID: it must be the process that serves, not a launcher
    const inode = await listeningInode(port);
    assert.equal(await holdsSocket(pid, inode), true, `pid ${pid} does not hold 127.0.0.1:${port}`);
    const cmdline = (await readFile(`/proc/${pid}/cmdline`, "utf8")).split("\0");
    assert.ok(cmdline.includes("src/main.ts") && cmdline.includes("serve"), cmdline.join(" "));
    // the reads' code compiled and their buffers allocated before the rest RSS
    for (let i = 0; i < 10; i++) assertValue(await metricRead(), `warm-up read ${i}`);
    for (let i = 0; i < 3; i++) assertHealthy(await healthz(), `warm-up healthz ${i}`);
    assert.equal(authz!.sars[0]?.user, HPA_USER);
    assert.deepEqual(authz!.sars[0]?.resourceAttributes, {
      namespace: "shop",
      verb: "get",
      group: "custom.metrics.k8s.io",
      version: "v1beta2",
      resource: "scalingschedules.zalando.org",
      subresource: "steady",
      name: "steady",
    });
    const samples: number[] = [];
    for (let i = 0; i < 5; i++) {
      samples.push(await rssKiB(pid));
      await sleep(500);
    }
    restKiB = median(samples);
    console.log(`# https load: rest RSS ${mib(restKiB)} (${samples.map(mib).join(", ")})`);
  });

  it("answers /healthz and a metric read on new connections within 1 s while 300 connections trickle a request head and a client streams a refused body", async () => {
    assert.notEqual(restKiB, 0, "the rest RSS was not measured");
    const pid = child!.pid!;
    const started = performance.now();
    const result: LoadResult = {
      establishedMs: 0,
      tricklers: [],
      rounds: [],
      refused: [],
      rssKiB: [],
    };
    load = result;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        result.rssKiB.push(await rssKiB(pid));
        await sleep(200);
      }
    })();
    try {
      for (let i = 0; i < TRICKLERS; i += 50) {
        result.tricklers.push(
          ...await Promise.all(
            Array.from({ length: Math.min(50, TRICKLERS - i) }, () => openTrickler(port)),
          ),
        );
      }
      result.establishedMs = performance.now() - started;
      const random = prng(46);
      const trickle = setInterval(() => {
        const now = performance.now();
        for (const t of result.tricklers) {
          if (t.closed || now < t.nextAt) continue;
          t.socket.write("a");
          t.nextAt = now + 200 + random() * 300;
        }
      }, 50);
      timers.add(trickle);
      for (let round = 0; round < ROUNDS; round++) {
        const open = result.tricklers.filter((t) => !t.closed).length;
        assert.equal(open, TRICKLERS, `trickling connections closed before round ${round}`);
        // a refused body streams while the checks run
        const [h, r, b] = await Promise.all([healthz(), metricRead(), streamRefusedBody(port)]);
        result.refused.push(b);
        assertHealthy(h, `healthz in round ${round}`);
        assertValue(r, `metric read in round ${round}`);
        result.rounds.push({ healthz: h.ms, read: r.ms, open });
        await sleep(600);
      }
    } finally {
      sampling = false;
      await sampler.catch(() => {});
      report(result);
    }
  });

  it("answers each refused body with 413 and Connection: close within 1 s", () => {
    assert.equal(load?.refused.length, ROUNDS, "the load did not run");
    for (const [i, b] of load!.refused.entries()) {
      const seen = `refused body ${i}: ${JSON.stringify(b)}`;
      assert.deepEqual([b.status, b.connection], [413, "close"], seen);
      assert.ok(b.answerMs < DEADLINE_MS, seen);
      assert.ok(!b.endings.includes("not closed in 10 s"), seen);
    }
  });

  it("keeps the RSS within 48 MiB of its rest median under that load", () => {
    assert.ok((load?.rssKiB.length ?? 0) >= 5, "the load's RSS was not sampled");
    const peak = Math.max(...load!.rssKiB);
    assert.ok(
      peak - restKiB <= RSS_MARGIN_KIB,
      `RSS peak ${mib(peak)} is ${mib(peak - restKiB)} over the rest median ${mib(restKiB)}`,
    );
  });
});

/** The load's numbers, printed whether its assertions held or not. */
function report(result: LoadResult): void {
  const peak = Math.max(...result.rssKiB);
  const lines = [
    `${result.tricklers.length} trickling connections in ${result.establishedMs.toFixed(0)} ms, ` +
    `${result.tricklers.filter((t) => !t.closed).length} open after the rounds, ` +
    `${result.tricklers.reduce((n, t) => n + t.received, 0)} bytes sent to them`,
    `answer ms (healthz/read): ${
      result.rounds.map((r) => `${r.healthz.toFixed(0)}/${r.read.toFixed(0)}`).join(" ")
    }`,
    `RSS rest ${mib(restKiB)}, peak ${mib(peak)} (+${mib(peak - restKiB)}, ` +
    `${result.rssKiB.length} samples)`,
    ...result.refused.map((b, i) =>
      `refused body ${i}: ${b.status || "no answer"} ` +
      `connection ${b.connection ?? "-"} after ${b.answerMs.toFixed(0)} ms, ` +
      `${b.writtenAtAnswer} bytes written by then, ${b.written} before the close ` +
      `(${b.closedMs.toFixed(0)} ms, ${b.endings.join("+")})`
    ),
  ];
  for (const line of lines) console.log(`# https load: ${line}`);
}
