/**
 * `explain NAMESPACE/NAME`: the facts of one HPA as text, for a person asking "why does my HPA
 * get no metric?". Online (`--status-url http://HOST:PORT`) it reads the running adapter's
 * `/status.json` (version 1, api/status_model.ts): each metric's collector, interval, state,
 * last value and its age, error, fallback and its last episode, hidden formula inputs, selector
 * and annotations apart, the ScalingSchedules' value now and next changes, the replica guard's
 * last decision, and the replica count computed there next to the HPA's status. Offline
 * (`-f FILE|DIR`) it plans each metric as `plan` does, evaluates the ScalingSchedules it uses
 * now and over the next 24 hours, and says what would be collected; a Knative PodAutoscaler of
 * class `hpa.autoscaling.knative.dev` (or an annotated Deployment or StatefulSet) in the
 * manifests is explained through the HPA the Knative reconciler would make for it, when no HPA
 * of that name is given.
 *
 * With neither `--status-url` nor `-f`, the status document is read through kube-apiserver's
 * service proxy with the kubeconfig's credentials (explain_proxy.ts): no port-forward.
 *
 * Exit code 0 when the HPA gets all its metrics (online: every metric collected, hidden input or
 * fallback; offline: every metric planned without error), 1 otherwise, 2 for a usage error or
 * an HPA that is not there.
 */
import { EXPLAIN_INFO } from "./command_info.ts";
import { type Command, type CommandIO, UsageError } from "./command.ts";
import { delegateUrls, servedByDelegate, servedByRules } from "./delegate_options.ts";
import { planAdapterRulesFromFlags } from "./prometheus_adapter_plan.ts";
import {
  COLLECTOR_SWITCH_FLAGS,
  enabledCollectors,
  type FlagDef,
  listFlag,
  numberFlag,
  parseArgs,
  SERVE_FLAGS,
  stringFlag,
} from "./flags.ts";
import { readManifests } from "../cluster/manifests.ts";
import type { KubeObject } from "../cluster/types.ts";
import { collectorRegistry } from "./collectors.ts";
import { scheduleOptionsFromFlags } from "./status_source.ts";
import { collectorError } from "./plan.ts";
import type { StatusGet } from "./explain_proxy.ts";
import { endpointPolicyFromFlags } from "./endpoint_options.ts";
import { promqlScoperFromFlags } from "./promql_options.ts";
import { collectionLimitsFromFlags, limitMetricsPerNamespace } from "./collection_limits.ts";
import { formatDuration } from "../core/duration.ts";
import { InvalidHpaError } from "../core/kubernetes/hpa.ts";
import { planHpa } from "../core/kube_metrics_adapter/plan.ts";
import { isKnativeHpaClass, knativeScaledObjectFor } from "../core/knative/mapping.ts";
import { isScaledObject, isTriggerAuthentication } from "../core/keda/scaled_object.ts";
import { kedaRowText, kedaScaledObjectRow } from "./keda_plan.ts";
import type { LabelSelector, MetricPlan, MetricTarget } from "../core/types.ts";
import { FORMULA_TYPE } from "../core/kube_metrics_adapter/configs/formula.ts";
import {
  annotationConfig,
  delegatedText,
  fallbackText,
  findSchedule,
  guardCapText,
  guardOutcomeText,
  type HpaStatus,
  type MetricStatus,
  redactConfig,
  redactSelector,
  type ReplicaGuardStatus,
  type ScaledObjectStatus,
  scheduleChangeTexts,
  scheduleLabel,
  scheduleRefOf,
  type ScheduleStatus,
  scheduleStatus,
  selectorText,
  type StatusReport,
} from "../api/status_model.ts";

const EXPLAIN = "Explain";

