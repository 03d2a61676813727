/**
 * `metav1.Status` error bodies, as the Kubernetes API server writes them, so that the HPA
 * controller, the aggregator and kubectl read our errors as theirs.
 *
 * @module
 */

/** `metav1.StatusReason` values this adapter answers with. */
export type StatusReason =
  | "NotFound"
  | "BadRequest"
  | "Forbidden"
  | "Unauthorized"
  | "MethodNotAllowed"
  | "ServiceUnavailable"
  | "InternalError"
  | "RequestEntityTooLarge";

/** `metav1.StatusDetails` (only the fields we set). */
export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: { reason?: string; message?: string; field?: string }[];
  retryAfterSeconds?: number;
}

/** A `metav1.Status` object with `status: Failure`. */
export interface StatusBody {
  kind: "Status";
  apiVersion: "v1";
  metadata: Record<string, never>;
  status: "Failure";
  message: string;
  reason: StatusReason;
  details?: StatusDetails;
  code: number;
}

/** Options of {@linkcode statusBody} beyond the reason and message. */
export interface StatusOptions {
  details?: StatusDetails;
}

const CODES: Record<StatusReason, number> = {
  NotFound: 404,
  BadRequest: 400,
  Forbidden: 403,
  Unauthorized: 401,
  MethodNotAllowed: 405,
  ServiceUnavailable: 503,
  InternalError: 500,
  RequestEntityTooLarge: 413,
};

/**
 * A failure Status with fields in the order the Go API server writes them.
 *
 * @example
 * ```ts
 * statusBody("NotFound", "the server could not find the requested resource");
 * // { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message: "...", reason: "NotFound", code: 404 }
 * ```
 */
export function statusBody(
  reason: StatusReason,
  message: string,
  options: StatusOptions = {},
): StatusBody {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    ...(options.details ? { details: options.details } : {}),
    code: CODES[reason],
  };
}

/** The headers of every `metav1.Status` answer (and of the metrics API's JSON). */
export const STATUS_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "content-type": "application/json",
  "cache-control": "no-cache, private",
});

/** A failure Status as status code, headers and body text (for a server's fast path). */
export interface PlainStatus {
  status: number;
  headers: Readonly<Record<string, string>>;
  body: string;
}

/** The 404 of a path nothing is served at, as the Go server words it. */
export function plainNotFound(): PlainStatus {
  return statusPlain("NotFound", "the server could not find the requested resource");
}

/**
 * A failure Status as plain status, headers and body text: what {@linkcode statusResponse}
 * answers, without a Response object.
 */
export function statusPlain(
  reason: StatusReason,
  message: string,
  options: StatusOptions = {},
): PlainStatus {
  const body = statusBody(reason, message, options);
  return { status: body.code, headers: STATUS_HEADERS, body: JSON.stringify(body) };
}

/** A JSON Response carrying a failure Status, with the status code that goes with its reason. */
export function statusResponse(
  reason: StatusReason,
  message: string,
  options: StatusOptions = {},
): Response {
  const plain = statusPlain(reason, message, options);
  return new Response(plain.body, { status: plain.status, headers: { ...plain.headers } });
}
