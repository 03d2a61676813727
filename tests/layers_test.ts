/**
 * The dependency rule of DESIGN.md, checked on the sources: every `src/**\/*.ts` file and
 * `mod.ts`, with their relative imports (static `import`/`export ... from`, `import type`,
 * side-effect imports and dynamic `import("...")` with a literal).
 *
 * Layers, top to bottom:
 *
 *     cli (and src/main.ts) -> engine / controllers / api -> collectors / store / cluster
 *       -> runtime -> core
 *
 * - A file may import files of its own layer (folders of one layer may import one another; an
 *   import cycle between them is still an error) and of any lower layer, never of a higher one.
 * - `runtime/` sits just above `core`: it may import only `runtime/` and `core/`, and every
 *   layer above may import it (the cluster client and the API use its TLS and serving types).
 * - `core/` imports nothing of ours but `core/`, and of the npm packages only zod,
 *   jsonpath-plus, temporal-polyfill and @prometheus-io/lezer-promql, the PromQL grammar
 *   (no `node:` modules either: it does no I/O).
 * - `mod.ts` may import only `core/`.
 * - No import cycle among our files, type-only imports included.
 * - Only `src/runtime/` may check which runtime it runs on (`globalThis.Deno`, `typeof Bun`,
 *   `"Deno" in globalThis`, `process.versions.bun`, `Deno.*` or `Bun.*` APIs ...).
 *
 * The checker is a pure function of an in-memory file set, so that the self-tests below can
 * prove each check fails for the violation it guards against.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** Layers from the bottom: a folder may import its own layer and those with a lower rank. */
const LAYERS: readonly (readonly string[])[] = [
  ["core"],
  ["runtime"],
  ["collectors", "store", "cluster"],
  ["engine", "controllers", "api"],
  ["cli"],
];

/** The layer order as the messages print it. */
const ORDER =
  "cli -> engine / controllers / api -> collectors / store / cluster -> runtime -> core";

/** The npm packages core may import. */
const CORE_PACKAGES: readonly string[] = [
  "zod",
  "jsonpath-plus",
  "temporal-polyfill",
  "@prometheus-io/lezer-promql",
];

/** One import of a file. */
interface ImportRef {
  specifier: string;
  line: number;
}

/** What the checker found, one message per violation, grouped by rule. */
interface LayerReport {
  layers: string[];
  cycles: string[];
  runtime: string[];
}

/**
 * The source with comments blanked (`code`), and also with the text of string and template
 * literals blanked (`bare`) except literals that are exactly a runtime's name, so that a
 * message or comment that mentions Deno is not taken for a check. Newlines are kept, so that
 * offsets map to the same lines.
 */
