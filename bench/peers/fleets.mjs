// The fleets of the side-by-side benchmark (bench/peers/run.mjs), one a peer: what each creates
// in the cluster and in Prometheus, the reads that make "every value", what each read must
// answer, and the flags this adapter runs with in the peer's place.
//
// A fleet is { name, size(quick), describe(size), create(ctx, size), reads(size),
// wanted(read, size), ours(o), correctness(ctx, size)?, reset(ctx, size)?, written(ctx, size)?,
// dueWrites(size)?, settings(size) }:
// - create(ctx, size) makes the objects and starts the exporter; returns { stop() };
// - reads(size): [{ h, kind, path }], the reads the HPA controller makes, through kube-apiserver;
// - wanted(read, size): the items (itemsOf's strings) the read must answer, from the numbers;
// - ours(o): this adapter's flags beside its common ones (peers.mjs oursCommand);
// - reset(ctx, size): before each session, what the last adapter wrote is removed (KEDA's HPAs);
// - written(ctx, size): { done, count, of }: how many of the objects the adapter under test
//   writes are there (done: all of them);
// - dueWrites(size): { what, perMinute }: the writes due at rest ("verb resource" as the audit
//   counts name them); the window at rest waits for the start's writes to settle to it;
// - correctness(ctx, size): before the both-at-once pass; returns { reads: [{ h, kind, ours,
//   peer, want }], ours: extra flags, peer: extra fields of the peer's `o` }.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { get, mapLimit, sleep, startReadyLine } from "../lib.mjs";
import {
  CONFIG_YAML,
  fleetObjects,
  fleetSize,
  fleetTargets,
  hpaNames,
  hpaReads,
  podOf,
  queueDepth,
  QUEUES,
} from "./fleet.mjs";
import { kedaCrdFiles } from "../../tests/e2e/keda_tool.ts";

const here = new URL(".", import.meta.url).pathname;
const EXPORTER_PORT = 19100;

/** Poll `f` every 100 ms until it returns a truthy value; throws `what` after `timeoutMs`. */
export async function until(f, what, timeoutMs = 120_000) {
  const end = performance.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (performance.now() > end) throw new Error(`${what} after ${timeoutMs / 1000} s`);
    await sleep(100);
  }
}

/** Namespaces, created, with their default service account (pods need it). */
export async function namespaces(client, names) {
  for (const name of names) {
    await client.request("POST", "/api/v1/namespaces", {
      body: { apiVersion: "v1", kind: "Namespace", metadata: { name } },
    });
  }
  for (const name of names) {
    await until(
      () => client.get(`/api/v1/namespaces/${name}/serviceaccounts/default`),
      `no default service account in ${name}`,
    );
  }
}

/** A ClusterRole bound to the adapter's service account (the user both adapters run as). */
async function grant(client, name, rules, clusterRole = null) {
  if (!clusterRole) {
    await client.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", {
      body: {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRole",
        metadata: { name },
        rules,
      },
    });
  }
  await client.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
    body: {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name },
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: clusterRole ?? name,
      },
      subjects: [{
        kind: "ServiceAccount",
        name: "hpa-metrics-adapter",
        namespace: "hpa-metrics-adapter",
      }],
    },
  });
}

/**
 * A node script in the harness's network namespace, its one argument `cfg` as JSON, its output
 * in `logName` of the work folder; resolves once it printed its ready line.
 */
export function nodeInNamespace(ctx, script, cfg, logName) {
  return startReadyLine(
    "ip",
    ["netns", "exec", ctx.netns, process.execPath, script, JSON.stringify(cfg)],
    { logFile: join(ctx.work, logName) },
  );
}

/**
 * The exporter (fleet.mjs as a script, in the harness's network namespace) with `pods` pods'
 * series, its file_sd targets for the harness's Prometheus, and a wait until Prometheus holds
 * every series and a few samples of the counters. Returns the exporter's process.
 */
