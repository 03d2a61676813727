// authOptionsFromFlags lives in src/cli/serve.ts (only the command line knows flag spellings);
// this test belongs in tests/cli/ and stays here until that folder's owner takes it.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { authOptionsFromFlags } from "../../src/cli/serve.ts";
import { makeTestPki } from "../fakes/auth_api.ts";

describe("authOptionsFromFlags", () => {
  it("reads the CA files and maps every flag", async () => {
    const pki = makeTestPki();
    const dir = await mkdtemp(join(tmpdir(), "auth-flags-"));
    try {
      await writeFile(join(dir, "client-ca.crt"), pki.clientCa.cert);
      await writeFile(join(dir, "front-proxy-ca.crt"), pki.requestHeaderCa.cert);
      const options = await authOptionsFromFlags({
        "client-ca-file": join(dir, "client-ca.crt"),
        "requestheader-client-ca-file": join(dir, "front-proxy-ca.crt"),
        "requestheader-allowed-names": ["front-proxy-client"],
        "requestheader-username-headers": ["X-Remote-User"],
        "requestheader-group-headers": ["X-Remote-Group"],
        "requestheader-extra-headers-prefix": ["X-Remote-Extra-"],
        "requestheader-uid-headers": [],
        "authentication-skip-lookup": true,
        "authentication-tolerate-lookup-failure": false,
        "authentication-token-webhook-cache-ttl": 30,
        "authorization-always-allow-paths": ["/healthz"],
        "authorization-webhook-cache-authorized-ttl": 5,
        "authorization-webhook-cache-unauthorized-ttl": 2,
        "authorization-group-reviews": false,
      });
      assert.deepEqual(options, {
        clientCa: pki.clientCa.cert,
        requestHeader: {
          clientCa: pki.requestHeaderCa.cert,
          allowedNames: ["front-proxy-client"],
          usernameHeaders: ["X-Remote-User"],
          uidHeaders: [],
          groupHeaders: ["X-Remote-Group"],
          extraHeaderPrefixes: ["X-Remote-Extra-"],
        },
        lookupConfigMap: false,
        tolerateLookupFailure: false,
        tokenCacheTtlSeconds: 30,
        alwaysAllowPaths: ["/healthz"],
        allowCacheTtlSeconds: 5,
        denyCacheTtlSeconds: 2,
        groupReviews: false,
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("asks group reviews unless --authorization-group-reviews=false", async () => {
    assert.equal((await authOptionsFromFlags({})).groupReviews, true);
    assert.equal(
      (await authOptionsFromFlags({ "authorization-group-reviews": true })).groupReviews,
      true,
    );
  });

  it("names the flag and path of a CA file it cannot read", async () => {
    await assert.rejects(
      authOptionsFromFlags({ "client-ca-file": "/nonexistent/ca.crt" }),
      (err: Error) =>
        err.message.startsWith('cannot read --client-ca-file "/nonexistent/ca.crt": '),
    );
  });
});
