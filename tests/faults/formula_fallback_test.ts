/**
 * Formula metrics and fallback (issue 21) end to end in file mode: the adapter (`serve
 * --manifests`, a child process of the runtime under test) with the REAL Prometheus scraping a
 * tiny exporter, and real loopback JSON endpoints whose answers the test chooses one collection
 * at a time (a held request is answered only when the test releases it).
 *
 * HPA `checkout` has one formula metric, `queue-total = queue_depth * 3 + http_backlog`, over two
 * hidden inputs: `queue-depth` (a Prometheus query of a scraped gauge, 2.5) and `http-backlog`
 * (json-path on an endpoint answering 0.0019), with fallback threshold 2 and 5 replicas
 * (static) against an AverageValue target of 10. So the formula serves 7.5019 truncated to
 * milli, "7501m"; one and two failed collections of `http-backlog` give a 404 naming it; the
 * third gives the fallback value 5 * 10 = "50"; a success (0.25) gives "7750m" again.
 *
 * HPA `orders` has a plain json-path External metric with fallback threshold 1 and 3 replicas
 * against an AverageValue target of 4: a failure removes its value (404, no stale value), the
 * second serves 3 * 4 = "12", a success serves the endpoint's value again.
 *
 * The own metrics `hpa_metrics_adapter_fallback_active` and
 * `hpa_metrics_adapter_consecutive_failures` (of a formula: labelled with the formula, the most
 * failures of any input) are read from the adapter's `--metrics-address`.
 *
 * The `it`s run in order and build on each other.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { type RealPrometheus, startPrometheus } from "../fakes/prometheus_server.ts";
import {
  type AdapterProcess,
  currentRuntime,
  getExternalMetric,
  makeTempDir,
  type MetricAnswer,
  startAdapterProcess,
  waitFor,
  writeManifests,
} from "./support.ts";
import {
  describeSamples,
  freePort,
  readOwnMetrics,
  type Sample,
  sampleValue,
  startExporter,
  startSwitchableEndpoint,
  type SwitchableEndpoint,
} from "./formula_support.ts";

const NAMESPACE = "formulas";
const GAUGE = "formula_fallback_queue_depth";
const EXPOSITION = `# TYPE ${GAUGE} gauge\n${GAUGE} 2.5\n`;

const FORMULA_HPA = "checkout";
const FORMULA = "queue-total";
const EXPRESSION = "queue_depth * 3 + http_backlog";
const PROM_INPUT = "queue-depth";
const HTTP_INPUT = "http-backlog";
const FORMULA_THRESHOLD = 2;
const FORMULA_FALLBACK_REPLICAS = 5;
const FORMULA_TARGET = 10;

const PLAIN_HPA = "orders";
const PLAIN = "orders-backlog";
const PLAIN_THRESHOLD = 1;
const PLAIN_FALLBACK_REPLICAS = 3;
const PLAIN_TARGET = 4;

const FALLBACK_ACTIVE = "hpa_metrics_adapter_fallback_active";
const CONSECUTIVE_FAILURES = "hpa_metrics_adapter_consecutive_failures";

/** What a json-path endpoint answers on success. */
function backlogBody(items: number): string {
  return JSON.stringify({ backlog: { items } });
}
const ERROR_BODY = '{"error":"boom"}';
/** What the json-path collector says about a 500 (as tests/faults/backends_test.ts pins it). */
const ERROR_500 = 'unsuccessful response "500 Internal Server Error"';

/** A Deployment with `replicas` (spec and status): the scale target, not what fallback uses. */
function deployment(name: string, replicas: number): Record<string, unknown> {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: NAMESPACE },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name, image: `example/${name}:1` }] },
      },
    },
    status: { replicas, readyReplicas: replicas },
  };
}

/** An autoscaling/v2 HPA on Deployment `name` with one External metric. */
function hpa(
  name: string,
  metric: string,
  matchLabels: Record<string, string>,
  averageValue: number,
  annotations: Record<string, string>,
): Record<string, unknown> {
  return {
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name, namespace: NAMESPACE, annotations },
    spec: {
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name },
      minReplicas: 1,
      maxReplicas: 20,
      metrics: [{
        type: "External",
        external: {
          metric: { name: metric, selector: { matchLabels } },
          target: { type: "AverageValue", averageValue: String(averageValue) },
        },
      }],
    },
  };
}

