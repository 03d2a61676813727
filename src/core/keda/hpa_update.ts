/**
 * When KEDA v2.20.2 updates the HPA it wrote for a ScaledObject (`controllers/keda/hpa.go`
 * `updateHPAIfNeeded`), as a pure decision: the spec when the metric counts differ, the
 * behavior is not `Semantic.DeepEqual`, or the spec is not `Semantic.DeepDerivative` of the
 * HPA found (unset fields of the wanted spec ignored, quantities compared by value); then the
 * labels and the annotations each by `DeepDerivative` (the annotations also when the wanted
 * ones are none and the HPA has some). So an edit of a field KEDA sets is reverted, and extra
 * labels or annotations on the HPA are left alone.
 *
 * @module
 */
import { parseQuantity } from "../kubernetes/quantity.ts";
import type { KedaHpa } from "./hpa.ts";

/** Fields of an HPA that hold quantities (compared by value). */
const QUANTITY_KEYS = new Set(["averageValue", "value", "tolerance"]);

function quantityEqual(a: unknown, b: unknown): boolean {
  if (typeof a !== "string" || typeof b !== "string") return a === b;
  try {
    return parseQuantity(a) === parseQuantity(b);
  } catch {
    return a === b;
  }
}

/**
 * apimachinery's `Semantic.DeepDerivative` on JSON values: `want` derives `have` when every
 * field `want` sets has the same value in `have` (absent, empty strings, empty lists and maps
 * are unset; a list may be a prefix of `have`'s).
 */
export function deepDerivative(want: unknown, have: unknown, key = ""): boolean {
  if (want === undefined || want === null) return true;
  if (QUANTITY_KEYS.has(key)) return want === "" || quantityEqual(want, have);
  if (typeof want === "string") return want === "" || want === have;
  if (Array.isArray(want)) {
    if (want.length === 0) return true;
    if (!Array.isArray(have) || want.length > have.length) return false;
    return want.every((w, i) => deepDerivative(w, have[i]));
  }
  if (typeof want === "object") {
    const entries = Object.entries(want as Record<string, unknown>);
    if (entries.length === 0) return true;
    if (have === null || typeof have !== "object" || Array.isArray(have)) return false;
    return entries.every(([k, v]) => deepDerivative(v, (have as Record<string, unknown>)[k], k));
  }
  return want === have;
}

/** apimachinery's `Semantic.DeepEqual` on JSON values (quantities by value). */
export function semanticEqual(a: unknown, b: unknown, key = ""): boolean {
  if (QUANTITY_KEYS.has(key)) return quantityEqual(a, b);
  if (a === undefined || a === null || b === undefined || b === null) {
    return (a ?? null) === (b ?? null);
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length &&
      a.every((x, i) => semanticEqual(x, b[i]));
  }
  if (typeof a === "object" && typeof b === "object") {
    const ka = Object.keys(a as object).filter((k) =>
      (a as Record<string, unknown>)[k] !== undefined
    );
    const kb = Object.keys(b as object).filter((k) =>
      (b as Record<string, unknown>)[k] !== undefined
    );
    return ka.length === kb.length &&
      ka.every((k) =>
        semanticEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], k)
      );
  }
  return a === b;
}

/** An HPA as found in the cluster: the fields KEDA compares. */
export interface FoundHpa {
  metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: { metrics?: unknown[]; behavior?: unknown } & Record<string, unknown>;
}

/** Which parts of the found HPA KEDA replaces with the wanted one. */
export function kedaHpaUpdates(
  want: KedaHpa,
  found: FoundHpa,
): { spec: boolean; labels: boolean; annotations: boolean } {
  const spec = want.spec.metrics.length !== (found.spec.metrics ?? []).length ||
    !semanticEqual(want.spec.behavior, found.spec.behavior) ||
    !deepDerivative(want.spec, found.spec);
  const labels = !deepDerivative(want.metadata.labels, found.metadata.labels);
  const wantAnnotations = want.metadata.annotations;
  const annotations = (wantAnnotations === undefined && found.metadata.annotations !== undefined) ||
    !deepDerivative(wantAnnotations, found.metadata.annotations);
  return { spec, labels, annotations };
}
