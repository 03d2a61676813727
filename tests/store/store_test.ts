import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parseSelector } from "../../src/core/kubernetes/label_selector.ts";
import { describedKindFor, formatTimestamp, MetricStore } from "../../src/store/store.ts";
import type { CustomLookup, ServedAt, StoredPlan } from "../../src/store/types.ts";

const T0 = Date.UTC(2024, 0, 2, 3, 4, 5);
const SEC = 1000;

function podsPlan(hpa: string, queryKey = "q-" + hpa, namespace = "default"): StoredPlan {
  return {
    key: `${namespace}/${hpa}#0/Pods/rps`,
    hpa: { namespace, name: hpa },
    servedAt: {
      kind: "custom",
      namespace,
      groupResource: "pods",
      objectName: null,
      metricName: "rps",
      metricSelector: "",
    },
    queryKey,
  };
}

function objectPlan(
  hpa: string,
  object: string,
  queryKey: string,
  extra: Partial<Extract<ServedAt, { kind: "custom" }>> = {},
): StoredPlan {
  return {
    key: `default/${hpa}#1/Object/requests`,
    hpa: { namespace: "default", name: hpa },
    servedAt: {
      kind: "custom",
      namespace: "default",
      groupResource: "deployments.apps",
      objectName: object,
      metricName: "requests",
      metricSelector: "",
      ...extra,
    },
    queryKey,
  };
}

function externalPlan(
  hpa: string,
  queryKey: string,
  labels: Record<string, string> = { queue: "orders" },
  namespace = "default",
): StoredPlan {
  return {
    key: `${namespace}/${hpa}#0/External/queue-length`,
    hpa: { namespace, name: hpa },
    servedAt: { kind: "external", namespace, metricName: "queue-length", metricLabels: labels },
    queryKey,
  };
}

/** An External plan of metric `m` in namespace x (the HPA's matchLabels are its labels). */
function externalMetricPlan(hpa: string, labels: Record<string, string>): StoredPlan {
  return {
    key: `x/${hpa}#0/External/m`,
    hpa: { namespace: "x", name: hpa },
    servedAt: { kind: "external", namespace: "x", metricName: "m", metricLabels: labels },
    queryKey: "q-" + hpa,
  };
}

function mExt(selector: string) {
  return { namespace: "x", metricName: "m", selector: parseSelector(selector) };
}

function pods(name: string, namespace = "default", metricSelector = ""): CustomLookup {
  return { namespace, groupResource: "pods", name, metricName: "rps", metricSelector };
}

function deployment(name: string): CustomLookup {
  return {
    namespace: "default",
    groupResource: "deployments.apps",
    name,
    metricName: "requests",
    metricSelector: "",
  };
}

function ext(selector: string, namespace = "default") {
  return { namespace, metricName: "queue-length", selector: parseSelector(selector) };
}

function values(result: { items: { value: number }[] } | { miss: { reason: string } }): number[] {
  assert.ok("items" in result, `expected items, got ${JSON.stringify(result)}`);
  return result.items.map((i) => i.value);
}

function reason(result: { items: unknown[] } | { miss: { reason: string } }): string {
  assert.ok("miss" in result, `expected a miss, got ${JSON.stringify(result)}`);
  return result.miss.reason;
}

