import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Buffer } from "node:buffer";
import {
  inClusterKubeConfig,
  type KubeConfig,
  loadKubeConfig,
  parseKubeconfig,
} from "../../src/cluster/kubeconfig.ts";
import { KubeHttp } from "../../src/cluster/kube_http.ts";
import { execCredentialScript, writeExecPlugin } from "../fakes/kubeconfig.ts";
import { FakeKubeApi } from "../fakes/kube_api.ts";

const T0 = Date.parse("2026-01-15T12:00:00Z");

function b64(text: string): string {
  return Buffer.from(text).toString("base64");
}

/** A folder for files a kubeconfig names; removed after `body`. */
async function withDir(body: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "kubeconfig-test-"));
  try {
    await body(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A kubeconfig with one cluster, one user and one context, as YAML. */
function config(cluster: Record<string, unknown>, user: Record<string, unknown>): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "c", cluster: { server: "https://k8s.test:6443", ...cluster } }],
    users: [{ name: "u", user }],
    contexts: [{ name: "ctx", context: { cluster: "c", user: "u", namespace: "team-a" } }],
    "current-context": "ctx",
  });
}

/** An ExecCredential as an exec plugin writes it. */
function credential(status: Record<string, unknown>, apiVersion = "v1"): string {
  return JSON.stringify({
    apiVersion: `client.authentication.k8s.io/${apiVersion}`,
    kind: "ExecCredential",
    status,
  });
}

/** A config whose user runs `plugin` (client.authentication.k8s.io/v1). */
function execConfig(plugin: string, exec: Record<string, unknown> = {}): string {
  return config({ "certificate-authority-data": b64("CA") }, {
    exec: { apiVersion: "client.authentication.k8s.io/v1", command: plugin, ...exec },
  });
}

