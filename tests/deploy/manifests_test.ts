/**
 * The install as `kubectl kustomize` renders it (deploy/, each overlay, and all components
 * together): the objects, the Deployment's hardening, the APIServices, and RBAC evaluated rule by
 * rule for every resource the adapter reads or writes (taken from the cluster kind table, so a
 * new kind without a rule fails here). Every flag in the Deployment's args must parse with
 * serve's flag definitions.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { load, loadAll } from "js-yaml";
import { KIND_RESOURCES } from "../../src/cluster/types.ts";
import { type FlagValues, parseArgs, SERVE_FLAGS } from "../../src/cli/flags.ts";
import { VERSION } from "../../src/cli/version.ts";
import { schemaErrors, structuralViolations } from "./crd_schema.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const DEPLOY = join(ROOT, "deploy");
const NS = "hpa-metrics-adapter";
const ADAPTER = { kind: "ServiceAccount", name: "hpa-metrics-adapter", namespace: NS };
const HPA_CONTROLLER = {
  kind: "ServiceAccount",
  name: "horizontal-pod-autoscaler",
  namespace: "kube-system",
};

// deno-lint-ignore no-explicit-any
type Obj = Record<string, any>;

function kustomize(dir: string): Obj[] {
  const r = spawnSync("kubectl", ["kustomize", dir], { encoding: "utf8", maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, `kubectl kustomize ${dir} failed: ${r.error?.message ?? r.stderr}`);
  return (loadAll(r.stdout) as Obj[]).filter((o) => o !== null && o !== undefined);
}

function ids(objects: Obj[]): string[] {
  return objects
    .map((o) =>
      `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ""}${o.metadata.name}`
    )
    .sort();
}

function find(objects: Obj[], kind: string, name: string): Obj {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  assert.ok(o, `no ${kind} ${name} rendered`);
  return o;
}

function container(objects: Obj[]): Obj {
  return find(objects, "Deployment", "hpa-metrics-adapter").spec.template.spec.containers[0];
}

/** serve's flag values as the container's args set them ($(VAR) left as text). */
function serveFlags(objects: Obj[]): FlagValues {
  return parseArgs(container(objects).args, SERVE_FLAGS).values;
}

/** Copies deploy/ to a temporary folder (for overlays that need files or a new kustomization). */
function copyDeploy(): string {
  const dir = mkdtempSync(join(tmpdir(), "hpa-deploy-"));
  cpSync(DEPLOY, join(dir, "deploy"), { recursive: true });
  return join(dir, "deploy");
}

// ---------------------------------------------------------------------------------------------
// RBAC evaluation over the rendered objects (the bootstrap roles are taken as granted).

interface Subject {
  kind: string;
  name: string;
  namespace?: string;
}

interface Access {
  group: string;
  resource: string;
  verb: string;
  /** Namespace of the request; undefined for cluster-scoped or all-namespace requests. */
  namespace?: string;
}

function matches(list: string[] | undefined, value: string): boolean {
  return (list ?? []).includes("*") || (list ?? []).includes(value);
}

function ruleAllows(rule: Obj, a: Access): boolean {
  return matches(rule.apiGroups, a.group) && matches(rule.resources, a.resource) &&
    matches(rule.verbs, a.verb) && rule.resourceNames === undefined;
}

function bound(binding: Obj, s: Subject): boolean {
  return (binding.subjects ?? []).some((b: Obj) =>
    b.kind === s.kind && b.name === s.name &&
    (s.kind !== "ServiceAccount" || b.namespace === s.namespace)
  );
}

/** Whether the rendered RBAC lets `s` do `a`. */
function allowed(objects: Obj[], s: Subject, a: Access): boolean {
  for (const b of objects) {
    if (b.kind !== "ClusterRoleBinding" && b.kind !== "RoleBinding") continue;
    if (!bound(b, s)) continue;
    // A RoleBinding grants only in its namespace; a ClusterRoleBinding everywhere.
    if (b.kind === "RoleBinding" && b.metadata.namespace !== a.namespace) continue;
    const role = objects.find((r) =>
      r.kind === b.roleRef.kind && r.metadata.name === b.roleRef.name &&
      (r.kind === "ClusterRole" || r.metadata.namespace === b.metadata.namespace)
    );
    if (role && (role.rules ?? []).some((rule: Obj) => ruleAllows(rule, a))) return true;
  }
  return false;
}

function bindingTo(
  objects: Obj[],
  kind: string,
  roleKind: string,
  roleName: string,
): Obj | undefined {
  return objects.find((b) =>
    b.kind === kind && b.roleRef.kind === roleKind && b.roleRef.name === roleName &&
    bound(b, ADAPTER)
  );
}

/** Kinds that only writers turned on by a component read. */
const COMPONENT_KINDS: ReadonlySet<string> = new Set([
  "ReplicaSet",
  "PodAutoscaler",
  "ServerlessService",
  "ScaledObject",
  "TriggerAuthentication",
  "ClusterTriggerAuthentication",
  "Secret",
  "ConfigMap",
]);

