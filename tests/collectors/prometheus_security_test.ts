/**
 * What an HPA's annotation can make the prometheus collector do with a server of its choosing:
 * no operator token, no link-local target (by name either), no redirect, no quoted answer.
 * Against a small fake of the query API (no real Prometheus needed).
 */
import { after, before, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createPrometheusFactory,
  type PrometheusOptions,
} from "../../src/collectors/prometheus.ts";
import type { Collector } from "../../src/collectors/types.ts";
import { PrometheusClient } from "../../src/collectors/prometheus_client.ts";
import type { MetricPlan } from "../../src/core/types.ts";
import {
  context,
  externalPlan,
  type FakePrometheusApi,
  objectPlan,
  startFakePrometheusApi,
} from "./prometheus_support.ts";

const SECRET = "secret-value-123";

let fake: FakePrometheusApi;
let dir: string;
let tokenFile: string;
before(async () => {
  fake = await startFakePrometheusApi();
  dir = await mkdtemp(join(tmpdir(), "hpa-prom-security-"));
  tokenFile = join(dir, "token");
  await writeFile(tokenFile, "operator-token\n");
});
after(async () => {
  await fake?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  fake.seen.length = 0;
  fake.reply = () => ({
    status: 200,
    body: JSON.stringify({ status: "success", data: { resultType: "scalar", result: [1, "1"] } }),
  });
});

const objectRef = { apiVersion: "v1", kind: "Service", name: "web" };

function plans(config: Record<string, string>): [string, MetricPlan][] {
  return [
    ["External", externalPlan("prometheus", { query: "up", ...config })],
    ["Object", objectPlan("prometheus", objectRef, { query: "up", ...config })],
  ];
}

/** The collector of `plan` from a factory made with typed options. */
function create(plan: MetricPlan, options: PrometheusOptions = {}): Collector {
  return createPrometheusFactory(options).create({ plan });
}

async function message(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error("expected a rejection");
}

