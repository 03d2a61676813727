/**
 * The Knative layer (issue 23, issue 47 point 6): autoscaler-keda's annotations to the
 * ScaledObject its `DesiredScaledObject` would create (in memory), and from it, through KEDA's
 * own code, the HPA. The expected ScaledObjects are written by hand here, and the HPA is checked
 * against `kedaHpaFor` of the hand-written ScaledObject, so that a regression in either layer
 * fails.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  DEFAULT_KNATIVE_PROMETHEUS_ADDRESS,
  isKnativeHpaClass,
  KNATIVE_ANNOTATIONS as K,
  KNATIVE_HPA_CLASS,
  KNATIVE_PA_API_VERSION,
  type KnativeConfig,
  type KnativeHpa,
  knativeHpaFor,
  type KnativeHpaForOptions,
  type KnativeMappingError,
  knativeScaledObjectFor,
  prometheusAddressProblem,
  renderQueryTemplate,
} from "../../src/core/knative/mapping.ts";
import { type KedaHpa, kedaHpaFor, type KedaHpaOwner } from "../../src/core/keda/hpa.ts";
import { kedaPlans } from "../../src/core/keda/plan.ts";
import {
  parseScaledObject,
  type ScaledObject,
  type ScaledObjectTrigger,
} from "../../src/core/keda/scaled_object.ts";
import type { HpaBehavior, HpaMetricSpec } from "../../src/core/kubernetes/hpa.ts";
import { createEndpointPolicy } from "../../src/core/endpoint_policy.ts";

const NAME = "test-revision";
const NS = "test-namespace";
const PROM = DEFAULT_KNATIVE_PROMETHEUS_ADDRESS;
const MAX = 2147483647;
const VERSION = "1.2.3";
const CLASS = { [K.class]: KNATIVE_HPA_CLASS };
const TARGET_REF = { apiVersion: "apps/v1", kind: "Deployment", name: "test-revision-deployment" };
const PA_OWNER: KedaHpaOwner = {
  apiVersion: KNATIVE_PA_API_VERSION,
  kind: "PodAutoscaler",
  name: NAME,
  uid: "pa-uid",
};

/** The PA of autoscaler-keda's tests: test-namespace/test-revision, with the class annotation. */
function pa(
  annotations: Record<string, string>,
  more: { labels?: Record<string, string>; reachability?: string } = {},
): unknown {
  return {
    apiVersion: KNATIVE_PA_API_VERSION,
    kind: "PodAutoscaler",
    metadata: {
      name: NAME,
      namespace: NS,
      uid: "pa-uid",
      ...(more.labels ? { labels: more.labels } : {}),
      annotations: { ...CLASS, ...annotations },
    },
    spec: {
      scaleTargetRef: TARGET_REF,
      protocolType: "http1",
      ...(more.reachability ? { reachability: more.reachability } : {}),
    },
  };
}

/**
 * A successful mapping. Its ScaledObject is a valid KEDA ScaledObject, and its HPA is KEDA's HPA
 * of that ScaledObject, owned by the source.
 */
function mapped(
  source: unknown,
  config?: KnativeConfig,
  options: Partial<KnativeHpaForOptions> = {},
): KnativeHpa {
  const r = knativeHpaFor(source, { version: VERSION, ...(config ? { config } : {}), ...options });
  if ("error" in r) assert.fail(`unexpected mapping error: ${r.error}`);
  assert.deepEqual(parseScaledObject(r.scaledObject), r.scaledObject, "a valid ScaledObject");
  return r;
}

function failed(source: unknown, config?: KnativeConfig): KnativeMappingError {
  const r = knativeHpaFor(source, { version: VERSION, ...(config ? { config } : {}) });
  if (!("error" in r)) assert.fail(`want an error, got ${JSON.stringify(r.scaledObject)}`);
  return r;
}

/** The error, its annotation and its value, as one object to compare. */
function errorOf(source: unknown, config?: KnativeConfig) {
  const { error, annotation, value } = failed(source, config);
  return { error, annotation, value };
}

/** The ScaledObject autoscaler-keda builds for the PA above, written out by hand. */
function soOfPa(o: {
  annotations: Record<string, string>;
  triggers: ScaledObjectTrigger[];
  min?: number;
  max?: number;
  behavior?: HpaBehavior;
  modifiers?: NonNullable<ScaledObject["spec"]["advanced"]>["scalingModifiers"];
  labels?: Record<string, string>;
  fallback?: ScaledObject["spec"]["fallback"];
}): ScaledObject {
  return {
    apiVersion: "keda.sh/v1alpha1",
    kind: "ScaledObject",
    metadata: {
      name: NAME,
      namespace: NS,
      ...(o.labels ? { labels: o.labels } : {}),
      annotations: { ...CLASS, ...o.annotations },
    },
    spec: {
      scaleTargetRef: TARGET_REF,
      ...(o.min !== undefined ? { minReplicaCount: o.min } : {}),
      maxReplicaCount: o.max ?? MAX,
      advanced: {
        horizontalPodAutoscalerConfig: {
          name: NAME,
          ...(o.behavior ? { behavior: o.behavior } : {}),
        },
        ...(o.modifiers ? { scalingModifiers: o.modifiers } : {}),
      },
      triggers: o.triggers,
      ...(o.fallback ? { fallback: o.fallback } : {}),
    },
  };
}

/** autoscaler-keda's cpu trigger. */
function cpuTrigger(value: string, metricType = "Utilization"): ScaledObjectTrigger {
  return {
    type: "cpu",
    name: "default-trigger-cpu",
    metricType: metricType as "Utilization",
    metadata: { value },
  };
}

/** autoscaler-keda's memory trigger. */
function memoryTrigger(value: string, metricType = "AverageValue"): ScaledObjectTrigger {
  return {
    type: "memory",
    name: "default-trigger-memory",
    metricType: metricType as "AverageValue",
    metadata: { value },
  };
}

/** autoscaler-keda's prometheus trigger of a custom metric. */
function customTrigger(
  threshold: string,
  o: {
    name?: string;
    metricType?: "AverageValue" | "Value";
    query?: string;
    server?: string;
    namespace?: string;
    auth?: { name: string; kind?: "TriggerAuthentication" | "ClusterTriggerAuthentication" };
  } = {},
): ScaledObjectTrigger {
  return {
    type: "prometheus",
    name: o.name ?? "default-trigger-custom",
    metricType: o.metricType ?? "AverageValue",
    metadata: {
      serverAddress: o.server ?? PROM,
      query: o.query ?? QUERY,
      threshold,
      namespace: o.namespace ?? NS,
      ...(o.auth ? { authModes: "bearer" } : {}),
    },
    ...(o.auth ? { authenticationRef: o.auth } : {}),
  };
}

/** KEDA's HPA of a ScaledObject, owned by the PA (or `owner`). */
function kedaHpaOf(
  so: ScaledObject,
  owner: KedaHpaOwner = PA_OWNER,
  params?: Parameters<typeof kedaHpaFor>[1]["params"],
): KedaHpa {
  const r = kedaHpaFor(so, { version: VERSION, owner, ...(params ? { params } : {}) });
  if ("error" in r) assert.fail(`KEDA's error: ${r.error}`);
  return r.hpa;
}

/** The HPA KEDA writes for the PA above, written out by hand. */
function hpaOfPa(o: {
  annotations: Record<string, string>;
  metrics: HpaMetricSpec[];
  min?: number;
  max?: number;
  behavior?: HpaBehavior;
  labels?: Record<string, string>;
}): KedaHpa {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: {
      name: NAME,
      namespace: NS,
      labels: {
        "app.kubernetes.io/name": NAME,
        "app.kubernetes.io/version": VERSION,
        "app.kubernetes.io/part-of": NAME,
        "app.kubernetes.io/managed-by": "hpa-metrics-adapter",
        ...o.labels,
        "scaledobject.keda.sh/name": NAME,
      },
      annotations: { ...CLASS, ...o.annotations },
      ownerReferences: [{ ...PA_OWNER, controller: true, blockOwnerDeletion: true }],
    },
    spec: {
      scaleTargetRef: TARGET_REF,
      minReplicas: o.min ?? 1,
      maxReplicas: o.max ?? MAX,
      metrics: o.metrics,
      ...(o.behavior ? { behavior: o.behavior } : {}),
    },
  };
}

function cpu(averageUtilization: number): HpaMetricSpec {
  return {
    type: "Resource",
    resource: { name: "cpu", target: { type: "Utilization", averageUtilization } },
  };
}

/** KEDA's External metric: `s<index>-prometheus` or `composite-metric`, by the KEDA label. */
function external(
  name: string,
  target: { averageValue: string } | { value: string },
  so = NAME,
): HpaMetricSpec {
  return {
    type: "External",
    external: {
      metric: { name, selector: { matchLabels: { "scaledobject.keda.sh/name": so } } },
      target: "value" in target
        ? { type: "Value", value: target.value }
        : { type: "AverageValue", averageValue: target.averageValue },
    },
  };
}

const QUERY = 'sum(rate(http_requests_total{namespace="test"}[1m]))';
const CUSTOM = { [K.metric]: "my_metric", [K.target]: "5", [K.prometheusQuery]: QUERY };

function extra(name: string | undefined, metadata: Record<string, string>, more = {}) {
  return { type: "prometheus", ...(name ? { name } : {}), metadata, ...more };
}

const TRIGGER2 = extra("trigger2", {
  serverAddress: PROM,
  namespace: NS,
  query: "sum(rate(http_requests_total{}[1m]))",
  threshold: "5",
});

/** Both layers: the ScaledObject is `so`, and the HPA is KEDA's HPA of `so`. */
function assertLayers(r: KnativeHpa, so: ScaledObject, params?: Parameters<typeof kedaHpaOf>[2]) {
  assert.deepEqual(r.scaledObject, so, "the ScaledObject autoscaler-keda would create");
  assert.deepEqual(r.hpa, kedaHpaOf(so, PA_OWNER, params), "KEDA's HPA of that ScaledObject");
}