describe("parseKubeconfig", () => {
  it("reads the current context's server, namespace, token and TLS data", async () => {
    const kc = parseKubeconfig(config({
      "certificate-authority-data": b64("CA PEM"),
      "tls-server-name": "api.internal",
    }, {
      token: "abc",
      "client-certificate-data": b64("CERT PEM"),
      "client-key-data": b64("KEY PEM"),
    }));
    assert.equal(kc.server, "https://k8s.test:6443");
    assert.equal(kc.namespace, "team-a");
    assert.deepEqual(await kc.credentials(), {
      server: "https://k8s.test:6443",
      headers: { Authorization: "Bearer abc" },
      tls: { ca: "CA PEM", cert: "CERT PEM", key: "KEY PEM", serverName: "api.internal" },
    });
  });

  it("sends basic auth for a username and password, nothing for a user without credentials", async () => {
    const basic = parseKubeconfig(config({}, { username: "admin", password: "s3cret" }));
    assert.deepEqual((await basic.credentials()).headers, {
      Authorization: `Basic ${b64("admin:s3cret")}`,
    });
    const none = parseKubeconfig(config({ "insecure-skip-tls-verify": true }, {}));
    assert.deepEqual(await none.credentials(), {
      server: "https://k8s.test:6443",
      headers: {},
      tls: { insecureSkipVerify: true },
    });
  });

  it("sends no TLS settings to a plain http server", async () => {
    const kc = parseKubeconfig(config({
      server: "http://127.0.0.1:8080/",
      "certificate-authority-data": b64("CA"),
    }, { token: "t" }));
    assert.deepEqual(await kc.credentials(), {
      server: "http://127.0.0.1:8080",
      headers: { Authorization: "Bearer t" },
      tls: {},
    });
  });

  it("resolves relative file paths against the kubeconfig's folder and reads the files", async () => {
    await withDir(async (dir) => {
      await writeFile(join(dir, "ca.crt"), "CA FILE");
      await writeFile(join(dir, "client.crt"), "CERT FILE");
      await writeFile(join(dir, "client.key"), "KEY FILE");
      await writeFile(join(dir, "token"), "file-token\n");
      const path = join(dir, "config");
      await writeFile(
        path,
        config({ "certificate-authority": "ca.crt" }, {
          tokenFile: "token",
          "client-certificate": "client.crt",
          "client-key": join(dir, "client.key"),
        }),
      );
      const kc = loadKubeConfig(path);
      assert.equal(kc.cluster.caFile, join(dir, "ca.crt"));
      assert.equal(kc.user.tokenFile, join(dir, "token"));
      assert.deepEqual(await kc.credentials(), {
        server: "https://k8s.test:6443",
        headers: { Authorization: "Bearer file-token" },
        tls: { ca: "CA FILE", cert: "CERT FILE", key: "KEY FILE" },
      });
    });
  });

  it("reads a token file again after a minute and keeps the last copy while it is missing", async () => {
    await withDir(async (dir) => {
      const clock = { now: T0 };
      const token = join(dir, "token");
      await writeFile(token, "one");
      const kc = parseKubeconfig(config({}, { tokenFile: token }), undefined, {
        now: () => clock.now,
      });
      const auth = async (): Promise<string | undefined> =>
        (await kc.credentials()).headers.Authorization;
      assert.equal(await auth(), "Bearer one");
      await writeFile(token, "two");
      clock.now += 59_000;
      assert.equal(await auth(), "Bearer one");
      clock.now += 1_000;
      assert.equal(await auth(), "Bearer two");
      await unlink(token);
      clock.now += 60_000;
      assert.equal(await auth(), "Bearer two");
      await writeFile(token, "three");
      kc.invalidate(); // what a 401 does
      assert.equal(await auth(), "Bearer three");
    });
  });

  it("names the file, the user and the field of a file it cannot read", async () => {
    const kc = parseKubeconfig(
      config({}, {
        "client-certificate": "/nonexistent/c.crt",
        "client-key": "/nonexistent/c.key",
      }),
      "/etc/kube/config",
    );
    await assert.rejects(
      kc.credentials(),
      /^KubeconfigError: \/etc\/kube\/config: cannot read client-certificate of user "u": ENOENT: no such file or directory, open '\/nonexistent\/c.crt'$/,
    );
  });

  const invalid: Array<[string, string, RegExp]> = [
    ["YAML it cannot parse", "clusters: [", /^KubeconfigError: \/k: invalid YAML: /],
    [
      "a document that is not a map",
      "- a\n- b",
      /^KubeconfigError: \/k: not a kubeconfig \(a map is expected\)$/,
    ],
    [
      "no current-context",
      JSON.stringify({ clusters: [], users: [], contexts: [] }),
      /^KubeconfigError: \/k: current-context is not set$/,
    ],
    [
      "a current-context that is not defined",
      JSON.stringify({ contexts: [], "current-context": "prod" }),
      /^KubeconfigError: \/k: current-context "prod" is not a context$/,
    ],
    [
      "a context naming a missing cluster",
      JSON.stringify({
        contexts: [{ name: "x", context: { cluster: "gone", user: "u" } }],
        "current-context": "x",
      }),
      /^KubeconfigError: \/k: context "x" names cluster "gone", which is not defined$/,
    ],
    [
      "a cluster without a server",
      JSON.stringify({ clusters: [{ name: "c", cluster: {} }] }),
      /^KubeconfigError: \/k: clusters\[0\] \("c"\) has no server$/,
    ],
    [
      "a server that is not a URL",
      JSON.stringify({ clusters: [{ name: "c", cluster: { server: "k8s.test:6443" } }] }),
      /^KubeconfigError: \/k: clusters\[0\] \("c"\): server "k8s.test:6443" is not an http or https URL$/,
    ],
    [
      "data that is not base64",
      config({ "certificate-authority-data": "not base64!" }, {}),
      /^KubeconfigError: \/k: clusters\[0\] \("c"\): certificate-authority-data is not base64$/,
    ],
    [
      "a token that is not a string",
      config({}, { token: 42 }),
      /^KubeconfigError: \/k: users\[0\] \("u"\): token must be a string, not 42$/,
    ],
    [
      "an exec plugin of an unsupported apiVersion",
      config({}, { exec: { command: "aws", apiVersion: "client.authentication.k8s.io/v1alpha1" } }),
      /^KubeconfigError: \/k: users\[0\] \("u"\): exec apiVersion "client.authentication.k8s.io\/v1alpha1" is not supported \(want client.authentication.k8s.io\/v1 or client.authentication.k8s.io\/v1beta1\)$/,
    ],
    [
      "an exec plugin without a command",
      config({}, { exec: { apiVersion: "client.authentication.k8s.io/v1" } }),
      /^KubeconfigError: \/k: users\[0\] \("u"\): exec has no command$/,
    ],
  ];
  for (const [what, text, error] of invalid) {
    it(`refuses ${what}, naming the file and the field`, () => {
      assert.throws(() => parseKubeconfig(text, "/k"), error);
    });
  }

  it("refuses a missing kubeconfig file with its path", () => {
    assert.throws(
      () => loadKubeConfig("/nonexistent/kubeconfig"),
      /^KubeconfigError: cannot read kubeconfig \/nonexistent\/kubeconfig: ENOENT/,
    );
  });
});

