/**
 * prometheus-adapter's config file served (`--prometheus-adapter-config`, issue 49): the file
 * loaded, checked and watched; its `rules` and `externalRules` discovered against Prometheus
 * every relist interval, as v0.12.0 does (`/api/v1/series` per distinct `seriesQuery` since
 * `now - max age`); reads of what they discover answered from a cache of collected values.
 *
 * Why a cache of its own and not the store: the store holds values per (HPA, metric) plan,
 * declared before any read and checked for conflicts between HPAs; a rule's values are asked
 * per request (any object, any pod set, any selector) without a plan behind them, and the same
 * read must be answered as prometheus-adapter answers it (items per name asked, an empty list
 * for pods without values). The semantics are the store's and the engine's: a first read runs
 * one query and schedules it every collection interval, later reads are lookups, a value older
 * than the TTL is never served, and a read nobody made for a TTL is no longer collected.
 *
 * A read of a metric not discovered yet runs the series queries of the rules that could name
 * it once (at most once per name and `discoveryMinIntervalSeconds`) before it is answered as
 * unknown: a new series is found on its first read, not at the next relist.
 *
 * `resourceRules` (metrics.k8s.io, PodMetrics and NodeMetrics) are read through the same cache:
 * one entry per namespace for pods (its `containerQuery`s over every running pod of the
 * namespace, so any labelSelector, fieldSelector or single pod of it is served from one
 * collection) and one for all nodes (the `nodeQuery`s). prometheus-adapter queries the pods a
 * read asks for; as the queries sum by pod and container, a pod's usage is the same either way.
 * A collection that fails keeps the last answer for its TTL; without one, the pods or nodes are
 * left out of the read, as upstream leaves them out.
 *
 * @module
 */
import { load as loadYaml } from "js-yaml";
import type { Selector } from "../core/kubernetes/label_selector.ts";
import type { PrometheusAdapterStatus } from "../api/status_model.ts";
import {
  type AdapterPlanContext,
  COMMON_KINDS,
  couldNameMetric,
  customItems,
  type CustomMetricRegistry,
  describedKind,
  discoverCustomMetrics,
  discoverExternalMetrics,
  distinctSeriesQueries,
  externalItems,
  type ExternalMetricRegistry,
  type GroupResource,
  type KindInfo,
  type MetricNamer,
  metricNamers,
  nodeMetricsFromVectors,
  type NodeUsage,
  parsePrometheusAdapterConfig,
  podMetricsFromVectors,
  type PodUsage,
  type PrometheusAdapterConfig,
  PrometheusAdapterConfigError,
  renderNodeMetricsQueries,
  renderPodMetricsQueries,
  type ResourceMapper,
  type ResourceMetricsReader,
  resourceMetricsReader,
  type ResourceQueries,
  type ResourceSample,
  type SeriesLabels,
  seriesShapes,
  splitNamesForQuery,
  staticResourceMapper,
  valuesByName,
} from "../core/prometheus_adapter/mod.ts";
import type { PrometheusClient } from "../collectors/prometheus_client.ts";
import type { CustomItem, ExternalItem, ServedMetric } from "../store/types.ts";
import type {
  AdapterAnswer,
  AdapterCustomRead,
  AdapterExternalRead,
  AdapterResult,
  PrometheusAdapterSource,
} from "../api/prometheus_adapter.ts";
import type {
  NodeMetricsRead,
  PodMetricsRead,
  ResourceMetricsSource,
} from "../api/resource_metrics.ts";
import { errorText } from "./error_text.ts";
import type { Logger } from "./logger.ts";

/** Defaults of {@linkcode PrometheusAdapterOptions}. */
export const PROMETHEUS_ADAPTER_DEFAULTS: Readonly<{
  relistIntervalSeconds: number;
  configPollSeconds: number;
  maxQueryLength: number;
  discoveryMinIntervalSeconds: number;
}> = {
  // prometheus-adapter's --metrics-relist-interval
  relistIntervalSeconds: 600,
  configPollSeconds: 10,
  maxQueryLength: 8192,
  discoveryMinIntervalSeconds: 10,
};

