import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  planHpa,
  planKey,
  type PlanOptions,
  queryKey,
} from "../../src/core/kube_metrics_adapter/plan.ts";
import { InvalidHpaError } from "../../src/core/kubernetes/hpa.ts";
import type { MetricPlan } from "../../src/core/types.ts";

type Obj = Record<string, unknown>;

function hpa(
  metrics: Obj[],
  annotations: Record<string, string> = {},
  extra: { namespace?: string; name?: string; target?: string } = {},
): Obj {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name: extra.name ?? "web", namespace: extra.namespace ?? "shop", annotations },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: extra.target ?? "web" },
      minReplicas: 1,
      maxReplicas: 10,
      metrics,
    },
  };
}

function external(name: string, matchLabels?: Record<string, string>): Obj {
  return {
    type: "External",
    external: {
      metric: matchLabels ? { name, selector: { matchLabels } } : { name },
      target: { type: "AverageValue", averageValue: "10" },
    },
  };
}

function object(
  name: string,
  kind: string,
  objectName = "web",
  matchLabels?: Record<string, string>,
): Obj {
  return {
    type: "Object",
    object: {
      describedObject: { apiVersion: "v1", kind, name: objectName },
      metric: matchLabels ? { name, selector: { matchLabels } } : { name },
      target: { type: "AverageValue", averageValue: "10" },
    },
  };
}

function pods(name: string, matchLabels?: Record<string, string>): Obj {
  return {
    type: "Pods",
    pods: {
      metric: matchLabels ? { name, selector: { matchLabels } } : { name },
      target: { type: "AverageValue", averageValue: "10" },
    },
  };
}

function one(
  metric: Obj,
  annotations: Record<string, string> = {},
  options?: PlanOptions,
): MetricPlan {
  const plans = planHpa(hpa([metric], annotations), options);
  assert.equal(plans.length, 1);
  return plans[0];
}

/** The fields a collector-choice case pins. */
function outcome(p: MetricPlan): Obj {
  const o: Obj = { collector: p.collector, error: p.error, config: p.config };
  if (p.warnings) o.warnings = p.warnings;
  return o;
}

const JSON_PATH_PODS = {
  "metric-config.pods.rps.json-path/json-key": "$.rps",
  "metric-config.pods.rps.json-path/port": "9090",
};

