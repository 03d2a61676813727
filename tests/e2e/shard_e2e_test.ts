/**
 * End to end (issue 29): three adapter replicas with --shard-collection on the real control
 * plane, behind one Service (the harness lists the three in its endpoints; the aggregator picks
 * one per request). Every query is collected once per interval across the three, not three
 * times (counted at an HTTP endpoint this test serves on the harness's host address, and at the
 * pods of a Pods metric, which the harness's kubelet stand-in serves and counts), every
 * replica serves every value, and the real HPA controller keeps scaling a Deployment while a
 * replica is killed, while another stops, and after the killed one comes back. Queries to the
 * harness's real Prometheus are counted too (its own prometheus_http_requests_total).
 *
 * Run by `harness.ts test` in its fourth phase (HPA_E2E_SHARD_REPLICAS=3); without such a
 * harness every case is skipped (HPA_E2E_REQUIRED=1 turns that into a failure).
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { request as httpsRequest } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import process from "node:process";
import {
  applyEndpoints,
  E2E,
  readState,
  restartAdapterReplica,
  runningPid,
  STATE_DIR,
  waitFor,
} from "./harness.ts";
import { createKubeClient, loadKubeconfig } from "./kube_client.ts";
import type { KubeClient } from "./kube_client.ts";
import { ANNOTATIONS, REQUESTS_PATH } from "./kubelet.ts";

// deno-lint-ignore no-explicit-any
type Obj = any;

const state = readState();
const sharded = (state?.replicas?.length ?? 0) >= 3;
if (!sharded && process.env.HPA_E2E_REQUIRED) {
  throw new Error(
    "the e2e harness is not up with three sharded replicas: run `HPA_E2E_SHARD_REPLICAS=3 node --import tsx tests/e2e/harness.ts up` first",
  );
}
if (sharded && !state?.prometheus && process.env.HPA_E2E_REQUIRED) {
  throw new Error("the e2e harness runs no Prometheus (Debian package prometheus)");
}
const SKIP: string | false = !sharded
  ? "the e2e harness is not up with three replicas (HPA_E2E_SHARD_REPLICAS=3)"
  : !state?.prometheus
  ? "no Prometheus server (Debian package prometheus)"
  : false;
const kube: KubeClient | null = state ? createKubeClient(loadKubeconfig(state.kubeconfig)) : null;
const WAIT_MS = 60_000;
/** Queries counted: HPAs q0..q23, one External json-path metric each (every 1 s). */
const QUERIES = 24;
/** HPAs whose endpoint answers 500: each gets a Warning event from the leader, whoever collects. */
const BROKEN = 6;
/** HPAs p0..p3 with an External prometheus metric each (`vector(100 + i)`, every 1 s). */
const PROMQL = 4;
/** Pods of Deployment `scraped`, whose HPA has a Pods json-path metric (every 1 s). */
const SCRAPED_PODS = 2;
/** The port the `scraped` pods serve. */
const SCRAPED_PORT = 8080;
/** Every collection: the counted ones, web's, the broken ones, the PromQL ones, scraped's. */
const COLLECTIONS = QUERIES + 1 + BROKEN + PROMQL + 1;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One GET to a replica directly (the suite's admin certificate: system:masters). */
function replicaGet(ip: string, path: string): Promise<{ status: number; body: string }> {
  const pki = (f: string) => readFileSync(join(STATE_DIR, "pki", f), "utf8");
  return new Promise((resolve, reject) => {
    const req = httpsRequest({
      host: ip,
      port: E2E.adapterPort,
      path,
      ca: pki("ca.crt"),
      cert: pki("admin.crt"),
      key: pki("admin.key"),
      servername: `${E2E.adapterService}.${E2E.adapterNamespace}.svc`,
      timeout: 5_000,
    }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.on("timeout", () => req.destroy(new Error(`GET ${ip}${path}: timeout`)));
    req.end();
  });
}

/** A replica's own metric (first sample), or null when it does not answer. */
async function ownMetric(ip: string, name: string): Promise<number | null> {
  try {
    const text = await (await fetch(`http://${ip}:${E2E.adapterMetricsPort}/metrics`)).text();
    const line = text.split("\n").find((l) => l.startsWith(`${name} `));
    return line ? Number(line.split(" ")[1]) : null;
  } catch {
    return null;
  }
}

describe("e2e: three replicas share the collection", { skip: SKIP, timeout: 10 * 60_000 }, () => {
  const ns = `e2e-shard-${Math.random().toString(36).slice(2, 7)}`;
  const replicas = state?.replicas ?? [];
  const counts = new Map<string, number>();
  const answers = new Map<string, number>();
  let server: Server | null = null;
  let endpoint = "";

  before(async () => {
    // the backend every HPA reads, on the host's address in the harness's network
    server = createServer((req, res) => {
      const path = req.url ?? "/";
      counts.set(path, (counts.get(path) ?? 0) + 1);
      if (path.startsWith("/broken")) {
        res.writeHead(500, { "content-type": "text/plain" });
        res.end("backend down\n");
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ n: answers.get(path) ?? 0 }));
    });
    await new Promise<void>((r) => server!.listen(0, E2E.hostIp, r));
    endpoint = `http://${E2E.hostIp}:${(server.address() as AddressInfo).port}`;
    await kube!.request("POST", "/api/v1/namespaces", {
      body: { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } },
    });
    for (let i = 0; i < QUERIES; i++) {
      answers.set(`/q${i}`, i);
      await kube!.request(
        "POST",
        `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers`,
        {
          body: hpa(`q${i}`, `/q${i}`),
        },
      );
    }
    for (let i = 0; i < BROKEN; i++) {
      await kube!.request(
        "POST",
        `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers`,
        {
          body: hpa(`broken${i}`, `/broken${i}`),
        },
      );
    }
    for (let i = 0; i < PROMQL; i++) {
      const p = `metric-config.external.p${i}.prometheus/`;
      await kube!.request(
        "POST",
        `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers`,
        {
          body: {
            apiVersion: "autoscaling/v2",
            kind: "HorizontalPodAutoscaler",
            metadata: {
              name: `p${i}`,
              annotations: {
                [`${p}query`]: `vector(${100 + i})`,
                [`${p}prometheus-server`]: state!.prometheus!.url,
                [`${p}interval`]: "1s",
              },
            },
            spec: {
              scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: `p${i}` },
              minReplicas: 1,
              maxReplicas: 10,
              metrics: [{
                type: "External",
                external: {
                  metric: { name: `p${i}`, selector: { matchLabels: { type: "prometheus" } } },
                  target: { type: "AverageValue", averageValue: "10" },
                },
              }],
            },
          },
        },
      );
    }
    answers.set("/web", 30);
    await kube!.request("POST", `/apis/apps/v1/namespaces/${ns}/deployments`, {
      body: {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "web" },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: "web" } },
          template: {
            metadata: { labels: { app: "web" } },
            spec: { containers: [{ name: "web", image: "e2e/web" }] },
          },
        },
      },
    });
    await kube!.request("POST", `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers`, {
      body: {
        ...hpa("web", "/web"),
        spec: {
          ...hpa("web", "/web").spec,
          behavior: {
            scaleUp: {
              stabilizationWindowSeconds: 0,
              selectPolicy: "Max",
              policies: [{ type: "Percent", value: 900, periodSeconds: 1 }],
            },
            scaleDown: { selectPolicy: "Disabled" },
          },
        },
      },
    });
    // a Pods metric: the stand-in kubelet serves each pod and counts its requests
    await kube!.request("POST", `/apis/apps/v1/namespaces/${ns}/deployments`, {
      body: {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "scraped" },
        spec: {
          replicas: SCRAPED_PODS,
          selector: { matchLabels: { app: "scraped" } },
          template: {
            metadata: {
              labels: { app: "scraped" },
              annotations: { [ANNOTATIONS.metrics]: JSON.stringify({ rps: 4 }) },
            },
            spec: {
              containers: [{
                name: "app",
                image: "e2e/scraped",
                ports: [{ containerPort: SCRAPED_PORT }],
              }],
            },
          },
        },
      },
    });
    const p = "metric-config.pods.rps.json-path/";
    await kube!.request("POST", `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers`, {
      body: {
        apiVersion: "autoscaling/v2",
        kind: "HorizontalPodAutoscaler",
        metadata: {
          name: "scraped",
          annotations: {
            [`${p}json-key`]: "$.rps",
            [`${p}port`]: String(SCRAPED_PORT),
            [`${p}path`]: "/metrics",
            [`${p}interval`]: "1s",
          },
        },
        spec: {
          scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "scraped" },
          minReplicas: SCRAPED_PODS,
          maxReplicas: SCRAPED_PODS,
          metrics: [{
            type: "Pods",
            pods: { metric: { name: "rps" }, target: { type: "AverageValue", averageValue: "10" } },
          }],
        },
      },
    });
  });

  after(async () => {
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    if (!process.env.HPA_E2E_KEEP) {
      await kube!.request("DELETE", `/api/v1/namespaces/${ns}`).catch(() => {});
    }
  });

  function hpa(name: string, path: string): Obj {
    return {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: {
        name,
        annotations: {
          [`metric-config.external.${name}.json-path/endpoint`]: `${endpoint}${path}`,
          [`metric-config.external.${name}.json-path/json-key`]: "$.n",
          [`metric-config.external.${name}.json-path/interval`]: "1s",
        },
      },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name },
        minReplicas: 1,
        maxReplicas: 10,
        metrics: [{
          type: "External",
          external: {
            metric: { name, selector: { matchLabels: { type: "json-path" } } },
            target: { type: "AverageValue", averageValue: "10" },
          },
        }],
      },
    };
  }

  /** Waits until the live replicas agree: each sees `live` members, their shares add up. */
  async function sharesSettled(live: { ip: string }[]): Promise<number[]> {
    return await waitFor(async () => {
      const owned: number[] = [];
      for (const r of live) {
        if (await ownMetric(r.ip, "hpa_metrics_adapter_shard_members") !== live.length) {
          return false;
        }
        if (await ownMetric(r.ip, "hpa_metrics_adapter_shard_collections") !== COLLECTIONS) {
          return false;
        }
        owned.push((await ownMetric(r.ip, "hpa_metrics_adapter_shard_owned_collections")) ?? -1);
      }
      return owned.reduce((a, b) => a + b, 0) === COLLECTIONS ? owned : false;
    }, { what: `${live.length} replicas sharing ${COLLECTIONS} collections`, timeoutMs: WAIT_MS });
  }

  /** How often each query was collected in `seconds` (all replicas together). */
  async function collectionsIn(seconds: number): Promise<number[]> {
    const before = new Map(counts);
    await sleep(seconds * 1000);
    return Array.from(
      { length: QUERIES },
      (_, i) => (counts.get(`/q${i}`) ?? 0) - (before.get(`/q${i}`) ?? 0),
    );
  }

  /** The addresses of the `scraped` pods, once the stand-in kubelet gave them one each. */
  async function scrapedPodIps(): Promise<string[]> {
    return await waitFor(async () => {
      const pods = await kube!.request(
        "GET",
        `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Dscraped`,
      );
      const ips = (pods.items ?? []).map((x: Obj) => x.status?.podIP).filter(Boolean);
      return ips.length === SCRAPED_PODS ? ips.sort() : false;
    }, { what: `${SCRAPED_PODS} scraped pods with addresses`, timeoutMs: WAIT_MS });
  }

  /** The requests each pod at `ips` has answered so far (the stand-in kubelet's count). */
  async function podRequests(ips: string[]): Promise<number[]> {
    return await Promise.all(ips.map(async (ip) => {
      const r = await fetch(`http://${ip}:${SCRAPED_PORT}${REQUESTS_PATH}`);
      return (await r.json()).requests as number;
    }));
  }

  /** Instant queries the harness's Prometheus has answered so far. */
  async function promQueries(): Promise<number> {
    const text = await (await fetch(`${state!.prometheus!.url}/metrics`)).text();
    const line = text.split("\n").find((l) =>
      l.startsWith("prometheus_http_requests_total{") && l.includes('code="200"') &&
      l.includes('handler="/api/v1/query"')
    );
    return line ? Number(line.split(" ").at(-1)) : 0;
  }

  /** Every replica in `live` serves q0..q23 with their values. */
  async function everyReplicaServesEverything(live: { ip: string }[]): Promise<void> {
    for (const r of live) {
      await waitFor(async () => {
        for (let i = 0; i < QUERIES; i++) {
          const res = await replicaGet(
            r.ip,
            `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/q${i}`,
          );
          if (res.status !== 200) throw new Error(`q${i} on ${r.ip}: ${res.status} ${res.body}`);
          const items = JSON.parse(res.body).items;
          if (items.length !== 1 || items[0].value !== String(i)) {
            throw new Error(`q${i} on ${r.ip}: ${res.body}`);
          }
        }
        for (let i = 0; i < PROMQL; i++) {
          const res = await replicaGet(
            r.ip,
            `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/p${i}?labelSelector=type%3Dprometheus`,
          );
          const items = res.status === 200 ? JSON.parse(res.body).items : [];
          if (items.length !== 1 || items[0].value !== String(100 + i)) {
            throw new Error(`p${i} on ${r.ip}: ${res.status} ${res.body}`);
          }
        }
        const pods = await replicaGet(
          r.ip,
          `/apis/custom.metrics.k8s.io/v1beta2/namespaces/${ns}/pods/*/rps?labelSelector=app%3Dscraped`,
        );
        const values = pods.status === 200
          ? JSON.parse(pods.body).items.map((x: Obj) => x.value)
          : [];
        if (values.length !== SCRAPED_PODS || values.some((v: string) => v !== "4")) {
          throw new Error(`scraped pods on ${r.ip}: ${pods.status} ${pods.body}`);
        }
        return true;
      }, { what: `every value on ${r.ip}`, timeoutMs: WAIT_MS });
    }
  }

  async function expectWebReplicas(replicas: number): Promise<void> {
    let last: Obj = null;
    try {
      await waitFor(async () => {
        last = await kube!.request(
          "GET",
          `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers/web`,
        );
        const d = await kube!.request("GET", `/apis/apps/v1/namespaces/${ns}/deployments/web`);
        return last.status?.desiredReplicas === replicas && d.spec.replicas === replicas;
      }, { what: `Deployment web at ${replicas} replicas`, timeoutMs: WAIT_MS });
    } catch (e) {
      throw new Error(
        `${(e as Error).message}: ${JSON.stringify(last?.status ?? null)}`,
      );
    }
  }

  it("collects each query once per interval across the three, and each serves every value", async () => {
    const owned = await sharesSettled(replicas);
    for (const n of owned) assert.ok(n >= 1, `every replica owns a share: ${owned}`);
    await everyReplicaServesEverything(replicas);
    // 1 s interval: about 6 collections in 6 s; three replicas each collecting would be ~18
    const podIps = await scrapedPodIps();
    const queriesBefore = await promQueries();
    const scrapesBefore = await podRequests(podIps);
    const collected = await collectionsIn(6);
    const scrapes = (await podRequests(podIps)).map((n, k) => n - scrapesBefore[k]);
    const promql = (await promQueries()) - queriesBefore;
    for (const [i, n] of collected.entries()) {
      assert.ok(n >= 3 && n <= 9, `q${i} collected ${n} times in 6 s: ${collected}`);
    }
    // and each pod of the Pods metric is scraped about once a second, not three times
    for (const [k, n] of scrapes.entries()) {
      assert.ok(n >= 3 && n <= 9, `pod ${podIps[k]} scraped ${n} times in 6 s: ${scrapes}`);
    }
    // and the PromQL metrics: ~24 queries to Prometheus in 6 s, ~72 if each replica asked
    assert.ok(
      promql >= PROMQL * 3 && promql <= PROMQL * 9,
      `${promql} queries to Prometheus in 6 s for ${PROMQL} metrics`,
    );
    await expectWebReplicas(3);
    // the leader writes the Warning events of every replica's failed collections
    for (let i = 0; i < BROKEN; i++) {
      await waitFor(async () => {
        const events = await kube!.request(
          "GET",
          `/api/v1/namespaces/${ns}/events?fieldSelector=${
            encodeURIComponent(`involvedObject.name=broken${i}`)
          }`,
        );
        return (events.items ?? []).some((e: Obj) =>
          e.type === "Warning" && e.reason === "CreateNewMetricsCollector" &&
          e.message.startsWith(`failed to collect External metric broken${i}: `)
        );
      }, { what: `a Warning event on HPA broken${i}`, timeoutMs: WAIT_MS });
    }
  });

  it("keeps collecting and scaling when a replica is killed, another stops, and one comes back", async () => {
    const [first, second, third] = replicas;
    // killed: no chance to delete its Lease; its share moves once the Lease expires
    const pid = runningPid(third.name);
    assert.ok(pid, `${third.name} runs`);
    process.kill(pid, "SIGKILL");
    // what the endpoints controller would do once the pod is gone
    applyEndpoints([first.ip, second.ip]);
    await sharesSettled([first, second]);
    await sleep(1_500);
    let collected = await collectionsIn(5);
    for (const [i, n] of collected.entries()) {
      assert.ok(n >= 2 && n <= 8, `q${i} collected ${n} times in 5 s after the kill: ${collected}`);
    }
    await everyReplicaServesEverything([first, second]);
    answers.set("/web", 50);
    await expectWebReplicas(5);

    // stopped: it deletes its Lease, the last replica takes everything within a retry period
    const pid2 = runningPid(second.name);
    assert.ok(pid2, `${second.name} runs`);
    applyEndpoints([first.ip]);
    process.kill(pid2, "SIGTERM");
    await waitFor(() => runningPid(second.name) === null, {
      what: `${second.name} stopped`,
      timeoutMs: 15_000,
    });
    const alone = await sharesSettled([first]);
    assert.deepEqual(alone, [COLLECTIONS]);
    await sleep(1_500);
    collected = await collectionsIn(4);
    for (const [i, n] of collected.entries()) {
      assert.ok(n >= 2 && n <= 6, `q${i} collected ${n} times in 4 s by one replica: ${collected}`);
    }

    // the killed one comes back: it gets every value from the other at once and its share
    restartAdapterReplica(third);
    await sharesSettled([first, third]);
    applyEndpoints([first.ip, third.ip]);
    await everyReplicaServesEverything([first, third]);
    answers.set("/web", 70);
    await expectWebReplicas(7);
  });
});
