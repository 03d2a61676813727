/**
 * `--prometheus-enforce-namespace-label` (issue 25) on the command line: `plan -f` shows each
 * query as it will run (scoped to the HPA's namespace) for prometheus metrics, the replica
 * guard and a Knative PodAutoscaler's trigger; a query that names another namespace is the
 * metric's error (exit 1 with --strict); without the flag nothing changes; a label that cannot
 * be matched on is a usage error of plan and of serve's start.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCommandLine } from "../../src/cli/commands.ts";
import { captureIO } from "./capture_io.ts";

const MANIFESTS = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
  namespace: a
  annotations:
    metric-config.external.prom.prometheus/query: sum(rate(requests_total[1m])) by (pod)
    metric-config.external.other.prometheus/query: sum(requests_total{namespace="b"})
    estafette.io/hpa-scaler: "true"
    estafette.io/hpa-scaler-prometheus-query: sum(rate(requests_total[5m]))
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  metrics:
    - type: External
      external:
        metric: {name: prom, selector: {matchLabels: {type: prometheus}}}
        target: {type: AverageValue, averageValue: "10"}
    - type: External
      external:
        metric: {name: other, selector: {matchLabels: {type: prometheus}}}
        target: {type: AverageValue, averageValue: "10"}
---
apiVersion: autoscaling.internal.knative.dev/v1alpha1
kind: PodAutoscaler
metadata:
  name: rev-1
  namespace: shop
  annotations:
    autoscaling.knative.dev/class: hpa.autoscaling.knative.dev
    autoscaling.knative.dev/metric: rps
    autoscaling.knative.dev/target: "5"
    autoscaling.knative.dev/prometheus-query: sum(rate(requests[1m]))
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: rev-1-deployment}
`;

const OTHER_ERROR =
  'invalid query "sum(requests_total{namespace="b"})" for External metric `other` of HPA a/web (annotation metric-config.external.other.prometheus/query): selector requests_total{namespace="b"} at offset 4 matches namespace="b": the query may select only namespace="a"';

let dir = "";
let file = "";

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "promql-flag-"));
  file = join(dir, "manifests.yaml");
  await writeFile(file, MANIFESTS);
});

after(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function run(args: string[]) {
  const io = captureIO({ env: {} });
  const code = await runCommandLine(args, io);
  return { code, out: io.out(), err: io.err() };
}

/** Each row's metric (or "guard"), its query as planned, and its error. */
function queries(out: string): [string, string, string | null][] {
  const rows = JSON.parse(out) as {
    hpa: string;
    metricName?: string;
    config?: Record<string, string>;
    replicaGuard?: { prometheusQuery: string };
    error?: string | null;
  }[];
  // (a Knative row is its ScaledObject's: its triggers' queries are checked when it is mapped)
  return rows.filter((r) => r.config || r.replicaGuard).map((r) => [
    `${r.hpa} ${r.metricName ?? "guard"}`,
    r.config?.query ?? r.replicaGuard?.prometheusQuery ?? "",
    r.error ?? null,
  ]);
}

const FLAG = "--prometheus-enforce-namespace-label=namespace";

describe("plan -f --prometheus-enforce-namespace-label", () => {
  it("shows every query scoped to its HPA's namespace, and the refused one as its error", async () => {
    const r = await run(["plan", "-f", file, FLAG, "--output", "json"]);
    assert.deepEqual([r.code, r.err], [0, ""]);
    assert.deepEqual(queries(r.out), [
      ["a/web prom", 'sum(rate(requests_total{namespace="a"}[1m])) by (pod)', null],
      ["a/web other", 'sum(requests_total{namespace="b"})', OTHER_ERROR],
      ["a/web guard", 'sum(rate(requests_total{namespace="a"}[5m]))', null],
    ]);
  });

  it("prints the refusal in the table and fails with --strict", async () => {
    const r = await run(["plan", "-f", file, FLAG, "--strict"]);
    assert.equal(r.code, 1);
    assert.ok(
      r.out.includes(
        `a/web  External  other   prometheus  1m0s      ${OTHER_ERROR}\n`,
      ),
      r.out,
    );
    assert.ok(
      r.out.includes(
        'replica guard of a/web: minReplicas from ceil(query / 1), query "sum(rate(requests_total{namespace=\\"a\\"}[5m]))"',
      ),
      r.out,
    );
  });

  it("scopes a Knative PodAutoscaler's triggers: a query of another namespace is the mapping's error", async () => {
    const other = MANIFESTS.replace(
      "sum(rate(requests[1m]))",
      'sum(rate(requests{namespace="other"}[1m]))',
    );
    const otherFile = join(dir, "other.yaml");
    await writeFile(otherFile, other);
    const rows = (r: { out: string }) =>
      (JSON.parse(r.out) as { source?: string; error?: string }[])
        .filter((row) => row.source?.startsWith("PodAutoscaler"))
        .map((row) => [row.source, row.error ?? null]);
    assert.deepEqual(rows(await run(["plan", "-f", file, FLAG, "--output", "json"])), [
      ["PodAutoscaler shop/rev-1", null],
    ]);
    const refused = rows(await run(["plan", "-f", otherFile, FLAG, "--output", "json"]));
    assert.equal(refused.length, 1);
    assert.match(
      String(refused[0][1]),
      /^invalid query "sum\(rate\(requests\{namespace="other"\}\[1m\]\)\)" of trigger "default-trigger-custom" \(annotation autoscaling\.knative\.dev\/prometheus-query\): .*namespace="other".*namespace="shop"/,
    );
    assert.deepEqual(rows(await run(["plan", "-f", otherFile, "--output", "json"])), [
      ["PodAutoscaler shop/rev-1", null],
    ]);
  });

  it("changes no query without the flag", async () => {
    const r = await run(["plan", "-f", file, "--output", "json"]);
    assert.deepEqual(queries(r.out), [
      ["a/web prom", "sum(rate(requests_total[1m])) by (pod)", null],
      ["a/web other", 'sum(requests_total{namespace="b"})', null],
      ["a/web guard", "sum(rate(requests_total[5m]))", null],
    ]);
  });

  it("refuses a label that cannot be matched on, in plan and at serve's start", async () => {
    for (const command of [["plan", "-f", file], ["serve", "--manifests", file]]) {
      const r = await run([...command, "--prometheus-enforce-namespace-label=__name__"]);
      assert.equal(r.code, 2, r.err);
      assert.match(
        r.err,
        /^error: invalid value "__name__" for --prometheus-enforce-namespace-label: /,
      );
    }
  });
});
