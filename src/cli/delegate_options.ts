/**
 * Delegation (issue 26) from the flags: `--delegate-external-metrics` and
 * `--delegate-custom-metrics` name the other adapter of each API, `--delegate-ca-file` (or
 * `--delegate-insecure-skip-tls-verify`) how to trust it, and the credentials we present: the
 * token of `--delegate-token-file` (the service account's by default, re-read when it
 * changes), or `--delegate-client-cert-file`/`--delegate-client-key-file`. `serve` builds the
 * delegates; `plan` and `explain` say which metrics they serve.
 */
import { readFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import {
  type ApiDelegates,
  DELEGATE_DEFAULTS,
  type DelegateLogger,
  type DelegateObserver,
  MetricsDelegate,
  tokenFile,
} from "../api/delegate.ts";
import {
  CUSTOM_GROUP,
  CUSTOM_VERSIONS,
  EXTERNAL_GROUP,
  EXTERNAL_VERSIONS,
} from "../api/discovery.ts";
import { parseCertificateBundle } from "../api/pem.ts";
import type { CollectorRegistry } from "../collectors/registry.ts";
import { FORMULA_TYPE } from "../core/kube_metrics_adapter/configs/formula.ts";
import type { MetricPlan } from "../core/types.ts";
import {
  type AdapterPlan,
  type AdapterPlanContext,
  adapterPlanOf,
} from "../core/prometheus_adapter/plan.ts";
import type { ClientTls } from "../runtime/tls_fetch.ts";
import { UsageError } from "./command.ts";
import { boolFlag, type FlagValues, numberFlag, stringFlag } from "./flags.ts";

/** The delegate of each metrics API the flags name (null: none). */
export interface DelegateUrls {
  custom: string | null;
  external: string | null;
}

/**
 * The delegate URLs of the flags, each an `https://` URL without query or fragment (a trailing
 * slash dropped); a bad one is a UsageError naming the flag and the value.
 *
 * @example
 * ```ts
 * delegateUrls({ "delegate-external-metrics": "https://keda-operator-metrics-apiserver.keda/" });
 * // { custom: null, external: "https://keda-operator-metrics-apiserver.keda" }
 * ```
 */
export function delegateUrls(flags: FlagValues): DelegateUrls {
  const one = (flag: string): string | null => {
    const raw = stringFlag(flags, flag);
    if (raw === null) return null;
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new UsageError(`invalid --${flag} "${raw}": want an https:// URL`);
    }
    if (url.protocol !== "https:") {
      throw new UsageError(
        `invalid --${flag} "${raw}": want an https:// URL (adapters serve HTTPS only)`,
      );
    }
    if (url.search !== "" || url.hash !== "" || url.username !== "" || url.password !== "") {
      throw new UsageError(
        `invalid --${flag} "${raw}": want a base URL without query, fragment or user`,
      );
    }
    return raw.replace(/\/+$/, "");
  };
  return { custom: one("delegate-custom-metrics"), external: one("delegate-external-metrics") };
}

/** What {@linkcode servedByDelegate} decides with. */
export interface DelegateCheck {
  urls: DelegateUrls;
  /** The collectors enabled here; undefined: every one (as `plan` assumes without flags). */
  enabledCollectors?: ReadonlySet<string>;
  registry: CollectorRegistry;
}

/**
 * The URL of the delegate that serves `plan`, or null when the plan is ours: a metric is the
 * delegate's when its API has one and no collector of ours takes it (none chosen, or one that
 * is not enabled or not available for its type: what the engine calls incompatible). A hidden
 * formula input is never served, so never delegated.
 */
export function servedByDelegate(plan: MetricPlan, check: DelegateCheck): string | null {
  if (plan.hidden || plan.collector === FORMULA_TYPE) return null;
  const url = plan.metricType === "External" ? check.urls.external : check.urls.custom;
  if (url === null) return null;
  return isOurs(plan, check) ? null : url;
}

/**
 * Whether a collector of ours takes `plan`: one is chosen, enabled and available for its type
 * (else the engine calls it incompatible, and a read of it goes to prometheus-adapter's rules
 * or the delegate).
 */
export function isOurs(
  plan: MetricPlan,
  check: { enabledCollectors?: ReadonlySet<string>; registry: CollectorRegistry },
): boolean {
  return plan.collector !== null &&
    (check.enabledCollectors === undefined || check.enabledCollectors.has(plan.collector)) &&
    check.registry.lookup(plan.collector, plan.metricType) !== undefined;
}

/**
 * How prometheus-adapter's rules (`--prometheus-adapter-config`, their `context`) serve `plan`,
 * as a read goes: only a metric that no collector of ours takes (`check`; without it the caller
 * knows so already), before the delegate; never a formula or a hidden formula input. Null when
 * the rules do not take it (or there are none).
 */