describe("MetricStore reads", () => {
  it("serves a pods plan's values by pod name and by wildcard, sorted by pod", () => {
    const store = new MetricStore();
    const plan = podsPlan("web");
    store.upsertPlan(plan, T0);
    store.recordSuccess(plan.key, [
      { objectName: "web-b", value: 2, timestamp: T0 },
      { objectName: "web-a", value: 1, timestamp: T0, windowSeconds: 30 },
    ], T0);
    assert.deepEqual(store.lookupCustom(pods("web-b"), T0), {
      items: [{
        namespace: "default",
        groupResource: "pods",
        objectName: "web-b",
        describedKind: { kind: "Pod", apiVersion: "v1" },
        metricName: "rps",
        metricSelectorObject: null,
        value: 2,
        timestamp: T0,
      }],
    });
    const all = store.lookupCustom(pods("*"), T0);
    assert.ok("items" in all);
    assert.deepEqual(all.items.map((i) => [i.objectName, i.value, i.windowSeconds]), [
      ["web-a", 1, 30],
      ["web-b", 2, undefined],
    ]);
  });

  it("answers a repeated wildcard read from its memo, and never a stale one", () => {
    const store = new MetricStore({ ttlSeconds: 60 });
    const plan = podsPlan("web");
    store.upsertPlan(plan, T0);
    store.recordSuccess(plan.key, [
      { objectName: "web-a", value: 1, timestamp: T0 },
      { objectName: "web-b", value: 2, timestamp: T0 + 10 * SEC },
    ], T0);
    const names = new Set(["web-a", "web-b"]);
    const read = (at: number, n: ReadonlySet<string> = names) =>
      store.lookupCustom(pods("*"), at, { names: n });
    const first = read(T0 + SEC);
    assert.ok("items" in first);
    const again = read(T0 + 2 * SEC);
    assert.ok("items" in again);
    assert.equal(again.items, first.items, "the same answer object: served from the memo");
    // another set of names (the pod set changed)
    assert.deepEqual(values(read(T0 + 2 * SEC, new Set(["web-b"]))), [2]);
    // a replaced value
    store.recordSuccess(plan.key, [
      { objectName: "web-a", value: 3, timestamp: T0 + 20 * SEC },
      { objectName: "web-b", value: 2, timestamp: T0 + 10 * SEC },
    ], T0 + 20 * SEC);
    assert.deepEqual(values(read(T0 + 21 * SEC)), [3, 2]);
    // the first value to expire (web-b's, at T0 + 70s) drops out of the memo's answer
    assert.deepEqual(values(read(T0 + 70 * SEC)), [3, 2]);
    assert.deepEqual(values(read(T0 + 71 * SEC)), [3]);
    // a conflict with another query on the same pods withholds the values
    store.recordSuccess(
      plan.key,
      [{ objectName: "web-a", value: 4, timestamp: T0 + 80 * SEC }],
      T0,
    );
    assert.deepEqual(values(read(T0 + 81 * SEC)), [4]);
    const other = podsPlan("api", "q-other");
    store.upsertPlan(other, T0);
    store.recordSuccess(
      other.key,
      [{ objectName: "web-a", value: 9, timestamp: T0 + 80 * SEC }],
      T0,
    );
    assert.equal(
      reason(read(T0 + 81 * SEC)),
      'conflict between HPA default/api and HPA default/web: they collect metric "rps" on ' +
        "pods/* with different queries, so neither value is served",
    );
    store.removePlan(other.key);
    assert.deepEqual(values(read(T0 + 82 * SEC)), [4]);
  });

  it("replaces a plan's values on every success: a pod missing from the collection is gone", () => {
    const store = new MetricStore();
    const plan = podsPlan("web");
    store.upsertPlan(plan, T0);
    store.recordSuccess(plan.key, [
      { objectName: "web-a", value: 1, timestamp: T0 },
      { objectName: "web-b", value: 2, timestamp: T0 },
    ], T0);
    store.recordSuccess(plan.key, [{ objectName: "web-b", value: 5, timestamp: T0 + SEC }], T0);
    assert.deepEqual(values(store.lookupCustom(pods("*"), T0 + SEC)), [5]);
    assert.equal(
      reason(store.lookupCustom(pods("web-a"), T0 + SEC)),
      "the last collection at 2024-01-02T03:04:05Z returned no value for pods/web-a",
    );
    assert.equal(store.stats().customValues, 1);
  });

  it("says why a pod got no value: the collection's warning that names it, else all of them", () => {
    const store = new MetricStore();
    const plan = podsPlan("web");
    store.upsertPlan(plan, T0);
    store.recordSuccess(plan.key, [{ objectName: "web-b", value: 5, timestamp: T0 }], T0, [
      'failed to get metric rps from pod default/web-a: unsuccessful response "500 Internal Server Error" from http://10.0.0.1:9090/metrics',
      "pod default/web-ab has no pod IP",
    ]);
    assert.equal(
      reason(store.lookupCustom(pods("web-a"), T0 + SEC)),
      "the last collection at 2024-01-02T03:04:05Z returned no value for pods/web-a: " +
        'failed to get metric rps from pod default/web-a: unsuccessful response "500 Internal Server Error" from http://10.0.0.1:9090/metrics',
    );
    assert.equal(
      reason(store.lookupCustom(pods("web-c"), T0 + SEC)),
      "the last collection at 2024-01-02T03:04:05Z returned no value for pods/web-c: " +
        'failed to get metric rps from pod default/web-a: unsuccessful response "500 Internal Server Error" from http://10.0.0.1:9090/metrics; ' +
        "pod default/web-ab has no pod IP",
    );
    // a clean collection forgets the warnings
    store.recordSuccess(plan.key, [{ objectName: "web-b", value: 5, timestamp: T0 }], T0);
    assert.equal(
      reason(store.lookupCustom(pods("web-a"), T0 + SEC)),
      "the last collection at 2024-01-02T03:04:05Z returned no value for pods/web-a",
    );
  });

  it("keeps namespaces apart: a value is never served to another namespace", () => {
    const store = new MetricStore();
    const plan = podsPlan("web", "q", "team-a");
    store.upsertPlan(plan, T0);
    store.recordSuccess(plan.key, [{ objectName: "web-a", value: 1, timestamp: T0 }], T0);
    assert.deepEqual(values(store.lookupCustom(pods("web-a", "team-a"), T0)), [1]);
    assert.equal(
      reason(store.lookupCustom(pods("web-a", "team-b"), T0)),
      'no HPA in namespace team-b asks for metric "rps" on pods/web-a',
    );
  });

  it("keys values by metric selector", () => {
    const store = new MetricStore();
    const plan = podsPlan("web");
    (plan.servedAt as { metricSelector: string }).metricSelector = "path=/api";
    store.upsertPlan(plan, T0);
    store.recordSuccess(plan.key, [{ objectName: "web-a", value: 1, timestamp: T0 }], T0);
    assert.deepEqual(values(store.lookupCustom(pods("*", "default", "path=/api"), T0)), [1]);
    assert.equal(
      reason(store.lookupCustom(pods("*", "default", ""), T0)),
      'no HPA in namespace default asks for metric "rps" on pods/*',
    );
    assert.equal(
      reason(store.lookupCustom(pods("*", "default", "path=/x"), T0)),
      'no HPA in namespace default asks for metric "rps" with metric selector "path=/x" on pods/*',
    );
  });

  it("serves Object metrics of any kind under their group-resource", () => {
    const store = new MetricStore();
    const plan = objectPlan("web", "web", "q");
    store.upsertPlan(plan, T0);
    store.recordSuccess(plan.key, [{ value: 42, timestamp: T0 }], T0);
    const got = store.lookupCustom(deployment("web"), T0);
    assert.ok("items" in got);
    assert.equal(got.items[0].objectName, "web");
    assert.deepEqual(got.items[0].describedKind, { kind: "Deployment", apiVersion: "apps/v1" });
    assert.equal(
      reason(store.lookupCustom(deployment("api"), T0)),
      'no HPA in namespace default asks for metric "requests" on deployments.apps/api',
    );
  });

  it("uses the plan's describedKind and selector object when given", () => {
    const store = new MetricStore();
    const plan: StoredPlan = {
      ...objectPlan("web", "web", "q", { groupResource: "widgets.example.com" }),
      describedKind: { kind: "Widget", apiVersion: "example.com/v2" },
      metricSelectorObject: { matchLabels: { a: "b" } },
    };
    store.upsertPlan(plan, T0);
    store.recordSuccess(plan.key, [{ value: 1, timestamp: T0 }], T0);
    const got = store.lookupCustom(
      { ...deployment("web"), groupResource: "widgets.example.com" },
      T0,
    );
    assert.ok("items" in got);
    assert.deepEqual(got.items[0].describedKind, { kind: "Widget", apiVersion: "example.com/v2" });
    assert.deepEqual(got.items[0].metricSelectorObject, { matchLabels: { a: "b" } });
  });

  it("rejects a Pods sample without a pod name and ignores results of removed plans", () => {
    const store = new MetricStore();
    const plan = podsPlan("web");
    store.upsertPlan(plan, T0);
    assert.throws(
      () => store.recordSuccess(plan.key, [{ value: 1, timestamp: T0 }], T0),
      { message: 'sample without objectName for pods plan "default/web#0/Pods/rps"' },
    );
    assert.throws(
      () => store.recordSuccess(plan.key, [{ objectName: "a", value: NaN, timestamp: T0 }], T0),
      { message: 'invalid value NaN in a sample of plan "default/web#0/Pods/rps"' },
    );
    store.recordSuccess("default/gone#0/Pods/rps", [{ value: 1, timestamp: T0 }], T0);
    assert.equal(store.stats().customValues, 0);
  });
});

