/**
 * The adapter's own metrics in the Prometheus text exposition format (version 0.0.4), written
 * here rather than pulled from a client library: counters, gauges and histograms with labels.
 * The four counters of kube-metrics-adapter keep their exact names, help texts and (absent)
 * labels, so existing dashboards and alerts keep working.
 *
 * @module
 */

import { type Context, Hono } from "hono";
import type { StoreStats } from "../store/store.ts";
import type { DelegateObservation, DelegateObserver } from "./delegate.ts";
import type { StatusRoutesOptions } from "./status_page.ts";

/** Label values by label name. */
export type Labels = Record<string, string>;

/** Prometheus' default histogram buckets (seconds). */
export const DEFAULT_BUCKETS: readonly number[] = [
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
];

const NAME_RE = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_RE = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** Escape a label value: backslash, double quote and line feed. */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

function escapeHelp(help: string): string {
  return help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

/** A sample value as the text format writes it. */
function formatValue(n: number): string {
  if (Number.isNaN(n)) return "NaN";
  if (n === Infinity) return "+Inf";
  if (n === -Infinity) return "-Inf";
  return String(n);
}

function labelText(names: readonly string[], values: readonly string[], extra = ""): string {
  const parts = names.map((n, i) => `${n}="${escapeLabelValue(values[i])}"`);
  if (extra) parts.push(extra);
  return parts.length ? `{${parts.join(",")}}` : "";
}

/** Options shared by every metric. */
export interface MetricOptions {
  name: string;
  help: string;
  /** Label names, in the order they are written. */
  labelNames?: string[];
}

/** Options of a histogram. */
export interface HistogramOptions extends MetricOptions {
  /** Upper bounds, ascending; `+Inf` is added. Default {@linkcode DEFAULT_BUCKETS}. */
  buckets?: readonly number[];
}

/** Options of a counter; with `collect`, its (unlabelled) total is read when scraped. */
export interface CounterOptions extends MetricOptions {
  /** Called on every scrape: the total kept elsewhere (never decreasing). */
  collect?: () => number;
}

/** Options of a gauge whose values are read when scraped. */
export interface GaugeOptions extends MetricOptions {
  /** Called on every scrape; returns the value (unlabelled) or labelled values. */
  collect?: () => number | { labels: Labels; value: number }[];
}

abstract class Metric<T> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  protected children = new Map<string, { values: string[]; data: T }>();
  /** Children by their label values joined with NUL: the per-observation lookup. */
  #byValues = new Map<string, T>();

  constructor(options: MetricOptions) {
    if (!NAME_RE.test(options.name)) throw new Error(`invalid metric name "${options.name}"`);
    for (const l of options.labelNames ?? []) {
      if (!LABEL_RE.test(l) || l === "le" || l.startsWith("__")) {
        throw new Error(`invalid label name "${l}" for metric ${options.name}`);
      }
    }
    this.name = options.name;
    this.help = options.help;
    this.labelNames = options.labelNames ?? [];
  }

  abstract readonly type: "counter" | "gauge" | "histogram";
  protected abstract initial(): T;
  abstract renderSamples(): string[];

  protected child(labels: Labels = {}): T {
    // seen before: no validation and no JSON key needed
    let joined = "";
    let count = 0;
    for (const n of this.labelNames) {
      const v = labels[n];
      if (v === undefined || String(v).includes("\u0000")) break;
      joined += `${v}\u0000`;
      count++;
    }
    if (count === this.labelNames.length) {
      let given = 0;
      for (const _ in labels) given++;
      if (given === count) {
        const hit = this.#byValues.get(joined);
        if (hit !== undefined) return hit;
      }
    }
    const data = this.#child(labels);
    if (count === this.labelNames.length) this.#byValues.set(joined, data);
    return data;
  }

  #child(labels: Labels): T {
    const values = this.labelNames.map((n) => {
      const v = labels[n];
      if (v === undefined) throw new Error(`missing label "${n}" for metric ${this.name}`);
      return String(v);
    });
    for (const k of Object.keys(labels)) {
      if (!this.labelNames.includes(k)) {
        throw new Error(`unknown label "${k}" for metric ${this.name}`);
      }
    }
    const key = JSON.stringify(values);
    let c = this.children.get(key);
    if (!c) this.children.set(key, c = { values, data: this.initial() });
    return c.data;
  }

  /** Children sorted by label values; an unlabelled metric always has its one child. */
  /** Forget every child (a collected gauge is rebuilt from its source on each scrape). */
  protected clearChildren(): void {
    this.children.clear();
    this.#byValues.clear();
  }

  protected sortedChildren(): { values: string[]; data: T }[] {
    if (this.labelNames.length === 0 && this.children.size === 0) this.child();
    return [...this.children.entries()].sort((a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)
      .map(([, c]) => c);
  }

  render(): string {
    const samples = this.renderSamples();
    if (samples.length === 0) return "";
    return `# HELP ${this.name} ${escapeHelp(this.help)}\n# TYPE ${this.name} ${this.type}\n${
      samples.join("\n")
    }\n`;
  }
}

