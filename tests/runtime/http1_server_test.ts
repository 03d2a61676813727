import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import * as tls from "node:tls";
import type { AddressInfo } from "node:net";
import { serveHttp1 } from "../../src/runtime/http1_server.ts";
import type { FetchApp, PlainRequest, PlainResponse, ServeEnv } from "../../src/runtime/serve.ts";
import { makeTestPki, type TestPki } from "../fakes/auth_api.ts";

/**
 * fastFetch answers GET /fast/*; fetch answers everything else (and throws on /throw). Bodies
 * are taken on POST and PUT of a few paths (up to 64 bytes); /cert-only reads its body only
 * for a client with a certificate (401 without reading it otherwise).
 */
const app: FetchApp = {
  bodyLimit(method: string, target: string): number {
    const path = target.split("?")[0];
    const takes = ["/p", "/e", "/slow", "/created", "/cert-only"].includes(path);
    return takes && (method === "POST" || method === "PUT") ? 64 : 0;
  },
  fastFetch(request: PlainRequest): PlainResponse | null {
    if (!request.url.startsWith("/fast/")) return null;
    if (request.url.startsWith("/fast/status/")) {
      // a body where the status allows none: the server drops it
      return { status: Number(request.url.slice(13)), headers: {}, body: "not sent" };
    }
    const c = request.connection;
    return {
      status: 200,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        url: request.url,
        user: request.headers["x-remote-user"] ?? null,
        cn: c.peerCertificate?.commonName ?? null,
        authorized: c.peerCertificate?.authorized ?? null,
        raw: c.rawHeaders,
        encrypted: c.encrypted,
      }),
    };
  },
  async fetch(request: Request, env: ServeEnv): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/throw") throw new Error("boom");
    if (url.pathname === "/cert-only" && env.connection.peerCertificate === null) {
      return new Response("no certificate\n", { status: 401 });
    }
    const body = await request.text();
    await new Promise((r) => setTimeout(r, 5)); // answered later than the next request came
    return new Response(
      `${request.method} ${url.host}${url.pathname}${url.search} ${body} ${
        env.connection.peerCertificate?.commonName ?? "-"
      }`,
      {
        status: url.pathname === "/created" ? 201 : 200,
        headers: { "x-a": "1", "content-type": "text/plain; charset=utf-8" },
      },
    );
  },
};

interface Started {
  server: tls.Server;
  port: number;
}

function start(
  pki: TestPki,
  options: { idleMs?: number; now?: () => number } = {},
): Promise<Started> {
  const server = tls.createServer({
    allowHalfOpen: true,
    cert: pki.server.cert,
    key: pki.server.key,
    ca: pki.requestHeaderCa.cert,
    requestCert: true,
    rejectUnauthorized: false,
  }, (socket) => {
    socket.on("error", () => {});
    const leaf = socket.getPeerCertificate(true) as { subject?: { CN?: string }; raw?: Buffer };
    serveHttp1(socket, app, {
      peerCertificate: leaf?.raw
        ? {
          authorized: socket.authorized,
          authorizationError: null,
          commonName: leaf.subject?.CN ?? "",
          organizations: [],
          chain: [],
          notAfter: 0,
        }
        : null,
      ...options,
    });
  });
  return new Promise((resolve) =>
    server.listen(
      0,
      "127.0.0.1",
      () => resolve({ server, port: (server.address() as AddressInfo).port }),
    )
  );
}

function stop(s: Started): Promise<void> {
  return new Promise((resolve) => s.server.close(() => resolve()));
}

/**
 * Sends `input` on one TLS connection (in pieces when given) and resolves with everything the
 * server wrote until it closed the connection, and whether it did.
 */
function exchange(
  port: number,
  input: string | string[],
  options: {
    pki: TestPki;
    withCert?: boolean;
    waitMs?: number;
    beforePiece?: (i: number) => void;
    /** End the client's side after the last piece (a half-close). */
    end?: boolean;
  },
): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      host: "127.0.0.1",
      port,
      ca: options.pki.server.cert,
      servername: "localhost",
      ...(options.withCert
        ? { cert: options.pki.frontProxy.cert, key: options.pki.frontProxy.key }
        : {}),
    });
    let text = "";
    let done = false;
    const finish = (closed: boolean): void => {
      if (done) return;
      done = true;
      socket.destroy();
      resolve({ text, closed });
    };
    socket.on("data", (d: Buffer) => text += d.toString("latin1"));
    socket.on("close", () => finish(true));
    socket.on("error", reject);
    socket.on("secureConnect", async () => {
      for (const [i, piece] of (Array.isArray(input) ? input : [input]).entries()) {
        options.beforePiece?.(i);
        socket.write(piece, "latin1");
        await new Promise((r) => setTimeout(r, 20));
      }
      if (options.end) socket.end();
      if (options.waitMs !== undefined) setTimeout(() => finish(false), options.waitMs);
    });
  });
}

