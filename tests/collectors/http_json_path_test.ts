import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  createHttpJsonPathFactory,
  httpJsonPathFactory,
  isLinkLocalHost,
} from "../../src/collectors/http_json_path.ts";
import type { MetricPlan } from "../../src/core/types.ts";
import { MemoryCluster } from "../engine/support.ts";
import { json, startServer } from "./servers.ts";

const NOW = Date.parse("2024-03-04T10:00:00Z");

function plan(config: Record<string, string>): MetricPlan {
  return {
    hpa: { namespace: "default", name: "worker" },
    index: 0,
    metricType: "External",
    metricName: "queue-length",
    metricSelector: { matchLabels: { type: "json-path", queue: "orders" } },
    target: { type: "AverageValue", averageValue: "10" },
    describedObject: null,
    scaleTargetRef: { kind: "Deployment", name: "worker" },
    collector: "json-path",
    intervalSeconds: 60,
    perReplica: false,
    minPodReadyAgeSeconds: 0,
    config: { type: "json-path", queue: "orders", ...config },
    error: null,
  };
}

const ctx = () => ({
  signal: new AbortController().signal,
  now: () => NOW,
  fetch: (i: RequestInfo | URL, init?: RequestInit) => fetch(i, init),
  cluster: new MemoryCluster(),
});

describe("isLinkLocalHost", () => {
  const cases: [string, boolean][] = [
    ["169.254.169.254", true],
    ["169.254.0.1", true],
    ["169.255.0.1", false],
    ["10.0.0.1", false],
    ["[fe80::1]", true],
    ["[febf::1]", true],
    ["[fec0::1]", false],
    ["[::ffff:a9fe:a9fe]", true],
    ["[::ffff:169.254.169.254]", true],
    ["[::1]", false],
    ["metrics.example.org", false],
  ];
  for (const [host, want] of cases) {
    it(`${host} -> ${want}`, () => assert.equal(isLinkLocalHost(host), want));
  }
});

describe("http json-path collector", () => {
  it("reads one value from the endpoint", async () => {
    const srv = await startServer("127.0.0.2", 0, (req, res) => {
      assert.equal(req.url, "/queues?name=orders");
      json(res, { queues: [{ length: 4 }, { length: 6 }] });
    });
    try {
      const c = httpJsonPathFactory.create({
        plan: plan({
          endpoint: `http://127.0.0.2:${srv.port}/queues?name=orders`,
          "json-key": "$.queues[*].length",
          aggregator: "sum",
        }),
      });
      assert.deepEqual(await c.collect(ctx()), { samples: [{ value: 10, timestamp: NOW }] });
    } finally {
      await srv.close();
    }
  });

  it("fails with the status and URL on a non-2xx answer", async () => {
    const srv = await startServer("127.0.0.2", 0, (_req, res) => json(res, { error: "x" }, 500));
    try {
      const url = `http://127.0.0.2:${srv.port}/q`;
      const c = httpJsonPathFactory.create({
        plan: plan({ endpoint: url, "json-key": "$.n" }),
      });
      await assert.rejects(c.collect(ctx()), {
        message: `unsuccessful response "500 Internal Server Error" from ${url}`,
      });
    } finally {
      await srv.close();
    }
  });

  it("times out after request-timeout", async () => {
    const srv = await startServer("127.0.0.2", 0, () => {});
    try {
      const url = `http://127.0.0.2:${srv.port}/slow`;
      const c = httpJsonPathFactory.create({
        plan: plan({ endpoint: url, "json-key": "$.n", "request-timeout": "200ms" }),
      });
      await assert.rejects(c.collect(ctx()), {
        message: `request to ${url} failed: timed out after 0.2s`,
      });
    } finally {
      await srv.close();
    }
  });

  it("refuses link-local endpoints unless --allow-link-local-targets", () => {
    for (const endpoint of ["http://169.254.169.254/latest", "http://[fe80::1]:8080/x"]) {
      assert.throws(
        () => httpJsonPathFactory.create({ plan: plan({ endpoint, "json-key": "$.n" }) }),
        {
          message:
            `invalid endpoint "${endpoint}" for External metric \`queue-length\` of HPA default/worker (annotation metric-config.external.queue-length.json-path/endpoint): a link-local address (allow with --allow-link-local-targets)`,
        },
      );
      const c = createHttpJsonPathFactory({ allowLinkLocalTargets: true }).create({
        plan: plan({ endpoint, "json-key": "$.n" }),
      });
      assert.match(c.queryKey, /^json-path\/External\|/);
    }
  });

  it("rejects a missing or malformed endpoint", () => {
    const cases: [Record<string, string>, string][] = [
      [
        { "json-key": "$.n" },
        "External metric `queue-length` of HPA default/worker needs matchLabels.endpoint or annotation metric-config.external.queue-length.json-path/endpoint",
      ],
      [
        { endpoint: "not a url", "json-key": "$.n" },
        'invalid endpoint "not a url" for External metric `queue-length` of HPA default/worker (annotation metric-config.external.queue-length.json-path/endpoint): want an http:// or https:// URL',
      ],
      [
        { endpoint: "file:///etc/passwd", "json-key": "$.n" },
        'invalid endpoint "file:///etc/passwd" for External metric `queue-length` of HPA default/worker (annotation metric-config.external.queue-length.json-path/endpoint): want an http:// or https:// URL',
      ],
    ];
    for (const [config, message] of cases) {
      assert.throws(() => httpJsonPathFactory.create({ plan: plan(config) }), {
        message,
      });
    }
  });

  it("asks the engine for a deadline of its own request-timeout (default 15s)", () => {
    const custom = httpJsonPathFactory.create({
      plan: plan({ endpoint: "http://127.0.0.2/q", "json-key": "$.n", "request-timeout": "30s" }),
    });
    const dflt = httpJsonPathFactory.create({
      plan: plan({ endpoint: "http://127.0.0.2/q", "json-key": "$.n" }),
    });
    assert.equal(custom.timeoutMs?.({ cluster: new MemoryCluster(), now: () => 0 }), 30_000);
    assert.equal(dflt.timeoutMs?.({ cluster: new MemoryCluster(), now: () => 0 }), 15_000);
  });

  it("shares a query between HPAs with the same endpoint and extraction", () => {
    const a = httpJsonPathFactory.create({
      plan: plan({ endpoint: "http://127.0.0.2/q", "json-key": "$.n" }),
    });
    const b = httpJsonPathFactory.create({
      plan: {
        ...plan({ endpoint: "http://127.0.0.2/q", "json-key": "$.n" }),
        hpa: { namespace: "x", name: "y" },
      },
    });
    const c = httpJsonPathFactory.create({
      plan: plan({ endpoint: "http://127.0.0.2/q", "json-key": "$.m" }),
    });
    assert.equal(a.queryKey, b.queryKey);
    assert.notEqual(a.queryKey, c.queryKey);
  });
});

