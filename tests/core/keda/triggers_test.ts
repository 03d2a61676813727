/**
 * Trigger metadata read as KEDA v2.20.2's scalers read it (src/core/keda/triggers.ts): the rows
 * of KEDA's own scaler tests (`testPromMetadata`, `testPrometheusAuthMetadata`,
 * `testMetricsAPIMetadata`, `testMetricsAPIAuthMetadata`, `testAWSSQSMetadata`,
 * `testCronMetadata`, `testInfluxDBMetadata`, `testCPUMemoryMetadata`), rewritten here as
 * tables. KEDA's tests call each scaler's parse function; a ScaledObject's `Ready` condition
 * shows the same text after the scaler's outer prefix, which is what `readTrigger` throws.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readTrigger, type TriggerContext } from "../../../src/core/keda/triggers.ts";
import type { TriggerParams } from "../../../src/core/keda/typed_config.ts";

type Md = Record<string, string>;

/** A row: the params, the context, and the parse function's error ("" when it parses). */
interface Row {
  name: string;
  md: Md;
  auth?: Md;
  env?: Md;
  ctx?: Partial<TriggerContext>;
  error: string;
  /** Values that must be read, when it parses. */
  values?: Record<string, unknown>;
}

function run(type: string, outer: string, rows: readonly Row[]): void {
  for (const row of rows) {
    it(`${type}: ${row.name}`, () => {
      const params: TriggerParams = {
        metadata: row.md,
        ...(row.auth ? { authParams: row.auth } : {}),
        ...(row.env ? { resolvedEnv: row.env } : {}),
      };
      const ctx: TriggerContext = { modifiers: false, ...row.ctx };
      if (row.error === "") {
        const r = readTrigger(type, params, ctx);
        for (const [k, v] of Object.entries(row.values ?? {})) {
          assert.deepEqual(r.values[k], v, k);
        }
      } else {
        assert.throws(() => readTrigger(type, params, ctx), { message: outer + row.error });
      }
    });
  }
}

// ---- prometheus ----------------------------------------------------------------------------

const PROM_BASE: Md = {
  serverAddress: "http://localhost:9090",
  metricName: "http_requests_total",
  threshold: "100",
  query: "up",
};
const P = "error parsing prometheus metadata: ";
const without = (md: Md, key: string): Md => {
  const out = { ...md };
  delete out[key];
  return out;
};

