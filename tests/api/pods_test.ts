import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CM, fixture, get } from "./app_support.ts";
import { type PodLister, podSetCache } from "../../src/api/pods.ts";
import { type OkSelector, selectorCache } from "../../src/api/selectors.ts";
import type { KubeObject } from "../../src/cluster/types.ts";

describe("pods wildcard labelSelector matching", () => {
  const cases: [string, string[]][] = [
    ["app=web", ["web-1"]],
    ["app==web", ["web-1"]],
    ["app in (web)", ["web-1"]],
    ["app in (web,api)", ["web-1", "web-5"]],
    ["app!=web", ["web-2", "web-5"]],
    ["app", ["web-1", "web-2", "web-5"]],
    ["app=web,tier=x", []],
    ["tier=x", []],
    ["", ["web-1", "web-2", "web-5"]],
  ];
  for (const [selector, want] of cases) {
    it(`serves ready pods matching "${selector}": ${want.join(", ") || "none (404)"}`, async () => {
      const { options } = fixture();
      const r = await get(
        options,
        `${CM}/v1beta2/namespaces/default/pods/*/rps?labelSelector=${encodeURIComponent(selector)}`,
      );
      const names = r.status === 200
        ? JSON.parse(r.body).items.map((i: { describedObject: { name: string } }) =>
          i.describedObject.name
        )
        : [];
      assert.deepEqual([r.status, names], [want.length ? 200 : 404, want]);
    });
  }
});

describe("podSetCache", () => {
  /** A pod lister over a map of pods, logging changed names as the informer does. */
  function lister(tell: boolean) {
    const pods = new Map<string, KubeObject>();
    const changes: string[] = [];
    const counts = { lists: 0, gets: 0 };
    const pod = (name: string, app: string, ready = true): void => {
      pods.set(name, {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name, namespace: "default", labels: { app } },
        status: { conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
      });
      changes.push(name);
    };
    const remove = (name: string): void => {
      pods.delete(name);
      changes.push(name);
    };
    const view: PodLister & { version(namespace: string): number } = {
      listPods: () => {
        counts.lists++;
        return [...pods.values()];
      },
      getPod: (_ns, name) => {
        counts.gets++;
        return pods.get(name);
      },
      version: () => changes.length,
      ...(tell ? { changedSince: (_ns: string, v: number) => changes.slice(v) } : {}),
    };
    return { view, pod, remove, counts };
  }
  const web = selectorCache()("?labelSelector=app%3Dweb", "labelSelector") as OkSelector;

  it("looks only at the changed pods and keeps the same set while none joins or leaves", () => {
    const { view, pod, remove, counts } = lister(true);
    pod("web-1", "web");
    pod("api-1", "api");
    const sets = podSetCache();
    const first = sets("default", web, view);
    assert.deepEqual([...first], ["web-1"]);
    assert.equal(counts.lists, 1);
    // another app's pod changes: the same set object (an answer built from it stays valid)
    pod("api-1", "api", false);
    assert.equal(sets("default", web, view), first);
    assert.deepEqual(counts, { lists: 1, gets: 1 });
    // one joins, one turns unready: a new set; the old one is left as it was
    pod("web-2", "web");
    const second = sets("default", web, view);
    assert.deepEqual([[...second], [...first]], [["web-1", "web-2"], ["web-1"]]);
    pod("web-1", "web", false);
    assert.deepEqual([...sets("default", web, view)], ["web-2"]);
    remove("web-2");
    pod("web-3", "web");
    assert.deepEqual([...sets("default", web, view)], ["web-3"]);
    assert.deepEqual(counts, { lists: 1, gets: 5 });
  });

  it("lists the namespace again after a change when the lister cannot tell which pods", () => {
    const { view, pod, counts } = lister(false);
    pod("web-1", "web");
    const sets = podSetCache();
    assert.deepEqual([...sets("default", web, view)], ["web-1"]);
    pod("api-1", "api");
    assert.deepEqual([...sets("default", web, view)], ["web-1"]);
    assert.deepEqual(counts, { lists: 2, gets: 0 });
  });
});
