/** The shape of a command of the binary (`plan`, `schedule`, `serve`, ...). */

/** Where a command writes; tests pass buffers, main passes the process streams. */
export interface CommandIO {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Environment variables (read-only). */
  env: Record<string, string | undefined>;
  /** The current time, ms since the epoch (commands that need "now" use this). */
  now(): number;
  /** Resolves when the user asks the process to stop (Ctrl-C, SIGTERM); long-running commands await it. */
  stopped?: Promise<void>;
  /**
   * How the user called the binary, for help and usage texts: `hpa-metrics-adapter` (default),
   * or `kubectl hpa_metrics_adapter` when it runs as a kubectl plugin (see programName).
   */
  program?: string;
}

/** A command: `run` returns the process exit code (0 ok, 1 failure, 2 usage error). */
export interface Command {
  name: string;
  /** One line for `help`. */
  summary: string;
  /** Usage line(s) printed by `help NAME` and on usage errors. */
  usage: string;
  run(args: string[], io: CommandIO): Promise<number>;
}

/** Thrown for bad command lines; main prints the message and the usage and exits 2. */
export class UsageError extends Error {
  override name = "UsageError";
}
