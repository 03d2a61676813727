import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parser } from "@prometheus-io/lezer-promql";
import { MAX_PROMQL_LENGTH, MAX_PROMQL_NESTING, scopePromQL } from "../../src/core/promql_scope.ts";

const SHOP = { label: "namespace", value: "shop" };

/** The error nodes lezer's (error-tolerant) parse of `query` has, as `offset:text`. */
function syntaxErrors(query: string): string[] {
  const errors: string[] = [];
  parser.parse(query).iterate({
    enter(node) {
      if (node.type.isError) errors.push(`${node.from}:${query.slice(node.from, node.to)}`);
    },
  });
  return errors;
}

function errorOf(query: string, options = SHOP): string {
  try {
    return `no error: ${scopePromQL(query, options)}`;
  } catch (err) {
    assert.ok(err instanceof Error);
    return err.message;
  }
}

/** [query, scoped to namespace "shop"]. */
type Case = [string, string];

function table(cases: readonly Case[]): void {
  for (const [query, want] of cases) {
    it(`${JSON.stringify(query)} -> ${want === query ? "unchanged" : want}`, () => {
      const got = scopePromQL(query, SHOP);
      assert.equal(got, want);
      assert.deepEqual(syntaxErrors(got), []);
      assert.equal(scopePromQL(got, SHOP), got, "scoping twice adds nothing");
    });
  }
}

describe("scopePromQL: instant vector selectors", () => {
  table([
    ["up", 'up{namespace="shop"}'],
    ['http_requests_total{code="500"}', 'http_requests_total{code="500",namespace="shop"}'],
    ['m{a="b", c="d"}', 'm{a="b", c="d",namespace="shop"}'],
    ['m{a="b",}', 'm{a="b",namespace="shop",}'],
    ['m{a="b" , }', 'm{a="b",namespace="shop" , }'],
    ['{__name__="up"}', '{__name__="up",namespace="shop"}'],
    ['{__name__=~"job:.+"}', '{__name__=~"job:.+",namespace="shop"}'],
    ["m{}", 'm{namespace="shop"}'],
    ["{}", '{namespace="shop"}'],
    ["{ }", '{namespace="shop" }'],
    ["job:http_requests:rate5m", 'job:http_requests:rate5m{namespace="shop"}'],
    ['m{a=~"x.*", b!="y", c!~"z"}', 'm{a=~"x.*", b!="y", c!~"z",namespace="shop"}'],
    ["m{a='b'}", `m{a='b',namespace="shop"}`],
    ["m{a=`b`}", 'm{a=`b`,namespace="shop"}'],
    ["  up  ", '  up{namespace="shop"}  '],
    ["up # all of them", 'up{namespace="shop"} # all of them'],
    ["# first line\nup", '# first line\nup{namespace="shop"}'],
    ['m{a="b" # why\n}', 'm{a="b",namespace="shop" # why\n}'],
    ['m{\n  a="b"\n}', 'm{\n  a="b",namespace="shop"\n}'],
  ]);
});

describe("scopePromQL: quoted UTF-8 names (Prometheus 3)", () => {
  table([
    ['{"my.metric"}', '{"my.metric",namespace="shop"}'],
    ['{"my.metric", "a.b"="c"}', '{"my.metric", "a.b"="c",namespace="shop"}'],
    ['m{"a.b"!~"c"}', 'm{"a.b"!~"c",namespace="shop"}'],
    ['{"my.metric"}[5m]', '{"my.metric",namespace="shop"}[5m]'],
  ]);
});

describe("scopePromQL: range vectors and subqueries", () => {
  table([
    ["m[5m]", 'm{namespace="shop"}[5m]'],
    [
      'rate(http_requests_total{code="500"}[5m])',
      'rate(http_requests_total{code="500",namespace="shop"}[5m])',
    ],
    ["rate(m[5m])[30m:1m]", 'rate(m{namespace="shop"}[5m])[30m:1m]'],
    ["max_over_time(sum(m)[1h:5m])", 'max_over_time(sum(m{namespace="shop"})[1h:5m])'],
    ["m[5m:]", 'm{namespace="shop"}[5m:]'],
    ['{a="b"}[5m:]', '{a="b",namespace="shop"}[5m:]'],
    ["sum by (a) (m)[5m:1m]", 'sum by (a) (m{namespace="shop"})[5m:1m]'],
    ["rate(m[5m])[1h:] offset 1d", 'rate(m{namespace="shop"}[5m])[1h:] offset 1d'],
  ]);
});

