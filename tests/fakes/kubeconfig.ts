/** Kubeconfigs that point at a fake API server (plain http, bearer token). */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Options of `fakeKubeconfig`. */
export interface FakeKubeconfigOptions {
  /** Bearer token sent by the client (default "fake-token"). */
  token?: string;
  /** Namespace of the context (default "default"). */
  namespace?: string;
}

/**
 * A kubeconfig (YAML) for a server URL. Plain http needs `insecure-skip-tls-verify` with
 * @kubernetes/client-node 2.x.
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
    "    insecure-skip-tls-verify: true",
    "users:",
    "- name: fake",
    "  user:",
    `    token: ${JSON.stringify(token)}`,
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
