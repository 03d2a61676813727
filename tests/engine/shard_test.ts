/**
 * Sharding inside the process (issue 29): two engines on the same HPAs split the queries by
 * rendezvous hashing and push what they write to each other (ShardReplicator), so that each
 * query is collected once per interval and both stores serve every value.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/cluster/types.ts";
import { createCollectorRegistry } from "../../src/collectors/registry.ts";
import type { CollectContext, Collector, CollectorFactory } from "../../src/collectors/types.ts";
import { parseSelector } from "../../src/core/kubernetes/label_selector.ts";
import { SHARD_PUSH_SPLIT_BYTES, type ShardMember, ShardRing } from "../../src/core/shard.ts";
import { Engine } from "../../src/engine/engine.ts";
import { memoryLogger } from "../../src/engine/logger.ts";
import {
  type PeerRecordSink,
  type ShardBatch,
  ShardReplicator,
} from "../../src/engine/shard_replication.ts";
import { MetricStore } from "../../src/store/store.ts";
import { ManualTimers, MemoryCluster, RecordingWriter, settle } from "./support.ts";

/** Each endpoint host answers its number (q-7 answers 7); calls are counted per host and replica. */
function counting(calls: Map<string, number>, replica: string): CollectorFactory {
  return {
    type: "json-path",
    metricTypes: ["External"],
    create({ plan }): Collector {
      const host = new URL(plan.config["endpoint"]).hostname.split(".")[0];
      return {
        queryKey: `fake|${host}`,
        collect(ctx: CollectContext) {
          calls.set(`${replica} ${host}`, (calls.get(`${replica} ${host}`) ?? 0) + 1);
          return Promise.resolve({
            samples: [{ value: Number(host.slice(2)), timestamp: ctx.now() }],
          });
        },
      };
    },
  };
}

function hpa(i: number): KubeObject {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: {
      name: `h${i}`,
      namespace: "default",
      annotations: {
        [`metric-config.external.m${i}.json-path/endpoint`]: `http://q-${i}.example/`,
        [`metric-config.external.m${i}.json-path/json-key`]: "$.n",
        [`metric-config.external.m${i}.json-path/interval`]: "10s",
      },
    },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: `h${i}` },
      minReplicas: 1,
      maxReplicas: 10,
      metrics: [{
        type: "External",
        external: {
          metric: { name: `m${i}`, selector: { matchLabels: { type: "json-path" } } },
          target: { type: "AverageValue", averageValue: "10" },
        },
      }],
    },
  };
}

interface Replica {
  id: string;
  store: MetricStore;
  engine: Engine;
  replicator: ShardReplicator;
  ring: { current: ShardRing };
  received: number;
}

const N = 40;

function cluster(): MemoryCluster {
  const c = new MemoryCluster();
  for (let i = 0; i < N; i++) c.set("HorizontalPodAutoscaler", hpa(i));
  return c;
}

function replicas(
  ids: string[],
  timers: ManualTimers,
  calls: Map<string, number>,
  /** Whether the network carries a push from one replica to another. */
  link: (from: string, to: string) => boolean = () => true,
): Replica[] {
  const all: Replica[] = [];
  const send = (peer: ShardMember, body: string): Promise<void> => {
    const batch = JSON.parse(body) as ShardBatch;
    const to = all.find((r) => r.id === peer.identity);
    if (!to || !link(batch.from, peer.identity)) {
      return Promise.reject(new Error(`connection refused (${peer.address})`));
    }
    // through JSON, as on the wire
    const problem = to.replicator.receive(
      batch,
      (key, outcome, at) => to.engine.peerRecord(to.store, key, outcome, at),
    );
    to.received += batch.records.length;
    return problem === null ? Promise.resolve() : Promise.reject(new Error(problem));
  };
  for (const id of ids) {
    const store = new MetricStore({ ttlSeconds: 900 });
    const ring = { current: new ShardRing(ids) };
    const replicator = new ShardReplicator({
      identity: id,
      send,
      setTimer: timers.setTimer,
      clearTimer: timers.clearTimer,
    });
    const engine = new Engine({
      cluster: cluster(),
      store: replicator.wrap(store),
      registry: createCollectorRegistry([counting(calls, id)]),
      owns: (key) => ring.current.owns(id, key),
      now: timers.clock,
      setTimer: timers.setTimer,
      clearTimer: timers.clearTimer,
      random: () => 0.5,
      logger: memoryLogger(),
    });
    all.push({ id, store, engine, replicator, ring, received: 0 });
  }
  const members = ids.map((identity) => ({ identity, address: `https://${identity}:6443` }));
  for (const r of all) r.replicator.setMembers(members);
  return all;
}

