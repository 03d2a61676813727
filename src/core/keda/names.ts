/**
 * KEDA v2.20.2's names: of the HPA it writes for a ScaledObject, of the labels it sets, and of
 * each trigger's External metric (`s<index>-<scaler's name>`, normalized). Facts from KEDA's
 * `controllers/keda/hpa.go`, `pkg/scalers/scaler.go` and `pkg/util/normalize_string.go`; the
 * vectors of its tests are in tests/core/keda/names_test.ts.
 *
 * @module
 */

/** The API group and version of KEDA's objects. */
export const KEDA_API_VERSION = "keda.sh/v1alpha1";
/** The label KEDA puts on a ScaledObject and on its HPA, and every External metric selects. */
export const KEDA_SCALED_OBJECT_LABEL = "scaledobject.keda.sh/name";
/** The ScaledObject annotation listing its labels not to copy to the HPA (comma-separated). */
export const KEDA_HPA_EXCLUDED_LABELS = "scaledobject.keda.sh/hpa-excluded-labels";
/** The annotation that disables the HPA's scale-in (any value but a false boolean). */
export const KEDA_PAUSED_SCALE_IN = "autoscaling.keda.sh/paused-scale-in";
/** The annotation that disables the HPA's scale-out. */
export const KEDA_PAUSED_SCALE_OUT = "autoscaling.keda.sh/paused-scale-out";
/** The `app.kubernetes.io/managed-by` of the HPAs KEDA's operator writes. */
export const KEDA_OPERATOR = "keda-operator";
/** The External metric a ScaledObject's `scalingModifiers` formula is served as. */
export const KEDA_COMPOSITE_METRIC = "composite-metric";

/** `keda-hpa-<name>`, KEDA's HPA name when `horizontalPodAutoscalerConfig.name` is not set. */
export function kedaDefaultHpaName(scaledObject: string): string {
  return `keda-hpa-${scaledObject}`;
}

/**
 * KEDA's `util.NormalizeString`: `/`, `.`, `:`, `%`, `(` and `)` become `-`; nothing else
 * changes (no lower-casing, no other escaping).
 */
export function kedaNormalize(s: string): string {
  return s.replace(/[/.:%()]/g, "-");
}

/** KEDA's `GenerateMetricNameWithIndex`: `s<index>-<name>`. */
export function kedaMetricName(index: number, name: string): string {
  return `s${index}-${name}`;
}

/**
 * The `app.kubernetes.io/name` label of an HPA: its name cut to 63 characters, then trailing
 * characters that are not alphanumeric trimmed (a label value must end with one).
 */
export function kedaNameLabel(hpaName: string): string {
  return hpaName.slice(0, 63).replace(/[^A-Za-z0-9]+$/, "");
}

/**
 * KEDA's cron metric name part: a schedule with its spaces removed, then `*` -> `x`,
 * `/` -> `Sl`, `?` -> `Qm`, `,` -> `Cm`.
 */
export function kedaCronPart(schedule: string): string {
  return schedule.replace(/ /g, "").replace(/\*/g, "x").replace(/\//g, "Sl").replace(/\?/g, "Qm")
    .replace(/,/g, "Cm");
}

/** Go's `url.ParseRequestURI` path of `s`, or undefined when it is not a request URI. */
function requestUriPath(s: string): string | undefined {
  const q = s.indexOf("?");
  const rest = q < 0 ? s : s.slice(0, q);
  if (rest.startsWith("/")) return rest;
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:/.exec(rest);
  if (scheme === null) return undefined;
  const after = rest.slice(scheme[0].length);
  if (!after.startsWith("//")) return ""; // opaque: no path
  const slash = after.indexOf("/", 2);
  return slash < 0 ? "" : after.slice(slash);
}

/**
 * The queue name of an `aws-sqs-queue` trigger's metric, as KEDA reads `queueURL`: the value
 * itself when Go's `ParseRequestURI` refuses it (`my-queue`), else the third of exactly three
 * path segments (`https://sqs.eu-west-1.amazonaws.com/<account>/<queue>`); null when the URL
 * has no such segment (KEDA: `cannot get queueName from queueURL`).
 */
export function kedaSqsQueueName(queueUrl: string): string | null {
  const path = requestUriPath(queueUrl);
  if (path === undefined) return queueUrl;
  const parts = path.split("/");
  return parts.length === 3 && parts[2] !== "" ? parts[2] : null;
}
