/**
 * A small Kubernetes API client for the end-to-end harness, the kubelet stand-in and the suite:
 * JSON requests and NDJSON watches over `node:https` with the client certificate or bearer
 * token of a kubeconfig. Nothing here is part of the adapter.
 */
import { readFileSync } from "node:fs";
import { Agent, request as httpsRequest } from "node:https";
import type { IncomingMessage } from "node:http";
import { load } from "js-yaml";

/** Where and how to reach the API. PEM strings, not files. */
export interface KubeCredentials {
  server: string;
  ca: string;
  cert?: string;
  key?: string;
  token?: string;
}

/** A failed API call: the HTTP status and the API's message. */
export class KubeApiError extends Error {
  override name = "KubeApiError";
  constructor(readonly status: number, readonly body: string, message: string) {
    super(message);
  }
}

/** One watch event. */
export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  // deno-lint-ignore no-explicit-any
  object: any;
}

/** Options of {@linkcode KubeClient.request}. */
export interface RequestOptions {
  body?: unknown;
  /** Default `application/json`; patches name their type. */
  contentType?: string;
  /** Milliseconds; default 30 s. */
  timeoutMs?: number;
  /** Send without client certificate or token (to test that the server refuses it). */
  anonymous?: boolean;
}

/** The client. */
export interface KubeClient {
  readonly credentials: KubeCredentials;
  // deno-lint-ignore no-explicit-any
  request(method: string, path: string, options?: RequestOptions): Promise<any>;
  /** Like request, but resolves to null on 404. */
  // deno-lint-ignore no-explicit-any
  get(path: string): Promise<any | null>;
  /**
   * Watch `path` (a collection URL with `watch=1` added here) until `signal` aborts or the
   * server ends the stream; resolves then, rejects on a non-200 answer.
   */
  watch(path: string, onEvent: (event: WatchEvent) => void, signal: AbortSignal): Promise<void>;
}

function dataOrFile(entry: Record<string, string>, field: string): string | undefined {
  if (entry[`${field}-data`]) return Buffer.from(entry[`${field}-data`], "base64").toString("utf8");
  if (entry[field]) return readFileSync(entry[field], "utf8");
  return undefined;
}

/** Read the current context of a kubeconfig file into credentials. */
export function loadKubeconfig(path: string): KubeCredentials {
  // deno-lint-ignore no-explicit-any
  const doc = load(readFileSync(path, "utf8")) as any;
  const ctxName = doc["current-context"];
  // deno-lint-ignore no-explicit-any
  const ctx = doc.contexts?.find((c: any) => c.name === ctxName)?.context;
  if (!ctx) throw new Error(`kubeconfig "${path}" has no current context "${ctxName}"`);
  // deno-lint-ignore no-explicit-any
  const cluster = doc.clusters?.find((c: any) => c.name === ctx.cluster)?.cluster;
  // deno-lint-ignore no-explicit-any
  const user = doc.users?.find((u: any) => u.name === ctx.user)?.user ?? {};
  if (!cluster) throw new Error(`kubeconfig "${path}" has no cluster "${ctx.cluster}"`);
  const ca = dataOrFile(cluster, "certificate-authority");
  if (!ca) {
    throw new Error(`kubeconfig "${path}" has no certificate-authority for "${ctx.cluster}"`);
  }
  return {
    server: cluster.server,
    ca,
    cert: dataOrFile(user, "client-certificate"),
    key: dataOrFile(user, "client-key"),
    token: user.token,
  };
}

/** Options of {@linkcode writeKubeconfig}. */
export interface KubeconfigOptions {
  name: string;
  credentials: KubeCredentials;
}

/** A kubeconfig text with everything embedded. */
export function kubeconfigText(options: KubeconfigOptions): string {
  const c = options.credentials;
  const b64 = (s: string): string => Buffer.from(s).toString("base64");
  const user: Record<string, string> = {};
  if (c.cert) user["client-certificate-data"] = b64(c.cert);
  if (c.key) user["client-key-data"] = b64(c.key);
  if (c.token) user.token = c.token;
  return JSON.stringify(
    {
      apiVersion: "v1",
      kind: "Config",
      clusters: [{
        name: "e2e",
        cluster: { server: c.server, "certificate-authority-data": b64(c.ca) },
      }],
      users: [{ name: options.name, user }],
      contexts: [{ name: "e2e", context: { cluster: "e2e", user: options.name } }],
      "current-context": "e2e",
    },
    null,
    2,
  ) + "\n";
}

