/**
 * Where the URLs an HPA author writes may point (issue 25): a json-path `endpoint`, a
 * `prometheus-server`, an InfluxDB `address`, the replica guard's server URL annotation. With
 * no rule on, every URL is allowed (as kube-metrics-adapter does). With a rule on, a URL is
 * allowed when it is
 *
 * - one of the servers the operator gave by flags: same scheme, host and port, and its path
 *   under the server's path;
 * - or matched by an allowed pattern (`--allowed-metric-endpoints`);
 * - or, with `--endpoints-in-own-namespace`, a Service of the HPA's own namespace: the host is
 *   `svc.ns`, `svc.ns.svc` or `svc.ns.svc.<cluster domain>`, case-insensitive, with or without
 *   a trailing dot, any scheme (http or https), port and path;
 *
 * and refused otherwise: IP addresses, other namespaces' Services, hosts outside the cluster.
 *
 * A pattern is `scheme://host[:port][/path-prefix]`:
 * - scheme `http` or `https`;
 * - host a DNS name or an IP address (IPv6 in brackets), compared as the URL parser writes it
 *   (lower case), a trailing dot ignored; or `*.suffix`: any host under the suffix, at any
 *   depth, but not the suffix itself;
 * - port a number or `*` (any); without one, the scheme's default (80, 443) only;
 * - path prefix on segment boundaries (`/api` allows `/api` and `/api/v1`, not `/apiv1`); a
 *   trailing slash is ignored; none (or `/`) allows every path. No user info, query, fragment
 *   or wildcard elsewhere.
 *
 * The short forms `svc.ns` and `svc.ns.svc` reach the Service through the resolver's search
 * path: where no such Service exists, a name like `svc.ns` may resolve outside the cluster. The
 * full form `svc.ns.svc.cluster.local` cannot.
 *
 * Pure: no name is resolved here (the collectors refuse names that resolve to link-local
 * addresses when they connect, and never follow redirects).
 *
 * @module
 */
import { ipv4Octets } from "./link_local.ts";
import { quote } from "./quote.ts";

/** The cluster's DNS domain when none is given. */
export const DEFAULT_CLUSTER_DOMAIN = "cluster.local";

/** The settings of an {@linkcode EndpointPolicy}, as the flags give them. */
export interface EndpointPolicyOptions {
  /** Allowed URL patterns (`--allowed-metric-endpoints`); see the module documentation. */
  allowed?: readonly string[];
  /** Services of the HPA's own namespace are allowed (`--endpoints-in-own-namespace`). */
  ownNamespace?: boolean;
  /**
   * URLs of the servers given by flags (`--prometheus-server`, the additional Prometheus
   * servers, `--influxdb-address` ...): always allowed once a rule is on. One that is not an
   * http(s) URL allows nothing (its own flag reports it).
   */
  flagServers?: readonly string[];
  /** The cluster's DNS domain; {@linkcode DEFAULT_CLUSTER_DOMAIN} when absent or empty. */
  clusterDomain?: string;
}

/** One allowed place: a pattern, or a server given by flags. */
export interface EndpointPattern {
  /** What it was made from, for messages. */
  readonly text: string;
  /** `http:` or `https:`. */
  readonly protocol: string;
  /** The host, lower case, without a trailing dot; for a wildcard, the suffix. */
  readonly host: string;
  /** `*.suffix`: any host under `host`, not `host` itself. */
  readonly wildcardHost: boolean;
  /** The port; null for any. */
  readonly port: number | null;
  /** The path prefix without a trailing slash; `""` for every path. */
  readonly pathPrefix: string;
}

/** Where HPA-chosen URLs may point: made by {@linkcode createEndpointPolicy}. */
export interface EndpointPolicy {
  readonly patterns: readonly EndpointPattern[];
  readonly ownNamespace: boolean;
  readonly flagServers: readonly EndpointPattern[];
  /** Lower case, without leading or trailing dots. */
  readonly clusterDomain: string;
}

/** Options of {@linkcode checkEndpoint}. */
export interface CheckEndpointOptions {
  /** The namespace of the HPA that names the URL. */
  namespace: string;
  /** The rules; undefined allows everything. */
  policy: EndpointPolicy | undefined;
}

const DEFAULT_PORTS: Readonly<Record<string, number>> = { "http:": 80, "https:": 443 };

