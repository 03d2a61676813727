/**
 * The collectors' proxies (src/runtime/http_proxy.ts, http1_client.ts): the environment read as
 * Go's net/http reads it (the cases of Go's `httpproxy` tests), and requests through an http
 * proxy on loopback: absolute form for http, CONNECT then TLS for https, credentials, a refusal.
 * The proxy is this test's own (a few lines of HTTP/1.1 forwarding): no proxy server is
 * installed here, and the adapter speaks to any as the RFC says.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import * as net from "node:net";
import * as tls from "node:tls";
import { proxyFromEnv } from "../../src/runtime/http_proxy.ts";
import { Http1Client } from "../../src/runtime/http1_client.ts";
import { makeTestPki } from "../fakes/auth_api.ts";

describe("the proxy of a request, from the environment as Go reads it", () => {
  const P = "http://proxy:3128/";
  const cases: [Record<string, string>, string, string | null][] = [
    [{}, "http://example.com/", null],
    [{ HTTP_PROXY: "proxy:3128" }, "http://example.com/", P],
    [{ http_proxy: "proxy:3128" }, "http://example.com/", P],
    [{ HTTP_PROXY: "http://proxy:3128", http_proxy: "http://other:1" }, "http://example.com/", P],
    [{ HTTP_PROXY: "proxy:3128" }, "https://example.com/", null],
    [{ HTTPS_PROXY: "proxy:3128" }, "https://example.com/", P],
    // CGI: HTTP_PROXY may come from a request header
    [{ HTTP_PROXY: "proxy:3128", REQUEST_METHOD: "GET" }, "http://example.com/", null],
    // never localhost or loopback
    [{ HTTP_PROXY: "proxy:3128" }, "http://localhost:8080/", null],
    [{ HTTP_PROXY: "proxy:3128" }, "http://127.0.0.2:8080/", null],
    [{ HTTP_PROXY: "proxy:3128" }, "http://[::1]:8080/", null],
    [{ HTTP_PROXY: "proxy:3128", NO_PROXY: "*" }, "http://example.com/", null],
    [{ HTTP_PROXY: "proxy:3128", NO_PROXY: "example.com" }, "http://example.com/", null],
    [{ HTTP_PROXY: "proxy:3128", NO_PROXY: "example.com" }, "http://a.example.com/", null],
    [{ HTTP_PROXY: "proxy:3128", NO_PROXY: ".example.com" }, "http://example.com/", P],
    [{ HTTP_PROXY: "proxy:3128", NO_PROXY: ".example.com" }, "http://a.example.com/", null],
    [{ HTTP_PROXY: "proxy:3128", NO_PROXY: "*.example.com" }, "http://a.example.com/", null],
    [{ HTTP_PROXY: "proxy:3128", NO_PROXY: "example.com:8080" }, "http://example.com/", P],
    [{ HTTP_PROXY: "proxy:3128", NO_PROXY: "example.com:80" }, "http://example.com/", null],
    [{ HTTP_PROXY: "proxy:3128", NO_PROXY: "10.0.0.0/8" }, "http://10.1.2.3:9090/", null],
    [{ HTTP_PROXY: "proxy:3128", NO_PROXY: "10.0.0.0/8" }, "http://11.1.2.3:9090/", P],
    [{ HTTP_PROXY: "proxy:3128", NO_PROXY: "10.1.2.3" }, "http://10.1.2.3:9090/", null],
    [{ HTTP_PROXY: "proxy:3128", NO_PROXY: "10.1.2.3:80" }, "http://10.1.2.3:9090/", P],
    [{ HTTP_PROXY: "proxy:3128", NO_PROXY: "fd00::/8" }, "http://[fd12::1]:9090/", null],
    [{ HTTP_PROXY: "proxy:3128", NO_PROXY: " , EXAMPLE.com " }, "http://example.com/", null],
  ];
  for (const [env, url, want] of cases) {
    it(`${JSON.stringify(env)} ${url} -> ${want ?? "direct"}`, () => {
      assert.equal(proxyFromEnv(env)(new URL(url))?.href ?? null, want);
    });
  }
});

/** A forwarding http proxy on 127.0.0.1: `*.test` hosts are 127.0.0.2. */
interface TestProxy {
  port: number;
  /** Request lines it received. */
  lines: string[];
  /** Proxy-Authorization values it received. */
  auth: string[];
  close(): Promise<void>;
}

