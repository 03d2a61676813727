/** The harness of the KubeClusterSource tests: a fake API server, a source pointed at it. */
import process from "node:process";
import { readFileSync } from "node:fs";
import { KubeClusterSource, type KubeClusterSourceOptions } from "../../src/cluster/kube_source.ts";
import type { KubeObject, WatchEventType } from "../../src/cluster/types.ts";
import { FakeKubeApi, type FakeKubeApiOptions } from "../fakes/kube_api.ts";
import { type FakeKubeconfigOptions, writeFakeKubeconfig } from "../fakes/kubeconfig.ts";

/** The clock of every source a test starts (`clock.now`). */
export const T0 = Date.parse("2026-01-15T12:00:00Z");

/** A Deployment with `replicas` in spec and status. */
export function deployment(name: string, replicas: number, namespace = "default"): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace, labels: { app: name } },
    spec: { replicas, selector: { matchLabels: { app: name } } },
    status: { replicas },
  };
}

/** A ScalingSchedule in "default", with `status` if given. */
export function schedule(name: string, status?: unknown): KubeObject {
  return {
    apiVersion: "zalando.org/v1",
    kind: "ScalingSchedule",
    metadata: { name, namespace: "default" },
    spec: { schedules: [] },
    ...(status !== undefined ? { status } : {}),
  };
}

/** What `withSource` hands a test. */
export interface Harness {
  api: FakeKubeApi;
  source: KubeClusterSource;
  logs: string[];
  clock: { now: number };
}

/** Runs `body` with a fake API server and a source pointed at it; stops both afterwards. */
export async function withSource(
  setup: {
    fake?: FakeKubeApiOptions;
    source?: KubeClusterSourceOptions;
    objects?: KubeObject[];
    kubeconfig?: FakeKubeconfigOptions;
  },
  body: (h: Harness) => Promise<void>,
): Promise<void> {
  const api = await FakeKubeApi.start(setup.fake);
  for (const o of setup.objects ?? []) api.create(o);
  const kubeconfig = await writeFakeKubeconfig(api.url, setup.kubeconfig);
  const logs: string[] = [];
  const clock = { now: T0 };
  const source = new KubeClusterSource({
    kubeconfig: kubeconfig.path,
    logger: (level, message) => logs.push(`${level}: ${message}`),
    now: () => clock.now,
    ...setup.source,
  });
  try {
    await body({ api, source, logs, clock });
  } finally {
    await source.close();
    await api.stop();
    await kubeconfig.remove();
  }
}

/** Polls `cond` every 10 ms; rejects naming `what` after `timeoutMs`. */
export async function waitFor(what: string, cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** `promise`, or a rejection naming `what` after `ms` (a TLS failure retries forever). */
export async function within<T>(what: string, promise: Promise<T>, ms = 10_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** `namespace/name` of each object, sorted. */
export function names(objs: KubeObject[]): string[] {
  return objs.map((o) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`).sort();
}

/** A handler call: type, `name@replicas`, the old object's replicas. */
export type Seen = [WatchEventType, string, string | undefined];

/** Records every change of `kind` that the source passes to handlers. */
export function record(source: KubeClusterSource, kind: "Deployment"): Seen[] {
  const seen: Seen[] = [];
  source.watch(kind, (type, obj, old) => {
    seen.push([
      type,
      `${obj.metadata.name}@${obj.spec?.replicas}`,
      old?.spec?.replicas?.toString(),
    ]);
  });
  return seen;
}

/** The query of each watch request to `path`. */
export function watchRequests(api: FakeKubeApi, path: string): Record<string, string>[] {
  return api.requestsTo("GET", path).filter((r) => r.query.watch === "true").map((r) => r.query);
}

/** Whether a process runs (a zombie counts as ended). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/** Runs `body` and answers the unhandled promise rejections seen meanwhile. */
export async function unhandledRejections(body: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const listener = (reason: unknown): void => void seen.push(String(reason));
  process.on("unhandledRejection", listener);
  try {
    await body();
    // rejections are reported after the microtasks of the turn that made them
    await new Promise((r) => setTimeout(r, 50));
  } finally {
    process.off("unhandledRejection", listener);
  }
  return seen;
}
