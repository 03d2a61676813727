/** Kubeconfigs that point at a fake API server (plain http or a CA, bearer token or client cert). */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Buffer } from "node:buffer";

/** Options of `fakeKubeconfig`. */
export interface FakeKubeconfigOptions {
  /** Bearer token sent by the client (default "fake-token"). */
  token?: string;
  /** Namespace of the context (default "default"). */
  namespace?: string;
  /** CA (PEM) to verify the server with, as `certificate-authority-data`; default no verification. */
  ca?: string;
  /** A client certificate and key (PEM), as `client-certificate-data`/`client-key-data`. */
  client?: { cert: string; key: string };
}

function base64(text: string): string {
  return JSON.stringify(Buffer.from(text).toString("base64"));
}

/**
 * A kubeconfig (YAML) for a server URL. Without `ca` it sets `insecure-skip-tls-verify`, which
 * plain http needs with @kubernetes/client-node 2.x.
 */
export function fakeKubeconfig(server: string, options: FakeKubeconfigOptions = {}): string {
  const token = options.token ?? "fake-token";
  const namespace = options.namespace ?? "default";
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: fake",
    "  cluster:",
    `    server: ${JSON.stringify(server)}`,
    options.ca !== undefined
      ? `    certificate-authority-data: ${base64(options.ca)}`
      : "    insecure-skip-tls-verify: true",
    "users:",
    "- name: fake",
    "  user:",
    `    token: ${JSON.stringify(token)}`,
    ...(options.client
      ? [
        `    client-certificate-data: ${base64(options.client.cert)}`,
        `    client-key-data: ${base64(options.client.key)}`,
      ]
      : []),
    "contexts:",
    "- name: fake",
    "  context:",
    "    cluster: fake",
    "    user: fake",
    `    namespace: ${JSON.stringify(namespace)}`,
    "current-context: fake",
    "",
  ].join("\n");
}

/** A kubeconfig file in a fresh temporary folder; `remove` deletes the folder. */
export async function writeFakeKubeconfig(
  server: string,
  options: FakeKubeconfigOptions = {},
): Promise<{ path: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "fake-kubeconfig-"));
  const path = join(dir, "kubeconfig.yaml");
  await writeFile(path, fakeKubeconfig(server, options));
  return { path, remove: () => rm(dir, { recursive: true, force: true }) };
}