describe("knativeHpaFor: autoscaler-keda's test vectors, both layers", () => {
  it("cpu metric with default cm values: the ScaledObject, and KEDA's HPA of it, field by field", () => {
    const annotations = { [K.maxScale]: "10", [K.metric]: "cpu", [K.target]: "75" };
    const labels = { "serving.knative.dev/revision": NAME };
    const r = mapped(pa(annotations, { labels }));
    const so = soOfPa({ annotations, labels, min: 1, max: 10, triggers: [cpuTrigger("75")] });
    assert.deepEqual(
      [r.autoCreate, r.minScale, r.initialScale, r.warnings, r.owner],
      [true, 0, 1, [], PA_OWNER],
    );
    assertLayers(r, so);
    assert.deepEqual(r.hpa, hpaOfPa({ annotations, labels, max: 10, metrics: [cpu(75)] }));
  });

  it("cpu metric with a wrong metric type (Value, foo) is an error naming the value", () => {
    const base = { [K.maxScale]: "10", [K.metric]: "cpu", [K.target]: "75" };
    assert.deepEqual(errorOf(pa({ ...base, [K.metricType]: "Value" })), {
      error:
        'invalid metric type: "Value" (annotation autoscaling.knative.dev/metric-type): metric cpu takes Utilization or AverageValue',
      annotation: K.metricType,
      value: "Value",
    });
    assert.deepEqual(errorOf(pa({ ...base, [K.metricType]: "foo" })), {
      error:
        'invalid metric type: "foo" (annotation autoscaling.knative.dev/metric-type): want AverageValue, Utilization or Value',
      annotation: K.metricType,
      value: "foo",
    });
  });

  it("cpu metric with min scale 2: minReplicaCount 2", () => {
    const annotations = {
      [K.maxScale]: "10",
      [K.minScale]: "2",
      [K.metric]: "cpu",
      [K.target]: "75",
    };
    const r = mapped(pa(annotations));
    assertLayers(r, soOfPa({ annotations, min: 2, max: 10, triggers: [cpuTrigger("75")] }));
    assert.deepEqual(r.hpa, hpaOfPa({ annotations, min: 2, max: 10, metrics: [cpu(75)] }));
    assert.equal(r.minScale, 2);
  });

  it("memory metric with default cm values: AverageValue 200Mi, min 1", () => {
    const annotations = { [K.maxScale]: "10", [K.metric]: "memory", [K.target]: "200" };
    const r = mapped(pa(annotations));
    assertLayers(r, soOfPa({ annotations, min: 1, max: 10, triggers: [memoryTrigger("200Mi")] }));
    assert.deepEqual(
      r.hpa,
      hpaOfPa({
        annotations,
        max: 10,
        metrics: [{
          type: "Resource",
          resource: { name: "memory", target: { type: "AverageValue", averageValue: "200Mi" } },
        }],
      }),
    );
  });

  it("memory metric with a wrong metric type (Value) is an error", () => {
    assert.deepEqual(
      errorOf(pa({ [K.metric]: "memory", [K.target]: "200", [K.metricType]: "Value" })),
      {
        error:
          'invalid metric type: "Value" (annotation autoscaling.knative.dev/metric-type): metric memory takes Utilization or AverageValue',
        annotation: K.metricType,
        value: "Value",
      },
    );
  });

  it("custom metric with default cm values: one prometheus trigger, KEDA's s0-prometheus", () => {
    const r = mapped(pa(CUSTOM));
    assertLayers(r, soOfPa({ annotations: CUSTOM, triggers: [customTrigger("5")] }));
    assert.deepEqual(
      r.hpa,
      hpaOfPa({ annotations: CUSTOM, metrics: [external("s0-prometheus", { averageValue: "5" })] }),
    );
    assert.deepEqual(r.status.externalMetricNames, ["s0-prometheus"]);
  });

  it("custom metric with default cm values with extra triggers: the cpu trigger plus trigger2", () => {
    const annotations = {
      [K.metric]: "cpu",
      [K.extraPrometheusTriggers]: JSON.stringify([TRIGGER2]),
    };
    const r = mapped(pa(annotations));
    assertLayers(r, soOfPa({ annotations, min: 1, triggers: [cpuTrigger("70"), TRIGGER2] }));
    // as KEDA orders them: External before Resource; trigger2 is trigger 1
    assert.deepEqual(
      r.hpa,
      hpaOfPa({
        annotations,
        metrics: [external("s1-prometheus", { averageValue: "5" }), cpu(70)],
      }),
    );
  });

  it("custom metric with extra triggers and scaling modifiers: one composite-metric over trigger1 and trigger2", () => {
    const modifiers = {
      formula: "(trigger1 + trigger2)/2",
      target: "5",
      activationTarget: "1",
      metricType: "AverageValue" as const,
    };
    const annotations = {
      ...CUSTOM,
      [K.triggerPrometheusName]: "trigger1",
      [K.scalingModifiers]: JSON.stringify(modifiers),
      [K.extraPrometheusTriggers]: JSON.stringify([TRIGGER2]),
    };
    const r = mapped(pa(annotations));
    assertLayers(
      r,
      soOfPa({
        annotations,
        modifiers,
        triggers: [customTrigger("5", { name: "trigger1" }), TRIGGER2],
      }),
    );
    assert.deepEqual(
      r.hpa,
      hpaOfPa({ annotations, metrics: [external("composite-metric", { averageValue: "5" })] }),
    );
    // the triggers are the formula's hidden inputs, named by the trigger names
    const plans = kedaPlans(r.scaledObject, {
      hpaName: NAME,
      hpaMetrics: r.hpa.spec.metrics,
      metrics: r.metrics,
      paramsDigest: ["a", "b"],
    });
    assert.deepEqual(plans.map((p) => [p.metricName, p.hidden ?? false, p.error]), [
      ["composite-metric", false, null],
      ["s0-prometheus", true, null],
      ["s1-prometheus", true, null],
    ]);
    assert.deepEqual(plans[0].formula?.inputs.map((i) => i.identifier), ["trigger1", "trigger2"]);
  });

  it("custom metric with a bad prometheus address, a missing query, a bad auth kind, no auth name, a bad override: errors", () => {
    assert.deepEqual(errorOf(pa({ ...CUSTOM, [K.prometheusAddress]: "http//9090" })), {
      error:
        'invalid prometheus address: "http//9090" (annotation autoscaling.knative.dev/prometheus-address): invalid URI for request',
      annotation: K.prometheusAddress,
      value: "http//9090",
    });
    assert.deepEqual(errorOf(pa({ [K.metric]: "my_metric", [K.target]: "5" })), {
      error:
        'query is missing for custom metric "my_metric": set annotation autoscaling.knative.dev/prometheus-query',
      annotation: K.prometheusQuery,
      value: undefined,
    });
    assert.deepEqual(
      errorOf(pa({
        ...CUSTOM,
        [K.triggerPrometheusAuthName]: "keda-trigger-auth-prometheus",
        [K.triggerPrometheusAuthKind]: "TriggerAuth",
        [K.triggerPrometheusAuthModes]: "bearer",
      })),
      {
        error:
          'invalid auth kind: "TriggerAuth" (annotation autoscaling.knative.dev/trigger-prometheus-auth-kind): want TriggerAuthentication or ClusterTriggerAuthentication',
        annotation: K.triggerPrometheusAuthKind,
        value: "TriggerAuth",
      },
    );
    assert.deepEqual(
      errorOf(pa({ ...CUSTOM, [K.triggerPrometheusAuthKind]: "TriggerAuthentication" })),
      {
        error:
          "you need to specify the name as well for authentication (annotation autoscaling.knative.dev/trigger-prometheus-auth-kind): set annotation autoscaling.knative.dev/trigger-prometheus-auth-name",
        annotation: K.triggerPrometheusAuthKind,
        value: "TriggerAuthentication",
      },
    );
    assert.deepEqual(errorOf(pa({ ...CUSTOM, [K.scaledObjectOverride]: "{bad}" })), {
      error:
        'unable to unmarshal scaled object override: invalid JSON "{bad}" (annotation autoscaling.knative.dev/scaled-object-override)',
      annotation: K.scaledObjectOverride,
      value: "{bad}",
    });
  });

  it("custom metric with default cm values with authentication: authenticationRef and authModes, the token from the resolved parameters", () => {
    const annotations = {
      ...CUSTOM,
      [K.triggerPrometheusAuthName]: "keda-trigger-auth-prometheus",
      [K.triggerPrometheusAuthModes]: "bearer",
      [K.triggerPrometheusAuthKind]: "TriggerAuthentication",
    };
    const auth = { name: "keda-trigger-auth-prometheus", kind: "TriggerAuthentication" as const };
    const so = soOfPa({ annotations, triggers: [customTrigger("5", { auth })] });
    const params = [{ metadata: so.spec.triggers[0].metadata!, authParams: { bearerToken: "t" } }];
    const r = mapped(pa(annotations), undefined, { params });
    assertLayers(r, so, params);
    // the token is a parameter of the trigger, never in the HPA
    assert.ok(!JSON.stringify(r.hpa).includes('"t"'));
    // without it, KEDA's error, naming the annotation of the trigger
    assert.deepEqual(errorOf(pa(annotations)), {
      error:
        "trigger 0 of the ScaledObject (annotation autoscaling.knative.dev/metric): failed to ensure HPA is correctly created for ScaledObject: error parsing prometheus metadata: error parsing prometheus metadata: bearer token=<empty> is required when bearer auth is enabled",
      annotation: K.metric,
      value: "my_metric",
    });
  });

  it("custom metric with revision name substitution", () => {
    const annotations = {
      ...CUSTOM,
      [K.prometheusQuery]: 'sum(rate(http_requests_total{pod=~"{{ .revisionName }}.*"}[1m]))',
    };
    assert.deepEqual(
      mapped(pa(annotations)).scaledObject.spec.triggers[0].metadata?.query,
      'sum(rate(http_requests_total{pod=~"test-revision.*"}[1m]))',
    );
  });

  it("the layers for a set of annotation sets: the HPA is KEDA's HPA of the hand-written ScaledObject", () => {
    const window = {
      scaleUp: { stabilizationWindowSeconds: 30 },
      scaleDown: { stabilizationWindowSeconds: 30 },
    };
    const cases: [Record<string, string>, ScaledObject][] = [
      [
        {
          [K.metric]: "cpu",
          [K.target]: "70.2",
          [K.metricType]: "AverageValue",
          [K.window]: "30s",
        },
        soOfPa({
          annotations: {
            [K.metric]: "cpu",
            [K.target]: "70.2",
            [K.metricType]: "AverageValue",
            [K.window]: "30s",
          },
          min: 1,
          behavior: window,
          triggers: [cpuTrigger("71", "AverageValue")],
        }),
      ],
      [
        {
          [K.metric]: "memory",
          [K.target]: "80.5",
          [K.metricType]: "Utilization",
          [K.minScale]: "3",
        },
        soOfPa({
          annotations: {
            [K.metric]: "memory",
            [K.target]: "80.5",
            [K.metricType]: "Utilization",
            [K.minScale]: "3",
          },
          min: 3,
          triggers: [memoryTrigger("81", "Utilization")],
        }),
      ],
      [
        { ...CUSTOM, [K.target]: "0.5", [K.metricType]: "Value", [K.maxScale]: "7" },
        soOfPa({
          annotations: { ...CUSTOM, [K.target]: "0.5", [K.metricType]: "Value", [K.maxScale]: "7" },
          max: 7,
          triggers: [customTrigger("0.5", { metricType: "Value" })],
        }),
      ],
      [
        {
          ...CUSTOM,
          [K.target]: "1000",
          [K.extraPrometheusTriggers]: JSON.stringify([
            extra(undefined, { serverAddress: PROM, query: "q", threshold: "2.5" }, {
              metricType: "Value",
            }),
          ]),
          [K.hpaScaleDownRules]: '{"stabilizationWindowSeconds": 600}',
        },
        soOfPa({
          annotations: {
            ...CUSTOM,
            [K.target]: "1000",
            [K.extraPrometheusTriggers]: JSON.stringify([
              extra(undefined, { serverAddress: PROM, query: "q", threshold: "2.5" }, {
                metricType: "Value",
              }),
            ]),
            [K.hpaScaleDownRules]: '{"stabilizationWindowSeconds": 600}',
          },
          behavior: { scaleDown: { stabilizationWindowSeconds: 600 } },
          triggers: [
            customTrigger("1000"),
            {
              type: "prometheus",
              metricType: "Value",
              metadata: { serverAddress: PROM, query: "q", threshold: "2.5" },
            },
          ],
        }),
      ],
    ];
    for (const [annotations, so] of cases) {
      assertLayers(mapped(pa(annotations)), so);
    }
    // and the HPA's metrics, as KEDA writes them, for the last two
    assert.deepEqual(mapped(pa(cases[2][0])).hpa.spec.metrics, [
      external("s0-prometheus", { value: "500m" }),
    ]);
    assert.deepEqual(mapped(pa(cases[3][0])).hpa.spec.metrics, [
      external("s0-prometheus", { averageValue: "1k" }),
      external("s1-prometheus", { value: "2.500" }),
    ]);
  });
});

