/**
 * The kubelet stand-in of the end-to-end harness. No real kubelet runs, so this small
 * controller binds new pods to its node, gives each an address from the namespace's pool,
 * marks it Running and Ready through the status subresource, finishes graceful deletions, and
 * serves every TCP containerPort of the pod on the pod's address with a JSON body the test
 * sets through annotations:
 *
 * - `e2e.hpa-metrics-adapter/metrics`: the body served on every path (default `{}`)
 * - `e2e.hpa-metrics-adapter/content-type`: its type (default `application/json`)
 * - `e2e.hpa-metrics-adapter/answer`: `ok` (default), `hang` (accept, never answer),
 *   `refuse` (close the listeners), `error` (HTTP 500)
 * - `e2e.hpa-metrics-adapter/ready`: `false` marks the pod not Ready
 *
 * `GET /e2e/requests` on any of a pod's ports answers `{"requests":N}`: the requests the pod's
 * endpoints answered so far (this one not counted), for tests that count scrapes.
 *
 * It runs inside the harness's network namespace (the addresses exist only there):
 *   ip netns exec hpa-e2e node --import tsx tests/e2e/kubelet.ts --kubeconfig=F --node=N \
 *     --host-ip=10.213.0.2 --addresses=10.213.0.10-10.213.0.99
 */
import { createServer } from "node:http";
import type { Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createKubeClient, KubeApiError, loadKubeconfig } from "./kube_client.ts";
import type { KubeClient, WatchEvent } from "./kube_client.ts";

/** Annotation keys the stand-in reads. */
export const ANNOTATIONS = {
  metrics: "e2e.hpa-metrics-adapter/metrics",
  contentType: "e2e.hpa-metrics-adapter/content-type",
  answer: "e2e.hpa-metrics-adapter/answer",
  ready: "e2e.hpa-metrics-adapter/ready",
} as const;

/** How a pod's endpoint behaves. */
export type PodAnswer = "ok" | "hang" | "refuse" | "error";

// deno-lint-ignore no-explicit-any
type Pod = any;

/** Options of {@linkcode startKubelet}. */
export interface KubeletOptions {
  client: KubeClient;
  nodeName: string;
  hostIp: string;
  /** The pod address pool, in order. */
  addresses: string[];
  log?: (message: string) => void;
}

/** A running stand-in. */
export interface Kubelet {
  stop(): Promise<void>;
}

interface PodEntry {
  uid: string;
  ip: string;
  pod: Pod;
  servers: Map<number, Server>;
  sockets: Set<Socket>;
  hanging: Set<ServerResponse>;
  /** Requests answered on the pod's ports (not counting `/e2e/requests`). */
  requests: number;
}

/** The path on which a pod tells how many requests it answered. */
export const REQUESTS_PATH = "/e2e/requests";

/** Expand `10.213.0.10-10.213.0.99` (last octet range) or a comma list into addresses. */
export function expandAddresses(spec: string): string[] {
  const out: string[] = [];
  for (const part of spec.split(",").map((s) => s.trim()).filter(Boolean)) {
    const m = part.match(/^(\d+\.\d+\.\d+)\.(\d+)-\1\.(\d+)$/);
    if (m) {
      for (let i = Number(m[2]); i <= Number(m[3]); i++) out.push(`${m[1]}.${i}`);
    } else if (/^\d+\.\d+\.\d+\.\d+$/.test(part)) out.push(part);
    else throw new Error(`invalid address range "${part}" for --addresses`);
  }
  return out;
}

function answerOf(pod: Pod): PodAnswer {
  const a = pod.metadata?.annotations?.[ANNOTATIONS.answer] ?? "ok";
  return ["ok", "hang", "refuse", "error"].includes(a) ? a : "ok";
}

function podKey(pod: Pod): string {
  return `${pod.metadata.namespace}/${pod.metadata.name}`;
}

