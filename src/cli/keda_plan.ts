/**
 * `plan -f` on KEDA ScaledObjects: the HPA KEDA v2.20.2 writes for each (and this adapter with
 * `--keda-scaled-objects`), its metric names and targets, or the error that would set the
 * ScaledObject's `Ready=False`, naming the ScaledObject and the trigger. TriggerAuthentications
 * in the same files say which parameters come from secrets, config maps or env, and `<key>FromEnv`
 * names an env var of the target's container: those are known to exist, not their values (plan
 * reads no cluster), and are shown as `<secret NAME key KEY>`, `<env NAME>`.
 */
import type { KedaHpaOwner } from "../core/keda/hpa.ts";
import { VERSION } from "./version.ts";
import type { KubeObject } from "../cluster/types.ts";
import { type KedaHpa, kedaHpaFor, type KedaTriggerMetric } from "../core/keda/hpa.ts";
import {
  InvalidScaledObjectError,
  kedaUsesModifiers,
  parseScaledObject,
  parseTriggerAuthentication,
  type ScaledObject,
  type TriggerAuthentication,
} from "../core/keda/scaled_object.ts";
import type { TriggerParams } from "../core/keda/typed_config.ts";
import { kedaActivationThreshold } from "../core/keda/activity.ts";
import { readTrigger } from "../core/keda/triggers.ts";

/** A ScaledObject, as `plan` shows it. */
export interface KedaRow {
  /** `ScaledObject shop/web`. */
  source: string;
  /** The HPA it makes (`shop/keda-hpa-web`), unless it has an error. */
  hpa?: string;
  /**
   * Each trigger's metric: its index, type, metric name, HPA target, and the activation threshold
   * the scale loop compares its value with (`> 2`; cron: `inside its window`; none for cpu and
   * memory).
   */
  metrics: { trigger: number; type: string; metric: string; target: string; activation?: string }[];
  /** Why it makes no HPA: the `Ready` condition's message KEDA would set. */
  error?: string;
  /** The trigger the error is about. */
  trigger?: number;
  /** What plan cannot check offline (an authentication not in the files). */
  warnings: string[];
}

/** A metric's target as the HPA reads it: `AverageValue 100.500`, `Utilization 50%`. */
function targetText(m: KedaTriggerMetric): string {
  const s = m.spec;
  const t = s.type === "External"
    ? s.external.target
    : s.type === "Resource"
    ? s.resource.target
    : s.type === "ContainerResource"
    ? s.containerResource.target
    : undefined;
  if (t === undefined) return "";
  if (t.type === "Utilization") return `Utilization ${t.averageUtilization}%`;
  return `${t.type} ${t.type === "Value" ? t.value : t.averageValue}`;
}

/** The authentication a trigger names, among those read from the files. */
function authenticationOf(
  so: ScaledObject,
  index: number,
  authentications: readonly TriggerAuthentication[],
): TriggerAuthentication | undefined {
  const ref = so.spec.triggers[index].authenticationRef;
  if (ref === undefined) return undefined;
  const kind = ref.kind ?? "TriggerAuthentication";
  return authentications.find((a) =>
    a.kind === kind && a.metadata.name === ref.name &&
    (kind === "ClusterTriggerAuthentication" ||
      (a.metadata.namespace ?? "default") === (so.metadata.namespace ?? "default"))
  );
}

/**
 * The parameters of each trigger as far as files tell them: the metadata, and the names of the
 * parameters its authentication provides (their values shown as where they come from).
 */
function paramsOf(
  so: ScaledObject,
  authentications: readonly TriggerAuthentication[],
): TriggerParams[] {
  return so.spec.triggers.map((t, i) => {
    const auth = authenticationOf(so, i, authentications);
    const authParams: Record<string, string> = {};
    for (const r of auth?.spec.secretTargetRef ?? []) {
      authParams[r.parameter] = `<secret ${r.name} key ${r.key}>`;
    }
    for (const r of auth?.spec.configMapTargetRef ?? []) {
      authParams[r.parameter] = `<configmap ${r.name} key ${r.key}>`;
    }
    for (const r of auth?.spec.env ?? []) authParams[r.parameter] = `<env ${r.name}>`;
    // `<key>FromEnv` names an env var of the target's container, which files do not show
    const resolvedEnv: Record<string, string> = {};
    for (const [key, name] of Object.entries(t.metadata ?? {})) {
      if (key.endsWith("FromEnv")) resolvedEnv[name] = `<env ${name}>`;
    }
    return { metadata: t.metadata ?? {}, authParams, resolvedEnv };
  });
}

