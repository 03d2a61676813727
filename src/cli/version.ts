/** `version`: prints the adapter's version and the runtime it runs on. */
import { runtimeVersion } from "../runtime/version.ts";
import type { Command } from "./command.ts";

/** The adapter's version (kept equal to package.json's by a test). */
export const VERSION = "0.1.0";

/**
 * Name and version of the JavaScript runtime this process runs on (`node 20.20.0`); runtime/
 * finds out, as nothing else may.
 */
export function runtimeName(): string {
  return runtimeVersion();
}

/** The `version` command. */
export const versionCommand: Command = {
  name: "version",
  summary: "print the version",
  usage: "hpa-metrics-adapter version",
  run(args, io) {
    if (args.length > 0) {
      io.stderr(`error: version takes no arguments\nusage: ${versionCommand.usage}\n`);
      return Promise.resolve(2);
    }
    io.stdout(`hpa-metrics-adapter ${VERSION} (${runtimeName()})\n`);
    return Promise.resolve(0);
  },
};
