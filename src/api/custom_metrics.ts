/**
 * `custom.metrics.k8s.io` reads (v1beta1, v1beta2): a URL parsed into a store lookup once, and
 * the `MetricValueList` answer in the exact JSON of k8s.io/metrics, or a 404 that says why.
 *
 * @module
 */
import { formatQuantity } from "../core/kubernetes/quantity.ts";
import type { LabelSelector } from "../core/types.ts";
import { customLookupKey, formatTimestamp } from "../store/store.ts";
import type { CustomItem, CustomLookup } from "../store/types.ts";
import type { PlainResponse } from "../runtime/serve.ts";
import { CUSTOM_GROUP } from "./discovery.ts";
import {
  FORWARD,
  type Forward,
  itemBody,
  listText,
  type MetricSource,
  type Pending,
  type ReadCaches,
} from "./metric_read.ts";
import { podFilter } from "./pods.ts";
import type { AdapterAnswer, AdapterCustomRead } from "./prometheus_adapter.ts";
import { plainJson, plainReady } from "./responses.ts";
import { type OkSelector, parseParam, type SelectorCache } from "./selectors.ts";
import { plainNotFound, statusPlain } from "./status.ts";

/** `v1.ObjectReference` with Go's field order and omissions. */
function describedObject(item: CustomItem): Record<string, string> {
  const ref: Record<string, string> = {};
  if (item.describedKind) ref.kind = item.describedKind.kind;
  // a Namespace is cluster-scoped; the store keys its values by the namespace itself
  if (item.namespace && item.groupResource !== "namespaces") ref.namespace = item.namespace;
  ref.name = item.objectName;
  if (item.describedKind) ref.apiVersion = item.describedKind.apiVersion;
  return ref;
}

/** `metav1.LabelSelector` JSON: both parts omitted when empty. */
function selectorJson(ls: LabelSelector): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (ls.matchLabels && Object.keys(ls.matchLabels).length > 0) {
    out.matchLabels = Object.fromEntries(
      Object.keys(ls.matchLabels).sort().map((k) => [k, ls.matchLabels![k]]),
    );
  }
  if (ls.matchExpressions && ls.matchExpressions.length > 0) {
    out.matchExpressions = ls.matchExpressions.map((e) => ({
      key: e.key,
      operator: e.operator,
      ...(e.values && e.values.length > 0 ? { values: e.values } : {}),
    }));
  }
  return out;
}

function customItemJson(
  item: CustomItem,
  version: string,
  requestSelector: LabelSelector | null,
): Record<string, unknown> {
  const sel = item.metricSelectorObject ?? requestSelector;
  if (version === "v1beta1") {
    return {
      describedObject: describedObject(item),
      metricName: item.metricName,
      timestamp: formatTimestamp(item.timestamp),
      ...(item.windowSeconds !== undefined ? { window: Math.round(item.windowSeconds) } : {}),
      value: item.quantity ?? formatQuantity(item.value),
      selector: sel ? selectorJson(sel) : null,
    };
  }
  return {
    describedObject: describedObject(item),
    metric: { name: item.metricName, ...(sel ? { selector: selectorJson(sel) } : {}) },
    timestamp: formatTimestamp(item.timestamp),
    ...(item.windowSeconds !== undefined ? { windowSeconds: Math.round(item.windowSeconds) } : {}),
    value: item.quantity ?? formatQuantity(item.value),
  };
}

/** The JSON of one custom item, made once per stored value when it depends on nothing else. */
function customItemText(
  item: CustomItem,
  version: string,
  requestSelector: LabelSelector | null,
): string {
  if (item.metricSelectorObject === null && requestSelector !== null) {
    return JSON.stringify(customItemJson(item, version, requestSelector));
  }
  const memo = item.memo ??= {};
  return memo[version] ??= JSON.stringify(customItemJson(item, version, null));
}

