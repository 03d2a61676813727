import { after, before, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { type KeyObject, X509Certificate } from "node:crypto";
import * as https from "node:https";
import { Hono } from "hono";
import {
  createDelegatedAuth,
  type DelegatedAuth,
  type DelegatedAuthOptions,
} from "../../src/api/auth.ts";
import { configFromConfigMap } from "../../src/api/auth_config.ts";
import { type AuthVariables, createAuthMiddleware } from "../../src/api/auth_middleware.ts";
import {
  type PeerCertificate,
  type PlainRequest,
  type RunningServer,
  serveHttps,
} from "../../src/runtime/serve.ts";
import {
  type FakeAuthApi,
  httpsGet,
  makeTestPki,
  startFakeAuthApi,
  type TestPki,
} from "../fakes/auth_api.ts";

const UNAUTHORIZED = {
  kind: "Status",
  apiVersion: "v1",
  metadata: {},
  status: "Failure",
  message: "Unauthorized",
  reason: "Unauthorized",
  code: 401,
};

const CUSTOM_PATH = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/*/queue-length";
const EXTERNAL_PATH = "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue-length";

function memoryLog() {
  const lines: string[] = [];
  const fields: Array<Record<string, unknown> | undefined> = [];
  const record = (level: string) => (m: string, f?: Record<string, unknown>) => {
    lines.push(`${level} ${m}`);
    fields.push(f);
  };
  return { lines, fields, warn: record("warn"), info: record("info") };
}

/** Log lines other than the per-request authentication failures. */
function configLines(log: ReturnType<typeof memoryLog>): string[] {
  return log.lines.filter((l) => l !== "warn unable to authenticate the request");
}

/** An app behind the middleware that shows who it thinks the caller is. */
function whoAmIApp(auth: DelegatedAuth): Hono<{ Variables: AuthVariables }> {
  const app = new Hono<{ Variables: AuthVariables }>();
  app.use("*", createAuthMiddleware({ auth }));
  app.get("*", (c) =>
    c.json({
      user: c.var.user,
      remoteUser: c.req.header("x-remote-user") ?? null,
      remoteGroup: c.req.header("x-remote-group") ?? null,
    }));
  return app;
}

/** A server with delegated auth in front of whoAmIApp; the TLS CA follows the auth config. */
async function startServer(pki: TestPki, options: DelegatedAuthOptions) {
  const auth = createDelegatedAuth(options);
  await auth.start();
  const server = await serveHttps(whoAmIApp(auth), {
    hostname: "127.0.0.1",
    port: 0,
    cert: pki.server.cert,
    key: pki.server.key,
    clientCa: auth.clientCaBundle(),
  });
  auth.onClientCaChange((clientCa) => server.updateTls({ clientCa }));
  return { auth, server };
}

function flagsConfig(pki: TestPki): Pick<DelegatedAuthOptions, "clientCa" | "requestHeader"> {
  return {
    clientCa: pki.clientCa.cert,
    requestHeader: {
      clientCa: pki.requestHeaderCa.cert,
      allowedNames: ["front-proxy-client"],
      usernameHeaders: ["X-Remote-User"],
      uidHeaders: [],
      groupHeaders: ["X-Remote-Group"],
      extraHeaderPrefixes: ["X-Remote-Extra-"],
    },
  };
}

/** Delegated auth on the flags' CAs that asks `fake` for reviews (no ConfigMap), started. */
async function reviewingAuth(
  pki: TestPki,
  fake: FakeAuthApi,
  now: () => number,
): Promise<DelegatedAuth> {
  const auth = createDelegatedAuth({
    ...flagsConfig(pki),
    kubeRequest: fake.kubeRequest,
    lookupConfigMap: false,
    now,
  });
  await auth.start();
  return auth;
}

describe("authentication over real TLS connections", () => {
  let pki: TestPki;
  let fake: FakeAuthApi;
  let auth: DelegatedAuth;
  let server: RunningServer;
  let clock = 1_000_000;
  const log = memoryLog();
  const lastErrors = () => log.fields[log.fields.length - 1]?.errors;

  before(async () => {
    pki = makeTestPki();
    fake = await startFakeAuthApi();
    ({ auth, server } = await startServer(pki, {
      ...flagsConfig(pki),
      kubeRequest: fake.kubeRequest,
      lookupConfigMap: false,
      now: () => clock,
      log,
    }));
  });
  after(async () => {
    auth.stop();
    await server.close();
    await fake.close();
  });
  beforeEach(() => {
    fake.decide = () => ({ allowed: true });
    fake.sars.length = 0;
    fake.tokenReviews.length = 0;
    clock += 60_000; // every test starts with empty caches
  });

  it("takes the identity from X-Remote-* headers of the front proxy", async () => {
    const res = await httpsGet({
      port: server.port,
      path: CUSTOM_PATH,
      cert: pki.frontProxy,
      headers: {
        "X-Remote-User": "system:serviceaccount:kube-system:horizontal-pod-autoscaler",
        "X-Remote-Group": ["system:serviceaccounts", "system:authenticated", "a, b"],
        "X-Remote-Extra-Authentication.kubernetes.io%2fpod-name": "hpa-0",
        "X-Remote-Extra-Scopes": ["one", "two"],
      },
    });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json(), {
      user: {
        name: "system:serviceaccount:kube-system:horizontal-pod-autoscaler",
        groups: ["system:serviceaccounts", "system:authenticated", "a, b"],
        extra: { "authentication.kubernetes.io/pod-name": ["hpa-0"], scopes: ["one", "two"] },
      },
      remoteUser: null,
      remoteGroup: null,
    });
  });

  it("rejects a requestheader-CA certificate whose CN is not allowed", async () => {
    const res = await httpsGet({
      port: server.port,
      path: CUSTOM_PATH,
      cert: pki.otherProxy,
      headers: { "X-Remote-User": "admin", "X-Remote-Group": "system:masters" },
    });
    assert.equal(res.status, 401);
    assert.deepEqual(res.json(), UNAUTHORIZED);
    assert.equal(
      lastErrors(),
      "x509: subject with cn=other-proxy is not in the allowed list; " +
        'verifying certificate CN="other-proxy" failed: x509: certificate signed by unknown authority',
    );
  });

  it("rejects a front-proxy CN signed by a stranger CA", async () => {
    const res = await httpsGet({
      port: server.port,
      path: CUSTOM_PATH,
      cert: pki.strangerProxy,
      headers: { "X-Remote-User": "admin", "X-Remote-Group": "system:masters" },
    });
    assert.equal(res.status, 401);
    assert.deepEqual(res.json(), UNAUTHORIZED);
    const failed =
      'verifying certificate CN="front-proxy-client" failed: UNABLE_TO_VERIFY_LEAF_SIGNATURE';
    assert.equal(lastErrors(), `${failed}; ${failed}`);
  });

  it("rejects a stranger certificate even on an always-allowed path", async () => {
    const res = await httpsGet({ port: server.port, path: "/healthz", cert: pki.strangerProxy });
    assert.equal(res.status, 401);
  });

  it("rejects the front proxy's certificate without a user header", async () => {
    const res = await httpsGet({ port: server.port, path: CUSTOM_PATH, cert: pki.frontProxy });
    assert.equal(res.status, 401);
  });

  it("takes CN and O of a client-CA certificate and ignores X-Remote-* headers", async () => {
    const res = await httpsGet({
      port: server.port,
      path: CUSTOM_PATH,
      cert: pki.alice,
      headers: { "X-Remote-User": "admin", "X-Remote-Group": "system:masters" },
    });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json(), {
      user: { name: "alice", groups: ["dev", "ops", "system:authenticated"], extra: {} },
      remoteUser: null,
      remoteGroup: null,
    });
    assert.equal(fake.sars.length, 1);
    assert.equal(fake.sars[0].user, "alice");
  });

  it("serves the health paths without a certificate and strips X-Remote-* headers", async () => {
    for (const path of ["/healthz", "/livez", "/readyz"]) {
      const res = await httpsGet({
        port: server.port,
        path: `${path}?verbose`,
        headers: { "X-Remote-User": "admin" },
      });
      assert.equal(res.status, 200, path);
      assert.deepEqual(res.json(), {
        user: { name: "system:anonymous", groups: ["system:unauthenticated"], extra: {} },
        remoteUser: null,
        remoteGroup: null,
      });
    }
    assert.equal(fake.sars.length, 0);
  });

  it("answers 401 to an anonymous request for a metric or discovery", async () => {
    for (const path of [CUSTOM_PATH, "/apis", "/openapi/v2"]) {
      const res = await httpsGet({ port: server.port, path, headers: { "X-Remote-User": "x" } });
      assert.equal(res.status, 401, path);
      assert.deepEqual(res.json(), UNAUTHORIZED);
    }
  });

  it("authenticates a bearer token through a cached TokenReview", async () => {
    fake.tokens.set("good-token", {
      username: "bob",
      uid: "42",
      groups: ["team-a"],
      extra: { scopes: ["x"] },
    });
    const get = () =>
      httpsGet({
        port: server.port,
        path: "/apis",
        headers: { Authorization: "Bearer good-token" },
      });
    const first = await get();
    const second = await get();
    assert.equal(first.status, 200);
    assert.deepEqual(first.json().user, {
      name: "bob",
      uid: "42",
      groups: ["team-a", "system:authenticated"],
      extra: { scopes: ["x"] },
    });
    assert.deepEqual(second.json(), first.json());
    assert.deepEqual(fake.tokenReviews, ["good-token"]);
    clock += 10_001; // --authentication-token-webhook-cache-ttl 10s
    await get();
    assert.deepEqual(fake.tokenReviews, ["good-token", "good-token"]);
  });

  it("answers 401 to a token the TokenReview does not accept", async () => {
    const res = await httpsGet({
      port: server.port,
      path: "/apis",
      headers: { Authorization: "Bearer bad-token" },
    });
    assert.equal(res.status, 401);
    assert.deepEqual(res.json(), UNAUTHORIZED);
  });
});

