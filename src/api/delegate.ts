/**
 * Delegation (issue 26): another adapter behind the same APIService serves the metrics no HPA
 * of ours asks for. Kubernetes allows one APIService per group and version, so this adapter
 * owns them and passes on what is not its own: a metric read with the same path and query,
 * answered back as it came (status, body, content type), and the delegate's discovery list
 * merged into ours.
 *
 * A read goes out under the same deadline and response size cap as every backend request
 * (`fetchCapped`), with this adapter's credentials (its service-account token, re-read when it
 * changes, or a client certificate). A delegate that is down, slow, busy or answers something
 * that is not a metric list or a Status gives a `metav1.Status` that names it; nothing it does
 * reaches our own reads, which never wait on it. Its discovery lists are fetched in the
 * background and cached; a delegate that cannot be asked drops out of discovery until it
 * answers again.
 *
 * @module
 */
import { readFile, stat } from "node:fs/promises";
import { type CappedResponse, fetchCapped, ResponseTooLargeError } from "../collectors/http_get.ts";
import type { PlainResponse } from "../runtime/serve.ts";
import { type ClientTls, createTlsFetch, type FetchFn } from "../runtime/tls_fetch.ts";
import { statusPlain } from "./status.ts";

/** The defaults of the delegation flags. */
export const DELEGATE_DEFAULTS: Readonly<{
  tokenFile: string;
  discoveryIntervalSeconds: number;
  maxInFlight: number;
}> = Object.freeze({
  /** The service account's token, where the kubelet projects it. */
  tokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token",
  discoveryIntervalSeconds: 30,
  /** Reads in flight to one delegate; past it, a read is answered 503 at once. */
  maxInFlight: 100,
});

/** What the API app needs of a delegate (see `ApiOptions.delegates`). */
export interface ApiDelegate {
  /** Forward a read (`/apis/...` with its query) and answer as the delegate did; never throws. */
  forward(pathAndQuery: string): Promise<PlainResponse>;
  /** The delegate's resources of `version` as last discovered (none while it cannot be asked). */
  resources(version: string): readonly Record<string, unknown>[];
  /** Changes whenever `resources` would answer differently. */
  generation(): number;
}

/** The delegates of the two metrics APIs; an API without one serves only our metrics. */
export interface ApiDelegates {
  custom?: ApiDelegate;
  external?: ApiDelegate;
}

/** Where a delegate reports its requests (own metrics). */
export interface DelegateObserver {
  /**
   * One request ended: `request` is `read` or `discovery`, `code` the HTTP status or `error`,
   * `reason` why it failed (`unreachable`, `timeout`, `too-large`, `invalid-answer`, `busy`)
   * or null.
   */
  observe(obs: DelegateObservation): void;
}

/** One request to a delegate, as {@linkcode DelegateObserver} sees it. */
export interface DelegateObservation {
  /** `custom` or `external`. */
  api: string;
  /** The delegate's base URL. */
  delegate: string;
  request: "read" | "discovery";
  code: string;
  reason: string | null;
  durationSeconds: number;
}

