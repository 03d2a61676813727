/**
 * The end-to-end harness: a real control plane (embedded etcd, kube-apiserver with the
 * aggregation layer, kube-controller-manager with the deployment, replicaset and HPA
 * controllers) built from the upstream Go modules, a network namespace that plays the pod
 * network, the kubelet stand-in, and the adapter registered through APIService objects.
 *
 *   node --import tsx tests/e2e/harness.ts up     # build if needed, start, wait for Available
 *   node --import tsx tests/e2e/harness.ts down   # stop what up started, remove the netns
 *   node --import tsx tests/e2e/harness.ts test   # up, the suite, down
 *
 * Network: only loopback and 10.213.0.0/24, which exists only on the veth pair between the
 * host and the namespace this harness creates (host side .1, namespace side .2 for the adapter,
 * .3 for Prometheus, .10-.99 for pods). The apiserver binds the host side; etcd and the
 * controller manager use loopback; the adapter, Prometheus, the kubelet stand-in and the pods'
 * endpoints live in the namespace, which has no default route. Nothing else is dialled.
 * Needs root (ip netns), Go (to build once; cached under ~/.cache/hpa-e2e/VERSION) and kubectl.
 * `test` runs control planes in turn: deploy/'s files applied with kubectl and the suite
 * (hpa_e2e_test.ts), then the Helm chart installed with `helm install` (helm built from its Go
 * module by tests/deploy/helm_tool.ts) and the chart's suite (helm_e2e_test.ts), then deploy/'s
 * files again with the adapter delegating external metrics to prometheus-adapter (built from
 * its Go module) and the delegation suite (delegation_e2e_test.ts), then three replicas sharing
 * the collection (shard_e2e_test.ts), then the admission webhook and explain through the service
 * proxy (admission_e2e_test.ts), then KEDA's ScaledObjects (keda_e2e_test.ts).
 * KEDA's CRDs (deploy/crds/keda) and Knative's PodAutoscaler and ServerlessService CRDs
 * (tests/e2e/knative_crds.ts) are installed
 * before the controller manager starts; no Knative controller runs.
 *
 * Environment: HPA_E2E_ADAPTER=stub runs a discovery-only HTTPS stub instead of the adapter;
 * HPA_E2E_ADAPTER_CMD replaces `node --import tsx src/main.ts` (e.g. `dist/hpa-metrics-adapter`);
 * HPA_E2E_ADAPTER_ARGS adds flags to `serve` after the harness's own (the last value of a flag
 * wins: `--estafette-hpa-scaler=false` turns the replica guard off,
 * `--estafette-hpa-scaler-interval=5s` slows it, `--knative-autoscaler=false` turns the Knative
 * reconciler off); HPA_E2E_MANIFESTS replaces the deploy/ files
 * applied; HPA_E2E_INSTALL=helm makes `up` install deploy/helm/hpa-metrics-adapter with helm
 * instead (and `test` run only that phase; =kustomize only the kustomize ones), HPA_E2E_SUITE=FILE
 * runs only the phase of that suite (e.g. tests/e2e/shard_e2e_test.ts); HPA_E2E_PROMETHEUS=0
 * skips Prometheus; HPA_E2E_KEEP=1 keeps everything after `test` (the first phase only)
 * or a failed `up` (and the suite's namespaces); HPA_E2E_HPA_SYNC_PERIOD sets the HPA
 * controller's sync period in seconds (the suite's predictions need the default 2; the bench
 * uses Kubernetes' 15); HPA_E2E_AUDIT_LOG=1 makes kube-apiserver write an audit log of the
 * adapter's requests ({@linkcode AUDIT_LOG}: Metadata level, one JSON event a line, nobody
 * else's requests); GO names the go binary.
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:https";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createCertificate } from "../../src/api/cert_issue.ts";
import type { CertificateAndKey } from "../../src/api/certs.ts";
import { parseDuration } from "../../src/core/duration.ts";
import { createKubeClient, kubeconfigText, loadKubeconfig } from "./kube_client.ts";
import { KNATIVE_CRD_NAMES, knativeCrds } from "./knative_crds.ts";
import { ensureHelm, runHelm } from "../deploy/helm_tool.ts";
import type { KubeClient, KubeCredentials } from "./kube_client.ts";

/** The repository root. */
export const ROOT: string = resolve(fileURLToPath(new URL("../..", import.meta.url)));
/** Where up keeps its state (certificates, kubeconfigs, pids, logs, etcd data). */
export const STATE_DIR: string = join(ROOT, ".e2e");

/** Fixed names and addresses of the e2e network and control plane. */
export const E2E = {
  netns: "hpa-e2e",
  hostLink: "hpae2e-host",
  nsLink: "hpae2e-ns",
  prefix: "10.213.0",
  hostIp: "10.213.0.1",
  adapterIp: "10.213.0.2",
  prometheusIp: "10.213.0.3",
  /** The addresses of the second and third adapter replicas (HPA_E2E_SHARD_REPLICAS=3). */
  adapterReplicaIps: ["10.213.0.4", "10.213.0.5"],
  prometheusPort: 9090,
  podPoolFirst: 10,
  podPoolLast: 99,
  serviceRange: "10.213.0.192/26",
  apiserverPort: 6443,
  adapterPort: 6443,
  adapterMetricsPort: 7979,
  etcdClient: "http://127.0.0.1:23791",
  etcdPeer: "http://127.0.0.1:23792",
  kcmPort: 10357,
  nodeName: "e2e-node",
  adapterNamespace: "hpa-metrics-adapter",
  adapterService: "hpa-metrics-adapter",
  adapterServiceAccount: "hpa-metrics-adapter",
} as const;

/** What up leaves for the suite in `.e2e/state.json`. */
export interface E2eState {
  kubeconfig: string;
  server: string;
  netns: string;
  adapterIp: string;
  adapterPort: number;
  adapterMetrics: string;
  adapter: "adapter" | "stub";
  /** How deploy/ was installed: its files with kubectl, or the chart with helm (HPA_E2E_INSTALL). */
  install: Install;
  /** The chart's release when install is "helm", else null. */
  helm: HelmRelease | null;
  /** The Prometheus server in the namespace and the folder of its file_sd targets, or null. */
  prometheus: { url: string; targetsDir: string } | null;
  manifests: string[];
  version: string;
  binDir: string;
  hpaSyncPeriodSeconds: number;
  downscaleStabilizationSeconds: number;
  tolerance: number;
  /**
   * The replica guard's pass interval in seconds (`--estafette-hpa-scaler-interval`, jittered
   * by up to 25%), or null when HPA_E2E_ADAPTER_ARGS turned the guard off (or the stub runs).
   */
  replicaGuardIntervalSeconds: number | null;
  /**
   * Whether the adapter runs the Knative reconciler of issue 23 (`--knative-autoscaler`, with
   * `--knative-prometheus-address` set to the harness's Prometheus when there is one); false
   * when HPA_E2E_ADAPTER_ARGS turned it off (or the stub runs).
   */
  knative: boolean;
  /** Whether the adapter serves ScaledObjects (`--keda-scaled-objects`, issue 47). */
  keda: boolean;
  /**
   * The adapter processes (`.e2e/pids` names) and their addresses: one, or three sharing the
   * collection (HPA_E2E_SHARD_REPLICAS=3, issue 29).
   */
  replicas: { name: string; ip: string }[];
}

