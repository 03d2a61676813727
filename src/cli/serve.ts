/**
 * `serve`: the adapter. Builds the cluster view (a cluster, or manifests in file mode), the
 * store, the engine and the API, serves HTTPS until stopped, and tears everything down in
 * reverse order. This file only wires; every part lives in its own folder.
 */
import { hostname as osHostname } from "node:os";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import type { AdmissionOptions } from "../api/admission.ts";
import { createApp } from "../api/app.ts";
import { createDelegatedAuth, type DelegatedAuthOptions } from "../api/auth.ts";
import { createAuthMiddleware } from "../api/auth_middleware.ts";
import { ensureSelfSignedCertificate, loadCertificateFiles } from "../api/certs.ts";
import type { KubeRequest } from "../api/kube_request.ts";
import { parseCertificateBundle } from "../api/pem.ts";
import {
  createAdapterMetrics,
  createAuthorizationMetrics,
  createDelegateMetrics,
  createGuardMetrics,
  createMetricsApp,
  createShardMetrics,
  type FallbackGauge,
} from "../api/own_metrics.ts";
import { delegationFromFlags } from "./delegate_options.ts";
import { FileClusterSource } from "../cluster/file_source.ts";
import type { KubeClusterSource } from "../cluster/kube_source.ts";
import { InMemoryLeaderElector, type LeaderElector } from "../cluster/leader.ts";
import type { ClusterView, ClusterWriter, KubeObject } from "../cluster/types.ts";
import type { KedaPlanReading } from "../controllers/keda.ts";
import { KEDA_SCALED_OBJECT_LABEL } from "../core/keda/names.ts";
import { parseSelector } from "../core/kubernetes/label_selector.ts";
import { prometheusOptionsFromFlags } from "./prometheus_options.ts";
import { collectorRegistry, scheduleEvaluatorFor } from "./collectors.ts";
import { ScheduleController } from "../controllers/scaling_schedule.ts";
import type { ReplicaGuard } from "../controllers/replica_guard.ts";
import { endpointPolicyFromFlags } from "./endpoint_options.ts";
import { collectionLimitsFromFlags } from "./collection_limits.ts";
import { promqlScoperFromFlags } from "./promql_options.ts";
import { Engine } from "../engine/engine.ts";
import { MetricHistory, recordingStore } from "../engine/history.ts";
import { createLogger, type Logger } from "../engine/logger.ts";
import { TimerWheel } from "../engine/timer_wheel.ts";
import { collectorFetch } from "../runtime/http_fetch.ts";
import {
  memoryReleaseSeconds,
  releaseUnusedMemory,
  startMemoryRelease,
} from "../runtime/memory.ts";
import { type RunningServer, serveHttp, serveHttps } from "../runtime/serve.ts";
import { MetricStore } from "../store/store.ts";
import type { AdapterPlanContext } from "../core/prometheus_adapter/plan.ts";
import { type Command, type CommandIO, UsageError } from "./command.ts";
import { errorText } from "../engine/error_text.ts";
import { startDemoEndpoint } from "./demo_endpoint.ts";
import {
  boolFlag,
  COLLECTOR_SWITCH_FLAGS,
  enabledCollectors,
  type FlagValues,
  listFlag,
  numberFlag,
  optionalNumberFlag,
  parseArgs,
  SERVE_FLAGS,
  stringFlag,
} from "./flags.ts";
import { runtimeName, VERSION } from "./version.ts";

/** Where `--demo` finds its manifests (the repository's examples/demo). */
export const DEMO_MANIFESTS: string = fileURLToPath(
  new URL("../../examples/demo", import.meta.url),
);
/** The port of the demo's JSON endpoints (named in examples/demo/hpas.yaml). */
export const DEMO_ENDPOINT_PORT = 18080;
const DEMO_HOSTS = ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"];

/** A running adapter (what `serve` starts; tests start it in-process). */
export interface RunningAdapter {
  /** The HTTPS port of the metrics APIs. */
  securePort: number;
  /** The own-metrics port, or null when `--metrics-address ""`. */
  metricsPort: number | null;
  engine: Engine;
  store: MetricStore;
  cluster: ClusterView & ClusterWriter;
  /** Stops everything, in reverse order of start. */
  close(): Promise<void>;
}

/** Host and port of an address flag (`:7979`, `127.0.0.1:7979`, `[::1]:7979`). */
export function splitHostPort(address: string, flag: string): { hostname: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(address);
  if (!m) throw new UsageError(`invalid --${flag} "${address}": want host:port or :port`);
  return { hostname: m[1] ?? (m[2] || "0.0.0.0"), port: Number(m[3]) };
}

