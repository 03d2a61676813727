/**
 * The zod schema of the autoscaling/v2 HorizontalPodAutoscaler fields this adapter reads, with
 * the checks the Kubernetes API server makes on them (a target sets the field its type names,
 * Pods targets are AverageValue, ...), so a manifest that passes here is one the cluster takes.
 * Unknown fields are dropped. `parseHpa` reads YAML nulls as absent; the schemas do not.
 */
import { z } from "zod";
import { dictionaryOf } from "../dictionary.ts";
import { CONVERTED_HPA_VERSIONS, convertHpaToV2, HpaConversionError } from "./hpa_conversion.ts";

/** Read YAML `null`s as absent: drop them from objects (not from lists), deeply. */
export function withoutNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutNulls);
  if (v === null || typeof v !== "object") return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) if (x !== null) out[k] = withoutNulls(x);
  return out;
}

const QUANTITY_RE = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$/;

/** A Kubernetes Quantity: a string (`500m`, `1k`) or a plain number, kept as a string. */
export const QuantitySchema = z
  .union([z.string(), z.number()])
  .transform((v) => String(v))
  .refine((v) => QUANTITY_RE.test(v.trim()), {
    error: (issue) => `"${String(issue.input)}" is not a quantity (want e.g. 10, 500m, 1.5k, 2Gi)`,
  });

// a dictionary, not a plain object: see dictionary.ts
const StringMap = z.record(z.string(), z.string()).transform(dictionaryOf);

/** metav1.LabelSelectorRequirement. */
export const LabelSelectorRequirementSchema = z.object({
  key: z.string().min(1),
  operator: z.enum(["In", "NotIn", "Exists", "DoesNotExist"]),
  values: z.array(z.string()).optional(),
});

/** metav1.LabelSelector. */
export const LabelSelectorSchema = z.object({
  matchLabels: StringMap.optional(),
  matchExpressions: z.array(LabelSelectorRequirementSchema).optional(),
});

/** autoscaling/v2 CrossVersionObjectReference. */
export const ObjectReferenceSchema = z.object({
  apiVersion: z.string().optional(),
  kind: z.string().min(1),
  name: z.string().min(1),
});

/** autoscaling/v2 MetricIdentifier. */
export const MetricIdentifierSchema = z.object({
  name: z.string().min(1),
  selector: LabelSelectorSchema.optional(),
});

/** autoscaling/v2 MetricTarget; the field its `type` names must be set. */
export const MetricTargetSchema = z
  .object({
    type: z.enum(["Value", "AverageValue", "Utilization"]),
    value: QuantitySchema.optional(),
    averageValue: QuantitySchema.optional(),
    averageUtilization: z.number().int().min(1).optional(),
  })
  .superRefine((t, ctx) => {
    const field = t.type === "Value"
      ? "value"
      : t.type === "AverageValue"
      ? "averageValue"
      : "averageUtilization";
    if (t[field] === undefined) {
      ctx.addIssue({
        code: "custom",
        path: [field],
        message: `required when type is ${t.type}`,
      });
    }
  });

function targetOfTypes(types: readonly string[], source: string) {
  return MetricTargetSchema.refine((t) => types.includes(t.type), {
    path: ["type"],
    message: `${source} metrics take target type ${types.join(" or ")}`,
  });
}

/** autoscaling/v2 ObjectMetricSource. */
export const ObjectMetricSourceSchema = z.object({
  describedObject: ObjectReferenceSchema,
  metric: MetricIdentifierSchema,
  target: targetOfTypes(["Value", "AverageValue"], "Object"),
});

/** autoscaling/v2 PodsMetricSource. */
export const PodsMetricSourceSchema = z.object({
  metric: MetricIdentifierSchema,
  target: targetOfTypes(["AverageValue"], "Pods"),
});

/** autoscaling/v2 ExternalMetricSource. */
export const ExternalMetricSourceSchema = z.object({
  metric: MetricIdentifierSchema,
  target: targetOfTypes(["Value", "AverageValue"], "External"),
});

/** autoscaling/v2 ResourceMetricSource (read, never collected here). */
export const ResourceMetricSourceSchema = z.object({
  name: z.string().min(1),
  target: targetOfTypes(["Utilization", "AverageValue"], "Resource"),
});

/** autoscaling/v2 ContainerResourceMetricSource (read, never collected here). */
export const ContainerResourceMetricSourceSchema = z.object({
  name: z.string().min(1),
  container: z.string().min(1),
  target: targetOfTypes(["Utilization", "AverageValue"], "ContainerResource"),
});

