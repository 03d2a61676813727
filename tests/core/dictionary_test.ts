import { describe, it } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import v8 from "node:v8";
import vm from "node:vm";
import { dictionaryOf, settleStringMaps } from "../../src/core/dictionary.ts";
import { parseHpa } from "../../src/core/kubernetes/hpa.ts";
import { parseManifests } from "../../src/cluster/manifests.ts";

/** An HPA with a ScalingSchedule metric whose annotation key names the schedule. */
function hpaYaml(i: number): string {
  return `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: app-${i}
  namespace: shop
  labels:
    app: app-${i}
  annotations:
    metric-config.object.sched-${i}.scaling-schedule/interval: 30s
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: app-${i}}
  maxReplicas: 10
  metrics:
  - type: Object
    object:
      describedObject: {apiVersion: zalando.org/v1, kind: ScalingSchedule, name: sched-${i}}
      metric: {name: sched-${i}}
      target: {type: AverageValue, averageValue: "10"}
`;
}

describe("dictionaryOf", () => {
  it("copies own keys and values into a null-prototype object, keys sorted", () => {
    const src = JSON.parse('{"b":"2","a":"1","__proto__":"x","constructor":"c"}');
    const d = dictionaryOf(src);
    assert.equal(Object.getPrototypeOf(d), null);
    assert.deepEqual(Object.keys(d), ["__proto__", "a", "b", "constructor"]);
    assert.deepEqual(Object.values(d), ["x", "1", "2", "c"]);
    assert.notEqual(d, src);
    // already a dictionary: the same object back
    assert.equal(dictionaryOf(d), d);
  });
});

describe("settleStringMaps", () => {
  it("turns metadata.labels and metadata.annotations into dictionaries in place, nothing else", () => {
    const obj = {
      metadata: { name: "web", labels: { app: "web" }, annotations: { a: "1" } },
      spec: { selector: { matchLabels: { app: "web" } } },
    };
    const spec = obj.spec;
    assert.equal(settleStringMaps(obj), obj);
    assert.equal(Object.getPrototypeOf(obj.metadata.labels), null);
    assert.equal(Object.getPrototypeOf(obj.metadata.annotations), null);
    assert.deepEqual({ ...obj.metadata.labels }, { app: "web" });
    assert.deepEqual({ ...obj.metadata.annotations }, { a: "1" });
    assert.equal(obj.spec, spec);
    assert.equal(Object.getPrototypeOf(obj.spec.selector.matchLabels), Object.prototype);
  });

  it("leaves objects without metadata, and values that are not maps, as they are", () => {
    assert.equal(settleStringMaps(null), null);
    assert.deepEqual(settleStringMaps({ kind: "List" }), { kind: "List" });
    const odd = { metadata: { name: "x", labels: ["a"], annotations: "b" } };
    settleStringMaps(odd);
    assert.deepEqual(odd, { metadata: { name: "x", labels: ["a"], annotations: "b" } });
  });
});

describe("string maps read from manifests and HPAs", () => {
  it("are dictionaries: parseManifests (YAML and JSON) and parseHpa", () => {
    const [fromYaml] = parseManifests(hpaYaml(1), "a.yaml");
    const [fromJson] = parseManifests(JSON.stringify(fromYaml), "a.json");
    for (const obj of [fromYaml, fromJson]) {
      assert.equal(Object.getPrototypeOf(obj.metadata.annotations), null);
      assert.equal(Object.getPrototypeOf(obj.metadata.labels), null);
    }
    const parsed = parseHpa(fromYaml);
    assert.equal(Object.getPrototypeOf(parsed.metadata.annotations), null);
    assert.deepEqual({ ...parsed.metadata.annotations }, {
      "metric-config.object.sched-1.scaling-schedule/interval": "30s",
    });
  });
});

// V8's own view (Node only: Deno does not take the flag at run time, Bun is not V8). Before
// the string maps became dictionaries, 3,000 HPAs with distinct annotation keys filled V8's
// table of steps from `{}`, and two objects built the same way got different hidden classes.
const isNode = !("Deno" in globalThis) && !("Bun" in globalThis) && !!process.versions.v8;
if (isNode) {
  describe("V8 hidden classes with 3,000 HPAs read (node)", () => {
    it("leave room for other code: two objects built as `{}` plus one key share a hidden class", () => {
      v8.setFlagsFromString("--allow-natives-syntax");
      v8.setFlagsFromString("--expose-gc");
      const sameMap = new Function("a", "b", "return %HaveSameMap(a, b)") as (
        a: object,
        b: object,
      ) => boolean;
      const gc = vm.runInNewContext("gc") as () => void;
      const text = Array.from({ length: 3000 }, (_, i) => hpaYaml(i)).join("---\n");
      const hpas = parseManifests(text, "hpas.yaml");
      const parsed = hpas.map((h) => parseHpa(h));
      gc(); // what the parsers built and dropped goes, with its hidden classes
      // the rest of the process adds keys of its own (here 200 distinct ones, kept)
      const others = Array.from({ length: 200 }, (_, i) => {
        const o: Record<string, number> = {};
        o[`other-key-${i}`] = i;
        return o;
      });
      const build = (): object => {
        const o: Record<string, number> = {};
        o["a-key-nobody-used-before"] = 1;
        return o;
      };
      assert.equal(sameMap(build(), build()), true);
      assert.equal(hpas.length + parsed.length + others.length, 6200);
    });
  });
}
