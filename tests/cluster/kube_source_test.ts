import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  KubeClusterSource,
  type KubeClusterSourceOptions,
  replacingMergePatch,
  TokenBucket,
} from "../../src/cluster/kube_source.ts";
import type { KubeObject, WatchEventType } from "../../src/cluster/types.ts";
import { FakeKubeApi, type FakeKubeApiOptions } from "../fakes/kube_api.ts";
import {
  execCredentialScript,
  fakeKubeconfig,
  type FakeKubeconfigOptions,
  writeExecPlugin,
  writeFakeKubeconfig,
} from "../fakes/kubeconfig.ts";
import { parseKubeconfig } from "../../src/cluster/kubeconfig.ts";
import process from "node:process";
import { readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { CertificateAndKey } from "../../src/api/certs.ts";
import { createCertificate } from "../../src/api/cert_issue.ts";

const T0 = Date.parse("2026-01-15T12:00:00Z");

function deployment(name: string, replicas: number, namespace = "default"): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace, labels: { app: name } },
    spec: { replicas, selector: { matchLabels: { app: name } } },
    status: { replicas },
  };
}

function schedule(name: string, status?: unknown): KubeObject {
  return {
    apiVersion: "zalando.org/v1",
    kind: "ScalingSchedule",
    metadata: { name, namespace: "default" },
    spec: { schedules: [] },
    ...(status !== undefined ? { status } : {}),
  };
}

interface Harness {
  api: FakeKubeApi;
  source: KubeClusterSource;
  logs: string[];
  clock: { now: number };
}

/** Runs `body` with a fake API server and a source pointed at it; stops both afterwards. */
async function withSource(
  setup: {
    fake?: FakeKubeApiOptions;
    source?: KubeClusterSourceOptions;
    objects?: KubeObject[];
    kubeconfig?: FakeKubeconfigOptions;
  },
  body: (h: Harness) => Promise<void>,
): Promise<void> {
  const api = await FakeKubeApi.start(setup.fake);
  for (const o of setup.objects ?? []) api.create(o);
  const kubeconfig = await writeFakeKubeconfig(api.url, setup.kubeconfig);
  const logs: string[] = [];
  const clock = { now: T0 };
  const source = new KubeClusterSource({
    kubeconfig: kubeconfig.path,
    logger: (level, message) => logs.push(`${level}: ${message}`),
    now: () => clock.now,
    ...setup.source,
  });
  try {
    await body({ api, source, logs, clock });
  } finally {
    await source.close();
    await api.stop();
    await kubeconfig.remove();
  }
}

