import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  annotationKey,
  type MetricAnnotations,
  parseMetricAnnotations,
  RESERVED_CONFIG_KEYS,
} from "../../src/core/kube_metrics_adapter/annotations.ts";

function only(annotations: Record<string, string>): MetricAnnotations {
  const parsed = parseMetricAnnotations(annotations);
  assert.equal(parsed.metrics.size, 1, `want one metric, got ${[...parsed.metrics.keys()]}`);
  return [...parsed.metrics.values()][0];
}

describe("parseMetricAnnotations", () => {
  it("reads the type segment as the original: pods, object, anything else external", () => {
    const cases: Array<[string, string]> = [
      ["pods", "Pods"],
      ["object", "Object"],
      ["external", "External"],
      ["foo", "External"],
      ["Pods", "External"],
    ];
    for (const [segment, want] of cases) {
      const m = only({ [`metric-config.${segment}.rps.json-path/json-key`]: "$.rps" });
      assert.equal(m.metricType, want, segment);
      assert.equal(m.metricName, "rps");
      assert.deepEqual(m.collectors, ["json-path"]);
      assert.deepEqual(m.config, { "json-key": "$.rps" });
      assert.deepEqual(m.errors, []);
    }
  });

  it("warns when a type segment other than pods/object/external is read as external", () => {
    const parsed = parseMetricAnnotations({ "metric-config.Pods.rps.json-path/port": "80" });
    assert.deepEqual(parsed.warnings, [
      'annotation metric-config.Pods.rps.json-path/port: type "Pods" is read as external (use pods, object or external)',
    ]);
  });

  it("ignores annotations without the metric-config. prefix", () => {
    const parsed = parseMetricAnnotations({
      "kubectl.kubernetes.io/last-applied-configuration": "{}",
      "metric-config": "x",
      "xmetric-config.pods.a.json-path/port": "1",
    });
    assert.equal(parsed.metrics.size, 0);
    assert.deepEqual(parsed.warnings, []);
  });

  it("accepts null and undefined annotations", () => {
    assert.equal(parseMetricAnnotations(null).metrics.size, 0);
    assert.equal(parseMetricAnnotations(undefined).metrics.size, 0);
  });

  it("reports malformed metric-config. keys instead of skipping them silently (original: // TODO: error?)", () => {
    const parsed = parseMetricAnnotations({
      "metric-config.pods.rps.json-path": "no slash",
      "metric-config.pods.rps/json-path/port": "two slashes",
      "metric-config.pods.rps/port": "three segments",
      "metric-config.external.my.metric.prometheus/query": "five segments",
      "metric-config.pods..json-path/port": "empty name",
    });
    assert.equal(parsed.metrics.size, 0);
    assert.deepEqual(parsed.warnings, [
      'ignored annotation metric-config.external.my.metric.prometheus/query: want 4 dot-separated parts before "/" (metric-config.<type>.<metric>.<collector>), got 5 (a metric name with dots cannot be configured)',
      "ignored annotation metric-config.pods..json-path/port: empty metric name, collector or config key",
      'ignored annotation metric-config.pods.rps.json-path: want metric-config.<type>.<metric>.<collector>/<key> with exactly one "/"',
      'ignored annotation metric-config.pods.rps/json-path/port: want metric-config.<type>.<metric>.<collector>/<key> with exactly one "/"',
      'ignored annotation metric-config.pods.rps/port: want 4 dot-separated parts before "/" (metric-config.<type>.<metric>.<collector>), got 3',
    ]);
  });

  it("keeps reserved keys out of config and reads them", () => {
    const m = only({
      "metric-config.pods.rps.json-path/json-key": "$.rps",
      "metric-config.pods.rps.json-path/interval": "1m30s",
      "metric-config.pods.rps.json-path/min-pod-ready-age": "30s",
      "metric-config.pods.rps.json-path/per-replica": "true",
    });
    assert.deepEqual(m, {
      metricType: "Pods",
      metricName: "rps",
      collectors: ["json-path"],
      config: { "json-key": "$.rps" },
      intervalSeconds: 90,
      minPodReadyAgeSeconds: 30,
      perReplica: true,
      errors: [],
    });
  });

  it('reads per-replica "false" as false (original: any value meant true)', () => {
    const cases: Array<[string, boolean | undefined, string[]]> = [
      ["true", true, []],
      ["false", false, []],
      ["yes", undefined, [
        'invalid per-replica "yes" for Object metric q (annotation metric-config.object.q.prometheus/per-replica): want "true" or "false"',
      ]],
      ["", undefined, [
        'invalid per-replica "" for Object metric q (annotation metric-config.object.q.prometheus/per-replica): want "true" or "false"',
      ]],
    ];
    for (const [value, want, errors] of cases) {
      const m = only({ "metric-config.object.q.prometheus/per-replica": value });
      assert.equal(m.perReplica, want, value);
      assert.deepEqual(m.errors, errors, value);
    }
  });

  it("makes a bad interval an error of that one metric, not of the whole HPA (original: Parse failed for every metric)", () => {
    const parsed = parseMetricAnnotations({
      "metric-config.external.a.prometheus/interval": "5x",
      "metric-config.external.b.prometheus/interval": "30s",
    });
    const a = parsed.metrics.get(annotationKey("External", "a"))!;
    const b = parsed.metrics.get(annotationKey("External", "b"))!;
    assert.deepEqual(a.errors, [
      'invalid interval "5x" for External metric a (annotation metric-config.external.a.prometheus/interval): want a Go duration like 30s, 1m30s, 2h',
    ]);
    assert.equal(a.intervalSeconds, undefined);
    assert.deepEqual(b.errors, []);
    assert.equal(b.intervalSeconds, 30);
  });

  it("makes a bad or negative min-pod-ready-age an error of that one metric", () => {
    const cases: Array<[string, number | undefined, string[]]> = [
      ["45s", 45, []],
      ["0", 0, []],
      ["30", undefined, [
        'invalid min-pod-ready-age "30" for Pods metric p (annotation metric-config.pods.p.json-path/min-pod-ready-age): want a Go duration like 30s, 1m30s, 2h',
      ]],
      ["-5s", undefined, [
        'invalid min-pod-ready-age "-5s" for Pods metric p (annotation metric-config.pods.p.json-path/min-pod-ready-age): must not be negative',
      ]],
    ];
    for (const [value, want, errors] of cases) {
      const m = only({ "metric-config.pods.p.json-path/min-pod-ready-age": value });
      assert.equal(m.minPodReadyAgeSeconds, want, value);
      assert.deepEqual(m.errors, errors, value);
    }
  });

  it("makes two collectors for one metric an error, whatever the map order (original: first seen won)", () => {
    const forward = {
      "metric-config.external.q.prometheus/query": "up",
      "metric-config.external.q.influxdb/query": "from()",
    };
    const backward = {
      "metric-config.external.q.influxdb/query": "from()",
      "metric-config.external.q.prometheus/query": "up",
    };
    const want = {
      metricType: "External",
      metricName: "q",
      collectors: ["influxdb", "prometheus"],
      // keys are applied in sorted annotation order: prometheus' value comes last
      config: { query: "up" },
      errors: [
        "annotations name different collectors for External metric q: influxdb, prometheus; use one collector in every metric-config.external.q.<collector>/... key",
      ],
    };
    assert.deepEqual(only(forward), want);
    assert.deepEqual(only(backward), want);
  });

  it("reads the reserved fallback keys into fallback, never into config", () => {
    const m = only({
      "metric-config.external.q.prometheus/query": "up",
      "metric-config.external.q.prometheus/fallback-failure-threshold": "3",
      "metric-config.external.q.prometheus/fallback-replicas": "10",
      "metric-config.external.q.prometheus/fallback-behavior": "currentReplicasIfLower",
    });
    assert.deepEqual(m, {
      metricType: "External",
      metricName: "q",
      collectors: ["prometheus"],
      config: { query: "up" },
      fallback: { failureThreshold: 3, replicas: 10, behavior: "currentReplicasIfLower" },
      errors: [],
    });
    for (const key of ["fallback-failure-threshold", "fallback-replicas", "fallback-behavior"]) {
      assert.ok(RESERVED_CONFIG_KEYS.includes(key), key);
    }
  });

  it("makes bad or partial fallback keys errors of that one metric, naming the annotation", () => {
    const parsed = parseMetricAnnotations({
      "metric-config.pods.p.json-path/fallback-failure-threshold": "-1",
      "metric-config.pods.p.json-path/fallback-replicas": "2",
      "metric-config.object.o.prometheus/fallback-replicas": "4",
      "metric-config.external.e.prometheus/fallback-failure-threshold": "1",
      "metric-config.external.e.prometheus/fallback-replicas": "1",
      "metric-config.external.e.prometheus/fallback-behavior": "scalingModifiers",
      "metric-config.external.ok.prometheus/fallback-failure-threshold": "0",
      "metric-config.external.ok.prometheus/fallback-replicas": "5",
    });
    const get = (type: "Pods" | "Object" | "External", name: string) =>
      parsed.metrics.get(annotationKey(type, name))!;
    assert.deepEqual(get("Pods", "p").errors, [
      'invalid fallback-failure-threshold "-1" for Pods metric p (annotation metric-config.pods.p.json-path/fallback-failure-threshold): want an integer >= 0',
    ]);
    assert.deepEqual(get("Object", "o").errors, [
      'missing fallback-failure-threshold for Object metric o: fallback-replicas "4" is set and a fallback needs both fallback-failure-threshold and fallback-replicas (add metric-config.object.o.prometheus/fallback-failure-threshold)',
    ]);
    // only keys under the formula collector (a formula metric) take scalingModifiers
    assert.deepEqual(get("External", "e").errors, [
      'invalid fallback-behavior "scalingModifiers" for External metric e (annotation metric-config.external.e.prometheus/fallback-behavior): scalingModifiers is only valid on a formula metric',
    ]);
    for (const m of [get("Pods", "p"), get("Object", "o"), get("External", "e")]) {
      assert.equal(m.fallback, undefined, m.metricName);
      assert.deepEqual(m.config, {}, m.metricName);
    }
    assert.deepEqual(get("External", "ok").errors, []);
    assert.deepEqual(get("External", "ok").fallback, {
      failureThreshold: 0,
      replicas: 5,
      behavior: "static",
    });
  });

  it("keeps the same metric name of different types apart", () => {
    const parsed = parseMetricAnnotations({
      "metric-config.pods.rps.json-path/port": "80",
      "metric-config.object.rps.prometheus/query": "up",
    });
    assert.deepEqual([...parsed.metrics.keys()].sort(), ["Object/rps", "Pods/rps"]);
    assert.deepEqual(parsed.metrics.get("Pods/rps")!.config, { port: "80" });
    assert.deepEqual(parsed.metrics.get("Object/rps")!.config, { query: "up" });
  });
});
