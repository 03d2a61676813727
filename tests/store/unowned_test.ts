/**
 * Which misses are not ours (issue 26): a read that no plan covers, or only plans whose
 * collector is unknown or disabled here (`incompatible`), is `unowned` and may go to a
 * delegate; a read that a plan of ours covers never is, whatever its state.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parseSelector } from "../../src/core/kubernetes/label_selector.ts";
import { MetricStore } from "../../src/store/store.ts";
import type { CustomLookup, LookupResult, StoredPlan } from "../../src/store/types.ts";

const T0 = Date.UTC(2024, 0, 2, 3, 4, 5);

function objectPlan(hpa: string, object: string, incompatible: boolean): StoredPlan {
  return {
    key: `default/${hpa}#0/Object/requests`,
    hpa: { namespace: "default", name: hpa },
    servedAt: {
      kind: "custom",
      namespace: "default",
      groupResource: "deployments.apps",
      objectName: object,
      metricName: "requests",
      metricSelector: "",
    },
    queryKey: `q-${hpa}`,
    ...(incompatible ? { uncollectable: true, incompatible: true } : {}),
  };
}

function externalPlan(hpa: string, labels: Record<string, string>, incompatible: boolean) {
  const plan: StoredPlan = {
    key: `default/${hpa}#0/External/queue-length`,
    hpa: { namespace: "default", name: hpa },
    servedAt: {
      kind: "external",
      namespace: "default",
      metricName: "queue-length",
      metricLabels: labels,
    },
    queryKey: `q-${hpa}`,
  };
  if (incompatible) Object.assign(plan, { uncollectable: true, incompatible: true });
  return plan;
}

const deployment = (name: string): CustomLookup => ({
  namespace: "default",
  groupResource: "deployments.apps",
  name,
  metricName: "requests",
  metricSelector: "",
});

const ext = (selector: string) => ({
  namespace: "default",
  metricName: "queue-length",
  selector: parseSelector(selector),
});

function unowned(result: LookupResult<unknown>): boolean | undefined {
  assert.ok("miss" in result, `expected a miss, got ${JSON.stringify(result)}`);
  return result.miss.unowned;
}

describe("unowned misses", () => {
  it("a custom read nobody asks for is unowned; one an HPA of ours asks for is not, even uncollected", () => {
    const store = new MetricStore();
    assert.equal(unowned(store.lookupCustom(deployment("web"), T0)), true);
    store.upsertPlan(objectPlan("web", "web", false), T0);
    assert.equal(unowned(store.lookupCustom(deployment("web"), T0)), undefined);
    // the same metric on another object: no plan covers it
    assert.equal(unowned(store.lookupCustom(deployment("api"), T0)), true);
    // and with a value, it is served
    store.recordSuccess("default/web#0/Object/requests", [{ value: 3, timestamp: T0 }], T0);
    assert.ok("items" in store.lookupCustom(deployment("web"), T0));
  });

  it("a custom read that only incompatible plans cover is unowned, until a plan of ours joins them", () => {
    const store = new MetricStore();
    store.upsertPlan(objectPlan("keda", "web", true), T0);
    assert.equal(unowned(store.lookupCustom(deployment("web"), T0)), true);
    assert.equal(unowned(store.lookupCustom({ ...deployment("*") }, T0)), true);
    store.upsertPlan(objectPlan("ours", "web", false), T0);
    assert.equal(unowned(store.lookupCustom(deployment("web"), T0)), undefined);
    assert.equal(unowned(store.lookupCustom({ ...deployment("*") }, T0)), undefined);
  });

  it("an external read is unowned when no plan of ours matches its selector", () => {
    const store = new MetricStore();
    assert.equal(unowned(store.lookupExternal(ext("queue=orders"), T0)), true);
    store.upsertPlan(externalPlan("keda", { queue: "orders" }, true), T0);
    assert.equal(unowned(store.lookupExternal(ext("queue=orders"), T0)), true);
    store.upsertPlan(externalPlan("ours", { queue: "payments" }, false), T0);
    // ours asks for another queue: this read is still not ours
    assert.equal(unowned(store.lookupExternal(ext("queue=orders"), T0)), true);
    assert.equal(unowned(store.lookupExternal(ext("queue=payments"), T0)), undefined);
    // a selector both match: ours is among them
    assert.equal(unowned(store.lookupExternal(ext(""), T0)), undefined);
  });
});
