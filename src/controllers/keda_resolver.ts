/**
 * A ScaledObject's trigger parameters as KEDA v2.20.2 resolves them before it builds a scaler
 * (`pkg/scaling/resolver/scale_resolvers.go`, `pkg/scaling/scalers_builder.go`): the env of the
 * scale target's container (for `<key>FromEnv`: `env` values with `$(VAR)` references, secret and
 * config map keys, `envFrom` with its prefix, optional sources skipped), and the parameters of the
 * trigger's TriggerAuthentication or ClusterTriggerAuthentication (`secretTargetRef`,
 * `configMapTargetRef`, `env`). As in KEDA, a missing authentication, Secret, ConfigMap or key
 * leaves the parameter empty (the trigger's own check then names it); a target container env that
 * cannot be read fails the trigger with KEDA's error.
 *
 * Everything is read with `read` (uncached GETs): a Secret read here is kept with the ScaledObject
 * that named it and goes only to that trigger's server.
 *
 * @module
 */
import type { Kind, KubeObject } from "../cluster/types.ts";
import type { KedaResolvedTrigger } from "../collectors/keda.ts";
import { kedaUsesModifiers, type ScaledObject } from "../core/keda/scaled_object.ts";
import { readTrigger, TriggerError } from "../core/keda/triggers.ts";
import type { TriggerParams } from "../core/keda/typed_config.ts";
import type { TriggerContext } from "../core/keda/triggers.ts";

/** Reads one object (null when it does not exist); throws on other errors. */
export type ObjectReader = (
  kind: Kind,
  namespace: string | undefined,
  name: string,
) => Promise<KubeObject | null>;

/** What {@linkcode resolveKedaParams} found for each trigger. */
export interface ResolvedTriggers {
  /** Each trigger's parameters, by index. */
  params: TriggerParams[];
  /** Each trigger's `podIdentity.provider` of its authentication, by index. */
  podIdentities: (string | undefined)[];
  /** Each trigger's `podIdentity.roleArn` and `externalID` (provider `aws`), by index. */
  podIdentityRoles: ({ roleArn?: string; externalId?: string } | undefined)[];
  /** A trigger whose env could not be resolved: KEDA's error (the scaler is not built). */
  errors: (string | undefined)[];
}

// deno-lint-ignore no-explicit-any
type Loose = any;

function decode(b64: unknown): string | undefined {
  if (typeof b64 !== "string") return undefined;
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  return new TextDecoder().decode(bytes);
}

/** A Secret's data decoded, or null when it cannot be read. */
async function secretData(
  read: ObjectReader,
  namespace: string,
  name: string,
): Promise<Record<string, string> | null> {
  const s = await read("Secret", namespace, name).catch(() => null);
  if (!s) return null;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries((s as Loose).data ?? {})) {
    const d = decode(v);
    if (d !== undefined) out[k] = d;
  }
  for (const [k, v] of Object.entries((s as Loose).stringData ?? {})) {
    if (typeof v === "string") out[k] = v;
  }
  return out;
}

async function configMapData(
  read: ObjectReader,
  namespace: string,
  name: string,
): Promise<Record<string, string> | null> {
  const c = await read("ConfigMap", namespace, name).catch(() => null);
  if (!c) return null;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries((c as Loose).data ?? {})) {
    if (typeof v === "string") out[k] = v;
  }
  return out;
}

/** Kubernetes' `$(VAR)` expansion as KEDA applies it (`$$` escapes; unknown kept as written). */
export function expandEnvValue(value: string, env: Readonly<Record<string, string>>): string {
  let out = "";
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (c === "$" && i + 3 < value.length) {
      if (value[i + 1] === "$") {
        out += "$";
        i += 1;
        continue;
      }
      if (value[i + 1] === "(") {
        const close = value.indexOf(")", i + 2);
        if (close >= 0) {
          const key = value.slice(i + 2, close);
          out += Object.hasOwn(env, key) ? env[key] : `$(${key})`;
          i = close;
          continue;
        }
        // no closer: the rest as written
        out += value.slice(i);
        return out;
      }
      out += c;
      continue;
    }
    out += c;
  }
  return out;
}

/**
 * The pod template's spec of a Deployment or StatefulSet target (null for other kinds: their
 * triggers get no env), or the error of its GET.
 */
