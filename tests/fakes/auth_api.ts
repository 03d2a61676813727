/**
 * A fake of the three kube-apiserver endpoints delegated authentication uses, on node:http at
 * 127.0.0.1 (random port): TokenReview and SubjectAccessReview (POST, answered 201 with the
 * documented `status`), and GET of the `kube-system/extension-apiserver-authentication`
 * ConfigMap. Tests set the answers and read every review they received. Also builds the test
 * PKI: a requestheader CA with a front-proxy client certificate, a client CA with a user
 * certificate, and a stranger CA.
 */
import * as https from "node:https";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { CertificateAndKey } from "../../src/api/certs.ts";
import { createCertificate } from "../../src/api/cert_issue.ts";
import type { KubeRequest } from "../../src/api/auth.ts";

/** The decision for one SubjectAccessReview spec. */
export interface SarDecision {
  allowed: boolean;
  denied?: boolean;
  reason?: string;
}

/** A user as TokenReview returns it. */
export interface TokenUser {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** The fake server. */
export interface FakeAuthApi {
  url: string;
  /** Decides each SubjectAccessReview (default: deny everything with no reason). */
  decide: (spec: Record<string, any>) => SarDecision;
  /** Valid bearer tokens. */
  tokens: Map<string, TokenUser>;
  /** The ConfigMap's data; null answers 404. */
  configMap: Record<string, string> | null;
  /** When set, every request is answered with this HTTP status (a broken API server). */
  failWith: number | null;
  /** The spec of every SubjectAccessReview received, in order. */
  sars: Record<string, any>[];
  /** The token of every TokenReview received, in order. */
  tokenReviews: string[];
  /** Number of ConfigMap reads. */
  configMapReads: number;
  /** A KubeRequest that talks to this fake with fetch. */
  kubeRequest: KubeRequest;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => resolve(body));
    req.on("error", reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

function notFound(what: string): Record<string, unknown> {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message: `${what} not found`,
    reason: "NotFound",
    code: 404,
  };
}

/** Start the fake on 127.0.0.1. */
export async function startFakeAuthApi(): Promise<FakeAuthApi> {
  const sockets = new Set<Socket>();
  const fake = {
    url: "",
    decide: (_spec: Record<string, any>): SarDecision => ({ allowed: false }),
    tokens: new Map<string, TokenUser>(),
    configMap: null as Record<string, string> | null,
    failWith: null as number | null,
    sars: [] as Record<string, any>[],
    tokenReviews: [] as string[],
    configMapReads: 0,
  };
  const server: Server = createServer(async (req, res) => {
    const body = await readBody(req);
    if (fake.failWith !== null) {
      send(res, fake.failWith, {
        kind: "Status",
        apiVersion: "v1",
        status: "Failure",
        code: fake.failWith,
      });
      return;
    }
    const path = new URL(req.url ?? "/", "http://fake").pathname;
    if (req.method === "POST" && path === "/apis/authorization.k8s.io/v1/subjectaccessreviews") {
      const review = JSON.parse(body);
      fake.sars.push(review.spec);
      const d = fake.decide(review.spec);
      send(res, 201, {
        ...review,
        metadata: { creationTimestamp: null },
        status: {
          allowed: d.allowed,
          ...(d.denied ? { denied: true } : {}),
          ...(d.reason ? { reason: d.reason } : {}),
        },
      });
      return;
    }
    if (req.method === "POST" && path === "/apis/authentication.k8s.io/v1/tokenreviews") {
      const review = JSON.parse(body);
      const token = String(review.spec?.token ?? "");
      fake.tokenReviews.push(token);
      const user = fake.tokens.get(token);
      send(res, 201, {
        ...review,
        metadata: { creationTimestamp: null },
        status: user
          ? { authenticated: true, user, audiences: ["https://kubernetes.default.svc"] }
          : { user: {}, error: "token not valid" },
      });
      return;
    }
    if (
      req.method === "GET" &&
      path === "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"
    ) {
      fake.configMapReads++;
      if (fake.configMap === null) {
        send(res, 404, notFound('configmaps "extension-apiserver-authentication"'));
      } else {
        send(res, 200, {
          kind: "ConfigMap",
          apiVersion: "v1",
          metadata: { name: "extension-apiserver-authentication", namespace: "kube-system" },
          data: fake.configMap,
        });
      }
      return;
    }
    send(res, 404, notFound(path));
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const kubeRequest: KubeRequest = async ({ method, path, body }) => {
    const res = await fetch(fake.url + path, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  return Object.assign(fake, {
    kubeRequest,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  });
}

/** Certificates for authentication tests. */
export interface TestPki {
  /** Serving certificate for 127.0.0.1 and localhost. */
  server: CertificateAndKey;
  requestHeaderCa: CertificateAndKey;
  /** CN front-proxy-client, signed by the requestheader CA. */
  frontProxy: CertificateAndKey;
  /** CN other-proxy, signed by the requestheader CA (not an allowed name). */
  otherProxy: CertificateAndKey;
  clientCa: CertificateAndKey;
  /** CN alice, O dev and ops, signed by the client CA. */
  alice: CertificateAndKey;
  strangerCa: CertificateAndKey;
  /** CN front-proxy-client, signed by the stranger CA. */
  strangerProxy: CertificateAndKey;
}

let shared: TestPki | undefined;

/** The test PKI, made once per process (RSA keys take about a second). */
export function makeTestPki(): TestPki {
  return shared ??= newTestPki();
}

function newTestPki(): TestPki {
  const client = { extendedKeyUsages: ["clientAuth" as const] };
  const requestHeaderCa = createCertificate({ commonName: "front-proxy-ca", isCa: true });
  const clientCa = createCertificate({ commonName: "kubernetes-ca", isCa: true });
  const strangerCa = createCertificate({ commonName: "stranger-ca", isCa: true });
  return {
    server: createCertificate({
      commonName: "localhost",
      hosts: ["localhost", "127.0.0.1"],
      extendedKeyUsages: ["serverAuth"],
    }),
    requestHeaderCa,
    frontProxy: createCertificate({
      commonName: "front-proxy-client",
      issuer: requestHeaderCa,
      ...client,
    }),
    otherProxy: createCertificate({
      commonName: "other-proxy",
      issuer: requestHeaderCa,
      ...client,
    }),
    clientCa,
    alice: createCertificate({
      commonName: "alice",
      organizations: ["dev", "ops"],
      issuer: clientCa,
      ...client,
    }),
    strangerCa,
    strangerProxy: createCertificate({
      commonName: "front-proxy-client",
      issuer: strangerCa,
      ...client,
    }),
  };
}

/** A response read by {@linkcode httpsGet}. */
export interface TlsResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json(): any;
}

/** Options of {@linkcode httpsGet}. */
export interface HttpsGetOptions {
  port: number;
  path: string;
  /** Client certificate to present. */
  cert?: CertificateAndKey;
  /** Request headers; an array value sends the header once per element. */
  headers?: Record<string, string | string[]>;
  /** Verify the server against this CA (default: no verification, like --insecure-skip-tls-verify). */
  ca?: string;
  /** Reuse connections (keep-alive). */
  agent?: https.Agent;
}

/** GET over HTTPS with node:https, on 127.0.0.1. */
export function httpsGet(options: HttpsGetOptions): Promise<TlsResponse> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      {
        host: "127.0.0.1",
        port: options.port,
        path: options.path,
        headers: options.headers,
        ...(options.agent ? { agent: options.agent } : { agent: false }),
        ...(options.ca
          ? { ca: options.ca, servername: "localhost" }
          : { rejectUnauthorized: false }),
        ...(options.cert ? { cert: options.cert.cert, key: options.cert.key } : {}),
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => (text += d));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text,
            json: () => JSON.parse(text),
          }));
      },
    );
    req.on("error", reject);
  });
}