describe("scopePromQL: offset and @ modifiers", () => {
  table([
    ["m offset 5m", 'm{namespace="shop"} offset 5m'],
    ["m offset -1m", 'm{namespace="shop"} offset -1m'],
    ["m OFFSET 5m", 'm{namespace="shop"} OFFSET 5m'],
    ["m[5m] offset 1h", 'm{namespace="shop"}[5m] offset 1h'],
    ["m @ 1609746000", 'm{namespace="shop"} @ 1609746000'],
    ["m @ start()", 'm{namespace="shop"} @ start()'],
    ["m[5m:1m] @ end()", 'm{namespace="shop"}[5m:1m] @ end()'],
    ["rate(m[5m] offset 1m @ 100)", 'rate(m{namespace="shop"}[5m] offset 1m @ 100)'],
    ['m{a="b"} offset 5m @ 100', 'm{a="b",namespace="shop"} offset 5m @ 100'],
  ]);
});

describe("scopePromQL: aggregations", () => {
  table([
    ["sum(m)", 'sum(m{namespace="shop"})'],
    ["sum by (pod) (m)", 'sum by (pod) (m{namespace="shop"})'],
    ["sum(m) by (pod)", 'sum(m{namespace="shop"}) by (pod)'],
    ["avg without (instance) (m)", 'avg without (instance) (m{namespace="shop"})'],
    ["sum(m) without (namespace)", 'sum(m{namespace="shop"}) without (namespace)'],
    ["SUM(m) BY (pod)", 'SUM(m{namespace="shop"}) BY (pod)'],
    ["topk(3, m)", 'topk(3, m{namespace="shop"})'],
    ["topk(scalar(n), m)", 'topk(scalar(n{namespace="shop"}), m{namespace="shop"})'],
    ["quantile(0.9, m)", 'quantile(0.9, m{namespace="shop"})'],
    ['count_values("value", m)', 'count_values("value", m{namespace="shop"})'],
    ["count(count by (pod) (m))", 'count(count by (pod) (m{namespace="shop"}))'],
  ]);
});

describe("scopePromQL: binary operators", () => {
  table([
    ["a / b", 'a{namespace="shop"} / b{namespace="shop"}'],
    [
      "a + on(pod) group_left(node) b",
      'a{namespace="shop"} + on(pod) group_left(node) b{namespace="shop"}',
    ],
    [
      "a * ignoring(code) group_right b",
      'a{namespace="shop"} * ignoring(code) group_right b{namespace="shop"}',
    ],
    ["a and b", 'a{namespace="shop"} and b{namespace="shop"}'],
    ["a and on() b", 'a{namespace="shop"} and on() b{namespace="shop"}'],
    ["a or vector(0)", 'a{namespace="shop"} or vector(0)'],
    ["a unless b", 'a{namespace="shop"} unless b{namespace="shop"}'],
    ["a > bool 1", 'a{namespace="shop"} > bool 1'],
    ["a == 2", 'a{namespace="shop"} == 2'],
    ["a ^ 2", 'a{namespace="shop"} ^ 2'],
    ["2 * a % 3", '2 * a{namespace="shop"} % 3'],
    ["a atan2 b", 'a{namespace="shop"} atan2 b{namespace="shop"}'],
  ]);
});

describe("scopePromQL: unary minus and parentheses", () => {
  table([
    ["-m", '-m{namespace="shop"}'],
    ["-(m)", '-(m{namespace="shop"})'],
    ["(m)", '(m{namespace="shop"})'],
    ["((a + b))", '((a{namespace="shop"} + b{namespace="shop"}))'],
    ["-sum(m) * -1", '-sum(m{namespace="shop"}) * -1'],
  ]);
});

