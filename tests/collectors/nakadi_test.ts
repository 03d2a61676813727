import { after, before, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  createNakadiFactory,
  type NakadiOptions,
  subscriptionsUrl,
} from "../../src/collectors/nakadi.ts";
import type { Collector } from "../../src/collectors/types.ts";
import { startNakadiFake } from "../fakes/nakadi.ts";
import type { FakeSubscription, NakadiFake } from "../fakes/nakadi.ts";
import { context, externalPlan, NOW, rejection, thrown } from "./backend_support.ts";

function sub(id: string, stats: FakeSubscription["stats"], group = "g1"): FakeSubscription {
  return {
    id,
    owning_application: "shop",
    event_types: ["order.created", "order.paid"],
    consumer_group: group,
    stats,
  };
}

// Twelve subscriptions of the filter over pages of 5 (3 pages), plus one of another group.
const SUBSCRIPTIONS: FakeSubscription[] = [
  sub("s-0", {
    "order.created": [
      { partition: "0", unconsumed_events: 10, consumer_lag_seconds: 3 },
      { partition: "1", unconsumed_events: 5, consumer_lag_seconds: 42 },
    ],
    "order.paid": [{ partition: "0", unconsumed_events: 1, consumer_lag_seconds: 7 }],
  }),
  ...Array.from({ length: 10 }, (_, i) =>
    sub(`s-${i + 1}`, {
      "order.created": [{ partition: "0", unconsumed_events: 2, consumer_lag_seconds: i }],
    })),
  // The largest lag sits on the last page: a collector that stops after page one misses it.
  sub("s-11", {
    "order.created": [{ partition: "0", unconsumed_events: 100, consumer_lag_seconds: 900 }],
    "order.paid": [{ partition: "3" }],
  }),
  sub("other", {
    "order.created": [{ partition: "0", unconsumed_events: 5000, consumer_lag_seconds: 5000 }],
  }, "g2"),
];