async function waitFor(what: string, cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** `promise`, or a rejection naming `what` after `ms` (a TLS failure retries forever). */
async function within<T>(what: string, promise: Promise<T>, ms = 10_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

function names(objs: KubeObject[]): string[] {
  return objs.map((o) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`).sort();
}

type Seen = [WatchEventType, string, string | undefined];

function record(source: KubeClusterSource, kind: "Deployment"): Seen[] {
  const seen: Seen[] = [];
  source.watch(kind, (type, obj, old) => {
    seen.push([
      type,
      `${obj.metadata.name}@${obj.spec?.replicas}`,
      old?.spec?.replicas?.toString(),
    ]);
  });
  return seen;
}

describe("KubeClusterSource", () => {
  it("lists every namespace on the first ensure and serves get and list from the cache", async () => {
    await withSource({
      objects: [
        deployment("web", 2),
        deployment("api", 3, "team-a"),
        deployment("db", 1, "team-b"),
      ],
    }, async ({ api, source }) => {
      await source.ensure("Deployment");
      assert.deepEqual(names(source.list("Deployment")), [
        "default/web",
        "team-a/api",
        "team-b/db",
      ]);
      assert.deepEqual(names(source.list("Deployment", "team-a")), ["team-a/api"]);
      const web = source.get("Deployment", undefined, "web");
      assert.equal(web?.apiVersion, "apps/v1");
      assert.equal(web?.kind, "Deployment");
      assert.equal(web?.spec.replicas, 2);
      assert.equal(source.get("Deployment", "team-a", "web"), undefined);
      // a second ensure does not list again
      await source.ensure("Deployment");
      const lists = api.requestsTo("GET", "/apis/apps/v1/deployments")
        .filter((r) => r.query.watch === undefined);
      assert.equal(lists.length, 1);
      assert.equal(lists[0].authorization, "Bearer fake-token");
      assert.deepEqual(source.list("HorizontalPodAutoscaler"), []);
    });
  });

  it("passes watch events to handlers with the previous object", async () => {
    await withSource({ objects: [deployment("web", 2)] }, async ({ api, source }) => {
      const seen = record(source, "Deployment");
      await source.ensure("Deployment");
      await waitFor("the watch", () => api.openWatches() === 1);
      api.create(deployment("api", 1));
      api.replace(deployment("web", 4));
      api.remove("apps/v1", "Deployment", "default", "api");
      await waitFor("three events", () => seen.length === 4);
      assert.deepEqual(seen, [
        ["ADDED", "web@2", undefined],
        ["ADDED", "api@1", undefined],
        ["MODIFIED", "web@4", "2"],
        ["DELETED", "api@1", "1"],
      ]);
      assert.deepEqual(names(source.list("Deployment")), ["default/web"]);
      assert.equal(source.get("Deployment", "default", "web")?.spec.replicas, 4);
    });
  });

  it("caches listed and watched objects without managedFields and kubectl's copy, labels and annotations as dictionaries", async () => {
    const annotated = (name: string, replicas: number): KubeObject => {
      const d = deployment(name, replicas);
      d.metadata.annotations = {
        [`metric-config.object.${name}.scaling-schedule/interval`]: "30s",
        "kubectl.kubernetes.io/last-applied-configuration": JSON.stringify(d),
      };
      d.metadata.managedFields = [{
        manager: "kubectl",
        operation: "Apply",
        fieldsV1: { "f:spec": { "f:replicas": {} } },
      }];
      return d;
    };
    await withSource({ objects: [annotated("web", 2)] }, async ({ api, source }) => {
      const seen = record(source, "Deployment");
      await source.ensure("Deployment");
      await waitFor("the watch", () => api.openWatches() === 1);
      api.create(annotated("api", 1));
      await waitFor("two events", () => seen.length === 2);
      for (const name of ["web", "api"]) {
        const { labels, annotations, ...rest } = source.get("Deployment", "default", name)!
          .metadata;
        assert.equal(Object.getPrototypeOf(labels), null, `labels of ${name}`);
        assert.equal(Object.getPrototypeOf(annotations), null, `annotations of ${name}`);
        assert.deepEqual({ ...labels }, { app: name });
        assert.deepEqual({ ...annotations }, {
          [`metric-config.object.${name}.scaling-schedule/interval`]: "30s",
        });
        assert.equal("managedFields" in rest, false, `managedFields of ${name}`);
        assert.equal(rest.name, name);
      }
    });
  });

  it("changes a kind's version in a namespace on each event there and nowhere else", async () => {
    await withSource({
      objects: [deployment("web", 2), deployment("api", 3, "team-a")],
    }, async ({ api, source }) => {
      const seen = record(source, "Deployment");
      await source.ensure("Deployment");
      await waitFor("the watch", () => api.openWatches() === 1);
      const versions = (): number[] => [
        source.version("Deployment", "default"),
        source.version("Deployment", "team-a"),
        source.version("Pod", "default"),
      ];
      assert.deepEqual(versions(), [1, 1, 0]);
      api.replace(deployment("web", 4));
      api.create(deployment("db", 1));
      await waitFor("two events", () => seen.length === 4);
      assert.deepEqual(versions(), [3, 1, 0]);
      api.remove("apps/v1", "Deployment", "team-a", "api");
      await waitFor("the delete", () => seen.length === 5);
      assert.deepEqual(versions(), [3, 2, 0]);
    });
  });

  it("resumes a closed watch from the last resourceVersion without listing again", async () => {
    await withSource({ objects: [deployment("web", 2)] }, async ({ api, source }) => {
      const seen = record(source, "Deployment");
      await source.ensure("Deployment");
      await waitFor("the watch", () => api.openWatches() === 1);
      api.replace(deployment("web", 3));
      await waitFor("the change", () => seen.length === 2);
      const rv = api.resourceVersion();
      assert.equal(api.closeWatches(), 1);
      await waitFor("the reconnect", () => api.openWatches() === 1);
      api.replace(deployment("web", 5));
      await waitFor("the change after reconnect", () => seen.length === 3);
      assert.deepEqual(seen[2], ["MODIFIED", "web@5", "3"]);
      const watches = api.requestsTo("GET", "/apis/apps/v1/deployments")
        .filter((r) => r.query.watch === "true");
      assert.deepEqual(watches.map((w) => w.query.resourceVersion), [
        String(Number(rv) - 1),
        rv,
      ]);
      assert.equal(
        api.requestsTo("GET", "/apis/apps/v1/deployments").length - watches.length,
        1,
        "one list only",
      );
    });
  });

  for (const expiredWatch of ["event", "status"] as const) {
    it(`lists again when the watch answers 410 Gone (as ${expiredWatch})`, async () => {
      await withSource({
        fake: { expiredWatch },
        objects: [deployment("web", 2), deployment("old", 1)],
      }, async ({ api, source }) => {
        const seen = record(source, "Deployment");
        await source.ensure("Deployment");
        await waitFor("the watch", () => api.openWatches() === 1);
        api.holdWatchEvents = true;
        api.create(deployment("new", 1));
        api.remove("apps/v1", "Deployment", "default", "old");
        api.replace(deployment("web", 6));
        api.compact();
        api.holdWatchEvents = false;
        api.closeWatches();
        await waitFor("the re-list", () => seen.length === 5);
        assert.deepEqual(seen, [
          ["ADDED", "old@1", undefined],
          ["ADDED", "web@2", undefined],
          ["DELETED", "old@1", "1"],
          ["ADDED", "new@1", undefined],
          ["MODIFIED", "web@6", "2"],
        ]);
        assert.deepEqual(names(source.list("Deployment")), ["default/new", "default/web"]);
        const lists = api.requestsTo("GET", "/apis/apps/v1/deployments")
          .filter((r) => r.query.watch === undefined);
        assert.equal(lists.length, 2);
        await waitFor("the new watch", () => api.openWatches() === 1);
      });
    });
  }

  it("treats a kind whose CRD is not installed as empty, logs once and picks it up later", async () => {
    await withSource({
      fake: { missingGroups: ["zalando.org"] },
      source: { notInstalledRetryMs: 40 },
    }, async ({ api, source, logs }) => {
      await source.ensure("ScalingSchedule");
      assert.deepEqual(source.list("ScalingSchedule"), []);
      assert.equal(source.installed("ScalingSchedule"), false);
      await waitFor(
        "three lists",
        () => api.requestsTo("GET", "/apis/zalando.org/v1/scalingschedules").length >= 3,
      );
      const warnings = logs.filter((l) => l.includes("ScalingSchedule"));
      assert.equal(warnings.length, 1);
      assert.match(warnings[0], /^warn: ScalingSchedule is not served .*404.* every 0s$/);
      api.setGroupInstalled("zalando.org", true);
      api.create(schedule("night"));
      await waitFor("the schedule", () => source.list("ScalingSchedule").length === 1);
      assert.equal(source.installed("ScalingSchedule"), true);
    });
  });

  it("resolves ensure after a failed list, reports the error and fills the cache when a retry works", async () => {
    await withSource({
      source: { backoffBaseMs: 20 },
      objects: [deployment("web", 1)],
    }, async ({ api, source, logs }) => {
      api.failNextRequests(2);
      await within("ensure after a failed list", source.ensure("Deployment"));
      assert.deepEqual(source.list("Deployment"), []);
      assert.equal(
        source.kindError("Deployment"),
        "GET /apis/apps/v1/deployments: HTTP 500: Internal error occurred: injected failure",
      );
      await waitFor("the cache", () => source.list("Deployment").length === 1);
      assert.deepEqual(names(source.list("Deployment")), ["default/web"]);
      assert.equal(source.kindError("Deployment"), null);
      await waitFor("deployments to count as installed", () => source.installed("Deployment"));
      assert.equal(api.requestsTo("GET", "/apis/apps/v1/deployments").length >= 3, true);
      assert.deepEqual(logs, [
        "warn: watch of Deployment (/apis/apps/v1/deployments) failed: GET /apis/apps/v1/deployments: HTTP 500: Internal error occurred: injected failure; retrying in 20ms",
        "warn: watch of Deployment (/apis/apps/v1/deployments) failed: GET /apis/apps/v1/deployments: HTTP 500: Internal error occurred: injected failure; retrying in 40ms",
      ]);
    });
  });

  for (const code of [403, 500]) {
    it(`resolves ensure of a kind whose list keeps failing with ${code}, keeps retrying and closes`, async () => {
      await withSource({
        source: { backoffBaseMs: 20, backoffMaxMs: 40 },
      }, async ({ api, source, logs }) => {
        api.failNextRequests(1_000_000, code);
        const seen: string[] = [];
        source.watch("Rollout", (type, obj) => seen.push(`${type} ${obj.metadata.name}`));
        await within("ensure of a failing kind", source.ensure("Rollout"), 3000);
        assert.deepEqual(source.list("Rollout"), []);
        assert.equal(source.installed("Rollout"), false);
        assert.equal(
          source.kindError("Rollout"),
          `GET /apis/argoproj.io/v1alpha1/rollouts: HTTP ${code}: Internal error occurred: injected failure`,
        );
        assert.equal(source.kindError("Deployment"), null, "a kind not watched has no error");
        await waitFor("three failed lists", () => logs.length >= 3);
        assert.match(logs[2], /failed: .*; retrying in 40ms$/);
        api.failNextRequests(0);
        api.create({
          apiVersion: "argoproj.io/v1alpha1",
          kind: "Rollout",
          metadata: { name: "canary", namespace: "default" },
          spec: { replicas: 1 },
        });
        await waitFor("the rollout", () => seen.length === 1);
        assert.deepEqual(seen, ["ADDED canary"]);
        assert.equal(source.kindError("Rollout"), null);
        // synced once the watch after the list is open
        await waitFor("the rollouts to count as installed", () => source.installed("Rollout"));
        await within("close", source.close(), 3000);
      });
    });
  }

  it("replaces status with a merge patch on the status subresource", async () => {
    await withSource({
      objects: [
        schedule("night", { lastScaled: "a", extra: { x: 1, y: 2 } }),
        {
          apiVersion: "zalando.org/v1",
          kind: "ClusterScalingSchedule",
          metadata: { name: "global" },
          spec: { schedules: [] },
        },
      ],
    }, async ({ api, source }) => {
      await source.ensure("ScalingSchedule");
      await source.updateStatus("ScalingSchedule", "default", "night", {
        lastScaled: "b",
        extra: { x: 3 },
      });
      await source.updateStatus("ClusterScalingSchedule", undefined, "global", { active: true });
      const patches = api.requests.filter((r) => r.method === "PATCH");
      assert.deepEqual(
        patches.map((p) => [p.path, p.contentType, p.body]),
        [
          [
            "/apis/zalando.org/v1/namespaces/default/scalingschedules/night/status",
            "application/merge-patch+json",
            { status: { lastScaled: "b", extra: { x: 3, y: null } } },
          ],
          [
            "/apis/zalando.org/v1/clusterscalingschedules/global/status",
            "application/merge-patch+json",
            { status: { active: true } },
          ],
        ],
      );
      assert.deepEqual(
        api.object("zalando.org/v1", "ScalingSchedule", "default", "night")?.status,
        {
          lastScaled: "b",
          extra: { x: 3 },
        },
      );
      assert.deepEqual(
        api.object("zalando.org/v1", "ClusterScalingSchedule", undefined, "global")?.status,
        { active: true },
      );
      await assert.rejects(
        source.updateStatus("ScalingSchedule", "default", "missing", {}),
        /^Error: update status of ScalingSchedule default\/missing: PATCH \/apis\/zalando.org\/v1\/namespaces\/default\/scalingschedules\/missing\/status: HTTP 404: scalingschedules.zalando.org "missing" not found$/,
      );
    });
  });

  it("reads and sets replicas through the scale subresource", async () => {
    const rollout: KubeObject = {
      apiVersion: "argoproj.io/v1alpha1",
      kind: "Rollout",
      metadata: { name: "canary", namespace: "default" },
      spec: { replicas: 2 },
      status: { replicas: 2 },
    };
    await withSource({
      objects: [deployment("web", 3), rollout, {
        apiVersion: "apps/v1",
        kind: "StatefulSet",
        metadata: { name: "db", namespace: "default" },
        spec: { replicas: 1 },
        status: { replicas: 1 },
      }],
    }, async ({ api, source }) => {
      assert.deepEqual(await source.getScale("Deployment", "default", "web"), {
        specReplicas: 3,
        statusReplicas: 3,
      });
      await source.setScale("Deployment", "default", "web", 5);
      await source.setScale("StatefulSet", "default", "db", 2);
      await source.setScale("Rollout", "default", "canary", 7);
      assert.deepEqual(await source.getScale("Rollout", "default", "canary"), {
        specReplicas: 7,
        statusReplicas: 2,
      });
      const writes = api.requests.filter((r) => r.method !== "GET");
      assert.deepEqual(writes.map((w) => [w.method, w.path, w.contentType, w.body]), [
        [
          "PATCH",
          "/apis/apps/v1/namespaces/default/deployments/web/scale",
          "application/merge-patch+json",
          { spec: { replicas: 5 } },
        ],
        [
          "PATCH",
          "/apis/apps/v1/namespaces/default/statefulsets/db/scale",
          "application/merge-patch+json",
          { spec: { replicas: 2 } },
        ],
        [
          "PATCH",
          "/apis/argoproj.io/v1alpha1/namespaces/default/rollouts/canary/scale",
          "application/merge-patch+json",
          { spec: { replicas: 7 } },
        ],
      ]);
      assert.equal(api.object("apps/v1", "Deployment", "default", "web")?.spec.replicas, 5);
      assert.deepEqual(
        api.requestsTo("GET", /\/scale$/).map((r) => r.path),
        [
          "/apis/apps/v1/namespaces/default/deployments/web/scale",
          "/apis/argoproj.io/v1alpha1/namespaces/default/rollouts/canary/scale",
        ],
      );
      await assert.rejects(
        source.setScale("Deployment", "default", "nope", 1),
        /^Error: set scale of Deployment default\/nope: PATCH \/apis\/apps\/v1\/namespaces\/default\/deployments\/nope\/scale: HTTP 404: deployments.apps "nope" not found$/,
      );
      await assert.rejects(source.getScale("Pod", "default", "x"), /kind "Pod" has no scale/);
    });
  });

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

  it("passes every cached object to the handlers again on resync", async () => {
    await withSource({
      source: { resyncMs: 30 },
      objects: [deployment("web", 2), deployment("api", 1)],
    }, async ({ source }) => {
      const seen = record(source, "Deployment");
      await source.ensure("Deployment");
      await waitFor("a resync", () => seen.length >= 4);
      assert.deepEqual(seen.slice(0, 4), [
        ["ADDED", "api@1", undefined],
        ["ADDED", "web@2", undefined],
        ["MODIFIED", "api@1", "1"],
        ["MODIFIED", "web@2", "2"],
      ]);
    });
  });

  it("leaves no open watch after close", async () => {
    await withSource({ objects: [deployment("web", 1)] }, async ({ api, source }) => {
      await Promise.all([source.ensure("Deployment"), source.ensure("Pod")]);
      await waitFor("two watches", () => api.openWatches() === 2);
      await source.close();
      await waitFor("no watches", () => api.openWatches() === 0);
      api.create(deployment("late", 1));
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(api.openWatches(), 0);
      await source.ensure("Ingress");
      assert.deepEqual(source.list("Ingress"), []);
    });
  });
});

function watchRequests(api: FakeKubeApi, path: string): Record<string, string>[] {
  return api.requestsTo("GET", path).filter((r) => r.query.watch === "true").map((r) => r.query);
}

describe("KubeClusterSource watches", () => {
  it("resumes a watch that stalls (no byte within the idle limit) from its resourceVersion", async () => {
    await withSource({
      objects: [deployment("web", 2)],
      source: { http: { watchIdleMs: 300 } },
    }, async ({ api, source, logs }) => {
      const seen = record(source, "Deployment");
      await source.ensure("Deployment");
      await waitFor("the watch", () => api.openWatches() === 1);
      const rv = api.resourceVersion();
      // the open watch gets nothing more, as over a half-open connection
      api.holdWatchEvents = true;
      api.create(deployment("api", 1));
      api.holdWatchEvents = false;
      await waitFor("the event through a new watch", () => seen.length === 2);
      assert.deepEqual(seen, [["ADDED", "web@2", undefined], ["ADDED", "api@1", undefined]]);
      const watches = watchRequests(api, "/apis/apps/v1/deployments");
      assert.deepEqual(watches.slice(0, 2).map((q) => q.resourceVersion), [rv, rv]);
      assert.equal(api.requestsTo("GET", "/apis/apps/v1/deployments").length - watches.length, 1);
      assert.deepEqual(logs, []);
    });
  });

  it("resumes a watch whose connection drops, after a back-off", async () => {
    await withSource({
      objects: [deployment("web", 2)],
      source: { backoffBaseMs: 50 },
    }, async ({ api, source, logs }) => {
      const seen = record(source, "Deployment");
      await source.ensure("Deployment");
      await waitFor("the watch", () => api.openWatches() === 1);
      assert.equal(api.dropWatches(), 1);
      api.create(deployment("api", 1));
      await waitFor("the event through a new watch", () => seen.length === 2);
      assert.deepEqual(seen, [["ADDED", "web@2", undefined], ["ADDED", "api@1", undefined]]);
      assert.equal(logs.length, 1);
      assert.match(
        logs[0],
        /^warn: watch of Deployment \(\/apis\/apps\/v1\/deployments\) failed: /,
      );
    });
  });

  it("asks the server to end watches after timeoutSeconds and resumes at once", async () => {
    await withSource({
      objects: [deployment("web", 2)],
      source: { http: { watchTimeoutSeconds: 1, random: () => 0.5 } },
    }, async ({ api, source, logs }) => {
      const seen = record(source, "Deployment");
      await source.ensure("Deployment");
      const rv = api.resourceVersion();
      // the fake ends each watch after its timeoutSeconds (1 s); the next one follows at once
      await waitFor(
        "a second watch",
        () => watchRequests(api, "/apis/apps/v1/deployments").length >= 2,
      );
      await waitFor("the watch", () => api.openWatches() === 1);
      api.create(deployment("api", 1));
      await waitFor("the event", () => seen.length === 2);
      const [first, second] = watchRequests(api, "/apis/apps/v1/deployments");
      assert.deepEqual(first, {
        watch: "true",
        allowWatchBookmarks: "true",
        timeoutSeconds: "1",
        resourceVersion: rv,
      });
      assert.equal(second.resourceVersion, rv);
      assert.deepEqual(logs, []);
    });
  });
});

/** Whether a process runs (a zombie counts as ended). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/** Runs `body` and answers the unhandled promise rejections seen meanwhile. */
async function unhandledRejections(body: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const listener = (reason: unknown): void => void seen.push(String(reason));
  process.on("unhandledRejection", listener);
  try {
    await body();
    // rejections are reported after the microtasks of the turn that made them
    await new Promise((r) => setTimeout(r, 50));
  } finally {
    process.off("unhandledRejection", listener);
  }
  return seen;
}

describe("KubeClusterSource background failures", () => {
  it("recovers a watch whose credentials fail at a reconnect, with no unhandled rejection", async () => {
    const api = await FakeKubeApi.start();
    api.create(deployment("web", 2));
    // an exec plugin whose credential expires at once (so every request runs it), failing as
    // many times as the file "failures" says
    const plugin = await writeExecPlugin([
      'n=$(cat "$(dirname "$0")/failures" 2>/dev/null || echo 0)',
      'if [ "$n" -gt 0 ]; then',
      '  echo $((n - 1)) > "$(dirname "$0")/failures"',
      '  echo "aws-iam-authenticator: no credentials" >&2',
      "  exit 1",
      "fi",
      execCredentialScript("fake-token", "2000-01-01T00:00:00Z"),
    ].join("\n"));
    const kc = parseKubeconfig(fakeKubeconfig(api.url, { exec: { command: plugin.path } }));
    const logs: string[] = [];
    const source = new KubeClusterSource({
      kubeConfig: kc,
      backoffBaseMs: 20,
      logger: (level, message) => logs.push(`${level}: ${message}`),
    });
    try {
      const rejections = await unhandledRejections(async () => {
        const seen = record(source, "Deployment");
        await source.ensure("Deployment");
        await waitFor("the watch", () => api.openWatches() === 1);
        await writeFile(join(plugin.dir, "failures"), "2");
        api.closeWatches();
        await waitFor("the watch after the failures", () => api.openWatches() === 1);
        api.create(deployment("api", 1));
        await waitFor("the event", () => seen.length === 2);
        assert.deepEqual(seen, [["ADDED", "web@2", undefined], ["ADDED", "api@1", undefined]]);
      });
      assert.deepEqual(rejections, []);
      const failure =
        `exec plugin "${plugin.path}" of user "fake" exited with code 1: aws-iam-authenticator: no credentials`;
      assert.deepEqual(logs, [
        `warn: watch of Deployment (/apis/apps/v1/deployments) failed: ${failure}; retrying in 20ms`,
        `warn: watch of Deployment (/apis/apps/v1/deployments) failed: ${failure}; retrying in 40ms`,
      ]);
      assert.deepEqual(
        [...new Set(api.requests.map((r) => r.authorization))],
        ["Bearer fake-token"],
      );
    } finally {
      await source.close();
      await api.stop();
      await plugin.remove();
    }
  });

  it("skips malformed watch events with an error, with no unhandled rejection", async () => {
    await withSource({ objects: [deployment("web", 2)] }, async ({ api, source, logs }) => {
      const rejections = await unhandledRejections(async () => {
        const seen = record(source, "Deployment");
        await source.ensure("Deployment");
        await waitFor("the watch", () => api.openWatches() === 1);
        api.sendToWatches(JSON.stringify({ type: "ADDED", object: { kind: "Deployment" } }));
        api.sendToWatches(JSON.stringify({ type: "MODIFIED", object: null }));
        api.sendToWatches(JSON.stringify({ type: "ERROR", object: null }));
        api.sendToWatches(JSON.stringify({ type: "BOOKMARK" }));
        api.create(deployment("api", 1));
        await waitFor("the event after them", () => seen.length === 2);
        assert.deepEqual(seen, [["ADDED", "web@2", undefined], ["ADDED", "api@1", undefined]]);
      });
      assert.deepEqual(rejections, []);
      assert.deepEqual(logs, [
        "error: watch of Deployment (/apis/apps/v1/deployments) sent a malformed ADDED event: ignored",
        "error: watch of Deployment (/apis/apps/v1/deployments) sent a malformed MODIFIED event: ignored",
        "error: watch of Deployment (/apis/apps/v1/deployments) sent a malformed ERROR event: ignored",
        "error: watch of Deployment (/apis/apps/v1/deployments) sent a malformed BOOKMARK event: ignored",
      ]);
    });
  });
});

describe("KubeClusterSource request timeouts", () => {
  const hpa: KubeObject = {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name: "web", namespace: "default" },
  };
  const cases: Array<[string, (s: KubeClusterSource) => Promise<unknown>, string]> = [
    [
      "a TokenReview through apiRequest",
      (s) => s.apiRequest("POST", "/apis/authentication.k8s.io/v1/tokenreviews", { spec: {} }),
      "POST /apis/authentication.k8s.io/v1/tokenreviews: request timed out after 200ms",
    ],
    [
      "a ConfigMap read through apiRequest",
      (s) =>
        s.apiRequest(
          "GET",
          "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication",
        ),
      "GET /api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication: request timed out after 200ms",
    ],
    [
      "a scale read",
      (s) => s.getScale("Deployment", "default", "web"),
      "get scale of Deployment default/web: GET /apis/apps/v1/namespaces/default/deployments/web/scale: request timed out after 200ms",
    ],
    [
      "a scale write",
      (s) => s.setScale("Deployment", "default", "web", 3),
      "set scale of Deployment default/web: PATCH /apis/apps/v1/namespaces/default/deployments/web/scale: request timed out after 200ms",
    ],
    [
      "a status write",
      (s) => s.updateStatus("ScalingSchedule", "default", "night", { active: true }),
      "update status of ScalingSchedule default/night: PATCH /apis/zalando.org/v1/namespaces/default/scalingschedules/night/status: request timed out after 200ms",
    ],
    [
      "a status write of a core kind",
      (s) => s.updateStatus("Pod", "default", "web-1", { phase: "Running" }),
      "update status of Pod default/web-1: PATCH /api/v1/namespaces/default/pods/web-1/status: request timed out after 200ms",
    ],
  ];
  for (const [name, call, message] of cases) {
    it(`ends ${name} that gets no answer after the request timeout, naming method and path`, async () => {
      await withSource({ source: { http: { requestTimeoutMs: 200 } } }, async ({ api, source }) => {
        api.stallNextRequests(1);
        const started = Date.now();
        await assert.rejects(within(name, call(source), 3000), (e: Error) => {
          assert.equal(e.message, message);
          return true;
        });
        assert.equal(Date.now() - started < 2000, true);
        assert.equal(api.requests.length, 1);
      });
    });
  }

  it("ends an event that gets no answer and logs it", async () => {
    await withSource(
      { source: { http: { requestTimeoutMs: 200 } } },
      async ({ api, source, logs }) => {
        api.stallNextRequests(1);
        await within(
          "the event",
          source.emitEvent("HorizontalPodAutoscaler", hpa, {
            type: "Warning",
            reason: "CollectFailed",
            message: "timeout",
          }),
          3000,
        );
        assert.deepEqual(logs, [
          "warn: event CollectFailed on HorizontalPodAutoscaler default/web not recorded: POST /api/v1/namespaces/default/events: request timed out after 200ms",
        ]);
      },
    );
  });

  it("ends a request whose credentials never come (a hung exec plugin)", async () => {
    const api = await FakeKubeApi.start();
    // the plugin's pid, then a hang: close() must kill it
    const plugin = await writeExecPlugin('echo $$ > "$(dirname "$0")/pid"\nexec sleep 60');
    const kc = parseKubeconfig(fakeKubeconfig(api.url, { exec: { command: plugin.path } }));
    const source = new KubeClusterSource({ kubeConfig: kc, http: { requestTimeoutMs: 200 } });
    try {
      await assert.rejects(
        within("the request", source.apiRequest("GET", "/api/v1/namespaces/default/pods"), 3000),
        /^Error: GET \/api\/v1\/namespaces\/default\/pods: request timed out after 200ms$/,
      );
      await assert.rejects(
        within("the scale read", source.getScale("Deployment", "default", "web"), 3000),
        /^Error: get scale of Deployment default\/web: GET \/apis\/apps\/v1\/namespaces\/default\/deployments\/web\/scale: request timed out after 200ms$/,
      );
      assert.deepEqual(api.requests, []);
      const pid = Number(await readFile(join(plugin.dir, "pid"), "utf8"));
      assert.equal(alive(pid), true, "the plugin runs until close");
      await source.close();
      await waitFor("the plugin to end", () => !alive(pid));
    } finally {
      await source.close();
      await api.stop();
      await plugin.remove();
    }
  });

  it("gives requests 10 seconds by default", async () => {
    await withSource({}, async ({ source }) => {
      assert.equal(source.http.requestTimeoutMs, 10_000);
    });
  });
});

describe("KubeClusterSource over HTTPS", () => {
  const ca = createCertificate({ commonName: "fake-cluster-ca", isCa: true });
  const serving = createCertificate({
    commonName: "fake-apiserver",
    hosts: ["127.0.0.1"],
    issuer: ca,
    extendedKeyUsages: ["serverAuth"],
  });
  const client = createCertificate({
    commonName: "hpa-metrics-adapter",
    issuer: ca,
    extendedKeyUsages: ["clientAuth"],
  });
  const tls = (clientCa?: CertificateAndKey) => ({
    cert: serving.cert,
    key: serving.key,
    ...(clientCa ? { clientCa: clientCa.cert } : {}),
  });

  it("verifies the server with the kubeconfig's certificate-authority-data", async () => {
    await withSource({
      fake: { tls: tls() },
      kubeconfig: { ca: ca.cert },
      objects: [deployment("web", 2)],
    }, async ({ api, source, logs }) => {
      assert.match(api.url, /^https:\/\/127\.0\.0\.1:\d+$/);
      const seen = record(source, "Deployment");
      await within("the first list", source.ensure("Deployment"));
      await waitFor("the watch", () => api.openWatches() === 1);
      api.create(deployment("api", 1));
      await waitFor("the watch event", () => seen.length === 2);
      // a typed client (scale subresource) and a plain request go the same way
      assert.deepEqual(await source.getScale("Deployment", "default", "web"), {
        specReplicas: 2,
        statusReplicas: 2,
      });
      const res = await source.apiRequest(
        "GET",
        "/apis/apps/v1/namespaces/default/deployments/api",
      );
      assert.equal(res.status, 200);
      assert.equal((res.body as KubeObject).metadata.name, "api");
      assert.deepEqual(
        [...new Set(api.requests.map((r) => r.authorization))],
        ["Bearer fake-token"],
      );
      assert.deepEqual(logs, []);
    });
  });

  it("presents the kubeconfig's client certificate", async () => {
    await withSource({
      fake: { tls: tls(ca) },
      kubeconfig: { ca: ca.cert, client },
      objects: [deployment("web", 2)],
    }, async ({ api, source }) => {
      await within("the first list", source.ensure("Deployment"));
      await waitFor("the watch", () => api.openWatches() === 1);
      await source.setScale("Deployment", "default", "web", 3);
      assert.deepEqual(
        api.requests.map((r) => [r.method, r.query.watch ?? "", r.clientAuthorized]),
        [
          ["GET", "", true],
          ["GET", "true", true],
          ["PATCH", "", true],
        ],
      );
    });
  });

  it("refuses a server whose certificate another CA signed", async () => {
    const otherCa = createCertificate({ commonName: "other-ca", isCa: true });
    await withSource({
      fake: { tls: tls() },
      kubeconfig: { ca: otherCa.cert },
      source: { backoffBaseMs: 50, backoffMaxMs: 50 },
    }, async ({ api, source, logs }) => {
      await within("ensure after a failed list", source.ensure("Deployment"));
      assert.match(source.kindError("Deployment") ?? "", /./);
      await waitFor("two failed lists", () => logs.length >= 2);
      assert.equal(source.installed("Deployment"), false);
      assert.deepEqual(source.list("Deployment"), []);
      assert.deepEqual(api.requests, []);
      assert.match(
        logs[0],
        /^warn: watch of Deployment \(\/apis\/apps\/v1\/deployments\) failed: .+; retrying in 50ms$/,
      );
    });
  });
});

describe("replacingMergePatch", () => {
  const cases: Array<[string, unknown, unknown, unknown]> = [
    ["no old status", undefined, { a: 1 }, { a: 1 }],
    ["removed keys become null", { a: 1, b: 2 }, { a: 3 }, { a: 3, b: null }],
    ["nested objects", { o: { x: 1, y: 2 } }, { o: { x: 1 } }, { o: { x: 1, y: null } }],
    ["arrays replace", { l: [1, 2] }, { l: [3] }, { l: [3] }],
    ["null status", { a: 1 }, null, null],
  ];
  for (const [name, from, to, want] of cases) {
    it(name, () => assert.deepEqual(replacingMergePatch(from, to), want));
  }
});

describe("TokenBucket", () => {
  it("lets a burst through and then spaces requests by 1/qps", async () => {
    let now = 0;
    const slept: number[] = [];
    const bucket = new TokenBucket({
      qps: 10,
      burst: 2,
      now: () => now,
      sleep: async (ms) => void slept.push(ms),
    });
    const waits = [];
    for (let i = 0; i < 4; i++) waits.push(await bucket.take());
    assert.deepEqual(waits, [0, 0, 100, 200]);
    now = 1000;
    assert.equal(await bucket.take(), 0);
    assert.deepEqual(slept, [100, 200]);
  });

  it("does not limit with qps 0", async () => {
    const bucket = new TokenBucket({ qps: 0, burst: 1 });
    for (let i = 0; i < 3; i++) assert.equal(await bucket.take(), 0);
  });
});