describe("MetricStore TTL", () => {
  const table: { name: string; ttl?: number; age: number; served: boolean; text?: string }[] = [
    { name: "serves a value exactly at the TTL", age: 900 * SEC, served: true },
    {
      name: "never serves a value one millisecond past the TTL",
      age: 900 * SEC + 1,
      served: false,
      text: "value expired: last collected at 2024-01-02T03:04:05Z, older than the TTL 15m0s",
    },
    {
      name: "honours a configured TTL",
      ttl: 60,
      age: 61 * SEC,
      served: false,
      text: "value expired: last collected at 2024-01-02T03:04:05Z, older than the TTL 1m0s",
    },
  ];
  for (const t of table) {
    it(t.name, () => {
      const store = new MetricStore(t.ttl ? { ttlSeconds: t.ttl } : {});
      const plan = podsPlan("web");
      store.upsertPlan(plan, T0);
      store.recordSuccess(plan.key, [{ objectName: "web-a", value: 7, timestamp: T0 }], T0);
      for (const name of ["web-a", "*"]) {
        const got = store.lookupCustom(pods(name), T0 + t.age);
        if (t.served) assert.deepEqual(values(got), [7]);
        else assert.equal(reason(got), t.text);
      }
    });
  }

  it("rejects a TTL that is not positive", () => {
    assert.throws(() => new MetricStore({ ttlSeconds: 0 }), {
      message: "invalid metrics TTL 0s (must be positive)",
    });
  });
});

describe("MetricStore failures and misses", () => {
  it("keeps serving the last good value after a failed collection, until the TTL", () => {
    const store = new MetricStore();
    const plan = externalPlan("worker", "q");
    store.upsertPlan(plan, T0);
    store.recordSuccess(plan.key, [{ value: 10, timestamp: T0 }], T0);
    store.recordFailure(plan.key, "connection refused", T0 + 30 * SEC);
    assert.deepEqual(values(store.lookupExternal(ext("queue=orders"), T0 + 60 * SEC)), [10]);
    assert.equal(
      reason(store.lookupExternal(ext("queue=orders"), T0 + 901 * SEC)),
      'last collection failed with "connection refused" at 2024-01-02T03:04:35Z; ' +
        "value expired: last collected at 2024-01-02T03:04:05Z, older than the TTL 15m0s",
    );
  });

  it("says why when the first collection failed", () => {
    const store = new MetricStore();
    const plan = podsPlan("web");
    store.upsertPlan(plan, T0);
    store.recordFailure(plan.key, 'query "x" failed: 503', T0 + 5 * SEC);
    assert.equal(
      reason(store.lookupCustom(pods("*"), T0 + 6 * SEC)),
      'last collection failed with "query "x" failed: 503" at 2024-01-02T03:04:10Z',
    );
  });

  it("clears the error on the next success", () => {
    const store = new MetricStore();
    const plan = podsPlan("web");
    store.upsertPlan(plan, T0);
    store.recordFailure(plan.key, "boom", T0);
    store.recordSuccess(plan.key, [{ objectName: "web-a", value: 1, timestamp: T0 }], T0);
    assert.equal(
      reason(store.lookupCustom(pods("web-x"), T0)),
      "the last collection at 2024-01-02T03:04:05Z returned no value for pods/web-x",
    );
  });

  it("says a plan is not collected yet, with the time it was planned if known", () => {
    const store = new MetricStore();
    store.upsertPlan(podsPlan("web"), T0);
    assert.equal(
      reason(store.lookupCustom(pods("*"), T0)),
      "not collected yet (planned at 2024-01-02T03:04:05Z)",
    );
    const other = new MetricStore();
    other.upsertPlan(podsPlan("web"));
    assert.equal(reason(other.lookupCustom(pods("*"), T0)), "not collected yet");
  });

  it("says which HPA has which problem when several plans serve one metric", () => {
    const store = new MetricStore();
    const a = podsPlan("a", "q");
    const b = { ...podsPlan("b", "q"), key: "default/b#0/Pods/rps" };
    store.upsertPlan(a, T0);
    store.upsertPlan(b, T0);
    store.recordFailure(a.key, "boom", T0);
    assert.equal(
      reason(store.lookupCustom(pods("*"), T0)),
      'HPA default/a: last collection failed with "boom" at 2024-01-02T03:04:05Z; ' +
        "HPA default/b: not collected yet (planned at 2024-01-02T03:04:05Z)",
    );
  });

  it("says no HPA asks for an external metric, naming the selector", () => {
    const store = new MetricStore();
    store.upsertPlan(externalPlan("worker", "q"), T0);
    assert.equal(
      reason(store.lookupExternal(ext("queue=payments"), T0)),
      'no HPA in namespace default asks for external metric "queue-length" with selector "queue=payments"',
    );
    assert.equal(
      reason(store.lookupExternal(ext("", "other"), T0)),
      'no HPA in namespace other asks for external metric "queue-length"',
    );
  });

  it("says no HPA asks for a metric on a cluster-scoped object", () => {
    const store = new MetricStore();
    assert.equal(
      reason(store.lookupCustom({
        namespace: "",
        groupResource: "nodes",
        name: "n1",
        metricName: "load",
        metricSelector: "",
      }, T0)),
      'no HPA (cluster-scoped) asks for metric "load" on nodes/n1',
    );
  });
});