/** Options of {@linkcode PrometheusAdapterServing.start}. */
export interface PrometheusAdapterOptions {
  /** The file, for messages. */
  configPath: string;
  /** Reads the file by its path, each time (a ConfigMap update swaps a symlink). */
  readConfig: () => Promise<string>;
  /** The Prometheus server (`--prometheus-server`). */
  client: PrometheusClient;
  fetch: typeof fetch;
  /** The cluster's resource names, fixed; else `discoverKinds`'s, else {@linkcode COMMON_KINDS}. */
  mapper?: ResourceMapper;
  /**
   * The cluster's kinds, from its discovery (src/cluster/discovery.ts): read at start and every
   * `kindsRefreshSeconds`, as prometheus-adapter's RESTMapper is reset every
   * `--discovery-interval`. A failed read keeps the kinds known before ({@linkcode COMMON_KINDS}
   * at start).
   */
  discoverKinds?: () => Promise<readonly KindInfo[]>;
  /** Seconds between two reads of `discoverKinds` (default 600). */
  kindsRefreshSeconds?: number;
  /**
   * The names of the objects of a resource a `labelSelector` selects (kube-apiserver's list),
   * for `*` reads of resources other than pods; without it those reads answer 404.
   */
  listNames?: (list: {
    group: string;
    version: string;
    resource: string;
    /** null: cluster-scoped. */
    namespace: string | null;
    labelSelector: string;
  }) => Promise<string[]>;
  /** Seconds between discoveries (`--metrics-relist-interval`). */
  relistIntervalSeconds: number;
  /** How far back series count (`--metrics-max-age`), seconds. */
  maxAgeSeconds: number;
  /** Seconds between checks of the file for changes. */
  configPollSeconds: number;
  /** Seconds between collections of a value that is read. */
  collectionIntervalSeconds: number;
  /** A value older than this is never served; a read not made for this long stops. Seconds. */
  ttlSeconds: number;
  /** Longest query sent for a read of several objects (0: no limit); longer ones are split. */
  maxQueryLength: number;
  /** Least seconds between two on-demand discoveries for one unknown name. */
  discoveryMinIntervalSeconds?: number;
  queryTimeoutSeconds: number;
  maxBytes: number;
  now: () => number;
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (handle: unknown) => void;
  logger: Logger;
}

/** The parts of a loaded file. */
interface Loaded {
  text: string;
  config: PrometheusAdapterConfig;
  custom: MetricNamer[];
  external: MetricNamer[];
  /** `resourceRules` resolved, or null without them. */
  resource: ResourceMetricsReader | null;
}

/** What the last discovery found. */
interface Discovered {
  custom: CustomMetricRegistry;
  external: ExternalMetricRegistry;
  served: ServedMetric[];
}

/** A read's cached answer and its schedule. */
interface ReadEntry<T> {
  key: string;
  /** The answer of the last collection; an error does not replace a good answer in its TTL. */
  answer: AdapterAnswer<T> | null;
  /** When `answer` was collected (ms). */
  collectedAt: number;
  /** Custom reads: the names the answer's collection asked for. */
  names: ReadonlySet<string>;
  lastRead: number;
  inflight: Promise<AdapterAnswer<T> | undefined> | null;
  timer: unknown;
  collect: () => Promise<CollectOutcome<T>>;
}

type CollectOutcome<T> =
  | { answer: AdapterAnswer<T>; names: ReadonlySet<string> }
  | { gone: true };

/** An error of the config file: every problem, for the log and the exit message. */
export class PrometheusAdapterFileError extends Error {
  /** The problems, each naming the rule and field (`rules[2].metricsQuery: ...`). */
  readonly problems: readonly string[];
  constructor(path: string, problems: readonly string[]) {
    super(`invalid prometheus-adapter config "${path}": ${problems.join("; ")}`);
    this.problems = problems;
  }
}

/**
 * Read a prometheus-adapter config file's text into its rules resolved against the cluster's
 * resources. Throws a {@linkcode PrometheusAdapterFileError} naming the rule and field.
 */
export function loadPrometheusAdapterConfig(
  path: string,
  text: string,
  mapper: ResourceMapper,
): {
  config: PrometheusAdapterConfig;
  custom: MetricNamer[];
  external: MetricNamer[];
  resource: ResourceMetricsReader | null;
} {
  let doc: unknown;
  try {
    doc = loadYaml(text);
  } catch (e) {
    throw new PrometheusAdapterFileError(path, [`cannot parse YAML: ${errorText(e)}`]);
  }
  let config: PrometheusAdapterConfig;
  try {
    config = parsePrometheusAdapterConfig(doc);
  } catch (e) {
    if (e instanceof PrometheusAdapterConfigError) {
      throw new PrometheusAdapterFileError(path, e.problems);
    }
    throw e;
  }
  try {
    return {
      config,
      custom: metricNamers(config.rules, mapper),
      external: metricNamers(config.externalRules, mapper),
      resource: config.resourceRules === null
        ? null
        : resourceMetricsReader(config.resourceRules, mapper),
    };
  } catch (e) {
    throw new PrometheusAdapterFileError(path, [errorText(e)]);
  }
}

function qualified(gr: GroupResource): string {
  return gr.group === "" ? gr.resource : `${gr.resource}.${gr.group}`;
}

/** `deployments.apps` -> `{ group: "apps", resource: "deployments" }`. */
function splitGroupResource(s: string): GroupResource {
  const dot = s.indexOf(".");
  return dot < 0
    ? { group: "", resource: s }
    : { group: s.slice(dot + 1), resource: s.slice(0, dot) };
}

function servedOf(custom: CustomMetricRegistry, external: ExternalMetricRegistry): ServedMetric[] {
  return [
    ...custom.metrics.map((m): ServedMetric => ({
      kind: "custom",
      groupResource: qualified(m),
      metricName: m.metric,
      namespaced: m.namespaced,
    })),
    ...external.metrics.map((metricName): ServedMetric => ({ kind: "external", metricName })),
  ];
}

function selectorKey(sel: Selector): string {
  return JSON.stringify(sel);
}

