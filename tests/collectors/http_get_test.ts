/**
 * The request helper every HTTP collector goes through: the link-local check (literal hosts
 * and resolved names), redirects never followed, response bodies never echoed.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  checkLinkLocalTarget,
  defaultHostLookup,
  fetchCapped,
  type HostLookup,
  httpGetText,
  isLinkLocalAddress,
  parseJsonBody,
} from "../../src/collectors/http_get.ts";
import { Buffer } from "node:buffer";
import { gzipSync } from "node:zlib";
import { json, startServer } from "./servers.ts";

/** A resolver with fixed answers that records the names it was asked. */
function fakeLookup(answers: Record<string, string[]>): HostLookup & { asked: string[] } {
  const asked: string[] = [];
  const fn = (host: string): Promise<string[]> => {
    asked.push(host);
    const a = answers[host];
    return a ? Promise.resolve(a) : Promise.reject(new Error(`getaddrinfo ENOTFOUND ${host}`));
  };
  return Object.assign(fn, { asked });
}

const REFUSE = "(allow with --allow-link-local-targets)";

describe("isLinkLocalAddress", () => {
  const cases: [string, boolean][] = [
    ["169.254.169.254", true],
    ["169.254.0.1", true],
    ["169.255.0.1", false],
    ["10.0.0.1", false],
    ["127.0.0.1", false],
    ["fe80::1", true],
    ["fe80::1%eth0", true],
    ["FEBF::1", true],
    ["fec0::1", false],
    ["::ffff:169.254.169.254", true],
    ["::ffff:a9fe:a9fe", true],
    ["0:0:0:0:0:ffff:a9fe:a9fe", true],
    ["::ffff:0:169.254.1.2", true],
    ["::169.254.1.2", true],
    ["64:ff9b::169.254.169.254", true],
    ["::ffff:10.0.0.1", false],
    ["::1", false],
    ["::", false],
    ["2001:db8::a9fe:a9fe", false],
    ["fe80::1::2", false],
    ["metadata.google.internal", false],
  ];
  for (const [address, want] of cases) {
    it(`${address} -> ${want}`, () => assert.equal(isLinkLocalAddress(address), want));
  }
});

describe("checkLinkLocalTarget", () => {
  it("refuses a link-local literal without resolving anything", async () => {
    const lookup = fakeLookup({});
    for (
      const [url, host] of [
        ["http://169.254.169.254/latest", "169.254.169.254"],
        ["http://[fe80::1]:8080/x", "fe80::1"],
        ["http://[::ffff:169.254.169.254]/", "::ffff:a9fe:a9fe"],
        ["http://0xa9fea9fe/", "169.254.169.254"],
      ]
    ) {
      await assert.rejects(checkLinkLocalTarget(url, { allow: false, lookup }), {
        message: `request to ${url} refused: host "${host}" is a link-local address ${REFUSE}`,
      });
    }
    assert.deepEqual(lookup.asked, []);
  });

  it("refuses a name when any of its addresses is link-local", async () => {
    const lookup = fakeLookup({
      "metadata.test": ["169.254.169.254"],
      "mixed.test": ["10.0.0.1", "fe80::a%eth0"],
      "mapped.test": ["::ffff:169.254.10.1"],
    });
    const cases: [string, string][] = [
      ["http://metadata.test/latest/meta-data", "169.254.169.254"],
      ["https://Mixed.Test:8443/q", "fe80::a%eth0"],
      ["http://mapped.test/", "::ffff:169.254.10.1"],
    ];
    for (const [url, address] of cases) {
      const host = new URL(url).hostname;
      await assert.rejects(checkLinkLocalTarget(url, { allow: false, lookup }), {
        message:
          `request to ${url} refused: host "${host}" resolves to link-local address ${address} ${REFUSE}`,
      });
    }
    assert.deepEqual(lookup.asked, ["metadata.test", "mixed.test", "mapped.test"]);
  });

  it("lets other names and addresses through, and everything with the flag", async () => {
    const lookup = fakeLookup({ "metrics.test": ["10.0.0.7", "fd00::7"] });
    await checkLinkLocalTarget("http://metrics.test/q", { allow: false, lookup });
    await checkLinkLocalTarget("http://127.0.0.2:8080/q", { allow: false, lookup });
    await checkLinkLocalTarget("http://169.254.169.254/", { allow: true, lookup });
    await checkLinkLocalTarget("http://nowhere.test/", { allow: true, lookup });
    assert.deepEqual(lookup.asked, ["metrics.test"]);
  });

  it("fails closed when the name does not resolve", async () => {
    await assert.rejects(
      checkLinkLocalTarget("http://nowhere.test/q", { allow: false, lookup: fakeLookup({}) }),
      {
        message:
          'request to http://nowhere.test/q failed: cannot resolve host "nowhere.test": getaddrinfo ENOTFOUND nowhere.test',
      },
    );
  });

  it("resolves with node:dns by default", async () => {
    const all = await defaultHostLookup("localhost");
    assert.ok(all.some((a) => a === "127.0.0.1" || a === "::1"), JSON.stringify(all));
    await checkLinkLocalTarget("http://localhost:1/", { allow: false });
  });
});

