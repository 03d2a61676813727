/**
 * KEDA v2.20.2's `keda.sh/v1alpha1` ScaledObject and TriggerAuthentication, read from a manifest
 * or from the cluster: the fields this adapter acts on, validated with errors that name the
 * object and the field (`spec.triggers[1].type: required`). Field names and defaults from KEDA's
 * `apis/keda/v1alpha1/scaledobject_types.go` and `triggerauthentication_types.go`; unknown
 * fields are ignored, as KEDA's decoder ignores them.
 *
 * @module
 */
import { z } from "zod";
import { HpaBehaviorSchema, hpaDisplayName, withoutNulls, zodProblems } from "../kubernetes/hpa.ts";
import { goParseBool } from "./typed_config.ts";
import { KEDA_API_VERSION } from "./names.ts";

const StringMap = z.record(z.string(), z.string());

/** A trigger's `authenticationRef`. */
const AuthenticationRefSchema = z.object({
  name: z.string().min(1),
  /** `TriggerAuthentication` (default) or `ClusterTriggerAuthentication`. */
  kind: z.enum(["TriggerAuthentication", "ClusterTriggerAuthentication"]).optional(),
});

/** One `spec.triggers[]` entry. */
const TriggerSchema = z.object({
  type: z.string().min(1),
  name: z.string().optional(),
  useCachedMetrics: z.boolean().optional(),
  metadata: StringMap.optional(),
  authenticationRef: AuthenticationRefSchema.optional(),
  /** `AverageValue` (default), `Value` or `Utilization`. */
  metricType: z.enum(["AverageValue", "Value", "Utilization"]).optional(),
});

const ScalingModifiersSchema = z.object({
  formula: z.string().optional(),
  target: z.string().optional(),
  activationTarget: z.string().optional(),
  metricType: z.enum(["AverageValue", "Value", "Utilization"]).optional(),
});

const FallbackSchema = z.object({
  failureThreshold: z.number().int(),
  replicas: z.number().int(),
  behavior: z.enum([
    "static",
    "currentReplicas",
    "currentReplicasIfHigher",
    "currentReplicasIfLower",
    "scalingModifiers",
  ])
    .optional(),
});

const ScaledObjectSpecSchema = z.object({
  scaleTargetRef: z.object({
    name: z.string().min(1),
    apiVersion: z.string().optional(),
    kind: z.string().optional(),
    envSourceContainerName: z.string().optional(),
  }),
  pollingInterval: z.number().int().optional(),
  initialCooldownPeriod: z.number().int().optional(),
  cooldownPeriod: z.number().int().optional(),
  idleReplicaCount: z.number().int().optional(),
  minReplicaCount: z.number().int().optional(),
  maxReplicaCount: z.number().int().optional(),
  advanced: z.object({
    restoreToOriginalReplicaCount: z.boolean().optional(),
    horizontalPodAutoscalerConfig: z.object({
      name: z.string().optional(),
      behavior: HpaBehaviorSchema.optional(),
    }).optional(),
    scalingModifiers: ScalingModifiersSchema.optional(),
  }).optional(),
  triggers: z.array(TriggerSchema),
  fallback: FallbackSchema.optional(),
});

/** The ScaledObject fields this adapter reads. */
export const ScaledObjectSchema = z.object({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: z.object({
    name: z.string().min(1),
    namespace: z.string().optional(),
    uid: z.string().optional(),
    generation: z.number().int().optional(),
    labels: StringMap.optional(),
    annotations: StringMap.optional(),
  }),
  spec: ScaledObjectSpecSchema,
});

/** A parsed ScaledObject. */
export type ScaledObject = z.infer<typeof ScaledObjectSchema>;
/** One of its triggers. */
export type ScaledObjectTrigger = z.infer<typeof TriggerSchema>;

/** An object that is not a valid ScaledObject; `problems` name the fields. */
export class InvalidScaledObjectError extends Error {
  override name = "InvalidScaledObjectError";
  /** `namespace/name` of the ScaledObject, or `<unnamed>`. */
  readonly scaledObject: string;
  /** One line per problem: `field.path: what is wrong`. */
  readonly problems: string[];
  constructor(scaledObject: string, problems: string[]) {
    super(`invalid ScaledObject ${scaledObject}: ${problems.join("; ")}`);
    this.scaledObject = scaledObject;
    this.problems = problems;
  }
}

