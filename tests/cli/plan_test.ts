import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { planCommand } from "../../src/cli/plan.ts";
import { UsageError } from "../../src/cli/command.ts";
import { captureIO } from "./capture_io.ts";
import { kedaMilliQuantity } from "../../src/core/keda/hpa.ts";

const root = new URL("../../", import.meta.url).pathname;

const GOOD = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
  namespace: shop
  annotations:
    metric-config.pods.rps.json-path/json-key: "$.rps"
    metric-config.pods.rps.json-path/port: "9090"
    metric-config.pods.rps.json-path/interval: "15s"
    metric-config.external.depth.influxdb/query: "from()"
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  metrics:
    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}
    - type: Pods
      pods:
        metric: {name: rps}
        target: {type: AverageValue, averageValue: "10"}
    - type: External
      external:
        metric: {name: depth, selector: {matchLabels: {type: influxdb}}}
        target: {type: Value, value: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: not-an-hpa}
`;

const BAD = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: worker
  namespace: jobs
  annotations:
    metric-config.external.queue.prometheus.x/query: "up"
spec:
  scaleTargetRef: {kind: Deployment, name: worker}
  maxReplicas: 3
  metrics:
    - type: External
      external:
        metric: {name: queue}
        target: {type: AverageValue, averageValue: "5"}
`;

const INVALID = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: broken, namespace: jobs}
spec:
  scaleTargetRef: {kind: Deployment, name: broken}
  metrics: []
