// kube-metrics-adapter's fleets for the side-by-side benchmark (bench/peers/run.mjs, issue 51),
// with the interface described at the top of bench/peers/fleets.mjs:
//
// - "serving": HPAs with an Object metric on their own ScalingSchedule and an External
//   json-path metric on their own queue endpoint (bench/manifests.mjs servingObjects, without
//   its "web" HPA), collected every 30 s. Quick: 500 HPAs; full: 2,000.
// - "pods": HPAs x 5 pods, a Pods json-path metric each, every 15 s (bench/manifests.mjs
//   fanoutObjects). Quick: 50 HPAs; full: 200.
//
// The endpoints are bench/fleet.mjs (the fake pods and queues), run inside the harness's network
// namespace, where both adapters run: the queues at 127.0.0.1:18090/queue/I, the pods at their
// own 127.0.x.y:18090. Its control listener counts the reads, so each session's window at rest
// also says how many reads of the fleet's endpoints the adapter made (against what is due).
//
// The scale targets are StatefulSets (nothing runs their pods: the harness's controller manager
// has no StatefulSet controller, while its Deployment and ReplicaSet controllers would make
// pods beside the fleet's); minReplicas = maxReplicas, so the HPA controller reads every metric
// each sync and scales nothing. The schedules are OneTime ones that began a day before the run
// and last a week: each serves its `value` for the whole run, the same for both adapters. The
// pods exist in the cluster, bound to a node no kubelet serves, Running and Ready (since
// 2026-01-01, past any min-pod-ready-age) with their podIP, through their status subresource.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { mapLimit } from "../lib.mjs";
import {
  fakePodRps,
  fakeQueueLength,
  fanoutNames,
  fanoutObjects,
  fanoutPath,
  READY_SINCE,
  SERVING_NAMESPACES,
  servingNames,
  servingObjects,
  servingPaths,
} from "../manifests.mjs";
import { FLEET_NODE } from "./fleet.mjs";
import { namespaces, nodeInNamespace } from "./fleets.mjs";

const benchDir = fileURLToPath(new URL("..", import.meta.url));
/** The fake fleet's port inside the namespace (queues on 127.0.0.1, pods on their address). */
const FAKE_PORT = 18090;
/** The serving fleet's collection interval (the annotations'), and the pods fleet's. */
const SERVING_INTERVAL_SECONDS = 30;
const PODS_INTERVAL_SECONDS = 15;

/** The fake fleet (bench/fleet.mjs) in the namespace; every listener must be up. */
async function fakeFleet(ctx, cfg) {
  const p = await nodeInNamespace(
    ctx,
    join(benchDir, "fleet.mjs"),
    { port: FAKE_PORT, from: 0, keepAliveMs: 5000, ...cfg },
    "kma-fleet.log",
  );
  if (p.info.failed) {
    await p.stop();
    throw new Error(`fake fleet: ${p.info.failed} listeners failed: ${p.info.firstError}`);
  }
  return p;
}

/** The fake fleet's counts (`POST`: a new window), read from the namespace's loopback. */
function fakeControl(ctx, fake, method = "GET") {
  const r = spawnSync("ip", [
    "netns",
    "exec",
    ctx.netns,
    "curl",
    "-sf",
    "-X",
    method,
    `http://127.0.0.1:${fake.info.control}/window`,
  ], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`fake fleet control: ${r.stderr || r.status}`);
  return JSON.parse(r.stdout);
}

/** A Deployment of bench/manifests.mjs as a StatefulSet (the same selector and template). */
function asStatefulSet(d) {
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: d.metadata,
    spec: {
      replicas: d.spec.replicas,
      serviceName: d.metadata.name,
      selector: d.spec.selector,
      template: d.spec.template,
    },
  };
}

/** An HPA of bench/manifests.mjs on its StatefulSet, at `replicas` and no other count. */
function pinned(hpa, replicas) {
  hpa.spec.scaleTargetRef = { ...hpa.spec.scaleTargetRef, kind: "StatefulSet" };
  hpa.spec.minReplicas = replicas;
  hpa.spec.maxReplicas = replicas;
  return hpa;
}

