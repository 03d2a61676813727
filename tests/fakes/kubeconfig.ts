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
  /** An exec credential plugin (client.authentication.k8s.io/v1) instead of the token. */
  exec?: { command: string; args?: string[] };
}

function base64(text: string): string {
  return JSON.stringify(Buffer.from(text).toString("base64"));
}

/** A kubeconfig (YAML) for a server URL. Without `ca` it sets `insecure-skip-tls-verify`. */
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
    ...(options.exec
      ? [
        "    exec:",
        "      apiVersion: client.authentication.k8s.io/v1",
        `      command: ${JSON.stringify(options.exec.command)}`,
        `      args: ${JSON.stringify(options.exec.args ?? [])}`,
        "      interactiveMode: Never",
      ]
      : [`    token: ${JSON.stringify(token)}`]),
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

/**
 * An exec credential plugin: a shell script in a fresh temporary folder, answering
 * `ExecCredential` JSON. `remove` deletes the folder.
 */
export async function writeExecPlugin(
  script: string,
): Promise<{ path: string; dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "fake-exec-plugin-"));
  const path = join(dir, "plugin.sh");
  await writeFile(path, `#!/bin/sh\n${script}\n`, { mode: 0o755 });
  return { path, dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** Shell that prints an ExecCredential (v1) with `token`, expired at `expires` (RFC 3339). */
export function execCredentialScript(token: string, expires?: string): string {
  const status = JSON.stringify({
    token,
    ...(expires !== undefined ? { expirationTimestamp: expires } : {}),
  });
  const doc =
    `{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":${status}}`;
  return `echo '${doc}'`;
}
