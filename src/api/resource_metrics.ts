/**
 * `metrics.k8s.io/v1beta1` (the resource metrics API of `kubectl top` and of the HPA's cpu and
 * memory Resource metrics) served from prometheus-adapter's `resourceRules`
 * (`--prometheus-adapter-config`), as prometheus-adapter v0.12.0 serves it through
 * metrics-server's API code (sigs.k8s.io/metrics-server v0.7.1 pkg/api):
 *
 * - `nodes` (cluster-scoped) and `pods` (namespaced), verbs `get` and `list`, kinds
 *   `NodeMetrics` and `PodMetrics`;
 * - the objects come from the watch caches: pods whose `status.phase` is `Running` (upstream's
 *   pod informer lists with `fieldSelector=status.phase=Running`), every node; a list takes
 *   `labelSelector` and `fieldSelector` (`metadata.name`, and `metadata.namespace` for pods);
 * - an object without usage for both cpu and memory is left out of a list; a get of it answers
 *   404 `podmetrics.metrics.k8s.io "<ns>/<name>" not found` (`nodemetrics... "<name>"`), and a
 *   get of an object the cache does not have 404 `pods "<name>" not found` (`node "<name>"`);
 * - lists are sorted by namespace and name; `metadata` has the object's name, namespace and
 *   labels, and `creationTimestamp` is the time of the answer (upstream's `metav1.Now()`).
 *
 * The values are read by the source (src/engine/prometheus_adapter.ts) from its cache; the
 * API never queries Prometheus.
 *
 * @module
 */
import type { NodeUsage, PodUsage } from "../core/prometheus_adapter/resource.ts";
import type { KubeObject } from "../cluster/types.ts";
import type { PlainResponse } from "../runtime/serve.ts";
import { METRICS_GROUP } from "./discovery.ts";
import type { PodLister } from "./pods.ts";
import type { AdapterAnswer, AdapterResult } from "./prometheus_adapter.ts";
import { plainJson } from "./responses.ts";
import { type OkSelector, parseParam, queryParam, type SelectorCache } from "./selectors.ts";
import { plainNotFound, statusPlain } from "./status.ts";

const API_VERSION = `${METRICS_GROUP}/v1beta1`;

/** A PodMetrics read of one namespace, as the source collects it. */
export interface PodMetricsRead {
  namespace: string;
  /** The pods the read needs usage of. */
  wanted: readonly string[];
  /** Every running pod of the namespace now (what a collection asks for). */
  names: () => string[];
}

/** A NodeMetrics read. */
export interface NodeMetricsRead {
  wanted: readonly string[];
  /** Every node now. */
  names: () => string[];
}

/** Where usage comes from: prometheus-adapter's `resourceRules`. */
export interface ResourceMetricsSource {
  /** Whether the config in use has `resourceRules` (the group is served only then). */
  resourceMetricsServed(): boolean;
  /** Usage of pods of one namespace (undefined: not served). */
  podMetrics(read: PodMetricsRead): AdapterResult<PodUsage>;
  /** Usage of nodes (undefined: not served). */
  nodeMetrics(read: NodeMetricsRead): AdapterResult<NodeUsage>;
}

/** The nodes, from a watch cache. */
export interface NodeLister {
  listNodes(): KubeObject[];
}

/** What a resource metrics read is answered from. */
export interface ResourceMetricsOptions {
  source: ResourceMetricsSource;
  pods: PodLister;
  nodes: NodeLister;
  /** The clock, ms since the epoch (`creationTimestamp`). */
  now(): number;
}

/** A field selector requirement (`metadata.name=x`, `!=`). */
interface FieldRequirement {
  field: string;
  value: string;
  equal: boolean;
}

/** A read under `/apis/metrics.k8s.io/v1beta1/`. */
export interface ResourceRead {
  group: typeof METRICS_GROUP;
  route: "resource";
  resource: "pods" | "nodes";
  /** The namespace of a pods read; null for all namespaces and for nodes. */
  namespace: string | null;
  /** The object of a get; null for a list. */
  name: string | null;
  labelSel: OkSelector;
  fieldSel: readonly FieldRequirement[];
}

