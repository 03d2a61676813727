/**
 * prometheus-adapter v0.12.0's config loading, naming and query rendering, as a reference for
 * tests/core/prometheus_adapter/differential_test.ts (tests/core/prometheus_adapter/reference).
 * Built and cached by tests/support/go_tool.ts; the modules come from the Go module proxy as
 * go.sum pins them.
 *
 *   node --import tsx tests/core/prometheus_adapter/reference_tool.ts build   # build unless cached, print the path
 */
import { resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { ensureGoTool, type GoTool, goToolMain } from "../../support/go_tool.ts";

const REFERENCE: GoTool = {
  name: "prometheus-adapter-naming",
  dir: fileURLToPath(new URL("./reference", import.meta.url)),
  sources: ["go.mod", "go.sum", "main.go", "resource.go", "discovery.go", "restmapper.go"],
  what: "prometheus-adapter's naming reference",
};

/** The path of the reference binary (built unless cached); throws when it cannot be built. */
export function ensurePrometheusAdapterReference(): string {
  return ensureGoTool(REFERENCE);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  goToolMain(REFERENCE, process.argv.slice(2));
}
