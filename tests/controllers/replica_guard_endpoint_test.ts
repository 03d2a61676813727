/**
 * The replica guard with the endpoint policy of issue 25, against the REAL Prometheus: a server
 * URL annotation (`estafette.io/hpa-scaler-prometheus-server-url`) the policy refuses is a
 * ReplicaGuardFailed Warning naming the HPA, the annotation and its value, with nothing asked
 * (a listener counts connections) and nothing written; one it allows is asked, and the default
 * server (from flags) is never checked.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:net";
import type { KubeObject } from "../../src/cluster/types.ts";
import { GUARD_FAILED_REASON, ReplicaGuard } from "../../src/controllers/replica_guard.ts";
import { createEndpointPolicy, type EndpointPolicy } from "../../src/core/endpoint_policy.ts";
import { guardServerUrlProblem, parseGuardConfig } from "../../src/core/estafette/guard.ts";
import { memoryLogger } from "../../src/engine/logger.ts";
import { type RealPrometheus, startPrometheus } from "../fakes/prometheus_server.ts";
import { MemoryCluster, RecordingWriter } from "../engine/support.ts";

const NOW = Date.parse("2026-11-25T08:30:00Z");
const URL_ANNOTATION = "estafette.io/hpa-scaler-prometheus-server-url";

let prom: RealPrometheus;
let listener: Server;
let listenerUrl = "";
let connections = 0;

before(async () => {
  prom = await startPrometheus({ targets: ["127.0.0.1:9"], readyQuery: "vector(1)" });
  listener = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  listenerUrl = `http://127.0.0.1:${(listener.address() as { port: number }).port}`;
});

after(async () => {
  await prom?.stop();
  await new Promise<void>((resolve) => listener?.close(() => resolve()));
});

function hpa(annotations: Record<string, string>): KubeObject {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: {
      name: "web",
      namespace: "shop",
      annotations: {
        "estafette.io/hpa-scaler": "true",
        "estafette.io/hpa-scaler-prometheus-query": "vector(22.54)",
        "estafette.io/hpa-scaler-requests-per-replica": "2.5",
        "estafette.io/hpa-scaler-delta": "-0.5",
        ...annotations,
      },
    },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
      minReplicas: 3,
      maxReplicas: 8,
    },
    status: { currentReplicas: 4 },
  };
}

async function pass(object: KubeObject, policy: EndpointPolicy) {
  const cluster = new MemoryCluster();
  cluster.set("HorizontalPodAutoscaler", object);
  const writer = new RecordingWriter(cluster);
  const failures: string[] = [];
  const guard = new ReplicaGuard({
    cluster,
    writer,
    write: true,
    lowerBound: 3,
    prometheus: { url: prom.url, tokenFile: null },
    endpointPolicy: policy,
    now: () => NOW,
    logger: memoryLogger(),
    metrics: { processed: () => {}, failed: (ns, reason) => failures.push(`${ns} ${reason}`) },
  });
  await guard.runOnce();
  await guard.stop();
  return {
    patches: writer.patches.map((p) => [p.name, (p.patch as { spec: unknown }).spec]),
    events: writer.events.map((e) => [e.name, e.event.type, e.event.reason, e.event.message]),
    failures,
  };
}

describe("the replica guard with an endpoint policy", () => {
  it("refuses a server URL annotation outside the rules: a Warning, no request, no write", async () => {
    const policy = createEndpointPolicy({
      ownNamespace: true,
      allowed: [`${new URL(prom.url).origin}`],
    });
    assert.deepEqual(await pass(hpa({ [URL_ANNOTATION]: listenerUrl }), policy), {
      patches: [],
      events: [[
        "shop/web",
        "Warning",
        GUARD_FAILED_REASON,
        `replica guard: invalid ${URL_ANNOTATION} "${listenerUrl}" of HPA shop/web: not allowed: not a Service in namespace "shop" (--endpoints-in-own-namespace), not a server given by flags and no --allowed-metric-endpoints pattern matches`,
      ]],
      failures: ["shop endpoint-not-allowed"],
    });
    assert.equal(connections, 0);
  });

  it("asks a server URL annotation the rules allow, and the default server unchecked", async () => {
    const policy = createEndpointPolicy({
      ownNamespace: true,
      allowed: [`${new URL(prom.url).origin}`],
    });
    // ceil(-0.5 + 22.54 / 2.5) = 9 >= maxReplicas 8: max becomes 10
    const written = [["shop/web", { minReplicas: 9, maxReplicas: 10 }]];
    assert.deepEqual((await pass(hpa({ [URL_ANNOTATION]: prom.url }), policy)).patches, written);
    const strict = createEndpointPolicy({ ownNamespace: true });
    const byDefault = await pass(hpa({}), strict);
    assert.deepEqual([byDefault.patches, byDefault.failures], [written, []]);
  });

  it("checks only a URL the annotation names, and nothing with no rule on", () => {
    const policy = createEndpointPolicy({ ownNamespace: true });
    const check = (annotations: Record<string, string>, p: EndpointPolicy | undefined) =>
      guardServerUrlProblem(
        parseGuardConfig(hpa(annotations).metadata.annotations, {
          defaultPrometheusUrl: "http://10.0.0.1:9090",
        }).config,
        { hpa: { namespace: "shop", name: "web" }, policy: p },
      );
    assert.equal(check({}, policy), undefined);
    assert.equal(check({ [URL_ANNOTATION]: "http://prometheus.shop.svc:9090" }, policy), undefined);
    assert.equal(check({ [URL_ANNOTATION]: "http://prometheus.b:9090" }, undefined), undefined);
    assert.equal(check({ [URL_ANNOTATION]: "not a url" }, policy), undefined);
    assert.equal(
      check({ [URL_ANNOTATION]: "http://prometheus.b:9090" }, policy),
      `invalid ${URL_ANNOTATION} "http://prometheus.b:9090" of HPA shop/web: not allowed: not a Service in namespace "shop" (--endpoints-in-own-namespace) and not a server given by flags`,
    );
  });
});
