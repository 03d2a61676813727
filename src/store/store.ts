/**
 * The in-memory metric store: the engine declares plans and records collections, the API reads
 * values. Every read takes the time explicitly and never serves a value older than the TTL.
 * Values are indexed by where they are served (namespace, group-resource, metric, metric
 * selector) and then by object name or series labels, so a read by name is two map lookups
 * and a wildcard read visits only that metric's values in that namespace.
 *
 * Conflicts: two plans that would serve the same value from different queries (same
 * `servedAt`, different `queryKey`; or, for Pods metrics, values for the same pod) are both
 * withheld, and their reads answer why, naming both HPAs, until one of them goes away.
 *
 * @module
 */

import { formatDuration } from "../core/duration.ts";
import { formatSelector, matchesSelector } from "../core/kubernetes/label_selector.ts";
import type { Selector } from "../core/kubernetes/label_selector.ts";
import { SmallMap } from "../core/small_map.ts";
import type {
  CustomItem,
  CustomLookup,
  DescribedKind,
  ExternalItem,
  ExternalLookup,
  LookupMiss,
  LookupResult,
  Sample,
  ServedAt,
  ServedMetric,
  StoreConflict,
  StoredPlan,
} from "./types.ts";

/** Options of {@linkcode MetricStore}. */
export interface MetricStoreOptions {
  /** Values older than this are never served (`--metrics-ttl`). Default 900 (15m). */
  ttlSeconds?: number;
}

/** How many other HPAs a conflict message names. */
const MAX_NAMED_CONFLICTS = 3;

/** Options of {@linkcode MetricStore.lookupCustom}. */
export interface CustomLookupOptions {
  /** Wildcard reads: keep only the objects (pods) for which this returns true. */
  accept?: (objectName: string) => boolean;
  /** Wildcard reads: keep only these objects (looked up one by one when fewer than stored). */
  names?: ReadonlySet<string>;
}

/** Counts for the own-metrics gauges. */
export interface StoreStats {
  plans: number;
  customValues: number;
  externalValues: number;
  conflictedPlans: number;
}

/** One stored value of one plan. */
interface StoredValue {
  planKey: string;
  /** The plan's state (a plan's values are dropped when its state goes). */
  state: PlanState;
  /** Object name (custom) or "" (external). */
  objectName: string;
  /** Series labels (external) or null (custom). */
  labels: Record<string, string> | null;
  value: number;
  timestamp: number;
  windowSeconds?: number;
  /** The item served for this value, made on the first read (for this plan object). */
  item?: CustomItem | ExternalItem;
  itemPlan?: StoredPlan;
}

/**
 * A set of keys, kept as the key itself while it has one member and as a Set from the second
 * on: most plans hold one entry, share their place with nobody and conflict with nobody, and a
 * one-member Set costs ~200 bytes. Adding and deleting keep a Set's iteration order.
 */
type Keys = string | Set<string> | undefined;

/** The values at one entry: the value itself while one plan holds it, else plan key -> value. */
type Entry = StoredValue | Map<string, StoredValue>;

/** Values at one place: entry (object name or series key) -> plan key -> value. */
interface Slot {
  kind: "custom" | "external";
  plans: Keys;
  entries: SmallMap<string, Entry>;
  /**
   * Bumped when a plan or an entry comes or goes, or a plan starts or stops holding a value
   * in an entry (not when a value is replaced): what the read memos below depend on.
   */
  version: number;
  /** Entry keys in order, for wildcard reads (null: to be sorted again). */
  sorted: string[] | null;
  /** External reads by canonical selector: which plans and entries can answer. */
  externalMemo: Map<string, ExternalMemo> | null;
  /** External slots: plan keys by their whole metric selector (canonical string). */
  exact: Map<string, string | Set<string>> | null;
  /** Bumped on every write to `entries`, a replaced value too (what `wildcard` depends on). */
  writes: number;
  /** The last wildcard read's items, for the next read with the same pod set. */
  wildcard: WildcardMemo | null;
}

/**
 * A wildcard read's answer, valid while nothing it depends on changed: the slot's values, the
 * conflicts and plans of the store, the set of names asked for (the same object), and the
 * clock before the first of its values expires.
 */
interface WildcardMemo {
  names: ReadonlySet<string> | undefined;
  writes: number;
  conflicts: number;
  plans: number;
  /** The last time (ms) at which every value of `items` is still unexpired. */
  until: number;
  items: CustomItem[];
}

/** What an external read with one selector needs, valid for one slot version. */
interface ExternalMemo {
  version: number;
  /**
   * The plans whose metric selector is exactly the request's, if any; else those whose metric
   * labels the selector matches.
   */
  matching: PlanState[];
  allowed: Set<string>;
  /**
   * Keys of the entries that can answer, in key order (an entry's value object changes with
   * each collection); `anyPlan`: its series labels match as well.
   */
  candidates: { key: string; anyPlan: boolean }[];
}

/** External selectors remembered per slot before the memo starts over. */
const EXTERNAL_MEMO_LIMIT = 4096;

interface PlanState {
  plan: StoredPlan;
  slotKey: string;
  /** Full identity of the place (incl. object name or series labels). */
  servedKey: string;
  /** External plans: canonical string of the HPA's whole metric selector. */
  exactSelector?: string;
  /** Custom plans of one object and external plans: conflicts are known when declared. */
  fixed: boolean;
  declaredAt?: number;
  lastSuccessAt?: number;
  lastError?: string;
  lastErrorAt?: number;
  /** What the last successful collection could not get (a pod that did not answer). */
  lastWarnings?: readonly string[];
  /** Entry keys this plan holds values under. */
  written: Keys;
  /** Keys of the plans this one conflicts with (undefined: none). */
  conflicts: Keys;
  /**
   * External plans: the series of a sample without labels of its own (the plan's metric
   * labels) and its entry key, made on the first such sample and shared by all of them.
   */
  planSeries?: { labels: Record<string, string>; key: string };
}