/** How `up` installs deploy/ (HPA_E2E_INSTALL). */
export type Install = "kustomize" | "helm";

/** The release `up` installs with HPA_E2E_INSTALL=helm. */
export interface HelmRelease {
  release: string;
  namespace: string;
  /** The chart folder, relative to the repository root. */
  chart: string;
  /** The values file given to `helm install` (holds the adapter's serving key: 0600). */
  valuesFile: string;
}

/** HPA_E2E_INSTALL: "kustomize" (default) or "helm"; anything else is an error. */
export function installMode(): Install {
  const v = process.env.HPA_E2E_INSTALL ?? "kustomize";
  if (v !== "kustomize" && v !== "helm") {
    throw new Error(`invalid HPA_E2E_INSTALL "${v}": want kustomize or helm`);
  }
  return v;
}

/** The HPA controller settings the suite's predictions rely on. */
export const CONTROLLER = {
  syncPeriodSeconds: 2,
  downscaleStabilizationSeconds: 0,
  tolerance: 0.1,
};

/**
 * The replica guard (issue 22) in the adapter: on, with a pass every 2 s (1.5 to 2.5 s with the
 * jitter), so that the suite sees each of its steps within a couple of HPA syncs.
 */
export const REPLICA_GUARD = { intervalSeconds: 2 };

const APISERVICES = [
  { group: "custom.metrics.k8s.io", version: "v1beta1", versionPriority: 100 },
  { group: "custom.metrics.k8s.io", version: "v1beta2", versionPriority: 200 },
  { group: "external.metrics.k8s.io", version: "v1beta1", versionPriority: 100 },
];

function log(message: string): void {
  process.stderr.write(`[e2e ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Thrown inside a {@linkcode waitFor} check: give up at once instead of polling on. */
export class StopWaiting extends Error {
  override name = "StopWaiting";
}

/** Options of {@linkcode waitFor}. */
export interface WaitOptions {
  what: string;
  timeoutMs: number;
  intervalMs?: number;
}

/** Poll `check` until it returns a value other than undefined/false, or throw naming `what`. */
export async function waitFor<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  options: WaitOptions,
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let last = "";
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v as T;
    } catch (err) {
      if (err instanceof StopWaiting) throw err;
      last = (err as Error).message;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${options.timeoutMs} ms waiting for ${options.what}${
          last ? `: ${last}` : ""
        }`,
      );
    }
    await sleep(options.intervalMs ?? 250);
  }
}

// --- binaries -----------------------------------------------------------------------------------

const CONTROLPLANE_DIR = join(ROOT, "tests/e2e/controlplane");
const BINARIES = ["kube-apiserver", "kube-controller-manager", "etcd"];

/** The k8s.io/kubernetes version pinned by tests/e2e/controlplane/go.mod. */
export function kubernetesVersion(): string {
  const mod = readFileSync(join(CONTROLPLANE_DIR, "go.mod"), "utf8");
  const m = mod.match(/^\s*k8s\.io\/kubernetes\s+(v\S+)/m);
  if (!m) throw new Error(`no k8s.io/kubernetes requirement in ${CONTROLPLANE_DIR}/go.mod`);
  return m[1];
}

/** The cache folder of the built binaries, keyed by version. */
export function binaryDir(version: string): string {
  const cache = process.env.XDG_CACHE_HOME || join(process.env.HOME ?? "/root", ".cache");
  return join(cache, "hpa-e2e", version);
}

/** Build kube-apiserver, kube-controller-manager and etcd unless all are cached. */
export function ensureBinaries(version: string): string {
  const dir = binaryDir(version);
  if (BINARIES.every((b) => existsSync(join(dir, b)))) return dir;
  mkdirSync(dir, { recursive: true });
  log(`building ${BINARIES.join(", ")} ${version} into ${dir} (cold: tens of minutes)`);
  const started = Date.now();
  const go = process.env.GO ??
    (spawnSync("go", ["version"], { stdio: "ignore" }).status === 0
      ? "go"
      : "/usr/local/go/bin/go");
  const r = spawnSync(go, [
    "build",
    "-o",
    `${dir}/`,
    "k8s.io/kubernetes/cmd/kube-apiserver",
    "k8s.io/kubernetes/cmd/kube-controller-manager",
    "./etcd",
  ], { cwd: CONTROLPLANE_DIR, stdio: ["ignore", "inherit", "inherit"] });
  if (r.error) throw new Error(`cannot run "${go}" (install Go or set GO): ${r.error.message}`);
  if (r.status !== 0) throw new Error(`go build failed with exit code ${r.status ?? r.signal}`);
  log(`built in ${Math.round((Date.now() - started) / 1000)} s`);
  return dir;
}

// --- processes ----------------------------------------------------------------------------------

const PIDS_FILE = join(STATE_DIR, "pids");
const NETWORK_FILE = join(STATE_DIR, "network");
const LOG_DIR = join(STATE_DIR, "logs");

/** Field 22 of /proc/PID/stat (start time in clock ticks), or null when the PID is gone. */
function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // the command name (field 2) may hold spaces: split after its closing parenthesis
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
  } catch {
    return null;
  }
}

interface RecordedProcess {
  name: string;
  pid: number;
  start: string;
}

function recordedProcesses(): RecordedProcess[] {
  if (!existsSync(PIDS_FILE)) return [];
  return readFileSync(PIDS_FILE, "utf8").split("\n").filter(Boolean).map((line) => {
    const [name, pid, start] = line.split(" ");
    return { name, pid: Number(pid), start };
  });
}

/**
 * Whether a recorded process still runs: the same start time, and not a zombie. `harness.ts
 * test` starts the processes and then waits for the suite in spawnSync, so it reaps none of its
 * children until the suite ends: a replica a test stopped stays a zombie (state Z) meanwhile.
 */
function alive(p: RecordedProcess): boolean {
  return processStartTime(p.pid) === p.start && processState(p.pid) !== "Z";
}

/** The state letter of /proc/PID/stat (R, S, D, Z, ...), or null when there is no such process. */
function processState(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0] ?? null;
  } catch {
    return null;
  }
}

/** Options of {@linkcode startProcess}. */
interface StartOptions {
  /** Run inside the e2e network namespace. */
  netns?: boolean;
  env?: Record<string, string>;
}

