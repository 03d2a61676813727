/**
 * A protocol fake of AWS STS's `AssumeRole` and `AssumeRoleWithWebIdentity` (the AWS Query
 * protocol, API version 2011-06-15): `POST /` with a form body
 * `Action=AssumeRole&Version=2011-06-15&RoleArn=...&RoleSessionName=...&DurationSeconds=...`
 * (`ExternalId`, `WebIdentityToken` when sent), answered with the XML
 * `<AssumeRoleResponse><AssumeRoleResult><Credentials>` (`AccessKeyId`, `SecretAccessKey`,
 * `SessionToken`, `Expiration` in ISO 8601) and `<ResponseMetadata><RequestId>`, or with
 * `<ErrorResponse><Error><Type><Code><Message></Error><RequestId>` and its HTTP status.
 */
import { startRecordingServer } from "./recording_server.ts";
import type { RecordedRequest, RecordingServer } from "./recording_server.ts";

const NS = "https://sts.amazonaws.com/doc/2011-06-15/";

/** An STS call, decoded. */
export interface StsRequest {
  action: string;
  version: string;
  /** Every form field as sent. */
  form: Record<string, string>;
  /** The access key id of the `Authorization` header's `Credential=` (the assuming identity). */
  signedBy: string | null;
}

/** What the fake answers: credentials valid until `expiration` (ms), or an STS error. */
export type StsAnswer =
  | { accessKeyId: string; secretAccessKey: string; sessionToken: string; expiration: number }
  | { status: number; code: string; message: string; type?: "Sender" | "Receiver" };

/** Options of {@linkcode startStsFake}. */
export interface StsFakeOptions {
  answer(req: StsRequest): StsAnswer;
}

/** A started fake. */
export interface StsFake {
  url: string;
  calls: StsRequest[];
  /** Every HTTP request as received. */
  requests: RecordedRequest[];
  close(): Promise<void>;
}

function xml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** The access key id a SigV4 `Authorization` header names, or null. */
export function signingKeyId(authorization: string | undefined): string | null {
  return /Credential=([^/]+)\//.exec(authorization ?? "")?.[1] ?? null;
}

/** Start the fake on 127.0.0.1. */
export async function startStsFake(options: StsFakeOptions): Promise<StsFake> {
  const calls: StsRequest[] = [];
  let n = 0;
  const server: RecordingServer = await startRecordingServer((rec) => {
    const requestId = `00000000-0000-4000-8000-${String(++n).padStart(12, "0")}`;
    const error = (status: number, code: string, message: string, type = "Sender") => ({
      status,
      headers: { "content-type": "text/xml", "x-amzn-requestid": requestId },
      body:
        `<ErrorResponse xmlns="${NS}">\n  <Error>\n    <Type>${type}</Type>\n    <Code>${
          xml(code)
        }</Code>\n    <Message>${xml(message)}</Message>\n  </Error>\n  <RequestId>${requestId}` +
        `</RequestId>\n</ErrorResponse>\n`,
    });
    if (rec.method !== "POST" || rec.path !== "/") {
      return error(404, "UnknownOperationException", `no route for ${rec.method} ${rec.path}`);
    }
    const form = Object.fromEntries(new URLSearchParams(rec.body));
    const call: StsRequest = {
      action: form.Action ?? "",
      version: form.Version ?? "",
      form,
      signedBy: signingKeyId(rec.headers.authorization),
    };
    calls.push(call);
    if (call.version !== "2011-06-15") {
      return error(400, "InvalidAction", `unknown version ${call.version}`);
    }
    if (call.action !== "AssumeRole" && call.action !== "AssumeRoleWithWebIdentity") {
      return error(
        400,
        "InvalidAction",
        `could not find operation ${call.action} for version 2011-06-15`,
      );
    }
    if (!form.RoleArn || !form.RoleSessionName) {
      return error(400, "MissingParameter", "RoleArn and RoleSessionName are required");
    }
    const a = options.answer(call);
    if ("code" in a) return error(a.status, a.code, a.message, a.type);
    const action = call.action;
    const session = form.RoleSessionName;
    const role = form.RoleArn.replace(
      /^arn:aws:iam::(\d+):role\/(.*)$/,
      "arn:aws:sts::$1:assumed-role/$2",
    );
    const body = `<${action}Response xmlns="${NS}">\n  <${action}Result>\n` +
      (action === "AssumeRoleWithWebIdentity"
        ? `    <SubjectFromWebIdentityToken>system:serviceaccount:keda:keda-operator</SubjectFromWebIdentityToken>\n`
        : "") +
      `    <AssumedRoleUser>\n      <Arn>${xml(role)}/${xml(session)}</Arn>\n` +
      `      <AssumedRoleId>AROA0000000000EXAMPLE:${xml(session)}</AssumedRoleId>\n` +
      `    </AssumedRoleUser>\n    <Credentials>\n` +
      `      <AccessKeyId>${xml(a.accessKeyId)}</AccessKeyId>\n` +
      `      <SecretAccessKey>${xml(a.secretAccessKey)}</SecretAccessKey>\n` +
      `      <SessionToken>${xml(a.sessionToken)}</SessionToken>\n` +
      `      <Expiration>${
        new Date(a.expiration).toISOString().replace(".000Z", "Z")
      }</Expiration>\n` +
      `    </Credentials>\n  </${action}Result>\n` +
      `  <ResponseMetadata>\n    <RequestId>${requestId}</RequestId>\n  </ResponseMetadata>\n` +
      `</${action}Response>\n`;
    return {
      status: 200,
      headers: { "content-type": "text/xml", "x-amzn-requestid": requestId },
      body,
    };
  });
  return { url: server.url, calls, requests: server.requests, close: () => server.close() };
}
