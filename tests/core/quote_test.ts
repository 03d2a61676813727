import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { quote, shortenValues } from "../../src/core/quote.ts";

describe("quote", () => {
  it("quotes a value of up to 64 characters whole", () => {
    assert.equal(quote("30s"), '"30s"');
    assert.equal(quote("x".repeat(64)), `"${"x".repeat(64)}"`);
  });

  it("shortens a longer value to 40 characters and its length", () => {
    assert.equal(quote("x".repeat(65)), `"${"x".repeat(40)}..." (65 characters)`);
  });
});

describe("shortenValues", () => {
  it("shortens every long quoted value and long unquoted run, and keeps the rest", () => {
    const key = `$.${"a".repeat(5000)}`;
    const url = `http://127.0.0.1/${"p".repeat(300)}`;
    assert.equal(
      shortenValues(`invalid json-key "${key}" for metric m; request to ${url} failed: reset`),
      `invalid json-key "$.${"a".repeat(38)}..." (5002 characters) for metric m; request to ` +
        `http://127.0.0.1/${"p".repeat(23)}... (317 characters) failed: reset`,
    );
  });

  it("leaves a message without long values as it is", () => {
    const m = 'invalid per-replica "yes" for External metric q (annotation ' +
      "metric-config.external.q.prometheus/per-replica): want true or false";
    assert.equal(shortenValues(m), m);
  });
});
