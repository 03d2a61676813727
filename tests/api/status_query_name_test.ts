/** The status model's config of a legacy `query-name` metric: the query sent, redacted alike. */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { annotationConfig, redactConfig } from "../../src/api/status_model.ts";

describe("redactConfig and query-name", () => {
  it("shows the query a query-name names beside the keys naming it", () => {
    const config = { query: "sum(x)", "query-name": "rps", rps: "sum(x)" };
    assert.deepEqual(redactConfig(config), config);
    // the selector's query-name is not repeated as annotation config; the query is
    assert.deepEqual(
      annotationConfig(redactConfig(config), { matchLabels: { "query-name": "rps" } }),
      [
        ["query", "sum(x)"],
        ["rps", "sum(x)"],
      ],
    );
  });

  it("redacts the query when the key it comes from names a secret", () => {
    assert.deepEqual(
      redactConfig({ query: "s3cr3t", "query-name": "token", token: "s3cr3t" }),
      { query: "(redacted)", "query-name": "token", token: "(redacted)" },
    );
  });
});