describe("authorization by SubjectAccessReview", () => {
  let pki: TestPki;
  let fake: FakeAuthApi;
  let auth: DelegatedAuth;
  let server: RunningServer;
  let clock = 5_000_000;
  const hpa = {
    "X-Remote-User": "system:serviceaccount:kube-system:horizontal-pod-autoscaler",
    "X-Remote-Group": ["system:serviceaccounts", "system:authenticated"],
  };
  const get = (path: string, headers: Record<string, string | string[]> = hpa) =>
    httpsGet({ port: server.port, path, cert: pki.frontProxy, headers });

  before(async () => {
    pki = makeTestPki();
    fake = await startFakeAuthApi();
    ({ auth, server } = await startServer(pki, {
      ...flagsConfig(pki),
      kubeRequest: fake.kubeRequest,
      lookupConfigMap: false,
      now: () => clock,
    }));
  });
  after(async () => {
    auth.stop();
    await server.close();
    await fake.close();
  });
  beforeEach(() => {
    fake.sars.length = 0;
    fake.failWith = null;
    clock += 60_000;
  });

  it("asks for get on the pods resource with the metric as subresource for custom metrics", async () => {
    fake.decide = () => ({ allowed: true });
    const res = await get(CUSTOM_PATH.replace("*", "%2A") + "?labelSelector=app%3Dweb");
    assert.equal(res.status, 200);
    assert.deepEqual(fake.sars, [{
      resourceAttributes: {
        namespace: "default",
        verb: "get",
        group: "custom.metrics.k8s.io",
        version: "v1beta2",
        resource: "pods",
        subresource: "queue-length",
        name: "*",
      },
      user: "system:serviceaccount:kube-system:horizontal-pod-autoscaler",
      groups: ["system:serviceaccounts", "system:authenticated"],
    }]);
  });

  it("asks for list on the metric resource for external metrics", async () => {
    fake.decide = () => ({ allowed: true });
    await get(EXTERNAL_PATH + "?labelSelector=queue%3Dq1");
    assert.deepEqual(fake.sars[0].resourceAttributes, {
      namespace: "default",
      verb: "list",
      group: "external.metrics.k8s.io",
      version: "v1beta1",
      resource: "queue-length",
    });
  });

  it("asks with nonResourceAttributes for discovery paths", async () => {
    fake.decide = () => ({ allowed: true });
    await get("/apis/custom.metrics.k8s.io/v1beta2");
    assert.deepEqual(fake.sars[0].nonResourceAttributes, {
      path: "/apis/custom.metrics.k8s.io/v1beta2",
      verb: "get",
    });
    assert.equal(fake.sars[0].resourceAttributes, undefined);
  });

  it("answers 403 with the Go server's message when denied", async () => {
    fake.decide = () => ({ allowed: false, reason: "no RBAC policy matched" });
    const res = await get(CUSTOM_PATH);
    assert.equal(res.status, 403);
    assert.deepEqual(res.json(), {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: 'pods.custom.metrics.k8s.io "*" is forbidden: User ' +
        '"system:serviceaccount:kube-system:horizontal-pod-autoscaler" cannot get resource ' +
        '"pods/queue-length" in API group "custom.metrics.k8s.io" in the namespace "default": ' +
        "no RBAC policy matched",
      reason: "Forbidden",
      details: { name: "*", group: "custom.metrics.k8s.io", kind: "pods" },
      code: 403,
    });
  });

  it("answers 403 for a denied non-resource path", async () => {
    fake.decide = () => ({ allowed: false });
    const res = await get("/openapi/v2");
    assert.deepEqual(res.json(), {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: 'forbidden: User "system:serviceaccount:kube-system:horizontal-pod-autoscaler" ' +
        'cannot get path "/openapi/v2"',
      reason: "Forbidden",
      details: {},
      code: 403,
    });
  });

  it("treats denied: true as a denial even when allowed is set", async () => {
    fake.decide = () => ({ allowed: true, denied: true });
    assert.equal((await get(CUSTOM_PATH)).status, 403);
  });

  it("caches an allow for 10 s", async () => {
    fake.decide = () => ({ allowed: true });
    assert.equal((await get(CUSTOM_PATH)).status, 200);
    fake.decide = () => ({ allowed: false });
    assert.equal((await get(CUSTOM_PATH)).status, 200);
    assert.equal(fake.sars.length, 1);
    clock += 10_001;
    assert.equal((await get(CUSTOM_PATH)).status, 403);
    assert.equal(fake.sars.length, 2);
  });

  it("caches a denial for 10 s", async () => {
    fake.decide = () => ({ allowed: false });
    assert.equal((await get(EXTERNAL_PATH)).status, 403);
    fake.decide = () => ({ allowed: true });
    assert.equal((await get(EXTERNAL_PATH)).status, 403);
    clock += 9_000;
    assert.equal((await get(EXTERNAL_PATH)).status, 403);
    assert.equal(fake.sars.length, 1);
    clock += 1_001;
    assert.equal((await get(EXTERNAL_PATH)).status, 200);
    assert.equal(fake.sars.length, 2);
  });

  it("keeps cache entries of different users apart", async () => {
    fake.decide = (spec) => ({ allowed: spec.user === "alice" });
    assert.equal((await get(CUSTOM_PATH, { "X-Remote-User": "alice" })).status, 200);
    assert.equal((await get(CUSTOM_PATH, { "X-Remote-User": "mallory" })).status, 403);
    assert.equal(fake.sars.length, 2);
  });

  it("makes one SubjectAccessReview for concurrent identical requests", async () => {
    fake.decide = () => ({ allowed: true });
    const all = await Promise.all([get(CUSTOM_PATH), get(CUSTOM_PATH), get(CUSTOM_PATH)]);
    assert.deepEqual(all.map((r) => r.status), [200, 200, 200]);
    assert.equal(fake.sars.length, 1);
  });

  it("lets system:masters through without a SubjectAccessReview", async () => {
    fake.decide = () => ({ allowed: false });
    const res = await get(CUSTOM_PATH, {
      "X-Remote-User": "root",
      "X-Remote-Group": "system:masters",
    });
    assert.equal(res.status, 200);
    assert.equal(fake.sars.length, 0);
  });

  it("answers 500 when the SubjectAccessReview fails", async () => {
    fake.failWith = 503;
    const res = await get("/apis/custom.metrics.k8s.io/v1beta1/namespaces/x/pods/*/m");
    assert.equal(res.status, 500);
    assert.deepEqual(res.json(), {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: "Internal error occurred: subjectaccessreview failed with status 503",
      reason: "InternalError",
      details: { causes: [{ message: "subjectaccessreview failed with status 503" }] },
      code: 500,
    });
  });
});