/** Start a detached process logging to `.e2e/logs/NAME.log`; its PID goes to `.e2e/pids` at once. */
function startProcess(name: string, argv: string[], options: StartOptions = {}): number {
  mkdirSync(LOG_DIR, { recursive: true });
  const out = openSync(join(LOG_DIR, `${name}.log`), "a");
  // `ip netns exec` execs the command in place, so the PID is the command's own
  const full = options.netns ? ["ip", "netns", "exec", E2E.netns, ...argv] : argv;
  const child = spawn(full[0], full.slice(1), {
    cwd: ROOT,
    detached: true,
    stdio: ["ignore", out, out],
    env: { ...process.env, ...options.env },
  });
  if (child.pid === undefined) throw new Error(`cannot start ${name} (${full[0]})`);
  let start = processStartTime(child.pid);
  for (let i = 0; start === null && i < 20; i++) start = processStartTime(child.pid);
  appendFileSync(PIDS_FILE, `${name} ${child.pid} ${start}\n`);
  child.unref();
  return child.pid;
}

async function stopOne(p: RecordedProcess): Promise<void> {
  if (!alive(p)) return;
  log(`stopping ${p.name} (pid ${p.pid})`);
  try {
    process.kill(p.pid, "SIGTERM");
  } catch {
    return;
  }
  const deadline = Date.now() + 10_000;
  while (alive(p) && Date.now() < deadline) await sleep(100);
  if (alive(p)) {
    log(`${p.name} (pid ${p.pid}) ignored SIGTERM for 10 s, sending SIGKILL`);
    try {
      process.kill(p.pid, "SIGKILL");
    } catch {
      // gone meanwhile
    }
  }
}

async function stopRecorded(): Promise<void> {
  // everything that talks to the apiserver first (at once), then the apiserver, then etcd
  const procs = recordedProcesses();
  const late = ["kube-apiserver", "etcd"];
  await Promise.all(procs.filter((p) => !late.includes(p.name)).map(stopOne));
  for (const name of late) await Promise.all(procs.filter((p) => p.name === name).map(stopOne));
  rmSync(PIDS_FILE, { force: true });
}

// --- network ------------------------------------------------------------------------------------

function ip(args: string[]): void {
  execFileSync("ip", args, { stdio: ["ignore", "ignore", "pipe"] });
}

function netnsExists(): boolean {
  const out = execFileSync("ip", ["netns", "list"], { encoding: "utf8" });
  return out.split("\n").some((l) => l.split(" ")[0] === E2E.netns);
}

function linkExists(name: string): boolean {
  return spawnSync("ip", ["link", "show", name], { stdio: "ignore" }).status === 0;
}

/** Create the namespace and the veth pair, recording each in `.e2e/network` before creating it. */
function setupNetwork(): void {
  if (process.getuid?.() !== 0) {
    throw new Error(
      "the e2e harness needs root (ip netns add, veth pair); run it as root or in CI",
    );
  }
  if (netnsExists() || linkExists(E2E.hostLink)) {
    throw new Error(
      `network namespace "${E2E.netns}" or link "${E2E.hostLink}" exists but was not made by this harness (no ${NETWORK_FILE}); remove it by hand`,
    );
  }
  appendFileSync(NETWORK_FILE, `netns ${E2E.netns}\n`);
  ip(["netns", "add", E2E.netns]);
  appendFileSync(NETWORK_FILE, `link ${E2E.hostLink}\n`);
  ip(["link", "add", E2E.hostLink, "type", "veth", "peer", "name", E2E.nsLink]);
  ip(["link", "set", E2E.nsLink, "netns", E2E.netns]);
  ip(["addr", "add", `${E2E.hostIp}/24`, "dev", E2E.hostLink]);
  ip(["link", "set", E2E.hostLink, "up"]);
  // inside: loopback, the adapter's address and the pod pool; no default route, so nothing
  // outside 10.213.0.0/24 is reachable from the namespace
  const batch = [
    `link set lo up`,
    `addr add ${E2E.adapterIp}/24 dev ${E2E.nsLink}`,
    `addr add ${E2E.prometheusIp}/24 dev ${E2E.nsLink}`,
    ...E2E.adapterReplicaIps.map((ip) => `addr add ${ip}/24 dev ${E2E.nsLink}`),
  ];
  for (let i = E2E.podPoolFirst; i <= E2E.podPoolLast; i++) {
    batch.push(`addr add ${E2E.prefix}.${i}/24 dev ${E2E.nsLink}`);
  }
  batch.push(`link set ${E2E.nsLink} up`);
  execFileSync("ip", ["-n", E2E.netns, "-batch", "-"], { input: batch.join("\n") + "\n" });
}

function teardownNetwork(): void {
  if (!existsSync(NETWORK_FILE)) return;
  const lines = readFileSync(NETWORK_FILE, "utf8").split("\n").filter(Boolean).reverse();
  for (const line of lines) {
    const [what, name] = line.split(" ");
    if (what === "link" && name === E2E.hostLink && linkExists(name)) {
      log(`deleting link ${name}`);
      ip(["link", "del", name]); // deletes its peer in the namespace too
    }
    if (what === "netns" && name === E2E.netns && netnsExists()) {
      log(`deleting network namespace ${name}`);
      ip(["netns", "del", name]);
    }
  }
  rmSync(NETWORK_FILE, { force: true });
}

// --- certificates -------------------------------------------------------------------------------

interface Pki {
  ca: CertificateAndKey;
  frontProxyCa: CertificateAndKey;
  apiserver: CertificateAndKey;
  frontProxyClient: CertificateAndKey;
  admin: CertificateAndKey;
  controllerManager: CertificateAndKey;
  adapterServing: CertificateAndKey;
  serviceAccount: { key: string; pub: string };
}

const PKI_DIR = join(STATE_DIR, "pki");

function pkiFile(name: string): string {
  return join(PKI_DIR, name);
}

function createPki(): Pki {
  const ca = createCertificate({ commonName: "hpa-e2e-ca", isCa: true });
  const frontProxyCa = createCertificate({ commonName: "hpa-e2e-front-proxy-ca", isCa: true });
  const svc = `${E2E.adapterService}.${E2E.adapterNamespace}.svc`;
  const sa = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    publicKeyEncoding: { type: "spki", format: "pem" },
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
  });
  const pki: Pki = {
    ca,
    frontProxyCa,
    apiserver: createCertificate({
      commonName: "kube-apiserver",
      issuer: ca,
      extendedKeyUsages: ["serverAuth"],
      hosts: [
        E2E.hostIp,
        "127.0.0.1",
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
        "10.213.0.193",
      ],
    }),
    frontProxyClient: createCertificate({
      commonName: "front-proxy-client",
      issuer: frontProxyCa,
      extendedKeyUsages: ["clientAuth"],
    }),
    admin: createCertificate({
      commonName: "e2e-admin",
      organizations: ["system:masters"],
      issuer: ca,
      extendedKeyUsages: ["clientAuth"],
    }),
    controllerManager: createCertificate({
      commonName: "system:kube-controller-manager",
      issuer: ca,
      extendedKeyUsages: ["clientAuth"],
    }),
    adapterServing: createCertificate({
      commonName: svc,
      issuer: ca,
      extendedKeyUsages: ["serverAuth"],
      hosts: [svc, `${svc}.cluster.local`, E2E.adapterIp, ...E2E.adapterReplicaIps],
    }),
    serviceAccount: { key: sa.privateKey, pub: sa.publicKey },
  };
  mkdirSync(PKI_DIR, { recursive: true, mode: 0o700 });
  for (const [name, pair] of Object.entries(pki)) {
    if (name === "serviceAccount") continue;
    writeFileSync(pkiFile(`${name}.crt`), (pair as CertificateAndKey).cert);
    writeFileSync(pkiFile(`${name}.key`), (pair as CertificateAndKey).key, { mode: 0o600 });
  }
  writeFileSync(pkiFile("sa.key"), pki.serviceAccount.key, { mode: 0o600 });
  writeFileSync(pkiFile("sa.pub"), pki.serviceAccount.pub);
  return pki;
}

