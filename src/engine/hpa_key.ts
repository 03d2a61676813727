/** How the engine names an HPA: the key of its plans' HPA, its events and its logs. */
import type { KubeObject } from "../cluster/types.ts";

/**
 * `namespace/name` of an HPA (`default` when the object has no namespace).
 *
 * @example
 * ```ts
 * hpaKeyOf({ metadata: { namespace: "shop", name: "web" } }); // "shop/web"
 * ```
 */
export function hpaKeyOf(obj: KubeObject): string {
  return `${obj.metadata.namespace ?? "default"}/${obj.metadata.name}`;
}
