/**
 * KEDA's ScaledObjects without KEDA (`--keda-scaled-objects`, issue 47): for each ScaledObject
 * this adapter owns (those `--keda-scaled-object-selector` picks), the HPA KEDA v2.20.2 would
 * write (core/keda/hpa.ts), written as KEDA writes it, and the ScaledObject's status; and, on
 * every replica, the triggers' resolved parameters and metric plans (core/keda/plan.ts) that the
 * engine collects and the external metrics API serves under KEDA's names.
 *
 * - Writes only on the leader, only when something differs, with JSON merge patches: the
 *   ScaledObject's `scaledobject.keda.sh/name` label (KEDA's operator sets it), the HPA (created;
 *   updated when KEDA would update it, core/keda/hpa_update.ts, so an edit of a field KEDA sets
 *   is reverted), the HPA of an old `horizontalPodAutoscalerConfig.name` (deleted), the status
 *   subresource, and events (KEDA's reasons).
 * - An HPA of the ScaledObject's name that `keda-operator` manages, or that the ScaledObject
 *   does not control, is left alone, with a Warning event on the ScaledObject that says so; the
 *   ScaledObject is then not ours (its metrics go to the delegate, if any).
 * - Errors land where KEDA puts them: `Ready=False` with KEDA's message, a Warning event; a
 *   ScaledObject that does not parse gets the fields named. Every other ScaledObject goes on.
 *
 * @module
 */
import { createHmac, randomBytes } from "node:crypto";
import { replacingMergePatch } from "../cluster/merge_patch.ts";
import {
  type ClusterView,
  type ClusterWriter,
  controllerRef,
  type Kind,
  KIND_RESOURCES,
  type KubeObject,
} from "../cluster/types.ts";
import type { KedaResolvedTrigger, KedaTriggerSource } from "../collectors/keda.ts";
import {
  HPA_FAILED,
  type KedaHpa,
  kedaHpaFor,
  type KedaHpaResult,
  kedaTypesStatus,
} from "../core/keda/hpa.ts";
import { kedaHpaUpdates } from "../core/keda/hpa_update.ts";
import {
  KEDA_COMPOSITE_METRIC,
  KEDA_OPERATOR,
  KEDA_PAUSED_SCALE_IN,
  KEDA_PAUSED_SCALE_OUT,
  KEDA_SCALED_OBJECT_LABEL,
  kedaDefaultHpaName,
} from "../core/keda/names.ts";
import { kedaPlans } from "../core/keda/plan.ts";
import {
  InvalidScaledObjectError,
  kedaBoolAnnotation,
  parseScaledObject,
  type ScaledObject,
} from "../core/keda/scaled_object.ts";
import {
  initializedConditions,
  type KedaCondition,
  type KedaEvent,
  kedaGvkString,
  kedaHasValidFallback,
  kedaReconciledConditions,
  kedaScaleTarget,
  setCondition,
} from "../core/keda/status.ts";
import { kedaActivationThreshold, kedaActivity, type KedaReading } from "../core/keda/activity.ts";
import {
  KEDA_PAUSED_REPLICAS,
  kedaPausedByAnnotation,
  kedaScaleDecision,
} from "../core/keda/executor.ts";
import {
  matchesSelector,
  parseSelector,
  type Selector,
} from "../core/kubernetes/label_selector.ts";
import type { MetricPlan } from "../core/types.ts";
import type { ScaledObjectStatus } from "../api/status_model.ts";
import { errorText } from "../engine/error_text.ts";
import type { Logger } from "../engine/logger.ts";
import { silentLogger } from "../engine/logger.ts";
import { resolveKedaParams, typedTriggers } from "./keda_resolver.ts";

/** KEDA's finalizer of the ScaledObjects it serves. */
export const KEDA_FINALIZER = "finalizer.keda.sh";

/** The queue key prefix of a scale loop tick. */
const LOOP = "loop|";

/** Warning event reason when a ScaledObject's HPA is KEDA's operator's (or not its own). */
export const KEDA_NOT_OURS_REASON = "ScaledObjectNotOwned";

/** Options of {@linkcode KedaController}. */
export interface KedaControllerOptions {
  cluster: ClusterView;
  /** Reads (secrets, targets), creates, patches, status and events. */
  writer?: ClusterWriter;
  /** Write (cluster mode); false only logs the decisions (file mode). */
  write: boolean;
  /** `--keda-scaled-object-selector`: the ScaledObjects this adapter owns ("" all). */
  selector?: string;
  /** Where ClusterTriggerAuthentications' Secrets live (KEDA's cluster object namespace). */
  clusterObjectNamespace?: string;
  /** `app.kubernetes.io/version` of the HPAs. */
  version: string;
  /**
   * Called when the plans of an HPA change (the engine plans it again); `pending`, the HPA this
   * controller is about to write, to plan from until the cluster has it.
   */
  onPlansChanged?: (namespace: string, hpaName: string, pending?: KubeObject) => void;
  /**
   * The last collection of an owned ScaledObject's External metric (the engine's): for the scale
   * loop. Without it the loop does not run.
   */
  reading?: (
    namespace: string,
    hpaName: string,
    metricName: string,
    scaledObject: string,
  ) => KedaPlanReading | undefined;
  /** The clock, ms since the epoch (the loop's times). */
  now?: () => number;
  /** Full resync period, seconds (30). */
  resyncSeconds?: number;
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (handle: unknown) => void;
  logger?: Logger;
  isLeader?: () => boolean;
}

/** The last collection of one metric plan, as the scale loop reads it. */
export interface KedaPlanReading {
  /** The value served (collected, or the fallback's). */
  value?: number;
  /** The last collection's error, while it fails. */
  error?: string;
  /** Consecutive failed collections. */
  failures: number;
  /** The fallback answers (failures past the threshold). */
  fallback: boolean;
}

/** The scale loop of one owned ScaledObject. */
interface Loop {
  timer: unknown;
  seconds: number;
  /**
   * When its next tick is due (ms since the epoch): one polling interval after the last one's
   * due time, on the loop's own grid, so that a tick early or late (a collection's timing)
   * does not move the ones after it.
   */
  due: number;
  /** Its last tick found a trigger not collected yet. */
  waiting: boolean;
}

/** A ScaledObject's trigger parameters resolved: its HPA and plans (KedaController's #resolve). */
type Resolved = Pick<Entry, "triggers" | "hpaName" | "digest"> & { result: KedaHpaResult };

/** What is known of one owned ScaledObject. */
interface Entry {
  so: ScaledObject;
  hpaName: string | null;
  /** The HPA it makes, when it makes one. */
  result: KedaHpaResult | null;
  triggers: (KedaResolvedTrigger | undefined)[];
  /** The digest of the whole entry (plans change when it does). */
  digest: string;
}

// deno-lint-ignore no-explicit-any
type Loose = any;