// --- the control plane --------------------------------------------------------------------------

const SERVER = `https://${E2E.hostIp}:${E2E.apiserverPort}`;
/** The admin kubeconfig the suite and kubectl use. */
export const KUBECONFIG: string = join(STATE_DIR, "kubeconfig");
const STATE_FILE = join(STATE_DIR, "state.json");

function startEtcd(bin: string): void {
  const dataDir = join(STATE_DIR, "etcd");
  rmSync(dataDir, { recursive: true, force: true });
  startProcess("etcd", [
    join(bin, "etcd"),
    `--data-dir=${dataDir}`,
    `--listen-client-url=${E2E.etcdClient}`,
    `--listen-peer-url=${E2E.etcdPeer}`,
  ]);
}

/**
 * Where kube-apiserver writes its audit log with HPA_E2E_AUDIT_LOG=1: the requests of the
 * adapter's service account, and the HPA controller's reads of the metrics APIs (how many it
 * made, and how many were answered), at Metadata level (verb, resource, user agent, status),
 * the ResponseStarted (watches) and ResponseComplete stages, one JSON event a line.
 */
export const AUDIT_LOG: string = join(STATE_DIR, "logs", "audit.log");

/** The user the HPA controller reads metrics as (kube-controller-manager's own credentials). */
export const HPA_CONTROLLER_USER = "system:serviceaccount:kube-system:horizontal-pod-autoscaler";

/** The apiserver flags of the audit log (HPA_E2E_AUDIT_LOG=1), after writing its policy. */
function auditFlags(): string[] {
  if (!process.env.HPA_E2E_AUDIT_LOG || process.env.HPA_E2E_AUDIT_LOG === "0") return [];
  const policy = join(STATE_DIR, "audit-policy.json");
  const user = `system:serviceaccount:${E2E.adapterNamespace}:${E2E.adapterServiceAccount}`;
  writeFileSync(
    policy,
    JSON.stringify({
      apiVersion: "audit.k8s.io/v1",
      kind: "Policy",
      omitStages: ["RequestReceived"],
      rules: [
        { level: "Metadata", users: [user] },
        {
          level: "Metadata",
          users: [HPA_CONTROLLER_USER],
          resources: [{ group: "custom.metrics.k8s.io" }, { group: "external.metrics.k8s.io" }],
        },
        { level: "None" },
      ],
    }) + "\n",
  );
  return [
    `--audit-policy-file=${policy}`,
    `--audit-log-path=${AUDIT_LOG}`,
    "--audit-log-format=json",
    "--audit-log-maxsize=1024",
  ];
}

function startApiserver(bin: string): void {
  startProcess("kube-apiserver", [
    join(bin, "kube-apiserver"),
    `--etcd-servers=${E2E.etcdClient}`,
    `--bind-address=${E2E.hostIp}`,
    `--advertise-address=${E2E.hostIp}`,
    `--secure-port=${E2E.apiserverPort}`,
    `--tls-cert-file=${pkiFile("apiserver.crt")}`,
    `--tls-private-key-file=${pkiFile("apiserver.key")}`,
    `--client-ca-file=${pkiFile("ca.crt")}`,
    `--service-cluster-ip-range=${E2E.serviceRange}`,
    `--service-account-issuer=https://kubernetes.default.svc.cluster.local`,
    `--service-account-key-file=${pkiFile("sa.pub")}`,
    `--service-account-signing-key-file=${pkiFile("sa.key")}`,
    "--authorization-mode=RBAC",
    `--requestheader-client-ca-file=${pkiFile("frontProxyCa.crt")}`,
    "--requestheader-allowed-names=front-proxy-client",
    "--requestheader-username-headers=X-Remote-User",
    "--requestheader-group-headers=X-Remote-Group",
    "--requestheader-extra-headers-prefix=X-Remote-Extra-",
    `--proxy-client-cert-file=${pkiFile("frontProxyClient.crt")}`,
    `--proxy-client-key-file=${pkiFile("frontProxyClient.key")}`,
    "--enable-aggregator-routing=true",
    `--cert-dir=${join(STATE_DIR, "apiserver-certs")}`,
    "--profiling=false",
    "--allow-privileged=false",
    "--v=1",
    ...auditFlags(),
  ]);
}

function writeKubeconfig(
  path: string,
  name: string,
  creds: Omit<KubeCredentials, "server" | "ca">,
  ca: string,
): void {
  writeFileSync(path, kubeconfigText({ name, credentials: { server: SERVER, ca, ...creds } }), {
    mode: 0o600,
  });
}

function startControllerManager(bin: string, pki: Pki): void {
  const kubeconfig = join(STATE_DIR, "kube-controller-manager.kubeconfig");
  writeKubeconfig(kubeconfig, "system:kube-controller-manager", pki.controllerManager, pki.ca.cert);
  startProcess("kube-controller-manager", [
    join(bin, "kube-controller-manager"),
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    `--bind-address=127.0.0.1`,
    `--secure-port=${E2E.kcmPort}`,
    `--cert-dir=${join(STATE_DIR, "kcm-certs")}`,
    "--leader-elect=false",
    "--use-service-account-credentials=true",
    `--root-ca-file=${pkiFile("ca.crt")}`,
    `--service-account-private-key-file=${pkiFile("sa.key")}`,
    "--controllers=deployment-controller,replicaset-controller,horizontal-pod-autoscaler-controller," +
    "garbage-collector-controller,serviceaccount-controller,namespace-controller",
    `--horizontal-pod-autoscaler-sync-period=${
      process.env.HPA_E2E_HPA_SYNC_PERIOD ?? CONTROLLER.syncPeriodSeconds
    }s`,
    `--horizontal-pod-autoscaler-downscale-stabilization=${CONTROLLER.downscaleStabilizationSeconds}s`,
    `--horizontal-pod-autoscaler-tolerance=${CONTROLLER.tolerance}`,
    "--profiling=false",
    "--v=2",
  ]);
}

/** `kubectl apply` (server-side) with the admin kubeconfig. */
export function kubectl(args: string[], input?: string): string {
  const r = spawnSync("/usr/bin/kubectl", [`--kubeconfig=${KUBECONFIG}`, ...args], {
    input,
    encoding: "utf8",
  });
  if (r.status !== 0) {
    throw new Error(`kubectl ${args.join(" ")} failed: ${(r.stderr || r.stdout).trim()}`);
  }
  return r.stdout;
}

