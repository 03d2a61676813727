/**
 * The replica guard (issue 22): estafette-k8s-hpa-scaler's annotations, served by this adapter.
 * For every HPA with `estafette.io/hpa-scaler: "true"` it raises `spec.minReplicas` to what a
 * Prometheus query asks for and caps each scale-down at a share of the current pods, exactly as
 * upstream computes it (core/estafette/guard.ts decides; this file reads the cluster view, asks
 * Prometheus and writes).
 *
 * - A leader-elected writer: only the leader runs passes; every 90 s (jittered by up to 25%).
 * - HPAs come from the informer (no LIST per pass); ReplicaSets are watched only once an HPA
 *   turns the deployment check on.
 * - Queries run with bounded concurrency, each with a timeout and a size cap: one slow
 *   Prometheus never holds up the other HPAs.
 * - Writes are JSON merge patches of `spec.minReplicas`, `spec.maxReplicas` when raised and the
 *   state annotation; nothing is written when nothing changes or on any error. In file mode
 *   (`write: false`) the decisions are logged, not written.
 * - HPAs with a controller owner (another writer owns their minReplicas) are skipped.
 * - Events: a Normal one on each change, a Warning one when an HPA cannot be guarded (once per
 *   reason); own metrics under upstream's names.
 */
import {
  type ClusterView,
  type ClusterWriter,
  controllerRef,
  type KubeObject,
} from "../cluster/types.ts";
import { errorText } from "../engine/error_text.ts";
import { hpaKeyOf } from "../engine/hpa_key.ts";
import { PrometheusClient } from "../collectors/prometheus_client.ts";
import {
  decideGuard,
  deploymentInProgress,
  ESTAFETTE_ENABLED_ANNOTATION,
  guardChangeMessage,
  type GuardConfig,
  GuardError,
  guardPatch,
  guardRunsQuery,
  guardServerUrlProblem,
  parseGuardConfig,
  prometheusGuardValue,
  scopeGuardQuery,
} from "../core/estafette/guard.ts";
import type { Logger } from "../engine/logger.ts";
import { silentLogger } from "../engine/logger.ts";
import type { PromQLScoper } from "../core/kube_metrics_adapter/collector_config.ts";
import type { EndpointPolicy } from "../core/endpoint_policy.ts";

/** Normal event reason: the guard changed an HPA's minReplicas. */
export const GUARD_CHANGED_REASON = "ReplicaGuardChanged";
/** Warning event reason: the guard cannot decide for an HPA (query, config, owner). */
export const GUARD_FAILED_REASON = "ReplicaGuardFailed";

/** What a pass did with one HPA, as upstream counts it (`estafette_hpa_scaler_totals`). */
export type GuardStatus = "succeeded" | "failed" | "skipped";

/** Where the guard's own metrics go (upstream's names; see api/own_metrics.ts). */
export interface GuardMetricsSink {
  /** One HPA processed by a pass (disabled HPAs count as skipped, as upstream). */
  processed(namespace: string, status: GuardStatus): void;
  /** Why an HPA was not decided (a fixed reason: `empty-result`, `request`, `owned`...). */
  failed(namespace: string, reason: string): void;
}

/** The gauges of one guarded HPA after its last decision. */
export interface GuardGauge {
  namespace: string;
  hpa: string;
  /** The computed target (`estafette_hpa_scaler_min_replicas`). */
  minReplicas: number;
  /** `status.currentReplicas` (`estafette_hpa_scaler_actual_replicas`). */
  actualReplicas: number;
  /** The query value, 0 without a query (`estafette_hpa_scaler_request_rate`). */
  requestRate: number;
}

/** The guard's last decision for one HPA, for the status page and `explain`. */
export interface GuardLastDecision {
  /** When it was made, ms since the epoch. */
  at: number;
  /** The query run, null when none runs or it could not decide. */
  query: string | null;
  queryValue: number | null;
  /** The minReplicas computed, null when it could not decide. */
  minReplicas: number | null;
  /** The scale-down cap (see `GuardDecision.maxScaleDown`), or null. */
  maxScaleDown: number | null;
  scaleDownMinimum: number | null;
  /** `guardChangeMessage` of the decision, null when it could not decide. */
  message: string | null;
  /** The decision changes the HPA. */
  changed: boolean;
  /** The change was written (false in file mode: logged only). */
  written: boolean;
  /** Why it did nothing (the failure), else null. */
  error: string | null;
}

