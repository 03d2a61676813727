/**
 * What the API asks of prometheus-adapter's rules (`--prometheus-adapter-config`, issue 49):
 * the metrics they serve, for discovery, and the answer to a read that no HPA of ours covers.
 * The API never queries Prometheus itself: the source (src/engine/prometheus_adapter.ts)
 * answers from its cache, or with a promise when it must ask Prometheus first (a first read, a
 * name not discovered yet).
 *
 * @module
 */
import type { Selector } from "../core/kubernetes/label_selector.ts";
import type { CustomItem, ExternalItem, ServedMetric } from "../store/types.ts";

/** A custom metrics read, as the URL asks it. */
export interface AdapterCustomRead {
  /** The objects' namespace; "" for cluster-scoped objects (Namespaces included). */
  namespace: string;
  /** As the URL names it: `pods`, `deployments.apps`. */
  groupResource: string;
  /** Whether the URL is namespaced (`/namespaces/<ns>/...`). */
  namespaced: boolean;
  /** The object's name, or `*`. */
  name: string;
  metricName: string;
  /** The request's `metricLabelSelector`. */
  metricSelector: Selector;
  /** Its canonical text. */
  metricSelectorText: string;
  /** `*` reads: the request's `labelSelector` canonical text (part of the cache key). */
  labelSelectorText: string;
  /**
   * `*` reads: the names of the objects the `labelSelector` selects now, or null when they
   * cannot be listed (only pods can).
   */
  names: () => string[] | null;
}

/** An external metrics read. */
export interface AdapterExternalRead {
  namespace: string;
  metricName: string;
  /** The request's `labelSelector`. */
  selector: Selector;
  selectorText: string;
}

/** An answer: items, a 404 reason, or why Prometheus could not be asked. */
export type AdapterAnswer<T> =
  | { items: T[] }
  | { notFound: string }
  | { internalError: string };

/** What a read gets: an answer now, one later, or undefined when the rules serve no such metric. */
export type AdapterResult<T> =
  | AdapterAnswer<T>
  | Promise<AdapterAnswer<T> | undefined>
  | undefined;

/** prometheus-adapter's rules as the API sees them. */
export interface PrometheusAdapterSource {
  /** A number that changes whenever `servedMetrics` would answer differently. */
  version(): number;
  /** The metrics discovered, for the discovery documents. */
  servedMetrics(): readonly ServedMetric[];
  /** A custom metrics read (`rules`). */
  custom(read: AdapterCustomRead): AdapterResult<CustomItem>;
  /** An external metrics read (`externalRules`). */
  external(read: AdapterExternalRead): AdapterResult<ExternalItem>;
}
