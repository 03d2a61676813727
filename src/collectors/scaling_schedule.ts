/**
 * Object metrics on a ScalingSchedule (in the HPA's namespace) or a ClusterScalingSchedule:
 * the schedule's value at collection time, ramps included, from the core maths. A missing or
 * invalid schedule fails the collection with a message naming it.
 */
import type { Kind } from "../cluster/types.ts";
import { parseScalingSchedule, scheduleValue } from "../core/scaling_schedule.ts";
import type { ScheduleOptions } from "../core/scaling_schedule.ts";
import type { MetricPlan } from "../core/types.ts";
import type {
  CollectContext,
  Collector,
  CollectorFactory,
  CollectorFactoryOptions,
  CollectResult,
} from "./types.ts";

/** The schedule options from the serve flags (with kube-metrics-adapter's defaults). */
export function scheduleOptionsFromFlags(flags: Record<string, unknown>): ScheduleOptions {
  const tz = flags["scaling-schedule-default-time-zone"];
  const win = flags["scaling-schedule-default-scaling-window"];
  const steps = flags["scaling-schedule-ramp-steps"];
  return {
    defaultTimeZone: typeof tz === "string" && tz !== "" ? tz : "Europe/Berlin",
    defaultScalingWindowSeconds: typeof win === "number" && win >= 0 ? win : 600,
    rampSteps: typeof steps === "number" && steps >= 1 ? steps : 10,
  };
}

/** "ScalingSchedule ns/name" or "ClusterScalingSchedule name". */
export function scheduleLabel(kind: Kind, namespace: string, name: string): string {
  return kind === "ScalingSchedule" ? `${kind} ${namespace}/${name}` : `${kind} ${name}`;
}

class ScalingScheduleCollector implements Collector {
  readonly queryKey: string;
  readonly kinds: readonly Kind[];
  readonly #kind: Kind;
  readonly #namespace: string;
  readonly #name: string;
  readonly #options: ScheduleOptions;

  constructor(kind: Kind, plan: MetricPlan, options: ScheduleOptions) {
    this.#kind = kind;
    this.#namespace = plan.hpa.namespace;
    this.#name = plan.describedObject!.name;
    this.#options = options;
    this.kinds = [kind];
    this.queryKey = kind === "ScalingSchedule"
      ? `scaling-schedule|${this.#namespace}/${this.#name}`
      : `cluster-scaling-schedule|${this.#name}`;
  }

  collect(ctx: CollectContext): Promise<CollectResult> {
    const label = scheduleLabel(this.#kind, this.#namespace, this.#name);
    const obj = ctx.cluster.get(
      this.#kind,
      this.#kind === "ScalingSchedule" ? this.#namespace : undefined,
      this.#name,
    );
    if (!obj) return Promise.reject(new Error(`${label} not found`));
    let value: number;
    try {
      const schedule = parseScalingSchedule({ ...obj, kind: this.#kind });
      value = scheduleValue(schedule.spec, ctx.now(), this.#options);
    } catch (e) {
      const msg = (e as Error).message;
      return Promise.reject(new Error(msg.includes(label) ? msg : `invalid ${label}: ${msg}`));
    }
    return Promise.resolve({
      samples: [{ objectName: this.#name, value, timestamp: ctx.now() }],
    });
  }
}

function factory(type: string, kind: Kind): CollectorFactory {
  return {
    type,
    metricTypes: ["Object"],
    create(options: CollectorFactoryOptions): Collector {
      const { plan } = options;
      const d = plan.describedObject;
      if (!d || d.kind !== kind || !d.name) {
        throw new Error(
          `metric ${plan.metricName} of type ${type} needs a describedObject of kind ${kind}`,
        );
      }
      return new ScalingScheduleCollector(kind, plan, scheduleOptionsFromFlags(options.flags));
    },
  };
}

/** Object metrics on a namespaced ScalingSchedule (`--scaling-schedule`). */
export const scalingScheduleFactory: CollectorFactory = factory(
  "scaling-schedule",
  "ScalingSchedule",
);

/** Object metrics on a ClusterScalingSchedule (`--scaling-schedule`). */
export const clusterScalingScheduleFactory: CollectorFactory = factory(
  "cluster-scaling-schedule",
  "ClusterScalingSchedule",
);
