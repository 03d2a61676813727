/**
 * The collectors' fetch (src/runtime/http_fetch.ts, on our HTTP/1.1 client): it must answer
 * fetchCapped exactly as the runtime's fetch does, against real loopback servers, on every
 * runtime.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { fetchCapped, httpGetText } from "../../src/collectors/http_get.ts";
import { type CollectorFetch, collectorFetch } from "../../src/runtime/http_fetch.ts";
import { startServer, type TestServer } from "../collectors/servers.ts";

const base = { signal: new AbortController().signal, timeoutSeconds: 5, maxBytes: 1 << 20 };

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
  socket: Socket;
}

{
  describe("the collectors' fetch answers fetchCapped as the runtime's fetch does", () => {
    let http: CollectorFetch;
    let srv: TestServer;
    const seen: Seen[] = [];
    const closed: Socket[] = [];
    const big = JSON.stringify({ pad: "x".repeat(5000) });
    const url = (p: string): string => `http://127.0.0.2:${srv.port}${p}`;

    before(async () => {
      http = collectorFetch();
      srv = await startServer("127.0.0.2", 0, (req, res) => {
        let body = "";
        req.setEncoding("utf8");
        req.on("data", (d: string) => (body += d));
        req.on("end", () => {
          seen.push({
            method: req.method ?? "",
            url: req.url ?? "",
            headers: req.headers,
            body,
            socket: req.socket,
          });
          req.socket.once("close", () => closed.push(req.socket));
          const path = (req.url ?? "/").split("?")[0];
          switch (path) {
            case "/json":
              res.writeHead(200, { "content-type": "application/json", "x-a": "1" });
              res.end('{"length":42}');
              return;
            case "/status": {
              const status = Number(new URL(req.url ?? "/", "http://x").searchParams.get("s"));
              res.writeHead(status, { "content-type": "application/json" });
              res.end('{"secret":"s-123"}');
              return;
            }
            case "/redirect":
              res.writeHead(302, { location: "http://169.254.169.254/latest" });
              res.end();
              return;
            case "/chunked":
              res.writeHead(200, { "content-type": "application/json" });
              res.write(big.slice(0, 100));
              res.end(big.slice(100));
              return;
            case "/gzip":
            case "/deflate":
            case "/br": {
              const zipped = path === "/gzip"
                ? gzipSync(big)
                : path === "/deflate"
                ? deflateSync(big)
                : brotliCompressSync(big);
              res.writeHead(200, {
                "content-encoding": path.slice(1),
                "content-length": zipped.length,
              });
              res.end(zipped);
              return;
            }
            case "/echo":
              res.writeHead(201, { "content-type": "text/plain" });
              res.end(`${req.method} ${req.headers["content-type"]} ${body}`);
              return;
            case "/hang":
              return; // never answers
            case "/reset":
              res.writeHead(200, { "content-length": "1000" });
              res.write("partial");
              setTimeout(() => req.socket.destroy(), 20);
              return;
            default:
              res.writeHead(404);
              res.end();
          }
        });
      });
    });
    after(async () => {
      await http.close();
      await srv.close();
    });

    it("reads status, headers and body, and keeps the connection for the next request", async () => {
      seen.length = 0;
      const a = await fetchCapped(url("/json"), { ...base, fetch: http.fetch });
      assert.deepEqual(
        [a.status, a.statusText, a.text, a.headers.get("X-A"), a.headers.get("content-type")],
        [200, "OK", '{"length":42}', "1", "application/json"],
      );
      for (let i = 0; i < 3; i++) {
        // (a request sent in the same turn as the last one ended gets a second connection, with
        // the runtime's fetch as well: the first is freed on the next turn)
        await new Promise((r) => setTimeout(r, 10));
        assert.equal(
          (await fetchCapped(url(`/json?${i}`), { ...base, fetch: http.fetch })).text,
          '{"length":42}',
        );
      }
      assert.equal(seen.length, 4);
      assert.equal(new Set(seen.map((s) => s.socket)).size, 1, "one keep-alive connection");
      // nothing asked the server to compress
      assert.equal(seen[0].headers["accept-encoding"], undefined);
      assert.equal(seen[0].headers.accept, "*/*"); // fetch's default
    });

    it("reports a failing status by its standard reason phrase, without the body", async () => {
      for (const [status, phrase] of [[403, "Forbidden"], [503, "Service Unavailable"]] as const) {
        const u = url(`/status?s=${status}`);
        for (const fetch of [http.fetch, globalThis.fetch]) {
          await assert.rejects(httpGetText(u, { ...base, fetch }), {
            message: `unsuccessful response "${status} ${phrase}" from ${u}`,
          });
        }
      }
    });

    it("never follows a redirect", async () => {
      await assert.rejects(fetchCapped(url("/redirect"), { ...base, fetch: http.fetch }), {
        message: `refused to follow redirect "302" from ${
          url("/redirect")
        } to "http://169.254.169.254/latest"`,
      });
    });

    it("caps a body of unknown length and decodes what a server compressed unasked", async () => {
      for (const p of ["/chunked", "/gzip", "/deflate", "/br"]) {
        assert.equal((await fetchCapped(url(p), { ...base, fetch: http.fetch })).text, big, p);
        await assert.rejects(fetchCapped(url(p), { ...base, fetch: http.fetch, maxBytes: 1000 }), {
          message: `response from ${url(p)} exceeds 1000 bytes`,
        }, p);
      }
    });

    it("sends the method, headers and body it is given", async () => {
      const res = await fetchCapped(url("/echo"), {
        ...base,
        fetch: http.fetch,
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer t-1" },
        body: '{"q":"up"}',
      });
      assert.deepEqual([res.status, res.statusText, res.text], [
        201,
        "Created",
        'POST application/json {"q":"up"}',
      ]);
      assert.equal(seen[seen.length - 1].headers.authorization, "Bearer t-1");
      assert.equal(seen[seen.length - 1].headers.accept, "*/*");
    });

    it("gives up at the deadline and closes the connection it waited on", async () => {
      closed.length = 0;
      await assert.rejects(
        fetchCapped(url("/hang"), { ...base, fetch: http.fetch, timeoutSeconds: 0.2 }),
        { message: `request to ${url("/hang")} failed: timed out after 0.2s` },
      );
      const socket = seen[seen.length - 1].socket;
      for (let i = 0; i < 100 && !closed.includes(socket); i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      assert.ok(closed.includes(socket), "the hung request's connection is closed");
    });

    it("names the URL and the cause when it cannot connect", async () => {
      const u = "http://127.0.0.2:1/x";
      await assert.rejects(fetchCapped(u, { ...base, fetch: http.fetch }), (e: Error) => {
        assert.match(e.message, /^request to http:\/\/127\.0\.0\.2:1\/x failed: .*ECONNREFUSED/);
        return true;
      });
    });

    it("survives a connection reset under a body nobody reads, and one that is read", async () => {
      const unread = await http.fetch(url("/reset"), { redirect: "manual" });
      assert.equal(unread.status, 200);
      await new Promise((r) => setTimeout(r, 100)); // an uncaught error would end the test run
      await assert.rejects(fetchCapped(url("/reset"), { ...base, fetch: http.fetch }), {
        message: `request to ${url("/reset")} failed: connection closed while reading the body`,
      });
    });

    it("leaves what it does not do itself to the runtime's fetch", async () => {
      // fetch follows redirects unless told not to: such a call is the runtime's fetch's
      const res = await http.fetch(url("/json"));
      assert.equal(await res.text(), '{"length":42}');
      // the runtime's Response (ours has no clone); not compared with globalThis.Response, which
      // another test file in the same Bun process may have replaced by a subclass
      assert.equal(typeof res.clone, "function");
    });
  });
}

