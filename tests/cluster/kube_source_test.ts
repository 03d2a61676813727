import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { CertificateAndKey } from "../../src/api/certs.ts";
import { createCertificate } from "../../src/api/cert_issue.ts";
import { KubeClusterSource } from "../../src/cluster/kube_source.ts";
import { parseKubeconfig } from "../../src/cluster/kubeconfig.ts";
import type { KubeObject } from "../../src/cluster/types.ts";
import { FakeKubeApi } from "../fakes/kube_api.ts";
import { fakeKubeconfig, writeExecPlugin } from "../fakes/kubeconfig.ts";
import { alive, deployment, record, waitFor, within, withSource } from "./kube_support.ts";

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