/** A monotonically increasing count. */
export class Counter extends Metric<{ value: number }> {
  readonly type = "counter" as const;
  readonly #collect?: () => number;
  constructor(options: CounterOptions) {
    super(options);
    this.#collect = options.collect;
  }
  protected initial(): { value: number } {
    return { value: 0 };
  }
  /** Add `by` (default 1, never negative). */
  inc(labels?: Labels, by = 1): void {
    if (!(by >= 0)) throw new Error(`counter ${this.name} cannot decrease (by ${by})`);
    this.child(labels).value += by;
  }
  /**
   * A function that adds 1 with these labels, for a hot path: the labels are looked up on its
   * first call only (a counter never incremented is not shown).
   */
  incrementer(labels?: Labels): () => void {
    let c: { value: number } | undefined;
    return () => {
      (c ??= this.child(labels)).value++;
    };
  }
  /** The current value (0 if never incremented). */
  get(labels?: Labels): number {
    return this.child(labels).value;
  }
  renderSamples(): string[] {
    if (this.#collect) return [`${this.name} ${formatValue(this.#collect())}`];
    return this.sortedChildren().map((c) =>
      `${this.name}${labelText(this.labelNames, c.values)} ${formatValue(c.data.value)}`
    );
  }
}

/** A value that goes up and down, set directly or read on every scrape. */
export class Gauge extends Metric<{ value: number }> {
  readonly type = "gauge" as const;
  #collect?: GaugeOptions["collect"];
  constructor(options: GaugeOptions) {
    super(options);
    this.#collect = options.collect;
  }
  protected initial(): { value: number } {
    return { value: 0 };
  }
  /** Set the value. */
  set(value: number, labels?: Labels): void {
    this.child(labels).value = value;
  }
  /** Add `by` (default 1). */
  inc(labels?: Labels, by = 1): void {
    this.child(labels).value += by;
  }
  /** The current value. */
  get(labels?: Labels): number {
    return this.child(labels).value;
  }
  renderSamples(): string[] {
    if (this.#collect) {
      const got = this.#collect();
      if (typeof got === "number") this.set(got);
      else {
        // what the source no longer lists (a deleted HPA) is not shown any more
        this.clearChildren();
        for (const { labels, value } of got) this.set(value, labels);
      }
    }
    return this.sortedChildren().map((c) =>
      `${this.name}${labelText(this.labelNames, c.values)} ${formatValue(c.data.value)}`
    );
  }
}

/** Observations counted into cumulative buckets, with their sum and count. */
export class Histogram extends Metric<{ counts: number[]; sum: number; count: number }> {
  readonly type = "histogram" as const;
  readonly buckets: readonly number[];
  constructor(options: HistogramOptions) {
    super(options);
    const buckets = [...(options.buckets ?? DEFAULT_BUCKETS)].filter((b) => b !== Infinity);
    for (let i = 1; i < buckets.length; i++) {
      if (!(buckets[i] > buckets[i - 1])) {
        throw new Error(`buckets of histogram ${options.name} must be increasing`);
      }
    }
    this.buckets = buckets;
  }
  protected initial(): { counts: number[]; sum: number; count: number } {
    return { counts: this.buckets.map(() => 0), sum: 0, count: 0 };
  }
  /** Record one observation. */
  observe(value: number, labels?: Labels): void {
    this.#record(this.child(labels), value);
  }
  /**
   * A function that records observations with these labels, for a hot path: the labels are
   * checked and looked up once, here, not on every observation.
   */
  observer(labels?: Labels): (value: number) => void {
    const c = this.child(labels);
    return (value) => this.#record(c, value);
  }
  #record(c: { counts: number[]; sum: number; count: number }, value: number): void {
    for (let i = 0; i < this.buckets.length; i++) if (value <= this.buckets[i]) c.counts[i]++;
    c.sum += value;
    c.count++;
  }
  renderSamples(): string[] {
    const out: string[] = [];
    for (const c of this.sortedChildren()) {
      this.buckets.forEach((b, i) => {
        out.push(
          `${this.name}_bucket${labelText(this.labelNames, c.values, `le="${formatValue(b)}"`)} ${
            c.data.counts[i]
          }`,
        );
      });
      out.push(
        `${this.name}_bucket${labelText(this.labelNames, c.values, 'le="+Inf"')} ${c.data.count}`,
      );
      out.push(
        `${this.name}_sum${labelText(this.labelNames, c.values)} ${formatValue(c.data.sum)}`,
      );
      out.push(`${this.name}_count${labelText(this.labelNames, c.values)} ${c.data.count}`);
    }
    return out;
  }
}