/** The flags of `explain`: its own, then every flag of `serve` (they shape the offline plan). */
export const EXPLAIN_FLAGS: readonly FlagDef[] = [
  {
    group: EXPLAIN,
    name: "status-url",
    type: "string",
    default: null,
    help: "a running adapter's --metrics-address as http://HOST:PORT (reads /status.json)",
  },
  {
    group: EXPLAIN,
    name: "service-namespace",
    type: "string",
    default: "hpa-metrics-adapter",
    help:
      "without --status-url and -f: the namespace of the adapter's Service, read through kube-apiserver's service proxy",
  },
  {
    group: EXPLAIN,
    name: "service-name",
    type: "string",
    default: "hpa-metrics-adapter",
    help: "without --status-url and -f: the adapter's Service",
  },
  {
    group: EXPLAIN,
    name: "service-port",
    type: "string",
    default: "metrics",
    help: "without --status-url and -f: the Service port (name or number) of --metrics-address",
  },
  {
    group: EXPLAIN,
    name: "service-scheme",
    type: "string",
    default: "http",
    help: "without --status-url and -f: http, or https when the port is TLS",
  },
  {
    group: EXPLAIN,
    name: "filename",
    type: "stringSlice",
    default: [],
    help: "manifest file or folder to read offline (repeatable or comma-separated)",
    aliases: ["f"],
  },
  ...SERVE_FLAGS,
];

/** How long the status document may take. */
const FETCH_TIMEOUT_MS = 10_000;

/** The states in which the HPA gets the metric (online). */
const SERVED_STATES = new Set(["collected", "hidden", "fallback", "delegated"]);

function parseName(raw: string): { namespace: string; name: string } {
  const m = /^([^/\s]+)\/([^/\s]+)$/.exec(raw);
  if (!m) throw new UsageError(`invalid HPA "${raw}": want NAMESPACE/NAME`);
  return { namespace: m[1], name: m[2] };
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** `AverageValue 20`, `Value 1`, `Utilization 80%`. */
function targetText(t: MetricTarget): string {
  if (t.type === "AverageValue") return `AverageValue ${t.averageValue ?? "?"}`;
  if (t.type === "Value") return `Value ${t.value ?? "?"}`;
  if (t.type === "Utilization") return `Utilization ${t.averageUtilization ?? "?"}%`;
  return "none";
}

/** A metric's selector and its `metric-config.*` annotations, apart (the planner merges them). */
function configFields(config: Record<string, string>, selector: LabelSelector | null): string {
  const shown = redactSelector(selector);
  const labels = shown ? selectorText(shown) : "";
  const parts = annotationConfig(redactConfig(config), shown).map(([k, v]) => `${k}=${v}`);
  return (labels !== "" ? field("selector", labels) : "") +
    field("config", parts.length > 0 ? parts.join(", ") : "none");
}

/** A schedule's value now and its next changes (a ramp's steps as one). */
function scheduleFields(s: ScheduleStatus): string {
  if (s.error !== null || s.steps.length === 0) return field("value now", `unknown: ${s.error}`);
  let out = field(
    "value now",
    `${s.steps[0].value} at ${s.from} (${scheduleLabel(s)}, ${s.active ? "active" : "not active"})`,
  );
  const { changes, more } = scheduleChangeTexts(s, 3);
  if (changes.length === 0) out += field("next change", `none until ${s.to}`);
  changes.forEach((c, i) => out += field(i === 0 ? "next change" : "then", c));
  if (more > 0) out += field("then", `${plural(more, "more change")} until ${s.to}`);
  return out;
}

/** The replica guard's last decision for the HPA. */
function guardFields(g: ReplicaGuardStatus): string {
  let out = "replica guard (estafette.io/hpa-scaler)\n";
  if (g.at === null) {
    return out + field("decided", "not yet (the guard decides on the leader, once per pass)");
  }
  out += field("decided", g.at);
  if (g.query !== null) {
    out += field(
      "query",
      `${JSON.stringify(g.query)} = ${g.queryValue === null ? "none" : number(g.queryValue)}`,
    );
  }
  if (g.minReplicas !== null) out += field("minReplicas", String(g.minReplicas));
  const cap = guardCapText(g);
  if (cap !== null) out += field("scale-down", cap);
  if (g.message !== null) out += field("decision", `${g.message} (${guardOutcomeText(g)})`);
  if (g.error !== null) out += field("error", g.error);
  return out;
}

/** The KEDA ScaledObject behind the HPA, and its scale loop (issue 48). */
function scaledObjectFields(so: ScaledObjectStatus): string {
  let out = `ScaledObject ${so.name}\n`;
  out += field(
    "served by",
    so.owner === "hpa-metrics-adapter"
      ? "this adapter (--keda-scaled-objects)"
      : so.owner === "keda-operator"
      ? "KEDA's operator"
      : "not this adapter",
  );
  const cond = (c: { status: string; reason?: string; message?: string } | null): string =>
    c === null
      ? "not written yet"
      : `${c.status}${c.reason ? ` ${c.reason}` : ""}${c.message ? `: ${c.message}` : ""}`;
  out += field("Ready", cond(so.ready));
  if (so.loop !== null) {
    out += field("Active", cond(so.loop.active));
    out += field("last active", so.loop.lastActiveTime ?? "never");
    if (so.loop.cooldownEndsAt !== null) out += field("cooldown end", so.loop.cooldownEndsAt);
    out += field("next", so.loop.next);
  }
  for (const t of so.triggers) {
    out += field(
      `trigger ${t.index}`,
      `${t.type}${t.name !== null ? ` (${t.name})` : ""}${
        t.metricName !== null ? `: ${t.metricName}` : ""
      }${t.activation !== null ? `, active above ${number(t.activation)}` : ""}${
        t.active === null ? "" : t.active ? ", active" : ", inactive"
      }`,
    );
  }
  return out;
}

/** `  label:        text`, the label padded so that the texts line up. */
function field(label: string, text: string): string {
  return `  ${`${label}:`.padEnd(14)}${text}\n`;
}

function metricTitle(
  i: number,
  total: number,
  type: string,
  name: string,
  hidden: boolean,
): string {
  return `metric ${i + 1} of ${total}: ${type} ${name}${
    hidden ? " (formula input, collected, not served)" : ""
  }\n`;
}

function collectorText(collector: string | null, intervalSeconds: number, formula: boolean) {
  if (collector === null) return "none";
  // a formula is computed after each collection of its inputs
  return formula
    ? `${collector}, after each collection of its inputs`
    : `${collector}, every ${formatDuration(intervalSeconds)}`;
}

function replicaRange(min: number | null, max: number | null): string {
  return `replicas ${min ?? 1}..${max ?? "?"}`;
}

// ---------------------------------------------------------------- online

function statusUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`invalid value "${raw}" for --status-url: want http://HOST:PORT`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UsageError(`invalid value "${raw}" for --status-url: want http://HOST:PORT`);
  }
  const path = url.pathname.replace(/\/+$/, "").replace(/\/status(\.json)?$/, "");
  return `${url.origin}${path}/status.json`;
}

