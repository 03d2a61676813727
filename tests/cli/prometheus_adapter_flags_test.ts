/**
 * `--prometheus-adapter-config` and its flags: prometheus-adapter's defaults (relist 10m, max
 * age = relist), the checks at start (a Prometheus server is needed, max age not below the
 * relist interval), and `serve` exiting non-zero with the rule and field of a bad file.
 */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCommandLine } from "../../src/cli/commands.ts";
import { parseArgs, SERVE_FLAGS } from "../../src/cli/flags.ts";
import { prometheusAdapterOptionsFromFlags } from "../../src/cli/prometheus_adapter_options.ts";
import { memoryLogger } from "../../src/engine/logger.ts";
import { captureIO } from "./capture_io.ts";

const runtime = { fetch, now: () => 0, logger: memoryLogger() };
const dirs: string[] = [];

after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

function options(args: string[]) {
  return prometheusAdapterOptionsFromFlags(parseArgs(args, SERVE_FLAGS).values, runtime);
}

describe("prometheus-adapter flags", () => {
  it("is off without --prometheus-adapter-config", () => {
    assert.equal(options(["--prometheus-server", "http://127.0.0.1:9090"]), null);
  });

  it("defaults the relist interval to 10m and the max age to the relist interval", () => {
    const o = options([
      "--prometheus-server",
      "http://127.0.0.1:9090",
      "--prometheus-adapter-config",
      "/etc/adapter/config.yaml",
    ])!;
    assert.deepEqual(
      [o.configPath, o.relistIntervalSeconds, o.maxAgeSeconds, o.maxQueryLength, o.client.url],
      ["/etc/adapter/config.yaml", 600, 600, 8192, "http://127.0.0.1:9090"],
    );
    const set = options([
      "--prometheus-server=http://127.0.0.1:9090",
      "--prometheus-adapter-config=c.yaml",
      "--metrics-relist-interval=1m",
      "--metrics-max-age=5m",
      "--prometheus-adapter-max-query-length=100",
    ])!;
    assert.deepEqual([set.relistIntervalSeconds, set.maxAgeSeconds, set.maxQueryLength], [
      60,
      300,
      100,
    ]);
  });

  it("refuses a config without --prometheus-server, and a max age below the relist interval", () => {
    assert.throws(
      () => options(["--prometheus-adapter-config", "c.yaml"]),
      /^UsageError: --prometheus-adapter-config needs --prometheus-server$/,
    );
    assert.throws(
      () =>
        options([
          "--prometheus-server=http://127.0.0.1:9090",
          "--prometheus-adapter-config=c.yaml",
          "--metrics-max-age=1m",
        ]),
      /--metrics-max-age must not be less than --metrics-relist-interval/,
    );
  });

  it("makes serve exit 1 naming the rule and field of a bad config", async () => {
    const dir = await mkdtemp(join(tmpdir(), "padapter-flags-"));
    dirs.push(dir);
    const config = join(dir, "config.yaml");
    await writeFile(
      config,
      [
        "rules:",
        "- {seriesQuery: a, metricsQuery: x}",
        "- {seriesQuery: b, metricsQuery: y}",
        "- {seriesQuery: c, metricsQuery: 'sum(<<.Series)'}",
        "",
      ].join("\n"),
    );
    const manifests = join(dir, "manifests");
    await writeFile(manifests + ".yaml", "");
    const io = captureIO();
    const code = await runCommandLine([
      "serve",
      "--manifests",
      manifests + ".yaml",
      "--bind-address",
      "127.0.0.1",
      "--secure-port",
      "0",
      "--metrics-address",
      "",
      "--cert-dir",
      join(dir, "certs"),
      // nothing listens there: the file is refused before Prometheus is asked anything
      "--prometheus-server",
      "http://127.0.0.1:9",
      "--prometheus-adapter-config",
      config,
    ], io);
    assert.equal(code, 1);
    assert.match(
      io.err(),
      /^error: invalid prometheus-adapter config ".*config\.yaml": rules\[2\]\.metricsQuery: invalid template "sum\(<<\.Series\)": .+\n$/m,
    );
  });
});