/** A Service name: a DNS-1035 label. */
const SERVICE_NAME = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;

const PATTERN_SYNTAX = "want scheme://host[:port][/path-prefix] with scheme http or https";

/** A pattern that cannot be read: its text and why. */
export class EndpointPatternError extends Error {
  /** Set the name so logs say what happened. */
  override name = "EndpointPatternError";
  /** Makes `invalid endpoint pattern "<pattern>": <reason>`. */
  constructor(readonly pattern: string, readonly reason: string) {
    super(`invalid endpoint pattern ${quote(pattern)}: ${reason}`);
  }
}

/**
 * Read a pattern of `--allowed-metric-endpoints`; throws an {@linkcode EndpointPatternError}
 * naming it and what is wrong.
 *
 * @example
 * ```ts
 * parseEndpointPattern("https://*.metrics.example.com:*");
 * // { text: "https://*.metrics.example.com:*", protocol: "https:", host: "metrics.example.com",
 * //   wildcardHost: true, port: null, pathPrefix: "" }
 * parseEndpointPattern("ftp://x"); // throws: invalid endpoint pattern "ftp://x": want ...
 * ```
 */
export function parseEndpointPattern(text: string): EndpointPattern {
  const fail = (why: string): Error => new EndpointPatternError(text, why);
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)([?#].*)?$/.exec(text);
  if (!m) throw fail(PATTERN_SYNTAX);
  const protocol = `${m[1].toLowerCase()}:`;
  if (DEFAULT_PORTS[protocol] === undefined) throw fail(PATTERN_SYNTAX);
  const authority = m[2];
  const path = m[3];
  if (m[4] !== undefined) throw fail("a pattern has no query or fragment");
  if (authority.includes("@")) throw fail("a pattern has no user info");
  if (authority.startsWith("*.") && authority.includes("[")) {
    throw fail("a wildcard host is *.suffix (any subdomain of a DNS name)");
  }
  let hostText: string;
  let portText: string | undefined;
  const bracket = /^(\[[^\]]*\])(?::(.*))?$/.exec(authority);
  if (bracket) {
    hostText = bracket[1];
    portText = bracket[2];
  } else {
    const colon = authority.lastIndexOf(":");
    hostText = colon < 0 ? authority : authority.slice(0, colon);
    portText = colon < 0 ? undefined : authority.slice(colon + 1);
  }
  if (hostText === "") throw fail("want a host");
  const wildcardHost = hostText.startsWith("*.");
  const bare = wildcardHost ? hostText.slice(2) : hostText;
  if (bare.includes("*")) {
    throw fail("a wildcard host is *.suffix (any subdomain of a DNS name)");
  }
  let host: string;
  let parsed: URL;
  try {
    parsed = new URL(`${protocol}//${bare}${path === "" ? "/" : path}`);
    host = stripDot(parsed.hostname);
  } catch {
    throw fail(`invalid host ${quote(bare)}`);
  }
  if (host === "") throw fail(`invalid host ${quote(bare)}`);
  if (wildcardHost && (host.startsWith("[") || ipv4Octets(host) !== null)) {
    throw fail("a wildcard host is *.suffix (any subdomain of a DNS name)");
  }
  let port: number | null = DEFAULT_PORTS[protocol];
  if (portText !== undefined) {
    if (portText === "*") port = null;
    else if (/^\d{1,5}$/.test(portText) && Number(portText) >= 1 && Number(portText) <= 65535) {
      port = Number(portText);
    } else throw fail(`invalid port ${quote(portText)}: want a number from 1 to 65535 or *`);
  }
  if (path.includes("*")) throw fail("a path is a prefix and takes no wildcard");
  const pathPrefix = trimSlashes(parsed.pathname);
  return { text, protocol, host, wildcardHost, port, pathPrefix };
}

/**
 * The rules of {@linkcode checkEndpoint}, made once from the flags: each pattern is checked
 * here, and a bad one throws (see {@linkcode parseEndpointPattern}).
 *
 * @example
 * ```ts
 * const policy = createEndpointPolicy({
 *   allowed: ["https://*.metrics.example.com"],
 *   ownNamespace: true,
 *   flagServers: ["http://prometheus.monitoring:9090"],
 * });
 * ```
 */