/** A GET with the runtime's fetch (`--status-url`). */
const directGet: StatusGet = async (url) => {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  } catch (e) {
    const cause = (e as { cause?: { message?: string } }).cause?.message;
    throw new Error(`cannot read ${url}: ${cause ?? (e as Error).message}`);
  }
  return { status: res.status, body: await res.text() };
};

async function fetchReport(
  url: string,
  get: StatusGet = directGet,
  hint: (status: number, body: string) => string = (status) =>
    status === 404 ? " (is this the adapter's --metrics-address, with --status-page on?)" : "",
): Promise<StatusReport> {
  const { status, body } = await get(url);
  if (status !== 200) throw new Error(`${url} answered ${status}${hint(status, body)}`);
  let doc: StatusReport;
  try {
    doc = JSON.parse(body);
  } catch {
    throw new Error(`${url} did not answer JSON`);
  }
  if (doc?.version !== 1 || !Array.isArray(doc.hpas)) {
    throw new Error(
      `${url} answered a status document of version ${
        JSON.stringify(doc?.version)
      }: this explain reads version 1`,
    );
  }
  return doc;
}

function stateText(m: MetricStatus): string {
  switch (m.state) {
    case "failing":
      return `failing: ${plural(m.failures, "failed collection")} in a row${
        m.failingSince ? ` since ${m.failingSince}` : ""
      }`;
    case "fallback":
      return `fallback: the fallback value is served after ${
        plural(m.fallback?.consecutiveFailures ?? m.failures, "failed collection")
      } in a row`;
    case "pending":
      return "pending: not collected yet";
    case "hidden":
      return "collected (a formula input, not served)";
    case "delegated":
      return delegatedText(m.delegate);
    default:
      return m.state;
  }
}

/** A value without the float noise of an average (33.199999999999996 is 33.2). */
function number(v: number): string {
  return String(Number(v.toPrecision(12)));
}