/** Create the objects through the kube client: workloads, schedules, pods (and status), HPAs. */
async function createObjects(ctx, { workloads, schedules = [], pods = [], hpas }) {
  const { client } = ctx;
  const t0 = performance.now();
  await mapLimit(
    workloads,
    16,
    (s) =>
      client.request("POST", `/apis/apps/v1/namespaces/${s.metadata.namespace}/statefulsets`, {
        body: s,
      }),
  );
  await mapLimit(schedules, 16, (s) =>
    client.request(
      "POST",
      `/apis/zalando.org/v1/namespaces/${s.metadata.namespace}/scalingschedules`,
      { body: s },
    ));
  await mapLimit(pods, 16, async (p) => {
    const ns = p.metadata.namespace;
    const { status, ...pod } = p;
    pod.spec = { ...pod.spec, nodeName: FLEET_NODE };
    const created = await client.request("POST", `/api/v1/namespaces/${ns}/pods`, { body: pod });
    await client.request("PUT", `/api/v1/namespaces/${ns}/pods/${p.metadata.name}/status`, {
      body: {
        ...created,
        status: {
          ...created.status,
          ...status,
          podIPs: [{ ip: status.podIP }],
          hostIP: "10.213.0.2",
          startTime: READY_SINCE,
          conditions: [
            ...status.conditions,
            { type: "ContainersReady", status: "True", lastTransitionTime: READY_SINCE },
          ],
        },
      },
    });
  });
  await mapLimit(hpas, 16, (h) =>
    client.request(
      "POST",
      `/apis/autoscaling/v2/namespaces/${h.metadata.namespace}/horizontalpodautoscalers`,
      { body: h },
    ));
  ctx.log(
    `fleet: ${workloads.length} StatefulSets, ${schedules.length} ScalingSchedules, ` +
      `${pods.length} pods, ${hpas.length} HPAs in ${
        Math.round((performance.now() - t0) / 100) / 10
      } s`,
  );
}

/** The rest-window hook: the fake fleet's reads in the window, per 60 s, against what is due. */
function restReads(ctx, fake, count) {
  fakeControl(ctx, fake, "POST");
  return {
    end(seconds) {
      const s = fakeControl(ctx, fake);
      const reads = count(s);
      return { fleetReadsPerMinute: Math.round((reads * 600) / seconds) / 10 };
    },
  };
}

const KMA_OURS = (o) => [
  // the same collectors as kube-metrics-adapter's command line (peers.mjs): json-path is on
  // by default in both; ScalingSchedules with --scaling-schedule; its Prometheus collector
  `--prometheus-server=${o.prometheusUrl}`,
  "--scaling-schedule",
];

/** The same reads of both adapters in the correctness pass: both serve the same HPAs. */
function sameReads(fleet, size) {
  const reads = fleet.reads(size).map((r) => ({ ...r, ours: r.path, peer: r.path }));
  return { reads, ours: [], peer: {} };
}

// -- serving -----------------------------------------------------------------------------------

/** The serving fleet's objects: servingObjects' HPAs and schedules without "web". */
function kmaServingObjects(size, since) {
  const o = servingObjects({
    hpas: size.hpas,
    port: FAKE_PORT,
    interval: `${SERVING_INTERVAL_SECONDS}s`,
  });
  const hpas = o.hpas.filter((h) => h.metadata.name !== "web").map((h) => pinned(h, 1));
  for (const s of o.schedules) {
    const value = s.spec.schedules[0].value;
    s.spec.schedules = [{ type: "OneTime", date: since, durationMinutes: 7 * 24 * 60, value }];
  }
  const workloads = hpas.map((h) =>
    asStatefulSet({
      metadata: { name: h.metadata.name, namespace: h.metadata.namespace },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: h.metadata.name } },
        template: {
          metadata: { labels: { app: h.metadata.name } },
          spec: { containers: [{ name: "app", image: "example/app:1" }] },
        },
      },
    })
  );
  return { hpas, schedules: o.schedules, workloads };
}

/** A OneTime schedule's start: a day before now, to the minute (RFC 3339, UTC). */
const dayBefore = () =>
  new Date(Math.floor(Date.now() / 60_000) * 60_000 - 86_400_000).toISOString()
    .replace(/\.\d+Z$/, "Z");

let servingFake = null;