describe("MetricStore external selectors", () => {
  it("matches a request selector against the plan's series labels", () => {
    const store = new MetricStore();
    const a = externalPlan("a", "qa", { queue: "orders", region: "eu" });
    store.upsertPlan(a, T0);
    store.recordSuccess(a.key, [{ value: 3, timestamp: T0 }], T0);
    assert.deepEqual(values(store.lookupExternal(ext("queue=orders,region=eu"), T0)), [3]);
    assert.deepEqual(values(store.lookupExternal(ext("queue in (orders,x)"), T0)), [3]);
    assert.equal("miss" in store.lookupExternal(ext("queue=orders,region=us"), T0), true);
    const got = store.lookupExternal(ext("queue=orders"), T0);
    assert.ok("items" in got);
    assert.deepEqual(got.items, [{
      metricName: "queue-length",
      metricLabels: { queue: "orders", region: "eu" },
      value: 3,
      timestamp: T0,
    }]);
  });

  it("serves frozen series labels: the plan's own when frozen, a sample's copied once", () => {
    const store = new MetricStore();
    const labels = Object.freeze({ queue: "orders" });
    const a = externalPlan("a", "qa", labels);
    store.upsertPlan(a, T0);
    store.recordSuccess(a.key, [{ value: 3, timestamp: T0 }], T0);
    const got = store.lookupExternal(ext("queue=orders"), T0);
    assert.ok("items" in got);
    assert.equal(got.items[0].metricLabels, labels);
    const b = externalPlan("b", "qb", { queue: "payments" }, "other");
    store.upsertPlan(b, T0);
    const sample = { queue: "payments", shard: "1" };
    store.recordSuccess(b.key, [{ value: 4, timestamp: T0, labels: sample }], T0);
    sample.shard = "2";
    const [item] = (store.lookupExternal(ext("queue=payments", "other"), T0) as {
      items: { metricLabels: Record<string, string> }[];
    }).items;
    assert.deepEqual(item.metricLabels, { queue: "payments", shard: "1" });
    assert.ok(Object.isFrozen(item.metricLabels));
    assert.throws(() => {
      item.metricLabels.shard = "3";
    }, TypeError);
  });

  it("matches a selector with matchExpressions by its canonical string", () => {
    const store = new MetricStore();
    const plan = externalPlan("a", "q", { type: "sqs" });
    (plan.servedAt as { metricSelector?: string }).metricSelector = "queue in (a,b),type=sqs";
    store.upsertPlan(plan, T0);
    store.recordSuccess(plan.key, [{ value: 4, timestamp: T0 }], T0);
    assert.deepEqual(values(store.lookupExternal(ext("type=sqs, queue in (b,a)"), T0)), [4]);
  });

  it("answers an HPA's read only from plans with exactly its selector, not from plans with more labels", () => {
    // the HPA controller sums every item it gets: a's target must not see b's value
    const store = new MetricStore();
    const a = externalMetricPlan("a", { type: "prometheus" });
    const b = externalMetricPlan("b", { type: "prometheus", app: "b" });
    store.upsertPlan(a, T0);
    store.upsertPlan(b, T0);
    store.recordSuccess(a.key, [{ value: 10, timestamp: T0 }], T0);
    store.recordSuccess(b.key, [{ value: 1000, timestamp: T0 }], T0);
    const table: [string, number[]][] = [
      ["type=prometheus", [10]],
      ["app=b,type=prometheus", [1000]],
      // no plan has exactly these selectors: series labels decide (a manual kubectl get --raw)
      ["app=b", [1000]],
      ["type", [1000, 10]],
      ["type=prometheus,app!=b", [10]],
    ];
    for (const [selector, want] of table) {
      assert.deepEqual(values(store.lookupExternal(mExt(selector), T0)), want, selector);
    }
  });

  it("compares exact selectors with their matchExpressions", () => {
    const store = new MetricStore();
    const a = externalMetricPlan("a", { type: "prometheus" });
    const c = externalMetricPlan("c", { type: "prometheus", team: "c" });
    (c.servedAt as { metricSelector?: string }).metricSelector =
      "app in (b),team=c,type=prometheus";
    store.upsertPlan(a, T0);
    store.upsertPlan(c, T0);
    store.recordSuccess(a.key, [{ value: 10, timestamp: T0 }], T0);
    store.recordSuccess(c.key, [{ value: 7, timestamp: T0 }], T0);
    const table: [string, number[]][] = [
      ["type=prometheus", [10]],
      ["type=prometheus, team=c, app in (b)", [7]],
      // c's matchLabels alone are not c's selector: no exact plan, labels decide
      ["team=c,type=prometheus", [7]],
    ];
    for (const [selector, want] of table) {
      assert.deepEqual(values(store.lookupExternal(mExt(selector), T0)), want, selector);
    }
  });

  it("forgets remembered external reads when plans come, go or change their selector", () => {
    const store = new MetricStore();
    const a = externalMetricPlan("a", { type: "prometheus" });
    const b = externalMetricPlan("b", { type: "prometheus", app: "b" });
    store.upsertPlan(b, T0);
    store.recordSuccess(b.key, [{ value: 1000, timestamp: T0 }], T0);
    const read = (): number[] | string => {
      const got = store.lookupExternal(mExt("type=prometheus"), T0);
      return "items" in got ? got.items.map((i) => i.value) : got.miss.reason;
    };
    assert.deepEqual(read(), [1000]);
    store.upsertPlan(a, T0);
    assert.deepEqual(read(), "not collected yet (planned at 2024-01-02T03:04:05Z)");
    store.recordSuccess(a.key, [{ value: 10, timestamp: T0 }], T0);
    assert.deepEqual(read(), [10]);
    store.upsertPlan(externalMetricPlan("a", { type: "prometheus", app: "a" }), T0);
    assert.deepEqual(read(), [1000]);
    store.upsertPlan(a, T0);
    store.recordSuccess(a.key, [{ value: 11, timestamp: T0 }], T0);
    assert.deepEqual(read(), [11]);
    store.removePlan(a.key);
    assert.deepEqual(read(), [1000]);
  });

  it("serves each sample's own series labels", () => {
    const store = new MetricStore();
    const plan = externalPlan("a", "q", {});
    store.upsertPlan(plan, T0);
    store.recordSuccess(plan.key, [
      { value: 1, timestamp: T0, labels: { zone: "b" } },
      { value: 2, timestamp: T0, labels: { zone: "a" } },
    ], T0);
    const got = store.lookupExternal(ext(""), T0);
    assert.ok("items" in got);
    assert.deepEqual(got.items.map((i) => [i.metricLabels, i.value]), [
      [{ zone: "a" }, 2],
      [{ zone: "b" }, 1],
    ]);
  });
});

