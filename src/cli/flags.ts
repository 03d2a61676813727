/**
 * Command-line flags, spelled and defaulted as kube-metrics-adapter (and the Kubernetes generic
 * API server it embeds) spell them, so existing Deployments and Helm values keep working.
 * The definitions are data: the README's flag reference is generated from them.
 */
import { DEFAULT_KNATIVE_PROMETHEUS_ADDRESS } from "../core/knative/defaults.ts";
import { KEDA_COLLECTED_TYPES, kedaCollectorType } from "../core/keda/plan.ts";
import { DEFAULT_CLUSTER_DOMAIN } from "../core/endpoint_policy.ts";
import { DELEGATED_AUTH_DEFAULTS } from "../api/auth.ts";
import { DELEGATE_DEFAULTS } from "../api/delegate.ts";
import { LEASE_TIMING_DEFAULTS } from "../cluster/leader.ts";
import { KUBE_CLIENT_DEFAULTS } from "../cluster/rate_limiter.ts";
import { parseDuration } from "../core/duration.ts";
import { EXTERNAL_RPS_DEFAULTS } from "../collectors/external_rps.ts";
import { PROMETHEUS_DEFAULTS } from "../collectors/prometheus.ts";
import { SKIPPER_DEFAULTS } from "../collectors/skipper.ts";
import { DEFAULT_SCHEDULE_OPTIONS } from "../core/kube_metrics_adapter/scaling_schedule.ts";
import { DEFAULT_MAX_RESPONSE_BYTES } from "../collectors/http_get.ts";
import { DEFAULT_MAX_POD_REQUESTS } from "../collectors/pod_json_path.ts";
import { ENGINE_DEFAULTS } from "../engine/engine.ts";
import { PROMETHEUS_ADAPTER_DEFAULTS } from "../engine/prometheus_adapter.ts";
import { DEFAULT_NAKADI_TOKEN_NAME } from "../collectors/nakadi.ts";
import { DEFAULT_MEMORY_RELEASE_SECONDS } from "../runtime/memory.ts";
import { DEFAULT_CREDENTIALS_DIR } from "../collectors/oauth_backend.ts";
import { DEFAULT_ZMON_TOKEN_NAME } from "../collectors/zmon.ts";
import { UsageError } from "./command.ts";

/** How a flag's value is read. Durations are Go durations, stored in seconds. */
export type FlagType =
  | "string"
  | "bool"
  | "int"
  | "float"
  | "duration"
  | "stringArray"
  | "stringSlice";

/** One flag. */
export interface FlagDef {
  name: string;
  type: FlagType;
  default: string | number | boolean | string[] | null;
  help: string;
  /** Other spellings accepted (without dashes). */
  aliases?: string[];
  /** Section in the flag reference. */
  group: string;
}

/** Parsed values keyed by flag name (kebab-case, the canonical name). */
export type FlagValues = Record<string, string | number | boolean | string[] | null>;

function def(
  group: string,
  name: string,
  type: FlagType,
  dflt: FlagDef["default"],
  help: string,
  aliases?: string[],
): FlagDef {
  return { group, name, type, default: dflt, help, ...(aliases ? { aliases } : {}) };
}

const SERVING = "Serving";
const AUTH = "Authentication and authorization";
const CLUSTER = "Cluster";
const ENGINE = "Collection";
const BACKENDS = "Backends";
const SCHEDULES = "Scaling schedules";
const GUARD = "Replica guard (estafette-k8s-hpa-scaler)";
const KNATIVE = "Knative (autoscaler-keda's annotations)";
const KEDA = "KEDA (ScaledObjects)";
const DELEGATION = "Delegation (metrics of another adapter)";
const PROMETHEUS_ADAPTER = "prometheus-adapter (its config file)";
const LOGGING = "Logging";