/**
 * The cluster's resource names as its discovery last listed them (a mapper whose kinds are
 * swapped when a new read succeeds): templates resolve against the latest, and a rule's
 * overrides against those of the load that resolved them, as upstream's.
 */
class KindsMapper implements ResourceMapper {
  #current: ResourceMapper;
  /** How many kinds the last good read listed; null while the built-in ones are used. */
  discovered: number | null = null;

  constructor(kinds: readonly KindInfo[]) {
    this.#current = staticResourceMapper(kinds);
  }

  async refresh(discover: () => Promise<readonly KindInfo[]>, logger: Logger): Promise<void> {
    let kinds: readonly KindInfo[];
    try {
      kinds = await discover();
    } catch (e) {
      logger.error("cannot read the cluster's resources for prometheus-adapter's rules", {
        error: errorText(e),
        using: this.discovered === null ? "built-in kinds" : "the last ones read",
      });
      return;
    }
    if (kinds.length === 0) return;
    if (this.discovered !== kinds.length) {
      logger.info("cluster resources read for prometheus-adapter's rules", {
        kinds: kinds.length,
      });
    }
    this.#current = staticResourceMapper(kinds);
    this.discovered = kinds.length;
  }

  resourceFor(gr: GroupResource): GroupResource {
    return this.#current.resourceFor(gr);
  }

  singular(resource: string): string {
    return this.#current.singular(resource);
  }

  kindOf(gr: GroupResource): KindInfo | null {
    return this.#current.kindOf(gr);
  }
}

/** Why a query's answer is not what a read needs. */
class NotAVectorError extends Error {}

/**
 * prometheus-adapter's `rules` and `externalRules`, discovered and served (see the module
 * documentation).
 *
 * @example
 * ```ts
 * const serving = await PrometheusAdapterServing.start({ configPath, readConfig, client, ... });
 * createApp({ ...api, prometheusAdapter: serving });
 * await serving.stop();
 * ```
 */
export class PrometheusAdapterServing implements PrometheusAdapterSource, ResourceMetricsSource {
  readonly #o: PrometheusAdapterOptions;
  readonly #mapper: ResourceMapper;
  readonly #setTimer: (fn: () => void, ms: number) => unknown;
  readonly #clearTimer: (handle: unknown) => void;
  #loaded: Loaded;
  /** The text of the last file refused (logged once), or null. */
  #refused: string | null = null;
  /** Why the last file refused was refused (the status page), or null. */
  #refusedError: string | null = null;
  /** The last discovery of every rule: when it ended, and its error (the status page). */
  #lastDiscovery: { at: number; error: string | null } | null = null;
  /** The file could not be read (logged once). */
  #unreadable = false;
  /** What each series query answered last, as discovery reads it (its shapes: seriesShapes). */
  #series = new Map<string, readonly SeriesLabels[]>();
  #discovered: Discovered;
  #version = 0;
  #servedText = "[]";
  #discovering: Promise<void> | null = null;
  /** Last on-demand discovery per `kind SEP name` (ms). */
  #asked = new Map<string, number>();
  #reads = new Map<
    string,
    ReadEntry<CustomItem> | ReadEntry<ExternalItem> | ReadEntry<PodUsage> | ReadEntry<NodeUsage>
  >();
  #relistTimer: unknown = null;
  #pollTimer: unknown = null;
  #kindsTimer: unknown = null;
  #stopped = false;
  readonly #abort = new AbortController();

