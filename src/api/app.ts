/**
 * The Hono app of the aggregated API server: routing. `custom.metrics.k8s.io` (v1beta1,
 * v1beta2, custom_metrics.ts) and `external.metrics.k8s.io` (v1beta1, external_metrics.ts) read
 * from the store, with the discovery documents and `/version` (discovery.ts), `/openapi/v2`
 * (openapi.ts) and the health endpoints (health.ts). It knows no runtime, no TLS and no
 * authentication: `src/runtime/` serves it, and an `authorize` middleware can be plugged in
 * (health paths never pass through it). Metric reads the middleware's `fast` check allows are
 * answered on the server's fast path, from URLs parsed once. With `delegates` (issue 26), a
 * read that no HPA of ours asks for is forwarded to the delegate of its API once authorized
 * (never on the fast path), and the delegate's discovery list joins ours.
 *
 * With `resourceMetrics` (prometheus-adapter's `resourceRules`), `metrics.k8s.io/v1beta1`
 * (PodMetrics, NodeMetrics: resource_metrics.ts) is served too, while the source has rules.
 *
 * Bodies use the exact JSON of k8s.io/metrics (field names, order and omissions as Go writes
 * them); errors are `metav1.Status` (status.ts). A read that matches nothing answers 404 with
 * the reason, which the HPA controller shows in `kubectl describe hpa`.
 *
 * @module
 */

import { Hono } from "hono";
import type { MiddlewareHandler } from "hono";
import { ByteBuffer } from "../runtime/byte_buffer.ts";
import type { PlainRequest, PlainResponse } from "../runtime/serve.ts";
import { customMetrics, type CustomRead, customRead } from "./custom_metrics.ts";
import {
  apiGroup,
  CUSTOM_GROUP,
  EXTERNAL_GROUP,
  groupVersions,
  METRICS_GROUP,
  resourceList,
  type VersionInfo,
  versionJson,
} from "./discovery.ts";
import { externalMetrics, type ExternalRead, externalRead } from "./external_metrics.ts";
import { health, type HealthCheck, oneCheck } from "./health.ts";
import {
  type Forward,
  isForward,
  isPending,
  listCache,
  type MetricSource,
  type Pending,
  type ReadCaches,
} from "./metric_read.ts";
import { openApiDocument } from "./openapi.ts";
import {
  resourceMetrics,
  resourceMetricsResourceList,
  type ResourceRead,
  resourceRead,
} from "./resource_metrics.ts";
import type { RequestObservation } from "./own_metrics.ts";
import { podSetCache } from "./pods.ts";
import {
  json,
  plainJson,
  plainReady,
  type ReadyBody,
  readyBody,
  text,
  toResponse,
} from "./responses.ts";
import { selectorCache } from "./selectors.ts";
import { MAX_SHARD_BATCH_BYTES } from "../core/shard.ts";
import {
  ADMISSION_PATH_PREFIX,
  admissionAnswerText,
  type AdmissionOptions,
  MAX_ADMISSION_REVIEW_BYTES,
} from "./admission.ts";
import { plainNotFound, statusPlain, statusResponse } from "./status.ts";

/** Options of {@linkcode createApp}. */
export interface ApiOptions extends MetricSource {
  /** Serve `custom.metrics.k8s.io`. Default true. */
  enableCustom?: boolean;
  /** Serve `external.metrics.k8s.io`. Default true. */
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
  /**
   * `--shard-collection` (issue 29): applies the values a peer pushes to
   * `POST /shard/v1/samples` (behind `authorize`: a non-resource `post` the adapter's own
   * service account is granted) and answers what was wrong with them, or null. Without it the
   * path is 404.
   */
  shardSamples?: (body: unknown) => string | null;
  /**
   * `--admission-webhook` (issue 50): answers AdmissionReviews on `POST /validate/...`. Those
   * paths skip `authorize` (kube-apiserver calls webhooks without credentials unless told
   * otherwise; see admission.ts). Without it the paths are 404.
   */
  admission?: AdmissionOptions;
}

/** Where peers push their values (`shardSamples`). */
export const SHARD_SAMPLES_PATH = "/shard/v1/samples";

/**
 * The largest request body a route reads, decided from the head (method and target as sent)
 * before a byte of the body is: the peers' pushes when `--shard-collection` is on, and nothing
 * else (the metrics, discovery, OpenAPI and health routes take no body).
 */
function bodyLimitOf(
  shard: boolean,
  admission: boolean,
  method: string,
  target: string,
): number {
  if ((!shard && !admission) || method !== "POST") return 0;
  const q = target.indexOf("?");
  const path = q < 0 ? target : target.slice(0, q);
  if (shard && path === SHARD_SAMPLES_PATH) return MAX_SHARD_BATCH_BYTES;
  if (admission && path.startsWith(ADMISSION_PATH_PREFIX)) return MAX_ADMISSION_REVIEW_BYTES;
  return 0;
}

