import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { loadAll } from "js-yaml";
import { settleStringMaps } from "../../src/core/dictionary.ts";
import { parseManifests } from "../../src/cluster/manifests.ts";

const cm = (name: string): string =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n`;

describe("parseManifests", () => {
  // Multi-document streams are parsed one document at a time; the result must be loadAll's.
  const streams: [string, string, string[]][] = [
    ["one document", cm("a"), ["a"]],
    ["a leading marker", `---\n${cm("a")}`, ["a"]],
    ["a comment before the first marker", `# c\n---\n${cm("a")}`, ["a"]],
    ["two documents", `${cm("a")}---\n${cm("b")}`, ["a", "b"]],
    ["a marker with a comment", `${cm("a")}--- # next\n${cm("b")}`, ["a", "b"]],
    ["a marker with trailing spaces", `${cm("a")}---  \n${cm("b")}`, ["a", "b"]],
    ["empty documents between markers", `---\n---\n${cm("a")}---\n`, ["a"]],
    ["CRLF line ends", `${cm("a")}---\n${cm("b")}`.replaceAll("\n", "\r\n"), ["a", "b"]],
    ["a marker inside a block scalar", `${cm("a")}data:\n  x: |\n    ---\n    y\n`, ["a"]],
    ["an explicit end marker", `${cm("a")}...\n---\n${cm("b")}`, ["a", "b"]],
    ["a directive", `%YAML 1.2\n---\n${cm("a")}---\n${cm("b")}`, ["a", "b"]],
    ["content on a marker line", `${cm("a")}--- {kind: Pod, metadata: {name: b}}\n`, ["a", "b"]],
    [
      "anchors, flow collections, quoting and scalars of every kind",
      `${cm("a")}data: &d\n  s: 'it''s'\n  d: "tab\\tnew\\n"\n  f: >\n    folded\n    text\n` +
      `  n: [1, 0x1F, 1e3, .inf, ~, true, yes, 012, 2026-01-01]\ncopy: *d\n---\n` +
      `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, labels: {x: "1"}}\n`,
      ["a", "b"],
    ],
  ];
  for (const [what, text, names] of streams) {
    it(`parses ${what} as loadAll does`, () => {
      const objects = parseManifests(text, "f.yaml");
      assert.deepEqual(objects.map((o) => o.metadata.name), names);
      // loadAll's objects, with labels and annotations as dictionaries (src/core/dictionary.ts)
      assert.deepEqual(
        objects,
        (loadAll(text) as unknown[]).filter((d) => d != null).map(settleStringMaps),
      );
    });
  }

  it("keeps the last of duplicate keys in YAML, as JSON.parse and the API server do", () => {
    const text = `${cm("a")}data:\n  x: "1"\n  x: "2"\n---\n${cm("b")}metadata:\n  name: c\n`;
    assert.deepEqual(parseManifests(text, "f.yaml"), [
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a" }, data: { x: "2" } },
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" } },
    ]);
  });

  it("keeps block scalars that contain a marker line intact", () => {
    const [obj] = parseManifests(`${cm("a")}data:\n  x: |\n    ---\n    y\n`, "f.yaml");
    assert.deepEqual((obj as { data?: unknown }).data, { x: "---\ny\n" });
  });

  it("numbers documents of a stream in errors, counting empty ones", () => {
    assert.throws(
      () => parseManifests(`---\n---\n${cm("a")}---\nkind: Pod\nmetadata: {}\n`, "f.yaml"),
      { message: "f.yaml document 3: Pod has no metadata.name" },
    );
  });

  it("reports a syntax error with the line of the whole file", () => {
    const text = `${cm("a")}---\n${cm("b")}---\nkind: [\n`;
    let expected = "";
    try {
      loadAll(text);
    } catch (e) {
      expected = (e as Error).message.split("\n")[0];
    }
    assert.match(expected, /\(12:1\)/);
    assert.throws(() => parseManifests(text, "f.yaml"), {
      message: `f.yaml: invalid YAML: ${expected}`,
    });
  });

  // A text that is one JSON value is read with JSON.parse (far less garbage than js-yaml).
  const jsonTexts: [string, string, unknown[]][] = [
    [
      "a JSON object",
      `  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"n": "1"}}`,
      [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a" }, data: { n: "1" } }],
    ],
    [
      "a JSON List",
      `{"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "p"}}]}`,
      [{ kind: "Pod", metadata: { name: "p" } }],
    ],
    [
      "duplicate keys, keeping the last as the API server does (js-yaml rejects them)",
      `{"kind": "Pod", "metadata": {"name": "a", "name": "b"}}`,
      [{ kind: "Pod", metadata: { name: "b" } }],
    ],
    [
      "a YAML flow mapping that is not JSON, through js-yaml",
      `{kind: Pod, metadata: {name: p}}`,
      [{ kind: "Pod", metadata: { name: "p" } }],
    ],
  ];
  for (const [what, text, expected] of jsonTexts) {
    it(`parses ${what}`, () => {
      assert.deepEqual(parseManifests(text, "f.json"), expected);
    });
  }

  it("reports invalid JSON with js-yaml's error message", () => {
    const text = `{"kind": "Pod",\n "metadata": {"name": "p"}`;
    let expected = "";
    try {
      loadAll(text);
    } catch (e) {
      expected = (e as Error).message.split("\n")[0];
    }
    assert.notEqual(expected, "");
    assert.throws(() => parseManifests(text, "f.json"), {
      message: `f.json: invalid YAML: ${expected}`,
    });
  });
});
