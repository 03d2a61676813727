import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  type Http1Error,
  type Http1Limits,
  Http1Parser,
  type Http1Request,
} from "../../src/runtime/http1_parser.ts";

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const latin1 = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));

/** A request as read whole: its head and its body's text (null when it has none). */
type Read = Omit<Http1Request, "headers"> & {
  headers: Record<string, unknown>;
  body: string | null;
};

/**
 * Every result the parser gives for `input` pushed in pieces of `step` bytes: requests with
 * their bodies read whole (capped at `maxBody`), or the error.
 */
function parseAll(
  input: string | Uint8Array,
  step = input.length,
  limits: Http1Limits = {},
  maxBody = 1 << 20,
): (Read | Http1Error)[] {
  const parser = new Http1Parser(limits);
  const bytes = typeof input === "string" ? latin1(input) : input;
  const out: (Read | Http1Error)[] = [];
  let current: Read | null = null;
  let body = "";
  for (let i = 0; i < bytes.length; i += step) {
    parser.push(bytes.subarray(i, Math.min(bytes.length, i + step)));
    for (;;) {
      if (current !== null) {
        const piece = parser.body(maxBody);
        if (piece === null) break;
        if (piece === "end") {
          out.push({ ...current, body });
          current = null;
          continue;
        }
        if ("status" in piece) return [...out, piece];
        body += String.fromCharCode(...piece);
        continue;
      }
      const r = parser.next();
      if (r === null) break;
      if ("status" in r) return [...out, r];
      const read = { ...r, headers: { ...r.headers }, body: null };
      if (r.bodyLength === 0) out.push(read);
      else {
        current = read;
        body = "";
      }
    }
  }
  return out;
}

const GET = "GET /apis/custom.metrics.k8s.io/v1beta2?x=1 HTTP/1.1\r\n" +
  "Host: adapter.kube-system.svc:443\r\n" +
  "X-Remote-User: system:serviceaccount:kube-system:horizontal-pod-autoscaler\r\n" +
  "X-Remote-Group: system:serviceaccounts\r\n" +
  "x-remote-group:  system:authenticated \r\n" +
  "Accept: application/json\r\n\r\n";

const getParsed = {
  method: "GET",
  target: "/apis/custom.metrics.k8s.io/v1beta2?x=1",
  minor: 1,
  rawHeaders: [
    "Host",
    "adapter.kube-system.svc:443",
    "X-Remote-User",
    "system:serviceaccount:kube-system:horizontal-pod-autoscaler",
    "X-Remote-Group",
    "system:serviceaccounts",
    "x-remote-group",
    "system:authenticated",
    "Accept",
    "application/json",
  ],
  headers: {
    host: "adapter.kube-system.svc:443",
    "x-remote-user": "system:serviceaccount:kube-system:horizontal-pod-autoscaler",
    "x-remote-group": "system:serviceaccounts, system:authenticated",
    accept: "application/json",
  },
  keepAlive: true,
  bodyLength: 0,
  expectContinue: false,
  upgrade: false,
  body: null,
};

