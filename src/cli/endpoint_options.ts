/**
 * The endpoint policy of issue 25 from the flags: `--allowed-metric-endpoints`,
 * `--endpoints-in-own-namespace`, `--cluster-domain`, and the servers the operator gave by
 * flags, which stay allowed once a rule is on. One policy serves the planner (json-path
 * `endpoint`, `prometheus-server`, InfluxDB `address`) and the replica guard (its server URL
 * annotation), so `plan`, `explain -f` and `serve` refuse the same URLs.
 */
import { UsageError } from "./command.ts";
import {
  createEndpointPolicy,
  EndpointPatternError,
  type EndpointPolicy,
} from "../core/endpoint_policy.ts";
import { boolFlag, type FlagValues, listFlag, stringFlag } from "./flags.ts";

/** The env variable estafette reads for its Prometheus URL (the replica guard's default). */
export const PROMETHEUS_URL_ENV = "PROMETHEUS_SERVER_URL";

/**
 * The URLs of the servers given by flags: `--prometheus-server`, each
 * `--additional-prometheus-server`'s URL, `--influxdb-address`, the guard's
 * `--estafette-prometheus-server-url` (or `PROMETHEUS_SERVER_URL`), and with
 * `--knative-autoscaler` the `--knative-prometheus-address`.
 */
export function flagServerUrls(
  flags: FlagValues,
  env: Record<string, string | undefined>,
): string[] {
  const urls: string[] = [];
  const add = (url: string | null | undefined): void => {
    if (url) urls.push(url);
  };
  add(stringFlag(flags, "prometheus-server"));
  for (const entry of listFlag(flags, "additional-prometheus-server")) {
    // (a malformed entry is the Prometheus options' error)
    const eq = entry.indexOf("=");
    if (eq > 0) add(entry.slice(eq + 1).trim());
  }
  add(stringFlag(flags, "influxdb-address"));
  add(stringFlag(flags, "estafette-prometheus-server-url") ?? env[PROMETHEUS_URL_ENV]);
  if (boolFlag(flags, "knative-autoscaler")) add(stringFlag(flags, "knative-prometheus-address"));
  return urls;
}

/**
 * The endpoint policy of the flags, or undefined when no rule is on (every URL allowed, as
 * before). A bad `--allowed-metric-endpoints` pattern is a UsageError naming it.
 *
 * @example
 * ```ts
 * endpointPolicyFromFlags({ "endpoints-in-own-namespace": true, "prometheus-server": "http://p.monitoring:9090" }, {});
 * // { ownNamespace: true, patterns: [], flagServers: [<http://p.monitoring:9090>], clusterDomain: "cluster.local" }
 * ```
 */
export function endpointPolicyFromFlags(
  flags: FlagValues,
  env: Record<string, string | undefined>,
): EndpointPolicy | undefined {
  const allowed = listFlag(flags, "allowed-metric-endpoints");
  const ownNamespace = boolFlag(flags, "endpoints-in-own-namespace");
  if (allowed.length === 0 && !ownNamespace) return undefined;
  try {
    return createEndpointPolicy({
      allowed,
      ownNamespace,
      flagServers: flagServerUrls(flags, env),
      clusterDomain: stringFlag(flags, "cluster-domain") ?? undefined,
    });
  } catch (e) {
    if (!(e instanceof EndpointPatternError)) throw e;
    throw new UsageError(
      `invalid value "${e.pattern}" for --allowed-metric-endpoints: ${e.reason}`,
    );
  }
}
