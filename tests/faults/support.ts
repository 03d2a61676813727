/**
 * Test support for the fault suites: start the adapter (`serve --manifests DIR`) as a child
 * process of the runtime the tests run on, wait for it to be ready, read its metrics APIs over
 * HTTPS, read its RSS, and stop it by PID. Loopback only.
 *
 * @example
 * ```ts
 * const dir = await makeTempDir("faults-");
 * await writeManifests(join(dir, "hpas"), [externalHpa({ ... })]);
 * const adapter = await startAdapterProcess({ manifests: join(dir, "hpas"), certDir: dir });
 * try {
 *   const r = await getExternalMetric(adapter, "shop", "queue-length");
 *   r.status; // 200 or 404
 * } finally {
 *   await adapter.stop();
 * }
 * ```
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { request as httpsRequest } from "node:https";
import { createServer, request as httpRequest } from "node:http";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

/** The repository's root folder (absolute, with a trailing slash). */
export const REPO_ROOT: string = fileURLToPath(new URL("../../", import.meta.url));

/** A JavaScript runtime the adapter runs on. */
export type Runtime = "node" | "deno" | "bun";

/** The runtime these tests run on (from `globalThis.Deno` / `globalThis.Bun`). */
export function currentRuntime(): Runtime {
  const g = globalThis as { Deno?: unknown; Bun?: unknown };
  if (g.Bun !== undefined) return "bun";
  if (g.Deno !== undefined) return "deno";
  return "node";
}

/**
 * The command and arguments that run `src/main.ts` on `runtime`: `node --import tsx`,
 * `deno run -A`, `bun` (the runtimes from node_modules/.bin; node is the one running us when we
 * are on node, else the first on PATH).
 */
export function adapterCommand(runtime: Runtime = currentRuntime()): [string, string[]] {
  const main = join(REPO_ROOT, "src", "main.ts");
  switch (runtime) {
    case "deno":
      return [join(REPO_ROOT, "node_modules", ".bin", "deno"), ["run", "-A", main]];
    case "bun":
      return [join(REPO_ROOT, "node_modules", ".bin", "bun"), [main]];
    default:
      return [
        currentRuntime() === "node" ? process.execPath : "node",
        ["--import", "tsx", main],
      ];
  }
}

/** A fresh folder under the system's temporary folder. */
export function makeTempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

/**
 * Write Kubernetes objects as one multi-document YAML file (each document is JSON, which is
 * YAML) at `dir/name`, creating `dir`. Returns the file's path.
 */
export async function writeManifests(
  dir: string,
  objects: readonly unknown[],
  name = "manifests.yaml",
): Promise<string> {
  await mkdir(dir, { recursive: true });
  const path = join(dir, name);
  await writeFile(path, objects.map((o) => `---\n${JSON.stringify(o, null, 2)}\n`).join(""));
  return path;
}

/** One External metric of {@linkcode externalHpa}. */
export interface ExternalMetricSpec {
  /** The metric's name (served at `/apis/external.metrics.k8s.io/v1beta1/namespaces/NS/NAME`). */
  name: string;
  /** The selector's matchLabels (e.g. `{ type: "json-path" }`). */
  matchLabels?: Record<string, string>;
  /** Collector type of the annotations (`json-path`, `prometheus`, ...). */
  collector?: string;
  /** Config keys, written as `metric-config.external.<name>.<collector>/<key>` annotations. */
  config?: Record<string, string>;
  /** Target value (a quantity string); "1" when absent. */
  targetValue?: string;
}

/** A loopback JSON endpoint (see {@linkcode startQueueEndpoint}). */
export interface QueueEndpoint {
  /** `http://127.0.0.1:PORT`. */
  url: string;
  /** Closes its connections and stops it. */
  stop(): Promise<void>;
}

/**
 * A loopback endpoint that answers `/queue` with `{"queue": {"depth": 6.5}}` and every other
 * path with 500 `{"error":"boom"}`: a collected metric and a failing one.
 */
