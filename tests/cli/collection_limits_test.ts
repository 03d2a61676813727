/**
 * Issue 25's limits on the command line: `plan -f` and `explain -f` with
 * --min-collection-interval and --max-metrics-per-namespace show what serve would refuse, in
 * the engine's order (the oldest HPA first); contradicting flags are usage errors.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { UsageError } from "../../src/cli/command.ts";
import { collectionLimitsFromFlags } from "../../src/cli/collection_limits.ts";
import { explainCommand } from "../../src/cli/explain.ts";
import { flagDefaults, parseArgs, SERVE_FLAGS } from "../../src/cli/flags.ts";
import { planCommand } from "../../src/cli/plan.ts";
import { captureIO } from "./capture_io.ts";

/** An HPA with External json-path metrics (name -> interval annotation, "" for none). */
function hpa(
  namespace: string,
  name: string,
  created: string,
  metrics: Record<string, string>,
): string {
  const annotations = Object.entries(metrics).flatMap(([m, interval]) => [
    `    metric-config.external.${m}.json-path/endpoint: "http://${m}.${namespace}:8080/m"`,
    `    metric-config.external.${m}.json-path/json-key: "$.n"`,
    ...(interval ? [`    metric-config.external.${m}.json-path/interval: "${interval}"`] : []),
  ]);
  const specs = Object.keys(metrics).flatMap((m) => [
    "    - type: External",
    "      external:",
    `        metric: {name: ${m}, selector: {matchLabels: {type: json-path}}}`,
    '        target: {type: Value, value: "1"}',
  ]);
  return [
    "apiVersion: autoscaling/v2",
    "kind: HorizontalPodAutoscaler",
    "metadata:",
    `  name: ${name}`,
    `  namespace: ${namespace}`,
    `  creationTimestamp: "${created}"`,
    "  annotations:",
    ...annotations,
    "spec:",
    `  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: ${name}}`,
    "  maxReplicas: 5",
    "  metrics:",
    ...specs,
    "",
  ].join("\n");
}

/**
 * Namespace a: `zz-old` (oldest, 2 metrics, one at 100ms), `web` (2 metrics), `api` (newest,
 * 1); namespace b: one HPA. In file order api, web, zz-old, b.
 */
const MANIFESTS = [
  hpa("a", "api", "2024-03-01T00:00:00Z", { calls: "" }),
  hpa("a", "web", "2024-02-01T00:00:00Z", { rps: "15s", queue: "" }),
  hpa("a", "zz-old", "2024-01-01T00:00:00Z", { fast: "100ms", slow: "1m" }),
  hpa("b", "lone", "2024-05-01T00:00:00Z", { rps: "" }),
].join("---\n");

let dir = "";
let file = "";

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "collection-limits-test-"));
  file = join(dir, "hpas.yaml");
  await writeFile(file, MANIFESTS);
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const FAST =
  "interval 100ms of External metric `fast` of HPA a/zz-old (annotation metric-config.external.fast.json-path/interval) is below --min-collection-interval 1s";

function over(hpaName: string, metric: string): string {
  return `namespace a has more metrics than --max-metrics-per-namespace 2: External metric \`${metric}\` of HPA a/${hpaName} is not collected (the oldest HPAs' metrics are collected first)`;
}

describe("plan -f with --min-collection-interval and --max-metrics-per-namespace", () => {
  it("refuses the short interval and the metrics past the limit, oldest HPA first, in JSON", async () => {
    const io = captureIO();
    const code = await planCommand.run([
      "-f",
      file,
      "-o",
      "json",
      "--min-collection-interval",
      "1s",
      "--max-metrics-per-namespace",
      "2",
    ], io);
    assert.equal(code, 0);
    const rows = JSON.parse(io.out()) as { hpa: string; metricName: string; error: string }[];
    // zz-old/fast is refused by its interval, so it takes no place: zz-old/slow and web/rps run
    assert.deepEqual(rows.map((r) => [r.hpa, r.metricName, r.error]), [
      ["a/api", "calls", over("api", "calls")],
      ["a/web", "rps", null],
      ["a/web", "queue", over("web", "queue")],
      ["a/zz-old", "fast", FAST],
      ["a/zz-old", "slow", null],
      ["b/lone", "rps", null],
    ]);
    assert.equal(io.err(), "");
  });

  it("counts the refusals as errors in the table and fails --strict", async () => {
    const io = captureIO();
    const code = await planCommand.run([
      "-f",
      file,
      "--max-metrics-per-namespace=2",
      "--min-collection-interval=1s",
      "--strict",
    ], io);
    assert.equal(code, 1);
    const lines = io.out().split("\n");
    assert.equal(
      lines.find((l) => l.startsWith("a/api")),
      `a/api     External  calls   json-path  1m0s      ${over("api", "calls")}`,
    );
    assert.equal(
      lines.find((l) => l.startsWith("a/zz-old  External  fast")),
      `a/zz-old  External  fast    json-path  100ms     ${FAST}`,
    );
    assert.match(
      io.out(),
      /\n6 metrics in 4 HPAs: 3 errors, 0 warnings \(all collectors assumed enabled\)\n$/,
    );
  });

  it("refuses nothing with the defaults but an interval below 1s", async () => {
    const io = captureIO();
    assert.equal(await planCommand.run(["-f", file, "-o", "json"], io), 0);
    const rows = JSON.parse(io.out()) as { metricName: string; error: string | null }[];
    assert.deepEqual(rows.filter((r) => r.error !== null).map((r) => [r.metricName, r.error]), [
      ["fast", FAST],
    ]);
  });

  it("takes --min-collection-interval 0 as no bound", async () => {
    const io = captureIO();
    assert.equal(
      await planCommand.run(["-f", file, "-o", "json", "--min-collection-interval", "0"], io),
      0,
    );
    const rows = JSON.parse(io.out()) as { error: string | null }[];
    assert.deepEqual(rows.map((r) => r.error), [null, null, null, null, null, null]);
  });
});

