import { after, before, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createInfluxDbFactory, type InfluxDbOptions } from "../../src/collectors/influxdb.ts";
import type { Collector } from "../../src/collectors/types.ts";
import {
  annotatedCsv,
  fluxCompileError,
  fluxErrorCsv,
  startInfluxFake,
} from "../fakes/influxdb_v2.ts";
import type { FluxAnswer, FluxBlock, InfluxFake } from "../fakes/influxdb_v2.ts";
import { context, externalPlan, NOW, rejection, thrown } from "./backend_support.ts";

const QUERY = `from(bucket: "apps")
  |> range(start: -30s)
  |> filter(fn: (r) => r._measurement == "queue_depth")`;

const SERIES_COLUMNS: FluxBlock["columns"] = [
  { label: "_start", datatype: "dateTime:RFC3339", group: true },
  { label: "_stop", datatype: "dateTime:RFC3339", group: true },
  { label: "_time", datatype: "dateTime:RFC3339" },
  { label: "_value", datatype: "double" },
  { label: "_field", datatype: "string", group: true },
  { label: "_measurement", datatype: "string", group: true },
  { label: "host", datatype: "string", group: true },
];

function row(time: string, value: string, host: string): string[] {
  return [
    "2024-05-01T10:00:00Z",
    "2024-05-01T10:00:30Z",
    `2024-05-01T10:00:${time}Z`,
    value,
    "depth",
    "queue_depth",
    host,
  ];
}

describe("annotated CSV of the fake", () => {
  it("writes the #datatype, #group and #default rows, the header and CRLF line ends", () => {
    assert.equal(
      annotatedCsv([{
        columns: [{ label: "_value", datatype: "double" }, {
          label: "host",
          datatype: "string",
          group: true,
        }],
        tables: [[["1.5", "a,b"]], [["2", "c"]]],
      }]),
      "#datatype,string,long,double,string\r\n#group,false,false,false,true\r\n" +
        "#default,_result,,,\r\n,result,table,_value,host\r\n" +
        ',,0,1.5,"a,b"\r\n,,1,2,c\r\n\r\n',
    );
  });
});

