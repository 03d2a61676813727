/**
 * src/core/kubernetes/hpa_conversion.ts against Kubernetes' own conversion (its scheme: the
 * version's defaults, conversion to the internal type, to autoscaling/v2, v2's defaults), built
 * from its Go module (tests/core/kubernetes/hpa_conversion_reference: v1 with v1.36.3, v2beta2
 * with v1.35.4): generated HPAs with the round-trip annotations (well-formed, with Go-style and
 * odd key cases, and malformed ones that Go ignores whole), the same v2 objects. Quantities are
 * compared by value (the API server re-prints them, we keep their spelling). Seeded:
 * HPA_CONVERSION_SEED=<n> replays a run.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { convertHpaToV2, HpaConversionError } from "../../../src/core/kubernetes/hpa_conversion.ts";
import { canonicalQuantity } from "../../../src/core/kubernetes/quantity.ts";
import { prng } from "../../support/prng.ts";
import { ensureHpaConversionReference } from "./hpa_conversion_tool.ts";

type Obj = Record<string, unknown>;
interface Answer {
  object?: Obj;
  error?: string;
}

function reference(version: "v1" | "v2beta2", cases: readonly Obj[]): Answer[] {
  // the cases from a file: a large stdin and stdout through pipes stall under Deno's spawnSync
  const dir = mkdtempSync(join(tmpdir(), "hpa-conversion-"));
  try {
    const file = join(dir, "cases.jsonl");
    writeFileSync(file, cases.map((c) => JSON.stringify(c)).join("\n") + "\n");
    const r = spawnSync(ensureHpaConversionReference(version), [file], {
      stdio: ["ignore", "pipe", "pipe"],
      maxBuffer: 256 << 20,
    });
    if (r.status !== 0) {
      throw new Error(`the ${version} reference exited with ${r.status}: ${r.stderr}`);
    }
    return r.stdout.toString().trim().split("\n").map((l) => JSON.parse(l) as Answer);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function ours(c: Obj): Answer {
  try {
    return { object: convertHpaToV2(c) as Obj };
  } catch (e) {
    if (e instanceof HpaConversionError) return { error: e.message };
    throw e;
  }
}

const QUANTITY_KEYS = new Set(["value", "averageValue", "tolerance"]);

/** Nulls dropped, quantities by value, metadata as the reference shows it. */
function normalize(v: unknown, key = ""): unknown {
  if (Array.isArray(v)) return v.map((x) => normalize(x));
  if ((typeof v === "string" || typeof v === "number") && QUANTITY_KEYS.has(key)) {
    return canonicalQuantity(String(v).trim());
  }
  if (v === null || typeof v !== "object") return v;
  const out: Obj = {};
  // a scaling policy's value is a number, not a quantity
  const policy = Object.hasOwn(v, "periodSeconds");
  for (const k of Object.keys(v).sort()) {
    const x = (v as Obj)[k];
    if (x === null || x === undefined) continue;
    out[k] = policy ? x : normalize(x, k);
  }
  return out;
}

function comparable(a: Answer): unknown {
  if (a.error !== undefined) return { error: true };
  const o = { ...a.object! };
  const meta = o.metadata as Obj;
  const m: Obj = { name: meta.name };
  if (meta.namespace !== undefined) m.namespace = meta.namespace;
  const ann = meta.annotations as Obj | undefined;
  if (ann && Object.keys(ann).length > 0) m.annotations = { ...ann };
  o.metadata = m;
  const out = normalize(o) as Obj;
  // the reference shows a status with an empty (not nil) list that JSON cannot tell from none
  const status = out.status as Obj | undefined;
  if (status && Object.keys(status).length === 1 && status.desiredReplicas === 0) {
    delete out.status;
  }
  return out;
}

// ---------------------------------------------------------------- generators

