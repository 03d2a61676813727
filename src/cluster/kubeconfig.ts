/**
 * Kubeconfig files and the in-cluster service account: where the API server is and how to
 * authenticate to it, as client-go reads them.
 *
 * Supported: `server`, `certificate-authority(-data)`, `insecure-skip-tls-verify`,
 * `tls-server-name`; users with `token`, `tokenFile`, `username`/`password`,
 * `client-certificate(-data)`/`client-key(-data)` and `exec` credential plugins
 * (client.authentication.k8s.io v1 and v1beta1). Relative file paths and exec commands with a
 * path separator are resolved against the kubeconfig's folder, as client-go does. Files (token,
 * CA, certificates) are read again after 60 s, so rotated service account tokens are picked up;
 * an exec credential is kept until its `expirationTimestamp`, or until the API answers 401.
 *
 * A user with a legacy `auth-provider` (oidc, azure, gcp) is served by @kubernetes/client-node,
 * loaded only then: that library imports every generated API model (about 10 MiB of heap), which
 * the adapter does not need otherwise.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { isIPv6 } from "node:net";
import { dirname, isAbsolute, join, sep } from "node:path";
import process from "node:process";
import { Buffer } from "node:buffer";
import { load } from "js-yaml";
import type { ClientTls } from "../runtime/tls_fetch.ts";

/** Where a pod's service account token, CA and namespace are mounted. */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** How long a file (token, CA, certificate) read for credentials is used before it is read again. */
const FILE_REFRESH_MS = 60_000;

/** An exec plugin's output is at most this long. */
const EXEC_OUTPUT_LIMIT = 1 << 20;

const EXEC_API_VERSIONS = new Set([
  "client.authentication.k8s.io/v1",
  "client.authentication.k8s.io/v1beta1",
]);

/** A cluster entry: where the API server is and how to verify it. */
export interface KubeconfigCluster {
  name: string;
  server: string;
  /** CA certificates (PEM) from `certificate-authority-data`. */
  caData?: string;
  /** Path of a CA file (`certificate-authority`), absolute. */
  caFile?: string;
  insecureSkipTlsVerify: boolean;
  tlsServerName?: string;
}

/** An exec credential plugin (`users[].user.exec`). */
export interface ExecConfig {
  command: string;
  args: string[];
  env: { name: string; value: string }[];
  apiVersion: string;
  provideClusterInfo: boolean;
  interactiveMode?: string;
  installHint?: string;
}

/** A user entry: how to authenticate. */
export interface KubeconfigUser {
  name: string;
  token?: string;
  tokenFile?: string;
  username?: string;
  password?: string;
  certData?: string;
  certFile?: string;
  keyData?: string;
  keyFile?: string;
  exec?: ExecConfig;
  authProvider?: { name: string; config: Record<string, string> };
}

/** A context entry: a cluster, a user and a default namespace. */
export interface KubeconfigContext {
  name: string;
  cluster: string;
  user: string;
  namespace?: string;
}

/** The headers and TLS settings of the current context, with the server URL. */
export interface KubeCredentials {
  server: string;
  headers: Record<string, string>;
  tls: ClientTls;
}

/** Options of `KubeConfig` and the loaders. */
export interface KubeConfigOptions {
  /** The clock, ms since the epoch (file refresh and exec credential expiry). */
  now?: () => number;
  /** Environment of exec plugins (default the process's). */
  env?: Record<string, string | undefined>;
  /** An exec plugin that has not answered after this long is killed (default 10000 ms). */
  execTimeoutMs?: number;
}

/** A kubeconfig that cannot be used: the message names the file, the entry and the field. */
export class KubeconfigError extends Error {
  override name = "KubeconfigError";
}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Reads the fields of one kubeconfig entry, naming it in errors. */
class Fields {
  readonly #where: string;
  readonly #obj: Json;

  constructor(where: string, obj: Json) {
    this.#where = where;
    this.#obj = obj;
  }