/** What the adapter must be able to do: derived from the kind table the cluster view watches. */
function requiredAccess(): Access[] {
  const out: Access[] = [];
  for (const [kind, r] of Object.entries(KIND_RESOURCES)) {
    // read only by writers that components turn on (the replica guard: ReplicaSets; the
    // Knative reconciler: its kinds and trigger authentication): their components grant them
    if (COMPONENT_KINDS.has(kind)) continue;
    for (const verb of ["get", "list", "watch"]) {
      out.push({ group: r.group, resource: r.plural, verb });
    }
    if (r.scale) {
      for (const verb of ["get", "update", "patch"]) {
        out.push({ group: r.group, resource: `${r.plural}/scale`, verb });
      }
    }
  }
  for (const plural of ["scalingschedules", "clusterscalingschedules"]) {
    for (const verb of ["update", "patch"]) {
      out.push({ group: "zalando.org", resource: `${plural}/status`, verb });
    }
  }
  for (const verb of ["create", "patch"]) out.push({ group: "", resource: "events", verb });
  for (const verb of ["get", "create", "update"]) {
    out.push({ group: "coordination.k8s.io", resource: "leases", verb, namespace: NS });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

describe("kubectl kustomize deploy", () => {
  const objects = kustomize(DEPLOY);

  it("renders exactly the install's objects", () => {
    assert.deepEqual(ids(objects), [
      "APIService v1beta1.custom.metrics.k8s.io",
      "APIService v1beta1.external.metrics.k8s.io",
      "APIService v1beta2.custom.metrics.k8s.io",
      "ClusterRole hpa-metrics-adapter",
      "ClusterRole hpa-metrics-adapter:metrics-reader",
      "ClusterRole hpa-metrics-adapter:scaling-schedules",
      "ClusterRoleBinding hpa-metrics-adapter",
      "ClusterRoleBinding hpa-metrics-adapter:hpa-controller",
      "ClusterRoleBinding hpa-metrics-adapter:scaling-schedules",
      "ClusterRoleBinding hpa-metrics-adapter:system:auth-delegator",
      "CustomResourceDefinition clusterscalingschedules.zalando.org",
      "CustomResourceDefinition scalingschedules.zalando.org",
      "Deployment hpa-metrics-adapter/hpa-metrics-adapter",
      "Namespace hpa-metrics-adapter",
      "PodDisruptionBudget hpa-metrics-adapter/hpa-metrics-adapter",
      "Role hpa-metrics-adapter/hpa-metrics-adapter:leader-election",
      "RoleBinding hpa-metrics-adapter/hpa-metrics-adapter:leader-election",
      "RoleBinding kube-system/hpa-metrics-adapter:extension-apiserver-authentication-reader",
      "Service hpa-metrics-adapter/hpa-metrics-adapter",
      "ServiceAccount hpa-metrics-adapter/hpa-metrics-adapter",
    ]);
  });

  it("runs two replicas of the released image under the adapter's service account", () => {
    const d = find(objects, "Deployment", "hpa-metrics-adapter");
    assert.equal(d.spec.replicas, 2);
    assert.equal(d.spec.template.spec.serviceAccountName, "hpa-metrics-adapter");
    assert.equal(
      container(objects).image,
      `ghcr.io/hpa-metrics-adapter/hpa-metrics-adapter:${VERSION}`,
    );
  });

  it("passes serve flags that exist, with leader election and the secure port", () => {
    const flags = serveFlags(objects);
    assert.equal(flags["secure-port"], 6443);
    assert.equal(flags["cert-dir"], "/tmp/certs");
    assert.equal(flags["leader-elect"], true);
    assert.equal(flags["leader-elect-resource-namespace"], "$(POD_NAMESPACE)");
    assert.equal(flags["scaling-schedule"], true);
    assert.ok(container(objects).env.some((e: Obj) => e.name === "POD_NAMESPACE"));
  });

  it("probes /readyz and /livez over HTTPS on the secure port", () => {
    const c = container(objects);
    const port = c.ports.find((p: Obj) => p.name === "https");
    assert.equal(port.containerPort, serveFlags(objects)["secure-port"]);
    assert.deepEqual(c.readinessProbe.httpGet, { path: "/readyz", port: "https", scheme: "HTTPS" });
    assert.deepEqual(c.livenessProbe.httpGet, { path: "/livez", port: "https", scheme: "HTTPS" });
  });

  it("runs non-root, read-only, without capabilities, with a writable emptyDir for --cert-dir", () => {
    const pod = find(objects, "Deployment", "hpa-metrics-adapter").spec.template.spec;
    const c = container(objects);
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.equal(pod.securityContext.runAsUser, 65532);
    assert.equal(pod.securityContext.seccompProfile.type, "RuntimeDefault");
    assert.deepEqual(c.securityContext, {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ["ALL"] },
    });
    const mount = c.volumeMounts.find((m: Obj) => m.mountPath === serveFlags(objects)["cert-dir"]);
    assert.ok(mount, "no volume mounted at --cert-dir");
    const volume = pod.volumes.find((v: Obj) => v.name === mount.name);
    assert.ok(volume.emptyDir, "--cert-dir is not an emptyDir");
    assert.notEqual(mount.readOnly, true);
  });

  it("requests resources and caps memory", () => {
    const r = container(objects).resources;
    assert.deepEqual(Object.keys(r.requests).sort(), ["cpu", "memory"]);
    assert.ok(r.limits.memory);
  });

  it("exposes 443 to the secure port, 7979 to the metrics port and selects the pods", () => {
    const svc = find(objects, "Service", "hpa-metrics-adapter");
    const d = find(objects, "Deployment", "hpa-metrics-adapter");
    assert.deepEqual(svc.spec.ports, [
      { name: "https", port: 443, targetPort: "https", protocol: "TCP" },
      // explain reads /status.json through kube-apiserver's service proxy
      { name: "metrics", port: 7979, targetPort: "metrics", protocol: "TCP" },
    ]);
    for (const [k, v] of Object.entries(svc.spec.selector)) {
      assert.equal(d.spec.template.metadata.labels[k], v);
    }
    assert.deepEqual(d.spec.selector.matchLabels, svc.spec.selector);
  });

  it("registers the three API versions with the Service", () => {
    const want = [
      ["v1beta1.custom.metrics.k8s.io", "custom.metrics.k8s.io", "v1beta1", 100],
      ["v1beta2.custom.metrics.k8s.io", "custom.metrics.k8s.io", "v1beta2", 200],
      ["v1beta1.external.metrics.k8s.io", "external.metrics.k8s.io", "v1beta1", 100],
    ] as const;
    for (const [name, group, version, versionPriority] of want) {
      const s = find(objects, "APIService", name).spec;
      assert.deepEqual(
        { group: s.group, version: s.version, versionPriority, groupPriorityMinimum: 100 },
        {
          group,
          version,
          versionPriority: s.versionPriority,
          groupPriorityMinimum: s.groupPriorityMinimum,
        },
      );
      assert.deepEqual(s.service, { name: "hpa-metrics-adapter", namespace: NS, port: 443 });
    }
  });

  it("keeps one replica through disruptions", () => {
    const pdb = find(objects, "PodDisruptionBudget", "hpa-metrics-adapter");
    assert.equal(pdb.spec.minAvailable, 1);
  });

  it("installs both ScalingSchedule CRDs with status, printer column Active and the right scope", () => {
    for (
      const [name, scope] of [
        ["scalingschedules.zalando.org", "Namespaced"],
        ["clusterscalingschedules.zalando.org", "Cluster"],
      ]
    ) {
      const crd = find(objects, "CustomResourceDefinition", name);
      assert.equal(crd.spec.scope, scope);
      const v1 = crd.spec.versions.find((v: Obj) => v.name === "v1");
      assert.deepEqual(v1.subresources, { status: {} });
      assert.equal(v1.additionalPrinterColumns[0].name, "Active");
    }
  });

  describe("RBAC", () => {
    for (const a of requiredAccess()) {
      const what = `${a.verb} ${a.group ? `${a.group}/` : ""}${a.resource}${
        a.namespace ? ` in ${a.namespace}` : ""
      }`;
      it(`lets the adapter ${what}`, () => {
        assert.equal(allowed(objects, ADAPTER, a), true);
      });
    }

    const denied: Access[] = [
      { group: "", resource: "secrets", verb: "get" },
      { group: "", resource: "pods", verb: "delete" },
      { group: "apps", resource: "deployments", verb: "update" },
      { group: "autoscaling", resource: "horizontalpodautoscalers", verb: "update" },
      { group: "autoscaling", resource: "horizontalpodautoscalers", verb: "patch" },
      { group: "apps", resource: "replicasets", verb: "list" },
      { group: "zalando.org", resource: "scalingschedules", verb: "update" },
      {
        group: "coordination.k8s.io",
        resource: "leases",
        verb: "create",
        namespace: "kube-system",
      },
    ];
    for (const a of denied) {
      it(`does not let the adapter ${a.verb} ${a.resource}${a.namespace ? ` in ${a.namespace}` : ""}`, () => {
        assert.equal(allowed(objects, ADAPTER, a), false);
      });
    }

    it("binds the adapter to system:auth-delegator and the authentication reader in kube-system", () => {
      assert.ok(bindingTo(objects, "ClusterRoleBinding", "ClusterRole", "system:auth-delegator"));
      const rb = bindingTo(
        objects,
        "RoleBinding",
        "Role",
        "extension-apiserver-authentication-reader",
      );
      assert.equal(rb?.metadata.namespace, "kube-system");
    });

    for (const group of ["custom.metrics.k8s.io", "external.metrics.k8s.io"]) {
      for (const verb of ["get", "list"]) {
        it(`lets the HPA controller ${verb} ${group}`, () => {
          assert.equal(
            allowed(objects, HPA_CONTROLLER, { group, resource: "pods/requests", verb }),
            true,
          );
        });
      }
    }

    it("names the namespace of every namespaced object, so rbac.yaml applies without kustomize", () => {
      const file = loadAll(readFileSync(join(DEPLOY, "base", "rbac.yaml"), "utf8")) as Obj[];
      const namespaced = file.filter((o) =>
        ["ServiceAccount", "Role", "RoleBinding"].includes(o.kind)
      );
      assert.ok(namespaced.length >= 4);
      for (const o of namespaced) assert.ok(o.metadata.namespace, `${o.kind} ${o.metadata.name}`);
      for (const b of file.filter((o) => o.kind.endsWith("Binding"))) {
        for (const s of b.subjects) {
          if (s.kind === "ServiceAccount") {
            assert.ok(s.namespace, `${b.metadata.name}: subject namespace`);
          }
        }
      }
    });
  });
});

describe("overlays", () => {
  it("admission-webhook: registers the webhook for HPAs, ScaledObjects and PodAutoscalers", () => {
    const objects = kustomize(join(DEPLOY, "overlays", "admission-webhook"));
    const d = find(objects, "Deployment", "hpa-metrics-adapter");
    assert.ok(d.spec.template.spec.containers[0].args.includes("--admission-webhook"));
    const hook = find(objects, "ValidatingWebhookConfiguration", "hpa-metrics-adapter");
    assert.equal(
      hook.metadata.annotations["cert-manager.io/inject-ca-from"],
      "hpa-metrics-adapter/hpa-metrics-adapter-tls",
    );
    // deno-lint-ignore no-explicit-any
    assert.deepEqual(hook.webhooks.map((w: any) => [w.name, w.clientConfig.service.path]), [
      ["horizontalpodautoscalers.hpa-metrics-adapter.io", "/validate/horizontalpodautoscalers"],
      ["scaledobjects.hpa-metrics-adapter.io", "/validate/scaledobjects"],
      ["podautoscalers.hpa-metrics-adapter.io", "/validate/podautoscalers"],
    ]);
    for (const w of hook.webhooks) {
      assert.equal(w.failurePolicy, "Ignore");
      assert.equal(w.timeoutSeconds, 2);
      assert.equal(w.sideEffects, "None");
      assert.deepEqual(w.admissionReviewVersions, ["v1"]);
      assert.equal(w.clientConfig.service.name, "hpa-metrics-adapter");
      assert.equal(w.clientConfig.service.port, 443);
    }
    assert.deepEqual(hook.webhooks[0].rules[0].apiVersions, ["v1", "v2", "v2beta2"]);
  });

  it("prometheus: passes --prometheus-server", () => {
    const objects = kustomize(join(DEPLOY, "overlays", "prometheus"));
    assert.equal(
      serveFlags(objects)["prometheus-server"],
      "http://prometheus.monitoring.svc.cluster.local:9090",
    );
    assert.equal(objects.length, kustomize(DEPLOY).length);
  });

  it("sqs-irsa: annotates the service account with the role and enables SQS metrics", () => {
    const objects = kustomize(join(DEPLOY, "overlays", "sqs-irsa"));
    const sa = find(objects, "ServiceAccount", "hpa-metrics-adapter");
    assert.match(
      sa.metadata.annotations["eks.amazonaws.com/role-arn"],
      /^arn:aws:iam::\d{12}:role\/.+/,
    );
    const flags = serveFlags(objects);
    assert.equal(flags["aws-external-metrics"], true);
    assert.deepEqual(flags["aws-region"], ["eu-central-1"]);
    // IRSA's projected token is readable by the non-root user through fsGroup.
    assert.equal(
      find(objects, "Deployment", "hpa-metrics-adapter").spec.template.spec.securityContext.fsGroup,
      65532,
    );
  });

  it("no-scaling-schedules: turns the flag off and leaves out the CRDs and their rules", () => {
    const objects = kustomize(join(DEPLOY, "overlays", "no-scaling-schedules"));
    assert.equal(serveFlags(objects)["scaling-schedule"], false);
    const left = ids(objects).filter((id) => /scaling-?schedule/i.test(id));
    assert.deepEqual(left, []);
    assert.equal(
      allowed(objects, ADAPTER, {
        group: "zalando.org",
        resource: "scalingschedules",
        verb: "list",
      }),
      false,
    );
  });

  it("replica-guard: turns the guard on, may patch HPAs and watch ReplicaSets, nothing more", () => {
    const objects = kustomize(join(DEPLOY, "overlays", "replica-guard"));
    const flags = serveFlags(objects);
    assert.equal(flags["estafette-hpa-scaler"], true);
    assert.equal(flags["prometheus-server"], "http://prometheus.monitoring.svc.cluster.local:9090");
    for (
      const a of [
        { group: "autoscaling", resource: "horizontalpodautoscalers", verb: "patch" },
        { group: "apps", resource: "replicasets", verb: "list" },
        { group: "apps", resource: "replicasets", verb: "watch" },
      ]
    ) assert.equal(allowed(objects, ADAPTER, a), true, JSON.stringify(a));
    for (
      const a of [
        { group: "autoscaling", resource: "horizontalpodautoscalers", verb: "update" },
        { group: "autoscaling", resource: "horizontalpodautoscalers", verb: "delete" },
        { group: "apps", resource: "replicasets", verb: "patch" },
      ]
    ) assert.equal(allowed(objects, ADAPTER, a), false, JSON.stringify(a));
    assert.equal(objects.length, kustomize(DEPLOY).length + 2);
  });

  it("keda: turns the ScaledObject controller on with the rules for SOs, HPAs and trigger secrets", () => {
    const objects = kustomize(join(DEPLOY, "overlays", "keda"));
    assert.equal(serveFlags(objects)["keda-scaled-objects"], true);
    const may = (group: string, resource: string, verb: string) =>
      allowed(objects, ADAPTER, { group, resource, verb });
    for (const verb of ["get", "list", "watch", "patch"]) {
      assert.equal(may("keda.sh", "scaledobjects", verb), true, verb);
    }
    assert.equal(may("keda.sh", "scaledobjects/status", "patch"), true);
    assert.equal(may("keda.sh", "scaledobjects/finalizers", "update"), true);
    for (const verb of ["create", "patch", "delete"]) {
      assert.equal(may("autoscaling", "horizontalpodautoscalers", verb), true, verb);
    }
    assert.equal(may("keda.sh", "triggerauthentications", "get"), true);
    assert.equal(may("keda.sh", "clustertriggerauthentications", "get"), true);
    assert.equal(may("", "secrets", "get"), true);
    assert.equal(may("", "configmaps", "get"), true);
    // nothing more than it needs: no listing of secrets, no deleting ScaledObjects
    assert.equal(may("", "secrets", "list"), false);
    assert.equal(may("keda.sh", "scaledobjects", "delete"), false);
    // the base install alone may do none of it
    const base = kustomize(DEPLOY);
    assert.equal(
      allowed(base, ADAPTER, { group: "keda.sh", resource: "scaledobjects", verb: "list" }),
      false,
    );
  });

  it("knative: turns the reconciler on with the rules for PAs, SKSs, HPAs and trigger secrets", () => {
    const objects = kustomize(join(DEPLOY, "overlays", "knative"));
    assert.equal(serveFlags(objects)["knative-autoscaler"], true);
    const may = (group: string, resource: string, verb: string) =>
      allowed(objects, ADAPTER, { group, resource, verb });
    for (const verb of ["get", "list", "watch"]) {
      assert.equal(may("autoscaling.internal.knative.dev", "podautoscalers", verb), true, verb);
    }
    assert.equal(may("autoscaling.internal.knative.dev", "podautoscalers/status", "patch"), true);
    assert.equal(may("networking.internal.knative.dev", "serverlessservices", "create"), true);
    for (const verb of ["create", "patch", "delete"]) {
      assert.equal(may("autoscaling", "horizontalpodautoscalers", verb), true, verb);
    }
    assert.equal(may("", "secrets", "get"), true);
    // blockOwnerDeletion under OwnerReferencesPermissionEnforcement
    assert.equal(
      may("autoscaling.internal.knative.dev", "podautoscalers/finalizers", "update"),
      true,
    );
    assert.equal(may("apps", "deployments/finalizers", "update"), true);
    assert.equal(may("", "secrets", "list"), false);
    assert.equal(may("autoscaling.internal.knative.dev", "podautoscalers", "delete"), false);
    // the base install stays read-only on HPAs
    const base = kustomize(DEPLOY);
    assert.equal(
      allowed(base, ADAPTER, {
        group: "autoscaling",
        resource: "horizontalpodautoscalers",
        verb: "create",
      }),
      false,
    );
  });

  it("delegation: names the delegates and lets the adapter get and list both metrics groups, nothing more", () => {
    const objects = kustomize(join(DEPLOY, "overlays", "delegation"));
    const flags = serveFlags(objects);
    assert.deepEqual(
      [
        flags["delegate-external-metrics"],
        flags["delegate-custom-metrics"],
        flags["delegate-insecure-skip-tls-verify"],
      ],
      [
        "https://keda-operator-metrics-apiserver.keda.svc:443",
        "https://prometheus-adapter.monitoring.svc:443",
        true,
      ],
    );
    const may = (objs: Obj[], group: string, verb: string) =>
      allowed(objs, ADAPTER, { group, resource: "s0-rabbitmq-orders", verb, namespace: "shop" });
    for (const group of ["custom.metrics.k8s.io", "external.metrics.k8s.io"]) {
      assert.equal(may(objects, group, "get"), true, group);
      assert.equal(may(objects, group, "list"), true, group);
      assert.equal(may(objects, group, "watch"), false, group);
      // the base install does not let the adapter read another adapter's metrics
      assert.equal(may(kustomize(DEPLOY), group, "list"), false, group);
    }
    assert.equal(objects.length, kustomize(DEPLOY).length + 2);
  });

  it("resource-metrics: serves prometheus-adapter's config from its ConfigMap and registers metrics.k8s.io", () => {
    const objects = kustomize(join(DEPLOY, "overlays", "resource-metrics"));
    const flags = serveFlags(objects);
    const path = "/etc/hpa-metrics-adapter/prometheus-adapter";
    assert.equal(flags["prometheus-adapter-config"], `${path}/config.yaml`);
    assert.equal(flags["prometheus-server"], "http://prometheus.monitoring.svc.cluster.local:9090");
    const c = container(objects);
    const mount = c.volumeMounts.find((m: Obj) => m.mountPath === path);
    const d = find(objects, "Deployment", "hpa-metrics-adapter");
    const volume = d.spec.template.spec.volumes.find((v: Obj) => v.name === mount.name);
    const cm = find(objects, "ConfigMap", volume.configMap.name);
    assert.equal(cm.metadata.namespace, NS);
    const config = load(cm.data["config.yaml"]) as Obj;
    assert.deepEqual(Object.keys(config), ["resourceRules"]);
    assert.equal(config.resourceRules.window, "5m");
    const api = find(objects, "APIService", "v1beta1.metrics.k8s.io");
    assert.deepEqual(api.spec.service, { name: "hpa-metrics-adapter", namespace: NS, port: 443 });
    assert.deepEqual([api.spec.group, api.spec.version], ["metrics.k8s.io", "v1beta1"]);
    // the NodeMetrics list the nodes: the base ClusterRole lets the adapter watch them
    for (const verb of ["get", "list", "watch"]) {
      assert.equal(allowed(objects, ADAPTER, { group: "", resource: "nodes", verb }), true, verb);
    }
    // `*` reads of the rules list objects as prometheus-adapter's ClusterRole lets it
    for (const resource of ["pods", "nodes", "namespaces", "services"]) {
      assert.equal(
        allowed(objects, ADAPTER, { group: "", resource, verb: "list" }),
        true,
        resource,
      );
    }
    assert.equal(
      allowed(objects, ADAPTER, { group: "", resource: "secrets", verb: "list" }),
      false,
    );
    assert.equal(objects.length, kustomize(join(DEPLOY, "overlays", "prometheus")).length + 4);
  });

  it("cert-manager: serves the issued certificate and has the CA injected into every APIService", () => {
    const objects = kustomize(join(DEPLOY, "overlays", "cert-manager"));
    const flags = serveFlags(objects);
    assert.equal(flags["tls-cert-file"], "/etc/hpa-metrics-adapter/tls/tls.crt");
    assert.equal(flags["tls-private-key-file"], "/etc/hpa-metrics-adapter/tls/tls.key");
    const cert = find(objects, "Certificate", "hpa-metrics-adapter-tls");
    assert.ok(cert.spec.dnsNames.includes("hpa-metrics-adapter.hpa-metrics-adapter.svc"));
    const pod = find(objects, "Deployment", "hpa-metrics-adapter").spec.template.spec;
    assert.deepEqual(pod.volumes.find((v: Obj) => v.name === "tls").secret, {
      secretName: cert.spec.secretName,
    });
    for (const s of objects.filter((o) => o.kind === "APIService")) {
      assert.equal(s.spec.insecureSkipTLSVerify, false);
      assert.equal(
        s.metadata.annotations["cert-manager.io/inject-ca-from"],
        `${NS}/${cert.metadata.name}`,
      );
    }
  });

  it("sharding: three replicas that verify each other with cert-manager's CA, may use their Leases and post to each other", () => {
    const objects = kustomize(join(DEPLOY, "overlays", "sharding"));
    const certManager = kustomize(join(DEPLOY, "overlays", "cert-manager"));
    assert.deepEqual(ids(objects).filter((x) => !ids(certManager).includes(x)), [
      "ClusterRole hpa-metrics-adapter:shard-peer",
      "ClusterRoleBinding hpa-metrics-adapter:shard-peer",
      "Role hpa-metrics-adapter/hpa-metrics-adapter:sharding",
      "RoleBinding hpa-metrics-adapter/hpa-metrics-adapter:sharding",
    ]);
    assert.deepEqual(ids(certManager).filter((x) => !ids(objects).includes(x)), []);
    assert.deepEqual(find(objects, "Role", "hpa-metrics-adapter:sharding").rules, [{
      apiGroups: ["coordination.k8s.io"],
      resources: ["leases"],
      verbs: ["get", "list", "create", "patch", "delete"],
    }]);
    assert.deepEqual(find(objects, "ClusterRole", "hpa-metrics-adapter:shard-peer").rules, [{
      nonResourceURLs: ["/shard/v1/samples"],
      verbs: ["post"],
    }]);
    const rb = bindingTo(objects, "RoleBinding", "Role", "hpa-metrics-adapter:sharding");
    assert.equal(rb?.metadata.namespace, NS);
    assert.deepEqual(rb?.subjects, [ADAPTER]);
    const crb = bindingTo(
      objects,
      "ClusterRoleBinding",
      "ClusterRole",
      "hpa-metrics-adapter:shard-peer",
    );
    assert.deepEqual(crb?.subjects, [ADAPTER]);
    // a stopping replica deletes its Lease: only here, and only in the adapter's namespace
    const deleteLease = (namespace: string): Access => ({
      group: "coordination.k8s.io",
      resource: "leases",
      verb: "delete",
      namespace,
    });
    assert.equal(allowed(objects, ADAPTER, deleteLease(NS)), true);
    assert.equal(allowed(objects, ADAPTER, deleteLease("kube-system")), false);
    assert.equal(allowed(certManager, ADAPTER, deleteLease(NS)), false);

    const d = find(objects, "Deployment", "hpa-metrics-adapter");
    assert.equal(d.spec.replicas, 3);
    const c = container(objects);
    assert.deepEqual(c.args.slice(container(certManager).args.length), [
      "--shard-collection",
      "--shard-peer-ca-file=/etc/hpa-metrics-adapter/tls/ca.crt",
      "--shard-peer-server-name=hpa-metrics-adapter.hpa-metrics-adapter.svc",
    ]);
    const flags = serveFlags(objects);
    assert.equal(flags["shard-collection"], true);
    assert.equal(flags["shard-lease-duration"], 15);
    assert.equal(flags["shard-retry-period"], 2);
    assert.equal(flags["shard-advertise-address"], null);
    // the CA file is in the mounted certificate Secret, which holds the name the peers check
    const cert = find(objects, "Certificate", "hpa-metrics-adapter-tls");
    assert.ok(cert.spec.dnsNames.includes(flags["shard-peer-server-name"]));
    const mount = c.volumeMounts.find((m: Obj) => m.mountPath === "/etc/hpa-metrics-adapter/tls");
    const volume = d.spec.template.spec.volumes.find((v: Obj) => v.name === mount.name);
    assert.equal(volume.secret.secretName, cert.spec.secretName);
    assert.equal(flags["shard-peer-ca-file"], `${mount.mountPath}/ca.crt`);
    // the advertised address's default is https://$POD_IP:<secure port>
    assert.deepEqual(c.env, [
      ...container(certManager).env,
      { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
    ]);
  });

  it("tls: mounts the generated Secret and sets every APIService's caBundle to ca.crt", () => {
    const deploy = copyDeploy();
    try {
      const dir = join(deploy, "overlays", "tls");
      const openssl = (args: string[]): void => {
        const r = spawnSync("openssl", args, { cwd: dir, encoding: "utf8" });
        assert.equal(r.status, 0, `openssl ${args.join(" ")}: ${r.error?.message ?? r.stderr}`);
      };
      const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
      openssl([
        "req",
        "-x509",
        ...ec,
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-subj",
        "/CN=ca",
        "-days",
        "1",
      ]);
      openssl([
        "req",
        ...ec,
        "-keyout",
        "tls.key",
        "-out",
        "tls.csr",
        "-subj",
        `/CN=${NS}.${NS}.svc`,
      ]);
      openssl([
        "x509",
        "-req",
        "-in",
        "tls.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "tls.crt",
        "-days",
        "1",
      ]);
      const objects = kustomize(dir);
      const secret = objects.find((o) => o.kind === "Secret") as Obj;
      assert.equal(secret.type, "kubernetes.io/tls");
      assert.equal(secret.metadata.namespace, NS);
      const pod = find(objects, "Deployment", "hpa-metrics-adapter").spec.template.spec;
      assert.equal(
        pod.volumes.find((v: Obj) => v.name === "tls").secret.secretName,
        secret.metadata.name,
      );
      const ca = readFileSync(join(dir, "ca.crt"), "utf8");
      for (const s of objects.filter((o) => o.kind === "APIService")) {
        assert.equal(s.spec.insecureSkipTLSVerify, false);
        assert.equal(
          Buffer.from(s.spec.caBundle.replace(/\s/g, ""), "base64").toString("utf8"),
          ca,
        );
      }
      assert.equal(serveFlags(objects)["tls-cert-file"], "/etc/hpa-metrics-adapter/tls/tls.crt");
    } finally {
      rmSync(join(deploy, ".."), { recursive: true, force: true });
    }
  });

  it("components combine in one kustomization", () => {
    const deploy = copyDeploy();
    try {
      const dir = join(deploy, "mine");
      cpSync(join(deploy, "overlays", "prometheus"), dir, { recursive: true });
      writeFileSync(
        join(dir, "kustomization.yaml"),
        [
          "apiVersion: kustomize.config.k8s.io/v1beta1",
          "kind: Kustomization",
          "resources: [../base]",
          "components:",
          ...["prometheus", "sqs-irsa", "no-scaling-schedules", "cert-manager", "sharding"].map((
            c,
          ) => `  - ../components/${c}`),
          "",
        ].join("\n"),
      );
      const flags = serveFlags(kustomize(dir));
      assert.deepEqual(
        [
          flags["prometheus-server"],
          flags["aws-external-metrics"],
          flags["scaling-schedule"],
          flags["tls-cert-file"],
          flags["shard-collection"],
        ],
        [
          "http://prometheus.monitoring.svc.cluster.local:9090",
          true,
          false,
          "/etc/hpa-metrics-adapter/tls/tls.crt",
          true,
        ],
      );
    } finally {
      rmSync(join(deploy, ".."), { recursive: true, force: true });
    }
  });
});

// ---------------------------------------------------------------------------------------------
// KEDA's CRDs for clusters without KEDA (deploy/crds/keda, deploy/components/keda-crds).

const KEDA_CRDS = join(DEPLOY, "crds", "keda");
const KEDA_FIXTURES = fileURLToPath(new URL("fixtures/keda", import.meta.url));

/** Each CRD as KEDA v2.20.2 declares it: names, scope and printer columns. */
interface KedaCrd {
  file: string;
  kind: string;
  plural: string;
  shortNames: string[];
  scope: string;
  /** name, type, jsonPath and priority (0: shown without -o wide). */
  columns: [string, string, string, number][];
  fixture: string;
}

const AUTH_COLUMNS: [string, string, string, number][] = [
  ["PodIdentity", "string", ".spec.podIdentity.provider", 0],
  ["Secret", "string", ".spec.secretTargetRef[*].name", 0],
  ["Env", "string", ".spec.env[*].name", 0],
  ["VaultAddress", "string", ".spec.hashiCorpVault.address", 0],
  ["ScaledObjects", "string", ".status.scaledobjects", 1],
  ["ScaledJobs", "string", ".status.scaledjobs", 1],
];

const KEDA_CRD_LIST: KedaCrd[] = [
  {
    file: "scaledobjects.yaml",
    kind: "ScaledObject",
    plural: "scaledobjects",
    shortNames: ["so"],
    scope: "Namespaced",
    columns: [
      ["ScaleTargetKind", "string", ".status.scaleTargetKind", 0],
      ["ScaleTargetName", "string", ".spec.scaleTargetRef.name", 0],
      ["Min", "integer", ".spec.minReplicaCount", 0],
      ["Max", "integer", ".spec.maxReplicaCount", 0],
      ["Ready", "string", '.status.conditions[?(@.type=="Ready")].status', 0],
      ["Active", "string", '.status.conditions[?(@.type=="Active")].status', 0],
      ["Fallback", "string", '.status.conditions[?(@.type=="Fallback")].status', 0],
      ["Paused", "string", '.status.conditions[?(@.type=="Paused")].status', 0],
      ["Triggers", "string", ".status.triggersTypes", 0],
      ["Authentications", "string", ".status.authenticationsTypes", 0],
      ["Age", "date", ".metadata.creationTimestamp", 0],
    ],
    fixture: "scaledobject.yaml",
  },
  {
    file: "triggerauthentications.yaml",
    kind: "TriggerAuthentication",
    plural: "triggerauthentications",
    shortNames: ["ta", "triggerauth"],
    scope: "Namespaced",
    columns: AUTH_COLUMNS,
    fixture: "triggerauthentication.yaml",
  },
  {
    file: "clustertriggerauthentications.yaml",
    kind: "ClusterTriggerAuthentication",
    plural: "clustertriggerauthentications",
    shortNames: ["cta", "clustertriggerauth"],
    scope: "Cluster",
    // only the cluster kind shows filePath, which only it may use
    columns: [
      ...AUTH_COLUMNS.slice(0, 3),
      ["FilePath", "string", ".spec.filePath", 0],
      ...AUTH_COLUMNS.slice(3),
    ],
    fixture: "clustertriggerauthentication.yaml",
  },
];

function readYaml(path: string): Obj {
  return load(readFileSync(path, "utf8")) as Obj;
}

function kedaCrd(file: string): Obj {
  return readYaml(join(KEDA_CRDS, file));
}

function openApiSchema(crd: Obj): Obj {
  return crd.spec.versions[0].schema.openAPIV3Schema;
}

/** How many nodes of `schema` keep unknown fields. */
function preservedNodes(schema: Obj): number {
  const text = JSON.stringify(schema);
  return text.split('"x-kubernetes-preserve-unknown-fields":true').length - 1;
}

describe("KEDA's CRDs for clusters without KEDA", () => {
  it("deploy/components/keda-crds adds exactly the three CRDs, as deploy/crds/keda has them", () => {
    const deploy = copyDeploy();
    try {
      const dir = join(deploy, "mine");
      mkdirSync(dir);
      writeFileSync(
        join(dir, "kustomization.yaml"),
        [
          "apiVersion: kustomize.config.k8s.io/v1beta1",
          "kind: Kustomization",
          "resources: [../base]",
          "components: [../components/keda-crds]",
          "",
        ].join("\n"),
      );
      const objects = kustomize(dir);
      const base = kustomize(join(deploy, "base"));
      assert.deepEqual(ids(objects).filter((x) => !ids(base).includes(x)), [
        "CustomResourceDefinition clustertriggerauthentications.keda.sh",
        "CustomResourceDefinition scaledobjects.keda.sh",
        "CustomResourceDefinition triggerauthentications.keda.sh",
      ]);
      assert.deepEqual(ids(base).filter((x) => !ids(objects).includes(x)), []);
      for (const c of KEDA_CRD_LIST) {
        assert.deepEqual(
          find(objects, "CustomResourceDefinition", `${c.plural}.keda.sh`),
          kedaCrd(c.file),
        );
      }
    } finally {
      rmSync(join(deploy, ".."), { recursive: true, force: true });
    }
  });

  it("stay out of the default install and of deploy/crds' kustomization", () => {
    for (const dir of [DEPLOY, join(DEPLOY, "crds")]) {
      assert.deepEqual(ids(kustomize(dir)).filter((x) => x.endsWith(".keda.sh")), [], dir);
    }
    assert.deepEqual(ids(kustomize(KEDA_CRDS)), [
      "CustomResourceDefinition clustertriggerauthentications.keda.sh",
      "CustomResourceDefinition scaledobjects.keda.sh",
      "CustomResourceDefinition triggerauthentications.keda.sh",
    ]);
  });

  for (const c of KEDA_CRD_LIST) {
    describe(c.kind, () => {
      const crd = kedaCrd(c.file);

      it("says it is our schema of KEDA v2.20.2's API, for clusters without KEDA", () => {
        const header = readFileSync(join(KEDA_CRDS, c.file), "utf8").split("\n")
          .filter((l) => l.startsWith("#")).map((l) => l.replace(/^# ?/, "")).join(" ");
        assert.match(header, /our own schema for KEDA's API as KEDA v2\.20\.2 defines it/);
        assert.match(header, /Install it only where KEDA is not installed/);
      });

      it("is keda.sh/v1alpha1, served and stored, with KEDA's names and scope and a status subresource", () => {
        assert.equal(crd.apiVersion, "apiextensions.k8s.io/v1");
        assert.equal(crd.metadata.name, `${c.plural}.keda.sh`);
        assert.equal(crd.spec.group, "keda.sh");
        assert.deepEqual(crd.spec.names, {
          kind: c.kind,
          listKind: `${c.kind}List`,
          plural: c.plural,
          singular: c.kind.toLowerCase(),
          shortNames: c.shortNames,
        });
        assert.equal(crd.spec.scope, c.scope);
        assert.equal(crd.spec.versions.length, 1);
        const [v] = crd.spec.versions;
        assert.deepEqual([v.name, v.served, v.storage], ["v1alpha1", true, true]);
        assert.deepEqual(v.subresources, { status: {} });
      });

      it("has KEDA's printer columns", () => {
        assert.deepEqual(
          crd.spec.versions[0].additionalPrinterColumns.map((col: Obj) => [
            col.name,
            col.type,
            col.jsonPath,
            col.priority ?? 0,
          ]),
          c.columns,
        );
      });

      it("has a structural schema that types every field and keeps no unknown fields", () => {
        const schema = openApiSchema(crd);
        assert.deepEqual(structuralViolations(schema), []);
        assert.equal(preservedNodes(schema), 0);
        assert.deepEqual(schema.required, ["spec"]);
        assert.deepEqual(Object.keys(schema.properties), [
          "apiVersion",
          "kind",
          "metadata",
          "spec",
          "status",
        ]);
      });

      it(`accepts tests/deploy/fixtures/keda/${c.fixture}, every field of it declared`, () => {
        const object = readYaml(join(KEDA_FIXTURES, c.fixture));
        assert.equal(object.kind, c.kind);
        assert.equal(object.apiVersion, "keda.sh/v1alpha1");
        assert.equal(object.metadata.namespace !== undefined, c.scope === "Namespaced");
        assert.deepEqual(schemaErrors(openApiSchema(crd), object), []);
      });
    });
  }

  it("the structural check finds a node without type, and the validator an undeclared field", () => {
    assert.deepEqual(
      structuralViolations({
        type: "object",
        properties: {
          spec: { properties: { a: { type: "string" } } },
          metadata: { type: "object" },
        },
      }),
      ["/properties/spec: no type"],
    );
    assert.deepEqual(
      schemaErrors({ type: "object", properties: { a: { type: "string" } } }, { a: "x", b: 1 }),
      [".b: not declared in the schema"],
    );
  });

  it("ScaledObject: requires a named scale target and triggers with a type and metadata, min at most max", () => {
    const spec = openApiSchema(kedaCrd("scaledobjects.yaml")).properties.spec;
    assert.deepEqual(spec.required, ["scaleTargetRef", "triggers"]);
    assert.deepEqual(spec.properties.scaleTargetRef.required, ["name"]);
    assert.equal(spec.properties.triggers.minItems, 1);
    assert.deepEqual(spec.properties.triggers.items.required, ["type", "metadata"]);
    assert.deepEqual(spec.properties.triggers.items.properties.metadata.additionalProperties, {
      type: "string",
    });
    assert.deepEqual(spec["x-kubernetes-validations"], [{
      rule:
        "!has(self.minReplicaCount) || self.minReplicaCount <= (has(self.maxReplicaCount) ? self.maxReplicaCount : 100)",
      message: "minReplicaCount must be less than or equal to maxReplicaCount",
    }]);
    assert.deepEqual(spec.properties.fallback.properties.behavior.default, "static");
  });

  it("ScaledObject: has KEDA's spec and status fields", () => {
    const schema = openApiSchema(kedaCrd("scaledobjects.yaml"));
    assert.deepEqual(Object.keys(schema.properties.spec.properties).sort(), [
      "advanced",
      "cooldownPeriod",
      "fallback",
      "idleReplicaCount",
      "initialCooldownPeriod",
      "maxReplicaCount",
      "minReplicaCount",
      "pollingInterval",
      "scaleTargetRef",
      "triggers",
    ]);
    assert.deepEqual(Object.keys(schema.properties.status.properties).sort(), [
      "authenticationsTypes",
      "compositeScalerName",
      "conditions",
      "externalMetricNames",
      "health",
      "hpaName",
      "lastActiveTime",
      "originalReplicaCount",
      "pausedReplicaCount",
      "resourceMetricNames",
      "scaleTargetGVKR",
      "scaleTargetKind",
      "triggersActivity",
      "triggersTypes",
    ]);
  });

  it("TriggerAuthentication and ClusterTriggerAuthentication share one spec and status with KEDA's sources", () => {
    const namespaced = openApiSchema(kedaCrd("triggerauthentications.yaml"));
    const cluster = openApiSchema(kedaCrd("clustertriggerauthentications.yaml"));
    assert.deepEqual(cluster.properties.spec, namespaced.properties.spec);
    assert.deepEqual(cluster.properties.status, namespaced.properties.status);
    assert.deepEqual(Object.keys(namespaced.properties.spec.properties).sort(), [
      "awsSecretManager",
      "azureKeyVault",
      "boundServiceAccountToken",
      "configMapTargetRef",
      "env",
      "filePath",
      "gcpSecretManager",
      "hashiCorpVault",
      "oauth2",
      "podIdentity",
      "secretTargetRef",
    ]);
    assert.deepEqual(Object.keys(namespaced.properties.status.properties), [
      "scaledobjects",
      "scaledjobs",
    ]);
  });

  describe("reject what KEDA's schemas reject", () => {
    const so = (spec: Obj): Obj => ({
      apiVersion: "keda.sh/v1alpha1",
      kind: "ScaledObject",
      metadata: { name: "x", namespace: "shop" },
      spec,
    });
    const target = { name: "worker" };
    const cpu = { type: "cpu", metadata: { value: "50" } };
    const cases: [string, string, Obj, string[]][] = [
      ["a ScaledObject without triggers", "scaledobjects.yaml", so({ scaleTargetRef: target }), [
        ".spec.triggers: required",
      ]],
      [
        "a ScaledObject with no trigger",
        "scaledobjects.yaml",
        so({ scaleTargetRef: target, triggers: [] }),
        [".spec.triggers: 0 items, want at least 1"],
      ],
      [
        "a scale target without a name",
        "scaledobjects.yaml",
        so({ scaleTargetRef: { name: "" }, triggers: [cpu] }),
        [".spec.scaleTargetRef.name: shorter than 1"],
      ],
      [
        "a trigger without metadata",
        "scaledobjects.yaml",
        so({ scaleTargetRef: target, triggers: [{ type: "cpu" }] }),
        [".spec.triggers[0].metadata: required"],
      ],
      [
        "an authenticationRef to a Secret",
        "scaledobjects.yaml",
        so({
          scaleTargetRef: target,
          triggers: [{ ...cpu, authenticationRef: { name: "a", kind: "Secret" } }],
        }),
        ['.spec.triggers[0].authenticationRef.kind: "Secret" not in ["TriggerAuthentication","ClusterTriggerAuthentication"]'],
      ],
      [
        "an unknown fallback behavior and a pollingInterval of 0",
        "scaledobjects.yaml",
        so({
          scaleTargetRef: target,
          pollingInterval: 0,
          triggers: [cpu],
          fallback: { failureThreshold: 3, replicas: 1, behavior: "sometimes" },
        }),
        [
          ".spec.pollingInterval: 0 below 1",
          '.spec.fallback.behavior: "sometimes" not in ["static","currentReplicas","currentReplicasIfHigher","currentReplicasIfLower","scalingModifiers"]',
        ],
      ],
      [
        "a tolerance that is no Quantity",
        "scaledobjects.yaml",
        so({
          scaleTargetRef: target,
          triggers: [cpu],
          advanced: {
            horizontalPodAutoscalerConfig: { behavior: { scaleUp: { tolerance: "ten" } } },
          },
        }),
        [
          '.spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleUp.tolerance: "ten" does not match ^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$',
        ],
      ],
      [
        "a field KEDA does not have",
        "scaledobjects.yaml",
        so({ scaleTargetRef: target, triggers: [cpu], maxReplicas: 3 }),
        [".spec.maxReplicas: not declared in the schema"],
      ],
      [
        "a TriggerAuthentication without spec",
        "triggerauthentications.yaml",
        { apiVersion: "keda.sh/v1alpha1", kind: "TriggerAuthentication", metadata: { name: "a" } },
        [".spec: required"],
      ],
      [
        "an unknown pod identity provider and a Vault without secrets",
        "clustertriggerauthentications.yaml",
        {
          apiVersion: "keda.sh/v1alpha1",
          kind: "ClusterTriggerAuthentication",
          metadata: { name: "a" },
          spec: {
            podIdentity: { provider: "azure" },
            hashiCorpVault: { address: "https://vault:8200", authentication: "token", secrets: [] },
          },
        },
        [
          '.spec.podIdentity.provider: "azure" not in ["azure-workload","gcp","aws","aws-eks","none"]',
          ".spec.hashiCorpVault.secrets: 0 items, want at least 1",
        ],
      ],
    ];
    for (const [name, file, object, errors] of cases) {
      it(name, () => {
        assert.deepEqual(schemaErrors(openApiSchema(kedaCrd(file)), object), errors);
      });
    }
  });
});
