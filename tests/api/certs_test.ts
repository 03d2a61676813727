import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import forge from "node-forge";
import { createCertificate } from "../../src/api/cert_issue.ts";
import {
  checkServingCertificate,
  ensureSelfSignedCertificate,
  loadCertificateFiles,
  selfSignedHosts,
} from "../../src/api/certs.ts";
import { parseCertificateBundle, splitPemCertificates } from "../../src/api/pem.ts";
import { serveHttps } from "../../src/runtime/serve.ts";
import { httpsGet, makeTestPki } from "../fakes/auth_api.ts";

const DAY = 86_400_000;

async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), "certs-test-"));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function extensions(pem: string): Record<string, any> {
  const cert = forge.pki.certificateFromPem(pem);
  return Object.fromEntries(cert.extensions.map((e: any) => [e.name, e]));
}

describe("createCertificate", () => {
  const pki = makeTestPki();

  it("issues a client certificate with O and CN in the subject, signed by its CA", () => {
    const leaf = new X509Certificate(pki.alice.cert);
    const ca = new X509Certificate(pki.clientCa.cert);
    assert.equal(leaf.subject, "O=dev\nO=ops\nCN=alice");
    assert.equal(leaf.issuer, "CN=kubernetes-ca");
    assert.equal(leaf.checkIssued(ca), true);
    assert.equal(leaf.verify(ca.publicKey), true);
    assert.equal(leaf.verify(new X509Certificate(pki.strangerCa.cert).publicKey), false);
    assert.equal(leaf.ca, false);
    const ext = extensions(pki.alice.cert);
    assert.equal(ext.extKeyUsage.clientAuth, true);
    assert.equal(ext.extKeyUsage.serverAuth ?? false, false);
  });

  it("issues a CA with keyCertSign", () => {
    const ca = new X509Certificate(pki.requestHeaderCa.cert);
    assert.equal(ca.ca, true);
    assert.equal(ca.subject, "CN=front-proxy-ca");
    const ext = extensions(pki.requestHeaderCa.cert);
    assert.equal(ext.keyUsage.keyCertSign, true);
    assert.equal(ext.basicConstraints.cA, true);
  });

  it("puts DNS names and IP addresses into the subject alternative names", () => {
    const leaf = new X509Certificate(pki.server.cert);
    assert.equal(leaf.checkHost("localhost"), "localhost");
    assert.equal(leaf.checkIP("127.0.0.1"), "127.0.0.1");
    assert.equal(leaf.checkIP("10.0.0.1"), undefined);
  });

  it("honours explicit validity bounds", () => {
    const now = Date.parse("2030-01-01T00:00:00Z");
    const pair = createCertificate({ commonName: "x", now, notAfter: now + 2 * DAY });
    const cert = new X509Certificate(pair.cert);
    assert.equal(Date.parse(cert.validFrom), now - 60_000);
    assert.equal(Date.parse(cert.validTo), now + 2 * DAY);
  });
});

describe("parseCertificateBundle", () => {
  const pki = makeTestPki();

  it("returns every certificate of a bundle in order", () => {
    const bundle = pki.clientCa.cert + "\n" + pki.requestHeaderCa.cert;
    assert.equal(splitPemCertificates(bundle).length, 2);
    assert.deepEqual(
      parseCertificateBundle(bundle, "test bundle").map((c) => c.subject),
      ["CN=kubernetes-ca", "CN=front-proxy-ca"],
    );
  });

  it("rejects a bundle without certificates, naming it", () => {
    assert.throws(
      () => parseCertificateBundle("not pem", '--client-ca-file "ca.crt"'),
      { message: 'no certificate found in --client-ca-file "ca.crt"' },
    );
  });
});

describe("checkServingCertificate", () => {
  const pki = makeTestPki();

  it("rejects a key that belongs to another certificate", () => {
    assert.throws(
      () => checkServingCertificate({ cert: pki.server.cert, key: pki.alice.key }, { source: "x" }),
      { message: "private key does not match certificate in x" },
    );
  });

  it("rejects an expired certificate", () => {
    assert.throws(
      () => checkServingCertificate(pki.server, { source: "x", now: Date.now() + 400 * DAY }),
      /^Error: certificate in x is not valid now \(valid from .* to .*\)$/,
    );
  });
});