describe("prometheus metadata (testPromMetadata)", () => {
  run("prometheus", P, [
    {
      name: "0 nothing",
      md: {},
      error: `${P}missing required parameter "serverAddress" in [triggerMetadata]\n` +
        `missing required parameter "query" in [triggerMetadata]\n` +
        `missing required parameter "threshold" in [triggerMetadata]`,
    },
    {
      name: "1 base",
      md: PROM_BASE,
      error: "",
      values: { threshold: 100, ignoreNullValues: true, serverAddress: "http://localhost:9090" },
    },
    {
      name: "2 namespace",
      md: { ...without(PROM_BASE, "metricName"), namespace: "foo" },
      error: "",
      values: { namespace: "foo" },
    },
    {
      name: "3 ignoreNullValues false",
      md: { ...PROM_BASE, ignoreNullValues: "false" },
      error: "",
      values: { ignoreNullValues: false },
    },
    {
      name: "4 activationThreshold",
      md: { ...PROM_BASE, activationThreshold: "50" },
      error: "",
      values: { activationThreshold: 50 },
    },
    {
      name: "5 empty serverAddress",
      md: { ...PROM_BASE, serverAddress: "" },
      error: `${P}missing required parameter "serverAddress" in [triggerMetadata]`,
    },
    {
      name: "6 no threshold",
      md: without(PROM_BASE, "threshold"),
      error: `${P}missing required parameter "threshold" in [triggerMetadata]`,
    },
    {
      name: "7 threshold one",
      md: { ...PROM_BASE, threshold: "one" },
      error:
        `${P}unable to set param "threshold" value "one": unable to unmarshal to field type float64: invalid character 'o' looking for beginning of value`,
    },
    {
      name: "8 activationThreshold one",
      md: { ...PROM_BASE, activationThreshold: "one" },
      error:
        `${P}unable to set param "activationThreshold" value "one": unable to unmarshal to field type float64: invalid character 'o' looking for beginning of value`,
    },
    {
      name: "9 empty query",
      md: { ...PROM_BASE, query: "" },
      error: `${P}missing required parameter "query" in [triggerMetadata]`,
    },
    {
      name: "10 ignoreNullValues xxxx",
      md: { ...PROM_BASE, ignoreNullValues: "xxxx" },
      error:
        `${P}unable to set param "ignoreNullValues" value "xxxx": unable to parse boolean value "xxxx": strconv.ParseBool: parsing "xxxx": invalid syntax`,
    },
    {
      name: "11 unsafeSsl",
      md: { ...PROM_BASE, serverAddress: "https://localhost:9090", unsafeSsl: "true" },
      error: "",
      values: { unsafeSsl: true },
    },
    {
      name: "12 customHeaders",
      md: { ...PROM_BASE, customHeaders: "key1=value1,key2=value2" },
      error: "",
      values: { customHeaders: { key1: "value1", key2: "value2" } },
    },
    {
      name: "13 customHeaders without =",
      md: { ...PROM_BASE, customHeaders: "key1=value1,key2" },
      error:
        `${P}unable to set param "customHeaders" value "key1=value1,key2": expected format key=value, got "key2"`,
    },
    {
      name: "14 queryParameters",
      md: { ...PROM_BASE, queryParameters: "key1=value1,key2=value2" },
      error: "",
      values: { queryParameters: { key1: "value1", key2: "value2" } },
    },
    {
      name: "15 queryParameters without =",
      md: { ...PROM_BASE, queryParameters: "key1=value1,key2" },
      error:
        `${P}unable to set param "queryParameters" value "key1=value1,key2": expected format key=value, got "key2"`,
    },
    {
      name: "16 timeout in milliseconds",
      md: { ...PROM_BASE, timeout: "1000" },
      error: "",
      values: { timeout: 1 },
    },
    {
      name: "17 negative timeout",
      md: { ...PROM_BASE, timeout: "-1" },
      error:
        `${P}unable to set param "timeout" value "-1": duration cannot be negative: -1 milliseconds`,
    },
    {
      name: "18 timeout a",
      md: { ...PROM_BASE, timeout: "a" },
      error:
        `${P}unable to set param "timeout" value "a": unable to parse duration value "a": must be either a duration string (e.g. '30s', '5m') or a number of milliseconds`,
    },
  ]);
});