function value(r: Replica, i: number, now: number): number | string {
  const res = r.store.lookupExternal(
    { namespace: "default", metricName: `m${i}`, selector: parseSelector("") },
    now,
  );
  return "items" in res ? res.items[0].value : res.miss.reason;
}

function callsOf(calls: Map<string, number>, replica: string): number {
  let n = 0;
  for (const [k, v] of calls) if (k.startsWith(`${replica} `)) n += v;
  return n;
}

describe("sharded engines", () => {
  it("collect each query once per interval between them, and both serve every value", async () => {
    const timers = new ManualTimers();
    const calls = new Map<string, number>();
    const [a, b] = replicas(["r-a", "r-b"], timers, calls);
    await a.engine.start();
    await b.engine.start();
    await settle();
    await timers.advance(600); // one flush of the pushes
    const share = a.engine.shardShare();
    assert.equal(share.total, N);
    assert.equal(share.owned + b.engine.shardShare().owned, N);
    assert.ok(share.owned > 5 && share.owned < 35, `r-a owns ${share.owned} of ${N}`);
    // every query once, by its owner
    for (let i = 0; i < N; i++) {
      const owner = a.ring.current.owner(`fake|q-${i}`);
      assert.equal(calls.get(`${owner} q-${i}`), 1, `q-${i} collected by ${owner}`);
      assert.equal(calls.get(`${owner === "r-a" ? "r-b" : "r-a"} q-${i}`), undefined);
      assert.equal(value(a, i, timers.now), i, `m${i} on r-a`);
      assert.equal(value(b, i, timers.now), i, `m${i} on r-b`);
    }
    assert.equal(a.received + b.received, N);
    // three intervals later: three more collections of each query in all
    await timers.advance(30_000);
    assert.equal(callsOf(calls, "r-a") + callsOf(calls, "r-b"), N * 4);
    assert.equal(a.replicator.stats().sendFailures, 0);
    await a.engine.stop();
    await b.engine.stop();
  });

  it("stops serving the values nobody refreshes when cut off from the peer, and serves them again after", async () => {
    const timers = new ManualTimers();
    const calls = new Map<string, number>();
    let cut = false;
    const [a, b] = replicas(["r-a", "r-b"], timers, calls, (from) => !(cut && from === "r-b"));
    await a.engine.start();
    await b.engine.start();
    await settle();
    await timers.advance(600);
    const bs = Array.from({ length: N }, (_, i) => i).filter((i) =>
      a.ring.current.owner(`fake|q-${i}`) === "r-b"
    );
    const as = Array.from({ length: N }, (_, i) => i).filter((i) => !bs.includes(i));
    cut = true;
    // 10 s interval, 4 s lease: withdrawn once 24 s passed without news
    await timers.advance(23_000);
    assert.equal(a.engine.withdrawUnheard(a.store, 4_000), 0);
    assert.equal(value(a, bs[0], timers.now), bs[0]);
    await timers.advance(2_000);
    assert.equal(a.engine.withdrawUnheard(a.store, 4_000), bs.length);
    assert.equal(a.engine.withdrawUnheard(a.store, 4_000), 0, "once");
    const reason = String(value(a, bs[0], timers.now));
    assert.match(
      reason,
      /^last collection failed with "no news of this query from the replica that collects it since 2024-03-04T10:00:0\d+Z"/,
    );
    // its own values stay; r-b (which still hears r-a) serves everything
    for (const i of as) assert.equal(value(a, i, timers.now), i);
    for (let i = 0; i < N; i++) assert.equal(value(b, i, timers.now), i);
    assert.equal(b.engine.withdrawUnheard(b.store, 4_000), 0);
    // healed: the next pushes bring the values back
    cut = false;
    await timers.advance(10_500);
    for (const i of bs) assert.equal(value(a, i, timers.now), i);
    await a.engine.stop();
    await b.engine.stop();
  });

  it("takes over the share of a replica that left at once, and gives a new one everything", async () => {
    const timers = new ManualTimers();
    const calls = new Map<string, number>();
    const [a, b] = replicas(["r-a", "r-b"], timers, calls);
    await a.engine.start();
    await b.engine.start();
    await settle();
    await timers.advance(600);
    const bShare = b.engine.shardShare().owned;
    await b.engine.stop();
    const before = callsOf(calls, "r-a");
    // r-b's Lease is gone: r-a owns everything and collects r-b's queries now
    a.ring.current = new ShardRing(["r-a"]);
    a.replicator.setMembers([{ identity: "r-a", address: "https://r-a:6443" }]);
    assert.equal(a.engine.reshard(), bShare);
    await settle();
    assert.equal(callsOf(calls, "r-a") - before, bShare);
    assert.equal(a.engine.shardShare().owned, N);
    // a new replica joins: it gets the latest value of every plan r-a wrote, before any
    // collection of its own
    const fresh = new MetricStore({ ttlSeconds: 900 });
    const c = new Engine({
      cluster: cluster(),
      store: fresh,
      registry: createCollectorRegistry([counting(calls, "r-c")]),
      owns: () => false,
      now: timers.clock,
      setTimer: timers.setTimer,
      clearTimer: timers.clearTimer,
      logger: memoryLogger(),
    });
    await c.start(); // plans every HPA (the store knows the plans), collects nothing
    const batches: ShardBatch[] = [];
    const joining = new ShardReplicator({
      identity: "r-a",
      send: (_peer, body) => {
        batches.push(JSON.parse(body));
        return Promise.resolve();
      },
    });
    // (the same records r-a holds, through a second replicator that saw them written)
    const seen = joining.wrap(new MetricStore({ ttlSeconds: 900 }));
    for (let i = 0; i < 3; i++) seen.recordSuccess(`k${i}`, [{ value: i, timestamp: 1 }], 1);
    joining.setMembers([{ identity: "r-c", address: "https://r-c:6443" }]);
    await joining.flush();
    assert.equal(batches.length, 1);
    assert.deepEqual(batches[0].records.map((r) => r.k), ["k0", "k1", "k2"]);
    a.replicator.setMembers([
      { identity: "r-a", address: "https://r-a:6443" },
      { identity: "r-c", address: "https://r-c:6443" },
    ]);
    await a.replicator.flush();
    // r-c is not among the replicas the test's send knows: refused, logged, counted
    assert.equal(a.replicator.stats().sendFailures, 1);
    assert.equal(callsOf(calls, "r-c"), 0);
    await a.engine.stop();
    await c.stop();
  });
});

