/** Plans and collection contexts for the backend collector tests. */
import type { ClusterView } from "../../src/cluster/types.ts";
import type { CollectContext } from "../../src/collectors/types.ts";
import type { MetricPlan } from "../../src/core/types.ts";

/** The fixed clock of these tests, ms since the epoch. */
export const NOW = 1_700_000_000_000;

/** An External plan of `collector` with `config` (already merged: labels under annotations). */
export function externalPlan(
  collector: string,
  config: Record<string, string>,
  metricName = "queue-length",
): MetricPlan {
  return {
    hpa: { namespace: "default", name: "app" },
    index: 0,
    metricType: "External",
    metricName,
    metricSelector: { matchLabels: { type: collector } },
    target: { type: "Value", value: "1" },
    describedObject: null,
    scaleTargetRef: { kind: "Deployment", name: "app" },
    collector,
    intervalSeconds: 60,
    perReplica: false,
    minPodReadyAgeSeconds: 0,
    config,
    error: null,
  };
}

/** A context with the real fetch, a fixed clock and an optional signal. */
export function context(signal: AbortSignal = new AbortController().signal): CollectContext {
  return {
    signal,
    now: () => NOW,
    fetch: globalThis.fetch,
    cluster: {} as ClusterView,
  };
}

/** The message of the error `p` rejects with (fails when it resolves). */
export async function rejection(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error("expected a rejection");
}

/** The message of the error `f` throws (fails when it returns). */
export function thrown(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error("expected an error");
}
