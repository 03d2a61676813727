/**
 * The config of `zmon` metrics (External; legacy metric name `zmon-check`), as
 * kube-metrics-adapter reads it: `check-id` (required integer), `key`, `tag-<name>` (one
 * KairosDB tag each), `duration` (a Go duration, 10m) and `aggregators` (a comma list, last).
 * Annotations win over labels, so `key` and tags may hold wildcards that labels cannot.
 */
import { z } from "zod";
import { type AggregatorName, parseAggregator } from "../aggregators.ts";
import {
  type CollectorDescriptor,
  configKey,
  type ConfigSchema,
  REQUIRED,
} from "../collector_config.ts";
import { parseDuration } from "../../duration.ts";

/** The time range and sampling of a ZMON query without `duration`, seconds (10m). */
export const DEFAULT_ZMON_DURATION_SECONDS = 600;

/** The aggregators of a ZMON query without `aggregators`. */
export const DEFAULT_ZMON_AGGREGATORS: readonly AggregatorName[] = ["last"];

/** A ZMON metric's config. */
export interface ZmonQueryConfig {
  /** `check-id`: the query reads the metric `zmon.check.<checkId>`. */
  checkId: number;
  /** `key` ("" for none). */
  key: string;
  /** The `tag-<name>` keys by name, sorted. */
  tags: Record<string, string>;
  durationSeconds: number;
  aggregators: AggregatorName[];
}

const schema: ConfigSchema<ZmonQueryConfig> = z.looseObject({
  "check-id": configKey((v) => {
    if (v === "") throw new Error(REQUIRED);
    if (!/^\d+$/.test(v) || !Number.isSafeInteger(Number(v))) {
      throw new Error("want an integer");
    }
    return Number(v);
  }, { required: true }),
  key: z.string().optional(),
  duration: configKey((v) => {
    if (v === "") return DEFAULT_ZMON_DURATION_SECONDS;
    let seconds: number;
    try {
      seconds = parseDuration(v);
    } catch {
      throw new Error("want a Go duration like 10m");
    }
    if (seconds <= 0) throw new Error("want more than 0");
    return seconds;
  }),
  aggregators: configKey((v) => v.split(",").map((a) => parseAggregator(a.trim()))),
}).transform((c): ZmonQueryConfig => {
  const tags: Record<string, string> = {};
  for (const k of Object.keys(c).sort()) {
    const value = (c as Record<string, unknown>)[k];
    if (k.startsWith("tag-") && k.length > 4 && typeof value === "string") {
      tags[k.slice(4)] = value;
    }
  }
  return {
    checkId: c["check-id"],
    key: c.key ?? "",
    tags,
    durationSeconds: c.duration ?? DEFAULT_ZMON_DURATION_SECONDS,
    aggregators: c.aggregators ?? [...DEFAULT_ZMON_AGGREGATORS],
  };
}) as unknown as ConfigSchema<ZmonQueryConfig>;

/** `zmon`: External metrics from a ZMON check's results in KairosDB (legacy `zmon-check`). */
export const zmonDescriptor: CollectorDescriptor<ZmonQueryConfig> = {
  type: "zmon",
  aliases: ["zmon-check"],
  metricTypes: ["External"],
  enabledBy: "--zmon-kariosdb-endpoint",
  schema(): ConfigSchema<ZmonQueryConfig> {
    return schema;
  },
};
