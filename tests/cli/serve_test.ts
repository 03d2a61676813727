import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { request } from "node:https";
import { request as httpRequest } from "node:http";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  DEMO_ENDPOINT_PORT,
  DEMO_MANIFESTS,
  demoBanner,
  type RunningAdapter,
  serveCommand,
  splitHostPort,
  startAdapter,
} from "../../src/cli/serve.ts";
import { parseArgs, SERVE_FLAGS } from "../../src/cli/flags.ts";
import {
  type DemoEndpoint,
  demoPodRps,
  demoQueueLength,
  startDemoEndpoint,
} from "../../src/cli/demo_endpoint.ts";
import {
  parseScalingSchedule,
  scheduleValue,
} from "../../src/core/kube_metrics_adapter/scaling_schedule.ts";
import { formatQuantity } from "../../src/core/kubernetes/quantity.ts";
import { readManifests } from "../../src/cluster/manifests.ts";
import { captureIO } from "./capture_io.ts";
import { runCommandLine } from "../../src/cli/commands.ts";
import { startFakeAuthApi } from "../fakes/auth_api.ts";
import { writeFakeKubeconfig } from "../fakes/kubeconfig.ts";

function get(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  const fn = url.startsWith("https:") ? request : httpRequest;
  return new Promise((resolve, reject) => {
    const req = fn(url, { rejectUnauthorized: false, headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

async function until<T>(what: string, fn: () => Promise<T | null>, ms = 8000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== null) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// A fixed clock inside the hourly peak's ramp-up (10:25 UTC: 5 of 10 steps of 40 -> 20).
const NOW = Date.parse("2026-11-22T10:25:00Z");

describe("serve on the demo manifests (in-process, fixed clock)", () => {
  let adapter: RunningAdapter;
  let demo: DemoEndpoint;
  let dir: string;
  let base: string;
  const io = captureIO({ now: NOW });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "serve-test-"));
    demo = await startDemoEndpoint({
      port: DEMO_ENDPOINT_PORT,
      hosts: ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"],
      now: () => NOW,
    });
    assert.deepEqual(demo.failed, []);
    const { values } = parseArgs([
      "--manifests",
      DEMO_MANIFESTS,
      "--bind-address",
      "127.0.0.1",
      "--secure-port",
      "0",
      "--metrics-address",
      "127.0.0.1:0",
      "--cert-dir",
      join(dir, "certs"),
      "--scaling-schedule",
    ], SERVE_FLAGS);
    adapter = await startAdapter(values, io);
    base = `https://127.0.0.1:${adapter.securePort}`;
  });

  after(async () => {
    await adapter?.close();
    await demo?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("is ready once started", async () => {
    const r = await get(`${base}/readyz`);
    assert.equal(r.status, 200);
    assert.equal(r.body, "ok");
  });

  it("serves the ScalingSchedule value of the core maths at the clock's time", async () => {
    const { objects } = await readManifests([join(DEMO_MANIFESTS, "schedules.yaml")]);
    const schedule = parseScalingSchedule(objects[0].object);
    const expected = scheduleValue(schedule.spec, NOW, {
      defaultTimeZone: "Europe/Berlin",
      defaultScalingWindowSeconds: 600,
      rampSteps: 10,
    });
    assert.equal(expected, 20);
    const path =
      "/apis/custom.metrics.k8s.io/v1beta2/namespaces/demo/scalingschedules.zalando.org/hourly-peak/hourly-peak";
    const body = await until("the schedule value", async () => {
      const r = await get(base + path);
      return r.status === 200 ? JSON.parse(r.body) : null;
    });
    assert.deepEqual(body.items, [{
      describedObject: {
        kind: "ScalingSchedule",
        namespace: "demo",
        name: "hourly-peak",
        apiVersion: "zalando.org/v1",
      },
      metric: { name: "hourly-peak" },
      timestamp: "2026-11-22T10:25:00Z",
      value: "20",
    }]);
  });

  it("serves one value per ready pod from the pods' JSON endpoints", async () => {
    const path =
      "/apis/custom.metrics.k8s.io/v1beta2/namespaces/demo/pods/*/requests-per-second?labelSelector=app%3Dshop";
    const body = await until("pod values", async () => {
      const r = await get(base + path);
      return r.status === 200 ? JSON.parse(r.body) : null;
    });
    assert.deepEqual(
      body.items.map((
        i: { describedObject: { name: string }; value: string },
      ) => [i.describedObject.name, i.value]),
      [
        ["shop-0", formatQuantity(demoPodRps("127.0.0.2", NOW))],
        ["shop-1", formatQuantity(demoPodRps("127.0.0.3", NOW))],
        ["shop-2", formatQuantity(demoPodRps("127.0.0.4", NOW))],
      ],
    );
  });

  it("serves the external metric with the selector's labels", async () => {
    const path =
      "/apis/external.metrics.k8s.io/v1beta1/namespaces/demo/queue-length?labelSelector=queue%3Dorders";
    const body = await until("the queue length", async () => {
      const r = await get(base + path);
      return r.status === 200 ? JSON.parse(r.body) : null;
    });
    assert.deepEqual(body.items, [{
      metricName: "queue-length",
      metricLabels: { queue: "orders", type: "json-path" },
      timestamp: "2026-11-22T10:25:00Z",
      value: formatQuantity(demoQueueLength(NOW)),
    }]);
  });

  it("answers 404 with the reason when no HPA asks for a metric", async () => {
    const r = await get(`${base}/apis/custom.metrics.k8s.io/v1beta2/namespaces/demo/pods/*/nope`);
    assert.equal(r.status, 404);
    const status = JSON.parse(r.body);
    assert.equal(status.kind, "Status");
    assert.equal(status.reason, "NotFound");
    assert.match(status.message, /no HPA in namespace demo asks for metric "nope"/);
  });

  it("marks the schedule active through the status writer", async () => {
    const active = await until("status.active", async () => {
      const s = adapter.cluster.get("ScalingSchedule", "demo", "hourly-peak");
      return s?.status?.active === true ? true : null;
    });
    assert.equal(active, true);
  });

  it("shows each state of the demo through explain: three HPAs get their metrics, payments fails", async () => {
    const status = `http://127.0.0.1:${adapter.metricsPort}`;
    const explain = async (hpa: string) => {
      const io = captureIO();
      const code = await runCommandLine(["explain", hpa, "--status-url", status], io);
      return { code, out: io.out(), err: io.err() };
    };
    for (const hpa of ["demo/shop-rps", "demo/queue-worker", "demo/shop-schedule"]) {
      const r = await until(`${hpa} collected`, async () => {
        const r = await explain(hpa);
        return r.code === 0 ? r : null;
      });
      assert.equal(r.err, "");
      assert.ok(r.out.endsWith(`\nHPA ${hpa} gets all its metrics (1)\n`), r.out);
    }
    const failing = await until("demo/payments failing", async () => {
      const r = await explain("demo/payments");
      return r.code === 1 ? r : null;
    });
    assert.equal(
      failing.err,
      "error: HPA demo/payments metric External/payments-backlog: failing: " +
        'unsuccessful response "500 Internal Server Error" from http://127.0.0.1:18080/backlog\n',
    );
  });

  it("counts collections in its own metrics", async () => {
    const text = await until("own metrics", async () => {
      const r = await get(`http://127.0.0.1:${adapter.metricsPort}/metrics`);
      const m = /^kube_metrics_adapter_collections_success (\d+)$/m.exec(r.body);
      const e = /^kube_metrics_adapter_collections_error (\d+)$/m.exec(r.body);
      return m && Number(m[1]) >= 3 && e && Number(e[1]) >= 1 ? r.body : null;
    });
    // one update per HPA reconcile, as kube-metrics-adapter counts them: the demo's 4 HPAs plan
    // cleanly (demo/payments plans too: its collections fail, its endpoint answers 500)
    assert.match(text, /^kube_metrics_adapter_updates_success 4$/m);
    assert.match(text, /^kube_metrics_adapter_updates_error 0$/m);
  });
});

describe("the demo's banner", () => {
  it("prints the status page's URL and an explain of the failing HPA", () => {
    const text = demoBanner(6443, 7979, true, ".tmp/demo/kubeconfig");
    assert.match(
      text,
      /\nstatus page: http:\/\/127\.0\.0\.1:7979\/status \(demo\/payments fails on purpose: its endpoint answers 500\)\n/,
    );
    assert.match(
      text,
      /\n {2}npx tsx src\/main\.ts explain demo\/payments --status-url http:\/\/127\.0\.0\.1:7979 /,
    );
    assert.doesNotMatch(demoBanner(6443, 7979, false, "k"), /status/);
    assert.doesNotMatch(demoBanner(6443, null, true, "k"), /status/);
  });
});

describe("serve's command line", () => {
  it("rejects an unknown flag with a usage error", async () => {
    const io = captureIO();
    await assert.rejects(serveCommand.run(["--no-such-flag"], io), /unknown flag --no-such-flag/);
  });

  it("rejects a stray argument", async () => {
    const io = captureIO();
    await assert.rejects(serveCommand.run(["extra"], io), /unexpected argument "extra"/);
  });

  it("splits host:port address flags like Go", () => {
    assert.deepEqual(splitHostPort(":7979", "metrics-address"), {
      hostname: "0.0.0.0",
      port: 7979,
    });
    assert.deepEqual(splitHostPort("127.0.0.1:80", "metrics-address"), {
      hostname: "127.0.0.1",
      port: 80,
    });
    assert.deepEqual(splitHostPort("[::1]:9", "metrics-address"), { hostname: "::1", port: 9 });
    assert.throws(
      () => splitHostPort("7979", "metrics-address"),
      /invalid --metrics-address "7979"/,
    );
  });

  it("sends TokenReviews through --authentication-kubeconfig and SubjectAccessReviews through --authorization-kubeconfig", async () => {
    const dir = await mkdtemp(join(tmpdir(), "serve-test-"));
    const authn = await startFakeAuthApi();
    const authz = await startFakeAuthApi();
    authn.tokens.set("alice-token", { username: "alice", groups: ["team-a"] });
    authz.decide = (spec) => ({ allowed: spec.user === "alice" });
    const authnConfig = await writeFakeKubeconfig(authn.url);
    const authzConfig = await writeFakeKubeconfig(authz.url);
    let adapter: RunningAdapter | undefined;
    try {
      const { values } = parseArgs([
        "--manifests",
        DEMO_MANIFESTS,
        "--bind-address",
        "127.0.0.1",
        "--secure-port",
        "0",
        "--metrics-address",
        "",
        "--cert-dir",
        join(dir, "certs"),
        "--authentication-kubeconfig",
        authnConfig.path,
        "--authorization-kubeconfig",
        authzConfig.path,
      ], SERVE_FLAGS);
      adapter = await startAdapter(values, captureIO());
      const url = `https://127.0.0.1:${adapter.securePort}/apis/custom.metrics.k8s.io/v1beta2`;
      assert.equal((await get(url, { Authorization: "Bearer alice-token" })).status, 200);
      assert.equal((await get(url, { Authorization: "Bearer mallory-token" })).status, 401);
      assert.deepEqual(authn.tokenReviews, ["alice-token", "mallory-token"]);
      assert.deepEqual(authz.sars.map((s) => [s.user, s.nonResourceAttributes?.path]), [
        ["alice", "/apis/custom.metrics.k8s.io/v1beta2"],
      ]);
      assert.deepEqual([authz.tokenReviews, authn.sars], [[], []]);
      assert.equal(authn.configMapReads >= 1, true, "the ConfigMap is read through authn");
      assert.equal(authz.configMapReads, 0);
    } finally {
      await adapter?.close();
      await authn.close();
      await authz.close();
      await authnConfig.remove();
      await authzConfig.remove();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("fails to start with a clear error when only one TLS file is given, and stops what it started", async () => {
    const dir = await mkdtemp(join(tmpdir(), "serve-test-"));
    try {
      const { values } = parseArgs([
        "--manifests",
        DEMO_MANIFESTS,
        "--secure-port",
        "0",
        "--metrics-address",
        "",
        "--tls-cert-file",
        join(dir, "x.crt"),
      ], SERVE_FLAGS);
      await assert.rejects(
        startAdapter(values, captureIO()),
        /--tls-cert-file and --tls-private-key-file go together/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