describe("the fast path check (allowsWithoutIo, middleware.fast)", () => {
  let pki: TestPki;
  let fake: FakeAuthApi;
  let auth: DelegatedAuth;
  let server: RunningServer;
  let clock = 9_000_000;
  const hpa = {
    "X-Remote-User": "system:serviceaccount:kube-system:horizontal-pod-autoscaler",
    "X-Remote-Group": ["system:serviceaccounts", "system:authenticated"],
  };
  /** The slow path answers who the caller is; the fast path answers {"fast":true}. */
  const which = async (cert: TestPki["frontProxy"], headers: Record<string, string | string[]>) => {
    const res = await httpsGet({ port: server.port, path: CUSTOM_PATH, cert, headers });
    return [res.status, "fast" in res.json() ? "fast" : "slow"];
  };

  before(async () => {
    pki = makeTestPki();
    fake = await startFakeAuthApi();
    auth = await reviewingAuth(pki, fake, () => clock);
    const middleware = createAuthMiddleware({ auth });
    const slow = whoAmIApp(auth);
    server = await serveHttps({
      fetch: (request, env) => slow.fetch(request, env),
      fastFetch: (request) =>
        middleware.fast(request) === true
          ? { status: 200, headers: { "content-type": "application/json" }, body: '{"fast":true}' }
          : null,
    }, {
      hostname: "127.0.0.1",
      port: 0,
      cert: pki.server.cert,
      key: pki.server.key,
      clientCa: auth.clientCaBundle(),
    });
  });
  after(async () => {
    auth.stop();
    await server.close();
    await fake.close();
  });

  it("allows a front-proxy user only while its SubjectAccessReview allow is cached", async () => {
    fake.decide = () => ({ allowed: true });
    assert.deepEqual(await which(pki.frontProxy, hpa), [200, "slow"]);
    assert.deepEqual(await which(pki.frontProxy, hpa), [200, "fast"]);
    assert.equal(fake.sars.length, 1);
    clock += 10_001;
    fake.decide = () => ({ allowed: false });
    assert.deepEqual(await which(pki.frontProxy, hpa), [403, "slow"]);
    assert.deepEqual(await which(pki.frontProxy, hpa), [403, "slow"]);
  });

  it("never allows a certificate the slow path would reject, nor a missing user", async () => {
    fake.decide = () => ({ allowed: true });
    clock += 60_000;
    assert.deepEqual(await which(pki.frontProxy, hpa), [200, "slow"]);
    assert.deepEqual(await which(pki.otherProxy, hpa), [401, "slow"]);
    assert.deepEqual(await which(pki.strangerProxy, hpa), [401, "slow"]);
    assert.deepEqual(await which(pki.frontProxy, {}), [401, "slow"]);
  });

  it("allows everything in local mode (no CA, no cluster)", () => {
    const local = createDelegatedAuth({});
    const request = {
      method: "GET",
      url: CUSTOM_PATH,
      headers: {},
      connection: { remoteAddress: "", encrypted: true, peerCertificate: null, rawHeaders: [] },
    };
    assert.equal(local.allowsWithoutIo?.(request), true);
    assert.equal(createAuthMiddleware({ auth: local }).fast(request), true);
    assert.equal(createAuthMiddleware({ auth }).fast(request), null);
  });
});

