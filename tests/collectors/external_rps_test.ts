/**
 * The External requests-per-second collector: the exact PromQL text kube-metrics-adapter
 * builds (pure), config validation, and a collection against a fake Prometheus query API.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  createExternalRpsFactory,
  type ExternalRpsOptions,
  externalRpsQuery,
  isDnsName,
} from "../../src/collectors/external_rps.ts";
import { type Collector, planConfig } from "../../src/collectors/types.ts";
import { externalRpsOptionsFromFlags } from "../../src/cli/prometheus_options.ts";
import type { FlagValues } from "../../src/cli/flags.ts";
import { requestsPerSecondDescriptor } from "../../src/core/kube_metrics_adapter/configs/requests_per_second.ts";
import type { MetricPlan } from "../../src/core/types.ts";
import {
  context,
  externalPlan,
  type FakePrometheusApi,
  NOW,
  rejectsMatching,
  scalarBody,
  startFakePrometheusApi,
  throwsMatching,
} from "./prometheus_support.ts";

describe("externalRpsQuery", () => {
  const cases: [string, string, string[], number, string][] = [
    [
      "one hostname, default weight",
      "a_valid_one",
      ["foo.bar.baz"],
      1,
      'scalar(sum(rate(a_valid_one{host=~"foo_bar_baz"}[1m])) * 1.0000)',
    ],
    [
      "weight 42 percent",
      "a_valid_one",
      ["foo.bar.baz"],
      0.42,
      'scalar(sum(rate(a_valid_one{host=~"foo_bar_baz"}[1m])) * 0.4200)',
    ],
    [
      "several hostnames",
      "a_valid_one",
      ["foo.bar.baz", "foz.bax.bas"],
      1,
      'scalar(sum(rate(a_valid_one{host=~"foo_bar_baz|foz_bax_bas"}[1m])) * 1.0000)',
    ],
    [
      "Skipper's default counter",
      "skipper_serve_host_duration_seconds_count",
      ["just.testing.com"],
      0.42,
      'scalar(sum(rate(skipper_serve_host_duration_seconds_count{host=~"just_testing_com"}[1m])) * 0.4200)',
    ],
  ];
  for (const [name, metricName, hostnames, weight, want] of cases) {
    it(name, () => assert.equal(externalRpsQuery({ metricName, hostnames, weight }), want));
  }
});

describe("isDnsName", () => {
  const cases: [string, boolean][] = [
    ["example.org", true],
    ["my-app.Example.org", true],
    ["a", true],
    ["a".repeat(63) + ".org", true],
    ["a".repeat(64) + ".org", false],
    ["-app.example.org", false],
    ["app-.example.org", false],
    ["foo..bar", false],
    ["foo.bar.", false],
    ["foo_bar.org", false],
    ["*.example.org", false],
    ["example.org:8080", false],
    ["", false],
  ];
  for (const [host, want] of cases) {
    it(`${JSON.stringify(host)} -> ${want}`, () => assert.equal(isDnsName(host), want));
  }
});

describe("requests-per-second config", () => {
  const plan = (config: Record<string, string>) => externalPlan("requests-per-second", config);
  const read = (config: Record<string, string>) =>
    planConfig(requestsPerSecondDescriptor, plan(config), {});
  it("defaults the weight to 100 percent", () => {
    assert.deepEqual(read({ hostnames: "a.org,b.org" }), {
      hostnames: ["a.org", "b.org"],
      weight: 1,
    });
  });
  it("reads the weight as a percentage", () => {
    assert.deepEqual(read({ hostnames: "a.org", weight: "12.5" }), {
      hostnames: ["a.org"],
      weight: 0.125,
    });
  });
  const what = "External metric `queue-length` of HPA default/web";
  const anno = "annotation metric-config.external.queue-length.requests-per-second";
  const missing = `${what} needs matchLabels.hostnames or ${anno}/hostnames`;
  const errors: [Record<string, string>, string][] = [
    [{}, missing],
    [{ hostnames: "" }, missing],
    [
      { hostnames: "a.org, b.org" },
      `invalid hostnames "a.org, b.org" for ${what} (${anno}/hostnames): " b.org" is not a DNS name`,
    ],
    [
      { hostnames: "a.org,,b.org" },
      `invalid hostnames "a.org,,b.org" for ${what} (${anno}/hostnames): "" is not a DNS name`,
    ],
    [
      { hostnames: 'a.org"}[1m]))' },
      `invalid hostnames "a.org"}[1m]))" for ${what} (${anno}/hostnames): "a.org"}[1m]))" is not a DNS name`,
    ],
    [
      { hostnames: "a.org", weight: "half" },
      `invalid weight "half" for ${what} (${anno}/weight): want a percentage from 0`,
    ],
    [
      { hostnames: "a.org", weight: "-5" },
      `invalid weight "-5" for ${what} (${anno}/weight): want a percentage from 0`,
    ],
    [
      { hostnames: "a.org", weight: "" },
      `invalid weight "" for ${what} (${anno}/weight): want a percentage from 0`,
    ],
  ];
  for (const [config, want] of errors) {
    it(`refuses ${JSON.stringify(config)}`, () => {
      assert.throws(() => read(config), { message: want });
    });
  }
});

/** The collector of `plan` from a factory made with typed options. */
function create(plan: MetricPlan, options: ExternalRpsOptions): Collector {
  return createExternalRpsFactory(options).create({ plan });
}