`;

let dir = "";
let good = "";
let bad = "";
let invalid = "";
let unreadable = "";

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "plan-test-"));
  await mkdir(join(dir, "ok"));
  good = join(dir, "ok", "good.yaml");
  bad = join(dir, "bad.yaml");
  invalid = join(dir, "invalid.yaml");
  unreadable = join(dir, "unreadable.yaml");
  await writeFile(good, GOOD);
  await writeFile(bad, BAD);
  await writeFile(invalid, INVALID);
  await writeFile(unreadable, "kind: [unclosed\n");
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const WEB_RPS = {
  hpa: "shop/web",
  metricType: "Pods",
  metricName: "rps",
  collector: "json-path",
  intervalSeconds: 15,
  minPodReadyAgeSeconds: 0,
  perReplica: false,
  config: { "json-key": "$.rps", port: "9090" },
  error: null,
};

const WEB_DEPTH = {
  hpa: "shop/web",
  metricType: "External",
  metricName: "depth",
  collector: "influxdb",
  intervalSeconds: 60,
  minPodReadyAgeSeconds: 0,
  perReplica: false,
  config: { query: "from()", type: "influxdb" },
  error: null,
};

const WORKER_QUEUE = {
  hpa: "jobs/worker",
  metricType: "External",
  metricName: "queue",
  collector: null,
  intervalSeconds: 60,
  minPodReadyAgeSeconds: 0,
  perReplica: false,
  config: {},
  error:
    "External metric `queue` has no `type` label; set matchLabels.type to one of: formula, influxdb, json-path, nakadi, prometheus, requests-per-second, sqs-queue-length, zmon",
  warnings: [
    'ignored annotation metric-config.external.queue.prometheus.x/query: want 4 dot-separated parts before "/" (metric-config.<type>.<metric>.<collector>), got 5 (a metric name with dots cannot be configured)',
  ],
};

describe("plan command", () => {
  it("prints one JSON element per planned metric with exactly the documented keys in order", async () => {
    const io = captureIO();
    assert.equal(await planCommand.run(["-f", join(dir, "ok"), "-o", "json"], io), 0);
    assert.equal(io.out(), JSON.stringify([WEB_RPS, WEB_DEPTH], null, 2) + "\n");
    assert.deepEqual(
      Object.keys(JSON.parse(io.out())[0]),
      [
        "hpa",
        "metricType",
        "metricName",
        "collector",
        "intervalSeconds",
        "minPodReadyAgeSeconds",
        "perReplica",
        "config",
        "error",
      ],
    );
    assert.equal(io.err(), "");
  });

  it("adds warnings only when there are some, and exits 0 on plan errors without --strict", async () => {
    const io = captureIO();
    assert.equal(await planCommand.run(["-f", good, "-f", bad, "--output=json"], io), 0);
    assert.equal(io.out(), JSON.stringify([WEB_RPS, WEB_DEPTH, WORKER_QUEUE], null, 2) + "\n");
  });

  it("exits 1 on plan errors with --strict, and 0 when there are none", async () => {
    const failing = captureIO();
    assert.equal(
      await planCommand.run(["-f", `${good},${bad}`, "--strict", "-o", "json"], failing),
      1,
    );
    assert.equal(JSON.parse(failing.out()).length, 3);
    const passing = captureIO();
    assert.equal(await planCommand.run(["-f", good, "--strict", "-o", "json"], passing), 0);
  });

  it("reports metrics whose collector serve's flags leave disabled", async () => {
    const io = captureIO();
    assert.equal(
      await planCommand.run(["-f", good, "-o", "json", "--prometheus-server=http://prom:9090"], io),
      0,
    );
    assert.deepEqual(JSON.parse(io.out()), [WEB_RPS, {
      ...WEB_DEPTH,
      error: "collector `influxdb` is not enabled (start with --influxdb-address)",
    }]);
    // enabled, but serve would still refuse it: no organization to query
    const noOrg = captureIO();
    await planCommand.run(
      ["-f", good, "-o", "json", "--influxdb-address", "http://influx"],
      noOrg,
    );
    assert.deepEqual(JSON.parse(noOrg.out()), [WEB_RPS, {
      ...WEB_DEPTH,
      error: "influxdb metric depth needs --influxdb-org or an org config",
    }]);
    const enabled = captureIO();
    await planCommand.run(
      ["-f", good, "-o", "json", "--influxdb-address", "http://influx", "--influxdb-org", "o"],
      enabled,
    );
    assert.deepEqual(JSON.parse(enabled.out()), [WEB_RPS, WEB_DEPTH]);
  });

  it("refuses in plan --strict every config that serve's collectors refuse, with their words", async () => {
    const cases: [string, string, Record<string, string>, string][] = [
      [
        "ll-int",
        "json-path",
        { endpoint: "http://2852039166/x" },
        'invalid endpoint "http://2852039166/x" for External metric `ll-int` of HPA faults/h-ll-int (annotation metric-config.external.ll-int.json-path/endpoint): a link-local address (allow with --allow-link-local-targets)',
      ],
      [
        "ll-hex",
        "json-path",
        { endpoint: "http://0xa9fea9fe/x" },
        'invalid endpoint "http://0xa9fea9fe/x" for External metric `ll-hex` of HPA faults/h-ll-hex (annotation metric-config.external.ll-hex.json-path/endpoint): a link-local address (allow with --allow-link-local-targets)',
      ],
      [
        "ll-dot",
        "json-path",
        { endpoint: "http://169.254.169.254./x" },
        'invalid endpoint "http://169.254.169.254./x" for External metric `ll-dot` of HPA faults/h-ll-dot (annotation metric-config.external.ll-dot.json-path/endpoint): a link-local address (allow with --allow-link-local-targets)',
      ],
      [
        "ll-map",
        "json-path",
        { endpoint: "http://[::ffff:169.254.169.254]/x" },
        'invalid endpoint "http://[::ffff:169.254.169.254]/x" for External metric `ll-map` of HPA faults/h-ll-map (annotation metric-config.external.ll-map.json-path/endpoint): a link-local address (allow with --allow-link-local-targets)',
      ],
      [
        "ll-v6",
        "json-path",
        { endpoint: "http://[fe80::1]/x" },
        'invalid endpoint "http://[fe80::1]/x" for External metric `ll-v6` of HPA faults/h-ll-v6 (annotation metric-config.external.ll-v6.json-path/endpoint): a link-local address (allow with --allow-link-local-targets)',
      ],
      [
        "ll-prom",
        "prometheus",
        { "prometheus-server": "http://169.254.169.254" },
        'invalid prometheus-server "http://169.254.169.254" for External metric `ll-prom` of HPA faults/h-ll-prom (annotation metric-config.external.ll-prom.prometheus/prometheus-server): a link-local address (allow with --allow-link-local-targets)',
      ],
      [
        "file",
        "prometheus",
        { "prometheus-server": "file:///etc/passwd" },
        'invalid prometheus-server "file:///etc/passwd" for External metric `file` of HPA faults/h-file (annotation metric-config.external.file.prometheus/prometheus-server): want an http:// or https:// URL',
      ],
      [
        "alias",
        "prometheus",
        { "prometheus-server-alias": "nope" },
        'unknown prometheus-server-alias "nope" for metric alias (no --additional-prometheus-server given)',
      ],
      [
        "bearer",
        "prometheus",
        {
          "prometheus-server": "http://prom.shop:9090",
          "bearer-token-from": "TriggerAuthentication/prom-auth",
        },
        'invalid bearer-token-from "TriggerAuthentication/prom-auth" for External metric `bearer` of HPA faults/h-bearer (annotation metric-config.external.bearer.prometheus/bearer-token-from): no longer read: it was filled by the Knative reconciler, which now resolves a TriggerAuthentication as KEDA does; set the token with --prometheus-server-token-file (the operator\'s server) or move the metric to a KEDA ScaledObject with a TriggerAuthentication',
      ],
      [
        "syntax",
        "json-path",
        { "json-key": "$[" },
        'invalid json-key "$[" for External metric `syntax` of HPA faults/h-syntax (annotation metric-config.external.syntax.json-path/json-key): unterminated "[" at position 1',
      ],
      [
        "eval",
        "json-path",
        { "json-eval": "process.exit(3)" },
        'invalid json-eval "process.exit(3)" for External metric `eval` of HPA faults/h-eval (annotation metric-config.external.eval.json-path/json-eval): unexpected "." at position 7',
      ],
      [
        "timeout",
        "json-path",
        { "connect-timeout": "-5s" },
        'invalid connect-timeout "-5s" for External metric `timeout` of HPA faults/h-timeout (annotation metric-config.external.timeout.json-path/connect-timeout): must not be negative',
      ],
      [
        "url",
        "json-path",
        { endpoint: "http://[::1" },
        'invalid endpoint "http://[::1" for External metric `url` of HPA faults/h-url (annotation metric-config.external.url.json-path/endpoint): want an http:// or https:// URL',
      ],
    ];
    const docs = cases.map(([name, collector, config]) => {
      const base: Record<string, string> = collector === "json-path"
        ? { endpoint: "http://127.0.0.1:9/x", "json-key": "$.v" }
        : { query: "up" };
      const merged = { ...base, ...config };
      if (merged["json-eval"]) delete merged["json-key"];
      return JSON.stringify({
        apiVersion: "autoscaling/v2",
        kind: "HorizontalPodAutoscaler",
        metadata: {
          name: `h-${name}`,
          namespace: "faults",
          annotations: Object.fromEntries(
            Object.entries(merged).map((
              [k, v],
            ) => [`metric-config.external.${name}.${collector}/${k}`, v]),
          ),
        },
        spec: {
          scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
          maxReplicas: 3,
          metrics: [{
            type: "External",
            external: {
              metric: { name, selector: { matchLabels: { type: collector } } },
              target: { type: "Value", value: "1" },
            },
          }],
        },
      });
    });
    const own = await mkdtemp(join(tmpdir(), "plan-refused-"));
    const file = join(own, "serve-refuses.yaml");
    await writeFile(file, docs.join("\n---\n"));
    const io = captureIO();
    const args = ["-f", file, "-o", "json", "--strict", "--prometheus-server=http://prom:9090"];
    try {
      assert.equal(await planCommand.run(args, io), 1);
    } finally {
      await rm(own, { recursive: true, force: true });
    }
    assert.deepEqual(
      JSON.parse(io.out()).map((
        r: { metricName: string; error: string },
      ) => [r.metricName, r.error]),
      cases.map(([name, , , error]) => [name, error]),
    );
  });

  it("exits 1 under --strict on the four configs plan used to call OK and the collectors refused", async () => {
    const own = await mkdtemp(join(tmpdir(), "plan-four-"));
    const file = join(own, "four.yaml");
    await writeFile(
      file,
      `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
  namespace: shop
  annotations:
    metric-config.pods.a.json-path/json-key: "{}"
    metric-config.pods.a.json-path/port: "9090"
    metric-config.pods.b.json-path/json-key: "$.v"
    metric-config.pods.b.json-path/port: "9090"
    metric-config.pods.b.json-path/request-timeout: "-256ms"
    metric-config.pods.c.json-path/json-key: "$.v"
    metric-config.pods.c.json-path/port: "9090"
    metric-config.pods.c.json-path/connect-timeout: "-256ms"
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 3
  metrics:
  - {type: Pods, pods: {metric: {name: a}, target: {type: AverageValue, averageValue: "1"}}}
  - {type: Pods, pods: {metric: {name: b}, target: {type: AverageValue, averageValue: "1"}}}
  - {type: Pods, pods: {metric: {name: c}, target: {type: AverageValue, averageValue: "1"}}}
  - type: External
    external:
      metric:
        name: n
        selector:
          matchLabels: {type: nakadi, metric-type: unconsumed-events, owning-application: x, consumer-group: g, event-types: "  , ,  "}
      target: {type: Value, value: "1"}
