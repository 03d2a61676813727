/**
 * bench/report.mjs: the README it writes keeps the hand-written notes between its two marker
 * lines byte for byte, so that a writing run of bench/run.mjs changes the run's numbers only.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** What the test uses of bench/report.mjs, plain JavaScript that tsc has no types for. */
interface ReportModule {
  NOTES_START_MARKER: string;
  NOTES_END_MARKER: string;
  NOTES_PLACEHOLDER: string;
  keptNotes(previousText: string | null | undefined): string | null;
  renderReport(report: unknown, notes?: string | null): string;
  writeReport(file: string, report: unknown): void;
}
const {
  keptNotes,
  NOTES_END_MARKER,
  NOTES_PLACEHOLDER,
  NOTES_START_MARKER,
  renderReport,
  writeReport,
}: ReportModule = await import(new URL("../../bench/report.mjs", import.meta.url).href);

const README = fileURLToPath(new URL("../../bench/README.md", import.meta.url));
const RESULTS = fileURLToPath(new URL("../../bench/results.json", import.meta.url));
/** The report bench/run.mjs wrote last (it writes results.json as JSON.stringify(report)). */
const report = () => JSON.parse(readFileSync(RESULTS, "utf8"));

const start = NOTES_START_MARKER;
const end = NOTES_END_MARKER;
/** Notes as a person writes them: headings, a table with empty cells, trailing blanks. */
const NOTES = [
  "### Memory, measured on its own",
  "",
  "One run with `--no-write` (2026-11-25 12:18Z): RSS 123.4 MiB, ±0.06 · x0.81.  ",
  "",
  "| build | RSS |",
  "| --- | --- |",
  "| a |  |",
  "",
  "",
  "A last line.",
  "",
].join("\n");

describe("renderReport", () => {
  it("keeps the notes byte for byte between the markers, at the end", () => {
    const text = renderReport(report(), NOTES);
    assert.ok(text.endsWith(`\n${start}\n${NOTES}${end}\n`), text.slice(-400));
    assert.equal(text.split(start).length, 2);
    assert.ok(text.includes("\n## Measured on their own\n"));
  });

  it("round-trips: the notes of a rendered README are the notes it was given", () => {
    for (const notes of [NOTES, "", "x\n", `no newline at the end`]) {
      assert.equal(keptNotes(renderReport(report(), notes)), notes);
    }
    const once = renderReport(report(), NOTES);
    assert.equal(renderReport(report(), keptNotes(once)), once);
  });

  it("holds the placeholder when there are no notes", () => {
    for (const notes of [null, undefined]) {
      const text = renderReport(report(), notes);
      assert.ok(text.endsWith(`\n${start}\n${NOTES_PLACEHOLDER}${end}\n`), text.slice(-400));
      assert.equal(keptNotes(text), NOTES_PLACEHOLDER);
    }
    assert.match(NOTES_PLACEHOLDER, /^[^\n]*`--no-write`[^\n]*by hand[^\n]*\n$/);
  });

  it("points from a section of the run to the notes' subsection on it, only if there is one", () => {
    const pointer = "See also [Memory, measured on its own](#memory-measured-on-its-own) below.\n";
    const withNotes = renderReport(report(), NOTES);
    const memory = withNotes.slice(withNotes.indexOf("### Memory (RSS MiB)"));
    assert.ok(memory.startsWith(`### Memory (RSS MiB)\n\n${pointer}\n| runtime |`));
    assert.ok(!renderReport(report(), null).includes("See also"));
    // a subsection on a subject no section of the run points to
    assert.ok(!renderReport(report(), "### Startup, alone\n").includes("See also"));
  });
});

describe("keptNotes", () => {
  it("is null without a previous README or without markers", () => {
    assert.equal(keptNotes(null), null);
    assert.equal(keptNotes(undefined), null);
    assert.equal(keptNotes(""), null);
    assert.equal(keptNotes("# Benchmarks\n\n### Sharded collection\n\nhand-written\n"), null);
  });

  it("takes the text between the marker lines", () => {
    assert.equal(keptNotes(`# x\n${start}\na\n\nb\n${end}\nafter\n`), "a\n\nb\n");
    assert.equal(keptNotes(`${start}\n${end}\n`), "");
  });

  const bad = [
    `${start}\nonly the start\n`,
    `only the end\n${end}\n`,
    `${end}\n${start}\n`,
    [
      start,
      start,
      end,
    ].join("\n"),
    [start, end, end].join("\n"),
  ];
  for (const text of bad) {
    it(`rejects ${JSON.stringify(text)} rather than drop the notes`, () => {
      assert.throws(() => keptNotes(text), /must appear once, in order/);
    });
  }
});

describe("writeReport", () => {
  it("keeps the notes of the README it replaces, and writes the placeholder for a new one", () => {
    const dir = mkdtempSync(join(tmpdir(), "bench-report-"));
    try {
      const file = join(dir, "README.md");
      writeReport(file, report());
      assert.equal(keptNotes(readFileSync(file, "utf8")), NOTES_PLACEHOLDER);
      writeFileSync(file, `# an older run\n\n${start}\n${NOTES}${end}\n`);
      writeReport(file, report());
      assert.equal(readFileSync(file, "utf8"), renderReport(report(), NOTES));
      writeFileSync(file, "# no markers\n\nhand-written text\n");
      writeReport(file, report());
      assert.equal(readFileSync(file, "utf8"), renderReport(report(), null));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("bench/README.md", () => {
  it("is what a writing run renders for results.json and its own notes", () => {
    const readme = readFileSync(README, "utf8");
    assert.equal(
      renderReport(report(), keptNotes(readme)),
      readme,
      "bench/README.md: hand-written text goes between the markers of 'Measured on their own'; " +
        "the rest is bench/report.mjs's for bench/results.json",
    );
  });
});