describe("knativeHpaFor: replica bounds", () => {
  const base = { [K.metric]: "cpu", [K.target]: "75" };

  it("min-scale wins over minScale, and max-scale over maxScale (Knative's key priority)", () => {
    const annotations = {
      ...base,
      [K.minScale]: "3",
      [K.minScaleAlias]: "5",
      [K.maxScale]: "8",
      [K.maxScaleAlias]: "9",
    };
    assert.deepEqual(
      mapped(pa(annotations)).hpa,
      hpaOfPa({ annotations, min: 3, max: 8, metrics: [cpu(75)] }),
    );
  });

  it("the aliases alone are read", () => {
    const annotations = { ...base, [K.minScaleAlias]: "4", [K.maxScaleAlias]: "6" };
    assert.deepEqual(
      mapped(pa(annotations)).hpa,
      hpaOfPa({ annotations, min: 4, max: 6, metrics: [cpu(75)] }),
    );
  });

  it("a non-integer min-scale falls back to the configured default, even with minScale set", () => {
    const annotations = { ...base, [K.minScale]: "2.5", [K.minScaleAlias]: "5" };
    const r = mapped(pa(annotations), { minScale: 3 });
    assert.deepEqual(r.hpa, hpaOfPa({ annotations, min: 3, metrics: [cpu(75)] }));
    assert.equal(r.minScale, 3);
    assert.deepEqual(r.warnings, [
      'invalid min-scale "2.5" (annotation autoscaling.knative.dev/min-scale): want an integer, using the configured 3',
    ]);
  });

  it("min-scale and max-scale are base-10 int32: 0x10 and 2147483648 are not", () => {
    const annotations = { ...base, [K.minScale]: "0x10", [K.maxScale]: "2147483648" };
    const r = mapped(pa(annotations), { maxScale: 20 });
    assert.deepEqual(r.hpa, hpaOfPa({ annotations, min: 1, max: 20, metrics: [cpu(75)] }));
    assert.equal(r.warnings.length, 2);
  });

  it("an unreachable PA ignores min-scale and the configured one", () => {
    const annotations = { ...base, [K.minScale]: "5" };
    const r = mapped(pa(annotations, { reachability: "Unreachable" }), { minScale: 2 });
    assert.deepEqual(r.hpa, hpaOfPa({ annotations, min: 1, metrics: [cpu(75)] }));
    assert.equal(r.minScale, 0);
  });

  it("max-scale 0 or absent is unbounded (2147483647); the configured max-scale applies", () => {
    const zero = { ...base, [K.maxScale]: "0" };
    assert.deepEqual(mapped(pa(zero)).hpa, hpaOfPa({ annotations: zero, metrics: [cpu(75)] }));
    assert.deepEqual(
      mapped(pa(base), { maxScale: 20 }).hpa,
      hpaOfPa({ annotations: base, max: 20, metrics: [cpu(75)] }),
    );
  });

  it("the configured min-scale applies when the annotation is absent", () => {
    assert.deepEqual(
      mapped(pa(base), { minScale: 2 }).hpa,
      hpaOfPa({ annotations: base, min: 2, metrics: [cpu(75)] }),
    );
  });

  it("a negative max-scale is an error; a negative min-scale is min 1", () => {
    assert.deepEqual(errorOf(pa({ ...base, [K.maxScale]: "-1" })), {
      error:
        "invalid max-scale -1 (annotation autoscaling.knative.dev/max-scale): want an integer >= 0 (0 is unbounded)",
      annotation: K.maxScale,
      value: "-1",
    });
    const annotations = { ...base, [K.minScale]: "-3" };
    assert.deepEqual(
      mapped(pa(annotations)).hpa,
      hpaOfPa({ annotations, metrics: [cpu(75)] }),
    );
  });

  it("min-scale above max-scale is an error naming where each comes from", () => {
    assert.deepEqual(errorOf(pa({ ...base, [K.minScale]: "5", [K.maxScale]: "2" })), {
      error:
        "min-scale 5 (annotation autoscaling.knative.dev/min-scale) is greater than max-scale 2 (annotation autoscaling.knative.dev/max-scale)",
      annotation: K.maxScale,
      value: "2",
    });
    assert.deepEqual(errorOf(pa({ ...base, [K.minScaleAlias]: "5" }), { maxScale: 3 }), {
      error:
        "min-scale 5 (annotation autoscaling.knative.dev/minScale) is greater than max-scale 3 (the configured default)",
      annotation: K.minScaleAlias,
      value: "5",
    });
  });

  it("initial scale: the annotation (initial-scale before initialScale), 0 only when allowed", () => {
    assert.equal(mapped(pa({ ...base, [K.initialScale]: "3" })).initialScale, 3);
    assert.equal(mapped(pa({ ...base, [K.initialScaleAlias]: "4" })).initialScale, 4);
    assert.equal(mapped(pa({ ...base, [K.initialScale]: "0" })).initialScale, 1);
    assert.equal(
      mapped(pa({ ...base, [K.initialScale]: "0" }), { allowZeroInitialScale: true })
        .initialScale,
      0,
    );
    assert.equal(
      mapped(pa({ ...base, [K.initialScale]: "x" }), { initialScale: 2 }).initialScale,
      2,
    );
  });
});

describe("knativeHpaFor: cpu and memory", () => {
  it("metric absent is cpu, target absent is 70", () => {
    const r = mapped(pa({}));
    assert.deepEqual(r.hpa, hpaOfPa({ annotations: {}, metrics: [cpu(70)] }));
  });

  it("a fractional cpu target is rounded up, for Utilization and AverageValue (cores)", () => {
    const util = { [K.metric]: "cpu", [K.target]: "70.2" };
    assert.deepEqual(mapped(pa(util)).hpa, hpaOfPa({ annotations: util, metrics: [cpu(71)] }));
    const avg = { [K.metric]: "cpu", [K.target]: "2.5", [K.metricType]: "AverageValue" };
    assert.deepEqual(
      mapped(pa(avg)).hpa,
      hpaOfPa({
        annotations: avg,
        metrics: [{
          type: "Resource",
          resource: { name: "cpu", target: { type: "AverageValue", averageValue: "3" } },
        }],
      }),
    );
  });

  it("a target that is not a number counts as absent: cpu uses 70, with a warning", () => {
    const annotations = { [K.metric]: "cpu", [K.target]: "7O" };
    const r = mapped(pa(annotations));
    assert.deepEqual(r.hpa, hpaOfPa({ annotations, metrics: [cpu(70)] }));
    assert.deepEqual(r.warnings, [
      'invalid target "7O" (annotation autoscaling.knative.dev/target): not a number, so there is no target, cpu uses 70',
    ]);
  });

  it("a target of 0, below 0 or not finite is an error", () => {
    for (const v of ["0", "-5", "NaN", "+Inf"]) {
      assert.deepEqual(errorOf(pa({ [K.target]: v })), {
        error:
          `invalid target "${v}" (annotation autoscaling.knative.dev/target): want a number > 0`,
        annotation: K.target,
        value: v,
      });
    }
  });

  it("memory: a fractional target is truncated to whole Mi, in the API server's canonical form", () => {
    const memory = (target: string, averageValue: string) => {
      const annotations = { [K.metric]: "memory", [K.target]: target };
      assert.deepEqual(
        mapped(pa(annotations)).hpa,
        hpaOfPa({
          annotations,
          metrics: [{
            type: "Resource",
            resource: { name: "memory", target: { type: "AverageValue", averageValue } },
          }],
        }),
      );
    };
    memory("200.9", "200Mi");
    memory("1024", "1Gi");
    memory("1536", "1536Mi");
  });

  it("memory with Utilization is averageUtilization ceil(target) (KEDA rejects it)", () => {
    const annotations = { [K.metric]: "memory", [K.target]: "80.5", [K.metricType]: "Utilization" };
    assert.deepEqual(
      mapped(pa(annotations)).hpa,
      hpaOfPa({
        annotations,
        metrics: [{
          type: "Resource",
          resource: { name: "memory", target: { type: "Utilization", averageUtilization: 81 } },
        }],
      }),
    );
  });

  it("a memory target under 1 Mi is an error, not 0Mi", () => {
    assert.deepEqual(errorOf(pa({ [K.metric]: "memory", [K.target]: "0.5" })), {
      error:
        'invalid target "0.5" (annotation autoscaling.knative.dev/target): a memory target counts whole Mi, want 1 to 8796093022207',
      annotation: K.target,
      value: "0.5",
    });
  });

  it("memory without a target has no trigger: the no-triggers error", () => {
    assert.deepEqual(errorOf(pa({ [K.metric]: "memory" })), {
      error:
        "no triggers were specified, make sure a metric target is specified or extra triggers are added",
      annotation: K.target,
      value: undefined,
    });
  });

  it("custom-metric annotations on a cpu PA are ignored with a warning each", () => {
    const annotations = {
      [K.metric]: "cpu",
      [K.prometheusQuery]: "sum(x)",
      [K.triggerPrometheusAuthName]: "auth",
    };
    const r = mapped(pa(annotations));
    assert.deepEqual(r.hpa, hpaOfPa({ annotations, metrics: [cpu(70)] }));
    assert.deepEqual(r.warnings, [
      "annotation autoscaling.knative.dev/prometheus-query is ignored: it configures the custom metric's trigger and the metric is cpu",
      "annotation autoscaling.knative.dev/trigger-prometheus-auth-name is ignored: it configures the custom metric's trigger and the metric is cpu",
    ]);
  });
});

