/**
 * Starts the real SQS emulator `fauxqs` (npm devDependency, `node_modules/.bin/fauxqs`) as a
 * child process for tests, on a port it picks itself (`FAUXQS_PORT=0`), and stops it. It listens
 * on every interface; tests talk to it on 127.0.0.1 only. Fails loudly when it is not installed
 * or does not start.
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** A running emulator. */
export interface FauxqsServer {
  /** `http://127.0.0.1:PORT`. */
  endpoint: string;
  port: number;
  pid: number;
  stop(): Promise<void>;
}

const CLI = fileURLToPath(new URL("../../node_modules/fauxqs/dist/cli.js", import.meta.url));

/** Start fauxqs; resolves once it listens (within `timeoutMs`, default 15 s). */
export function startFauxqs(timeoutMs = 15_000): Promise<FauxqsServer> {
  if (!existsSync(CLI)) {
    throw new Error(`fauxqs is not installed (${CLI} missing): run npm install`);
  }
  // fauxqs 1.x runs on Node 20; whatever runtime runs the tests, run it under node.
  const child: ChildProcess = spawn("node", [CLI], {
    env: { ...process.env, FAUXQS_PORT: "0", FAUXQS_LOGGER: "true" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const stop = (): Promise<void> =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) {
        resolve();
        return;
      }
      const kill = setTimeout(() => child.kill("SIGKILL"), 3000);
      child.once("exit", () => {
        clearTimeout(kill);
        resolve();
      });
      child.kill("SIGTERM");
    });
  return new Promise<FauxqsServer>((resolve, reject) => {
    let done = false;
    const fail = (why: string): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      stop().then(() => reject(new Error(`fauxqs did not start: ${why}\n${output.slice(-2000)}`)));
    };
    const timer = setTimeout(() => fail(`no "listening" line within ${timeoutMs} ms`), timeoutMs);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString("utf8");
      // Fastify's logger: {"msg":"Server listening at http://127.0.0.1:PORT"}.
      const m = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(output);
      if (m && !done) {
        done = true;
        clearTimeout(timer);
        // Drain the request log so the pipe never fills up.
        child.stdout?.removeListener("data", onData);
        child.stdout?.resume();
        const port = Number(m[1]);
        resolve({ endpoint: `http://127.0.0.1:${port}`, port, pid: child.pid!, stop });
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", (c: Buffer) => {
      output += c.toString("utf8");
    });
    child.once("error", (e) => fail(e.message));
    child.once("exit", (code, signal) => fail(`exited with ${code ?? signal}`));
  });
}
