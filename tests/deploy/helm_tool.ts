/**
 * Helm for the chart's tests (tests/deploy/helm_test.ts) and the end-to-end harness: built from
 * its Go module `helm.sh/helm/v3` (pinned by tests/deploy/helm/go.mod) on first use and cached
 * under ~/.cache/hpa-e2e/helm-VERSION/helm, as the harness builds and caches kube-apiserver.
 * It is stamped as Helm's Makefile stamps a release: its version, and the Kubernetes version of
 * its client-go as the default of `helm template` and `helm lint` (else v1.20).
 *
 *   node --import tsx tests/deploy/helm_tool.ts build   # build unless cached, print the path
 *
 * Environment: GO names the go binary; XDG_CACHE_HOME moves the cache.
 */
import { spawnSync } from "node:child_process";
import type { SpawnSyncReturns } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const MODULE_DIR = fileURLToPath(new URL("./helm", import.meta.url));
const GO_MOD = join(MODULE_DIR, "go.mod");

/** A required module's version in tests/deploy/helm/go.mod. */
function requiredVersion(module: string): string {
  const text = readFileSync(GO_MOD, "utf8");
  const escaped = module.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const m = text.match(new RegExp(`^\\s*(?:require\\s+)?${escaped}\\s+(v\\S+)`, "m"));
  if (!m) throw new Error(`no ${module} requirement in ${GO_MOD}`);
  return m[1];
}

/** The Helm version pinned by tests/deploy/helm/go.mod (`v3.22.0`). */
export function helmVersion(): string {
  return requiredVersion("helm.sh/helm/v3");
}

/** Where the built helm of `version` is cached. */
export function helmPath(version: string = helmVersion()): string {
  const cache = process.env.XDG_CACHE_HOME || join(process.env.HOME ?? "/root", ".cache");
  return join(cache, "hpa-e2e", `helm-${version}`, "helm");
}

function goBinary(): string {
  if (process.env.GO) return process.env.GO;
  return spawnSync("go", ["version"], { stdio: "ignore" }).status === 0
    ? "go"
    : "/usr/local/go/bin/go";
}

/**
 * The path of a helm binary of the pinned version: the cached one, else built now with `go build`
 * (a minute or more when cold). Throws when it cannot be built: a test that needs helm must fail,
 * never skip.
 */
export function ensureHelm(): string {
  const version = helmVersion();
  const path = helmPath(version);
  if (existsSync(path)) return path;
  mkdirSync(dirname(path), { recursive: true });
  // client-go v0.37.x is Kubernetes 1.37: the default of `helm template --kube-version`
  const [, minor] = requiredVersion("k8s.io/client-go").split(".");
  const pkg = "helm.sh/helm/v3";
  const ldflags = [
    "-w",
    "-s",
    `-X ${pkg}/internal/version.version=${version}`,
    `-X ${pkg}/pkg/lint/rules.k8sVersionMajor=1`,
    `-X ${pkg}/pkg/lint/rules.k8sVersionMinor=${minor}`,
    `-X ${pkg}/pkg/chartutil.k8sVersionMajor=1`,
    `-X ${pkg}/pkg/chartutil.k8sVersionMinor=${minor}`,
  ].join(" ");
  // built beside the cache entry and renamed into place: a concurrent build never leaves half a file
  const tmp = `${path}.${process.pid}.tmp`;
  process.stderr.write(`[helm] building helm ${version} into ${path}\n`);
  const go = goBinary();
  const r = spawnSync(go, [
    "build",
    "-trimpath",
    "-ldflags",
    ldflags,
    "-o",
    tmp,
    `${pkg}/cmd/helm`,
  ], {
    cwd: MODULE_DIR,
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, CGO_ENABLED: "0" },
  });
  if (r.error) {
    throw new Error(
      `cannot build helm ${version}: cannot run "${go}" (install Go or set GO): ${r.error.message}`,
    );
  }
  if (r.status !== 0) {
    rmSync(tmp, { force: true });
    throw new Error(`cannot build helm ${version}: go build exited with ${r.status ?? r.signal}`);
  }
  renameSync(tmp, path);
  return path;
}

/** Options of {@linkcode runHelm}. */
export interface RunHelmOptions {
  /** The kubeconfig for commands that talk to a cluster. */
  kubeconfig?: string;
  /** Standard input (e.g. values for `-f -`). */
  input?: string;
  /** Helm's config, cache and data folders; default: a temporary folder per process. */
  home?: string;
}

let defaultHome: string | undefined;

/**
 * Run the cached helm (building it first when needed) with `args`. Helm's own folders point at
 * a temporary folder, so that nothing in the user's ~/.config or ~/.cache is read or written.
 */
export function runHelm(args: string[], options: RunHelmOptions = {}): SpawnSyncReturns<string> {
  const helm = ensureHelm();
  if (!options.home && !defaultHome) {
    const made = mkdtempSync(join(tmpdir(), "hpa-helm-"));
    defaultHome = made;
    process.on("exit", () => rmSync(made, { recursive: true, force: true }));
  }
  const home = options.home ?? defaultHome!;
  const env: Record<string, string> = {
    ...process.env as Record<string, string>,
    HELM_CONFIG_HOME: join(home, "config"),
    HELM_CACHE_HOME: join(home, "cache"),
    HELM_DATA_HOME: join(home, "data"),
  };
  if (options.kubeconfig) env.KUBECONFIG = options.kubeconfig;
  else delete env.KUBECONFIG;
  return spawnSync(helm, args, {
    input: options.input,
    encoding: "utf8",
    maxBuffer: 64 << 20,
    env,
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [command] = process.argv.slice(2);
  if (command !== "build") {
    process.stderr.write("usage: helm_tool.ts build\n");
    process.exit(2);
  }
  try {
    process.stdout.write(`${ensureHelm()}\n`);
  } catch (err) {
    process.stderr.write(`helm: ${(err as Error).message}\n`);
    process.exit(1);
  }
}