class Gen {
  r: () => number;
  /** Whether keys may come in other cases (in the annotations, which Go decodes folding them). */
  fold = true;
  constructor(seed: number) {
    this.r = prng(seed);
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.r() * (max - min + 1));
  }
  chance(p: number): boolean {
    return this.r() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.r() * xs.length)];
  }
  /** A key as Go's encoding/json matches it: usually as spelled, sometimes in another case. */
  key(k: string): string {
    if (!this.fold || !this.chance(0.12)) return k;
    return this.pick([k.toLowerCase(), k.toUpperCase(), k[0].toUpperCase() + k.slice(1)]);
  }
  /** An object with some keys in other cases. */
  obj(fields: Obj): Obj {
    const out: Obj = {};
    for (const [k, v] of Object.entries(fields)) if (v !== undefined) out[this.key(k)] = v;
    return out;
  }
  maybe<T>(p: number, f: () => T): T | undefined {
    return this.chance(p) ? f() : undefined;
  }
}

const QUANTITIES: readonly unknown[] = [
  "0",
  "1",
  "10",
  "250m",
  "1500m",
  "0.5",
  "2k",
  "1Ki",
  "3Mi",
  "1e3",
  "100",
  " 7 ",
  5,
  2.5,
  "0.0",
];
const BAD_QUANTITIES: readonly unknown[] = ["abc", "1x", "", true, "1K", {}];

function quantity(g: Gen, bad = 0.02): unknown {
  return g.chance(bad) ? g.pick(BAD_QUANTITIES) : g.pick(QUANTITIES);
}

function selector(g: Gen): Obj | undefined {
  return g.maybe(0.4, () =>
    g.obj({
      matchLabels: g.maybe(0.8, () => ({ app: g.pick(["web", "api"]), "query-name": "rps" })),
      matchExpressions: g.maybe(0.3, () => [
        g.obj({
          key: "tier",
          operator: g.pick(["In", "Exists"]),
          values: g.maybe(0.7, () => ["a"]),
        }),
      ]),
    }));
}

function utilization(g: Gen): unknown {
  return g.chance(0.03) ? g.pick([1.5, "50", 2 ** 31]) : g.int(1, 150);
}

const TYPES = ["Object", "Pods", "Resource", "ContainerResource", "External"] as const;

function v1MetricSpec(g: Gen): Obj {
  const type = g.chance(0.03) ? "Bogus" : g.pick(TYPES);
  const source = (t: string): Obj => {
    switch (t) {
      case "Object":
        return g.obj({
          target: g.obj({
            kind: "Service",
            name: "svc",
            apiVersion: g.maybe(0.5, () => "v1"),
          }),
          metricName: "hits",
          targetValue: g.maybe(0.8, () => quantity(g)),
          selector: selector(g),
          averageValue: g.maybe(0.4, () => quantity(g)),
        });
      case "Pods":
        return g.obj({
          metricName: "qps",
          targetAverageValue: g.maybe(0.9, () => quantity(g)),
          selector: selector(g),
        });
      case "Resource":
      case "ContainerResource":
        return g.obj({
          name: g.pick(["cpu", "memory"]),
          targetAverageUtilization: g.maybe(0.5, () => utilization(g)),
          targetAverageValue: g.maybe(0.5, () => quantity(g)),
          container: t === "ContainerResource" ? g.maybe(0.9, () => "app") : undefined,
        });
      default:
        return g.obj({
          metricName: g.pick(["prometheus-query", "queue-length"]),
          metricSelector: selector(g),
          targetValue: g.maybe(0.5, () => quantity(g)),
          targetAverageValue: g.maybe(0.5, () => quantity(g)),
        });
    }
  };
  const member = (t: string): string => t[0].toLowerCase() + t.slice(1);
  const t = type === "Bogus" ? g.pick(TYPES) : type;
  const fields: Obj = { type };
  fields[member(t)] = g.chance(0.03) ? null : source(t);
  // now and then a second member, as a hand-written annotation may have
  if (g.chance(0.05)) {
    const other = g.pick(TYPES);
    fields[member(other)] = source(other);
  }
  return g.obj(fields);
}

