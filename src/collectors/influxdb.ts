/**
 * External metrics of type `influxdb` (legacy metric name `flux-query`): a Flux query against an
 * InfluxDB 2.x server (the operator's address, token and org: `--influxdb-address`,
 * `--influxdb-token`, `--influxdb-org`), run with the official client
 * `@influxdata/influxdb-client`.
 *
 * Config keys (read with the schema of src/core/kube_metrics_adapter/configs/influxdb.ts): `query` (or the legacy
 * `query-name`), `address` and `org` (override the operator's; `org-id` is the older spelling of
 * `org`), and `token`, refused unless the operator allows annotation tokens
 * (`--allow-annotation-tokens`; tokens belong in flags or files).
 *
 * The operator's token goes only to the operator's address: an `address` in the config that is
 * another server needs its own `token` there (else an error), so an HPA cannot have the
 * operator's token sent to a server of its choosing. Such an address is also the HPA's
 * choice in what errors say: the status only, never the server's words or values. Redirects
 * are never followed, and a name that resolves to a link-local address is refused.
 *
 * The value is read from the `metricvalue` column (what kube-metrics-adapter's README renames
 * `_value` to), else from `_value`. kube-metrics-adapter meant a query to reduce to one row and
 * kept the first (and, through a decoding bug, reported 0). Here each table of the result is one
 * series whose last row is its latest value, and the metric is the sum of those values over the
 * tables, the way the external metrics API sums the items it returns: a query that reduces to
 * one row gets exactly that row's value. An empty result, a missing value column, a null or
 * non-numeric value are errors that quote the query.
 *
 * The client is loaded on the first collection, not at start (most installations never use it).
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { Cancellable, FluxTableMetaData } from "@influxdata/influxdb-client";
import { influxDbDescriptor } from "../core/kube_metrics_adapter/configs/influxdb.ts";
import type { MetricPlan } from "../core/types.ts";
import {
  abortReasonText,
  checkLinkLocalTarget,
  DEFAULT_MAX_RESPONSE_BYTES,
  isLinkLocalHost,
  type LookupContext,
} from "./http_get.ts";
import type {
  CollectContext,
  Collector,
  CollectorFactory,
  CollectorFactoryOptions,
  CollectResult,
} from "./types.ts";
import { BackendNotConfiguredError, planConfig } from "./types.ts";

/** Timeout of one Flux query, ms (the client's socket timeout; the collection may end sooner). */
export const INFLUXDB_QUERY_TIMEOUT_MS = 10_000;

/** How the InfluxDB collector reaches InfluxDB (what `--influxdb-*` and the HPA guards set). */
export interface InfluxDbOptions {
  /** The operator's server, an http(s) URL; metrics without an `address` config query it. */
  address?: string | null;
  /** The operator's token, sent to `address` only. */
  token?: string | null;
  /** The operator's organization; metrics without an `org` config use it. */
  org?: string | null;
  /** A metric may bring its own `token` in its config (false: tokens come from the operator). */
  allowAnnotationTokens?: boolean;
  /** `address` configs (and the names they resolve to) may be link-local (false). */
  allowLinkLocalTargets?: boolean;
  /** Largest response read, bytes; `DEFAULT_MAX_RESPONSE_BYTES` (http_get.ts) when unset. */
  maxResponseBytes?: number | null;
}

/** What one InfluxDB plan queries: its config resolved against the operator's options. */
export interface InfluxDbTarget {
  address: string;
  org: string;
  token: string;
  query: string;
  /** True when the token came from an annotation (results are then not shared across HPAs). */
  annotationToken: boolean;
  /**
   * True when `address` is the operator's: its error texts may be quoted (bounded). False for
   * another address from the config: the status only.
   */
  operatorAddress: boolean;
  allowLinkLocal: boolean;
}

/** A URL in one spelling (`new URL().href` without trailing slashes), or null if invalid. */
function normalisedUrl(raw: string): string | null {
  try {
    return new URL(raw).href.replace(/\/+$/, "");
  } catch {
    return null;
  }
}