describe("knativeHpaFor: the custom metric", () => {
  it("the threshold is the exact target (upstream truncates it); KEDA's HPA target: 1000 is 1k, 1500 is 1500, 0.5 is 500m, 2.25 is 2.250", () => {
    for (
      const [target, threshold, averageValue] of [
        ["1000", "1000", "1k"],
        ["1500", "1500", "1500"],
        ["0.5", "0.5", "500m"],
        // KEDA's %.3f, kept as written when it does not end with 000
        ["2.25", "2.25", "2.250"],
        ["2e3", "2000", "2k"],
      ]
    ) {
      const annotations = { ...CUSTOM, [K.target]: target };
      const r = mapped(pa(annotations));
      assertLayers(r, soOfPa({ annotations, triggers: [customTrigger(threshold)] }));
      assert.deepEqual(r.hpa.spec.metrics, [external("s0-prometheus", { averageValue })], target);
    }
  });

  it("a target KEDA's three decimals make 0 is an error", () => {
    assert.deepEqual(errorOf(pa({ ...CUSTOM, [K.target]: "0.0004" })), {
      error:
        'invalid target "0.0004" (annotation autoscaling.knative.dev/target): want a number > 0',
      annotation: K.target,
      value: "0.0004",
    });
  });

  it("metric type Value gives a Value target; Utilization is an error", () => {
    const annotations = { ...CUSTOM, [K.metricType]: "Value" };
    const r = mapped(pa(annotations));
    assertLayers(
      r,
      soOfPa({ annotations, triggers: [customTrigger("5", { metricType: "Value" })] }),
    );
    assert.deepEqual(r.hpa.spec.metrics, [external("s0-prometheus", { value: "5" })]);
    assert.deepEqual(errorOf(pa({ ...CUSTOM, [K.metricType]: "Utilization" })), {
      error:
        'invalid metric type: "Utilization" (annotation autoscaling.knative.dev/metric-type): a custom metric takes AverageValue or Value (an External metric has no Utilization)',
      annotation: K.metricType,
      value: "Utilization",
    });
  });

  it("trigger-prometheus-name names the trigger, as given; KEDA's metric stays s0-prometheus", () => {
    for (const name of ["my_trigger", "a.b"]) {
      const annotations = { ...CUSTOM, [K.triggerPrometheusName]: name };
      const r = mapped(pa(annotations));
      assertLayers(r, soOfPa({ annotations, triggers: [customTrigger("5", { name })] }));
      assert.deepEqual(r.hpa.spec.metrics, [external("s0-prometheus", { averageValue: "5" })]);
    }
  });

  it("prometheus-address is used when valid; otherwise the configured address", () => {
    const annotations = { ...CUSTOM, [K.prometheusAddress]: "https://thanos:9092/prefix" };
    assertLayers(
      mapped(pa(annotations)),
      soOfPa({
        annotations,
        triggers: [customTrigger("5", { server: "https://thanos:9092/prefix" })],
      }),
    );
    assertLayers(
      mapped(pa(CUSTOM), { prometheusAddress: "http://prometheus.monitoring:9090" }),
      soOfPa({
        annotations: CUSTOM,
        triggers: [customTrigger("5", { server: "http://prometheus.monitoring:9090" })],
      }),
    );
  });

  it("a path-only, opaque, non-http or bad-port address is an error (upstream lets the first two through)", () => {
    for (
      const [address, why] of [
        ["/prom", "want an http:// or https:// URL with a host"],
        ["http:9090", "want an http:// or https:// URL with a host"],
        ["ftp://prometheus", "want an http:// or https:// URL with a host"],
        ["http://prometheus:99999", "invalid host or port"],
        ["", "empty url"],
        [":9090", "missing protocol scheme"],
      ]
    ) {
      assert.deepEqual(errorOf(pa({ ...CUSTOM, [K.prometheusAddress]: address })), {
        error:
          `invalid prometheus address: "${address}" (annotation autoscaling.knative.dev/prometheus-address): ${why}`,
        annotation: K.prometheusAddress,
        value: address,
      });
    }
    assert.deepEqual(errorOf(pa(CUSTOM), { prometheusAddress: "prometheus:9090" }), {
      error:
        'invalid prometheus address: "prometheus:9090" (the configured default): want an http:// or https:// URL with a host',
      annotation: undefined,
      value: undefined,
    });
  });

  it("a template syntax error, an unsupported action and an unknown key", () => {
    assert.deepEqual(
      errorOf(pa({ ...CUSTOM, [K.prometheusQuery]: 'sum(x{pod=~"{{ .revisionName "})' })),
      {
        error:
          "template initialization failed: unclosed action at position 12 (annotation autoscaling.knative.dev/prometheus-query)",
        annotation: K.prometheusQuery,
        value: 'sum(x{pod=~"{{ .revisionName "})',
      },
    );
    assert.deepEqual(
      errorOf(pa({ ...CUSTOM, [K.prometheusQuery]: "sum(x{pod={{ printf .revisionName }}})" })),
      {
        error:
          'template initialization failed: unsupported action "{{ printf .revisionName }}" at position 10: only fields such as {{ .revisionName }}, {{ . }} and comments are rendered (annotation autoscaling.knative.dev/prometheus-query)',
        annotation: K.prometheusQuery,
        value: "sum(x{pod={{ printf .revisionName }}})",
      },
    );
    const annotations = { ...CUSTOM, [K.prometheusQuery]: 'sum(x{svc="{{ .serviceName }}"})' };
    assert.equal(
      mapped(pa(annotations)).scaledObject.spec.triggers[0].metadata?.query,
      'sum(x{svc="<no value>"})',
    );
  });

  it("the auth annotations: each combination", () => {
    const auth = {
      [K.triggerPrometheusAuthName]: "cluster-auth",
      [K.triggerPrometheusAuthKind]: "ClusterTriggerAuthentication",
      [K.triggerPrometheusAuthModes]: "bearer",
    };
    const token = [{
      metadata: customTrigger("5", { auth: { name: "a" } }).metadata!,
      authParams: { bearerToken: "t" },
    }];
    assert.deepEqual(
      mapped(pa({ ...CUSTOM, ...auth }), undefined, { params: token }).scaledObject.spec.triggers,
      [customTrigger("5", {
        auth: { name: "cluster-auth", kind: "ClusterTriggerAuthentication" },
      })],
    );
    // no kind: none in the ScaledObject either (KEDA reads a TriggerAuthentication)
    assert.deepEqual(
      mapped(
        pa({
          ...CUSTOM,
          [K.triggerPrometheusAuthName]: "a",
          [K.triggerPrometheusAuthModes]: "bearer",
        }),
        undefined,
        { params: token },
      ).scaledObject.spec.triggers,
      [customTrigger("5", { auth: { name: "a" } })],
    );
    assert.deepEqual(errorOf(pa({ ...CUSTOM, [K.triggerPrometheusAuthModes]: "bearer" })), {
      error:
        "you need to specify the name as well for authentication (annotation autoscaling.knative.dev/trigger-prometheus-auth-modes): set annotation autoscaling.knative.dev/trigger-prometheus-auth-name",
      annotation: K.triggerPrometheusAuthModes,
      value: "bearer",
    });
    assert.deepEqual(errorOf(pa({ ...CUSTOM, [K.triggerPrometheusAuthName]: "a" })), {
      error:
        "you need to specify the authModes for authentication: set annotation autoscaling.knative.dev/trigger-prometheus-auth-modes",
      annotation: K.triggerPrometheusAuthModes,
      value: undefined,
    });
    assert.deepEqual(
      errorOf(pa({
        ...CUSTOM,
        [K.triggerPrometheusAuthName]: "a",
        [K.triggerPrometheusAuthModes]: "basic",
      })),
      {
        error:
          'unsupported auth modes "basic" (annotation autoscaling.knative.dev/trigger-prometheus-auth-modes): only bearer is supported',
        annotation: K.triggerPrometheusAuthModes,
        value: "basic",
      },
    );
  });

  it("no target but an extra trigger: only the extra trigger, the custom annotations ignored with warnings", () => {
    const annotations = {
      [K.metric]: "my_metric",
      [K.prometheusQuery]: QUERY,
      [K.metricType]: "Value",
      [K.extraPrometheusTriggers]: JSON.stringify([
        extra(undefined, { serverAddress: PROM, query: "sum(y)", threshold: "10" }),
      ]),
    };
    const r = mapped(pa(annotations));
    assertLayers(
      r,
      soOfPa({
        annotations,
        triggers: [{
          type: "prometheus",
          metadata: { serverAddress: PROM, query: "sum(y)", threshold: "10" },
        }],
      }),
    );
    assert.deepEqual(r.hpa.spec.metrics, [external("s0-prometheus", { averageValue: "10" })]);
    assert.deepEqual(r.warnings, [
      'annotation autoscaling.knative.dev/metric-type is ignored: metric "my_metric" has no target (annotation autoscaling.knative.dev/target), so there is no default trigger',
      'annotation autoscaling.knative.dev/prometheus-query is ignored: metric "my_metric" has no target (annotation autoscaling.knative.dev/target), so there is no default trigger',
    ]);
  });

  it("no triggers at all is an error", () => {
    assert.deepEqual(errorOf(pa({ [K.metric]: "my_metric", [K.prometheusQuery]: QUERY })), {
      error:
        "no triggers were specified, make sure a metric target is specified or extra triggers are added",
      annotation: K.target,
      value: undefined,
    });
  });

  it("two revisions of one service in one namespace select different metrics (KEDA's label)", () => {
    const rev = (name: string) => {
      const o = pa(CUSTOM) as { metadata: { name: string } };
      o.metadata.name = name;
      return mapped(o);
    };
    const a = rev("svc-00001");
    const b = rev("svc-00002");
    assert.deepEqual(a.hpa.spec.metrics, [
      external("s0-prometheus", { averageValue: "5" }, "svc-00001"),
    ]);
    assert.deepEqual(b.hpa.spec.metrics, [
      external("s0-prometheus", { averageValue: "5" }, "svc-00002"),
    ]);
  });

  it("the source's annotations go to the ScaledObject and the HPA as they are", () => {
    const key = "metric-config.external.s0-prometheus.prometheus/query";
    const r = mapped(pa({ ...CUSTOM, [key]: "old" }));
    assert.equal(r.hpa.metadata.annotations?.[key], "old");
    assert.deepEqual(r.warnings, []);
  });

  it("the endpoint policy and the PromQL scope apply to the prometheus triggers", () => {
    const policy = createEndpointPolicy({ ownNamespace: true });
    const r = knativeScaledObjectFor(
      pa({ ...CUSTOM, [K.prometheusAddress]: "http://prom.other:9090" }),
      {},
      { endpointPolicy: policy },
    );
    assert.deepEqual("error" in r && [r.error, r.annotation, r.value], [
      'prometheus address "http://prom.other:9090" of trigger "default-trigger-custom" (annotation autoscaling.knative.dev/prometheus-address): not allowed: not a Service in namespace "test-namespace" (--endpoints-in-own-namespace) and not a server given by flags',
      K.prometheusAddress,
      "http://prom.other:9090",
    ]);
    const scoped = knativeScaledObjectFor(pa(CUSTOM), {}, {
      scopePromQL: (q, ns) => `scoped(${q}, ${ns})`,
    });
    assert.ok(!("error" in scoped));
    assert.equal(scoped.scaledObject.spec.triggers[0].metadata?.query, `scoped(${QUERY}, ${NS})`);
    const refused = knativeScaledObjectFor(pa(CUSTOM), {}, {
      scopePromQL: () => {
        throw new Error("names another namespace");
      },
    });
    assert.deepEqual("error" in refused && [refused.error, refused.annotation], [
      `invalid query "${QUERY}" of trigger "default-trigger-custom" (annotation autoscaling.knative.dev/prometheus-query): names another namespace`,
      K.prometheusQuery,
    ]);
  });
});