type ApiRequestFn = (
  method: "GET" | "POST",
  path: string,
  body?: unknown,
) => Promise<{ status: number; body: unknown }>;

/**
 * The requests of delegated authentication (TokenReview, the extension-apiserver-authentication
 * ConfigMap) and authorization (SubjectAccessReview): through the kubeconfig of
 * --authentication-kubeconfig / --authorization-kubeconfig when given, else through the
 * cluster's client; null when there is neither.
 */
async function authKubeRequest(
  flags: FlagValues,
  source: KubeClusterSource | null,
  closers: (() => Promise<void> | void)[],
): Promise<KubeRequest | null> {
  const authnPath = stringFlag(flags, "authentication-kubeconfig");
  const authzPath = stringFlag(flags, "authorization-kubeconfig");
  const cluster: ApiRequestFn | null = source
    ? (method, path, body) => source.apiRequest(method, path, body)
    : null;
  let authn = cluster;
  let authz = cluster;
  if (authnPath || authzPath) {
    const { KubeHttp } = await import("../cluster/kube_http.ts");
    const { loadKubeConfig } = await import("../cluster/kubeconfig.ts");
    const open = (path: string): ApiRequestFn => {
      const http = new KubeHttp(loadKubeConfig(path));
      closers.push(() => http.close());
      return (method, p, body) => http.apiRequest(method, p, body);
    };
    if (authnPath) authn = open(authnPath);
    if (authzPath) authz = authzPath === authnPath ? authn : open(authzPath);
  }
  if (authn === null && authz === null) return null;
  return (req) => {
    const sar = req.path.endsWith("/subjectaccessreviews");
    const fn = sar ? authz : authn;
    if (fn === null) {
      return Promise.reject(
        new Error(
          `no Kubernetes API for ${req.path}: pass --${
            sar ? "authorization" : "authentication"
          }-kubeconfig`,
        ),
      );
    }
    return fn(req.method, req.path, req.body);
  };
}

/**
 * The delegated auth options of the serve flags, with the CA files read and checked (errors
 * name the flag). The caller adds `kubeRequest`, `now` and `log`; options whose flag is unset
 * are left to the defaults of api/auth.ts.
 */
export async function authOptionsFromFlags(flags: FlagValues): Promise<DelegatedAuthOptions> {
  const read = async (flag: string): Promise<string | null> => {
    const path = flags[flag];
    if (typeof path !== "string" || path === "") return null;
    try {
      return await readFile(path, "utf8");
    } catch (err) {
      throw new Error(`cannot read --${flag} "${path}": ${(err as Error).message}`);
    }
  };
  const list = (flag: string): string[] => {
    const v = flags[flag];
    return Array.isArray(v) ? v : typeof v === "string" && v ? [v] : [];
  };
  const num = (flag: string): number | undefined => {
    const v = flags[flag];
    return typeof v === "number" ? v : undefined;
  };
  const clientCa = await read("client-ca-file");
  const requestHeaderCa = await read("requestheader-client-ca-file");
  if (clientCa !== null) {
    parseCertificateBundle(clientCa, `--client-ca-file "${flags["client-ca-file"]}"`);
  }
  if (requestHeaderCa !== null) {
    parseCertificateBundle(
      requestHeaderCa,
      `--requestheader-client-ca-file "${flags["requestheader-client-ca-file"]}"`,
    );
  }
  return {
    clientCa,
    requestHeader: requestHeaderCa === null ? null : {
      clientCa: requestHeaderCa,
      allowedNames: list("requestheader-allowed-names"),
      usernameHeaders: list("requestheader-username-headers"),
      uidHeaders: list("requestheader-uid-headers"),
      groupHeaders: list("requestheader-group-headers"),
      extraHeaderPrefixes: list("requestheader-extra-headers-prefix"),
    },
    lookupConfigMap: flags["authentication-skip-lookup"] !== true,
    tolerateLookupFailure: flags["authentication-tolerate-lookup-failure"] === true,
    tokenCacheTtlSeconds: num("authentication-token-webhook-cache-ttl"),
    alwaysAllowPaths: flags["authorization-always-allow-paths"] === undefined
      ? undefined
      : list("authorization-always-allow-paths"),
    allowCacheTtlSeconds: num("authorization-webhook-cache-authorized-ttl"),
    denyCacheTtlSeconds: num("authorization-webhook-cache-unauthorized-ttl"),
    groupReviews: flags["authorization-group-reviews"] !== false,
  };
}

/**
 * Start the adapter with parsed serve flags. Resolves once it is serving and the initial sync
 * is done (ready). Throws, having stopped what it started, when it cannot start.
 */
