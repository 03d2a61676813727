import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  extractJsonValue,
  type JsonExtractionOptions,
  validateJsonExtraction,
} from "../../src/core/kube_metrics_adapter/json_extract.ts";
import { prng } from "../support/prng.ts";

const doc = {
  http_server: { rps: 0.5, "p99-latency": 12 },
  "active processes": 3,
  "total processes": 12,
  queue: { depth: 0, neg: -4 },
  values: [3, 4, 5],
  empty: [],
  one: [7],
  text: "hello",
  numeric: "12.5",
  numericExp: "-1e3",
  padded: " 12",
  flag: true,
  nothing: null,
  nested: [[1, 2], [3]],
  deep: [[[1]]],
  mixed: [1, "two", 3],
  pods: [
    { name: "a", rps: 1, ready: true },
    { name: "b", rps: 2, ready: false },
    { name: "c", rps: 3, ready: true },
    { name: "d", ready: true },
  ],
  store: {
    book: [
      { category: "reference", price: 8.95 },
      { category: "fiction", price: 12.99, isbn: "0-553-21311-3" },
      { category: "fiction", price: 8.99, isbn: "0-395-19395-8" },
      { category: "fiction", price: 22.99 },
    ],
    bicycle: { color: "red", price: 19.95 },
  },
};

