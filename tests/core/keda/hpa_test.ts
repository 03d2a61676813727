/**
 * The HPA KEDA v2.20.2 writes for a ScaledObject (src/core/keda/): names, labels, targets,
 * ordering and errors, with the vectors of KEDA's own tests (`pkg/scalers/*_test.go` name
 * tests, `controllers/keda` HPA generation) and the facts of its source.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { kedaHpaFor, type KedaHpaResult, kedaMilliQuantity } from "../../../src/core/keda/hpa.ts";
import {
  kedaCronPart,
  kedaNameLabel,
  kedaNormalize,
  kedaSqsQueueName,
} from "../../../src/core/keda/names.ts";
import {
  InvalidScaledObjectError,
  parseScaledObject,
  type ScaledObject,
} from "../../../src/core/keda/scaled_object.ts";

function so(spec: Record<string, unknown>, metadata: Record<string, unknown> = {}): ScaledObject {
  return parseScaledObject({
    apiVersion: "keda.sh/v1alpha1",
    kind: "ScaledObject",
    metadata: { name: "web", namespace: "shop", uid: "u-1", ...metadata },
    spec: { scaleTargetRef: { name: "web" }, ...spec },
  });
}

const PROM = {
  type: "prometheus",
  metadata: { serverAddress: "http://prom:9090", query: "sum(up)", threshold: "100.5" },
};

function ok(r: KedaHpaResult): Exclude<KedaHpaResult, { error: string }> {
  if ("error" in r) throw new Error(`unexpected error: ${r.error}`);
  return r;
}

function names(r: KedaHpaResult): string[] {
  return r.metrics.map((m) => m.metricName);
}

describe("KEDA's metric names", () => {
  it("normalizes only / . : % ( ) to -", () => {
    assert.equal(kedaNormalize("a/b.c:d%e(f)g_h-i J"), "a-b-c-d-e-f-g_h-i J");
  });

  it("names each trigger's metric as KEDA's scaler tests expect", () => {
    const r = ok(kedaHpaFor(
      so({
        triggers: [
          PROM,
          {
            type: "metrics-api",
            metadata: { url: "http://api/v1", valueLocation: "metric.test", targetValue: "4" },
          },
          {
            type: "aws-sqs-queue",
            metadata: {
              queueURL: "https://sqs.eu-west-1.amazonaws.com/account_id/DeleteArtifactQ",
              awsRegion: "eu-west-1",
              identityOwner: "operator",
            },
          },
          {
            type: "cron",
            metadata: {
              timezone: "Etc/UTC",
              start: "0 0 * * Thu",
              end: "59 23 * * Thu",
              desiredReplicas: "10",
            },
          },
          {
            type: "influxdb",
            metadata: {
              serverURL: "http://influx:8086",
              organizationName: "influx_org",
              query: "from()",
              thresholdValue: "10",
            },
          },
          {
            type: "cron",
            metadata: {
              timezone: "Etc/UTC",
              start: "0 */2 * * *",
              end: "0 1-23/2 * * *",
              desiredReplicas: "1",
            },
          },
          {
            type: "cron",
            metadata: {
              timezone: "Etc/UTC",
              start: "0,30 * * * *",
              end: "15,45 * * * *",
              desiredReplicas: "1",
            },
          },
        ],
      }),
      { version: "0.1.0" },
    ));
    assert.deepEqual(names(r), [
      "s0-prometheus",
      "s1-metric-api-metric-test",
      "s2-aws-sqs-DeleteArtifactQ",
      "s3-cron-Etc-UTC-00xxThu-5923xxThu",
      "s4-influxdb-influx_org",
      "s5-cron-Etc-UTC-0xSl2xxx-01-23Sl2xxx",
      "s6-cron-Etc-UTC-0Cm30xxxx-15Cm45xxxx",
    ]);
    assert.deepEqual(r.status.externalMetricNames, names(r));
    assert.deepEqual(r.status.resourceMetricNames, []);
    assert.equal(r.status.triggersTypes, "prometheus,metrics-api,aws-sqs-queue,cron,influxdb");
  });

  it("writes cron parts and SQS queue names as KEDA does", () => {
    assert.equal(kedaCronPart("*/5 ? * 1,2 *"), "xSl5Qmx1Cm2x");
    assert.equal(kedaSqsQueueName("https://sqs.us-east-1.amazonaws.com/123/q-1"), "q-1");
    assert.equal(kedaSqsQueueName("q-1"), "q-1");
    assert.equal(kedaSqsQueueName("https://sqs.us-east-1.amazonaws.com/123"), null);
    assert.equal(kedaNameLabel(`${"a".repeat(62)}-b`), "a".repeat(62));
    assert.equal(kedaNameLabel("keda-hpa-web"), "keda-hpa-web");
  });
});