describe("planHpa collector choice", () => {
  const cases: Array<[string, Obj, Record<string, string>, Obj]> = [
    // External, by type label
    ["External type prometheus", external("q", { type: "prometheus" }), {
      "metric-config.external.q.prometheus/query": "sum(up)",
    }, { collector: "prometheus", error: null, config: { query: "sum(up)", type: "prometheus" } }],
    [
      "External type sqs-queue-length",
      external("q", {
        type: "sqs-queue-length",
        "queue-name": "outbox",
        region: "eu-central-1",
      }),
      {},
      {
        collector: "sqs-queue-length",
        error: null,
        config: { "queue-name": "outbox", region: "eu-central-1", type: "sqs-queue-length" },
      },
    ],
    ["External type influxdb", external("q", { type: "influxdb" }), {
      "metric-config.external.q.influxdb/query": "from()",
    }, { collector: "influxdb", error: null, config: { query: "from()", type: "influxdb" } }],
    ["External type json-path", external("q", { type: "json-path" }), {
      "metric-config.external.q.json-path/endpoint": "http://svc:8080/stats",
      "metric-config.external.q.json-path/json-key": "$.size",
    }, {
      collector: "json-path",
      error: null,
      config: { endpoint: "http://svc:8080/stats", "json-key": "$.size", type: "json-path" },
    }],
    ["External type http is normalized to json-path", external("q", { type: "http" }), {
      "metric-config.external.q.json-path/endpoint": "http://svc/",
      "metric-config.external.q.json-path/json-eval": "$.a + $.b",
    }, {
      collector: "json-path",
      error: null,
      config: { endpoint: "http://svc/", "json-eval": "$.a + $.b", type: "http" },
    }],
    ["External type zmon", external("q", { type: "zmon", "check-id": "1234" }), {
      "metric-config.external.q.zmon/key": "custom.*",
    }, {
      collector: "zmon",
      error: null,
      config: { "check-id": "1234", key: "custom.*", type: "zmon" },
    }],
    [
      "External type nakadi",
      external("q", {
        type: "nakadi",
        "metric-type": "unconsumed-events",
        "subscription-id": "abc",
      }),
      {},
      {
        collector: "nakadi",
        error: null,
        config: { "metric-type": "unconsumed-events", "subscription-id": "abc", type: "nakadi" },
      },
    ],
    ["External type requests-per-second", external("q", { type: "requests-per-second" }), {
      "metric-config.external.q.requests-per-second/hostnames": "a.example.org,b.example.org",
      "metric-config.external.q.requests-per-second/weight": "50",
    }, {
      collector: "requests-per-second",
      error: null,
      config: {
        hostnames: "a.example.org,b.example.org",
        type: "requests-per-second",
        weight: "50",
      },
    }],
    // External, legacy metric names
    [
      "legacy prometheus-query reads the query query-name names (the schema resolves it)",
      external("prometheus-query", {
        "query-name": "rps",
      }),
      { "metric-config.external.prometheus-query.prometheus/rps": "sum(rate(x[1m]))" },
      {
        collector: "prometheus",
        error: null,
        config: { "query-name": "rps", rps: "sum(rate(x[1m]))", query: "sum(rate(x[1m]))" },
        warnings: [
          "External metric `prometheus-query` selects its collector by metric name (deprecated); set matchLabels.type: prometheus",
        ],
      },
    ],
    [
      "legacy prometheus-query without the named query",
      external("prometheus-query", {
        "query-name": "rps",
      }),
      { "metric-config.external.prometheus-query.prometheus/other": "up" },
      {
        collector: "prometheus",
        error:
          "External metric `prometheus-query` of HPA shop/web needs matchLabels.rps or annotation metric-config.external.prometheus-query.prometheus/rps (the query named by query-name)",
        config: { other: "up", "query-name": "rps" },
        warnings: [
          "External metric `prometheus-query` selects its collector by metric name (deprecated); set matchLabels.type: prometheus",
        ],
      },
    ],
    ["legacy flux-query", external("flux-query", { "query-name": "depth" }), {
      "metric-config.external.flux-query.influxdb/depth": "from()",
    }, {
      collector: "influxdb",
      error: null,
      config: { depth: "from()", "query-name": "depth", query: "from()" },
      warnings: [
        "External metric `flux-query` selects its collector by metric name (deprecated); set matchLabels.type: influxdb",
      ],
    }],
    ["legacy http", external("http", { x: "y" }), {
      "metric-config.external.http.json-path/endpoint": "http://svc/",
      "metric-config.external.http.json-path/json-key": "$.v",
    }, {
      collector: "json-path",
      error: null,
      config: { endpoint: "http://svc/", "json-key": "$.v", x: "y" },
      warnings: [
        "External metric `http` selects its collector by metric name (deprecated); set matchLabels.type: json-path",
      ],
    }],
    ["legacy zmon-check", external("zmon-check", { "check-id": "1" }), {}, {
      collector: "zmon",
      error: null,
      config: { "check-id": "1" },
      warnings: [
        "External metric `zmon-check` selects its collector by metric name (deprecated); set matchLabels.type: zmon",
      ],
    }],
    [
      "legacy sqs-queue-length as the metric name",
      external("sqs-queue-length", {
        "queue-name": "q",
        region: "eu-west-1",
      }),
      {},
      {
        collector: "sqs-queue-length",
        error: null,
        config: { "queue-name": "q", region: "eu-west-1" },
        warnings: [
          "External metric `sqs-queue-length` selects its collector by metric name (deprecated); set matchLabels.type: sqs-queue-length",
        ],
      },
    ],
    // External, by annotation
    ["External chosen by its annotation collector", external("q"), {
      "metric-config.external.q.prometheus/query": "up",
    }, { collector: "prometheus", error: null, config: { query: "up" } }],
    ["External annotation collector http is normalized to json-path", external("q"), {
      "metric-config.external.q.http/endpoint": "https://svc/",
      "metric-config.external.q.http/json-key": "$.v",
    }, {
      collector: "json-path",
      error: null,
      config: { endpoint: "https://svc/", "json-key": "$.v" },
    }],
    [
      "External type label wins over a different annotation collector",
      external("q", {
        type: "prometheus",
      }),
      { "metric-config.external.q.influxdb/query": "from()" },
      {
        collector: "prometheus",
        error: null,
        config: { query: "from()", type: "prometheus" },
        warnings: [
          "annotations metric-config.external.q.influxdb/... name collector `influxdb` but the metric is collected by `prometheus`; their config is still applied",
        ],
      },
    ],
    ["External without type label", external("queue"), {}, {
      collector: null,
      error:
        "External metric `queue` has no `type` label; set matchLabels.type to one of: formula, influxdb, json-path, nakadi, prometheus, requests-per-second, sqs-queue-length, zmon",
      config: {},
    }],
    ["External with unknown type", external("queue", { type: "kafka" }), {}, {
      collector: null,
      error:
        'External metric `queue` has unknown type "kafka"; set matchLabels.type to one of: formula, influxdb, json-path, nakadi, prometheus, requests-per-second, sqs-queue-length, zmon',
      config: { type: "kafka" },
    }],
    ["External with unknown annotation collector", external("queue"), {
      "metric-config.external.queue.kafka/topic": "t",
    }, {
      collector: null,
      error:
        "External metric `queue` names unknown collector `kafka` in its annotations; use one of: formula, influxdb, json-path, nakadi, prometheus, requests-per-second, sqs-queue-length, zmon",
      config: { topic: "t" },
    }],
    // Object
    [
      "Object Ingress requests-per-second -> skipper",
      object("requests-per-second", "Ingress"),
      {},
      {
        collector: "skipper",
        error: null,
        config: {},
      },
    ],
    [
      "Object RouteGroup requests-per-second -> skipper with backend label",
      object(
        "requests-per-second",
        "RouteGroup",
        "web",
        { backend: "b1" },
      ),
      {},
      { collector: "skipper", error: null, config: { backend: "b1" } },
    ],
    [
      "Object Ingress legacy requests-per-second,backend -> skipper",
      object(
        "requests-per-second,b1",
        "Ingress",
      ),
      {},
      { collector: "skipper", error: null, config: {} },
    ],
    ["Object ScalingSchedule", object("sale", "ScalingSchedule", "sale"), {}, {
      collector: "scaling-schedule",
      error: null,
      config: {},
    }],
    ["Object ClusterScalingSchedule", object("sale", "ClusterScalingSchedule", "sale"), {}, {
      collector: "cluster-scaling-schedule",
      error: null,
      config: {},
    }],
    ["Object prometheus annotation on a Deployment", object("events", "Deployment"), {
      "metric-config.object.events.prometheus/query": "sum(events)",
    }, { collector: "prometheus", error: null, config: { query: "sum(events)" } }],
    [
      "Object prometheus annotation on an Ingress for another metric (original: unreadable on kinds with their own collector)",
      object("latency", "Ingress"),
      { "metric-config.object.latency.prometheus/query": "max(latency)" },
      { collector: "prometheus", error: null, config: { query: "max(latency)" } },
    ],
    [
      "Object prometheus annotation on a ScalingSchedule is ignored with a warning",
      object(
        "sale",
        "ScalingSchedule",
        "sale",
      ),
      { "metric-config.object.sale.prometheus/interval": "10s" },
      {
        collector: "scaling-schedule",
        error: null,
        config: {},
        warnings: [
          "annotations metric-config.object.sale.prometheus/... name collector `prometheus` but ScalingSchedule metric `sale` is collected by `scaling-schedule`; their config is still applied",
        ],
      },
    ],
    ["Object on an Ingress, other metric, no annotation", object("latency", "Ingress"), {}, {
      collector: null,
      error:
        "Object metric `latency` on Ingress/web has no collector (skipper serves only requests-per-second of Ingress objects); add annotation metric-config.object.latency.prometheus/query",
      config: {},
    }],
    ["Object without annotation", object("events", "Service", "api"), {}, {
      collector: null,
      error:
        "Object metric `events` on Service/api has no collector; add annotation metric-config.object.events.prometheus/query",
      config: {},
    }],
    ["Object with a Pods-only collector", object("events", "Service", "api"), {
      "metric-config.object.events.json-path/json-key": "$.v",
    }, {
      collector: null,
      error:
        "Object metric `events` on Service/api names collector `json-path`, but it cannot collect Object metrics; use annotation metric-config.object.events.prometheus/query",
      config: { "json-key": "$.v" },
    }],
    ["Object with skipper named on another kind", object("events", "Service", "api"), {
      "metric-config.object.events.skipper/interval": "10s",
    }, {
      collector: null,
      error:
        "Object metric `events` on Service/api names collector `skipper`, but skipper serves only requests-per-second of Ingress and RouteGroup objects; use annotation metric-config.object.events.prometheus/query",
      config: {},
    }],
    ["Object prometheus without query", object("events", "Deployment"), {
      "metric-config.object.events.prometheus/per-replica": "true",
    }, {
      collector: "prometheus",
      error:
        "Object metric `events` of HPA shop/web needs matchLabels.query or annotation metric-config.object.events.prometheus/query",
      config: {},
    }],
    // Pods
    ["Pods json-path", pods("rps"), JSON_PATH_PODS, {
      collector: "json-path",
      error: null,
      config: { "json-key": "$.rps", port: "9090" },
    }],
    ["Pods without annotation", pods("rps"), {}, {
      collector: null,
      error:
        "Pods metric `rps` needs annotation metric-config.pods.rps.json-path/json-key (and metric-config.pods.rps.json-path/port)",
      config: {},
    }],
    ["Pods with another collector", pods("rps"), {
      "metric-config.pods.rps.prometheus/query": "up",
    }, {
      collector: null,
      error:
        "Pods metric `rps` names collector `prometheus`, but only json-path collects Pods metrics; use annotations metric-config.pods.rps.json-path/json-key and .../port",
      config: { query: "up" },
    }],
  ];
  for (const [name, metric, annotations, want] of cases) {
    it(name, () => assert.deepEqual(outcome(one(metric, annotations)), want));
  }
});