/** Every flag of `serve`. */
export const SERVE_FLAGS: readonly FlagDef[] = [
  def(SERVING, "bind-address", "string", "0.0.0.0", "address to serve the metrics APIs on (HTTPS)"),
  def(SERVING, "secure-port", "int", 443, "port to serve the metrics APIs on (HTTPS)"),
  def(
    SERVING,
    "cert-dir",
    "string",
    "apiserver.local.config/certificates",
    "directory for the self-signed certificate generated when --tls-cert-file is not given",
  ),
  def(
    SERVING,
    "tls-cert-file",
    "string",
    null,
    "x509 certificate (PEM) for HTTPS, intermediates after the leaf",
  ),
  def(
    SERVING,
    "tls-private-key-file",
    "string",
    null,
    "private key (PEM) matching --tls-cert-file",
  ),
  def(
    SERVING,
    "tls-min-version",
    "string",
    null,
    "minimum TLS version (VersionTLS12, VersionTLS13)",
  ),
  def(
    SERVING,
    "tls-cipher-suites",
    "stringSlice",
    [],
    "accepted for compatibility; the runtime's default cipher suites are used",
  ),
  def(
    SERVING,
    "metrics-address",
    "string",
    ":7979",
    "address (host:port) of the plain-HTTP endpoint serving the adapter's own Prometheus metrics",
  ),
  def(
    SERVING,
    "status-page",
    "bool",
    true,
    "serve the status page (/status, /status/NAMESPACE/NAME, /status.json) on --metrics-address",
  ),
  def(
    SERVING,
    "admission-webhook",
    "bool",
    false,
    "answer validating admission reviews on POST /validate/... of --secure-port: the problems plan finds in an HPA (ScaledObject, Knative PodAutoscaler or workload when those features are on) as warnings; register it with deploy/components/admission-webhook or the chart's admissionWebhook.enabled",
  ),
  def(
    SERVING,
    "admission-deny-invalid",
    "bool",
    false,
    "with --admission-webhook: refuse an object with errors (a metric that cannot be collected) instead of warning; an update is refused only for errors its old object did not have",
  ),
  def(
    SERVING,
    "enable-custom-metrics-api",
    "bool",
    true,
    "serve custom.metrics.k8s.io (v1beta1 and v1beta2)",
  ),
  def(
    SERVING,
    "enable-external-metrics-api",
    "bool",
    true,
    "serve external.metrics.k8s.io (v1beta1)",
  ),
  def(SERVING, "profiling", "bool", true, "accepted for compatibility"),
  def(SERVING, "contention-profiling", "bool", false, "accepted for compatibility"),
  def(
    SERVING,
    "manifests",
    "stringArray",
    [],
    "serve from YAML/JSON manifests (files or folders) instead of a cluster: the local, embedded mode (repeatable)",
  ),
  def(
    SERVING,
    "demo",
    "bool",
    false,
    "serve the embedded demo (examples/demo) and its demo endpoint; implies --manifests examples/demo",
  ),
  def(
    SERVING,
    "memory-release-interval",
    "duration",
    null,
    `how often the binary (Bun) looks whether its resident memory grew by 8 MiB since it last gave memory back, and if so collects garbage and returns freed memory and unused compiled code to the system, at a moment with no request for 250 ms, or after a whole interval without one (it blocks ~45 ms at 2,000 HPAs); 0 turns it off; default ${DEFAULT_MEMORY_RELEASE_SECONDS}s, or off with --shard-collection (a replica that collects a share runs its hot code that much less often, and compiling it again after each release took a sixth of its CPU); Node and Deno do this themselves`,
  ),

  def(
    AUTH,
    "client-ca-file",
    "string",
    null,
    "CA bundle that verifies client certificates (identity from the CN and O)",
  ),
  def(
    AUTH,
    "requestheader-client-ca-file",
    "string",
    null,
    "CA bundle that verifies the aggregator's front-proxy client certificate",
  ),
  def(
    AUTH,
    "requestheader-allowed-names",
    "stringSlice",
    [],
    "common names allowed for the front-proxy client certificate (empty: any name the CA signed)",
  ),
  def(
    AUTH,
    "requestheader-username-headers",
    "stringSlice",
    ["x-remote-user"],
    "request headers that carry the user name",
  ),
  def(
    AUTH,
    "requestheader-group-headers",
    "stringSlice",
    ["x-remote-group"],
    "request headers that carry the groups",
  ),
  def(
    AUTH,
    "requestheader-extra-headers-prefix",
    "stringSlice",
    ["x-remote-extra-"],
    "request header prefixes that carry extra user attributes",
  ),
  def(
    AUTH,
    "requestheader-uid-headers",
    "stringSlice",
    [],
    "request headers that carry the user UID",
  ),
  def(
    AUTH,
    "authentication-kubeconfig",
    "string",
    null,
    "kubeconfig for TokenReview and the extension-apiserver-authentication ConfigMap (default: the cluster client)",
  ),
  def(
    AUTH,
    "authentication-skip-lookup",
    "bool",
    false,
    "do not read the extension-apiserver-authentication ConfigMap",
  ),
  def(
    AUTH,
    "authentication-tolerate-lookup-failure",
    "bool",
    false,
    "start even when the extension-apiserver-authentication ConfigMap cannot be read",
  ),
  def(
    AUTH,
    "authentication-token-webhook-cache-ttl",
    "duration",
    DELEGATED_AUTH_DEFAULTS.tokenCacheTtlSeconds,
    "how long TokenReview results are cached",
  ),
  def(
    AUTH,
    "authorization-kubeconfig",
    "string",
    null,
    "kubeconfig for SubjectAccessReview (default: the cluster client; without one, file mode allows every authenticated user)",
  ),
  def(
    AUTH,
    "authorization-always-allow-paths",
    "stringSlice",
    [...DELEGATED_AUTH_DEFAULTS.alwaysAllowPaths],
    "paths served without authorization",
  ),
  def(
    AUTH,
    "authorization-webhook-cache-authorized-ttl",
    "duration",
    DELEGATED_AUTH_DEFAULTS.allowCacheTtlSeconds,
    "how long an allowed SubjectAccessReview is cached",
  ),
  def(
    AUTH,
    "authorization-webhook-cache-unauthorized-ttl",
    "duration",
    DELEGATED_AUTH_DEFAULTS.denyCacheTtlSeconds,
    "how long a denied SubjectAccessReview is cached",
  ),
  def(
    AUTH,
    "authorization-group-reviews",
    "bool",
    true,
    "when a user reads a second object of one API group, ask once whether it may read all of the group (resource *, every namespace and name) and let that allow decide its reads; false asks about every object (as kube-metrics-adapter does)",
  ),

  def(
    CLUSTER,
    "kubeconfig",
    "string",
    null,
    "kubeconfig of the cluster to watch (default: in-cluster config)",
    ["lister-kubeconfig"],
  ),
  def(
    CLUSTER,
    "kube-client-qps",
    "float",
    KUBE_CLIENT_DEFAULTS.qps,
    "queries per second to the Kubernetes API",
  ),
  def(
    CLUSTER,
    "kube-client-burst",
    "int",
    KUBE_CLIENT_DEFAULTS.burst,
    "burst of queries to the Kubernetes API",
  ),
  def(
    CLUSTER,
    "leader-elect",
    "bool",
    true,
    "elect one writer (status updates, events, scaling adjustments) among replicas through a Lease",
  ),
  def(
    CLUSTER,
    "leader-elect-resource-name",
    "string",
    "hpa-metrics-adapter",
    "name of the Lease used for leader election",
  ),
  def(
    CLUSTER,
    "leader-elect-resource-namespace",
    "string",
    null,
    "namespace of the Lease (default: the pod's namespace, else kube-system)",
  ),
  def(
    CLUSTER,
    "leader-elect-lease-duration",
    "duration",
    LEASE_TIMING_DEFAULTS.leaseDurationSeconds,
    "how long a leader's Lease is valid without renewal",
  ),
  def(
    CLUSTER,
    "leader-elect-renew-deadline",
    "duration",
    LEASE_TIMING_DEFAULTS.renewDeadlineSeconds,
    "how long the leader keeps trying to renew before it steps down",
  ),
  def(
    CLUSTER,
    "leader-elect-retry-period",
    "duration",
    LEASE_TIMING_DEFAULTS.retryPeriodSeconds,
    "how often candidates try to acquire or renew the Lease",
  ),
  def(
    CLUSTER,
    "shard-collection",
    "bool",
    false,
    "split the collection among the replicas (each holds a Lease; rendezvous hashing of the query keys) and push new values to the peers, so any replica serves any value",
  ),
  def(
    CLUSTER,
    "shard-lease-duration",
    "duration",
    15,
    "how long a replica's shard Lease is valid without renewal: a replica that stops renewing loses its share after that",
  ),
  def(
    CLUSTER,
    "shard-retry-period",
    "duration",
    2,
    "how often a replica renews its shard Lease and lists the others'",
  ),
  def(
    CLUSTER,
    "shard-advertise-address",
    "string",
    null,
    "the URL peers push values to (default https://$POD_IP:<secure port>)",
  ),
  def(
    CLUSTER,
    "shard-peer-ca-file",
    "string",
    null,
    "CA bundle that verifies the peers' serving certificates (required with --shard-collection)",
  ),
  def(
    CLUSTER,
    "shard-peer-server-name",
    "string",
    null,
    "the name the peers' serving certificates are verified against (default: the address's host)",
  ),

  def(
    ENGINE,
    "default-collection-interval",
    "duration",
    ENGINE_DEFAULTS.defaultIntervalSeconds,
    "collection interval of metrics without an interval annotation",
  ),
  def(
    ENGINE,
    "metrics-ttl",
    "duration",
    900,
    "how long a collected value may be served; an older value is never served",
  ),
  def(
    ENGINE,
    "garbage-collector-interval",
    "duration",
    ENGINE_DEFAULTS.garbageCollectorIntervalSeconds,
    "how often expired values are removed from memory",
  ),
  def(
    ENGINE,
    "disregard-incompatible-hpas",
    "bool",
    false,
    "emit no event for HPAs whose metrics this adapter cannot collect (they belong to another adapter)",
  ),
  def(
    ENGINE,
    "max-concurrent-collections",
    "int",
    ENGINE_DEFAULTS.maxConcurrentCollections,
    "collections running at once, over all HPAs; when more are due, they start in turn by namespace (one namespace's many HPAs cannot delay another's)",
  ),
  def(
    ENGINE,
    "min-collection-interval",
    "duration",
    ENGINE_DEFAULTS.minCollectionIntervalSeconds,
    "shortest interval an interval annotation may ask for: a shorter one is a plan error and the metric is not collected (0: no bound); --default-collection-interval may not be shorter",
  ),
  def(
    ENGINE,
    "max-metrics-per-namespace",
    "int",
    ENGINE_DEFAULTS.maxMetricsPerNamespace,
    "most metrics collected per namespace (formula inputs included; 0: no limit): the oldest HPAs' metrics first (creation time, then name, then metric order), the others are not collected and say so (plan error, Warning event) until room is made",
  ),
  def(
    ENGINE,
    "max-concurrent-pod-requests",
    "int",
    DEFAULT_MAX_POD_REQUESTS,
    "requests to pods running at once within one Pods-metric collection",
  ),
  def(
    ENGINE,
    "collection-timeout",
    "duration",
    ENGINE_DEFAULTS.collectionTimeoutSeconds,
    "upper bound of one collection (a collector's own timeout may be shorter)",
  ),
  def(
    ENGINE,
    "horizontal-pod-autoscaler-tolerance",
    "float",
    0.1,
    "the HPA controller's tolerance, used by the scaling schedule adjuster",
  ),
  def(
    ENGINE,
    "allow-annotation-tokens",
    "bool",
    false,
    "accept backend tokens in HPA annotations (by default tokens come from flags or files only)",
  ),
  def(
    ENGINE,
    "allow-link-local-targets",
    "bool",
    false,
    "let HPA annotations name link-local addresses (cloud metadata endpoints are refused by default)",
  ),
  def(
    ENGINE,
    "allowed-metric-endpoints",
    "stringSlice",
    [],
    "URL patterns that the URLs of HPA annotations (json-path `endpoint`, `prometheus-server`, InfluxDB `address`, the replica guard's server URL) may match: `scheme://host[:port][/path-prefix]`, scheme http or https, host a name, an IP or `*.suffix` (any subdomain, not the suffix), port a number or `*` (none: the scheme's default), path a prefix on segment boundaries (repeatable or comma-separated). With this or --endpoints-in-own-namespace on, any other URL is a plan error, except the servers given by flags (--prometheus-server, --additional-prometheus-server, --influxdb-address, --estafette-prometheus-server-url or PROMETHEUS_SERVER_URL, --knative-prometheus-address with --knative-autoscaler); with neither, every URL is allowed",
  ),
  def(
    ENGINE,
    "endpoints-in-own-namespace",
    "bool",
    false,
    "let the URLs of HPA annotations name Services of the HPA's own namespace: host `svc.ns`, `svc.ns.svc` or `svc.ns.svc.CLUSTER_DOMAIN`, any port and path; other URLs must be a server given by flags or match --allowed-metric-endpoints",
  ),
  def(
    ENGINE,
    "cluster-domain",
    "string",
    DEFAULT_CLUSTER_DOMAIN,
    "the cluster's DNS domain (CLUSTER_DOMAIN of --endpoints-in-own-namespace)",
  ),
  def(
    ENGINE,
    "max-response-bytes",
    "int",
    DEFAULT_MAX_RESPONSE_BYTES,
    "largest backend response read, in bytes",
  ),

  def(
    BACKENDS,
    "prometheus-server",
    "string",
    null,
    "URL of the Prometheus server to query (prometheus-adapter's --prometheus-url)",
  ),
  def(
    BACKENDS,
    "prometheus-enforce-namespace-label",
    "string",
    null,
    "scope every PromQL query an HPA writes (prometheus metrics, the replica guard's query, Knative triggers) to its own namespace: each selector gets LABEL=\"<the HPA's namespace>\" (e.g. namespace); a query naming another namespace is a plan error",
  ),
  def(
    BACKENDS,
    "prometheus-server-token-file",
    "string",
    null,
    "file with a bearer token for --prometheus-server (re-read when it changes)",
  ),
  def(
    BACKENDS,
    "additional-prometheus-server",
    "stringArray",
    [],
    "another Prometheus server as alias=url, usable with prometheus-server-alias (repeatable)",
  ),
  def(
    BACKENDS,
    "additional-prometheus-server-token-file",
    "stringArray",
    [],
    "bearer token file for an additional server as alias=path (repeatable)",
  ),
  def(
    BACKENDS,
    "prometheus-query-timeout",
    "duration",
    PROMETHEUS_DEFAULTS.queryTimeoutSeconds,
    "timeout of one Prometheus query",
  ),
  def(
    BACKENDS,
    "skipper-ingress-metrics",
    "bool",
    SKIPPER_DEFAULTS.ingressMetrics,
    "collect requests-per-second of Ingresses from Skipper's metrics in Prometheus",
  ),
  def(
    BACKENDS,
    "skipper-routegroup-metrics",
    "bool",
    SKIPPER_DEFAULTS.routeGroupMetrics,
    "collect requests-per-second of RouteGroups from Skipper's metrics in Prometheus",
  ),
  def(
    BACKENDS,
    "skipper-backends-annotation",
    "stringArray",
    [...SKIPPER_DEFAULTS.backendsAnnotations],
    "annotation holding backend weights (JSON) for Skipper metrics (repeatable)",
  ),
  def(
    BACKENDS,
    "external-rps-metrics",
    "bool",
    EXTERNAL_RPS_DEFAULTS.enabled,
    "enable the External requests-per-second collector (per hostname)",
  ),
  def(
    BACKENDS,
    "external-rps-metric-name",
    "string",
    EXTERNAL_RPS_DEFAULTS.metricName,
    "Prometheus metric counting requests per hostname",
  ),
  def(
    BACKENDS,
    "influxdb-address",
    "string",
    null,
    "address of the InfluxDB 2.x server to query (e.g. http://localhost:8086)",
  ),
  def(BACKENDS, "influxdb-token", "string", null, "token for the InfluxDB 2.x server"),
  def(BACKENDS, "influxdb-org", "string", null, "organization of the InfluxDB 2.x server"),
  def(BACKENDS, "aws-external-metrics", "bool", false, "enable AWS SQS queue-length metrics"),
  def(
    BACKENDS,
    "aws-region",
    "stringSlice",
    [],
    "AWS regions that SQS metrics may name (repeatable or comma-separated)",
  ),
  def(
    BACKENDS,
    "aws-endpoint-url",
    "string",
    null,
    "SQS endpoint URL (an emulator or a VPC endpoint); AWS_ENDPOINT_URL works too",
  ),
  def(
    BACKENDS,
    "aws-sts-endpoint-url",
    "string",
    null,
    "STS endpoint URL for the roles KEDA aws-sqs-queue triggers assume; AWS_ENDPOINT_URL_STS works too",
  ),
  def(BACKENDS, "zmon-kariosdb-endpoint", "string", null, "URL of ZMON's KairosDB endpoint"),
  def(
    BACKENDS,
    "zmon-token-name",
    "string",
    DEFAULT_ZMON_TOKEN_NAME,
    "name of the token file (in --credentials-dir) used for ZMON",
  ),
  def(BACKENDS, "nakadi-endpoint", "string", null, "URL of the Nakadi API"),
  def(
    BACKENDS,
    "nakadi-token-name",
    "string",
    DEFAULT_NAKADI_TOKEN_NAME,
    "name of the token file (in --credentials-dir) used for Nakadi",
  ),
  def(BACKENDS, "token", "string", null, "static OAuth2 token for ZMON and Nakadi"),
  def(
    BACKENDS,
    "credentials-dir",
    "string",
    DEFAULT_CREDENTIALS_DIR,
    "folder with token files (NAME-token-secret)",
  ),

  def(
    SCHEDULES,
    "scaling-schedule",
    "bool",
    false,
    "enable ScalingSchedule and ClusterScalingSchedule metrics and their status controller",
  ),
  def(
    SCHEDULES,
    "scaling-schedule-default-scaling-window",
    "duration",
    DEFAULT_SCHEDULE_OPTIONS.defaultScalingWindowSeconds,
    "ramp-up and ramp-down window of schedules that set none",
  ),
  def(
    SCHEDULES,
    "scaling-schedule-ramp-steps",
    "int",
    DEFAULT_SCHEDULE_OPTIONS.rampSteps,
    "steps of a ramp",
  ),
  def(
    SCHEDULES,
    "scaling-schedule-default-time-zone",
    "string",
    DEFAULT_SCHEDULE_OPTIONS.defaultTimeZone,
    "time zone of schedules that name none",
  ),

  def(
    GUARD,
    "estafette-hpa-scaler",
    "bool",
    false,
    "run the replica guard: estafette.io/hpa-scaler* annotations raise an HPA's minReplicas from a Prometheus query and cap each scale-down (leader only; needs patch on HPAs)",
  ),
  def(
    GUARD,
    "estafette-hpa-scaler-interval",
    "duration",
    90,
    "time between two passes of the replica guard, jittered by up to 25%",
  ),
  def(
    GUARD,
    "estafette-minimum-replicas-lower-bound",
    "int",
    null,
    "lowest minReplicas the guard sets (default: env MINIMUM_REPLICAS_LOWER_BOUND, else 3)",
  ),
  def(
    GUARD,
    "estafette-prometheus-server-url",
    "string",
    null,
    "Prometheus of the guard's queries (default: env PROMETHEUS_SERVER_URL, else --prometheus-server with its token)",
  ),
  def(
    GUARD,
    "estafette-max-concurrent-queries",
    "int",
    8,
    "guard queries in flight at once (one slow Prometheus never holds up the other HPAs)",
  ),

  def(
    KNATIVE,
    "knative-autoscaler",
    "bool",
    false,
    "reconcile Knative PodAutoscalers of class hpa.autoscaling.knative.dev (and Deployments and StatefulSets with that class annotation) into HPAs from autoscaler-keda's annotations, through the ScaledObject autoscaler-keda would create (in memory) and KEDA's HPA of it (HPAs written by the leader; metrics served by every replica)",
  ),
  def(
    KNATIVE,
    "knative-prometheus-address",
    "string",
    DEFAULT_KNATIVE_PROMETHEUS_ADDRESS,
    "Prometheus of custom metrics without autoscaling.knative.dev/prometheus-address (autoscaler-keda's autoscaler.keda.prometheus-address)",
  ),
  def(
    KNATIVE,
    "knative-cluster-trigger-authentication-namespace",
    "string",
    "keda",
    "namespace of the Secrets a ClusterTriggerAuthentication names (KEDA's own namespace)",
  ),
  def(
    KNATIVE,
    "knative-scaled-object-auto-create",
    "bool",
    true,
    "create and update the HPAs (autoscaler.keda.scaledobject-autocreate); the annotation scaled-object-auto-create overrides it",
  ),

  def(
    KEDA,
    "keda-scaled-objects",
    "bool",
    false,
    "serve KEDA ScaledObjects as KEDA v2.20.2 does: write the HPA and the status KEDA's operator writes (leader only) and serve their external metrics under KEDA's names; ScaledObjects whose HPA keda-operator manages are left to KEDA",
  ),
  def(
    KEDA,
    "keda-scaled-object-selector",
    "string",
    "",
    "label selector of the ScaledObjects this adapter owns (with --keda-scaled-objects); empty: all",
  ),
  def(
    KEDA,
    "keda-cluster-object-namespace",
    "string",
    "keda",
    "namespace of the Secrets and ConfigMaps a ClusterTriggerAuthentication names (KEDA's KEDA_CLUSTER_OBJECT_NAMESPACE)",
  ),

  def(
    DELEGATION,
    "delegate-external-metrics",
    "string",
    null,
    "HTTPS base URL of another adapter (KEDA's metrics server, prometheus-adapter) that serves the external metrics no HPA of ours asks for: such reads are forwarded to it once authorized, and its discovery joins ours",
  ),
  def(
    DELEGATION,
    "delegate-custom-metrics",
    "string",
    null,
    "HTTPS base URL of another adapter that serves the custom metrics no HPA of ours asks for",
  ),
  def(
    DELEGATION,
    "delegate-ca-file",
    "string",
    null,
    "CA bundle (PEM) that verifies the delegates' serving certificates (default: the system's roots)",
  ),
  def(
    DELEGATION,
    "delegate-insecure-skip-tls-verify",
    "bool",
    false,
    "do not verify the delegates' serving certificates",
  ),
  def(
    DELEGATION,
    "delegate-client-cert-file",
    "string",
    null,
    "client certificate (PEM) to present to the delegates instead of the token",
  ),
  def(
    DELEGATION,
    "delegate-client-key-file",
    "string",
    null,
    "private key (PEM) of --delegate-client-cert-file",
  ),
  def(
    DELEGATION,
    "delegate-token-file",
    "string",
    DELEGATE_DEFAULTS.tokenFile,
    "bearer token presented to the delegates, re-read when it changes (default: the adapter's service-account token; none when the file does not exist)",
  ),
  def(
    DELEGATION,
    "delegate-discovery-interval",
    "duration",
    DELEGATE_DEFAULTS.discoveryIntervalSeconds,
    "how often the delegates' discovery lists are fetched again (a delegate that does not answer drops out of ours)",
  ),

  def(
    PROMETHEUS_ADAPTER,
    "prometheus-adapter-config",
    "string",
    null,
    "prometheus-adapter's config file (its --config): its rules are served as custom metrics and its externalRules as external metrics, from --prometheus-server, for the reads no HPA annotation of ours covers; a bad file fails the start, the file is re-read every 10s and a good new version replaces the old (a bad edit is logged, the last good one keeps serving); its resourceRules, when the file has them, serve metrics.k8s.io/v1beta1 (PodMetrics and NodeMetrics for kubectl top and the HPA's cpu and memory Resource metrics: register the APIService v1beta1.metrics.k8s.io, in place of metrics-server)",
  ),
  def(
    PROMETHEUS_ADAPTER,
    "metrics-relist-interval",
    "duration",
    PROMETHEUS_ADAPTER_DEFAULTS.relistIntervalSeconds,
    "how often the series of every rule are listed again (as prometheus-adapter's flag); a read of a metric not listed yet lists the rules that could name it at once",
  ),
  def(
    PROMETHEUS_ADAPTER,
    "metrics-max-age",
    "duration",
    null,
    "series with a sample in this period are discovered (as prometheus-adapter's flag; default: --metrics-relist-interval, and never less)",
  ),
  def(
    PROMETHEUS_ADAPTER,
    "prometheus-adapter-max-query-length",
    "int",
    PROMETHEUS_ADAPTER_DEFAULTS.maxQueryLength,
    'longest query sent for a read of several objects, in characters (0: no limit): a longer one (a pod=~"a|b|..." matcher of many pods) is split into several queries',
  ),

  def(LOGGING, "log-format", "string", "text", "text or json (one JSON object per line)"),
  def(
    LOGGING,
    "v",
    "int",
    0,
    "verbosity: 0 changes and errors, 2 every collection, 4 every request",
  ),
];