function v1MetricStatus(g: Gen): Obj {
  const t = g.pick(TYPES);
  const member = t[0].toLowerCase() + t.slice(1);
  let source: Obj;
  switch (t) {
    case "Object":
      source = g.obj({
        target: g.obj({ kind: "Service", name: "svc" }),
        metricName: "hits",
        currentValue: g.maybe(0.8, () => quantity(g)),
        selector: selector(g),
        averageValue: g.maybe(0.4, () => quantity(g)),
      });
      break;
    case "Pods":
      source = g.obj({ metricName: "qps", currentAverageValue: g.maybe(0.8, () => quantity(g)) });
      break;
    case "Resource":
    case "ContainerResource":
      source = g.obj({
        name: "cpu",
        currentAverageUtilization: g.maybe(0.6, () => g.int(0, 200)),
        currentAverageValue: g.maybe(0.8, () => quantity(g)),
        container: t === "ContainerResource" ? "app" : undefined,
      });
      break;
    default:
      source = g.obj({
        metricName: "queue-length",
        metricSelector: selector(g),
        currentValue: g.maybe(0.7, () => quantity(g)),
        currentAverageValue: g.maybe(0.4, () => quantity(g)),
      });
  }
  return g.obj({ type: t, [member]: source });
}

/** Internal HPAScalingRules: Go field names (what the API server writes), sometimes camelCase. */
function internalRules(g: Gen): Obj {
  const camel = g.chance(0.3);
  const k = (s: string): string => g.key(camel ? s[0].toLowerCase() + s.slice(1) : s);
  const out: Obj = {};
  if (g.chance(0.5)) out[k("StabilizationWindowSeconds")] = g.chance(0.03) ? "60" : g.int(0, 600);
  if (g.chance(0.5)) out[k("SelectPolicy")] = g.pick(["Max", "Min", "Disabled"]);
  if (g.chance(0.5)) {
    out[k("Policies")] = Array.from({ length: g.int(0, 2) }, () => ({
      [k("Type")]: g.pick(["Pods", "Percent"]),
      [k("Value")]: g.int(1, 200),
      [k("PeriodSeconds")]: g.int(1, 1800),
    }));
  }
  if (g.chance(0.2)) out[k("Tolerance")] = quantity(g);
  return out;
}

function behaviorAnnotation(g: Gen): string {
  if (g.chance(0.05)) return g.pick(["{}", '{"ScaleUp":null}', "null", "{not json", "[]", '""']);
  return JSON.stringify(g.obj({
    ScaleUp: g.maybe(0.6, () => internalRules(g)),
    ScaleDown: g.maybe(0.6, () => internalRules(g)),
  }));
}

function listAnnotation(g: Gen, item: () => Obj): string {
  if (g.chance(0.05)) return g.pick(["[]", "null", "{}", "[1]", "oops"]);
  return JSON.stringify(Array.from({ length: g.int(0, 3) }, item));
}

const TIMES = ["2024-05-01T10:00:00Z", "2025-12-31T23:59:59Z", "2020-02-29T00:00:00Z"];

function condition(g: Gen): Obj {
  return g.obj({
    type: g.pick(["AbleToScale", "ScalingActive", "ScalingLimited"]),
    status: g.pick(["True", "False", "Unknown"]),
    lastTransitionTime: g.maybe(0.8, () => g.chance(0.03) ? "yesterday" : g.pick(TIMES)),
    reason: g.maybe(0.7, () => "SucceededRescale"),
    message: g.maybe(0.5, () => "the HPA controller was able to update the target scale"),
  });
}

