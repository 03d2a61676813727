/**
 * The contract between the engine (writes) and the API (reads). The store keeps the latest
 * values of every plan, never serves a value older than its TTL, and remembers why a plan has
 * no value so that the API can say so in its 404 message.
 */

import type { Selector } from "../core/kubernetes/label_selector.ts";
import type { LabelSelector } from "../core/types.ts";

/** Where a plan's values are served. */
export type ServedAt =
  | {
    kind: "custom";
    namespace: string;
    /** Qualified plural: `pods`, `deployments.apps`, `scalingschedules.zalando.org`. */
    groupResource: string;
    /** The described object's name; null for Pods metrics (one value per pod). */
    objectName: string | null;
    metricName: string;
    /** Canonical string of the metric selector ("" for none). */
    metricSelector: string;
  }
  | {
    kind: "external";
    namespace: string;
    metricName: string;
    /** The series labels served (normally the metric selector's matchLabels). */
    metricLabels: Record<string, string>;
    /**
     * Canonical string of the HPA's whole metric selector, when it has more than matchLabels
     * (matchExpressions): a request with exactly this `labelSelector` matches even if
     * `metricLabels` alone would not.
     */
    metricSelector?: string;
  };

/** One collected value. */
export interface Sample {
  /** Custom metrics: the object the value is for (a pod name for Pods metrics). */
  objectName?: string;
  /** External metrics: labels of this series if they differ from the plan's metricLabels. */
  labels?: Record<string, string>;
  value: number;
  /** Collection time, ms since the epoch. */
  timestamp: number;
  /** Window the value covers, seconds (served as windowSeconds / window). */
  windowSeconds?: number;
}

/** A plan as the store sees it. */
export interface StoredPlan {
  /** Stable key of (HPA, metric), e.g. `ns/name#2/External/queue-length`. */
  key: string;
  hpa: { namespace: string; name: string };
  servedAt: ServedAt;
  /** Identity of the query behind the values (collector + config); plans with the same
   * `servedAt` but a different `queryKey` conflict. */
  queryKey: string;
  /** Custom metrics: `describedObject`'s kind and apiVersion (else derived from the
   * group-resource, e.g. `deployments.apps` -> `Deployment`, `apps/v1`). Not identity. */
  describedKind?: DescribedKind;
  /** Custom metrics: the HPA's metric selector, served as `selector` / `metric.selector`. */
  metricSelectorObject?: LabelSelector | null;
  /**
   * The plan has no collector (its config is invalid, its collector is off): it is kept for
   * the reason in its 404, but conflicts with no other plan.
   */
  uncollectable?: boolean;
  /**
   * Its collector is unknown or not enabled here: the metric may be another adapter's. A read
   * that only such plans cover is not ours (see {@linkcode LookupMiss.unowned}).
   */
  incompatible?: boolean;
}

/** Why nothing could be served, in words for `kubectl describe hpa`. */
export interface LookupMiss {
  reason: string;
  /**
   * No plan of ours covers the read: none at all, or only incompatible ones. A delegate
   * adapter may serve it (issue 26).
   */
  unowned?: boolean;
}

// ---------------------------------------------------------------------------------------------
// Added for src/store/store.ts and src/api/ (issue 3). Everything above is unchanged.

/** How the described object of a custom metric is written in `describedObject`. */
export interface DescribedKind {
  kind: string;
  apiVersion: string;
}

/** A custom metrics read: one object by name, or every object (`name` `*`). */
export interface CustomLookup {
  /** "" for cluster-scoped objects; for `namespaces` the namespace itself. */
  namespace: string;
  groupResource: string;
  /** The object's name, or `*`. */
  name: string;
  metricName: string;
  /** Canonical string of the request's `metricLabelSelector` ("" for none). */
  metricSelector: string;
  /**
   * `customLookupKey(this)` (store.ts), when the caller keeps the lookup for repeated reads
   * (saves building the key per read).
   */
  key?: string;
}

/** An external metrics read. */
export interface ExternalLookup {
  namespace: string;
  metricName: string;
  /** The request's `labelSelector`, parsed. */
  selector: Selector;
  /** `formatSelector(selector)`, when the caller has it already (saves formatting per read). */
  canonicalSelector?: string;
}

/** One custom metric value as served. */
export interface CustomItem {
  namespace: string;
  groupResource: string;
  objectName: string;
  describedKind: DescribedKind | null;
  metricName: string;
  metricSelectorObject: LabelSelector | null;
  value: number;
  /**
   * The value's Quantity string when it is not `formatQuantity(value)` (prometheus-adapter's
   * rules: its milli truncation and int64 edge cases, which a double cannot carry).
   */
  quantity?: string;
  /** Collection time, ms since the epoch. */
  timestamp: number;
  windowSeconds?: number;
  /**
   * Where readers keep what they derive from this item (its JSON). The store hands out the
   * same item object for a value until the value or its plan changes, so a memo lives exactly
   * as long as what it was derived from.
   */
  memo?: Record<string, string>;
  /** Whole answers readers made of this item alone (src/api's ready bodies), kept as `memo`. */
  answers?: Record<string, unknown>;
}

/** One external metric value as served. */
export interface ExternalItem {
  metricName: string;
  metricLabels: Record<string, string>;
  /**
   * `metricLabels` is written `null` (prometheus-adapter's answer for a scalar: no labels at
   * all, where a vector sample without labels has `{}`).
   */
  nullLabels?: boolean;
  value: number;
  /** As {@linkcode CustomItem.quantity}. */
  quantity?: string;
  /** Collection time, ms since the epoch. */
  timestamp: number;
  windowSeconds?: number;
  /** As {@linkcode CustomItem.memo}. */
  memo?: Record<string, string>;
  /** As {@linkcode CustomItem.answers}. */
  answers?: Record<string, unknown>;
}

/**
 * The answer of a read: values, or why there are none. `stored` is set by filtered wildcard
 * reads that kept nothing: how many unexpired values there were before the filter.
 */
export type LookupResult<T> = { items: T[]; stored?: number } | { miss: LookupMiss };

/** A plan whose values cannot be served because other plans claim the same values. */
export interface StoreConflict {
  plan: StoredPlan;
  /** The plans it conflicts with (same place, different query), sorted by key. */
  others: StoredPlan[];
  /** For an event on the plan's HPA: names the other HPAs. */
  message: string;
}

/** A metric the store serves, for API discovery. */
export interface ServedMetric {
  kind: "custom" | "external";
  /** Custom only. */
  groupResource?: string;
  metricName: string;
  /** Custom only: false for cluster-scoped objects. */
  namespaced?: boolean;
}
