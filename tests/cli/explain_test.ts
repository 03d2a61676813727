/**
 * `explain NAMESPACE/NAME` of issue 24: online against the adapter (`serve --manifests`, a child
 * process of the runtime under test, with `--metrics-address` and the replica guard) and a real
 * loopback JSON endpoint whose `/fail` answers 500: a failing metric, a collected one, a
 * ScalingSchedule's next changes, the replica guard's decision, an active fallback; offline from
 * manifests (a config error, the demo's ScalingSchedule at a fixed time, a Knative
 * PodAutoscaler); the exit codes and the usage errors.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { runCommandLine } from "../../src/cli/commands.ts";
import { DEMO_MANIFESTS } from "../../src/cli/serve.ts";
import { captureIO } from "./capture_io.ts";
import {
  type AdapterProcess,
  currentRuntime,
  dailySchedule,
  httpGet,
  makeTempDir,
  type QueueEndpoint,
  scheduleHpa,
  startAdapterProcess,
  startQueueEndpoint,
  waitFor,
  writeManifests,
} from "../faults/support.ts";
import { freePort } from "../faults/formula_support.ts";

const NAMESPACE = "explain";

function hpa(
  name: string,
  annotations: Record<string, string>,
  status?: Record<string, number>,
): Record<string, unknown> {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name, namespace: NAMESPACE, annotations },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name },
      minReplicas: 1,
      maxReplicas: 10,
      metrics: [{
        type: "External",
        external: {
          metric: {
            name: "queue-depth",
            // one series per HPA: the same labels would be a conflict
            selector: { matchLabels: { type: "json-path", hpa: name } },
          },
          target: { type: "AverageValue", averageValue: "2" },
        },
      }],
    },
    ...(status ? { status } : {}),
  };
}

/** A json-path metric on `url`, collected once an hour (one failure, then none for the test). */
function jsonPath(url: string): Record<string, string> {
  return {
    "metric-config.external.queue-depth.json-path/endpoint": url,
    "metric-config.external.queue-depth.json-path/json-key": "$.queue.depth",
    "metric-config.external.queue-depth.json-path/interval": "1h",
  };
}

const USAGE =
  "usage: hpa-metrics-adapter explain NAMESPACE/NAME [--kubeconfig FILE] [--service-namespace NS]\n" +
  "       [--service-name NAME] [--service-port PORT] [--service-scheme http|https]\n" +
  "       hpa-metrics-adapter explain NAMESPACE/NAME --status-url http://HOST:PORT\n" +
  "       hpa-metrics-adapter explain NAMESPACE/NAME -f FILE|DIR... [serve's flags]\n";

const iso = (ms: number): string => new Date(ms).toISOString();