function annotations(g: Gen, v1: boolean): Obj | undefined {
  const a: Obj = {};
  if (g.chance(0.3)) a["example.com/owner"] = "team-a";
  if (g.chance(0.55)) {
    a["autoscaling.alpha.kubernetes.io/metrics"] = listAnnotation(g, () => v1MetricSpec(g));
  }
  if (g.chance(0.4)) a["autoscaling.alpha.kubernetes.io/behavior"] = behaviorAnnotation(g);
  if (g.chance(0.3)) {
    a["autoscaling.alpha.kubernetes.io/current-metrics"] = listAnnotation(
      g,
      () => v1MetricStatus(g),
    );
  }
  if (g.chance(0.3)) {
    a["autoscaling.alpha.kubernetes.io/conditions"] = listAnnotation(g, () => condition(g));
  }
  for (const dir of ["up", "down"]) {
    if (g.chance(v1 ? 0.1 : 0.3)) {
      a[`autoscaling.alpha.kubernetes.io/scale-${dir}-tolerance`] = g.chance(0.05)
        ? g.pick(["abc", " 0.1", ""])
        : g.pick(["0.1", "50m", "0", "1"]);
    }
  }
  return Object.keys(a).length > 0 || g.chance(0.5) ? a : undefined;
}

function meta(g: Gen, i: number, v1: boolean): Obj {
  const m: Obj = { name: `hpa-${i}` };
  if (g.chance(0.8)) m.namespace = g.pick(["shop", "default"]);
  const a = annotations(g, v1);
  if (a !== undefined) m.annotations = a;
  return m;
}

function scaleTargetRef(g: Gen): Obj {
  const ref: Obj = { kind: "Deployment", name: "web" };
  if (g.chance(0.7)) ref.apiVersion = "apps/v1";
  return ref;
}

function v1Case(g: Gen, i: number): Obj {
  const spec: Obj = { scaleTargetRef: scaleTargetRef(g), maxReplicas: g.int(1, 50) };
  if (g.chance(0.6)) spec.minReplicas = g.int(0, 5);
  if (g.chance(0.6)) spec.targetCPUUtilizationPercentage = g.int(1, 100);
  const hpa: Obj = {
    apiVersion: "autoscaling/v1",
    kind: "HorizontalPodAutoscaler",
    metadata: meta(g, i, true),
    spec,
  };
  if (g.chance(0.4)) {
    const status: Obj = { currentReplicas: g.int(0, 5), desiredReplicas: g.int(0, 5) };
    if (g.chance(0.5)) status.currentCPUUtilizationPercentage = g.int(0, 150);
    if (g.chance(0.3)) status.observedGeneration = g.int(1, 9);
    if (g.chance(0.3)) status.lastScaleTime = g.pick(TIMES);
    hpa.status = status;
  }
  return hpa;
}

function v2Target(g: Gen, types: readonly string[]): Obj {
  const type = g.pick(types);
  const t: Obj = { type };
  if (type === "Value" || g.chance(0.1)) t.value = quantity(g, 0);
  if (type === "AverageValue" || g.chance(0.1)) t.averageValue = quantity(g, 0);
  if (type === "Utilization") t.averageUtilization = g.int(1, 100);
  return t;
}

function v2Metric(g: Gen): Obj {
  const t = g.pick(TYPES);
  const metric = (): Obj => {
    const m: Obj = { name: "m" };
    // the object itself is decoded case-sensitively
    g.fold = false;
    const s = selector(g);
    g.fold = true;
    if (s) m.selector = s;
    return m;
  };
  switch (t) {
    case "Object":
      return {
        type: t,
        object: {
          describedObject: { kind: "Service", name: "svc", apiVersion: "v1" },
          metric: metric(),
          target: v2Target(g, ["Value", "AverageValue"]),
        },
      };
    case "Pods":
      return { type: t, pods: { metric: metric(), target: v2Target(g, ["AverageValue"]) } };
    case "Resource":
      return {
        type: t,
        resource: { name: "cpu", target: v2Target(g, ["Utilization", "AverageValue"]) },
      };
    case "ContainerResource":
      return {
        type: t,
        containerResource: {
          name: "memory",
          container: "app",
          target: v2Target(g, ["Utilization", "AverageValue"]),
        },
      };
    default:
      return {
        type: t,
        external: { metric: metric(), target: v2Target(g, ["Value", "AverageValue"]) },
      };
  }
}

