/**
 * A small fake Kubernetes API server for tests: node:http on 127.0.0.1, a random port, or
 * node:https with a given serving certificate (`tls`), optionally asking for client certificates.
 *
 * It speaks the wire format of kube-apiserver for the resources the adapter uses: LIST (with
 * `metadata.resourceVersion`), WATCH (`?watch=true&resourceVersion=N`, chunked NDJSON
 * `{"type","object"}` lines; a too-old resourceVersion gets a 410 `Expired` Status, as an ERROR
 * event like the watch cache sends or as an HTTP 410), GET, POST, PUT (with resourceVersion
 * conflicts), PATCH (merge, strategic merge treated as merge, JSON patch), the status and scale
 * subresources, and errors as metav1.Status objects. Tests change objects directly through
 * `create`/`replace`/`remove` (which bump the resourceVersion and emit watch events), close
 * watches to force reconnects, and read every request from `requests`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import type { KubeObject } from "../../src/cluster/types.ts";

/** A resource the fake serves. */
export interface FakeResource {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
  /** Has a scale subresource (spec.replicas / status.replicas). */
  scale: boolean;
  /** Has a status subresource: PUT/PATCH of the main resource leave status alone. */
  status: boolean;
}

/** What the fake serves by default. */
export const FAKE_RESOURCES: FakeResource[] = [
  res("", "v1", "pods", "Pod", true, false, true),
  res("", "v1", "events", "Event", true, false, false),
  res("apps", "v1", "deployments", "Deployment", true, true, true),
  res("apps", "v1", "statefulsets", "StatefulSet", true, true, true),
  res("argoproj.io", "v1alpha1", "rollouts", "Rollout", true, true, true),
  res(
    "autoscaling",
    "v2",
    "horizontalpodautoscalers",
    "HorizontalPodAutoscaler",
    true,
    false,
    true,
  ),
  res("networking.k8s.io", "v1", "ingresses", "Ingress", true, false, true),
  res("zalando.org", "v1", "routegroups", "RouteGroup", true, false, true),
  res("zalando.org", "v1", "scalingschedules", "ScalingSchedule", true, false, true),
  res("zalando.org", "v1", "clusterscalingschedules", "ClusterScalingSchedule", false, false, true),
  res("coordination.k8s.io", "v1", "leases", "Lease", true, false, false),
];

function res(
  group: string,
  version: string,
  plural: string,
  kind: string,
  namespaced: boolean,
  scale: boolean,
  status: boolean,
): FakeResource {
  return { group, version, plural, kind, namespaced, scale, status };
}

/** Groups whose objects come from CRDs: list items keep apiVersion/kind, like unstructured lists. */
const CUSTOM_GROUPS = new Set(["argoproj.io", "zalando.org"]);

/** One request as the fake received it. */
export interface RecordedRequest {
  method: string;
  /** Path without the query string. */
  path: string;
  query: Record<string, string>;
  contentType: string | undefined;
  authorization: string | undefined;
  /** Parsed JSON body, if any. */
  body: unknown;
  /** Whether the client presented a certificate that `clientCa` signed (HTTPS with `clientCa`). */
  clientAuthorized?: boolean;
}

/** Options of the fake. */
export interface FakeKubeApiOptions {
  /** API groups that answer 404, as if their CRDs were not installed. */
  missingGroups?: string[];
  /** How many watch events are kept for resuming watches; older resourceVersions get 410. */
  historyLimit?: number;
  /** How a too-old watch resourceVersion is answered: an ERROR event (default) or HTTP 410. */
  expiredWatch?: "event" | "status";
  /** Clock for creationTimestamp (ms since the epoch). */
  now?: () => number;
  /**
   * Serve HTTPS with this certificate and key (PEM); with `clientCa`, ask clients for a
   * certificate and record whether they presented one that CA signed.
   */
  tls?: { cert: string; key: string; clientCa?: string };
}

interface WatchEvent {
  rv: number;
  resource: FakeResource;
  type: "ADDED" | "MODIFIED" | "DELETED";
  object: KubeObject;
}

interface Watcher {
  resource: FakeResource;
  namespace: string | undefined;
  res: ServerResponse;
  timer?: ReturnType<typeof setTimeout>;
}

