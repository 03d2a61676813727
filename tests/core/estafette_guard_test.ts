import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  decideGuard,
  DEFAULT_LOWER_BOUND,
  deploymentInProgress,
  type DeploymentInProgressInput,
  ESTAFETTE_ANNOTATIONS,
  ESTAFETTE_DELTA_ANNOTATION,
  ESTAFETTE_DEPLOYMENT_CHECKING_ANNOTATION,
  ESTAFETTE_ENABLED_ANNOTATION,
  ESTAFETTE_QUERY_ANNOTATION,
  ESTAFETTE_REQUESTS_PER_REPLICA_ANNOTATION,
  ESTAFETTE_SCALE_DOWN_MAX_RATIO_ANNOTATION,
  ESTAFETTE_SERVER_URL_ANNOTATION,
  ESTAFETTE_STATE_ANNOTATION,
  formatGoJsonFloat,
  guardChangeMessage,
  type GuardConfig,
  type GuardDecision,
  GuardError,
  type GuardErrorReason,
  type GuardInput,
  guardPatch,
  guardQueryUrl,
  guardRunsQuery,
  guardStateAnnotation,
  LOWER_BOUND_ENV,
  parseGoFloat,
  parseGoInt32,
  parseGuardConfig,
  parseLowerBound,
  prometheusGuardValue,
} from "../../src/core/estafette/guard.ts";

const URL = "http://prometheus:9090";
/** 2024-03-31T08:00:00.789Z: the state annotation drops the milliseconds. */
const NOW = Date.UTC(2024, 2, 31, 8, 0, 0, 789);
const QUERY = "sum(rate(nginx_http_requests_total{app='web'}[5m])) by (app)";

/** The config of annotations on an enabled HPA (enabled unless the annotations say otherwise). */
function config(annotations: Record<string, string> = {}): GuardConfig {
  return parseGuardConfig(
    { [ESTAFETTE_ENABLED_ANNOTATION]: "true", ...annotations },
    { defaultPrometheusUrl: URL },
  ).config;
}

function warnings(annotations: Record<string, string>): string[] {
  return parseGuardConfig(annotations, { defaultPrometheusUrl: URL }).warnings;
}

const QUERY_CONFIG = {
  [ESTAFETTE_QUERY_ANNOTATION]: QUERY,
  [ESTAFETTE_REQUESTS_PER_REPLICA_ANNOTATION]: "2.5",
  [ESTAFETTE_DELTA_ANNOTATION]: "-0.5",
};

function decide(input: Partial<GuardInput> & { config: GuardConfig }): GuardDecision {
  return decideGuard({
    currentReplicas: 10,
    minReplicas: 3,
    maxReplicas: 50,
    lowerBound: 3,
    deploymentInProgress: false,
    now: NOW,
    ...input,
  });
}

/** The state annotation of a config, for expected writes. */
function state(c: GuardConfig): string {
  return guardStateAnnotation(c, NOW);
}

function assertGuardError(fn: () => unknown, reason: GuardErrorReason, message: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof GuardError, `want a GuardError, got ${String(e)}`);
    assert.equal(e.message, message);
    assert.equal(e.reason, reason);
    assert.equal(e.name, "GuardError");
    return true;
  });
}

describe("annotation names", () => {
  it("are upstream's keys, in upstream's order", () => {
    assert.deepEqual(ESTAFETTE_ANNOTATIONS, [
      "estafette.io/hpa-scaler",
      "estafette.io/hpa-scaler-prometheus-query",
      "estafette.io/hpa-scaler-requests-per-replica",
      "estafette.io/hpa-scaler-delta",
      "estafette.io/hpa-scaler-prometheus-server-url",
      "estafette.io/hpa-scaler-scale-down-max-ratio",
      "estafette.io/hpa-scaler-enable-scale-down-ratio-deployment-checking",
    ]);
    assert.equal(ESTAFETTE_STATE_ANNOTATION, "estafette.io/hpa-scaler-state");
    assert.equal(LOWER_BOUND_ENV, "MINIMUM_REPLICAS_LOWER_BOUND");
    assert.equal(DEFAULT_LOWER_BOUND, 3);
  });
});

describe("parseGoFloat: Go's strconv.ParseFloat(s, 64) (vectors checked against Go)", () => {
  const accepted: [string, number][] = [
    ["1", 1],
    ["2.5", 2.5],
    ["-0.5", -0.5],
    ["1e3", 1000],
    ["1E3", 1000],
    ["+1.5", 1.5],
    [".5", 0.5],
    ["5.", 5],
    ["-.5e-3", -0.0005],
    ["00012", 12],
    ["0.1", 0.1],
    ["1e+00", 1],
    ["1e0010", 1e10],
    ["Inf", Infinity],
    ["inf", Infinity],
    ["+Inf", Infinity],
    ["-Inf", -Infinity],
    ["INFINITY", Infinity],
    ["-Infinity", -Infinity],
    ["0x1p-2", 0.25],
    ["0X1P-2", 0.25],
    ["-0x1p-2", -0.25],
    ["0x1.8p1", 3],
    ["0x.8p0", 0.5],
    ["0x1e3p0", 483],
    ["0x_1p0", 1],
    ["0x1_0p0", 16],
    ["0x1p1_0", 1024],
    ["1_000", 1000],
    ["1_000.5", 1000.5],
    ["1_23.50_0_0e+1_2", 1.235e14],
    ["0_1.5", 1.5],
    ["1_0e1_0", 1e11],
    // underflow is not an error
    ["1e-400", 0],
    ["1e-99999", 0],
    ["0e99999", 0],
    ["2e-324", 0],
    ["3e-324", 5e-324],
    ["4.9e-324", 5e-324],
    ["0x1p-1074", 5e-324],
    ["0x1p-1075", 0], // a tie: to even (0)
    ["0x1.8p-1075", 5e-324],
    ["1.7976931348623157e308", 1.7976931348623157e308],
    ["1.7976931348623158e308", 1.7976931348623157e308],
    ["0x1.fffffffffffff7p1023", 1.7976931348623157e308],
    // rounding: nearest, ties to even, with digits past the 64 bits Go keeps
    ["9007199254740993", 9007199254740992],
    ["9007199254740993.00000000000000000000000000001", 9007199254740994],
    ["0x1.00000000000008p0", 1],
    ["0x1.00000000000018p0", 1.0000000000000004],
    ["0x1.000000000000080000001p0", 1.0000000000000002],
    ["0x123456789abcdef0123p0", 5.373003642731685e21],
    ["2.2250738585072011e-308", 2.225073858507201e-308],
    ["2.2250738585072012e-308", 2.2250738585072014e-308],
  ];
  for (const [s, want] of accepted) {
    it(`reads ${JSON.stringify(s)} as ${want}`, () => {
      assert.equal(parseGoFloat(s), want);
    });
  }

  it("reads NaN in any case, and negative zero", () => {
    assert.ok(Number.isNaN(parseGoFloat("NaN")));
    assert.ok(Number.isNaN(parseGoFloat("nan")));
    assert.ok(Number.isNaN(parseGoFloat("NAN")));
    assert.ok(Object.is(parseGoFloat("-0"), -0));
    assert.ok(Object.is(parseGoFloat("0"), 0));
  });

  const syntax = [
    "",
    " 1",
    "1 ",
    "+",
    "-",
    ".",
    "e3",
    "1e",
    "1e+",
    "1.2.3",
    "1,5",
    "infin",
    "infx",
    "+NaN",
    "-NaN",
    "0x1",
    "0xp1",
    "0x",
    "0x1p",
    "0x1e",
    "0x_p0",
    "0b101",
    "0o7",
    "1d",
    "1f",
    "_1",
    "1_",
    "1__0",
    "1_.5",
    "1._5",
    "1e_3",
    "1e+_3",
    "1e3_",
    "-_1",
    "+_1",
    "١",
  ];
  for (const s of syntax) {
    it(`refuses ${JSON.stringify(s)}: invalid syntax`, () => {
      assert.throws(() => parseGoFloat(s), {
        message: `invalid float ${JSON.stringify(s)}: invalid syntax`,
      });
    });
  }

  for (const s of ["1e400", "-1e400", "1e99999", "1.7976931348623159e308", "0x1p1024"]) {
    it(`refuses ${s}: value out of range`, () => {
      assert.throws(() => parseGoFloat(s), {
        message: `invalid float "${s}": value out of range`,
      });
    });
  }
});

