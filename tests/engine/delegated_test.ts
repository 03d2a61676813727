/**
 * The engine with delegates (issue 26): a metric whose collector is unknown or disabled here,
 * of an API with a delegate, is the delegate's: no Warning event, a debug log line, and its
 * plan is marked incompatible so that its reads are not ours. Metrics of an API without a
 * delegate, and metrics of ours with a problem, still get their event.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/cluster/types.ts";
import { createCollectorRegistry } from "../../src/collectors/registry.ts";
import type { CollectorFactory } from "../../src/collectors/types.ts";
import { parseSelector } from "../../src/core/kubernetes/label_selector.ts";
import { Engine, type EngineOptions } from "../../src/engine/engine.ts";
import { memoryLogger } from "../../src/engine/logger.ts";
import { MetricStore } from "../../src/store/store.ts";
import { ManualTimers, MemoryCluster, RecordingWriter, settle } from "./support.ts";

/** A json-path factory for External metrics whose collections never end (not needed here). */
const JSON_PATH: CollectorFactory = {
  type: "json-path",
  metricTypes: ["External"],
  create: () => ({ queryKey: "never", collect: () => new Promise(() => {}) }),
};

/**
 * An HPA with: an External metric of KEDA's (no `type` label: no collector of ours), a Pods
 * metric of prometheus-adapter's (no annotations: no collector), and a json-path External
 * metric of ours whose config is wrong (no endpoint).
 */
const HPA: KubeObject = {
  apiVersion: "autoscaling/v2",
  kind: "HorizontalPodAutoscaler",
  metadata: {
    name: "worker",
    namespace: "shop",
    annotations: { "metric-config.external.broken.json-path/json-key": "$.n" },
  },
  spec: {
    scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "worker" },
    minReplicas: 1,
    maxReplicas: 10,
    metrics: [
      {
        type: "External",
        external: {
          metric: {
            name: "s0-rabbitmq-orders",
            selector: { matchLabels: { "scaledobject.keda.sh/name": "worker" } },
          },
          target: { type: "AverageValue", averageValue: "10" },
        },
      },
      {
        type: "Pods",
        pods: {
          metric: { name: "http_requests_per_second" },
          target: { type: "AverageValue", averageValue: "5" },
        },
      },
      {
        type: "External",
        external: {
          metric: { name: "broken", selector: { matchLabels: { type: "json-path" } } },
          target: { type: "Value", value: "1" },
        },
      },
    ],
  },
};

async function run(delegatedApis: EngineOptions["delegatedApis"]) {
  const cluster = new MemoryCluster();
  const timers = new ManualTimers();
  const store = new MetricStore();
  const writer = new RecordingWriter(cluster);
  const logger = memoryLogger();
  const engine = new Engine({
    cluster,
    store,
    registry: createCollectorRegistry([JSON_PATH]),
    now: timers.clock,
    setTimer: timers.setTimer,
    clearTimer: timers.clearTimer,
    logger,
    writer,
    delegatedApis,
  });
  cluster.set("HorizontalPodAutoscaler", HPA);
  await engine.start();
  await settle();
  await engine.stop();
  const events = writer.events.map((e) => e.event.message.split(":")[0]);
  const cannot = logger.entries.filter((e) => e.message === "metric cannot be collected")
    .map((e) => `${e.level} ${String(e.fields.plan).split("/").pop()}`);
  const external = (metricName: string) =>
    store.lookupExternal(
      { namespace: "shop", metricName, selector: parseSelector("") },
      timers.now,
    );
  return { events, cannot, external, store, now: timers.now };
}

describe("the engine with a delegate", () => {
  it("writes no event for a metric of the delegated API that no collector of ours takes", async () => {
    const r = await run({ custom: false, external: true });
    assert.deepEqual(r.events, [
      "failed to create metrics collector for Pods metric http_requests_per_second",
      "failed to create metrics collector for External metric broken",
    ]);
    assert.deepEqual(r.cannot, [
      "debug s0-rabbitmq-orders",
      "warn http_requests_per_second",
      "warn broken",
    ]);
  });

  it("writes no event for the custom API's metric when that API is delegated", async () => {
    const r = await run({ custom: true, external: false });
    assert.deepEqual(r.events, [
      "failed to create metrics collector for External metric s0-rabbitmq-orders",
      "failed to create metrics collector for External metric broken",
    ]);
  });

  it("writes every event without a delegate", async () => {
    const r = await run(undefined);
    assert.deepEqual(r.events.length, 3);
  });

  it("marks the reads that only incompatible plans cover as not ours", async () => {
    const r = await run({ custom: false, external: true });
    const keda = r.external("s0-rabbitmq-orders");
    assert.ok("miss" in keda);
    assert.equal(keda.miss.unowned, true);
    const broken = r.external("broken");
    assert.ok("miss" in broken);
    assert.equal(broken.miss.unowned, undefined);
    assert.match(broken.miss.reason, /^last collection failed with /);
    const pods = r.store.lookupCustom({
      namespace: "shop",
      groupResource: "pods",
      name: "*",
      metricName: "http_requests_per_second",
      metricSelector: "",
    }, r.now);
    assert.ok("miss" in pods);
    assert.equal(pods.miss.unowned, true);
  });
});
