/**
 * `fetch` with client TLS settings (a CA to trust, a client certificate, no verification),
 * the one thing the three runtimes spell differently:
 *
 * - Node: the npm `undici` fetch with an `Agent` whose `connect` options carry the TLS
 *   settings (what @kubernetes/client-node does).
 * - Bun: its own fetch with the `tls` option. Bun replaces the `undici` package by a shim whose
 *   `Agent` keeps no options and whose fetch ignores `dispatcher`, so through client-node a
 *   kubeconfig's CA and client certificate are silently dropped ("unable to verify the first
 *   certificate").
 * - Deno: its own fetch with a `Deno.createHttpClient` client. The npm `undici` fetch on Deno
 *   never ends a response body when the request is aborted or the connection drops, so a
 *   watch that times out hangs forever. Deno's client cannot skip verification or set a server
 *   name: with those settings Deno falls back to undici.
 */
import { Agent, fetch as undiciFetch } from "undici";

/** TLS settings of a client (PEM text). */
export interface ClientTls {
  /** CA certificates to verify the server with. */
  ca?: string;
  /** A client certificate (PEM chain) and its key. */
  cert?: string;
  key?: string;
  /** Do not verify the server certificate. */
  insecureSkipVerify?: boolean;
  /** The name to verify the server certificate against (and send as SNI). */
  serverName?: string;
}

/** A `fetch` bound to one set of TLS settings. */
export type FetchFn = (url: string, init?: RequestInit) => Promise<Response>;

/** A `fetch` with TLS settings and the connection pool behind it. */
export interface TlsFetch {
  fetch: FetchFn;
  /** Close idle connections and release the pool. */
  close(): Promise<void>;
}

interface DenoHttp {
  createHttpClient(options: { caCerts?: string[]; cert?: string; key?: string }): {
    close(): void;
  };
}

/** Which fetch carries TLS settings on this runtime. */
export function tlsFetchKind(tls: ClientTls): "bun" | "deno" | "undici" {
  const g = globalThis as { Bun?: unknown; Deno?: unknown };
  if (g.Bun !== undefined) return "bun";
  if (g.Deno !== undefined && !tls.insecureSkipVerify && tls.serverName === undefined) {
    return "deno";
  }
  return "undici";
}

/**
 * A fetch that verifies servers with `tls.ca` (instead of the system roots on Node and Bun, in
 * addition to them on Deno) and presents `tls.cert`/`tls.key`.
 *
 * @example
 * ```ts
 * const client = createTlsFetch({ ca: caPem });
 * const res = await client.fetch("https://127.0.0.1:6443/version");
 * await client.close();
 * ```
 */
export function createTlsFetch(tls: ClientTls): TlsFetch {
  const kind = tlsFetchKind(tls);
  if (kind === "bun") {
    const options = {
      ...(tls.ca !== undefined ? { ca: tls.ca } : {}),
      ...(tls.cert !== undefined ? { cert: tls.cert } : {}),
      ...(tls.key !== undefined ? { key: tls.key } : {}),
      ...(tls.serverName !== undefined ? { serverName: tls.serverName } : {}),
      ...(tls.insecureSkipVerify ? { rejectUnauthorized: false } : {}),
    };
    return {
      fetch: (url, init) => fetch(url, { ...init, tls: options } as RequestInit),
      close: () => Promise.resolve(),
    };
  }
  if (kind === "deno") {
    const deno = (globalThis as unknown as { Deno: DenoHttp }).Deno;
    const client = deno.createHttpClient({
      ...(tls.ca !== undefined ? { caCerts: [tls.ca] } : {}),
      ...(tls.cert !== undefined && tls.key !== undefined ? { cert: tls.cert, key: tls.key } : {}),
    });
    return {
      fetch: (url, init) => fetch(url, { ...init, client } as RequestInit),
      close: () => Promise.resolve(client.close()),
    };
  }
  const agent = new Agent({
    connect: {
      ...(tls.ca !== undefined ? { ca: tls.ca } : {}),
      ...(tls.cert !== undefined ? { cert: tls.cert } : {}),
      ...(tls.key !== undefined ? { key: tls.key } : {}),
      ...(tls.serverName !== undefined ? { servername: tls.serverName } : {}),
      ...(tls.insecureSkipVerify ? { rejectUnauthorized: false } : {}),
      keepAlive: true,
      keepAliveInitialDelay: 30_000,
    },
  });
  return {
    fetch: (url, init) =>
      undiciFetch(url, { ...init, dispatcher: agent } as never) as unknown as Promise<Response>,
    close: () => agent.close(),
  };
}
