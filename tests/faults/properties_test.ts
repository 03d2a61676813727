/**
 * Property-based tests (fast-check, fixed seeds, bounded runs) of the pure parsers of src/core/
 * that read what HPA authors write: the annotation grammar and plans, Go durations, JSON
 * extraction (json-key / json-eval) and Kubernetes quantities. Each property says what must hold
 * for every input: the parser returns a result or throws an Error with a message (never
 * anything else, never a stack overflow), results are finite where a metric value or a
 * duration is expected, and formatted values parse back to themselves.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  parseMetricAnnotations,
  RESERVED_CONFIG_KEYS,
} from "../../src/core/kube_metrics_adapter/annotations.ts";
import { planHpa } from "../../src/core/kube_metrics_adapter/plan.ts";
import { formatDuration, parseDuration } from "../../src/core/duration.ts";
import {
  extractJsonValue,
  validateJsonExtraction,
} from "../../src/core/kube_metrics_adapter/json_extract.ts";
import {
  canonicalQuantity,
  formatQuantity,
  parseQuantity,
} from "../../src/core/kubernetes/quantity.ts";

/** The same inputs on every run and runtime; a failure prints its seed and path to replay. */
const SEED = 42;

/** Go's longest `time.Duration`, 2562047h47m16.854775807s, in seconds (as a double). */
const GO_MAX_DURATION_SECONDS = 9223372036.854775807;

type Outcome<T> = { ok: true; value: T } | { ok: false; error: Error };

/**
 * Run `fn`; a throw must be an Error with a non-empty message that is not the runtime's stack
 * overflow (a parser of untrusted input bounds its own recursion).
 */
function outcome<T>(fn: () => T): Outcome<T> {
  try {
    return { ok: true, value: fn() };
  } catch (e) {
    assert.ok(e instanceof Error, `threw a non-Error: ${String(e)}`);
    assert.equal(typeof e.message, "string");
    assert.notEqual(e.message, "", "threw an Error with an empty message");
    assert.doesNotMatch(e.message, /call stack|too much recursion/i, "overflowed the stack");
    return { ok: false, error: e };
  }
}

// ---- arbitraries -----------------------------------------------------------------------

const DURATION_UNITS = ["ns", "us", "µs", "μs", "ms", "s", "m", "h"];

/** Strings in Go's duration grammar (some beyond Go's range), plus near misses. */
const durationLike: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(
    fc.constantFrom("", "", "+", "-"),
    fc.array(
      fc.tuple(
        fc.oneof(fc.stringMatching(/^\d{1,6}$/), fc.stringMatching(/^\d{1,25}$/)),
        fc.option(fc.stringMatching(/^\d{0,12}$/), { nil: undefined }),
        fc.constantFrom(...DURATION_UNITS),
      ).map(([whole, frac, unit]) => `${whole}${frac === undefined ? "" : "." + frac}${unit}`),
      { minLength: 1, maxLength: 4 },
    ),
  ).map(([sign, parts]) => sign + parts.join("")),
  fc.constantFrom("0", "+0", "-0", "", " ", "1", "s", ".s", "1.s", ".5m", "1e3s", "1 s", "1sm"),
  fc.string({ maxLength: 20 }),
);

/** Documents of the shapes json-path endpoints serve, with the extremes of doubles. */
const jsonNumber = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  fc.constantFrom(0, -0, 1e308, -1e308, Number.MAX_VALUE, Number.MIN_VALUE, 5e-324),
);
const jsonLeaf = fc.oneof(
  jsonNumber,
  jsonNumber.map(String),
  fc.constantFrom("NaN", "Infinity", "1e400", "", "x", true, false, null),
);
const jsonDoc: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    jsonLeaf,
    fc.array(tie("node"), { maxLength: 5 }),
    fc.dictionary(fc.constantFrom("a", "b", "v", "items", "rps", "x y"), tie("node"), {
      maxKeys: 4,
    }),
  ),
})).node;

