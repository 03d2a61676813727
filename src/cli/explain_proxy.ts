/**
 * `explain NAMESPACE/NAME` with neither `--status-url` nor `-f` (issue 50): the running adapter's
 * `/status.json` read through kube-apiserver's service proxy,
 * `/api/v1/namespaces/<ns>/services/<scheme>:<service>:<port>/proxy/status.json`, with the
 * kubeconfig's credentials (`--kubeconfig`, else `$KUBECONFIG`, else `~/.kube/config`, else the
 * in-cluster service account): no port-forward. The caller needs `get` on `services/proxy` in the
 * adapter's namespace; an answer other than 200 is explained with that in mind.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { type FlagValues, stringFlag } from "./flags.ts";
import { UsageError } from "./command.ts";

/** An HTTP GET of the status document: its status and body. */
export type StatusGet = (url: string) => Promise<{ status: number; body: string }>;

/** How long kube-apiserver (and the adapter behind it) may take. */
const PROXY_TIMEOUT_MS = 10_000;

/** The adapter's Service as the explain flags name it (deploy/base/service.yaml's defaults). */
export interface StatusService {
  namespace: string;
  name: string;
  /** A port name or number of the Service. */
  port: string;
  scheme: "http" | "https";
}

const NAME_RE = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const PORT_RE = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?|[0-9]{1,5})$/;

/** The Service of the flags, checked (a usage error names the flag and the value). */
export function statusServiceFromFlags(flags: FlagValues): StatusService {
  const value = (flag: string, fallback: string): string => stringFlag(flags, flag) ?? fallback;
  const namespace = value("service-namespace", "hpa-metrics-adapter");
  const name = value("service-name", "hpa-metrics-adapter");
  const port = value("service-port", "metrics");
  const scheme = value("service-scheme", "http");
  for (const [flag, v] of [["service-namespace", namespace], ["service-name", name]]) {
    if (!NAME_RE.test(v) || v.length > 253) {
      throw new UsageError(`invalid value "${v}" for --${flag}: want a Kubernetes object name`);
    }
  }
  if (!PORT_RE.test(port)) {
    throw new UsageError(`invalid value "${port}" for --service-port: want a port name or number`);
  }
  if (scheme !== "http" && scheme !== "https") {
    throw new UsageError(`invalid value "${scheme}" for --service-scheme: want http or https`);
  }
  return { namespace, name, port, scheme };
}

/** The service proxy path of the Service's `/status.json`. */
export function serviceProxyPath(service: StatusService): string {
  return `/api/v1/namespaces/${service.namespace}/services/${service.scheme}:${service.name}:${service.port}/proxy/status.json`;
}

/** The kubeconfig explain uses: the flag, `$KUBECONFIG`'s first file, `~/.kube/config`, or null. */
export function kubeconfigPath(
  flags: FlagValues,
  env: Record<string, string | undefined>,
  exists: (path: string) => boolean = existsSync,
): string | null {
  const flag = stringFlag(flags, "kubeconfig");
  if (flag) return flag;
  const fromEnv = (env.KUBECONFIG ?? "").split(":").find((p) => p !== "" && exists(p));
  if (fromEnv) return fromEnv;
  const home = env.HOME ?? homedir();
  const file = join(home, ".kube", "config");
  return exists(file) ? file : null;
}

/** What a status other than 200 from the service proxy means, after ` answered N`. */
export function proxyHint(
  answer: { status: number; body: string },
  service: StatusService,
): string {
  const { status, body } = answer;
  let message = "";
  try {
    const parsed = JSON.parse(body) as { kind?: unknown; message?: unknown };
    if (parsed?.kind === "Status" && typeof parsed.message === "string") {
      message = `: ${parsed.message}`;
    }
  } catch {
    // not a Status: the adapter's own answer (a 404 of the metrics port)
  }
  if (status === 401) return `${message} (the kubeconfig's credentials were not accepted)`;
  if (status === 403) {
    return `${message} (explain needs get on services/proxy in namespace ${service.namespace}: kubectl create role hpa-metrics-adapter-explain -n ${service.namespace} --verb=get --resource=services/proxy --resource-name=${service.scheme}:${service.name}:${service.port}, then a rolebinding; or pass --status-url)`;
  }
  if (status === 404) {
    return `${message} (is the adapter's Service ${service.namespace}/${service.name} there with a port ${service.port} (--service-port), and --status-page on?)`;
  }
  if (status === 503 || status === 502) {
    return `${message} (kube-apiserver could not reach the Service's endpoints: is the adapter running and ready, and --service-scheme ${service.scheme} right for port ${service.port}?)`;
  }
  return message;
}

/**
 * Where `explain` reads the status from without `--status-url`: the service proxy URL, a GET
 * with the kubeconfig's credentials, and the hint of a failed answer.
 */
export async function serviceProxySource(
  flags: FlagValues,
  env: Record<string, string | undefined>,
): Promise<{ url: string; get: StatusGet; hint: (status: number, body: string) => string }> {
  const service = statusServiceFromFlags(flags);
  const { loadKubeConfig } = await import("../cluster/kubeconfig.ts");
  const { KubeHttp } = await import("../cluster/kube_http.ts");
  const path = kubeconfigPath(flags, env);
  let kubeConfig;
  try {
    kubeConfig = loadKubeConfig(path, { env });
  } catch (e) {
    throw new Error(
      `explain needs --status-url, -f, or a kubeconfig to reach the adapter through kube-apiserver: ${
        (e as Error).message
      }`,
    );
  }
  const proxyPath = serviceProxyPath(service);
  const url = `${kubeConfig.cluster.server.replace(/\/+$/, "")}${proxyPath}`;
  const get: StatusGet = async () => {
    const http = new KubeHttp(kubeConfig, { requestTimeoutMs: PROXY_TIMEOUT_MS });
    try {
      const res = await http.request("GET", proxyPath);
      return { status: res.status, body: new TextDecoder().decode(res.body) };
    } catch (e) {
      const cause = (e as { cause?: { message?: string } }).cause?.message;
      throw new Error(`cannot read ${url}: ${cause ?? (e as Error).message}`);
    } finally {
      await http.close();
    }
  };
  return { url, get, hint: (status, body) => proxyHint({ status, body }, service) };
}