describe("planHpa config checks", () => {
  const cases: Array<[string, Obj, Record<string, string>, string]> = [
    ["Pods json-path without port", pods("rps"), {
      "metric-config.pods.rps.json-path/json-key": "$.rps",
    }, "Pods metric `rps` of HPA shop/web needs annotation metric-config.pods.rps.json-path/port"],
    [
      "Pods json-path with a bad port",
      pods("rps"),
      {
        ...JSON_PATH_PODS,
        "metric-config.pods.rps.json-path/port": "http",
      },
      'invalid port "http" for Pods metric `rps` of HPA shop/web (annotation metric-config.pods.rps.json-path/port): want a number from 1 to 65535',
    ],
    [
      "json-key and json-eval together",
      pods("rps"),
      {
        ...JSON_PATH_PODS,
        "metric-config.pods.rps.json-path/json-eval": "$.a",
      },
      "Pods metric `rps` of HPA shop/web sets both json-key and json-eval; keep one (they are mutually exclusive)",
    ],
    [
      "neither json-key nor json-eval",
      pods("rps"),
      {
        "metric-config.pods.rps.json-path/port": "80",
      },
      "Pods metric `rps` of HPA shop/web needs annotation metric-config.pods.rps.json-path/json-key (or json-eval)",
    ],
    [
      "bad aggregator",
      pods("rps"),
      {
        ...JSON_PATH_PODS,
        "metric-config.pods.rps.json-path/aggregator": "median",
      },
      'invalid aggregator "median" for Pods metric `rps` of HPA shop/web (annotation metric-config.pods.rps.json-path/aggregator): want one of avg, min, max, sum, count, last, diff',
    ],
    [
      "bad scheme",
      pods("rps"),
      {
        ...JSON_PATH_PODS,
        "metric-config.pods.rps.json-path/scheme": "ftp",
      },
      'invalid scheme "ftp" for Pods metric `rps` of HPA shop/web (annotation metric-config.pods.rps.json-path/scheme): want http or https',
    ],
    [
      "bad request-timeout",
      pods("rps"),
      {
        ...JSON_PATH_PODS,
        "metric-config.pods.rps.json-path/request-timeout": "2",
      },
      'invalid request-timeout "2" for Pods metric `rps` of HPA shop/web (annotation metric-config.pods.rps.json-path/request-timeout): want a Go duration like 2s or 500ms',
    ],
    [
      "External json-path without endpoint",
      external("q", { type: "json-path" }),
      {
        "metric-config.external.q.json-path/json-key": "$.v",
      },
      "External metric `q` of HPA shop/web needs matchLabels.endpoint or annotation metric-config.external.q.json-path/endpoint",
    ],
    [
      "External json-path with a non-http endpoint",
      external("q", { type: "json-path" }),
      {
        "metric-config.external.q.json-path/json-key": "$.v",
        "metric-config.external.q.json-path/endpoint": "svc:8080/stats",
      },
      'invalid endpoint "svc:8080/stats" for External metric `q` of HPA shop/web (annotation metric-config.external.q.json-path/endpoint): want an http:// or https:// URL',
    ],
    [
      "External prometheus without query",
      external("q", { type: "prometheus" }),
      {},
      "External metric `q` of HPA shop/web needs matchLabels.query or annotation metric-config.external.q.prometheus/query",
    ],
    [
      "External influxdb without query",
      external("q", { type: "influxdb" }),
      {},
      "External metric `q` of HPA shop/web needs matchLabels.query or annotation metric-config.external.q.influxdb/query",
    ],
    [
      "sqs without region",
      external("q", { type: "sqs-queue-length", "queue-name": "a" }),
      {},
      "External metric `q` of HPA shop/web needs matchLabels.region or annotation metric-config.external.q.sqs-queue-length/region",
    ],
    [
      "zmon without check-id",
      external("q", { type: "zmon" }),
      {},
      "External metric `q` of HPA shop/web needs matchLabels.check-id or annotation metric-config.external.q.zmon/check-id",
    ],
    [
      "nakadi with a bad metric-type and no subscription",
      external("q", {
        type: "nakadi",
        "metric-type": "lag",
        "owning-application": "app",
      }),
      {},
      'invalid metric-type "lag" for External metric `q` of HPA shop/web (matchLabels.metric-type): want consumer-lag-seconds or unconsumed-events; External metric `q` of HPA shop/web needs matchLabels.subscription-id or all of owning-application, event-types, consumer-group',
    ],
    [
      "requests-per-second without hostnames",
      external("q", { type: "requests-per-second" }),
      {},
      "External metric `q` of HPA shop/web needs matchLabels.hostnames or annotation metric-config.external.q.requests-per-second/hostnames",
    ],
    [
      "requests-per-second with a bad hostname and weight",
      external("q", {
        type: "requests-per-second",
      }),
      {
        "metric-config.external.q.requests-per-second/hostnames": "a.org,b_c.org",
        "metric-config.external.q.requests-per-second/weight": "half",
      },
      'invalid hostnames "a.org,b_c.org" for External metric `q` of HPA shop/web (annotation metric-config.external.q.requests-per-second/hostnames): "b_c.org" is not a DNS name; invalid weight "half" for External metric `q` of HPA shop/web (annotation metric-config.external.q.requests-per-second/weight): want a percentage from 0',
    ],
  ];
  for (const [name, metric, annotations, error] of cases) {
    it(`reports ${name}`, () => assert.equal(one(metric, annotations).error, error));
  }
});

