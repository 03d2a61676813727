import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import * as https from "node:https";
import * as tls from "node:tls";
import {
  type ConnectionInfo,
  type RunningServer,
  runtimeName,
  serveHttp,
  serveHttps,
} from "../../src/runtime/serve.ts";
import { createCertificate } from "../../src/api/cert_issue.ts";
import { httpsGet, makeTestPki, type TestPki } from "../fakes/auth_api.ts";

/** An app that answers with what the server told it about the connection. */
const echoApp = {
  fetch(request: Request, env: { connection: ConnectionInfo }): Response {
    const c = env.connection;
    const p = c.peerCertificate;
    return Response.json({
      path: new URL(request.url).pathname,
      encrypted: c.encrypted,
      remoteAddress: c.remoteAddress,
      peer: p && {
        authorized: p.authorized,
        authorizationError: p.authorizationError,
        commonName: p.commonName,
        organizations: p.organizations,
        chainLength: p.chain.length,
        notAfterInFuture: p.notAfter > Date.now(),
      },
      groups: c.rawHeaders.flatMap((v, i, all) =>
        i % 2 === 0 && v.toLowerCase() === "x-remote-group" ? [all[i + 1]] : []
      ),
      joined: request.headers.get("x-remote-group"),
    });
  },
};

describe("serveHttps", () => {
  let pki: TestPki;
  let server: RunningServer;

  before(async () => {
    pki = makeTestPki();
    server = await serveHttps(echoApp, {
      hostname: "127.0.0.1",
      port: 0,
      cert: pki.server.cert,
      key: pki.server.key,
      clientCa: pki.clientCa.cert + pki.requestHeaderCa.cert,
    });
  });
  after(async () => {
    await server.close();
  });

  it("runs on the runtime the test runner asked for", () => {
    const expected = process.env.HPA_TEST_RUNTIME;
    if (expected) assert.equal(runtimeName(), expected);
  });

  it("accepts a client without a certificate and says so", async () => {
    const res = await httpsGet({ port: server.port, path: "/healthz" });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json(), {
      path: "/healthz",
      encrypted: true,
      remoteAddress: "127.0.0.1",
      peer: null,
      groups: [],
      joined: null,
    });
  });

  it("serves a certificate a client can verify for localhost", async () => {
    const res = await httpsGet({ port: server.port, path: "/x", ca: pki.server.cert });
    assert.equal(res.status, 200);
  });

  // Bun's node:https hides the peer certificate (see src/runtime/serve.ts); this must pass on
  // every runtime or the shipped binary cannot authenticate the aggregator
  it("hands a verified client certificate with CN, O and its chain to the app", async () => {
    const res = await httpsGet({ port: server.port, path: "/a", cert: pki.alice });
    assert.deepEqual(res.json().peer, {
      authorized: true,
      authorizationError: null,
      commonName: "alice",
      organizations: ["dev", "ops"],
      chainLength: 2,
      notAfterInFuture: true,
    });
  });

  it("hands an unverified certificate over as not authorized, with OpenSSL's reason", async () => {
    const res = await httpsGet({ port: server.port, path: "/a", cert: pki.strangerProxy });
    assert.deepEqual(res.json().peer, {
      authorized: false,
      authorizationError: "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
      commonName: "front-proxy-client",
      organizations: [],
      chainLength: 1,
      notAfterInFuture: true,
    });
  });

  it("keeps repeated headers apart in rawHeaders", async () => {
    const res = await httpsGet({
      port: server.port,
      path: "/a",
      headers: { "X-Remote-Group": ["system:masters", "a, b"] },
    });
    assert.deepEqual(res.json().groups, ["system:masters", "a, b"]);
    assert.equal(res.json().joined, "system:masters, a, b");
  });

  it("reports the same peer on every request of a keep-alive connection", async () => {
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await httpsGet({ port: server.port, path: "/1", cert: pki.alice, agent });
      const second = await httpsGet({ port: server.port, path: "/2", cert: pki.alice, agent });
      assert.equal(first.json().peer.commonName, "alice");
      assert.deepEqual(second.json().peer, first.json().peer);
    } finally {
      agent.destroy();
    }
  });
});