describe("a formula over inputs that two replicas collect", () => {
  it("is computed on both from all its inputs", async () => {
    const timers = new ManualTimers();
    const calls = new Map<string, number>();
    const formula: KubeObject = {
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      metadata: {
        name: "f",
        namespace: "default",
        annotations: {
          "metric-config.external.f.formula/expression": "a * 10 + b",
          "metric-config.external.a.json-path/endpoint": "http://q-4.example/",
          "metric-config.external.a.json-path/json-key": "$.n",
          "metric-config.external.b.json-path/endpoint": "http://q-7.example/",
          "metric-config.external.b.json-path/json-key": "$.n",
        },
      },
      spec: {
        scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "f" },
        minReplicas: 1,
        maxReplicas: 10,
        metrics: [{
          type: "External",
          external: {
            metric: { name: "f", selector: { matchLabels: { type: "formula" } } },
            target: { type: "AverageValue", averageValue: "10" },
          },
        }],
      },
    };
    const all: Replica[] = [];
    for (const id of ["r-a", "r-b"]) {
      const store = new MetricStore({ ttlSeconds: 900 });
      const c = new MemoryCluster();
      c.set("HorizontalPodAutoscaler", formula);
      const replicator = new ShardReplicator({
        identity: id,
        send: (peer, body) => {
          const to = all.find((r) => r.id === peer.identity)!;
          const problem = to.replicator.receive(
            JSON.parse(body),
            (key, outcome, at) => to.engine.peerRecord(to.store, key, outcome, at),
          );
          return problem === null ? Promise.resolve() : Promise.reject(new Error(problem));
        },
        setTimer: timers.setTimer,
        clearTimer: timers.clearTimer,
      });
      // r-a collects input a (q-4), r-b input b (q-7)
      const engine = new Engine({
        cluster: c,
        store: replicator.wrap(store),
        registry: createCollectorRegistry([counting(calls, id)]),
        owns: (key) => (key === "fake|q-4") === (id === "r-a"),
        now: timers.clock,
        setTimer: timers.setTimer,
        clearTimer: timers.clearTimer,
        random: () => 0.5,
        logger: memoryLogger(),
      });
      all.push({
        id,
        store,
        engine,
        replicator,
        ring: { current: new ShardRing([id]) },
        received: 0,
      });
    }
    const members = all.map((r) => ({ identity: r.id, address: `https://${r.id}:6443` }));
    for (const r of all) r.replicator.setMembers(members);
    for (const r of all) await r.engine.start();
    await settle();
    await timers.advance(600);
    assert.deepEqual([...calls.entries()].sort(), [["r-a q-4", 1], ["r-b q-7", 1]]);
    for (const r of all) {
      const res = r.store.lookupExternal(
        { namespace: "default", metricName: "f", selector: parseSelector("type=formula") },
        timers.now,
      );
      assert.deepEqual(
        "items" in res ? res.items.map((i) => i.value) : res.miss.reason,
        [47],
        r.id,
      );
    }
    for (const r of all) await r.engine.stop();
  });
});

