/**
 * The README's flag reference, generated from `SERVE_FLAGS` so that it cannot drift from the
 * flags `serve` accepts. `scripts/flags_doc.mjs --write` puts it between the README's
 * `<!-- flags:start -->` and `<!-- flags:end -->` markers.
 */
import { formatDuration } from "../core/duration.ts";
import { type FlagDef, SERVE_FLAGS } from "./flags.ts";

/** The README markers the reference goes between. */
export const FLAGS_START_MARKER = "<!-- flags:start -->";
/** See {@linkcode FLAGS_START_MARKER}. */
export const FLAGS_END_MARKER = "<!-- flags:end -->";

const TYPE_NAMES: Record<FlagDef["type"], string> = {
  string: "string",
  bool: "bool",
  int: "int",
  float: "float",
  duration: "duration",
  stringArray: "strings (repeatable)",
  stringSlice: "strings (repeatable, comma-separated)",
};

function escapeCell(text: string): string {
  return text.replaceAll("\\", "\\\\").replaceAll("|", "\\|").replaceAll("\n", " ");
}

function defaultText(d: FlagDef): string {
  const v = d.default;
  if (v === null || v === "") return "";
  if (Array.isArray(v)) return v.length ? `\`${v.join(",")}\`` : "";
  if (d.type === "duration" && typeof v === "number") return `\`${formatDuration(v)}\``;
  return `\`${String(v)}\``;
}

function row(d: FlagDef): string {
  const names = [d.name, ...(d.aliases ?? [])].map((n) => `\`--${n}\``).join(", ");
  return `| ${names} | ${TYPE_NAMES[d.type]} | ${defaultText(d)} | ${escapeCell(d.help)} |`;
}

/**
 * The flag reference as markdown: one `###` section per flag group, in definition order, each a
 * table of flag (with aliases), type, default and description.
 *
 * @example
 * ```ts
 * import { flagReference } from "./flags_doc.ts";
 * flagReference().startsWith("### Serving\n"); // true
 * ```
 */
export function flagReference(defs: readonly FlagDef[] = SERVE_FLAGS): string {
  const groups = new Map<string, FlagDef[]>();
  for (const d of defs) {
    const list = groups.get(d.group) ?? [];
    list.push(d);
    groups.set(d.group, list);
  }
  const sections: string[] = [];
  for (const [group, list] of groups) {
    sections.push(
      [
        `### ${group}`,
        "",
        "| Flag | Type | Default | Description |",
        "| --- | --- | --- | --- |",
        ...list.map(row),
      ].join("\n"),
    );
  }
  return `${sections.join("\n\n")}\n`;
}

/**
 * `readme` with the text between the flag markers replaced by `reference` (markers kept, the
 * reference on lines of its own). Throws when a marker is missing, repeated or out of order.
 */
export function replaceFlagReference(readme: string, reference: string): string {
  const start = readme.indexOf(FLAGS_START_MARKER);
  const end = readme.indexOf(FLAGS_END_MARKER);
  if (start < 0 || end < 0) {
    throw new Error(
      `missing marker "${start < 0 ? FLAGS_START_MARKER : FLAGS_END_MARKER}" in readme`,
    );
  }
  if (
    end < start || readme.indexOf(FLAGS_START_MARKER, start + 1) >= 0 ||
    readme.indexOf(FLAGS_END_MARKER, end + 1) >= 0
  ) {
    throw new Error(
      `markers "${FLAGS_START_MARKER}" and "${FLAGS_END_MARKER}" must appear once, in order`,
    );
  }
  return `${readme.slice(0, start + FLAGS_START_MARKER.length)}\n${reference}${readme.slice(end)}`;
}

/** The text between the flag markers, or null when the markers are missing. */
export function currentFlagReference(readme: string): string | null {
  const start = readme.indexOf(FLAGS_START_MARKER);
  const end = readme.indexOf(FLAGS_END_MARKER);
  if (start < 0 || end < start) return null;
  return readme.slice(start + FLAGS_START_MARKER.length, end).replace(/^\n/, "");
}