function addKey(keys: Keys, key: string): string | Set<string> {
  if (keys === undefined || keys === key) return key;
  if (typeof keys === "string") return new Set([keys, key]);
  keys.add(key);
  return keys;
}

function deleteKey(keys: Keys, key: string): Keys {
  if (typeof keys !== "object") return keys === key ? undefined : keys;
  keys.delete(key);
  if (keys.size > 1) return keys;
  for (const only of keys) return only;
  return undefined;
}

/** Whether `key` is a member. */
function hasKey(keys: Keys, key: string): boolean {
  return typeof keys === "object" ? keys.has(key) : keys === key;
}

/** The members, to go through (not to change meanwhile: copy first). */
function keysOf(keys: Keys): Iterable<string> {
  return typeof keys === "object" ? keys : keys === undefined ? [] : [keys];
}

function entryGet(entry: Entry | undefined, planKey: string): StoredValue | undefined {
  if (entry instanceof Map) return entry.get(planKey);
  return entry?.planKey === planKey ? entry : undefined;
}

/** The entry with `v` set for its plan (store it back: the entry may be a new object). */
function entrySet(entry: Entry | undefined, v: StoredValue): Entry {
  if (entry === undefined) return v;
  if (entry instanceof Map) return entry.set(v.planKey, v);
  if (entry.planKey === v.planKey) return v;
  return new Map([[entry.planKey, entry], [v.planKey, v]]);
}

/** The entry without the plan's value; undefined when none is left. */
function entryDelete(entry: Entry, planKey: string): Entry | undefined {
  if (!(entry instanceof Map)) return entry.planKey === planKey ? undefined : entry;
  entry.delete(planKey);
  if (entry.size > 1) return entry;
  for (const only of entry.values()) return only;
  return undefined;
}

/** The values of an entry, to go through (not to change meanwhile: copy first). */
function entryValues(entry: Entry | undefined): Iterable<StoredValue> {
  return entry instanceof Map ? entry.values() : entry === undefined ? [] : [entry];
}

const SEP = "\u0000";

/** `miss`, marked unowned when every plan that covers the read is incompatible. */
function unownedIf(states: readonly PlanState[], miss: LookupMiss): LookupMiss {
  for (const s of states) if (s.plan.incompatible !== true) return miss;
  return { ...miss, unowned: true };
}

/** describedObject kind/apiVersion of the group-resources the adapter knows. */
const KNOWN_KINDS: Record<string, DescribedKind> = {
  pods: { kind: "Pod", apiVersion: "v1" },
  services: { kind: "Service", apiVersion: "v1" },
  namespaces: { kind: "Namespace", apiVersion: "v1" },
  nodes: { kind: "Node", apiVersion: "v1" },
  "deployments.apps": { kind: "Deployment", apiVersion: "apps/v1" },
  "statefulsets.apps": { kind: "StatefulSet", apiVersion: "apps/v1" },
  "replicasets.apps": { kind: "ReplicaSet", apiVersion: "apps/v1" },
  "daemonsets.apps": { kind: "DaemonSet", apiVersion: "apps/v1" },
  "ingresses.networking.k8s.io": { kind: "Ingress", apiVersion: "networking.k8s.io/v1" },
  "ingresses.extensions": { kind: "Ingress", apiVersion: "extensions/v1beta1" },
  "routegroups.zalando.org": { kind: "RouteGroup", apiVersion: "zalando.org/v1" },
  "scalingschedules.zalando.org": { kind: "ScalingSchedule", apiVersion: "zalando.org/v1" },
  "clusterscalingschedules.zalando.org": {
    kind: "ClusterScalingSchedule",
    apiVersion: "zalando.org/v1",
  },
  "rollouts.argoproj.io": { kind: "Rollout", apiVersion: "argoproj.io/v1alpha1" },
};

/**
 * The `describedObject` kind and apiVersion for a qualified plural, or null when unknown.
 *
 * @example
 * ```ts
 * describedKindFor("deployments.apps"); // { kind: "Deployment", apiVersion: "apps/v1" }
 * ```
 */
export function describedKindFor(groupResource: string): DescribedKind | null {
  return KNOWN_KINDS[groupResource] ?? null;
}