/** deploy/'s manifests the harness applies as they are (HPA_E2E_MANIFESTS replaces the list). */
function deployManifests(): string[] {
  if (process.env.HPA_E2E_MANIFESTS) return process.env.HPA_E2E_MANIFESTS.split(",");
  return [
    "deploy/crds/scalingschedules.yaml",
    "deploy/crds/clusterscalingschedules.yaml",
    "deploy/base/namespace.yaml",
    "deploy/base/rbac.yaml",
    "deploy/base/service.yaml",
    "deploy/base/apiservices.yaml",
    // the replica guard's RBAC (patch on HPAs), as deploy/overlays/replica-guard installs it
    "deploy/components/replica-guard/rbac.yaml",
    // the Knative reconciler's RBAC (PAs, their status, SKSs, HPA create/update/delete), as
    // deploy/components/knative installs it
    "deploy/components/knative/rbac.yaml",
    // the ScaledObject controller's RBAC (ScaledObjects, their status, HPA writes, trigger
    // secrets), as deploy/components/keda installs it
    "deploy/components/keda/rbac.yaml",
    // the shards' RBAC (their Leases, the push between replicas), as deploy/components/sharding
    // installs it
    ...(shardReplicas() > 1 ? ["deploy/components/sharding/rbac.yaml"] : []),
  ];
}

/**
 * Apply deploy/'s CRDs, namespace, RBAC, Service and APIServices, then what a cluster would
 * provide: the Service's endpoints (the adapter's address in the namespace; no endpoints
 * controller or kube-proxy runs) and, as deploy/components/tls does, a verified caBundle in
 * place of insecureSkipTLSVerify.
 */
function applyManifests(pki: Pki): string[] {
  const manifests = deployManifests();
  kubectl(["apply", "--server-side", ...manifests.flatMap((f) => ["-f", join(ROOT, f)])]);
  applyEndpoints();
  const caBundle = Buffer.from(pki.ca.cert).toString("base64");
  for (const s of APISERVICES) {
    kubectl([
      "patch",
      "apiservice",
      `${s.version}.${s.group}`,
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { insecureSkipTLSVerify: false, caBundle } }),
    ]);
  }
  return manifests;
}

/** The release HPA_E2E_INSTALL=helm installs. */
export const HELM_RELEASE: HelmRelease = {
  release: "hpa-metrics-adapter",
  namespace: E2E.adapterNamespace,
  chart: "deploy/helm/hpa-metrics-adapter",
  valuesFile: join(STATE_DIR, "helm-values.json"),
};

/**
 * `helm install` the chart into the release namespace (the release name gives the kustomize
 * base's object names), with the values a cluster like this one needs: the adapter process's
 * serving certificate and the CA that verifies it (the chart's tls values: its Secret and every
 * APIService's caBundle), and the RBAC of the replica guard and the Knative reconciler the adapter
 * runs. Then the Service's endpoints, as for deploy/'s files.
 */
function installChart(pki: Pki): string[] {
  const values = {
    tls: {
      enable: true,
      ca: pki.ca.cert,
      certificate: pki.adapterServing.cert,
      key: pki.adapterServing.key,
    },
    replicaGuard: { enabled: true },
    knative: { enabled: true },
    keda: { scaledObjects: true },
  };
  writeFileSync(HELM_RELEASE.valuesFile, JSON.stringify(values, null, 2) + "\n", { mode: 0o600 });
  const r = runHelm([
    "install",
    HELM_RELEASE.release,
    join(ROOT, HELM_RELEASE.chart),
    "--namespace",
    HELM_RELEASE.namespace,
    "--create-namespace",
    "--values",
    HELM_RELEASE.valuesFile,
  ], { kubeconfig: KUBECONFIG });
  if (r.error) throw new Error(`cannot run helm: ${r.error.message}`);
  if (r.status !== 0) {
    throw new Error(
      `helm install failed with exit code ${r.status}: ${(r.stderr || r.stdout).trim()}`,
    );
  }
  log(
    `helm install ${HELM_RELEASE.release} ${HELM_RELEASE.chart}: ${
      r.stdout.match(/^STATUS: .*$/m)?.[0] ?? "no STATUS line"
    }`,
  );
  applyEndpoints();
  return [HELM_RELEASE.chart];
}

/**
 * The adapter's Service endpoints: the adapter's address in the namespace (no endpoints
 * controller or kube-proxy runs, and the adapter is a process, not a pod).
 */
export function applyEndpoints(ips: string[] = adapterReplicas().map((r) => r.ip)): void {
  const objects = [
    {
      apiVersion: "v1",
      kind: "Endpoints",
      metadata: { name: E2E.adapterService, namespace: E2E.adapterNamespace },
      subsets: [{
        addresses: ips.map((ip) => ({ ip })),
        ports: [
          { name: "https", port: E2E.adapterPort, protocol: "TCP" },
          // the status page, for explain through the service proxy
          { name: "metrics", port: E2E.adapterMetricsPort, protocol: "TCP" },
        ],
      }],
    },
    {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        name: `${E2E.adapterService}-e2e`,
        namespace: E2E.adapterNamespace,
        labels: { "kubernetes.io/service-name": E2E.adapterService },
      },
      addressType: "IPv4",
      endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true } })),
      ports: [
        { name: "https", port: E2E.adapterPort, protocol: "TCP" },
        { name: "metrics", port: E2E.adapterMetricsPort, protocol: "TCP" },
      ],
    },
  ];
  kubectl(
    ["apply", "--server-side", "-f", "-"],
    JSON.stringify({ apiVersion: "v1", kind: "List", items: objects }),
  );
}

/** Debian's Prometheus, if installed: in the namespace, scraping the file_sd targets the suite writes. */
function startPrometheus(): { url: string; targetsDir: string } | null {
  const bin = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"].find((p) => existsSync(p));
  if (!bin || process.env.HPA_E2E_PROMETHEUS === "0") return null;
  const dir = join(STATE_DIR, "prometheus");
  const targetsDir = join(dir, "targets");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(targetsDir, { recursive: true });
  const config = {
    global: { scrape_interval: "1s", evaluation_interval: "1s" },
    scrape_configs: [{
      job_name: "e2e",
      file_sd_configs: [{ files: [join(targetsDir, "*.json")], refresh_interval: "1s" }],
    }],
  };
  writeFileSync(join(dir, "prometheus.yml"), JSON.stringify(config, null, 2) + "\n");
  const address = `${E2E.prometheusIp}:${E2E.prometheusPort}`;
  startProcess("prometheus", [
    bin,
    `--config.file=${join(dir, "prometheus.yml")}`,
    `--storage.tsdb.path=${join(dir, "data")}`,
    `--web.listen-address=${address}`,
    "--log.level=warn",
  ], { netns: true });
  return { url: `http://${address}`, targetsDir };
}