describe("parseGoInt32: Go's strconv.ParseInt(s, 0, 32) (vectors checked against Go)", () => {
  const accepted: [string, number][] = [
    ["3", 3],
    ["0", 0],
    ["00", 0],
    ["-0", 0],
    ["-1", -1],
    ["+5", 5],
    ["0x10", 16],
    ["0X1f", 31],
    ["0b101", 5],
    ["0B11", 3],
    ["0o17", 15],
    ["0O17", 15],
    ["017", 15],
    ["010_0", 64],
    ["0_7", 7],
    ["0x_1f", 31],
    ["0x1_f", 31],
    ["0b_1", 1],
    ["1_000", 1000],
    ["2147483647", 2147483647],
    ["0x7fffffff", 2147483647],
    ["-2147483648", -2147483648],
    ["-0x80000000", -2147483648],
  ];
  for (const [s, want] of accepted) {
    it(`reads ${JSON.stringify(s)} as ${want}`, () => {
      assert.ok(Object.is(parseGoInt32(s), want));
    });
  }
  const syntax = [
    "",
    " 3",
    "3 ",
    "+",
    "-",
    "+-1",
    "1.0",
    "1e3",
    "abc",
    "08",
    "09",
    "0x",
    "0b",
    "0o",
    "0xg",
    "0o8",
    "0b2",
    "0x-1",
    "0_x1",
    "0_",
    "1__0",
    "_1",
    "1_",
    "-_1",
    "٣",
  ];
  for (const s of syntax) {
    it(`refuses ${JSON.stringify(s)}: invalid syntax`, () => {
      assert.throws(() => parseGoInt32(s), {
        message: `invalid integer ${JSON.stringify(s)}: invalid syntax`,
      });
    });
  }
  for (
    const s of ["2147483648", "-2147483649", "0x80000000", "4294967296", "99999999999999999999"]
  ) {
    it(`refuses ${s}: value out of range`, () => {
      assert.throws(() => parseGoInt32(s), {
        message: `invalid integer "${s}": value out of range`,
      });
    });
  }
});

describe("parseLowerBound", () => {
  it("is 3 when unset or empty, without a warning", () => {
    assert.deepEqual(parseLowerBound(undefined), { lowerBound: 3 });
    assert.deepEqual(parseLowerBound(""), { lowerBound: 3 });
  });
  it("reads base-0 int32 values, 0 and negatives included", () => {
    assert.deepEqual(parseLowerBound("5"), { lowerBound: 5 });
    assert.deepEqual(parseLowerBound("0x10"), { lowerBound: 16 });
    assert.deepEqual(parseLowerBound("010"), { lowerBound: 8 });
    assert.deepEqual(parseLowerBound("0"), { lowerBound: 0 });
    assert.deepEqual(parseLowerBound("1"), { lowerBound: 1 });
    assert.deepEqual(parseLowerBound("-2"), { lowerBound: -2 });
  });
  it("falls back to 3 with a warning naming the variable and the value", () => {
    assert.deepEqual(parseLowerBound("five"), {
      lowerBound: 3,
      warning: 'invalid MINIMUM_REPLICAS_LOWER_BOUND "five": invalid syntax, using the default 3',
    });
    assert.deepEqual(parseLowerBound("08"), {
      lowerBound: 3,
      warning: 'invalid MINIMUM_REPLICAS_LOWER_BOUND "08": invalid syntax, using the default 3',
    });
    assert.deepEqual(parseLowerBound("2147483648", "--estafette-minimum-replicas-lower-bound"), {
      lowerBound: 3,
      warning:
        'invalid --estafette-minimum-replicas-lower-bound "2147483648": value out of range, using the default 3',
    });
  });
});