function scrub(source: string): { code: string; bare: string } {
  let code = "";
  let bare = "";
  const blank = (s: string): string => s.replace(/[^\n]/g, " ");
  // Modes stack: "code" (with the brace depth of a template's `${`) or "template".
  const stack: { mode: "code" | "template"; depth: number }[] = [{ mode: "code", depth: 0 }];
  let lastSignificant = "";
  let lastWord = "";
  let i = 0;
  const n = source.length;
  while (i < n) {
    const top = stack[stack.length - 1];
    const c = source[i];
    if (top.mode === "template") {
      let j = i;
      while (j < n && source[j] !== "`" && !(source[j] === "$" && source[j + 1] === "{")) {
        j += source[j] === "\\" ? 2 : 1;
      }
      const text = source.slice(i, j);
      code += text;
      bare += blank(text);
      if (j >= n) break;
      if (source[j] === "`") {
        code += "`";
        bare += "`";
        stack.pop();
        lastSignificant = "`";
        i = j + 1;
      } else {
        code += "${";
        bare += "${";
        stack.push({ mode: "code", depth: 0 });
        lastSignificant = "{";
        i = j + 2;
      }
      continue;
    }
    if (c === "/" && source[i + 1] === "/") {
      let j = source.indexOf("\n", i);
      if (j < 0) j = n;
      const text = blank(source.slice(i, j));
      code += text;
      bare += text;
      i = j;
      continue;
    }
    if (c === "/" && source[i + 1] === "*") {
      let j = source.indexOf("*/", i + 2);
      j = j < 0 ? n : j + 2;
      const text = blank(source.slice(i, j));
      code += text;
      bare += text;
      i = j;
      continue;
    }
    if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < n && source[j] !== c && source[j] !== "\n") j += source[j] === "\\" ? 2 : 1;
      const literal = source.slice(i, j + 1);
      code += literal;
      bare += /^["'](deno|bun)["']$/i.test(literal) ? literal : c + blank(literal.slice(1, -1)) + c;
      lastSignificant = c;
      i = j + 1;
      continue;
    }
    if (c === "`") {
      code += c;
      bare += c;
      stack.push({ mode: "template", depth: 0 });
      i++;
      continue;
    }
    const regexAllowed = lastSignificant === "" ||
      "(,=:[!&|?{};+-*%<>~^".includes(lastSignificant) ||
      /^(return|typeof|case|do|else|in|of|yield|await|void|delete|throw|new)$/.test(lastWord);
    if (c === "/" && regexAllowed) {
      let j = i + 1;
      let inClass = false;
      while (j < n && source[j] !== "\n") {
        if (source[j] === "\\") j++;
        else if (source[j] === "[") inClass = true;
        else if (source[j] === "]") inClass = false;
        else if (source[j] === "/" && !inClass) break;
        j++;
      }
      const literal = source.slice(i, j + 1);
      code += literal;
      bare += "/" + blank(literal.slice(1, -1)) + "/";
      lastSignificant = "/";
      lastWord = "";
      i = j + 1;
      continue;
    }
    if (c === "{") top.depth++;
    if (c === "}") {
      if (top.depth === 0 && stack.length > 1) {
        stack.pop();
        code += c;
        bare += c;
        i++;
        continue;
      }
      top.depth--;
    }
    code += c;
    bare += c;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (/[\w$]/.test(c)) {
      let j = i + 1;
      while (j < n && /[\w$]/.test(source[j])) j++;
      const word = source.slice(i, j);
      code += source.slice(i + 1, j);
      bare += source.slice(i + 1, j);
      lastWord = word;
      lastSignificant = "a";
      i = j;
      continue;
    }
    lastWord = "";
    lastSignificant = c;
    i++;
  }
  return { code, bare };
}

function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset; i++) if (text[i] === "\n") line++;
  return line;
}

