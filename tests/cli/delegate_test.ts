/**
 * The delegation flags (issue 26): the URLs and files they name, checked with errors naming
 * the flag and the value; and `plan` / `explain -f`, which say "served by the delegate" for the
 * metrics no collector of ours takes when their API has a delegate.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { delegateUrls, delegationFromFlags } from "../../src/cli/delegate_options.ts";
import { explainCommand } from "../../src/cli/explain.ts";
import { parseArgs, SERVE_FLAGS } from "../../src/cli/flags.ts";
import { planCommand } from "../../src/cli/plan.ts";
import { captureIO } from "./capture_io.ts";

const KEDA = "https://keda-operator-metrics-apiserver.keda";
const PROM_ADAPTER = "https://prometheus-adapter.monitoring";

/**
 * KEDA's HPA (an External metric selected by the ScaledObject label: no collector of ours), an
 * HPA of ours with a Pods metric of prometheus-adapter's (no annotations) and a json-path one,
 * and an HPA on a ScalingSchedule.
 */
const MANIFESTS = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: keda-hpa-worker, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: worker}
  maxReplicas: 5
  metrics:
    - type: External
      external:
        metric:
          name: s0-rabbitmq-orders
          selector: {matchLabels: {scaledobject.keda.sh/name: worker}}
        target: {type: AverageValue, averageValue: "10"}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
  namespace: shop
  annotations:
    metric-config.pods.rps.json-path/json-key: "$.rps"
    metric-config.pods.rps.json-path/port: "9090"
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  metrics:
    - type: Pods
      pods:
        metric: {name: rps}
        target: {type: AverageValue, averageValue: "10"}
    - type: Pods
      pods:
        metric: {name: http_requests_per_second}
        target: {type: AverageValue, averageValue: "10"}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: peak, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  metrics:
    - type: Object
      object:
        describedObject: {apiVersion: zalando.org/v1, kind: ScalingSchedule, name: peak}
        metric: {name: peak}
        target: {type: Value, value: "10"}
