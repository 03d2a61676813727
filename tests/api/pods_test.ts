import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CM, fixture, get } from "./app_support.ts";

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
