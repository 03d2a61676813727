// Manifest generators of the benchmark: what `serve --manifests DIR` reads.
//
//   serving set:  N HPAs, each with an Object metric on its own ScalingSchedule and an External
//                 json-path metric (own endpoint query), spread over namespaces, plus one HPA
//                 "web" with a Pods json-path metric over a Deployment of 50 pods.
//   fan-out set:  H HPAs x P pods: one Deployment per HPA, each pod on its own loopback address,
//                 a Pods json-path metric scraped at the given interval.
//   formula set:  H HPAs, each served one External formula metric over two hidden inputs: a Pods
//                 json-path metric on its P pods (each on its own loopback address) and an
//                 External json-path metric on its own queue endpoint.
//   shard set:    H HPAs, each with one External json-path metric on its own queue endpoint
//                 (one distinct query each), for kubectl in cluster mode.
//
// Files are YAML (block style, as people write them), one file per kind.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const yaml = require("js-yaml");

/** Namespaces the serving set spreads its HPAs over. */
export const SERVING_NAMESPACES = 20;
/** Pods behind the serving set's pods wildcard. */
export const SERVING_PODS = 50;
/** When every fake pod became Ready (long enough ago for any min-pod-ready-age). */
export const READY_SINCE = "2026-01-01T00:00:00Z";

const pad = (n, w = 5) => String(n).padStart(w, "0");

/** The loopback address of fake pod number `i` (0-based): 127.0.x.y, x >= 1, y in 1..250. */
export function podAddress(i, base = 1) {
  return `127.0.${base + Math.floor(i / 250)}.${1 + (i % 250)}`;
}

/** What fake pod number `i` answers as its rps (bench/fleet.mjs): a whole number plus 0.5. */
export function fakePodRps(i) {
  return (i % 97) + 0.5;
}

/** What the fake queue endpoint /queue/I answers as its length (bench/fleet.mjs). */
export function fakeQueueLength(i) {
  return i % 300;
}

function writeDocs(file, docs) {
  writeFileSync(file, docs.map((d) => yaml.dump(d, { lineWidth: -1, noRefs: true })).join("---\n"));
}

function pod(ns, name, labels, ip) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: ns, labels },
    spec: { containers: [{ name: "app", image: "example/app:1" }] },
    status: {
      phase: "Running",
      podIP: ip,
      conditions: [{ type: "Ready", status: "True", lastTransitionTime: READY_SINCE }],
    },
  };
}

function deployment(ns, name, labels, replicas) {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: ns },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: { containers: [{ name: "app", image: "example/app:1" }] },
      },
    },
  };
}

/**
 * An HPA with one Pods json-path metric (`$.rps` at /metrics on `port`) on `target` (a
 * Deployment, or `targetKind`), between `minReplicas` and `maxReplicas` (1 and 100).
 */
export function podsHpa(
  ns,
  name,
  target,
  { port, interval, metric = "rps", targetKind = "Deployment", minReplicas = 1, maxReplicas = 100 },
) {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: {
      name,
      namespace: ns,
      annotations: {
        [`metric-config.pods.${metric}.json-path/json-key`]: "$.rps",
        [`metric-config.pods.${metric}.json-path/port`]: String(port),
        [`metric-config.pods.${metric}.json-path/path`]: "/metrics",
        [`metric-config.pods.${metric}.json-path/interval`]: interval,
      },
    },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: targetKind, name: target },
      minReplicas,
      maxReplicas,
      metrics: [{
        type: "Pods",
        pods: { metric: { name: metric }, target: { type: "AverageValue", averageValue: "20" } },
      }],
    },
  };
}

/** Where the serving set's named objects are (for the request paths). */
export function servingNames(i) {
  const ns = `bench-${pad(i % SERVING_NAMESPACES, 2)}`;
  return { ns, hpa: `app-${pad(i)}`, schedule: `sched-${pad(i)}`, queue: `q-${pad(i)}` };
}

/**
 * The serving set's objects for `hpas` HPAs: { hpas, schedules, workloads, pods } (pods with
 * their status). The external endpoints are `http://127.0.0.1:PORT/queue/I`; the 50 pods of
 * "web" (the last HPA) are at podAddress(i, podBase):PORT.
 */
