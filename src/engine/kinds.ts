/**
 * The kinds the collectors and fallbacks read: each is ensured (watched and listed) once, the
 * first time a plan needs it, and a kind that cannot be listed is the failure of the
 * collections that read it. Pods are watched so that a pod's values leave the store as soon as
 * it goes.
 */
import type { ClusterView, Kind, KubeObject } from "../cluster/types.ts";
import { errorText } from "./error_text.ts";
import type { Logger } from "./logger.ts";

/** What {@linkcode KindWatch} reads. */
export interface KindWatchOptions {
  cluster: ClusterView;
  logger: Logger;
  /** A pod was deleted, or began to terminate (once `Pod` is ensured). */
  onPodGone: (pod: KubeObject) => void;
}

/**
 * Ensures kinds once each, shares the wait between the plans that need the same kinds.
 *
 * @example
 * ```ts
 * const kinds = new KindWatch({ cluster, logger, onPodGone });
 * await kinds.ensureKinds(["Deployment", "Pod"]);
 * kinds.problem(["Pod"]); // null, or "cannot watch Pod: ..."
 * ```
 */
export class KindWatch {
  readonly #cluster: ClusterView;
  readonly #log: Logger;
  readonly #onPodGone: (pod: KubeObject) => void;
  #ensured = new Map<Kind, Promise<void>>();
  /** Kinds whose `ensure` failed, with the error (a source without `kindError`). */
  #ensureErrors = new Map<Kind, string>();
  #kindsReady = new Map<string, Promise<void>>();
  #unwatch: (() => void)[] = [];

  /** Ensures kinds of `options.cluster`. */
  constructor(options: KindWatchOptions) {
    this.#cluster = options.cluster;
    this.#log = options.logger;
    this.#onPodGone = options.onPodGone;
  }

  /** One promise per distinct list of kinds, shared by the jobs that need them. */
  ensureKinds(kinds: readonly Kind[]): Promise<void> {
    const key = kinds.join(",");
    let p = this.#kindsReady.get(key);
    if (!p) {
      p = Promise.all(kinds.map((k) => this.#ensure(k))).then(() => {});
      this.#kindsReady.set(key, p);
    }
    return p;
  }

  #ensure(kind: Kind): Promise<void> {
    let p = this.#ensured.get(kind);
    if (p) return p;
    if (kind === "Pod") {
      // Values of a pod that goes away leave the store at once, not at the next collection.
      this.#unwatch.push(this.#cluster.watch("Pod", (type, obj, old) => {
        const gone = type === "DELETED" ||
          (type === "MODIFIED" && obj.metadata.deletionTimestamp &&
            !old?.metadata.deletionTimestamp);
        if (gone) this.#onPodGone(obj);
      }));
    }
    p = this.#cluster.ensure(kind).then(() => {
      const error = this.#cluster.kindError?.(kind) ?? null;
      if (error !== null) this.#log.error("cannot watch kind", { kind, error });
    }, (e) => {
      this.#ensureErrors.set(kind, errorText(e));
      this.#log.error("cannot watch kind", { kind, error: errorText(e) });
    });
    this.#ensured.set(kind, p);
    return p;
  }

  /** `cannot watch <Kind>: <error>` when one of `kinds` cannot be listed, or null. */
  problem(kinds: readonly Kind[] | undefined): string | null {
    for (const kind of kinds ?? []) {
      const error = this.#cluster.kindError?.(kind) ?? this.#ensureErrors.get(kind) ?? null;
      if (error !== null) return `cannot watch ${kind}: ${error}`;
    }
    return null;
  }

  /** Stop the watches it started. */
  stop(): void {
    for (const u of this.#unwatch.splice(0)) u();
  }
}
