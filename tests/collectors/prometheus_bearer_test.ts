/**
 * `bearer-token-from` (issue 23): a Prometheus metric sends the bearer token of a KEDA trigger
 * authentication that the Knative reconciler read into the shared store, only to the server
 * the metric names, and only for HPAs of the TriggerAuthentication's namespace.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { BearerTokens } from "../../src/collectors/bearer_tokens.ts";
import { createPrometheusFactory } from "../../src/collectors/prometheus.ts";
import {
  context,
  externalPlan,
  type FakePrometheusApi,
  scalarBody,
  startFakePrometheusApi,
} from "./prometheus_support.ts";

let fake: FakePrometheusApi;

before(async () => {
  fake = await startFakePrometheusApi();
  fake.reply = () => ({ status: 200, body: scalarBody("4") });
});

after(async () => {
  await fake?.close();
});

function plan(namespace: string, config: Record<string, string>) {
  return externalPlan("prometheus", { query: "up", ...config }, {
    hpa: { namespace, name: "rev-1" },
  });
}

describe("bearer-token-from", () => {
  it("sends the token of the metric's own namespace's TriggerAuthentication, read at each collection", async () => {
    const tokens = new BearerTokens();
    const factory = createPrometheusFactory({ bearerTokens: tokens });
    const c = factory.create({
      plan: plan("shop", {
        "prometheus-server": fake.url,
        "bearer-token-from": "TriggerAuthentication/prom-auth",
      }),
    });
    await assert.rejects(
      c.collect(context()),
      /no bearer token for shop\/TriggerAuthentication\/prom-auth yet \(the Knative reconciler, --knative-autoscaler, reads it\)/,
    );
    tokens.set("shop/TriggerAuthentication/prom-auth", { token: "tok-1" });
    fake.seen.length = 0;
    const r = await c.collect(context());
    assert.equal(r.samples[0].value, 4);
    assert.deepEqual(fake.seen.map((s) => s.authorization), ["Bearer tok-1"]);
    // rotated
    tokens.set("shop/TriggerAuthentication/prom-auth", { token: "tok-2" });
    await c.collect(context());
    assert.equal(fake.seen.at(-1)?.authorization, "Bearer tok-2");
    tokens.set("shop/TriggerAuthentication/prom-auth", { error: "Secret shop/s not found" });
    await assert.rejects(c.collect(context()), /Secret shop\/s not found/);
  });

  it("never hands another namespace's TriggerAuthentication token to an HPA", async () => {
    const tokens = new BearerTokens();
    tokens.set("shop/TriggerAuthentication/prom-auth", { token: "tok-1" });
    const c = createPrometheusFactory({ bearerTokens: tokens }).create({
      plan: plan("other", {
        "prometheus-server": fake.url,
        "bearer-token-from": "TriggerAuthentication/prom-auth",
      }),
    });
    fake.seen.length = 0;
    await assert.rejects(c.collect(context()), /no bearer token for other\/TriggerAuthentication/);
    assert.equal(fake.seen.length, 0);
  });

  it("shares a ClusterTriggerAuthentication's token across namespaces", async () => {
    const tokens = new BearerTokens();
    tokens.set("/ClusterTriggerAuthentication/cluster-auth", { token: "tok-c" });
    const c = createPrometheusFactory({ bearerTokens: tokens }).create({
      plan: plan("other", {
        "prometheus-server": fake.url,
        "bearer-token-from": "ClusterTriggerAuthentication/cluster-auth",
      }),
    });
    fake.seen.length = 0;
    await c.collect(context());
    assert.equal(fake.seen[0].authorization, "Bearer tok-c");
  });

  it("needs the server the metric names, and a valid reference", () => {
    const factory = createPrometheusFactory({
      server: { url: fake.url, tokenFile: null },
      bearerTokens: new BearerTokens(),
    });
    assert.throws(
      () =>
        factory.create({
          plan: plan("shop", { "bearer-token-from": "TriggerAuthentication/prom-auth" }),
        }),
      /sets bearer-token-from without prometheus-server: the token is sent only to the server the metric names/,
    );
    assert.throws(
      () =>
        factory.create({
          plan: plan("shop", { "prometheus-server": fake.url, "bearer-token-from": "Secret/x" }),
        }),
      /invalid bearer-token-from "Secret\/x" .*want TriggerAuthentication\/<name> or ClusterTriggerAuthentication\/<name>/,
    );
  });

  it("keeps metrics with different tokens in different collections", () => {
    const factory = createPrometheusFactory({ bearerTokens: new BearerTokens() });
    const key = (ns: string, ref?: string) =>
      factory.create({
        plan: plan(ns, {
          "prometheus-server": fake.url,
          ...(ref ? { "bearer-token-from": ref } : {}),
        }),
      }).queryKey;
    assert.equal(
      new Set([key("a"), key("a", "TriggerAuthentication/x"), key("b", "TriggerAuthentication/x")])
        .size,
      3,
    );
  });
});
