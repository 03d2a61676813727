/**
 * A small client of Prometheus' HTTP API: one instant query (`/api/v1/query`), as the Go client
 * sends it (form POST, GET when the server answers 405), with a deadline, a cap on the bytes
 * read, a bearer token re-read from its file when the file changes, and the documented
 * response JSON parsed into typed results. Redirects are never followed. A server an HPA names
 * (`chosenByHpa`) gets no token, has its host checked for link-local addresses before each
 * request, and is never quoted in errors: they give its status and Prometheus' error type.
 */
import { readFile, stat } from "node:fs/promises";
import {
  type CappedResponse,
  fetchCapped,
  type FetchCappedOptions,
  type HostLookup,
  requestDeadline,
  ResponseTooLargeError,
  unsuccessfulResponse,
} from "./http_get.ts";

/** Default of `--prometheus-query-timeout`, seconds. */
export const DEFAULT_PROMETHEUS_QUERY_TIMEOUT_SECONDS = 10;

/** One series of an instant vector. */
export interface VectorSample {
  labels: Record<string, string>;
  value: number;
  /** Sample time, ms since the epoch. */
  timestamp: number;
}

/** One series of a range vector. */
export interface MatrixSeries {
  labels: Record<string, string>;
  /** `[ms since the epoch, value]` pairs. */
  values: [number, number][];
}

/** The `data` of a successful query, by `resultType`. */
export type QueryData =
  | { resultType: "scalar"; value: number; timestamp: number }
  | { resultType: "string"; value: string; timestamp: number }
  | { resultType: "vector"; series: VectorSample[] }
  | { resultType: "matrix"; series: MatrixSeries[] };

/** A successful query: its data and the server's warnings (if any). */
export type QueryResult = QueryData & { warnings?: string[] };

/** A failed query; `errorType` is Prometheus' own (`bad_data`, `execution`, `timeout`, ...). */
export class PrometheusQueryError extends Error {
  /** Prometheus' `errorType`, when the server answered with one. */
  readonly errorType: string | undefined;
  /** HTTP status, when a response arrived. */
  readonly status: number | undefined;

  /** An error with an optional Prometheus error type and HTTP status. */
  constructor(message: string, options: { errorType?: string; status?: number } = {}) {
    super(message);
    this.name = "PrometheusQueryError";
    this.errorType = options.errorType;
    this.status = options.status;
  }
}

/** Options of {@linkcode PrometheusClient.query}. */
export interface InstantQueryOptions {
  fetch: typeof fetch;
  /** Aborts the request (the collection's signal). */
  signal: AbortSignal;
  /** Evaluation time, ms since the epoch. */
  time: number;
  /** Deadline of the whole request, seconds; also sent as the query's `timeout`. */
  timeoutSeconds: number;
  /** Largest body read, bytes. */
  maxBytes: number;
  /** Resolver for the link-local check of a `chosenByHpa` server (node:dns when absent). */
  lookup?: HostLookup;
  /**
   * Sent as the `namespace` parameter after the others when set (as KEDA sends it, for
   * Thanos/Cortex tenancy; plain Prometheus ignores it).
   */
  namespace?: string;
}

/** Options of {@linkcode PrometheusClient.series}. */
export interface SeriesQueryOptions {
  fetch: typeof fetch;
  signal: AbortSignal;
  /** `start`, ms since the epoch (series with samples since then); none when absent. */
  start?: number;
  /** Deadline of the whole request, seconds. */
  timeoutSeconds: number;
  /** Largest body read, bytes. */
  maxBytes: number;
}

/** Options of {@linkcode PrometheusClient}. */
export interface PrometheusClientOptions {
  /** Base URL of the server (`http://prometheus:9090`, a path prefix is kept). */
  url: string;
  /** File holding a bearer token, re-read whenever it changes. */
  tokenFile?: string | null;
  /**
   * Set for a URL from an HPA's annotation: no token (the constructor refuses one), a
   * link-local check of the host before each request (unless `allowLinkLocal`), and errors
   * that never quote the server.
   */
  chosenByHpa?: { allowLinkLocal: boolean };
}

