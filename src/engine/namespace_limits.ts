/**
 * `--max-metrics-per-namespace`: the plans of a namespace that could run are kept in their
 * order (the oldest HPAs' first; core/namespace_limit.ts), the first `limit` run and the others
 * are refused until room is made. Settling a namespace after plans came or went looks only at
 * the plans that may have crossed the limit.
 */
import type { KubeObject } from "../cluster/types.ts";
import type { MetricPlan } from "../core/types.ts";
import {
  compareMetricRank,
  hpaCreatedAt,
  type MetricRank,
  namespaceLimitMessage,
} from "../core/namespace_limit.ts";
import type { PlanEntry } from "./state.ts";

/** The plans of one namespace that could run, under `--max-metrics-per-namespace`. */
interface NamespacePlans {
  /** In their order (oldest HPA first); the first `limit` run. */
  ranked: PlanEntry[];
  /** Plans added, and the number removed, since the namespace was last settled. */
  added: PlanEntry[];
  removed: number;
}

/** The namespace of an HPA key (`namespace/name`). */
export function namespaceOf(hpaKey: string): string {
  return hpaKey.slice(0, hpaKey.indexOf("/"));
}

/** What {@linkcode NamespaceLimits} starts and stops plans with. */
export interface NamespaceLimitsOptions {
  /** Most plans run per namespace; 0 no limit. */
  limit: number;
  /** Start a plan that was not running (or never ran). */
  admit: (entry: PlanEntry) => void;
  /** Stop (or never start) a plan over its namespace's limit, with the reason. */
  refuse: (entry: PlanEntry, message: string) => void;
}

/**
 * The per-namespace metric limit.
 *
 * @example
 * ```ts
 * const limits = new NamespaceLimits({ limit: 50, admit, refuse });
 * entry.rank = limits.rankOf(hpa, plan);
 * limits.rank(entry);
 * limits.settle("team-a"); // admits or refuses the plans that crossed the limit
 * ```
 */
export class NamespaceLimits {
  /** `--max-metrics-per-namespace`; 0 no limit. */
  readonly limit: number;
  readonly #admit: (entry: PlanEntry) => void;
  readonly #refuse: (entry: PlanEntry, message: string) => void;
  /** Under a limit: the plans that could run, per namespace. */
  #namespaces = new Map<string, NamespacePlans>();

  /** A limit of `options.limit` plans per namespace (0 none). */
  constructor(options: NamespaceLimitsOptions) {
    this.limit = options.limit;
    this.#admit = options.admit;
    this.#refuse = options.refuse;
  }

  /**
   * HPAs in the order of their plans under a limit (the oldest first), so that the plans that
   * will run start first, and no collector is started and stopped again for an older HPA
   * listed later; as they are without a limit.
   */
  order(hpas: KubeObject[]): KubeObject[] {
    if (this.limit === 0) return hpas;
    const rank = (o: KubeObject): MetricRank => ({
      createdAt: hpaCreatedAt(o),
      hpa: o.metadata.name,
      index: 0,
    });
    return [...hpas].sort((a, b) => compareMetricRank(rank(a), rank(b)));
  }

  /** The place of a plan of `hpa` in its namespace's order. */
  rankOf(hpa: KubeObject, plan: MetricPlan): MetricRank {
    return { createdAt: hpaCreatedAt(hpa), hpa: plan.hpa.name, index: plan.index };
  }

  #namespacePlans(namespace: string): NamespacePlans {
    let ns = this.#namespaces.get(namespace);
    if (!ns) {
      ns = { ranked: [], added: [], removed: 0 };
      this.#namespaces.set(namespace, ns);
    }
    return ns;
  }

  /** The first index in `ranked` whose rank is not before `rank`. */
  #lowerBound(ranked: PlanEntry[], rank: MetricRank): number {
    let lo = 0;
    let hi = ranked.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareMetricRank(ranked[mid].rank!, rank) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Put a plan that could run in its namespace's order (it runs or not once settled). */
  rank(entry: PlanEntry): void {
    const ns = this.#namespacePlans(entry.plan.hpa.namespace);
    const rank = entry.rank!;
    let i = this.#lowerBound(ns.ranked, rank);
    // after a plan of the same rank (the one it replaces, removed in the same reconcile)
    while (i < ns.ranked.length && compareMetricRank(ns.ranked[i].rank!, rank) === 0) i++;
    ns.ranked.splice(i, 0, entry);
    ns.added.push(entry);
  }

  /** Take a plan out of its namespace's order. */
  unrank(entry: PlanEntry): void {
    const ns = this.#namespaces.get(entry.plan.hpa.namespace);
    if (!ns || entry.rank === null) return;
    let i = this.#lowerBound(ns.ranked, entry.rank);
    while (i < ns.ranked.length && ns.ranked[i] !== entry) i++;
    if (i === ns.ranked.length) return;
    ns.ranked.splice(i, 1);
    ns.removed++;
  }

  /**
   * Run the first `limit` plans of a namespace and refuse the others, after plans came or
   * went. Only the plans that may have crossed the limit are looked at: with `r` removed and
   * `a` added, the others moved by at most `r` places down or `a` up, so those now in
   * [limit - r, limit + a), and the added ones.
   */
  settle(namespace: string): void {
    const ns = this.#namespaces.get(namespace);
    if (!ns || (ns.added.length === 0 && ns.removed === 0)) return;
    const limit = this.limit;
    const { ranked } = ns;
    const count = ranked.length;
    const place = (entry: PlanEntry, i: number): void => {
      if (i < limit) {
        if (!entry.admitted) this.#admit(entry);
      } else if (entry.admitted || entry.refused === null) {
        this.#refuse(entry, namespaceLimitMessage(entry.plan, limit));
      }
    };
    const end = Math.min(count, limit + ns.added.length);
    for (let i = Math.max(0, limit - ns.removed); i < end; i++) place(ranked[i], i);
    for (const entry of ns.added) {
      let i = this.#lowerBound(ranked, entry.rank!);
      while (i < count && ranked[i] !== entry) i++;
      if (i < count) place(entry, i); // (not removed again in the same reconcile)
    }
    ns.added.length = 0;
    ns.removed = 0;
    if (count === 0) this.#namespaces.delete(namespace);
  }
}
