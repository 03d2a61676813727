/**
 * The collectors of KEDA v2.20.2's triggers (`keda-prometheus`, `keda-metrics-api`, `keda-cron`,
 * `keda-aws-sqs-queue`, `keda-influxdb`): each asks its source as the KEDA scaler does (the same
 * URL, query parameters, headers and authentication; `pkg/scalers/<type>_scaler.go`) and reads the
 * answer with core/keda/values.ts, so that the value and the error are KEDA's. The trigger's
 * resolved parameters come from {@linkcode KedaTriggerSource} (the ScaledObject controller), by
 * the plan's ScaledObject and trigger index, when the collector is made: the plan carries a
 * digest of them, so new parameters make a new collector.
 *
 * A trigger's Secret values (tokens, passwords, keys) go to its own requests, to the server its
 * metadata names, and nowhere else: the collector is per plan, its query key names the
 * ScaledObject, so no other HPA's plan shares its collection.
 */
import { load as loadYaml } from "js-yaml";
import { Temporal } from "temporal-polyfill";
import { parseCronSchedule } from "../core/keda/cron.ts";
import { kedaCronState } from "../core/keda/cron.ts";
import {
  KEDA_PLAN_PARAMS,
  KEDA_PLAN_SCALED_OBJECT,
  KEDA_PLAN_TRIGGER,
  kedaCollectorType,
} from "../core/keda/plan.ts";
import type { ParsedValue } from "../core/keda/typed_config.ts";
import {
  kedaInfluxValue,
  kedaJsonValue,
  kedaPathValue,
  kedaPrometheusTextValue,
  kedaPrometheusValue,
  kedaSqsAttributes,
  kedaSqsQueueLength,
  kedaXmlValue,
} from "../core/keda/values.ts";
import type { MetricPlan } from "../core/types.ts";
import { type AssumedRole, AwsRoles, type AwsTemporaryCredentials } from "./aws_role.ts";
import { Http1Client, type Http1ClientTls } from "../runtime/http1_client.ts";
import { proxyFromEnv } from "../runtime/http_proxy.ts";
import { queryEscape } from "./prometheus_client.ts";
import { DEFAULT_MAX_RESPONSE_BYTES, fetchCapped, type LinkLocalPolicy } from "./http_get.ts";
import type {
  CollectContext,
  Collector,
  CollectorFactory,
  CollectorFactoryOptions,
  CollectResult,
} from "./types.ts";

/** One trigger of a ScaledObject, its parameters read as its KEDA scaler reads them. */
export interface KedaResolvedTrigger {
  type: string;
  /** The typed config's values (core/keda/triggers.ts). */
  values: Record<string, ParsedValue>;
  /** The digest the plan carries: a collector is made only for the parameters it names. */
  digest: string;
}

/** Where the collectors find a trigger's parameters (the ScaledObject controller). */
export interface KedaTriggerSource {
  trigger(scaledObject: string, index: number): KedaResolvedTrigger | undefined;
}

/** Options of the KEDA collector factories. */
export interface KedaCollectorOptions {
  triggers: KedaTriggerSource;
  /** The link-local check of the URLs a ScaledObject names (`--allow-link-local-targets`). */
  linkLocal?: LinkLocalPolicy;
  /** KEDA's `KEDA_HTTP_DEFAULT_TIMEOUT`, seconds, when a trigger sets no `timeout` (3). */
  defaultTimeoutSeconds?: number;
  /** Largest answer read, bytes. */
  maxResponseBytes?: number;
  /** SQS: an endpoint for every request (an emulator); the trigger's `awsEndpoint` wins. */
  sqsEndpointUrl?: string | null;
  /** SQS: extra client configuration (tests: credentials, retries). */
  sqsClientConfig?: Record<string, unknown>;
  /** STS (a trigger's role to assume): an endpoint for every request; else the region's. */
  stsEndpointUrl?: string | null;
  /** STS: extra client configuration (tests: the assuming identity's credentials, retries). */
  stsClientConfig?: Record<string, unknown>;
  /** KEDA's `AWS_WEB_IDENTITY_TOKEN_FILE`: a pod identity's role is first asked for with it. */
  webIdentityTokenFile?: string | null;
}

