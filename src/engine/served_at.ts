/**
 * Where a plan's values are served: the store key the API looks up for the HPA controller's
 * request (`/namespaces/NS/RESOURCE.GROUP/NAME/METRIC` or the external metric path).
 */
import { labelSelectorString } from "../core/kubernetes/label_selector.ts";
import type { MetricPlan, ObjectReference } from "../core/types.ts";
import type { ServedAt } from "../store/types.ts";

/** Known kinds: plural resource and API group (core group ""). */
const KNOWN_KINDS: Record<string, { resource: string; group: string }> = {
  Pod: { resource: "pods", group: "" },
  Service: { resource: "services", group: "" },
  Namespace: { resource: "namespaces", group: "" },
  Node: { resource: "nodes", group: "" },
  ConfigMap: { resource: "configmaps", group: "" },
  ReplicationController: { resource: "replicationcontrollers", group: "" },
  Deployment: { resource: "deployments", group: "apps" },
  StatefulSet: { resource: "statefulsets", group: "apps" },
  ReplicaSet: { resource: "replicasets", group: "apps" },
  DaemonSet: { resource: "daemonsets", group: "apps" },
  Ingress: { resource: "ingresses", group: "networking.k8s.io" },
  RouteGroup: { resource: "routegroups", group: "zalando.org" },
  ScalingSchedule: { resource: "scalingschedules", group: "zalando.org" },
  ClusterScalingSchedule: { resource: "clusterscalingschedules", group: "zalando.org" },
  Rollout: { resource: "rollouts", group: "argoproj.io" },
};

function pluralize(kind: string): string {
  const k = kind.toLowerCase();
  if (/(s|x|z|ch|sh)$/.test(k)) return `${k}es`;
  if (/[^aeiou]y$/.test(k)) return `${k.slice(0, -1)}ies`;
  return `${k}s`;
}

/**
 * The qualified plural resource of an object reference, as the API path names it:
 * `deployments.apps`, `pods`, `scalingschedules.zalando.org`. The group comes from
 * `apiVersion` when given (`extensions/v1beta1` Ingresses stay `ingresses.extensions`).
 *
 * @example
 * ```ts
 * groupResourceOf({ apiVersion: "apps/v1", kind: "Deployment", name: "web" }); // "deployments.apps"
 * ```
 */
export function groupResourceOf(ref: Pick<ObjectReference, "apiVersion" | "kind">): string {
  const known = KNOWN_KINDS[ref.kind];
  const resource = known?.resource ?? pluralize(ref.kind);
  let group = known?.group ?? "";
  if (ref.apiVersion) group = ref.apiVersion.includes("/") ? ref.apiVersion.split("/")[0] : "";
  return group === "" ? resource : `${resource}.${group}`;
}

/** Metric labels without a selector: one frozen empty set for every plan. */
const NO_LABELS: Readonly<Record<string, string>> = Object.freeze({});

/** The plan's labels themselves when frozen (as `planHpa` makes them), else a frozen copy. */
function sharedLabels(labels: Record<string, string> | undefined): Record<string, string> {
  if (labels === undefined) return NO_LABELS;
  return Object.isFrozen(labels) ? labels : Object.freeze({ ...labels });
}

/**
 * Where a plan's values are served. Throws for an Object metric without a describedObject. An
 * Object metric on a Namespace is served for the HPA's own namespace (as the HPA controller
 * asks for it), whatever namespace `describedObject.name` names.
 */
export function servedAtOf(plan: MetricPlan): ServedAt {
  const namespace = plan.hpa.namespace;
  switch (plan.metricType) {
    case "External": {
      const at: ServedAt = {
        kind: "external",
        namespace,
        metricName: plan.metricName,
        metricLabels: sharedLabels(plan.metricSelector?.matchLabels),
      };
      if ((plan.metricSelector?.matchExpressions ?? []).length > 0) {
        at.metricSelector = labelSelectorString(plan.metricSelector);
      }
      return at;
    }
    case "Pods":
      return {
        kind: "custom",
        namespace,
        groupResource: "pods",
        objectName: null,
        metricName: plan.metricName,
        metricSelector: labelSelectorString(plan.metricSelector),
      };
    case "Object": {
      const d = plan.describedObject;
      if (!d || !d.kind || !d.name) {
        throw new Error(`object metric ${plan.metricName} has no describedObject`);
      }
      const groupResource = groupResourceOf(d);
      return {
        kind: "custom",
        namespace,
        groupResource,
        // The HPA controller asks for a Namespace's metric at /namespaces/<its own
        // namespace>/metrics/<metric>, whatever name describedObject gives: an HPA cannot
        // read another namespace. The store keys a Namespace's values by the namespace itself.
        objectName: groupResource === "namespaces" ? namespace : d.name,
        metricName: plan.metricName,
        metricSelector: labelSelectorString(plan.metricSelector),
      };
    }
  }
}
