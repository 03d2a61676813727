/**
 * The cluster view of the local, embedded mode: objects read from manifest files or folders
 * (`serve --manifests`), kept up to date by polling the files, with the adapter's writes applied
 * in memory.
 *
 * Polling (modification time, change time, size and inode of every file) is used rather than
 * fs.watch, which behaves differently on each runtime and platform. Only changed files are
 * read again; a file that no longer parses keeps its previous objects and reports the error.
 */
import { readFile, stat } from "node:fs/promises";
import { settleStringMaps } from "../core/dictionary.ts";
import { manifestFiles, parseManifests } from "./manifests.ts";
import { trimForCache } from "./trim.ts";
import {
  CONVERTED_HPA_VERSIONS,
  convertHpaToV2,
  HpaConversionError,
} from "../core/kubernetes/hpa_conversion.ts";
import {
  type ClusterView,
  type ClusterWriter,
  type Kind,
  KIND_RESOURCES,
  kindOf,
  type KubeObject,
  type ObjectEvent,
  type WatchEventType,
  type WatchHandler,
} from "./types.ts";

/** An event recorded by `FileClusterSource.emitEvent`. */
export interface RecordedEvent {
  kind: Kind;
  namespace: string | undefined;
  name: string;
  type: ObjectEvent["type"];
  reason: string;
  message: string;
  /** When it was emitted, RFC 3339. */
  timestamp: string;
}

/** Options of `FileClusterSource`. */
export interface FileClusterSourceOptions {
  /** Manifest files or folders (`--manifests`, repeatable). */
  paths: string[];
  /** How often files are checked for changes (default 1000 ms; 0 disables polling). */
  pollIntervalMs?: number;
  /** Called once for each new problem (a file that cannot be read or parsed, a duplicate). */
  onError?: (message: string) => void;
  /** Called for each event the adapter emits (the log of file mode). */
  onEvent?: (event: RecordedEvent) => void;
  /** Debug notes (ignored kinds). */
  onDebug?: (message: string) => void;
  /** The clock, ms since the epoch (event timestamps). */
  now?: () => number;
  /** Stamps a file (default node:fs `stat`; tests pass their own). */
  stat?: (file: string) => Promise<FileStamp>;
  /** The wall clock that file timestamps are compared with (default `Date.now`). */
  wallClock?: () => number;
}

interface FileState {
  signature: string;
  /** The file's objects the adapter reads (of a known kind), trimmed, in file order. */
  objects: KubeObject[];
  error?: string;
  /**
   * The text read, kept only while the file's timestamps were too close to the read for the
   * signature to show a later write (see RACY_MS): a same-size write in the same timestamp tick
   * leaves the signature as it was, so such a file is read again and its text compared.
   */
  racyText?: string;
}

/**
 * How close to a read (ms) a file's mtime or ctime may be for a later write to get the same
 * timestamps. Linux takes file timestamps from a coarse clock (ticks of 1-10 ms); some file
 * systems keep 1-2 s. Git calls such index entries "racily clean" and compares content.
 */
const RACY_MS = 2000;

/** The stamp of a file that says whether it may have changed. */
export interface FileStamp {
  mtimeMs: number;
  ctimeMs: number;
  size: number;
  ino: number;
}

/** A write applied in memory, kept while the file's own value is the one it replaced. */
interface Override<T> {
  /** JSON of the file's value when the write was made. */
  file: string;
  value: T;
}

interface Overrides {
  /** The object as its file defines it (what is served is a copy with the writes applied). */
  base: KubeObject;
  status?: Override<unknown>;
  replicas?: Override<number>;
}

const KINDS = Object.keys(KIND_RESOURCES) as Kind[];

function clone<T>(v: T): T {
  return v === undefined ? v : JSON.parse(JSON.stringify(v));
}

/** JSON of an object without `metadata.resourceVersion`, to tell real changes. */
function jsonWithoutVersion(obj: KubeObject): string {
  const { resourceVersion: _rv, ...metadata } = obj.metadata;
  return JSON.stringify({ ...obj, metadata });
}

function errorMessage(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  if (err?.code === "ENOENT") return "no such file or directory";
  return err instanceof Error ? err.message : String(e);
}

/**
 * A `ClusterView` and `ClusterWriter` over manifest files. Objects get a `resourceVersion`
 * that changes whenever they do; namespaced objects without a namespace are in "default".
 * Writes change only the in-memory objects: a status or replica count written here survives a
 * reload of its file unless the file itself changes that value.
 */