/** The responses in `text`: status line, headers (date dropped) and body each. */
function responses(
  text: string,
): { status: string; headers: Record<string, string>; body: string }[] {
  const out = [];
  let rest = text;
  while (rest.length > 0) {
    const end = rest.indexOf("\r\n\r\n");
    const [status, ...lines] = rest.slice(0, end).split("\r\n");
    const headers: Record<string, string> = {};
    for (const l of lines) {
      const i = l.indexOf(": ");
      headers[l.slice(0, i)] = l.slice(i + 2);
    }
    const length = Number(headers["content-length"] ?? 0);
    const noBody = status.startsWith("HTTP/1.1 1") || headers["x-head"] === "1";
    const body = noBody ? "" : rest.slice(end + 4, end + 4 + length);
    rest = rest.slice(end + 4 + body.length);
    assert.match(headers.date ?? "", status.startsWith("HTTP/1.1 1") ? /^$/ : / GMT$/);
    delete headers.date;
    out.push({ status, headers, body });
  }
  return out;
}

/** The fast path's answer of `body`. */
function ok(body: string, more: Record<string, string> = {}) {
  return {
    status: "HTTP/1.1 200 OK",
    headers: {
      "content-type": "application/json",
      "content-length": String(new TextEncoder().encode(body).length),
      ...more,
    },
    body,
  };
}

