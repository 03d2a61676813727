/**
 * The adapter's writes of objects other than events: status through the status subresource, and
 * replicas read and set through the scale subresource, each with a JSON merge patch.
 *
 * @module
 */
import { describeError, type KubeHttp, statusCodeOf } from "./kube_http.ts";
import { MERGE_PATCH, replacingMergePatch } from "./merge_patch.ts";
import type { TokenBucket } from "./rate_limiter.ts";
import {
  apiVersionOf,
  collectionPath,
  type Kind,
  KIND_RESOURCES,
  type KubeObject,
} from "./types.ts";

/** Options of `KubeWriter`. */
export interface KubeWriterOptions {
  /** The HTTP layer the requests go through. */
  http: KubeHttp;
  /** The rate limit each request waits on. */
  bucket: TokenBucket;
  /** The cached object (its status is what a status write replaces), or undefined. */
  cached: (kind: Kind, namespace: string | undefined, name: string) => KubeObject | undefined;
}

/** Status and scale writes to the Kubernetes API. */
export class KubeWriter {
  readonly #http: KubeHttp;
  readonly #bucket: TokenBucket;
  readonly #cached: KubeWriterOptions["cached"];

  constructor(options: KubeWriterOptions) {
    this.#http = options.http;
    this.#bucket = options.bucket;
    this.#cached = options.cached;
  }

  /** Replace `status` with a JSON merge patch on the status subresource. */
  async updateStatus(
    kind: Kind,
    namespace: string | undefined,
    name: string,
    status: unknown,
  ): Promise<void> {
    const r = KIND_RESOURCES[kind];
    const ns = r.namespaced ? namespace ?? "default" : undefined;
    const body = { status: replacingMergePatch(this.#cached(kind, ns, name)?.status, status) };
    await this.#bucket.take();
    try {
      await this.#http.json(
        "PATCH",
        `${collectionPath(kind, ns)}/${encodeURIComponent(name)}/status`,
        body,
        MERGE_PATCH,
      );
    } catch (e) {
      throw new Error(
        `update status of ${kind} ${ns ? `${ns}/` : ""}${name}: ${describeError(e)}`,
      );
    }
  }

  /** Read replicas through the scale subresource (Deployment, StatefulSet, Rollout). */
  async getScale(
    kind: Kind,
    namespace: string,
    name: string,
  ): Promise<{ specReplicas: number; statusReplicas: number }> {
    await this.#bucket.take();
    let scale: { spec?: { replicas?: number }; status?: { replicas?: number } } | null;
    try {
      scale = await this.#http.json("GET", scalePath(kind, namespace, name)) as typeof scale;
    } catch (e) {
      throw new Error(`get scale of ${kind} ${namespace}/${name}: ${describeError(e)}`);
    }
    return {
      specReplicas: scale?.spec?.replicas ?? 0,
      statusReplicas: scale?.status?.replicas ?? 0,
    };
  }

  /** Change an object with a JSON merge patch on the object itself. */
  async patch(
    kind: Kind,
    namespace: string | undefined,
    name: string,
    patch: unknown,
  ): Promise<void> {
    const ns = KIND_RESOURCES[kind].namespaced ? namespace ?? "default" : undefined;
    await this.#bucket.take();
    try {
      await this.#http.json(
        "PATCH",
        `${collectionPath(kind, ns)}/${encodeURIComponent(name)}`,
        patch,
        MERGE_PATCH,
      );
    } catch (e) {
      throw new Error(`patch ${kind} ${ns ? `${ns}/` : ""}${name}: ${describeError(e)}`);
    }
  }

  /** Create an object; resolves with the object as created. */
  async create(kind: Kind, obj: KubeObject): Promise<KubeObject> {
    const ns = KIND_RESOURCES[kind].namespaced ? obj.metadata.namespace ?? "default" : undefined;
    const body = { ...obj, apiVersion: apiVersionOf(kind), kind };
    await this.#bucket.take();
    try {
      return await this.#http.json("POST", collectionPath(kind, ns), body) as KubeObject;
    } catch (e) {
      throw new Error(
        `create ${kind} ${ns ? `${ns}/` : ""}${obj.metadata.name}: ${describeError(e)}`,
      );
    }
  }

  /** Delete an object; a 404 counts as deleted. */
  async delete(kind: Kind, namespace: string | undefined, name: string): Promise<void> {
    const ns = KIND_RESOURCES[kind].namespaced ? namespace ?? "default" : undefined;
    await this.#bucket.take();
    try {
      await this.#http.json("DELETE", `${collectionPath(kind, ns)}/${encodeURIComponent(name)}`);
    } catch (e) {
      if (statusCodeOf(e) === 404) return;
      throw new Error(`delete ${kind} ${ns ? `${ns}/` : ""}${name}: ${describeError(e)}`);
    }
  }

  /** Read one object from the API; null on 404. */
  async read(kind: Kind, namespace: string | undefined, name: string): Promise<KubeObject | null> {
    const ns = KIND_RESOURCES[kind].namespaced ? namespace ?? "default" : undefined;
    await this.#bucket.take();
    try {
      return await this.#http.json(
        "GET",
        `${collectionPath(kind, ns)}/${encodeURIComponent(name)}`,
      ) as KubeObject;
    } catch (e) {
      if (statusCodeOf(e) === 404) return null;
      throw new Error(`get ${kind} ${ns ? `${ns}/` : ""}${name}: ${describeError(e)}`);
    }
  }

  /** Set `spec.replicas` with a JSON merge patch on the scale subresource. */
  async setScale(kind: Kind, namespace: string, name: string, replicas: number): Promise<void> {
    const path = scalePath(kind, namespace, name);
    if (!Number.isInteger(replicas) || replicas < 0) {
      throw new Error(`invalid replicas ${replicas} for ${kind} ${namespace}/${name}`);
    }
    await this.#bucket.take();
    try {
      await this.#http.json("PATCH", path, { spec: { replicas } }, MERGE_PATCH);
    } catch (e) {
      throw new Error(`set scale of ${kind} ${namespace}/${name}: ${describeError(e)}`);
    }
  }
}

/** The URL path of an object's scale subresource; throws for a kind without one. */
function scalePath(kind: Kind, namespace: string, name: string): string {
  if (!KIND_RESOURCES[kind].scale) throw new Error(`kind "${kind}" has no scale subresource`);
  return `${collectionPath(kind, namespace)}/${encodeURIComponent(name)}/scale`;
}