export class FileClusterSource implements ClusterView, ClusterWriter {
  readonly #paths: string[];
  readonly #pollIntervalMs: number;
  readonly #onError: (message: string) => void;
  readonly #onEvent: (event: RecordedEvent) => void;
  readonly #onDebug: (message: string) => void;
  readonly #now: () => number;
  readonly #stat: (file: string) => Promise<FileStamp>;
  readonly #wallClock: () => number;
  #files = new Map<string, FileState>();
  /**
   * Objects as served (overrides applied, resourceVersion set). An object without overrides is
   * served as its file defines it, so files' objects are found here or, for the few with
   * overrides, in `#overrides`: no second map of every object is kept.
   */
  readonly #current = new Map<Kind, Map<string, KubeObject>>();
  readonly #overrides = new Map<string, Overrides>();
  readonly #handlers = new Map<Kind, Set<WatchHandler>>();
  readonly #recorded: RecordedEvent[] = [];
  readonly #ignored = new Set<string>();
  readonly #reported = new Set<string>();
  #currentErrors: string[] = [];
  #resourceVersion = 0;
  /** Change counters by kind and namespace (see `version`). */
  readonly #versions = new Map<string, number>();
  #initial?: Promise<void>;
  #polling: Promise<void> = Promise.resolve();
  #timer?: ReturnType<typeof setTimeout>;
  #closed = false;

  constructor(options: FileClusterSourceOptions) {
    this.#paths = [...options.paths];
    this.#pollIntervalMs = options.pollIntervalMs ?? 1000;
    this.#onError = options.onError ?? (() => {});
    this.#onEvent = options.onEvent ?? (() => {});
    this.#onDebug = options.onDebug ?? (() => {});
    this.#now = options.now ?? (() => Date.now());
    this.#stat = options.stat ?? ((file) => stat(file));
    this.#wallClock = options.wallClock ?? (() => Date.now());
    for (const k of KINDS) this.#current.set(k, new Map());
  }

  /** Read the files (the first call) and start polling; resolves after the first read. */
  start(): Promise<void> {
    this.#initial ??= this.refresh().then(() => this.#schedule());
    return this.#initial;
  }

  /** Resolves once the files have been read. Every kind is always loaded. */
  async ensure(kind: Kind): Promise<void> {
    if (!Object.hasOwn(KIND_RESOURCES, kind)) throw new Error(`unknown kind "${kind}"`);
    await this.start();
  }

  /** Files cannot fail to be watched: always null. */
  kindError(_kind: Kind): string | null {
    return null;
  }

