import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { admissionAnswer, type AdmissionRequest } from "../../src/api/admission.ts";
import { admissionReviewer, splitProblems } from "../../src/cli/admission_check.ts";
import { COLLECTOR_SWITCH_FLAGS, parseArgs, SERVE_FLAGS } from "../../src/cli/flags.ts";
import { planSetupFromFlags } from "../../src/cli/plan.ts";
import type { KubeObject } from "../../src/cluster/types.ts";
import { load as loadYaml } from "js-yaml";
import {
  COMMON_KINDS,
  discoverCustomMetrics,
  discoverExternalMetrics,
  metricNamers,
  parsePrometheusAdapterConfig,
  staticResourceMapper,
} from "../../src/core/prometheus_adapter/mod.ts";

/** The reviewer of an adapter started with `args` (collectors as the flags enable them). */
async function reviewer(args: string[], objects: KubeObject[] = []) {
  const { values } = parseArgs(args, SERVE_FLAGS);
  return admissionReviewer({
    setup: await planSetupFromFlags(values, { given: new Set(COLLECTOR_SWITCH_FLAGS), env: {} }),
    cluster: {
      list: (kind, ns) => objects.filter((o) => o.kind === kind && o.metadata.namespace === ns),
    },
    keda: values["keda-scaled-objects"] === true,
    knative: values["knative-autoscaler"] === true,
    replicaGuard: values["estafette-hpa-scaler"] === true,
  });
}

function request(
  object: Record<string, unknown>,
  extra: Partial<AdmissionRequest> = {},
): AdmissionRequest {
  const [group, version] = String(object.apiVersion).split("/");
  return {
    uid: "u1",
    operation: "CREATE",
    kind: { group, version, kind: String(object.kind) },
    namespace: "shop",
    name: "web",
    object,
    oldObject: null,
    ...extra,
  };
}

const V2_HPA = {
  apiVersion: "autoscaling/v2",
  kind: "HorizontalPodAutoscaler",
  metadata: {
    name: "web",
    namespace: "shop",
    annotations: {
      "metric-config.pods.requests-per-second.json-path/json-key": "$.rps",
      "metric-config.pods.requests-per-second.json-path/path": "/metrics",
      "metric-config.pods.requests-per-second.json-path/port": "9090",
      "metric-config.pods.requests-per-second.json-path/interval": "5x",
    },
  },
  spec: {
    scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
    maxReplicas: 5,
    metrics: [{
      type: "Pods",
      pods: {
        metric: { name: "requests-per-second" },
        target: { type: "AverageValue", averageValue: "10" },
      },
    }],
  },
};

const INTERVAL_ERROR =
  'invalid interval "5x" for Pods metric requests-per-second (annotation metric-config.pods.requests-per-second.json-path/interval): want a Go duration like 30s, 1m30s, 2h';

describe("admission checks", () => {
  it("names the metric, the annotation and the value of a bad annotation", async () => {
    const review = await reviewer([]);
    assert.deepEqual(review(request(V2_HPA)), { errors: [INTERVAL_ERROR], warnings: [] });
  });

  it("checks an autoscaling/v1 HPA through the conversion", async () => {
    const review = await reviewer([]);
    const v1 = {
      apiVersion: "autoscaling/v1",
      kind: "HorizontalPodAutoscaler",
      metadata: {
        name: "web",
        namespace: "shop",
        annotations: {
          ...V2_HPA.metadata.annotations,
          "autoscaling.alpha.kubernetes.io/metrics": JSON.stringify([{
            type: "Pods",
            pods: { metricName: "requests-per-second", targetAverageValue: "10" },
          }]),
        },
      },
      spec: { scaleTargetRef: V2_HPA.spec.scaleTargetRef, maxReplicas: 5 },
    };
    assert.deepEqual(review(request(v1)), { errors: [INTERVAL_ERROR], warnings: [] });
  });

  it("reports a collector the adapter's flags do not enable, one warning per problem", async () => {
    const review = await reviewer([]);
    const hpa = structuredClone(V2_HPA);
    hpa.metadata.annotations = {
      "metric-config.external.queue.sqs-queue-length/queue-name": "orders",
      "metric-config.external.queue.sqs-queue-length/interval": "5x",
    } as never;
    hpa.spec.metrics = [{
      type: "External",
      external: { metric: { name: "queue" }, target: { type: "AverageValue", averageValue: "1" } },
    }] as never;
    const { errors } = review(request(hpa));
    assert.deepEqual(errors, [
      'invalid interval "5x" for External metric queue (annotation metric-config.external.queue.sqs-queue-length/interval): want a Go duration like 30s, 1m30s, 2h',
      "External metric `queue` of HPA shop/web needs matchLabels.region or annotation metric-config.external.queue.sqs-queue-length/region",
      "External metric queue: collector `sqs-queue-length` is not enabled (start with --aws-external-metrics)",
    ]);
  });

  it("refuses in deny mode only errors the old object did not have", async () => {
    const review = await reviewer([]);
    const good = structuredClone(V2_HPA);
    good.metadata.annotations["metric-config.pods.requests-per-second.json-path/interval"] = "5s";
    // an update of an object that was already wrong: warned, not refused
    const same = review(request(V2_HPA, { operation: "UPDATE", oldObject: V2_HPA }));
    assert.deepEqual(same, { errors: [], warnings: [INTERVAL_ERROR] });
    const answer = admissionAnswer(
      {
        apiVersion: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        request: request(V2_HPA, { operation: "UPDATE", oldObject: good }),
      },
      { review, denyInvalid: true },
    );
    assert.equal((answer.body as { response: { allowed: boolean } }).response.allowed, false);
  });

  it("leaves kinds whose feature is off alone", async () => {
    const review = await reviewer([]);
    const so = {
      apiVersion: "keda.sh/v1alpha1",
      kind: "ScaledObject",
      metadata: { name: "web", namespace: "shop" },
      spec: { scaleTargetRef: { name: "web" }, triggers: [{ type: "nope", metadata: {} }] },
    };
    assert.deepEqual(review(request(so)), { errors: [], warnings: [] });
    const withKeda = await reviewer(["--keda-scaled-objects"]);
    assert.equal(withKeda(request(so)).errors.length, 1);
  });

  it("applies --max-metrics-per-namespace with the namespace's other HPAs", async () => {
    const other = structuredClone(V2_HPA);
    other.metadata.name = "older";
    (other.metadata as Record<string, unknown>).creationTimestamp = "2020-01-01T00:00:00Z";
    other.metadata.annotations["metric-config.pods.requests-per-second.json-path/interval"] = "5s";
    const good = structuredClone(V2_HPA);
    good.metadata.annotations["metric-config.pods.requests-per-second.json-path/interval"] = "5s";
    (good.metadata as Record<string, unknown>).creationTimestamp = "2021-01-01T00:00:00Z";
    const review = await reviewer(["--max-metrics-per-namespace=1"], [other as never]);
    const { errors } = review(request(good));
    assert.equal(errors.length, 1);
    assert.match(errors[0], /max-metrics-per-namespace/);
  });
});