/** Create a client for the given credentials. */
export function createKubeClient(credentials: KubeCredentials): KubeClient {
  const url = new URL(credentials.server);
  // node's global agent closes sockets idle for 5 s, which cuts quiet watches: own agent for
  // requests, a connection of its own for each watch
  const agent = new Agent({ keepAlive: true });

  function open(
    method: string,
    path: string,
    options: RequestOptions & { signal?: AbortSignal; ownConnection?: boolean },
  ): Promise<IncomingMessage> {
    const body = options.body === undefined
      ? undefined
      : typeof options.body === "string"
      ? options.body
      : JSON.stringify(options.body);
    const headers: Record<string, string> = { accept: "application/json" };
    if (body !== undefined) {
      headers["content-type"] = options.contentType ?? "application/json";
      // node sends DELETE bodies neither chunked nor sized unless told
      headers["content-length"] = String(Buffer.byteLength(body));
    }
    if (credentials.token && !options.anonymous) {
      headers.authorization = `Bearer ${credentials.token}`;
    }
    return new Promise((resolve, reject) => {
      const req = httpsRequest({
        host: url.hostname,
        port: url.port || 443,
        method,
        path,
        headers,
        ca: credentials.ca,
        cert: options.anonymous ? undefined : credentials.cert,
        key: options.anonymous ? undefined : credentials.key,
        signal: options.signal,
        timeout: options.timeoutMs,
        agent: options.ownConnection ? false : agent,
      }, resolve);
      req.on("timeout", () => req.destroy(new Error(`timeout: ${method} ${path}`)));
      req.on("error", reject);
      req.end(body);
    });
  }

  async function readAll(res: IncomingMessage): Promise<string> {
    let text = "";
    res.setEncoding("utf8");
    for await (const chunk of res) text += chunk;
    return text;
  }

  const client: KubeClient = {
    credentials,
    async request(method, path, options = {}) {
      const res = await open(method, path, { timeoutMs: 30_000, ...options });
      const text = await readAll(res);
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300) {
        let message = text;
        try {
          message = JSON.parse(text).message ?? text;
        } catch {
          // not JSON: keep the text
        }
        throw new KubeApiError(status, text, `${method} ${path}: ${status} ${message}`.trim());
      }
      if (text === "") return null;
      try {
        return JSON.parse(text);
      } catch {
        return text;
      }
    },
    async get(path) {
      try {
        return await client.request("GET", path);
      } catch (err) {
        if (err instanceof KubeApiError && err.status === 404) return null;
        throw err;
      }
    },
    async watch(path, onEvent, signal) {
      const sep = path.includes("?") ? "&" : "?";
      let res: IncomingMessage;
      try {
        res = await open("GET", `${path}${sep}watch=1&allowWatchBookmarks=true`, {
          signal,
          ownConnection: true,
        });
      } catch (err) {
        if (signal.aborted) return;
        throw err;
      }
      if (res.statusCode !== 200) {
        const text = await readAll(res);
        throw new KubeApiError(
          res.statusCode ?? 0,
          text,
          `watch ${path}: ${res.statusCode} ${text}`,
        );
      }
      res.setEncoding("utf8");
      let buffer = "";
      try {
        for await (const chunk of res) {
          buffer += chunk;
          let nl: number;
          while ((nl = buffer.indexOf("\n")) >= 0) {
            const line = buffer.slice(0, nl).trim();
            buffer = buffer.slice(nl + 1);
            if (line) onEvent(JSON.parse(line) as WatchEvent);
          }
        }
      } catch (err) {
        if (!signal.aborted) throw err;
      } finally {
        res.destroy();
      }
    },
  };
  return client;
}
