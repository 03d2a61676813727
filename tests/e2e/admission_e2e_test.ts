/**
 * End to end (issue 50): the admission webhook and `explain` through the service proxy, on the
 * real control plane. deploy/components/admission-webhook's ValidatingWebhookConfiguration is
 * applied with the harness's CA as its caBundle; then `kubectl apply` of an HPA with a bad
 * annotation prints the adapter's warning, `explain` (and the binary as the kubectl plugin
 * `kubectl-hpa_metrics_adapter`) reads the HPA's status through kube-apiserver's service proxy,
 * a stopped adapter lets writes through (failurePolicy Ignore), and the adapter restarted with
 * --admission-deny-invalid refuses a new bad HPA.
 *
 * Run by `harness.ts test` in its own phase (the adapter with --admission-webhook); without such
 * a harness every case is skipped (HPA_E2E_REQUIRED=1 turns that into a failure).
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { load } from "js-yaml";
import {
  E2E,
  KUBECONFIG,
  readState,
  restartAdapterReplica,
  ROOT,
  runningPid,
  STATE_DIR,
  waitFor,
} from "./harness.ts";

// deno-lint-ignore no-explicit-any
type Obj = any;

const state = readState();
const webhookOn = state !== null && state.adapter === "adapter" &&
  (process.env.HPA_E2E_ADAPTER_ARGS ?? "").split(" ").includes("--admission-webhook");
if (!webhookOn && process.env.HPA_E2E_REQUIRED) {
  throw new Error(
    "the e2e harness is not up with --admission-webhook: run `HPA_E2E_ADAPTER_ARGS=--admission-webhook node --import tsx tests/e2e/harness.ts up` first",
  );
}
const SKIP: string | false = webhookOn
  ? false
  : "the e2e harness is not up with --admission-webhook";

const BAD_INTERVAL =
  'invalid interval "5x" for Pods metric requests-per-second (annotation metric-config.pods.requests-per-second.json-path/interval): want a Go duration like 30s, 1m30s, 2h';

/** An autoscaling/v2 HPA whose Pods metric has the interval annotation `interval`. */
function hpa(ns: string, name: string, interval: string): Obj {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: {
      name,
      namespace: ns,
      annotations: {
        "metric-config.pods.requests-per-second.json-path/json-key": "$.rps",
        "metric-config.pods.requests-per-second.json-path/path": "/metrics",
        "metric-config.pods.requests-per-second.json-path/port": "9090",
        "metric-config.pods.requests-per-second.json-path/interval": interval,
      },
    },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name },
      minReplicas: 1,
      maxReplicas: 3,
      metrics: [{
        type: "Pods",
        pods: {
          metric: { name: "requests-per-second" },
          target: { type: "AverageValue", averageValue: "10" },
        },
      }],
    },
  };
}