/** Flags of the offline commands (`plan`): serve's collector switches decide what is enabled. */
export const COLLECTOR_SWITCH_FLAGS: readonly string[] = [
  "prometheus-server",
  "skipper-ingress-metrics",
  "skipper-routegroup-metrics",
  "external-rps-metrics",
  "influxdb-address",
  "aws-external-metrics",
  "zmon-kariosdb-endpoint",
  "nakadi-endpoint",
  "scaling-schedule",
  "knative-autoscaler",
];

/** The defaults of a set of flags. */
export function flagDefaults(defs: readonly FlagDef[]): FlagValues {
  const out: FlagValues = {};
  for (const d of defs) out[d.name] = Array.isArray(d.default) ? [...d.default] : d.default;
  return out;
}

/** The result of parsing a command line. */
export interface ParsedArgs {
  values: FlagValues;
  /** Names of the flags given on the command line (canonical names). */
  given: Set<string>;
  positionals: string[];
}

function convert(d: FlagDef, raw: string): string | number | boolean {
  switch (d.type) {
    case "bool":
      if (raw === "true" || raw === "1") return true;
      if (raw === "false" || raw === "0") return false;
      throw new UsageError(`invalid value "${raw}" for --${d.name}: want true or false`);
    case "int": {
      if (!/^[+-]?\d+$/.test(raw)) {
        throw new UsageError(`invalid value "${raw}" for --${d.name}: want an integer`);
      }
      return Number(raw);
    }
    case "float": {
      const n = Number(raw);
      if (raw.trim() === "" || !Number.isFinite(n)) {
        throw new UsageError(`invalid value "${raw}" for --${d.name}: want a number`);
      }
      return n;
    }
    case "duration":
      try {
        return parseDuration(raw);
      } catch {
        throw new UsageError(
          `invalid value "${raw}" for --${d.name}: want a duration like 30s, 5m, 1h`,
        );
      }
    default:
      return raw;
  }
}

