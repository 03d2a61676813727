/**
 * The metadata of KEDA v2.20.2's triggers that this adapter reads, as their scalers parse it
 * (`pkg/scalers/<type>_scaler.go`): the typed-config fields in struct order, each scaler's own
 * checks, and the error a ScaledObject's `Ready` condition shows (with KEDA's prefixes, doubled
 * where KEDA doubles them). The vectors of KEDA's scaler tests are in
 * tests/core/keda/triggers_test.ts.
 *
 * @module
 */
import { parseCronSchedule } from "./cron.ts";
import { kedaCronPart, kedaSqsQueueName } from "./names.ts";
import {
  type FieldSpec,
  type ParamSource,
  type ParsedValue,
  readTypedConfig,
  type TriggerParams,
} from "./typed_config.ts";

const MD: readonly ParamSource[] = ["triggerMetadata"];
const AUTH: readonly ParamSource[] = ["authParams"];
const MD_AUTH: readonly ParamSource[] = ["triggerMetadata", "authParams"];

function field(
  names: string | readonly string[],
  order: readonly ParamSource[],
  type: FieldSpec["type"],
  more: Partial<FieldSpec> = {},
): FieldSpec {
  return { names: typeof names === "string" ? [names] : names, order, type, ...more };
}

/** KEDA's shared authentication fields (`pkg/scalers/authentication`), all optional. */
const AUTH_FIELDS: readonly FieldSpec[] = [
  field(["authModes", "authMode"], MD_AUTH, "string", {
    optional: true,
    enum: ["apiKey", "basic", "tls", "bearer", "custom", "oauth"],
    exclusiveSet: ["bearer", "basic", "oauth"],
  }),
  field(["bearerToken", "token"], AUTH, "string", { optional: true }),
  field("username", AUTH, "string", { optional: true }),
  field("password", AUTH, "string", { optional: true }),
  field("cert", AUTH, "string", { optional: true }),
  field("key", AUTH, "string", { optional: true }),
  field("ca", AUTH, "string", { optional: true }),
  field("oauthTokenURI", AUTH, "string", { optional: true }),
  field(["scopes", "scope"], AUTH, "string", { optional: true, list: true }),
  field("clientID", AUTH, "string", { optional: true }),
  field("clientSecret", AUTH, "string", { optional: true }),
  field("endpointParams", AUTH, "string", { optional: true }),
  field("customAuthHeader", AUTH, "string", { optional: true }),
  field("customAuthValue", AUTH, "string", { optional: true }),
  field("apiKey", MD_AUTH, "string", { optional: true }),
  field("method", MD_AUTH, "string", { default: "header", enum: ["header", "query"] }),
  field("keyParamName", MD_AUTH, "string", { optional: true }),
];

/** The authentication struct's own check: the first mode missing what it needs. */
function authProblem(v: Record<string, ParsedValue>): string | null {
  const modes = typeof v.authModes === "string"
    ? v.authModes.split(",").map((m) => m.trim()).filter((m) => m !== "")
    : [];
  if (modes.length === 0) return null;
  const has = (k: string): boolean => typeof v[k] === "string" && v[k] !== "";
  const shown = (k: string): string => (has(k) ? "<present>" : "<empty>");
  if (modes.includes("bearer") && !has("bearerToken")) {
    return "bearer token=<empty> is required when bearer auth is enabled";
  }
  if (modes.includes("basic") && !has("username")) {
    return "username=<empty> is required when basic auth is enabled";
  }
  if (modes.includes("tls") && (!has("cert") || !has("key"))) {
    return `cert=${shown("cert")} and key=${shown("key")} are required when tls auth is enabled`;
  }
  if (modes.includes("oauth") && (!has("oauthTokenURI") || !has("clientID"))) {
    return `oauthTokenURI=${shown("oauthTokenURI")} and clientID=${
      shown("clientID")
    } are required when oauth is enabled`;
  }
  if (modes.includes("custom") && (!has("customAuthHeader") || !has("customAuthValue"))) {
    return `customAuthHeader=${shown("customAuthHeader")} and customAuthValue=${
      shown("customAuthValue")
    } are required when custom auth is enabled`;
  }
  if (modes.includes("apiKey") && !has("apiKey")) {
    return "apiKey is required when apiKey auth is enabled";
  }
  return null;
}

