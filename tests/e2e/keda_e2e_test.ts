/**
 * KEDA's ScaledObjects served without KEDA (issue 47) on the real control plane: the adapter
 * runs with `--keda-scaled-objects` (the harness's default), deploy/crds/keda's CRDs and
 * deploy/components/keda's RBAC are installed. A ScaledObject with a prometheus trigger (the
 * harness's Prometheus), a metrics-api trigger (a pod's JSON endpoint, its API key from a Secret
 * through a TriggerAuthentication) and a cron trigger gets KEDA's HPA and status; the metrics are
 * read through the aggregator as the HPA controller reads them, and the real HPA controller
 * scales the Deployment on them. An edit of the HPA is reverted; a bad trigger shows KEDA's
 * message in `Ready`; a ScaledObject whose HPA keda-operator manages is left alone.
 *
 * Then side by side with KEDA v2.20.2 itself (built from its Go module, tests/e2e/keda_tool.ts):
 * its operator and metrics server run in the harness's network namespace, watching one
 * namespace, whose ScaledObjects carry the label `e2e.hpa-metrics-adapter/keda: "true"` that
 * this adapter's selector leaves out; the same ScaledObjects, on the same sources, in a second
 * namespace are this adapter's. Both HPAs must be equal but for the namespace, owner uid,
 * `app.kubernetes.io/managed-by`/`version` and that label; the statuses' reconcile fields and
 * `Ready` equal; each served value equal (read from KEDA's metrics server and through the
 * aggregator from this adapter at the same moment).
 *
 * Then KEDA's scale loop side by side: a ScaledObject with `minReplicaCount: 0` on a metrics-api
 * trigger whose value the test moves above activation, to zero and back, in both namespaces
 * (KEDA's HPA reads KEDA's metrics server through this adapter, its delegate): the replica counts
 * agree at each step, and both emit KEDA's events.
 *
 *   HPA_E2E_ADAPTER_ARGS="--keda-scaled-object-selector=e2e.hpa-metrics-adapter/keda!=true \
 *     --delegate-external-metrics=https://10.213.0.3:16443 --delegate-insecure-skip-tls-verify \
 *     --delegate-token-file=$PWD/.e2e/adapter.token --delegate-discovery-interval=2s" \
 *     node --import tsx tests/e2e/harness.ts up
 *   node --import tsx --test tests/e2e/keda_e2e_test.ts
 *   node --import tsx tests/e2e/harness.ts down
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { E2E, kubectl, readState, ROOT, STATE_DIR, waitFor } from "./harness.ts";
import { ensureKeda, kedaCerts, kedaCrdFiles } from "./keda_tool.ts";
import { ANNOTATIONS } from "./kubelet.ts";
import { createKubeClient, KubeApiError, loadKubeconfig } from "./kube_client.ts";
import type { KubeClient } from "./kube_client.ts";
import { VERSION } from "../../src/cli/version.ts";
import {
  CreateQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";

// deno-lint-ignore no-explicit-any
type Obj = any;

const state = readState();
const WAIT_MS = 90_000;

const SKIP: string | false = !state
  ? "the e2e harness is not up"
  : !state.prometheus
  ? "no Prometheus server (Debian package prometheus)"
  : !state.keda
  ? "the adapter does not serve ScaledObjects (--keda-scaled-objects=false)"
  : false;
// in the harness's own run (HPA_E2E_REQUIRED) a skip would hide a phase that did not run
if (SKIP && process.env.HPA_E2E_REQUIRED) {
  throw new Error(
    `this phase cannot run: ${SKIP} (run it with \`HPA_E2E_SUITE=tests/e2e/keda_e2e_test.ts node --import tsx tests/e2e/harness.ts test\`)`,
  );
}

const kube: KubeClient | null = state ? createKubeClient(loadKubeconfig(state.kubeconfig)) : null;

const SO_LABEL = "scaledobject.keda.sh/name";
const BEHAVIOR = {
  scaleUp: {
    stabilizationWindowSeconds: 0,
    selectPolicy: "Max",
    policies: [{ type: "Percent", value: 900, periodSeconds: 1 }],
  },
  scaleDown: { selectPolicy: "Disabled" },
};

function isReady(pod: Obj): boolean {
  return (pod.status?.conditions ?? []).some((c: Obj) => c.type === "Ready" && c.status === "True");
}

describe("e2e: KEDA ScaledObjects", { skip: SKIP, timeout: 10 * 60_000 }, () => {
  const ns = `e2e-keda-${Math.random().toString(36).slice(2, 7)}`;
  const path = (group: string, resource: string, name = "") =>
    `/apis/${group}/namespaces/${ns}/${resource}${name ? `/${name}` : ""}`;
  const so = (name: string): Promise<Obj> =>
    kube!.request("GET", path("keda.sh/v1alpha1", "scaledobjects", name));
  const hpa = (name: string): Promise<Obj> =>
    kube!.request("GET", path("autoscaling/v2", "horizontalpodautoscalers", name));
  const events = async (name: string): Promise<Obj[]> =>
    ((await kube!.request("GET", `/api/v1/namespaces/${ns}/events`)).items as Obj[])
      .filter((e) => e.involvedObject?.kind === "ScaledObject" && e.involvedObject.name === name);
  let apiIp = "";

  before(async () => {
    await kube!.request("POST", "/api/v1/namespaces", {
      body: { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } },
    });
    await waitFor(() => kube!.get(`/api/v1/namespaces/${ns}/serviceaccounts/default`), {
      what: `service account default in ${ns}`,
      timeoutMs: WAIT_MS,
    });
    // the metrics-api trigger's endpoint: a pod serving a JSON document on every path
    await kube!.request("POST", `/api/v1/namespaces/${ns}/pods`, {
      body: {
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          name: "stats",
          namespace: ns,
          annotations: { [ANNOTATIONS.metrics]: JSON.stringify({ queue: { depth: 12 } }) },
        },
        spec: {
          containers: [{
            name: "stats",
            image: "e2e.invalid/stats:1",
            ports: [{ containerPort: 8080 }],
          }],
        },
      },
    });
    apiIp = await waitFor(async () => {
      const p = await kube!.request("GET", `/api/v1/namespaces/${ns}/pods/stats`);
      return isReady(p) ? p.status.podIP as string : undefined;
    }, { what: "pod stats ready", timeoutMs: WAIT_MS });
    await kube!.request("POST", `/api/v1/namespaces/${ns}/secrets`, {
      body: {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "stats-key", namespace: ns },
        stringData: { key: "k-42" },
      },
    });
    await kube!.request("POST", path("keda.sh/v1alpha1", "triggerauthentications"), {
      body: {
        apiVersion: "keda.sh/v1alpha1",
        kind: "TriggerAuthentication",
        metadata: { name: "stats-key", namespace: ns },
        spec: { secretTargetRef: [{ parameter: "apiKey", name: "stats-key", key: "key" }] },
      },
    });
    for (const name of ["web", "bad", "legacy"]) {
      await kube!.request("POST", path("apps/v1", "deployments"), {
        body: {
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name, namespace: ns },
          spec: {
            replicas: 1,
            selector: { matchLabels: { app: name } },
            template: {
              metadata: { labels: { app: name } },
              spec: { containers: [{ name: "app", image: "e2e.invalid/app:1" }] },
            },
          },
        },
      });
    }
  });

  after(async () => {
    if (!process.env.HPA_E2E_KEEP) {
      await kube!.request("DELETE", `/api/v1/namespaces/${ns}`).catch(() => {});
    }
  });

  it("writes KEDA's HPA and status, serves the triggers' values and the HPA scales on them", async () => {
    await kube!.request("POST", path("keda.sh/v1alpha1", "scaledobjects"), {
      body: {
        apiVersion: "keda.sh/v1alpha1",
        kind: "ScaledObject",
        metadata: { name: "web", namespace: ns, labels: { team: "shop" } },
        spec: {
          scaleTargetRef: { name: "web" },
          maxReplicaCount: 10,
          advanced: { horizontalPodAutoscalerConfig: { behavior: BEHAVIOR } },
          triggers: [
            {
              type: "prometheus",
              metadata: {
                serverAddress: state!.prometheus!.url,
                query: "vector(6)",
                threshold: "2",
              },
            },
            {
              type: "metrics-api",
              metadata: {
                url: `http://${apiIp}:8080/stats`,
                valueLocation: "queue.depth",
                targetValue: "3",
                authMode: "apiKey",
              },
              authenticationRef: { name: "stats-key" },
            },
            {
              type: "cron",
              metadata: {
                timezone: "Etc/UTC",
                start: "0 0 * * *",
                end: "59 23 * * *",
                desiredReplicas: "2",
              },
            },
          ],
        },
      },
    });
    const created = await waitFor(() => hpa("keda-hpa-web").catch(() => undefined), {
      what: "HPA keda-hpa-web",
      timeoutMs: WAIT_MS,
    });
    const scaledObject = await so("web");
    assert.deepEqual(created.metadata.labels, {
      "app.kubernetes.io/name": "keda-hpa-web",
      "app.kubernetes.io/version": VERSION,
      "app.kubernetes.io/part-of": "web",
      "app.kubernetes.io/managed-by": "hpa-metrics-adapter",
      team: "shop",
      [SO_LABEL]: "web",
    });
    assert.deepEqual(created.metadata.ownerReferences, [{
      apiVersion: "keda.sh/v1alpha1",
      kind: "ScaledObject",
      name: "web",
      uid: scaledObject.metadata.uid,
      controller: true,
      blockOwnerDeletion: true,
    }]);
    const selector = { matchLabels: { [SO_LABEL]: "web" } };
    assert.deepEqual(created.spec.metrics, [
      {
        type: "External",
        external: {
          metric: { name: "s0-prometheus", selector },
          target: { type: "AverageValue", averageValue: "2" },
        },
      },
      {
        type: "External",
        external: {
          metric: { name: "s1-metric-api-queue-depth", selector },
          target: { type: "AverageValue", averageValue: "3" },
        },
      },
      {
        type: "External",
        external: {
          metric: { name: "s2-cron-Etc-UTC-00xxx-5923xxx", selector },
          target: { type: "AverageValue", averageValue: "1" },
        },
      },
    ]);
    assert.deepEqual(
      [created.spec.minReplicas, created.spec.maxReplicas, created.spec.scaleTargetRef],
      [1, 10, { apiVersion: "apps/v1", kind: "Deployment", name: "web" }],
    );
    // the ScaledObject: labelled by name, and its status as KEDA's reconcile writes it
    const ready = await waitFor(async () => {
      const o = await so("web");
      return o.status?.hpaName === "keda-hpa-web" ? o : undefined;
    }, { what: "ScaledObject web's status", timeoutMs: WAIT_MS });
    assert.equal(ready.metadata.labels[SO_LABEL], "web");
    const { conditions, lastActiveTime, triggersActivity, ...fields } = ready.status;
    // the scale loop's fields (its first check runs at once): all three triggers active
    if (triggersActivity !== undefined) {
      assert.deepEqual(triggersActivity, {
        "s0-prometheus": { isActive: true },
        "s1-metric-api-queue-depth": { isActive: true },
        "s2-cron-Etc-UTC-00xxx-5923xxx": { isActive: true },
      });
      assert.match(lastActiveTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    }
    assert.deepEqual(fields, {
      scaleTargetKind: "apps/v1.Deployment",
      scaleTargetGVKR: {
        group: "apps",
        version: "v1",
        kind: "Deployment",
        resource: "deployments",
      },
      originalReplicaCount: 1,
      triggersTypes: "prometheus,metrics-api,cron",
      authenticationsTypes: "stats-key",
      externalMetricNames: [
        "s0-prometheus",
        "s1-metric-api-queue-depth",
        "s2-cron-Etc-UTC-00xxx-5923xxx",
      ],
      hpaName: "keda-hpa-web",
    });
    assert.deepEqual(conditions[0], {
      type: "Ready",
      status: "True",
      reason: "ScaledObjectReady",
      message: "ScaledObject is defined correctly and is ready for scaling",
    });

    // read through the aggregator as the HPA controller reads it (the name lowercased)
    const raw = (metric: string) =>
      JSON.parse(kubectl([
        "get",
        "--raw",
        `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/${metric}?labelSelector=${
          encodeURIComponent(`${SO_LABEL}=web`)
        }`,
      ]));
    const depth = await waitFor(() => {
      try {
        return raw("s1-metric-api-queue-depth");
      } catch {
        return undefined;
      }
    }, { what: "s1-metric-api-queue-depth served", timeoutMs: WAIT_MS });
    assert.equal(depth.items.length, 1);
    assert.deepEqual(
      [depth.items[0].metricName, depth.items[0].value, depth.items[0].metricLabels],
      ["s1-metric-api-queue-depth", "12", null],
    );
    const cron = raw("s2-cron-etc-utc-00xxx-5923xxx");
    assert.deepEqual(
      [cron.items[0].metricName, cron.items[0].value],
      [
        "s2-cron-Etc-UTC-00xxx-5923xxx",
        new Date().getUTCHours() === 23 &&
          new Date().getUTCMinutes() === 59
          ? "0"
          : "2",
      ],
    );
    assert.equal(raw("s0-prometheus").items[0].value, "6");

    // 12 / 3 = 4 replicas (6 / 2 = 3, cron 2): the real HPA controller on our values
    await waitFor(async () => {
      const h = await hpa("keda-hpa-web");
      const d = await kube!.request("GET", path("apps/v1", "deployments", "web"));
      return h.status?.desiredReplicas === 4 && d.spec.replicas === 4;
    }, { what: "keda-hpa-web scaling web to 4", timeoutMs: WAIT_MS });

    // an edit of a field KEDA sets is reverted
    await kube!.request(
      "PATCH",
      path("autoscaling/v2", "horizontalpodautoscalers", "keda-hpa-web"),
      {
        body: { spec: { maxReplicas: 50 } },
        contentType: "application/merge-patch+json",
      },
    );
    await waitFor(async () => (await hpa("keda-hpa-web")).spec.maxReplicas === 10, {
      what: "maxReplicas reverted to 10",
      timeoutMs: WAIT_MS,
    });
  });

  it("shows KEDA's message in Ready and a Warning for a trigger KEDA would not build", async () => {
    await kube!.request("POST", path("keda.sh/v1alpha1", "scaledobjects"), {
      body: {
        apiVersion: "keda.sh/v1alpha1",
        kind: "ScaledObject",
        metadata: { name: "bad", namespace: ns },
        spec: {
          scaleTargetRef: { name: "bad" },
          triggers: [{ type: "prometheus", metadata: { serverAddress: "http://p", query: "up" } }],
        },
      },
    });
    const message =
      'failed to ensure HPA is correctly created for ScaledObject: error parsing prometheus metadata: error parsing prometheus metadata: missing required parameter "threshold" in [triggerMetadata]';
    const ready = await waitFor(async () => {
      const c = (await so("bad")).status?.conditions?.[0];
      return c?.status === "False" ? c : undefined;
    }, { what: "ScaledObject bad Ready=False", timeoutMs: WAIT_MS });
    assert.deepEqual(ready, {
      type: "Ready",
      status: "False",
      reason: "ScaledObjectCheckFailed",
      message,
    });
    const warning = await waitFor(
      async () => (await events("bad")).find((e) => e.reason === "ScaledObjectCheckFailed"),
      {
        what: "event ScaledObjectCheckFailed",
        timeoutMs: WAIT_MS,
      },
    );
    assert.deepEqual([warning.type, warning.message], ["Warning", message]);
    await assert.rejects(hpa("keda-hpa-bad"));
  });

  it("leaves a ScaledObject whose HPA keda-operator manages to KEDA, with a Warning", async () => {
    await kube!.request("POST", path("autoscaling/v2", "horizontalpodautoscalers"), {
      body: {
        apiVersion: "autoscaling/v2",
        kind: "HorizontalPodAutoscaler",
        metadata: {
          name: "keda-hpa-legacy",
          namespace: ns,
          labels: { "app.kubernetes.io/managed-by": "keda-operator" },
        },
        spec: {
          scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "legacy" },
          minReplicas: 1,
          maxReplicas: 3,
          metrics: [{
            type: "Resource",
            resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 50 } },
          }],
        },
      },
    });
    await kube!.request("POST", path("keda.sh/v1alpha1", "scaledobjects"), {
      body: {
        apiVersion: "keda.sh/v1alpha1",
        kind: "ScaledObject",
        metadata: { name: "legacy", namespace: ns },
        spec: {
          scaleTargetRef: { name: "legacy" },
          triggers: [{
            type: "cron",
            metadata: {
              timezone: "Etc/UTC",
              start: "0 6 * * *",
              end: "0 7 * * *",
              desiredReplicas: "2",
            },
          }],
        },
      },
    });
    const warning = await waitFor(
      async () => (await events("legacy")).find((e) => e.reason === "ScaledObjectNotOwned"),
      {
        what: "event ScaledObjectNotOwned",
        timeoutMs: WAIT_MS,
      },
    );
    assert.deepEqual([warning.type, warning.message], [
      "Warning",
      `HorizontalPodAutoscaler ${ns}/keda-hpa-legacy is managed by keda-operator: this ScaledObject is left to KEDA`,
    ]);
    const left = await hpa("keda-hpa-legacy");
    assert.equal(left.spec.maxReplicas, 3);
    assert.equal(left.metadata.ownerReferences, undefined);
    assert.equal((await so("legacy")).status, undefined);
  });
});

/** The SQS emulator (npm fauxqs, under node) in the harness's network namespace. */
const FAUXQS_CLI = join(ROOT, "node_modules/fauxqs/dist/cli.js");
const SQS_PORT = 19324;
const SQS_ENDPOINT = `http://${E2E.prometheusIp}:${SQS_PORT}`;
const SQS_QUEUE = "e2e-orders";
/**
 * The queue's URL as fauxqs names it (the region's host under `localhost`, whatever address the
 * request came to): fauxqs finds a queue by this URL only. Requests go to `awsEndpoint`.
 */