/** The defaults of {@linkcode ReplicaGuardOptions}. */
export const REPLICA_GUARD_DEFAULTS: Readonly<{
  intervalSeconds: number;
  jitter: number;
  maxConcurrentQueries: number;
  queryTimeoutSeconds: number;
  maxResponseBytes: number;
}> = {
  intervalSeconds: 90,
  jitter: 0.25,
  maxConcurrentQueries: 8,
  queryTimeoutSeconds: 10,
  maxResponseBytes: 10 * 1024 * 1024,
};

/** Options of {@linkcode ReplicaGuard}; the defaults are {@linkcode REPLICA_GUARD_DEFAULTS}. */
export interface ReplicaGuardOptions {
  cluster: ClusterView;
  /** Patches and events go here; without it nothing is written. */
  writer?: ClusterWriter;
  /** Write the decisions (cluster mode); false logs them instead (file mode). */
  write: boolean;
  /** The lowest minReplicas the guard sets (`--estafette-minimum-replicas-lower-bound`). */
  lowerBound: number;
  /**
   * The Prometheus of HPAs without the per-HPA URL annotation, with its token file; null when
   * none is configured (such HPAs fail with a clear error).
   */
  prometheus: { url: string; tokenFile: string | null } | null;
  /** HPA annotations may name link-local Prometheus addresses (default false). */
  allowLinkLocalTargets?: boolean;
  /** Where the server URL annotation may point; undefined allows every URL. */
  endpointPolicy?: EndpointPolicy;
  /**
   * Scopes the query annotation to the HPA's namespace (`--prometheus-enforce-namespace-label`);
   * a query it refuses is a failure of that HPA (Warning event), and nothing is asked.
   */
  scopePromQL?: PromQLScoper;
  intervalSeconds?: number;
  maxConcurrentQueries?: number;
  queryTimeoutSeconds?: number;
  maxResponseBytes?: number;
  fetch?: typeof fetch;
  now?: () => number;
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (handle: unknown) => void;
  /** In [0, 1): the jitter of the pass interval. */
  random?: () => number;
  logger?: Logger;
  isLeader?: () => boolean;
  metrics?: GuardMetricsSink;
}

/** Why one HPA was not decided: a fixed reason for metrics and the message for people. */
class Failure extends Error {
  constructor(readonly reason: string, message: string) {
    super(message);
  }
}

/** Runs the replica guard's passes; see the module documentation. */
export class ReplicaGuard {
  readonly #cluster: ClusterView;
  readonly #writer?: ClusterWriter;
  readonly #write: boolean;
  readonly #lowerBound: number;
  readonly #prometheus: ReplicaGuardOptions["prometheus"];
  readonly #allowLinkLocal: boolean;
  readonly #endpointPolicy?: EndpointPolicy;
  readonly #scopePromQL?: PromQLScoper;
  readonly #intervalMs: number;
  readonly #maxQueries: number;
  readonly #timeoutSeconds: number;
  readonly #maxBytes: number;
  readonly #fetch: typeof fetch;
  readonly #now: () => number;
  readonly #setTimer: (fn: () => void, ms: number) => unknown;
  readonly #clearTimer: (handle: unknown) => void;
  readonly #random: () => number;
  readonly #log: Logger;
  readonly #isLeader: () => boolean;
  readonly #metrics?: GuardMetricsSink;
  /** One client per server URL (a per-HPA URL gets one without a token). */
  readonly #clients = new Map<string, PrometheusClient>();
  /** The last Warning message per HPA, to write it once per change. */
  readonly #warned = new Map<string, string>();
  /** The gauges per HPA key, after its last decision. */
  readonly #gauges = new Map<string, GuardGauge>();
  /** The last decision per guarded HPA key (pruned with the gauges). */
  readonly #decisions = new Map<string, GuardLastDecision>();
  #replicaSetsWatched = false;
  #timer: unknown = null;
  #running: Promise<void> | null = null;
  #stopped = false;

