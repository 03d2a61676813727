/**
 * The Hono app of the aggregated API server: `custom.metrics.k8s.io` (v1beta1, v1beta2) and
 * `external.metrics.k8s.io` (v1beta1) read from the store, with the discovery documents,
 * `/version`, `/openapi/v2` and the health endpoints. It knows no runtime, no TLS and no
 * authentication: `src/runtime/` serves it, and an `authorize` middleware can be plugged in
 * (health paths never pass through it).
 *
 * Bodies use the exact JSON of k8s.io/metrics (field names, order and omissions as Go writes
 * them); errors are `metav1.Status`. A read that matches nothing answers 404 with the reason,
 * which the HPA controller shows in `kubectl describe hpa`.
 *
 * @module
 */

import { Hono } from "hono";
import type { MiddlewareHandler } from "hono";
import type { KubeObject } from "../cluster/types.ts";
import {
  formatSelector,
  matchesSelector,
  parseSelector,
  type Selector,
} from "../core/label_selector.ts";
import { formatQuantity } from "../core/quantity.ts";
import type { LabelSelector } from "../core/types.ts";
import {
  customLookupKey,
  type CustomLookupOptions,
  formatTimestamp,
  type MetricStore,
} from "../store/store.ts";
import type { CustomItem, CustomLookup, ExternalItem, ExternalLookup } from "../store/types.ts";
import type { PlainRequest, PlainResponse } from "../runtime/serve.ts";
import type { RequestObservation } from "./own_metrics.ts";
import { STATUS_HEADERS, statusPlain, statusResponse } from "./status.ts";

/** The custom metrics API group. */
export const CUSTOM_GROUP = "custom.metrics.k8s.io";
/** The external metrics API group. */
export const EXTERNAL_GROUP = "external.metrics.k8s.io";
const CUSTOM_VERSIONS = ["v1beta2", "v1beta1"] as const;
const EXTERNAL_VERSIONS = ["v1beta1"] as const;

/** Where pods come from, for `labelSelector` on pods (served from a watch cache, no LIST). */
export interface PodLister {
  /** The pods of a namespace. */
  listPods(namespace: string): KubeObject[];
  /** One pod by name; when given, wildcard reads look up only the pods that have values. */
  getPod?(namespace: string, name: string): KubeObject | undefined;
  /**
   * A counter that changes whenever a pod of the namespace does; when given, the servable pods
   * matching a `labelSelector` are worked out once and reused until it changes.
   */
  version?(namespace: string): number;
}

/** What `/version` reports (`version.Info`). */
export interface VersionInfo {
  /** e.g. `v0.1.0`. */
  gitVersion: string;
  gitCommit?: string;
  gitTreeState?: string;
  buildDate?: string;
  /** The runtime, e.g. `node 20.20.0` (Go servers write their Go version here). */
  goVersion?: string;
  compiler?: string;
  platform?: string;
}

/** Options of {@linkcode createApp}. */
export interface ApiOptions {
  store: MetricStore;
  pods: PodLister;
  /** The clock, ms since the epoch; every read is checked against the TTL at this time. */
  now(): number;
  /** Serve `custom.metrics.k8s.io` (`--enable-custom-metrics-api`). Default true. */
  enableCustom?: boolean;
  /** Serve `external.metrics.k8s.io` (`--enable-external-metrics-api`). Default true. */
  enableExternal?: boolean;
  /** Initial sync done and serving; until then `/readyz` fails and metric reads answer 503. */
  ready(): boolean;
  version?: VersionInfo;
  /**
   * Authentication/authorization middleware for every path but the health ones. When it has
   * a `fast` check, metric reads it allows are answered on the server's fast path.
   */
  authorize?: MiddlewareHandler & { fast?: FastAuthorize };
  /** Called once per request after the response is made (own metrics). */
  onRequest?: (obs: RequestObservation) => void;
}

/**
 * A synchronous authorization check for the fast path: true when the `authorize` middleware
 * would let the request through without any I/O, null when the middleware has to run.
 */
export type FastAuthorize = (request: PlainRequest) => true | null;

/** An app that also answers metric reads without Request/Response objects (see serve.ts). */
export type ApiApp = Hono & { fastFetch(request: PlainRequest): PlainResponse | null };

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...STATUS_HEADERS } });
}

function plainJson(body: string, status = 200): PlainResponse {
  return { status, headers: STATUS_HEADERS, body };
}

const utf8 = new TextEncoder();

/** A 200 JSON answer whose bytes are kept with it (made once, written many times). */
interface ReadyBody {
  body: string;
  bytes: Uint8Array;
}

function readyBody(body: string): ReadyBody {
  return { body, bytes: utf8.encode(body) };
}

function plainReady(ready: ReadyBody): PlainResponse {
  return { status: 200, headers: STATUS_HEADERS, body: ready.body, bytes: ready.bytes };
}

/** Ready bodies of single-item lists, kept with the item they were made from. */
const itemBodies = new WeakMap<object, Map<string, ReadyBody>>();

