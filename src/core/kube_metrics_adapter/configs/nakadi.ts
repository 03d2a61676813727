/**
 * The config of `nakadi` metrics (External), as kube-metrics-adapter reads it: `metric-type`
 * (`consumer-lag-seconds` or `unconsumed-events`), and either `subscription-id` or all of
 * `owning-application`, `event-types` (a comma list) and `consumer-group`, which find the
 * subscriptions. An `event-types` with no name between its commas is an error (the original
 * let it through and asked Nakadi for every event type).
 */
import { z } from "zod";
import { type CollectorDescriptor, type ConfigSchema, REQUIRED } from "../collector_config.ts";

/** The two values a Nakadi metric can be. */
export type NakadiMetricType = "consumer-lag-seconds" | "unconsumed-events";

/** Which subscriptions a plan reads. */
export type SubscriptionFilter =
  | { subscriptionId: string }
  | { owningApplication: string; eventTypes: string[]; consumerGroup: string };

/** A Nakadi metric's config. */
export interface NakadiConfig {
  metricType: NakadiMetricType;
  filter: SubscriptionFilter;
}

const METRIC_TYPES: readonly string[] = ["consumer-lag-seconds", "unconsumed-events"];
const FILTER_KEYS = ["owning-application", "event-types", "consumer-group"] as const;

const schema: ConfigSchema<NakadiConfig> = z.object({
  "metric-type": z.string().optional(),
  "subscription-id": z.string().optional(),
  "owning-application": z.string().optional(),
  "event-types": z.string().optional(),
  "consumer-group": z.string().optional(),
}).transform((c, ctx): NakadiConfig => {
  // Both problems at once: a metric with a bad type and no subscription gets one message each.
  const t = c["metric-type"];
  if (t === undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["metric-type"],
      message: `${REQUIRED} (consumer-lag-seconds or unconsumed-events)`,
    });
  } else if (!METRIC_TYPES.includes(t)) {
    ctx.addIssue({
      code: "custom",
      path: ["metric-type"],
      message: "want consumer-lag-seconds or unconsumed-events",
    });
  }
  const metricType = t as NakadiMetricType;
  const id = (c["subscription-id"] ?? "").trim();
  if (id !== "") {
    if (!/^[A-Za-z0-9._-]+$/.test(id)) {
      ctx.addIssue({
        code: "custom",
        path: ["subscription-id"],
        message: "want letters, digits, dots, hyphens and underscores",
      });
    }
    return { metricType, filter: { subscriptionId: id } };
  }
  const owningApplication = (c["owning-application"] ?? "").trim();
  const consumerGroup = (c["consumer-group"] ?? "").trim();
  const rawEventTypes = c["event-types"] ?? "";
  const eventTypes = rawEventTypes.split(",").map((s) => s.trim()).filter(Boolean);
  if (rawEventTypes.trim() !== "" && eventTypes.length === 0) {
    ctx.addIssue({
      code: "custom",
      path: ["event-types"],
      message: "want a comma-separated list of event type names",
    });
  }
  const missing = FILTER_KEYS.filter((k) => (c[k] ?? "").trim() === "");
  if (missing.length > 0) {
    ctx.addIssue({
      code: "custom",
      path: [],
      message: `needs matchLabels.subscription-id or all of ${FILTER_KEYS.join(", ")}`,
    });
  }
  return { metricType, filter: { owningApplication, eventTypes, consumerGroup } };
}) as unknown as ConfigSchema<NakadiConfig>;

/** `nakadi`: External metrics from the consumer lag or unconsumed events of subscriptions. */
export const nakadiDescriptor: CollectorDescriptor<NakadiConfig> = {
  type: "nakadi",
  metricTypes: ["External"],
  enabledBy: "--nakadi-endpoint",
  schema(): ConfigSchema<NakadiConfig> {
    return schema;
  },
};