function v2Rules(g: Gen): Obj {
  const r: Obj = {};
  if (g.chance(0.5)) r.stabilizationWindowSeconds = g.int(0, 3600);
  if (g.chance(0.5)) r.selectPolicy = g.pick(["Max", "Min", "Disabled"]);
  if (g.chance(0.5)) {
    r.policies = Array.from({ length: g.int(0, 2) }, () => ({
      type: g.pick(["Pods", "Percent"]),
      value: g.int(1, 100),
      periodSeconds: g.int(1, 1800),
    }));
  }
  // not a v2beta2 field: dropped (the annotations carry it)
  if (g.chance(0.2)) r.tolerance = "0.05";
  return r;
}

function v2beta2Case(g: Gen, i: number): Obj {
  const spec: Obj = { scaleTargetRef: scaleTargetRef(g), maxReplicas: g.int(1, 50) };
  if (g.chance(0.6)) spec.minReplicas = g.int(0, 5);
  if (g.chance(0.8)) spec.metrics = Array.from({ length: g.int(0, 3) }, () => v2Metric(g));
  if (g.chance(0.5)) {
    const b: Obj = {};
    if (g.chance(0.6)) b.scaleUp = v2Rules(g);
    if (g.chance(0.6)) b.scaleDown = v2Rules(g);
    spec.behavior = b;
  }
  return {
    apiVersion: "autoscaling/v2beta2",
    kind: "HorizontalPodAutoscaler",
    metadata: meta(g, i, false),
    spec,
  };
}

// ---------------------------------------------------------------- the comparison

const SEED = process.env.HPA_CONVERSION_SEED === undefined
  ? 36_003
  : Number(process.env.HPA_CONVERSION_SEED);
const RUNS = 1000;

function agree(version: "v1" | "v2beta2", cases: Obj[]): void {
  const theirs = reference(version, cases);
  assert.equal(theirs.length, cases.length);
  cases.forEach((c, i) => {
    const mine = ours(structuredClone(c));
    assert.deepEqual(
      comparable(mine),
      comparable(theirs[i]),
      `HPA_CONVERSION_SEED=${SEED} ${version} case ${i}: ${JSON.stringify(c)}\n` +
        `kubernetes: ${JSON.stringify(theirs[i])}\nours: ${JSON.stringify(mine)}`,
    );
  });
}

describe("HPA conversion to autoscaling/v2 against Kubernetes' own", () => {
  it(`agrees on ${RUNS} generated autoscaling/v1 HPAs (HPA_CONVERSION_SEED=${SEED})`, () => {
    const g = new Gen(SEED);
    agree("v1", Array.from({ length: RUNS }, (_, i) => v1Case(g, i)));
  });

  it(`agrees on ${RUNS} generated autoscaling/v2beta2 HPAs (HPA_CONVERSION_SEED=${SEED})`, () => {
    const g = new Gen(SEED + 1);
    agree("v2beta2", Array.from({ length: RUNS }, (_, i) => v2beta2Case(g, i)));
  });

  it("the generated cases reach the annotations' interesting paths", () => {
    // each path the comparison is meant to cover is taken by some generated case
    const g = new Gen(SEED);
    const cases = Array.from({ length: RUNS }, (_, i) => v1Case(g, i));
    const converted = cases.map((c) => ours(structuredClone(c)).object!);
    const specs = converted.map((o) => o.spec as Obj);
    assert.ok(specs.some((s) => (s.metrics as Obj[]).length > 2), "several metrics");
    assert.ok(specs.some((s) => s.behavior !== undefined), "a behavior");
    assert.ok(converted.some((o) => (o.status as Obj | undefined)?.conditions), "conditions");
    assert.ok(
      cases.some((c) => {
        const a = (c.metadata as Obj).annotations as Obj | undefined;
        return a?.["autoscaling.alpha.kubernetes.io/metrics"] !== undefined &&
          (ours(c).object!.spec as Obj).metrics !== undefined &&
          JSON.stringify((ours(c).object!.spec as Obj).metrics).includes(
            '"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":80}}',
          );
      }),
      "an ignored metrics annotation and the default cpu metric",
    );
  });
});