/** The body of `request` as text, or null once it grows past `max` bytes (read no further). */
async function cappedText(request: Request, max: number): Promise<string | null> {
  if (request.body === null) return "";
  const reader = request.body.getReader();
  // one buffer: a body sent in many small pieces costs no object per piece
  const bytes = new ByteBuffer();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (bytes.size + value.byteLength > max) {
      await reader.cancel().catch(() => {});
      return null;
    }
    bytes.append(value);
  }
  return new TextDecoder().decode(bytes.bytes());
}

/**
 * A synchronous authorization check for the fast path: true when the `authorize` middleware
 * would let the request through without any I/O, null when the middleware has to run.
 */
export type FastAuthorize = (request: PlainRequest) => true | null;

/**
 * An app that also answers metric reads without Request/Response objects, and says which
 * routes take a body (see serve.ts).
 */
export type ApiApp = Hono & {
  fastFetch(request: PlainRequest): PlainResponse | null;
  bodyLimit(method: string, target: string): number;
};

type MetricRead = CustomRead | ExternalRead | ResourceRead;

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

// Paths and queries the fast path takes as they come: anything a URL parser would rewrite
// (dot segments, characters it escapes) goes through the regular path.
const FAST_PATH_RE = /^\/apis\/[A-Za-z0-9\-_~%*./:@!$&'()+,;=]*$/;
const FAST_QUERY_RE = /^[A-Za-z0-9\-._~%!$&()*+,;=:@/?]*$/;
const DOT_SEGMENT_RE = /\/(?:\.|%2e){1,2}(?:\/|$)/i;

const CUSTOM_PREFIX = `/apis/${CUSTOM_GROUP}/`;
const EXTERNAL_PREFIX = `/apis/${EXTERNAL_GROUP}/`;
const METRICS_PREFIX = `/apis/${METRICS_GROUP}/`;

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
  if (underVersion(path, METRICS_PREFIX)) return "resource";
  if (/^\/(healthz|livez|readyz)(\/|$)/.test(path)) return "health";
  if (path === "/version" || path === "/version/") return "version";
  if (path.startsWith("/openapi")) return "openapi";
  if (path === SHARD_SAMPLES_PATH) return "shard";
  if (path.startsWith(ADMISSION_PATH_PREFIX)) return "admission";
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

  const admission = options.admission;
  if (options.authorize) {
    const authorize = options.authorize;
    app.use("*", async (c, next) => {
      const route = routeOf(new URL(c.req.url).pathname);
      if (route === "health" || (route === "admission" && admission)) return await next();
      return await authorize(c, next);
    });
  }

  if (admission) {
    // never on the fast path (a POST): the metric reads do not pay for it
    app.post(`${ADMISSION_PATH_PREFIX}*`, async (c) => {
      const answer = admissionAnswerText(
        await cappedText(c.req.raw, MAX_ADMISSION_REVIEW_BYTES),
        admission,
      );
      return json(answer.body, answer.status);
    });
  }

  app.get("/version", () => json(versionJson(version)));

  const shardSamples = options.shardSamples;
  if (shardSamples) {
    app.post(SHARD_SAMPLES_PATH, async (c) => {
      // authorized by now (the middleware ran): only now is the body read, up to the cap
      const text = await cappedText(c.req.raw, MAX_SHARD_BATCH_BYTES);
      if (text === null) {
        return statusResponse(
          "RequestEntityTooLarge",
          `the push is over ${MAX_SHARD_BATCH_BYTES} bytes`,
        );
      }
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch (e) {
        return statusResponse("BadRequest", `the push is not JSON: ${(e as Error).message}`);
      }
      const problem = shardSamples(body);
      return problem === null
        ? json({ kind: "Status", apiVersion: "v1", status: "Success" })
        : statusResponse("BadRequest", problem);
    });
  }

  app.get("/openapi/v2", () => json(openApiDocument(version, groups)));

  const resourceSource = options.resourceMetrics;
  /** Whether metrics.k8s.io is served now (the config in use has resourceRules). */
  const resourceServed = (): boolean => resourceSource?.resourceMetricsServed() === true;
  const served = (group: string): boolean =>
    groups.includes(group) || (group === METRICS_GROUP && resourceServed());
  const resourceListBody = readyBody(JSON.stringify(resourceMetricsResourceList()));

  app.get(
    "/apis",
    () =>
      json({
        kind: "APIGroupList",
        apiVersion: "v1",
        groups: [...groups, ...(resourceServed() ? [METRICS_GROUP] : [])].map(apiGroup),
      }),
  );

  const selectors = selectorCache();
  const caches: ReadCaches = { lists: listCache(), podSets: podSetCache() };
  /**
   * Discovery bodies by group/version, with the store's served-metrics version and the
   * delegate's discovery generation.
   */
  const discovery = new Map<
    string,
    { version: number; delegated: number; adapter: number; ready: ReadyBody }
  >();
  const prometheusAdapter = options.prometheusAdapter;
  const delegates = options.delegates ?? {};
  const delegateOf = (group: string) =>
    group === CUSTOM_GROUP ? delegates.custom : delegates.external;
  /** What a GET under /apis/ asks: made from the path and query alone. */
  const parseApis = (pathname: string, search: string): ApisAsk => {
    const segs = segments(pathname);
    if (!segs) return statusPlain("BadRequest", `invalid path "${pathname}"`);
    const [, group, ver, ...rest] = segs;
    if (!served(group)) return plainNotFound();
    if (ver === undefined) {
      return plainJson(JSON.stringify({ kind: "APIGroup", apiVersion: "v1", ...apiGroup(group) }));
    }
    if (!groupVersions(group).includes(ver)) return plainNotFound();
    if (rest.length === 0) return { resources: group, version: ver };
    return group === CUSTOM_GROUP
      ? customRead(selectors, search, ver, rest)
      : group === EXTERNAL_GROUP
      ? externalRead(selectors, search, rest)
      : resourceRead(selectors, search, rest);
  };
  /**
   * The answer to what a GET asks, from the store as it is now; `FORWARD` for a read
   * that goes to a delegate.
   */
  const answer = (ask: ApisAsk): PlainResponse | Forward | Pending => {
    if ("status" in ask) return ask;
    if ("resources" in ask && ask.resources === METRICS_GROUP) {
      return resourceServed() ? plainReady(resourceListBody) : plainNotFound();
    }
    if ("resources" in ask) {
      // made once per change of the served metrics: the aggregator asks every few seconds
      const key = `${ask.resources}/${ask.version}`;
      const version = store.servedMetricsVersion();
      const delegate = delegateOf(ask.resources);
      const delegated = delegate?.generation() ?? 0;
      const adapter = prometheusAdapter?.version() ?? 0;
      let hit = discovery.get(key);
      if (hit?.version !== version || hit.delegated !== delegated || hit.adapter !== adapter) {
        const list = resourceList(
          ask.resources,
          ask.version,
          store,
          delegate?.resources(ask.version),
          prometheusAdapter?.servedMetrics(),
        );
        hit = { version, delegated, adapter, ready: readyBody(JSON.stringify(list)) };
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
    if (ask.group === METRICS_GROUP) {
      return resourceSource === undefined ? plainNotFound() : resourceMetrics(ask, {
        source: resourceSource,
        pods: options.pods,
        nodes: options.nodes ?? { listNodes: () => [] },
        now: options.now,
      });
    }
    return ask.group === CUSTOM_GROUP
      ? customMetrics(ask, caches, options)
      : externalMetrics(ask, caches, options);
  };
  /** Everything under /apis/, for the Hono route and the fast path alike. */
  const apis = (
    method: string,
    pathname: string,
    search: string,
  ): PlainResponse | Forward | Pending => {
    if (method !== "GET" && method !== "HEAD") {
      const segs = segments(pathname);
      if (!segs) return statusPlain("BadRequest", `invalid path "${pathname}"`);
      if (!served(segs[1])) return plainNotFound();
      return statusPlain(
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
      );
    }
    return answer(parseApis(pathname, search));
  };

  app.all("/apis/*", async (c) => {
    const url = new URL(c.req.url);
    const asked = apis(c.req.method, url.pathname, url.search);
    const answered = isPending(asked) ? await asked.pending : asked;
    if (!isForward(answered)) return toResponse(answered);
    // authorized as our own reads are (the middleware ran): asked of the delegate as it came
    const delegate = delegateOf(
      url.pathname.startsWith(CUSTOM_PREFIX) ? CUSTOM_GROUP : EXTERNAL_GROUP,
    )!;
    return toResponse(await delegate.forward(url.pathname + url.search));
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
      // a delegate's read (the regular path forwards it), or one that waits for Prometheus
      if (isForward(response)) return null;
      if (isPending(response)) {
        // the regular path asks again and shares the same query (the source dedupes it)
        response.pending.catch(() => {});
        return null;
      }
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
  const shard = shardSamples !== undefined;
  const bodyLimit = (method: string, target: string): number =>
    bodyLimitOf(shard, admission !== undefined, method, target);
  return Object.assign(app, { fastFetch, bodyLimit });
}
