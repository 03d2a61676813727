/**
 * robfig/cron v3.0.1 (the cron parser KEDA v2.20.2 vendors), as a reference for
 * tests/core/keda/cron_differential_test.ts (tests/core/keda/robfig/main.go). Built and cached by
 * tests/support/go_tool.ts; the module comes from the Go module proxy as go.sum pins it.
 *
 *   node --import tsx tests/core/keda/robfig_tool.ts build   # build unless cached, print the path
 */
import { resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { ensureGoTool, type GoTool, goToolMain } from "../../support/go_tool.ts";

const ROBFIG: GoTool = {
  name: "robfig",
  dir: fileURLToPath(new URL("./robfig", import.meta.url)),
  sources: ["go.mod", "go.sum", "main.go"],
  what: "robfig/cron's reference",
};

/** The path of the reference binary (built unless cached); throws when it cannot be built. */
export function ensureRobfig(): string {
  return ensureGoTool(ROBFIG);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  goToolMain(ROBFIG, process.argv.slice(2));
}