describe("http json-path collector and secrets", () => {
  const SECRET = "AKIAIOSFODNN7EXAMPLE";

  it("refuses an endpoint whose name resolves to a link-local address, before connecting", async () => {
    let fetched = 0;
    const asked: string[] = [];
    const c = httpJsonPathFactory.create({
      plan: plan({ endpoint: "http://metadata.test/latest/meta-data", "json-key": "$.n" }),
    });
    const lookupCtx = {
      ...ctx(),
      fetch: () => {
        fetched++;
        return Promise.resolve(new Response('{"n":1}'));
      },
      lookup: (host: string) => {
        asked.push(host);
        return Promise.resolve(["10.0.0.1", "::ffff:169.254.169.254"]);
      },
    };
    await assert.rejects(c.collect(lookupCtx), {
      message:
        'request to http://metadata.test/latest/meta-data refused: host "metadata.test" resolves to link-local address ::ffff:169.254.169.254 (allow with --allow-link-local-targets)',
    });
    assert.equal(fetched, 0);
    assert.deepEqual(asked, ["metadata.test"]);
    const allowed = createHttpJsonPathFactory({ allowLinkLocalTargets: true }).create({
      plan: plan({ endpoint: "http://metadata.test/latest/meta-data", "json-key": "$.n" }),
    });
    assert.deepEqual(await allowed.collect(lookupCtx), {
      samples: [{ value: 1, timestamp: NOW }],
    });
    assert.equal(fetched, 1);
    assert.deepEqual(asked, ["metadata.test"]);
  });

  it("does not follow a redirect, so a redirect cannot reach what the endpoint may not", async () => {
    let secretHits = 0;
    const secret = await startServer("127.0.0.3", 0, (_req, res) => {
      secretHits++;
      json(res, { n: 1, token: SECRET });
    });
    const target = `http://127.0.0.3:${secret.port}/latest/meta-data`;
    const redirector = await startServer("127.0.0.2", 0, (_req, res) => {
      res.writeHead(302, { location: target });
      res.end();
    });
    try {
      const url = `http://127.0.0.2:${redirector.port}/q`;
      const c = httpJsonPathFactory.create({
        plan: plan({ endpoint: url, "json-key": "$.n" }),
      });
      await assert.rejects(c.collect(ctx()), {
        message: `refused to follow redirect "302" from ${url} to "${target}"`,
      });
      assert.equal(secretHits, 0);
    } finally {
      await redirector.close();
      await secret.close();
    }
  });

  const bodies: [string, string, string, (url: string) => string][] = [
    [
      "a body that is not JSON",
      "text/plain",
      `#!/bin/sh\nexport AWS_SECRET=${SECRET}\n`,
      (url) => `invalid JSON from ${url}`,
    ],
    [
      "a string where the number should be",
      "application/json",
      JSON.stringify({ n: SECRET }),
      (url) =>
        `json-key "$.n" found a string where a number was expected, in the answer from ${url}`,
    ],
  ];
  for (const [name, type, body, message] of bodies) {
    it(`reports ${name} without quoting the response`, async () => {
      const srv = await startServer("127.0.0.2", 0, (_req, res) => {
        res.writeHead(200, { "content-type": type });
        res.end(body);
      });
      try {
        const url = `http://127.0.0.2:${srv.port}/user-data`;
        const c = httpJsonPathFactory.create({
          plan: plan({ endpoint: url, "json-key": "$.n" }),
        });
        await assert.rejects(c.collect(ctx()), { message: message(url) });
      } finally {
        await srv.close();
      }
    });
  }
});