describe("planHpa enabled collectors", () => {
  const cases: Array<
    [string, Obj, Record<string, string>, string[], string | null, string | null]
  > = [
    [
      "influxdb off",
      external("q", { type: "influxdb" }),
      {
        "metric-config.external.q.influxdb/query": "from()",
      },
      ["json-path"],
      "influxdb",
      "collector `influxdb` is not enabled (start with --influxdb-address)",
    ],
    [
      "influxdb on",
      external("q", { type: "influxdb" }),
      {
        "metric-config.external.q.influxdb/query": "from()",
      },
      ["influxdb"],
      "influxdb",
      null,
    ],
    [
      "skipper off for a RouteGroup",
      object("requests-per-second", "RouteGroup"),
      {},
      [
        "prometheus",
      ],
      "skipper",
      "collector `skipper` is not enabled (start with --prometheus-server and --skipper-routegroup-metrics)",
    ],
    [
      "skipper off, prometheus annotation takes over as in the original",
      object(
        "requests-per-second",
        "Ingress",
      ),
      { "metric-config.object.requests-per-second.prometheus/query": "sum(rps)" },
      [
        "prometheus",
      ],
      "prometheus",
      null,
    ],
    [
      "scaling schedules off",
      object("sale", "ClusterScalingSchedule"),
      {},
      [],
      "cluster-scaling-schedule",
      "collector `cluster-scaling-schedule` is not enabled (start with --scaling-schedule)",
    ],
    [
      "sqs off",
      external("q", { type: "sqs-queue-length", "queue-name": "a", region: "r" }),
      {},
      [],
      "sqs-queue-length",
      "collector `sqs-queue-length` is not enabled (start with --aws-external-metrics)",
    ],
  ];
  for (const [name, metric, annotations, enabled, collector, error] of cases) {
    it(`reports ${name}`, () => {
      const p = one(metric, annotations, { enabledCollectors: new Set(enabled) });
      assert.equal(p.collector, collector);
      assert.equal(p.error, error);
    });
  }
});