const JSON_KEY_PARTS = [
  "$",
  ".a",
  ".b",
  ".v",
  ".items",
  "..a",
  "..*",
  ".*",
  "[0]",
  "[-1]",
  "[*]",
  "['x y']",
  '["a"]',
  "[?(@.a > 1)]",
  "[?(@ > 0)]",
  "[(@.length-1)]",
  "[0:2]",
  "[",
  "]",
  "(",
  "~",
  "^",
  ".",
];

/** json-key values: JSONPath-like token soup, and arbitrary text. */
const jsonKeyLike: fc.Arbitrary<string> = fc.oneof(
  fc.array(fc.constantFrom(...JSON_KEY_PARTS), { minLength: 1, maxLength: 7 }).map((p) =>
    p.join("")
  ),
  fc.array(fc.constantFrom(...JSON_KEY_PARTS.slice(1)), { maxLength: 6 }).map((p) =>
    "$" + p.join("")
  ),
  fc.string({ maxLength: 24 }),
);

const EVAL_TOKENS = [
  "$.a",
  "$.b",
  "$.v",
  "$..a",
  "$.v[*]",
  "$.items[?(@.a > 1)].a",
  "@",
  "1",
  "0",
  "2.5",
  "1e308",
  "'s'",
  "pi",
  "e",
  "+",
  "-",
  "*",
  "/",
  "%",
  "**",
  "==",
  "<",
  "&&",
  "||",
  "!",
  "(",
  ")",
  ",",
  "avg(",
  "sum(",
  "min(",
  "max(",
  "count(",
  "diff(",
  "first(",
  "last(",
  "ceil(",
  "sqrt(",
  "log(",
  "abs(",
  "pow(",
  "unknown(",
];

/** json-eval values: expression token soup, and arbitrary text. */
const jsonEvalLike: fc.Arbitrary<string> = fc.oneof(
  fc.array(fc.constantFrom(...EVAL_TOKENS), { minLength: 1, maxLength: 9 }).map((t) => t.join(" ")),
  fc.string({ maxLength: 24 }),
);

const aggregatorLike = fc.option(
  fc.constantFrom("avg", "min", "max", "sum", "count", "last", "diff", "median", ""),
  { nil: undefined },
);

/** A json-path config: json-key or json-eval (sometimes both or neither), maybe an aggregator. */
const extractionConfig: fc.Arbitrary<Record<string, string>> = fc.record({
  "json-key": fc.option(jsonKeyLike, { nil: undefined }),
  "json-eval": fc.option(jsonEvalLike, { nil: undefined }),
  aggregator: aggregatorLike,
}, { requiredKeys: [] }).map((c) => {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(c)) if (v !== undefined) out[k] = v;
  return out;
});

const METRIC_NAMES = ["queue", "rps", "backlog", "requests-per-second", "prometheus-query"];
const COLLECTORS = ["json-path", "prometheus", "influxdb", "zmon", "sqs-queue-length", "http"];
const CONFIG_KEYS = [
  "interval",
  "per-replica",
  "min-pod-ready-age",
  "query",
  "json-key",
  "endpoint",
  "prometheus-server",
  "request-timeout",
];

/** `metric-config.*` keys: well-formed ones from small pools, malformed ones, and others. */
const annotationKeyLike: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(
    fc.constantFrom("pods", "object", "external", "External", "custom", ""),
    fc.oneof(fc.constantFrom(...METRIC_NAMES), fc.string({ maxLength: 6 })),
    fc.oneof(fc.constantFrom(...COLLECTORS), fc.string({ maxLength: 6 })),
    fc.oneof(fc.constantFrom(...CONFIG_KEYS), fc.string({ maxLength: 6 })),
  ).map(([t, m, c, k]) => `metric-config.${t}.${m}.${c}/${k}`),
  fc.string({ maxLength: 30 }).map((s) => "metric-config." + s),
  fc.string({ maxLength: 20 }),
);