/** Where a delegate logs. */
export interface DelegateLogger {
  warn(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
}

/** Options of {@linkcode MetricsDelegate}. */
export interface MetricsDelegateOptions {
  /** `custom.metrics.k8s.io` or `external.metrics.k8s.io`. */
  group: string;
  /** The versions of the group whose discovery lists are merged. */
  versions: readonly string[];
  /** The delegate's HTTPS base URL (a path prefix is kept). */
  url: string;
  /** The flag that named it, for messages (`--delegate-external-metrics`). */
  flag: string;
  /** TLS settings: the CA to verify it with, or none; a client certificate. */
  tls?: ClientTls;
  /** A fetch instead of one made from `tls` (tests). */
  fetch?: FetchFn;
  /** The bearer token to present (null: none), read before each request. */
  token?: () => Promise<string | null>;
  /** Deadline of one request, seconds (`--collection-timeout`). */
  timeoutSeconds: number;
  /** Largest answer read, bytes (`--max-response-bytes`). */
  maxBytes: number;
  /** Seconds between two discovery refreshes. */
  discoveryIntervalSeconds?: number;
  /** Reads in flight at once; past it a read is answered 503 without asking. */
  maxInFlight?: number;
  observer?: DelegateObserver;
  log?: DelegateLogger;
}

/** The kind of a successful answer of each group. */
const LIST_KINDS: Record<string, string> = {
  "custom.metrics.k8s.io": "MetricValueList",
  "external.metrics.k8s.io": "ExternalMetricValueList",
};

/** Why a request failed, for the own metrics' `reason` label. */
type FailReason = "unreachable" | "timeout" | "too-large" | "invalid-answer" | "busy";

/** What a delegate answered that we cannot pass on. */
class InvalidAnswer extends Error {
  override name = "InvalidAnswer";
}

/**
 * A delegate adapter of one metrics API.
 *
 * @example
 * ```ts
 * const keda = new MetricsDelegate({
 *   group: "external.metrics.k8s.io", versions: ["v1beta1"],
 *   url: "https://keda-operator-metrics-apiserver.keda", flag: "--delegate-external-metrics",
 *   tls: { ca }, token: tokenFile(DELEGATE_DEFAULTS.tokenFile), timeoutSeconds: 15,
 *   maxBytes: 10 << 20,
 * });
 * keda.start();
 * const answer = await keda.forward("/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/s0-queue");
 * await keda.close();
 * ```
 */
export class MetricsDelegate implements ApiDelegate {
  readonly group: string;
  readonly url: string;
  readonly #api: string;
  readonly #versions: readonly string[];
  readonly #name: string;
  readonly #fetch: FetchFn;
  readonly #closeFetch: () => Promise<void>;
  readonly #token: () => Promise<string | null>;
  readonly #timeoutSeconds: number;
  readonly #maxBytes: number;
  readonly #intervalMs: number;
  readonly #maxInFlight: number;
  readonly #observer?: DelegateObserver;
  readonly #log?: DelegateLogger;
  readonly #stopping = new AbortController();
  #inFlight = 0;
  /** Resources by version, as last discovered (absent: none). */
  #resources = new Map<string, { text: string; list: Record<string, unknown>[] }>();
  /** Why each version's discovery failed last, null when it did not (one log line per change). */
  #discoveryErrors = new Map<string, string | null>();
  #generation = 0;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #refreshing: Promise<void> | null = null;
  #closed = false;

  /** A delegate; nothing is asked until {@linkcode MetricsDelegate.start} or a read. */
  constructor(options: MetricsDelegateOptions) {
    this.group = options.group;
    this.url = options.url.replace(/\/+$/, "");
    this.#api = options.group.split(".")[0];
    this.#versions = options.versions;
    this.#name = `the delegate of ${options.group} (${options.flag} ${this.url})`;
    if (options.fetch) {
      this.#fetch = options.fetch;
      this.#closeFetch = () => Promise.resolve();
    } else {
      const client = createTlsFetch(options.tls ?? {});
      this.#fetch = client.fetch;
      this.#closeFetch = () => client.close();
    }
    this.#token = options.token ?? (() => Promise.resolve(null));
    this.#timeoutSeconds = options.timeoutSeconds;
    this.#maxBytes = options.maxBytes;
    this.#intervalMs = (options.discoveryIntervalSeconds ??
      DELEGATE_DEFAULTS.discoveryIntervalSeconds) * 1000;
    this.#maxInFlight = options.maxInFlight ?? DELEGATE_DEFAULTS.maxInFlight;
    this.#observer = options.observer;
    this.#log = options.log;
  }