describe("parseGuardConfig", () => {
  it("gives upstream's defaults for an HPA with only the switch", () => {
    assert.deepEqual(
      parseGuardConfig({ "estafette.io/hpa-scaler": "true" }, { defaultPrometheusUrl: URL }),
      {
        config: {
          enabled: true,
          prometheusQuery: "",
          requestsPerReplica: 1,
          delta: 0,
          prometheusServerUrl: URL,
          prometheusServerUrlSource: "default",
          scaleDownMaxRatio: 1,
          deploymentChecking: false,
          deploymentCheckingValue: "false",
        },
        warnings: [],
      },
    );
  });

  it("reads every annotation", () => {
    assert.deepEqual(
      parseGuardConfig({
        "estafette.io/hpa-scaler": "true",
        "estafette.io/hpa-scaler-prometheus-query": QUERY,
        "estafette.io/hpa-scaler-requests-per-replica": "2.5",
        "estafette.io/hpa-scaler-delta": "-0.5",
        "estafette.io/hpa-scaler-prometheus-server-url": "http://other:9090",
        "estafette.io/hpa-scaler-scale-down-max-ratio": "0.2",
        "estafette.io/hpa-scaler-enable-scale-down-ratio-deployment-checking": "true",
      }, { defaultPrometheusUrl: URL }),
      {
        config: {
          enabled: true,
          prometheusQuery: QUERY,
          requestsPerReplica: 2.5,
          delta: -0.5,
          prometheusServerUrl: "http://other:9090",
          prometheusServerUrlSource: "annotation",
          scaleDownMaxRatio: 0.2,
          deploymentChecking: true,
          deploymentCheckingValue: "true",
        },
        warnings: [],
      },
    );
  });

  it('is enabled only by exactly "true"; other values say so', () => {
    const enabled = (annotations: Record<string, string> | undefined): boolean =>
      parseGuardConfig(annotations, { defaultPrometheusUrl: URL }).config.enabled;
    assert.equal(enabled({ "estafette.io/hpa-scaler": "true" }), true);
    for (const v of ["True", "TRUE", "1", "yes", "", " true", "false"]) {
      assert.equal(enabled({ "estafette.io/hpa-scaler": v }), false, v);
    }
    assert.equal(enabled({}), false);
    assert.equal(enabled(undefined), false);
    assert.deepEqual(warnings({ "estafette.io/hpa-scaler": "True" }), [
      'estafette.io/hpa-scaler "True" is not "true": the guard is off (only "true" turns it on)',
    ]);
    assert.deepEqual(warnings({ "estafette.io/hpa-scaler": "1" }), [
      'estafette.io/hpa-scaler "1" is not "true": the guard is off (only "true" turns it on)',
    ]);
    assert.deepEqual(warnings({ "estafette.io/hpa-scaler": "" }), [
      'estafette.io/hpa-scaler "" is not "true": the guard is off (only "true" turns it on)',
    ]);
    assert.deepEqual(warnings({ "estafette.io/hpa-scaler": "false" }), []);
    assert.deepEqual(warnings({}), []);
  });

  it("takes the query verbatim", () => {
    const q = "  sum(x) > 0 & y  ";
    assert.equal(config({ [ESTAFETTE_QUERY_ANNOTATION]: q }).prometheusQuery, q);
  });

  it("reads numbers with Go's ParseFloat rules", () => {
    const rpr = (v: string): number =>
      config({ [ESTAFETTE_REQUESTS_PER_REPLICA_ANNOTATION]: v }).requestsPerReplica;
    assert.equal(rpr("1e3"), 1000);
    assert.equal(rpr("+1.5"), 1.5);
    assert.equal(rpr(".5"), 0.5);
    assert.equal(rpr("0x1p-2"), 0.25);
    assert.equal(rpr("1_000"), 1000);
    assert.equal(rpr("Inf"), Infinity);
    assert.ok(Number.isNaN(rpr("NaN")));
    assert.equal(config({ [ESTAFETTE_DELTA_ANNOTATION]: "-2" }).delta, -2);
  });

  it("uses the default and warns for a number that does not parse", () => {
    const p = parseGuardConfig({
      "estafette.io/hpa-scaler": "true",
      "estafette.io/hpa-scaler-requests-per-replica": "abc",
      "estafette.io/hpa-scaler-delta": "1,5",
      "estafette.io/hpa-scaler-scale-down-max-ratio": "half",
    }, { defaultPrometheusUrl: URL });
    assert.equal(p.config.requestsPerReplica, 1);
    assert.equal(p.config.delta, 0);
    assert.equal(p.config.scaleDownMaxRatio, 1);
    assert.deepEqual(p.warnings, [
      'invalid estafette.io/hpa-scaler-requests-per-replica "abc": not a number, using the default 1',
      'invalid estafette.io/hpa-scaler-delta "1,5": not a number, using the default 0',
      'invalid estafette.io/hpa-scaler-scale-down-max-ratio "half": not a number, using the default 1',
    ]);
  });

  it("uses the default and warns for a number beyond the float64 range", () => {
    const p = parseGuardConfig({
      "estafette.io/hpa-scaler": "true",
      "estafette.io/hpa-scaler-delta": "1e400",
    }, { defaultPrometheusUrl: URL });
    assert.equal(p.config.delta, 0);
    assert.deepEqual(p.warnings, [
      'invalid estafette.io/hpa-scaler-delta "1e400": beyond the float64 range, using the default 0',
    ]);
  });

  it("D2: keeps a ratio in [0, 1] and treats any other as 1, with a warning", () => {
    const ratio = (v: string): ReturnType<typeof parseGuardConfig> =>
      parseGuardConfig({
        "estafette.io/hpa-scaler": "true",
        "estafette.io/hpa-scaler-scale-down-max-ratio": v,
      }, { defaultPrometheusUrl: URL });
    for (
      const [v, want] of [["0", 0], ["1", 1], ["0.5", 0.5], ["0.2", 0.2], [".25", 0.25]] as const
    ) {
      assert.equal(ratio(v).config.scaleDownMaxRatio, want, v);
      assert.deepEqual(ratio(v).warnings, [], v);
    }
    for (const v of ["1.5", "-0.5", "NaN", "Inf", "-Inf", "2"]) {
      assert.equal(ratio(v).config.scaleDownMaxRatio, 1, v);
      assert.deepEqual(ratio(v).warnings, [
        `invalid estafette.io/hpa-scaler-scale-down-max-ratio "${v}": want a number from 0 to 1, using 1 (no scale-down cap)`,
      ]);
    }
  });

  it('turns deployment checking on only for exactly "true" and keeps the value verbatim', () => {
    const c = (v: string): GuardConfig => config({ [ESTAFETTE_DEPLOYMENT_CHECKING_ANNOTATION]: v });
    assert.equal(c("true").deploymentChecking, true);
    assert.equal(c("True").deploymentChecking, false);
    assert.equal(c("True").deploymentCheckingValue, "True");
    assert.equal(config().deploymentCheckingValue, "false");
    assert.deepEqual(
      warnings({
        "estafette.io/hpa-scaler": "true",
        "estafette.io/hpa-scaler-enable-scale-down-ratio-deployment-checking": "yes",
      }),
      [
        'estafette.io/hpa-scaler-enable-scale-down-ratio-deployment-checking "yes" is not "true": deployment checking is off (only "true" turns it on)',
      ],
    );
  });

  it("prefers the per-HPA Prometheus URL, verbatim, to the default", () => {
    const c = config({
      [ESTAFETTE_SERVER_URL_ANNOTATION]: "http://team-prometheus.monitoring:9090/",
    });
    assert.equal(c.prometheusServerUrl, "http://team-prometheus.monitoring:9090/");
    assert.equal(c.prometheusServerUrlSource, "annotation");
    assert.equal(config().prometheusServerUrl, URL);
    assert.equal(config().prometheusServerUrlSource, "default");
  });

  it("keeps an empty per-HPA URL as upstream does, and warns when a query needs it", () => {
    const annotations = {
      "estafette.io/hpa-scaler": "true",
      "estafette.io/hpa-scaler-prometheus-server-url": "",
      "estafette.io/hpa-scaler-prometheus-query": "vector(1)",
    };
    const p = parseGuardConfig(annotations, { defaultPrometheusUrl: URL });
    assert.equal(p.config.prometheusServerUrl, "");
    assert.deepEqual(p.warnings, [
      "estafette.io/hpa-scaler-prometheus-server-url is empty: the query cannot run",
    ]);
  });

  it("warns when the query does not run because requests-per-replica is not above 0", () => {
    for (const v of ["0", "-1", "-0", "NaN", "-Inf"]) {
      const w = warnings({
        "estafette.io/hpa-scaler": "true",
        "estafette.io/hpa-scaler-prometheus-query": "vector(1)",
        "estafette.io/hpa-scaler-requests-per-replica": v,
      });
      assert.equal(
        w[0],
        `estafette.io/hpa-scaler-requests-per-replica "${v}" is not above 0: the query is not run`,
      );
    }
    // no query: nothing to say
    assert.deepEqual(
      warnings({
        "estafette.io/hpa-scaler": "true",
        "estafette.io/hpa-scaler-requests-per-replica": "0",
      }),
      [],
    );
  });

  it("warns that a non-finite requests-per-replica or delta stops every write", () => {
    assert.deepEqual(
      warnings({
        "estafette.io/hpa-scaler": "true",
        "estafette.io/hpa-scaler-requests-per-replica": "Inf",
        "estafette.io/hpa-scaler-delta": "NaN",
      }),
      [
        'estafette.io/hpa-scaler-requests-per-replica "Inf" is not a finite number: the estafette.io/hpa-scaler-state annotation cannot hold it, so the guard never changes this HPA',
        'estafette.io/hpa-scaler-delta "NaN" is not a finite number: the estafette.io/hpa-scaler-state annotation cannot hold it, so the guard never changes this HPA',
      ],
    );
  });

  it("reads only own keys of the annotations", () => {
    const annotations = Object.create({ "estafette.io/hpa-scaler": "true" }) as Record<
      string,
      string
    >;
    assert.equal(
      parseGuardConfig(annotations, { defaultPrometheusUrl: URL }).config.enabled,
      false,
    );
  });
});

describe("guardRunsQuery", () => {
  it("runs the query only when it is not empty and requests-per-replica is above 0", () => {
    assert.equal(guardRunsQuery(config(QUERY_CONFIG)), true);
    assert.equal(guardRunsQuery(config()), false);
    for (const v of ["0", "-2.5", "NaN"]) {
      assert.equal(
        guardRunsQuery(config({ ...QUERY_CONFIG, [ESTAFETTE_REQUESTS_PER_REPLICA_ANNOTATION]: v })),
        false,
        v,
      );
    }
    // "abc" falls back to 1: the query runs
    assert.equal(
      guardRunsQuery(
        config({ ...QUERY_CONFIG, [ESTAFETTE_REQUESTS_PER_REPLICA_ANNOTATION]: "abc" }),
      ),
      true,
    );
  });
});

describe("guardQueryUrl", () => {
  it("escapes the query as Go's url.QueryEscape does (a space is +)", () => {
    assert.equal(
      guardQueryUrl(URL, 'sum(rate(x{a="b"}[5m])) by (app)'),
      "http://prometheus:9090/api/v1/query?query=sum%28rate%28x%7Ba%3D%22b%22%7D%5B5m%5D%29%29+by+%28app%29",
    );
    assert.equal(
      guardQueryUrl(URL, "a-_.~!*()'é 😀+/?&="),
      "http://prometheus:9090/api/v1/query?query=a-_.~%21%2A%28%29%27%C3%A9+%F0%9F%98%80%2B%2F%3F%26%3D",
    );
  });
  it("takes the server URL as it is, as upstream does", () => {
    assert.equal(guardQueryUrl("http://p:9090/", "up"), "http://p:9090//api/v1/query?query=up");
  });
});