export async function targetPodSpec(
  so: ScaledObject,
  read: ObjectReader,
): Promise<{ spec: Loose } | { error: string }> {
  const ref = so.spec.scaleTargetRef;
  const kind = ref.kind || "Deployment";
  const ns = so.metadata.namespace ?? "default";
  if (kind !== "Deployment" && kind !== "StatefulSet") return { spec: null };
  const obj = await read(kind, ns, ref.name).catch(() => null);
  if (!obj) {
    return {
      error: `${
        kind === "Deployment" ? "deployments" : "statefulsets"
      }.apps "${ref.name}" not found`,
    };
  }
  return { spec: obj.spec?.template?.spec ?? null };
}

/** KEDA's `ResolveContainerEnv`: the env of the named (or first) container. */
export async function resolveContainerEnv(
  podSpec: Loose,
  containerName: string,
  namespace: string,
  read: ObjectReader,
): Promise<Record<string, string>> {
  const containers: Loose[] = Array.isArray(podSpec?.containers) ? podSpec.containers : [];
  if (containers.length < 1) throw new Error("target object doesn't have containers");
  let container = containers[0];
  if (containerName !== "") {
    container = containers.find((c) => c?.name === containerName);
    if (!container) {
      throw new Error(`couldn't find container with name ${containerName} on Target object`);
    }
  }
  const resolved: Record<string, string> = {};
  for (const source of Array.isArray(container.envFrom) ? container.envFrom : []) {
    const prefix = typeof source?.prefix === "string" ? source.prefix : "";
    if (source?.configMapRef) {
      const data = await configMapData(read, namespace, source.configMapRef.name ?? "");
      if (data) { for (const [k, v] of Object.entries(data)) resolved[prefix + k] = v; }
      else if (!source.configMapRef.optional) {
        throw new Error(
          `error reading config ref ${
            source.configMapRef.name ?? ""
          } on namespace ${namespace}/: configmaps "${source.configMapRef.name ?? ""}" not found`,
        );
      }
    } else if (source?.secretRef) {
      const data = await secretData(read, namespace, source.secretRef.name ?? "");
      if (data) { for (const [k, v] of Object.entries(data)) resolved[prefix + k] = v; }
      else if (!source.secretRef.optional) {
        throw new Error(
          `error reading secret ref ${
            source.secretRef.name ?? ""
          } on namespace ${namespace}: secrets "${source.secretRef.name ?? ""}" not found`,
        );
      }
    }
  }
  for (const e of Array.isArray(container.env) ? container.env : []) {
    if (typeof e?.name !== "string") continue;
    let value = "";
    if (typeof e.value === "string" && e.value !== "") {
      value = expandEnvValue(e.value, resolved);
    } else if (e.valueFrom?.secretKeyRef) {
      const ref = e.valueFrom.secretKeyRef;
      const v = (await secretData(read, namespace, ref.name ?? ""))?.[ref.key ?? ""];
      if (v === undefined) {
        if (ref.optional) continue;
        throw new Error(
          `error resolving secret name ${
            ref.name ?? ""
          } for env ${e.name} in namespace ${namespace}`,
        );
      }
      value = v;
    } else if (e.valueFrom?.configMapKeyRef) {
      const ref = e.valueFrom.configMapKeyRef;
      const data = await configMapData(read, namespace, ref.name ?? "");
      if (!data) {
        if (ref.optional) continue;
        throw new Error(
          `error resolving config ${ref.name ?? ""} for env ${e.name} in namespace ${namespace}`,
        );
      }
      value = data[ref.key ?? ""] ?? "";
    } else if (e.valueFrom) continue; // fieldRef, resourceFieldRef: skipped, as KEDA does
    resolved[e.name] = value;
  }
  return resolved;
}

/**
 * Every trigger's parameters: its metadata, the target container's env and its authentication's
 * parameters. `clusterNamespace` is where a ClusterTriggerAuthentication's Secrets and ConfigMaps
 * live (KEDA's `KEDA_CLUSTER_OBJECT_NAMESPACE`, "keda").
 */