describe("fetchCapped", () => {
  const base = { signal: new AbortController().signal, timeoutSeconds: 5, maxBytes: 1 << 20 };

  it("never follows a redirect: the error names the URL and the location", async () => {
    let secretHits = 0;
    const secret = await startServer("127.0.0.3", 0, (_req, res) => {
      secretHits++;
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("AKIAIOSFODNN7EXAMPLE");
    });
    const target = `http://127.0.0.3:${secret.port}/latest/meta-data/iam`;
    const seen: { url: string; authorization?: string }[] = [];
    const redirector = await startServer("127.0.0.2", 0, (req, res) => {
      seen.push({ url: req.url ?? "", authorization: req.headers.authorization });
      const status = Number(new URL(req.url ?? "/", "http://x").searchParams.get("status"));
      res.writeHead(status, status === 304 ? {} : { location: target });
      res.end();
    });
    try {
      for (const status of [301, 302, 303, 307, 308]) {
        const url = `http://127.0.0.2:${redirector.port}/q?status=${status}`;
        for (const method of ["GET", "POST"] as const) {
          await assert.rejects(
            fetchCapped(url, {
              ...base,
              fetch,
              method,
              headers: { authorization: "Bearer operator-token" },
            }),
            { message: `refused to follow redirect "${status}" from ${url} to "${target}"` },
          );
        }
      }
      const url = `http://127.0.0.2:${redirector.port}/q?status=304`;
      await assert.rejects(fetchCapped(url, { ...base, fetch }), {
        message: `refused to follow redirect "304" from ${url} (no location)`,
      });
      assert.equal(secretHits, 0);
      assert.equal(seen.length, 11);
    } finally {
      await redirector.close();
      await secret.close();
    }
  });

  it("caps bodies with and without a length, also a compressed body that inflates past the cap", async () => {
    const big = JSON.stringify({ pad: "x".repeat(5000) });
    const srv = await startServer("127.0.0.2", 0, (req, res) => {
      const body = req.url === "/small" ? '{"v":1}' : big;
      if (req.url === "/gzip") {
        const zipped = gzipSync(body);
        res.writeHead(200, { "content-encoding": "gzip", "content-length": zipped.length });
        res.end(zipped);
      } else if (req.url === "/chunked") {
        res.writeHead(200, { "content-type": "application/json" });
        res.write(body.slice(0, 100));
        res.end(body.slice(100));
      } else {
        res.writeHead(200, { "content-length": Buffer.byteLength(body) });
        res.end(body);
      }
    });
    const url = (p: string): string => `http://127.0.0.2:${srv.port}${p}`;
    const capped = { ...base, fetch, maxBytes: 1000 };
    try {
      assert.equal((await fetchCapped(url("/small"), capped)).text, '{"v":1}');
      for (const p of ["/big", "/chunked", "/gzip"]) {
        await assert.rejects(fetchCapped(url(p), capped), {
          message: `response from ${url(p)} exceeds 1000 bytes`,
        }, p);
      }
      assert.equal((await fetchCapped(url("/gzip"), { ...base, fetch })).text, big);
      assert.equal((await fetchCapped(url("/chunked"), { ...base, fetch })).text, big);
    } finally {
      await srv.close();
    }
  });

  it("reads an answer that comes a byte at a time whole, UTF-8 split across bytes too", async () => {
    const body = JSON.stringify({ v: "é".repeat(20_000), w: 1 });
    const bytes = new TextEncoder().encode(body);
    const oneByOne = (): Promise<Response> => {
      let i = 0;
      return Promise.resolve(
        new Response(
          new ReadableStream<Uint8Array>({
            pull(controller): void {
              if (i < bytes.length) controller.enqueue(bytes.slice(i, ++i));
              else controller.close();
            },
          }),
        ),
      );
    };
    const read = await fetchCapped("http://127.0.0.2:1/", { ...base, fetch: oneByOne });
    assert.equal(read.text, body);
    await assert.rejects(
      fetchCapped("http://127.0.0.2:1/", { ...base, fetch: oneByOne, maxBytes: bytes.length - 1 }),
      { message: `response from http://127.0.0.2:1/ exceeds ${bytes.length - 1} bytes` },
    );
  });

  it("always asks fetch for manual redirects", async () => {
    const modes: (RequestRedirect | undefined)[] = [];
    const spy = (_i: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
      modes.push(init?.redirect);
      return Promise.resolve(new Response("{}", { status: 200 }));
    };
    await fetchCapped("http://127.0.0.2:1/", { ...base, fetch: spy });
    await httpGetText("http://127.0.0.2:1/", { ...base, fetch: spy });
    assert.deepEqual(modes, ["manual", "manual"]);
  });

  it("checks the host under linkLocal before connecting", async () => {
    let calls = 0;
    const spy = (): Promise<Response> => {
      calls++;
      return Promise.resolve(new Response("1", { status: 200 }));
    };
    const lookup = fakeLookup({ "metadata.test": ["169.254.169.254"], "ok.test": ["10.1.2.3"] });
    await assert.rejects(
      httpGetText("http://metadata.test/computeMetadata/v1/", {
        ...base,
        fetch: spy,
        linkLocal: { allow: false, lookup },
      }),
      {
        message:
          `request to http://metadata.test/computeMetadata/v1/ refused: host "metadata.test" resolves to link-local address 169.254.169.254 ${REFUSE}`,
      },
    );
    assert.equal(calls, 0);
    assert.equal(
      await httpGetText("http://ok.test/", {
        ...base,
        fetch: spy,
        linkLocal: { allow: false, lookup },
      }),
      "1",
    );
    // No policy: no check (pod IPs from the cluster, operator-configured backends).
    assert.equal(await httpGetText("http://metadata.test/", { ...base, fetch: spy }), "1");
    assert.equal(calls, 2);
    // An address in the URL is decided without a lookup: refused, or let through.
    for (const host of ["169.254.169.254", "[fe80::1]"]) {
      await assert.rejects(
        httpGetText(`http://${host}/latest`, {
          ...base,
          fetch: spy,
          linkLocal: { allow: false, lookup },
        }),
        {
          message: `request to http://${host}/latest refused: host "${
            host.replace(/[[\]]/g, "")
          }" is a link-local address ${REFUSE}`,
        },
      );
    }
    assert.equal(
      await httpGetText("http://10.1.2.3:8080/", {
        ...base,
        fetch: spy,
        linkLocal: { allow: false, lookup },
      }),
      "1",
    );
    assert.equal(calls, 3);
    assert.deepEqual(lookup.asked, ["metadata.test", "ok.test"]);
  });

  it("names the URL when the connection closes in the body, read whole or as a stream", async () => {
    const srv = await startServer("127.0.0.2", 0, (req, res) => {
      // headers and part of the body, then the connection is gone
      res.writeHead(200, req.url === "/length" ? { "content-length": 100_000 } : {});
      res.write("x".repeat(5000));
      setTimeout(() => req.socket.destroy(), 50);
    });
    try {
      for (const p of ["/length", "/chunked"]) {
        const url = `http://127.0.0.2:${srv.port}${p}`;
        // the runtime's own fetch: its words, cut short (Bun's end in a hint about `verbose`)
        await assert.rejects(fetchCapped(url, { ...base, fetch }), (e: Error) => {
          assert.ok(e.message.startsWith(`request to ${url} failed: `), e.message);
          assert.ok(!e.message.includes("verbose"), e.message);
          return true;
        });
      }
    } finally {
      await srv.close();
    }
  });

  it("cuts a body read error to its first sentence", async () => {
    const hint =
      "ECONNRESET: The socket connection was closed unexpectedly. For more information, pass `verbose: true` in the second argument to fetch()";
    for (const length of [true, false]) {
      const failing = (): Promise<Response> =>
        Promise.resolve(
          new Response(
            new ReadableStream({
              start(controller): void {
                controller.enqueue(new TextEncoder().encode("{"));
                controller.error(new TypeError(hint));
              },
            }),
            { headers: length ? { "content-length": "100" } : {} },
          ),
        );
      await assert.rejects(fetchCapped("http://127.0.0.2:1/q", { ...base, fetch: failing }), {
        message:
          "request to http://127.0.0.2:1/q failed: ECONNRESET: The socket connection was closed unexpectedly",
      });
    }
  });

  it("gives up on a resolver that never answers at the deadline", async () => {
    const hang: HostLookup = () => new Promise(() => {});
    await assert.rejects(
      fetchCapped("http://slow.test/", {
        ...base,
        timeoutSeconds: 0.1,
        fetch,
        linkLocal: { allow: false, lookup: hang },
      }),
      { message: "request to http://slow.test/ failed: timed out after 0.1s" },
    );
  });
});

describe("response bodies stay out of error messages", () => {
  it("invalid JSON is reported without the body", () => {
    for (
      const body of ["secret-value-123", '{"token": "secret-value-123"', "<html>secret-value-123"]
    ) {
      assert.throws(() => parseJsonBody(body, "http://127.0.0.2/x"), {
        message: "invalid JSON from http://127.0.0.2/x",
      });
    }
  });

  it("a non-2xx answer is reported by its status only", async () => {
    const srv = await startServer("127.0.0.2", 0, (_req, res) => {
      json(res, { secret: "secret-value-123" }, 403);
    });
    try {
      const url = `http://127.0.0.2:${srv.port}/x`;
      await assert.rejects(
        httpGetText(url, {
          signal: new AbortController().signal,
          timeoutSeconds: 5,
          maxBytes: 1000,
          fetch,
        }),
        { message: `unsuccessful response "403 Forbidden" from ${url}` },
      );
    } finally {
      await srv.close();
    }
  });
});
