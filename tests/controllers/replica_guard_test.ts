/**
 * The replica guard (issue 22) against the REAL Prometheus: constant queries (`vector(22.54)`,
 * an empty vector, a scalar, a query error, NaN) through the guard's query path; what it
 * patches, and that it writes nothing on any error, for a follower, in file mode, for an HPA
 * another controller owns, or when nothing changes.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/cluster/types.ts";
import { ReplicaGuard, type ReplicaGuardOptions } from "../../src/controllers/replica_guard.ts";
import { memoryLogger } from "../../src/engine/logger.ts";
import { type RealPrometheus, startPrometheus } from "../fakes/prometheus_server.ts";
import { MemoryCluster, RecordingWriter } from "../engine/support.ts";
import { type AddressInfo, createServer as createNetServer, type Socket } from "node:net";

const NOW = Date.parse("2026-11-25T08:30:00Z");
const STATE = "estafette.io/hpa-scaler-state";

let prom: RealPrometheus;

before(async () => {
  // nothing to scrape: every query here is a constant
  prom = await startPrometheus({ targets: ["127.0.0.1:9"], readyQuery: "vector(1)" });
});

after(async () => {
  await prom?.stop();
});

function hpa(
  annotations: Record<string, string>,
  options: {
    name?: string;
    min?: number;
    max?: number;
    current?: number;
    labels?: Record<string, string>;
    ownerReferences?: unknown[];
  } = {},
): KubeObject {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: {
      name: options.name ?? "web",
      namespace: "shop",
      annotations: { "estafette.io/hpa-scaler": "true", ...annotations },
      ...(options.labels ? { labels: options.labels } : {}),
      ...(options.ownerReferences ? { ownerReferences: options.ownerReferences } : {}),
    },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
      minReplicas: options.min ?? 3,
      maxReplicas: options.max ?? 8,
    },
    status: { currentReplicas: options.current ?? 4 },
  };
}

function setup(objects: KubeObject[], overrides: Partial<ReplicaGuardOptions> = {}) {
  const cluster = new MemoryCluster();
  for (const o of objects) {
    cluster.set(o.kind === "ReplicaSet" ? "ReplicaSet" : "HorizontalPodAutoscaler", o);
  }
  const writer = new RecordingWriter(cluster);
  const logger = memoryLogger();
  const processed: string[] = [];
  const failures: string[] = [];
  const guard = new ReplicaGuard({
    cluster,
    writer,
    write: true,
    lowerBound: 3,
    prometheus: { url: prom.url, tokenFile: null },
    now: () => NOW,
    logger,
    metrics: {
      processed: (ns, status) => processed.push(`${ns} ${status}`),
      failed: (ns, reason) => failures.push(`${ns} ${reason}`),
    },
    ...overrides,
  });
  const current = (name = "web") => cluster.get("HorizontalPodAutoscaler", "shop", name)!;
  return { cluster, writer, logger, guard, processed, failures, current };
}

const QUERY = {
  "estafette.io/hpa-scaler-prometheus-query": "vector(22.54)",
  "estafette.io/hpa-scaler-requests-per-replica": "2.5",
  "estafette.io/hpa-scaler-delta": "-0.5",
};

describe("ReplicaGuard with the real Prometheus", () => {
  it("raises minReplicas (and maxReplicas it reaches) with one merge patch, a Normal event and the state annotation", async () => {
    const s = setup([hpa(QUERY)]);
    await s.guard.runOnce();
    // ceil(-0.5 + 22.54 / 2.5) = ceil(8.516) = 9 >= maxReplicas 8: max becomes 10
    const state =
      `{"enabled":"true","prometheusQuery":"vector(22.54)","requestsPerReplica":2.5,"delta":-0.5,"lastUpdated":"2026-11-25T08:30:00Z","prometheusServerUrl":"${prom.url}","scaleDownMaxRatio":1,"enableScaleDownRatioDeploymentChecking":"false"}`;
    assert.deepEqual(s.writer.patches, [{
      kind: "HorizontalPodAutoscaler",
      name: "shop/web",
      patch: {
        metadata: { annotations: { [STATE]: state } },
        spec: { minReplicas: 9, maxReplicas: 10 },
      },
    }]);
    assert.deepEqual(s.writer.events.map((e) => [e.event.type, e.event.reason, e.event.message]), [
      [
        "Normal",
        "ReplicaGuardChanged",
        "minReplicas 3 -> 9, maxReplicas 8 -> 10: query 22.54 / 2.5 - 0.5",
      ],
    ]);
    assert.deepEqual(s.processed, ["shop succeeded"]);
    assert.deepEqual(s.guard.gauges(), [{
      namespace: "shop",
      hpa: "web",
      minReplicas: 9,
      actualReplicas: 4,
      requestRate: 22.54,
    }]);
    // the next pass sees minReplicas 9: nothing to write
    await s.guard.runOnce();
    assert.equal(s.writer.patches.length, 1);
    assert.deepEqual(s.processed, ["shop succeeded", "shop skipped"]);
  });

  for (
    const [name, query, reason, text] of [
      ["an empty vector", 'up{job="none"}', "empty-result", /empty result/],
      ["a scalar", "scalar(vector(3))", "wrong-result-type", /scalar/],
      ["a query error", "sum(", "request", /400 Bad Request.*parse error/],
      ["NaN", "vector(NaN)", "not-finite", /NaN/],
    ] as const
  ) {
    it(`writes nothing for ${name}, with one Warning event and the reason counted`, async () => {
      const s = setup([hpa({ ...QUERY, "estafette.io/hpa-scaler-prometheus-query": query })]);
      await s.guard.runOnce();
      await s.guard.runOnce();
      assert.deepEqual(s.writer.patches, []);
      const warnings = s.writer.events.filter((e) => e.event.type === "Warning");
      assert.equal(warnings.length, 1, JSON.stringify(s.writer.events));
      assert.equal(warnings[0].event.reason, "ReplicaGuardFailed");
      assert.match(warnings[0].event.message, text);
      assert.ok(
        warnings[0].event.message.startsWith(`replica guard: query ${JSON.stringify(query)}: `),
        warnings[0].event.message,
      );
      assert.deepEqual(s.failures, [`shop ${reason}`, `shop ${reason}`]);
      assert.deepEqual(s.processed, ["shop failed", "shop failed"]);
      assert.equal(s.current().spec.minReplicas, 3);
    });
  }

  it("caps a scale-down at the ratio of status.currentReplicas without a query", async () => {
    const s = setup([hpa({ "estafette.io/hpa-scaler-scale-down-max-ratio": "0.5" }, {
      current: 8,
      min: 1,
      max: 10,
    })]);
    await s.guard.runOnce();
    // 8 - floor(8 x 0.5) = 4
    assert.deepEqual((s.writer.patches[0].patch as { spec: unknown }).spec, { minReplicas: 4 });
    assert.equal(
      s.writer.events[0].event.message,
      "minReplicas 1 -> 4: scale-down cap 8 - floor(8 x 0.5) = 4",
    );
  });

  it("asks the Prometheus an HPA names, and says when there is none", async () => {
    const named = setup([
      hpa({ ...QUERY, "estafette.io/hpa-scaler-prometheus-server-url": prom.url }),
    ], {
      prometheus: null,
    });
    await named.guard.runOnce();
    assert.equal(
      (named.writer.patches[0].patch as { spec: { minReplicas: number } }).spec.minReplicas,
      9,
    );

    const none = setup([hpa(QUERY)], { prometheus: null });
    await none.guard.runOnce();
    assert.deepEqual(none.writer.patches, []);
    assert.match(none.writer.events[0].event.message, /no Prometheus to ask/);
    assert.deepEqual(none.failures, ["shop no-server"]);
  });

  it("times a silent Prometheus out without holding up the other HPAs", async () => {
    // a server that accepts and never answers, counting the connections it holds
    const held = new Set<Socket>();
    const silent = createNetServer((socket) => {
      held.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => held.delete(socket));
    });
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    try {
      const s = setup([
        hpa({ ...QUERY, "estafette.io/hpa-scaler-prometheus-server-url": url }, { name: "slow" }),
        hpa(QUERY, { name: "fast" }),
      ], { queryTimeoutSeconds: 1 });
      // what happened in which order: the fast HPA's write, the slow HPA's timeout
      const order: string[] = [];
      const patch = s.writer.patch.bind(s.writer);
      s.writer.patch = (...args) => {
        order.push(`patched ${args[2]}`);
        return patch(...args);
      };
      const emit = s.writer.emitEvent.bind(s.writer);
      s.writer.emitEvent = (kind, obj, event) => {
        if (event.type === "Warning") order.push(`failed ${obj.metadata.name}`);
        return emit(kind, obj, event);
      };
      await s.guard.runOnce();
      assert.deepEqual(s.writer.patches.map((p) => p.name), ["shop/fast"]);
      // the slow HPA comes first in the pass, yet the fast one was written before its timeout:
      // the queries ran side by side (one at a time, the fast HPA would wait for the timeout)
      assert.deepEqual(order, ["patched fast", "failed slow"]);
      const slow = s.writer.events.find((e) => e.name === "shop/slow");
      assert.match(
        slow!.event.message,
        /^replica guard: query "vector\(22\.54\)": .*(timed out|timeout)/i,
      );
      assert.deepEqual(s.failures, ["shop request"]);
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  });

  it("refuses a link-local Prometheus that an HPA names", async () => {
    const s = setup([hpa({
      ...QUERY,
      "estafette.io/hpa-scaler-prometheus-server-url": "http://169.254.169.254",
    })]);
    await s.guard.runOnce();
    assert.deepEqual(s.writer.patches, []);
    assert.match(s.writer.events[0].event.message, /link-local/);
  });

  it("writes nothing as a follower, in file mode, or for an HPA another controller owns", async () => {
    const follower = setup([hpa(QUERY)], { isLeader: () => false });
    await follower.guard.runOnce();
    assert.deepEqual([follower.writer.patches, follower.writer.events, follower.processed], [
      [],
      [],
      [],
    ]);

    const file = setup([hpa(QUERY)], { write: false });
    await file.guard.runOnce();
    assert.deepEqual(file.writer.patches, []);
    assert.ok(
      file.logger.entries.some((e) =>
        e.message === "replica guard decision (not written: file mode)" &&
        e.fields.message === "minReplicas 3 -> 9, maxReplicas 8 -> 10: query 22.54 / 2.5 - 0.5"
      ),
    );

    const owned = setup([hpa(QUERY, {
      ownerReferences: [{
        apiVersion: "autoscaling.internal.knative.dev/v1alpha1",
        kind: "PodAutoscaler",
        name: "web",
        controller: true,
      }],
    })]);
    await owned.guard.runOnce();
    await owned.guard.runOnce();
    assert.deepEqual(owned.writer.patches, []);
    assert.deepEqual(owned.writer.events.map((e) => e.event.message), [
      "replica guard: HPA shop/web is controlled by PodAutoscaler web, which owns its minReplicas: the replica guard leaves it alone",
    ]);
  });

  it('skips HPAs whose switch is not exactly "true", and stops writing when it is removed', async () => {
    const s = setup([
      hpa({ ...QUERY, "estafette.io/hpa-scaler": "True" }, { name: "a" }),
      hpa({ ...QUERY }, { name: "b" }),
    ]);
    await s.guard.runOnce();
    assert.deepEqual(s.writer.patches.map((p) => p.name), ["shop/b"]);
    const b = s.current("b");
    const annotations = { ...b.metadata.annotations };
    delete annotations["estafette.io/hpa-scaler"];
    s.cluster.set("HorizontalPodAutoscaler", {
      ...b,
      metadata: { ...b.metadata, annotations },
      spec: { ...b.spec, minReplicas: 2 },
    });
    await s.guard.runOnce();
    assert.equal(s.writer.patches.length, 1);
    assert.equal(s.current("b").spec.minReplicas, 2);
    assert.deepEqual(s.guard.gauges(), []);
  });

  it("turns the scale-down cap off while the HPA's workload rolls out (its namespace's ReplicaSets)", async () => {
    const rs = (name: string, namespace: string, replicas: number): KubeObject => ({
      apiVersion: "apps/v1",
      kind: "ReplicaSet",
      metadata: { name, namespace, labels: { app: "web" } },
      status: { replicas },
    });
    const annotations = {
      "estafette.io/hpa-scaler-scale-down-max-ratio": "0.5",
      "estafette.io/hpa-scaler-enable-scale-down-ratio-deployment-checking": "true",
    };
    const rolling = setup([
      hpa(annotations, { current: 8, min: 1, max: 10, labels: { app: "web" } }),
      rs("web-1", "shop", 6),
      rs("web-2", "shop", 2),
    ]);
    await rolling.guard.runOnce();
    // the cap is off: only the lower bound is left
    assert.equal(
      rolling.writer.events[0].event.message,
      "minReplicas 1 -> 3: lower bound 3 (no scale-down cap: deployment in progress)",
    );
    const elsewhere = setup([
      hpa(annotations, { current: 8, min: 1, max: 10, labels: { app: "web" } }),
      rs("web-1", "shop", 8),
      rs("web-1", "other", 2),
    ]);
    await elsewhere.guard.runOnce();
    assert.equal(
      elsewhere.writer.events[0].event.message,
      "minReplicas 1 -> 4: scale-down cap 8 - floor(8 x 0.5) = 4",
    );
  });
});