/** A set of metrics rendered together; names are unique. */
export class MetricsRegistry {
  #metrics = new Map<string, Counter | Gauge | Histogram>();

  #add<M extends Counter | Gauge | Histogram>(m: M): M {
    if (this.#metrics.has(m.name)) throw new Error(`metric ${m.name} is already registered`);
    this.#metrics.set(m.name, m);
    return m;
  }

  /** Register a counter. */
  counter(options: CounterOptions): Counter {
    return this.#add(new Counter(options));
  }

  /** Register a gauge. */
  gauge(options: GaugeOptions): Gauge {
    return this.#add(new Gauge(options));
  }

  /** Register a histogram. */
  histogram(options: HistogramOptions): Histogram {
    return this.#add(new Histogram(options));
  }

  /** Every metric in the text exposition format, in registration order. */
  render(): string {
    return [...this.#metrics.values()].map((m) => m.render()).join("");
  }
}

/** What the API app reports about each request (see `ApiOptions.onRequest`). */
export interface RequestObservation {
  method: string;
  /** Coarse route: discovery, custom, external, health, version, openapi, other. */
  route: string;
  code: number;
  durationSeconds: number;
}

/** The adapter's metrics, registered in one registry. */
export interface AdapterMetrics {
  registry: MetricsRegistry;
  /** kube-metrics-adapter's: successful collections. */
  collectionsSuccess: Counter;
  /** kube-metrics-adapter's: failed collections. */
  collectionsError: Counter;
  /** kube-metrics-adapter's: successful HPA updates (plan refreshes). */
  updatesSuccess: Counter;
  /** kube-metrics-adapter's: failed HPA updates. */
  updatesError: Counter;
  /** Collections by collector type and result (`success`, `error`). */
  collectorCollections: Counter;
  /** Collection latency by collector type. */
  collectionDuration: Histogram;
  /** Request latency by route and status code. */
  requestDuration: Histogram;
  /** Record one collection in all the collection metrics. */
  observeCollection(collector: string, ok: boolean, seconds: number): void;
  /** Record one served request. */
  observeRequest(obs: RequestObservation): void;
}

/** Options of {@linkcode createAdapterMetrics}. */
export interface AdapterMetricsOptions {
  registry?: MetricsRegistry;
  /** Read on every scrape for the stored-value gauges. */
  storeStats?: () => StoreStats;
  /** Read on every scrape for the fallback gauges: every metric with a fallback. */
  fallbacks?: () => FallbackGauge[];
}

/** One metric with a fallback (issue 21), as the fallback gauges show it. */
export interface FallbackGauge {
  hpa: { namespace: string; name: string };
  metricType: string;
  metricName: string;
  /** The fallback value is served now. */
  active: boolean;
  /** Consecutive failed collections (of a formula: the most of any input). */
  consecutiveFailures: number;
}

/**
 * Register the adapter's metrics: kube-metrics-adapter's four counters plus per-collector
 * counters, latency histograms and stored-value gauges.
 *
 * @example
 * ```ts
 * const metrics = createAdapterMetrics({ storeStats: () => store.stats() });
 * metrics.observeCollection("prometheus", true, 0.012);
 * ```
 */
export function createAdapterMetrics(options: AdapterMetricsOptions = {}): AdapterMetrics {
  const registry = options.registry ?? new MetricsRegistry();
  const collectionsSuccess = registry.counter({
    name: "kube_metrics_adapter_collections_success",
    help: "The total number of successful collections",
  });
  const collectionsError = registry.counter({
    name: "kube_metrics_adapter_collections_error",
    help: "The total number of failed collection attempts",
  });
  const updatesSuccess = registry.counter({
    name: "kube_metrics_adapter_updates_success",
    help: "The total number of successful HPA updates",
  });
  const updatesError = registry.counter({
    name: "kube_metrics_adapter_updates_error",
    help: "The total number of failed HPA update attempts",
  });
  const collectorCollections = registry.counter({
    name: "kube_metrics_adapter_collector_collections_total",
    help: "Collections by collector type and result (success or error)",
    labelNames: ["collector", "result"],
  });
  const collectionDuration = registry.histogram({
    name: "kube_metrics_adapter_collection_duration_seconds",
    help: "Time one collection took, by collector type",
    labelNames: ["collector"],
  });
  const requestDuration = registry.histogram({
    name: "kube_metrics_adapter_request_duration_seconds",
    help: "Time to answer an API request, by route and status code",
    labelNames: ["route", "code"],
  });
  const stats = options.storeStats;
  if (stats) {
    registry.gauge({
      name: "kube_metrics_adapter_stored_values",
      help: "Metric values held in the store, by API (custom or external)",
      labelNames: ["api"],
      collect: () => {
        const s = stats();
        return [
          { labels: { api: "custom" }, value: s.customValues },
          { labels: { api: "external" }, value: s.externalValues },
        ];
      },
    });
    registry.gauge({
      name: "kube_metrics_adapter_plans",
      help: "Metric plans (HPA metrics) the store serves",
      collect: () => stats().plans,
    });
    registry.gauge({
      name: "kube_metrics_adapter_conflicted_plans",
      help: "Plans withheld because another HPA collects the same value with a different query",
      collect: () => stats().conflictedPlans,
    });
  }
  const fallbacks = options.fallbacks;
  if (fallbacks) {
    const labels = (f: FallbackGauge) => ({
      namespace: f.hpa.namespace,
      hpa: f.hpa.name,
      metric_type: f.metricType,
      metric: f.metricName,
    });
    const labelNames = ["namespace", "hpa", "metric_type", "metric"];
    registry.gauge({
      name: "hpa_metrics_adapter_fallback_active",
      help:
        "1 while the fallback value of an HPA's metric is served (fallback-* annotations), else 0",
      labelNames,
      collect: () => fallbacks().map((f) => ({ labels: labels(f), value: f.active ? 1 : 0 })),
    });
    registry.gauge({
      name: "hpa_metrics_adapter_consecutive_failures",
      help:
        "Consecutive failed collections of an HPA's metric that has a fallback (of a formula: the most of any input)",
      labelNames,
      collect: () => fallbacks().map((f) => ({ labels: labels(f), value: f.consecutiveFailures })),
    });
  }
  // per collector: counted without building a label key for each collection
  const collectionObservers = new Map<
    string,
    { success: () => void; error: () => void; duration: (seconds: number) => void }
  >();
  // route -> code -> observer: a request is counted without building a label key
  const requestObservers = new Map<string, Map<number, (seconds: number) => void>>();
  return {
    registry,
    collectionsSuccess,
    collectionsError,
    updatesSuccess,
    updatesError,
    collectorCollections,
    collectionDuration,
    requestDuration,
    observeCollection(collector: string, ok: boolean, seconds: number): void {
      (ok ? collectionsSuccess : collectionsError).inc();
      let c = collectionObservers.get(collector);
      if (c === undefined) {
        c = {
          success: collectorCollections.incrementer({ collector, result: "success" }),
          error: collectorCollections.incrementer({ collector, result: "error" }),
          duration: collectionDuration.observer({ collector }),
        };
        collectionObservers.set(collector, c);
      }
      (ok ? c.success : c.error)();
      c.duration(seconds);
    },
    observeRequest(obs: RequestObservation): void {
      let byCode = requestObservers.get(obs.route);
      if (byCode === undefined) requestObservers.set(obs.route, byCode = new Map());
      let observe = byCode.get(obs.code);
      if (observe === undefined) {
        observe = requestDuration.observer({ route: obs.route, code: String(obs.code) });
        byCode.set(obs.code, observe);
      }
      observe(obs.durationSeconds);
    },
  };
}

/** One guarded HPA's gauges (the replica guard's last decision). */
export interface GuardGaugeValues {
  namespace: string;
  hpa: string;
  minReplicas: number;
  actualReplicas: number;
  requestRate: number;
}

/** What the replica guard reports (see controllers/replica_guard.ts). */
export interface GuardMetrics {
  /** One HPA processed by a pass: `succeeded`, `failed` or `skipped`. */
  processed(namespace: string, status: string): void;
  /** Why an HPA was not decided (a fixed reason). */
  failed(namespace: string, reason: string): void;
}

/**
 * Register the replica guard's metrics under estafette-k8s-hpa-scaler's names and labels, so
 * that its dashboards keep working (`estafette_hpa_scaler_totals`, `_min_replicas`,
 * `_actual_replicas`, `_request_rate`), plus why HPAs were not decided
 * (`hpa_metrics_adapter_replica_guard_failures_total`). The gauges are read from `gauges` on
 * each scrape.
 *
 * @example
 * ```ts
 * const sink = createGuardMetrics(metrics.registry, () => guard.gauges());
 * sink.processed("shop", "succeeded");
 * ```
 */
export function createGuardMetrics(
  registry: MetricsRegistry,
  gauges: () => GuardGaugeValues[],
): GuardMetrics {
  const totals = registry.counter({
    name: "estafette_hpa_scaler_totals",
    help: "Number of processed HPAs (estafette-k8s-hpa-scaler's name), by namespace and status",
    labelNames: ["namespace", "status", "initiator"],
  });
  const failures = registry.counter({
    name: "hpa_metrics_adapter_replica_guard_failures_total",
    help: "HPAs the replica guard could not decide, by namespace and reason",
    labelNames: ["namespace", "reason"],
  });
  const gauge = (name: string, help: string, pick: (g: GuardGaugeValues) => number): void => {
    registry.gauge({
      name,
      help,
      labelNames: ["hpa", "namespace"],
      collect: () =>
        gauges().map((g) => ({ labels: { hpa: g.hpa, namespace: g.namespace }, value: pick(g) })),
    });
  };
  gauge(
    "estafette_hpa_scaler_min_replicas",
    "The minReplicas the replica guard computed for an HPA",
    (g) => g.minReplicas,
  );
  gauge(
    "estafette_hpa_scaler_actual_replicas",
    "status.currentReplicas of an HPA at the replica guard's last decision",
    (g) => g.actualReplicas,
  );
  gauge(
    "estafette_hpa_scaler_request_rate",
    "The value of an HPA's guard query (0 without a query)",
    (g) => g.requestRate,
  );
  return {
    processed(namespace, status) {
      totals.inc({ namespace, status, initiator: "poller" });
    },
    failed(namespace, reason) {
      failures.inc({ namespace, reason });
    },
  };
}

/**
 * Register the metrics of the delegates (issue 26) and return their observer: requests by API
 * (`custom`, `external`), delegate URL, request (`read`, `discovery`) and status code (`error`
 * when none came), failures by reason (`unreachable`, `timeout`, `too-large`, `invalid-answer`,
 * `busy`), and latency.
 *
 * @example
 * ```ts
 * const observer = createDelegateMetrics(metrics.registry);
 * const keda = new MetricsDelegate({ ...options, observer });
 * ```
 */
export function createDelegateMetrics(registry: MetricsRegistry): DelegateObserver {
  const requests = registry.counter({
    name: "hpa_metrics_adapter_delegate_requests_total",
    help: "Requests to the delegate adapters, by API, delegate, request and status code",
    labelNames: ["api", "delegate", "request", "code"],
  });
  const errors = registry.counter({
    name: "hpa_metrics_adapter_delegate_errors_total",
    help:
      "Requests to the delegate adapters that failed (unreachable, timeout, too-large, invalid-answer, busy), by API, delegate, request and reason",
    labelNames: ["api", "delegate", "request", "reason"],
  });
  const duration = registry.histogram({
    name: "hpa_metrics_adapter_delegate_request_duration_seconds",
    help: "Time of one request to a delegate adapter, by API, delegate and request",
    labelNames: ["api", "delegate", "request"],
  });
  return {
    observe(obs: DelegateObservation): void {
      const { api, delegate, request } = obs;
      requests.inc({ api, delegate, request, code: obs.code });
      if (obs.reason !== null) errors.inc({ api, delegate, request, reason: obs.reason });
      duration.observe(obs.durationSeconds, { api, delegate, request });
    },
  };
}

/** What `--shard-collection`'s gauges read (issue 29). */
export interface ShardGauges {
  /** Live members, this replica included while its Lease is renewed. */
  members: number;
  /** Collections (distinct queries) this replica runs, of `collections`. */
  owned: number;
  collections: number;
  recordsSent: number;
  recordsReceived: number;
  sendFailures: number;
}

/** The own metrics of `--shard-collection`: this replica's share and its pushes. */
export function createShardMetrics(registry: MetricsRegistry, read: () => ShardGauges): void {
  registry.gauge({
    name: "hpa_metrics_adapter_shard_members",
    help: "Replicas sharing the collection, as this replica sees them (itself included)",
    collect: () => read().members,
  });
  registry.gauge({
    name: "hpa_metrics_adapter_shard_owned_collections",
    help: "Collections (distinct queries) this replica runs",
    collect: () => read().owned,
  });
  registry.gauge({
    name: "hpa_metrics_adapter_shard_collections",
    help: "Collections (distinct queries) of all replicas together",
    collect: () => read().collections,
  });
  registry.counter({
    name: "hpa_metrics_adapter_shard_pushed_records_total",
    help: "Values and failures this replica pushed to its peers (one per plan per peer)",
    collect: () => read().recordsSent,
  });
  registry.counter({
    name: "hpa_metrics_adapter_shard_received_records_total",
    help: "Values and failures this replica received from its peers and stored",
    collect: () => read().recordsReceived,
  });
  registry.counter({
    name: "hpa_metrics_adapter_shard_push_failures_total",
    help: "Pushes to a peer that failed (unreachable, refused, timeout)",
    collect: () => read().sendFailures,
  });
}

/** The authorizer's counters ({@linkcode ReviewStats} of auth_review.ts). */
export interface AuthorizationGauges {
  cacheEntries: number;
  reviews: number;
  groupReviews: number;
  decidedByGroup: number;
}

/** The own metrics of delegated authorization: its SubjectAccessReview cache and reviews. */
export function createAuthorizationMetrics(
  registry: MetricsRegistry,
  read: () => AuthorizationGauges,
): void {
  registry.gauge({
    name: "hpa_metrics_adapter_authorization_cache_entries",
    help: "SubjectAccessReview answers cached (expired ones until they are pushed out)",
    collect: () => read().cacheEntries,
  });
  registry.counter({
    name: "hpa_metrics_adapter_subject_access_reviews_total",
    help: "SubjectAccessReviews sent to the Kubernetes API (group reviews included)",
    collect: () => read().reviews,
  });
  registry.counter({
    name: "hpa_metrics_adapter_group_subject_access_reviews_total",
    help: "SubjectAccessReviews about a whole API group (resource *) sent",
    collect: () => read().groupReviews,
  });
  registry.counter({
    name: "hpa_metrics_adapter_authorization_group_decisions_total",
    help: "Requests allowed by a group review's answer on the review path",
    collect: () => read().decidedByGroup,
  });
}

/** Options of {@linkcode createMetricsApp}. */
export interface MetricsAppOptions {
  /**
   * Serve the status page (`/status`, `/status/<ns>/<name>`, `/status.json`) from what this
   * resolves to. It is called, and the page's code is loaded, on the first request to one of
   * those paths (again after a failure): an adapter whose page nobody opens does not carry it.
   */
  status?: () => Promise<StatusRoutesOptions>;
}

/**
 * A Hono app serving `GET /metrics` from a registry (for `--metrics-address`, plain HTTP), and
 * the status page when given.
 *
 * @example
 * ```ts
 * const app = createMetricsApp(metrics.registry);
 * ```
 */
export function createMetricsApp(registry: MetricsRegistry, options: MetricsAppOptions = {}): Hono {
  const app = new Hono();
  app.get("/metrics", () =>
    new Response(registry.render(), {
      headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" },
    }));
  const loadStatus = options.status;
  if (loadStatus) {
    let pages: Promise<Hono> | undefined;
    const statusPages = (): Promise<Hono> =>
      pages ??= Promise.all([import("./status_page.ts"), loadStatus()]).then(([m, o]) => {
        const sub = new Hono();
        m.addStatusRoutes(sub, o);
        return sub;
      }, (e) => {
        pages = undefined;
        throw e;
      });
    const handler = async (c: Context): Promise<Response> => (await statusPages()).fetch(c.req.raw);
    app.get("/status", handler);
    app.get("/status.json", handler);
    app.get("/status/*", handler);
  }
  app.notFound(() =>
    new Response("404 page not found\n", {
      status: 404,
      headers: { "content-type": "text/plain; charset=utf-8" },
    })
  );
  return app;
}