describe(`explain against a running adapter (${currentRuntime()})`, () => {
  let dir: string | undefined;
  let endpoint: QueueEndpoint | undefined;
  let adapter: AdapterProcess | undefined;
  let base = "";
  let url = "";
  /** When the daily schedule starts next: two hours after the test's start, to the minute. */
  let start = 0;

  before(async () => {
    endpoint = await startQueueEndpoint();
    url = endpoint.url;
    dir = await makeTempDir("explain-");
    const manifests = join(dir, "manifests");
    start = Math.floor((Date.now() + 2 * 3_600_000) / 60_000) * 60_000;
    const startTime = iso(start).slice(11, 16);
    const status = { currentReplicas: 2, desiredReplicas: 2 };
    await writeManifests(manifests, [
      hpa("broken", jsonPath(`${url}/fail`), status),
      hpa("working", jsonPath(`${url}/queue`), status),
      // no query: the guard sets the lower bound 3 (file mode: logged, not written)
      hpa("guarded", { ...jsonPath(`${url}/queue`), "estafette.io/hpa-scaler": "true" }, status),
      // past 0 failures (the first), the fallback value 3 x 2 is served
      hpa("fallback", {
        ...jsonPath(`${url}/fail`),
        "metric-config.external.queue-depth.json-path/fallback-failure-threshold": "0",
        "metric-config.external.queue-depth.json-path/fallback-replicas": "3",
      }, status),
      scheduleHpa(NAMESPACE, "scheduled", "daily", { currentReplicas: 2, desiredReplicas: 2 }),
      dailySchedule(NAMESPACE, "daily", startTime),
    ], "hpas.yaml");
    const metricsPort = await freePort();
    base = `http://127.0.0.1:${metricsPort}`;
    adapter = await startAdapterProcess({
      manifests,
      certDir: join(dir, "certs"),
      // after support.ts' `--metrics-address ""`: the last one counts
      flags: [
        "--metrics-address",
        `127.0.0.1:${metricsPort}`,
        "--estafette-hpa-scaler",
        "--scaling-schedule",
      ],
    });
    // deno-lint-ignore no-explicit-any
    await waitFor("every HPA's first collection and the guard's pass", async (): Promise<any> => {
      const r = await httpGet(`${base}/status.json`);
      const doc = JSON.parse(r.body);
      const states = doc.hpas.map((h: { name: string; state: string }) => `${h.name}=${h.state}`);
      const guarded = doc.hpas.find((h: { name: string }) => h.name === "guarded");
      return states.join(" ") ===
            "broken=failing fallback=fallback guarded=collected scheduled=collected " +
              "working=collected" && guarded.replicaGuard?.at
        ? doc
        : null;
    });
  });

  after(async () => {
    await adapter?.stop();
    await endpoint?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("prints the failing metric's facts exactly, names the HPA and metric, and exits 1", async () => {
    const io = captureIO();
    const code = await runCommandLine(["explain", `${NAMESPACE}/broken`, "--status-url", base], io);
    const doc = JSON.parse((await httpGet(`${base}/status.json`)).body);
    const metric = doc.hpas.find((h: { name: string }) => h.name === "broken").metrics[0];
    // collected once an hour: the first failure is the only one
    assert.equal(metric.failures, 1);
    const error = `unsuccessful response "500 Internal Server Error" from ${url}/fail`;
    assert.equal(
      io.err(),
      `error: HPA explain/broken metric External/queue-depth: failing: ${error}\n`,
    );
    assert.equal(
      io.out(),
      `HPA explain/broken (from ${base}/status.json)\n` +
        "  scale target: Deployment broken, replicas 1..10\n" +
        "  state:        failing\n" +
        "  replicas:     status current 2, desired 2; computed here -\n" +
        "    why:        invalid metrics (1 invalid out of 1), first error is: unable to get " +
        `metric queue-depth: ${error}\n` +
        "metric 1 of 1: External queue-depth\n" +
        "  collector:    json-path, every 1h0m0s\n" +
        `  state:        failing: 1 failed collection in a row since ${metric.failingSince}\n` +
        `  error:        ${error}\n` +
        "  value:        none\n" +
        "  target:       AverageValue 2\n" +
        "  selector:     hpa=broken,type=json-path\n" +
        `  config:       endpoint=${url}/fail, json-key=$.queue.depth\n`,
    );
    assert.equal(code, 1);
  });

  it("prints a ScalingSchedule's value now and its next changes, ramps as one", async () => {
    const io = captureIO();
    const code = await runCommandLine(
      ["explain", `${NAMESPACE}/scheduled`, "--status-url", base],
      io,
    );
    assert.equal(io.err(), "");
    assert.equal(code, 0);
    const m = /\n {2}value now: {4}0 at (\S+) \(ScalingSchedule explain\/daily, not active\)\n/
      .exec(io.out());
    assert.ok(m, io.out());
    const from = Date.parse(m[1]);
    // the document's range: its time, 24 hours on
    assert.ok(Math.abs(from - Date.now()) < 60_000, m[1]);
    assert.ok(
      io.out().includes(
        m[0] +
          `  next change:  up to 50 from ${iso(start - 540_000)} to ${iso(start)} (10 steps)\n` +
          `  then:         down to 0 from ${iso(start + 3_600_001)} to ${
            iso(start + 4_140_001)
          } (10 steps)\n` +
          "  target:       AverageValue 10\n",
      ),
      io.out(),
    );
  });

  it("prints the replica guard's last decision", async () => {
    const io = captureIO();
    const code = await runCommandLine(
      ["explain", `${NAMESPACE}/guarded`, "--status-url", base],
      io,
    );
    assert.equal(code, 0);
    const doc = JSON.parse((await httpGet(`${base}/status.json`)).body);
    const at = doc.hpas.find((h: { name: string }) => h.name === "guarded").replicaGuard.at;
    assert.ok(
      io.out().includes(
        "replica guard (estafette.io/hpa-scaler)\n" +
          `  decided:      ${at}\n` +
          "  minReplicas:  3\n" +
          "  scale-down:   at most 2 replicas removed per scale-down: minReplicas at least 0\n" +
          "  decision:     minReplicas 1 -> 3: lower bound 3 (not written: file mode, decisions " +
          "are logged)\n" +
          "metric 1 of 1: External queue-depth\n",
      ),
      io.out(),
    );
    // without the guard on, an HPA says nothing of it
    const working = captureIO();
    await runCommandLine(["explain", `${NAMESPACE}/working`, "--status-url", base], working);
    assert.ok(!working.out().includes("replica guard"), working.out());
  });

  it("prints an active fallback: since when, what it serves and why, and exits 0", async () => {
    const io = captureIO();
    const code = await runCommandLine(
      ["explain", `${NAMESPACE}/fallback`, "--status-url", base],
      io,
    );
    assert.equal(io.err(), "");
    assert.equal(code, 0);
    const doc = JSON.parse((await httpGet(`${base}/status.json`)).body);
    const fb = doc.hpas.find((h: { name: string }) => h.name === "fallback").metrics[0].fallback;
    const error = `unsuccessful response "500 Internal Server Error" from ${url}/fail`;
    assert.deepEqual(fb, {
      active: true,
      consecutiveFailures: 1,
      activeSince: fb.activeSince,
      endedAt: null,
      value: 6,
      replicas: 3,
      reason: `1 consecutive failed collections (the last: ${error})`,
      endReason: null,
    });
    assert.ok(
      io.out().includes(
        `  fallback:     active since ${fb.activeSince}, serving 6 (3 replicas): 1 consecutive ` +
          `failed collections (the last: ${error})\n`,
      ),
      io.out(),
    );
  });

  it("exits 0 when the HPA gets its metric, with its value and age", async () => {
    const io = captureIO();
    const code = await runCommandLine(
      ["explain", `${NAMESPACE}/working`, "--status-url", `${base}/status`],
      io,
    );
    assert.equal(io.err(), "");
    assert.equal(code, 0);
    assert.match(
      io.out(),
      /\n {2}value: {8}6\.5 \(at \d{4}-\d\d-\d\dT[0-9:.]+Z, \d+s old\)\n/,
    );
    // 6.5 / 2 over 2 replicas: ceil(2 * 1.625) = 4
    assert.match(io.out(), /\n {2}replicas: {5}status current 2, desired 2; computed here 4\n/);
    assert.ok(io.out().endsWith("\nHPA explain/working gets all its metrics (1)\n"), io.out());
  });

  it("exits 2 for an HPA the adapter does not know", async () => {
    const io = captureIO();
    const code = await runCommandLine(["explain", `${NAMESPACE}/nope`, "--status-url", base], io);
    assert.equal(code, 2);
    assert.equal(io.out(), "");
    assert.equal(
      io.err(),
      `error: HPA explain/nope not found in ${base}/status.json (the adapter knows 5 HPAs)\n`,
    );
  });

  it("exits 1 when nothing answers at the status URL", async () => {
    const io = captureIO();
    const port = await freePort();
    const code = await runCommandLine(
      ["explain", `${NAMESPACE}/broken`, "--status-url", `http://127.0.0.1:${port}`],
      io,
    );
    assert.equal(code, 1);
    assert.match(
      io.err(),
      new RegExp(`^error: cannot read http://127\\.0\\.0\\.1:${port}/status\\.json: `),
    );
  });
});

describe("explain offline from manifests", () => {
  let dir: string | undefined;
  let file = "";

  before(async () => {
    dir = await makeTempDir("explain-offline-");
    const annotations = {
      // no endpoint: the json-path config cannot be planned
      "metric-config.external.queue-depth.json-path/json-key": "$.queue.depth",
    };
    file = await writeManifests(dir, [hpa("broken", annotations)]);
  });

  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("prints a metric with a config error exactly, names the HPA and metric, and exits 1", async () => {
    const io = captureIO();
    const code = await runCommandLine(["explain", `${NAMESPACE}/broken`, "-f", file], io);
    const error =
      "External metric `queue-depth` of HPA explain/broken needs matchLabels.endpoint " +
      "or annotation metric-config.external.queue-depth.json-path/endpoint";
    assert.equal(
      io.out(),
      `HPA explain/broken (offline, from ${file})\n` +
        "  scale target: Deployment broken, replicas 1..10\n" +
        "metric 1 of 1: External queue-depth\n" +
        "  collector:    json-path, every 1m0s\n" +
        `  plan:         error: ${error}\n` +
        "  target:       AverageValue 2\n" +
        "  selector:     hpa=broken,type=json-path\n" +
        "  config:       json-key=$.queue.depth\n",
    );
    assert.equal(io.err(), `error: HPA explain/broken metric External/queue-depth: ${error}\n`);
    assert.equal(code, 1);
  });

  it("evaluates the demo's ScalingSchedule now and exits 0", async () => {
    // inside the hourly peak's ramp-up (10:25 UTC: 5 of 10 steps of 40 -> 20)
    const io = captureIO({ now: Date.parse("2026-11-22T10:25:00Z") });
    const code = await runCommandLine(["explain", "demo/shop-schedule", "-f", DEMO_MANIFESTS], io);
    assert.equal(io.err(), "");
    assert.equal(
      io.out(),
      `HPA demo/shop-schedule (offline, from ${join(DEMO_MANIFESTS, "hpas.yaml")})\n` +
        "  scale target: Deployment shop, replicas 1..10\n" +
        "metric 1 of 1: Object hourly-peak\n" +
        "  collector:    scaling-schedule, every 10s\n" +
        "  plan:         OK\n" +
        "  value now:    20 at 2026-11-22T10:25:00.000Z (ScalingSchedule demo/hourly-peak, active)\n" +
        "  next change:  up to 40 from 2026-11-22T10:26:00.000Z to 2026-11-22T10:30:00.000Z " +
        "(5 steps)\n" +
        "  then:         down to 0 from 2026-11-22T10:40:00.001Z to 2026-11-22T10:49:00.001Z " +
        "(10 steps)\n" +
        "  then:         up to 40 from 2026-11-22T11:21:00.000Z to 2026-11-22T11:30:00.000Z " +
        "(10 steps)\n" +
        "  then:         46 more changes until 2026-11-23T10:25:00.000Z\n" +
        "  target:       AverageValue 10\n" +
        "  config:       none\n" +
        "\nHPA demo/shop-schedule: every metric planned (1), all collectors assumed enabled\n",
    );
    assert.equal(code, 0);
  });

  it("says what a json-path metric of the demo would collect", async () => {
    const io = captureIO();
    assert.equal(await runCommandLine(["explain", "demo/payments", "-f", DEMO_MANIFESTS], io), 0);
    assert.match(
      io.out(),
      /\n {2}collects: {5}GET http:\/\/127\.0\.0\.1:18080\/backlog, the number at \$\.backlog\.length\n/,
    );
  });

  it("exits 2 for an HPA the manifests do not hold, naming those they do", async () => {
    const io = captureIO();
    const code = await runCommandLine(["explain", `${NAMESPACE}/nope`, "-f", file], io);
    assert.equal(code, 2);
    assert.equal(io.out(), "");
    assert.equal(
      io.err(),
      `error: HPA explain/nope not found in ${file} (found: explain/broken)\n`,
    );
  });
});

describe("explain offline for KEDA ScaledObjects", () => {
  let dir: string | undefined;
  let file = "";

  before(async () => {
    dir = await makeTempDir("explain-keda-");
    file = await writeManifests(dir, [
      {
        apiVersion: "keda.sh/v1alpha1",
        kind: "ScaledObject",
        metadata: { name: "web", namespace: "shop" },
        spec: {
          scaleTargetRef: { name: "web" },
          maxReplicaCount: 8,
          triggers: [
            {
              type: "prometheus",
              metadata: { serverAddress: "http://prom:9090", query: "sum(up)", threshold: "2.5" },
            },
            { type: "memory", metricType: "AverageValue", metadata: { value: "1.5Gi" } },
          ],
        },
      },
      {
        apiVersion: "keda.sh/v1alpha1",
        kind: "ScaledObject",
        metadata: { name: "cron", namespace: "shop" },
        spec: {
          scaleTargetRef: { name: "cron" },
          triggers: [{
            type: "cron",
            metadata: {
              timezone: "Etc/UTC",
              start: "0 8 * * *",
              end: "0 8 * * *",
              desiredReplicas: "2",
            },
          }],
        },
      },
    ]);
  });

  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("shows the HPA KEDA writes for a ScaledObject and its triggers' metrics", async () => {
    const io = captureIO();
    const code = await runCommandLine(["explain", "shop/web", "-f", file], io);
    assert.equal(
      io.out(),
      `ScaledObject shop/web (offline, from ${file})\n` +
        "keda ScaledObject shop/web -> HorizontalPodAutoscaler shop/keda-hpa-web (see --output yaml)\n" +
        "    trigger 0 prometheus: s0-prometheus, target AverageValue 2.500, active > 0\n" +
        "    trigger 1 memory: memory, target AverageValue 1536Mi\n",
    );
    assert.equal(code, 0);
  });

  it("says KEDA's error for a ScaledObject it would refuse, and exits 1", async () => {
    const io = captureIO();
    const code = await runCommandLine(["explain", "shop/cron", "-f", file], io);
    assert.equal(
      io.out(),
      `ScaledObject shop/cron (offline, from ${file})\n` +
        "keda ScaledObject shop/cron (trigger 0): failed to ensure HPA is correctly created for " +
        "ScaledObject: error parsing cron metadata: start and end can not have exactly same time input\n",
    );
    assert.equal(code, 1);
  });

  it("lists the ScaledObjects it found when none has the name", async () => {
    const io = captureIO();
    assert.equal(await runCommandLine(["explain", "shop/nope", "-f", file], io), 2);
    assert.match(io.err(), /\(found: shop\/web \(ScaledObject\), shop\/cron \(ScaledObject\)\)/);
  });
});

describe("explain offline for Knative PodAutoscalers", () => {
  let dir: string | undefined;
  let file = "";

  /** A PodAutoscaler of class hpa with autoscaler-keda's annotations. */
  function pa(name: string, annotations: Record<string, string>): Record<string, unknown> {
    return {
      apiVersion: "autoscaling.internal.knative.dev/v1alpha1",
      kind: "PodAutoscaler",
      metadata: {
        name,
        namespace: "shop",
        annotations: {
          "autoscaling.knative.dev/class": "hpa.autoscaling.knative.dev",
          ...annotations,
        },
      },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: `${name}-deployment` },
      },
    };
  }

  before(async () => {
    dir = await makeTempDir("explain-knative-");
    file = await writeManifests(dir, [
      pa("rev-1", {
        "autoscaling.knative.dev/metric": "rps",
        "autoscaling.knative.dev/target": "5",
        "autoscaling.knative.dev/prometheus-query":
          'sum(rate(requests{pod=~"{{ .revisionName }}.*"}[1m]))',
        "autoscaling.knative.dev/max-scale": "10",
      }),
      pa("rev-2", { "autoscaling.knative.dev/metric-type": "foo" }),
    ]);
  });

  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("explains a PodAutoscaler through the HPA the Knative reconciler would make", async () => {
    const io = captureIO();
    const code = await runCommandLine(
      ["explain", "shop/rev-1", "-f", file, "--knative-prometheus-address", "http://prom:9090"],
      io,
    );
    assert.equal(io.err(), "");
    // the ScaledObject autoscaler-keda would create, and its metric as KEDA makes it
    assert.equal(
      io.out(),
      `HPA shop/rev-1 (offline, from ${file}: the HPA the Knative reconciler would make for ` +
        "PodAutoscaler shop/rev-1)\n" +
        "knative PodAutoscaler shop/rev-1 -> HorizontalPodAutoscaler shop/rev-1 (see --output yaml)\n" +
        "    trigger 0 prometheus: s0-prometheus, target AverageValue 5, active > 0\n",
    );
    assert.equal(code, 0);
  });

  it("says why a PodAutoscaler maps to no HPA, naming the annotation, and exits 1", async () => {
    const io = captureIO();
    const code = await runCommandLine(["explain", "shop/rev-2", "-f", file], io);
    assert.equal(
      io.out(),
      `HPA shop/rev-2 (offline, from ${file}: the HPA the Knative reconciler would make for ` +
        "PodAutoscaler shop/rev-2)\n",
    );
    assert.equal(
      io.err(),
      'error: PodAutoscaler shop/rev-2: invalid metric type: "foo" (annotation ' +
        "autoscaling.knative.dev/metric-type): want AverageValue, Utilization or Value\n",
    );
    assert.equal(code, 1);
  });

  it("names the PodAutoscalers it found when none has the name", async () => {
    const io = captureIO();
    assert.equal(await runCommandLine(["explain", "shop/rev-3", "-f", file], io), 2);
    assert.equal(
      io.err(),
      `error: HPA shop/rev-3 not found in ${file} (found: shop/rev-1 (PodAutoscaler), ` +
        "shop/rev-2 (PodAutoscaler))\n",
    );
  });
});

