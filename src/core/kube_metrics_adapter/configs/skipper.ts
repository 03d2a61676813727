/**
 * The config of `skipper` metrics: Object metric `requests-per-second` of an Ingress or a
 * RouteGroup. Key, as kube-metrics-adapter reads it: `backend` (the backend whose share of the
 * traffic to count; the deprecated metric name `requests-per-second,<backend>` also names it).
 * Whether the metric and the object fit skipper is the plan's choice, not a config key.
 */
import { z } from "zod";
import { type CollectorDescriptor, configKey, type ConfigSchema } from "../collector_config.ts";

/** A skipper metric's config. */
export interface SkipperConfig {
  /** `backend`, as given; undefined when not set. */
  backend?: string;
}

const schema: ConfigSchema<SkipperConfig> = z.looseObject({
  backend: configKey((v) => v),
}).transform((
  c,
): SkipperConfig => (c.backend === undefined
  ? {}
  : { backend: c.backend })
) as unknown as ConfigSchema<SkipperConfig>;

/** `skipper`: requests per second of Ingresses and RouteGroups from Skipper's counters. */
export const skipperDescriptor: CollectorDescriptor<SkipperConfig> = {
  type: "skipper",
  aliases: [],
  metricTypes: ["Object"],
  enabledBy: (kind) =>
    kind === "RouteGroup"
      ? "--prometheus-server and --skipper-routegroup-metrics"
      : "--prometheus-server and --skipper-ingress-metrics",
  schema(): ConfigSchema<SkipperConfig> {
    return schema;
  },
};
