/**
 * The collectors of `serve` and `plan`, built from the command line: the one place that turns
 * collector flags into the typed options each collector owns. Adding a backend adds its
 * factory here, its descriptor in src/core/kube_metrics_adapter/collectors.ts, and nothing else outside its files.
 */
import { kedaCollectorFactories, type KedaTriggerSource } from "../collectors/keda.ts";
import { createCollectorRegistry } from "../collectors/registry.ts";
import type { CollectorRegistry } from "../collectors/registry.ts";
import type { CollectorFactory } from "../collectors/types.ts";
import { createExternalRpsFactory } from "../collectors/external_rps.ts";
import { createHttpJsonPathFactory } from "../collectors/http_json_path.ts";
import { createInfluxDbFactory } from "../collectors/influxdb.ts";
import { createNakadiFactory } from "../collectors/nakadi.ts";
import { createPodJsonPathFactory } from "../collectors/pod_json_path.ts";
import { createPrometheusFactory } from "../collectors/prometheus.ts";
import {
  createClusterScalingScheduleFactory,
  createScalingScheduleFactory,
  ScheduleEvaluator,
} from "../collectors/scaling_schedule.ts";
import { createSkipperFactory } from "../collectors/skipper.ts";
import { createSqsQueueLengthFactory } from "../collectors/sqs.ts";
import { createZmonFactory } from "../collectors/zmon.ts";
import { influxDbOptions, nakadiOptions, sqsOptions, zmonOptions } from "./backend_options.ts";
import { DEFAULT_SCHEDULE_OPTIONS } from "../core/kube_metrics_adapter/scaling_schedule.ts";
import { boolFlag, type FlagValues, numberFlag, stringFlag } from "./flags.ts";
import {
  externalRpsOptionsFromFlags,
  prometheusOptionsFromFlags,
  skipperOptionsFromFlags,
} from "./prometheus_options.ts";

/** What the collectors share with the writers of `serve` besides the flags. */
export interface CollectorShared {
  /** The triggers of the owned ScaledObjects (`--keda-scaled-objects`): the KEDA controller. */
  kedaTriggers?: KedaTriggerSource;
}

/** Every collector factory of this release, with the options the flags give. */
export function collectorFactories(
  flags: FlagValues,
  shared: CollectorShared = {},
): CollectorFactory[] {
  const prometheus = prometheusOptionsFromFlags(flags);
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
    createScalingScheduleFactory(scheduleEvaluatorFor(flags)),
    createClusterScalingScheduleFactory(scheduleEvaluatorFor(flags)),
    // Prometheus family
    createPrometheusFactory(prometheus),
    createSkipperFactory(skipperOptionsFromFlags(flags)),
    createExternalRpsFactory(externalRpsOptionsFromFlags(flags)),
    // InfluxDB, SQS, ZMON, Nakadi
    createInfluxDbFactory(influxDbOptions(flags)),
    createSqsQueueLengthFactory(sqsOptions(flags)),
    createZmonFactory(zmonOptions(flags)),
    createNakadiFactory(nakadiOptions(flags)),
    // KEDA's triggers of the owned ScaledObjects
    ...(shared.kedaTriggers
      ? kedaCollectorFactories({
        triggers: shared.kedaTriggers,
        linkLocal: { allow: boolFlag(flags, "allow-link-local-targets") },
        maxResponseBytes: numberFlag(flags, "max-response-bytes"),
        sqsEndpointUrl: stringFlag(flags, "aws-endpoint-url") ?? null,
        stsEndpointUrl: stringFlag(flags, "aws-sts-endpoint-url") ?? null,
        // KEDA reads it to try the operator's web identity on a pod identity's role first
        webIdentityTokenFile: process.env.AWS_WEB_IDENTITY_TOKEN_FILE || null,
      })
      : []),
  ];
}

/** One evaluator per flags object: the schedule collectors and the status controller share it. */
const evaluators = new WeakMap<FlagValues, ScheduleEvaluator>();

/**
 * The schedule evaluator of a set of serve flags, shared by everyone who passes the same flags
 * object, so that each schedule's windows are computed and kept once (not once per HPA metric
 * on it and once more for its status).
 */
export function scheduleEvaluatorFor(flags: FlagValues): ScheduleEvaluator {
  let e = evaluators.get(flags);
  if (!e) {
    e = new ScheduleEvaluator({
      defaultTimeZone: stringFlag(flags, "scaling-schedule-default-time-zone") ??
        DEFAULT_SCHEDULE_OPTIONS.defaultTimeZone,
      defaultScalingWindowSeconds: numberFlag(flags, "scaling-schedule-default-scaling-window"),
      rampSteps: numberFlag(flags, "scaling-schedule-ramp-steps"),
    });
    evaluators.set(flags, e);
  }
  return e;
}

/** The registry of {@linkcode collectorFactories}. */
export function collectorRegistry(
  flags: FlagValues,
  shared: CollectorShared = {},
): CollectorRegistry {
  return createCollectorRegistry(collectorFactories(flags, shared));
}
