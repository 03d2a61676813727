/**
 * The KEDA aws-sqs-queue and influxdb trigger collectors (issue 47): the SQS one against the
 * fauxqs emulator (KEDA's GetQueueAttributes on the trigger's queue URL, with the trigger's own
 * access keys), the InfluxDB one against the v2 query API's protocol fake (the first record's
 * `_value`, the org and the trigger's token).
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { CreateQueueCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import {
  kedaCollectorFactories,
  type KedaResolvedTrigger,
  TLS_CLIENT_IDLE_MS,
  TlsClients,
} from "../../src/collectors/keda.ts";
import type { MetricPlan } from "../../src/core/types.ts";
import type { ParsedValue } from "../../src/core/keda/typed_config.ts";
import { startFauxqs } from "../fakes/fauxqs_server.ts";
import type { FauxqsServer } from "../fakes/fauxqs_server.ts";
import { startInfluxFake } from "../fakes/influxdb_v2.ts";
import type { InfluxFake } from "../fakes/influxdb_v2.ts";
import { context, NOW } from "./backend_support.ts";

function plan(type: string): MetricPlan {
  return {
    hpa: { namespace: "shop", name: "keda-hpa-web" },
    index: 0,
    metricType: "External",
    metricName: "s0-x",
    metricSelector: { matchLabels: { "scaledobject.keda.sh/name": "web" } },
    target: { type: "AverageValue", averageValue: "5" },
    describedObject: null,
    scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
    collector: `keda-${type}`,
    intervalSeconds: 10,
    perReplica: false,
    minPodReadyAgeSeconds: 0,
    config: { "keda-scaled-object": "shop/web", "keda-trigger": "0", "keda-params": "d1" },
    error: null,
  };
}

function collectorOf(type: string, values: Record<string, ParsedValue>, extra = {}) {
  const trigger: KedaResolvedTrigger = { type, values, digest: "d1" };
  const factory = kedaCollectorFactories({
    triggers: { trigger: (so, i) => (so === "shop/web" && i === 0 ? trigger : undefined) },
    ...extra,
  }).find((f) => f.type === `keda-${type}`)!;
  return factory.create({ plan: plan(type) });
}

describe("keda-aws-sqs-queue against fauxqs", () => {
  let sqs: FauxqsServer;
  let admin: SQSClient;
  before(async () => {
    sqs = await startFauxqs();
    admin = new SQSClient({
      region: "eu-central-1",
      endpoint: sqs.endpoint,
      credentials: { accessKeyId: "test", secretAccessKey: "test" },
    });
  });
  after(async () => {
    admin?.destroy();
    await sqs?.stop();
  });

  it("sums the visible and in-flight messages of the trigger's queue URL", async () => {
    const url = (await admin.send(new CreateQueueCommand({ QueueName: "jobs" }))).QueueUrl!;
    for (let i = 0; i < 3; i++) {
      await admin.send(new SendMessageCommand({ QueueUrl: url, MessageBody: `m${i}` }));
    }
    const values = {
      queueURL: url,
      awsRegion: "eu-central-1",
      awsEndpoint: sqs.endpoint,
      scaleOnInFlight: true,
      scaleOnDelayed: false,
      awsAccessKeyID: "test",
      awsSecretAccessKey: "test",
    };
    const got = await collectorOf("aws-sqs-queue", values).collect(context());
    assert.deepEqual(got, { samples: [{ value: 3, timestamp: NOW }] });
  });
});

describe("keda-influxdb against the v2 query API", () => {
  let fake: InfluxFake;
  before(async () => {
    fake = await startInfluxFake({
      org: "acme",
      token: "T0k",
      answer: () => ({
        blocks: [{
          columns: [{ label: "_value", datatype: "double" }],
          tables: [[["41.5"]], [["7"]]],
        }],
      }),
    });
  });
  after(async () => {
    await fake.close();
  });

  it("reads the first record's _value with the trigger's org and token", async () => {
    const got = await collectorOf("influxdb", {
      serverURL: fake.url,
      authToken: "T0k",
      organizationName: "acme",
      influxVersion: "2",
      query: 'from(bucket: "b") |> range(start: -1m)',
    }).collect(context());
    assert.deepEqual(got, { samples: [{ value: 41.5, timestamp: NOW }] });
    assert.equal(fake.queries.at(-1)!.authorization, "Token T0k");
    assert.equal(fake.queries.at(-1)!.org, "acme");
    assert.equal(fake.queries.at(-1)!.query, 'from(bucket: "b") |> range(start: -1m)');
  });
});

describe("a trigger's TLS clients", () => {
  it("closes the client of a setting unused for ten minutes (a rotated Secret's), and no other", () => {
    const tls = new TlsClients();
    const plain = (() => Promise.reject(new Error("unused"))) as unknown as typeof fetch;
    const minute = 60_000;
    assert.equal(tls.fetchFor(null, plain, 0), plain);
    assert.equal(tls.size, 0);
    tls.fetchFor({ ca: "old-ca" }, plain, 0);
    tls.fetchFor({ ca: "new-ca" }, plain, 0);
    assert.equal(tls.size, 2);
    // the old setting idle 9 minutes: kept
    tls.fetchFor({ ca: "new-ca" }, plain, 9 * minute);
    assert.equal(tls.size, 2);
    // idle for the whole idle time: closed; the one in use stays
    tls.fetchFor({ ca: "new-ca" }, plain, TLS_CLIENT_IDLE_MS);
    assert.equal(tls.size, 1);
    tls.fetchFor({ ca: "new-ca" }, plain, TLS_CLIENT_IDLE_MS + 30 * minute);
    assert.equal(tls.size, 1);
  });
});