describe("extractJsonValue with json-key", () => {
  const table: [JsonExtractionOptions, number][] = [
    [{ jsonKey: "$.http_server.rps" }, 0.5],
    [{ jsonKey: "$['http_server']['rps']" }, 0.5],
    [{ jsonKey: '$["http_server"].rps' }, 0.5],
    [{ jsonKey: "$.http_server.p99-latency" }, 12],
    [{ jsonKey: "$['active processes']" }, 3],
    [{ jsonKey: "$.queue.depth" }, 0],
    [{ jsonKey: "$.queue.neg" }, -4],
    [{ jsonKey: "$.values[1]" }, 4],
    [{ jsonKey: "$.values[-1:]" }, 5],
    [{ jsonKey: "$.values.length" }, 3],
    [{ jsonKey: "$.values", aggregator: "avg" }, 4],
    [{ jsonKey: "$.values", aggregator: "min" }, 3],
    [{ jsonKey: "$.values", aggregator: "max" }, 5],
    [{ jsonKey: "$.values", aggregator: "sum" }, 12],
    [{ jsonKey: "$.values", aggregator: "count" }, 3],
    [{ jsonKey: "$.values", aggregator: "last" }, 5],
    [{ jsonKey: "$.values", aggregator: "diff" }, 2],
    [{ jsonKey: "$.values[*]", aggregator: "sum" }, 12],
    [{ jsonKey: "$.one", aggregator: "max" }, 7],
    [{ jsonKey: "$.nested", aggregator: "sum" }, 6],
    [{ jsonKey: "$.nested[*]", aggregator: "count" }, 3],
    [{ jsonKey: "$.pods[*].rps", aggregator: "sum" }, 6],
    [{ jsonKey: "$..rps", aggregator: "max" }, 3],
    [{ jsonKey: "$..price", aggregator: "max" }, 22.99],
    [{ jsonKey: "$.store..price", aggregator: "count" }, 5],
    [{ jsonKey: "$.pods[?(@.name == 'b')].rps" }, 2],
    [{ jsonKey: "$.pods[?(@.name === 'b')].rps" }, 2],
    [{ jsonKey: "$.pods[?(@.ready && @.rps > 1)].rps" }, 3],
    [{ jsonKey: "$.pods[?(@.rps >= 2)].rps", aggregator: "sum" }, 5],
    [{ jsonKey: "$.store.book[?(@.isbn)].price", aggregator: "sum" }, 21.98],
    [{ jsonKey: "$.store.book[?(@.price < $.store.bicycle.price)].price", aggregator: "count" }, 3],
    [{ jsonKey: "$.values[(@.length-1)]" }, 5],
    [{ jsonKey: "$.empty", aggregator: "sum" }, 0],
    [{ jsonKey: "$.empty", aggregator: "count" }, 0],
  ];
  for (const [options, want] of table) {
    it(`${JSON.stringify(options)} gives ${want}`, () => {
      assert.equal(extractJsonValue(doc, options), want);
    });
  }

  it("accepts a numeric string, which kube-metrics-adapter rejects as unsupported type string", () => {
    assert.equal(extractJsonValue(doc, { jsonKey: "$.numeric" }), 12.5);
    assert.equal(extractJsonValue(doc, { jsonKey: "$.numericExp" }), -1000);
    assert.equal(extractJsonValue({ v: ["1", "2"] }, { jsonKey: "$.v", aggregator: "sum" }), 3);
  });

  it("refuses a sum of finite values that overflows to Infinity", () => {
    assert.throws(
      () => extractJsonValue({ v: [1e308, 1e308] }, { jsonKey: "$.v", aggregator: "sum" }),
      { message: 'json-key "$.v" gave Infinity (sum of 2 values), not a finite number' },
    );
  });

  const errors: [JsonExtractionOptions, string][] = [
    [{ jsonKey: "$.missing" }, 'json-key "$.missing" matched nothing'],
    [
      { jsonKey: "$.pods[?(@.name == 'zz')].rps" },
      `json-key "$.pods[?(@.name == 'zz')].rps" matched nothing`,
    ],
    [
      { jsonKey: "$.text" },
      'json-key "$.text" found a string where a number was expected',
    ],
    [
      { jsonKey: "$.padded" },
      'json-key "$.padded" found a string where a number was expected',
    ],
    [{ jsonKey: "$.flag" }, 'json-key "$.flag" found a boolean where a number was expected'],
    [{ jsonKey: "$.nothing" }, 'json-key "$.nothing" found null where a number was expected'],
    [{ jsonKey: "$.queue" }, 'json-key "$.queue" found an object where a number was expected'],
    [
      { jsonKey: "$.values" },
      'json-key "$.values" gave 3 values; set an aggregator (avg, min, max, sum, count, last, diff) to combine them',
    ],
    [
      { jsonKey: "$.one" },
      'json-key "$.one" gave 1 values; set an aggregator (avg, min, max, sum, count, last, diff) to combine them',
    ],
    [
      { jsonKey: "$.pods[*].rps" },
      'json-key "$.pods[*].rps" gave 3 values; set an aggregator (avg, min, max, sum, count, last, diff) to combine them',
    ],
    [
      { jsonKey: "$.mixed", aggregator: "sum" },
      'json-key "$.mixed" found a string where a number was expected',
    ],
    [
      { jsonKey: "$.deep", aggregator: "sum" },
      'json-key "$.deep" found an array of 1 where a number was expected',
    ],
    [
      { jsonKey: "$.empty", aggregator: "max" },
      'json-key "$.empty": no values to aggregate with max',
    ],
    [{ jsonKey: "values" }, 'invalid json-key "values": a JSONPath starts with "$"'],
    [{ jsonKey: "$.values[" }, 'invalid json-key "$.values[": unterminated "[" at position 8'],
    [{}, "exactly one of jsonKey and jsonEval must be given"],
    [{ jsonKey: "$.a", jsonEval: "1" }, "exactly one of jsonKey and jsonEval must be given"],
  ];
  for (const [options, message] of errors) {
    it(`fails for ${JSON.stringify(options)}: ${message}`, () => {
      assert.throws(() => extractJsonValue(doc, options), { message });
    });
  }

  it("rejects an empty array for avg, which kube-metrics-adapter averages to NaN", () => {
    assert.throws(() => extractJsonValue(doc, { jsonKey: "$.empty", aggregator: "avg" }), {
      message: 'json-key "$.empty": no values to aggregate with avg',
    });
  });

  it("rejects an empty array for min, which kube-metrics-adapter turns into +Inf", () => {
    assert.throws(
      () => extractJsonValue(doc, { jsonKey: "$.empty", aggregator: "min" }),
      /no values to aggregate with min/,
    );
  });

  it("never runs JavaScript from a json-key filter", () => {
    const g = globalThis as Record<string, unknown>;
    for (
      const path of [
        "$.pods[?(globalThis.pwned = 1)].rps",
        "$.pods[?(@.constructor.constructor('globalThis.pwned = 1')())].rps",
        "$.pods[?(process.exit(1))].rps",
        "$.pods[(globalThis.pwned = 1)]",
      ]
    ) {
      assert.throws(() => extractJsonValue(doc, { jsonKey: path, aggregator: "sum" }), Error);
    }
    assert.equal(g.pwned, undefined);
  });

  it("does not select an element whose filter field is missing or of the wrong type", () => {
    assert.equal(
      extractJsonValue(doc, { jsonKey: "$.pods[?(@.rps > 0)].rps", aggregator: "count" }),
      3,
    );
    assert.equal(
      extractJsonValue(doc, { jsonKey: "$.pods[?(@.name > 1 || @.rps == 1)].rps" }),
      1,
    );
  });

  it("does not read inherited properties", () => {
    assert.throws(() => extractJsonValue({}, { jsonKey: "$.constructor" }), /matched nothing/);
  });
});