function itemBody(item: object, key: string, make: () => string): ReadyBody {
  let bodies = itemBodies.get(item);
  if (!bodies) itemBodies.set(item, bodies = new Map());
  let ready = bodies.get(key);
  if (!ready) bodies.set(key, ready = readyBody(make()));
  return ready;
}

function toResponse(plain: PlainResponse): Response {
  return new Response(plain.body, { status: plain.status, headers: { ...plain.headers } });
}

function plainNotFound(): PlainResponse {
  return statusPlain("NotFound", "the server could not find the requested resource");
}

function text(body: string, status = 200): Response {
  return new Response(body, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff" },
  });
}

// -- bodies -------------------------------------------------------------------------------

/** `v1.ObjectReference` with Go's field order and omissions. */
function describedObject(item: CustomItem): Record<string, string> {
  const ref: Record<string, string> = {};
  if (item.describedKind) ref.kind = item.describedKind.kind;
  // a Namespace is cluster-scoped; the store keys its values by the namespace itself
  if (item.namespace && item.groupResource !== "namespaces") ref.namespace = item.namespace;
  ref.name = item.objectName;
  if (item.describedKind) ref.apiVersion = item.describedKind.apiVersion;
  return ref;
}

/** `metav1.LabelSelector` JSON: both parts omitted when empty. */
function selectorJson(ls: LabelSelector): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (ls.matchLabels && Object.keys(ls.matchLabels).length > 0) {
    out.matchLabels = Object.fromEntries(
      Object.keys(ls.matchLabels).sort().map((k) => [k, ls.matchLabels![k]]),
    );
  }
  if (ls.matchExpressions && ls.matchExpressions.length > 0) {
    out.matchExpressions = ls.matchExpressions.map((e) => ({
      key: e.key,
      operator: e.operator,
      ...(e.values && e.values.length > 0 ? { values: e.values } : {}),
    }));
  }
  return out;
}

/** The request's metric selector as a `metav1.LabelSelector` (null when empty). */
function labelSelectorOf(sel: Selector): LabelSelector | null {
  if (sel.length === 0) return null;
  const matchLabels: Record<string, string> = {};
  const matchExpressions: NonNullable<LabelSelector["matchExpressions"]> = [];
  for (const r of sel) {
    switch (r.operator) {
      case "=":
      case "==":
        matchLabels[r.key] = r.values[0];
        break;
      case "in":
        matchExpressions.push({ key: r.key, operator: "In", values: [...r.values] });
        break;
      case "!=":
      case "notin":
        matchExpressions.push({ key: r.key, operator: "NotIn", values: [...r.values] });
        break;
      case "exists":
        matchExpressions.push({ key: r.key, operator: "Exists" });
        break;
      case "!":
        matchExpressions.push({ key: r.key, operator: "DoesNotExist" });
        break;
      default:
        // gt/lt have no LabelSelector form; the HPA never sends them
        break;
    }
  }
  return {
    ...(Object.keys(matchLabels).length ? { matchLabels } : {}),
    ...(matchExpressions.length ? { matchExpressions } : {}),
  };
}

function customItemJson(
  item: CustomItem,
  version: string,
  requestSelector: LabelSelector | null,
): Record<string, unknown> {
  const sel = item.metricSelectorObject ?? requestSelector;
  if (version === "v1beta1") {
    return {
      describedObject: describedObject(item),
      metricName: item.metricName,
      timestamp: formatTimestamp(item.timestamp),
      ...(item.windowSeconds !== undefined ? { window: Math.round(item.windowSeconds) } : {}),
      value: formatQuantity(item.value),
      selector: sel ? selectorJson(sel) : null,
    };
  }
  return {
    describedObject: describedObject(item),
    metric: { name: item.metricName, ...(sel ? { selector: selectorJson(sel) } : {}) },
    timestamp: formatTimestamp(item.timestamp),
    ...(item.windowSeconds !== undefined ? { windowSeconds: Math.round(item.windowSeconds) } : {}),
    value: formatQuantity(item.value),
  };
}

/** The JSON of one custom item, made once per stored value when it depends on nothing else. */
function customItemText(
  item: CustomItem,
  version: string,
  requestSelector: LabelSelector | null,
): string {
  if (item.metricSelectorObject === null && requestSelector !== null) {
    return JSON.stringify(customItemJson(item, version, requestSelector));
  }
  const memo = item.memo ??= {};
  return memo[version] ??= JSON.stringify(customItemJson(item, version, null));
}

function externalItemText(item: ExternalItem): string {
  const memo = item.memo ??= {};
  return memo.external ??= JSON.stringify(externalItemJson(item));
}

/** `{"kind":...,"apiVersion":...,"metadata":{},"items":[...]}` as JSON.stringify writes it. */
function listText(kind: string, apiVersion: string, items: string[]): string {
  return `{"kind":"${kind}","apiVersion":"${apiVersion}","metadata":{},"items":[${
    items.join(",")
  }]}`;
}

