/**
 * The config schemas of the Prometheus family (src/core/kube_metrics_adapter/configs/prometheus.ts, skipper.ts,
 * requests_per_second.ts) as `plan` and `serve` meet them: each invalid config has one
 * message, the same from `planHpa` and from the collector's factory (created with typed
 * options, every backend set up), and a config one accepts the other accepts too.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createExternalRpsFactory } from "../../src/collectors/external_rps.ts";
import {
  createPrometheusFactory,
  type PrometheusOptions,
} from "../../src/collectors/prometheus.ts";
import { createSkipperFactory } from "../../src/collectors/skipper.ts";
import type { CollectorFactory } from "../../src/collectors/types.ts";
import { planHpa } from "../../src/core/kube_metrics_adapter/plan.ts";
import type { MetricPlan, MetricType } from "../../src/core/types.ts";

/** The factories as serve makes them, every backend set up; link-local targets as given. */
function factories(allowLinkLocalTargets: boolean): Readonly<Record<string, CollectorFactory>> {
  const prometheus: PrometheusOptions = {
    server: { url: "http://prometheus.test:9090" },
    additionalServers: { other: { url: "http://other.test:9090" } },
    allowLinkLocalTargets,
  };
  return {
    prometheus: createPrometheusFactory(prometheus),
    skipper: createSkipperFactory({ ingressMetrics: true, routeGroupMetrics: true, prometheus }),
    "requests-per-second": createExternalRpsFactory({ enabled: true, prometheus }),
  };
}

/** One metric of a case: External `q` (with a `type` label) or Object `name` on `kind`. */
interface Metric {
  metricType: MetricType;
  collector: string;
  name?: string;
  kind?: string;
}

const EXTERNAL_PROMETHEUS: Metric = { metricType: "External", collector: "prometheus" };
const OBJECT_PROMETHEUS: Metric = {
  metricType: "Object",
  collector: "prometheus",
  name: "events",
  kind: "Service",
};
const RPS: Metric = { metricType: "External", collector: "requests-per-second" };
const SKIPPER: Metric = {
  metricType: "Object",
  collector: "skipper",
  name: "requests-per-second",
  kind: "Ingress",
};

/** The plan of one metric of HPA shop/web, its config set by annotations. */
function plan(
  metric: Metric,
  config: Record<string, string>,
  allowLinkLocalTargets: boolean,
): MetricPlan {
  const name = metric.name ?? "q";
  const segment = metric.metricType.toLowerCase();
  const annotations: Record<string, string> = {};
  for (const [k, v] of Object.entries(config)) {
    annotations[`metric-config.${segment}.${name}.${metric.collector}/${k}`] = v;
  }
  const target = { type: "AverageValue", averageValue: "10" };
  const entry = metric.metricType === "External"
    ? {
      type: "External",
      external: {
        metric: { name, selector: { matchLabels: { type: metric.collector } } },
        target,
      },
    }
    : {
      type: "Object",
      object: {
        describedObject: { apiVersion: "v1", kind: metric.kind, name: "front" },
        metric: { name },
        target,
      },
    };
  const [p] = planHpa({
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name: "web", namespace: "shop", annotations },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
      minReplicas: 1,
      maxReplicas: 10,
      metrics: [entry],
    },
  }, { allowLinkLocalTargets });
  assert.equal(p.collector, metric.collector);
  return p;
}