describe("prometheus authentication (testPrometheusAuthMetadata)", () => {
  const md = (modes: string): Md => ({ ...PROM_BASE, authModes: modes });
  run("prometheus", P, [
    { name: "0 tls", md: md("tls"), auth: { ca: "c", cert: "c", key: "k" }, error: "" },
    { name: "1 tls without ca", md: md("tls"), auth: { cert: "c", key: "k" }, error: "" },
    {
      name: "2 tls without key",
      md: md("tls"),
      auth: { ca: "c", cert: "c" },
      error: `${P}cert=<present> and key=<empty> are required when tls auth is enabled`,
    },
    {
      name: "3 tls without cert",
      md: md("tls"),
      auth: { ca: "c", key: "k" },
      error: `${P}cert=<empty> and key=<present> are required when tls auth is enabled`,
    },
    { name: "4 bearer", md: md("bearer"), auth: { bearerToken: "t" }, error: "" },
    {
      name: "5 bearer without token",
      md: md("bearer"),
      auth: {},
      error: `${P}bearer token=<empty> is required when bearer auth is enabled`,
    },
    { name: "6 basic", md: md("basic"), auth: { username: "u", password: "p" }, error: "" },
    {
      name: "7 basic without username",
      md: md("basic"),
      auth: {},
      error: `${P}username=<empty> is required when basic auth is enabled`,
    },
    {
      name: "8 tls and basic",
      md: md("tls, basic"),
      auth: { ca: "c", cert: "c", key: "k", username: "u", password: "p" },
      error: "",
      values: { authModes: "tls, basic" },
    },
    {
      name: "9 tls and basic without the certificate",
      md: md("tls,basic"),
      auth: { username: "u", password: "p" },
      error: `${P}cert=<empty> and key=<empty> are required when tls auth is enabled`,
    },
    {
      name: "10 custom",
      md: md("custom"),
      auth: { customAuthHeader: "header", customAuthValue: "value" },
      error: "",
    },
    {
      name: "11 custom with an empty header",
      md: md("custom"),
      auth: { customAuthHeader: "" },
      error:
        `${P}customAuthHeader=<empty> and customAuthValue=<empty> are required when custom auth is enabled`,
    },
    {
      name: "12 custom with an empty value",
      md: md("custom"),
      auth: { customAuthValue: "" },
      error:
        `${P}customAuthHeader=<empty> and customAuthValue=<empty> are required when custom auth is enabled`,
    },
    {
      name: "13 custom values trimmed",
      md: md("custom"),
      auth: { customAuthHeader: "header\n", customAuthValue: "value\n" },
      error: "",
      values: { customAuthHeader: "header", customAuthValue: "value" },
    },
    {
      name: "15 pod identity with another auth",
      md: md("basic"),
      auth: { username: "u", password: "p" },
      ctx: { podIdentity: "azure-workload" },
      error: "pod identity cannot be enabled with other auth types",
    },
    {
      name: "16 pod identity alone",
      md: PROM_BASE,
      ctx: { podIdentity: "azure-workload" },
      error: "",
    },
    {
      name: "bearer and basic at once",
      md: md("bearer,basic"),
      error:
        `${P}parameter "authModes,authMode" value "bearer,basic" must contain only one of [bearer basic oauth]`,
    },
    {
      name: "an unknown mode",
      md: md("foo"),
      error:
        `${P}parameter "authModes,authMode" value "foo" must be one of [apiKey basic tls bearer custom oauth]`,
    },
  ]);
});

// ---- metrics-api ---------------------------------------------------------------------------

const MP = "error parsing metrics API metadata: ";
const M_OUTER = "error parsing metric API metadata: ";
const URL = "http://dummy:1230/api/v1/";

describe("metrics-api metadata (testMetricsAPIMetadata)", () => {
  const tv =
    'unable to set param "targetValue" value "aa": unable to unmarshal to field type float64: invalid character \'a\' looking for beginning of value';
  run("metrics-api", M_OUTER, [
    {
      name: "0 nothing",
      md: {},
      error: `${MP}missing required parameter "url" in [triggerMetadata]\n` +
        `missing required parameter "valueLocation" in [triggerMetadata]`,
    },
    {
      name: "1 base",
      md: { url: URL, valueLocation: "metric.test", targetValue: "42" },
      error: "",
      values: {
        targetValue: 42,
        activationTargetValue: 0,
        format: "json",
        aggregationType: "average",
        unsafeSsl: false,
      },
    },
    {
      name: "2 targetValue aa",
      md: { url: URL, valueLocation: "metric", targetValue: "aa" },
      error: MP + tv,
    },
    {
      name: "3 activationTargetValue aa",
      md: { url: URL, valueLocation: "metric", targetValue: "1", activationTargetValue: "aa" },
      error: MP + tv.replace('"targetValue"', '"activationTargetValue"'),
    },
    {
      name: "4 no valueLocation",
      md: { url: URL, targetValue: "aa" },
      error: `${MP}${tv}\nmissing required parameter "valueLocation" in [triggerMetadata]`,
    },
    {
      name: "5 no url",
      md: { valueLocation: "metric", targetValue: "aa" },
      error: `${MP}${tv}\nmissing required parameter "url" in [triggerMetadata]`,
    },
    {
      name: "6 no targetValue",
      md: { url: URL, valueLocation: "metric" },
      error: "no targetValue given in metadata",
    },
    {
      name: "6 no targetValue with scalingModifiers",
      md: { url: URL, valueLocation: "metric" },
      ctx: { modifiers: true },
      error: "",
    },
    {
      name: "7 timeout",
      md: { url: URL, valueLocation: "metric", targetValue: "42", timeout: "1000" },
      error: "",
      values: { timeout: 1 },
    },
    {
      name: "8 negative timeout",
      md: { url: URL, valueLocation: "metric", targetValue: "42", timeout: "-1" },
      error:
        `${MP}unable to set param "timeout" value "-1": duration cannot be negative: -1 milliseconds`,
    },
    {
      name: "format csv",
      md: { url: URL, valueLocation: "metric", targetValue: "42", format: "csv" },
      error: `${MP}parameter "format" value "csv" must be one of [prometheus json xml yaml]`,
    },
  ]);
});