const str = (v: ParsedValue | undefined): string => (typeof v === "string" ? v : "");
const map = (v: ParsedValue | undefined): Record<string, string> =>
  v !== undefined && typeof v === "object" && !Array.isArray(v) ? v : {};

/** The trigger of a plan, or an error naming the plan. */
function triggerOf(plan: MetricPlan, options: KedaCollectorOptions): KedaResolvedTrigger {
  const so = plan.config[KEDA_PLAN_SCALED_OBJECT] ?? "";
  const index = Number(plan.config[KEDA_PLAN_TRIGGER]);
  const t = options.triggers.trigger(so, index);
  if (t === undefined) {
    throw new Error(`ScaledObject ${so} trigger ${index} is not known (yet)`);
  }
  if (t.digest !== plan.config[KEDA_PLAN_PARAMS]) {
    throw new Error(`ScaledObject ${so} trigger ${index} changed; its plan is being replaced`);
  }
  return t;
}

function authModes(v: Record<string, ParsedValue>): string[] {
  return str(v.authModes).split(",").map((m) => m.trim()).filter((m) => m !== "");
}

function basic(user: string, password: string): string {
  const bytes = new TextEncoder().encode(`${user}:${password}`);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return `Basic ${btoa(bin)}`;
}

/** Go's `time.Now().UTC().Format(time.RFC3339)`. */
function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/**
 * An HTTP client per TLS setting (a trigger's cert, key, ca, unsafeSsl), made on first use and
 * closed once unused for {@linkcode TLS_CLIENT_IDLE_MS} (a rotated Secret's old setting, a
 * deleted ScaledObject's), so that clients and their connections do not pile up.
 */
export class TlsClients {
  readonly #clients = new Map<string, { client: Http1Client; lastUsed: number }>();
  #swept = 0;

  /** How many clients are open (tests). */
  get size(): number {
    return this.#clients.size;
  }

  fetchFor(tlsOptions: Http1ClientTls | null, fallback: typeof fetch, now: number): typeof fetch {
    this.#sweep(now);
    if (tlsOptions === null) return fallback;
    const key = JSON.stringify(tlsOptions);
    let held = this.#clients.get(key);
    if (!held) {
      held = {
        client: new Http1Client({ tls: tlsOptions, proxy: proxyFromEnv(process.env) }),
        lastUsed: now,
      };
      this.#clients.set(key, held);
    }
    held.lastUsed = now;
    const client = held.client;
    const c = client;
    return (async (input: string | URL | Request, init?: RequestInit) => {
      const url = typeof input === "string" ? input : (input as URL).href;
      const headers: Record<string, string> = {};
      new Headers(init?.headers).forEach((v, k) => (headers[k] = v));
      const address = (init as { connectAddress?: unknown } | undefined)?.connectAddress;
      const res = await c.request(url, {
        method: init?.method ?? "GET",
        headers,
        signal: init?.signal ?? undefined,
        ...(typeof address === "string" ? { address } : {}),
      });
      const chunks: Uint8Array[] = [];
      for (;;) {
        const piece = await res.body.read();
        if (piece === null) break;
        chunks.push(piece);
      }
      const body = new Uint8Array(chunks.reduce((n, p) => n + p.length, 0));
      let at = 0;
      for (const p of chunks) {
        body.set(p, at);
        at += p.length;
      }
      return new Response(res.head.status === 204 || res.head.status === 304 ? null : body, {
        status: res.head.status,
        headers: res.head.headers as unknown as HeadersInit,
      });
    }) as typeof fetch;
  }

  /** Close the clients unused for the idle time (at most once a minute). */
  #sweep(now: number): void {
    if (now - this.#swept < 60_000) return;
    this.#swept = now;
    for (const [key, held] of this.#clients) {
      if (now - held.lastUsed < TLS_CLIENT_IDLE_MS) continue;
      this.#clients.delete(key);
      held.client.close().catch(() => {});
    }
  }
}

/** How long a trigger's TLS client stays open unused. */
export const TLS_CLIENT_IDLE_MS = 10 * 60_000;