describe("knativeHpaFor: extra prometheus triggers", () => {
  const meta = { serverAddress: "http://prom.monitoring:9090", query: "sum(q)", threshold: "7" };

  it("each trigger is KEDA's s<index>-prometheus, counted with the default trigger at 0, named or not", () => {
    const annotations = {
      ...CUSTOM,
      [K.extraPrometheusTriggers]: JSON.stringify([
        extra(undefined, meta),
        extra("named", { ...meta, threshold: "0.25" }, { metricType: "Value" }),
        extra(undefined, { ...meta, namespace: "other", ignoreNullValues: "false" }),
      ]),
    };
    const r = mapped(pa(annotations));
    assertLayers(
      r,
      soOfPa({
        annotations,
        triggers: [
          customTrigger("5"),
          { type: "prometheus", metadata: meta },
          {
            type: "prometheus",
            name: "named",
            metricType: "Value",
            metadata: { ...meta, threshold: "0.25" },
          },
          {
            type: "prometheus",
            metadata: { ...meta, namespace: "other", ignoreNullValues: "false" },
          },
        ],
      }),
    );
    assert.deepEqual(r.hpa.spec.metrics, [
      external("s0-prometheus", { averageValue: "5" }),
      external("s1-prometheus", { averageValue: "7" }),
      external("s2-prometheus", { value: "250m" }),
      external("s3-prometheus", { averageValue: "7" }),
    ]);
  });

  it("activationThreshold, useCachedMetrics and an authenticationRef with bearer go to the ScaledObject as given", () => {
    const annotations = {
      [K.metric]: "cpu",
      [K.extraPrometheusTriggers]: JSON.stringify([
        extra("t", { ...meta, activationThreshold: "2", authModes: "bearer" }, {
          useCachedMetrics: true,
          authenticationRef: { name: "ta", kind: "ClusterTriggerAuthentication" },
        }),
      ]),
    };
    const params = [undefined, {
      metadata: { ...meta, activationThreshold: "2", authModes: "bearer" },
      authParams: { bearerToken: "t" },
    }];
    const r = mapped(pa(annotations), undefined, { params });
    assertLayers(
      r,
      soOfPa({
        annotations,
        min: 1,
        triggers: [cpuTrigger("70"), {
          type: "prometheus",
          name: "t",
          useCachedMetrics: true,
          metadata: { ...meta, activationThreshold: "2", authModes: "bearer" },
          authenticationRef: { name: "ta", kind: "ClusterTriggerAuthentication" },
        }],
      }),
      params,
    );
    assert.deepEqual(r.hpa.spec.metrics, [
      external("s1-prometheus", { averageValue: "7" }),
      cpu(70),
    ]);
  });

  it("a trigger of another type is an error naming the type", () => {
    const value = JSON.stringify([{ type: "kafka", name: "k", metadata: {} }]);
    assert.deepEqual(errorOf(pa({ [K.extraPrometheusTriggers]: value })), {
      error:
        'unsupported type "kafka" of extra trigger "k" (annotation autoscaling.knative.dev/extra-prometheus-triggers): want prometheus',
      annotation: K.extraPrometheusTriggers,
      value,
    });
  });

  it("invalid JSON, a non-list and a value of the wrong type are unmarshal errors", () => {
    assert.deepEqual(errorOf(pa({ [K.extraPrometheusTriggers]: "[{bad" })), {
      error:
        'unable to unmarshal extra prometheus triggers: invalid JSON "[{bad" (annotation autoscaling.knative.dev/extra-prometheus-triggers)',
      annotation: K.extraPrometheusTriggers,
      value: "[{bad",
    });
    assert.equal(
      failed(pa({ [K.extraPrometheusTriggers]: "{}" })).error,
      "unable to unmarshal extra prometheus triggers: want a list, got an object (annotation autoscaling.knative.dev/extra-prometheus-triggers)",
    );
    assert.equal(
      failed(pa({
        [K.extraPrometheusTriggers]: JSON.stringify([{
          type: "prometheus",
          metadata: { threshold: 5 },
        }]),
      })).error,
      "unable to unmarshal extra prometheus triggers: [0].metadata.threshold: want a string, got a number (annotation autoscaling.knative.dev/extra-prometheus-triggers)",
    );
  });

  it("each bad field of a trigger is an error naming the trigger", () => {
    const cases: [unknown, string][] = [
      [
        extra("t2", { serverAddress: PROM, threshold: "5" }),
        'missing metadata.query of extra trigger "t2"',
      ],
      [
        extra(undefined, { query: "q", threshold: "5" }),
        "missing metadata.serverAddress of extra trigger [0]",
      ],
      [
        extra(undefined, { ...meta, threshold: "1k" }),
        'invalid metadata.threshold "1k" of extra trigger [0] (annotation autoscaling.knative.dev/extra-prometheus-triggers): want a number > 0',
      ],
      [
        extra(undefined, { ...meta, threshold: "0" }),
        'invalid metadata.threshold "0" of extra trigger [0] (annotation autoscaling.knative.dev/extra-prometheus-triggers): want a number > 0',
      ],
      [
        extra(undefined, meta, { metricType: "Utilization" }),
        "invalid metricType \"Utilization\" of extra trigger [0] (annotation autoscaling.knative.dev/extra-prometheus-triggers): 'Utilization' metric type is unsupported for external metrics, allowed values are 'Value' or 'AverageValue'",
      ],
      [
        extra(undefined, { ...meta, customHeaders: "a=b" }),
        'unsupported metadata key "customHeaders" of extra trigger [0] (annotation autoscaling.knative.dev/extra-prometheus-triggers): a prometheus trigger takes serverAddress, query, threshold, activationThreshold, namespace, ignoreNullValues or authModes',
      ],
      [
        extra(undefined, { ...meta, serverAddress: "prom:9090" }),
        'invalid prometheus address: "prom:9090" in metadata.serverAddress of extra trigger [0] (annotation autoscaling.knative.dev/extra-prometheus-triggers): want an http:// or https:// URL with a host',
      ],
      [
        extra(undefined, { ...meta, namespace: "Bad_NS" }),
        'invalid metadata.namespace "Bad_NS" of extra trigger [0] (annotation autoscaling.knative.dev/extra-prometheus-triggers): want a Kubernetes namespace name',
      ],
      [
        extra(undefined, { ...meta, ignoreNullValues: "yes" }),
        'invalid metadata.ignoreNullValues "yes" of extra trigger [0] (annotation autoscaling.knative.dev/extra-prometheus-triggers): want true or false',
      ],
      [
        extra(undefined, { ...meta, activationThreshold: "x" }),
        'invalid metadata.activationThreshold "x" of extra trigger [0] (annotation autoscaling.knative.dev/extra-prometheus-triggers): want a number',
      ],
      [
        extra(undefined, meta, { authenticationRef: { name: "a" } }),
        "you need to specify the authModes for authentication: no metadata.authModes of extra trigger [0] (annotation autoscaling.knative.dev/extra-prometheus-triggers): set it to bearer",
      ],
      [
        extra(undefined, { ...meta, authModes: "bearer" }),
        "you need to specify the name as well for authentication: metadata.authModes without authenticationRef of extra trigger [0] (annotation autoscaling.knative.dev/extra-prometheus-triggers)",
      ],
      [
        extra(undefined, meta, { foo: 1 }),
        "unsupported field [0].foo in the extra prometheus triggers (annotation autoscaling.knative.dev/extra-prometheus-triggers): want type, name, metadata, metricType, authenticationRef or useCachedMetrics",
      ],
      [{ metadata: meta }, "missing type of extra trigger [0]"],
    ];
    for (const [trigger, error] of cases) {
      const value = JSON.stringify([trigger]);
      const full = error.includes("(annotation ")
        ? error
        : `${error} (annotation autoscaling.knative.dev/extra-prometheus-triggers)`;
      assert.deepEqual(errorOf(pa({ [K.extraPrometheusTriggers]: value })), {
        error: full,
        annotation: K.extraPrometheusTriggers,
        value,
      });
    }
  });

  it("a trigger name used twice is an error; a name like a metric's is no clash (KEDA's metrics are s<index>-prometheus)", () => {
    const dup = JSON.stringify([extra("default-trigger-custom", meta)]);
    assert.deepEqual(errorOf(pa({ ...CUSTOM, [K.extraPrometheusTriggers]: dup })), {
      error:
        'trigger name "default-trigger-custom" is defined multiple times (annotation autoscaling.knative.dev/extra-prometheus-triggers): trigger names must be unique',
      annotation: K.extraPrometheusTriggers,
      value: dup,
    });
    const taken = JSON.stringify([extra(undefined, meta), extra("s0-prometheus", meta)]);
    assert.deepEqual(
      mapped(pa({ [K.metric]: "m", [K.extraPrometheusTriggers]: taken })).hpa.spec.metrics,
      [
        external("s0-prometheus", { averageValue: "7" }),
        external("s1-prometheus", { averageValue: "7" }),
      ],
    );
  });
});

describe("knativeHpaFor: window and scaling rules", () => {
  const base = { [K.metric]: "cpu" };

  it("window sets both stabilization windows, with no policies", () => {
    const annotations = { ...base, [K.window]: "20s" };
    assert.deepEqual(
      mapped(pa(annotations)).hpa,
      hpaOfPa({
        annotations,
        metrics: [cpu(70)],
        behavior: {
          scaleUp: { stabilizationWindowSeconds: 20 },
          scaleDown: { stabilizationWindowSeconds: 20 },
        },
      }),
    );
  });

  it("a window that is not a Go duration is ignored with a warning; one over 1h is an error", () => {
    const annotations = { ...base, [K.window]: "20" };
    const r = mapped(pa(annotations));
    assert.deepEqual(r.hpa, hpaOfPa({ annotations, metrics: [cpu(70)] }));
    assert.deepEqual(r.warnings, [
      'invalid window "20" (annotation autoscaling.knative.dev/window): not a Go duration, so the stabilization windows are the HPA\'s defaults',
    ]);
    assert.deepEqual(errorOf(pa({ ...base, [K.window]: "2h" })), {
      error:
        'invalid window "2h" (annotation autoscaling.knative.dev/window): an HPA\'s stabilization window is 0s to 1h',
      annotation: K.window,
      value: "2h",
    });
  });

  it("the scale-up rules replace the window's scaleUp wholesale; scaleDown keeps the window", () => {
    const up = {
      stabilizationWindowSeconds: 0,
      selectPolicy: "Max",
      policies: [{ type: "Pods", value: 4, periodSeconds: 15 }, {
        type: "Percent",
        value: 100,
        periodSeconds: 15,
      }],
    };
    const annotations = { ...base, [K.window]: "1m", [K.hpaScaleUpRules]: JSON.stringify(up) };
    assert.deepEqual(
      mapped(pa(annotations)).hpa,
      hpaOfPa({
        annotations,
        metrics: [cpu(70)],
        behavior: {
          scaleUp: {
            stabilizationWindowSeconds: 0,
            selectPolicy: "Max",
            policies: [
              { type: "Pods", value: 4, periodSeconds: 15 },
              { type: "Percent", value: 100, periodSeconds: 15 },
            ],
          },
          scaleDown: { stabilizationWindowSeconds: 60 },
        },
      }),
    );
  });

  it("scale-down rules alone make a behavior with scaleDown only", () => {
    const annotations = {
      ...base,
      [K.hpaScaleDownRules]: '{"stabilizationWindowSeconds": 600, "tolerance": "0.05"}',
    };
    assert.deepEqual(
      mapped(pa(annotations)).hpa,
      hpaOfPa({
        annotations,
        metrics: [cpu(70)],
        behavior: { scaleDown: { stabilizationWindowSeconds: 600, tolerance: "50m" } },
      }),
    );
  });

  it("bad rules: invalid JSON, a wrong type, a value out of the API server's bounds", () => {
    assert.deepEqual(errorOf(pa({ ...base, [K.hpaScaleUpRules]: "{" })), {
      error:
        'unable to unmarshal scale up rules: invalid JSON "{" (annotation autoscaling.knative.dev/hpa-scale-up-rules)',
      annotation: K.hpaScaleUpRules,
      value: "{",
    });
    assert.equal(
      failed(pa({ ...base, [K.hpaScaleDownRules]: '{"stabilizationWindowSeconds": "30"}' })).error,
      "unable to unmarshal scale down rules: stabilizationWindowSeconds: want an int32, got a string (annotation autoscaling.knative.dev/hpa-scale-down-rules)",
    );
    assert.equal(
      failed(pa({
        ...base,
        [K.hpaScaleDownRules]: '{"policies": [{"type": "Pods", "value": 1, "periodSeconds": 0}]}',
      })).error,
      "invalid policies[0].periodSeconds 0 in the scale down rules (annotation autoscaling.knative.dev/hpa-scale-down-rules): want 1 to 1800",
    );
    assert.equal(
      failed(pa({ ...base, [K.hpaScaleUpRules]: '{"selectPolicy": "Sum"}' })).error,
      'invalid selectPolicy "Sum" in the scale up rules (annotation autoscaling.knative.dev/hpa-scale-up-rules): want Max, Min or Disabled',
    );
    assert.equal(
      failed(pa({ ...base, [K.hpaScaleUpRules]: '{"stabilisationWindowSeconds": 30}' })).error,
      "unsupported field stabilisationWindowSeconds in the scale up rules (annotation autoscaling.knative.dev/hpa-scale-up-rules): want stabilizationWindowSeconds, selectPolicy, policies or tolerance",
    );
  });
});