/** How a trigger is read: the ScaledObject's context. */
export interface TriggerContext {
  /** The ScaledObject uses `scalingModifiers` (targets may be omitted). */
  modifiers: boolean;
  /** The trigger's `metricType`. */
  metricType?: string;
  /** The TriggerAuthentication's `podIdentity.provider`, if any. */
  podIdentity?: string;
  /** Its `podIdentity.roleArn` (provider `aws`). */
  podIdentityRoleArn?: string;
  /** Its `podIdentity.externalID` (provider `aws`, with a role). */
  podIdentityExternalId?: string;
}

/** A trigger read: its values, and what its metric is named after. */
export interface TriggerMetadata {
  values: Record<string, ParsedValue>;
  /** The part of the External metric's name after `s<i>-`, before normalization. */
  namePart?: string;
}

/** A trigger KEDA would not build: the error as the `Ready` condition shows it after its prefix. */
export class TriggerError extends Error {
  override name = "TriggerError";
}

function fail(prefix: string, errors: readonly string[]): never {
  throw new TriggerError(prefix + errors.join("\n"));
}

/** A struct's own check (`Validate()`): its first problem, or null. */
type Check = (v: Record<string, ParsedValue>) => string | null;

/**
 * Reads the parts of a config struct in order: fields, and the checks of nested structs where
 * they sit (a nested struct's check runs after its fields, even when one failed); the struct's
 * own check last. Throws the errors joined, after `prefix`.
 */
function read(
  params: TriggerParams,
  parts: readonly (readonly FieldSpec[] | Check)[],
  type: string,
  prefix: string,
): Record<string, ParsedValue> {
  const values: Record<string, ParsedValue> = {};
  const errors: string[] = [];
  for (const part of parts) {
    if (typeof part === "function") {
      const problem = part(values);
      if (problem !== null) errors.push(problem);
      continue;
    }
    const r = readTypedConfig(params, part, type);
    Object.assign(values, r.values);
    errors.push(...r.errors);
  }
  if (errors.length > 0) fail(prefix, errors);
  return values;
}

/** KEDA's `GetMetricTargetType` for an external trigger; throws KEDA's error. */
function externalMetricType(ctx: TriggerContext): void {
  if (ctx.metricType === "Utilization") {
    throw new TriggerError(
      "error getting scaler metric type: 'Utilization' metric type is unsupported for external metrics, allowed values are 'Value' or 'AverageValue'",
    );
  }
}

/**
 * Reads one trigger's metadata as its KEDA scaler does. Throws {@linkcode TriggerError} with
 * the text KEDA's `Ready` condition shows after `failed to ensure HPA is correctly created for
 * ScaledObject: `; or `no scaler found for type: <type>`.
 */
