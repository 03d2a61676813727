/**
 * The `prometheus` collector: one PromQL instant query per collection, for External metrics
 * (`type: prometheus`, or the legacy metric name `prometheus-query` with `query-name`) and for
 * Object metrics on any kind (the `prometheus` annotation), served under the object's own
 * group-resource.
 *
 * Differences from kube-metrics-adapter, on purpose:
 * - A vector counts every series: the value is the sum of all series (the original kept the
 *   first and dropped the rest silently). One summed item is what the HPA controller would
 *   compute from one item per series anyway (it sums the items of an External metric), and it
 *   keeps the served labels the HPA's own, whatever series come and go. `multiple-series:
 *   first` keeps the original's first series; `multiple-series: error` is KEDA's rule (more
 *   than one series is an error).
 * - An empty vector, NaN, ±Inf, a matrix or a string is an error naming the query; with
 *   `ignore-null-values: "true"` (KEDA's ignoreNullValues) an empty vector, NaN or ±Inf is 0.
 * - `namespace` is sent as the query's `namespace` parameter, as KEDA sends it.
 * - `per-replica` divides by the scale target's `status.replicas` (Deployment, StatefulSet,
 *   Rollout); zero replicas is an error, not a division by zero; it applies to External
 *   metrics too (the original ignored it there).
 * - `prometheus-server` / `prometheus-server-alias` override the server for Object metrics
 *   too (the original: External only). A URL given in an annotation gets no token (not even
 *   when it is the operator's default server), may not be link-local (as a literal, or a name
 *   resolving to one) unless `allowLinkLocalTargets`, and is never quoted in errors.
 * - Every query has a timeout (`queryTimeoutSeconds`) and a response size cap.
 */
import type { ClusterView, Kind } from "../cluster/types.ts";
import {
  type MultipleSeries,
  type PrometheusConfig,
  prometheusDescriptor,
} from "../core/kube_metrics_adapter/configs/prometheus.ts";
import type { MetricPlan, ObjectReference } from "../core/types.ts";
import { DEFAULT_MAX_RESPONSE_BYTES, type LookupContext } from "./http_get.ts";
import {
  DEFAULT_PROMETHEUS_QUERY_TIMEOUT_SECONDS,
  PrometheusClient,
  type QueryResult,
} from "./prometheus_client.ts";
import type {
  CollectContext,
  Collector,
  CollectorFactory,
  CollectorFactoryOptions,
  CollectResult,
} from "./types.ts";
import { BackendNotConfiguredError, planConfig } from "./types.ts";

/** A Prometheus server the operator configured. */
export interface PrometheusServerOptions {
  /** Base URL (`http://prometheus:9090`; a path prefix is kept). */
  url: string;
  /** File holding a bearer token, re-read whenever it changes (none when absent). */
  tokenFile?: string | null;
}

/**
 * What the operator sets for Prometheus-backed collectors (`prometheus`, `skipper`,
 * `requests-per-second`). Read once, when a factory is made: collectors made from one options
 * object share one client (and one token cache) per server.
 */
export interface PrometheusOptions {
  /** The default server (none when absent: metrics must name one). */
  server?: PrometheusServerOptions | null;
  /** More servers, by the alias `prometheus-server-alias` names them with. */
  additionalServers?: Readonly<Record<string, PrometheusServerOptions>>;
  /** Deadline of one query, seconds (default {@linkcode PROMETHEUS_DEFAULTS}). */
  queryTimeoutSeconds?: number;
  /** Largest response read, bytes (default {@linkcode PROMETHEUS_DEFAULTS}). */
  maxResponseBytes?: number;
  /** A `prometheus-server` an HPA names may be a link-local address (default false). */
  allowLinkLocalTargets?: boolean;
}

/** The defaults of {@linkcode PrometheusOptions}. */
export const PROMETHEUS_DEFAULTS: {
  readonly queryTimeoutSeconds: number;
  readonly maxResponseBytes: number;
  readonly allowLinkLocalTargets: boolean;
} = {
  queryTimeoutSeconds: DEFAULT_PROMETHEUS_QUERY_TIMEOUT_SECONDS,
  maxResponseBytes: DEFAULT_MAX_RESPONSE_BYTES,
  allowLinkLocalTargets: false,
};