describe("knativeHpaFor: scaling modifiers", () => {
  const extras = JSON.stringify([TRIGGER2]);

  it("with a cpu metric too: the formula and the Resource metric", () => {
    const annotations = {
      [K.metric]: "cpu",
      [K.target]: "60",
      [K.extraPrometheusTriggers]: extras,
      [K.scalingModifiers]: '{"formula": "trigger2 * 2", "target": "2.5", "metricType": "Value"}',
    };
    const r = mapped(pa(annotations));
    assertLayers(
      r,
      soOfPa({
        annotations,
        min: 1,
        modifiers: { formula: "trigger2 * 2", target: "2.5", metricType: "Value" },
        triggers: [cpuTrigger("60"), TRIGGER2],
      }),
    );
    // KEDA: the Resource metrics, then the composite metric
    assert.deepEqual(r.hpa.spec.metrics, [
      cpu(60),
      external("composite-metric", { value: "2500m" }),
    ]);
  });

  it("a trigger the formula does not use stays in the ScaledObject (KEDA collects it too)", () => {
    const annotations = {
      ...CUSTOM,
      [K.extraPrometheusTriggers]: extras,
      [K.scalingModifiers]: '{"formula": "trigger2", "target": "5"}',
    };
    const r = mapped(pa(annotations));
    assertLayers(
      r,
      soOfPa({
        annotations,
        modifiers: { formula: "trigger2", target: "5" },
        triggers: [customTrigger("5"), TRIGGER2],
      }),
    );
    assert.deepEqual(r.hpa.spec.metrics, [external("composite-metric", { averageValue: "5" })]);
    assert.deepEqual(r.warnings, []);
  });

  it("the formula reads a trigger by its name, as KEDA does: underscores, not dashes", () => {
    const annotations = {
      ...CUSTOM,
      [K.triggerPrometheusName]: "my_rps",
      [K.scalingModifiers]: '{"formula": "my_rps / 2", "target": "1"}',
    };
    assert.deepEqual(
      mapped(pa(annotations)).hpa.spec.metrics,
      [external("composite-metric", { averageValue: "1" })],
    );
    assert.equal(
      failed(pa({
        ...CUSTOM,
        [K.scalingModifiers]: '{"formula": "default_trigger_custom / 2", "target": "1"}',
      })).error,
      'invalid formula "default_trigger_custom / 2" in the scaling modifiers (annotation autoscaling.knative.dev/scaling-modifiers): unknown identifier default_trigger_custom: the named prometheus triggers are default-trigger-custom',
    );
  });

  it("every bad scaling modifier is an error", () => {
    const cases: [string, string][] = [
      [
        "{bad",
        'unable to unmarshal scaling modifiers: invalid JSON "{bad" (annotation autoscaling.knative.dev/scaling-modifiers)',
      ],
      [
        '{"target": "5"}',
        "ScalingModifiers.Formula is mandatory in the scaling modifiers (annotation autoscaling.knative.dev/scaling-modifiers)",
      ],
      [
        '{"formula": "default_trigger_custom"}',
        "formula is given but target is empty in the scaling modifiers (annotation autoscaling.knative.dev/scaling-modifiers)",
      ],
      [
        '{"formula": "default_trigger_custom", "target": "0"}',
        'invalid target "0" in the scaling modifiers (annotation autoscaling.knative.dev/scaling-modifiers): want a number > 0',
      ],
      [
        '{"formula": "default_trigger_custom", "target": "5", "metricType": "Utilization"}',
        'invalid metricType "Utilization" in the scaling modifiers (annotation autoscaling.knative.dev/scaling-modifiers): trigger type is Utilization, but it needs to be AverageValue or Value for external metrics',
      ],
      [
        '{"formula": "default_trigger_custom", "target": "5", "activationTarget": "x"}',
        'scalingModifiers.ActivationTarget parsing error: "x" in the scaling modifiers (annotation autoscaling.knative.dev/scaling-modifiers): want a number',
      ],
      [
        '{"formula": "a + b", "target": "5"}',
        'invalid formula "a + b" in the scaling modifiers (annotation autoscaling.knative.dev/scaling-modifiers): unknown identifier a: the named prometheus triggers are default_trigger_custom',
      ],
      [
        '{"formula": "5", "target": "5"}',
        'invalid formula "5" in the scaling modifiers (annotation autoscaling.knative.dev/scaling-modifiers): it uses no trigger, so it would never be computed',
      ],
      [
        '{"formula": "(default_trigger_custom", "target": "5"}',
        'invalid formula "(default_trigger_custom" in the scaling modifiers (annotation autoscaling.knative.dev/scaling-modifiers): expected ")" but found the end at position 23',
      ],
      [
        '{"formula": "default_trigger_custom > 1", "target": "5"}',
        'invalid formula "default_trigger_custom > 1" in the scaling modifiers (annotation autoscaling.knative.dev/scaling-modifiers): result is a boolean, not a number (with every input at -1)',
      ],
      [
        '{"Formula": "x", "target": "5"}',
        "unsupported field Formula in the scaling modifiers (annotation autoscaling.knative.dev/scaling-modifiers): want formula, target, activationTarget or metricType",
      ],
    ];
    for (const [value, error] of cases) {
      const named = { ...CUSTOM, [K.triggerPrometheusName]: "default_trigger_custom" };
      assert.deepEqual(errorOf(pa({ ...named, [K.scalingModifiers]: value })), {
        error,
        annotation: K.scalingModifiers,
        value,
      });
    }
  });

  it("a formula over the cpu trigger says a formula reads prometheus triggers only", () => {
    assert.equal(
      failed(pa({
        [K.metric]: "cpu",
        [K.extraPrometheusTriggers]: extras,
        [K.scalingModifiers]: '{"formula": "default-trigger-cpu + trigger2", "target": "5"}',
      })).error,
      'invalid formula "default-trigger-cpu + trigger2" in the scaling modifiers (annotation autoscaling.knative.dev/scaling-modifiers): unknown identifier default: the named prometheus triggers are trigger2',
    );
    const cpuNamed = JSON.stringify({
      spec: {
        advanced: { scalingModifiers: { formula: "c + trigger2", target: "5" } },
        triggers: [
          { type: "cpu", name: "c", metricType: "Utilization", metadata: { value: "50" } },
          TRIGGER2,
        ],
      },
    });
    assert.equal(
      failed(pa({ [K.scaledObjectOverride]: cpuNamed })).error,
      'invalid formula "c + trigger2" in spec.advanced.scalingModifiers of the scaled object override (annotation autoscaling.knative.dev/scaled-object-override): c is the cpu trigger "c": a formula reads prometheus triggers only (cpu and memory stay Resource metrics of the HPA)',
    );
  });

  it("empty scaling modifiers make no formula (KEDA), with a warning", () => {
    const annotations = { ...CUSTOM, [K.scalingModifiers]: "{}" };
    const r = mapped(pa(annotations));
    assertLayers(r, soOfPa({ annotations, modifiers: {}, triggers: [customTrigger("5")] }));
    assert.deepEqual(r.hpa.spec.metrics, [external("s0-prometheus", { averageValue: "5" })]);
    assert.deepEqual(r.warnings, [
      "the scaling modifiers (annotation autoscaling.knative.dev/scaling-modifiers) set nothing: no formula is made",
    ]);
  });

  it("a trigger named composite_metric does not clash with KEDA's composite-metric", () => {
    assert.deepEqual(
      mapped(pa({
        ...CUSTOM,
        [K.triggerPrometheusName]: "composite_metric",
        [K.scalingModifiers]: '{"formula": "composite_metric", "target": "5"}',
      })).hpa.spec.metrics,
      [external("composite-metric", { averageValue: "5" })],
    );
  });
});