export function readTrigger(
  type: string,
  params: TriggerParams,
  ctx: TriggerContext,
): TriggerMetadata {
  switch (type) {
    case "prometheus": {
      externalMetricType(ctx);
      const p = "error parsing prometheus metadata: ";
      const values = read(
        params,
        [AUTH_FIELDS, authProblem, [
          field("serverAddress", MD, "string"),
          field("query", MD, "string"),
          field("queryParameters", MD, "map", { optional: true }),
          field("threshold", MD, "float64"),
          field("activationThreshold", MD, "float64", { optional: true }),
          field("namespace", MD, "string", { optional: true }),
          field("customHeaders", MD, "map", { optional: true }),
          field("ignoreNullValues", MD, "bool", { default: "true" }),
          field("unsafeSsl", MD, "bool", { optional: true }),
          field("awsRegion", MD_AUTH, "string", { optional: true }),
          field("timeout", MD, "duration", { optional: true }),
          field("identityOwner", MD, "string", { optional: true }),
        ]],
        type,
        p + p,
      );
      if (
        typeof values.authModes === "string" && ctx.podIdentity !== undefined &&
        ctx.podIdentity !== "" && ctx.podIdentity !== "none"
      ) throw new TriggerError(`${p}pod identity cannot be enabled with other auth types`);
      return { values, namePart: "prometheus" };
    }
    case "metrics-api": {
      externalMetricType(ctx);
      const outer = "error parsing metric API metadata: ";
      const values = read(
        params,
        [
          [
            field("targetValue", MD, "float64", { optional: true }),
            field("activationTargetValue", MD, "float64", { default: "0" }),
            field("url", MD, "string"),
            field("format", MD, "string", {
              default: "json",
              enum: ["prometheus", "json", "xml", "yaml"],
            }),
            field("valueLocation", MD, "string"),
            field("unsafeSsl", MD, "bool", { default: "false" }),
            field("aggregateFromKubeServiceEndpoints", MD, "bool", { default: "false" }),
            field("aggregationType", MD, "string", {
              default: "average",
              enum: ["average", "sum", "max", "min"],
            }),
            field("timeout", MD, "duration", { optional: true }),
          ],
          AUTH_FIELDS,
          authProblem,
        ],
        type,
        outer + "error parsing metrics API metadata: ",
      );
      if (!ctx.modifiers && (values.targetValue ?? 0) === 0) {
        throw new TriggerError(`${outer}no targetValue given in metadata`);
      }
      return { values, namePart: `metric-api-${values.valueLocation}` };
    }
    case "aws-sqs-queue": {
      externalMetricType(ctx);
      const p = "error parsing SQS queue metadata: ";
      const values = read(
        params,
        [[
          field("queueLength", MD, "int64", { default: "5" }),
          field("activationQueueLength", MD, "int64", { default: "0" }),
          field("queueURL", ["triggerMetadata", "resolvedEnv"], "string"),
          field("awsRegion", MD_AUTH, "string"),
          field("awsEndpoint", MD, "string", { optional: true }),
          field("scaleOnInFlight", MD, "bool", { default: "true" }),
          field("scaleOnDelayed", MD, "bool", { default: "false" }),
          field("identityOwner", MD, "string", { optional: true }),
        ]],
        type,
        p + p,
      );
      const queueName = kedaSqsQueueName(values.queueURL as string);
      if (queueName === null) throw new TriggerError(`${p}cannot get queueName from queueURL`);
      const problem = awsAuthProblem(params, ctx);
      if (problem !== null) throw new TriggerError(p + problem);
      Object.assign(values, awsCredentialValues(kedaAwsAuthorization(params, ctx)));
      return { values, namePart: `aws-sqs-${queueName}` };
    }
    case "cron": {
      externalMetricType(ctx);
      const values = read(
        params,
        [[
          field("start", MD, "string"),
          field("end", MD, "string"),
          field("timezone", MD, "string"),
          field("desiredReplicas", MD, "int64"),
        ], (v) => {
          const start = typeof v.start === "string" ? v.start : "";
          const end = typeof v.end === "string" ? v.end : "";
          try {
            parseCronSchedule(start);
          } catch (e) {
            return `error parsing start schedule: ${(e as Error).message}`;
          }
          try {
            parseCronSchedule(end);
          } catch (e) {
            return `error parsing end schedule: ${(e as Error).message}`;
          }
          if (start === end) return "start and end can not have exactly same time input";
          if ((v.desiredReplicas ?? 0) === 0) return "no desiredReplicas specified";
          return null;
        }],
        type,
        "error parsing cron metadata: ",
      );
      return {
        values,
        namePart: `cron-${values.timezone}-${kedaCronPart(values.start as string)}-${
          kedaCronPart(values.end as string)
        }`,
      };
    }
    case "influxdb": {
      externalMetricType(ctx);
      const p = "error parsing influxdb metadata: ";
      const values = read(
        params,
        [[
          field("authToken", MD, "string", {
            deprecated:
              "The 'authToken' setting from triggerMetadata is DEPRECATED and is removed in v2.20 - Use 'authToken' from resolvedEnv or authParams instead",
          }),
          field("authToken", ["resolvedEnv", "authParams"], "string", { optional: true }),
          field("organizationName", ["triggerMetadata", "resolvedEnv", "authParams"], "string", {
            optional: true,
          }),
          field("query", MD, "string"),
          field("influxVersion", MD, "string", { default: "2", enum: ["2", "3"] }),
          field("queryType", MD, "string", { default: "InfluxQL" }),
          field("database", MD_AUTH, "string", { optional: true }),
          field("metricKey", MD, "string", { optional: true }),
          field("serverURL", MD_AUTH, "string"),
          field("unsafeSsl", MD, "bool", { optional: true }),
          field("thresholdValue", MD, "float64", { optional: true }),
          field("activationThresholdValue", MD, "float64", { optional: true }),
        ], (v) => {
          if (v.influxVersion === "3") {
            if (!v.database) return "database is required if influxVersion is 3";
            if (!v.metricKey) return "metricKey is required if influxVersion is 3";
            const qt = String(v.queryType ?? "").toLowerCase();
            if (qt !== "influxql" && qt !== "flightsql") {
              return "query type must be 'influxql' or 'flightsql'";
            }
            return null;
          }
          return v.organizationName ? null : "organizationName is required if influxVersion is 2";
        }],
        type,
        p + p,
      );
      if (!ctx.modifiers && (values.thresholdValue ?? 0) === 0) {
        throw new TriggerError(`${p}no threshold value given`);
      }
      return {
        values,
        namePart: `influxdb-${
          values.influxVersion === "3" ? values.database : values.organizationName
        }`,
      };
    }
    case "cpu":
    case "memory": {
      const p = `error parsing ${type} metadata: `;
      const values = read(
        params,
        [[
          field("type", MD, "string", {
            deprecated:
              "The 'type' setting is DEPRECATED and is removed in v2.18 - Use 'metricType' instead.",
            enum: ["Utilization", "AverageValue"],
          }),
          field("value", MD, "string"),
          field("containerName", MD, "string", { optional: true }),
        ]],
        type,
        p,
      );
      if (ctx.metricType === "Utilization") {
        const v = values.value as string;
        if (!/^[+-]?[0-9]+$/.test(v) || Math.abs(Number(v)) > 2147483647) {
          const why = /^[+-]?[0-9]+$/.test(v) ? "value out of range" : "invalid syntax";
          throw new TriggerError(`${p}strconv.ParseInt: parsing ${JSON.stringify(v)}: ${why}`);
        }
      } else if (ctx.metricType !== "AverageValue") {
        throw new TriggerError(
          `${p}unknown metric type: ${
            ctx.metricType ?? ""
          }, allowed values are 'Utilization' or 'AverageValue'`,
        );
      }
      return { values };
    }
    default:
      throw new TriggerError(`no scaler found for type: ${type}`);
  }
}

