/**
 * The status of Knative PodAutoscalers of class `hpa.autoscaling.knative.dev` and their
 * ServerlessService, as autoscaler-keda writes them (issue 23), with the HorizontalPodAutoscaler
 * in place of the ScaledObject: pure functions of the PA, the HPA and the SKS the reconciler
 * reads. The reconciler writes the status only when {@linkcode paStatusChanged} says so.
 *
 * Conditions are a living set: `Active`, `ScaleTargetInitialized` and `SKSReady`, and `Ready`,
 * their conjunction (False when one is False, Unknown when one is Unknown, else True).
 *
 * @module
 */

/** A Knative condition (`knative.dev/pkg/apis.Condition`). */
export interface KnativeCondition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason?: string;
  message?: string;
  /** RFC 3339; changes only when `status` does. */
  lastTransitionTime?: string;
  severity?: string;
}

/** The fields of a PA's status this reconciler writes. */
export interface PaStatus {
  observedGeneration?: number;
  conditions: KnativeCondition[];
  serviceName?: string;
  metricsServiceName?: string;
  desiredScale?: number;
  actualScale?: number;
}

/** What went wrong before the status could follow the HPA, if anything. */
export type PaProblem =
  | { kind: "not-owned"; resource: "HorizontalPodAutoscaler" | "ServerlessService"; name: string }
  | {
    kind: "failed-create";
    resource: "HorizontalPodAutoscaler" | "ServerlessService";
    name: string;
  }
  | { kind: "invalid"; message: string };

/** Inputs of {@linkcode paStatusFor}. */
export interface PaStatusInput {
  /** The PA as read: `metadata.generation`, `metadata.annotations`, `status`. */
  pa: {
    metadata: { generation?: number; annotations?: Record<string, string> };
    status?: Partial<PaStatus>;
  };
  /** The HPA named after the PA, when it exists (and is ours, or auto-create is off). */
  hpa?: { status?: { desiredReplicas?: number; currentReplicas?: number } } | null;
  /** The SKS named after the PA, when it exists and is ours. */
  sks?: {
    status?: {
      serviceName?: string;
      privateServiceName?: string;
      conditions?: { type?: string; status?: string }[];
    };
  } | null;
  /** What stopped the reconcile, if anything: the PA is not Active then. */
  problem?: PaProblem;
  /** The min-scale in effect (`autoscaling.knative.dev/min-scale`, 0 when none). */
  minScale: number;
  /** `config-autoscaler` initial-scale (1) and whether zero is allowed (false). */
  initialScaleDefault?: number;
  allowZeroInitialScale?: boolean;
  /** Epoch ms, for `lastTransitionTime`. */
  now: number;
}

const LIVING = ["Active", "ScaleTargetInitialized", "SKSReady"] as const;

function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");
}

function initialScale(
  annotations: Record<string, string> | undefined,
  dflt: number,
  allowZero: boolean,
): number {
  const raw = annotations?.["autoscaling.knative.dev/initial-scale"] ??
    annotations?.["autoscaling.knative.dev/initialScale"];
  if (raw === undefined || !/^[+-]?\d+$/.test(raw)) return dflt;
  const n = Number(raw);
  if (n === 0 && !allowZero) return dflt;
  return n;
}

/**
 * The PA's status after one reconcile, as autoscaler-keda computes it (2.6): a problem makes
 * `Active` False (`NotOwned`, `FailedCreate`, or `InvalidConfiguration` with the message naming
 * the annotation); otherwise `Active` is True. The SKS gives `serviceName`,
 * `metricsServiceName` and `SKSReady` (Unknown `NotReady` "SKS Services are not ready yet" until
 * it is ready); once it is, `ScaleTargetInitialized` becomes True (and stays) when the HPA's
 * `currentReplicas` reaches max(min-scale, initial-scale). `desiredScale` and `actualScale` are
 * the HPA's `desiredReplicas` and `currentReplicas`.
 *
 * @example
 * ```ts
 * paStatusFor({ pa: { metadata: { generation: 1 } }, hpa: { status: { desiredReplicas: 5, currentReplicas: 3 } },
 *   sks: { status: { serviceName: "rev", privateServiceName: "rev-private", conditions: [{ type: "Ready", status: "True" }] } },
 *   minScale: 0, now: 0 }).conditions.map((c) => `${c.type}=${c.status}`);
 * // ["Active=True", "Ready=True", "SKSReady=True", "ScaleTargetInitialized=True"]
 * ```
 */