  string(key: string): string | undefined {
    const v = this.#obj[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "string") {
      throw new KubeconfigError(
        `${this.#where}: ${key} must be a string, not ${JSON.stringify(v)}`,
      );
    }
    return v;
  }

  bool(key: string): boolean {
    const v = this.#obj[key];
    if (v === undefined || v === null) return false;
    if (typeof v !== "boolean") {
      throw new KubeconfigError(
        `${this.#where}: ${key} must be true or false, not ${JSON.stringify(v)}`,
      );
    }
    return v;
  }

  /** A base64 field (`*-data`), decoded to text. */
  base64(key: string): string | undefined {
    const v = this.string(key);
    if (v === undefined) return undefined;
    const compact = v.replace(/\s+/g, "");
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 === 1) {
      throw new KubeconfigError(`${this.#where}: ${key} is not base64`);
    }
    return Buffer.from(compact, "base64").toString("utf8");
  }
}

function resolvePath(base: string | undefined, path: string | undefined): string | undefined {
  if (path === undefined || path === "" || base === undefined || isAbsolute(path)) return path;
  return join(base, path);
}

function entries(doc: Json, list: string, item: string, source: string): [string, Json][] {
  const v = doc[list];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new KubeconfigError(`${source}: ${list} must be a list`);
  return v.map((e, i) => {
    const where = `${source}: ${list}[${i}]`;
    if (!isObject(e) || typeof e.name !== "string" || e.name === "") {
      throw new KubeconfigError(`${where} has no name`);
    }
    const body = e[item] ?? {};
    if (!isObject(body)) throw new KubeconfigError(`${where} ("${e.name}"): ${item} must be a map`);
    return [e.name, body];
  });
}

function parseExec(where: string, raw: unknown, base: string | undefined): ExecConfig {
  if (!isObject(raw)) throw new KubeconfigError(`${where}: exec must be a map`);
  const f = new Fields(`${where}: exec`, raw);
  const command = f.string("command");
  if (!command) throw new KubeconfigError(`${where}: exec has no command`);
  const apiVersion = f.string("apiVersion") ?? "";
  if (!EXEC_API_VERSIONS.has(apiVersion)) {
    throw new KubeconfigError(
      `${where}: exec apiVersion "${apiVersion}" is not supported (want ${
        [...EXEC_API_VERSIONS].join(" or ")
      })`,
    );
  }
  const args = raw.args ?? [];
  if (!Array.isArray(args) || args.some((a) => typeof a !== "string")) {
    throw new KubeconfigError(`${where}: exec args must be a list of strings`);
  }
  const env = raw.env ?? [];
  if (
    !Array.isArray(env) ||
    env.some((e) => !isObject(e) || typeof e.name !== "string" || typeof e.value !== "string")
  ) {
    throw new KubeconfigError(`${where}: exec env must be a list of {name, value} strings`);
  }
  const interactiveMode = f.string("interactiveMode");
  const installHint = f.string("installHint");
  return {
    // client-go resolves a relative command only when it names a path, not one found on PATH
    command: command.includes(sep) ? resolvePath(base, command)! : command,
    args: args as string[],
    env: (env as Json[]).map((e) => ({ name: e.name as string, value: e.value as string })),
    apiVersion,
    provideClusterInfo: f.bool("provideClusterInfo"),
    ...(interactiveMode !== undefined ? { interactiveMode } : {}),
    ...(installHint !== undefined ? { installHint } : {}),
  };
}

function definedOnly<T extends object>(obj: T): T {
  for (const k of Object.keys(obj) as (keyof T)[]) if (obj[k] === undefined) delete obj[k];
  return obj;
}

/** The parts of a kubeconfig document (`apiVersion: v1`, `kind: Config`). */
export interface KubeconfigData {
  clusters: KubeconfigCluster[];
  users: KubeconfigUser[];
  contexts: KubeconfigContext[];
  currentContext: string;
}

/**
 * Read a kubeconfig document; relative paths are resolved against `baseDir` (the file's folder).
 * `source` names the document in errors.
 */