/** Start the stand-in: list and watch all pods until stopped. */
export function startKubelet(options: KubeletOptions): Kubelet {
  const { client, nodeName, hostIp } = options;
  const log = options.log ??
    ((m: string) => process.stdout.write(`${new Date().toISOString()} ${m}\n`));
  const entries = new Map<string, PodEntry>();
  const queues = new Map<string, Promise<void>>();
  const abort = new AbortController();

  function takenIps(): Set<string> {
    return new Set([...entries.values()].map((e) => e.ip));
  }

  function allocate(pod: Pod): string {
    const taken = takenIps();
    const previous = pod.status?.podIP;
    if (previous && options.addresses.includes(previous) && !taken.has(previous)) return previous;
    const free = options.addresses.find((a) => !taken.has(a));
    if (!free) throw new Error(`no free pod address for ${podKey(pod)}`);
    return free;
  }

  function handle(entry: PodEntry, path: string, res: ServerResponse): void {
    if (path === REQUESTS_PATH) {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ requests: entry.requests }));
      return;
    }
    entry.requests++;
    const pod = entry.pod;
    switch (answerOf(pod)) {
      case "hang":
        entry.hanging.add(res);
        res.on("close", () => entry.hanging.delete(res));
        return;
      case "error":
        res.statusCode = 500;
        res.end("injected failure\n");
        return;
      default: {
        res.setHeader(
          "content-type",
          pod.metadata?.annotations?.[ANNOTATIONS.contentType] ?? "application/json",
        );
        res.end(pod.metadata?.annotations?.[ANNOTATIONS.metrics] ?? "{}");
      }
    }
  }

  function containerPorts(pod: Pod): number[] {
    const ports = new Set<number>();
    for (const c of pod.spec?.containers ?? []) {
      for (const p of c.ports ?? []) {
        if ((p.protocol ?? "TCP") === "TCP" && p.containerPort) ports.add(p.containerPort);
      }
    }
    return [...ports];
  }

  async function closeServers(entry: PodEntry): Promise<void> {
    for (const res of entry.hanging) res.destroy();
    entry.hanging.clear();
    const closing = [...entry.servers.values()].map((s) =>
      new Promise<void>((r) => s.close(() => r()))
    );
    for (const sock of entry.sockets) sock.destroy();
    entry.sockets.clear();
    entry.servers.clear();
    await Promise.all(closing);
  }

  async function ensureServers(entry: PodEntry): Promise<void> {
    if (answerOf(entry.pod) === "refuse") {
      if (entry.servers.size > 0) {
        log(`${podKey(entry.pod)}: refusing connections`);
        await closeServers(entry);
      }
      return;
    }
    for (const port of containerPorts(entry.pod)) {
      if (entry.servers.has(port)) continue;
      const server = createServer((req, res) => handle(entry, req.url ?? "/", res));
      server.on("connection", (sock) => {
        entry.sockets.add(sock);
        sock.on("close", () => entry.sockets.delete(sock));
      });
      await new Promise<void>((resolveListen, reject) => {
        server.once("error", reject);
        server.listen(port, entry.ip, () => resolveListen());
      });
      entry.servers.set(port, server);
      log(`${podKey(entry.pod)}: serving ${entry.ip}:${port}`);
    }
  }

  async function release(uid: string): Promise<void> {
    const entry = entries.get(uid);
    if (!entry) return;
    entries.delete(uid);
    await closeServers(entry);
    log(`${podKey(entry.pod)}: released ${entry.ip}`);
  }

  // deno-lint-ignore no-explicit-any
  function condition(pod: Pod, type: string): any {
    // deno-lint-ignore no-explicit-any
    return (pod.status?.conditions ?? []).find((c: any) => c.type === type);
  }

  async function syncStatus(entry: PodEntry): Promise<void> {
    const pod = entry.pod;
    const ready = pod.metadata?.annotations?.[ANNOTATIONS.ready] !== "false";
    const readyStatus = ready ? "True" : "False";
    const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    const current = condition(pod, "Ready");
    if (
      pod.status?.phase === "Running" && pod.status?.podIP === entry.ip &&
      current?.status === readyStatus
    ) return;
    const started = pod.status?.startTime ?? now;
    const cond = (type: string, status: string): unknown => {
      const prev = condition(pod, type);
      return {
        type,
        status,
        lastProbeTime: null,
        lastTransitionTime: prev && prev.status === status ? prev.lastTransitionTime : now,
      };
    };
    const status = {
      phase: "Running",
      hostIP: hostIp,
      hostIPs: [{ ip: hostIp }],
      podIP: entry.ip,
      podIPs: [{ ip: entry.ip }],
      startTime: started,
      conditions: [
        cond("PodScheduled", "True"),
        cond("Initialized", "True"),
        cond("ContainersReady", readyStatus),
        cond("Ready", readyStatus),
      ],
      // deno-lint-ignore no-explicit-any
      containerStatuses: (pod.spec?.containers ?? []).map((c: any) => ({
        name: c.name,
        image: c.image,
        imageID: "",
        ready,
        started: true,
        restartCount: 0,
        state: { running: { startedAt: started } },
      })),
    };
    const ns = pod.metadata.namespace;
    const updated = await client.request(
      "PATCH",
      `/api/v1/namespaces/${ns}/pods/${pod.metadata.name}/status`,
      {
        body: { status },
        contentType: "application/merge-patch+json",
      },
    );
    entry.pod = updated;
    log(`${podKey(pod)}: Running at ${entry.ip}, Ready=${readyStatus}`);
  }

  async function reconcile(event: WatchEvent): Promise<void> {
    const pod = event.object;
    const uid = pod.metadata.uid as string;
    const ns = pod.metadata.namespace;
    const name = pod.metadata.name;
    if (event.type === "DELETED") return await release(uid);
    if (pod.metadata.deletionTimestamp) {
      if (pod.spec?.nodeName !== nodeName) return;
      await release(uid);
      // the kubelet's part of a graceful deletion: containers stopped, remove the object now
      try {
        await client.request("DELETE", `/api/v1/namespaces/${ns}/pods/${name}`, {
          body: {
            kind: "DeleteOptions",
            apiVersion: "v1",
            gracePeriodSeconds: 0,
            preconditions: { uid },
          },
        });
        log(`${podKey(pod)}: deleted`);
      } catch (err) {
        if (!(err instanceof KubeApiError && (err.status === 404 || err.status === 409))) throw err;
      }
      return;
    }
    if (!pod.spec?.nodeName) {
      await client.request("POST", `/api/v1/namespaces/${ns}/pods/${name}/binding`, {
        body: {
          apiVersion: "v1",
          kind: "Binding",
          metadata: { name, namespace: ns, uid },
          target: { apiVersion: "v1", kind: "Node", name: nodeName },
        },
      });
      log(`${podKey(pod)}: bound to ${nodeName}`);
      return;
    }
    if (pod.spec.nodeName !== nodeName) return;
    if (pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed") {
      return await release(uid);
    }
    let entry = entries.get(uid);
    if (!entry) {
      entry = {
        uid,
        ip: allocate(pod),
        pod,
        servers: new Map(),
        sockets: new Set(),
        hanging: new Set(),
        requests: 0,
      };
      entries.set(uid, entry);
    }
    entry.pod = pod;
    await syncStatus(entry);
    await ensureServers(entry);
  }

  function enqueue(event: WatchEvent): void {
    const uid = event.object?.metadata?.uid;
    if (!uid) return;
    const previous = queues.get(uid) ?? Promise.resolve();
    const next = previous.then(() => reconcile(event)).catch((err) => {
      if (abort.signal.aborted) return;
      log(`${podKey(event.object)}: ${(err as Error).message}; retrying`);
      setTimeout(() => {
        if (abort.signal.aborted || event.type === "DELETED") return;
        const { namespace, name } = event.object.metadata;
        client.get(`/api/v1/namespaces/${namespace}/pods/${name}`).then((pod) => {
          if (pod && pod.metadata.uid === uid) enqueue({ type: "MODIFIED", object: pod });
        }, () => enqueue(event));
      }, 1_000);
    });
    queues.set(uid, next);
    next.finally(() => {
      if (queues.get(uid) === next) queues.delete(uid);
    });
  }

  async function run(): Promise<void> {
    while (!abort.signal.aborted) {
      try {
        const list = await client.request("GET", "/api/v1/pods");
        const seen = new Set<string>();
        for (const pod of list.items) {
          seen.add(pod.metadata.uid);
          enqueue({ type: "ADDED", object: pod });
        }
        for (const uid of entries.keys()) {
          if (!seen.has(uid)) enqueue({ type: "DELETED", object: entries.get(uid)!.pod });
        }
        let rv = list.metadata.resourceVersion;
        await client.watch(`/api/v1/pods?resourceVersion=${rv}`, (event) => {
          if (event.type === "ERROR") {
            throw new Error(`watch error: ${JSON.stringify(event.object)}`);
          }
          rv = event.object?.metadata?.resourceVersion ?? rv;
          if (event.type !== "BOOKMARK") enqueue(event);
        }, abort.signal);
      } catch (err) {
        if (abort.signal.aborted) break;
        log(`pod watch: ${(err as Error).message}; re-listing`);
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  const running = run();
  return {
    async stop(): Promise<void> {
      abort.abort();
      await running;
      await Promise.all([...entries.keys()].map(release));
    },
  };
}

function parseArgs(argv: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const a of argv) {
    const m = a.match(/^--([a-z-]+)=(.*)$/);
    if (!m) throw new Error(`invalid argument "${a}" (want --name=value)`);
    out[m[1]] = m[2];
  }
  for (const need of ["kubeconfig", "node", "host-ip", "addresses"]) {
    if (!out[need]) throw new Error(`missing --${need}`);
  }
  return out;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = parseArgs(process.argv.slice(2));
  const kubelet = startKubelet({
    client: createKubeClient(loadKubeconfig(args.kubeconfig)),
    nodeName: args.node,
    hostIp: args["host-ip"],
    addresses: expandAddresses(args.addresses),
  });
  const stop = (): void => {
    kubelet.stop().then(() => process.exit(0), () => process.exit(1));
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