export function createEndpointPolicy(options: EndpointPolicyOptions): EndpointPolicy {
  const flagServers: EndpointPattern[] = [];
  for (const text of options.flagServers ?? []) {
    const server = flagServer(text);
    if (server !== null) flagServers.push(server);
  }
  const domain = (options.clusterDomain ?? "").toLowerCase().replace(/^\.+|\.+$/g, "");
  return {
    patterns: (options.allowed ?? []).map(parseEndpointPattern),
    ownNamespace: options.ownNamespace === true,
    flagServers,
    clusterDomain: domain === "" ? DEFAULT_CLUSTER_DOMAIN : domain,
  };
}

/** Whether a policy has a rule on (without one, every URL is allowed). */
export function endpointPolicyActive(policy: EndpointPolicy | undefined): boolean {
  return policy !== undefined && (policy.ownNamespace || policy.patterns.length > 0);
}

/**
 * Why an HPA of `namespace` may not name `url` (`not allowed: ...`, naming the rules that were
 * tried), or undefined when it may: see the module documentation for the rules.
 *
 * @example
 * ```ts
 * const policy = createEndpointPolicy({ ownNamespace: true });
 * checkEndpoint(new URL("http://api.shop.svc:8080/m"), { namespace: "shop", policy }); // undefined
 * checkEndpoint(new URL("http://db.other/x"), { namespace: "shop", policy });
 * // 'not allowed: not a Service in namespace "shop" (--endpoints-in-own-namespace) and not a server given by flags'
 * ```
 */
export function checkEndpoint(url: URL, options: CheckEndpointOptions): string | undefined {
  const { policy, namespace } = options;
  if (policy === undefined || !endpointPolicyActive(policy)) return undefined;
  if (policy.flagServers.some((s) => matches(s, url))) return undefined;
  if (policy.patterns.some((p) => matches(p, url))) return undefined;
  if (policy.ownNamespace && isOwnService(url, namespace, policy.clusterDomain)) return undefined;
  const tried: string[] = [];
  if (policy.ownNamespace) {
    tried.push(`not a Service in namespace ${quote(namespace)} (--endpoints-in-own-namespace)`);
  }
  tried.push("not a server given by flags");
  if (policy.patterns.length > 0) tried.push("no --allowed-metric-endpoints pattern matches");
  const last = tried.pop()!;
  return `not allowed: ${tried.length > 0 ? `${tried.join(", ")} and ${last}` : last}`;
}

/** A server given by flags as a pattern of itself (exact port), or null if it is no URL. */
function flagServer(text: string): EndpointPattern | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  const port = effectivePort(url);
  if (port === null) return null;
  return {
    text,
    protocol: url.protocol,
    host: stripDot(url.hostname),
    wildcardHost: false,
    port,
    pathPrefix: trimSlashes(url.pathname),
  };
}

function matches(p: EndpointPattern, url: URL): boolean {
  if (url.protocol !== p.protocol) return false;
  const host = stripDot(url.hostname);
  if (p.wildcardHost ? !host.endsWith(`.${p.host}`) : host !== p.host) return false;
  if (p.port !== null && effectivePort(url) !== p.port) return false;
  return p.pathPrefix === "" || url.pathname === p.pathPrefix ||
    url.pathname.startsWith(`${p.pathPrefix}/`);
}

function isOwnService(url: URL, namespace: string, clusterDomain: string): boolean {
  if (DEFAULT_PORTS[url.protocol] === undefined) return false;
  const labels = stripDot(url.hostname).split(".");
  if (labels.length < 2 || !SERVICE_NAME.test(labels[0]) || labels[1] !== namespace) {
    return false;
  }
  const rest = labels.slice(2).join(".");
  return rest === "" || rest === "svc" || rest === `svc.${clusterDomain}`;
}

/** The URL's port, or its scheme's default; null for a scheme other than http(s). */
function effectivePort(url: URL): number | null {
  const dflt = DEFAULT_PORTS[url.protocol];
  if (dflt === undefined) return null;
  return url.port === "" ? dflt : Number(url.port);
}

function stripDot(host: string): string {
  return host.endsWith(".") ? host.slice(0, -1) : host;
}

function trimSlashes(path: string): string {
  return path.replace(/\/+$/, "");
}