const SQS_QUEUE_URL = `http://sqs.us-east-1.localhost:${SQS_PORT}/000000000000/${SQS_QUEUE}`;

/** The label that gives a ScaledObject to KEDA (this adapter's selector leaves it out). */
const TO_KEDA = "e2e.hpa-metrics-adapter/keda";

/** The prometheus trigger of the side-by-side ScaledObjects. */
function peerTrigger(prometheusUrl: string, threshold: string): Obj {
  return {
    type: "prometheus",
    metadata: { serverAddress: prometheusUrl, query: "vector(6)", threshold },
  };
}

/** The ScaledObjects both get: every trigger the harness has sources for, and the errors. */
function peerObjects(ns: string, statsIp: string, prometheusUrl: string, toKeda: boolean): Obj[] {
  const labels = toKeda ? { [TO_KEDA]: "true" } : {};
  const so = (name: string, spec: Obj, annotations: Record<string, string> = {}): Obj => ({
    apiVersion: "keda.sh/v1alpha1",
    kind: "ScaledObject",
    metadata: { name, namespace: ns, labels: { ...labels, team: "shop" }, annotations },
    spec: { scaleTargetRef: { name: "web" }, pollingInterval: 5, ...spec },
  });
  const prom = (threshold: string, name?: string) => ({
    ...peerTrigger(prometheusUrl, threshold),
    ...(name ? { name } : {}),
  });
  const api = (name?: string) => ({
    type: "metrics-api",
    ...(name ? { name } : {}),
    metadata: {
      url: `http://${statsIp}:8080/stats`,
      valueLocation: "queue.depth",
      targetValue: "3",
      authMode: "apiKey",
    },
    authenticationRef: { name: "stats-key" },
  });
  const cron = {
    type: "cron",
    metadata: {
      timezone: "Europe/Berlin",
      start: "0 0 * * *",
      end: "59 23 * * *",
      desiredReplicas: "2",
    },
  };
  return [
    so("all", {
      minReplicaCount: 2,
      maxReplicaCount: 20,
      advanced: { horizontalPodAutoscalerConfig: { behavior: BEHAVIOR } },
      triggers: [
        prom("2"),
        api(),
        cron,
        { type: "cpu", metricType: "Utilization", metadata: { value: "60" } },
        { type: "memory", metricType: "AverageValue", metadata: { value: "512Mi" } },
      ],
    }, { "autoscaling.keda.sh/paused-scale-in": "true", note: "kept" }),
    so("renamed", {
      advanced: { horizontalPodAutoscalerConfig: { name: "custom-hpa" } },
      triggers: [{ ...prom("100.5"), useCachedMetrics: true }],
    }),
    so("mods", {
      fallback: { failureThreshold: 3, replicas: 5 },
      advanced: {
        scalingModifiers: { formula: "prom + api", target: "10", activationTarget: "1" },
      },
      triggers: [prom("2", "prom"), api("api")],
    }),
    so("bad", {
      triggers: [{ type: "prometheus", metadata: { serverAddress: prometheusUrl, query: "up" } }],
    }),
    so("bounds", {
      minReplicaCount: 1,
      idleReplicaCount: 1,
      triggers: [prom("2")],
    }),
    // the SQS emulator's queue (9 messages, 2 of them in flight), with access keys
    so("sqs", {
      triggers: [{
        type: "aws-sqs-queue",
        metadata: {
          queueURL: SQS_QUEUE_URL,
          awsRegion: "us-east-1",
          awsEndpoint: SQS_ENDPOINT,
          queueLength: "2",
          activationQueueLength: "1",
        },
        authenticationRef: { name: "aws-keys" },
      }],
    }),
  ];
}

