/**
 * Where Kubernetes objects come from. Two sources implement it: the Kubernetes API (informers)
 * and a folder of manifests (the local, embedded mode). Everything above `cluster/` sees only
 * this interface, so the engine and the API cannot tell them apart.
 */

/** The object kinds the adapter reads. */
export type Kind =
  | "HorizontalPodAutoscaler"
  | "Pod"
  | "Node"
  | "Deployment"
  | "ReplicaSet"
  | "StatefulSet"
  | "Rollout"
  | "Ingress"
  | "RouteGroup"
  | "ScalingSchedule"
  | "ClusterScalingSchedule"
  | "PodAutoscaler"
  | "ServerlessService"
  | "ScaledObject"
  | "TriggerAuthentication"
  | "ClusterTriggerAuthentication"
  | "Secret"
  | "ConfigMap";

/** A Kubernetes object as read (JSON). Validate what you use at the point of use. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
    creationTimestamp?: string;
    [key: string]: unknown;
  };
  spec?: any;
  status?: any;
}

/** What happened to an object. */
export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED";

/** Called for every change of one kind; `old` is the previous version on MODIFIED/DELETED. */
export type WatchHandler = (type: WatchEventType, obj: KubeObject, old?: KubeObject) => void;

/** A read-only, always up-to-date view of the cluster (no LIST per call: served from caches). */
export interface ClusterView {
  /**
   * Make sure `kind` is watched; resolves after its initial sync. Idempotent. A kind whose CRD
   * is not installed, or whose first list failed (see `kindError`), resolves too (its lists stay
   * empty) and is retried in the background.
   */
  ensure(kind: Kind): Promise<void>;
  /**
   * Why a kind has no data: the error of its last failed list (e.g. HTTP 403 when RBAC does not
   * allow it; `ensure` resolved anyway, the lists stay empty and the list is retried), or null
   * when it is served, not watched, or its CRD is not installed. Optional: a source that cannot
   * fail this way need not have it.
   */
  kindError?(kind: Kind): string | null;
  /** Objects of a kind, in one namespace or all (cluster-scoped kinds ignore the namespace). */
  list(kind: Kind, namespace?: string): KubeObject[];
  /** One object, or undefined. */
  get(kind: Kind, namespace: string | undefined, name: string): KubeObject | undefined;
  /**
   * A change counter of a kind's objects in one namespace: it changes whenever an object that
   * `get`/`list` return for that namespace is added, changed or deleted, so a reader may cache
   * what it derived from them until it does. Optional: without it, nothing is cached.
   */
  version?(kind: Kind, namespace: string): number;
  /** Subscribe to changes of a kind (also ensures it). Returns the unsubscribe function. */
  watch(kind: Kind, handler: WatchHandler): () => void;
  /** Stops every watch. */
  close(): Promise<void>;
}

/** A Normal or Warning event on an object. */
export interface ObjectEvent {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
}

/** The writes the adapter makes. The file source applies them in memory and logs them. */
export interface ClusterWriter {
  /** Replace `status` of an object through its status subresource. */
  updateStatus(
    kind: Kind,
    namespace: string | undefined,
    name: string,
    status: unknown,
  ): Promise<void>;
  /** Read `spec.replicas`/`status.replicas` through the scale subresource. */
  getScale(
    kind: Kind,
    namespace: string,
    name: string,
  ): Promise<{ specReplicas: number; statusReplicas: number }>;
  /** Set `spec.replicas` through the scale subresource. */
  setScale(kind: Kind, namespace: string, name: string, replicas: number): Promise<void>;
  /** Record an event about an object. */
  emitEvent(kind: Kind, obj: KubeObject, event: ObjectEvent): Promise<void>;
  /**
   * Change an object with a JSON merge patch (RFC 7386) on the object itself (the replica
   * guard's `spec.minReplicas` of an HPA). Rejects when the object cannot be patched.
   */
  patch(kind: Kind, namespace: string | undefined, name: string, patch: unknown): Promise<void>;
  /** Create an object (its kind, namespace and name from the object); rejects on a conflict. */
  create(kind: Kind, obj: KubeObject): Promise<KubeObject>;
  /** Delete an object; resolves when it is gone or was not there. */
  delete(kind: Kind, namespace: string | undefined, name: string): Promise<void>;
  /**
   * Read one object from the API (not from a watch: Secrets, KEDA's trigger authentications);
   * null when it does not exist.
   */
  read(kind: Kind, namespace: string | undefined, name: string): Promise<KubeObject | null>;
}

/** Where a kind lives in the Kubernetes API. */
export interface KindResource {
  /** API group; "" is the core group (`/api/v1`). */
  group: string;
  version: string;
  /** The resource name in URLs (`horizontalpodautoscalers`). */
  plural: string;
  namespaced: boolean;
  /** Whether the kind has a scale subresource that the adapter uses. */
  scale: boolean;
}

