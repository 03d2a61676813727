import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { EM, fixture, get, getJson, status, TS } from "./app_support.ts";

describe("external.metrics.k8s.io", () => {
  it("serves values whose labels match the labelSelector", async () => {
    const { options } = fixture();
    const r = await get(
      options,
      `${EM}/namespaces/default/queue-length?labelSelector=${
        encodeURIComponent("queue=orders,type=sqs")
      }`,
    );
    assert.equal(r.status, 200);
    assert.equal(
      r.body,
      JSON.stringify({
        kind: "ExternalMetricValueList",
        apiVersion: "external.metrics.k8s.io/v1beta1",
        metadata: {},
        items: [{
          metricName: "queue-length",
          metricLabels: { queue: "orders", type: "sqs" },
          timestamp: TS,
          value: "1200k",
        }],
      }),
    );
  });

  it("never serves another namespace's values", async () => {
    const { options } = fixture();
    const [code, body] = await getJson(
      options,
      `${EM}/namespaces/other/queue-length?labelSelector=queue%3Dorders`,
    );
    assert.equal(code, 404);
    assert.deepEqual(
      body,
      status(
        404,
        "NotFound",
        'the server could not find the metric queue-length for provided labels: no HPA in namespace other asks for external metric "queue-length" with selector "queue=orders"',
      ),
    );
  });

  it("answers 404 for a path that is not a metric", async () => {
    const { options } = fixture();
    const [code, body] = await getJson(options, `${EM}/queue-length`);
    assert.equal(code, 404);
    assert.deepEqual(
      body,
      status(404, "NotFound", "the server could not find the requested resource"),
    );
  });
});