describe("MetricStore conflicts", () => {
  it("marks two external plans with the same labels and different queries, and serves neither", () => {
    const store = new MetricStore();
    const a = externalPlan("a", "sqs:orders");
    const b = externalPlan("b", "sqs:orders-eu");
    store.upsertPlan(a, T0);
    store.recordSuccess(a.key, [{ value: 1, timestamp: T0 }], T0);
    store.upsertPlan(b, T0);
    store.recordSuccess(b.key, [{ value: 2, timestamp: T0 }], T0);
    assert.equal(
      reason(store.lookupExternal(ext("queue=orders"), T0)),
      "conflict between HPA default/a and HPA default/b: they collect external metric " +
        '"queue-length" with selector "queue=orders" with different queries, so neither value is served',
    );
    const conflicts = store.conflicts();
    assert.deepEqual(conflicts.map((c) => [c.plan.key, c.others.map((o) => o.key)]), [
      [a.key, [b.key]],
      [b.key, [a.key]],
    ]);
    assert.equal(
      conflicts[0].message,
      'conflict with HPA default/b: external metric "queue-length" with selector "queue=orders" ' +
        "in namespace default is collected by different queries; neither is served until one " +
        "of them changes",
    );
    assert.equal(store.stats().conflictedPlans, 2);
  });

  it("names at most three other HPAs, so a growing group keeps its messages", () => {
    const store = new MetricStore();
    const message = () => store.conflicts()[0].message.split(":")[0];
    for (const n of ["a", "b", "c", "d"]) {
      const p = externalPlan(n, `q-${n}`);
      store.upsertPlan(p, T0);
      store.recordSuccess(p.key, [{ value: 1, timestamp: T0 }], T0);
    }
    assert.equal(message(), "conflict with HPA default/b, HPA default/c and HPA default/d");
    for (const n of ["e", "f", "g"]) {
      const p = externalPlan(n, `q-${n}`);
      store.upsertPlan(p, T0);
      store.recordSuccess(p.key, [{ value: 1, timestamp: T0 }], T0);
      assert.equal(
        message(),
        "conflict with HPA default/b, HPA default/c, HPA default/d and other HPAs",
      );
    }
    assert.equal(store.conflicts()[0].others.length, 6);
  });

  it("clears the conflict when one plan goes away and serves the other at once", () => {
    const store = new MetricStore();
    const a = externalPlan("a", "q1");
    const b = externalPlan("b", "q2");
    store.upsertPlan(a, T0);
    store.upsertPlan(b, T0);
    store.recordSuccess(a.key, [{ value: 1, timestamp: T0 }], T0);
    store.recordSuccess(b.key, [{ value: 2, timestamp: T0 }], T0);
    store.removePlan(b.key);
    assert.deepEqual(store.conflicts(), []);
    assert.deepEqual(values(store.lookupExternal(ext("queue=orders"), T0)), [1]);
  });

  it("changes conflictVersion only when plans start or stop conflicting", () => {
    const store = new MetricStore();
    const a = externalPlan("a", "q1");
    const b = externalPlan("b", "q2");
    const c = externalPlan("c", "q3", { queue: "billing" });
    store.upsertPlan(a, T0);
    store.upsertPlan(c, T0);
    const v0 = store.conflictVersion;
    store.recordSuccess(a.key, [{ value: 1, timestamp: T0 }], T0);
    store.recordSuccess(c.key, [{ value: 3, timestamp: T0 }], T0);
    assert.equal(store.conflictVersion, v0, "collections without a conflict keep the version");
    store.upsertPlan(b, T0);
    const v1 = store.conflictVersion;
    assert.notEqual(v1, v0);
    assert.deepEqual(store.conflicts().map((x) => x.plan.key), [a.key, b.key]);
    store.recordSuccess(a.key, [{ value: 2, timestamp: T0 }], T0);
    store.recordSuccess(b.key, [{ value: 2, timestamp: T0 }], T0);
    assert.equal(store.conflictVersion, v1, "a standing conflict keeps the version");
    store.removePlan(b.key);
    assert.notEqual(store.conflictVersion, v1);
    assert.deepEqual(store.conflicts(), []);
    assert.equal(store.stats().conflictedPlans, 0);
  });

  it("clears the conflict when one plan changes to the same query", () => {
    const store = new MetricStore();
    store.upsertPlan(externalPlan("a", "q1"), T0);
    store.upsertPlan(externalPlan("b", "q2"), T0);
    assert.equal(store.conflicts().length, 2);
    store.upsertPlan(externalPlan("b", "q1"), T0);
    assert.deepEqual(store.conflicts(), []);
  });

  it("does not mark plans that share the same query; serves the freshest value once", () => {
    const store = new MetricStore();
    const a = externalPlan("a", "same");
    const b = externalPlan("b", "same");
    store.upsertPlan(a, T0);
    store.upsertPlan(b, T0);
    store.recordSuccess(a.key, [{ value: 1, timestamp: T0 }], T0);
    store.recordSuccess(b.key, [{ value: 2, timestamp: T0 + SEC }], T0 + SEC);
    assert.deepEqual(store.conflicts(), []);
    assert.deepEqual(values(store.lookupExternal(ext("queue=orders"), T0 + SEC)), [2]);
  });

  it("does not mark external plans with different labels", () => {
    const store = new MetricStore();
    store.upsertPlan(externalPlan("a", "q1", { queue: "a" }), T0);
    store.upsertPlan(externalPlan("b", "q2", { queue: "b" }), T0);
    assert.deepEqual(store.conflicts(), []);
  });

  it("marks two Object plans on the same object with different queries", () => {
    const store = new MetricStore();
    const a = { ...objectPlan("a", "web", "q1"), key: "default/a#0/Object/requests" };
    const b = { ...objectPlan("b", "web", "q2"), key: "default/b#0/Object/requests" };
    const c = { ...objectPlan("c", "api", "q3"), key: "default/c#0/Object/requests" };
    for (const p of [a, b, c]) {
      store.upsertPlan(p, T0);
      store.recordSuccess(p.key, [{ value: 1, timestamp: T0 }], T0);
    }
    assert.deepEqual(store.conflicts().map((x) => x.plan.key), [a.key, b.key]);
    assert.match(
      reason(store.lookupCustom(deployment("web"), T0)),
      /^conflict between HPA default\/a and HPA default\/b: /,
    );
    assert.deepEqual(values(store.lookupCustom(deployment("api"), T0)), [1]);
  });

  it("marks Pods plans only when they hold values for the same pod, and clears it when they stop", () => {
    const store = new MetricStore();
    const a = podsPlan("a");
    const b = podsPlan("b");
    store.upsertPlan(a, T0);
    store.upsertPlan(b, T0);
    store.recordSuccess(a.key, [{ objectName: "a-1", value: 1, timestamp: T0 }], T0);
    store.recordSuccess(b.key, [{ objectName: "b-1", value: 2, timestamp: T0 }], T0);
    assert.deepEqual(store.conflicts(), []);
    assert.deepEqual(values(store.lookupCustom(pods("*"), T0)), [1, 2]);

    store.recordSuccess(b.key, [
      { objectName: "b-1", value: 2, timestamp: T0 },
      { objectName: "a-1", value: 9, timestamp: T0 },
    ], T0);
    assert.deepEqual(store.conflicts().map((x) => x.plan.key), [a.key, b.key]);
    assert.equal(
      reason(store.lookupCustom(pods("*"), T0)),
      'conflict between HPA default/a and HPA default/b: they collect metric "rps" on pods/* ' +
        "with different queries, so neither value is served",
    );

    store.recordSuccess(b.key, [{ objectName: "b-1", value: 3, timestamp: T0 }], T0);
    assert.deepEqual(store.conflicts(), []);
    assert.deepEqual(values(store.lookupCustom(pods("*"), T0)), [1, 3]);
  });

  it("clears a pod conflict when the shared pod is deleted", () => {
    const store = new MetricStore();
    const a = podsPlan("a");
    const b = podsPlan("b");
    store.upsertPlan(a, T0);
    store.upsertPlan(b, T0);
    store.recordSuccess(a.key, [{ objectName: "p", value: 1, timestamp: T0 }], T0);
    store.recordSuccess(b.key, [{ objectName: "p", value: 2, timestamp: T0 }], T0);
    assert.equal(store.conflicts().length, 2);
    store.removeObject("default", "pods", "p");
    assert.deepEqual(store.conflicts(), []);
  });
});

