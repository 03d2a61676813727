import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  pathAlwaysAllowed,
  type RequestAttributes,
  requestAttributes,
} from "../../src/api/request_attributes.ts";

describe("requestAttributes", () => {
  const base: RequestAttributes = {
    isResourceRequest: true,
    path: "",
    verb: "get",
    apiGroup: "",
    apiVersion: "",
    namespace: "",
    resource: "",
    subresource: "",
    name: "",
  };
  const cases: Array<[string, string, Partial<RequestAttributes>]> = [
    [
      "GET",
      "/apis/custom.metrics.k8s.io/v1beta1/namespaces/ns/deployments.apps/web/requests-per-second",
      {
        apiGroup: "custom.metrics.k8s.io",
        apiVersion: "v1beta1",
        namespace: "ns",
        resource: "deployments.apps",
        name: "web",
        subresource: "requests-per-second",
      },
    ],
    [
      "GET",
      "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/pods/%2A/m",
      {
        apiGroup: "custom.metrics.k8s.io",
        apiVersion: "v1beta2",
        namespace: "ns",
        resource: "pods",
        name: "*",
        subresource: "m",
      },
    ],
    [
      "GET",
      "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/metrics/m",
      {
        apiGroup: "custom.metrics.k8s.io",
        apiVersion: "v1beta2",
        namespace: "ns",
        resource: "metrics",
        name: "m",
      },
    ],
    [
      "GET",
      "/apis/custom.metrics.k8s.io/v1beta2/nodes/n1/m",
      {
        apiGroup: "custom.metrics.k8s.io",
        apiVersion: "v1beta2",
        resource: "nodes",
        name: "n1",
        subresource: "m",
      },
    ],
    [
      "GET",
      "/apis/external.metrics.k8s.io/v1beta1/namespaces/ns/queue-length",
      {
        apiGroup: "external.metrics.k8s.io",
        apiVersion: "v1beta1",
        namespace: "ns",
        resource: "queue-length",
        verb: "list",
      },
    ],
    [
      "GET",
      "/apis/external.metrics.k8s.io/v1beta1/namespaces/ns/queue-length?watch=true",
      {
        apiGroup: "external.metrics.k8s.io",
        apiVersion: "v1beta1",
        namespace: "ns",
        resource: "queue-length",
        verb: "watch",
      },
    ],
    [
      "GET",
      "/apis/external.metrics.k8s.io/v1beta1/namespaces",
      {
        apiGroup: "external.metrics.k8s.io",
        apiVersion: "v1beta1",
        resource: "namespaces",
        verb: "list",
      },
    ],
    ["GET", "/apis/custom.metrics.k8s.io/v1beta2", { isResourceRequest: false }],
    ["GET", "/apis", { isResourceRequest: false }],
    ["GET", "/openapi/v2", { isResourceRequest: false }],
    ["GET", "/healthz", { isResourceRequest: false }],
    ["HEAD", "/version", { isResourceRequest: false, verb: "head" }],
    [
      "POST",
      "/api/v1/namespaces/ns/pods",
      { apiVersion: "v1", namespace: "ns", resource: "pods", verb: "create" },
    ],
  ];
  for (const [method, url, expected] of cases) {
    it(`derives ${method} ${url}`, () => {
      const u = new URL("https://x" + url);
      const want = { ...base, ...expected, path: decodeURIComponent(u.pathname) };
      if (expected.isResourceRequest === false) want.verb = expected.verb ?? "get";
      assert.deepEqual(requestAttributes(method, u), want);
    });
  }
});

describe("pathAlwaysAllowed", () => {
  const cases: Array<[string, string[], boolean]> = [
    ["/healthz", ["/healthz", "/readyz", "/livez"], true],
    ["/healthz/ping", ["/healthz"], false],
    ["/healthz/ping", ["/healthz*"], true],
    ["/metrics", ["/healthz"], false],
    ["/", ["/"], true],
    ["/apis", [], false],
  ];
  for (const [path, allowed, want] of cases) {
    it(`${want ? "allows" : "does not allow"} ${path} with ${JSON.stringify(allowed)}`, () => {
      assert.equal(pathAlwaysAllowed(path, allowed), want);
    });
  }
});
