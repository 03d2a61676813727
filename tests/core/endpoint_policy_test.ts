/**
 * The endpoint policy of issue 25 (src/core/endpoint_policy.ts): which URLs an HPA of a given
 * namespace may name once `--allowed-metric-endpoints` or `--endpoints-in-own-namespace` is on,
 * pattern by pattern, with the exact refusals and the exact errors of bad patterns.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  checkEndpoint,
  createEndpointPolicy,
  EndpointPatternError,
  type EndpointPolicy,
  endpointPolicyActive,
  parseEndpointPattern,
} from "../../src/core/endpoint_policy.ts";

const PATTERN_ONLY =
  "not allowed: not a server given by flags and no --allowed-metric-endpoints pattern matches";
const OWN_ONLY = (ns: string): string =>
  `not allowed: not a Service in namespace "${ns}" (--endpoints-in-own-namespace) and not a server given by flags`;
const BOTH = (ns: string): string =>
  `not allowed: not a Service in namespace "${ns}" (--endpoints-in-own-namespace), not a server given by flags and no --allowed-metric-endpoints pattern matches`;

function check(policy: EndpointPolicy | undefined, url: string, namespace = "shop") {
  return checkEndpoint(new URL(url), { namespace, policy });
}

/** [pattern, url, allowed] */
type Row = [string, string, boolean];