export async function startQueueEndpoint(): Promise<QueueEndpoint> {
  const server = createServer((req, res) => {
    if (req.url === "/queue") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ queue: { depth: 6.5 } }));
    } else {
      res.writeHead(500, { "content-type": "application/json" });
      res.end('{"error":"boom"}');
    }
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/**
 * An HPA with one Object metric on the ScalingSchedule `schedule` (target averageValue 10), with
 * `status` when given.
 */
export function scheduleHpa(
  namespace: string,
  name: string,
  schedule: string,
  status?: { currentReplicas: number; desiredReplicas: number },
): Record<string, unknown> {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name, namespace },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name },
      minReplicas: 1,
      maxReplicas: 10,
      metrics: [{
        type: "Object",
        object: {
          describedObject: {
            apiVersion: "zalando.org/v1",
            kind: "ScalingSchedule",
            name: schedule,
          },
          metric: { name: schedule },
          target: { type: "AverageValue", averageValue: "10" },
        },
      }],
    },
    ...(status ? { status } : {}),
  };
}

/** A ScalingSchedule at 50 every day from `startTime` (UTC, HH:MM) for an hour, 10-minute ramps. */
export function dailySchedule(
  namespace: string,
  name: string,
  startTime: string,
): Record<string, unknown> {
  return {
    apiVersion: "zalando.org/v1",
    kind: "ScalingSchedule",
    metadata: { name, namespace },
    spec: {
      scalingWindowDurationMinutes: 10,
      schedules: [{
        type: "Repeating",
        period: {
          days: ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"],
          startTime,
          timezone: "UTC",
        },
        durationMinutes: 60,
        value: 50,
      }],
    },
  };
}

/** Options of {@linkcode externalHpa}. */
export interface ExternalHpaOptions {
  namespace: string;
  name: string;
  metrics: readonly ExternalMetricSpec[];
  /** Extra annotations, written as given. */
  annotations?: Record<string, string>;
}

/**
 * An autoscaling/v2 HPA (scale target Deployment `<name>`) whose External metrics are
 * configured by `metric-config.external.*` annotations and selector labels.
 */
export function externalHpa(options: ExternalHpaOptions): Record<string, unknown> {
  const annotations: Record<string, string> = { ...options.annotations };
  for (const m of options.metrics) {
    for (const [k, v] of Object.entries(m.config ?? {})) {
      annotations[`metric-config.external.${m.name}.${m.collector ?? "json-path"}/${k}`] = v;
    }
  }
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name: options.name, namespace: options.namespace, annotations },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: options.name },
      minReplicas: 1,
      maxReplicas: 10,
      metrics: options.metrics.map((m) => ({
        type: "External",
        external: {
          metric: {
            name: m.name,
            ...(m.matchLabels ? { selector: { matchLabels: m.matchLabels } } : {}),
          },
          target: { type: "Value", value: m.targetValue ?? "1" },
        },
      })),
    },
  };
}

/** An HTTP answer read in full. */
export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** Options of {@linkcode httpGet}. */
export interface HttpGetOptions {
  /** Request headers (e.g. `Authorization`). */
  headers?: Record<string, string>;
  /** Give up after this long, ms (default 10,000). */
  timeoutMs?: number;
}

/**
 * GET `url` (http or https) on loopback: no certificate check (the adapter's certificate is
 * self-signed), a new connection each time. Rejects on a network error or the timeout.
 */
export function httpGet(url: string, options: HttpGetOptions = {}): Promise<HttpAnswer> {
  const fn = url.startsWith("https:") ? httpsRequest : httpRequest;
  const timeoutMs = options.timeoutMs ?? 10_000;
  return new Promise((resolve, reject) => {
    const req = fn(
      url,
      { rejectUnauthorized: false, agent: false, headers: options.headers ?? {} },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (d: Buffer) => chunks.push(d));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString("utf8"),
          }));
        res.on("error", reject);
      },
    );
    req.setTimeout(
      timeoutMs,
      () => req.destroy(new Error(`GET ${url}: no answer in ${timeoutMs} ms`)),
    );
    req.on("error", reject);
    req.end();
  });
}