/** Prometheus' own `errorType` values: words of the API, safe to repeat whoever the server is. */
const PROMETHEUS_ERROR_TYPES = new Set([
  "timeout",
  "canceled",
  "execution",
  "bad_data",
  "internal",
  "unavailable",
  "not_found",
  "not_acceptable",
]);

/** Longest text of a Prometheus error repeated from an operator-configured server. */
const MAX_ERROR_TEXT = 200;

/**
 * Parse a sample value as Prometheus writes it (`"1.5"`, `"NaN"`, `"+Inf"`, `"-Inf"`).
 * Throws on anything else.
 */
export function parseSampleValue(raw: unknown): number {
  if (typeof raw !== "string") throw new Error(`invalid sample value ${JSON.stringify(raw)}`);
  if (raw === "NaN") return NaN;
  if (/^\+?Inf$/i.test(raw)) return Infinity;
  if (/^-Inf$/i.test(raw)) return -Infinity;
  const n = Number(raw);
  if (raw.trim() === "" || Number.isNaN(n)) {
    throw new Error(`invalid sample value ${JSON.stringify(raw)}`);
  }
  return n;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function parsePair(v: unknown, what: string): [number, unknown] {
  if (!Array.isArray(v) || v.length !== 2 || typeof v[0] !== "number") {
    throw new Error(`invalid ${what} ${JSON.stringify(v)?.slice(0, 100)}`);
  }
  return [Math.round(v[0] * 1000), v[1]];
}

function parseLabels(v: unknown): Record<string, string> {
  if (!isRecord(v)) throw new Error(`invalid series labels ${JSON.stringify(v)?.slice(0, 100)}`);
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(v)) {
    if (typeof val !== "string") throw new Error(`invalid value of label "${k}"`);
    out[k] = val;
  }
  return out;
}

function parseData(data: unknown): QueryData {
  if (!isRecord(data)) throw new Error(`missing "data"`);
  const type = data.resultType;
  const result = data.result;
  switch (type) {
    case "scalar": {
      const [timestamp, raw] = parsePair(result, "scalar");
      return { resultType: "scalar", value: parseSampleValue(raw), timestamp };
    }
    case "string": {
      const [timestamp, raw] = parsePair(result, "string");
      if (typeof raw !== "string") throw new Error(`invalid string result`);
      return { resultType: "string", value: raw, timestamp };
    }
    case "vector": {
      if (!Array.isArray(result)) throw new Error(`invalid vector result`);
      return {
        resultType: "vector",
        series: result.map((s): VectorSample => {
          if (!isRecord(s)) throw new Error(`invalid vector series`);
          const labels = parseLabels(s.metric ?? {});
          if (s.value === undefined) {
            // Native histograms come as `histogram`: not a number to scale on.
            throw new Error(`vector series ${JSON.stringify(labels)} has no float value`);
          }
          const [timestamp, raw] = parsePair(s.value, "sample");
          return { labels, value: parseSampleValue(raw), timestamp };
        }),
      };
    }
    case "matrix": {
      if (!Array.isArray(result)) throw new Error(`invalid matrix result`);
      return {
        resultType: "matrix",
        series: result.map((s): MatrixSeries => {
          if (!isRecord(s)) throw new Error(`invalid matrix series`);
          const values = Array.isArray(s.values) ? s.values : [];
          return {
            labels: parseLabels(s.metric ?? {}),
            values: values.map((p): [number, number] => {
              const [t, raw] = parsePair(p, "sample");
              return [t, parseSampleValue(raw)];
            }),
          };
        }),
      };
    }
    default:
      throw new Error(`unknown resultType ${JSON.stringify(type)}`);
  }
}

