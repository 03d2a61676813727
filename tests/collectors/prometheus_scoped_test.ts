/**
 * `--prometheus-enforce-namespace-label` of issue 25 end to end against the REAL Prometheus: a
 * loopback exporter serves one gauge for namespaces `a` (3 + 4) and `b` (100). HPAs of
 * namespace `a` are planned with the scoper the flag makes (src/cli/promql_options.ts), their
 * prometheus collectors are built from the plans as serve builds them, and the replica guard
 * runs its query through the same scoper. What an HPA in `a` reads is `a`'s series only; a
 * query that names `b` is a plan error (or a guard failure) and is never asked.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createPrometheusFactory } from "../../src/collectors/prometheus.ts";
import { prometheusOptionsFromFlags } from "../../src/cli/prometheus_options.ts";
import { promqlScoperFromFlags } from "../../src/cli/promql_options.ts";
import { UsageError } from "../../src/cli/command.ts";
import type { KubeObject } from "../../src/cluster/types.ts";
import type { PromQLScoper } from "../../src/core/kube_metrics_adapter/collector_config.ts";
import { planHpa } from "../../src/core/kube_metrics_adapter/plan.ts";
import { GUARD_FAILED_REASON, ReplicaGuard } from "../../src/controllers/replica_guard.ts";
import { memoryLogger } from "../../src/engine/logger.ts";
import { type RealPrometheus, startPrometheus } from "../fakes/prometheus_server.ts";
import { MemoryCluster, RecordingWriter } from "../engine/support.ts";
import { context } from "./prometheus_support.ts";
import { startServer, type TestServer } from "./servers.ts";

const METRIC = "scoped_requests";
const EXPOSITION = [
  `# TYPE ${METRIC} gauge`,
  `${METRIC}{namespace="a",pod="a-1"} 3`,
  `${METRIC}{namespace="a",pod="a-2"} 4`,
  `${METRIC}{namespace="b",pod="b-1"} 100`,
  "",
].join("\n");

let exporter: TestServer;
let prom: RealPrometheus;
let scope: PromQLScoper;

before(async () => {
  exporter = await startServer("127.0.0.1", 0, (_req, res) => {
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
    res.end(EXPOSITION);
  });
  prom = await startPrometheus({ targets: [`127.0.0.1:${exporter.port}`], readyQuery: METRIC });
  scope = (await promqlScoperFromFlags({ "prometheus-enforce-namespace-label": "namespace" }))!;
});

after(async () => {
  await prom?.stop();
  await exporter?.close();
});

/** An HPA of namespace `a` with an External prometheus metric `requests` of `query`. */
function externalHpa(query: string, extra: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: {
      name: "web",
      namespace: "a",
      annotations: { "metric-config.external.requests.prometheus/query": query, ...extra },
    },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
      minReplicas: 1,
      maxReplicas: 10,
      metrics: [{
        type: "External",
        external: {
          metric: { name: "requests", selector: { matchLabels: { type: "prometheus" } } },
          target: { type: "AverageValue", averageValue: "1" },
        },
      }],
    },
  };
}

/** The plan of `hpa` as serve makes it with the flag set, and its collector's value. */
async function collect(hpa: KubeObject) {
  const [plan] = planHpa(hpa, { scopePromQL: scope });
  if (plan.error !== null) return { query: plan.config.query, error: plan.error };
  const flags = { "prometheus-server": prom.url, "prometheus-query-timeout": 10 };
  const collector = createPrometheusFactory(prometheusOptionsFromFlags(flags)).create({ plan });
  const result = await collector.collect({ ...context(), now: () => Date.now() });
  return { query: plan.config.query, values: result.samples.map((s) => s.value) };
}