/**
 * A plan's InfluxDB target: its config (read with the schema of core/kube_metrics_adapter/configs/influxdb.ts) with
 * the operator's address, org and token filled in. Throws naming the metric: config errors
 * first, then {@linkcode BackendNotConfiguredError} for an address or org nobody set.
 */
export function influxDbTarget(plan: MetricPlan, options: InfluxDbOptions): InfluxDbTarget {
  const allowLinkLocal = options.allowLinkLocalTargets === true;
  const config = planConfig(influxDbDescriptor, plan, { allowLinkLocalTargets: allowLinkLocal });
  const metric = plan.metricName;
  const operatorAddress = options.address ? options.address : "";
  let address = config.address;
  if (address === undefined) {
    if (operatorAddress === "") {
      throw new BackendNotConfiguredError(
        `influxdb metric ${metric} needs --influxdb-address or an address config`,
      );
    }
    const normalised = normalisedUrl(operatorAddress);
    if (normalised === null || !/^https?:/.test(normalised)) {
      throw new Error(`invalid --influxdb-address "${operatorAddress}": want an http(s) URL`);
    }
    if (!allowLinkLocal && isLinkLocalHost(new URL(normalised).hostname)) {
      throw new Error(
        `address "${operatorAddress}" of metric ${metric} is a link-local address (allow with --allow-link-local-targets)`,
      );
    }
    address = normalised;
  }
  const org = config.org ?? (options.org ? options.org : "");
  if (org === "") {
    throw new BackendNotConfiguredError(
      `influxdb metric ${metric} needs --influxdb-org or an org config`,
    );
  }
  const isOperatorAddress = operatorAddress !== "" && normalisedUrl(operatorAddress) === address;
  let token = options.token ? options.token : "";
  const annotationToken = config.token !== undefined;
  if (config.token !== undefined) {
    if (options.allowAnnotationTokens !== true) {
      throw new Error(
        `token in the config of metric ${metric} refused: tokens come from --influxdb-token (allow with --allow-annotation-tokens)`,
      );
    }
    token = config.token;
  } else if (!isOperatorAddress && token !== "") {
    // The operator's token is for the operator's server only.
    throw new Error(
      `address "${plan.config.address}" of metric ${metric} is not --influxdb-address: --influxdb-token is not sent there; give the metric its own token config (with --allow-annotation-tokens)`,
    );
  }
  return {
    address,
    org,
    token,
    query: config.query,
    annotationToken,
    operatorAddress: isOperatorAddress,
    allowLinkLocal,
  };
}

function headerValue(
  headers: Record<string, string | string[] | undefined> | undefined,
  name: string,
): string | null {
  const v = headers?.[name];
  return typeof v === "string" ? v : Array.isArray(v) && v.length > 0 ? v[0] : null;
}

function quoteQuery(query: string): string {
  const q = JSON.stringify(query.replace(/\s+/g, " ").trim());
  return q.length > 240 ? `${q.slice(0, 236)}..."` : q;
}

const NUMERIC = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** One table's latest value: the value column of its last row. */
interface TableValue {
  raw: string;
  column: string;
}

type InfluxClient = typeof import("@influxdata/influxdb-client");
let client: Promise<InfluxClient> | null = null;

/** The InfluxDB client module, loaded once on first use. */
function loadClient(): Promise<InfluxClient> {
  return client ??= import("@influxdata/influxdb-client");
}

class InfluxDbCollector implements Collector {
  readonly queryKey: string;
  readonly #config: InfluxDbTarget;
  readonly #maxBytes: number;
  readonly #metric: string;

  constructor(config: InfluxDbTarget, options: { plan: MetricPlan; maxBytes: number }) {
    this.#config = config;
    this.#maxBytes = options.maxBytes;
    this.#metric = options.plan.metricName;
    // A token from an annotation is the HPA's own: never share its results with another HPA.
    const scope = config.annotationToken
      ? `|${options.plan.hpa.namespace}/${options.plan.hpa.name}/${
        createHash("sha256").update(config.token).digest("hex").slice(0, 16)
      }`
      : "";
    this.queryKey = `influxdb/External|${
      JSON.stringify([config.address, config.org, config.query])
    }${scope}`;
  }