/** The Prometheus servers and limits of one {@linkcode PrometheusOptions}, as clients. */
export interface PrometheusBackends {
  /** The default server, or null. */
  default: PrometheusClient | null;
  /** The additional servers, by alias. */
  aliases: ReadonlyMap<string, PrometheusClient>;
  /** Deadline of one query, seconds. */
  timeoutSeconds: number;
  /** Largest response read, bytes. */
  maxBytes: number;
  /** A server an HPA names may be link-local. */
  allowLinkLocal: boolean;
}

function positive(v: number | undefined, dflt: number): number {
  return typeof v === "number" && Number.isFinite(v) && v > 0 ? v : dflt;
}

const backendsCache = new WeakMap<PrometheusOptions, PrometheusBackends>();

/**
 * The clients of `options`, made once per options object, so that every collector of the
 * Prometheus family shares one client (and one token cache) per server. Throws when a server
 * URL is not an http(s) URL.
 *
 * @example
 * ```ts
 * const backends = prometheusBackends({ server: { url: "http://prometheus:9090" } });
 * backends.default?.queryUrl; // "http://prometheus:9090/api/v1/query"
 * ```
 */
export function prometheusBackends(options: PrometheusOptions): PrometheusBackends {
  const cached = backendsCache.get(options);
  if (cached) return cached;
  const server = options.server;
  const aliases = new Map<string, PrometheusClient>();
  for (const [alias, s] of Object.entries(options.additionalServers ?? {})) {
    aliases.set(alias, new PrometheusClient({ url: s.url, tokenFile: s.tokenFile }));
  }
  const backends: PrometheusBackends = {
    default: server ? new PrometheusClient({ url: server.url, tokenFile: server.tokenFile }) : null,
    aliases,
    timeoutSeconds: positive(options.queryTimeoutSeconds, PROMETHEUS_DEFAULTS.queryTimeoutSeconds),
    maxBytes: positive(options.maxResponseBytes, PROMETHEUS_DEFAULTS.maxResponseBytes),
    allowLinkLocal: options.allowLinkLocalTargets ?? PROMETHEUS_DEFAULTS.allowLinkLocalTargets,
  };
  backendsCache.set(options, backends);
  return backends;
}

/**
 * The default server of `backends`, for collectors that query only that one. Throws a
 * `BackendNotConfiguredError` (`<type> metric <name> needs --prometheus-server`) without it.
 */
export function defaultPrometheusServer(
  backends: PrometheusBackends,
  options: { type: string; metricName: string },
): PrometheusClient {
  if (!backends.default) {
    throw new BackendNotConfiguredError(
      `${options.type} metric ${options.metricName} needs --prometheus-server`,
    );
  }
  return backends.default;
}

/** A server URL for a message: without credentials, should the URL carry any. */
function serverText(url: string): string {
  try {
    const u = new URL(url);
    u.username = "";
    u.password = "";
    return u.href.replace(/\/$/, "");
  } catch {
    return url;
  }
}

function formatNumber(v: number): string {
  return Number.isNaN(v) ? "NaN" : v === Infinity ? "+Inf" : v === -Infinity ? "-Inf" : String(v);
}

function seriesText(labels: Record<string, string>): string {
  const name = labels.__name__ ?? "";
  const rest = Object.keys(labels).filter((k) => k !== "__name__").sort()
    .map((k) => `${k}=${JSON.stringify(labels[k])}`);
  return `${name}{${rest.join(", ")}}`;
}

/** How {@linkcode prometheusValue} reduces a result (the `prometheus` collector's keys). */
export interface PrometheusValueOptions {
  /**
   * `ignore-null-values`: an empty vector, or a NaN or ±Inf value, is 0 instead of an error
   * (KEDA's ignoreNullValues). Default false.
   */
  ignoreNullValues?: boolean;
  /**
   * `multiple-series`: a vector's value is the sum of its series (`sum`, the default), the
   * value of its first series (`first`), or an error when it has more than one (`error`).
   */
  multipleSeries?: MultipleSeries;
}

/**
 * The one number a query result stands for: a scalar's value, or the sum of every series of an
 * instant vector (or its first series, or its only one: `options.multipleSeries`). Throws,
 * naming the query (and the server, when given), for an empty vector, a NaN or infinite value
 * (of any series counted), a matrix or a string, and for more than one series under
 * `multipleSeries: "error"`. With `options.ignoreNullValues` an empty vector, a NaN or an
 * infinite value (or sum) is 0 instead: in `sum` mode a NaN series makes the whole value 0, as
 * PromQL's `sum()` of it is NaN.
 *
 * @example
 * ```ts
 * prometheusValue({ resultType: "scalar", value: 3, timestamp: 0 }, "vector(3)"); // 3
 * prometheusValue({ resultType: "vector", series: [] }, "up", undefined, {
 *   ignoreNullValues: true,
 * }); // 0
 * ```
 */