describe("Http1Parser", () => {
  it("reads a request's line and headers: raw as sent, joined by lower-case name", () => {
    assert.deepEqual(parseAll(GET), [getParsed]);
  });

  it("reads the same request from one byte at a time", () => {
    assert.deepEqual(parseAll(GET, 1), [getParsed]);
  });

  it("reads pipelined requests in order, with their bodies", () => {
    const input = GET +
      "POST /shard/samples HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello" +
      "GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    for (const step of [input.length, 7, 1]) {
      const out = parseAll(input, step) as Read[];
      assert.deepEqual(
        out.map((r) => [r.method, r.target, r.body, r.keepAlive]),
        [
          ["GET", "/apis/custom.metrics.k8s.io/v1beta2?x=1", null, true],
          ["POST", "/shard/samples", "hello", true],
          ["GET", "/healthz", null, false],
        ],
        `pushed ${step} bytes at a time`,
      );
    }
  });

  it("keeps the first value of the headers Node keeps once, and set-cookie as a list", () => {
    const [r] = parseAll(
      "GET / HTTP/1.1\r\nHost: a\r\nUser-Agent: a\r\nuser-agent: b\r\nSet-Cookie: x=1\r\nSet-Cookie: y=2\r\n\r\n",
    ) as Read[];
    assert.deepEqual({ ...r.headers }, {
      host: "a",
      "user-agent": "a",
      "set-cookie": ["x=1", "y=2"],
    });
  });

  it("keeps headers called __proto__ and constructor as headers", () => {
    const parser = new Http1Parser();
    parser.push(
      enc("GET / HTTP/1.1\r\nHost: a\r\n__proto__: a\r\nconstructor: b\r\nconstructor: c\r\n\r\n"),
    );
    const r = parser.next() as Http1Request;
    assert.equal(Object.getPrototypeOf(r.headers), null);
    assert.deepEqual(Object.entries(r.headers), [
      ["host", "a"],
      ["__proto__", "a"],
      ["constructor", "b, c"],
    ]);
  });

  it("decodes a chunked body and drops its trailers", () => {
    const input = "POST /p HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" +
      '5;ext=1;q="a \\"b\\""\r\nhello\r\n1a\r\n' + "abcdefghijklmnopqrstuvwxyz" +
      "\r\n0\r\nX-Sum: 1\r\n\r\n" + "GET /next HTTP/1.1\r\nHost: a\r\n\r\n";
    for (const step of [input.length, 3, 1]) {
      const out = parseAll(input, step) as Read[];
      assert.deepEqual(out.map((r) => [r.target, r.body]), [
        ["/p", "helloabcdefghijklmnopqrstuvwxyz"],
        ["/next", null],
      ]);
    }
  });

  it("keeps an HTTP/1.0 connection open only when the client asks", () => {
    const out = parseAll(
      "GET /a HTTP/1.0\r\n\r\nGET /b HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n" +
        "GET /c HTTP/1.1\r\nHost: a\r\nConnection: TE, close\r\n\r\n",
    ) as Read[];
    assert.deepEqual(out.map((r) => [r.minor, r.keepAlive]), [[0, false], [0, true], [1, false]]);
  });

  it("tells that a request expects 100-continue, and reads its body only when asked", () => {
    const parser = new Http1Parser();
    parser.push(
      enc("PUT /x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n"),
    );
    const r = parser.next() as Http1Request;
    assert.deepEqual([r.expectContinue, r.bodyLength], [true, 3]);
    assert.equal(parser.body(10), null);
    parser.push(enc("abc"));
    assert.deepEqual(parser.body(10), enc("abc"));
    assert.equal(parser.body(10), "end");
    assert.equal(parser.next(), null);
  });

  it("skips empty lines before a request line", () => {
    const out = parseAll("\r\n\r\nGET /a HTTP/1.1\r\nHost: a\r\n\r\n") as Read[];
    assert.deepEqual(out.map((r) => r.target), ["/a"]);
  });

  it("marks CONNECT and Upgrade with Connection: upgrade as upgrades", () => {
    const out = parseAll(
      "GET /a HTTP/1.1\r\nHost: a\r\nUpgrade: h2c\r\n\r\n" +
        "GET /b HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n\r\n",
    ) as Read[];
    assert.deepEqual(out.map((r) => [r.target, r.upgrade]), [["/a", false], ["/b", true]]);
  });

  it("keeps a value's bytes but SP and HTAB around it: obs-text is part of it", () => {
    const [r] = parseAll("GET / HTTP/1.1\r\nHost: a\r\nX-A: \t\xa0b c\xa0 \t\r\n\r\n") as Read[];
    assert.deepEqual(r.rawHeaders, ["Host", "a", "X-A", "\xa0b c\xa0"]);
  });

  it("refuses a request line ended by a bare LF as soon as the LF arrives", () => {
    const parser = new Http1Parser();
    parser.push(enc("GET /healthz HTTP/1.1\n"));
    assert.deepEqual(parser.next(), { status: 400, reason: "bare LF" });
  });

  it("hands out body pieces that own their bytes, never views of what was pushed", () => {
    const parser = new Http1Parser();
    const wire = enc("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\n\r\nabcdefGET");
    parser.push(wire);
    assert.equal((parser.next() as Http1Request).bodyLength, 6);
    const piece = parser.body(10) as Uint8Array;
    assert.deepEqual(piece, enc("abcdef"));
    // a view would keep the whole pushed chunk alive (and its neighbours' bytes)
    assert.deepEqual([piece.byteOffset, piece.buffer.byteLength], [0, 6]);
  });

  it("holds a million one-byte pushes of a body as the bytes read so far, not as chunks", () => {
    const parser = new Http1Parser();
    parser.push(enc("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"));
    assert.equal((parser.next() as Http1Request).bodyLength, -1);
    const chunk = enc("1\r\nx\r\n");
    let read = 0;
    for (let i = 0; i < 6 * 166_667; i++) {
      parser.push(chunk.subarray(i % chunk.length, i % chunk.length + 1));
      for (let piece = parser.body(1 << 30); piece !== null; piece = parser.body(1 << 30)) {
        assert.ok(piece instanceof Uint8Array, `piece ${i}`);
        read += piece.byteLength;
      }
      if (parser.heldBytes !== 0) assert.fail(`${parser.heldBytes} bytes held after push ${i}`);
    }
    assert.equal(read, 166_667);
  });

  const H = "Host: a\r\n";
  for (
    const [name, input, status, reason] of [
      ["a bare LF", `GET / HTTP/1.1\n${H}\r\n`, 400, "bare LF"],
      ["a bare LF ending the head", `GET / HTTP/1.1\r\n${H}\n`, 400, "bare LF"],
      ["a bare CR", `GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n`, 400, "bare CR"],
      ["a NUL", `GET / HTTP/1.1\r\nHost: a\0\r\n\r\n`, 400, "NUL"],
      ["no Host in HTTP/1.1", "GET /healthz HTTP/1.1\r\n\r\n", 400, "missing host"],
      ["two Host fields", `GET /healthz HTTP/1.1\r\n${H}${H}\r\n`, 400, "more than one host"],
      ["two Host fields in HTTP/1.0", `GET / HTTP/1.0\r\n${H}${H}\r\n`, 400, "more than one host"],
      ["a Host that is no host", `GET / HTTP/1.1\r\nHost: a/b\r\n\r\n`, 400, "malformed host"],
      [
        "a Host padded with obs-text",
        `GET / HTTP/1.1\r\nHost: \xa0a\r\n\r\n`,
        400,
        "malformed host",
      ],
      [
        "a value padded with VT",
        `GET / HTTP/1.1\r\n${H}X: \x0bv\r\n\r\n`,
        400,
        "malformed value of header X",
      ],
      [
        "a value padded with FF",
        `GET / HTTP/1.1\r\n${H}X: v\x0c\r\n\r\n`,
        400,
        "malformed value of header X",
      ],
      [
        "a value with DEL",
        `GET / HTTP/1.1\r\n${H}X: v\x7f\r\n\r\n`,
        400,
        "malformed value of header X",
      ],
      [
        "a folded header line",
        `GET / HTTP/1.1\r\n${H}A: b\r\n c\r\n\r\n`,
        400,
        "malformed header line",
      ],
      ["space before a colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400, "malformed header name"],
      [
        "a line without a colon",
        `GET / HTTP/1.1\r\n${H}Host\r\n\r\n`,
        400,
        "malformed header line",
      ],
      [
        "two spaces in the request line",
        `GET  / HTTP/1.1\r\n${H}\r\n`,
        400,
        "malformed request line",
      ],
      ["a request line of two words", "GET /\r\n\r\n", 400, "malformed request line"],
      ["HTTP/2.0", `GET / HTTP/2.0\r\n${H}\r\n`, 400, 'unsupported version "HTTP/2.0"'],
      ["a method that is no token", `G(T / HTTP/1.1\r\n${H}\r\n`, 400, "malformed method"],
      [
        "a target with a control byte",
        `GET /\x7f HTTP/1.1\r\n${H}\r\n`,
        400,
        "malformed request target",
      ],
      [
        "a signed content-length",
        `POST / HTTP/1.1\r\n${H}Content-Length: +3\r\n\r\nabc`,
        400,
        "malformed content-length",
      ],
      [
        "a listed content-length",
        `POST / HTTP/1.1\r\n${H}Content-Length: 3, 3\r\n\r\nabc`,
        400,
        "malformed content-length",
      ],
      [
        "an empty content-length",
        `POST / HTTP/1.1\r\n${H}Content-Length:\r\n\r\n`,
        400,
        "malformed content-length",
      ],
      [
        "two content-lengths, even equal",
        `POST / HTTP/1.1\r\n${H}Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc`,
        400,
        "more than one content-length",
      ],
      [
        "content-length beside transfer-encoding (CL.TE)",
        `POST / HTTP/1.1\r\n${H}Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
        400,
        "both content-length and transfer-encoding",
      ],
      [
        "transfer-encoding beside content-length (TE.CL)",
        `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n`,
        400,
        "both content-length and transfer-encoding",
      ],
      [
        "transfer-encoding in HTTP/1.0",
        "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        400,
        "transfer-encoding in an HTTP/1.0 request",
      ],
      [
        "chunked before another coding",
        `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked, gzip\r\n\r\n`,
        400,
        'chunked is not the final transfer coding in "chunked, gzip"',
      ],
      [
        "chunked and then identity in two fields (TE.TE)",
        `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n`,
        400,
        'chunked is not the final transfer coding in "chunked, identity"',
      ],
      [
        "an obfuscated chunked (TE.TE)",
        `POST / HTTP/1.1\r\n${H}Transfer-Encoding: xchunked\r\n\r\n`,
        400,
        'chunked is not the final transfer coding in "xchunked"',
      ],
      [
        "chunked twice",
        `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked, chunked\r\n\r\n`,
        400,
        'chunked is applied more than once in "chunked, chunked"',
      ],
      [
        "a coding before chunked",
        `POST / HTTP/1.1\r\n${H}Transfer-Encoding: gzip, chunked\r\n\r\n`,
        501,
        'unsupported transfer coding "gzip"',
      ],
      [
        "a chunk size that is not hex",
        `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\nzz\r\n`,
        400,
        "malformed chunk size",
      ],
      [
        "a chunk size with 0x",
        `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n0x1\r\na\r\n`,
        400,
        "malformed chunk size",
      ],
      [
        "a chunk extension that is no token",
        `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n1;a b\r\nx\r\n`,
        400,
        "malformed chunk size",
      ],
      [
        "a chunk line ended by a bare LF",
        `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n1\nx\r\n`,
        400,
        "bare LF",
      ],
      [
        "chunk data longer than its size",
        `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n`,
        400,
        "malformed chunk",
      ],
      [
        "a trailer line without a colon",
        `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n0\r\nX\r\n\r\n`,
        400,
        "malformed trailer line",
      ],
    ] as const
  ) {
    it(`refuses ${name} with ${status}, and then reads nothing more`, () => {
      const out = parseAll(input, input.length);
      assert.deepEqual(out[out.length - 1], { status, reason });
      for (const r of out.slice(0, -1)) assert.ok("method" in r);
    });
  }

  it("refuses a head over the limit with 431, whole or still arriving", () => {
    const long = `GET / HTTP/1.1\r\nHost: a\r\nX-A: ${"a".repeat(200)}\r\n\r\n`;
    assert.deepEqual(parseAll(long, long.length, { maxHeadBytes: 100 }), [
      { status: 431, reason: "request head too large" },
    ]);
    assert.deepEqual(parseAll(long.slice(0, 150), 10, { maxHeadBytes: 100 }), [
      { status: 431, reason: "request head too large" },
    ]);
    assert.deepEqual(parseAll("\r\n".repeat(60), 7, { maxHeadBytes: 100 }), [
      { status: 431, reason: "request head too large" },
    ]);
    assert.equal((parseAll(long, 10, { maxHeadBytes: 300 })[0] as Read).method, "GET");
  });

  it("refuses a body over the caller's cap with 413, by length or by chunks", () => {
    assert.deepEqual(
      parseAll(`POST / HTTP/1.1\r\n${H}Content-Length: 11\r\n\r\n`, 100, {}, 10),
      [{ status: 413, reason: "request body too large" }],
    );
    assert.deepEqual(
      parseAll(
        `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n6\r\n`,
        100,
        {},
        10,
      ),
      [{ status: 413, reason: "request body too large" }],
    );
  });

  it("caps a chunk line at 4096 bytes and the chunk lines' overhead as Go does", () => {
    const head = `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n`;
    assert.deepEqual(parseAll(`${head}1;a=${"b".repeat(4100)}\r\n`, 1000), [
      { status: 431, reason: "chunk line too large" },
    ]);
    // one byte of data a chunk with a 60-byte extension: 64 - 16 - 2 = 46 bytes of excess each
    const chunk = `1;e=${"v".repeat(56)}\r\nx\r\n`;
    const allowed = Math.floor(16 * 1024 / 46);
    const ok = parseAll(`${head}${chunk.repeat(allowed)}0\r\n\r\n`, 4096) as Read[];
    assert.equal(ok[0].body, "x".repeat(allowed));
    assert.deepEqual(parseAll(`${head}${chunk.repeat(allowed + 1)}0\r\n\r\n`, 4096), [
      { status: 400, reason: "too much chunk overhead for the data" },
    ]);
    // the same extensions on chunks of 64 bytes of data pay for themselves
    const big = `40;e=${"v".repeat(56)}\r\n${"y".repeat(64)}\r\n`;
    const many = parseAll(`${head}${big.repeat(1000)}0\r\n\r\n`, 4096) as Read[];
    assert.equal(many[0].body?.length, 64_000);
  });

  it("tells whether part of a request is held", () => {
    const parser = new Http1Parser();
    assert.equal(parser.pending, false);
    parser.push(enc("GET / HT"));
    assert.equal(parser.next(), null);
    assert.equal(parser.pending, true);
    parser.push(enc("TP/1.1\r\nHost: a\r\n\r\n"));
    assert.equal((parser.next() as Http1Request).target, "/");
    assert.equal(parser.pending, false);
  });
});