/** The collector of `plan` from a factory built as serve builds it from `flags`. */
function createFromFlags(plan: MetricPlan, flags: FlagValues): Collector {
  return createExternalRpsFactory(externalRpsOptionsFromFlags(flags)).create({ plan });
}

describe("external requests-per-second collector", () => {
  let fake: FakePrometheusApi;
  before(async () => {
    fake = await startFakePrometheusApi();
  });
  after(async () => {
    await fake?.close();
  });

  it("queries the configured counter and serves the value with the selector's labels", async () => {
    fake.seen.length = 0;
    fake.reply = () => ({ status: 200, body: scalarBody("33.5") });
    const c = create(
      externalPlan("requests-per-second", { hostnames: "just.testing.com", weight: "42" }),
      { enabled: true, metricName: "a_metric", prometheus: { server: { url: fake.url } } },
    );
    assert.deepEqual(await c.collect(context()), {
      samples: [{ value: 33.5, timestamp: NOW }],
    });
    assert.deepEqual(fake.seen.map((s) => s.params.query), [
      'scalar(sum(rate(a_metric{host=~"just_testing_com"}[1m])) * 0.4200)',
    ]);
  });

  it("asks the engine for a deadline of the query timeout (default 10s)", () => {
    const make = (queryTimeoutSeconds?: number) =>
      create(externalPlan("requests-per-second", { hostnames: "a.org" }), {
        enabled: true,
        prometheus: { server: { url: fake.url }, queryTimeoutSeconds },
      });
    const ctx = { cluster: context().cluster, now: () => NOW };
    assert.equal(make().timeoutMs?.(ctx), 10_000);
    assert.equal(make(40).timeoutMs?.(ctx), 40_000);
    const fromFlags = (flags: FlagValues) =>
      createFromFlags(externalPlan("requests-per-second", { hostnames: "a.org" }), {
        "external-rps-metrics": true,
        "prometheus-server": fake.url,
        ...flags,
      });
    assert.equal(fromFlags({}).timeoutMs?.(ctx), 10_000);
    assert.equal(fromFlags({ "prometheus-query-timeout": 40 }).timeoutMs?.(ctx), 40_000);
  });

  it("uses Skipper's counter when no metric name is given", () => {
    const c = create(externalPlan("requests-per-second", { hostnames: "a.org" }), {
      enabled: true,
      prometheus: { server: { url: fake.url } },
    });
    assert.match(c.queryKey, /skipper_serve_host_duration_seconds_count\{host=~\\"a_org\\"\}/);
  });

  it("records no traffic (NaN) as an error naming the query", async () => {
    fake.reply = () => ({ status: 200, body: scalarBody("NaN") });
    const c = create(externalPlan("requests-per-second", { hostnames: "a.org" }), {
      enabled: true,
      prometheus: { server: { url: fake.url } },
    });
    await rejectsMatching(
      c.collect(context()),
      /^prometheus query "scalar\(sum\(rate\(skipper_serve_host_duration_seconds_count\{host=~"a_org"\}\[1m\]\)\) \* 1\.0000\)" at http:\/\/127\.0\.0\.1:\d+ returned NaN for metric queue-length$/,
    );
  });

  const createErrors: [string, FlagValues, RegExp][] = [
    [
      "when not enabled",
      { "prometheus-server": "http://127.0.0.1:1" },
      /^requests-per-second metrics are not enabled \(start with --external-rps-metrics\)$/,
    ],
    [
      "without a Prometheus server",
      { "external-rps-metrics": true },
      /^requests-per-second metric queue-length needs --prometheus-server$/,
    ],
    [
      "an empty metric name",
      {
        "external-rps-metrics": true,
        "prometheus-server": "http://127.0.0.1:1",
        "external-rps-metric-name": "",
      },
      /^invalid --external-rps-metric-name ""$/,
    ],
    [
      "a metric name that is not one",
      {
        "external-rps-metrics": true,
        "prometheus-server": "http://127.0.0.1:1",
        "external-rps-metric-name": "a-b",
      },
      /^invalid --external-rps-metric-name "a-b"$/,
    ],
  ];
  for (const [name, flags, want] of createErrors) {
    it(`refuses ${name}`, () => {
      throwsMatching(
        () => createFromFlags(externalPlan("requests-per-second", { hostnames: "a.org" }), flags),
        want,
      );
    });
  }

  it("refuses typed options whose metric name is not one, when enabled", () => {
    assert.throws(() => createExternalRpsFactory({ enabled: true, metricName: "a-b" }), {
      message: 'invalid requests-per-second metric name "a-b": want a Prometheus metric name',
    });
    assert.equal(createExternalRpsFactory({ metricName: "a-b" }).type, "requests-per-second");
  });
});