async function exporter(ctx, size) {
  const p = await nodeInNamespace(
    ctx,
    join(here, "fleet.mjs"),
    { port: EXPORTER_PORT, pods: size.pods },
    "exporter.log",
  );
  writeFileSync(
    join(ctx.state.prometheus.targetsDir, "bench-peers.json"),
    JSON.stringify(fleetTargets(size, EXPORTER_PORT)),
  );
  const want = size.pods * QUEUES;
  const q = encodeURIComponent(
    "count(bench_queue_depth) + count(count_over_time(bench_requests_total[1m]) >= 5)",
  );
  let n = 0;
  await until(async () => {
    const r = await get(`${ctx.state.prometheus.url}/api/v1/query?query=${q}`).catch(() => null);
    n = Number(r ? JSON.parse(r.body).data?.result?.[0]?.value?.[1] : 0);
    return n === 2 * want;
  }, `Prometheus has ${n} of ${2 * want} series`);
  ctx.log(`fleet: Prometheus holds the ${2 * want} series`);
  return p;
}

// -- prometheus-adapter's fleet ----------------------------------------------------------------

/**
 * Exporter pods with 20 series each, rules over them (fleet.mjs CONFIG_YAML, the config both
 * serve), HPAs reading a Pods and an External metric each. Quick: 50 pods, 20 HPAs; full: 500
 * and 200 (10,000 series).
 */
export const PROMETHEUS_ADAPTER_FLEET = {
  name: "prometheus-adapter",
  size: (quick) => fleetSize(quick),
  describe: (s) =>
    `${s.pods} pods, ${s.pods * 20} series, ${s.hpas} HPAs (a Pods and an External metric each) ` +
    `in ${s.namespaces} namespaces`,
  settings: () => ({ config: CONFIG_YAML }),
  async create(ctx, size) {
    const { client, log } = ctx;
    const objs = fleetObjects(size);
    const t0 = performance.now();
    await namespaces(client, objs.namespaces.map((n) => n.metadata.name));
    // prometheus-adapter's own deployment grants its service account read access to these
    // (its ClusterRole resource-reader)
    await grant(client, "bench-peers-resource-reader", [{
      apiGroups: [""],
      resources: ["namespaces", "pods", "services", "nodes"],
      verbs: ["get", "list", "watch"],
    }]);
    await mapLimit(
      objs.statefulSets,
      16,
      (s) =>
        client.request("POST", `/apis/apps/v1/namespaces/${s.metadata.namespace}/statefulsets`, {
          body: s,
        }),
    );
    await mapLimit(objs.pods, 16, async ({ pod, status }) => {
      const ns = pod.metadata.namespace;
      const created = await client.request("POST", `/api/v1/namespaces/${ns}/pods`, { body: pod });
      await client.request("PUT", `/api/v1/namespaces/${ns}/pods/${pod.metadata.name}/status`, {
        body: { ...created, status: { ...created.status, ...status } },
      });
    });
    await mapLimit(objs.hpas, 16, (h) =>
      client.request(
        "POST",
        `/apis/autoscaling/v2/namespaces/${h.metadata.namespace}/horizontalpodautoscalers`,
        { body: h },
      ));
    log(
      `fleet: ${objs.statefulSets.length} StatefulSets, ${objs.pods.length} pods, ` +
        `${objs.hpas.length} HPAs in ${Math.round((performance.now() - t0) / 100) / 10} s`,
    );
    return await exporter(ctx, size);
  },
  reads(size) {
    const out = [];
    for (let h = 0; h < size.hpas; h++) {
      const r = hpaReads(h, size.namespaces);
      out.push({ h, kind: "pods", path: r.pods }, { h, kind: "external", path: r.external });
    }
    return out;
  },
  wanted(r, size) {
    if (r.kind === "pods") {
      const out = [];
      for (let i = 0; i < size.pods; i++) {
        const p = podOf(i, size);
        if (p.h !== r.h) continue;
        let v = 0;
        for (let k = 0; k < QUEUES; k++) v += queueDepth(i, k);
        out.push(`bench_queue_depth Pod/${p.name} ${v * 1000}m`);
      }
      return out.sort();
    }
    const k = r.h % QUEUES;
    const { ns } = hpaNames(r.h, size.namespaces);
    let v = 0;
    for (let i = 0; i < size.pods; i++) if (podOf(i, size).ns === ns) v += queueDepth(i, k);
    return [`queue_queue_depth ${JSON.stringify([["queue", `q${k}`]])} ${v * 1000}m`];
  },
  ours: (o) => [
    `--prometheus-server=${o.prometheusUrl}`,
    `--prometheus-adapter-config=${o.config}`,
    `--metrics-relist-interval=${o.relist}`,
  ],
  correctness(_ctx, size) {
    const reads = this.reads(size).map((r) => ({ ...r, ours: r.path, peer: r.path }));
    return { reads, ours: [], peer: {} };
  },
};

