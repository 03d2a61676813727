/**
 * The PromQL namespace rewriter (src/core/promql_scope.ts) against the REAL Prometheus: a
 * loopback exporter serves one gauge for two namespaces (`a`: pods a-1 = 3 and a-2 = 4, `b`:
 * pod b-1 = 100), Prometheus scrapes it, and the queries an HPA author in namespace `a` might
 * write are rewritten and run through the HTTP API. Each rewritten query must return exactly
 * `a`'s series and values; each unscoped query is run too, to show that it would read `b`.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { scopePromQL } from "../../src/core/promql_scope.ts";
import { type RealPrometheus, startPrometheus } from "../fakes/prometheus_server.ts";
import { startServer, type TestServer } from "./servers.ts";

const METRIC = "promql_scope_requests";
const EXPOSITION = [
  `# TYPE ${METRIC} gauge`,
  `${METRIC}{namespace="a",pod="a-1"} 3`,
  `${METRIC}{namespace="a",pod="a-2"} 4`,
  `${METRIC}{namespace="b",pod="b-1"} 100`,
  "",
].join("\n");

const A = { label: "namespace", value: "a" };

let exporter: TestServer;
let prom: RealPrometheus;

before(async () => {
  exporter = await startServer("127.0.0.1", 0, (_req, res) => {
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
    res.end(EXPOSITION);
  });
  prom = await startPrometheus({ targets: [`127.0.0.1:${exporter.port}`], readyQuery: METRIC });
});

after(async () => {
  await prom?.stop();
  await exporter?.close();
});

/** One series of an instant query's answer: its labels as `k=v,...` (sorted) and its value. */
type Row = [string, string];

/** Run an instant query; the rows sorted, `job` and `instance` left out. */
async function query(q: string): Promise<Row[]> {
  const res = await fetch(`${prom.url}/api/v1/query?query=${encodeURIComponent(q)}`);
  const doc = await res.json() as {
    status: string;
    error?: string;
    data?: {
      resultType: string;
      result: { metric: Record<string, string>; value: [number, string] }[];
    };
  };
  assert.equal(doc.status, "success", `${q}: ${doc.error}`);
  assert.equal(doc.data!.resultType, "vector", q);
  return doc.data!.result
    .map((r): Row => [
      Object.entries(r.metric)
        .filter(([k]) => k !== "job" && k !== "instance")
        .sort(([x], [y]) => x.localeCompare(y))
        .map(([k, v]) => `${k}=${v}`)
        .join(","),
      r.value[1],
    ])
    .sort(([x], [y]) => x.localeCompare(y));
}

/** Poll `q` until it returns series (a range needs two scrapes in it); 10 s at most. */
async function queryWithData(q: string): Promise<Row[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const rows = await query(q);
    if (rows.length > 0 || Date.now() > deadline) return rows;
    await new Promise((r) => setTimeout(r, 250));
  }
}

const A_SERIES: Row[] = [
  [`__name__=${METRIC},namespace=a,pod=a-1`, "3"],
  [`__name__=${METRIC},namespace=a,pod=a-2`, "4"],
];

describe("scoped PromQL on a real Prometheus", () => {
  it("reads exactly namespace a's series with a bare selector", async () => {
    assert.equal(await query(METRIC).then((r) => r.length), 3, "unscoped, b is there too");
    const scoped = scopePromQL(METRIC, A);
    assert.equal(scoped, `${METRIC}{namespace="a"}`);
    assert.deepEqual(await query(scoped), A_SERIES);
  });

  it("refuses a query that names namespace b, so it never runs", async () => {
    const q = `${METRIC}{namespace="b"}`;
    assert.deepEqual(await query(q), [[`__name__=${METRIC},namespace=b,pod=b-1`, "100"]]);
    assert.throws(() => scopePromQL(q, A), {
      message:
        `selector ${METRIC}{namespace="b"} at offset 0 matches namespace="b": the query may select only namespace="a"`,
    });
  });

  it("narrows a regex over every namespace to namespace a", async () => {
    const q = `${METRIC}{namespace=~".+"}`;
    assert.equal(await query(q).then((r) => r.length), 3);
    const scoped = scopePromQL(q, A);
    assert.equal(scoped, `${METRIC}{namespace=~".+",namespace="a"}`);
    assert.deepEqual(await query(scoped), A_SERIES);
  });

  it("sums only namespace a's values", async () => {
    const q = `sum(${METRIC})`;
    assert.deepEqual(await query(q), [["", "107"]]);
    assert.deepEqual(await query(scopePromQL(q, A)), [["", "7"]]);
  });

  it("runs a binary expression of two aggregations over namespace a", async () => {
    const q = `sum(${METRIC}) / count(${METRIC})`;
    assert.deepEqual(await query(q), [["", "35.666666666666664"]]);
    assert.deepEqual(await query(scopePromQL(q, A)), [["", "3.5"]]);
  });

  it("runs a rate over a range selector, per series of namespace a", async () => {
    const scoped = scopePromQL(`rate(${METRIC}[1m])`, A);
    assert.equal(scoped, `rate(${METRIC}{namespace="a"}[1m])`);
    assert.deepEqual(await queryWithData(scoped), [
      ["namespace=a,pod=a-1", "0"],
      ["namespace=a,pod=a-2", "0"],
    ]);
  });

  it("runs max_over_time over a range of namespace a", async () => {
    const q = `max_over_time(${METRIC}[1m])`;
    assert.deepEqual(await query(scopePromQL(q, A)), [
      ["namespace=a,pod=a-1", "3"],
      ["namespace=a,pod=a-2", "4"],
    ]);
  });

  it("runs a subquery over namespace a", async () => {
    const q = `max_over_time(sum(${METRIC})[1m:1s])`;
    assert.deepEqual(await queryWithData(q), [["", "107"]]);
    const scoped = scopePromQL(q, A);
    assert.equal(scoped, `max_over_time(sum(${METRIC}{namespace="a"})[1m:1s])`);
    assert.deepEqual(await queryWithData(scoped), [["", "7"]]);
  });

  it("gives Prometheus the forms the splice writes: a trailing comma, an empty selector", async () => {
    const trailing = scopePromQL(`{__name__="${METRIC}",}`, A);
    assert.equal(trailing, `{__name__="${METRIC}",namespace="a",}`);
    assert.deepEqual(await query(trailing), A_SERIES);
    // `{}` alone is refused by Prometheus; scoped, it is every series of namespace a
    const empty = scopePromQL("count({ })", A);
    assert.equal(empty, 'count({namespace="a" })');
    assert.deepEqual(await query(empty), [["", "2"]]);
  });
});
