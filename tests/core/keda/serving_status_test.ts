/**
 * What KEDA v2.20.2 serves for a ScaledObject's metric and writes in its status
 * (src/core/keda/serving.ts, status.ts), and the SQS and InfluxDB values it reads
 * (src/core/keda/values.ts), with the facts of KEDA's source and the vectors of its tests
 * (`processQueueLength...`, `TestGetScaledObjectMetrics...`, `gvkr_types_test.go`).
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  equalFold,
  kedaMatchMetric,
  kedaMetricItem,
  kedaReadError,
  kedaScaledObjectOfSelector,
} from "../../../src/core/keda/serving.ts";
import {
  kedaGvkString,
  kedaHasValidFallback,
  kedaReconciledConditions,
  kedaScaleTarget,
} from "../../../src/core/keda/status.ts";
import { kedaHpaFor } from "../../../src/core/keda/hpa.ts";
import { parseScaledObject } from "../../../src/core/keda/scaled_object.ts";
import {
  kedaInfluxValue,
  kedaSqsAttributes,
  kedaSqsQueueLength,
} from "../../../src/core/keda/values.ts";

const so = (spec: Record<string, unknown> = {}) =>
  parseScaledObject({
    apiVersion: "keda.sh/v1alpha1",
    kind: "ScaledObject",
    metadata: { name: "web", namespace: "shop" },
    spec: {
      scaleTargetRef: { name: "web" },
      triggers: [{
        type: "prometheus",
        metadata: { serverAddress: "http://p:9090", query: "up", threshold: "1" },
      }],
      ...spec,
    },
  });

describe("serving a ScaledObject's metric as KEDA's metrics server does", () => {
  it("needs the ScaledObject's name in the selector", () => {
    assert.equal(
      kedaScaledObjectOfSelector(new Map([["scaledobject.keda.sh/name", "web"]])),
      "web",
    );
    assert.throws(() => kedaScaledObjectOfSelector(new Map([["app", "web"]])), {
      message: "scaledObject name is not specified",
    });
  });

  it("matches the lowercased name and answers in the spec's casing", () => {
    const names = ["s0-cron-Etc-UTC-00xxThu-5923xxThu", "s1-prometheus"];
    assert.equal(kedaMatchMetric(names, "s0-cron-etc-utc-00xxthu-5923xxthu"), names[0]);
    assert.equal(kedaMatchMetric(names, "s2-prometheus"), undefined);
    assert.equal(equalFold("ABC", "abc"), true);
  });

  it("writes one item: value as quantityFromFloat64, timestamp cut to seconds", () => {
    assert.deepEqual(
      kedaMetricItem("s0-prometheus", 100.5, Date.parse("2026-11-29T07:00:01.987Z")),
      {
        metricName: "s0-prometheus",
        metricLabels: null,
        timestamp: "2026-11-29T07:00:01Z",
        value: "100.500",
      },
    );
    assert.equal(kedaMetricItem("m", -3, 0).value, "0");
  });

  it("says KEDA's errors as the HPA reads them", () => {
    assert.equal(
      kedaReadError("failed", "s0-prometheus"),
      "rpc error: code = Unknown desc = error when getting metric values metric:s0-prometheus encountered error",
    );
    assert.equal(
      kedaReadError("no match", "s9-x"),
      "rpc error: code = Unknown desc = error when getting metric values no matching metrics found for s9-x",
    );
  });
});

describe("the values of aws-sqs-queue and influxdb", () => {
  it("sums the attributes the switches name (processQueueLength...)", () => {
    const answer = {
      ApproximateNumberOfMessages: "200",
      ApproximateNumberOfMessagesNotVisible: "100",
      ApproximateNumberOfMessagesDelayed: "50",
    };
    assert.equal(kedaSqsQueueLength(answer, kedaSqsAttributes(false, false)), 200);
    assert.equal(kedaSqsQueueLength(answer, kedaSqsAttributes(true, false)), 300);
    assert.equal(kedaSqsQueueLength(answer, kedaSqsAttributes(true, true)), 350);
    assert.equal(
      kedaSqsQueueLength(
        { ApproximateNumberOfMessages: "2147483648" },
        kedaSqsAttributes(false, false),
      ),
      2147483648,
    );
    assert.throws(() => kedaSqsQueueLength({}, kedaSqsAttributes(false, false)), {
      message: "metric ApproximateNumberOfMessages not found in SQS queue attributes",
    });
    assert.throws(
      () =>
        kedaSqsQueueLength(
          { ApproximateNumberOfMessages: "NotInt" },
          kedaSqsAttributes(false, false),
        ),
      { message: 'strconv.ParseInt: parsing "NotInt": invalid syntax' },
    );
  });

  it("takes the first record of an InfluxDB query", () => {
    assert.equal(kedaInfluxValue([{ _value: 2.5 }, { _value: 9 }]), 2.5);
    assert.equal(kedaInfluxValue([{ _value: 7n }]), 7);
    assert.throws(() => kedaInfluxValue([]), { message: "no results found from query" });
    assert.throws(() => kedaInfluxValue([{ _value: "x" }]), {
      message: "value of type string could not be converted into a float",
    });
  });
});

describe("the status KEDA writes when it reconciles", () => {
  it("names the scale target as ParseGVKR and GVKString do", () => {
    const none = (): string => {
      throw new Error("no REST mapping wanted");
    };
    const d = kedaScaleTarget({}, none);
    assert.deepEqual(d, {
      group: "apps",
      version: "v1",
      kind: "Deployment",
      resource: "deployments",
    });
    assert.equal(kedaGvkString(d), "apps/v1.Deployment");
    assert.equal(
      kedaGvkString(kedaScaleTarget({ apiVersion: "v1", kind: "Pod" }, () => "pods")),
      "/v1.Pod",
    );
    assert.deepEqual(
      kedaScaleTarget(
        { apiVersion: "argoproj.io/v1alpha1", kind: "Rollout" },
        (g, k, v) => `${g}|${k}|${v}`,
      ),
      {
        group: "argoproj.io",
        version: "v1alpha1",
        kind: "Rollout",
        resource: "argoproj.io|Rollout|v1alpha1",
      },
    );
    assert.throws(() => kedaScaleTarget({ apiVersion: "a/b/c" }, none), {
      message: "unexpected GroupVersion string: a/b/c",
    });
  });

  it("initializes the conditions, then Ready, Fallback and the Ready event", () => {
    const s = so();
    const r = kedaReconciledConditions(s, undefined, kedaHpaFor(s, { version: "0.1.0" }));
    assert.deepEqual(r.conditions, [
      {
        type: "Ready",
        status: "True",
        reason: "ScaledObjectReady",
        message: "ScaledObject is defined correctly and is ready for scaling",
      },
      { type: "Active", status: "Unknown" },
      {
        type: "Fallback",
        status: "False",
        reason: "NoFallbackFound",
        message: "No fallbacks are active on this scaled object",
      },
      { type: "Paused", status: "False" },
    ]);
    assert.deepEqual(r.event, {
      type: "Normal",
      reason: "ScaledObjectReady",
      message: "ScaledObject is ready for scaling",
    });
    // ready already: no event
    assert.equal(
      kedaReconciledConditions(s, r.conditions, kedaHpaFor(s, { version: "0.1.0" })).event,
      null,
    );
  });

  it("sets Ready False with KEDA's message and Active Unknown on an error", () => {
    const s = so({ minReplicaCount: 3, maxReplicaCount: 2 });
    const r = kedaReconciledConditions(s, undefined, kedaHpaFor(s, { version: "0.1.0" }));
    const message =
      "ScaledObject doesn't have correct Idle/Min/Max Replica Counts specification: MinReplicaCount=3 must be less than MaxReplicaCount=2";
    assert.deepEqual(r.conditions.slice(0, 2), [
      { type: "Ready", status: "False", reason: "ScaledObjectCheckFailed", message },
      {
        type: "Active",
        status: "Unknown",
        reason: "UnknownState",
        message: "ScaledObject check failed",
      },
    ]);
    assert.deepEqual(r.event, { type: "Warning", reason: "ScaledObjectCheckFailed", message });
  });

  it("leaves Fallback alone when the ScaledObject has a valid fallback", () => {
    const s = so({ fallback: { failureThreshold: 3, replicas: 5 } });
    assert.equal(kedaHasValidFallback(s), true);
    const r = kedaReconciledConditions(s, undefined, kedaHpaFor(s, { version: "0.1.0" }));
    assert.deepEqual(r.conditions[2], { type: "Fallback", status: "Unknown" });
    assert.equal(
      kedaHasValidFallback(so({ fallback: { failureThreshold: -1, replicas: 5 } })),
      false,
    );
  });
});