describe("MetricStore removal and garbage collection", () => {
  it("drops a removed plan's values at once", () => {
    const store = new MetricStore();
    const plan = podsPlan("web");
    store.upsertPlan(plan, T0);
    store.recordSuccess(plan.key, [{ objectName: "web-a", value: 1, timestamp: T0 }], T0);
    store.removePlan(plan.key);
    assert.equal(
      reason(store.lookupCustom(pods("web-a"), T0)),
      'no HPA in namespace default asks for metric "rps" on pods/web-a',
    );
    assert.deepEqual(store.stats(), {
      plans: 0,
      customValues: 0,
      externalValues: 0,
      conflictedPlans: 0,
    });
    assert.deepEqual(store.servedMetrics(), []);
  });

  it("drops a deleted pod's values at once, in every metric, and keeps the others", () => {
    const store = new MetricStore();
    const rps = podsPlan("web");
    const latency: StoredPlan = {
      ...podsPlan("web"),
      key: "default/web#1/Pods/latency",
      servedAt: {
        ...(rps.servedAt as Extract<ServedAt, { kind: "custom" }>),
        metricName: "latency",
      },
    };
    for (const p of [rps, latency]) {
      store.upsertPlan(p, T0);
      store.recordSuccess(p.key, [
        { objectName: "web-a", value: 1, timestamp: T0 },
        { objectName: "web-b", value: 2, timestamp: T0 },
      ], T0);
    }
    store.removeObject("default", "pods", "web-a");
    assert.deepEqual(values(store.lookupCustom(pods("*"), T0)), [2]);
    assert.deepEqual(
      values(store.lookupCustom({ ...pods("*"), metricName: "latency" }, T0)),
      [2],
    );
    assert.equal(store.stats().customValues, 2);
    store.removeObject("default", "pods", "web-a");
    store.removeObject("other", "pods", "web-b");
    assert.equal(store.stats().customValues, 2);
  });

  it("frees only expired values on gc and keeps the plans", () => {
    const store = new MetricStore({ ttlSeconds: 60 });
    const plan = podsPlan("web");
    const ext1 = externalPlan("worker", "q");
    store.upsertPlan(plan, T0);
    store.upsertPlan(ext1, T0);
    store.recordSuccess(plan.key, [
      { objectName: "old", value: 1, timestamp: T0 },
      { objectName: "new", value: 2, timestamp: T0 + 30 * SEC },
    ], T0);
    store.recordSuccess(ext1.key, [{ value: 3, timestamp: T0 }], T0);
    assert.equal(store.gc(T0 + 60 * SEC), 0);
    assert.equal(store.gc(T0 + 61 * SEC), 2);
    assert.deepEqual(store.stats(), {
      plans: 2,
      customValues: 1,
      externalValues: 0,
      conflictedPlans: 0,
    });
    assert.deepEqual(values(store.lookupCustom(pods("*"), T0 + 61 * SEC)), [2]);
    // after gc the reason no longer knows the old value: it is simply absent
    assert.equal(
      reason(store.lookupExternal(ext("queue=orders"), T0 + 61 * SEC)),
      "the last collection at 2024-01-02T03:04:05Z returned no value for series matching the selector",
    );
  });

  it("drops values when a plan's query or place changes, keeps them otherwise", () => {
    const store = new MetricStore();
    const plan = podsPlan("web", "q1");
    store.upsertPlan(plan, T0);
    store.recordSuccess(plan.key, [{ objectName: "web-a", value: 1, timestamp: T0 }], T0);
    store.upsertPlan({ ...plan, describedKind: { kind: "Pod", apiVersion: "v1" } }, T0);
    assert.deepEqual(values(store.lookupCustom(pods("*"), T0)), [1]);
    store.upsertPlan({ ...plan, queryKey: "q2" }, T0 + SEC);
    assert.equal(
      reason(store.lookupCustom(pods("*"), T0 + SEC)),
      "not collected yet (planned at 2024-01-02T03:04:06Z)",
    );
    assert.equal(store.stats().customValues, 0);
  });

  it("filters wildcard reads by accept or by names, and counts stored values when none is left", () => {
    const store = new MetricStore();
    const plan = podsPlan("web");
    store.upsertPlan(plan, T0);
    store.recordSuccess(
      plan.key,
      ["a", "b", "c", "d"].map((n, i) => ({ objectName: `web-${n}`, value: i, timestamp: T0 })),
      T0,
    );
    const table: {
      name: string;
      options: Parameters<MetricStore["lookupCustom"]>[2];
      want: unknown;
    }[] = [
      {
        name: "accept",
        options: { accept: (n) => n !== "web-b" },
        want: { values: [0, 2, 3] },
      },
      {
        name: "fewer names than values (looked up one by one)",
        options: { names: new Set(["web-d", "web-b", "web-x"]) },
        want: { values: [1, 3] },
      },
      {
        name: "more names than values (scanned)",
        options: { names: new Set(["web-a", "web-c", "x1", "x2", "x3"]) },
        want: { values: [0, 2] },
      },
      {
        name: "names and accept together",
        options: { names: new Set(["web-a", "web-c"]), accept: (n) => n === "web-c" },
        want: { values: [2] },
      },
      {
        name: "nothing left",
        options: { names: new Set(["web-x"]) },
        want: { items: [], stored: 4 },
      },
    ];
    for (const t of table) {
      const got = store.lookupCustom(pods("*"), T0, t.options);
      if ("values" in (t.want as object)) {
        assert.deepEqual(values(got), (t.want as { values: number[] }).values, t.name);
      } else assert.deepEqual(got, t.want, t.name);
    }
    assert.equal(
      reason(store.lookupCustom(pods("*"), T0 + 901 * SEC, { names: new Set(["web-a"]) })),
      "value expired: last collected at 2024-01-02T03:04:05Z, older than the TTL 15m0s",
    );
  });

  it("wildcard reads visit only the namespace and metric asked for", () => {
    const store = new MetricStore();
    const inA = podsPlan("web", "q", "a");
    const inB = podsPlan("web", "q", "b");
    for (const p of [inA, inB]) {
      store.upsertPlan(p, T0);
      store.recordSuccess(p.key, [
        { objectName: `${p.hpa.namespace}-1`, value: 1, timestamp: T0 },
      ], T0);
    }
    const got = store.lookupCustom(pods("*", "b"), T0);
    assert.ok("items" in got);
    assert.deepEqual(got.items.map((i) => [i.namespace, i.objectName]), [["b", "b-1"]]);
  });
});