export function servedByRules(
  plan: MetricPlan,
  context: AdapterPlanContext | undefined,
  check?: { enabledCollectors?: ReadonlySet<string>; registry: CollectorRegistry },
): AdapterPlan | null {
  if (context === undefined || plan.hidden || plan.collector === FORMULA_TYPE) return null;
  if (check !== undefined && isOurs(plan, check)) return null;
  return adapterPlanOf(plan, context);
}

/** The delegates `serve` runs. */
export interface Delegation {
  delegates: ApiDelegates;
  /** Starts the delegates' discovery refreshes (in the background). */
  start(): void;
  /** Stops them and closes their connections. */
  close(): Promise<void>;
}

/** Options of {@linkcode delegationFromFlags}. */
export interface DelegationOptions {
  observer?: DelegateObserver;
  log?: DelegateLogger & { warn(message: string, fields?: Record<string, unknown>): void };
}

/**
 * The delegates of the flags with their TLS settings and credentials read and checked (errors
 * name the flag and the file). No delegate flag: no delegate, nothing read.
 */
export async function delegationFromFlags(
  flags: FlagValues,
  options: DelegationOptions = {},
): Promise<Delegation> {
  const urls = delegateUrls(flags);
  if (urls.custom === null && urls.external === null) {
    return { delegates: {}, start: () => {}, close: () => Promise.resolve() };
  }
  // a delegate serves through our APIs: an API we do not serve has nothing to pass on
  for (const [api, url] of [["custom", urls.custom], ["external", urls.external]] as const) {
    if (url !== null && flags[`enable-${api}-metrics-api`] === false) {
      throw new UsageError(
        `--delegate-${api}-metrics "${url}" needs --enable-${api}-metrics-api: the delegate's reads come through it`,
      );
    }
  }
  const read = async (flag: string): Promise<string | null> => {
    const path = stringFlag(flags, flag);
    if (path === null) return null;
    try {
      return await readFile(path, "utf8");
    } catch (e) {
      throw new UsageError(`cannot read --${flag} "${path}": ${(e as Error).message}`);
    }
  };
  const tls: ClientTls = {};
  const ca = await read("delegate-ca-file");
  if (ca !== null) {
    parseCertificateBundle(ca, `--delegate-ca-file "${stringFlag(flags, "delegate-ca-file")}"`);
    tls.ca = ca;
  }
  if (boolFlag(flags, "delegate-insecure-skip-tls-verify")) tls.insecureSkipVerify = true;
  const cert = await read("delegate-client-cert-file");
  const key = await read("delegate-client-key-file");
  if ((cert === null) !== (key === null)) {
    throw new UsageError(
      "--delegate-client-cert-file and --delegate-client-key-file go together",
    );
  }
  let token: (() => Promise<string | null>) | undefined;
  if (cert !== null && key !== null) {
    tls.cert = cert;
    tls.key = key;
  } else {
    const path = stringFlag(flags, "delegate-token-file");
    if (path !== null && existsSync(path)) token = tokenFile(path);
    else if (path !== null && path !== DELEGATE_DEFAULTS.tokenFile) {
      throw new UsageError(`cannot read --delegate-token-file "${path}": no such file`);
    } else {
      options.log?.warn(
        `no token at ${
          path ?? "(none)"
        }: requests to the delegates carry no credentials (set --delegate-token-file or --delegate-client-cert-file)`,
      );
    }
  }
  const common = {
    tls,
    token,
    timeoutSeconds: numberFlag(flags, "collection-timeout"),
    maxBytes: numberFlag(flags, "max-response-bytes"),
    discoveryIntervalSeconds: numberFlag(flags, "delegate-discovery-interval"),
    observer: options.observer,
    log: options.log,
  };
  const all: MetricsDelegate[] = [];
  const delegates: ApiDelegates = {};
  if (urls.custom !== null) {
    const d = new MetricsDelegate({
      ...common,
      group: CUSTOM_GROUP,
      versions: CUSTOM_VERSIONS,
      url: urls.custom,
      flag: "--delegate-custom-metrics",
    });
    delegates.custom = d;
    all.push(d);
  }
  if (urls.external !== null) {
    const d = new MetricsDelegate({
      ...common,
      group: EXTERNAL_GROUP,
      versions: EXTERNAL_VERSIONS,
      url: urls.external,
      flag: "--delegate-external-metrics",
    });
    delegates.external = d;
    all.push(d);
  }
  return {
    delegates,
    start: () => {
      for (const d of all) d.start();
    },
    close: async () => {
      await Promise.all(all.map((d) => d.close()));
    },
  };
}