/** A metav1.Status error. */
export class StatusError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }

  /** The metav1.Status body. */
  body(): Record<string, unknown> {
    return {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: this.message,
      reason: this.reason,
      ...(this.details ? { details: this.details } : {}),
      code: this.code,
    };
  }
}

function clone<T>(v: T): T {
  return v === undefined ? v : JSON.parse(JSON.stringify(v));
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** RFC 7386 JSON merge patch. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return clone(patch);
  const out: Record<string, unknown> = isPlainObject(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = applyMergePatch(out[k], v);
  }
  return out;
}

/** RFC 6902 JSON patch (add, replace, remove, test). */
function applyJsonPatch(target: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops)) throw new StatusError(400, "BadRequest", "json patch must be an array");
  const doc = clone(target) as Record<string, unknown>;
  for (const op of ops as Array<{ op: string; path: string; value?: unknown }>) {
    const parts = op.path.split("/").slice(1).map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
    const last = parts.pop();
    let node: any = doc;
    for (const p of parts) {
      if (node[p] === undefined && op.op === "add") node[p] = {};
      node = node[p];
      if (node === undefined) {
        throw new StatusError(422, "Invalid", `json patch path "${op.path}" does not exist`);
      }
    }
    if (last === undefined) throw new StatusError(422, "Invalid", "json patch of the root");
    if (op.op === "add" || op.op === "replace") {
      if (Array.isArray(node) && last === "-") node.push(clone(op.value));
      else node[last] = clone(op.value);
    } else if (op.op === "remove") {
      if (Array.isArray(node)) node.splice(Number(last), 1);
      else delete node[last];
    } else if (op.op === "test") {
      if (JSON.stringify(node[last]) !== JSON.stringify(op.value)) {
        throw new StatusError(422, "Invalid", `json patch test of "${op.path}" failed`);
      }
    } else {
      throw new StatusError(422, "Invalid", `unsupported json patch op "${op.op}"`);
    }
  }
  return doc;
}

function groupVersion(r: FakeResource): string {
  return r.group === "" ? r.version : `${r.group}/${r.version}`;
}

/** `pods` or `deployments.apps`, as kube-apiserver names a resource in messages. */
function qualified(r: FakeResource): string {
  return r.group === "" ? r.plural : `${r.plural}.${r.group}`;
}

interface Route {
  resource: FakeResource;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
}

/** A fake Kubernetes API server. Start with `FakeKubeApi.start()`, stop with `stop()`. */
export class FakeKubeApi {
  /** Every request received, in order. */
  readonly requests: RecordedRequest[] = [];
  /** `http://127.0.0.1:PORT` (`https://` with `tls`). */
  url = "";
  private readonly server: Server;
  private readonly scheme: "http" | "https";
  private readonly askClientCert: boolean;
  private readonly sockets = new Set<Socket>();
  private readonly objects = new Map<string, KubeObject>();
  private readonly history: WatchEvent[] = [];
  private readonly watchers = new Set<Watcher>();
  private readonly missingGroups: Set<string>;
  private readonly historyLimit: number;
  private readonly now: () => number;
  private rv = 100;
  /** The highest resourceVersion dropped from the history (watches from before it get 410). */
  private compactedRv = 100;
  private uidCounter = 0;
  private failures = 0;
  private failureCode = 500;
  private stalls = 0;
  /** How a too-old watch resourceVersion is answered. */
  expiredWatch: "event" | "status";
  /** While true, changes are recorded but not sent to open watches (a stalled connection). */
  holdWatchEvents = false;

  private constructor(options: FakeKubeApiOptions) {
    this.missingGroups = new Set(options.missingGroups ?? []);
    this.historyLimit = options.historyLimit ?? 1000;
    this.expiredWatch = options.expiredWatch ?? "event";
    this.now = options.now ?? (() => Date.now());
    this.scheme = options.tls ? "https" : "http";
    this.askClientCert = options.tls?.clientCa !== undefined;
    const handler = (req: IncomingMessage, res: ServerResponse): void => void this.handle(req, res);
    this.server = options.tls
      ? createHttpsServer({
        cert: options.tls.cert,
        key: options.tls.key,
        ...(options.tls.clientCa
          ? { ca: options.tls.clientCa, requestCert: true, rejectUnauthorized: false }
          : {}),
      }, handler)
      : createServer(handler);
    this.server.on(options.tls ? "secureConnection" : "connection", (s: Socket) => {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
    });
  }