describe("exec credential plugins", () => {
  it("runs the plugin with its args, env and KUBERNETES_EXEC_INFO, and keeps the credential until it expires", async () => {
    const plugin = await writeExecPlugin([
      'echo run >> "$(dirname "$0")/runs"',
      'printf "%s|%s|%s" "$1" "$TEAM" "$KUBERNETES_EXEC_INFO" > "$(dirname "$0")/seen"',
      execCredentialScript("tok-1", "2026-01-15T13:00:00Z"),
    ].join("\n"));
    try {
      const clock = { now: T0 };
      const kc = parseKubeconfig(
        execConfig(plugin.path, {
          args: ["--cluster=prod"],
          env: [{ name: "TEAM", value: "autoscaling" }],
          provideClusterInfo: true,
        }),
        undefined,
        { now: () => clock.now, env: { PATH: "/usr/bin:/bin" } },
      );
      assert.deepEqual(await kc.credentials(), {
        server: "https://k8s.test:6443",
        headers: { Authorization: "Bearer tok-1" },
        tls: { ca: "CA" },
      });
      const [arg, team, info] = (await readText(join(plugin.dir, "seen"))).split("|");
      assert.equal(arg, "--cluster=prod");
      assert.equal(team, "autoscaling");
      assert.deepEqual(JSON.parse(info), {
        apiVersion: "client.authentication.k8s.io/v1",
        kind: "ExecCredential",
        spec: {
          interactive: false,
          cluster: { server: "https://k8s.test:6443", "certificate-authority-data": b64("CA") },
        },
      });
      // two requests at once run the plugin once
      await Promise.all([kc.credentials(), kc.credentials()]);
      clock.now = Date.parse("2026-01-15T12:59:59Z");
      await kc.credentials();
      assert.equal(await readText(join(plugin.dir, "runs")), "run\n");
      clock.now = Date.parse("2026-01-15T13:00:00Z");
      await kc.credentials();
      assert.equal(await readText(join(plugin.dir, "runs")), "run\nrun\n");
      kc.invalidate();
      await kc.credentials();
      assert.equal(await readText(join(plugin.dir, "runs")), "run\nrun\nrun\n");
    } finally {
      await plugin.remove();
    }
  });

  it("uses a client certificate the plugin answers (v1beta1)", async () => {
    const doc = credential({ clientCertificateData: "CERT", clientKeyData: "KEY" }, "v1beta1");
    const plugin = await writeExecPlugin(`echo '${doc}'`);
    try {
      const kc = parseKubeconfig(
        execConfig(plugin.path, { apiVersion: "client.authentication.k8s.io/v1beta1" }),
      );
      assert.deepEqual((await kc.credentials()).tls, { ca: "CA", cert: "CERT", key: "KEY" });
      assert.deepEqual((await kc.credentials()).headers, {});
    } finally {
      await plugin.remove();
    }
  });

  it("resolves a relative command with a path separator against the kubeconfig's folder", async () => {
    const plugin = await writeExecPlugin(execCredentialScript("rel"));
    try {
      const kc = parseKubeconfig(execConfig("./plugin.sh"), join(plugin.dir, "config"));
      assert.equal(kc.user.exec?.command, join(plugin.dir, "plugin.sh"));
      assert.equal((await kc.credentials()).headers.Authorization, "Bearer rel");
      const onPath = parseKubeconfig(execConfig("aws"), join(plugin.dir, "config"));
      assert.equal(onPath.user.exec?.command, "aws");
    } finally {
      await plugin.remove();
    }
  });

  const failures: Array<[string, string, Record<string, unknown>, (plugin: string) => RegExp]> = [
    [
      "exits with an error",
      "echo 'token expired, run aws sso login' >&2; exit 3",
      {},
      (p) =>
        new RegExp(
          `^KubeconfigError: exec plugin "${p}" of user "u" exited with code 3: token expired, run aws sso login$`,
        ),
    ],
    [
      "writes something that is not JSON",
      "echo hello",
      {},
      (p) =>
        new RegExp(
          `^KubeconfigError: exec plugin "${p}" of user "u" wrote no ExecCredential: "hello\\\\n"$`,
        ),
    ],
    [
      "answers another apiVersion",
      `echo '${credential({ token: "x" }, "v1beta1")}'`,
      {},
      (p) =>
        new RegExp(
          `^KubeconfigError: exec plugin "${p}" of user "u" answered apiVersion "client.authentication.k8s.io/v1beta1", the kubeconfig asks for "client.authentication.k8s.io/v1"$`,
        ),
    ],
    [
      "answers neither a token nor a certificate",
      `echo '${credential({})}'`,
      {},
      (p) =>
        new RegExp(
          `^KubeconfigError: exec plugin "${p}" of user "u": status has neither a token nor a client certificate$`,
        ),
    ],
    [
      "answers a certificate without its key",
      `echo '${credential({ clientCertificateData: "C" })}'`,
      {},
      (p) =>
        new RegExp(
          `^KubeconfigError: exec plugin "${p}" of user "u": status has clientCertificateData or clientKeyData without the other$`,
        ),
    ],
    [
      "answers an expiry it cannot read",
      `echo '${credential({ token: "x", expirationTimestamp: "tomorrow" })}'`,
      {},
      (p) =>
        new RegExp(
          `^KubeconfigError: exec plugin "${p}" of user "u": invalid expirationTimestamp "tomorrow"$`,
        ),
    ],
    [
      "wants a terminal",
      execCredentialScript("x"),
      { interactiveMode: "Always" },
      (p) =>
        new RegExp(
          `^KubeconfigError: exec plugin "${p}" of user "u": interactiveMode is Always, and the adapter has no terminal$`,
        ),
    ],
  ];
  for (const [what, script, exec, error] of failures) {
    it(`fails with the plugin's name when it ${what}`, async () => {
      const plugin = await writeExecPlugin(script);
      try {
        const kc = parseKubeconfig(execConfig(plugin.path, exec));
        await assert.rejects(kc.credentials(), error(plugin.path.replace(/[.]/g, "\\.")));
      } finally {
        await plugin.remove();
      }
    });
  }

  it("names a plugin that is not installed, with its install hint", async () => {
    const kc = parseKubeconfig(
      execConfig("/nonexistent/gke-gcloud-auth-plugin", {
        installHint: "install it with gcloud components install",
      }),
    );
    await assert.rejects(
      kc.credentials(),
      /^KubeconfigError: exec plugin "\/nonexistent\/gke-gcloud-auth-plugin" of user "u" not found \(install it with gcloud components install\)$/,
    );
  });

  it("kills a plugin that does not answer in time, and runs it again on the next request", async () => {
    const plugin = await writeExecPlugin([
      'echo run >> "$(dirname "$0")/runs"',
      "exec sleep 60",
    ].join("\n"));
    try {
      const kc = parseKubeconfig(execConfig(plugin.path), undefined, { execTimeoutMs: 200 });
      await assert.rejects(
        kc.credentials(),
        new RegExp(`^KubeconfigError: exec plugin ".*" of user "u" did not answer within 200ms$`),
      );
      await assert.rejects(kc.credentials(), /did not answer within 200ms$/);
      assert.equal(await readText(join(plugin.dir, "runs")), "run\nrun\n");
    } finally {
      await plugin.remove();
    }
  });

  it("runs the plugin again after the API answers 401", async () => {
    const api = await FakeKubeApi.start();
    const plugin = await writeExecPlugin([
      'n=$(cat "$(dirname "$0")/n" 2>/dev/null || echo 0)',
      'echo $((n + 1)) > "$(dirname "$0")/n"',
      `echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"tok-'$n'"}}'`,
    ].join("\n"));
    const kc = parseKubeconfig(JSON.stringify({
      clusters: [{ name: "c", cluster: { server: api.url } }],
      users: [{
        name: "u",
        user: { exec: { apiVersion: "client.authentication.k8s.io/v1", command: plugin.path } },
      }],
      contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
      "current-context": "x",
    }));
    const http = new KubeHttp(kc);
    try {
      api.failNextRequests(1, 401);
      assert.equal((await http.request("GET", "/api/v1/pods")).status, 401);
      assert.equal((await http.request("GET", "/api/v1/pods")).status, 200);
      assert.equal((await http.request("GET", "/api/v1/pods")).status, 200);
      assert.deepEqual(api.requests.map((r) => r.authorization), [
        "Bearer tok-0",
        "Bearer tok-1",
        "Bearer tok-1",
      ]);
    } finally {
      await http.close();
      await api.stop();
      await plugin.remove();
    }
  });
});