/** The Deployments' replica counts of some namespaces, read every 500 ms until stopped. */
interface Sampled {
  stop(): Promise<void>;
  /** Each change of `name`'s count in `ns`: when it was first seen, and the new count. */
  changes(ns: string, name: string): { at: number; to: number }[];
  namespaces: readonly string[];
}

function sampleReplicas(namespaces: readonly string[]): Sampled {
  const seen = new Map<string, { at: number; to: number }[]>();
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const at = Date.now();
      await Promise.all(namespaces.map(async (ns) => {
        const list = await kube!.request("GET", `/apis/apps/v1/namespaces/${ns}/deployments`);
        for (const d of list.items as Obj[]) {
          const key = `${ns}/${d.metadata.name}`;
          const changes = seen.get(key) ?? [];
          if (changes.at(-1)?.to !== d.spec.replicas) changes.push({ at, to: d.spec.replicas });
          seen.set(key, changes);
        }
      }));
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  return {
    namespaces,
    // one more round after the last wait saw its counts, so the samples have them too
    stop: async () => {
      await new Promise((r) => setTimeout(r, 1_500));
      stopped = true;
      await loop;
    },
    changes: (ns, name) => seen.get(`${ns}/${name}`) ?? [],
  };
}

/**
 * The moves of KEDA's scale loop (to zero, and from zero) of `name` in the two sampled
 * namespaces (KEDA's first), seen from `since` on: the same moves in the same order, each made
 * by both within `withinMs` (one polling interval) plus the 500 ms the sampling can miss.
 */
