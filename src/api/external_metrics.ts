/**
 * `external.metrics.k8s.io` reads (v1beta1): a URL parsed into a store lookup once, and the
 * `ExternalMetricValueList` answer in the exact JSON of k8s.io/metrics, or a 404 that says why.
 *
 * @module
 */
import { formatQuantity } from "../core/kubernetes/quantity.ts";
import { formatTimestamp } from "../store/store.ts";
import type { ExternalItem, ExternalLookup } from "../store/types.ts";
import type { PlainResponse } from "../runtime/serve.ts";
import { EXTERNAL_GROUP } from "./discovery.ts";
import {
  FORWARD,
  type Forward,
  itemBody,
  listText,
  type MetricSource,
  type Pending,
  type ReadCaches,
} from "./metric_read.ts";
import type { AdapterAnswer } from "./prometheus_adapter.ts";
import { kedaExternal } from "./keda_metrics.ts";
import { plainJson, plainReady } from "./responses.ts";
import { parseParam, type SelectorCache } from "./selectors.ts";
import { plainNotFound, statusPlain } from "./status.ts";

function externalItemText(item: ExternalItem): string {
  const memo = item.memo ??= {};
  return memo.external ??= JSON.stringify(externalItemJson(item));
}

function externalItemJson(item: ExternalItem): Record<string, unknown> {
  return {
    metricName: item.metricName,
    metricLabels: item.nullLabels ? null : Object.fromEntries(
      Object.keys(item.metricLabels).sort().map((k) => [k, item.metricLabels[k]]),
    ),
    timestamp: formatTimestamp(item.timestamp),
    ...(item.windowSeconds !== undefined ? { window: Math.round(item.windowSeconds) } : {}),
    value: item.quantity ?? formatQuantity(item.value),
  };
}

/** An external metrics read, as its URL asks it. */
export interface ExternalRead {
  group: typeof EXTERNAL_GROUP;
  route: "external";
  lookup: ExternalLookup;
  /** Key of the read's list body in the list cache: made at the first read of several items. */
  listKey?: string;
}

/** The read an external metrics URL asks (after `/apis/<group>/v1beta1/`), or its 404/400. */
export function externalRead(
  selectors: SelectorCache,
  search: string,
  rest: string[],
): ExternalRead | { error: PlainResponse } {
  if (rest.length !== 3 || rest[0] !== "namespaces" || !rest[1] || !rest[2]) {
    return { error: plainNotFound() };
  }
  const [, namespace, metricName] = rest;
  const labelSel = parseParam(selectors, search, "labelSelector");
  if ("error" in labelSel) return labelSel;
  return {
    group: EXTERNAL_GROUP,
    route: "external",
    lookup: {
      namespace,
      metricName,
      selector: labelSel.sel,
      canonicalSelector: labelSel.canonical,
    },
  };
}

/**
 * The answer to an external metrics read from the store as it is now, or {@linkcode FORWARD}
 * when no HPA of ours asks for it and the API has a delegate.
 */
export function externalMetrics(
  read: ExternalRead,
  caches: ReadCaches,
  options: MetricSource,
): PlainResponse | Forward | Pending {
  if (options.keda) {
    const keda = kedaExternal(read.lookup, { ...options, keda: options.keda });
    if (keda !== undefined) return keda;
  }
  const result = options.store.lookupExternal(read.lookup, options.now());
  if ("miss" in result) {
    const what =
      `the server could not find the metric ${read.lookup.metricName} for provided labels`;
    const miss = (): PlainResponse | Forward => {
      if (result.miss.unowned && options.delegates?.external) return FORWARD;
      return statusPlain("NotFound", `${what}: ${result.miss.reason}`);
    };
    const adapter = result.miss.unowned ? options.prometheusAdapter : undefined;
    if (adapter === undefined) return miss();
    const answer = adapter.external({
      namespace: read.lookup.namespace,
      metricName: read.lookup.metricName,
      selector: read.lookup.selector,
      selectorText: read.lookup.canonicalSelector ?? "",
    });
    if (answer === undefined) return miss();
    if (!(answer instanceof Promise)) return adapterAnswer(answer, what);
    return { pending: answer.then((a) => a === undefined ? miss() : adapterAnswer(a, what)) };
  }
  const items = result.items;
  const make = (): string =>
    listText(
      "ExternalMetricValueList",
      `${EXTERNAL_GROUP}/v1beta1`,
      items.length === 1
        ? [JSON.stringify(externalItemJson(items[0]))]
        : items.map(externalItemText),
    );
  if (items.length === 1) {
    return plainReady(itemBody(items[0], "external", make));
  }
  read.listKey ??= [
    "external",
    read.lookup.namespace,
    read.lookup.metricName,
    read.lookup.canonicalSelector,
  ]
    .join("\u0000");
  return plainReady(caches.lists(read.listKey, items, make));
}

/** A prometheus-adapter rule's answer as an ExternalMetricValueList or a Status. */
function adapterAnswer(answer: AdapterAnswer<ExternalItem>, what: string): PlainResponse {
  if ("notFound" in answer) return statusPlain("NotFound", `${what}: ${answer.notFound}`);
  if ("internalError" in answer) {
    return statusPlain("InternalError", `Internal error occurred: ${answer.internalError}`);
  }
  return plainJson(
    listText(
      "ExternalMetricValueList",
      `${EXTERNAL_GROUP}/v1beta1`,
      answer.items.map(externalItemText),
    ),
  );
}