  /** Discover the delegate's resources now and then every interval, in the background. */
  start(): void {
    if (this.#closed || this.#timer !== null || this.#refreshing !== null) return;
    const loop = (): void => {
      this.#timer = null;
      void this.refresh().finally(() => {
        if (this.#closed) return;
        this.#timer = setTimeout(loop, this.#intervalMs);
        (this.#timer as { unref?: () => void }).unref?.();
      });
    };
    loop();
  }

  /** Fetch every version's discovery list once (a refresh under way is joined). */
  refresh(): Promise<void> {
    return this.#refreshing ??= (async () => {
      try {
        await Promise.all(this.#versions.map((v) => this.#discover(v)));
      } finally {
        this.#refreshing = null;
      }
    })();
  }

  /** Stop refreshing, end the reads in flight and close the connections. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#stopping.abort(new Error("the adapter is stopping"));
    await this.#refreshing?.catch(() => {});
    await this.#closeFetch();
  }

  resources(version: string): readonly Record<string, unknown>[] {
    return this.#resources.get(version)?.list ?? [];
  }

  generation(): number {
    return this.#generation;
  }

  async forward(pathAndQuery: string): Promise<PlainResponse> {
    const started = performance.now();
    const done = (code: string, reason: FailReason | null): void => {
      this.#observer?.observe({
        api: this.#api,
        delegate: this.url,
        request: "read",
        code,
        reason,
        durationSeconds: (performance.now() - started) / 1000,
      });
    };
    if (this.#inFlight >= this.#maxInFlight) {
      done("error", "busy");
      return statusPlain(
        "ServiceUnavailable",
        `${this.#name} has ${this.#inFlight} reads in flight, the most allowed: try again later`,
      );
    }
    this.#inFlight++;
    try {
      const res = await this.#get(pathAndQuery);
      const kind = LIST_KINDS[this.group];
      const ok = res.status >= 200 && res.status <= 299;
      try {
        checkAnswer(res.text, ok ? kind : "Status");
      } catch (e) {
        done(String(res.status), "invalid-answer");
        return statusPlain(
          "InternalError",
          `${this.#name} answered ${pathAndQuery} with "${res.status}${
            res.statusText ? " " + res.statusText : ""
          }" and a body that is not ${ok ? article(kind) : "a Status"}: ${(e as Error).message}`,
        );
      }
      done(String(res.status), null);
      return {
        status: res.status,
        headers: { "content-type": res.headers.get("content-type") ?? "application/json" },
        body: res.text,
      };
    } catch (e) {
      const reason = failReason(e);
      done("error", reason);
      const message = e instanceof Error ? e.message : String(e);
      return reason === "too-large"
        ? statusPlain("InternalError", `${this.#name} answered too much: ${message}`)
        : statusPlain("ServiceUnavailable", `${this.#name} did not answer: ${message}`);
    } finally {
      this.#inFlight--;
    }
  }

  /** GET `pathAndQuery` from the delegate, read in full under the deadline and the cap. */
  async #get(pathAndQuery: string): Promise<CappedResponse> {
    const headers: Record<string, string> = {
      accept: "application/json",
      "accept-encoding": "identity",
    };
    const token = await this.#token();
    if (token !== null) headers.authorization = `Bearer ${token}`;
    const fetchFn = this.#fetch;
    return await fetchCapped(this.url + pathAndQuery, {
      fetch: (async (url: string, init?: RequestInit) => {
        try {
          return await fetchFn(url, init);
        } catch (e) {
          throw withCause(e);
        }
      }) as typeof fetch,
      signal: this.#stopping.signal,
      timeoutSeconds: this.#timeoutSeconds,
      maxBytes: this.#maxBytes,
      headers,
    });
  }

  /** Fetch one version's resource list; on any failure the delegate drops out of it. */
  async #discover(version: string): Promise<void> {
    const path = `/apis/${this.group}/${version}`;
    const started = performance.now();
    let code = "error";
    let reason: FailReason | null = null;
    let list: Record<string, unknown>[] | null = null;
    let error: string | null = null;
    try {
      const res = await this.#get(path);
      code = String(res.status);
      if (res.status !== 200) {
        throw new InvalidAnswer(
          `unsuccessful response "${res.status}${res.statusText ? " " + res.statusText : ""}"`,
        );
      }
      list = resourcesOf(res.text, `${this.group}/${version}`);
    } catch (e) {
      reason = failReason(e);
      error = e instanceof Error ? e.message : String(e);
    }
    this.#observer?.observe({
      api: this.#api,
      delegate: this.url,
      request: "discovery",
      code,
      reason,
      durationSeconds: (performance.now() - started) / 1000,
    });
    if (this.#closed) return;
    const text = list === null ? "" : JSON.stringify(list);
    const before = this.#resources.get(version);
    if (list === null || list.length === 0) {
      if (before !== undefined) {
        this.#resources.delete(version);
        this.#generation++;
      }
    } else if (before?.text !== text) {
      this.#resources.set(version, { text, list });
      this.#generation++;
    }
    if (!this.#discoveryErrors.has(version) || this.#discoveryErrors.get(version) !== error) {
      this.#discoveryErrors.set(version, error);
      if (error !== null) {
        this.#log?.warn(`${this.#name} left out of discovery of ${this.group}/${version}`, {
          error,
        });
      } else {
        this.#log?.info(`${this.#name} in discovery of ${this.group}/${version}`, {
          resources: list?.length ?? 0,
        });
      }
    }
  }
}

