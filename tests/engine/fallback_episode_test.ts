/**
 * The engine's `fallbackStatus()` keeps a plan's last fallback episode for the status page:
 * when the fallback value was first served, what it served (and the replicas it stands for),
 * why, and when and why it ended; nothing before a plan's first fallback.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/cluster/types.ts";
import { createCollectorRegistry } from "../../src/collectors/registry.ts";
import type { CollectContext, Collector } from "../../src/collectors/types.ts";
import { Engine } from "../../src/engine/engine.ts";
import { memoryLogger } from "../../src/engine/logger.ts";
import { MetricStore } from "../../src/store/store.ts";
import { ManualTimers, MemoryCluster, RecordingWriter, settle } from "./support.ts";

/** An HPA with External json-path metric `queue` (every 10 s), fallback past 1 failure to 3. */
function hpa(): KubeObject {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: {
      name: "web",
      namespace: "shop",
      annotations: {
        "metric-config.external.queue.json-path/endpoint": "http://queue.example/",
        "metric-config.external.queue.json-path/json-key": "$.n",
        "metric-config.external.queue.json-path/interval": "10s",
        "metric-config.external.queue.json-path/fallback-failure-threshold": "1",
        "metric-config.external.queue.json-path/fallback-replicas": "3",
      },
    },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
      minReplicas: 1,
      maxReplicas: 10,
      metrics: [{
        type: "External",
        external: {
          metric: { name: "queue", selector: { matchLabels: { type: "json-path" } } },
          target: { type: "AverageValue", averageValue: "10" },
        },
      }],
    },
  };
}

describe("fallbackStatus: the last fallback episode", () => {
  it("says since when, what and why the fallback served, and when and why it ended", async () => {
    const cluster = new MemoryCluster();
    const timers = new ManualTimers();
    let answer: number | Error = 4;
    const engine = new Engine({
      cluster,
      store: new MetricStore({ ttlSeconds: 900 }),
      registry: createCollectorRegistry([{
        type: "json-path",
        metricTypes: ["External"],
        create(): Collector {
          return {
            queryKey: "fake|queue",
            collect(ctx: CollectContext) {
              if (answer instanceof Error) return Promise.reject(answer);
              return Promise.resolve({ samples: [{ value: answer, timestamp: ctx.now() }] });
            },
          };
        },
      }]),
      now: timers.clock,
      setTimer: timers.setTimer,
      clearTimer: timers.clearTimer,
      random: () => 0.5,
      logger: memoryLogger(),
      writer: new RecordingWriter(cluster),
    });
    cluster.set("HorizontalPodAutoscaler", hpa());
    await engine.start();
    await settle();
    const plain = {
      hpa: { namespace: "shop", name: "web" },
      metricType: "External",
      metricName: "queue",
    };
    // no episode yet: no `last`
    assert.deepEqual(engine.fallbackStatus(), [{
      ...plain,
      active: false,
      consecutiveFailures: 0,
    }]);
    answer = new Error("boom");
    await timers.advance(10_000); // 1 failure: at the threshold
    await timers.advance(10_000); // 2 > 1: the fallback value 3 x 10 is served
    const since = timers.now;
    const cause = "2 consecutive failed collections (the last: boom)";
    assert.deepEqual(engine.fallbackStatus(), [{
      ...plain,
      active: true,
      consecutiveFailures: 2,
      last: { since, endedAt: null, value: 30, replicas: 3, cause, endReason: null },
    }]);
    await timers.advance(10_000); // still active: the episode keeps its start
    assert.equal(engine.fallbackStatus()[0].last?.since, since);
    answer = 5;
    await timers.advance(10_000);
    assert.deepEqual(engine.fallbackStatus(), [{
      ...plain,
      active: false,
      consecutiveFailures: 0,
      last: {
        since,
        endedAt: timers.now,
        value: 30,
        replicas: 3,
        cause,
        endReason: "its source answers again",
      },
    }]);
    // a copy: the caller cannot change what the engine keeps
    engine.fallbackStatus()[0].last!.value = 1;
    assert.equal(engine.fallbackStatus()[0].last!.value, 30);
    await engine.stop();
  });
});
