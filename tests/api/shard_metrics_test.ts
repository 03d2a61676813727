import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  createAuthorizationMetrics,
  createShardMetrics,
  MetricsRegistry,
} from "../../src/api/own_metrics.ts";

describe("createShardMetrics", () => {
  it("shows the replica's share as gauges and its pushes as counters, read at each scrape", () => {
    const registry = new MetricsRegistry();
    const now = {
      members: 3,
      owned: 14,
      collections: 40,
      recordsSent: 56,
      recordsReceived: 52,
      sendFailures: 1,
    };
    createShardMetrics(registry, () => now);
    const text = registry.render();
    for (
      const line of [
        "# TYPE hpa_metrics_adapter_shard_members gauge",
        "hpa_metrics_adapter_shard_members 3",
        "hpa_metrics_adapter_shard_owned_collections 14",
        "hpa_metrics_adapter_shard_collections 40",
        "# TYPE hpa_metrics_adapter_shard_pushed_records_total counter",
        "hpa_metrics_adapter_shard_pushed_records_total 56",
        "hpa_metrics_adapter_shard_received_records_total 52",
        "# TYPE hpa_metrics_adapter_shard_push_failures_total counter",
        "hpa_metrics_adapter_shard_push_failures_total 1",
      ]
    ) assert.ok(text.split("\n").includes(line), `${line} in\n${text}`);
    now.owned = 20;
    assert.ok(registry.render().includes("\nhpa_metrics_adapter_shard_owned_collections 20\n"));
  });
});

describe("createAuthorizationMetrics", () => {
  it("shows the SubjectAccessReview cache as a gauge and the reviews as counters", () => {
    const registry = new MetricsRegistry();
    const now = { cacheEntries: 4, reviews: 9, groupReviews: 2, decidedByGroup: 3_996 };
    createAuthorizationMetrics(registry, () => now);
    const text = registry.render();
    for (
      const line of [
        "# TYPE hpa_metrics_adapter_authorization_cache_entries gauge",
        "hpa_metrics_adapter_authorization_cache_entries 4",
        "# TYPE hpa_metrics_adapter_subject_access_reviews_total counter",
        "hpa_metrics_adapter_subject_access_reviews_total 9",
        "# TYPE hpa_metrics_adapter_group_subject_access_reviews_total counter",
        "hpa_metrics_adapter_group_subject_access_reviews_total 2",
        "# TYPE hpa_metrics_adapter_authorization_group_decisions_total counter",
        "hpa_metrics_adapter_authorization_group_decisions_total 3996",
      ]
    ) assert.ok(text.split("\n").includes(line), `${line} in\n${text}`);
    now.cacheEntries = 2_020;
    assert.ok(
      registry.render().includes("\nhpa_metrics_adapter_authorization_cache_entries 2020\n"),
    );
  });
});
