/**
 * Wires the status page of `serve`: what `buildStatus` (api/status_model.ts) reads, from the
 * running engine, store, cluster view and history, with the serve flags that shape it.
 */
import { buildStatus, type StatusReport } from "../api/status_model.ts";
import type { ClusterView } from "../cluster/types.ts";
import type { Engine } from "../engine/engine.ts";
import type { MetricHistory } from "../engine/history.ts";
import type { MetricStore } from "../store/store.ts";
import { boolFlag, enabledCollectors, type FlagValues, numberFlag } from "./flags.ts";

/** What {@linkcode statusReporter} reads. */
export interface StatusSources {
  engine: Pick<Engine, "status" | "fallbackStatus">;
  store: Pick<MetricStore, "conflicts">;
  cluster: Pick<ClusterView, "list">;
  history: Pick<MetricHistory, "get">;
  flags: FlagValues;
  now: () => number;
}

/** A function that builds the status document now (one per request). */
export function statusReporter(sources: StatusSources): () => StatusReport {
  const { engine, store, cluster, history, flags, now } = sources;
  const planOptions = {
    defaultIntervalSeconds: numberFlag(flags, "default-collection-interval"),
    enabledCollectors: enabledCollectors(flags),
    allowLinkLocalTargets: boolFlag(flags, "allow-link-local-targets"),
  };
  return () =>
    buildStatus({
      now: now(),
      ttlSeconds: numberFlag(flags, "metrics-ttl"),
      hpas: cluster.list("HorizontalPodAutoscaler"),
      plans: engine.status(),
      fallbacks: engine.fallbackStatus(),
      conflicts: store.conflicts(),
      history: (key) => history.get(key),
      planOptions,
      tolerance: numberFlag(flags, "horizontal-pod-autoscaler-tolerance"),
    });
}