/**
 * Retries a request for up to a second: on Bun some updates replace the listening server,
 * and the port is closed for a moment.
 */
async function soon<T>(request: () => Promise<T>): Promise<T> {
  for (let i = 0;; i++) {
    try {
      return await request();
    } catch (err) {
      if (i >= 50 || (err as { code?: string }).code !== "ECONNREFUSED") throw err;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

describe("RunningServer.updateTls", () => {
  it("verifies new connections against a new client CA bundle", async () => {
    const pki = makeTestPki();
    const server = await serveHttps(echoApp, {
      hostname: "127.0.0.1",
      port: 0,
      cert: pki.server.cert,
      key: pki.server.key,
      clientCa: pki.clientCa.cert,
    });
    try {
      const before = await httpsGet({ port: server.port, path: "/", cert: pki.frontProxy });
      assert.equal(before.json().peer.authorized, false);
      server.updateTls({ clientCa: pki.requestHeaderCa.cert });
      const afterProxy = await httpsGet({ port: server.port, path: "/", cert: pki.frontProxy });
      const afterAlice = await httpsGet({ port: server.port, path: "/", cert: pki.alice });
      assert.equal(afterProxy.json().peer.authorized, true);
      assert.equal(afterAlice.json().peer.authorized, false);
    } finally {
      await server.close();
    }
  });

  it("starts verifying client certificates when a first client CA arrives, and stops again", async () => {
    const pki = makeTestPki();
    const server = await serveHttps(echoApp, {
      hostname: "127.0.0.1",
      port: 0,
      cert: pki.server.cert,
      key: pki.server.key,
    });
    const peerOf = async (cert?: TestPki["alice"]) =>
      (await soon(() => httpsGet({ port: server.port, path: "/", cert }))).json().peer;
    try {
      assert.equal((await httpsGet({ port: server.port, path: "/" })).status, 200);
      server.updateTls({ clientCa: pki.clientCa.cert });
      const peer = await peerOf(pki.alice);
      assert.deepEqual([peer?.authorized, peer?.commonName], [true, "alice"]);
      server.updateTls({ clientCa: "" });
      assert.equal(await peerOf(), null);
    } finally {
      await server.close();
    }
  });

  it("serves a new certificate to new connections", async () => {
    const pki = makeTestPki();
    const server = await serveHttps(echoApp, {
      hostname: "127.0.0.1",
      port: 0,
      cert: pki.server.cert,
      key: pki.server.key,
    });
    try {
      const ca = createCertificate({ commonName: "serving-ca", isCa: true });
      const next = createCertificate({ commonName: "localhost", hosts: ["localhost"], issuer: ca });
      await assert.rejects(httpsGet({ port: server.port, path: "/", ca: ca.cert }));
      server.updateTls({ cert: next.cert, key: next.key });
      const res = await soon(() => httpsGet({ port: server.port, path: "/", ca: ca.cert }));
      assert.equal(res.status, 200);
    } finally {
      await server.close();
    }
  });
});

describe("serveHttp", () => {
  it("serves plain HTTP with no peer certificate", async () => {
    const server = await serveHttp(echoApp, { hostname: "127.0.0.1", port: 0 });
    try {
      const res = await fetch(`http://127.0.0.1:${server.port}/metrics`);
      const body = await res.json();
      assert.equal(res.status, 200);
      assert.equal(body.path, "/metrics");
      assert.equal(body.encrypted, false);
      assert.equal(body.peer, null);
    } finally {
      await server.close();
    }
  });

  it("reports the port it bound and calls onListen with it", async () => {
    let seen = -1;
    const server = await serveHttp(echoApp, {
      hostname: "127.0.0.1",
      port: 0,
      onListen: ({ port }) => (seen = port),
    });
    await server.close();
    assert.ok(server.port > 0);
    assert.equal(seen, server.port);
  });

  it("fails to listen on a port in use with the runtime's error", async () => {
    const first = await serveHttp(echoApp, { hostname: "127.0.0.1", port: 0 });
    try {
      await assert.rejects(
        serveHttp(echoApp, { hostname: "127.0.0.1", port: first.port }),
        /EADDRINUSE|in use/i,
      );
    } finally {
      await first.close();
    }
  });
});

describe("close", () => {
  it("does not wait for idle keep-alive connections", async () => {
    const pki = makeTestPki();
    const server = await serveHttps(echoApp, {
      hostname: "127.0.0.1",
      port: 0,
      cert: pki.server.cert,
      key: pki.server.key,
    });
    const agent = new https.Agent({ keepAlive: true, keepAliveMsecs: 60_000 });
    try {
      await httpsGet({ port: server.port, path: "/", agent });
      const started = Date.now();
      await server.close();
      assert.ok(Date.now() - started < 2000, `close took ${Date.now() - started} ms`);
      await assert.rejects(httpsGet({ port: server.port, path: "/" }));
    } finally {
      agent.destroy();
    }
  });
});

/** Writes `input` on a TLS connection; what came back until the server closed it (or 2 s). */
function rawExchange(port: number, input: string): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: "127.0.0.1", port, rejectUnauthorized: false });
    let text = "";
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closed: false });
    }, 2_000);
    socket.on("data", (d: Buffer) => text += d.toString("latin1"));
    socket.on("error", reject);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve({ text, closed: true });
    });
    socket.on("secureConnect", () => socket.write(input, "latin1"));
  });
}