export async function resolveKedaParams(
  so: ScaledObject,
  read: ObjectReader,
  clusterNamespace: string,
): Promise<ResolvedTriggers> {
  const ns = so.metadata.namespace ?? "default";
  const out: ResolvedTriggers = {
    params: [],
    podIdentities: [],
    podIdentityRoles: [],
    errors: [],
  };
  const pod = await targetPodSpec(so, read);
  const envOf = async (container: string): Promise<Record<string, string>> => {
    if ("error" in pod || pod.spec === null) return {};
    return await resolveContainerEnv(pod.spec, container, ns, read);
  };
  for (const t of so.spec.triggers) {
    const metadata = t.metadata ?? {};
    let resolvedEnv: Record<string, string> = {};
    let error: string | undefined;
    try {
      resolvedEnv = await envOf(so.spec.scaleTargetRef.envSourceContainerName ?? "");
    } catch (e) {
      error = `error resolving secrets for ScaleTarget: ${(e as Error).message}`;
    }
    const authParams: Record<string, string> = {};
    let podIdentity: string | undefined;
    let role: { roleArn?: string; externalId?: string } | undefined;
    const ref = t.authenticationRef;
    if (ref !== undefined && ref.name !== "" && error === undefined) {
      const cluster = ref.kind === "ClusterTriggerAuthentication";
      const auth = await read(
        cluster ? "ClusterTriggerAuthentication" : "TriggerAuthentication",
        cluster ? undefined : ns,
        ref.name,
      ).catch(() => null);
      const spec: Loose = auth?.spec ?? null;
      if (spec) {
        const secretNs = cluster ? clusterNamespace : ns;
        if (typeof spec.podIdentity?.provider === "string") podIdentity = spec.podIdentity.provider;
        const { roleArn, externalID } = spec.podIdentity ?? {};
        if (podIdentity === "aws" && typeof roleArn === "string" && roleArn !== "") {
          role = {
            roleArn,
            ...(typeof externalID === "string" && externalID !== ""
              ? { externalId: externalID }
              : {}),
          };
        }
        for (const e of Array.isArray(spec.env) ? spec.env : []) {
          if (typeof e?.parameter !== "string") continue;
          try {
            authParams[e.parameter] = (await envOf(e.containerName ?? ""))[e.name ?? ""] ?? "";
          } catch {
            authParams[e.parameter] = "";
          }
        }
        for (const e of Array.isArray(spec.configMapTargetRef) ? spec.configMapTargetRef : []) {
          if (typeof e?.parameter !== "string") continue;
          authParams[e.parameter] =
            (await configMapData(read, secretNs, e.name ?? ""))?.[e.key ?? ""] ?? "";
        }
        for (const e of Array.isArray(spec.secretTargetRef) ? spec.secretTargetRef : []) {
          if (typeof e?.parameter !== "string") continue;
          authParams[e.parameter] = e.name && e.key
            ? (await secretData(read, secretNs, e.name))?.[e.key] ?? ""
            : "";
        }
      }
    }
    out.params.push({ metadata, authParams, resolvedEnv });
    out.podIdentities.push(podIdentity);
    out.podIdentityRoles.push(role);
    out.errors.push(error);
  }
  return out;
}

/** The `podIdentity` part of trigger `index`'s {@linkcode TriggerContext}. */
export function podIdentityContext(
  resolved: ResolvedTriggers,
  index: number,
): Pick<TriggerContext, "podIdentity" | "podIdentityRoleArn" | "podIdentityExternalId"> {
  const provider = resolved.podIdentities[index];
  const role = resolved.podIdentityRoles[index];
  return {
    ...(provider !== undefined ? { podIdentity: provider } : {}),
    ...(role?.roleArn !== undefined ? { podIdentityRoleArn: role.roleArn } : {}),
    ...(role?.externalId !== undefined ? { podIdentityExternalId: role.externalId } : {}),
  };
}

/**
 * Each trigger's values as KEDA's typed config reads its resolved parameters, with the digest
 * its plan carries (`digest` of the type and parameters: a keyed hash, never the values);
 * undefined for a trigger whose metadata KEDA would refuse (its plan says why).
 */
export function typedTriggers(
  so: ScaledObject,
  resolved: ResolvedTriggers,
  digest: (value: unknown) => string,
): (KedaResolvedTrigger | undefined)[] {
  return so.spec.triggers.map((t, i): KedaResolvedTrigger | undefined => {
    try {
      const { values } = readTrigger(t.type, resolved.params[i], {
        modifiers: kedaUsesModifiers(so),
        ...(t.metricType !== undefined ? { metricType: t.metricType } : {}),
        ...podIdentityContext(resolved, i),
      });
      return {
        type: t.type,
        values,
        // a new role (or external id) makes a new collector
        digest: digest([t.type, resolved.params[i], resolved.podIdentityRoles[i] ?? null]),
      };
    } catch (e) {
      if (e instanceof TriggerError) return undefined;
      throw e;
    }
  });
}