describe("MetricStore places shared by one plan, then several, then one", () => {
  it("serves a new value of a remembered external read and of a custom read at once", () => {
    const store = new MetricStore();
    const a = externalPlan("a", "q");
    const p = podsPlan("p");
    store.upsertPlan(a, T0);
    store.upsertPlan(p, T0);
    const got: number[] = [];
    for (const [i, value] of [5, 6, 7].entries()) {
      const at = T0 + i * SEC;
      store.recordSuccess(a.key, [{ value, timestamp: at }], at);
      store.recordSuccess(p.key, [{ objectName: "web-1", value: value * 10, timestamp: at }], at);
      got.push(...values(store.lookupExternal(ext("queue=orders"), at)));
      got.push(...values(store.lookupCustom(pods("*"), at)));
      got.push(...values(store.lookupCustom(pods("web-1"), at)));
    }
    assert.deepEqual(got, [5, 50, 50, 6, 60, 60, 7, 70, 70]);
  });

  it("keeps values, counts and conflicts right as plans join and leave a place", () => {
    const store = new MetricStore({ ttlSeconds: 60 });
    const a = externalPlan("a", "same");
    const b = externalPlan("b", "same");
    const c = externalPlan("c", "other");
    const read = (at: number): number[] | string => {
      const r = store.lookupExternal(ext("queue=orders"), at);
      return "items" in r ? r.items.map((i) => i.value) : r.miss.reason.split(":")[0];
    };
    const steps: [string, () => void, number, number[] | string, number, number][] = [
      [
        "a alone",
        () => {
          store.upsertPlan(a, T0);
          store.recordSuccess(a.key, [{ value: 1, timestamp: T0 }], T0);
        },
        T0,
        [1],
        1,
        0,
      ],
      [
        "b shares a's query and entry; the fresher value wins",
        () => {
          store.upsertPlan(b, T0);
          store.recordSuccess(b.key, [{ value: 2, timestamp: T0 + SEC }], T0 + SEC);
        },
        T0 + SEC,
        [2],
        2,
        0,
      ],
      [
        "a's value expires: gc frees it, b's stays",
        () => {
          assert.equal(store.gc(T0 + 60 * SEC + 1), 1);
        },
        T0 + 60 * SEC + 1,
        [2],
        1,
        0,
      ],
      [
        "a collects again",
        () => {
          store.recordSuccess(a.key, [{ value: 3, timestamp: T0 + 62 * SEC }], T0 + 62 * SEC);
        },
        T0 + 62 * SEC,
        [3],
        2,
        0,
      ],
      [
        "c, another query, conflicts with both",
        () => {
          store.upsertPlan(c, T0);
          store.recordSuccess(c.key, [{ value: 9, timestamp: T0 + 62 * SEC }], T0 + 62 * SEC);
        },
        T0 + 62 * SEC,
        "conflict between HPA default/a, HPA default/b and HPA default/c",
        3,
        3,
      ],
      [
        "b leaves: a and c still conflict",
        () => store.removePlan(b.key),
        T0 + 62 * SEC,
        "conflict between HPA default/a and HPA default/c",
        2,
        2,
      ],
      ["c leaves: a is served again", () => store.removePlan(c.key), T0 + 62 * SEC, [3], 1, 0],
      [
        "a leaves: nobody asks",
        () => store.removePlan(a.key),
        T0 + 62 * SEC,
        'no HPA in namespace default asks for external metric "queue-length" with selector "queue=orders"',
        0,
        0,
      ],
    ];
    for (const [name, step, at, want, externalValues, conflictedPlans] of steps) {
      step();
      assert.deepEqual(read(at), want, name);
      const stats = store.stats();
      assert.deepEqual(
        [stats.externalValues, stats.conflictedPlans],
        [externalValues, conflictedPlans],
        name,
      );
    }
  });

  it("keeps a pod's values in every metric until the pod is deleted, then drops them all", () => {
    const store = new MetricStore();
    const a = podsPlan("a", "same");
    const b = podsPlan("b", "same");
    const other = {
      ...podsPlan("c"),
      key: "default/c#0/Pods/cpu",
      servedAt: { ...podsPlan("c").servedAt, metricName: "cpu" } as ServedAt,
    };
    for (const [p, value] of [[a, 1], [b, 2], [other, 3]] as const) {
      store.upsertPlan(p, T0);
      store.recordSuccess(p.key, [
        { objectName: "web-1", value, timestamp: T0 + value },
        { objectName: "web-2", value: value * 10, timestamp: T0 + value },
      ], T0);
    }
    assert.deepEqual(values(store.lookupCustom(pods("*"), T0)), [2, 20]);
    store.removeObject("default", "pods", "web-1");
    assert.deepEqual(values(store.lookupCustom(pods("*"), T0)), [20]);
    assert.equal(store.stats().customValues, 3);
    store.removePlan(b.key);
    assert.deepEqual(values(store.lookupCustom(pods("*"), T0)), [10]);
    store.removeObject("default", "pods", "web-2");
    assert.equal(store.stats().customValues, 0);
    assert.match(reason(store.lookupCustom(pods("*"), T0)), /returned no value for pods\/\*$/);
  });
});

