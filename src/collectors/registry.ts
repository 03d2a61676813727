/**
 * The collector registry: factories by collector type (and metric type, since `json-path` is
 * both a Pods and an External collector). The factories of a release are listed, with their
 * options, in src/cli/collectors.ts.
 */
import type { MetricType } from "../core/types.ts";
import type { CollectorFactory } from "./types.ts";

/** Factories looked up by `plan.collector` and `plan.metricType`. */
export interface CollectorRegistry {
  /** The factory for a collector type and metric type, or undefined. */
  lookup(collector: string, metricType: MetricType): CollectorFactory | undefined;
  /** Every registered collector type, sorted. */
  types(): string[];
}

const ALL_TYPES: readonly MetricType[] = ["Pods", "Object", "External"];

/**
 * Build a registry. Throws when two factories claim the same collector and metric type.
 *
 * @example
 * ```ts
 * const registry = createCollectorRegistry([podJsonPathFactory, httpJsonPathFactory]);
 * registry.lookup("json-path", "Pods"); // the pod json-path factory
 * ```
 */
export function createCollectorRegistry(factories: readonly CollectorFactory[]): CollectorRegistry {
  const byKey = new Map<string, CollectorFactory>();
  for (const f of factories) {
    for (const t of f.metricTypes ?? ALL_TYPES) {
      const key = `${f.type}\u0000${t}`;
      if (byKey.has(key)) {
        throw new Error(`collector "${f.type}" registered twice for ${t} metrics`);
      }
      byKey.set(key, f);
    }
  }
  const types = [...new Set(factories.map((f) => f.type))].sort();
  return {
    lookup: (collector, metricType) => byKey.get(`${collector}\u0000${metricType}`),
    types: () => [...types],
  };
}
