/**
 * The mutations and cuts of the HTTP/1.1 differential tests (requests and responses): seeds
 * are mutated a byte, a fragment or a line at a time, and cut into the chunks a connection
 * delivers.
 */
import fc from "fast-check";

export type Mutation =
  | { kind: "insert" | "replace"; at: number; byte: number }
  | { kind: "insertText"; at: number; text: string }
  | { kind: "delete" | "dupLine" | "dropLine" | "bareLf" | "nameCase"; at: number };

export const INTERESTING = [
  0x0d,
  0x0a,
  0x20,
  0x09,
  0x00,
  0x0b,
  0x0c,
  0x7f,
  0x80,
  0xa0,
  0xff,
  ...':,;="-/0123456789abcdefABCDEFGHkxz'.split("").map((c) => c.charCodeAt(0)),
];

/** A mutation: a byte inserted or replaced, a byte deleted, a fragment inserted, a line changed. */
export function mutationOf(fragments: string[]): fc.Arbitrary<Mutation> {
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        kind: fc.constantFrom("insert" as const, "replace" as const),
        at: fc.nat(),
        byte: fc.constantFrom(...INTERESTING),
      }),
    },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant("delete" as const), at: fc.nat() }) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant("insertText" as const),
        at: fc.nat(),
        text: fc.constantFrom(...fragments),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constantFrom(
          "dupLine" as const,
          "dropLine" as const,
          "bareLf" as const,
          "nameCase" as const,
        ),
        at: fc.nat(),
      }),
    },
  );
}

/** The lines of `s`, each with its LF. */
function lines(s: string): string[] {
  return s.split(/(?<=\n)/);
}

/** `s` with `m` applied. */
export function mutate(s: string, m: Mutation): string {
  const i = s.length === 0 ? 0 : m.at % s.length;
  switch (m.kind) {
    case "insert":
      return s.slice(0, i) + String.fromCharCode(m.byte) + s.slice(i);
    case "insertText":
      return s.slice(0, i) + m.text + s.slice(i);
    case "replace":
      return s.slice(0, i) + String.fromCharCode(m.byte) + s.slice(i + 1);
    case "delete":
      return s.slice(0, i) + s.slice(i + 1);
    case "dupLine":
    case "dropLine": {
      const ls = lines(s);
      const k = m.at % ls.length;
      ls.splice(k, 1, ...(m.kind === "dupLine" ? [ls[k], ls[k]] : []));
      return ls.join("");
    }
    case "bareLf": {
      const parts = s.split("\r\n");
      if (parts.length < 2) return s;
      const k = m.at % (parts.length - 1);
      return parts.slice(0, k + 1).join("\r\n") + "\n" + parts.slice(k + 1).join("\r\n");
    }
    case "nameCase": {
      const ls = lines(s);
      const k = m.at % ls.length;
      const colon = ls[k].indexOf(":");
      if (colon < 0) return s;
      // ASCII letters only: toUpperCase() takes \xff out of latin1
      const name = ls[k].slice(0, colon).replace(
        /[A-Za-z]/g,
        (c) => c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase(),
      );
      ls[k] = name + ls[k].slice(colon);
      return ls.join("");
    }
  }
}

/** `input` cut at `cuts` (offsets, any order, out of range ignored). */
export function chunked(input: Uint8Array, cuts: number[]): Uint8Array[] {
  const at = [...new Set(cuts.filter((c) => c > 0 && c < input.byteLength))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let from = 0;
  for (const c of at) {
    out.push(input.subarray(from, c));
    from = c;
  }
  out.push(input.subarray(from));
  return out;
}

/** Cuts that split `input` into single bytes. */
export function everyByte(length: number): number[] {
  return Array.from({ length }, (_, i) => i);
}