  /** Objects of a kind, in the order they first appeared. Do not mutate them. */
  list(kind: Kind, namespace?: string): KubeObject[] {
    const all = [...(this.#current.get(kind)?.values() ?? [])];
    if (namespace === undefined || !KIND_RESOURCES[kind].namespaced) return all;
    return all.filter((o) => o.metadata.namespace === namespace);
  }

  /** One object (namespace defaults to "default" for namespaced kinds). */
  get(kind: Kind, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.#current.get(kind)?.get(this.#key(kind, namespace, name));
  }

  /** A counter that changes whenever an object of `kind` in `namespace` does. */
  version(kind: Kind, namespace: string): number {
    return this.#versions.get(`${kind}|${namespace}`) ?? 0;
  }

  /** Subscribe to changes of a kind; starts reading the files if not yet started. */
  watch(kind: Kind, handler: WatchHandler): () => void {
    let set = this.#handlers.get(kind);
    if (!set) this.#handlers.set(kind, set = new Set());
    set.add(handler);
    this.start().catch((e) => this.#onError(errorMessage(e)));
    return () => void set.delete(handler);
  }

  /** Stop polling. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#polling;
  }

  /** Check the files now (and emit what changed); polls never overlap. */
  refresh(): Promise<void> {
    const next = this.#polling.then(() => (this.#closed ? undefined : this.#poll()));
    this.#polling = next.catch(() => {});
    return next;
  }

  /** The current problems: files that cannot be read or parsed, duplicate objects. */
  errors(): string[] {
    return [...this.#currentErrors];
  }

  /** Every event emitted so far, oldest first. */
  events(): RecordedEvent[] {
    return clone(this.#recorded);
  }

  /** Replace `status` in memory; emits MODIFIED if it changed. */
  async updateStatus(
    kind: Kind,
    namespace: string | undefined,
    name: string,
    status: unknown,
  ): Promise<void> {
    const key = this.#key(kind, namespace, name);
    const base = this.#mustBase(kind, key, "update status of");
    const o = this.#overridesOf(kind, key, base);
    o.status = { file: JSON.stringify(base.status ?? null), value: clone(status) };
    this.#recompute(kind, key, base);
  }

  /** `spec.replicas` and `status.replicas` (which defaults to spec: no controller runs). */
  async getScale(
    kind: Kind,
    namespace: string,
    name: string,
  ): Promise<{ specReplicas: number; statusReplicas: number }> {
    this.#scaleKind(kind);
    const key = this.#key(kind, namespace, name);
    const obj = this.#current.get(kind)?.get(key);
    if (!obj) throw new Error(`get scale of ${kind} ${key}: not found`);
    const specReplicas = typeof obj.spec?.replicas === "number" ? obj.spec.replicas : 1;
    const statusReplicas = typeof obj.status?.replicas === "number"
      ? obj.status.replicas
      : specReplicas;
    return { specReplicas, statusReplicas };
  }

  /** Set `spec.replicas` and `status.replicas` in memory; emits MODIFIED if they changed. */
  async setScale(kind: Kind, namespace: string, name: string, replicas: number): Promise<void> {
    this.#scaleKind(kind);
    const key = this.#key(kind, namespace, name);
    if (!Number.isInteger(replicas) || replicas < 0) {
      throw new Error(`invalid replicas ${replicas} for ${kind} ${key}`);
    }
    const base = this.#mustBase(kind, key, "set scale of");
    const served = this.#current.get(kind)!.get(key)!;
    const o = this.#overridesOf(kind, key, base);
    o.replicas = { file: JSON.stringify(base.spec?.replicas ?? null), value: replicas };
    o.status = {
      file: JSON.stringify(base.status ?? null),
      value: { ...clone(served.status ?? {}), replicas },
    };
    this.#recompute(kind, key, base);
  }

  /**
   * Refused: in file mode the manifests are the truth, and writers that patch objects (the
   * replica guard) compute and log their decisions instead of writing them.
   */
  async patch(kind: Kind, namespace: string | undefined, name: string): Promise<void> {
    throw new Error(
      `patch ${kind} ${this.#key(kind, namespace, name)}: file mode does not change objects`,
    );
  }

  /** Refused: file mode does not change objects (see `patch`). */
  async create(kind: Kind, obj: KubeObject): Promise<KubeObject> {
    throw new Error(
      `create ${kind} ${
        this.#key(kind, obj.metadata.namespace, obj.metadata.name)
      }: file mode does not change objects`,
    );
  }

  /** Refused: file mode does not change objects (see `patch`). */
  async delete(kind: Kind, namespace: string | undefined, name: string): Promise<void> {
    throw new Error(
      `delete ${kind} ${this.#key(kind, namespace, name)}: file mode does not change objects`,
    );
  }

  /** An object of the manifests (a Secret too), or null. */
  async read(kind: Kind, namespace: string | undefined, name: string): Promise<KubeObject | null> {
    const obj = this.#current.get(kind)?.get(this.#key(kind, namespace, name));
    return obj ? clone(obj) : null;
  }

  /** Record an event in memory and pass it to `onEvent`. */
  async emitEvent(kind: Kind, obj: KubeObject, event: ObjectEvent): Promise<void> {
    const recorded: RecordedEvent = {
      kind,
      namespace: obj.metadata.namespace,
      name: obj.metadata.name,
      type: event.type,
      reason: event.reason,
      message: event.message,
      timestamp: new Date(this.#now()).toISOString().replace(/\.\d{3}Z$/, "Z"),
    };
    this.#recorded.push(recorded);
    this.#onEvent(clone(recorded));
  }

  #scaleKind(kind: Kind): void {
    if (!KIND_RESOURCES[kind]?.scale) throw new Error(`kind "${kind}" has no scale subresource`);
  }

  #key(kind: Kind, namespace: string | undefined, name: string): string {
    return KIND_RESOURCES[kind].namespaced ? `${namespace ?? "default"}/${name}` : name;
  }

  /** The object as its file defines it: the served one unless writes were applied to it. */
  #mustBase(kind: Kind, key: string, what: string): KubeObject {
    const base = this.#overrides.get(`${kind}|${key}`)?.base ?? this.#current.get(kind)?.get(key);
    if (!base) throw new Error(`${what} ${kind} ${key}: not found`);
    return base;
  }

  #overridesOf(kind: Kind, key: string, base: KubeObject): Overrides {
    const id = `${kind}|${key}`;
    let o = this.#overrides.get(id);
    if (!o) this.#overrides.set(id, o = { base });
    return o;
  }

  #schedule(): void {
    if (this.#closed || this.#pollIntervalMs <= 0) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.refresh().catch((e) => this.#report(errorMessage(e))).finally(() => this.#schedule());
    }, this.#pollIntervalMs);
  }

  #report(message: string): void {
    if (this.#reported.has(message)) return;
    this.#reported.add(message);
    this.#onError(message);
  }

  async #poll(): Promise<void> {
    const pathErrors: string[] = [];
    const next = new Map<string, FileState>();
    for (const path of this.#paths) {
      let files: string[];
      try {
        files = await manifestFiles(path);
      } catch (e) {
        pathErrors.push(`${path}: ${errorMessage(e)}`);
        if ((e as NodeJS.ErrnoException).code !== "ENOENT") {
          // keep what was read below an unreadable path
          for (const [f, s] of this.#files) if (f.startsWith(path)) next.set(f, s);
        }
        continue;
      }
      for (const file of files) {
        if (next.has(file)) continue;
        const state = await this.#readFile(file);
        if (state) next.set(file, state);
      }
    }
    // Nothing changed on disk (the usual poll): every served object is already up to date,
    // and rebuilding them all (a clone and a JSON text each) every second is what costs.
    const unchanged = pathErrors.length === 0 && this.#files.size > 0 &&
      next.size === this.#files.size && [...next].every(([f, s]) => this.#files.get(f) === s);
    this.#files = next;
    if (unchanged) return;
    const bases = new Map<Kind, Map<string, KubeObject>>();
    for (const k of KINDS) bases.set(k, new Map());
    const sourceOf = new Map<string, string>();
    const errors = [...pathErrors];
    for (const [file, state] of next) {
      if (state.error) errors.push(state.error);
      for (const object of state.objects) {
        const kind = kindOf(object.apiVersion, object.kind)!;
        const key = this.#key(kind, object.metadata.namespace, object.metadata.name);
        const id = `${kind}|${key}`;
        const first = sourceOf.get(id);
        if (first !== undefined) {
          errors.push(
            `${file}: duplicate ${kind} "${key}" ignored (first defined in ${first})`,
          );
          continue;
        }
        sourceOf.set(id, file);
        bases.get(kind)!.set(key, object);
      }
    }
    this.#currentErrors = errors;
    for (const e of errors) this.#report(e);
    // a problem that went away may be reported again if it comes back
    for (const r of [...this.#reported]) if (!errors.includes(r)) this.#reported.delete(r);
    for (const kind of KINDS) {
      const next = bases.get(kind)!;
      const gone = [...this.#current.get(kind)!.keys()].filter((key) => !next.has(key));
      for (const [key, base] of next) this.#recompute(kind, key, base);
      for (const key of gone) this.#recompute(kind, key, undefined);
    }
  }

  /** Read one file if it changed since the last poll; undefined if it is gone. */
  async #readFile(file: string): Promise<FileState | undefined> {
    const previous = this.#files.get(file);
    let signature: string;
    let text: string;
    let racy: boolean;
    try {
      const checkedAt = this.#wallClock();
      const s = await this.#stat(file);
      signature = `${s.mtimeMs}:${s.ctimeMs}:${s.size}:${s.ino}`;
      const same = previous !== undefined && previous.signature === signature;
      if (same && previous.racyText === undefined) return previous;
      text = await readFile(file, "utf8");
      racy = checkedAt - Math.max(s.mtimeMs, s.ctimeMs) < RACY_MS;
      if (same && previous.racyText === text) {
        if (!racy) delete previous.racyText;
        return previous;
      }
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      return {
        signature: "",
        objects: previous?.objects ?? [],
        error: `${file}: ${errorMessage(e)}`,
      };
    }
    try {
      const objects = this.#objectsOf(parseManifests(text, file), file);
      return { signature, objects, ...(racy ? { racyText: text } : {}) };
    } catch (e) {
      return {
        signature,
        objects: previous?.objects ?? [],
        error: errorMessage(e),
        ...(racy ? { racyText: text } : {}),
      };
    }
  }

  #objectsOf(objects: KubeObject[], file: string): KubeObject[] {
    const out: KubeObject[] = [];
    for (const read of objects) {
      const raw = servedHpa(read, file);
      const kind = kindOf(raw.apiVersion, raw.kind);
      if (!kind) {
        const what = `${raw.apiVersion ?? "(no apiVersion)"} ${raw.kind ?? "(no kind)"}`;
        if (!this.#ignored.has(what)) {
          this.#ignored.add(what);
          this.#onDebug(
            `ignoring ${what} objects (first in ${file}): not a kind the adapter reads`,
          );
        }
        continue;
      }
      // The parser's objects are new and ours: only what is set here (the top level and its
      // metadata) is copied, in case a YAML alias shares it; nested values are never mutated.
      const object: KubeObject = trimForCache(kind, { ...raw, metadata: { ...raw.metadata } });
      if (KIND_RESOURCES[kind].namespaced) object.metadata.namespace ??= "default";
      else delete object.metadata.namespace;
      delete object.metadata.resourceVersion;
      out.push(object);
    }
    return out;
  }

  /**
   * Rebuild one served object from its base and overrides; emit what changed. An object
   * without overrides is served as its base itself (no second copy of every object is kept):
   * bases are never mutated but for the resourceVersion, and consumers do not mutate objects.
   */
  #recompute(kind: Kind, key: string, base: KubeObject | undefined): void {
    const id = `${kind}|${key}`;
    const served = this.#current.get(kind)!;
    const old = served.get(key);
    if (!base) {
      this.#overrides.delete(id);
      if (old) {
        served.delete(key);
        this.#emit(kind, "DELETED", old, old);
      }
      return;
    }
    let obj = base;
    const o = this.#overrides.get(id);
    if (o) {
      o.base = base;
      const status = o.status && o.status.file === JSON.stringify(base.status ?? null);
      const replicas = o.replicas &&
        o.replicas.file === JSON.stringify(base.spec?.replicas ?? null);
      if (!status) delete o.status;
      if (!replicas) delete o.replicas;
      if (!o.status && !o.replicas) this.#overrides.delete(id);
      else {
        obj = settleStringMaps(clone(base));
        if (o.status) {
          if (o.status.value === undefined) delete obj.status;
          else obj.status = clone(o.status.value);
        }
        if (o.replicas) obj.spec = { ...obj.spec, replicas: o.replicas.value };
      }
    }
    // Unchanged: the same base served again, or an equal object (an unchanged file re-read,
    // an override that changes nothing). Compared without the resourceVersion, on change only.
    if (obj === old) return;
    if (old && jsonWithoutVersion(obj) === jsonWithoutVersion(old)) {
      // Keep serving the old version, but from the new base (the old one is dropped).
      if (obj === base) {
        obj.metadata.resourceVersion = old.metadata.resourceVersion;
        served.set(key, obj);
      }
      return;
    }
    obj.metadata.resourceVersion = String(++this.#resourceVersion);
    served.set(key, obj);
    this.#emit(kind, old ? "MODIFIED" : "ADDED", obj, old);
  }

  #emit(kind: Kind, type: WatchEventType, obj: KubeObject, old?: KubeObject): void {
    const v = `${kind}|${obj.metadata.namespace ?? ""}`;
    this.#versions.set(v, (this.#versions.get(v) ?? 0) + 1);
    for (const h of [...(this.#handlers.get(kind) ?? [])]) {
      try {
        h(type, obj, old);
      } catch (e) {
        this.#onError(`watch handler of ${kind} failed: ${errorMessage(e)}`);
      }
    }
  }
}

/**
 * An autoscaling/v1 or v2beta2 HorizontalPodAutoscaler as the API server serves it as
 * autoscaling/v2 (core/kubernetes/hpa_conversion.ts), any other object as it is. Throws, naming
 * the file and the HPA, when the API server would refuse the object.
 */
function servedHpa(object: KubeObject, file: string): KubeObject {
  if (
    object.kind !== "HorizontalPodAutoscaler" || object.apiVersion === undefined ||
    !CONVERTED_HPA_VERSIONS.includes(object.apiVersion)
  ) {
    return object;
  }
  try {
    return convertHpaToV2(object) as KubeObject;
  } catch (e) {
    if (!(e instanceof HpaConversionError)) throw e;
    throw new Error(
      `${file}: ${object.apiVersion} HorizontalPodAutoscaler ${
        object.metadata.namespace ?? "default"
      }/${object.metadata.name}: ${e.message}`,
    );
  }
}
