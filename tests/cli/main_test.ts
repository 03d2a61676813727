import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import type { Readable } from "node:stream";
import { runCommandLine } from "../../src/cli/commands.ts";
import { captureIO } from "./capture_io.ts";

const root = new URL("../../", import.meta.url).pathname;

const HPAS = 2000;
const FILES = 4;

/** An HPA with two Pods metrics: two rows of `plan -o json` (about 580 bytes). */
function hpa(i: number): string {
  return `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web-${i}
  namespace: shop-${i % 7}
  annotations:
    metric-config.pods.rps.json-path/json-key: "$.http.rps"
    metric-config.pods.rps.json-path/port: "9090"
    metric-config.pods.latency.json-path/json-key: "$.http.p99"
    metric-config.pods.latency.json-path/path: /stats
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web-${i}}
  maxReplicas: 10
  metrics:
    - type: Pods
      pods:
        metric: {name: rps}
        target: {type: AverageValue, averageValue: "100"}
    - type: Pods
      pods:
        metric: {name: latency}
        target: {type: AverageValue, averageValue: "250m"}
`;
}

/** An HPA that plan rejects with one line on stderr. */
function invalidHpa(i: number): string {
  return `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: broken-${i}, namespace: jobs}
spec:
  scaleTargetRef: {kind: Deployment, name: broken-${i}}
  metrics: []
`;
}

/** The entry point run by the runtime this test runs on, as `src/main.ts` is run in development. */
function mainCommand(): [string, string[]] {
  const g = globalThis as { Deno?: unknown; Bun?: unknown };
  if (g.Deno) return [process.execPath, ["run", "-A", "src/main.ts"]];
  if (g.Bun) return [process.execPath, ["src/main.ts"]];
  return [process.execPath, ["--import", "tsx", "src/main.ts"]];
}

interface Outcome {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

const children = new Set<ChildProcess>();

/**
 * Reads a pipe the way a busy consumer does: a pause after each 64 KiB (a Linux pipe's buffer).
 * The pipe stays full while the child writes, so a child that exits with data still queued
 * loses it.
 */
function readSlowly(stream: Readable, chunks: Buffer[]): void {
  let sincePause = 0;
  stream.on("data", (chunk: Buffer) => {
    chunks.push(chunk);
    sincePause += chunk.length;
    if (sincePause < 64 * 1024) return;
    sincePause = 0;
    stream.pause();
    setTimeout(() => stream.resume(), 40);
  });
}

/** Runs the CLI with `args`, reading stdout and stderr slowly, until it exits and both close. */
function runSlowly(args: string[]): Promise<Outcome> {
  const [cmd, prefix] = mainCommand();
  const child = spawn(cmd, [...prefix, ...args], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  children.add(child);
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  readSlowly(child.stdout!, out);
  readSlowly(child.stderr!, err);
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => {
      children.delete(child);
      resolve({
        code,
        signal,
        stdout: Buffer.concat(out).toString("utf8"),
        stderr: Buffer.concat(err).toString("utf8"),
      });
    });
  });
}

let dir = "";
let valid = "";
let invalid = "";

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "main-test-"));
  valid = join(dir, "valid");
  invalid = join(dir, "invalid");
  await mkdir(valid);
  await mkdir(invalid);
  const per = HPAS / FILES;
  for (let f = 0; f < FILES; f++) {
    const docs = Array.from({ length: per }, (_, k) => hpa(f * per + k));
    await writeFile(join(valid, `hpas-${f}.yaml`), docs.join("---\n"));
  }
  await writeFile(
    join(invalid, "broken.yaml"),
    Array.from({ length: HPAS }, (_, i) => invalidHpa(i)).join("---\n"),
  );
});

after(async () => {
  for (const child of children) child.kill("SIGKILL");
  await rm(dir, { recursive: true, force: true });
});

describe("the entry point's output to a slow pipe", () => {
  it("delivers all of plan -o json for 2,000 HPAs (over 1 MiB) before it exits 0", async () => {
    const args = ["plan", "-f", valid, "-o", "json"];
    const expected = captureIO();
    assert.equal(await runCommandLine(args, expected), 0);
    assert.ok(Buffer.byteLength(expected.out()) > 1024 * 1024, "the output must exceed 1 MiB");

    const run = await runSlowly(args);
    assert.equal(run.stderr, "");
    assert.equal(Buffer.byteLength(run.stdout), Buffer.byteLength(expected.out()));
    assert.equal(JSON.parse(run.stdout).length, 2 * HPAS);
    assert.equal(run.stdout, expected.out());
    assert.deepEqual([run.code, run.signal], [0, null]);
  });

  it("delivers all of stdout and stderr and keeps exit code 1 when HPAs are invalid", async () => {
    const args = ["plan", "-f", valid, "-f", invalid, "-o", "json"];
    const expected = captureIO();
    assert.equal(await runCommandLine(args, expected), 1);
    assert.equal(expected.err().split("\n").length - 1, HPAS);

    const run = await runSlowly(args);
    assert.equal(Buffer.byteLength(run.stdout), Buffer.byteLength(expected.out()));
    assert.equal(JSON.parse(run.stdout).length, 2 * HPAS);
    assert.equal(run.stderr, expected.err());
    assert.deepEqual([run.code, run.signal], [1, null]);
  });
});
