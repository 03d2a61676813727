import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createServer, type Server } from "node:http";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { programName, runCommandLine } from "../../src/cli/commands.ts";
import {
  kubeconfigPath,
  proxyHint,
  serviceProxyPath,
  statusServiceFromFlags,
} from "../../src/cli/explain_proxy.ts";
import { buildStatus } from "../../src/api/status_model.ts";
import { captureIO } from "./capture_io.ts";
import { externalHpa, historyOf, plansOf, statusInput, T0 } from "../api/status_support.ts";

const SERVICE = {
  namespace: "hpa-metrics-adapter",
  name: "hpa-metrics-adapter",
  port: "metrics",
  scheme: "http",
} as const;
const PROXY =
  "/api/v1/namespaces/hpa-metrics-adapter/services/http:hpa-metrics-adapter:metrics/proxy/status.json";

describe("explain through the service proxy: the path and flags", () => {
  it("builds the service proxy path from the defaults of deploy/base/service.yaml", () => {
    assert.deepEqual(statusServiceFromFlags({}), SERVICE);
    assert.equal(serviceProxyPath(SERVICE), PROXY);
    assert.equal(
      serviceProxyPath(statusServiceFromFlags({
        "service-namespace": "ops",
        "service-name": "adapter",
        "service-port": "7979",
        "service-scheme": "https",
      })),
      "/api/v1/namespaces/ops/services/https:adapter:7979/proxy/status.json",
    );
  });

  it("refuses names that would change the path", () => {
    assert.throws(
      () => statusServiceFromFlags({ "service-name": "a/../../secrets" }),
      {
        message:
          'invalid value "a/../../secrets" for --service-name: want a Kubernetes object name',
      },
    );
    assert.throws(
      () => statusServiceFromFlags({ "service-port": "a b" }),
      { message: 'invalid value "a b" for --service-port: want a port name or number' },
    );
    assert.throws(
      () => statusServiceFromFlags({ "service-scheme": "ftp" }),
      { message: 'invalid value "ftp" for --service-scheme: want http or https' },
    );
  });

  it("finds the kubeconfig: the flag, then $KUBECONFIG, then ~/.kube/config", () => {
    const exists = (p: string) => p === "/b" || p === "/home/u/.kube/config";
    assert.equal(kubeconfigPath({ kubeconfig: "/f" }, { KUBECONFIG: "/b" }, exists), "/f");
    assert.equal(kubeconfigPath({}, { KUBECONFIG: "/a:/b", HOME: "/home/u" }, exists), "/b");
    assert.equal(kubeconfigPath({}, { HOME: "/home/u" }, exists), "/home/u/.kube/config");
    assert.equal(kubeconfigPath({}, { HOME: "/nowhere" }, exists), null);
  });

  it("says which RBAC a 403 needs", () => {
    assert.equal(
      proxyHint(
        {
          status: 403,
          body: JSON.stringify({
            kind: "Status",
            message: 'services "hpa-metrics-adapter" is forbidden',
          }),
        },
        SERVICE,
      ),
      ': services "hpa-metrics-adapter" is forbidden (explain needs get on services/proxy in namespace hpa-metrics-adapter: kubectl create role hpa-metrics-adapter-explain -n hpa-metrics-adapter --verb=get --resource=services/proxy --resource-name=http:hpa-metrics-adapter:metrics, then a rolebinding; or pass --status-url)',
    );
  });

  it("names the kubectl plugin in help when run as kubectl-hpa_metrics_adapter", async () => {
    assert.equal(
      programName(["/usr/local/bin/kubectl-hpa_metrics_adapter"]),
      "kubectl hpa_metrics_adapter",
    );
    assert.equal(programName(["node", "/repo/src/main.ts"]), "hpa-metrics-adapter");
    const io = captureIO();
    assert.equal(
      await runCommandLine(["help", "explain"], { ...io, program: "kubectl hpa_metrics_adapter" }),
      0,
    );
    assert.match(
      io.out(),
      /^usage: kubectl hpa_metrics_adapter explain NAMESPACE\/NAME \[--kubeconfig FILE\]/m,
    );
  });
});