export function parseKubeconfigData(
  doc: unknown,
  source: string,
  baseDir?: string,
): KubeconfigData {
  if (!isObject(doc)) throw new KubeconfigError(`${source}: not a kubeconfig (a map is expected)`);
  const clusters = entries(doc, "clusters", "cluster", source).map(([name, c], i) => {
    const where = `${source}: clusters[${i}] ("${name}")`;
    const f = new Fields(where, c);
    const server = f.string("server");
    if (!server) throw new KubeconfigError(`${where} has no server`);
    if (!/^https?:\/\//.test(server)) {
      throw new KubeconfigError(`${where}: server "${server}" is not an http or https URL`);
    }
    return definedOnly<KubeconfigCluster>({
      name,
      server: server.replace(/\/+$/, ""),
      caData: f.base64("certificate-authority-data"),
      caFile: resolvePath(baseDir, f.string("certificate-authority")),
      insecureSkipTlsVerify: f.bool("insecure-skip-tls-verify"),
      tlsServerName: f.string("tls-server-name"),
    });
  });
  const users = entries(doc, "users", "user", source).map(([name, u], i) => {
    const where = `${source}: users[${i}] ("${name}")`;
    const f = new Fields(where, u);
    let authProvider: KubeconfigUser["authProvider"];
    if (u["auth-provider"] !== undefined && u["auth-provider"] !== null) {
      const ap = u["auth-provider"];
      if (!isObject(ap) || typeof ap.name !== "string") {
        throw new KubeconfigError(`${where}: auth-provider must be a map with a name`);
      }
      const config: Record<string, string> = {};
      if (isObject(ap.config)) {
        for (const [k, v] of Object.entries(ap.config)) if (typeof v === "string") config[k] = v;
      }
      authProvider = { name: ap.name, config };
    }
    const user = definedOnly<KubeconfigUser>({
      name,
      token: f.string("token"),
      tokenFile: resolvePath(baseDir, f.string("tokenFile")),
      username: f.string("username"),
      password: f.string("password"),
      certData: f.base64("client-certificate-data"),
      certFile: resolvePath(baseDir, f.string("client-certificate")),
      keyData: f.base64("client-key-data"),
      keyFile: resolvePath(baseDir, f.string("client-key")),
      exec: u.exec === undefined || u.exec === null ? undefined : parseExec(where, u.exec, baseDir),
      authProvider,
    });
    return user;
  });
  const contexts = entries(doc, "contexts", "context", source).map(([name, c], i) => {
    const where = `${source}: contexts[${i}] ("${name}")`;
    const f = new Fields(where, c);
    return definedOnly<KubeconfigContext>({
      name,
      cluster: f.string("cluster") ?? "",
      user: f.string("user") ?? "",
      namespace: f.string("namespace"),
    });
  });
  const current = doc["current-context"];
  return {
    clusters,
    users,
    contexts,
    currentContext: typeof current === "string" ? current : "",
  };
}

interface CachedFile {
  text: string;
  readAt: number;
}

interface ExecCredential {
  token?: string;
  cert?: string;
  key?: string;
  /** ms since the epoch, or undefined for a credential without expiry. */
  expires?: number;
}

/**
 * The current context of a kubeconfig and its credentials. `credentials()` is called before
 * every request: files and exec output are cached (see the module comment).
 */
export class KubeConfig {
  readonly cluster: KubeconfigCluster;
  readonly user: KubeconfigUser;
  readonly context: KubeconfigContext;
  /** Where the config came from (a file path, or "in-cluster config"). */
  readonly source: string;
  readonly #data: KubeconfigData;
  readonly #now: () => number;
  readonly #env: Record<string, string | undefined>;
  readonly #execTimeoutMs: number;
  readonly #files = new Map<string, CachedFile>();
  #execCredential?: ExecCredential;
  #execRun?: Promise<ExecCredential>;
  readonly #execChildren = new Set<{ kill(): void }>();
  #legacy?: Promise<{ applyToHTTPSOptions(opts: object): Promise<void> }>;

  constructor(data: KubeconfigData, source: string, options: KubeConfigOptions = {}) {
    this.#data = data;
    this.source = source;
    this.#now = options.now ?? (() => Date.now());
    this.#env = options.env ?? process.env;
    this.#execTimeoutMs = options.execTimeoutMs ?? 10_000;
    const name = data.currentContext;
    if (name === "") throw new KubeconfigError(`${source}: current-context is not set`);
    const context = data.contexts.find((c) => c.name === name);
    if (!context) {
      throw new KubeconfigError(`${source}: current-context "${name}" is not a context`);
    }
    const cluster = data.clusters.find((c) => c.name === context.cluster);
    if (!cluster) {
      throw new KubeconfigError(
        `${source}: context "${name}" names cluster "${context.cluster}", which is not defined`,
      );
    }
    // a context without a user (or with one not defined) sends no credentials, as kubectl
    const user = data.users.find((u) => u.name === context.user) ?? { name: context.user };
    this.context = context;
    this.cluster = cluster;
    this.user = user;
  }

