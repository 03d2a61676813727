/**
 * KEDA, a peer the end-to-end tests can run beside the adapter: its operator
 * (`github.com/kedacore/keda/v2/cmd/operator`) and its metrics API server (`.../cmd/adapter`),
 * built from the Go module `github.com/kedacore/keda/v2` pinned by tests/e2e/keda/go.mod (which
 * repeats KEDA's own replace directives: Go ignores them in a dependency's go.mod, and without
 * them k8s.io/* would resolve to v0.36 instead of KEDA's v0.35.5) on first use, and cached under
 * ~/.cache/hpa-e2e/keda-HASH/{keda-operator,keda-adapter}, HASH being that of the module's files
 * (tests/support/go_tool.ts's goToolHash). Stamped with KEDA's version as its Makefile does.
 * How to run them out of cluster against a bare kube-apiserver: tests/e2e/keda/README.md.
 *
 *   node --import tsx tests/e2e/keda_tool.ts build   # build unless cached, print both paths
 *   node --import tsx tests/e2e/keda_tool.ts crds    # print the paths of KEDA's CRD files
 *
 * The cold build downloads ~300 modules through the Go module proxy and compiles for minutes
 * (README.md has the measurements). tests/support/go_tool.ts's ensureGoTool builds the module's
 * own folder (`go build .`), and a dependency's `package main` cannot be imported into one, so
 * the build is done here, with the same flags and environment.
 *
 * Environment: GO names the go binary; XDG_CACHE_HOME moves the cache.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { type GoTool, goToolPath } from "../support/go_tool.ts";

const MODULE = "github.com/kedacore/keda/v2";

/** The module that pins KEDA (go.mod, go.sum, tools.go: hashed into the cache folder's name). */
export const KEDA: GoTool = {
  name: "keda",
  dir: fileURLToPath(new URL("./keda", import.meta.url)),
  sources: ["go.mod", "go.sum", "tools.go"],
  what: "KEDA's operator and metrics API server",
};

/** The two binaries: the file name in the cache folder and the package built. */
const BINARIES = {
  operator: { file: "keda-operator", pkg: `${MODULE}/cmd/operator` },
  adapter: { file: "keda-adapter", pkg: `${MODULE}/cmd/adapter` },
} as const;

/** The paths of KEDA's binaries. */
export interface KedaBinaries {
  /** The operator (`keda` in KEDA's image): ScaledObject controller, HPA writer, gRPC metrics service. */
  operator: string;
  /** The metrics API server (`keda-adapter`): external.metrics.k8s.io, asks the operator over gRPC. */
  adapter: string;
}

/** The KEDA version pinned by tests/e2e/keda/go.mod (`v2.20.2`). */
export function kedaVersion(): string {
  const text = readFileSync(join(KEDA.dir, "go.mod"), "utf8");
  const m = text.match(/^\s*(?:require\s+)?github\.com\/kedacore\/keda\/v2\s+(v\S+)/m);
  if (!m) throw new Error(`no ${MODULE} requirement in ${KEDA.dir}/go.mod`);
  return m[1];
}

/** Where the binaries built from the current tests/e2e/keda files are cached. */
export function kedaPaths(): KedaBinaries {
  const dir = dirname(goToolPath(KEDA));
  return {
    operator: join(dir, BINARIES.operator.file),
    adapter: join(dir, BINARIES.adapter.file),
  };
}

function goBinary(): string {
  if (process.env.GO) return process.env.GO;
  return spawnSync("go", ["version"], { stdio: "ignore" }).status === 0
    ? "go"
    : "/usr/local/go/bin/go";
}

/** go's environment: modules from the proxy as go.sum pins them, the local toolchain, no cgo. */
function goEnv(): NodeJS.ProcessEnv {
  return { ...process.env, CGO_ENABLED: "0", GOFLAGS: "-mod=mod", GOTOOLCHAIN: "local" };
}

/**
 * The paths of KEDA's operator and metrics API server of the pinned version: the cached ones,
 * else built now with one `go build` of both packages. Throws when they cannot be built: a test
 * that needs KEDA must fail, never skip.
 */