describe("scopePromQL: functions", () => {
  table([
    [
      'label_replace(m, "dst", "$1", "src", "(.*)")',
      'label_replace(m{namespace="shop"}, "dst", "$1", "src", "(.*)")',
    ],
    [
      'label_join(m, "d", ",", "a", "b")',
      'label_join(m{namespace="shop"}, "d", ",", "a", "b")',
    ],
    ['absent(m{job="x"})', 'absent(m{job="x",namespace="shop"})'],
    ["absent_over_time(m[5m])", 'absent_over_time(m{namespace="shop"}[5m])'],
    [
      "histogram_quantile(0.9, sum by (le) (rate(h_bucket[5m])))",
      'histogram_quantile(0.9, sum by (le) (rate(h_bucket{namespace="shop"}[5m])))',
    ],
    ["time() - timestamp(m)", 'time() - timestamp(m{namespace="shop"})'],
    ["scalar(m) + 1", 'scalar(m{namespace="shop"}) + 1'],
    ["clamp_max(m, 10)", 'clamp_max(m{namespace="shop"}, 10)'],
    ["predict_linear(m[1h], 3600)", 'predict_linear(m{namespace="shop"}[1h], 3600)'],
    ['sort_by_label(m, "pod")', 'sort_by_label(m{namespace="shop"}, "pod")'],
    ["quantile_over_time(0.5, m[5m])", 'quantile_over_time(0.5, m{namespace="shop"}[5m])'],
    ["vector(1)", "vector(1)"],
    ["vector(time())", "vector(time())"],
    ["time()", "time()"],
    ["1", "1"],
    ["1 + 2 * 3", "1 + 2 * 3"],
    ["Inf", "Inf"],
    ['"a string"', '"a string"'],
  ]);

  it("never touches a string literal, even one that reads like a selector", () => {
    const q = 'label_replace(up, "x", "up{namespace=\\"other\\"}", "y", "(.*)")';
    assert.equal(
      scopePromQL(q, SHOP),
      'label_replace(up{namespace="shop"}, "x", "up{namespace=\\"other\\"}", "y", "(.*)")',
    );
  });
});

describe("scopePromQL: matchers on the enforced label", () => {
  table([
    // other operators are kept and the equality is added: ANDed, the result can only narrow
    ['m{namespace=~"shop|other"}', 'm{namespace=~"shop|other",namespace="shop"}'],
    ['m{namespace!="other"}', 'm{namespace!="other",namespace="shop"}'],
    ['m{namespace!~"kube-.*"}', 'm{namespace!~"kube-.*",namespace="shop"}'],
    ['m{"namespace"=~".*"}', 'm{"namespace"=~".*",namespace="shop"}'],
    // the same value, however it is quoted, is left as it is
    ['m{namespace="shop"}', 'm{namespace="shop"}'],
    ["m{namespace='shop'}", "m{namespace='shop'}"],
    ["m{namespace=`shop`}", "m{namespace=`shop`}"],
    ['m{"namespace"="shop"}', 'm{"namespace"="shop"}'],
    ['m{namespace="\\x73hop"}', 'm{namespace="\\x73hop"}'],
    ['m{namespace="\\u0073hop"}', 'm{namespace="\\u0073hop"}'],
    ['m{namespace="\\163hop"}', 'm{namespace="\\163hop"}'],
    ['m{namespace=~".*", namespace="shop"}', 'm{namespace=~".*", namespace="shop"}'],
    ['{namespace="shop"}', '{namespace="shop"}'],
    ['a{namespace="shop"} + b', 'a{namespace="shop"} + b{namespace="shop"}'],
    // a label whose name only starts like the enforced one is another label
    ['m{namespace_name="other"}', 'm{namespace_name="other",namespace="shop"}'],
  ]);
});

