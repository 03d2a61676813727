/**
 * `plan -f` and `explain -f` on the legacy `query-name` form (the query sent shown as
 * config.query beside the keys naming it) and on autoscaling/v1 and v2beta2 HPAs (converted to
 * autoscaling/v2 as kube-apiserver converts them, then planned).
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { planCommand } from "../../src/cli/plan.ts";
import { runCommandLine } from "../../src/cli/commands.ts";
import { captureIO } from "./capture_io.ts";

// estafette's README example with a metric kept where autoscaling/v1 keeps it
const V1 = `apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata:
  name: myapp
  namespace: mynamespace
  annotations:
    metric-config.external.prometheus-query.prometheus/rps: sum(rate(nginx_http_requests_total{app="myapp"}[5m]))
    metric-config.external.flux-query.influxdb/range2m: 'from(bucket: "b") |> range(start: -2m)'
    metric-config.external.flux-query.influxdb/org: acme
    autoscaling.alpha.kubernetes.io/metrics: '[{"type":"External","external":{"metricName":"prometheus-query","metricSelector":{"matchLabels":{"query-name":"rps"}},"targetAverageValue":"10"}},{"type":"External","external":{"metricName":"flux-query","metricSelector":{"matchLabels":{"query-name":"range2m"}},"targetValue":"3"}}]'
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: myapp}
  minReplicas: 3
  maxReplicas: 100
  targetCPUUtilizationPercentage: 80
`;

const V2BETA2_BAD = `apiVersion: autoscaling/v2beta2
kind: HorizontalPodAutoscaler
metadata:
  name: api
  namespace: mynamespace
  annotations:
    autoscaling.alpha.kubernetes.io/scale-up-tolerance: lots
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: api}
  maxReplicas: 3
`;

const PROM = 'sum(rate(nginx_http_requests_total{app="myapp"}[5m]))';
const FLUX = 'from(bucket: "b") |> range(start: -2m)';
const FLAGS = [
  "--prometheus-server",
  "http://prom:9090",
  "--influxdb-address",
  "http://influx:8086",
];

let dir = "";
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "plan-query-name-"));
  await writeFile(join(dir, "v1.yaml"), V1);
  await writeFile(join(dir, "v2beta2.yaml"), V2BETA2_BAD);
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("plan -f of autoscaling/v1 with query-name metrics", () => {
  it("plans the converted HPA and shows the query sent as config.query (JSON)", async () => {
    const io = captureIO();
    assert.equal(
      await planCommand.run(["-f", join(dir, "v1.yaml"), "-o", "json", ...FLAGS], io),
      0,
    );
    const rows = JSON.parse(io.out()) as { metricName: string; config: unknown; error: unknown }[];
    assert.deepEqual(rows.map((r) => [r.metricName, r.config, r.error]), [
      ["prometheus-query", { query: PROM, "query-name": "rps", rps: PROM }, null],
      ["flux-query", { org: "acme", query: FLUX, "query-name": "range2m", range2m: FLUX }, null],
    ]);
    assert.equal(io.err(), "");
  });

  it("shows the query under its metric in the table", async () => {
    const io = captureIO();
    assert.equal(await planCommand.run(["-f", join(dir, "v1.yaml"), ...FLAGS], io), 0);
    const lines = io.out().split("\n");
    const prom = lines.findIndex((l) => l.includes("prometheus-query"));
    assert.equal(lines[prom + 1], `    query (rps, named by query-name): ${PROM}`);
    const flux = lines.findIndex((l) => l.includes("flux-query  "));
    assert.equal(lines[flux + 1], `    query (range2m, named by query-name): ${FLUX}`);
  });

  it("explain -f shows the query the collector sends", async () => {
    const io = captureIO();
    const code = await runCommandLine(
      ["explain", "mynamespace/myapp", "-f", join(dir, "v1.yaml"), ...FLAGS],
      io,
    );
    assert.equal(code, 0, io.err());
    const out = io.out();
    assert.match(out, /scale target: Deployment myapp, replicas 3\.\.100/);
    assert.ok(out.includes(`collects:     the Prometheus query ${JSON.stringify(PROM)}`), out);
    assert.ok(out.includes(`collects:     the Flux query ${JSON.stringify(FLUX)}`), out);
    assert.ok(out.includes(`config:       query=${PROM}, rps=${PROM}`), out);
  });

  it("names a v2beta2 HPA whose tolerance annotation the API server would refuse", async () => {
    const io = captureIO();
    // an invalid HPA, as any other: exit 1
    assert.equal(await planCommand.run(["-f", join(dir, "v2beta2.yaml"), "-o", "json"], io), 1);
    assert.match(
      io.err(),
      /mynamespace\/api: autoscaling\/v2beta2: failed to parse annotation "autoscaling\.alpha\.kubernetes\.io\/scale-up-tolerance"/,
    );
  });
});
