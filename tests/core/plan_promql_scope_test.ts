/**
 * The planner's side of `--prometheus-enforce-namespace-label` (issue 25): with a scoper in
 * the plan options, every PromQL query an HPA writes (prometheus External and Object metrics,
 * hidden formula inputs, the legacy query-name form) is replaced in the plan's config by the
 * scoped query, so the collector, the query key and `plan` all use it; one the scoper refuses
 * is the plan's error; and the replica guard's query is scoped by scopeGuardQuery.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { planHpa, queryKey } from "../../src/core/kube_metrics_adapter/plan.ts";
import { scopePromQL } from "../../src/core/promql_scope.ts";
import { parseGuardConfig, scopeGuardQuery } from "../../src/core/estafette/guard.ts";
import type { PromQLScoper } from "../../src/core/kube_metrics_adapter/collector_config.ts";

const scope: PromQLScoper = (q, ns) => scopePromQL(q, { label: "namespace", value: ns });

function hpa(namespace: string, annotations: Record<string, string>, metrics: unknown[]) {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name: "web", namespace, annotations },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
      maxReplicas: 5,
      metrics,
    },
  };
}

const external = (name: string, type = "prometheus") => ({
  type: "External",
  external: {
    metric: { name, selector: { matchLabels: { type } } },
    target: { type: "AverageValue", averageValue: "1" },
  },
});

describe("planHpa with scopePromQL", () => {
  it("scopes External, Object and hidden formula inputs' queries in the plans' config", () => {
    const plans = planHpa(
      hpa("shop", {
        "metric-config.external.queue.prometheus/query": "sum(queue_depth)",
        "metric-config.object.rps.prometheus/query": 'rate(http_total{app="web"}[1m])',
        "metric-config.external.ratio.formula/expression": "errors / 2",
        "metric-config.external.errors.prometheus/query": "sum(errors_total)",
      }, [
        external("queue"),
        {
          type: "Object",
          object: {
            metric: { name: "rps" },
            describedObject: { apiVersion: "v1", kind: "Service", name: "web" },
            target: { type: "Value", value: "10" },
          },
        },
        external("ratio", "formula"),
      ]),
      { scopePromQL: scope },
    );
    assert.deepEqual(plans.map((p) => [p.metricName, p.hidden ?? false, p.config.query, p.error]), [
      ["queue", false, 'sum(queue_depth{namespace="shop"})', null],
      ["rps", false, 'rate(http_total{app="web",namespace="shop"}[1m])', null],
      ["ratio", false, undefined, null],
      ["errors", true, 'sum(errors_total{namespace="shop"})', null],
    ]);
  });

  it("makes a refused query the plan's error and keeps the query as written", () => {
    const [plan] = planHpa(
      hpa("shop", { "metric-config.external.queue.prometheus/query": 'q{namespace="bank"}' }, [
        external("queue"),
      ]),
      { scopePromQL: scope },
    );
    assert.deepEqual([plan.config.query, plan.error], [
      'q{namespace="bank"}',
      'invalid query "q{namespace="bank"}" for External metric `queue` of HPA shop/web (annotation metric-config.external.queue.prometheus/query): selector q{namespace="bank"} at offset 0 matches namespace="bank": the query may select only namespace="shop"',
    ]);
  });

  it("scopes the key query-name names, and a matchLabels query", () => {
    const plans = planHpa(
      hpa("shop", {
        "metric-config.external.queue.prometheus/query-name": "depth",
        "metric-config.external.queue.prometheus/depth": "max(queue_depth)",
      }, [external("queue")]),
      { scopePromQL: scope },
    );
    assert.deepEqual([plans[0].config.depth, plans[0].error], [
      'max(queue_depth{namespace="shop"})',
      null,
    ]);
  });

  it("gives equal queries of two namespaces two query keys, and changes nothing without it", () => {
    const annotations = { "metric-config.external.queue.prometheus/query": "sum(queue_depth)" };
    const [a] = planHpa(hpa("a", annotations, [external("queue")]), { scopePromQL: scope });
    const [b] = planHpa(hpa("b", annotations, [external("queue")]), { scopePromQL: scope });
    assert.notEqual(queryKey(a), queryKey(b));
    const [plain] = planHpa(hpa("a", annotations, [external("queue")]), {});
    assert.equal(plain.config.query, "sum(queue_depth)");
  });
});

describe("scopeGuardQuery", () => {
  const config = (query: string) =>
    parseGuardConfig({
      "estafette.io/hpa-scaler": "true",
      "estafette.io/hpa-scaler-prometheus-query": query,
    }, { defaultPrometheusUrl: "http://p:9090" }).config;
  const web = { namespace: "shop", name: "web" };

  it("scopes the query, and leaves it without a scoper or a query", () => {
    assert.equal(
      scopeGuardQuery(config("sum(rate(r[5m]))"), web, scope).config?.prometheusQuery,
      'sum(rate(r{namespace="shop"}[5m]))',
    );
    assert.equal(
      scopeGuardQuery(config("sum(r)"), web).config?.prometheusQuery,
      "sum(r)",
    );
    assert.deepEqual(scopeGuardQuery(config(""), web, scope), { config: config("") });
  });

  it("names the annotation, its value and the HPA when the query is refused", () => {
    assert.deepEqual(scopeGuardQuery(config('r{namespace="x"}'), web, scope), {
      error:
        'invalid estafette.io/hpa-scaler-prometheus-query "r{namespace="x"}" of HPA shop/web: selector r{namespace="x"} at offset 0 matches namespace="x": the query may select only namespace="shop"',
    });
  });
});
