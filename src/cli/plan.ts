/**
 * `plan`: reads HorizontalPodAutoscaler manifests and shows, per metric, which collector would
 * collect it, how often, with which config, or what to add or change. Offline: nothing is
 * queried. Serve's collector flags say which collectors count as enabled; without any, all do.
 * Each metric goes through exactly what `serve` runs before it collects: the plan, then the
 * collector's factory with the same flags, so a metric `plan` calls OK is one `serve` starts.
 * Meant for people (table) and for CI (`--output json`, `--strict`).
 */
import { PLAN_INFO } from "./command_info.ts";
import { type Command, type CommandIO, UsageError } from "./command.ts";
import {
  type DelegateCheck,
  delegateUrls,
  servedByDelegate,
  servedByRules,
} from "./delegate_options.ts";
import {
  type AdapterPlan,
  type AdapterPlanContext,
  PLAN_POD_NAMES,
} from "../core/prometheus_adapter/mod.ts";
import { planAdapterRulesFromFlags } from "./prometheus_adapter_plan.ts";
import {
  COLLECTOR_SWITCH_FLAGS,
  enabledCollectors,
  type FlagDef,
  type FlagValues,
  listFlag,
  numberFlag,
  parseArgs,
  SERVE_FLAGS,
  stringFlag,
} from "./flags.ts";
import { readManifests } from "../cluster/manifests.ts";
import type { CollectorRegistry } from "../collectors/registry.ts";
import { collectorRegistry } from "./collectors.ts";
import { BackendNotConfiguredError } from "../collectors/types.ts";
import { formatDuration } from "../core/duration.ts";
import { InvalidHpaError } from "../core/kubernetes/hpa.ts";
import { planHpa, type PlanOptions } from "../core/kube_metrics_adapter/plan.ts";
import { shortenValues } from "../core/quote.ts";
import type { MetricPlan } from "../core/types.ts";
import { redactConfig } from "../api/status_model.ts";
import { FORMULA_TYPE } from "../core/kube_metrics_adapter/configs/formula.ts";
import {
  ESTAFETTE_ENABLED_ANNOTATION,
  guardRunsQuery,
  guardServerUrlProblem,
  parseGuardConfig,
  scopeGuardQuery,
} from "../core/estafette/guard.ts";
import type { EndpointPolicy } from "../core/endpoint_policy.ts";
import type { PromQLScoper } from "../core/kube_metrics_adapter/collector_config.ts";
import { endpointPolicyFromFlags } from "./endpoint_options.ts";
import { promqlScoperFromFlags } from "./promql_options.ts";
import { collectionLimitsFromFlags, limitMetricsPerNamespace } from "./collection_limits.ts";
import { controllerRef, type KubeObject } from "../cluster/types.ts";
import { guardSettings } from "./guard_options.ts";
import { isKnativeHpaClass, knativeScaledObjectFor } from "../core/knative/mapping.ts";
import { type KedaRow, kedaRowText, kedaScaledObjectRow } from "./keda_plan.ts";
import { isScaledObject, isTriggerAuthentication } from "../core/keda/scaled_object.ts";
import { dump as dumpYaml } from "js-yaml";

const PLAN = "Plan";

/** The flags of `plan`: its own, then every flag of `serve` (collector switches matter). */
export const PLAN_FLAGS: readonly FlagDef[] = [
  {
    group: PLAN,
    name: "filename",
    type: "stringSlice",
    default: [],
    help: "manifest file or folder to read (repeatable or comma-separated)",
    aliases: ["f"],
  },
  {
    group: PLAN,
    name: "output",
    type: "string",
    default: "table",
    help: "table (for people) or json (one element per metric)",
    aliases: ["o"],
  },
  {
    group: PLAN,
    name: "strict",
    type: "bool",
    default: false,
    help: "exit 1 when any metric cannot be collected (for CI)",
  },
  ...SERVE_FLAGS,
];

