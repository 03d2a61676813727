/**
 * `resourceRules` (metrics.k8s.io) as prometheus-adapter v0.12.0's resource provider reads
 * them (pkg/resourceprovider): the `containerQuery` / `nodeQuery` rendered for a PodMetrics or
 * NodeMetrics read, and the instant vectors Prometheus answers turned back into per-container
 * and per-node usage.
 *
 * A read, as upstream does it:
 *
 * - **Pods** are read one namespace at a time: for each namespace, in the order its first pod
 *   comes, one `cpu` and one `memory` `containerQuery`, rendered with `Series` empty, the
 *   namespace label (`namespace="ns"`), the pod label (`=` for one pod, `=~"a|b"` for several,
 *   names repeated as often as the read names them) and `GroupBy` = `<pod label>,<containerLabel>`.
 *   If either query fails to render, run, or answers something other than a vector, every pod
 *   of that namespace is left out (the read itself still succeeds).
 * - **Nodes** are read with one `cpu` and one `memory` `nodeQuery` for all of them, no
 *   namespace and `GroupBy` = the node label alone; a failure leaves every node out.
 * - A sample belongs to the object its resource label (the pod or node label the rule's
 *   `resources` give) names; a sample without that label is filed under `""` and so belongs to
 *   no object. NaN and negative values count as 0 (+Inf does not: see below).
 * - A pod appears only when both vectors have a sample for it. Its containers are named by the
 *   `containerLabel` of the rule the sample came from (`""` when the label is absent); when
 *   several samples name one container the last one counts; a container that only one of the
 *   vectors names gets `0` for the other resource. Its timestamp is the earliest of all its
 *   samples, cpu and memory.
 * - A node appears only when both vectors have a sample for it, and only the first sample of
 *   each counts; its timestamp is the earlier of the two.
 * - `window` is `resourceRules.window` (0 when absent) for every pod and node.
 * - Values are `int64(v * 1000)` milli-units, cpu as a DecimalSI quantity, memory as a BinarySI
 *   one (`2Ki` when a whole number of bytes divisible by 1024, else decimal). Go's float to int64
 *   conversion on amd64 turns values past the int64 range (+Inf, above about 9.2e15) into
 *   -2^63; that is what this reproduces.
 *
 * Upstream returns a pod's containers in Go map order (random); here they come in the order
 * their first sample does, cpu before memory.
 *
 * @module
 */

import { canonicalQuantity } from "../kubernetes/quantity.ts";
import type { GroupResource, ResourceRule, ResourceRules } from "./config.ts";
import { ResourceConverter, type ResourceMapper } from "./naming.ts";
import { renderQueryTemplate } from "./query.ts";

const PODS: GroupResource = { group: "", resource: "pods" };
const NODES: GroupResource = { group: "", resource: "nodes" };

/** The resource rules with their label converters resolved against the cluster. */
export interface ResourceMetricsReader {
  readonly rules: ResourceRules;
  readonly cpu: ResourceConverter;
  readonly memory: ResourceConverter;
}

/**
 * Resolve `resourceRules` against the cluster (upstream's NewProvider); throws when an override
 * names no resource (`unable to construct querier for CPU metrics: ...`).
 */
export function resourceMetricsReader(
  rules: ResourceRules,
  mapper: ResourceMapper,
): ResourceMetricsReader {
  const converter = (rule: ResourceRule, what: string): ResourceConverter => {
    try {
      return new ResourceConverter(rule.resources, mapper, rule.path);
    } catch (err) {
      throw new Error(
        `unable to construct querier for ${what} metrics: unable to construct label-resource converter: ${
          (err as Error).message
        }`,
      );
    }
  };
  return { rules, cpu: converter(rules.cpu, "CPU"), memory: converter(rules.memory, "memory") };
}

/** The two queries of one read. */
export interface ResourceQueries {
  cpu: string;
  memory: string;
}

/** The queries of one read, or why they could not be rendered (the read then has no objects). */
export type RenderedResourceQueries = { queries: ResourceQueries } | { error: string };

function renderBoth(
  reader: ResourceMetricsReader,
  render: (rule: ResourceRule, converter: ResourceConverter) => string,
): RenderedResourceQueries {
  let cpu: string;
  try {
    cpu = render(reader.rules.cpu, reader.cpu);
  } catch (err) {
    return { error: `unable to fetch CPU metrics: ${(err as Error).message}` };
  }
  try {
    return { queries: { cpu, memory: render(reader.rules.memory, reader.memory) } };
  } catch (err) {
    return { error: `unable to fetch memory metrics: ${(err as Error).message}` };
  }
}

/** An object a read asks for. */
export interface PodRef {
  namespace: string;
  name: string;
}

/** The pods of a PodMetrics read, grouped by namespace as upstream queries them. */
export interface NamespaceRead {
  namespace: string;
  /** The pod names, in the read's order, repeated when the read repeats them. */
  names: string[];
}