describe("knativeHpaFor: scaled-object-override", () => {
  const promTrigger = {
    type: "prometheus",
    name: "requests",
    metadata: { serverAddress: PROM, query: "sum(r)", threshold: "100", namespace: NS },
  };

  it("the ScaledObject it holds, with name, labels, annotations, scale target, max-scale and the HPA's name forced", () => {
    const override = {
      apiVersion: "keda.sh/v1alpha1",
      kind: "ScaledObject",
      metadata: { name: "ignored", annotations: { a: "b" } },
      spec: {
        scaleTargetRef: { name: "ignored" },
        minReplicaCount: 2,
        maxReplicaCount: 50,
        advanced: {
          horizontalPodAutoscalerConfig: {
            name: "ignored",
            behavior: { scaleDown: { stabilizationWindowSeconds: 120 } },
          },
        },
        triggers: [
          promTrigger,
          { type: "cpu", metricType: "Utilization", metadata: { value: "80" } },
          { type: "memory", metricType: "AverageValue", metadata: { value: "1024Mi" } },
          {
            type: "cpu",
            name: "sidecar-cpu",
            metricType: "AverageValue",
            metadata: { value: "0.5", containerName: "proxy" },
          },
        ],
        fallback: { failureThreshold: 3, replicas: 6 },
      },
    };
    const annotations = {
      [K.maxScale]: "10",
      [K.scaledObjectOverride]: JSON.stringify(override),
    };
    const r = mapped(pa(annotations));
    const behavior = { scaleDown: { stabilizationWindowSeconds: 120 } };
    assertLayers(
      r,
      soOfPa({
        annotations,
        min: 2,
        max: 10,
        behavior,
        triggers: override.spec.triggers as ScaledObjectTrigger[],
        fallback: { failureThreshold: 3, replicas: 6 },
      }),
    );
    assert.deepEqual(
      r.hpa,
      hpaOfPa({
        annotations,
        min: 2,
        max: 10,
        // KEDA sorts them by type
        metrics: [
          {
            type: "ContainerResource",
            containerResource: {
              name: "cpu",
              container: "proxy",
              target: { type: "AverageValue", averageValue: "500m" },
            },
          },
          external("s0-prometheus", { averageValue: "100" }),
          cpu(80),
          {
            type: "Resource",
            resource: { name: "memory", target: { type: "AverageValue", averageValue: "1Gi" } },
          },
        ],
        behavior,
      }),
    );
    assert.deepEqual(r.warnings, []);
  });

  it("the other annotations are ignored with a warning each; min-scale does not apply", () => {
    const annotations = {
      [K.minScale]: "3",
      [K.window]: "30s",
      [K.scaledObjectOverride]: JSON.stringify({ spec: { triggers: [promTrigger] } }),
    };
    const r = mapped(pa(annotations));
    assertLayers(r, soOfPa({ annotations, triggers: [promTrigger] }));
    assert.deepEqual(
      r.hpa,
      hpaOfPa({ annotations, metrics: [external("s0-prometheus", { averageValue: "100" })] }),
    );
    assert.deepEqual(r.warnings, [
      "annotation autoscaling.knative.dev/min-scale is ignored: autoscaling.knative.dev/scaled-object-override sets the whole ScaledObject",
      "annotation autoscaling.knative.dev/window is ignored: autoscaling.knative.dev/scaled-object-override sets the whole ScaledObject",
    ]);
    // the PA status still counts min-scale, as Knative's ScaleBounds does
    assert.equal(r.minScale, 3);
  });

  it("advanced without horizontalPodAutoscalerConfig does not crash: scaling modifiers with a fallback on the formula", () => {
    const override = {
      spec: {
        advanced: {
          scalingModifiers: { formula: "requests ?? 0", target: "50", activationTarget: "0.5" },
        },
        triggers: [promTrigger],
        fallback: { failureThreshold: 2, replicas: 4, behavior: "scalingModifiers" },
      },
    };
    const annotations = { [K.scaledObjectOverride]: JSON.stringify(override) };
    const r = mapped(pa(annotations));
    assertLayers(
      r,
      soOfPa({
        annotations,
        modifiers: override.spec.advanced.scalingModifiers,
        triggers: [promTrigger],
        fallback: override.spec.fallback as ScaledObject["spec"]["fallback"],
      }),
    );
    assert.deepEqual(
      r.hpa,
      hpaOfPa({ annotations, metrics: [external("composite-metric", { averageValue: "50" })] }),
    );
    const formula = kedaPlans(r.scaledObject, {
      hpaName: NAME,
      hpaMetrics: r.hpa.spec.metrics,
      metrics: r.metrics,
      paramsDigest: ["d"],
    })[0];
    assert.deepEqual(formula.fallback, {
      failureThreshold: 2,
      replicas: 4,
      behavior: "scalingModifiers",
    });
  });

  it("anything that does not map onto an HPA is an error", () => {
    const cases: [unknown, string][] = [
      [
        { spec: { pollingInterval: 5, triggers: [promTrigger] } },
        "unsupported field spec.pollingInterval in the scaled object override (annotation autoscaling.knative.dev/scaled-object-override): an HPA is made from spec.triggers (prometheus, cpu, memory), spec.minReplicaCount, spec.advanced.horizontalPodAutoscalerConfig.behavior, spec.advanced.scalingModifiers and spec.fallback",
      ],
      [
        { spec: { advanced: { restoreToOriginalReplicaCount: true }, triggers: [promTrigger] } },
        "unsupported field spec.advanced.restoreToOriginalReplicaCount in the scaled object override (annotation autoscaling.knative.dev/scaled-object-override): an HPA is made from spec.triggers (prometheus, cpu, memory), spec.minReplicaCount, spec.advanced.horizontalPodAutoscalerConfig.behavior, spec.advanced.scalingModifiers and spec.fallback",
      ],
      [
        { spec: { triggers: [{ type: "kafka", metadata: {} }] } },
        'unsupported type "kafka" of trigger spec.triggers[0] of the scaled object override (annotation autoscaling.knative.dev/scaled-object-override): want prometheus, cpu or memory',
      ],
      [
        { spec: {} },
        "the scaled object override has no spec.triggers (annotation autoscaling.knative.dev/scaled-object-override)",
      ],
      [
        { spec: { triggers: [{ type: "cpu", metadata: { value: "50" } }] } },
        "missing metricType of trigger spec.triggers[0] of the scaled object override (annotation autoscaling.knative.dev/scaled-object-override): a cpu trigger takes Utilization or AverageValue",
      ],
      [
        { spec: { triggers: [{ type: "cpu", metadata: { type: "Utilization", value: "50" } }] } },
        "missing metricType of trigger spec.triggers[0] of the scaled object override (annotation autoscaling.knative.dev/scaled-object-override): a cpu trigger takes Utilization or AverageValue (metadata.type was removed in KEDA 2.18)",
      ],
      [
        {
          spec: { triggers: [{ type: "memory", metricType: "Value", metadata: { value: "1Gi" } }] },
        },
        'invalid metricType "Value" of trigger spec.triggers[0] of the scaled object override (annotation autoscaling.knative.dev/scaled-object-override): a memory trigger takes Utilization or AverageValue',
      ],
      [
        {
          spec: {
            triggers: [{ type: "cpu", metricType: "Utilization", metadata: { value: "50.5" } }],
          },
        },
        'invalid metadata.value "50.5" of trigger spec.triggers[0] of the scaled object override (annotation autoscaling.knative.dev/scaled-object-override): Utilization takes a whole percentage > 0',
      ],
      [
        {
          spec: {
            triggers: [promTrigger],
            fallback: { failureThreshold: 3, replicas: 5, behavior: "scalingModifiers" },
          },
        },
        "scalingModifiers fallback behavior requires scalingModifiers.formula to be defined (annotation autoscaling.knative.dev/scaled-object-override)",
      ],
      [
        {
          spec: {
            triggers: [{ type: "cpu", metricType: "Utilization", metadata: { value: "50" } }],
            fallback: { failureThreshold: 3, replicas: 5 },
          },
        },
        "spec.fallback needs at least one trigger that is not cpu or memory (annotation autoscaling.knative.dev/scaled-object-override)",
      ],
      [
        { spec: { triggers: [promTrigger], fallback: { failureThreshold: 3 } } },
        "missing spec.fallback.replicas in the scaled object override (annotation autoscaling.knative.dev/scaled-object-override)",
      ],
      [
        { spec: { triggers: [promTrigger], fallback: { failureThreshold: -1, replicas: 1 } } },
        "invalid spec.fallback.failureThreshold -1 in the scaled object override (annotation autoscaling.knative.dev/scaled-object-override): want an integer >= 0",
      ],
      [
        {
          spec: {
            triggers: [promTrigger],
            fallback: { failureThreshold: 1, replicas: 1, behavior: "x" },
          },
        },
        'invalid spec.fallback.behavior "x" in the scaled object override (annotation autoscaling.knative.dev/scaled-object-override): want static, currentReplicas, currentReplicasIfHigher, currentReplicasIfLower or scalingModifiers',
      ],
      [
        { status: {}, spec: { triggers: [promTrigger] } },
        "unsupported field status in the scaled object override (annotation autoscaling.knative.dev/scaled-object-override): an HPA is made from spec.triggers (prometheus, cpu, memory), spec.minReplicaCount, spec.advanced.horizontalPodAutoscalerConfig.behavior, spec.advanced.scalingModifiers and spec.fallback",
      ],
    ];
    for (const [override, error] of cases) {
      const value = JSON.stringify(override);
      assert.deepEqual(errorOf(pa({ [K.scaledObjectOverride]: value })), {
        error,
        annotation: K.scaledObjectOverride,
        value,
      });
    }
  });

  it("minReplicaCount above max-scale is an error", () => {
    const value = JSON.stringify({ spec: { minReplicaCount: 8, triggers: [promTrigger] } });
    assert.deepEqual(errorOf(pa({ [K.maxScale]: "4", [K.scaledObjectOverride]: value })), {
      error:
        "min-scale 8 (spec.minReplicaCount of annotation autoscaling.knative.dev/scaled-object-override) is greater than max-scale 4 (annotation autoscaling.knative.dev/max-scale)",
      annotation: K.maxScale,
      value: "4",
    });
  });
});

describe("knativeHpaFor: scaled-object-auto-create", () => {
  it("Go's ParseBool spellings; an invalid value keeps the configured one with a warning", () => {
    for (const v of ["false", "0", "f", "F", "FALSE", "False"]) {
      assert.equal(mapped(pa({ [K.scaledObjectAutoCreate]: v })).autoCreate, false, v);
    }
    for (const v of ["true", "1", "t", "T", "TRUE", "True"]) {
      assert.equal(
        mapped(pa({ [K.scaledObjectAutoCreate]: v }), { scaledObjectAutoCreate: false }).autoCreate,
        true,
        v,
      );
    }
    const r = mapped(pa({ [K.scaledObjectAutoCreate]: "no" }), { scaledObjectAutoCreate: false });
    assert.equal(r.autoCreate, false);
    assert.deepEqual(r.warnings, [
      'invalid scaled-object-auto-create "no" (annotation autoscaling.knative.dev/scaled-object-auto-create): want true or false, using the configured false',
    ]);
    assert.equal(mapped(pa({})).autoCreate, true);
  });

  it("an error still says whether the HPA is ours to create", () => {
    const r = failed(pa({ [K.scaledObjectAutoCreate]: "false", [K.metric]: "memory" }));
    assert.equal(r.autoCreate, false);
  });
});