export const KMA_SERVING_FLEET = {
  name: "kube-metrics-adapter-serving",
  size: (quick) => ({
    hpas: quick ? 500 : 2000,
    namespaces: SERVING_NAMESPACES,
    intervalSeconds: SERVING_INTERVAL_SECONDS,
  }),
  describe: (s) =>
    `${s.hpas} HPAs in ${s.namespaces} namespaces, each with an Object metric on its own ` +
    `ScalingSchedule and an External json-path metric on its own queue endpoint, collected ` +
    `every ${s.intervalSeconds} s`,
  /** The extra rows of the table. */
  rows: {
    subjectAccessReviews: true,
    fleetReads: (s) =>
      `queue endpoints read per 60 s at rest (${(s.hpas * 60) / s.intervalSeconds} due)`,
  },
  settings: (s) => {
    const o = kmaServingObjects({ ...s, hpas: 1 }, "<a day before the run>");
    return { hpa: o.hpas[0], scalingSchedule: o.schedules[0] };
  },
  async create(ctx, size) {
    const objs = kmaServingObjects(size, dayBefore());
    const nss = [...new Set(objs.hpas.map((h) => h.metadata.namespace))];
    await namespaces(ctx.client, nss);
    await createObjects(ctx, objs);
    servingFake = await fakeFleet(ctx, { count: 0, queue: true, queueCount: size.hpas });
    return servingFake;
  },
  reads(size) {
    const out = [];
    for (let h = 0; h < size.hpas; h++) {
      const p = servingPaths(h);
      out.push({ h, kind: "object", path: p.object }, { h, kind: "external", path: p.external });
    }
    return out;
  },
  wanted(r) {
    const { schedule, queue } = servingNames(r.h);
    if (r.kind === "object") {
      return [`${schedule} ScalingSchedule/${schedule} ${(10 + (r.h % 50)) * 1000}m`];
    }
    const labels = JSON.stringify([["queue", queue], ["type", "json-path"]]);
    return [`queue-length ${labels} ${fakeQueueLength(r.h) * 1000}m`];
  },
  ours: KMA_OURS,
  rest: (ctx) => restReads(ctx, servingFake, (s) => s.queue.reads),
  correctness(_ctx, size) {
    return sameReads(this, size);
  },
};

// -- pods --------------------------------------------------------------------------------------

/** The pods fleet's objects: fanoutObjects on StatefulSets. */
function kmaPodsObjects(size) {
  const o = fanoutObjects({
    hpas: size.hpas,
    pods: size.pods,
    port: FAKE_PORT,
    interval: `${PODS_INTERVAL_SECONDS}s`,
  });
  return {
    hpas: o.hpas.map((h) => pinned(h, size.pods)),
    workloads: o.workloads.map(asStatefulSet),
    pods: o.pods,
  };
}

let podsFake = null;

export const KMA_PODS_FLEET = {
  name: "kube-metrics-adapter-pods",
  size: (quick) => ({
    hpas: quick ? 50 : 200,
    pods: 5,
    namespaces: 10,
    intervalSeconds: PODS_INTERVAL_SECONDS,
  }),
  describe: (s) =>
    `${s.hpas} HPAs x ${s.pods} pods in ${s.namespaces} namespaces, a Pods json-path metric ` +
    `each, collected every ${s.intervalSeconds} s`,
  rows: {
    subjectAccessReviews: true,
    fleetReads: (s) =>
      `pods scraped per 60 s at rest (${(s.hpas * s.pods * 60) / s.intervalSeconds} due)`,
  },
  settings: (s) => ({ hpa: kmaPodsObjects({ ...s, hpas: 1 }).hpas[0] }),
  async create(ctx, size) {
    const objs = kmaPodsObjects(size);
    const nss = [...new Set(objs.hpas.map((h) => h.metadata.namespace))];
    await namespaces(ctx.client, nss);
    await createObjects(ctx, objs);
    podsFake = await fakeFleet(ctx, { count: size.hpas * size.pods });
    return podsFake;
  },
  reads(size) {
    return Array.from({ length: size.hpas }, (_, h) => ({ h, kind: "pods", path: fanoutPath(h) }));
  },
  wanted(r, size) {
    const { hpa } = fanoutNames(r.h);
    const out = [];
    for (let k = 0; k < size.pods; k++) {
      const rps = fakePodRps(r.h * size.pods + k);
      out.push(`rps Pod/${hpa}-${String(k).padStart(2, "0")} ${rps * 1000}m`);
    }
    return out.sort();
  },
  ours: KMA_OURS,
  rest: (ctx) => restReads(ctx, podsFake, (s) => s.scrapes),
  correctness(_ctx, size) {
    return sameReads(this, size);
  },
};
