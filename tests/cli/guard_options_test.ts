import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { guardSettings } from "../../src/cli/guard_options.ts";
import { flagDefaults, SERVE_FLAGS } from "../../src/cli/flags.ts";

const defaults = () => flagDefaults(SERVE_FLAGS);

describe("guardSettings", () => {
  it("takes the lower bound from the flag, else MINIMUM_REPLICAS_LOWER_BOUND (Go base-0), else 3", () => {
    assert.equal(guardSettings(defaults(), {}).options.lowerBound, 3);
    assert.equal(
      guardSettings(defaults(), { MINIMUM_REPLICAS_LOWER_BOUND: "0x10" }).options.lowerBound,
      16,
    );
    const bad = guardSettings(defaults(), { MINIMUM_REPLICAS_LOWER_BOUND: "five" });
    assert.equal(bad.options.lowerBound, 3);
    assert.equal(bad.warnings.length, 1);
    assert.match(bad.warnings[0], /MINIMUM_REPLICAS_LOWER_BOUND "five"/);
    const flag = { ...defaults(), "estafette-minimum-replicas-lower-bound": 0 };
    assert.equal(
      guardSettings(flag, { MINIMUM_REPLICAS_LOWER_BOUND: "5" }).options.lowerBound,
      0,
    );
  });

  it("asks the guard's flag's Prometheus, else PROMETHEUS_SERVER_URL, else --prometheus-server with its token", () => {
    const prom = {
      ...defaults(),
      "prometheus-server": "http://p:9090",
      "prometheus-server-token-file": "/var/run/token",
    };
    assert.deepEqual(guardSettings(prom, {}).options.prometheus, {
      url: "http://p:9090",
      tokenFile: "/var/run/token",
    });
    assert.deepEqual(
      guardSettings(prom, { PROMETHEUS_SERVER_URL: "http://env:9090" }).options.prometheus,
      { url: "http://env:9090", tokenFile: null },
    );
    assert.deepEqual(
      guardSettings({ ...prom, "estafette-prometheus-server-url": "http://own:9090" }, {
        PROMETHEUS_SERVER_URL: "http://env:9090",
      }).options.prometheus,
      { url: "http://own:9090", tokenFile: null },
    );
    assert.equal(guardSettings(defaults(), {}).options.prometheus, null);
  });

  it("passes the interval (90s by default) and the query limits", () => {
    const o = guardSettings(defaults(), {}).options;
    assert.equal(o.intervalSeconds, 90);
    assert.equal(o.maxConcurrentQueries, 8);
    assert.equal(o.allowLinkLocalTargets, false);
    assert.equal(typeof o.queryTimeoutSeconds, "number");
  });
});