describe("the fast path's memo of users and decisions, on one connection", () => {
  const HPA_USER = "system:serviceaccount:kube-system:horizontal-pod-autoscaler";
  const hpa = ["X-Remote-User", HPA_USER, "X-Remote-Group", "system:serviceaccounts"];
  const mallory = ["X-Remote-User", "mallory", "X-Remote-Group", "system:serviceaccounts"];
  let pki: TestPki;
  let fake: FakeAuthApi;
  let auth: DelegatedAuth;
  let peer: PeerCertificate;
  const clock = 5_000_000;

  /** A request on the connection of `peer` (one object per connection, as serveHttps makes). */
  const on = (rawHeaders: string[], url = CUSTOM_PATH): PlainRequest => ({
    method: "GET",
    url,
    headers: {},
    connection: { remoteAddress: "127.0.0.1", encrypted: true, peerCertificate: peer, rawHeaders },
  });
  /** The slow path's answer (status) for the same request; it caches the review's answer. */
  const slow = async (rawHeaders: string[], url = CUSTOM_PATH): Promise<number> => {
    const headers = new Headers();
    for (let i = 0; i < rawHeaders.length; i += 2) headers.append(rawHeaders[i], rawHeaders[i + 1]);
    const request = on(rawHeaders, url);
    const result = await auth.check(
      new Request(`https://localhost${url}`, { headers }),
      request.connection,
    );
    return result.response?.status ?? 200;
  };
  const fast = (rawHeaders: string[], url = CUSTOM_PATH): boolean =>
    auth.allowsWithoutIo!(on(rawHeaders, url));

  before(async () => {
    pki = makeTestPki();
    fake = await startFakeAuthApi();
    auth = await reviewingAuth(pki, fake, () => clock);
    peer = {
      authorized: true,
      authorizationError: null,
      commonName: "front-proxy-client",
      organizations: [],
      chain: [new Uint8Array(new X509Certificate(pki.frontProxy.cert).raw)],
      notAfter: clock + 3_600_000,
    };
  });
  after(async () => {
    auth.stop();
    await fake.close();
  });
  beforeEach(() => {
    fake.sars.length = 0;
  });

  it("gives users that take turns on one connection each their own decision", async () => {
    fake.decide = (spec) => ({ allowed: spec.user === HPA_USER });
    assert.equal(await slow(hpa), 200);
    assert.equal(await slow(mallory), 403);
    assert.deepEqual(
      [fast(hpa), fast(mallory), fast(hpa), fast(mallory), fast(hpa)],
      [true, false, true, false, true],
    );
    assert.equal(fake.sars.length, 2);
  });

  it("tells apart requests of one user whose groups or extras differ", async () => {
    fake.decide = (spec) => ({ allowed: spec.extra?.scopes?.[0] === "metrics" });
    const masters = ["X-Remote-User", "ops", "X-Remote-Group", "system:masters"];
    const plain = ["X-Remote-User", "ops", "X-Remote-Group", "system:serviceaccounts"];
    const scoped = (scope: string) => [...plain, "X-Remote-Extra-Scopes", scope];
    assert.equal(await slow(scoped("metrics")), 200);
    assert.equal(await slow(scoped("other")), 403);
    assert.deepEqual(
      [fast(masters), fast(plain), fast(masters), fast(scoped("metrics")), fast(scoped("other"))],
      [true, false, true, true, false],
    );
    assert.equal(fast(scoped("metrics")), true);
    // system:masters is allowed without a review; the two scoped users had one each
    assert.deepEqual(fake.sars.map((s) => s.extra?.scopes), [["metrics"], ["other"]]);
  });

  it("reads identity header names in any case and no other header as one", async () => {
    fake.decide = (spec) => ({ allowed: spec.user === HPA_USER });
    assert.equal(await slow(hpa), 200);
    const lower = ["x-remote-user", HPA_USER, "x-remote-group", "system:serviceaccounts"];
    assert.equal(fast(lower), true);
    assert.equal(fast(["X-Remote-Username", HPA_USER]), false);
    assert.equal(fast(["Accept", "*/*", ...hpa, "User-Agent", "kube-controller-manager"]), true);
    // a group sent twice is another user (two groups), not the one reviewed
    assert.equal(fast([...hpa, "X-Remote-Group", "system:serviceaccounts"]), false);
    // and one without the group too
    assert.equal(fast(hpa), true);
    assert.equal(fast(["X-Remote-User", HPA_USER]), false);
  });

  it("keeps one decision per URL", async () => {
    fake.decide = (spec) => ({
      allowed: spec.user === HPA_USER && spec.resourceAttributes?.namespace === "default",
    });
    assert.equal(await slow(hpa, CUSTOM_PATH), 200);
    assert.equal(await slow(hpa, CUSTOM_PATH.replace("/default/", "/other/")), 403);
    assert.equal(fast(hpa, CUSTOM_PATH), true);
    assert.equal(fast(hpa, CUSTOM_PATH.replace("/default/", "/other/")), false);
    assert.equal(fast(hpa, EXTERNAL_PATH), false); // not reviewed yet
  });

  it("still decides right after more users than it keeps", async () => {
    fake.decide = (spec) => ({ allowed: spec.user === HPA_USER });
    assert.equal(await slow(hpa), 200);
    assert.equal(await slow(mallory), 403);
    for (let i = 0; i < 1_100; i++) {
      assert.equal(fast(["X-Remote-User", `user-${i}`]), false);
    }
    assert.deepEqual([fast(hpa), fast(mallory)], [true, false]);
  });
});

