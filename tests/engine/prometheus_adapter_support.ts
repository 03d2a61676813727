/** What the prometheus-adapter engine tests start a serving with (against a real Prometheus). */
import { readFile } from "node:fs/promises";
import { PrometheusClient } from "../../src/collectors/prometheus_client.ts";
import type { PrometheusAdapterOptions } from "../../src/engine/prometheus_adapter.ts";
import type { Logger } from "../../src/engine/logger.ts";
import { type RealPrometheus, startPrometheus } from "../fakes/prometheus_server.ts";
import { startServer, type TestServer } from "../collectors/servers.ts";

/**
 * The options of a serving of the config file at `path` on the Prometheus at `url`, its
 * requests through `fetch`: relist, poll and collection slow enough that a test drives them.
 */
export function servingOptions(
  path: string,
  io: { url: string; fetch: typeof fetch; logger: Logger },
): PrometheusAdapterOptions {
  return {
    configPath: path,
    readConfig: () => readFile(path, "utf8"),
    client: new PrometheusClient({ url: io.url }),
    fetch: io.fetch,
    relistIntervalSeconds: 600,
    maxAgeSeconds: 600,
    configPollSeconds: 600,
    collectionIntervalSeconds: 60,
    ttlSeconds: 900,
    maxQueryLength: 8192,
    queryTimeoutSeconds: 10,
    maxBytes: 1 << 20,
    now: () => Date.now(),
    logger: io.logger,
  };
}

/** A real Prometheus scraping one exporter on loopback. */
export interface ScrapedExporter {
  prom: RealPrometheus;
  exporter: TestServer;
  /** Stops Prometheus, then the exporter. */
  stop(): Promise<void>;
}

/**
 * An exporter that serves `exposition()` (Prometheus' text format, read at each scrape) and a
 * real Prometheus that scrapes it, once `readyQuery` has data.
 */
export async function scrapedExporter(
  exposition: () => string,
  readyQuery: string,
): Promise<ScrapedExporter> {
  const exporter = await startServer("127.0.0.1", 0, (_req, res) => {
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
    res.end(exposition());
  });
  let prom: RealPrometheus;
  try {
    prom = await startPrometheus({ targets: [`127.0.0.1:${exporter.port}`], readyQuery });
  } catch (e) {
    await exporter.close();
    throw e;
  }
  return {
    prom,
    exporter,
    stop: async () => {
      await prom.stop();
      await exporter.close();
    },
  };
}
