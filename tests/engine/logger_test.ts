import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createLogger } from "../../src/engine/logger.ts";

const NOW = Date.parse("2024-03-04T10:00:00Z");

describe("createLogger", () => {
  it("writes text lines with quoted values where needed", () => {
    const lines: string[] = [];
    const log = createLogger({ write: (l) => lines.push(l), now: () => NOW });
    log.warn("collection failed", {
      plan: "default/web/0/Pods/rps",
      error: "timed out after 15s",
      n: 2,
    });
    assert.deepEqual(lines, [
      '2024-03-04T10:00:00.000Z WARN collection failed plan=default/web/0/Pods/rps error="timed out after 15s" n=2',
    ]);
  });

  it("writes one JSON object per line with --log-format json", () => {
    const lines: string[] = [];
    const log = createLogger({ format: "json", write: (l) => lines.push(l), now: () => NOW });
    log.error("invalid HPA", { hpa: "default/web", error: new Error("bad") });
    assert.deepEqual(lines.map((l) => JSON.parse(l)), [
      {
        time: "2024-03-04T10:00:00.000Z",
        level: "error",
        msg: "invalid HPA",
        hpa: "default/web",
        error: "bad",
      },
    ]);
  });

  const cases: [number, number, boolean][] = [[0, 2, false], [2, 2, true], [4, 2, true], [
    2,
    4,
    false,
  ]];
  for (const [verbosity, level, written] of cases) {
    it(`--v ${verbosity} ${written ? "writes" : "drops"} debug level ${level}`, () => {
      const lines: string[] = [];
      const log = createLogger({ verbosity, write: (l) => lines.push(l), now: () => NOW });
      log.debug(level, "collection");
      assert.equal(lines.length, written ? 1 : 0);
      assert.equal(log.enabled(level), written);
    });
  }
});