describe("loadCertificateFiles", () => {
  const pki = makeTestPki();

  it("loads a matching certificate and key", async () => {
    await withTempDir(async (dir) => {
      await writeFile(join(dir, "tls.crt"), pki.server.cert);
      await writeFile(join(dir, "tls.key"), pki.server.key);
      const pair = await loadCertificateFiles({
        certFile: join(dir, "tls.crt"),
        keyFile: join(dir, "tls.key"),
      });
      assert.deepEqual(pair, pki.server);
    });
  });

  it("names the flag and path of a missing file", async () => {
    await withTempDir(async (dir) => {
      await writeFile(join(dir, "tls.crt"), pki.server.cert);
      await assert.rejects(
        loadCertificateFiles({ certFile: join(dir, "tls.crt"), keyFile: join(dir, "nope.key") }),
        (err: Error) =>
          err.message.startsWith(`cannot read --tls-private-key-file "${join(dir, "nope.key")}": `),
      );
    });
  });

  it("rejects a key that does not match, naming both files", async () => {
    await withTempDir(async (dir) => {
      await writeFile(join(dir, "tls.crt"), pki.server.cert);
      await writeFile(join(dir, "tls.key"), pki.alice.key);
      await assert.rejects(
        loadCertificateFiles({ certFile: join(dir, "tls.crt"), keyFile: join(dir, "tls.key") }),
        {
          message: `private key does not match certificate in "${join(dir, "tls.crt")}" and "${
            join(dir, "tls.key")
          }"`,
        },
      );
    });
  });
});

describe("ensureSelfSignedCertificate", () => {
  it("generates apiserver.crt and apiserver.key for localhost, 127.0.0.1 and ::1", async () => {
    await withTempDir(async (dir) => {
      const certDir = join(dir, "apiserver.local.config", "certificates");
      const made = await ensureSelfSignedCertificate({ certDir });
      assert.equal(made.generated, true);
      assert.equal(made.certFile, join(certDir, "apiserver.crt"));
      assert.equal(made.keyFile, join(certDir, "apiserver.key"));
      assert.equal(await readFile(made.certFile, "utf8"), made.cert);
      assert.equal(await readFile(made.keyFile, "utf8"), made.key);
      assert.equal((await stat(made.keyFile)).mode & 0o777, 0o600);
      const cert = new X509Certificate(made.cert);
      assert.equal(cert.checkHost("localhost"), "localhost");
      assert.equal(cert.checkIP("127.0.0.1"), "127.0.0.1");
      assert.equal(cert.checkIP("::1"), "::1");
      assert.deepEqual(selfSignedHosts(), ["localhost", "127.0.0.1", "::1"]);
    });
  });

  it("reuses a valid certificate", async () => {
    await withTempDir(async (dir) => {
      const first = await ensureSelfSignedCertificate({ certDir: dir });
      const second = await ensureSelfSignedCertificate({ certDir: dir });
      assert.equal(second.generated, false);
      assert.equal(second.cert, first.cert);
      assert.equal(second.key, first.key);
    });
  });

  it("replaces a certificate that expires within a day", async () => {
    await withTempDir(async (dir) => {
      const now = Date.now();
      const first = await ensureSelfSignedCertificate({ certDir: dir, now, validDays: 30 });
      const later = await ensureSelfSignedCertificate({ certDir: dir, now: now + 29.5 * DAY });
      assert.equal(later.generated, true);
      assert.notEqual(later.cert, first.cert);
    });
  });

  it("replaces a certificate that lacks a requested extra name", async () => {
    await withTempDir(async (dir) => {
      await ensureSelfSignedCertificate({ certDir: dir });
      const extra = "hpa-metrics-adapter.kube-system.svc";
      const next = await ensureSelfSignedCertificate({ certDir: dir, extraHosts: [extra] });
      assert.equal(next.generated, true);
      assert.equal(new X509Certificate(next.cert).checkHost(extra), extra);
    });
  });

  it("replaces an unreadable certificate", async () => {
    await withTempDir(async (dir) => {
      await writeFile(join(dir, "apiserver.crt"), "garbage");
      await writeFile(join(dir, "apiserver.key"), "garbage");
      const made = await ensureSelfSignedCertificate({ certDir: dir });
      assert.equal(made.generated, true);
      checkServingCertificate(made, { source: "made" });
    });
  });

  it("makes a certificate a TLS client accepts for localhost", async () => {
    await withTempDir(async (dir) => {
      const made = await ensureSelfSignedCertificate({ certDir: dir });
      const server = await serveHttps({ fetch: () => new Response("ok") }, {
        hostname: "127.0.0.1",
        port: 0,
        cert: made.cert,
        key: made.key,
      });
      try {
        const res = await httpsGet({ port: server.port, path: "/", ca: made.cert });
        assert.equal(res.status, 200);
        assert.equal(res.text, "ok");
      } finally {
        await server.close();
      }
    });
  });
});
