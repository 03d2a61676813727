import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  aggregate,
  AGGREGATOR_NAMES,
  type AggregatorName,
  parseAggregator,
} from "../../src/core/kube_metrics_adapter/aggregators.ts";

describe("parseAggregator", () => {
  it("accepts every documented name", () => {
    for (const name of ["avg", "min", "max", "sum", "count", "last", "diff"]) {
      assert.equal(parseAggregator(name), name);
    }
    assert.deepEqual([...AGGREGATOR_NAMES], ["avg", "min", "max", "sum", "count", "last", "diff"]);
  });

  it("rejects unknown, empty and wrongly cased names and lists the valid ones", () => {
    for (const bad of ["median", "", "AVG", " avg", "average", "first"]) {
      assert.throws(
        () => parseAggregator(bad),
        {
          message: `unknown aggregator "${bad}" (valid: avg, min, max, sum, count, last, diff)`,
        },
      );
    }
  });
});

describe("aggregate", () => {
  const table: [AggregatorName, number[], number][] = [
    ["avg", [3, 4, 5], 4],
    ["avg", [1], 1],
    ["avg", [-1, 1], 0],
    ["avg", [0.5, 0.25], 0.375],
    ["min", [3, -4, 5], -4],
    ["min", [7], 7],
    ["max", [3, -4, 5], 5],
    ["max", [-3, -4], -3],
    ["sum", [1, 2, 3.5], 6.5],
    ["sum", [], 0],
    ["count", [9, 9, 9], 3],
    ["count", [], 0],
    ["last", [1, 2, 3], 3],
    ["last", [42], 42],
    ["diff", [10, 12, 17], 7],
    ["diff", [17, 12, 10], -7],
    ["diff", [5], 0],
  ];
  for (const [name, values, want] of table) {
    it(`${name}(${JSON.stringify(values)}) is ${want}`, () => {
      assert.equal(aggregate(name, values), want);
    });
  }

  it("does not change its input", () => {
    const values = [3, 1, 2];
    aggregate("min", values);
    aggregate("last", values);
    assert.deepEqual(values, [3, 1, 2]);
  });

  for (const name of ["avg", "min", "max", "last", "diff"] as const) {
    it(`${name} of no values throws`, () => {
      assert.throws(() => aggregate(name, []), { message: `no values to aggregate with ${name}` });
    });
  }

  it("avg of no values throws, where kube-metrics-adapter returns NaN", () => {
    assert.throws(() => aggregate("avg", []), /no values to aggregate with avg/);
  });

  it("min and max of no values throw, where kube-metrics-adapter returns +Inf and -Inf", () => {
    assert.throws(() => aggregate("min", []), /no values to aggregate with min/);
    assert.throws(() => aggregate("max", []), /no values to aggregate with max/);
  });

  it("rejects non-finite values, naming the index", () => {
    assert.throws(() => aggregate("sum", [1, NaN]), {
      message: "invalid value NaN at index 1 for aggregator sum",
    });
    assert.throws(() => aggregate("max", [Infinity]), {
      message: "invalid value Infinity at index 0 for aggregator max",
    });
  });

  it("rejects a name that bypassed the type", () => {
    assert.throws(
      () => aggregate("median" as AggregatorName, [1]),
      /unknown aggregator "median"/,
    );
  });
});
