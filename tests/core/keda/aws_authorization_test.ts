/**
 * Which identity an AWS trigger signs with (`kedaAwsAuthorization`), as KEDA v2.20.2's
 * `GetAwsAuthorization` and `GetAwsConfig` decide it: the credential cases of KEDA's
 * `testAWSSQSMetadata` (pod identity with a role and an external id, the operator's own identity,
 * the deprecated `awsRoleArn` beside `identityOwner: operator`, static and temporary keys), and
 * the branches of `aws_common.go` those rows leave out, rewritten here as a table.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  type KedaAwsAuthorization,
  kedaAwsAuthorization,
  readTrigger,
  type TriggerContext,
} from "../../../src/core/keda/triggers.ts";
import type { TriggerParams } from "../../../src/core/keda/typed_config.ts";

const ROLE = "arn:aws:iam::111122223333:role/queue-reader";
const OTHER_ROLE = "arn:aws:iam::444455556666:role/other";
const MD = {
  queueURL: "https://sqs.eu-west-1.amazonaws.com/account_id/DeleteArtifactQ",
  queueLength: "1",
  awsRegion: "eu-west-1",
};

interface Row {
  name: string;
  md?: Record<string, string>;
  auth?: Record<string, string>;
  env?: Record<string, string>;
  ctx?: Partial<TriggerContext>;
  want: KedaAwsAuthorization;
}

const rows: Row[] = [
  {
    name: "static keys from the TriggerAuthentication",
    auth: { awsAccessKeyId: "AKIA1", awsSecretAccessKey: "s1" },
    want: { identity: "keys", accessKeyId: "AKIA1", secretAccessKey: "s1" },
  },
  {
    name: "temporary keys from the TriggerAuthentication (awsSessionToken)",
    auth: { awsAccessKeyID: "ASIA1", awsSecretAccessKey: "s1", awsSessionToken: "tok" },
    want: { identity: "keys", accessKeyId: "ASIA1", secretAccessKey: "s1", sessionToken: "tok" },
  },
  {
    name: "an empty awsAccessKeyID leaves awsAccessKeyId",
    auth: { awsAccessKeyID: "", awsAccessKeyId: "AKIA2", awsSecretAccessKey: "s2" },
    want: { identity: "keys", accessKeyId: "AKIA2", secretAccessKey: "s2" },
  },
  {
    name: "keys in the metadata and the container env",
    md: { awsAccessKeyID: "AKIA3", awsSecretAccessKeyFromEnv: "SECRET" },
    env: { SECRET: "s3" },
    want: { identity: "keys", accessKeyId: "AKIA3", secretAccessKey: "s3" },
  },
  {
    name: "both keys from the container env (no session token read from it by KEDA's check)",
    md: { awsAccessKeyIDFromEnv: "ID", awsSecretAccessKeyFromEnv: "SECRET" },
    env: { ID: "AKIA4", SECRET: "s4" },
    want: { identity: "keys", accessKeyId: "AKIA4", secretAccessKey: "s4" },
  },
  {
    name: "a pod-owned awsRoleArn: assumed by the adapter, per trigger",
    auth: { awsRoleArn: ROLE },
    want: { identity: "role", roleArn: ROLE, podIdentity: false },
  },
  {
    name: "identityOwner pod with awsRoleArn",
    md: { identityOwner: "pod" },
    auth: { awsRoleArn: ROLE },
    want: { identity: "role", roleArn: ROLE, podIdentity: false },
  },
  {
    name: "awsRoleArn wins over access keys beside it (the keys never assume it)",
    auth: { awsRoleArn: ROLE, awsAccessKeyId: "AKIA1", awsSecretAccessKey: "s1" },
    want: { identity: "role", roleArn: ROLE, podIdentity: false },
  },
  {
    name: "an awsExternalId auth parameter is not read",
    auth: { awsRoleArn: ROLE, awsExternalId: "ext" },
    want: { identity: "role", roleArn: ROLE, podIdentity: false },
  },
  {
    name: "with AWS Role from Pod Identity",
    ctx: { podIdentity: "aws", podIdentityRoleArn: ROLE },
    want: { identity: "role", roleArn: ROLE, podIdentity: true },
  },
  {
    name: "with AWS Role and External ID from Pod Identity",
    ctx: { podIdentity: "aws", podIdentityRoleArn: ROLE, podIdentityExternalId: "ext-42" },
    want: { identity: "role", roleArn: ROLE, externalId: "ext-42", podIdentity: true },
  },
  {
    name: "podIdentity.roleArn wins over the awsRoleArn auth parameter",
    auth: { awsRoleArn: OTHER_ROLE },
    ctx: { podIdentity: "aws", podIdentityRoleArn: ROLE },
    want: { identity: "role", roleArn: ROLE, podIdentity: true },
  },
  {
    name: "pod identity aws with awsRoleArn from the auth parameters: shared, no external id",
    auth: { awsRoleArn: ROLE },
    ctx: { podIdentity: "aws", podIdentityExternalId: "ignored" },
    want: { identity: "role", roleArn: ROLE, podIdentity: true },
  },
  {
    name: "pod identity aws without a role: the adapter's own identity, keys ignored",
    auth: { awsAccessKeyId: "AKIA1", awsSecretAccessKey: "s1" },
    ctx: { podIdentity: "aws" },
    want: { identity: "default" },
  },
  {
    name: "with AWS Role assigned on KEDA operator itself",
    md: { identityOwner: "operator" },
    auth: { awsAccessKeyId: "", awsSecretAccessKey: "" },
    want: { identity: "default" },
  },
  {
    name: "with AWS Role assigned on KEDA operator itself (deprecated path): awsRoleArn ignored",
    md: { identityOwner: "operator" },
    auth: { awsRoleArn: ROLE, awsAccessKeyId: "", awsSecretAccessKey: "" },
    want: { identity: "default" },
  },
  {
    name: "another identityOwner: the adapter's own identity",
    md: { identityOwner: "keda" },
    auth: { awsRoleArn: ROLE },
    want: { identity: "default" },
  },
];

describe("kedaAwsAuthorization (GetAwsAuthorization)", () => {
  for (const row of rows) {
    it(row.name, () => {
      const params: TriggerParams = {
        metadata: { ...MD, ...row.md },
        authParams: row.auth ?? {},
        ...(row.env ? { resolvedEnv: row.env } : {}),
      };
      const ctx: TriggerContext = { modifiers: false, ...row.ctx };
      assert.deepEqual(kedaAwsAuthorization(params, ctx), row.want);
    });
  }
});

describe("aws-sqs-queue values of a role to assume", () => {
  it("carries the pod identity's role, its external id and that it is shared", () => {
    const { values } = readTrigger("aws-sqs-queue", { metadata: MD, authParams: {} }, {
      modifiers: false,
      podIdentity: "aws",
      podIdentityRoleArn: ROLE,
      podIdentityExternalId: "ext-42",
    });
    assert.equal(values.awsRoleArn, ROLE);
    assert.equal(values.awsExternalId, "ext-42");
    assert.equal(values.awsPodIdentity, true);
    assert.equal(values.awsAccessKeyID, undefined);
  });

  it("carries a pod-owned awsRoleArn, not shared, and no keys given beside it", () => {
    const { values } = readTrigger("aws-sqs-queue", {
      metadata: MD,
      authParams: { awsRoleArn: ROLE, awsAccessKeyId: "AKIA1", awsSecretAccessKey: "s1" },
    }, { modifiers: false });
    assert.equal(values.awsRoleArn, ROLE);
    assert.equal(values.awsExternalId, undefined);
    assert.equal(values.awsPodIdentity, false);
    assert.equal(values.awsAccessKeyID, undefined);
  });

  it("carries no role for identityOwner operator", () => {
    const { values } = readTrigger("aws-sqs-queue", {
      metadata: { ...MD, identityOwner: "operator" },
      authParams: { awsRoleArn: ROLE },
    }, { modifiers: false });
    assert.equal(values.awsRoleArn, undefined);
    assert.equal(values.awsPodIdentity, undefined);
  });

  it("reads awsAccessKeyId when awsAccessKeyID is empty, and checks its secret", () => {
    assert.throws(
      () =>
        readTrigger("aws-sqs-queue", {
          metadata: MD,
          authParams: { awsAccessKeyID: "", awsAccessKeyId: "AKIA2", awsSecretAccessKey: "" },
        }, { modifiers: false }),
      { message: "error parsing SQS queue metadata: awsSecretAccessKey not found" },
    );
  });
});