/**
 * Whether two JSON values are equal, whatever the order of their keys (the API server answers a
 * custom resource's status with its keys sorted, as Go marshals a map; ours are in the order we
 * build them). Keys whose value is `undefined` count as absent, as in JSON.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => sameJson(x, bb[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const bk = Object.keys(bo).filter((k) => bo[k] !== undefined);
  return ak.length === bk.length && ak.every((k) => Object.hasOwn(bo, k) && sameJson(ao[k], bo[k]));
}

/**
 * Whether two versions of an object differ in their status (and bookkeeping) alone: the same
 * spec, labels, annotations, finalizers, owners and deletion.
 */
function sameButStatus(a: KubeObject, b: KubeObject): boolean {
  const am = a.metadata;
  const bm = b.metadata;
  return sameJson(a.spec, b.spec) && sameJson(am.labels, bm.labels) &&
    sameJson(am.annotations, bm.annotations) && sameJson(am.finalizers, bm.finalizers) &&
    sameJson(am.ownerReferences, bm.ownerReferences) &&
    am.deletionTimestamp === bm.deletionTimestamp;
}

/** Reconciles owned ScaledObjects; see the module documentation. */
export class KedaController implements KedaTriggerSource {
  readonly #cluster: ClusterView;
  readonly #writer?: ClusterWriter;
  readonly #write: boolean;
  readonly #selector: Selector | null;
  readonly #clusterNs: string;
  readonly #version: string;
  readonly #onPlansChanged: (namespace: string, hpaName: string, pending?: KubeObject) => void;
  readonly #resyncMs: number;
  readonly #setTimer: (fn: () => void, ms: number) => unknown;
  readonly #clearTimer: (handle: unknown) => void;
  readonly #log: Logger;
  readonly #isLeader: () => boolean;
  readonly #reading?: (
    ns: string,
    hpa: string,
    metric: string,
    scaledObject: string,
  ) => KedaPlanReading | undefined;
  readonly #now: () => number;
  /** The last reconcile's outcome per ScaledObject ("ok" or its error). */
  readonly #outcomes = new Map<string, string>();
  /** The scale loop's timer and interval per owned ScaledObject. */
  readonly #loops = new Map<string, Loop>();
  /** `namespace/hpaName` of each owned ScaledObject with an HPA: its key (collection reports). */
  readonly #byHpa = new Map<string, string>();
  /** A key of this process for digests of parameters (secrets are never hashed bare). */
  readonly #digestKey = randomBytes(32);
  readonly #entries = new Map<string, Entry>();
  /**
   * What the start's planning resolved, by ScaledObject, with the resourceVersion it resolved:
   * its first reconcile takes it instead of reading the Secrets again (one use each).
   */
  readonly #startResolved = new Map<
    string,
    { resourceVersion: string | undefined; resolved: Resolved }
  >();
  readonly #queue = new Set<string>();
  /** The last event message per ScaledObject and reason, so each is said once per change. */
  readonly #said = new Map<string, string>();
  #unwatch: (() => void)[] = [];
  #timer: unknown = null;
  #draining: Promise<void> | null = null;
  #stopped = false;

  /** Creates the controller; nothing happens until {@linkcode KedaController.start}. */
  constructor(options: KedaControllerOptions) {
    this.#cluster = options.cluster;
    this.#writer = options.writer;
    this.#write = options.write;
    this.#selector = options.selector ? parseSelector(options.selector) : null;
    this.#clusterNs = options.clusterObjectNamespace ?? "keda";
    this.#version = options.version;
    this.#onPlansChanged = options.onPlansChanged ?? (() => {});
    this.#resyncMs = (options.resyncSeconds ?? 30) * 1000;
    this.#setTimer = options.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
    this.#clearTimer = options.clearTimer ??
      ((h) => clearTimeout(h as ReturnType<typeof setTimeout>));
    this.#log = options.logger ?? silentLogger();
    this.#isLeader = options.isLeader ?? (() => true);
    this.#reading = options.reading;
    this.#now = options.now ?? (() => Date.now());
  }

  /** Watch ScaledObjects and HPAs, reconcile everything, then on changes and every resync. */
  async start(): Promise<void> {
    for (const kind of ["ScaledObject", "HorizontalPodAutoscaler"] as Kind[]) {
      this.#unwatch.push(
        this.#cluster.watch(kind, (type, obj, old) => this.#changed(kind, type, obj, old)),
      );
    }
    await Promise.all([
      this.#cluster.ensure("ScaledObject"),
      this.#cluster.ensure("HorizontalPodAutoscaler"),
    ]);
    if (this.#stopped) return;
    // file mode writes no HPA: its ScaledObjects are planned from the HPAs it has
    if (this.#write) await this.#planAll();
    if (this.#stopped) return;
    const loop = (): void => {
      if (this.#stopped) return;
      this.#timer = this.#setTimer(loop, this.#resyncMs);
      this.resync();
    };
    loop();
  }

  /**
   * Before the first reconcile: every owned ScaledObject's plans, with the HPA it will get, so
   * that its metrics are collected and served while the writes (labels, HPAs, statuses: bounded
   * by the client's rate limit, several a ScaledObject) go on. KEDA's metrics server answers a
   * ScaledObject before its operator wrote anything too. Writes nothing; a ScaledObject that
   * would not get its HPA (an error, paused, another's HPA) is left to the reconcile.
   */
  async #planAll(): Promise<void> {
    for (const obj of this.#cluster.list("ScaledObject")) {
      if (this.#stopped) return;
      if (!this.#selected(obj) || obj.metadata.deletionTimestamp) continue;
      const ns = obj.metadata.namespace ?? "default";
      const key = `${ns}/${obj.metadata.name}`;
      try {
        const so = parseScaledObject(obj);
        if (kedaPausedByAnnotation(so)) continue;
        const kind = (so.spec.scaleTargetRef.kind || "Deployment") as Kind;
        if (
          !Object.hasOwn(KIND_RESOURCES, kind) || !KIND_RESOURCES[kind].scale ||
          !(await this.#target(kind, ns, so.spec.scaleTargetRef.name))
        ) continue;
        const r = await this.#resolve(so);
        this.#startResolved.set(key, {
          resourceVersion: obj.metadata.resourceVersion,
          resolved: r,
        });
        if ("error" in r.result || r.hpaName === null) continue;
        if (this.#cluster.get("HorizontalPodAutoscaler", ns, r.hpaName)) continue;
        this.#entries.set(key, { so, ...r });
        this.#byHpa.set(`${ns}/${r.hpaName}`, key);
        this.#onPlansChanged(ns, r.hpaName, r.result.hpa as unknown as KubeObject);
      } catch (e) {
        if (!(e instanceof InvalidScaledObjectError)) {
          this.#log.error("keda plan failed", { scaledObject: key, error: errorText(e) });
        }
      }
    }
  }

  /**
   * The trigger parameters of a ScaledObject resolved (Secrets, env), the HPA and metrics KEDA
   * would make of them, the triggers as the collectors take them, and their digest.
   */
  async #resolve(so: ScaledObject): Promise<Resolved> {
    const resolved = await resolveKedaParams(so, (k, n, m) => this.#read(k, n, m), this.#clusterNs);
    let result: KedaHpaResult = kedaHpaFor(so, {
      version: this.#version,
      params: resolved.params,
      podIdentities: resolved.podIdentities,
    });
    const envError = resolved.errors.findIndex((x) => x !== undefined);
    if (!("error" in result) && envError >= 0) {
      result = {
        error: `${HPA_FAILED}${resolved.errors[envError]}`,
        trigger: envError,
        metrics: result.metrics,
      };
    }
    const triggers: (KedaResolvedTrigger | undefined)[] = "error" in result
      ? so.spec.triggers.map(() => undefined)
      : typedTriggers(so, resolved, (v) => this.#digest(v));
    const hpaName = "error" in result ? null : result.hpa.metadata.name;
    const digest = this.#digest([hpaName, result, triggers.map((t) => t?.digest ?? null)]);
    return { result, triggers, hpaName, digest };
  }

  /** Stop watching; waits for the ScaledObject being reconciled. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) this.#clearTimer(this.#timer);
    this.#timer = null;
    for (const u of this.#unwatch.splice(0)) u();
    for (const l of this.#loops.values()) this.#clearTimer(l.timer);
    this.#loops.clear();
    this.#byHpa.clear();
    this.#queue.clear();
    await this.#draining?.catch(() => {});
  }

  /** Queue every ScaledObject. */
  resync(): void {
    for (const so of this.#cluster.list("ScaledObject")) {
      this.#queue.add(`${so.metadata.namespace ?? "default"}/${so.metadata.name}`);
    }
    this.#drain();
  }

  /** Resolves when the queue is empty (tests). */
  async idle(): Promise<void> {
    while (this.#draining) await this.#draining;
  }

  /** The resolved trigger `index` of the ScaledObject `key` (`ns/name`), for the collectors. */
  trigger(key: string, index: number): KedaResolvedTrigger | undefined {
    return this.#entries.get(key)?.triggers[index];
  }

  /** The owned ScaledObjects (`ns/name`), for the status page and the serving path. */
  owned(): string[] {
    return [...this.#entries.keys()];
  }

  /** The owned ScaledObject `name` of `namespace`, as the serving path needs it. */
  scaledObject(
    namespace: string,
    name: string,
  ):
    | { hpaName: string | null; metricNames: string[]; composite?: boolean; error?: string }
    | undefined {
    const e = this.#entries.get(`${namespace}/${name}`);
    if (!e) return undefined;
    if (e.result === null || "error" in e.result) {
      return {
        hpaName: e.hpaName,
        metricNames: [],
        error: e.result && "error" in e.result ? e.result.error : "not reconciled yet",
      };
    }
    const composite = e.result.status.compositeScalerName !== undefined;
    return {
      hpaName: e.hpaName,
      metricNames: composite ? [KEDA_COMPOSITE_METRIC] : e.result.status.externalMetricNames,
      ...(composite ? { composite } : {}),
    };
  }

  /** The ScaledObject that controls `hpa`, for the status page; null when none does. */
  statusOf(hpa: KubeObject): ScaledObjectStatus | null {
    const ref = controllerRef(hpa);
    if (ref?.kind !== "ScaledObject" || !ref.name) return null;
    const ns = hpa.metadata.namespace ?? "default";
    const e = this.#entries.get(`${ns}/${ref.name}`);
    const obj = this.#cluster.get("ScaledObject", ns, ref.name);
    const ours = e !== undefined && e.hpaName === hpa.metadata.name;
    const owner = ours
      ? "hpa-metrics-adapter"
      : hpa.metadata.labels?.["app.kubernetes.io/managed-by"] === KEDA_OPERATOR
      ? "keda-operator"
      : "other";
    const conditions = Array.isArray(obj?.status?.conditions) ? obj!.status.conditions : [];
    const ready = conditions.find((c: Loose) => c?.type === "Ready");
    const triggers: Loose[] = Array.isArray(obj?.spec?.triggers) ? obj!.spec.triggers : [];
    const metrics = e?.result?.metrics ?? [];
    return {
      name: ref.name,
      owner,
      ready: ready
        ? {
          status: String(ready.status),
          ...(ready.reason ? { reason: String(ready.reason) } : {}),
          ...(ready.message ? { message: String(ready.message) } : {}),
        }
        : null,
      triggers: triggers.map((t, index) => {
        const m = metrics.find((x) => x.index === index);
        const external = m !== undefined && m.spec.type === "External";
        const activity = external ? obj?.status?.triggersActivity?.[m.metricName] : undefined;
        const values = e?.triggers[index]?.values;
        return {
          index,
          type: String(t?.type ?? ""),
          name: typeof t?.name === "string" && t.name !== "" ? t.name : null,
          metricName: external ? m.metricName : null,
          activation: external && values && t?.type !== "cron"
            ? kedaActivationThreshold(String(t.type), values)
            : null,
          active: typeof activity?.isActive === "boolean" ? activity.isActive : null,
        };
      }),
      loop: ours && e ? this.#loopStatus(e.so, obj) : null,
    };
  }

  /** The scale loop's state in words, for the status page. */
  #loopStatus(
    so: ScaledObject,
    obj: KubeObject | undefined,
  ): NonNullable<ScaledObjectStatus["loop"]> {
    const status = (obj?.status ?? {}) as Loose;
    const active = (status.conditions ?? []).find((c: Loose) => c?.type === "Active");
    const last = typeof status.lastActiveTime === "string" ? status.lastActiveTime : null;
    const inactive = active?.status === "False";
    const cooldown = (so.spec.cooldownPeriod ?? 300) * 1000;
    const lastMs = last === null ? NaN : Date.parse(last);
    const endsMs = Number.isFinite(lastMs) ? lastMs + cooldown : NaN;
    const kind = (so.spec.scaleTargetRef.kind || "Deployment") as Kind;
    const target = Object.hasOwn(KIND_RESOURCES, kind)
      ? this.#cluster.get(kind, so.metadata.namespace ?? "default", so.spec.scaleTargetRef.name)
      : undefined;
    const replicas = typeof target?.spec?.replicas === "number" ? target.spec.replicas : null;
    const floor = so.spec.idleReplicaCount ?? so.spec.minReplicaCount ?? 0;
    const paused =
      (status.conditions ?? []).some((c: Loose) => c?.type === "Paused" && c.status === "True") &&
      kedaPausedByAnnotation(so);
    let next: string;
    if (paused) next = "nothing: paused";
    else if (active === undefined || active.status === "Unknown") next = "its first check";
    else if (!inactive) {
      next = replicas === 0
        ? `scale to ${Math.max(so.spec.minReplicaCount ?? 0, 1)} at the next check`
        : "leave scaling to the HPA while active";
    } else if (replicas !== null && replicas > floor) {
      next = Number.isFinite(endsMs) && endsMs > this.#now()
        ? `scale to ${floor} when the cooldown ends (${new Date(endsMs).toISOString()})`
        : `scale to ${floor} at the next check`;
    } else next = `nothing: the target is at ${replicas ?? "?"} replicas`;
    return {
      active: active
        ? {
          status: String(active.status),
          ...(active.reason ? { reason: String(active.reason) } : {}),
          ...(active.message ? { message: String(active.message) } : {}),
        }
        : null,
      lastActiveTime: last,
      cooldownEndsAt: inactive && Number.isFinite(endsMs)
        ? new Date(endsMs).toISOString().replace(".000Z", "Z")
        : null,
      next,
    };
  }

  /**
   * The plans of `hpa` when a ScaledObject controls it: this adapter's KEDA plans when the
   * ScaledObject is ours, none when it is not (KEDA's, served by its metrics server or the
   * delegate); undefined for every other HPA (planned from its annotations).
   */
  plansFor(hpa: KubeObject): { plans: MetricPlan[]; inputs: string } | undefined {
    const ref = controllerRef(hpa);
    if (ref?.kind !== "ScaledObject" || !ref.apiVersion?.startsWith("keda.sh/")) return undefined;
    const ns = hpa.metadata.namespace ?? "default";
    const e = this.#entries.get(`${ns}/${ref.name}`);
    if (!e || e.hpaName !== hpa.metadata.name || e.result === null || "error" in e.result) {
      return { plans: [], inputs: `keda:none:${e?.digest ?? ""}` };
    }
    const plans = kedaPlans(e.so, {
      hpaName: hpa.metadata.name,
      hpaMetrics: Array.isArray(hpa.spec?.metrics) ? hpa.spec.metrics : [],
      metrics: e.result.metrics,
      paramsDigest: e.triggers.map((t) => t?.digest ?? ""),
    });
    return { plans, inputs: `keda:${e.digest}` };
  }

  #changed(kind: Kind, type: string, obj: KubeObject, old?: KubeObject): void {
    if (this.#stopped) return;
    // a change of the status alone (the loop's own writes, the HPA controller's) changes
    // nothing a reconcile decides: KEDA's operator does not reconcile on it either
    if (type === "MODIFIED" && old && old !== obj && sameButStatus(old, obj)) return;
    const ns = obj.metadata.namespace ?? "default";
    if (kind === "ScaledObject") {
      if (type === "DELETED") {
        this.#forget(`${ns}/${obj.metadata.name}`);
        return;
      }
      this.#queue.add(`${ns}/${obj.metadata.name}`);
    } else {
      const ref = controllerRef(obj);
      if (ref?.kind === "ScaledObject" && ref.name) this.#queue.add(`${ns}/${ref.name}`);
      else {
        // an HPA of an owned ScaledObject's name that it does not control
        for (const [key, e] of this.#entries) {
          if (e.hpaName === obj.metadata.name && key.startsWith(`${ns}/`)) this.#queue.add(key);
        }
      }
    }
    this.#drain();
  }

  /** Drop an entry (and, unless `keepSaid`, what was said about it: it is gone). */
  #forget(key: string, keepSaid = false): void {
    this.#startResolved.delete(key);
    const e = this.#entries.get(key);
    this.#entries.delete(key);
    if (e?.hpaName) this.#byHpa.delete(`${e.so.metadata.namespace ?? "default"}/${e.hpaName}`);
    const loop = this.#loops.get(key);
    if (loop) {
      this.#clearTimer(loop.timer);
      this.#loops.delete(key);
    }
    this.#outcomes.delete(key);
    if (!keepSaid) {
      for (const k of [...this.#said.keys()]) if (k.startsWith(`${key}|`)) this.#said.delete(k);
    }
    if (e?.hpaName) this.#onPlansChanged(e.so.metadata.namespace ?? "default", e.hpaName);
  }

  #drain(): void {
    if (this.#draining || this.#stopped) return;
    this.#draining = (async () => {
      await undefined;
      try {
        while (this.#queue.size > 0 && !this.#stopped) {
          const key = this.#queue.values().next().value as string;
          this.#queue.delete(key);
          const loop = key.startsWith(LOOP);
          const [ns, name] = key.slice(loop ? LOOP.length : 0).split("/") as [string, string];
          try {
            if (loop) await this.#tick(ns, name);
            else await this.#reconcile(ns, name);
          } catch (e) {
            this.#log.error("keda reconcile failed", { scaledObject: key, error: errorText(e) });
          }
        }
      } finally {
        this.#draining = null;
      }
    })();
  }

  #selected(obj: KubeObject): boolean {
    return this.#selector === null || matchesSelector(this.#selector, obj.metadata.labels ?? {});
  }

  #digest(value: unknown): string {
    return createHmac("sha256", this.#digestKey).update(JSON.stringify(value)).digest("hex")
      .slice(0, 16);
  }

  #read(kind: Kind, ns: string | undefined, name: string): Promise<KubeObject | null> {
    if (!this.#writer) return Promise.resolve(this.#cluster.get(kind, ns, name) ?? null);
    if (KIND_RESOURCES[kind]?.scale) return this.#target(kind, ns, name);
    return this.#writer.read(kind, ns, name);
  }

  /**
   * A scale target (Deployment, StatefulSet, Rollout) from the informer cache, as KEDA's
   * operator reads it (its cached client): the kind is watched from the first ScaledObject
   * that names it, so a reconcile or a check of the loop costs no request. Read from the API
   * while the kind cannot be listed (RBAC, a missing CRD).
   */
  async #target(kind: Kind, ns: string | undefined, name: string): Promise<KubeObject | null> {
    await this.#cluster.ensure(kind);
    if (this.#cluster.kindError?.(kind) == null || !this.#writer) {
      return this.#cluster.get(kind, ns, name) ?? null;
    }
    return this.#writer.read(kind, ns, name);
  }

  async #reconcile(ns: string, name: string): Promise<void> {
    const key = `${ns}/${name}`;
    const obj = this.#cluster.get("ScaledObject", ns, name);
    if (!obj || !this.#selected(obj)) {
      this.#forget(key);
      return;
    }
    if (obj.metadata.deletionTimestamp) {
      await this.#finalize(obj);
      this.#forget(key);
      return;
    }
    let so: ScaledObject;
    try {
      so = parseScaledObject(obj);
    } catch (e) {
      if (!(e instanceof InvalidScaledObjectError)) throw e;
      const message = `invalid ScaledObject ${key}: ${e.problems.join("; ")}`;
      this.#forget(key);
      await this.#setStatus(obj, { error: message, trigger: undefined, metrics: [] }, null, null);
      return;
    }
    // paused (autoscaling.keda.sh/paused, paused-replicas): no HPA, no loop, the target held
    if (kedaPausedByAnnotation(so)) {
      await this.#paused(obj, so);
      return;
    }
    // the scale target: its GVKR, and that it exists
    let target: { kind: string; gvkr: ReturnType<typeof kedaScaleTarget>; replicas?: number };
    const targetPrefix = "ScaledObject doesn't have correct scaleTargetRef specification: ";
    try {
      const gvkr = kedaScaleTarget(so.spec.scaleTargetRef, (_g, kind) => {
        const known = (KIND_RESOURCES as Record<string, { plural: string }>)[kind];
        return known?.plural ?? `${kind.toLowerCase()}s`;
      });
      const kind = gvkr.kind as Kind;
      const found = Object.hasOwn(KIND_RESOURCES, kind) && KIND_RESOURCES[kind].scale
        ? await this.#read(kind, ns, so.spec.scaleTargetRef.name)
        : undefined;
      if (found === null) {
        throw new Error(
          `${gvkr.resource}${
            gvkr.group ? `.${gvkr.group}` : ""
          } "${so.spec.scaleTargetRef.name}" not found`,
        );
      }
      const replicas = found?.spec?.replicas;
      target = {
        kind: kedaGvkString(gvkr),
        gvkr,
        ...(typeof replicas === "number" ? { replicas } : {}),
      };
    } catch (e) {
      this.#entries.delete(key);
      await this.#label(obj);
      await this.#setStatus(obj, { error: targetPrefix + errorText(e), metrics: [] }, so, null);
      return;
    }
    // the start's planning resolved it as it is now: its Secrets are not read twice
    const start = this.#startResolved.get(key);
    this.#startResolved.delete(key);
    const { result, triggers, hpaName, digest } =
      start && start.resourceVersion === obj.metadata.resourceVersion
        ? start.resolved
        : await this.#resolve(so);
    // the HPA of that name: KEDA's operator's, or another's, is left alone
    if (hpaName !== null) {
      const found = this.#cluster.get("HorizontalPodAutoscaler", ns, hpaName);
      const managedBy = found?.metadata.labels?.["app.kubernetes.io/managed-by"];
      const ref = found ? controllerRef(found) : undefined;
      const controlled = ref?.kind === "ScaledObject" && ref.name === name &&
        (!ref.uid || !so.metadata.uid || ref.uid === so.metadata.uid);
      if (found && (managedBy === KEDA_OPERATOR || !controlled)) {
        this.#forget(key, true);
        this.#event(obj, {
          type: "Warning",
          reason: KEDA_NOT_OURS_REASON,
          message: managedBy === KEDA_OPERATOR
            ? `HorizontalPodAutoscaler ${ns}/${hpaName} is managed by keda-operator: this ScaledObject is left to KEDA`
            : `HorizontalPodAutoscaler ${ns}/${hpaName} exists and is not controlled by this ScaledObject: left alone`,
        });
        return;
      }
    }
    await this.#label(obj);
    const before = this.#entries.get(key);
    if (before?.hpaName) this.#byHpa.delete(`${ns}/${before.hpaName}`);
    this.#entries.set(key, { so, hpaName, result, triggers, digest });
    this.#byHpa.set(`${ns}/${hpaName}`, key);
    if (!("error" in result)) {
      await this.#ensureHpa(obj, so, result.hpa);
      this.#armLoop(key, so);
    }
    if (before?.hpaName && before.hpaName !== hpaName) this.#onPlansChanged(ns, before.hpaName);
    if (hpaName !== null && before?.digest !== digest) {
      // with the HPA it makes, planned from until the cluster has it
      this.#onPlansChanged(
        ns,
        hpaName,
        "error" in result ? undefined : result.hpa as unknown as KubeObject,
      );
    }
    await this.#setStatus(obj, result, so, target);
  }

  /**
   * A paused ScaledObject, as KEDA's `handlePause`: the Paused condition (and event) first, the
   * loop stopped, its HPA deleted, the target scaled to `paused-replicas` when given,
   * `status.pausedReplicaCount`, and `Ready` True with the message `ScaledObject is paused`.
   */
  async #paused(obj: KubeObject, so: ScaledObject): Promise<void> {
    const ns = so.metadata.namespace ?? "default";
    const name = so.metadata.name;
    const key = `${ns}/${name}`;
    const hpaName = so.spec.advanced?.horizontalPodAutoscalerConfig?.name ||
      kedaDefaultHpaName(name);
    const found = this.#cluster.get("HorizontalPodAutoscaler", ns, hpaName);
    const ref = found ? controllerRef(found) : undefined;
    const managedBy = found?.metadata.labels?.["app.kubernetes.io/managed-by"];
    if (found && managedBy === KEDA_OPERATOR) {
      this.#forget(key, true);
      this.#event(obj, {
        type: "Warning",
        reason: KEDA_NOT_OURS_REASON,
        message:
          `HorizontalPodAutoscaler ${ns}/${hpaName} is managed by keda-operator: this ScaledObject is left to KEDA`,
      });
      return;
    }
    const before = this.#entries.get(key);
    this.#forget(key, true);
    this.#entries.set(key, { so, hpaName: null, result: null, triggers: [], digest: "paused" });
    if (before?.hpaName) this.#onPlansChanged(ns, before.hpaName);
    if (!this.#isLeader()) return;
    await this.#label(obj);
    const current = (obj.status ?? {}) as Loose;
    const wasPaused = (current.conditions ?? []).some((c: Loose) =>
      c?.type === "Paused" && c.status === "True"
    );
    const message = "ScaledObject is paused";
    if (found && ref?.kind === "ScaledObject" && ref.name === name) {
      await this.#do(
        `delete HorizontalPodAutoscaler ${ns}/${hpaName} (paused)`,
        () => this.#writer!.delete("HorizontalPodAutoscaler", ns, hpaName),
      );
    }
    const text = so.metadata.annotations?.[KEDA_PAUSED_REPLICAS];
    let count: number | undefined;
    let error: string | undefined;
    if (text !== undefined) {
      if (/^[+-]?\d+$/.test(text) && Math.abs(Number(text)) <= 2147483647) count = Number(text);
      else {
        error =
          `failed to scale target to paused replica count: failed to parse paused replica count: strconv.ParseInt: parsing ${
            JSON.stringify(text)
          }: invalid syntax`;
      }
    }
    const kind = (so.spec.scaleTargetRef.kind || "Deployment") as Kind;
    if (count !== undefined && Object.hasOwn(KIND_RESOURCES, kind) && KIND_RESOURCES[kind].scale) {
      try {
        const scale = await this.#writer!.getScale(kind, ns, so.spec.scaleTargetRef.name);
        if (scale.specReplicas !== count) {
          await this.#do(
            `scale ${kind} ${ns}/${so.spec.scaleTargetRef.name} to its paused replicas ${count}`,
            () => this.#writer!.setScale(kind, ns, so.spec.scaleTargetRef.name, count!),
          );
        }
      } catch (e) {
        error = `failed to scale target to paused replica count: ${errorText(e)}`;
      }
    }
    let conditions = setCondition(initializedConditions(current.conditions), {
      type: "Paused",
      status: "True",
      reason: "ScaledObjectPaused",
      message,
    });
    conditions = setCondition(
      conditions,
      error === undefined
        ? { type: "Ready", status: "True", reason: "ScaledObjectReady", message }
        : { type: "Ready", status: "False", reason: "ScaledObjectCheckFailed", message: error },
    );
    if (!kedaHasValidFallback(so)) {
      conditions = setCondition(conditions, {
        type: "Fallback",
        status: "False",
        reason: "NoFallbackFound",
        message: "No fallbacks are active on this scaled object",
      });
    }
    const status: Loose = { ...current, conditions };
    if (count !== undefined) status.pausedReplicaCount = count;
    else delete status.pausedReplicaCount;
    if (!wasPaused) this.#emit(obj, { type: "Normal", reason: "ScaledObjectPaused", message });
    this.#outcomes.set(key, `paused:${count ?? ""}:${error ?? ""}`);
    await this.#writeLoopStatus(obj, status);
  }

  /**
   * The scale loop of an owned ScaledObject: a tick now (KEDA's loop checks its scalers at once),
   * then one every `pollingInterval` (30 s). A tick follows the collection of the ScaledObject's
   * triggers ({@linkcode collected}), so that it decides on a value at most one polling interval
   * old, as KEDA's loop, which asks its scalers at each tick, does; the timer (one and a half
   * intervals) ticks when no collection comes.
   */
  #armLoop(key: string, so: ScaledObject): void {
    if (!this.#reading) return;
    const seconds = so.spec.pollingInterval && so.spec.pollingInterval > 0
      ? so.spec.pollingInterval
      : 30;
    const have = this.#loops.get(key);
    if (have?.seconds === seconds) return;
    if (have) {
      this.#clearTimer(have.timer);
      have.seconds = seconds;
      have.timer = this.#setTimer(() => this.#fire(key), seconds * 1500);
      return;
    }
    this.#loops.set(key, { timer: null, seconds, due: 0, waiting: false });
    this.#fire(key);
  }

  /** A tick of `key`'s loop now, and its timer re-armed. */
  #fire(key: string): void {
    const loop = this.#loops.get(key);
    if (this.#stopped || !loop) return;
    if (loop.timer !== null) this.#clearTimer(loop.timer);
    loop.timer = this.#setTimer(() => this.#fire(key), loop.seconds * 1500);
    // the next tick one interval after this one's due time; after a first tick, a wait for a
    // first value, or a stall past it: one interval from now
    const now = this.#now();
    const step = loop.seconds * 1000;
    loop.due = !loop.waiting && loop.due > 0 && loop.due + step > now
      ? loop.due + step
      : now + step;
    this.#queue.add(LOOP + key);
    this.#drain();
  }

  /**
   * The engine collected plans (`namespace/hpa/...` keys, its collection report): the loop of
   * each owned ScaledObject among them ticks when its next tick is due in a quarter of its
   * polling interval or less (due one interval after the last one's due time: one tick an
   * interval, as KEDA's loop, however the collections fall), or when its last tick waited for
   * a first value.
   */
  collected(planKeys: readonly string[]): void {
    const now = this.#now();
    for (const pk of planKeys) {
      const first = pk.indexOf("/");
      const hpa = pk.indexOf("/", first + 1);
      const key = this.#byHpa.get(hpa < 0 ? pk : pk.slice(0, hpa));
      const loop = key === undefined ? undefined : this.#loops.get(key);
      if (!loop) continue;
      if (loop.waiting || now >= loop.due - loop.seconds * 250) this.#fire(key!);
    }
  }

  /**
   * One polling interval of KEDA's scale loop (leader): the triggers' activity from the last
   * collections, the target's replicas through `/scale`, KEDA's decision (to and from zero, the
   * idle and minimum counts, cooldown), and the status the loop writes: `Ready`, `Active`,
   * `Fallback`, `triggersActivity`, `lastActiveTime`, `health`.
   */
  async #tick(ns: string, name: string): Promise<void> {
    if (!this.#isLeader() || !this.#reading || !this.#writer) return;
    const key = `${ns}/${name}`;
    const e = this.#entries.get(key);
    const obj = this.#cluster.get("ScaledObject", ns, name);
    if (!e || !obj || e.hpaName === null || e.result === null || "error" in e.result) return;
    const so = e.so;
    const readings: KedaReading[] = [];
    const plansRead: { metricName: string; r: KedaPlanReading | undefined }[] = [];
    let composite: number | undefined;
    for (const m of e.result.metrics) {
      if (m.spec.type !== "External") continue;
      const r = this.#reading(ns, e.hpaName, m.metricName, name);
      plansRead.push({ metricName: m.metricName, r });
      readings.push({
        index: m.index,
        metricName: m.metricName,
        values: e.triggers[m.index]?.values ?? {},
        ...(r === undefined
          ? { error: "not collected yet" }
          : r.fallback
          ? { fallback: true }
          : r.error !== undefined
          ? { error: r.error }
          : r.value !== undefined
          ? { value: r.value }
          : { error: "not collected yet" }),
      });
    }
    if (e.result.status.compositeScalerName !== undefined) {
      composite = this.#reading(ns, e.hpaName, KEDA_COMPOSITE_METRIC, name)?.value;
    }
    // a trigger not collected yet: no decision on what is not known (its first collection ticks)
    const loop = this.#loops.get(key);
    if (loop) {
      loop.waiting = plansRead.some(({ r }) =>
        r === undefined || (r.value === undefined && !r.error)
      );
      if (loop.waiting) return;
    } else if (
      plansRead.some(({ r }) => r === undefined || (r.value === undefined && !r.error))
    ) return;
    const activity = kedaActivity(so, readings, composite);
    const status = (obj.status ?? {}) as Loose;
    const kind = (so.spec.scaleTargetRef.kind || "Deployment") as Kind;
    const target = so.spec.scaleTargetRef.name;
    const scalable = Object.hasOwn(KIND_RESOURCES, kind) && KIND_RESOURCES[kind].scale;
    let current: number;
    try {
      if (!scalable) throw new Error(`${kind} is not a kind whose /scale this adapter reads`);
      // KEDA's GetCurrentReplicas: a Deployment's or StatefulSet's spec.replicas from its
      // cache (1 when unset), anything else through /scale
      const cached = kind === "Deployment" || kind === "StatefulSet"
        ? await this.#target(kind, ns, target)
        : undefined;
      if (cached === null) {
        throw new Error(`${KIND_RESOURCES[kind].plural}.apps "${target}" not found`);
      }
      current = cached
        ? (typeof cached.spec?.replicas === "number" ? cached.spec.replicas : 1)
        : (await this.#writer.getScale(kind, ns, target)).specReplicas;
    } catch (err) {
      await this.#writeLoopStatus(obj, {
        ...status,
        conditions: setCondition(initializedConditions(status.conditions), {
          type: "Ready",
          status: "False",
          reason: "ErrorGettingCurrentReplicas",
          message: `Error getting current replicas count for ScaleTarget: ${errorText(err)}`,
        }),
      });
      return;
    }
    const now = this.#now();
    const lastActive = typeof status.lastActiveTime === "string"
      ? Date.parse(status.lastActiveTime)
      : NaN;
    const created = Date.parse(obj.metadata.creationTimestamp ?? "");
    const decision = kedaScaleDecision(so, {
      active: activity.active,
      error: activity.error,
      activeTriggers: activity.activeTriggers,
      currentReplicas: current,
      ...(Number.isFinite(lastActive) ? { lastActiveTime: lastActive } : {}),
      createdAt: Number.isFinite(created) ? created : now,
      now,
      scaleTargetKind: typeof status.scaleTargetKind === "string"
        ? status.scaleTargetKind
        : "apps/v1.Deployment",
      externalMetricNames: Array.isArray(status.externalMetricNames)
        ? status.externalMetricNames
        : [],
    });
    if (decision.scaleTo !== undefined && decision.scaleTo !== current) {
      await this.#do(
        `scale ${kind} ${ns}/${target} from ${current} to ${decision.scaleTo}`,
        () => this.#writer!.setScale(kind, ns, target, decision.scaleTo!),
      );
    }
    let conditions = initializedConditions(status.conditions);
    for (const c of decision.conditions) conditions = setCondition(conditions, c);
    const next: Loose = { ...status, triggersActivity: decision.triggersActivity };
    if (kedaHasValidFallback(so)) {
      conditions = setCondition(
        conditions,
        activity.fallback
          ? {
            type: "Fallback",
            status: "True",
            reason: "FallbackExists",
            message: "At least one trigger is falling back on this scaled object",
          }
          : {
            type: "Fallback",
            status: "False",
            reason: "NoFallbackFound",
            message: "No fallbacks are active on this scaled object",
          },
      );
      const health: Record<string, { numberOfFailures: number; status: string }> = {};
      for (const { metricName, r } of plansRead) {
        if (r === undefined) continue;
        health[metricName] = {
          numberOfFailures: r.failures,
          status: r.failures > 0 ? "Failing" : "Happy",
        };
      }
      next.health = health;
    }
    // HPAActive mirrors the HPA's ScalingActive condition (left as it is when not known)
    const hpa = this.#cluster.get("HorizontalPodAutoscaler", ns, e.hpaName);
    const sa = (hpa?.status?.conditions ?? []).find((c: Loose) => c?.type === "ScalingActive");
    if (sa) {
      conditions = setCondition(
        conditions,
        sa.status === "True"
          ? {
            type: "HPAActive",
            status: "True",
            reason: "HPAActive",
            message: "HPA is actively scaling",
          }
          : sa.reason === "ScalingDisabled"
          ? {
            type: "HPAActive",
            status: "True",
            reason: "ScalingDisabled",
            message: String(sa.message ?? ""),
          }
          : {
            type: "HPAActive",
            status: "False",
            reason: sa.reason || "HPAMetricsUnavailable",
            message: `HPA is not actively scaling: ${sa.message ?? ""}`,
          },
      );
    }
    next.conditions = conditions;
    if (decision.lastActiveTime !== undefined) {
      next.lastActiveTime = new Date(Math.floor(decision.lastActiveTime / 1000) * 1000)
        .toISOString().replace(".000Z", "Z");
    }
    if (decision.event) this.#emit(obj, decision.event);
    await this.#writeLoopStatus(obj, next);
  }

  async #writeLoopStatus(obj: KubeObject, status: Loose): Promise<void> {
    if (sameJson(status, obj.status ?? {})) return;
    const ns = obj.metadata.namespace ?? "default";
    await this.#do(
      `update status of ScaledObject ${ns}/${obj.metadata.name}`,
      () => this.#writer!.updateStatus("ScaledObject", ns, obj.metadata.name, status),
    );
  }

  /** An event every time (the loop's events are each an action). */
  #emit(obj: KubeObject, event: KedaEvent): void {
    if (!this.#writer || !this.#write || !this.#isLeader()) return;
    this.#writer.emitEvent("ScaledObject", obj, event).catch((e) =>
      this.#log.error("failed to write event", {
        scaledObject: `${obj.metadata.namespace ?? "default"}/${obj.metadata.name}`,
        error: errorText(e),
      })
    );
  }

  /**
   * KEDA's operator labels each ScaledObject it reconciles with its name and gives it its
   * finalizer (leader); one patch, with the resourceVersion it read (the finalizers are a list).
   */
  async #label(obj: KubeObject): Promise<void> {
    const name = obj.metadata.name;
    if (!this.#isLeader()) return;
    const finalizers: string[] = Array.isArray(obj.metadata.finalizers)
      ? obj.metadata.finalizers as string[]
      : [];
    const meta: Record<string, unknown> = {};
    if (obj.metadata.labels?.[KEDA_SCALED_OBJECT_LABEL] !== name) {
      meta.labels = { [KEDA_SCALED_OBJECT_LABEL]: name };
    }
    if (!finalizers.includes(KEDA_FINALIZER)) meta.finalizers = [...finalizers, KEDA_FINALIZER];
    if (Object.keys(meta).length === 0) return;
    if (meta.finalizers && obj.metadata.resourceVersion) {
      meta.resourceVersion = obj.metadata.resourceVersion;
    }
    await this.#patch("ScaledObject", obj.metadata.namespace ?? "default", name, {
      metadata: meta,
    });
  }

  /**
   * A deleted ScaledObject with KEDA's finalizer (leader): the loop stopped, the target back to
   * `originalReplicaCount` with `advanced.restoreToOriginalReplicaCount`, the finalizer removed.
   * One whose HPA keda-operator manages is KEDA's to finalize.
   */
  async #finalize(obj: KubeObject): Promise<void> {
    const finalizers: string[] = Array.isArray(obj.metadata.finalizers)
      ? obj.metadata.finalizers as string[]
      : [];
    if (!finalizers.includes(KEDA_FINALIZER) || !this.#isLeader() || !this.#writer) return;
    const ns = obj.metadata.namespace ?? "default";
    const name = obj.metadata.name;
    const status = (obj.status ?? {}) as Loose;
    if (typeof status.hpaName === "string") {
      const hpa = this.#cluster.get("HorizontalPodAutoscaler", ns, status.hpaName);
      if (hpa?.metadata.labels?.["app.kubernetes.io/managed-by"] === KEDA_OPERATOR) return;
    }
    const restore = (obj.spec as Loose)?.advanced?.restoreToOriginalReplicaCount === true;
    const kind = status.scaleTargetGVKR?.kind as Kind | undefined;
    const target = (obj.spec as Loose)?.scaleTargetRef?.name;
    if (
      restore && kind && typeof target === "string" &&
      typeof status.originalReplicaCount === "number" &&
      Object.hasOwn(KIND_RESOURCES, kind) && KIND_RESOURCES[kind].scale
    ) {
      await this.#do(
        `restore ${kind} ${ns}/${target} to its original ${status.originalReplicaCount} replicas`,
        () => this.#writer!.setScale(kind, ns, target, status.originalReplicaCount),
      );
    }
    await this.#patch("ScaledObject", ns, name, {
      metadata: {
        finalizers: finalizers.filter((f) => f !== KEDA_FINALIZER),
        ...(obj.metadata.resourceVersion ? { resourceVersion: obj.metadata.resourceVersion } : {}),
      },
    });
  }

  async #ensureHpa(obj: KubeObject, so: ScaledObject, want: KedaHpa): Promise<void> {
    if (!this.#isLeader()) return;
    const ns = want.metadata.namespace;
    const name = want.metadata.name;
    // a renamed HPA: the old one goes (when this ScaledObject controls it)
    const old = (obj.status as Loose)?.hpaName;
    if (typeof old === "string" && old !== "" && old !== name) {
      const prev = this.#cluster.get("HorizontalPodAutoscaler", ns, old);
      const ref = prev ? controllerRef(prev) : undefined;
      if (prev && ref?.kind === "ScaledObject" && ref.name === so.metadata.name) {
        await this.#do(
          `delete HorizontalPodAutoscaler ${ns}/${old}`,
          () => this.#writer!.delete("HorizontalPodAutoscaler", ns, old),
        );
      }
    }
    const found = this.#cluster.get("HorizontalPodAutoscaler", ns, name);
    if (!found) {
      await this.#do(
        `create HorizontalPodAutoscaler ${ns}/${name}`,
        () => this.#writer!.create("HorizontalPodAutoscaler", want as unknown as KubeObject),
      );
      return;
    }
    const updates = kedaHpaUpdates(want, found as Loose);
    const patch: Record<string, unknown> = {};
    const meta: Record<string, unknown> = {};
    if (updates.labels) {
      meta.labels = replacingMergePatch(found.metadata.labels ?? {}, want.metadata.labels);
    }
    if (updates.annotations) {
      meta.annotations = replacingMergePatch(
        found.metadata.annotations ?? {},
        want.metadata.annotations ?? {},
      );
    }
    if (Object.keys(meta).length > 0) patch.metadata = meta;
    if (updates.spec) {
      const spec: Record<string, unknown> = { ...want.spec };
      for (const k of Object.keys(found.spec ?? {})) if (!(k in spec)) spec[k] = null;
      patch.spec = spec;
    }
    if (Object.keys(patch).length === 0) return;
    await this.#do(
      `update HorizontalPodAutoscaler ${ns}/${name}`,
      () => this.#writer!.patch("HorizontalPodAutoscaler", ns, name, patch),
    );
  }

  /** The status after a reconcile that made `result`, written when it changed. */
  async #setStatus(
    obj: KubeObject,
    result: KedaHpaResult,
    so: ScaledObject | null,
    target: { kind: string; gvkr: ReturnType<typeof kedaScaleTarget>; replicas?: number } | null,
  ): Promise<void> {
    const current = (obj.status ?? {}) as Loose;
    let conditions: KedaCondition[];
    let event: KedaEvent | null;
    const key = `${obj.metadata.namespace ?? "default"}/${obj.metadata.name}`;
    const outcome = "error" in result ? result.error : "ok";
    const unchanged = this.#outcomes.get(key) === outcome &&
      Array.isArray(current.conditions) && current.conditions.length > 0;
    this.#outcomes.set(key, outcome);
    if (so && unchanged) {
      // the reconcile's conditions are written when its outcome changes; in between the scale
      // loop owns them (as KEDA's operator reconciles on changes, not every resync)
      conditions = initializedConditions(current.conditions);
      event = null;
    } else if (so) {
      ({ conditions, event } = kedaReconciledConditions(so, current.conditions, result));
    } else {
      const message = "error" in result ? result.error : "";
      conditions = [
        { type: "Ready", status: "False", reason: "ScaledObjectCheckFailed", message },
        {
          type: "Active",
          status: "Unknown",
          reason: "UnknownState",
          message: "ScaledObject check failed",
        },
        { type: "Fallback", status: "Unknown" },
        { type: "Paused", status: "False" },
      ];
      event = { type: "Warning", reason: "ScaledObjectCheckFailed", message };
    }
    if (so) {
      // pause-scale-in/out pause one way and keep the HPA; a removed pause is said once
      const wasPaused = conditions.some((c) => c.type === "Paused" && c.status === "True");
      if (
        kedaBoolAnnotation(so, KEDA_PAUSED_SCALE_IN) ||
        kedaBoolAnnotation(so, KEDA_PAUSED_SCALE_OUT)
      ) {
        conditions = setCondition(conditions, {
          type: "Paused",
          status: "True",
          reason: "ScaledObjectPaused",
          message: "ScaledObject is paused",
        });
        if (!wasPaused) {
          this.#emit(obj, {
            type: "Normal",
            reason: "ScaledObjectPaused",
            message: "ScaledObject is paused",
          });
        }
      } else if (wasPaused) {
        const message = "pause annotation removed for ScaledObject";
        conditions = setCondition(conditions, {
          type: "Paused",
          status: "False",
          reason: "ScaledObjectUnpaused",
          message,
        });
        this.#emit(obj, { type: "Normal", reason: "ScaledObjectUnpaused", message });
      }
    }
    const status: Loose = { ...current, conditions };
    if (so && !conditions.some((c) => c.type === "Paused" && c.status === "True")) {
      delete status.pausedReplicaCount;
    }
    if (target) {
      status.scaleTargetKind = target.kind;
      status.scaleTargetGVKR = target.gvkr;
      if (status.originalReplicaCount === undefined && target.replicas !== undefined) {
        status.originalReplicaCount = target.replicas;
      }
    }
    // KEDA writes the trigger types before its HPA step: an error there still has them
    if (so && "error" in result && result.error.startsWith(HPA_FAILED)) {
      Object.assign(status, kedaTypesStatus(so));
    }
    if (so && !("error" in result)) {
      const s = result.status;
      status.triggersTypes = s.triggersTypes;
      status.authenticationsTypes = s.authenticationsTypes;
      if (s.externalMetricNames.length > 0) status.externalMetricNames = s.externalMetricNames;
      else delete status.externalMetricNames;
      if (s.resourceMetricNames.length > 0) status.resourceMetricNames = s.resourceMetricNames;
      else delete status.resourceMetricNames;
      if (s.compositeScalerName) status.compositeScalerName = s.compositeScalerName;
      status.hpaName = s.hpaName;
    }
    for (const k of Object.keys(status)) if (status[k] === undefined) delete status[k];
    if (event) this.#event(obj, event);
    if (sameJson(status, current) || !this.#isLeader()) return;
    const ns = obj.metadata.namespace ?? "default";
    await this.#do(
      `update status of ScaledObject ${ns}/${obj.metadata.name}`,
      () => this.#writer!.updateStatus("ScaledObject", ns, obj.metadata.name, status),
    );
  }

  async #patch(kind: Kind, ns: string, name: string, patch: unknown): Promise<void> {
    await this.#do(`patch ${kind} ${ns}/${name}`, () => this.#writer!.patch(kind, ns, name, patch));
  }

  /** A write on the leader in cluster mode; logged (not done) in file mode. */
  async #do(what: string, write: () => Promise<unknown>): Promise<void> {
    if (!this.#write || !this.#writer) {
      this.#log.info(`keda: would ${what} (file mode)`);
      return;
    }
    try {
      await write();
      this.#log.info(`keda: ${what}`);
    } catch (e) {
      this.#log.error(`keda: cannot ${what}`, { error: errorText(e) });
    }
  }

  /** An event on the ScaledObject, once per change of its message for that reason (leader). */
  #event(obj: KubeObject, event: KedaEvent): void {
    const key = `${obj.metadata.namespace ?? "default"}/${obj.metadata.name}|${event.reason}`;
    if (this.#said.get(key) === event.message) return;
    this.#said.set(key, event.message);
    if (event.type === "Warning") {
      this.#log.warn("keda ScaledObject", {
        scaledObject: key.split("|")[0],
        error: event.message,
      });
    }
    if (!this.#writer || !this.#write || !this.#isLeader()) return;
    this.#writer.emitEvent("ScaledObject", obj, event).catch((e) =>
      this.#log.error("failed to write event", { scaledObject: key, error: errorText(e) })
    );
  }
}