const annotationValueLike: fc.Arbitrary<string> = fc.oneof(
  durationLike,
  fc.constantFrom("true", "false", "TRUE", "sum(up)", "http://127.0.0.1:1/x", "$.a"),
  fc.string({ maxLength: 20 }),
);

const annotationsLike: fc.Arbitrary<Record<string, string>> = fc.dictionary(
  annotationKeyLike,
  annotationValueLike,
  { maxKeys: 8 },
);

const quantityLike: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(
    fc.constantFrom("", "+", "-"),
    fc.stringMatching(/^\d{0,20}$/),
    fc.option(fc.stringMatching(/^\d{0,15}$/), { nil: undefined }),
    fc.oneof(
      fc.constantFrom(
        "",
        "n",
        "u",
        "m",
        "k",
        "M",
        "G",
        "T",
        "P",
        "E",
        "Ki",
        "Mi",
        "Gi",
        "Ti",
        "Pi",
        "Ei",
      ),
      fc.integer({ min: -400, max: 400 }).map((e) => `e${e}`),
      fc.integer({ min: -30, max: 30 }).map((e) => `E${e}`),
    ),
  ).map(([sign, whole, frac, suffix]) =>
    `${sign}${whole}${frac === undefined ? "" : "." + frac}${suffix}`
  ),
  fc.string({ maxLength: 12 }),
);

const targetLike = fc.oneof(
  fc.record({ type: fc.constant("AverageValue"), averageValue: fc.constantFrom("1", "500m", 10) }),
  fc.record({ type: fc.constant("Value"), value: fc.constantFrom("1", "2k", "bad") }),
  fc.record({ type: fc.constant("Utilization"), averageUtilization: fc.constantFrom(50, 0) }),
);
const selectorLike = fc.option(
  fc.record({
    matchLabels: fc.dictionary(
      fc.constantFrom("type", "query-name", "endpoint", "json-key", "query", "app"),
      fc.oneof(
        fc.constantFrom(...COLLECTORS, "requests-per-second", "nakadi", "$.a", "x"),
        fc.string({ maxLength: 8 }),
      ),
      { maxKeys: 3 },
    ),
  }, { requiredKeys: [] }),
  { nil: undefined },
);
const metricIdentifier = fc.record({
  name: fc.oneof(fc.constantFrom(...METRIC_NAMES), fc.string({ maxLength: 8 })),
  selector: selectorLike,
}, { requiredKeys: ["name"] });

const metricSpecLike: fc.Arbitrary<unknown> = fc.oneof(
  fc.record({
    type: fc.constant("Pods"),
    pods: fc.record({ metric: metricIdentifier, target: targetLike }),
  }),
  fc.record({
    type: fc.constant("External"),
    external: fc.record({ metric: metricIdentifier, target: targetLike }),
  }),
  fc.record({
    type: fc.constant("Object"),
    object: fc.record({
      describedObject: fc.record({
        apiVersion: fc.constantFrom("networking.k8s.io/v1", "zalando.org/v1", "apps/v1"),
        kind: fc.constantFrom("Ingress", "RouteGroup", "ScalingSchedule", "Deployment", ""),
        name: fc.constantFrom("web", "x"),
      }),
      metric: metricIdentifier,
      target: targetLike,
    }),
  }),
  fc.record({
    type: fc.constant("Resource"),
    resource: fc.record({
      name: fc.constant("cpu"),
      target: fc.constant({ type: "Utilization", averageUtilization: 80 }),
    }),
  }),
  fc.record({ type: fc.constantFrom("Bogus", "pods"), pods: fc.constant({}) }),
);

