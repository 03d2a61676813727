/**
 * When KEDA updates the HPA it wrote (src/core/keda/hpa_update.ts): apimachinery's
 * DeepDerivative and DeepEqual as `updateHPAIfNeeded` uses them.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { kedaHpaFor } from "../../../src/core/keda/hpa.ts";
import {
  deepDerivative,
  kedaHpaUpdates,
  semanticEqual,
} from "../../../src/core/keda/hpa_update.ts";
import { parseScaledObject } from "../../../src/core/keda/scaled_object.ts";

const PROM = {
  type: "prometheus",
  metadata: { serverAddress: "http://p:9090", query: "up", threshold: "100.5" },
};

function want(spec: Record<string, unknown> = {}, annotations?: Record<string, string>) {
  const r = kedaHpaFor(
    parseScaledObject({
      apiVersion: "keda.sh/v1alpha1",
      kind: "ScaledObject",
      metadata: {
        name: "web",
        namespace: "shop",
        uid: "u",
        ...(annotations ? { annotations } : {}),
      },
      spec: { scaleTargetRef: { name: "web" }, triggers: [PROM], ...spec },
    }),
    { version: "0.1.0" },
  );
  if ("error" in r) throw new Error(r.error);
  return r.hpa;
}

/** The HPA as the API server gives it back: defaults filled, quantities canonical. */
function served(hpa: ReturnType<typeof want>) {
  const h = structuredClone(hpa) as unknown as {
    metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
    spec: Record<string, unknown> & {
      metrics: { external: { target: { averageValue: string } } }[];
    };
  };
  h.spec.metrics[0].external.target.averageValue = "100500m";
  return h;
}

describe("DeepDerivative and DeepEqual on JSON", () => {
  it("ignores what the wanted value leaves unset, compares quantities by value", () => {
    assert.equal(deepDerivative({ a: "", b: [], c: {} }, { a: "x", b: [1], c: { d: 1 } }), true);
    assert.equal(deepDerivative({ a: "x" }, { a: "y" }), false);
    assert.equal(deepDerivative([1], [1, 2]), true);
    assert.equal(deepDerivative([1, 2], [1]), false);
    assert.equal(deepDerivative({ averageValue: "100.500" }, { averageValue: "100500m" }), true);
    assert.equal(deepDerivative({ n: 0 }, { n: 1 }), false);
    assert.equal(semanticEqual({ tolerance: "0.1" }, { tolerance: "100m" }), true);
    assert.equal(semanticEqual(undefined, {}), false);
    assert.equal(semanticEqual({ a: undefined }, {}), true);
  });
});

describe("KEDA's updateHPAIfNeeded", () => {
  it("updates nothing for the HPA it wrote, read back with canonical quantities and defaults", () => {
    const w = want();
    const found = served(w);
    (found.spec as Record<string, unknown>).extra = "defaulted by the server";
    found.metadata.labels["added-by-someone"] = "x";
    assert.deepEqual(kedaHpaUpdates(w, found), { spec: false, labels: false, annotations: false });
  });

  it("reverts an edited field, a removed metric, a changed label", () => {
    const w = want();
    const edited = served(w);
    (edited.spec as Record<string, unknown>).maxReplicas = 7;
    assert.equal(kedaHpaUpdates(w, edited).spec, true);
    const fewer = served(w);
    fewer.spec.metrics = [];
    assert.equal(kedaHpaUpdates(w, fewer).spec, true);
    const relabeled = served(w);
    relabeled.metadata.labels["app.kubernetes.io/part-of"] = "other";
    assert.equal(kedaHpaUpdates(w, relabeled).labels, true);
  });

  it("sees a behavior set or removed by the paused-scale-in annotation (DeepEqual)", () => {
    const paused = want({}, { "autoscaling.keda.sh/paused-scale-in": "true" });
    const plain = want();
    assert.equal(kedaHpaUpdates(paused, served(plain)).spec, true);
    // the annotation removed: behavior back to none, which DeepDerivative alone would not see
    assert.equal(kedaHpaUpdates(plain, served(paused)).spec, true);
    // and the annotations themselves: the found HPA has some, the wanted none
    assert.equal(kedaHpaUpdates(plain, served(paused)).annotations, true);
  });
});
