/**
 * Delegation (issue 26) on the real control plane: our adapter owns the three metrics
 * APIServices; prometheus-adapter, built from its Go module (tests/e2e/prometheus_adapter_tool.ts),
 * serves an external metric from the harness's Prometheus behind it. An HPA on
 * prometheus-adapter's metric scales its Deployment through the aggregator, us and
 * prometheus-adapter (our SubjectAccessReview of the HPA controller first, then its review of
 * our service account, allowed by deploy/components/delegation/rbac.yaml), while an HPA on our
 * own metric of the same series keeps scaling; once prometheus-adapter stops, the HPA on its
 * metric reports an error naming the delegate and ours still follows its metric.
 *
 * The harness must start our adapter with the delegate flags:
 *
 *   HPA_E2E_ADAPTER_ARGS="--delegate-external-metrics=https://10.213.0.3:6443 \
 *     --delegate-insecure-skip-tls-verify --delegate-token-file=$PWD/.e2e/adapter.token \
 *     --delegate-discovery-interval=2s" node --import tsx tests/e2e/harness.ts up
 *   node --import tsx --test tests/e2e/delegation_e2e_test.ts
 *   node --import tsx tests/e2e/harness.ts down
 *
 * prometheus-adapter listens on the Prometheus address of the harness's network namespace
 * (10.213.0.3, port 6443), with the harness's admin kubeconfig for its lister, TokenReview and
 * SubjectAccessReview.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { E2E, kubectl, readState, ROOT, STATE_DIR, waitFor } from "./harness.ts";
import { ANNOTATIONS } from "./kubelet.ts";
import { createKubeClient, loadKubeconfig } from "./kube_client.ts";
import type { KubeClient } from "./kube_client.ts";
import { ensurePrometheusAdapter } from "./prometheus_adapter_tool.ts";

// deno-lint-ignore no-explicit-any
type Obj = any;

const state = readState();
const DELEGATE = `https://${E2E.prometheusIp}:6443`;
const WAIT_MS = 90_000;
const METRIC = "e2e_orders_backlog";

/** Whether our adapter runs with the delegate flags (its own metrics count the discovery). */
async function delegating(): Promise<boolean> {
  if (!state || state.adapter === "stub") return false;
  try {
    const text = await (await fetch(state.adapterMetrics)).text();
    return text.includes(
      `hpa_metrics_adapter_delegate_requests_total{api="external",delegate="${DELEGATE}"`,
    );
  } catch {
    return false;
  }
}

const SKIP: string | false = !state
  ? "the e2e harness is not up"
  : !state.prometheus
  ? "no Prometheus server (Debian package prometheus)"
  : !(await delegating())
  ? `the adapter does not delegate to ${DELEGATE}: start the harness with HPA_E2E_ADAPTER_ARGS (see this file)`
  : false;

const kube: KubeClient | null = state ? createKubeClient(loadKubeconfig(state.kubeconfig)) : null;

/** Scale-up at once, no scale-down: replicas follow the metric up only. */
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

function describeHpa(hpa: Obj): string {
  const conds = (hpa.status?.conditions ?? [])
    .map((c: Obj) => `${c.type}=${c.status} ${c.reason}: ${c.message}`).join("; ");
  return `desired=${hpa.status?.desiredReplicas} current=${hpa.status?.currentReplicas} ` +
    `metrics=${JSON.stringify(hpa.status?.currentMetrics ?? [])} conditions: ${conds}`;
}