describe("metrics-api authentication (testMetricsAPIAuthMetadata)", () => {
  const base: Md = { url: URL, valueLocation: "metric", targetValue: "42" };
  run("metrics-api", M_OUTER, [
    {
      name: "0 tls",
      md: { ...base, authMode: "tls" },
      auth: { ca: "c", cert: "c", key: "k" },
      error: "",
    },
    {
      name: "2 tls without key",
      md: { ...base, authMode: "tls" },
      auth: { ca: "c", cert: "c" },
      error: `${MP}cert=<present> and key=<empty> are required when tls auth is enabled`,
    },
    {
      name: "4 apiKey",
      md: { ...base, authMode: "apiKey" },
      auth: { apiKey: "k" },
      error: "",
      values: { method: "header" },
    },
    {
      name: "7 apiKey in the query",
      md: { ...base, authMode: "apiKey" },
      auth: { apiKey: "k", method: "query", keyParamName: "custom" },
      error: "",
      values: { method: "query", keyParamName: "custom" },
    },
    {
      name: "8 apiKey without a key",
      md: { ...base, authMode: "apiKey" },
      auth: {},
      error: `${MP}apiKey is required when apiKey auth is enabled`,
    },
    {
      name: "10 basic without username",
      md: { ...base, authMode: "basic" },
      auth: {},
      error: `${MP}username=<empty> is required when basic auth is enabled`,
    },
    {
      name: "11 bearer by its alias",
      md: { ...base, authMode: "bearer" },
      auth: { token: "bearerTokenValue" },
      error: "",
      values: { bearerToken: "bearerTokenValue" },
    },
    {
      name: "15 unsafeSsl yes",
      md: { ...base, unsafeSsl: "yes" },
      error:
        `${MP}unable to set param "unsafeSsl" value "yes": unable to parse boolean value "yes": strconv.ParseBool: parsing "yes": invalid syntax`,
    },
    {
      name: "16 apiKey and tls",
      md: { ...base, authMode: "apiKey,tls" },
      auth: { apiKey: "k", ca: "c", cert: "c", key: "k" },
      error: "",
    },
  ]);
});

// ---- aws-sqs-queue -------------------------------------------------------------------------

const S = "error parsing SQS queue metadata: ";
const QUEUE = "https://sqs.eu-west-1.amazonaws.com/account_id/DeleteArtifactQ";

