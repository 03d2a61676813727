/**
 * The binary's entry point: `hpa-metrics-adapter <command> [flags]`. Runs unchanged under Node
 * (tsx or the bundle), Deno and Bun, and as the compiled binary.
 */
import process from "node:process";
import type { Writable } from "node:stream";
import { applyHeapGrowth } from "./runtime/heap_growth.ts";

// The compiled binary's `serve` runs again at once with its heap growth set (heap_growth.ts):
// before anything else is loaded, so that nothing is done twice.
applyHeapGrowth(
  process,
  (line) => process.stderr.write(`${new Date().toISOString()} WARN ${line}\n`),
);
const { programName, runCommandLine } = await import("./cli/commands.ts");

// Writes not yet handed to the OS, and the exit code once the command has returned. We leave
// only when both streams are flushed: a write's callback is the one signal that means "flushed"
// on all three runtimes (Bun calls an empty write's callback at once, with up to megabytes
// still queued, and reports writableLength 0; Node and Deno call it after earlier writes).
let pendingWrites = 0;
let exitCode: number | undefined;

/** Exits with the command's code (given once, when it returns) as soon as nothing is pending. */
function exitWhenFlushed(code?: number): void {
  if (code !== undefined) exitCode = code;
  if (pendingWrites === 0 && exitCode !== undefined) process.exit(exitCode);
}

function write(stream: Writable, text: string): void {
  pendingWrites++;
  // An error (EPIPE: the reader went away) also ends the write: nothing more can be delivered.
  stream.write(text, () => {
    pendingWrites--;
    exitWhenFlushed();
  });
}

// A promise that failed with nobody waiting (a library's background reconnect, say) is logged,
// never fatal: the adapter keeps serving what it has.
process.on("unhandledRejection", (reason) => {
  const text = reason instanceof Error ? (reason.stack ?? reason.message) : String(reason);
  write(
    process.stderr,
    `${new Date().toISOString()} ERROR unhandled rejection (ignored): ${text}\n`,
  );
});

const stopped = new Promise<void>((resolve) => {
  let signalled = false;
  const onSignal = (): void => {
    if (signalled) process.exit(130);
    signalled = true;
    resolve();
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
});

const code = await runCommandLine(process.argv.slice(2), {
  stdout: (text) => write(process.stdout, text),
  stderr: (text) => write(process.stderr, text),
  env: process.env,
  now: () => Date.now(),
  stopped,
  // a kubectl plugin (kubectl-hpa_metrics_adapter) says so in its help
  program: programName([process.argv0, process.argv[1], process.execPath]),
});
// Commands that serve return only after a stop; the others return at once. Either way we are
// done: leave once every write is flushed (pipes are asynchronous), whatever timers remain.
process.exitCode = code;
exitWhenFlushed(code);