function sameLoopMoves(
  sampled: Sampled,
  name: string,
  withinMs: number,
  since = 0,
): { to: number; keda: number; ours: number }[] {
  const moves = (ns: string) =>
    sampled.changes(ns, name).filter((c, i, all) =>
      i > 0 && c.at >= since && (c.to === 0 || all[i - 1].to === 0)
    );
  const [k, u] = sampled.namespaces.map(moves);
  const show = (m: { at: number; to: number }[]) =>
    m.map((c) => `${c.to === 0 ? "to 0" : `from 0 to ${c.to}`} at ${new Date(c.at).toISOString()}`);
  assert.deepEqual(
    u.map((c) => c.to === 0),
    k.map((c) => c.to === 0),
    `the loop's moves of ${name}: KEDA ${show(k).join(", ")}; ours ${show(u).join(", ")}`,
  );
  const out = k.map((c, i) => ({ to: c.to, keda: c.at, ours: u[i].at }));
  for (const m of out) {
    console.log(
      `# ${name}: ${m.to === 0 ? "to 0" : "from 0"}: ours - KEDA = ${m.ours - m.keda} ms`,
    );
    assert.ok(
      Math.abs(m.ours - m.keda) <= withinMs + 500,
      `${name} ${m.to === 0 ? "to 0" : "from 0"}: KEDA at ${
        new Date(m.keda).toISOString()
      }, ours at ${new Date(m.ours).toISOString()}`,
    );
  }
  return out;
}

/** What must be equal of two HPAs: all but identity, the namespace and the writer's labels. */
function comparableHpa(h: Obj): Obj {
  const labels = { ...h.metadata.labels };
  delete labels["app.kubernetes.io/managed-by"];
  delete labels["app.kubernetes.io/version"];
  delete labels[TO_KEDA];
  return {
    name: h.metadata.name,
    labels,
    annotations: h.metadata.annotations ?? null,
    ownerReferences: (h.metadata.ownerReferences ?? []).map((r: Obj) => ({ ...r, uid: "-" })),
    spec: h.spec,
  };
}

/**
 * The status fields KEDA's reconcile and scale loop write: all but `lastActiveTime`'s value (a
 * time) and the `HPAActive` condition (it mirrors the HPA's ScalingActive, and KEDA's HPA gets
 * no metrics here: the harness's external metrics API is this adapter's).
 */
function comparableStatus(s: Obj): Obj {
  const out: Obj = {};
  for (
    const k of [
      "hpaName",
      "externalMetricNames",
      "resourceMetricNames",
      "compositeScalerName",
      "scaleTargetKind",
      "scaleTargetGVKR",
      "originalReplicaCount",
      "pausedReplicaCount",
      "triggersTypes",
      "authenticationsTypes",
      "triggersActivity",
      "health",
    ]
  ) if (s?.[k] !== undefined) out[k] = s[k];
  out.lastActiveTime = s?.lastActiveTime !== undefined;
  // health's failures count reads in KEDA (every HPA read and loop check) and collections here
  // (README): compared by state
  if (s?.health !== undefined) {
    out.health = Object.fromEntries(
      Object.entries(s.health).map(([k, v]) => [k, (v as Obj).status]),
    );
  }
  out.conditions = (s?.conditions ?? []).filter((c: Obj) => c.type !== "HPAActive")
    .map((c: Obj) => ({ ...c, lastTransitionTime: undefined }));
  return out;
}