describe("aws-sqs-queue metadata (testAWSSQSMetadata)", () => {
  const md: Md = { queueURL: QUEUE, queueLength: "1", awsRegion: "eu-west-1" };
  const keys: Md = { awsAccessKeyId: "none", awsSecretAccessKey: "none" };
  run("aws-sqs-queue", S, [
    {
      name: "0 nothing",
      md: {},
      auth: keys,
      error: `${S}missing required parameter "queueURL" in [triggerMetadata resolvedEnv]\n` +
        `missing required parameter "awsRegion" in [triggerMetadata authParams]`,
    },
    {
      name: "1 base",
      md,
      auth: keys,
      error: "",
      values: {
        queueLength: 1,
        activationQueueLength: 0,
        scaleOnInFlight: true,
        scaleOnDelayed: false,
      },
    },
    {
      name: "3 a URL without queue",
      md: { ...md, queueURL: "https://sqs.eu-west-1.amazonaws.com/account_id" },
      auth: keys,
      error: "cannot get queueName from queueURL",
    },
    {
      name: "4 a URL without path",
      md: { ...md, queueURL: "https://sqs.eu-west-1.amazonaws.com" },
      auth: keys,
      error: "cannot get queueName from queueURL",
    },
    {
      name: "5 empty awsRegion",
      md: { ...md, awsRegion: "" },
      auth: keys,
      error: `${S}missing required parameter "awsRegion" in [triggerMetadata authParams]`,
    },
    {
      name: "7 queueLength a",
      md: { ...md, queueLength: "a" },
      auth: keys,
      error:
        `${S}unable to set param "queueLength" value "a": unable to unmarshal to field type int64: invalid character 'a' looking for beginning of value`,
    },
    {
      name: "queueLength 5.5",
      md: { ...md, queueLength: "5.5" },
      auth: keys,
      error:
        `${S}unable to set param "queueLength" value "5.5": unable to unmarshal to field type int64: json: cannot unmarshal number 5.5 into Go value of type int64`,
    },
    {
      name: "8 activationQueueLength",
      md: { ...md, activationQueueLength: "1" },
      auth: keys,
      error: "",
      values: { activationQueueLength: 1 },
    },
    {
      name: "12 empty key id",
      md,
      auth: { awsAccessKeyId: "", awsSecretAccessKey: "none" },
      error: "awsAccessKeyID not found",
    },
    {
      name: "13 empty secret",
      md,
      auth: { awsAccessKeyId: "none", awsSecretAccessKey: "" },
      error: "awsSecretAccessKey not found",
    },
    { name: "16 pod identity aws", md, auth: {}, ctx: { podIdentity: "aws" }, error: "" },
    {
      name: "18 operator's identity",
      md: { ...md, identityOwner: "operator" },
      auth: {},
      error: "",
    },
    {
      name: "20 a queue name, not a URL",
      md: { ...md, queueURL: "my-queue" },
      auth: keys,
      error: "",
    },
    {
      name: "21 scaleOnInFlight false",
      md: { ...md, queueURL: "my-queue", scaleOnInFlight: "false" },
      auth: keys,
      error: "",
      values: { scaleOnInFlight: false },
    },
    {
      name: "23 queueURLFromEnv",
      md: { queueURLFromEnv: "QUEUE_URL", queueLength: "1", awsRegion: "eu-west-1" },
      env: { QUEUE_URL: QUEUE },
      auth: keys,
      error: "",
      values: { queueURL: QUEUE },
    },
    {
      name: "24 no queueURL",
      md: { queueLength: "1", awsRegion: "eu-west-1" },
      auth: keys,
      error: `${S}missing required parameter "queueURL" in [triggerMetadata resolvedEnv]`,
    },
    {
      name: "25 queueURLFromEnv empty",
      md: { queueURLFromEnv: "QUEUE_URL", queueLength: "1", awsRegion: "eu-west-1" },
      env: { QUEUE_URL: "" },
      auth: keys,
      error: `${S}missing required parameter "queueURL" in [triggerMetadata resolvedEnv]`,
    },
    { name: "no credentials at all", md, auth: {}, error: "awsAccessKeyID not found" },
    {
      name: "a scheme with no path",
      md: { ...md, queueURL: "my.queue:fifo" },
      auth: keys,
      error: "cannot get queueName from queueURL",
    },
  ]);
});

// ---- cron ----------------------------------------------------------------------------------