/** Throws {@linkcode InvalidAnswer} unless `text` is a JSON object of `kind` (a list: with items). */
function checkAnswer(text: string, kind: string): void {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new InvalidAnswer("invalid JSON");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new InvalidAnswer("not a JSON object");
  }
  const got = (body as { kind?: unknown }).kind;
  if (got !== kind) {
    throw new InvalidAnswer(
      got === undefined ? "no kind" : `kind ${JSON.stringify(got).slice(0, 100)}`,
    );
  }
  if (kind !== "Status" && !Array.isArray((body as { items?: unknown }).items)) {
    throw new InvalidAnswer("items is not a list");
  }
}

/** The resources of an `APIResourceList` of `groupVersion`, each an object with a name. */
function resourcesOf(text: string, groupVersion: string): Record<string, unknown>[] {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new InvalidAnswer("invalid JSON");
  }
  const doc = body as { kind?: unknown; groupVersion?: unknown; resources?: unknown };
  if (typeof doc !== "object" || doc === null || doc.kind !== "APIResourceList") {
    throw new InvalidAnswer("not an APIResourceList");
  }
  if (doc.groupVersion !== groupVersion) {
    throw new InvalidAnswer(
      `groupVersion ${JSON.stringify(doc.groupVersion)}, want "${groupVersion}"`,
    );
  }
  if (!Array.isArray(doc.resources)) throw new InvalidAnswer("resources is not a list");
  return doc.resources.filter((r): r is Record<string, unknown> =>
    typeof r === "object" && r !== null && !Array.isArray(r) &&
    typeof (r as { name?: unknown }).name === "string" && (r as { name: string }).name !== ""
  );
}

/**
 * The error of a fetch with its cause's words: undici's fetch (Node) says only "fetch failed",
 * and the cause says what failed (`connect ECONNREFUSED 10.0.0.1:443`, a certificate error).
 */
function withCause(e: unknown): unknown {
  if (e instanceof Error && e.message === "fetch failed" && e.cause instanceof Error) {
    const why = e.cause.message ||
      (e.cause instanceof AggregateError && e.cause.errors[0] instanceof Error
        ? e.cause.errors[0].message
        : "");
    if (why) return new Error(why, { cause: e });
  }
  return e;
}

/** `a MetricValueList`, `an ExternalMetricValueList`. */
function article(kind: string): string {
  return `${/^[AEIOU]/.test(kind) ? "an" : "a"} ${kind}`;
}

function failReason(e: unknown): FailReason {
  if (e instanceof ResponseTooLargeError) return "too-large";
  if (e instanceof InvalidAnswer) return "invalid-answer";
  const message = e instanceof Error ? e.message : String(e);
  return /: timed out after /.test(message) ? "timeout" : "unreachable";
}

/**
 * A bearer token read from `path`, read again whenever the file changes (the kubelet rotates
 * projected service-account tokens); null while the file does not exist.
 *
 * @example
 * ```ts
 * const token = tokenFile("/var/run/secrets/kubernetes.io/serviceaccount/token");
 * await token(); // "eyJhbGciOi..." or null
 * ```
 */
export function tokenFile(path: string): () => Promise<string | null> {
  let seen = "";
  let token: string | null = null;
  return async () => {
    let stamp: string;
    try {
      const s = await stat(path);
      stamp = `${s.ino}:${s.size}:${s.mtimeMs}`;
    } catch {
      seen = "";
      return token = null;
    }
    if (stamp !== seen) {
      try {
        token = (await readFile(path, "utf8")).trim() || null;
        seen = stamp;
      } catch {
        token = null;
      }
    }
    return token;
  };
}