describe("extractJsonValue with json-eval", () => {
  const table: [string, number, JsonExtractionOptions["aggregator"]?][] = [
    ["ceil($['active processes'] / ($['total processes'] / 100))", 25],
    ["$['active processes'] / $['total processes']", 0.25],
    ["avg($..price)", (8.95 + 12.99 + 8.99 + 22.99 + 19.95) / 5],
    ["avg($.values)", 4],
    ["sum($.values)", 12],
    ["min($.values)", 3],
    ["max($.values)", 5],
    ["max($.values, 10)", 10],
    ["min($.queue.depth, $.queue.neg, 2)", -4],
    ["count($.values)", 3],
    ["length($.values)", 3],
    ["size($.pods)", 4],
    ["first($.values)", 3],
    ["last($.values)", 5],
    ["diff($.values)", 2],
    ["sum($.pods[?(@.ready)].rps)", 4],
    ["sum($.pods[?(@.name != 'a' && @.rps)].rps)", 5],
    ["42", 42],
    ["1.5e3", 1500],
    [".5", 0.5],
    ["1 + 2 * 3", 7],
    ["(1 + 2) * 3", 9],
    ["10 - 4 - 3", 3],
    ["12 / 4 / 3", 1],
    ["7 % 3", 1],
    ["2 ** 10", 1024],
    ["2 ** 3 ** 2", 512],
    ["-2 ** 2", -4],
    ["2 ** -1", 0.5],
    ["-$.http_server.rps", -0.5],
    ["--3", 3],
    ["+3", 3],
    ["$.http_server.rps * 2 - 1", 0],
    ["$.values[0]-$.values[2]", -2],
    ["$.numeric * 2", 25],
    ["abs($.queue.neg)", 4],
    ["floor(2.7) + ceil(2.1) + trunc(-2.7)", 3],
    ["round(2.5)", 3],
    ["round(-2.5)", -3],
    ["roundtoeven(2.5)", 2],
    ["roundtoeven(3.5)", 4],
    ["roundtoeven(-2.5)", -2],
    ["sqrt(16) + cbrt(27)", 7],
    ["log10(1000)", 3],
    ["log2(8)", 3],
    ["exp2(3)", 8],
    ["pow10(2)", 100],
    ["pi", Math.PI],
    ["2 * e", 2 * Math.E],
    ["PI", Math.PI],
    ["CEIL(1.2)", 2],
    ["$.values", 12, "sum"],
    ["$..rps", 3, "max"],
  ];
  for (const [expr, want, aggregator] of table) {
    it(`${JSON.stringify(expr)}${aggregator ? ` with ${aggregator}` : ""} gives ${want}`, () => {
      assert.equal(extractJsonValue(doc, { jsonEval: expr, aggregator }), want);
    });
  }

  const errors: [string, string][] = [
    ["1 / 0", "division by zero"],
    ["7 % 0", "division by zero"],
    ["7.5 % 2", 'operator "%" needs integers'],
    ["$.missing + 1", "path $.missing matched nothing"],
    [
      "$.values + 1",
      'operator "+" needs a number, got an array of 3 (use avg, sum, min or max to reduce it)',
    ],
    ["$.text * 2", 'operator "*" needs a number, got a string'],
    ["sqrt($.queue)", 'operator "sqrt()" needs a number, got an object'],
    ["avg($.empty)", "no values to aggregate with avg"],
    ["avg($.mixed)", "avg() found a string where a number was expected"],
    ["first($.empty)", "first() of an empty array"],
    ["length($.queue.depth)", "length() needs an array, got a number"],
    ["foo($.values)", 'unknown function "foo" at position 0'],
    ["rand()", 'unknown function "rand" at position 0'],
    ["process.exit(1)", 'unexpected "." at position 7'],
    ["constructor", 'unknown name "constructor" at position 0'],
    ["toString(1)", 'unknown function "toString" at position 0'],
    ["__proto__", 'unknown name "__proto__" at position 0'],
    ["1 +", "unexpected end of expression"],
    ["(1 + 2", 'expected ")" but found the end at position 6'],
    ["1 2", 'unexpected "2" at position 2'],
    ["1 = 2", 'unexpected "=" at position 2'],
    ["1 & 2", 'unexpected "&" at position 2'],
    ["ceil(1, 2)", "function ceil takes one argument, got 2"],
    ["sum()", "function sum needs an argument"],
    ["'abc", "unterminated string at position 0"],
    ["$.", 'expected a name after "." at position 2'],
    ["$.values[", 'unterminated "[" at position 8'],
  ];
  for (const [expr, reason] of errors) {
    it(`fails for ${JSON.stringify(expr)}, naming the expression: ${reason}`, () => {
      assert.throws(() => extractJsonValue(doc, { jsonEval: expr }), {
        message: `json-eval "${expr}": ${reason}`,
      });
    });
  }

  const results: [string, string][] = [
    ["1 < 2", 'json-eval "1 < 2" found a boolean where a number was expected'],
    ["!1", 'json-eval "!1" found a boolean where a number was expected'],
    ["$.text < 1", 'json-eval "$.text < 1" found a boolean where a number was expected'],
    ["$.text", 'json-eval "$.text" found a string where a number was expected'],
    ["'x'", `json-eval "'x'" found a string where a number was expected`],
    ["null", 'json-eval "null" found null where a number was expected'],
    ["log(0)", 'json-eval "log(0)" gave -Infinity, not a finite number'],
    ["sqrt(-1)", 'json-eval "sqrt(-1)" gave NaN, not a finite number'],
    [
      "$.values",
      'json-eval "$.values" gave 3 values; set an aggregator (avg, min, max, sum, count, last, diff) to combine them',
    ],
  ];
  for (const [expr, message] of results) {
    it(`rejects the result of ${JSON.stringify(expr)}`, () => {
      assert.throws(() => extractJsonValue(doc, { jsonEval: expr }), { message });
    });
  }

  it("rejects expressions nested too deeply", () => {
    const expr = "(".repeat(200) + "1" + ")".repeat(200);
    assert.throws(() => extractJsonValue(doc, { jsonEval: expr }), /nested too deeply/);
    assert.equal(extractJsonValue(doc, { jsonEval: "(".repeat(20) + "1" + ")".repeat(20) }), 1);
  });

  it("rejects overlong expressions", () => {
    const expr = "1" + "+1".repeat(3000);
    assert.throws(() => extractJsonValue(doc, { jsonEval: expr }), /longer than 4096 characters/);
  });
});