export function servingObjects({ hpas, port, podBase = 200, interval = "30s" }) {
  const hpaDocs = [];
  const schedules = [];
  for (let i = 0; i < hpas; i++) {
    const { ns, hpa, schedule, queue } = servingNames(i);
    schedules.push({
      apiVersion: "zalando.org/v1",
      kind: "ScalingSchedule",
      metadata: { name: schedule, namespace: ns },
      spec: {
        scalingWindowDurationMinutes: 10,
        schedules: [{
          type: "Repeating",
          period: {
            days: ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"],
            startTime: `${pad(i % 24, 2)}:${pad(i % 60, 2)}`,
            timezone: "UTC",
          },
          durationMinutes: 30,
          value: 10 + (i % 50),
        }],
      },
    });
    hpaDocs.push({
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: {
        name: hpa,
        namespace: ns,
        annotations: {
          [`metric-config.object.${schedule}.scaling-schedule/interval`]: interval,
          "metric-config.external.queue-length.json-path/endpoint":
            `http://127.0.0.1:${port}/queue/${i}`,
          "metric-config.external.queue-length.json-path/json-key": "$.length",
          "metric-config.external.queue-length.json-path/interval": interval,
        },
      },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: hpa },
        minReplicas: 1,
        maxReplicas: 50,
        metrics: [
          {
            type: "Object",
            object: {
              describedObject: {
                apiVersion: "zalando.org/v1",
                kind: "ScalingSchedule",
                name: schedule,
              },
              metric: { name: schedule },
              target: { type: "AverageValue", averageValue: "10" },
            },
          },
          {
            type: "External",
            external: {
              metric: {
                name: "queue-length",
                selector: { matchLabels: { type: "json-path", queue } },
              },
              target: { type: "AverageValue", averageValue: "30" },
            },
          },
        ],
      },
    });
  }
  const ns0 = servingNames(0).ns;
  const labels = { app: "web" };
  hpaDocs.push(podsHpa(ns0, "web", "web", { port, interval }));
  const pods = [];
  for (let p = 0; p < SERVING_PODS; p++) {
    pods.push(pod(ns0, `web-${pad(p, 3)}`, labels, podAddress(p, podBase)));
  }
  return {
    hpas: hpaDocs,
    schedules,
    workloads: [deployment(ns0, "web", labels, SERVING_PODS)],
    pods,
  };
}

/**
 * Write the serving set for `hpas` HPAs into `dir` (servingObjects: the external endpoints are
 * `http://127.0.0.1:PORT/queue/I`; the 50 pods of "web" are at podAddress(i, podBase):PORT).
 */
export function writeServingManifests(dir, opts) {
  mkdirSync(dir, { recursive: true });
  const o = servingObjects(opts);
  writeDocs(join(dir, "hpas.yaml"), o.hpas);
  writeDocs(join(dir, "schedules.yaml"), o.schedules);
  writeDocs(join(dir, "workloads.yaml"), o.workloads);
  writeDocs(join(dir, "pods.yaml"), o.pods);
  return {
    podAddresses: o.pods.map((p) => p.status.podIP),
  };
}

/** The three request paths of the serving benchmark, for HPA number `i` of the serving set. */
export function servingPaths(i) {
  const { ns, schedule, queue } = servingNames(i);
  const ns0 = servingNames(0).ns;
  return {
    object:
      `/apis/custom.metrics.k8s.io/v1beta2/namespaces/${ns}/scalingschedules.zalando.org/${schedule}/${schedule}`,
    pods:
      `/apis/custom.metrics.k8s.io/v1beta2/namespaces/${ns0}/pods/*/rps?labelSelector=app%3Dweb`,
    external:
      `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/queue-length?labelSelector=queue%3D${queue}%2Ctype%3Djson-path`,
  };
}

/**
 * The fan-out set's objects: `hpas` HPAs x `pods` pods, pod k of HPA h at
 * podAddress(h*pods+k): { hpas, workloads, pods, addresses }.
 */
export function fanoutObjects({ hpas, pods, port, interval }) {
  const hpaDocs = [];
  const workloads = [];
  const podDocs = [];
  const addresses = [];
  for (let h = 0; h < hpas; h++) {
    const { ns, hpa: name } = fanoutNames(h);
    const labels = { app: name };
    workloads.push(deployment(ns, name, labels, pods));
    hpaDocs.push(podsHpa(ns, name, name, { port, interval }));
    for (let k = 0; k < pods; k++) {
      const ip = podAddress(h * pods + k);
      addresses.push(ip);
      podDocs.push(pod(ns, `${name}-${pad(k, 2)}`, labels, ip));
    }
  }
  return { hpas: hpaDocs, workloads, pods: podDocs, addresses };
}

/** Where fan-out HPA number `h` is: its namespace and name (its Deployment's and pods' app). */
export function fanoutNames(h) {
  return { ns: `fan-${pad(h % 10, 2)}`, hpa: `svc-${pad(h)}` };
}

