/**
 * The KEDA aws-sqs-queue trigger with a role to assume (issue 47, point 3): STS AssumeRole against
 * its protocol fake (tests/fakes/sts.ts), SQS against the fauxqs emulator behind a recording
 * proxy, which shows the access key id and session token each SQS request is signed with.
 */
import { after, before, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CreateQueueCommand, SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import {
  kedaCollectorFactories,
  type KedaCollectorOptions,
  type KedaResolvedTrigger,
} from "../../src/collectors/keda.ts";
import type { Collector } from "../../src/collectors/types.ts";
import { readTrigger, type TriggerContext } from "../../src/core/keda/triggers.ts";
import type { MetricPlan } from "../../src/core/types.ts";
import { startFauxqs } from "../fakes/fauxqs_server.ts";
import type { FauxqsServer } from "../fakes/fauxqs_server.ts";
import { startRecordingServer } from "../fakes/recording_server.ts";
import type { RecordingServer } from "../fakes/recording_server.ts";
import { signingKeyId, startStsFake } from "../fakes/sts.ts";
import type { StsAnswer, StsFake, StsRequest } from "../fakes/sts.ts";
import { context, NOW, rejection } from "./backend_support.ts";

const REGION = "eu-central-1";
const ROLE = "arn:aws:iam::111122223333:role/queue-reader";
const MINUTE = 60_000;

function plan(index: number): MetricPlan {
  return {
    hpa: { namespace: "shop", name: "keda-hpa-web" },
    index,
    metricType: "External",
    metricName: `s${index}-aws-sqs-jobs`,
    metricSelector: { matchLabels: { "scaledobject.keda.sh/name": "web" } },
    target: { type: "AverageValue", averageValue: "5" },
    describedObject: null,
    scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
    collector: "keda-aws-sqs-queue",
    intervalSeconds: 10,
    perReplica: false,
    minPodReadyAgeSeconds: 0,
    config: { "keda-scaled-object": "shop/web", "keda-trigger": String(index), "keda-params": "d" },
    error: null,
  };
}

/** A context whose clock reads `now`. */
function at(now: number) {
  return { ...context(), now: () => now };
}

describe("keda-aws-sqs-queue with a role to assume", () => {
  let sqs: FauxqsServer;
  let proxy: RecordingServer;
  let sts: StsFake;
  let admin: SQSClient;
  let queueUrl = "";
  let issued = 0;
  let stsNow = NOW;
  let answer: (req: StsRequest) => StsAnswer;
  const grant = (): StsAnswer => {
    issued++;
    return {
      accessKeyId: `ASIATEMP${issued}`,
      secretAccessKey: `secret-${issued}`,
      sessionToken: `session-token-${issued}`,
      expiration: stsNow + 15 * MINUTE,
    };
  };

  before(async () => {
    sqs = await startFauxqs();
    // SQS requests pass through here on their way to fauxqs, which checks no signature
    proxy = await startRecordingServer(async (rec) => {
      const headers = Object.fromEntries(
        Object.entries(rec.headers).filter(([k]) =>
          !["host", "content-length", "connection"].includes(k)
        ),
      );
      const res = await fetch(sqs.endpoint + rec.path, {
        method: rec.method,
        headers,
        ...(rec.method === "GET" ? {} : { body: rec.body }),
      });
      return {
        status: res.status,
        headers: { "content-type": res.headers.get("content-type") ?? "application/json" },
        body: await res.text(),
      };
    });
    sts = await startStsFake({ answer: (req) => answer(req) });
    admin = new SQSClient({
      region: REGION,
      endpoint: sqs.endpoint,
      credentials: { accessKeyId: "test", secretAccessKey: "test" },
    });
    queueUrl = (await admin.send(new CreateQueueCommand({ QueueName: "jobs" }))).QueueUrl!;
    for (let i = 0; i < 2; i++) {
      await admin.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: `m${i}` }));
    }
  });
  after(async () => {
    admin?.destroy();
    await proxy?.close();
    await sts?.close();
    await sqs?.stop();
  });
  beforeEach(() => {
    sts.calls.length = 0;
    proxy.requests.length = 0;
    issued = 0;
    stsNow = NOW;
    answer = grant;
  });

  /** The collectors of one factory set (one role cache), trigger i read from params[i]. */
  function collectors(
    triggers: {
      auth?: Record<string, string>;
      md?: Record<string, string>;
      ctx?: Partial<TriggerContext>;
    }[],
    extra: Partial<KedaCollectorOptions> = {},
  ): Collector[] {
    const resolved: KedaResolvedTrigger[] = triggers.map((t) => ({
      type: "aws-sqs-queue",
      values: readTrigger("aws-sqs-queue", {
        metadata: { queueURL: queueUrl, awsRegion: REGION, awsEndpoint: proxy.url, ...t.md },
        authParams: t.auth ?? {},
      }, { modifiers: false, ...t.ctx }).values,
      digest: "d",
    }));
    const factory = kedaCollectorFactories({
      triggers: { trigger: (so, i) => (so === "shop/web" ? resolved[i] : undefined) },
      stsEndpointUrl: sts.url,
      // the adapter's own identity, which assumes the roles (its default chain in a cluster)
      stsClientConfig: {
        credentials: { accessKeyId: "OPERATORKEY", secretAccessKey: "operator-secret" },
      },
      sqsClientConfig: { maxAttempts: 1 },
      ...extra,
    }).find((f) => f.type === "keda-aws-sqs-queue")!;
    return resolved.map((_, i) => factory.create({ plan: plan(i) }));
  }

  /** The access key id and session token of each SQS request, in order. */
  function sqsSignatures(): [string | null, string | undefined][] {
    return proxy.requests.map((r) => [
      signingKeyId(r.headers.authorization),
      r.headers["x-amz-security-token"],
    ]);
  }

  const podIdentity = (externalId?: string): Partial<TriggerContext> => ({
    podIdentity: "aws",
    podIdentityRoleArn: ROLE,
    ...(externalId !== undefined ? { podIdentityExternalId: externalId } : {}),
  });

  it("assumes a pod identity's role as KEDA (session KEDA, 900 s, the external id) and signs SQS with it", async () => {
    const [c] = collectors([{ ctx: podIdentity("ext-42") }]);
    const got = await c!.collect(at(NOW));
    assert.deepEqual(got, { samples: [{ value: 2, timestamp: NOW }] });
    assert.deepEqual(sts.calls.map((x) => [x.form, x.signedBy]), [[{
      Action: "AssumeRole",
      Version: "2011-06-15",
      RoleArn: ROLE,
      RoleSessionName: "KEDA",
      DurationSeconds: "900",
      ExternalId: "ext-42",
    }, "OPERATORKEY"]]);
    assert.equal(sts.requests[0]!.headers["content-type"], "application/x-www-form-urlencoded");
    assert.deepEqual(sqsSignatures(), [["ASIATEMP1", "session-token-1"]]);
  });

  it("assumes a role once for several collections and triggers of one role, external id and region", async () => {
    const [a, b, other] = collectors([
      { ctx: podIdentity("ext-42") },
      { ctx: podIdentity("ext-42") },
      { ctx: podIdentity("ext-7") },
    ]);
    await a!.collect(at(NOW));
    await b!.collect(at(NOW + MINUTE));
    await a!.collect(at(NOW + 2 * MINUTE));
    assert.equal(sts.calls.length, 1);
    await other!.collect(at(NOW + 2 * MINUTE));
    assert.deepEqual(sts.calls.map((x) => x.form.ExternalId), ["ext-42", "ext-7"]);
    assert.deepEqual(sqsSignatures().map(([k]) => k), [
      "ASIATEMP1",
      "ASIATEMP1",
      "ASIATEMP1",
      "ASIATEMP2",
    ]);
  });

  it("assumes the role again five minutes before the credentials expire, and signs with the new ones", async () => {
    const [c] = collectors([{ ctx: podIdentity() }]);
    await c!.collect(at(NOW));
    await c!.collect(at(NOW + 10 * MINUTE - 1));
    assert.equal(sts.calls.length, 1);
    stsNow = NOW + 10 * MINUTE;
    await c!.collect(at(NOW + 10 * MINUTE));
    await c!.collect(at(NOW + 11 * MINUTE));
    assert.equal(sts.calls.length, 2);
    assert.equal(sts.calls[1]!.form.ExternalId, undefined);
    assert.deepEqual(sqsSignatures(), [
      ["ASIATEMP1", "session-token-1"],
      ["ASIATEMP1", "session-token-1"],
      ["ASIATEMP2", "session-token-2"],
      ["ASIATEMP2", "session-token-2"],
    ]);
  });

  it("assumes a pod-owned awsRoleArn per trigger under the Go SDK's session name, without external id", async () => {
    const [a, b] = collectors([{ auth: { awsRoleArn: ROLE } }, { auth: { awsRoleArn: ROLE } }]);
    await a!.collect(at(NOW));
    await a!.collect(at(NOW + MINUTE));
    await b!.collect(at(NOW + 2 * MINUTE));
    assert.deepEqual(sts.calls.map((x) => x.form), [
      {
        Action: "AssumeRole",
        Version: "2011-06-15",
        RoleArn: ROLE,
        RoleSessionName: `aws-go-sdk-${NOW}000000`,
        DurationSeconds: "900",
      },
      {
        Action: "AssumeRole",
        Version: "2011-06-15",
        RoleArn: ROLE,
        RoleSessionName: `aws-go-sdk-${NOW + 2 * MINUTE}000000`,
        DurationSeconds: "900",
      },
    ]);
    assert.deepEqual(sqsSignatures().map(([k]) => k), ["ASIATEMP1", "ASIATEMP1", "ASIATEMP2"]);
  });

  it("signs with the adapter's own identity for identityOwner operator, whatever awsRoleArn says", async () => {
    const [c] = collectors([{ md: { identityOwner: "operator" }, auth: { awsRoleArn: ROLE } }], {
      sqsClientConfig: {
        maxAttempts: 1,
        credentials: { accessKeyId: "OPERATORKEY", secretAccessKey: "operator-secret" },
      },
    });
    assert.deepEqual(await c!.collect(at(NOW)), { samples: [{ value: 2, timestamp: NOW }] });
    assert.equal(sts.calls.length, 0);
    assert.deepEqual(sqsSignatures(), [["OPERATORKEY", undefined]]);
  });

  it("fails naming the role when STS refuses it, and asks SQS nothing", async () => {
    answer = (req) => ({
      status: 403,
      code: "AccessDenied",
      message:
        `User: arn:aws:iam::111122223333:user/operator is not authorized to perform: sts:AssumeRole on resource: ${req.form.RoleArn}`,
    });
    const [c] = collectors([{ ctx: podIdentity() }]);
    assert.equal(
      await rejection(c!.collect(at(NOW))),
      `failed to refresh cached credentials, operation error STS: AssumeRole, role ${ROLE}, StatusCode: 403, api error AccessDenied: User: arn:aws:iam::111122223333:user/operator is not authorized to perform: sts:AssumeRole on resource: ${ROLE}`,
    );
    assert.equal(proxy.requests.length, 0);
    // a later collection asks again (nothing failed is kept)
    answer = grant;
    assert.deepEqual(await c!.collect(at(NOW + MINUTE)), {
      samples: [{ value: 2, timestamp: NOW + MINUTE }],
    });
    assert.equal(sts.calls.length, 2);
  });

  describe("with the adapter's web identity token (AWS_WEB_IDENTITY_TOKEN_FILE)", () => {
    let dir = "";
    let tokenFile = "";
    before(() => {
      dir = mkdtempSync(join(tmpdir(), "awsrole-"));
      tokenFile = join(dir, "token");
      writeFileSync(tokenFile, "eyJ.operator.token\n");
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    it("asks for a pod identity's role with the token first (session KEDA)", async () => {
      const [c] = collectors([{ ctx: podIdentity("ext-42") }], { webIdentityTokenFile: tokenFile });
      await c!.collect(at(NOW));
      await c!.collect(at(NOW + MINUTE));
      assert.deepEqual(sts.calls.map((x) => x.form), [{
        Action: "AssumeRoleWithWebIdentity",
        Version: "2011-06-15",
        RoleArn: ROLE,
        RoleSessionName: "KEDA",
        WebIdentityToken: "eyJ.operator.token",
      }]);
      assert.deepEqual(sqsSignatures().map(([k]) => k), ["ASIATEMP1", "ASIATEMP1"]);
    });

    it("assumes the role with AssumeRole when STS refuses the token, and keeps doing so", async () => {
      answer = (req) =>
        req.action === "AssumeRoleWithWebIdentity"
          ? {
            status: 403,
            code: "AccessDenied",
            message: "Not authorized to perform sts:AssumeRoleWithWebIdentity",
          }
          : grant();
      const [c] = collectors([{ ctx: podIdentity() }], { webIdentityTokenFile: tokenFile });
      await c!.collect(at(NOW));
      stsNow = NOW + 20 * MINUTE;
      await c!.collect(at(NOW + 20 * MINUTE));
      assert.deepEqual(sts.calls.map((x) => [x.action, x.signedBy]), [
        ["AssumeRoleWithWebIdentity", null],
        ["AssumeRole", "OPERATORKEY"],
        ["AssumeRole", "OPERATORKEY"],
      ]);
      assert.deepEqual(sqsSignatures().map(([k]) => k), ["ASIATEMP1", "ASIATEMP2"]);
    });
  });
});
