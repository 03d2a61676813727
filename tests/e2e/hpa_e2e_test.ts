/**
 * End-to-end: the real HPA controller of kube-controller-manager scales Deployments through the
 * adapter, registered with kube-apiserver's aggregator. Each case waits for
 * `status.desiredReplicas` of a real HPA to reach an exact count, and checks that our core HPA
 * maths (`computeDesiredReplicas`), fed with what the adapter serves and the pods the controller
 * sees, predicts that count.
 *
 * Needs `npm run e2e:up` (tests/e2e/harness.ts) first; `npm run test:e2e` does up, this, down.
 * Without a running harness every case is skipped (HPA_E2E_REQUIRED=1 turns that into a failure).
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { request as httpsRequest } from "node:https";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createCertificate } from "../../src/api/cert_issue.ts";
import { VERSION } from "../../src/cli/version.ts";
import { computeDesiredReplicas } from "../../src/core/kubernetes/hpa_algorithm.ts";
import { parseQuantity } from "../../src/core/kubernetes/quantity.ts";
import type {
  HpaAlgorithmBehavior,
  HpaMetricObservation,
  HpaPod,
} from "../../src/core/kubernetes/hpa_algorithm.ts";
import type { MetricTarget } from "../../src/core/types.ts";
import {
  decideGuard,
  guardChangeMessage,
  parseGuardConfig,
} from "../../src/core/estafette/guard.ts";
import { E2E, readState, STATE_DIR, waitFor } from "./harness.ts";
import { ANNOTATIONS } from "./kubelet.ts";
import type { PodAnswer } from "./kubelet.ts";
import { createKubeClient, KubeApiError, loadKubeconfig } from "./kube_client.ts";
import type { KubeClient } from "./kube_client.ts";

const state = readState();
if (!state && process.env.HPA_E2E_REQUIRED) {
  throw new Error(
    "the e2e harness is not up: run `node --import tsx tests/e2e/harness.ts up` first",
  );
}
const SKIP: string | false = state ? false : "the e2e harness is not up (npm run e2e:up)";
const STUB = state?.adapter === "stub";
const kube: KubeClient = state
  ? createKubeClient(loadKubeconfig(state.kubeconfig))
  : (null as never);

const CASE_TIMEOUT = 180_000;
const WAIT_MS = 60_000;

// deno-lint-ignore no-explicit-any
type Obj = any;

/** Scaling as fast as the controller allows, so counts are reached in one or two syncs. */
const FAST_BEHAVIOR = {
  scaleUp: {
    stabilizationWindowSeconds: 0,
    selectPolicy: "Max",
    policies: [{ type: "Pods", value: 100, periodSeconds: 1 }],
  },
  scaleDown: {
    stabilizationWindowSeconds: 0,
    selectPolicy: "Max",
    policies: [{ type: "Percent", value: 100, periodSeconds: 1 }],
  },
};

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

async function createNamespace(prefix: string): Promise<string> {
  const name = `${prefix}-${Math.random().toString(36).slice(2, 7)}`;
  await kube.request("POST", "/api/v1/namespaces", {
    body: { apiVersion: "v1", kind: "Namespace", metadata: { name } },
  });
  // the serviceaccount controller makes "default"; pods are refused until it exists
  await waitFor(() => kube.get(`/api/v1/namespaces/${name}/serviceaccounts/default`), {
    what: `service account default in ${name}`,
    timeoutMs: WAIT_MS,
  });
  return name;
}

async function deleteNamespace(name: string): Promise<void> {
  if (process.env.HPA_E2E_KEEP) return;
  await kube.request("DELETE", `/api/v1/namespaces/${name}`).catch(() => {});
}

/** Options of {@linkcode createDeployment}. */
interface DeploymentOptions {
  replicas: number;
  /** JSON served by every new pod (the template annotation). */
  metrics?: unknown;
  port?: number;
}

async function createDeployment(
  ns: string,
  name: string,
  options: DeploymentOptions,
): Promise<void> {
  await kube.request("POST", `/apis/apps/v1/namespaces/${ns}/deployments`, {
    body: {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name, namespace: ns },
      spec: {
        replicas: options.replicas,
        selector: { matchLabels: { app: name } },
        template: {
          metadata: {
            labels: { app: name },
            annotations: { [ANNOTATIONS.metrics]: JSON.stringify(options.metrics ?? {}) },
          },
          spec: {
            containers: [{
              name: "app",
              image: "e2e.invalid/app:1",
              ports: [{ containerPort: options.port ?? 9090 }],
            }],
          },
        },
      },
    },
  });
  await waitForDeployment(ns, name, options.replicas);
}

async function waitForDeployment(ns: string, name: string, replicas: number): Promise<void> {
  await waitFor(async () => {
    const d = await kube.request("GET", `/apis/apps/v1/namespaces/${ns}/deployments/${name}`);
    const pods = await readyPods(ns, name);
    return d.spec.replicas === replicas && (d.status.readyReplicas ?? 0) === replicas &&
      pods.length === replicas;
  }, { what: `deployment ${ns}/${name} with ${replicas} ready replicas`, timeoutMs: WAIT_MS });
}

async function listPods(ns: string, app: string): Promise<Obj[]> {
  const list = await kube.request(
    "GET",
    `/api/v1/namespaces/${ns}/pods?labelSelector=app%3D${app}`,
  );
  // deno-lint-ignore no-explicit-any
  return list.items.sort((a: any, b: any) => a.metadata.name.localeCompare(b.metadata.name));
}

function isReady(pod: Obj): boolean {
  // deno-lint-ignore no-explicit-any
  return (pod.status?.conditions ?? []).some((c: any) => c.type === "Ready" && c.status === "True");
}

async function readyPods(ns: string, app: string): Promise<Obj[]> {
  return (await listPods(ns, app)).filter((p) => isReady(p) && !p.metadata.deletionTimestamp);
}

async function annotatePod(
  ns: string,
  pod: string,
  annotations: Record<string, string>,
): Promise<void> {
  await kube.request("PATCH", `/api/v1/namespaces/${ns}/pods/${pod}`, {
    body: { metadata: { annotations } },
    contentType: "application/merge-patch+json",
  });
}

async function setPodMetrics(ns: string, pod: string, metrics: unknown): Promise<void> {
  await annotatePod(ns, pod, { [ANNOTATIONS.metrics]: JSON.stringify(metrics) });
}

async function setPodAnswer(ns: string, pod: string, answer: PodAnswer): Promise<void> {
  await annotatePod(ns, pod, { [ANNOTATIONS.answer]: answer });
}

/** Options of {@linkcode createHpa}. */
interface HpaOptions {
  target: string;
  minReplicas?: number;
  maxReplicas: number;
  metrics: Obj[];
  annotations?: Record<string, string>;
  behavior?: Obj;
}

async function createHpa(ns: string, name: string, options: HpaOptions): Promise<void> {
  await kube.request("POST", `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers`, {
    body: {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: { name, namespace: ns, annotations: options.annotations ?? {} },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: options.target },
        minReplicas: options.minReplicas ?? 1,
        maxReplicas: options.maxReplicas,
        metrics: options.metrics,
        behavior: options.behavior ?? FAST_BEHAVIOR,
      },
    },
  });
}

function getHpa(ns: string, name: string): Promise<Obj> {
  return kube.request(
    "GET",
    `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers/${name}`,
  );
}

function hpaCondition(hpa: Obj, type: string): Obj | undefined {
  // deno-lint-ignore no-explicit-any
  return (hpa.status?.conditions ?? []).find((c: any) => c.type === type);
}

function describeHpa(hpa: Obj): string {
  const conds = (hpa.status?.conditions ?? [])
    // deno-lint-ignore no-explicit-any
    .map((c: any) => `${c.type}=${c.status} ${c.reason}: ${c.message}`)
    .join("; ");
  return `desired=${hpa.status?.desiredReplicas} current=${hpa.status?.currentReplicas} ` +
    `metrics=${JSON.stringify(hpa.status?.currentMetrics ?? [])} conditions: ${conds}`;
}

/**
 * Wait until the HPA wants `desired` replicas, the Deployment has that many ready pods, and the
 * HPA still wants that many a full sync later (a steady state, not a pass-through).
 */
