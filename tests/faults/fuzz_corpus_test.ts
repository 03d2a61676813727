/**
 * 300 HPAs fuzzed from a fixed seed, each with one good External metric and one to three whose
 * config is drawn from hostile values (overflowing durations, link-local endpoints in many
 * spellings, JSONPath and expression syntax errors, kilobyte-long values, random text). `plan
 * --strict` and `serve` read the same corpus with the same flags:
 *
 * - serve starts, stays ready and serves every good metric with its value;
 * - every metric serve refuses to collect (its "metric cannot be collected" log line) is an
 *   error in plan with the same message, and every plan error is refused by serve;
 * - each refused metric's 404 carries that message.
 *
 * Every endpoint is on 127.0.0.1 or a link-local literal that the adapter refuses before
 * connecting (the plan errors prove it); no host name is ever resolved.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { rm } from "node:fs/promises";
import { planCommand } from "../../src/cli/plan.ts";
import { captureIO } from "../cli/capture_io.ts";
import { prng } from "../support/prng.ts";
import {
  type AdapterProcess,
  externalHpa,
  type ExternalMetricSpec,
  getExternalMetric,
  isReady,
  makeTempDir,
  startAdapterProcess,
  waitFor,
  writeManifests,
} from "./support.ts";

const SEED = 20261124;
const HPAS = 300;
const NAMESPACE = "fuzz";

const LINK_LOCAL = [
  "http://169.254.169.254/latest/meta-data",
  "http://2852039166/",
  "http://0xa9fea9fe/",
  "http://0251.0376.0251.0376/",
  "http://169.254.169.254./",
  "http://[::ffff:169.254.169.254]/",
  "http://[64:ff9b::a9fe:a9fe]/",
  "http://[fe80::1]/",
];

const DURATIONS = [
  `1${"0".repeat(400)}s`,
  `${"9".repeat(10_000)}s`,
  "2562048h",
  "100000000h",
  "2562047h47m16.854775808s",
  "-5s",
  "-256ms",
  "0",
  "1e3s",
  ".s",
  "Infinity",
  "NaN",
  "5x",
  "",
  "  ",
  "90s",
  "1h",
];

const JSON_KEYS = [
  "$[",
  "{}",
  "$.constructor.constructor",
  "$.__proto__",
  "$..*",
  `$.${"a".repeat(5_000)}`,
  "$[?(@.v > 1)]",
  "$['v']",
  "$.v",
  "$.missing",
];

const JSON_EVALS = [
  "process.exit(3)",
  "require('fs')",
  "v * 2",
  "this",
  "(".repeat(1_000),
  "$.v + 1",
  "constructor",
];

/** Hostile text: quotes, newlines, unicode, control characters. */
function randomText(r: () => number): string {
  const alphabet = [
    '"',
    "'",
    "\\",
    "\n",
    "$",
    ".",
    "[",
    "]",
    "(",
    ")",
    "{",
    "}",
    " ",
    "a",
    "1",
    "é",
    "😀",
    "\u0000",
    "/",
    ":",
    "-",
    "h",
    "s",
  ];
  const n = Math.floor(r() * 40);
  let s = "";
  for (let i = 0; i < n; i++) s += alphabet[Math.floor(r() * alphabet.length)];
  return s;
}

function pick<T>(r: () => number, list: readonly T[]): T {
  return list[Math.floor(r() * list.length)];
}

/** One fuzzed metric: a valid base config with one to three keys replaced by hostile values. */
function fuzzedMetric(r: () => number, name: string, port: number): ExternalMetricSpec {
  const prometheus = r() < 0.3;
  const collector = prometheus ? "prometheus" : "json-path";
  const config: Record<string, string> = prometheus
    ? { query: "up" }
    : { endpoint: `http://127.0.0.1:${port}/fuzz/${name}`, "json-key": "$.v" };
  const keys = prometheus
    ? ["query", "prometheus-server", "prometheus-server-alias", "interval", "per-replica"]
    : [
      "endpoint",
      "json-key",
      "json-eval",
      "aggregator",
      "interval",
      "request-timeout",
      "connect-timeout",
      "per-replica",
    ];
  const mutations = 1 + Math.floor(r() * 3);
  for (let i = 0; i < mutations; i++) {
    const key = pick(r, keys);
    let value: string;
    switch (key) {
      case "endpoint":
        value = pick(r, [
          ...LINK_LOCAL,
          "file:///etc/passwd",
          "http://[::1",
          "ftp://127.0.0.1/",
          `http://127.0.0.1:${port}/fuzz/${"p".repeat(3_000)}`,
          "not a url",
        ]);
        break;
      case "prometheus-server":
        value = pick(r, [
          ...LINK_LOCAL,
          "file:///etc/passwd",
          "not a url",
          `http://127.0.0.1:${port}`,
        ]);
        break;
      case "json-key":
        value = r() < 0.3 ? randomText(r) : pick(r, JSON_KEYS);
        break;
      case "json-eval":
        delete config["json-key"];
        value = r() < 0.3 ? randomText(r) : pick(r, JSON_EVALS);
        break;
      case "interval":
      case "request-timeout":
      case "connect-timeout":
        value = r() < 0.2 ? randomText(r) : pick(r, DURATIONS);
        break;
      case "aggregator":
        value = pick(r, ["median", "avg", "max", "", "sum", randomText(r)]);
        break;
      case "per-replica":
        value = pick(r, ["yes", "true", "false", ""]);
        break;
      case "query":
        value = pick(r, ["", "sum(", `sum(${"x".repeat(10_000)})`, randomText(r)]);
        break;
      default:
        value = randomText(r);
    }
    config[key] = value;
  }
  return { name, matchLabels: { type: collector }, collector, config };
}

