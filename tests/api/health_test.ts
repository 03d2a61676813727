import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { fixture, get } from "./app_support.ts";

describe("health", () => {
  it("answers ok on /healthz, /livez and /readyz", async () => {
    const { options } = fixture();
    for (const p of ["/healthz", "/livez", "/readyz"]) {
      const r = await get(options, p);
      assert.deepEqual([r.status, r.type, r.body], [200, "text/plain; charset=utf-8", "ok"], p);
    }
  });

  it("lists the checks with ?verbose as the Go server does", async () => {
    const { options } = fixture();
    assert.equal(
      (await get(options, "/readyz?verbose")).body,
      "[+]ping ok\n[+]initial-sync ok\nreadyz check passed\n",
    );
    assert.equal(
      (await get(options, "/healthz?verbose=1")).body,
      "[+]ping ok\nhealthz check passed\n",
    );
    assert.equal((await get(options, "/livez?verbose")).body, "[+]ping ok\nlivez check passed\n");
  });

  it("fails /readyz with 500 until the initial sync is done; /livez stays ok", async () => {
    const { options, state } = fixture();
    state.ready = false;
    const r = await get(options, "/readyz");
    assert.deepEqual([r.status, r.body], [
      500,
      "[+]ping ok\n[-]initial-sync failed: reason withheld\nreadyz check failed\n",
    ]);
    assert.equal((await get(options, "/livez")).status, 200);
    assert.deepEqual(
      [
        (await get(options, "/readyz/initial-sync")).status,
        (await get(options, "/readyz/ping")).body,
      ],
      [500, "ok"],
    );
    const excluded = await get(options, "/readyz?verbose&exclude=initial-sync");
    assert.deepEqual([excluded.status, excluded.body], [
      200,
      "[+]ping ok\n[+]initial-sync excluded: ok\nreadyz check passed\n",
    ]);
  });
});