async function adapterToken(client: KubeClient): Promise<string> {
  const ns = E2E.adapterNamespace;
  const sa = E2E.adapterServiceAccount;
  if (!(await client.get(`/api/v1/namespaces/${ns}/serviceaccounts/${sa}`))) {
    await client.request("POST", `/api/v1/namespaces/${ns}/serviceaccounts`, {
      body: { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: sa, namespace: ns } },
    });
  }
  const review = await client.request(
    "POST",
    `/api/v1/namespaces/${ns}/serviceaccounts/${sa}/token`,
    {
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: { expirationSeconds: 86400 },
      },
    },
  );
  return review.status.token;
}

/** HPA_E2E_ADAPTER_ARGS, split on spaces. */
function extraAdapterArgs(): string[] {
  return (process.env.HPA_E2E_ADAPTER_ARGS ?? "").split(" ").filter(Boolean);
}

/** The guard's interval as the adapter runs it (the last value of each flag wins), or null. */
function replicaGuardInterval(): number | null {
  if (process.env.HPA_E2E_ADAPTER === "stub") return null;
  let on = true;
  let seconds = REPLICA_GUARD.intervalSeconds;
  for (const arg of extraAdapterArgs()) {
    const m = arg.match(/^--?([a-z-]+)(?:=(.*))?$/);
    if (m?.[1] === "estafette-hpa-scaler") on = m[2] === undefined || ["true", "1"].includes(m[2]);
    if (m?.[1] === "estafette-hpa-scaler-interval" && m[2] !== undefined) {
      seconds = parseDuration(m[2]);
    }
  }
  return on ? seconds : null;
}

/** Whether the adapter runs the Knative reconciler (the last `--knative-autoscaler` wins). */
function knativeOn(): boolean {
  if (process.env.HPA_E2E_ADAPTER === "stub") return false;
  let on = true;
  for (const arg of extraAdapterArgs()) {
    const m = arg.match(/^--?([a-z-]+)(?:=(.*))?$/);
    if (m?.[1] === "knative-autoscaler") on = m[2] === undefined || ["true", "1"].includes(m[2]);
  }
  return on;
}

/** Whether the adapter serves ScaledObjects (the last `--keda-scaled-objects` wins). */
function kedaOn(): boolean {
  if (process.env.HPA_E2E_ADAPTER === "stub") return false;
  let on = true;
  for (const arg of extraAdapterArgs()) {
    const m = arg.match(/^--?([a-z-]+)(?:=(.*))?$/);
    if (m?.[1] === "keda-scaled-objects") on = m[2] === undefined || ["true", "1"].includes(m[2]);
  }
  return on;
}

/** KEDA's CRDs as deploy/crds/keda has them (our schemas of KEDA v2.20.2), established. */
function installKedaCrds(): void {
  kubectl(["apply", "--server-side", "-k", join(ROOT, "deploy/crds/keda")]);
  kubectl([
    "wait",
    "--for=condition=Established",
    "--timeout=60s",
    "crd/scaledobjects.keda.sh",
    "crd/triggerauthentications.keda.sh",
    "crd/clustertriggerauthentications.keda.sh",
  ]);
}

/**
 * Install Knative's PodAutoscaler and ServerlessService CRDs and wait until they are served
 * (before kube-controller-manager starts: its garbage collector then watches PodAutoscalers
 * from its first discovery instead of its next 30 s resync).
 */
function installKnativeCrds(): void {
  kubectl(["apply", "--server-side", "-f", "-"], JSON.stringify(knativeCrds()));
  kubectl([
    "wait",
    "--for=condition=Established",
    "--timeout=60s",
    ...KNATIVE_CRD_NAMES.map((n) => `crd/${n}`),
  ]);
}

/**
 * How many adapter replicas `up` starts (HPA_E2E_SHARD_REPLICAS, 1 to 3): more than one run with
 * --shard-collection (issue 29) at E2E.adapterIp and E2E.adapterReplicaIps, all in the
 * Service's endpoints.
 */
export function shardReplicas(): number {
  const n = Number(process.env.HPA_E2E_SHARD_REPLICAS ?? "1");
  if (!Number.isInteger(n) || n < 1 || n > 1 + E2E.adapterReplicaIps.length) {
    throw new Error(`HPA_E2E_SHARD_REPLICAS must be 1 to ${1 + E2E.adapterReplicaIps.length}`);
  }
  return n;
}

/** The replicas `up` starts: process name and address. */
export function adapterReplicas(): { name: string; ip: string }[] {
  return [E2E.adapterIp, ...E2E.adapterReplicaIps].slice(0, shardReplicas()).map((ip, i) => ({
    name: i === 0 ? "adapter" : `adapter-${i + 1}`,
    ip,
  }));
}

/** Lease timing of the e2e's shards: a killed replica's share moves within 4 s. */
export const SHARD_TIMING = { leaseDurationSeconds: 4, retryPeriodSeconds: 1 } as const;

function adapterCommand(
  prometheusUrl: string | null,
  ip: string = E2E.adapterIp,
  replicas: number = shardReplicas(),
): string[] {
  if (process.env.HPA_E2E_ADAPTER === "stub") {
    return [
      process.execPath,
      "--import",
      "tsx",
      join(ROOT, "tests/e2e/harness.ts"),
      "stub-adapter",
    ];
  }
  const base = process.env.HPA_E2E_ADAPTER_CMD
    ? process.env.HPA_E2E_ADAPTER_CMD.split(" ").filter(Boolean)
    : [process.execPath, "--import", "tsx", join(ROOT, "src/main.ts")];
  const extra = extraAdapterArgs();
  return [
    ...base,
    "serve",
    `--kubeconfig=${join(STATE_DIR, "adapter.kubeconfig")}`,
    `--bind-address=${ip}`,
    `--secure-port=${E2E.adapterPort}`,
    `--tls-cert-file=${pkiFile("adapterServing.crt")}`,
    `--tls-private-key-file=${pkiFile("adapterServing.key")}`,
    `--cert-dir=${join(STATE_DIR, "adapter-certs")}`,
    `--metrics-address=${ip}:${E2E.adapterMetricsPort}`,
    "--leader-elect=true",
    `--leader-elect-resource-namespace=${E2E.adapterNamespace}`,
    "--scaling-schedule",
    "--scaling-schedule-default-time-zone=UTC",
    "--default-collection-interval=1s",
    "--estafette-hpa-scaler",
    `--estafette-hpa-scaler-interval=${REPLICA_GUARD.intervalSeconds}s`,
    ...(prometheusUrl ? [`--prometheus-server=${prometheusUrl}`] : []),
    "--knative-autoscaler",
    ...(prometheusUrl ? [`--knative-prometheus-address=${prometheusUrl}`] : []),
    "--keda-scaled-objects",
    "--v=2",
    ...(replicas > 1
      ? [
        "--shard-collection",
        `--shard-advertise-address=https://${ip}:${E2E.adapterPort}`,
        `--shard-peer-ca-file=${pkiFile("ca.crt")}`,
        `--shard-peer-server-name=${E2E.adapterService}.${E2E.adapterNamespace}.svc`,
        `--shard-lease-duration=${SHARD_TIMING.leaseDurationSeconds}s`,
        `--shard-retry-period=${SHARD_TIMING.retryPeriodSeconds}s`,
      ]
      : []),
    ...extra,
  ];
}

