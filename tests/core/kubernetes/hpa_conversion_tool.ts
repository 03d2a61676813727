/**
 * Kubernetes' own conversion of HorizontalPodAutoscalers to autoscaling/v2, as references for
 * tests/core/kubernetes/hpa_conversion_differential_test.ts: autoscaling/v1 with
 * k8s.io/kubernetes v1.36.3 (the release tests/e2e/controlplane runs; hpa_conversion_reference/)
 * and autoscaling/v2beta2 with v1.35.4, the last release that has it
 * (hpa_conversion_reference/v2beta2/). Built and cached by tests/support/go_tool.ts; the
 * modules come from the Go module proxy as go.sum pins them.
 *
 *   node --import tsx tests/core/kubernetes/hpa_conversion_tool.ts build   # both, unless cached
 */
import { resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { ensureGoTool, type GoTool } from "../../support/go_tool.ts";

const V1: GoTool = {
  name: "hpa-conversion-v1",
  dir: fileURLToPath(new URL("./hpa_conversion_reference", import.meta.url)),
  sources: ["go.mod", "go.sum", "main.go"],
  what: "Kubernetes 1.36's autoscaling/v1 conversion reference",
};

const V2BETA2: GoTool = {
  name: "hpa-conversion-v2beta2",
  dir: fileURLToPath(new URL("./hpa_conversion_reference/v2beta2", import.meta.url)),
  sources: ["go.mod", "go.sum", "main.go"],
  what: "Kubernetes 1.35's autoscaling/v2beta2 conversion reference",
};

/** The path of the reference for `version` (built unless cached); throws when it cannot be built. */
export function ensureHpaConversionReference(version: "v1" | "v2beta2"): string {
  return ensureGoTool(version === "v1" ? V1 : V2BETA2);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv[2] !== "build") {
    process.stderr.write("usage: hpa_conversion_tool.ts build\n");
    process.exit(2);
  }
  try {
    for (const tool of [V1, V2BETA2]) process.stdout.write(`${ensureGoTool(tool)}\n`);
  } catch (err) {
    process.stderr.write(`hpa-conversion: ${(err as Error).message}\n`);
    process.exit(1);
  }
}