/** Resolve after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Options of {@linkcode waitFor}. */
export interface WaitForOptions {
  /** Give up after this long, ms (default 30,000). */
  timeoutMs?: number;
  /** Pause between tries, ms (default 200). */
  intervalMs?: number;
}

/**
 * Call `fn` until it returns something other than null/undefined, and return that. Throws
 * `timed out waiting for <what>` (with the last error `fn` threw, if any) after the timeout.
 */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | null | undefined> | T | null | undefined,
  options: WaitForOptions = {},
): Promise<T> {
  const end = Date.now() + (options.timeoutMs ?? 30_000);
  let last: unknown = undefined;
  for (;;) {
    try {
      const v = await fn();
      if (v !== null && v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) {
      throw new Error(
        `timed out waiting for ${what}${last ? `: ${(last as Error).message ?? last}` : ""}`,
      );
    }
    await sleep(options.intervalMs ?? 200);
  }
}

/** The adapter started by {@linkcode startAdapterProcess}. */
export interface AdapterProcess {
  /** PID of the runtime running the adapter (the process whose RSS to read). */
  pid: number;
  /** The HTTPS port of the metrics APIs. */
  port: number;
  /** `https://127.0.0.1:PORT`, no trailing slash. */
  baseUrl: string;
  /** Whether the process is still running. */
  alive(): boolean;
  /** What it wrote to stderr and stdout so far (the last 1 MiB). */
  logs(): string;
  /** Resolves with the exit code (or signal) once it exits. */
  exited: Promise<{ code: number | null; signal: string | null }>;
  /** SIGTERM, then SIGKILL after `graceMs` (default 5,000); resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

/** Options of {@linkcode startAdapterProcess}. */
export interface StartAdapterOptions {
  /** `--manifests` paths (files or folders). */
  manifests: string | readonly string[];
  /** Where the self-signed certificate goes (`--cert-dir`); a new temporary folder if absent. */
  certDir?: string;
  /** More serve flags, e.g. `["--collection-timeout", "2s"]`. */
  flags?: readonly string[];
  /** The runtime to run it on; the tests' own by default. */
  runtime?: Runtime;
  /** How long to wait for the port and `/readyz`, ms (default 60,000: a busy machine). */
  readyTimeoutMs?: number;
  /** Extra environment variables. */
  env?: Record<string, string>;
}

const LISTENING_RE = /serving the metrics APIs on https:\/\/[^:\s]*:(\d+)/;
const MAX_LOG_CHARS = 1 << 20;

/**
 * Start `serve --manifests ...` as a child process on 127.0.0.1 with a random HTTPS port
 * (`--secure-port 0`, read from its "serving the metrics APIs on" log line), no own-metrics
 * endpoint (`--metrics-address ""`) and a self-signed certificate, then wait until `/readyz`
 * answers 200. In file mode no authentication is configured: every request is allowed.
 * Rejects (having killed it) when it exits or is not ready in time; the error carries its logs.
 */
export async function startAdapterProcess(options: StartAdapterOptions): Promise<AdapterProcess> {
  const certDir = options.certDir ?? await makeTempDir("adapter-certs-");
  const manifests = typeof options.manifests === "string"
    ? [options.manifests]
    : [...options.manifests];
  const [cmd, prefix] = adapterCommand(options.runtime);
  const args = [
    ...prefix,
    "serve",
    ...manifests.flatMap((m) => ["--manifests", m]),
    "--bind-address",
    "127.0.0.1",
    "--secure-port",
    "0",
    "--metrics-address",
    "",
    "--cert-dir",
    certDir,
    ...(options.flags ?? []),
  ];
  const child: ChildProcess = spawn(cmd, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  let port: number | null = null;
  const onData = (d: Buffer | string): void => {
    log += String(d);
    if (log.length > MAX_LOG_CHARS) log = log.slice(-MAX_LOG_CHARS);
    if (port === null) {
      const m = LISTENING_RE.exec(log);
      if (m) port = Number(m[1]);
    }
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  let exitState: { code: number | null; signal: string | null } | null = null;
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    child.once("exit", (code, signal) => {
      exitState = { code, signal };
      resolve(exitState);
    });
    child.once("error", (e) => {
      log += `\nspawn error: ${e.message}\n`;
      exitState = { code: null, signal: null };
      resolve(exitState);
    });
  });
  const pid = child.pid;
  const stop = async (graceMs = 5_000): Promise<void> => {
    if (exitState !== null) return;
    try {
      child.kill("SIGTERM");
    } catch { /* already gone */ }
    const kill = setTimeout(() => {
      try {
        child.kill("SIGKILL");
      } catch { /* already gone */ }
    }, graceMs);
    await exited;
    clearTimeout(kill);
  };
  if (pid === undefined) {
    await exited;
    throw new Error(`could not start ${cmd}: ${log}`);
  }
  try {
    const readyPort = await waitFor("the adapter's HTTPS port and /readyz", async () => {
      if (exitState !== null) {
        throw new Error(`the adapter exited (${JSON.stringify(exitState)})`);
      }
      if (port === null) return null;
      const r = await httpGet(`https://127.0.0.1:${port}/readyz`, { timeoutMs: 5_000 });
      return r.status === 200 ? port : null;
    }, { timeoutMs: options.readyTimeoutMs ?? 60_000, intervalMs: 100 });
    return {
      pid,
      port: readyPort,
      baseUrl: `https://127.0.0.1:${readyPort}`,
      alive: () => exitState === null,
      logs: () => log,
      exited,
      stop,
    };
  } catch (e) {
    await stop(1_000);
    throw new Error(`${(e as Error).message}\n--- adapter output ---\n${log.slice(-8000)}`);
  }
}

/** A metric read from the adapter: the HTTP status and the parsed JSON body. */
export interface MetricAnswer {
  status: number;
  /** The parsed body: an ExternalMetricValueList / MetricValueList, or a Status. */
  body: any;
}

/**
 * GET `path` (e.g. `/apis/external.metrics.k8s.io/v1beta1/namespaces/NS/METRIC`) from the
 * adapter over HTTPS and parse the JSON answer.
 */
export async function getApi(
  adapter: Pick<AdapterProcess, "baseUrl">,
  path: string,
  options: HttpGetOptions = {},
): Promise<MetricAnswer> {
  const r = await httpGet(adapter.baseUrl + path, options);
  let body: unknown;
  try {
    body = JSON.parse(r.body);
  } catch {
    body = r.body;
  }
  return { status: r.status, body };
}

/**
 * Read an External metric: `/apis/external.metrics.k8s.io/v1beta1/namespaces/<namespace>/<metric>`
 * (with `?labelSelector=` when given). 200 carries `body.items`; 404 a Status whose `message`
 * says why there is no value.
 */
export function getExternalMetric(
  adapter: Pick<AdapterProcess, "baseUrl">,
  namespace: string,
  metric: string,
  labelSelector?: string,
): Promise<MetricAnswer> {
  const query = labelSelector ? `?labelSelector=${encodeURIComponent(labelSelector)}` : "";
  return getApi(
    adapter,
    `/apis/external.metrics.k8s.io/v1beta1/namespaces/${namespace}/${metric}${query}`,
  );
}

/** Whether the adapter answers `/readyz` with 200. */
export async function isReady(adapter: Pick<AdapterProcess, "baseUrl">): Promise<boolean> {
  try {
    return (await httpGet(`${adapter.baseUrl}/readyz`, { timeoutMs: 10_000 })).status === 200;
  } catch {
    return false;
  }
}

/** The resident set size of process `pid`, bytes (`VmRSS` of /proc/<pid>/status; Linux). */
export async function readRssBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
  if (!m) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(m[1]) * 1024;
}
