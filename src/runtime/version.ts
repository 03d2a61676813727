/** The name and version of the runtime this process runs on, for `version` and /version. */
import { runtimeName } from "./serve.ts";

/**
 * `node 20.20.0`, `deno 2.9.6` or `bun 1.4.5`.
 *
 * @example
 * ```ts
 * runtimeVersion(); // "node 20.20.0" under Node 20.20
 * ```
 */
export function runtimeVersion(): string {
  const name = runtimeName();
  const g = globalThis as { Deno?: { version: { deno: string } }; Bun?: { version: string } };
  if (name === "deno" && g.Deno) return `deno ${g.Deno.version.deno}`;
  if (name === "bun" && g.Bun) return `bun ${g.Bun.version}`;
  return `node ${process.versions.node}`;
}
