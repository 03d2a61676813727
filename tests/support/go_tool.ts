/**
 * Small Go programs the tests run (a reverse proxy, reference implementations): built with
 * `go build` on first use and cached under ~/.cache/hpa-e2e/<name>-HASH/<name>, HASH being that
 * of the module's sources, so that an edit builds a new binary. Modules are fetched through the
 * Go module proxy by name (`go.sum` pins them).
 *
 * Environment: GO names the go binary; XDG_CACHE_HOME moves the cache.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import process from "node:process";

/** A Go program of the tests. */
export interface GoTool {
  /** The binary's name, and of its cache folder. */
  name: string;
  /** Its module's folder. */
  dir: string;
  /** The module's files that make up the binary (hashed). */
  sources: readonly string[];
  /** What it is, for messages (`the test reverse proxy`). */
  what: string;
}

/** A short hash of the tool's sources. */
export function goToolHash(tool: GoTool): string {
  const hash = createHash("sha256");
  for (const name of tool.sources) {
    hash.update(`${name}\0`);
    hash.update(readFileSync(join(tool.dir, name)));
  }
  return hash.digest("hex").slice(0, 16);
}

/** Where the tool built from the current sources is cached. */
export function goToolPath(tool: GoTool, hash: string = goToolHash(tool)): string {
  const cache = process.env.XDG_CACHE_HOME || join(process.env.HOME ?? "/root", ".cache");
  return join(cache, "hpa-e2e", `${tool.name}-${hash}`, tool.name);
}

function goBinary(): string {
  if (process.env.GO) return process.env.GO;
  return spawnSync("go", ["version"], { stdio: "ignore" }).status === 0
    ? "go"
    : "/usr/local/go/bin/go";
}

/**
 * The path of the tool's binary: the cached one, else built now with `go build`. Throws when
 * it cannot be built: a test that needs the tool must fail, never skip.
 */
export function ensureGoTool(tool: GoTool): string {
  const path = goToolPath(tool);
  if (existsSync(path)) return path;
  mkdirSync(dirname(path), { recursive: true });
  // built beside the cache entry and renamed into place: a concurrent build never leaves half a file
  const tmp = `${path}.${process.pid}.tmp`;
  process.stderr.write(`[${tool.name}] building ${tool.what} into ${path}\n`);
  const go = goBinary();
  // no VCS stamp: the build must not depend on git or on who owns the checkout
  const r = spawnSync(go, ["build", "-trimpath", "-buildvcs=false", "-o", tmp, "."], {
    cwd: tool.dir,
    stdio: ["ignore", "inherit", "inherit"],
    // modules come from the Go module proxy as go.sum pins them; the toolchain here is the one used
    env: { ...process.env, CGO_ENABLED: "0", GOFLAGS: "-mod=mod", GOTOOLCHAIN: "local" },
  });
  if (r.error) {
    throw new Error(
      `cannot build ${tool.what}: cannot run "${go}" (install Go or set GO): ${r.error.message}`,
    );
  }
  if (r.status !== 0) {
    rmSync(tmp, { force: true });
    throw new Error(`cannot build ${tool.what}: go build exited with ${r.status ?? r.signal}`);
  }
  renameSync(tmp, path);
  return path;
}

/** `node --import tsx <tool script> build`: builds unless cached, prints the path. */
export function goToolMain(tool: GoTool, argv: readonly string[]): void {
  const [command] = argv;
  if (command !== "build") {
    process.stderr.write(`usage: ${tool.name}_tool.ts build\n`);
    process.exit(2);
  }
  try {
    process.stdout.write(`${ensureGoTool(tool)}\n`);
  } catch (err) {
    process.stderr.write(`${tool.name}: ${(err as Error).message}\n`);
    process.exit(1);
  }
}