describe("serveHttps request bodies", () => {
  /** Takes a body of up to 16 bytes on POST /body, and none elsewhere. */
  const bodyApp = {
    bodyLimit: (method: string, target: string): number =>
      method === "POST" && target === "/body" ? 16 : 0,
    async fetch(request: Request): Promise<Response> {
      return new Response(`${request.method} ${(await request.text()).length}`);
    },
  };
  let pki: TestPki;
  before(() => {
    pki = makeTestPki();
  });

  for (const clientCa of [true, false]) {
    it(`refuses a body where none is taken at its head, with 413 and a close (client CA: ${clientCa})`, async () => {
      const server = await serveHttps(bodyApp, {
        hostname: "127.0.0.1",
        port: 0,
        cert: pki.server.cert,
        key: pki.server.key,
        ...(clientCa ? { clientCa: pki.requestHeaderCa.cert } : {}),
      });
      try {
        for (
          const head of [
            `POST /apis/x HTTP/1.1\r\nHost: h\r\nContent-Length: ${32 << 20}\r\n\r\n`,
            "GET /healthz HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST /body HTTP/1.1\r\nHost: h\r\nContent-Length: 17\r\n\r\n",
          ]
        ) {
          const { text, closed } = await rawExchange(server.port, head);
          assert.equal(closed, true, `${JSON.stringify(head)}: ${JSON.stringify(text)}`);
          assert.match(text, /^HTTP\/1\.1 413 Payload Too Large\r\n/);
          assert.match(text, /\r\nconnection: close\r\n/i);
        }
        const { text } = await rawExchange(
          server.port,
          "POST /body HTTP/1.1\r\nHost: h\r\nContent-Length: 16\r\nConnection: close\r\n\r\n" +
            "0123456789abcdef",
        );
        // Bun's node:https sends the app's answer with a length or chunked, as it goes
        assert.match(
          text,
          /^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\n(?:POST 16|7\r\nPOST 16\r\n0\r\n\r\n)$/,
        );
      } finally {
        await server.close();
      }
    });
  }
});
