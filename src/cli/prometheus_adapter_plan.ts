/**
 * prometheus-adapter's rules in `plan` and the admission webhook (issue 49, point 7): for an
 * HPA metric that no collector of ours takes, the rule of `--prometheus-adapter-config` that
 * serves it and the query it sends.
 *
 * `serve` plans with what its running rules discovered last. `plan` loads the file itself (a
 * bad file is an error naming the rule and field) and, when `--prometheus-server` is given on
 * its command line, runs the rules' series queries once, as a relist does (the only queries it
 * sends); without it, it names the rules that could serve the metric if Prometheus has the
 * series.
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import {
  type AdapterPlanContext,
  COMMON_KINDS,
  type KindInfo,
  staticResourceMapper,
} from "../core/prometheus_adapter/mod.ts";
import {
  loadPrometheusAdapterConfig,
  PrometheusAdapterServing,
} from "../engine/prometheus_adapter.ts";
import { silentLogger } from "../engine/logger.ts";
import { errorText } from "../engine/error_text.ts";
import { type FlagValues, stringFlag } from "./flags.ts";
import { prometheusAdapterOptionsFromFlags } from "./prometheus_adapter_options.ts";

/** `plan`'s view of the rules: the context, and what went wrong getting the series. */
export interface PlanAdapterRules {
  context: AdapterPlanContext;
  /** Why the series are not known (no Prometheus given, a failed series query), or null. */
  offline: string | null;
}

/**
 * The rules of `--prometheus-adapter-config` for `plan`, or null without the flag. Throws with
 * the file's problems (rule index and field) when it cannot be used.
 */
export async function planAdapterRulesFromFlags(
  values: FlagValues,
  options: { given: ReadonlySet<string>; fetch: typeof fetch; now: () => number },
): Promise<PlanAdapterRules | null> {
  const path = stringFlag(values, "prometheus-adapter-config");
  if (path === null) return null;
  const mapper = staticResourceMapper(await kindsOf(values, options.given));
  if (!options.given.has("prometheus-server")) {
    let text: string;
    try {
      text = await readFile(path, "utf8");
    } catch (e) {
      throw new Error(`cannot read prometheus-adapter config "${path}": ${errorText(e)}`);
    }
    const loaded = loadPrometheusAdapterConfig(path, text, mapper);
    return {
      context: {
        custom: loaded.custom,
        external: loaded.external,
        discovered: null,
        mapper,
      },
      offline: "the rules' series were not looked up: give --prometheus-server to look them up",
    };
  }
  const serveOptions = prometheusAdapterOptionsFromFlags(values, {
    fetch: options.fetch,
    now: options.now,
    logger: silentLogger(),
  });
  if (serveOptions === null) return null;
  const serving = await PrometheusAdapterServing.start({ ...serveOptions, mapper });
  try {
    const error = serving.status().discovery?.error ?? null;
    // plan checks what Prometheus has now: a metric no series names is an error
    const context = { ...serving.planContext(), unknownAsCandidates: false };
    if (error === null) return { context, offline: null };
    return {
      context: { ...context, discovered: null },
      offline: `the rules' series could not be looked up: ${error}`,
    };
  } finally {
    await serving.stop();
  }
}

/**
 * The kinds the rules' resources resolve with: the cluster's, read from its discovery, when
 * `--kubeconfig` is given on the command line (a failed read is an error); else the built-in
 * ones.
 */
async function kindsOf(
  values: FlagValues,
  given: ReadonlySet<string>,
): Promise<readonly KindInfo[]> {
  const kubeconfig = given.has("kubeconfig") ? stringFlag(values, "kubeconfig") : null;
  if (!kubeconfig) return COMMON_KINDS;
  const { KubeHttp } = await import("../cluster/kube_http.ts");
  const { loadKubeConfig } = await import("../cluster/kubeconfig.ts");
  const { discoverKinds } = await import("../cluster/discovery.ts");
  const http = new KubeHttp(loadKubeConfig(kubeconfig));
  try {
    return await discoverKinds(http);
  } catch (e) {
    throw new Error(
      `cannot read the cluster's resources with --kubeconfig ${kubeconfig}: ${errorText(e)}`,
    );
  } finally {
    await http.close();
  }
}