/**
 * Which identity an AWS trigger signs with, as KEDA's `GetAwsAuthorization` and `GetAwsConfig`
 * (`pkg/scalers/aws/aws_common.go`) decide it:
 * - `default`: the adapter's own default credential chain (environment, IRSA web identity,
 *   container or instance role): `identityOwner: operator`, or `podIdentity.provider: aws`
 *   without a role;
 * - `keys`: the trigger's access keys (TriggerAuthentication, or metadata and container env);
 * - `role`: a role assumed with STS AssumeRole by the adapter's default chain (never by access
 *   keys: an `awsRoleArn` wins over keys given beside it).
 */
export type KedaAwsAuthorization =
  | { identity: "default" }
  | { identity: "keys"; accessKeyId: string; secretAccessKey: string; sessionToken?: string }
  | {
    identity: "role";
    roleArn: string;
    /** Only `podIdentity.externalID` beside `podIdentity.roleArn`: KEDA reads no other. */
    externalId?: string;
    /**
     * `podIdentity.provider: aws`: the temporary credentials are shared by every trigger of the
     * same role, external id and region (KEDA's config cache) under the session name `KEDA`;
     * otherwise (an `awsRoleArn` of a pod-owned identity, KEDA's deprecated path) each trigger
     * assumes the role itself under the SDK's default session name.
     */
    podIdentity: boolean;
  };

