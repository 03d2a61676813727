/**
 * The replica guard's last decision per HPA (`lastDecision`, for the status page and `explain`)
 * against the REAL Prometheus: a written change, a logged one in file mode, nothing to write, a
 * failed query, a failed patch, and the HPAs it forgets (turned off, deleted).
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/cluster/types.ts";
import { ReplicaGuard, type ReplicaGuardOptions } from "../../src/controllers/replica_guard.ts";
import { type RealPrometheus, startPrometheus } from "../fakes/prometheus_server.ts";
import { MemoryCluster, RecordingWriter } from "../engine/support.ts";

const NOW = Date.parse("2026-11-25T08:30:00Z");

let prom: RealPrometheus;

before(async () => {
  // nothing to scrape: every query here is a constant
  prom = await startPrometheus({ targets: ["127.0.0.1:9"], readyQuery: "vector(1)" });
});

after(async () => {
  await prom?.stop();
});

function hpa(name: string, annotations: Record<string, string>, min = 3): KubeObject {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: {
      name,
      namespace: "shop",
      annotations: { "estafette.io/hpa-scaler": "true", ...annotations },
    },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name },
      minReplicas: min,
      maxReplicas: 8,
    },
    status: { currentReplicas: 4 },
  };
}

const QUERY = {
  "estafette.io/hpa-scaler-prometheus-query": "vector(22.54)",
  "estafette.io/hpa-scaler-requests-per-replica": "2.5",
  "estafette.io/hpa-scaler-delta": "-0.5",
  "estafette.io/hpa-scaler-scale-down-max-ratio": "0.5",
};

function setup(objects: KubeObject[], overrides: Partial<ReplicaGuardOptions> = {}) {
  const cluster = new MemoryCluster();
  for (const o of objects) cluster.set("HorizontalPodAutoscaler", o);
  const writer = new RecordingWriter(cluster);
  let now = NOW;
  const guard = new ReplicaGuard({
    cluster,
    writer,
    write: true,
    lowerBound: 3,
    prometheus: { url: prom.url, tokenFile: null },
    now: () => now,
    ...overrides,
  });
  return { cluster, writer, guard, tick: (ms: number) => now += ms };
}

/** The decision of `vector(22.54)`: ceil(-0.5 + 22.54 / 2.5) = 9; cap floor(4 x 0.5) = 2. */
const RAISED = {
  at: NOW,
  query: "vector(22.54)",
  queryValue: 22.54,
  minReplicas: 9,
  maxScaleDown: 2,
  scaleDownMinimum: 2,
  message: "minReplicas 3 -> 9, maxReplicas 8 -> 10: query 22.54 / 2.5 - 0.5",
  changed: true,
  written: true,
  error: null,
};

describe("ReplicaGuard.lastDecision with the real Prometheus", () => {
  it("keeps the last decision of each guarded HPA: time, query, result, minReplicas, cap", async () => {
    const s = setup([hpa("web", QUERY)]);
    assert.equal(s.guard.lastDecision("shop", "web"), null);
    await s.guard.runOnce();
    assert.deepEqual(s.guard.lastDecision("shop", "web"), RAISED);
    // the next pass sees minReplicas 9: nothing to write, and says so
    s.tick(90_000);
    await s.guard.runOnce();
    assert.deepEqual(s.guard.lastDecision("shop", "web"), {
      ...RAISED,
      at: NOW + 90_000,
      message: "minReplicas 9 unchanged: query 22.54 / 2.5 - 0.5",
      changed: false,
      written: false,
    });
    assert.equal(s.writer.patches.length, 1);
  });

  it("says a change was not written in file mode", async () => {
    const s = setup([hpa("web", QUERY)], { write: false });
    await s.guard.runOnce();
    assert.deepEqual(s.guard.lastDecision("shop", "web"), { ...RAISED, written: false });
    assert.deepEqual(s.writer.patches, []);
  });

  it("keeps why it did nothing: a failed query, a failed patch", async () => {
    const s = setup([
      hpa("bad", { ...QUERY, "estafette.io/hpa-scaler-prometheus-query": "sum(" }),
      hpa("web", QUERY),
    ]);
    s.writer.patch = () => Promise.reject(new Error("409 Conflict"));
    await s.guard.runOnce();
    const bad = s.guard.lastDecision("shop", "bad")!;
    assert.deepEqual({ ...bad, error: bad.error?.slice(0, 40) }, {
      at: NOW,
      query: null,
      queryValue: null,
      minReplicas: null,
      maxScaleDown: null,
      scaleDownMinimum: null,
      message: null,
      changed: false,
      written: false,
      error: 'query "sum(": unsuccessful response "400',
    });
    assert.match(bad.error!, /parse error/);
    assert.deepEqual(s.guard.lastDecision("shop", "web"), {
      ...RAISED,
      written: false,
      error: "cannot patch HPA shop/web: 409 Conflict",
    });
  });

  it("forgets an HPA the guard is turned off for, or that is deleted, and returns copies", async () => {
    const s = setup([hpa("web", QUERY), hpa("gone", QUERY)]);
    await s.guard.runOnce();
    s.guard.lastDecision("shop", "web")!.minReplicas = 100;
    assert.equal(s.guard.lastDecision("shop", "web")!.minReplicas, 9);
    s.cluster.set("HorizontalPodAutoscaler", hpa("web", { "estafette.io/hpa-scaler": "false" }));
    s.cluster.delete("HorizontalPodAutoscaler", "shop", "gone");
    await s.guard.runOnce();
    assert.equal(s.guard.lastDecision("shop", "web"), null);
    assert.equal(s.guard.lastDecision("shop", "gone"), null);
  });
});
