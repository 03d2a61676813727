/**
 * Two checks of a CustomResourceDefinition's openAPIV3Schema that the deploy tests share, so that
 * they need no kube-apiserver: {@linkcode structuralViolations} applies the apiserver's rule for
 * structural schemas, and {@linkcode schemaErrors} validates an object with the keywords our CRDs
 * use, as the apiserver would (a field the schema does not declare is an error, as for
 * `kubectl apply --server-side`, instead of being pruned). CEL rules are not evaluated.
 *
 * @example
 * ```ts
 * const schema = crd.spec.versions[0].schema.openAPIV3Schema;
 * assert.deepEqual(structuralViolations(schema), []);
 * assert.deepEqual(schemaErrors(schema, scaledObject), []);
 * ```
 */

// deno-lint-ignore no-explicit-any
type Schema = Record<string, any>;

/** The keywords a structural schema may not put inside anyOf, allOf, oneOf or not. */
const STRUCTURE_KEYWORDS = [
  "type",
  "properties",
  "additionalProperties",
  "items",
  "default",
  "description",
  "nullable",
  "x-kubernetes-preserve-unknown-fields",
  "x-kubernetes-int-or-string",
  "x-kubernetes-embedded-resource",
];

const LOGIC_KEYWORDS = ["anyOf", "allOf", "oneOf", "not"];

/**
 * Where `schema` is not structural, one line per node: a node without `type` (unless it keeps
 * unknown fields or is int-or-string), `properties` next to `additionalProperties`, a structural
 * keyword inside a logic junctor other than int-or-string's `anyOf: [{type: integer}, {type:
 * string}]`, or a root `metadata` that says more than `type: object`.
 */
export function structuralViolations(schema: Schema): string[] {
  const out: string[] = [];
  const walk = (node: Schema, path: string): void => {
    const intOrString = node["x-kubernetes-int-or-string"] === true;
    if (
      typeof node.type !== "string" && node["x-kubernetes-preserve-unknown-fields"] !== true &&
      !intOrString
    ) {
      out.push(`${path || "/"}: no type`);
    }
    if (node.properties && node.additionalProperties) {
      out.push(`${path || "/"}: both properties and additionalProperties`);
    }
    for (const junctor of LOGIC_KEYWORDS) {
      if (node[junctor] === undefined) continue;
      const branches: Schema[] = junctor === "not" ? [node.not] : node[junctor];
      const intOrStringBranches = intOrString && junctor === "anyOf" &&
        JSON.stringify(branches) === JSON.stringify([{ type: "integer" }, { type: "string" }]);
      if (intOrStringBranches) continue;
      for (const [i, b] of branches.entries()) {
        for (const k of STRUCTURE_KEYWORDS) {
          if (k in b) out.push(`${path || "/"}/${junctor}/${i}: ${k} inside ${junctor}`);
        }
      }
    }
    for (const [k, v] of Object.entries(node.properties ?? {})) {
      walk(v as Schema, `${path}/properties/${k}`);
    }
    if (typeof node.additionalProperties === "object") {
      walk(node.additionalProperties, `${path}/additionalProperties`);
    }
    if (node.items !== undefined) {
      if (Array.isArray(node.items)) out.push(`${path}/items: a list of schemas`);
      else walk(node.items, `${path}/items`);
    }
  };
  walk(schema, "");
  const metadata = schema.properties?.metadata;
  if (metadata && JSON.stringify(metadata) !== JSON.stringify({ type: "object" })) {
    out.push("/properties/metadata: more than type object");
  }
  return out;
}

function typeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

/**
 * The errors of `value` against `schema`, one line each with its JSON path: type, required,
 * enum, minimum, minLength, minItems, pattern, int32 range, date-time, int-or-string, and any
 * field the schema does not declare.
 */
export function schemaErrors(schema: Schema, value: unknown): string[] {
  const out: string[] = [];
  const walk = (node: Schema, v: unknown, path: string): void => {
    const at = path || ".";
    if (node["x-kubernetes-int-or-string"] === true) {
      if (typeOf(v) !== "integer" && typeOf(v) !== "string") {
        out.push(`${at}: ${typeOf(v)}, want an integer or a string`);
        return;
      }
    } else if (node.type !== undefined) {
      const t = typeOf(v);
      if (t !== node.type && !(node.type === "number" && t === "integer")) {
        out.push(`${at}: ${t}, want ${node.type}`);
        return;
      }
    }
    if (node.enum && !node.enum.includes(v)) {
      out.push(`${at}: ${JSON.stringify(v)} not in ${JSON.stringify(node.enum)}`);
    }
    if (typeof v === "number") {
      if (node.minimum !== undefined && v < node.minimum) {
        out.push(`${at}: ${v} below ${node.minimum}`);
      }
      if (node.format === "int32" && (v < -(2 ** 31) || v >= 2 ** 31)) {
        out.push(`${at}: ${v} out of int32`);
      }
    }
    if (typeof v === "string") {
      if (node.minLength !== undefined && v.length < node.minLength) {
        out.push(`${at}: shorter than ${node.minLength}`);
      }
      if (node.pattern !== undefined && !new RegExp(node.pattern).test(v)) {
        out.push(`${at}: "${v}" does not match ${node.pattern}`);
      }
      if (node.format === "date-time" && Number.isNaN(Date.parse(v))) {
        out.push(`${at}: "${v}" is not a date-time`);
      }
    }
    if (Array.isArray(v)) {
      if (node.minItems !== undefined && v.length < node.minItems) {
        out.push(`${at}: ${v.length} items, want at least ${node.minItems}`);
      }
      if (node.items) v.forEach((x, i) => walk(node.items, x, `${path}[${i}]`));
    }
    if (typeOf(v) === "object" && node.type === "object") {
      const obj = v as Record<string, unknown>;
      for (const r of node.required ?? []) {
        if (!(r in obj)) out.push(`${path}.${r}: required`);
      }
      if (node["x-kubernetes-preserve-unknown-fields"] === true) return;
      for (const [k, x] of Object.entries(obj)) {
        const child = node.properties?.[k] ??
          (typeof node.additionalProperties === "object" ? node.additionalProperties : undefined);
        // the root's metadata is ObjectMeta, which the apiserver validates itself
        if (child === undefined) out.push(`${path}.${k}: not declared in the schema`);
        else if (!(path === "" && k === "metadata")) walk(child, x, `${path}.${k}`);
      }
    }
  };
  walk(schema, value, "");
  return out;
}