function tlsOf(v: Record<string, ParsedValue>): Http1ClientTls | null {
  const modes = authModes(v);
  const tls: Http1ClientTls = {};
  if (v.unsafeSsl === true) tls.rejectUnauthorized = false;
  if (modes.includes("tls")) {
    tls.cert = str(v.cert);
    tls.key = str(v.key);
  }
  if (str(v.ca) !== "") tls.ca = str(v.ca);
  return Object.keys(tls).length > 0 ? tls : null;
}

abstract class HttpTriggerCollector implements Collector {
  readonly queryKey: string;
  protected readonly values: Record<string, ParsedValue>;
  readonly #options: KedaCollectorOptions;
  readonly #tls: TlsClients;

  constructor(
    plan: MetricPlan,
    t: KedaResolvedTrigger,
    options: KedaCollectorOptions,
    tls: TlsClients,
  ) {
    this.values = t.values;
    this.#options = options;
    this.#tls = tls;
    this.queryKey = `${plan.collector}|${plan.config[KEDA_PLAN_SCALED_OBJECT]}|${
      plan.config[KEDA_PLAN_TRIGGER]
    }|${t.digest}`;
  }

  timeoutMs(): number {
    return this.#timeoutSeconds() * 1000 + 1000;
  }

  #timeoutSeconds(): number {
    const t = this.values.timeout;
    return typeof t === "number" && t > 0 ? t : this.#options.defaultTimeoutSeconds ?? 3;
  }

  protected async get(
    ctx: CollectContext,
    url: string,
    headers: Record<string, string>,
  ): Promise<{ status: number; text: string }> {
    const res = await fetchCapped(url, {
      fetch: this.#tls.fetchFor(tlsOf(this.values), ctx.fetch, ctx.now()),
      signal: ctx.signal,
      timeoutSeconds: this.#timeoutSeconds(),
      maxBytes: this.#options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
      headers,
      ...(this.#options.linkLocal
        ? {
          linkLocal: {
            ...this.#options.linkLocal,
            ...(ctx.lookup ? { lookup: ctx.lookup } : {}),
          },
        }
        : {}),
    });
    return { status: res.status, text: res.text };
  }

  abstract collect(ctx: CollectContext): Promise<CollectResult>;
}

class PrometheusTrigger extends HttpTriggerCollector {
  async collect(ctx: CollectContext): Promise<CollectResult> {
    const v = this.values;
    let url = `${str(v.serverAddress)}/api/v1/query?query=${queryEscape(str(v.query))}&time=${
      rfc3339(ctx.now())
    }`;
    if (str(v.namespace) !== "") url += `&namespace=${str(v.namespace)}`;
    for (const [k, val] of Object.entries(map(v.queryParameters))) {
      url += `&${queryEscape(k)}=${queryEscape(val)}`;
    }
    const headers: Record<string, string> = { ...map(v.customHeaders) };
    const modes = authModes(v);
    if (modes.includes("bearer")) headers.authorization = `Bearer ${str(v.bearerToken)}`;
    else if (modes.includes("basic")) {
      headers.authorization = basic(str(v.username), str(v.password));
    } else if (modes.includes("custom")) headers[str(v.customAuthHeader)] = str(v.customAuthValue);
    const res = await this.get(ctx, url, headers);
    const value = kedaPrometheusValue(res.status, res.text, {
      ignoreNullValues: v.ignoreNullValues !== false,
      query: str(v.query),
    });
    return { samples: [{ value, timestamp: ctx.now() }] };
  }
}

