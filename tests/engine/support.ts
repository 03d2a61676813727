/**
 * Test doubles for the engine and collector tests: an in-memory ClusterView, a recording
 * ClusterWriter and manual timers. Not a second implementation of src/cluster: only what the
 * tests need.
 */
import type {
  ClusterView,
  ClusterWriter,
  Kind,
  KubeObject,
  ObjectEvent,
  WatchEventType,
  WatchHandler,
} from "../../src/cluster/types.ts";

const CLUSTER_SCOPED: ReadonlySet<Kind> = new Set([
  "ClusterScalingSchedule",
  "ClusterTriggerAuthentication",
]);

/** An in-memory cluster view whose objects tests set and delete. */
export class MemoryCluster implements ClusterView {
  readonly ensured: Kind[] = [];
  #objects = new Map<Kind, Map<string, KubeObject>>();
  #handlers = new Map<Kind, Set<WatchHandler>>();
  #rv = 1;

  #key(kind: Kind, ns: string | undefined, name: string): string {
    return CLUSTER_SCOPED.has(kind) ? name : `${ns ?? "default"}/${name}`;
  }

  ensure(kind: Kind): Promise<void> {
    if (!this.ensured.includes(kind)) this.ensured.push(kind);
    return Promise.resolve();
  }

  list(kind: Kind, namespace?: string): KubeObject[] {
    const all = [...(this.#objects.get(kind)?.values() ?? [])];
    if (namespace === undefined || CLUSTER_SCOPED.has(kind)) return all;
    return all.filter((o) => (o.metadata.namespace ?? "default") === namespace);
  }

  get(kind: Kind, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.#objects.get(kind)?.get(this.#key(kind, namespace, name));
  }

  watch(kind: Kind, handler: WatchHandler): () => void {
    void this.ensure(kind);
    let set = this.#handlers.get(kind);
    if (!set) this.#handlers.set(kind, set = new Set());
    set.add(handler);
    return () => set.delete(handler);
  }

  close(): Promise<void> {
    this.#handlers.clear();
    return Promise.resolve();
  }

  /** Add or replace an object (MODIFIED when it existed), notifying watchers. */
  set(kind: Kind, obj: KubeObject): KubeObject {
    const copy: KubeObject = structuredClone(obj);
    copy.kind ??= kind;
    copy.metadata.resourceVersion = String(this.#rv++);
    let map = this.#objects.get(kind);
    if (!map) this.#objects.set(kind, map = new Map());
    const key = this.#key(kind, copy.metadata.namespace, copy.metadata.name);
    const old = map.get(key);
    map.set(key, copy);
    this.#emit(kind, old ? "MODIFIED" : "ADDED", copy, old);
    return copy;
  }

  /** Delete an object, notifying watchers. */
  delete(kind: Kind, namespace: string | undefined, name: string): void {
    const map = this.#objects.get(kind);
    const key = this.#key(kind, namespace, name);
    const old = map?.get(key);
    if (!map || !old) return;
    map.delete(key);
    this.#emit(kind, "DELETED", old, old);
  }

  #emit(kind: Kind, type: WatchEventType, obj: KubeObject, old?: KubeObject): void {
    for (const h of this.#handlers.get(kind) ?? []) h(type, obj, old);
  }
}

/** A writer that records every call and applies status and scale to a MemoryCluster. */
export class RecordingWriter implements ClusterWriter {
  readonly events: { kind: Kind; name: string; event: ObjectEvent }[] = [];
  readonly statusUpdates: { kind: Kind; name: string; status: unknown }[] = [];
  readonly scales: { kind: Kind; name: string; replicas: number }[] = [];
  getScaleCalls = 0;
  #cluster: MemoryCluster;

  constructor(cluster: MemoryCluster) {
    this.#cluster = cluster;
  }

  updateStatus(
    kind: Kind,
    namespace: string | undefined,
    name: string,
    status: unknown,
  ): Promise<void> {
    this.statusUpdates.push({ kind, name, status });
    const obj = this.#cluster.get(kind, namespace, name);
    if (obj) this.#cluster.set(kind, { ...obj, status });
    return Promise.resolve();
  }

  getScale(
    kind: Kind,
    namespace: string,
    name: string,
  ): Promise<{ specReplicas: number; statusReplicas: number }> {
    this.getScaleCalls++;
    const obj = this.#cluster.get(kind, namespace, name);
    if (!obj) return Promise.reject(new Error(`${kind} ${namespace}/${name} not found`));
    return Promise.resolve({
      specReplicas: obj.spec?.replicas ?? 1,
      statusReplicas: obj.status?.replicas ?? 0,
    });
  }

  setScale(kind: Kind, namespace: string, name: string, replicas: number): Promise<void> {
    this.scales.push({ kind, name: `${namespace}/${name}`, replicas });
    const obj = this.#cluster.get(kind, namespace, name);
    if (obj) this.#cluster.set(kind, { ...obj, spec: { ...obj.spec, replicas } });
    return Promise.resolve();
  }

  readonly patches: { kind: Kind; name: string; patch: unknown }[] = [];
  readonly creates: { kind: Kind; name: string; obj: KubeObject }[] = [];
  readonly deletes: { kind: Kind; name: string }[] = [];
  /** Set to make `create` fail with this error. */
  failCreate: Error | null = null;

  /** Records the object and adds it to the cluster (with a uid); rejects when it exists. */
  create(kind: Kind, obj: KubeObject): Promise<KubeObject> {
    const name = `${obj.metadata.namespace ?? ""}/${obj.metadata.name}`;
    if (this.failCreate) return Promise.reject(this.failCreate);
    if (this.#cluster.get(kind, obj.metadata.namespace, obj.metadata.name)) {
      return Promise.reject(new Error(`${kind} ${name} already exists`));
    }
    this.creates.push({ kind, name, obj: structuredClone(obj) });
    const created = this.#cluster.set(kind, {
      ...obj,
      metadata: { ...obj.metadata, uid: obj.metadata.uid ?? `uid-${name}` },
    });
    return Promise.resolve(created);
  }

  /** Records the deletion and removes the object from the cluster. */
  delete(kind: Kind, namespace: string | undefined, name: string): Promise<void> {
    this.deletes.push({ kind, name: `${namespace ?? ""}/${name}` });
    this.#cluster.delete(kind, namespace, name);
    return Promise.resolve();
  }

  /** Every `read` (an uncached GET): `Kind namespace/name`. */
  readonly reads: string[] = [];

  /** The object in the cluster, or null. */
  read(kind: Kind, namespace: string | undefined, name: string): Promise<KubeObject | null> {
    this.reads.push(`${kind} ${namespace ?? ""}/${name}`);
    return Promise.resolve(this.#cluster.get(kind, namespace, name) ?? null);
  }

  /** Records the patch and applies it (RFC 7386) to the object in the cluster. */
  patch(kind: Kind, namespace: string | undefined, name: string, patch: unknown): Promise<void> {
    this.patches.push({ kind, name: `${namespace ?? ""}/${name}`, patch });
    const obj = this.#cluster.get(kind, namespace, name);
    if (!obj) return Promise.reject(new Error(`${kind} ${namespace}/${name} not found`));
    this.#cluster.set(kind, applyMergePatch(obj, patch) as KubeObject);
    return Promise.resolve();
  }

  emitEvent(kind: Kind, obj: KubeObject, event: ObjectEvent): Promise<void> {
    this.events.push({
      kind,
      name: `${obj.metadata.namespace ?? ""}/${obj.metadata.name}`,
      event,
    });
    return Promise.resolve();
  }
}

/** Manual timers and clock: `advance(ms)` fires due timers in order. */
export class ManualTimers {
  now = Date.parse("2024-03-04T10:00:00Z");
  #next = 1;
  #timers = new Map<number, { at: number; fn: () => void }>();

  setTimer = (fn: () => void, ms: number): unknown => {
    const id = this.#next++;
    this.#timers.set(id, { at: this.now + Math.max(0, ms), fn });
    return id;
  };

  clearTimer = (handle: unknown): void => {
    this.#timers.delete(handle as number);
  };

  clock = (): number => this.now;

  /** Number of pending timers. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Move the clock forward, firing due timers (and letting promises settle between them). */
  async advance(ms: number): Promise<void> {
    const end = this.now + ms;
    while (true) {
      await settle();
      let due: [number, { at: number; fn: () => void }] | null = null;
      for (const e of this.#timers) {
        if (e[1].at <= end && (!due || e[1].at < due[1].at)) due = e;
      }
      if (!due) break;
      this.#timers.delete(due[0]);
      this.now = Math.max(this.now, due[1].at);
      due[1].fn();
    }
    this.now = end;
    await settle();
  }
}

/** Let pending promise callbacks run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setTimeout(r, 0));
}

/** A Ready pod. */
export function readyPod(
  name: string,
  options: {
    ip: string;
    labels?: Record<string, string>;
    namespace?: string;
    readySince?: string;
    ready?: boolean;
    deleting?: boolean;
  },
): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: options.namespace ?? "default",
      labels: options.labels ?? { app: "web" },
      creationTimestamp: "2024-01-01T00:00:00Z",
      ...(options.deleting ? { deletionTimestamp: "2024-03-04T09:59:00Z" } : {}),
    },
    status: {
      podIP: options.ip,
      conditions: [{
        type: "Ready",
        status: options.ready === false ? "False" : "True",
        lastTransitionTime: options.readySince ?? "2024-01-01T00:00:00Z",
      }],
    },
  };
}

/** RFC 7386: apply a JSON merge patch to a value. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  const isObj = (v: unknown): v is Record<string, unknown> =>
    typeof v === "object" && v !== null && !Array.isArray(v);
  if (!isObj(patch)) return patch;
  const out: Record<string, unknown> = isObj(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = applyMergePatch(out[k], v);
  }
  return out;
}