describe("validateJsonExtraction", () => {
  const valid: [Record<string, string>, JsonExtractionOptions][] = [
    [{ "json-key": "$.http_server.rps" }, { jsonKey: "$.http_server.rps" }],
    [
      { "json-key": "$.values", aggregator: "avg", path: "/metrics", port: "9090" },
      { jsonKey: "$.values", aggregator: "avg" },
    ],
    [{ "json-eval": "avg($..price)" }, { jsonEval: "avg($..price)" }],
    [{ "json-eval": "$.values", aggregator: "diff" }, { jsonEval: "$.values", aggregator: "diff" }],
    [{ "json-key": "$.a", "json-eval": "" }, { jsonKey: "$.a" }],
    [{ "json-key": "", "json-eval": "1" }, { jsonEval: "1" }],
    [{ "json-key": "$..book[?(@.isbn)].price" }, { jsonKey: "$..book[?(@.isbn)].price" }],
    [{ "json-key": "$.a.*~" }, { jsonKey: "$.a.*~" }],
    [{ "json-key": "$" }, { jsonKey: "$" }],
  ];
  for (const [config, want] of valid) {
    it(`accepts ${JSON.stringify(config)}`, () => {
      assert.deepEqual(validateJsonExtraction(config), want);
    });
  }

  const invalid: [Record<string, string>, string][] = [
    [{}, "one of json-key or json-eval must be set (and non-empty)"],
    [{ "json-key": "" }, "one of json-key or json-eval must be set (and non-empty)"],
    [{ "json-eval": "  " }, "one of json-key or json-eval must be set (and non-empty)"],
    [
      { "json-key": "$.a", "json-eval": "1" },
      'json-key "$.a" and json-eval "1" are mutually exclusive: set only one',
    ],
    [{ "json-key": "a.b" }, 'invalid json-key "a.b": a JSONPath starts with "$"'],
    [{ "json-key": "$.a[" }, 'invalid json-key "$.a[": unterminated "[" at position 3'],
    [{ "json-key": "$.a[]" }, 'invalid json-key "$.a[]": empty brackets at position 3'],
    [
      { "json-key": "$.a[?(@.x ==)]" },
      'invalid json-key "$.a[?(@.x ==)]": unexpected end of expression',
    ],
    [
      { "json-key": "$.a[?(process.exit(1))]" },
      'invalid json-key "$.a[?(process.exit(1))]": unexpected "." at position 7',
    ],
    [{ "json-key": "$.a[(1]" }, 'invalid json-key "$.a[(1]": unbalanced "]" at position 6'],
    [
      { "json-eval": "avg($.a" },
      'invalid json-eval "avg($.a": expected ")" but found the end at position 7',
    ],
    [
      { "json-eval": "eval('1')" },
      `invalid json-eval "eval('1')": unknown function "eval" at position 0`,
    ],
    [
      { "json-key": "$.a", aggregator: "median" },
      'invalid aggregator for json-path: unknown aggregator "median" (valid: avg, min, max, sum, count, last, diff)',
    ],
    [
      { "json-key": "$.a", aggregator: "" },
      'invalid aggregator for json-path: unknown aggregator "" (valid: avg, min, max, sum, count, last, diff)',
    ],
  ];
  for (const [config, message] of invalid) {
    it(`rejects ${JSON.stringify(config)}`, () => {
      assert.throws(() => validateJsonExtraction(config), { message });
    });
  }
});