describe("influxdb collector against an InfluxDB 2 fake", () => {
  let fake: InfluxFake;
  let answer: (q: string) => FluxAnswer = () => ({ blocks: [] });
  before(async () => {
    fake = await startInfluxFake({ org: "acme", token: "T0k", answer: (q) => answer(q) });
  });
  after(async () => {
    await fake.close();
  });
  beforeEach(() => {
    fake.queries.length = 0;
    fake.server.requests.length = 0;
  });
  const options = (extra: InfluxDbOptions = {}): InfluxDbOptions => ({
    address: fake.url,
    token: "T0k",
    org: "acme",
    allowAnnotationTokens: false,
    maxResponseBytes: 10485760,
    ...extra,
  });
  const make = (config: Record<string, string>, extra?: InfluxDbOptions): Collector =>
    createInfluxDbFactory(options(extra)).create({
      plan: externalPlan("influxdb", config, "queue-depth"),
    });

  it("posts the Flux query to /api/v2/query?org= with the token and reads _value", async () => {
    answer = () => ({ blocks: [{ columns: SERIES_COLUMNS, tables: [[row("10", "12.5", "a")]] }] });
    const got = await make({ query: QUERY }).collect(context());
    assert.deepEqual(got, { samples: [{ value: 12.5, timestamp: NOW }] });
    const req = fake.server.requests[0];
    assert.equal(req.method, "POST");
    assert.equal(req.path, "/api/v2/query");
    assert.deepEqual(req.query, [["org", "acme"]]);
    assert.equal(req.headers["authorization"], "Token T0k");
    assert.deepEqual(JSON.parse(req.body), {
      query: QUERY,
      dialect: {
        header: true,
        delimiter: ",",
        quoteChar: '"',
        commentPrefix: "#",
        annotations: ["datatype", "group", "default"],
      },
      type: "flux",
    });
  });

  it("reads the metricvalue column of the README's renamed query (the original reported 0)", async () => {
    answer = () => ({
      blocks: [{ columns: [{ label: "metricvalue", datatype: "double" }], tables: [[["37.25"]]] }],
    });
    const got = await make({ query: QUERY }).collect(context());
    assert.equal(got.samples[0].value, 37.25);
  });

  it("takes the last row of each table and sums the tables", async () => {
    answer = () => ({
      blocks: [{
        columns: SERIES_COLUMNS,
        tables: [
          [row("00", "1", "a"), row("10", "2", "a"), row("20", "3", "a")],
          [row("05", "10", "b"), row("15", "20", "b")],
        ],
      }, {
        columns: [{ label: "_value", datatype: "long" }, {
          label: "host",
          datatype: "string",
          group: true,
        }],
        tables: [[["100", "c"]]],
      }],
    });
    const got = await make({ query: QUERY }).collect(context());
    assert.equal(got.samples[0].value, 3 + 20 + 100);
  });

  it("reads the query named by query-name", async () => {
    answer = (q) => ({
      blocks: [{
        columns: [{ label: "_value", datatype: "long" }],
        tables: [[[q === "buckets()" ? "5" : "0"]]],
      }],
    });
    const got = await make({ "query-name": "q2", q2: "buckets()" }).collect(context());
    assert.equal(got.samples[0].value, 5);
  });

  it("uses the address and org of the config over the flags", async () => {
    answer = () => ({
      blocks: [{ columns: [{ label: "_value", datatype: "double" }], tables: [[["1"]]] }],
    });
    await make({ query: QUERY, address: fake.url, org: "acme", token: "T0k" }, {
      address: "http://127.0.0.1:9",
      org: "other",
      allowAnnotationTokens: true,
    }).collect(context());
    assert.deepEqual(fake.server.requests[0].query, [["org", "acme"]]);
  });

  it("refuses a token in the config unless --allow-annotation-tokens", async () => {
    assert.equal(
      thrown(() => make({ query: QUERY, token: "T0k" }, { token: "wrong" })),
      "token in the config of metric queue-depth refused: tokens come from --influxdb-token (allow with --allow-annotation-tokens)",
    );
    answer = () => ({
      blocks: [{ columns: [{ label: "_value", datatype: "double" }], tables: [[["4"]]] }],
    });
    const c = make({ query: QUERY, token: "T0k" }, {
      token: "wrong",
      allowAnnotationTokens: true,
    });
    assert.equal((await c.collect(context())).samples[0].value, 4);
    assert.equal(fake.server.requests[0].headers["authorization"], "Token T0k");
    assert.notEqual(c.queryKey, make({ query: QUERY }).queryKey);
  });

  it("sends --influxdb-token only to --influxdb-address, however it is spelled", async () => {
    answer = () => ({
      blocks: [{ columns: [{ label: "_value", datatype: "double" }], tables: [[["2"]]] }],
    });
    const elsewhere = { address: "http://127.0.0.1:9" };
    assert.equal(
      thrown(() => make({ query: QUERY, address: fake.url }, elsewhere)),
      `address "${fake.url}" of metric queue-depth is not --influxdb-address: --influxdb-token is not sent there; give the metric its own token config (with --allow-annotation-tokens)`,
    );
    const spelled = fake.url.replace("http://", "HTTP://") + "/";
    const same = make({ query: QUERY, address: spelled }, { address: fake.url });
    assert.equal((await same.collect(context())).samples[0].value, 2);
    assert.equal(fake.server.requests[0].headers["authorization"], "Token T0k");
    // Without a flag token there is nothing to leak: the request goes without one.
    const tokenless = make({ query: QUERY, address: fake.url }, {
      ...elsewhere,
      token: null,
    });
    assert.match(await rejection(tokenless.collect(context())), /unsuccessful response "401"$/);
    assert.equal(fake.server.requests[1].headers["authorization"], undefined);
  });

  it("refuses an address whose name resolves to a link-local address, before connecting", async () => {
    const asked: string[] = [];
    const lookup = (host: string): Promise<string[]> => {
      asked.push(host);
      return Promise.resolve(["fe80::1"]);
    };
    const address = `http://influx.test:${new URL(fake.url).port}`;
    const c = make({ query: QUERY, address, token: "T0k" }, { allowAnnotationTokens: true });
    const withLookup = { ...context(), lookup };
    assert.equal(
      await rejection(c.collect(withLookup)),
      `request to ${address} refused: host "influx.test" resolves to link-local address fe80::1 (allow with --allow-link-local-targets)`,
    );
    assert.deepEqual(asked, ["influx.test"]);
    assert.equal(fake.server.requests.length, 0);
  });

  it("does not follow a redirect", async () => {
    answer = () => ({
      status: 307,
      headers: { location: "http://169.254.169.254/api/v2/query" },
      body: "",
    });
    assert.match(
      await rejection(make({ query: QUERY }).collect(context())),
      /^flux query ".*" of metric queue-depth at http:\/\/127\.0\.0\.1:\d+ failed: refused to follow redirect "307" from http:\/\/127\.0\.0\.1:\d+ to "http:\/\/169\.254\.169\.254\/api\/v2\/query"$/,
    );
    assert.equal(fake.server.requests.length, 1);
  });

  const secretAnswers: [string, FluxAnswer, RegExp][] = [
    [
      "an error body",
      { status: 500, headers: { "content-type": "text/plain" }, body: "secret-value-123" },
      / failed: unsuccessful response "500"$/,
    ],
    [
      "an error inside the CSV",
      {
        status: 200,
        headers: { "content-type": "text/csv" },
        body: fluxErrorCsv("secret-value-123"),
      },
      / failed: the server reported an error in the result$/,
    ],
    [
      "a non-numeric value",
      {
        blocks: [{
          columns: [{ label: "_value", datatype: "string" }],
          tables: [[["secret-value-123"]]],
        }],
      },
      / returned a non-numeric _value$/,
    ],
  ];
  for (const [name, a, want] of secretAnswers) {
    it(`does not quote ${name} from an address of the config`, async () => {
      answer = () => a;
      const c = make({ query: QUERY, address: fake.url, token: "T0k" }, {
        address: "http://127.0.0.1:9",
        allowAnnotationTokens: true,
      });
      const message = await rejection(c.collect(context()));
      assert.match(message, want);
      assert.ok(!message.includes("secret-value-123"), message);
    });
  }

  const failures: [string, FluxAnswer, InfluxDbOptions, RegExp][] = [
    [
      "an empty result",
      { blocks: [] },
      {},
      /^flux query "from\(bucket: \\"apps\\"\) \|> range\(start: -30s\) \|> filter\(fn: \(r\) => r._measurement == \\"queue_depth\\"\)" of metric queue-depth at http:\/\/127\.0\.0\.1:\d+ returned no rows$/,
    ],
    [
      "a result without a value column",
      { blocks: [{ columns: [{ label: "host", datatype: "string" }], tables: [[["a"]]] }] },
      {},
      / returned no _value or metricvalue column$/,
    ],
    [
      "a non-numeric value",
      { blocks: [{ columns: [{ label: "_value", datatype: "string" }], tables: [[["many"]]] }] },
      {},
      / returned a non-numeric _value "many"$/,
    ],
    [
      "a null value",
      { blocks: [{ columns: [{ label: "_value", datatype: "double" }], tables: [[[""]]] }] },
      {},
      / returned a null _value$/,
    ],
    [
      "a query that does not compile (400)",
      fluxCompileError("undefined identifier fromm"),
      {},
      /^flux query ".*" of metric queue-depth at .* failed: unsuccessful response "400": compilation failed: undefined identifier fromm$/,
    ],
    [
      "a wrong token (401)",
      { blocks: [] },
      { token: "bad" },
      /failed: unsuccessful response "401": unauthorized access$/,
    ],
    [
      "an unknown org (404)",
      { blocks: [] },
      { org: "nobody" },
      /failed: unsuccessful response "404": organization name "nobody" not found$/,
    ],
    [
      "a 500 with a garbage body",
      { status: 500, headers: { "content-type": "text/html" }, body: "<h1>oops</h1>" },
      {},
      /failed: unsuccessful response "500": <h1>oops<\/h1>$/,
    ],
    [
      "an error reported inside the CSV",
      {
        status: 200,
        headers: { "content-type": "text/csv" },
        body: fluxErrorCsv("runtime error: boom"),
      },
      {},
      / failed: runtime error: boom$/,
    ],
    [
      "a garbage CSV body",
      { status: 200, headers: { "content-type": "text/csv" }, body: "hello\r\nworld\r\n" },
      {},
      / returned no _value or metricvalue column$/,
    ],
  ];
  for (const [name, a, extra, want] of failures) {
    it(`reports ${name} as an error quoting the query`, async () => {
      answer = () => a;
      assert.match(await rejection(make({ query: QUERY }, extra).collect(context())), want);
    });
  }

  it("refuses a response larger than --max-response-bytes", async () => {
    answer = () => ({
      blocks: [{
        columns: SERIES_COLUMNS,
        tables: [
          Array.from(
            { length: 100 },
            (_, i) => row(String(i % 60).padStart(2, "0"), String(i), "a"),
          ),
        ],
      }],
    });
    assert.match(
      await rejection(make({ query: QUERY }, { maxResponseBytes: 1000 }).collect(context())),
      /^response to flux query ".*" of metric queue-depth at .* exceeds 1000 bytes$/,
    );
  });

  it("gives up on a server that never answers when the collection times out", async () => {
    answer = () => ({ hang: true });
    const start = Date.now();
    assert.match(
      await rejection(make({ query: QUERY }).collect(context(AbortSignal.timeout(200)))),
      /^flux query ".*" of metric queue-depth at .* failed: timed out$/,
    );
    assert.ok(Date.now() - start < 3000);
  });

  const configErrors: [string, Record<string, string>, InfluxDbOptions, string][] = [
    [
      "a missing query",
      {},
      {},
      "External metric `queue-depth` of HPA default/app needs matchLabels.query or annotation metric-config.external.queue-depth.influxdb/query",
    ],
    [
      "a query-name naming no key",
      { "query-name": "q2" },
      {},
      "External metric `queue-depth` of HPA default/app needs matchLabels.q2 or annotation metric-config.external.queue-depth.influxdb/q2 (the query named by query-name)",
    ],
    [
      "a missing address",
      { query: QUERY },
      { address: null },
      "influxdb metric queue-depth needs --influxdb-address or an address config",
    ],
    [
      "an address that is not http",
      { query: QUERY, address: "ftp://x" },
      {},
      'invalid address "ftp://x" for External metric `queue-depth` of HPA default/app (annotation metric-config.external.queue-depth.influxdb/address): want an http:// or https:// URL',
    ],
    [
      "a link-local address",
      { query: QUERY, address: "http://169.254.169.254" },
      {},
      'invalid address "http://169.254.169.254" for External metric `queue-depth` of HPA default/app (annotation metric-config.external.queue-depth.influxdb/address): a link-local address (allow with --allow-link-local-targets)',
    ],
    [
      "a missing org",
      { query: QUERY },
      { org: null },
      "influxdb metric queue-depth needs --influxdb-org or an org config",
    ],
  ];
  for (const [name, config, extra, want] of configErrors) {
    it(`refuses ${name}`, () => assert.equal(thrown(() => make(config, extra)), want));
  }
});
