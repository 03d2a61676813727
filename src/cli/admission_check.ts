/**
 * What the admission webhook (`--admission-webhook`, issue 50) checks in an object: the same
 * planning as `plan` (planObjects, with the setup serve's flags make), on the object being
 * admitted. HorizontalPodAutoscalers always (autoscaling/v1 and v2beta2 through the conversion
 * the planner applies), their estafette guard annotations with `--estafette-hpa-scaler`,
 * ScaledObjects with `--keda-scaled-objects`, Knative PodAutoscalers and annotated workloads
 * with `--knative-autoscaler`. Only what the informers already hold is read (the namespace's
 * other HPAs for `--max-metrics-per-namespace`, TriggerAuthentications): no backend and no
 * kube-apiserver request is made while kube-apiserver waits.
 *
 * @module
 */
import type { AdmissionRequest, AdmissionVerdict } from "../api/admission.ts";
import type { ClusterView, KubeObject } from "../cluster/types.ts";
import { controllerRef } from "../cluster/types.ts";
import { KEDA_API_VERSION } from "../core/keda/names.ts";
import { planObjects, type PlanSetup } from "./plan.ts";

/** Options of {@linkcode admissionReviewer}. */
export interface AdmissionCheckOptions {
  setup: PlanSetup;
  /** The informers' view (read, never waited on). */
  cluster: Pick<ClusterView, "list">;
  /** `--keda-scaled-objects`. */
  keda: boolean;
  /** `--knative-autoscaler`. */
  knative: boolean;
  /** `--estafette-hpa-scaler`. */
  replicaGuard: boolean;
}

/**
 * The problems of a `; `-joined plan error, one each: split where no quoted value (`"..."`,
 * `` `...` ``) is open.
 */
export function splitProblems(error: string): string[] {
  const out: string[] = [];
  let quote: string | null = null;
  let start = 0;
  for (let i = 0; i < error.length; i++) {
    const c = error[i];
    if (quote !== null) {
      if (c === "\\" && quote === '"') i++;
      else if (c === quote) quote = null;
      continue;
    }
    if (c === '"' || c === "`") quote = c;
    else if (c === ";" && error[i + 1] === " ") {
      out.push(error.slice(start, i));
      start = i + 2;
    }
  }
  // an unbalanced quote: the message as it is
  if (quote !== null) return [error];
  out.push(error.slice(start));
  return out.filter((p) => p !== "");
}

function isKind(
  request: AdmissionRequest,
  group: string,
  kinds: readonly string[],
): boolean {
  return request.kind.group === group && kinds.includes(request.kind.kind);
}

/** The cluster's objects of a kind, empty when it is not watched. */
function listed(
  cluster: Pick<ClusterView, "list">,
  kind: Parameters<ClusterView["list"]>[0],
  namespace?: string,
): KubeObject[] {
  try {
    return cluster.list(kind, namespace);
  } catch {
    return [];
  }
}

