/**
 * The collectors' HTTP/1.1 client (src/runtime/http1_client.ts) against raw TCP and TLS
 * servers that answer what an endpoint chosen by an HPA author may answer: the floods that cost
 * the runtimes' clients unbounded CPU or memory, framing that smuggles, a body nobody reads,
 * connections the server drops. The same on Node, Deno and Bun.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import * as net from "node:net";
import * as tls from "node:tls";
import { fetchCapped } from "../../src/collectors/http_get.ts";
import { Http1Client } from "../../src/runtime/http1_client.ts";
import { Http1Parser } from "../../src/runtime/http1_parser.ts";
import { collectorFetch } from "../../src/runtime/http_fetch.ts";
import { makeTestPki } from "../fakes/auth_api.ts";

/** How a scripted server answers one request on a connection (`n`: its index there). */
type Script = (socket: net.Socket, head: string, n: number) => void;

interface RawServer {
  port: number;
  /** Request heads received, in order. */
  heads: string[];
  /** Connections accepted, and closed. */
  connections: number;
  closed: number;
  /** Bytes each connection's writes flushed to the kernel (by connection index). */
  written: number[];
  close(): Promise<void>;
}

/** A server on 127.0.0.2 that reads request heads (bodies up to Content-Length) and runs `script`. */
async function rawServer(script: Script, secure = false): Promise<RawServer> {
  const sockets = new Set<net.Socket>();
  const srv: RawServer = {
    port: 0,
    heads: [],
    connections: 0,
    closed: 0,
    written: [],
    close: () => Promise.resolve(),
  };
  const onConnection = (socket: net.Socket): void => {
    const index = srv.connections++;
    srv.written[index] = 0;
    sockets.add(socket);
    socket.on("close", () => {
      sockets.delete(socket);
      srv.closed++;
    });
    socket.on("error", () => {});
    const write = socket.write.bind(socket) as (chunk: string | Uint8Array) => boolean;
    socket.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      srv.written[index] += typeof chunk === "string"
        ? Buffer.byteLength(chunk, "latin1")
        : chunk.byteLength;
      return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof socket.write;
    let held = "";
    let n = 0;
    socket.on("data", (d: Buffer) => {
      held += d.toString("latin1");
      for (;;) {
        const end = held.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = held.slice(0, end);
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (held.length < end + 4 + length) return;
        held = held.slice(end + 4 + length);
        srv.heads.push(head);
        script(socket, head, n++);
      }
    });
  };
  const pki = makeTestPki();
  const server = secure
    ? tls.createServer({ cert: pki.server.cert, key: pki.server.key }, onConnection)
    : net.createServer(onConnection);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.2", resolve));
  srv.port = (server.address() as net.AddressInfo).port;
  srv.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return srv;
}

const base = { timeoutSeconds: 5, maxBytes: 1 << 20 };

function signal(): AbortSignal {
  return new AbortController().signal;
}

/** Bytes of `answer` pushed 1 KiB at a time into a response parser until it refuses them. */
function bytesUntilRefused(answer: (i: number) => string, max: number): [number, string] {
  const parser = new Http1Parser({ maxHeadBytes: 64 * 1024 });
  let pushed = 0;
  let head = false;
  for (let i = 0; pushed < max; i++) {
    const piece = Buffer.from(answer(i), "latin1");
    parser.push(piece);
    pushed += piece.byteLength;
    if (!head) {
      const r = parser.nextResponse("GET");
      if (r === null) continue;
      if (!("minor" in r)) return [pushed, r.reason];
      head = true;
    }
    for (;;) {
      const b = parser.body(1 << 20);
      if (b === null) break;
      if (b === "end") return [pushed, "end"];
      if (!(b instanceof Uint8Array)) return [pushed, b.reason];
    }
  }
  return [pushed, "not refused"];
}

const CHUNKED_HEAD = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

