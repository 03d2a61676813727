/**
 * The skipper collector: the exact PromQL text kube-metrics-adapter builds (pure), backend
 * weights, and collections against a fake Prometheus query API that records the query.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  createSkipperFactory,
  formatWeight,
  ingressBackendWeight,
  quoteMeta,
  routeGroupBackendWeight,
  skipperBackend,
  type SkipperOptions,
  skipperRpsQuery,
} from "../../src/collectors/skipper.ts";
import type { Collector } from "../../src/collectors/types.ts";
import { skipperOptionsFromFlags } from "../../src/cli/prometheus_options.ts";
import type { Kind, KubeObject } from "../../src/cluster/types.ts";
import type { MetricPlan } from "../../src/core/types.ts";
import {
  context,
  type FakePrometheusApi,
  NOW,
  objectPlan,
  rejectsMatching,
  scalarBody,
  startFakePrometheusApi,
  StaticCluster,
  throwsMatching,
  workload,
} from "./prometheus_support.ts";

describe("formatWeight (Go %.4f)", () => {
  const cases: [number, string][] = [
    [1, "1.0000"],
    [0.4, "0.4000"],
    [0.42, "0.4200"],
    [0, "0.0000"],
    [1 / 3, "0.3333"],
    [0.123456, "0.1235"],
    [2.5, "2.5000"],
    // exact halves round to even, as Go does (toFixed would give 0.0313 and 0.0938 both up)
    [0.03125, "0.0312"],
    [0.09375, "0.0938"],
    [1.03125, "1.0312"],
    // not an exact half in binary: rounds by its real value
    [0.00005, "0.0001"],
    [-0.5, "-0.5000"],
  ];
  for (const [w, want] of cases) {
    it(`${w} -> ${want}`, () => assert.equal(formatWeight(w), want));
  }
});

describe("skipperRpsQuery", () => {
  const cases: [string, string[], number, string][] = [
    [
      "one host, all traffic",
      ["example.org"],
      1,
      'scalar(sum(rate(skipper_serve_host_duration_seconds_count{host=~"example_org"}[1m])) * 1.0000)',
    ],
    [
      "a weighted backend",
      ["example.org"],
      0.4,
      'scalar(sum(rate(skipper_serve_host_duration_seconds_count{host=~"example_org"}[1m])) * 0.4000)',
    ],
    [
      "several hosts joined by |",
      ["example.org", "foo.example.org", "my-app.example.com"],
      1,
      'scalar(sum(rate(skipper_serve_host_duration_seconds_count{host=~"example_org|foo_example_org|my-app_example_com"}[1m])) * 1.0000)',
    ],
    [
      "a wildcard host, quoted for the regexp and the PromQL string",
      ["*.example.org"],
      0.5,
      'scalar(sum(rate(skipper_serve_host_duration_seconds_count{host=~"\\\\*_example_org"}[1m])) * 0.5000)',
    ],
    [
      "weight 0 (backend not listed)",
      ["example.org"],
      0,
      'scalar(sum(rate(skipper_serve_host_duration_seconds_count{host=~"example_org"}[1m])) * 0.0000)',
    ],
  ];
  for (const [name, hosts, weight, want] of cases) {
    it(name, () => assert.equal(skipperRpsQuery({ hosts, weight }), want));
  }

  it("quoteMeta escapes what Go's regexp.QuoteMeta escapes", () => {
    assert.equal(
      quoteMeta("a.b+c*d?e(f)g|h[i]j{k}l^m$n\\o-p_q"),
      "a\\.b\\+c\\*d\\?e\\(f\\)g\\|h\\[i\\]j\\{k\\}l\\^m\\$n\\\\o-p_q",
    );
  });
});

describe("ingressBackendWeight", () => {
  const annos = ["zalando.org/backend-weights", "other/weights"];
  const cases: [string, Record<string, string>, string, number][] = [
    ["no weight annotation: all traffic", {}, "", 1],
    ["no weight annotation, a backend named: all traffic", {}, "b1", 1],
    ["the backend's share", { "zalando.org/backend-weights": '{"b1": 40, "b2": 60}' }, "b1", 0.4],
    ["fractional weights", { "zalando.org/backend-weights": '{"b1": 12.5}' }, "b1", 0.125],
    [
      "a backend not listed gets nothing",
      { "zalando.org/backend-weights": '{"b2": 100}' },
      "b1",
      0,
    ],
    [
      "the largest share over the annotations",
      { "zalando.org/backend-weights": '{"b1": 20}', "other/weights": '{"b1": 50}' },
      "b1",
      0.5,
    ],
    ["an annotation that is not configured is ignored", { "x/weights": '{"b1": 5}' }, "", 1],
    ["null weights", { "zalando.org/backend-weights": "null" }, "b1", 0],
  ];
  for (const [name, annotations, backend, want] of cases) {
    it(name, () => {
      assert.equal(ingressBackendWeight({ annotations, backendAnnotations: annos, backend }), want);
    });
  }

  const errors: [string, Record<string, string>, string, RegExp][] = [
    [
      "weights without a backend",
      { "zalando.org/backend-weights": '{"b1": 40}' },
      "",
      /^backend name must be specified for requests-per-second when traffic switching is used$/,
    ],
    [
      "invalid JSON",
      { "zalando.org/backend-weights": "{b1: 40}" },
      "b1",
      /^invalid JSON in annotation zalando.org\/backend-weights: /,
    ],
    [
      "a weight that is not a number",
      { "zalando.org/backend-weights": '{"b1": "40"}' },
      "b1",
      /^invalid weight "40" of backend "b1" in annotation zalando.org\/backend-weights$/,
    ],
  ];
  for (const [name, annotations, backend, want] of errors) {
    it(`refuses ${name}`, () => {
      throwsMatching(
        () => ingressBackendWeight({ annotations, backendAnnotations: annos, backend }),
        want,
      );
    });
  }
});

describe("routeGroupBackendWeight", () => {
  const two = [{ backendName: "b1", weight: 30 }, { backendName: "b2", weight: 70 }];
  const cases: [string, unknown, string, number][] = [
    ["no default backends", undefined, "", 1],
    ["one default backend", [{ backendName: "b1", weight: 100 }], "", 1],
    ["the backend's share", two, "b1", 0.3],
    ["a backend not listed", two, "b3", 0],
  ];
  for (const [name, backends, backend, want] of cases) {
    it(name, () => assert.equal(routeGroupBackendWeight(backends, backend), want));
  }
  it("refuses several backends without a backend name", () => {
    throwsMatching(() => routeGroupBackendWeight(two, ""), /^backend name must be specified/);
  });
});

function ingress(hosts: string[], annotations: Record<string, string> = {}): KubeObject {
  return {
    metadata: { name: "app", namespace: "default", annotations },
    spec: { rules: hosts.map((host) => (host ? { host } : {})) },
  };
}

function routeGroup(hosts: string[], defaultBackends: unknown[] = []): KubeObject {
  return { metadata: { name: "app", namespace: "default" }, spec: { hosts, defaultBackends } };
}

const OPTIONS_BASE: SkipperOptions = {
  ingressMetrics: true,
  routeGroupMetrics: true,
  backendsAnnotations: ["zalando.org/backend-weights"],
};

/** The collector of `plan` from a factory made with typed options. */
function create(plan: MetricPlan, options: SkipperOptions): Collector {
  return createSkipperFactory(options).create({ plan });
}