export async function startAdapter(flags: FlagValues, io: CommandIO): Promise<RunningAdapter> {
  const log: Logger = createLogger({
    format: stringFlag(flags, "log-format") === "json" ? "json" : "text",
    verbosity: numberFlag(flags, "v"),
    write: (line) => io.stderr(line + "\n"),
    now: io.now,
  });
  const closers: (() => Promise<void> | void)[] = [];
  let closing = false;
  const close = async (): Promise<void> => {
    closing = true;
    for (const c of closers.reverse()) {
      try {
        await c();
      } catch (e) {
        log.warn(`shutdown step failed: ${(e as Error).message}`);
      }
    }
    closers.length = 0;
  };
  const kubeLogger = (level: "debug" | "info" | "warn" | "error", message: string): void => {
    if (level === "debug") log.debug(2, message);
    else log[level](message);
  };
  try {
    let engineRef: Engine | null = null;
    const manifests = listFlag(flags, "manifests");
    let cluster: ClusterView & ClusterWriter;
    let kubeSource: KubeClusterSource | null = null;
    let leader: LeaderElector;
    // this replica among the others (leader election, the shard of the collection)
    const replicaIdentity = `${io.env.POD_NAME ?? osHostname()}_${crypto.randomUUID().slice(0, 8)}`;
    if (manifests.length > 0) {
      const source = new FileClusterSource({
        paths: manifests,
        onError: (message) => log.error(`manifests: ${message}`),
        onDebug: (message) => log.debug(2, message),
        onEvent: (ev) =>
          log.info(
            `event ${ev.type} ${ev.reason} on ${ev.kind} ${
              ev.namespace ?? ""
            }/${ev.name}: ${ev.message}`,
          ),
        now: io.now,
      });
      await source.start();
      closers.push(() => source.close());
      cluster = source;
      leader = new InMemoryLeaderElector();
    } else {
      // Loaded here, not at the top: file mode never loads the Kubernetes client.
      const { KubeClusterSource } = await import("../cluster/kube_source.ts");
      const { LeaseLeaderElector } = await import("../cluster/leader_election.ts");
      const source = new KubeClusterSource({
        kubeconfig: stringFlag(flags, "kubeconfig"),
        qps: numberFlag(flags, "kube-client-qps"),
        burst: numberFlag(flags, "kube-client-burst"),
        logger: kubeLogger,
      });
      closers.push(() => source.close());
      kubeSource = source;
      cluster = source;
      leader = boolFlag(flags, "leader-elect")
        ? new LeaseLeaderElector({
          kubeConfig: source.kubeConfig,
          http: source.http,
          namespace: stringFlag(flags, "leader-elect-resource-namespace") ?? io.env.POD_NAMESPACE ??
            "kube-system",
          name: stringFlag(flags, "leader-elect-resource-name") ?? "hpa-metrics-adapter",
          identity: replicaIdentity,
          leaseDurationSeconds: numberFlag(flags, "leader-elect-lease-duration"),
          renewDeadlineSeconds: numberFlag(flags, "leader-elect-renew-deadline"),
          retryPeriodSeconds: numberFlag(flags, "leader-elect-retry-period"),
          onStartedLeading: () => {
            log.info("became the leader: writing status, events and scale");
            // events held back while another replica led are written now
            engineRef?.emitPendingEvents();
          },
          onStoppedLeading: () => log.info("stopped leading"),
          logger: kubeLogger,
        })
        : new InMemoryLeaderElector();
    }
    leader.start();
    closers.push(() => leader.stop());
    const isLeader = (): boolean => leader.isLeader();

    // bad Prometheus flags (alias=url pairs, token files) fail the start, not each collection
    prometheusOptionsFromFlags(flags);
    // so does a bad --allowed-metric-endpoints pattern
    const endpointPolicy = endpointPolicyFromFlags(flags, io.env);
    // and limits that contradict each other (--default-collection-interval below the minimum)
    const limits = collectionLimitsFromFlags(flags);
    // and a bad --prometheus-enforce-namespace-label (the PromQL parser loads only with it)
    const scopePromQL = await promqlScoperFromFlags(flags);
    const store = new MetricStore({ ttlSeconds: numberFlag(flags, "metrics-ttl") });
    // the engine is made below; the gauges read it on each scrape
    let fallbacks: () => FallbackGauge[] = () => [];
    const metrics = createAdapterMetrics({
      storeStats: () => store.stats(),
      fallbacks: () => fallbacks(),
    });
    // the adapters that serve what no HPA of ours asks for (issue 26); none without the flags
    const delegation = await delegationFromFlags(flags, {
      observer: createDelegateMetrics(metrics.registry),
      log,
    });
    closers.push(() => delegation.close());
    const { delegates } = delegation;
    // --keda-scaled-objects: the owned ScaledObjects' HPAs, statuses, triggers and plans
    let replan: (namespace: string, name: string, pending?: KubeObject) => void = () => {};
    let planReading: (
      ns: string,
      hpa: string,
      metric: string,
      scaledObject: string,
    ) => KedaPlanReading | undefined = () => undefined;
    const keda = boolFlag(flags, "keda-scaled-objects")
      ? new (await import("../controllers/keda.ts")).KedaController({
        cluster,
        writer: cluster,
        // file mode: the manifests stay as they are; decisions are logged
        write: kubeSource !== null,
        selector: stringFlag(flags, "keda-scaled-object-selector") ?? "",
        clusterObjectNamespace: stringFlag(flags, "keda-cluster-object-namespace") ?? "keda",
        version: VERSION,
        onPlansChanged: (ns, name, pending) => replan(ns, name, pending),
        // the scale loop reads the engine's last collections and the store's values
        reading: (ns, hpaName, metricName, scaledObject) =>
          planReading(ns, hpaName, metricName, scaledObject),
        now: io.now,
        logger: log,
        isLeader,
      })
      : null;
    // --knative-autoscaler: the ScaledObjects autoscaler-keda would create, in memory, served
    // as KEDA serves its own (the reconciler writes their HPAs once started, below)
    const knative = boolFlag(flags, "knative-autoscaler")
      ? new (await import("../controllers/knative.ts")).KnativeReconciler({
        cluster,
        writer: cluster,
        // file mode: the manifests stay as they are; decisions are logged
        write: kubeSource !== null,
        version: VERSION,
        clusterTriggerAuthNamespace:
          stringFlag(flags, "knative-cluster-trigger-authentication-namespace") ?? "keda",
        config: {
          prometheusAddress: stringFlag(flags, "knative-prometheus-address") ?? undefined,
          scaledObjectAutoCreate: boolFlag(flags, "knative-scaled-object-auto-create"),
        },
        endpointPolicy,
        ...(scopePromQL ? { scopePromQL } : {}),
        onPlansChanged: (ns, name) => replan(ns, name),
        now: io.now,
        logger: log,
        isLeader,
      })
      : null;
    // the KEDA collectors and answers: the Knative ScaledObjects first, then the owned ones
    const kedaSources = knative || keda
      ? {
        trigger: (key: string, index: number) =>
          knative?.trigger(key, index) ?? keda?.trigger(key, index),
        scaledObject: (ns: string, name: string) =>
          knative?.scaledObject(ns, name) ?? keda?.scaledObject(ns, name),
        plansFor: (hpa: KubeObject) => knative?.plansFor(hpa) ?? keda?.plansFor(hpa),
      }
      : null;
    const registry = collectorRegistry(flags, kedaSources ? { kedaTriggers: kedaSources } : {});
    // one runtime timer for all the engine's timers due in the same 250 ms (see timer_wheel.ts)
    const timers = new TimerWheel();
    closers.push(() => timers.clear());
    // the collectors' fetch (on Node, one whose responses are not promoted: http_fetch.ts)
    const collectorHttp = collectorFetch();
    closers.push(() => collectorHttp.close());
    // recent values per plan for the status page (recorded as they pass to the store)
    const history = boolFlag(flags, "status-page") && stringFlag(flags, "metrics-address")
      ? new MetricHistory()
      : null;
    // the store the engine writes to; pushes from peers (sharding) are written the same way
    const engineStore = history ? recordingStore(store, history) : store;
    // --shard-collection: the replicas split the collection and push values to each other
    const sharding = boolFlag(flags, "shard-collection")
      ? (await import("./shard_options.ts")).shardingFromFlags(flags, {
        kubeSource,
        env: io.env,
        identity: replicaIdentity,
        namespace: stringFlag(flags, "leader-elect-resource-namespace") ?? io.env.POD_NAMESPACE ??
          "kube-system",
        securePort: numberFlag(flags, "secure-port"),
        log,
      })
      : null;
    const engine = new Engine({
      cluster,
      store: sharding ? sharding.wrap(engineStore) : engineStore,
      ...(sharding ? { owns: (key: string) => sharding.owns(key) } : {}),
      registry,
      defaultIntervalSeconds: numberFlag(flags, "default-collection-interval"),
      metricsTtlSeconds: numberFlag(flags, "metrics-ttl"),
      maxConcurrentCollections: numberFlag(flags, "max-concurrent-collections"),
      minCollectionIntervalSeconds: limits.minIntervalSeconds,
      maxMetricsPerNamespace: limits.maxMetricsPerNamespace,
      collectionTimeoutSeconds: numberFlag(flags, "collection-timeout"),
      garbageCollectorIntervalSeconds: numberFlag(flags, "garbage-collector-interval"),
      disregardIncompatibleHpas: boolFlag(flags, "disregard-incompatible-hpas"),
      // a metric no collector here takes is the delegate's, or prometheus-adapter's rules'
      delegatedApis: {
        custom: !!delegates.custom || stringFlag(flags, "prometheus-adapter-config") !== null,
        external: !!delegates.external || stringFlag(flags, "prometheus-adapter-config") !== null,
      },
      enabledCollectors: enabledCollectors(flags),
      allowLinkLocalTargets: boolFlag(flags, "allow-link-local-targets"),
      endpointPolicy,
      scopePromQL,
      logger: log,
      setTimer: timers.setTimer,
      clearTimer: timers.clearTimer,
      fetch: collectorHttp.fetch,
      writer: cluster,
      isLeader,
      now: io.now,
      onCollection: (r) => {
        metrics.observeCollection(r.collector, r.ok, r.durationMs / 1000);
        // the scale loop of an owned ScaledObject ticks after its triggers' collections
        keda?.collected(r.planKeys);
      },
      // kube-metrics-adapter's "updates": one per HPA per reconcile, error when a metric failed
      onReconcile: (r) => (r.ok ? metrics.updatesSuccess : metrics.updatesError).inc(),
      ...(kedaSources ? { planOverride: kedaSources.plansFor } : {}),
      // HPAs added while running (a cluster's first deploy): their first collections are a
      // peak like the start's, and Bun keeps the memory it grew to unless asked (memory.ts)
      onNewCollectionsDone: (count) => {
        if (!closing && releaseUnusedMemory()) {
          log.debug(1, "returned the memory freed after the first collections of new HPAs", {
            collections: count,
          });
        }
      },
    });
    fallbacks = () => engine.fallbackStatus();
    engineRef = engine;
    if (sharding) {
      createShardMetrics(metrics.registry, () => {
        const share = engine.shardShare();
        return {
          members: sharding.members().length,
          owned: share.owned,
          collections: share.total,
          ...sharding.replicator.stats(),
        };
      });
    }

    const authRequest = await authKubeRequest(flags, kubeSource, closers);
    const authnApi = kubeSource !== null || stringFlag(flags, "authentication-kubeconfig") !== null;
    const auth = createDelegatedAuth({
      ...await authOptionsFromFlags(flags),
      kubeRequest: authRequest,
      lookupConfigMap: authnApi && !boolFlag(flags, "authentication-skip-lookup"),
      now: io.now,
      log,
    });
    await auth.start();
    closers.push(() => auth.stop());
    if (auth.reviewStats) createAuthorizationMetrics(metrics.registry, auth.reviewStats);

    const tlsCert = stringFlag(flags, "tls-cert-file");
    const tlsKey = stringFlag(flags, "tls-private-key-file");
    if ((tlsCert === null) !== (tlsKey === null)) {
      throw new UsageError("--tls-cert-file and --tls-private-key-file go together");
    }
    const serving = tlsCert && tlsKey
      ? await loadCertificateFiles({ certFile: tlsCert, keyFile: tlsKey })
      : await ensureSelfSignedCertificate({
        certDir: stringFlag(flags, "cert-dir") ?? "apiserver.local.config/certificates",
        now: io.now(),
      });

    // --prometheus-adapter-config: its rules discovered and served (a bad file fails the start)
    let nodesWatched = false;
    const watchNodes = (): void => {
      if (nodesWatched) return;
      nodesWatched = true;
      cluster.ensure("Node").catch((e) =>
        log.error("cannot watch nodes for prometheus-adapter's resourceRules", {
          error: errorText(e),
        })
      );
    };
    const prometheusAdapter = stringFlag(flags, "prometheus-adapter-config") === null
      ? null
      : await (await import("./prometheus_adapter_options.ts")).startPrometheusAdapterFromFlags(
        flags,
        {
          fetch: collectorHttp.fetch,
          now: io.now,
          logger: log,
          // the rules' resources resolved with the cluster's own (not with --manifests)
          ...(kubeSource
            ? {
              discoverKinds: async () =>
                (await import("../cluster/discovery.ts")).discoverKinds(kubeSource!.http),
              // `*` reads of resources other than pods list their objects, as upstream
              listNames: async (list) =>
                (await import("../cluster/discovery.ts")).listObjectNames(kubeSource!.http, list),
            }
            : {}),
        },
      );
    if (prometheusAdapter) {
      closers.push(() => prometheusAdapter.stop());
      // a rule's pods read lists the pods its label selector selects, as prometheus-adapter's
      // lister does: the pods are watched from the start, not only once an HPA needs them
      cluster.ensure("Pod").catch((e) =>
        log.error("cannot watch pods for prometheus-adapter's rules", { error: errorText(e) })
      );
      // resourceRules: metrics.k8s.io's NodeMetrics list the nodes (watched once asked for)
      if (prometheusAdapter.resourceMetricsServed()) watchNodes();
    }

    // --admission-webhook: plan's checks on the objects kube-apiserver admits (issue 50)
    const admission = boolFlag(flags, "admission-webhook")
      ? await admissionFromFlags(flags, io.env, cluster, prometheusAdapter)
      : null;

    let ready = false;
    /** Requests answered so far (the memory release waits for a quiet moment). */
    let served = 0;
    const app = createApp({
      store,
      pods: {
        listPods: (ns) => cluster.list("Pod", ns),
        listAllPods: () => cluster.list("Pod"),
        getPod: (ns, name) => cluster.get("Pod", ns, name),
        version: cluster.version ? (ns) => cluster.version!("Pod", ns) : undefined,
      },
      now: io.now,
      enableCustom: boolFlag(flags, "enable-custom-metrics-api"),
      enableExternal: boolFlag(flags, "enable-external-metrics-api"),
      ready: () => ready,
      version: { gitVersion: `v${VERSION}`, goVersion: runtimeName(), compiler: "typescript" },
      authorize: createAuthMiddleware({ auth }),
      onRequest: (obs) => {
        served++;
        metrics.observeRequest(obs);
      },
      delegates,
      ...(admission ? { admission } : {}),
      ...(kedaSources ? { keda: kedaSources } : {}),
      ...(prometheusAdapter
        ? {
          prometheusAdapter,
          // resourceRules: metrics.k8s.io while the config in use has them
          resourceMetrics: prometheusAdapter,
          nodes: {
            listNodes: () => {
              watchNodes();
              return cluster.list("Node");
            },
          },
        }
        : {}),
      // a peer's values go to the store as ours do, its failures to the leader's events
      ...(sharding
        ? {
          shardSamples: (body: unknown) =>
            sharding.receive(
              body,
              (key, outcome, at) => engine.peerRecord(engineStore, key, outcome, at),
            ),
        }
        : {}),
    });
    const minVersion = stringFlag(flags, "tls-min-version");
    const server: RunningServer = await serveHttps(app, {
      hostname: stringFlag(flags, "bind-address") ?? "0.0.0.0",
      port: numberFlag(flags, "secure-port"),
      cert: serving.cert,
      key: serving.key,
      clientCa: auth.clientCaBundle() || undefined,
      minVersion: minVersion === "VersionTLS13" ? "TLSv1.3" : "TLSv1.2",
    });
    closers.push(() => server.close());
    auth.onClientCaChange((bundle) => server.updateTls({ clientCa: bundle }));
    delegation.start();

    // the replica guard's last decisions for the status page, once the guard exists
    let guardRef: ReplicaGuard | null = null;
    let metricsServer: RunningServer | null = null;
    const metricsAddress = stringFlag(flags, "metrics-address");
    if (metricsAddress) {
      const { hostname, port } = splitHostPort(metricsAddress, "metrics-address");
      // the status page's code loads on its first request (see createMetricsApp)
      const status = history
        ? async () => ({
          report: (await import("./status_source.ts")).statusReporter({
            engine,
            store,
            cluster,
            history,
            flags,
            now: io.now,
            ...(boolFlag(flags, "estafette-hpa-scaler")
              ? {
                replicaGuard: (ns: string, name: string) =>
                  guardRef?.lastDecision(ns, name) ?? null,
              }
              : {}),
            ...(keda ? { scaledObject: (hpa: KubeObject) => keda.statusOf(hpa) } : {}),
            ...(prometheusAdapter
              ? {
                prometheusAdapter: () => prometheusAdapter.status(),
                prometheusAdapterRules: () => prometheusAdapter.planContext(),
              }
              : {}),
          }),
        })
        : undefined;
      metricsServer = await serveHttp(createMetricsApp(metrics.registry, { status }), {
        hostname,
        port,
      });
      closers.push(() => metricsServer?.close());
    }

    if (sharding) {
      // the members first, so that the engine starts on its own share only
      await sharding.start(engine, engineStore);
      closers.push(() => sharding.stop());
    }
    replan = (ns, name, pending) => engine.replan(ns, name, pending);
    planReading = (ns, hpaName, metricName, scaledObject) => {
      const r = engine.planReading(ns, hpaName, metricName);
      if (r === undefined) return undefined;
      // the value served (a formula's, a fallback's), else the one collected last
      const found = store.lookupExternal({
        namespace: ns,
        metricName,
        selector: parseSelector(`${KEDA_SCALED_OBJECT_LABEL}=${scaledObject}`),
      }, io.now());
      const value = ("items" in found ? found.items[0]?.value : undefined) ?? r.value;
      return { ...r, ...(value !== undefined ? { value } : {}) };
    };
    if (keda) {
      await keda.start();
      closers.push(() => keda.stop());
    }
    await engine.start();
    closers.push(() => engine.stop());
    if (boolFlag(flags, "scaling-schedule")) {
      const controller = new ScheduleController({
        cluster,
        writer: cluster,
        tolerance: numberFlag(flags, "horizontal-pod-autoscaler-tolerance"),
        // The collectors' evaluator (same flags): each schedule's windows are computed once.
        evaluator: scheduleEvaluatorFor(flags),
        now: io.now,
        logger: log,
        isLeader,
      });
      await controller.start();
      closers.push(() => controller.stop());
    }
    // the replica guard's and the Knative reconciler's code loads only when they are on
    if (boolFlag(flags, "estafette-hpa-scaler")) {
      const { guardSettings } = await import("./guard_options.ts");
      const { ReplicaGuard } = await import("../controllers/replica_guard.ts");
      const settings = guardSettings(flags, io.env);
      for (const w of settings.warnings) log.warn("replica guard setting", { warning: w });
      const guard: ReplicaGuard = new ReplicaGuard({
        ...settings.options,
        endpointPolicy,
        scopePromQL,
        cluster,
        writer: cluster,
        // file mode: the manifests stay as they are; decisions are logged
        write: kubeSource !== null,
        fetch: collectorHttp.fetch,
        now: io.now,
        logger: log,
        isLeader,
        metrics: createGuardMetrics(metrics.registry, () => guard.gauges()),
      });
      guardRef = guard;
      await guard.start();
      closers.push(() => guard.stop());
    }
    if (knative) {
      await knative.start();
      closers.push(() => knative.stop());
    }
    ready = true;
    // The start's peak (objects read, every HPA planned, every metric collected once) is over
    // when the first round ends: give the memory it freed back (Bun keeps it otherwise).
    engine.firstRound().then(() => {
      if (!closing && releaseUnusedMemory()) {
        log.debug(1, "returned the memory freed after the first collections");
      }
      const releaseSeconds = memoryReleaseSeconds(
        optionalNumberFlag(flags, "memory-release-interval"),
        sharding !== null,
      );
      if (!closing && releaseSeconds > 0) {
        closers.push(startMemoryRelease({
          intervalMs: releaseSeconds * 1000,
          requests: () => served,
          rss: () => process.memoryUsage.rss(),
        }));
      }
    });
    log.info(
      `serving the metrics APIs on https://${stringFlag(flags, "bind-address")}:${server.port}`,
      {
        mode: kubeSource ? "cluster" : "manifests",
        auth: auth.mode(),
      },
    );
    return {
      securePort: server.port,
      metricsPort: metricsServer?.port ?? null,
      engine,
      store,
      cluster,
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}

/** The admission webhook's options: plan's setup from the serve flags, on the informers' view. */
async function admissionFromFlags(
  flags: FlagValues,
  env: Record<string, string | undefined>,
  cluster: ClusterView,
  prometheusAdapter: { planContext(): AdapterPlanContext } | null,
): Promise<AdmissionOptions> {
  const { planSetupFromFlags } = await import("./plan.ts");
  const { admissionReviewer } = await import("./admission_check.ts");
  return {
    review: admissionReviewer({
      // the collectors the flags enable, as the engine has them (none assumed); a metric no
      // collector takes is checked against what prometheus-adapter's rules discovered last
      setup: await planSetupFromFlags(flags, {
        given: new Set(COLLECTOR_SWITCH_FLAGS),
        env,
        ...(prometheusAdapter
          ? {
            prometheusAdapter: { context: () => prometheusAdapter.planContext(), offline: null },
          }
          : {}),
      }),
      cluster,
      keda: boolFlag(flags, "keda-scaled-objects"),
      knative: boolFlag(flags, "knative-autoscaler"),
      replicaGuard: boolFlag(flags, "estafette-hpa-scaler"),
    }),
    denyInvalid: boolFlag(flags, "admission-deny-invalid"),
  };
}

/** A kubeconfig for kubectl against the demo (a token user: kubectl prompts for credentials without one). */
export function demoKubeconfig(port: number): string {
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    `- name: demo\n  cluster:\n    server: https://127.0.0.1:${port}\n    insecure-skip-tls-verify: true`,
    "users:",
    "- name: demo\n  user:\n    token: demo",
    "contexts:",
    "- name: demo\n  context:\n    cluster: demo\n    user: demo",
    "current-context: demo",
    "",
  ].join("\n");
}

/** What `serve --demo` prints once it serves: the URLs and commands to try. */
export function demoBanner(
  port: number,
  metricsPort: number | null,
  statusPage: boolean,
  kubeconfig: string,
): string {
  const base = `https://127.0.0.1:${port}`;
  const status = metricsPort !== null && statusPage ? `http://127.0.0.1:${metricsPort}` : null;
  const k = `kubectl --kubeconfig ${kubeconfig} get --raw`;
  return [
    "",
    `hpa-metrics-adapter demo: serving ${base} from examples/demo (edit the files; changes are picked up)`,
    ...(status !== null
      ? [
        `status page: ${status}/status (demo/payments fails on purpose: its endpoint answers 500)`,
      ]
      : []),
    "",
    "try:",
    `  ${k} /apis/custom.metrics.k8s.io/v1beta2`,
    `  ${k} '/apis/custom.metrics.k8s.io/v1beta2/namespaces/demo/pods/*/requests-per-second?labelSelector=app%3Dshop'`,
    `  ${k} /apis/custom.metrics.k8s.io/v1beta2/namespaces/demo/scalingschedules.zalando.org/hourly-peak/hourly-peak`,
    `  ${k} '/apis/external.metrics.k8s.io/v1beta1/namespaces/demo/queue-length?labelSelector=queue%3Dorders'`,
    `  ${k} /apis/custom.metrics.k8s.io/v1beta2/namespaces/demo/pods/*/no-such-metric   # a 404 that says why`,
    ...(metricsPort !== null
      ? [`  curl -s http://127.0.0.1:${metricsPort}/metrics | grep kube_metrics_adapter`]
      : []),
    ...(status !== null
      ? [
        `  npx tsx src/main.ts explain demo/payments --status-url ${status}   # why it gets no metric`,
      ]
      : []),
    "",
    "Ctrl-C stops it.",
    "",
  ].join("\n");
}

/** The `serve` command. */
export const serveCommand: Command = {
  name: "serve",
  summary: "run the adapter: watch HPAs, collect their metrics, serve the metrics APIs",
  usage:
    "hpa-metrics-adapter serve [--manifests DIR|FILE]... [--demo] [flags] (see README for every flag)",
  async run(args, io) {
    const parsed = parseArgs(args, SERVE_FLAGS);
    if (parsed.positionals.length > 0) {
      throw new UsageError(`unexpected argument "${parsed.positionals[0]}"`);
    }
    const flags = parsed.values;
    let demo: Awaited<ReturnType<typeof startDemoEndpoint>> | null = null;
    if (boolFlag(flags, "demo")) {
      if (!existsSync(DEMO_MANIFESTS)) {
        io.stderr(
          `error: --demo needs the demo manifests at ${DEMO_MANIFESTS} (run it from the repository)\n`,
        );
        return 1;
      }
      if (listFlag(flags, "manifests").length === 0) flags.manifests = [DEMO_MANIFESTS];
      if (!parsed.given.has("secure-port")) flags["secure-port"] = 6443;
      if (!parsed.given.has("bind-address")) flags["bind-address"] = "127.0.0.1";
      if (!parsed.given.has("metrics-address")) flags["metrics-address"] = "127.0.0.1:7979";
      if (!parsed.given.has("scaling-schedule")) flags["scaling-schedule"] = true;
      if (!parsed.given.has("cert-dir")) flags["cert-dir"] = ".tmp/demo/certs";
      demo = await startDemoEndpoint({ port: DEMO_ENDPOINT_PORT, hosts: DEMO_HOSTS, now: io.now });
      for (const f of demo.failed) io.stderr(`warning: demo endpoint could not listen on ${f}\n`);
    }
    let adapter: RunningAdapter;
    try {
      adapter = await startAdapter(flags, io);
    } catch (e) {
      await demo?.close();
      throw e;
    }
    if (demo) {
      const kubeconfig = `${flags["cert-dir"]}/../kubeconfig`;
      await writeFile(kubeconfig, demoKubeconfig(adapter.securePort));
      io.stderr(
        demoBanner(
          adapter.securePort,
          adapter.metricsPort,
          boolFlag(flags, "status-page"),
          relative(".", kubeconfig),
        ),
      );
    }
    await (io.stopped ?? new Promise<void>(() => {}));
    io.stderr("stopping\n");
    await adapter.close();
    await demo?.close();
    return 0;
  },
};