/**
 * KEDA's choice of AWS credentials for a trigger whose {@linkcode awsAuthProblem} is null.
 *
 * @example
 * ```ts
 * kedaAwsAuthorization({ metadata: {}, authParams: { awsRoleArn: "arn:aws:iam::1:role/r" } }, {
 *   modifiers: false,
 * });
 * // { identity: "role", roleArn: "arn:aws:iam::1:role/r", podIdentity: false }
 * ```
 */
export function kedaAwsAuthorization(
  params: TriggerParams,
  ctx: TriggerContext,
): KedaAwsAuthorization {
  const auth = params.authParams ?? {};
  if (ctx.podIdentity === "aws") {
    if (ctx.podIdentityRoleArn) {
      return {
        identity: "role",
        roleArn: ctx.podIdentityRoleArn,
        ...(ctx.podIdentityExternalId ? { externalId: ctx.podIdentityExternalId } : {}),
        podIdentity: true,
      };
    }
    return auth.awsRoleArn
      ? { identity: "role", roleArn: auth.awsRoleArn, podIdentity: true }
      : { identity: "default" };
  }
  const owner = params.metadata.identityOwner ?? "";
  if (owner !== "" && owner !== "pod") return { identity: "default" };
  if (auth.awsRoleArn) return { identity: "role", roleArn: auth.awsRoleArn, podIdentity: false };
  const keyId = auth.awsAccessKeyID || auth.awsAccessKeyId;
  if (keyId) {
    return {
      identity: "keys",
      accessKeyId: keyId,
      secretAccessKey: auth.awsSecretAccessKey ?? "",
      ...(auth.awsSessionToken ? { sessionToken: auth.awsSessionToken } : {}),
    };
  }
  const md = params.metadata;
  const env = params.resolvedEnv ?? {};
  const mdKey = md.awsAccessKeyID ||
    (md.awsAccessKeyIDFromEnv ? env[md.awsAccessKeyIDFromEnv] ?? "" : "");
  const secret = md.awsSecretAccessKeyFromEnv ? env[md.awsSecretAccessKeyFromEnv] ?? "" : "";
  return { identity: "keys", accessKeyId: mdKey, secretAccessKey: secret };
}

/** The trigger values the SQS collector reads for {@linkcode kedaAwsAuthorization}'s choice. */
function awsCredentialValues(a: KedaAwsAuthorization): Record<string, ParsedValue> {
  switch (a.identity) {
    case "default":
      return {};
    case "keys":
      return {
        awsAccessKeyID: a.accessKeyId,
        awsSecretAccessKey: a.secretAccessKey,
        ...(a.sessionToken ? { awsSessionToken: a.sessionToken } : {}),
      };
    case "role":
      return {
        awsRoleArn: a.roleArn,
        ...(a.externalId ? { awsExternalId: a.externalId } : {}),
        awsPodIdentity: a.podIdentity,
      };
  }
}

/** KEDA's AWS credential check (`pkg/scalers/aws/aws_common.go`): its error, or null. */
function awsAuthProblem(params: TriggerParams, ctx: TriggerContext): string | null {
  if (ctx.podIdentity === "aws") return null;
  // KEDA reads identityOwner untrimmed here (triggerMetadata, not the typed config)
  const owner = params.metadata.identityOwner ?? "";
  if (owner !== "" && owner !== "pod") return null;
  const auth = params.authParams ?? {};
  if (auth.awsRoleArn) return null;
  if (auth.awsAccessKeyID || auth.awsAccessKeyId) {
    return auth.awsSecretAccessKey ? null : "awsSecretAccessKey not found";
  }
  const md = params.metadata;
  const mdKey = md.awsAccessKeyID ||
    (md.awsAccessKeyIDFromEnv ? params.resolvedEnv?.[md.awsAccessKeyIDFromEnv] : undefined);
  if (!mdKey) return "awsAccessKeyID not found";
  const secret = md.awsSecretAccessKeyFromEnv
    ? params.resolvedEnv?.[md.awsSecretAccessKeyFromEnv]
    : undefined;
  return secret ? null : "awsSecretAccessKey not found";
}
