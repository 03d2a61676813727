/**
 * The Helm chart deploy/helm/hpa-metrics-adapter as a real helm renders it (built from its Go
 * module on first use, tests/deploy/helm_tool.ts): `helm lint`, `helm template` with the default
 * values (the same objects as the kustomize base), each feature's exact objects and flags, every
 * feature on at once, the kustomize components' objects for the same features, the schema's
 * rejection of misspelt values, and the render's own checks. Every flag in the container's args
 * must parse with serve's flag definitions.
 */
import { before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { load, loadAll } from "js-yaml";
import { createCertificate } from "../../src/api/cert_issue.ts";
import { delegateUrls } from "../../src/cli/delegate_options.ts";
import { type FlagValues, parseArgs, SERVE_FLAGS } from "../../src/cli/flags.ts";
import { prometheusOptionsFromFlags } from "../../src/cli/prometheus_options.ts";
import { VERSION } from "../../src/cli/version.ts";
import { ensureHelm, runHelm } from "./helm_tool.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const DEPLOY = join(ROOT, "deploy");
const CHART = join(DEPLOY, "helm", "hpa-metrics-adapter");
const NS = "hpa-metrics-adapter";
const PROMETHEUS = "http://prometheus.monitoring.svc.cluster.local:9090";
/** The delegates of deploy/components/delegation. */
const KEDA = "https://keda-operator-metrics-apiserver.keda.svc:443";
const PROMETHEUS_ADAPTER = "https://prometheus-adapter.monitoring.svc:443";

// deno-lint-ignore no-explicit-any
type Obj = Record<string, any>;

/** Labels Helm charts add by convention; the kustomize base has only app.kubernetes.io/name. */
const HELM_LABELS = [
  "helm.sh/chart",
  "app.kubernetes.io/managed-by",
  "app.kubernetes.io/instance",
  "app.kubernetes.io/version",
];

function kustomize(dir: string): Obj[] {
  const r = spawnSync("kubectl", ["kustomize", dir], { encoding: "utf8", maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, `kubectl kustomize ${dir} failed: ${r.error?.message ?? r.stderr}`);
  return (loadAll(r.stdout) as Obj[]).filter((o) => o !== null && o !== undefined);
}

/** Options of {@linkcode template}. */
interface TemplateOptions {
  release?: string;
  namespace?: string;
  /** Render crds/ too (`helm template --include-crds`). */
  includeCrds?: boolean;
}

function helm(args: string[], input?: string): { status: number | null; out: string } {
  const r = runHelm(args, { input });
  if (r.error) throw r.error;
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** `helm template` with `values` (JSON is YAML) on standard input; the rendered objects. */
function template(values: Obj = {}, options: TemplateOptions = {}): Obj[] {
  const args = [
    "template",
    options.release ?? "hpa-metrics-adapter",
    CHART,
    "--namespace",
    options.namespace ?? NS,
    "-f",
    "-",
    ...(options.includeCrds ? ["--include-crds"] : []),
  ];
  const r = helm(args, JSON.stringify(values));
  assert.equal(r.status, 0, `helm ${args.join(" ")} failed: ${r.out}`);
  return (loadAll(r.out) as Obj[]).filter((o) => o !== null && o !== undefined);
}

/** `helm template` that must fail; its output. */
function templateFails(values: Obj): string {
  const r = helm(
    ["template", "hpa-metrics-adapter", CHART, "-n", NS, "-f", "-"],
    JSON.stringify(values),
  );
  assert.notEqual(r.status, 0, `helm template succeeded with ${JSON.stringify(values)}`);
  return r.out;
}

function id(o: Obj): string {
  return `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ""}${o.metadata.name}`;
}

function ids(objects: Obj[]): string[] {
  return objects.map(id).sort();
}

function find(objects: Obj[], kind: string, name: string): Obj {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  assert.ok(o, `no ${kind} ${name} rendered`);
  return o;
}

function deployment(objects: Obj[], name = "hpa-metrics-adapter"): Obj {
  return find(objects, "Deployment", name);
}

function container(objects: Obj[], name?: string): Obj {
  return deployment(objects, name).spec.template.spec.containers[0];
}

function serveFlags(objects: Obj[], name?: string): FlagValues {
  return parseArgs(container(objects, name).args, SERVE_FLAGS).values;
}

/** The flags whose values differ from `base`'s, with their values. */
function changedFlags(objects: Obj[], base: Obj[]): FlagValues {
  const flags = serveFlags(objects);
  const before = serveFlags(base);
  return Object.fromEntries(
    Object.entries(flags).filter(([k, v]) => JSON.stringify(v) !== JSON.stringify(before[k])),
  );
}

function withoutHelmLabels(labels: Obj | undefined): Obj | undefined {
  if (!labels) return labels;
  const out = { ...labels };
  for (const k of HELM_LABELS) delete out[k];
  return out;
}

/**
 * An object as the comparison with kustomize sees it: Helm's conventional labels removed from
 * every label map and selector (the chart also selects by app.kubernetes.io/instance), the
 * container's args as serve parses them (a component appends a flag where the chart has one
 * place for it: `--scaling-schedule` then `--scaling-schedule=false` is `--scaling-schedule=false`),
 * and base64 values without line breaks.
 */
function normalize(o: Obj): Obj {
  const walk = (v: unknown, key: string): unknown => {
    if (Array.isArray(v)) return v.map((x) => walk(x, ""));
    if (v === null || typeof v !== "object") return v;
    const obj = v as Obj;
    if (key === "labels" || key === "matchLabels") return withoutHelmLabels(obj);
    const out: Obj = {};
    for (const [k, x] of Object.entries(obj)) out[k] = walk(x, k);
    return out;
  };
  const n = walk(structuredClone(o), "") as Obj;
  if (n.kind === "Service") n.spec.selector = withoutHelmLabels(n.spec.selector);
  // kustomize wraps long base64 values at 76 characters; Helm's b64enc does not
  const unwrap = (b64: string): string => b64.replace(/\s/g, "");
  if (n.kind === "Secret") {
    n.data = Object.fromEntries(
      Object.entries(n.data as Record<string, string> ?? {}).map(([k, v]) => [k, unwrap(v)]),
    );
  }
  if (n.kind === "APIService" && n.spec.caBundle) n.spec.caBundle = unwrap(n.spec.caBundle);
  if (n.kind === "Deployment") {
    for (const c of n.spec.template.spec.containers) c.args = parseArgs(c.args, SERVE_FLAGS).values;
  }
  return n;
}

/** The chart's objects equal the kustomize render's, one by one. */
function assertSameObjects(chart: Obj[], kustomized: Obj[]): void {
  assert.deepEqual(ids(chart), ids(kustomized));
  for (const k of kustomized) {
    const c = chart.find((o) => id(o) === id(k)) as Obj;
    assert.deepEqual(normalize(c), normalize(k), id(k));
  }
}

/** Every feature on (certManager stands for the verified serving certificate; tls is separate). */
const ALL_FEATURES: Obj = {
  replicas: 3,
  logLevel: 2,
  extraArgs: ["--default-collection-interval=30s"],
  extraEnv: [{ name: "PROMETHEUS_SERVER_URL", value: PROMETHEUS }],
  prometheus: {
    url: PROMETHEUS,
    queryTimeout: "10s",
    tokenSecret: { name: "prometheus-token", key: "token" },
    additionalServers: [
      {
        alias: "thanos",
        url: "http://thanos-query.monitoring.svc:9090",
        tokenSecret: { name: "thanos-token", key: "bearer" },
      },
      { alias: "longterm", url: "http://victoria.monitoring.svc:8428" },
    ],
  },
  aws: {
    enable: true,
    region: "eu-central-1,eu-west-1",
    roleArn: "arn:aws:iam::111122223333:role/hpa-metrics-adapter",
  },
  certManager: { enabled: true },
  replicaGuard: { enabled: true, interval: "30s", prometheusUrl: PROMETHEUS },
  knative: {
    enabled: true,
    prometheusAddress: PROMETHEUS,
    clusterTriggerAuthenticationNamespace: "keda-system",
  },
  delegation: {
    externalMetrics: KEDA,
    customMetrics: PROMETHEUS_ADAPTER,
    caSecret: { name: "delegates-ca" },
    clientCertSecret: { name: "adapter-client" },
    discoveryInterval: "1m",
  },
  sharding: { enabled: true, leaseDuration: "30s", retryPeriod: "5s" },
  statusPage: { enabled: false },
  metrics: { port: 9100 },
  serviceMonitor: { enabled: true, interval: "30s", labels: { release: "prometheus" } },
  keda: {
    installCRDs: true,
    scaledObjects: true,
    scaledObjectSelector: "autoscaler=hpa-metrics-adapter",
    clusterObjectNamespace: "keda-system",
  },
};

/** KEDA's CRDs of deploy/crds/keda, which keda.installCRDs renders. */
const KEDA_CRD_FILES = [
  "scaledobjects.yaml",
  "triggerauthentications.yaml",
  "clustertriggerauthentications.yaml",
];
const KEDA_CRD_IDS = [
  "CustomResourceDefinition clustertriggerauthentications.keda.sh",
  "CustomResourceDefinition scaledobjects.keda.sh",
  "CustomResourceDefinition triggerauthentications.keda.sh",
];

/** What the default render holds (the kustomize base without its Namespace). */
const DEFAULT_IDS = [
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
  "Deployment hpa-metrics-adapter/hpa-metrics-adapter",
  "PodDisruptionBudget hpa-metrics-adapter/hpa-metrics-adapter",
  "Role hpa-metrics-adapter/hpa-metrics-adapter:leader-election",
  "RoleBinding hpa-metrics-adapter/hpa-metrics-adapter:leader-election",
  "RoleBinding kube-system/hpa-metrics-adapter:extension-apiserver-authentication-reader",
  "Service hpa-metrics-adapter/hpa-metrics-adapter",
  "ServiceAccount hpa-metrics-adapter/hpa-metrics-adapter",
];

describe("helm chart deploy/helm/hpa-metrics-adapter", () => {
  before(() => {
    // builds helm from its Go module when it is not cached; throws (fails) when it cannot
    ensureHelm();
  });

  describe("helm lint", () => {
    for (const [name, values] of [["default values", {}], ["every feature on", ALL_FEATURES]]) {
      it(`passes --strict with ${name}`, () => {
        const r = helm(["lint", "--strict", CHART, "-f", "-"], JSON.stringify(values));
        assert.equal(r.status, 0, r.out);
        assert.match(r.out, /^1 chart\(s\) linted, 0 chart\(s\) failed$/m);
        assert.doesNotMatch(r.out, /\[(ERROR|WARNING)\]/);
      });
    }

    it("fails on a misspelt value", () => {
      const r = helm(["lint", "--strict", CHART, "-f", "-"], JSON.stringify({ replicass: 3 }));
      assert.equal(r.status, 1, r.out);
      assert.match(
        r.out,
        /\[ERROR\] values\.yaml: - at '': additional properties 'replicass' not allowed/,
      );
    });
  });

  describe("default values", () => {
    const base = kustomize(DEPLOY);
    let chart: Obj[] = [];
    before(() => {
      chart = template({}, { includeCrds: true });
    });

    it("render the kustomize base's objects, less its Namespace (Helm installs into the release namespace)", () => {
      assert.deepEqual(
        ids(chart),
        [
          ...DEFAULT_IDS,
          "CustomResourceDefinition clusterscalingschedules.zalando.org",
          "CustomResourceDefinition scalingschedules.zalando.org",
        ].sort(),
      );
      assert.deepEqual(
        ids(base).filter((x) => !ids(chart).includes(x)),
        [`Namespace ${NS}`],
      );
    });

    it("equal the kustomize base object by object, but for Helm's labels", () => {
      assertSameObjects(chart, base.filter((o) => o.kind !== "Namespace"));
    });

    it("pass the base's exact args, in its order", () => {
      assert.deepEqual(container(chart).args, container(base).args);
    });

    it("carry Helm's labels, and select the release's pods by name and instance", () => {
      const d = deployment(chart);
      assert.deepEqual(d.metadata.labels, {
        "app.kubernetes.io/name": "hpa-metrics-adapter",
        "app.kubernetes.io/instance": "hpa-metrics-adapter",
        "app.kubernetes.io/version": VERSION,
        "app.kubernetes.io/managed-by": "Helm",
        "helm.sh/chart": `hpa-metrics-adapter-${VERSION}`,
      });
      const selector = {
        "app.kubernetes.io/name": "hpa-metrics-adapter",
        "app.kubernetes.io/instance": "hpa-metrics-adapter",
      };
      assert.deepEqual(d.spec.selector.matchLabels, selector);
      assert.deepEqual(d.spec.template.metadata.labels, selector);
      assert.deepEqual(find(chart, "Service", "hpa-metrics-adapter").spec.selector, selector);
      assert.deepEqual(
        find(chart, "PodDisruptionBudget", "hpa-metrics-adapter").spec.selector.matchLabels,
        selector,
      );
    });

    it("run the image of appVersion, which is the adapter's version and the base's tag", () => {
      const meta = load(readFileSync(join(CHART, "Chart.yaml"), "utf8")) as Obj;
      assert.equal(meta.appVersion, VERSION);
      assert.equal(meta.version, VERSION);
      assert.equal(
        container(chart).image,
        `ghcr.io/hpa-metrics-adapter/hpa-metrics-adapter:${VERSION}`,
      );
      assert.equal(container(chart).image, container(base).image);
    });

    it("ship crds/ byte for byte as deploy/crds", () => {
      for (const file of ["scalingschedules.yaml", "clusterscalingschedules.yaml"]) {
        assert.equal(
          readFileSync(join(CHART, "crds", file), "utf8"),
          readFileSync(join(DEPLOY, "crds", file), "utf8"),
          file,
        );
      }
    });
  });

  it("names objects after another release and puts them in its namespace", () => {
    const objects = template({ certManager: { enabled: true } }, {
      release: "metrics",
      namespace: "monitoring",
    });
    const full = "metrics-hpa-metrics-adapter";
    assert.equal(deployment(objects, full).metadata.namespace, "monitoring");
    for (const s of objects.filter((o) => o.kind === "APIService")) {
      assert.deepEqual(s.spec.service, { name: full, namespace: "monitoring", port: 443 });
      assert.equal(
        s.metadata.annotations["cert-manager.io/inject-ca-from"],
        `monitoring/${full}-tls`,
      );
    }
    const subjects = objects
      .filter((o) => o.kind.endsWith("Binding") && o.metadata.name !== `${full}:hpa-controller`)
      .map((b) => b.subjects);
    assert.equal(subjects.length, 5);
    for (const s of subjects) {
      assert.deepEqual(s, [{ kind: "ServiceAccount", name: full, namespace: "monitoring" }]);
    }
    assert.deepEqual(find(objects, "Certificate", `${full}-tls`).spec.dnsNames, [
      `${full}.monitoring.svc`,
      `${full}.monitoring.svc.cluster.local`,
    ]);
    assert.equal(
      find(objects, "RoleBinding", `${full}:extension-apiserver-authentication-reader`).metadata
        .namespace,
      "kube-system",
    );
    assert.deepEqual(
      ids(template({}, { release: "hpa-metrics-adapter-blue" })).filter((x) =>
        x.startsWith("Deployment")
      ),
      ["Deployment hpa-metrics-adapter/hpa-metrics-adapter-blue"],
    );
  });

  describe("each feature adds exactly its objects and flags", () => {
    let defaults: Obj[] = [];
    before(() => {
      defaults = template();
    });

    interface Feature {
      name: string;
      values: Obj;
      added?: string[];
      removed?: string[];
      flags: FlagValues;
    }
    const features: Feature[] = [
      {
        name: "scalingSchedules.enabled false",
        values: { scalingSchedules: { enabled: false } },
        removed: [
          "ClusterRole hpa-metrics-adapter:scaling-schedules",
          "ClusterRoleBinding hpa-metrics-adapter:scaling-schedules",
        ],
        flags: { "scaling-schedule": false },
      },
      {
        name: "prometheus.url and queryTimeout",
        values: { prometheus: { url: PROMETHEUS, queryTimeout: "30s" } },
        flags: { "prometheus-server": PROMETHEUS, "prometheus-query-timeout": 30 },
      },
      {
        name: "prometheus.tokenSecret",
        values: { prometheus: { url: PROMETHEUS, tokenSecret: { name: "prom", key: "t" } } },
        flags: {
          "prometheus-server": PROMETHEUS,
          "prometheus-server-token-file": "/etc/hpa-metrics-adapter/prometheus/token",
        },
      },
      {
        name: "prometheus.additionalServers",
        values: {
          prometheus: {
            additionalServers: [
              { alias: "a", url: "http://a:9090", tokenSecret: { name: "a-token", key: "k" } },
              { alias: "b", url: "https://b:443/prom" },
            ],
          },
        },
        flags: {
          "additional-prometheus-server": ["a=http://a:9090", "b=https://b:443/prom"],
          "additional-prometheus-server-token-file": [
            "a=/etc/hpa-metrics-adapter/prometheus-0/token",
          ],
        },
      },
      {
        name: "aws.enable with IRSA",
        values: {
          aws: {
            enable: true,
            region: "eu-central-1",
            roleArn: "arn:aws:iam::111122223333:role/hpa-metrics-adapter",
          },
        },
        flags: { "aws-external-metrics": true, "aws-region": ["eu-central-1"] },
      },
      {
        name: "certManager.enabled",
        values: { certManager: { enabled: true } },
        added: [
          "Certificate hpa-metrics-adapter/hpa-metrics-adapter-ca",
          "Certificate hpa-metrics-adapter/hpa-metrics-adapter-tls",
          "Issuer hpa-metrics-adapter/hpa-metrics-adapter-ca",
          "Issuer hpa-metrics-adapter/hpa-metrics-adapter-selfsigned",
        ],
        flags: {
          "tls-cert-file": "/etc/hpa-metrics-adapter/tls/tls.crt",
          "tls-private-key-file": "/etc/hpa-metrics-adapter/tls/tls.key",
        },
      },
      {
        name: "certManager.issuerRef",
        values: {
          certManager: { enabled: true, issuerRef: { name: "corp", kind: "ClusterIssuer" } },
        },
        added: ["Certificate hpa-metrics-adapter/hpa-metrics-adapter-tls"],
        flags: {
          "tls-cert-file": "/etc/hpa-metrics-adapter/tls/tls.crt",
          "tls-private-key-file": "/etc/hpa-metrics-adapter/tls/tls.key",
        },
      },
      {
        name: "replicaGuard.enabled",
        values: { replicaGuard: { enabled: true, interval: "30s", prometheusUrl: PROMETHEUS } },
        added: [
          "ClusterRole hpa-metrics-adapter:replica-guard",
          "ClusterRoleBinding hpa-metrics-adapter:replica-guard",
        ],
        flags: {
          "estafette-hpa-scaler": true,
          "estafette-hpa-scaler-interval": 30,
          "estafette-prometheus-server-url": PROMETHEUS,
        },
      },
      {
        name: "knative.enabled",
        values: {
          knative: {
            enabled: true,
            prometheusAddress: PROMETHEUS,
            clusterTriggerAuthenticationNamespace: "keda-system",
          },
        },
        added: [
          "ClusterRole hpa-metrics-adapter:knative",
          "ClusterRoleBinding hpa-metrics-adapter:knative",
        ],
        flags: {
          "knative-autoscaler": true,
          "knative-prometheus-address": PROMETHEUS,
          "knative-cluster-trigger-authentication-namespace": "keda-system",
        },
      },
      {
        name: "keda.scaledObjects",
        values: {
          keda: {
            scaledObjects: true,
            scaledObjectSelector: "autoscaler=hpa-metrics-adapter",
            clusterObjectNamespace: "keda-system",
          },
        },
        added: [
          "ClusterRole hpa-metrics-adapter:keda",
          "ClusterRoleBinding hpa-metrics-adapter:keda",
        ],
        flags: {
          "keda-scaled-objects": true,
          "keda-scaled-object-selector": "autoscaler=hpa-metrics-adapter",
          "keda-cluster-object-namespace": "keda-system",
        },
      },
      {
        name:
          "delegation.externalMetrics, customMetrics, insecureSkipTLSVerify and discoveryInterval",
        values: {
          delegation: {
            externalMetrics: KEDA,
            customMetrics: PROMETHEUS_ADAPTER,
            insecureSkipTLSVerify: true,
            discoveryInterval: "1m",
          },
        },
        added: [
          "ClusterRole hpa-metrics-adapter:delegation",
          "ClusterRoleBinding hpa-metrics-adapter:delegation",
        ],
        flags: {
          "delegate-external-metrics": KEDA,
          "delegate-custom-metrics": PROMETHEUS_ADAPTER,
          "delegate-insecure-skip-tls-verify": true,
          "delegate-discovery-interval": 60,
        },
      },
      {
        name: "delegation.customMetrics alone",
        values: { delegation: { customMetrics: PROMETHEUS_ADAPTER } },
        added: [
          "ClusterRole hpa-metrics-adapter:delegation",
          "ClusterRoleBinding hpa-metrics-adapter:delegation",
        ],
        flags: { "delegate-custom-metrics": PROMETHEUS_ADAPTER },
      },
      {
        name: "delegation.caSecret and clientCertSecret",
        values: {
          delegation: {
            externalMetrics: KEDA,
            caSecret: { name: "keda-ca", key: "bundle.pem" },
            clientCertSecret: { name: "adapter-client" },
          },
        },
        added: [
          "ClusterRole hpa-metrics-adapter:delegation",
          "ClusterRoleBinding hpa-metrics-adapter:delegation",
        ],
        flags: {
          "delegate-external-metrics": KEDA,
          "delegate-ca-file": "/etc/hpa-metrics-adapter/delegate-ca/bundle.pem",
          "delegate-client-cert-file": "/etc/hpa-metrics-adapter/delegate-client/tls.crt",
          "delegate-client-key-file": "/etc/hpa-metrics-adapter/delegate-client/tls.key",
        },
      },
      {
        name: "delegation.tokenSecret",
        values: { delegation: { externalMetrics: KEDA, tokenSecret: { name: "keda-token" } } },
        added: [
          "ClusterRole hpa-metrics-adapter:delegation",
          "ClusterRoleBinding hpa-metrics-adapter:delegation",
        ],
        flags: {
          "delegate-external-metrics": KEDA,
          "delegate-token-file": "/etc/hpa-metrics-adapter/delegate-token/token",
        },
      },
      {
        name: "delegation with rbac.create false",
        values: { delegation: { externalMetrics: KEDA }, rbac: { create: false } },
        removed: DEFAULT_IDS.filter((x) => /^(Cluster)?Role/.test(x)),
        flags: { "delegate-external-metrics": KEDA },
      },
      {
        name: "sharding.enabled with certManager, leaseDuration and retryPeriod",
        values: {
          certManager: { enabled: true },
          sharding: { enabled: true, leaseDuration: "30s", retryPeriod: "5s" },
        },
        added: [
          "Certificate hpa-metrics-adapter/hpa-metrics-adapter-ca",
          "Certificate hpa-metrics-adapter/hpa-metrics-adapter-tls",
          "ClusterRole hpa-metrics-adapter:shard-peer",
          "ClusterRoleBinding hpa-metrics-adapter:shard-peer",
          "Issuer hpa-metrics-adapter/hpa-metrics-adapter-ca",
          "Issuer hpa-metrics-adapter/hpa-metrics-adapter-selfsigned",
          "Role hpa-metrics-adapter/hpa-metrics-adapter:sharding",
          "RoleBinding hpa-metrics-adapter/hpa-metrics-adapter:sharding",
        ],
        flags: {
          "tls-cert-file": "/etc/hpa-metrics-adapter/tls/tls.crt",
          "tls-private-key-file": "/etc/hpa-metrics-adapter/tls/tls.key",
          "shard-collection": true,
          "shard-peer-ca-file": "/etc/hpa-metrics-adapter/tls/ca.crt",
          "shard-peer-server-name": "hpa-metrics-adapter.hpa-metrics-adapter.svc",
          "shard-lease-duration": 30,
          "shard-retry-period": 5,
        },
      },
      {
        name: "sharding.enabled with tls.secretName",
        values: {
          tls: { enable: true, secretName: "my-cert", ca: "-----BEGIN CERTIFICATE-----" },
          sharding: { enabled: true },
        },
        added: [
          "ClusterRole hpa-metrics-adapter:shard-peer",
          "ClusterRoleBinding hpa-metrics-adapter:shard-peer",
          "Role hpa-metrics-adapter/hpa-metrics-adapter:sharding",
          "RoleBinding hpa-metrics-adapter/hpa-metrics-adapter:sharding",
        ],
        flags: {
          "tls-cert-file": "/etc/hpa-metrics-adapter/tls/tls.crt",
          "tls-private-key-file": "/etc/hpa-metrics-adapter/tls/tls.key",
          "shard-collection": true,
          "shard-peer-ca-file": "/etc/hpa-metrics-adapter/tls/ca.crt",
          "shard-peer-server-name": "hpa-metrics-adapter.hpa-metrics-adapter.svc",
        },
      },
      {
        name: "sharding with rbac.create false",
        values: {
          certManager: { enabled: true, issuerRef: { name: "corp", kind: "ClusterIssuer" } },
          sharding: { enabled: true },
          rbac: { create: false },
        },
        added: ["Certificate hpa-metrics-adapter/hpa-metrics-adapter-tls"],
        removed: DEFAULT_IDS.filter((x) => /^(Cluster)?Role/.test(x)),
        flags: {
          "tls-cert-file": "/etc/hpa-metrics-adapter/tls/tls.crt",
          "tls-private-key-file": "/etc/hpa-metrics-adapter/tls/tls.key",
          "shard-collection": true,
          "shard-peer-ca-file": "/etc/hpa-metrics-adapter/tls/ca.crt",
          "shard-peer-server-name": "hpa-metrics-adapter.hpa-metrics-adapter.svc",
        },
      },
      {
        name: "statusPage.enabled false and metrics.port",
        values: { statusPage: { enabled: false }, metrics: { port: 9100 } },
        flags: { "status-page": false, "metrics-address": ":9100" },
      },
      {
        name: "serviceMonitor.enabled",
        values: { serviceMonitor: { enabled: true } },
        added: [
          "Service hpa-metrics-adapter/hpa-metrics-adapter-metrics",
          "ServiceMonitor hpa-metrics-adapter/hpa-metrics-adapter",
        ],
        flags: {},
      },
      {
        name: "leaderElection.enabled false",
        values: { leaderElection: { enabled: false } },
        removed: [
          "Role hpa-metrics-adapter/hpa-metrics-adapter:leader-election",
          "RoleBinding hpa-metrics-adapter/hpa-metrics-adapter:leader-election",
        ],
        flags: { "leader-elect": false, "leader-elect-resource-namespace": null },
      },
      {
        name: "replicas 1",
        values: { replicas: 1 },
        removed: ["PodDisruptionBudget hpa-metrics-adapter/hpa-metrics-adapter"],
        flags: {},
      },
      {
        name: "logLevel and extraArgs",
        values: { logLevel: 4, extraArgs: ["--metrics-ttl=5m", "--v=6"] },
        flags: { v: 6, "metrics-ttl": 300 },
      },
      {
        name: "service.internalPort",
        values: { service: { internalPort: 8443, port: 8443 } },
        flags: { "secure-port": 8443 },
      },
      {
        name: "rbac.create false",
        values: { rbac: { create: false } },
        removed: DEFAULT_IDS.filter((x) => /^(Cluster)?Role/.test(x)),
        flags: {},
      },
      {
        name: "serviceAccount.create false",
        values: { serviceAccount: { create: false, name: "mine" } },
        removed: ["ServiceAccount hpa-metrics-adapter/hpa-metrics-adapter"],
        flags: {},
      },
      {
        name: "keda.installCRDs",
        values: { keda: { installCRDs: true } },
        added: KEDA_CRD_IDS,
        flags: {},
      },
    ];
    for (const f of features) {
      it(f.name, () => {
        const objects = template(f.values);
        assert.deepEqual(
          ids(objects).filter((x) => !ids(defaults).includes(x)),
          (f.added ?? []).sort(),
          "added objects",
        );
        assert.deepEqual(
          ids(defaults).filter((x) => !ids(objects).includes(x)),
          (f.removed ?? []).sort(),
          "removed objects",
        );
        assert.deepEqual(changedFlags(objects, defaults), f.flags);
      });
    }

    it("prometheus.tokenSecret mounts the Secret's key as a folder the adapter re-reads", () => {
      const objects = template({
        prometheus: { url: PROMETHEUS, tokenSecret: { name: "prom", key: "t" } },
      });
      const pod = deployment(objects).spec.template.spec;
      assert.deepEqual(pod.volumes.find((v: Obj) => v.name === "prometheus-token"), {
        name: "prometheus-token",
        secret: { secretName: "prom", items: [{ key: "t", path: "token" }] },
      });
      assert.deepEqual(
        pod.containers[0].volumeMounts.find((m: Obj) => m.name === "prometheus-token"),
        {
          name: "prometheus-token",
          mountPath: "/etc/hpa-metrics-adapter/prometheus",
          readOnly: true,
        },
      );
    });

    it("aws.roleArn annotates the service account and aws.region's first region is AWS_REGION", () => {
      const objects = template({
        aws: {
          enable: true,
          region: "us-east-1,eu-west-1",
          roleArn: "arn:aws:iam::111122223333:role/adapter",
        },
        serviceAccount: { annotations: { team: "autoscaling" } },
      });
      assert.deepEqual(
        find(objects, "ServiceAccount", "hpa-metrics-adapter").metadata.annotations,
        {
          team: "autoscaling",
          "eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/adapter",
          "eks.amazonaws.com/sts-regional-endpoints": "true",
        },
      );
      assert.deepEqual(container(objects).env.at(-1), { name: "AWS_REGION", value: "us-east-1" });
      assert.deepEqual(serveFlags(objects)["aws-region"], ["us-east-1", "eu-west-1"]);
    });

    it("serviceMonitor scrapes the metrics port through a Service of its own", () => {
      const objects = template({
        serviceMonitor: { enabled: true, interval: "15s", labels: { release: "kube-prom" } },
        metrics: { port: 9100 },
      });
      const svc = find(objects, "Service", "hpa-metrics-adapter-metrics");
      assert.deepEqual(svc.spec.ports, [{
        name: "metrics",
        port: 9100,
        targetPort: "metrics",
        protocol: "TCP",
      }]);
      const sm = find(objects, "ServiceMonitor", "hpa-metrics-adapter");
      assert.equal(sm.metadata.labels.release, "kube-prom");
      assert.deepEqual(sm.spec.selector.matchLabels, {
        "app.kubernetes.io/name": "hpa-metrics-adapter",
        "app.kubernetes.io/instance": "hpa-metrics-adapter",
        "app.kubernetes.io/component": "metrics",
      });
      // the APIServices' Service has no component label: the ServiceMonitor selects only this one
      for (const [k, v] of Object.entries(sm.spec.selector.matchLabels)) {
        assert.equal(svc.metadata.labels[k], v, k);
      }
      assert.equal(
        find(objects, "Service", "hpa-metrics-adapter").metadata
          .labels["app.kubernetes.io/component"],
        undefined,
      );
      assert.deepEqual(sm.spec.endpoints, [{ port: "metrics", path: "/metrics", interval: "15s" }]);
      assert.deepEqual(sm.spec.namespaceSelector, { matchNames: [NS] });
      const port = container(objects).ports.find((p: Obj) => p.name === "metrics");
      assert.equal(port.containerPort, 9100);
    });

    it("serviceAccount.create false binds the named service account", () => {
      const objects = template({ serviceAccount: { create: false, name: "mine" } });
      assert.equal(deployment(objects).spec.template.spec.serviceAccountName, "mine");
      const crb = find(objects, "ClusterRoleBinding", "hpa-metrics-adapter");
      assert.deepEqual(crb.subjects, [{ kind: "ServiceAccount", name: "mine", namespace: NS }]);
    });

    it("delegation lets the delegates accept the service account for both metrics groups, no more", () => {
      const objects = template({ delegation: { externalMetrics: KEDA } }, {
        release: "metrics",
        namespace: "monitoring",
      });
      const full = "metrics-hpa-metrics-adapter";
      const role = find(objects, "ClusterRole", `${full}:delegation`);
      assert.deepEqual(role.rules, [{
        apiGroups: ["custom.metrics.k8s.io", "external.metrics.k8s.io"],
        resources: ["*"],
        verbs: ["get", "list"],
      }]);
      const binding = find(objects, "ClusterRoleBinding", `${full}:delegation`);
      assert.deepEqual(binding.roleRef, {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: `${full}:delegation`,
      });
      assert.deepEqual(binding.subjects, [{
        kind: "ServiceAccount",
        name: full,
        namespace: "monitoring",
      }]);
      assert.equal(role.metadata.labels["app.kubernetes.io/instance"], "metrics");
      // the URL alone mounts nothing: the token is the service account's own
      const pod = deployment(objects, full).spec.template.spec;
      assert.deepEqual(pod.volumes.map((v: Obj) => v.name), ["certs"]);
      assert.deepEqual(pod.containers[0].volumeMounts.map((m: Obj) => m.name), ["certs"]);
    });

    it("delegation mounts each Secret as a folder under its own path", () => {
      const caAndCert = deployment(template({
        delegation: {
          customMetrics: PROMETHEUS_ADAPTER,
          caSecret: { name: "pa-ca", key: "bundle.pem" },
          clientCertSecret: { name: "adapter-client" },
        },
      })).spec.template.spec;
      assert.deepEqual(caAndCert.volumes.slice(1), [
        {
          name: "delegate-ca",
          secret: { secretName: "pa-ca", items: [{ key: "bundle.pem", path: "bundle.pem" }] },
        },
        {
          name: "delegate-client",
          secret: {
            secretName: "adapter-client",
            items: [{ key: "tls.crt", path: "tls.crt" }, { key: "tls.key", path: "tls.key" }],
          },
        },
      ]);
      assert.deepEqual(caAndCert.containers[0].volumeMounts.slice(1), [
        { name: "delegate-ca", mountPath: "/etc/hpa-metrics-adapter/delegate-ca", readOnly: true },
        {
          name: "delegate-client",
          mountPath: "/etc/hpa-metrics-adapter/delegate-client",
          readOnly: true,
        },
      ]);
      // the keys' defaults: ca.crt and token
      const defaults = template({
        delegation: {
          externalMetrics: KEDA,
          caSecret: { name: "keda-ca" },
          tokenSecret: { name: "keda-token" },
        },
      });
      const pod = deployment(defaults).spec.template.spec;
      assert.deepEqual(pod.volumes.slice(1), [
        {
          name: "delegate-ca",
          secret: { secretName: "keda-ca", items: [{ key: "ca.crt", path: "ca.crt" }] },
        },
        {
          name: "delegate-token",
          secret: { secretName: "keda-token", items: [{ key: "token", path: "token" }] },
        },
      ]);
      assert.deepEqual(pod.containers[0].volumeMounts.slice(1), [
        { name: "delegate-ca", mountPath: "/etc/hpa-metrics-adapter/delegate-ca", readOnly: true },
        {
          name: "delegate-token",
          mountPath: "/etc/hpa-metrics-adapter/delegate-token",
          readOnly: true,
        },
      ]);
      const flags = serveFlags(defaults);
      assert.equal(flags["delegate-ca-file"], "/etc/hpa-metrics-adapter/delegate-ca/ca.crt");
      assert.equal(flags["delegate-token-file"], "/etc/hpa-metrics-adapter/delegate-token/token");
    });
  });

  describe("sharding", () => {
    it("lets the release's service account use its Leases and post to its peers, nothing more", () => {
      const objects = template({ certManager: { enabled: true }, sharding: { enabled: true } }, {
        release: "metrics",
        namespace: "monitoring",
      });
      const full = "metrics-hpa-metrics-adapter";
      const subjects = [{ kind: "ServiceAccount", name: full, namespace: "monitoring" }];
      const role = find(objects, "Role", `${full}:sharding`);
      assert.equal(role.metadata.namespace, "monitoring");
      assert.deepEqual(role.rules, [{
        apiGroups: ["coordination.k8s.io"],
        resources: ["leases"],
        verbs: ["get", "list", "create", "patch", "delete"],
      }]);
      const rb = find(objects, "RoleBinding", `${full}:sharding`);
      assert.equal(rb.metadata.namespace, "monitoring");
      assert.deepEqual(rb.roleRef, {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "Role",
        name: `${full}:sharding`,
      });
      assert.deepEqual(rb.subjects, subjects);
      assert.deepEqual(find(objects, "ClusterRole", `${full}:shard-peer`).rules, [{
        nonResourceURLs: ["/shard/v1/samples"],
        verbs: ["post"],
      }]);
      const crb = find(objects, "ClusterRoleBinding", `${full}:shard-peer`);
      assert.deepEqual(crb.roleRef, {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: `${full}:shard-peer`,
      });
      assert.deepEqual(crb.subjects, subjects);
    });

    it("verifies the peers against the release's Service name in its certificate, with the mounted ca.crt", () => {
      const objects = template({ certManager: { enabled: true }, sharding: { enabled: true } }, {
        release: "metrics",
        namespace: "monitoring",
      });
      const full = "metrics-hpa-metrics-adapter";
      const flags = serveFlags(objects, full);
      assert.equal(flags["shard-peer-server-name"], `${full}.monitoring.svc`);
      const cert = find(objects, "Certificate", `${full}-tls`);
      assert.ok(cert.spec.dnsNames.includes(flags["shard-peer-server-name"]));
      const pod = deployment(objects, full).spec.template.spec;
      const mount = pod.containers[0].volumeMounts.find((m: Obj) => m.name === "tls");
      assert.equal(flags["shard-peer-ca-file"], `${mount.mountPath}/ca.crt`);
      assert.deepEqual(pod.volumes.find((v: Obj) => v.name === "tls").secret, {
        secretName: cert.spec.secretName,
      });
      // --shard-advertise-address's default, https://$POD_IP:<secure port>
      assert.equal(flags["shard-advertise-address"], null);
      assert.deepEqual(pod.containers[0].env, [
        { name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
        { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
        { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
      ]);
      // the chart keeps `replicas`; the component's 3 is a value like any other here
      assert.equal(deployment(objects, full).spec.replicas, 2);
    });
  });

  describe("tls from your certificate", () => {
    const ca = createCertificate({ commonName: "adapter-ca", isCa: true });
    const serving = createCertificate({
      commonName: `hpa-metrics-adapter.${NS}.svc`,
      issuer: ca,
      hosts: [`hpa-metrics-adapter.${NS}.svc`],
    });
    const b64 = (s: string): string => Buffer.from(s).toString("base64");

    it("makes the Secret from tls.certificate and tls.key, mounts it, and sets every caBundle to tls.ca", () => {
      const objects = template({
        tls: { enable: true, ca: ca.cert, certificate: serving.cert, key: serving.key },
      });
      const secret = find(objects, "Secret", "hpa-metrics-adapter-tls");
      assert.equal(secret.type, "kubernetes.io/tls");
      assert.deepEqual(secret.data, {
        "tls.crt": b64(serving.cert),
        "tls.key": b64(serving.key),
        "ca.crt": b64(ca.cert),
      });
      const pod = deployment(objects).spec.template.spec;
      assert.deepEqual(pod.volumes.find((v: Obj) => v.name === "tls").secret, {
        secretName: "hpa-metrics-adapter-tls",
      });
      const flags = serveFlags(objects);
      assert.equal(flags["tls-cert-file"], "/etc/hpa-metrics-adapter/tls/tls.crt");
      assert.equal(flags["tls-private-key-file"], "/etc/hpa-metrics-adapter/tls/tls.key");
      const services = objects.filter((o) => o.kind === "APIService");
      assert.equal(services.length, 3);
      for (const s of services) {
        assert.equal(s.spec.insecureSkipTLSVerify, false);
        assert.equal(Buffer.from(s.spec.caBundle, "base64").toString("utf8"), ca.cert);
        assert.equal(s.metadata.annotations, undefined);
      }
    });

    it("mounts an existing Secret named by tls.secretName and makes none", () => {
      const objects = template({ tls: { enable: true, ca: ca.cert, secretName: "my-cert" } });
      assert.equal(objects.filter((o) => o.kind === "Secret").length, 0);
      assert.deepEqual(
        deployment(objects).spec.template.spec.volumes.find((v: Obj) => v.name === "tls").secret,
        { secretName: "my-cert" },
      );
      const s = find(objects, "APIService", "v1beta1.external.metrics.k8s.io");
      assert.equal(Buffer.from(s.spec.caBundle, "base64").toString("utf8"), ca.cert);
    });

    it("equals deploy/overlays/tls with the same files, but for the Secret's name", () => {
      const dir = mkdtempSync(join(tmpdir(), "hpa-helm-tls-"));
      try {
        cpSync(DEPLOY, join(dir, "deploy"), { recursive: true });
        const overlay = join(dir, "deploy", "overlays", "tls");
        writeFileSync(join(overlay, "ca.crt"), ca.cert);
        writeFileSync(join(overlay, "tls.crt"), serving.cert);
        writeFileSync(join(overlay, "tls.key"), serving.key);
        const kustomized = kustomize(overlay).filter((o) => o.kind !== "Namespace");
        // secretGenerator names the Secret with a hash of its data; the chart names it FULLNAME-tls
        const generated = kustomized.find((o) => o.kind === "Secret") as Obj;
        assert.match(generated.metadata.name, /^hpa-metrics-adapter-tls-[a-z0-9]{10}$/);
        const renamed = generated.metadata.name;
        const adjust = (o: Obj): Obj => {
          if (o.kind === "Secret") {
            return { ...o, metadata: { name: "hpa-metrics-adapter-tls", namespace: NS } };
          }
          if (o.kind !== "Deployment") return o;
          const d = structuredClone(o);
          for (const v of d.spec.template.spec.volumes) {
            if (v.secret?.secretName === renamed) v.secret.secretName = "hpa-metrics-adapter-tls";
          }
          return d;
        };
        const chart = template(
          { tls: { enable: true, ca: ca.cert, certificate: serving.cert, key: serving.key } },
          { includeCrds: true },
        );
        assertSameObjects(chart.map(adjust), kustomized.map(adjust));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe("keda.installCRDs", () => {
    let objects: Obj[] = [];
    before(() => {
      objects = template({ keda: { installCRDs: true } });
    });

    it("ships files/keda-crds byte for byte as deploy/crds/keda", () => {
      for (const file of KEDA_CRD_FILES) {
        assert.equal(
          readFileSync(join(CHART, "files", "keda-crds", file), "utf8"),
          readFileSync(join(DEPLOY, "crds", "keda", file), "utf8"),
          file,
        );
      }
    });

    it("renders deploy/crds/keda's CRDs with the release's labels, kept by Helm on uninstall", () => {
      for (const file of KEDA_CRD_FILES) {
        const want = load(readFileSync(join(DEPLOY, "crds", "keda", file), "utf8")) as Obj;
        const got = structuredClone(find(objects, "CustomResourceDefinition", want.metadata.name));
        assert.deepEqual(got.metadata.annotations, { "helm.sh/resource-policy": "keep" }, file);
        assert.deepEqual(got.metadata.labels, {
          "app.kubernetes.io/name": "hpa-metrics-adapter",
          "app.kubernetes.io/instance": "hpa-metrics-adapter",
          "app.kubernetes.io/version": VERSION,
          "app.kubernetes.io/managed-by": "Helm",
          "helm.sh/chart": `hpa-metrics-adapter-${VERSION}`,
        }, file);
        delete got.metadata.annotations;
        delete got.metadata.labels;
        assert.deepEqual(got, want, file);
      }
    });

    it("renders none by default", () => {
      assert.deepEqual(ids(template()).filter((x) => x.endsWith(".keda.sh")), []);
    });

    it("equals deploy/components/keda-crds on the base, but for the labels and keep", () => {
      const dir = mkdtempSync(join(tmpdir(), "hpa-helm-keda-"));
      try {
        cpSync(DEPLOY, join(dir, "deploy"), { recursive: true });
        const mine = join(dir, "deploy", "mine");
        mkdirSync(mine);
        writeFileSync(
          join(mine, "kustomization.yaml"),
          [
            "apiVersion: kustomize.config.k8s.io/v1beta1",
            "kind: Kustomization",
            "resources: [../base]",
            "components: [../components/keda-crds]",
            "",
          ].join("\n"),
        );
        const kustomized = kustomize(mine).filter((o) => o.kind !== "Namespace");
        const adjust = (o: Obj): Obj =>
          o.kind === "CustomResourceDefinition" && o.spec.group === "keda.sh"
            ? { ...o, metadata: { name: o.metadata.name } }
            : o;
        assertSameObjects(
          template({ keda: { installCRDs: true } }, { includeCrds: true }).map(adjust),
          kustomized,
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe("the same objects as the kustomize components", () => {
    const cases: [string, Obj, string, (o: Obj) => Obj][] = [
      [
        "prometheus",
        { prometheus: { url: PROMETHEUS, queryTimeout: "10s" } },
        "prometheus",
        (o) => o,
      ],
      [
        "sqs-irsa",
        {
          aws: {
            enable: true,
            region: "eu-central-1",
            roleArn: "arn:aws:iam::111122223333:role/hpa-metrics-adapter",
          },
        },
        "sqs-irsa",
        (o) => o,
      ],
      [
        "replica-guard",
        { prometheus: { url: PROMETHEUS, queryTimeout: "10s" }, replicaGuard: { enabled: true } },
        "replica-guard",
        (o) => o,
      ],
      ["knative", { knative: { enabled: true } }, "knative", (o) => o],
      ["keda", { keda: { scaledObjects: true } }, "keda", (o) => o],
      [
        "delegation",
        {
          delegation: {
            externalMetrics: KEDA,
            customMetrics: PROMETHEUS_ADAPTER,
            insecureSkipTLSVerify: true,
          },
        },
        "delegation",
        (o) => o,
      ],
      [
        "cert-manager",
        { certManager: { enabled: true } },
        "cert-manager",
        // the component's cert-manager objects carry no labels; the chart's carry its own
        (o) =>
          o.apiVersion === "cert-manager.io/v1"
            ? { ...o, metadata: { ...o.metadata, labels: undefined } }
            : o,
      ],
    ];
    cases.push([
      "admission-webhook",
      { certManager: { enabled: true }, admissionWebhook: { enabled: true } },
      "admission-webhook",
      (o) =>
        o.apiVersion === "cert-manager.io/v1"
          ? { ...o, metadata: { ...o.metadata, labels: undefined } }
          : o,
    ]);
    cases.push([
      "resource-metrics",
      {
        prometheus: { url: PROMETHEUS, queryTimeout: "10s" },
        prometheusAdapter: {
          config: (load(
            readFileSync(join(DEPLOY, "components", "resource-metrics", "config.yaml"), "utf8"),
          ) as Obj).data["config.yaml"],
          resourceMetrics: true,
        },
      },
      "resource-metrics",
      (o) => o,
    ]);
    cases.push([
      "sharding",
      { replicas: 3, certManager: { enabled: true }, sharding: { enabled: true } },
      "sharding",
      (o) =>
        o.apiVersion === "cert-manager.io/v1"
          ? { ...o, metadata: { ...o.metadata, labels: undefined } }
          : o,
    ]);
    for (const [name, values, overlay, adjust] of cases) {
      it(`${name}: equals deploy/overlays/${overlay}`, () => {
        const kustomized = kustomize(join(DEPLOY, "overlays", overlay))
          .filter((o) => o.kind !== "Namespace").map(adjust);
        assertSameObjects(template(values, { includeCrds: true }).map(adjust), kustomized);
      });
    }

    it("resource-metrics: refuses prometheusAdapter.resourceMetrics without a config", () => {
      assert.match(
        templateFails({ prometheusAdapter: { resourceMetrics: true } }),
        /prometheusAdapter\.resourceMetrics needs prometheusAdapter\.config/,
      );
    });

    it("no-scaling-schedules: equals the overlay when installed with --skip-crds", () => {
      const kustomized = kustomize(join(DEPLOY, "overlays", "no-scaling-schedules"))
        .filter((o) => o.kind !== "Namespace");
      assertSameObjects(template({ scalingSchedules: { enabled: false } }), kustomized);
    });
  });

  describe("the admission webhook", () => {
    it("checks annotated workloads too with knative.enabled, and denies with denyInvalid", () => {
      const objects = template({
        certManager: { enabled: true },
        knative: { enabled: true },
        admissionWebhook: { enabled: true, denyInvalid: true },
      });
      const hook = objects.find((o) => o.kind === "ValidatingWebhookConfiguration") as Obj;
      assert.deepEqual(
        hook.webhooks.map((w: Obj) => [w.clientConfig.service.path, w.rules[0].resources]),
        [
          ["/validate/horizontalpodautoscalers", ["horizontalpodautoscalers"]],
          ["/validate/scaledobjects", ["scaledobjects"]],
          ["/validate/podautoscalers", ["podautoscalers"]],
          ["/validate/workloads", ["deployments", "statefulsets"]],
        ],
      );
      const args =
        (objects.find((o) => o.kind === "Deployment") as Obj).spec.template.spec.containers[0]
          .args;
      assert.deepEqual(args.slice(-2), ["--admission-webhook", "--admission-deny-invalid"]);
    });

    it("writes tls.ca as every webhook's caBundle with tls.enable", () => {
      const objects = template({
        tls: { enable: true, secretName: "my-cert", ca: "-----BEGIN CERTIFICATE-----" },
        admissionWebhook: { enabled: true },
      });
      const hook = objects.find((o) => o.kind === "ValidatingWebhookConfiguration") as Obj;
      assert.equal(hook.metadata.annotations, undefined);
      for (const w of hook.webhooks) {
        assert.equal(w.clientConfig.caBundle, btoa("-----BEGIN CERTIFICATE-----"));
      }
    });
  });

  describe("every feature on", () => {
    let objects: Obj[] = [];
    before(() => {
      objects = template(ALL_FEATURES);
    });

    it("renders the default objects plus each feature's", () => {
      assert.deepEqual(
        ids(objects),
        [
          ...DEFAULT_IDS,
          "Certificate hpa-metrics-adapter/hpa-metrics-adapter-ca",
          "Certificate hpa-metrics-adapter/hpa-metrics-adapter-tls",
          "ClusterRole hpa-metrics-adapter:delegation",
          "ClusterRole hpa-metrics-adapter:keda",
          "ClusterRole hpa-metrics-adapter:knative",
          "ClusterRole hpa-metrics-adapter:replica-guard",
          "ClusterRole hpa-metrics-adapter:shard-peer",
          "ClusterRoleBinding hpa-metrics-adapter:delegation",
          "ClusterRoleBinding hpa-metrics-adapter:keda",
          "ClusterRoleBinding hpa-metrics-adapter:knative",
          "ClusterRoleBinding hpa-metrics-adapter:replica-guard",
          "ClusterRoleBinding hpa-metrics-adapter:shard-peer",
          "Issuer hpa-metrics-adapter/hpa-metrics-adapter-ca",
          "Issuer hpa-metrics-adapter/hpa-metrics-adapter-selfsigned",
          "Role hpa-metrics-adapter/hpa-metrics-adapter:sharding",
          "RoleBinding hpa-metrics-adapter/hpa-metrics-adapter:sharding",
          "Service hpa-metrics-adapter/hpa-metrics-adapter-metrics",
          "ServiceMonitor hpa-metrics-adapter/hpa-metrics-adapter",
          ...KEDA_CRD_IDS,
        ].sort(),
      );
    });

    it("passes exactly these args, each a flag of serve", () => {
      assert.deepEqual(container(objects).args, [
        "--secure-port=6443",
        "--cert-dir=/tmp/certs",
        "--metrics-address=:9100",
        "--leader-elect=true",
        "--leader-elect-resource-namespace=$(POD_NAMESPACE)",
        "--scaling-schedule",
        "--v=2",
        "--status-page=false",
        `--prometheus-server=${PROMETHEUS}`,
        "--prometheus-query-timeout=10s",
        "--prometheus-server-token-file=/etc/hpa-metrics-adapter/prometheus/token",
        "--additional-prometheus-server=thanos=http://thanos-query.monitoring.svc:9090",
        "--additional-prometheus-server-token-file=thanos=/etc/hpa-metrics-adapter/prometheus-0/token",
        "--additional-prometheus-server=longterm=http://victoria.monitoring.svc:8428",
        "--aws-external-metrics",
        "--aws-region=eu-central-1,eu-west-1",
        "--tls-cert-file=/etc/hpa-metrics-adapter/tls/tls.crt",
        "--tls-private-key-file=/etc/hpa-metrics-adapter/tls/tls.key",
        "--estafette-hpa-scaler",
        "--estafette-hpa-scaler-interval=30s",
        `--estafette-prometheus-server-url=${PROMETHEUS}`,
        "--knative-autoscaler",
        `--knative-prometheus-address=${PROMETHEUS}`,
        "--knative-cluster-trigger-authentication-namespace=keda-system",
        "--keda-scaled-objects",
        "--keda-scaled-object-selector=autoscaler=hpa-metrics-adapter",
        "--keda-cluster-object-namespace=keda-system",
        `--delegate-external-metrics=${KEDA}`,
        `--delegate-custom-metrics=${PROMETHEUS_ADAPTER}`,
        "--delegate-ca-file=/etc/hpa-metrics-adapter/delegate-ca/ca.crt",
        "--delegate-client-cert-file=/etc/hpa-metrics-adapter/delegate-client/tls.crt",
        "--delegate-client-key-file=/etc/hpa-metrics-adapter/delegate-client/tls.key",
        "--delegate-discovery-interval=1m",
        "--shard-collection",
        "--shard-peer-ca-file=/etc/hpa-metrics-adapter/tls/ca.crt",
        "--shard-peer-server-name=hpa-metrics-adapter.hpa-metrics-adapter.svc",
        "--shard-lease-duration=30s",
        "--shard-retry-period=5s",
        "--default-collection-interval=30s",
      ]);
      // serve's own reading of the Prometheus flags: the servers and their token files pair up
      const prometheus = prometheusOptionsFromFlags(serveFlags(objects));
      assert.deepEqual(prometheus.server, {
        url: PROMETHEUS,
        tokenFile: "/etc/hpa-metrics-adapter/prometheus/token",
      });
      assert.deepEqual(prometheus.additionalServers, {
        thanos: {
          url: "http://thanos-query.monitoring.svc:9090",
          tokenFile: "/etc/hpa-metrics-adapter/prometheus-0/token",
        },
        longterm: { url: "http://victoria.monitoring.svc:8428", tokenFile: null },
      });
      // and of the delegation flags: both URLs are delegates serve accepts
      assert.deepEqual(delegateUrls(serveFlags(objects)), {
        external: KEDA,
        custom: PROMETHEUS_ADAPTER,
      });
    });

    it("mounts the certificate, each token Secret and the delegation Secrets", () => {
      const pod = deployment(objects).spec.template.spec;
      assert.deepEqual(pod.volumes.map((v: Obj) => [v.name, v.secret?.secretName ?? null]), [
        ["certs", null],
        ["tls", "hpa-metrics-adapter-tls"],
        ["prometheus-token", "prometheus-token"],
        ["prometheus-token-0", "thanos-token"],
        ["delegate-ca", "delegates-ca"],
        ["delegate-client", "adapter-client"],
      ]);
      assert.deepEqual(pod.containers[0].volumeMounts.map((m: Obj) => m.mountPath), [
        "/tmp/certs",
        "/etc/hpa-metrics-adapter/tls",
        "/etc/hpa-metrics-adapter/prometheus",
        "/etc/hpa-metrics-adapter/prometheus-0",
        "/etc/hpa-metrics-adapter/delegate-ca",
        "/etc/hpa-metrics-adapter/delegate-client",
      ]);
      assert.deepEqual(pod.containers[0].env.slice(2), [
        { name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
        { name: "AWS_REGION", value: "eu-central-1" },
        { name: "PROMETHEUS_SERVER_URL", value: PROMETHEUS },
      ]);
      assert.equal(deployment(objects).spec.replicas, 3);
    });
  });

  describe("values.schema.json", () => {
    const rejected: [string, Obj, string][] = [
      [
        "a misspelt top-level value",
        { replicass: 3 },
        "- at '': additional properties 'replicass' not allowed",
      ],
      [
        "a misspelt nested value",
        { prometheus: { urll: PROMETHEUS } },
        "- at '/prometheus': additional properties 'urll' not allowed",
      ],
      [
        "tls.enabled for tls.enable",
        { tls: { enabled: true } },
        "- at '/tls': additional properties 'enabled' not allowed",
      ],
      [
        "a misspelt key of an additional server",
        { prometheus: { additionalServers: [{ alias: "a", url: "http://a", tokensecret: {} }] } },
        "- at '/prometheus/additionalServers/0': additional properties 'tokensecret' not allowed",
      ],
      [
        "a Prometheus URL without scheme",
        { prometheus: { url: "prometheus:9090" } },
        "- at '/prometheus/url': 'prometheus:9090' does not match pattern",
      ],
      [
        "a misspelt delegation value",
        { delegation: { externalMetric: KEDA } },
        "- at '/delegation': additional properties 'externalMetric' not allowed",
      ],
      [
        "a misspelt key of a delegation Secret",
        { delegation: { externalMetrics: KEDA, caSecret: { secretName: "keda-ca" } } },
        "- at '/delegation/caSecret': additional properties 'secretName' not allowed",
      ],
      [
        "a delegate URL that is not https",
        { delegation: { externalMetrics: "http://keda-operator-metrics-apiserver.keda.svc" } },
        "- at '/delegation/externalMetrics': 'http://keda-operator-metrics-apiserver.keda.svc' does not match pattern",
      ],
      [
        "sharding.enable for sharding.enabled",
        { sharding: { enable: true } },
        "- at '/sharding': additional properties 'enable' not allowed",
      ],
      [
        "a shard lease duration without unit",
        { sharding: { enabled: true, leaseDuration: "15" } },
        "- at '/sharding/leaseDuration': '15' does not match pattern",
      ],
      [
        "keda.installCrds for keda.installCRDs",
        { keda: { installCrds: true } },
        "- at '/keda': additional properties 'installCrds' not allowed",
      ],
      ["replicas 0", { replicas: 0 }, "- at '/replicas': minimum: got 0, want 1"],
      [
        "a string for a boolean",
        { aws: { enable: "yes" } },
        "- at '/aws/enable': got string, want boolean",
      ],
    ];
    for (const [name, values, fragment] of rejected) {
      it(`rejects ${name}`, () => {
        const out = templateFails(values);
        assert.ok(
          out.includes("values don't meet the specifications of the schema(s)"),
          out,
        );
        assert.ok(out.includes(fragment), `want "${fragment}" in:\n${out}`);
      });
    }

    it("has additionalProperties false on every object it describes", () => {
      const schema = JSON.parse(readFileSync(join(CHART, "values.schema.json"), "utf8"));
      const open: string[] = [];
      const isObject = (node: Obj): boolean =>
        node.type === "object" || (Array.isArray(node.type) && node.type.includes("object"));
      const walk = (node: Obj, path: string): void => {
        if (isObject(node) && node.properties) {
          if (node.additionalProperties !== false) open.push(path || "/");
          for (const [k, v] of Object.entries(node.properties)) walk(v as Obj, `${path}/${k}`);
        }
        if (node.items) walk(node.items, `${path}/items`);
      };
      walk(schema, "");
      assert.deepEqual(open, []);
      // every value in values.yaml is described
      const values = load(readFileSync(join(CHART, "values.yaml"), "utf8")) as Obj;
      const undescribed: string[] = [];
      const check = (v: Obj, node: Obj, path: string): void => {
        for (const [k, x] of Object.entries(v)) {
          const child = node.properties?.[k];
          if (!child) {
            if (node.additionalProperties === false) undescribed.push(`${path}.${k}`);
            continue;
          }
          if (x && typeof x === "object" && !Array.isArray(x) && child.properties) {
            check(x, child, `${path}.${k}`);
          }
        }
      };
      check(values, schema, "");
      assert.deepEqual(undescribed, []);
    });
  });

  describe("checks the schema cannot make", () => {
    const failures: [string, Obj, string][] = [
      [
        "tls.enable without tls.ca",
        { tls: { enable: true, secretName: "x" } },
        "tls.ca is empty: tls.enable needs the PEM of the CA that becomes every APIService's caBundle",
      ],
      [
        "tls.enable without a certificate",
        { tls: { enable: true, ca: "-----BEGIN CERTIFICATE-----" } },
        "tls.enable needs tls.secretName (an existing Secret with tls.crt and tls.key) or both tls.certificate and tls.key",
      ],
      [
        "tls and certManager together",
        { tls: { enable: true }, certManager: { enabled: true } },
        "tls.enable and certManager.enabled are both true: choose one source of the serving certificate",
      ],
      [
        "aws.roleArn without aws.enable",
        { aws: { roleArn: "arn:aws:iam::111122223333:role/x" } },
        'aws.roleArn "arn:aws:iam::111122223333:role/x" is set but aws.enable is false: SQS metrics are off',
      ],
      [
        "aws.enable without a region",
        { aws: { enable: true } },
        "aws.region is empty: aws.enable needs at least one region",
      ],
      [
        "a repeated additional server alias",
        {
          prometheus: {
            additionalServers: [{ alias: "a", url: "http://a" }, { alias: "a", url: "http://b" }],
          },
        },
        'prometheus.additionalServers: alias "a" repeated',
      ],
      [
        "a token Secret without a server",
        { prometheus: { tokenSecret: { name: "t" } } },
        'prometheus.tokenSecret.name "t" is set but prometheus.url is empty',
      ],
      [
        "serviceAccount.create false without a name",
        { serviceAccount: { create: false } },
        "serviceAccount.name is required when serviceAccount.create is false",
      ],
      [
        "delegation.caSecret without its name",
        { delegation: { externalMetrics: KEDA, caSecret: { key: "bundle.pem" } } },
        "delegation.caSecret.name is empty: delegation.caSecret names an existing Secret in the release namespace (null: none)",
      ],
      [
        "delegation.clientCertSecret without its name",
        { delegation: { externalMetrics: KEDA, clientCertSecret: {} } },
        "delegation.clientCertSecret.name is empty: delegation.clientCertSecret names an existing Secret in the release namespace (null: none)",
      ],
      [
        "delegation.tokenSecret with an empty name",
        { delegation: { customMetrics: PROMETHEUS_ADAPTER, tokenSecret: { name: "" } } },
        "delegation.tokenSecret.name is empty: delegation.tokenSecret names an existing Secret in the release namespace (null: none)",
      ],
      [
        "delegation.caSecret with insecureSkipTLSVerify",
        {
          delegation: {
            externalMetrics: KEDA,
            caSecret: { name: "keda-ca" },
            insecureSkipTLSVerify: true,
          },
        },
        'delegation.caSecret "keda-ca" and delegation.insecureSkipTLSVerify are both set: verify the delegates with the CA or not at all',
      ],
      [
        "delegation.clientCertSecret with tokenSecret",
        {
          delegation: {
            externalMetrics: KEDA,
            clientCertSecret: { name: "adapter-client" },
            tokenSecret: { name: "keda-token" },
          },
        },
        'delegation.clientCertSecret "adapter-client" and delegation.tokenSecret "keda-token" are both set: the delegates get a client certificate or a token, not both',
      ],
      [
        "a delegation Secret without a delegate",
        { delegation: { caSecret: { name: "keda-ca" } } },
        'delegation.caSecret "keda-ca" is set but delegation.externalMetrics and delegation.customMetrics are empty',
      ],
      [
        "delegation.insecureSkipTLSVerify without a delegate",
        { delegation: { insecureSkipTLSVerify: true } },
        "delegation.insecureSkipTLSVerify is true but delegation.externalMetrics and delegation.customMetrics are empty",
      ],
      [
        "delegation.discoveryInterval without a delegate",
        { delegation: { discoveryInterval: "1m" } },
        'delegation.discoveryInterval "1m" is set but delegation.externalMetrics and delegation.customMetrics are empty',
      ],
      [
        "sharding.enabled without a verified serving certificate",
        { sharding: { enabled: true } },
        "sharding.enabled needs certManager.enabled or tls.enable: the replicas verify each other's serving certificates with its ca.crt",
      ],
      [
        "admissionWebhook.enabled without a verified serving certificate",
        { admissionWebhook: { enabled: true } },
        "admissionWebhook.enabled needs certManager.enabled or tls.enable: kube-apiserver verifies a webhook's certificate with its caBundle",
      ],
    ];
    for (const [name, values, message] of failures) {
      it(`fails the render on ${name}`, () => {
        const out = templateFails(values);
        assert.ok(out.includes(message), `want "${message}" in:\n${out}`);
      });
    }
  });
});