describe("prometheusGuardValue", () => {
  const vector = (...values: unknown[]): string =>
    JSON.stringify({
      status: "success",
      data: {
        resultType: "vector",
        result: values.map((v, i) => ({ metric: { app: `s${i}` }, value: [1700000000.123, v] })),
      },
    });

  it("reads data.result[0].value[1]", () => {
    assert.equal(
      prometheusGuardValue(
        '{"status":"success","data":{"resultType":"vector","result":[{"metric":{"location":"@web"},"value":[1513161148.757,"225.4068155675859"]}]}}',
      ),
      225.4068155675859,
    );
    assert.equal(prometheusGuardValue(vector("0")), 0);
    assert.equal(prometheusGuardValue(vector("-3")), -3);
    assert.equal(prometheusGuardValue(vector("1e+21")), 1e21);
  });

  it("takes the first of several series", () => {
    assert.equal(prometheusGuardValue(vector("225.4", "1000", "5")), 225.4);
  });

  it("parses the value with Go's ParseFloat", () => {
    assert.equal(prometheusGuardValue(vector("0x1p4")), 16);
    assert.equal(prometheusGuardValue(vector("1_000")), 1000);
  });

  it("checks neither status nor resultType when the value is there, as upstream", () => {
    assert.equal(prometheusGuardValue('{"data":{"result":[{"value":[0,"7"]}]}}'), 7);
    assert.equal(
      prometheusGuardValue('{"status":"","data":{"resultType":"","result":[{"value":[0,"7",1]}]}}'),
      7,
    );
  });

  it("D1: refuses NaN and infinite values", () => {
    for (const v of ["NaN", "+Inf", "-Inf", "Inf"]) {
      assertGuardError(
        () => prometheusGuardValue(vector(v)),
        "not-finite",
        `prometheus value "${v}" is not a finite number`,
      );
    }
  });

  it("refuses an empty vector", () => {
    assertGuardError(
      () => prometheusGuardValue('{"status":"success","data":{"resultType":"vector","result":[]}}'),
      "empty-result",
      "prometheus returned an empty result: the query matched no series",
    );
    assertGuardError(
      () =>
        prometheusGuardValue('{"status":"success","data":{"resultType":"vector","result":null}}'),
      "empty-result",
      "prometheus returned an empty result: the query matched no series",
    );
  });

  it("refuses a scalar and a string result", () => {
    assertGuardError(
      () =>
        prometheusGuardValue(
          '{"status":"success","data":{"resultType":"scalar","result":[1700000000.123,"225.4"]}}',
        ),
      "wrong-result-type",
      'unexpected prometheus result type "scalar": want a vector',
    );
    assertGuardError(
      () =>
        prometheusGuardValue(
          '{"status":"success","data":{"resultType":"string","result":[1700000000.123,"hello"]}}',
        ),
      "wrong-result-type",
      'unexpected prometheus result type "string": want a vector',
    );
  });

  it("refuses a matrix (series have values, not value)", () => {
    assertGuardError(
      () =>
        prometheusGuardValue(
          '{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"],[2,"2"]]}]}}',
        ),
      "wrong-result-type",
      'unexpected prometheus result type "matrix": want a vector',
    );
  });

  it("refuses an error body (HTTP 400) with Prometheus' own message", () => {
    assertGuardError(
      () =>
        prometheusGuardValue(
          '{"status":"error","errorType":"bad_data","error":"invalid parameter \\"query\\": 1:5: parse error: unexpected end of input"}',
        ),
      "prometheus-error",
      'prometheus returned an error: bad_data: invalid parameter "query": 1:5: parse error: unexpected end of input',
    );
    assertGuardError(
      () => prometheusGuardValue('{"status":"error"}'),
      "prometheus-error",
      'prometheus returned status "error"',
    );
  });

  it("refuses a body that is not JSON, quoting its start", () => {
    assertGuardError(
      () =>
        prometheusGuardValue(
          "<html><body>502 Bad Gateway from the ingress in front of it</body></html>",
        ),
      "not-json",
      'invalid prometheus response "<html><body>502 Bad Gateway from the ing..." (73 characters): not JSON',
    );
    assertGuardError(
      () => prometheusGuardValue(""),
      "not-json",
      'invalid prometheus response "": not JSON',
    );
  });

  it("refuses JSON that is not an object", () => {
    for (const body of ["null", "[]", "42", '"x"']) {
      assertGuardError(
        () => prometheusGuardValue(body),
        "invalid-response",
        `invalid prometheus response "${body}": want a JSON object`,
      );
    }
  });

  it("refuses what upstream's Go types cannot hold", () => {
    assertGuardError(
      () => prometheusGuardValue('{"status":1,"data":{"result":[{"value":[0,"7"]}]}}'),
      "invalid-response",
      "invalid prometheus response: status is 1, want a string",
    );
    assertGuardError(
      () => prometheusGuardValue('{"data":"x"}'),
      "invalid-response",
      'invalid prometheus response: data is "x", want an object',
    );
    assertGuardError(
      () => prometheusGuardValue('{"data":{"resultType":2,"result":[]}}'),
      "invalid-response",
      "invalid prometheus response: data.resultType is 2, want a string",
    );
    assertGuardError(
      () => prometheusGuardValue('{"data":{"resultType":"vector","result":{}}}'),
      "invalid-response",
      "invalid prometheus response: data.result is an object, want a list",
    );
    // a later series that does not fit fails the whole body, as Go's json.Unmarshal does
    assertGuardError(
      () =>
        prometheusGuardValue(
          '{"data":{"resultType":"vector","result":[{"value":[0,"7"]},{"value":"8"}]}}',
        ),
      "invalid-response",
      'invalid prometheus response: data.result[1].value is "8", want a list',
    );
    assertGuardError(
      () => prometheusGuardValue('{"data":{"resultType":"vector","result":[[0,"7"]]}}'),
      "invalid-response",
      "invalid prometheus response: data.result[0] is a list, want an object",
    );
  });

  it("refuses a first series without a value", () => {
    const noValue =
      "prometheus returned no value for the first series: data.result[0].value is missing";
    for (
      const body of [
        '{"data":{"resultType":"vector","result":[{"metric":{}},{"metric":{},"value":[0,"7"]}]}}',
        '{"data":{"resultType":"vector","result":[{"metric":{},"value":[0]}]}}',
        '{"data":{"resultType":"vector","result":[null]}}',
      ]
    ) {
      assertGuardError(() => prometheusGuardValue(body), "no-value", noValue);
    }
  });

  it("refuses a value that is not a string, or not a number", () => {
    assertGuardError(
      () => prometheusGuardValue(vector(225.4)),
      "invalid-value",
      "invalid prometheus value 225.4 at data.result[0].value[1]: want a string",
    );
    assertGuardError(
      () => prometheusGuardValue(vector(null)),
      "invalid-value",
      "invalid prometheus value null at data.result[0].value[1]: want a string",
    );
    assertGuardError(
      () => prometheusGuardValue(vector("abc")),
      "invalid-value",
      'invalid prometheus value "abc": not a number',
    );
    assertGuardError(
      () => prometheusGuardValue(vector("1e999")),
      "invalid-value",
      'invalid prometheus value "1e999": beyond the float64 range',
    );
  });
});

