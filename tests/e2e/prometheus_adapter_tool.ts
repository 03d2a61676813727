/**
 * prometheus-adapter for the delegation end-to-end test (tests/e2e/delegation_e2e_test.ts):
 * built from its Go module `sigs.k8s.io/prometheus-adapter` (pinned by
 * tests/e2e/prometheus_adapter/go.mod) on first use and cached under
 * ~/.cache/hpa-e2e/prometheus-adapter-VERSION/adapter, as the harness builds and caches
 * kube-apiserver.
 *
 *   node --import tsx tests/e2e/prometheus_adapter_tool.ts build   # build unless cached
 *
 * Environment: GO names the go binary; XDG_CACHE_HOME moves the cache.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const MODULE_DIR = fileURLToPath(new URL("./prometheus_adapter", import.meta.url));
const MODULE = "sigs.k8s.io/prometheus-adapter";

/** The prometheus-adapter version pinned by tests/e2e/prometheus_adapter/go.mod. */
export function prometheusAdapterVersion(): string {
  const text = readFileSync(join(MODULE_DIR, "go.mod"), "utf8");
  const m = text.match(/^\s*(?:require\s+)?sigs\.k8s\.io\/prometheus-adapter\s+(v\S+)/m);
  if (!m) throw new Error(`no ${MODULE} requirement in ${MODULE_DIR}/go.mod`);
  return m[1];
}

/** Where the built adapter of `version` is cached. */
export function prometheusAdapterPath(version: string = prometheusAdapterVersion()): string {
  const cache = process.env.XDG_CACHE_HOME || join(process.env.HOME ?? "/root", ".cache");
  return join(cache, "hpa-e2e", `prometheus-adapter-${version}`, "adapter");
}

/**
 * The path of a prometheus-adapter binary of the pinned version: the cached one, else built now
 * with `go build` (about two minutes when cold). Throws when it cannot be built.
 */
export function ensurePrometheusAdapter(): string {
  const version = prometheusAdapterVersion();
  const path = prometheusAdapterPath(version);
  if (existsSync(path)) return path;
  mkdirSync(dirname(path), { recursive: true });
  // built beside the cache entry and renamed into place: a concurrent build never leaves half a file
  const tmp = `${path}.${process.pid}.tmp`;
  process.stderr.write(`[prometheus-adapter] building ${version} into ${path}\n`);
  const go = process.env.GO ??
    (spawnSync("go", ["version"], { stdio: "ignore" }).status === 0
      ? "go"
      : "/usr/local/go/bin/go");
  const r = spawnSync(go, ["build", "-trimpath", "-o", tmp, `${MODULE}/cmd/adapter`], {
    cwd: MODULE_DIR,
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, CGO_ENABLED: "0" },
  });
  if (r.error) {
    throw new Error(
      `cannot build prometheus-adapter ${version}: cannot run "${go}" (install Go or set GO): ${r.error.message}`,
    );
  }
  if (r.status !== 0) {
    rmSync(tmp, { force: true });
    throw new Error(
      `cannot build prometheus-adapter ${version}: go build exited with ${r.status ?? r.signal}`,
    );
  }
  renameSync(tmp, path);
  return path;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv[2] === "build") process.stdout.write(`${ensurePrometheusAdapter()}\n`);
  else {
    process.stderr.write("usage: prometheus_adapter_tool.ts build\n");
    process.exit(2);
  }
}