describe("endpoint patterns", () => {
  const rows: Row[] = [
    // exact host, default port
    ["http://metrics.example.com", "http://metrics.example.com/x", true],
    ["http://metrics.example.com", "http://metrics.example.com:80/x", true],
    ["http://metrics.example.com", "http://metrics.example.com:8080/x", false],
    ["http://metrics.example.com", "https://metrics.example.com/x", false],
    ["http://metrics.example.com", "http://METRICS.Example.COM./x", true],
    ["http://metrics.example.com.", "http://metrics.example.com/x", true],
    ["http://metrics.example.com", "http://a.metrics.example.com/x", false],
    ["http://metrics.example.com", "http://metrics.example.com.evil.test/x", false],
    ["https://metrics.example.com", "https://metrics.example.com:443/", true],
    ["HTTPS://Metrics.Example.com", "https://metrics.example.com/", true],
    // ports
    ["http://metrics.example.com:9090", "http://metrics.example.com:9090/q", true],
    ["http://metrics.example.com:9090", "http://metrics.example.com/q", false],
    ["http://metrics.example.com:80", "http://metrics.example.com/q", true],
    ["http://metrics.example.com:*", "http://metrics.example.com:1/q", true],
    ["http://metrics.example.com:*", "http://metrics.example.com/q", true],
    ["http://metrics.example.com:*", "https://metrics.example.com:8443/q", false],
    // wildcard hosts: any depth, never the suffix itself
    ["https://*.example.com", "https://a.example.com/", true],
    ["https://*.example.com", "https://a.b.example.com/", true],
    ["https://*.example.com", "https://example.com/", false],
    ["https://*.example.com", "https://aexample.com/", false],
    ["https://*.example.com", "https://a.example.com.evil.test/", false],
    ["https://*.example.com", "https://a.example.com:8443/", false],
    ["https://*.example.com:*", "https://a.example.com:8443/", true],
    // path prefixes on segment boundaries; a trailing slash ignored
    ["http://h.test/api", "http://h.test/api", true],
    ["http://h.test/api", "http://h.test/api/", true],
    ["http://h.test/api", "http://h.test/api/v1?q=1", true],
    ["http://h.test/api", "http://h.test/apiv1", false],
    ["http://h.test/api", "http://h.test/", false],
    ["http://h.test/api/", "http://h.test/api", true],
    ["http://h.test/api/", "http://h.test/api/v1", true],
    ["http://h.test/api", "http://h.test/api/../admin", false],
    ["http://h.test/api", "http://h.test/api/%2e%2e/admin", false],
    ["http://h.test/api", "http://h.test/api%2F..%2Fadmin", false],
    ["http://h.test/", "http://h.test/anything/at/all", true],
    ["http://h.test/a/../b", "http://h.test/b/c", true],
    // IP addresses are hosts like any other, compared as the URL parser writes them
    ["http://10.0.0.1:9090", "http://10.0.0.1:9090/", true],
    ["http://10.0.0.1:9090", "http://0x0a.0.0.1:9090/", true],
    ["http://10.0.0.1:9090", "http://10.0.0.2:9090/", false],
    ["http://[::1]:9090", "http://[0:0::1]:9090/", true],
  ];
  for (const [pattern, url, allowed] of rows) {
    it(`${pattern} ${allowed ? "allows" : "refuses"} ${url}`, () => {
      const policy = createEndpointPolicy({ allowed: [pattern] });
      assert.equal(check(policy, url), allowed ? undefined : PATTERN_ONLY);
    });
  }

  it("reads a pattern into its parts", () => {
    assert.deepEqual(parseEndpointPattern("https://*.Metrics.example.com.:*/API/v1/"), {
      text: "https://*.Metrics.example.com.:*/API/v1/",
      protocol: "https:",
      host: "metrics.example.com",
      wildcardHost: true,
      port: null,
      pathPrefix: "/API/v1",
    });
    assert.deepEqual(parseEndpointPattern("http://h.test"), {
      text: "http://h.test",
      protocol: "http:",
      host: "h.test",
      wildcardHost: false,
      port: 80,
      pathPrefix: "",
    });
  });

  const bad: [string, string][] = [
    ["metrics.example.com", "want scheme://host[:port][/path-prefix] with scheme http or https"],
    ["ftp://h.test", "want scheme://host[:port][/path-prefix] with scheme http or https"],
    ["http:/h.test", "want scheme://host[:port][/path-prefix] with scheme http or https"],
    ["http://", "want a host"],
    ["http://:9090", "want a host"],
    ["http://h.test?x=1", "a pattern has no query or fragment"],
    ["http://h.test/#top", "a pattern has no query or fragment"],
    ["http://user@h.test", "a pattern has no user info"],
    ["http://*", "a wildcard host is *.suffix (any subdomain of a DNS name)"],
    ["http://a.*.test", "a wildcard host is *.suffix (any subdomain of a DNS name)"],
    ["http://*.*.test", "a wildcard host is *.suffix (any subdomain of a DNS name)"],
    ["http://*.10.0.0.1", "a wildcard host is *.suffix (any subdomain of a DNS name)"],
    ["http://*.[::1]", "a wildcard host is *.suffix (any subdomain of a DNS name)"],
    ["http://*.", 'invalid host ""'],
    ["http://h test", 'invalid host "h test"'],
    ["http://h.test:0", 'invalid port "0": want a number from 1 to 65535 or *'],
    ["http://h.test:65536", 'invalid port "65536": want a number from 1 to 65535 or *'],
    ["http://h.test:", 'invalid port "": want a number from 1 to 65535 or *'],
    ["http://h.test:x", 'invalid port "x": want a number from 1 to 65535 or *'],
    ["http://h.test/api/*", "a path is a prefix and takes no wildcard"],
  ];
  for (const [pattern, why] of bad) {
    it(`refuses the pattern ${JSON.stringify(pattern)}`, () => {
      assert.throws(() => createEndpointPolicy({ allowed: ["http://ok.test", pattern] }), (e) => {
        assert.ok(e instanceof EndpointPatternError);
        assert.equal(e.message, `invalid endpoint pattern "${pattern}": ${why}`);
        assert.equal(e.pattern, pattern);
        assert.equal(e.reason, why);
        return true;
      });
    });
  }
});

describe("services of the HPA's own namespace", () => {
  const own = createEndpointPolicy({ ownNamespace: true });
  const rows: [string, boolean][] = [
    ["http://api.shop", true],
    ["http://api.shop.svc:8080/metrics", true],
    ["https://api.shop.svc.cluster.local/metrics", true],
    ["http://api.shop.svc.cluster.local.:9090/", true],
    ["http://API.Shop.SVC.Cluster.Local/", true],
    ["http://api.shop./", true],
    ["http://api.other/", false],
    ["http://api.other.svc.cluster.local/", false],
    ["http://api.shop.svc.cluster.example/", false],
    ["http://api.shop.svc.cluster/", false],
    ["http://api.shop.pod.cluster.local/", false],
    ["http://pod-0.api.shop.svc.cluster.local/", false],
    ["http://shop/", false],
    ["http://api/", false],
    ["http://1api.shop/", false],
    ["http://api.shop.evil.test/", false],
    ["http://10.0.0.1/", false],
    ["http://[fd00::1]/", false],
    ["http://127.0.0.1:9090/", false],
  ];
  for (const [url, allowed] of rows) {
    it(`${allowed ? "allows" : "refuses"} ${url} for namespace shop`, () => {
      assert.equal(check(own, url), allowed ? undefined : OWN_ONLY("shop"));
    });
  }

  it("uses the cluster domain it is given", () => {
    const p = createEndpointPolicy({ ownNamespace: true, clusterDomain: ".Corp.Example." });
    assert.equal(p.clusterDomain, "corp.example");
    assert.equal(check(p, "http://api.shop.svc.corp.example/"), undefined);
    assert.equal(check(p, "http://api.shop.svc.cluster.local/"), OWN_ONLY("shop"));
    assert.equal(check(p, "http://api.shop.svc/"), undefined);
    assert.equal(createEndpointPolicy({ clusterDomain: "" }).clusterDomain, "cluster.local");
  });

  it("names the HPA's namespace in the refusal", () => {
    assert.equal(check(own, "http://api.shop/", "team-a"), OWN_ONLY("team-a"));
    assert.equal(check(own, "http://api.team-a/", "team-a"), undefined);
  });
});

