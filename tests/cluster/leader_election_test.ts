import { describe, it } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import {
  LeaseLeaderElector,
  type LeaseLeaderElectorOptions,
} from "../../src/cluster/leader_election.ts";
import { InMemoryLeaderElector } from "../../src/cluster/leader.ts";
import { FakeKubeApi } from "../fakes/kube_api.ts";
import { KubeHttp } from "../../src/cluster/kube_http.ts";
import { type KubeConfig, parseKubeconfig } from "../../src/cluster/kubeconfig.ts";
import { fakeKubeconfig } from "../fakes/kubeconfig.ts";

const T0 = Date.parse("2026-01-15T12:00:00Z");

interface Candidate {
  elector: LeaseLeaderElector;
  calls: string[];
}

async function withApi(body: (api: FakeKubeApi, kc: KubeConfig) => Promise<void>): Promise<void> {
  const api = await FakeKubeApi.start();
  const kc = parseKubeconfig(fakeKubeconfig(api.url));
  try {
    await body(api, kc);
  } finally {
    await api.stop();
  }
}

function candidate(
  kc: KubeConfig,
  identity: string,
  now: () => number,
  extra: Partial<LeaseLeaderElectorOptions> = {},
): Candidate {
  const calls: string[] = [];
  const elector = new LeaseLeaderElector({
    kubeConfig: kc,
    namespace: "kube-system",
    name: "hpa-metrics-adapter",
    identity,
    now,
    onStartedLeading: () => calls.push("started"),
    onStoppedLeading: () => calls.push("stopped"),
    ...extra,
  });
  return { elector, calls };
}

function lease(api: FakeKubeApi): Record<string, unknown> | undefined {
  return api.object("coordination.k8s.io/v1", "Lease", "kube-system", "hpa-metrics-adapter")
    ?.spec;
}