describe("extraction errors and response content", () => {
  // Errors are served in 404 messages and events: a json-path endpoint pointed at a secret
  // (a metadata service, an internal API) must not get it echoed back to the HPA's author.
  const secret = "AKIAIOSFODNN7EXAMPLE";
  const body = { token: secret, flag: true, n: 7.5, list: [secret], nested: { k: secret } };
  const cases: [JsonExtractionOptions, string][] = [
    [{ jsonKey: "$.token" }, 'json-key "$.token" found a string where a number was expected'],
    [{ jsonKey: "$.flag" }, 'json-key "$.flag" found a boolean where a number was expected'],
    [
      { jsonKey: "$.list", aggregator: "sum" },
      'json-key "$.list" found a string where a number was expected',
    ],
    [
      { jsonEval: "$.token * 2" },
      'json-eval "$.token * 2": operator "*" needs a number, got a string',
    ],
    [{ jsonEval: "$.n % 2" }, 'json-eval "$.n % 2": operator "%" needs integers'],
    [{ jsonEval: "length($.n)" }, 'json-eval "length($.n)": length() needs an array, got a number'],
    [
      { jsonEval: "sum($.list)" },
      'json-eval "sum($.list)": sum() found a string where a number was expected',
    ],
    [
      { jsonEval: "$.nested.k" },
      'json-eval "$.nested.k" found a string where a number was expected',
    ],
  ];
  for (const [options, message] of cases) {
    it(`says only the JSON type found for ${JSON.stringify(options)}`, () => {
      assert.throws(() => extractJsonValue(body, options), (err: Error) => {
        assert.equal(err.message, message);
        assert.ok(!err.message.includes(secret) && !err.message.includes("7.5"));
        return true;
      });
    });
  }
});