describe("planHpa config merging", () => {
  it("applies External matchLabels first and annotations over them", () => {
    const p = one(external("q", { type: "prometheus", query: "from-label", env: "prod" }), {
      "metric-config.external.q.prometheus/query": "from-annotation",
    });
    assert.deepEqual(p.config, { env: "prod", query: "from-annotation", type: "prometheus" });
  });

  it("applies Object matchLabels first and annotations over them", () => {
    const p = one(object("events", "Deployment", "web", { query: "label", shard: "1" }), {
      "metric-config.object.events.prometheus/query": "annotation",
    });
    assert.deepEqual(p.config, { query: "annotation", shard: "1" });
  });

  it("does not copy Pods selectors into config", () => {
    const p = one(pods("rps", { port: "1", app: "web" }), JSON_PATH_PODS);
    assert.deepEqual(p.config, { "json-key": "$.rps", port: "9090" });
    assert.deepEqual(p.metricSelector, { matchLabels: { port: "1", app: "web" } });
  });

  it("keeps reserved keys out of config, from labels too", () => {
    const p = one(external("q", { type: "prometheus", interval: "5s", "per-replica": "true" }), {
      "metric-config.external.q.prometheus/query": "up",
      "metric-config.external.q.prometheus/interval": "20s",
    });
    assert.deepEqual(p.config, { query: "up", type: "prometheus" });
    assert.equal(p.intervalSeconds, 20);
    assert.equal(p.perReplica, false);
  });
});