describe("e2e: side by side with KEDA v2.20.2", { skip: SKIP, timeout: 20 * 60_000 }, () => {
  const suffix = Math.random().toString(36).slice(2, 7);
  const nsKeda = `e2e-keda-peer-${suffix}`;
  const nsOurs = `e2e-keda-ours-${suffix}`;
  const KEDA_ADDRESS = `${E2E.prometheusIp}:16443`;
  const children: ChildProcess[] = [];
  let dir = "";
  const events = async (ns: string, name: string): Promise<Obj[]> =>
    ((await kube!.request("GET", `/api/v1/namespaces/${ns}/events`)).items as Obj[])
      .filter((e) => e.involvedObject?.kind === "ScaledObject" && e.involvedObject.name === name);
  const ips: Record<string, string> = {};

  const start = (name: string, bin: string, args: string[], env: string[] = []): void => {
    const log = openSync(join(STATE_DIR, "logs", `${name}.log`), "a");
    const child = spawn("ip", [
      "netns",
      "exec",
      E2E.netns,
      "env",
      ...env,
      `KUBECONFIG=${join(STATE_DIR, "kubeconfig")}`,
      `WATCH_NAMESPACE=${nsKeda}`,
      "POD_NAMESPACE=keda",
      "KEDA_CLUSTER_OBJECT_NAMESPACE=keda",
      bin,
      ...args,
    ], { stdio: ["ignore", log, log] });
    children.push(child);
  };

  /** GET from KEDA's metrics server with the harness's admin certificate. */
  const fromKeda = (path: string): Promise<{ status: number; body: Obj; text: string }> =>
    new Promise((resolve, reject) => {
      const req = httpsRequest({
        host: E2E.prometheusIp,
        port: 16443,
        path,
        ca: readFileSync(join(dir, "ca.crt")),
        cert: readFileSync(join(STATE_DIR, "pki", "admin.crt")),
        key: readFileSync(join(STATE_DIR, "pki", "admin.key")),
      }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d) => (text += d));
        res.on("end", () => {
          let body: Obj = null;
          try {
            body = JSON.parse(text);
          } catch {
            // /readyz answers text
          }
          resolve({ status: res.statusCode ?? 0, body, text });
        });
      });
      req.on("error", reject);
      req.end();
    });

  before(async () => {
    const { operator, adapter } = ensureKeda();
    dir = mkdtempSync(join(tmpdir(), "e2e-keda-"));
    // what KEDA's metrics server needs to accept this adapter as a client (its delegate)
    kubectl(["apply", "-f", join(ROOT, "deploy/components/delegation/rbac.yaml")]);
    // KEDA's own CRDs (all six: its operator watches each kind) over ours
    kubectl([
      "apply",
      "--server-side",
      "--force-conflicts",
      ...kedaCrdFiles().flatMap((f) => ["-f", f]),
    ]);
    kubectl([
      "wait",
      "--for=condition=Established",
      "--timeout=60s",
      ...kedaCrdFiles().flatMap((f) => ["-f", f]),
    ]);
    // one CA and one certificate for the operator <-> metrics server link and its HTTPS
    kedaCerts(dir, [E2E.prometheusIp]);
    for (const ns of [nsKeda, nsOurs, "keda"]) {
      await kube!.request("POST", "/api/v1/namespaces", {
        body: { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } },
      }).catch(() => {});
    }
    start("keda-operator", operator, [
      "--leader-elect=false",
      "--enable-cert-rotation=false",
      `--cert-dir=${dir}`,
      "--metrics-bind-address=127.0.0.1:18080",
      "--health-probe-bind-address=127.0.0.1:18081",
      "--metrics-service-bind-address=127.0.0.1:19666",
      "--zap-log-level=info",
      "--zap-encoder=console",
    ]);
    const admin = join(STATE_DIR, "kubeconfig");
    start("keda-adapter", adapter, [
      "--secure-port=16443",
      `--bind-address=${E2E.prometheusIp}`,
      `--cert-dir=${dir}`,
      `--tls-cert-file=${join(dir, "tls.crt")}`,
      `--tls-private-key-file=${join(dir, "tls.key")}`,
      `--lister-kubeconfig=${admin}`,
      `--authentication-kubeconfig=${admin}`,
      `--authorization-kubeconfig=${admin}`,
      "--metrics-service-address=127.0.0.1:19666",
      "--port=18082",
      "--zap-log-level=info",
      "--zap-encoder=console",
    ]);
    // the SQS emulator, where KEDA and this adapter reach it (the trigger's awsEndpoint)
    start("fauxqs", process.execPath, [FAUXQS_CLI], [`FAUXQS_PORT=${SQS_PORT}`]);
    const sqs = new SQSClient({
      region: "us-east-1",
      endpoint: SQS_ENDPOINT,
      credentials: { accessKeyId: "e2e", secretAccessKey: "e2e" },
      maxAttempts: 1,
    });
    const queueUrl = await waitFor(
      async () =>
        (await sqs.send(new CreateQueueCommand({ QueueName: SQS_QUEUE })).catch(() => null))
          ?.QueueUrl,
      { what: `fauxqs at ${SQS_ENDPOINT} (see .e2e/logs/fauxqs.log)`, timeoutMs: WAIT_MS },
    );
    assert.equal(queueUrl, SQS_QUEUE_URL);
    // 7 visible messages and 2 in flight: KEDA counts both (scaleOnInFlight defaults to true)
    for (let i = 0; i < 9; i++) {
      await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: `m${i}` }));
    }
    await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 2,
        VisibilityTimeout: 3600,
      }),
    );
    sqs.destroy();
    await waitFor(
      async () =>
        (await fromKeda("/readyz").catch(() => ({ status: 0 }))).status === 200 || undefined,
      {
        what: `KEDA's metrics server at ${KEDA_ADDRESS} (see .e2e/logs/keda-adapter.log)`,
        timeoutMs: WAIT_MS,
      },
    );
    for (const ns of [nsKeda, nsOurs]) {
      await waitFor(() => kube!.get(`/api/v1/namespaces/${ns}/serviceaccounts/default`), {
        what: `service account default in ${ns}`,
        timeoutMs: WAIT_MS,
      });
      await kube!.request("POST", `/api/v1/namespaces/${ns}/pods`, {
        body: {
          apiVersion: "v1",
          kind: "Pod",
          metadata: {
            name: "stats",
            namespace: ns,
            annotations: { [ANNOTATIONS.metrics]: JSON.stringify({ queue: { depth: 12 } }) },
          },
          spec: {
            containers: [{
              name: "stats",
              image: "e2e.invalid/stats:1",
              ports: [{ containerPort: 8080 }],
            }],
          },
        },
      });
      ips[ns] = await waitFor(async () => {
        const p = await kube!.request("GET", `/api/v1/namespaces/${ns}/pods/stats`);
        return isReady(p) ? p.status.podIP as string : undefined;
      }, { what: `pod stats ready in ${ns}`, timeoutMs: WAIT_MS });
      await kube!.request("POST", `/api/v1/namespaces/${ns}/secrets`, {
        body: {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: "stats-key", namespace: ns },
          stringData: { key: "k-42" },
        },
      });
      await kube!.request(
        "POST",
        `/apis/keda.sh/v1alpha1/namespaces/${ns}/triggerauthentications`,
        {
          body: {
            apiVersion: "keda.sh/v1alpha1",
            kind: "TriggerAuthentication",
            metadata: { name: "stats-key", namespace: ns },
            spec: { secretTargetRef: [{ parameter: "apiKey", name: "stats-key", key: "key" }] },
          },
        },
      );
      await kube!.request("POST", `/api/v1/namespaces/${ns}/secrets`, {
        body: {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: "aws-keys", namespace: ns },
          stringData: { id: "e2e", secret: "e2e" },
        },
      });
      await kube!.request(
        "POST",
        `/apis/keda.sh/v1alpha1/namespaces/${ns}/triggerauthentications`,
        {
          body: {
            apiVersion: "keda.sh/v1alpha1",
            kind: "TriggerAuthentication",
            metadata: { name: "aws-keys", namespace: ns },
            spec: {
              secretTargetRef: [
                { parameter: "awsAccessKeyID", name: "aws-keys", key: "id" },
                { parameter: "awsSecretAccessKey", name: "aws-keys", key: "secret" },
              ],
            },
          },
        },
      );
      await kube!.request("POST", `/apis/apps/v1/namespaces/${ns}/deployments`, {
        body: {
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: "web", namespace: ns },
          spec: {
            replicas: 1,
            selector: { matchLabels: { app: "web" } },
            template: {
              metadata: { labels: { app: "web" } },
              spec: { containers: [{ name: "app", image: "e2e.invalid/app:1" }] },
            },
          },
        },
      });
    }
  });

  after(async () => {
    for (const c of children) {
      if (c.exitCode === null && c.signalCode === null) c.kill("SIGTERM");
    }
    await Promise.all(
      children.map((c) =>
        c.exitCode !== null || c.signalCode !== null
          ? Promise.resolve()
          : new Promise<void>((r) => {
            const t = setTimeout(() => {
              c.kill("SIGKILL");
              r();
            }, 5_000);
            c.once("exit", () => {
              clearTimeout(t);
              r();
            });
          })
      ),
    );
    if (!process.env.HPA_E2E_KEEP) {
      for (const ns of [nsKeda, nsOurs]) {
        await kube!.request("DELETE", `/api/v1/namespaces/${ns}`).catch(() => {});
      }
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("writes the same HPAs and statuses and serves the same values as KEDA", async () => {
    const prometheusUrl = state!.prometheus!.url;
    const keda = peerObjects(nsKeda, ips[nsKeda], prometheusUrl, true);
    const ours = peerObjects(nsOurs, ips[nsOurs], prometheusUrl, false);
    for (const o of [...keda, ...ours]) {
      await kube!.request(
        "POST",
        `/apis/keda.sh/v1alpha1/namespaces/${o.metadata.namespace}/scaledobjects`,
        { body: o },
      );
    }
    await compareAll(keda.map((o) => o.metadata.name));
    // the emulator's queue, read by both: 7 visible and 2 in flight messages
    const sqsPath = (ns: string) =>
      `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/s0-aws-sqs-e2e-orders?labelSelector=${
        encodeURIComponent("scaledobject.keda.sh/name=sqs")
      }`;
    const sqsValues = [
      (await fromKeda(sqsPath(nsKeda))).body?.items?.map((i: Obj) => i.value),
      (await kube!.request("GET", sqsPath(nsOurs))).items.map((i: Obj) => i.value),
    ];
    assert.deepEqual(sqsValues, [["9"], ["9"]]);
    // an updated trigger: both update their HPA the same way
    for (const ns of [nsKeda, nsOurs]) {
      await kube!.request(
        "PATCH",
        `/apis/keda.sh/v1alpha1/namespaces/${ns}/scaledobjects/renamed`,
        {
          body: { spec: { triggers: [{ ...peerTrigger(prometheusUrl, "7") }] } },
          contentType: "application/merge-patch+json",
        },
      );
    }
    for (const ns of [nsKeda, nsOurs]) {
      await waitFor(async () => {
        const h = await kube!.request(
          "GET",
          `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers/custom-hpa`,
        );
        return h.spec.metrics[0].external.target.averageValue === "7" || undefined;
      }, { what: `custom-hpa of ${ns} with target 7`, timeoutMs: WAIT_MS });
    }
    await compareAll(["renamed"]);
  });

  it("scales to zero and back, idles, pauses, restores and falls back as KEDA does", async () => {
    const depth = async (value: number) => {
      for (const ns of [nsKeda, nsOurs]) {
        await kube!.request("PATCH", `/api/v1/namespaces/${ns}/pods/stats`, {
          body: {
            metadata: {
              annotations: { [ANNOTATIONS.metrics]: JSON.stringify({ queue: { depth: value } }) },
            },
          },
          contentType: "application/merge-patch+json",
        });
      }
    };
    const replicas = async (ns: string, name: string): Promise<number> =>
      (await kube!.request("GET", `/apis/apps/v1/namespaces/${ns}/deployments/${name}`)).spec
        .replicas;
    /** Wait until each named Deployment has its count in both namespaces. */
    const both = (want: Record<string, number>, what: string) =>
      waitFor(async () => {
        for (const [name, n] of Object.entries(want)) {
          if (await replicas(nsKeda, name) !== n || await replicas(nsOurs, name) !== n) {
            return undefined;
          }
        }
        return true;
      }, { what: `${what}: ${JSON.stringify(want)} in both namespaces`, timeoutMs: WAIT_MS });
    const soPath = (ns: string, name = "") =>
      `/apis/keda.sh/v1alpha1/namespaces/${ns}/scaledobjects${name ? `/${name}` : ""}`;
    const behavior = {
      ...BEHAVIOR,
      scaleDown: {
        stabilizationWindowSeconds: 0,
        policies: [{ type: "Percent", value: 100, periodSeconds: 1 }],
      },
    };
    const trigger = (ns: string, port = 8080) => ({
      type: "metrics-api",
      metadata: {
        url: `http://${ips[ns]}:${port}/stats`,
        valueLocation: "queue.depth",
        targetValue: "3",
        activationTargetValue: "5",
      },
    });
    /** Per ScaledObject: its Deployment's replicas, its spec and annotations. */
    const cases: Record<
      string,
      { replicas: number; spec: (ns: string) => Obj; annotations?: Obj }
    > = {
      zero: { replicas: 1, spec: (ns) => ({ minReplicaCount: 0, triggers: [trigger(ns)] }) },
      idle: {
        replicas: 1,
        spec: (ns) => ({ minReplicaCount: 2, idleReplicaCount: 0, triggers: [trigger(ns)] }),
      },
      paused: {
        replicas: 1,
        spec: (ns) => ({ minReplicaCount: 1, triggers: [trigger(ns)] }),
        annotations: { "autoscaling.keda.sh/paused-replicas": "3" },
      },
      restore: {
        replicas: 2,
        spec: (ns) => ({
          minReplicaCount: 1,
          advanced: { restoreToOriginalReplicaCount: true },
          triggers: [trigger(ns)],
        }),
      },
      // a source that refuses: with a fallback, and without
      fb: {
        replicas: 1,
        spec: (ns) => ({
          minReplicaCount: 1,
          fallback: { failureThreshold: 1, replicas: 3 },
          triggers: [trigger(ns, 8081)],
        }),
      },
      nofb: { replicas: 1, spec: (ns) => ({ minReplicaCount: 1, triggers: [trigger(ns, 8081)] }) },
      // never active on its own (12 is not above 100), active by force-activation
      forced: {
        replicas: 0,
        spec: (ns) => ({
          minReplicaCount: 0,
          triggers: [{
            ...trigger(ns),
            metadata: { ...trigger(ns).metadata, activationTargetValue: "100" },
          }],
        }),
        annotations: { "autoscaling.keda.sh/force-activation": "true" },
      },
    };
    const sampled = sampleReplicas([nsKeda, nsOurs]);
    for (const [ns, toKeda] of [[nsKeda, true], [nsOurs, false]] as const) {
      for (const [name, c] of Object.entries(cases)) {
        await kube!.request("POST", `/apis/apps/v1/namespaces/${ns}/deployments`, {
          body: {
            apiVersion: "apps/v1",
            kind: "Deployment",
            metadata: { name, namespace: ns },
            spec: {
              replicas: c.replicas,
              selector: { matchLabels: { app: name } },
              template: {
                metadata: { labels: { app: name } },
                spec: { containers: [{ name: "app", image: "e2e.invalid/app:1" }] },
              },
            },
          },
        });
        const { advanced, ...rest } = c.spec(ns);
        await kube!.request("POST", soPath(ns), {
          body: {
            apiVersion: "keda.sh/v1alpha1",
            kind: "ScaledObject",
            metadata: {
              name,
              namespace: ns,
              labels: toKeda ? { [TO_KEDA]: "true" } : {},
              ...(c.annotations ? { annotations: c.annotations } : {}),
            },
            spec: {
              scaleTargetRef: { name },
              maxReplicaCount: 6,
              pollingInterval: 2,
              cooldownPeriod: 4,
              ...rest,
              advanced: { ...advanced, horizontalPodAutoscalerConfig: { behavior } },
            },
          },
        });
      }
    }
    // 12 is above activation 5: the HPAs on 12 / 3; paused held at 3; the fallback's 3 replicas
    await depth(12);
    await both({ zero: 4, idle: 4, paused: 3, restore: 4, fb: 3, forced: 4 }, "active");
    // 0: inactive; past the 4 s cooldown, zero to 0 and idle to its idle count 0
    await depth(0);
    // forced stays active: the HPA takes it down to its minimum 1, the loop not to zero
    await both({ zero: 0, idle: 0, paused: 3, forced: 1 }, "inactive past the cooldown");
    // 12 again: zero wakes to 1 and idle to its minimum 2, then the HPAs to 4
    await depth(12);
    await both({ zero: 4, idle: 4 }, "active again");
    // the pause removed: the HPA back, at 4
    for (const ns of [nsKeda, nsOurs]) {
      await kube!.request("PATCH", soPath(ns, "paused"), {
        body: { metadata: { annotations: { "autoscaling.keda.sh/paused-replicas": null } } },
        contentType: "application/merge-patch+json",
      });
    }
    await both({ paused: 4 }, "unpaused");
    // over time: each move the loop made (to zero, from zero) made by both, in the same order,
    // within one polling interval (2 s) of each other
    await sampled.stop();
    for (const name of ["zero", "idle"]) sameLoopMoves(sampled, name, 2_000);
    // the events, as KEDA words them (but for the namespace and the count scaled from)
    for (const reason of ["KEDAScaleTargetDeactivated", "KEDAScaleTargetActivated"]) {
      for (const name of ["zero", "idle", ...(reason.endsWith("Activated") ? ["forced"] : [])]) {
        const said = async (ns: string) =>
          (await events(ns, name)).filter((e) => e.reason === reason).map((e) =>
            e.message.replace(ns, "NS").replace(/ from \d+ /, " from N ")
          )[0];
        const [k, u] = await waitFor(async () => {
          const pair = [await said(nsKeda), await said(nsOurs)];
          return pair[0] && pair[1] ? pair : undefined;
        }, { what: `${reason} of ${name} in both namespaces`, timeoutMs: WAIT_MS });
        assert.equal(u, k, `${reason} of ${name}`);
      }
    }
    // the statuses of the erring ones, and of the rest, as the side-by-side compares them
    await compareAll(["fb", "nofb", "paused", "zero", "idle", "forced"]);
    // deleted: restore puts its target back to its original 2 replicas in both
    for (const ns of [nsKeda, nsOurs]) await kube!.request("DELETE", soPath(ns, "restore"));
    await both({ restore: 2 }, "restored on delete");
  });

  it("opens and closes a cron window at the same moments as KEDA", async () => {
    // a window of one minute that opens at the first minute at least 25 s away (UTC)
    const now = Date.now();
    let opens = Math.ceil(now / 60_000) * 60_000;
    if (opens - now < 25_000) opens += 60_000;
    const closes = opens + 60_000;
    const minute = (t: number) =>
      `${new Date(t).getUTCMinutes()} ${new Date(t).getUTCHours()} * * *`;
    const sampled = sampleReplicas([nsKeda, nsOurs]);
    for (const [ns, toKeda] of [[nsKeda, true], [nsOurs, false]] as const) {
      await kube!.request("POST", `/apis/apps/v1/namespaces/${ns}/deployments`, {
        body: {
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: "cron", namespace: ns },
          spec: {
            replicas: 1,
            selector: { matchLabels: { app: "cron" } },
            template: {
              metadata: { labels: { app: "cron" } },
              spec: { containers: [{ name: "app", image: "e2e.invalid/app:1" }] },
            },
          },
        },
      });
      await kube!.request("POST", `/apis/keda.sh/v1alpha1/namespaces/${ns}/scaledobjects`, {
        body: {
          apiVersion: "keda.sh/v1alpha1",
          kind: "ScaledObject",
          metadata: { name: "cron", namespace: ns, labels: toKeda ? { [TO_KEDA]: "true" } : {} },
          spec: {
            scaleTargetRef: { name: "cron" },
            minReplicaCount: 0,
            maxReplicaCount: 6,
            pollingInterval: 2,
            cooldownPeriod: 4,
            advanced: { horizontalPodAutoscalerConfig: { behavior: BEHAVIOR } },
            triggers: [{
              type: "cron",
              metadata: {
                timezone: "Etc/UTC",
                start: minute(opens),
                end: minute(closes),
                desiredReplicas: "2",
              },
            }],
          },
        },
      });
    }
    const count = async (ns: string) =>
      (await kube!.request("GET", `/apis/apps/v1/namespaces/${ns}/deployments/cron`)).spec
        .replicas as number;
    const until = (n: number, what: string, ms: number) =>
      waitFor(
        async () => (await count(nsKeda) === n && await count(nsOurs) === n) || undefined,
        { what: `cron at ${n} in both namespaces ${what}`, timeoutMs: ms },
      );
    // outside the window and past the initial cooldown (0): to zero
    await until(0, "before the window opens", WAIT_MS);
    // in the window: activated to 1, and the HPA on 2 / 1 to 2
    await until(2, "in the window", opens - Date.now() + WAIT_MS);
    // closed: to zero once more, past the 4 s cooldown
    await until(0, "after the window closes", closes - Date.now() + WAIT_MS);
    await sampled.stop();
    // the moves from the window's opening on (the first, to zero, can come before the first
    // sample sees the new Deployment): from zero when it opens, to zero after it closes
    const moves = sameLoopMoves(sampled, "cron", 2_000, opens - 1_000);
    assert.deepEqual(moves.map((m) => m.to === 0 ? "to 0" : "from 0"), ["from 0", "to 0"]);
    for (
      const [m, at, what] of [[moves[0], opens, "opened"], [moves[1], closes, "closed"]] as const
    ) {
      assert.ok(
        m.keda >= at && m.keda < at + 8_000,
        `KEDA moved at ${new Date(m.keda).toISOString()}, the window ${what} at ${
          new Date(at).toISOString()
        }`,
      );
    }
  });

  async function compareAll(names: string[]): Promise<void> {
    const statusOf = (ns: string, name: string): Promise<Obj> =>
      kube!.request("GET", `/apis/keda.sh/v1alpha1/namespaces/${ns}/scaledobjects/${name}`);
    const hpaOf = (ns: string, name: string): Promise<Obj> =>
      kube!.request(
        "GET",
        `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers/${name}`,
      );
    for (const name of names) {
      // settled: the reconcile wrote Ready, and the scale loop (its ticks every 5 s) Active
      const settled = async (ns: string) => {
        const so = await statusOf(ns, name);
        const c = (type: string) => (so.status?.conditions ?? []).find((x: Obj) => x.type === type);
        const ready = c("Ready");
        if (!ready || ready.status === "Unknown") return undefined;
        if (so.status?.hpaName !== undefined && c("Active")?.status === "Unknown") return undefined;
        return so;
      };
      // read both until they agree, for at most four polling intervals, and at the deadline
      // compare the last two: KEDA's scale loop can report a tick with its triggers not active
      // (and no error) when a reconcile closes its scalers' cache under it (scale_handler.go,
      // getScalerState: ErrCacheClosed is skipped), and is right again at the next tick
      let k: Obj = null;
      let u: Obj = null;
      // a condition KEDA still has at its initial value (no reason) is not compared: KEDA's scale
      // loop patches the conditions it read before the reconcile wrote its own, and so can put
      // Paused and Fallback back to their initial values (a race, README)
      const compared = (x: Obj) => {
        const initial = new Set(
          (k.status.conditions ?? []).filter((c: Obj) => c.reason === undefined).map((c: Obj) =>
            c.type
          ),
        );
        const status = comparableStatus(x.status);
        return {
          ...status,
          conditions: status.conditions.filter((c: Obj) => !initial.has(c.type)),
        };
      };
      await waitFor(async () => {
        k = await waitFor(() => settled(nsKeda), {
          what: `KEDA's ScaledObject ${name}`,
          timeoutMs: WAIT_MS,
        });
        u = await waitFor(() => settled(nsOurs), {
          what: `our ScaledObject ${name}`,
          timeoutMs: WAIT_MS,
        });
        return JSON.stringify(compared(u)) === JSON.stringify(compared(k)) || undefined;
      }, { what: `the statuses of ${name} alike`, timeoutMs: 20_000 }).catch(() => {});
      assert.deepEqual(compared(u), compared(k), `status of ${name}`);
      const hpaName = k.status.hpaName;
      if (hpaName === undefined) continue; // an error: no HPA on either side
      const [kh, uh] = [await hpaOf(nsKeda, hpaName), await hpaOf(nsOurs, hpaName)];
      assert.equal(kh.metadata.labels["app.kubernetes.io/managed-by"], "keda-operator");
      assert.equal(uh.metadata.labels["app.kubernetes.io/managed-by"], "hpa-metrics-adapter");
      assert.deepEqual(comparableHpa(uh), comparableHpa(kh), `HPA ${hpaName}`);
      // each metric, read from both at the same moment
      const names: string[] = k.status.compositeScalerName
        ? ["composite-metric"]
        : (k.status.externalMetricNames ?? []);
      for (const metric of names) {
        const path = (ns: string) =>
          `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/${metric.toLowerCase()}?labelSelector=${
            encodeURIComponent(`scaledobject.keda.sh/name=${name}`)
          }`;
        // an answer, as compared: the items but their time, or the error's code and message
        const answer = (status: number, body: Obj) =>
          status === 200
            ? { status, items: body.items.map((i: Obj) => ({ ...i, timestamp: "-" })) }
            : { status, message: body?.message ?? null };
        const ours = async () => {
          try {
            return answer(200, await kube!.request("GET", path(nsOurs)));
          } catch (e) {
            if (!(e instanceof KubeApiError)) throw e;
            let body: Obj = null;
            try {
              body = JSON.parse(e.body);
            } catch {
              // not a Status
            }
            return answer(e.status, body);
          }
        };
        // read at the same moment until both settle on the same answer (a fallback starts
        // after its failures), and at the deadline compare the last two
        let last: [Obj, Obj] = [null, null];
        await waitFor(async () => {
          const [kr, ur] = await Promise.all([fromKeda(path(nsKeda)), ours()]);
          last = [answer(kr.status, kr.body), ur];
          return JSON.stringify(last[0]) === JSON.stringify(last[1]) || undefined;
        }, { what: `${metric} of ${name} alike from both`, timeoutMs: WAIT_MS }).catch(() => {});
        assert.deepEqual(last[1], last[0], `answer for ${metric} of ${name}`);
      }
    }
  }
});