function valueText(m: MetricStatus): string {
  if (m.value === null) return "none";
  const age = m.ageSeconds === null ? "" : `, ${Math.round(m.ageSeconds)}s old`;
  const samples = m.type === "Pods" ? `, the average over ${plural(m.samples, "pod")}` : "";
  return `${number(m.value)} (at ${m.valueAt}${age}${samples})`;
}

function onlineText(h: HpaStatus, doc: StatusReport, url: string): string {
  let out = `HPA ${h.namespace}/${h.name} (from ${url})\n`;
  if (h.scaleTargetRef) {
    out += field(
      "scale target",
      `${h.scaleTargetRef.kind} ${h.scaleTargetRef.name}, ${
        replicaRange(h.minReplicas, h.maxReplicas)
      }`,
    );
  }
  out += field("state", h.state);
  const r = h.replicas;
  const n = (v: number | null): string => v === null ? "-" : String(v);
  out += field(
    "replicas",
    `status current ${n(r.current)}, desired ${n(r.desired)}; computed here ${n(r.computed)}`,
  );
  for (const reason of r.reasons) out += field("  why", reason);
  for (const e of h.errors) out += field("error", e);
  for (const w of h.warnings) out += field("warning", w);
  if (h.replicaGuard) out += guardFields(h.replicaGuard);
  // an older adapter's document has no scaledObject
  if (h.scaledObject) out += scaledObjectFields(h.scaledObject);
  h.metrics.forEach((m, i) => {
    out += metricTitle(i, h.metrics.length, m.type, m.name, m.hidden);
    out += field("collector", collectorText(m.collector, m.intervalSeconds, m.formula !== null));
    if (m.formula !== null) out += field("formula", m.formula);
    out += field("state", stateText(m));
    if (m.error !== null) out += field("error", m.error);
    else if (m.lastError !== null) {
      out += field("last error", `${m.lastError}${m.lastErrorAt ? ` (at ${m.lastErrorAt})` : ""}`);
    }
    out += field("value", valueText(m));
    // a document of an older adapter has no schedules
    const schedule = m.schedule ? findSchedule(doc, m.schedule) : undefined;
    if (schedule) out += scheduleFields(schedule);
    if (!m.hidden) out += field("target", targetText(m.target));
    if (m.fallback) out += field("fallback", fallbackText(m.fallback));
    out += configFields(m.config, m.selector ?? null);
  });
  return out;
}

async function runOnline(
  target: { namespace: string; name: string },
  source: { url: string; get?: StatusGet; hint?: (status: number, body: string) => string },
  io: CommandIO,
): Promise<number> {
  const url = source.url;
  const doc = await fetchReport(url, source.get, source.hint);
  const id = `${target.namespace}/${target.name}`;
  const h = doc.hpas.find((x) => x.namespace === target.namespace && x.name === target.name);
  if (!h) {
    io.stderr(
      `error: HPA ${id} not found in ${url} (the adapter knows ${
        plural(doc.hpas.length, "HPA")
      })\n`,
    );
    return 2;
  }
  io.stdout(onlineText(h, doc, url));
  const missing = h.metrics.filter((m) => !SERVED_STATES.has(m.state));
  for (const e of h.errors) io.stderr(`error: HPA ${id}: ${e}\n`);
  for (const m of missing) {
    io.stderr(
      `error: HPA ${id} metric ${m.type}/${m.name}: ${m.state}${m.error ? `: ${m.error}` : ""}\n`,
    );
  }
  if (missing.length > 0 || h.errors.length > 0) return 1;
  io.stdout(
    h.metrics.length === 0
      ? `\nHPA ${id}: the adapter serves none of its metrics\n`
      : `\nHPA ${id} gets all its metrics (${h.metrics.length})\n`,
  );
  return 0;
}

// ---------------------------------------------------------------- offline