/** autoscaling/v2 MetricSpec: the member named by `type` is required. */
export const MetricSpecSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("Object"), object: ObjectMetricSourceSchema }),
  z.object({ type: z.literal("Pods"), pods: PodsMetricSourceSchema }),
  z.object({ type: z.literal("External"), external: ExternalMetricSourceSchema }),
  z.object({ type: z.literal("Resource"), resource: ResourceMetricSourceSchema }),
  z.object({
    type: z.literal("ContainerResource"),
    containerResource: ContainerResourceMetricSourceSchema,
  }),
]);

/** autoscaling/v2 HPAScalingPolicy. */
export const HpaScalingPolicySchema = z.object({
  type: z.enum(["Pods", "Percent"]),
  value: z.number().int().min(1),
  periodSeconds: z.number().int().min(1).max(1800),
});

/** autoscaling/v2 HPAScalingRules. */
export const HpaScalingRulesSchema = z.object({
  stabilizationWindowSeconds: z.number().int().min(0).max(3600).optional(),
  selectPolicy: z.enum(["Max", "Min", "Disabled"]).optional(),
  policies: z.array(HpaScalingPolicySchema).optional(),
  tolerance: QuantitySchema.optional(),
});

/** autoscaling/v2 HorizontalPodAutoscalerBehavior. */
export const HpaBehaviorSchema = z.object({
  scaleUp: HpaScalingRulesSchema.optional(),
  scaleDown: HpaScalingRulesSchema.optional(),
});

/** autoscaling/v2 HorizontalPodAutoscalerSpec. */
export const HpaSpecSchema = z
  .object({
    scaleTargetRef: ObjectReferenceSchema,
    minReplicas: z.number().int().min(0).optional(),
    maxReplicas: z.number().int().min(1),
    metrics: z.array(MetricSpecSchema).optional(),
    behavior: HpaBehaviorSchema.optional(),
  })
  .refine((s) => s.minReplicas === undefined || s.minReplicas <= s.maxReplicas, {
    path: ["minReplicas"],
    message: "must not be greater than maxReplicas",
  });

/** The HorizontalPodAutoscaler fields this adapter reads. */
export const HpaSchema = z.object({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: z.object({
    name: z.string().min(1),
    namespace: z.string().optional(),
    uid: z.string().optional(),
    annotations: StringMap.optional(),
  }),
  spec: HpaSpecSchema,
});

/** A parsed HorizontalPodAutoscaler. */
export type Hpa = z.infer<typeof HpaSchema>;
/** A parsed `spec`. */
export type HpaSpec = z.infer<typeof HpaSpecSchema>;
/** One parsed `spec.metrics[]` entry. */
export type HpaMetricSpec = z.infer<typeof MetricSpecSchema>;
/** A parsed MetricTarget. */
export type HpaMetricTarget = z.infer<typeof MetricTargetSchema>;
/** A parsed MetricIdentifier. */
export type HpaMetricIdentifier = z.infer<typeof MetricIdentifierSchema>;
/** A parsed LabelSelector. */
export type HpaLabelSelector = z.infer<typeof LabelSelectorSchema>;
/** A parsed CrossVersionObjectReference. */
export type HpaObjectReference = z.infer<typeof ObjectReferenceSchema>;
/** A parsed `spec.behavior`. */
export type HpaBehavior = z.infer<typeof HpaBehaviorSchema>;

/** An object that is not a valid HorizontalPodAutoscaler; `problems` name the fields. */
export class InvalidHpaError extends Error {
  override name = "InvalidHpaError";
  /** `namespace/name` of the HPA, or `<unnamed>`. */
  readonly hpa: string;
  /** One line per problem: `field.path: what is wrong`. */
  readonly problems: string[];
  constructor(hpa: string, problems: string[]) {
    super(`invalid HorizontalPodAutoscaler ${hpa}: ${problems.join("; ")}`);
    this.hpa = hpa;
    this.problems = problems;
  }
}

