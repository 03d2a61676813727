/**
 * prometheus-adapter's config file, side by side with prometheus-adapter v0.12.0 itself (issue
 * 49), on the real control plane and the harness's real Prometheus. The harness starts this
 * adapter with `--prometheus-adapter-config=tests/e2e/prometheus_adapter/config.yaml` (its own
 * default config from `cmd/config-gen`, then rules that use every template field, both series
 * filters, overrides and templates, and external rules with and without the namespace);
 * prometheus-adapter, built from its Go module (tests/e2e/prometheus_adapter_tool.ts), runs on
 * the same file in the harness's network namespace. Exporter pods serve the same series to
 * Prometheus (file_sd, labelled with their namespace and pod). Then both must answer alike:
 *
 * - the discovery documents of custom.metrics.k8s.io (v1beta1, v1beta2) and
 *   external.metrics.k8s.io: the same metrics, kinds and verbs;
 * - every custom metric discovered, read for all pods (with and without a label selector), for
 *   one pod, for the namespace and for an object of each other resource it names; and every
 *   external metric, with and without a label selector: the same status, and the same items
 *   (names, labels, values) but for the timestamps;
 * - metrics.k8s.io/v1beta1 from the config's `resourceRules`: the discovery document, PodMetrics
 *   of every namespace, of the namespace (all, by labelSelector, by fieldSelector), of one pod
 *   and of a pod that does not exist, NodeMetrics of a Node the suite makes (an exporter target
 *   labelled `instance="<the node>"` serves the `id="/"` series of the nodeQuery), by
 *   labelSelector and fieldSelector, and of a node that does not exist: every field the same but the timestamps (and the containers'
 *   order, which is Go's map order upstream).
 *
 * Ours is read as the HPA controller reads it (through the aggregator), and its metrics.k8s.io
 * directly on its own address, then through the aggregator once the suite has registered
 * deploy/components/resource-metrics' APIService; prometheus-adapter directly on its port; both
 * direct reads with the harness's admin certificate.
 *
 *   HPA_E2E_SUITE=tests/e2e/prometheus_adapter_e2e_test.ts node --import tsx tests/e2e/harness.ts test
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { E2E, readState, ROOT, STATE_DIR, waitFor } from "./harness.ts";
import { ANNOTATIONS } from "./kubelet.ts";
import { load } from "js-yaml";
import { createKubeClient, KubeApiError, loadKubeconfig } from "./kube_client.ts";
import type { KubeClient } from "./kube_client.ts";
import { ensurePrometheusAdapter } from "./prometheus_adapter_tool.ts";

// deno-lint-ignore no-explicit-any
type Obj = any;

const state = readState();
const WAIT_MS = 90_000;
/** The config both serve (the harness gives it to this adapter). */
export const PROMETHEUS_ADAPTER_CONFIG = join(ROOT, "tests/e2e/prometheus_adapter/config.yaml");
const PEER_PORT = 6443;

/** Whether our adapter was started with the config (it then answers its discovery). */
function servesConfig(): boolean {
  return (process.env.HPA_E2E_ADAPTER_ARGS ?? "").includes("--prometheus-adapter-config=");
}

const SKIP: string | false = !state
  ? "the e2e harness is not up"
  : !state.prometheus
  ? "no Prometheus server (Debian package prometheus)"
  : !servesConfig()
  ? "the adapter runs without --prometheus-adapter-config (see this file)"
  : false;
// in the harness's own run (HPA_E2E_REQUIRED) a skip would hide a phase that did not run
if (SKIP && process.env.HPA_E2E_REQUIRED) {
  throw new Error(
    `this phase cannot run: ${SKIP} (run it with \`HPA_E2E_SUITE=tests/e2e/prometheus_adapter_e2e_test.ts node --import tsx tests/e2e/harness.ts test\`)`,
  );
}

const kube: KubeClient | null = state ? createKubeClient(loadKubeconfig(state.kubeconfig)) : null;

