#!/usr/bin/env node
// The README's flag reference, generated from src/cli/flags.ts (SERVE_FLAGS).
//
// usage: node scripts/flags_doc.mjs           print the reference
//        node scripts/flags_doc.mjs --write   replace the text between the README's
//                                             <!-- flags:start --> and <!-- flags:end --> markers
//        node scripts/flags_doc.mjs --check   exit 1 when README.md is out of date
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { register } from "tsx/esm/api";

register();
const { currentFlagReference, flagReference, replaceFlagReference } = await import(
  "../src/cli/flags_doc.ts"
);

const readmePath = fileURLToPath(new URL("../README.md", import.meta.url));
const mode = process.argv[2];
const reference = flagReference();
if (mode === undefined) {
  process.stdout.write(reference);
} else if (mode === "--write" || mode === "--check") {
  const readme = readFileSync(readmePath, "utf8");
  let updated;
  try {
    updated = replaceFlagReference(readme, reference);
  } catch (e) {
    console.error(`flags_doc: README.md: ${e.message}`);
    process.exit(1);
  }
  if (mode === "--write") {
    if (updated !== readme) writeFileSync(readmePath, updated);
    console.log(updated === readme ? "README.md is up to date" : "README.md updated");
  } else if (currentFlagReference(readme) !== reference) {
    console.error(
      "README.md's flag reference is out of date: run node scripts/flags_doc.mjs --write",
    );
    process.exit(1);
  }
} else {
  console.error(`unknown argument "${mode}" (--write, --check)`);
  process.exit(2);
}
