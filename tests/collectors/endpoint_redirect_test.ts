/**
 * Redirects never take a collection where the endpoint policy of issue 25 would refuse to go:
 * an HPA's json-path `endpoint` and its `prometheus-server`, both allowed by a pattern, answer
 * 302 to a place the policy refuses; the collectors do not follow (the refused place counts no
 * request). Planned with `planHpa` and the policy, collected by the real collectors.
 *
 * The same holds for the operator's servers and InfluxDB: see "never follow a redirect" in
 * prometheus_security_test.ts, "does not follow a redirect" in influxdb_test.ts and
 * http_json_path_test.ts.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHttpJsonPathFactory } from "../../src/collectors/http_json_path.ts";
import { createPrometheusFactory } from "../../src/collectors/prometheus.ts";
import type { CollectorFactory } from "../../src/collectors/types.ts";
import { checkEndpoint, createEndpointPolicy } from "../../src/core/endpoint_policy.ts";
import { planHpa } from "../../src/core/kube_metrics_adapter/plan.ts";
import { context } from "./prometheus_support.ts";
import { startServer, type TestServer } from "./servers.ts";

let refused: TestServer;
let refusedHits = 0;
let redirector: TestServer;
let target = "";

before(async () => {
  refused = await startServer("127.0.0.3", 0, (_req, res) => {
    refusedHits++;
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({
      n: 1,
      status: "success",
      data: { resultType: "scalar", result: [1, "1"] },
    }));
  });
  target = `http://127.0.0.3:${refused.port}/api/v1/query`;
  redirector = await startServer("127.0.0.2", 0, (_req, res) => {
    res.writeHead(302, { location: target });
    res.end();
  });
});

after(async () => {
  await redirector?.close();
  await refused?.close();
});

const policy = createEndpointPolicy({ ownNamespace: true, allowed: ["http://127.0.0.2:*"] });

function hpa(type: "json-path" | "prometheus", url: string): unknown {
  const prefix = `metric-config.external.m.${type}`;
  const annotations = type === "json-path"
    ? { [`${prefix}/endpoint`]: url, [`${prefix}/json-key`]: "$.n" }
    : { [`${prefix}/prometheus-server`]: url, [`${prefix}/query`]: "up" };
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name: "web", namespace: "a", annotations },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
      maxReplicas: 10,
      metrics: [{
        type: "External",
        external: {
          metric: { name: "m", selector: { matchLabels: { type } } },
          target: { type: "AverageValue", averageValue: "10" },
        },
      }],
    },
  };
}

async function rejection(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error("expected a rejection");
}

describe("a redirect to a place the endpoint policy refuses", () => {
  const cases: [string, "json-path" | "prometheus", CollectorFactory, string, string][] = [
    ["a json-path endpoint", "json-path", createHttpJsonPathFactory({}), "/q", ""],
    [
      "a prometheus-server",
      "prometheus",
      createPrometheusFactory({}),
      "",
      'prometheus query "up" for metric m failed: ',
    ],
  ];
  for (const [what, type, factory, path, prefix] of cases) {
    it(`is not followed from ${what}`, async () => {
      assert.equal(
        checkEndpoint(new URL(target), { namespace: "a", policy }),
        'not allowed: not a Service in namespace "a" (--endpoints-in-own-namespace), not a server given by flags and no --allowed-metric-endpoints pattern matches',
      );
      const url = `http://127.0.0.2:${redirector.port}${path}`;
      const [plan] = planHpa(hpa(type, url), { endpointPolicy: policy });
      assert.equal(plan.error, null);
      const from = type === "prometheus" ? `${url}/api/v1/query` : url;
      refusedHits = 0;
      assert.equal(
        await rejection(factory.create({ plan }).collect(context())),
        `${prefix}refused to follow redirect "302" from ${from} to "${target}"`,
      );
      assert.equal(refusedHits, 0);
    });
  }
});