/** HPA objects: mostly well-formed with random metrics and annotations, some broken. */
const hpaLike: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      // (autoscaling/v1 is converted first: tests/core/kubernetes/hpa_conversion_test.ts)
      apiVersion: fc.constant("autoscaling/v2"),
      kind: fc.constant("HorizontalPodAutoscaler"),
      metadata: fc.record({
        name: fc.constantFrom("web", "api", ""),
        namespace: fc.constantFrom("shop", "default"),
        annotations: annotationsLike,
      }),
      spec: fc.record({
        scaleTargetRef: fc.constant({ apiVersion: "apps/v1", kind: "Deployment", name: "web" }),
        minReplicas: fc.constantFrom(1, 3),
        maxReplicas: fc.constantFrom(2, 10),
        metrics: fc.array(metricSpecLike, { maxLength: 5 }),
      }),
    }),
  },
  { weight: 1, arbitrary: fc.anything({ maxDepth: 3 }) },
);

// ---- properties ------------------------------------------------------------------------

describe("property: the annotation grammar", () => {
  it("parses any annotation map into metrics and warnings without throwing", () => {
    fc.assert(
      fc.property(annotationsLike, (annotations) => {
        const parsed = parseMetricAnnotations(annotations);
        for (const w of parsed.warnings) assert.ok(typeof w === "string" && w !== "");
        for (const [key, m] of parsed.metrics) {
          assert.equal(key, `${m.metricType}/${m.metricName}`);
          assert.ok(["Pods", "Object", "External"].includes(m.metricType));
          assert.notEqual(m.metricName, "");
          assert.ok(m.collectors.length >= 1);
          assert.deepEqual(m.collectors, [...m.collectors].sort());
          for (const k of RESERVED_CONFIG_KEYS) assert.equal(Object.hasOwn(m.config, k), false);
          for (const e of m.errors) assert.ok(typeof e === "string" && e !== "");
          if (m.collectors.length > 1) assert.match(m.errors[0], /name different collectors/);
          for (const s of [m.intervalSeconds, m.minPodReadyAgeSeconds]) {
            if (s !== undefined) assert.ok(Number.isFinite(s) && s >= 0, `seconds ${s}`);
          }
        }
      }),
      { seed: SEED, numRuns: 400 },
    );
  });

  it("gives the same result whatever the order of the annotation map", () => {
    fc.assert(
      fc.property(annotationsLike, (annotations) => {
        const reversed = Object.fromEntries(Object.entries(annotations).reverse());
        assert.deepEqual(parseMetricAnnotations(reversed), parseMetricAnnotations(annotations));
      }),
      { seed: SEED, numRuns: 200 },
    );
  });
});

describe("property: planHpa", () => {
  it("returns one plan per Pods, Object and External metric, each with a collector or an error, or throws an Error", () => {
    fc.assert(
      fc.property(hpaLike, (hpa) => {
        const r = outcome(() => planHpa(hpa));
        if (!r.ok) {
          assert.match(r.error.message, /^invalid HorizontalPodAutoscaler /);
          return;
        }
        const metrics = (hpa as { spec: { metrics?: { type: string }[] } }).spec.metrics ?? [];
        const planned = metrics
          .map((m, index) => ({ type: m.type, index }))
          .filter((m) => ["Pods", "Object", "External"].includes(m.type));
        assert.deepEqual(
          r.value.map((p) => [p.metricType, p.index]),
          planned.map((m) => [m.type, m.index]),
        );
        for (const p of r.value) {
          assert.ok(
            p.collector !== null || (typeof p.error === "string" && p.error !== ""),
            `plan of ${p.metricType} ${p.metricName} has neither a collector nor an error`,
          );
          if (p.error !== null) assert.notEqual(p.error, "");
          assert.ok(Number.isFinite(p.intervalSeconds) && p.intervalSeconds > 0);
          for (const k of RESERVED_CONFIG_KEYS) assert.equal(Object.hasOwn(p.config, k), false);
        }
      }),
      { seed: SEED, numRuns: 400 },
    );
  });
});

