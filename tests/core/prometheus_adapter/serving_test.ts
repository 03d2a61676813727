/**
 * The pure parts of serving prometheus-adapter's rules: Quantity strings as v0.12.0's providers
 * make them (`NewMilliQuantity(int64(v*1000))`, NaN as 0 for custom metrics only), values by
 * the resource label (last sample wins), items in the read's name order, external items from
 * vectors and scalars, the split of a read into queries under a length limit, and which rules
 * could name a metric.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  COMMON_KINDS,
  couldNameMetric,
  customItems,
  customQuantity,
  describedKind,
  externalItems,
  externalQuantity,
  parsePrometheusAdapterConfig,
  splitNamesForQuery,
  staticResourceMapper,
  valuesByName,
} from "../../../src/core/prometheus_adapter/mod.ts";

describe("prometheus-adapter serving: quantities", () => {
  it("truncates custom values to milli-units as int64(v*1000) does, NaN as 0", () => {
    const cases: [number, string][] = [
      [10, "10"],
      [1.2345, "1234m"],
      [0.0009, "0"],
      [-0.0015, "-1m"],
      [1e6, "1M"],
      [2.5e9, "2500M"],
      [NaN, "0"],
      // amd64: out of the int64 range is -2^63
      [Infinity, "-9223372036854775808m"],
      [1e17, "-9223372036854775808m"],
    ];
    for (const [v, want] of cases) assert.equal(customQuantity(v), want, `value ${v}`);
  });

  it("gives external NaN what Go's conversion gives it (-2^63 milli), not 0", () => {
    assert.equal(externalQuantity(NaN), "-9223372036854775808m");
    assert.equal(externalQuantity(7), "7");
    assert.equal(externalQuantity(0.25), "250m");
  });
});

describe("prometheus-adapter serving: custom values", () => {
  it("files each sample under its resource label, the last one for a name winning", () => {
    const values = valuesByName([
      { labels: { pod: "a" }, value: 1, timestamp: 0 },
      { labels: { pod: "b" }, value: 2, timestamp: 0 },
      { labels: { pod: "a" }, value: 3, timestamp: 0 },
      { labels: { other: "x" }, value: 4, timestamp: 0 },
    ], "pod");
    assert.deepEqual([...values], [["a", 3], ["b", 2], ["", 4]]);
  });

  it("lists the names asked in their order, leaving out those without a value", () => {
    const items = customItems(["c", "a", "b"], new Map([["a", 1.5], ["c", NaN], ["x", 9]]));
    assert.deepEqual(items, [
      { name: "c", value: 0, quantity: "0" },
      { name: "a", value: 1.5, quantity: "1500m" },
    ]);
  });
});

describe("prometheus-adapter serving: external items", () => {
  it("makes every vector sample an item with all its labels", () => {
    assert.deepEqual(
      externalItems({
        resultType: "vector",
        series: [
          { labels: { __name__: "q", queue: "a" }, value: 7, timestamp: 1000 },
          { labels: {}, value: 0.5, timestamp: 2000 },
        ],
      }),
      [
        { labels: { __name__: "q", queue: "a" }, value: 7, quantity: "7", timestamp: 1000 },
        { labels: {}, value: 0.5, quantity: "500m", timestamp: 2000 },
      ],
    );
  });

  it("makes a scalar one item with null labels (upstream writes metricLabels: null), an empty vector no item", () => {
    assert.deepEqual(externalItems({ resultType: "scalar", value: 11, timestamp: 5 }), [
      { labels: null, value: 11, quantity: "11", timestamp: 5 },
    ]);
    assert.deepEqual(externalItems({ resultType: "vector", series: [] }), []);
  });

  it("refuses a matrix as upstream does", () => {
    assert.throws(
      () => externalItems({ resultType: "matrix" }),
      /^Error: encountered an unexpected query result type$/,
    );
  });
});

describe("prometheus-adapter serving: the query split", () => {
  const render = (names: readonly string[]): string =>
    names.length === 1 ? `up{pod="${names[0]}"}` : `up{pod=~"${names.join("|")}"}`;

  it("sends one query while it fits", () => {
    assert.deepEqual(splitNamesForQuery(["a", "b", "c"], render, 16), [
      { names: ["a", "b", "c"], query: 'up{pod=~"a|b|c"}' },
    ]);
  });

  it("splits into consecutive chunks whose queries fit the limit", () => {
    assert.deepEqual(splitNamesForQuery(["a", "b", "c", "d", "e"], render, 14), [
      { names: ["a", "b"], query: 'up{pod=~"a|b"}' },
      { names: ["c", "d"], query: 'up{pod=~"c|d"}' },
      { names: ["e"], query: 'up{pod="e"}' },
    ]);
  });

  it("sends a name whose query alone is too long by itself", () => {
    assert.deepEqual(
      splitNamesForQuery(["a", "very-long-name", "b"], render, 14).map((c) => c.names),
      [["a"], ["very-long-name"], ["b"]],
    );
  });

  it("never splits with a limit of 0, and sends nothing for no names", () => {
    const names = Array.from({ length: 100 }, (_, i) => `pod-${i}`);
    assert.equal(splitNamesForQuery(names, render, 0).length, 1);
    assert.deepEqual(splitNamesForQuery([], render, 10), []);
  });
});

describe("prometheus-adapter serving: which rules could name a metric", () => {
  const config = parsePrometheusAdapterConfig({
    rules: [
      { seriesQuery: "a", metricsQuery: "x", name: { matches: "^(.*)_total$" } },
      { seriesQuery: "b", metricsQuery: "x", name: { matches: "^b$", as: "fixed_name" } },
      { seriesQuery: "c", metricsQuery: "x" },
    ],
  });

  it("any name for a rule whose name.as uses a group, only its own name otherwise", () => {
    assert.deepEqual(config.rules.map((r) => couldNameMetric(r, "anything")), [true, false, true]);
    assert.equal(couldNameMetric(config.rules[1], "fixed_name"), true);
  });
});

describe("describedKind", () => {
  it("writes group/version as custom-metrics-apiserver's ReferenceFor does, /v1 for the core group", () => {
    const mapper = staticResourceMapper(COMMON_KINDS);
    const of = (group: string, resource: string) =>
      describedKind(mapper.kindOf({ group, resource }));
    assert.deepEqual(of("", "pods"), { kind: "Pod", apiVersion: "/v1" });
    assert.deepEqual(of("", "namespaces"), { kind: "Namespace", apiVersion: "/v1" });
    assert.deepEqual(of("", "endpoints"), { kind: "Endpoints", apiVersion: "/v1" });
    assert.deepEqual(of("batch", "jobs"), { kind: "Job", apiVersion: "batch/v1" });
    assert.deepEqual(of("apps", "deployments"), { kind: "Deployment", apiVersion: "apps/v1" });
    assert.deepEqual(of("networking.k8s.io", "ingresses"), {
      kind: "Ingress",
      apiVersion: "networking.k8s.io/v1",
    });
    assert.deepEqual(of("autoscaling", "horizontalpodautoscalers"), {
      kind: "HorizontalPodAutoscaler",
      apiVersion: "autoscaling/v2",
    });
    assert.equal(of("", "jobs"), null);
    assert.equal(of("example.com", "widgets"), null);
  });
});