/**
 * Parse `--name value`, `--name=value`, `-name=value` and bare boolean flags (`--flag`,
 * `--flag=false`) against `defs`. Repeated stringArray/stringSlice flags accumulate (slices also
 * split on commas); other repeated flags keep the last value. `--` ends the flags. Unknown flags
 * and missing values throw `UsageError`.
 */
export function parseArgs(argv: readonly string[], defs: readonly FlagDef[]): ParsedArgs {
  const byName = new Map<string, FlagDef>();
  for (const d of defs) {
    byName.set(d.name, d);
    for (const a of d.aliases ?? []) byName.set(a, d);
  }
  const values = flagDefaults(defs);
  const given = new Set<string>();
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      positionals.push(arg);
      continue;
    }
    const body = arg.replace(/^--?/, "");
    const eq = body.indexOf("=");
    const name = eq >= 0 ? body.slice(0, eq) : body;
    const d = byName.get(name);
    if (!d) throw new UsageError(`unknown flag ${arg.split("=")[0]}`);
    let raw: string;
    if (eq >= 0) raw = body.slice(eq + 1);
    else if (d.type === "bool") raw = "true";
    else {
      if (i + 1 >= argv.length) throw new UsageError(`flag --${d.name} needs a value`);
      raw = argv[++i];
    }
    if (d.type === "stringArray" || d.type === "stringSlice") {
      const parts = d.type === "stringSlice"
        ? raw.split(",").map((s) => s.trim()).filter(Boolean)
        : [raw];
      const prev = given.has(d.name) ? (values[d.name] as string[]) : [];
      values[d.name] = [...prev, ...parts];
    } else {
      values[d.name] = convert(d, raw);
    }
    given.add(d.name);
  }
  return { values, given, positionals };
}