describe("deploymentInProgress (D3)", () => {
  type Rs = DeploymentInProgressInput["replicaSets"][number];
  const rs = (
    name: string,
    replicas: number | undefined,
    extra: { namespace?: string; app?: string; owner?: string; uid?: string; kind?: string } = {},
  ): Rs => ({
    metadata: {
      name,
      namespace: extra.namespace ?? "shop",
      ...(extra.app !== undefined ? { labels: { app: extra.app } } : {}),
      ...(extra.owner !== undefined
        ? {
          ownerReferences: [{
            kind: extra.kind ?? "Deployment",
            name: extra.owner,
            uid: extra.uid,
            controller: true,
          }],
        }
        : {}),
    },
    ...(replicas !== undefined ? { status: { replicas } } : {}),
  });
  const check = (
    replicaSets: Rs[],
    more: Partial<DeploymentInProgressInput> = {},
  ): ReturnType<typeof deploymentInProgress> =>
    deploymentInProgress({
      namespace: "shop",
      hpaLabels: { app: "web" },
      scaleTargetRef: { kind: "Deployment", name: "web" },
      replicaSets,
      ...more,
    });

  it("is in progress with two non-empty ReplicaSets of the HPA's app", () => {
    assert.deepEqual(check([rs("web-1", 3, { app: "web" }), rs("web-2", 1, { app: "web" })]), {
      inProgress: true,
      matchedBy: "app-label",
      nonEmptyReplicaSets: ["web-1", "web-2"],
    });
  });

  it("is not with one non-empty and one empty ReplicaSet", () => {
    assert.deepEqual(check([rs("web-1", 3, { app: "web" }), rs("web-2", 0, { app: "web" })]), {
      inProgress: false,
      matchedBy: "app-label",
      nonEmptyReplicaSets: ["web-1"],
    });
    assert.equal(
      check([rs("web-1", 3, { app: "web" }), rs("web-2", undefined, { app: "web" })])
        .inProgress,
      false,
    );
  });

  it("does not count a non-empty ReplicaSet of the same app in another namespace", () => {
    assert.deepEqual(
      check([rs("web-1", 3, { app: "web" }), rs("web-1", 3, { app: "web", namespace: "staging" })]),
      { inProgress: false, matchedBy: "app-label", nonEmptyReplicaSets: ["web-1"] },
    );
  });

  it("does not count ReplicaSets of other apps or without an app label", () => {
    assert.equal(
      check([rs("web-1", 3, { app: "web" }), rs("api-1", 3, { app: "api" }), rs("x", 3)])
        .inProgress,
      false,
    );
  });

  it("counts every ReplicaSet, not only the last one (upstream's pointer aliasing)", () => {
    // upstream read the last ReplicaSet of the list for every match: an empty last one hid the rollout
    assert.equal(
      check([
        rs("web-1", 3, { app: "web" }),
        rs("web-2", 2, { app: "web" }),
        rs("web-0", 0, { app: "web" }),
      ]).inProgress,
      true,
    );
    // and a non-empty last one made one non-empty ReplicaSet look like two
    assert.equal(
      check([rs("web-0", 0, { app: "web" }), rs("web-1", 3, { app: "web" })]).inProgress,
      false,
    );
  });

  it("without an app label, counts the ReplicaSets the scale target controls", () => {
    const sets = [
      rs("web-1", 3, { owner: "web" }),
      rs("web-2", 1, { owner: "web" }),
      rs("other-1", 2, { owner: "other" }),
      rs("unlabelled", 4),
    ];
    assert.deepEqual(check(sets, { hpaLabels: {} }), {
      inProgress: true,
      matchedBy: "scale-target",
      nonEmptyReplicaSets: ["web-1", "web-2"],
    });
    assert.deepEqual(check(sets, { hpaLabels: undefined }).nonEmptyReplicaSets, ["web-1", "web-2"]);
    // an empty app label counts as none
    assert.equal(check(sets, { hpaLabels: { app: "" } }).matchedBy, "scale-target");
    // upstream matched every unlabelled ReplicaSet; "unlabelled" alone is not a rollout
    assert.equal(
      check([rs("web-1", 3, { owner: "web" }), rs("unlabelled", 4)], { hpaLabels: {} })
        .inProgress,
      false,
    );
  });

  it("reads only the controller ownerReference, of the scale target's kind and namespace", () => {
    const notController: Rs = {
      metadata: {
        name: "web-2",
        namespace: "shop",
        ownerReferences: [{ kind: "Deployment", name: "web", controller: false }],
      },
      status: { replicas: 2 },
    };
    assert.equal(
      check([rs("web-1", 3, { owner: "web" }), notController], { hpaLabels: {} })
        .inProgress,
      false,
    );
    assert.equal(
      check([rs("web-1", 3, { owner: "web" }), rs("web-2", 3, { owner: "web", kind: "Rollout" })], {
        hpaLabels: {},
      }).inProgress,
      false,
    );
    assert.equal(
      check([rs("web-1", 3, { owner: "web" }), rs("web-2", 3, { owner: "web", namespace: "x" })], {
        hpaLabels: {},
      }).inProgress,
      false,
    );
    // an Argo Rollout controls ReplicaSets too
    assert.equal(
      check(
        [
          rs("web-1", 3, { owner: "web", kind: "Rollout" }),
          rs("web-2", 3, { owner: "web", kind: "Rollout" }),
        ],
        { hpaLabels: {}, scaleTargetRef: { kind: "Rollout", name: "web" } },
      ).inProgress,
      true,
    );
  });

  it("matches the Deployment's uid when the Deployments are given", () => {
    const sets = [
      rs("web-1", 3, { owner: "web", uid: "u2" }),
      rs("web-old", 3, { owner: "web", uid: "u1" }),
    ];
    const deployments = [
      { metadata: { name: "web", namespace: "shop", uid: "u2" } },
      { metadata: { name: "web", namespace: "staging", uid: "u9" } },
    ];
    assert.deepEqual(check(sets, { hpaLabels: {}, deployments }), {
      inProgress: false,
      matchedBy: "scale-target",
      nonEmptyReplicaSets: ["web-1"],
    });
    assert.equal(check(sets, { hpaLabels: {} }).inProgress, true);
  });
});

