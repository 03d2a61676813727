/**
 * The Knative HPA-class reconciler of issue 23 (`--knative-autoscaler`): PodAutoscalers of
 * class `hpa.autoscaling.knative.dev` get the ScaledObject autoscaler-keda would create for them
 * (in memory only: core/knative/mapping.ts), and from it what KEDA makes of it (issue 47, point
 * 6: core/keda/): an HPA named after the PA and owned by it, with KEDA's metric names, selector
 * and targets, whose metrics this adapter collects and serves as for its own ScaledObjects (the
 * plans of core/keda/plan.ts through the engine, the answers of api/keda_metrics.ts); a
 * ServerlessService in Serve mode; and the PA's status (core/knative/status.ts). Deployments and
 * StatefulSets that carry the class annotation in their own metadata get the same HPA, owned by
 * the workload, and lose it when the annotation goes.
 *
 * - A queue of keys fed by the watches of PAs, HPAs, SKSs and workloads, and a resync of
 *   everything every `resyncSeconds`. One key at a time.
 * - On every replica: the ScaledObject, its triggers' parameters (as KEDA resolves them:
 *   controllers/keda_resolver.ts, the bearer token of a TriggerAuthentication among them, read
 *   again on every reconcile) and its plans, so that any replica serves the metrics.
 * - Leader only, writes: create when missing; a JSON merge patch when what we set differs
 *   (fields the API server adds are not a difference); the PA status only when it changes. In
 *   file mode (`write: false`) decisions are logged.
 * - Errors reach the user where they look: an `InvalidConfiguration` condition on the PA, a
 *   Warning event on the workload, naming the annotation and the value.
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
  type KubeObject,
} from "../cluster/types.ts";
import type { KedaResolvedTrigger, KedaTriggerSource } from "../collectors/keda.ts";
import { errorText } from "../engine/error_text.ts";
import {
  isKnativeHpaClass,
  type KnativeConfig,
  type KnativeHpa,
  knativeHpaOf,
  type KnativeMappingError,
  knativeScaledObjectFor,
} from "../core/knative/mapping.ts";
import {
  desiredSks,
  type PaProblem,
  paStatusChanged,
  paStatusFor,
} from "../core/knative/status.ts";
import { HPA_FAILED } from "../core/keda/hpa.ts";
import { KEDA_COMPOSITE_METRIC } from "../core/keda/names.ts";
import { kedaPlans } from "../core/keda/plan.ts";
import { kedaUsesModifiers } from "../core/keda/scaled_object.ts";
import { readTrigger, TriggerError } from "../core/keda/triggers.ts";
import type { EndpointPolicy } from "../core/endpoint_policy.ts";
import type { PromQLScoper } from "../core/kube_metrics_adapter/collector_config.ts";
import type { MetricPlan } from "../core/types.ts";
import type { KedaServingSource } from "../api/metric_read.ts";
import type { Logger } from "../engine/logger.ts";
import { silentLogger } from "../engine/logger.ts";
import { podIdentityContext, resolveKedaParams } from "./keda_resolver.ts";

/** The label that marks the HPAs this reconciler made (only those are ever deleted). */
export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
/** Its value. */
export const MANAGED_BY = "hpa-metrics-adapter";

/** Warning event reason on a workload whose annotations do not make an HPA. */
export const KNATIVE_INVALID_REASON = "InvalidAutoscalingAnnotations";

const WORKLOAD_KINDS: readonly Kind[] = ["Deployment", "StatefulSet"];

