/**
 * Every collector type of this release, by descriptor (see collector_config.ts), and what
 * `plan` and the command line derive from them: the External types and their legacy names,
 * the kinds whose Object metrics a type serves, what enables each. Adding a backend adds one
 * descriptor here, its config file under configs/, and its collector with one registry line.
 */
import { z } from "zod";
import type { CollectorDescriptor, ConfigSchema } from "./collector_config.ts";
import { influxDbDescriptor } from "./configs/influxdb.ts";
import { jsonPathDescriptor } from "./configs/json_path.ts";
import { nakadiDescriptor } from "./configs/nakadi.ts";
import { prometheusDescriptor } from "./configs/prometheus.ts";
import { requestsPerSecondDescriptor } from "./configs/requests_per_second.ts";
import { skipperDescriptor } from "./configs/skipper.ts";
import { sqsDescriptor } from "./configs/sqs.ts";
import { zmonDescriptor } from "./configs/zmon.ts";
import type { MetricType } from "../types.ts";

/** A config read by the collector itself (its schema takes every key as it is). */
const passthrough: ConfigSchema<Record<string, string>> = z.record(z.string(), z.string());

function described(
  type: string,
  metricTypes: readonly MetricType[],
  enabledBy: CollectorDescriptor["enabledBy"],
  aliases: readonly string[] = [],
): CollectorDescriptor<Record<string, string>> {
  return { type, aliases, metricTypes, enabledBy, schema: () => passthrough };
}

/** The descriptors, sorted by type. */
export const COLLECTOR_DESCRIPTORS: readonly CollectorDescriptor[] = [
  described("cluster-scaling-schedule", ["Object"], "--scaling-schedule"),
  influxDbDescriptor,
  jsonPathDescriptor,
  nakadiDescriptor,
  prometheusDescriptor,
  requestsPerSecondDescriptor,
  described("scaling-schedule", ["Object"], "--scaling-schedule"),
  skipperDescriptor,
  sqsDescriptor,
  zmonDescriptor,
] as readonly CollectorDescriptor[];

const BY_TYPE: ReadonlyMap<string, CollectorDescriptor> = new Map(
  COLLECTOR_DESCRIPTORS.map((d) => [d.type, d]),
);

/** The descriptor of a collector type, or undefined. */
export function collectorDescriptor(type: string): CollectorDescriptor | undefined {
  return BY_TYPE.get(type);
}

/** External collector types, sorted (what `matchLabels.type` may say). */
export const EXTERNAL_COLLECTORS: readonly string[] = COLLECTOR_DESCRIPTORS
  .filter((d) => d.metricTypes.includes("External")).map((d) => d.type);

/** Names that select an External collector: the types and their legacy spellings. */
export const EXTERNAL_ALIASES: Readonly<Record<string, string>> = Object.fromEntries(
  COLLECTOR_DESCRIPTORS.filter((d) => d.metricTypes.includes("External")).flatMap((d) =>
    [d.type, ...(d.aliases ?? [])].map((name) => [name, d.type])
  ),
);