describe("inClusterKubeConfig", () => {
  it("reads the service account's token, CA and namespace and the service's address", async () => {
    await withDir(async (dir) => {
      await writeFile(join(dir, "token"), "sa-token");
      await writeFile(join(dir, "ca.crt"), "SA CA");
      await writeFile(join(dir, "namespace"), "kube-system\n");
      const kc: KubeConfig = inClusterKubeConfig(
        { KUBERNETES_SERVICE_HOST: "10.0.0.1", KUBERNETES_SERVICE_PORT: "443" },
        { dir },
      );
      assert.equal(kc.namespace, "kube-system");
      assert.equal(kc.source, "in-cluster config");
      assert.deepEqual(await kc.credentials(), {
        server: "https://10.0.0.1:443",
        headers: { Authorization: "Bearer sa-token" },
        tls: { ca: "SA CA" },
      });
      const v6 = inClusterKubeConfig(
        { KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "6443" },
        { dir },
      );
      assert.equal(v6.server, "https://[fd00::1]:6443");
    });
  });

  it("says what is missing outside a pod", () => {
    assert.throws(
      () => inClusterKubeConfig({}),
      /^KubeconfigError: in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set \(not running in a pod\? pass --kubeconfig\)$/,
    );
  });
});

describe("legacy auth-provider users", () => {
  it("get their token from @kubernetes/client-node (oidc id-token)", async () => {
    const payload = Buffer.from(JSON.stringify({ exp: 4102444800, sub: "me" })).toString(
      "base64url",
    );
    const idToken = `eyJhbGciOiJub25lIn0.${payload}.sig`;
    const kc = parseKubeconfig(config({}, {
      "auth-provider": {
        name: "oidc",
        config: {
          "id-token": idToken,
          "client-id": "kubectl",
          "idp-issuer-url": "https://idp.test",
        },
      },
    }));
    assert.deepEqual((await kc.credentials()).headers, { Authorization: `Bearer ${idToken}` });
  });

  it("name the provider and the user when the library fails", async () => {
    // a header that is not base64url JSON: the library cannot read the token
    const unreadable = "a.eyJleHAiOjF9.c";
    const kc = parseKubeconfig(
      config({}, { "auth-provider": { name: "oidc", config: { "id-token": unreadable } } }),
      "/k",
    );
    await assert.rejects(
      kc.credentials(),
      /^KubeconfigError: \/k: auth-provider "oidc" of user "u": .+/,
    );
  });
});

function readText(path: string): Promise<string> {
  return readFile(path, "utf8");
}