class MetricsApiTrigger extends HttpTriggerCollector {
  async collect(ctx: CollectContext): Promise<CollectResult> {
    const v = this.values;
    const modes = authModes(v);
    let url = str(v.url);
    const headers: Record<string, string> = {};
    if (modes.includes("apiKey")) {
      const name = str(v.keyParamName);
      if (str(v.method) === "query") {
        const u = new URL(url);
        u.searchParams.set(name === "" ? "api_key" : name, str(v.apiKey));
        url = u.href;
      } else headers[name === "" ? "X-API-KEY" : name] = str(v.apiKey);
    }
    if (modes.includes("basic")) headers.authorization = basic(str(v.username), str(v.password));
    if (modes.includes("bearer")) headers.authorization = `Bearer ${str(v.bearerToken)}`;
    const res = await this.get(ctx, url, headers);
    if (res.status !== 200) {
      throw new Error(`${new URL(url).pathname}: api returned ${res.status}`);
    }
    const loc = str(v.valueLocation);
    let value: number;
    switch (str(v.format)) {
      case "prometheus":
        value = kedaPrometheusTextValue(res.text, loc);
        break;
      case "xml":
        value = kedaXmlValue(res.text, loc);
        break;
      case "yaml": {
        let doc: unknown;
        try {
          doc = loadYaml(res.text);
        } catch (e) {
          throw new Error(`yaml: ${(e as Error).message.split("\n")[0]}`);
        }
        value = kedaPathValue(doc, loc);
        break;
      }
      default:
        value = kedaJsonValue(res.text, loc);
    }
    return { samples: [{ value, timestamp: ctx.now() }] };
  }
}

class CronTrigger implements Collector {
  readonly queryKey: string;
  readonly #values: Record<string, ParsedValue>;
  constructor(plan: MetricPlan, t: KedaResolvedTrigger) {
    this.#values = t.values;
    this.queryKey = `${plan.collector}|${plan.config[KEDA_PLAN_SCALED_OBJECT]}|${
      plan.config[KEDA_PLAN_TRIGGER]
    }|${t.digest}`;
  }
  collect(ctx: CollectContext): Promise<CollectResult> {
    const v = this.#values;
    const active = kedaCronState(
      parseCronSchedule(str(v.start)),
      parseCronSchedule(str(v.end)),
      str(v.timezone),
      Temporal.Instant.fromEpochMilliseconds(ctx.now()),
    );
    const value = active ? Number(v.desiredReplicas) : 0;
    return Promise.resolve({ samples: [{ value, timestamp: ctx.now() }] });
  }
}

type SqsSdk = typeof import("@aws-sdk/client-sqs");
let sqsSdk: Promise<SqsSdk> | null = null;