describe("nakadi collector against a Nakadi fake", () => {
  let fake: NakadiFake;
  before(async () => {
    fake = await startNakadiFake({
      subscriptions: SUBSCRIPTIONS,
      pageSize: 5,
      authorization: "Bearer nakadi-token",
    });
  });
  after(async () => {
    await fake.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
    fake.failNext.length = 0;
  });
  const make = (config: Record<string, string>, extra: NakadiOptions = {}): Collector =>
    createNakadiFactory({
      endpoint: fake.url,
      tokenName: "nakadi",
      token: "nakadi-token",
      credentialsDir: "/nonexistent",
      maxResponseBytes: 10485760,
      ...extra,
    }).create({ plan: externalPlan("nakadi", config, "lag") });
  const filter = {
    "owning-application": "shop",
    "event-types": "order.created, order.paid,",
    "consumer-group": "g1",
  };

  it("sums unconsumed events over partitions, event types and every page of subscriptions", async () => {
    const got = await make({ "metric-type": "unconsumed-events", ...filter }).collect(context());
    assert.deepEqual(got, { samples: [{ value: 10 + 5 + 1 + 10 * 2 + 100, timestamp: NOW }] });
  });

  it("takes the maximum consumer lag over partitions, event types and subscriptions", async () => {
    const got = await make({ "metric-type": "consumer-lag-seconds", ...filter }).collect(context());
    assert.deepEqual(got, { samples: [{ value: 900, timestamp: NOW }] });
  });

  it("asks for the filtered subscriptions, follows _links.next, then the stats with time lag", async () => {
    await make({ "metric-type": "consumer-lag-seconds", ...filter }).collect(context());
    const lists = fake.requests.filter((r) => r.path === "/subscriptions");
    assert.deepEqual(lists.map((r) => r.query), [
      [
        ["owning_application", "shop"],
        ["event_type", "order.created"],
        ["event_type", "order.paid"],
        ["consumer_group", "g1"],
      ],
      [
        ["owning_application", "shop"],
        ["event_type", "order.created"],
        ["event_type", "order.paid"],
        ["consumer_group", "g1"],
        ["offset", "5"],
        ["limit", "5"],
      ],
      [
        ["owning_application", "shop"],
        ["event_type", "order.created"],
        ["event_type", "order.paid"],
        ["consumer_group", "g1"],
        ["offset", "10"],
        ["limit", "5"],
      ],
    ]);
    const stats = fake.requests.filter((r) => r.path !== "/subscriptions");
    assert.deepEqual(
      stats.map((r) => [r.path, r.query]),
      Array.from({ length: 12 }, (_, i) => [
        `/subscriptions/s-${i}/stats`,
        [["show_time_lag", "true"]],
      ]),
    );
    assert.ok(fake.requests.every((r) => r.headers["authorization"] === "Bearer nakadi-token"));
  });

  it("reads one subscription's stats when subscription-id is set", async () => {
    const got = await make({ "metric-type": "unconsumed-events", "subscription-id": "s-0" })
      .collect(context());
    assert.deepEqual(got.samples, [{ value: 16, timestamp: NOW }]);
    assert.deepEqual(fake.requests.map((r) => r.path), ["/subscriptions/s-0/stats"]);
  });

  it("builds the first subscriptions page URL with repeated event_type parameters", () => {
    assert.equal(
      subscriptionsUrl("http://nakadi", {
        owningApplication: "a b",
        eventTypes: ["x", "y"],
        consumerGroup: "g",
      }),
      "http://nakadi/subscriptions?owning_application=a+b&event_type=x&event_type=y&consumer_group=g",
    );
  });

  it("waits the Retry-After of a 429 and then succeeds", async () => {
    fake.failNext.push({
      pathPrefix: "/subscriptions/s-0/stats",
      answer: { status: 429, headers: { "retry-after": "1" }, body: "slow down" },
    });
    const start = Date.now();
    const got = await make({ "metric-type": "unconsumed-events", "subscription-id": "s-0" })
      .collect(context());
    const waited = Date.now() - start;
    assert.equal(got.samples[0].value, 16);
    assert.equal(fake.requests.length, 2);
    assert.ok(waited >= 950 && waited < 5000, `waited ${waited} ms`);
  });

  it("retries 5xx answers with back-off and gives up after 3 tries", async () => {
    for (let i = 0; i < 3; i++) {
      fake.failNext.push({
        pathPrefix: "/subscriptions/s-0",
        answer: { status: 503, body: "down" },
      });
    }
    const start = Date.now();
    const msg = await rejection(
      make({ "metric-type": "unconsumed-events", "subscription-id": "s-0" }).collect(context()),
    );
    assert.equal(
      msg,
      `unsuccessful response "503" from ${fake.url}/subscriptions/s-0/stats?show_time_lag=true: down (after 3 tries)`,
    );
    assert.equal(fake.requests.length, 3);
    assert.ok(Date.now() - start >= 290, "waited 100 ms then 200 ms");
  });

  it("recovers when a retry succeeds", async () => {
    fake.failNext.push({ pathPrefix: "/subscriptions", answer: { status: 502, body: "" } });
    const got = await make({ "metric-type": "unconsumed-events", ...filter }).collect(context());
    assert.equal(got.samples[0].value, 136);
  });

  it("does not retry a 4xx answer", async () => {
    const msg = await rejection(
      make({ "metric-type": "unconsumed-events", "subscription-id": "missing" }).collect(context()),
    );
    assert.match(
      msg,
      /^unsuccessful response "404" from .*\/subscriptions\/missing\/stats\?show_time_lag=true: /,
    );
    assert.equal(fake.requests.length, 1);
  });

  it("refuses a 429 whose Retry-After is not a number or a date", async () => {
    fake.failNext.push({
      pathPrefix: "/subscriptions/s-0",
      answer: { status: 429, headers: { "retry-after": "soon" }, body: "" },
    });
    assert.match(
      await rejection(
        make({ "metric-type": "unconsumed-events", "subscription-id": "s-0" }).collect(context()),
      ),
      /\(invalid Retry-After "soon"\)$/,
    );
  });

  it("stops waiting for Retry-After when the collection is aborted", async () => {
    fake.failNext.push({
      pathPrefix: "/subscriptions/s-0",
      answer: { status: 429, headers: { "retry-after": "20" }, body: "" },
    });
    const start = Date.now();
    const msg = await rejection(
      make({ "metric-type": "unconsumed-events", "subscription-id": "s-0" })
        .collect(context(AbortSignal.timeout(300))),
    );
    assert.match(
      msg,
      /^request to .*\/subscriptions\/s-0\/stats\?show_time_lag=true aborted: timed out$/,
    );
    assert.ok(Date.now() - start < 3000);
  });

  it("gives up on a server that never answers when the collection times out", async () => {
    fake.failNext.push({ pathPrefix: "/subscriptions/s-0", answer: { hang: true } });
    const msg = await rejection(
      make({ "metric-type": "unconsumed-events", "subscription-id": "s-0" })
        .collect(context(AbortSignal.timeout(200))),
    );
    assert.match(
      msg,
      /^request to .*\/subscriptions\/s-0\/stats\?show_time_lag=true failed: timed out$/,
    );
    assert.equal(fake.requests.length, 1);
  });

  const garbage: [string, string, RegExp][] = [
    ["a body that is not JSON", "not json", /^invalid JSON from .*\/subscriptions\/s-0\/stats/],
    ["stats without items", '{"foo":1}', /^unexpected stats response from .*: no items list$/],
    [
      "stats with no event types",
      '{"items":[]}',
      /^unexpected stats response from .*: no event types$/,
    ],
    [
      "a partition with a string count",
      '{"items":[{"partitions":[{"unconsumed_events":"7"}]}]}',
      /: items\[0\]\.partitions\[0\]\.unconsumed_events is "7", want a number$/,
    ],
  ];
  for (const [name, body, want] of garbage) {
    it(`reports ${name} as an error`, async () => {
      fake.failNext.push({ pathPrefix: "/subscriptions/s-0", answer: { status: 200, body } });
      assert.match(
        await rejection(
          make({ "metric-type": "unconsumed-events", "subscription-id": "s-0" }).collect(context()),
        ),
        want,
      );
    });
  }

  it("refuses a response larger than --max-response-bytes without retrying", async () => {
    const msg = await rejection(
      make({ "metric-type": "unconsumed-events", "subscription-id": "s-0" }, {
        maxResponseBytes: 64,
      }).collect(context()),
    );
    assert.match(
      msg,
      /^response from .*\/subscriptions\/s-0\/stats\?show_time_lag=true exceeds 64 bytes$/,
    );
    assert.equal(fake.requests.length, 1);
  });

  it("errors when no subscription matches the filter", async () => {
    const msg = await rejection(
      make({ "metric-type": "unconsumed-events", ...filter, "consumer-group": "nobody" })
        .collect(context()),
    );
    assert.equal(
      msg,
      `no subscriptions match owning_application=shop event_type=order.created,order.paid consumer_group=nobody at ${fake.url}`,
    );
  });

  it("refuses a next link to another host", async () => {
    fake.failNext.push({
      pathPrefix: "/subscriptions",
      answer: {
        status: 200,
        body: JSON.stringify({
          items: [{ id: "s-0" }],
          _links: { next: { href: "http://127.0.0.2:1/subscriptions?offset=1" } },
        }),
      },
    });
    assert.equal(
      await rejection(make({ "metric-type": "unconsumed-events", ...filter }).collect(context())),
      `subscriptions page link "http://127.0.0.2:1/subscriptions?offset=1" leaves ${fake.url}`,
    );
  });

  const configErrors: [string, Record<string, string>, string][] = [
    [
      "a missing metric-type",
      { "subscription-id": "s" },
      "External metric `lag` of HPA default/app needs matchLabels.metric-type or annotation metric-config.external.lag.nakadi/metric-type (consumer-lag-seconds or unconsumed-events)",
    ],
    [
      "an unknown metric-type",
      { "metric-type": "lag", "subscription-id": "s" },
      'invalid metric-type "lag" for External metric `lag` of HPA default/app (annotation metric-config.external.lag.nakadi/metric-type): want consumer-lag-seconds or unconsumed-events',
    ],
    [
      "a partial filter",
      { "metric-type": "unconsumed-events", "owning-application": "shop", "event-types": " , " },
      'invalid event-types " , " for External metric `lag` of HPA default/app (annotation metric-config.external.lag.nakadi/event-types): want a comma-separated list of event type names; ' +
      "External metric `lag` of HPA default/app needs matchLabels.subscription-id or all of owning-application, event-types, consumer-group",
    ],
    [
      "event-types with only separators",
      {
        "metric-type": "unconsumed-events",
        "owning-application": "shop",
        "event-types": "  , ,  ",
        "consumer-group": "g1",
      },
      'invalid event-types "  , ,  " for External metric `lag` of HPA default/app (annotation metric-config.external.lag.nakadi/event-types): want a comma-separated list of event type names',
    ],
  ];
  for (const [name, config, want] of configErrors) {
    it(`refuses ${name}`, () => assert.equal(thrown(() => make(config)), want));
  }
});
