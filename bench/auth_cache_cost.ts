/**
 * What the authorization caches cost per entry (issue 28), measured on the runtime it runs on
 * (the binary's is Bun): the review path's SubjectAccessReview cache and the fast path's memo,
 * filled as the cluster section's full read fills them, from a fake API that allows every
 * review, 2,000 HPAs (an object metric and an external metric each, 4,000 URLs). Prints one
 * line `BENCHJSON {...}`: the heap in use after a full collection grown by the review path's
 * cache (every URL through `check`) and then by the fast path's memo (every URL through
 * `allowsWithoutIo`), in all and per entry.
 *
 *   bun bench/auth_cache_cost.ts [--group-reviews=false]
 */
import { X509Certificate } from "node:crypto";
import { createDelegatedAuth } from "../src/api/auth.ts";
import { makeTestPki } from "../tests/fakes/auth_api.ts";
import { servingPaths } from "./manifests.mjs";

const groupReviews = !process.argv.includes("--group-reviews=false");
const hpas = 2000;

function gc(): void {
  const g = globalThis as { Bun?: { gc(force: boolean): void }; gc?: () => void };
  if (g.Bun) g.Bun.gc(true);
  else g.gc?.();
}
function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

const pki = makeTestPki();
const reviews: unknown[] = [];
const auth = createDelegatedAuth({
  requestHeader: {
    clientCa: pki.requestHeaderCa.cert,
    allowedNames: ["front-proxy-client"],
    usernameHeaders: ["X-Remote-User"],
    uidHeaders: [],
    groupHeaders: ["X-Remote-Group"],
    extraHeaderPrefixes: [],
  },
  lookupConfigMap: false,
  groupReviews,
  kubeRequest: (req) => {
    reviews.push(req.body);
    const spec = (req.body as { spec: unknown }).spec;
    return Promise.resolve({
      status: 201,
      body: { kind: "SubjectAccessReview", spec, status: { allowed: true } },
    });
  },
});
await auth.start();
const rawHeaders = [
  "X-Remote-User",
  "system:serviceaccount:kube-system:horizontal-pod-autoscaler",
  "X-Remote-Group",
  "system:serviceaccounts",
  "X-Remote-Group",
  "system:serviceaccounts:kube-system",
  "X-Remote-Group",
  "system:authenticated",
];
const connection = {
  remoteAddress: "10.213.0.1",
  encrypted: true,
  peerCertificate: {
    authorized: true,
    authorizationError: null,
    commonName: "front-proxy-client",
    organizations: [],
    chain: [new Uint8Array(new X509Certificate(pki.frontProxy.cert).raw)],
    notAfter: Date.now() + 3_600_000,
  },
  rawHeaders,
};
const urls: string[] = [];
for (let i = 0; i < hpas; i++) {
  const p = servingPaths(i);
  urls.push(p.object, p.external);
}
const headers = new Headers();
for (let i = 0; i < rawHeaders.length; i += 2) headers.append(rawHeaders[i], rawHeaders[i + 1]);

const before = heapUsed();
// the review path alone (what the server does when the fast path cannot decide): the
// SubjectAccessReview cache
for (const url of urls) {
  const r = await auth.check(new Request(`https://localhost${url}`, { headers }), connection);
  if (r.response) throw new Error(`${url}: ${r.response.status}`);
}
const reviewed = heapUsed();
// then the fast path over every URL: its memo of users and decisions
let fastAllowed = 0;
for (const url of urls) {
  if (auth.allowsWithoutIo!({ method: "GET", url, headers: {}, connection })) fastAllowed++;
}
const after = heapUsed();
const stats = auth.reviewStats!();
const out = {
  runtime: typeof (globalThis as { Bun?: unknown }).Bun === "object" ? "bun" : "node",
  groupReviews,
  urls: urls.length,
  reviews: reviews.length,
  sarCacheEntries: stats.cacheEntries,
  sarCacheBytes: reviewed - before,
  bytesPerSarEntry: Math.round((reviewed - before) / stats.cacheEntries),
  fastAllowed,
  fastMemoBytes: after - reviewed,
  fastMemoBytesPerUrl: Math.round((after - reviewed) / urls.length),
};
console.log(`BENCHJSON ${JSON.stringify(out)}`);
auth.stop();