describe("planHpa plan fields", () => {
  it("builds the full plan of each metric, skipping Resource and ContainerResource", () => {
    const plans = planHpa(hpa([
      {
        type: "Resource",
        resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 50 } },
      },
      {
        type: "ContainerResource",
        containerResource: {
          name: "cpu",
          container: "app",
          target: { type: "Utilization", averageUtilization: 50 },
        },
      },
      pods("rps"),
      object("requests-per-second", "Ingress", "front"),
    ], {
      ...JSON_PATH_PODS,
      "metric-config.pods.rps.json-path/min-pod-ready-age": "30s",
      "metric-config.pods.rps.json-path/interval": "15s",
    }));
    assert.deepEqual(plans, [
      {
        hpa: { namespace: "shop", name: "web" },
        index: 2,
        metricType: "Pods",
        metricName: "rps",
        metricSelector: null,
        target: { type: "AverageValue", averageValue: "10" },
        describedObject: null,
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
        collector: "json-path",
        intervalSeconds: 15,
        perReplica: false,
        minPodReadyAgeSeconds: 30,
        config: { "json-key": "$.rps", port: "9090" },
        error: null,
      },
      {
        hpa: { namespace: "shop", name: "web" },
        index: 3,
        metricType: "Object",
        metricName: "requests-per-second",
        metricSelector: null,
        target: { type: "AverageValue", averageValue: "10" },
        describedObject: { apiVersion: "v1", kind: "Ingress", name: "front" },
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
        collector: "skipper",
        intervalSeconds: 60,
        perReplica: false,
        minPodReadyAgeSeconds: 0,
        config: {},
        error: null,
      },
    ]);
  });

  it("uses defaultIntervalSeconds, and an interval of 0 means the default", () => {
    const q = { "metric-config.external.q.prometheus/query": "up" };
    const m = external("q", { type: "prometheus" });
    assert.equal(one(m, q).intervalSeconds, 60);
    assert.equal(one(m, q, { defaultIntervalSeconds: 30 }).intervalSeconds, 30);
    assert.equal(
      one(m, { ...q, "metric-config.external.q.prometheus/interval": "0s" }, {
        defaultIntervalSeconds: 30,
      }).intervalSeconds,
      30,
    );
    assert.equal(
      one(m, { ...q, "metric-config.external.q.prometheus/interval": "1.5s" }).intervalSeconds,
      1.5,
    );
  });

  it("defaults the namespace to default", () => {
    const obj = hpa([external("q", { type: "zmon", "check-id": "1" })]);
    delete (obj.metadata as Obj).namespace;
    assert.deepEqual(planHpa(obj)[0].hpa, { namespace: "default", name: "web" });
  });

  it("throws InvalidHpaError for an invalid HPA", () => {
    assert.throws(() => planHpa({ metadata: { name: "x" }, spec: {} }), InvalidHpaError);
  });
});

