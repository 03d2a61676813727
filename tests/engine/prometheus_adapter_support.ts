/** What the prometheus-adapter engine tests start a serving with (against a real Prometheus). */
import { readFile } from "node:fs/promises";
import { PrometheusClient } from "../../src/collectors/prometheus_client.ts";
import type { PrometheusAdapterOptions } from "../../src/engine/prometheus_adapter.ts";
import type { Logger } from "../../src/engine/logger.ts";

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
