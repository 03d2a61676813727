/**
 * The fixture of the API app's tests: a store with a value of every kind, pods, and helpers
 * that read the app and build the Status bodies it answers.
 */
import assert from "node:assert/strict";
import { createApp } from "../../src/api/app.ts";
import type { ApiOptions } from "../../src/api/app.ts";
import type { KubeObject } from "../../src/cluster/types.ts";
import { MetricStore } from "../../src/store/store.ts";
import type { ServedAt, StoredPlan } from "../../src/store/types.ts";

export const T0 = Date.UTC(2024, 0, 2, 3, 4, 5);
export const TS = "2024-01-02T03:04:05Z";
export const CM = "/apis/custom.metrics.k8s.io";
export const EM = "/apis/external.metrics.k8s.io/v1beta1";

export function pod(
  name: string,
  labels: Record<string, string>,
  opts: { ready?: boolean; deleting?: boolean } = {},
): KubeObject {
  return {
    metadata: {
      name,
      namespace: "default",
      labels,
      ...(opts.deleting ? { deletionTimestamp: "2024-01-02T03:00:00Z" } : {}),
    },
    status: {
      conditions: [
        { type: "PodScheduled", status: "True" },
        { type: "Ready", status: opts.ready === false ? "False" : "True" },
      ],
    },
  };
}

export const PODS: KubeObject[] = [
  pod("web-1", { app: "web" }),
  pod("web-2", { app: "other" }),
  pod("web-3", { app: "web" }, { ready: false }),
  pod("web-4", { app: "web" }, { deleting: true }),
  pod("web-5", { app: "api" }),
];

export function custom(
  key: string,
  at: Omit<Extract<ServedAt, { kind: "custom" }>, "kind" | "metricSelector"> & {
    metricSelector?: string;
  },
  extra: Partial<StoredPlan> = {},
): StoredPlan {
  return {
    key,
    hpa: { namespace: at.namespace || "default", name: key.split("#")[0] },
    servedAt: { kind: "custom", metricSelector: "", ...at },
    queryKey: "q-" + key,
    ...extra,
  };
}

export interface Fixture {
  store: MetricStore;
  options: ApiOptions;
  clock: { now: number };
  state: { ready: boolean };
}

export function fixture(overrides: Partial<ApiOptions> = {}): Fixture {
  const store = new MetricStore();
  const clock = { now: T0 };
  const state = { ready: true };
  const plans: [StoredPlan, { objectName?: string; value: number; windowSeconds?: number }[]][] = [
    [
      custom("web#0", {
        namespace: "default",
        groupResource: "pods",
        objectName: null,
        metricName: "rps",
      }),
      [
        { objectName: "web-1", value: 1.5, windowSeconds: 60 },
        { objectName: "web-2", value: 2 },
        { objectName: "web-3", value: 3 },
        { objectName: "web-4", value: 4 },
        { objectName: "web-5", value: 2500 },
      ],
    ],
    [
      custom("web#1", {
        namespace: "default",
        groupResource: "deployments.apps",
        objectName: "web",
        metricName: "requests",
        metricSelector: "path=api",
      }, { metricSelectorObject: { matchLabels: { path: "api" } } }),
      [{ value: 0.25 }],
    ],
    [
      custom("nodes#0", {
        namespace: "",
        groupResource: "nodes",
        objectName: "n1",
        metricName: "load",
      }),
      [{ value: 7 }],
    ],
    [
      custom("ns#0", {
        namespace: "default",
        groupResource: "namespaces",
        objectName: "default",
        metricName: "jobs",
      }),
      [{ value: 12 }],
    ],
    [
      custom("sched#0", {
        namespace: "default",
        groupResource: "scalingschedules.zalando.org",
        objectName: "nightly",
        metricName: "nightly",
      }),
      [{ value: 100 }],
    ],
    [
      {
        key: "worker#0",
        hpa: { namespace: "default", name: "worker" },
        servedAt: {
          kind: "external",
          namespace: "default",
          metricName: "queue-length",
          metricLabels: { queue: "orders", type: "sqs" },
        },
        queryKey: "sqs:orders",
      },
      [{ value: 1200000 }],
    ],
  ];
  for (const [plan, samples] of plans) {
    store.upsertPlan(plan, T0);
    store.recordSuccess(plan.key, samples.map((s) => ({ ...s, timestamp: T0 })), T0);
  }
  const options: ApiOptions = {
    store,
    pods: { listPods: (ns) => (ns === "default" ? PODS : []) },
    now: () => clock.now,
    ready: () => state.ready,
    version: { gitVersion: "v0.1.0", goVersion: "node 20", platform: "linux/amd64" },
    ...overrides,
  };
  return { store, options, clock, state };
}

export async function get(
  options: ApiOptions,
  path: string,
  init?: RequestInit,
): Promise<{ status: number; type: string | null; body: string }> {
  const res = await createApp(options).request(path, init);
  return { status: res.status, type: res.headers.get("content-type"), body: await res.text() };
}

export async function getJson(options: ApiOptions, path: string): Promise<[number, unknown]> {
  const r = await get(options, path);
  assert.equal(r.type, "application/json", `content-type of ${path}: ${r.body}`);
  return [r.status, JSON.parse(r.body)];
}

export function status(code: number, reason: string, message: string, details?: unknown): unknown {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    ...(details ? { details } : {}),
    code,
  };
}

export const POD_REF = (name: string) => ({
  kind: "Pod",
  namespace: "default",
  name,
  apiVersion: "v1",
});