// deno-lint-ignore no-explicit-any
function apiServiceAvailable(obj: any): { ok: boolean; message: string } {
  // deno-lint-ignore no-explicit-any
  const c = (obj?.status?.conditions ?? []).find((x: any) => x.type === "Available");
  return {
    ok: c?.status === "True",
    message: c ? `${c.reason}: ${c.message ?? ""}` : "no condition",
  };
}

/** Wait until the three APIServices report Available=True. */
export async function waitForApiServices(client: KubeClient, timeoutMs: number): Promise<void> {
  for (const s of APISERVICES) {
    const name = `${s.version}.${s.group}`;
    await waitFor(async () => {
      checkAlive();
      const obj = await client.get(`/apis/apiregistration.k8s.io/v1/apiservices/${name}`);
      const a = apiServiceAvailable(obj);
      if (!a.ok) throw new Error(a.message);
      return true;
    }, { what: `APIService ${name} Available`, timeoutMs, intervalMs: 200 });
  }
}

/** Options of {@linkcode up}. */
export interface UpOptions {
  /** Start from scratch even when a healthy control plane is running. */
  fresh?: boolean;
}

/** Start everything (building the binaries if needed) and wait until the APIServices are Available. */
export async function up(options: UpOptions = {}): Promise<E2eState> {
  try {
    return await startAll(options);
  } catch (err) {
    const tails = recordedProcesses().map((p) =>
      `--- ${p.name} (pid ${p.pid}, ${
        alive(p) ? "running" : "exited"
      }), end of .e2e/logs/${p.name}.log:\n${logTail(p.name, 15)}`
    );
    if (!process.env.HPA_E2E_KEEP) await down();
    throw new Error(`${(err as Error).message}\n${tails.join("\n")}`);
  }
}

function logTail(name: string, lines: number): string {
  try {
    return readFileSync(join(LOG_DIR, `${name}.log`), "utf8").trimEnd().split("\n").slice(-lines)
      .join("\n");
  } catch {
    return "(no log)";
  }
}

/** Throw when a recorded process has exited (a crashed component fails up at once). */
function checkAlive(): void {
  const dead = recordedProcesses().filter((p) => !alive(p));
  if (dead.length > 0) throw new StopWaiting(`exited: ${dead.map((p) => p.name).join(", ")}`);
}

async function startAll(options: UpOptions): Promise<E2eState> {
  const started = Date.now();
  const version = kubernetesVersion();
  const bin = ensureBinaries(version);
  const install = installMode();
  if (install === "helm") ensureHelm();
  const built = Date.now();

  if (!options.fresh && existsSync(STATE_FILE)) {
    const procs = recordedProcesses();
    const state = JSON.parse(readFileSync(STATE_FILE, "utf8")) as E2eState;
    if (procs.length > 0 && procs.every(alive) && state.install === install) {
      const client = createKubeClient(loadKubeconfig(KUBECONFIG));
      try {
        await waitForApiServices(client, 5_000);
        log("already up");
        return state;
      } catch {
        // fall through: restart from scratch
      }
    }
  }
  await down();
  const clean = Date.now();
  mkdirSync(STATE_DIR, { recursive: true });
  rmSync(LOG_DIR, { recursive: true, force: true });

  setupNetwork();
  const pki = createPki();
  writeKubeconfig(KUBECONFIG, "e2e-admin", pki.admin, pki.ca.cert);
  const client = createKubeClient(loadKubeconfig(KUBECONFIG));

  startEtcd(bin);
  await waitFor(async () => checkAlive() ?? (await fetch(`${E2E.etcdClient}/health`)).ok, {
    what: "etcd",
    timeoutMs: 30_000,
  });
  startApiserver(bin);
  await waitFor(
    async () =>
      checkAlive() ?? (await client.request("GET", "/readyz", { timeoutMs: 2_000 })) === "ok",
    {
      what: "kube-apiserver /readyz (see .e2e/logs/kube-apiserver.log)",
      timeoutMs: 90_000,
      intervalMs: 200,
    },
  );
  log(`kube-apiserver ready ${Math.round((Date.now() - clean) / 100) / 10} s after start`);
  installKnativeCrds();
  installKedaCrds();
  startControllerManager(bin, pki);
  const manifests = install === "helm" ? installChart(pki) : applyManifests(pki);

  const token = await adapterToken(client);
  // the token as a file too, for --delegate-token-file (tests/e2e/delegation_e2e_test.ts)
  writeFileSync(join(STATE_DIR, "adapter.token"), `${token}\n`, { mode: 0o600 });
  writeKubeconfig(
    join(STATE_DIR, "adapter.kubeconfig"),
    E2E.adapterServiceAccount,
    { token },
    pki.ca.cert,
  );
  startProcess("kubelet", [
    process.execPath,
    "--import",
    "tsx",
    join(ROOT, "tests/e2e/kubelet.ts"),
    `--kubeconfig=${KUBECONFIG}`,
    `--node=${E2E.nodeName}`,
    `--host-ip=${E2E.adapterIp}`,
    `--addresses=${E2E.prefix}.${E2E.podPoolFirst}-${E2E.prefix}.${E2E.podPoolLast}`,
  ], { netns: true });
  const prometheus = startPrometheus();
  for (const replica of adapterReplicas()) {
    startProcess(replica.name, adapterCommand(prometheus?.url ?? null, replica.ip), {
      netns: true,
    });
  }

  await waitForApiServices(client, 120_000);
  const state: E2eState = {
    kubeconfig: KUBECONFIG,
    server: SERVER,
    netns: E2E.netns,
    adapterIp: E2E.adapterIp,
    adapterPort: E2E.adapterPort,
    adapterMetrics: `http://${E2E.adapterIp}:${E2E.adapterMetricsPort}/metrics`,
    adapter: process.env.HPA_E2E_ADAPTER === "stub" ? "stub" : "adapter",
    install,
    helm: install === "helm" ? HELM_RELEASE : null,
    prometheus,
    manifests,
    version,
    binDir: bin,
    hpaSyncPeriodSeconds: CONTROLLER.syncPeriodSeconds,
    downscaleStabilizationSeconds: CONTROLLER.downscaleStabilizationSeconds,
    tolerance: CONTROLLER.tolerance,
    replicaGuardIntervalSeconds: replicaGuardInterval(),
    knative: knativeOn(),
    keda: kedaOn(),
    replicas: adapterReplicas(),
  };
  writeFileSync(STATE_FILE, JSON.stringify(state, null, 2) + "\n");
  log(
    `up: APIServices Available ${Math.round((Date.now() - clean) / 100) / 10} s after start ` +
      `(build check ${Math.round((built - started) / 100) / 10} s, ${
        Math.round((Date.now() - started) / 100) / 10
      } s in all); ` +
      `KUBECONFIG=${KUBECONFIG}`,
  );
  return state;
}