describe("knativeHpaFor: annotated workloads", () => {
  function workload(kind: string, annotations: Record<string, string>): unknown {
    return {
      apiVersion: "apps/v1",
      kind,
      metadata: {
        name: "web",
        namespace: "shop",
        uid: "w-uid",
        labels: { app: "web" },
        annotations: { ...CLASS, ...annotations },
      },
      spec: { replicas: 2 },
    };
  }

  it("a Deployment: the HPA is named after it, owned by it and scales it", () => {
    const annotations = { ...CUSTOM, [K.minScale]: "2", [K.window]: "30s" };
    const r = mapped(workload("Deployment", annotations));
    const behavior = {
      scaleUp: { stabilizationWindowSeconds: 30 },
      scaleDown: { stabilizationWindowSeconds: 30 },
    };
    const so: ScaledObject = {
      apiVersion: "keda.sh/v1alpha1",
      kind: "ScaledObject",
      metadata: {
        name: "web",
        namespace: "shop",
        labels: { app: "web" },
        annotations: { ...CLASS, ...annotations },
      },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
        minReplicaCount: 2,
        maxReplicaCount: MAX,
        advanced: { horizontalPodAutoscalerConfig: { name: "web", behavior } },
        triggers: [customTrigger("5", { namespace: "shop" })],
      },
    };
    const owner = { apiVersion: "apps/v1", kind: "Deployment", name: "web", uid: "w-uid" };
    assert.deepEqual(r.scaledObject, so);
    assert.deepEqual(r.hpa, kedaHpaOf(so, owner));
    assert.deepEqual(r.hpa, {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: {
        name: "web",
        namespace: "shop",
        labels: {
          "app.kubernetes.io/name": "web",
          "app.kubernetes.io/version": VERSION,
          "app.kubernetes.io/part-of": "web",
          "app.kubernetes.io/managed-by": "hpa-metrics-adapter",
          app: "web",
          "scaledobject.keda.sh/name": "web",
        },
        annotations: { ...CLASS, ...annotations },
        ownerReferences: [{ ...owner, controller: true, blockOwnerDeletion: true }],
      },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
        minReplicas: 2,
        maxReplicas: MAX,
        metrics: [external("s0-prometheus", { averageValue: "5" }, "web")],
        behavior,
      },
    });
  });

  it("a StatefulSet, and the revision name of the query is the workload's name", () => {
    const r = mapped(workload("StatefulSet", {
      ...CUSTOM,
      [K.prometheusQuery]: 'sum(x{pod=~"{{.revisionName}}-.*"})',
    }));
    assert.deepEqual(r.hpa.spec.scaleTargetRef, {
      apiVersion: "apps/v1",
      kind: "StatefulSet",
      name: "web",
    });
    assert.equal(r.scaledObject.spec.triggers[0].metadata?.query, 'sum(x{pod=~"web-.*"})');
  });

  it("Knative's webhook checks: window 6s to 1h in whole seconds, target >= 0.01, min <= max, integers", () => {
    const cases: [Record<string, string>, string, string][] = [
      [
        { [K.window]: "5s" },
        K.window,
        'invalid window "5s" (annotation autoscaling.knative.dev/window): want a duration from 6s to 1h in whole seconds',
      ],
      [
        { [K.window]: "6.5s" },
        K.window,
        'invalid window "6.5s" (annotation autoscaling.knative.dev/window): want a duration from 6s to 1h in whole seconds',
      ],
      [
        { [K.window]: "1h1s" },
        K.window,
        'invalid window "1h1s" (annotation autoscaling.knative.dev/window): want a duration from 6s to 1h in whole seconds',
      ],
      [
        { [K.window]: "abc" },
        K.window,
        'invalid window "abc" (annotation autoscaling.knative.dev/window): want a duration from 6s to 1h in whole seconds',
      ],
      [
        { [K.target]: "0.001" },
        K.target,
        'invalid target "0.001" (annotation autoscaling.knative.dev/target): want a number >= 0.01',
      ],
      [
        { [K.target]: "x" },
        K.target,
        'invalid target "x" (annotation autoscaling.knative.dev/target): want a number >= 0.01',
      ],
      [
        { [K.minScale]: "5", [K.maxScale]: "2" },
        K.maxScale,
        "max-scale 2 is less than min-scale 5 (annotations autoscaling.knative.dev/max-scale and autoscaling.knative.dev/min-scale)",
      ],
      [
        { [K.minScaleAlias]: "abc" },
        K.minScaleAlias,
        'invalid minScale "abc" (annotation autoscaling.knative.dev/minScale): want an integer from 0 to 2147483647',
      ],
      [
        { [K.maxScale]: "-1" },
        K.maxScale,
        'invalid max-scale "-1" (annotation autoscaling.knative.dev/max-scale): want an integer from 0 to 2147483647',
      ],
    ];
    for (const [annotations, annotation, error] of cases) {
      const r = failed(workload("Deployment", annotations));
      assert.deepEqual(
        { error: r.error, annotation: r.annotation, value: r.value, warnings: r.warnings },
        { error, annotation, value: annotations[annotation], warnings: [] },
      );
    }
    // the same values on a PA are not the webhook's to check here
    assert.equal(
      mapped(pa({ [K.window]: "5s" })).hpa.spec.behavior?.scaleUp?.stabilizationWindowSeconds,
      5,
    );
    // max-scale 0 is unbounded: no conflict with min-scale
    assert.equal(
      mapped(workload("Deployment", { [K.minScale]: "5", [K.maxScale]: "0" })).hpa.spec.minReplicas,
      5,
    );
  });

  it("objects without apiVersion and kind (list items) take the kind the caller gives", () => {
    const o = workload("Deployment", {}) as Record<string, unknown>;
    delete o.apiVersion;
    delete o.kind;
    const r = mapped(o, {}, { kind: "Deployment" });
    assert.deepEqual(r.hpa.metadata.ownerReferences[0].apiVersion, "apps/v1");
    assert.deepEqual(r.hpa.spec.scaleTargetRef, {
      apiVersion: "apps/v1",
      kind: "Deployment",
      name: "web",
    });
    const p = pa({}) as Record<string, unknown>;
    delete p.apiVersion;
    delete p.kind;
    assert.deepEqual(
      mapped(p, {}, { kind: "PodAutoscaler" }).hpa,
      hpaOfPa({ annotations: {}, metrics: [cpu(70)] }),
    );
    assert.equal(
      (knativeHpaFor(workload("StatefulSet", {}), {
        version: VERSION,
        kind: "Deployment",
      }) as KnativeMappingError).error,
      'want a Deployment, got "StatefulSet"',
    );
  });
});

describe("knativeHpaFor: the source", () => {
  it("an object without the class annotation is not mapped", () => {
    const o = pa({}) as { metadata: { annotations: Record<string, string> } };
    o.metadata.annotations[K.class] = "kpa.autoscaling.knative.dev";
    assert.deepEqual(errorOf(o), {
      error:
        'PodAutoscaler test-namespace/test-revision is not of class hpa.autoscaling.knative.dev: annotation autoscaling.knative.dev/class is "kpa.autoscaling.knative.dev"',
      annotation: K.class,
      value: "kpa.autoscaling.knative.dev",
    });
    delete o.metadata.annotations[K.class];
    assert.equal(
      failed(o).error,
      "PodAutoscaler test-namespace/test-revision is not of class hpa.autoscaling.knative.dev: annotation autoscaling.knative.dev/class is not set",
    );
  });

  it("another kind, a PA without scaleTargetRef, a name too long for a label value: errors", () => {
    assert.equal(
      failed({ apiVersion: "apps/v1", kind: "ReplicaSet", metadata: { name: "r" } }).error,
      'unsupported object "ReplicaSet" of apiVersion "apps/v1": want a PodAutoscaler (autoscaling.internal.knative.dev/v1alpha1), a Deployment or a StatefulSet (apps/v1)',
    );
    const noRef = pa({}) as Record<string, unknown>;
    noRef.spec = {};
    assert.equal(
      failed(noRef).error,
      "invalid PodAutoscaler test-namespace/test-revision: spec.scaleTargetRef needs apiVersion, kind and name",
    );
    const long = pa({}) as { metadata: { name: string } };
    long.metadata.name = "r".repeat(64);
    assert.equal(
      failed(long).error,
      `name of PodAutoscaler test-namespace/${
        "r".repeat(64)
      } is longer than 63 characters: label scaledobject.keda.sh/name of KEDA's metric selectors cannot hold it`,
    );
    assert.equal(
      failed(null).error,
      "want a PodAutoscaler, a Deployment or a StatefulSet, got null",
    );
  });

  it("a manifest without namespace or uid: namespace default, no uid in the owner reference", () => {
    const o = pa({}) as { metadata: Record<string, unknown> };
    delete o.metadata.namespace;
    delete o.metadata.uid;
    const r = mapped(o);
    assert.equal(r.hpa.metadata.namespace, "default");
    assert.equal(r.hpa.metadata.ownerReferences[0].uid, undefined);
  });
});

describe("isKnativeHpaClass", () => {
  it("reads the class annotation of the object's own metadata", () => {
    assert.equal(isKnativeHpaClass(pa({})), true);
    assert.equal(
      isKnativeHpaClass({
        metadata: { annotations: { [K.class]: "kpa.autoscaling.knative.dev" } },
      }),
      false,
    );
    assert.equal(isKnativeHpaClass({ metadata: {} }), false);
    assert.equal(isKnativeHpaClass(null), false);
    assert.equal(
      isKnativeHpaClass({
        spec: { template: { metadata: { annotations: CLASS } } },
        metadata: {},
      }),
      false,
    );
  });
});

describe("renderQueryTemplate", () => {
  const data = { revisionName: "rev-1" };

  it("fields, with and without spaces; unknown fields are <no value>; {{ . }} is the map", () => {
    assert.equal(renderQueryTemplate("{{.revisionName}}/{{ .revisionName }}", data), "rev-1/rev-1");
    assert.equal(renderQueryTemplate("x{{ .RevisionName }}", data), "x<no value>");
    assert.equal(renderQueryTemplate("{{ . }}", data), "map[revisionName:rev-1]");
    assert.equal(renderQueryTemplate("no action {here} }}", data), "no action {here} }}");
  });

  it("trim markers and comments", () => {
    assert.equal(renderQueryTemplate("a  \n {{- .revisionName -}} \t b", data), "arev-1b");
    assert.equal(renderQueryTemplate("a {{/* note */}} b", data), "a  b");
    assert.equal(renderQueryTemplate("a {{- /* note */ -}} b", data), "ab");
    // "{{-3}}" is not a trim marker (no space after the dash)
    assert.throws(
      () => renderQueryTemplate("a {{-3}}", data),
      {
        message:
          'template initialization failed: unsupported action "{{-3}}" at position 2: only fields such as {{ .revisionName }}, {{ . }} and comments are rendered',
      },
    );
  });

  it("errors name the position of the action", () => {
    const err = (text: string, message: string) =>
      assert.throws(() => renderQueryTemplate(text, data), { message });
    err("ab {{ .revisionName", "template initialization failed: unclosed action at position 3");
    err("{{}}", "template initialization failed: missing value for command at position 0");
    err("{{/* x", "template initialization failed: unclosed comment at position 0");
    err(
      "{{/* x */ .a}}",
      "template initialization failed: comment ends before closing delimiter at position 0",
    );
  });
});

describe("prometheusAddressProblem", () => {
  it("Go's ParseRequestURI words, then an http(s) URL with a host", () => {
    assert.equal(
      prometheusAddressProblem("http://prometheus-operated.default.svc:9090"),
      undefined,
    );
    assert.equal(prometheusAddressProblem("HTTPS://thanos:9091/api"), undefined);
    assert.equal(prometheusAddressProblem("http//9090"), "invalid URI for request");
    assert.equal(prometheusAddressProblem(""), "empty url");
    assert.equal(prometheusAddressProblem("1http://x"), "invalid URI for request");
    assert.equal(
      prometheusAddressProblem("http://x\n"),
      "net/url: invalid control character in URL",
    );
    assert.equal(prometheusAddressProblem("/prom"), "want an http:// or https:// URL with a host");
    assert.equal(prometheusAddressProblem("*"), "want an http:// or https:// URL with a host");
  });
});