// -- KEDA's fleet -------------------------------------------------------------------------------

/** The label of the ScaledObjects KEDA serves in the correctness pass (ours leaves them). */
const KEDA_COPY_LABEL = "bench.hpa-metrics-adapter/keda";

/**
 * ScaledObjects, each with one prometheus trigger on the harness's Prometheus (its own series:
 * one queue of one exporter pod) and a StatefulSet to scale (nothing runs its pods: the
 * harness's controller manager has no StatefulSet controller). minReplicaCount =
 * maxReplicaCount = 1: the HPA controller reads each HPA's metric every sync and scales
 * nothing. Quick: 1,000 ScaledObjects; full: 3,000 (KEDA's users report p99 of ~5 s at 300+ and
 * timeouts at 1,500). `BENCH_PEERS_SCALED_OBJECTS` overrides the count.
 */
export const KEDA_FLEET = {
  name: "keda",
  size(quick) {
    const scaledObjects = Number(process.env.BENCH_PEERS_SCALED_OBJECTS) ||
      (quick ? 1000 : 3000);
    const pods = Math.ceil(scaledObjects / QUEUES);
    // the series' pod names (fleet.mjs podOf: one "HPA" a pod, so each name is its own)
    return {
      scaledObjects,
      pods,
      hpas: pods,
      namespaces: 10,
      correctness: Math.min(200, scaledObjects),
    };
  },
  describe: (s) =>
    `${s.scaledObjects} ScaledObjects (a prometheus trigger each, on its own series: one of the ` +
    `${s.pods * QUEUES} queue gauges of ${s.pods} exporter pods) and their StatefulSets in ` +
    `${s.namespaces} namespaces`,
  settings: (s) => ({ scaledObject: kedaScaledObject(0, s, "<prometheus>") }),
  async create(ctx, size) {
    const { client, log, kubectl } = ctx;
    const t0 = performance.now();
    // KEDA's own CRDs (its operator watches all six), over the harness's schemas of them
    const crds = kedaCrdFiles();
    kubectl(["apply", "--server-side", "--force-conflicts", ...crds.flatMap((f) => ["-f", f])]);
    kubectl([
      "wait",
      "--for=condition=Established",
      "--timeout=60s",
      ...crds.flatMap((f) => ["-f", f]),
    ]);
    // KEDA's ClusterRole reads every scalable kind and writes HPAs, Leases and events
    // (config/rbac); both run as the adapter's service account, here with cluster-admin
    await grant(client, "bench-peers-keda", null, "cluster-admin");
    const nss = Array.from({ length: size.namespaces }, (_, n) => `keda-peers-${n}`);
    await namespaces(client, [...nss, "keda", "keda-corr-ours", "keda-corr-keda"]);
    const all = Array.from({ length: size.scaledObjects }, (_, j) => j);
    await mapLimit(all, 16, async (j) => {
      const { ns, name } = kedaNames(j, size);
      await client.request("POST", `/apis/apps/v1/namespaces/${ns}/statefulsets`, {
        body: kedaStatefulSet(ns, name),
      });
      await client.request("POST", `/apis/keda.sh/v1alpha1/namespaces/${ns}/scaledobjects`, {
        body: kedaScaledObject(j, size, ctx.state.prometheus.url),
      });
    });
    log(
      `fleet: ${size.scaledObjects} StatefulSets and ScaledObjects in ${
        Math.round((performance.now() - t0) / 100) / 10
      } s`,
    );
    return await exporter(ctx, size);
  },
  reads(size) {
    return Array.from({ length: size.scaledObjects }, (_, j) => {
      const { ns, name } = kedaNames(j, size);
      return { h: j, kind: "external", path: kedaRead(ns, name) };
    });
  },
  wanted(r) {
    const { i, k } = kedaSeries(r.h);
    return [`s0-prometheus [] ${queueDepth(i, k) * 1000}m`];
  },
  ours: () => ["--keda-scaled-objects"],
  /** At rest, each ScaledObject's loop patches its status (lastActiveTime) every 30 s. */
  dueWrites: (size) => ({ what: "patch scaledobjects/status", perMinute: size.scaledObjects * 2 }),
  /**
   * How many ScaledObjects have their HPA (whoever wrote it): a list from kube-apiserver's watch
   * cache (resourceVersion=0), not from etcd, as it runs every second during a session.
   */
  async written(ctx, size) {
    const l = await ctx.client.request(
      "GET",
      "/apis/autoscaling/v2/horizontalpodautoscalers?resourceVersion=0",
    );
    const count = l.items.filter((h) => h.metadata.namespace.startsWith("keda-peers-")).length;
    return { done: count === size.scaledObjects, count, of: size.scaledObjects };
  },
  /** The last adapter's HPAs go: each session starts with none (nor a keda-operator label). */
  async reset(ctx, size) {
    for (let n = 0; n < size.namespaces; n++) {
      await ctx.client.request(
        "DELETE",
        `/apis/autoscaling/v2/namespaces/keda-peers-${n}/horizontalpodautoscalers`,
      );
    }
    await until(async () => {
      const l = await ctx.client.request("GET", "/apis/autoscaling/v2/horizontalpodautoscalers");
      return !l.items.some((h) => h.metadata.namespace.startsWith("keda-peers-"));
    }, "HPAs of the fleet still there");
  },
  /**
   * Both at once: the first `size.correctness` ScaledObjects again in two namespaces, the same
   * triggers; KEDA watches keda-corr-keda (WATCH_NAMESPACE), whose copies carry the label ours
   * leaves out (--keda-scaled-object-selector); ours serves keda-corr-ours (and the fleet,
   * whose HPAs are removed first). The same read in each namespace is compared.
   */
  async correctness(ctx, size) {
    await this.reset(ctx, size);
    const js = Array.from({ length: size.correctness }, (_, j) => j);
    const reads = [];
    await mapLimit(js, 16, async (j) => {
      const { name } = kedaNames(j, size);
      for (const [ns, label] of [["keda-corr-ours", null], ["keda-corr-keda", "true"]]) {
        await ctx.client.request("POST", `/apis/apps/v1/namespaces/${ns}/statefulsets`, {
          body: kedaStatefulSet(ns, name),
        });
        const so = kedaScaledObject(j, size, ctx.state.prometheus.url);
        so.metadata.namespace = ns;
        if (label) so.metadata.labels = { [KEDA_COPY_LABEL]: label };
        await ctx.client.request("POST", `/apis/keda.sh/v1alpha1/namespaces/${ns}/scaledobjects`, {
          body: so,
        });
      }
      reads.push({
        h: j,
        kind: "external",
        ours: kedaRead("keda-corr-ours", name),
        peer: kedaRead("keda-corr-keda", name),
      });
    });
    reads.sort((a, b) => a.h - b.h);
    return {
      reads,
      ours: [`--keda-scaled-object-selector=${KEDA_COPY_LABEL}!=true`],
      peer: { watchNamespaces: "keda-corr-keda" },
    };
  },
};

