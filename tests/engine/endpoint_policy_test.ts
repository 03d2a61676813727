/**
 * The endpoint policy of issue 25 through the engine, with the real json-path and Prometheus
 * collectors on loopback: an HPA whose URLs name another namespace's Service, a link-local
 * address or a place outside the allow-list gets a plan error for each, a Warning event on the
 * HPA naming the HPA, the key and the value, and no connection (a listener counts them); the
 * URL the policy allows is collected.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:net";
import type { KubeObject } from "../../src/cluster/types.ts";
import { createHttpJsonPathFactory } from "../../src/collectors/http_json_path.ts";
import { createPrometheusFactory } from "../../src/collectors/prometheus.ts";
import { createCollectorRegistry } from "../../src/collectors/registry.ts";
import { createEndpointPolicy } from "../../src/core/endpoint_policy.ts";
import { parseSelector } from "../../src/core/kubernetes/label_selector.ts";
import { Engine } from "../../src/engine/engine.ts";
import { COLLECTOR_EVENT_REASON } from "../../src/engine/event_reporter.ts";
import { MetricStore } from "../../src/store/store.ts";
import { json, startServer, type TestServer } from "../collectors/servers.ts";
import { MemoryCluster, RecordingWriter } from "./support.ts";

/** A TCP listener on 127.0.0.1 that counts connections and answers none. */
let listener: Server;
let listenerPort = 0;
let connections = 0;
/** The allowed endpoint, on 127.0.0.2. */
let allowed: TestServer;
let allowedHits = 0;

before(async () => {
  listener = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  listenerPort = (listener.address() as { port: number }).port;
  allowed = await startServer("127.0.0.2", 0, (_req, res) => {
    allowedHits++;
    json(res, { n: 7 });
  });
});

after(async () => {
  await new Promise<void>((resolve) => listener?.close(() => resolve()));
  await allowed?.close();
});

const RULES =
  'not allowed: not a Service in namespace "a" (--endpoints-in-own-namespace), not a server given by flags and no --allowed-metric-endpoints pattern matches';

function hpa(urls: Record<string, string>): KubeObject {
  const annotations: Record<string, string> = {};
  const metrics: unknown[] = [];
  for (const [name, url] of Object.entries(urls)) {
    const type = name === "prom" ? "prometheus" : "json-path";
    if (type === "prometheus") {
      annotations[`metric-config.external.${name}.prometheus/prometheus-server`] = url;
      annotations[`metric-config.external.${name}.prometheus/query`] = "up";
    } else {
      annotations[`metric-config.external.${name}.json-path/endpoint`] = url;
      annotations[`metric-config.external.${name}.json-path/json-key`] = "$.n";
    }
    metrics.push({
      type: "External",
      external: {
        metric: { name, selector: { matchLabels: { type } } },
        target: { type: "AverageValue", averageValue: "10" },
      },
    });
  }
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name: "web", namespace: "a", annotations },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
      maxReplicas: 10,
      metrics,
    },
  };
}

async function until<T>(what: string, fn: () => T | null, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v !== null) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("the engine with an endpoint policy", () => {
  it("refuses at plan time with a Warning event each, dials none of them, collects the allowed one", async () => {
    const cluster = new MemoryCluster();
    const writer = new RecordingWriter(cluster);
    const store = new MetricStore({ ttlSeconds: 900 });
    const urls = {
      outside: `http://127.0.0.1:${listenerPort}/m`,
      other: `http://db.b.svc.cluster.local:${listenerPort}/m`,
      metadata: "http://169.254.169.254/latest/meta-data",
      prom: `http://127.0.0.1:${listenerPort}`,
      ok: `http://127.0.0.2:${allowed.port}/m`,
    };
    cluster.set("HorizontalPodAutoscaler", hpa(urls));
    const engine = new Engine({
      cluster,
      store,
      writer,
      registry: createCollectorRegistry([
        createHttpJsonPathFactory({}),
        createPrometheusFactory({}),
      ]),
      endpointPolicy: createEndpointPolicy({ ownNamespace: true, allowed: ["http://127.0.0.2:*"] }),
    });
    try {
      await engine.start();
      const value = await until("the allowed endpoint's value", () => {
        const r = store.lookupExternal(
          { namespace: "a", metricName: "ok", selector: parseSelector("") },
          Date.now(),
        );
        return "items" in r ? r.items.map((i) => i.value) : null;
      });
      assert.deepEqual(value, [7]);
      const where = (name: string, key: string, type = "json-path") =>
        `External metric \`${name}\` of HPA a/web (annotation metric-config.external.${name}.${type}/${key})`;
      const problems = {
        outside: `invalid endpoint "${urls.outside}" for ${where("outside", "endpoint")}: ${RULES}`,
        other: `invalid endpoint "${urls.other}" for ${where("other", "endpoint")}: ${RULES}`,
        metadata: `invalid endpoint "${urls.metadata}" for ${
          where("metadata", "endpoint")
        }: a link-local address (allow with --allow-link-local-targets)`,
        prom: `invalid prometheus-server "${urls.prom}" for ${
          where("prom", "prometheus-server", "prometheus")
        }: ${RULES}`,
      };
      assert.deepEqual(
        engine.status().map((p) => [p.plan.metricName, p.problem]),
        [
          ["outside", problems.outside],
          ["other", problems.other],
          ["metadata", problems.metadata],
          ["prom", problems.prom],
          ["ok", null],
        ],
      );
      assert.deepEqual(
        writer.events.map((e) => [e.kind, e.name, e.event.type, e.event.reason, e.event.message]),
        Object.entries(problems).map(([name, problem]) => [
          "HorizontalPodAutoscaler",
          "a/web",
          "Warning",
          COLLECTOR_EVENT_REASON,
          `failed to create metrics collector for External metric ${name}: ${problem}`,
        ]),
      );
      assert.equal(allowedHits, 1);
      assert.equal(connections, 0);
    } finally {
      await engine.stop();
    }
  });
});