/** RFC 3339, UTC, second precision (as metav1.Time marshals). */
export function formatTimestamp(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/** A stable key of a label set: sorted `k=v` pairs. */
function labelsKey(labels: Record<string, string>): string {
  return JSON.stringify(Object.keys(labels).sort().map((k) => [k, labels[k]]));
}

function seriesOf(labels: Record<string, string>): { labels: Record<string, string>; key: string } {
  return { labels, key: labelsKey(labels) };
}

/** Series without labels: one frozen empty set. */
const NO_LABELS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * `labels` when frozen (a plan's metric labels, see `servedAtOf`; a sample's, copied on write),
 * else a frozen copy: one object per series, shared by the plan, its values and served items.
 */
function frozenLabels(labels: Record<string, string>): Record<string, string> {
  return Object.isFrozen(labels) ? labels : Object.freeze({ ...labels });
}

/** `k=v,k2=v2` in key order, for messages. */
function labelsText(labels: Record<string, string>): string {
  return Object.keys(labels).sort().map((k) => `${k}=${labels[k]}`).join(",");
}

/** The key under which the store finds the values a custom lookup reads (see `CustomLookup.key`). */
export function customLookupKey(q: CustomLookup): string {
  return customSlotKey(q.namespace, q.groupResource, q.metricName, q.metricSelector);
}

function customSlotKey(
  namespace: string,
  groupResource: string,
  metricName: string,
  metricSelector: string,
): string {
  return `c${SEP}${namespace}${SEP}${groupResource}${SEP}${metricName}${SEP}${metricSelector}`;
}

/**
 * The canonical string of an external plan's metric selector: as given when it has
 * matchExpressions, else its matchLabels as equality requirements (what the HPA controller
 * sends as `labelSelector`).
 */
function exactSelectorOf(at: Extract<ServedAt, { kind: "external" }>): string {
  if (at.metricSelector !== undefined) return at.metricSelector;
  return formatSelector(
    Object.keys(at.metricLabels).map((key) => ({
      key,
      operator: "=" as const,
      values: [at.metricLabels[key]],
    })),
  );
}

function externalSlotKey(namespace: string, metricName: string): string {
  return `e${SEP}${namespace}${SEP}${metricName}`;
}

function servedKeyOf(at: ServedAt): string {
  if (at.kind === "custom") {
    return [
      customSlotKey(at.namespace, at.groupResource, at.metricName, at.metricSelector),
      at.objectName ?? "*",
    ].join(SEP);
  }
  return [
    externalSlotKey(at.namespace, at.metricName),
    labelsKey(at.metricLabels),
    at.metricSelector ?? "",
  ].join(SEP);
}

/** Where a plan serves, in words: `metric "rps" on deployments.apps/web in namespace default`. */
function placeText(at: ServedAt): string {
  if (at.kind === "custom") {
    const sel = at.metricSelector ? ` with metric selector "${at.metricSelector}"` : "";
    return `metric "${at.metricName}"${sel} on ${at.groupResource}/${at.objectName ?? "*"}`;
  }
  const sel = at.metricSelector ?? labelsText(at.metricLabels);
  return `external metric "${at.metricName}" with selector "${sel}"`;
}

function hpaText(plan: StoredPlan): string {
  return `${plan.hpa.namespace}/${plan.hpa.name}`;
}

function joinAnd(parts: string[]): string {
  if (parts.length <= 1) return parts.join("");
  return `${parts.slice(0, -1).join(", ")} and ${parts[parts.length - 1]}`;
}

/** A structural change in a slot: the read memos start over. */
function changed(slot: Slot): void {
  slot.version++;
  slot.writes++;
  slot.sorted = null;
}

/**
 * The adapter's metric store. Not thread-safe by design: JavaScript runs it on one thread, and
 * every method finishes before the next starts.
 *
 * @example
 * ```ts
 * const store = new MetricStore({ ttlSeconds: 900 });
 * store.upsertPlan(plan, now);
 * store.recordSuccess(plan.key, [{ objectName: "web-1", value: 3, timestamp: now }], now);
 * store.lookupCustom({ namespace: "default", groupResource: "pods", name: "*", metricName: "rps", metricSelector: "" }, now);
 * ```
 */
export class MetricStore {
  readonly ttlSeconds: number;
  #plans = new Map<string, PlanState>();
  #slots = new Map<string, Slot>();
  /** servedKey -> plan keys declared there (fixed plans only). */
  #served = new Map<string, string | Set<string>>();
  /** `namespace SEP groupResource SEP objectName` -> custom slot keys holding values for it. */
  #objects = new Map<string, string | Set<string>>();
  /** Discovery: `kind SEP groupResource SEP metric SEP namespaced` -> number of plans. */
  #metrics = new Map<string, number>();
  /** Changes whenever a metric is served or no longer served (see `servedMetricsVersion`). */
  #metricsVersion = 0;
  #servedCache: { version: number; list: readonly ServedMetric[] } | null = null;
  #customValues = 0;
  #externalValues = 0;
  /** Bumped when a plan is added, changed or removed (what wildcard read memos depend on). */
  #planVersion = 0;
  /** Keys of the plans in conflict: what `conflicts()` goes through (not every plan). */
  #conflicted = new Set<string>();
  #conflictVersion = 0;

  /** Creates an empty store. */
  constructor(options: MetricStoreOptions = {}) {
    const ttl = options.ttlSeconds ?? 900;
    if (!(ttl > 0)) throw new Error(`invalid metrics TTL ${ttl}s (must be positive)`);
    this.ttlSeconds = ttl;
  }

  /**
   * Declare what a plan serves, or change it. Values are dropped when the place or the query
   * changed (they would mean something else now). `at` is when the plan was made, for the
   * "not collected yet" message.
   */
  upsertPlan(plan: StoredPlan, at?: number): void {
    this.#planVersion++;
    const old = this.#plans.get(plan.key);
    const servedKey = servedKeyOf(plan.servedAt);
    if (old && old.servedKey === servedKey && old.plan.queryKey === plan.queryKey) {
      const wasUncollectable = old.plan.uncollectable === true;
      old.plan = plan;
      if (at !== undefined && old.declaredAt === undefined) old.declaredAt = at;
      if (wasUncollectable !== (plan.uncollectable === true)) this.#refreshFixedConflicts(old);
      return;
    }
    if (old) this.removePlan(plan.key);
    const at_ = plan.servedAt;
    const slotKey = at_.kind === "custom"
      ? customSlotKey(at_.namespace, at_.groupResource, at_.metricName, at_.metricSelector)
      : externalSlotKey(at_.namespace, at_.metricName);
    const state: PlanState = {
      plan,
      slotKey,
      servedKey,
      ...(at_.kind === "external" ? { exactSelector: exactSelectorOf(at_) } : {}),
      fixed: at_.kind === "external" || at_.objectName !== null,
      declaredAt: at,
      written: undefined,
      conflicts: undefined,
    };
    this.#plans.set(plan.key, state);
    let slot = this.#slots.get(slotKey);
    if (!slot) {
      slot = {
        kind: at_.kind,
        plans: undefined,
        entries: new SmallMap(),
        version: 0,
        sorted: null,
        externalMemo: null,
        writes: 0,
        wildcard: null,
        exact: null,
      };
      this.#slots.set(slotKey, slot);
    }
    slot.plans = addKey(slot.plans, plan.key);
    if (state.exactSelector !== undefined) {
      const exact = slot.exact ??= new Map();
      exact.set(state.exactSelector, addKey(exact.get(state.exactSelector), plan.key));
    }
    changed(slot);
    if (state.fixed) this.#served.set(servedKey, addKey(this.#served.get(servedKey), plan.key));
    const mk = this.#metricKey(plan.servedAt);
    const count = this.#metrics.get(mk) ?? 0;
    if (count === 0) this.#metricsVersion++;
    this.#metrics.set(mk, count + 1);
    this.#refreshConflicts(state);
  }

  /** Forget a plan: its values disappear at once. Unknown keys are ignored. */
  removePlan(key: string): void {
    const state = this.#plans.get(key);
    if (!state) return;
    this.#planVersion++;
    this.#clearValues(state, new Set());
    for (const other of [...keysOf(state.conflicts)]) this.#unlink(state, other);
    const slot = this.#slots.get(state.slotKey);
    if (slot) {
      slot.plans = deleteKey(slot.plans, key);
      if (state.exactSelector !== undefined && slot.exact) {
        const rest = deleteKey(slot.exact.get(state.exactSelector), key);
        if (rest === undefined) slot.exact.delete(state.exactSelector);
        else slot.exact.set(state.exactSelector, rest);
      }
      changed(slot);
      if (slot.plans === undefined && slot.entries.size === 0) this.#slots.delete(state.slotKey);
    }
    const served = deleteKey(this.#served.get(state.servedKey), key);
    if (served === undefined) this.#served.delete(state.servedKey);
    else this.#served.set(state.servedKey, served);
    const mk = this.#metricKey(state.plan.servedAt);
    const n = (this.#metrics.get(mk) ?? 1) - 1;
    if (n > 0) this.#metrics.set(mk, n);
    else if (this.#metrics.delete(mk)) this.#metricsVersion++;
    this.#plans.delete(key);
  }

  /**
   * Replace a plan's values with one collection's samples. Pods plans need `objectName` (the
   * pod) on every sample; Object plans serve under their object; External samples may carry
   * their own series labels. Unknown plan keys are ignored (the plan was removed meanwhile).
   */
  recordSuccess(
    key: string,
    samples: Sample[],
    at: number,
    warnings?: readonly string[],
  ): void {
    const state = this.#plans.get(key);
    if (!state) return;
    const at_ = state.plan.servedAt;
    const next = new Map<string, StoredValue>();
    for (const s of samples) {
      if (typeof s.value !== "number" || !Number.isFinite(s.value)) {
        throw new Error(`invalid value ${String(s.value)} in a sample of plan "${key}"`);
      }
      if (at_.kind === "custom") {
        const objectName = at_.objectName ?? s.objectName;
        if (!objectName) {
          throw new Error(`sample without objectName for ${at_.groupResource} plan "${key}"`);
        }
        next.set(objectName, {
          planKey: key,
          state,
          objectName,
          labels: null,
          value: s.value,
          timestamp: s.timestamp,
          windowSeconds: s.windowSeconds,
        });
      } else {
        let labels: Record<string, string>;
        let entryKey: string;
        if (s.labels) {
          // frozen: the served item shares it (see #externalItem)
          labels = Object.freeze({ ...s.labels });
          entryKey = labelsKey(labels);
        } else {
          const own = state.planSeries ??= seriesOf(frozenLabels(at_.metricLabels));
          labels = own.labels;
          entryKey = own.key;
        }
        next.set(entryKey, {
          planKey: key,
          state,
          objectName: "",
          labels,
          value: s.value,
          timestamp: s.timestamp,
          windowSeconds: s.windowSeconds,
        });
      }
    }
    this.#clearValues(state, next);
    const slot = this.#slots.get(state.slotKey)!;
    for (const [entryKey, value] of next) {
      const entry = slot.entries.get(entryKey);
      if (!entry && at_.kind === "custom") this.#indexObject(at_, entryKey, state.slotKey);
      if (!entryGet(entry, key)) {
        this.#count(at_.kind, 1);
        changed(slot);
      }
      slot.entries.set(entryKey, entrySet(entry, value));
      state.written = addKey(state.written, entryKey);
    }
    slot.writes++;
    state.lastSuccessAt = at;
    state.lastWarnings = warnings !== undefined && warnings.length > 0 ? warnings : undefined;
    state.lastError = undefined;
    state.lastErrorAt = undefined;
    this.#refreshConflicts(state);
  }

  /** Remember a failed collection; the last good values stay served until the TTL. */
  recordFailure(key: string, error: string, at: number): void {
    const state = this.#plans.get(key);
    if (!state) return;
    state.lastError = error;
    state.lastErrorAt = at;
  }

  /** Drop the values of a deleted object (a pod) at once, in every metric. */
  removeObject(namespace: string, groupResource: string, name: string): void {
    const ok = [namespace, groupResource, name].join(SEP);
    const slotKeys = this.#objects.get(ok);
    if (!slotKeys) return;
    this.#objects.delete(ok);
    const touched = new Set<PlanState>();
    for (const slotKey of keysOf(slotKeys)) {
      const slot = this.#slots.get(slotKey);
      const entry = slot?.entries.get(name);
      if (!slot || !entry) continue;
      for (const v of entryValues(entry)) {
        const state = this.#plans.get(v.planKey);
        if (state) {
          state.written = deleteKey(state.written, name);
          touched.add(state);
        }
        this.#count("custom", -1);
      }
      slot.entries.delete(name);
      changed(slot);
    }
    for (const state of touched) this.#refreshConflicts(state);
  }

  /** Free values older than the TTL. Returns how many were freed. */
  gc(now: number): number {
    let freed = 0;
    const touched = new Set<PlanState>();
    for (const [slotKey, slot] of this.#slots) {
      for (const [entryKey, entry] of slot.entries) {
        let rest: Entry | undefined = entry;
        for (const v of [...entryValues(entry)]) {
          if (!this.#expired(v, now)) continue;
          rest = entryDelete(rest!, v.planKey);
          this.#count(slot.kind, -1);
          changed(slot);
          freed++;
          const state = this.#plans.get(v.planKey);
          if (state) {
            state.written = deleteKey(state.written, entryKey);
            touched.add(state);
          }
        }
        if (rest === undefined) {
          slot.entries.delete(entryKey);
          if (slot.kind === "custom") this.#unindexObject(slotKey, entryKey);
        } else if (rest !== entry) slot.entries.set(entryKey, rest);
      }
      if (slot.plans === undefined && slot.entries.size === 0) this.#slots.delete(slotKey);
    }
    for (const state of touched) this.#refreshConflicts(state);
    return freed;
  }

  /**
   * A number that changes whenever two plans start or stop conflicting: while it stays the
   * same, `conflicts()` returns the same list.
   */
  get conflictVersion(): number {
    return this.#conflictVersion;
  }

  /** Every conflicted plan with the plans it conflicts with, sorted by plan key. */
  conflicts(): StoreConflict[] {
    const out: StoreConflict[] = [];
    for (const key of this.#conflicted) {
      const state = this.#plans.get(key)!;
      const others = [...keysOf(state.conflicts)].sort().map((k) => this.#plans.get(k)!.plan);
      // At most the first few others by name, without their number: a group of HPAs that
      // conflict keeps its messages (each a Warning event) while more join it.
      const names = others.slice(0, MAX_NAMED_CONFLICTS + 1).map((p) => `HPA ${hpaText(p)}`);
      const named = names.length > MAX_NAMED_CONFLICTS
        ? `${names.slice(0, MAX_NAMED_CONFLICTS).join(", ")} and other HPAs`
        : joinAnd(names);
      out.push({
        plan: state.plan,
        others,
        message:
          `conflict with ${named}: ${
            placeText(state.plan.servedAt)
          } in namespace ${state.plan.servedAt.namespace} is collected by different queries; ` +
          `neither is served until one of them changes`,
      });
    }
    return out.sort((a, b) => a.plan.key < b.plan.key ? -1 : a.plan.key > b.plan.key ? 1 : 0);
  }

  /**
   * The metrics that plans serve, for discovery, sorted. The same array (do not change it) until
   * `servedMetricsVersion` changes: the API server's aggregator asks for discovery every few
   * seconds, and with thousands of HPAs building the list each time was most of the garbage.
   */
  servedMetrics(): readonly ServedMetric[] {
    if (this.#servedCache?.version === this.#metricsVersion) return this.#servedCache.list;
    // the keys sort as kind, group/resource, metric name, namespaced: what discovery lists by
    const keys = [...this.#metrics.keys()].sort();
    const list: ServedMetric[] = keys.map((key) => {
      const [kind, groupResource, metricName, namespaced] = key.split(SEP);
      return kind === "custom"
        ? { kind, groupResource, metricName, namespaced: namespaced === "1" }
        : { kind: "external", metricName };
    });
    this.#servedCache = { version: this.#metricsVersion, list };
    return list;
  }

  /** A number that changes whenever `servedMetrics` would answer differently. */
  servedMetricsVersion(): number {
    return this.#metricsVersion;
  }

  /** Counts for gauges. */
  stats(): StoreStats {
    return {
      plans: this.#plans.size,
      customValues: this.#customValues,
      externalValues: this.#externalValues,
      conflictedPlans: this.#conflicted.size,
    };
  }

  /**
   * Read custom metric values of one object, or of all objects (`*`) of a kind. A wildcard
   * read filtered by `accept` or `names` returns only those objects; when none is left it
   * returns no items and `stored`, the number of unexpired values before the filter.
   */
  lookupCustom(
    q: CustomLookup,
    now: number,
    options: CustomLookupOptions = {},
  ): LookupResult<CustomItem> {
    const slot = this.#slots.get(q.key ?? customLookupKey(q));
    const where = (): string => `${q.groupResource}/${q.name}`;
    if (!slot || slot.plans === undefined) {
      return { miss: { reason: this.#nobodyAsks(q, where()), unowned: true } };
    }
    if (q.name !== "*") {
      const v = this.#pick(slot.entries.get(q.name), now);
      if (v) return { items: [this.#customItem(v)] };
      const covering = [...keysOf(slot.plans)].map((k) => this.#plans.get(k)!).filter((s) => {
        const at = s.plan.servedAt;
        return at.kind === "custom" && (at.objectName === null || at.objectName === q.name);
      });
      if (covering.length === 0) {
        return { miss: { reason: this.#nobodyAsks(q, where()), unowned: true } };
      }
      return { miss: unownedIf(covering, { reason: this.#explain(covering, q.name) }) };
    }
    const { accept, names } = options;
    const filtered = accept !== undefined || names !== undefined;
    const memo = slot.wildcard;
    if (
      memo !== null && accept === undefined && memo.names === names &&
      memo.writes === slot.writes && memo.conflicts === this.#conflictVersion &&
      memo.plans === this.#planVersion && now <= memo.until
    ) return { items: memo.items };
    const picked: StoredValue[] = [];
    if (names && names.size < slot.entries.size) {
      // fewer candidate objects than stored values: look each one up
      for (const name of names) {
        const v = this.#pick(slot.entries.get(name), now);
        if (v && (!accept || accept(name))) picked.push(v);
      }
      picked.sort((a, b) => a.objectName < b.objectName ? -1 : a.objectName > b.objectName ? 1 : 0);
    } else {
      // in name order already: nothing to sort per read
      for (const name of this.#sortedKeys(slot)) {
        if (names && !names.has(name)) continue;
        const v = this.#pick(slot.entries.get(name), now);
        if (v && (!accept || accept(name))) picked.push(v);
      }
    }
    // how many unexpired values there are at all (needed only when the filter kept none)
    let stored = picked.length;
    if (picked.length === 0) {
      for (const entry of slot.entries.values()) if (this.#pick(entry, now)) stored++;
    }
    if (stored > 0) {
      const items = picked.map((v) => this.#customItem(v));
      if (items.length > 0 && accept === undefined) {
        let oldest = Infinity;
        for (const v of picked) if (v.timestamp < oldest) oldest = v.timestamp;
        slot.wildcard = {
          names,
          writes: slot.writes,
          conflicts: this.#conflictVersion,
          plans: this.#planVersion,
          until: oldest + this.ttlSeconds * 1000,
          items,
        };
      }
      return filtered && items.length === 0 ? { items, stored } : { items };
    }
    const states = [...keysOf(slot.plans)].map((k) => this.#plans.get(k)!);
    return { miss: unownedIf(states, { reason: this.#explain(states, null) }) };
  }

  /** Read external metric values whose series match the request's selector. */
  lookupExternal(q: ExternalLookup, now: number): LookupResult<ExternalItem> {
    const slot = this.#slots.get(externalSlotKey(q.namespace, q.metricName));
    const canonical = q.canonicalSelector ?? formatSelector(q.selector);
    const memo = slot ? this.#externalMemo(slot, q.selector, canonical) : null;
    const matching = memo?.matching ?? [];
    if (!slot || !memo || matching.length === 0) {
      const sel = canonical ? ` with selector "${canonical}"` : "";
      return {
        miss: {
          reason:
            `no HPA in namespace ${q.namespace} asks for external metric "${q.metricName}"${sel}`,
          unowned: true,
        },
      };
    }
    const allowed = memo.allowed;
    const fromAllowed = (planKey: string): boolean => allowed.has(planKey);
    const items: ExternalItem[] = [];
    for (const c of memo.candidates) {
      // an entry whose series labels match serves any plan's value; else only matching plans'
      const v = this.#pick(slot.entries.get(c.key), now, c.anyPlan ? undefined : fromAllowed);
      if (v) items.push(this.#externalItem(v, q.metricName));
    }
    if (items.length > 0) return { items };
    return { miss: unownedIf(matching, { reason: this.#explain(matching, null) }) };
  }

  // -- internals --------------------------------------------------------------------------

  #metricKey(at: ServedAt): string {
    if (at.kind === "custom") {
      return ["custom", at.groupResource, at.metricName, at.namespace === "" ? "0" : "1"].join(
        SEP,
      );
    }
    return ["external", "", at.metricName, "1"].join(SEP);
  }

  #count(kind: "custom" | "external", delta: number): void {
    if (kind === "custom") this.#customValues += delta;
    else this.#externalValues += delta;
  }

  #expired(v: StoredValue, now: number): boolean {
    return v.timestamp < now - this.ttlSeconds * 1000;
  }

  /** The freshest unexpired value at one entry from a plan that is not conflicted. */
  #pick(
    entry: Entry | undefined,
    now: number,
    accept?: (planKey: string, v: StoredValue) => boolean,
  ): StoredValue | undefined {
    if (!entry) return undefined;
    const oldest = now - this.ttlSeconds * 1000;
    if (!(entry instanceof Map)) {
      if (entry.timestamp < oldest || entry.state.conflicts !== undefined) return undefined;
      return !accept || accept(entry.planKey, entry) ? entry : undefined;
    }
    let best: StoredValue | undefined;
    for (const v of entry.values()) {
      if (v.timestamp < oldest) continue; // expired
      if (v.state.conflicts !== undefined) continue;
      if (accept && !accept(v.planKey, v)) continue;
      if (!best || v.timestamp > best.timestamp) best = v;
    }
    return best;
  }

  /** Entry keys of a slot in order, sorted again only after entries came or went. */
  #sortedKeys(slot: Slot): string[] {
    return slot.sorted ??= [...slot.entries.keys()].sort();
  }

  /** Which plans and entries can answer an external read with this selector (memoized). */
  #externalMemo(slot: Slot, selector: Selector, canonical: string): ExternalMemo {
    let memos = slot.externalMemo;
    const hit = memos?.get(canonical);
    if (hit && hit.version === slot.version) return hit;
    // The HPA controller sums every item it gets: when some HPA's metric selector is exactly
    // the request's, only such plans answer (not the plans whose labels are a superset).
    // Other selectors (a person's `kubectl get --raw`) match plans and series by labels.
    const exactKeys = slot.exact?.get(canonical);
    const matching: PlanState[] = [];
    if (exactKeys !== undefined) {
      for (const key of keysOf(exactKeys)) matching.push(this.#plans.get(key)!);
    } else {
      for (const key of keysOf(slot.plans)) {
        const s = this.#plans.get(key)!;
        const at = s.plan.servedAt;
        if (at.kind === "external" && matchesSelector(selector, at.metricLabels)) matching.push(s);
      }
    }
    const allowed = new Set(matching.map((s) => s.plan.key));
    const candidates: ExternalMemo["candidates"] = [];
    if (exactKeys !== undefined) {
      const keys = new Set<string>();
      for (const s of matching) for (const k of keysOf(s.written)) keys.add(k);
      for (const key of [...keys].sort()) {
        if (slot.entries.has(key)) candidates.push({ key, anyPlan: false });
      }
    } else {
      this.#labelCandidates(slot, selector, allowed, candidates);
    }
    const memo: ExternalMemo = { version: slot.version, matching, allowed, candidates };
    if (!memos) slot.externalMemo = memos = new Map();
    else if (!hit && memos.size >= EXTERNAL_MEMO_LIMIT) memos.clear();
    memos.set(canonical, memo);
    return memo;
  }

  /** Entries whose series labels match, or that hold a value of an allowed plan, in key order. */
  #labelCandidates(
    slot: Slot,
    selector: Selector,
    allowed: Set<string>,
    candidates: ExternalMemo["candidates"],
  ): void {
    for (const key of this.#sortedKeys(slot)) {
      const entry = slot.entries.get(key)!;
      // every value of an entry has the same series labels (they make the entry key)
      let anyPlan = false;
      for (const v of entryValues(entry)) {
        anyPlan = matchesSelector(selector, v.labels ?? {});
        break;
      }
      let mine = false;
      if (!anyPlan) {
        for (const v of entryValues(entry)) {
          if (allowed.has(v.planKey)) {
            mine = true;
            break;
          }
        }
      }
      if (anyPlan || mine) candidates.push({ key, anyPlan });
    }
  }

  #externalItem(v: StoredValue, metricName: string): ExternalItem {
    const plan = v.state.plan;
    if (v.item !== undefined && v.itemPlan === plan) return v.item as ExternalItem;
    const item: ExternalItem = {
      metricName,
      // the value's own labels, frozen: items are kept and served again, never changed
      metricLabels: v.labels === null ? NO_LABELS : frozenLabels(v.labels),
      value: v.value,
      timestamp: v.timestamp,
      ...(v.windowSeconds !== undefined ? { windowSeconds: v.windowSeconds } : {}),
    };
    v.item = item;
    v.itemPlan = plan;
    return item;
  }

  #customItem(v: StoredValue): CustomItem {
    const state = v.state;
    if (v.item !== undefined && v.itemPlan === state.plan) return v.item as CustomItem;
    const item = this.#makeCustomItem(v, state);
    v.item = item;
    v.itemPlan = state.plan;
    return item;
  }

  #makeCustomItem(v: StoredValue, state: PlanState): CustomItem {
    const at = state.plan.servedAt as Extract<ServedAt, { kind: "custom" }>;
    return {
      namespace: at.namespace,
      groupResource: at.groupResource,
      objectName: v.objectName,
      describedKind: state.plan.describedKind ?? describedKindFor(at.groupResource),
      metricName: at.metricName,
      metricSelectorObject: state.plan.metricSelectorObject ?? null,
      value: v.value,
      timestamp: v.timestamp,
      ...(v.windowSeconds !== undefined ? { windowSeconds: v.windowSeconds } : {}),
    };
  }

  #nobodyAsks(q: CustomLookup, where: string): string {
    const sel = q.metricSelector ? ` with metric selector "${q.metricSelector}"` : "";
    const ns = q.namespace === "" ? "(cluster-scoped)" : `in namespace ${q.namespace}`;
    return `no HPA ${ns} asks for metric "${q.metricName}"${sel} on ${where}`;
  }

  /** Why the given plans have no value to serve (for one object, or for any). */
  #explain(states: PlanState[], objectName: string | null): string {
    const conflicted = states.filter((s) => s.conflicts !== undefined);
    if (conflicted.length > 0 && conflicted.length === states.length) {
      const involved = new Map<string, StoredPlan>();
      for (const s of conflicted) {
        involved.set(s.plan.key, s.plan);
        for (const k of keysOf(s.conflicts)) involved.set(k, this.#plans.get(k)!.plan);
      }
      const hpas = [...new Set([...involved.values()].map(hpaText))].sort();
      return `conflict between ${joinAnd(hpas.map((h) => `HPA ${h}`))}: they collect ${
        placeText(conflicted[0].plan.servedAt)
      } with different queries, so neither value is served`;
    }
    const live = states.filter((s) => s.conflicts === undefined);
    const sorted = [...live].sort((a, b) => a.plan.key < b.plan.key ? -1 : 1);
    const reasons = sorted.map((s) => this.#planReason(s, objectName));
    if (reasons.length === 1) return reasons[0];
    const unique = [...new Set(reasons)];
    if (unique.length === 1) return unique[0];
    return sorted.map((s, i) => `HPA ${hpaText(s.plan)}: ${reasons[i]}`).join("; ");
  }

  #planReason(state: PlanState, objectName: string | null): string {
    const ttl = formatDuration(this.ttlSeconds);
    const slot = this.#slots.get(state.slotKey);
    // the newest value of this plan (for the object, or any): expired, or it would be served
    let newest: StoredValue | undefined;
    const keys = objectName !== null ? [objectName] : keysOf(state.written);
    for (const k of keys) {
      const v = entryGet(slot?.entries.get(k), state.plan.key);
      if (v && (!newest || v.timestamp > newest.timestamp)) newest = v;
    }
    const expired = newest
      ? `value expired: last collected at ${
        formatTimestamp(newest.timestamp)
      }, older than the TTL ${ttl}`
      : null;
    if (state.lastError !== undefined) {
      const failed = `last collection failed with "${state.lastError}" at ${
        formatTimestamp(state.lastErrorAt!)
      }`;
      return expired ? `${failed}; ${expired}` : failed;
    }
    if (expired) return expired;
    if (state.lastSuccessAt === undefined) {
      return state.declaredAt !== undefined
        ? `not collected yet (planned at ${formatTimestamp(state.declaredAt)})`
        : "not collected yet";
    }
    const at = state.plan.servedAt;
    const what = at.kind === "custom"
      ? `${at.groupResource}/${objectName ?? "*"}`
      : `series matching the selector`;
    return `the last collection at ${
      formatTimestamp(state.lastSuccessAt)
    } returned no value for ${what}${whyMissing(state.lastWarnings, objectName)}`;
  }

  #indexObject(at: Extract<ServedAt, { kind: "custom" }>, name: string, slotKey: string): void {
    const ok = [at.namespace, at.groupResource, name].join(SEP);
    this.#objects.set(ok, addKey(this.#objects.get(ok), slotKey));
  }

  #unindexObject(slotKey: string, name: string): void {
    const [, namespace, groupResource] = slotKey.split(SEP);
    const ok = [namespace, groupResource, name].join(SEP);
    const rest = deleteKey(this.#objects.get(ok), slotKey);
    if (rest === undefined) this.#objects.delete(ok);
    else this.#objects.set(ok, rest);
  }

  /** Remove the plan's values except under the entry keys in `keep`. */
  #clearValues(state: PlanState, keep: { has(entryKey: string): boolean }): void {
    const slot = this.#slots.get(state.slotKey);
    if (!slot) return;
    for (const entryKey of [...keysOf(state.written)]) {
      if (keep.has(entryKey)) continue;
      state.written = deleteKey(state.written, entryKey);
      const entry = slot.entries.get(entryKey);
      if (!entry || !entryGet(entry, state.plan.key)) continue;
      const rest = entryDelete(entry, state.plan.key);
      this.#count(slot.kind, -1);
      changed(slot);
      if (rest === undefined) {
        slot.entries.delete(entryKey);
        if (slot.kind === "custom") this.#unindexObject(state.slotKey, entryKey);
      } else if (rest !== entry) slot.entries.set(entryKey, rest);
    }
  }

  /**
   * Recompute the conflicts of `state` and of every plan served at its place (after `state`
   * became collectable or not: theirs may depend on it).
   */
  #refreshFixedConflicts(state: PlanState): void {
    this.#refreshConflicts(state);
    if (!state.fixed) return;
    for (const other of keysOf(this.#served.get(state.servedKey))) {
      if (other !== state.plan.key) this.#refreshConflicts(this.#plans.get(other)!);
    }
  }

  /** Recompute which plans this one conflicts with; the relation is kept symmetric. */
  #refreshConflicts(state: PlanState): void {
    const key = state.plan.key;
    const queryKey = state.plan.queryKey;
    let found: Set<string> | undefined;
    if (state.fixed && state.plan.uncollectable !== true) {
      for (const other of keysOf(this.#served.get(state.servedKey))) {
        const o = this.#plans.get(other)!.plan;
        if (other !== key && o.queryKey !== queryKey && o.uncollectable !== true) {
          (found ??= new Set()).add(other);
        }
      }
    }
    const slot = this.#slots.get(state.slotKey);
    if (slot) {
      for (const entryKey of keysOf(state.written)) {
        const entry = slot.entries.get(entryKey);
        // one value: this plan's own (the common case, nothing to compare)
        if (!(entry instanceof Map)) continue;
        for (const other of entry.keys()) {
          if (other !== key && this.#plans.get(other)!.plan.queryKey !== queryKey) {
            (found ??= new Set()).add(other);
          }
        }
      }
    }
    for (const other of [...keysOf(state.conflicts)]) {
      if (!found?.has(other)) this.#unlink(state, other);
    }
    for (const other of found ?? []) {
      if (!hasKey(state.conflicts, other)) this.#link(state, other);
    }
  }

  /** Record that `state` and plan `other` conflict (both ways). */
  #link(state: PlanState, other: string): void {
    const o = this.#plans.get(other)!;
    state.conflicts = addKey(state.conflicts, other);
    o.conflicts = addKey(o.conflicts, state.plan.key);
    this.#conflicted.add(state.plan.key);
    this.#conflicted.add(other);
    this.#conflictVersion++;
  }

  /** Forget that `state` and plan `other` conflict (both ways). */
  #unlink(state: PlanState, other: string): void {
    state.conflicts = deleteKey(state.conflicts, other);
    if (state.conflicts === undefined) this.#conflicted.delete(state.plan.key);
    const o = this.#plans.get(other);
    if (o) {
      o.conflicts = deleteKey(o.conflicts, state.plan.key);
      if (o.conflicts === undefined) this.#conflicted.delete(other);
    }
    this.#conflictVersion++;
  }
}

/**
 * Why a collection returned no value for an object: its warnings that name the object (`pod
 * ns/web-2 ...`), else all of them, after a colon; empty without warnings.
 */
function whyMissing(warnings: readonly string[] | undefined, objectName: string | null): string {
  if (warnings === undefined) return "";
  const named = objectName === null ? [] : warnings.filter((w) => namesObject(w, objectName));
  return `: ${(named.length > 0 ? named : warnings).join("; ")}`;
}

/** Whether a warning names `ns/<name>` (followed by a space, a colon or its end). */
function namesObject(warning: string, name: string): boolean {
  for (let at = warning.indexOf(`/${name}`); at >= 0; at = warning.indexOf(`/${name}`, at + 1)) {
    const next = warning.charAt(at + name.length + 1);
    if (next === "" || next === " " || next === ":") return true;
  }
  return false;
}
