/** A CommandIO that records what a command writes, for in-process command tests. */
import type { CommandIO } from "../../src/cli/command.ts";

/** A CommandIO with its captured output. */
export interface CapturedIO extends CommandIO {
  out(): string;
  err(): string;
}

/** Capture stdout and stderr; `now` defaults to 2026-01-15T12:00:00Z. */
export function captureIO(
  options: { now?: number; env?: Record<string, string> } = {},
): CapturedIO {
  let out = "";
  let err = "";
  const now = options.now ?? Date.parse("2026-01-15T12:00:00Z");
  return {
    stdout: (t) => void (out += t),
    stderr: (t) => void (err += t),
    env: options.env ?? {},
    now: () => now,
    out: () => out,
    err: () => err,
  };
}
