/**
 * `planHpa` with an endpoint policy (issue 25): every URL key an HPA author sets (json-path
 * `endpoint`, `prometheus-server` on External and Object metrics, InfluxDB `address`) is
 * checked against the HPA's own namespace and the policy, and a refusal is the metric's plan
 * error naming the HPA, the key, the value and the rules.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { planHpa, type PlanOptions } from "../../src/core/kube_metrics_adapter/plan.ts";
import { createEndpointPolicy } from "../../src/core/endpoint_policy.ts";

const policy = createEndpointPolicy({
  allowed: ["https://*.metrics.example.com"],
  ownNamespace: true,
  flagServers: ["http://prometheus.monitoring:9090", "http://influxdb.monitoring:8086"],
});

const RULES =
  'not allowed: not a Service in namespace "a" (--endpoints-in-own-namespace), not a server given by flags and no --allowed-metric-endpoints pattern matches';

type Key = "endpoint" | "prometheus-server" | "object prometheus-server" | "address";

/** An HPA `<namespace>/web` whose one metric sets `key` to `url` by annotation. */
function hpa(key: Key, url: string, namespace = "a"): unknown {
  const target = { type: "AverageValue", averageValue: "10" };
  const annotations: Record<string, string> = {};
  let metric: unknown;
  if (key === "endpoint") {
    annotations["metric-config.external.m.json-path/endpoint"] = url;
    annotations["metric-config.external.m.json-path/json-key"] = "$.n";
    metric = {
      type: "External",
      external: { metric: { name: "m", selector: { matchLabels: { type: "json-path" } } }, target },
    };
  } else if (key === "prometheus-server") {
    annotations["metric-config.external.m.prometheus/prometheus-server"] = url;
    annotations["metric-config.external.m.prometheus/query"] = "up";
    metric = {
      type: "External",
      external: {
        metric: { name: "m", selector: { matchLabels: { type: "prometheus" } } },
        target,
      },
    };
  } else if (key === "object prometheus-server") {
    annotations["metric-config.object.m.prometheus/prometheus-server"] = url;
    annotations["metric-config.object.m.prometheus/query"] = "up";
    metric = {
      type: "Object",
      object: {
        metric: { name: "m" },
        describedObject: { apiVersion: "v1", kind: "Service", name: "web" },
        target: { type: "Value", value: "10" },
      },
    };
  } else {
    annotations["metric-config.external.m.influxdb/address"] = url;
    annotations["metric-config.external.m.influxdb/query"] = 'from(bucket: "b")';
    metric = {
      type: "External",
      external: { metric: { name: "m", selector: { matchLabels: { type: "influxdb" } } }, target },
    };
  }
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name: "web", namespace, annotations },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
      maxReplicas: 10,
      metrics: [metric],
    },
  };
}

function error(key: Key, url: string, options: PlanOptions = { endpointPolicy: policy }) {
  return planHpa(hpa(key, url), options)[0].error;
}

const WHERE: Record<Key, string> = {
  endpoint:
    "External metric `m` of HPA a/web (annotation metric-config.external.m.json-path/endpoint)",
  "prometheus-server":
    "External metric `m` of HPA a/web (annotation metric-config.external.m.prometheus/prometheus-server)",
  "object prometheus-server":
    "Object metric `m` of HPA a/web (annotation metric-config.object.m.prometheus/prometheus-server)",
  address:
    "External metric `m` of HPA a/web (annotation metric-config.external.m.influxdb/address)",
};
const NAME: Record<Key, string> = {
  endpoint: "endpoint",
  "prometheus-server": "prometheus-server",
  "object prometheus-server": "prometheus-server",
  address: "address",
};

describe("planHpa with an endpoint policy", () => {
  const keys: Key[] = ["endpoint", "prometheus-server", "object prometheus-server", "address"];
  for (const key of keys) {
    it(`refuses a ${key} outside the rules, naming the HPA, key, value and rules`, () => {
      for (
        const url of [
          "http://db.b.svc.cluster.local:80/x",
          "http://db.b:9090",
          "http://10.0.0.7:9090",
          "https://example.org/metrics",
          "https://metrics.example.com/",
        ]
      ) {
        assert.equal(
          error(key, url),
          `invalid ${NAME[key]} "${url}" for ${WHERE[key]}: ${RULES}`,
          url,
        );
      }
    });

    it(`allows a ${key} of the HPA's namespace, a pattern or a server given by flags`, () => {
      for (
        const url of [
          "http://api.a:8080/m",
          "http://api.a.svc/m",
          "https://api.a.svc.cluster.local./m",
          "https://eu.metrics.example.com/q",
          "http://prometheus.monitoring:9090",
          "http://influxdb.monitoring:8086/",
        ]
      ) {
        assert.equal(error(key, url), null, url);
      }
    });
  }

  it("keeps the link-local refusal first, and allows every URL with no rule on", () => {
    assert.equal(
      error("endpoint", "http://169.254.169.254/"),
      `invalid endpoint "http://169.254.169.254/" for ${WHERE.endpoint}: a link-local address (allow with --allow-link-local-targets)`,
    );
    for (const options of [{}, { endpointPolicy: createEndpointPolicy({}) }]) {
      assert.equal(error("endpoint", "http://db.b.svc.cluster.local/x", options), null);
      assert.equal(error("address", "http://10.0.0.7:8086", options), null);
    }
  });

  it("checks against each HPA's own namespace, whatever was planned before", () => {
    const url = "http://db.b.svc.cluster.local/x";
    const refusal = `invalid endpoint "${url}" for ${WHERE.endpoint}: ${RULES}`;
    const options = { endpointPolicy: policy };
    assert.equal(planHpa(hpa("endpoint", url, "a"), options)[0].error, refusal);
    assert.equal(planHpa(hpa("endpoint", url, "b"), options)[0].error, null);
    assert.equal(planHpa(hpa("endpoint", url, "a"), options)[0].error, refusal);
    // the namespace given in the options is the HPA's, not the caller's
    assert.equal(
      planHpa(hpa("endpoint", url, "a"), { ...options, namespace: "b" })[0].error,
      refusal,
    );
  });

  it("checks each policy by its own rules", () => {
    const url = "http://db.b.svc.cluster.local/x";
    const other = createEndpointPolicy({ allowed: ["http://db.b.svc.cluster.local/x"] });
    assert.equal(planHpa(hpa("endpoint", url), { endpointPolicy: other })[0].error, null);
    assert.equal(
      planHpa(hpa("endpoint", url), { endpointPolicy: policy })[0].error,
      `invalid endpoint "${url}" for ${WHERE.endpoint}: ${RULES}`,
    );
  });

  it("names the selector label when the URL comes from matchLabels", () => {
    const object = hpa("endpoint", "") as {
      metadata: { annotations: Record<string, string> };
      spec: { metrics: { external: { metric: { selector: { matchLabels: object } } } }[] };
    };
    delete object.metadata.annotations["metric-config.external.m.json-path/endpoint"];
    object.spec.metrics[0].external.metric.selector.matchLabels = {
      type: "json-path",
      endpoint: "http://db.b",
    };
    assert.equal(
      planHpa(object, { endpointPolicy: policy })[0].error,
      `invalid endpoint "http://db.b" for External metric \`m\` of HPA a/web (matchLabels.endpoint): ${RULES}`,
    );
  });
});