describe("explain through the service proxy: against a fake kube-apiserver", () => {
  let server: Server;
  let base = "";
  let answer: { status: number; body: string } = { status: 200, body: "" };
  const seen: { url: string; auth: string | undefined }[] = [];
  let kubeconfig = "";

  before(async () => {
    const hpa = externalHpa("web", "queue");
    const plans = plansOf(hpa);
    const report = buildStatus(
      statusInput([hpa], plans, { [plans[0].key]: historyOf([30], T0 - 1000) }),
    );
    answer = { status: 200, body: JSON.stringify(report) };
    server = createServer((req, res) => {
      seen.push({ url: req.url ?? "", auth: req.headers.authorization });
      res.writeHead(answer.status, { "content-type": "application/json" });
      res.end(answer.body);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as { port: number }).port;
    base = `http://127.0.0.1:${port}`;
    const dir = mkdtempSync(join(tmpdir(), "explain-proxy-"));
    kubeconfig = join(dir, "config");
    writeFileSync(
      kubeconfig,
      [
        "apiVersion: v1",
        "kind: Config",
        `clusters: [{name: c, cluster: {server: "${base}"}}]`,
        "users: [{name: u, user: {token: t0ken}}]",
        "contexts: [{name: x, context: {cluster: c, user: u}}]",
        "current-context: x",
      ].join("\n") + "\n",
    );
  });
  after(() => server.close());

  it("reads the HPA's status through the proxy path with the kubeconfig's token", async () => {
    const io = captureIO();
    const code = await runCommandLine(["explain", "shop/web", "--kubeconfig", kubeconfig], {
      ...io,
      env: {},
    });
    assert.equal(io.err(), "");
    assert.equal(code, 0);
    assert.deepEqual(seen.at(-1), { url: PROXY, auth: "Bearer t0ken" });
    assert.match(io.out(), /HPA shop\/web gets all its metrics \(1\)/);
  });

  it("says which URL answered what, and the RBAC, on a 403", async () => {
    answer = {
      status: 403,
      body: JSON.stringify({
        kind: "Status",
        apiVersion: "v1",
        status: "Failure",
        message:
          'services "hpa-metrics-adapter" is forbidden: User "dev" cannot get resource "services/proxy" in API group "" in the namespace "hpa-metrics-adapter"',
        reason: "Forbidden",
        code: 403,
      }),
    };
    const io = captureIO();
    const code = await runCommandLine(["explain", "shop/web", "--kubeconfig", kubeconfig], {
      ...io,
      env: {},
    });
    assert.equal(code, 1);
    assert.equal(
      io.err(),
      `error: ${base}${PROXY} answered 403: services "hpa-metrics-adapter" is forbidden: User "dev" cannot get resource "services/proxy" in API group "" in the namespace "hpa-metrics-adapter" (explain needs get on services/proxy in namespace hpa-metrics-adapter: kubectl create role hpa-metrics-adapter-explain -n hpa-metrics-adapter --verb=get --resource=services/proxy --resource-name=http:hpa-metrics-adapter:metrics, then a rolebinding; or pass --status-url)\n`,
    );
  });

  it("says when kube-apiserver cannot be reached", async () => {
    const dead = join(mkdtempSync(join(tmpdir(), "explain-proxy-")), "config");
    writeFileSync(
      dead,
      [
        "apiVersion: v1",
        "kind: Config",
        'clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]',
        "users: [{name: u, user: {token: t}}]",
        "contexts: [{name: x, context: {cluster: c, user: u}}]",
        "current-context: x",
      ].join("\n") + "\n",
    );
    const io = captureIO();
    const code = await runCommandLine(["explain", "shop/web", "--kubeconfig", dead], {
      ...io,
      env: {},
    });
    assert.equal(code, 1);
    assert.match(
      io.err(),
      new RegExp(`^error: cannot read http://127\\.0\\.0\\.1:1${PROXY.replace(/[.]/g, "\\.")}: `),
    );
  });
});