/** Options of {@linkcode KnativeReconciler}. */
export interface KnativeReconcilerOptions {
  cluster: ClusterView;
  /** Reads (TriggerAuthentications, Secrets), creates, patches, status and events. */
  writer?: ClusterWriter;
  /** Write (cluster mode); false logs the decisions (file mode). */
  write: boolean;
  /** The mapping's configuration (the Prometheus address, config-autoscaler defaults). */
  config: KnativeConfig;
  /** `app.kubernetes.io/version` of the HPAs (this adapter's version). */
  version: string;
  /** The namespace of the Secrets a ClusterTriggerAuthentication names (KEDA's: "keda"). */
  clusterTriggerAuthNamespace?: string;
  /** Where a prometheus trigger's server may point (`--allowed-metric-endpoints` ...). */
  endpointPolicy?: EndpointPolicy;
  /** `--prometheus-enforce-namespace-label`: the triggers' queries scoped to the namespace. */
  scopePromQL?: PromQLScoper;
  /** Called when the plans of an HPA change (the engine plans it again). */
  onPlansChanged?: (namespace: string, hpaName: string) => void;
  /** Also map annotated Deployments and StatefulSets (default true). */
  workloads?: boolean;
  /** Full resync period, seconds (30). */
  resyncSeconds?: number;
  now?: () => number;
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (handle: unknown) => void;
  logger?: Logger;
  isLeader?: () => boolean;
}

/** The in-memory ScaledObject of one source and what KEDA makes of it. */
interface Entry {
  /** The source's kind (the HPA's controller). */
  kind: Kind;
  result: KnativeHpa;
  triggers: (KedaResolvedTrigger | undefined)[];
  /** The digest of the whole entry (plans change when it does). */
  digest: string;
}

function isHpaClass(obj: KubeObject | undefined): boolean {
  return obj !== undefined && isKnativeHpaClass(obj);
}

/** Whether `obj` is controlled by `owner` (by uid when both have one, else kind and name). */
function controlledBy(obj: KubeObject, owner: KubeObject, ownerKind: string): boolean {
  const ref = controllerRef(obj);
  if (!ref || ref.kind !== ownerKind || ref.name !== owner.metadata.name) return false;
  return !ref.uid || !owner.metadata.uid || ref.uid === owner.metadata.uid;
}

/** Every key and value of `want` is in `have` (arrays: same length, each element so). */
function contains(have: unknown, want: unknown): boolean {
  if (Array.isArray(want)) {
    return Array.isArray(have) && have.length === want.length &&
      want.every((w, i) => contains(have[i], w));
  }
  if (typeof want === "object" && want !== null) {
    if (typeof have !== "object" || have === null || Array.isArray(have)) return false;
    const h = have as Record<string, unknown>;
    return Object.entries(want).every(([k, v]) => contains(h[k], v));
  }
  return have === want;
}

function sameMap(a: Record<string, string> | undefined, b: Record<string, string> | undefined) {
  const x = a ?? {};
  const y = b ?? {};
  const kx = Object.keys(x);
  return kx.length === Object.keys(y).length && kx.every((k) => y[k] === x[k]);
}

/**
 * The merge patch that makes `current` carry what `desired` sets, or null when it does:
 * labels and annotations exactly, the spec's fields as given (fields the API server defaulted
 * are no difference; a top-level spec field we no longer set is removed).
 */
export function hpaPatch(current: KubeObject, desired: KubeObject): unknown | null {
  const patch: Record<string, unknown> = {};
  const meta: Record<string, unknown> = {};
  if (!sameMap(current.metadata.labels, desired.metadata.labels)) {
    meta.labels = replacingMergePatch(current.metadata.labels ?? {}, desired.metadata.labels ?? {});
  }
  if (!sameMap(current.metadata.annotations, desired.metadata.annotations)) {
    meta.annotations = replacingMergePatch(
      current.metadata.annotations ?? {},
      desired.metadata.annotations ?? {},
    );
  }
  if (Object.keys(meta).length > 0) patch.metadata = meta;
  const have = (current.spec ?? {}) as Record<string, unknown>;
  const want = (desired.spec ?? {}) as Record<string, unknown>;
  const gone = Object.keys(have).filter((k) => !(k in want));
  if (!contains(have, want) || gone.length > 0) {
    const spec: Record<string, unknown> = { ...want };
    for (const k of gone) spec[k] = null;
    patch.spec = spec;
  }
  return Object.keys(patch).length > 0 ? patch : null;
}

