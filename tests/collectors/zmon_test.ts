import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createZmonFactory,
  durationToSampling,
  type ZmonOptions,
} from "../../src/collectors/zmon.ts";
import type { Collector } from "../../src/collectors/types.ts";
import { startKairosFake } from "../fakes/kairosdb.ts";
import type { KairosAnswer, KairosFake } from "../fakes/kairosdb.ts";
import { context, externalPlan, rejection, thrown } from "./backend_support.ts";

describe("durationToSampling", () => {
  const cases: [string, number, { value: number; unit: string }][] = [
    ["10m is 10 minutes", 600, { value: 10, unit: "minutes" }],
    ["90s rounds to 2 minutes", 90, { value: 2, unit: "minutes" }],
    ["89s rounds to 1 minute", 89, { value: 1, unit: "minutes" }],
    ["1h30m rounds half up to 2 hours", 5400, { value: 2, unit: "hours" }],
    ["45s is 45 seconds", 45, { value: 45, unit: "seconds" }],
    ["1.5s rounds to 2 seconds", 1.5, { value: 2, unit: "seconds" }],
    ["250ms is 250 milliseconds", 0.25, { value: 250, unit: "milliseconds" }],
    ["7d is 1 week", 7 * 86400, { value: 1, unit: "weeks" }],
    ["30d is 1 month", 30 * 86400, { value: 1, unit: "months" }],
    ["400d is 1 year", 400 * 86400, { value: 1, unit: "years" }],
    ["below 1ms is 0 milliseconds", 0.0005, { value: 0, unit: "milliseconds" }],
  ];
  for (const [name, seconds, want] of cases) {
    it(name, () => assert.deepEqual(durationToSampling(seconds), want));
  }
});

