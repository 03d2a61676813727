/**
 * The ScalingSchedule controller, a leader-elected writer:
 *
 * - keeps `status.active` of every ScalingSchedule and ClusterScalingSchedule true while any of
 *   its schedules is in its window (ramps included), writing only on change;
 * - the adjuster: when a schedule asks for more replicas than the scale target has, but so few
 *   more that the HPA controller would not act (inside its tolerance), it scales the target
 *   itself to ceil(value / averageValue), capped at maxReplicas, and says so in an event.
 *
 * What to write and whether to scale are decided by pure functions of core/kube_metrics_adapter/scaling_schedule.ts
 * ({@linkcode scheduleStatusUpdate}, {@linkcode mayNeedAdjustment}, {@linkcode planAdjustment});
 * this file reads the cluster view and writes. Runs every 10 s and on schedule changes; only
 * the leader writes.
 */
import type { ClusterView, ClusterWriter, Kind, KubeObject } from "../cluster/types.ts";
import { ScheduleEvaluator, scheduleLabel } from "../collectors/scaling_schedule.ts";
import { parseQuantity } from "../core/kubernetes/quantity.ts";
import {
  DEFAULT_SCHEDULE_OPTIONS,
  mayNeedAdjustment,
  planAdjustment,
  type ScheduleMetric,
  type ScheduleOptions,
  scheduleStatusUpdate,
} from "../core/kube_metrics_adapter/scaling_schedule.ts";
import type { Logger } from "../engine/logger.ts";
import { silentLogger } from "../engine/logger.ts";

/** Event reason of an adjustment. */
export const ADJUSTED_EVENT_REASON = "ScalingAdjusted";

const SCHEDULE_KINDS: readonly Kind[] = ["ScalingSchedule", "ClusterScalingSchedule"];
const SCALE_KINDS: readonly string[] = ["Deployment", "StatefulSet", "Rollout"];

/** The defaults of {@linkcode ScheduleControllerOptions} (kube-metrics-adapter's). */
export const SCHEDULE_CONTROLLER_DEFAULTS: {
  readonly tolerance: number;
  readonly schedule: Readonly<ScheduleOptions>;
  readonly intervalMs: number;
} = {
  tolerance: 0.1,
  schedule: DEFAULT_SCHEDULE_OPTIONS,
  intervalMs: 10_000,
};

/** Options of {@linkcode ScheduleController}; the defaults are {@linkcode SCHEDULE_CONTROLLER_DEFAULTS}. */
export interface ScheduleControllerOptions {
  cluster: ClusterView;
  /** Status updates, scale and events go here; without it nothing is written. */
  writer?: ClusterWriter;
  /** The HPA controller's tolerance: the adjuster acts only on changes inside it (0.1). */
  tolerance?: number;
  /**
   * How schedules are evaluated: default time zone, default ramp window and ramp steps
   * (Europe/Berlin, 600 s, 10). Not used when `evaluator` is given.
   */
  schedule?: Partial<ScheduleOptions>;
  /**
   * The evaluator the schedule collectors use, so that each schedule's windows are computed
   * once for both; by default one of the controller's own, with `schedule`.
   */
  evaluator?: ScheduleEvaluator;
  now?: () => number;
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (handle: unknown) => void;
  logger?: Logger;
  isLeader?: () => boolean;
  /** Period of the re-evaluation, ms (10 000). */
  intervalMs?: number;
}