/** `kubectl` with the admin kubeconfig: exit code and both streams (no throw). */
function kubectl(
  args: string[],
  input?: string,
): { status: number; stdout: string; stderr: string } {
  const r = spawnSync("/usr/bin/kubectl", args, {
    input,
    encoding: "utf8",
    env: { ...process.env, KUBECONFIG },
    timeout: 30_000,
  });
  return { status: r.status ?? 1, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
}

const apply = (object: Obj, dryRun = false) =>
  kubectl(["apply", ...(dryRun ? ["--dry-run=server"] : []), "-f", "-"], JSON.stringify(object));

describe("e2e: the admission webhook and explain through the service proxy", {
  skip: SKIP,
  timeout: 5 * 60_000,
}, () => {
  const ns = `e2e-admission-${Math.random().toString(36).slice(2, 7)}`;

  before(async () => {
    assert.equal(
      kubectl(["create", "namespace", ns]).status,
      0,
      `cannot create namespace ${ns}`,
    );
    // the component's webhooks, with the harness's CA (what cert-manager's injector would write)
    const webhook = load(
      readFileSync(join(ROOT, "deploy/components/admission-webhook/webhook.yaml"), "utf8"),
    ) as Obj;
    const caBundle = Buffer.from(readFileSync(join(STATE_DIR, "pki", "ca.crt"))).toString(
      "base64",
    );
    delete webhook.metadata.annotations;
    for (const w of webhook.webhooks) w.clientConfig.caBundle = caBundle;
    const r = kubectl(["apply", "-f", "-"], JSON.stringify(webhook));
    assert.equal(r.status, 0, r.stderr);
    // The adapter is a process here, not a pod, and kube-apiserver's service proxy goes only to
    // an endpoint address whose targetRef is a Pod with that IP: a Pod object stands for it (on
    // a node no kubelet serves, so the harness's stand-in leaves it alone), as in a cluster.
    const podName = "hpa-metrics-adapter-e2e";
    const pod = kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: podName, namespace: E2E.adapterNamespace },
        spec: {
          nodeName: "adapter-process",
          // the namespace enforces the restricted Pod Security Standard, as the Deployment meets it
          securityContext: { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } },
          containers: [{
            name: "adapter",
            image: "hpa-metrics-adapter",
            securityContext: {
              allowPrivilegeEscalation: false,
              capabilities: { drop: ["ALL"] },
            },
          }],
        },
      }),
    );
    assert.equal(pod.status, 0, pod.stderr);
    const status = kubectl([
      "patch",
      "pod",
      podName,
      "-n",
      E2E.adapterNamespace,
      "--subresource=status",
      "--type=merge",
      "-p",
      JSON.stringify({
        status: { phase: "Running", podIP: E2E.adapterIp, podIPs: [{ ip: E2E.adapterIp }] },
      }),
    ]);
    assert.equal(status.status, 0, status.stderr);
    const endpoints = kubectl(
      ["apply", "--server-side", "--force-conflicts", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Endpoints",
        metadata: { name: E2E.adapterService, namespace: E2E.adapterNamespace },
        subsets: [{
          addresses: [{
            ip: E2E.adapterIp,
            targetRef: { kind: "Pod", namespace: E2E.adapterNamespace, name: podName },
          }],
          ports: [
            { name: "https", port: E2E.adapterPort, protocol: "TCP" },
            { name: "metrics", port: E2E.adapterMetricsPort, protocol: "TCP" },
          ],
        }],
      }),
    );
    assert.equal(endpoints.status, 0, endpoints.stderr);
    // kube-apiserver picks the configuration up within a moment
    await waitFor(() => apply(hpa(ns, "probe", "5x"), true).stderr.includes("Warning: "), {
      timeoutMs: 60_000,
      what: "the webhook's first warning (a server-side dry run)",
    });
  });

  after(() => {
    kubectl(["delete", "validatingwebhookconfiguration", "hpa-metrics-adapter", "--wait=false"]);
    kubectl(["delete", "namespace", ns, "--wait=false"]);
  });

  it("kubectl apply prints the warning of a bad annotation, and admits the HPA", () => {
    const r = apply(hpa(ns, "bad", "5x"));
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, `Warning: ${BAD_INTERVAL}\n`);
    assert.match(r.stdout, /horizontalpodautoscaler.autoscaling\/bad created/);
    // a good one prints nothing
    const good = apply(hpa(ns, "good", "5s"));
    assert.equal(good.status, 0, good.stderr);
    assert.equal(good.stderr, "");
  });

  it("checks an autoscaling/v1 HPA through the conversion", () => {
    const v1 = {
      apiVersion: "autoscaling/v1",
      kind: "HorizontalPodAutoscaler",
      metadata: {
        name: "bad-v1",
        namespace: ns,
        annotations: {
          ...hpa(ns, "x", "5x").metadata.annotations,
          "autoscaling.alpha.kubernetes.io/metrics": JSON.stringify([{
            type: "Pods",
            pods: { metricName: "requests-per-second", targetAverageValue: "10" },
          }]),
        },
      },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "bad-v1" },
        maxReplicas: 3,
      },
    };
    const r = apply(v1);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, `Warning: ${BAD_INTERVAL}\n`);
  });

  it("explain reads the HPA's status through kube-apiserver's service proxy", async () => {
    const explain = () =>
      spawnSync(process.execPath, [
        "--import",
        "tsx",
        join(ROOT, "src/main.ts"),
        "explain",
        `${ns}/bad`,
        `--kubeconfig=${KUBECONFIG}`,
      ], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
    // the adapter knows the HPA once its informer has it (and the status page once asked)
    let last = "";
    const r = await waitFor(() => {
      const out = explain();
      last = `exit ${out.status}: ${out.stderr}`;
      return out.stdout.includes(`${ns}/bad`) ? out : false;
    }, { timeoutMs: 30_000, intervalMs: 1000, what: `the adapter's status of ${ns}/bad` })
      .catch((e) => {
        throw new Error(`${(e as Error).message}; last: ${last}`);
      });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stdout, new RegExp(`${ns}/bad`));
    assert.match(
      r.stderr,
      new RegExp(`error: HPA ${ns}/bad metric Pods/requests-per-second: .*invalid interval "5x"`),
    );
    // as the kubectl plugin, with the kubeconfig kubectl passes on in KUBECONFIG
    const bin = mkdtempSync(join(tmpdir(), "kubectl-plugin-"));
    const plugin = join(bin, "kubectl-hpa_metrics_adapter");
    writeFileSync(
      plugin,
      `#!/bin/sh\nexec "${process.execPath}" --import tsx "${join(ROOT, "src/main.ts")}" "$@"\n`,
    );
    chmodSync(plugin, 0o755);
    const viaKubectl = spawnSync(
      "/usr/bin/kubectl",
      ["hpa_metrics_adapter", "explain", `${ns}/bad`],
      {
        cwd: ROOT,
        encoding: "utf8",
        timeout: 60_000,
        env: { ...process.env, KUBECONFIG, PATH: `${bin}:${process.env.PATH}` },
      },
    );
    assert.equal(viaKubectl.status, 1, viaKubectl.stderr);
    assert.match(viaKubectl.stdout, new RegExp(`${ns}/bad`));
  });

  it("the Role explain's 403 message suggests grants exactly the proxied Service port", () => {
    const adapterNs = E2E.adapterNamespace;
    const role = `explain-${ns}`;
    const created = kubectl([
      "create",
      "role",
      role,
      "-n",
      adapterNs,
      "--verb=get",
      "--resource=services/proxy",
      "--resource-name=http:hpa-metrics-adapter:metrics",
    ]);
    assert.equal(created.status, 0, created.stderr);
    const bound = kubectl([
      "create",
      "rolebinding",
      role,
      "-n",
      adapterNs,
      `--role=${role}`,
      "--user=explainer",
    ]);
    assert.equal(bound.status, 0, bound.stderr);
    const can = (name: string) =>
      kubectl([
        "auth",
        "can-i",
        "get",
        `services/${name}`,
        "--subresource=proxy",
        "-n",
        adapterNs,
        "--as=explainer",
      ]).stdout.trim();
    assert.equal(can("http:hpa-metrics-adapter:metrics"), "yes");
    assert.equal(can("https:hpa-metrics-adapter:https"), "no");
    kubectl(["delete", "rolebinding", role, "-n", adapterNs]);
    kubectl(["delete", "role", role, "-n", adapterNs]);
  });

  it("admits writes while the adapter is down (failurePolicy Ignore)", async () => {
    const pid = runningPid("adapter");
    assert.ok(pid !== null, "the adapter is not running");
    process.kill(pid, "SIGTERM");
    await waitFor(() => runningPid("adapter") === null, {
      timeoutMs: 30_000,
      what: "the adapter to stop",
    });
    const r = apply(hpa(ns, "while-down", "5x"));
    assert.equal(r.status, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /invalid interval/);
  });

  it("refuses a new bad HPA with --admission-deny-invalid, and keeps admitting good ones", async () => {
    process.env.HPA_E2E_ADAPTER_ARGS = `${
      process.env.HPA_E2E_ADAPTER_ARGS ?? ""
    } --admission-deny-invalid`;
    restartAdapterReplica({ name: "adapter", ip: E2E.adapterIp });
    // a new name each time: one admitted while the adapter starts would make the next an update
    let attempt = 0;
    const r = await waitFor(() => {
      const out = apply(hpa(ns, `refused-${attempt++}`, "5x"));
      return out.status !== 0 ? out : false;
    }, { timeoutMs: 90_000, intervalMs: 1000, what: "the restarted adapter to refuse" });
    assert.equal(
      r.stderr,
      `The request is invalid: error when creating "STDIN": admission webhook "horizontalpodautoscalers.hpa-metrics-adapter.io" denied the request: ${BAD_INTERVAL}\n`,
    );
    const good = apply(hpa(ns, "good-2", "5s"));
    assert.equal(good.status, 0, good.stderr);
  });
});