/** What a plan's collector would fetch, in words, or null when the config says it all. */
function collectsText(plan: MetricPlan): string | null {
  const c = redactConfig(plan.config);
  if (plan.collector === "json-path") {
    const key = c["json-key"] ? `, the number at ${c["json-key"]}` : "";
    if (plan.metricType === "Pods") {
      const q = c["raw-query"] ? `?${c["raw-query"]}` : "";
      return `GET ${c.scheme ?? "http"}://<pod IP>:${c.port ?? "?"}${
        c.path ?? "/"
      }${q} of each ready pod of ${plan.scaleTargetRef.kind} ${plan.scaleTargetRef.name}${key}`;
    }
    if (c.endpoint) return `GET ${c.endpoint}${key}`;
  }
  if (plan.collector === "prometheus" && c.query) {
    return `the Prometheus query ${JSON.stringify(c.query)}${
      c["prometheus-server"] ? ` on ${c["prometheus-server"]}` : ""
    }`;
  }
  if (plan.collector === "influxdb" && c.query) {
    return `the Flux query ${JSON.stringify(c.query)}${c.address ? ` on ${c.address}` : ""}`;
  }
  return null;
}

/** A ScalingSchedule metric's value now and next changes, from the manifests read. */
function scheduleNow(
  plan: MetricPlan,
  objects: readonly KubeObject[],
  options: ReturnType<typeof scheduleOptionsFromFlags>,
  now: number,
): string | null {
  const ref = scheduleRefOf(plan);
  if (ref === null || plan.error !== null) return null;
  const obj = objects.find((o) =>
    o.kind === ref.kind && o.metadata.name === ref.name &&
    (ref.namespace === null || (o.metadata.namespace ?? "default") === ref.namespace)
  );
  if (!obj) {
    return field("value now", `unknown: ${scheduleLabel(ref)} is not in the manifests read`);
  }
  return scheduleFields(scheduleStatus(ref, obj, options, now));
}

/** The kinds the Knative reconciler makes an HPA for (with the class annotation). */
const KNATIVE_SOURCE_KINDS: readonly string[] = ["PodAutoscaler", "Deployment", "StatefulSet"];