  /** Start a fake on 127.0.0.1 with a random port. */
  static async start(options: FakeKubeApiOptions = {}): Promise<FakeKubeApi> {
    const api = new FakeKubeApi(options);
    await new Promise<void>((resolve, reject) => {
      api.server.once("error", reject);
      api.server.listen(0, "127.0.0.1", () => resolve());
    });
    const addr = api.server.address();
    if (addr === null || typeof addr === "string") throw new Error("fake kube api has no port");
    api.url = `${api.scheme}://127.0.0.1:${addr.port}`;
    return api;
  }

  /** Close every watch and connection and stop listening. */
  async stop(): Promise<void> {
    this.closeWatches();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const s of this.sockets) s.destroy();
    await closed;
  }

  /** The current (latest) resourceVersion. */
  resourceVersion(): string {
    return String(this.rv);
  }

  /** Answer the next `n` requests with an error Status (default 500 InternalError). */
  failNextRequests(n: number, code = 500): void {
    this.failures = n;
    this.failureCode = code;
  }

  /** Record the next `n` requests and never answer them (until `stop()`), as a hung server. */
  stallNextRequests(n: number): void {
    this.stalls = n;
  }

  /** Make a group answer 404 (not installed) or serve it again. */
  setGroupInstalled(group: string, installed: boolean): void {
    if (installed) this.missingGroups.delete(group);
    else this.missingGroups.add(group);
  }

  /** End every open watch (cleanly, like a server-side timeout); returns how many were open. */
  closeWatches(): number {
    const n = this.watchers.size;
    for (const w of [...this.watchers]) this.endWatch(w);
    return n;
  }

  /** Cut the connection of every open watch (no clean end of the response); returns how many. */
  dropWatches(): number {
    const n = this.watchers.size;
    for (const w of [...this.watchers]) {
      this.watchers.delete(w);
      if (w.timer) clearTimeout(w.timer);
      w.res.socket?.destroy();
    }
    return n;
  }

  /** Write a raw line (e.g. a malformed event) to every open watch; returns how many. */
  sendToWatches(line: string): number {
    for (const w of this.watchers) w.res.write(line + "\n");
    return this.watchers.size;
  }

  /** How many watches are open. */
  openWatches(): number {
    return this.watchers.size;
  }

  /** Forget the watch history: watches resuming from any earlier resourceVersion get 410. */
  compact(): void {
    this.compactedRv = this.rv;
    this.history.length = 0;
  }

  /** Requests matching a method and a path (exact or a RegExp). */
  requestsTo(method: string, path: string | RegExp): RecordedRequest[] {
    return this.requests.filter((r) =>
      r.method === method && (typeof path === "string" ? r.path === path : path.test(r.path))
    );
  }

  /** Create an object (its apiVersion/kind name the resource); emits ADDED. Returns the stored copy. */
  create(obj: KubeObject): KubeObject {
    const r = this.resourceOf(obj);
    return clone(this.doCreate(r, this.namespaceOf(r, obj), obj));
  }

  /** Replace an object as given (status included); emits MODIFIED. */
  replace(obj: KubeObject): KubeObject {
    const r = this.resourceOf(obj);
    const ns = this.namespaceOf(r, obj);
    const old = this.mustGet(r, ns, obj.metadata.name);
    const next = clone(obj);
    next.metadata = {
      ...next.metadata,
      uid: old.metadata.uid,
      creationTimestamp: old.metadata.creationTimestamp,
    };
    return clone(this.store(r, ns, next, "MODIFIED"));
  }

  /** Delete an object; emits DELETED. */
  remove(apiVersion: string, kind: string, namespace: string | undefined, name: string): void {
    const r = this.resourceOf({ apiVersion, kind, metadata: { name } });
    this.doDelete(r, r.namespaced ? namespace ?? "default" : undefined, name);
  }

  /** A stored object (a copy), or undefined. */
  object(
    apiVersion: string,
    kind: string,
    namespace: string | undefined,
    name: string,
  ): KubeObject | undefined {
    const r = this.resourceOf({ apiVersion, kind, metadata: { name } });
    return clone(
      this.objects.get(this.key(r, r.namespaced ? namespace ?? "default" : undefined, name)),
    );
  }

  /** Every stored object of a resource (by plural, e.g. "events"), sorted by namespace/name. */
  objectsOf(plural: string): KubeObject[] {
    const out: KubeObject[] = [];
    for (const [k, v] of this.objects) if (k.startsWith(`${plural}|`)) out.push(clone(v));
    return out;
  }

  private resourceOf(obj: KubeObject): FakeResource {
    const r = FAKE_RESOURCES.find((r) => groupVersion(r) === obj.apiVersion && r.kind === obj.kind);
    if (!r) throw new Error(`fake kube api does not serve ${obj.apiVersion} ${obj.kind}`);
    return r;
  }

  private namespaceOf(r: FakeResource, obj: KubeObject): string | undefined {
    return r.namespaced ? obj.metadata.namespace ?? "default" : undefined;
  }

  private key(r: FakeResource, namespace: string | undefined, name: string): string {
    return `${r.plural}|${namespace ?? ""}|${name}`;
  }

  private mustGet(r: FakeResource, namespace: string | undefined, name: string): KubeObject {
    const obj = this.objects.get(this.key(r, namespace, name));
    if (!obj) {
      throw new StatusError(404, "NotFound", `${qualified(r)} "${name}" not found`, {
        name,
        ...(r.group ? { group: r.group } : {}),
        kind: r.plural,
      });
    }
    return obj;
  }

  private doCreate(r: FakeResource, namespace: string | undefined, obj: KubeObject): KubeObject {
    const name = obj.metadata?.name;
    if (!name) {
      throw new StatusError(
        422,
        "Invalid",
        `${r.kind} "" is invalid: metadata.name: Required value`,
      );
    }
    if (this.objects.has(this.key(r, namespace, name))) {
      throw new StatusError(409, "AlreadyExists", `${qualified(r)} "${name}" already exists`, {
        name,
        ...(r.group ? { group: r.group } : {}),
        kind: r.plural,
      });
    }
    const next = clone(obj);
    next.apiVersion = groupVersion(r);
    next.kind = r.kind;
    this.uidCounter++;
    next.metadata = {
      ...next.metadata,
      ...(namespace !== undefined ? { namespace } : {}),
      uid: `00000000-0000-4000-8000-${String(this.uidCounter).padStart(12, "0")}`,
      creationTimestamp: new Date(this.now()).toISOString().replace(/\.\d{3}Z$/, "Z"),
    };
    return this.store(r, namespace, next, "ADDED");
  }

  private doDelete(r: FakeResource, namespace: string | undefined, name: string): KubeObject {
    const obj = this.mustGet(r, namespace, name);
    this.objects.delete(this.key(r, namespace, name));
    this.rv++;
    const gone = clone(obj);
    gone.metadata.resourceVersion = String(this.rv);
    this.emit({ rv: this.rv, resource: r, type: "DELETED", object: gone });
    return gone;
  }

  private store(
    r: FakeResource,
    namespace: string | undefined,
    obj: KubeObject,
    type: "ADDED" | "MODIFIED",
  ): KubeObject {
    this.rv++;
    obj.apiVersion = groupVersion(r);
    obj.kind = r.kind;
    obj.metadata.resourceVersion = String(this.rv);
    if (namespace !== undefined) obj.metadata.namespace = namespace;
    else delete obj.metadata.namespace;
    this.objects.set(this.key(r, namespace, obj.metadata.name), obj);
    this.emit({ rv: this.rv, resource: r, type, object: clone(obj) });
    return obj;
  }

  private emit(ev: WatchEvent): void {
    this.history.push(ev);
    while (this.history.length > this.historyLimit) {
      this.compactedRv = this.history.shift()!.rv;
    }
    if (this.holdWatchEvents) return;
    for (const w of this.watchers) {
      if (this.matches(w, ev)) this.send(w, ev.type, ev.object);
    }
  }

  private matches(w: Watcher, ev: WatchEvent): boolean {
    return ev.resource === w.resource &&
      (w.namespace === undefined || ev.object.metadata.namespace === w.namespace);
  }

  private send(w: Watcher, type: string, object: unknown): void {
    w.res.write(JSON.stringify({ type, object }) + "\n");
  }

  private endWatch(w: Watcher): void {
    if (!this.watchers.delete(w)) return;
    if (w.timer) clearTimeout(w.timer);
    w.res.end();
  }

  private route(path: string): Route {
    const notFound = new StatusError(
      404,
      "NotFound",
      "the server could not find the requested resource",
      {},
    );
    const parts = path.split("/").filter((p) => p !== "");
    let group: string;
    let version: string;
    let rest: string[];
    if (parts[0] === "api" && parts.length >= 2) {
      group = "";
      version = parts[1];
      rest = parts.slice(2);
    } else if (parts[0] === "apis" && parts.length >= 3) {
      group = parts[1];
      version = parts[2];
      rest = parts.slice(3);
    } else {
      throw notFound;
    }
    if (this.missingGroups.has(group)) throw notFound;
    let namespace: string | undefined;
    if (rest[0] === "namespaces" && rest.length >= 3) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    const resource = FAKE_RESOURCES.find((r) =>
      r.group === group && r.version === version && r.plural === rest[0]
    );
    if (!resource || rest.length > 3 || (namespace !== undefined && !resource.namespaced)) {
      throw notFound;
    }
    const subresource = rest[2];
    if (subresource !== undefined && subresource !== "status" && subresource !== "scale") {
      throw notFound;
    }
    if (subresource === "scale" && !resource.scale) throw notFound;
    if (subresource === "status" && !resource.status) throw notFound;
    return { resource, namespace, name: rest[1], subresource };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake");
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    let body: unknown = undefined;
    const record: RecordedRequest = {
      method: req.method ?? "GET",
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      contentType: req.headers["content-type"]?.split(";")[0],
      authorization: req.headers.authorization,
      body: undefined,
    };
    // Bun's https server socket has no getPeerCertificate: `authorized` is what all three tell
    if (this.askClientCert) record.clientAuthorized = (req.socket as TLSSocket).authorized === true;
    this.requests.push(record);
    if (this.stalls > 0) {
      this.stalls--;
      // held without an answer; what was sent is still recorded
      try {
        record.body = text === "" ? undefined : JSON.parse(text);
      } catch {
        // not JSON: no body to show
      }
      return;
    }
    try {
      if (text !== "") {
        try {
          body = JSON.parse(text);
        } catch {
          throw new StatusError(400, "BadRequest", `invalid JSON body: ${text.slice(0, 40)}`);
        }
      }
      record.body = body;
      if (this.failures > 0) {
        this.failures--;
        throw new StatusError(
          this.failureCode,
          "InternalError",
          "Internal error occurred: injected failure",
        );
      }
      const route = this.route(url.pathname);
      if (record.method === "GET" && url.searchParams.get("watch") === "true") {
        this.watch(route, url.searchParams, res);
        return;
      }
      const [code, out] = this.dispatch(
        record.method,
        route,
        body,
        record.contentType,
        url.searchParams.get("labelSelector") ?? "",
      );
      this.json(res, code, out);
    } catch (e) {
      if (e instanceof StatusError) this.json(res, e.code, e.body());
      else this.json(res, 500, new StatusError(500, "InternalError", String(e)).body());
    }
  }

  private json(res: ServerResponse, code: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(code, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(text),
    });
    res.end(text);
  }

  private dispatch(
    method: string,
    route: Route,
    body: unknown,
    contentType: string | undefined,
    labelSelector = "",
  ): [number, unknown] {
    const { resource: r, name, subresource } = route;
    const ns = r.namespaced ? route.namespace : undefined;
    if (r.namespaced && name !== undefined && ns === undefined) {
      throw new StatusError(404, "NotFound", "the server could not find the requested resource");
    }
    if (name === undefined) {
      if (method === "GET") return [200, this.list(r, ns, labelSelector)];
      if (method === "POST") {
        if (!isPlainObject(body)) {
          throw new StatusError(400, "BadRequest", "body must be an object");
        }
        const obj = body as unknown as KubeObject;
        if (ns !== undefined && obj.metadata?.namespace && obj.metadata.namespace !== ns) {
          throw new StatusError(
            400,
            "BadRequest",
            "the namespace of the provided object does not match the namespace sent on the request",
          );
        }
        return [201, this.doCreate(r, ns, obj)];
      }
      throw new StatusError(405, "MethodNotAllowed", `method ${method} not allowed`);
    }
    if (subresource === "scale") return this.scale(method, r, ns, name, body, contentType);
    const current = this.mustGet(r, ns, name);
    if (method === "GET") return [200, current];
    if (method === "DELETE" && subresource === undefined) {
      // DeleteOptions' preconditions, as the API server checks them
      const want = isPlainObject(body) && isPlainObject(body.preconditions)
        ? body.preconditions.resourceVersion
        : undefined;
      const have = this.mustGet(r, ns, name).metadata.resourceVersion;
      if (typeof want === "string" && want !== have) {
        throw new StatusError(
          409,
          "Conflict",
          `Operation cannot be fulfilled on ${r.plural}${
            r.group ? `.${r.group}` : ""
          } "${name}": Precondition failed: ResourceVersion in precondition: ${want}, ResourceVersion in object meta: ${have}`,
        );
      }
      return [200, this.doDelete(r, ns, name)];
    }
    let next: KubeObject;
    if (method === "PUT") {
      if (!isPlainObject(body)) throw new StatusError(400, "BadRequest", "body must be an object");
      next = body as unknown as KubeObject;
      this.checkVersion(r, current, next.metadata?.resourceVersion);
    } else if (method === "PATCH") {
      next = this.patch(current, body, contentType);
    } else {
      throw new StatusError(405, "MethodNotAllowed", `method ${method} not allowed`);
    }
    let merged: KubeObject;
    if (subresource === "status") {
      merged = clone(current);
      merged.status = clone(next.status);
    } else {
      merged = clone(next);
      if (r.status) merged.status = clone(current.status);
      merged.metadata = {
        ...clone(next.metadata ?? current.metadata),
        name: current.metadata.name,
        uid: current.metadata.uid,
        creationTimestamp: current.metadata.creationTimestamp,
      };
    }
    if (merged.status === undefined) delete merged.status;
    return [200, this.store(r, ns, merged, "MODIFIED")];
  }

  private patch(current: unknown, body: unknown, contentType: string | undefined): KubeObject {
    switch (contentType) {
      case "application/merge-patch+json":
      case "application/strategic-merge-patch+json":
        if (!isPlainObject(body)) {
          throw new StatusError(400, "BadRequest", "patch must be an object");
        }
        return applyMergePatch(current, body) as KubeObject;
      case "application/json-patch+json":
        return applyJsonPatch(current, body) as KubeObject;
      default:
        throw new StatusError(
          415,
          "UnsupportedMediaType",
          `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`,
        );
    }
  }

  private checkVersion(r: FakeResource, current: KubeObject, rv: string | undefined): void {
    if (rv !== undefined && rv !== "" && rv !== current.metadata.resourceVersion) {
      throw new StatusError(
        409,
        "Conflict",
        `Operation cannot be fulfilled on ${
          qualified(r)
        } "${current.metadata.name}": the object has been modified; please apply your changes to the latest version and try again`,
        { name: current.metadata.name, ...(r.group ? { group: r.group } : {}), kind: r.plural },
      );
    }
  }

  private scaleOf(obj: KubeObject): Record<string, unknown> {
    const labels = obj.spec?.selector?.matchLabels as Record<string, string> | undefined;
    const selector = labels
      ? Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(",")
      : undefined;
    return {
      kind: "Scale",
      apiVersion: "autoscaling/v1",
      metadata: {
        name: obj.metadata.name,
        namespace: obj.metadata.namespace,
        uid: obj.metadata.uid,
        resourceVersion: obj.metadata.resourceVersion,
        creationTimestamp: obj.metadata.creationTimestamp,
      },
      spec: { replicas: obj.spec?.replicas ?? 0 },
      status: {
        replicas: obj.status?.replicas ?? 0,
        ...(selector !== undefined ? { selector } : {}),
      },
    };
  }

  private scale(
    method: string,
    r: FakeResource,
    ns: string | undefined,
    name: string,
    body: unknown,
    contentType: string | undefined,
  ): [number, unknown] {
    const current = this.mustGet(r, ns, name);
    const scale = this.scaleOf(current);
    if (method === "GET") return [200, scale];
    let next: any;
    if (method === "PUT") {
      if (!isPlainObject(body)) throw new StatusError(400, "BadRequest", "body must be an object");
      next = body;
      this.checkVersion(r, current, next.metadata?.resourceVersion);
    } else if (method === "PATCH") {
      next = this.patch(scale, body, contentType);
    } else {
      throw new StatusError(405, "MethodNotAllowed", `method ${method} not allowed`);
    }
    const replicas = next?.spec?.replicas;
    if (typeof replicas !== "number" || !Number.isInteger(replicas) || replicas < 0) {
      throw new StatusError(
        422,
        "Invalid",
        `Scale.autoscaling "${name}" is invalid: spec.replicas: Invalid value: ${
          JSON.stringify(replicas)
        }: must be greater than or equal to 0`,
      );
    }
    const updated = clone(current);
    updated.spec = { ...updated.spec, replicas };
    return [200, this.scaleOf(this.store(r, ns, updated, "MODIFIED"))];
  }

  private list(
    r: FakeResource,
    ns: string | undefined,
    labelSelector = "",
  ): Record<string, unknown> {
    // equality requirements only (`k=v,k2==v2`), what the adapter's lists send
    const wanted = labelSelector.split(",").filter(Boolean).map((req) => {
      const [k, v] = req.split(/==?/);
      return [k.trim(), (v ?? "").trim()] as const;
    });
    const items: KubeObject[] = [];
    for (const [k, v] of this.objects) {
      if (!k.startsWith(`${r.plural}|`)) continue;
      if (ns !== undefined && v.metadata.namespace !== ns) continue;
      const labels = (v.metadata.labels ?? {}) as Record<string, string>;
      if (wanted.some(([lk, lv]) => labels[lk] !== lv)) continue;
      const item = clone(v);
      if (!CUSTOM_GROUPS.has(r.group)) {
        delete item.apiVersion;
        delete item.kind;
      }
      items.push(item);
    }
    items.sort((a, b) =>
      `${a.metadata.namespace ?? ""}/${a.metadata.name}`.localeCompare(
        `${b.metadata.namespace ?? ""}/${b.metadata.name}`,
      )
    );
    return {
      kind: `${r.kind}List`,
      apiVersion: groupVersion(r),
      metadata: { resourceVersion: String(this.rv) },
      items,
    };
  }

  private watch(route: Route, query: URLSearchParams, res: ServerResponse): void {
    const { resource: r } = route;
    if (route.name !== undefined) {
      throw new StatusError(400, "BadRequest", "watch of a single object by path is not supported");
    }
    const ns = r.namespaced ? route.namespace : undefined;
    const rvParam = query.get("resourceVersion") ?? "";
    const from = rvParam === "" || rvParam === "0" ? undefined : Number(rvParam);
    if (from !== undefined && !Number.isInteger(from)) {
      throw new StatusError(400, "BadRequest", `invalid resource version "${rvParam}"`);
    }
    const expired = from !== undefined && from < this.compactedRv;
    if (expired && this.expiredWatch === "status") {
      throw new StatusError(
        410,
        "Expired",
        `too old resource version: ${from} (${this.compactedRv})`,
      );
    }
    res.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked" });
    res.flushHeaders();
    const w: Watcher = { resource: r, namespace: ns, res };
    if (expired) {
      this.send(
        w,
        "ERROR",
        new StatusError(410, "Expired", `too old resource version: ${from} (${this.compactedRv})`)
          .body(),
      );
      res.end();
      return;
    }
    this.watchers.add(w);
    res.on("close", () => this.endWatch(w));
    if (from === undefined) {
      for (const [k, obj] of this.objects) {
        if (k.startsWith(`${r.plural}|`) && (ns === undefined || obj.metadata.namespace === ns)) {
          this.send(w, "ADDED", obj);
        }
      }
    } else {
      for (const ev of this.history) {
        if (ev.rv > from && this.matches(w, ev)) {
          this.send(w, ev.type, ev.object);
        }
      }
    }
    const timeout = Number(query.get("timeoutSeconds") ?? "");
    if (timeout > 0) w.timer = setTimeout(() => this.endWatch(w), timeout * 1000);
  }
}