describe("e2e: delegation to prometheus-adapter", { skip: SKIP, timeout: 15 * 60_000 }, () => {
  const ns = `e2e-delegation-${Math.random().toString(36).slice(2, 7)}`;
  let dir = "";
  let child: ChildProcess | null = null;
  let exited: Promise<void> = Promise.resolve();

  const hpa = (name: string): Promise<Obj> =>
    kube!.request("GET", `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers/${name}`);

  /** Wait until the HPA wants `replicas` and its Deployment has them ready. */
  async function expectReplicas(name: string, replicas: number): Promise<Obj> {
    let last: Obj = null;
    try {
      await waitFor(async () => {
        last = await hpa(name);
        if (last.status?.desiredReplicas !== replicas) return false;
        const d = await kube!.request("GET", `/apis/apps/v1/namespaces/${ns}/deployments/${name}`);
        return d.spec.replicas === replicas && (d.status.readyReplicas ?? 0) === replicas;
      }, { what: `HPA ${ns}/${name} at ${replicas} replicas`, timeoutMs: WAIT_MS });
    } catch (e) {
      throw new Error(`${(e as Error).message}: ${describeHpa(last)}`);
    }
    return last;
  }

  async function stopPrometheusAdapter(): Promise<void> {
    if (child === null || child.exitCode !== null) return;
    child.kill("SIGTERM");
    const kill = setTimeout(() => child?.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(kill);
  }

  before(async () => {
    const bin = ensurePrometheusAdapter();
    dir = mkdtempSync(join(tmpdir(), "e2e-prometheus-adapter-"));
    // what the delegate needs to accept our service account: the component's RBAC
    kubectl(["apply", "-f", join(ROOT, "deploy/components/delegation/rbac.yaml")]);
    writeFileSync(
      join(dir, "config.yaml"),
      JSON.stringify({
        externalRules: [{
          seriesQuery: `{__name__="${METRIC}",namespace!=""}`,
          resources: { overrides: { namespace: { resource: "namespace" } } },
          metricsQuery: "sum(<<.Series>>{<<.LabelMatchers>>}) by (namespace)",
        }],
      }),
    );
    const admin = join(STATE_DIR, "kubeconfig");
    const log = openSync(join(STATE_DIR, "logs", "prometheus-adapter.log"), "a");
    child = spawn("ip", [
      "netns",
      "exec",
      E2E.netns,
      bin,
      `--bind-address=${E2E.prometheusIp}`,
      "--secure-port=6443",
      `--cert-dir=${join(dir, "certs")}`,
      `--lister-kubeconfig=${admin}`,
      `--authentication-kubeconfig=${admin}`,
      `--authorization-kubeconfig=${admin}`,
      `--prometheus-url=${state!.prometheus!.url}`,
      "--metrics-relist-interval=2s",
      `--config=${join(dir, "config.yaml")}`,
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
  });

  after(async () => {
    await stopPrometheusAdapter();
    rmSync(join(state!.prometheus!.targetsDir, `${ns}.json`), { force: true });
    if (!process.env.HPA_E2E_KEEP) {
      await kube!.request("DELETE", `/api/v1/namespaces/${ns}`).catch(() => {});
      kubectl([
        "delete",
        "--ignore-not-found",
        "-f",
        join(ROOT, "deploy/components/delegation/rbac.yaml"),
      ]);
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Serve `value` as the series from the exporter pod (scraped every second). */
  async function setBacklog(value: number): Promise<void> {
    await kube!.request("PATCH", `/api/v1/namespaces/${ns}/pods/exporter`, {
      body: {
        metadata: {
          annotations: { [ANNOTATIONS.metrics]: `# TYPE ${METRIC} gauge\n${METRIC} ${value}\n` },
        },
      },
      contentType: "application/merge-patch+json",
    });
    const query = `sum(${METRIC}{namespace="${ns}"})`;
    await waitFor(async () => {
      const r = await fetch(
        `${state!.prometheus!.url}/api/v1/query?query=${encodeURIComponent(query)}`,
      );
      return (await r.json()).data?.result?.[0]?.value?.[1] === String(value);
    }, { what: `Prometheus answering ${query} with ${value}`, timeoutMs: WAIT_MS });
  }

  async function createDeployment(name: string): Promise<void> {
    await kube!.request("POST", `/apis/apps/v1/namespaces/${ns}/deployments`, {
      body: {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name, namespace: ns },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: name } },
          template: {
            metadata: { labels: { app: name } },
            spec: {
              containers: [{
                name: "app",
                image: "e2e.invalid/app:1",
                ports: [{ containerPort: 9090 }],
              }],
            },
          },
        },
      },
    });
  }

  async function createHpa(name: string, metric: Obj, annotations: Record<string, string> = {}) {
    await kube!.request("POST", `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers`, {
      body: {
        apiVersion: "autoscaling/v2",
        kind: "HorizontalPodAutoscaler",
        metadata: { name, namespace: ns, annotations },
        spec: {
          scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name },
          minReplicas: 1,
          maxReplicas: 10,
          metrics: [metric],
          behavior: BEHAVIOR,
        },
      },
    });
  }

  it("scales on prometheus-adapter's metric through us while ours keeps scaling, and survives its stop", async () => {
    // the series: an exporter pod that Prometheus scrapes (file_sd), labelled with the namespace
    await kube!.request("POST", `/api/v1/namespaces/${ns}/pods`, {
      body: {
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          name: "exporter",
          namespace: ns,
          annotations: {
            [ANNOTATIONS.metrics]: `# TYPE ${METRIC} gauge\n${METRIC} 90\n`,
            [ANNOTATIONS.contentType]: "text/plain; version=0.0.4",
          },
        },
        spec: {
          containers: [{
            name: "exporter",
            image: "e2e.invalid/exporter:1",
            ports: [{ containerPort: 9100 }],
          }],
        },
      },
    });
    const ip = await waitFor(async () => {
      const p = await kube!.request("GET", `/api/v1/namespaces/${ns}/pods/exporter`);
      return isReady(p) ? p.status.podIP as string : undefined;
    }, { what: "exporter pod ready", timeoutMs: WAIT_MS });
    writeFileSync(
      join(state!.prometheus!.targetsDir, `${ns}.json`),
      JSON.stringify([{ targets: [`${ip}:9100`], labels: { namespace: ns } }]),
    );
    await setBacklog(90);

    // prometheus-adapter's metric, read through the aggregator: it reaches us, and we forward it
    const raw = `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/${METRIC}`;
    const list = await waitFor(async () => {
      try {
        const body = JSON.parse(kubectl(["get", "--raw", raw]));
        return body.items?.length === 1 ? body : undefined;
      } catch {
        return undefined;
      }
    }, { what: `${raw} through the aggregator`, timeoutMs: WAIT_MS });
    assert.equal(list.kind, "ExternalMetricValueList");
    assert.equal(list.items[0].metricName, METRIC);
    assert.equal(list.items[0].value, "90");
    // and prometheus-adapter's metrics are in our discovery
    await waitFor(() => {
      const d = JSON.parse(kubectl(["get", "--raw", "/apis/external.metrics.k8s.io/v1beta1"]));
      return d.resources.some((r: Obj) => r.name === METRIC) ? true : undefined;
    }, { what: `${METRIC} in discovery`, timeoutMs: WAIT_MS });

    // theirs: no type label, no collector of ours: prometheus-adapter's; 90 / 30 = 3
    await createDeployment("theirs");
    await createHpa("theirs", {
      type: "External",
      external: {
        metric: { name: METRIC },
        target: { type: "AverageValue", averageValue: "30" },
      },
    });
    // ours: the same series through our Prometheus collector; 90 / 45 = 2
    await createDeployment("ours");
    await createHpa("ours", {
      type: "External",
      external: {
        metric: { name: "own-backlog", selector: { matchLabels: { type: "prometheus" } } },
        target: { type: "AverageValue", averageValue: "45" },
      },
    }, {
      "metric-config.external.own-backlog.prometheus/query": `sum(${METRIC}{namespace="${ns}"})`,
      "metric-config.external.own-backlog.prometheus/interval": "1s",
    });
    await expectReplicas("theirs", 3);
    await expectReplicas("ours", 2);

    // prometheus-adapter stops: its HPA says why, naming the delegate; ours follows 180 / 45 = 4
    await stopPrometheusAdapter();
    const failing = await waitFor(async () => {
      const h = await hpa("theirs");
      const c = (h.status?.conditions ?? []).find((x: Obj) => x.type === "ScalingActive");
      return c?.status === "False" ? c : undefined;
    }, { what: "HPA theirs ScalingActive False", timeoutMs: WAIT_MS });
    assert.equal(failing.reason, "FailedGetExternalMetric");
    assert.ok(
      failing.message.includes(
        `the delegate of external.metrics.k8s.io (--delegate-external-metrics ${DELEGATE}) did not answer`,
      ),
      failing.message,
    );
    await setBacklog(180);
    await expectReplicas("ours", 4);
    const theirs = await kube!.request("GET", `/apis/apps/v1/namespaces/${ns}/deployments/theirs`);
    assert.equal(theirs.spec.replicas, 3);
    // prometheus-adapter's HPA gets no Warning event from us (the HPA controller's are there)
    const events = await kube!.request(
      "GET",
      `/api/v1/namespaces/${ns}/events?fieldSelector=${
        encodeURIComponent("involvedObject.kind=HorizontalPodAutoscaler,involvedObject.name=theirs")
      }`,
    );
    const reasons = events.items.map((e: Obj) => e.reason as string);
    assert.ok(reasons.includes("FailedGetExternalMetric"), JSON.stringify(reasons));
    assert.deepEqual(reasons.filter((r: string) => r === "CreateNewMetricsCollector"), []);
  });
});