/** The `APIResourceList` of `metrics.k8s.io/v1beta1`, as metrics-server's API installs it. */
export function resourceMetricsResourceList(): unknown {
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: API_VERSION,
    resources: [
      {
        name: "nodes",
        singularName: "",
        namespaced: false,
        kind: "NodeMetrics",
        verbs: ["get", "list"],
      },
      {
        name: "pods",
        singularName: "",
        namespaced: true,
        kind: "PodMetrics",
        verbs: ["get", "list"],
      },
    ],
  };
}

/** `fields.ParseSelector`: `a=b,c!=d` (`==` too); values may escape `\,` `\=` `\\`. */
function parseFieldSelector(raw: string): FieldRequirement[] | string {
  const out: FieldRequirement[] = [];
  if (raw.trim() === "") return out;
  const terms: string[] = [];
  let term = "";
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    if (c === "\\" && i + 1 < raw.length) {
      term += c + raw[++i];
    } else if (c === ",") {
      terms.push(term);
      term = "";
    } else term += c;
  }
  terms.push(term);
  const unescape = (s: string): string | null => {
    let v = "";
    for (let i = 0; i < s.length; i++) {
      if (s[i] === "\\") {
        const n = s[++i];
        if (n !== "\\" && n !== "," && n !== "=") return null;
        v += n;
      } else if (s[i] === "," || s[i] === "=") return null;
      else v += s[i];
    }
    return v;
  };
  for (const t of terms) {
    const m = /^([^=!\\]*?)(!=|==|=)(.*)$/s.exec(t);
    const value = m ? unescape(m[3]) : null;
    if (!m || value === null || m[1].trim() === "") {
      return `invalid selector: '${raw}'; can't understand '${t}'`;
    }
    out.push({ field: m[1].trim(), value, equal: m[2] !== "!=" });
  }
  return out;
}

function fieldsMatch(
  req: readonly FieldRequirement[],
  fields: Readonly<Record<string, string>>,
): boolean {
  for (const r of req) {
    const v = Object.hasOwn(fields, r.field) ? fields[r.field] : "";
    if ((v === r.value) !== r.equal) return false;
  }
  return true;
}

/**
 * The read a URL under `/apis/metrics.k8s.io/v1beta1/` asks (`rest`: the segments after the
 * version), or its 404 / 400.
 */
export function resourceRead(
  selectors: SelectorCache,
  search: string,
  rest: readonly string[],
): ResourceRead | { error: PlainResponse } {
  let resource: "pods" | "nodes";
  let namespace: string | null = null;
  let name: string | null = null;
  if (rest[0] === "nodes" && rest.length <= 2) {
    resource = "nodes";
    name = rest[1] ?? null;
  } else if (rest[0] === "pods" && rest.length === 1) {
    resource = "pods";
  } else if (
    rest[0] === "namespaces" && rest[2] === "pods" && (rest.length === 3 || rest.length === 4)
  ) {
    resource = "pods";
    namespace = rest[1];
    name = rest[3] ?? null;
  } else return { error: plainNotFound() };
  if (name === "" || namespace === "") return { error: plainNotFound() };
  const labelSel = parseParam(selectors, search, "labelSelector");
  if ("error" in labelSel) return labelSel;
  const fieldSel = parseFieldSelector(queryParam(search, "fieldSelector") ?? "");
  if (typeof fieldSel === "string") {
    return { error: statusPlain("BadRequest", fieldSel) };
  }
  return { group: METRICS_GROUP, route: "resource", resource, namespace, name, labelSel, fieldSel };
}

/** metav1.Time as Go writes it: RFC 3339 in UTC, whole seconds. */
function metaTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/** A `time.Duration` of `seconds` as Go's `String()` writes it (`5m0s`, `30s`, `1h0m0s`). */
export function goDuration(seconds: number): string {
  if (seconds === 0) return "0s";
  const sign = seconds < 0 ? "-" : "";
  let ns = Math.round(Math.abs(seconds) * 1e9);
  if (ns < 1e9) {
    const [unit, per] = ns < 1e3 ? ["ns", 1] : ns < 1e6 ? ["µs", 1e3] : ["ms", 1e6];
    return `${sign}${trimFraction(ns / per)}${unit}`;
  }
  const h = Math.floor(ns / 3.6e12);
  ns -= h * 3.6e12;
  const m = Math.floor(ns / 6e10);
  ns -= m * 6e10;
  const s = `${trimFraction(ns / 1e9)}s`;
  if (h > 0) return `${sign}${h}h${m}m${s}`;
  if (m > 0) return `${sign}${m}m${s}`;
  return `${sign}${s}`;
}