describe("the parser refuses the floods of a hostile answer within a bounded number of bytes", () => {
  it("chunk extensions: each chunk line carries 4,000 bytes of extension for one byte of data", () => {
    const ext = ";a=" + "b".repeat(3990);
    const [bytes, why] = bytesUntilRefused(
      (i) => (i === 0 ? CHUNKED_HEAD : "") + `1${ext}\r\nx\r\n`,
      64 << 20,
    );
    assert.equal(why, "too much chunk overhead for the data");
    // 16 KiB of excess allowed, one line past it
    assert.ok(bytes < 24 * 1024, `${bytes} bytes`);
  });

  it("a chunk size padded with zeros", () => {
    const [bytes, why] = bytesUntilRefused(
      (i) => (i === 0 ? CHUNKED_HEAD : "") + "0".repeat(4000) + "1\r\nx\r\n",
      64 << 20,
    );
    assert.equal(why, "too much chunk overhead for the data");
    assert.ok(bytes < 24 * 1024, `${bytes} bytes`);
  });

  it("a chunk line longer than 4,096 bytes", () => {
    const [bytes, why] = bytesUntilRefused(
      (i) => (i === 0 ? CHUNKED_HEAD + "1;a=" : "") + "b".repeat(1024),
      64 << 20,
    );
    assert.equal(why, "chunk line too large");
    assert.ok(bytes < 6 * 1024, `${bytes} bytes`);
  });

  it("trailers without end", () => {
    const [bytes, why] = bytesUntilRefused(
      (i) => (i === 0 ? CHUNKED_HEAD + "1\r\nx\r\n0\r\n" : "") + `X-T${i}: ${"v".repeat(1000)}\r\n`,
      64 << 20,
    );
    assert.equal(why, "trailers too large");
    assert.ok(bytes < 70 * 1024, `${bytes} bytes`);
  });

  it("a head without end", () => {
    const [bytes, why] = bytesUntilRefused(
      (i) => (i === 0 ? "HTTP/1.1 200 OK\r\n" : "") + `X-H${i}: ${"v".repeat(1000)}\r\n`,
      64 << 20,
    );
    assert.equal(why, "response head too large");
    assert.ok(bytes < 70 * 1024, `${bytes} bytes`);
  });

  it("one-byte chunks are data, not overhead: read to their end", () => {
    const [bytes, why] = bytesUntilRefused(
      (i) => (i === 0 ? CHUNKED_HEAD : "") + (i < 1000 ? "1\r\nx\r\n".repeat(170) : "0\r\n\r\n"),
      64 << 20,
    );
    assert.equal(why, "end");
    assert.equal(bytes, CHUNKED_HEAD.length + 1000 * 170 * 6 + 5);
  });
});

describe("the parser gathers a body's chunks", () => {
  it("gives one piece per push of one-byte chunks, not one per chunk", () => {
    const parser = new Http1Parser();
    parser.push(Buffer.from(CHUNKED_HEAD, "latin1"));
    assert.ok(parser.nextResponse("GET") !== null);
    let pieces = 0;
    let bytes = 0;
    const push = "1\r\nx\r\n".repeat(1000);
    for (let i = 0; i < 100; i++) {
      parser.push(Buffer.from(push, "latin1"));
      for (let b = parser.body(1 << 20); b instanceof Uint8Array; b = parser.body(1 << 20)) {
        pieces++;
        bytes += b.byteLength;
      }
    }
    assert.deepEqual([pieces, bytes], [100, 100_000]);
  });
});