describe("the HPA KEDA writes", () => {
  it("names, labels, annotations, owner, target, bounds and behavior", () => {
    const r = ok(kedaHpaFor(
      so(
        {
          minReplicaCount: 0,
          triggers: [PROM, { type: "cpu", metricType: "Utilization", metadata: { value: "60" } }],
          advanced: {
            horizontalPodAutoscalerConfig: {
              behavior: { scaleDown: { stabilizationWindowSeconds: 60 } },
            },
          },
        },
        {
          labels: { team: "a", internal: "x" },
          annotations: {
            "scaledobject.keda.sh/hpa-excluded-labels": "internal, other",
            "autoscaling.keda.sh/paused-scale-out": "yes",
          },
        },
      ),
      { version: "0.1.0" },
    ));
    assert.deepEqual(r.hpa, {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: {
        name: "keda-hpa-web",
        namespace: "shop",
        labels: {
          "app.kubernetes.io/name": "keda-hpa-web",
          "app.kubernetes.io/version": "0.1.0",
          "app.kubernetes.io/part-of": "web",
          "app.kubernetes.io/managed-by": "hpa-metrics-adapter",
          team: "a",
          "scaledobject.keda.sh/name": "web",
        },
        annotations: {
          "scaledobject.keda.sh/hpa-excluded-labels": "internal, other",
          "autoscaling.keda.sh/paused-scale-out": "yes",
        },
        ownerReferences: [{
          apiVersion: "keda.sh/v1alpha1",
          kind: "ScaledObject",
          name: "web",
          uid: "u-1",
          controller: true,
          blockOwnerDeletion: true,
        }],
      },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
        minReplicas: 1,
        maxReplicas: 100,
        // sorted by type name: External before Resource
        metrics: [
          {
            type: "External",
            external: {
              metric: {
                name: "s0-prometheus",
                selector: { matchLabels: { "scaledobject.keda.sh/name": "web" } },
              },
              target: { type: "AverageValue", averageValue: kedaMilliQuantity(100.5) },
            },
          },
          {
            type: "Resource",
            resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 60 } },
          },
        ],
        behavior: {
          scaleDown: { stabilizationWindowSeconds: 60 },
          // a value that is not a boolean counts as true
          scaleUp: { selectPolicy: "Disabled" },
        },
      },
    });
    assert.deepEqual(r.status, {
      hpaName: "keda-hpa-web",
      externalMetricNames: ["s0-prometheus"],
      resourceMetricNames: ["cpu"],
      triggersTypes: "prometheus,cpu",
      authenticationsTypes: "",
    });
  });

  it("takes the HPA name, bounds and a container's resource from the ScaledObject", () => {
    const r = ok(kedaHpaFor(
      so({
        minReplicaCount: 3,
        maxReplicaCount: 7,
        scaleTargetRef: { name: "db", kind: "StatefulSet", apiVersion: "apps/v1" },
        advanced: { horizontalPodAutoscalerConfig: { name: "db-hpa" } },
        triggers: [
          {
            type: "memory",
            metricType: "AverageValue",
            metadata: { value: "512Mi", containerName: "db" },
          },
          { ...PROM, authenticationRef: { name: "prom-auth" } },
          { ...PROM, metricType: "Value", authenticationRef: { name: "prom-auth" } },
        ],
      }),
      { version: "0.1.0" },
    ));
    assert.equal(r.hpa.metadata.name, "db-hpa");
    assert.deepEqual([r.hpa.spec.minReplicas, r.hpa.spec.maxReplicas], [3, 7]);
    assert.deepEqual(r.hpa.spec.scaleTargetRef, {
      apiVersion: "apps/v1",
      kind: "StatefulSet",
      name: "db",
    });
    // ContainerResource sorts first
    assert.deepEqual(r.hpa.spec.metrics.map((m) => m.type), [
      "ContainerResource",
      "External",
      "External",
    ]);
    assert.deepEqual(r.hpa.spec.metrics[0], {
      type: "ContainerResource",
      containerResource: {
        name: "memory",
        container: "db",
        target: { type: "AverageValue", averageValue: "512Mi" },
      },
    });
    assert.deepEqual(r.hpa.spec.metrics[2], {
      type: "External",
      external: {
        metric: {
          name: "s2-prometheus",
          selector: { matchLabels: { "scaledobject.keda.sh/name": "web" } },
        },
        target: { type: "Value", value: kedaMilliQuantity(100.5) },
      },
    });
    assert.equal(r.status.authenticationsTypes, "prom-auth");
    // KEDA records Resource metrics only, not ContainerResource ones
    assert.deepEqual(r.status.resourceMetricNames, []);
  });

  it("replaces the External metrics by one composite metric with scalingModifiers", () => {
    const r = ok(kedaHpaFor(
      so({
        advanced: {
          scalingModifiers: { formula: "a + b", target: "2", metricType: "AverageValue" },
        },
        triggers: [
          { ...PROM, name: "a" },
          { ...PROM, name: "b" },
          { type: "cpu", metricType: "Utilization", metadata: { value: "50" } },
        ],
      }),
      { version: "0.1.0" },
    ));
    assert.deepEqual(
      r.hpa.spec.metrics.map((m) =>
        m.type === "External"
          ? m.external.metric.name
          : m.type === "Resource"
          ? m.resource.name
          : ""
      ),
      // the Resource entries, then the composite metric (its target canonical: NewMilliQuantity)
      ["cpu", "composite-metric"],
    );
    assert.deepEqual(r.hpa.spec.metrics[1], {
      type: "External",
      external: {
        metric: {
          name: "composite-metric",
          selector: { matchLabels: { "scaledobject.keda.sh/name": "web" } },
        },
        target: { type: "AverageValue", averageValue: "2" },
      },
    });
    assert.deepEqual(r.status.externalMetricNames, ["s0-prometheus", "s1-prometheus"]);
    assert.equal(r.status.compositeScalerName, "composite-metric");
  });

  const BOUNDS = "ScaledObject doesn't have correct Idle/Min/Max Replica Counts specification: ";
  const TRIGGERS = "ScaledObject doesn't have correct triggers specification: ";
  const HPA = "failed to ensure HPA is correctly created for ScaledObject: ";
  const errors: [string, Record<string, unknown>, string][] = [
    [
      "min over max",
      { minReplicaCount: 5, maxReplicaCount: 2, triggers: [PROM] },
      `${BOUNDS}MinReplicaCount=5 must be less than MaxReplicaCount=2`,
    ],
    [
      "idle not below min",
      { idleReplicaCount: 1, minReplicaCount: 1, triggers: [PROM] },
      `${BOUNDS}IdleReplicaCount=1 must be less than MinReplicaCount=1`,
    ],
    [
      "idle with no min (read as 0)",
      { idleReplicaCount: 0, triggers: [PROM] },
      `${BOUNDS}IdleReplicaCount=0 must be less than MinReplicaCount=0`,
    ],
    [
      "no triggers",
      { triggers: [] },
      `${TRIGGERS}no triggers defined in the ScaledObject/ScaledJob`,
    ],
    [
      "a trigger name twice",
      { triggers: [{ ...PROM, name: "x" }, { ...PROM, name: "x" }] },
      `${TRIGGERS}triggerName "x" is defined multiple times in the ScaledObject/ScaledJob, but it must be unique`,
    ],
    [
      "useCachedMetrics on cpu",
      { triggers: [{ type: "cpu", useCachedMetrics: true, metadata: { value: "50" } }] },
      `${TRIGGERS}property "useCachedMetrics" is not supported for "cpu" scaler`,
    ],
    [
      "a missing threshold",
      { triggers: [{ type: "prometheus", metadata: { serverAddress: "http://p", query: "up" } }] },
      `${HPA}error parsing prometheus metadata: error parsing prometheus metadata: missing required parameter "threshold" in [triggerMetadata]`,
    ],
    [
      "an unknown trigger type",
      { triggers: [{ type: "kafka", metadata: {} }] },
      `${HPA}no scaler found for type: kafka`,
    ],
    [
      "Utilization on an external trigger",
      { triggers: [{ ...PROM, metricType: "Utilization" }] },
      `${HPA}error getting scaler metric type: 'Utilization' metric type is unsupported for external metrics, allowed values are 'Value' or 'AverageValue'`,
    ],
    [
      "Utilization for scalingModifiers",
      {
        advanced: { scalingModifiers: { formula: "a", target: "1", metricType: "Utilization" } },
        triggers: [{ ...PROM, name: "a" }],
      },
      `${HPA}error metric target type is Utilization, but it needs to be AverageValue or Value for external metrics`,
    ],
  ];
  for (const [name, spec, error] of errors) {
    it(`refuses ${name}`, () => {
      const r = kedaHpaFor(so(spec), { version: "0.1.0" });
      assert.ok("error" in r);
      assert.equal(r.error, error);
    });
  }

  it("the bounds check reads an explicit minimum of 0 as 1 (idle 0 is then fine)", () => {
    const r = ok(kedaHpaFor(so({ minReplicaCount: 0, idleReplicaCount: 0, triggers: [PROM] }), {
      version: "0.1.0",
    }));
    assert.equal(r.hpa.spec.minReplicas, 1);
  });

  it("does not trim the excluded labels' names (KEDA splits on commas only)", () => {
    const r = ok(kedaHpaFor(
      so({ triggers: [PROM] }, {
        labels: { a: "1", b: "2" },
        annotations: { "scaledobject.keda.sh/hpa-excluded-labels": "a, b" },
      }),
      { version: "0.1.0" },
    ));
    assert.equal(r.hpa.metadata.labels.a, undefined);
    assert.equal(r.hpa.metadata.labels.b, "2");
  });

  it("names the ScaledObject and the field of a malformed manifest", () => {
    assert.throws(
      () =>
        parseScaledObject({
          apiVersion: "keda.sh/v1alpha1",
          kind: "ScaledObject",
          metadata: { name: "web", namespace: "shop" },
          spec: { scaleTargetRef: {}, triggers: [{ metadata: { a: 1 } }] },
        }),
      (e: unknown) => {
        assert.ok(e instanceof InvalidScaledObjectError);
        assert.equal(
          e.message,
          "invalid ScaledObject shop/web: spec.scaleTargetRef.name: required; " +
            "spec.triggers[0].type: required; spec.triggers[0].metadata.a: want string, got number 1 (quote it in YAML)",
        );
        return true;
      },
    );
  });
});