describe("zmon collector against a KairosDB fake", () => {
  let fake: KairosFake;
  let answer: (q: unknown) => KairosAnswer = () => ({ series: [] });
  let dir: string;
  before(async () => {
    fake = await startKairosFake((q) => answer(q));
    dir = await mkdtemp(join(tmpdir(), "zmon-token-"));
  });
  after(async () => {
    await fake.close();
    await rm(dir, { recursive: true, force: true });
  });
  const options = (extra: ZmonOptions = {}): ZmonOptions => ({
    endpoint: fake.url,
    tokenName: "zmon",
    token: "static-token",
    credentialsDir: dir,
    maxResponseBytes: 10485760,
    ...extra,
  });
  const make = (config: Record<string, string>, extra?: ZmonOptions): Collector =>
    createZmonFactory(options(extra)).create({
      plan: externalPlan("zmon", config, "my-zmon"),
    });

  it("posts the KairosDB query kube-metrics-adapter builds, with key, tags and aggregators", async () => {
    answer = () => ({ series: [{ values: [[1699999000000, 3], [1699999500000, 4.5]] }] });
    const before = fake.server.requests.length;
    const c = make({
      "check-id": "1234",
      key: "custom.*",
      "tag-application": "my-app",
      "tag-alias": "cluster-1",
      aggregators: "avg,max",
      duration: "5m",
    });
    await c.collect(context());
    const req = fake.server.requests[before];
    assert.equal(req.method, "POST");
    assert.equal(req.path, "/api/v1/datapoints/query");
    assert.equal(
      req.body,
      '{"start_relative":{"value":5,"unit":"minutes"},"metrics":[{"name":"zmon.check.1234",' +
        '"limit":10000,"tags":{"alias":["cluster-1"],"application":["my-app"],"key":["custom.*"]},' +
        '"group_by":[{"name":"tag","tags":["key"]}],"aggregators":[' +
        '{"name":"avg","sampling":{"value":5,"unit":"minutes"}},' +
        '{"name":"max","sampling":{"value":5,"unit":"minutes"}}]}]}',
    );
    assert.equal(req.headers["authorization"], "Bearer static-token");
    assert.equal(req.headers["content-type"], "application/json");
    assert.equal(req.headers["x-attribution"], "hpa-metrics-adapter/1234");
  });

  it("defaults to the last aggregator over 10 minutes with no tags and no grouping", async () => {
    const before = fake.queries.length;
    await make({ "check-id": "7" }).collect(context());
    assert.deepEqual(fake.queries[before], {
      start_relative: { value: 10, unit: "minutes" },
      metrics: [{
        name: "zmon.check.7",
        limit: 10000,
        tags: {},
        group_by: [],
        aggregators: [{ name: "last", sampling: { value: 10, unit: "minutes" } }],
      }],
    });
  });

  it("serves the last data point with its own timestamp", async () => {
    answer = () => ({
      series: [
        { values: [[1699999000000, 3], [1699999500000, 4.5]] },
        { values: [[1699999600000, 99]] },
      ],
    });
    const got = await make({ "check-id": "1" }).collect(context());
    assert.deepEqual(got, { samples: [{ value: 4.5, timestamp: 1699999500000 }] });
  });

  it("errors when the query has no data points", async () => {
    answer = () => ({ series: [{ values: [] }] });
    assert.equal(
      await rejection(make({ "check-id": "1" }).collect(context())),
      `no data points for zmon.check.1 of metric my-zmon from ${fake.url}/api/v1/datapoints/query`,
    );
    answer = () => ({ status: 200, body: '{"queries":[]}' });
    assert.match(await rejection(make({ "check-id": "1" }).collect(context())), /^no data points/);
  });

  const failures: [string, KairosAnswer, RegExp][] = [
    [
      "a 500 answer",
      { status: 500, body: '{"errors":["boom"]}' },
      /^unsuccessful response "500" from http:\/\/127\.0\.0\.1:\d+\/api\/v1\/datapoints\/query: \{"errors":\["boom"\]\}$/,
    ],
    [
      "a 401 answer",
      { status: 401, body: "" },
      /^unsuccessful response "401" from /,
    ],
    ["a garbage body", { status: 200, body: "<html>oops" }, /^invalid JSON from http:\/\/127/],
    [
      "a point that is not [time, value]",
      { status: 200, body: '{"queries":[{"results":[{"values":[[1,2,3]]}]}]}' },
      /^unexpected KairosDB response from .*: values\[0\] is \[1,2,3\], want \[time, number\]$/,
    ],
    [
      "a string value",
      { status: 200, body: '{"queries":[{"results":[{"values":[[1,"x"]]}]}]}' },
      /values\[0\] is \[1,"x"\], want \[time, number\]$/,
    ],
    [
      "an object without queries",
      { status: 200, body: '{"results":[]}' },
      /^unexpected KairosDB response from .*: no queries list$/,
    ],
  ];
  for (const [name, a, want] of failures) {
    it(`reports ${name} as an error`, async () => {
      answer = () => a;
      assert.match(await rejection(make({ "check-id": "1" }).collect(context())), want);
    });
  }

  it("refuses a response larger than --max-response-bytes", async () => {
    answer = () => ({
      series: [{ values: Array.from({ length: 50 }, (_, i) => [i, i] as [number, number]) }],
    });
    assert.match(
      await rejection(make({ "check-id": "1" }, { maxResponseBytes: 100 }).collect(context())),
      /^response from http:\/\/127\.0\.0\.1:\d+\/api\/v1\/datapoints\/query exceeds 100 bytes$/,
    );
  });

  it("gives up on a server that never answers when the collection times out", async () => {
    answer = () => ({ hang: true });
    const start = Date.now();
    const msg = await rejection(
      make({ "check-id": "1" }).collect(context(AbortSignal.timeout(200))),
    );
    assert.match(
      msg,
      /^request to http:\/\/127\.0\.0\.1:\d+\/api\/v1\/datapoints\/query failed: timed out$/,
    );
    assert.ok(Date.now() - start < 3000);
  });

  it("reads the token file <credentials-dir>/<zmon-token-name>-token-secret and re-reads it when it changes", async () => {
    answer = () => ({ series: [{ values: [[1, 1]] }] });
    const file = join(dir, "zmon-token-secret");
    await writeFile(file, "first-token\n");
    const c = make({ "check-id": "1" }, { token: null });
    await c.collect(context());
    assert.equal(fake.server.requests.at(-1)!.headers["authorization"], "Bearer first-token");
    await writeFile(file, "second-token-longer\n");
    await c.collect(context());
    assert.equal(
      fake.server.requests.at(-1)!.headers["authorization"],
      "Bearer second-token-longer",
    );
  });

  it("names the token file when it is missing", async () => {
    const c = make({ "check-id": "1" }, { token: null, tokenName: "absent" });
    const msg = await rejection(c.collect(context()));
    assert.ok(
      msg.startsWith(`cannot read token "absent" from ${join(dir, "absent-token-secret")}: `),
      msg,
    );
  });

  const configErrors: [string, Record<string, string>, string][] = [
    [
      "a missing check-id",
      {},
      "External metric `my-zmon` of HPA default/app needs matchLabels.check-id or annotation metric-config.external.my-zmon.zmon/check-id",
    ],
    [
      "a check-id that is not an integer",
      { "check-id": "12a" },
      'invalid check-id "12a" for External metric `my-zmon` of HPA default/app (annotation metric-config.external.my-zmon.zmon/check-id): want an integer',
    ],
    [
      "an unknown aggregator",
      { "check-id": "1", aggregators: "avg,median" },
      'invalid aggregators "avg,median" for External metric `my-zmon` of HPA default/app (annotation metric-config.external.my-zmon.zmon/aggregators): unknown aggregator "median" (valid: avg, min, max, sum, count, last, diff)',
    ],
    [
      "an invalid duration",
      { "check-id": "1", duration: "5 minutes" },
      'invalid duration "5 minutes" for External metric `my-zmon` of HPA default/app (annotation metric-config.external.my-zmon.zmon/duration): want a Go duration like 10m',
    ],
    [
      "a duration of 0",
      { "check-id": "1", duration: "0s" },
      'invalid duration "0s" for External metric `my-zmon` of HPA default/app (annotation metric-config.external.my-zmon.zmon/duration): want more than 0',
    ],
  ];
  for (const [name, config, want] of configErrors) {
    it(`refuses ${name}`, () => assert.equal(thrown(() => make(config)), want));
  }

  it("shares one query between plans that ask the same", () => {
    const a = make({ "check-id": "1", key: "k" });
    const b = make({ "check-id": "1", key: "k" });
    const c = make({ "check-id": "1", key: "other" });
    assert.equal(a.queryKey, b.queryKey);
    assert.notEqual(a.queryKey, c.queryKey);
  });
});
