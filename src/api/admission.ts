/**
 * The validating admission webhook (issue 50): `POST /validate/<anything>` with an
 * `admission.k8s.io/v1` AdmissionReview, answered with the same review carrying a response:
 * `allowed: true` and one warning per problem the adapter finds in the object (kubectl prints
 * each as `Warning: ...`), or, in deny mode, `allowed: false` with a `metav1.Status` of code 422
 * that lists the errors.
 *
 * The checks themselves are handed in (`AdmissionOptions.review`, made by `cli/` from serve's
 * flags): this module only speaks the wire format. The body is untrusted: it is read up to
 * {@linkcode MAX_ADMISSION_REVIEW_BYTES} (decided from the head first, see app.ts), parsed as
 * JSON and checked field by field; anything that is not a v1 AdmissionReview with a request and
 * a uid answers 400 with a Status, never an exception. A review that throws answers
 * `allowed: true` with a warning saying the object could not be checked: the webhook never
 * blocks a write by failing.
 *
 * Warnings are cut as kube-apiserver would (k8s.io/apiserver's warning recorder): control
 * characters make kube-apiserver drop a warning, so they become spaces; each is kept under 256
 * characters and all of them under 4096, the rest summed up in a last warning.
 *
 * @module
 */

/** Where the webhook is served: every path below it (the path only names the rule). */
export const ADMISSION_PATH_PREFIX = "/validate/";

/**
 * The largest AdmissionReview read: kube-apiserver's own cap on a request body (3 MiB); a
 * review carries the object and, on update, the old one.
 */
export const MAX_ADMISSION_REVIEW_BYTES: number = 3 * 1024 * 1024;

/** The longest warning kept whole (kube-apiserver's per-warning truncation). */
export const MAX_WARNING_CHARS = 256;
/** The most warning text in one answer (kube-apiserver's total before it truncates). */
export const MAX_WARNINGS_CHARS = 4096;

const API_VERSION = "admission.k8s.io/v1";

/** The part of an AdmissionReview request the checks read. */
export interface AdmissionRequest {
  uid: string;
  /** `CREATE`, `UPDATE`, `DELETE` or `CONNECT`. */
  operation: string;
  /** The object's group, version and kind as sent. */
  kind: { group: string; version: string; kind: string };
  namespace: string;
  name: string;
  /** The object being admitted (null on DELETE). */
  object: Record<string, unknown> | null;
  /** The object before an UPDATE, else null. */
  oldObject: Record<string, unknown> | null;
}

/** What the checks found in one object. */
export interface AdmissionVerdict {
  /** Problems that stop a metric (or the object) from working: denied in deny mode. */
  errors: string[];
  /** Problems worth knowing that do not stop it. */
  warnings: string[];
}

/** Options of {@linkcode admissionAnswer}. */
export interface AdmissionOptions {
  /** The checks of one object; may throw (the object is then allowed with a warning). */
  review(request: AdmissionRequest): AdmissionVerdict;
  /** `--admission-deny-invalid`: refuse an object with errors. */
  denyInvalid: boolean;
}

