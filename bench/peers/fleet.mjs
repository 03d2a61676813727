// The side-by-side benchmark's fleet (bench/peers/run.mjs): exporter pods whose series the e2e
// harness's Prometheus scrapes, StatefulSets and HPAs reading Pods and External metrics served
// by prometheus-adapter's rules, and the rules file both adapters serve.
//
// One exporter process (this file run as a script, inside the harness's network namespace)
// answers every pod's series on one loopback port, at `/metrics/<pod number>`; the file_sd
// targets give each pod its own `__metrics_path__` and its `namespace` and `pod` labels, as a
// pod's scrape config would. So the fleet is not bound by the kubelet stand-in's 90 addresses.
// The pods themselves exist in the cluster (the adapters list them by the HPA's selector),
// bound to a node no kubelet serves and marked Running and Ready through their status, as
// bench/shard_pods.mjs does.
import { createServer } from "node:http";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Queues (gauge series) and codes (counter series) of each pod: 20 series a pod. */
export const QUEUES = 10;
export const CODES = 10;

/** The node the fleet's pods are bound to (no kubelet serves it: the stand-in leaves them). */
export const FLEET_NODE = "bench-peers-node";

/** The fleet of a run: quick 50 pods and 20 HPAs, full 500 and 200 (20 series a pod). */
export function fleetSize(quick) {
  return quick ? { pods: 50, hpas: 20, namespaces: 5 } : { pods: 500, hpas: 200, namespaces: 10 };
}

/** Queue `k`'s depth on pod number `i`: fixed, so that both adapters must serve the same. */
export function queueDepth(i, k) {
  return ((i * 7 + k * 3) % 50) + 1;
}

/** Where HPA number `h` is: its namespace and name (also its StatefulSet's and pods' `app`). */
export function hpaNames(h, namespaces) {
  return { ns: `peers-${h % namespaces}`, name: `peer-${String(h).padStart(4, "0")}` };
}

/** Pod number `i`: it belongs to HPA `i % hpas`; its namespace, name and address. */
export function podOf(i, { hpas, namespaces }) {
  const h = i % hpas;
  const { ns, name } = hpaNames(h, namespaces);
  return {
    h,
    ns,
    app: name,
    name: `${name}-${Math.floor(i / hpas)}`,
    // unique, never dialled: the series are scraped from the exporter's port
    ip: `127.1.${Math.floor(i / 250)}.${(i % 250) + 1}`,
  };
}

/** The Prometheus text of pod `i`: its gauges and its counters (growing at k+1 a second). */
export function exposition(i, nowSeconds) {
  const lines = ["# TYPE bench_queue_depth gauge"];
  for (let k = 0; k < QUEUES; k++) {
    lines.push(`bench_queue_depth{queue="q${k}"} ${queueDepth(i, k)}`);
  }
  lines.push("# TYPE bench_requests_total counter");
  for (let k = 0; k < CODES; k++) {
    lines.push(`bench_requests_total{code="c${k}"} ${Math.floor((k + 1) * nowSeconds)}`);
  }
  return lines.join("\n") + "\n";
}

/**
 * prometheus-adapter's config file both adapters serve: a Pods metric per pod (the sum of its
 * queues), a rate over the counters (discovered, not read by the HPAs: their values move with
 * the scrape times) and an External metric by queue in the namespace.
 */
export const CONFIG_YAML = `rules:
  - seriesQuery: 'bench_queue_depth{namespace!="",pod!=""}'
    resources:
      overrides:
        namespace: { resource: namespace }
        pod: { resource: pod }
    metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
  - seriesQuery: 'bench_requests_total{namespace!="",pod!=""}'
    resources:
      overrides:
        namespace: { resource: namespace }
        pod: { resource: pod }
    name: { matches: "^bench_(.*)_total$", as: "\${1}_per_second" }
    metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
externalRules:
  - seriesQuery: 'bench_queue_depth{namespace!=""}'
    resources:
      overrides:
        namespace: { resource: namespace }
    name: { matches: "^bench_(.*)$", as: "queue_\${1}" }
    metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
`;

/**
 * The cluster objects of the fleet: namespaces, StatefulSets (nothing manages them in the
 * harness: no controller adopts or deletes the pods), pods (with the status to write after
 * the create) and HPAs. HPA h: minReplicas = maxReplicas = its pods, so the HPA controller
 * reads both metrics every sync and scales nothing.
 */