/** Write the fan-out set: `hpas` HPAs x `pods` pods, pod k of HPA h at podAddress(h*pods+k). */
export function writeFanoutManifests(dir, opts) {
  mkdirSync(dir, { recursive: true });
  const o = fanoutObjects(opts);
  writeDocs(join(dir, "hpas.yaml"), o.hpas);
  writeDocs(join(dir, "workloads.yaml"), o.workloads);
  writeDocs(join(dir, "pods.yaml"), o.pods);
  return { addresses: o.addresses };
}

/**
 * Write the fair-share set (issue 25): namespace `noisy` with `noisy` HPAs, each a Pods metric
 * on one pod, and namespace `quiet` with one such HPA, all collected every `interval`. Pod h of
 * the noisy HPAs is at podAddress(h), the quiet HPA's pod at podAddress(noisy).
 */
export function writeFairShareManifests(dir, { noisy, port, interval }) {
  mkdirSync(dir, { recursive: true });
  const hpaDocs = [];
  const workloads = [];
  const podDocs = [];
  for (let h = 0; h <= noisy; h++) {
    const ns = h < noisy ? "noisy" : "quiet";
    const name = `svc-${pad(h)}`;
    const labels = { app: name };
    workloads.push(deployment(ns, name, labels, 1));
    hpaDocs.push(podsHpa(ns, name, name, { port, interval }));
    podDocs.push(pod(ns, `${name}-00`, labels, podAddress(h)));
  }
  writeDocs(join(dir, "hpas.yaml"), hpaDocs);
  writeDocs(join(dir, "workloads.yaml"), workloads);
  writeDocs(join(dir, "pods.yaml"), podDocs);
}

/** The pods wildcard path of fan-out HPA number `h`. */
export function fanoutPath(h) {
  const { ns, hpa } = fanoutNames(h);
  return `/apis/custom.metrics.k8s.io/v1beta2/namespaces/${ns}/pods/*/rps?labelSelector=app%3D${hpa}`;
}

/** Namespaces the formula set spreads its HPAs over. */
export const FORMULA_NAMESPACES = 10;

/**
 * Where formula HPA number `h` is: its namespace, its name (also its Deployment's and its pods'
 * `app` label) and the name of its formula metric (one per HPA: a formula is served with the
 * labels {type: formula} only, so two HPAs of a namespace cannot share its name).
 */
export function formulaNames(h) {
  return {
    ns: `formula-${pad(h % FORMULA_NAMESPACES, 2)}`,
    hpa: `calc-${pad(h)}`,
    metric: `demand-${pad(h)}`,
  };
}

/**
 * The expressions of the formula set, one per HPA in turn, over the inputs `rps` (Pods: the sum
 * over the HPA's pods) and `queue_length` (External). Each also gives the exact value the
 * adapter must serve, in milli-units, from the inputs in milli-units: the fake values are
 * multiples of 0.5 (the sum over two pods a whole number), so every result is exact in floating
 * point, and `/ 32` of a number that is twice an odd one ends in half a milli, which the adapter
 * truncates (KEDA's int64(v * 1000)): 10 / 32 + 2 = 2.3125 is served as 2312m.
 */
export const FORMULAS = [
  { expression: "rps + queue_length", milli: (rps, q) => rps + q },
  { expression: "max(rps, queue_length) * 2", milli: (rps, q) => Math.max(rps, q) * 2 },
  { expression: "rps / 32 + queue_length", milli: (rps, q) => Math.floor(rps / 32) + q },
];

/**
 * Write the formula set: `hpas` HPAs, pod k of HPA h at podAddress(h*pods+k) on `port`, its queue
 * at http://127.0.0.1:PORT/queue/h (the fake fleet with `queue: true` serves both). Each HPA
 * has one External formula metric in spec.metrics and its two inputs only in annotations
 * (hidden: collected, not served), both collected at `interval`. Returns the pod addresses and,
 * per HPA, the value its formula must have in milli-units.
 */