async function waitForSteadyDesired(
  ns: string,
  name: string,
  desired: number,
  target: string,
): Promise<Obj> {
  let last: Obj = null;
  const check = async (): Promise<boolean> => {
    last = await getHpa(ns, name);
    if (last.status?.desiredReplicas !== desired) return false;
    const d = await kube.request("GET", `/apis/apps/v1/namespaces/${ns}/deployments/${target}`);
    return d.spec.replicas === desired && (d.status.readyReplicas ?? 0) === desired;
  };
  try {
    await waitFor(check, {
      what: `HPA ${ns}/${name} desiredReplicas ${desired}`,
      timeoutMs: WAIT_MS,
    });
    // two more controller syncs: it must stay there
    await sleep(2 * 1000 * (state?.hpaSyncPeriodSeconds ?? 2) + 500);
    assert.ok(await check(), `HPA ${ns}/${name} left ${desired}: ${describeHpa(last)}`);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n  last HPA: ${last ? describeHpa(last) : "none"}`);
  }
  return last;
}

// --- what the adapter serves, read through the aggregator as the HPA controller reads it ---------

function selectorQuery(selector: Obj | undefined, param: string): string {
  const parts = Object.entries(selector?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of selector?.matchExpressions ?? []) {
    parts.push(`${e.key} ${e.operator.toLowerCase()} (${e.values.join(",")})`);
  }
  return parts.length ? `${param}=${encodeURIComponent(parts.join(","))}` : "";
}

function customBase(version: string): string {
  return `/apis/custom.metrics.k8s.io/${version}`;
}

/** The custom metrics version the aggregator prefers now. */
async function customVersion(): Promise<string> {
  const group = await kube.request("GET", "/apis/custom.metrics.k8s.io");
  return group.preferredVersion.version;
}

/** Observe what the controller will see for every metric of `hpa`. */
async function observeMetrics(hpa: Obj): Promise<HpaMetricObservation[]> {
  const ns = hpa.metadata.namespace;
  const version = await customVersion();
  const out: HpaMetricObservation[] = [];
  for (const m of hpa.spec.metrics) {
    try {
      if (m.type === "Pods") {
        const d = await kube.request(
          "GET",
          `/apis/apps/v1/namespaces/${ns}/deployments/${hpa.spec.scaleTargetRef.name}`,
        );
        const q = [selectorQuery(d.spec.selector, "labelSelector")];
        if (version === "v1beta2") {
          q.push(selectorQuery(m.pods.metric.selector, "metricLabelSelector"));
        }
        const list = await kube.request(
          "GET",
          `${customBase(version)}/namespaces/${ns}/pods/*/${m.pods.metric.name}?${
            q.filter(Boolean).join("&")
          }`,
        );
        const values: Record<string, string> = {};
        for (const item of list.items) values[item.describedObject.name] = item.value;
        out.push({
          type: "Pods",
          metricName: m.pods.metric.name,
          target: m.pods.target as MetricTarget,
          values,
        });
      } else if (m.type === "Object") {
        const ref = m.object.describedObject;
        const group = ref.apiVersion.includes("/") ? ref.apiVersion.split("/")[0] : "";
        const resource = `${ref.kind.toLowerCase()}s${group ? `.${group}` : ""}`;
        const q = version === "v1beta2"
          ? selectorQuery(m.object.metric.selector, "metricLabelSelector")
          : "";
        const v = await kube.request(
          "GET",
          `${customBase(version)}/namespaces/${ns}/${resource}/${ref.name}/${m.object.metric.name}${
            q ? `?${q}` : ""
          }`,
        );
        const value = v.kind === "MetricValueList" ? v.items[0].value : v.value;
        out.push({
          type: "Object",
          metricName: m.object.metric.name,
          target: m.object.target as MetricTarget,
          value,
        });
      } else if (m.type === "External") {
        const q = selectorQuery(m.external.metric.selector, "labelSelector");
        const list = await kube.request(
          "GET",
          `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/${m.external.metric.name}${
            q ? `?${q}` : ""
          }`,
        );
        out.push({
          type: "External",
          metricName: m.external.metric.name,
          target: m.external.target as MetricTarget,
          // deno-lint-ignore no-explicit-any
          values: list.items.map((i: any) => i.value),
        });
      }
    } catch (err) {
      const type = m.type as "Pods" | "Object" | "External";
      const name = m.pods?.metric.name ?? m.object?.metric.name ?? m.external?.metric.name;
      // deno-lint-ignore no-explicit-any
      out.push(
        {
          type,
          metricName: name,
          target: {} as MetricTarget,
          error: (err as Error).message,
        } as any,
      );
    }
  }
  return out;
}

/** Options of {@linkcode predict}. */
interface PredictOptions {
  /** Predict from this replica count instead of the Deployment's current one. */
  currentReplicas?: number;
  /** These pods instead of the ones listed now. */
  pods?: HpaPod[];
  /** Wait until what the adapter serves passes this check, and predict from that. */
  servedWhen?: (metrics: HpaMetricObservation[]) => boolean;
  /** Predict with this minReplicas instead of the HPA's (what the metrics alone ask for). */
  minReplicas?: number;
  /** Predict with this behavior instead of the HPA's. */
  behavior?: Obj;
}

function podsOf(list: Obj[]): HpaPod[] {
  return list.map((p) => ({
    name: p.metadata.name,
    phase: p.status?.phase ?? "Pending",
    ready: isReady(p),
    deleting: Boolean(p.metadata.deletionTimestamp),
  }));
}

/** `count` Running and Ready pods (for predictions of states not yet reached). */
function readyPodsNamed(count: number): HpaPod[] {
  return Array.from(
    { length: count },
    (_, i) => ({ name: `pod-${i}`, phase: "Running", ready: true }),
  );
}

/**
 * Our core maths' answer for `hpa` from what is observable: the served values, the
 * Deployment's replicas and the pods the controller lists (or the given ones).
 */
async function predict(ns: string, name: string, options: PredictOptions = {}): Promise<number> {
  const hpa = await getHpa(ns, name);
  const target = hpa.spec.scaleTargetRef.name;
  const metrics = options.servedWhen
    ? await waitFor(async () => {
      const m = await observeMetrics(hpa);
      return options.servedWhen!(m) ? m : undefined;
    }, { what: `served values of HPA ${ns}/${name}`, timeoutMs: WAIT_MS })
    : await observeMetrics(hpa);
  const d = await kube.request("GET", `/apis/apps/v1/namespaces/${ns}/deployments/${target}`);
  return computeDesiredReplicas({
    now: Date.now(),
    currentReplicas: options.currentReplicas ?? d.spec.replicas,
    minReplicas: options.minReplicas ?? hpa.spec.minReplicas,
    maxReplicas: hpa.spec.maxReplicas,
    metrics,
    pods: options.pods ?? podsOf(await listPods(ns, target)),
    behavior: (options.behavior ?? hpa.spec.behavior) as HpaAlgorithmBehavior,
    tolerance: state!.tolerance,
    downscaleStabilizationWindowSeconds: state!.downscaleStabilizationSeconds,
    recommendations: [],
  }).desiredReplicas;
}

/** The first value served for each metric (Object value, External items, Pods by name). */
function servedValue(m: HpaMetricObservation): unknown {
  if (m.error) return undefined;
  if (m.type === "Object") return m.value;
  if (m.type === "External") return m.values;
  return m.values;
}

/** Record every distinct `status.desiredReplicas` an HPA shows, polling faster than it syncs. */
function recordDesired(ns: string, name: string): { stop(): Promise<number[]> } {
  const seen: number[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const hpa = await kube.get(
        `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers/${name}`,
      );
      const d = hpa?.status?.desiredReplicas;
      // 0 is the status before the first computation (every HPA here has minReplicas >= 1)
      if (typeof d === "number" && d > 0 && seen[seen.length - 1] !== d) seen.push(d);
      await sleep(150);
    }
  })();
  return {
    async stop(): Promise<number[]> {
      stopped = true;
      await loop;
      return seen;
    },
  };
}

/** The HPA reached `expected` and stays there, and our maths predicts exactly that. */
async function expectReplicas(ns: string, name: string, expected: number): Promise<Obj> {
  const hpa = await waitForSteadyDesired(
    ns,
    name,
    expected,
    (await getHpa(ns, name)).spec.scaleTargetRef.name,
  );
  assert.equal(
    await predict(ns, name),
    expected,
    `core maths disagrees with the controller (${expected})`,
  );
  return hpa;
}

// --- the cases ---------------------------------------------------------------------------------

