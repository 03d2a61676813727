/**
 * The config of External `requests-per-second` metrics (requests per second of hostnames, from
 * a per-host counter in Prometheus). Keys, as kube-metrics-adapter reads them: `hostnames`
 * (comma-separated, required) and `weight` (percent of the traffic, 100 by default).
 * Hostnames must be DNS names (the original took any run of letters, digits, dots and dashes,
 * and its checks differed from its collector's), and a weight may not be negative.
 */
import { z } from "zod";
import {
  type CollectorDescriptor,
  configKey,
  type ConfigSchema,
  REQUIRED,
} from "../collector_config.ts";
import { quote } from "../../quote.ts";

/** A requests-per-second metric's config. */
export interface RequestsPerSecondConfig {
  hostnames: string[];
  /** A fraction: `weight` percent / 100 (1 by default). */
  weight: number;
}

const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i;
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/**
 * Whether `host` is a DNS name: dot-separated labels of letters, digits and inner dashes.
 *
 * @example
 * ```ts
 * isDnsName("www.example.org"); // true
 * isDnsName("*.example.org"); // false
 * ```
 */
export function isDnsName(host: string): boolean {
  if (host.length === 0 || host.length > 253) return false;
  return host.split(".").every((label) => DNS_LABEL.test(label));
}

const schema: ConfigSchema<RequestsPerSecondConfig> = z.looseObject({
  hostnames: configKey((v) => {
    if (v === "") throw new Error(REQUIRED);
    const hostnames = v.split(",");
    for (const h of hostnames) {
      if (!isDnsName(h)) throw new Error(`${quote(h)} is not a DNS name`);
    }
    return hostnames;
  }, { required: true }),
  weight: configKey((v) => {
    const n = Number(v);
    if (!DECIMAL.test(v) || !Number.isFinite(n) || n < 0) {
      throw new Error("want a percentage from 0");
    }
    return n / 100;
  }),
}).transform((c): RequestsPerSecondConfig => ({
  hostnames: c.hostnames,
  weight: c.weight ?? 1,
})) as unknown as ConfigSchema<RequestsPerSecondConfig>;

/** `requests-per-second`: External requests per second of a set of hostnames. */
export const requestsPerSecondDescriptor: CollectorDescriptor<RequestsPerSecondConfig> = {
  type: "requests-per-second",
  aliases: [],
  metricTypes: ["External"],
  enabledBy: "--prometheus-server and --external-rps-metrics",
  schema(): ConfigSchema<RequestsPerSecondConfig> {
    return schema;
  },
};
