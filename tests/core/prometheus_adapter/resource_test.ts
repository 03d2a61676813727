/**
 * `resourceRules` reads against prometheus-adapter v0.12.0's own test table
 * (pkg/resourceprovider/provider_test.go: 6 specs on cmd/config-gen's DefaultConfig(1m, ""),
 * with its RESTMapper of Pod, Node and Namespace), plus the edges its code has and its tests
 * do not reach: samples without labels, +Inf, repeated containers, failed namespaces.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { load } from "js-yaml";
import {
  nodeMetricsFromVectors,
  parsePrometheusAdapterConfig,
  podMetricsFromVectors,
  podReadsByNamespace,
  renderNodeMetricsQueries,
  renderPodMetricsQueries,
  type ResourceMetricsReader,
  resourceMetricsReader,
  type ResourceSample,
  type ResourceVectors,
  staticResourceMapper,
} from "../../../src/core/prometheus_adapter/mod.ts";
import { DEFAULT_CONFIG, DEFAULT_CONFIG_1M_KUBE } from "./fixtures.ts";

/** provider_test.go's restMapper. */
const MAPPER = staticResourceMapper([
  { group: "", kind: "Pod" },
  { group: "", kind: "Node" },
  { group: "", kind: "Namespace" },
]);

/** DefaultConfig(1m, ""): DEFAULT_CONFIG (5m) with the 1m rate interval and window. */
const DEFAULT_CONFIG_1M = DEFAULT_CONFIG.replaceAll("[5m]", "[1m]").replace(
  "window: 5m",
  "window: 1m",
);

function reader(yaml: string): ResourceMetricsReader {
  const config = parsePrometheusAdapterConfig(load(yaml));
  return resourceMetricsReader(config.resourceRules!, MAPPER);
}

function pod(namespace: string, name: string, container: string, value: number, ts: number) {
  return { labels: { namespace, pod: name, container }, value, timestamp: ts };
}

function node(name: string, value: number, ts: number): ResourceSample {
  return { labels: { instance: name, id: "/" }, value, timestamp: ts };
}

const byName = (a: { name: string }, b: { name: string }) => a.name < b.name ? -1 : 1;