describe("json-key member chains ($.a.b)", () => {
  // They are followed without jsonpath-plus: the outcome must be jsonpath-plus's, for bodies
  // of every shape (strings and arrays have own properties too: "length", "0").
  const NAMES = ["a", "b", "length", "constructor", "toString", "__proto__", "_x", "0"];
  function value(rand: () => number, depth: number): unknown {
    const r = rand();
    if (depth > 2 || r < 0.3) {
      return [0, 1.5, -2, "", "7", "abc", true, false, null][Math.floor(rand() * 9)];
    }
    if (r < 0.45) {
      return Array.from({ length: Math.floor(rand() * 3) }, () => value(rand, depth + 1));
    }
    const obj: Record<string, unknown> = {};
    for (const n of NAMES) if (rand() < 0.4) obj[n] = value(rand, depth + 1);
    return obj;
  }
  function outcome(f: () => number): string {
    try {
      return `value ${f()}`;
    } catch (e) {
      return `error ${(e as Error).message}`;
    }
  }

  it("says a falsy body matched nothing (jsonpath-plus answers undefined for it)", () => {
    for (const body of [0, "", false, null]) {
      assert.throws(() => extractJsonValue(body, { jsonKey: "$.a" }), {
        message: 'json-key "$.a" matched nothing',
      });
      assert.throws(() => extractJsonValue(body, { jsonKey: "$.a[0]" }), {
        message: 'json-key "$.a[0]" matched nothing',
      });
    }
  });

  it("gives what jsonpath-plus gives, for 3,000 generated bodies and paths", () => {
    // The same path in bracket notation ($['a']['b']) is not a member chain: jsonpath-plus
    // evaluates it, and the outcome (value or error) must be the same.
    const rand = prng(20261122);
    const names = NAMES.filter((n) => /^[A-Za-z_]/.test(n));
    const outcomes = new Set<string>();
    for (let i = 0; i < 3000; i++) {
      const body = JSON.parse(JSON.stringify(value(rand, 0)) ?? "null");
      const picked = Array.from(
        { length: 1 + Math.floor(rand() * 3) },
        () => names[Math.floor(rand() * names.length)],
      );
      const chain = "$" + picked.map((n) => `.${n}`).join("");
      const brackets = "$" + picked.map((n) => `['${n}']`).join("");
      const expected = outcome(() => extractJsonValue(body, { jsonKey: brackets }))
        .replaceAll(brackets, "PATH");
      const got = outcome(() => extractJsonValue(body, { jsonKey: chain })).replaceAll(
        chain,
        "PATH",
      );
      assert.equal(got, expected, `${chain} on ${JSON.stringify(body)}`);
      outcomes.add(got.replace(/^value .*/, "value").replace(/^error (.*?) (found|gave).*/, "$2"));
    }
    // the generated cases reach every kind of outcome
    assert.deepEqual([...outcomes].sort(), [
      'error json-key "PATH" matched nothing',
      "found",
      "gave",
      "value",
    ]);
  });
});
