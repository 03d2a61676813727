/**
 * Collector descriptors: for each collector type its names, the metric types it serves, what
 * enables it, and the zod schema of its config (selector labels and annotations merged). `plan`
 * and the collector factories read a metric's config through the same schema, so one mistake
 * has one message, made in one place, naming the HPA, the metric, the key and the value.
 */
import { z } from "zod";
import { type EndpointPolicy, endpointPolicyActive } from "../endpoint_policy.ts";
import { quote } from "../quote.ts";
import type { MetricPlan, MetricType } from "../types.ts";

/**
 * What a config check may depend on besides the config: facts the operator set (no flag
 * spellings), and the HPA whose config is read.
 */
export interface ConfigContext {
  /** Link-local targets (cloud metadata endpoints) may be named (default false). */
  allowLinkLocalTargets?: boolean;
  /**
   * The namespace of the HPA whose metric config is read (`planHpa` sets it per HPA); checks
   * that depend on it (the endpoint policy's own-namespace rule) need it.
   */
  namespace?: string;
  /**
   * Where the URLs an HPA names may point (`endpoint`, `prometheus-server`, `address`); no
   * rule (the default) allows every URL but link-local ones.
   */
  endpointPolicy?: EndpointPolicy;
  /**
   * Rewrites a PromQL query an HPA wrote so that it reads only its own namespace's series
   * (`--prometheus-enforce-namespace-label`): returns the rewritten query or throws an Error
   * that says why the query cannot be scoped. Passed in so that the core stays free of the
   * parser unless the operator asks for it (see core/promql_scope.ts `scopePromQL`).
   */
  scopePromQL?: PromQLScoper;
}

/** Rewrites `query` to read only `namespace`'s series, or throws (see ConfigContext). */
export type PromQLScoper = (query: string, namespace: string) => string;

/** The zod schema of one collector's config for one metric type. */
export type ConfigSchema<C> = z.ZodType<C, Record<string, string>>;

/** One collector type. */
export interface CollectorDescriptor<C = unknown> {
  /** The type as annotations and plans write it (`json-path`, `prometheus`). */
  readonly type: string;
  /** Legacy names that also select it (External `matchLabels.type` or metric name). */
  readonly aliases?: readonly string[];
  /** The metric types it serves. */
  readonly metricTypes: readonly MetricType[];
  /**
   * What to start the adapter with for it to run (for "not enabled" messages), for the kind
   * of the metric's described object when that matters.
   */
  readonly enabledBy: string | ((describedKind: string | undefined) => string);
  /** The schema of its config for `metricType` under `context`. */
  schema(metricType: MetricType, context: ConfigContext): ConfigSchema<C>;
  /**
   * The keys of a metric's merged config (selector labels and annotations) that hold a PromQL
   * query the HPA wrote, which the planner scopes to the HPA's namespace when
   * {@linkcode ConfigContext.scopePromQL} is set. None when absent.
   */
  promqlKeys?(config: Readonly<Record<string, string>>, metricType: MetricType): string[];
}

/** Where a metric's config came from, for messages. */
export interface ConfigOrigin {
  /** `Pods metric \`rps\` of HPA shop/web`. */
  what: string;
  /** The annotation prefix of its keys: `metric-config.pods.rps.json-path`. */
  annotationPrefix: string;
  /** Keys set by annotations (the rest came from the selector's matchLabels). */
  annotated: ReadonlySet<string>;
  metricType: MetricType;
}

/** The origin of a plan's config (every key counts as annotated: plans do not keep that). */
export function planOrigin(
  plan: MetricPlan,
  annotationCollector = plan.collector ?? "",
): ConfigOrigin {
  return {
    what: metricWhat(plan.metricType, plan.metricName, plan.hpa),
    annotationPrefix:
      `metric-config.${plan.metricType.toLowerCase()}.${plan.metricName}.${annotationCollector}`,
    annotated: new Set(Object.keys(plan.config)),
    metricType: plan.metricType,
  };
}

/** `External metric \`queue\` of HPA shop/web`. */
export function metricWhat(
  metricType: MetricType,
  metricName: string,
  hpa: { namespace: string; name: string },
): string {
  return `${metricType} metric \`${metricName}\` of HPA ${hpa.namespace}/${hpa.name}`;
}

/** The result of {@linkcode parseCollectorConfig}. */
export type ParsedConfig<C> = { ok: true; config: C } | { ok: false; errors: string[] };

/**
 * Read a metric's config with a descriptor's schema. Each problem becomes one message:
 * `invalid <key> "<value>" for <what> (<where it was set>): <why>`, `<what> needs <key>` for a
 * missing one, `<what> <why>` for a problem of several keys.
 *
 * @example
 * ```ts
 * const r = parseCollectorConfig(jsonPathDescriptor, config, origin, {});
 * if (!r.ok) r.errors; // ["invalid port \"x\" for Pods metric `rps` of HPA shop/web ..."]
 * ```
 */
export function parseCollectorConfig<C>(
  descriptor: CollectorDescriptor<C>,
  config: Readonly<Record<string, string>>,
  origin: ConfigOrigin,
  context: ConfigContext = {},
): ParsedConfig<C> {
  const result = schemaOf(descriptor, origin.metricType, context).safeParse({ ...config });
  if (result.success) return { ok: true, config: result.data };
  const errors: string[] = [];
  for (const issue of result.error.issues) {
    const message = issueMessage(issue, config, origin);
    if (!errors.includes(message)) errors.push(message);
  }
  return { ok: false, errors };
}

