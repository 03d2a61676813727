import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { trimForCache } from "../../src/cluster/trim.ts";
import type { KubeObject } from "../../src/cluster/types.ts";

const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

function plain(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v));
}

describe("trimForCache", () => {
  it("keeps of a Pod its metadata without annotations, and phase, IPs and conditions", () => {
    const pod = trimForCache("Pod", {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: "web-1",
        namespace: "shop",
        uid: "u1",
        resourceVersion: "7",
        creationTimestamp: "2026-01-01T00:00:00Z",
        labels: { app: "web" },
        annotations: { "prometheus.io/scrape": "true", [LAST_APPLIED]: "{}" },
        managedFields: [{ manager: "kubelet" }],
        ownerReferences: [{ kind: "ReplicaSet", name: "web-abc" }],
      },
      spec: { containers: [{ name: "app", image: "example/app:1", env: [{ name: "A" }] }] },
      status: {
        phase: "Running",
        podIP: "10.0.0.7",
        podIPs: [{ ip: "10.0.0.7" }],
        conditions: [{ type: "Ready", status: "True", lastTransitionTime: "2026-01-01T00:01:00Z" }],
        containerStatuses: [{ name: "app", ready: true, imageID: "sha256:..." }],
        hostIP: "192.168.0.2",
        qosClass: "BestEffort",
      },
    } as KubeObject);
    assert.deepEqual(plain(pod), {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: "web-1",
        namespace: "shop",
        uid: "u1",
        resourceVersion: "7",
        creationTimestamp: "2026-01-01T00:00:00Z",
        labels: { app: "web" },
        ownerReferences: [{ kind: "ReplicaSet", name: "web-abc" }],
      },
      status: {
        phase: "Running",
        podIP: "10.0.0.7",
        podIPs: [{ ip: "10.0.0.7" }],
        conditions: [{ type: "Ready", status: "True", lastTransitionTime: "2026-01-01T00:01:00Z" }],
      },
    });
    assert.equal(Object.getPrototypeOf(pod.metadata.labels), null);
  });

  it("keeps of a Node its name and labels: no annotations, spec or status", () => {
    const node = trimForCache("Node", {
      apiVersion: "v1",
      kind: "Node",
      metadata: {
        name: "n1",
        uid: "u2",
        labels: { "topology.kubernetes.io/zone": "a" },
        annotations: { "node.alpha.kubernetes.io/ttl": "0" },
        managedFields: [{ manager: "kubelet" }],
      },
      spec: { podCIDR: "10.0.1.0/24", taints: [] },
      status: { capacity: { cpu: "4" }, images: [{ names: ["x"], sizeBytes: 1 }] },
    } as KubeObject);
    assert.deepEqual(plain(node), {
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: "n1", uid: "u2", labels: { "topology.kubernetes.io/zone": "a" } },
    });
  });

  it("drops a workload's pod template, on a copy of its spec, and keeps selector, replicas and status", () => {
    const spec = {
      replicas: 3,
      selector: { matchLabels: { app: "web" } },
      template: { metadata: { labels: { app: "web" } }, spec: { containers: [] } },
    };
    for (const kind of ["Deployment", "StatefulSet", "Rollout"] as const) {
      const obj = trimForCache(kind, {
        metadata: { name: "web", annotations: { a: "1", [LAST_APPLIED]: "{}" }, managedFields: [] },
        spec,
        status: { replicas: 3 },
      } as unknown as KubeObject);
      assert.deepEqual(plain(obj), {
        metadata: { name: "web", annotations: { a: "1" } },
        spec: { replicas: 3, selector: { matchLabels: { app: "web" } } },
        status: { replicas: 3 },
      }, kind);
    }
    assert.notEqual(spec.template, undefined); // the shared spec is left as it was
  });

  it("keeps of an HPA its spec and annotations, and of its status the replica counts", () => {
    const hpa = {
      metadata: { name: "web", annotations: { "metric-config.pods.rps.json-path/port": "80" } },
      spec: { maxReplicas: 5, metrics: [] },
      status: {
        currentReplicas: 2,
        desiredReplicas: 3,
        lastScaleTime: "2026-01-15T12:00:00Z",
        currentMetrics: [{ type: "Pods", pods: { metric: { name: "rps" } } }],
        conditions: [{ type: "AbleToScale", status: "True", message: "recommended size" }],
      },
    };
    assert.deepEqual(plain(trimForCache("HorizontalPodAutoscaler", hpa as unknown as KubeObject)), {
      metadata: { name: "web", annotations: { "metric-config.pods.rps.json-path/port": "80" } },
      spec: { maxReplicas: 5, metrics: [] },
      status: { currentReplicas: 2, desiredReplicas: 3 },
    });
    assert.equal(Object.getPrototypeOf(hpa.metadata.annotations), null);
  });

  it("leaves the spec and status of other kinds alone", () => {
    const schedule = {
      metadata: { name: "night", labels: { team: "a" } },
      spec: { schedules: [{ type: "OneTime", date: "2026-01-15T22:00:00Z" }] },
      status: { active: true, conditions: [{ type: "Active" }] },
    };
    const before = plain(schedule);
    assert.deepEqual(
      plain(trimForCache("ScalingSchedule", schedule as unknown as KubeObject)),
      before,
    );
    assert.equal(Object.getPrototypeOf(schedule.metadata.labels), null);
  });

  it("passes values that are not objects with metadata through", () => {
    assert.equal(trimForCache("Pod", null), null);
    assert.deepEqual(trimForCache("Pod", { kind: "Pod" }), { kind: "Pod" });
  });
  it("keeps every value when it shares repeated ones, past its limit of distinct values too", () => {
    // 1,100 distinct kinds: more than the 1,024 kept, so the last ones stay copies
    const objects = Array.from({ length: 1100 }, (_, i) => ({
      apiVersion: "zalando.org/v1",
      kind: `Kind${i}`,
      metadata: { name: `s${i}`, annotations: { type: `t${i}` }, labels: { kind: `k${i}` } },
      spec: {
        schedules: [{ type: "Repeating", timezone: "UTC", period: { days: ["Mon"] } }],
        deep: [[{ type: "x".repeat(65) }]],
      },
    }));
    const before = objects.map(plain);
    const after = objects.map((o) =>
      plain(trimForCache("ScalingSchedule", o as unknown as KubeObject))
    ) as typeof objects;
    assert.deepEqual(after, before);
    assert.equal(after[1099].kind, "Kind1099");
    assert.equal(after[5].metadata.annotations.type, "t5");
    assert.equal(after[7].spec.deep[0][0].type, "x".repeat(65));
  });
});