describe("the extension-apiserver-authentication ConfigMap", () => {
  let pki: TestPki;
  let fake: FakeAuthApi;

  const configMapFor = (requestHeaderCa: string, names: string[]) => ({
    "client-ca-file": pki.clientCa.cert,
    "requestheader-client-ca-file": requestHeaderCa,
    "requestheader-allowed-names": JSON.stringify(names),
    "requestheader-username-headers": '["X-Remote-User"]',
    "requestheader-group-headers": '["X-Remote-Group"]',
    "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
  });

  before(async () => {
    pki = makeTestPki();
    fake = await startFakeAuthApi();
    fake.decide = () => ({ allowed: true });
  });
  after(async () => {
    await fake.close();
  });

  it("supplies the CAs and header names, and is reloaded when it changes", async () => {
    fake.configMap = configMapFor(pki.requestHeaderCa.cert, ["front-proxy-client"]);
    const log = memoryLog();
    const { auth, server } = await startServer(pki, { kubeRequest: fake.kubeRequest, log });
    const asProxy = (cert = pki.frontProxy) =>
      httpsGet({ port: server.port, path: "/apis", cert, headers: { "X-Remote-User": "hpa" } });
    try {
      assert.equal(auth.mode(), "delegated");
      assert.equal((await asProxy()).status, 200);
      assert.equal((await asProxy(pki.otherProxy)).status, 401);
      assert.equal((await asProxy(pki.strangerProxy)).status, 401);

      // the aggregator's CA is rotated to what was the stranger CA, with other allowed names
      fake.configMap = configMapFor(pki.strangerCa.cert, ["front-proxy-client", "other-proxy"]);
      await auth.refresh();
      assert.equal((await asProxy(pki.strangerProxy)).status, 200);
      assert.equal((await asProxy(pki.frontProxy)).status, 401);
      assert.equal(auth.clientCaBundle().includes(pki.strangerCa.cert.trim()), true);
      assert.deepEqual(configLines(log), [
        "info authentication config loaded from the configmap",
        "info authentication config changed",
      ]);
    } finally {
      auth.stop();
      await server.close();
    }
  });

  it("checks a connection's certificate chain once per CA bundle, and again after a change", async () => {
    fake.configMap = configMapFor(pki.requestHeaderCa.cert, ["front-proxy-client"]);
    const { auth, server } = await startServer(pki, { kubeRequest: fake.kubeRequest });
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
    const proto = X509Certificate.prototype;
    const verify = proto.verify;
    let verified = 0;
    proto.verify = function (this: X509Certificate, key: KeyObject): boolean {
      verified++;
      return verify.call(this, key);
    };
    /** A read on the agent's one connection: its status and the connection's local port. */
    const read = () =>
      new Promise<[number, number | undefined]>((resolve, reject) => {
        const req = https.get({
          host: "127.0.0.1",
          port: server.port,
          path: "/apis",
          agent,
          rejectUnauthorized: false,
          cert: pki.frontProxy.cert,
          key: pki.frontProxy.key,
          headers: { "X-Remote-User": "hpa" },
        }, (res) => {
          res.resume();
          res.on("end", () => resolve([res.statusCode ?? 0, req.socket?.localPort]));
        });
        req.on("error", reject);
      });
    try {
      const [first, port] = await read();
      assert.equal(first, 200);
      const once = verified;
      assert.ok(once > 0, "the chain was checked");
      for (let i = 0; i < 4; i++) assert.deepEqual(await read(), [200, port]);
      assert.equal(verified, once, "no new check on the same connection");
      // the aggregator's CA is rotated: the open connection's chain no longer ends in it
      fake.configMap = configMapFor(pki.strangerCa.cert, ["front-proxy-client"]);
      await auth.refresh();
      assert.deepEqual(await read(), [401, port]);
      assert.ok(verified > once, "checked again against the new bundle");
    } finally {
      proto.verify = verify;
      agent.destroy();
      auth.stop();
      await server.close();
    }
  });

  it("keeps the last good config when a reload fails", async () => {
    fake.configMap = configMapFor(pki.requestHeaderCa.cert, ["front-proxy-client"]);
    const log = memoryLog();
    const { auth, server } = await startServer(pki, { kubeRequest: fake.kubeRequest, log });
    try {
      fake.failWith = 500;
      await auth.refresh();
      fake.failWith = null;
      fake.configMap = { ...fake.configMap, "requestheader-allowed-names": "not json" };
      await auth.refresh();
      const res = await httpsGet({
        port: server.port,
        path: "/apis",
        cert: pki.frontProxy,
        headers: { "X-Remote-User": "hpa" },
      });
      assert.equal(res.status, 200);
      assert.deepEqual(configLines(log), [
        "info authentication config loaded from the configmap",
        "warn keeping the last good authentication config",
        "warn keeping the last good authentication config",
      ]);
      assert.deepEqual(log.fields.slice(1).map((f) => f?.error), [
        "reading configmap kube-system/extension-apiserver-authentication: status 500",
        'invalid JSON in key "requestheader-allowed-names" of configmap extension-apiserver-authentication',
      ]);
    } finally {
      auth.stop();
      await server.close();
    }
  });

  it("fails start when it cannot be read, unless failures are tolerated", async () => {
    fake.failWith = 403;
    try {
      await assert.rejects(createDelegatedAuth({ kubeRequest: fake.kubeRequest }).start(), {
        message: "reading configmap kube-system/extension-apiserver-authentication: status 403",
      });
      const log = memoryLog();
      const tolerant = createDelegatedAuth({
        kubeRequest: fake.kubeRequest,
        tolerateLookupFailure: true,
        log,
      });
      await tolerant.start();
      tolerant.stop();
      assert.deepEqual(log.lines, [
        "warn starting without the extension-apiserver-authentication configmap",
      ]);
    } finally {
      fake.failWith = null;
    }
  });

  it("is not read with --authentication-skip-lookup", async () => {
    const reads = fake.configMapReads;
    const auth = createDelegatedAuth({ kubeRequest: fake.kubeRequest, lookupConfigMap: false });
    await auth.start();
    await auth.refresh();
    auth.stop();
    assert.equal(fake.configMapReads, reads);
    assert.deepEqual(auth.config(), { clientCa: "", requestHeader: null });
  });

  it("yields to the requestheader and client CA flags", () => {
    const flags = flagsConfig(pki);
    const config = configFromConfigMap(configMapFor(pki.strangerCa.cert, ["x"]), flags);
    assert.deepEqual(config, { clientCa: flags.clientCa, requestHeader: flags.requestHeader });
  });

  it("reads every requestheader key", () => {
    const config = configFromConfigMap({
      "requestheader-client-ca-file": "CA",
      "requestheader-allowed-names": '["front-proxy-client"]',
      "requestheader-username-headers": '["X-Remote-User"]',
      "requestheader-uid-headers": '["X-Remote-Uid"]',
      "requestheader-group-headers": '["X-Remote-Group"]',
      "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
    });
    assert.deepEqual(config, {
      clientCa: "",
      requestHeader: {
        clientCa: "CA",
        allowedNames: ["front-proxy-client"],
        usernameHeaders: ["X-Remote-User"],
        uidHeaders: ["X-Remote-Uid"],
        groupHeaders: ["X-Remote-Group"],
        extraHeaderPrefixes: ["X-Remote-Extra-"],
      },
    });
  });
});

