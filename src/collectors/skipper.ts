/**
 * The `skipper` collector: Object metric `requests-per-second` of an Ingress or a RouteGroup,
 * from Skipper's request counter in Prometheus, with the PromQL kube-metrics-adapter builds:
 *
 *     scalar(sum(rate(skipper_serve_host_duration_seconds_count{host=~"<hosts>"}[1m])) * <weight>)
 *
 * `<hosts>` are the object's hosts (Ingress `spec.rules[].host`, RouteGroup `spec.hosts`) with
 * dots turned into underscores, regexp-quoted and joined by `|`; `<weight>` is the share of the
 * traffic going to the `backend` label's backend (Ingress: the JSON annotations named by
 * `backendsAnnotations`; RouteGroup: `spec.defaultBackends[].weight`), printed with
 * four decimals. When the HPA target has no `averageValue` (Kubernetes < 1.14 style), the value
 * is divided by the scale target's replicas, as the original does.
 *
 * Differences, on purpose: rules without a host are left out (the original added an empty
 * alternative that matched nothing); a hostname with a regexp metacharacter (`*`) gets its
 * backslash doubled so that the PromQL string stays valid (the original's query failed to
 * parse); Rollouts count as scale targets; zero replicas is an error.
 */
import type { Kind, KubeObject } from "../cluster/types.ts";
import { skipperDescriptor } from "../core/kube_metrics_adapter/configs/skipper.ts";
import type { MetricPlan } from "../core/types.ts";
import {
  collectPrometheus,
  defaultPrometheusServer,
  type PrometheusBackends,
  prometheusBackends,
  type PrometheusOptions,
  scaleTargetKind,
} from "./prometheus.ts";
import type { PrometheusClient } from "./prometheus_client.ts";
import type {
  CollectContext,
  Collector,
  CollectorFactory,
  CollectorFactoryOptions,
  CollectResult,
} from "./types.ts";
import { BackendNotConfiguredError, planConfig } from "./types.ts";

/** Skipper's per-host request counter. */
export const SKIPPER_RPS_SERIES = "skipper_serve_host_duration_seconds_count";

/** The metric name skipper serves (optionally `requests-per-second,<backend>`, deprecated). */
export const RPS_METRIC_NAME = "requests-per-second";

/**
 * A number as Go's `%.4f` prints it: four decimals, exact halves rounded to even (JavaScript's
 * `toFixed` rounds them up).
 *
 * @example
 * ```ts
 * formatWeight(0.4); // "0.4000"
 * formatWeight(0.03125); // "0.0312"
 * ```
 */
export function formatWeight(weight: number): string {
  if (Number.isNaN(weight)) return "NaN";
  if (!Number.isFinite(weight)) return weight > 0 ? "+Inf" : "-Inf";
  const sign = weight < 0 || Object.is(weight, -0) ? "-" : "";
  const abs = Math.abs(weight);
  // An exact half at the fifth decimal is an odd multiple of 1/32 (10^4 / 2 = 2^4 * 625).
  const t = abs * 32;
  if (Number.isInteger(t) && t % 2 === 1 && abs < 1e15) {
    let n = Math.floor(abs * 1e4);
    if (n % 2 === 1) n += 1;
    return `${sign}${Math.floor(n / 1e4)}.${String(n % 1e4).padStart(4, "0")}`;
  }
  const s = abs.toFixed(4);
  return `${sign}${s}`;
}

/** Go's `regexp.QuoteMeta`: a backslash before each of `\.+*?()|[]{}^$`. */
export function quoteMeta(s: string): string {
  return s.replace(/[\\.+*?()|[\]{}^$]/g, "\\$&");
}

/** A host as Skipper labels it (dots to underscores), quoted as a regexp. */
export function skipperHostPattern(host: string): string {
  return quoteMeta(host.replaceAll(".", "_"));
}

/**
 * The PromQL of Skipper's requests per second over `hosts`, times `weight` (a fraction, 1 for
 * all traffic).
 *
 * @example
 * ```ts
 * skipperRpsQuery({ hosts: ["example.org"], weight: 0.4 });
 * // scalar(sum(rate(skipper_serve_host_duration_seconds_count{host=~"example_org"}[1m])) * 0.4000)
 * ```
 */
export function skipperRpsQuery(options: { hosts: readonly string[]; weight: number }): string {
  // A PromQL double-quoted string reads `\` as an escape: double it so the regexp gets it.
  const hosts = options.hosts.map(skipperHostPattern).join("|").replaceAll("\\", "\\\\");
  return `scalar(sum(rate(${SKIPPER_RPS_SERIES}{host=~"${hosts}"}[1m])) * ${
    formatWeight(options.weight)
  })`;
}

/** The backend error of the original, when weights exist but no backend is named. */
const BACKEND_MISSING =
  "backend name must be specified for requests-per-second when traffic switching is used";

/** Options of {@linkcode ingressBackendWeight}. */
export interface IngressWeightOptions {
  /** The Ingress' annotations. */
  annotations: Record<string, string>;
  /** The annotations holding backend weights (`SkipperOptions.backendsAnnotations`), in order. */
  backendAnnotations: readonly string[];
  /** The `backend` label ("" for none). */
  backend: string;
}

