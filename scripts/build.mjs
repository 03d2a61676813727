#!/usr/bin/env node
// Builds what ships (run by `npm run build`):
//   dist/hpa-metrics-adapter.mjs  one ESM file (esbuild) that runs under node, deno run -A and bun
//   dist/hpa-metrics-adapter      the single binary, with no node_modules needed at run time
//
// usage: node scripts/build.mjs [--target bun|node-sea] [--bytecode] [--sourcemap]
//                               [--bundle-only] [--quiet] [--outdir DIR (default dist/)]
//
// The binary is `bun build --compile --splitting` of the sources by default. `--target node-sea` makes
// Node's single executable application instead (an esbuild CJS bundle injected into a copy of
// the running `node` with postject); it needs `postject` installed (npm). Switching the shipped
// binary is the one line DEFAULT_TARGET below.
import { spawnSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

/** What `npm run build` ships: "bun" or "node-sea". */
const DEFAULT_TARGET = "bun";

const root = fileURLToPath(new URL("..", import.meta.url));
/** Where the artifacts go: dist/, or `--outdir DIR` (the bench builds into a temp folder). */
const dist = outdirOf(process.argv.slice(2)) ?? join(root, "dist");
const entry = join(root, "src", "main.ts");
const bundleFile = join(dist, "hpa-metrics-adapter.mjs");
const binaryFile = join(dist, "hpa-metrics-adapter");
const bin = (name) => join(root, "node_modules", ".bin", name);

// An ESM bundle of CommonJS packages calls `require("node:...")`; esbuild's shim throws
// `Dynamic require of "node:assert" is not supported` unless a real `require` is in scope.
const REQUIRE_BANNER = "import { createRequire as __hmaCreateRequire } from 'node:module'; " +
  "const require = __hmaCreateRequire(import.meta.url);";

// The packages bundle as they are (checked with @kubernetes/client-node 2.0.1 + undici 7,
// @aws-sdk/client-sqs 3.x incl. the lazily imported credential providers that IRSA uses,
// @influxdata/influxdb-client 1.35, node-forge, hono): no externals are needed. The only
// optional native add-ons anything asks for are ws's, which ws loads in try/catch.
const EXTERNAL = ["bufferutil", "utf-8-validate"];

// The ESM bundle also leaves out @kubernetes/client-node, imported only for kubeconfig users with
// a legacy auth-provider (src/cluster/kubeconfig.ts): a dynamic import is not tree-shaken, and
// the whole library in the bundle (3.7 -> 5.3 MiB) cost every run on it ~30 ms of start and
// 7-50 MiB RSS (node, bun, deno) for code almost nobody runs. Such a user runs the bundle where
// node_modules has it (the checkout); the binaries carry it (a lazy chunk, or in the SEA).
const ESM_EXTERNAL = [...EXTERNAL, "@kubernetes/client-node"];

function outdirOf(argv) {
  const i = argv.indexOf("--outdir");
  return i >= 0 && argv[i + 1] ? resolve(argv[i + 1]) : null;
}

function parseOptions(argv) {
  const opts = {
    target: DEFAULT_TARGET,
    // Bun's `--bytecode` precompiles every function into the binary: start to /readyz in ~60 ms
    // instead of ~120 (the budget is 300), but those pages stay resident once read. Measured at
    // 2,000 HPAs in file mode (RSS median of 20 s, three runs each, same tree): 129.9-131.6 MiB
    // with it, 124.0-126.8 without (the budget is 128). So the binary ships without it.
    bytecode: false,
    sourcemap: false,
    bundleOnly: false,
    quiet: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--target") opts.target = argv[++i];
    else if (a.startsWith("--target=")) opts.target = a.slice("--target=".length);
    else if (a === "--bytecode") opts.bytecode = true;
    else if (a === "--no-bytecode") opts.bytecode = false;
    else if (a === "--sourcemap") opts.sourcemap = true;
    else if (a === "--bundle-only") opts.bundleOnly = true;
    else if (a === "--quiet") opts.quiet = true;
    else if (a === "--outdir") i++; // read by outdirOf
    else fail(`unknown argument "${a}"`, 2);
  }
  if (opts.target !== "bun" && opts.target !== "node-sea") {
    fail(`invalid target "${opts.target}": want bun or node-sea`, 2);
  }
  return opts;
}

function fail(message, code = 1) {
  console.error(`build: ${message}`);
  process.exit(code);
}

let quiet = false;
function log(message) {
  if (!quiet) console.log(message);
}

/** Runs a tool; on failure prints the tail of its output (bun echoes whole minified lines: cut them). */
function run(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { cwd: root, encoding: "utf8", maxBuffer: 64 << 20, ...options });
  if (r.error) fail(`cannot run ${relative(root, cmd) || cmd}: ${r.error.message}`);
  if (r.status !== 0) {
    const out = `${r.stdout ?? ""}${r.stderr ?? ""}`
      .split("\n")
      .map((l) => (l.length > 300 ? `${l.slice(0, 300)} ...` : l))
      .slice(-30)
      .join("\n");
    fail(`${relative(root, cmd) || cmd} ${args.join(" ")} exited ${r.status}\n${out}`);
  }
  return r;
}

function size(file) {
  return `${(statSync(file).size / 1048576).toFixed(1)} MiB`;
}

/** dist/hpa-metrics-adapter.mjs: the ESM bundle for node, deno and bun. */
async function buildEsmBundle(opts) {
  const result = await esbuild.build({
    entryPoints: [entry],
    outfile: bundleFile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    minify: true,
    sourcemap: opts.sourcemap ? "linked" : false,
    legalComments: "none",
    banner: { js: REQUIRE_BANNER },
    external: ESM_EXTERNAL,
    logLevel: "warning",
    // No absolute paths of this checkout in the output: builds compare equal across clones.
    absWorkingDir: root,
  });
  if (result.errors.length) fail("esbuild failed");
  log(`built ${relative(root, bundleFile)} (${size(bundleFile)})`);
}