/** One element of `plan --output json`, keys in this order. */
export interface PlanRow {
  hpa: string;
  metricType: MetricPlan["metricType"];
  metricName: string;
  collector: string | null;
  intervalSeconds: number;
  minPodReadyAgeSeconds: number;
  perReplica: boolean;
  config: Record<string, string>;
  error: string | null;
  /** A formula input that spec.metrics does not list: collected, not served. */
  hidden?: true;
  /** A formula: its expression, activation target, and each identifier's metric. */
  formula?: {
    expression: string;
    activationTarget?: number;
    /** identifier -> `<Type>/<metric>`. */
    inputs: Record<string, string>;
  };
  fallback?: MetricPlan["fallback"];
  warnings?: string[];
  /** The delegate adapter that serves it (issue 26): no collector of ours takes it. */
  delegate?: string;
  /**
   * The rule of `--prometheus-adapter-config` that serves it (issue 49): no collector of ours
   * takes it. Its read, rule, series and query, or the rules that could serve it.
   */
  prometheusAdapter?: AdapterPlan & {
    /** Why only the rules that could serve it are named (the series were not looked up). */
    unchecked?: string;
  };
}

/** One HPA the replica guard (`estafette.io/hpa-scaler: "true"`) would change, in `--output json`. */
export interface GuardRow {
  hpa: string;
  /** The guard's config as parsed, defaults included. */
  replicaGuard: {
    prometheusQuery: string;
    requestsPerReplica: number | string;
    delta: number | string;
    prometheusServerUrl: string;
    scaleDownMaxRatio: number;
    deploymentChecking: boolean;
  };
  warnings?: string[];
}

/** The replica guard's reading of an HPA, or null when its switch is not exactly "true". */
export function guardRow(
  object: KubeObject,
  defaultPrometheusUrl: string,
  endpointPolicy?: EndpointPolicy,
  scopePromQL?: PromQLScoper,
): GuardRow | null {
  const annotations = object.metadata?.annotations;
  if (annotations?.[ESTAFETTE_ENABLED_ANNOTATION] !== "true") return null;
  const parsed = parseGuardConfig(annotations, { defaultPrometheusUrl });
  const all = [...parsed.warnings];
  // the query as the guard would run it: scoped to the HPA's namespace, or refused
  const scoped = scopeGuardQuery(parsed.config, {
    namespace: object.metadata.namespace ?? "default",
    name: object.metadata.name,
  }, scopePromQL);
  if (scoped.error !== undefined) all.push(scoped.error);
  const config = scoped.error === undefined ? scoped.config : parsed.config;
  const refused = guardRunsQuery(config)
    ? guardServerUrlProblem(config, {
      hpa: { namespace: object.metadata.namespace ?? "default", name: object.metadata.name },
      policy: endpointPolicy,
    })
    : undefined;
  if (refused !== undefined) all.push(refused);
  const owner = controllerRef(object);
  if (owner) {
    all.push(
      `the HPA is controlled by ${owner.kind} ${owner.name}, which owns its minReplicas: the replica guard leaves it alone`,
    );
  }
  if (config.prometheusQuery !== "" && config.prometheusServerUrl === "") {
    all.push(
      "no Prometheus to ask: set --estafette-prometheus-server-url (or PROMETHEUS_SERVER_URL, or --prometheus-server) or the estafette.io/hpa-scaler-prometheus-server-url annotation",
    );
  }
  // NaN and Inf have no JSON: written in words
  const num = (n: number): number | string => Number.isFinite(n) ? n : String(n);
  const row: GuardRow = {
    hpa: `${object.metadata.namespace ?? "default"}/${object.metadata.name}`,
    replicaGuard: {
      prometheusQuery: config.prometheusQuery,
      requestsPerReplica: num(config.requestsPerReplica),
      delta: num(config.delta),
      prometheusServerUrl: config.prometheusServerUrl,
      scaleDownMaxRatio: config.scaleDownMaxRatio,
      deploymentChecking: config.deploymentChecking,
    },
  };
  if (all.length > 0) row.warnings = all.map(shortenValues);
  return row;
}

