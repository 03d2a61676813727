/**
 * The config schemas of influxdb, sqs-queue-length, zmon and nakadi (src/core/kube_metrics_adapter/configs/) as
 * `plan` and `serve` meet them: each invalid config has one message, the same from `planHpa`
 * and from the collector's factory (created with typed options, every backend set up), so a
 * metric `plan` calls OK is one the factory accepts.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createInfluxDbFactory } from "../../src/collectors/influxdb.ts";
import { createNakadiFactory } from "../../src/collectors/nakadi.ts";
import { createSqsQueueLengthFactory } from "../../src/collectors/sqs.ts";
import type { CollectorFactory } from "../../src/collectors/types.ts";
import { createZmonFactory } from "../../src/collectors/zmon.ts";
import { planHpa } from "../../src/core/kube_metrics_adapter/plan.ts";
import type { MetricPlan } from "../../src/core/types.ts";

const FACTORIES: Readonly<Record<string, CollectorFactory>> = {
  influxdb: createInfluxDbFactory({
    address: "http://influx.test:8086",
    org: "acme",
    token: "operator-token",
  }),
  "sqs-queue-length": createSqsQueueLengthFactory({ regions: ["eu-central-1"] }),
  zmon: createZmonFactory({ endpoint: "http://kairosdb.test:8083", token: "t" }),
  nakadi: createNakadiFactory({ endpoint: "http://nakadi.test", token: "t" }),
};

/** The plan of one External metric `q` of HPA shop/web: `type` label, config by annotation. */
function plan(collector: string, config: Record<string, string>): MetricPlan {
  const annotations: Record<string, string> = {};
  for (const [k, v] of Object.entries(config)) {
    annotations[`metric-config.external.q.${collector}/${k}`] = v;
  }
  const [p] = planHpa({
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name: "web", namespace: "shop", annotations },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
      minReplicas: 1,
      maxReplicas: 10,
      metrics: [{
        type: "External",
        external: {
          metric: { name: "q", selector: { matchLabels: { type: collector } } },
          target: { type: "AverageValue", averageValue: "10" },
        },
      }],
    },
  });
  return p;
}

