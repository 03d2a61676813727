/**
 * The binary's entry point: `hpa-metrics-adapter <command> [flags]`. Runs unchanged under Node
 * (tsx or the bundle), Deno and Bun, and as the compiled binary.
 */
import process from "node:process";
import { runCommandLine } from "./cli/commands.ts";

// A promise that failed with nobody waiting (a library's background reconnect, say) is logged,
// never fatal: the adapter keeps serving what it has.
process.on("unhandledRejection", (reason) => {
  const text = reason instanceof Error ? (reason.stack ?? reason.message) : String(reason);
  process.stderr.write(
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
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
  env: process.env,
  now: () => Date.now(),
  stopped,
});
// Commands that serve return only after a stop; the others return at once. Either way we are
// done: flush stdout (a pipe is asynchronous under Node) and leave, whatever timers remain.
process.exitCode = code;
process.stdout.write("", () => process.exit(code));
