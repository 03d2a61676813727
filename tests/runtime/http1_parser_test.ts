import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Http1Parser, type Http1Request } from "../../src/runtime/http1_parser.ts";

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array | null): string | null =>
  b === null ? null : new TextDecoder().decode(b);

/** Every result the parser gives for `input` pushed in pieces of `step` bytes. */
function parseAll(input: string, step = input.length, limits = {}): unknown[] {
  const parser = new Http1Parser(limits);
  const bytes = enc(input);
  const out: unknown[] = [];
  for (let i = 0; i < bytes.length; i += step) {
    parser.push(bytes.subarray(i, Math.min(bytes.length, i + step)));
    for (let r = parser.next(); r !== null; r = parser.next()) {
      out.push(
        typeof r === "string" || "status" in r
          ? r
          : { ...r, headers: { ...r.headers }, body: text(r.body) },
      );
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
      "POST /shard/samples HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello" +
      "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n";
    for (const step of [input.length, 7, 1]) {
      const out = parseAll(input, step) as Http1Request[];
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
      "GET / HTTP/1.1\r\nUser-Agent: a\r\nuser-agent: b\r\nSet-Cookie: x=1\r\nSet-Cookie: y=2\r\n\r\n",
    ) as Http1Request[];
    assert.deepEqual({ ...r.headers }, { "user-agent": "a", "set-cookie": ["x=1", "y=2"] });
  });

  it("keeps headers called __proto__ and constructor as headers", () => {
    const parser = new Http1Parser();
    parser.push(enc("GET / HTTP/1.1\r\n__proto__: a\r\nconstructor: b\r\nconstructor: c\r\n\r\n"));
    const r = parser.next() as Http1Request;
    assert.equal(Object.getPrototypeOf(r.headers), null);
    assert.deepEqual(Object.entries(r.headers), [["__proto__", "a"], ["constructor", "b, c"]]);
  });

  it("decodes a chunked body and drops its trailers", () => {
    const input = "POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" +
      "5;ext=1\r\nhello\r\n1a\r\n" + "abcdefghijklmnopqrstuvwxyz" + "\r\n0\r\nX-Sum: 1\r\n\r\n" +
      "GET /next HTTP/1.1\r\n\r\n";
    for (const step of [input.length, 3, 1]) {
      const out = parseAll(input, step) as Http1Request[];
      assert.deepEqual(out.map((r) => [r.target, r.body]), [
        ["/p", "helloabcdefghijklmnopqrstuvwxyz"],
        ["/next", null],
      ]);
    }
  });

  it("keeps an HTTP/1.0 connection open only when the client asks", () => {
    const out = parseAll(
      "GET /a HTTP/1.0\r\n\r\nGET /b HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n" +
        "GET /c HTTP/1.1\r\nConnection: TE, close\r\n\r\n",
    ) as Http1Request[];
    assert.deepEqual(out.map((r) => [r.minor, r.keepAlive]), [[0, false], [0, true], [1, false]]);
  });

  it("asks for the body once with Expect: 100-continue, before it arrives", () => {
    const parser = new Http1Parser();
    parser.push(enc("PUT /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n"));
    assert.equal(parser.next(), "continue");
    assert.equal(parser.next(), null);
    parser.push(enc("abc"));
    const r = parser.next() as Http1Request;
    assert.equal(text(r.body), "abc");
  });

  it("skips empty lines before a request line", () => {
    const out = parseAll("\r\n\r\nGET /a HTTP/1.1\r\n\r\n") as Http1Request[];
    assert.deepEqual(out.map((r) => r.target), ["/a"]);
  });

  for (
    const [name, input, status, reason] of [
      [
        "a bare LF",
        "GET / HTTP/1.1\nHost: a\r\n\r\n",
        400,
        "bare CR, LF or NUL in the request head",
      ],
      [
        "a bare CR",
        "GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n",
        400,
        "bare CR, LF or NUL in the request head",
      ],
      [
        "a NUL",
        "GET / HTTP/1.1\r\nHost: a\0\r\n\r\n",
        400,
        "bare CR, LF or NUL in the request head",
      ],
      [
        "a folded header line",
        "GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n",
        400,
        "malformed header line",
      ],
      ["space before a colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400, "malformed header name"],
      ["a line without a colon", "GET / HTTP/1.1\r\nHost\r\n\r\n", 400, "malformed header line"],
      ["two spaces in the request line", "GET  / HTTP/1.1\r\n\r\n", 400, "malformed request line"],
      ["a request line of two words", "GET /\r\n\r\n", 400, "malformed request line"],
      ["HTTP/2.0", "GET / HTTP/2.0\r\n\r\n", 400, 'unsupported version "HTTP/2.0"'],
      ["a method that is no token", "G(T / HTTP/1.1\r\n\r\n", 400, "malformed method"],
      [
        "a target with a control byte",
        "GET /\x7f HTTP/1.1\r\n\r\n",
        400,
        "malformed request target",
      ],
      [
        "a signed content-length",
        "POST / HTTP/1.1\r\nContent-Length: +3\r\n\r\nabc",
        400,
        "malformed content-length",
      ],
      [
        "two different content-lengths",
        "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
        400,
        "malformed content-length",
      ],
      [
        "content-length beside transfer-encoding",
        "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        400,
        "both content-length and transfer-encoding",
      ],
      [
        "a transfer coding other than chunked",
        "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        501,
        'unsupported transfer-encoding "gzip, chunked"',
      ],
      [
        "a chunk size that is not hex",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        400,
        "malformed chunk size",
      ],
      [
        "chunk data longer than its size",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
        400,
        "malformed chunk",
      ],
    ] as const
  ) {
    it(`refuses ${name} with ${status}, and then reads nothing more`, () => {
      const parser = new Http1Parser();
      parser.push(enc(input));
      assert.deepEqual(parser.next(), { status, reason });
      parser.push(enc("GET / HTTP/1.1\r\n\r\n"));
      assert.equal(parser.next(), null);
    });
  }

  it("refuses a head over the limit with 431, whole or still arriving", () => {
    const long = `GET / HTTP/1.1\r\nX-A: ${"a".repeat(200)}\r\n\r\n`;
    assert.deepEqual(parseAll(long, long.length, { maxHeadBytes: 100 }), [
      { status: 431, reason: "request head too large" },
    ]);
    assert.deepEqual(parseAll(long.slice(0, 150), 10, { maxHeadBytes: 100 }), [
      { status: 431, reason: "request head too large" },
    ]);
    assert.equal((parseAll(long, 10, { maxHeadBytes: 300 })[0] as Http1Request).method, "GET");
  });

  it("refuses a body over the limit with 413, by length or by chunks", () => {
    assert.deepEqual(
      parseAll("POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", 100, { maxBodyBytes: 10 }),
      [{ status: 413, reason: "request body too large" }],
    );
    assert.deepEqual(
      parseAll(
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n6\r\n",
        100,
        { maxBodyBytes: 10 },
      ),
      [{ status: 413, reason: "request body too large" }],
    );
  });

  it("tells whether part of a request is held", () => {
    const parser = new Http1Parser();
    assert.equal(parser.pending, false);
    parser.push(enc("GET / HT"));
    assert.equal(parser.next(), null);
    assert.equal(parser.pending, true);
    parser.push(enc("TP/1.1\r\n\r\n"));
    assert.equal((parser.next() as Http1Request).target, "/");
    assert.equal(parser.pending, false);
  });
});
