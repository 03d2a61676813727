/**
 * External metrics reads of the ScaledObjects this adapter owns (`--keda-scaled-objects`),
 * answered as KEDA v2.20.2's metrics server answers them (core/keda/serving.ts): the ScaledObject
 * named by the `scaledobject.keda.sh/name` label of the selector, its metric matched without
 * regard to case, one item in the spec's casing with KEDA's quantity and a timestamp cut to the
 * second, and KEDA's error texts in a 500 Status without a reason. The value is a lookup in the
 * store (the engine collected it); no source is asked per read. A read for a ScaledObject this
 * adapter does not own is not answered here (the store's answer, or the delegate's).
 *
 * @module
 */
import { KEDA_COMPOSITE_METRIC, KEDA_SCALED_OBJECT_LABEL } from "../core/keda/names.ts";
import { truncateToMilli } from "../core/formula.ts";
import { formatQuantity } from "../core/kubernetes/quantity.ts";
import {
  kedaMatchMetric,
  kedaMetricItem,
  kedaReadError,
  kedaScaledObjectOfSelector,
} from "../core/keda/serving.ts";
import type { PlainResponse } from "../runtime/serve.ts";
import type { ExternalLookup } from "../store/types.ts";
import type { KedaServingSource, MetricSource } from "./metric_read.ts";
import { plainJson } from "./responses.ts";

/** A `metav1.Status` of code 500 and no reason, as KEDA's metrics server writes its errors. */
function kedaFailure(message: string): PlainResponse {
  return plainJson(
    JSON.stringify({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message,
      code: 500,
    }),
    500,
  );
}

/**
 * The answer to an external read for an owned ScaledObject, or undefined when the read is not
 * for one (no `scaledobject.keda.sh/name` equality in its selector, or a ScaledObject that is
 * not ours).
 */
export function kedaExternal(
  lookup: ExternalLookup,
  source: MetricSource & { keda: KedaServingSource },
): PlainResponse | undefined {
  const labels = new Map<string, string>();
  for (const r of lookup.selector) {
    if ((r.operator === "=" || r.operator === "==") && r.values.length === 1) {
      labels.set(r.key, r.values[0]);
    }
  }
  if (!labels.has(KEDA_SCALED_OBJECT_LABEL)) return undefined;
  let name: string;
  try {
    name = kedaScaledObjectOfSelector(labels);
  } catch (e) {
    return kedaFailure((e as Error).message);
  }
  const so = source.keda.scaledObject(lookup.namespace, name);
  if (so === undefined) return undefined;
  // with scalingModifiers KEDA computes every trigger and answers the composite metric,
  // whatever name was asked
  const match = so.composite
    ? KEDA_COMPOSITE_METRIC
    : kedaMatchMetric(so.metricNames, lookup.metricName);
  if (match === undefined) return kedaFailure(kedaReadError("no match", lookup.metricName));
  const now = source.now();
  const found = source.store.lookupExternal({ ...lookup, metricName: match }, now);
  if ("miss" in found || found.items.length === 0) {
    return kedaFailure(kedaReadError("failed", lookup.metricName));
  }
  const item = kedaMetricItem(match, found.items[0].value, now);
  // the composite value is a milli quantity set from the formula's result (SetMilli)
  if (so.composite) item.value = formatQuantity(truncateToMilli(found.items[0].value));
  return plainJson(
    `{"kind":"ExternalMetricValueList","apiVersion":"external.metrics.k8s.io/v1beta1","metadata":{},"items":[${
      JSON.stringify(item)
    }]}`,
  );
}
