import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { runCommandLine } from "../../src/cli/commands.ts";
import { VERSION } from "../../src/cli/version.ts";
import { captureIO } from "./capture_io.ts";

const root = new URL("../../", import.meta.url).pathname;

describe("command line", () => {
  it("keeps VERSION equal to package.json's version", () => {
    const pkg = JSON.parse(readFileSync(`${root}package.json`, "utf8"));
    assert.equal(VERSION, pkg.version);
  });

  it("prints the version and the runtime", async () => {
    const io = captureIO();
    assert.equal(await runCommandLine(["version"], io), 0);
    assert.match(
      io.out(),
      new RegExp(
        `^hpa-metrics-adapter ${VERSION.replaceAll(".", "\\.")} \\((node|deno|bun) [0-9.]+\\)\\n$`,
      ),
    );
  });

  it("exits 2 with a usage line for an unknown command", async () => {
    const io = captureIO();
    assert.equal(await runCommandLine(["frobnicate"], io), 2);
    assert.match(
      io.err(),
      /^error: unknown command "frobnicate"\nusage: hpa-metrics-adapter <command> \[flags\]/,
    );
    assert.equal(io.out(), "");
  });

  it("exits 2 with a usage line when no command is given", async () => {
    const io = captureIO();
    assert.equal(await runCommandLine([], io), 2);
    assert.match(io.err(), /^usage: hpa-metrics-adapter <command>/);
  });

  it("lists every command in help and exits 0", async () => {
    const io = captureIO();
    assert.equal(await runCommandLine(["help"], io), 0);
    assert.match(io.out(), /\n {2}version +print the version\n/);
    assert.match(io.out(), /\n {2}help +show this help/);
  });

  it("exits 2 for an argument the version command does not take", async () => {
    const io = captureIO();
    assert.equal(await runCommandLine(["version", "--bogus"], io), 2);
    assert.match(io.err(), /^error: version takes no arguments\n/);
  });
});

describe("the binary's entry point under each runtime", () => {
  const bin = (name: string): string => `${root}node_modules/.bin/${name}`;
  const runtimes: [string, string, string[]][] = [
    ["node (tsx)", "node", ["--import", "tsx", "src/main.ts"]],
    ["deno", bin("deno"), ["run", "-A", "src/main.ts"]],
    ["bun", bin("bun"), ["src/main.ts"]],
  ];
  for (const [label, cmd, prefix] of runtimes) {
    it(`runs version and rejects unknown commands with exit 2 under ${label}`, () => {
      const ok = spawnSync(cmd, [...prefix, "version"], { cwd: root, encoding: "utf8" });
      assert.equal(ok.status, 0, ok.stderr);
      assert.match(
        ok.stdout,
        new RegExp(`^hpa-metrics-adapter ${VERSION.replaceAll(".", "\\.")} `),
      );
      const bad = spawnSync(cmd, [...prefix, "nope"], { cwd: root, encoding: "utf8" });
      assert.equal(bad.status, 2);
      assert.match(bad.stderr, /^error: unknown command "nope"/);
    });
  }
});
