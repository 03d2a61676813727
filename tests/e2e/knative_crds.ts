/**
 * Minimal CustomResourceDefinitions of the two Knative Serving kinds the Knative reconciler of
 * issue 23 reads and writes: `podautoscalers.autoscaling.internal.knative.dev` and
 * `serverlessservices.networking.internal.knative.dev`, both `v1alpha1`, namespaced, with a
 * status subresource and spec/status kept as given (`x-kubernetes-preserve-unknown-fields`), as
 * knative.dev/serving's config/core/300-resources declares them (its printer columns left out).
 * Nothing runs Knative's own controllers: the e2e suite plays the SKS reconciler itself.
 *
 * The harness installs them before kube-controller-manager starts, so that the garbage
 * collector watches PodAutoscalers from its first discovery.
 */

/** Names of the two CRDs, for `kubectl wait --for=condition=Established`. */
export const KNATIVE_CRD_NAMES = [
  "podautoscalers.autoscaling.internal.knative.dev",
  "serverlessservices.networking.internal.knative.dev",
] as const;

function crd(
  group: string,
  kind: string,
  plural: string,
  singular: string,
  shortNames: string[],
  category: string,
): unknown {
  const preserved = { type: "object", "x-kubernetes-preserve-unknown-fields": true };
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: {
      name: `${plural}.${group}`,
      labels: { "knative.dev/crd-install": "true", "hpa-metrics-adapter/e2e": "true" },
    },
    spec: {
      group,
      names: {
        kind,
        plural,
        singular,
        shortNames,
        categories: ["knative-internal", category],
      },
      scope: "Namespaced",
      versions: [{
        name: "v1alpha1",
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: "object",
            properties: { spec: preserved, status: preserved },
          },
        },
      }],
    },
  };
}

/** The two CRDs as a `v1` List, for `kubectl apply -f -`. */
export function knativeCrds(): unknown {
  return {
    apiVersion: "v1",
    kind: "List",
    items: [
      crd(
        "autoscaling.internal.knative.dev",
        "PodAutoscaler",
        "podautoscalers",
        "podautoscaler",
        ["kpa", "pa"],
        "autoscaling",
      ),
      crd(
        "networking.internal.knative.dev",
        "ServerlessService",
        "serverlessservices",
        "serverlessservice",
        ["sks"],
        "networking",
      ),
    ],
  };
}
