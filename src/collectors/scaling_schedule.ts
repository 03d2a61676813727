/**
 * Object metrics on a ScalingSchedule (in the HPA's namespace) or a ClusterScalingSchedule:
 * the schedule's value at collection time, ramps included, from the core maths. A missing or
 * invalid schedule fails the collection with a message naming it.
 */
import type { Kind, KubeObject } from "../cluster/types.ts";
import {
  DEFAULT_SCHEDULE_OPTIONS,
  parseScalingSchedule,
  scheduleWindows,
  scheduleWindowValue,
} from "../core/kube_metrics_adapter/scaling_schedule.ts";
import type {
  ScheduleOptions,
  ScheduleWindow,
} from "../core/kube_metrics_adapter/scaling_schedule.ts";
import type { MetricPlan } from "../core/types.ts";
import type {
  CollectContext,
  Collector,
  CollectorFactory,
  CollectorFactoryOptions,
  CollectResult,
} from "./types.ts";

/** "ScalingSchedule ns/name" or "ClusterScalingSchedule name". */
export function scheduleLabel(kind: Kind, namespace: string, name: string): string {
  return kind === "ScalingSchedule" ? `${kind} ${namespace}/${name}` : `${kind} ${name}`;
}

/** How far ahead {@linkcode ScheduleEvaluator} computes a schedule's windows at once. */
export const SCHEDULE_WINDOW_SPAN_MS = 6 * 3_600_000;

interface EvaluatedSchedule {
  from: number;
  to: number;
  windows: ScheduleWindow[];
}

/**
 * `scheduleValue` and `scheduleActive` of schedule objects, with each object's parsed spec and
 * windows kept for {@linkcode SCHEDULE_WINDOW_SPAN_MS} from the time they were computed
 * (the time zone maths costs ~100 us a call; a lookup in the kept windows costs ~1 us). An
 * object is kept by identity: the cluster view hands out a new object on every change, and an
 * object nobody holds any more is dropped with it.
 */
export class ScheduleEvaluator {
  readonly #options: ScheduleOptions;
  #kept = new WeakMap<KubeObject, EvaluatedSchedule>();

  /** An evaluator with the operator's schedule options. */
  constructor(options: ScheduleOptions) {
    this.#options = options;
  }

  /** Windows of `obj` (a ScalingSchedule or ClusterScalingSchedule) that may apply at `at`. */
  windows(kind: Kind, obj: KubeObject, at: number): ScheduleWindow[] {
    const kept = this.#kept.get(obj);
    if (kept && at >= kept.from && at <= kept.to) return kept.windows;
    const spec = parseScalingSchedule({ ...obj, kind }).spec;
    const to = at + SCHEDULE_WINDOW_SPAN_MS;
    const windows = scheduleWindows(spec, { ...this.#options, from: at, to });
    this.#kept.set(obj, { from: at, to, windows });
    return windows;
  }

  /** The schedule's metric value at `at`, as `scheduleValue` computes it. */
  value(kind: Kind, obj: KubeObject, at: number): number {
    let value = 0;
    for (const w of this.windows(kind, obj, at)) {
      value = Math.max(value, scheduleWindowValue(w, at, this.#options.rampSteps));
    }
    return value;
  }

  /** Whether a schedule is active at `at`, ramps included, as `scheduleActive` decides. */
  active(kind: Kind, obj: KubeObject, at: number): boolean {
    return this.windows(kind, obj, at).some((w) => at >= w.rampStart && at < w.rampEnd);
  }
}

class ScalingScheduleCollector implements Collector {
  readonly queryKey: string;
  readonly kinds: readonly Kind[];
  readonly #kind: Kind;
  readonly #namespace: string;
  readonly #name: string;
  readonly #evaluator: ScheduleEvaluator;

  constructor(kind: Kind, plan: MetricPlan, evaluator: ScheduleEvaluator) {
    this.#kind = kind;
    this.#namespace = plan.hpa.namespace;
    this.#name = plan.describedObject!.name;
    this.#evaluator = evaluator;
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
      value = this.#evaluator.value(this.#kind, obj, ctx.now());
    } catch (e) {
      const msg = (e as Error).message;
      return Promise.reject(new Error(msg.includes(label) ? msg : `invalid ${label}: ${msg}`));
    }
    return Promise.resolve({
      samples: [{ objectName: this.#name, value, timestamp: ctx.now() }],
    });
  }
}

function factory(type: string, kind: Kind, evaluator: ScheduleEvaluator): CollectorFactory {
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
      return new ScalingScheduleCollector(kind, plan, evaluator);
    },
  };
}

/**
 * Object metrics on a namespaced ScalingSchedule, with `evaluator` (share it with the status
 * controller, so that each schedule's windows are computed and kept once).
 */
export function createScalingScheduleFactory(evaluator: ScheduleEvaluator): CollectorFactory {
  return factory("scaling-schedule", "ScalingSchedule", evaluator);
}

/** Object metrics on a ClusterScalingSchedule, with `evaluator`. */
export function createClusterScalingScheduleFactory(
  evaluator: ScheduleEvaluator,
): CollectorFactory {
  return factory("cluster-scaling-schedule", "ClusterScalingSchedule", evaluator);
}

const defaultEvaluator = new ScheduleEvaluator(DEFAULT_SCHEDULE_OPTIONS);

/** ScalingSchedule metrics with kube-metrics-adapter's default schedule options. */
export const scalingScheduleFactory: CollectorFactory = createScalingScheduleFactory(
  defaultEvaluator,
);

/** ClusterScalingSchedule metrics with kube-metrics-adapter's default schedule options. */
export const clusterScalingScheduleFactory: CollectorFactory = createClusterScalingScheduleFactory(
  defaultEvaluator,
);