function externalItemJson(item: ExternalItem): Record<string, unknown> {
  return {
    metricName: item.metricName,
    metricLabels: Object.fromEntries(
      Object.keys(item.metricLabels).sort().map((k) => [k, item.metricLabels[k]]),
    ),
    timestamp: formatTimestamp(item.timestamp),
    ...(item.windowSeconds !== undefined ? { window: Math.round(item.windowSeconds) } : {}),
    value: formatQuantity(item.value),
  };
}

// -- pods ---------------------------------------------------------------------------------

/** Ready (condition Ready=True) and not being deleted. */
export function isServablePod(pod: KubeObject): boolean {
  if (pod.metadata.deletionTimestamp) return false;
  const conditions: unknown = pod.status?.conditions;
  if (!Array.isArray(conditions)) return false;
  for (const c of conditions) {
    if (
      c && typeof c === "object" && (c as { type?: unknown }).type === "Ready" &&
      (c as { status?: unknown }).status === "True"
    ) return true;
  }
  return false;
}

/**
 * `matchesSelector(sel, labels)` as one function made once per selector: equality-only
 * selectors (what the HPA controller sends for pods) compare labels directly.
 */
function selectorMatcher(sel: Selector): (labels: Record<string, string>) => boolean {
  if (sel.length === 0) return () => true;
  const equality = sel.every((r) =>
    (r.operator === "=" || r.operator === "==" || r.operator === "in") && r.values.length === 1
  );
  if (!equality) return (labels) => matchesSelector(sel, labels);
  const keys = sel.map((r) => r.key);
  const values = sel.map((r) => r.values[0]);
  return (labels) => {
    for (let i = 0; i < keys.length; i++) {
      if (!Object.hasOwn(labels, keys[i]) || labels[keys[i]] !== values[i]) return false;
    }
    return true;
  };
}

// -- discovery ----------------------------------------------------------------------------

function groupVersions(group: string): readonly string[] {
  return group === CUSTOM_GROUP ? CUSTOM_VERSIONS : EXTERNAL_VERSIONS;
}

function apiGroup(group: string): Record<string, unknown> {
  const versions = groupVersions(group).map((v) => ({ groupVersion: `${group}/${v}`, version: v }));
  return { name: group, versions, preferredVersion: versions[0] };
}

function resourceList(group: string, version: string, store: MetricStore): unknown {
  const resources: Record<string, unknown>[] = [];
  const kind = group === CUSTOM_GROUP ? "MetricValueList" : "ExternalMetricValueList";
  // A fixed entry keeps the list non-empty (clients warn about empty groups) and gives
  // `kubectl api-resources` a line for the group; the per-metric entries follow the upstream
  // custom-metrics-apiserver (`pods/rps`; external: the metric name).
  resources.push({
    name: group === CUSTOM_GROUP ? "custommetrics" : "externalmetrics",
    singularName: "",
    namespaced: true,
    kind,
    verbs: ["get"],
  });
  const seen = new Set<string>(resources.map((r) => r.name as string));
  for (const m of store.servedMetrics()) {
    if ((m.kind === "custom") !== (group === CUSTOM_GROUP)) continue;
    const name = m.kind === "custom" ? `${m.groupResource}/${m.metricName}` : m.metricName;
    if (seen.has(name)) continue;
    seen.add(name);
    resources.push({
      name,
      singularName: "",
      namespaced: m.kind === "custom" ? m.namespaced ?? true : true,
      kind,
      verbs: ["get"],
    });
  }
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: `${group}/${version}`,
    resources,
  };
}