describe("explain -f with --max-metrics-per-namespace", () => {
  it("counts the namespace's other HPAs in the manifests and names the refused metric", async () => {
    const io = captureIO();
    const code = await explainCommand.run(
      ["a/web", "-f", file, "--max-metrics-per-namespace", "2"],
      io,
    );
    assert.equal(code, 1);
    assert.ok(
      io.out().includes(
        "metric 1 of 2: External rps\n  collector:    json-path, every 15s\n  plan:         OK\n",
      ),
      io.out(),
    );
    assert.ok(
      io.out().includes(
        `metric 2 of 2: External queue\n  collector:    json-path, every 1m0s\n  plan:         error: ${
          over("web", "queue")
        }\n`,
      ),
      io.out(),
    );
    assert.equal(
      io.err(),
      `error: HPA a/web metric External/queue: ${over("web", "queue")}\n`,
    );
  });

  it("explains the oldest HPA as collected", async () => {
    const io = captureIO();
    const code = await explainCommand.run(
      ["a/zz-old", "-f", file, "--max-metrics-per-namespace", "2", "--min-collection-interval=0"],
      io,
    );
    assert.equal(code, 0);
    assert.equal(io.err(), "");
    assert.match(io.out(), /every metric planned \(2\)/);
  });
});

describe("collectionLimitsFromFlags", () => {
  function limits(args: string[]) {
    return collectionLimitsFromFlags(parseArgs(args, SERVE_FLAGS).values);
  }

  it("defaults to a 1s minimum and no namespace limit", () => {
    assert.deepEqual(collectionLimitsFromFlags(flagDefaults(SERVE_FLAGS)), {
      minIntervalSeconds: 1,
      maxMetricsPerNamespace: 0,
    });
    assert.deepEqual(
      limits(["--min-collection-interval", "30s", "--max-metrics-per-namespace", "500"]),
      { minIntervalSeconds: 30, maxMetricsPerNamespace: 500 },
    );
  });

  it("refuses contradicting or negative values as usage errors", () => {
    const cases: [string[], string][] = [
      [
        ["--default-collection-interval", "500ms"],
        "--default-collection-interval 500ms is below --min-collection-interval 1s: raise the first or lower the second",
      ],
      [
        ["--default-collection-interval", "30s", "--min-collection-interval", "1m"],
        "--default-collection-interval 30s is below --min-collection-interval 1m0s: raise the first or lower the second",
      ],
      [
        ["--max-metrics-per-namespace", "-1"],
        'invalid value "-1" for --max-metrics-per-namespace: want 0 (no limit) or more',
      ],
      [
        ["--min-collection-interval", "-1s"],
        'invalid value "-1s" for --min-collection-interval: want 0 or more',
      ],
    ];
    for (const [args, message] of cases) {
      assert.throws(() => limits(args), (e: unknown) => {
        assert.ok(e instanceof UsageError, String(e));
        assert.equal(e.message, message);
        return true;
      });
    }
  });

  it("makes plan fail as a usage error on them", async () => {
    await assert.rejects(
      planCommand.run(["-f", file, "--default-collection-interval", "100ms"], captureIO()),
      (e: unknown) =>
        e instanceof UsageError &&
        e.message ===
          "--default-collection-interval 100ms is below --min-collection-interval 1s: raise the first or lower the second",
    );
  });
});