/** The API group, version and resource of every kind the adapter reads. */
export const KIND_RESOURCES: Readonly<Record<Kind, KindResource>> = {
  HorizontalPodAutoscaler: {
    group: "autoscaling",
    version: "v2",
    plural: "horizontalpodautoscalers",
    namespaced: true,
    scale: false,
  },
  Pod: { group: "", version: "v1", plural: "pods", namespaced: true, scale: false },
  // the NodeMetrics of prometheus-adapter's resourceRules (--prometheus-adapter-config)
  Node: { group: "", version: "v1", plural: "nodes", namespaced: false, scale: false },
  Deployment: {
    group: "apps",
    version: "v1",
    plural: "deployments",
    namespaced: true,
    scale: true,
  },
  ReplicaSet: {
    group: "apps",
    version: "v1",
    plural: "replicasets",
    namespaced: true,
    scale: false,
  },
  StatefulSet: {
    group: "apps",
    version: "v1",
    plural: "statefulsets",
    namespaced: true,
    scale: true,
  },
  Rollout: {
    group: "argoproj.io",
    version: "v1alpha1",
    plural: "rollouts",
    namespaced: true,
    scale: true,
  },
  Ingress: {
    group: "networking.k8s.io",
    version: "v1",
    plural: "ingresses",
    namespaced: true,
    scale: false,
  },
  RouteGroup: {
    group: "zalando.org",
    version: "v1",
    plural: "routegroups",
    namespaced: true,
    scale: false,
  },
  ScalingSchedule: {
    group: "zalando.org",
    version: "v1",
    plural: "scalingschedules",
    namespaced: true,
    scale: false,
  },
  ClusterScalingSchedule: {
    group: "zalando.org",
    version: "v1",
    plural: "clusterscalingschedules",
    namespaced: false,
    scale: false,
  },
  // Knative Serving (the HPA-class reconciler of --knative-autoscaler)
  PodAutoscaler: {
    group: "autoscaling.internal.knative.dev",
    version: "v1alpha1",
    plural: "podautoscalers",
    namespaced: true,
    scale: false,
  },
  ServerlessService: {
    group: "networking.internal.knative.dev",
    version: "v1alpha1",
    plural: "serverlessservices",
    namespaced: true,
    scale: false,
  },
  // KEDA's ScaledObjects (--keda-scaled-objects) and trigger authentications (read, never
  // watched: a Knative trigger's bearer token, a ScaledObject trigger's parameters)
  ScaledObject: {
    group: "keda.sh",
    version: "v1alpha1",
    plural: "scaledobjects",
    namespaced: true,
    scale: false,
  },
  TriggerAuthentication: {
    group: "keda.sh",
    version: "v1alpha1",
    plural: "triggerauthentications",
    namespaced: true,
    scale: false,
  },
  ClusterTriggerAuthentication: {
    group: "keda.sh",
    version: "v1alpha1",
    plural: "clustertriggerauthentications",
    namespaced: false,
    scale: false,
  },
  // read one at a time with `read`, never watched
  Secret: { group: "", version: "v1", plural: "secrets", namespaced: true, scale: false },
  ConfigMap: { group: "", version: "v1", plural: "configmaps", namespaced: true, scale: false },
};

/** An owner reference of an object, as read. */
export interface OwnerRef {
  apiVersion?: string;
  kind?: string;
  name?: string;
  uid?: string;
  controller?: boolean;
}

/** The object's controller: its ownerReference with `controller: true`, if any. */
export function controllerRef(obj: KubeObject): OwnerRef | undefined {
  const refs = obj.metadata.ownerReferences;
  return Array.isArray(refs) ? (refs as OwnerRef[]).find((r) => r?.controller === true) : undefined;
}

/** The `apiVersion` of a kind as written in manifests (`apps/v1`, `v1`). */
export function apiVersionOf(kind: Kind): string {
  const r = KIND_RESOURCES[kind];
  return r.group === "" ? r.version : `${r.group}/${r.version}`;
}

/** The URL path of a kind's collection (all namespaces, or one). */
export function collectionPath(kind: Kind, namespace?: string): string {
  const r = KIND_RESOURCES[kind];
  const base = r.group === "" ? `/api/${r.version}` : `/apis/${r.group}/${r.version}`;
  const ns = r.namespaced && namespace !== undefined
    ? `/namespaces/${encodeURIComponent(namespace)}`
    : "";
  return `${base}${ns}/${r.plural}`;
}

/** The `Kind` of an object's apiVersion and kind, or undefined if the adapter does not read it. */
export function kindOf(apiVersion: string | undefined, kind: string | undefined): Kind | undefined {
  if (kind === undefined || !Object.hasOwn(KIND_RESOURCES, kind)) return undefined;
  return apiVersionOf(kind as Kind) === apiVersion ? kind as Kind : undefined;
}
