/**
 * What a metric read is answered from (the store, the pods, the clock) and the bodies of its
 * answers, made once and reused: a one-item list kept with its item, a longer list while the
 * store hands out the very same items.
 *
 * @module
 */
import type { MetricStore } from "../store/store.ts";
import type { ApiDelegates } from "./delegate.ts";
import type { PodLister, PodSetCache } from "./pods.ts";
import type { PrometheusAdapterSource } from "./prometheus_adapter.ts";
import type { NodeLister, ResourceMetricsSource } from "./resource_metrics.ts";
import type { PlainResponse } from "../runtime/serve.ts";
import { type ReadyBody, readyBody } from "./responses.ts";

/** The owned ScaledObjects, as the serving path needs them (the KEDA controller). */
export interface KedaServingSource {
  scaledObject(
    namespace: string,
    name: string,
  ):
    | { hpaName: string | null; metricNames: string[]; composite?: boolean; error?: string }
    | undefined;
}

/** What a metric read is answered from. */
export interface MetricSource {
  store: MetricStore;
  pods: PodLister;
  /** The clock, ms since the epoch; every read is checked against the TTL at this time. */
  now(): number;
  /** Where the reads that no HPA of ours asks for go, per API (issue 26); none by default. */
  delegates?: ApiDelegates;
  /** The ScaledObjects this adapter owns (`--keda-scaled-objects`), answered as KEDA does. */
  keda?: KedaServingSource;
  /** prometheus-adapter's rules (`--prometheus-adapter-config`): reads no HPA of ours covers. */
  prometheusAdapter?: PrometheusAdapterSource;
  /**
   * prometheus-adapter's `resourceRules`: `metrics.k8s.io` is served while the source says
   * so, with `nodes` for its NodeMetrics.
   */
  resourceMetrics?: ResourceMetricsSource;
  /** The nodes (`metrics.k8s.io` NodeMetrics); none when absent. */
  nodes?: NodeLister;
}

/** The answer to a read no HPA of ours asks for when its API has a delegate: forward it. */
export const FORWARD: Readonly<{ forward: true }> = Object.freeze({ forward: true });

/** The type of {@linkcode FORWARD}. */
export type Forward = typeof FORWARD;

/** Whether an answer is {@linkcode FORWARD}. */
export function isForward(answer: object): answer is Forward {
  return answer === FORWARD;
}

/**
 * An answer that needs I/O first (a prometheus-adapter rule's first read): the fast path leaves
 * it to the regular path, which awaits it.
 */
export interface Pending {
  pending: Promise<PlainResponse | Forward>;
}

/** Whether an answer is {@linkcode Pending}. */
export function isPending(answer: object): answer is Pending {
  return "pending" in answer;
}

/** The caches a metric read's answer is made with. */
export interface ReadCaches {
  lists: ListCache;
  podSets: PodSetCache;
}

/** A cache of list bodies (see {@linkcode listCache}). */
export type ListCache = (key: string, items: readonly object[], make: () => string) => ReadyBody;

/** What an answer's body can be kept with: a stored item (see `CustomItem.answers`). */
export interface AnswerHolder {
  answers?: Record<string, unknown>;
}

/**
 * The ready body `make` makes for `item` under `key`, made once per item and key and kept on
 * the item itself, so it lives exactly as long as the value it was made from.
 */
export function itemBody(item: AnswerHolder, key: string, make: () => string): ReadyBody {
  const answers = item.answers ??= {};
  return (answers[key] as ReadyBody | undefined) ??= readyBody(make());
}

/** `{"kind":...,"apiVersion":...,"metadata":{},"items":[...]}` as JSON.stringify writes it. */
export function listText(kind: string, apiVersion: string, items: string[]): string {
  return `{"kind":"${kind}","apiVersion":"${apiVersion}","metadata":{},"items":[${
    items.join(",")
  }]}`;
}

/** Lists of several items remembered with their body, before the cache starts over. */
const LIST_CACHE_LIMIT = 1024;

/**
 * List bodies of reads with several items (a pods wildcard): the body is reused while the
 * read returns the very same item objects (the store hands out new ones when a value changes).
 */
export function listCache(): ListCache {
  const cache = new Map<string, { items: readonly object[]; ready: ReadyBody }>();
  return (key, items, make) => {
    const hit = cache.get(key);
    if (
      hit !== undefined && (hit.items === items ||
        (hit.items.length === items.length && hit.items.every((item, i) => item === items[i])))
    ) return hit.ready;
    const ready = readyBody(make());
    if (hit === undefined && cache.size >= LIST_CACHE_LIMIT) cache.clear();
    cache.set(key, { items, ready });
    return ready;
  };
}