function openApiDocument(version: VersionInfo, groups: string[]): unknown {
  const paths: Record<string, unknown> = {};
  const param = (name: string, where: "path" | "query") => ({
    name,
    in: where,
    required: where === "path",
    type: "string",
    ...(where === "query" ? {} : { uniqueItems: true }),
  });
  const op = (id: string, ref: string, params: unknown[]) => ({
    get: {
      operationId: id,
      produces: ["application/json"],
      schemes: ["https"],
      parameters: params,
      responses: {
        "200": { description: "OK", schema: { $ref: `#/definitions/${ref}` } },
        "404": { description: "Not Found", schema: { $ref: "#/definitions/Status" } },
      },
    },
  });
  const q = [param("labelSelector", "query"), param("metricLabelSelector", "query")];
  if (groups.includes(CUSTOM_GROUP)) {
    for (const v of CUSTOM_VERSIONS) {
      const base = `/apis/${CUSTOM_GROUP}/${v}`;
      const id = `CustomMetrics${v[0].toUpperCase()}${v.slice(1)}`;
      paths[`${base}/namespaces/{namespace}/{resource}/{name}/{metric}`] = op(
        `listNamespaced${id}`,
        "MetricValueList",
        [
          param("namespace", "path"),
          param("resource", "path"),
          param("name", "path"),
          param("metric", "path"),
          ...q,
        ],
      );
      paths[`${base}/{resource}/{name}/{metric}`] = op(`list${id}`, "MetricValueList", [
        param("resource", "path"),
        param("name", "path"),
        param("metric", "path"),
        ...q,
      ]);
      paths[`${base}/namespaces/{namespace}/metrics/{metric}`] = op(
        `read${id}ForNamespace`,
        "MetricValueList",
        [param("namespace", "path"), param("metric", "path"), ...q],
      );
    }
  }
  if (groups.includes(EXTERNAL_GROUP)) {
    paths[`/apis/${EXTERNAL_GROUP}/v1beta1/namespaces/{namespace}/{metric}`] = op(
      "listNamespacedExternalMetricsV1beta1",
      "ExternalMetricValueList",
      [param("namespace", "path"), param("metric", "path"), param("labelSelector", "query")],
    );
  }
  const obj = (properties: Record<string, unknown>, required: string[] = []) => ({
    type: "object",
    ...(required.length ? { required } : {}),
    properties,
  });
  const str = { type: "string" };
  const list = (item: string) =>
    obj({
      kind: str,
      apiVersion: str,
      metadata: { type: "object" },
      items: { type: "array", items: { $ref: `#/definitions/${item}` } },
    }, ["items"]);
  return {
    swagger: "2.0",
    info: { title: "hpa-metrics-adapter", version: version.gitVersion },
    paths,
    definitions: {
      MetricValueList: list("MetricValue"),
      MetricValue: obj({
        describedObject: { type: "object" },
        metric: obj({ name: str, selector: { type: "object" } }),
        metricName: str,
        selector: { type: "object" },
        timestamp: { type: "string", format: "date-time" },
        windowSeconds: { type: "integer", format: "int64" },
        window: { type: "integer", format: "int64" },
        value: str,
      }, ["describedObject", "timestamp", "value"]),
      ExternalMetricValueList: list("ExternalMetricValue"),
      ExternalMetricValue: obj({
        metricName: str,
        metricLabels: { type: "object", additionalProperties: str },
        timestamp: { type: "string", format: "date-time" },
        window: { type: "integer", format: "int64" },
        value: str,
      }, ["metricName", "metricLabels", "timestamp", "value"]),
      Status: obj({
        kind: str,
        apiVersion: str,
        metadata: { type: "object" },
        status: str,
        message: str,
        reason: str,
        code: { type: "integer", format: "int32" },
      }),
    },
  };
}

// -- health -------------------------------------------------------------------------------

interface HealthCheck {
  name: string;
  check(): string | null;
}

/** As k8s.io/apiserver's healthz handler: `ok`, or with `?verbose` one line per check. */
function health(name: string, checks: HealthCheck[], url: URL): Response {
  const excluded = new Set(url.searchParams.getAll("exclude"));
  const verbose = url.searchParams.has("verbose");
  let out = "";
  let failed = false;
  for (const c of checks) {
    if (excluded.has(c.name)) {
      out += `[+]${c.name} excluded: ok\n`;
      continue;
    }
    const err = c.check();
    if (err === null) out += `[+]${c.name} ok\n`;
    else {
      failed = true;
      out += `[-]${c.name} failed: reason withheld\n`;
    }
  }
  if (failed) return text(`${out}${name} check failed\n`, 500);
  return text(verbose ? `${out}${name} check passed\n` : "ok");
}

function oneCheck(c: HealthCheck): Response {
  const err = c.check();
  return err === null ? text("ok") : text(`internal server error: ${err}\n`, 500);
}

// -- the app ------------------------------------------------------------------------------

/** Split a raw path into decoded segments (so `%2A` is `*`); null if undecodable. */
function segments(pathname: string): string[] | null {
  const parts = pathname.slice(1).split("/");
  if (parts.length > 1 && parts[parts.length - 1] === "") parts.pop();
  if (!pathname.includes("%")) return parts;
  try {
    return parts.map((p) => decodeURIComponent(p));
  } catch {
    return null;
  }
}

/** The value of query parameter `name` as Hono's `c.req.query(name)` reads it (first one wins). */
function queryParam(search: string, name: string): string | undefined {
  if (search.length <= 1) return undefined;
  for (const part of search.slice(1).split("&")) {
    const eq = part.indexOf("=");
    const key = decodeQuery(eq < 0 ? part : part.slice(0, eq));
    if (key === name) return eq < 0 ? "" : decodeQuery(part.slice(eq + 1));
  }
  return undefined;
}

function decodeQuery(s: string): string {
  if (!/[%+]/.test(s)) return s;
  const spaced = s.replace(/\+/g, " ");
  try {
    return decodeURIComponent(spaced);
  } catch {
    // keep what does not decode, as Hono does
    return spaced.replace(/(?:%[0-9A-Fa-f]{2})+/g, (m) => {
      try {
        return decodeURIComponent(m);
      } catch {
        return m;
      }
    });
  }
}

/** A parsed selector parameter, or the error text of a bad one. */
type ParsedSelector =
  | {
    sel: Selector;
    canonical: string;
    labelSelector: LabelSelector | null;
    matches: (labels: Record<string, string>) => boolean;
  }
  | { error: string };

/** Distinct queries remembered before the cache starts over. */
const SELECTOR_CACHE_LIMIT = 8192;

