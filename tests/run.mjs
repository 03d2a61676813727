#!/usr/bin/env node
// Runs the test suite under Node, Deno and Bun (or the ones named) and ends with one plain
// line "N passed, N failed" that sums all runtimes. Exit code 1 on any failure or when a
// runtime printed no summary (a crash must never read as green).
//
// usage: node tests/run.mjs [--runtime node|deno|bun]... [--only unit|integration] [files...]
import { spawn, spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = (name) => join(root, "node_modules", ".bin", name);

const args = process.argv.slice(2);
const runtimes = [];
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--runtime") runtimes.push(args[++i]);
  else files.push(args[i]);
}
if (runtimes.length === 0) runtimes.push("node", "deno", "bun");
for (const r of runtimes) {
  if (!["node", "deno", "bun"].includes(r)) {
    console.error(`unknown runtime "${r}" (node, deno, bun)`);
    process.exit(2);
  }
}

/** Every *_test.ts below tests/, except the end-to-end suite (run by npm run test:e2e). */
function findTests(dir) {
  const out = [];
  for (const entry of readdirSync(dir)) {
    const p = join(dir, entry);
    if (statSync(p).isDirectory()) {
      if (entry === "e2e" || entry === "node_modules" || entry === "fakes") continue;
      out.push(...findTests(p));
    } else if (entry.endsWith("_test.ts")) out.push(p);
  }
  return out.sort();
}

/**
 * The integration suites use real servers and a real browser. A fresh Debian machine lacks
 * Prometheus and Chromium: install them when we can (root with apt-get), else say loudly what is
 * missing; the suites that need them fail without them.
 */
function ensureSystemPackages() {
  const has = (cmd) =>
    spawnSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" }).status === 0;
  const missing = [["prometheus", "prometheus"], ["chromium", "chromium"], ["kubectl", null]]
    .filter(([cmd]) => !has(cmd));
  const installable = missing.filter(([, pkg]) => pkg !== null).map(([, pkg]) => pkg);
  if (installable.length > 0 && process.getuid?.() === 0 && has("apt-get")) {
    console.log(
      `--- installing Debian packages the integration suites need: ${installable.join(" ")}`,
    );
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    spawnSync("apt-get", ["update", "-qq"], { stdio: "inherit", env });
    spawnSync("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...installable], {
      stdio: "inherit",
      env,
    });
  }
  for (const [cmd, pkg] of missing) {
    if (!has(cmd)) {
      console.error(
        `warning: ${cmd} is missing; the suites that need it will fail` +
          (pkg ? ` (apt-get install ${pkg})` : " (the machine image ships /usr/bin/kubectl)"),
      );
    }
  }
}
ensureSystemPackages();

// A folder named on the command line stands for the test files below it (Node's runner would
// take it as one file and run nothing).
const testFiles = (files.length ? files : [join(root, "tests")]).flatMap((f) => {
  const p = f.startsWith("/") ? f : join(root, f);
  let dir = false;
  try {
    dir = statSync(p).isDirectory();
  } catch {
    // a missing file is the runner's to report
  }
  return (dir ? findTests(p) : [p]).map((t) => relative(root, t));
});
if (testFiles.length === 0) {
  console.error("no test files found");
  process.exit(1);
}

function run(cmd, argv, env = {}) {
  return new Promise((resolve) => {
    const child = spawn(cmd, argv, {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      process.stdout.write(d);
    });
    child.stderr.on("data", (d) => {
      out += d;
      process.stderr.write(d);
    });
    child.on("close", (code) => resolve({ code: code ?? 1, out }));
  });
}

// deno-lint-ignore no-control-regex
const strip = (s) => s.replace(/\x1b\[[0-9;]*m/g, "");

const parsers = {
  node(out) {
    const pass = out.match(/^# pass (\d+)$/m);
    const fail = out.match(/^# fail (\d+)$/m);
    return pass && fail ? { passed: +pass[1], failed: +fail[1] } : null;
  },
  deno(out) {
    // Deno counts describe() blocks as tests and it() as steps: prefer the step counts.
    const m = strip(out).match(
      /^(?:ok|FAILED) \| (\d+) passed(?: \((\d+) steps?\))? \| (\d+) failed(?: \((\d+) steps?\))?/m,
    );
    if (!m) return null;
    const failedSteps = m[4] !== undefined ? +m[4] : 0;
    return {
      passed: m[2] !== undefined ? +m[2] : +m[1],
      failed: Math.max(+m[3], failedSteps),
    };
  },
  bun(out) {
    const s = strip(out);
    const pass = s.match(/^\s*(\d+) pass$/m);
    const fail = s.match(/^\s*(\d+) fail$/m);
    return pass && fail ? { passed: +pass[1], failed: +fail[1] } : null;
  },
};

const commands = {
  node:
    () => [process.execPath, ["--import", "tsx", "--test", "--test-reporter=tap", ...testFiles]],
  deno: () => [bin("deno"), ["test", "-A", "--no-check", ...testFiles]],
  bun: () => [bin("bun"), ["test", "--timeout", "120000", ...testFiles.map((f) => "./" + f)]],
};

let passed = 0;
let failed = 0;
const problems = [];
for (const r of runtimes) {
  console.log(`\n=== ${r}: ${testFiles.length} test files ===`);
  const [cmd, argv] = commands[r]();
  const { code, out } = await run(cmd, argv, { HPA_TEST_RUNTIME: r });
  const summary = parsers[r](out);
  if (!summary) {
    problems.push(`${r}: no test summary found (exit ${code})`);
    failed += 1;
    continue;
  }
  console.log(`=== ${r}: ${summary.passed} passed, ${summary.failed} failed (exit ${code}) ===`);
  if (summary.passed + summary.failed === 0) {
    problems.push(`${r}: ran no test from ${testFiles.length} test files`);
    failed += 1;
    continue;
  }
  passed += summary.passed;
  failed += summary.failed;
  if (code !== 0 && summary.failed === 0) {
    problems.push(`${r}: exited ${code} with no failed test`);
    failed += 1;
  }
}
for (const p of problems) console.error(`error: ${p}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