describe("property: Go durations", () => {
  it("parses any string to a finite number of seconds or throws invalid duration", () => {
    fc.assert(
      fc.property(durationLike, (s) => {
        const r = outcome(() => parseDuration(s));
        if (r.ok) assert.ok(Number.isFinite(r.value), `parseDuration("${s}") = ${r.value}`);
        else assert.match(r.error.message, /^invalid duration /);
      }),
      {
        seed: SEED,
        numRuns: 1000,
        examples: [["2562048h"], ["1" + "0".repeat(400) + "s"], ["9".repeat(400) + "h"]],
      },
    );
  });

  it("rejects durations beyond Go's 2562047h47m16.854775807s", () => {
    for (const s of ["2562048h", "-2562048h", "1" + "0".repeat(400) + "s", "9223372037s"]) {
      assert.throws(() => parseDuration(s), { message: /^invalid duration / }, s);
    }
  });

  it("accepts only durations within Go's range, and formats each so that it parses back", () => {
    fc.assert(
      fc.property(durationLike, (s) => {
        const r = outcome(() => parseDuration(s));
        if (!r.ok) return;
        const v = r.value;
        assert.ok(Number.isFinite(v), `parseDuration("${s}") = ${v}`);
        assert.ok(Math.abs(v) <= GO_MAX_DURATION_SECONDS, `parseDuration("${s}") = ${v}`);
        const formatted = formatDuration(v);
        assert.equal(parseDuration(formatted), v, `"${s}" -> ${v} -> "${formatted}"`);
      }),
      {
        seed: SEED,
        numRuns: 1000,
        examples: [
          ["1m30s"],
          ["1.5h"],
          ["0.000000001s"],
          ["2562047h47m16.854775807s"],
          ["-2562047h47m16.854775808s"],
        ],
      },
    );
  });

  it("formats any finite number of seconds within Go's range so that it parses back to it", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.integer({ min: -1e9, max: 1e9 }).map((ns) => ns / 1e9),
          fc.integer({ min: -1e6, max: 1e6 }),
          fc.double({ min: -1e7, max: 1e7, noNaN: true }),
        ),
        (seconds) => {
          const formatted = formatDuration(seconds);
          const back = parseDuration(formatted);
          // Go counts whole nanoseconds: the value comes back within half of one
          assert.ok(
            Math.abs(back - seconds) <= 5e-10 + Math.abs(seconds) * 1e-15,
            `${seconds} -> "${formatted}" -> ${back}`,
          );
          assert.equal(formatDuration(back), formatted, `${seconds} -> "${formatted}" -> ${back}`);
        },
      ),
      { seed: SEED, numRuns: 1000 },
    );
  });
});