export function prometheusValue(
  result: QueryResult,
  query: string,
  server?: string,
  options: PrometheusValueOptions = {},
): number {
  const q = `query "${query}"${server === undefined ? "" : ` at ${serverText(server)}`}`;
  const ignoreNull = options.ignoreNullValues === true;
  const multiple = options.multipleSeries ?? "sum";
  switch (result.resultType) {
    case "scalar":
      if (!Number.isFinite(result.value)) {
        if (ignoreNull) return 0;
        throw new Error(`${q} returned ${formatNumber(result.value)}`);
      }
      return result.value;
    case "vector": {
      const series = result.series;
      if (series.length === 0) {
        if (ignoreNull) return 0;
        throw new Error(`${q} returned an empty vector`);
      }
      if (series.length > 1 && multiple === "error") {
        throw new Error(
          `${q} returned ${series.length} series; multiple-series is error: want at most one`,
        );
      }
      let sum = 0;
      for (const s of multiple === "first" ? series.slice(0, 1) : series) {
        if (!Number.isFinite(s.value)) {
          if (ignoreNull) return 0;
          throw new Error(
            `${q} returned ${formatNumber(s.value)} in series ${seriesText(s.labels)}`,
          );
        }
        sum += s.value;
      }
      if (!Number.isFinite(sum)) {
        if (ignoreNull) return 0;
        throw new Error(`${q} returned a sum of ${formatNumber(sum)}`);
      }
      return sum;
    }
    case "matrix":
      throw new Error(
        `${q} returned a range vector (matrix); want an instant vector or a scalar`,
      );
    case "string":
      throw new Error(`${q} returned a string; want an instant vector or a scalar`);
  }
}

/** Options of {@linkcode queryPrometheus}: the reduction's, and these. */
export interface QueryPrometheusOptions extends PrometheusValueOptions {
  backends: PrometheusBackends;
  ctx: CollectContext & LookupContext;
  /** Names the metric in error messages. */
  metricName: string;
  /** Sent as the query's `namespace` parameter when set (the `namespace` key). */
  namespace?: string;
}

/**
 * Evaluate `query` on `client` at `ctx.now()` (sending `options.namespace` when set) and
 * reduce it with {@linkcode prometheusValue} under `options`' ignoreNullValues and
 * multipleSeries. Errors name the query and the metric; Prometheus' warnings come back as
 * warnings.
 */
export async function queryPrometheus(
  client: PrometheusClient,
  query: string,
  options: QueryPrometheusOptions,
): Promise<{ value: number; warnings: string[] }> {
  const { backends, ctx, metricName } = options;
  let result: QueryResult;
  try {
    result = await client.query(query, {
      fetch: ctx.fetch,
      signal: ctx.signal,
      time: ctx.now(),
      timeoutSeconds: backends.timeoutSeconds,
      maxBytes: backends.maxBytes,
      lookup: ctx.lookup,
      ...(options.namespace === undefined ? {} : { namespace: options.namespace }),
    });
  } catch (e) {
    throw new Error(
      `prometheus query "${query}" for metric ${metricName} failed: ${(e as Error).message}`,
    );
  }
  let value: number;
  try {
    value = prometheusValue(result, query, client.url, {
      ignoreNullValues: options.ignoreNullValues,
      multipleSeries: options.multipleSeries,
    });
  } catch (e) {
    throw new Error(`prometheus ${(e as Error).message} for metric ${metricName}`);
  }
  const warnings = (result.warnings ?? []).map((w) =>
    `prometheus query "${query}" for metric ${metricName}: ${w}`
  );
  return { value, warnings };
}

/** The kinds whose `status.replicas` per-replica metrics divide by. */
export const SCALE_TARGET_KINDS: readonly Kind[] = ["Deployment", "StatefulSet", "Rollout"];

/** The cluster kind of a scale target reference, or undefined if replicas cannot be read. */
export function scaleTargetKind(ref: ObjectReference): Kind | undefined {
  return (SCALE_TARGET_KINDS as readonly string[]).includes(ref.kind)
    ? ref.kind as Kind
    : undefined;
}

