/**
 * KEDA's typed config (src/core/keda/typed_config.ts), with the cases of KEDA's
 * `typed_config_test.go` and the conversions measured on KEDA v2.20.2's own code (Go's
 * `json.Unmarshal`, `strconv.ParseBool`, durations, maps), and KEDA's quantity form of a target
 * (`quantityFromFloat64`, measured).
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  type FieldSpec,
  goJsonNumberError,
  readTypedConfig,
} from "../../../src/core/keda/typed_config.ts";
import { kedaMilliQuantity } from "../../../src/core/keda/hpa.ts";
import { parseCronSchedule } from "../../../src/core/keda/cron.ts";

const MD = ["triggerMetadata"] as const;

function one(type: FieldSpec["type"], value: string, more: Partial<FieldSpec> = {}): unknown {
  const r = readTypedConfig({ metadata: { v: value } }, [
    { names: ["v"], order: MD, type, ...more },
  ], "testScaler");
  return r.errors.length > 0 ? r.errors.join("\n") : r.values.v;
}

const pre = (value: string): string => `unable to set param "v" value ${JSON.stringify(value)}: `;

describe("typed config (typed_config_test.go)", () => {
  it("TestBasicTypedConfig: metadata, env through <key>FromEnv, auth params", () => {
    const r = readTypedConfig(
      {
        metadata: {
          stringVal: "value1",
          intVal: "1",
          boolValFromEnv: "boolVal",
          floatValFromEnv: "floatVal",
        },
        resolvedEnv: { boolVal: "true", floatVal: "1.1" },
        authParams: { auth: "authValue" },
      },
      [
        { names: ["stringVal"], order: MD, type: "string" },
        { names: ["intVal"], order: MD, type: "int" },
        { names: ["boolVal"], order: ["resolvedEnv"], type: "bool" },
        { names: ["floatVal"], order: ["resolvedEnv"], type: "float64" },
        { names: ["auth"], order: ["authParams"], type: "string" },
      ],
      "testScaler",
    );
    assert.deepEqual(r, {
      values: { stringVal: "value1", intVal: 1, boolVal: true, floatVal: 1.1, auth: "authValue" },
      errors: [],
    });
  });

  it("TestParsingOrder: the first source in the order that has the key", () => {
    const params = {
      metadata: {
        stringVal: "value1",
        intVal: "1",
        intValFromEnv: "intVal",
        floatVal: "1.1",
        floatValFromEnv: "floatVal",
      },
      resolvedEnv: { stringVal: "value2", intVal: "2", floatVal: "2.2" },
    };
    const r = readTypedConfig(params, [
      { names: ["stringVal"], order: ["resolvedEnv", "triggerMetadata"], type: "string" },
      { names: ["intVal"], order: ["triggerMetadata", "resolvedEnv"], type: "int" },
      { names: ["floatVal"], order: ["resolvedEnv", "triggerMetadata"], type: "float64" },
    ], "testScaler");
    assert.deepEqual(r.values, { stringVal: "value1", intVal: 1, floatVal: 2.2 });
  });

  it("TestMissing, and every missing field in field order", () => {
    const r = readTypedConfig({ metadata: {} }, [
      { names: ["v"], order: MD, type: "string" },
      { names: ["w"], order: ["triggerMetadata", "resolvedEnv", "authParams"], type: "string" },
      { names: ["x"], order: MD, type: "float64" },
      { names: ["y"], order: MD, type: "string", optional: true },
    ], "testScaler");
    assert.deepEqual(r.errors, [
      'missing required parameter "v" in [triggerMetadata]',
      'missing required parameter "w" in [triggerMetadata resolvedEnv authParams]',
      'missing required parameter "x" in [triggerMetadata]',
    ]);
  });

  it("an empty or blank value is absent, and the next source is read", () => {
    const r = readTypedConfig(
      { metadata: { w: "  ", wFromEnv: "E" }, resolvedEnv: { E: "" }, authParams: { w: "a" } },
      [{ names: ["w"], order: ["triggerMetadata", "resolvedEnv", "authParams"], type: "string" }],
      "testScaler",
    );
    assert.deepEqual(r.values, { w: "a" });
  });

  it("TestDefaultValue and TestDeprecated", () => {
    const r = readTypedConfig({ metadata: { stringVal: "value1", oldParam: "x" } }, [
      { names: ["boolVal"], order: MD, type: "bool", default: "true" },
      { names: ["stringVal"], order: MD, type: "string", default: "d" },
      { names: ["stringVal2"], order: MD, type: "string", default: "d" },
      {
        names: ["oldParam"],
        order: MD,
        type: "string",
        deprecated: "This parameter is deprecated and is removed - Use newParam instead",
      },
    ], "testScaler");
    assert.deepEqual(r.values, { boolVal: true, stringVal: "value1", stringVal2: "d" });
    assert.deepEqual(r.errors, [
      "scaler testScaler info: This parameter is deprecated and is removed - Use newParam instead",
    ]);
  });

  it("TestEnum, TestExclusive and TestMultiName", () => {
    const enumVal = { enum: ["value1", "value2"] } as const;
    assert.equal(one("string", "value1", enumVal), "value1");
    assert.equal(one("string", "value1, value2", enumVal), "value1, value2");
    assert.equal(
      one("string", "value3", enumVal),
      'parameter "v" value "value3" must be one of [value1 value2]',
    );
    assert.equal(
      one("string", "1,4", { exclusiveSet: ["1", "4", "5"] }),
      'parameter "v" value "1,4" must contain only one of [1 4 5]',
    );
    for (const md of [{ property1: "aaa" }, { property2: "aaa" }] as Record<string, string>[]) {
      const r = readTypedConfig({ metadata: md }, [
        { names: ["property1", "property2"], order: MD, type: "string" },
      ], "testScaler");
      assert.deepEqual(r.values, { property1: "aaa" });
    }
    assert.deepEqual(
      readTypedConfig({ metadata: {} }, [
        { names: ["authModes", "authMode"], order: MD, type: "string" },
      ], "x").errors,
      ['missing required parameter "authModes,authMode" in [triggerMetadata]'],
    );
  });

  it("TestMap and the map errors", () => {
    assert.deepEqual(one("map", "key1=1,key2=2"), { key1: "1", key2: "2" });
    assert.deepEqual(one("map", " a = 1 , b = 2 "), { a: "1", b: "2" });
    assert.deepEqual(one("map", "a=1,a=2"), { a: "2" });
    assert.deepEqual(one("map", "=v"), { "": "v" });
    for (
      const [value, el] of [["a=1,", ""], ["a", "a"], ["a=b=c", "a=b=c"], ["a=1;b=2", "a=1;b=2"]]
    ) {
      assert.equal(one("map", value), `${pre(value)}expected format key=value, got "${el}"`);
    }
  });

  it("TestDurationParsing and the duration errors", () => {
    assert.equal(one("duration", "1000"), 1);
    assert.equal(one("duration", "30s"), 30);
    assert.equal(one("duration", "0"), 0);
    assert.equal(one("duration", "1h30m"), 5400);
    assert.equal(one("duration", "500ms"), 0.5);
    assert.equal(one("duration", "-1s"), `${pre("-1s")}duration cannot be negative: "-1s"`);
    assert.equal(one("duration", "-5"), `${pre("-5")}duration cannot be negative: -5 milliseconds`);
    for (const v of ["1.5", "abc", "1d"]) {
      assert.equal(
        one("duration", v),
        `${
          pre(v)
        }unable to parse duration value "${v}": must be either a duration string (e.g. '30s', '5m') or a number of milliseconds`,
      );
    }
  });

  it("booleans as strconv.ParseBool", () => {
    for (const v of ["true", "1", "t", "T", "TRUE", "True"]) assert.equal(one("bool", v), true);
    for (const v of ["false", "0", "f", "F", "FALSE", "False"]) assert.equal(one("bool", v), false);
    assert.equal(one("bool", " true "), true); // trimmed first
    for (const v of ["tRuE", "yes", "no", "on"]) {
      assert.equal(
        one("bool", v),
        `${
          pre(v)
        }unable to parse boolean value "${v}": strconv.ParseBool: parsing "${v}": invalid syntax`,
      );
    }
  });

  it("numbers as Go's json.Unmarshal reads them", () => {
    for (
      const [v, n] of [["1", 1], ["1.5", 1.5], ["1e3", 1000], ["-3.25", -3.25], [" 7 ", 7]] as const
    ) {
      assert.equal(one("float64", v), n);
    }
    const f = (v: string, why: string): void =>
      assert.equal(one("float64", v), `${pre(v)}unable to unmarshal to field type float64: ${why}`);
    f("+5", "invalid character '+' looking for beginning of value");
    f(".5", "invalid character '.' looking for beginning of value");
    f("5.", "invalid character ' ' after decimal point in numeric literal");
    f("NaN", "invalid character 'N' looking for beginning of value");
    f("Infinity", "invalid character 'I' looking for beginning of value");
    f("0x10", "invalid character 'x' after top-level value");
    f("1,5", "invalid character ',' after top-level value");
    f('"5"', "json: cannot unmarshal string into Go value of type float64");
    f("true", "json: cannot unmarshal bool into Go value of type float64");
    f("[1]", "json: cannot unmarshal array into Go value of type float64");
    f("1e400", "json: cannot unmarshal number 1e400 into Go value of type float64");
    assert.equal(one("int64", "9223372036854775807"), 9223372036854775807);
    for (const v of ["5.5", "1e3", "5.0", "9223372036854775808"]) {
      assert.equal(
        one("int64", v),
        `${
          pre(v)
        }unable to unmarshal to field type int64: json: cannot unmarshal number ${v} into Go value of type int64`,
      );
    }
    assert.equal(goJsonNumberError("-", "float64"), "invalid character ' ' in numeric literal");
    assert.equal(
      goJsonNumberError("1e", "float64"),
      "invalid character ' ' in exponent of numeric literal",
    );
  });
});

describe("KEDA's quantity form of a float (quantityFromFloat64, measured on v2.20.2)", () => {
  const rows: [number, string][] = [
    [0, "0"],
    [0.0004, "0"],
    [0.0005, "1m"],
    [0.0625, "62m"],
    [0.1875, "188m"],
    [0.25, "250m"],
    [1, "1"],
    [1.0005, "1"],
    [1.5, "1.500"],
    [2.0005, "2.001"],
    [2.43, "2.430"],
    [3.14159, "3.142"],
    [10, "10"],
    [42.5, "42.500"],
    [100, "100"],
    [100.5, "100.500"],
    [1000, "1k"],
    [1024, "1024"],
    [1500, "1500"],
    [1e6, "1M"],
    [1234567.891, "1234567.891"],
    // 17 digits: kept as written (99999999999999.999 is no float64: it is 1e14, "100T")
    [12345678901234.5, "12345678901234.500"],
    [9.3e15, "9300T"],
    [1e18, "1E"],
    [-1, "0"],
    [NaN, "0"],
    [Infinity, "0"],
  ];
  for (const [v, q] of rows) {
    it(`${v} is ${q}`, () => assert.equal(kedaMilliQuantity(v), q));
  }
});

describe("cron schedules as robfig/cron's standard parser reads them", () => {
  it("reads fields, ranges, steps and names", () => {
    const s = parseCronSchedule("0,30 */6 1-3 jan-MAR Thu");
    assert.deepEqual([...s.minutes], [0, 30]);
    assert.deepEqual([...s.hours], [0, 6, 12, 18]);
    assert.deepEqual([...s.days], [1, 2, 3]);
    assert.deepEqual([...s.months], [1, 2, 3]);
    assert.deepEqual([...s.weekdays], [4]);
  });

  const errors: [string, string][] = [
    ["", "empty spec string"],
    ["@daily", "parser does not accept descriptors: @daily"],
    ["* * * *", "expected exactly 5 fields, found 4: [* * * *]"],
    ["0 0 * * * *", "expected exactly 5 fields, found 6: [0 0 * * * *]"],
    ["60 * * * *", "end of range (60) above maximum (59): 60"],
    ["* * 0 * *", "beginning of range (0) below minimum (1): 0"],
    ["5-3 * * * *", "beginning of range (5) beyond end of range (3): 5-3"],
    ["*/0 * * * *", "step of range should be a positive number: */0"],
    ["1-2-3 * * * *", "too many hyphens: 1-2-3"],
    ["1/2/3 * * * *", "too many slashes: 1/2/3"],
    ["x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'],
  ];
  for (const [spec, error] of errors) {
    it(`refuses ${JSON.stringify(spec)}`, () => {
      assert.throws(() => parseCronSchedule(spec), { message: error });
    });
  }
});