function guardText(g: GuardRow): string {
  const c = g.replicaGuard;
  const delta = typeof c.delta !== "number"
    ? ` + ${c.delta}`
    : c.delta > 0
    ? ` + ${c.delta}`
    : c.delta < 0
    ? ` - ${-c.delta}`
    : "";
  const query = c.prometheusQuery === ""
    ? "no query"
    : `ceil(query / ${c.requestsPerReplica}${delta}), query ${
      JSON.stringify(c.prometheusQuery)
    } on ${c.prometheusServerUrl || "(no Prometheus)"}`;
  return `replica guard of ${g.hpa}: minReplicas from ${query}; scale-down cap ${c.scaleDownMaxRatio} of the current replicas${
    c.deploymentChecking ? " (off during a rollout)" : ""
  }`;
}

/**
 * A Knative PodAutoscaler or annotated workload, as `plan` shows it: its in-memory ScaledObject's
 * row (KEDA's HPA, each trigger's metric), or why it maps to none.
 */
export interface KnativeRow extends KedaRow {
  /** Whether the HPA is created (`scaled-object-auto-create`). */
  autoCreate?: boolean;
}

const KNATIVE_SOURCE_KINDS: readonly string[] = ["PodAutoscaler", "Deployment", "StatefulSet"];

/**
 * The factory's verdict on a plan `planHpa` found no error in, as `serve` builds its collector:
 * the error it throws, or null. A backend the flags do not set up counts only when collector
 * flags were given (`assumeBackends` false).
 */
export function collectorError(
  plan: MetricPlan,
  options: { registry: CollectorRegistry; flags: FlagValues; assumeBackends: boolean },
): string | null {
  if (plan.error !== null || plan.collector === null || plan.collector === FORMULA_TYPE) {
    return null;
  }
  const factory = options.registry.lookup(plan.collector, plan.metricType);
  if (!factory) {
    return `collector "${plan.collector}" is not available for ${plan.metricType} metrics`;
  }
  try {
    factory.create({ plan });
    return null;
  } catch (e) {
    if (e instanceof BackendNotConfiguredError && options.assumeBackends) return null;
    return shortenValues(e instanceof Error ? e.message : String(e));
  }
}

/** The JSON shape of one plan. */
export function planRow(plan: MetricPlan): PlanRow {
  const row: PlanRow = {
    hpa: `${plan.hpa.namespace}/${plan.hpa.name}`,
    metricType: plan.metricType,
    metricName: plan.metricName,
    collector: plan.collector,
    intervalSeconds: plan.intervalSeconds,
    minPodReadyAgeSeconds: plan.minPodReadyAgeSeconds,
    perReplica: plan.perReplica,
    config: plan.config,
    error: plan.error,
  };
  if (plan.hidden) row.hidden = true;
  if (plan.formula) {
    row.formula = { expression: plan.formula.expression, inputs: {} };
    if (plan.formula.activationTarget !== undefined) {
      row.formula.activationTarget = plan.formula.activationTarget;
    }
    for (const i of plan.formula.inputs) {
      row.formula.inputs[i.identifier] = `${i.metricType}/${i.metricName}`;
    }
  }
  if (plan.fallback) row.fallback = { ...plan.fallback };
  if (plan.warnings && plan.warnings.length > 0) row.warnings = plan.warnings;
  return row;
}