/** Stop every process up recorded (by PID) and delete the namespace and link it made. Idempotent. */
export async function down(): Promise<void> {
  await stopRecorded();
  teardownNetwork();
  rmSync(join(STATE_DIR, "etcd"), { recursive: true, force: true });
  rmSync(STATE_FILE, { force: true });
}

/** The PID of a running process `up` started (by its `.e2e/pids` name), or null. */
export function runningPid(name: string): number | null {
  const p = recordedProcesses().filter((r) => r.name === name).at(-1);
  return p && alive(p) ? p.pid : null;
}

/** Start an adapter replica again (after a test stopped it), as `up` started it. */
export function restartAdapterReplica(replica: { name: string; ip: string }): number {
  const state = readState();
  // sharded as `up` made it, whatever this process's HPA_E2E_SHARD_REPLICAS says
  return startProcess(
    replica.name,
    adapterCommand(
      state?.prometheus?.url ?? null,
      replica.ip,
      Math.max(1, state?.replicas?.length ?? 1),
    ),
    { netns: true },
  );
}

/** Read the state up left, or null when the harness is not up. */
export function readState(): E2eState | null {
  if (!existsSync(STATE_FILE)) return null;
  return JSON.parse(readFileSync(STATE_FILE, "utf8")) as E2eState;
}

// --- a discovery-only stand-in for the adapter (HPA_E2E_ADAPTER=stub) ---------------------------

function stubAdapter(): void {
  const resources = (group: string, version: string): unknown => ({
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: `${group}/${version}`,
    resources: [],
  });
  const server = createServer({
    cert: readFileSync(pkiFile("adapterServing.crt")),
    key: readFileSync(pkiFile("adapterServing.key")),
  }, (req, res) => {
    const m = req.url?.match(/^\/apis\/([^/]+)\/([^/?]+)\/?(\?.*)?$/);
    res.setHeader("content-type", "application/json");
    if (m) return res.end(JSON.stringify(resources(m[1], m[2])));
    if (req.url === "/healthz" || req.url === "/readyz") return res.end("ok");
    res.statusCode = 404;
    res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", code: 404 }));
  });
  server.listen(E2E.adapterPort, E2E.adapterIp);
  process.on("SIGTERM", () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}

// --- command line -------------------------------------------------------------------------------

async function runSuite(file: string, testArgs: string[]): Promise<number> {
  const suite = join(ROOT, file);
  const started = Date.now();
  const r = spawnSync(process.execPath, [
    "--import",
    "tsx",
    "--test",
    "--test-concurrency=1",
    ...testArgs,
    suite,
  ], {
    cwd: ROOT,
    stdio: "inherit",
    env: { ...process.env, HPA_E2E_REQUIRED: "1" },
  });
  log(
    `suite finished in ${Math.round((Date.now() - started) / 1000)} s with exit code ${r.status}`,
  );
  return r.status ?? 1;
}

async function main(argv: string[]): Promise<number> {
  const [command] = argv;
  switch (command) {
    case "up":
      await up({ fresh: argv.includes("--fresh") });
      return 0;
    case "down":
      await down();
      return 0;
    case "test": {
      // each install on a control plane of its own: deploy/'s files and the whole suite, then
      // the chart and its suite (HPA_E2E_INSTALL picks one)
      // and deploy/'s files again with the adapter delegating to prometheus-adapter (issue 26)
      const delegateArgs = [
        `--delegate-external-metrics=https://${E2E.prometheusIp}:6443`,
        "--delegate-insecure-skip-tls-verify",
        `--delegate-token-file=${join(STATE_DIR, "adapter.token")}`,
        "--delegate-discovery-interval=2s",
      ].join(" ");
      // and three replicas sharing the collection (issue 29)
      const phases: [Install, string, string, string][] = [
        ["kustomize", "tests/e2e/hpa_e2e_test.ts", "", "1"],
        ["helm", "tests/e2e/helm_e2e_test.ts", "", "1"],
        ["kustomize", "tests/e2e/delegation_e2e_test.ts", delegateArgs, "1"],
        ["kustomize", "tests/e2e/shard_e2e_test.ts", "", "3"],
        // the admission webhook and explain through the service proxy (issue 50)
        ["kustomize", "tests/e2e/admission_e2e_test.ts", "--admission-webhook", "1"],
        // and KEDA's ScaledObjects served without KEDA (issue 47)
        // (KEDA's own operator takes the ScaledObjects labelled for it, side by side)
        // and KEDA's metrics server behind us as the delegate, so both HPAs get their metrics
        [
          "kustomize",
          "tests/e2e/keda_e2e_test.ts",
          [
            "--keda-scaled-object-selector=e2e.hpa-metrics-adapter/keda!=true",
            `--delegate-external-metrics=https://${E2E.prometheusIp}:16443`,
            "--delegate-insecure-skip-tls-verify",
            `--delegate-token-file=${join(STATE_DIR, "adapter.token")}`,
            "--delegate-discovery-interval=2s",
          ].join(" "),
          "1",
        ],
        // and prometheus-adapter's config file, side by side with prometheus-adapter (issue 49)
        [
          "kustomize",
          "tests/e2e/prometheus_adapter_e2e_test.ts",
          [
            `--prometheus-adapter-config=${join(ROOT, "tests/e2e/prometheus_adapter/config.yaml")}`,
            "--metrics-relist-interval=5s",
          ].join(" "),
          "1",
        ],
      ];
      const only = process.env.HPA_E2E_INSTALL ? installMode() : null;
      // HPA_E2E_SUITE=tests/e2e/shard_e2e_test.ts runs that phase only
      const suiteOnly = process.env.HPA_E2E_SUITE ?? null;
      const baseArgs = process.env.HPA_E2E_ADAPTER_ARGS ?? "";
      let rc = 0;
      for (
        const [install, suite, args, replicas] of phases.filter(([i, f]) =>
          (only === null || i === only) && (suiteOnly === null || f === suiteOnly)
        )
      ) {
        process.env.HPA_E2E_INSTALL = install;
        process.env.HPA_E2E_ADAPTER_ARGS = `${baseArgs} ${args}`.trim();
        process.env.HPA_E2E_SHARD_REPLICAS = replicas;
        let phaseRc = 1;
        try {
          log(`--- ${install}: ${suite}`);
          await up({ fresh: true });
          phaseRc = await runSuite(suite, argv.slice(1));
        } catch (err) {
          log(`${install}: ${(err as Error).message}`);
        } finally {
          if (!process.env.HPA_E2E_KEEP) await down();
        }
        if (phaseRc !== 0) rc = phaseRc;
        if (process.env.HPA_E2E_KEEP && only === null) break;
      }
      return rc;
    }
    case "build":
      ensureBinaries(kubernetesVersion());
      return 0;
    case "stub-adapter":
      stubAdapter();
      return -1;
    default:
      process.stderr.write(
        "usage: harness.ts up [--fresh] | down | test [node --test flags] | build\n",
      );
      return 2;
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then((rc) => {
    if (rc >= 0) process.exit(rc);
  }, (err) => {
    process.stderr.write(`e2e: ${(err as Error).message}\n`);
    process.exit(1);
  });
}