/** Read a string flag (null when unset). */
export function stringFlag(values: FlagValues, name: string): string | null {
  const v = values[name];
  return typeof v === "string" && v !== "" ? v : null;
}

/** Read a numeric flag (int, float or duration in seconds). */
export function numberFlag(values: FlagValues, name: string): number {
  const v = values[name];
  if (typeof v !== "number") throw new Error(`flag --${name} is not numeric`);
  return v;
}

/** Read a numeric flag that has no default (null when unset). */
export function optionalNumberFlag(values: FlagValues, name: string): number | null {
  const v = values[name];
  return v === null || v === undefined ? null : numberFlag(values, name);
}

/** Read a boolean flag. */
export function boolFlag(values: FlagValues, name: string): boolean {
  return values[name] === true;
}

/** Read a list flag. */
export function listFlag(values: FlagValues, name: string): string[] {
  const v = values[name];
  return Array.isArray(v) ? v : [];
}

/** Which collector types the flags enable (`plan` reports metrics whose collector is disabled). */
export function enabledCollectors(values: FlagValues): Set<string> {
  const on = new Set<string>(["json-path"]);
  if (
    stringFlag(values, "prometheus-server") ||
    listFlag(values, "additional-prometheus-server").length
  ) {
    on.add("prometheus");
    if (
      boolFlag(values, "skipper-ingress-metrics") || boolFlag(values, "skipper-routegroup-metrics")
    ) {
      on.add("skipper");
    }
    if (boolFlag(values, "external-rps-metrics")) on.add("requests-per-second");
  }
  // the HPAs the Knative reconciler makes name their Prometheus in their annotations
  if (boolFlag(values, "knative-autoscaler")) on.add("prometheus");
  if (stringFlag(values, "influxdb-address")) on.add("influxdb");
  if (boolFlag(values, "aws-external-metrics")) on.add("sqs-queue-length");
  if (boolFlag(values, "keda-scaled-objects")) {
    for (const t of KEDA_COLLECTED_TYPES) on.add(kedaCollectorType(t));
  }
  if (stringFlag(values, "zmon-kariosdb-endpoint")) on.add("zmon");
  if (stringFlag(values, "nakadi-endpoint")) on.add("nakadi");
  if (boolFlag(values, "scaling-schedule")) {
    on.add("scaling-schedule");
    on.add("cluster-scaling-schedule");
  }
  return on;
}

/** Every collector type this adapter knows (what `plan` assumes without collector flags). */
export const ALL_COLLECTORS: readonly string[] = [
  "json-path",
  "prometheus",
  "skipper",
  "requests-per-second",
  "influxdb",
  "sqs-queue-length",
  "zmon",
  "nakadi",
  "scaling-schedule",
  "cluster-scaling-schedule",
];