  /** Use {@linkcode PrometheusAdapterServing.start}. */
  constructor(options: PrometheusAdapterOptions, loaded: Loaded, mapper: ResourceMapper) {
    this.#o = options;
    this.#mapper = mapper;
    this.#setTimer = options.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
    this.#clearTimer = options.clearTimer ??
      ((h) => clearTimeout(h as ReturnType<typeof setTimeout>));
    this.#loaded = loaded;
    this.#discovered = {
      custom: discoverCustomMetrics([], new Map(), mapper),
      external: discoverExternalMetrics([], new Map()),
      served: [],
    };
  }

  /**
   * Load the file (a bad one throws {@linkcode PrometheusAdapterFileError}), run the first
   * discovery (a failure is logged: the next relist tries again) and start the relist and the
   * file's watch.
   */
  static async start(options: PrometheusAdapterOptions): Promise<PrometheusAdapterServing> {
    const kinds = new KindsMapper(COMMON_KINDS);
    if (options.mapper === undefined && options.discoverKinds) {
      await kinds.refresh(options.discoverKinds, options.logger);
    }
    const mapper = options.mapper ?? kinds;
    let text: string;
    try {
      text = await options.readConfig();
    } catch (e) {
      throw new Error(
        `cannot read prometheus-adapter config "${options.configPath}": ${errorText(e)}`,
      );
    }
    const loaded = { text, ...loadPrometheusAdapterConfig(options.configPath, text, mapper) };
    const serving = new PrometheusAdapterServing(options, loaded, mapper);
    await serving.#discover(null);
    serving.#scheduleRelist();
    serving.#schedulePoll();
    if (options.mapper === undefined && options.discoverKinds) {
      serving.#scheduleKinds(kinds, options.discoverKinds);
    }
    return serving;
  }

  /** Stop the relist, the watch and every scheduled collection. */
  stop(): Promise<void> {
    this.#stopped = true;
    this.#abort.abort(new Error("stopped"));
    if (this.#relistTimer !== null) this.#clearTimer(this.#relistTimer);
    if (this.#pollTimer !== null) this.#clearTimer(this.#pollTimer);
    if (this.#kindsTimer !== null) this.#clearTimer(this.#kindsTimer);
    for (const entry of this.#reads.values()) {
      if (entry.timer !== null) this.#clearTimer(entry.timer);
    }
    this.#reads.clear();
    return Promise.resolve();
  }

  /** The config in use (the last good one). */
  get config(): PrometheusAdapterConfig {
    return this.#loaded.config;
  }

  /** How many reads are being collected. */
  get collectedReads(): number {
    return this.#reads.size;
  }

  version(): number {
    return this.#version;
  }

  servedMetrics(): readonly ServedMetric[] {
    return this.#discovered.served;
  }

  /**
   * What the status page shows: the file, a refused edit's error, the last discovery, and each
   * rule with the metrics it serves now.
   */
  status(): PrometheusAdapterStatus {
    const custom = new Map<string, string[]>();
    for (const m of this.#discovered.custom.metrics) {
      const rule = this.#discovered.custom.ruleOf(m);
      if (rule === undefined) continue;
      const name = `${m.group === "" ? m.resource : `${m.resource}.${m.group}`}/${m.metric}`;
      custom.set(rule, [...(custom.get(rule) ?? []), name]);
    }
    const external = new Map<string, string[]>();
    for (const name of this.#discovered.external.metrics) {
      const rule = this.#discovered.external.find(name)?.namer.rule.path;
      if (rule !== undefined) external.set(rule, [...(external.get(rule) ?? []), name]);
    }
    const rows = (namers: readonly MetricNamer[], by: Map<string, string[]>) =>
      namers.map((n) => ({
        rule: n.rule.path,
        seriesQuery: n.rule.seriesQuery,
        metricsQuery: n.rule.metricsQuery,
        metrics: by.get(n.rule.path) ?? [],
      }));
    return {
      config: this.#o.configPath,
      refused: this.#refusedError,
      discovery: this.#lastDiscovery === null
        ? null
        : { at: new Date(this.#lastDiscovery.at).toISOString(), error: this.#lastDiscovery.error },
      rules: rows(this.#loaded.custom, custom),
      externalRules: rows(this.#loaded.external, external),
      resourceRules: this.#loaded.resource !== null,
    };
  }

  /**
   * What `plan` and the admission webhook plan an HPA metric with: the rules in use and what
   * the last discovery found (no query is sent).
   */
  planContext(): AdapterPlanContext {
    return {
      custom: this.#loaded.custom,
      external: this.#loaded.external,
      discovered: { custom: this.#discovered.custom, external: this.#discovered.external },
      mapper: this.#mapper,
      // a series may appear later: found on its first read
      unknownAsCandidates: true,
    };
  }

  /** Run a discovery of every rule now (the relist does it on its schedule). */
  relist(): Promise<void> {
    return this.#discover(null);
  }

  /** Check the file for a change now (the watch does it on its schedule). */
  async reloadConfig(): Promise<void> {
    let text: string;
    try {
      text = await this.#o.readConfig();
      this.#unreadable = false;
    } catch (e) {
      if (!this.#unreadable) {
        this.#o.logger.warn("cannot read prometheus-adapter config; the last good one is kept", {
          path: this.#o.configPath,
          error: errorText(e),
        });
      }
      this.#unreadable = true;
      return;
    }
    if (text === this.#loaded.text || text === this.#refused) return;
    let loaded: Loaded;
    try {
      loaded = { text, ...loadPrometheusAdapterConfig(this.#o.configPath, text, this.#mapper) };
    } catch (e) {
      this.#refused = text;
      this.#refusedError = errorText(e);
      this.#o.logger.error(`${errorText(e)}; the last good config is kept`, {
        path: this.#o.configPath,
      });
      return;
    }
    this.#refused = null;
    this.#refusedError = null;
    this.#loaded = loaded;
    this.#o.logger.info("prometheus-adapter config loaded", {
      path: this.#o.configPath,
      rules: loaded.config.rules.length,
      externalRules: loaded.config.externalRules.length,
      resourceRules: loaded.resource !== null,
    });
    await this.#discover(null);
  }

  custom(read: AdapterCustomRead): AdapterResult<CustomItem> {
    const gr = splitGroupResource(read.groupResource);
    if (this.#discovered.custom.find(gr, read.metricName, read.namespaced) !== undefined) {
      return this.#customRead(read, gr);
    }
    const namers = this.#loaded.custom.filter((n) => couldNameMetric(n.rule, read.metricName));
    const discovery = this.#discoverFor("custom", read.metricName, namers);
    if (discovery === null) return undefined;
    return discovery.then(() => {
      if (this.#discovered.custom.find(gr, read.metricName, read.namespaced) === undefined) {
        return undefined;
      }
      return this.#customRead(read, gr);
    });
  }

  external(read: AdapterExternalRead): AdapterResult<ExternalItem> {
    if (this.#discovered.external.find(read.metricName) !== undefined) {
      return this.#externalRead(read);
    }
    const namers = this.#loaded.external.filter((n) => couldNameMetric(n.rule, read.metricName));
    const discovery = this.#discoverFor("external", read.metricName, namers);
    if (discovery === null) return undefined;
    return discovery.then(() =>
      this.#discovered.external.find(read.metricName) === undefined
        ? undefined
        : this.#externalRead(read)
    );
  }

  resourceMetricsServed(): boolean {
    return this.#loaded.resource !== null;
  }

  podMetrics(read: PodMetricsRead): AdapterResult<PodUsage> {
    if (this.#loaded.resource === null) return undefined;
    const key = `resource\u0000pods\u0000${read.namespace}`;
    const collect = async (): Promise<CollectOutcome<PodUsage>> => {
      const reader = this.#loaded.resource;
      if (reader === null) return { gone: true };
      const names = read.names();
      const answer = await this.#collectResource(
        names,
        (ns) => renderPodMetricsQueries(reader, read.namespace, ns),
        (vectors) =>
          podMetricsFromVectors(
            reader,
            names.map((name) => ({ namespace: read.namespace, name })),
            new Map([[read.namespace, vectors]]),
          ),
        `pods in namespace ${read.namespace}`,
      );
      return { answer, names: new Set(names) };
    };
    return this.#read(key, collect, (entry) => this.#resourceServed(entry, read.wanted));
  }

  nodeMetrics(read: NodeMetricsRead): AdapterResult<NodeUsage> {
    if (this.#loaded.resource === null) return undefined;
    const collect = async (): Promise<CollectOutcome<NodeUsage>> => {
      const reader = this.#loaded.resource;
      if (reader === null) return { gone: true };
      const names = read.names();
      const answer = await this.#collectResource(
        names,
        (ns) => renderNodeMetricsQueries(reader, ns),
        (vectors) => nodeMetricsFromVectors(reader, names, vectors),
        "nodes",
      );
      return { answer, names: new Set(names) };
    };
    return this.#read(
      "resource\u0000nodes",
      collect,
      (entry) => this.#resourceServed(entry, read.wanted),
    );
  }

  /** A resource entry's answer, when fresh and its collection asked for every name wanted. */
  #resourceServed<T>(entry: ReadEntry<T>, wanted: readonly string[]): AdapterAnswer<T> | null {
    const answer = entry.answer;
    if (answer === null || this.#expired(entry)) return null;
    if ("items" in answer && !wanted.every((n) => entry.names.has(n))) return null;
    return answer;
  }

  /**
   * One collection of resource usage: the cpu and memory queries of `names` (split when too
   * long), run, and mapped by `usage`; a query that cannot be rendered or run is an
   * `internalError` (the read leaves the objects out, as upstream does).
   */
  async #collectResource<T>(
    names: readonly string[],
    render: (names: readonly string[]) => { queries: ResourceQueries } | { error: string },
    usage: (vectors: { cpu: ResourceSample[]; memory: ResourceSample[] }) => T[],
    what: string,
  ): Promise<AdapterAnswer<T>> {
    if (names.length === 0) return { items: [] };
    const queriesOf = (ns: readonly string[]): ResourceQueries => {
      const r = render(ns);
      if ("error" in r) throw new Error(r.error);
      return r.queries;
    };
    let chunks: ResourceQueries[];
    try {
      chunks = splitNamesForQuery(names, (ns) => {
        const q = queriesOf(ns);
        return q.cpu.length >= q.memory.length ? q.cpu : q.memory;
      }, this.#o.maxQueryLength).map((c) => queriesOf(c.names));
    } catch (e) {
      this.#o.logger.warn("cannot render prometheus-adapter resource query", {
        objects: what,
        error: errorText(e),
      });
      return { internalError: `unable to fetch metrics for ${what}: ${errorText(e)}` };
    }
    const time = this.#o.now();
    const cpu: ResourceSample[] = [];
    const memory: ResourceSample[] = [];
    try {
      const answers = await Promise.all(
        chunks.map((q) => Promise.all([this.#vector(q.cpu, time), this.#vector(q.memory, time)])),
      );
      for (const [c, m] of answers) {
        cpu.push(...c);
        memory.push(...m);
      }
    } catch (e) {
      return this.#queryFailed(`resourceRules (${what})`, e);
    }
    return { items: usage({ cpu, memory }) };
  }

  // --- discovery ---------------------------------------------------------------------------

  /**
   * An on-demand discovery for an unknown name: the one in flight, else a new one of `namers`'
   * queries unless this name had one in the last `discoveryMinIntervalSeconds`; null when
   * there is nothing to do.
   */
  #discoverFor(kind: string, metric: string, namers: MetricNamer[]): Promise<void> | null {
    if (namers.length === 0) return null;
    if (this.#discovering !== null) return this.#discovering;
    const key = `${kind}\u0000${metric}`;
    const now = this.#o.now();
    const min = (this.#o.discoveryMinIntervalSeconds ??
      PROMETHEUS_ADAPTER_DEFAULTS.discoveryMinIntervalSeconds) * 1000;
    const last = this.#asked.get(key);
    if (last !== undefined && now - last < min) return null;
    if (this.#asked.size >= 4096) this.#asked.clear();
    this.#asked.set(key, now);
    return this.#discover(distinctSeriesQueries(namers));
  }

  /** Ask the series queries (`null`: every rule's) and discover the metrics again. */
  #discover(queries: string[] | null): Promise<void> {
    const run = async (): Promise<void> => {
      const loaded = this.#loaded;
      const all = [
        ...new Set([
          ...distinctSeriesQueries(loaded.custom),
          ...distinctSeriesQueries(loaded.external),
        ]),
      ];
      const asked = queries ?? all;
      const start = this.#o.now() - this.#o.maxAgeSeconds * 1000;
      // each answer reduced to its shapes as it comes (seriesShapes): the label sets parsed
      // are garbage at once, and only the shapes are kept until the next relist
      const answers = await Promise.allSettled(asked.map((q) =>
        this.#o.client.series(q, {
          fetch: this.#o.fetch,
          signal: this.#abort.signal,
          start,
          timeoutSeconds: this.#o.queryTimeoutSeconds,
          maxBytes: this.#o.maxBytes,
        }).then(seriesShapes)
      ));
      if (this.#stopped) return;
      const failed = answers.findIndex((a) => a.status === "rejected");
      if (failed >= 0) {
        // as upstream: one failed query fails the update, the metrics found before stay
        const error = errorText((answers[failed] as PromiseRejectedResult).reason);
        this.#o.logger.error("unable to update list of all metrics", {
          query: asked[failed],
          error,
        });
        if (queries === null) {
          this.#lastDiscovery = {
            at: this.#o.now(),
            error: `series query ${JSON.stringify(asked[failed])}: ${error}`,
          };
        }
        return;
      }
      if (queries === null) this.#lastDiscovery = { at: this.#o.now(), error: null };
      if (queries === null) this.#series = new Map();
      asked.forEach((q, i) => {
        this.#series.set(q, (answers[i] as PromiseFulfilledResult<SeriesLabels[]>).value);
      });
      this.#rebuild(loaded);
    };
    const p = run().catch((e) => {
      this.#o.logger.error("prometheus-adapter discovery failed", { error: errorText(e) });
    }).finally(() => {
      if (this.#discovering === p) this.#discovering = null;
    });
    this.#discovering = p;
    return p;
  }

  /** The registries from the series known (rules whose query has no answer yet serve nothing). */
  #rebuild(loaded: Loaded): void {
    const known = (n: MetricNamer): boolean => this.#series.has(n.rule.seriesQuery);
    const custom = discoverCustomMetrics(
      loaded.custom.filter(known),
      this.#series,
      this.#mapper,
    );
    const external = discoverExternalMetrics(loaded.external.filter(known), this.#series);
    const served = servedOf(custom, external);
    const text = JSON.stringify(served);
    this.#discovered = { custom, external, served };
    if (text !== this.#servedText) {
      this.#servedText = text;
      this.#version++;
      this.#o.logger.info("prometheus-adapter metrics discovered", {
        custom: custom.metrics.length,
        external: external.metrics.length,
      });
    }
  }

  #scheduleRelist(): void {
    if (this.#stopped) return;
    this.#relistTimer = this.#setTimer(() => {
      this.#relistTimer = null;
      this.#discover(null).finally(() => this.#scheduleRelist());
    }, this.#o.relistIntervalSeconds * 1000);
  }

  #scheduleKinds(kinds: KindsMapper, discover: () => Promise<readonly KindInfo[]>): void {
    if (this.#stopped) return;
    this.#kindsTimer = this.#setTimer(() => {
      this.#kindsTimer = null;
      kinds.refresh(discover, this.#o.logger).finally(() => this.#scheduleKinds(kinds, discover));
    }, (this.#o.kindsRefreshSeconds ?? 600) * 1000);
  }

  #schedulePoll(): void {
    if (this.#stopped) return;
    this.#pollTimer = this.#setTimer(() => {
      this.#pollTimer = null;
      this.reloadConfig().finally(() => this.#schedulePoll());
    }, this.#o.configPollSeconds * 1000);
  }

  // --- reads -------------------------------------------------------------------------------

  #customRead(read: AdapterCustomRead, gr: GroupResource): AdapterResult<CustomItem> {
    const names = read.names();
    if (names === null) return this.#listedRead(read, gr);
    if (names.length === 0) {
      return {
        notFound: read.labelSelectorText === ""
          ? `no ${read.groupResource} in namespace ${read.namespace}`
          : `no ${read.groupResource} match labelSelector "${read.labelSelectorText}"`,
      };
    }
    const key = [
      "custom",
      read.namespace,
      read.groupResource,
      read.namespaced ? 1 : 0,
      read.name === "*" ? `*${read.labelSelectorText}` : read.name,
      read.metricName,
      selectorKey(read.metricSelector),
    ].join("\u0000");
    const collect = async (): Promise<CollectOutcome<CustomItem>> => {
      const found = this.#discovered.custom.find(gr, read.metricName, read.namespaced);
      if (found === undefined) return { gone: true };
      const asked = read.names() ?? [];
      const collected = new Set(asked);
      const answer = await this.#collectCustom(read, gr, asked, found);
      return { answer, names: collected };
    };
    const served = (entry: ReadEntry<CustomItem>): AdapterAnswer<CustomItem> | null => {
      const answer = entry.answer;
      if (answer === null || this.#expired(entry)) return null;
      if (!("items" in answer)) return answer;
      // the pods selected now, when the last collection asked for each of them
      if (!names.every((n) => entry.names.has(n))) return null;
      const byName = new Map(answer.items.map((i) => [i.objectName, i]));
      const items = names.map((n) => byName.get(n)).filter((i) => i !== undefined);
      if (read.name !== "*" && items.length === 0) {
        return { notFound: "Prometheus returned no sample for it" };
      }
      return { items };
    };
    return this.#read(key, collect, served);
  }

  /**
   * A `*` read of objects other than pods: their names listed from kube-apiserver with the
   * read's labelSelector, at each read, as upstream's ListObjectNames does (a failed list is an
   * internal error; upstream: "unable to list matching resources"), then read as those names.
   */
  #listedRead(read: AdapterCustomRead, gr: GroupResource): AdapterResult<CustomItem> {
    const found = this.#discovered.custom.find(gr, read.metricName, read.namespaced);
    const kind = found === undefined ? null : this.#mapper.kindOf(found.resource);
    const list = this.#o.listNames;
    if (found === undefined || kind === null || kind.version === undefined || !list) {
      return { notFound: `${read.groupResource} cannot be listed here` };
    }
    return list({
      group: found.resource.group,
      version: kind.version,
      resource: found.resource.resource,
      namespace: read.namespaced ? read.namespace : null,
      labelSelector: read.labelSelectorText,
    }).then(
      (names) => this.#customRead({ ...read, names: () => names }, gr),
      (e): AdapterAnswer<CustomItem> => {
        this.#o.logger.error("unable to list matching resource names", {
          resource: read.groupResource,
          error: errorText(e),
        });
        return { internalError: "unable to list matching resources" };
      },
    );
  }

  /** One collection of a custom read: the query (split when too long), run, mapped to names. */
  async #collectCustom(
    read: AdapterCustomRead,
    gr: GroupResource,
    names: readonly string[],
    found: NonNullable<ReturnType<CustomMetricRegistry["find"]>>,
  ): Promise<AdapterAnswer<CustomItem>> {
    if (names.length === 0) return { items: [] };
    const registry = this.#discovered.custom;
    let failure: string | null = null;
    const render = (ns: readonly string[]): string => {
      const q = registry.queryFor(gr, read.metricName, read.namespaced, {
        namespace: read.namespace,
        selector: read.metricSelector,
        names: ns,
      });
      if (q === undefined) throw new Error("no rule serves it");
      if ("error" in q) {
        failure = q.error;
        throw new Error(q.error);
      }
      return q.query;
    };
    let chunks;
    try {
      chunks = splitNamesForQuery(names, render, this.#o.maxQueryLength);
    } catch (e) {
      // upstream answers a query it cannot render as an unknown metric (and logs why)
      this.#o.logger.warn("cannot render prometheus-adapter query", {
        rule: found.namer.rule.path,
        error: failure ?? errorText(e),
      });
      return { notFound: `cannot render the query of ${found.namer.rule.path}: ${errorText(e)}` };
    }
    const label = found.namer.converter.labelForResource(found.resource);
    const time = this.#o.now();
    let vectors;
    try {
      vectors = await Promise.all(chunks.map((c) => this.#vector(c.query, time)));
    } catch (e) {
      return this.#queryFailed(found.namer.rule.path, e);
    }
    const values = new Map<string, number>();
    for (const v of vectors) for (const [k, x] of valuesByName(v, label)) values.set(k, x);
    const kind = describedKind(this.#mapper.kindOf(found.resource));
    const items = customItems(names, values).map((nv): CustomItem => ({
      namespace: read.namespace,
      groupResource: qualified(found.resource),
      objectName: nv.name,
      describedKind: kind,
      metricName: read.metricName,
      metricSelectorObject: null,
      value: nv.value,
      quantity: nv.quantity,
      timestamp: time,
    }));
    return { items };
  }

  #externalRead(read: AdapterExternalRead): AdapterResult<ExternalItem> {
    const key = ["external", read.namespace, read.metricName, selectorKey(read.selector)].join(
      "\u0000",
    );
    const collect = async (): Promise<CollectOutcome<ExternalItem>> => {
      const q = this.#discovered.external.queryFor(read.metricName, {
        namespace: read.namespace,
        selector: read.selector,
      });
      if (q === undefined) return { gone: true };
      const none = new Set<string>();
      if ("error" in q) {
        this.#o.logger.warn("cannot render prometheus-adapter query", {
          metric: read.metricName,
          error: q.error,
        });
        return { answer: { internalError: `unable to fetch metrics: ${q.error}` }, names: none };
      }
      const rule = this.#discovered.external.find(read.metricName)!.namer.rule.path;
      try {
        const result = await this.#o.client.query(q.query, this.#queryOptions(this.#o.now()));
        const items = externalItems(result).map((v): ExternalItem => ({
          metricName: read.metricName,
          metricLabels: v.labels ?? {},
          ...(v.labels === null ? { nullLabels: true } : {}),
          value: v.value,
          quantity: v.quantity,
          timestamp: v.timestamp,
        }));
        return { answer: { items }, names: none };
      } catch (e) {
        return { answer: this.#queryFailed(rule, e), names: none };
      }
    };
    const served = (entry: ReadEntry<ExternalItem>): AdapterAnswer<ExternalItem> | null =>
      entry.answer === null || this.#expired(entry) ? null : entry.answer;
    return this.#read(key, collect, served);
  }

  #queryOptions(time: number) {
    return {
      fetch: this.#o.fetch,
      signal: this.#abort.signal,
      time,
      timeoutSeconds: this.#o.queryTimeoutSeconds,
      maxBytes: this.#o.maxBytes,
    };
  }

  async #vector(query: string, time: number) {
    const result = await this.#o.client.query(query, this.#queryOptions(time));
    if (result.resultType !== "vector") {
      throw new NotAVectorError(`expected a vector, got a ${result.resultType}`);
    }
    return result.series;
  }

  #queryFailed<T>(rule: string, e: unknown): AdapterAnswer<T> {
    this.#o.logger.warn("prometheus-adapter query failed", { rule, error: errorText(e) });
    return { internalError: `unable to fetch metrics from Prometheus: ${errorText(e)}` };
  }

  #expired(entry: { collectedAt: number }): boolean {
    return this.#o.now() - entry.collectedAt > this.#o.ttlSeconds * 1000;
  }

  /**
   * The cached answer of a read, or its first collection (shared by every read of the key until
   * it is done), after which it is collected every collection interval while it is read.
   */
  #read<T>(
    key: string,
    collect: () => Promise<CollectOutcome<T>>,
    served: (entry: ReadEntry<T>) => AdapterAnswer<T> | null,
  ): AdapterResult<T> {
    const now = this.#o.now();
    let entry = this.#reads.get(key) as ReadEntry<T> | undefined;
    if (entry !== undefined) {
      entry.lastRead = now;
      entry.collect = collect;
      const hit = served(entry);
      if (hit !== null) return hit;
      if (entry.inflight !== null) return entry.inflight.then(() => this.#after(key, served));
    } else {
      entry = {
        key,
        answer: null,
        collectedAt: 0,
        names: new Set(),
        lastRead: now,
        inflight: null,
        timer: null,
        collect,
      };
      (this.#reads as Map<string, ReadEntry<T>>).set(key, entry);
    }
    return this.#collect(entry).then(() => this.#after(key, served));
  }

  /** The answer once a collection is done (undefined when the metric is gone). */
  #after<T>(
    key: string,
    served: (entry: ReadEntry<T>) => AdapterAnswer<T> | null,
  ): AdapterAnswer<T> | undefined {
    const entry = this.#reads.get(key) as ReadEntry<T> | undefined;
    if (entry === undefined || entry.answer === null) return undefined;
    // fresh from the collection: served even if the pods changed meanwhile
    return served(entry) ?? entry.answer;
  }

  #collect<T>(entry: ReadEntry<T>): Promise<AdapterAnswer<T> | undefined> {
    if (entry.inflight !== null) return entry.inflight;
    if (entry.timer !== null) {
      this.#clearTimer(entry.timer);
      entry.timer = null;
    }
    const p = entry.collect().then((outcome) => {
      entry.inflight = null;
      if (this.#stopped) return undefined;
      if ("gone" in outcome) {
        this.#reads.delete(entry.key);
        return undefined;
      }
      const keep = entry.answer !== null && "items" in entry.answer &&
        !("items" in outcome.answer) && !this.#expired(entry);
      if (!keep) {
        entry.answer = outcome.answer;
        entry.names = outcome.names;
        entry.collectedAt = this.#o.now();
      }
      this.#schedule(entry);
      return entry.answer ?? undefined;
    }, (e) => {
      entry.inflight = null;
      this.#o.logger.error("prometheus-adapter collection failed", { error: errorText(e) });
      this.#reads.delete(entry.key);
      return undefined;
    });
    entry.inflight = p;
    return p;
  }

  #schedule<T>(entry: ReadEntry<T>): void {
    if (this.#stopped) return;
    entry.timer = this.#setTimer(() => {
      entry.timer = null;
      if (this.#reads.get(entry.key) !== (entry as unknown)) return;
      // nobody read it for a TTL: stop collecting it
      if (this.#o.now() - entry.lastRead > this.#o.ttlSeconds * 1000) {
        this.#reads.delete(entry.key);
        return;
      }
      this.#collect(entry);
    }, this.#o.collectionIntervalSeconds * 1000);
  }
}