/** ScaledObject j's namespace and name (its StatefulSet's too). */
function kedaNames(j, size) {
  return { ns: `keda-peers-${j % size.namespaces}`, name: `so-${String(j).padStart(4, "0")}` };
}

/** ScaledObject j's series: queue k of exporter pod i. */
function kedaSeries(j) {
  return { i: Math.floor(j / QUEUES), k: j % QUEUES };
}

/** The read the HPA controller makes for a ScaledObject's HPA (KEDA's metric name, selector). */
function kedaRead(ns, name) {
  return `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/s0-prometheus?labelSelector=${
    encodeURIComponent(`scaledobject.keda.sh/name=${name}`)
  }`;
}

function kedaStatefulSet(ns, name) {
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: { name, namespace: ns },
    spec: {
      replicas: 1,
      serviceName: name,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: "app", image: "e2e.invalid/app:1" }] },
      },
    },
  };
}

function kedaScaledObject(j, size, prometheusUrl) {
  const { ns, name } = kedaNames(j, size);
  const { i, k } = kedaSeries(j);
  return {
    apiVersion: "keda.sh/v1alpha1",
    kind: "ScaledObject",
    metadata: { name, namespace: ns },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "StatefulSet", name },
      minReplicaCount: 1,
      maxReplicaCount: 1,
      triggers: [{
        type: "prometheus",
        metadata: {
          serverAddress: prometheusUrl,
          query: `sum(bench_queue_depth{pod="${podOf(i, size).name}",queue="q${k}"})`,
          threshold: "1000",
        },
      }],
    },
  };
}