async function runOffline(
  target: { namespace: string; name: string },
  files: string[],
  parsed: ReturnType<typeof parseArgs>,
  io: CommandIO,
): Promise<number> {
  const id = `${target.namespace}/${target.name}`;
  const read = await readManifests(files);
  for (const e of read.errors) io.stderr(`error: ${e}\n`);
  const objects = read.objects.map((o) => o.object);
  const named = (o: KubeObject): boolean =>
    o.metadata?.name === target.name && (o.metadata.namespace ?? "default") === target.namespace;
  const found: { object: KubeObject; source: string } | undefined = read.objects.find((o) =>
    o.object.kind === "HorizontalPodAutoscaler" && named(o.object)
  );
  const knative = (o: KubeObject): boolean =>
    KNATIVE_SOURCE_KINDS.includes(o.kind ?? "") && isKnativeHpaClass(o);
  const source = found ? undefined : read.objects.find((o) => knative(o.object) && named(o.object));
  if (source) {
    // the HPA the Knative reconciler would make: named after its source, in its namespace
    const from = `${source.object.kind} ${id}`;
    const where = `${source.source}: the HPA the Knative reconciler would make for ${from}`;
    const endpointPolicy = endpointPolicyFromFlags(parsed.values, io.env);
    const scopePromQL = await promqlScoperFromFlags(parsed.values);
    // the ScaledObject autoscaler-keda would create, then what KEDA makes of it
    const result = knativeScaledObjectFor(source.object, {
      prometheusAddress: stringFlag(parsed.values, "knative-prometheus-address") ?? undefined,
    }, {
      ...(endpointPolicy ? { endpointPolicy } : {}),
      ...(scopePromQL ? { scopePromQL } : {}),
    });
    io.stdout(`HPA ${id} (offline, from ${where})\n`);
    for (const w of result.warnings) io.stdout(field("warning", w));
    if ("error" in result) {
      io.stderr(`error: ${from}: ${result.error}\n`);
      return 1;
    }
    const { row } = kedaScaledObjectRow(
      result.scaledObject as unknown as KubeObject,
      objects.filter(isTriggerAuthentication),
      { owner: result.owner, source: from },
    );
    io.stdout(kedaRowText(row, "knative"));
    return row.error === undefined ? 0 : 1;
  }
  if (!found) {
    // a KEDA ScaledObject: the HPA KEDA writes for it, its triggers' metrics, or KEDA's error
    const so = read.objects.find((o) => isScaledObject(o.object) && named(o.object));
    if (so) {
      const auths = objects.filter(isTriggerAuthentication);
      const { row } = kedaScaledObjectRow(so.object, auths);
      io.stdout(`ScaledObject ${id} (offline, from ${so.source})\n` + kedaRowText(row));
      return row.error === undefined ? 0 : 1;
    }
    const names = read.objects.filter((o) => o.object.kind === "HorizontalPodAutoscaler")
      .map((o) => `${o.object.metadata.namespace ?? "default"}/${o.object.metadata.name}`);
    for (const o of read.objects) {
      if (isScaledObject(o.object)) {
        names.push(
          `${o.object.metadata.namespace ?? "default"}/${o.object.metadata.name} (ScaledObject)`,
        );
      }
      if (!knative(o.object)) continue;
      names.push(
        `${o.object.metadata.namespace ?? "default"}/${o.object.metadata.name} (${o.object.kind})`,
      );
    }
    io.stderr(
      `error: HPA ${id} not found in ${files.join(", ")} (found: ${
        names.length > 0 ? names.join(", ") : "no HPA"
      })\n`,
    );
    return 2;
  }
  const values = parsed.values;
  const collectorFlagsGiven = COLLECTOR_SWITCH_FLAGS.some((f) => parsed.given.has(f)) ||
    parsed.given.has("additional-prometheus-server");
  const limits = collectionLimitsFromFlags(values);
  const options = {
    defaultIntervalSeconds: numberFlag(values, "default-collection-interval"),
    minIntervalSeconds: limits.minIntervalSeconds,
    metricsTtlSeconds: numberFlag(values, "metrics-ttl"),
    allowLinkLocalTargets: values["allow-link-local-targets"] === true,
    enabledCollectors: collectorFlagsGiven ? enabledCollectors(values) : undefined,
    endpointPolicy: endpointPolicyFromFlags(values, io.env),
    scopePromQL: await promqlScoperFromFlags(values),
  };
  const check = {
    registry: collectorRegistry(values),
    flags: values,
    assumeBackends: !collectorFlagsGiven,
  };
  const hpa = found.object;
  let out = `HPA ${id} (offline, from ${found.source})\n`;
  const ref = hpa.spec?.scaleTargetRef;
  if (ref && typeof ref.kind === "string") {
    out += field(
      "scale target",
      `${ref.kind} ${ref.name}, ${
        replicaRange(
          typeof hpa.spec.minReplicas === "number" ? hpa.spec.minReplicas : null,
          typeof hpa.spec.maxReplicas === "number" ? hpa.spec.maxReplicas : null,
        )
      }`,
    );
  }
  let plans: MetricPlan[];
  try {
    plans = planHpa(hpa, options);
  } catch (e) {
    if (!(e instanceof InvalidHpaError)) throw e;
    io.stdout(out);
    io.stderr(`error: HPA ${id}: ${e.message}\n`);
    return 1;
  }
  if (limits.maxMetricsPerNamespace > 0) {
    // whether its metrics fit in --max-metrics-per-namespace: its namespace's other HPAs count
    const planned = [{ hpa: hpa as unknown, plans }];
    for (const o of objects) {
      if (o.kind !== "HorizontalPodAutoscaler" || named(o)) continue;
      if ((o.metadata?.namespace ?? "default") !== target.namespace) continue;
      try {
        planned.push({ hpa: o, plans: planHpa(o, options) });
      } catch (e) {
        if (!(e instanceof InvalidHpaError)) throw e;
      }
    }
    for (const p of planned) for (const plan of p.plans) plan.error ??= collectorError(plan, check);
    limitMetricsPerNamespace(planned, limits.maxMetricsPerNamespace);
  }
  const scheduleOptions = scheduleOptionsFromFlags(values);
  const now = io.now();
  const warnings = new Set<string>();
  for (const p of plans) for (const w of p.warnings ?? []) warnings.add(w);
  for (const w of warnings) out += field("warning", w);
  const failed: MetricPlan[] = [];
  const delegation = {
    urls: delegateUrls(values),
    enabledCollectors: options.enabledCollectors,
    registry: check.registry,
  };
  // --prometheus-adapter-config: a metric no collector of ours takes may be its rules'
  const rules = await planAdapterRulesFromFlags(values, {
    given: parsed.given,
    fetch: globalThis.fetch,
    now: io.now,
  });
  plans.forEach((plan, i) => {
    plan.error ??= collectorError(plan, check);
    const adapter = servedByRules(plan, rules?.context, delegation);
    if (adapter !== null) plan.error = adapter.error ?? null;
    // no collector of ours takes it, and its API has a delegate (issue 26): not an error
    const delegate = adapter === null ? servedByDelegate(plan, delegation) : null;
    if (delegate !== null) plan.error = null;
    if (plan.error !== null) failed.push(plan);
    out += metricTitle(i, plans.length, plan.metricType, plan.metricName, plan.hidden === true);
    out += field(
      "collector",
      collectorText(plan.collector, plan.intervalSeconds, plan.collector === FORMULA_TYPE),
    );
    if (plan.formula) {
      const inputs = plan.formula.inputs.map((x) =>
        `${x.identifier} = ${x.metricType}/${x.metricName}`
      );
      out += field(
        "formula",
        `${plan.formula.expression}${inputs.length > 0 ? ` (${inputs.join(", ")})` : ""}`,
      );
    }
    out += field(
      "plan",
      plan.error !== null
        ? `error: ${plan.error}`
        : adapter?.rule !== undefined
        ? `served by prometheus-adapter's ${adapter.rule}`
        : adapter !== null
        ? `served by prometheus-adapter's ${
          adapter.candidates?.join(" or ")
        } if Prometheus has its series (${rules?.offline ?? "not looked up"})`
        : delegate !== null
        ? `served by the delegate ${delegate}`
        : "OK",
    );
    if (adapter !== null) {
      out += field("read", adapter.read);
      if (adapter.series !== undefined) out += field("series", adapter.series);
      if (adapter.query !== undefined) out += field("query", adapter.query);
    }
    const collects = plan.error === null && delegate === null && adapter === null
      ? collectsText(plan)
      : null;
    if (collects !== null) out += field("collects", collects);
    const schedule = scheduleNow(plan, objects, scheduleOptions, now);
    if (schedule !== null) out += schedule;
    if (!plan.hidden) out += field("target", targetText(plan.target));
    if (plan.fallback) {
      out += field(
        "fallback",
        `after more than ${plural(plan.fallback.failureThreshold, "failed collection")} in a row, ${
          plural(plan.fallback.replicas, "replica")
        } (${plan.fallback.behavior})`,
      );
    }
    out += configFields(plan.config, plan.metricSelector);
  });
  io.stdout(out);
  for (const p of failed) {
    io.stderr(`error: HPA ${id} metric ${p.metricType}/${p.metricName}: ${p.error}\n`);
  }
  if (failed.length > 0 || read.errors.length > 0) return 1;
  io.stdout(
    plans.length === 0
      ? `\nHPA ${id}: the adapter would serve none of its metrics\n`
      : `\nHPA ${id}: every metric planned (${plans.length})${
        options.enabledCollectors ? "" : ", all collectors assumed enabled"
      }\n`,
  );
  return 0;
}

/** The `explain` command. */
export const explainCommand: Command = {
  ...EXPLAIN_INFO,
  async run(args: string[], io: CommandIO): Promise<number> {
    const parsed = parseArgs(args, EXPLAIN_FLAGS);
    if (parsed.positionals.length === 0) throw new UsageError("explain needs NAMESPACE/NAME");
    if (parsed.positionals.length > 1) {
      throw new UsageError(`unexpected argument "${parsed.positionals[1]}"`);
    }
    const target = parseName(parsed.positionals[0]);
    const url = stringFlag(parsed.values, "status-url");
    const files = listFlag(parsed.values, "filename");
    if (url !== null && files.length > 0) {
      throw new UsageError(
        "--status-url and -f exclude each other: ask a running adapter or read manifests",
      );
    }
    if (url !== null) return await runOnline(target, { url: statusUrl(url) }, io);
    if (files.length > 0) return await runOffline(target, files, parsed, io);
    // neither: the adapter's status through kube-apiserver's service proxy (issue 50)
    const { serviceProxySource } = await import("./explain_proxy.ts");
    return await runOnline(target, await serviceProxySource(parsed.values, io.env), io);
  },
};