describe("the collectors' fetch against a hostile endpoint", () => {
  let srv: RawServer;
  const url = (p: string): string => `http://127.0.0.2:${srv.port}${p}`;
  const answers: Record<string, (socket: net.Socket) => void> = {
    "/two-lengths": (s) =>
      s.end("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}"),
    "/length-and-chunked": (s) =>
      s.end(
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n" +
          "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
      ),
    "/bare-lf": (s) => s.end("HTTP/1.1 200 OK\nContent-Length: 2\n\n{}"),
    "/upgrade": (s) => s.end("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n"),
    "/gzip-coding": (s) => s.end("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n{}"),
    "/ext-flood": (s) => {
      s.write(CHUNKED_HEAD);
      const line = `1;a=${"b".repeat(3990)}\r\nx\r\n`;
      for (let i = 0; i < 2000; i++) s.write(line); // 8 MB if it were all read
      s.end("0\r\n\r\n");
    },
    "/trailer-flood": (s) => {
      s.write(CHUNKED_HEAD + "2\r\n{}\r\n0\r\n");
      for (let i = 0; i < 2000; i++) s.write(`X-T${i}: ${"v".repeat(4000)}\r\n`);
      s.end("\r\n");
    },
    "/one-byte-chunks": (s) => {
      s.write(CHUNKED_HEAD);
      // 1,000,000 chunks of one byte (6 MB on the wire), then the end
      const block = "1\r\n7\r\n".repeat(10_000);
      for (let i = 0; i < 100; i++) s.write(block);
      s.end("0\r\n\r\n");
    },
    "/continue": (s) =>
      s.end(
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" +
          'HTTP/1.1 200 OK\r\nContent-Length: 13\r\nConnection: close\r\n\r\n{"length":42}',
      ),
    "/until-close": (s) =>
      s.end('HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{"length":7}'),
  };

  before(async () => {
    srv = await rawServer((socket, head) => {
      const path = head.split(" ")[1];
      (answers[path] ?? ((s) => s.end("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")))(
        socket,
      );
    });
  });
  after(async () => {
    await srv.close();
  });

  const refusals: [string, string][] = [
    ["/two-lengths", "malformed answer: more than one content-length"],
    ["/length-and-chunked", "malformed answer: both content-length and transfer-encoding"],
    ["/bare-lf", "malformed answer: bare LF"],
    ["/upgrade", "malformed answer: 101 to a request that asked no upgrade"],
    ["/gzip-coding", 'malformed answer: chunked is not the final transfer coding in "gzip"'],
    ["/ext-flood", "malformed answer: too much chunk overhead for the data"],
    ["/trailer-flood", "malformed answer: trailers too large"],
  ];
  for (const [path, why] of refusals) {
    it(`fails ${path} with "${why}"`, async () => {
      const http = collectorFetch();
      try {
        await assert.rejects(
          fetchCapped(url(path), { ...base, signal: signal(), fetch: http.fetch }),
          {
            message: `request to ${url(path)} failed: ${why}`,
          },
        );
      } finally {
        await http.close();
      }
    });
  }

  it("reads a million one-byte chunks into the body, gathered into few pieces", async () => {
    const http = collectorFetch();
    try {
      const res = await fetchCapped(url("/one-byte-chunks"), {
        ...base,
        maxBytes: 2 << 20,
        signal: signal(),
        fetch: http.fetch,
      });
      assert.equal(res.text, "7".repeat(1_000_000));
    } finally {
      await http.close();
    }
    // Deno's fetch grew by 95 MiB on this answer, an object per chunk; here the data of every
    // chunk the socket delivered at once is one piece (RSS is not compared: test files share a
    // process under Bun, and their garbage moves it)
    const client = new Http1Client();
    try {
      const r = await client.request(url("/one-byte-chunks"));
      let pieces = 0;
      let bytes = 0;
      for (let p = await r.body.read(); p !== null; p = await r.body.read()) {
        pieces++;
        bytes += p.byteLength;
      }
      assert.equal(bytes, 1_000_000);
      assert.ok(pieces < 2_000, `${pieces} pieces for 1,000,000 one-byte chunks`);
    } finally {
      await client.close();
    }
  });

  it("skips 1xx answers and reads a body until the close", async () => {
    const http = collectorFetch();
    try {
      const a = await fetchCapped(url("/continue"), {
        ...base,
        signal: signal(),
        fetch: http.fetch,
      });
      assert.deepEqual([a.status, a.text], [200, '{"length":42}']);
      const b = await fetchCapped(url("/until-close"), {
        ...base,
        signal: signal(),
        fetch: http.fetch,
      });
      assert.deepEqual([b.status, b.headers.get("content-type"), b.text], [
        200,
        "application/json",
        '{"length":7}',
      ]);
    } finally {
      await http.close();
    }
  });
});

