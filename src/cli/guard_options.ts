/**
 * The replica guard's flags (and estafette-k8s-hpa-scaler's environment variables) as the typed
 * options of `ReplicaGuard`: the lower bound (`--estafette-minimum-replicas-lower-bound`, else
 * `MINIMUM_REPLICAS_LOWER_BOUND`, else 3), the Prometheus of HPAs without their own
 * (`--estafette-prometheus-server-url`, else `PROMETHEUS_SERVER_URL`, else `--prometheus-server`
 * with its token file), the interval, the concurrency, and the query limits shared with the
 * Prometheus collector.
 */
import type { ReplicaGuardOptions } from "../controllers/replica_guard.ts";
import { LOWER_BOUND_ENV, parseLowerBound } from "../core/estafette/guard.ts";
import { boolFlag, type FlagValues, stringFlag } from "./flags.ts";
import { PROMETHEUS_URL_ENV } from "./endpoint_options.ts";

export { PROMETHEUS_URL_ENV };

/** The options from flags and environment, and what was not used as given (to log). */
export interface GuardSettings {
  options: Pick<
    ReplicaGuardOptions,
    | "lowerBound"
    | "prometheus"
    | "intervalSeconds"
    | "maxConcurrentQueries"
    | "queryTimeoutSeconds"
    | "maxResponseBytes"
    | "allowLinkLocalTargets"
  >;
  warnings: string[];
}

/**
 * Read the replica guard's settings.
 *
 * @example
 * ```ts
 * guardSettings({ "prometheus-server": "http://prometheus:9090" }, { MINIMUM_REPLICAS_LOWER_BOUND: "2" })
 *   .options.lowerBound; // 2
 * ```
 */
export function guardSettings(
  flags: FlagValues,
  env: Record<string, string | undefined>,
): GuardSettings {
  const warnings: string[] = [];
  const flagBound = flags["estafette-minimum-replicas-lower-bound"];
  let lowerBound: number;
  if (typeof flagBound === "number") lowerBound = flagBound;
  else {
    const parsed = parseLowerBound(env[LOWER_BOUND_ENV]);
    if (parsed.warning) warnings.push(parsed.warning);
    lowerBound = parsed.lowerBound;
  }
  const own = stringFlag(flags, "estafette-prometheus-server-url") ?? env[PROMETHEUS_URL_ENV];
  let prometheus: GuardSettings["options"]["prometheus"] = null;
  if (own) prometheus = { url: own, tokenFile: null };
  else {
    const url = stringFlag(flags, "prometheus-server");
    if (url) prometheus = { url, tokenFile: stringFlag(flags, "prometheus-server-token-file") };
  }
  const positive = (name: string): number | undefined => {
    const v = flags[name];
    return typeof v === "number" && Number.isFinite(v) && v > 0 ? v : undefined;
  };
  return {
    options: {
      lowerBound,
      prometheus,
      intervalSeconds: positive("estafette-hpa-scaler-interval"),
      maxConcurrentQueries: positive("estafette-max-concurrent-queries"),
      queryTimeoutSeconds: positive("prometheus-query-timeout"),
      maxResponseBytes: positive("max-response-bytes"),
      allowLinkLocalTargets: boolFlag(flags, "allow-link-local-targets"),
    },
    warnings,
  };
}
