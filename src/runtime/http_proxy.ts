/**
 * The proxy a collector's request goes through, from the environment as Go's net/http reads it
 * (`golang.org/x/net/http/httpproxy`, what kube-metrics-adapter and KEDA do): `HTTPS_PROXY` for
 * https URLs, `HTTP_PROXY` for http ones (ignored when `REQUEST_METHOD` is set, as in CGI),
 * upper case first, then lower case; `NO_PROXY` a comma-separated list of `*`, IP addresses and
 * CIDR ranges, and domains (`example.com` matches it and its subdomains, `.example.com` and
 * `*.example.com` only the subdomains), each with an optional port. `localhost` and loopback
 * addresses are never proxied. A proxy value without a scheme is `http://`.
 *
 * Only http proxies are spoken to (a plain request in absolute form, or CONNECT for https); an
 * https or socks5 proxy URL makes the request fail with a clear error.
 */
import { ipv4Octets, ipv6Words } from "../core/link_local.ts";

/** The proxy for a URL, or null to connect directly. */
export type ProxyFor = (url: URL) => URL | null;

type Env = Readonly<Record<string, string | undefined>>;

function firstSet(env: Env, ...names: string[]): string {
  for (const n of names) {
    const v = env[n];
    if (v !== undefined && v !== "") return v;
  }
  return "";
}

/** Go's `parseProxy`: a URL with a known scheme, else the value read as `http://<value>`. */
function parseProxy(value: string): URL | null {
  if (value === "") return null;
  try {
    const u = new URL(value);
    if (["http:", "https:", "socks5:", "socks5h:"].includes(u.protocol) && u.host !== "") return u;
  } catch {
    // read as host:port below
  }
  try {
    return new URL(`http://${value}`);
  } catch {
    return null;
  }
}

/** An address as 16 bytes (IPv4 mapped), or null. */
function ipBytes(host: string): number[] | null {
  const v4 = ipv4Octets(host);
  if (v4) return [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ...v4];
  const v6 = ipv6Words(host);
  if (v6) return v6.flatMap((w) => [w >> 8, w & 0xff]);
  return null;
}

function isLoopback(ip: number[]): boolean {
  const v4 = ip.slice(0, 12).every((b, i) => (i < 10 ? b === 0 : b === 0xff));
  if (v4) return ip[12] === 127;
  return ip.slice(0, 15).every((b) => b === 0) && ip[15] === 1;
}

interface NoProxy {
  all: boolean;
  cidrs: { ip: number[]; bits: number }[];
  ips: { ip: number[]; port: string }[];
  domains: { host: string; port: string; matchHost: boolean }[];
}

/** `host:port` split as Go's `net.SplitHostPort` (a bracketed IPv6 host unbracketed), or null. */
function splitHostPort(s: string): [string, string] | null {
  const m = /^\[([^\]]*)\]:([0-9]*)$/.exec(s) ?? /^([^:[\]]*):([0-9]*)$/.exec(s);
  return m === null ? null : [m[1], m[2]];
}

function parseNoProxy(value: string): NoProxy {
  const out: NoProxy = { all: false, cidrs: [], ips: [], domains: [] };
  for (const raw of value.split(",")) {
    const p = raw.trim().toLowerCase();
    if (p === "") continue;
    if (p === "*") return { all: true, cidrs: [], ips: [], domains: [] };
    const cidr = /^(.+)\/(\d{1,3})$/.exec(p);
    if (cidr) {
      const ip = ipBytes(cidr[1]);
      const v4 = ipv4Octets(cidr[1]) !== null;
      const bits = Number(cidr[2]);
      if (ip && bits <= (v4 ? 32 : 128)) {
        out.cidrs.push({ ip, bits: v4 ? bits + 96 : bits });
        continue;
      }
    }
    const hp = splitHostPort(p);
    let host = p;
    let port = "";
    if (hp !== null) {
      if (hp[0] === "") continue;
      [host, port] = hp;
    }
    const ip = ipBytes(host);
    if (ip) {
      out.ips.push({ ip, port });
      continue;
    }
    if (host === "") continue;
    if (host.startsWith("*.")) host = host.slice(1);
    const matchHost = !host.startsWith(".");
    out.domains.push({ host: matchHost ? `.${host}` : host, port, matchHost });
  }
  return out;
}

function inCidr(ip: number[], c: { ip: number[]; bits: number }): boolean {
  for (let i = 0; i < 16; i++) {
    const take = Math.max(0, Math.min(8, c.bits - i * 8));
    const mask = take === 0 ? 0 : (0xff << (8 - take)) & 0xff;
    if ((ip[i] & mask) !== (c.ip[i] & mask)) return false;
  }
  return true;
}

/** Go's `useProxy`: whether a request to `host` (lower case, unbracketed) and `port` is proxied. */
function useProxy(np: NoProxy, host: string, port: string): boolean {
  if (host === "localhost") return false;
  const ip = ipBytes(host);
  if (ip && isLoopback(ip)) return false;
  if (np.all) return false;
  if (ip) {
    if (np.cidrs.some((c) => inCidr(ip, c))) return false;
    if (
      np.ips.some((m) => m.ip.every((b, i) => b === ip[i]) && (m.port === "" || m.port === port))
    ) {
      return false;
    }
  }
  for (const d of np.domains) {
    if (host.endsWith(d.host) || (d.matchHost && host === d.host.slice(1))) {
      if (d.port === "" || d.port === port) return false;
    }
  }
  return true;
}

/**
 * The proxy selection of `env` (`process.env`). With none of the variables set, every request
 * connects directly.
 *
 * @example
 * ```ts
 * const proxyFor = proxyFromEnv({ HTTPS_PROXY: "proxy:3128", NO_PROXY: ".svc,10.0.0.0/8" });
 * proxyFor(new URL("https://api.example.com/q"))?.href; // "http://proxy:3128/"
 * proxyFor(new URL("http://10.1.2.3:9090/metrics")); // null
 * ```
 */
export function proxyFromEnv(env: Env): ProxyFor {
  const httpProxy = env.REQUEST_METHOD
    ? null
    : parseProxy(firstSet(env, "HTTP_PROXY", "http_proxy"));
  const httpsProxy = parseProxy(firstSet(env, "HTTPS_PROXY", "https_proxy"));
  const noProxy = parseNoProxy(firstSet(env, "NO_PROXY", "no_proxy"));
  return (url: URL): URL | null => {
    const proxy = url.protocol === "https:"
      ? httpsProxy
      : url.protocol === "http:"
      ? httpProxy
      : null;
    if (proxy === null) return null;
    const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
    const port = url.port || (url.protocol === "https:" ? "443" : "80");
    return useProxy(noProxy, host, port) ? proxy : null;
  };
}
