/**
 * Aggregators that reduce several numbers to one metric value: the `aggregator` option of the
 * json-path collectors (kube-metrics-adapter knows `avg`, `min`, `max`, `sum`) and the names
 * ZMON/KairosDB users expect (`count`, `last`, `diff`).
 *
 * Empty input: `sum` and `count` give 0; every other aggregator throws, because there is no
 * meaningful average, extreme, last value or difference of nothing (kube-metrics-adapter
 * returned NaN for `avg` and +Inf/-Inf for `min`/`max`, which then reached the HPA).
 *
 * @module
 */

/** The names accepted by `parseAggregator`. */
export type AggregatorName = "avg" | "min" | "max" | "sum" | "count" | "last" | "diff";

/** All aggregator names, in the order error messages list them. */
export const AGGREGATOR_NAMES: readonly AggregatorName[] = [
  "avg",
  "min",
  "max",
  "sum",
  "count",
  "last",
  "diff",
];

/**
 * Check an aggregator name. Names are exact and lower-case, as in kube-metrics-adapter.
 *
 * @example
 * ```ts
 * parseAggregator("max"); // "max"
 * parseAggregator("median"); // throws: unknown aggregator "median" (valid: avg, min, ...)
 * ```
 */
export function parseAggregator(s: string): AggregatorName {
  if ((AGGREGATOR_NAMES as readonly string[]).includes(s)) return s as AggregatorName;
  throw new Error(`unknown aggregator "${s}" (valid: ${AGGREGATOR_NAMES.join(", ")})`);
}

/**
 * Reduce `values` with the named aggregator.
 *
 * - `avg`: arithmetic mean; `min`, `max`: the extremes; `sum`: the total (0 for none);
 * - `count`: how many values (0 for none);
 * - `last`: the last element; `diff`: last minus first (0 for a single value).
 *
 * Throws on a non-finite input value and on empty input for all but `sum` and `count`.
 *
 * @example
 * ```ts
 * aggregate("avg", [3, 4, 5]); // 4
 * aggregate("diff", [10, 12, 17]); // 7
 * ```
 */
export function aggregate(name: AggregatorName, values: readonly number[]): number {
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v !== "number" || !Number.isFinite(v)) {
      throw new Error(`invalid value ${String(v)} at index ${i} for aggregator ${name}`);
    }
  }
  switch (name) {
    case "sum":
      return sum(values);
    case "count":
      return values.length;
  }
  if (values.length === 0) throw new Error(`no values to aggregate with ${name}`);
  switch (name) {
    case "avg":
      return sum(values) / values.length;
    case "min": {
      let m = values[0];
      for (const v of values) if (v < m) m = v;
      return m;
    }
    case "max": {
      let m = values[0];
      for (const v of values) if (v > m) m = v;
      return m;
    }
    case "last":
      return values[values.length - 1];
    case "diff":
      return values[values.length - 1] - values[0];
  }
  // Reached only when a caller bypasses the type (e.g. an unchecked string).
  throw new Error(
    `unknown aggregator "${String(name)}" (valid: ${AGGREGATOR_NAMES.join(", ")})`,
  );
}

function sum(values: readonly number[]): number {
  let total = 0;
  for (const v of values) total += v;
  return total;
}