describe("cron metadata (testCronMetadata)", () => {
  const C = "error parsing cron metadata: ";
  run("cron", C, [
    {
      name: "0 nothing",
      md: {},
      error: `missing required parameter "start" in [triggerMetadata]\n` +
        `missing required parameter "end" in [triggerMetadata]\n` +
        `missing required parameter "timezone" in [triggerMetadata]\n` +
        `missing required parameter "desiredReplicas" in [triggerMetadata]\n` +
        "error parsing start schedule: empty spec string",
    },
    {
      name: "1 Thursdays",
      md: {
        timezone: "Etc/UTC",
        start: "0 0 * * Thu",
        end: "59 23 * * Thu",
        desiredReplicas: "10",
      },
      error: "",
      values: { desiredReplicas: 10 },
    },
    {
      name: "2 steps",
      md: {
        timezone: "Etc/UTC",
        start: "0 */2 * * *",
        end: "0 1-23/2 * * *",
        desiredReplicas: "10",
      },
      error: "",
    },
    {
      name: "4 no desiredReplicas",
      md: { timezone: "Asia/Kolkata", start: "30 * * * *", end: "45 * * * *" },
      error:
        `missing required parameter "desiredReplicas" in [triggerMetadata]\nno desiredReplicas specified`,
    },
    {
      name: "5 no timezone",
      md: { start: "30 * * * *", end: "45 * * * *", desiredReplicas: "10" },
      error: `missing required parameter "timezone" in [triggerMetadata]`,
    },
    {
      name: "6 a range",
      md: {
        timezone: "Asia/Kolkata",
        start: "30-33 * * * *",
        end: "45 * * * *",
        desiredReplicas: "10",
      },
      error: "",
    },
    {
      name: "8 a negative start",
      md: {
        timezone: "Asia/Kolkata",
        start: "-30 * * * *",
        end: "45 * * * *",
        desiredReplicas: "10",
      },
      error:
        'error parsing start schedule: failed to parse int from : strconv.Atoi: parsing "": invalid syntax',
    },
    {
      name: "10 a negative month",
      md: {
        timezone: "Asia/Kolkata",
        start: "30 * * * *",
        end: "50 * * -3 *",
        desiredReplicas: "10",
      },
      error:
        'error parsing end schedule: failed to parse int from : strconv.Atoi: parsing "": invalid syntax',
    },
    {
      name: "11 start and end the same",
      md: {
        timezone: "Asia/Kolkata",
        start: "30 * * * *",
        end: "30 * * * *",
        desiredReplicas: "10",
      },
      error: "start and end can not have exactly same time input",
    },
    {
      name: "a descriptor",
      md: { timezone: "Etc/UTC", start: "@hourly", end: "30 * * * *", desiredReplicas: "1" },
      error: "error parsing start schedule: parser does not accept descriptors: @hourly",
    },
  ]);
});

// ---- influxdb ------------------------------------------------------------------------------

describe("influxdb metadata (testInfluxDBMetadata)", () => {
  const I = "error parsing influxdb metadata: ";
  const env = { INFLUX_ORG: "influx_org", INFLUX_TOKEN: "myToken" };
  const md: Md = {
    serverURL: "https://influxdata.com",
    metricName: "influx_metric",
    organizationName: "influx_org",
    query: "from(bucket: hello)",
    thresholdValue: "10",
    unsafeSsl: "false",
  };
  run("influxdb", I, [
    {
      name: "1 nothing",
      md: {},
      env,
      error: `${I}missing required parameter "query" in [triggerMetadata]\n` +
        `missing required parameter "serverURL" in [triggerMetadata authParams]\n` +
        "organizationName is required if influxVersion is 2",
    },
    {
      name: "2 base",
      md,
      env,
      auth: { authToken: "myToken" },
      error: "",
      values: {
        organizationName: "influx_org",
        authToken: "myToken",
        influxVersion: "2",
        queryType: "InfluxQL",
        thresholdValue: 10,
      },
    },
    {
      name: "3 from env",
      md: {
        ...without(md, "organizationName"),
        organizationNameFromEnv: "INFLUX_ORG",
        authTokenFromEnv: "INFLUX_TOKEN",
      },
      env,
      auth: {},
      error: "",
      values: { organizationName: "influx_org", authToken: "myToken" },
    },
    {
      name: "4 no serverURL",
      md: without(md, "serverURL"),
      env,
      error: `${I}missing required parameter "serverURL" in [triggerMetadata authParams]`,
    },
    {
      name: "5 no organizationName",
      md: without(md, "organizationName"),
      env,
      error: `${I}organizationName is required if influxVersion is 2`,
    },
    {
      name: "6 no query",
      md: without(md, "query"),
      env,
      error: `${I}missing required parameter "query" in [triggerMetadata]`,
    },
    {
      name: "7 no thresholdValue",
      md: without(md, "thresholdValue"),
      env,
      error: "no threshold value given",
    },
    {
      name: "9 from the authentication",
      md: { query: "from(bucket: hello)", thresholdValue: "10" },
      env,
      auth: {
        serverURL: "https://influxdata.com",
        organizationName: "influx_org",
        authToken: "myToken",
      },
      error: "",
    },
    {
      name: "11 activationThresholdValue aa",
      md: { ...md, activationThresholdValue: "aa" },
      env,
      error:
        `${I}unable to set param "activationThresholdValue" value "aa": unable to unmarshal to field type float64: invalid character 'a' looking for beginning of value`,
    },
    {
      name: "12 influxVersion 1",
      md: { ...md, influxVersion: "1" },
      env,
      error: `${I}parameter "influxVersion" value "1" must be one of [2 3]`,
    },
    {
      name: "13 v3 without database",
      md: { ...md, influxVersion: "3", metricKey: "mymetric" },
      env,
      error: `${I}database is required if influxVersion is 3`,
    },
    {
      name: "14 v3",
      md: { ...md, influxVersion: "3", database: "test", metricKey: "mymetric" },
      env,
      error: "",
      values: { queryType: "InfluxQL" },
    },
    {
      name: "16 v3 without metricKey",
      md: { ...md, influxVersion: "3", database: "test" },
      env,
      error: `${I}metricKey is required if influxVersion is 3`,
    },
    {
      name: "v3 with a bad query type",
      md: { ...md, influxVersion: "3", database: "test", metricKey: "m", queryType: "sql" },
      env,
      error: `${I}query type must be 'influxql' or 'flightsql'`,
    },
    {
      name: "19 authToken in the metadata",
      md: { ...md, authToken: "myToken" },
      env,
      error:
        `${I}scaler influxdb info: The 'authToken' setting from triggerMetadata is DEPRECATED and is removed in v2.20 - Use 'authToken' from resolvedEnv or authParams instead`,
    },
  ]);
});