/** `namespace/name` of a raw HPA object, as well as it can be read. */
export function hpaDisplayName(obj: unknown): string {
  const meta = (obj as { metadata?: { name?: unknown; namespace?: unknown } } | null)?.metadata;
  const name = typeof meta?.name === "string" && meta.name !== "" ? meta.name : "<unnamed>";
  const ns = typeof meta?.namespace === "string" && meta.namespace !== ""
    ? meta.namespace
    : "default";
  return `${ns}/${name}`;
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const p of path) {
    if (typeof p === "number") out += `[${p}]`;
    else if (typeof p === "string" && /^[A-Za-z_][A-Za-z0-9_]*$/.test(p)) {
      out += out === "" ? p : `.${p}`;
    } else out += `[${JSON.stringify(String(p))}]`;
  }
  return out === "" ? "(object)" : out;
}

function valueAt(obj: unknown, path: readonly PropertyKey[]): unknown {
  let v: unknown = obj;
  for (const p of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<PropertyKey, unknown>)[p];
  }
  return v;
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "an object";
  if (typeof v === "string") return `"${v}"`;
  return `${typeof v} ${String(v)}`;
}

function issueText(issue: z.core.$ZodIssue, input: unknown): string {
  const value = valueAt(input, issue.path);
  switch (issue.code) {
    case "invalid_type":
      if (value === undefined || value === null) return "required";
      return `want ${issue.expected === "record" ? "a map" : issue.expected}, got ${
        describe(value)
      }${typeof value === "number" && issue.expected === "string" ? " (quote it in YAML)" : ""}`;
    case "invalid_union":
      if ("discriminator" in issue && issue.discriminator) {
        return value === undefined
          ? "required"
          : `invalid value ${describe(value)}, want one of ${
            (issue as { options?: unknown[] }).options?.join(", ") ?? ""
          }`;
      }
      return issue.message;
    case "invalid_value":
      return `invalid value ${describe(value)}, want one of ${issue.values.join(", ")}`;
    case "too_small":
      if (issue.origin === "string") return "must not be empty";
      return `${describe(value)} is too small (minimum ${issue.minimum})`;
    case "too_big":
      return `${describe(value)} is too large (maximum ${issue.maximum})`;
    default:
      return issue.message;
  }
}

/**
 * Validate a HorizontalPodAutoscaler (autoscaling/v2; autoscaling/v1 and v2beta2 are converted
 * to it first, as kube-apiserver converts them: hpa_conversion.ts). Throws `InvalidHpaError`
 * naming the HPA and every bad field (of the converted object).
 *
 * @example
 * ```ts
 * const hpa = parseHpa(yamlObject);
 * hpa.spec.metrics?.[0].type; // "External"
 * ```
 */
export function parseHpa(obj: unknown): Hpa {
  const name = hpaDisplayName(obj);
  if (obj === null || typeof obj !== "object" || Array.isArray(obj)) {
    throw new InvalidHpaError(name, [`want an object, got ${describe(obj)}`]);
  }
  const apiVersion = (obj as { apiVersion?: unknown }).apiVersion;
  if (apiVersion === "autoscaling/v2beta1") {
    throw new InvalidHpaError(name, [
      `apiVersion ${apiVersion} is not read (metrics have another shape there); convert the manifest to autoscaling/v2`,
    ]);
  }
  const kind = (obj as { kind?: unknown }).kind;
  if (kind !== undefined && kind !== "HorizontalPodAutoscaler") {
    throw new InvalidHpaError(name, [`kind: want HorizontalPodAutoscaler, got ${describe(kind)}`]);
  }
  let converted: unknown = obj;
  if (typeof apiVersion === "string" && CONVERTED_HPA_VERSIONS.includes(apiVersion)) {
    // autoscaling/v1 and v2beta2 as kube-apiserver serves them as autoscaling/v2
    try {
      converted = convertHpaToV2(obj);
    } catch (e) {
      if (!(e instanceof HpaConversionError)) throw e;
      throw new InvalidHpaError(name, [`${apiVersion}: ${e.message}`]);
    }
  }
  const input = withoutNulls(converted);
  const result = HpaSchema.safeParse(input);
  if (result.success) {
    // the version the object was read as (its fields are autoscaling/v2's)
    if (converted !== obj) result.data.apiVersion = apiVersion as string;
    return result.data;
  }
  throw new InvalidHpaError(name, zodProblems(result.error.issues, input));
}

/**
 * One line per problem of a failed zod parse of `input`, `field.path: what is wrong`, as
 * {@linkcode parseHpa} words them (for the other Kubernetes objects read the same way).
 */
export function zodProblems(issues: readonly z.core.$ZodIssue[], input: unknown): string[] {
  return [
    ...new Set(issues.map((issue) => `${formatPath(issue.path)}: ${issueText(issue, input)}`)),
  ];
}
