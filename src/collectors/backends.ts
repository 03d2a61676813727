/**
 * The backend collectors (Prometheus family, InfluxDB, SQS, ZMON, Nakadi). Each factory checks
 * its own flags when it builds a collector, so a disabled backend gives a clear error on the
 * metric, not a silent gap. Registered beside the default collectors by `serve`.
 */
import { externalRpsFactory } from "./external_rps.ts";
import { influxDbFactory } from "./influxdb.ts";
import { nakadiFactory } from "./nakadi.ts";
import { prometheusFactory } from "./prometheus.ts";
import { skipperFactory } from "./skipper.ts";
import { sqsQueueLengthFactory } from "./sqs.ts";
import type { CollectorFactory } from "./types.ts";
import { zmonFactory } from "./zmon.ts";

/** Every backend collector factory of this release. */
export function backendCollectorFactories(): CollectorFactory[] {
  return [
    prometheusFactory,
    skipperFactory,
    externalRpsFactory,
    influxDbFactory,
    sqsQueueLengthFactory,
    zmonFactory,
    nakadiFactory,
  ];
}