class SqsTrigger implements Collector {
  readonly queryKey: string;
  readonly #values: Record<string, ParsedValue>;
  readonly #options: KedaCollectorOptions;
  readonly #roles: AwsRoles;
  #client: { sdk: SqsSdk; client: InstanceType<SqsSdk["SQSClient"]> } | null = null;
  #role: AssumedRole | null = null;
  #credentials: AwsTemporaryCredentials | null = null;
  constructor(
    plan: MetricPlan,
    t: KedaResolvedTrigger,
    options: KedaCollectorOptions,
    roles: AwsRoles,
  ) {
    this.#values = t.values;
    this.#options = options;
    this.#roles = roles;
    this.queryKey = `${plan.collector}|${plan.config[KEDA_PLAN_SCALED_OBJECT]}|${
      plan.config[KEDA_PLAN_TRIGGER]
    }|${t.digest}`;
  }
  async #connect() {
    if (this.#client) return this.#client;
    const sdk = await (sqsSdk ??= import("@aws-sdk/client-sqs"));
    const v = this.#values;
    const endpoint = str(v.awsEndpoint) || this.#options.sqsEndpointUrl || undefined;
    const region = str(v.awsRegion);
    const roleArn = str(v.awsRoleArn);
    if (roleArn !== "") {
      this.#role = v.awsPodIdentity === true
        ? this.#roles.shared(roleArn, str(v.awsExternalId), region)
        : this.#roles.own(roleArn, region);
    }
    const keyId = str(v.awsAccessKeyID);
    const credentials = this.#role !== null ? this.#assumedCredentials() : keyId !== ""
      ? {
        accessKeyId: keyId,
        secretAccessKey: str(v.awsSecretAccessKey),
        ...(str(v.awsSessionToken) !== "" ? { sessionToken: str(v.awsSessionToken) } : {}),
      }
      : undefined;
    const client = new sdk.SQSClient({
      ...(this.#options.sqsClientConfig ?? {}),
      region,
      ...(endpoint ? { endpoint } : {}),
      ...(credentials ? { credentials } : {}),
    });
    this.#client = { sdk, client };
    return this.#client;
  }
  /**
   * The SDK's credential provider of an assumed role: the credentials {@linkcode collect} got for
   * its own time. Marked memoized so that the SDK asks it on every request instead of keeping
   * the answer by its own clock.
   */
  #assumedCredentials() {
    const provider = () => {
      const c = this.#credentials;
      if (c === null) return Promise.reject(new Error("no assumed credentials yet"));
      return Promise.resolve({
        accessKeyId: c.accessKeyId,
        secretAccessKey: c.secretAccessKey,
        sessionToken: c.sessionToken,
        expiration: new Date(c.expiration),
      });
    };
    return Object.assign(provider, { memoized: true });
  }
  async collect(ctx: CollectContext): Promise<CollectResult> {
    const v = this.#values;
    const attributes = kedaSqsAttributes(v.scaleOnInFlight !== false, v.scaleOnDelayed === true);
    const { sdk, client } = await this.#connect();
    if (this.#role !== null) this.#credentials = await this.#role.get(ctx.now());
    const out = await client.send(
      new sdk.GetQueueAttributesCommand({
        QueueUrl: str(v.queueURL),
        AttributeNames: attributes as never,
      }),
      { abortSignal: ctx.signal },
    );
    const value = kedaSqsQueueLength(out.Attributes ?? {}, attributes);
    return { samples: [{ value, timestamp: ctx.now() }] };
  }
}

class InfluxTrigger implements Collector {
  readonly queryKey: string;
  readonly #values: Record<string, ParsedValue>;
  constructor(plan: MetricPlan, t: KedaResolvedTrigger) {
    this.#values = t.values;
    this.queryKey = `${plan.collector}|${plan.config[KEDA_PLAN_SCALED_OBJECT]}|${
      plan.config[KEDA_PLAN_TRIGGER]
    }|${t.digest}`;
  }
  async collect(ctx: CollectContext): Promise<CollectResult> {
    const v = this.#values;
    if (str(v.influxVersion) === "3") {
      throw new Error("influxdb v3 triggers are not collected by this adapter");
    }
    const { InfluxDB } = await import("@influxdata/influxdb-client");
    const api = new InfluxDB({
      url: str(v.serverURL),
      token: str(v.authToken),
      timeout: 10_000,
      transportOptions: { redirect: "manual", rejectUnauthorized: v.unsafeSsl !== true },
    }).getQueryApi(str(v.organizationName));
    const rows = await api.collectRows<{ _value?: unknown }>(str(v.query));
    if (ctx.signal.aborted) throw new Error("aborted");
    const value = kedaInfluxValue(rows);
    return { samples: [{ value, timestamp: ctx.now() }] };
  }
}

/** The factories of every KEDA trigger type collected here. */
export function kedaCollectorFactories(options: KedaCollectorOptions): CollectorFactory[] {
  const tls = new TlsClients();
  const roles = new AwsRoles({
    ...(options.stsEndpointUrl ? { stsEndpointUrl: options.stsEndpointUrl } : {}),
    ...(options.stsClientConfig ? { stsClientConfig: options.stsClientConfig } : {}),
    ...(options.webIdentityTokenFile ? { webIdentityTokenFile: options.webIdentityTokenFile } : {}),
  });
  const make = (
    type: string,
    build: (plan: MetricPlan, t: KedaResolvedTrigger) => Collector,
  ): CollectorFactory => ({
    type: kedaCollectorType(type),
    metricTypes: ["External"],
    create({ plan }: CollectorFactoryOptions): Collector {
      return build(plan, triggerOf(plan, options));
    },
  });
  return [
    make("prometheus", (p, t) => new PrometheusTrigger(p, t, options, tls)),
    make("metrics-api", (p, t) => new MetricsApiTrigger(p, t, options, tls)),
    make("cron", (p, t) => new CronTrigger(p, t)),
    make("aws-sqs-queue", (p, t) => new SqsTrigger(p, t, options, roles)),
    make("influxdb", (p, t) => new InfluxTrigger(p, t)),
  ];
}