/**
 * The pods of a read grouped by namespace: one entry per namespace, in the order its first pod
 * comes.
 */
export function podReadsByNamespace(pods: readonly PodRef[]): NamespaceRead[] {
  const byNamespace = new Map<string, string[]>();
  for (const pod of pods) {
    const names = byNamespace.get(pod.namespace);
    if (names === undefined) byNamespace.set(pod.namespace, [pod.name]);
    else names.push(pod.name);
  }
  return [...byNamespace].map(([namespace, names]) => ({ namespace, names }));
}

/**
 * The `containerQuery`s for pods of one namespace.
 *
 * @example
 * ```ts
 * // cpu.containerQuery: sum(rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)
 * renderPodMetricsQueries(reader, "web", ["a", "b"]);
 * // { queries: { cpu: 'sum(rate(container_cpu_usage_seconds_total{namespace="web",pod=~"a|b"}[1m])) by (pod,container)', memory: ... } }
 * ```
 */
export function renderPodMetricsQueries(
  reader: ResourceMetricsReader,
  namespace: string,
  names: readonly string[],
): RenderedResourceQueries {
  return renderBoth(
    reader,
    (rule, converter) =>
      renderQueryTemplate(rule.containerQueryTemplate, `${rule.path}.containerQuery`, converter, {
        series: "",
        resource: PODS,
        namespace,
        selector: [],
        names,
        extraGroupBy: [rule.containerLabel],
      }),
  );
}

/** The `nodeQuery`s for nodes (all of a read's nodes in one query each). */
export function renderNodeMetricsQueries(
  reader: ResourceMetricsReader,
  names: readonly string[],
): RenderedResourceQueries {
  return renderBoth(
    reader,
    (rule, converter) =>
      renderQueryTemplate(rule.nodeQueryTemplate, `${rule.path}.nodeQuery`, converter, {
        series: "",
        resource: NODES,
        namespace: "",
        selector: [],
        names,
      }),
  );
}

/** One series of an instant vector (as src/collectors/prometheus_client.ts reads them). */
export interface ResourceSample {
  labels: Readonly<Record<string, string>>;
  value: number;
  /** ms since the epoch. */
  timestamp: number;
}

/** What the two queries of a read answered, both instant vectors. */
export interface ResourceVectors {
  cpu: readonly ResourceSample[];
  memory: readonly ResourceSample[];
}

/** One container's usage in a PodMetrics. */
export interface ContainerUsage {
  name: string;
  /** A DecimalSI quantity (`1100`, `250m`). */
  cpu: string;
  /** A BinarySI quantity (`3100`, `2Ki`). */
  memory: string;
}

/** A PodMetrics, as upstream fills it (less the pod's labels and the creation time). */
export interface PodUsage {
  namespace: string;
  name: string;
  /** The earliest sample's time, ms since the epoch. */
  timestamp: number;
  /** `resourceRules.window`, seconds. */
  windowSeconds: number;
  containers: ContainerUsage[];
}

/** A NodeMetrics, as upstream fills it (less the node's labels and the creation time). */
export interface NodeUsage {
  name: string;
  timestamp: number;
  windowSeconds: number;
  cpu: string;
  memory: string;
}

const INT64_MIN = -(2n ** 63n);

/**
 * Go's `int64(v * 1000.0)` on amd64: truncated toward zero; NaN and values out of the int64
 * range (+Inf, -Inf, above about 9.2e15) are -2^63.
 */
export function goMilli(v: number): bigint {
  const x = v * 1000;
  if (!(x >= -(2 ** 63) && x < 2 ** 63)) return INT64_MIN;
  return BigInt(Math.trunc(x));
}

/** `resource.NewMilliQuantity(m, DecimalSI).String()`. */
export function decimalMilli(m: bigint): string {
  return canonicalQuantity(`${m}m`);
}

/** `resource.NewMilliQuantity(m, BinarySI).String()`. */
function binaryMilli(m: bigint): string {
  if (m <= -1024000n || m >= 1024000n) {
    if (m % 1000n === 0n) {
      let n = m / 1000n;
      const suffixes = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
      let i = 0;
      while (n !== 0n && n % 1024n === 0n && i < suffixes.length - 1) {
        n /= 1024n;
        i++;
      }
      return `${n}${suffixes[i]}`;
    }
  }
  return decimalMilli(m);
}

/** A sample's value as upstream keeps it: NaN and negatives are 0. */
function sampleValue(v: number): number {
  return Number.isNaN(v) || v < 0 ? 0 : v;
}

function label(labels: Readonly<Record<string, string>>, name: string): string {
  return Object.hasOwn(labels, name) ? labels[name] : "";
}