/**
 * `status.replicas` of an HPA's scale target (Deployment, StatefulSet or Rollout) in
 * `namespace`. Throws when the kind is not one of those, the object is not found, or it has no
 * replicas (zero, or not reported yet): a per-replica value cannot be computed then.
 */
export function scaleTargetReplicas(
  cluster: ClusterView,
  options: { namespace: string; scaleTargetRef: ObjectReference },
): number {
  const ref = options.scaleTargetRef;
  const kind = scaleTargetKind(ref);
  const name = `${ref.kind} ${options.namespace}/${ref.name}`;
  if (kind === undefined) {
    throw new Error(
      `cannot read replicas of scale target ${name}: want a ${SCALE_TARGET_KINDS.join(", ")}`,
    );
  }
  const obj = cluster.get(kind, options.namespace, ref.name);
  if (!obj) throw new Error(`scale target ${name} not found`);
  const replicas = obj.status?.replicas ?? 0;
  if (typeof replicas !== "number" || !Number.isInteger(replicas) || replicas < 1) {
    throw new Error(
      `scale target ${name} has ${JSON.stringify(replicas)} replicas (status.replicas)`,
    );
  }
  return replicas;
}

/** Options of {@linkcode collectPrometheus}. */
export interface CollectPrometheusOptions extends QueryPrometheusOptions {
  /** An Object metric's described object name; none for an External metric. */
  objectName?: string;
  /**
   * Divide the value by `status.replicas` of the HPA's scale target (in `namespace`); a failure
   * to read them is an error starting with `context`.
   */
  perReplica?: { namespace: string; scaleTargetRef: ObjectReference; context: string } | null;
  /** Said before Prometheus' own warnings. */
  warnings?: readonly string[];
}

/**
 * One collection of a Prometheus-backed collector: {@linkcode queryPrometheus}, optionally
 * divided by the scale target's replicas (read from `ctx.cluster`), as one sample at
 * `ctx.now()`.
 */
export async function collectPrometheus(
  client: PrometheusClient,
  query: string,
  options: CollectPrometheusOptions,
): Promise<CollectResult> {
  const { ctx, perReplica } = options;
  const { value, warnings } = await queryPrometheus(client, query, options);
  let v = value;
  if (perReplica) {
    let replicas: number;
    try {
      replicas = scaleTargetReplicas(ctx.cluster, {
        namespace: perReplica.namespace,
        scaleTargetRef: perReplica.scaleTargetRef,
      });
    } catch (e) {
      throw new Error(`${perReplica.context}: ${(e as Error).message}`);
    }
    v = value / replicas;
  }
  const sample = options.objectName === undefined
    ? { value: v, timestamp: ctx.now() }
    : { objectName: options.objectName, value: v, timestamp: ctx.now() };
  const all = [...(options.warnings ?? []), ...warnings];
  return all.length > 0 ? { samples: [sample], warnings: all } : { samples: [sample] };
}

interface PrometheusPlanConfig {
  query: string;
  /** The `namespace` parameter, or undefined. */
  namespace: string | undefined;
  ignoreNullValues: boolean;
  multipleSeries: MultipleSeries;
  client: PrometheusClient;
  /** Said once per collection when both overrides are set. */
  warning: string | null;
}

function resolveServer(
  metric: string,
  config: PrometheusConfig,
  backends: PrometheusBackends,
): { client: PrometheusClient; warning: string | null } {
  const alias = config.serverAlias;
  if (config.server !== undefined) {
    // The HPA's choice of server (its schema checked the URL): never the operator's token,
    // never quoted in errors.
    const client = new PrometheusClient({
      url: config.server,
      chosenByHpa: { allowLinkLocal: backends.allowLinkLocal },
    });
    const warning = alias !== undefined
      ? `metric ${metric} sets both prometheus-server and prometheus-server-alias "${alias}"; the URL is used`
      : null;
    return { client, warning };
  }
  if (alias !== undefined) {
    const client = backends.aliases.get(alias);
    if (!client) {
      const known = [...backends.aliases.keys()].sort();
      throw new Error(
        `unknown prometheus-server-alias "${alias}" for metric ${metric} (${
          known.length ? `known: ${known.join(", ")}` : "no --additional-prometheus-server given"
        })`,
      );
    }
    return { client, warning: null };
  }
  if (!backends.default) {
    throw new BackendNotConfiguredError(
      `no Prometheus server for metric ${metric}: start with --prometheus-server or set prometheus-server-alias`,
    );
  }
  return { client: backends.default, warning: null };
}