/** A custom metrics read, as its URL asks it (parsed once per URL). */
export interface CustomRead {
  group: typeof CUSTOM_GROUP;
  route: "custom";
  version: string;
  /** The store lookup, the same object for every read of the URL. */
  lookup: CustomLookup;
  labelSel: OkSelector;
  /** The request's `metricLabelSelector`. */
  metricSel: OkSelector;
  /** Whether the URL names a namespace (`/namespaces/<ns>/...`). */
  namespaced: boolean;
  requestSelector: LabelSelector | null;
  /** Key of the read's list body in the list cache: made at the first read of several items. */
  listKey?: string;
}

/** The read a custom metrics URL asks (after `/apis/<group>/<version>/`), or its 404/400. */
export function customRead(
  selectors: SelectorCache,
  search: string,
  version: string,
  rest: string[],
): CustomRead | { error: PlainResponse } {
  let namespace: string;
  let groupResource: string;
  let name: string;
  let metricName: string;
  const notFound = { error: plainNotFound() };
  if (rest.length === 5 && rest[0] === "namespaces") {
    [, namespace, groupResource, name, metricName] = rest;
  } else if (rest.length === 4 && rest[0] === "namespaces" && rest[2] === "metrics") {
    // the Namespace object itself
    [, name, , metricName] = rest;
    namespace = name;
    groupResource = "namespaces";
  } else if (rest.length === 3) {
    [groupResource, name, metricName] = rest;
    // cluster-scoped; a Namespace's values are kept under the namespace itself
    namespace = groupResource === "namespaces" ? name : "";
  } else return notFound;
  if (!namespace && rest.length !== 3) return notFound;
  if (!groupResource || !name || !metricName) return notFound;

  const labelSel = parseParam(selectors, search, "labelSelector");
  if ("error" in labelSel) return labelSel;
  const metricSel = parseParam(selectors, search, "metricLabelSelector");
  if ("error" in metricSel) return metricSel;
  const metricSelector = metricSel.canonical;
  const lookup: CustomLookup = { namespace, groupResource, name, metricName, metricSelector };
  lookup.key = customLookupKey(lookup);
  return {
    group: CUSTOM_GROUP,
    route: "custom",
    version,
    lookup,
    labelSel,
    metricSel,
    namespaced: rest.length !== 3,
    requestSelector: metricSel.labelSelector,
  };
}

/**
 * The answer to a custom metrics read from the store as it is now, or {@linkcode FORWARD} when
 * no HPA of ours asks for it and the API has a delegate.
 */
export function customMetrics(
  read: CustomRead,
  caches: ReadCaches,
  options: MetricSource,
): PlainResponse | Forward | Pending {
  const { version, lookup, labelSel, requestSelector } = read;
  const { namespace, groupResource, name, metricName } = lookup;
  if (name === "*" && groupResource !== "pods" && labelSel.sel.length > 0) {
    // the store cannot select other objects than pods: prometheus-adapter's rules (which list
    // them) or the delegate may
    return selectedObjects(read, options);
  }
  const now = options.now();
  const filter = name === "*" && groupResource === "pods"
    ? podFilter(caches, namespace, labelSel, options.pods)
    : {};
  const result = options.store.lookupCustom(lookup, now, filter);
  const what = (): string =>
    `the server could not find the metric ${metricName} for ${groupResource} ${name}`;
  if ("miss" in result) {
    const miss = (): PlainResponse | Forward => {
      if (result.miss.unowned && options.delegates?.custom) return FORWARD;
      return statusPlain("NotFound", `${what()}: ${result.miss.reason}`);
    };
    const adapter = result.miss.unowned ? options.prometheusAdapter : undefined;
    if (adapter === undefined) return miss();
    const answer = adapter.custom(adapterRead(read, options));
    if (answer === undefined) return miss();
    if (!(answer instanceof Promise)) return adapterAnswer(read, answer, what);
    return {
      pending: answer.then((a) => a === undefined ? miss() : adapterAnswer(read, a, what)),
    };
  }
  const items = result.items;
  if (items.length === 0) {
    const sel = labelSel.canonical;
    const which = sel ? `matching labelSelector "${sel}"` : "in the namespace";
    const stored = result.stored ?? 0;
    return statusPlain(
      "NotFound",
      `${what()}: no ready pod ${which} has a value (values are stored for ${stored} pod${
        stored === 1 ? "" : "s"
      } in namespace ${namespace})`,
    );
  }
  const make = (): string =>
    listText(
      "MetricValueList",
      `${CUSTOM_GROUP}/${version}`,
      items.length === 1
        // a one-item body is kept whole (below): no fragment to keep besides
        ? [JSON.stringify(customItemJson(items[0], version, requestSelector))]
        : items.map((i) => customItemText(i, version, requestSelector)),
    );
  if (items.length === 1 && (items[0].metricSelectorObject !== null || requestSelector === null)) {
    // one item whose JSON depends on nothing else: its body lives with it
    return plainReady(itemBody(items[0], version, make));
  }
  read.listKey ??=
    `${version}\u0000${namespace}\u0000${groupResource}\u0000${name}\u0000${metricName}\u0000${lookup.metricSelector}\u0000${labelSel.canonical}`;
  return plainReady(caches.lists(read.listKey, items, make));
}