describe("Engine.peerRecord", () => {
  it("writes a peer's failure of a query it does not own and reports it as a Warning event, once per text", async () => {
    const timers = new ManualTimers();
    const c = cluster();
    const writer = new RecordingWriter(c);
    const store = new MetricStore({ ttlSeconds: 900 });
    const engine = new Engine({
      cluster: c,
      store,
      registry: createCollectorRegistry([counting(new Map(), "leader")]),
      owns: (key) => key !== "fake|q-3",
      now: timers.clock,
      setTimer: timers.setTimer,
      clearTimer: timers.clearTimer,
      logger: memoryLogger(),
      writer,
      isLeader: () => true,
    });
    await engine.start();
    await settle();
    const key = "default/h3/0/External/m3";
    engine.peerRecord(store, key, { error: "connection refused" }, timers.now);
    engine.peerRecord(store, key, { error: "connection refused" }, timers.now + 1000);
    await settle();
    const warnings = () =>
      writer.events.filter((e) => e.name === "default/h3").map((e) =>
        `${e.event.reason}: ${e.event.message}`
      );
    assert.deepEqual(warnings(), [
      "CreateNewMetricsCollector: failed to collect External metric m3: connection refused",
    ]);
    assert.equal(
      value({ store } as Replica, 3, timers.now),
      'last collection failed with "connection refused" at 2024-03-04T10:00:01Z',
    );
    // recovered on the peer: the state clears, and the same failure later is reported again
    engine.peerRecord(store, key, { samples: [{ value: 3, timestamp: timers.now }] }, timers.now);
    assert.equal(value({ store } as Replica, 3, timers.now), 3);
    engine.peerRecord(store, key, { error: "connection refused" }, timers.now + 2000);
    await settle();
    assert.equal(warnings().length, 2);
    // a plan of a query this replica owns: its own collection reports, not the peer
    engine.peerRecord(store, "default/h4/0/External/m4", { error: "boom" }, timers.now);
    await settle();
    assert.equal(writer.events.filter((e) => e.name === "default/h4").length, 0);
    await engine.stop();
  });
});

describe("ShardReplicator.receive", () => {
  const store = () => {
    const writes: string[] = [];
    const sink: PeerRecordSink = (k, o, at) => {
      writes.push(
        "error" in o
          ? `fail ${k} ${o.error} ${at}`
          : `ok ${k} ${o.samples.map((x) => x.value).join(",")} ${at}${
            o.warnings ? ` ${o.warnings.join(";")}` : ""
          }`,
      );
    };
    return Object.assign(sink, { writes });
  };
  const r = new ShardReplicator({ identity: "me", send: () => Promise.resolve() });

  it("applies successes and failures, with warnings", () => {
    const s = store();
    assert.equal(
      r.receive({
        v: 1,
        from: "peer",
        records: [
          { k: "ns/h#0/External/m", at: 5, s: [{ value: 2.5, timestamp: 4 }], w: ["pod p: 404"] },
          { k: "ns/h#1/External/n", at: 6, e: "connection refused" },
        ],
      }, s),
      null,
    );
    assert.deepEqual(s.writes, [
      "ok ns/h#0/External/m 2.5 5 pod p: 404",
      "fail ns/h#1/External/n connection refused 6",
    ]);
  });

  it("refuses what does not fit, naming the record and the field, and applies the rest", () => {
    const s = store();
    assert.equal(r.receive([], s), "the body is not a JSON object");
    assert.equal(r.receive({ v: 2, records: [] }, s), "unsupported version 2 (want 1)");
    assert.equal(r.receive({ v: 1, records: {} }, s), "records is not an array");
    assert.equal(
      r.receive({
        v: 1,
        from: "peer",
        records: [
          { k: "a", at: 1, s: [{ value: "7", timestamp: 1 }] },
          { k: "b", at: 1, s: [{ value: 1, timestamp: 1, labels: { x: 1 } }] },
          { k: "c", at: 1, s: [{ value: 3, timestamp: 1 }] },
          { k: "d", at: "soon", e: "x" },
        ],
      }, s),
      "3 of 4 records refused; first: record of a: a sample has no numeric value and timestamp",
    );
    assert.deepEqual(s.writes, ["ok c 3 1"]);
  });
});