/**
 * Parse the JSON body of `/api/v1/query`: `{"status":"success","data":{...}}` gives the typed
 * data; `{"status":"error","errorType":...,"error":...}` throws a `PrometheusQueryError` with
 * both; anything else throws naming `url`.
 *
 * @example
 * ```ts
 * parseQueryResponse('{"status":"success","data":{"resultType":"scalar","result":[1,"3"]}}', {
 *   url: "http://prometheus:9090/api/v1/query",
 * }); // { resultType: "scalar", value: 3, timestamp: 1000 }
 * ```
 */
export function parseQueryResponse(
  body: string,
  options: { url: string; status?: number },
): QueryResult {
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch (e) {
    throw new PrometheusQueryError(
      `invalid JSON from ${options.url}: ${(e as Error).message}`,
      { status: options.status },
    );
  }
  if (!isRecord(doc) || (doc.status !== "success" && doc.status !== "error")) {
    throw new PrometheusQueryError(
      `invalid response from ${options.url}: not a Prometheus API response`,
      { status: options.status },
    );
  }
  if (doc.status === "error") {
    const errorType = typeof doc.errorType === "string" ? doc.errorType.slice(0, 40) : "error";
    const raw = typeof doc.error === "string" ? doc.error : "unknown error";
    const error = raw.length > MAX_ERROR_TEXT ? `${raw.slice(0, MAX_ERROR_TEXT)}...` : raw;
    throw new PrometheusQueryError(`${errorType}: ${error}`, {
      errorType,
      status: options.status,
    });
  }
  let data: QueryData;
  try {
    data = parseData(doc.data);
  } catch (e) {
    throw new PrometheusQueryError(
      `invalid response from ${options.url}: ${(e as Error).message}`,
      { status: options.status },
    );
  }
  const warnings = Array.isArray(doc.warnings)
    ? doc.warnings.filter((w): w is string => typeof w === "string")
    : [];
  return warnings.length > 0 ? { ...data, warnings } : data;
}

/**
 * The `data` of a `/api/v1/series` answer: label sets. Throws a `PrometheusQueryError` on an
 * error answer (with Prometheus' error type and text), a non-2xx status or another shape.
 */
export function parseSeriesResponse(
  body: string,
  options: { url: string; status: number },
): Record<string, string>[] {
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch {
    throw new PrometheusQueryError(
      `${
        options.status >= 200 && options.status <= 299 ? "invalid JSON" : `status ${options.status}`
      } from ${options.url}`,
      { status: options.status },
    );
  }
  if (isRecord(doc) && doc.status === "error") {
    const errorType = typeof doc.errorType === "string" ? doc.errorType.slice(0, 40) : "error";
    const raw = typeof doc.error === "string" ? doc.error : "unknown error";
    const error = raw.length > MAX_ERROR_TEXT ? `${raw.slice(0, MAX_ERROR_TEXT)}...` : raw;
    throw new PrometheusQueryError(`${errorType}: ${error}`, {
      errorType,
      status: options.status,
    });
  }
  if (options.status < 200 || options.status > 299) {
    throw new PrometheusQueryError(`status ${options.status} from ${options.url}`, {
      status: options.status,
    });
  }
  if (!isRecord(doc) || doc.status !== "success" || !Array.isArray(doc.data)) {
    throw new PrometheusQueryError(
      `invalid response from ${options.url}: not a Prometheus series answer`,
      { status: options.status },
    );
  }
  return doc.data.map((labels) => {
    if (!isRecord(labels)) {
      throw new PrometheusQueryError(
        `invalid response from ${options.url}: a series is not an object`,
      );
    }
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(labels)) {
      if (typeof v !== "string") {
        throw new PrometheusQueryError(
          `invalid response from ${options.url}: label ${JSON.stringify(k)} is not a string`,
        );
      }
      out[k] = v;
    }
    return out;
  });
}

/** A bearer token read from a file, re-read when the file's identity, size or times change. */
class TokenFile {
  readonly path: string;
  #stamp = "";
  #token = "";

  constructor(path: string) {
    this.path = path;
  }