/**
 * dist/hpa-metrics-adapter with Bun: `bun build --compile --splitting` of the sources. With
 * splitting, what is imported dynamically (the Kubernetes client in cluster mode, the AWS SDK
 * and the InfluxDB client on their first collection) becomes chunks of its own that the binary
 * loads only when needed. Compiled from the one ESM bundle instead, that code is in the main
 * program: it is never run in file mode, yet its compiled code is loaded at start, measured at
 * 2,000 HPAs as 144-152 MiB RSS against 137-138 MiB with splitting (idle 66 against 60 MiB).
 */
function buildBunBinary(opts) {
  const args = [
    "build",
    "--compile",
    "--splitting",
    "--minify",
    "--target=bun",
    "--format=esm",
    // A server binary must not pick up a .env or bunfig.toml from whatever directory it runs in.
    "--no-compile-autoload-dotenv",
    "--no-compile-autoload-bunfig",
    // Bun's small-heap mode: its collector runs smaller, more frequent cycles. Measured on this
    // build at 2,000 HPAs (file mode, RSS every 5 s for 150 s): 120-139 MiB (median ~123)
    // against 124-147 MiB (median ~128) without.
    "--compile-exec-argv=--smol",
    ...(opts.bytecode ? ["--bytecode"] : []),
    ...EXTERNAL.flatMap((name) => ["--external", name]),
    entry,
    "--outfile",
    binaryFile,
  ];
  run(bin("bun"), args);
  log(
    `built ${relative(root, binaryFile)} with bun${opts.bytecode ? " --bytecode" : ""} (${
      size(binaryFile)
    })`,
  );
}

// Node's SEA runs one CommonJS script, and CommonJS has no top-level await: src/main.ts awaits at
// the top level. This plugin wraps main.ts's statements after its imports in an async function
// for the CJS build only, so the source stays one file for every runtime.
const wrapMainForCjs = {
  name: "wrap-main-for-cjs",
  setup(build) {
    build.onLoad({ filter: /[\\/]src[\\/]main\.ts$/ }, (args) => {
      const source = readFileSync(args.path, "utf8");
      const imports = [];
      const body = source.replace(/^import\s[\s\S]*?\sfrom\s+"[^"]+";\s*$/gm, (m) => {
        imports.push(m);
        return "";
      });
      if (/^\s*import\s/m.test(body)) {
        fail(`cannot wrap ${args.path}: an import statement was not recognised`);
      }
      const contents = `${imports.join("\n")}\nvoid (async () => {\n${body}\n})();\n`;
      return { contents, loader: "ts" };
    });
  },
};

/** dist/hpa-metrics-adapter as Node's single executable application. */
async function buildNodeSeaBinary() {
  const postject = process.env.POSTJECT ?? bin("postject");
  if (!existsSync(postject)) {
    fail("--target node-sea needs postject: npm install --save-dev postject");
  }
  const work = join(dist, "sea");
  mkdirSync(work, { recursive: true });
  const cjs = join(work, "main.cjs");
  const result = await esbuild.build({
    entryPoints: [entry],
    outfile: cjs,
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    minify: true,
    legalComments: "none",
    external: EXTERNAL,
    plugins: [wrapMainForCjs],
    // CJS has no import.meta; the few packages that read import.meta.url get the script's URL.
    define: { "import.meta.url": "__hmaImportMetaUrl" },
    banner: {
      js: "const __hmaImportMetaUrl = require('node:url').pathToFileURL(__filename).href;",
    },
    logLevel: "warning",
    absWorkingDir: root,
  });
  if (result.errors.length) fail("esbuild failed");
  const blob = join(work, "sea-prep.blob");
  const config = join(work, "sea-config.json");
  writeFileSync(
    config,
    JSON.stringify({
      main: cjs,
      output: blob,
      disableExperimentalSEAWarning: true,
      useCodeCache: false,
    }),
  );
  run(process.execPath, ["--experimental-sea-config", config]);
  rmSync(binaryFile, { force: true });
  copyFileSync(process.execPath, binaryFile);
  run(postject, [
    binaryFile,
    "NODE_SEA_BLOB",
    blob,
    "--sentinel-fuse",
    "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2",
  ]);
  rmSync(work, { recursive: true, force: true });
  log(
    `built ${relative(root, binaryFile)} as a node ${process.versions.node} single executable (${
      size(binaryFile)
    })`,
  );
}

/** The binary must start outside the checkout, where no node_modules can be found. */
function smokeTest() {
  const r = spawnSync(binaryFile, ["version"], { cwd: tmpdir(), encoding: "utf8" });
  if (r.status !== 0 || !r.stdout.startsWith("hpa-metrics-adapter ")) {
    fail(`${relative(root, binaryFile)} version failed (exit ${r.status}): ${r.stdout}${r.stderr}`);
  }
  log(`ok: ${r.stdout.trim()}`);
}

const opts = parseOptions(process.argv.slice(2));
quiet = opts.quiet;
const started = Date.now();
mkdirSync(dirname(bundleFile), { recursive: true });
for (const f of [bundleFile, `${bundleFile}.map`, binaryFile]) rmSync(f, { force: true });
await buildEsmBundle(opts);
if (!opts.bundleOnly) {
  if (opts.target === "bun") buildBunBinary(opts);
  else await buildNodeSeaBinary();
  smokeTest();
}
log(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