describe("scopePromQL: refusals", () => {
  const cases: [string, string][] = [
    [
      'm{namespace="other"}',
      'selector m{namespace="other"} at offset 0 matches namespace="other": the query may select only namespace="shop"',
    ],
    [
      'sum(rate(http_requests_total{namespace="other"}[5m]))',
      'selector http_requests_total{namespace="other"} at offset 9 matches namespace="other": the query may select only namespace="shop"',
    ],
    [
      'm{"namespace"="other"}',
      'selector m{"namespace"="other"} at offset 0 matches "namespace"="other": the query may select only namespace="shop"',
    ],
    [
      "m{namespace='other'}",
      "selector m{namespace='other'} at offset 0 matches namespace='other': the query may select only namespace=\"shop\"",
    ],
    [
      'a + b{namespace=""}',
      'selector b{namespace=""} at offset 4 matches namespace="": the query may select only namespace="shop"',
    ],
    [
      'm{namespace="shop", namespace="other"}',
      'selector m{namespace="shop", namespace="other"} at offset 0 matches namespace="other": the query may select only namespace="shop"',
    ],
    [
      'm{namespace="Shop"}',
      'selector m{namespace="Shop"} at offset 0 matches namespace="Shop": the query may select only namespace="shop"',
    ],
    [
      'm{\n  namespace="other"\n}',
      'selector m{ namespace="other" } at offset 0 matches namespace="other": the query may select only namespace="shop"',
    ],
    [
      `m{namespace="${"x".repeat(100)}"}`,
      `selector m{namespace="${"x".repeat(27)}... (115 characters) at offset 0 matches ` +
      `namespace="${
        "x".repeat(29)
      }... (112 characters): the query may select only namespace="shop"`,
    ],
    [
      "info(m)",
      'function info at offset 0 cannot be scoped to namespace="shop": it reads info series that no selector of the query names',
    ],
    [
      'sum(info(rate(m[5m]), {k8s_cluster_name=~".+"}))',
      'function info at offset 4 cannot be scoped to namespace="shop": it reads info series that no selector of the query names',
    ],
    ["m{", "invalid PromQL at offset 2: unexpected end of query"],
    ['m{a="b"', "invalid PromQL at offset 7: unexpected end of query"],
    ["sum(m", "invalid PromQL at offset 5: unexpected end of query"],
    ["1 +", "invalid PromQL at offset 3: unexpected end of query"],
    [")", 'invalid PromQL at offset 0: unexpected ")"'],
    ["Rate(m[5m])", 'invalid PromQL at offset 4: unexpected "("'],
    ['m{a="b" or c="d"}', 'invalid PromQL at offset 8: unexpected "or"'],
    ['m{namespace="\\q"}', 'invalid PromQL at offset 12: invalid string literal "\\q"'],
    ['m{"namespace\\q"="x"}', 'invalid PromQL at offset 2: invalid string literal "namespace\\q"'],
    ['m{namespace="\\ud800"}', 'invalid PromQL at offset 12: invalid string literal "\\ud800"'],
    ["", "invalid PromQL at offset 0: empty query"],
    ["   ", "invalid PromQL at offset 0: empty query"],
    ["# only a comment", "invalid PromQL at offset 0: empty query"],
    [
      "m".repeat(MAX_PROMQL_LENGTH + 1),
      `query "${
        "m".repeat(40)
      }..." (16385 characters) is longer than the limit of 16384 characters`,
    ],
  ];
  for (const [query, want] of cases) {
    it(`${JSON.stringify(query.slice(0, 50))}: ${want.slice(0, 80)}`, () => {
      assert.equal(errorOf(query), want);
    });
  }

  it("refuses more than MAX_PROMQL_NESTING open or chained brackets before parsing", () => {
    const deep = "(".repeat(3000) + "m" + ")".repeat(3000);
    assert.equal(
      errorOf(deep),
      `query "${
        "(".repeat(40)
      }..." (6001 characters) nests or chains more than ${MAX_PROMQL_NESTING} brackets`,
    );
    const chained = "m" + "[5m:]".repeat(MAX_PROMQL_NESTING + 1);
    assert.match(errorOf(chained), /nests or chains more than 200 brackets$/);
    // at the limit, and brackets inside strings do not count
    const atLimit = "(".repeat(MAX_PROMQL_NESTING) + "m" + ")".repeat(MAX_PROMQL_NESTING);
    assert.equal(
      scopePromQL(atLimit, SHOP),
      "(".repeat(MAX_PROMQL_NESTING) + 'm{namespace="shop"}' + ")".repeat(MAX_PROMQL_NESTING),
    );
    const strings = `label_replace(m, "a", "${"(".repeat(300)}", "b", "c")`;
    assert.equal(
      scopePromQL(strings, SHOP),
      `label_replace(m{namespace="shop"}, "a", "${"(".repeat(300)}", "b", "c")`,
    );
  });

  it("accepts a query of exactly the limit", () => {
    const q = "m" + " ".repeat(MAX_PROMQL_LENGTH - 1);
    assert.equal(scopePromQL(q, SHOP), 'm{namespace="shop"}' + " ".repeat(MAX_PROMQL_LENGTH - 1));
  });

  it("reports the first offending selector", () => {
    assert.equal(
      errorOf('a{namespace="x"} + b{namespace="y"}'),
      'selector a{namespace="x"} at offset 0 matches namespace="x": the query may select only namespace="shop"',
    );
  });

  it("reports a syntax error before a selector of another namespace", () => {
    assert.equal(
      errorOf('m{namespace="x"} +'),
      "invalid PromQL at offset 18: unexpected end of query",
    );
  });
});