/** Options of {@linkcode kedaScaledObjectRow}. */
export interface KedaRowOptions {
  /** The HPA's controller instead of the ScaledObject (Knative's in-memory ScaledObject). */
  owner?: KedaHpaOwner;
  /** The row's source instead of `ScaledObject <namespace>/<name>`. */
  source?: string;
}

/** A ScaledObject's row, and the HPA it makes (for `--output yaml`). */
export function kedaScaledObjectRow(
  object: KubeObject,
  authenticationObjects: readonly KubeObject[],
  options: KedaRowOptions = {},
): { row: KedaRow; hpa?: KubeObject } {
  const source = options.source ??
    `ScaledObject ${object.metadata.namespace ?? "default"}/${object.metadata.name}`;
  let so: ScaledObject;
  try {
    so = parseScaledObject(object);
  } catch (e) {
    if (!(e instanceof InvalidScaledObjectError)) throw e;
    return { row: { source, metrics: [], error: e.problems.join("; "), warnings: [] } };
  }
  const authentications: TriggerAuthentication[] = [];
  for (const a of authenticationObjects) {
    try {
      authentications.push(parseTriggerAuthentication(a));
    } catch {
      // a malformed authentication is that object's error, shown when it is used
    }
  }
  const warnings: string[] = [];
  const podIdentities = so.spec.triggers.map((t, i) => {
    const auth = authenticationOf(so, i, authentications);
    if (t.authenticationRef !== undefined && auth === undefined) {
      warnings.push(
        `trigger ${i}: ${t.authenticationRef.kind ?? "TriggerAuthentication"} ${
          JSON.stringify(t.authenticationRef.name)
        } is not in the files: its parameters are unknown`,
      );
    }
    return auth?.spec.podIdentity?.provider;
  });
  const params = paramsOf(so, authentications);
  const result = kedaHpaFor(so, {
    version: VERSION,
    params,
    podIdentities,
    ...(options.owner ? { owner: options.owner } : {}),
  });
  const activationOf = (index: number, type: string): string | undefined => {
    if (type === "cron") return "inside its window";
    try {
      const { values } = readTrigger(type, params[index], {
        modifiers: kedaUsesModifiers(so),
        ...(podIdentities[index] !== undefined ? { podIdentity: podIdentities[index] } : {}),
      });
      return `> ${kedaActivationThreshold(type, values)}`;
    } catch {
      return undefined;
    }
  };
  const metrics = result.metrics.map((m) => {
    const activation = m.spec.type === "External" ? activationOf(m.index, m.type) : undefined;
    return {
      trigger: m.index,
      type: m.type,
      metric: m.metricName,
      target: targetText(m),
      ...(activation !== undefined ? { activation } : {}),
    };
  });
  if ("error" in result) {
    return {
      row: {
        source,
        metrics,
        error: result.error,
        ...(result.trigger !== undefined ? { trigger: result.trigger } : {}),
        warnings,
      },
    };
  }
  const hpa: KedaHpa = result.hpa;
  return {
    row: { source, hpa: `${hpa.metadata.namespace}/${hpa.metadata.name}`, metrics, warnings },
    hpa: hpa as unknown as KubeObject,
  };
}

/** A ScaledObject's lines in `plan`'s table output (a Knative source's: prefix `knative`). */
export function kedaRowText(k: KedaRow, prefix = "keda"): string {
  const warnings = k.warnings.map((w) => `    warning: ${w}\n`).join("");
  if (k.error !== undefined) {
    return `${prefix} ${k.source}${
      k.trigger !== undefined ? ` (trigger ${k.trigger})` : ""
    }: ${k.error}\n${warnings}`;
  }
  return `${prefix} ${k.source} -> HorizontalPodAutoscaler ${k.hpa} (see --output yaml)\n` +
    k.metrics.map((m) =>
      `    trigger ${m.trigger} ${m.type}: ${m.metric}, target ${m.target}${
        m.activation !== undefined ? `, active ${m.activation}` : ""
      }\n`
    ).join("") +
    warnings;
}
