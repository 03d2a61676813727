/**
 * `plan --prometheus-adapter-config FILE -f HPAS` (issue 49, point 7): for each HPA metric no
 * collector of ours takes, the read the HPA controller makes, the rule that serves it and the
 * query it sends, from the rules' series looked up on a real Prometheus; without
 * `--prometheus-server`, the rules that could serve it. The query shown is the one the serving
 * sends for the same read (checked against the engine with a recording fetch).
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { planCommand } from "../../src/cli/plan.ts";
import { explainCommand } from "../../src/cli/explain.ts";
import { memoryLogger } from "../../src/engine/logger.ts";
import { PrometheusAdapterServing } from "../../src/engine/prometheus_adapter.ts";
import { parseSelector } from "../../src/core/kubernetes/label_selector.ts";
import type { RealPrometheus } from "../fakes/prometheus_server.ts";
import {
  type ScrapedExporter,
  scrapedExporter,
  servingOptions,
} from "../engine/prometheus_adapter_support.ts";
import { captureIO } from "./capture_io.ts";

const EXPOSITION = [
  "# TYPE http_requests_total counter",
  'http_requests_total{namespace="shop",pod="web-a"} 10',
  "# TYPE queue_depth gauge",
  'queue_depth{namespace="shop",deployment="web",queue="orders"} 7',
  "# TYPE fixed_gauge gauge",
  'fixed_gauge{namespace="shop"} 1',
  "",
].join("\n");

const CONFIG = `
rules:
- seriesQuery: '{__name__=~"^http_.*_total$",namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: "^(.*)_total$", as: "\${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
- seriesQuery: 'queue_depth{namespace!="",deployment!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      deployment: {group: apps, resource: deployment}
  name: {matches: "^(.*)$", as: "deployment_\${1}"}
  metricsQuery: 'max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: 'fixed_gauge{namespace!=""}'
  resources: {template: "<<.Resource>>"}
  name: {matches: "^fixed_gauge$", as: "fixed"}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'queue_depth{namespace!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
`;

const HPA = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
  namespace: shop
  annotations:
    metric-config.external.ours.json-path/json-key: "$.value"
    metric-config.external.ours.json-path/endpoint: "http://stats.shop/value"
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  metrics:
  - type: Pods
    pods:
      metric: {name: http_requests_per_second}
      target: {type: AverageValue, averageValue: "10"}
  - type: Object
    object:
      describedObject: {apiVersion: apps/v1, kind: Deployment, name: web}
      metric: {name: deployment_queue_depth, selector: {matchLabels: {queue: orders}}}
      target: {type: Value, value: "5"}
  - type: Object
    object:
      describedObject: {apiVersion: v1, kind: Namespace, name: elsewhere}
      metric: {name: fixed}
      target: {type: Value, value: "5"}
  - type: External
    external:
      metric: {name: queue_depth, selector: {matchExpressions: [{key: queue, operator: In, values: [orders, billing]}]}}
      target: {type: AverageValue, averageValue: "10"}
  - type: External
    external:
      metric: {name: nobody_has_it, selector: {matchLabels: {type: nothing}}}
      target: {type: Value, value: "1"}
  - type: External
    external:
      metric: {name: ours, selector: {matchLabels: {type: json-path}}}
      target: {type: Value, value: "1"}
`;

const POD_QUERY =
  'sum(rate(http_requests_total{namespace="shop",pod=~"<pod-1>|<pod-2>"}[2m])) by (pod)';
const DEPLOYMENT_QUERY =
  'max(queue_depth{queue="orders",namespace="shop",deployment="web"}) by (deployment)';
const NAMESPACE_QUERY = 'sum(fixed_gauge{namespace="shop"}) by (namespace)';
const EXTERNAL_QUERY = 'sum(queue_depth{queue=~"billing|orders",namespace="shop"}) by (queue)';

let scraped: ScrapedExporter;
let prom: RealPrometheus;
let dir = "";
let config = "";
let hpa = "";

before(async () => {
  scraped = await scrapedExporter(() => EXPOSITION, "fixed_gauge");
  prom = scraped.prom;
  dir = await mkdtemp(join(tmpdir(), "plan-padapter-"));
  config = join(dir, "config.yaml");
  hpa = join(dir, "hpa.yaml");
  await writeFile(config, CONFIG);
  await writeFile(hpa, HPA);
});

after(async () => {
  await scraped?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function plan(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const io = captureIO();
  const code = await planCommand.run(args, io);
  return { code, out: io.out(), err: io.err() };
}

describe("plan --prometheus-adapter-config", () => {
  it("names each metric's rule, series and query from the series on Prometheus", async () => {
    const { code, out, err } = await plan([
      "-f",
      hpa,
      "--prometheus-adapter-config",
      config,
      "--prometheus-server",
      prom.url,
      "-o",
      "json",
    ]);
    assert.equal(err, "");
    assert.equal(code, 0);
    const rows = JSON.parse(out);
    assert.deepEqual(
      rows.map((r: Record<string, unknown>) => [r.metricType, r.metricName, r.error !== null]),
      [
        ["Pods", "http_requests_per_second", false],
        ["Object", "deployment_queue_depth", false],
        ["Object", "fixed", false],
        ["External", "queue_depth", false],
        ["External", "nobody_has_it", true],
        ["External", "ours", false],
      ],
    );
    assert.deepEqual(rows.map((r: Record<string, unknown>) => r.prometheusAdapter), [
      {
        read: "custom.metrics.k8s.io namespaces/shop/pods/*/http_requests_per_second",
        rule: "rules[0]",
        series: "http_requests_total",
        query: POD_QUERY,
      },
      {
        read:
          "custom.metrics.k8s.io namespaces/shop/deployments.apps/web/deployment_queue_depth with metricLabelSelector",
        rule: "rules[1]",
        series: "queue_depth",
        query: DEPLOYMENT_QUERY,
      },
      {
        // the HPA controller reads a Namespace metric of its own namespace, whatever the name
        read: "custom.metrics.k8s.io namespaces/shop/fixed",
        rule: "rules[2]",
        series: "fixed_gauge",
        query: NAMESPACE_QUERY,
      },
      {
        read: "external.metrics.k8s.io namespaces/shop/queue_depth with labelSelector",
        rule: "externalRules[0]",
        series: "queue_depth",
        query: EXTERNAL_QUERY,
      },
      {
        // a rule could name it, but no series is so named now: an error naming the rules
        read: "external.metrics.k8s.io namespaces/shop/nobody_has_it with labelSelector",
        candidates: ["externalRules[0]"],
        error:
          "no series in Prometheus is named nobody_has_it by prometheus-adapter's externalRules[0]",
      },
      // a metric a collector of ours takes is not prometheus-adapter's
      undefined,
    ]);
    assert.equal(
      rows[4].error,
      "no series in Prometheus is named nobody_has_it by prometheus-adapter's externalRules[0]",
    );
    assert.equal(rows[5].collector, "json-path");
  });

  it("shows the rule and query in the table", async () => {
    const { code, out } = await plan([
      "-f",
      hpa,
      "--prometheus-adapter-config",
      config,
      "--prometheus-server",
      prom.url,
    ]);
    assert.equal(code, 0);
    const lines = out.split("\n");
    const at = lines.findIndex((l) => l.includes("http_requests_per_second"));
    assert.match(lines[at], /served by prometheus-adapter's rules\[0\]$/);
    assert.deepEqual(lines.slice(at + 1, at + 5), [
      "    read: custom.metrics.k8s.io namespaces/shop/pods/*/http_requests_per_second",
      "    rule: rules[0] (series http_requests_total)",
      `    query: ${POD_QUERY}`,
      "    (<pod-1>, <pod-2>: the pods the HPA selects, at each read)",
    ]);
  });

  it("explain -f shows the same rule, read, series and query", async () => {
    const io = captureIO();
    const code = await explainCommand.run([
      "shop/web",
      "-f",
      hpa,
      "--prometheus-adapter-config",
      config,
      "--prometheus-server",
      prom.url,
    ], io);
    assert.equal(code, 1, io.err()); // nobody_has_it
    assert.match(io.err(), /^error: HPA shop\/web metric External\/nobody_has_it: /);
    const lines = io.out().split("\n");
    const at = lines.indexOf("metric 4 of 6: External queue_depth");
    assert.deepEqual(lines.slice(at + 1, at + 6), [
      "  collector:    none",
      "  plan:         served by prometheus-adapter's externalRules[0]",
      "  read:         external.metrics.k8s.io namespaces/shop/queue_depth with labelSelector",
      "  series:       queue_depth",
      `  query:        ${EXTERNAL_QUERY}`,
    ]);
  });

  it("sends the query the serving sends for the same reads", async () => {
    const sent: string[] = [];
    const recording: typeof fetch = (input, init) => {
      const url = new URL(String(input));
      if (url.pathname.endsWith("/query")) {
        const params = init?.method === "POST"
          ? new URLSearchParams(String(init.body))
          : url.searchParams;
        sent.push(params.get("query") ?? "");
      }
      return fetch(input, init);
    };
    const serving = await PrometheusAdapterServing.start(
      servingOptions(config, { url: prom.url, fetch: recording, logger: memoryLogger() }),
    );
    try {
      const names = ["<pod-1>", "<pod-2>"];
      const custom = (
        groupResource: string,
        namespaced: boolean,
        name: string,
        metricName: string,
        selector: string,
      ) =>
        serving.custom({
          namespace: namespaced ? "shop" : "",
          groupResource,
          namespaced,
          name,
          metricName,
          metricSelector: parseSelector(selector),
          metricSelectorText: selector,
          labelSelectorText: "",
          names: () => name === "*" ? names : [name],
        });
      await custom("pods", true, "*", "http_requests_per_second", "");
      await custom("deployments.apps", true, "web", "deployment_queue_depth", "queue=orders");
      await custom("namespaces", false, "shop", "fixed", "");
      await serving.external({
        namespace: "shop",
        metricName: "queue_depth",
        selector: parseSelector("queue in (orders,billing)"),
        selectorText: "queue in (billing,orders)",
      });
    } finally {
      await serving.stop();
    }
    assert.deepEqual(sent, [POD_QUERY, DEPLOYMENT_QUERY, NAMESPACE_QUERY, EXTERNAL_QUERY]);
  });

  it("without --prometheus-server, names the rules that could serve each metric", async () => {
    const { code, out } = await plan([
      "-f",
      hpa,
      "--prometheus-adapter-config",
      config,
      "-o",
      "json",
    ]);
    assert.equal(code, 0);
    const rows = JSON.parse(out);
    const unchecked =
      "the rules' series were not looked up: give --prometheus-server to look them up";
    assert.deepEqual(rows.map((r: Record<string, unknown>) => r.prometheusAdapter), [
      {
        read: "custom.metrics.k8s.io namespaces/shop/pods/*/http_requests_per_second",
        // rules[2] names only "fixed"
        candidates: ["rules[0]", "rules[1]"],
        unchecked,
      },
      {
        read:
          "custom.metrics.k8s.io namespaces/shop/deployments.apps/web/deployment_queue_depth with metricLabelSelector",
        candidates: ["rules[0]", "rules[1]"],
        unchecked,
      },
      {
        read: "custom.metrics.k8s.io namespaces/shop/fixed",
        candidates: ["rules[0]", "rules[1]", "rules[2]"],
        unchecked,
      },
      {
        read: "external.metrics.k8s.io namespaces/shop/queue_depth with labelSelector",
        candidates: ["externalRules[0]"],
        unchecked,
      },
      {
        read: "external.metrics.k8s.io namespaces/shop/nobody_has_it with labelSelector",
        candidates: ["externalRules[0]"],
        unchecked,
      },
      undefined,
    ]);
    assert.deepEqual(rows.map((r: Record<string, unknown>) => r.error), [
      null,
      null,
      null,
      null,
      null,
      null,
    ]);
  });

  it("with --kubeconfig, says when the cluster's resources cannot be read", async () => {
    const kubeconfig = join(dir, "kubeconfig");
    // nothing listens on port 1
    await writeFile(
      kubeconfig,
      `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`,
    );
    await assert.rejects(
      plan(["-f", hpa, "--prometheus-adapter-config", config, "--kubeconfig", kubeconfig]),
      (e: Error) => {
        assert.match(
          e.message,
          new RegExp(`^cannot read the cluster's resources with --kubeconfig ${kubeconfig}: `),
        );
        return true;
      },
    );
  });

  it("fails on a bad file, naming the rule and the field", async () => {
    const bad = join(dir, "bad.yaml");
    await writeFile(bad, "rules:\n- seriesQuery: 'x'\n  metricsQuery: 'sum(<<.Series'\n");
    await assert.rejects(
      plan(["-f", hpa, "--prometheus-adapter-config", bad]),
      (e: Error) => {
        assert.match(e.message, /rules\[0\]\.metricsQuery/);
        assert.match(e.message, new RegExp(bad.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")));
        return true;
      },
    );
  });
});