export function paStatusFor(input: PaStatusInput): PaStatus {
  const old = input.pa.status ?? {};
  const oldConditions = new Map((old.conditions ?? []).map((c) => [c.type, c]));
  const next = new Map<string, Omit<KnativeCondition, "lastTransitionTime">>();
  for (const t of LIVING) {
    const o = oldConditions.get(t);
    next.set(t, o ? { ...o } : { type: t, status: "Unknown" });
    delete (next.get(t) as KnativeCondition).lastTransitionTime;
  }
  const set = (
    type: string,
    status: KnativeCondition["status"],
    reason?: string,
    message?: string,
  ) => {
    const c: Omit<KnativeCondition, "lastTransitionTime"> = { type, status };
    if (reason) c.reason = reason;
    if (message) c.message = message;
    next.set(type, c);
  };
  const out: PaStatus = { conditions: [] };
  if (input.pa.metadata.generation !== undefined) {
    out.observedGeneration = input.pa.metadata.generation;
  }
  for (const k of ["serviceName", "metricsServiceName", "desiredScale", "actualScale"] as const) {
    if (old[k] !== undefined) (out as unknown as Record<string, unknown>)[k] = old[k];
  }
  const p = input.problem;
  if (p) {
    if (p.kind === "not-owned") {
      set(
        "Active",
        "False",
        "NotOwned",
        `There is an existing ${p.resource} "${p.name}" that we do not own.`,
      );
    } else if (p.kind === "failed-create") {
      set("Active", "False", "FailedCreate", `Failed to create ${p.resource} "${p.name}".`);
    } else set("Active", "False", "InvalidConfiguration", p.message);
  }
  const sks = input.sks;
  if (!p && sks) {
    if (sks.status?.privateServiceName) out.metricsServiceName = sks.status.privateServiceName;
    if (sks.status?.serviceName) out.serviceName = sks.status.serviceName;
    const ready = sks.status?.conditions?.find((c) => c?.type === "Ready")?.status === "True";
    if (!ready) set("SKSReady", "Unknown", "NotReady", "SKS Services are not ready yet");
    else {
      set("SKSReady", "True");
      if (next.get("ScaleTargetInitialized")?.status !== "True") {
        const threshold = Math.max(
          input.minScale,
          initialScale(
            input.pa.metadata.annotations,
            input.initialScaleDefault ?? 1,
            input.allowZeroInitialScale === true,
          ),
        );
        const current = input.hpa?.status?.currentReplicas ?? 0;
        if (input.hpa && current >= threshold) set("ScaleTargetInitialized", "True");
      }
    }
    set("Active", "True");
  }
  if (!p && input.hpa) {
    out.desiredScale = input.hpa.status?.desiredReplicas ?? 0;
    out.actualScale = input.hpa.status?.currentReplicas ?? 0;
  }
  // Ready: the conjunction of the living set
  const living = LIVING.map((t) => next.get(t)!);
  const failed = living.find((c) => c.status === "False");
  // the Unknown that says why (SKSReady's NotReady) before a bare one
  const unknown = living.find((c) => c.status === "Unknown" && c.reason) ??
    living.find((c) => c.status === "Unknown");
  if (failed) set("Ready", "False", failed.reason, failed.message);
  else if (unknown) set("Ready", "Unknown", unknown.reason, unknown.message);
  else set("Ready", "True");
  const stamp = rfc3339(input.now);
  out.conditions = [...next.values()].map((c) => {
    const o = oldConditions.get(c.type);
    const keep = o && o.status === c.status && o.lastTransitionTime;
    return { ...c, lastTransitionTime: keep ? o!.lastTransitionTime : stamp };
  }).sort((a, b) => a.type < b.type ? -1 : a.type > b.type ? 1 : 0);
  return out;
}

/** Whether `next` differs from the PA's current status in what this reconciler writes. */
export function paStatusChanged(current: Partial<PaStatus> | undefined, next: PaStatus): boolean {
  const c = current ?? {};
  const pick = (s: Partial<PaStatus>) =>
    JSON.stringify([
      s.observedGeneration,
      s.serviceName,
      s.metricsServiceName,
      s.desiredScale,
      s.actualScale,
      [...(s.conditions ?? [])].sort((a, b) => a.type < b.type ? -1 : 1).map((k) => [
        k.type,
        k.status,
        k.reason ?? "",
        k.message ?? "",
        k.lastTransitionTime ?? "",
      ]),
    ]);
  return pick(c) !== pick(next);
}

/**
 * The ServerlessService of a PA, as autoscaler-keda makes it: named after the PA, its labels,
 * only the `autoscaling.knative.dev/metric` annotation, owned by the PA; Serve mode, the PA's
 * scale target and protocol, 0 activators ("all").
 *
 * @example
 * ```ts
 * desiredSks({ metadata: { name: "rev-1", namespace: "shop", uid: "u" },
 *   spec: { scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "rev-1-deployment" }, protocolType: "http1" } }).spec.mode;
 * // "Serve"
 * ```
 */
export function desiredSks(pa: {
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: { scaleTargetRef?: unknown; protocolType?: string };
}): {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences: unknown[];
  };
  spec: { mode: "Serve"; objectRef: unknown; protocolType: string; numActivators: number };
} {
  const metric = pa.metadata.annotations?.["autoscaling.knative.dev/metric"];
  return {
    apiVersion: "networking.internal.knative.dev/v1alpha1",
    kind: "ServerlessService",
    metadata: {
      name: pa.metadata.name,
      namespace: pa.metadata.namespace ?? "default",
      ...(pa.metadata.labels ? { labels: { ...pa.metadata.labels } } : {}),
      ...(metric !== undefined
        ? { annotations: { "autoscaling.knative.dev/metric": metric } }
        : {}),
      ownerReferences: [{
        apiVersion: "autoscaling.internal.knative.dev/v1alpha1",
        kind: "PodAutoscaler",
        name: pa.metadata.name,
        uid: pa.metadata.uid ?? "",
        controller: true,
        blockOwnerDeletion: true,
      }],
    },
    spec: {
      mode: "Serve",
      objectRef: pa.spec?.scaleTargetRef ?? {},
      protocolType: pa.spec?.protocolType ?? "http1",
      numActivators: 0,
    },
  };
}
