/**
 * The ScalingSchedule controller (`--scaling-schedule`):
 *
 * - keeps `status.active` of every ScalingSchedule and ClusterScalingSchedule true while any of
 *   its schedules is in its window (ramps included), writing only on change;
 * - the adjuster: when a schedule asks for more replicas than the scale target has, but so few
 *   more that the HPA controller would not act (inside its tolerance), it scales the target
 *   itself to ceil(value / averageValue), capped at maxReplicas, and says so in an event.
 *
 * Runs every 10 s and on schedule changes; only the leader writes.
 */
import type { ClusterView, ClusterWriter, Kind, KubeObject } from "../cluster/types.ts";
import type { FlagValues } from "../cli/flags.ts";
import {
  type ScheduleEvaluator,
  scheduleEvaluatorFor,
  scheduleLabel,
} from "../collectors/scaling_schedule.ts";
import { parseQuantity } from "../core/quantity.ts";
import type { Logger } from "./logger.ts";
import { silentLogger } from "./logger.ts";

/** Event reason of an adjustment. */
export const ADJUSTED_EVENT_REASON = "ScalingAdjusted";

const SCHEDULE_KINDS: readonly Kind[] = ["ScalingSchedule", "ClusterScalingSchedule"];
const SCALE_KINDS: readonly string[] = ["Deployment", "StatefulSet", "Rollout"];

/** One schedule metric of an HPA, evaluated. */
export interface ScheduleMetric {
  kind: "ScalingSchedule" | "ClusterScalingSchedule";
  name: string;
  /** The schedule's value now. */
  value: number;
  /** The metric's `target.averageValue`, parsed. */
  averageValue: number;
}

/** Inputs of {@linkcode planAdjustment}. */
export interface AdjustmentInput {
  /** The scale target's current `spec.replicas`. */
  currentReplicas: number;
  maxReplicas: number;
  /** `--horizontal-pod-autoscaler-tolerance`. */
  tolerance: number;
  metrics: readonly ScheduleMetric[];
}

/** What the adjuster does: scale to `replicas` because of `metric`. */
export interface Adjustment {
  replicas: number;
  metric: ScheduleMetric;
  /** value / (averageValue x currentReplicas), as the HPA controller computes it. */
  usageRatio: number;
}

/**
 * The adjuster's rule. Among the schedule metrics, the one asking for the most replicas,
 * ceil(value / averageValue), wins. If that is more than the current replicas (capped at
 * maxReplicas) while the usage ratio value / (averageValue x current) is at most 1 +
 * tolerance, the HPA controller would not scale, so the adjuster does. Otherwise null.
 *
 * @example
 * ```ts
 * planAdjustment({ currentReplicas: 10, maxReplicas: 20, tolerance: 0.1, metrics: [
 *   { kind: "ScalingSchedule", name: "peak", value: 105, averageValue: 10 },
 * ] }); // { replicas: 11, usageRatio: 1.05, metric: ... }
 * ```
 */
export function planAdjustment(input: AdjustmentInput): Adjustment | null {
  const current = input.currentReplicas;
  if (!(current > 0)) return null;
  let best: ScheduleMetric | null = null;
  let bestReplicas = 0;
  for (const m of input.metrics) {
    if (!(m.averageValue > 0) || !(m.value > 0)) continue;
    const wanted = Math.ceil(m.value / m.averageValue);
    if (wanted > bestReplicas) {
      bestReplicas = wanted;
      best = m;
    }
  }
  if (!best) return null;
  const replicas = Math.min(bestReplicas, input.maxReplicas);
  if (replicas <= current) return null;
  const usageRatio = best.value / (best.averageValue * current);
  // Rounding must not turn 110 / (10 x 10) = 1.1 into "outside a 0.1 tolerance".
  if (usageRatio - 1 > input.tolerance + 1e-9) return null;
  return { replicas, metric: best, usageRatio };
}

/** Options of {@linkcode ScheduleController}. */
export interface ScheduleControllerOptions {
  cluster: ClusterView;
  /** Status updates, scale and events go here; without it nothing is written. */
  writer?: ClusterWriter;
  flags: FlagValues;
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
    this.#intervalMs = options.intervalMs ?? 10_000;
    this.#schedules = scheduleEvaluatorFor(options.flags);
    const tol = options.flags["horizontal-pod-autoscaler-tolerance"];
    this.#tolerance = typeof tol === "number" && tol >= 0 ? tol : 0.1;
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
        const shown = obj.status?.active === true;
        const pending = this.#pending.get(key);
        if (shown === active) {
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
            { ...(obj.status ?? {}), active },
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
      const wantedMax = Math.min(
        maxReplicas,
        Math.max(
          ...metrics.map((m) => m.averageValue > 0 ? Math.ceil(m.value / m.averageValue) : 0),
        ),
      );
      // planAdjustment scales from at least one replica to more, never down: a wish of one
      // replica or none (every schedule at 0) needs no read of the scale subresource.
      if (!(wantedMax >= 2)) continue;
      const statusReplicas = hpa.status?.currentReplicas;
      if (typeof statusReplicas === "number" && statusReplicas >= wantedMax) continue;
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
