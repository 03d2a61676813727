/**
 * Bearer tokens that writers resolve from the cluster and collectors send: the Knative
 * reconciler reads the Secret behind a KEDA trigger authentication named by a metric's
 * `bearer-token-from`, and the Prometheus collector sends it. Keys come from
 * `bearerTokenKey` (core/kube_metrics_adapter/configs/prometheus.ts): a namespaced TriggerAuthentication serves only
 * HPAs of its namespace.
 */

/** The tokens by key, with why a key has none (shown when a collection needs it). */
export class BearerTokens {
  readonly #tokens = new Map<string, { token: string } | { error: string }>();

  /** Set the token of `key`, or why there is none. */
  set(key: string, value: { token: string } | { error: string }): void {
    this.#tokens.set(key, value);
  }

  /** Forget `key`. */
  delete(key: string): void {
    this.#tokens.delete(key);
  }

  /**
   * The token of `key`; throws an Error saying why there is none (not read yet, or the
   * reason the writer gave).
   */
  get(key: string): string {
    const v = this.#tokens.get(key);
    if (v === undefined) {
      throw new Error(
        `no bearer token for ${
          key.replace(/^\//, "")
        } yet (the Knative reconciler, --knative-autoscaler, reads it)`,
      );
    }
    if ("error" in v) throw new Error(`no bearer token for ${key.replace(/^\//, "")}: ${v.error}`);
    return v.token;
  }

  /** The keys held. */
  keys(): string[] {
    return [...this.#tokens.keys()];
  }
}
