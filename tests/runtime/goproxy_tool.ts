/**
 * The Go reverse proxy of tests/runtime/reverse_proxy_test.ts (tests/runtime/goproxy/main.go,
 * standard library only): what kube-apiserver's aggregator puts in front of the adapter. Built
 * with `go build` on first use and cached under ~/.cache/hpa-e2e/goproxy-HASH/goproxy, HASH
 * being that of main.go and go.mod, so that an edit builds a new binary.
 *
 *   node --import tsx tests/runtime/goproxy_tool.ts build   # build unless cached, print the path
 *
 * Environment: GO names the go binary; XDG_CACHE_HOME moves the cache.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const MODULE_DIR = fileURLToPath(new URL("./goproxy", import.meta.url));
const SOURCES = ["go.mod", "main.go"];

/** A short hash of the proxy's sources. */
export function goproxyHash(): string {
  const hash = createHash("sha256");
  for (const name of SOURCES) {
    hash.update(`${name}\0`);
    hash.update(readFileSync(join(MODULE_DIR, name)));
  }
  return hash.digest("hex").slice(0, 16);
}

/** Where the proxy built from the current sources is cached. */
export function goproxyPath(hash: string = goproxyHash()): string {
  const cache = process.env.XDG_CACHE_HOME || join(process.env.HOME ?? "/root", ".cache");
  return join(cache, "hpa-e2e", `goproxy-${hash}`, "goproxy");
}

function goBinary(): string {
  if (process.env.GO) return process.env.GO;
  return spawnSync("go", ["version"], { stdio: "ignore" }).status === 0
    ? "go"
    : "/usr/local/go/bin/go";
}

/**
 * The path of the proxy binary: the cached one, else built now with `go build` (seconds when
 * Go's build cache is cold). Throws when it cannot be built: a test that needs the proxy must
 * fail, never skip.
 */
export function ensureGoproxy(): string {
  const path = goproxyPath();
  if (existsSync(path)) return path;
  mkdirSync(dirname(path), { recursive: true });
  // built beside the cache entry and renamed into place: a concurrent build never leaves half a file
  const tmp = `${path}.${process.pid}.tmp`;
  process.stderr.write(`[goproxy] building the test reverse proxy into ${path}\n`);
  const go = goBinary();
  // no VCS stamp: the build must not depend on git or on who owns the checkout
  const r = spawnSync(go, ["build", "-trimpath", "-buildvcs=false", "-o", tmp, "."], {
    cwd: MODULE_DIR,
    stdio: ["ignore", "inherit", "inherit"],
    // the standard library only: no module is downloaded, and the toolchain here is the one used
    env: { ...process.env, CGO_ENABLED: "0", GOFLAGS: "-mod=mod", GOTOOLCHAIN: "local" },
  });
  if (r.error) {
    throw new Error(
      `cannot build the test reverse proxy: cannot run "${go}" (install Go or set GO): ${r.error.message}`,
    );
  }
  if (r.status !== 0) {
    rmSync(tmp, { force: true });
    throw new Error(
      `cannot build the test reverse proxy: go build exited with ${r.status ?? r.signal}`,
    );
  }
  renameSync(tmp, path);
  return path;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [command] = process.argv.slice(2);
  if (command !== "build") {
    process.stderr.write("usage: goproxy_tool.ts build\n");
    process.exit(2);
  }
  try {
    process.stdout.write(`${ensureGoproxy()}\n`);
  } catch (err) {
    process.stderr.write(`goproxy: ${(err as Error).message}\n`);
    process.exit(1);
  }
}