describe("the client's connections", () => {
  it("reads a body only as fast as it is pulled", async () => {
    const block = "x".repeat(64 * 1024);
    const srv = await rawServer((s) => {
      s.write("HTTP/1.1 200 OK\r\nContent-Length: 104857600\r\n\r\n");
      // 100 MiB offered at once; what the kernel takes is what the client read
      const more = (): void => {
        while (srv.written[0] < 100 * 1024 * 1024) {
          if (!s.write(block)) return void s.once("drain", more);
        }
      };
      more();
    });
    const client = new Http1Client();
    try {
      const res = await client.request(`http://127.0.0.2:${srv.port}/big`);
      assert.equal(res.head.bodyLength, 104857600);
      await new Promise((r) => setTimeout(r, 300));
      const unread = srv.written[0];
      // 64 KiB held by the client, the rest in the two sockets' kernel buffers
      assert.ok(unread < 32 * 1024 * 1024, `the server flushed ${unread} bytes`);
      let read = 0;
      for (let i = 0; i < 10; i++) read += (await res.body.read())!.byteLength;
      assert.ok(read > 0 && read <= 10 * 64 * 1024);
      res.body.cancel();
      assert.deepEqual(client.connections, { idle: 0, busy: 0 });
    } finally {
      await client.close();
      await srv.close();
    }
  });

  it("keeps a connection for the next request, and sends a GET again when the server dropped it", async () => {
    const srv = await rawServer((s, _head, n) => {
      // every connection answers one request, then drops the next one without a word
      if (n === 0) s.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
      else s.destroy();
    });
    const client = new Http1Client();
    const http = collectorFetch();
    try {
      const url = `http://127.0.0.2:${srv.port}/q`;
      const read = async (): Promise<string> => {
        const res = await client.request(url);
        let text = "";
        for (let p = await res.body.read(); p !== null; p = await res.body.read()) {
          text += Buffer.from(p).toString();
        }
        return text;
      };
      assert.equal(await read(), "{}");
      assert.deepEqual(client.connections, { idle: 1, busy: 0 });
      // the kept connection is dropped under the second GET: sent again on a new one
      assert.equal(await read(), "{}");
      assert.equal(srv.connections, 2);
      assert.equal(srv.heads.length, 3);
      // a POST is not sent twice
      await assert.rejects(client.request(url, { method: "POST", body: "{}" }), {
        message: "connection closed before an answer",
      });
      assert.equal(srv.heads.length, 4);
      assert.match(
        srv.heads[3],
        /^POST \/q HTTP\/1\.1\r\nhost: 127\.0\.0\.2:\d+\r\naccept: \*\/\*\r\ncontent-length: 2$/,
      );
    } finally {
      await client.close();
      await http.close();
      await srv.close();
    }
  });

  it("keeps at most maxIdle idle connections, closing the one idle longest", async () => {
    const servers = await Promise.all(
      [0, 1, 2].map(() =>
        rawServer((s) => s.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"))
      ),
    );
    const client = new Http1Client({ maxIdle: 2 });
    try {
      for (const srv of servers) {
        const res = await client.request(`http://127.0.0.2:${srv.port}/q`);
        assert.deepEqual(Buffer.from((await res.body.read())!).toString(), "{}");
        assert.equal(await res.body.read(), null);
      }
      assert.deepEqual(client.connections, { idle: 2, busy: 0 });
      for (let i = 0; i < 100 && servers[0].closed === 0; i++) {
        await new Promise((r) => setTimeout(r, 5));
      }
      assert.deepEqual(servers.map((s) => s.closed), [1, 0, 0]);
    } finally {
      await client.close();
      for (const srv of servers) await srv.close();
    }
    assert.deepEqual(client.connections, { idle: 0, busy: 0 });
  });

  it("fails at the caller's deadline and closes the connection", async () => {
    const srv = await rawServer((s) =>
      s.write('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{"a"')
    );
    const http = collectorFetch();
    try {
      const url = `http://127.0.0.2:${srv.port}/slow`;
      await assert.rejects(
        fetchCapped(url, { ...base, timeoutSeconds: 0.2, signal: signal(), fetch: http.fetch }),
        { message: `request to ${url} failed: timed out after 0.2s` },
      );
    } finally {
      await http.close();
      await srv.close();
    }
  });

  it("speaks TLS, verifying the server against the roots it is given", async () => {
    const srv = await rawServer(
      (s) => s.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"),
      true,
    );
    const url = `https://127.0.0.2:${srv.port}/tls`;
    const pki = makeTestPki();
    // the test certificate names 127.0.0.1: the name is given as the server name
    const trusting = new Http1Client({ tls: { ca: pki.server.cert, servername: "localhost" } });
    const plain = collectorFetch();
    try {
      const res = await trusting.request(url);
      assert.equal(res.head.status, 200);
      assert.deepEqual(Buffer.from((await res.body.read())!).toString(), "{}");
      // the runtime's roots do not know the test CA
      await assert.rejects(
        fetchCapped(url, { ...base, signal: signal(), fetch: plain.fetch }),
        (e) => {
          assert.match(
            (e as Error).message,
            new RegExp(`^request to ${url} failed: .*(certificate|cert)`, "i"),
          );
          return true;
        },
      );
    } finally {
      await trusting.close();
      await plain.close();
      await srv.close();
    }
  });
});
