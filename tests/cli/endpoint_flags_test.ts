/**
 * `--allowed-metric-endpoints` and `--endpoints-in-own-namespace` (issue 25) on the command
 * line: `plan -f` and `explain -f` show the refusals offline (table, JSON, exit codes with
 * `--strict`), the servers given by flags stay allowed, a Knative PodAutoscaler's
 * `prometheus-address` is checked through the HPA it maps to, the replica guard's server URL
 * annotation is warned of, and a bad pattern is a usage error of plan and of serve's start.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCommandLine } from "../../src/cli/commands.ts";
import { parseArgs, SERVE_FLAGS } from "../../src/cli/flags.ts";
import { startAdapter } from "../../src/cli/serve.ts";
import { endpointPolicyFromFlags, flagServerUrls } from "../../src/cli/endpoint_options.ts";
import { captureIO } from "./capture_io.ts";

const HPA = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
  namespace: a
  annotations:
    metric-config.external.other.json-path/endpoint: http://db.b.svc.cluster.local:80/x
    metric-config.external.other.json-path/json-key: "$.n"
    metric-config.external.own.json-path/endpoint: http://api.a.svc:8080/m
    metric-config.external.own.json-path/json-key: "$.n"
    metric-config.external.prom.prometheus/prometheus-server: http://prometheus.monitoring:9090
    metric-config.external.prom.prometheus/query: up
    estafette.io/hpa-scaler: "true"
    estafette.io/hpa-scaler-prometheus-query: vector(1)
    estafette.io/hpa-scaler-prometheus-server-url: http://prometheus.b:9090
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  metrics:
    - type: External
      external:
        metric: {name: other, selector: {matchLabels: {type: json-path}}}
        target: {type: AverageValue, averageValue: "10"}
    - type: External
      external:
        metric: {name: own, selector: {matchLabels: {type: json-path}}}
        target: {type: AverageValue, averageValue: "10"}
    - type: External
      external:
        metric: {name: prom, selector: {matchLabels: {type: prometheus}}}
        target: {type: AverageValue, averageValue: "10"}
`;

const PA = `apiVersion: autoscaling.internal.knative.dev/v1alpha1
kind: PodAutoscaler
metadata:
  name: rev-1
  namespace: shop
  annotations:
    autoscaling.knative.dev/class: hpa.autoscaling.knative.dev
    autoscaling.knative.dev/metric: rps
    autoscaling.knative.dev/target: "5"
    autoscaling.knative.dev/prometheus-query: sum(rate(requests[1m]))
    autoscaling.knative.dev/prometheus-address: http://prometheus.monitoring.svc:9090
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: rev-1-deployment}
---
apiVersion: autoscaling.internal.knative.dev/v1alpha1
kind: PodAutoscaler
metadata:
  name: rev-2
  namespace: shop
  annotations:
    autoscaling.knative.dev/class: hpa.autoscaling.knative.dev
    autoscaling.knative.dev/metric: rps
    autoscaling.knative.dev/target: "5"
    autoscaling.knative.dev/prometheus-query: sum(rate(requests[1m]))
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: rev-2-deployment}
`;

const OWN = ["--endpoints-in-own-namespace"];
const OTHER_ERROR =
  'invalid endpoint "http://db.b.svc.cluster.local:80/x" for External metric `other` of HPA a/web (annotation metric-config.external.other.json-path/endpoint): not allowed: not a Service in namespace "a" (--endpoints-in-own-namespace) and not a server given by flags';
const PROM_ERROR =
  'invalid prometheus-server "http://prometheus.monitoring:9090" for External metric `prom` of HPA a/web (annotation metric-config.external.prom.prometheus/prometheus-server): not allowed: not a Service in namespace "a" (--endpoints-in-own-namespace) and not a server given by flags';
const GUARD_WARNING =
  'invalid estafette.io/hpa-scaler-prometheus-server-url "http://prometheus.b:9090" of HPA a/web: not allowed: not a Service in namespace "a" (--endpoints-in-own-namespace) and not a server given by flags';
const PLAN_USAGE =
  "usage: hpa-metrics-adapter plan -f FILE|DIR... [--output table|json] [--strict] [serve's flags]\n";

let dir = "";
let hpaFile = "";
let paFile = "";

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "endpoint-flags-"));
  hpaFile = join(dir, "hpa.yaml");
  paFile = join(dir, "pa.yaml");
  await writeFile(hpaFile, HPA);
  await writeFile(paFile, PA);
});

after(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function run(args: string[], env: Record<string, string> = {}) {
  const io = captureIO({ env });
  const code = await runCommandLine(args, io);
  return { code, out: io.out(), err: io.err() };
}

describe("plan -f with the endpoint flags", () => {
  it("prints each refusal in the table and exits 0, or 1 with --strict", async () => {
    const table = "HPA    TYPE      METRIC  COLLECTOR   INTERVAL  STATUS\n" +
      `a/web  External  other   json-path   1m0s      ${OTHER_ERROR}\n` +
      "a/web  External  own     json-path   1m0s      OK\n" +
      `a/web  External  prom    prometheus  1m0s      ${PROM_ERROR}\n` +
      'replica guard of a/web: minReplicas from ceil(query / 1), query "vector(1)" on http://prometheus.b:9090; scale-down cap 1 of the current replicas\n' +
      `    warning: ${GUARD_WARNING}\n` +
      "\n3 metrics in 1 HPA: 2 errors, 1 warning (all collectors assumed enabled)\n";
    assert.deepEqual(await run(["plan", "-f", hpaFile, ...OWN]), { code: 0, out: table, err: "" });
    assert.deepEqual(await run(["plan", "-f", hpaFile, ...OWN, "--strict"]), {
      code: 1,
      out: table,
      err: "",
    });
  });

  it("writes the refusals as the rows' errors in JSON", async () => {
    const r = await run(["plan", "-f", hpaFile, ...OWN, "--output", "json"]);
    assert.equal(r.code, 0);
    const rows = JSON.parse(r.out) as { hpa: string; metricName?: string; error?: string }[];
    assert.deepEqual(rows.map((row) => [row.metricName ?? "guard", row.error ?? null]), [
      ["other", OTHER_ERROR],
      ["own", null],
      ["prom", PROM_ERROR],
      ["guard", null],
    ]);
    assert.deepEqual((rows[3] as { warnings?: string[] }).warnings, [GUARD_WARNING]);
  });

  it("allows the servers given by flags and what the patterns match", async () => {
    const r = await run([
      "plan",
      "-f",
      hpaFile,
      "--strict",
      "--output",
      "json",
      ...OWN,
      "--allowed-metric-endpoints",
      "http://db.b.svc.cluster.local/x,http://*.b:9090",
      "--prometheus-server",
      "http://prometheus.monitoring:9090",
    ]);
    assert.equal(r.err, "");
    assert.equal(r.code, 0);
    const rows = JSON.parse(r.out) as { error?: string | null; warnings?: string[] }[];
    assert.deepEqual(rows.map((row) => row.error ?? null), [null, null, null, null]);
    assert.deepEqual(rows.map((row) => row.warnings ?? []), [[], [], [], []]);
  });

  it("refuses nothing without the flags", async () => {
    const r = await run(["plan", "-f", hpaFile, "--strict"]);
    assert.equal(r.code, 0);
    assert.match(r.out, /3 metrics in 1 HPA: 0 errors, 0 warnings/);
  });

  it("checks a Knative PodAutoscaler's prometheus-address when it maps it to its ScaledObject", async () => {
    const r = await run([
      "plan",
      "-f",
      paFile,
      "--output",
      "json",
      ...OWN,
      "--knative-autoscaler",
    ]);
    assert.equal(r.code, 0);
    const rows = (JSON.parse(r.out) as { source?: string; hpa?: string; error?: string }[])
      .filter((row) => row.source !== undefined);
    assert.deepEqual(rows.map((row) => [row.source, row.hpa, row.error]), [
      [
        "PodAutoscaler shop/rev-1",
        undefined,
        'prometheus address "http://prometheus.monitoring.svc:9090" of trigger "default-trigger-custom" (annotation autoscaling.knative.dev/prometheus-address): not allowed: not a Service in namespace "shop" (--endpoints-in-own-namespace) and not a server given by flags',
      ],
      // the default address (--knative-prometheus-address) is a server given by flags
      ["PodAutoscaler shop/rev-2", "shop/rev-2", undefined],
    ]);
  });

  it("is a usage error naming a bad pattern", async () => {
    for (
      const [pattern, why] of [
        ["ftp://x", "want scheme://host[:port][/path-prefix] with scheme http or https"],
        ["http://a.*.test", "a wildcard host is *.suffix (any subdomain of a DNS name)"],
        ["http://h.test:99999", 'invalid port "99999": want a number from 1 to 65535 or *'],
      ]
    ) {
      assert.deepEqual(
        await run(["plan", "-f", hpaFile, `--allowed-metric-endpoints=http://ok.test,${pattern}`]),
        {
          code: 2,
          out: "",
          err:
            `error: invalid value "${pattern}" for --allowed-metric-endpoints: ${why}\n${PLAN_USAGE}`,
        },
      );
    }
  });
});

describe("explain -f with the endpoint flags", () => {
  it("shows the refusal of each metric and exits 1", async () => {
    const r = await run(["explain", "a/web", "-f", hpaFile, ...OWN]);
    assert.equal(r.code, 1);
    assert.equal(
      r.err,
      `error: HPA a/web metric External/other: ${OTHER_ERROR}\n` +
        `error: HPA a/web metric External/prom: ${PROM_ERROR}\n`,
    );
    // (the rest of the page is explain's own business)
    assert.ok(r.out.includes(`  plan:         error: ${OTHER_ERROR}\n`), r.out);
    assert.ok(r.out.includes(`  plan:         error: ${PROM_ERROR}\n`), r.out);
    const plain = await run(["explain", "a/web", "-f", hpaFile]);
    assert.deepEqual([plain.code, plain.err, plain.out.includes("not allowed")], [0, "", false]);
  });
});

describe("the policy of the flags", () => {
  it("lists the servers given by flags", () => {
    const { values } = parseArgs([
      "--prometheus-server=http://p.monitoring:9090",
      "--additional-prometheus-server=eu=http://p.eu:9090",
      "--additional-prometheus-server=us = http://p.us:9090",
      "--additional-prometheus-server=broken",
      "--influxdb-address=http://influx:8086",
      "--knative-prometheus-address=http://k.monitoring:9090",
    ], SERVE_FLAGS);
    assert.deepEqual(flagServerUrls(values, { PROMETHEUS_SERVER_URL: "http://env:9090" }), [
      "http://p.monitoring:9090",
      "http://p.eu:9090",
      "http://p.us:9090",
      "http://influx:8086",
      "http://env:9090",
    ]);
    values["knative-autoscaler"] = true;
    values["estafette-prometheus-server-url"] = "http://guard:9090";
    assert.deepEqual(flagServerUrls(values, { PROMETHEUS_SERVER_URL: "http://env:9090" }), [
      "http://p.monitoring:9090",
      "http://p.eu:9090",
      "http://p.us:9090",
      "http://influx:8086",
      "http://guard:9090",
      "http://k.monitoring:9090",
    ]);
  });

  it("is undefined with no rule on, and reads the cluster domain", () => {
    const none = parseArgs(["--prometheus-server=http://p:9090"], SERVE_FLAGS).values;
    assert.equal(endpointPolicyFromFlags(none, {}), undefined);
    const own =
      parseArgs(["--endpoints-in-own-namespace", "--cluster-domain=corp.example"], SERVE_FLAGS)
        .values;
    const policy = endpointPolicyFromFlags(own, {})!;
    assert.equal(policy.ownNamespace, true);
    assert.equal(policy.clusterDomain, "corp.example");
    assert.deepEqual(policy.patterns, []);
  });
});

describe("serve with a bad pattern", () => {
  it("fails to start, naming it", async () => {
    const certs = await mkdtemp(join(tmpdir(), "endpoint-serve-"));
    try {
      const { values } = parseArgs([
        "--manifests",
        dir,
        "--secure-port",
        "0",
        "--cert-dir",
        certs,
        "--allowed-metric-endpoints",
        "http://h.test/api/*",
      ], SERVE_FLAGS);
      await assert.rejects(startAdapter(values, captureIO()), {
        message:
          'invalid value "http://h.test/api/*" for --allowed-metric-endpoints: a path is a prefix and takes no wildcard',
      });
    } finally {
      await rm(certs, { recursive: true, force: true });
    }
  });
});