/** Each exporter pod: its labels and the series it serves. */
const PODS: Record<string, { labels: Record<string, string>; series: string }> = {
  "web-0": {
    labels: { app: "web", parity: "even" },
    series: exposition(3, 5, 120, 7.5, 2_000_000),
  },
  "web-1": {
    labels: { app: "web", parity: "odd" },
    series: exposition(4, 0.25, 80, 2.5, 3_500_000),
  },
  "web-2": {
    labels: { app: "web", parity: "even" },
    series: exposition(10, 1, 40, 0, 1_048_576),
  },
};

/**
 * The Node the NodeMetrics are read for: the harness has none (its kubelet stand-in registers
 * no Node object), so the suite makes one, with labels, and deletes it after. Not named as the
 * kubelet's node: nothing but these reads should see it.
 */
const NODE = "e2e-metrics-node";

/** The node's series (cAdvisor's root cgroup, `id="/"`), scraped as `instance="<NODE>"`. */
const NODE_EXPORTER = {
  name: "node-exporter",
  series: [
    "# TYPE container_cpu_usage_seconds_total counter",
    'container_cpu_usage_seconds_total{id="/"} 1234.5',
    "# TYPE container_memory_working_set_bytes gauge",
    'container_memory_working_set_bytes{id="/"} 4294967296',
    "",
  ].join("\n"),
};

/** A pod's series in Prometheus' text format (gauges, counters, container series). */
function exposition(a: number, b: number, requests: number, busy: number, memory: number): string {
  return [
    "# TYPE e2e_queue_depth gauge",
    `e2e_queue_depth{queue="a"} ${a}`,
    `e2e_queue_depth{queue="b"} ${b}`,
    "# TYPE e2e_requests_total counter",
    `e2e_requests_total ${requests}`,
    "# TYPE e2e_busy_seconds_total counter",
    `e2e_busy_seconds_total ${busy}`,
    "# TYPE container_memory_working_set_bytes gauge",
    `container_memory_working_set_bytes{container="app"} ${memory}`,
    `container_memory_working_set_bytes{container="POD"} 999`,
    "# TYPE container_cpu_usage_seconds_total counter",
    `container_cpu_usage_seconds_total{container="app"} ${requests / 10}`,
    "",
  ].join("\n");
}

/** The ClusterRole (and binding) that lets our adapter list what `*` reads list. */
const LISTER = "e2e-prometheus-adapter-lister";

