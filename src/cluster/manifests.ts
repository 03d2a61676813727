/**
 * Reads Kubernetes manifests: YAML (multi-document) or JSON files, or folders of them.
 *
 * js-yaml is used directly (it is what @kubernetes/client-node's loader wraps): that loader
 * turns documents into typed model classes (timestamps become Date objects, unknown kinds are
 * mangled) and throws on an empty document, while we want the plain JSON shape the API serves.
 * Where the runtime has a native YAML parser (Bun), documents go through it instead, and a text
 * it rejects is parsed again with js-yaml for js-yaml's error message. Both keep the last of
 * duplicate keys, as JSON.parse and the API server do.
 */
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { loadAll } from "js-yaml";
import { settleStringMaps } from "../core/dictionary.ts";
import { nativeYamlParser } from "../runtime/yaml.ts";
import type { KubeObject } from "./types.ts";

/** A manifest object and the file it came from. */
export interface ManifestObject {
  object: KubeObject;
  source: string;
}

/** The result of reading manifests: what was read, and what could not be (per file). */
export interface ManifestReadResult {
  objects: ManifestObject[];
  errors: string[];
}

/** A `---` document marker line (optionally followed by spaces and a comment). */
const DOCUMENT_MARKER = /^---[ \t]*(?:#[^\n]*)?(?:\r?\n|$)/m;

/**
 * A text that is one JSON object or array, parsed with `JSON.parse`; undefined for any other
 * text (YAML, or JSON with a syntax error, left to js-yaml and its error messages). JSON is
 * YAML, but js-yaml builds the same objects with far more garbage: measured under Bun on
 * 2,000 HPAs and their schedules as two JSON Lists (2.5 MB), reading them (and copying the
 * objects, as the file source does) adds 18 MiB of RSS in 70 ms with `JSON.parse`, 77 MiB in
 * 450 ms with js-yaml.
 */
function parseJson(text: string): unknown {
  const first = /\S/.exec(text)?.[0];
  if (first !== "{" && first !== "[") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** js-yaml's options: the last of duplicate keys wins (as with JSON.parse), no error. */
const JS_YAML_OPTIONS = { json: true };

/** One document's values: none for an empty text, else the one document. */
type DocumentParser = (text: string) => unknown[];

const nativeParser = nativeYamlParser();

/** The documents of a text between two markers, by js-yaml. */
const jsYamlDocuments: DocumentParser = (text) => loadAll(text, null, JS_YAML_OPTIONS) as unknown[];

/**
 * The documents of a text between two markers: the native parser's document, or js-yaml's
 * when there is no native parser or the text still holds a marker line with content after it
 * (`--- {a: 1}`), which the native parser would read as a list of documents.
 */
const parseDocument: DocumentParser = nativeParser
  ? (text) => {
    if (/^---/m.test(text)) return jsYamlDocuments(text);
    const doc = nativeParser(text);
    return doc === null || doc === undefined ? [] : [doc];
  }
  : jsYamlDocuments;

/**
 * The documents of a YAML stream, as js-yaml's `loadAll` returns them. A stream of many
 * documents is parsed one document at a time: measured on 2,000 HPAs and their schedules
 * (3 MB), `loadAll` over whole files peaks at 70 MiB more RSS under Bun, one document at a
 * time at 35 MiB. Streams with directives or `...` end markers, and any text that fails to
 * parse that way, are parsed whole by js-yaml, so results and error messages are those of
 * `loadAll`.
 */
function loadDocuments(text: string): unknown[] {
  const json = parseJson(text);
  if (json !== undefined) return [json];
  const whole = (): unknown[] => loadAll(text, null, JS_YAML_OPTIONS) as unknown[];
  if (/^(?:%|\.\.\.(?:\s|$))/m.test(text)) return whole();
  try {
    const parts = text.split(new RegExp(DOCUMENT_MARKER.source, "gm"));
    const docs = parseDocument(parts[0]);
    for (let i = 1; i < parts.length; i++) {
      const part = parseDocument(parts[i]);
      // A marker always starts a document, an empty one (null) if nothing follows it.
      if (part.length === 0) docs.push(null);
      else for (const d of part) docs.push(d);
    }
    return docs;
  } catch {
    return whole();
  }
}

/**
 * Parse one YAML/JSON text into Kubernetes objects. `List` objects (kind ending in `List`) are
 * flattened; empty documents are skipped. Throws with the source name on a syntax error or a
 * document that is not an object with `metadata.name`.
 */
export function parseManifests(text: string, source: string): KubeObject[] {
  let docs: unknown[];
  try {
    docs = loadDocuments(text);
  } catch (e) {
    throw new Error(`${source}: invalid YAML: ${(e as Error).message.split("\n")[0]}`);
  }
  const out: KubeObject[] = [];
  const visit = (doc: unknown, where: string): void => {
    if (doc === null || doc === undefined) return;
    if (typeof doc !== "object" || Array.isArray(doc)) {
      throw new Error(`${where}: expected a Kubernetes object, got ${JSON.stringify(doc)}`);
    }
    const obj = doc as Record<string, unknown>;
    if (typeof obj.kind === "string" && obj.kind.endsWith("List") && Array.isArray(obj.items)) {
      obj.items.forEach((item, i) => visit(item, `${where} item ${i}`));
      return;
    }
    const meta = obj.metadata as Record<string, unknown> | undefined;
    if (!meta || typeof meta.name !== "string" || meta.name === "") {
      throw new Error(`${where}: ${obj.kind ?? "object"} has no metadata.name`);
    }
    // annotations and labels as dictionaries: see src/core/dictionary.ts
    out.push(settleStringMaps(obj as unknown as KubeObject));
  };
  docs.forEach((doc, i) => visit(doc, docs.length > 1 ? `${source} document ${i + 1}` : source));
  return out;
}

/** Files below a path that look like manifests (.yaml, .yml, .json), sorted; a file is itself. */
export async function manifestFiles(path: string): Promise<string[]> {
  const info = await stat(path);
  if (!info.isDirectory()) return [path];
  const out: string[] = [];
  for (const entry of (await readdir(path)).sort()) {
    if (entry.startsWith(".")) continue;
    const p = join(path, entry);
    const s = await stat(p);
    if (s.isDirectory()) out.push(...await manifestFiles(p));
    else if (/\.(ya?ml|json)$/i.test(entry)) out.push(p);
  }
  return out;
}

/**
 * Read every manifest below the given files or folders. A file that cannot be read or parsed
 * is reported in `errors` and the others are still returned.
 */
export async function readManifests(paths: string[]): Promise<ManifestReadResult> {
  const objects: ManifestObject[] = [];
  const errors: string[] = [];
  for (const path of paths) {
    let files: string[];
    try {
      files = await manifestFiles(path);
    } catch (e) {
      errors.push(
        `${path}: ${
          (e as NodeJS.ErrnoException).code === "ENOENT"
            ? "no such file or directory"
            : (e as Error).message
        }`,
      );
      continue;
    }
    for (const file of files) {
      try {
        const text = await readFile(file, "utf8");
        for (const object of parseManifests(text, file)) objects.push({ object, source: file });
      } catch (e) {
        errors.push((e as Error).message);
      }
    }
  }
  return { objects, errors };
}
