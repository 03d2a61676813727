import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  createCollectorRegistry,
  defaultCollectorFactories,
} from "../../src/collectors/registry.ts";
import { httpJsonPathFactory } from "../../src/collectors/http_json_path.ts";
import { podJsonPathFactory } from "../../src/collectors/pod_json_path.ts";
import {
  clusterScalingScheduleFactory,
  scalingScheduleFactory,
} from "../../src/collectors/scaling_schedule.ts";
import type { MetricType } from "../../src/core/types.ts";

describe("collector registry", () => {
  const registry = createCollectorRegistry(defaultCollectorFactories());
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

  it("lists the default types", () => {
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