export function fleetObjects(size) {
  const { pods, hpas, namespaces } = size;
  const podsOf = Array.from({ length: hpas }, () => []);
  for (let i = 0; i < pods; i++) podsOf[i % hpas].push(i);
  const ns = Array.from({ length: namespaces }, (_, n) => ({
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: `peers-${n}` },
  }));
  const sets = [];
  const hpaObjs = [];
  for (let h = 0; h < hpas; h++) {
    const { ns: namespace, name } = hpaNames(h, namespaces);
    const replicas = podsOf[h].length;
    sets.push({
      apiVersion: "apps/v1",
      kind: "StatefulSet",
      metadata: { name, namespace },
      spec: {
        replicas,
        serviceName: name,
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { app: name } },
          spec: { containers: [{ name: "app", image: "e2e.invalid/exporter:1" }] },
        },
      },
    });
    hpaObjs.push({
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name, namespace },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "StatefulSet", name },
        minReplicas: replicas,
        maxReplicas: replicas,
        metrics: [
          {
            type: "Pods",
            pods: {
              metric: { name: "bench_queue_depth" },
              target: { type: "AverageValue", averageValue: "1k" },
            },
          },
          {
            type: "External",
            external: {
              metric: {
                name: "queue_queue_depth",
                selector: { matchLabels: { queue: `q${h % QUEUES}` } },
              },
              target: { type: "AverageValue", averageValue: "1k" },
            },
          },
        ],
      },
    });
  }
  const podObjs = [];
  for (let i = 0; i < pods; i++) {
    const p = podOf(i, size);
    podObjs.push({
      pod: {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: p.name, namespace: p.ns, labels: { app: p.app } },
        spec: {
          nodeName: FLEET_NODE,
          containers: [{ name: "app", image: "e2e.invalid/exporter:1" }],
        },
      },
      status: {
        phase: "Running",
        podIP: p.ip,
        podIPs: [{ ip: p.ip }],
        hostIP: "10.213.0.2",
        startTime: new Date().toISOString(),
        conditions: [
          { type: "Ready", status: "True", lastTransitionTime: new Date().toISOString() },
          {
            type: "ContainersReady",
            status: "True",
            lastTransitionTime: new Date().toISOString(),
          },
        ],
      },
    });
  }
  return { namespaces: ns, statefulSets: sets, pods: podObjs, hpas: hpaObjs };
}

/**
 * The reads the HPA controller makes for HPA h, as it makes them: its pods' metric by the
 * StatefulSet's selector and its external metric by its selector.
 */
export function hpaReads(h, namespaces) {
  const { ns, name } = hpaNames(h, namespaces);
  return {
    pods: `/apis/custom.metrics.k8s.io/v1beta2/namespaces/${ns}/pods/*/bench_queue_depth` +
      `?labelSelector=${encodeURIComponent(`app=${name}`)}`,
    external: `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/queue_queue_depth` +
      `?labelSelector=${encodeURIComponent(`queue=q${h % QUEUES}`)}`,
  };
}

/** The file_sd targets of the fleet: one per pod, on the exporter's port, its own path. */
export function fleetTargets(size, port) {
  const out = [];
  for (let i = 0; i < size.pods; i++) {
    const p = podOf(i, size);
    out.push({
      targets: [`127.0.0.1:${port}`],
      labels: { namespace: p.ns, pod: p.name, __metrics_path__: `/metrics/${i}` },
    });
  }
  return out;
}

// As a script (inside the network namespace): serve every pod's series on 127.0.0.1:PORT.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { port, pods } = JSON.parse(process.argv[2]);
  const t0 = Date.now() / 1000;
  let scrapes = 0;
  const server = createServer((req, res) => {
    const m = /^\/metrics\/(\d+)$/.exec(req.url ?? "");
    if (!m || Number(m[1]) >= pods) {
      res.statusCode = 404;
      return res.end();
    }
    scrapes++;
    res.setHeader("content-type", "text/plain; version=0.0.4");
    res.end(exposition(Number(m[1]), Date.now() / 1000 - t0));
  });
  server.keepAliveTimeout = 5000;
  server.listen(port, "127.0.0.1", () => console.log(JSON.stringify({ ready: true, port })));
  setInterval(() => console.error(`scrapes ${scrapes}`), 60_000).unref();
  process.on("SIGTERM", () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
