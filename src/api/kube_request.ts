/**
 * The Kubernetes API call of delegated authentication and authorization (injected: the serve
 * command passes its cluster client), and reading its loosely typed answers.
 *
 * @module
 */

/** A call to the Kubernetes API (injected: the serve command passes its cluster client). */
export type KubeRequest = (request: {
  method: "GET" | "POST";
  /** Absolute API path, e.g. `/apis/authorization.k8s.io/v1/subjectaccessreviews`. */
  path: string;
  body?: unknown;
}) => Promise<{ status: number; body: unknown }>;

/** `value` as a record to read fields from (an empty one when it is not an object). */
export function asRecord(value: unknown): Record<string, any> {
  return value && typeof value === "object" ? value as Record<string, any> : {};
}