describe("decideGuard", () => {
  it("sets minReplicas to ceil(delta + value / requests-per-replica)", () => {
    const c = config(QUERY_CONFIG);
    assert.deepEqual(decide({ config: c, queryValue: 225.4 }), {
      requestRate: 225.4,
      queryRan: true,
      queryMinimum: 90,
      currentReplicas: 10,
      maxScaleDown: 10,
      scaleDownMinimum: 0,
      deploymentInProgress: false,
      target: 90,
      lowerBound: 3,
      decidedBy: "query",
      write: {
        minReplicas: 90,
        previousMinReplicas: 3,
        maxReplicas: 91,
        previousMaxReplicas: 50,
        stateAnnotation: state(c),
      },
    });
  });

  it("does float64 maths as Go does", () => {
    const q = (value: number, rpr: string, delta = "0"): number =>
      decide({
        config: config({
          [ESTAFETTE_QUERY_ANNOTATION]: "q",
          [ESTAFETTE_REQUESTS_PER_REPLICA_ANNOTATION]: rpr,
          [ESTAFETTE_DELTA_ANNOTATION]: delta,
        }),
        queryValue: value,
        lowerBound: -100,
      }).queryMinimum;
    assert.equal(q(2.1, "0.7"), 4); // 3.0000000000000004
    assert.equal(q(0.3, "0.1"), 3); // 2.9999999999999996
    assert.equal(q(0.2, "1", "0.1"), 1); // 0.30000000000000004
    assert.equal(q(225.4, "25", "1"), 11);
    assert.equal(q(225.4, "25", "-0.5"), 9);
    assert.equal(q(6, "2"), 3); // an exact quotient is not rounded up
    assert.ok(Object.is(q(0.2, "1", "-0.5"), 0)); // ceil(-0.3) is 0, not -0
  });

  it("runs no query with requests-per-replica 0, negative or NaN (q = 0)", () => {
    for (const rpr of ["0", "-1"]) {
      const d = decide({
        config: config({ ...QUERY_CONFIG, [ESTAFETTE_REQUESTS_PER_REPLICA_ANNOTATION]: rpr }),
        queryValue: 1000,
      });
      assert.equal(d.queryRan, false);
      assert.equal(d.requestRate, 0);
      assert.equal(d.queryMinimum, 0);
      assert.equal(d.target, 3);
      assert.equal(d.decidedBy, "lower-bound");
    }
  });

  it("uses requests-per-replica 1 when its annotation does not parse", () => {
    const d = decide({
      config: config({ ...QUERY_CONFIG, [ESTAFETTE_REQUESTS_PER_REPLICA_ANNOTATION]: "abc" }),
      queryValue: 20,
    });
    assert.equal(d.queryMinimum, 20); // ceil(-0.5 + 20 / 1)
  });

  it("lets a negative delta drive q below 0, and the lower bound then wins", () => {
    const d = decide({
      config: config({ ...QUERY_CONFIG, [ESTAFETTE_DELTA_ANNOTATION]: "-5" }),
      queryValue: 2.5,
      minReplicas: 5,
    });
    assert.equal(d.queryMinimum, -4);
    assert.equal(d.target, 3);
    assert.equal(d.decidedBy, "lower-bound");
    assert.equal(d.write?.minReplicas, 3);
  });

  it("applies the lower bound to an HPA with only the ratio set", () => {
    const c = config({ [ESTAFETTE_SCALE_DOWN_MAX_RATIO_ANNOTATION]: "0.5" });
    const d = decide({ config: c, currentReplicas: 2, minReplicas: 1 });
    assert.equal(d.queryRan, false);
    assert.equal(d.maxScaleDown, 1);
    assert.equal(d.scaleDownMinimum, 1);
    assert.equal(d.target, 3);
    assert.equal(d.decidedBy, "lower-bound");
    assert.deepEqual(d.write, {
      minReplicas: 3,
      previousMinReplicas: 1,
      previousMaxReplicas: 50,
      stateAnnotation: state(c),
    });
  });

  it("gives every enabled HPA minReplicas of at least the lower bound, even with nothing set", () => {
    assert.equal(decide({ config: config(), minReplicas: 1 }).write?.minReplicas, 3);
  });

  it("takes a lower bound of 0 or 1 from the environment", () => {
    const c = config();
    const zero = decide({ config: c, lowerBound: parseLowerBound("0").lowerBound, minReplicas: 2 });
    assert.equal(zero.target, 0);
    assert.equal(zero.scaleDownMinimum, 0); // ratio 1: cur - cur
    assert.equal(zero.decidedBy, "no-query");
    assert.equal(zero.write?.minReplicas, 0);
    const one = decide({ config: c, lowerBound: parseLowerBound("1").lowerBound, minReplicas: 2 });
    assert.equal(one.target, 1);
    assert.equal(one.decidedBy, "lower-bound");
  });

  it("lowers the user's minReplicas when the rule says so", () => {
    const d = decide({
      config: config(QUERY_CONFIG),
      queryValue: 5,
      minReplicas: 8,
      maxReplicas: 10,
    });
    assert.equal(d.target, 3); // ceil(-0.5 + 2) = 2, raised to 3
    assert.equal(d.write?.minReplicas, 3);
    assert.equal(d.write?.previousMinReplicas, 8);
    assert.equal(d.write?.maxReplicas, undefined);
  });

  it("writes nothing when the target is minReplicas, even when min == max", () => {
    const d = decide({
      config: config(QUERY_CONFIG),
      queryValue: 25,
      minReplicas: 10,
      maxReplicas: 10,
    });
    assert.equal(d.target, 10);
    assert.equal(d.write, null);
  });

  it("raises maxReplicas to target + 1 when the target reaches or passes it", () => {
    const c = config(QUERY_CONFIG);
    const at = decide({ config: c, queryValue: 25, minReplicas: 3, maxReplicas: 10 }); // target 10
    assert.equal(at.write?.minReplicas, 10);
    assert.equal(at.write?.maxReplicas, 11);
    const above = decide({ config: c, queryValue: 50, minReplicas: 3, maxReplicas: 10 }); // 20
    assert.equal(above.write?.minReplicas, 20);
    assert.equal(above.write?.maxReplicas, 21);
    const below = decide({ config: c, queryValue: 22, minReplicas: 3, maxReplicas: 10 }); // 9
    assert.equal(below.write?.minReplicas, 9);
    assert.equal(below.write?.maxReplicas, undefined);
  });

  it("never lowers maxReplicas again", () => {
    const c = config(QUERY_CONFIG);
    // after a raise to 21, the load falls: min goes down, max stays
    const d = decide({ config: c, queryValue: 5, minReplicas: 20, maxReplicas: 21 });
    assert.equal(d.write?.minReplicas, 3);
    assert.equal(d.write?.maxReplicas, undefined);
    assert.deepEqual(guardPatch(d.write!).spec, { minReplicas: 3 });
  });

  describe("the scale-down cap", () => {
    const cap = (ratio: string, cur: number): GuardDecision =>
      decide({
        config: config({ [ESTAFETTE_SCALE_DOWN_MAX_RATIO_ANNOTATION]: ratio }),
        currentReplicas: cur,
        lowerBound: -100,
      });
    it("keeps cur - floor(cur x ratio)", () => {
      assert.equal(cap("0.5", 8).scaleDownMinimum, 4);
      assert.equal(cap("0.5", 8).maxScaleDown, 4);
      assert.equal(cap("0.2", 10).scaleDownMinimum, 8);
      assert.equal(cap("0.9", 10).scaleDownMinimum, 1);
      assert.equal(cap("0.5", 8).decidedBy, "scale-down-cap");
    });
    it("allows one pod per step when floor(cur x ratio) is 0 (ratio 0, or a small one)", () => {
      assert.equal(cap("0", 10).maxScaleDown, 0);
      assert.equal(cap("0", 10).scaleDownMinimum, 9);
      assert.equal(cap("0.2", 3).scaleDownMinimum, 2);
    });
    it("has no effect with ratio 1 (cur - cur = 0)", () => {
      assert.equal(cap("1", 10).scaleDownMinimum, 0);
      assert.equal(cap("1", 10).decidedBy, "no-query");
    });
    it("D2: a ratio above 1 or below 0 counts as 1, so no scale-up spiral", () => {
      // upstream: -0.5 with 10 replicas gave 15, more than are running
      assert.equal(cap("-0.5", 10).scaleDownMinimum, 0);
      assert.equal(cap("1.5", 10).scaleDownMinimum, 0);
      assert.equal(cap("NaN", 10).scaleDownMinimum, 0);
    });
    it("gives cur - 1 = -1 with currentReplicas 0, and the lower bound wins", () => {
      const d = decide({
        config: config({ [ESTAFETTE_SCALE_DOWN_MAX_RATIO_ANNOTATION]: "0.5" }),
        currentReplicas: 0,
      });
      assert.equal(d.maxScaleDown, 0);
      assert.equal(d.scaleDownMinimum, -1);
      assert.equal(d.target, 3);
    });
    it("takes the larger of the query minimum and the cap", () => {
      const c = config({ ...QUERY_CONFIG, [ESTAFETTE_SCALE_DOWN_MAX_RATIO_ANNOTATION]: "0.2" });
      const capWins = decide({ config: c, queryValue: 10, currentReplicas: 10 }); // q 4, g 8
      assert.equal(capWins.target, 8);
      assert.equal(capWins.decidedBy, "scale-down-cap");
      const queryWins = decide({ config: c, queryValue: 50, currentReplicas: 10 }); // q 20, g 8
      assert.equal(queryWins.target, 20);
      assert.equal(queryWins.decidedBy, "query");
      const tie = decide({ config: c, queryValue: 21.25, currentReplicas: 10 }); // q 8, g 8
      assert.equal(tie.decidedBy, "query");
    });
  });

  describe("deployment checking", () => {
    const annotations = {
      ...QUERY_CONFIG,
      [ESTAFETTE_SCALE_DOWN_MAX_RATIO_ANNOTATION]: "0.2",
      [ESTAFETTE_DEPLOYMENT_CHECKING_ANNOTATION]: "true",
    };
    it("turns the cap off (g = q) while a deployment is in progress", () => {
      const d = decide({
        config: config(annotations),
        queryValue: 10,
        currentReplicas: 20,
        deploymentInProgress: true,
      });
      assert.equal(d.maxScaleDown, null);
      assert.equal(d.scaleDownMinimum, 4);
      assert.equal(d.deploymentInProgress, true);
      assert.equal(d.target, 4);
      assert.equal(d.decidedBy, "query");
    });
    it("keeps the cap when no deployment is in progress", () => {
      const d = decide({ config: config(annotations), queryValue: 10, currentReplicas: 20 });
      assert.equal(d.scaleDownMinimum, 16);
      assert.equal(d.target, 16);
    });
    it("ignores a deployment in progress when checking is off", () => {
      const d = decide({
        config: config({ ...annotations, [ESTAFETTE_DEPLOYMENT_CHECKING_ANNOTATION]: "True" }),
        queryValue: 10,
        currentReplicas: 20,
        deploymentInProgress: true,
      });
      assert.equal(d.deploymentInProgress, false);
      assert.equal(d.target, 16);
    });
  });

  describe("D1: a value that is not a replica count is an error, and nothing is written", () => {
    const c = config(QUERY_CONFIG);
    it("refuses NaN and infinite values", () => {
      assertGuardError(
        () => decide({ config: c, queryValue: NaN }),
        "not-finite",
        "prometheus value NaN is not a finite number",
      );
      assertGuardError(
        () => decide({ config: c, queryValue: -Infinity }),
        "not-finite",
        "prometheus value -Inf is not a finite number",
      );
    });
    it("refuses a query minimum beyond the int32 range", () => {
      assertGuardError(
        () => decide({ config: c, queryValue: 1e300 }),
        "out-of-range",
        "query minimum ceil(-0.5 + 1e+300 / 2.5) = 4e+299 is not an int32 replica count",
      );
      assertGuardError(
        () => decide({ config: c, queryValue: -1e10 }),
        "out-of-range",
        "query minimum ceil(-0.5 + -10000000000 / 2.5) = -4000000000 is not an int32 replica count",
      );
      // 2^31 - 1 is the last valid one
      const ok = decide({
        config: config({ [ESTAFETTE_QUERY_ANNOTATION]: "q" }),
        queryValue: 2147483647,
        minReplicas: 2147483647,
        maxReplicas: 2147483647,
      });
      assert.equal(ok.queryMinimum, 2147483647);
      assert.equal(ok.write, null);
    });
    it("refuses a raised maxReplicas beyond the int32 range", () => {
      assertGuardError(
        () =>
          decide({
            config: config({ [ESTAFETTE_QUERY_ANNOTATION]: "q" }),
            queryValue: 2147483647,
            maxReplicas: 100,
          }),
        "out-of-range",
        "maxReplicas 2147483648 (minReplicas 2147483647 + 1) is beyond the int32 range",
      );
    });
    it("refuses a NaN or infinite query minimum from the delta or a tiny requests-per-replica", () => {
      assertGuardError(
        () =>
          decide({
            config: config({ ...QUERY_CONFIG, [ESTAFETTE_DELTA_ANNOTATION]: "NaN" }),
            queryValue: 1,
          }),
        "out-of-range",
        "query minimum ceil(NaN + 1 / 2.5) = NaN is not an int32 replica count",
      );
      assertGuardError(
        () =>
          decide({
            config: config({
              ...QUERY_CONFIG,
              [ESTAFETTE_REQUESTS_PER_REPLICA_ANNOTATION]: "5e-324",
            }),
            queryValue: 1,
          }),
        "out-of-range",
        "query minimum ceil(-0.5 + 1 / 5e-324) = +Inf is not an int32 replica count",
      );
    });
  });

  it("cannot write an HPA whose requests-per-replica or delta is not finite, as upstream", () => {
    // rpr Inf: the query runs, value / Inf = 0; the state annotation cannot hold Inf
    const inf = config({ ...QUERY_CONFIG, [ESTAFETTE_REQUESTS_PER_REPLICA_ANNOTATION]: "Inf" });
    assertGuardError(
      () => decide({ config: inf, queryValue: 100, minReplicas: 5 }),
      "unencodable-state",
      "cannot write the estafette.io/hpa-scaler-state annotation: requestsPerReplica is +Inf, which JSON cannot hold",
    );
    // nothing to write: no error
    assert.equal(decide({ config: inf, queryValue: 100, minReplicas: 3 }).write, null);
    // rpr NaN: no query, q = 0
    const nan = config({ ...QUERY_CONFIG, [ESTAFETTE_REQUESTS_PER_REPLICA_ANNOTATION]: "NaN" });
    assert.equal(decide({ config: nan, minReplicas: 3 }).queryRan, false);
    assertGuardError(
      () => decide({ config: nan, minReplicas: 4 }),
      "unencodable-state",
      "cannot write the estafette.io/hpa-scaler-state annotation: requestsPerReplica is NaN, which JSON cannot hold",
    );
  });

  it("needs the query value when the query runs, and ignores it when it does not", () => {
    assert.throws(() => decide({ config: config(QUERY_CONFIG) }), {
      message: `missing query value: the guard runs "${QUERY}"`,
    });
    assert.equal(decide({ config: config(), queryValue: NaN }).queryMinimum, 0);
  });

  it("refuses a disabled config and counts that are not int32", () => {
    assert.throws(() => decide({ config: { ...config(), enabled: false } }), {
      message: "the guard is off for this HPA: nothing to decide",
    });
    assert.throws(() => decide({ config: config(), currentReplicas: -1 }), {
      message: "invalid currentReplicas -1: want an integer from 0 to 2147483647",
    });
    assert.throws(() => decide({ config: config(), minReplicas: 1.5 }), {
      message: "invalid minReplicas 1.5: want an integer from -2147483648 to 2147483647",
    });
    assert.throws(() => decide({ config: config(), lowerBound: NaN }), {
      message: "invalid lower bound NaN: want an integer from -2147483648 to 2147483647",
    });
  });
});

