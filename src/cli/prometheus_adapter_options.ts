/**
 * `--prometheus-adapter-config` and its flags as the options of the prometheus-adapter serving
 * (src/engine/prometheus_adapter.ts): checked at start (a missing `--prometheus-server`, a max
 * age below the relist interval, a bad file are errors naming the flag or the rule and field).
 */
import { readFile } from "node:fs/promises";
import { prometheusBackends } from "../collectors/prometheus.ts";
import type { Logger } from "../engine/logger.ts";
import {
  PROMETHEUS_ADAPTER_DEFAULTS,
  type PrometheusAdapterOptions,
  PrometheusAdapterServing,
} from "../engine/prometheus_adapter.ts";
import { UsageError } from "./command.ts";
import type { KindInfo } from "../core/prometheus_adapter/naming.ts";
import { type FlagValues, numberFlag, optionalNumberFlag, stringFlag } from "./flags.ts";
import { prometheusOptionsFromFlags } from "./prometheus_options.ts";

/** What the caller hands in: the clock, the timers, the log and the collectors' fetch. */
export interface PrometheusAdapterRuntime {
  fetch: typeof fetch;
  now: () => number;
  logger: Logger;
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (handle: unknown) => void;
  /** Seconds between checks of the file (default 10). */
  configPollSeconds?: number;
  /** The cluster's kinds from its discovery (the rules' resources); built-in ones without. */
  discoverKinds?: () => Promise<readonly KindInfo[]>;
  /** kube-apiserver's list of a resource's objects (`*` reads of other resources than pods). */
  listNames?: PrometheusAdapterOptions["listNames"];
}

/**
 * The serving options of the flags, or null without `--prometheus-adapter-config`. Throws a
 * `UsageError` on flags that contradict each other.
 */
export function prometheusAdapterOptionsFromFlags(
  flags: FlagValues,
  runtime: PrometheusAdapterRuntime,
): PrometheusAdapterOptions | null {
  const path = stringFlag(flags, "prometheus-adapter-config");
  if (path === null) return null;
  const prometheus = prometheusOptionsFromFlags(flags);
  const backends = prometheusBackends(prometheus);
  if (backends.default === null) {
    throw new UsageError("--prometheus-adapter-config needs --prometheus-server");
  }
  const relist = numberFlag(flags, "metrics-relist-interval");
  if (!(relist > 0)) {
    throw new UsageError(`invalid --metrics-relist-interval: want more than 0s`);
  }
  const maxAge = optionalNumberFlag(flags, "metrics-max-age") ?? relist;
  if (maxAge < relist) {
    // as prometheus-adapter: "max age must not be less than relist interval"
    throw new UsageError("--metrics-max-age must not be less than --metrics-relist-interval");
  }
  const maxQueryLength = optionalNumberFlag(flags, "prometheus-adapter-max-query-length") ??
    PROMETHEUS_ADAPTER_DEFAULTS.maxQueryLength;
  return {
    configPath: path,
    readConfig: () => readFile(path, "utf8"),
    client: backends.default,
    fetch: runtime.fetch,
    relistIntervalSeconds: relist,
    maxAgeSeconds: maxAge,
    configPollSeconds: runtime.configPollSeconds ?? PROMETHEUS_ADAPTER_DEFAULTS.configPollSeconds,
    collectionIntervalSeconds: numberFlag(flags, "default-collection-interval"),
    ttlSeconds: numberFlag(flags, "metrics-ttl"),
    maxQueryLength: Math.max(0, maxQueryLength),
    queryTimeoutSeconds: backends.timeoutSeconds,
    maxBytes: backends.maxBytes,
    now: runtime.now,
    logger: runtime.logger,
    ...(runtime.discoverKinds ? { discoverKinds: runtime.discoverKinds } : {}),
    ...(runtime.listNames ? { listNames: runtime.listNames } : {}),
    ...(runtime.setTimer ? { setTimer: runtime.setTimer } : {}),
    ...(runtime.clearTimer ? { clearTimer: runtime.clearTimer } : {}),
  };
}

/** Start serving the config file of the flags, or null without `--prometheus-adapter-config`. */
export async function startPrometheusAdapterFromFlags(
  flags: FlagValues,
  runtime: PrometheusAdapterRuntime,
): Promise<PrometheusAdapterServing | null> {
  const options = prometheusAdapterOptionsFromFlags(flags, runtime);
  return options === null ? null : await PrometheusAdapterServing.start(options);
}