  /** The API server URL without a trailing slash. */
  get server(): string {
    return this.cluster.server;
  }

  /** The context's default namespace ("default" when it sets none). */
  get namespace(): string {
    return this.context.namespace ?? "default";
  }

  /** The headers and TLS settings for the next request. */
  async credentials(): Promise<KubeCredentials> {
    const { cluster, user } = this;
    const headers: Record<string, string> = {};
    const tls: ClientTls = {};
    if (user.authProvider) {
      Object.assign(headers, await this.#legacyHeaders());
    } else if (user.exec) {
      const c = await this.#exec();
      if (c.token !== undefined) headers.Authorization = `Bearer ${c.token}`;
      if (c.cert !== undefined && c.key !== undefined) {
        tls.cert = c.cert;
        tls.key = c.key;
      }
    }
    if (headers.Authorization === undefined) {
      if (user.token !== undefined && user.token !== "") {
        headers.Authorization = `Bearer ${user.token}`;
      } else if (user.tokenFile) {
        const token = (await this.#file(user.tokenFile, "tokenFile")).trim();
        if (token !== "") headers.Authorization = `Bearer ${token}`;
      } else if (user.username !== undefined || user.password !== undefined) {
        const basic = Buffer.from(`${user.username ?? ""}:${user.password ?? ""}`).toString(
          "base64",
        );
        headers.Authorization = `Basic ${basic}`;
      }
    }
    if (tls.cert === undefined) {
      const cert = user.certData ??
        (user.certFile && await this.#file(user.certFile, "client-certificate"));
      const key = user.keyData ?? (user.keyFile && await this.#file(user.keyFile, "client-key"));
      if (cert && key) {
        tls.cert = cert;
        tls.key = key;
      }
    }
    if (cluster.server.startsWith("http:")) return { server: cluster.server, headers, tls: {} };
    if (cluster.insecureSkipTlsVerify) tls.insecureSkipVerify = true;
    else {
      const ca = cluster.caData ??
        (cluster.caFile && await this.#file(cluster.caFile, "certificate-authority"));
      if (ca) tls.ca = ca;
    }
    if (cluster.tlsServerName) tls.serverName = cluster.tlsServerName;
    return { server: cluster.server, headers, tls };
  }

  /** The API refused the credentials (401): the next request reads them again. */
  invalidate(): void {
    this.#execCredential = undefined;
    if (this.user.tokenFile) this.#files.delete(this.user.tokenFile);
  }

  /** Kill exec plugins still running (a later request starts them again). */
  close(): void {
    for (const c of this.#execChildren) c.kill();
    this.#execChildren.clear();
  }

  async #file(path: string, field: string): Promise<string> {
    const now = this.#now();
    const cached = this.#files.get(path);
    if (cached && now - cached.readAt < FILE_REFRESH_MS) return cached.text;
    let text: string;
    try {
      text = await readFile(path, "utf8");
    } catch (e) {
      // a file that went missing for a moment: the last good copy serves until it is back
      if (cached) return cached.text;
      throw new KubeconfigError(
        `${this.source}: cannot read ${field} of ${this.#userOrCluster(field)}: ${
          (e as Error).message
        }`,
      );
    }
    this.#files.set(path, { text, readAt: now });
    return text;
  }

  #userOrCluster(field: string): string {
    return field === "certificate-authority"
      ? `cluster "${this.cluster.name}"`
      : `user "${this.user.name}"`;
  }

  /** The exec plugin's credential: cached until it expires; one run at a time. */
  async #exec(): Promise<ExecCredential> {
    const cached = this.#execCredential;
    if (cached && (cached.expires === undefined || cached.expires > this.#now())) return cached;
    this.#execRun ??= this.#runExec().finally(() => (this.#execRun = undefined));
    const c = await this.#execRun;
    this.#execCredential = c;
    return c;
  }

  #runExec(): Promise<ExecCredential> {
    const exec = this.user.exec!;
    const where = `exec plugin "${exec.command}" of user "${this.user.name}"`;
    if (exec.interactiveMode === "Always") {
      return Promise.reject(
        new KubeconfigError(`${where}: interactiveMode is Always, and the adapter has no terminal`),
      );
    }
    const info: Json = {
      apiVersion: exec.apiVersion,
      kind: "ExecCredential",
      spec: {
        interactive: false,
        ...(exec.provideClusterInfo
          ? {
            cluster: definedOnly({
              server: this.cluster.server,
              "tls-server-name": this.cluster.tlsServerName,
              "insecure-skip-tls-verify": this.cluster.insecureSkipTlsVerify || undefined,
              "certificate-authority-data": this.cluster.caData &&
                Buffer.from(this.cluster.caData).toString("base64"),
            }),
          }
          : {}),
      },
    };
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(this.#env)) if (v !== undefined) env[k] = v;
    for (const e of exec.env) env[e.name] = e.value;
    env.KUBERNETES_EXEC_INFO = JSON.stringify(info);
    return new Promise<ExecCredential>((resolve, reject) => {
      let child: ReturnType<typeof spawn>;
      try {
        child = spawn(exec.command, exec.args, { env, stdio: ["ignore", "pipe", "pipe"] });
      } catch (e) {
        reject(new KubeconfigError(`${where} cannot start: ${(e as Error).message}`));
        return;
      }
      const handle = { kill: () => child.kill("SIGKILL") };
      this.#execChildren.add(handle);
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let size = 0;
      let failure: string | undefined;
      const timer = setTimeout(() => {
        failure = `did not answer within ${this.#execTimeoutMs}ms`;
        child.kill("SIGKILL");
      }, this.#execTimeoutMs);
      child.stdout!.on("data", (b: Buffer) => {
        size += b.length;
        if (size > EXEC_OUTPUT_LIMIT) {
          failure = `wrote more than ${EXEC_OUTPUT_LIMIT} bytes`;
          child.kill("SIGKILL");
        } else out.push(b);
      });
      child.stderr!.on("data", (b: Buffer) => {
        if (err.reduce((n, x) => n + x.length, 0) < 4096) err.push(b);
      });
      child.on("error", (e: NodeJS.ErrnoException) => {
        failure ??= e.code === "ENOENT"
          ? `not found${exec.installHint ? ` (${exec.installHint.trim()})` : ""}`
          : e.message;
      });
      child.on("close", (code, signal) => {
        clearTimeout(timer);
        this.#execChildren.delete(handle);
        if (failure === undefined && code !== 0) {
          const stderr = Buffer.concat(err).toString("utf8").trim();
          failure = `exited with ${code === null ? `signal ${signal}` : `code ${code}`}${
            stderr ? `: ${stderr}` : ""
          }`;
        }
        if (failure !== undefined) {
          reject(new KubeconfigError(`${where} ${failure}`));
          return;
        }
        try {
          resolve(this.#readExecOutput(Buffer.concat(out).toString("utf8"), where));
        } catch (e) {
          reject(e);
        }
      });
    });
  }

  #readExecOutput(text: string, where: string): ExecCredential {
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      throw new KubeconfigError(
        `${where} wrote no ExecCredential: ${JSON.stringify(text.slice(0, 100))}`,
      );
    }
    const exec = this.user.exec!;
    if (!isObject(doc) || doc.kind !== "ExecCredential") {
      throw new KubeconfigError(
        `${where} wrote no ExecCredential (kind ${JSON.stringify(isObject(doc) ? doc.kind : doc)})`,
      );
    }
    if (doc.apiVersion !== exec.apiVersion) {
      throw new KubeconfigError(
        `${where} answered apiVersion ${
          JSON.stringify(doc.apiVersion)
        }, the kubeconfig asks for "${exec.apiVersion}"`,
      );
    }
    const status = isObject(doc.status) ? doc.status : {};
    const f = new Fields(`${where}: status`, status);
    const token = f.string("token");
    const cert = f.string("clientCertificateData");
    const key = f.string("clientKeyData");
    if ((cert === undefined) !== (key === undefined)) {
      throw new KubeconfigError(
        `${where}: status has clientCertificateData or clientKeyData without the other`,
      );
    }
    if (!token && cert === undefined) {
      throw new KubeconfigError(`${where}: status has neither a token nor a client certificate`);
    }
    const expiry = f.string("expirationTimestamp");
    let expires: number | undefined;
    if (expiry !== undefined) {
      expires = Date.parse(expiry);
      if (Number.isNaN(expires)) {
        throw new KubeconfigError(`${where}: invalid expirationTimestamp "${expiry}"`);
      }
    }
    return definedOnly<ExecCredential>({ token: token || undefined, cert, key, expires });
  }

  /** Headers from @kubernetes/client-node for a user with a legacy auth-provider. */
  async #legacyHeaders(): Promise<Record<string, string>> {
    this.#legacy ??= import("@kubernetes/client-node").then(({ KubeConfig: Legacy }) => {
      const kc = new Legacy();
      kc.loadFromOptions({
        // only the user's headers are taken: the library refuses plain http without this
        clusters: [{
          name: this.cluster.name,
          server: "https://unused.invalid",
          skipTLSVerify: true,
        }],
        users: [{ name: this.user.name, authProvider: this.user.authProvider }],
        contexts: [{ name: this.context.name, cluster: this.cluster.name, user: this.user.name }],
        currentContext: this.context.name,
      });
      return kc;
    });
    const kc = await this.#legacy;
    const opts: { headers: Record<string, unknown> } = { headers: {} };
    try {
      await kc.applyToHTTPSOptions(opts);
    } catch (e) {
      throw new KubeconfigError(
        `${this.source}: auth-provider "${this.user.authProvider?.name}" of user "${this.user.name}": ${
          (e as Error).message
        }`,
      );
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(opts.headers)) if (v !== undefined) headers[k] = String(v);
    return headers;
  }
}

/** Parse kubeconfig YAML (`path` names it in errors and is where relative paths start). */
export function parseKubeconfig(
  text: string,
  path?: string,
  options: KubeConfigOptions = {},
): KubeConfig {
  const source = path ?? "kubeconfig";
  let doc: unknown;
  try {
    doc = load(text);
  } catch (e) {
    throw new KubeconfigError(`${source}: invalid YAML: ${(e as Error).message.split("\n")[0]}`);
  }
  const data = parseKubeconfigData(doc, source, path === undefined ? undefined : dirname(path));
  return new KubeConfig(data, source, options);
}

/**
 * The in-cluster config: the API server from KUBERNETES_SERVICE_HOST and _PORT, the service
 * account's token file (read again every minute) and CA.
 */
export function inClusterKubeConfig(
  env: Record<string, string | undefined> = process.env,
  options: KubeConfigOptions & { dir?: string } = {},
): KubeConfig {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) {
    throw new KubeconfigError(
      "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set " +
        "(not running in a pod? pass --kubeconfig)",
    );
  }
  const dir = options.dir ?? SERVICE_ACCOUNT_DIR;
  let namespace: string | undefined;
  try {
    namespace = readFileSync(join(dir, "namespace"), "utf8").trim() || undefined;
  } catch {
    // optional
  }
  const server = `https://${isIPv6(host) ? `[${host}]` : host}:${port}`;
  return new KubeConfig(
    {
      clusters: [{
        name: "in-cluster",
        server,
        caFile: join(dir, "ca.crt"),
        insecureSkipTlsVerify: false,
      }],
      users: [{ name: "in-cluster", tokenFile: join(dir, "token") }],
      contexts: [{
        name: "in-cluster",
        cluster: "in-cluster",
        user: "in-cluster",
        ...(namespace ? { namespace } : {}),
      }],
      currentContext: "in-cluster",
    },
    "in-cluster config",
    options,
  );
}

/** Load a kubeconfig file, or the in-cluster config when `path` is null or undefined. */
export function loadKubeConfig(
  path: string | null | undefined,
  options: KubeConfigOptions = {},
): KubeConfig {
  if (!path) return inClusterKubeConfig(options.env ?? process.env, options);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new KubeconfigError(`cannot read kubeconfig ${path}: ${(e as Error).message}`);
  }
  return parseKubeconfig(text, path, options);
}