/** The corpus: HPA `h<i>` has `good-<i>` (value i + 1 from the good server) and fuzzed ones. */
function corpus(port: number): Record<string, unknown>[] {
  const r = prng(SEED);
  const out: Record<string, unknown>[] = [];
  for (let i = 0; i < HPAS; i++) {
    const metrics: ExternalMetricSpec[] = [{
      name: `good-${i}`,
      matchLabels: { type: "json-path" },
      collector: "json-path",
      config: { endpoint: `http://127.0.0.1:${port}/good/${i}`, "json-key": "$.v" },
    }];
    const fuzzed = 1 + Math.floor(r() * 3);
    for (let j = 0; j < fuzzed; j++) metrics.push(fuzzedMetric(r, `f${i}-${j}`, port));
    // the good metric is not always first
    if (r() < 0.5) metrics.reverse();
    out.push(externalHpa({ namespace: NAMESPACE, name: `h${i}`, metrics }));
  }
  return out;
}

interface PlanRowLite {
  hpa: string;
  metricName: string;
  error: string | null;
}

describe("a fuzzed HPA corpus", () => {
  let server: Server;
  let port = 0;
  let dir = "";
  let adapter: AdapterProcess | null = null;
  let rows: PlanRowLite[] = [];
  let planExit = -1;

  before(async () => {
    server = createServer((req, res) => {
      const m = /^\/good\/(\d+)$/.exec(req.url ?? "");
      res.setHeader("content-type", "application/json");
      if (req.url === "/api/v1/query" || req.url?.startsWith("/api/v1/query?")) {
        res.end('{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}');
      } else if (m) res.end(JSON.stringify({ v: Number(m[1]) + 1 }));
      else res.end('{"v": 5}');
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
    dir = await makeTempDir("fuzz-corpus-");
    await writeManifests(join(dir, "hpas"), corpus(port));
    const flags = [`--prometheus-server=http://127.0.0.1:${port}`];
    const io = captureIO();
    planExit = await planCommand.run(
      ["-f", join(dir, "hpas"), "-o", "json", "--strict", ...flags],
      io,
    );
    rows = JSON.parse(io.out());
    adapter = await startAdapterProcess({
      manifests: join(dir, "hpas"),
      certDir: dir,
      flags: [...flags, "--log-format", "json", "--collection-timeout", "5s"],
      readyTimeoutMs: 120_000,
    });
  });

  after(async () => {
    await adapter?.stop();
    await new Promise<void>((resolve) => {
      server.closeAllConnections?.();
      server.close(() => resolve());
    });
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("is planned metric by metric: every good metric OK, plan --strict exits 1 on the rest", () => {
    assert.equal(planExit, 1);
    const good = rows.filter((r) => r.metricName.startsWith("good-"));
    assert.equal(good.length, HPAS);
    assert.deepEqual(good.filter((r) => r.error !== null), []);
    const bad = rows.filter((r) => r.error !== null);
    // the corpus really is hostile: a good part of the fuzzed metrics are refused
    assert.ok(bad.length > 150, `only ${bad.length} plan errors`);
  });

  it("serves every good metric with its value while the adapter stays up", async () => {
    const a = adapter!;
    const missing = await waitFor("every good metric", async () => {
      const wrong: string[] = [];
      for (let i = 0; i < HPAS; i++) {
        const r = await getExternalMetric(a, NAMESPACE, `good-${i}`);
        const value = r.status === 200 ? r.body.items?.[0]?.value : undefined;
        if (value !== String(i + 1)) {
          wrong.push(`good-${i}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
        }
      }
      return wrong.length === 0 ? wrong : null;
    }, { timeoutMs: 120_000, intervalMs: 1_000 });
    assert.deepEqual(missing, []);
    assert.equal(a.alive(), true);
    assert.equal(await isReady(a), true);
  });

  it("refuses in serve exactly the metrics plan refuses, with the same message, and says so in their 404", async () => {
    const a = adapter!;
    const refused = new Map<string, string>();
    for (const line of a.logs().split("\n")) {
      if (!line.startsWith("{")) continue;
      const entry = JSON.parse(line) as { msg: string; plan?: string; error?: string };
      if (entry.msg !== "metric cannot be collected") continue;
      // plan key: namespace/name/index/Type/metric
      const [ns, name, , , metric] = entry.plan!.split("/");
      refused.set(`${ns}/${name} ${metric}`, entry.error!);
    }
    const planned = new Map<string, string>();
    for (const r of rows) if (r.error !== null) planned.set(`${r.hpa} ${r.metricName}`, r.error);
    assert.deepEqual(
      [...refused].sort((x, y) => x[0].localeCompare(y[0])),
      [...planned].sort((x, y) => x[0].localeCompare(y[0])),
    );
    for (const [key, error] of planned) {
      const metric = key.split(" ")[1];
      const r = await getExternalMetric(a, NAMESPACE, metric);
      assert.equal(r.status, 404, key);
      assert.ok(
        String(r.body.message).includes(error),
        `${key}: ${String(r.body.message).slice(0, 500)} lacks ${error.slice(0, 300)}`,
      );
    }
  });
});