describe("local use", () => {
  it("allows everything with one warning when there is no CA and no cluster", async () => {
    const log = memoryLog();
    const auth = createDelegatedAuth({ log });
    await auth.start();
    const app = whoAmIApp(auth);
    const res = await app.fetch(
      new Request("https://localhost" + CUSTOM_PATH, { headers: { "X-Remote-User": "admin" } }),
    );
    await app.fetch(new Request("https://localhost/apis"));
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), {
      user: { name: "system:anonymous", groups: ["system:unauthenticated"], extra: {} },
      remoteUser: null,
      remoteGroup: null,
    });
    assert.equal(auth.mode(), "local");
    assert.equal(auth.clientCaBundle(), "");
    assert.deepEqual(log.lines, [
      "warn no client CA and no cluster: authentication and authorization are off, every request is allowed",
    ]);
  });

  it("allows authenticated users without SubjectAccessReview when CAs are set but no cluster", async () => {
    const pki = makeTestPki();
    const log = memoryLog();
    const { auth, server } = await startServer(pki, { ...flagsConfig(pki), log });
    try {
      const alice = await httpsGet({ port: server.port, path: CUSTOM_PATH, cert: pki.alice });
      const anonymous = await httpsGet({ port: server.port, path: CUSTOM_PATH });
      assert.equal(alice.status, 200);
      assert.equal(anonymous.status, 401);
      assert.deepEqual(log.lines, [
        "warn no cluster: bearer tokens and SubjectAccessReview are off, every authenticated request is allowed",
      ]);
    } finally {
      auth.stop();
      await server.close();
    }
  });
});