describe("ShardReplicator pushes", () => {
  it("splits what a joining peer gets into bodies a peer reads, and leaves out a value too large", async () => {
    const bodies: string[] = [];
    const log = memoryLogger();
    const r = new ShardReplicator({
      identity: "r-a",
      send: (_peer, body) => {
        bodies.push(body);
        return Promise.resolve();
      },
      logger: log,
    });
    const store = r.wrap(new MetricStore({ ttlSeconds: 900 }));
    // 3,000 values of about 1 KiB each, and one of 5 MiB (a warning that long)
    const warning = ["w".repeat(1000)];
    for (let i = 0; i < 3000; i++) {
      store.recordSuccess(`k${i}`, [{ value: i, timestamp: 1 }], 1, warning);
    }
    store.recordSuccess("huge", [{ value: 1, timestamp: 1 }], 1, ["h".repeat(5 << 20)]);
    r.setMembers([{ identity: "r-b", address: "https://r-b:6443" }]);
    await r.flush();
    assert.ok(bodies.every((b) => b.length <= SHARD_PUSH_SPLIT_BYTES), "a body over the split");
    const keys = bodies.flatMap((b) => (JSON.parse(b) as ShardBatch).records.map((x) => x.k));
    assert.deepEqual(keys, Array.from({ length: 3000 }, (_, i) => `k${i}`));
    // about 1,060 bytes a record: 988 fit in 1 MiB, so four bodies
    assert.equal(bodies.length, 4);
    assert.deepEqual(r.stats().sendFailures, 1);
    assert.deepEqual(r.stats().recordsSent, 3000);
  });
});

describe("Engine.reconcile of an update", () => {
  it("plans nothing again when only the status changed, and again when an annotation did", async () => {
    const timers = new ManualTimers();
    const c = new MemoryCluster();
    let created = 0;
    const factory = counting(new Map(), "r");
    const registry = createCollectorRegistry([{
      ...factory,
      create(ctx) {
        created++;
        return factory.create(ctx);
      },
    }]);
    const reconciles: boolean[] = [];
    const engine = new Engine({
      cluster: c,
      store: new MetricStore({ ttlSeconds: 900 }),
      registry,
      now: timers.clock,
      setTimer: timers.setTimer,
      clearTimer: timers.clearTimer,
      logger: memoryLogger(),
      onReconcile: (r) => reconciles.push(r.ok),
    });
    const h = hpa(1);
    c.set("HorizontalPodAutoscaler", h);
    await engine.start();
    await settle();
    assert.equal(created, 1);
    // planned again, the plan would be a new object (with the same fingerprint)
    const planned = engine.status()[0].plan;
    for (let i = 2; i < 5; i++) {
      c.set("HorizontalPodAutoscaler", {
        ...h,
        status: { currentReplicas: i, desiredReplicas: i },
      });
    }
    await settle();
    assert.equal(created, 1, "a status update creates no collector");
    assert.equal(engine.status()[0].plan, planned, "a status update plans nothing");
    assert.deepEqual(reconciles, [true, true, true, true], "each update still counts");
    c.set("HorizontalPodAutoscaler", {
      ...h,
      metadata: {
        ...h.metadata,
        annotations: {
          ...h.metadata.annotations,
          "metric-config.external.m1.json-path/endpoint": "http://q-2.example/",
        },
      },
    });
    await settle();
    assert.equal(created, 2, "a new endpoint: a new collector");
    await engine.stop();
  });
});