describe("collectorFetch", () => {
  it("reads a real server without asking for compression", async () => {
    let acceptEncoding: string | undefined;
    const srv = await startServer("127.0.0.2", 0, (req, res) => {
      acceptEncoding = req.headers["accept-encoding"];
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"length":7}');
    });
    const http = collectorFetch();
    try {
      const res = await http.fetch(`http://127.0.0.2:${srv.port}/q`, { redirect: "manual" });
      assert.deepEqual([res.status, await res.text()], [200, '{"length":7}']);
      // every runtime's fetch asks for compression; the collectors' fetch does not
      assert.equal(acceptEncoding, undefined);
    } finally {
      await http.close();
      await srv.close();
    }
  });
});

describe("collectorFetch and the link-local check", () => {
  it("connects to the address the check accepted, not to a second lookup's", async () => {
    let host: string | undefined;
    const srv = await startServer("127.0.0.2", 0, (req, res) => {
      host = req.headers.host;
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"length":3}');
    });
    const http = collectorFetch();
    const lookups: string[] = [];
    try {
      // a name only this resolver knows: the client must not resolve it again
      const url = `http://rebind.test:${srv.port}/q`;
      const res = await fetchCapped(url, {
        ...base,
        fetch: http.fetch,
        linkLocal: {
          allow: false,
          lookup: (name) => {
            lookups.push(name);
            return Promise.resolve(["127.0.0.2"]);
          },
        },
      });
      assert.deepEqual([res.status, res.text], [200, '{"length":3}']);
      assert.deepEqual(lookups, ["rebind.test"]);
      assert.equal(host, `rebind.test:${srv.port}`);
    } finally {
      await http.close();
      await srv.close();
    }
  });
});