describe("group reviews: a user that reads many objects of a group is asked about the group", () => {
  const HPA_USER = "system:serviceaccount:kube-system:horizontal-pod-autoscaler";
  const hpa = [
    "X-Remote-User",
    HPA_USER,
    "X-Remote-Group",
    "system:serviceaccounts",
    "X-Remote-Group",
    "system:authenticated",
  ];
  const groups = ["system:serviceaccounts", "system:authenticated"];
  const object = (ns: string, name: string) =>
    `/apis/custom.metrics.k8s.io/v1beta2/namespaces/${ns}/scalingschedules.zalando.org/${name}/${name}`;
  const external = (ns: string) =>
    `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/queue-length?labelSelector=queue%3Dq1`;
  const GROUP_GET = {
    resourceAttributes: {
      verb: "get",
      group: "custom.metrics.k8s.io",
      version: "v1beta2",
      resource: "*",
    },
    user: HPA_USER,
    groups,
  };
  const exactGet = (ns: string, name: string) => ({
    resourceAttributes: {
      namespace: ns,
      verb: "get",
      group: "custom.metrics.k8s.io",
      version: "v1beta2",
      resource: "scalingschedules.zalando.org",
      subresource: name,
      name,
    },
    user: HPA_USER,
    groups,
  });
  let pki: TestPki;
  let fake: FakeAuthApi;
  let peer: PeerCertificate;
  let clock = 7_000_000;

  const connection = (rawHeaders: string[]) => ({
    remoteAddress: "127.0.0.1",
    encrypted: true,
    peerCertificate: peer,
    rawHeaders,
  });
  /** The status `auth.check` answers for a GET of `url` with `rawHeaders`. */
  const slow = async (auth: DelegatedAuth, url: string, rawHeaders = hpa): Promise<number> => {
    const headers = new Headers();
    for (let i = 0; i < rawHeaders.length; i += 2) headers.append(rawHeaders[i], rawHeaders[i + 1]);
    const result = await auth.check(
      new Request(`https://localhost${url}`, { headers }),
      connection(rawHeaders),
    );
    return result.response?.status ?? 200;
  };
  const fast = (auth: DelegatedAuth, url: string, rawHeaders = hpa): boolean =>
    auth.allowsWithoutIo!({ method: "GET", url, headers: {}, connection: connection(rawHeaders) });
  const newAuth = async (extra: Partial<DelegatedAuthOptions> = {}) => {
    const auth = createDelegatedAuth({
      ...flagsConfig(pki),
      kubeRequest: fake.kubeRequest,
      lookupConfigMap: false,
      now: () => clock,
      ...extra,
    });
    await auth.start();
    return auth;
  };

  before(async () => {
    pki = makeTestPki();
    fake = await startFakeAuthApi();
    peer = {
      authorized: true,
      authorizationError: null,
      commonName: "front-proxy-client",
      organizations: [],
      chain: [new Uint8Array(new X509Certificate(pki.frontProxy.cert).raw)],
      notAfter: clock + 3_600_000,
    };
  });
  after(async () => {
    await fake.close();
  });
  beforeEach(() => {
    fake.sars.length = 0;
    fake.failWith = null;
  });

  it("asks the request's own question first, the group's at the second object, then none", async () => {
    const auth = await newAuth();
    fake.decide = () => ({ allowed: true });
    assert.equal(await slow(auth, object("a", "s1")), 200);
    assert.equal(await slow(auth, object("b", "s2")), 200);
    assert.equal(await slow(auth, object("c", "s3")), 200);
    assert.equal(await slow(auth, object("a", "s1")), 200);
    assert.deepEqual(fake.sars, [exactGet("a", "s1"), GROUP_GET]);
    // never read before, yet allowed without I/O: the group's allow decides it
    assert.equal(fast(auth, object("d", "s4")), true);
    assert.deepEqual(auth.reviewStats!(), {
      cacheEntries: 2,
      reviews: 2,
      groupReviews: 1,
      // s2 (the group review's answer), s3 and s1 again (its cached allow)
      decidedByGroup: 3,
    });
  });

  it("asks about each API group and verb apart (list for external metrics)", async () => {
    const auth = await newAuth();
    fake.decide = () => ({ allowed: true });
    for (const ns of ["a", "b", "c"]) assert.equal(await slow(auth, external(ns)), 200);
    assert.deepEqual(fake.sars.map((s) => s.resourceAttributes), [
      {
        namespace: "a",
        verb: "list",
        group: "external.metrics.k8s.io",
        version: "v1beta1",
        resource: "queue-length",
      },
      { verb: "list", group: "external.metrics.k8s.io", version: "v1beta1", resource: "*" },
    ]);
    // the custom metrics group is another question
    assert.equal(fast(auth, object("a", "s1")), false);
  });

  it("keeps asking one by one when the group is denied, and caches that denial", async () => {
    const auth = await newAuth();
    fake.decide = (spec) => ({
      allowed: spec.resourceAttributes.namespace === "a",
      reason: spec.resourceAttributes.resource === "*" ? "no rule for every resource" : "",
    });
    assert.equal(await slow(auth, object("a", "s1")), 200);
    assert.equal(await slow(auth, object("b", "s2")), 403);
    assert.equal(await slow(auth, object("a", "s3")), 200);
    assert.deepEqual(fake.sars, [
      exactGet("a", "s1"),
      GROUP_GET,
      exactGet("b", "s2"),
      exactGet("a", "s3"),
    ]);
    assert.deepEqual(
      [fast(auth, object("a", "s1")), fast(auth, object("b", "s2")), fast(auth, object("a", "s9"))],
      [true, false, false],
    );
  });

  it("asks again after the TTL: the request's own question first", async () => {
    const auth = await newAuth();
    fake.decide = () => ({ allowed: true });
    assert.equal(await slow(auth, object("a", "s1")), 200);
    assert.equal(await slow(auth, object("b", "s2")), 200);
    clock += 10_000;
    assert.equal(fast(auth, object("c", "s3")), false);
    assert.equal(await slow(auth, object("c", "s3")), 200);
    assert.equal(await slow(auth, object("d", "s4")), 200);
    assert.equal(await slow(auth, object("e", "s5")), 200);
    assert.deepEqual(fake.sars, [exactGet("a", "s1"), GROUP_GET, exactGet("c", "s3"), GROUP_GET]);
  });

  it("falls back to the request's own question when the group review fails", async () => {
    const auth = await newAuth();
    fake.decide = () => ({ allowed: true });
    assert.equal(await slow(auth, object("a", "s1")), 200);
    let calls = 0;
    const failing = await newAuth({
      kubeRequest: (req) =>
        ++calls === 2 ? Promise.reject(new Error("gone")) : fake.kubeRequest(req),
    });
    assert.equal(await slow(failing, object("a", "s1")), 200);
    assert.equal(await slow(failing, object("b", "s2")), 200);
    assert.equal(calls, 3);
    assert.deepEqual(fake.sars.slice(1), [exactGet("a", "s1"), exactGet("b", "s2")]);
  });

  it("asks only the request's own questions with groupReviews: false", async () => {
    const auth = await newAuth({ groupReviews: false });
    fake.decide = () => ({ allowed: true });
    assert.equal(await slow(auth, object("a", "s1")), 200);
    assert.equal(await slow(auth, object("b", "s2")), 200);
    assert.deepEqual(fake.sars, [exactGet("a", "s1"), exactGet("b", "s2")]);
  });

  it("has at most maxConcurrentReviews reviews in flight", async () => {
    let inFlight = 0;
    let most = 0;
    const gates: Array<() => void> = [];
    const auth = createDelegatedAuth({
      ...flagsConfig(pki),
      lookupConfigMap: false,
      now: () => clock,
      groupReviews: false,
      kubeRequest: async (req) => {
        inFlight++;
        most = Math.max(most, inFlight);
        await new Promise<void>((go) => gates.push(go));
        inFlight--;
        return fake.kubeRequest(req);
      },
    });
    fake.decide = () => ({ allowed: true });
    // (createDelegatedAuth's default is 16; 20 distinct questions at once)
    const answers = Promise.all(
      Array.from({ length: 20 }, (_, i) => slow(auth, object("a", `s${i}`))),
    );
    while (gates.length < 16) await new Promise((r) => setTimeout(r, 1));
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(gates.length, 16);
    while (gates.length > 0) {
      gates.shift()!();
      await new Promise((r) => setTimeout(r, 1));
    }
    while (fake.sars.length < 20) {
      gates.shift()?.();
      await new Promise((r) => setTimeout(r, 1));
    }
    assert.deepEqual(await answers, new Array(20).fill(200));
    assert.equal(most, 16);
  });
});
