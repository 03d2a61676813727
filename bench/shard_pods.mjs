// The pods shape of the sharded-collection row (issue 29): the fan-out fleet's work on the e2e
// control plane. `hpas` HPAs, each a Pods json-path metric on its StatefulSet's `pods` pods,
// every pod a loopback address inside the harness's network namespace (127.0.x.y, answered by
// bench/fleet.mjs there), so one collection is `pods` scrapes and one record to the peers.
//
// Why a StatefulSet: the harness runs the deployment and replica set controllers, which would
// adopt (and delete) pods that match a Deployment's selector; nothing manages a StatefulSet
// there. Pods are bound to a node no kubelet serves (`bench-node`: the harness's kubelet
// stand-in leaves pods of other nodes alone) and their status (Running, Ready, the address) is
// written through the status subresource, which `kubectl create` ignores.
import { mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fakePodRps, podAddress, podsHpa, READY_SINCE } from "./manifests.mjs";

const yaml = createRequire(import.meta.url)("js-yaml");

/** Namespaces the pods shape spreads its HPAs over. */
export const SHARD_PODS_NAMESPACES = 10;

const pad = (n, w = 5) => String(n).padStart(w, "0");

/** Where pods-shape HPA number `h` is: its namespace and name (also its pods' `app` label). */
export function shardPodsNames(h) {
  return { ns: `shard-pods-${pad(h % SHARD_PODS_NAMESPACES, 2)}`, name: `fan-${pad(h)}` };
}

function writeDocs(file, docs) {
  writeFileSync(file, docs.map((d) => yaml.dump(d, { lineWidth: -1, noRefs: true })).join("---\n"));
}

/**
 * Write the pods shape: namespaces.yaml, workloads.yaml (StatefulSets), pods.yaml (with their
 * status, for `kubectl create` and then `kubectl replace --subresource=status`) and hpas.yaml.
 * Pod k of HPA h is fake pod number h*pods+k (podAddress, fakePodRps). Returns the namespaces,
 * the number of pods and each HPA's exact value (the average of its pods' rps).
 */
export function writeShardPodsManifests(dir, { hpas, pods, port, interval }) {
  mkdirSync(dir, { recursive: true });
  const namespaces = [];
  for (let i = 0; i < Math.min(hpas, SHARD_PODS_NAMESPACES); i++) {
    namespaces.push(shardPodsNames(i).ns);
  }
  const workloads = [];
  const podDocs = [];
  const hpaDocs = [];
  const expected = [];
  for (let h = 0; h < hpas; h++) {
    const { ns, name } = shardPodsNames(h);
    const labels = { app: name };
    workloads.push({
      apiVersion: "apps/v1",
      kind: "StatefulSet",
      metadata: { name, namespace: ns },
      spec: {
        replicas: pods,
        serviceName: name,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: { containers: [{ name: "app", image: "example/app:1" }] },
        },
      },
    });
    let sum = 0;
    for (let k = 0; k < pods; k++) {
      const i = h * pods + k;
      const ip = podAddress(i);
      sum += fakePodRps(i);
      podDocs.push({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: `${name}-${k}`, namespace: ns, labels },
        spec: {
          nodeName: "bench-node",
          automountServiceAccountToken: false,
          containers: [{ name: "app", image: "example/app:1" }],
        },
        status: {
          phase: "Running",
          podIP: ip,
          podIPs: [{ ip }],
          conditions: [{ type: "Ready", status: "True", lastTransitionTime: READY_SINCE }],
        },
      });
    }
    expected.push(sum / pods);
    // the HPA controller reads every value every sync but keeps the pods as they are:
    // scaling the StatefulSets (which nothing here runs) would only churn updates
    hpaDocs.push(podsHpa(ns, name, name, {
      port,
      interval,
      targetKind: "StatefulSet",
      minReplicas: pods,
      maxReplicas: pods,
    }));
  }
  writeDocs(
    join(dir, "namespaces.yaml"),
    namespaces.map((name) => ({ apiVersion: "v1", kind: "Namespace", metadata: { name } })),
  );
  writeDocs(join(dir, "workloads.yaml"), workloads);
  writeDocs(join(dir, "pods.yaml"), podDocs);
  writeDocs(join(dir, "hpas.yaml"), hpaDocs);
  return { namespaces, pods: hpas * pods, expected };
}

/** The pods wildcard path of pods-shape HPA number `h`. */
export function shardPodsPath(h) {
  const { ns, name } = shardPodsNames(h);
  return `/apis/custom.metrics.k8s.io/v1beta2/namespaces/${ns}/pods/*/rps?labelSelector=app%3D${name}`;
}
