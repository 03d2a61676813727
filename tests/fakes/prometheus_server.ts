/**
 * Starts the REAL Prometheus server (the Debian package `prometheus`) on loopback for
 * integration tests: a random free port, a temporary TSDB folder, a config that scrapes the
 * given targets every second. Resolves once `readyQuery` returns data, i.e. once the first
 * scrape is queryable (about 5-6 s: targets are applied in 5 s batches). A missing binary is a
 * loud failure with an install hint, never a skip.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import process from "node:process";

/** A running Prometheus. */
export interface RealPrometheus {
  /** `http://127.0.0.1:PORT`. */
  url: string;
  pid: number;
  /** Stops the process (by PID) and removes its folder. */
  stop(): Promise<void>;
}

/** Options of {@linkcode startPrometheus}. */
export interface StartPrometheusOptions {
  /** `host:port` targets scraped every second (path `/metrics`). */
  targets: readonly string[];
  /** A PromQL query that returns data once the first scrape is in (a metric of a target). */
  readyQuery: string;
  /** How long to wait for `readyQuery`, ms (20 s). */
  readyTimeoutMs?: number;
}

const INSTALL_HINT =
  "the prometheus binary is missing: install it with `apt-get install -y --no-install-recommends prometheus` (or set PROMETHEUS_BIN); these integration tests need the real server and are never skipped";

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The prometheus binary: `$PROMETHEUS_BIN`, else the first `prometheus` on PATH, else throws. */
export function prometheusBinary(): string {
  const env = process.env.PROMETHEUS_BIN;
  if (env) {
    if (isExecutable(env)) return env;
    throw new Error(`PROMETHEUS_BIN="${env}" is not executable; ${INSTALL_HINT}`);
  }
  const dirs = (process.env.PATH ?? "").split(delimiter).filter(Boolean);
  for (const dir of [...dirs, "/usr/bin", "/usr/local/bin"]) {
    const p = join(dir, "prometheus");
    if (isExecutable(p)) return p;
  }
  throw new Error(INSTALL_HINT);
}

/** A port that was free a moment ago on 127.0.0.1. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function waitExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    child.once("exit", () => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

async function ready(url: string, query: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(query)}`, {
      signal: AbortSignal.timeout(2000),
    });
    const doc = await res.json() as { status?: string; data?: { result?: unknown[] } };
    return doc.status === "success" && (doc.data?.result?.length ?? 0) > 0;
  } catch {
    return false;
  }
}

/**
 * Start Prometheus scraping `targets`; resolves when `readyQuery` has data. Throws (with the
 * server's output) when it exits or is not ready in time; the process is stopped then.
 */
export async function startPrometheus(options: StartPrometheusOptions): Promise<RealPrometheus> {
  const bin = prometheusBinary();
  const dir = await mkdtemp(join(tmpdir(), "hpa-prometheus-"));
  const config = [
    "global:",
    "  scrape_interval: 1s",
    "  scrape_timeout: 1s",
    "  evaluation_interval: 1s",
    "scrape_configs:",
    "  - job_name: test",
    "    static_configs:",
    `      - targets: [${options.targets.map((t) => JSON.stringify(t)).join(", ")}]`,
    "",
  ].join("\n");
  await writeFile(join(dir, "prometheus.yml"), config);
  let lastError = "";
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const child = spawn(bin, [
      `--config.file=${join(dir, "prometheus.yml")}`,
      `--storage.tsdb.path=${join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--log.level=warn",
    ], { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout?.on("data", (d) => (output += d));
    child.stderr?.on("data", (d) => (output += d));
    let spawnError: Error | null = null;
    child.once("error", (e) => (spawnError = e));
    // Should the test runner exit without running after() hooks, do not leave it behind.
    const onExit = (): void => {
      if (child.exitCode === null && child.pid !== undefined) {
        try {
          process.kill(child.pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
    };
    process.on("exit", onExit);
    const stop = async (): Promise<void> => {
      process.off("exit", onExit);
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
        process.kill(child.pid, "SIGTERM");
        if (!(await waitExit(child, 5000))) {
          process.kill(child.pid, "SIGKILL");
          await waitExit(child, 5000);
        }
      }
    };
    const deadline = Date.now() + (options.readyTimeoutMs ?? 20_000);
    while (Date.now() < deadline) {
      if (spawnError) break;
      if (child.exitCode !== null || child.signalCode !== null) break;
      if (await ready(url, options.readyQuery)) {
        return {
          url,
          pid: child.pid!,
          stop: async () => {
            await stop();
            await rm(dir, { recursive: true, force: true });
          },
        };
      }
      await sleep(200);
    }
    await stop();
    lastError = spawnError
      ? `cannot run ${bin}: ${(spawnError as Error).message}`
      : `prometheus on ${url} ${
        child.exitCode !== null ? `exited with ${child.exitCode}` : "was not ready in time"
      }: ${output.slice(-2000)}`;
    // A port taken between freePort() and the bind: try another one.
    if (!/address already in use/.test(output)) break;
  }
  await rm(dir, { recursive: true, force: true });
  throw new Error(lastError);
}