/** What a plan must be for the collector besides its config. */
function checkPlan(plan: MetricPlan): void {
  if (plan.metricType !== "External" && plan.metricType !== "Object") {
    throw new Error(
      `prometheus collects Object and External metrics, not ${plan.metricType} metric ${plan.metricName}`,
    );
  }
  if (plan.metricType === "Object" && (!plan.describedObject || !plan.describedObject.name)) {
    throw new Error(`Object metric ${plan.metricName} has no describedObject`);
  }
  if (plan.perReplica && scaleTargetKind(plan.scaleTargetRef) === undefined) {
    const ref = plan.scaleTargetRef;
    throw new Error(
      `per-replica metric ${plan.metricName} needs a scale target of kind ${
        SCALE_TARGET_KINDS.join(", ")
      }, not ${ref.kind}/${ref.name}`,
    );
  }
}

class PrometheusCollector implements Collector {
  readonly queryKey: string;
  readonly kinds?: readonly Kind[];
  readonly #plan: MetricPlan;
  readonly #config: PrometheusPlanConfig;
  readonly #backends: PrometheusBackends;

  constructor(plan: MetricPlan, config: PrometheusPlanConfig, backends: PrometheusBackends) {
    this.#plan = plan;
    this.#config = config;
    this.#backends = backends;
    const ns = plan.hpa.namespace;
    const target = plan.scaleTargetRef;
    const d = plan.describedObject;
    if (plan.perReplica) this.kinds = [scaleTargetKind(target)!];
    // A query is global; what the value depends on besides goes into the key.
    this.queryKey = `prometheus|${
      JSON.stringify([
        config.client.url,
        config.client.tokenFile,
        config.query,
        // (KEDA's semantics: HPAs that read one query differently never share a collection)
        config.namespace ?? null,
        config.ignoreNullValues,
        config.multipleSeries,
        plan.metricType,
        plan.metricType === "Object" && d ? [ns, d.kind, d.name] : null,
        plan.perReplica ? [ns, target.kind, target.name] : null,
      ])
    }`;
  }

  /** The engine's deadline is at least the query timeout. */
  timeoutMs(): number {
    return this.#backends.timeoutSeconds * 1000;
  }

  async collect(ctx: CollectContext & LookupContext): Promise<CollectResult> {
    const plan = this.#plan;
    return await collectPrometheus(this.#config.client, this.#config.query, {
      backends: this.#backends,
      ctx,
      metricName: plan.metricName,
      namespace: this.#config.namespace,
      ignoreNullValues: this.#config.ignoreNullValues,
      multipleSeries: this.#config.multipleSeries,
      objectName: plan.metricType === "Object" ? plan.describedObject!.name : undefined,
      perReplica: plan.perReplica
        ? {
          namespace: plan.hpa.namespace,
          scaleTargetRef: plan.scaleTargetRef,
          context: `per-replica metric ${plan.metricName}`,
        }
        : null,
      warnings: this.#config.warning ? [this.#config.warning] : [],
    });
  }
}

/**
 * Object and External `prometheus` metrics, queried on the servers of `prometheus`. Config
 * keys (selector labels or annotations, read by {@linkcode prometheusDescriptor}'s schema):
 * `query` (or, External, `query-name` naming the key that holds it), `prometheus-server` (a
 * URL) or `prometheus-server-alias` (an alias of `prometheus.additionalServers`), and KEDA's
 * semantics: `namespace` (a query parameter), `ignore-null-values`, `multiple-series`. Throws
 * when a server URL of `prometheus` is not an http(s) URL.
 *
 * @example
 * ```ts
 * const factory = createPrometheusFactory({ server: { url: "http://prometheus:9090" } });
 * factory.type; // "prometheus"
 * ```
 */
export function createPrometheusFactory(prometheus: PrometheusOptions = {}): CollectorFactory {
  const backends = prometheusBackends(prometheus);
  return {
    type: "prometheus",
    metricTypes: ["Object", "External"],
    create(options: CollectorFactoryOptions): Collector {
      const { plan } = options;
      checkPlan(plan);
      const config = planConfig(prometheusDescriptor, plan, {
        allowLinkLocalTargets: backends.allowLinkLocal,
      });
      const server = resolveServer(plan.metricName, config, backends);
      return new PrometheusCollector(plan, {
        query: config.query,
        namespace: config.namespace,
        ignoreNullValues: config.ignoreNullValues,
        multipleSeries: config.multipleSeries,
        ...server,
      }, backends);
    },
  };
}