function skipperPlan(kind: "Ingress" | "RouteGroup", overrides: Partial<MetricPlan> = {}) {
  return objectPlan(
    "skipper",
    {
      apiVersion: kind === "Ingress" ? "networking.k8s.io/v1" : "zalando.org/v1",
      kind,
      name: "app",
    },
    {},
    overrides,
  );
}

describe("skipper collector", () => {
  let fake: FakePrometheusApi;
  before(async () => {
    fake = await startFakePrometheusApi();
  });
  after(async () => {
    await fake?.close();
  });
  const options = (): SkipperOptions => ({
    ...OPTIONS_BASE,
    prometheus: { server: { url: fake.url } },
  });

  const cases: [string, MetricPlan, [Kind, KubeObject][], string, number][] = [
    [
      "Ingress hosts, all traffic, averageValue target: the value as is",
      skipperPlan("Ingress"),
      [["Ingress", ingress(["example.org", "", "www.example.org"])]],
      'scalar(sum(rate(skipper_serve_host_duration_seconds_count{host=~"example_org|www_example_org"}[1m])) * 1.0000)',
      12,
    ],
    [
      "the backend label picks its weight from the annotation",
      skipperPlan("Ingress", { config: { backend: "b1" } }),
      [[
        "Ingress",
        ingress(["example.org"], {
          "zalando.org/backend-weights": '{"b1": 25, "b2": 75}',
        }),
      ]],
      'scalar(sum(rate(skipper_serve_host_duration_seconds_count{host=~"example_org"}[1m])) * 0.2500)',
      12,
    ],
    [
      "the deprecated requests-per-second,<backend> name",
      skipperPlan("Ingress", { metricName: "requests-per-second,b2" }),
      [[
        "Ingress",
        ingress(["example.org"], {
          "zalando.org/backend-weights": '{"b1": 25, "b2": 75}',
        }),
      ]],
      'scalar(sum(rate(skipper_serve_host_duration_seconds_count{host=~"example_org"}[1m])) * 0.7500)',
      12,
    ],
    [
      "a Value target is divided by the scale target's replicas",
      skipperPlan("Ingress", { target: { type: "Value", value: "100" } }),
      [["Ingress", ingress(["example.org"])], ["Deployment", workload("web", 4)]],
      'scalar(sum(rate(skipper_serve_host_duration_seconds_count{host=~"example_org"}[1m])) * 1.0000)',
      3,
    ],
    [
      "RouteGroup hosts and default backend weights",
      skipperPlan("RouteGroup", { config: { backend: "b2" } }),
      [[
        "RouteGroup",
        routeGroup(["rg.example.org"], [
          { backendName: "b1", weight: 60 },
          { backendName: "b2", weight: 40 },
        ]),
      ]],
      'scalar(sum(rate(skipper_serve_host_duration_seconds_count{host=~"rg_example_org"}[1m])) * 0.4000)',
      12,
    ],
  ];
  for (const [name, plan, objects, query, want] of cases) {
    it(name, async () => {
      fake.seen.length = 0;
      fake.reply = () => ({ status: 200, body: scalarBody("12") });
      const c = create(plan, options());
      const r = await c.collect(context(new StaticCluster(objects)));
      assert.deepEqual(r, { samples: [{ objectName: "app", value: want, timestamp: NOW }] });
      assert.deepEqual(fake.seen.map((s) => s.params.query), [query]);
    });
  }

  it("reads the object (and the scale target when averaging) from the cluster", () => {
    const avg = create(skipperPlan("RouteGroup"), options());
    assert.deepEqual(avg.kinds, ["RouteGroup"]);
    const val = create(
      skipperPlan("Ingress", { target: { type: "Value", value: "1" } }),
      options(),
    );
    assert.deepEqual(val.kinds, ["Ingress", "Deployment"]);
  });

  const failures: [string, MetricPlan, [Kind, KubeObject][], RegExp][] = [
    ["a missing Ingress", skipperPlan("Ingress"), [], /^Ingress default\/app not found$/],
    [
      "an Ingress without hosts",
      skipperPlan("Ingress"),
      [["Ingress", ingress([""])]],
      /^no hosts defined on Ingress default\/app, unable to collect requests-per-second$/,
    ],
    [
      "weights without a backend",
      skipperPlan("Ingress"),
      [["Ingress", ingress(["a.org"], { "zalando.org/backend-weights": '{"b1": 1}' })]],
      /^backend name must be specified for requests-per-second when traffic switching is used \(Ingress default\/app\)$/,
    ],
    [
      "zero replicas when averaging",
      skipperPlan("Ingress", { target: { type: "Value", value: "1" } }),
      [["Ingress", ingress(["a.org"])], ["Deployment", workload("web", 0)]],
      /^metric requests-per-second \(no averageValue target, so averaged over replicas\): scale target Deployment default\/web has 0 replicas/,
    ],
  ];
  for (const [name, plan, objects, want] of failures) {
    it(`fails on ${name}`, async () => {
      fake.reply = () => ({ status: 200, body: scalarBody("12") });
      const c = create(plan, options());
      await rejectsMatching(c.collect(context(new StaticCluster(objects))), want);
    });
  }

  const createErrors: [string, MetricPlan, SkipperOptions, RegExp][] = [
    [
      "Ingress metrics when only RouteGroups are enabled",
      skipperPlan("Ingress"),
      { routeGroupMetrics: true, prometheus: { server: { url: "http://127.0.0.1:1" } } },
      /^skipper metrics of Ingress objects are not enabled \(start with --skipper-ingress-metrics\)$/,
    ],
    [
      "no Prometheus server",
      skipperPlan("Ingress"),
      { ingressMetrics: true },
      /^skipper metric requests-per-second needs --prometheus-server$/,
    ],
    [
      "another metric name",
      skipperPlan("Ingress", { metricName: "latency" }),
      { ...OPTIONS_BASE, prometheus: { server: { url: "http://127.0.0.1:1" } } },
      /^skipper serves only requests-per-second, not metric latency$/,
    ],
    [
      "averaging over a scale target without replicas",
      skipperPlan("Ingress", {
        target: { type: "Value", value: "1" },
        scaleTargetRef: { kind: "ReplicaSet", name: "rs" },
      }),
      { ...OPTIONS_BASE, prometheus: { server: { url: "http://127.0.0.1:1" } } },
      /scale target ReplicaSet\/rs is not a Deployment, StatefulSet or Rollout$/,
    ],
  ];
  for (const [name, plan, o, want] of createErrors) {
    it(`refuses ${name}`, () => {
      throwsMatching(() => create(plan, o), want);
    });
  }
});

