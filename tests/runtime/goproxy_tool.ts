/**
 * The Go reverse proxy of tests/runtime/reverse_proxy_test.ts (tests/runtime/goproxy/main.go,
 * standard library only): what kube-apiserver's aggregator puts in front of the adapter. Built
 * and cached by tests/support/go_tool.ts.
 *
 *   node --import tsx tests/runtime/goproxy_tool.ts build   # build unless cached, print the path
 */
import { resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { ensureGoTool, type GoTool, goToolMain } from "../support/go_tool.ts";

const GOPROXY: GoTool = {
  name: "goproxy",
  dir: fileURLToPath(new URL("./goproxy", import.meta.url)),
  sources: ["go.mod", "main.go"],
  what: "the test reverse proxy",
};

/** The path of the proxy binary (built unless cached); throws when it cannot be built. */
export function ensureGoproxy(): string {
  return ensureGoTool(GOPROXY);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  goToolMain(GOPROXY, process.argv.slice(2));
}
