import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { applyHeapGrowth, heapGrowthReexec, isCompiledBun } from "../../src/runtime/heap_growth.ts";

const MAIN = "/$bunfs/root/hpa-metrics-adapter";
const ARGV = ["bun", MAIN, "serve", "--manifests", "/work/hpas.yaml", "--secure-port=6443"];

describe("heapGrowthReexec", () => {
  it("runs the compiled binary's serve again with the variable added, same arguments", () => {
    assert.deepEqual(
      heapGrowthReexec({
        argv: ARGV,
        execPath: "/hpa-metrics-adapter",
        env: { PATH: "/bin", HOME: "/home/nonroot", UNSET: undefined },
        bunMain: MAIN,
      }),
      {
        file: "/hpa-metrics-adapter",
        args: [
          "/hpa-metrics-adapter",
          "serve",
          "--manifests",
          "/work/hpas.yaml",
          "--secure-port=6443",
        ],
        env: {
          PATH: "/bin",
          HOME: "/home/nonroot",
          BUN_JSC_heapGrowthMaxIncrease: "0.4",
          BUN_JSC_minEdenToOldGenerationRatio: "0.2",
        },
      },
    );
  });

  it("leaves a variable the operator set alone, whatever its value (empty too)", () => {
    const plan = (env: Record<string, string>) =>
      heapGrowthReexec({ argv: ARGV, execPath: "/hpa-metrics-adapter", env, bunMain: MAIN })
        ?.env ?? null;
    assert.deepEqual(plan({ BUN_JSC_heapGrowthMaxIncrease: "2" }), {
      BUN_JSC_heapGrowthMaxIncrease: "2",
      BUN_JSC_minEdenToOldGenerationRatio: "0.2",
    });
    assert.deepEqual(plan({ BUN_JSC_minEdenToOldGenerationRatio: "" }), {
      BUN_JSC_heapGrowthMaxIncrease: "0.4",
      BUN_JSC_minEdenToOldGenerationRatio: "",
    });
    assert.equal(
      plan({ BUN_JSC_heapGrowthMaxIncrease: "1", BUN_JSC_minEdenToOldGenerationRatio: "0.2" }),
      null,
    );
  });

  it("does nothing for the other commands, or off the compiled binary", () => {
    const facts = { execPath: "/hpa-metrics-adapter", env: {} };
    for (const command of ["plan", "version", "schedule", "Serve"]) {
      assert.equal(
        heapGrowthReexec({ ...facts, argv: ["bun", MAIN, command], bunMain: MAIN }),
        null,
      );
    }
    assert.equal(heapGrowthReexec({ ...facts, argv: ["bun", MAIN], bunMain: MAIN }), null);
    // bun src/main.ts serve, node, deno
    for (const bunMain of ["/work/main/src/main.ts", undefined]) {
      assert.equal(
        heapGrowthReexec({ ...facts, argv: ["bun", "/work/main/src/main.ts", "serve"], bunMain }),
        null,
      );
    }
  });

  it("knows the compiled binary's module root on Linux and Windows only", () => {
    assert.equal(isCompiledBun("/$bunfs/root/x"), true);
    assert.equal(isCompiledBun("B:/~BUN/root/x.exe"), true);
    assert.equal(isCompiledBun("B:\\~BUN\\root\\x.exe"), true);
    assert.equal(isCompiledBun("/tmp/$bunfs/root/x"), false);
    assert.equal(isCompiledBun(undefined), false);
  });
});

describe("applyHeapGrowth", () => {
  const proc = (execve?: (file: string, args: string[], env: Record<string, string>) => never) => ({
    argv: ARGV,
    execPath: "/hpa-metrics-adapter",
    env: { PATH: "/bin" },
    execve,
  });
  /** An execve that throws `message`. */
  const failing = (message: string) =>
    (() => {
      throw new Error(message);
    }) as never;

  it("executes the plan, and warns nothing", () => {
    const calls: unknown[] = [];
    const warnings: string[] = [];
    applyHeapGrowth(
      proc(
        ((file: string, args: string[], env: Record<string, string>) => {
          calls.push({ file, args, env });
        }) as never,
      ),
      (l) => warnings.push(l),
      MAIN,
    );
    assert.deepEqual(calls, [{
      file: "/hpa-metrics-adapter",
      args: ["/hpa-metrics-adapter", ...ARGV.slice(2)],
      env: {
        PATH: "/bin",
        BUN_JSC_heapGrowthMaxIncrease: "0.4",
        BUN_JSC_minEdenToOldGenerationRatio: "0.2",
      },
    }]);
    assert.deepEqual(warnings, []);
  });

  it("goes on with a warning when execve fails or is missing", () => {
    const warnings: string[] = [];
    applyHeapGrowth(
      proc(failing("EACCES: permission denied, execve")),
      (l) => warnings.push(l),
      MAIN,
    );
    applyHeapGrowth(
      { ...proc(), env: { PATH: "/bin", BUN_JSC_heapGrowthMaxIncrease: "2" } },
      (l) => warnings.push(l),
      MAIN,
    );
    assert.deepEqual(warnings, [
      "could not run again with BUN_JSC_heapGrowthMaxIncrease=0.4 BUN_JSC_minEdenToOldGenerationRatio=0.2: EACCES: permission denied, execve; going on with its default heap growth",
      "could not run again with BUN_JSC_minEdenToOldGenerationRatio=0.2: this Bun has no process.execve; going on with its default heap growth",
    ]);
  });

  it("does nothing when not compiled (this test's own runtime)", () => {
    const warnings: string[] = [];
    applyHeapGrowth(
      proc(failing("must not be called")),
      (l) => warnings.push(l),
      undefined,
    );
    assert.deepEqual(warnings, []);
  });
});