/** What the factory says about a plan's config: its error message, or null. */
function factoryError(p: MetricPlan): string | null {
  try {
    FACTORIES[p.collector!].create({ plan: { ...p, error: null } });
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

const WHAT = "External metric `q` of HPA shop/web";
const at = (collector: string, key: string): string =>
  `annotation metric-config.external.q.${collector}/${key}`;
const needs = (collector: string, key: string): string =>
  `${WHAT} needs matchLabels.${key} or ${at(collector, key)}`;
const invalid = (collector: string, key: string, value: string, why: string): string =>
  `invalid ${key} "${value}" for ${WHAT} (${at(collector, key)}): ${why}`;

const QUERY = 'from(bucket: "apps") |> range(start: -1m)';

/** [name, collector, config (annotations), the message of plan and factory]. */
const CASES: [string, string, Record<string, string>, string][] = [
  // influxdb
  ["influxdb without a query", "influxdb", {}, needs("influxdb", "query")],
  [
    "influxdb with a blank query",
    "influxdb",
    { query: "  " },
    invalid("influxdb", "query", "  ", "want a Flux query"),
  ],
  [
    "influxdb with a query-name that names no key",
    "influxdb",
    { "query-name": "depth" },
    `${needs("influxdb", "depth")} (the query named by query-name)`,
  ],
  [
    "influxdb with a query-name whose key is blank",
    "influxdb",
    { "query-name": "depth", depth: " " },
    invalid("influxdb", "depth", " ", "want a Flux query"),
  ],
  [
    "influxdb with an address that is not http",
    "influxdb",
    { query: QUERY, address: "ftp://influx.test" },
    invalid("influxdb", "address", "ftp://influx.test", "want an http:// or https:// URL"),
  ],
  [
    "influxdb with a link-local address",
    "influxdb",
    { query: QUERY, address: "http://169.254.169.254:8086" },
    invalid(
      "influxdb",
      "address",
      "http://169.254.169.254:8086",
      "a link-local address (allow with --allow-link-local-targets)",
    ),
  ],
  [
    "influxdb with a blank org",
    "influxdb",
    { query: QUERY, org: " " },
    invalid("influxdb", "org", " ", "want an organization name"),
  ],
  // sqs-queue-length
  [
    "sqs without a queue-name",
    "sqs-queue-length",
    { region: "eu-central-1" },
    needs("sqs-queue-length", "queue-name"),
  ],
  [
    "sqs without a region",
    "sqs-queue-length",
    { "queue-name": "orders" },
    needs("sqs-queue-length", "region"),
  ],
  [
    "sqs with a blank region",
    "sqs-queue-length",
    { "queue-name": "orders", region: " " },
    needs("sqs-queue-length", "region"),
  ],
  [
    "sqs with a queue-name SQS cannot have",
    "sqs-queue-length",
    { "queue-name": "a/b", region: "eu-central-1" },
    invalid(
      "sqs-queue-length",
      "queue-name",
      "a/b",
      "want up to 80 letters, digits, hyphens and underscores, with .fifo for a FIFO queue",
    ),
  ],
  [
    "sqs with an include-delayed that is not a boolean",
    "sqs-queue-length",
    { "queue-name": "orders", region: "eu-central-1", "include-delayed": "yes" },
    invalid("sqs-queue-length", "include-delayed", "yes", "want true or false"),
  ],
  // zmon
  ["zmon without a check-id", "zmon", {}, needs("zmon", "check-id")],
  [
    "zmon with a check-id that is not an integer",
    "zmon",
    { "check-id": "12a" },
    invalid("zmon", "check-id", "12a", "want an integer"),
  ],
  [
    "zmon with an unknown aggregator",
    "zmon",
    { "check-id": "1", aggregators: "avg,median" },
    invalid(
      "zmon",
      "aggregators",
      "avg,median",
      'unknown aggregator "median" (valid: avg, min, max, sum, count, last, diff)',
    ),
  ],
  [
    "zmon with a duration that is not a Go duration",
    "zmon",
    { "check-id": "1", duration: "5 minutes" },
    invalid("zmon", "duration", "5 minutes", "want a Go duration like 10m"),
  ],
  [
    "zmon with a negative duration",
    "zmon",
    { "check-id": "1", duration: "-5m" },
    invalid("zmon", "duration", "-5m", "want more than 0"),
  ],
  // nakadi
  [
    "nakadi without a metric-type",
    "nakadi",
    { "subscription-id": "s-1" },
    `${needs("nakadi", "metric-type")} (consumer-lag-seconds or unconsumed-events)`,
  ],
  [
    "nakadi with an unknown metric-type and no subscription",
    "nakadi",
    { "metric-type": "lag", "owning-application": "shop" },
    `${
      invalid("nakadi", "metric-type", "lag", "want consumer-lag-seconds or unconsumed-events")
    }; ${WHAT} needs matchLabels.subscription-id or all of owning-application, event-types, consumer-group`,
  ],
  [
    "nakadi with event-types that are only separators",
    "nakadi",
    {
      "metric-type": "unconsumed-events",
      "owning-application": "shop",
      "event-types": "  , ,  ",
      "consumer-group": "g1",
    },
    invalid(
      "nakadi",
      "event-types",
      "  , ,  ",
      "want a comma-separated list of event type names",
    ),
  ],
  [
    "nakadi with a filter without consumer-group",
    "nakadi",
    { "metric-type": "unconsumed-events", "owning-application": "shop", "event-types": "a,b" },
    `${WHAT} needs matchLabels.subscription-id or all of owning-application, event-types, consumer-group`,
  ],
  [
    "nakadi with a subscription-id that is not one",
    "nakadi",
    { "metric-type": "unconsumed-events", "subscription-id": "a/b" },
    invalid(
      "nakadi",
      "subscription-id",
      "a/b",
      "want letters, digits, dots, hyphens and underscores",
    ),
  ],
];

describe("backend config schemas: the same message from plan and from the factory", () => {
  for (const [name, collector, config, want] of CASES) {
    it(`refuses ${name}`, () => {
      const p = plan(collector, config);
      assert.equal(p.collector, collector);
      assert.equal(p.error, want);
      assert.equal(factoryError(p), want);
    });
  }
});

describe("backend config schemas: configs both accept", () => {
  const valid: [string, string, Record<string, string>][] = [
    ["influxdb with a query", "influxdb", { query: QUERY }],
    ["influxdb with the legacy query-name", "influxdb", { "query-name": "depth", depth: QUERY }],
    ["sqs with a FIFO queue", "sqs-queue-length", {
      "queue-name": "orders.fifo",
      region: "eu-central-1",
      "include-in-flight": "true",
      "include-delayed": "false",
    }],
    ["zmon with key, tags, duration and aggregators", "zmon", {
      "check-id": "1234",
      key: "custom.*",
      "tag-application": "shop",
      duration: "5m",
      aggregators: "avg, max",
    }],
    ["nakadi with a subscription filter", "nakadi", {
      "metric-type": "consumer-lag-seconds",
      "owning-application": "shop",
      "event-types": "order.created, order.paid,",
      "consumer-group": "g1",
    }],
  ];
  for (const [name, collector, config] of valid) {
    it(`accepts ${name}`, () => {
      const p = plan(collector, config);
      assert.equal(p.error, null);
      assert.equal(factoryError(p), null);
    });
  }
});