`,
    );
    const io = captureIO();
    try {
      assert.equal(await planCommand.run(["-f", file, "-o", "json", "--strict"], io), 1);
    } finally {
      await rm(own, { recursive: true, force: true });
    }
    const errors = JSON.parse(io.out()).map((r: { error: string | null }) => r.error);
    const at = (m: string, key: string): string =>
      `(annotation metric-config.pods.${m}.json-path/${key})`;
    assert.deepEqual(errors, [
      `invalid json-key "{}" for Pods metric \`a\` of HPA shop/web ${
        at("a", "json-key")
      }: a JSONPath starts with "$"`,
      `invalid request-timeout "-256ms" for Pods metric \`b\` of HPA shop/web ${
        at("b", "request-timeout")
      }: must not be negative`,
      `invalid connect-timeout "-256ms" for Pods metric \`c\` of HPA shop/web ${
        at("c", "connect-timeout")
      }: must not be negative`,
      'invalid event-types "  , ,  " for External metric `n` of HPA shop/web (matchLabels.event-types): want a comma-separated list of event type names',
    ]);
  });

  it("leaves out a backend the flags do not set up only when no collector flag is given", async () => {
    const io = captureIO();
    assert.equal(await planCommand.run(["-f", good, "-o", "json", "--strict"], io), 0);
    assert.deepEqual(JSON.parse(io.out()), [WEB_RPS, WEB_DEPTH]);
  });

  it("takes the default interval from --default-collection-interval", async () => {
    const io = captureIO();
    await planCommand.run(["-f", good, "-o", "json", "--default-collection-interval", "2m"], io);
    assert.deepEqual(
      JSON.parse(io.out()).map((r: { intervalSeconds: number }) => r.intervalSeconds),
      [
        15,
        120,
      ],
    );
  });

  it("prints a table for people, each HPA warning once", async () => {
    const io = captureIO();
    assert.equal(await planCommand.run(["-f", good, "-f", bad], io), 0);
    assert.equal(
      io.out(),
      [
        "HPA          TYPE      METRIC  COLLECTOR  INTERVAL  STATUS",
        "shop/web     Pods      rps     json-path  15s       OK",
        "shop/web     External  depth   influxdb   1m0s      OK",
        "jobs/worker  External  queue   -          1m0s      External metric `queue` has no `type` label; set matchLabels.type to one of: formula, influxdb, json-path, nakadi, prometheus, requests-per-second, sqs-queue-length, zmon",
        '    warning: ignored annotation metric-config.external.queue.prometheus.x/query: want 4 dot-separated parts before "/" (metric-config.<type>.<metric>.<collector>), got 5 (a metric name with dots cannot be configured)',
        "",
        "3 metrics in 2 HPAs: 1 error, 1 warning (all collectors assumed enabled)",
        "",
      ].join("\n"),
    );
  });

  it("prints unreadable files and invalid HPAs on stderr, plans the rest, and exits 1", async () => {
    const io = captureIO();
    assert.equal(await planCommand.run(["-f", dir, "-o", "json"], io), 1);
    assert.equal(io.out(), JSON.stringify([WORKER_QUEUE, WEB_RPS, WEB_DEPTH], null, 2) + "\n");
    const err = io.err().split("\n");
    assert.equal(err.length, 3, io.err());
    assert.match(err[0], new RegExp(`^error: ${unreadable}: invalid YAML: `));
    assert.equal(
      err[1],
      `error: ${invalid}: invalid HorizontalPodAutoscaler jobs/broken: spec.maxReplicas: required`,
    );
    assert.equal(err[2], "");
  });

  it("says so when no HPA is found, and exits 0", async () => {
    const empty = join(dir, "empty.yaml");
    await writeFile(empty, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n");
    try {
      const io = captureIO();
      assert.equal(await planCommand.run(["-f", empty, "-o", "json"], io), 0);
      assert.equal(io.out(), "[]\n");
      assert.equal(io.err(), `no HorizontalPodAutoscaler found in ${empty}\n`);
    } finally {
      await rm(empty);
    }
  });

  it("plans every example HPA without an error when all collectors are enabled", async () => {
    const io = captureIO();
    assert.equal(
      await planCommand.run(["-f", join(root, "examples/hpas.yaml"), "--strict", "-o", "json"], io),
      0,
    );
    const rows = JSON.parse(io.out()) as Array<{ hpa: string; collector: string; error: null }>;
    assert.deepEqual(rows.map((r) => [r.hpa, r.collector, r.error]), [
      ["shop/checkout", "json-path", null],
      ["shop/events", "prometheus", null],
      ["shop/events", "skipper", null],
      ["shop/mailer", "sqs-queue-length", null],
      ["batch/reports", "prometheus", null],
      ["batch/reports", "influxdb", null],
      ["shop/storefront", "cluster-scaling-schedule", null],
      ["shop/storefront", "json-path", null],
      ["shop/search", "prometheus", null],
      ["shop/search", "requests-per-second", null],
      ["shop/order-consumer", "zmon", null],
      ["shop/order-consumer", "nakadi", null],
      ["shop/newsletter", "scaling-schedule", null],
      ["shop/worker", "formula", null],
      ["shop/worker", "prometheus", null],
      ["shop/worker", "json-path", null],
    ]);
  });

  it("shows each guarded HPA's replica guard config and its warnings, in both outputs", async () => {
    const dir = await mkdtemp(join(tmpdir(), "plan-guard-"));
    try {
      const file = join(dir, "guard.yaml");
      await writeFile(
        file,
        `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: api
  namespace: shop
  annotations:
    estafette.io/hpa-scaler: "true"
    estafette.io/hpa-scaler-prometheus-query: sum(rate(requests_total[5m]))
    estafette.io/hpa-scaler-requests-per-replica: "2.5"
    estafette.io/hpa-scaler-delta: "-0.5"
    estafette.io/hpa-scaler-scale-down-max-ratio: "-0.5"
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: api}
  maxReplicas: 10
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: off
  namespace: shop
  annotations:
    estafette.io/hpa-scaler: "True"
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: off}
  maxReplicas: 10
`,
      );
      const io = captureIO({ env: { PROMETHEUS_SERVER_URL: "http://prom:9090" } });
      assert.equal(await planCommand.run(["-f", file, "--strict"], io), 0);
      assert.equal(
        io.out(),
        `replica guard of shop/api: minReplicas from ceil(query / 2.5 - 0.5), query "sum(rate(requests_total[5m]))" on http://prom:9090; scale-down cap 1 of the current replicas
    warning: invalid estafette.io/hpa-scaler-scale-down-max-ratio "-0.5": want a number from 0 to 1, using 1 (no scale-down cap)

0 metrics in 2 HPAs: 0 errors, 1 warning (all collectors assumed enabled)
`,
      );
      const json = captureIO();
      assert.equal(
        await planCommand.run(
          ["-f", file, "-o", "json", "--prometheus-server", "http://p:9090"],
          json,
        ),
        0,
      );
      assert.deepEqual(JSON.parse(json.out()), [{
        hpa: "shop/api",
        replicaGuard: {
          prometheusQuery: "sum(rate(requests_total[5m]))",
          requestsPerReplica: 2.5,
          delta: -0.5,
          prometheusServerUrl: "http://p:9090",
          scaleDownMaxRatio: 1,
          deploymentChecking: false,
        },
        warnings: [
          'invalid estafette.io/hpa-scaler-scale-down-max-ratio "-0.5": want a number from 0 to 1, using 1 (no scale-down cap)',
        ],
      }]);
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it("maps Knative PodAutoscalers and annotated workloads to the HPA the reconciler would make", async () => {
    const dir = await mkdtemp(join(tmpdir(), "plan-knative-"));
    try {
      const file = join(dir, "pa.yaml");
      await writeFile(
        file,
        `apiVersion: autoscaling.internal.knative.dev/v1alpha1
kind: PodAutoscaler
metadata:
  name: rev-1
  namespace: shop
  annotations:
    autoscaling.knative.dev/class: hpa.autoscaling.knative.dev
    autoscaling.knative.dev/metric: rps
    autoscaling.knative.dev/target: "5"
    autoscaling.knative.dev/prometheus-query: sum(rate(requests{pod=~"{{ .revisionName }}.*"}[1m]))
    autoscaling.knative.dev/max-scale: "10"
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: rev-1-deployment}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: shop
  annotations:
    autoscaling.knative.dev/class: hpa.autoscaling.knative.dev
    autoscaling.knative.dev/metric-type: foo
spec:
  selector: {matchLabels: {app: api}}
`,
      );
      const io = captureIO();
      assert.equal(await planCommand.run(["-f", file, "--strict"], io), 1);
      assert.equal(
        io.out().split("\n").slice(0, 4).join("\n"),
        `knative PodAutoscaler shop/rev-1 -> HorizontalPodAutoscaler shop/rev-1 (see --output yaml)
    trigger 0 prometheus: s0-prometheus, target AverageValue 5, active > 0
knative Deployment shop/api: invalid metric type: "foo" (annotation autoscaling.knative.dev/metric-type): want AverageValue, Utilization or Value
`,
      );
      const yaml = captureIO();
      assert.equal(
        await planCommand.run(
          ["-f", file, "-o", "yaml", "--knative-prometheus-address", "http://prom:9090"],
          yaml,
        ),
        0,
      );
      assert.equal(
        yaml.err(),
        'error: Deployment shop/api: invalid metric type: "foo" (annotation autoscaling.knative.dev/metric-type): want AverageValue, Utilization or Value\n',
      );
      const out = yaml.out();
      assert.match(out, /^apiVersion: autoscaling\/v2\nkind: HorizontalPodAutoscaler\n/);
      // KEDA's HPA of the in-memory ScaledObject, owned by the PodAutoscaler
      assert.match(out, /\n {4}scaledobject\.keda\.sh\/name: rev-1\n/);
      assert.match(out, /\n {6}kind: PodAutoscaler\n {6}name: rev-1\n/);
      assert.match(out, /\n {10}name: s0-prometheus\n/);
      assert.match(out, /maxReplicas: 10\n/);
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it("shows the HPA KEDA writes for a ScaledObject, its metrics, and KEDA's errors", async () => {
    const dir = await mkdtemp(join(tmpdir(), "plan-keda-"));
    try {
      const file = join(dir, "so.yaml");
      await writeFile(
        file,
        `apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: web
  namespace: shop
spec:
  scaleTargetRef: {name: web}
  maxReplicaCount: 10
  triggers:
    - type: prometheus
      metadata: {serverAddress: "http://prom:9090", query: "sum(rate(x[1m]))", threshold: "100.5"}
    - type: aws-sqs-queue
      authenticationRef: {name: aws}
      metadata: {queueURLFromEnv: QUEUE, awsRegion: eu-west-1, activationQueueLength: "7"}
    - type: cpu
      metricType: Utilization
      metadata: {value: "60"}
---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: bad, namespace: shop}
spec:
  scaleTargetRef: {name: bad}
  triggers:
    - type: prometheus
      metadata: {serverAddress: "http://prom:9090", query: "up"}
---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: api, namespace: shop}
spec:
  scaleTargetRef: {name: api}
  triggers:
    - type: influxdb
      authenticationRef: {name: influx, kind: ClusterTriggerAuthentication}
      metadata: {query: "from()", thresholdValue: "2"}
---
apiVersion: keda.sh/v1alpha1
kind: TriggerAuthentication
metadata: {name: aws, namespace: shop}
spec:
  podIdentity: {provider: aws}
---
apiVersion: keda.sh/v1alpha1
kind: ClusterTriggerAuthentication
metadata: {name: influx}
spec:
  secretTargetRef:
    - {parameter: serverURL, name: influx, key: url}
    - {parameter: organizationName, name: influx, key: org}
`,
      );
      const io = captureIO();
      assert.equal(await planCommand.run(["-f", file, "--strict"], io), 1);
      const t = (v: number): string => `AverageValue ${kedaMilliQuantity(v)}`;
      assert.equal(
        io.out(),
        `keda ScaledObject shop/web -> HorizontalPodAutoscaler shop/keda-hpa-web (see --output yaml)
    trigger 0 prometheus: s0-prometheus, target ${t(100.5)}, active > 0
    trigger 1 aws-sqs-queue: s1-aws-sqs-<env QUEUE>, target AverageValue 5, active > 7
    trigger 2 cpu: cpu, target Utilization 60%
keda ScaledObject shop/bad (trigger 0): failed to ensure HPA is correctly created for ScaledObject: error parsing prometheus metadata: error parsing prometheus metadata: missing required parameter "threshold" in [triggerMetadata]
keda ScaledObject shop/api -> HorizontalPodAutoscaler shop/keda-hpa-api (see --output yaml)
    trigger 0 influxdb: s0-influxdb-<secret influx key org>, target ${t(2)}, active > 0

0 metrics in 0 HPAs, 3 ScaledObjects: 1 error, 0 warnings (all collectors assumed enabled)
`,
      );
      const json = captureIO();
      assert.equal(await planCommand.run(["-f", file, "-o", "json"], json), 0);
      const rows = JSON.parse(json.out());
      assert.deepEqual(rows.map((r: { source: string }) => r.source), [
        "ScaledObject shop/web",
        "ScaledObject shop/bad",
        "ScaledObject shop/api",
      ]);
      assert.deepEqual(rows[0].metrics[1], {
        trigger: 1,
        type: "aws-sqs-queue",
        metric: "s1-aws-sqs-<env QUEUE>",
        target: "AverageValue 5",
        activation: "> 7",
      });
      assert.deepEqual(rows[1], {
        source: "ScaledObject shop/bad",
        metrics: [],
        error:
          'failed to ensure HPA is correctly created for ScaledObject: error parsing prometheus metadata: error parsing prometheus metadata: missing required parameter "threshold" in [triggerMetadata]',
        trigger: 0,
        warnings: [],
      });
      assert.equal(rows[2].hpa, "shop/keda-hpa-api");
      const yaml = captureIO();
      assert.equal(await planCommand.run(["-f", file, "-o", "yaml"], yaml), 0);
      assert.match(
        yaml.out(),
        /^apiVersion: autoscaling\/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n {2}name: keda-hpa-web\n/,
      );
      assert.match(
        yaml.out(),
        /\n---\napiVersion: autoscaling\/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n {2}name: keda-hpa-api\n/,
      );
      assert.equal(
        yaml.err(),
        'error: ScaledObject shop/bad: failed to ensure HPA is correctly created for ScaledObject: error parsing prometheus metadata: error parsing prometheus metadata: missing required parameter "threshold" in [triggerMetadata]\n',
      );
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it("says which authentication of a ScaledObject is not in the files", async () => {
    const dir = await mkdtemp(join(tmpdir(), "plan-keda-auth-"));
    try {
      const file = join(dir, "so.yaml");
      await writeFile(
        file,
        `apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: q, namespace: shop}
spec:
  scaleTargetRef: {name: q}
  triggers:
    - type: aws-sqs-queue
      authenticationRef: {name: aws}
      metadata: {queueURL: "https://sqs.eu-west-1.amazonaws.com/1/jobs", awsRegion: eu-west-1}
`,
      );
      const io = captureIO();
      assert.equal(await planCommand.run(["-f", file], io), 0);
      assert.equal(
        io.out().split("\n").slice(0, 2).join("\n"),
        `keda ScaledObject shop/q (trigger 0): failed to ensure HPA is correctly created for ScaledObject: error parsing SQS queue metadata: awsAccessKeyID not found
    warning: trigger 0: TriggerAuthentication "aws" is not in the files: its parameters are unknown`,
      );
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it("throws UsageError for bad command lines", async () => {
    const cases: Array<[string[], string]> = [
      [[], "plan needs -f FILE|DIR"],
      [["-f", "x", "-o", "xml"], 'invalid value "xml" for --output: want table, json or yaml'],
      [["x.yaml"], 'unexpected argument "x.yaml" (name manifests with -f FILE|DIR)'],
      [["-f", "x", "--nope"], "unknown flag --nope"],
    ];
    for (const [args, message] of cases) {
      await assert.rejects(planCommand.run(args, captureIO()), (e: unknown) => {
        assert.ok(e instanceof UsageError, String(e));
        assert.equal(e.message, message);
        return true;
      });
    }
  });
});
