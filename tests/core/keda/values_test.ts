/**
 * Values read from backends' answers as KEDA v2.20.2's scalers read them
 * (src/core/keda/values.ts): the rows of KEDA's `testPromQueryResult` and
 * `TestGetValueFromResponse`, rewritten here.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { load as loadYaml } from "js-yaml";
import {
  gjsonGet,
  kedaJsonValue,
  kedaPathValue,
  kedaPrometheusTextValue,
  kedaPrometheusValue,
  kedaXmlValue,
} from "../../../src/core/keda/values.ts";

describe("a Prometheus query's result (testPromQueryResult)", () => {
  const q = "up";
  const rows: [string, string, number, boolean, number | string][] = [
    ["0 no data", "{}", 200, true, 0],
    ["1 no result", '{"data":{"result":[]}}', 200, true, 0],
    [
      "2 no result, nulls not ignored",
      '{"data":{"result":[]}}',
      200,
      false,
      "prometheus metrics 'prometheus' target may be lost, the result is empty",
    ],
    ["3 no value", '{"data":{"result":[{"value": []}]}}', 200, true, 0],
    [
      "4 no value, nulls not ignored",
      '{"data":{"result":[{"value": []}]}}',
      200,
      false,
      "prometheus metrics 'prometheus' target may be lost, the value list is empty",
    ],
    ["5 a value", '{"data":{"result":[{"value": ["1", "2"]}]}}', 200, true, 2],
    [
      "6 a timestamp alone",
      '{"data":{"result":[{"value": ["1"]}]}}',
      200,
      true,
      "prometheus query up didn't return enough values",
    ],
    [
      "7 two series",
      '{"data":{"result":[{},{}]}}',
      200,
      true,
      "prometheus query up returned multiple elements",
    ],
    ["8 status 400", "{}", 400, true, "prometheus query api returned error. status: 400"],
    ["9 +Inf", '{"data":{"result":[{"value": ["1", "+Inf"]}]}}', 200, true, 0],
    [
      "10 +Inf, nulls not ignored",
      '{"data":{"result":[{"value": ["1", "+Inf"]}]}}',
      200,
      false,
      "prometheus query returns +Inf",
    ],
    ["11 -Inf", '{"data":{"result":[{"value": ["1", "-Inf"]}]}}', 200, true, 0],
    [
      "12 -Inf, nulls not ignored",
      '{"data":{"result":[{"value": ["1", "-Inf"]}]}}',
      200,
      false,
      "prometheus query returns -Inf",
    ],
    ["13 NaN", '{"data":{"result":[{"value": ["1", "NaN"]}]}}', 200, true, 0],
    [
      "14 NaN, nulls not ignored",
      '{"data":{"result":[{"value": ["1", "NaN"]}]}}',
      200,
      false,
      "prometheus query returns NaN",
    ],
  ];
  for (const [name, body, status, ignoreNullValues, want] of rows) {
    it(name, () => {
      const read = (): number => kedaPrometheusValue(status, body, { query: q, ignoreNullValues });
      if (typeof want === "number") assert.equal(read(), want);
      else assert.throws(read, { message: want });
    });
  }
});

const JSON_DOC =
  '{"components":[{"id": "82328e93e", "tasks": 32, "str": "64", "k": "1k", "wrong": "NaN"}],"count":2.43}';
const YAML_DOC =
  "components:\n- id: 82328e93e\n  tasks: 32\n  str: '64'\n  k: 1k\n  wrong: NaN\ncount: 2.43\n";
const PROM_DOC = [
  "\t# HELP backend_queue_size Total number of items",
  "\t# TYPE backend_queue_size counter",
  '\tbackend_queue_size{queueName="zero"} 0',
  '\tbackend_queue_size{queueName="one"} 1',
  '\tbackend_queue_size{queueName="two", instance="random"} 2',
  '\tbackend_queue_size{queueName="two", instance="zero"} 20',
  "\t# HELP random_metric Random metric generate to include noise",
  "\t# TYPE random_metric counter",
  "\trandom_metric 10",
].join("\n");

describe("a metrics-api answer's value (TestGetValueFromResponse)", () => {
  it("json, by GJSON path", () => {
    assert.equal(kedaJsonValue(JSON_DOC, "count"), 2.43);
    assert.equal(kedaJsonValue(JSON_DOC, "components.0.str"), 64);
    assert.equal(kedaJsonValue(JSON_DOC, "components.0.tasks"), 32);
    assert.equal(kedaJsonValue(JSON_DOC, "components.0.k"), 1000);
    assert.throws(() => kedaJsonValue(JSON_DOC, "components.0.wrong"), {
      message:
        'valueLocation "components.0.wrong" points to a string that is not parseable as a Quantity',
    });
    assert.throws(() => kedaJsonValue(JSON_DOC, "components.0.id"), {
      message:
        'valueLocation "components.0.id" points to a string that is not parseable as a Quantity',
    });
    assert.throws(() => kedaJsonValue(JSON_DOC, "missing"), {
      message:
        'valueLocation "missing" must point to a numeric value or a string parseable as a Quantity, got Null',
    });
    assert.throws(() => kedaJsonValue(JSON_DOC, "components"), {
      message:
        'valueLocation "components" must point to a numeric value or a string parseable as a Quantity, got JSON',
    });
  });

  it("the GJSON subset: escapes, array length, a key of every element", () => {
    const doc = { "a.b": { c: 1 }, list: [{ n: 1 }, { n: 2 }, { m: 3 }] };
    assert.equal(gjsonGet(doc, "a\\.b.c"), 1);
    assert.equal(gjsonGet(doc, "list.#"), 3);
    assert.deepEqual(gjsonGet(doc, "list.#.n"), [1, 2]);
    assert.equal(gjsonGet(doc, "list.5.n"), undefined);
  });

  it("yaml, by dotted path", () => {
    const doc = loadYaml(YAML_DOC);
    assert.equal(kedaPathValue(doc, "count"), 2.43);
    assert.equal(kedaPathValue(doc, "components.0.str"), 64);
    assert.equal(kedaPathValue(doc, "components.0.tasks"), 32);
    assert.throws(() => kedaPathValue(doc, "components.0.wrong"), {
      message:
        'valueLocation "components.0.wrong" points to a string that is not parseable as a Quantity',
    });
    assert.throws(() => kedaPathValue(doc, "nope.x"), {
      message: "key 'nope' not found in path 'nope.x'",
    });
    assert.throws(() => kedaPathValue(doc, "components.0"), {
      message: "path 'components.0' does not lead to a value",
    });
    // GetValueByPath stops at the first value that is not a map or a list
    assert.equal(kedaPathValue(doc, "count.more"), 2.43);
  });

  it("xml: never read, as KEDA's encoding/xml into a map never reads it", () => {
    assert.throws(() => kedaXmlValue("<r><count>2</count></r>", "r.count"), {
      message: "unknown type map[string]interface {}",
    });
  });

  it("prometheus text, by selector", () => {
    assert.equal(kedaPrometheusTextValue(PROM_DOC, "random_metric"), 10);
    assert.equal(kedaPrometheusTextValue(PROM_DOC, 'backend_queue_size{queueName="one"}'), 1);
    assert.equal(kedaPrometheusTextValue(PROM_DOC, 'backend_queue_size{queueName="two"}'), 2);
    assert.equal(
      kedaPrometheusTextValue(PROM_DOC, 'backend_queue_size{queueName="two", instance="zero"}'),
      20,
    );
    assert.throws(() => kedaPrometheusTextValue(PROM_DOC, "backend_queue_size{invalid=test}"), {
      message: '1:28: parse error: unexpected identifier "test" in label matching, expected string',
    });
    assert.throws(() => kedaPrometheusTextValue(PROM_DOC, "nope"), {
      message: "metric 'nope' not found",
    });
  });
});