  async collect(ctx: CollectContext & LookupContext): Promise<CollectResult> {
    const cfg = this.#config;
    const what = `flux query ${quoteQuery(cfg.query)} of metric ${this.#metric} at ${cfg.address}`;
    // Right before connecting: a name may resolve to a metadata service. The InfluxDB client
    // resolves the name again when it connects, so the DNS rebinding window that the
    // collectors' fetch closes (http_get.ts) remains open here.
    await new Promise<void>((resolve, reject) => {
      const onAbort = (): void =>
        reject(new Error(`${what} failed: ${abortReasonText(ctx.signal)}`));
      if (ctx.signal.aborted) return onAbort();
      ctx.signal.addEventListener("abort", onAbort, { once: true });
      checkLinkLocalTarget(cfg.address, { allow: cfg.allowLinkLocal, lookup: ctx.lookup })
        .then(() => resolve(), reject)
        .finally(() => ctx.signal.removeEventListener("abort", onAbort));
    });
    return await this.#query(ctx, what, await loadClient());
  }

  #query(
    ctx: CollectContext,
    what: string,
    { InfluxDB, linesToTables }: InfluxClient,
  ): Promise<CollectResult> {
    const cfg = this.#config;
    const queryApi = new InfluxDB({
      url: cfg.address,
      token: cfg.token === "" ? undefined : cfg.token,
      timeout: INFLUXDB_QUERY_TIMEOUT_MS,
      // Deno runs the client's fetch transport: never follow a redirect (the token would go
      // along); Node's transport does not follow them. A 3xx is an error (#explain).
      transportOptions: { redirect: "manual" },
    }).getQueryApi(cfg.org);
    return new Promise<CollectResult>((resolve, reject) => {
      let cancellable: Cancellable | null = null;
      let settled = false;
      let bytes = 0;
      const tables = new Map<string, TableValue | null>();
      const finish = (err: Error | null, result?: CollectResult): void => {
        if (settled) return;
        settled = true;
        ctx.signal.removeEventListener("abort", onAbort);
        if (err !== null) {
          cancellable?.cancel();
          reject(err);
        } else resolve(result!);
      };
      const onAbort = (): void => {
        finish(new Error(`${what} failed: ${abortReasonText(ctx.signal)}`));
      };
      if (ctx.signal.aborted) {
        onAbort();
        return;
      }
      ctx.signal.addEventListener("abort", onAbort, { once: true });
      const rows = linesToTables({
        next: (values: string[], meta: FluxTableMetaData): void => {
          if (settled) return;
          // Flux reports errors after the response started as a table `error,reference`; the
          // client passes it on as rows.
          const errCol = meta.columns.find((c) => c.label === "error");
          if (errCol && meta.columns.some((c) => c.label === "reference")) {
            if (!cfg.operatorAddress) {
              finish(new Error(`${what} failed: the server reported an error in the result`));
              return;
            }
            const msg = (values[errCol.index] ?? "").replace(/\s+/g, " ").slice(0, 200);
            finish(new Error(`${what} failed: ${msg}`));
            return;
          }
          const col = meta.columns.find((c) => c.label === "metricvalue") ??
            meta.columns.find((c) => c.label === "_value");
          const tableCol = meta.columns.find((c) => c.label === "table");
          const table = tableCol ? (values[tableCol.index] ?? "") : "";
          // Tables with another schema start a new block: key by block and table number.
          const key = `${meta.columns.map((c) => c.label).join(",")}#${table}`;
          if (!col) {
            tables.set(key, null);
            return;
          }
          const raw = values[col.index] ?? "";
          tables.set(key, { raw: raw === "" ? (col.defaultValue ?? "") : raw, column: col.label });
        },
        error: (e: Error): void => finish(this.#explain(e, what)),
        complete: (): void => {
          try {
            finish(null, this.#result(tables, what, ctx));
          } catch (e) {
            finish(e as Error);
          }
        },
        useCancellable: (c: Cancellable): void => {
          cancellable = c;
        },
      });
      queryApi.queryLines(cfg.query, {
        next: (line: string): void => {
          if (settled) return;
          bytes += line.length + 2;
          if (bytes > this.#maxBytes) {
            finish(new Error(`response to ${what} exceeds ${this.#maxBytes} bytes`));
            return;
          }
          rows.next(line);
        },
        error: (e: Error): void => rows.error(e),
        complete: (): void => rows.complete(),
        useCancellable: (c: Cancellable): void => {
          cancellable = c;
          if (settled) c.cancel();
        },
      });
    });
  }

  #explain(e: Error, what: string): Error {
    const err = e as Error & {
      statusCode?: number;
      body?: string;
      json?: { message?: unknown };
      headers?: Record<string, string | string[] | undefined>;
    };
    if (typeof err.statusCode === "number") {
      if (err.statusCode >= 300 && err.statusCode <= 399) {
        const location = headerValue(err.headers, "location");
        return new Error(
          `${what} failed: refused to follow redirect "${err.statusCode}" from ${this.#config.address} ${
            location === null ? "(no location)" : `to ${JSON.stringify(location.slice(0, 200))}`
          }`,
        );
      }
      // The server's words only from the operator's server (an HPA's may be anything).
      if (!this.#config.operatorAddress) {
        return new Error(`${what} failed: unsuccessful response "${err.statusCode}"`);
      }
      const msg = typeof err.json?.message === "string" ? err.json.message : (err.body ?? "");
      return new Error(
        `${what} failed: unsuccessful response "${err.statusCode}": ${
          msg.replace(/\s+/g, " ").slice(0, 200)
        }`,
      );
    }
    if (err.name === "RequestTimedOutError") {
      return new Error(`${what} failed: timed out after ${INFLUXDB_QUERY_TIMEOUT_MS / 1000}s`);
    }
    return new Error(`${what} failed: ${err.message}`);
  }

  #result(
    tables: Map<string, TableValue | null>,
    what: string,
    ctx: CollectContext,
  ): CollectResult {
    if (tables.size === 0) throw new Error(`${what} returned no rows`);
    let sum = 0;
    for (const v of tables.values()) {
      if (v === null) throw new Error(`${what} returned no _value or metricvalue column`);
      if (v.raw === "") throw new Error(`${what} returned a null ${v.column}`);
      const n = NUMERIC.test(v.raw) ? Number(v.raw) : NaN;
      if (!Number.isFinite(n)) {
        throw new Error(
          this.#config.operatorAddress
            ? `${what} returned a non-numeric ${v.column} "${v.raw.slice(0, 60)}"`
            : `${what} returned a non-numeric ${v.column}`,
        );
      }
      sum += n;
    }
    return { samples: [{ value: sum, timestamp: ctx.now() }] };
  }
}

/**
 * External `influxdb` (legacy `flux-query`) against the operator's server of `options`, or the
 * `address` a metric's config names.
 *
 * @example
 * ```ts
 * const factory = createInfluxDbFactory({ address: "http://influx:8086", org: "acme" });
 * factory.create({ plan }).queryKey; // "influxdb/External|[\"http://influx:8086\",...]"
 * ```
 */
export function createInfluxDbFactory(options: InfluxDbOptions): CollectorFactory {
  const max = options.maxResponseBytes;
  const maxBytes = typeof max === "number" && max > 0 ? max : DEFAULT_MAX_RESPONSE_BYTES;
  return {
    type: "influxdb",
    metricTypes: ["External"],
    create({ plan }: CollectorFactoryOptions): Collector {
      return new InfluxDbCollector(influxDbTarget(plan, options), { plan, maxBytes });
    },
  };
}