/** Upstream's runQuery after the query: samples by the object their label names. */
function byObject(
  samples: readonly ResourceSample[],
  objectLabel: string,
): Map<string, ResourceSample[]> {
  const out = new Map<string, ResourceSample[]>();
  for (const s of samples) {
    const key = label(s.labels, objectLabel);
    const list = out.get(key);
    if (list === undefined) out.set(key, [s]);
    else list.push(s);
  }
  return out;
}

function objectLabel(converter: ResourceConverter, resource: GroupResource): string | null {
  try {
    return converter.labelForResource(resource);
  } catch {
    return null;
  }
}

/**
 * The PodMetrics of a read from what each namespace's queries answered: `vectors` has an entry
 * for each namespace whose two queries both rendered, ran and answered vectors; pods of other
 * namespaces are left out, as are pods missing from either vector. The result keeps the read's
 * order (and its repeats).
 *
 * @example
 * ```ts
 * podMetricsFromVectors(reader, [{ namespace: "ns", name: "a" }], new Map([["ns", {
 *   cpu: [{ labels: { namespace: "ns", pod: "a", container: "c" }, value: 0.25, timestamp: 10 }],
 *   memory: [{ labels: { namespace: "ns", pod: "a", container: "c" }, value: 2048, timestamp: 11 }],
 * }]]));
 * // [{ namespace: "ns", name: "a", timestamp: 10, windowSeconds: 60,
 * //    containers: [{ name: "c", cpu: "250m", memory: "2Ki" }] }]
 * ```
 */
export function podMetricsFromVectors(
  reader: ResourceMetricsReader,
  pods: readonly PodRef[],
  vectors: ReadonlyMap<string, ResourceVectors>,
): PodUsage[] {
  const cpuLabel = objectLabel(reader.cpu, PODS);
  const memoryLabel = objectLabel(reader.memory, PODS);
  if (cpuLabel === null || memoryLabel === null) return [];
  type ByObject = Map<string, ResourceSample[]>;
  const grouped = new Map<string, { cpu: ByObject; memory: ByObject }>();
  for (const [namespace, v] of vectors) {
    grouped.set(namespace, {
      cpu: byObject(v.cpu, cpuLabel),
      memory: byObject(v.memory, memoryLabel),
    });
  }
  const cpuContainer = reader.rules.cpu.containerLabel;
  const memoryContainer = reader.rules.memory.containerLabel;
  const out: PodUsage[] = [];
  for (const pod of pods) {
    const results = grouped.get(pod.namespace);
    if (results === undefined) continue;
    const cpuSamples = results.cpu.get(pod.name);
    if (cpuSamples === undefined) continue;
    const memorySamples = results.memory.get(pod.name);
    if (memorySamples === undefined) continue;
    const containers = new Map<string, { cpu?: bigint; memory?: bigint }>();
    let timestamp = Infinity;
    const add = (samples: ResourceSample[], containerLabel: string, kind: "cpu" | "memory") => {
      for (const s of samples) {
        const name = label(s.labels, containerLabel);
        let c = containers.get(name);
        if (c === undefined) containers.set(name, c = {});
        c[kind] = goMilli(sampleValue(s.value));
        if (s.timestamp < timestamp) timestamp = s.timestamp;
      }
    };
    add(cpuSamples, cpuContainer, "cpu");
    add(memorySamples, memoryContainer, "memory");
    out.push({
      namespace: pod.namespace,
      name: pod.name,
      timestamp,
      windowSeconds: reader.rules.windowSeconds,
      containers: [...containers].map(([name, c]) => ({
        name,
        cpu: decimalMilli(c.cpu ?? 0n),
        memory: binaryMilli(c.memory ?? 0n),
      })),
    });
  }
  return out;
}

/**
 * The NodeMetrics of a read from what its two queries answered (`null` when either failed to
 * render or run, or was not a vector: then no node has metrics). Nodes missing from either
 * vector are left out; the result keeps the read's order.
 */
export function nodeMetricsFromVectors(
  reader: ResourceMetricsReader,
  nodes: readonly string[],
  vectors: ResourceVectors | null,
): NodeUsage[] {
  if (vectors === null) return [];
  const cpuLabel = objectLabel(reader.cpu, NODES);
  const memoryLabel = objectLabel(reader.memory, NODES);
  if (cpuLabel === null || memoryLabel === null) return [];
  const cpu = byObject(vectors.cpu, cpuLabel);
  const memory = byObject(vectors.memory, memoryLabel);
  const out: NodeUsage[] = [];
  for (const name of nodes) {
    const c = cpu.get(name)?.[0];
    if (c === undefined) continue;
    const m = memory.get(name)?.[0];
    if (m === undefined) continue;
    out.push({
      name,
      timestamp: Math.min(c.timestamp, m.timestamp),
      windowSeconds: reader.rules.windowSeconds,
      cpu: decimalMilli(goMilli(sampleValue(c.value))),
      memory: binaryMilli(goMilli(sampleValue(m.value))),
    });
  }
  return out;
}
