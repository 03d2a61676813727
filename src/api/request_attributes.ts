/**
 * The authorization attributes of a request, as k8s.io/apiserver's RequestInfoFactory derives
 * them from its method and URL, and the always-allowed paths.
 *
 * @module
 */

/** Request attributes as the Go server's RequestInfoFactory derives them. */
export interface RequestAttributes {
  isResourceRequest: boolean;
  /** URL path, percent-decoded. */
  path: string;
  verb: string;
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
}

function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * Derive the authorization attributes of a request as k8s.io/apiserver's RequestInfoFactory
 * does: `/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/pods/*\/m` is resource `pods`,
 * name `*`, subresource `m`, verb `get`; `/apis/external.metrics.k8s.io/v1beta1/namespaces/ns/m`
 * is resource `m`, verb `list`; `/apis`, `/openapi/v2` are non-resource paths.
 */
export function requestAttributes(method: string, url: URL): RequestAttributes {
  // (every metric read asks this: a path without escapes is taken as it is)
  const raw = url.pathname;
  const escaped = raw.includes("%");
  const path = escaped ? raw.split("/").map(decodeSegment).join("/") : raw;
  const trimmed = raw.replace(/^\/+|\/+$/g, "");
  const segments = trimmed === ""
    ? []
    : escaped
    ? trimmed.split("/").map(decodeSegment)
    : trimmed.split("/");
  const attrs: RequestAttributes = {
    isResourceRequest: false,
    path,
    verb: method.toLowerCase(),
    apiGroup: "",
    apiVersion: "",
    namespace: "",
    resource: "",
    subresource: "",
    name: "",
  };
  let parts = segments;
  if (parts.length < 3 || (parts[0] !== "apis" && parts[0] !== "api")) return attrs;
  const grouped = parts[0] === "apis";
  parts = parts.slice(1);
  if (grouped) {
    if (parts.length < 3) return attrs;
    attrs.apiGroup = parts[0];
    parts = parts.slice(1);
  }
  attrs.isResourceRequest = true;
  attrs.apiVersion = parts[0];
  parts = parts.slice(1);
  if ((parts[0] === "proxy" || parts[0] === "watch") && parts.length >= 2) {
    attrs.verb = parts[0];
    parts = parts.slice(1);
  } else {
    attrs.verb = VERBS.get(method.toUpperCase()) ?? "";
  }
  if (parts[0] === "namespaces") {
    if (parts.length > 1) {
      attrs.namespace = parts[1];
      if (parts.length > 2 && parts[2] !== "status" && parts[2] !== "finalize") {
        parts = parts.slice(2);
      }
    }
  }
  if (parts.length >= 3 && attrs.verb !== "proxy") attrs.subresource = parts[2];
  if (parts.length >= 2) attrs.name = parts[1];
  if (parts.length >= 1) attrs.resource = parts[0];
  if (!attrs.name && attrs.verb === "get") {
    const watch = url.searchParams.get("watch");
    attrs.verb = watch === null || watch.toLowerCase() === "false" || watch === "0"
      ? "list"
      : "watch";
  }
  if (!attrs.name && attrs.verb === "delete") attrs.verb = "deletecollection";
  return attrs;
}

/** The authorization verb of each HTTP method on a resource path (Kubernetes' RequestInfo). */
const VERBS = new Map([
  ["POST", "create"],
  ["GET", "get"],
  ["HEAD", "get"],
  ["PUT", "update"],
  ["PATCH", "patch"],
  ["DELETE", "delete"],
]);

/** Whether `path` is covered by always-allow paths (exact, or prefix with a trailing `*`). */
export function pathAlwaysAllowed(path: string, allowPaths: readonly string[]): boolean {
  const p = path.replace(/^\//, "");
  for (const entry of allowPaths) {
    const e = entry.replace(/^\//, "");
    if (e.endsWith("*") ? p.startsWith(e.slice(0, -1)) : p === e) return true;
  }
  return false;
}