/** Reconciles HPA-class PodAutoscalers and annotated workloads; see the module documentation. */
export class KnativeReconciler implements KedaTriggerSource, KedaServingSource {
  readonly #cluster: ClusterView;
  readonly #writer?: ClusterWriter;
  readonly #write: boolean;
  readonly #config: KnativeConfig;
  readonly #version: string;
  readonly #clusterAuthNamespace: string;
  readonly #endpointPolicy?: EndpointPolicy;
  readonly #scopePromQL?: PromQLScoper;
  readonly #onPlansChanged: (namespace: string, hpaName: string) => void;
  readonly #workloads: boolean;
  readonly #resyncMs: number;
  readonly #now: () => number;
  readonly #setTimer: (fn: () => void, ms: number) => unknown;
  readonly #clearTimer: (handle: unknown) => void;
  readonly #log: Logger;
  readonly #isLeader: () => boolean;
  readonly #queue = new Set<string>();
  /** The ScaledObject of each source that makes an HPA, by `namespace/name`. */
  readonly #entries = new Map<string, Entry>();
  /** A key of this process for digests of parameters (secrets are never hashed bare). */
  readonly #digestKey = randomBytes(32);
  /** The last Warning message per workload (and logged problem per PA), once per change. */
  readonly #said = new Map<string, string>();
  #unwatch: (() => void)[] = [];
  #timer: unknown = null;
  #draining: Promise<void> | null = null;
  #stopped = false;

  /** Creates a reconciler; nothing happens until {@linkcode KnativeReconciler.start}. */
  constructor(options: KnativeReconcilerOptions) {
    this.#cluster = options.cluster;
    this.#writer = options.writer;
    this.#write = options.write;
    this.#config = options.config;
    this.#version = options.version;
    this.#clusterAuthNamespace = options.clusterTriggerAuthNamespace ?? "keda";
    this.#endpointPolicy = options.endpointPolicy;
    this.#scopePromQL = options.scopePromQL;
    this.#onPlansChanged = options.onPlansChanged ?? (() => {});
    this.#workloads = options.workloads ?? true;
    this.#resyncMs = (options.resyncSeconds ?? 30) * 1000;
    this.#now = options.now ?? (() => Date.now());
    this.#setTimer = options.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
    this.#clearTimer = options.clearTimer ??
      ((h) => clearTimeout(h as ReturnType<typeof setTimeout>));
    this.#log = options.logger ?? silentLogger();
    this.#isLeader = options.isLeader ?? (() => true);
  }

