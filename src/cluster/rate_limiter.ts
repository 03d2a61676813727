/**
 * The client-side rate limit of requests to the Kubernetes API (client-go's QPS and Burst): a
 * token bucket that lists and writes wait on; watches do not.
 *
 * @module
 */

/** The rate limit of the Kubernetes API client when none is given. */
export const KUBE_CLIENT_DEFAULTS: Readonly<{ qps: number; burst: number }> = {
  qps: 50,
  burst: 100,
};

/** Options of `TokenBucket`. */
export interface TokenBucketOptions {
  /** Tokens added per second; 0 or less disables limiting. */
  qps: number;
  /** Bucket size (at least 1). */
  burst: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** A token bucket: `take()` resolves when a request may be sent. */
export class TokenBucket {
  #tokens: number;
  #last: number;
  readonly #qps: number;
  readonly #burst: number;
  readonly #now: () => number;
  readonly #sleep: (ms: number) => Promise<void>;

  constructor(options: TokenBucketOptions) {
    this.#qps = options.qps;
    this.#burst = Math.max(1, options.burst);
    this.#now = options.now ?? (() => Date.now());
    this.#sleep = options.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.#tokens = this.#burst;
    this.#last = this.#now();
  }

  /** Wait for a token; how long was waited (ms). Tokens are reserved in call order. */
  async take(): Promise<number> {
    if (!(this.#qps > 0)) return 0;
    const now = this.#now();
    this.#tokens = Math.min(this.#burst, this.#tokens + ((now - this.#last) / 1000) * this.#qps);
    this.#last = now;
    this.#tokens -= 1;
    if (this.#tokens >= 0) return 0;
    const wait = Math.ceil((-this.#tokens / this.#qps) * 1000);
    await this.#sleep(wait);
    return wait;
  }
}