describe("resourceRules queries", () => {
  const r = reader(DEFAULT_CONFIG_1M);

  it("renders containerQuery per namespace, grouped by pod and containerLabel", () => {
    assert.deepEqual(renderPodMetricsQueries(r, "some-ns", ["pod1", "pod3"]), {
      queries: {
        cpu:
          'sum(rate(container_cpu_usage_seconds_total{namespace="some-ns",pod=~"pod1|pod3"}[1m])) by (pod,container)',
        memory:
          'sum(container_memory_working_set_bytes{namespace="some-ns",pod=~"pod1|pod3"}) by (pod,container)',
      },
    });
    assert.deepEqual(renderPodMetricsQueries(r, "other-ns", ["pod27"]), {
      queries: {
        cpu:
          'sum(rate(container_cpu_usage_seconds_total{namespace="other-ns",pod="pod27"}[1m])) by (pod,container)',
        memory:
          'sum(container_memory_working_set_bytes{namespace="other-ns",pod="pod27"}) by (pod,container)',
      },
    });
  });

  it("renders nodeQuery for all nodes at once, grouped by the node label alone", () => {
    assert.deepEqual(renderNodeMetricsQueries(r, ["node1", "node2"]), {
      queries: {
        cpu:
          `sum(rate(container_cpu_usage_seconds_total{instance=~"node1|node2", id='/'}[1m])) by (instance)`,
        memory:
          `sum(container_memory_working_set_bytes{instance=~"node1|node2",id='/'}) by (instance)`,
      },
    });
  });

  it("uses the rule's containerLabel (config-gen --label-prefix=kube_)", () => {
    const kube = reader(DEFAULT_CONFIG_1M_KUBE);
    const got = renderPodMetricsQueries(kube, "ns", ["a"]);
    assert.ok("queries" in got);
    assert.equal(
      got.queries.memory,
      'sum(container_memory_working_set_bytes{namespace="ns",pod="a"}) by (pod,kube_container)',
    );
  });

  it("groups a read's pods by namespace, first-seen order, repeats kept", () => {
    assert.deepEqual(
      podReadsByNamespace([
        { namespace: "some-ns", name: "pod1" },
        { namespace: "other-ns", name: "pod27" },
        { namespace: "some-ns", name: "pod3" },
        { namespace: "some-ns", name: "pod1" },
      ]),
      [
        { namespace: "some-ns", names: ["pod1", "pod3", "pod1"] },
        { namespace: "other-ns", names: ["pod27"] },
      ],
    );
  });

  it("fails a read whose rule has no label for pods or namespaces", () => {
    const r2 = reader(`resourceRules:
  cpu:
    containerQuery: "cpu{<<.LabelMatchers>>}"
    nodeQuery: "cpu{<<.LabelMatchers>>}"
    resources: {overrides: {instance: {resource: node}}}
  memory:
    containerQuery: "mem{<<.LabelMatchers>>}"
    nodeQuery: "mem{<<.LabelMatchers>>}"
    resources: {template: "kube_<<.Resource>>"}
`);
    const pods = renderPodMetricsQueries(r2, "ns", ["a"]);
    assert.ok("error" in pods);
    assert.match(pods.error, /^unable to fetch CPU metrics: resourceRules\.cpu: unable to convert/);
    assert.deepEqual(renderNodeMetricsQueries(r2, ["n"]), {
      queries: { cpu: 'cpu{instance="n"}', memory: 'mem{kube_node="n"}' },
    });
  });

  it("refuses an override the cluster does not know", () => {
    assert.throws(
      () =>
        reader(`resourceRules:
  cpu: {containerQuery: x, nodeQuery: x, resources: {overrides: {pod: {resource: widget}}}}
  memory: {containerQuery: x, nodeQuery: x}
`),
      /^Error: unable to construct querier for CPU metrics: unable to construct label-resource converter: resourceRules\.cpu\.resources\.overrides\.pod: unable to normalize/,
    );
  });
});

