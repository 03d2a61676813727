/**
 * Test doubles shared by the Prometheus-family collector tests: a static ClusterView, plan
 * builders, a collect context, a server that accepts connections and never answers, and a
 * fake of the Prometheus query API that records what it was asked.
 */
import assert from "node:assert/strict";
import { createServer as createNetServer, type Socket } from "node:net";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ClusterView, Kind, KubeObject } from "../../src/cluster/types.ts";
import type { CollectContext } from "../../src/collectors/types.ts";
import type { MetricPlan } from "../../src/core/types.ts";
import { startServer, type TestServer } from "./servers.ts";

/** The fixed clock of the tests. */
export const NOW = Date.parse("2024-03-04T10:00:00Z");

/** A ClusterView over a fixed set of objects (namespace "default" unless set). */
export class StaticCluster implements ClusterView {
  readonly #objects: [Kind, KubeObject][];

  constructor(objects: [Kind, KubeObject][] = []) {
    this.#objects = objects;
  }

  ensure(): Promise<void> {
    return Promise.resolve();
  }

  list(kind: Kind, namespace?: string): KubeObject[] {
    return this.#objects.filter(([k, o]) =>
      k === kind && (namespace === undefined || (o.metadata.namespace ?? "default") === namespace)
    ).map(([, o]) => o);
  }

  get(kind: Kind, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.list(kind, namespace).find((o) => o.metadata.name === name);
  }

  watch(): () => void {
    return () => {};
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** A workload with `status.replicas` (omitted when undefined, as the API server does). */
export function workload(name: string, replicas: number | undefined): KubeObject {
  return {
    metadata: { name, namespace: "default" },
    spec: {},
    status: replicas === undefined ? {} : { replicas },
  };
}

/** A collect context on the fixed clock. */
export function context(
  cluster: ClusterView = new StaticCluster(),
  signal: AbortSignal = new AbortController().signal,
): CollectContext {
  return {
    signal,
    now: () => NOW,
    fetch: (i: RequestInfo | URL, init?: RequestInit) => fetch(i, init),
    cluster,
  };
}

/** An External plan of collector `collector` with `config` (the selector labels included). */
export function externalPlan(
  collector: string,
  config: Record<string, string>,
  overrides: Partial<MetricPlan> = {},
): MetricPlan {
  return {
    hpa: { namespace: "default", name: "web" },
    index: 0,
    metricType: "External",
    metricName: "queue-length",
    metricSelector: { matchLabels: { type: collector } },
    target: { type: "AverageValue", averageValue: "10" },
    describedObject: null,
    scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
    collector,
    intervalSeconds: 60,
    perReplica: false,
    minPodReadyAgeSeconds: 0,
    config: { type: collector, ...config },
    error: null,
    ...overrides,
  };
}

/** An Object plan on `describedObject`. */
export function objectPlan(
  collector: string,
  describedObject: MetricPlan["describedObject"],
  config: Record<string, string>,
  overrides: Partial<MetricPlan> = {},
): MetricPlan {
  return {
    hpa: { namespace: "default", name: "web" },
    index: 0,
    metricType: "Object",
    metricName: "requests-per-second",
    metricSelector: null,
    target: { type: "AverageValue", averageValue: "10" },
    describedObject,
    scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
    collector,
    intervalSeconds: 60,
    perReplica: false,
    minPodReadyAgeSeconds: 0,
    config,
    error: null,
    ...overrides,
  };
}

/** A TCP server on 127.0.0.1 that accepts connections and never answers. */
export function startSilentServer(): Promise<{ url: string; close(): Promise<void> }> {
  return new Promise((resolve, reject) => {
    const sockets = new Set<Socket>();
    const srv = createNetServer((s) => {
      sockets.add(s);
      s.on("error", () => {});
      s.on("close", () => sockets.delete(s));
    });
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      resolve({
        url: `http://127.0.0.1:${port}`,
        close: () =>
          new Promise<void>((r) => {
            for (const s of sockets) s.destroy();
            srv.close(() => r());
          }),
      });
    });
  });
}

/** One request the fake Prometheus API saw. */
export interface SeenRequest {
  method: string;
  path: string;
  /** The form or query-string parameters. */
  params: Record<string, string>;
  authorization: string | undefined;
}

/** A fake of `/api/v1/query`: records requests and answers what `reply` says. */
export interface FakePrometheusApi {
  url: string;
  seen: SeenRequest[];
  /** Set the answer: a status, a body, and optional headers. */
  reply: (req: SeenRequest) => { status: number; body: string; headers?: Record<string, string> };
  close(): Promise<void>;
}

/** The JSON body of a successful scalar answer. */
export function scalarBody(value: string): string {
  return JSON.stringify({
    status: "success",
    data: { resultType: "scalar", result: [NOW / 1000, value] },
  });
}

/** Start a fake Prometheus query API on 127.0.0.1 answering a scalar `1` by default. */
export async function startFakePrometheusApi(): Promise<FakePrometheusApi> {
  const api: FakePrometheusApi = {
    url: "",
    seen: [],
    reply: () => ({ status: 200, body: scalarBody("1") }),
    close: () => Promise.resolve(),
  };
  const server: TestServer = await startServer(
    "127.0.0.1",
    0,
    (req: IncomingMessage, res: ServerResponse) => {
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        const u = new URL(req.url ?? "/", "http://x");
        const params = Object.fromEntries(
          req.method === "POST" ? new URLSearchParams(body) : u.searchParams,
        );
        const seen: SeenRequest = {
          method: req.method ?? "",
          path: u.pathname,
          params,
          authorization: req.headers.authorization,
        };
        api.seen.push(seen);
        const r = api.reply(seen);
        res.writeHead(r.status, { "content-type": "application/json", ...r.headers });
        res.end(r.body);
      });
    },
  );
  api.url = `http://127.0.0.1:${server.port}`;
  api.close = () => server.close();
  return api;
}

/** Assert that `promise` rejects with an Error whose message matches `re`. */
export async function rejectsMatching(promise: Promise<unknown>, re: RegExp): Promise<void> {
  await assert.rejects(promise, (e: unknown) => {
    assert.ok(e instanceof Error, `not an Error: ${String(e)}`);
    assert.match(e.message, re);
    return true;
  });
}

/** Assert that `fn` throws an Error whose message matches `re`. */
export function throwsMatching(fn: () => unknown, re: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof Error, `not an Error: ${String(e)}`);
    assert.match(e.message, re);
    return true;
  });
}