function annotationWeight(raw: string, backend: string, anno: string): number {
  let doc: unknown;
  try {
    doc = JSON.parse(raw);
  } catch (e) {
    throw new Error(`invalid JSON in annotation ${anno}: ${(e as Error).message}`);
  }
  if (doc === null) return 0;
  if (typeof doc !== "object" || Array.isArray(doc)) {
    throw new Error(`invalid annotation ${anno}: want a JSON object of backend weights`);
  }
  const weights = doc as Record<string, unknown>;
  for (const [k, v] of Object.entries(weights)) {
    if (v !== null && typeof v !== "number") {
      throw new Error(
        `invalid weight ${JSON.stringify(v)} of backend "${k}" in annotation ${anno}`,
      );
    }
  }
  const w = Object.hasOwn(weights, backend) ? weights[backend] : undefined;
  return typeof w === "number" ? w / 100 : 0;
}

/**
 * The traffic share of `backend` on an Ingress: 1 when none of the backend annotations is
 * present; else the largest weight given to `backend` over those annotations (percent / 100,
 * 0 when it is not listed). Throws for invalid JSON and when weights exist but no backend is
 * named.
 */
export function ingressBackendWeight(options: IngressWeightOptions): number {
  let max = 0;
  let present = false;
  for (const anno of options.backendAnnotations) {
    if (!Object.hasOwn(options.annotations, anno)) continue;
    present = true;
    max = Math.max(max, annotationWeight(options.annotations[anno], options.backend, anno));
  }
  if (!present) return 1;
  if (options.backend === "") throw new Error(BACKEND_MISSING);
  return max;
}

/**
 * The traffic share of `backend` on a RouteGroup from `spec.defaultBackends`: 1 with at most
 * one backend; else its `weight` / 100 (0 when it is not listed). Throws when there are several
 * backends and none is named.
 */
export function routeGroupBackendWeight(defaultBackends: unknown, backend: string): number {
  const list = Array.isArray(defaultBackends) ? defaultBackends : [];
  if (list.length <= 1) return 1;
  if (backend === "") throw new Error(BACKEND_MISSING);
  for (const b of list) {
    if (b && typeof b === "object" && (b as Record<string, unknown>).backendName === backend) {
      const w = (b as Record<string, unknown>).weight;
      return typeof w === "number" ? w / 100 : 0;
    }
  }
  return 0;
}

/** The hosts of an Ingress (`spec.rules[].host`) or RouteGroup (`spec.hosts`), empty left out. */
export function skipperHosts(kind: "Ingress" | "RouteGroup", obj: KubeObject): string[] {
  const raw: unknown[] = kind === "Ingress"
    ? (Array.isArray(obj.spec?.rules) ? obj.spec.rules : []).map((r: { host?: unknown }) => r?.host)
    : Array.isArray(obj.spec?.hosts)
    ? obj.spec.hosts
    : [];
  return raw.filter((h): h is string => typeof h === "string" && h !== "");
}

/** The backend of a skipper metric: the `backend` key, else `requests-per-second,<backend>`. */
export function skipperBackend(metricName: string, backend: string | undefined): string {
  if (backend !== undefined) return backend;
  const parts = metricName.split(",");
  return parts.length === 2 && parts[0] === RPS_METRIC_NAME ? parts[1] : "";
}

/** What the operator sets for skipper metrics. */
export interface SkipperOptions {
  /** Serve requests-per-second of Ingresses (default false). */
  ingressMetrics?: boolean;
  /** Serve requests-per-second of RouteGroups (default false). */
  routeGroupMetrics?: boolean;
  /** Ingress annotations holding backend weights (JSON), in order (default none). */
  backendsAnnotations?: readonly string[];
  /** The Prometheus server the queries go to (its default server). */
  prometheus?: PrometheusOptions;
}

/** The defaults of {@linkcode SkipperOptions}. */
export const SKIPPER_DEFAULTS: {
  readonly ingressMetrics: boolean;
  readonly routeGroupMetrics: boolean;
  readonly backendsAnnotations: readonly string[];
} = { ingressMetrics: false, routeGroupMetrics: false, backendsAnnotations: [] };

interface SkipperPlanConfig {
  kind: "Ingress" | "RouteGroup";
  name: string;
  backend: string;
  backendAnnotations: readonly string[];
  /** Divide by replicas: the target has no averageValue. */
  average: boolean;
  client: PrometheusClient;
}

class SkipperCollector implements Collector {
  readonly queryKey: string;
  readonly kinds: readonly Kind[];
  readonly #plan: MetricPlan;
  readonly #config: SkipperPlanConfig;
  readonly #backends: PrometheusBackends;

  constructor(plan: MetricPlan, config: SkipperPlanConfig, backends: PrometheusBackends) {
    this.#plan = plan;
    this.#config = config;
    this.#backends = backends;
    const ns = plan.hpa.namespace;
    const target = plan.scaleTargetRef;
    const targetKind = scaleTargetKind(target);
    this.kinds = config.average && targetKind ? [config.kind, targetKind] : [config.kind];
    this.queryKey = `skipper|${
      JSON.stringify([
        config.client.url,
        ns,
        config.kind,
        config.name,
        config.backend,
        config.average ? [target.kind, target.name] : null,
      ])
    }`;
  }