describe("explain's usage errors", () => {
  const cases: [string[], string][] = [
    [[], "explain needs NAMESPACE/NAME"],
    [["shop"], 'invalid HPA "shop": want NAMESPACE/NAME'],
    [["shop/a", "shop/b", "-f", "x"], 'unexpected argument "shop/b"'],
    [
      ["shop/a", "--service-port", "a b"],
      'invalid value "a b" for --service-port: want a port name or number',
    ],
    [
      ["shop/a", "-f", "x", "--status-url", "http://127.0.0.1:1"],
      "--status-url and -f exclude each other: ask a running adapter or read manifests",
    ],
    [
      ["shop/a", "--status-url", "127.0.0.1:7979"],
      'invalid value "127.0.0.1:7979" for --status-url: want http://HOST:PORT',
    ],
    [["shop/a", "--no-such-flag"], "unknown flag --no-such-flag"],
  ];
  for (const [args, message] of cases) {
    it(`exits 2 for ${JSON.stringify(args)}`, async () => {
      const io = captureIO();
      assert.equal(await runCommandLine(["explain", ...args], io), 2);
      assert.equal(io.out(), "");
      assert.equal(io.err(), `error: ${message}\n${USAGE}`);
    });
  }

  it("is listed in help", async () => {
    const io = captureIO();
    assert.equal(await runCommandLine(["help"], io), 0);
    assert.match(io.out(), /\n {2}explain +the facts of one HPA/);
  });
});
