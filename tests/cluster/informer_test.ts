import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { KubeClusterSource } from "../../src/cluster/kube_source.ts";
import { parseKubeconfig } from "../../src/cluster/kubeconfig.ts";
import type { KubeObject } from "../../src/cluster/types.ts";
import { FakeKubeApi } from "../fakes/kube_api.ts";
import { execCredentialScript, fakeKubeconfig, writeExecPlugin } from "../fakes/kubeconfig.ts";
import {
  deployment,
  names,
  record,
  schedule,
  unhandledRejections,
  waitFor,
  watchRequests,
  within,
  withSource,
} from "./kube_support.ts";

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
      // each namespace lists its own objects, in the order they came, changes included
      assert.deepEqual(
        source.list("Deployment", "default").map((d) => `${d.metadata.name}@${d.spec.replicas}`),
        ["web@4", "db@1"],
      );
      assert.deepEqual(source.list("Deployment", "team-a"), []);
      assert.deepEqual(source.list("Deployment", "team-b"), []);
      assert.deepEqual(names(source.list("Deployment")), ["default/db", "default/web"]);
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