/**
 * Scope the PromQL queries of a metric's config to its HPA's namespace with
 * {@linkcode ConfigContext.scopePromQL} (issue 25's `--prometheus-enforce-namespace-label`):
 * each key {@linkcode CollectorDescriptor.promqlKeys} names is replaced in `config` by the
 * rewritten query. Returns one message per query that cannot be scoped, as
 * {@linkcode parseCollectorConfig} words them; nothing to do without a scoper or a namespace.
 *
 * @example
 * ```ts
 * const errors = scopeConfigQueries(prometheusDescriptor, config, origin, {
 *   namespace: "shop",
 *   scopePromQL: (q, ns) => scopePromQL(q, { label: "namespace", value: ns }),
 * });
 * config.query; // 'sum(rate(http_requests_total{namespace="shop"}[1m]))'
 * ```
 */
export function scopeConfigQueries(
  descriptor: CollectorDescriptor<unknown>,
  config: Record<string, string>,
  origin: ConfigOrigin,
  context: ConfigContext,
): string[] {
  const scope = context.scopePromQL;
  const namespace = context.namespace;
  if (scope === undefined || namespace === undefined || descriptor.promqlKeys === undefined) {
    return [];
  }
  const errors: string[] = [];
  for (const key of descriptor.promqlKeys(config, origin.metricType)) {
    const value = config[key];
    try {
      config[key] = scope(value, namespace);
    } catch (e) {
      errors.push(
        `invalid ${key} ${quote(value)} for ${origin.what} (${whereText(key, origin)}): ${
          (e as Error).message
        }`,
      );
    }
  }
  return errors;
}

/**
 * A descriptor's schema for a metric type and context, made once: building a zod schema costs
 * far more than parsing with it, and every HPA's metrics are parsed at each start.
 */
const schemas = new WeakMap<CollectorDescriptor, Map<string, ConfigSchema<unknown>>>();

function schemaOf<C>(
  descriptor: CollectorDescriptor<C>,
  metricType: MetricType,
  context: ConfigContext,
): ConfigSchema<C> {
  let byKey = schemas.get(descriptor as CollectorDescriptor);
  if (byKey === undefined) {
    byKey = new Map();
    schemas.set(descriptor as CollectorDescriptor, byKey);
  }
  const key = `${metricType}|${contextKey(context)}`;
  let schema = byKey.get(key);
  if (schema === undefined) {
    schema = descriptor.schema(metricType, context) as ConfigSchema<unknown>;
    byKey.set(key, schema);
  }
  return schema as ConfigSchema<C>;
}

/** A number per endpoint policy object, for schema keys. */
const policyIds = new WeakMap<EndpointPolicy, number>();
let lastPolicyId = 0;

/**
 * The part of a schema's key a context gives: every fact of the context a schema reads must be
 * part of it. The namespace is, only where a fact depends on it (one schema per namespace then).
 */
function contextKey(context: ConfigContext): string {
  let key = `${context.allowLinkLocalTargets === true}`;
  const policy = context.endpointPolicy;
  if (policy !== undefined && endpointPolicyActive(policy)) {
    let id = policyIds.get(policy);
    if (id === undefined) policyIds.set(policy, id = ++lastPolicyId);
    key += `|policy ${id}|${context.namespace ?? ""}`;
  }
  return key;
}

/** Where a key is set, or to set: the annotation, or the selector label. */
function whereText(key: string, origin: ConfigOrigin): string {
  return origin.annotated.has(key) || origin.metricType === "Pods"
    ? `annotation ${origin.annotationPrefix}/${key}`
    : `matchLabels.${key}`;
}

function issueMessage(
  issue: z.core.$ZodIssue,
  config: Readonly<Record<string, string>>,
  origin: ConfigOrigin,
): string {
  const key = typeof issue.path[0] === "string" ? issue.path[0] : undefined;
  if (key === undefined) return `${origin.what} ${issue.message}`;
  const value = config[key];
  if (value === undefined || issue.message.startsWith(REQUIRED)) {
    const where = origin.metricType === "Pods"
      ? `annotation ${origin.annotationPrefix}/${key}`
      : `matchLabels.${key} or annotation ${origin.annotationPrefix}/${key}`;
    // (a required key's issue may name the alternatives: "required (or json-eval)")
    return `${origin.what} needs ${where}${issue.message.slice(REQUIRED.length)}`;
  }
  return `invalid ${key} ${quote(value)} for ${origin.what} (${
    whereText(key, origin)
  }): ${issue.message}`;
}

/**
 * The message of a missing required key (formatted by {@linkcode parseCollectorConfig}); what
 * follows it is added to the message (`required (or json-eval)`).
 */
export const REQUIRED = "required";

/**
 * A config key read by `read`: `read` returns the typed value or throws an Error whose message
 * says why (`want a number from 1 to 65535`). Absent keys are `undefined` unless `required`.
 */
export function configKey<T>(
  read: (value: string) => T,
  options: { required: true },
): z.ZodType<T, string>;
export function configKey<T>(
  read: (value: string) => T,
  options?: { required?: false },
): z.ZodType<T | undefined, string | undefined>;
export function configKey<T>(
  read: (value: string) => T,
  options: { required?: boolean } = {},
): z.ZodType<T | undefined, string | undefined> {
  const base = options.required
    ? z.string({ error: REQUIRED })
    : z.string({ error: "want a string" }).optional();
  return base.transform((value, ctx): T | undefined => {
    if (value === undefined) return undefined;
    try {
      return read(value);
    } catch (e) {
      ctx.addIssue({ code: "custom", message: (e as Error).message });
      return z.NEVER;
    }
  }) as z.ZodType<T | undefined, string | undefined>;
}
