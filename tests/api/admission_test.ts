import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  admissionAnswer,
  admissionAnswerText,
  type AdmissionOptions,
  fitWarnings,
  MAX_ADMISSION_REVIEW_BYTES,
  parseAdmissionReview,
} from "../../src/api/admission.ts";
import { createApp } from "../../src/api/app.ts";
import { MetricStore } from "../../src/store/store.ts";

function review(request: Record<string, unknown>): Record<string, unknown> {
  return { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request };
}

const HPA_REQUEST = {
  uid: "705ab4f5-6393-11e8-b7cc-42010a800002",
  kind: { group: "autoscaling", version: "v2", kind: "HorizontalPodAutoscaler" },
  operation: "CREATE",
  namespace: "shop",
  name: "web",
  object: { metadata: { name: "web", namespace: "shop" } },
  oldObject: null,
};

const fixed = (errors: string[], warnings: string[] = []): AdmissionOptions["review"] => () => ({
  errors,
  warnings,
});

describe("admission answer", () => {
  it("allows with one warning per problem, errors first", () => {
    const a = admissionAnswer(review(HPA_REQUEST), {
      review: fixed(["bad interval"], ["slow"]),
      denyInvalid: false,
    });
    assert.deepEqual(a, {
      status: 200,
      body: {
        apiVersion: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        response: {
          uid: HPA_REQUEST.uid,
          allowed: true,
          warnings: ["bad interval", "slow"],
        },
      },
    });
  });

  it("allows without warnings when nothing is wrong", () => {
    const a = admissionAnswer(review(HPA_REQUEST), { review: fixed([]), denyInvalid: true });
    assert.deepEqual((a.body as { response: unknown }).response, {
      uid: HPA_REQUEST.uid,
      allowed: true,
    });
  });

  it("denies with a 422 Status listing the errors in deny mode, warnings kept", () => {
    const a = admissionAnswer(review(HPA_REQUEST), {
      review: fixed(["first", "second"], ["w"]),
      denyInvalid: true,
    });
    assert.deepEqual((a.body as { response: unknown }).response, {
      uid: HPA_REQUEST.uid,
      allowed: false,
      status: {
        metadata: {},
        status: "Failure",
        message: "first; second",
        reason: "Invalid",
        code: 422,
      },
      warnings: ["w"],
    });
  });

  it("allows a DELETE (no object) without asking the review", () => {
    const a = admissionAnswer(
      review({ ...HPA_REQUEST, operation: "DELETE", object: null }),
      {
        review: () => {
          throw new Error("not called");
        },
        denyInvalid: true,
      },
    );
    assert.deepEqual((a.body as { response: unknown }).response, {
      uid: HPA_REQUEST.uid,
      allowed: true,
    });
  });

  it("allows with a warning when the review throws", () => {
    const a = admissionAnswer(review(HPA_REQUEST), {
      review: () => {
        throw new Error("boom");
      },
      denyInvalid: true,
    });
    assert.deepEqual((a.body as { response: unknown }).response, {
      uid: HPA_REQUEST.uid,
      allowed: true,
      warnings: ["hpa-metrics-adapter could not check this object: boom"],
    });
  });

  it("answers 400 with a Status for bodies that are not a v1 AdmissionReview", () => {
    const cases: [unknown, string][] = [
      [null, "invalid AdmissionReview: the body is not a JSON object"],
      [[1], "invalid AdmissionReview: the body is not a JSON object"],
      [
        { apiVersion: "admission.k8s.io/v1beta1", kind: "AdmissionReview", request: HPA_REQUEST },
        'invalid AdmissionReview: want an AdmissionReview of admission.k8s.io/v1, got kind "AdmissionReview" of "admission.k8s.io/v1beta1"',
      ],
      [
        { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview" },
        "invalid AdmissionReview: the AdmissionReview has no request",
      ],
      [
        review({ ...HPA_REQUEST, uid: 7 }),
        "invalid AdmissionReview: the AdmissionReview request has no uid",
      ],
    ];
    for (const [body, message] of cases) {
      const a = admissionAnswer(body, { review: fixed(["x"]), denyInvalid: false });
      assert.equal(a.status, 400, JSON.stringify(body));
      assert.deepEqual(a.body, {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message,
        reason: "BadRequest",
        code: 400,
      });
    }
  });

  it("answers 400 for text that is not JSON and 413 for a body over the cap", () => {
    const opts = { review: fixed([]), denyInvalid: false };
    assert.equal(admissionAnswerText("{", opts).status, 400);
    assert.equal(admissionAnswerText("", opts).status, 400);
    const over = admissionAnswerText(null, opts);
    assert.equal(over.status, 413);
    assert.equal(
      (over.body as { message: string }).message,
      `the AdmissionReview is over ${MAX_ADMISSION_REVIEW_BYTES} bytes`,
    );
  });

  it("never throws on arbitrary JSON values (property)", () => {
    // a small deterministic generator of JSON values shaped like reviews and not
    let seed = 42;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const atoms = [null, true, 0, -1, 1e308, "", "x", "\u0000", "admission.k8s.io/v1"];
    const value = (depth: number): unknown => {
      const k = rand(depth > 3 ? 1 : 4);
      if (k === 0) return atoms[rand(atoms.length)];
      if (k === 1) return Array.from({ length: rand(3) }, () => value(depth + 1));
      const keys = [
        "apiVersion",
        "kind",
        "request",
        "uid",
        "object",
        "oldObject",
        "metadata",
        "namespace",
        "name",
        "operation",
        "__proto__",
      ];
      const o: Record<string, unknown> = {};
      for (let i = rand(5); i > 0; i--) o[keys[rand(keys.length)]] = value(depth + 1);
      return o;
    };
    for (let i = 0; i < 3000; i++) {
      const v = rand(2) === 0 ? value(0) : review(value(1) as Record<string, unknown>);
      const text = JSON.stringify(v) ?? "null";
      const a = admissionAnswerText(text, { review: fixed(["e"]), denyInvalid: rand(2) === 0 });
      assert.ok(a.status === 200 || a.status === 400, `${a.status} for ${text}`);
      if (a.status === 200) {
        const parsed = parseAdmissionReview(JSON.parse(text));
        assert.ok(!("error" in parsed));
      }
      // a cut of a valid review is not JSON or not a review: never a throw
      admissionAnswerText(text.slice(0, rand(text.length + 1)), {
        review: fixed([]),
        denyInvalid: false,
      });
    }
  });
});

describe("fitWarnings", () => {
  it("replaces control characters, cuts each at 256 characters and drops duplicates", () => {
    const long = "a".repeat(300);
    assert.deepEqual(fitWarnings(["x\ny", long, "x\ny"]), ["x y", "a".repeat(253) + "..."]);
  });

  it("keeps the total under 4096 characters and counts the rest", () => {
    const many = Array.from({ length: 40 }, (_, i) => `${i} ${"b".repeat(200)}`);
    const out = fitWarnings(many);
    assert.equal(out.length, 20);
    assert.equal(
      out.at(-1),
      "21 more problems not shown: run hpa-metrics-adapter plan -f on the manifest",
    );
    assert.ok(out.join("").length <= 4096);
  });
});

describe("the webhook route", () => {
  const app = (admission?: AdmissionOptions) =>
    createApp({
      store: new MetricStore(),
      pods: { listPods: () => [] },
      now: () => 0,
      ready: () => true,
      // every other route is refused: the webhook's skips it
      authorize: Object.assign(
        (() => Promise.resolve(new Response("no", { status: 401 }))) as never,
        {},
      ),
      ...(admission ? { admission } : {}),
    });

  it("answers POST /validate/... without authorization when on", async () => {
    const a = app({ review: fixed(["bad"]), denyInvalid: false });
    const res = await a.request("/validate/horizontalpodautoscalers", {
      method: "POST",
      body: JSON.stringify(review(HPA_REQUEST)),
    });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), {
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      response: { uid: HPA_REQUEST.uid, allowed: true, warnings: ["bad"] },
    });
    assert.equal(a.bodyLimit("POST", "/validate/x"), MAX_ADMISSION_REVIEW_BYTES);
    assert.equal(a.bodyLimit("POST", "/apis/custom.metrics.k8s.io/v1beta2"), 0);
    // garbage is a 400, not a crash
    const bad = await a.request("/validate/x", { method: "POST", body: "\u0000not json" });
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).reason, "BadRequest");
  });

  it("is behind authorization and takes no body when off", async () => {
    const a = app();
    const res = await a.request("/validate/x", {
      method: "POST",
      body: JSON.stringify(review(HPA_REQUEST)),
    });
    assert.equal(res.status, 401);
    assert.equal(a.bodyLimit("POST", "/validate/x"), 0);
  });

  it("stops reading a body over the cap", async () => {
    const a = app({ review: fixed([]), denyInvalid: false });
    const res = await a.request("/validate/x", {
      method: "POST",
      body: "x".repeat(MAX_ADMISSION_REVIEW_BYTES + 1),
    });
    assert.equal(res.status, 413);
  });
});