async function waitFor(what: string, cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("LeaseLeaderElector", () => {
  it("lets one candidate lead and another take over after the lease duration", async () => {
    await withApi(async (api, kc) => {
      let now = T0;
      const a = candidate(kc, "pod-a", () => now);
      const b = candidate(kc, "pod-b", () => now);
      await a.elector.step();
      await b.elector.step();
      assert.deepEqual([a.elector.isLeader(), b.elector.isLeader()], [true, false]);
      assert.deepEqual(lease(api), {
        holderIdentity: "pod-a",
        leaseDurationSeconds: 15,
        acquireTime: "2026-01-15T12:00:00.000000Z",
        renewTime: "2026-01-15T12:00:00.000000Z",
        leaseTransitions: 0,
      });

      now += 2000;
      await a.elector.step();
      await b.elector.step(); // b sees the renewal at T0+2s
      assert.equal(lease(api)?.renewTime, "2026-01-15T12:00:02.000000Z");

      // a stops renewing; b waits a full lease duration from when it saw the last renewal
      now += 14_999;
      await b.elector.step();
      assert.equal(b.elector.isLeader(), false);
      now += 1;
      await b.elector.step();
      assert.equal(b.elector.isLeader(), true);
      assert.deepEqual(lease(api), {
        holderIdentity: "pod-b",
        leaseDurationSeconds: 15,
        acquireTime: "2026-01-15T12:00:17.000000Z",
        renewTime: "2026-01-15T12:00:17.000000Z",
        leaseTransitions: 1,
      });

      // a comes back, sees b's lease and steps down
      await a.elector.step();
      assert.equal(a.elector.isLeader(), false);
      assert.deepEqual(a.calls, ["started", "stopped"]);
      assert.deepEqual(b.calls, ["started"]);
    });
  });

  it("renews with one update a period, and reads the Lease again after a conflict", async () => {
    await withApi(async (api, kc) => {
      let now = T0;
      const a = candidate(kc, "pod-a", () => now);
      const calls = () =>
        api.requests.filter((r) => r.path.includes("/leases")).map((r) => r.method);
      await a.elector.step(); // GET 404, POST
      for (let i = 0; i < 3; i++) {
        now += 2000;
        await a.elector.step();
      }
      assert.deepEqual(calls(), ["GET", "POST", "PUT", "PUT", "PUT"]);
      assert.deepEqual(lease(api), {
        holderIdentity: "pod-a",
        leaseDurationSeconds: 15,
        acquireTime: "2026-01-15T12:00:00.000000Z",
        renewTime: "2026-01-15T12:00:06.000000Z",
        leaseTransitions: 0,
      });

      // someone else writes the Lease (a new resourceVersion, still pod-a's): the update of the
      // kept Lease conflicts, then a read and an update renew it
      const stored = api.object(
        "coordination.k8s.io/v1",
        "Lease",
        "kube-system",
        "hpa-metrics-adapter",
      )!;
      api.replace(stored);
      api.requests.length = 0;
      now += 2000;
      await a.elector.step();
      assert.deepEqual(calls(), ["PUT", "GET", "PUT"]);
      assert.equal(a.elector.isLeader(), true);
      assert.equal(lease(api)?.renewTime, "2026-01-15T12:00:08.000000Z");

      // and after one failed attempt, a read first again
      api.failNextRequests(2);
      now += 2000;
      await a.elector.step();
      api.requests.length = 0;
      now += 2000;
      await a.elector.step();
      assert.deepEqual(calls(), ["GET", "PUT"]);
      assert.equal(lease(api)?.renewTime, "2026-01-15T12:00:12.000000Z");
      assert.deepEqual(a.calls, ["started"]);
    });
  });

  it("lets only one of two racing candidates win (resourceVersion conflict)", async () => {
    await withApi(async (api, kc) => {
      let now = T0;
      const old = candidate(kc, "pod-old", () => now);
      await old.elector.step();
      const a = candidate(kc, "pod-a", () => now);
      const b = candidate(kc, "pod-b", () => now);
      await Promise.all([a.elector.step(), b.elector.step()]);
      now += 15_000;
      await Promise.all([a.elector.step(), b.elector.step()]);
      assert.equal([a, b].filter((c) => c.elector.isLeader()).length, 1);
      const winner = a.elector.isLeader() ? "pod-a" : "pod-b";
      assert.equal(lease(api)?.holderIdentity, winner);
      assert.equal(lease(api)?.leaseTransitions, 1);
    });
  });

  it("steps down when it cannot renew within the renew deadline", async () => {
    await withApi(async (api, kc) => {
      let now = T0;
      const a = candidate(kc, "pod-a", () => now);
      await a.elector.step();
      api.failNextRequests(100);
      now += 9_999;
      await a.elector.step();
      assert.equal(a.elector.isLeader(), true);
      now += 1;
      await a.elector.step();
      assert.equal(a.elector.isLeader(), false);
      assert.deepEqual(a.calls, ["started", "stopped"]);
      api.failNextRequests(0);
      now += 2000;
      await a.elector.step();
      assert.deepEqual(a.calls, ["started", "stopped", "started"]);
    });
  });

  it("campaigns on a timer: a leader that stops renewing is replaced", async () => {
    await withApi(async (api, kc) => {
      // the clock runs 100 times faster than real time: 15 s of lease pass in 150 ms
      const start = Date.now();
      const now = () => T0 + (Date.now() - start) * 100;
      // the retry timer runs in real time: 20 ms
      const a = candidate(kc, "pod-a", now, { retryPeriodSeconds: 0.02, releaseOnStop: false });
      a.elector.start();
      await waitFor("a to lead", () => a.elector.isLeader());
      const b = candidate(kc, "pod-b", now, { retryPeriodSeconds: 0.02 });
      b.elector.start();
      await new Promise((r) => setTimeout(r, 60));
      assert.equal(b.elector.isLeader(), false);
      await a.elector.stop();
      assert.deepEqual(a.calls, ["started", "stopped"]);
      assert.equal(lease(api)?.holderIdentity, "pod-a");
      await waitFor("b to lead", () => b.elector.isLeader());
      await b.elector.stop();
      assert.deepEqual(b.calls, ["started", "stopped"]);
      // released on stop: no holder, so the next candidate need not wait
      assert.equal(lease(api)?.holderIdentity, undefined);
      assert.equal(lease(api)?.leaseDurationSeconds, 1);
    });
  });

  it("takes over at once from a leader that released the lease", async () => {
    await withApi(async (api, kc) => {
      const now = T0;
      const a = candidate(kc, "pod-a", () => now);
      const b = candidate(kc, "pod-b", () => now);
      await a.elector.step();
      await b.elector.step();
      assert.equal(b.elector.isLeader(), false);
      a.elector.start();
      await a.elector.stop();
      await b.elector.step();
      assert.equal(b.elector.isLeader(), true);
      assert.equal(lease(api)?.holderIdentity, "pod-b");
      assert.equal(lease(api)?.leaseTransitions, 1);
    });
  });

  it("keeps campaigning when a leadership callback throws, with no unhandled rejection", async () => {
    await withApi(async (api, kc) => {
      const rejections: string[] = [];
      const listener = (reason: unknown): void => void rejections.push(String(reason));
      process.on("unhandledRejection", listener);
      const logs: string[] = [];
      const renewals: unknown[] = [];
      let clock = T0;
      const a = candidate(kc, "pod-a", () => (clock += 1000), {
        retryPeriodSeconds: 0.02,
        logger: (level, message) => logs.push(`${level}: ${message}`),
        onStartedLeading: () => {
          throw new Error("controllers failed to start");
        },
        onStoppedLeading: () => {
          throw new Error("controllers failed to stop");
        },
      });
      try {
        a.elector.start();
        await waitFor("three renewals", () => {
          const t = lease(api)?.renewTime;
          if (t !== undefined && t !== renewals.at(-1)) renewals.push(t);
          return renewals.length >= 3;
        });
        assert.equal(a.elector.isLeader(), true);
        await a.elector.stop();
        await new Promise((r) => setTimeout(r, 50));
      } finally {
        process.off("unhandledRejection", listener);
      }
      assert.deepEqual(rejections, []);
      assert.equal(a.elector.isLeader(), false);
      assert.deepEqual(logs.filter((l) => l.startsWith("error")), [
        "error: onStartedLeading of pod-a failed: controllers failed to start",
        "error: onStoppedLeading of pod-a failed: controllers failed to stop",
      ]);
    });
  });

  it("gives up a Lease request that gets no answer after the request timeout", async () => {
    await withApi(async (api, kc) => {
      const logs: string[] = [];
      const http = new KubeHttp(kc, { requestTimeoutMs: 200 });
      const a = candidate(kc, "pod-a", () => T0, {
        http,
        logger: (level, message) => logs.push(`${level}: ${message}`),
      });
      try {
        api.stallNextRequests(1);
        const started = Date.now();
        await a.elector.step();
        assert.equal(Date.now() - started < 2000, true);
        assert.equal(a.elector.isLeader(), false);
        assert.deepEqual(logs, [
          "warn: leader election on lease kube-system/hpa-metrics-adapter: GET /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/hpa-metrics-adapter: request timed out after 200ms",
        ]);
        await a.elector.step();
        assert.equal(a.elector.isLeader(), true);
      } finally {
        await http.close();
      }
    });
  });

  it("rejects timings client-go rejects", () => {
    const kc = parseKubeconfig(fakeKubeconfig("http://127.0.0.1:1"));
    const base = { kubeConfig: kc, namespace: "n", name: "l", identity: "me" };
    assert.throws(
      () => new LeaseLeaderElector({ ...base, leaseDurationSeconds: 10 }),
      /^Error: invalid leader election timing: lease duration 10s must be greater than renew deadline 10s$/,
    );
    assert.throws(
      () => new LeaseLeaderElector({ ...base, retryPeriodSeconds: 10 }),
      /renew deadline 10s must be greater than retry period 10s/,
    );
    assert.throws(
      () => new LeaseLeaderElector({ ...base, identity: "" }),
      /identity must not be empty/,
    );
  });
});

describe("InMemoryLeaderElector", () => {
  it("leads from start to stop", async () => {
    const calls: string[] = [];
    const e = new InMemoryLeaderElector({
      onStartedLeading: () => calls.push("started"),
      onStoppedLeading: () => calls.push("stopped"),
    });
    assert.equal(e.isLeader(), false);
    e.start();
    e.start();
    assert.equal(e.isLeader(), true);
    await e.stop();
    await e.stop();
    assert.equal(e.isLeader(), false);
    assert.deepEqual(calls, ["started", "stopped"]);
  });
});