`;

describe("delegation flags", () => {
  const flags = (args: string[]) => parseArgs(args, SERVE_FLAGS).values;

  it("take https base URLs and drop a trailing slash", () => {
    assert.deepEqual(
      delegateUrls(flags([
        "--delegate-external-metrics",
        `${KEDA}/`,
        "--delegate-custom-metrics=https://10.0.0.1:6443/prefix",
      ])),
      { custom: "https://10.0.0.1:6443/prefix", external: KEDA },
    );
    assert.deepEqual(delegateUrls(flags([])), { custom: null, external: null });
  });

  it("reject what is not an https base URL, naming the flag and the value", () => {
    const cases: [string[], string][] = [
      [
        ["--delegate-external-metrics", "http://keda"],
        'invalid --delegate-external-metrics "http://keda": want an https:// URL (adapters serve HTTPS only)',
      ],
      [
        ["--delegate-custom-metrics", "keda:443"],
        'invalid --delegate-custom-metrics "keda:443": want an https:// URL (adapters serve HTTPS only)',
      ],
      [
        ["--delegate-custom-metrics", "not a url"],
        'invalid --delegate-custom-metrics "not a url": want an https:// URL',
      ],
      [
        ["--delegate-external-metrics", "https://keda/?x=1"],
        'invalid --delegate-external-metrics "https://keda/?x=1": want a base URL without query, fragment or user',
      ],
    ];
    for (const [args, message] of cases) {
      assert.throws(() => delegateUrls(flags(args)), { name: "UsageError", message });
    }
  });

  it("read the TLS and credential files, with errors naming the flag and the file", async () => {
    const dir = await mkdtemp(join(tmpdir(), "delegate-flags-"));
    try {
      await writeFile(join(dir, "not-a-ca"), "hello");
      const none = await delegationFromFlags(flags([]));
      assert.deepEqual(none.delegates, {});
      const base = ["--delegate-external-metrics", KEDA];
      await assert.rejects(
        delegationFromFlags(flags([...base, "--delegate-ca-file", join(dir, "missing.crt")])),
        {
          message: new RegExp(
            `^cannot read --delegate-ca-file "${join(dir, "missing.crt")}": ENOENT`,
          ),
        },
      );
      await assert.rejects(
        delegationFromFlags(flags([...base, "--delegate-ca-file", join(dir, "not-a-ca")])),
        { message: `no certificate found in --delegate-ca-file "${join(dir, "not-a-ca")}"` },
      );
      await assert.rejects(
        delegationFromFlags(flags([...base, "--delegate-client-cert-file", join(dir, "not-a-ca")])),
        { message: "--delegate-client-cert-file and --delegate-client-key-file go together" },
      );
      await assert.rejects(
        delegationFromFlags(flags([...base, "--enable-external-metrics-api=false"])),
        {
          message:
            `--delegate-external-metrics "${KEDA}" needs --enable-external-metrics-api: the delegate's reads come through it`,
        },
      );
      await assert.rejects(
        delegationFromFlags(flags([...base, "--delegate-token-file", join(dir, "token")])),
        { message: `cannot read --delegate-token-file "${join(dir, "token")}": no such file` },
      );
      // the default token file, absent outside a pod: a warning, no credentials
      const warnings: string[] = [];
      const d = await delegationFromFlags(flags(base), {
        log: { warn: (m) => warnings.push(m), info: () => {} },
      });
      assert.deepEqual(Object.keys(d.delegates), ["external"]);
      assert.deepEqual(warnings, [
        "no token at /var/run/secrets/kubernetes.io/serviceaccount/token: requests to the delegates carry no credentials (set --delegate-token-file or --delegate-client-cert-file)",
      ]);
      await d.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("plan and explain with delegates", () => {
  let dir: string;
  let file: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "delegate-plan-"));
    file = join(dir, "hpas.yaml");
    await writeFile(file, MANIFESTS);
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const plan = async (args: string[]) => {
    const io = captureIO();
    const code = await planCommand.run(["-f", file, ...args], io);
    return { code, out: io.out(), err: io.err() };
  };

  it("plan says which metrics the delegates serve, and --strict does not count them as errors", async () => {
    const r = await plan([
      "--output",
      "json",
      "--strict",
      "--scaling-schedule=false",
      "--delegate-external-metrics",
      KEDA,
      "--delegate-custom-metrics",
      PROM_ADAPTER,
    ]);
    assert.equal(r.code, 0, r.err);
    const rows = JSON.parse(r.out).map((
      x: { hpa: string; metricName: string; error: string | null; delegate?: string },
    ) => [x.hpa, x.metricName, x.error, x.delegate ?? null]);
    assert.deepEqual(rows, [
      ["shop/keda-hpa-worker", "s0-rabbitmq-orders", null, KEDA],
      ["shop/web", "rps", null, null],
      ["shop/web", "http_requests_per_second", null, PROM_ADAPTER],
      ["shop/peak", "peak", null, PROM_ADAPTER],
    ]);
  });

  it("plan shows them in the table, and errors for the API without a delegate", async () => {
    const r = await plan(["--strict", "--delegate-external-metrics", KEDA]);
    assert.equal(r.code, 1);
    const lines = r.out.split("\n");
    assert.match(
      lines.find((l) => l.includes("s0-rabbitmq-orders"))!,
      new RegExp(`  served by the delegate ${KEDA.replaceAll(".", "\\.")}$`),
    );
    assert.match(
      lines.find((l) => l.includes("http_requests_per_second"))!,
      / {2}Pods metric `http_requests_per_second` needs annotation /,
    );
    // without a delegate flag, KEDA's metric is an error as before
    const before = await plan(["--output", "json"]);
    const keda = JSON.parse(before.out).find((x: { metricName: string }) =>
      x.metricName === "s0-rabbitmq-orders"
    );
    assert.equal(keda.delegate, undefined);
    assert.match(keda.error, /^External metric `s0-rabbitmq-orders` has no `type` label/);
  });

  it("explain -f says served by the delegate and exits 0", async () => {
    const io = captureIO();
    const code = await explainCommand.run([
      "shop/keda-hpa-worker",
      "-f",
      file,
      "--delegate-external-metrics",
      KEDA,
    ], io);
    assert.equal(code, 0, io.err());
    assert.match(
      io.out(),
      new RegExp(`\\n {2}plan: +served by the delegate ${KEDA.replaceAll(".", "\\.")}\\n`),
    );
    assert.equal(io.err(), "");
    const without = captureIO();
    assert.equal(await explainCommand.run(["shop/keda-hpa-worker", "-f", file], without), 1);
  });
});
