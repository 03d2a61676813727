/**
 * Shared vocabulary of the pure core: the Kubernetes shapes we read and the metric plan that
 * joins the core to the engine, the store and the API. Plain interfaces only; the zod schemas
 * that validate objects at the edge live beside the code that parses them.
 */
import type { Fallback } from "./fallback.ts";

/** metav1.LabelSelectorRequirement. */
export interface LabelSelectorRequirement {
  key: string;
  operator: "In" | "NotIn" | "Exists" | "DoesNotExist";
  values?: string[];
}

/** metav1.LabelSelector: both parts must match (AND). */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

/** autoscaling/v2 CrossVersionObjectReference. */
export interface ObjectReference {
  apiVersion?: string;
  kind: string;
  name: string;
}

/** autoscaling/v2 MetricTarget. Quantities stay strings here; parse with `parseQuantity`. */
export interface MetricTarget {
  type: "Value" | "AverageValue" | "Utilization";
  value?: string;
  averageValue?: string;
  averageUtilization?: number;
}

/** A formula metric's expression and the plans its identifiers name. */
export interface FormulaPlan {
  /** The expression as written. */
  expression: string;
  /** `activation-target`, when given (shown, not enforced). */
  activationTarget?: number;
  /** One per identifier of the expression, in order of first use. */
  inputs: FormulaInput[];
}

/** One input of a formula: an identifier and the plan (of the same HPA) it names. */
export interface FormulaInput {
  /** As written in the expression: the metric name with `-` as `_`. */
  identifier: string;
  /** `planKey` of the input's plan. */
  planKey: string;
  /** `queryKey` of the input's plan: formulas over the same queries compute the same value. */
  queryKey: string;
  metricType: MetricType;
  metricName: string;
}

/** The metric source types that this adapter serves. */
export type MetricType = "Pods" | "Object" | "External";

/** Identifies one HPA. */
export interface HpaRef {
  namespace: string;
  name: string;
}

/**
 * One `spec.metrics[]` entry of one HPA, resolved against its annotations: what to collect,
 * how often, and from where. `error` is set (and `collector` may be null) when the entry
 * cannot be collected; the message says what to add or change.
 */
export interface MetricPlan {
  hpa: HpaRef;
  /** Position of the entry in `spec.metrics`. */
  index: number;
  metricType: MetricType;
  metricName: string;
  /** `metric.selector` of the entry, if any. */
  metricSelector: LabelSelector | null;
  target: MetricTarget;
  /** Object metrics only: `describedObject`. */
  describedObject: ObjectReference | null;
  scaleTargetRef: ObjectReference;
  /** Collector type (`json-path`, `prometheus`, `scaling-schedule`, ...) or null if unknown. */
  collector: string | null;
  intervalSeconds: number;
  perReplica: boolean;
  minPodReadyAgeSeconds: number;
  /** Selector matchLabels (External, Object) overridden by annotations; reserved keys removed. */
  config: Record<string, string>;
  error: string | null;
  /** From the `fallback-*` annotation keys; absent when none is set. */
  fallback?: Fallback;
  /**
   * A formula input that `spec.metrics` does not list: collected for the HPA's formulas, never
   * served. Its `index` is past the listed entries and its `target` is empty.
   */
  hidden?: boolean;
  /** A formula metric (`matchLabels.type: formula`): its expression and inputs. */
  formula?: FormulaPlan;
  /**
   * Problems that do not stop collection (malformed `metric-config.` keys on the HPA, deprecated
   * forms, annotations that name a metric the HPA does not have). Absent or empty when none.
   */
  warnings?: string[];
}
