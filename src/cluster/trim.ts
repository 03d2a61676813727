/**
 * What the cluster view keeps of an object. Both sources (the Kubernetes API and manifest
 * files) pass every object through {@linkcode trimForCache}, so they keep the same fields.
 *
 * @module
 */
import { settleStringMaps } from "../core/dictionary.ts";
import type { Kind } from "./types.ts";

/** Written by `kubectl apply`: a copy of the whole object as JSON. */
const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

/** The pod status fields the adapter reads (the Ready condition, the pod IP). */
const POD_STATUS_FIELDS = ["phase", "podIP", "podIPs", "conditions"] as const;

/** Kinds whose `spec.template` (a whole pod template) nobody here reads. */
const WORKLOADS: ReadonlySet<Kind> = new Set(["Deployment", "StatefulSet", "Rollout"]);

/** The HPA status fields the adapter reads (the schedule controller's replica count). */
const HPA_STATUS_FIELDS = ["currentReplicas", "desiredReplicas"] as const;

type Loose = Record<string, unknown>;

/**
 * Keys whose string values repeat across objects: `apiVersion`, `kind`, a metric's and a
 * target's `type`, a condition's `status`, a pod's `phase`, a schedule's `timezone`.
 */
const SHARED_VALUE_KEYS: ReadonlySet<string> = new Set([
  "apiVersion",
  "kind",
  "type",
  "status",
  "phase",
  "timezone",
  "operator",
]);

/** The most distinct values {@linkcode shareValues} keeps; past it, new ones stay copies. */
const MAX_SHARED_VALUES = 1024;
/** Longer values are not shared: the ones that repeat are short. */
const MAX_SHARED_LENGTH = 64;

/** One string per distinct value seen under {@linkcode SHARED_VALUE_KEYS}. */
const sharedValues = new Map<string, string>();

function shared(value: string): string {
  if (value.length > MAX_SHARED_LENGTH) return value;
  const known = sharedValues.get(value);
  if (known !== undefined) return known;
  if (sharedValues.size < MAX_SHARED_VALUES) sharedValues.set(value, value);
  return value;
}

/**
 * Point the string values of {@linkcode SHARED_VALUE_KEYS} anywhere in `v` (but not in
 * annotations or labels) at one shared copy each. Parsers make a new string for every value:
 * at 2,000 HPAs the same "AverageValue", "ScalingSchedule" or "apps/v1" was kept 2,000-4,000
 * times (~600 KB of the live heap).
 */
function shareValues(v: unknown, depth: number): void {
  if (typeof v !== "object" || v === null || depth > 12) return;
  if (Array.isArray(v)) {
    for (const item of v) shareValues(item, depth + 1);
    return;
  }
  const o = v as Loose;
  for (const key in o) {
    const value = o[key];
    if (typeof value === "string") {
      // (equal strings compare equal: the assignment is what swaps the copy for the shared one)
      if (SHARED_VALUE_KEYS.has(key)) o[key] = shared(value);
    } else if (key !== "annotations" && key !== "labels") {
      shareValues(value, depth + 1);
    }
  }
}

function isObject(v: unknown): v is Loose {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Replace `o.status` (when an object) by a new object with only `fields`. */
function keepStatus(o: Loose, fields: readonly string[]): void {
  const from = o.status;
  if (!isObject(from)) return;
  const status: Loose = {};
  for (const field of fields) if (from[field] !== undefined) status[field] = from[field];
  o.status = status;
}

/**
 * `obj` as the cache keeps it, changed in place, and returned:
 *
 * - no `metadata.managedFields` and no `kubectl apply` copy of the object in the annotations
 *   (client-go's `TransformStripManagedFields` drops the first for the same reason);
 * - labels and annotations as dictionaries (see src/core/dictionary.ts);
 * - a Pod keeps its metadata without annotations and, of its status, `phase`, `podIP`,
 *   `podIPs` and `conditions`: its spec and container statuses (most of a pod, and pods are
 *   most of the objects) are dropped;
 * - a Node keeps its metadata without annotations (its name and labels make a NodeMetrics); its
 *   spec and status (images, conditions, addresses) are dropped;
 * - a Deployment, StatefulSet or Rollout drops `spec.template`; its selector, replicas and
 *   status stay;
 * - a HorizontalPodAutoscaler keeps, of its status, `currentReplicas`, `desiredReplicas` and
 *   its `ScalingActive` condition (KEDA's `HPAActive` mirrors it): its other conditions and
 *   current metrics (the HPA controller rewrites them every sync) are dropped;
 * - values that repeat across objects (`apiVersion`, `kind`, `type`, ...) are one shared string
 *   each.
 *
 * Nothing else is read from these objects: whoever needs another field adds it here.
 *
 * @example
 * ```ts
 * const pod = trimForCache("Pod", JSON.parse(text));
 * ```
 */
export function trimForCache<T>(kind: Kind, obj: T): T {
  if (!isObject(obj) || !isObject(obj.metadata)) return obj;
  const o: Loose = obj;
  const metadata = o.metadata as Loose;
  if (metadata.managedFields !== undefined) delete metadata.managedFields;
  const annotations = metadata.annotations;
  if (kind === "Pod" || kind === "Node") {
    if (annotations !== undefined) delete metadata.annotations;
  } else if (isObject(annotations) && LAST_APPLIED in annotations) {
    delete annotations[LAST_APPLIED];
  }
  // after the deletions: only what stays is copied
  settleStringMaps(obj);
  if (kind === "Pod") {
    if (o.spec !== undefined) delete o.spec;
    keepStatus(o, POD_STATUS_FIELDS);
  } else if (kind === "Node") {
    if (o.spec !== undefined) delete o.spec;
    if (o.status !== undefined) delete o.status;
  } else if (kind === "HorizontalPodAutoscaler") {
    const conditions = isObject(o.status) && Array.isArray(o.status.conditions)
      ? o.status.conditions
      : [];
    keepStatus(o, HPA_STATUS_FIELDS);
    const active = conditions.find((c: Loose) => isObject(c) && c.type === "ScalingActive");
    if (active && isObject(o.status)) {
      o.status.conditions = [{
        type: "ScalingActive",
        status: active.status,
        ...(typeof active.reason === "string" ? { reason: active.reason } : {}),
        // the message only while it says why not (KEDA quotes it then): it changes every sync
        ...(typeof active.message === "string" &&
            (active.status !== "True" || active.reason === "ScalingDisabled")
          ? { message: active.message }
          : {}),
      }];
    }
  } else if (WORKLOADS.has(kind) && isObject(o.spec) && o.spec.template !== undefined) {
    // a copy: a YAML alias may share the spec with another object
    const { template: _template, ...spec } = o.spec;
    o.spec = spec;
  }
  shareValues(o, 0);
  return obj;
}
