/**
 * Creates the pods shape's StatefulSets and pods (bench/shard_pods.mjs) on the e2e control
 * plane, 32 requests at a time, and writes each pod's status (Running, Ready, its address)
 * through the status subresource, which a create ignores. kubectl does the same one object at a
 * time and took minutes of CPU for 4,000 pods.
 *
 * usage: node --import tsx bench/shard_pods_apply.ts KUBECONFIG DIR
 * prints one line `{"statefulSets":N,"pods":N,"seconds":S}`.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import process from "node:process";
import { createKubeClient, loadKubeconfig } from "../tests/e2e/kube_client.ts";
// @ts-ignore: a plain ES module of the bench
import { mapLimit } from "./lib.mjs";

const yaml = createRequire(import.meta.url)("js-yaml");
const [kubeconfig, dir] = process.argv.slice(2);
if (!kubeconfig || !dir) {
  console.error("usage: node --import tsx bench/shard_pods_apply.ts KUBECONFIG DIR");
  process.exit(2);
}
const client = createKubeClient(loadKubeconfig(kubeconfig));
// deno-lint-ignore no-explicit-any
type Obj = any;
const docs = (file: string): Obj[] =>
  yaml.loadAll(readFileSync(join(dir, file), "utf8")).filter(Boolean);

const t0 = performance.now();
const sets = docs("workloads.yaml");
await mapLimit(sets, 32, async (s) => {
  await client.request("POST", `/apis/apps/v1/namespaces/${s.metadata.namespace}/statefulsets`, {
    body: s,
  });
});
const pods = docs("pods.yaml");
await mapLimit(pods, 32, async (p) => {
  const { status, ...rest } = p;
  const ns = p.metadata.namespace;
  const created = await client.request("POST", `/api/v1/namespaces/${ns}/pods`, { body: rest });
  await client.request("PUT", `/api/v1/namespaces/${ns}/pods/${p.metadata.name}/status`, {
    body: { ...created, status: { ...created.status, ...status } },
  });
});
console.log(JSON.stringify({
  statefulSets: sets.length,
  pods: pods.length,
  seconds: Math.round(performance.now() - t0) / 1000,
}));
