/**
 * The json-path config schema (src/core/kube_metrics_adapter/configs/json_path.ts) as `plan` and `serve` meet it:
 * each invalid config has one message, the same from `planHpa` and from the collector's
 * factory, so a metric `plan` calls OK is one the factory accepts. Among them the three
 * json-path configs that `plan` used to call OK and the collectors refused (issue 20).
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHttpJsonPathFactory } from "../../src/collectors/http_json_path.ts";
import { createPodJsonPathFactory } from "../../src/collectors/pod_json_path.ts";
import { planHpa } from "../../src/core/kube_metrics_adapter/plan.ts";
import type { MetricPlan } from "../../src/core/types.ts";

type Kind = "Pods" | "External";

/** The plan of metric `m` of HPA shop/web, its config set by annotations. */
function plan(kind: Kind, config: Record<string, string>): MetricPlan {
  const segment = kind === "Pods" ? "pods" : "external";
  const annotations: Record<string, string> = {};
  for (const [k, v] of Object.entries(config)) {
    annotations[`metric-config.${segment}.m.json-path/${k}`] = v;
  }
  const target = { type: "AverageValue", averageValue: "10" };
  const [p] = planHpa({
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name: "web", namespace: "shop", annotations },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
      maxReplicas: 10,
      metrics: [
        kind === "Pods" ? { type: "Pods", pods: { metric: { name: "m" }, target } } : {
          type: "External",
          external: {
            metric: { name: "m", selector: { matchLabels: { type: "json-path" } } },
            target,
          },
        },
      ],
    },
  });
  return p;
}

const FACTORIES = {
  Pods: createPodJsonPathFactory(),
  External: createHttpJsonPathFactory(),
};

/** What the factory says about a plan's config: its error message, or null. */
function factoryError(p: MetricPlan): string | null {
  try {
    FACTORIES[p.metricType as Kind].create({ plan: { ...p, error: null } });
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

const at = (kind: Kind, key: string): string =>
  `annotation metric-config.${kind === "Pods" ? "pods" : "external"}.m.json-path/${key}`;
const invalid = (kind: Kind, key: string, value: string, why: string): string =>
  `invalid ${key} "${value}" for ${kind} metric \`m\` of HPA shop/web (${at(kind, key)}): ${why}`;

const POD = { "json-key": "$.v", port: "9090" };
const EXT = { "json-key": "$.v", endpoint: "http://127.0.0.1:9/q" };

/** [name, metric kind, config, the message of plan and factory]. */
const CASES: [string, Kind, Record<string, string>, string][] = [
  [
    "a json-key that is not a JSONPath (plan said OK before)",
    "Pods",
    { ...POD, "json-key": "{}" },
    invalid("Pods", "json-key", "{}", 'a JSONPath starts with "$"'),
  ],
  [
    "a negative request-timeout (plan said OK before)",
    "Pods",
    { ...POD, "request-timeout": "-256ms" },
    invalid("Pods", "request-timeout", "-256ms", "must not be negative"),
  ],
  [
    "a negative connect-timeout (plan said OK before)",
    "Pods",
    { ...POD, "connect-timeout": "-256ms" },
    invalid("Pods", "connect-timeout", "-256ms", "must not be negative"),
  ],
  [
    "a port out of range",
    "Pods",
    { ...POD, port: "70000" },
    invalid("Pods", "port", "70000", "want a number from 1 to 65535"),
  ],
  [
    "no port",
    "Pods",
    { "json-key": "$.v" },
    "Pods metric `m` of HPA shop/web needs annotation metric-config.pods.m.json-path/port",
  ],
  [
    "an unknown aggregator",
    "Pods",
    { ...POD, aggregator: "median" },
    invalid("Pods", "aggregator", "median", "want one of avg, min, max, sum, count, last, diff"),
  ],
  [
    "a json-eval that calls something unknown",
    "External",
    { endpoint: EXT.endpoint, "json-eval": "require('fs')" },
    invalid(
      "External",
      "json-eval",
      "require('fs')",
      'unknown function "require" at position 0',
    ),
  ],
  [
    "a link-local endpoint",
    "External",
    { ...EXT, endpoint: "http://[::ffff:169.254.169.254]/" },
    invalid(
      "External",
      "endpoint",
      "http://[::ffff:169.254.169.254]/",
      "a link-local address (allow with --allow-link-local-targets)",
    ),
  ],
  [
    "an endpoint that is no URL",
    "External",
    { ...EXT, endpoint: "http://[::1" },
    invalid("External", "endpoint", "http://[::1", "want an http:// or https:// URL"),
  ],
  [
    "both json-key and json-eval",
    "External",
    { ...EXT, "json-eval": "$.v * 2" },
    "External metric `m` of HPA shop/web sets both json-key and json-eval; keep one (they are mutually exclusive)",
  ],
];

describe("json-path config: plan and factory", () => {
  for (const [name, kind, config, message] of CASES) {
    it(`refuses ${name} with one message in plan and factory`, () => {
      const p = plan(kind, config);
      assert.equal(p.error, message);
      assert.equal(factoryError(p), message);
    });
  }

  it("accepts the aggregators count, last and diff in plan as the collectors do", () => {
    for (const aggregator of ["count", "last", "diff"]) {
      const p = plan("Pods", { ...POD, aggregator });
      assert.equal(p.error, null);
      assert.equal(factoryError(p), null);
    }
  });
});
