/**
 * End-to-end for the Helm chart (issue 27): on the harness's real control plane, installed with
 * `helm install` (HPA_E2E_INSTALL=helm: tests/e2e/harness.ts installs deploy/helm/hpa-metrics-adapter
 * instead of applying deploy/'s files, with the adapter process's serving certificate as the
 * chart's tls values). The release is deployed, its objects carry Helm's ownership, the three
 * APIServices become Available with the chart's caBundle verifying the adapter, an HPA on a
 * ScalingSchedule Object metric scales its Deployment through the chart's RBAC and Service, and
 * `helm uninstall` removes every object of the release and leaves the CRDs (and their objects).
 *
 * `npm run test:e2e` runs this file on a control plane of its own after the kustomize suite.
 * Without a harness up with HPA_E2E_INSTALL=helm every case is skipped (HPA_E2E_REQUIRED=1 turns
 * that into a failure). The cases run in order: the last one uninstalls.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadAll } from "js-yaml";
import { runHelm } from "../deploy/helm_tool.ts";
import { E2E, readState, STATE_DIR, waitFor } from "./harness.ts";
import { createKubeClient, loadKubeconfig } from "./kube_client.ts";
import type { KubeClient } from "./kube_client.ts";

const state = readState();
const helmState = state?.install === "helm" ? state.helm : null;
if (!helmState && process.env.HPA_E2E_REQUIRED) {
  throw new Error(
    "the e2e harness is not up with the chart: run `HPA_E2E_INSTALL=helm node --import tsx tests/e2e/harness.ts up` first",
  );
}
const SKIP: string | false = helmState
  ? false
  : "the e2e harness is not up with the chart (HPA_E2E_INSTALL=helm npm run e2e:up)";
const kube: KubeClient = state
  ? createKubeClient(loadKubeconfig(state.kubeconfig))
  : (null as never);

const WAIT_MS = 60_000;
const CRDS = ["scalingschedules.zalando.org", "clusterscalingschedules.zalando.org"];
const API_SERVICES = [
  "v1beta1.custom.metrics.k8s.io",
  "v1beta2.custom.metrics.k8s.io",
  "v1beta1.external.metrics.k8s.io",
];

// deno-lint-ignore no-explicit-any
type Obj = any;

function helm(args: string[]): string {
  const r = runHelm(args, { kubeconfig: state!.kubeconfig });
  if (r.error) throw r.error;
  assert.equal(r.status, 0, `helm ${args.join(" ")}: ${(r.stderr || r.stdout).trim()}`);
  return r.stdout;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Kinds the chart renders, by apiVersion and kind: their REST collection paths. */
const RESOURCES: Record<string, { path: string; namespaced: boolean }> = {
  "v1/ServiceAccount": { path: "/api/v1", namespaced: true },
  "v1/Service": { path: "/api/v1", namespaced: true },
  "v1/Secret": { path: "/api/v1", namespaced: true },
  "apps/v1/Deployment": { path: "/apis/apps/v1", namespaced: true },
  "policy/v1/PodDisruptionBudget": { path: "/apis/policy/v1", namespaced: true },
  "rbac.authorization.k8s.io/v1/ClusterRole": {
    path: "/apis/rbac.authorization.k8s.io/v1",
    namespaced: false,
  },
  "rbac.authorization.k8s.io/v1/ClusterRoleBinding": {
    path: "/apis/rbac.authorization.k8s.io/v1",
    namespaced: false,
  },
  "rbac.authorization.k8s.io/v1/Role": {
    path: "/apis/rbac.authorization.k8s.io/v1",
    namespaced: true,
  },
  "rbac.authorization.k8s.io/v1/RoleBinding": {
    path: "/apis/rbac.authorization.k8s.io/v1",
    namespaced: true,
  },
  "apiregistration.k8s.io/v1/APIService": {
    path: "/apis/apiregistration.k8s.io/v1",
    namespaced: false,
  },
};

/** The collection URL of `kind` (in `namespace` when it is namespaced and one is given). */
function collection(apiVersion: string, kind: string, namespace?: string): string {
  const r = RESOURCES[`${apiVersion}/${kind}`];
  assert.ok(r, `no REST path known for ${apiVersion} ${kind}`);
  const ns = r.namespaced && namespace ? `/namespaces/${namespace}` : "";
  // every kind the chart renders has the regular plural
  return `${r.path}${ns}/${kind.toLowerCase()}s`;
}