export function writeFormulaManifests(dir, { hpas, pods, port, interval }) {
  mkdirSync(dir, { recursive: true });
  const hpaDocs = [];
  const workloads = [];
  const podDocs = [];
  const addresses = [];
  const expectedMilli = [];
  for (let h = 0; h < hpas; h++) {
    const { ns, hpa, metric } = formulaNames(h);
    const labels = { app: hpa };
    workloads.push(deployment(ns, hpa, labels, pods));
    let rpsMilli = 0;
    for (let k = 0; k < pods; k++) {
      const i = h * pods + k;
      const ip = podAddress(i);
      addresses.push(ip);
      podDocs.push(pod(ns, `${hpa}-${pad(k, 2)}`, labels, ip));
      rpsMilli += fakePodRps(i) * 1000;
    }
    const formula = FORMULAS[h % FORMULAS.length];
    expectedMilli.push(formula.milli(rpsMilli, fakeQueueLength(h) * 1000));
    const target = h % 2 === 0
      ? { type: "AverageValue", averageValue: "50" }
      : { type: "Value", value: "200" };
    hpaDocs.push({
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: {
        name: hpa,
        namespace: ns,
        annotations: {
          [`metric-config.external.${metric}.formula/expression`]: formula.expression,
          "metric-config.pods.rps.json-path/json-key": "$.rps",
          "metric-config.pods.rps.json-path/port": String(port),
          "metric-config.pods.rps.json-path/path": "/metrics",
          "metric-config.pods.rps.json-path/interval": interval,
          "metric-config.external.queue-length.json-path/endpoint":
            `http://127.0.0.1:${port}/queue/${h}`,
          "metric-config.external.queue-length.json-path/json-key": "$.length",
          "metric-config.external.queue-length.json-path/interval": interval,
        },
      },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: hpa },
        minReplicas: 1,
        maxReplicas: 100,
        metrics: [{
          type: "External",
          external: {
            metric: { name: metric, selector: { matchLabels: { type: "formula" } } },
            target,
          },
        }],
      },
    });
  }
  writeDocs(join(dir, "hpas.yaml"), hpaDocs);
  writeDocs(join(dir, "workloads.yaml"), workloads);
  writeDocs(join(dir, "pods.yaml"), podDocs);
  return { addresses, expectedMilli };
}

/** The external metrics path of formula HPA number `h`'s formula. */
export function formulaPath(h) {
  const { ns, metric } = formulaNames(h);
  return `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/${metric}?labelSelector=type%3Dformula`;
}

/**
 * Paths that must not answer a value: the hidden inputs of formula HPA number `h` (its pods'
 * `rps` and its `queue-length`, each without a selector naming it).
 */
export function formulaHiddenPaths(h) {
  const { ns, hpa } = formulaNames(h);
  return [
    `/apis/custom.metrics.k8s.io/v1beta2/namespaces/${ns}/pods/*/rps?labelSelector=app%3D${hpa}`,
    `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/queue-length`,
  ];
}

/** Namespaces the shard set spreads its HPAs over. */
export const SHARD_NAMESPACES = 8;

/** Where shard-set HPA number `h` is: its namespace and name (also its queue's label). */
export function shardNames(h) {
  return { ns: `shard-${pad(h % SHARD_NAMESPACES, 2)}`, hpa: `q-${pad(h)}` };
}

/** The external metric path of queue-shape HPA number `h`, as the HPA controller reads it. */
export function shardQueuePath(h) {
  const { ns, hpa } = shardNames(h);
  return `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/queue-length?labelSelector=queue%3D${hpa}%2Ctype%3Djson-path`;
}

/**
 * Write the shard set (issue 29, created with kubectl): `hpas` HPAs, HPA h with one External
 * json-path metric on http://127.0.0.1:PORT/queue/h (one distinct query, so one collection, per
 * HPA) collected every `interval`. Returns the namespaces.
 */
export function writeShardManifests(dir, { hpas, port, interval }) {
  mkdirSync(dir, { recursive: true });
  const hpaDocs = [];
  for (let h = 0; h < hpas; h++) {
    const { ns, hpa } = shardNames(h);
    hpaDocs.push({
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: {
        name: hpa,
        namespace: ns,
        annotations: {
          "metric-config.external.queue-length.json-path/endpoint":
            `http://127.0.0.1:${port}/queue/${h}`,
          "metric-config.external.queue-length.json-path/json-key": "$.length",
          "metric-config.external.queue-length.json-path/interval": interval,
        },
      },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: hpa },
        minReplicas: 1,
        maxReplicas: 50,
        metrics: [{
          type: "External",
          external: {
            metric: {
              name: "queue-length",
              selector: { matchLabels: { type: "json-path", queue: hpa } },
            },
            target: { type: "AverageValue", averageValue: "30" },
          },
        }],
      },
    });
  }
  writeDocs(join(dir, "hpas.yaml"), hpaDocs);
  const namespaces = [];
  for (let i = 0; i < Math.min(hpas, SHARD_NAMESPACES); i++) namespaces.push(shardNames(i).ns);
  return { namespaces };
}