  /** Creates a guard; nothing happens until {@linkcode ReplicaGuard.start}. */
  constructor(options: ReplicaGuardOptions) {
    const d = REPLICA_GUARD_DEFAULTS;
    this.#cluster = options.cluster;
    this.#writer = options.writer;
    this.#write = options.write;
    this.#lowerBound = options.lowerBound;
    this.#prometheus = options.prometheus;
    this.#allowLinkLocal = options.allowLinkLocalTargets === true;
    this.#endpointPolicy = options.endpointPolicy;
    this.#scopePromQL = options.scopePromQL;
    this.#intervalMs = (options.intervalSeconds ?? d.intervalSeconds) * 1000;
    this.#maxQueries = Math.max(1, options.maxConcurrentQueries ?? d.maxConcurrentQueries);
    this.#timeoutSeconds = options.queryTimeoutSeconds ?? d.queryTimeoutSeconds;
    this.#maxBytes = options.maxResponseBytes ?? d.maxResponseBytes;
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#now = options.now ?? (() => Date.now());
    this.#setTimer = options.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
    this.#clearTimer = options.clearTimer ??
      ((h) => clearTimeout(h as ReturnType<typeof setTimeout>));
    this.#random = options.random ?? Math.random;
    this.#log = options.logger ?? silentLogger();
    this.#isLeader = options.isLeader ?? (() => true);
    this.#metrics = options.metrics;
    if (!(this.#intervalMs > 0)) {
      throw new RangeError(`invalid replica guard interval ${this.#intervalMs / 1000}s`);
    }
  }

  /** Watch HPAs, run a pass, then one every (jittered) interval. */
  async start(): Promise<void> {
    await this.#cluster.ensure("HorizontalPodAutoscaler");
    if (this.#stopped) return;
    const loop = (): void => {
      if (this.#stopped) return;
      // upstream sleeps 90 s - 22 + rand(44): up to a quarter either way
      const ms = this.#intervalMs * (1 + REPLICA_GUARD_DEFAULTS.jitter * (2 * this.#random() - 1));
      this.#timer = this.#setTimer(loop, Math.max(1, Math.round(ms)));
      void this.runOnce();
    };
    loop();
  }

  /** Stop the timer; waits for a pass in flight. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) this.#clearTimer(this.#timer);
    this.#timer = null;
    await this.#running?.catch(() => {});
  }

  /** The gauges of every HPA decided by its last pass (own metrics). */
  gauges(): GuardGauge[] {
    return [...this.#gauges.values()];
  }

  /** A copy of the last decision for an HPA the guard is on for, or null (none yet, or off). */
  lastDecision(namespace: string, name: string): GuardLastDecision | null {
    const d = this.#decisions.get(`${namespace}/${name}`);
    return d ? { ...d } : null;
  }

  /** One pass over every HPA; passes never overlap (a call during one waits for it). */
  runOnce(): Promise<void> {
    if (this.#running) return this.#running;
    this.#running = this.#pass().catch((e) => {
      this.#log.error("replica guard pass failed", { error: errorText(e) });
    }).finally(() => {
      this.#running = null;
    });
    return this.#running;
  }

  async #pass(): Promise<void> {
    if (this.#stopped || !this.#isLeader()) return;
    const hpas = this.#cluster.list("HorizontalPodAutoscaler");
    const seen = new Set<string>();
    const queue: KubeObject[] = [];
    for (const hpa of hpas) {
      const key = hpaKeyOf(hpa);
      seen.add(key);
      if (hpa.metadata.annotations?.[ESTAFETTE_ENABLED_ANNOTATION] !== "true") {
        this.#metrics?.processed(hpa.metadata.namespace ?? "default", "skipped");
        this.#gauges.delete(key);
        this.#decisions.delete(key);
        this.#warned.delete(key);
        continue;
      }
      queue.push(hpa);
    }
    for (const key of [...this.#gauges.keys()]) if (!seen.has(key)) this.#gauges.delete(key);
    for (const key of [...this.#decisions.keys()]) if (!seen.has(key)) this.#decisions.delete(key);
    for (const key of [...this.#warned.keys()]) if (!seen.has(key)) this.#warned.delete(key);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < queue.length && !this.#stopped) {
        const hpa = queue[next++];
        await this.#guard(hpa);
      }
    };
    await Promise.all(
      Array.from({ length: Math.min(this.#maxQueries, queue.length) }, () => worker()),
    );
  }

  /** Decide for one HPA and write (or log) the change; never throws. */
  async #guard(hpa: KubeObject): Promise<void> {
    const key = hpaKeyOf(hpa);
    const namespace = hpa.metadata.namespace ?? "default";
    let status: GuardStatus = "skipped";
    let last: GuardLastDecision | null = null;
    try {
      const owner = controllerRef(hpa);
      if (owner) {
        throw new Failure(
          "owned",
          `HPA ${key} is controlled by ${owner.kind ?? "?"} ${
            owner.name ?? "?"
          }, which owns its minReplicas: the replica guard leaves it alone`,
        );
      }
      const parsedConfig = parseGuardConfig(hpa.metadata.annotations, {
        defaultPrometheusUrl: this.#prometheus?.url ?? "",
      });
      const { warnings } = parsedConfig;
      // the query reads only the HPA's namespace (--prometheus-enforce-namespace-label)
      const scoped = scopeGuardQuery(parsedConfig.config, {
        namespace,
        name: hpa.metadata.name,
      }, this.#scopePromQL);
      if (scoped.error !== undefined) throw new Failure("query-not-allowed", scoped.error);
      const config = scoped.config;
      const refused = guardRunsQuery(config)
        ? guardServerUrlProblem(config, {
          hpa: { namespace, name: hpa.metadata.name },
          policy: this.#endpointPolicy,
        })
        : undefined;
      if (refused !== undefined) throw new Failure("endpoint-not-allowed", refused);
      const queryValue = guardRunsQuery(config) ? await this.#query(config) : undefined;
      const inProgress = config.deploymentChecking ? await this.#inProgress(hpa) : false;
      const decision = decideGuard({
        config,
        queryValue,
        currentReplicas: intOr(hpa.status?.currentReplicas, 0),
        minReplicas: intOr(hpa.spec?.minReplicas, 1),
        maxReplicas: intOr(hpa.spec?.maxReplicas, 1),
        lowerBound: this.#lowerBound,
        deploymentInProgress: inProgress,
        now: this.#now(),
      });
      this.#gauges.set(key, {
        namespace,
        hpa: hpa.metadata.name,
        minReplicas: decision.target,
        actualReplicas: decision.currentReplicas,
        requestRate: decision.requestRate,
      });
      // the configuration's warnings (a ratio out of range...) are said once, as a Warning
      this.#warn(hpa, warnings.length > 0 ? `replica guard: ${warnings.join("; ")}` : null);
      const message = guardChangeMessage(decision, config);
      last = {
        at: this.#now(),
        query: decision.queryRan ? config.prometheusQuery : null,
        queryValue: decision.queryRan ? decision.requestRate : null,
        minReplicas: decision.target,
        maxScaleDown: decision.maxScaleDown,
        scaleDownMinimum: decision.scaleDownMinimum,
        message,
        changed: decision.write !== null,
        written: false,
        error: null,
      };
      this.#decisions.set(key, last);
      if (decision.write === null) return;
      if (!this.#write || !this.#writer) {
        this.#log.info("replica guard decision (not written: file mode)", { hpa: key, message });
        return;
      }
      try {
        await this.#writer.patch(
          "HorizontalPodAutoscaler",
          namespace,
          hpa.metadata.name,
          guardPatch(decision.write),
        );
      } catch (e) {
        throw new Failure("patch", `cannot patch HPA ${key}: ${errorText(e)}`);
      }
      status = "succeeded";
      last.written = true;
      this.#log.info("replica guard changed minReplicas", { hpa: key, message });
      this.#writer.emitEvent("HorizontalPodAutoscaler", hpa, {
        type: "Normal",
        reason: GUARD_CHANGED_REASON,
        message,
      }).catch((e) => this.#log.error("failed to write event", { hpa: key, error: errorText(e) }));
    } catch (e) {
      status = "failed";
      this.#decisions.set(key, {
        ...(last ?? {
          query: null,
          queryValue: null,
          minReplicas: null,
          maxScaleDown: null,
          scaleDownMinimum: null,
          message: null,
          changed: false,
          written: false,
        }),
        at: this.#now(),
        error: errorText(e),
      });
      const reason = e instanceof Failure || e instanceof GuardError ? e.reason : "error";
      const message = `replica guard: ${errorText(e)}`;
      this.#metrics?.failed(namespace, reason);
      if (this.#warned.get(key) !== message) {
        this.#log.error("replica guard cannot decide", { hpa: key, error: errorText(e) });
      }
      this.#warn(hpa, message);
    } finally {
      this.#metrics?.processed(namespace, status);
    }
  }

  /** A Warning event on the HPA when `message` differs from the last one (null: none now). */
  #warn(hpa: KubeObject, message: string | null): void {
    const key = hpaKeyOf(hpa);
    if (message === null) {
      this.#warned.delete(key);
      return;
    }
    if (this.#warned.get(key) === message) return;
    this.#warned.set(key, message);
    if (!this.#writer || !this.#isLeader()) return;
    this.#writer.emitEvent("HorizontalPodAutoscaler", hpa, {
      type: "Warning",
      reason: GUARD_FAILED_REASON,
      message,
    }).catch((e) => this.#log.error("failed to write event", { hpa: key, error: errorText(e) }));
  }

  /** The query's value; throws a Failure or GuardError saying why there is none. */
  async #query(config: GuardConfig): Promise<number> {
    const url = config.prometheusServerUrl;
    if (url === "") {
      throw new Failure(
        "no-server",
        "no Prometheus to ask: set --estafette-prometheus-server-url (or PROMETHEUS_SERVER_URL, or --prometheus-server) or the estafette.io/hpa-scaler-prometheus-server-url annotation",
      );
    }
    const fromHpa = config.prometheusServerUrlSource === "annotation";
    const clientKey = `${fromHpa ? "hpa" : "flag"}|${url}`;
    let client = this.#clients.get(clientKey);
    if (!client) {
      try {
        client = new PrometheusClient(
          fromHpa
            ? { url, chosenByHpa: { allowLinkLocal: this.#allowLinkLocal } }
            : { url, tokenFile: this.#prometheus?.tokenFile ?? null },
        );
      } catch (e) {
        throw new Failure("invalid-server", errorText(e));
      }
      this.#clients.set(clientKey, client);
    }
    let body: string;
    try {
      body = await client.getInstantBody(config.prometheusQuery, {
        fetch: this.#fetch,
        signal: AbortSignal.timeout(this.#timeoutSeconds * 1000),
        timeoutSeconds: this.#timeoutSeconds,
        maxBytes: this.#maxBytes,
      });
    } catch (e) {
      throw new Failure(
        "request",
        `query ${JSON.stringify(config.prometheusQuery)}: ${errorText(e)}`,
      );
    }
    try {
      return prometheusGuardValue(body);
    } catch (e) {
      if (e instanceof GuardError) {
        throw new GuardError(
          e.reason,
          `query ${JSON.stringify(config.prometheusQuery)}: ${e.message}`,
        );
      }
      throw e;
    }
  }

  /** Whether a rollout of the HPA's workload is under way (D3: its namespace, its ReplicaSets). */
  async #inProgress(hpa: KubeObject): Promise<boolean> {
    if (!this.#replicaSetsWatched) {
      this.#replicaSetsWatched = true;
      await Promise.all([this.#cluster.ensure("ReplicaSet"), this.#cluster.ensure("Deployment")]);
    }
    const namespace = hpa.metadata.namespace ?? "default";
    const error = this.#cluster.kindError?.("ReplicaSet") ?? null;
    if (error !== null) throw new Failure("replicasets", `cannot list ReplicaSets: ${error}`);
    return deploymentInProgress({
      namespace,
      hpaLabels: hpa.metadata.labels,
      scaleTargetRef: hpa.spec?.scaleTargetRef ?? { kind: "", name: "" },
      replicaSets: this.#cluster.list("ReplicaSet", namespace),
      deployments: this.#cluster.list("Deployment", namespace),
    }).inProgress;
  }
}

function intOr(v: unknown, dflt: number): number {
  return typeof v === "number" && Number.isInteger(v) ? v : dflt;
}
