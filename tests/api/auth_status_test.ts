import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { forbiddenMessage } from "../../src/api/auth_status.ts";
import { requestAttributes } from "../../src/api/request_attributes.ts";

describe("forbiddenMessage", () => {
  const user = { name: "u", groups: [], extra: {} };
  const attrs = requestAttributes(
    "GET",
    new URL("https://x/apis/custom.metrics.k8s.io/v1beta1/namespaces/n/services/svc/<m>"),
  );
  it("escapes HTML in the Go message and keeps the reason as it is", () => {
    assert.equal(
      forbiddenMessage(user, attrs, "<r>"),
      'services.custom.metrics.k8s.io "svc" is forbidden: User "u" cannot get resource ' +
        '"services/&lt;m&gt;" in API group "custom.metrics.k8s.io" in the namespace "n": <r>',
    );
  });
  it("words cluster-scoped requests without a name", () => {
    const cluster = requestAttributes(
      "GET",
      new URL("https://x/apis/external.metrics.k8s.io/v1beta1/m"),
    );
    assert.equal(
      forbiddenMessage(user, cluster, ""),
      'm.external.metrics.k8s.io is forbidden: User "u" cannot list resource "m" in API group ' +
        '"external.metrics.k8s.io" at the cluster scope',
    );
  });
});
