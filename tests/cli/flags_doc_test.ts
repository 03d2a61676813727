import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { FlagDef } from "../../src/cli/flags.ts";
import { SERVE_FLAGS } from "../../src/cli/flags.ts";
import {
  currentFlagReference,
  flagReference,
  FLAGS_END_MARKER,
  FLAGS_START_MARKER,
  replaceFlagReference,
} from "../../src/cli/flags_doc.ts";

const README = fileURLToPath(new URL("../../README.md", import.meta.url));

describe("flagReference", () => {
  it("renders one table per group with type, default and help", () => {
    const defs: FlagDef[] = [
      { group: "A", name: "port", type: "int", default: 443, help: "the port" },
      { group: "B", name: "ttl", type: "duration", default: 900, help: "how long | max" },
      {
        group: "A",
        name: "kubeconfig",
        type: "string",
        default: null,
        help: "k",
        aliases: ["lister-kubeconfig"],
      },
      { group: "B", name: "regions", type: "stringSlice", default: ["a", "b"], help: "r" },
      { group: "B", name: "servers", type: "stringArray", default: [], help: "s" },
      { group: "B", name: "on", type: "bool", default: false, help: "o" },
    ];
    assert.equal(
      flagReference(defs),
      [
        "### A",
        "",
        "| Flag | Type | Default | Description |",
        "| --- | --- | --- | --- |",
        "| `--port` | int | `443` | the port |",
        "| `--kubeconfig`, `--lister-kubeconfig` | string |  | k |",
        "",
        "### B",
        "",
        "| Flag | Type | Default | Description |",
        "| --- | --- | --- | --- |",
        "| `--ttl` | duration | `15m0s` | how long \\| max |",
        "| `--regions` | strings (repeatable, comma-separated) | `a,b` | r |",
        "| `--servers` | strings (repeatable) |  | s |",
        "| `--on` | bool | `false` | o |",
        "",
      ].join("\n"),
    );
  });

  it("lists every serve flag exactly once", () => {
    const text = flagReference();
    for (const d of SERVE_FLAGS) {
      const rows = text.split("\n").filter((l) => l.startsWith(`| \`--${d.name}\``));
      assert.equal(rows.length, 1, `--${d.name}`);
    }
    assert.equal(text.split("\n").filter((l) => l.startsWith("| `--")).length, SERVE_FLAGS.length);
  });
});

describe("replaceFlagReference", () => {
  const start = FLAGS_START_MARKER;
  const end = FLAGS_END_MARKER;

  it("replaces the text between the markers and keeps the rest", () => {
    const readme = `# x\n${start}\nold\n${end}\nafter\n`;
    assert.equal(replaceFlagReference(readme, "new\n"), `# x\n${start}\nnew\n${end}\nafter\n`);
    assert.equal(currentFlagReference(replaceFlagReference(readme, "new\n")), "new\n");
  });

  it("is idempotent", () => {
    const once = replaceFlagReference(`${start}${end}`, "t\n");
    assert.equal(replaceFlagReference(once, "t\n"), once);
  });

  const bad: [string, string][] = [
    ["no markers", `missing marker "${start}" in readme`],
    [`${start} only`, `missing marker "${end}" in readme`],
    [`${end} ${start}`, `markers "${start}" and "${end}" must appear once, in order`],
    [`${start} ${start} ${end}`, `markers "${start}" and "${end}" must appear once, in order`],
  ];
  for (const [readme, message] of bad) {
    it(`rejects a readme with ${JSON.stringify(readme)}`, () => {
      assert.throws(() => replaceFlagReference(readme, "x\n"), { message });
    });
  }
});

describe("README.md", () => {
  it("holds exactly the generated flag reference between the markers", () => {
    const readme = readFileSync(README, "utf8");
    assert.equal(
      currentFlagReference(readme),
      flagReference(),
      "run: node scripts/flags_doc.mjs --write",
    );
  });
});