describe(`formula metrics and fallback in file mode (${currentRuntime()})`, () => {
  let dir: string | undefined;
  let exporter: { target: string; close(): Promise<void> } | undefined;
  let prom: RealPrometheus | undefined;
  let backlog: SwitchableEndpoint | undefined;
  let orders: SwitchableEndpoint | undefined;
  let adapter: AdapterProcess | undefined;
  let metricsPort = 0;

  before(async () => {
    exporter = await startExporter(EXPOSITION);
    backlog = await startSwitchableEndpoint({ status: 200, body: backlogBody(0.0019) });
    orders = await startSwitchableEndpoint({ status: 200, body: backlogBody(6.5) });
    dir = await makeTempDir("faults-formula-");
    // the real server; a missing binary fails here, loudly (never a skip)
    prom = await startPrometheus({ targets: [exporter.target], readyQuery: GAUGE });
    const manifests = join(dir, "manifests");
    await writeManifests(manifests, [
      deployment(FORMULA_HPA, 2),
      hpa(FORMULA_HPA, FORMULA, { type: "formula" }, FORMULA_TARGET, {
        [`metric-config.external.${FORMULA}.formula/expression`]: EXPRESSION,
        [`metric-config.external.${FORMULA}.formula/fallback-failure-threshold`]: String(
          FORMULA_THRESHOLD,
        ),
        [`metric-config.external.${FORMULA}.formula/fallback-replicas`]: String(
          FORMULA_FALLBACK_REPLICAS,
        ),
        [`metric-config.external.${PROM_INPUT}.prometheus/query`]: GAUGE,
        [`metric-config.external.${PROM_INPUT}.prometheus/interval`]: "1s",
        [`metric-config.external.${HTTP_INPUT}.json-path/endpoint`]: `${backlog.url}/backlog`,
        [`metric-config.external.${HTTP_INPUT}.json-path/json-key`]: "$.backlog.items",
        [`metric-config.external.${HTTP_INPUT}.json-path/interval`]: "1s",
        // a held request must not time out: the test decides when it ends
        [`metric-config.external.${HTTP_INPUT}.json-path/request-timeout`]: "120s",
      }),
      deployment(PLAIN_HPA, 2),
      hpa(PLAIN_HPA, PLAIN, { type: "json-path" }, PLAIN_TARGET, {
        [`metric-config.external.${PLAIN}.json-path/endpoint`]: `${orders.url}/orders`,
        [`metric-config.external.${PLAIN}.json-path/json-key`]: "$.backlog.items",
        [`metric-config.external.${PLAIN}.json-path/interval`]: "1s",
        [`metric-config.external.${PLAIN}.json-path/request-timeout`]: "120s",
        [`metric-config.external.${PLAIN}.json-path/fallback-failure-threshold`]: String(
          PLAIN_THRESHOLD,
        ),
        [`metric-config.external.${PLAIN}.json-path/fallback-replicas`]: String(
          PLAIN_FALLBACK_REPLICAS,
        ),
      }),
    ], "manifests.yaml");
    metricsPort = await freePort();
    adapter = await startAdapterProcess({
      manifests,
      certDir: join(dir, "certs"),
      flags: [
        "--prometheus-server",
        prom.url,
        // after support.ts' `--metrics-address ""`: the last one counts
        "--metrics-address",
        `127.0.0.1:${metricsPort}`,
      ],
    });
  });

  after(async () => {
    await adapter?.stop();
    await backlog?.close();
    await orders?.close();
    await prom?.stop();
    await exporter?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** The external metric `name` of the namespace. */
  function read(name: string): Promise<MetricAnswer> {
    return getExternalMetric(adapter!, NAMESPACE, name);
  }

  /** The one value served for `name`, or null while it answers otherwise. */
  async function valueOf(name: string): Promise<string | null> {
    const r = await read(name);
    return r.status === 200 && r.body.items?.length === 1 ? r.body.items[0].value : null;
  }

  /** Assert that `name` serves exactly one item: `value`, labelled `labels`. */
  async function assertServes(
    name: string,
    labels: Record<string, string>,
    value: string,
  ): Promise<void> {
    const r = await read(name);
    assert.equal(r.status, 200, `${name}: ${JSON.stringify(r.body)}\n${logsTail()}`);
    assert.equal(r.body.kind, "ExternalMetricValueList");
    assert.deepEqual(
      r.body.items.map((i: Record<string, unknown>) => [i.metricName, i.metricLabels, i.value]),
      [[name, labels, value]],
    );
    assert.equal(typeof r.body.items[0].timestamp, "string");
    assert.ok(!Number.isNaN(Date.parse(r.body.items[0].timestamp)), r.body.items[0].timestamp);
  }

  /** Assert that `name` answers 404 with a message that matches every one of `parts`. */
  async function assertNotFound(name: string, parts: (string | RegExp)[]): Promise<string> {
    const r = await read(name);
    assert.equal(r.status, 404, `${name}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.kind, "Status");
    assert.equal(r.body.reason, "NotFound");
    const message: string = r.body.message ?? "";
    for (const p of parts) {
      if (typeof p === "string") {
        assert.ok(message.includes(p), `the 404 of ${name} does not say ${p}: ${message}`);
      } else assert.match(message, p);
    }
    return message;
  }

  function logsTail(): string {
    return `--- adapter output ---\n${adapter?.logs().slice(-3000) ?? ""}`;
  }

  /** The labels of the own metrics of (HPA, External metric). */
  function ownLabels(hpaName: string, metric: string): Record<string, string> {
    return { namespace: NAMESPACE, hpa: hpaName, metric_type: "External", metric };
  }

  /** Wait until the own metric `name` of (hpa, metric) is `value`; returns the samples read. */
  async function waitOwnMetric(
    name: string,
    hpaName: string,
    metric: string,
    value: number,
  ): Promise<Sample[]> {
    let last: Sample[] = [];
    try {
      return await waitFor(`${name} of ${hpaName}/${metric} to be ${value}`, async () => {
        last = await readOwnMetrics(metricsPort);
        return sampleValue(last, name, ownLabels(hpaName, metric)) === value ? last : null;
      }, { timeoutMs: 15_000 });
    } catch (e) {
      throw new Error(`${(e as Error).message}\n${describeSamples(last, name)}`);
    }
  }

  /** Assert the own metrics of (hpa, metric) from one reading. */
  function assertOwn(
    samples: readonly Sample[],
    hpaName: string,
    metric: string,
    want: { active?: number; failures?: number },
  ): void {
    if (want.active !== undefined) {
      assert.equal(
        sampleValue(samples, FALLBACK_ACTIVE, ownLabels(hpaName, metric)),
        want.active,
        describeSamples(samples, FALLBACK_ACTIVE),
      );
    }
    if (want.failures !== undefined) {
      assert.equal(
        sampleValue(samples, CONSECUTIVE_FAILURES, ownLabels(hpaName, metric)),
        want.failures,
        describeSamples(samples, CONSECUTIVE_FAILURES),
      );
    }
  }

  /**
   * Answer the held collection of `endpoint` with a 500 and wait until the next one is held:
   * the adapter has then processed the failure (the engine starts no collection of a plan while
   * one runs, and the next starts an interval later).
   */
  async function failOnce(endpoint: SwitchableEndpoint): Promise<void> {
    await endpoint.release(500, ERROR_BODY);
    await endpoint.waitHeld();
  }

  it("has Prometheus scrape the exporter's gauge (the input's exact value)", async () => {
    const res = await fetch(`${prom!.url}/api/v1/query?query=${encodeURIComponent(GAUGE)}`);
    const doc = await res.json() as { data: { result: { value: [number, string] }[] } };
    assert.deepEqual(doc.data.result.map((r) => r.value[1]), ["2.5"]);
  });

  it("serves the formula over the Prometheus input and the json-path input, truncated to milli", async () => {
    try {
      await waitFor(`a value of ${FORMULA}`, () => valueOf(FORMULA), { timeoutMs: 30_000 });
    } catch (e) {
      const r = await read(FORMULA);
      throw new Error(`${(e as Error).message}\nlast answer: ${JSON.stringify(r)}\n${logsTail()}`);
    }
    // 2.5 * 3 + 0.0019 = 7.5019: truncated, not rounded (7502m)
    await assertServes(FORMULA, { type: "formula" }, "7501m");
    assert.ok(backlog!.answered.length >= 1);
    assert.ok(backlog!.answered.every((a) => a.path === "/backlog" && a.status === 200));
  });

  it("does not serve the hidden inputs", async () => {
    for (const input of [PROM_INPUT, HTTP_INPUT]) {
      await assertNotFound(input, [
        `no HPA in namespace ${NAMESPACE} asks for external metric "${input}"`,
      ]);
    }
  });

  it("reports no fallback and no failures in its own metrics while the inputs succeed", async () => {
    const samples = await waitOwnMetric(FALLBACK_ACTIVE, FORMULA_HPA, FORMULA, 0);
    assertOwn(samples, FORMULA_HPA, FORMULA, {
      active: 0,
      failures: 0,
    });
  });

  it("makes the formula an error naming the failing input while failures are at or below the threshold", async () => {
    backlog!.hold();
    for (let failures = 1; failures <= FORMULA_THRESHOLD; failures++) {
      await failOnce(backlog!);
      // the next collection is held: nothing changes until the test answers it
      const samples = await waitOwnMetric(CONSECUTIVE_FAILURES, FORMULA_HPA, FORMULA, failures);
      assertOwn(samples, FORMULA_HPA, FORMULA, { active: 0 });
      // names the input (its metric name), what failed and where
      await assertNotFound(FORMULA, [HTTP_INPUT, ERROR_500, `${backlog!.url}/backlog`]);
    }
  });

  it("serves the fallback value once the failures pass the threshold", async () => {
    await failOnce(backlog!); // failure 3 > threshold 2
    const samples = await waitOwnMetric(FALLBACK_ACTIVE, FORMULA_HPA, FORMULA, 1);
    assertOwn(samples, FORMULA_HPA, FORMULA, {
      failures: FORMULA_THRESHOLD + 1,
    });
    // replicas 5 x AverageValue target 10: the HPA computes ceil(50 / 10) = 5
    await assertServes(
      FORMULA,
      { type: "formula" },
      String(FORMULA_FALLBACK_REPLICAS * FORMULA_TARGET),
    );
    // and it stays while the input keeps failing
    await failOnce(backlog!);
    const more = await waitOwnMetric(CONSECUTIVE_FAILURES, FORMULA_HPA, FORMULA, 4);
    assertOwn(more, FORMULA_HPA, FORMULA, { active: 1 });
    await assertServes(FORMULA, { type: "formula" }, "50");
    assert.deepEqual(
      backlog!.answered.filter((a) => a.status !== 200).map((a) => a.status),
      [500, 500, 500, 500],
    );
  });

  it("serves the formula again, from the new input value, when the endpoint recovers", async () => {
    // the held collection and every later one succeed: 2.5 * 3 + 0.25 = 7.75
    backlog!.answerWith({ status: 200, body: backlogBody(0.25) });
    await waitFor(`${FORMULA} = 7750m`, async () => {
      const v = await valueOf(FORMULA);
      return v === "7750m" ? v : null;
    }, { timeoutMs: 15_000 });
    await assertServes(FORMULA, { type: "formula" }, "7750m");
    const samples = await waitOwnMetric(FALLBACK_ACTIVE, FORMULA_HPA, FORMULA, 0);
    assertOwn(samples, FORMULA_HPA, FORMULA, { failures: 0 });
  });

  it("serves a plain metric with fallback from its endpoint", async () => {
    await waitFor(`a value of ${PLAIN}`, () => valueOf(PLAIN), { timeoutMs: 30_000 });
    await assertServes(PLAIN, { type: "json-path" }, "6500m");
    const samples = await readOwnMetrics(metricsPort);
    assertOwn(samples, PLAIN_HPA, PLAIN, { active: 0, failures: 0 });
  });

  it("removes a plain metric's value on a failure at the threshold: a 404, no stale value", async () => {
    orders!.hold();
    await failOnce(orders!); // failure 1 = threshold 1
    const samples = await waitOwnMetric(CONSECUTIVE_FAILURES, PLAIN_HPA, PLAIN, 1);
    assertOwn(samples, PLAIN_HPA, PLAIN, { active: 0 });
    await assertNotFound(PLAIN, [ERROR_500, `${orders!.url}/orders`]);
  });

  it("serves a plain metric's fallback value past the threshold", async () => {
    await failOnce(orders!); // failure 2 > threshold 1
    const samples = await waitOwnMetric(FALLBACK_ACTIVE, PLAIN_HPA, PLAIN, 1);
    assertOwn(samples, PLAIN_HPA, PLAIN, { failures: 2 });
    // replicas 3 x AverageValue target 4
    await assertServes(
      PLAIN,
      { type: "json-path" },
      String(PLAIN_FALLBACK_REPLICAS * PLAIN_TARGET),
    );
  });

  it("serves a plain metric's value again when its endpoint recovers", async () => {
    orders!.answerWith({ status: 200, body: backlogBody(9) });
    await waitFor(`${PLAIN} = 9`, async () => {
      const v = await valueOf(PLAIN);
      return v === "9" ? v : null;
    }, { timeoutMs: 15_000 });
    await assertServes(PLAIN, { type: "json-path" }, "9");
    const samples = await waitOwnMetric(FALLBACK_ACTIVE, PLAIN_HPA, PLAIN, 0);
    assertOwn(samples, PLAIN_HPA, PLAIN, { failures: 0 });
  });

  it("stayed up throughout", () => {
    assert.equal(adapter!.alive(), true, logsTail());
  });
});