describe("PodMetrics from vectors (upstream provider_test.go)", () => {
  const r = reader(DEFAULT_CONFIG_1M);

  it("lists pods across namespaces, earliest timestamp, window 1m", () => {
    const pods = [
      { namespace: "some-ns", name: "pod1" },
      { namespace: "some-ns", name: "pod3" },
      { namespace: "other-ns", name: "pod27" },
    ];
    const vectors = new Map<string, ResourceVectors>([
      ["some-ns", {
        cpu: [
          pod("some-ns", "pod1", "cont1", 1100, 10),
          pod("some-ns", "pod1", "cont2", 1110, 20),
          pod("some-ns", "pod3", "cont1", 1300, 10),
          pod("some-ns", "pod3", "cont2", 1310, 20),
        ],
        memory: [
          pod("some-ns", "pod1", "cont1", 3100, 11),
          pod("some-ns", "pod1", "cont2", 3110, 21),
          pod("some-ns", "pod3", "cont1", 3300, 11),
          pod("some-ns", "pod3", "cont2", 3310, 21),
        ],
      }],
      ["other-ns", {
        cpu: [pod("other-ns", "pod27", "cont1", 2200, 270)],
        memory: [pod("other-ns", "pod27", "cont1", 4200, 271)],
      }],
    ]);
    const got = podMetricsFromVectors(r, pods, vectors);
    assert.deepEqual(got.map((p) => [p.namespace, p.name, p.timestamp, p.windowSeconds]), [
      ["some-ns", "pod1", 10, 60],
      ["some-ns", "pod3", 10, 60],
      ["other-ns", "pod27", 270, 60],
    ]);
    assert.deepEqual(got[0].containers.sort(byName), [
      { name: "cont1", cpu: "1100", memory: "3100" },
      { name: "cont2", cpu: "1110", memory: "3110" },
    ]);
    assert.deepEqual(got[1].containers.sort(byName), [
      { name: "cont1", cpu: "1300", memory: "3300" },
      { name: "cont2", cpu: "1310", memory: "3310" },
    ]);
    assert.deepEqual(got[2].containers, [{ name: "cont1", cpu: "2200", memory: "4200" }]);
  });

  it("leaves out missing pods and keeps the others", () => {
    const got = podMetricsFromVectors(
      r,
      [{ namespace: "some-ns", name: "pod1" }, { namespace: "some-ns", name: "pod-nonexistant" }],
      new Map<string, ResourceVectors>([["some-ns", {
        cpu: [pod("some-ns", "pod1", "cont1", 1100, 10), pod("some-ns", "pod1", "cont2", 1110, 20)],
        memory: [
          pod("some-ns", "pod1", "cont1", 3100, 11),
          pod("some-ns", "pod1", "cont2", 3110, 21),
        ],
      }]]),
    );
    assert.deepEqual(got, [{
      namespace: "some-ns",
      name: "pod1",
      timestamp: 10,
      windowSeconds: 60,
      containers: [
        { name: "cont1", cpu: "1100", memory: "3100" },
        { name: "cont2", cpu: "1110", memory: "3110" },
      ],
    }]);
  });

  it("reports NaN and negative values as zero", () => {
    const got = podMetricsFromVectors(
      r,
      [{ namespace: "some-ns", name: "pod1" }, { namespace: "some-ns", name: "pod3" }],
      new Map<string, ResourceVectors>([["some-ns", {
        cpu: [
          pod("some-ns", "pod1", "cont1", -1100, 10),
          pod("some-ns", "pod1", "cont2", NaN, 20),
          pod("some-ns", "pod3", "cont1", -1300, 10),
          pod("some-ns", "pod3", "cont2", 1310, 20),
        ],
        memory: [
          pod("some-ns", "pod1", "cont1", 3100, 11),
          pod("some-ns", "pod1", "cont2", -3110, 21),
          pod("some-ns", "pod3", "cont1", NaN, 11),
          pod("some-ns", "pod3", "cont2", -3310, 21),
        ],
      }]]),
    );
    assert.deepEqual(got.map((p) => [p.timestamp, p.windowSeconds]), [[10, 60], [10, 60]]);
    assert.deepEqual(got[0].containers, [
      { name: "cont1", cpu: "0", memory: "3100" },
      { name: "cont2", cpu: "0", memory: "0" },
    ]);
    assert.deepEqual(got[1].containers, [
      { name: "cont1", cpu: "0", memory: "0" },
      { name: "cont2", cpu: "1310", memory: "0" },
    ]);
  });

  it("files samples without the pod label under no pod, without the container label under ''", () => {
    const got = podMetricsFromVectors(
      r,
      [{ namespace: "ns", name: "a" }, { namespace: "ns", name: "" }],
      new Map<string, ResourceVectors>([["ns", {
        cpu: [
          { labels: { pod: "a" }, value: 0.25, timestamp: 5 },
          { labels: { container: "x" }, value: 1, timestamp: 1 },
          { labels: { pod: "a", container: "c" }, value: 0.5, timestamp: 7 },
          { labels: { pod: "a", container: "c" }, value: 0.75, timestamp: 9 },
        ],
        memory: [
          { labels: { pod: "a", container: "c" }, value: 2048, timestamp: 8 },
          { labels: { pod: "a", container: "m" }, value: 1023.9999, timestamp: 3 },
          { labels: { container: "x" }, value: 1, timestamp: 1 },
        ],
      }]]),
    );
    // the pod named "" (which Kubernetes never has) collects the label-less samples
    assert.deepEqual(got, [
      {
        namespace: "ns",
        name: "a",
        timestamp: 3,
        windowSeconds: 60,
        containers: [
          { name: "", cpu: "250m", memory: "0" },
          { name: "c", cpu: "750m", memory: "2Ki" },
          { name: "m", cpu: "0", memory: "1023999m" },
        ],
      },
      {
        namespace: "ns",
        name: "",
        timestamp: 1,
        windowSeconds: 60,
        containers: [{ name: "x", cpu: "1", memory: "1" }],
      },
    ]);
  });

  it("leaves out pods of namespaces whose queries failed, keeps repeats", () => {
    const sample = pod("ok", "a", "c", 1, 1);
    const got = podMetricsFromVectors(
      r,
      [{ namespace: "failed", name: "a" }, { namespace: "ok", name: "a" }, {
        namespace: "ok",
        name: "a",
      }],
      new Map([["ok", { cpu: [sample], memory: [sample] }]]),
    );
    assert.deepEqual(got.map((p) => `${p.namespace}/${p.name}`), ["ok/a", "ok/a"]);
  });

  it("converts as Go's int64(v*1000) on amd64: truncation, +Inf to -2^63", () => {
    const got = podMetricsFromVectors(
      r,
      [{ namespace: "ns", name: "a" }],
      new Map<string, ResourceVectors>([["ns", {
        cpu: [
          { labels: { pod: "a", container: "c1" }, value: 0.0015, timestamp: 1 },
          { labels: { pod: "a", container: "c2" }, value: Infinity, timestamp: 1 },
          { labels: { pod: "a", container: "c3" }, value: 1e16, timestamp: 1 },
        ],
        memory: [
          { labels: { pod: "a", container: "c1" }, value: 1048576, timestamp: 1 },
          { labels: { pod: "a", container: "c2" }, value: Infinity, timestamp: 1 },
          { labels: { pod: "a", container: "c3" }, value: 1536.5, timestamp: 1 },
        ],
      }]]),
    );
    assert.deepEqual(got[0].containers, [
      { name: "c1", cpu: "1m", memory: "1Mi" },
      { name: "c2", cpu: "-9223372036854775808m", memory: "-9223372036854775808m" },
      { name: "c3", cpu: "-9223372036854775808m", memory: "1536500m" },
    ]);
  });
});