describe("planHpa fixes the original's bugs", () => {
  it('per-replica "false" means false (original: true whatever the value)', () => {
    const p = one(object("events", "Deployment"), {
      "metric-config.object.events.prometheus/query": "up",
      "metric-config.object.events.prometheus/per-replica": "false",
    });
    assert.equal(p.perReplica, false);
    assert.equal(p.error, null);
  });

  it("a bad interval fails that one metric, not the whole HPA (original: no metric of the HPA was collected)", () => {
    const plans = planHpa(hpa([
      external("a", { type: "prometheus" }),
      external("b", { type: "prometheus" }),
    ], {
      "metric-config.external.a.prometheus/query": "up",
      "metric-config.external.a.prometheus/interval": "often",
      "metric-config.external.b.prometheus/query": "up",
    }));
    assert.deepEqual(plans.map((p) => [p.metricName, p.intervalSeconds, p.error]), [
      [
        "a",
        60,
        'invalid interval "often" for External metric a (annotation metric-config.external.a.prometheus/interval): want a Go duration like 30s, 1m30s, 2h',
      ],
      ["b", 60, null],
    ]);
  });

  it("two collectors for one metric fail that metric whatever the map order (original: map order decided)", () => {
    const a = {
      "metric-config.object.events.prometheus/query": "up",
      "metric-config.object.events.influxdb/query": "from()",
    };
    const b = {
      "metric-config.object.events.influxdb/query": "from()",
      "metric-config.object.events.prometheus/query": "up",
    };
    const want = {
      collector: null,
      error:
        "annotations name different collectors for Object metric events: influxdb, prometheus; use one collector in every metric-config.object.events.<collector>/... key",
      config: { query: "up" },
    };
    assert.deepEqual(outcome(one(object("events", "Deployment"), a)), want);
    assert.deepEqual(outcome(one(object("events", "Deployment"), b)), want);
  });

  it("malformed metric-config. keys become warnings on every plan of the HPA (original: // TODO: error?)", () => {
    const plans = planHpa(hpa([
      external("q", { type: "zmon", "check-id": "1" }),
      external("p", { type: "zmon", "check-id": "2" }),
    ], { "metric-config.external.q.zmon.x/key": "v" }));
    const want = [
      'ignored annotation metric-config.external.q.zmon.x/key: want 4 dot-separated parts before "/" (metric-config.<type>.<metric>.<collector>), got 5 (a metric name with dots cannot be configured)',
    ];
    assert.deepEqual(plans.map((p) => p.warnings), [want, want]);
    assert.deepEqual(plans.map((p) => p.error), [null, null]);
  });

  it("warns about annotations that configure no metric of the HPA (original: TODO validate metric names)", () => {
    const p = one(external("q", { type: "zmon", "check-id": "1" }), {
      "metric-config.pods.q.json-path/port": "80",
    });
    assert.deepEqual(p.warnings, [
      "annotations metric-config.pods.q.json-path/... configure nothing: spec.metrics has no Pods metric `q`",
    ]);
  });

  it("reads an Object prometheus query on any kind (original: not on kinds with a collector of their own)", () => {
    for (const kind of ["Ingress", "RouteGroup", "Deployment", "Service", "Pod"]) {
      const p = one(object("queue", kind), { "metric-config.object.queue.prometheus/query": "up" });
      assert.deepEqual([p.collector, p.error], ["prometheus", null], kind);
    }
  });
});

