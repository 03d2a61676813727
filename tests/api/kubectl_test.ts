/**
 * kubectl (the real binary) as a client of the API app, over plain HTTP on loopback: raw
 * reads, Status errors and discovery (`api-resources`, `api-versions`). A temporary
 * kubeconfig, cache dir and HOME keep the user's ~/.kube untouched.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../../src/api/app.ts";
import type { KubeObject } from "../../src/cluster/types.ts";
import { MetricStore } from "../../src/store/store.ts";
import { serveForTest, type TestServer } from "./serve_helper.ts";

const KUBECTL = process.env.KUBECTL ?? "/usr/bin/kubectl";
const T0 = Date.UTC(2024, 0, 2, 3, 4, 5);

function kubectlMissing(): string | null {
  return existsSync(KUBECTL)
    ? null
    : `kubectl is missing at ${KUBECTL}: install it (the machine image has it) or set KUBECTL`;
}

function ready(name: string, labels: Record<string, string>): KubeObject {
  return {
    metadata: { name, namespace: "default", labels },
    status: { conditions: [{ type: "Ready", status: "True" }] },
  };
}

describe("kubectl as a client", () => {
  let server: TestServer;
  let dir: string;

  before(async () => {
    const missing = kubectlMissing();
    if (missing) throw new Error(missing);
    const store = new MetricStore();
    store.upsertPlan({
      key: "default/web#0/Pods/rps",
      hpa: { namespace: "default", name: "web" },
      servedAt: {
        kind: "custom",
        namespace: "default",
        groupResource: "pods",
        objectName: null,
        metricName: "rps",
        metricSelector: "",
      },
      queryKey: "json-path:9090/metrics",
    }, T0);
    store.recordSuccess("default/web#0/Pods/rps", [
      { objectName: "web-1", value: 1.5, timestamp: T0 },
      { objectName: "web-2", value: 20, timestamp: T0 },
    ], T0);
    store.upsertPlan({
      key: "default/worker#0/External/queue-length",
      hpa: { namespace: "default", name: "worker" },
      servedAt: {
        kind: "external",
        namespace: "default",
        metricName: "queue-length",
        metricLabels: { queue: "orders" },
      },
      queryKey: "sqs:orders",
    }, T0);
    const pods = [ready("web-1", { app: "web" }), ready("web-2", { app: "web" })];
    const app = createApp({
      store,
      pods: { listPods: (ns) => (ns === "default" ? pods : []) },
      now: () => T0,
      ready: () => true,
      version: { gitVersion: "v0.1.0" },
    });
    server = await serveForTest(app);
    dir = mkdtempSync(join(tmpdir(), "kubectl-test-"));
    writeFileSync(
      join(dir, "config"),
      "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n",
    );
  });

  after(async () => {
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function kubectl(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      execFile(
        KUBECTL,
        [
          `--kubeconfig=${join(dir, "config")}`,
          `--cache-dir=${join(dir, "cache")}`,
          `--server=${server.url}`,
          "--request-timeout=10s",
          ...args,
        ],
        { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir }, timeout: 30_000 },
        (err, stdout, stderr) => {
          const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
          resolve({ code, stdout: String(stdout), stderr: String(stderr) });
        },
      );
    });
  }

  it("prints a pods metric list with get --raw", async () => {
    const r = await kubectl(
      "get",
      "--raw",
      "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/*/rps",
    );
    assert.equal(r.stderr, "");
    assert.equal(r.code, 0);
    assert.equal(
      r.stdout,
      '{"kind":"MetricValueList","apiVersion":"custom.metrics.k8s.io/v1beta2","metadata":{},' +
        '"items":[{"describedObject":{"kind":"Pod","namespace":"default","name":"web-1","apiVersion":"v1"},' +
        '"metric":{"name":"rps"},"timestamp":"2024-01-02T03:04:05Z","value":"1500m"},' +
        '{"describedObject":{"kind":"Pod","namespace":"default","name":"web-2","apiVersion":"v1"},' +
        '"metric":{"name":"rps"},"timestamp":"2024-01-02T03:04:05Z","value":"20"}]}',
    );
  });

  it("shows the reason of a 404 as kubectl prints Status errors", async () => {
    const r = await kubectl(
      "get",
      "--raw",
      "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue-length?labelSelector=queue%3Dorders",
    );
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr,
      "Error from server (NotFound): the server could not find the metric queue-length for " +
        "provided labels: not collected yet (planned at 2024-01-02T03:04:05Z)\n",
    );
  });

  it("lists the custom metrics group with api-resources", async () => {
    const r = await kubectl("api-resources", "--api-group=custom.metrics.k8s.io");
    assert.equal(r.stderr, "");
    assert.equal(r.code, 0);
    assert.equal(
      r.stdout,
      "NAME            SHORTNAMES   APIVERSION                      NAMESPACED   KIND\n" +
        "custommetrics                custom.metrics.k8s.io/v1beta2   true         MetricValueList\n",
    );
  });

  it("lists the external metrics with api-resources", async () => {
    const r = await kubectl("api-resources", "--api-group=external.metrics.k8s.io");
    assert.equal(r.stderr, "");
    assert.equal(
      r.stdout,
      "NAME              SHORTNAMES   APIVERSION                        NAMESPACED   KIND\n" +
        "externalmetrics                external.metrics.k8s.io/v1beta1   true         ExternalMetricValueList\n" +
        "queue-length                   external.metrics.k8s.io/v1beta1   true         ExternalMetricValueList\n",
    );
  });

  it("lists every served group version with api-versions", async () => {
    const r = await kubectl("api-versions");
    assert.equal(r.stderr, "");
    assert.equal(
      r.stdout,
      "custom.metrics.k8s.io/v1beta1\ncustom.metrics.k8s.io/v1beta2\nexternal.metrics.k8s.io/v1beta1\n",
    );
  });
});