describe("MetricStore discovery and helpers", () => {
  it("lists served metrics once each, sorted", () => {
    const store = new MetricStore();
    store.upsertPlan(podsPlan("a"), T0);
    store.upsertPlan(podsPlan("b"), T0);
    store.upsertPlan(objectPlan("c", "web", "q"), T0);
    store.upsertPlan(externalPlan("d", "q"), T0);
    store.upsertPlan({
      key: "x",
      hpa: { namespace: "default", name: "x" },
      servedAt: {
        kind: "custom",
        namespace: "",
        groupResource: "nodes",
        objectName: "n1",
        metricName: "load",
        metricSelector: "",
      },
      queryKey: "q",
    }, T0);
    assert.deepEqual(store.servedMetrics(), [
      {
        kind: "custom",
        groupResource: "deployments.apps",
        metricName: "requests",
        namespaced: true,
      },
      { kind: "custom", groupResource: "nodes", metricName: "load", namespaced: false },
      { kind: "custom", groupResource: "pods", metricName: "rps", namespaced: true },
      { kind: "external", metricName: "queue-length" },
    ]);
  });

  it("changes the served-metrics version only when a metric starts or stops being served", () => {
    const store = new MetricStore();
    const v0 = store.servedMetricsVersion();
    store.upsertPlan(podsPlan("a"), T0);
    const v1 = store.servedMetricsVersion();
    assert.notEqual(v1, v0);
    const first = store.servedMetrics();
    assert.deepEqual(first, [
      { kind: "custom", groupResource: "pods", metricName: "rps", namespaced: true },
    ]);
    // a second HPA with the same metric: nothing new to list, the same list object
    store.upsertPlan(podsPlan("b"), T0);
    assert.equal(store.servedMetricsVersion(), v1);
    assert.equal(store.servedMetrics(), first);
    store.upsertPlan(externalPlan("d", "q"), T0);
    const v2 = store.servedMetricsVersion();
    assert.notEqual(v2, v1);
    assert.deepEqual(store.servedMetrics().map((m) => m.metricName), ["rps", "queue-length"]);
    store.removePlan(podsPlan("a").key);
    assert.equal(store.servedMetricsVersion(), v2);
    store.removePlan(podsPlan("b").key);
    assert.notEqual(store.servedMetricsVersion(), v2);
    assert.deepEqual(store.servedMetrics(), [{ kind: "external", metricName: "queue-length" }]);
  });

  it("derives describedObject kinds and formats timestamps as metav1.Time", () => {
    assert.deepEqual(describedKindFor("scalingschedules.zalando.org"), {
      kind: "ScalingSchedule",
      apiVersion: "zalando.org/v1",
    });
    assert.equal(describedKindFor("unknown.example.com"), null);
    assert.equal(formatTimestamp(T0 + 999), "2024-01-02T03:04:05Z");
  });
});