  /** Watch the kinds, reconcile everything, then on changes and every resync period. */
  async start(): Promise<void> {
    const kinds: Kind[] = [
      "PodAutoscaler",
      "ServerlessService",
      "HorizontalPodAutoscaler",
      ...(this.#workloads ? WORKLOAD_KINDS : []),
    ];
    for (const kind of kinds) {
      this.#unwatch.push(this.#cluster.watch(kind, (_type, obj) => this.#changed(kind, obj)));
    }
    await Promise.all(kinds.map((k) => this.#cluster.ensure(k)));
    if (this.#stopped) return;
    const loop = (): void => {
      if (this.#stopped) return;
      this.#timer = this.#setTimer(loop, this.#resyncMs);
      this.resync();
    };
    loop();
  }

  /** Stop watching; waits for the key being reconciled. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) this.#clearTimer(this.#timer);
    this.#timer = null;
    for (const u of this.#unwatch.splice(0)) u();
    this.#queue.clear();
    await this.#draining?.catch(() => {});
  }

  /** Queue every PA and workload of the class (and every HPA this reconciler made). */
  resync(): void {
    for (const pa of this.#cluster.list("PodAutoscaler")) this.#enqueue("PodAutoscaler", pa);
    if (this.#workloads) {
      for (const kind of WORKLOAD_KINDS) {
        for (const w of this.#cluster.list(kind)) this.#enqueue(kind, w);
      }
    }
  }

  /** Resolves when the queue is empty (tests). */
  async idle(): Promise<void> {
    while (this.#draining) await this.#draining;
  }

  /**
   * The resolved trigger `index` of the Knative ScaledObject `key` (`ns/name`), for the KEDA
   * collectors.
   */
  trigger(key: string, index: number): KedaResolvedTrigger | undefined {
    return this.#entries.get(key)?.triggers[index];
  }

  /** The Knative ScaledObject `name` of `namespace`, as the KEDA serving path needs it. */
  scaledObject(
    namespace: string,
    name: string,
  ): { hpaName: string; metricNames: string[]; composite?: boolean } | undefined {
    const e = this.#entries.get(`${namespace}/${name}`);
    if (!e) return undefined;
    const composite = e.result.status.compositeScalerName !== undefined;
    return {
      hpaName: e.result.hpa.metadata.name,
      metricNames: composite ? [KEDA_COMPOSITE_METRIC] : e.result.status.externalMetricNames,
      ...(composite ? { composite } : {}),
    };
  }

  /** The ScaledObject behind `hpa` (`ns/name`) when it is a Knative one of ours (tests, status). */
  scaledObjectOf(hpa: KubeObject): KnativeHpa | undefined {
    return this.#entryOf(hpa)?.result;
  }

  /**
   * The plans of `hpa` when this reconciler made it (the KEDA plans of its ScaledObject; none
   * while that is not known on this replica); undefined for every other HPA.
   */
  plansFor(hpa: KubeObject): { plans: MetricPlan[]; inputs: string } | undefined {
    const ref = controllerRef(hpa);
    const kind = ref?.kind as Kind | undefined;
    if (kind !== "PodAutoscaler" && !(kind && WORKLOAD_KINDS.includes(kind))) return undefined;
    if (hpa.metadata.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY) return undefined;
    const e = this.#entryOf(hpa);
    if (!e) return { plans: [], inputs: "knative:none" };
    const plans = kedaPlans(e.result.scaledObject, {
      hpaName: hpa.metadata.name,
      hpaMetrics: Array.isArray(hpa.spec?.metrics) ? hpa.spec.metrics : [],
      metrics: e.result.metrics,
      paramsDigest: e.triggers.map((t) => t?.digest ?? ""),
    });
    return { plans, inputs: `knative:${e.digest}` };
  }

  /** The entry whose HPA `hpa` is (same name, controlled by the entry's source). */
  #entryOf(hpa: KubeObject): Entry | undefined {
    const ns = hpa.metadata.namespace ?? "default";
    const ref = controllerRef(hpa);
    if (!ref) return undefined;
    const e = this.#entries.get(`${ns}/${ref.name}`);
    if (!e || e.kind !== ref.kind || e.result.hpa.metadata.name !== hpa.metadata.name) {
      return undefined;
    }
    const uid = e.result.owner.uid;
    return !ref.uid || !uid || ref.uid === uid ? e : undefined;
  }

  #changed(kind: Kind, obj: KubeObject): void {
    if (this.#stopped) return;
    if (kind === "PodAutoscaler" || WORKLOAD_KINDS.includes(kind)) {
      this.#enqueue(kind, obj);
      return;
    }
    // an HPA or SKS: its owner, or the PA or workload of its name
    const ref = controllerRef(obj);
    const ns = obj.metadata.namespace ?? "default";
    const ownerKind = ref?.kind as Kind | undefined;
    if (ownerKind === "PodAutoscaler" || (ownerKind && WORKLOAD_KINDS.includes(ownerKind))) {
      this.#queue.add(`${ownerKind}/${ns}/${ref!.name}`);
    } else if (kind === "HorizontalPodAutoscaler") {
      // a PA that brings its own HPA (auto-create off) or a foreign HPA of a PA's name
      if (this.#cluster.get("PodAutoscaler", ns, obj.metadata.name)) {
        this.#queue.add(`PodAutoscaler/${ns}/${obj.metadata.name}`);
      }
    }
    this.#drain();
  }

  #enqueue(kind: Kind, obj: KubeObject): void {
    this.#queue.add(`${kind}/${obj.metadata.namespace ?? "default"}/${obj.metadata.name}`);
    this.#drain();
  }

  #drain(): void {
    if (this.#draining || this.#stopped) return;
    this.#draining = (async () => {
      await undefined;
      try {
        while (this.#queue.size > 0 && !this.#stopped) {
          const key = this.#queue.values().next().value as string;
          this.#queue.delete(key);
          const [kind, ns, name] = key.split("/") as [Kind, string, string];
          try {
            if (kind === "PodAutoscaler") await this.#reconcilePa(ns, name);
            else await this.#reconcileWorkload(kind, ns, name);
          } catch (e) {
            this.#log.error("knative reconcile failed", { key, error: errorText(e) });
          }
        }
      } finally {
        this.#draining = null;
      }
    })();
  }

  #digest(value: unknown): string {
    return createHmac("sha256", this.#digestKey).update(JSON.stringify(value)).digest("hex")
      .slice(0, 16);
  }

  #read(kind: Kind, ns: string | undefined, name: string): Promise<KubeObject | null> {
    if (!this.#writer) return Promise.resolve(this.#cluster.get(kind, ns, name) ?? null);
    return this.#writer.read(kind, ns, name);
  }

  /** Drop the entry of `key` (`ns/name`): its HPA is planned again (with no plans). */
  #forget(key: string): void {
    const e = this.#entries.get(key);
    if (!e) return;
    this.#entries.delete(key);
    this.#onPlansChanged(key.slice(0, key.indexOf("/")), e.result.hpa.metadata.name);
  }

  /**
   * The ScaledObject of `source` and what KEDA makes of it with its triggers' parameters
   * resolved as KEDA resolves them (on every reconcile: a rotated Secret is picked up); kept as
   * the entry whose plans the engine collects, when the HPA is to be made.
   */
  async #desired(
    source: KubeObject,
    kind: Kind,
  ): Promise<KnativeHpa | KnativeMappingError | { autoCreate: false; minScale: number }> {
    const ns = source.metadata.namespace ?? "default";
    const key = `${ns}/${source.metadata.name}`;
    const mapped = knativeScaledObjectFor(source, this.#config, {
      kind: kind as "PodAutoscaler" | "Deployment" | "StatefulSet",
      ...(this.#endpointPolicy ? { endpointPolicy: this.#endpointPolicy } : {}),
      ...(this.#scopePromQL ? { scopePromQL: this.#scopePromQL } : {}),
    });
    if ("error" in mapped || !mapped.autoCreate) {
      // no HPA of ours (an error, or the user's own ScaledObject or HPA)
      this.#forget(key);
      return "error" in mapped ? mapped : { autoCreate: false, minScale: mapped.minScale };
    }
    const so = mapped.scaledObject;
    const resolved = await resolveKedaParams(
      so,
      (k, n, m) => this.#read(k, n, m),
      this.#clusterAuthNamespace,
    );
    let result = knativeHpaOf(mapped, {
      version: this.#version,
      params: resolved.params,
      podIdentities: resolved.podIdentities,
    });
    const envError = resolved.errors.findIndex((x) => x !== undefined);
    if (!("error" in result) && envError >= 0) {
      const from = mapped.triggerSources[envError];
      result = {
        autoCreate: mapped.autoCreate,
        minScale: mapped.minScale,
        initialScale: mapped.initialScale,
        warnings: mapped.warnings,
        error:
          `trigger ${envError} of the ScaledObject (annotation ${from.annotation}): ${HPA_FAILED}${
            resolved.errors[envError]
          }`,
        annotation: from.annotation,
        ...(from.value !== undefined ? { value: from.value } : {}),
      };
    }
    if ("error" in result) {
      this.#forget(key);
      return result;
    }
    const triggers = so.spec.triggers.map((t, i): KedaResolvedTrigger | undefined => {
      try {
        const { values } = readTrigger(t.type, resolved.params[i], {
          modifiers: kedaUsesModifiers(so),
          ...(t.metricType !== undefined ? { metricType: t.metricType } : {}),
          ...podIdentityContext(resolved, i),
        });
        return {
          type: t.type,
          values,
          digest: this.#digest([t.type, resolved.params[i], resolved.podIdentityRoles[i] ?? null]),
        };
      } catch (e) {
        if (e instanceof TriggerError) return undefined;
        throw e;
      }
    });
    const digest = this.#digest([result.scaledObject, result.hpa, triggers.map((t) => t?.digest)]);
    const before = this.#entries.get(key);
    this.#entries.set(key, { kind, result, triggers, digest });
    const hpaName = result.hpa.metadata.name;
    if (before && before.result.hpa.metadata.name !== hpaName) {
      this.#onPlansChanged(ns, before.result.hpa.metadata.name);
    }
    if (before?.digest !== digest) this.#onPlansChanged(ns, hpaName);
    return result;
  }

  async #reconcilePa(ns: string, name: string): Promise<void> {
    const pa = this.#cluster.get("PodAutoscaler", ns, name);
    if (!pa || pa.metadata.deletionTimestamp || !isHpaClass(pa)) {
      this.#forget(`${ns}/${name}`);
      return;
    }
    const key = `PodAutoscaler/${ns}/${name}`;
    const desired = await this.#desired(pa, "PodAutoscaler");
    // every replica serves the metrics; only the leader writes
    if (!this.#isLeader()) return;
    let problem: PaProblem | undefined;
    let hpa = this.#cluster.get("HorizontalPodAutoscaler", ns, name) ?? null;
    const minScale = desired.minScale ?? 0;
    if ("error" in desired) {
      problem = { kind: "invalid", message: desired.error };
      this.#sayOnce(key, `invalid annotations of PodAutoscaler ${ns}/${name}: ${desired.error}`);
    } else if (desired.autoCreate) {
      const want = desired.hpa as unknown as KubeObject;
      if (!hpa) {
        try {
          hpa = await this.#create("HorizontalPodAutoscaler", want);
        } catch (e) {
          problem = { kind: "failed-create", resource: "HorizontalPodAutoscaler", name };
          this.#log.error("cannot create the HPA of a PodAutoscaler", {
            pa: `${ns}/${name}`,
            error: errorText(e),
          });
        }
      } else if (!controlledBy(hpa, pa, "PodAutoscaler")) {
        problem = { kind: "not-owned", resource: "HorizontalPodAutoscaler", name };
        this.#sayOnce(
          key,
          `PodAutoscaler ${ns}/${name} does not own HorizontalPodAutoscaler ${ns}/${name}: left alone`,
        );
        hpa = null;
      } else await this.#update(hpa, want);
    }
    let sks = this.#cluster.get("ServerlessService", ns, name) ?? null;
    if (!problem) {
      const want = desiredSks(pa as Parameters<typeof desiredSks>[0]) as unknown as KubeObject;
      if (!sks) {
        try {
          sks = await this.#create("ServerlessService", want);
        } catch (e) {
          problem = { kind: "failed-create", resource: "ServerlessService", name };
          this.#log.error("cannot create the ServerlessService of a PodAutoscaler", {
            pa: `${ns}/${name}`,
            error: errorText(e),
          });
        }
      } else if (!controlledBy(sks, pa, "PodAutoscaler")) {
        problem = { kind: "not-owned", resource: "ServerlessService", name };
        sks = null;
      } else if (!contains(sks.spec, want.spec)) {
        await this.#patch("ServerlessService", ns, name, { spec: want.spec });
      }
    }
    if (!problem) this.#said.delete(key);
    const status = paStatusFor({
      pa: pa as Parameters<typeof paStatusFor>[0]["pa"],
      hpa: hpa as Parameters<typeof paStatusFor>[0]["hpa"],
      sks: sks as Parameters<typeof paStatusFor>[0]["sks"],
      problem,
      minScale,
      initialScaleDefault: this.#config.initialScale,
      allowZeroInitialScale: this.#config.allowZeroInitialScale,
      now: this.#now(),
    });
    if (!paStatusChanged(pa.status, status)) return;
    if (!this.#write || !this.#writer) {
      this.#log.info("knative PodAutoscaler status (not written: file mode)", {
        pa: `${ns}/${name}`,
        status,
      });
      return;
    }
    await this.#writer.updateStatus("PodAutoscaler", ns, name, { ...(pa.status ?? {}), ...status });
  }

  async #reconcileWorkload(kind: Kind, ns: string, name: string): Promise<void> {
    const workload = this.#cluster.get(kind, ns, name);
    const key = `${kind}/${ns}/${name}`;
    const hpa = this.#cluster.get("HorizontalPodAutoscaler", ns, name) ?? null;
    const ours = hpa !== null && workload !== undefined &&
      controlledBy(hpa, workload, kind) &&
      hpa.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY;
    if (!workload || workload.metadata.deletionTimestamp) {
      if (this.#entries.get(`${ns}/${name}`)?.kind === kind) this.#forget(`${ns}/${name}`);
      return;
    }
    if (!isHpaClass(workload)) {
      if (this.#entries.get(`${ns}/${name}`)?.kind === kind) this.#forget(`${ns}/${name}`);
      if (!this.#isLeader()) return;
      this.#said.delete(key);
      // the class annotation went: the HPA we made for it goes too
      if (ours) {
        if (!this.#write || !this.#writer) {
          this.#log.info("knative HPA would be deleted (file mode)", { hpa: `${ns}/${name}` });
          return;
        }
        await this.#writer.delete("HorizontalPodAutoscaler", ns, name);
        this.#log.info("deleted the HPA of a workload without the class annotation", {
          hpa: `${ns}/${name}`,
        });
      }
      return;
    }
    const desired = await this.#desired(workload, kind);
    if (!this.#isLeader()) return;
    if ("error" in desired) {
      this.#warn(workload, kind, `invalid autoscaling annotations: ${desired.error}`);
      return;
    }
    if (!desired.autoCreate) return;
    const want = desired.hpa as unknown as KubeObject;
    if (!hpa) {
      await this.#create("HorizontalPodAutoscaler", want).catch((e) =>
        this.#warn(
          workload,
          kind,
          `cannot create HorizontalPodAutoscaler "${name}": ${errorText(e)}`,
        )
      );
    } else if (!ours) {
      this.#warn(
        workload,
        kind,
        `There is an existing HorizontalPodAutoscaler "${name}" that we do not own.`,
      );
      return;
    } else await this.#update(hpa, want);
    this.#said.delete(key);
  }

  async #create(kind: Kind, obj: KubeObject): Promise<KubeObject> {
    if (!this.#write || !this.#writer) {
      this.#log.info("knative object would be created (file mode)", {
        kind,
        name: `${obj.metadata.namespace}/${obj.metadata.name}`,
      });
      return obj;
    }
    const created = await this.#writer.create(kind, obj);
    this.#log.info("created", { kind, name: `${obj.metadata.namespace}/${obj.metadata.name}` });
    return created;
  }

  async #update(current: KubeObject, desired: KubeObject): Promise<void> {
    const patch = hpaPatch(current, desired);
    if (patch === null) return;
    await this.#patch(
      "HorizontalPodAutoscaler",
      current.metadata.namespace ?? "default",
      current.metadata.name,
      patch,
    );
  }

  async #patch(kind: Kind, ns: string, name: string, patch: unknown): Promise<void> {
    if (!this.#write || !this.#writer) {
      this.#log.info("knative object would be patched (file mode)", {
        kind,
        name: `${ns}/${name}`,
      });
      return;
    }
    await this.#writer.patch(kind, ns, name, patch);
    this.#log.info("updated", { kind, name: `${ns}/${name}` });
  }

  /** Log a PA's problem once per change. */
  #sayOnce(key: string, message: string): void {
    if (this.#said.get(key) === message) return;
    this.#said.set(key, message);
    this.#log.warn(message);
  }

  /** A Warning event on a workload, once per change of the message. */
  #warn(workload: KubeObject, kind: Kind, message: string): void {
    const key = `${kind}/${workload.metadata.namespace ?? "default"}/${workload.metadata.name}`;
    if (this.#said.get(key) === message) return;
    this.#said.set(key, message);
    this.#log.warn("knative workload", { workload: key, error: message });
    if (!this.#writer || !this.#isLeader()) return;
    this.#writer.emitEvent(kind, workload, {
      type: "Warning",
      reason: KNATIVE_INVALID_REASON,
      message,
    }).catch((e) =>
      this.#log.error("failed to write event", { workload: key, error: errorText(e) })
    );
  }
}