async function startProxy(refuse = false): Promise<TestProxy> {
  const sockets = new Set<net.Socket>();
  const p: TestProxy = { port: 0, lines: [], auth: [], close: () => Promise.resolve() };
  const server = net.createServer((client) => {
    sockets.add(client);
    client.on("error", () => {});
    client.on("close", () => sockets.delete(client));
    let held = Buffer.alloc(0);
    const onData = (d: Buffer): void => {
      held = Buffer.concat([held, d]);
      const end = held.indexOf("\r\n\r\n");
      if (end < 0) return;
      client.off("data", onData);
      const head = held.subarray(0, end).toString("latin1");
      const rest = held.subarray(end + 4);
      const [line, ...fields] = head.split("\r\n");
      p.lines.push(line);
      const auth = fields.find((f) => /^proxy-authorization:/i.test(f));
      if (auth) p.auth.push(auth.slice(auth.indexOf(":") + 1).trim());
      if (refuse) {
        client.end("HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n");
        return;
      }
      const [method, target] = line.split(" ");
      const authority = method === "CONNECT" ? target : new URL(target).host;
      const port = Number(authority.slice(authority.lastIndexOf(":") + 1));
      const upstream = net.connect({ host: "127.0.0.2", port });
      sockets.add(upstream);
      upstream.on("error", () => client.destroy());
      upstream.on("close", () => sockets.delete(upstream));
      if (method === "CONNECT") {
        upstream.on("connect", () => {
          client.write("HTTP/1.1 200 Connection established\r\n\r\n");
          client.pipe(upstream).pipe(client);
        });
      } else {
        // origin form for the server, the rest as received
        const url = new URL(target);
        upstream.write(`${method} ${url.pathname}${url.search} ${line.split(" ")[2]}\r\n`);
        upstream.write(fields.filter((f) => !/^proxy-/i.test(f)).join("\r\n") + "\r\n\r\n");
        upstream.write(rest);
        client.pipe(upstream).pipe(client);
      }
    };
    client.on("data", onData);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  p.port = (server.address() as net.AddressInfo).port;
  p.close = () =>
    new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    });
  return p;
}

/** An origin on 127.0.0.2 answering `{"via":"<tls|plain>"}`. */
async function startOrigin(secure: boolean): Promise<{ port: number; close(): Promise<void> }> {
  const pki = makeTestPki();
  const sockets = new Set<net.Socket>();
  const onConn = (s: net.Socket): void => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    s.on("error", () => {});
    s.on("data", () => {
      const body = JSON.stringify({ via: secure ? "tls" : "plain" });
      s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    });
  };
  const server = secure
    ? tls.createServer({ cert: pki.server.cert, key: pki.server.key }, onConn)
    : net.createServer(onConn);
  await new Promise<void>((r) => server.listen(0, "127.0.0.2", r));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

async function text(client: Http1Client, url: string): Promise<string> {
  const res = await client.request(url);
  let out = "";
  for (let p = await res.body.read(); p !== null; p = await res.body.read()) {
    out += Buffer.from(p).toString();
  }
  return out;
}

describe("requests through an http proxy", () => {
  let proxy: TestProxy;
  let plain: { port: number; close(): Promise<void> };
  let secure: { port: number; close(): Promise<void> };

  before(async () => {
    proxy = await startProxy();
    plain = await startOrigin(false);
    secure = await startOrigin(true);
  });
  after(async () => {
    await proxy.close();
    await plain.close();
    await secure.close();
  });

  it("sends an http request in absolute form, with the proxy's credentials", async () => {
    const client = new Http1Client({
      proxy: proxyFromEnv({ HTTP_PROXY: `http://user:p%40ss@127.0.0.1:${proxy.port}` }),
    });
    try {
      const url = `http://pod.test:${plain.port}/metrics?x=1`;
      assert.equal(await text(client, url), '{"via":"plain"}');
      assert.equal(proxy.lines.at(-1), `GET ${url} HTTP/1.1`);
      assert.equal(proxy.auth.at(-1), `Basic ${Buffer.from("user:p@ss").toString("base64")}`);
    } finally {
      await client.close();
    }
  });

  it("tunnels https with CONNECT and verifies the origin's certificate through it", async () => {
    const pki = makeTestPki();
    const client = new Http1Client({
      proxy: proxyFromEnv({ HTTPS_PROXY: `127.0.0.1:${proxy.port}` }),
      tls: { ca: pki.server.cert, servername: "localhost" },
    });
    try {
      assert.equal(await text(client, `https://api.test:${secure.port}/q`), '{"via":"tls"}');
      assert.equal(proxy.lines.at(-1), `CONNECT api.test:${secure.port} HTTP/1.1`);
      // kept for the next request to the same origin through the same proxy
      assert.equal(await text(client, `https://api.test:${secure.port}/q`), '{"via":"tls"}');
      assert.equal(proxy.lines.filter((l) => l.startsWith("CONNECT")).length, 1);
    } finally {
      await client.close();
    }
  });

  it("connects directly to loopback and to what NO_PROXY names", async () => {
    const before = proxy.lines.length;
    const client = new Http1Client({
      proxy: proxyFromEnv({ HTTP_PROXY: `127.0.0.1:${proxy.port}`, NO_PROXY: "pod.test" }),
    });
    try {
      assert.equal(await text(client, `http://127.0.0.2:${plain.port}/`), '{"via":"plain"}');
      assert.equal(proxy.lines.length, before);
    } finally {
      await client.close();
    }
  });

  it("says who refused a tunnel, and that an https proxy is not spoken to", async () => {
    const refusing = await startProxy(true);
    const client = new Http1Client({
      proxy: proxyFromEnv({ HTTPS_PROXY: `127.0.0.1:${refusing.port}` }),
    });
    try {
      await assert.rejects(client.request(`https://api.test:${secure.port}/q`), {
        message:
          `proxy 127.0.0.1:${refusing.port} refused the tunnel to api.test:${secure.port}: 407 Proxy Authentication Required`,
      });
    } finally {
      await client.close();
      await refusing.close();
    }
    const tlsProxy = new Http1Client({ proxy: proxyFromEnv({ HTTP_PROXY: "https://proxy:3129" }) });
    await assert.rejects(tlsProxy.request("http://pod.test/"), {
      message: "unsupported proxy https://proxy:3129 (only http proxies)",
    });
  });
});