// ---- cpu / memory --------------------------------------------------------------------------

describe("cpu and memory metadata (testCPUMemoryMetadata)", () => {
  const CP = "error parsing cpu metadata: ";
  run("cpu", CP, [
    { name: "0 nothing", md: {}, error: `missing required parameter "value" in [triggerMetadata]` },
    { name: "1 Utilization", md: { value: "50" }, ctx: { metricType: "Utilization" }, error: "" },
    { name: "2 AverageValue", md: { value: "50" }, ctx: { metricType: "AverageValue" }, error: "" },
    {
      name: "3 Value",
      md: { value: "50" },
      ctx: { metricType: "Value" },
      error: "unknown metric type: Value, allowed values are 'Utilization' or 'AverageValue'",
    },
    {
      name: "4 an empty value",
      md: { value: "" },
      error: `missing required parameter "value" in [triggerMetadata]`,
    },
    {
      name: "no metricType",
      md: { value: "50" },
      error: "unknown metric type: , allowed values are 'Utilization' or 'AverageValue'",
    },
    {
      name: "a fraction for Utilization",
      md: { value: "50.5" },
      ctx: { metricType: "Utilization" },
      error: 'strconv.ParseInt: parsing "50.5": invalid syntax',
    },
    {
      name: "the removed type key",
      md: { value: "50", type: "Utilization" },
      ctx: { metricType: "Utilization" },
      error:
        "scaler cpu info: The 'type' setting is DEPRECATED and is removed in v2.18 - Use 'metricType' instead.",
    },
  ]);
  it("a metricType of Utilization on an external trigger, before its metadata", () => {
    assert.throws(
      () =>
        readTrigger("prometheus", { metadata: {} }, {
          modifiers: false,
          metricType: "Utilization",
        }),
      {
        message:
          "error getting scaler metric type: 'Utilization' metric type is unsupported for external metrics, allowed values are 'Value' or 'AverageValue'",
      },
    );
  });

  it("an unknown trigger type", () => {
    assert.throws(() => readTrigger("kafka", { metadata: {} }, { modifiers: false }), {
      message: "no scaler found for type: kafka",
    });
  });
});