/**
 * Reads and parses a selector parameter of a query once per distinct query (the HPA
 * controller repeats its queries every sync period).
 */
function selectorCache(): (search: string, name: string) => ParsedSelector {
  // parameter name -> query string -> parsed (no key string built per read)
  const byName = new Map<string, Map<string, ParsedSelector>>();
  let size = 0;
  return (search, name) => {
    let cache = byName.get(name);
    if (cache === undefined) byName.set(name, cache = new Map());
    let hit = cache.get(search);
    if (hit === undefined) {
      const raw = queryParam(search, name) ?? "";
      try {
        const sel = parseSelector(raw);
        hit = {
          sel,
          canonical: formatSelector(sel),
          labelSelector: labelSelectorOf(sel),
          matches: selectorMatcher(sel),
        };
      } catch (err) {
        hit = { error: (err as Error).message };
      }
      if (++size > SELECTOR_CACHE_LIMIT) {
        for (const c of byName.values()) c.clear();
        size = 1;
      }
      cache.set(search, hit);
    }
    return hit;
  };
}

/** Lists of several items remembered with their body, before the cache starts over. */
const LIST_CACHE_LIMIT = 1024;

/**
 * List bodies of reads with several items (a pods wildcard): the body is reused while the
 * read returns the very same item objects (the store hands out new ones when a value changes).
 */
function listCache(): (key: string, items: readonly object[], make: () => string) => ReadyBody {
  const cache = new Map<string, { items: readonly object[]; ready: ReadyBody }>();
  return (key, items, make) => {
    const hit = cache.get(key);
    if (
      hit !== undefined && (hit.items === items ||
        (hit.items.length === items.length && hit.items.every((item, i) => item === items[i])))
    ) return hit.ready;
    const ready = readyBody(make());
    if (hit === undefined && cache.size >= LIST_CACHE_LIMIT) cache.clear();
    cache.set(key, { items, ready });
    return ready;
  };
}

/** Pod sets of (namespace, labelSelector) remembered, before the cache starts over. */
const POD_SET_CACHE_LIMIT = 1024;

/**
 * The names of the servable pods matching a `labelSelector` in a namespace, kept while the pod
 * lister's version of the namespace stays the same (pods only change on watch events).
 */
function podSetCache(): (
  namespace: string,
  labelSelector: Exclude<ParsedSelector, { error: string }>,
  pods: PodLister & { version(namespace: string): number },
) => ReadonlySet<string> {
  const cache = new Map<string, { version: number; names: ReadonlySet<string> }>();
  return (namespace, labelSelector, pods) => {
    const key = `${namespace}\u0000${labelSelector.canonical}`;
    const version = pods.version(namespace);
    const hit = cache.get(key);
    if (hit !== undefined && hit.version === version) return hit.names;
    const names = new Set<string>();
    for (const pod of pods.listPods(namespace)) {
      if (isServablePod(pod) && labelSelector.matches(pod.metadata.labels ?? {})) {
        names.add(pod.metadata.name);
      }
    }
    if (hit === undefined && cache.size >= POD_SET_CACHE_LIMIT) cache.clear();
    cache.set(key, { version, names });
    return names;
  };
}