/** One object's verdict (no ratchet). */
function verdictOf(
  request: AdmissionRequest,
  object: KubeObject,
  options: AdmissionCheckOptions,
): AdmissionVerdict {
  const source = `${request.kind.kind} ${request.namespace}/${request.name}`;
  const objects: { object: KubeObject; source: string; countOnly?: boolean }[] = [];
  if (isKind(request, "autoscaling", ["HorizontalPodAutoscaler"])) {
    // KEDA's HPAs are planned from their ScaledObject (--keda-scaled-objects), not their metrics
    if (options.keda && controllerRef(object)?.kind === "ScaledObject") {
      return { errors: [], warnings: [] };
    }
    objects.push({ object, source });
    if (options.setup.maxMetricsPerNamespace > 0) {
      for (const other of listed(options.cluster, "HorizontalPodAutoscaler", request.namespace)) {
        if (other.metadata.name === request.name) continue;
        objects.push({ object: other, source: "", countOnly: true });
      }
    }
  } else if (options.keda && isKind(request, "keda.sh", ["ScaledObject"])) {
    objects.push({ object, source });
    const auth = (kind: "TriggerAuthentication" | "ClusterTriggerAuthentication", ns?: string) =>
      listed(options.cluster, kind, ns).map((a) => ({
        object: { ...a, apiVersion: KEDA_API_VERSION, kind },
        source: "",
      }));
    objects.push(
      ...auth("TriggerAuthentication", request.namespace),
      ...auth("ClusterTriggerAuthentication"),
    );
  } else if (
    options.knative && (isKind(request, "autoscaling.internal.knative.dev", ["PodAutoscaler"]) ||
      isKind(request, "apps", ["Deployment", "StatefulSet"]))
  ) {
    objects.push({ object, source });
  } else {
    return { errors: [], warnings: [] };
  }
  const planned = planObjects(objects, options.setup);
  const errors: string[] = [];
  const warnings: string[] = [];
  for (const i of planned.invalid) errors.push(i.message);
  for (const k of planned.knative) {
    if (k.error !== undefined) errors.push(k.error);
    warnings.push(...k.warnings);
  }
  for (const k of planned.keda) {
    if (k.error !== undefined) {
      errors.push(
        k.trigger === undefined || /\btrigger\b/.test(k.error)
          ? k.error
          : `trigger ${k.trigger}: ${k.error}`,
      );
    }
    warnings.push(...k.warnings);
  }
  const named = (metricType: string, metricName: string, text: string): string =>
    text.includes(`metric ${metricName}`) || text.includes(`metric \`${metricName}\``)
      ? text
      : `${metricType} metric ${metricName}: ${text}`;
  for (const r of planned.rows) {
    if (r.error !== null) {
      for (const p of splitProblems(r.error)) errors.push(named(r.metricType, r.metricName, p));
    }
    for (const w of r.warnings ?? []) warnings.push(named(r.metricType, r.metricName, w));
  }
  if (options.replicaGuard) {
    for (const g of planned.guards) {
      for (const w of g.warnings ?? []) warnings.push(`replica guard: ${w}`);
    }
  }
  return { errors: [...new Set(errors)], warnings: [...new Set(warnings)] };
}

/** The object as planned: its namespace and name filled in from the request. */
function admitted(request: AdmissionRequest, object: Record<string, unknown>): KubeObject {
  const metadata = typeof object.metadata === "object" && object.metadata !== null &&
      !Array.isArray(object.metadata)
    ? object.metadata as Record<string, unknown>
    : {};
  return {
    ...object,
    metadata: {
      ...metadata,
      namespace: typeof metadata.namespace === "string" && metadata.namespace !== ""
        ? metadata.namespace
        : request.namespace,
      name: typeof metadata.name === "string" && metadata.name !== ""
        ? metadata.name
        : request.name,
    },
  } as KubeObject;
}

/**
 * The webhook's checks (`AdmissionOptions.review`). On UPDATE, an error the old object had too
 * is a warning: deny mode refuses new problems, never an edit of an object that had them.
 *
 * @example
 * ```ts
 * const review = admissionReviewer({ setup: await planSetupFromFlags(flags, { given, env }),
 *   cluster, keda: false, knative: false, replicaGuard: false });
 * ```
 */
export function admissionReviewer(
  options: AdmissionCheckOptions,
): (request: AdmissionRequest) => AdmissionVerdict {
  return (request) => {
    if (request.object === null) return { errors: [], warnings: [] };
    const object = admitted(request, request.object);
    // going away: nothing to check
    if (object.metadata.deletionTimestamp) return { errors: [], warnings: [] };
    const verdict = verdictOf(request, object, options);
    if (
      request.operation !== "UPDATE" || request.oldObject === null || verdict.errors.length === 0
    ) {
      return verdict;
    }
    const before = new Set(
      verdictOf(request, admitted(request, request.oldObject), options).errors,
    );
    return {
      errors: verdict.errors.filter((e) => !before.has(e)),
      warnings: [...verdict.errors.filter((e) => before.has(e)), ...verdict.warnings],
    };
  };
}