describe("collectorFetch with a backend an HPA author chose", () => {
  const cap = 1 << 20;
  // 64 MiB of zeros: each compresses to at most 64 KiB, the chunk a runtime reads at once
  const zeros = new Uint8Array(64 << 20);
  const bombs: Record<string, Uint8Array> = {
    gzip: gzipSync(zeros),
    deflate: deflateSync(zeros),
    br: brotliCompressSync(zeros),
  };
  const json = JSON.stringify({ pad: "x".repeat(5000) });
  let srv: TestServer;
  const url = (p: string): string => `http://127.0.0.2:${srv.port}${p}`;

  before(async () => {
    srv = await startServer("127.0.0.2", 0, (req, res) => {
      const u = new URL(req.url ?? "/", "http://x");
      const encoding = u.searchParams.get("encoding") ?? "gzip";
      const length = u.searchParams.has("chunked") ? {} : undefined;
      switch (u.pathname) {
        case "/bomb":
        case "/small": {
          const body = u.pathname === "/bomb"
            ? bombs[encoding]
            : encoding === "gzip"
            ? gzipSync(json)
            : encoding === "deflate"
            ? deflateSync(json)
            : brotliCompressSync(json);
          res.writeHead(200, {
            "content-encoding": encoding,
            ...(length ?? { "content-length": body.byteLength }),
          });
          res.end(body);
          return;
        }
        case "/corrupt":
          res.writeHead(200, { "content-encoding": "gzip", "content-length": 11 });
          res.end("not gzipped");
          return;
        case "/reset": {
          // headers and part of the body, then the connection is gone
          const how = u.searchParams.get("how");
          res.writeHead(
            200,
            how === "length"
              ? { "content-length": 100_000 }
              : how === "gzip"
              ? { "content-encoding": "gzip" }
              : { "content-type": "application/json" },
          );
          res.write(how === "gzip" ? bombs.gzip.subarray(0, 1000) : "x".repeat(5000));
          setTimeout(() => req.socket.destroy(), 50);
          return;
        }
        default:
          res.writeHead(404);
          res.end();
      }
    });
  });
  after(async () => {
    await srv.close();
  });

  it("inflates no more of a compressed bomb than the cap and a chunk or two", async () => {
    for (const encoding of ["gzip", "deflate", "br"]) {
      for (const q of ["", "&chunked"]) {
        const u = url(`/bomb?encoding=${encoding}${q}`);
        const inflated: number[] = [];
        const http = collectorFetch({ onInflated: (n) => inflated.push(n) });
        try {
          await assert.rejects(
            fetchCapped(u, { ...base, fetch: http.fetch, maxBytes: cap }),
            { message: `response from ${u} exceeds ${cap} bytes` },
          );
        } finally {
          await http.close();
        }
        // we inflated it (not the runtime, ahead of the reader), and stopped at the cap
        assert.equal(inflated.length, 1, u);
        assert.ok(inflated[0] > cap && inflated[0] <= cap + 256 * 1024, `${u}: ${inflated[0]}`);
      }
    }
  });

  it("decodes a compressed body within the cap in full, read whole or as a stream", async () => {
    for (const encoding of ["gzip", "deflate", "br"]) {
      for (const q of ["", "&chunked"]) {
        const u = url(`/small?encoding=${encoding}${q}`);
        const inflated: number[] = [];
        const http = collectorFetch({ onInflated: (n) => inflated.push(n) });
        try {
          assert.equal((await fetchCapped(u, { ...base, fetch: http.fetch })).text, json, u);
          const res = await http.fetch(u, { redirect: "manual" });
          assert.equal(res.headers.get("content-encoding"), encoding);
          assert.equal(await res.text(), json, u);
        } finally {
          await http.close();
        }
        assert.deepEqual(inflated, [json.length, json.length], u);
      }
    }
  });

  it("names the URL when a compressed body does not decode", async () => {
    const http = collectorFetch();
    try {
      await assert.rejects(fetchCapped(url("/corrupt"), { ...base, fetch: http.fetch }), (e) => {
        assert.ok(
          (e as Error).message.startsWith(
            `request to ${url("/corrupt")} failed: invalid gzip body: `,
          ),
          (e as Error).message,
        );
        return true;
      });
    } finally {
      await http.close();
    }
  });

  it("names the URL when the connection closes in the body, in short words", async () => {
    const why = "connection closed while reading the body";
    for (const how of ["length", "chunked", "gzip"]) {
      const u = url(`/reset?how=${how}`);
      const http = collectorFetch();
      try {
        await assert.rejects(fetchCapped(u, { ...base, fetch: http.fetch }), {
          message: `request to ${u} failed: ${why}`,
        });
      } finally {
        await http.close();
      }
    }
  });
});