/** An answer: HTTP status and JSON body. */
export interface AdmissionAnswer {
  status: number;
  body: unknown;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function badRequest(message: string): AdmissionAnswer {
  return {
    status: 400,
    body: {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message,
      reason: "BadRequest",
      code: 400,
    },
  };
}

/** The `request` of a parsed AdmissionReview, or what is wrong with it. */
export function parseAdmissionReview(body: unknown): AdmissionRequest | { error: string } {
  if (!isRecord(body)) return { error: "the body is not a JSON object" };
  if (body.apiVersion !== API_VERSION || body.kind !== "AdmissionReview") {
    return {
      error: `want an AdmissionReview of ${API_VERSION}, got kind ${
        JSON.stringify(String(body.kind ?? "")).slice(0, 80)
      } of ${JSON.stringify(String(body.apiVersion ?? "")).slice(0, 80)}`,
    };
  }
  const r = body.request;
  if (!isRecord(r)) return { error: "the AdmissionReview has no request" };
  if (typeof r.uid !== "string" || r.uid === "" || r.uid.length > 256) {
    return { error: "the AdmissionReview request has no uid" };
  }
  const kind = isRecord(r.kind) ? r.kind : {};
  const str = (v: unknown): string => (typeof v === "string" ? v : "");
  const object = isRecord(r.object) ? r.object : null;
  const oldObject = isRecord(r.oldObject) ? r.oldObject : null;
  const metadata = object !== null && isRecord(object.metadata) ? object.metadata : {};
  return {
    uid: r.uid,
    operation: str(r.operation),
    kind: { group: str(kind.group), version: str(kind.version), kind: str(kind.kind) },
    namespace: str(r.namespace) || str(metadata.namespace),
    name: str(r.name) || str(metadata.name),
    object,
    oldObject,
  };
}

// deno-lint-ignore no-control-regex
const CONTROL_RE = /[\u0000-\u001f\u007f-\u009f]/g;

/** `text` without control characters, at most `max` characters (code points). */
function cut(text: string, max: number): string {
  const clean = text.replace(CONTROL_RE, " ");
  const points = [...clean];
  return points.length <= max ? clean : points.slice(0, max - 3).join("") + "...";
}

/**
 * The warnings as kube-apiserver passes them on: each under {@linkcode MAX_WARNING_CHARS},
 * duplicates once, all under {@linkcode MAX_WARNINGS_CHARS}, the ones left out counted in a
 * last warning.
 */
export function fitWarnings(warnings: readonly string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  let total = 0;
  // room for the last one that counts the rest
  const budget = MAX_WARNINGS_CHARS - 100;
  for (let i = 0; i < warnings.length; i++) {
    const w = cut(warnings[i], MAX_WARNING_CHARS);
    if (w.trim() === "" || seen.has(w)) continue;
    const length = [...w].length;
    if (total + length > budget) {
      const rest = warnings.slice(i).filter((x) => !seen.has(cut(x, MAX_WARNING_CHARS))).length;
      out.push(
        `${rest} more problem${
          rest === 1 ? "" : "s"
        } not shown: run hpa-metrics-adapter plan -f on the manifest`,
      );
      break;
    }
    seen.add(w);
    out.push(w);
    total += length;
  }
  return out;
}

/**
 * The answer to an AdmissionReview (`body` as parsed from JSON): the review with its response,
 * or 400 with a Status for anything else.
 *
 * @example
 * ```ts
 * admissionAnswer(review, { review: () => ({ errors: [], warnings: ["w"] }), denyInvalid: false });
 * // { status: 200, body: { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview",
 * //   response: { uid, allowed: true, warnings: ["w"] } } }
 * ```
 */
export function admissionAnswer(body: unknown, options: AdmissionOptions): AdmissionAnswer {
  const request = parseAdmissionReview(body);
  if ("error" in request) return badRequest(`invalid AdmissionReview: ${request.error}`);
  let verdict: AdmissionVerdict;
  try {
    verdict = request.object === null ? { errors: [], warnings: [] } : options.review(request);
  } catch (e) {
    verdict = {
      errors: [],
      warnings: [
        `hpa-metrics-adapter could not check this object: ${
          e instanceof Error ? e.message : String(e)
        }`,
      ],
    };
  }
  const response: Record<string, unknown> = { uid: request.uid };
  if (options.denyInvalid && verdict.errors.length > 0) {
    const message = fitWarnings(verdict.errors).join("; ");
    response.allowed = false;
    response.status = {
      metadata: {},
      status: "Failure",
      message,
      reason: "Invalid",
      code: 422,
    };
    const warnings = fitWarnings(verdict.warnings);
    if (warnings.length > 0) response.warnings = warnings;
  } else {
    response.allowed = true;
    const warnings = fitWarnings([...verdict.errors, ...verdict.warnings]);
    if (warnings.length > 0) response.warnings = warnings;
  }
  return {
    status: 200,
    body: { apiVersion: API_VERSION, kind: "AdmissionReview", response },
  };
}

/** The answer to a body as text (null: it was over the cap). */
export function admissionAnswerText(
  text: string | null,
  options: AdmissionOptions,
): AdmissionAnswer {
  if (text === null) {
    return {
      status: 413,
      body: {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: `the AdmissionReview is over ${MAX_ADMISSION_REVIEW_BYTES} bytes`,
        reason: "RequestEntityTooLarge",
        code: 413,
      },
    };
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (e) {
    return badRequest(`the body is not JSON: ${cut((e as Error).message, 200)}`);
  }
  return admissionAnswer(body, options);
}
