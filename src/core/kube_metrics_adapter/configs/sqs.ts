/**
 * The config of `sqs-queue-length` metrics (External), as kube-metrics-adapter reads it from the
 * selector labels: `queue-name` and `region` (required), and the optional `include-in-flight`
 * and `include-delayed` (`true` or `false`). Whether the region is one the adapter may query is
 * the operator's setup, checked by the collector.
 */
import { z } from "zod";
import {
  type CollectorDescriptor,
  configKey,
  type ConfigSchema,
  REQUIRED,
} from "../collector_config.ts";

/** An SQS metric's config. */
export interface SqsQueueConfig {
  queueName: string;
  region: string;
  /** `include-in-flight`: add the messages received but not yet deleted. */
  includeInFlight: boolean;
  /** `include-delayed`: add the messages not yet delivered. */
  includeDelayed: boolean;
}

/** SQS's rule for queue names: up to 80 characters, `.fifo` for FIFO queues. */
const QUEUE_NAME = /^[A-Za-z0-9_-]{1,80}(\.fifo)?$/;

/** A key that must not be blank (a blank one counts as missing, as the original read it). */
function requiredKey<T>(read: (value: string) => T): z.ZodType<T, string> {
  return configKey((v) => {
    if (v.trim() === "") throw new Error(REQUIRED);
    return read(v);
  }, { required: true });
}

function boolKey(): z.ZodType<boolean, string | undefined> {
  return configKey((v) => {
    if (v === "" || v === "false") return false;
    if (v === "true") return true;
    throw new Error("want true or false");
  }).transform((b) => b ?? false);
}

const schema: ConfigSchema<SqsQueueConfig> = z.object({
  "queue-name": requiredKey((v) => {
    if (!QUEUE_NAME.test(v)) {
      throw new Error(
        "want up to 80 letters, digits, hyphens and underscores, with .fifo for a FIFO queue",
      );
    }
    return v;
  }),
  region: requiredKey((v) => v),
  "include-in-flight": boolKey(),
  "include-delayed": boolKey(),
}).transform((c): SqsQueueConfig => ({
  queueName: c["queue-name"],
  region: c.region,
  includeInFlight: c["include-in-flight"],
  includeDelayed: c["include-delayed"],
})) as unknown as ConfigSchema<SqsQueueConfig>;

/** `sqs-queue-length`: External metrics from the length of an AWS SQS queue. */
export const sqsDescriptor: CollectorDescriptor<SqsQueueConfig> = {
  type: "sqs-queue-length",
  metricTypes: ["External"],
  enabledBy: "--aws-external-metrics",
  schema(): ConfigSchema<SqsQueueConfig> {
    return schema;
  },
};