  async read(): Promise<string> {
    let stamp: string;
    try {
      const s = await stat(this.path);
      stamp = `${s.ino}|${s.size}|${s.mtimeMs}|${s.ctimeMs}`;
      if (stamp === this.#stamp) return this.#token;
      const token = (await readFile(this.path, "utf8")).trim();
      if (token === "") throw new Error("the file is empty");
      this.#token = token;
      this.#stamp = stamp;
      return token;
    } catch (e) {
      throw new PrometheusQueryError(
        `cannot read token file "${this.path}": ${(e as Error).message}`,
      );
    }
  }
}

/**
 * A query parameter as Go's `url.QueryEscape` writes it: letters, digits and `-_.~` stay, a
 * space is `+`, every other byte of the UTF-8 text is `%XX`.
 *
 * @example
 * ```ts
 * queryEscape('sum(rate(x{a="b c"}[1m]))'); // "sum%28rate%28x%7Ba%3D%22b+c%22%7D%5B1m%5D%29%29"
 * ```
 */
export function queryEscape(s: string): string {
  return encodeURIComponent(s).replace(/%20/g, "+").replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/** Seconds as Prometheus reads a `time` or `timeout` parameter (a float number of seconds). */
function seconds(ms: number): string {
  return (ms / 1000).toFixed(3).replace(/0+$/, "").replace(/\.$/, "");
}

/** A Prometheus error type from a body, if it is one of the API's own, else undefined. */
function knownErrorType(body: string): string | undefined {
  try {
    const doc = JSON.parse(body);
    return isRecord(doc) && doc.status === "error" && typeof doc.errorType === "string" &&
        PROMETHEUS_ERROR_TYPES.has(doc.errorType)
      ? doc.errorType
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The answer of a server an HPA named, read without ever quoting it (errors are served in 404
 * messages and events; the URL may point at an internal service that holds secrets): errors
 * give the status and a known Prometheus error type; series labels are dropped (their only use
 * is in error texts) and warnings are counted, not repeated.
 */
function opaqueResult(res: CappedResponse, url: string): QueryResult {
  const ok = res.status >= 200 && res.status <= 299;
  const errorType = knownErrorType(res.text);
  if (!ok || errorType !== undefined) {
    const type = errorType === undefined ? "" : ` (prometheus error ${errorType})`;
    throw new PrometheusQueryError(`${unsuccessfulResponse(res, url)}${type}`, {
      errorType,
      status: res.status,
    });
  }
  let result: QueryResult;
  try {
    result = parseQueryResponse(res.text, { url, status: res.status });
  } catch {
    throw new PrometheusQueryError(
      `invalid response from ${url}: not a Prometheus API response of a known form`,
      { status: res.status },
    );
  }
  const warnings = result.warnings?.length
    ? [`the server sent ${result.warnings.length} warning(s), not repeated (an HPA named it)`]
    : [];
  let data: QueryData = result;
  if (result.resultType === "vector") {
    data = {
      resultType: "vector",
      series: result.series.map((s) => ({ ...s, labels: {} })),
    };
  } else if (result.resultType === "matrix") {
    data = {
      resultType: "matrix",
      series: result.series.map((s) => ({ ...s, labels: {} })),
    };
  } else if (result.resultType === "string") {
    data = { resultType: "string", value: "", timestamp: result.timestamp };
  } else {
    data = { resultType: "scalar", value: result.value, timestamp: result.timestamp };
  }
  return warnings.length > 0 ? { ...data, warnings } : data;
}

/**
 * One Prometheus server. Holds no connection state; the token file's content is cached until
 * the file changes.
 *
 * @example
 * ```ts
 * const prom = new PrometheusClient({ url: "http://127.0.0.1:9090" });
 * const r = await prom.query("sum(up)", {
 *   fetch, signal: AbortSignal.timeout(15_000), time: Date.now(), timeoutSeconds: 10,
 *   maxBytes: 1 << 20,
 * });
 * ```
 */
export class PrometheusClient {
  /** The server's base URL as given. */
  readonly url: string;
  /** The query endpoint (`<url>/api/v1/query`). */
  readonly queryUrl: string;
  /** The series endpoint (`<url>/api/v1/series`). */
  readonly seriesUrl: string;
  /** The bearer token file, or null. */
  readonly tokenFile: string | null;
  /** Set when an HPA named this server (see {@linkcode PrometheusClientOptions}). */
  readonly chosenByHpa: { allowLinkLocal: boolean } | null;
  readonly #token: TokenFile | null;

  /** A client of the server at `options.url`; throws when it is not an http(s) URL. */
  constructor(options: PrometheusClientOptions) {
    let u: URL;
    try {
      u = new URL(options.url);
    } catch {
      throw new Error(`invalid Prometheus server URL "${options.url}"`);
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") {
      throw new Error(`invalid Prometheus server URL "${options.url}": want http or https`);
    }
    this.url = options.url;
    u.search = "";
    u.hash = "";
    this.queryUrl = `${u.href.replace(/\/+$/, "")}/api/v1/query`;
    this.seriesUrl = `${u.href.replace(/\/+$/, "")}/api/v1/series`;
    this.tokenFile = options.tokenFile ? options.tokenFile : null;
    this.chosenByHpa = options.chosenByHpa ?? null;
    if (this.chosenByHpa && this.tokenFile) {
      throw new Error(
        `prometheus server "${options.url}" named by an HPA gets no token (token file "${this.tokenFile}")`,
      );
    }
    this.#token = this.tokenFile ? new TokenFile(this.tokenFile) : null;
  }

  async #authorization(): Promise<string | undefined> {
    if (this.#token) return `Bearer ${await this.#token.read()}`;
    return undefined;
  }

  /**
   * The body of an instant query as estafette-k8s-hpa-scaler sends it: `GET
   * <url>/api/v1/query?query=<query>` (Go's QueryEscape: a space is `+`), no `time`, for a
   * caller that reads the body with its own rules (the replica guard). Resolves with the body of
   * an answer below 400; rejects on a failed request, an answer of 400 or more (with
   * Prometheus' error text when it sent one, except from a server an HPA named), an oversized
   * body, the deadline or an abort.
   */
  async getInstantBody(
    query: string,
    options: Omit<InstantQueryOptions, "time">,
  ): Promise<string> {
    const res = await this.#get(`${this.queryUrl}?query=${queryEscape(query)}`, options);
    if (res.status >= 400) {
      const errorType = knownErrorType(res.text);
      let why = "";
      if (!this.chosenByHpa) {
        try {
          const doc = JSON.parse(res.text);
          if (isRecord(doc) && typeof doc.error === "string") {
            why = `: ${doc.error.slice(0, MAX_ERROR_TEXT)}`;
          }
        } catch {
          // not Prometheus' error JSON: the status says it
        }
      } else if (errorType !== undefined) why = ` (prometheus error ${errorType})`;
      throw new PrometheusQueryError(`${unsuccessfulResponse(res, this.queryUrl)}${why}`, {
        status: res.status,
        errorType,
      });
    }
    return res.text;
  }

  /**
   * The series matching `match` (`GET <url>/api/v1/series?match[]=<match>&start=<seconds>`,
   * as prometheus-adapter's client sends it: one `match[]`, no `end`, parameters in Go's
   * url.Values order), each as its label set with the name as `__name__`. Rejects with a
   * `PrometheusQueryError` as {@linkcode PrometheusClient.query} does.
   */
  async series(match: string, options: SeriesQueryOptions): Promise<Record<string, string>[]> {
    if (this.chosenByHpa) throw new PrometheusQueryError("series lookups are for operator servers");
    const start = options.start === undefined ? "" : `&start=${seconds(options.start)}`;
    const url = `${this.seriesUrl}?${queryEscape("match[]")}=${queryEscape(match)}${start}`;
    const res = await this.#get(url, options);
    return parseSeriesResponse(res.text, { url: this.seriesUrl, status: res.status });
  }

  /**
   * A GET of `url` with the client's credentials, within the options' deadline and body cap
   * (and, for a server an HPA named, its link-local check and no error body read); a request
   * that fails rejects with a `PrometheusQueryError`.
   */
  async #get(
    url: string,
    options: Pick<
      InstantQueryOptions,
      "fetch" | "signal" | "timeoutSeconds" | "maxBytes" | "lookup"
    >,
  ): Promise<CappedResponse> {
    const headers: Record<string, string> = { accept: "application/json" };
    const authorization = await this.#authorization();
    if (authorization) headers.authorization = authorization;
    try {
      return await fetchCapped(url, {
        method: "GET",
        headers,
        fetch: options.fetch,
        signal: options.signal,
        timeoutSeconds: options.timeoutSeconds,
        maxBytes: options.maxBytes,
        skipBody: (status) => status >= 400 && this.chosenByHpa !== null,
        linkLocal: this.chosenByHpa
          ? { allow: this.chosenByHpa.allowLinkLocal, lookup: options.lookup }
          : undefined,
      });
    } catch (e) {
      throw new PrometheusQueryError((e as Error).message, {
        status: e instanceof ResponseTooLargeError ? e.status : undefined,
      });
    }
  }

  /**
   * Evaluate `query` at `options.time` (with the `namespace` parameter when given). Resolves
   * with the typed result; rejects with a `PrometheusQueryError` on a failed request, a non-2xx
   * answer, Prometheus' own error, an unreadable or oversized body, the deadline or an abort.
   */
  async query(query: string, options: InstantQueryOptions): Promise<QueryResult> {
    const headers: Record<string, string> = { accept: "application/json" };
    const authorization = await this.#authorization();
    if (authorization) headers.authorization = authorization;
    const params = new URLSearchParams({
      query,
      time: seconds(options.time),
      timeout: seconds(options.timeoutSeconds * 1000),
    });
    if (options.namespace !== undefined) params.set("namespace", options.namespace);
    const url = this.queryUrl;
    // One deadline for both tries (form POST, then GET when the server answers 405).
    const whole = requestDeadline(options.signal, options.timeoutSeconds);
    const send = (
      target: string,
      init: Pick<FetchCappedOptions, "method" | "headers" | "body" | "skipBody">,
    ): Promise<CappedResponse> =>
      fetchCapped(target, {
        ...init,
        fetch: options.fetch,
        signal: whole.signal,
        timeoutSeconds: options.timeoutSeconds,
        maxBytes: options.maxBytes,
        linkLocal: this.chosenByHpa
          ? { allow: this.chosenByHpa.allowLinkLocal, lookup: options.lookup }
          : undefined,
      }).catch((e: Error) => {
        throw new PrometheusQueryError(e.message, {
          status: e instanceof ResponseTooLargeError ? e.status : undefined,
        });
      });
    try {
      let res = await send(url, {
        method: "POST",
        headers: { ...headers, "content-type": "application/x-www-form-urlencoded" },
        body: params.toString(),
        skipBody: (status) => status === 405,
      });
      if (res.status === 405) {
        // As the Go client: servers (or proxies) that refuse POST get the same query as GET.
        res = await send(`${url}?${params}`, { method: "GET", headers });
      }
      const body = res.text;
      const ok = res.status >= 200 && res.status <= 299;
      if (this.chosenByHpa) return opaqueResult(res, url);
      // Prometheus answers 400, 422 and 503 with its error JSON: prefer its words.
      if (!ok && !/^\s*\{[\s\S]*"status"\s*:\s*"error"/.test(body)) {
        throw new PrometheusQueryError(unsuccessfulResponse(res, url), { status: res.status });
      }
      const result = parseQueryResponse(body, { url, status: res.status });
      if (!ok) {
        throw new PrometheusQueryError(`unexpected success with status ${res.status} from ${url}`);
      }
      return result;
    } finally {
      whole.dispose();
    }
  }
}