describe("--prometheus-enforce-namespace-label with the prometheus collector", () => {
  it("collects only the HPA's namespace: sum over a is 7, not 107", async () => {
    assert.deepEqual(await collect(externalHpa(`sum(${METRIC})`)), {
      query: `sum(${METRIC}{namespace="a"})`,
      values: [7],
    });
  });

  it("scopes the legacy query-name form too", async () => {
    const hpa = externalHpa("", { "metric-config.external.requests.prometheus/my-query": "" });
    hpa.metadata.annotations = {
      "metric-config.external.requests.prometheus/query-name": "my-query",
      "metric-config.external.requests.prometheus/my-query": `max(${METRIC})`,
    };
    const [plan] = planHpa(hpa, { scopePromQL: scope });
    assert.equal(plan.error, null);
    assert.equal(plan.config["my-query"], `max(${METRIC}{namespace="a"})`);
  });

  it("makes a query that names namespace b a plan error, never asked", async () => {
    const q = `sum(${METRIC}{namespace="b"})`;
    assert.deepEqual(await collect(externalHpa(q)), {
      query: q,
      error:
        `invalid query "${q}" for External metric \`requests\` of HPA a/web (annotation metric-config.external.requests.prometheus/query): selector ${METRIC}{namespace="b"} at offset 4 matches namespace="b": the query may select only namespace="a"`,
    });
  });

  it("leaves queries alone without the flag", async () => {
    assert.equal(await promqlScoperFromFlags({}), undefined);
    const [plan] = planHpa(externalHpa(`sum(${METRIC})`), {});
    assert.equal(plan.config.query, `sum(${METRIC})`);
  });

  it("refuses a label that cannot be matched on at start", async () => {
    await assert.rejects(
      promqlScoperFromFlags({ "prometheus-enforce-namespace-label": "__name__" }),
      (e) =>
        e instanceof UsageError && e.message.startsWith(
          'invalid value "__name__" for --prometheus-enforce-namespace-label: ',
        ),
    );
  });
});

/** One guard pass over an HPA of namespace `a` whose query is `query`. */
async function guardPass(query: string) {
  const cluster = new MemoryCluster();
  cluster.set("HorizontalPodAutoscaler", {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: {
      name: "web",
      namespace: "a",
      annotations: {
        "estafette.io/hpa-scaler": "true",
        "estafette.io/hpa-scaler-prometheus-query": query,
        "estafette.io/hpa-scaler-requests-per-replica": "2",
      },
    },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
      minReplicas: 1,
      maxReplicas: 100,
    },
    status: { currentReplicas: 1 },
  });
  const writer = new RecordingWriter(cluster);
  const failures: string[] = [];
  const guard = new ReplicaGuard({
    cluster,
    writer,
    write: true,
    lowerBound: 1,
    prometheus: { url: prom.url, tokenFile: null },
    scopePromQL: scope,
    now: () => Date.parse("2026-11-25T08:30:00Z"),
    logger: memoryLogger(),
    metrics: { processed: () => {}, failed: (ns, reason) => failures.push(`${ns} ${reason}`) },
  });
  await guard.runOnce();
  const last = guard.lastDecision("a", "web");
  await guard.stop();
  return {
    minReplicas: writer.patches.map((p) =>
      (p.patch as { spec: { minReplicas: number } }).spec
        .minReplicas
    ),
    events: writer.events.map((e) => [e.event.type, e.event.reason, e.event.message]),
    failures,
    query: last?.query ?? null,
  };
}

describe("--prometheus-enforce-namespace-label with the replica guard", () => {
  it("runs the guard's query scoped: ceil(7 / 2) = 4 replicas, not ceil(107 / 2)", async () => {
    const r = await guardPass(`sum(${METRIC})`);
    assert.deepEqual([r.minReplicas, r.failures, r.query], [
      [4],
      [],
      `sum(${METRIC}{namespace="a"})`,
    ]);
  });

  it("refuses a guard query for namespace b: a Warning, no write", async () => {
    const q = `sum(${METRIC}{namespace="b"})`;
    const r = await guardPass(q);
    assert.deepEqual([r.minReplicas, r.failures, r.events], [[], ["a query-not-allowed"], [[
      "Warning",
      GUARD_FAILED_REASON,
      `replica guard: invalid estafette.io/hpa-scaler-prometheus-query "${q}" of HPA a/web: selector ${METRIC}{namespace="b"} at offset 4 matches namespace="b": the query may select only namespace="a"`,
    ]]]);
  });
});
