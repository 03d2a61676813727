import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { InvalidHpaError, parseHpa } from "../../src/core/kubernetes/hpa.ts";
import { dictionaryOf } from "../../src/core/dictionary.ts";

function hpa(spec: Record<string, unknown>, metadata: Record<string, unknown> = {}): unknown {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name: "web", namespace: "shop", ...metadata },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
      maxReplicas: 10,
      ...spec,
    },
  };
}

function problems(obj: unknown): string[] {
  try {
    parseHpa(obj);
  } catch (e) {
    assert.ok(e instanceof InvalidHpaError, String(e));
    return e.problems;
  }
  assert.fail("parseHpa accepted an invalid HPA");
}

describe("parseHpa", () => {
  it("reads all five metric types with their identifiers and targets", () => {
    const parsed = parseHpa(hpa({
      minReplicas: 2,
      metrics: [
        {
          type: "Resource",
          resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 80 } },
        },
        {
          type: "ContainerResource",
          containerResource: {
            name: "memory",
            container: "app",
            target: { type: "AverageValue", averageValue: "512Mi" },
          },
        },
        {
          type: "Pods",
          pods: {
            metric: { name: "rps", selector: { matchLabels: { a: "b" } } },
            target: { type: "AverageValue", averageValue: 100 },
          },
        },
        {
          type: "Object",
          object: {
            describedObject: { apiVersion: "networking.k8s.io/v1", kind: "Ingress", name: "web" },
            metric: { name: "requests-per-second" },
            target: { type: "Value", value: "1k" },
          },
        },
        {
          type: "External",
          external: {
            metric: {
              name: "queue",
              selector: {
                matchLabels: { type: "sqs-queue-length" },
                matchExpressions: [{ key: "env", operator: "In", values: ["prod"] }],
              },
            },
            target: { type: "AverageValue", averageValue: "0.5" },
          },
        },
      ],
      behavior: {
        scaleDown: {
          stabilizationWindowSeconds: 300,
          selectPolicy: "Max",
          policies: [{ type: "Percent", value: 10, periodSeconds: 60 }],
        },
      },
    }, { uid: "1234", annotations: { "metric-config.pods.rps.json-path/port": "80" } }));
    assert.deepEqual(parsed, {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: {
        name: "web",
        namespace: "shop",
        uid: "1234",
        annotations: dictionaryOf({ "metric-config.pods.rps.json-path/port": "80" }),
      },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
        minReplicas: 2,
        maxReplicas: 10,
        metrics: [
          {
            type: "Resource",
            resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 80 } },
          },
          {
            type: "ContainerResource",
            containerResource: {
              name: "memory",
              container: "app",
              target: { type: "AverageValue", averageValue: "512Mi" },
            },
          },
          {
            type: "Pods",
            pods: {
              metric: { name: "rps", selector: { matchLabels: dictionaryOf({ a: "b" }) } },
              target: { type: "AverageValue", averageValue: "100" },
            },
          },
          {
            type: "Object",
            object: {
              describedObject: {
                apiVersion: "networking.k8s.io/v1",
                kind: "Ingress",
                name: "web",
              },
              metric: { name: "requests-per-second" },
              target: { type: "Value", value: "1k" },
            },
          },
          {
            type: "External",
            external: {
              metric: {
                name: "queue",
                selector: {
                  matchLabels: dictionaryOf({ type: "sqs-queue-length" }),
                  matchExpressions: [{ key: "env", operator: "In", values: ["prod"] }],
                },
              },
              target: { type: "AverageValue", averageValue: "0.5" },
            },
          },
        ],
        behavior: {
          scaleDown: {
            stabilizationWindowSeconds: 300,
            selectPolicy: "Max",
            policies: [{ type: "Percent", value: 10, periodSeconds: 60 }],
          },
        },
      },
    });
  });

  it("reads YAML nulls as absent and drops unknown fields", () => {
    const parsed = parseHpa({
      ...(hpa({ metrics: null, status: { currentReplicas: 1 } }) as object),
      metadata: { name: "web", annotations: null, labels: { a: "b" } },
    });
    assert.deepEqual(parsed.metadata, { name: "web" });
    assert.equal(parsed.spec.metrics, undefined);
  });

  it("names the HPA and every bad field", () => {
    const cases: Array<[string, unknown, string[]]> = [
      ["missing maxReplicas", {
        kind: "HorizontalPodAutoscaler",
        metadata: { name: "web", namespace: "shop" },
        spec: { scaleTargetRef: { kind: "Deployment", name: "web" } },
      }, ["spec.maxReplicas: required"]],
      ["unknown metric type", hpa({ metrics: [{ type: "Extrenal" }] }), [
        'spec.metrics[0].type: invalid value "Extrenal", want one of Object, Pods, External, Resource, ContainerResource',
      ]],
      ["member missing for its type", hpa({ metrics: [{ type: "External", pods: {} }] }), [
        "spec.metrics[0].external: required",
      ]],
      [
        "missing metric name",
        hpa({
          metrics: [{
            type: "Pods",
            pods: { metric: {}, target: { type: "AverageValue", averageValue: "1" } },
          }],
        }),
        ["spec.metrics[0].pods.metric.name: required"],
      ],
      [
        "target without the field its type names",
        hpa({
          metrics: [{
            type: "External",
            external: { metric: { name: "q" }, target: { type: "Value", averageValue: "1" } },
          }],
        }),
        ["spec.metrics[0].external.target.value: required when type is Value"],
      ],
      [
        "Pods target that is not AverageValue",
        hpa({
          metrics: [{
            type: "Pods",
            pods: { metric: { name: "q" }, target: { type: "Value", value: "1" } },
          }],
        }),
        ["spec.metrics[0].pods.target.type: Pods metrics take target type AverageValue"],
      ],
      [
        "bad quantity",
        hpa({
          metrics: [{
            type: "External",
            external: { metric: { name: "q" }, target: { type: "Value", value: "ten" } },
          }],
        }),
        ['spec.metrics[0].external.target.value: "ten" is not a quantity (want e.g. 10, 500m, 1.5k, 2Gi)'],
      ],
      [
        "unquoted number label",
        hpa({
          metrics: [{
            type: "External",
            external: {
              metric: { name: "q", selector: { matchLabels: { "check-id": 1234 } } },
              target: { type: "Value", value: "1" },
            },
          }],
        }),
        [
          'spec.metrics[0].external.metric.selector.matchLabels["check-id"]: want string, got number 1234 (quote it in YAML)',
        ],
      ],
      [
        "unquoted number annotation",
        hpa({}, { annotations: { "metric-config.pods.a.json-path/port": 9090 } }),
        [
          'metadata.annotations["metric-config.pods.a.json-path/port"]: want string, got number 9090 (quote it in YAML)',
        ],
      ],
      ["minReplicas above maxReplicas", hpa({ minReplicas: 20 }), [
        "spec.minReplicas: must not be greater than maxReplicas",
      ]],
      [
        "bad selector operator",
        hpa({
          metrics: [{
            type: "External",
            external: {
              metric: {
                name: "q",
                selector: { matchExpressions: [{ key: "a", operator: "Has" }] },
              },
              target: { type: "Value", value: "1" },
            },
          }],
        }),
        [
          'spec.metrics[0].external.metric.selector.matchExpressions[0].operator: invalid value "Has", want one of In, NotIn, Exists, DoesNotExist',
        ],
      ],
      ["empty scale target name", hpa({ scaleTargetRef: { kind: "Deployment", name: "" } }), [
        "spec.scaleTargetRef.name: must not be empty",
      ]],
    ];
    for (const [what, obj, want] of cases) assert.deepEqual(problems(obj), want, what);
  });

  it("puts the HPA's namespace/name in the message", () => {
    assert.throws(() => parseHpa(hpa({ maxReplicas: 0 })), {
      name: "InvalidHpaError",
      message:
        "invalid HorizontalPodAutoscaler shop/web: spec.maxReplicas: number 0 is too small (minimum 1)",
    });
    assert.throws(() => parseHpa({ metadata: {}, spec: {} }), (e: unknown) => {
      assert.ok(e instanceof InvalidHpaError);
      assert.equal(e.hpa, "default/<unnamed>");
      return true;
    });
  });

  it("refuses the autoscaling/v2beta1 and v1 shapes with a hint instead of field noise", () => {
    assert.throws(() => parseHpa({ ...(hpa({}) as object), apiVersion: "autoscaling/v2beta1" }), {
      message:
        "invalid HorizontalPodAutoscaler shop/web: apiVersion autoscaling/v2beta1 is not read (metrics have another shape there); convert the manifest to autoscaling/v2",
    });
  });

  it("accepts autoscaling/v2beta2, which has the v2 shape", () => {
    const parsed = parseHpa({ ...(hpa({}) as object), apiVersion: "autoscaling/v2beta2" });
    assert.equal(parsed.apiVersion, "autoscaling/v2beta2");
  });

  it("refuses other kinds and non-objects", () => {
    assert.deepEqual(problems({ ...(hpa({}) as object), kind: "Deployment" }), [
      'kind: want HorizontalPodAutoscaler, got "Deployment"',
    ]);
    assert.deepEqual(problems("hpa"), ['want an object, got "hpa"']);
  });
});