describe("scopePromQL: options", () => {
  it("writes the value as a PromQL double-quoted string", () => {
    const cases: [string, string][] = [
      ['we"ird', 'm{ns="we\\"ird"}'],
      ["back\\slash", 'm{ns="back\\\\slash"}'],
      ["line\nbreak\ttab\rret", 'm{ns="line\\nbreak\\ttab\\rret"}'],
      ["bell\x07del\x7f", 'm{ns="bell\\x07del\\x7f"}'],
      ["café-🙂", 'm{ns="café-🙂"}'],
    ];
    for (const [value, want] of cases) {
      const got = scopePromQL("m", { label: "ns", value });
      assert.equal(got, want, value);
      assert.deepEqual(syntaxErrors(got), []);
      assert.equal(scopePromQL(got, { label: "ns", value }), got, "recognised as the same value");
    }
  });

  it("compares values byte for byte as Prometheus unquotes them", () => {
    assert.equal(
      scopePromQL('m{ns="caf\\xc3\\xa9"}', { label: "ns", value: "café" }),
      'm{ns="caf\\xc3\\xa9"}',
    );
    assert.equal(
      scopePromQL('m{ns="\\U0001F642"}', { label: "ns", value: "🙂" }),
      'm{ns="\\U0001F642"}',
    );
    assert.equal(
      errorOf('m{ns="caf\\xc3"}', { label: "ns", value: "café" }),
      'selector m{ns="caf\\xc3"} at offset 0 matches ns="caf\\xc3": the query may select only ns="café"',
    );
  });

  it("enforces any legacy label name", () => {
    assert.equal(
      scopePromQL('m{kubernetes_namespace="a"}', { label: "tenant", value: "t1" }),
      'm{kubernetes_namespace="a",tenant="t1"}',
    );
    assert.equal(scopePromQL('m{tenant="t1"}', { label: "tenant", value: "t1" }), 'm{tenant="t1"}');
  });

  const refused: [{ label: string; value: string }, string][] = [
    [
      { label: "name-space", value: "shop" },
      'invalid label name "name-space" for PromQL namespace enforcement: want letters, digits and underscores, not starting with a digit or "__"',
    ],
    [
      { label: "__name__", value: "shop" },
      'invalid label name "__name__" for PromQL namespace enforcement: want letters, digits and underscores, not starting with a digit or "__"',
    ],
    [
      { label: "1ns", value: "shop" },
      'invalid label name "1ns" for PromQL namespace enforcement: want letters, digits and underscores, not starting with a digit or "__"',
    ],
    [
      { label: "", value: "shop" },
      'invalid label name "" for PromQL namespace enforcement: want letters, digits and underscores, not starting with a digit or "__"',
    ],
    [
      { label: "namespace", value: "" },
      'invalid value "" of label namespace for PromQL namespace enforcement: the value is empty',
    ],
    [
      { label: "namespace", value: "a\ud800" },
      'invalid value "a\ud800" of label namespace for PromQL namespace enforcement: the value is not valid unicode',
    ],
  ];
  for (const [options, want] of refused) {
    it(`refuses ${JSON.stringify(options)}`, () => {
      assert.equal(errorOf("m", options), want);
      assert.equal(errorOf("1", options), want, "even for a query without selectors");
    });
  }
});