describe("skipperBackend", () => {
  const cases: [string, string, string | undefined, string][] = [
    ["the backend key", "requests-per-second", "b1", "b1"],
    ["the backend key over the deprecated name", "requests-per-second,b2", "b1", "b1"],
    [
      "the deprecated requests-per-second,<backend> name",
      "requests-per-second,b2",
      undefined,
      "b2",
    ],
    ["none", "requests-per-second", undefined, ""],
  ];
  for (const [name, metricName, backend, want] of cases) {
    it(name, () => assert.equal(skipperBackend(metricName, backend), want));
  }
});

describe("skipper options from serve's flags", () => {
  it("reads the switches, the backends annotations and the Prometheus server", () => {
    const options = skipperOptionsFromFlags({
      "skipper-ingress-metrics": true,
      "skipper-backends-annotation": ["a/weights", "b/weights"],
      "prometheus-server": "http://127.0.0.1:1",
    });
    assert.deepEqual(
      { ...options, prometheus: options.prometheus?.server },
      {
        ingressMetrics: true,
        routeGroupMetrics: false,
        backendsAnnotations: ["a/weights", "b/weights"],
        prometheus: { url: "http://127.0.0.1:1", tokenFile: null },
      },
    );
    const plan = skipperPlan("RouteGroup");
    throwsMatching(
      () => createSkipperFactory(options).create({ plan }),
      /^skipper metrics of RouteGroup objects are not enabled \(start with --skipper-routegroup-metrics\)$/,
    );
  });
});