  /** The query for the object as it is now. */
  #query(ctx: CollectContext): string {
    const { kind, name, backend } = this.#config;
    const ns = this.#plan.hpa.namespace;
    const label = `${kind} ${ns}/${name}`;
    const obj = ctx.cluster.get(kind, ns, name);
    if (!obj) throw new Error(`${label} not found`);
    let weight: number;
    try {
      weight = kind === "Ingress"
        ? ingressBackendWeight({
          annotations: obj.metadata.annotations ?? {},
          backendAnnotations: this.#config.backendAnnotations,
          backend,
        })
        : routeGroupBackendWeight(obj.spec?.defaultBackends, backend);
    } catch (e) {
      throw new Error(`${(e as Error).message} (${label})`);
    }
    const hosts = skipperHosts(kind, obj);
    if (hosts.length === 0) {
      throw new Error(`no hosts defined on ${label}, unable to collect requests-per-second`);
    }
    return skipperRpsQuery({ hosts, weight });
  }

  /** The engine's deadline is at least the query timeout. */
  timeoutMs(): number {
    return this.#backends.timeoutSeconds * 1000;
  }

  async collect(ctx: CollectContext): Promise<CollectResult> {
    const plan = this.#plan;
    return await collectPrometheus(this.#config.client, this.#query(ctx), {
      backends: this.#backends,
      ctx,
      metricName: plan.metricName,
      objectName: this.#config.name,
      perReplica: this.#config.average
        ? {
          namespace: plan.hpa.namespace,
          scaleTargetRef: plan.scaleTargetRef,
          context: `metric ${plan.metricName} (no averageValue target, so averaged over replicas)`,
        }
        : null,
    });
  }
}

/**
 * Object `requests-per-second` (or `requests-per-second,<backend>`) on an Ingress
 * (`ingressMetrics`) or RouteGroup (`routeGroupMetrics`), queried on the default server of
 * `options.prometheus`. Config key: `backend` (optional). Throws when a server URL of the
 * Prometheus options is not an http(s) URL.
 *
 * @example
 * ```ts
 * const factory = createSkipperFactory({
 *   ingressMetrics: true,
 *   prometheus: { server: { url: "http://prometheus:9090" } },
 * });
 * factory.type; // "skipper"
 * ```
 */
export function createSkipperFactory(skipper: SkipperOptions = {}): CollectorFactory {
  const backends = prometheusBackends(skipper.prometheus ?? {});
  const enabled = {
    Ingress: skipper.ingressMetrics ?? SKIPPER_DEFAULTS.ingressMetrics,
    RouteGroup: skipper.routeGroupMetrics ?? SKIPPER_DEFAULTS.routeGroupMetrics,
  };
  const backendAnnotations = [
    ...(skipper.backendsAnnotations ?? SKIPPER_DEFAULTS.backendsAnnotations),
  ];
  return {
    type: "skipper",
    metricTypes: ["Object"],
    create(options: CollectorFactoryOptions): Collector {
      const { plan } = options;
      const d = plan.describedObject;
      if (!d || (d.kind !== "Ingress" && d.kind !== "RouteGroup") || !d.name) {
        throw new Error(
          `metric ${plan.metricName} of type skipper needs a describedObject of kind Ingress or RouteGroup`,
        );
      }
      if (
        plan.metricName !== RPS_METRIC_NAME && !plan.metricName.startsWith(`${RPS_METRIC_NAME},`)
      ) {
        throw new Error(`skipper serves only ${RPS_METRIC_NAME}, not metric ${plan.metricName}`);
      }
      const config = planConfig(skipperDescriptor, plan, {
        allowLinkLocalTargets: backends.allowLinkLocal,
      });
      const average = plan.target.averageValue === undefined;
      if (average && scaleTargetKind(plan.scaleTargetRef) === undefined) {
        const ref = plan.scaleTargetRef;
        throw new Error(
          `metric ${plan.metricName} has no averageValue target, so it is averaged over replicas, but scale target ${ref.kind}/${ref.name} is not a Deployment, StatefulSet or Rollout`,
        );
      }
      if (!enabled[d.kind]) {
        const flag = d.kind === "Ingress"
          ? "skipper-ingress-metrics"
          : "skipper-routegroup-metrics";
        throw new BackendNotConfiguredError(
          `skipper metrics of ${d.kind} objects are not enabled (start with --${flag})`,
        );
      }
      const client = defaultPrometheusServer(backends, {
        type: "skipper",
        metricName: plan.metricName,
      });
      return new SkipperCollector(plan, {
        kind: d.kind,
        name: d.name,
        backend: skipperBackend(plan.metricName, config.backend),
        backendAnnotations,
        average,
        client,
      }, backends);
    },
  };
}

/**
 * `skipper` with the default options: nothing enabled (kept for callers that have not moved
 * to {@linkcode createSkipperFactory}).
 */
export const skipperFactory: CollectorFactory = createSkipperFactory();
