import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { formatDuration, MAX_DURATION_SECONDS, parseDuration } from "../../src/core/duration.ts";

describe("parseDuration", () => {
  it("reads Go's duration forms", () => {
    const cases: [string, number][] = [
      ["0", 0],
      ["-0", 0],
      ["30s", 30],
      ["1m30s", 90],
      ["1.5h", 5400],
      ["500ms", 0.5],
      [".5s", 0.5],
      ["1.s", 1],
      ["+2m", 120],
      ["-1.5s", -1.5],
      ["1h2m3s4ms5us6ns", 3723.004005006],
      ["3µs", 0.000003],
      ["1.0000000001s", 1], // finer than a nanosecond is dropped, as in Go
    ];
    for (const [input, seconds] of cases) assert.equal(parseDuration(input), seconds, input);
  });

  it("accepts Go's maximum and minimum duration exactly", () => {
    assert.equal(parseDuration("2562047h47m16.854775807s"), MAX_DURATION_SECONDS);
    assert.equal(parseDuration("9223372036854775807ns"), 9223372036.854775807);
    assert.equal(parseDuration("-9223372036854775808ns"), -9223372036.854775808);
  });

  it("rejects a duration one nanosecond past Go's maximum", () => {
    assert.throws(
      () => parseDuration("2562047h47m16.854775808s"),
      {
        message:
          `invalid duration "2562047h47m16.854775808s": longer than Go's maximum 2562047h47m16.854775807s`,
      },
    );
    assert.throws(() => parseDuration("9223372036854775808ns"), /longer than Go's maximum/);
  });

  it("rejects durations that overflow instead of reading them as Infinity", () => {
    const huge = `1${"0".repeat(400)}s`;
    assert.throws(() => parseDuration(huge), {
      message: `invalid duration "1${
        "0".repeat(39)
      }..." (402 characters): longer than Go's maximum 2562047h47m16.854775807s`,
    });
    assert.throws(() => parseDuration(`${"9".repeat(10_000)}s`), /\(10001 characters\)/);
    assert.throws(() => parseDuration("2562048h"), /longer than Go's maximum/);
    assert.throws(() => parseDuration("100000000h"), /longer than Go's maximum/);
    assert.throws(() => parseDuration("2562047h60m"), /longer than Go's maximum/);
  });

  it("rejects what Go rejects, quoting the value", () => {
    for (const bad of ["", "1", "s", ".s", "1x", "1 s", "--1s", "1e3s", "Infinity", "NaN"]) {
      assert.throws(() => parseDuration(bad), {
        message: `invalid duration "${bad}" (use Go's form, e.g. 30s, 1m30s, 1h)`,
      }, bad);
    }
  });

  it("rejects 10,000 digits without a unit at once, quoting them shortened", () => {
    const digits = "1".repeat(10_000);
    assert.throws(() => parseDuration(`${digits}x`), {
      message: `invalid duration "${
        "1".repeat(40)
      }..." (10001 characters) (use Go's form, e.g. 30s, 1m30s, 1h)`,
    });
  });
});

describe("formatDuration", () => {
  it("writes Go's form", () => {
    assert.equal(formatDuration(0), "0s");
    assert.equal(formatDuration(90), "1m30s");
    assert.equal(formatDuration(0.5), "500ms");
    assert.equal(formatDuration(3600), "1h0m0s");
    assert.equal(formatDuration(2562047 * 3600), "2562047h0m0s");
  });

  it("writes every nanosecond, in the unit Go picks below a second, never with an exponent", () => {
    assert.equal(formatDuration(0.234375001), "234.375001ms");
    assert.equal(formatDuration(0.0000015), "1.5µs");
    assert.equal(formatDuration(-5e-324), "0s");
    assert.equal(formatDuration(parseDuration("0.8h5ns")), "48m0.000000005s");
    assert.equal(formatDuration(-90.5), "-1m30.5s");
  });

  it("writes Go's extremes as Go does, so that they parse back", () => {
    assert.equal(formatDuration(MAX_DURATION_SECONDS), "2562047h47m16.854775807s");
    assert.equal(formatDuration(-MAX_DURATION_SECONDS), "-2562047h47m16.854775808s");
    assert.equal(parseDuration(formatDuration(MAX_DURATION_SECONDS)), MAX_DURATION_SECONDS);
  });
});
