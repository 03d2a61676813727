/**
 * The command table of the binary and the dispatcher that runs one command line. Runtime-blind:
 * `src/main.ts` hands it the arguments and the process's streams.
 */
import { type Command, type CommandIO, UsageError } from "./command.ts";
import { type CommandInfo, EXPLAIN_INFO, PLAN_INFO, SCHEDULE_INFO } from "./command_info.ts";
import { serveCommand } from "./serve.ts";
import { versionCommand } from "./version.ts";

/** A command whose code loads when it runs (`serve`, the binary's main use, does not carry it). */
function onDemand(info: CommandInfo, load: () => Promise<Command>): Command {
  return { ...info, run: async (args, io) => (await load()).run(args, io) };
}

/** Every command, in the order `help` lists them. */
export const COMMANDS: Command[] = [
  serveCommand,
  onDemand(PLAN_INFO, async () => (await import("./plan.ts")).planCommand),
  onDemand(EXPLAIN_INFO, async () => (await import("./explain.ts")).explainCommand),
  onDemand(SCHEDULE_INFO, async () => (await import("./schedule.ts")).scheduleCommand),
  versionCommand,
];

const PROGRAM = "hpa-metrics-adapter";

/**
 * The program name to show: `kubectl NAME` when one of the paths the process was started as
 * (argv[0], the executable, the script) is a kubectl plugin's `kubectl-NAME` (kubectl runs
 * `kubectl NAME ARGS...` as `kubectl-NAME ARGS...`, dashes in NAME written as underscores),
 * else `hpa-metrics-adapter`.
 *
 * @example
 * ```ts
 * programName(["/usr/local/bin/kubectl-hpa_metrics_adapter"]); // "kubectl hpa_metrics_adapter"
 * ```
 */
export function programName(paths: readonly (string | undefined)[]): string {
  for (const path of paths) {
    if (!path) continue;
    const base = path.split(/[\\/]/).pop()!.replace(/\.(exe|[cm]?[jt]s)$/, "");
    const m = /^kubectl-(.+)$/.exec(base);
    if (m) return `kubectl ${m[1]}`;
  }
  return PROGRAM;
}

/** `text` with the program's name as the user called it. */
function named(text: string, program: string): string {
  return program === PROGRAM ? text : text.replaceAll(`${PROGRAM} `, `${program} `);
}

function usageText(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length), 4);
  const lines = COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
  return [
    "usage: hpa-metrics-adapter <command> [flags]",
    "",
    "commands:",
    ...lines,
    `  ${"help".padEnd(width)}  show this help, or a command's usage (help COMMAND)`,
    "",
  ].join("\n");
}

/** Runs one command line; returns the exit code (0 ok, 1 failure, 2 usage error). */
export async function runCommandLine(argv: string[], io: CommandIO): Promise<number> {
  const program = io.program ?? PROGRAM;
  const plain = io;
  // help and usage texts name the program as called (a kubectl plugin)
  io = program === PROGRAM ? io : {
    ...io,
    stdout: (text) => plain.stdout(named(text, program)),
    stderr: (text) => plain.stderr(named(text, program)),
  };
  return await runNamed(argv, io, plain);
}

async function runNamed(argv: string[], io: CommandIO, plain: CommandIO): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    const topic = name === "help" ? rest[0] : undefined;
    if (topic !== undefined) {
      const cmd = COMMANDS.find((c) => c.name === topic);
      if (!cmd) {
        io.stderr(`error: unknown command "${topic}"\n${usageText()}`);
        return 2;
      }
      io.stdout(`${cmd.summary}\n\nusage: ${cmd.usage}\n`);
      return 0;
    }
    if (name === undefined) {
      io.stderr(usageText());
      return 2;
    }
    io.stdout(usageText());
    return 0;
  }
  const cmd = COMMANDS.find((c) => c.name === name);
  if (!cmd) {
    io.stderr(`error: unknown command "${name}"\n${usageText()}`);
    return 2;
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    io.stdout(`${cmd.summary}\n\nusage: ${cmd.usage}\n`);
    return 0;
  }
  try {
    return await cmd.run(rest, plain);
  } catch (e) {
    if (e instanceof UsageError) {
      io.stderr(`error: ${e.message}\nusage: ${cmd.usage}\n`);
      return 2;
    }
    io.stderr(`error: ${(e as Error).message}\n`);
    return 1;
  }
}