describe("servers given by flags", () => {
  const policy = createEndpointPolicy({
    ownNamespace: true,
    flagServers: [
      "http://prometheus.monitoring:9090",
      "https://thanos.example.com/tenant-a/",
      "http://influx.monitoring.svc.cluster.local:8086",
      "not a url",
      "ftp://files.test",
    ],
  });
  const rows: [string, boolean][] = [
    ["http://prometheus.monitoring:9090", true],
    ["http://prometheus.monitoring:9090/", true],
    ["http://prometheus.monitoring:9090/api/v1/query", true],
    ["http://Prometheus.Monitoring.:9090/", true],
    ["http://prometheus.monitoring:9091/", false],
    ["http://prometheus.monitoring/", false],
    ["https://prometheus.monitoring:9090/", false],
    ["https://thanos.example.com/tenant-a", true],
    ["https://thanos.example.com/tenant-a/api/v1/query", true],
    ["https://thanos.example.com/tenant-b", false],
    ["https://thanos.example.com/tenant-ab", false],
    ["https://thanos.example.com:443/tenant-a", true],
    ["http://influx.monitoring.svc.cluster.local:8086", true],
    ["http://influx.monitoring:8086", false],
    ["ftp://files.test/", false],
  ];
  for (const [url, allowed] of rows) {
    it(`${allowed ? "allow" : "do not allow"} ${url}`, () => {
      assert.equal(check(policy, url), allowed ? undefined : OWN_ONLY("shop"));
    });
  }

  it("keep only the servers that are http(s) URLs", () => {
    assert.deepEqual(policy.flagServers.map((s) => s.text), [
      "http://prometheus.monitoring:9090",
      "https://thanos.example.com/tenant-a/",
      "http://influx.monitoring.svc.cluster.local:8086",
    ]);
  });

  it("allow nothing more while no rule is on (every URL is allowed then)", () => {
    const off = createEndpointPolicy({ flagServers: ["http://prometheus.monitoring:9090"] });
    assert.equal(endpointPolicyActive(off), false);
    assert.equal(check(off, "http://169.254.169.254/latest/meta-data"), undefined);
    assert.equal(check(off, "http://db.other.svc.cluster.local/"), undefined);
    assert.equal(check(undefined, "http://db.other/"), undefined);
  });
});

describe("rules together", () => {
  const policy = createEndpointPolicy({
    allowed: ["https://*.metrics.example.com", "http://10.1.2.3:9090/prom"],
    ownNamespace: true,
    flagServers: ["http://prometheus.monitoring:9090"],
  });

  it("allow what any one rule allows", () => {
    assert.equal(endpointPolicyActive(policy), true);
    for (
      const url of [
        "https://eu.metrics.example.com/q",
        "http://10.1.2.3:9090/prom/api/v1/query",
        "http://api.shop.svc:8080/m",
        "http://prometheus.monitoring:9090/",
      ]
    ) {
      assert.equal(check(policy, url), undefined, url);
    }
  });

  it("refuse the rest, naming every rule tried", () => {
    for (
      const url of [
        "http://db.other:80/x",
        "http://10.1.2.3:9090/admin",
        "https://metrics.example.com/q",
        "http://169.254.169.254/",
        "https://example.org/",
      ]
    ) {
      assert.equal(check(policy, url), BOTH("shop"), url);
    }
  });

  it("patterns alone name no namespace", () => {
    const p = createEndpointPolicy({ allowed: ["http://a.test"] });
    assert.equal(check(p, "http://api.shop/"), PATTERN_ONLY);
  });
});