describe("splitProblems", () => {
  it("splits on '; ' outside quoted values", () => {
    assert.deepEqual(splitProblems('a "x; y" b; c `p; q`; d'), ['a "x; y" b', "c `p; q`", "d"]);
    assert.deepEqual(splitProblems('open "quote; never closed'), ['open "quote; never closed']);
  });
});

describe("admission checks with prometheus-adapter's rules (--prometheus-adapter-config)", () => {
  const mapper = staticResourceMapper(COMMON_KINDS);
  const config = parsePrometheusAdapterConfig(
    loadYaml(`
rules:
- seriesQuery: '{__name__=~"^http_.*_total$",namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: "^(.*)_total$", as: "\${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
`),
  );
  const custom = metricNamers(config.rules, mapper);
  const series = new Map([[config.rules[0].seriesQuery, [{
    __name__: "http_requests_total",
    namespace: "shop",
    pod: "web-a",
  }]]]);
  const hpa = (metric: string) => ({
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name: "web", namespace: "shop" },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
      maxReplicas: 5,
      metrics: [{
        type: "Pods",
        pods: { metric: { name: metric }, target: { type: "AverageValue", averageValue: "10" } },
      }],
    },
  });
  async function reviewerWithRules() {
    const { values } = parseArgs([], SERVE_FLAGS);
    return admissionReviewer({
      setup: await planSetupFromFlags(values, {
        given: new Set(COLLECTOR_SWITCH_FLAGS),
        env: {},
        prometheusAdapter: {
          context: () => ({
            custom,
            external: [],
            discovered: {
              custom: discoverCustomMetrics(custom, series, mapper),
              external: discoverExternalMetrics([], new Map()),
            },
            mapper,
            // as the running rules plan (PrometheusAdapterServing.planContext)
            unknownAsCandidates: true,
          }),
          offline: null,
        },
      }),
      cluster: { list: () => [] },
      keda: false,
      knative: false,
      replicaGuard: false,
    });
  }

  it("admits a metric a rule serves without a word", async () => {
    const review = await reviewerWithRules();
    assert.deepEqual(review(request(hpa("http_requests_per_second"))), {
      errors: [],
      warnings: [],
    });
  });

  it("admits a metric a rule could name once its series appear (applied with its workload)", async () => {
    const review = await reviewerWithRules();
    assert.deepEqual(review(request(hpa("http_errors_per_second"))), {
      errors: [],
      warnings: [],
    });
  });

  it("still names a metric that neither a collector nor a rule serves", async () => {
    const review = await reviewerWithRules();
    const external = hpa("x");
    external.spec.metrics = [{
      type: "External",
      external: {
        metric: { name: "queue" },
        target: { type: "AverageValue", averageValue: "10" },
      },
    }] as never;
    assert.deepEqual(review(request(external)).errors, [
      "External metric `queue` has no `type` label",
      "External metric queue: set matchLabels.type to one of: formula, influxdb, json-path, nakadi, prometheus, requests-per-second, sqs-queue-length, zmon",
    ]);
  });
});