describe("planKey and queryKey", () => {
  const annotations = { "metric-config.external.q.prometheus/query": "sum(up)" };

  it("planKey names the HPA, the position and the metric", () => {
    const p = planHpa(hpa([pods("x"), external("q", { type: "prometheus" })], annotations))[1];
    assert.equal(planKey(p), "shop/web/1/External/q");
  });

  it("queryKey is equal for identical collections in one namespace, whatever the interval", () => {
    const a = planHpa(hpa([external("q", { type: "prometheus" })], annotations, { name: "a" }))[0];
    const b = planHpa(
      hpa([external("q", { type: "prometheus" })], {
        ...annotations,
        "metric-config.external.q.prometheus/interval": "10s",
      }, { name: "b", target: "other" }),
    )[0];
    assert.equal(queryKey(a), queryKey(b));
    assert.notEqual(planKey(a), planKey(b));
  });

  it("queryKey differs by namespace, config, described object and Pods scale target", () => {
    const base = planHpa(hpa([external("q", { type: "prometheus" })], annotations))[0];
    const otherNs =
      planHpa(hpa([external("q", { type: "prometheus" })], annotations, { namespace: "x" }))[0];
    const otherQuery = planHpa(hpa([external("q", { type: "prometheus" })], {
      "metric-config.external.q.prometheus/query": "sum(down)",
    }))[0];
    assert.notEqual(queryKey(base), queryKey(otherNs));
    assert.notEqual(queryKey(base), queryKey(otherQuery));

    const ingA = planHpa(hpa([object("requests-per-second", "Ingress", "a")]))[0];
    const ingB = planHpa(hpa([object("requests-per-second", "Ingress", "b")]))[0];
    assert.notEqual(queryKey(ingA), queryKey(ingB));

    const podsA = planHpa(hpa([pods("rps")], JSON_PATH_PODS, { target: "a" }))[0];
    const podsA2 = planHpa(hpa([pods("rps")], JSON_PATH_PODS, { target: "a", name: "other" }))[0];
    const podsB = planHpa(hpa([pods("rps")], JSON_PATH_PODS, { target: "b" }))[0];
    assert.equal(queryKey(podsA), queryKey(podsA2));
    assert.notEqual(queryKey(podsA), queryKey(podsB));
  });

  it("queryKey does not depend on config key order", () => {
    const a = planHpa(hpa([external("q", { type: "zmon", "check-id": "1", key: "k" })]))[0];
    const b = planHpa(hpa([external("q", { key: "k", "check-id": "1", type: "zmon" })]))[0];
    assert.equal(queryKey(a), queryKey(b));
  });
});

describe("planHpa shared selectors", () => {
  it("freezes the plan's metric selector, which the engine and the store share", () => {
    const metric = {
      type: "External",
      external: {
        metric: {
          name: "queue-length",
          selector: {
            matchLabels: { type: "json-path", queue: "orders" },
            matchExpressions: [{ key: "region", operator: "In", values: ["eu"] }],
          },
        },
        target: { type: "AverageValue", averageValue: "10" },
      },
    };
    const [plan] = planHpa(hpa([metric], {
      "metric-config.external.queue-length.json-path/endpoint": "http://queue/depth",
      "metric-config.external.queue-length.json-path/json-key": "$.depth",
    }));
    const selector = plan.metricSelector!;
    assert.deepEqual(selector, {
      matchLabels: { type: "json-path", queue: "orders" },
      matchExpressions: [{ key: "region", operator: "In", values: ["eu"] }],
    });
    assert.ok(Object.isFrozen(selector));
    assert.ok(Object.isFrozen(selector.matchLabels));
    assert.ok(Object.isFrozen(selector.matchExpressions));
    assert.ok(Object.isFrozen(selector.matchExpressions![0]));
    assert.ok(Object.isFrozen(selector.matchExpressions![0].values));
    // a caller cannot change what every holder of the plan serves
    assert.throws(() => {
      selector.matchLabels!.queue = "payments";
    }, TypeError);
    assert.throws(() => selector.matchExpressions![0].values!.push("us"), TypeError);
    assert.equal(selector.matchLabels!.queue, "orders");
    // the HPA's own object is not frozen, nor shared
    const source = metric.external.metric.selector.matchLabels as Record<string, string>;
    assert.ok(!Object.isFrozen(source));
    assert.notEqual(selector.matchLabels, source);
  });
});
