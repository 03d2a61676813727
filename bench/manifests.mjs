// Manifest generators of the benchmark: what `serve --manifests DIR` reads.
//
//   serving set:  N HPAs, each with an Object metric on its own ScalingSchedule and an External
//                 json-path metric (own endpoint query), spread over namespaces, plus one HPA
//                 "web" with a Pods json-path metric over a Deployment of 50 pods.
//   fan-out set:  H HPAs x P pods: one Deployment per HPA, each pod on its own loopback address,
//                 a Pods json-path metric scraped at the given interval.
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

function podsHpa(ns, name, target, { port, interval, metric = "rps" }) {
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
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: target },
      minReplicas: 1,
      maxReplicas: 100,
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
 * Write the serving set for `hpas` HPAs into `dir`. The external endpoints are
 * `http://127.0.0.1:PORT/queue/I`; the 50 pods of "web" are at podAddress(i, podBase):PORT.
 */
export function writeServingManifests(dir, { hpas, port, podBase = 200, interval = "30s" }) {
  mkdirSync(dir, { recursive: true });
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
  writeDocs(join(dir, "hpas.yaml"), hpaDocs);
  writeDocs(join(dir, "schedules.yaml"), schedules);
  writeDocs(join(dir, "workloads.yaml"), [deployment(ns0, "web", labels, SERVING_PODS)]);
  writeDocs(join(dir, "pods.yaml"), pods);
  return {
    podAddresses: pods.map((p) => p.status.podIP),
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

/** Write the fan-out set: `hpas` HPAs x `pods` pods, pod k of HPA h at podAddress(h*pods+k). */
export function writeFanoutManifests(dir, { hpas, pods, port, interval }) {
  mkdirSync(dir, { recursive: true });
  const hpaDocs = [];
  const workloads = [];
  const podDocs = [];
  const addresses = [];
  for (let h = 0; h < hpas; h++) {
    const ns = `fan-${pad(h % 10, 2)}`;
    const name = `svc-${pad(h)}`;
    const labels = { app: name };
    workloads.push(deployment(ns, name, labels, pods));
    hpaDocs.push(podsHpa(ns, name, name, { port, interval }));
    for (let k = 0; k < pods; k++) {
      const ip = podAddress(h * pods + k);
      addresses.push(ip);
      podDocs.push(pod(ns, `${name}-${pad(k, 2)}`, labels, ip));
    }
  }
  writeDocs(join(dir, "hpas.yaml"), hpaDocs);
  writeDocs(join(dir, "workloads.yaml"), workloads);
  writeDocs(join(dir, "pods.yaml"), podDocs);
  return { addresses };
}

/** The pods wildcard path of fan-out HPA number `h`. */
export function fanoutPath(h) {
  const ns = `fan-${pad(h % 10, 2)}`;
  return `/apis/custom.metrics.k8s.io/v1beta2/namespaces/${ns}/pods/*/rps?labelSelector=app%3Dsvc-${
    pad(h)
  }`;
}