describe("prometheus-server named by an annotation", () => {
  it("gets no token of the operator's server, even when it is that server", async () => {
    for (const url of [fake.url, `${fake.url}/`]) {
      for (const [kind, plan] of plans({ "prometheus-server": url })) {
        fake.seen.length = 0;
        await create(plan, { server: { url: fake.url, tokenFile } }).collect(context());
        assert.equal(fake.seen.length, 1, kind);
        assert.equal(fake.seen[0].authorization, undefined, `${kind} metric to ${url}`);
      }
    }
    // The operator's server itself does get it.
    const [, plan] = plans({})[0];
    await create(plan, { server: { url: fake.url, tokenFile } }).collect(context());
    assert.equal(fake.seen.at(-1)?.authorization, "Bearer operator-token");
  });

  it("a client for a server an HPA named refuses a token file", () => {
    assert.throws(
      () =>
        new PrometheusClient({
          url: "http://p:9090",
          tokenFile: "/t",
          chosenByHpa: { allowLinkLocal: false },
        }),
      {
        message:
          'prometheus server "http://p:9090" named by an HPA gets no token (token file "/t")',
      },
    );
  });

  it("is refused when its name resolves to a link-local address, before connecting", async () => {
    const url = `http://prom.test:${new URL(fake.url).port}`;
    for (const [kind, plan] of plans({ "prometheus-server": url })) {
      const asked: string[] = [];
      const ctx = {
        ...context(),
        lookup: (host: string): Promise<string[]> => {
          asked.push(host);
          return Promise.resolve(["169.254.169.254"]);
        },
      };
      const c = create(plan, { server: { url: fake.url } });
      assert.equal(
        await message(c.collect(ctx)),
        `prometheus query "up" for metric ${plan.metricName} failed: request to ${url}/api/v1/query refused: host "prom.test" resolves to link-local address 169.254.169.254 (allow with --allow-link-local-targets)`,
        kind,
      );
      assert.deepEqual(asked, ["prom.test"]);
    }
    assert.equal(fake.seen.length, 0);
  });

  it("is asked when its name resolves elsewhere, or with allowLinkLocalTargets", async () => {
    const url = `http://prom.test:${new URL(fake.url).port}`;
    const [, plan] = plans({ "prometheus-server": url })[0];
    const ctx = (address: string) => ({
      ...context(),
      // The fake listens on 127.0.0.1 whatever the name: fetch resolves prom.test itself.
      fetch: (_i: RequestInfo | URL, init?: RequestInit) => fetch(`${fake.url}/api/v1/query`, init),
      lookup: () => Promise.resolve([address]),
    });
    for (
      const [address, options] of [
        ["10.0.0.9", {}],
        ["169.254.169.254", { allowLinkLocalTargets: true }],
      ] as const
    ) {
      const c = create(plan, options);
      assert.equal((await c.collect(ctx(address))).samples[0].value, 1);
    }
    assert.equal(fake.seen.length, 2);
  });

  const answers: [string, { status: number; body: string }, string][] = [
    [
      "an error body",
      { status: 500, body: `<h1>${SECRET}</h1>` },
      'unsuccessful response "500 Internal Server Error" from URL',
    ],
    [
      "Prometheus' error JSON",
      {
        status: 400,
        body: JSON.stringify({ status: "error", errorType: "bad_data", error: SECRET }),
      },
      'unsuccessful response "400 Bad Request" from URL (prometheus error bad_data)',
    ],
    [
      "a body that is not JSON",
      { status: 200, body: `token=${SECRET}` },
      "invalid response from URL: not a Prometheus API response of a known form",
    ],
    [
      "a malformed sample",
      {
        status: 200,
        body: JSON.stringify({
          status: "success",
          data: { resultType: "scalar", result: [1, SECRET] },
        }),
      },
      "invalid response from URL: not a Prometheus API response of a known form",
    ],
  ];
  for (const [name, reply, want] of answers) {
    it(`does not quote ${name}`, async () => {
      fake.reply = () => reply;
      const c = create(externalPlan("prometheus", { query: "up", "prometheus-server": fake.url }));
      assert.equal(
        await message(c.collect(context())),
        `prometheus query "up" for metric queue-length failed: ${
          want.replace("URL", `${fake.url}/api/v1/query`)
        }`,
      );
    });
  }

  it("does not quote series labels or warnings", async () => {
    fake.reply = () => ({
      status: 200,
      body: JSON.stringify({
        status: "success",
        warnings: [SECRET],
        data: {
          resultType: "vector",
          result: [{ metric: { __name__: "up", token: SECRET }, value: [1, "NaN"] }],
        },
      }),
    });
    const annotated = create(
      externalPlan("prometheus", { query: "up", "prometheus-server": fake.url }),
    );
    assert.equal(
      await message(annotated.collect(context())),
      `prometheus query "up" at ${fake.url} returned NaN in series {} for metric queue-length`,
    );
    fake.reply = () => ({
      status: 200,
      body: JSON.stringify({
        status: "success",
        warnings: [SECRET, SECRET],
        data: { resultType: "vector", result: [{ metric: { token: SECRET }, value: [1, "2"] }] },
      }),
    });
    assert.deepEqual(await annotated.collect(context()), {
      samples: [{ value: 2, timestamp: context().now() }],
      warnings: [
        'prometheus query "up" for metric queue-length: the server sent 2 warning(s), not repeated (an HPA named it)',
      ],
    });
  });
});

describe("prometheus servers of the operator", () => {
  it("never follow a redirect, so the token does not go along", async () => {
    fake.reply = () => ({
      status: 302,
      body: "",
      headers: { location: "http://169.254.169.254/api/v1/query" },
    });
    const c = create(externalPlan("prometheus", { query: "up" }), {
      server: { url: fake.url, tokenFile },
    });
    assert.equal(
      await message(c.collect(context())),
      `prometheus query "up" for metric queue-length failed: refused to follow redirect "302" from ${fake.url}/api/v1/query to "http://169.254.169.254/api/v1/query"`,
    );
    assert.equal(fake.seen.length, 1);
  });

  it("quote Prometheus' error text, bounded", async () => {
    fake.reply = () => ({
      status: 422,
      body: JSON.stringify({ status: "error", errorType: "execution", error: "x".repeat(500) }),
    });
    const c = create(externalPlan("prometheus", { query: "up" }), { server: { url: fake.url } });
    assert.equal(
      await message(c.collect(context())),
      `prometheus query "up" for metric queue-length failed: execution: ${"x".repeat(200)}...`,
    );
  });
});