function objKey(kind: Kind, obj: KubeObject): string {
  return `${kind}/${obj.metadata.namespace ?? ""}/${obj.metadata.name}`;
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Keeps ScalingSchedule status in sync and adjusts HPAs stuck inside their tolerance. */
export class ScheduleController {
  readonly #cluster: ClusterView;
  readonly #writer?: ClusterWriter;
  readonly #now: () => number;
  readonly #setTimer: (fn: () => void, ms: number) => unknown;
  readonly #clearTimer: (handle: unknown) => void;
  readonly #log: Logger;
  readonly #isLeader: () => boolean;
  readonly #intervalMs: number;
  readonly #schedules: ScheduleEvaluator;
  readonly #tolerance: number;
  #timer: unknown = null;
  #unwatch: (() => void)[] = [];
  #running: Promise<void> | null = null;
  #again = false;
  #stopped = false;
  /** Status written and not yet seen in the view: key -> active at resourceVersion. */
  #pending = new Map<string, { active: boolean; resourceVersion?: string }>();
  /** Last logged problem per object or HPA, to log once per change. */
  #problems = new Map<string, string>();

  /** Creates a controller; nothing happens until {@linkcode ScheduleController.start}. */
  constructor(options: ScheduleControllerOptions) {
    this.#cluster = options.cluster;
    this.#writer = options.writer;
    this.#now = options.now ?? (() => Date.now());
    this.#setTimer = options.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
    this.#clearTimer = options.clearTimer ??
      ((h) => clearTimeout(h as ReturnType<typeof setTimeout>));
    this.#log = options.logger ?? silentLogger();
    this.#isLeader = options.isLeader ?? (() => true);
    this.#intervalMs = options.intervalMs ?? SCHEDULE_CONTROLLER_DEFAULTS.intervalMs;
    const schedule = options.schedule ?? {};
    const defaults = SCHEDULE_CONTROLLER_DEFAULTS.schedule;
    this.#schedules = options.evaluator ?? new ScheduleEvaluator({
      defaultTimeZone: schedule.defaultTimeZone ?? defaults.defaultTimeZone,
      defaultScalingWindowSeconds: schedule.defaultScalingWindowSeconds ??
        defaults.defaultScalingWindowSeconds,
      rampSteps: schedule.rampSteps ?? defaults.rampSteps,
    });
    const tolerance = options.tolerance ?? SCHEDULE_CONTROLLER_DEFAULTS.tolerance;
    if (!(tolerance >= 0) || !Number.isFinite(tolerance)) {
      throw new RangeError(`invalid tolerance ${tolerance}: want a finite number of at least 0`);
    }
    this.#tolerance = tolerance;
  }

  /** Watch schedules and HPAs, run once, then every interval and on every schedule change. */
  async start(): Promise<void> {
    for (const kind of SCHEDULE_KINDS) {
      this.#unwatch.push(this.#cluster.watch(kind, () => void this.runOnce()));
    }
    await Promise.all([
      ...SCHEDULE_KINDS.map((k) => this.#cluster.ensure(k)),
      this.#cluster.ensure("HorizontalPodAutoscaler"),
    ]);
    if (this.#stopped) return;
    const loop = (): void => {
      if (this.#stopped) return;
      this.#timer = this.#setTimer(loop, this.#intervalMs);
      void this.runOnce();
    };
    loop();
  }

  /** Stop the timer and the watches; waits for a pass in flight. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) this.#clearTimer(this.#timer);
    this.#timer = null;
    for (const u of this.#unwatch.splice(0)) u();
    await this.#running?.catch(() => {});
  }

  /** One pass (status, then adjuster); passes never overlap, a request during one runs after. */
  runOnce(): Promise<void> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    const run = async (): Promise<void> => {
      // Start after #running is set: a status write emits a watch event synchronously, and
      // that event must not start a second pass inside this one.
      await undefined;
      try {
        do {
          this.#again = false;
          if (this.#stopped || !this.#isLeader() || !this.#writer) return;
          await this.#syncStatus(this.#writer);
          await this.#adjust(this.#writer);
        } while (this.#again && !this.#stopped);
      } finally {
        this.#running = null;
      }
    };
    this.#running = run();
    return this.#running;
  }

  #problem(key: string, message: string | null, fields: Record<string, unknown>): void {
    if (message === null) {
      this.#problems.delete(key);
      return;
    }
    if (this.#problems.get(key) === message) return;
    this.#problems.set(key, message);
    this.#log.error(message, fields);
  }

  async #syncStatus(writer: ClusterWriter): Promise<void> {
    const now = this.#now();
    let n = 0;
    for (const kind of SCHEDULE_KINDS) {
      for (const obj of this.#cluster.list(kind)) {
        if (++n % CHUNK === 0) await nextTurn();
        const key = objKey(kind, obj);
        const label = scheduleLabel(kind, obj.metadata.namespace ?? "", obj.metadata.name);
        let active: boolean;
        try {
          active = this.#schedules.active(kind, obj, now);
          this.#problem(key, null, {});
        } catch (e) {
          this.#problem(key, `cannot evaluate ${label}`, { error: errorText(e) });
          continue;
        }
        const status = scheduleStatusUpdate(obj.status, active);
        const pending = this.#pending.get(key);
        if (status === null) {
          this.#pending.delete(key);
          continue;
        }
        // Written already; the view has not caught up with our update yet.
        if (
          pending && pending.active === active &&
          pending.resourceVersion === obj.metadata.resourceVersion
        ) continue;
        try {
          await writer.updateStatus(
            kind,
            kind === "ScalingSchedule" ? obj.metadata.namespace : undefined,
            obj.metadata.name,
            status,
          );
          this.#pending.set(key, { active, resourceVersion: obj.metadata.resourceVersion });
          this.#log.info(`marked ${label} as ${active ? "active" : "inactive"}`);
        } catch (e) {
          this.#log.error(`failed to update status of ${label}`, { error: errorText(e) });
        }
      }
    }
  }

  #valueOf(
    kind: "ScalingSchedule" | "ClusterScalingSchedule",
    namespace: string,
    name: string,
    now: number,
    cache: Map<string, number | null>,
  ): number | null {
    const key = `${kind}/${namespace}/${name}`;
    if (cache.has(key)) return cache.get(key)!;
    const obj = this.#cluster.get(kind, kind === "ScalingSchedule" ? namespace : undefined, name);
    let value: number | null = null;
    if (obj) {
      try {
        value = this.#schedules.value(kind, obj, now);
      } catch {
        value = null; // logged by the status pass
      }
    }
    cache.set(key, value);
    return value;
  }

  async #adjust(writer: ClusterWriter): Promise<void> {
    const now = this.#now();
    const cache = new Map<string, number | null>();
    let n = 0;
    for (const hpa of this.#cluster.list("HorizontalPodAutoscaler")) {
      if (++n % CHUNK === 0) await nextTurn();
      const ns = hpa.metadata.namespace ?? "default";
      const hpaName = `${ns}/${hpa.metadata.name}`;
      const metrics: ScheduleMetric[] = [];
      for (const m of Array.isArray(hpa.spec?.metrics) ? hpa.spec.metrics : []) {
        const d = m?.type === "Object" ? m.object?.describedObject : undefined;
        if (!d || (d.kind !== "ScalingSchedule" && d.kind !== "ClusterScalingSchedule")) continue;
        const raw = m.object?.target?.averageValue;
        if (m.object?.target?.type !== "AverageValue" || raw === undefined) continue;
        let averageValue: number;
        try {
          averageValue = parseQuantity(String(raw));
        } catch {
          continue;
        }
        const value = this.#valueOf(d.kind, ns, String(d.name), now, cache);
        if (value === null) continue;
        metrics.push({ kind: d.kind, name: String(d.name), value, averageValue });
      }
      if (metrics.length === 0) continue;
      const ref = hpa.spec?.scaleTargetRef;
      if (!ref || !SCALE_KINDS.includes(ref.kind)) continue;
      const maxReplicas = Number(hpa.spec?.maxReplicas);
      // Cheap pre-check on the HPA's status before reading the scale subresource.
      const statusReplicas = hpa.status?.currentReplicas;
      if (
        !mayNeedAdjustment(metrics, {
          maxReplicas,
          statusReplicas: Number.isFinite(statusReplicas) ? statusReplicas : undefined,
        })
      ) continue;
      const targetName = `${ref.kind} ${ns}/${ref.name}`;
      try {
        const scale = await writer.getScale(ref.kind as Kind, ns, ref.name);
        const adjustment = planAdjustment({
          currentReplicas: scale.specReplicas,
          maxReplicas,
          tolerance: this.#tolerance,
          metrics,
        });
        if (!adjustment) continue;
        await writer.setScale(ref.kind as Kind, ns, ref.name, adjustment.replicas);
        const message = adjustmentMessage({
          target: targetName,
          from: scale.specReplicas,
          to: adjustment.replicas,
          schedule: scheduleLabel(adjustment.metric.kind, ns, adjustment.metric.name),
          tolerance: this.#tolerance,
        });
        this.#log.info(message, { hpa: hpaName });
        this.#problem(`hpa/${hpaName}`, null, {});
        await writer.emitEvent("HorizontalPodAutoscaler", hpa, {
          type: "Normal",
          reason: ADJUSTED_EVENT_REASON,
          message,
        }).catch((e) => {
          this.#log.error("failed to write event", { hpa: hpaName, error: errorText(e) });
        });
      } catch (e) {
        this.#problem(`hpa/${hpaName}`, `failed to adjust ${targetName} for HPA ${hpaName}`, {
          error: errorText(e),
        });
      }
    }
  }
}

/** Objects a pass handles before it lets the event loop serve requests. */
const CHUNK = 200;

/** Resolves on a later turn of the event loop (after pending I/O, unlike a microtask). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * The ScalingAdjusted event message:
 * `scaled Deployment ns/web from 10 to 11 replicas for ScalingSchedule ns/peak: desired 11 is
 * within the HPA tolerance 0.1`.
 */
export function adjustmentMessage(
  options: { target: string; from: number; to: number; schedule: string; tolerance: number },
): string {
  return `scaled ${options.target} from ${options.from} to ${options.to} replicas for ${options.schedule}: desired ${options.to} is within the HPA tolerance ${options.tolerance}`;
}
