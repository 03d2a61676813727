/**
 * The contract between the engine (writes) and the API (reads). The store keeps the latest
 * values of every plan, never serves a value older than its TTL, and remembers why a plan has
 * no value so that the API can say so in its 404 message.
 */

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
}

/** Why nothing could be served, in words for `kubectl describe hpa`. */
export interface LookupMiss {
  reason: string;
}