export function ensureKeda(): KedaBinaries {
  const paths = kedaPaths();
  if (existsSync(paths.operator) && existsSync(paths.adapter)) return paths;
  const dir = dirname(paths.operator);
  const version = kedaVersion();
  mkdirSync(dirname(dir), { recursive: true });
  // built into a folder beside the cache entry and renamed into place: a concurrent build never
  // leaves half a binary
  const tmp = `${dir}.${process.pid}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp);
  process.stderr.write(`[keda] building KEDA ${version} (operator and adapter) into ${dir}\n`);
  const go = goBinary();
  const r = spawnSync(go, [
    "build",
    "-trimpath",
    // no VCS stamp: the build must not depend on git or on who owns the checkout
    "-buildvcs=false",
    `-ldflags=-X=${MODULE}/version.Version=${version}`,
    "-o",
    `${tmp}/`,
    BINARIES.operator.pkg,
    BINARIES.adapter.pkg,
  ], { cwd: KEDA.dir, stdio: ["ignore", "inherit", "inherit"], env: goEnv() });
  try {
    if (r.error) {
      throw new Error(
        `cannot build ${KEDA.what}: cannot run "${go}" (install Go or set GO): ${r.error.message}`,
      );
    }
    if (r.status !== 0) {
      throw new Error(`cannot build ${KEDA.what}: go build exited with ${r.status ?? r.signal}`);
    }
    // go build -o DIR/ names each binary after its package's last element
    renameSync(join(tmp, "operator"), join(tmp, BINARIES.operator.file));
    renameSync(join(tmp, "adapter"), join(tmp, BINARIES.adapter.file));
    try {
      renameSync(tmp, dir);
    } catch (err) {
      // a concurrent build got there first: its binaries are as good; else a stale folder
      if (!(existsSync(paths.operator) && existsSync(paths.adapter))) {
        if (!existsSync(dir)) throw err;
        rmSync(dir, { recursive: true, force: true });
        renameSync(tmp, dir);
      }
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return paths;
}

/** KEDA's source folder in the module cache (`go mod download -json`, via the module proxy). */
export function kedaModuleDir(): string {
  const r = spawnSync(goBinary(), ["mod", "download", "-json", `${MODULE}@${kedaVersion()}`], {
    cwd: KEDA.dir,
    encoding: "utf8",
    env: goEnv(),
  });
  if (r.error || r.status !== 0) {
    throw new Error(`cannot download ${MODULE}: ${r.error?.message ?? r.stderr ?? r.stdout}`);
  }
  const info = JSON.parse(r.stdout) as { Dir?: string; Error?: string };
  if (!info.Dir) throw new Error(`cannot download ${MODULE}: ${info.Error ?? "no Dir"}`);
  return info.Dir;
}

/**
 * KEDA's CRDs, all of which the operator needs (it starts a controller for each kind): apply
 * them server-side (`kubectl apply --server-side -f`): scaledjobs.keda.sh is ~650 kB, too big
 * for the last-applied annotation of a client-side apply.
 */
export function kedaCrdFiles(): string[] {
  const bases = join(kedaModuleDir(), "config", "crd", "bases");
  return [
    "keda.sh_scaledobjects.yaml",
    "keda.sh_scaledjobs.yaml",
    "keda.sh_triggerauthentications.yaml",
    "keda.sh_clustertriggerauthentications.yaml",
    "eventing.keda.sh_cloudeventsources.yaml",
    "eventing.keda.sh_clustercloudeventsources.yaml",
  ].map((name) => join(bases, name));
}

/**
 * The files KEDA's operator and metrics server find in their `--cert-dir` to link over gRPC (and
 * to serve with): `ca.crt`, `tls.crt` and `tls.key`, one certificate for both ends (server and
 * client use) valid for 127.0.0.1 and `ips`, made with openssl in `dir`, for two days.
 */
export function kedaCerts(dir: string, ips: readonly string[]): void {
  const openssl = (args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  const days = ["-days", "2"];
  openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt"]
    .concat(days, ["-subj", "/CN=keda-e2e-ca"]));
  openssl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tls.key", "-out", "tls.csr"]
    .concat(["-subj", "/CN=keda-operator"]));
  writeFileSync(
    join(dir, "ext.cnf"),
    `subjectAltName=${["127.0.0.1", ...ips].map((ip) => `IP:${ip}`).join(",")}\n` +
      "extendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n" +
      "keyUsage=digitalSignature,keyEncipherment\n",
  );
  openssl(["x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key"]
    .concat(["-CAcreateserial", "-out", "tls.crt"], days, ["-extfile", "ext.cnf"]));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [command] = process.argv.slice(2);
  try {
    if (command === "build") {
      const paths = ensureKeda();
      process.stdout.write(`${paths.operator}\n${paths.adapter}\n`);
    } else if (command === "crds") {
      process.stdout.write(`${kedaCrdFiles().join("\n")}\n`);
    } else {
      process.stderr.write("usage: keda_tool.ts build|crds\n");
      process.exit(2);
    }
  } catch (err) {
    process.stderr.write(`keda: ${(err as Error).message}\n`);
    process.exit(1);
  }
}