describe("serveHttp1", () => {
  let pki: TestPki;
  let s: Started;
  before(async () => {
    pki = makeTestPki();
    s = await start(pki);
  });
  after(() => stop(s));

  it("answers pipelined requests in order, fast and slow ones alike, and closes when asked", async () => {
    const { text, closed } = await exchange(
      s.port,
      "GET /fast/a?x=1 HTTP/1.1\r\nHost: h\r\nX-Remote-User: bob\r\nX-Remote-Group: g1\r\n" +
        "X-Remote-Group: g2\r\n\r\n" +
        "POST /created?y=2 HTTP/1.1\r\nHost: adapter:8443\r\nContent-Length: 5\r\n\r\nhello" +
        "GET /fast/b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n" +
        "GET /never HTTP/1.1\r\nHost: h\r\n\r\n",
      { pki, withCert: true },
    );
    assert.equal(closed, true);
    assert.deepEqual(responses(text), [
      ok(JSON.stringify({
        url: "/fast/a?x=1",
        user: "bob",
        cn: "front-proxy-client",
        authorized: true,
        raw: ["Host", "h", "X-Remote-User", "bob", "X-Remote-Group", "g1", "X-Remote-Group", "g2"],
        encrypted: true,
      })),
      {
        status: "HTTP/1.1 201 Created",
        headers: {
          "content-type": "text/plain; charset=utf-8",
          "x-a": "1",
          "content-length": "54",
        },
        body: "POST adapter:8443/created?y=2 hello front-proxy-client",
      },
      ok(
        JSON.stringify({
          url: "/fast/b",
          user: null,
          cn: "front-proxy-client",
          authorized: true,
          raw: ["Host", "h", "Connection", "close"],
          encrypted: true,
        }),
        { connection: "close" },
      ),
    ]);
  });

  it("reads requests that arrive in pieces, and a chunked body", async () => {
    const { text } = await exchange(s.port, [
      "POST /p HTTP/1.1\r\nHost: localhost\r\nTransfer-",
      "Encoding: chunked\r\n\r\n3\r\nab",
      "c\r\n0\r\n\r\nGET /fast/c HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
    ], { pki });
    const [a, b] = responses(text);
    assert.deepEqual([a.status, a.body, b.status], [
      "HTTP/1.1 200 OK",
      "POST localhost/p abc -",
      "HTTP/1.1 200 OK",
    ]);
    assert.equal(JSON.parse(b.body).cn, null);
  });

  it("answers HEAD with the length and no body, and HTTP/1.0 with keep-alive when asked", async () => {
    const { text } = await exchange(
      s.port,
      "HEAD /h HTTP/1.0\r\nConnection: keep-alive\r\nX-Head: 1\r\n\r\nGET /fast/d HTTP/1.0\r\n\r\n",
      { pki },
    );
    // the HEAD answer's body is not there: the next answer follows its head at once
    const end = text.indexOf("\r\n\r\n");
    assert.match(text.slice(0, end), /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(text.slice(0, end), /\r\ncontent-length: 19\r\n/);
    assert.match(text.slice(0, end), /\r\nconnection: keep-alive$/);
    assert.match(
      text.slice(end + 4),
      /^HTTP\/1\.1 200 OK\r\n[^]*connection: close\r\n\r\n\{"url":"\/fast\/d"/,
    );
  });

  it("sends 100 Continue before the body of a request that expects it", async () => {
    const { text } = await exchange(s.port, [
      "POST /e HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: 2\r\nConnection: close\r\n\r\n",
      "ok",
    ], { pki });
    assert.deepEqual(responses(text).map((r) => [r.status, r.body]), [
      ["HTTP/1.1 100 Continue", ""],
      ["HTTP/1.1 200 OK", "POST localhost/e ok -"],
    ]);
  });

  it("answers a malformed request with 400 and closes, answering nothing after it", async () => {
    const { text, closed } = await exchange(
      s.port,
      "GET /fast/e HTTP/1.1\r\nHost: h\r\n\r\nGET / HTTP/1.1\r\nBad Header: x\r\n\r\nGET /fast/f HTTP/1.1\r\nHost: h\r\n\r\n",
      { pki },
    );
    assert.equal(closed, true);
    assert.deepEqual(responses(text).map((r) => [r.status, r.headers, r.body]), [
      Object.values(ok(JSON.stringify({
        url: "/fast/e",
        user: null,
        cn: null,
        authorized: null,
        raw: ["Host", "h"],
        encrypted: true,
      }))),
      [
        "HTTP/1.1 400 Bad Request",
        {
          "content-type": "text/plain; charset=utf-8",
          "content-length": "22",
          connection: "close",
        },
        "malformed header name\n",
      ],
    ]);
  });

  it("answers what a half-closed client sent, the slow answer too, then closes", async () => {
    const { text, closed } = await exchange(
      s.port,
      "GET /fast/i HTTP/1.1\r\nHost: h\r\n\r\nPOST /slow HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\n\r\nx",
      { pki, end: true },
    );
    assert.equal(closed, true);
    assert.deepEqual(responses(text).map((r) => [r.status, r.body.slice(0, 14)]), [
      ["HTTP/1.1 200 OK", '{"url":"/fast/'],
      ["HTTP/1.1 200 OK", "POST localhost"],
    ]);
  });

  it("answers 400 to a Host that is no host, and 500 when the app throws", async () => {
    const bad = await exchange(s.port, "GET /x HTTP/1.1\r\nHost: a/b\r\n\r\n", { pki });
    assert.deepEqual(responses(bad.text).map((r) => [r.status, r.body]), [
      ["HTTP/1.1 400 Bad Request", "malformed host\n"],
    ]);
    const thrown = await exchange(
      s.port,
      "GET /throw HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
      {
        pki,
      },
    );
    assert.deepEqual(responses(thrown.text).map((r) => [r.status, r.body]), [
      ["HTTP/1.1 500 Internal Server Error", "internal error: boom\n"],
    ]);
  });

  it("keeps a connection open between requests, and closes it after idleMs", async () => {
    const idle = await start(pki, { idleMs: 150 });
    try {
      const open = await exchange(idle.port, "GET /fast/g HTTP/1.1\r\nHost: h\r\n\r\n", {
        pki,
        waitMs: 60,
      });
      assert.equal(open.closed, false);
      assert.equal(responses(open.text).length, 1);
      const t0 = Date.now();
      const closed = await exchange(idle.port, "GET /fast/g HTTP/1.1\r\nHost: h\r\n\r\n", { pki });
      assert.equal(closed.closed, true);
      assert.ok(Date.now() - t0 >= 150, `closed after ${Date.now() - t0} ms`);
    } finally {
      await stop(idle);
    }
  });

  it("answers 408 to a head that takes longer than 60 s to arrive", async () => {
    let clock = 1_000_000;
    const slow = await start(pki, { now: () => clock });
    try {
      const { text, closed } = await exchange(
        slow.port,
        ["GET /fast/h HTTP/1.1\r\n", "X-A: 1\r\n", "X-B: 2\r\n"],
        // the first piece starts the head at 1,000,000; the second comes 60,001 ms later
        { pki, beforePiece: (i) => i === 1 && (clock += 60_001) },
      );
      assert.equal(closed, true);
      assert.deepEqual(responses(text).map((r) => [r.status, r.body]), [
        ["HTTP/1.1 408 Request Timeout", "request head too slow\n"],
      ]);
    } finally {
      await stop(slow);
    }
  });
});

/**
 * The rows of issue 46: what a client without a certificate sent, and how it must be answered.
 * Each exchange waits at most 2 s for the answer: the server before it answered only once the
 * body or the head deadline came, so those rows end with the connection still open.
 */
describe("serveHttp1 before authentication", () => {
  let pki: TestPki;
  let s: Started;
  before(async () => {
    pki = makeTestPki();
    s = await start(pki);
  });
  after(() => stop(s));

  /** One answer and the connection closed after it, for what a client sent. */
  async function refusedWith(input: string | string[]): Promise<[string, string]> {
    const { text, closed } = await exchange(s.port, input, { pki, waitMs: 2_000 });
    assert.equal(closed, true, `still open after ${JSON.stringify(text)}`);
    const answers = responses(text);
    assert.equal(answers.length, 1, text);
    assert.equal(answers[0].headers.connection, "close");
    return [answers[0].status, answers[0].body];
  }

  it("refuses a body announced on a route that takes none, at its head, whatever the method", async () => {
    for (const method of ["POST", "GET", "PUT"]) {
      // the head alone: not a byte of the 32 MiB is sent
      assert.deepEqual(
        await refusedWith(
          `${method} /apis/custom.metrics.k8s.io/v1beta2/x HTTP/1.1\r\nHost: h\r\n` +
            `Content-Length: ${32 << 20}\r\n\r\n`,
        ),
        ["HTTP/1.1 413 Payload Too Large", "this request takes no body\n"],
      );
    }
    assert.deepEqual(
      await refusedWith(`POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 65\r\n\r\n`),
      ["HTTP/1.1 413 Payload Too Large", "request body over 64 bytes\n"],
    );
    assert.deepEqual(
      await refusedWith(
        "GET /fast/y HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n",
      ),
      ["HTTP/1.1 413 Payload Too Large", "this request takes no body\n"],
    );
  });

  /**
   * Streams a 64 MiB body after a head the server refuses: what came back, how much was written
   * before the connection closed, and whether it closed. `polite`: stop writing once an answer
   * comes (as Go's transport does); else write on regardless.
   */
  function streamRefused(polite: boolean): Promise<{ text: string; written: number }> {
    return new Promise((resolve, reject) => {
      const socket = tls.connect({
        host: "127.0.0.1",
        port: s.port,
        ca: pki.server.cert,
        servername: "localhost",
      });
      let text = "";
      let written = 0;
      let open = true;
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`still open after ${written} bytes`));
      }, 10_000);
      socket.on("data", (d: Buffer) => text += d.toString("latin1"));
      socket.on("error", () => {}); // the reset of a destroyed connection
      socket.on("close", () => {
        open = false;
        clearTimeout(timer);
        resolve({ text, written });
      });
      socket.on("secureConnect", () => {
        socket.write(
          `POST /apis/x HTTP/1.1\r\nHost: h\r\nContent-Length: ${64 << 20}\r\n\r\n`,
        );
        const piece = Buffer.alloc(16 * 1024, 0x61);
        // a piece a turn of the event loop, so that an answer is seen as it comes
        const more = (): void => {
          if (!open || written >= 64 << 20) return;
          if (polite && text !== "") return void socket.end();
          written += piece.byteLength;
          if (socket.write(piece)) setTimeout(more, 0);
          else socket.once("drain", more);
        };
        more();
      });
    });
  }

  it("answers a client that streams a refused body at its head, and closes", async () => {
    const got = await streamRefused(true);
    assert.match(
      got.text,
      /^HTTP\/1\.1 413 Payload Too Large\r\n[^]*this request takes no body\n$/,
    );
  });

  it("drops a client that streams on after the answer within a second, reading none of it", async () => {
    const got = await streamRefused(false);
    // what the sockets buffer on both sides: far from 64 MiB
    assert.ok(got.written < 16 << 20, `${got.written} bytes written before the close`);
  });

  it("refuses a chunked body past the route's cap while it arrives", async () => {
    assert.deepEqual(
      await refusedWith([
        "POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n",
        `40\r\n${"a".repeat(64)}\r\n1\r\n`,
      ]),
      ["HTTP/1.1 413 Payload Too Large", "request body too large\n"],
    );
  });

  it("answers a route that refuses the client before reading its body, and closes", async () => {
    // the body never comes: the answer does not wait for it
    assert.deepEqual(
      await refusedWith("POST /cert-only HTTP/1.1\r\nHost: h\r\nContent-Length: 60\r\n\r\n"),
      ["HTTP/1.1 401 Unauthorized", "no certificate\n"],
    );
    const { text } = await exchange(
      s.port,
      "POST /cert-only HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
      { pki, withCert: true },
    );
    assert.deepEqual(responses(text).map((r) => [r.status, r.body]), [
      ["HTTP/1.1 200 OK", "POST h/cert-only ok front-proxy-client"],
    ]);
  });

  for (
    const [name, input, body] of [
      ["GET /healthz without Host", "GET /healthz HTTP/1.1\r\n\r\n", "missing host\n"],
      [
        "two Host fields",
        "GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        "more than one host\n",
      ],
      [
        "a value padded with VT",
        "GET /fast/a HTTP/1.1\r\nHost: a\r\nX-Remote-User: \x0badmin\r\n\r\n",
        "malformed value of header X-Remote-User\n",
      ],
      [
        "a value padded with FF",
        "GET /fast/a HTTP/1.1\r\nHost: a\r\nX-Remote-User: admin\x0c\r\n\r\n",
        "malformed value of header X-Remote-User\n",
      ],
      [
        "HTTP/1.0 with Transfer-Encoding: chunked",
        "POST /p HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "transfer-encoding in an HTTP/1.0 request\n",
      ],
      [
        "Transfer-Encoding: chunked, gzip",
        "POST /p HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
        'chunked is not the final transfer coding in "chunked, gzip"\n',
      ],
      ["a request line ended by a bare LF", "GET /healthz HTTP/1.1\n", "bare LF\n"],
    ] as const
  ) {
    it(`answers ${name} with 400 and closes`, async () => {
      assert.deepEqual(await refusedWith(input), ["HTTP/1.1 400 Bad Request", body]);
    });
  }

  it("keeps \\xa0 around a value as part of it: the user is not admin", async () => {
    const { text } = await exchange(
      s.port,
      "GET /fast/a HTTP/1.1\r\nHost: a\r\nX-Remote-User: \xa0admin\r\nConnection: close\r\n\r\n",
      { pki },
    );
    const [answer] = responses(text);
    assert.equal(answer.status, "HTTP/1.1 200 OK");
    // the JSON body is UTF-8: the latin1 byte \xa0 came in as U+00A0
    assert.equal(JSON.parse(Buffer.from(answer.body, "latin1").toString("utf8")).user, "\xa0admin");
  });

  it("answers an upgrade request as any other, never with 101, and closes after it", async () => {
    const { text, closed } = await exchange(
      s.port,
      "GET /fast/u HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n" +
        "GET /fast/never HTTP/1.1\r\nHost: h\r\n\r\n",
      { pki, waitMs: 2_000 },
    );
    assert.equal(closed, true);
    const answers = responses(text);
    assert.deepEqual(answers.map((r) => [r.status, r.headers.connection]), [
      ["HTTP/1.1 200 OK", "close"],
    ]);
  });

  it("sends no body bytes after a 204 or a 304, even when the app gives one", async () => {
    const { text } = await exchange(
      s.port,
      "GET /fast/status/204 HTTP/1.1\r\nHost: h\r\n\r\n" +
        "GET /fast/status/304 HTTP/1.1\r\nHost: h\r\n\r\n" +
        "GET /fast/z HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
      { pki },
    );
    assert.doesNotMatch(text, /not sent/);
    assert.match(
      text,
      /^HTTP\/1\.1 204 No Content\r\n[^]*?\r\n\r\nHTTP\/1\.1 304 Not Modified\r\n[^]*?\r\n\r\nHTTP\/1\.1 200 OK\r\n/,
    );
  });
});