describe("guardStateAnnotation", () => {
  it("writes upstream's JSON, keys in upstream's order, lastUpdated in UTC seconds", () => {
    const c = config({
      ...QUERY_CONFIG,
      [ESTAFETTE_QUERY_ANNOTATION]: "sum(rate(requests_total[5m]))",
    });
    assert.equal(
      guardStateAnnotation(c, NOW),
      '{"enabled":"true","prometheusQuery":"sum(rate(requests_total[5m]))","requestsPerReplica":2.5,"delta":-0.5,"lastUpdated":"2024-03-31T08:00:00Z","prometheusServerUrl":"http://prometheus:9090","scaleDownMaxRatio":1,"enableScaleDownRatioDeploymentChecking":"false"}',
    );
  });

  it("writes the defaults of an HPA with only the switch", () => {
    assert.equal(
      guardStateAnnotation(config(), Date.UTC(2021, 0, 2, 3, 4, 5)),
      '{"enabled":"true","prometheusQuery":"","requestsPerReplica":1,"delta":0,"lastUpdated":"2021-01-02T03:04:05Z","prometheusServerUrl":"http://prometheus:9090","scaleDownMaxRatio":1,"enableScaleDownRatioDeploymentChecking":"false"}',
    );
  });

  it("writes the effective values: the per-HPA URL, the ratio after D2, checking verbatim", () => {
    const c = config({
      [ESTAFETTE_SERVER_URL_ANNOTATION]: "http://team:9090",
      [ESTAFETTE_SCALE_DOWN_MAX_RATIO_ANNOTATION]: "-0.5",
      [ESTAFETTE_DEPLOYMENT_CHECKING_ANNOTATION]: "yes",
      [ESTAFETTE_REQUESTS_PER_REPLICA_ANNOTATION]: "abc",
    });
    assert.equal(
      guardStateAnnotation(c, NOW),
      '{"enabled":"true","prometheusQuery":"","requestsPerReplica":1,"delta":0,"lastUpdated":"2024-03-31T08:00:00Z","prometheusServerUrl":"http://team:9090","scaleDownMaxRatio":1,"enableScaleDownRatioDeploymentChecking":"yes"}',
    );
  });

  it("writes numbers and strings as Go's encoding/json does", () => {
    const c = config({
      [ESTAFETTE_QUERY_ANNOTATION]: 'sum(x{a="b"}) > 0 & y < 1\n\u2028é',
      [ESTAFETTE_REQUESTS_PER_REPLICA_ANNOTATION]: "1e21",
      [ESTAFETTE_DELTA_ANNOTATION]: "-0",
      [ESTAFETTE_SCALE_DOWN_MAX_RATIO_ANNOTATION]: "1e-7",
    });
    assert.equal(
      guardStateAnnotation(c, NOW),
      '{"enabled":"true","prometheusQuery":"sum(x{a=\\"b\\"}) \\u003e 0 \\u0026 y \\u003c 1\\n\\u2028é","requestsPerReplica":1e+21,"delta":-0,"lastUpdated":"2024-03-31T08:00:00Z","prometheusServerUrl":"http://prometheus:9090","scaleDownMaxRatio":1e-7,"enableScaleDownRatioDeploymentChecking":"false"}',
    );
  });

  it("cannot hold NaN or Inf", () => {
    assertGuardError(
      () => guardStateAnnotation(config({ [ESTAFETTE_DELTA_ANNOTATION]: "-Inf" }), NOW),
      "unencodable-state",
      "cannot write the estafette.io/hpa-scaler-state annotation: delta is -Inf, which JSON cannot hold",
    );
  });
});

