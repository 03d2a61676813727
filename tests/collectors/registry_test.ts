import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createCollectorRegistry } from "../../src/collectors/registry.ts";
import { collectorFactories } from "../../src/cli/collectors.ts";
import { flagDefaults, SERVE_FLAGS } from "../../src/cli/flags.ts";
import { COLLECTOR_DESCRIPTORS } from "../../src/core/kube_metrics_adapter/collectors.ts";
import { httpJsonPathFactory } from "../../src/collectors/http_json_path.ts";
import { podJsonPathFactory } from "../../src/collectors/pod_json_path.ts";
import {
  clusterScalingScheduleFactory,
  scalingScheduleFactory,
} from "../../src/collectors/scaling_schedule.ts";
import type { MetricType } from "../../src/core/types.ts";

describe("collector registry", () => {
  const registry = createCollectorRegistry([
    podJsonPathFactory,
    httpJsonPathFactory,
    scalingScheduleFactory,
    clusterScalingScheduleFactory,
  ]);
  const cases: [string, MetricType, unknown][] = [
    ["json-path", "Pods", podJsonPathFactory],
    ["json-path", "External", httpJsonPathFactory],
    ["json-path", "Object", undefined],
    ["scaling-schedule", "Object", scalingScheduleFactory],
    ["cluster-scaling-schedule", "Object", clusterScalingScheduleFactory],
    ["prometheus", "External", undefined],
  ];
  for (const [type, metricType, want] of cases) {
    it(`looks up ${type} for ${metricType} metrics`, () => {
      assert.equal(registry.lookup(type, metricType), want);
    });
  }

  it("has a factory for each metric type of each descriptor in core, and no factory without one", () => {
    const factories = collectorFactories(flagDefaults(SERVE_FLAGS));
    const served = factories.flatMap((f) =>
      (f.metricTypes ?? ["Pods", "Object", "External"]).map((t) => `${f.type} ${t}`)
    ).sort();
    const described = COLLECTOR_DESCRIPTORS.flatMap((d) =>
      d.metricTypes.map((t) => `${d.type} ${t}`)
    ).sort();
    assert.deepEqual(served, described);
  });

  it("lists the types it holds", () => {
    assert.deepEqual(registry.types(), [
      "cluster-scaling-schedule",
      "json-path",
      "scaling-schedule",
    ]);
  });

  it("refuses two factories for the same type and metric type", () => {
    assert.throws(() => createCollectorRegistry([podJsonPathFactory, podJsonPathFactory]), {
      message: 'collector "json-path" registered twice for Pods metrics',
    });
  });
});
