/**
 * How far JavaScriptCore lets the heap grow past what is live before it collects, for the
 * compiled binary's `serve` (Bun). The other runtimes, and every other command, are left as
 * they are.
 *
 * JavaScriptCore reads its options from `BUN_JSC_*` environment variables once, before any
 * JavaScript runs, so the binary sets the ones it needs by executing itself again (same PID,
 * same arguments, same Bun flags) with the variables added:
 * - `heapGrowthMaxIncrease`: on machines with 16 GB of RAM or more, Bun lets a small heap grow
 *   to about three times what was live after a full collection before the next one (Bun sets
 *   this option to 2: the growth factor is 1 + 2 e^(-heap/RAM)). We set 0.4: 1.4 times.
 * - `minEdenToOldGenerationRatio`: after a young (eden) collection, JavaScriptCore makes the
 *   next one full when the room left for young objects is under this share of the heap's
 *   limit (default 1/3). With a growth factor of 1.5 or less that is every time, and full
 *   collections at the serving rows' request rates cost up to 40% of their throughput. We set
 *   0.2: the heap reaches (1.4 - 1) / 0.2 = 2 times what was live before a full collection.
 *
 * Measured on the binary at 2,000 HPAs, one run each (2026-11-28): the cluster row's full read
 * (`--only cluster`: RSS median while the HPA controller's 4,000 URLs are read every 15 s,
 * budget 128 MiB), the serving rows (`--only serving`: x floor for object / pods / external,
 * budget 0.8), and RSS medians at rest / during the same read in file mode with a front-proxy
 * CA:
 *
 * | heapGrowthMaxIncrease, minEdenToOldGenerationRatio | full read | serving | file mode |
 * | --- | --- | --- | --- |
 * | 2, 1/3 (Bun's) | 146.6 | 0.92 / 0.91 / 0.82 | 126.5 / 138.5 |
 * | 1.0, 1/3 | | 0.95 / 0.93 / 0.89 | 124.9 / 137.1 |
 * | 0.5, 0.1 | 130.1 | 0.90 / 0.84 / 0.91 | 115.4 / 125.8 |
 * | 0.5, 0.2 | 126.5 | 0.96 / 0.84 / 0.85 | |
 * | **0.4, 0.2** | 125.1 | 0.89 / 0.92 / 0.80 | |
 * | 0.3, 0.1 | | 0.79 / 0.79 / 0.75 | 110.6 / 124.4 |
 * | 0.3, 1/3 (every collection full) | 122.3 | 0.56 / 0.58 / 0.56 | 111.0 / 121.1 |
 *
 * A variable that is already set is left alone, whatever its value: that is how an operator
 * picks another (`BUN_JSC_heapGrowthMaxIncrease=2 BUN_JSC_minEdenToOldGenerationRatio=0.3333`
 * are Bun's own). These are JavaScriptCore's options, not a stable interface of Bun's: Bun
 * exits at its start on one it does not know, which the image test (tests/deploy) would show.
 *
 * @module
 */

/** The JavaScriptCore options the compiled binary's `serve` runs with, as Bun reads them. */
export const HEAP_GROWTH_OPTIONS: Readonly<Record<string, string>> = {
  BUN_JSC_heapGrowthMaxIncrease: "0.4",
  BUN_JSC_minEdenToOldGenerationRatio: "0.2",
};

/** What the process is, as {@linkcode heapGrowthReexec} needs it. */
export interface ProcessFacts {
  /** `process.argv`: on a compiled Bun binary, `["bun", "/$bunfs/root/<name>", ...args]`. */
  argv: readonly string[];
  /** `process.execPath`: the binary's own file. */
  execPath: string;
  env: Readonly<Record<string, string | undefined>>;
  /** `Bun.main` (absent off Bun): `/$bunfs/root/<name>` (`B:/~BUN/root/...` on Windows) when compiled. */
  bunMain?: string;
}

/** What to execute instead of going on: `execve(file, args, env)`. */
export interface Reexec {
  file: string;
  args: string[];
  env: Record<string, string>;
}

/** True when the program runs as a `bun build --compile` binary. */
export function isCompiledBun(bunMain: string | undefined): boolean {
  return bunMain !== undefined &&
    (bunMain.startsWith("/$bunfs/") || /^[A-Za-z]:[\\/]~BUN[\\/]/.test(bunMain));
}

/**
 * The execution that gives the compiled binary's `serve` its heap growth, or null when none is
 * needed: not the compiled binary, not `serve`, or every variable already set.
 *
 * @example
 * ```ts
 * heapGrowthReexec({
 *   argv: ["bun", "/$bunfs/root/hpa-metrics-adapter", "serve", "--demo"],
 *   execPath: "/hpa-metrics-adapter",
 *   env: { PATH: "/bin" },
 *   bunMain: "/$bunfs/root/hpa-metrics-adapter",
 * });
 * // {
 * //   file: "/hpa-metrics-adapter",
 * //   args: ["/hpa-metrics-adapter", "serve", "--demo"],
 * //   env: {
 * //     PATH: "/bin",
 * //     BUN_JSC_heapGrowthMaxIncrease: "0.4",
 * //     BUN_JSC_minEdenToOldGenerationRatio: "0.2",
 * //   },
 * // }
 * ```
 */
export function heapGrowthReexec(facts: ProcessFacts): Reexec | null {
  if (!isCompiledBun(facts.bunMain)) return null;
  const args = facts.argv.slice(2);
  if (args[0] !== "serve") return null;
  const missing = Object.entries(HEAP_GROWTH_OPTIONS).filter(([name]) =>
    facts.env[name] === undefined
  );
  if (missing.length === 0) return null;
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(facts.env)) {
    if (value !== undefined) env[name] = value;
  }
  for (const [name, value] of missing) env[name] = value;
  return { file: facts.execPath, args: [facts.execPath, ...args], env };
}

/** The parts of `process` {@linkcode applyHeapGrowth} uses. */
export interface ExecveProcess {
  argv: string[];
  execPath: string;
  env: Record<string, string | undefined>;
  execve?: (file: string, args: string[], env: Record<string, string>) => never;
}

/**
 * Executes the compiled binary's `serve` again with its heap growth set, when
 * {@linkcode heapGrowthReexec} says so; returns only when nothing was executed. When the
 * runtime cannot (no `process.execve`, or it fails), says so on `warn` and goes on as it is.
 * `bunMain` is `Bun.main` (the default; absent off Bun).
 */
export function applyHeapGrowth(
  proc: ExecveProcess,
  warn: (line: string) => void,
  bunMain: string | undefined = (globalThis as { Bun?: { main?: string } }).Bun?.main,
): void {
  const plan = heapGrowthReexec({
    argv: proc.argv,
    execPath: proc.execPath,
    env: proc.env,
    bunMain,
  });
  if (plan === null) return;
  const set = Object.keys(plan.env).filter((name) => proc.env[name] === undefined)
    .map((name) => `${name}=${plan.env[name]}`).join(" ");
  const why = `could not run again with ${set}`;
  if (typeof proc.execve !== "function") {
    warn(`${why}: this Bun has no process.execve; going on with its default heap growth`);
    return;
  }
  try {
    proc.execve(plan.file, plan.args, plan.env);
  } catch (e) {
    warn(
      `${why}: ${
        e instanceof Error ? e.message : String(e)
      }; going on with its default heap growth`,
    );
  }
}
