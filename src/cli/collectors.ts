/**
 * The collectors of `serve` and `plan`, built from the command line: the one place that turns
 * collector flags into the typed options each collector owns. Adding a backend adds its
 * factory here, its descriptor in src/core/collectors.ts, and nothing else outside its files.
 */
import { createCollectorRegistry } from "../collectors/registry.ts";
import type { CollectorRegistry } from "../collectors/registry.ts";
import type { CollectorFactory } from "../collectors/types.ts";
import { externalRpsFactory } from "../collectors/external_rps.ts";
import { createHttpJsonPathFactory } from "../collectors/http_json_path.ts";
import { influxDbFactory } from "../collectors/influxdb.ts";
import { nakadiFactory } from "../collectors/nakadi.ts";
import { createPodJsonPathFactory } from "../collectors/pod_json_path.ts";
import { prometheusFactory } from "../collectors/prometheus.ts";
import {
  clusterScalingScheduleFactory,
  scalingScheduleFactory,
} from "../collectors/scaling_schedule.ts";
import { skipperFactory } from "../collectors/skipper.ts";
import { sqsQueueLengthFactory } from "../collectors/sqs.ts";
import { zmonFactory } from "../collectors/zmon.ts";
import { boolFlag, type FlagValues, numberFlag } from "./flags.ts";

/** Every collector factory of this release, with the options the flags give. */
export function collectorFactories(flags: FlagValues): CollectorFactory[] {
  return [
    // json-path
    createPodJsonPathFactory({
      maxConcurrentPodRequests: numberFlag(flags, "max-concurrent-pod-requests"),
      maxResponseBytes: numberFlag(flags, "max-response-bytes"),
    }),
    createHttpJsonPathFactory({
      maxResponseBytes: numberFlag(flags, "max-response-bytes"),
      allowLinkLocalTargets: boolFlag(flags, "allow-link-local-targets"),
    }),
    // ScalingSchedule, ClusterScalingSchedule
    scalingScheduleFactory,
    clusterScalingScheduleFactory,
    // Prometheus family
    prometheusFactory,
    skipperFactory,
    externalRpsFactory,
    // InfluxDB, SQS, ZMON, Nakadi
    influxDbFactory,
    sqsQueueLengthFactory,
    zmonFactory,
    nakadiFactory,
  ];
}

/** The registry of {@linkcode collectorFactories}. */
export function collectorRegistry(flags: FlagValues): CollectorRegistry {
  return createCollectorRegistry(collectorFactories(flags));
}