function trimFraction(v: number): string {
  return v.toFixed(9).replace(/\.?0+$/, "");
}

function isRunning(pod: KubeObject): boolean {
  return pod.status?.phase === "Running";
}

function metadataJson(
  name: string,
  namespace: string | null,
  labels: Record<string, string> | undefined,
  now: number,
): Record<string, unknown> {
  return {
    name,
    ...(namespace !== null ? { namespace } : {}),
    creationTimestamp: metaTime(now),
    ...(labels && Object.keys(labels).length > 0 ? { labels } : {}),
  };
}

/** One PodMetrics (without kind and apiVersion, as list items are written). */
function podJson(usage: PodUsage, pod: KubeObject, now: number): Record<string, unknown> {
  return {
    metadata: metadataJson(usage.name, usage.namespace, pod.metadata.labels, now),
    timestamp: metaTime(usage.timestamp),
    window: goDuration(usage.windowSeconds),
    containers: usage.containers.map((c) => ({
      name: c.name,
      usage: { cpu: c.cpu, memory: c.memory },
    })),
  };
}

function nodeJson(usage: NodeUsage, node: KubeObject, now: number): Record<string, unknown> {
  return {
    metadata: metadataJson(usage.name, null, node.metadata.labels, now),
    timestamp: metaTime(usage.timestamp),
    window: goDuration(usage.windowSeconds),
    usage: { cpu: usage.cpu, memory: usage.memory },
  };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

type Answered<T> = AdapterAnswer<T> | undefined;

/** The items of answers that have them (a failed collection leaves its objects out). */
function itemsOf<T>(answer: Answered<T>): T[] {
  return answer !== undefined && "items" in answer ? answer.items : [];
}

/** An answer that waits for Prometheus first (metric_read.ts's `Pending`, which imports us). */
type Pending = { pending: Promise<PlainResponse> };

/** The answer made from every part now when none waits, else a promise of it. */
function whenAll<T>(
  parts: readonly AdapterResult<T>[],
  make: (answers: Answered<T>[]) => PlainResponse,
): PlainResponse | Pending {
  if (!parts.some((p) => p instanceof Promise)) return make(parts as Answered<T>[]);
  return { pending: Promise.all(parts).then(make) };
}

/**
 * The answer to a resource metrics read: a PodMetrics / NodeMetrics (or its list) from the
 * source's cache, a 404 Status, or a promise when the source must query Prometheus first.
 */
export function resourceMetrics(
  read: ResourceRead,
  options: ResourceMetricsOptions,
): PlainResponse | Pending {
  const { source } = options;
  if (!source.resourceMetricsServed()) return plainNotFound();
  return read.resource === "nodes" ? nodeMetrics(read, options) : podMetrics(read, options);
}

function podMetrics(read: ResourceRead, options: ResourceMetricsOptions): PlainResponse | Pending {
  const { pods, source } = options;
  const running = (ns: string) => pods.listPods(ns).filter(isRunning);
  let selected: KubeObject[];
  if (read.name !== null) {
    const ns = read.namespace!;
    const pod = running(ns).find((p) => p.metadata.name === read.name);
    if (pod === undefined) {
      return statusPlain("NotFound", `pods "${read.name}" not found`, {
        details: { name: read.name, kind: "pods" },
      });
    }
    selected = [pod];
  } else {
    const all = read.namespace === null
      ? (pods.listAllPods?.() ?? []).filter(isRunning)
      : running(read.namespace);
    selected = all.filter((p) =>
      read.labelSel.matches(p.metadata.labels ?? {}) &&
      fieldsMatch(read.fieldSel, {
        "metadata.name": p.metadata.name,
        "metadata.namespace": p.metadata.namespace ?? "",
      })
    );
  }
  const byNamespace = new Map<string, KubeObject[]>();
  for (const p of selected) {
    const ns = p.metadata.namespace ?? "";
    const list = byNamespace.get(ns);
    if (list === undefined) byNamespace.set(ns, [p]);
    else list.push(p);
  }
  const namespaces = [...byNamespace.keys()];
  const parts = namespaces.map((ns) =>
    source.podMetrics({
      namespace: ns,
      wanted: byNamespace.get(ns)!.map((p) => p.metadata.name),
      names: () => running(ns).map((p) => p.metadata.name),
    })
  );
  return whenAll(parts, (answers) => {
    const now = options.now();
    const items: { usage: PodUsage; pod: KubeObject }[] = [];
    answers.forEach((answer, i) => {
      const usageByName = new Map(itemsOf(answer).map((u) => [u.name, u]));
      for (const pod of byNamespace.get(namespaces[i])!) {
        const usage = usageByName.get(pod.metadata.name);
        if (usage !== undefined) items.push({ usage, pod });
      }
    });
    if (read.name !== null) {
      if (items.length === 0) {
        const id = `${read.namespace}/${read.name}`;
        return statusPlain("NotFound", `podmetrics.${METRICS_GROUP} "${id}" not found`, {
          details: { name: id, group: METRICS_GROUP, kind: "podmetrics" },
        });
      }
      const { usage, pod } = items[0];
      return plainJson(
        JSON.stringify({
          kind: "PodMetrics",
          apiVersion: API_VERSION,
          ...podJson(usage, pod, now),
        }),
      );
    }
    items.sort((a, b) =>
      compare(a.usage.namespace, b.usage.namespace) || compare(a.usage.name, b.usage.name)
    );
    return plainJson(JSON.stringify({
      kind: "PodMetricsList",
      apiVersion: API_VERSION,
      metadata: {},
      items: items.map(({ usage, pod }) => podJson(usage, pod, now)),
    }));
  });
}

function nodeMetrics(
  read: ResourceRead,
  options: ResourceMetricsOptions,
): PlainResponse | Pending {
  const { nodes, source } = options;
  const all = nodes.listNodes();
  let selected: KubeObject[];
  if (read.name !== null) {
    const node = all.find((n) => n.metadata.name === read.name);
    if (node === undefined) {
      return statusPlain("NotFound", `node "${read.name}" not found`, {
        details: { name: read.name, kind: "node" },
      });
    }
    selected = [node];
  } else {
    selected = all.filter((n) =>
      read.labelSel.matches(n.metadata.labels ?? {}) &&
      fieldsMatch(read.fieldSel, { "metadata.name": n.metadata.name })
    );
  }
  const part = selected.length === 0 ? { items: [] } : source.nodeMetrics({
    wanted: selected.map((n) => n.metadata.name),
    names: () => nodes.listNodes().map((n) => n.metadata.name),
  });
  return whenAll([part], ([answer]) => {
    const now = options.now();
    const usageByName = new Map(itemsOf(answer).map((u) => [u.name, u]));
    const items: { usage: NodeUsage; node: KubeObject }[] = [];
    for (const node of selected) {
      const usage = usageByName.get(node.metadata.name);
      if (usage !== undefined) items.push({ usage, node });
    }
    if (read.name !== null) {
      if (items.length === 0) {
        return statusPlain("NotFound", `nodemetrics.${METRICS_GROUP} "${read.name}" not found`, {
          details: { name: read.name, group: METRICS_GROUP, kind: "nodemetrics" },
        });
      }
      const { usage, node } = items[0];
      return plainJson(
        JSON.stringify({
          kind: "NodeMetrics",
          apiVersion: API_VERSION,
          ...nodeJson(usage, node, now),
        }),
      );
    }
    items.sort((a, b) => compare(a.usage.name, b.usage.name));
    return plainJson(JSON.stringify({
      kind: "NodeMetricsList",
      apiVersion: API_VERSION,
      metadata: {},
      items: items.map(({ usage, node }) => nodeJson(usage, node, now)),
    }));
  });
}