describe("property: JSON extraction", () => {
  it("validates any json-key / json-eval config or throws an Error that says which", () => {
    fc.assert(
      fc.property(extractionConfig, (config) => {
        const r = outcome(() => validateJsonExtraction(config));
        if (!r.ok) return;
        const key = config["json-key"]?.trim() ? config["json-key"] : undefined;
        const expr = config["json-eval"]?.trim() ? config["json-eval"] : undefined;
        assert.equal(r.value.jsonKey, key);
        assert.equal(r.value.jsonEval, key === undefined ? expr : undefined);
      }),
      {
        seed: SEED,
        numRuns: 1000,
        examples: [
          [{ "json-eval": "(".repeat(2000) + "1" + ")".repeat(2000) }],
          [{ "json-eval": "-".repeat(5000) + "1" }],
          [{ "json-key": "$" + "[?(".repeat(300) + "1" + ")]".repeat(300) }],
          [{ "json-key": "$" + "[".repeat(3000) }],
        ],
      },
    );
  });

  it("extracts a finite number from any JSON document, or throws an Error naming the path or expression", () => {
    fc.assert(
      fc.property(extractionConfig, jsonDoc, (config, doc) => {
        const v = outcome(() => validateJsonExtraction(config));
        if (!v.ok) return;
        const options = v.value;
        const r = outcome(() => extractJsonValue(doc, options));
        if (r.ok) {
          assert.equal(typeof r.value, "number");
          assert.ok(
            Number.isFinite(r.value),
            `${JSON.stringify(options)} on ${JSON.stringify(doc)} gave ${r.value}`,
          );
        } else {
          const what = options.jsonKey !== undefined
            ? `json-key "${options.jsonKey}"`
            : `json-eval "${options.jsonEval}"`;
          assert.ok(
            r.error.message.startsWith(what),
            `error does not name ${what}: ${r.error.message}`,
          );
        }
      }),
      {
        seed: SEED,
        numRuns: 1500,
        examples: [
          [{ "json-key": "$.v", aggregator: "sum" }, { v: [1e308, 1e308] }],
          [{ "json-key": "$.v[*]", aggregator: "diff" }, { v: [-1e308, 1e308] }],
          [{ "json-eval": "$.a * $.b" }, { a: 1e308, b: 10 }],
          [{ "json-key": "$..a", aggregator: "avg" }, { a: 1e308, b: { a: 1e308 } }],
        ],
      },
    );
  });

  it("reads a number at a member path exactly", () => {
    fc.assert(
      fc.property(
        fc.array(fc.stringMatching(/^[a-z_][a-z0-9_]{0,5}$/), { minLength: 1, maxLength: 4 }),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        (names, n) => {
          let doc: unknown = n;
          for (const name of [...names].reverse()) doc = { [name]: doc };
          const options = validateJsonExtraction({ "json-key": "$." + names.join(".") });
          assert.equal(extractJsonValue(JSON.parse(JSON.stringify(doc)), options), n === 0 ? 0 : n);
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
  });
});

describe("property: Kubernetes quantities", () => {
  it("parses any string to a finite number or throws an Error", () => {
    fc.assert(
      fc.property(quantityLike, (s) => {
        const r = outcome(() => parseQuantity(s));
        if (r.ok) assert.ok(Number.isFinite(r.value), `parseQuantity("${s}") = ${r.value}`);
        else assert.match(r.error.message, /quantity/);
      }),
      { seed: SEED, numRuns: 1500, examples: [["1e400"], ["1" + "0".repeat(400)], ["-1E"]] },
    );
  });

  it("canonicalizes idempotently, to a string of the same value", () => {
    fc.assert(
      fc.property(quantityLike, (s) => {
        const r = outcome(() => canonicalQuantity(s));
        if (!r.ok) return;
        assert.equal(canonicalQuantity(r.value), r.value, `"${s}" -> "${r.value}"`);
        const n = outcome(() => parseQuantity(s));
        if (n.ok) assert.equal(parseQuantity(r.value), n.value, `"${s}" -> "${r.value}"`);
      }),
      { seed: SEED, numRuns: 1500 },
    );
  });

  it("formats any finite number so that it parses back to it, rounded to the nano", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.double({ noNaN: true, noDefaultInfinity: true }),
          fc.integer({ min: -(2 ** 53) + 1, max: 2 ** 53 - 1 }).map((k) => k / 1e9),
          fc.integer(),
        ),
        (n) => {
          const q = formatQuantity(n);
          const back = parseQuantity(q);
          assert.ok(Number.isFinite(back));
          assert.ok(
            Math.abs(back - n) <= 5e-10 + Math.abs(n) * Number.EPSILON,
            `${n} -> "${q}" -> ${back}`,
          );
          assert.equal(formatQuantity(back), q, `${n} -> "${q}" -> ${back}`);
          assert.equal(canonicalQuantity(q), q);
        },
      ),
      { seed: SEED, numRuns: 1500 },
    );
  });

  it("gives back exactly a number of whole nanos", () => {
    fc.assert(
      fc.property(fc.integer({ min: -(2 ** 53) + 1, max: 2 ** 53 - 1 }), (k) => {
        const n = k / 1e9;
        assert.equal(parseQuantity(formatQuantity(n)), n, `${n} -> "${formatQuantity(n)}"`);
      }),
      { seed: SEED, numRuns: 1000 },
    );
  });
});
