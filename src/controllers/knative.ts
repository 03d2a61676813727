/**
 * The Knative HPA-class reconciler of issue 23 (`--knative-autoscaler`): PodAutoscalers of
 * class `hpa.autoscaling.knative.dev` get an HPA named after them and owned by them, built from
 * their `autoscaling.knative.dev/*` annotations as autoscaler-keda reads them (the pure mapping
 * of core/knative/mapping.ts), a ServerlessService in Serve mode, and their status (core/knative/status.ts).
 * Deployments and StatefulSets that carry the class annotation in their own metadata get the
 * same HPA, owned by the workload, and lose it when the annotation goes.
 *
 * - Leader only; a queue of keys fed by the watches of PAs, HPAs, SKSs and workloads, and a
 *   resync of everything every `resyncSeconds`. One key at a time.
 * - Writes: create when missing; a JSON merge patch when what we set differs (fields the API
 *   server adds are not a difference); the PA status only when it changes. In file mode
 *   (`write: false`) decisions are logged.
 * - Errors reach the user where they look: an `InvalidConfiguration` condition on the PA, a
 *   Warning event on the workload, naming the annotation and the value.
 */
import { replacingMergePatch } from "../cluster/merge_patch.ts";
import {
  type ClusterView,
  type ClusterWriter,
  controllerRef,
  type Kind,
  type KubeObject,
} from "../cluster/types.ts";
import { errorText } from "../engine/error_text.ts";
import { BearerTokens } from "../collectors/bearer_tokens.ts";
import { bearerTokenKey } from "../core/kube_metrics_adapter/configs/prometheus.ts";
import {
  isKnativeHpaClass,
  type KnativeConfig,
  knativeHpaFor,
  type KnativeTriggerAuth,
} from "../core/knative/mapping.ts";
import {
  desiredSks,
  type PaProblem,
  paStatusChanged,
  paStatusFor,
} from "../core/knative/status.ts";
import type { Logger } from "../engine/logger.ts";
import { silentLogger } from "../engine/logger.ts";

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
  /** Creates, patches, deletes, status and events go here; without it nothing is written. */
  writer?: ClusterWriter;
  /** Write (cluster mode); false logs the decisions (file mode). */
  write: boolean;
  /** The mapping's configuration (the Prometheus address, config-autoscaler defaults). */
  config: KnativeConfig;
  /** Where trigger authentication tokens go for the Prometheus collector (a store of its own). */
  bearerTokens?: BearerTokens;
  /** The namespace of the Secrets a ClusterTriggerAuthentication names (KEDA's: "keda"). */
  clusterTriggerAuthNamespace?: string;
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
export class KnativeReconciler {
  readonly #cluster: ClusterView;
  readonly #writer?: ClusterWriter;
  readonly #write: boolean;
  readonly #config: KnativeConfig;
  readonly #tokens: BearerTokens;
  readonly #clusterAuthNamespace: string;
  readonly #workloads: boolean;
  readonly #resyncMs: number;
  readonly #now: () => number;
  readonly #setTimer: (fn: () => void, ms: number) => unknown;
  readonly #clearTimer: (handle: unknown) => void;
  readonly #log: Logger;
  readonly #isLeader: () => boolean;
  readonly #queue = new Set<string>();
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
    this.#tokens = options.bearerTokens ?? new BearerTokens();
    this.#clusterAuthNamespace = options.clusterTriggerAuthNamespace ?? "keda";
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
          if (!this.#isLeader()) continue;
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

  /** The HPA to create or keep for `source`, with the label that marks it as ours. */
  #desired(source: KubeObject, kind: Kind) {
    const result = knativeHpaFor(source, this.#config, {
      kind: kind as "PodAutoscaler" | "Deployment" | "StatefulSet",
    });
    if ("error" in result) return result;
    const hpa = structuredClone(result.hpa) as unknown as KubeObject;
    hpa.metadata.labels = { ...(hpa.metadata.labels ?? {}), [MANAGED_BY_LABEL]: MANAGED_BY };
    return { ...result, hpa };
  }

  /**
   * Read the bearer token of every trigger authentication the mapping names into the shared
   * store (again on every reconcile: a rotated Secret is picked up); the first problem, or null.
   */
  async #resolveTokens(auth: readonly KnativeTriggerAuth[], ns: string): Promise<string | null> {
    let first: string | null = null;
    for (const a of auth) {
      const key = bearerTokenKey(ns, { kind: a.kind, name: a.name });
      let problem: string | null = null;
      try {
        const token = await this.#readToken(a, ns);
        this.#tokens.set(key, { token });
      } catch (e) {
        problem = `${a.kind} ${a.name} of metric ${a.metric}: ${errorText(e)}`;
        this.#tokens.set(key, { error: problem });
      }
      first ??= problem;
    }
    return first;
  }

  async #readToken(a: KnativeTriggerAuth, ns: string): Promise<string> {
    if (!this.#writer) throw new Error("cannot read it: nothing to read the cluster with");
    const cluster = a.kind === "ClusterTriggerAuthentication";
    const ta = await this.#writer.read(a.kind, cluster ? undefined : ns, a.name);
    if (!ta) {
      throw new Error(
        `not found (KEDA's ${a.kind} CRD must be installed for autoscaling.knative.dev/trigger-prometheus-auth-name)`,
      );
    }
    const refs = Array.isArray(ta.spec?.secretTargetRef) ? ta.spec.secretTargetRef : [];
    const ref = refs.find((r: { parameter?: string }) => r?.parameter === "bearerToken");
    if (!ref || typeof ref.name !== "string" || typeof ref.key !== "string") {
      throw new Error(
        "has no spec.secretTargetRef with parameter bearerToken (and a Secret name and key)",
      );
    }
    const secretNs = cluster ? this.#clusterAuthNamespace : ns;
    const secret = await this.#writer.read("Secret", secretNs, ref.name);
    if (!secret) throw new Error(`Secret ${secretNs}/${ref.name} not found`);
    const data = (secret as { data?: Record<string, string> }).data?.[ref.key];
    if (typeof data !== "string" || data === "") {
      throw new Error(`Secret ${secretNs}/${ref.name} has no key ${JSON.stringify(ref.key)}`);
    }
    const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
    const token = new TextDecoder().decode(bytes).trim();
    if (token === "") throw new Error(`Secret ${secretNs}/${ref.name} key ${ref.key} is empty`);
    return token;
  }

  async #reconcilePa(ns: string, name: string): Promise<void> {
    const pa = this.#cluster.get("PodAutoscaler", ns, name);
    if (!pa || pa.metadata.deletionTimestamp || !isHpaClass(pa)) return;
    const key = `PodAutoscaler/${ns}/${name}`;
    let problem: PaProblem | undefined;
    let hpa = this.#cluster.get("HorizontalPodAutoscaler", ns, name) ?? null;
    let minScale = 0;
    const desired = this.#desired(pa, "PodAutoscaler");
    if ("error" in desired) {
      problem = { kind: "invalid", message: desired.error };
      this.#sayOnce(key, `invalid annotations of PodAutoscaler ${ns}/${name}: ${desired.error}`);
    } else {
      minScale = desired.minScale ?? 0;
      const tokenProblem = await this.#resolveTokens(desired.auth, ns);
      if (tokenProblem !== null) problem = { kind: "invalid", message: tokenProblem };
    }
    if (!("error" in desired) && !problem) {
      if (desired.autoCreate) {
        if (!hpa) {
          try {
            hpa = await this.#create("HorizontalPodAutoscaler", desired.hpa);
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
        } else await this.#update(hpa, desired.hpa);
      }
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
    if (!workload || workload.metadata.deletionTimestamp) return;
    if (!isHpaClass(workload)) {
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
    const desired = this.#desired(workload, kind);
    if ("error" in desired) {
      this.#warn(workload, kind, `invalid autoscaling annotations: ${desired.error}`);
      return;
    }
    const tokenProblem = await this.#resolveTokens(desired.auth, ns);
    if (tokenProblem !== null) {
      this.#warn(workload, kind, `cannot read a bearer token: ${tokenProblem}`);
      return;
    }
    if (!desired.autoCreate) return;
    if (!hpa) {
      await this.#create("HorizontalPodAutoscaler", desired.hpa).catch((e) =>
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
    } else await this.#update(hpa, desired.hpa);
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
