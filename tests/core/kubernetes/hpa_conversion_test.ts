/**
 * src/core/kubernetes/hpa_conversion.ts on exact objects: autoscaling/v1 (estafette's README
 * example, the round-trip annotations the API server writes) and autoscaling/v2beta2 (tolerance
 * annotations), as kube-apiserver serves them as autoscaling/v2; and parseHpa reading them.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { convertHpaToV2, HpaConversionError } from "../../../src/core/kubernetes/hpa_conversion.ts";
import { InvalidHpaError, parseHpa } from "../../../src/core/kubernetes/hpa.ts";

const DEFAULT_SCALE_UP = {
  stabilizationWindowSeconds: 0,
  selectPolicy: "Max",
  policies: [
    { type: "Pods", value: 4, periodSeconds: 15 },
    { type: "Percent", value: 100, periodSeconds: 15 },
  ],
};
const DEFAULT_SCALE_DOWN = {
  selectPolicy: "Max",
  policies: [{ type: "Percent", value: 100, periodSeconds: 15 }],
};

// estafette-k8s-hpa-scaler's README example
const ESTAFETTE = {
  apiVersion: "autoscaling/v1",
  kind: "HorizontalPodAutoscaler",
  metadata: {
    name: "myapp",
    namespace: "mynamespace",
    annotations: {
      "estafette.io/hpa-scaler": "true",
      "estafette.io/hpa-scaler-prometheus-query":
        "sum(rate(nginx_http_requests_total{app='myapp'}[5m])) by (app)",
      "estafette.io/hpa-scaler-requests-per-replica": "2.5",
      "estafette.io/hpa-scaler-delta": "-0.5",
    },
  },
  spec: {
    scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "myapp" },
    minReplicas: 3,
    maxReplicas: 100,
    targetCPUUtilizationPercentage: 80,
  },
};

describe("convertHpaToV2", () => {
  it("converts estafette's autoscaling/v1 example: the cpu target as a Resource metric", () => {
    const input = structuredClone(ESTAFETTE);
    assert.deepEqual(convertHpaToV2(input), {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: ESTAFETTE.metadata,
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "myapp" },
        minReplicas: 3,
        maxReplicas: 100,
        metrics: [{
          type: "Resource",
          resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 80 } },
        }],
      },
    });
    assert.deepEqual(input, ESTAFETTE, "the input is not changed");
  });

  it("defaults minReplicas to 1 and the metrics to cpu at 80% (v1 without a cpu target)", () => {
    const out = convertHpaToV2({
      apiVersion: "autoscaling/v1",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "web" },
      spec: { scaleTargetRef: { kind: "Deployment", name: "web" }, maxReplicas: 4 },
    }) as { spec: unknown };
    assert.deepEqual(out.spec, {
      scaleTargetRef: { kind: "Deployment", name: "web" },
      minReplicas: 1,
      maxReplicas: 4,
      metrics: [{
        type: "Resource",
        resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 80 } },
      }],
    });
  });

  it("reads and removes the round-trip annotations the API server writes on v1", () => {
    const out = convertHpaToV2({
      apiVersion: "autoscaling/v1",
      kind: "HorizontalPodAutoscaler",
      metadata: {
        name: "web",
        namespace: "shop",
        annotations: {
          "team": "a",
          "autoscaling.alpha.kubernetes.io/metrics": JSON.stringify([
            {
              type: "External",
              external: {
                metricName: "prometheus-query",
                metricSelector: { matchLabels: { "query-name": "rps" } },
                targetAverageValue: "10",
              },
            },
            {
              type: "Object",
              object: {
                target: { apiVersion: "v1", kind: "Service", name: "svc" },
                metricName: "hits",
                targetValue: "0",
                averageValue: "5",
              },
            },
          ]),
          // the internal Go type, without JSON tags, as kube-apiserver writes it
          "autoscaling.alpha.kubernetes.io/behavior":
            '{"ScaleUp":null,"ScaleDown":{"StabilizationWindowSeconds":60,"SelectPolicy":null,"Policies":[{"Type":"Pods","Value":1,"PeriodSeconds":30}],"Tolerance":"50m"}}',
          "autoscaling.alpha.kubernetes.io/current-metrics":
            '[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":40,"currentAverageValue":"120m"}}]',
          "autoscaling.alpha.kubernetes.io/conditions":
            '[{"type":"AbleToScale","status":"True","lastTransitionTime":"2024-05-01T12:00:00+02:00","reason":"ReadyForNewScale"}]',
          // v2beta2's: dropped on v1 too, never read
          "autoscaling.alpha.kubernetes.io/scale-up-tolerance": "0.2",
        },
      },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
        maxReplicas: 10,
        targetCPUUtilizationPercentage: 70,
      },
      status: { currentReplicas: 2, desiredReplicas: 3, currentCPUUtilizationPercentage: 41 },
    });
    assert.deepEqual(out, {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "web", namespace: "shop", annotations: { team: "a" } },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
        minReplicas: 1,
        maxReplicas: 10,
        // the annotation's metrics first, then the cpu target
        metrics: [
          {
            type: "External",
            external: {
              metric: {
                name: "prometheus-query",
                selector: { matchLabels: { "query-name": "rps" } },
              },
              target: { type: "AverageValue", averageValue: "10" },
            },
          },
          {
            type: "Object",
            object: {
              describedObject: { kind: "Service", name: "svc", apiVersion: "v1" },
              metric: { name: "hits" },
              // Kubernetes 1.36: a zero targetValue is not kept beside an averageValue
              target: { type: "AverageValue", averageValue: "5" },
            },
          },
          {
            type: "Resource",
            resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 70 } },
          },
        ],
        behavior: {
          scaleUp: DEFAULT_SCALE_UP,
          scaleDown: {
            stabilizationWindowSeconds: 60,
            selectPolicy: "Max",
            policies: [{ type: "Pods", value: 1, periodSeconds: 30 }],
            tolerance: "50m",
          },
        },
      },
      status: {
        currentReplicas: 2,
        desiredReplicas: 3,
        // the annotation's, not currentCPUUtilizationPercentage
        currentMetrics: [{
          type: "Resource",
          resource: { name: "cpu", current: { averageValue: "120m", averageUtilization: 40 } },
        }],
        conditions: [{
          type: "AbleToScale",
          status: "True",
          lastTransitionTime: "2024-05-01T10:00:00Z",
          reason: "ReadyForNewScale",
        }],
      },
    });
  });

  it("ignores an annotation Go cannot decode, whole, and matches keys as Go does", () => {
    const hpa = (annotations: Record<string, string>) => ({
      apiVersion: "autoscaling/v1",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "web", annotations },
      spec: { scaleTargetRef: { kind: "Deployment", name: "web" }, maxReplicas: 3 },
    });
    const spec = (a: Record<string, string>) =>
      (convertHpaToV2(hpa(a)) as { spec: Record<string, unknown> }).spec;
    // a malformed quantity in the second metric: none is read, cpu at 80% instead
    const bad = spec({
      "autoscaling.alpha.kubernetes.io/metrics":
        '[{"type":"Pods","pods":{"metricName":"a","targetAverageValue":"1"}},{"type":"Pods","pods":{"metricName":"b","targetAverageValue":"1x"}}]',
    });
    assert.deepEqual(bad.metrics, [{
      type: "Resource",
      resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 80 } },
    }]);
    // field names in any case (encoding/json folds them); an empty behavior is no behavior
    const folded = spec({
      "autoscaling.alpha.kubernetes.io/metrics":
        '[{"TYPE":"Pods","Pods":{"METRICNAME":"a","targetaveragevalue":2}}]',
      "autoscaling.alpha.kubernetes.io/behavior": '{"scaleup":null}',
    });
    assert.deepEqual(folded.metrics, [{
      type: "Pods",
      pods: { metric: { name: "a" }, target: { type: "AverageValue", averageValue: "2" } },
    }]);
    assert.equal(folded.behavior, undefined);
    // a utilization that is not an int32
    const float = spec({
      "autoscaling.alpha.kubernetes.io/behavior": '{"ScaleUp":{"StabilizationWindowSeconds":1.5}}',
    });
    assert.equal(float.behavior, undefined);
  });

  it("converts autoscaling/v2beta2: tolerance from its annotations, not its (unknown) field", () => {
    const out = convertHpaToV2({
      apiVersion: "autoscaling/v2beta2",
      kind: "HorizontalPodAutoscaler",
      metadata: {
        name: "web",
        annotations: {
          "autoscaling.alpha.kubernetes.io/scale-down-tolerance": "50m",
          "autoscaling.alpha.kubernetes.io/metrics": "[]",
        },
      },
      spec: {
        scaleTargetRef: { kind: "Deployment", name: "web" },
        maxReplicas: 3,
        metrics: [{
          type: "External",
          external: { metric: { name: "q" }, target: { type: "Value", value: "1" } },
        }],
        behavior: { scaleUp: { tolerance: "0.5", selectPolicy: "Min" } },
      },
    });
    assert.deepEqual(out, {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "web", annotations: {} },
      spec: {
        scaleTargetRef: { kind: "Deployment", name: "web" },
        minReplicas: 1,
        maxReplicas: 3,
        metrics: [{
          type: "External",
          external: { metric: { name: "q" }, target: { type: "Value", value: "1" } },
        }],
        behavior: {
          scaleUp: { ...DEFAULT_SCALE_UP, selectPolicy: "Min" },
          scaleDown: { ...DEFAULT_SCALE_DOWN, tolerance: "50m" },
        },
      },
    });
  });

  it("refuses a v2beta2 HPA whose tolerance annotation is not a quantity, as the API server", () => {
    const hpa = {
      apiVersion: "autoscaling/v2beta2",
      kind: "HorizontalPodAutoscaler",
      metadata: {
        name: "web",
        namespace: "shop",
        annotations: { "autoscaling.alpha.kubernetes.io/scale-up-tolerance": "ten percent" },
      },
      spec: { scaleTargetRef: { kind: "Deployment", name: "web" }, maxReplicas: 3 },
    };
    assert.throws(() => convertHpaToV2(hpa), HpaConversionError);
    assert.throws(() => parseHpa(hpa), (e: unknown) => {
      assert.ok(e instanceof InvalidHpaError);
      assert.match(
        e.message,
        /^invalid HorizontalPodAutoscaler shop\/web: autoscaling\/v2beta2: failed to parse annotation "autoscaling.alpha.kubernetes.io\/scale-up-tolerance"/,
      );
      return true;
    });
  });

  it("leaves autoscaling/v2 and other objects as they are", () => {
    const v2 = { apiVersion: "autoscaling/v2", kind: "HorizontalPodAutoscaler", spec: {} };
    assert.equal(convertHpaToV2(v2), v2);
    assert.equal(convertHpaToV2(null), null);
  });
});

describe("parseHpa of the older versions", () => {
  it("reads autoscaling/v1 through the conversion (it refused it before)", () => {
    const hpa = parseHpa(ESTAFETTE);
    assert.equal(hpa.apiVersion, "autoscaling/v1");
    assert.deepEqual(hpa.spec.metrics, [{
      type: "Resource",
      resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 80 } },
    }]);
    assert.equal(hpa.spec.minReplicas, 3);
  });

  it("still refuses autoscaling/v2beta1", () => {
    assert.throws(
      () => parseHpa({ ...ESTAFETTE, apiVersion: "autoscaling/v2beta1" }),
      /apiVersion autoscaling\/v2beta1 is not read/,
    );
  });
});
