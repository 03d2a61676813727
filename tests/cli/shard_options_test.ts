/** `--shard-collection`'s flags (issue 29): what cannot work is a usage error at start. */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { UsageError } from "../../src/cli/command.ts";
import { parseArgs, SERVE_FLAGS } from "../../src/cli/flags.ts";
import { advertiseAddress, shardingFromFlags } from "../../src/cli/shard_options.ts";
import type { KubeClusterSource } from "../../src/cluster/kube_source.ts";
import { KubeClusterSource as Source } from "../../src/cluster/kube_source.ts";
import { parseKubeconfig } from "../../src/cluster/kubeconfig.ts";
import { silentLogger } from "../../src/engine/logger.ts";
import { fakeKubeconfig } from "../fakes/kubeconfig.ts";

function ctx(kubeSource: KubeClusterSource | null, env: Record<string, string> = {}) {
  return {
    kubeSource,
    env,
    identity: "pod-a_1234",
    namespace: "kube-system",
    securePort: 6443,
    log: silentLogger(),
  };
}

describe("shardingFromFlags", () => {
  it("needs a cluster, a peer CA and an address, and says so", async () => {
    const values = (args: string[]) =>
      parseArgs(["--shard-collection", ...args], SERVE_FLAGS).values;
    assert.throws(
      () => shardingFromFlags(values([]), ctx(null)),
      (e) =>
        e instanceof UsageError &&
        e.message ===
          "--shard-collection needs a cluster (the replicas meet through Leases); it cannot be used with --manifests",
    );
    const source = new Source({
      kubeConfig: parseKubeconfig(fakeKubeconfig("http://127.0.0.1:9")),
    });
    const dir = await mkdtemp(join(tmpdir(), "shard-"));
    try {
      assert.throws(
        () => shardingFromFlags(values([]), ctx(source)),
        /--shard-collection needs --shard-peer-ca-file: the CA that verifies the peers' serving certificates/,
      );
      assert.throws(
        () =>
          shardingFromFlags(values([`--shard-peer-ca-file=${join(dir, "nope.crt")}`]), ctx(source)),
        /--shard-peer-ca-file .*nope\.crt: ENOENT/,
      );
      await writeFile(join(dir, "ca.crt"), "-----BEGIN CERTIFICATE-----\n");
      assert.throws(
        () =>
          shardingFromFlags(values([`--shard-peer-ca-file=${join(dir, "ca.crt")}`]), ctx(source)),
        /set POD_IP \(the downward API's status\.podIP\) or --shard-advertise-address/,
      );
      const s = shardingFromFlags(
        values([`--shard-peer-ca-file=${join(dir, "ca.crt")}`]),
        ctx(source, { POD_IP: "10.1.2.3" }),
      );
      // before the first listing, this replica is the only member: it owns every query
      assert.equal(s.owns("json-path/External|ns|http://q/"), true);
      assert.deepEqual(s.members(), []);
    } finally {
      await source.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("takes the advertised address as a URL, or makes it from the pod IP", () => {
    assert.equal(advertiseAddress(null, "10.1.2.3", 6443), "https://10.1.2.3:6443");
    assert.equal(advertiseAddress(null, "fd00::5", 443), "https://[fd00::5]:443");
    assert.equal(advertiseAddress("10.0.0.9:8443", undefined, 6443), "https://10.0.0.9:8443");
    assert.equal(advertiseAddress("https://a.b:1/", undefined, 6443), "https://a.b:1");
    assert.throws(() => advertiseAddress("http://a:1", undefined, 6443), /must be https/);
  });
});