const IMPORT_PATTERNS: readonly RegExp[] = [
  // import x from "..."; import type { X } from "..."; export * from "..."; export { x } from
  /\b(?:import|export)\s+(?:type\s+)?[\w$\s{},*]*?\bfrom\s*(["'])([^"'\n]+)\1/g,
  // import "..." (for its side effects)
  /\bimport\s*(["'])([^"'\n]+)\1/g,
  // import("..."), typeof import("...")
  /\bimport\s*\(\s*(["'`])([^"'`\n$]+)\1\s*\)/g,
];

/** Every import of a file, in source order. */
function importsOf(source: string): ImportRef[] {
  const { code } = scrub(source);
  const found: { at: number; specifier: string }[] = [];
  for (const pattern of IMPORT_PATTERNS) {
    for (const m of code.matchAll(pattern)) {
      found.push({ at: m.index! + m[0].length - m[2].length - 1, specifier: m[2] });
    }
  }
  found.sort((a, b) => a.at - b.at);
  return found.map((f) => ({ specifier: f.specifier, line: lineAt(code, f.at) }));
}

/** The path `specifier` names from `from` (both relative to the repository root). */
function resolve(from: string, specifier: string): string {
  const parts = from.split("/").slice(0, -1);
  for (const segment of specifier.split("/")) {
    if (segment === "." || segment === "") continue;
    if (segment === "..") parts.pop();
    else parts.push(segment);
  }
  return parts.join("/");
}

/** The layer folder of a file: `core`, `cli` ... `mod` for mod.ts, null outside src/. */
function folderOf(path: string): string | null {
  if (path === "mod.ts") return "mod";
  if (path === "src/main.ts") return "cli";
  const m = /^src\/([^/]+)\//.exec(path);
  return m ? m[1] : null;
}

function rankOf(folder: string): number {
  return LAYERS.findIndex((layer) => layer.includes(folder));
}

/** The folders a folder may import, for the messages. */
function allowedFor(folder: string): string {
  const rank = rankOf(folder);
  return LAYERS.slice(0, rank + 1).reverse().flat().join(", ");
}

/** The npm package a bare specifier names (`@scope/name`, `name`), or the `node:` module. */
function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

const RUNTIME_CHECKS: readonly RegExp[] = [
  // Deno.env, Bun.serve, typeof Deno, globalThis.Bun, g.Deno, { Deno?: ... }
  /\b(?:Deno|Bun)\b/g,
  // "Deno" in globalThis, globalThis["Bun"], "bun" in process.versions
  /["'](?:deno|bun)["']\s+in\b/gi,
  /\[\s*["'](?:deno|bun)["']\s*\]/gi,
  // process.versions.bun, process.versions?.deno
  /\bversions\s*\??\.\s*(?:bun|deno)\b/g,
  // navigator.userAgent ("Deno/2.1", "Bun/1.1")
  /\bnavigator\s*\??\.\s*userAgent\b/g,
];

/** Where a file tests which runtime it runs on: `line: text` of each hit. */
function runtimeChecksOf(source: string): { line: number; text: string }[] {
  const { bare } = scrub(source);
  const hits: { at: number; text: string }[] = [];
  for (const pattern of RUNTIME_CHECKS) {
    for (const m of bare.matchAll(pattern)) hits.push({ at: m.index!, text: m[0] });
  }
  hits.sort((a, b) => a.at - b.at);
  const seen = new Set<number>();
  const out: { line: number; text: string }[] = [];
  for (const hit of hits) {
    const line = lineAt(bare, hit.at);
    if (seen.has(line)) continue;
    seen.add(line);
    out.push({ line, text: source.split("\n")[line - 1].trim() });
  }
  return out;
}

/** The cycles of a graph, one per strongly connected component, each from its first file. */
function cyclesOf(graph: Map<string, Set<string>>): string[][] {
  // Tarjan's strongly connected components.
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  const visit = (v: string): void => {
    indices.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of [...(graph.get(v) ?? [])].sort()) {
      if (!indices.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, indices.get(w)!));
      }
    }
    if (low.get(v) === indices.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      components.push(component);
    }
  };
  for (const v of [...graph.keys()].sort()) if (!indices.has(v)) visit(v);

  const cycles: string[][] = [];
  for (const component of components) {
    const members = new Set(component);
    const start = [...members].sort()[0];
    if (members.size === 1 && !graph.get(start)?.has(start)) continue;
    // The shortest way back to the first file, inside the component.
    const previous = new Map<string, string>();
    const queue = [start];
    let found = false;
    for (let q = 0; q < queue.length && !found; q++) {
      const v = queue[q];
      for (const w of [...(graph.get(v) ?? [])].sort()) {
        if (!members.has(w)) continue;
        if (w === start) {
          previous.set(start, v);
          found = true;
          break;
        }
        if (!previous.has(w)) {
          previous.set(w, v);
          queue.push(w);
        }
      }
    }
    const back: string[] = [];
    for (let v = previous.get(start)!; v !== start; v = previous.get(v)!) back.push(v);
    cycles.push([start, ...back.reverse(), start]);
  }
  return cycles.sort((a, b) => a[0].localeCompare(b[0]));
}

/**
 * Checks a file set (path relative to the repository root -> source) against the rule in the
 * doc comment above.
 */
function checkLayers(files: ReadonlyMap<string, string>): LayerReport {
  const report: LayerReport = { layers: [], cycles: [], runtime: [] };
  const graph = new Map<string, Set<string>>();
  for (const [path, source] of [...files].sort(([a], [b]) => a.localeCompare(b))) {
    const folder = folderOf(path);
    const edges = new Set<string>();
    graph.set(path, edges);
    if (folder !== "mod" && folder !== null && rankOf(folder) < 0) {
      report.layers.push(`${path} is in src/${folder}/, which is in no layer (${ORDER})`);
    }
    for (const { specifier, line } of importsOf(source)) {
      const where = `${path}:${line}`;
      if (!specifier.startsWith(".")) {
        if (folder === "core" && !CORE_PACKAGES.includes(packageOf(specifier))) {
          report.layers.push(
            `${where} imports "${specifier}": core may import only the packages ${
              CORE_PACKAGES.join(", ")
            }`,
          );
        } else if (folder === "mod") {
          report.layers.push(`${where} imports "${specifier}": mod.ts may import only core`);
        }
        continue;
      }
      const target = resolve(path, specifier);
      if (files.has(target)) edges.add(target);
      const targetFolder = folderOf(target);
      if (targetFolder === null || targetFolder === "mod") {
        report.layers.push(`${where} imports ${target}, which is outside src/`);
        continue;
      }
      if (folder === "mod") {
        if (targetFolder !== "core") {
          report.layers.push(`${where} imports ${target}: mod.ts may import only core`);
        }
        continue;
      }
      if (folder === null || rankOf(folder) < 0 || rankOf(targetFolder) < 0) continue;
      if (rankOf(targetFolder) > rankOf(folder)) {
        report.layers.push(
          `${where} imports ${target}, up the layer order (${ORDER}): ${folder} may import only ${
            allowedFor(folder)
          }`,
        );
      }
    }
    if (!path.startsWith("src/runtime/")) {
      for (const { line, text } of runtimeChecksOf(source)) {
        report.runtime.push(
          `${path}:${line} checks which runtime it runs on (${text}): only src/runtime/ may`,
        );
      }
    }
  }
  for (const cycle of cyclesOf(graph)) report.cycles.push(`import cycle: ${cycle.join(" -> ")}`);
  return report;
}

const root = fileURLToPath(new URL("..", import.meta.url));

/** `mod.ts` and every `src/**\/*.ts`, by path relative to the repository root. */
function readSources(): Map<string, string> {
  const files = new Map<string, string>();
  files.set("mod.ts", readFileSync(join(root, "mod.ts"), "utf8"));
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(root, dir)).sort()) {
      const path = `${dir}/${entry}`;
      if (statSync(join(root, path)).isDirectory()) walk(path);
      else if (entry.endsWith(".ts")) files.set(path, readFileSync(join(root, path), "utf8"));
    }
  };
  walk("src");
  return files;
}

function assertNone(kind: string, messages: string[]): void {
  if (messages.length > 0) {
    assert.fail(`${messages.length} ${kind}:\n  ${messages.join("\n  ")}`);
  }
}

describe("the layer rule on src/ and mod.ts", () => {
  const files = readSources();
  const report = checkLayers(files);

  it("reads the sources of every layer", () => {
    for (
      const path of ["mod.ts", "src/main.ts", "src/core/kubernetes/quantity.ts", "src/cli/serve.ts"]
    ) {
      assert.ok(files.has(path), path);
    }
  });

  it("has no import that runs up the layer order", () => {
    assertNone("imports against the layer order", report.layers);
  });

  it("has no import cycle", () => {
    assertNone("import cycles", report.cycles);
  });

  it("checks the runtime only in src/runtime/", () => {
    assertNone("runtime checks outside src/runtime/", report.runtime);
  });
});

describe("checkLayers", () => {
  const clean: [string, string][] = [
    ["mod.ts", `export * from "./src/core/a.ts";\n`],
    ["src/core/a.ts", `import { z } from "zod";\nimport type { B } from "./b.ts";\n`],
    ["src/core/b.ts", `import { Temporal } from "temporal-polyfill";\nexport type B = 1;\n`],
    ["src/runtime/serve.ts", `import "./c.ts";\nexport const isDeno = "Deno" in globalThis;\n`],
    ["src/runtime/c.ts", `import type { B } from "../core/b.ts";\n`],
    ["src/cluster/view.ts", `import { isDeno } from "../runtime/serve.ts";\n`],
    ["src/collectors/one.ts", `import type { View } from "../cluster/view.ts";\n`],
    ["src/engine/loop.ts", `import { one } from "../collectors/one.ts";\n`],
    ["src/controllers/w.ts", `import { Loop } from "../engine/loop.ts";\n`],
    [
      "src/cli/serve.ts",
      `const { w } = await import("../controllers/w.ts");\n` +
      `// Deno.exit would be a check; a comment is not\n` +
      `const message = "runs on Deno and Bun, from process.versions.bun";\n` +
      "const t = `on Deno: ${message}`;\n" +
      `const r = /Bun"/;\n`,
    ],
    ["src/main.ts", `import { serve } from "./cli/serve.ts";\n`],
  ];

  it("accepts imports down the layers, within a layer, and runtime checks in runtime/", () => {
    assert.deepEqual(checkLayers(new Map(clean)), { layers: [], cycles: [], runtime: [] });
  });

  it("reports an import up the layer order, of any form, with the file and line", () => {
    const files = new Map(clean);
    files.set(
      "src/engine/loop.ts",
      `import { one } from "../collectors/one.ts";\n` +
        `import type {\n  Flags,\n} from "../cli/flags.ts";\n` +
        `export * from "../controllers/w.ts";\n` +
        `const m = () => import("../cli/serve.ts");\n`,
    );
    files.set("src/cli/flags.ts", "");
    files.set("src/runtime/c.ts", `import type { View } from "../cluster/view.ts";\n`);
    files.set("src/core/b.ts", `import { readFile } from "node:fs/promises";\n`);
    files.set("mod.ts", `export * from "./src/core/a.ts";\nexport * from "./src/cli/serve.ts";\n`);
    files.set("src/tools/x.ts", "");
    const order = "cli -> engine / controllers / api -> collectors / store / cluster -> " +
      "runtime -> core";
    assert.deepEqual(checkLayers(files).layers, [
      `mod.ts:2 imports src/cli/serve.ts: mod.ts may import only core`,
      `src/core/b.ts:1 imports "node:fs/promises": core may import only the packages zod, ` +
      `jsonpath-plus, temporal-polyfill, @prometheus-io/lezer-promql`,
      `src/engine/loop.ts:4 imports src/cli/flags.ts, up the layer order (${order}): engine ` +
      `may import only engine, controllers, api, collectors, store, cluster, runtime, core`,
      `src/engine/loop.ts:6 imports src/cli/serve.ts, up the layer order (${order}): engine ` +
      `may import only engine, controllers, api, collectors, store, cluster, runtime, core`,
      `src/runtime/c.ts:1 imports src/cluster/view.ts, up the layer order (${order}): runtime ` +
      `may import only runtime, core`,
      `src/tools/x.ts is in src/tools/, which is in no layer (${order})`,
    ]);
  });

  it("reports an import of our code from core", () => {
    const files = new Map(clean);
    files.set("src/core/b.ts", `export { store } from "../store/store.ts";\n`);
    assert.deepEqual(checkLayers(files).layers, [
      "src/core/b.ts:1 imports src/store/store.ts, up the layer order (cli -> engine / " +
      "controllers / api -> collectors / store / cluster -> runtime -> core): core may " +
      "import only core",
    ]);
  });

  it("reports each import cycle with its files in order, type-only imports included", () => {
    const files = new Map(clean);
    files.set("src/api/certs.ts", `const m = await import("./issue.ts");\n`);
    files.set("src/api/issue.ts", `import type { Pem } from "./pem.ts";\n`);
    files.set("src/api/pem.ts", `export { certs } from "./certs.ts";\n`);
    files.set("src/core/a.ts", `import "./a.ts";\n`);
    assert.deepEqual(checkLayers(files).cycles, [
      "import cycle: src/api/certs.ts -> src/api/issue.ts -> src/api/pem.ts -> src/api/certs.ts",
      "import cycle: src/core/a.ts -> src/core/a.ts",
    ]);
  });

  it("reports a runtime check outside src/runtime/, one line each", () => {
    const files = new Map(clean);
    files.set(
      "src/cli/version.ts",
      [
        `const g = globalThis as { Deno?: { version: { deno: string } } };`,
        `if (g.Deno) console.log(g.Deno.version.deno);`,
        `const bun = typeof Bun !== "undefined";`,
        `const deno = "Deno" in globalThis;`,
        `const other = globalThis["Bun"];`,
        `const v = process.versions.bun ?? process.versions?.deno;`,
        `const agent = navigator.userAgent;`,
        `Deno.exit(1);`,
      ].join("\n"),
    );
    assert.deepEqual(checkLayers(files).runtime, [
      "src/cli/version.ts:1 checks which runtime it runs on (const g = globalThis as { Deno?: " +
      "{ version: { deno: string } } };): only src/runtime/ may",
      "src/cli/version.ts:2 checks which runtime it runs on (if (g.Deno) " +
      "console.log(g.Deno.version.deno);): only src/runtime/ may",
      'src/cli/version.ts:3 checks which runtime it runs on (const bun = typeof Bun !== "undefined";): only src/runtime/ may',
      'src/cli/version.ts:4 checks which runtime it runs on (const deno = "Deno" in globalThis;): only src/runtime/ may',
      'src/cli/version.ts:5 checks which runtime it runs on (const other = globalThis["Bun"];): only src/runtime/ may',
      "src/cli/version.ts:6 checks which runtime it runs on (const v = process.versions.bun ?? " +
      "process.versions?.deno;): only src/runtime/ may",
      "src/cli/version.ts:7 checks which runtime it runs on (const agent = navigator.userAgent;): only src/runtime/ may",
      "src/cli/version.ts:8 checks which runtime it runs on (Deno.exit(1);): only src/runtime/ may",
    ]);
  });
});