describe("e2e: side by side with prometheus-adapter v0.12.0", {
  skip: SKIP,
  timeout: 10 * 60_000,
}, () => {
  const ns = `e2e-padapter-${Math.random().toString(36).slice(2, 7)}`;
  let dir = "";
  let child: ChildProcess | null = null;
  let exited: Promise<void> = Promise.resolve();
  /** Whether the metrics test registered v1beta1.metrics.k8s.io (deleted after). */
  let registered = false;

  /** A GET of prometheus-adapter's API (the harness's admin certificate). */
  const fromPeer = (path: string): Promise<{ status: number; body: Obj }> =>
    direct(E2E.prometheusIp, PEER_PORT, path);

  /** A GET of our adapter on its own address (the harness's admin certificate). */
  const fromOursDirect = (path: string): Promise<{ status: number; body: Obj }> =>
    direct(state!.adapterIp, state!.adapterPort, path);

  /** A GET of a server in the harness's namespace, with the harness's admin certificate. */
  const direct = (
    host: string,
    port: number,
    path: string,
  ): Promise<{ status: number; body: Obj }> =>
    new Promise((resolve, reject) => {
      const req = httpsRequest({
        host,
        port,
        path,
        rejectUnauthorized: false,
        cert: readFileSync(join(STATE_DIR, "pki", "admin.crt")),
        key: readFileSync(join(STATE_DIR, "pki", "admin.key")),
      }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d) => (text += d));
        res.on("end", () => {
          let body: Obj = text;
          try {
            body = JSON.parse(text);
          } catch {
            // not JSON: kept as text
          }
          resolve({ status: res.statusCode ?? 0, body });
        });
      });
      req.on("error", reject);
      req.end();
    });

  /** A GET of ours through the aggregator, as the HPA controller reads. */
  const fromOurs = async (path: string): Promise<{ status: number; body: Obj }> => {
    try {
      return { status: 200, body: await kube!.request("GET", path) };
    } catch (e) {
      if (!(e instanceof KubeApiError)) throw e;
      let body: Obj = e.body;
      try {
        body = JSON.parse(e.body);
      } catch {
        // not a Status
      }
      return { status: e.status, body };
    }
  };

  before(async () => {
    const bin = ensurePrometheusAdapter();
    dir = mkdtempSync(join(tmpdir(), "e2e-padapter-"));
    const admin = join(STATE_DIR, "kubeconfig");
    const log = openSync(join(STATE_DIR, "logs", "prometheus-adapter.log"), "a");
    child = spawn("ip", [
      "netns",
      "exec",
      E2E.netns,
      bin,
      `--bind-address=${E2E.prometheusIp}`,
      `--secure-port=${PEER_PORT}`,
      `--cert-dir=${join(dir, "certs")}`,
      `--lister-kubeconfig=${admin}`,
      `--authentication-kubeconfig=${admin}`,
      `--authorization-kubeconfig=${admin}`,
      `--prometheus-url=${state!.prometheus!.url}`,
      "--metrics-relist-interval=5s",
      `--config=${PROMETHEUS_ADAPTER_CONFIG}`,
      "--v=2",
    ], { stdio: ["ignore", log, log] });
    exited = new Promise((resolve) => child!.once("exit", () => resolve()));

    await kube!.request("POST", "/api/v1/namespaces", {
      body: { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } },
    });
    await waitFor(() => kube!.get(`/api/v1/namespaces/${ns}/serviceaccounts/default`), {
      what: `service account default in ${ns}`,
      timeoutMs: WAIT_MS,
    });
    // the exporters, scraped by the harness's Prometheus with their namespace and pod
    for (const [name, p] of Object.entries(PODS)) {
      await kube!.request("POST", `/api/v1/namespaces/${ns}/pods`, {
        body: {
          apiVersion: "v1",
          kind: "Pod",
          metadata: {
            name,
            namespace: ns,
            labels: p.labels,
            annotations: {
              [ANNOTATIONS.metrics]: p.series,
              [ANNOTATIONS.contentType]: "text/plain; version=0.0.4",
            },
          },
          spec: {
            containers: [{
              name: "app",
              image: "e2e.invalid/exporter:1",
              ports: [{ containerPort: 9100 }],
            }],
          },
        },
      });
    }
    // the node's exporter: a pod too (the kubelet stand-in serves its annotation)
    await kube!.request("POST", `/api/v1/namespaces/${ns}/pods`, {
      body: {
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          name: NODE_EXPORTER.name,
          namespace: ns,
          labels: { app: "node-exporter" },
          annotations: {
            [ANNOTATIONS.metrics]: NODE_EXPORTER.series,
            [ANNOTATIONS.contentType]: "text/plain; version=0.0.4",
          },
        },
        spec: {
          containers: [{
            name: "app",
            image: "e2e.invalid/exporter:1",
            ports: [{ containerPort: 9100 }],
          }],
        },
      },
    });
    await kube!.request("POST", "/api/v1/nodes", {
      body: {
        apiVersion: "v1",
        kind: "Node",
        metadata: { name: NODE, labels: { "e2e.hpa-metrics-adapter/metrics": "node", zone: "a" } },
      },
    });
    const targets = [];
    for (const name of [...Object.keys(PODS), NODE_EXPORTER.name]) {
      const ip = await waitFor(async () => {
        const p = await kube!.request("GET", `/api/v1/namespaces/${ns}/pods/${name}`);
        return (p.status?.conditions ?? []).some((c: Obj) =>
            c.type === "Ready" && c.status === "True"
          )
          ? p.status.podIP as string
          : undefined;
      }, { what: `pod ${name} ready`, timeoutMs: WAIT_MS });
      targets.push({
        targets: [`${ip}:9100`],
        labels: name === NODE_EXPORTER.name ? { instance: NODE } : { namespace: ns, pod: name },
      });
    }
    writeFileSync(join(state!.prometheus!.targetsDir, `${ns}.json`), JSON.stringify(targets));
    // `*` reads of other resources than pods list their objects: prometheus-adapter with the
    // harness's admin credentials, ours with its ServiceAccount, granted list here as a user
    // grants it for the resources their rules name; and a TriggerAuthentication the queue
    // label "a" names
    await kube!.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", {
      body: {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRole",
        metadata: { name: LISTER },
        rules: [
          { apiGroups: ["batch"], resources: ["jobs"], verbs: ["list"] },
          { apiGroups: ["keda.sh"], resources: ["triggerauthentications"], verbs: ["list"] },
        ],
      },
    });
    await kube!.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
      body: {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: LISTER },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: LISTER },
        subjects: [{
          kind: "ServiceAccount",
          name: E2E.adapterServiceAccount,
          namespace: E2E.adapterNamespace,
        }],
      },
    });
    await kube!.request("POST", `/apis/keda.sh/v1alpha1/namespaces/${ns}/triggerauthentications`, {
      body: {
        apiVersion: "keda.sh/v1alpha1",
        kind: "TriggerAuthentication",
        metadata: { name: "a", namespace: ns, labels: { queue: "a" } },
        spec: {},
      },
    });
    // every series scraped, and a few samples of each counter (rates over two or more)
    await waitFor(async () => {
      const q = `count(count_over_time(e2e_requests_total{namespace="${ns}"}[5m]) >= 3)`;
      const r = await fetch(
        `${state!.prometheus!.url}/api/v1/query?query=${encodeURIComponent(q)}`,
      );
      return (await r.json()).data?.result?.[0]?.value?.[1] === "3" || undefined;
    }, { what: "Prometheus with three samples of each pod's series", timeoutMs: WAIT_MS });
    await waitFor(async () => {
      const q =
        `count_over_time(container_cpu_usage_seconds_total{instance="${NODE}",id="/"}[5m]) >= 3`;
      const r = await fetch(
        `${state!.prometheus!.url}/api/v1/query?query=${encodeURIComponent(q)}`,
      );
      return ((await r.json()).data?.result ?? []).length === 1 || undefined;
    }, { what: "Prometheus with three samples of the node's series", timeoutMs: WAIT_MS });
    await waitFor(
      async () =>
        (await fromPeer("/apis/custom.metrics.k8s.io/v1beta1").catch(() => null))
            ?.status === 200 || undefined,
      { what: `prometheus-adapter at ${E2E.prometheusIp}:${PEER_PORT}`, timeoutMs: WAIT_MS },
    );
  });

  after(async () => {
    if (child !== null && child.exitCode === null) {
      child.kill("SIGTERM");
      const kill = setTimeout(() => child?.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(kill);
    }
    if (state?.prometheus) rmSync(join(state.prometheus.targetsDir, `${ns}.json`), { force: true });
    if (registered) {
      await kube!.request(
        "DELETE",
        "/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.k8s.io",
      ).catch(() => {});
    }
    for (const kind of ["clusterrolebindings", "clusterroles"]) {
      await kube!.request("DELETE", `/apis/rbac.authorization.k8s.io/v1/${kind}/${LISTER}`)
        .catch(() => {});
    }
    if (!process.env.HPA_E2E_KEEP) {
      await kube!.request("DELETE", `/api/v1/namespaces/${ns}`).catch(() => {});
      await kube!.request("DELETE", `/api/v1/nodes/${NODE}`).catch(() => {});
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /**
   * A discovery document's resources, by name (the order is each server's own), without the
   * fixed entry this adapter always lists (`custommetrics`, `externalmetrics`: a group is never
   * empty, and `kubectl api-resources` has a line for it; README).
   */
  const resources = (doc: Obj): Obj[] =>
    [...(doc?.resources ?? [])]
      .filter((r: Obj) => r.name !== "custommetrics" && r.name !== "externalmetrics")
      .sort((a: Obj, b: Obj) => a.name < b.name ? -1 : 1);

  /** Both discovery documents once both list every metric of the exporters' series. */
  async function discovered(path: string, wants: string[]): Promise<[Obj[], Obj[]]> {
    let last: [Obj[], Obj[]] = [[], []];
    await waitFor(async () => {
      const [p, o] = await Promise.all([fromPeer(path), fromOurs(path)]);
      last = [resources(p.body), resources(o.body)];
      return last.every((list) => wants.every((w) => list.some((r) => r.name === w))) ||
        undefined;
    }, { what: `${wants.join(", ")} in ${path} of both`, timeoutMs: WAIT_MS }).catch(() => {});
    return last;
  }

  it("lists the same metrics in every discovery document", async () => {
    for (const version of ["v1beta1", "v1beta2"]) {
      const [peer, ours] = await discovered(`/apis/custom.metrics.k8s.io/${version}`, [
        "pods/max_queue_depth",
        "namespaces/ns_e2e_queue_depth",
        "pods/memory_working_set_bytes",
      ]);
      assert.ok(peer.length > 0, `prometheus-adapter's ${version} discovery is empty`);
      assert.deepEqual(ours, peer, `custom.metrics.k8s.io/${version}`);
    }
    const [peer, ours] = await discovered("/apis/external.metrics.k8s.io/v1beta1", [
      "e2e_queue_depth",
      "cluster_requests",
      "busy_scalar",
    ]);
    assert.deepEqual(ours, peer, "external.metrics.k8s.io/v1beta1");
  });

  it("answers every custom and external read alike", async () => {
    const [custom] = await discovered("/apis/custom.metrics.k8s.io/v1beta1", [
      "pods/max_queue_depth",
      // a CRD's resource: both resolve the rules' resources with the cluster's discovery
      "triggerauthentications.keda.sh/auth_queue_depth",
    ]);
    const [external] = await discovered("/apis/external.metrics.k8s.io/v1beta1", [
      "busy_scalar",
    ]);
    const base = "/apis/custom.metrics.k8s.io/v1beta1";
    const paths: string[] = [];
    for (const r of custom) {
      const [resource, metric] = [
        r.name.slice(0, r.name.indexOf("/")),
        r.name.slice(r.name.indexOf("/") + 1),
      ];
      if (resource === "pods") {
        paths.push(
          `${base}/namespaces/${ns}/pods/*/${metric}`,
          `${base}/namespaces/${ns}/pods/*/${metric}?labelSelector=${
            encodeURIComponent("parity=even")
          }`,
          `${base}/namespaces/${ns}/pods/web-1/${metric}`,
        );
      } else if (resource === "namespaces") {
        paths.push(`${base}/namespaces/${ns}/metrics/${metric}`);
      } else if (r.namespaced) {
        // an object the series name (queue "a"), one they do not, and every object (listed
        // from kube-apiserver), with a labelSelector too
        paths.push(
          `${base}/namespaces/${ns}/${resource}/a/${metric}`,
          `${base}/namespaces/${ns}/${resource}/e2e/${metric}`,
          `${base}/namespaces/${ns}/${resource}/*/${metric}`,
          `${base}/namespaces/${ns}/${resource}/*/${metric}?labelSelector=${
            encodeURIComponent("queue=a")
          }`,
        );
      } else {
        paths.push(`${base}/${resource}/e2e/${metric}`);
      }
    }
    for (const r of external) {
      const path = `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/${r.name}`;
      paths.push(path, `${path}?labelSelector=${encodeURIComponent("queue=b")}`);
    }
    // and what neither has: a pod without series, a metric no rule names, an external one
    paths.push(
      `${base}/namespaces/${ns}/pods/nope/max_queue_depth`,
      `${base}/namespaces/${ns}/pods/*/no_such_metric`,
      `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/no_such_metric`,
    );
    assert.ok(paths.length >= 20, `only ${paths.length} reads: ${paths.join(" ")}`);
    /** An answer as compared: the items but their timestamps, or the error's code. */
    const comparable = (a: { status: number; body: Obj }) =>
      a.status === 200
        ? {
          status: 200,
          kind: a.body.kind,
          items: (a.body.items ?? []).map((i: Obj) => ({ ...i, timestamp: "-" })),
        }
        : { status: a.status, reason: a.body?.reason ?? null };
    const differ: string[] = [];
    for (const path of paths) {
      // read at the same moment until both agree (ours collects on its schedule), at most 8 s
      let last: [Obj, Obj] = [null, null];
      await waitFor(async () => {
        const [p, o] = await Promise.all([fromPeer(path), fromOurs(path)]);
        last = [comparable(p), comparable(o)];
        return JSON.stringify(last[0]) === JSON.stringify(last[1]) || undefined;
      }, { what: path, timeoutMs: 8_000 }).catch(() => {});
      if (JSON.stringify(last[0]) !== JSON.stringify(last[1])) {
        differ.push(
          `${path}\n  prometheus-adapter: ${JSON.stringify(last[0])}\n  ours:               ${
            JSON.stringify(last[1])
          }`,
        );
      }
    }
    assert.deepEqual(differ, [], `${differ.length} of ${paths.length} reads differ`);
  });

  it("answers metrics.k8s.io from resourceRules alike: PodMetrics and NodeMetrics", async () => {
    const base = "/apis/metrics.k8s.io/v1beta1";
    const [peerDoc, oursDoc] = await Promise.all([fromPeer(base), fromOursDirect(base)]);
    assert.equal(peerDoc.status, 200, JSON.stringify(peerDoc.body));
    assert.deepEqual(oursDoc, peerDoc, base);
    const paths = [
      `${base}/pods`,
      `${base}/namespaces/${ns}/pods`,
      `${base}/namespaces/${ns}/pods?labelSelector=${encodeURIComponent("parity=even")}`,
      `${base}/namespaces/${ns}/pods?fieldSelector=${encodeURIComponent("metadata.name=web-1")}`,
      `${base}/namespaces/${ns}/pods/web-1`,
      `${base}/namespaces/${ns}/pods/nope`,
      `${base}/namespaces/${ns}/pods/${NODE_EXPORTER.name}`,
      `${base}/nodes`,
      `${base}/nodes?labelSelector=${encodeURIComponent("zone=a")}`,
      `${base}/nodes?fieldSelector=${encodeURIComponent(`metadata.name=${NODE}`)}`,
      `${base}/nodes/${NODE}`,
      `${base}/nodes/nope`,
      // selectors the servers cannot parse
      `${base}/namespaces/${ns}/pods?labelSelector=${encodeURIComponent("parity in (even")}`,
      `${base}/nodes?fieldSelector=nope`,
      `${base}/pods?fieldSelector=${encodeURIComponent("metadata.name=web-1,nope")}`,
    ];
    /** A body as compared: without timestamps, containers by name. */
    const comparable = (a: { status: number; body: Obj }): Obj => {
      const strip = (m: Obj): Obj => {
        const { timestamp: _t, metadata, containers, ...rest } = m;
        const { creationTimestamp: _c, ...meta } = metadata ?? {};
        return {
          ...rest,
          metadata: meta,
          ...(containers === undefined ? {} : {
            containers: [...containers].sort((x: Obj, y: Obj) => x.name < y.name ? -1 : 1),
          }),
        };
      };
      // an unparsable labelSelector: the same status and reason (the parser's words differ)
      const message: string = a.body?.message ?? "";
      if (
        a.status === 400 &&
        (message.startsWith("unable to parse requirement") ||
          message.startsWith("invalid labelSelector"))
      ) {
        return { status: 400, body: { reason: a.body.reason, message: "(labelSelector)" } };
      }
      if (a.status !== 200) return a;
      const b = a.body;
      return {
        status: 200,
        body: b.items === undefined ? strip(b) : { ...b, items: b.items.map(strip) },
      };
    };
    const differ: string[] = [];
    let nodeItems = 0;
    let nodesSeen = "";
    for (const path of paths) {
      let last: [Obj, Obj] = [null, null];
      await waitFor(async () => {
        const [p, o] = await Promise.all([fromPeer(path), fromOursDirect(path)]);
        last = [comparable(p), comparable(o)];
        return JSON.stringify(last[0]) === JSON.stringify(last[1]) || undefined;
      }, { what: path, timeoutMs: 8_000 }).catch(() => {});
      if (path === `${base}/nodes`) {
        nodeItems = last[0]?.body?.items?.length ?? 0;
        nodesSeen = JSON.stringify(last);
      }
      if (JSON.stringify(last[0]) !== JSON.stringify(last[1])) {
        differ.push(
          `${path}\n  prometheus-adapter: ${JSON.stringify(last[0])}\n  ours:               ${
            JSON.stringify(last[1])
          }`,
        );
      }
    }
    assert.deepEqual(differ, [], `${differ.length} of ${paths.length} reads differ`);
    // the comparison must have compared something: the node and the web pods have usage
    if (nodeItems !== 1) {
      const q = `container_cpu_usage_seconds_total{id="/"}`;
      const r = await fetch(
        `${state!.prometheus!.url}/api/v1/query?query=${encodeURIComponent(q)}`,
      );
      const nodes = await kube!.request("GET", "/api/v1/nodes");
      assert.fail(
        `prometheus-adapter lists no NodeMetrics: ${nodesSeen}; Prometheus has ${await r
          .text()}; nodes ${JSON.stringify(nodes.items.map((n: Obj) => n.metadata.name))}`,
      );
    }
    const pods = await fromPeer(`${base}/namespaces/${ns}/pods`);
    assert.deepEqual(
      pods.body.items.map((i: Obj) => i.metadata.name),
      ["web-0", "web-1", "web-2"],
    );

    // registered as deploy/components/resource-metrics does (with the harness's verified CA, as
    // its other APIServices), the aggregator's reads (kubectl top's, the HPA controller's)
    // answer as the direct ones
    const api = load(
      readFileSync(join(ROOT, "deploy/components/resource-metrics/apiservice.yaml"), "utf8"),
    ) as Obj;
    const custom = await kube!.get(
      "/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.custom.metrics.k8s.io",
    ) as Obj;
    api.spec.insecureSkipTLSVerify = custom.spec.insecureSkipTLSVerify ?? false;
    if (custom.spec.caBundle) api.spec.caBundle = custom.spec.caBundle;
    await kube!.request("POST", "/apis/apiregistration.k8s.io/v1/apiservices", { body: api });
    registered = true;
    await waitFor(async () => {
      const obj = await kube!.get(
        "/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.k8s.io",
      ) as Obj;
      return (obj.status?.conditions ?? []).some((c: Obj) =>
        c.type === "Available" && c.status === "True"
      ) || undefined;
    }, { what: "APIService v1beta1.metrics.k8s.io Available", timeoutMs: WAIT_MS });
    const throughAggregator: string[] = [];
    for (const path of paths) {
      let last: [Obj, Obj] = [null, null];
      await waitFor(async () => {
        const [d, a] = await Promise.all([fromOursDirect(path), fromOurs(path)]);
        last = [comparable(d), comparable(a)];
        return JSON.stringify(last[0]) === JSON.stringify(last[1]) || undefined;
      }, { what: path, timeoutMs: 8_000 }).catch(() => {});
      if (JSON.stringify(last[0]) !== JSON.stringify(last[1])) {
        throughAggregator.push(
          `${path}\n  direct:     ${JSON.stringify(last[0])}\n  aggregator: ${
            JSON.stringify(last[1])
          }`,
        );
      }
    }
    assert.deepEqual(throughAggregator, [], "reads through the aggregator differ");
  });
  it("serves an HPA of prometheus-adapter's users as it is: values, no warning, status and plan name the rule", async () => {
    // the exporter pods, adopted by a ReplicaSet of their labels (3 of 3: it makes none)
    await kube!.request("POST", `/apis/apps/v1/namespaces/${ns}/replicasets`, {
      body: {
        apiVersion: "apps/v1",
        kind: "ReplicaSet",
        metadata: { name: "web", namespace: ns },
        spec: {
          replicas: 3,
          selector: { matchLabels: { app: "web" } },
          template: {
            metadata: { labels: { app: "web" } },
            spec: { containers: [{ name: "app", image: "e2e.invalid/exporter:1" }] },
          },
        },
      },
    });
    const hpa = {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name: "web", namespace: ns },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "ReplicaSet", name: "web" },
        minReplicas: 3,
        maxReplicas: 3,
        metrics: [
          {
            type: "Pods",
            pods: {
              metric: { name: "max_queue_depth" },
              target: { type: "AverageValue", averageValue: "100" },
            },
          },
          {
            type: "External",
            external: {
              metric: { name: "e2e_queue_depth", selector: { matchLabels: { queue: "a" } } },
              target: { type: "Value", value: "100" },
            },
          },
        ],
      },
    };
    await kube!.request(
      "POST",
      `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers`,
      { body: hpa },
    );
    // the HPA controller's reads: the pods' max (5, 4, 10) averaged, and queue a summed
    const current = await waitFor(async () => {
      const h = await kube!.request(
        "GET",
        `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers/web`,
      );
      const m = h.status?.currentMetrics ?? [];
      return m.length === 2 && m.every((x: Obj) => x.type) ? m : undefined;
    }, { what: "the HPA's current metrics", timeoutMs: WAIT_MS });
    assert.deepEqual(current, [
      {
        type: "Pods",
        pods: { metric: { name: "max_queue_depth" }, current: { averageValue: "6333m" } },
      },
      {
        type: "External",
        external: {
          metric: { name: "e2e_queue_depth", selector: { matchLabels: { queue: "a" } } },
          current: { value: "17" },
        },
      },
    ]);
    // the status page: each metric served by its rule, no error
    // (read on the adapter's own metrics address: the service proxy needs a Pod behind it)
    const status = await (await fetch(
      `http://${state!.adapterIp}:${E2E.adapterMetricsPort}/status.json`,
    )).json();
    const mine = (status.hpas as Obj[]).find((h) => h.namespace === ns && h.name === "web");
    assert.deepEqual(
      mine?.metrics.map((m: Obj) => [m.name, m.state, m.delegate, m.error]),
      [
        ["max_queue_depth", "delegated", "prometheus-adapter's rules[6]", null],
        ["e2e_queue_depth", "delegated", "prometheus-adapter's externalRules[0]", null],
      ],
    );
    // no Warning from this adapter on the HPA
    const events = await kube!.request(
      "GET",
      `/api/v1/namespaces/${ns}/events?fieldSelector=${
        encodeURIComponent("involvedObject.kind=HorizontalPodAutoscaler,involvedObject.name=web")
      }`,
    );
    assert.deepEqual(
      (events.items as Obj[]).filter((e) => e.reason === "CreateNewMetricsCollector"),
      [],
    );
    // plan on the same HPA and config, with the same Prometheus: the same rules, and the query
    const file = join(dir, "hpa.yaml");
    writeFileSync(file, JSON.stringify(hpa));
    const out = spawnSync(process.execPath, [
      "--import",
      "tsx",
      join(ROOT, "src/main.ts"),
      "plan",
      "-f",
      file,
      `--prometheus-adapter-config=${PROMETHEUS_ADAPTER_CONFIG}`,
      `--prometheus-server=${state!.prometheus!.url}`,
      // the cluster's resources: a rule names a CRD
      `--kubeconfig=${state!.kubeconfig}`,
      "-o",
      "json",
    ], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
    assert.equal(out.status, 0, out.stderr);
    assert.deepEqual(JSON.parse(out.stdout).map((r: Obj) => r.prometheusAdapter), [
      {
        read: `custom.metrics.k8s.io namespaces/${ns}/pods/*/max_queue_depth`,
        rule: "rules[6]",
        series: "e2e_queue_depth",
        query:
          `max(e2e_queue_depth{namespace="${ns}",pod=~"<pod-1>|<pod-2>",pod=~"<pod-1>|<pod-2>"}) by (pod)`,
      },
      {
        read: `external.metrics.k8s.io namespaces/${ns}/e2e_queue_depth with labelSelector`,
        rule: "externalRules[0]",
        series: "e2e_queue_depth",
        query: `sum(e2e_queue_depth{queue="a",namespace="${ns}"}) by (queue)`,
      },
    ]);
  });
});