describe("e2e: the real HPA controller through the aggregator", {
  skip: SKIP,
  timeout: 30 * 60_000,
}, () => {
  before(async () => {
    assert.ok(state, "harness state");
    // the three APIServices are Available (up waited for it; they must still be)
    for (
      const name of [
        "v1beta1.custom.metrics.k8s.io",
        "v1beta2.custom.metrics.k8s.io",
        "v1beta1.external.metrics.k8s.io",
      ]
    ) {
      const s = await kube.request("GET", `/apis/apiregistration.k8s.io/v1/apiservices/${name}`);
      // deno-lint-ignore no-explicit-any
      const c = s.status.conditions.find((x: any) => x.type === "Available");
      assert.equal(c.status, "True", `${name}: ${c.reason} ${c.message}`);
    }
  });

  describe("front-proxy authentication", () => {
    it("rejects a request to the adapter that carries no front-proxy client certificate", async () => {
      const path = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/*/anything";
      const ca = readFileSync(join(STATE_DIR, "pki/ca.crt"), "utf8");
      const call = (
        headers: Record<string, string>,
        cert?: { cert: string; key: string },
      ): Promise<number> =>
        new Promise((resolve, reject) => {
          const req = httpsRequest({
            host: state!.adapterIp,
            port: state!.adapterPort,
            path,
            headers,
            ca,
            servername: `${E2E.adapterService}.${E2E.adapterNamespace}.svc`,
            ...(cert ?? {}),
            timeout: 10_000,
          }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          req.on("error", reject);
          req.end();
        });
      const hpaUser = {
        "X-Remote-User": "system:serviceaccount:kube-system:horizontal-pod-autoscaler",
        "X-Remote-Group": "system:serviceaccounts",
      };
      // no certificate, but the headers the aggregator would send: must not be trusted
      assert.ok(
        [401, 403].includes(await call(hpaUser)),
        "headers without a front-proxy certificate",
      );
      const pki = (name: string): { cert: string; key: string } => ({
        cert: readFileSync(join(STATE_DIR, `pki/${name}.crt`), "utf8"),
        key: readFileSync(join(STATE_DIR, `pki/${name}.key`), "utf8"),
      });
      // a client certificate of the cluster CA: that user, not the one the headers name
      const nobody = createCertificate({
        commonName: "e2e-nobody",
        issuer: pki("ca"),
        extendedKeyUsages: ["clientAuth"],
      });
      assert.equal(await call(hpaUser, nobody), 403, "headers with a cluster-CA certificate");
      // the front-proxy CA, but a name outside --requestheader-allowed-names
      const intruder = createCertificate({
        commonName: "intruder",
        issuer: pki("frontProxyCa"),
        extendedKeyUsages: ["clientAuth"],
      });
      const asIntruder = await call(hpaUser, intruder);
      assert.ok(
        [401, 403].includes(asIntruder),
        `a front-proxy certificate for "intruder" answered ${asIntruder}`,
      );
      // the front-proxy certificate the aggregator uses: accepted
      const proxy = pki("frontProxyClient");
      // the metric does not exist: 404 from the adapter, past authentication and authorization
      assert.equal(await call(hpaUser, proxy), 404, "the aggregator's front-proxy certificate");
    });
  });

  describe("Object metric on a ScalingSchedule", { skip: STUB && "stub adapter" }, () => {
    let ns = "";
    before(async () => {
      ns = await createNamespace("e2e-schedule");
    });
    after(() => deleteNamespace(ns));

    it("scales to ceil(value / averageValue), follows schedule changes and flips status.active", {
      timeout: CASE_TIMEOUT,
    }, async () => {
      await createDeployment(ns, "shop", { replicas: 1 });
      const started = new Date(Date.now() - 5 * 60_000).toISOString().replace(/\.\d+Z$/, "Z");
      const schedule = (value: number, date: string): Obj => ({
        apiVersion: "zalando.org/v1",
        kind: "ScalingSchedule",
        metadata: { name: "peak", namespace: ns },
        spec: {
          scalingWindowDurationMinutes: 0,
          schedules: [{ type: "OneTime", date, durationMinutes: 60, value }],
        },
      });
      await kube.request("POST", `/apis/zalando.org/v1/namespaces/${ns}/scalingschedules`, {
        body: schedule(10, started),
      });
      await createHpa(ns, "shop", {
        target: "shop",
        maxReplicas: 10,
        annotations: { "metric-config.object.peak.scaling-schedule/interval": "1s" },
        metrics: [{
          type: "Object",
          object: {
            describedObject: {
              apiVersion: "zalando.org/v1",
              kind: "ScalingSchedule",
              name: "peak",
            },
            metric: { name: "peak" },
            target: { type: "AverageValue", averageValue: "2" },
          },
        }],
      });
      const objectValue = (v: string) => (m: HpaMetricObservation[]) => servedValue(m[0]) === v;
      assert.equal(
        await predict(ns, "shop", { currentReplicas: 1, servedWhen: objectValue("10") }),
        5,
      );
      await expectReplicas(ns, "shop", 5); // ceil(10 / 2)
      await waitFor(async () => {
        const s = await kube.request(
          "GET",
          `/apis/zalando.org/v1/namespaces/${ns}/scalingschedules/peak`,
        );
        return s.status?.active === true;
      }, { what: "status.active true", timeoutMs: 30_000 });

      // a smaller value: ceil(6 / 2) = 3
      const current = await kube.request(
        "GET",
        `/apis/zalando.org/v1/namespaces/${ns}/scalingschedules/peak`,
      );
      current.spec.schedules[0].value = 6;
      await kube.request("PUT", `/apis/zalando.org/v1/namespaces/${ns}/scalingschedules/peak`, {
        body: current,
      });
      assert.equal(
        await predict(ns, "shop", { currentReplicas: 5, servedWhen: objectValue("6") }),
        3,
      );
      await expectReplicas(ns, "shop", 3);

      // moved to tomorrow: inactive, value 0, down to minReplicas
      const tomorrow = new Date(Date.now() + 24 * 3600_000).toISOString().replace(/\.\d+Z$/, "Z");
      const moved = await kube.request(
        "GET",
        `/apis/zalando.org/v1/namespaces/${ns}/scalingschedules/peak`,
      );
      moved.spec.schedules[0].date = tomorrow;
      await kube.request("PUT", `/apis/zalando.org/v1/namespaces/${ns}/scalingschedules/peak`, {
        body: moved,
      });
      assert.equal(
        await predict(ns, "shop", { currentReplicas: 3, servedWhen: objectValue("0") }),
        1,
      );
      await expectReplicas(ns, "shop", 1);
      await waitFor(async () => {
        const s = await kube.request(
          "GET",
          `/apis/zalando.org/v1/namespaces/${ns}/scalingschedules/peak`,
        );
        return s.status?.active === false;
      }, { what: "status.active false", timeoutMs: 30_000 });
    });
  });

  describe("Pods metric from the pods' JSON endpoints", { skip: STUB && "stub adapter" }, () => {
    let ns = "";
    before(async () => {
      ns = await createNamespace("e2e-pods");
    });
    after(() => deleteNamespace(ns));

    /** 4 pods answering 20 each (new pods answer 0): the HPA settles on ceil(80 / 10) = 8. */
    async function scaledTo8(name: string): Promise<Obj[]> {
      await createDeployment(ns, name, { replicas: 4, metrics: { rps: 0 } });
      const first = await readyPods(ns, name);
      for (const p of first) {
        await annotatePod(ns, p.metadata.name, {
          [ANNOTATIONS.metrics]: JSON.stringify({ rps: 20 }),
          // the ReplicaSet removes the idle pods first, not a random one of the same age
          "controller.kubernetes.io/pod-deletion-cost": "100",
        });
      }
      await createHpa(ns, name, {
        target: name,
        maxReplicas: 10,
        annotations: {
          "metric-config.pods.requests-per-second.json-path/json-key": "$.rps",
          "metric-config.pods.requests-per-second.json-path/path": "/metrics",
          "metric-config.pods.requests-per-second.json-path/port": "9090",
          "metric-config.pods.requests-per-second.json-path/interval": "1s",
          "metric-config.pods.requests-per-second.json-path/request-timeout": "1s",
          "metric-config.pods.requests-per-second.json-path/min-pod-ready-age": "0s",
        },
        metrics: [{
          type: "Pods",
          pods: {
            metric: { name: "requests-per-second" },
            target: { type: "AverageValue", averageValue: "10" },
          },
        }],
      });
      // from the 4 loaded pods: 80 / 10 = 8
      const loaded = (m: HpaMetricObservation[]): boolean =>
        first.every((p) =>
          (m[0] as { values?: Record<string, string> }).values?.[p.metadata.name] === "20"
        );
      const firstPods = podsOf(await readyPods(ns, name)).filter((p) =>
        first.some((f) => f.metadata.name === p.name)
      );
      assert.equal(
        await predict(ns, name, { currentReplicas: 4, pods: firstPods, servedWhen: loaded }),
        8,
      );
      await expectReplicas(ns, name, 8);
      return first;
    }

    it(
      "scales to the sum over pods divided by the per-pod target",
      { timeout: CASE_TIMEOUT },
      async () => {
        await scaledTo8("web");
      },
    );

    it("treats a pod that stops answering as missing: at target on a scale-down", {
      timeout: CASE_TIMEOUT,
    }, async () => {
      const first = await scaledTo8("hang");
      await setPodAnswer(ns, first[0].metadata.name, "hang");
      // 60 over 7 answering pods is below target; the silent pod counts as 10: 70/80 -> ceil(0.875*8) = 7,
      // then the youngest (idle) pod goes and 60 over 6 answering pods is on target
      await expectReplicas(ns, "hang", 7);
    });

    it(
      "forgets a deleted pod: its replacement starts idle",
      { timeout: CASE_TIMEOUT },
      async () => {
        const first = await scaledTo8("gone");
        await kube.request("DELETE", `/api/v1/namespaces/${ns}/pods/${first[0].metadata.name}`);
        // 60 over 8 pods -> ceil(0.75 * 8) = 6, and 60 over 6 is on target
        await expectReplicas(ns, "gone", 6);
      },
    );
  });

  describe("External json-path metric", { skip: STUB && "stub adapter" }, () => {
    let ns = "";
    let queueIp = "";
    before(async () => {
      ns = await createNamespace("e2e-external");
      await kube.request("POST", `/api/v1/namespaces/${ns}/pods`, {
        body: {
          apiVersion: "v1",
          kind: "Pod",
          metadata: {
            name: "queue",
            namespace: ns,
            annotations: { [ANNOTATIONS.metrics]: JSON.stringify({ queue: { length: 120 } }) },
          },
          spec: {
            containers: [{
              name: "queue",
              image: "e2e.invalid/queue:1",
              ports: [{ containerPort: 8080 }],
            }],
          },
        },
      });
      queueIp = await waitFor(async () => {
        const p = await kube.request("GET", `/api/v1/namespaces/${ns}/pods/queue`);
        return isReady(p) ? p.status.podIP as string : undefined;
      }, { what: "queue pod ready", timeoutMs: WAIT_MS });
    });
    after(() => deleteNamespace(ns));

    function externalHpa(name: string, target: Obj, endpoint: string): Promise<void> {
      return createHpa(ns, name, {
        target: name,
        maxReplicas: 10,
        annotations: {
          [`metric-config.external.queue-length-${name}.json-path/endpoint`]: endpoint,
          [`metric-config.external.queue-length-${name}.json-path/json-key`]: "$.queue.length",
          [`metric-config.external.queue-length-${name}.json-path/interval`]: "1s",
          [`metric-config.external.queue-length-${name}.json-path/request-timeout`]: "1s",
        },
        metrics: [{
          type: "External",
          external: {
            metric: {
              name: `queue-length-${name}`,
              selector: { matchLabels: { type: "json-path" } },
            },
            target,
          },
        }],
      });
    }

    it(
      "AverageValue: ceil(value / averageValue) and steady",
      { timeout: CASE_TIMEOUT },
      async () => {
        await createDeployment(ns, "avg", { replicas: 1 });
        await externalHpa(
          "avg",
          { type: "AverageValue", averageValue: "40" },
          `http://${queueIp}:8080/queue`,
        );
        const items = (v: string) => (m: HpaMetricObservation[]) =>
          JSON.stringify(servedValue(m[0])) === JSON.stringify([v]);
        assert.equal(await predict(ns, "avg", { currentReplicas: 1, servedWhen: items("120") }), 3);
        await expectReplicas(ns, "avg", 3); // ceil(120 / 40)
      },
    );

    it("Value: the ratio multiplies the ready pods until maxReplicas, and back down", {
      timeout: CASE_TIMEOUT,
    }, async () => {
      // every count the controller goes through, as our maths walks it: all pods ready
      const hpaOf = await (async () => {
        await createDeployment(ns, "val", { replicas: 1 });
        const recorder = recordDesired(ns, "val");
        await externalHpa("val", { type: "Value", value: "40" }, `http://${queueIp}:8080/queue`);
        return recorder;
      })();
      const chain = (from: number, value: string): number[] => {
        const out: number[] = [];
        for (let current = from;;) {
          const next = computeDesiredReplicas({
            now: Date.now(),
            currentReplicas: current,
            minReplicas: 1,
            maxReplicas: 10,
            metrics: [{
              type: "External",
              metricName: "queue-length-val",
              target: { type: "Value", value: "40" } as MetricTarget,
              values: [value],
            }],
            pods: readyPodsNamed(current),
            behavior: FAST_BEHAVIOR as HpaAlgorithmBehavior,
            recommendations: [],
          }).desiredReplicas;
          if (next === current) return out;
          out.push(next);
          current = next;
        }
      };
      // 120/40 = 3 times the ready pods on every sync: 1 -> 3 -> 9 -> 10 (max)
      assert.deepEqual(chain(1, "120"), [3, 9, 10]);
      const hpa = await expectReplicas(ns, "val", 10);
      assert.deepEqual(await hpaOf.stop(), chain(1, "120"), "counts on the way up");
      assert.equal(hpaCondition(hpa, "ScalingLimited")?.reason, "TooManyReplicas");
      // 30/40 = 0.75: 10 -> 8 -> 6 -> 5 -> 4 -> 3, where ceil(0.75 * 3) = 3 holds
      assert.deepEqual(chain(10, "30"), [8, 6, 5, 4, 3]);
      const down = recordDesired(ns, "val");
      await setPodMetrics(ns, "queue", { queue: { length: 30 } });
      await expectReplicas(ns, "val", 3);
      assert.deepEqual(await down.stop(), [10, ...chain(10, "30")], "counts on the way down");
      await setPodMetrics(ns, "queue", { queue: { length: 120 } });
    });

    it("a failing collector: the HPA's ScalingActive message carries the adapter's 404 reason", {
      timeout: CASE_TIMEOUT,
    }, async () => {
      await createDeployment(ns, "broken", { replicas: 2 });
      // a port nothing serves on the queue pod: connection refused on every collection
      await externalHpa(
        "broken",
        { type: "AverageValue", averageValue: "40" },
        `http://${queueIp}:8081/queue`,
      );
      const sel = encodeURIComponent("type=json-path");
      // the adapter's 404 once a collection has failed (before that it says "not collected yet")
      const served = await waitFor(async () => {
        try {
          await kube.request(
            "GET",
            `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/queue-length-broken?labelSelector=${sel}`,
          );
          return undefined;
        } catch (err) {
          if (!(err instanceof KubeApiError && err.status === 404)) throw err;
          const status = JSON.parse(err.body);
          return /collection failed/.test(status.message) ? status : undefined;
        }
      }, { what: "the adapter's 404 for the failing metric", timeoutMs: WAIT_MS });
      assert.equal(served.code, 404);
      assert.match(
        served.message,
        new RegExp(`request to http://${queueIp.replaceAll(".", "\\.")}:8081/queue failed`),
      );
      // the reason without the time of the last attempt, which moves on every collection
      const reason = served.message.replace(/ at \d{4}-\d\d-\d\dT[\d:.]+Z$/, "");
      const hpa = await waitFor(async () => {
        const h = await getHpa(ns, "broken");
        const c = hpaCondition(h, "ScalingActive");
        return c?.status === "False" && /collection failed/.test(c.message) ? h : undefined;
      }, { what: "ScalingActive False", timeoutMs: WAIT_MS });
      const active = hpaCondition(hpa, "ScalingActive");
      assert.equal(active.reason, "FailedGetExternalMetric");
      assert.ok(
        active.message.includes(reason),
        `ScalingActive message ${JSON.stringify(active.message)} lacks ${JSON.stringify(reason)}`,
      );
      // nothing was scaled
      const d = await kube.request("GET", `/apis/apps/v1/namespaces/${ns}/deployments/broken`);
      assert.equal(d.spec.replicas, 2);
    });
  });

  describe("Object metric via Prometheus on a Deployment", {
    skip: (STUB && "stub adapter") ||
      (!state?.prometheus && "no Prometheus server (Debian package prometheus)"),
  }, () => {
    let ns = "";
    before(async () => {
      ns = await createNamespace("e2e-prometheus");
    });
    after(async () => {
      rmSync(join(state!.prometheus!.targetsDir, `${ns}.json`), { force: true });
      await deleteNamespace(ns);
    });

    it(
      "divides the query's value by the Deployment's replicas (per-replica) against a Value target",
      { timeout: CASE_TIMEOUT },
      async () => {
        // an exporter pod that Prometheus scrapes (file_sd), serving a gauge in the text format
        await kube.request("POST", `/api/v1/namespaces/${ns}/pods`, {
          body: {
            apiVersion: "v1",
            kind: "Pod",
            metadata: {
              name: "exporter",
              namespace: ns,
              annotations: {
                [ANNOTATIONS.metrics]: "# TYPE queue_depth gauge\nqueue_depth 120\n",
                [ANNOTATIONS.contentType]: "text/plain; version=0.0.4",
              },
            },
            spec: {
              containers: [{
                name: "exporter",
                image: "e2e.invalid/exporter:1",
                ports: [{ containerPort: 9100 }],
              }],
            },
          },
        });
        const ip = await waitFor(async () => {
          const p = await kube.request("GET", `/api/v1/namespaces/${ns}/pods/exporter`);
          return isReady(p) ? p.status.podIP as string : undefined;
        }, { what: "exporter pod ready", timeoutMs: WAIT_MS });
        writeFileSync(
          join(state!.prometheus!.targetsDir, `${ns}.json`),
          JSON.stringify([{ targets: [`${ip}:9100`], labels: { namespace: ns } }]),
        );
        const query = `sum(queue_depth{namespace="${ns}"})`;
        await waitFor(async () => {
          const r = await fetch(
            `${state!.prometheus!.url}/api/v1/query?query=${encodeURIComponent(query)}`,
          );
          const body = await r.json();
          return body.data?.result?.[0]?.value?.[1] === "120";
        }, { what: `Prometheus answering ${query} with 120`, timeoutMs: WAIT_MS });

        await createDeployment(ns, "api", { replicas: 2 });
        await createHpa(ns, "api", {
          target: "api",
          maxReplicas: 10,
          annotations: {
            "metric-config.object.queue-depth.prometheus/query": query,
            "metric-config.object.queue-depth.prometheus/per-replica": "true",
            "metric-config.object.queue-depth.prometheus/interval": "1s",
          },
          metrics: [{
            type: "Object",
            object: {
              describedObject: { apiVersion: "apps/v1", kind: "Deployment", name: "api" },
              metric: { name: "queue-depth" },
              target: { type: "Value", value: "20" },
            },
          }],
          // a value collected before status.replicas caught up must not overshoot
          behavior: {
            ...FAST_BEHAVIOR,
            scaleUp: { ...FAST_BEHAVIOR.scaleUp, stabilizationWindowSeconds: 4 },
          },
        });
        // 120 / 2 replicas = 60 against 20: ceil(3 * 2) = 6; then 120 / 6 = 20 is on target
        await expectReplicas(ns, "api", 6);
      },
    );
  });

  describe("the same through v1beta1", { skip: STUB && "stub adapter" }, () => {
    let ns = "";
    let v1beta2: Obj = null;
    before(async () => {
      ns = await createNamespace("e2e-v1beta1");
      v1beta2 = await kube.request(
        "GET",
        "/apis/apiregistration.k8s.io/v1/apiservices/v1beta2.custom.metrics.k8s.io",
      );
    });
    after(async () => {
      // put v1beta2 back for whatever runs next
      if (
        v1beta2 &&
        !(await kube.get(
          "/apis/apiregistration.k8s.io/v1/apiservices/v1beta2.custom.metrics.k8s.io",
        ))
      ) {
        const { metadata, spec } = v1beta2;
        await kube.request("POST", "/apis/apiregistration.k8s.io/v1/apiservices", {
          body: {
            apiVersion: "apiregistration.k8s.io/v1",
            kind: "APIService",
            metadata: { name: metadata.name, labels: metadata.labels },
            spec,
          },
        });
      }
      await deleteNamespace(ns);
    });

    it("scales Pods and Object metrics with v1beta2's APIService set aside", {
      timeout: CASE_TIMEOUT,
    }, async () => {
      await kube.request(
        "DELETE",
        "/apis/apiregistration.k8s.io/v1/apiservices/v1beta2.custom.metrics.k8s.io",
      );
      await waitFor(async () => (await customVersion()) === "v1beta1", {
        what: "v1beta1 preferred",
        timeoutMs: WAIT_MS,
      });
      await assert.rejects(
        kube.request("GET", "/apis/custom.metrics.k8s.io/v1beta2"),
        (err: Error) => err instanceof KubeApiError && err.status === 404,
      );
      await createDeployment(ns, "web", { replicas: 2, metrics: { rps: 0 } });
      for (const p of await readyPods(ns, "web")) {
        await setPodMetrics(ns, p.metadata.name, { rps: 25 });
      }
      const started = new Date(Date.now() - 60_000).toISOString().replace(/\.\d+Z$/, "Z");
      await kube.request("POST", `/apis/zalando.org/v1/namespaces/${ns}/scalingschedules`, {
        body: {
          apiVersion: "zalando.org/v1",
          kind: "ScalingSchedule",
          metadata: { name: "floor", namespace: ns },
          spec: {
            scalingWindowDurationMinutes: 0,
            schedules: [{ type: "OneTime", date: started, durationMinutes: 60, value: 21 }],
          },
        },
      });
      await createHpa(ns, "web", {
        target: "web",
        maxReplicas: 10,
        annotations: {
          "metric-config.pods.rps.json-path/json-key": "$.rps",
          "metric-config.pods.rps.json-path/port": "9090",
          "metric-config.pods.rps.json-path/interval": "1s",
          "metric-config.pods.rps.json-path/min-pod-ready-age": "0s",
          "metric-config.object.floor.scaling-schedule/interval": "1s",
        },
        metrics: [
          {
            type: "Pods",
            pods: { metric: { name: "rps" }, target: { type: "AverageValue", averageValue: "10" } },
          },
          {
            type: "Object",
            object: {
              describedObject: {
                apiVersion: "zalando.org/v1",
                kind: "ScalingSchedule",
                name: "floor",
              },
              metric: { name: "floor" },
              target: { type: "AverageValue", averageValue: "3" },
            },
          },
        ],
      });
      // Pods: 50 over 2 -> 5 (then 50 over 5 is on target); Object: ceil(21 / 3) = 7; the max wins
      await expectReplicas(ns, "web", 7);
      const hpa = await getHpa(ns, "web");
      assert.equal(hpaCondition(hpa, "ScalingActive")?.status, "True");
    });
  });

  describe("formula metric over two Pods inputs, with fallback (issue 21)", {
    skip: STUB && "stub adapter",
  }, () => {
    let ns = "";
    before(async () => {
      ns = await createNamespace("e2e-formula");
    });
    after(() => deleteNamespace(ns));

    /** The HPA's events with `reason`, oldest first. */
    async function hpaEvents(name: string, reason: string): Promise<Obj[]> {
      const sel = encodeURIComponent(
        `involvedObject.kind=HorizontalPodAutoscaler,involvedObject.name=${name},reason=${reason}`,
      );
      const list = await kube.request(
        "GET",
        `/api/v1/namespaces/${ns}/events?fieldSelector=${sel}`,
      );
      const at = (e: Obj): number =>
        Date.parse(e.firstTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp);
      return list.items.sort((x: Obj, y: Obj) => at(x) - at(y));
    }

    /** `hpa_metrics_adapter_fallback_active` of (ns, hpa, metric) on the adapter's /metrics. */
    async function fallbackActiveGauge(hpa: string, metric: string): Promise<string | undefined> {
      const text = await (await fetch(state!.adapterMetrics)).text();
      for (const line of text.split("\n")) {
        const m = line.match(/^hpa_metrics_adapter_fallback_active\{([^}]*)\} (\S+)$/);
        if (!m) continue;
        const labels = Object.fromEntries(
          [...m[1].matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]),
        );
        if (labels.namespace === ns && labels.hpa === hpa && labels.metric === metric) return m[2];
      }
      return undefined;
    }

    /** The formula's value as served (undefined while it is an error). */
    const formulaIs = (value: number) => (m: HpaMetricObservation[]): boolean => {
      const items = servedValue(m[0]) as string[] | undefined;
      return items?.length === 1 && parseQuantity(items[0]) === value;
    };

    it("scales to the formula's count, to fallback-replicas while the pods fail, and back", {
      timeout: CASE_TIMEOUT,
    }, async (t) => {
      const name = "calc";
      // two loaded pods; pods the HPA adds answer {a: 0, b: 0} and so add nothing to the sums
      await createDeployment(ns, name, { replicas: 2, metrics: { a: 0, b: 0 } });
      const loaded = await readyPods(ns, name);
      assert.equal(loaded.length, 2);
      // req-a = 20.25 + 22 = 42.25, req-b = 17 + 15.5 = 32.5, formula 74.75 ("74750m").
      // Each of the four values is over 14.75, so a value collected while only some pods have
      // switched (any partial sum) is at most 60: it scales to at most 6, from where 74.75
      // (ratio >= 1.24) leaves the 10% band and moves on to 8; only 7 would hold (74.75/70).
      const values = [{ a: 20.25, b: 17 }, { a: 22, b: 15.5 }];
      await Promise.all(loaded.map((p, i) =>
        annotatePod(ns, p.metadata.name, {
          [ANNOTATIONS.metrics]: JSON.stringify(values[i]),
          // the ReplicaSet removes the idle pods first, never a loaded one
          "controller.kubernetes.io/pod-deletion-cost": "100",
        })
      ));
      const input = (metric: string, key: string): Record<string, string> => ({
        [`metric-config.pods.${metric}.json-path/json-key`]: key,
        [`metric-config.pods.${metric}.json-path/path`]: "/metrics",
        [`metric-config.pods.${metric}.json-path/port`]: "9090",
        [`metric-config.pods.${metric}.json-path/interval`]: "1s",
        [`metric-config.pods.${metric}.json-path/request-timeout`]: "1s",
        [`metric-config.pods.${metric}.json-path/min-pod-ready-age`]: "0s",
      });
      await createHpa(ns, name, {
        target: name,
        minReplicas: 1,
        maxReplicas: 10,
        annotations: {
          // hidden inputs: collected, not in spec.metrics; `-` is `_` in the expression
          ...input("req-a", "$.a"),
          ...input("req-b", "$.b"),
          "metric-config.external.combined.formula/expression": "req_a + req_b",
          "metric-config.external.combined.formula/fallback-failure-threshold": "2",
          "metric-config.external.combined.formula/fallback-replicas": "3",
        },
        metrics: [{
          type: "External",
          external: {
            metric: { name: "combined", selector: { matchLabels: { type: "formula" } } },
            target: { type: "AverageValue", averageValue: "10" },
          },
        }],
      });

      // 1. the formula: ceil(74.75 / 10) = 8 from 2 (ratio 3.74)
      assert.equal(
        await predict(ns, name, { currentReplicas: 2, servedWhen: formulaIs(74.75) }),
        8,
      );
      await expectReplicas(ns, name, 8);
      assert.deepEqual(await hpaEvents(name, "FallbackActive"), [], "no fallback yet");

      // 2. every pod answers 500: the formula is an error naming an input (404) for two failed
      // collections, fallback from the third (failures > threshold 2): it serves
      // fallback-replicas * target = 3 * 10 = 30, and ceil(30 / 10) = 3 from 8 (ratio 0.375)
      const failed = Date.now();
      let reason = "";
      let watching = true;
      const sel = encodeURIComponent("type=formula");
      const watcher = (async () => {
        while (watching && !reason) {
          try {
            await kube.request(
              "GET",
              `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/combined?labelSelector=${sel}`,
            );
          } catch (err) {
            if (err instanceof KubeApiError && err.status === 404) {
              reason = JSON.parse(err.body).message ?? err.body;
            }
          }
          await sleep(150);
        }
      })();
      const pods = await readyPods(ns, name);
      assert.equal(pods.length, 8);
      // the idle pods first (the sums do not change), then the two loaded ones at once
      const idle = pods.filter((p) => !loaded.some((l) => l.metadata.name === p.metadata.name));
      await Promise.all(idle.map((p) => setPodAnswer(ns, p.metadata.name, "error")));
      await Promise.all(loaded.map((p) => setPodAnswer(ns, p.metadata.name, "error")));
      assert.equal(
        await predict(ns, name, { currentReplicas: 8, servedWhen: formulaIs(30) }),
        3,
      );
      const fallbackAfter = Date.now() - failed;
      watching = false;
      await watcher;
      assert.match(
        reason,
        /req[-_][ab]/,
        `the 404 while below the threshold names an input: ${JSON.stringify(reason)}`,
      );
      t.diagnostic(
        `fallback served ${fallbackAfter} ms after the pods failed; 404 before: ${reason}`,
      );
      // three failed collections at 1 s intervals: not before ~2 s
      assert.ok(fallbackAfter >= 1500, `fallback served ${fallbackAfter} ms after the failure`);
      await expectReplicas(ns, name, 3);
      const active = await waitFor(async () => (await hpaEvents(name, "FallbackActive"))[0], {
        what: "a FallbackActive event on the HPA",
        timeoutMs: WAIT_MS,
      });
      assert.equal(active.type, "Warning");
      assert.equal(await fallbackActiveGauge(name, "combined"), "1");
      assert.deepEqual(await hpaEvents(name, "FallbackEnded"), [], "fallback has not ended");

      // 3. the pods answer again: 74.75 from 3 (ratio 2.49) -> 8
      const survivors = await readyPods(ns, name);
      assert.equal(survivors.length, 3);
      assert.ok(
        loaded.every((l) => survivors.some((s) => s.metadata.name === l.metadata.name)),
        "the loaded pods are still there",
      );
      await Promise.all(survivors.map((p) => setPodAnswer(ns, p.metadata.name, "ok")));
      assert.equal(
        await predict(ns, name, { currentReplicas: 3, servedWhen: formulaIs(74.75) }),
        8,
      );
      await expectReplicas(ns, name, 8);
      const ended = await waitFor(async () => (await hpaEvents(name, "FallbackEnded"))[0], {
        what: "a FallbackEnded event on the HPA",
        timeoutMs: WAIT_MS,
      });
      assert.equal(ended.type, "Normal");
      assert.equal(await fallbackActiveGauge(name, "combined"), "0");
      assert.equal((await hpaEvents(name, "FallbackActive")).length, 1, "one fallback");
    });
  });

  // The adapter runs the guard with a pass every 2 s (harness.ts). Its queries go to the
  // harness's real Prometheus, named on each HPA (estafette.io/hpa-scaler-prometheus-server-url):
  // a constant query needs no scrape target, and a Prometheus of tests/fakes/prometheus_server.ts
  // would listen on the host's loopback, which the adapter's network namespace cannot reach.
  describe("replica guard: estafette.io/hpa-scaler annotations (issue 22)", {
    skip: (STUB && "stub adapter") ||
      (!state?.prometheus && "no Prometheus server (Debian package prometheus)") ||
      (!state?.replicaGuardIntervalSeconds &&
        "the replica guard is off (HPA_E2E_ADAPTER_ARGS, or a harness started before it)"),
  }, () => {
    const ENABLED = "estafette.io/hpa-scaler";
    const STATE = "estafette.io/hpa-scaler-state";
    const LOWER_BOUND = 3; // the adapter's default (--estafette-minimum-replicas-lower-bound)
    let ns = "";
    let promUrl = "";
    before(async () => {
      ns = await createNamespace("e2e-guard");
      promUrl = state!.prometheus!.url;
    });
    after(() => deleteNamespace(ns));

    /** The longest time between two passes of the guard: its interval plus 25% jitter. */
    const passMs = (): number => state!.replicaGuardIntervalSeconds! * 1000 * 1.25;

    /** The HPA's own metric: the pods' `rps` against 10 each. */
    const RPS_ANNOTATIONS: Record<string, string> = {
      "metric-config.pods.rps.json-path/json-key": "$.rps",
      "metric-config.pods.rps.json-path/path": "/metrics",
      "metric-config.pods.rps.json-path/port": "9090",
      "metric-config.pods.rps.json-path/interval": "1s",
      "metric-config.pods.rps.json-path/request-timeout": "1s",
      "metric-config.pods.rps.json-path/min-pod-ready-age": "0s",
    };
    const RPS_METRIC = [{
      type: "Pods",
      pods: { metric: { name: "rps" }, target: { type: "AverageValue", averageValue: "10" } },
    }];

    /** The guard's annotations, on, with the harness's real Prometheus named on the HPA. */
    function guardAnnotations(extra: Record<string, string>): Record<string, string> {
      return {
        [ENABLED]: "true",
        "estafette.io/hpa-scaler-prometheus-server-url": promUrl,
        ...extra,
      };
    }

    /** Our core's decision for these annotations and counts (lower bound 3). */
    function decide(
      annotations: Record<string, string>,
      counts: { queryValue?: number; current: number; min: number; max: number },
    ): { target: number; maxReplicas: number | undefined; message: string } {
      const { config } = parseGuardConfig(annotations, { defaultPrometheusUrl: promUrl });
      const d = decideGuard({
        config,
        queryValue: counts.queryValue,
        currentReplicas: counts.current,
        minReplicas: counts.min,
        maxReplicas: counts.max,
        lowerBound: LOWER_BOUND,
        deploymentInProgress: false,
        now: Date.now(),
      });
      return {
        target: d.target,
        maxReplicas: d.write?.maxReplicas,
        message: guardChangeMessage(d, config),
      };
    }

    function patchHpa(name: string, body: unknown): Promise<Obj> {
      return kube.request(
        "PATCH",
        `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers/${name}`,
        { body, contentType: "application/merge-patch+json" },
      );
    }

    /** The HPA's events with `reason`, oldest first. */
    async function events(name: string, reason: string): Promise<Obj[]> {
      const sel = encodeURIComponent(
        `involvedObject.kind=HorizontalPodAutoscaler,involvedObject.name=${name},reason=${reason}`,
      );
      const list = await kube.request(
        "GET",
        `/api/v1/namespaces/${ns}/events?fieldSelector=${sel}`,
      );
      const at = (e: Obj): number =>
        Date.parse(e.firstTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp);
      return list.items.sort((x: Obj, y: Obj) => at(x) - at(y));
    }

    /** The messages of the HPA's Normal ReplicaGuardChanged events, oldest first. */
    async function changes(name: string): Promise<string[]> {
      const list = await events(name, "ReplicaGuardChanged");
      for (const e of list) assert.equal(e.type, "Normal", JSON.stringify(e));
      return list.map((e) => e.message);
    }

    /**
     * The HPA's ReplicaGuardChanged messages are exactly `expected` (the event follows the patch:
     * wait until there are that many, then compare).
     */
    async function expectChanges(name: string, expected: string[], what = ""): Promise<void> {
      const got = await waitFor(async () => {
        const list = await changes(name);
        return list.length >= expected.length ? list : undefined;
      }, { what: `${expected.length} ReplicaGuardChanged events on ${name}`, timeoutMs: WAIT_MS })
        .catch(async (err) => {
          throw new Error(`${(err as Error).message}: ${JSON.stringify(await changes(name))}`);
        });
      assert.deepEqual(got, expected, what);
    }

    /** Wait until the guard has written `min` (and `max`) on the HPA. */
    function guardWrote(name: string, min: number, max: number): Promise<Obj> {
      let last: Obj = null;
      return waitFor(async () => {
        last = await getHpa(ns, name);
        return last.spec.minReplicas === min && last.spec.maxReplicas === max ? last : undefined;
      }, {
        what: `HPA ${ns}/${name} minReplicas ${min} maxReplicas ${max}`,
        timeoutMs: WAIT_MS,
      }).catch((err) => {
        throw new Error(
          `${
            (err as Error).message
          }; last spec min ${last?.spec.minReplicas} max ${last?.spec.maxReplicas}`,
        );
      });
    }

    /**
     * The state annotation: upstream's JSON, keys in its order, exactly `expected` once
     * lastUpdated is set aside; lastUpdated RFC3339 UTC, at or after `since` (whole seconds).
     */
    function checkState(hpa: Obj, expected: string, since: number): string {
      const text = hpa.metadata.annotations?.[STATE];
      assert.equal(typeof text, "string", `no ${STATE} annotation`);
      const m = text.match(/"lastUpdated":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)"/);
      assert.ok(m, `lastUpdated in ${text}`);
      assert.equal(text.replace(m[0], `"lastUpdated":"T"`), expected);
      const at = Date.parse(m[1]);
      assert.ok(
        at >= Math.floor(since / 1000) * 1000 && at <= Date.now(),
        `lastUpdated ${m[1]} not within the case (from ${new Date(since).toISOString()})`,
      );
      return text;
    }

    /** The guard's own gauges of an HPA on the adapter's /metrics (upstream's names). */
    async function guardGauges(name: string): Promise<Record<string, number>> {
      const text = await (await fetch(state!.adapterMetrics)).text();
      const out: Record<string, number> = {};
      for (const line of text.split("\n")) {
        const m = line.match(/^estafette_hpa_scaler_(\w+)\{([^}]*)\} (\S+)$/);
        if (!m) continue;
        const labels = Object.fromEntries(
          [...m[2].matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]),
        );
        if (labels.namespace === ns && labels.hpa === name) out[m[1]] = Number(m[3]);
      }
      return out;
    }

    /** Every distinct desiredReplicas of the HPA and spec.replicas of its Deployment, in order. */
    function recordCounts(
      name: string,
    ): { stop(): Promise<{ desired: number[]; replicas: number[] }> } {
      const desired: number[] = [];
      const replicas: number[] = [];
      let stopped = false;
      const push = (list: number[], v: unknown): void => {
        if (typeof v === "number" && v > 0 && list[list.length - 1] !== v) list.push(v);
      };
      const loop = (async () => {
        while (!stopped) {
          const [hpa, d] = await Promise.all([
            getHpa(ns, name),
            kube.request("GET", `/apis/apps/v1/namespaces/${ns}/deployments/${name}`),
          ]);
          push(desired, hpa.status?.desiredReplicas);
          push(replicas, d.spec.replicas);
          await sleep(100);
        }
      })();
      return {
        async stop() {
          stopped = true;
          await loop;
          return { desired, replicas };
        },
      };
    }

    /** For `ms`, the HPA's minReplicas stays `min` and its state annotation stays `stateText`. */
    async function holds(name: string, min: number, stateText: string, ms: number): Promise<void> {
      const until = Date.now() + ms;
      while (Date.now() < until) {
        const hpa = await getHpa(ns, name);
        assert.equal(hpa.spec.minReplicas, min, "the guard wrote minReplicas after all");
        assert.equal(hpa.metadata.annotations?.[STATE], stateText, "the state annotation moved");
        await sleep(200);
      }
    }

    /** Served values of the Pods metric: `count` pods, each answering `value`. */
    const podsAnswer = (count: number, value: string) => (m: HpaMetricObservation[]): boolean => {
      const values = Object.values((servedValue(m[0]) ?? {}) as Record<string, string>);
      return values.length === count && values.every((v) => v === value);
    };

    it(
      "raises minReplicas to ceil(delta + query / requests-per-replica) = 9, maxReplicas to 10, and the controller holds 9",
      {
        timeout: CASE_TIMEOUT,
      },
      async () => {
        const name = "floor";
        const query = "vector(22.54)";
        const annotations = guardAnnotations({
          "estafette.io/hpa-scaler-prometheus-query": query,
          "estafette.io/hpa-scaler-requests-per-replica": "2.5",
          "estafette.io/hpa-scaler-delta": "-0.5",
        });
        // the real Prometheus answers the constant query (no scrape target needed)
        const answer = await (await fetch(
          `${promUrl}/api/v1/query?query=${encodeURIComponent(query)}`,
        )).json();
        assert.equal(answer.data.result[0].value[1], "22.54");
        // q = ceil(-0.5 + 22.54 / 2.5) = ceil(8.516) = 9; ratio 1 (the default): no cap, so 9;
        // 9 >= maxReplicas 8: maxReplicas 9 + 1 = 10
        assert.equal(Math.ceil(-0.5 + 22.54 / 2.5), 9);
        const predicted = decide(annotations, { queryValue: 22.54, current: 1, min: 1, max: 8 });
        assert.equal(predicted.target, 9);
        assert.equal(predicted.maxReplicas, 10);
        assert.equal(
          predicted.message,
          "minReplicas 1 -> 9, maxReplicas 8 -> 10: query 22.54 / 2.5 - 0.5",
        );

        // one pod answering 1 against 10: the HPA's own metric asks for 1
        await createDeployment(ns, name, { replicas: 1, metrics: { rps: 1 } });
        const since = Date.now();
        await createHpa(ns, name, {
          target: name,
          minReplicas: 1,
          maxReplicas: 8,
          annotations: { ...RPS_ANNOTATIONS, ...annotations },
          metrics: RPS_METRIC,
        });
        const written = await guardWrote(name, 9, 10);
        const stateText = checkState(
          written,
          `{"enabled":"true","prometheusQuery":"vector(22.54)","requestsPerReplica":2.5,"delta":-0.5,` +
            `"lastUpdated":"T","prometheusServerUrl":"${promUrl}","scaleDownMaxRatio":1,` +
            `"enableScaleDownRatioDeploymentChecking":"false"}`,
          since,
        );

        // the real controller scales to the floor and holds it while the metric asks for fewer:
        // 9 pods answering 1 against 10 each is ceil(0.1 x 9) = 1
        const hpa = await expectReplicas(ns, name, 9);
        assert.equal(
          await predict(ns, name, { minReplicas: 1, servedWhen: podsAnswer(9, "1") }),
          1,
          "what the metric alone asks for",
        );
        assert.equal(hpa.status.currentMetrics?.[0]?.pods?.current?.averageValue, "1");
        const limited = hpaCondition(hpa, "ScalingLimited");
        assert.equal(limited?.status, "True", describeHpa(hpa));
        assert.equal(limited?.reason, "TooFewReplicas", describeHpa(hpa));

        // later passes (currentReplicas 9) decide 9 again: nothing more is written
        await holds(name, 9, stateText, 2 * passMs());
        const later = await getHpa(ns, name);
        assert.equal(later.spec.maxReplicas, 10);
        await expectChanges(name, [predicted.message]);
        assert.deepEqual(await events(name, "ReplicaGuardFailed"), []);
        const gauges = await guardGauges(name);
        assert.deepEqual(gauges, { min_replicas: 9, actual_replicas: 9, request_rate: 22.54 });
      },
    );

    it(
      "caps the scale-down of a drop from 8 to 1 at 4 (scale-down-max-ratio 0.5), then the lower bound 3",
      {
        timeout: CASE_TIMEOUT,
      },
      async () => {
        const name = "cap";
        // 8 pods answering 10 against 10 each: the metric asks for 8
        await createDeployment(ns, name, { replicas: 8, metrics: { rps: 10 } });
        await createHpa(ns, name, {
          target: name,
          minReplicas: 1,
          maxReplicas: 10,
          annotations: RPS_ANNOTATIONS,
          metrics: RPS_METRIC,
        });
        assert.equal(await predict(ns, name, { servedWhen: podsAnswer(8, "10") }), 8);
        await expectReplicas(ns, name, 8);
        await waitFor(async () => (await getHpa(ns, name)).status?.currentReplicas === 8, {
          what: "status.currentReplicas 8",
          timeoutMs: WAIT_MS,
        });

        // the guard on, no query: m = floor(8 x 0.5) = 4, g = 8 - 4 = 4, target max(0, 4, 3) = 4;
        // then from 4: g = 4 - floor(4 x 0.5) = 2, raised to the lower bound 3; from 3: 3 - 1 = 2,
        // 3 again (no write)
        const annotations = guardAnnotations({
          "estafette.io/hpa-scaler-scale-down-max-ratio": "0.5",
        });
        const at8 = decide(annotations, { current: 8, min: 1, max: 10 });
        const at4 = decide(annotations, { current: 4, min: 4, max: 10 });
        const at3 = decide(annotations, { current: 3, min: 3, max: 10 });
        assert.deepEqual([at8.target, at4.target, at3.target], [4, 3, 3]);
        assert.equal(at8.message, "minReplicas 1 -> 4: scale-down cap 8 - floor(8 x 0.5) = 4");
        assert.equal(at4.message, "minReplicas 4 -> 3: lower bound 3");
        assert.equal(at8.maxReplicas, undefined, "4 < maxReplicas 10: not raised");

        const since = Date.now();
        await patchHpa(name, { metadata: { annotations } });
        const written = await guardWrote(name, 4, 10);
        checkState(
          written,
          `{"enabled":"true","prometheusQuery":"","requestsPerReplica":1,"delta":0,` +
            `"lastUpdated":"T","prometheusServerUrl":"${promUrl}","scaleDownMaxRatio":0.5,` +
            `"enableScaleDownRatioDeploymentChecking":"false"}`,
          since,
        );
        await expectChanges(name, [at8.message]);
        // the metric still asks for 8, above the floor
        await expectReplicas(ns, name, 8);

        // the drop, made at once for the controller: its scale-down is disabled while the 8 pods
        // switch to 1 (one by one for the collector), until the adapter serves 1 for each
        await patchHpa(name, { spec: { behavior: { scaleDown: { selectPolicy: "Disabled" } } } });
        const pods = await readyPods(ns, name);
        assert.equal(pods.length, 8);
        await Promise.all(pods.map((p) => setPodMetrics(ns, p.metadata.name, { rps: 1 })));
        // 8 pods answering 1 against 10 each: ceil(0.1 x 8) = 1 (once the scale-down is back on)
        assert.equal(
          await predict(ns, name, {
            minReplicas: 1,
            behavior: FAST_BEHAVIOR,
            servedWhen: podsAnswer(8, "1"),
          }),
          1,
          "what the metric alone asks for",
        );
        assert.equal(
          (await getHpa(ns, name)).spec.minReplicas,
          4,
          "the guard kept 4 at 8 replicas",
        );
        const recorder = recordCounts(name);
        await patchHpa(name, { spec: { behavior: FAST_BEHAVIOR } });
        // first step: max(1, minReplicas 4) = 4; the guard's next pass (currentReplicas 4) sets
        // the lower bound 3, and the controller follows
        await guardWrote(name, 3, 10);
        const hpa = await expectReplicas(ns, name, 3);
        const seen = await recorder.stop();
        assert.deepEqual(seen.desired, [8, 4, 3], "status.desiredReplicas, in order");
        assert.deepEqual(seen.replicas, [8, 4, 3], "the Deployment's spec.replicas, in order");
        assert.equal(hpa.spec.maxReplicas, 10);
        await expectChanges(name, [at8.message, at4.message]);
        // from 3 the guard decides 3 again: no more writes
        await holds(name, 3, hpa.metadata.annotations[STATE], 2 * passMs());
        await expectChanges(name, [at8.message, at4.message]);
        assert.deepEqual(await events(name, "ReplicaGuardFailed"), []);
        assert.deepEqual(await guardGauges(name), {
          min_replicas: 3,
          actual_replicas: 3,
          request_rate: 0,
        });
      },
    );

    it('stops writing once estafette.io/hpa-scaler is "false" or removed', {
      timeout: CASE_TIMEOUT,
    }, async (t) => {
      const name = "off";
      // no query, ratio 1: the lower bound decides (3); 3 < maxReplicas 5: not raised
      const annotations = guardAnnotations({});
      const first = decide(annotations, { current: 1, min: 1, max: 5 });
      const restore = decide(annotations, { current: 3, min: 2, max: 5 });
      assert.equal(first.message, "minReplicas 1 -> 3: lower bound 3");
      assert.equal(restore.message, "minReplicas 2 -> 3: lower bound 3");
      await createDeployment(ns, name, { replicas: 1, metrics: { rps: 1 } });
      await createHpa(ns, name, {
        target: name,
        minReplicas: 1,
        maxReplicas: 5,
        annotations: { ...RPS_ANNOTATIONS, ...annotations },
        metrics: RPS_METRIC,
      });
      await guardWrote(name, 3, 5);
      await expectReplicas(ns, name, 3);

      // while on, a minReplicas set by hand goes back on the guard's next pass
      const byHand = Date.now();
      await patchHpa(name, { spec: { minReplicas: 2 } });
      const restored = await guardWrote(name, 3, 5);
      t.diagnostic(`the guard put minReplicas 2 back to 3 after ${Date.now() - byHand} ms`);
      await expectChanges(name, [first.message, restore.message]);
      const stateText = restored.metadata.annotations[STATE];

      // "false": the guard leaves the HPA alone (minReplicas, maxReplicas and its state stay)
      await patchHpa(name, {
        metadata: { annotations: { [ENABLED]: "false" } },
        spec: { minReplicas: 2 },
      });
      await holds(name, 2, stateText, 3 * passMs());
      await expectReplicas(ns, name, 2);

      // removed: the same
      await patchHpa(name, {
        metadata: { annotations: { [ENABLED]: null } },
        spec: { minReplicas: 1 },
      });
      await holds(name, 1, stateText, 3 * passMs());
      // the controller goes down to what the metric asks: 1 pod answering 1 against 10
      const hpa = await expectReplicas(ns, name, 1);
      assert.equal(hpa.spec.minReplicas, 1);
      assert.equal(hpa.spec.maxReplicas, 5);
      assert.equal(hpa.metadata.annotations[STATE], stateText, "upstream leaves its state");
      await expectChanges(name, [first.message, restore.message], "no more writes");
      assert.deepEqual(await events(name, "ReplicaGuardFailed"), []);
      assert.deepEqual(await guardGauges(name), {}, "a disabled HPA has no gauges");
    });
  });

  // Issue 23: the adapter runs the Knative reconciler (--knative-autoscaler, harness.ts) with the
  // harness's real Prometheus as --knative-prometheus-address. Knative's CRDs are installed by
  // the harness (tests/e2e/knative_crds.ts); no Knative controller runs, so this block plays the
  // ServerlessService reconciler (the SKS's status) where a case needs it. Every custom metric
  // is a constant query, so the counts are exact; the predictions come from our core maths.
  describe("Knative HPA class: autoscaler-keda's annotations (issue 23)", {
    skip: (STUB && "stub adapter") ||
      (!state?.prometheus && "no Prometheus server (Debian package prometheus)") ||
      (!state?.knative &&
        "the Knative reconciler is off (HPA_E2E_ADAPTER_ARGS, or a harness started before it)"),
  }, () => {
    const K = "autoscaling.knative.dev";
    const CLASS = `${K}/class`;
    const HPA_CLASS = "hpa.autoscaling.knative.dev";
    const SO_LABEL = "scaledobject.keda.sh/name";
    /** KEDA's labels of the HPA of ScaledObject `name` (before and after its own labels). */
    const kedaLabels = (name: string, own: Record<string, string> = {}) => ({
      "app.kubernetes.io/name": name,
      "app.kubernetes.io/version": VERSION,
      "app.kubernetes.io/part-of": name,
      "app.kubernetes.io/managed-by": "hpa-metrics-adapter",
      ...own,
      [SO_LABEL]: name,
    });
    const PA_API = "autoscaling.internal.knative.dev/v1alpha1";
    const SKS_API = "networking.internal.knative.dev/v1alpha1";
    const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
    let ns = "";
    let promUrl = "";
    before(async () => {
      ns = await createNamespace("e2e-knative");
      promUrl = state!.prometheus!.url;
    });
    after(() => deleteNamespace(ns));

    const paPath = (name = ""): string =>
      `/apis/${PA_API}/namespaces/${ns}/podautoscalers${name ? `/${name}` : ""}`;
    const sksPath = (name: string): string =>
      `/apis/${SKS_API}/namespaces/${ns}/serverlessservices/${name}`;
    const hpaPath = (name: string): string =>
      `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers/${name}`;

    /** Knative's labels of a revision's PA (`<service>-<5 digits>`). */
    function revisionLabels(name: string): Record<string, string> {
      const service = name.replace(/-\d{5}$/, "");
      return {
        "serving.knative.dev/service": service,
        "serving.knative.dev/configuration": service,
        "serving.knative.dev/revision": name,
      };
    }

    /**
     * A PA of class hpa as Serving makes it for revision `name`: the revision's labels, the
     * class and the given annotations, the scale target `<name>-deployment`.
     */
    async function createPa(name: string, annotations: Record<string, string>): Promise<Obj> {
      return await kube.request("POST", paPath(), {
        body: {
          apiVersion: PA_API,
          kind: "PodAutoscaler",
          metadata: {
            name,
            namespace: ns,
            labels: revisionLabels(name),
            annotations: { [CLASS]: HPA_CLASS, ...annotations },
          },
          spec: {
            scaleTargetRef: {
              apiVersion: "apps/v1",
              kind: "Deployment",
              name: `${name}-deployment`,
            },
            protocolType: "http1",
            reachability: "Reachable",
          },
        },
      });
    }

    /**
     * One External metric of the HPA KEDA makes of the in-memory ScaledObject `so`, as the API
     * server stores it: `s<index>-prometheus` or `composite-metric`, selected by KEDA's label.
     */
    function externalMetric(metric: string, so: string, averageValue: string): Obj {
      return {
        type: "External",
        external: {
          metric: { name: metric, selector: { matchLabels: { [SO_LABEL]: so } } },
          target: { type: "AverageValue", averageValue },
        },
      };
    }

    /** The PA's controller reference (what the HPA and the SKS must carry). */
    function ownerRefOf(owner: Obj, apiVersion: string, kind: string): Obj[] {
      return [{
        apiVersion,
        kind,
        name: owner.metadata.name,
        uid: owner.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      }];
    }

    /** Wait until `path` exists and `check` accepts it; the last object read in the error. */
    async function waitObject(
      path: string,
      what: string,
      check: (o: Obj) => boolean = () => true,
    ): Promise<Obj> {
      let last: Obj = null;
      return await waitFor(async () => {
        last = await kube.get(path);
        return last && check(last) ? last : undefined;
      }, { what, timeoutMs: WAIT_MS }).catch((err) => {
        throw new Error(
          `${(err as Error).message}; last: ${
            JSON.stringify(
              last ? { metadata: last.metadata, spec: last.spec, status: last.status } : null,
            )
          }`,
        );
      });
    }

    /** Wait until `path` is gone (404). */
    async function waitGone(path: string, what: string, timeoutMs = WAIT_MS): Promise<void> {
      await waitFor(async () => (await kube.get(path)) === null, { what, timeoutMs });
    }

    /** The PA's conditions as `type -> "Status[ Reason][: message]"`. */
    function conditions(pa: Obj): Record<string, string> {
      const out: Record<string, string> = {};
      for (const c of pa.status?.conditions ?? []) {
        assert.match(c.lastTransitionTime ?? "", RFC3339, `${c.type} lastTransitionTime`);
        out[c.type] = `${c.status}${c.reason ? ` ${c.reason}` : ""}${
          c.message ? `: ${c.message}` : ""
        }`;
      }
      return out;
    }

    /** Wait until the PA's conditions are `expected` (and `more` accepts the PA). */
    function waitPaStatus(
      name: string,
      expected: Record<string, string>,
      more: (pa: Obj) => boolean = () => true,
    ): Promise<Obj> {
      return waitObject(
        paPath(name),
        `PA ${ns}/${name} conditions ${JSON.stringify(expected)}`,
        (pa) => {
          try {
            assert.deepEqual(conditions(pa), expected);
            return more(pa);
          } catch {
            return false;
          }
        },
      );
    }

    /** Play Knative's SKS reconciler: the SKS's services exist and it is Ready. */
    async function markSksReady(name: string): Promise<void> {
      const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
      await kube.request("PATCH", `${sksPath(name)}/status`, {
        body: {
          status: {
            observedGeneration: 1,
            serviceName: name,
            privateServiceName: `${name}-private`,
            conditions: [
              { type: "ActivatorEndpointsPopulated", status: "True", lastTransitionTime: now },
              { type: "EndpointsPopulated", status: "True", lastTransitionTime: now },
              { type: "Ready", status: "True", lastTransitionTime: now },
            ],
          },
        },
        contentType: "application/merge-patch+json",
      });
    }

    /** The External items served for the HPA's first metric are exactly `values`. */
    const servedItems = (...values: string[]) => (m: HpaMetricObservation[]): boolean =>
      JSON.stringify(servedValue(m[0])) === JSON.stringify(values);

    /** Warning events of the adapter's collectors (conflicts included) on an HPA. */
    async function collectorWarnings(name: string): Promise<string[]> {
      const sel = encodeURIComponent(
        `involvedObject.kind=HorizontalPodAutoscaler,involvedObject.name=${name},type=Warning`,
      );
      const list = await kube.request(
        "GET",
        `/api/v1/namespaces/${ns}/events?fieldSelector=${sel}`,
      );
      return list.items
        .filter((e: Obj) => e.reason === "CreateNewMetricsCollector")
        .map((e: Obj) => e.message);
    }

    const ALL_TRUE = {
      Active: "True",
      Ready: "True",
      SKSReady: "True",
      ScaleTargetInitialized: "True",
    };

    it(
      "custom Prometheus metric: the HPA field by field, ceil(23 / 5) = 5, the SKS, PA status following the HPA, a changed query -> 2",
      { timeout: CASE_TIMEOUT },
      async (t) => {
        const name = "hello-00001";
        const target = `${name}-deployment`;
        await createDeployment(ns, target, { replicas: 1 });
        // a constant series whose label carries the revision: the template is rendered
        const template = `label_replace(vector(23), "revision", "{{ .revisionName }}", "", "")`;
        const annotations = {
          [`${K}/metric`]: "rps",
          [`${K}/target`]: "5",
          [`${K}/max-scale`]: "10",
          [`${K}/prometheus-query`]: template,
        };
        const recorder = recordDesired(ns, name);
        const started = Date.now();
        const pa = await createPa(name, annotations);

        // 1. the HPA: KEDA's HPA of the ScaledObject autoscaler-keda would create (in memory),
        // named after the PA, owned by it
        const hpa = await waitObject(hpaPath(name), `HPA ${ns}/${name}`);
        t.diagnostic(`HPA created ${Date.now() - started} ms after the PA`);
        assert.deepEqual(
          hpa.metadata.ownerReferences,
          ownerRefOf(pa, PA_API, "PodAutoscaler"),
        );
        assert.deepEqual(hpa.metadata.labels, kedaLabels(name, revisionLabels(name)));
        assert.deepEqual(hpa.metadata.annotations, { [CLASS]: HPA_CLASS, ...annotations });
        assert.deepEqual(hpa.spec, {
          scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: target },
          minReplicas: 1,
          maxReplicas: 10,
          metrics: [externalMetric("s0-prometheus", name, "5")],
        });
        // no ScaledObject is written
        assert.equal(
          await kube.get(`/apis/keda.sh/v1alpha1/namespaces/${ns}/scaledobjects/${name}`).catch(
            () => null,
          ),
          null,
        );

        // 2. the SKS in Serve mode, owned by the PA
        const sks = await waitObject(sksPath(name), `SKS ${ns}/${name}`);
        assert.deepEqual(sks.metadata.ownerReferences, ownerRefOf(pa, PA_API, "PodAutoscaler"));
        assert.deepEqual(sks.metadata.labels, revisionLabels(name));
        assert.deepEqual(sks.metadata.annotations, { [`${K}/metric`]: "rps" });
        assert.deepEqual(sks.spec, {
          mode: "Serve",
          objectRef: { apiVersion: "apps/v1", kind: "Deployment", name: target },
          protocolType: "http1",
          numActivators: 0,
        });

        // 3. the controller: no behavior, so the legacy limit max(2 * 1, 4) = 4 first, then
        // ceil(23 / 5) = 5 (at 5: 23 / 25 = 0.92, inside the 10% tolerance)
        assert.equal(
          await predict(ns, name, { currentReplicas: 1, servedWhen: servedItems("23") }),
          4,
        );
        assert.equal(
          await predict(ns, name, {
            currentReplicas: 4,
            pods: readyPodsNamed(4),
            servedWhen: servedItems("23"),
          }),
          5,
        );
        await expectReplicas(ns, name, 5);
        const seen = (await recorder.stop()).filter((d) => d !== 1);
        assert.deepEqual(seen, [4, 5], "desiredReplicas went 1 -> 4 -> 5");
        t.diagnostic(`scaled to 5 ${Date.now() - started} ms after the PA`);

        // 4. PA status: the SKS is not ready (nobody runs Knative's SKS reconciler yet)
        const waiting = "NotReady: SKS Services are not ready yet";
        const notReady = await waitPaStatus(name, {
          Active: "True",
          Ready: `Unknown ${waiting}`,
          SKSReady: `Unknown ${waiting}`,
          ScaleTargetInitialized: "Unknown",
        }, (p) => p.status.desiredScale === 5 && p.status.actualScale === 5);
        assert.equal(notReady.status.observedGeneration, 1);
        assert.equal(notReady.status.serviceName, undefined);

        // ... and once it is: Ready, the services, the scale target initialized (5 >= 1)
        await markSksReady(name);
        const ready = await waitPaStatus(name, ALL_TRUE);
        assert.deepEqual(
          [ready.status.desiredScale, ready.status.actualScale],
          [5, 5],
          "desiredScale / actualScale are the HPA's desiredReplicas / currentReplicas",
        );
        assert.equal(ready.status.serviceName, name);
        assert.equal(ready.status.metricsServiceName, `${name}-private`);

        // 5. a new query on the PA: the same HPA (merge update), ceil(8 / 25 * 5) = 2, and the
        // PA's desiredScale / actualScale follow
        const lower = `label_replace(vector(8), "revision", "{{ .revisionName }}", "", "")`;
        await kube.request("PATCH", paPath(name), {
          body: { metadata: { annotations: { [`${K}/prometheus-query`]: lower } } },
          contentType: "application/merge-patch+json",
        });
        const updated = await waitObject(
          hpaPath(name),
          "the HPA's annotations updated",
          (h) => h.metadata.annotations?.[`${K}/prometheus-query`] === lower,
        );
        assert.equal(updated.metadata.uid, hpa.metadata.uid, "patched, not recreated");
        assert.deepEqual(updated.metadata.annotations, {
          [CLASS]: HPA_CLASS,
          ...annotations,
          [`${K}/prometheus-query`]: lower,
        });
        assert.deepEqual(updated.spec.metrics, hpa.spec.metrics);
        assert.equal(
          await predict(ns, name, { currentReplicas: 5, servedWhen: servedItems("8") }),
          2,
        );
        await expectReplicas(ns, name, 2);
        const followed = await waitPaStatus(
          name,
          ALL_TRUE,
          (p) => p.status.desiredScale === 2 && p.status.actualScale === 2,
        );
        // the conditions held: their transition times did not move
        assert.deepEqual(followed.status.conditions, ready.status.conditions);
      },
    );

    it(
      "scaling-modifiers over two prometheus triggers: one External composite-metric, (40 + 16) / 2 = 28 -> ceil(28 / 5) = 6",
      { timeout: CASE_TIMEOUT },
      async () => {
        const name = "calc-00001";
        const target = `${name}-deployment`;
        await createDeployment(ns, target, { replicas: 1 });
        const modifiers = {
          formula: "(trigger1 + trigger2)/2",
          target: "5",
          activationTarget: "1",
          metricType: "AverageValue",
        };
        const extra = [{
          type: "prometheus",
          name: "trigger2",
          metadata: { serverAddress: promUrl, query: "vector(16)", threshold: "5" },
        }];
        const annotations = {
          [`${K}/metric`]: "rps",
          [`${K}/target`]: "5",
          [`${K}/max-scale`]: "10",
          [`${K}/prometheus-query`]: "vector(40)",
          [`${K}/trigger-prometheus-name`]: "trigger1",
          [`${K}/extra-prometheus-triggers`]: JSON.stringify(extra),
          [`${K}/scaling-modifiers`]: JSON.stringify(modifiers),
          [`${K}/hpa-scale-up-rules`]: JSON.stringify(FAST_BEHAVIOR.scaleUp),
          [`${K}/hpa-scale-down-rules`]: JSON.stringify(FAST_BEHAVIOR.scaleDown),
        };
        const pa = await createPa(name, annotations);
        const hpa = await waitObject(hpaPath(name), `HPA ${ns}/${name}`);
        assert.deepEqual(hpa.metadata.ownerReferences, ownerRefOf(pa, PA_API, "PodAutoscaler"));
        // KEDA's composite-metric: the triggers are its hidden inputs, named by trigger name
        assert.deepEqual(hpa.metadata.labels, kedaLabels(name, revisionLabels(name)));
        assert.deepEqual(hpa.metadata.annotations, { [CLASS]: HPA_CLASS, ...annotations });
        assert.deepEqual(hpa.spec, {
          scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: target },
          minReplicas: 1,
          maxReplicas: 10,
          metrics: [externalMetric("composite-metric", name, "5")],
          behavior: FAST_BEHAVIOR,
        });
        assert.equal(
          await predict(ns, name, { currentReplicas: 1, servedWhen: servedItems("28") }),
          6,
        );
        // at 6: 28 / 30 = 0.93, inside the tolerance
        await expectReplicas(ns, name, 6);
        await markSksReady(name);
        await waitPaStatus(
          name,
          ALL_TRUE,
          (p) => p.status.desiredScale === 6 && p.status.actualScale === 6,
        );
      },
    );

    it(
      "two revisions of one service in one namespace, one metric name, different queries: 8 -> 2 and 19 -> 4, no conflict",
      { timeout: CASE_TIMEOUT },
      async () => {
        const revisions = [
          { name: "shop-00001", value: 8, expected: 2 }, // ceil(8 / 5)
          { name: "shop-00002", value: 19, expected: 4 }, // ceil(19 / 5), the legacy limit is 4
        ];
        for (const r of revisions) {
          await createDeployment(ns, `${r.name}-deployment`, { replicas: 1 });
        }
        for (const r of revisions) {
          await createPa(r.name, {
            [`${K}/metric`]: "rps",
            [`${K}/target`]: "5",
            [`${K}/max-scale`]: "10",
            [`${K}/prometheus-query`]: `vector(${r.value})`,
          });
        }
        for (const r of revisions) {
          const hpa = await waitObject(hpaPath(r.name), `HPA ${ns}/${r.name}`);
          assert.deepEqual(hpa.spec.metrics, [externalMetric("s0-prometheus", r.name, "5")]);
          assert.equal(
            await predict(ns, r.name, {
              currentReplicas: 1,
              servedWhen: servedItems(String(r.value)),
            }),
            r.expected,
          );
        }
        await Promise.all(revisions.map((r) => expectReplicas(ns, r.name, r.expected)));
        // each still served its own value, and no HPA was told of a conflict
        for (const r of revisions) {
          const hpa = await getHpa(ns, r.name);
          assert.ok(
            servedItems(String(r.value))(await observeMetrics(hpa)),
            `${r.name} serves ${r.value}`,
          );
          assert.deepEqual(await collectorWarnings(r.name), [], `${r.name}: no collector warning`);
          await markSksReady(r.name);
          await waitPaStatus(
            r.name,
            ALL_TRUE,
            (p) => p.status.desiredScale === r.expected && p.status.actualScale === r.expected,
          );
        }
      },
    );

    it(
      "an HPA of the PA's name that someone else owns: Active False NotOwned, untouched, no SKS; once it goes, the PA's own HPA",
      { timeout: CASE_TIMEOUT },
      async () => {
        const name = "taken-00001";
        await createHpa(ns, name, {
          target: "someone-else",
          maxReplicas: 3,
          metrics: [{
            type: "Resource",
            resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 80 } },
          }],
        });
        const foreign = await getHpa(ns, name);
        const pa = await createPa(name, {
          [`${K}/metric`]: "rps",
          [`${K}/target`]: "5",
          [`${K}/prometheus-query`]: "vector(3)",
        });
        const message =
          `There is an existing HorizontalPodAutoscaler "${name}" that we do not own.`;
        const status = await waitPaStatus(name, {
          Active: `False NotOwned: ${message}`,
          Ready: `False NotOwned: ${message}`,
          SKSReady: "Unknown",
          ScaleTargetInitialized: "Unknown",
        });
        assert.equal(status.status.desiredScale, undefined);
        assert.equal(status.status.actualScale, undefined);
        // a few more reconciles (HPA status writes, the resync) change nothing
        await sleep(3 * 1000 * state!.hpaSyncPeriodSeconds);
        const after = await getHpa(ns, name);
        assert.equal(after.metadata.uid, foreign.metadata.uid);
        assert.deepEqual(after.spec, foreign.spec, "the foreign HPA's spec is untouched");
        assert.deepEqual(after.metadata.annotations ?? {}, foreign.metadata.annotations ?? {});
        assert.deepEqual(after.metadata.labels, foreign.metadata.labels);
        assert.equal(after.metadata.ownerReferences, undefined);
        assert.equal(await kube.get(sksPath(name)), null, "no SKS while the HPA is not ours");
        assert.deepEqual(conditions(await kube.request("GET", paPath(name))), conditions(status));

        // the foreign HPA goes: the PA makes its own and is Active
        await kube.request("DELETE", hpaPath(name));
        const own = await waitObject(
          hpaPath(name),
          "the PA's own HPA",
          (h) => h.metadata.uid !== foreign.metadata.uid,
        );
        assert.deepEqual(own.metadata.ownerReferences, ownerRefOf(pa, PA_API, "PodAutoscaler"));
        await waitObject(sksPath(name), `SKS ${ns}/${name}`);
        await waitPaStatus(name, {
          Active: "True",
          Ready: "Unknown NotReady: SKS Services are not ready yet",
          SKSReady: "Unknown NotReady: SKS Services are not ready yet",
          ScaleTargetInitialized: "Unknown",
        });
      },
    );

    it(
      "deleting the PA deletes its HPA and SKS through the garbage collector",
      { timeout: CASE_TIMEOUT },
      async (t) => {
        const name = "gone-00001";
        await createDeployment(ns, `${name}-deployment`, { replicas: 1 });
        const pa = await createPa(name, {
          [`${K}/metric`]: "rps",
          [`${K}/target`]: "5",
          [`${K}/prometheus-query`]: "vector(3)",
        });
        const hpa = await waitObject(hpaPath(name), `HPA ${ns}/${name}`);
        assert.deepEqual(hpa.metadata.ownerReferences, ownerRefOf(pa, PA_API, "PodAutoscaler"));
        await waitObject(sksPath(name), `SKS ${ns}/${name}`);
        const deleted = Date.now();
        await kube.request("DELETE", paPath(name));
        await waitGone(hpaPath(name), `HPA ${ns}/${name} deleted by the garbage collector`);
        await waitGone(sksPath(name), `SKS ${ns}/${name} deleted by the garbage collector`);
        t.diagnostic(`HPA and SKS gone ${Date.now() - deleted} ms after the PA`);
        // not recreated by a later reconcile, and the Deployment stays
        await sleep(3_000);
        assert.equal(await kube.get(hpaPath(name)), null, "the HPA came back");
        assert.ok(
          await kube.get(`/apis/apps/v1/namespaces/${ns}/deployments/${name}-deployment`),
          "the Deployment is not the PA's",
        );
      },
    );

    it(
      "an annotated Deployment: its own HPA, ceil(14 / 5) = 3, a Warning event for a bad window, removing the class deletes the HPA",
      { timeout: CASE_TIMEOUT },
      async () => {
        const name = "worker";
        const path = `/apis/apps/v1/namespaces/${ns}/deployments/${name}`;
        await createDeployment(ns, name, { replicas: 1 });
        const annotations = {
          [CLASS]: HPA_CLASS,
          [`${K}/metric`]: "rps",
          [`${K}/target`]: "5",
          [`${K}/max-scale`]: "10",
          [`${K}/prometheus-query`]: "vector(14)",
        };
        const patchDeployment = (a: Record<string, string | null>) =>
          kube.request("PATCH", path, {
            body: { metadata: { annotations: a } },
            contentType: "application/merge-patch+json",
          });
        await patchDeployment(annotations);
        const deployment = await kube.request("GET", path);
        const hpa = await waitObject(hpaPath(name), `HPA ${ns}/${name}`);
        assert.deepEqual(
          hpa.metadata.ownerReferences,
          ownerRefOf(deployment, "apps/v1", "Deployment"),
        );
        assert.deepEqual(hpa.metadata.labels, kedaLabels(name));
        // the Deployment's own annotations (the deployment controller's revision included)
        assert.deepEqual(hpa.metadata.annotations, deployment.metadata.annotations);
        assert.deepEqual(hpa.spec, {
          scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name },
          minReplicas: 1,
          maxReplicas: 10,
          metrics: [externalMetric("s0-prometheus", name, "5")],
        });
        assert.equal(
          await predict(ns, name, { currentReplicas: 1, servedWhen: servedItems("14") }),
          3,
        );
        await expectReplicas(ns, name, 3);

        // Knative's webhook check on a workload: a Warning event naming the annotation and value
        await patchDeployment({ [`${K}/window`]: "5s" });
        const sel = encodeURIComponent(
          `involvedObject.kind=Deployment,involvedObject.name=${name},reason=InvalidAutoscalingAnnotations`,
        );
        const event = await waitFor(async () => {
          const list = await kube.request(
            "GET",
            `/api/v1/namespaces/${ns}/events?fieldSelector=${sel}`,
          );
          return list.items[0];
        }, {
          what: "an InvalidAutoscalingAnnotations event on the Deployment",
          timeoutMs: WAIT_MS,
        });
        assert.equal(event.type, "Warning");
        assert.equal(
          event.message,
          `invalid autoscaling annotations: invalid window "5s" (annotation ${K}/window): want a duration from 6s to 1h in whole seconds`,
        );
        await patchDeployment({ [`${K}/window`]: null });

        // the class annotation goes: the HPA goes, the Deployment keeps its replicas
        await patchDeployment({ [CLASS]: null });
        await waitGone(hpaPath(name), `HPA ${ns}/${name} deleted with the class annotation`);
        await sleep(3_000);
        assert.equal(await kube.get(hpaPath(name)), null, "the HPA came back");
        assert.equal((await kube.request("GET", path)).spec.replicas, 3);
      },
    );
  });

  describe("availability under load", { skip: STUB && "stub adapter" }, () => {
    it("keeps the three APIServices Available while the aggregator proxies a burst of reads", {
      timeout: CASE_TIMEOUT,
    }, async () => {
      const names = [
        "v1beta1.custom.metrics.k8s.io",
        "v1beta2.custom.metrics.k8s.io",
        "v1beta1.external.metrics.k8s.io",
      ];
      let stop = false;
      const flips: string[] = [];
      const probe = (async () => {
        while (!stop) {
          for (const n of names) {
            const s = await kube.get(`/apis/apiregistration.k8s.io/v1/apiservices/${n}`);
            // deno-lint-ignore no-explicit-any
            const c = s?.status?.conditions?.find((x: any) => x.type === "Available");
            if (c?.status !== "True") flips.push(`${n}: ${c?.reason} ${c?.message}`);
          }
          await sleep(200);
        }
      })();
      const version = await customVersion();
      const paths = [
        `/apis/custom.metrics.k8s.io/${version}/namespaces/default/pods/*/requests-per-second`,
        `/apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue-length`,
        `/apis/custom.metrics.k8s.io/${version}`,
        `/apis/external.metrics.k8s.io/v1beta1`,
      ];
      let done = 0;
      let failed = 0;
      const deadline = Date.now() + 15_000;
      await Promise.all(Array.from({ length: 32 }, async (_, w) => {
        while (Date.now() < deadline) {
          try {
            await kube.request("GET", paths[(done + w) % paths.length], { timeoutMs: 10_000 });
          } catch (err) {
            if (!(err instanceof KubeApiError && err.status === 404)) failed++;
          }
          done++;
        }
      }));
      stop = true;
      await probe;
      assert.deepEqual(flips, [], `Available flipped during ${done} requests`);
      assert.equal(failed, 0, `${failed} of ${done} requests failed other than 404`);
      assert.ok(done > 200, `only ${done} requests in 15 s`);
    });
  });
});