function table(rows: PlanRow[]): string {
  const header = ["HPA", "TYPE", "METRIC", "COLLECTOR", "INTERVAL", "STATUS"];
  const cells = rows.map((r) => [
    r.hpa,
    r.metricType,
    r.metricName,
    r.collector ?? "-",
    // a formula is computed after each collection of its inputs
    r.formula ? "-" : formatDuration(r.intervalSeconds),
    r.error ??
      (r.prometheusAdapter !== undefined
        ? r.prometheusAdapter.candidates !== undefined
          ? "OK if Prometheus has its series (prometheus-adapter)"
          : `served by prometheus-adapter's ${r.prometheusAdapter.rule}`
        : r.delegate !== undefined
        ? `served by the delegate ${r.delegate}`
        : r.hidden
        ? "OK (formula input, not served)"
        : "OK"),
  ]);
  const widths = header.slice(0, -1).map((h, i) =>
    Math.max(h.length, ...cells.map((c) => c[i].length))
  );
  const line = (c: string[]): string =>
    c.map((v, i) => (i < widths.length ? v.padEnd(widths[i]) : v)).join("  ").trimEnd();
  const out = [line(header)];
  // an HPA's own warnings are on each of its plans: show each once per HPA
  const shown = new Map<string, Set<string>>();
  rows.forEach((r, i) => {
    out.push(line(cells[i]));
    if (r.formula) {
      const inputs = Object.entries(r.formula.inputs).map(([id, m]) => `${id} = ${m}`);
      out.push(
        `    formula: ${r.formula.expression}${inputs.length > 0 ? ` (${inputs.join(", ")})` : ""}${
          r.formula.activationTarget !== undefined
            ? `; activation target ${r.formula.activationTarget} (shown, not enforced)`
            : ""
        }`,
      );
    }
    const pa = r.prometheusAdapter;
    if (pa !== undefined) {
      out.push(`    read: ${pa.read}`);
      if (pa.rule !== undefined) {
        out.push(
          `    rule: ${pa.rule}${pa.series !== undefined ? ` (series ${pa.series})` : ""}`,
        );
      }
      if (pa.candidates !== undefined) {
        out.push(`    rules that could serve it: ${pa.candidates.join(", ")}`);
      }
      if (pa.unchecked !== undefined) out.push(`    (${pa.unchecked})`);
      if (pa.query !== undefined) out.push(`    query: ${pa.query}`);
      if (pa.query !== undefined && r.metricType === "Pods") {
        out.push(`    (${PLAN_POD_NAMES.join(", ")}: the pods the HPA selects, at each read)`);
      }
    }
    const named = r.config["query-name"];
    if (named !== undefined && r.config.query !== undefined && r.config[named] === r.config.query) {
      // the legacy form's query, as it will be sent (the JSON has it as config.query)
      out.push(`    query (${named}, named by query-name): ${redactConfig(r.config).query}`);
    }
    if (r.fallback) {
      out.push(
        `    fallback: after more than ${
          plural(r.fallback.failureThreshold, "failed collection")
        } in a row, ${plural(r.fallback.replicas, "replica")} (${r.fallback.behavior})`,
      );
    }
    const seen = shown.get(r.hpa) ?? new Set<string>();
    shown.set(r.hpa, seen);
    for (const w of r.warnings ?? []) {
      if (seen.has(w)) continue;
      seen.add(w);
      out.push(`    warning: ${w}`);
    }
  });
  return out.join("\n") + "\n";
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** What `plan` (and the admission webhook) plan with: the options serve's flags make. */
export interface PlanSetup {
  options: PlanOptions;
  /** The factory check of each plan (collectorError). */
  check: { registry: CollectorRegistry; flags: FlagValues; assumeBackends: boolean };
  /** The delegates of the metrics no collector of ours takes. */
  delegation: DelegateCheck;
  /** `--max-metrics-per-namespace` (0: none). */
  maxMetricsPerNamespace: number;
  /** The replica guard's default Prometheus. */
  guardPrometheusUrl: string;
  knativeConfig: { prometheusAddress?: string };
  /**
   * prometheus-adapter's rules (`--prometheus-adapter-config`): what they discovered, and why
   * the series are not known (`plan` without `--prometheus-server`), or null.
   */
  prometheusAdapter?: { context: () => AdapterPlanContext; offline: string | null };
}

/**
 * The plan options of serve's flags, as `serve` plans: collectors enabled only as the flags say
 * when any collector flag was given (`given`), else all assumed enabled.
 */
export async function planSetupFromFlags(
  values: FlagValues,
  setupOptions: PlanSetupOptions,
): Promise<PlanSetup> {
  const { given, env } = setupOptions;
  const collectorFlagsGiven = COLLECTOR_SWITCH_FLAGS.some((f) => given.has(f)) ||
    given.has("additional-prometheus-server");
  const limits = collectionLimitsFromFlags(values);
  const options = {
    defaultIntervalSeconds: numberFlag(values, "default-collection-interval"),
    minIntervalSeconds: limits.minIntervalSeconds,
    metricsTtlSeconds: numberFlag(values, "metrics-ttl"),
    allowLinkLocalTargets: values["allow-link-local-targets"] === true,
    enabledCollectors: collectorFlagsGiven ? enabledCollectors(values) : undefined,
    endpointPolicy: endpointPolicyFromFlags(values, env),
    scopePromQL: await promqlScoperFromFlags(values),
  };
  const registry = collectorRegistry(values);
  return {
    options,
    check: { registry, flags: values, assumeBackends: !collectorFlagsGiven },
    delegation: {
      urls: delegateUrls(values),
      enabledCollectors: options.enabledCollectors,
      registry,
    },
    maxMetricsPerNamespace: limits.maxMetricsPerNamespace,
    guardPrometheusUrl: guardSettings(values, env).options.prometheus?.url ?? "",
    knativeConfig: {
      prometheusAddress: stringFlag(values, "knative-prometheus-address") ?? undefined,
    },
    ...(setupOptions.prometheusAdapter
      ? { prometheusAdapter: setupOptions.prometheusAdapter }
      : {}),
  };
}

/** Options of {@linkcode planSetupFromFlags}. */
export interface PlanSetupOptions {
  /** The flags given on the command line (collector flags decide what counts as enabled). */
  given: ReadonlySet<string>;
  env: Record<string, string | undefined>;
  /** prometheus-adapter's rules, when `--prometheus-adapter-config` is given. */
  prometheusAdapter?: PlanSetup["prometheusAdapter"];
}

/** What {@linkcode planObjects} found. */
export interface PlannedObjects {
  /** One per metric of each HPA (those Knative and KEDA objects map to included). */
  rows: PlanRow[];
  guards: GuardRow[];
  knative: KnativeRow[];
  keda: KedaRow[];
  /** The HPAs the Knative reconciler and KEDA would create. */
  generated: KubeObject[];
  /** HPAs that cannot be read at all, with where they came from. */
  invalid: { source: string; message: string }[];
  /** How many HPAs were planned. */
  hpas: number;
}

/**
 * Plan objects as `serve` would: HPAs, ScaledObjects (with the TriggerAuthentications among
 * them) and Knative PodAutoscalers or annotated workloads; other kinds are skipped. With
 * `countOnly`, the HPAs it names are planned for `--max-metrics-per-namespace` only: their rows
 * are left out (the admission webhook passes the other HPAs of the namespace so).
 */
export function planObjects(
  objects: readonly { object: KubeObject; source: string; countOnly?: boolean }[],
  setup: PlanSetup,
): PlannedObjects {
  const { options, check, delegation, knativeConfig } = setup;
  const rows: PlanRow[] = [];
  const guards: GuardRow[] = [];
  const invalid: { source: string; message: string }[] = [];
  let hpas = 0;
  // Knative PodAutoscalers and annotated workloads: the HPA the reconciler would make
  const knative: KnativeRow[] = [];
  const generated: KubeObject[] = [];
  const targets: { object: KubeObject; source: string; countOnly?: boolean }[] = [];
  // KEDA ScaledObjects: the HPA KEDA (and this adapter, --keda-scaled-objects) would write
  const keda: KedaRow[] = [];
  const authentications = objects.filter(({ object }) => isTriggerAuthentication(object))
    .map(({ object }) => object);
  for (const { object, source, countOnly } of objects) {
    if (countOnly) {
      if (object.kind === "HorizontalPodAutoscaler") targets.push({ object, source, countOnly });
      continue;
    }
    if (isScaledObject(object)) {
      const row = kedaScaledObjectRow(object, authentications);
      keda.push(row.row);
      if (row.hpa !== undefined) generated.push(row.hpa);
      continue;
    }
    if (object.kind === "HorizontalPodAutoscaler") {
      targets.push({ object, source });
      continue;
    }
    if (!KNATIVE_SOURCE_KINDS.includes(object.kind ?? "") || !isKnativeHpaClass(object)) continue;
    const from = `${object.kind} ${object.metadata.namespace ?? "default"}/${object.metadata.name}`;
    // the ScaledObject autoscaler-keda would create, then what KEDA makes of it
    const result = knativeScaledObjectFor(object, knativeConfig, {
      ...(options.endpointPolicy ? { endpointPolicy: options.endpointPolicy } : {}),
      ...(options.scopePromQL ? { scopePromQL: options.scopePromQL } : {}),
    });
    if ("error" in result) {
      knative.push({ source: from, metrics: [], error: result.error, warnings: result.warnings });
      continue;
    }
    const { row, hpa } = kedaScaledObjectRow(
      result.scaledObject as unknown as KubeObject,
      authentications,
      { owner: result.owner, source: from },
    );
    knative.push({
      ...row,
      ...(row.error === undefined ? { autoCreate: result.autoCreate } : {}),
      warnings: [...result.warnings, ...row.warnings],
    });
    if (hpa !== undefined) generated.push(hpa);
  }
  const planned: { hpa: KubeObject; plans: MetricPlan[]; countOnly?: boolean }[] = [];
  for (const { object, source, countOnly } of targets) {
    if (!countOnly) {
      hpas++;
      const guard = guardRow(
        object,
        setup.guardPrometheusUrl,
        options.endpointPolicy,
        options.scopePromQL,
      );
      if (guard) guards.push(guard);
    }
    try {
      const plans = planHpa(object, options);
      for (const plan of plans) plan.error ??= collectorError(plan, check);
      planned.push({ hpa: object, plans, countOnly });
    } catch (e) {
      if (!(e instanceof InvalidHpaError)) throw e;
      if (!countOnly) invalid.push({ source, message: e.message });
    }
  }
  // the plans beyond --max-metrics-per-namespace, in the engine's order
  limitMetricsPerNamespace(planned, setup.maxMetricsPerNamespace);
  const rules = setup.prometheusAdapter;
  const context = rules?.context();
  for (const { plans, countOnly } of planned) {
    if (countOnly) continue;
    for (const plan of plans) {
      const row = planRow(plan);
      // as serve answers a read: ours, else prometheus-adapter's rules, else the delegate
      const adapter = servedByRules(plan, context, delegation);
      if (adapter !== null) {
        Object.assign(row, {
          error: adapter.error ?? null,
          prometheusAdapter: adapter.candidates !== undefined && rules?.offline
            ? { ...adapter, unchecked: rules.offline }
            : adapter,
        });
        rows.push(row);
        continue;
      }
      const delegate = servedByDelegate(plan, delegation);
      if (delegate !== null) Object.assign(row, { error: null, delegate });
      rows.push(row);
    }
  }
  return { rows, guards, knative, keda, generated, invalid, hpas };
}

/** The `plan` command. */
export const planCommand: Command = {
  ...PLAN_INFO,
  async run(args: string[], io: CommandIO): Promise<number> {
    const parsed = parseArgs(args, PLAN_FLAGS);
    if (parsed.positionals.length > 0) {
      throw new UsageError(
        `unexpected argument "${parsed.positionals[0]}" (name manifests with -f FILE|DIR)`,
      );
    }
    const files = listFlag(parsed.values, "filename");
    if (files.length === 0) throw new UsageError("plan needs -f FILE|DIR");
    const output = stringFlag(parsed.values, "output") ?? "table";
    if (output !== "table" && output !== "json" && output !== "yaml") {
      throw new UsageError(`invalid value "${output}" for --output: want table, json or yaml`);
    }
    const strict = parsed.values.strict === true;
    const rules = await planAdapterRulesFromFlags(parsed.values, {
      given: parsed.given,
      fetch: globalThis.fetch,
      now: io.now,
    });
    const setup = await planSetupFromFlags(parsed.values, {
      given: parsed.given,
      env: io.env,
      ...(rules
        ? { prometheusAdapter: { context: () => rules.context, offline: rules.offline } }
        : {}),
    });
    const { options } = setup;

    const read = await readManifests(files);
    let failed = read.errors.length > 0;
    for (const e of read.errors) io.stderr(`error: ${e}\n`);

    const { rows, guards, knative, keda, generated, invalid, hpas } = planObjects(
      read.objects,
      setup,
    );
    for (const { source, message } of invalid) {
      failed = true;
      io.stderr(`error: ${source}: ${message}\n`);
    }
    if (hpas === 0 && knative.length === 0 && keda.length === 0 && read.errors.length === 0) {
      io.stderr(`no HorizontalPodAutoscaler found in ${files.join(", ")}\n`);
    }

    const knativeErrors = knative.filter((k) => k.error !== undefined);
    const kedaErrors = keda.filter((k) => k.error !== undefined);
    const errors = rows.filter((r) => r.error !== null).length + knativeErrors.length +
      kedaErrors.length;
    if (output === "yaml") {
      // the HPAs the Knative reconciler and KEDA's would create; what they cannot map goes to
      // stderr
      for (const k of [...knativeErrors, ...kedaErrors]) {
        io.stderr(`error: ${k.source}: ${k.error}\n`);
      }
      io.stdout(generated.map((h) => dumpYaml(h, { lineWidth: -1, noRefs: true })).join("---\n"));
    } else if (output === "json") {
      io.stdout(JSON.stringify([...rows, ...guards, ...knative, ...keda], null, 2) + "\n");
    } else if (rows.length > 0 || guards.length > 0 || knative.length > 0 || keda.length > 0) {
      for (const k of keda) io.stdout(kedaRowText(k));
      for (const k of knative) {
        if (k.error !== undefined || k.autoCreate) io.stdout(kedaRowText(k, "knative"));
        else {
          io.stdout(
            `knative ${k.source} -> HorizontalPodAutoscaler ${k.hpa} (not created: scaled-object-auto-create is false)\n`,
          );
          for (const w of k.warnings) io.stdout(`    warning: ${w}\n`);
        }
      }
      const warnings = new Set(
        [...rows, ...guards].flatMap((r) => (r.warnings ?? []).map((w) => `${r.hpa} ${w}`)),
      );
      if (rows.length > 0) io.stdout(table(rows));
      for (const g of guards) {
        io.stdout(`${guardText(g)}\n`);
        for (const w of g.warnings ?? []) io.stdout(`    warning: ${w}\n`);
      }
      io.stdout(
        `\n${plural(rows.length, "metric")} in ${plural(hpas, "HPA")}${
          keda.length > 0 ? `, ${plural(keda.length, "ScaledObject")}` : ""
        }: ${plural(errors, "error")}, ${plural(warnings.size, "warning")}${
          options.enabledCollectors ? "" : " (all collectors assumed enabled)"
        }\n`,
      );
    }
    if (failed) return 1;
    return strict && errors > 0 ? 1 : 0;
  },
};