/** `namespace/name` of a raw object, as well as it can be read (`default` when unset). */
const objectDisplayName = hpaDisplayName;

/** KEDA's `IsUsingModifiers`: `advanced.scalingModifiers` set with any field. */
export function kedaUsesModifiers(so: ScaledObject): boolean {
  const m = so.spec.advanced?.scalingModifiers;
  return m !== undefined &&
    [m.formula, m.target, m.activationTarget, m.metricType].some((v) =>
      v !== undefined && v !== ""
    );
}

/** KEDA's `getBoolAnnotation`: absent is false; a value Go's ParseBool refuses counts as true. */
export function kedaBoolAnnotation(so: ScaledObject, key: string): boolean {
  const v = so.metadata.annotations?.[key];
  return v !== undefined && (goParseBool(v) ?? true);
}

/** Whether `obj` says it is a KEDA ScaledObject (by apiVersion and kind). */
export function isScaledObject(obj: unknown): boolean {
  const o = obj as { apiVersion?: unknown; kind?: unknown } | null;
  return o?.kind === "ScaledObject" && o.apiVersion === KEDA_API_VERSION;
}

/**
 * Validate a ScaledObject. Throws {@linkcode InvalidScaledObjectError} naming it and every bad
 * field.
 *
 * @example
 * ```ts
 * const so = parseScaledObject(yamlObject);
 * so.spec.triggers[0].type; // "prometheus"
 * ```
 */
export function parseScaledObject(obj: unknown): ScaledObject {
  const name = objectDisplayName(obj);
  if (obj === null || typeof obj !== "object" || Array.isArray(obj)) {
    throw new InvalidScaledObjectError(name, ["want an object"]);
  }
  const input = withoutNulls(obj);
  const result = ScaledObjectSchema.safeParse(input);
  if (result.success) return result.data;
  throw new InvalidScaledObjectError(name, zodProblems(result.error.issues, input));
}

/** A TriggerAuthentication's (or ClusterTriggerAuthentication's) parameter sources. */
const TriggerAuthenticationSchema = z.object({
  apiVersion: z.string().optional(),
  kind: z.enum(["TriggerAuthentication", "ClusterTriggerAuthentication"]),
  metadata: z.object({ name: z.string().min(1), namespace: z.string().optional() }),
  spec: z.object({
    secretTargetRef: z.array(z.object({
      parameter: z.string(),
      name: z.string(),
      key: z.string(),
    })).optional(),
    configMapTargetRef: z.array(z.object({
      parameter: z.string(),
      name: z.string(),
      key: z.string(),
    })).optional(),
    env: z.array(z.object({
      parameter: z.string(),
      name: z.string(),
      containerName: z.string().optional(),
    })).optional(),
    podIdentity: z.object({
      provider: z.string(),
      roleArn: z.string().optional(),
      externalID: z.string().optional(),
      identityOwner: z.string().optional(),
    }).optional(),
  }),
});

/** A parsed TriggerAuthentication or ClusterTriggerAuthentication. */
export type TriggerAuthentication = z.infer<typeof TriggerAuthenticationSchema>;

/** Whether `obj` is a KEDA TriggerAuthentication or ClusterTriggerAuthentication. */
export function isTriggerAuthentication(obj: unknown): boolean {
  const o = obj as { apiVersion?: unknown; kind?: unknown } | null;
  return o?.apiVersion === KEDA_API_VERSION &&
    (o.kind === "TriggerAuthentication" || o.kind === "ClusterTriggerAuthentication");
}

/** Validate a TriggerAuthentication; throws an Error naming it and every bad field. */
export function parseTriggerAuthentication(obj: unknown): TriggerAuthentication {
  const input = withoutNulls(obj);
  const result = TriggerAuthenticationSchema.safeParse(input);
  if (result.success) return result.data;
  const kind = (obj as { kind?: unknown } | null)?.kind;
  throw new Error(
    `invalid ${typeof kind === "string" ? kind : "TriggerAuthentication"} ${
      objectDisplayName(obj)
    }: ${zodProblems(result.error.issues, input).join("; ")}`,
  );
}