/**
 * A `*` read of other objects than pods with a labelSelector: prometheus-adapter's rules, else
 * the delegate, else a 400 (the store keeps no labels of those objects).
 */
function selectedObjects(
  read: CustomRead,
  options: MetricSource,
): PlainResponse | Forward | Pending {
  const { labelSel, lookup } = read;
  const refuse = (): PlainResponse | Forward =>
    options.delegates?.custom ? FORWARD : statusPlain(
      "BadRequest",
      `labelSelector "${labelSel.canonical}" is supported for pods only, not for ${lookup.groupResource}`,
    );
  const adapter = options.prometheusAdapter;
  if (adapter === undefined) return refuse();
  const what = (): string =>
    `the server could not find the metric ${lookup.metricName} for ${lookup.groupResource} ${lookup.name}`;
  const answer = adapter.custom(adapterRead(read, options));
  if (answer === undefined) return refuse();
  if (!(answer instanceof Promise)) return adapterAnswer(read, answer, what);
  return { pending: answer.then((a) => a === undefined ? refuse() : adapterAnswer(read, a, what)) };
}

/** The read as prometheus-adapter's rules take it. */
function adapterRead(read: CustomRead, options: MetricSource): AdapterCustomRead {
  const { lookup, labelSel, metricSel } = read;
  const cluster = lookup.groupResource === "namespaces" || !read.namespaced;
  return {
    namespace: cluster ? "" : lookup.namespace,
    groupResource: lookup.groupResource,
    namespaced: read.namespaced && lookup.groupResource !== "namespaces",
    name: lookup.name,
    metricName: lookup.metricName,
    metricSelector: metricSel.sel,
    metricSelectorText: metricSel.canonical,
    labelSelectorText: labelSel.canonical,
    names: () => {
      if (lookup.name !== "*") return [lookup.name];
      if (lookup.groupResource !== "pods") return null;
      // every pod the selector selects, as upstream lists them (ready or not)
      return options.pods.listPods(lookup.namespace)
        .filter((p) => labelSel.matches(p.metadata.labels ?? {}))
        .map((p) => p.metadata.name);
    },
  };
}

/** A prometheus-adapter rule's answer as a MetricValueList or a Status. */
function adapterAnswer(
  read: CustomRead,
  answer: AdapterAnswer<CustomItem>,
  what: () => string,
): PlainResponse {
  if ("notFound" in answer) return statusPlain("NotFound", `${what()}: ${answer.notFound}`);
  if ("internalError" in answer) {
    return statusPlain("InternalError", `Internal error occurred: ${answer.internalError}`);
  }
  return plainJson(
    listText(
      "MetricValueList",
      `${CUSTOM_GROUP}/${read.version}`,
      answer.items.map((i) => customItemText(i, read.version, read.requestSelector)),
    ),
  );
}
