import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { KubeHttp } from "../../src/cluster/kube_http.ts";
import { parseKubeconfig } from "../../src/cluster/kubeconfig.ts";
import {
  memberLeaseName,
  SHARD_ADDRESS_ANNOTATION,
  SHARD_GROUP_LABEL,
  ShardMembership,
} from "../../src/cluster/shard_membership.ts";
import type { ShardMember } from "../../src/core/shard.ts";
import { FakeKubeApi } from "../fakes/kube_api.ts";
import { fakeKubeconfig } from "../fakes/kubeconfig.ts";

describe("ShardMembership (Leases)", () => {
  it("announces each replica, reports the live ones, and forgets one that stops or stops renewing", async () => {
    const api = await FakeKubeApi.start();
    const http = new KubeHttp(parseKubeconfig(fakeKubeconfig(api.url)));
    const clock = { now: Date.parse("2026-11-25T08:00:00Z") };
    const seen: Record<string, string[][]> = { a: [], b: [] };
    const member = (id: string): ShardMembership =>
      new ShardMembership({
        http,
        namespace: "kube-system",
        group: "hpa-metrics-adapter",
        self: { identity: `pod-${id}_1234`, address: `https://10.0.0.${id === "a" ? 1 : 2}:6443` },
        leaseDurationSeconds: 15,
        retryPeriodSeconds: 2,
        now: () => clock.now,
        onChange: (m: ShardMember[]) => seen[id].push(m.map((x) => `${x.identity} ${x.address}`)),
      });
    try {
      // a Lease of another group is not a member
      api.create({
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: {
          name: "other",
          namespace: "kube-system",
          labels: { [SHARD_GROUP_LABEL]: "other" },
          annotations: { [SHARD_ADDRESS_ANNOTATION]: "https://10.9.9.9:6443" },
        },
        spec: {
          holderIdentity: "x",
          renewTime: "2026-11-25T08:00:00.000000Z",
          leaseDurationSeconds: 15,
        },
      });
      const a = member("a");
      const b = member("b");
      await a.step();
      assert.deepEqual(seen.a, [["pod-a_1234 https://10.0.0.1:6443"]]);
      await b.step();
      await a.step();
      const both = ["pod-a_1234 https://10.0.0.1:6443", "pod-b_1234 https://10.0.0.2:6443"];
      assert.deepEqual(seen.a.at(-1), both);
      assert.deepEqual(seen.b.at(-1), both);
      const lease = api.object(
        "coordination.k8s.io/v1",
        "Lease",
        "kube-system",
        memberLeaseName("hpa-metrics-adapter", "pod-b_1234"),
      );
      assert.equal(lease?.metadata.name, "hpa-metrics-adapter-pod-b-1234");
      assert.equal(lease?.metadata.labels?.[SHARD_GROUP_LABEL], "hpa-metrics-adapter");
      assert.equal(
        (lease as { spec: { holderIdentity: string } }).spec.holderIdentity,
        "pod-b_1234",
      );

      // b stops renewing: a drops it once 15 s passed on a's clock without a change
      for (let t = 2_000; t <= 14_000; t += 2_000) {
        clock.now += 2_000;
        await a.step();
      }
      assert.deepEqual(seen.a.at(-1), both);
      clock.now += 2_000;
      await a.step();
      assert.deepEqual(seen.a.at(-1), ["pod-a_1234 https://10.0.0.1:6443"]);

      // b comes back, then stops for good: its Lease goes at once
      await b.step();
      await a.step();
      assert.deepEqual(seen.a.at(-1), both);
      await b.stop();
      await a.step();
      assert.deepEqual(seen.a.at(-1), ["pod-a_1234 https://10.0.0.1:6443"]);
      assert.equal(a.members().length, 1);
      // a step that changes nothing reports nothing
      const reports = seen.a.length;
      await a.step();
      assert.equal(seen.a.length, reports);
    } finally {
      await http.close();
      await api.stop();
    }
  });

  it("deletes the Leases of replicas gone for ten lease durations (a minute at least), no others", async () => {
    const api = await FakeKubeApi.start();
    const http = new KubeHttp(parseKubeconfig(fakeKubeconfig(api.url)));
    const T = Date.parse("2026-11-25T08:00:00Z");
    const lease = (name: string, renewTime: string) =>
      api.create({
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: {
          name,
          namespace: "kube-system",
          labels: { [SHARD_GROUP_LABEL]: "hpa-metrics-adapter" },
          annotations: { [SHARD_ADDRESS_ANNOTATION]: `https://${name}:6443` },
        },
        spec: { holderIdentity: name, renewTime, leaseDurationSeconds: 15 },
      });
    try {
      lease("killed", "2026-11-25T07:57:29.000000Z"); // 151 s ago: over 10 x 15 s
      lease("slow", "2026-11-25T07:57:31.000000Z"); // 149 s ago: kept (not live either)
      const seen: string[][] = [];
      const m = new ShardMembership({
        http,
        namespace: "kube-system",
        group: "hpa-metrics-adapter",
        self: { identity: "me", address: "https://me:6443" },
        leaseDurationSeconds: 15,
        retryPeriodSeconds: 2,
        now: () => T,
        onChange: (members) => seen.push(members.map((x) => x.identity)),
      });
      await m.step();
      assert.deepEqual(seen, [["me"]], "neither old Lease is a live member");
      const names = api.objectsOf("leases").map((o) => o.metadata.name).sort();
      assert.deepEqual(names, ["hpa-metrics-adapter-me", "slow"]);
      const del = api.requests.filter((r) => r.method === "DELETE");
      assert.equal(del.length, 1);
      assert.match(del[0].path, /\/leases\/killed$/);
      // the precondition: a Lease renewed since it was listed is not deleted
      await assert.rejects(
        http.json("DELETE", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/slow", {
          apiVersion: "v1",
          kind: "DeleteOptions",
          preconditions: { resourceVersion: "1" },
        }),
        /HTTP 409: Operation cannot be fulfilled on leases.coordination.k8s.io "slow": Precondition failed/,
      );
    } finally {
      await http.close();
      await api.stop();
    }
  });

  it("refuses a retry period that is not shorter than the lease duration", () => {
    assert.throws(
      () =>
        new ShardMembership({
          http: {} as KubeHttp,
          namespace: "ns",
          group: "g",
          self: { identity: "a", address: "https://a" },
          leaseDurationSeconds: 2,
          retryPeriodSeconds: 2,
          onChange: () => {},
        }),
      /invalid shard timing: lease duration 2s must be greater than retry period 2s/,
    );
  });
});