describe("NodeMetrics from vectors (upstream provider_test.go)", () => {
  const r = reader(DEFAULT_CONFIG_1M);

  it("lists nodes with the earlier of the two timestamps", () => {
    const got = nodeMetricsFromVectors(r, ["node1", "node2"], {
      cpu: [node("node1", 1100, 10), node("node2", 1200, 14)],
      memory: [node("node1", 2100, 11), node("node2", 2200, 12)],
    });
    assert.deepEqual(got, [
      { name: "node1", timestamp: 10, windowSeconds: 60, cpu: "1100", memory: "2100" },
      { name: "node2", timestamp: 12, windowSeconds: 60, cpu: "1200", memory: "2200" },
    ]);
  });

  it("leaves out missing nodes and keeps the others", () => {
    const got = nodeMetricsFromVectors(r, ["node1", "node2", "node3"], {
      cpu: [node("node1", 1100, 10), node("node2", 1200, 14)],
      memory: [node("node1", 2100, 11), node("node2", 2200, 12)],
    });
    assert.deepEqual(got, [
      { name: "node1", timestamp: 10, windowSeconds: 60, cpu: "1100", memory: "2100" },
      { name: "node2", timestamp: 12, windowSeconds: 60, cpu: "1200", memory: "2200" },
    ]);
  });

  it("reports NaN and negative values as zero", () => {
    const got = nodeMetricsFromVectors(r, ["node1", "node2"], {
      cpu: [node("node1", -1100, 10), node("node2", 1200, 14)],
      memory: [node("node1", 2100, 11), node("node2", NaN, 12)],
    });
    assert.deepEqual(got, [
      { name: "node1", timestamp: 10, windowSeconds: 60, cpu: "0", memory: "2100" },
      { name: "node2", timestamp: 12, windowSeconds: 60, cpu: "1200", memory: "0" },
    ]);
  });

  it("takes only each node's first sample; a failed read has no nodes", () => {
    const got = nodeMetricsFromVectors(r, ["n"], {
      cpu: [node("n", 1, 30), node("n", 2, 5)],
      memory: [node("n", 4096, 20), node("n", 1, 1)],
    });
    assert.deepEqual(got, [
      { name: "n", timestamp: 20, windowSeconds: 60, cpu: "1", memory: "4Ki" },
    ]);
    assert.deepEqual(nodeMetricsFromVectors(r, ["n"], null), []);
  });
});