function objectPath(o: Obj): string {
  return `${collection(o.apiVersion, o.kind, o.metadata.namespace)}/${o.metadata.name}`;
}

function id(o: Obj): string {
  return `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ""}${o.metadata.name}`;
}

/** The release's objects as `helm get manifest` lists them (crds/ is not part of it). */
function releaseObjects(): Obj[] {
  const out = helm(["get", "manifest", helmState!.release, "-n", helmState!.namespace]);
  return (loadAll(out) as Obj[]).filter((o) => o !== null && o !== undefined);
}

describe(
  "e2e: the Helm chart on the real control plane",
  { skip: SKIP, timeout: 10 * 60_000 },
  () => {
    let manifest: Obj[] = [];
    let ns = "";
    before(() => {
      manifest = releaseObjects();
    });
    after(async () => {
      if (ns && !process.env.HPA_E2E_KEEP) {
        await kube.request("DELETE", `/api/v1/namespaces/${ns}`).catch(() => {});
      }
    });

    it("helm install deployed the chart: every object of the release exists with Helm's ownership", async () => {
      const list = JSON.parse(helm(["list", "-n", helmState!.namespace, "-o", "json"]));
      assert.deepEqual(
        list.map((r: Obj) => [r.name, r.status, r.chart, r.app_version]),
        [[helmState!.release, "deployed", "hpa-metrics-adapter-0.1.0", "0.1.0"]],
      );
      assert.deepEqual(manifest.map(id).sort(), [
        "APIService v1beta1.custom.metrics.k8s.io",
        "APIService v1beta1.external.metrics.k8s.io",
        "APIService v1beta2.custom.metrics.k8s.io",
        "ClusterRole hpa-metrics-adapter",
        "ClusterRole hpa-metrics-adapter:keda",
        "ClusterRole hpa-metrics-adapter:knative",
        "ClusterRole hpa-metrics-adapter:metrics-reader",
        "ClusterRole hpa-metrics-adapter:replica-guard",
        "ClusterRole hpa-metrics-adapter:scaling-schedules",
        "ClusterRoleBinding hpa-metrics-adapter",
        "ClusterRoleBinding hpa-metrics-adapter:hpa-controller",
        "ClusterRoleBinding hpa-metrics-adapter:keda",
        "ClusterRoleBinding hpa-metrics-adapter:knative",
        "ClusterRoleBinding hpa-metrics-adapter:replica-guard",
        "ClusterRoleBinding hpa-metrics-adapter:scaling-schedules",
        "ClusterRoleBinding hpa-metrics-adapter:system:auth-delegator",
        "Deployment hpa-metrics-adapter/hpa-metrics-adapter",
        "PodDisruptionBudget hpa-metrics-adapter/hpa-metrics-adapter",
        "Role hpa-metrics-adapter/hpa-metrics-adapter:leader-election",
        "RoleBinding hpa-metrics-adapter/hpa-metrics-adapter:leader-election",
        "RoleBinding kube-system/hpa-metrics-adapter:extension-apiserver-authentication-reader",
        "Secret hpa-metrics-adapter/hpa-metrics-adapter-tls",
        "Service hpa-metrics-adapter/hpa-metrics-adapter",
        "ServiceAccount hpa-metrics-adapter/hpa-metrics-adapter",
      ]);
      for (const o of manifest) {
        const live = await kube.get(objectPath(o));
        assert.ok(live, `${id(o)} is not in the cluster`);
        assert.equal(live.metadata.labels["app.kubernetes.io/managed-by"], "Helm", id(o));
        assert.equal(live.metadata.annotations["meta.helm.sh/release-name"], helmState!.release);
        assert.equal(
          live.metadata.annotations["meta.helm.sh/release-namespace"],
          helmState!.namespace,
        );
      }
      // crds/ went in before the templates and is established
      for (const name of CRDS) {
        const crd = await kube.request(
          "GET",
          `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`,
        );
        const established = crd.status.conditions.find((c: Obj) => c.type === "Established");
        assert.equal(established?.status, "True", name);
      }
    });

    it("the APIServices become Available, verifying the adapter with the chart's caBundle", async () => {
      const ca = readFileSync(join(STATE_DIR, "pki/ca.crt"), "utf8");
      for (const name of API_SERVICES) {
        const s = await waitFor(async () => {
          const obj = await kube.request(
            "GET",
            `/apis/apiregistration.k8s.io/v1/apiservices/${name}`,
          );
          const c = (obj.status?.conditions ?? []).find((x: Obj) => x.type === "Available");
          if (c?.status !== "True") throw new Error(`${c?.reason}: ${c?.message}`);
          return obj;
        }, { what: `APIService ${name} Available`, timeoutMs: WAIT_MS });
        assert.equal(s.spec.insecureSkipTLSVerify ?? false, false, name);
        assert.equal(Buffer.from(s.spec.caBundle, "base64").toString("utf8"), ca, name);
        assert.deepEqual(s.spec.service, {
          name: E2E.adapterService,
          namespace: helmState!.namespace,
          port: 443,
        });
      }
      // discovery through the aggregator reaches the adapter
      const resources = await kube.request("GET", "/apis/custom.metrics.k8s.io/v1beta2");
      assert.equal(resources.kind, "APIResourceList");
      assert.equal(resources.groupVersion, "custom.metrics.k8s.io/v1beta2");
    });

    it(
      "an HPA on a ScalingSchedule Object metric scales its Deployment to ceil(value / averageValue)",
      {
        timeout: 4 * 60_000,
      },
      async () => {
        ns = `e2e-helm-${Math.random().toString(36).slice(2, 7)}`;
        await kube.request("POST", "/api/v1/namespaces", {
          body: { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } },
        });
        await waitFor(() => kube.get(`/api/v1/namespaces/${ns}/serviceaccounts/default`), {
          what: `service account default in ${ns}`,
          timeoutMs: WAIT_MS,
        });
        await kube.request("POST", `/apis/apps/v1/namespaces/${ns}/deployments`, {
          body: {
            apiVersion: "apps/v1",
            kind: "Deployment",
            metadata: { name: "shop", namespace: ns },
            spec: {
              replicas: 1,
              selector: { matchLabels: { app: "shop" } },
              template: {
                metadata: { labels: { app: "shop" } },
                spec: { containers: [{ name: "app", image: "e2e.invalid/app:1" }] },
              },
            },
          },
        });
        const started = new Date(Date.now() - 5 * 60_000).toISOString().replace(/\.\d+Z$/, "Z");
        const schedulePath = `/apis/zalando.org/v1/namespaces/${ns}/scalingschedules`;
        await kube.request("POST", schedulePath, {
          body: {
            apiVersion: "zalando.org/v1",
            kind: "ScalingSchedule",
            metadata: { name: "peak", namespace: ns },
            spec: {
              scalingWindowDurationMinutes: 0,
              schedules: [{ type: "OneTime", date: started, durationMinutes: 60, value: 10 }],
            },
          },
        });
        await kube.request(
          "POST",
          `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers`,
          {
            body: {
              apiVersion: "autoscaling/v2",
              kind: "HorizontalPodAutoscaler",
              metadata: {
                name: "shop",
                namespace: ns,
                annotations: { "metric-config.object.peak.scaling-schedule/interval": "1s" },
              },
              spec: {
                scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "shop" },
                minReplicas: 1,
                maxReplicas: 10,
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
                behavior: {
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
                },
              },
            },
          },
        );
        const hpaPath = `/apis/autoscaling/v2/namespaces/${ns}/horizontalpodautoscalers/shop`;
        const replicas = async (want: number): Promise<void> => {
          let last: Obj = null;
          try {
            await waitFor(async () => {
              last = await kube.request("GET", hpaPath);
              const d = await kube.request(
                "GET",
                `/apis/apps/v1/namespaces/${ns}/deployments/shop`,
              );
              return last.status?.desiredReplicas === want && d.spec.replicas === want &&
                (d.status.readyReplicas ?? 0) === want;
            }, {
              what: `HPA ${ns}/shop and its Deployment at ${want} replicas`,
              timeoutMs: WAIT_MS,
            });
            // two more controller syncs: it stays there
            await sleep(2 * 1000 * (state!.hpaSyncPeriodSeconds) + 500);
            last = await kube.request("GET", hpaPath);
            assert.equal(last.status.desiredReplicas, want);
          } catch (err) {
            throw new Error(
              `${(err as Error).message}\n  last HPA status: ${
                JSON.stringify(last?.status ?? null)
              }`,
            );
          }
        };
        await replicas(5); // ceil(10 / 2)
        const hpa = await kube.request("GET", hpaPath);
        assert.deepEqual(hpa.status.currentMetrics[0].object.current, { averageValue: "2" });
        // the leader writes status.active through the chart's scaling-schedules ClusterRole
        await waitFor(async () => {
          const s = await kube.request("GET", `${schedulePath}/peak`);
          return s.status?.active === true;
        }, { what: "ScalingSchedule peak status.active true", timeoutMs: 30_000 });

        // the schedule's value drops: ceil(6 / 2) = 3
        const current = await kube.request("GET", `${schedulePath}/peak`);
        current.spec.schedules[0].value = 6;
        await kube.request("PUT", `${schedulePath}/peak`, { body: current });
        await replicas(3);
      },
    );

    it("helm uninstall removes every object of the release and leaves the CRDs and their objects", {
      timeout: 3 * 60_000,
    }, async () => {
      const out = helm(["uninstall", helmState!.release, "-n", helmState!.namespace, "--wait"]);
      assert.match(out, new RegExp(`^release "${helmState!.release}" uninstalled$`, "m"));
      assert.deepEqual(JSON.parse(helm(["list", "-A", "-o", "json"])), []);
      // each object of the release is gone
      for (const o of manifest) {
        assert.equal(await kube.get(objectPath(o)), null, `${id(o)} is still in the cluster`);
      }
      // and listing finds nothing of the release's, cluster-wide, of any kind it had
      const selector = encodeURIComponent(`app.kubernetes.io/instance=${helmState!.release}`);
      const kinds = new Map<string, Obj>();
      for (const o of manifest) kinds.set(`${o.apiVersion}/${o.kind}`, o);
      for (const o of kinds.values()) {
        const list = await kube.request(
          "GET",
          `${collection(o.apiVersion, o.kind)}?labelSelector=${selector}`,
        );
        assert.deepEqual(list.items.map(id), [], `${o.kind} left`);
      }
      const apiServices = await kube.request("GET", "/apis/apiregistration.k8s.io/v1/apiservices");
      assert.deepEqual(
        apiServices.items.map((s: Obj) => s.metadata.name).filter((n: string) =>
          /metrics\.k8s\.io$/.test(n)
        ),
        [],
      );
      // the Deployment's ReplicaSets and pods go with it (the garbage collector)
      const releaseNs = helmState!.namespace;
      for (
        const path of [
          `/apis/apps/v1/namespaces/${releaseNs}/replicasets`,
          `/api/v1/namespaces/${releaseNs}/pods`,
        ]
      ) {
        await waitFor(async () => {
          const list = await kube.request("GET", `${path}?labelSelector=${selector}`);
          return list.items.length === 0;
        }, { what: `${path} empty of the release's`, timeoutMs: WAIT_MS });
      }
      // the CRDs stay, and so does the ScalingSchedule the HPA read
      for (const name of CRDS) {
        assert.ok(
          await kube.get(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`),
          `CRD ${name} was removed`,
        );
      }
      assert.ok(
        await kube.get(`/apis/zalando.org/v1/namespaces/${ns}/scalingschedules/peak`),
        "ScalingSchedule peak was removed",
      );
      // what is left in the release namespace was never the release's: the EndpointSlice the
      // harness wrote for the Service (no endpoint slice controller runs; the Endpoints of the
      // same name went with the Service) and the Lease the leader took
      const left: string[] = [];
      for (
        const path of [
          `/api/v1/namespaces/${helmState!.namespace}/endpoints`,
          `/apis/discovery.k8s.io/v1/namespaces/${helmState!.namespace}/endpointslices`,
          `/apis/coordination.k8s.io/v1/namespaces/${helmState!.namespace}/leases`,
          `/api/v1/namespaces/${helmState!.namespace}/secrets`,
          `/api/v1/namespaces/${helmState!.namespace}/serviceaccounts`,
          `/api/v1/namespaces/${helmState!.namespace}/services`,
          `/apis/apps/v1/namespaces/${helmState!.namespace}/deployments`,
        ]
      ) {
        const list = await kube.request("GET", path);
        left.push(...list.items.map((o: Obj) => `${path.split("/").at(-1)} ${o.metadata.name}`));
      }
      assert.deepEqual(left.sort(), [
        `endpointslices ${E2E.adapterService}-e2e`,
        "leases hpa-metrics-adapter",
        // the serviceaccount controller's own, in every namespace
        "serviceaccounts default",
      ]);
    });
  },
);
