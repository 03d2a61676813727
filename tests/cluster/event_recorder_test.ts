import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/cluster/types.ts";
import { T0, within, withSource } from "./kube_support.ts";

describe("KubeClusterSource", () => {
  it("creates an event once and bumps its count for a repeat within 10 minutes", async () => {
    await withSource({ objects: [] }, async ({ api, source, clock }) => {
      const hpa: KubeObject = {
        apiVersion: "autoscaling/v2",
        kind: "HorizontalPodAutoscaler",
        metadata: { name: "web", namespace: "team-a", uid: "u-1", resourceVersion: "7" },
      };
      const warn = { type: "Warning", reason: "CollectFailed", message: "timeout" } as const;
      await source.emitEvent("HorizontalPodAutoscaler", hpa, warn);
      clock.now += 60_000;
      await source.emitEvent("HorizontalPodAutoscaler", hpa, warn);
      clock.now += 60_000;
      await source.emitEvent("HorizontalPodAutoscaler", hpa, { ...warn, message: "refused" });
      clock.now += 10 * 60_000;
      await source.emitEvent("HorizontalPodAutoscaler", hpa, warn);
      const writes = api.requests.filter((r) => r.method !== "GET");
      assert.deepEqual(
        writes.map((w) => [w.method, w.path]),
        [
          ["POST", "/api/v1/namespaces/team-a/events"],
          [
            "PATCH",
            `/api/v1/namespaces/team-a/events/web.${(BigInt(T0) * 1_000_000n).toString(16)}`,
          ],
          ["POST", "/api/v1/namespaces/team-a/events"],
          ["POST", "/api/v1/namespaces/team-a/events"],
        ],
      );
      assert.deepEqual(writes[0].body, {
        apiVersion: "v1",
        kind: "Event",
        metadata: { name: `web.${(BigInt(T0) * 1_000_000n).toString(16)}`, namespace: "team-a" },
        involvedObject: {
          apiVersion: "autoscaling/v2",
          kind: "HorizontalPodAutoscaler",
          name: "web",
          namespace: "team-a",
          uid: "u-1",
          resourceVersion: "7",
        },
        reason: "CollectFailed",
        message: "timeout",
        type: "Warning",
        source: { component: "hpa-metrics-adapter" },
        reportingComponent: "hpa-metrics-adapter",
        firstTimestamp: "2026-01-15T12:00:00Z",
        lastTimestamp: "2026-01-15T12:00:00Z",
        count: 1,
      });
      assert.equal(writes[1].contentType, "application/merge-patch+json");
      assert.deepEqual(writes[1].body, { count: 2, lastTimestamp: "2026-01-15T12:01:00Z" });
      const events = api.objectsOf("events") as Array<KubeObject & Record<string, unknown>>;
      assert.deepEqual(
        events.map((e) => [e.message, e.count, e.firstTimestamp, e.lastTimestamp]),
        [
          ["timeout", 2, "2026-01-15T12:00:00Z", "2026-01-15T12:01:00Z"],
          ["refused", 1, "2026-01-15T12:02:00Z", "2026-01-15T12:02:00Z"],
          ["timeout", 1, "2026-01-15T12:12:00Z", "2026-01-15T12:12:00Z"],
        ],
      );
    });
  });

  it("writes events one at a time from a queue, and drops new ones while it is full", async () => {
    await withSource(
      { source: { maxQueuedEvents: 2, http: { requestTimeoutMs: 300 } } },
      async ({ api, source, logs }) => {
        const hpaNamed = (name: string): KubeObject => ({
          apiVersion: "autoscaling/v2",
          kind: "HorizontalPodAutoscaler",
          metadata: { name, namespace: "default" },
        });
        const warn = { type: "Warning", reason: "CollectFailed", message: "refused" } as const;
        api.stallNextRequests(1);
        const written = ["hpa-1", "hpa-2", "hpa-3", "hpa-4"].map((n) =>
          source.emitEvent("HorizontalPodAutoscaler", hpaNamed(n), warn)
        );
        await new Promise((r) => setTimeout(r, 100));
        const posts = () =>
          api.requestsTo("POST", /\/events$/).map((r) =>
            (r.body as { involvedObject: { name: string } }).involvedObject.name
          );
        // the first is on its way (the server holds it); the next two wait here, not in flight
        assert.deepEqual(posts(), ["hpa-1"]);
        await within("the queued events", Promise.all(written), 3000);
        assert.deepEqual(posts(), ["hpa-1", "hpa-2", "hpa-3"]);
        assert.deepEqual(logs, [
          "warn: 2 events wait to be written: new events are dropped until they are (the " +
          "first: CollectFailed on HorizontalPodAutoscaler default/hpa-4)",
          "warn: event CollectFailed on HorizontalPodAutoscaler default/hpa-1 not recorded: " +
          "POST /api/v1/namespaces/default/events: request timed out after 300ms",
          "warn: 1 event was dropped while the queue was full",
        ]);
        // once drained, events are taken again
        await source.emitEvent("HorizontalPodAutoscaler", hpaNamed("hpa-5"), warn);
        assert.deepEqual(posts(), ["hpa-1", "hpa-2", "hpa-3", "hpa-5"]);
        // close() ends what still waits without writing it
        api.stallNextRequests(1);
        const pending = ["hpa-6", "hpa-7"].map((n) =>
          source.emitEvent("HorizontalPodAutoscaler", hpaNamed(n), warn)
        );
        await new Promise((r) => setTimeout(r, 50));
        await source.close();
        await within("the events waiting at close", Promise.all(pending), 3000);
        assert.deepEqual(posts(), ["hpa-1", "hpa-2", "hpa-3", "hpa-5", "hpa-6"]);
      },
    );
  });

  it("creates a new event when the one it would bump is gone", async () => {
    await withSource({}, async ({ api, source, clock }) => {
      const hpa: KubeObject = {
        apiVersion: "autoscaling/v2",
        kind: "HorizontalPodAutoscaler",
        metadata: { name: "web", namespace: "default" },
      };
      const ev = { type: "Normal", reason: "Synced", message: "ok" } as const;
      await source.emitEvent("HorizontalPodAutoscaler", hpa, ev);
      const first = api.objectsOf("events")[0];
      api.remove("v1", "Event", "default", first.metadata.name);
      clock.now += 1000;
      await source.emitEvent("HorizontalPodAutoscaler", hpa, ev);
      assert.deepEqual(
        api.requests.filter((r) => r.method !== "GET").map((r) => r.method),
        ["POST", "PATCH", "POST"],
      );
      assert.equal(api.objectsOf("events").length, 1);
    });
  });
});
