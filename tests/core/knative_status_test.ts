import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  desiredSks,
  paStatusChanged,
  paStatusFor,
  type PaStatusInput,
} from "../../src/core/knative/status.ts";

const T0 = Date.parse("2026-11-25T10:00:00Z");
const T1 = Date.parse("2026-11-25T10:05:00Z");

const READY_SKS = {
  status: {
    serviceName: "test-revision",
    privateServiceName: "test-revision-private",
    conditions: [{ type: "Ready", status: "True" }],
  },
};

function conditions(s: { conditions: { type: string; status: string; reason?: string }[] }) {
  return s.conditions.map((c) => `${c.type}=${c.status}${c.reason ? `(${c.reason})` : ""}`);
}

function input(over: Partial<PaStatusInput> = {}): PaStatusInput {
  return {
    pa: { metadata: { generation: 2 } },
    hpa: { status: { desiredReplicas: 5, currentReplicas: 3 } },
    sks: READY_SKS,
    minScale: 0,
    now: T0,
    ...over,
  };
}

describe("paStatusFor", () => {
  it("follows the HPA and a ready SKS: scales, service names, every condition True", () => {
    const s = paStatusFor(input());
    assert.deepEqual(s, {
      observedGeneration: 2,
      serviceName: "test-revision",
      metricsServiceName: "test-revision-private",
      desiredScale: 5,
      actualScale: 3,
      conditions: [
        { type: "Active", status: "True", lastTransitionTime: "2026-11-25T10:00:00Z" },
        { type: "Ready", status: "True", lastTransitionTime: "2026-11-25T10:00:00Z" },
        { type: "SKSReady", status: "True", lastTransitionTime: "2026-11-25T10:00:00Z" },
        {
          type: "ScaleTargetInitialized",
          status: "True",
          lastTransitionTime: "2026-11-25T10:00:00Z",
        },
      ],
    });
  });

  it("says the SKS is not ready yet, and Ready follows it", () => {
    const s = paStatusFor(
      input({ sks: { status: { conditions: [{ type: "Ready", status: "Unknown" }] } } }),
    );
    assert.deepEqual(conditions(s), [
      "Active=True",
      "Ready=Unknown(NotReady)",
      "SKSReady=Unknown(NotReady)",
      "ScaleTargetInitialized=Unknown",
    ]);
    assert.equal(s.conditions[2].message, "SKS Services are not ready yet");
  });

  it("initializes the scale target only once current replicas reach max(min-scale, initial-scale), then keeps it", () => {
    const below = paStatusFor(input({ minScale: 4 }));
    assert.deepEqual(conditions(below), [
      "Active=True",
      "Ready=Unknown",
      "SKSReady=True",
      "ScaleTargetInitialized=Unknown",
    ]);
    const initial = paStatusFor(input({
      pa: { metadata: { annotations: { "autoscaling.knative.dev/initial-scale": "3" } } },
    }));
    assert.equal(initial.conditions[3].status, "True");
    const reached = paStatusFor(input({ minScale: 4, hpa: { status: { currentReplicas: 4 } } }));
    assert.equal(reached.conditions[3].status, "True");
    // once True it stays, even when the replicas drop
    const later = paStatusFor(input({
      pa: { metadata: {}, status: reached },
      minScale: 4,
      hpa: { status: { currentReplicas: 1 } },
      now: T1,
    }));
    assert.equal(later.conditions[3].status, "True");
    assert.equal(later.conditions[3].lastTransitionTime, "2026-11-25T10:00:00Z");
  });

  it("marks NotOwned and FailedCreate with autoscaler-keda's messages, naming the HPA", () => {
    const notOwned = paStatusFor(input({
      problem: { kind: "not-owned", resource: "HorizontalPodAutoscaler", name: "test-revision" },
    }));
    assert.deepEqual(notOwned.conditions.slice(0, 2), [
      {
        type: "Active",
        status: "False",
        reason: "NotOwned",
        message: 'There is an existing HorizontalPodAutoscaler "test-revision" that we do not own.',
        lastTransitionTime: "2026-11-25T10:00:00Z",
      },
      {
        type: "Ready",
        status: "False",
        reason: "NotOwned",
        message: 'There is an existing HorizontalPodAutoscaler "test-revision" that we do not own.',
        lastTransitionTime: "2026-11-25T10:00:00Z",
      },
    ]);
    assert.equal(notOwned.desiredScale, undefined);
    const failed = paStatusFor(input({
      problem: {
        kind: "failed-create",
        resource: "HorizontalPodAutoscaler",
        name: "test-revision",
      },
    }));
    assert.equal(
      failed.conditions[0].message,
      'Failed to create HorizontalPodAutoscaler "test-revision".',
    );
    const invalid = paStatusFor(input({
      problem: { kind: "invalid", message: 'invalid metric type: "foo"' },
    }));
    assert.deepEqual(conditions(invalid).slice(0, 2), [
      "Active=False(InvalidConfiguration)",
      "Ready=False(InvalidConfiguration)",
    ]);
  });

  it("keeps lastTransitionTime while a condition keeps its status, and reports no change then", () => {
    const first = paStatusFor(input());
    const again = paStatusFor(
      input({ pa: { metadata: { generation: 2 }, status: first }, now: T1 }),
    );
    assert.deepEqual(again, first);
    assert.equal(paStatusChanged(first, again), false);
    const moved = paStatusFor(input({
      pa: { metadata: { generation: 2 }, status: first },
      hpa: { status: { desiredReplicas: 6, currentReplicas: 5 } },
      now: T1,
    }));
    assert.equal(paStatusChanged(first, moved), true);
    assert.deepEqual([moved.desiredScale, moved.actualScale], [6, 5]);
  });
});

describe("desiredSks", () => {
  it("is named after the PA, owned by it, Serve mode with 0 activators, only the metric annotation", () => {
    assert.deepEqual(
      desiredSks({
        metadata: {
          name: "test-revision",
          namespace: "test-namespace",
          uid: "pa-uid",
          labels: { "serving.knative.dev/service": "test" },
          annotations: {
            "autoscaling.knative.dev/metric": "rps",
            "autoscaling.knative.dev/target": "5",
          },
        },
        spec: {
          scaleTargetRef: {
            apiVersion: "apps/v1",
            kind: "Deployment",
            name: "test-revision-deployment",
          },
          protocolType: "h2c",
        },
      }),
      {
        apiVersion: "networking.internal.knative.dev/v1alpha1",
        kind: "ServerlessService",
        metadata: {
          name: "test-revision",
          namespace: "test-namespace",
          labels: { "serving.knative.dev/service": "test" },
          annotations: { "autoscaling.knative.dev/metric": "rps" },
          ownerReferences: [{
            apiVersion: "autoscaling.internal.knative.dev/v1alpha1",
            kind: "PodAutoscaler",
            name: "test-revision",
            uid: "pa-uid",
            controller: true,
            blockOwnerDeletion: true,
          }],
        },
        spec: {
          mode: "Serve",
          objectRef: {
            apiVersion: "apps/v1",
            kind: "Deployment",
            name: "test-revision-deployment",
          },
          protocolType: "h2c",
          numActivators: 0,
        },
      },
    );
  });
});