/** What the factory says about a plan's config: its error message, or null. */
function factoryError(p: MetricPlan, allowLinkLocalTargets: boolean): string | null {
  try {
    factories(allowLinkLocalTargets)[p.collector!].create({
      plan: { ...p, error: null },
    });
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

const EXTERNAL = "External metric `q` of HPA shop/web";
const OBJECT = "Object metric `events` of HPA shop/web";
const at = (m: Metric, key: string): string =>
  `annotation metric-config.${m.metricType.toLowerCase()}.${m.name ?? "q"}.${m.collector}/${key}`;
const what = (m: Metric): string => (m.metricType === "External" ? EXTERNAL : OBJECT);
const needs = (m: Metric, key: string, why = ""): string =>
  `${what(m)} needs matchLabels.${key} or ${at(m, key)}${why}`;
const invalid = (m: Metric, key: string, value: string, why: string): string =>
  `invalid ${key} "${value}" for ${what(m)} (${at(m, key)}): ${why}`;

const LINK_LOCAL = "a link-local address (allow with --allow-link-local-targets)";
const NOT_HTTP = "want an http:// or https:// URL";
const NAMED = " (the query named by query-name)";
const DNS = (h: string): string => `"${h}" is not a DNS name`;
const PERCENT = "want a percentage from 0";
const NAMESPACE =
  "want a Kubernetes namespace name (at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit)";
const BOOL = 'want "true" or "false"';
const SERIES = 'want "sum", "error" or "first"';
const BEARER_REFUSED =
  "no longer read: it was filled by the Knative reconciler, which now resolves a TriggerAuthentication as KEDA does; set the token with --prometheus-server-token-file (the operator's server) or move the metric to a KEDA ScaledObject with a TriggerAuthentication";

/** [name, metric, config (annotations), the message of plan and factory]. */
const INVALID: [string, Metric, Record<string, string>, string][] = [
  // prometheus, External
  [
    "External prometheus without a query",
    EXTERNAL_PROMETHEUS,
    {},
    needs(EXTERNAL_PROMETHEUS, "query"),
  ],
  [
    "External prometheus with an empty query",
    EXTERNAL_PROMETHEUS,
    { query: "" },
    needs(EXTERNAL_PROMETHEUS, "query"),
  ],
  [
    "a query-name naming no key",
    EXTERNAL_PROMETHEUS,
    { "query-name": "q1" },
    needs(EXTERNAL_PROMETHEUS, "q1", NAMED),
  ],
  [
    "a query-name naming an empty key",
    EXTERNAL_PROMETHEUS,
    { "query-name": "q1", q1: "" },
    needs(EXTERNAL_PROMETHEUS, "q1", NAMED),
  ],
  [
    "a link-local prometheus-server",
    EXTERNAL_PROMETHEUS,
    { query: "up", "prometheus-server": "http://169.254.169.254" },
    invalid(EXTERNAL_PROMETHEUS, "prometheus-server", "http://169.254.169.254", LINK_LOCAL),
  ],
  [
    "a link-local IPv6 prometheus-server",
    EXTERNAL_PROMETHEUS,
    { query: "up", "prometheus-server": "http://[fe80::1]:9090" },
    invalid(EXTERNAL_PROMETHEUS, "prometheus-server", "http://[fe80::1]:9090", LINK_LOCAL),
  ],
  [
    "a file:// prometheus-server",
    EXTERNAL_PROMETHEUS,
    { query: "up", "prometheus-server": "file:///etc/passwd" },
    invalid(EXTERNAL_PROMETHEUS, "prometheus-server", "file:///etc/passwd", NOT_HTTP),
  ],
  [
    "a prometheus-server without a scheme",
    EXTERNAL_PROMETHEUS,
    { query: "up", "prometheus-server": "prometheus:9090" },
    invalid(EXTERNAL_PROMETHEUS, "prometheus-server", "prometheus:9090", NOT_HTTP),
  ],
  // prometheus, KEDA's semantics
  [
    "a namespace with upper case",
    EXTERNAL_PROMETHEUS,
    { query: "up", namespace: "Team-A" },
    invalid(EXTERNAL_PROMETHEUS, "namespace", "Team-A", NAMESPACE),
  ],
  [
    "a namespace with an underscore",
    EXTERNAL_PROMETHEUS,
    { query: "up", namespace: "team_a" },
    invalid(EXTERNAL_PROMETHEUS, "namespace", "team_a", NAMESPACE),
  ],
  [
    "a namespace starting with '-'",
    EXTERNAL_PROMETHEUS,
    { query: "up", namespace: "-team" },
    invalid(EXTERNAL_PROMETHEUS, "namespace", "-team", NAMESPACE),
  ],
  [
    "a namespace with a dot (a DNS subdomain, not a label)",
    EXTERNAL_PROMETHEUS,
    { query: "up", namespace: "team.a" },
    invalid(EXTERNAL_PROMETHEUS, "namespace", "team.a", NAMESPACE),
  ],
  [
    "a namespace of 64 characters",
    EXTERNAL_PROMETHEUS,
    { query: "up", namespace: "a".repeat(64) },
    invalid(EXTERNAL_PROMETHEUS, "namespace", "a".repeat(64), NAMESPACE),
  ],
  [
    "a namespace with a space",
    EXTERNAL_PROMETHEUS,
    { query: "up", namespace: " team" },
    invalid(EXTERNAL_PROMETHEUS, "namespace", " team", NAMESPACE),
  ],
  [
    "ignore-null-values yes",
    EXTERNAL_PROMETHEUS,
    { query: "up", "ignore-null-values": "yes" },
    invalid(EXTERNAL_PROMETHEUS, "ignore-null-values", "yes", BOOL),
  ],
  [
    "ignore-null-values True (Go's ParseBool would take it; we take true and false only)",
    EXTERNAL_PROMETHEUS,
    { query: "up", "ignore-null-values": "True" },
    invalid(EXTERNAL_PROMETHEUS, "ignore-null-values", "True", BOOL),
  ],
  [
    "multiple-series max",
    EXTERNAL_PROMETHEUS,
    { query: "up", "multiple-series": "max" },
    invalid(EXTERNAL_PROMETHEUS, "multiple-series", "max", SERIES),
  ],
  [
    "multiple-series Sum",
    EXTERNAL_PROMETHEUS,
    { query: "up", "multiple-series": "Sum" },
    invalid(EXTERNAL_PROMETHEUS, "multiple-series", "Sum", SERIES),
  ],
  [
    "three bad KEDA keys, each said",
    EXTERNAL_PROMETHEUS,
    { query: "up", namespace: "A", "ignore-null-values": "1", "multiple-series": "last" },
    [
      invalid(EXTERNAL_PROMETHEUS, "namespace", "A", NAMESPACE),
      invalid(EXTERNAL_PROMETHEUS, "ignore-null-values", "1", BOOL),
      invalid(EXTERNAL_PROMETHEUS, "multiple-series", "last", SERIES),
    ].join("; "),
  ],
  [
    "Object prometheus with a bad multiple-series",
    OBJECT_PROMETHEUS,
    { query: "up", "multiple-series": "all" },
    invalid(OBJECT_PROMETHEUS, "multiple-series", "all", SERIES),
  ],
  [
    "Object prometheus with a bad ignore-null-values",
    OBJECT_PROMETHEUS,
    { query: "up", "ignore-null-values": "no" },
    invalid(OBJECT_PROMETHEUS, "ignore-null-values", "no", BOOL),
  ],
  [
    "Object prometheus with a bad namespace",
    OBJECT_PROMETHEUS,
    { query: "up", namespace: "NS" },
    invalid(OBJECT_PROMETHEUS, "namespace", "NS", NAMESPACE),
  ],
  [
    "bearer-token-from with the server the metric names (no longer read)",
    EXTERNAL_PROMETHEUS,
    {
      query: "up",
      "prometheus-server": "http://p.test",
      "bearer-token-from": "TriggerAuthentication/prom-auth",
    },
    invalid(
      EXTERNAL_PROMETHEUS,
      "bearer-token-from",
      "TriggerAuthentication/prom-auth",
      BEARER_REFUSED,
    ),
  ],
  [
    "bearer-token-from whatever its value (no longer read)",
    EXTERNAL_PROMETHEUS,
    { query: "up", "bearer-token-from": "Secret/x" },
    invalid(EXTERNAL_PROMETHEUS, "bearer-token-from", "Secret/x", BEARER_REFUSED),
  ],
  [
    "Object prometheus with a ClusterTriggerAuthentication (no longer read)",
    OBJECT_PROMETHEUS,
    { query: "up", "bearer-token-from": "ClusterTriggerAuthentication/cluster-auth" },
    invalid(
      OBJECT_PROMETHEUS,
      "bearer-token-from",
      "ClusterTriggerAuthentication/cluster-auth",
      BEARER_REFUSED,
    ),
  ],
  // prometheus, Object
  ["Object prometheus without a query (the annotation of its server chose it)", OBJECT_PROMETHEUS, {
    "prometheus-server-alias": "other",
  }, needs(OBJECT_PROMETHEUS, "query")],
  [
    "Object prometheus with only a query-name (External only)",
    OBJECT_PROMETHEUS,
    { "query-name": "q1", q1: "up" },
    needs(OBJECT_PROMETHEUS, "query"),
  ],
  [
    "Object prometheus with a link-local prometheus-server",
    OBJECT_PROMETHEUS,
    { query: "up", "prometheus-server": "http://169.254.169.254/" },
    invalid(OBJECT_PROMETHEUS, "prometheus-server", "http://169.254.169.254/", LINK_LOCAL),
  ],
  // requests-per-second
  ["requests-per-second without hostnames", RPS, {}, needs(RPS, "hostnames")],
  ["requests-per-second with empty hostnames", RPS, { hostnames: "" }, needs(RPS, "hostnames")],
  [
    "a hostname that is not a DNS name",
    RPS,
    { hostnames: "a.org,b_c.org" },
    invalid(RPS, "hostnames", "a.org,b_c.org", DNS("b_c.org")),
  ],
  [
    "an empty hostname in the list",
    RPS,
    { hostnames: "a.org,,b.org" },
    invalid(RPS, "hostnames", "a.org,,b.org", DNS("")),
  ],
  [
    "a negative weight",
    RPS,
    { hostnames: "a.org", weight: "-5" },
    invalid(RPS, "weight", "-5", PERCENT),
  ],
  [
    "a bad hostname and a bad weight, each said",
    RPS,
    { hostnames: "a.org,b_c.org", weight: "half" },
    `${invalid(RPS, "hostnames", "a.org,b_c.org", DNS("b_c.org"))}; ${
      invalid(RPS, "weight", "half", PERCENT)
    }`,
  ],
];

/** [name, metric, config (annotations), link-local targets allowed]: both accept. */
const VALID: [string, Metric, Record<string, string>, boolean][] = [
  ["External prometheus", EXTERNAL_PROMETHEUS, { query: "sum(up)" }, false],
  ["the legacy query-name form", EXTERNAL_PROMETHEUS, { "query-name": "q1", q1: "up" }, false],
  [
    "a prometheus-server URL and an alias",
    EXTERNAL_PROMETHEUS,
    { query: "up", "prometheus-server": "http://p.test", "prometheus-server-alias": "other" },
    false,
  ],
  ["an empty prometheus-server (not set)", EXTERNAL_PROMETHEUS, {
    query: "up",
    "prometheus-server": "",
  }, false],
  [
    "a link-local prometheus-server when allowed",
    OBJECT_PROMETHEUS,
    { query: "up", "prometheus-server": "http://169.254.169.254" },
    true,
  ],
  [
    "KEDA's semantics (namespace, ignore-null-values, multiple-series)",
    EXTERNAL_PROMETHEUS,
    { query: "up", namespace: "team-a", "ignore-null-values": "true", "multiple-series": "error" },
    false,
  ],
  [
    "a 63-character namespace of digits and '-', ignore-null-values false, first",
    OBJECT_PROMETHEUS,
    {
      query: "up",
      namespace: `0${"-".repeat(61)}9`,
      "ignore-null-values": "false",
      "multiple-series": "first",
    },
    false,
  ],
  [
    "empty KEDA keys (not set)",
    EXTERNAL_PROMETHEUS,
    { query: "up", namespace: "", "ignore-null-values": "", "multiple-series": "" },
    false,
  ],
  ["multiple-series sum", EXTERNAL_PROMETHEUS, { query: "up", "multiple-series": "sum" }, false],
  ["an empty bearer-token-from (not set)", EXTERNAL_PROMETHEUS, {
    query: "up",
    "bearer-token-from": "",
  }, false],
  ["requests-per-second", RPS, { hostnames: "a.org,www.a.org", weight: "12.5" }, false],
  ["skipper without a backend", SKIPPER, {}, false],
  ["skipper with a backend", SKIPPER, { backend: "b1" }, false],
];

describe("prometheus, skipper and requests-per-second configs: plan and factory agree", () => {
  for (const [name, metric, config, want] of INVALID) {
    it(`refuses ${name} with one message`, () => {
      const p = plan(metric, config, false);
      assert.equal(p.error, want, "planHpa");
      assert.equal(factoryError(p, false), want, "factory");
    });
  }
  for (const [name, metric, config, allowLinkLocal] of VALID) {
    it(`accepts ${name} in both`, () => {
      const p = plan(metric, config, allowLinkLocal);
      assert.equal(p.error, null, "planHpa");
      assert.equal(factoryError(p, allowLinkLocal), null, "factory");
    });
  }
});

describe("prometheus KEDA keys from selector labels", () => {
  /** The plan of External `q` whose selector carries `labels` besides `type: prometheus`. */
  function labelled(labels: Record<string, string>): MetricPlan {
    const [p] = planHpa({
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "web", namespace: "shop" },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
        minReplicas: 1,
        maxReplicas: 10,
        metrics: [{
          type: "External",
          external: {
            metric: {
              name: "q",
              selector: { matchLabels: { type: "prometheus", query: "up", ...labels } },
            },
            target: { type: "AverageValue", averageValue: "10" },
          },
        }],
      },
    }, {});
    return p;
  }

  it("says matchLabels.<key> for a bad label; the factory refuses it too", () => {
    const p = labelled({
      namespace: "Team",
      "ignore-null-values": "maybe",
      "multiple-series": "avg",
    });
    const want = [
      `invalid namespace "Team" for ${EXTERNAL} (matchLabels.namespace): ${NAMESPACE}`,
      `invalid ignore-null-values "maybe" for ${EXTERNAL} (matchLabels.ignore-null-values): ${BOOL}`,
      `invalid multiple-series "avg" for ${EXTERNAL} (matchLabels.multiple-series): ${SERIES}`,
    ].join("; ");
    assert.equal(p.error, want, "planHpa");
    // (a plan does not keep where a key came from: the factory names the annotation spelling)
    const factory = factoryError(p, false) ?? "";
    for (const why of [NAMESPACE, BOOL, SERIES]) assert.ok(factory.includes(`: ${why}`), factory);
  });

  it("accepts good labels in both", () => {
    const p = labelled({
      namespace: "team-a",
      "ignore-null-values": "true",
      "multiple-series": "first",
    });
    assert.equal(p.error, null, "planHpa");
    assert.equal(factoryError(p, false), null, "factory");
  });
});
