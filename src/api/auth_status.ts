/**
 * The error answers of authentication and authorization (401, 403, 500) as the Go server
 * sends them: `metav1.Status` JSON, with the Go server's 403 message.
 *
 * @module
 */
import type { UserInfo } from "./auth_user.ts";
import type { RequestAttributes } from "./request_attributes.ts";
import { statusBody, type StatusDetails, type StatusReason } from "./status.ts";

function statusResponse(
  reason: StatusReason,
  message: string,
  details?: StatusDetails,
): Response {
  const body = statusBody(reason, message, { details });
  // Only the content type: the app's own Status errors (statusResponse) also set cache-control.
  return new Response(JSON.stringify(body), {
    status: body.code,
    headers: { "content-type": "application/json" },
  });
}

/** 401 as the Go server sends it. */
export function unauthorizedResponse(): Response {
  return statusResponse("Unauthorized", "Unauthorized");
}

/** Go's `%q` for the strings we quote (JSON quoting agrees for printable text). */
export function goQuote(s: string): string {
  return JSON.stringify(s);
}

function sanitize(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/**
 * The message of a 403, as k8s.io/apiserver's `responsewriters.Forbidden` words it, e.g.
 * `pods.custom.metrics.k8s.io "*" is forbidden: User "alice" cannot get resource
 * "pods/queue-length" in API group "custom.metrics.k8s.io" in the namespace "default"`.
 */
export function forbiddenMessage(user: UserInfo, attrs: RequestAttributes, reason: string): string {
  let msg: string;
  if (!attrs.isResourceRequest) {
    msg = `User ${goQuote(user.name)} cannot ${attrs.verb} path ${goQuote(attrs.path)}`;
  } else {
    const resource = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
    msg =
      `User ${goQuote(user.name)} cannot ${attrs.verb} resource ${goQuote(resource)} in API group ${
        goQuote(attrs.apiGroup)
      }` + (attrs.namespace
        ? ` in the namespace ${goQuote(attrs.namespace)}`
        : " at the cluster scope");
  }
  const err = reason ? `${sanitize(msg)}: ${reason}` : sanitize(msg);
  if (!attrs.isResourceRequest || (!attrs.resource && !attrs.apiGroup)) return `forbidden: ${err}`;
  const gr = attrs.apiGroup ? `${attrs.resource}.${attrs.apiGroup}` : attrs.resource;
  return attrs.name
    ? `${gr} ${goQuote(attrs.name)} is forbidden: ${err}`
    : `${gr} is forbidden: ${err}`;
}

/** 403 as the Go server sends it. */
export function forbiddenResponse(
  user: UserInfo,
  attrs: RequestAttributes,
  reason: string,
): Response {
  const details: StatusDetails = {};
  if (attrs.isResourceRequest) {
    if (attrs.name) details.name = attrs.name;
    if (attrs.apiGroup) details.group = attrs.apiGroup;
    if (attrs.resource) details.kind = attrs.resource;
  }
  return statusResponse("Forbidden", forbiddenMessage(user, attrs, reason), details);
}

export function internalErrorResponse(message: string): Response {
  return statusResponse("InternalError", `Internal error occurred: ${message}`, {
    causes: [{ message }],
  });
}