describe("formatGoJsonFloat", () => {
  const cases: [number, string][] = [
    [1, "1"],
    [0, "0"],
    [-0, "-0"],
    [2.5, "2.5"],
    [-0.5, "-0.5"],
    [0.1, "0.1"],
    [100, "100"],
    [1e20, "100000000000000000000"],
    [999999999999999900000, "999999999999999900000"],
    [1e21, "1e+21"],
    [1.5e300, "1.5e+300"],
    [0.000001, "0.000001"],
    [0.0000015, "0.0000015"],
    [1e-7, "1e-7"],
    [1.5e-7, "1.5e-7"],
    [5e-324, "5e-324"],
    [1.7976931348623157e308, "1.7976931348623157e+308"],
    [0.1 + 0.2, "0.30000000000000004"],
  ];
  for (const [x, want] of cases) {
    it(`writes ${want}`, () => assert.equal(formatGoJsonFloat(x), want));
  }
  it("refuses NaN and Inf as json.Marshal does", () => {
    assert.throws(() => formatGoJsonFloat(NaN), { message: "json: unsupported value: NaN" });
    assert.throws(() => formatGoJsonFloat(Infinity), { message: "json: unsupported value: +Inf" });
  });
});

describe("guardPatch", () => {
  it("patches minReplicas and the state annotation", () => {
    assert.deepEqual(
      guardPatch({
        minReplicas: 4,
        previousMinReplicas: 8,
        previousMaxReplicas: 10,
        stateAnnotation: "{}",
      }),
      {
        metadata: { annotations: { "estafette.io/hpa-scaler-state": "{}" } },
        spec: { minReplicas: 4 },
      },
    );
  });
  it("patches maxReplicas only when raised", () => {
    const c = config(QUERY_CONFIG);
    const d = decide({ config: c, queryValue: 25, minReplicas: 3, maxReplicas: 10 });
    assert.deepEqual(guardPatch(d.write!), {
      metadata: { annotations: { "estafette.io/hpa-scaler-state": state(c) } },
      spec: { minReplicas: 10, maxReplicas: 11 },
    });
  });
});

describe("guardChangeMessage", () => {
  const message = (input: Partial<GuardInput> & { config: GuardConfig }): string =>
    guardChangeMessage(decide(input), input.config);

  it("names the query with its numbers", () => {
    assert.equal(
      message({ config: config(QUERY_CONFIG), queryValue: 225.4, maxReplicas: 100 }),
      "minReplicas 3 -> 90: query 225.4 / 2.5 - 0.5",
    );
    assert.equal(
      message({
        config: config({
          ...QUERY_CONFIG,
          [ESTAFETTE_REQUESTS_PER_REPLICA_ANNOTATION]: "25",
          [ESTAFETTE_DELTA_ANNOTATION]: "1",
        }),
        queryValue: 225.4,
      }),
      "minReplicas 3 -> 11: query 225.4 / 25 + 1",
    );
    assert.equal(
      message({ config: config({ [ESTAFETTE_QUERY_ANNOTATION]: "q" }), queryValue: 7.5 }),
      "minReplicas 3 -> 8: query 7.5 / 1",
    );
  });

  it("names a raised maxReplicas", () => {
    assert.equal(
      message({ config: config(QUERY_CONFIG), queryValue: 225.4 }),
      "minReplicas 3 -> 90, maxReplicas 50 -> 91: query 225.4 / 2.5 - 0.5",
    );
  });

  it("names the scale-down cap", () => {
    const c = config({ [ESTAFETTE_SCALE_DOWN_MAX_RATIO_ANNOTATION]: "0.5" });
    assert.equal(
      message({ config: c, currentReplicas: 8, minReplicas: 1, lowerBound: 1 }),
      "minReplicas 1 -> 4: scale-down cap 8 - floor(8 x 0.5) = 4",
    );
    assert.equal(
      message({
        config: config({ [ESTAFETTE_SCALE_DOWN_MAX_RATIO_ANNOTATION]: "0.2" }),
        currentReplicas: 4,
        minReplicas: 1,
        lowerBound: 1,
      }),
      "minReplicas 1 -> 3: scale-down cap 4 - 1 = 3 (floor(4 x 0.2) = 0)",
    );
  });

  it("names the lower bound", () => {
    assert.equal(
      message({ config: config(QUERY_CONFIG), queryValue: 1, minReplicas: 5 }),
      "minReplicas 5 -> 3: lower bound 3",
    );
  });

  it("says when no query set the target", () => {
    assert.equal(
      message({ config: config(), minReplicas: 2, lowerBound: 0 }),
      "minReplicas 2 -> 0: no query",
    );
  });

  it("says when a deployment in progress turned the cap off", () => {
    const c = config({
      ...QUERY_CONFIG,
      [ESTAFETTE_SCALE_DOWN_MAX_RATIO_ANNOTATION]: "0.2",
      [ESTAFETTE_DEPLOYMENT_CHECKING_ANNOTATION]: "true",
    });
    assert.equal(
      message({ config: c, queryValue: 25, currentReplicas: 20, deploymentInProgress: true }),
      "minReplicas 3 -> 10: query 25 / 2.5 - 0.5 (no scale-down cap: deployment in progress)",
    );
  });

  it("describes a decision without a write, for logs", () => {
    assert.equal(
      message({ config: config(QUERY_CONFIG), queryValue: 25, minReplicas: 10, maxReplicas: 10 }),
      "minReplicas 10 unchanged: query 25 / 2.5 - 0.5",
    );
  });
});

describe("the guard end to end over the pure functions (shop/web, lower bound 3)", () => {
  const annotations = {
    "estafette.io/hpa-scaler": "true",
    "estafette.io/hpa-scaler-prometheus-query": QUERY,
    "estafette.io/hpa-scaler-requests-per-replica": "2.5",
    "estafette.io/hpa-scaler-delta": "-0.5",
    "estafette.io/hpa-scaler-scale-down-max-ratio": "0.5",
    "estafette.io/hpa-scaler-enable-scale-down-ratio-deployment-checking": "true",
  };
  const body =
    '{"status":"success","data":{"resultType":"vector","result":[{"metric":{"app":"web"},"value":[1711872000,"2.4"]}]}}';

  it("cuts a drop from 8 to 1 to 4 in the first step, and writes the patch", () => {
    const { config: c, warnings: w } = parseGuardConfig(annotations, { defaultPrometheusUrl: URL });
    assert.deepEqual(w, []);
    assert.equal(guardRunsQuery(c), true);
    const progress = deploymentInProgress({
      namespace: "shop",
      hpaLabels: { app: "web" },
      scaleTargetRef: { kind: "Deployment", name: "web" },
      replicaSets: [
        {
          metadata: { name: "web-1", namespace: "shop", labels: { app: "web" } },
          status: { replicas: 8 },
        },
        {
          metadata: { name: "web-0", namespace: "shop", labels: { app: "web" } },
          status: { replicas: 0 },
        },
        {
          metadata: { name: "web-1", namespace: "canary", labels: { app: "web" } },
          status: { replicas: 1 },
        },
      ],
    });
    assert.equal(progress.inProgress, false);
    const d = decideGuard({
      config: c,
      queryValue: prometheusGuardValue(body),
      currentReplicas: 8,
      minReplicas: 1,
      maxReplicas: 10,
      lowerBound: parseLowerBound(undefined).lowerBound,
      deploymentInProgress: progress.inProgress,
      now: NOW,
    });
    assert.equal(d.queryMinimum, 1); // ceil(-0.5 + 0.96)
    assert.equal(d.target, 4);
    assert.equal(
      guardChangeMessage(d, c),
      "minReplicas 1 -> 4: scale-down cap 8 - floor(8 x 0.5) = 4",
    );
    assert.deepEqual(guardPatch(d.write!), {
      metadata: {
        annotations: {
          "estafette.io/hpa-scaler-state":
            `{"enabled":"true","prometheusQuery":"sum(rate(nginx_http_requests_total{app='web'}[5m])) by (app)","requestsPerReplica":2.5,"delta":-0.5,"lastUpdated":"2024-03-31T08:00:00Z","prometheusServerUrl":"http://prometheus:9090","scaleDownMaxRatio":0.5,"enableScaleDownRatioDeploymentChecking":"true"}`,
        },
      },
      spec: { minReplicas: 4 },
    });
  });
});
