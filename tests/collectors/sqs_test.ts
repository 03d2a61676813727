import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  DeleteQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { createSqsQueueLengthFactory, type SqsFactoryOptions } from "../../src/collectors/sqs.ts";
import type { Collector } from "../../src/collectors/types.ts";
import { startFauxqs } from "../fakes/fauxqs_server.ts";
import type { FauxqsServer } from "../fakes/fauxqs_server.ts";
import { startRecordingServer } from "../fakes/recording_server.ts";
import type { FakeAnswer, RecordingServer } from "../fakes/recording_server.ts";
import { context, externalPlan, NOW, rejection, thrown } from "./backend_support.ts";

const REGION = "eu-central-1";
const ENV_KEYS = [
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_ENDPOINT_URL",
  "AWS_ENDPOINT_URL_SQS",
] as const;

describe("sqs-queue-length collector against fauxqs", () => {
  let sqs: FauxqsServer;
  let admin: SQSClient;
  let fake: RecordingServer;
  let fakeAnswer: FakeAnswer = { status: 200, body: "" };
  const savedEnv: Record<string, string | undefined> = {};
  before(async () => {
    for (const k of ENV_KEYS) savedEnv[k] = process.env[k];
    // The collector takes credentials from the SDK's default chain: here, the environment.
    process.env.AWS_ACCESS_KEY_ID = "test";
    process.env.AWS_SECRET_ACCESS_KEY = "test";
    delete process.env.AWS_ENDPOINT_URL;
    delete process.env.AWS_ENDPOINT_URL_SQS;
    sqs = await startFauxqs();
    admin = new SQSClient({
      region: REGION,
      endpoint: sqs.endpoint,
      credentials: { accessKeyId: "test", secretAccessKey: "test" },
    });
    fake = await startRecordingServer(() => fakeAnswer);
  });
  after(async () => {
    admin?.destroy();
    await sqs?.stop();
    await fake?.close();
    for (const k of ENV_KEYS) {
      if (savedEnv[k] === undefined) delete process.env[k];
      else process.env[k] = savedEnv[k];
    }
  });

  const options = (extra: SqsFactoryOptions = {}): SqsFactoryOptions => ({
    regions: [REGION, "eu-west-1"],
    endpointUrl: sqs.endpoint,
    ...extra,
  });
  /** A collector of `config` by a factory with the default options over `extra`. */
  const make = (config: Record<string, string>, extra?: SqsFactoryOptions): Collector =>
    createSqsQueueLengthFactory(options(extra)).create({
      plan: externalPlan("sqs-queue-length", config),
    });
  /** Collectors of one factory (one SQS client per region). */
  const factoryOf = (extra?: SqsFactoryOptions): (config: Record<string, string>) => Collector => {
    const factory = createSqsQueueLengthFactory(options(extra));
    return (config) => factory.create({ plan: externalPlan("sqs-queue-length", config) });
  };
  const queue = async (name: string): Promise<string> =>
    (await admin.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl!;
  const send = async (url: string, n: number, delaySeconds = 0): Promise<void> => {
    for (let i = 0; i < n; i++) {
      await admin.send(
        new SendMessageCommand({ QueueUrl: url, MessageBody: `m${i}`, DelaySeconds: delaySeconds }),
      );
    }
  };

  it("follows the queue length through sends and receives, counting in-flight messages when asked", async () => {
    const make = factoryOf();
    const url = await queue("orders");
    const visible = make({ "queue-name": "orders", region: REGION });
    const withInFlight = make({
      "queue-name": "orders",
      region: REGION,
      "include-in-flight": "true",
    });
    const value = async (c: Collector): Promise<number> => {
      const r = await c.collect(context());
      assert.equal(r.samples.length, 1);
      assert.equal(r.samples[0].timestamp, NOW);
      return r.samples[0].value;
    };
    assert.equal(await value(visible), 0);
    await send(url, 3);
    assert.equal(await value(visible), 3);
    const got = await admin.send(
      new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 1, VisibilityTimeout: 60 }),
    );
    assert.equal(got.Messages?.length, 1);
    assert.equal(await value(visible), 2);
    assert.equal(await value(withInFlight), 3);
    await admin.send(
      new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: got.Messages![0].ReceiptHandle }),
    );
    assert.equal(await value(withInFlight), 2);
  });

  it("adds delayed messages when include-delayed is true", async () => {
    const make = factoryOf();
    const url = await queue("delayed");
    await send(url, 1);
    await send(url, 2, 120);
    const config = { "queue-name": "delayed", region: REGION };
    assert.equal((await make(config).collect(context())).samples[0].value, 1);
    assert.equal(
      (await make({ ...config, "include-delayed": "true" }).collect(context())).samples[0].value,
      3,
    );
  });

  it("reports a missing queue, and finds it once it is created again", async () => {
    const c = make({ "queue-name": "comes-and-goes", region: REGION });
    assert.equal(
      await rejection(c.collect(context())),
      `sqs queue "comes-and-goes" does not exist in region ${REGION}`,
    );
    const url = await queue("comes-and-goes");
    await send(url, 2);
    assert.equal((await c.collect(context())).samples[0].value, 2);
    await admin.send(new DeleteQueueCommand({ QueueUrl: url }));
    assert.equal(
      await rejection(c.collect(context())),
      `sqs queue "comes-and-goes" does not exist in region ${REGION}`,
    );
    await queue("comes-and-goes");
    assert.equal((await c.collect(context())).samples[0].value, 0);
  });

  it("takes the endpoint from AWS_ENDPOINT_URL when --aws-endpoint-url is unset", async () => {
    const url = await queue("from-env");
    await send(url, 4);
    process.env.AWS_ENDPOINT_URL = sqs.endpoint;
    try {
      const c = make({ "queue-name": "from-env", region: REGION }, { endpointUrl: null });
      assert.equal((await c.collect(context())).samples[0].value, 4);
    } finally {
      delete process.env.AWS_ENDPOINT_URL;
    }
  });

  const configErrors: [string, Record<string, string>, SqsFactoryOptions, string][] = [
    [
      "a region outside --aws-region",
      { "queue-name": "q", region: "us-east-1" },
      {},
      `region "us-east-1" of metric queue-length is not configured: want one of --aws-region (${REGION}, eu-west-1)`,
    ],
    [
      "any region when --aws-region is empty",
      { "queue-name": "q", region: REGION },
      { regions: [] },
      `region "${REGION}" of metric queue-length is not configured: want one of --aws-region (none given)`,
    ],
    [
      "a missing queue-name",
      { region: REGION },
      {},
      "External metric `queue-length` of HPA default/app needs matchLabels.queue-name or annotation metric-config.external.queue-length.sqs-queue-length/queue-name",
    ],
    [
      "a missing region",
      { "queue-name": "q" },
      {},
      "External metric `queue-length` of HPA default/app needs matchLabels.region or annotation metric-config.external.queue-length.sqs-queue-length/region",
    ],
    [
      "an invalid queue-name",
      { "queue-name": "a/b", region: REGION },
      {},
      'invalid queue-name "a/b" for External metric `queue-length` of HPA default/app (annotation metric-config.external.queue-length.sqs-queue-length/queue-name): want up to 80 letters, digits, hyphens and underscores, with .fifo for a FIFO queue',
    ],
    [
      "an include-in-flight that is not a boolean",
      { "queue-name": "q", region: REGION, "include-in-flight": "yes" },
      {},
      'invalid include-in-flight "yes" for External metric `queue-length` of HPA default/app (annotation metric-config.external.queue-length.sqs-queue-length/include-in-flight): want true or false',
    ],
  ];
  for (const [name, config, extra, want] of configErrors) {
    it(`refuses ${name}`, () => {
      assert.equal(thrown(() => make(config, extra)), want);
    });
  }

  const broken: [string, FakeAnswer, RegExp][] = [
    [
      "a garbage answer",
      {
        status: 200,
        headers: { "content-type": "application/x-amz-json-1.0" },
        body: "<<<garbage",
      },
      /^failed to get the URL of sqs queue "q" in region eu-central-1: /,
    ],
    [
      "a 500 answer",
      {
        status: 500,
        headers: { "content-type": "application/x-amz-json-1.0" },
        body: '{"__type":"InternalError","message":"boom"}',
      },
      /^failed to get the URL of sqs queue "q" in region eu-central-1: InternalError: boom$/,
    ],
  ];
  for (const [name, answer, want] of broken) {
    it(`reports ${name} from the SQS endpoint as an error`, async () => {
      fakeAnswer = answer;
      const c = make({ "queue-name": "q", region: REGION }, {
        clientConfig: { maxAttempts: 1 },
        endpointUrl: fake.url,
      });
      assert.match(await rejection(c.collect(context())), want);
    });
  }

  it("gives up on an endpoint that never answers when the collection times out", async () => {
    fakeAnswer = { hang: true };
    const c = make({ "queue-name": "q", region: REGION }, {
      clientConfig: { maxAttempts: 1 },
      endpointUrl: fake.url,
    });
    const start = Date.now();
    assert.equal(
      await rejection(c.collect(context(AbortSignal.timeout(300)))),
      'failed to get the URL of sqs queue "q" in region eu-central-1: timed out',
    );
    assert.ok(Date.now() - start < 5000);
  });
});