// Paths and queries the fast path takes as they come: anything a URL parser would rewrite
// (dot segments, characters it escapes) goes through the regular path.
const FAST_PATH_RE = /^\/apis\/[A-Za-z0-9\-_~%*./:@!$&'()+,;=]*$/;
const FAST_QUERY_RE = /^[A-Za-z0-9\-._~%!$&()*+,;=:@/?]*$/;
const DOT_SEGMENT_RE = /\/(?:\.|%2e){1,2}(?:\/|$)/i;

const CUSTOM_PREFIX = `/apis/${CUSTOM_GROUP}/`;
const EXTERNAL_PREFIX = `/apis/${EXTERNAL_GROUP}/`;

/** Whether `path` is `<prefix><version>/<anything>`. */
function underVersion(path: string, prefix: string): boolean {
  if (!path.startsWith(prefix)) return false;
  const slash = path.indexOf("/", prefix.length);
  return slash > prefix.length && slash < path.length - 1;
}

function routeOf(path: string): string {
  // the metric reads first, without a regular expression: every served read comes here
  if (underVersion(path, CUSTOM_PREFIX)) return "custom";
  if (underVersion(path, EXTERNAL_PREFIX)) return "external";
  if (/^\/(healthz|livez|readyz)(\/|$)/.test(path)) return "health";
  if (path === "/version" || path === "/version/") return "version";
  if (path.startsWith("/openapi")) return "openapi";
  if (path === "/apis" || path.startsWith("/apis/")) return "discovery";
  return "other";
}

/**
 * Build the API app (runtime-blind; serve it with `src/runtime/`, or call `app.request()`).
 *
 * @example
 * ```ts
 * const app = createApp({ store, pods: { listPods: (ns) => cluster.list("Pod", ns) },
 *   now: () => Date.now(), ready: () => true });
 * const res = await app.request("/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/*\/rps");
 * ```
 */
export function createApp(options: ApiOptions): ApiApp {
  const enableCustom = options.enableCustom ?? true;
  const enableExternal = options.enableExternal ?? true;
  const groups = [
    ...(enableCustom ? [CUSTOM_GROUP] : []),
    ...(enableExternal ? [EXTERNAL_GROUP] : []),
  ];
  const version: VersionInfo = options.version ?? { gitVersion: "v0.0.0" };
  const { store } = options;

  const pingCheck: HealthCheck = { name: "ping", check: () => null };
  const syncCheck: HealthCheck = {
    name: "initial-sync",
    check: () => options.ready() ? null : "initial sync not done",
  };
  const healthChecks: Record<string, HealthCheck[]> = {
    healthz: [pingCheck],
    livez: [pingCheck],
    readyz: [pingCheck, syncCheck],
  };

  const app = new Hono();

  app.use("*", async (c, next) => {
    const started = performance.now();
    await next();
    if (options.onRequest) {
      options.onRequest({
        method: c.req.method,
        route: routeOf(new URL(c.req.url).pathname),
        code: c.res.status,
        durationSeconds: (performance.now() - started) / 1000,
      });
    }
  });

  app.onError((err) =>
    statusResponse("InternalError", `Internal error occurred: ${err.message}`, {
      details: { causes: [{ message: err.message }] },
    })
  );

  // health: never behind authorization
  for (const [name, checks] of Object.entries(healthChecks)) {
    app.get(`/${name}`, (c) => health(name, checks, new URL(c.req.url)));
    app.get(`/${name}/:check`, (c) => {
      const check = checks.find((h) => h.name === c.req.param("check"));
      return check ? oneCheck(check) : text("404 page not found\n", 404);
    });
  }

  if (options.authorize) {
    const authorize = options.authorize;
    app.use("*", async (c, next) => {
      if (routeOf(new URL(c.req.url).pathname) === "health") return await next();
      return await authorize(c, next);
    });
  }

  app.get("/version", () =>
    json({
      major: version.gitVersion.replace(/^v/, "").split(".")[0] ?? "",
      minor: version.gitVersion.replace(/^v/, "").split(".")[1] ?? "",
      gitVersion: version.gitVersion,
      gitCommit: version.gitCommit ?? "",
      gitTreeState: version.gitTreeState ?? "",
      buildDate: version.buildDate ?? "",
      goVersion: version.goVersion ?? "",
      compiler: version.compiler ?? "",
      platform: version.platform ?? "",
    }));

  app.get("/openapi/v2", () => json(openApiDocument(version, groups)));

  app.get(
    "/apis",
    () => json({ kind: "APIGroupList", apiVersion: "v1", groups: groups.map(apiGroup) }),
  );

  const selectors = selectorCache();
  const caches: ReadCaches = { lists: listCache(), podSets: podSetCache() };
  /** Discovery bodies by group/version, with the store's served-metrics version. */
  const discovery = new Map<string, { version: number; ready: ReadyBody }>();
  /** What a GET under /apis/ asks: made from the path and query alone. */
  const parseApis = (pathname: string, search: string): ApisAsk => {
    const segs = segments(pathname);
    if (!segs) return statusPlain("BadRequest", `invalid path "${pathname}"`);
    const [, group, ver, ...rest] = segs;
    if (!groups.includes(group)) return plainNotFound();
    if (ver === undefined) {
      return plainJson(JSON.stringify({ kind: "APIGroup", apiVersion: "v1", ...apiGroup(group) }));
    }
    if (!groupVersions(group).includes(ver)) return plainNotFound();
    if (rest.length === 0) return { resources: group, version: ver };
    return group === CUSTOM_GROUP
      ? customRead(selectors, search, ver, rest)
      : externalRead(selectors, search, rest);
  };
  /** The answer to what a GET asks, from the store as it is now. */
  const answer = (ask: ApisAsk): PlainResponse => {
    if ("status" in ask) return ask;
    if ("resources" in ask) {
      // made once per change of the served metrics: the aggregator asks every few seconds
      const key = `${ask.resources}/${ask.version}`;
      const version = store.servedMetricsVersion();
      let hit = discovery.get(key);
      if (hit?.version !== version) {
        hit = {
          version,
          ready: readyBody(JSON.stringify(resourceList(ask.resources, ask.version, store))),
        };
        discovery.set(key, hit);
      }
      return plainReady(hit.ready);
    }
    if (!options.ready()) {
      return statusPlain(
        "ServiceUnavailable",
        "the adapter has not finished its initial sync; metrics are served once it has",
      );
    }
    if ("error" in ask) return ask.error;
    return ask.group === CUSTOM_GROUP
      ? customMetrics(ask, caches, options)
      : externalMetrics(ask, caches, options);
  };
  /** Everything under /apis/, for the Hono route and the fast path alike. */
  const apis = (method: string, pathname: string, search: string): PlainResponse => {
    if (method !== "GET" && method !== "HEAD") {
      const segs = segments(pathname);
      if (!segs) return statusPlain("BadRequest", `invalid path "${pathname}"`);
      if (!groups.includes(segs[1])) return plainNotFound();
      return statusPlain(
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
      );
    }
    return answer(parseApis(pathname, search));
  };

  app.all("/apis/*", (c) => {
    const url = new URL(c.req.url);
    return toResponse(apis(c.req.method, url.pathname, url.search));
  });

  app.notFound(() => text("404 page not found\n", 404));

  const authorizeFast: FastAuthorize | null = options.authorize
    ? options.authorize.fast ?? null
    : () => true;
  // Metric reads by URL, parsed: the HPA controller asks the same URLs every sync period.
  const reads = new Map<string, MetricRead>();
  const fastFetch = (request: PlainRequest): PlainResponse | null => {
    if (authorizeFast === null || request.method !== "GET") return null;
    const url = request.url;
    let ask: ApisAsk | undefined = reads.get(url);
    let route: string;
    if (ask !== undefined) route = ask.route;
    else {
      const q = url.indexOf("?");
      const pathname = q < 0 ? url : url.slice(0, q);
      const search = q < 0 ? "" : url.slice(q);
      if (
        !FAST_PATH_RE.test(pathname) ||
        // a dot segment starts with "/." or is percent-encoded
        ((pathname.includes("/.") || pathname.includes("%")) && DOT_SEGMENT_RE.test(pathname)) ||
        (search !== "" && !FAST_QUERY_RE.test(search))
      ) return null;
      try {
        ask = parseApis(pathname, search === "?" ? "" : search);
      } catch {
        return null; // the regular path answers (and reports) the same failure
      }
      if ("route" in ask) {
        if (reads.size >= READ_CACHE_LIMIT) reads.clear();
        reads.set(url, ask);
        route = ask.route;
      } else route = routeOf(pathname);
    }
    const started = performance.now();
    try {
      if (authorizeFast(request) !== true) return null;
      const response = answer(ask);
      options.onRequest?.({
        method: "GET",
        route,
        code: response.status,
        durationSeconds: (performance.now() - started) / 1000,
      });
      return response;
    } catch {
      // the regular path answers (and reports) the same failure
      return null;
    }
  };
  return Object.assign(app, { fastFetch });
}

/** A parsed selector parameter. */
type OkSelector = Exclude<ParsedSelector, { error: string }>;

/** The caches a metric read's answer is made with. */
interface ReadCaches {
  lists: ReturnType<typeof listCache>;
  podSets: ReturnType<typeof podSetCache>;
}

/** A custom metrics read, as its URL asks it (parsed once per URL). */
interface CustomRead {
  group: typeof CUSTOM_GROUP;
  route: "custom";
  version: string;
  /** The store lookup, the same object for every read of the URL. */
  lookup: CustomLookup;
  labelSel: OkSelector;
  requestSelector: LabelSelector | null;
  /** Key of the read's list body in the list cache. */
  listKey: string;
}

/** An external metrics read, as its URL asks it. */
interface ExternalRead {
  group: typeof EXTERNAL_GROUP;
  route: "external";
  lookup: ExternalLookup;
  listKey: string;
}

type MetricRead = CustomRead | ExternalRead;

/**
 * What a GET under /apis/ asks: a metric read; a read whose URL is wrong (answered once the
 * adapter is ready, as before parsing); the resource list of a group version; or an answer
 * that depends on the URL alone.
 */
type ApisAsk =
  | MetricRead
  | { error: PlainResponse }
  | { resources: string; version: string }
  | PlainResponse;

/** Parsed URLs of metric reads remembered before the cache starts over. */
const READ_CACHE_LIMIT = 4096;

function parseParam(
  selectors: ReturnType<typeof selectorCache>,
  search: string,
  name: string,
): OkSelector | { error: PlainResponse } {
  const parsed = selectors(search, name);
  if ("error" in parsed) {
    return { error: statusPlain("BadRequest", `invalid ${name}: ${parsed.error}`) };
  }
  return parsed;
}

function customRead(
  selectors: ReturnType<typeof selectorCache>,
  search: string,
  version: string,
  rest: string[],
): CustomRead | { error: PlainResponse } {
  let namespace: string;
  let groupResource: string;
  let name: string;
  let metricName: string;
  const notFound = { error: plainNotFound() };
  if (rest.length === 5 && rest[0] === "namespaces") {
    [, namespace, groupResource, name, metricName] = rest;
  } else if (rest.length === 4 && rest[0] === "namespaces" && rest[2] === "metrics") {
    // the Namespace object itself
    [, name, , metricName] = rest;
    namespace = name;
    groupResource = "namespaces";
  } else if (rest.length === 3) {
    [groupResource, name, metricName] = rest;
    // cluster-scoped; a Namespace's values are kept under the namespace itself
    namespace = groupResource === "namespaces" ? name : "";
  } else return notFound;
  if (!namespace && rest.length !== 3) return notFound;
  if (!groupResource || !name || !metricName) return notFound;

  const labelSel = parseParam(selectors, search, "labelSelector");
  if ("error" in labelSel) return labelSel;
  const metricSel = parseParam(selectors, search, "metricLabelSelector");
  if ("error" in metricSel) return metricSel;
  const metricSelector = metricSel.canonical;
  if (name === "*" && groupResource !== "pods" && labelSel.sel.length > 0) {
    return {
      error: statusPlain(
        "BadRequest",
        `labelSelector "${labelSel.canonical}" is supported for pods only, not for ${groupResource}`,
      ),
    };
  }
  const lookup: CustomLookup = { namespace, groupResource, name, metricName, metricSelector };
  lookup.key = customLookupKey(lookup);
  return {
    group: CUSTOM_GROUP,
    route: "custom",
    version,
    lookup,
    labelSel,
    requestSelector: metricSel.labelSelector,
    listKey:
      `${version}\u0000${namespace}\u0000${groupResource}\u0000${name}\u0000${metricName}\u0000${metricSelector}\u0000${labelSel.canonical}`,
  };
}

function customMetrics(read: CustomRead, caches: ReadCaches, options: ApiOptions): PlainResponse {
  const { version, lookup, labelSel, requestSelector } = read;
  const { namespace, groupResource, name, metricName } = lookup;
  const now = options.now();
  const filter = name === "*" && groupResource === "pods"
    ? podFilter(caches, namespace, labelSel, options.pods)
    : {};
  const result = options.store.lookupCustom(lookup, now, filter);
  const what = (): string =>
    `the server could not find the metric ${metricName} for ${groupResource} ${name}`;
  if ("miss" in result) return statusPlain("NotFound", `${what()}: ${result.miss.reason}`);
  const items = result.items;
  if (items.length === 0) {
    const sel = labelSel.canonical;
    const which = sel ? `matching labelSelector "${sel}"` : "in the namespace";
    const stored = result.stored ?? 0;
    return statusPlain(
      "NotFound",
      `${what()}: no ready pod ${which} has a value (values are stored for ${stored} pod${
        stored === 1 ? "" : "s"
      } in namespace ${namespace})`,
    );
  }
  const make = (): string =>
    listText(
      "MetricValueList",
      `${CUSTOM_GROUP}/${version}`,
      items.length === 1
        // a one-item body is kept whole (below): no fragment to keep besides
        ? [JSON.stringify(customItemJson(items[0], version, requestSelector))]
        : items.map((i) => customItemText(i, version, requestSelector)),
    );
  if (items.length === 1 && (items[0].metricSelectorObject !== null || requestSelector === null)) {
    // one item whose JSON depends on nothing else: its body lives with it
    return plainReady(itemBody(items[0], version, make));
  }
  return plainReady(caches.lists(read.listKey, items, make));
}

/** Which pods a wildcard read may serve: ready, not deleting, matching `labelSelector`. */
function podFilter(
  caches: ReadCaches,
  namespace: string,
  labelSelector: OkSelector,
  pods: PodLister,
): CustomLookupOptions {
  if (pods.version) {
    return { names: caches.podSets(namespace, labelSelector, pods as Required<PodLister>) };
  }
  const matches = labelSelector.matches;
  const ok = (pod: KubeObject | undefined): boolean =>
    !!pod && isServablePod(pod) && matches(pod.metadata.labels ?? {});
  if (pods.getPod) {
    const get = pods.getPod.bind(pods);
    return { accept: (name) => ok(get(namespace, name)) };
  }
  const names = new Set<string>();
  for (const pod of pods.listPods(namespace)) if (ok(pod)) names.add(pod.metadata.name);
  return { names };
}

function externalRead(
  selectors: ReturnType<typeof selectorCache>,
  search: string,
  rest: string[],
): ExternalRead | { error: PlainResponse } {
  if (rest.length !== 3 || rest[0] !== "namespaces" || !rest[1] || !rest[2]) {
    return { error: plainNotFound() };
  }
  const [, namespace, metricName] = rest;
  const labelSel = parseParam(selectors, search, "labelSelector");
  if ("error" in labelSel) return labelSel;
  return {
    group: EXTERNAL_GROUP,
    route: "external",
    lookup: {
      namespace,
      metricName,
      selector: labelSel.sel,
      canonicalSelector: labelSel.canonical,
    },
    listKey: ["external", namespace, metricName, labelSel.canonical].join("\u0000"),
  };
}

function externalMetrics(
  read: ExternalRead,
  caches: ReadCaches,
  options: ApiOptions,
): PlainResponse {
  const result = options.store.lookupExternal(read.lookup, options.now());
  if ("miss" in result) {
    return statusPlain(
      "NotFound",
      `the server could not find the metric ${read.lookup.metricName} for provided labels: ${result.miss.reason}`,
    );
  }
  const items = result.items;
  const make = (): string =>
    listText(
      "ExternalMetricValueList",
      `${EXTERNAL_GROUP}/v1beta1`,
      items.length === 1
        ? [JSON.stringify(externalItemJson(items[0]))]
        : items.map(externalItemText),
    );
  if (items.length === 1) {
    return plainReady(itemBody(items[0], "external", make));
  }
  return plainReady(caches.lists(read.listKey, items, make));
}
