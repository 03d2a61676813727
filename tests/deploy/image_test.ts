/**
 * The image without a container engine: the binary runs in an empty root holding only what
 * deploy/Dockerfile's final stage holds (the binary, the shared libraries `ldd` lists, /etc/passwd
 * with nonroot, CA certificates; no shell, no node_modules, no time zone files), as user 65532,
 * with the root file system read-only and a tmpfs for --cert-dir, as the Deployment runs it.
 * Like a container runtime, the sandbox mounts /proc (the Bun binary reads /proc/self/exe to find
 * its own code) and a /dev with null, zero, full, random and urandom.
 *
 * Needs root, `unshare` and `chroot`; it fails (never skips) without them.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { request } from "node:https";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BINARY = join(ROOT, "dist", "hpa-metrics-adapter");
const DOCKERFILE = join(ROOT, "deploy", "Dockerfile");
const NONROOT = "65532:65532";

/** Shared libraries each distroless base ships (debian12), by soname. */
const GLIBC = [
  "libc.so.6",
  "libm.so.6",
  "libdl.so.2",
  "libpthread.so.0",
  "librt.so.1",
  "libresolv.so.2",
  "ld-linux-x86-64.so.2",
  "ld-linux-aarch64.so.1",
];
const BASE_LIBRARIES: Record<string, string[]> = {
  "gcr.io/distroless/base-nossl-debian12": GLIBC,
  "gcr.io/distroless/base-debian12": [...GLIBC, "libssl.so.3", "libcrypto.so.3"],
  "gcr.io/distroless/cc-debian12": [
    ...GLIBC,
    "libssl.so.3",
    "libcrypto.so.3",
    "libgcc_s.so.1",
    "libstdc++.so.6",
    "libgomp.so.1",
  ],
};

function which(name: string): string | null {
  for (const dir of ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]) {
    const p = join(dir, name);
    if (existsSync(p)) return p;
  }
  return null;
}

function newestMtime(path: string): number {
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  let newest = s.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

/** Reuses dist/hpa-metrics-adapter when it is newer than every input; builds it otherwise. */
function ensureBinary(): void {
  const inputs = ["src", "mod.ts", "package-lock.json", "scripts/build.mjs"].map((p) =>
    newestMtime(join(ROOT, p))
  );
  if (existsSync(BINARY) && statSync(BINARY).mtimeMs > Math.max(...inputs)) return;
  const r = spawnSync("node", [join(ROOT, "scripts", "build.mjs"), "--quiet"], {
    cwd: ROOT,
    encoding: "utf8",
  });
  assert.equal(r.status, 0, `npm run build failed:\n${r.stdout}${r.stderr}`);
}

interface Library {
  /** Path the dynamic loader resolves the library to (where the image must hold it). */
  path: string;
  soname: string;
}

/** The shared libraries `ldd` lists for a binary ([] for a static one). */
function sharedLibraries(binary: string): Library[] {
  const r = spawnSync("ldd", [binary], { encoding: "utf8" });
  if (/not a dynamic executable/.test(`${r.stdout}${r.stderr}`)) return [];
  assert.equal(r.status, 0, `ldd ${binary} failed: ${r.stderr}`);
  const libs: Library[] = [];
  for (const line of r.stdout.split("\n")) {
    const m = line.match(/^\s*(\S+)\s+=>\s+(\/\S+)\s+\(/) ?? line.match(/^\s*(\/\S+)\s+\(/);
    if (!m) {
      assert.doesNotMatch(line, /not found/, `ldd: a library is missing on this machine: ${line}`);
      continue;
    }
    const path = m[2] ?? m[1];
    libs.push({ path, soname: path.split("/").pop()! });
  }
  return libs;
}

/** What deploy/Dockerfile's final stage is made of. */
interface ImageSpec {
  base: string;
  binaryPath: string;
  user: string;
  entrypoint: string[];
}

function readDockerfile(): ImageSpec {
  const text = readFileSync(DOCKERFILE, "utf8");
  const base = text.match(/^ARG BASE_IMAGE=(\S+)$/m)?.[1];
  assert.ok(base, "deploy/Dockerfile: no ARG BASE_IMAGE default");
  const stages = text.split(/^FROM /m);
  const final = stages[stages.length - 1];
  assert.match(
    final,
    /^\$\{BASE_IMAGE\}\s/,
    "deploy/Dockerfile: final stage is not FROM ${BASE_IMAGE}",
  );
  const copy = final.match(/^COPY --from=build \S+ (\S+)$/m)?.[1];
  const user = final.match(/^USER (\S+)$/m)?.[1];
  const entrypoint = final.match(/^ENTRYPOINT (\[.*\])$/m)?.[1];
  assert.ok(
    copy && user && entrypoint,
    "deploy/Dockerfile: final stage lacks COPY, USER or ENTRYPOINT",
  );
  return { base, binaryPath: copy, user, entrypoint: JSON.parse(entrypoint) };
}

/** Lays out the image's files under a fresh directory; returns it. */
function stageRoot(spec: ImageSpec, files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "hpa-image-"));
  chmodSync(root, 0o755);
  const put = (path: string, from: string): void => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    copyFileSync(from, join(root, path));
  };
  put(spec.binaryPath, BINARY);
  chmodSync(join(root, spec.binaryPath), 0o755);
  for (const lib of sharedLibraries(BINARY)) put(lib.path, lib.path);
  mkdirSync(join(root, "etc/ssl/certs"), { recursive: true });
  writeFileSync(
    join(root, "etc/passwd"),
    "root:x:0:0:root:/root:/sbin/nologin\n" +
      "nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
      "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
  );
  writeFileSync(join(root, "etc/group"), "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n");
  const ca = "/etc/ssl/certs/ca-certificates.crt";
  if (existsSync(ca)) put(ca, ca);
  mkdirSync(join(root, "home/nonroot"), { recursive: true });
  // Mount points a container runtime creates, and the Deployment's emptyDir for --cert-dir.
  for (const d of ["proc", "dev", "sys", "tmp/certs"]) {
    mkdirSync(join(root, d), { recursive: true });
  }
  chmodSync(join(root, "tmp"), 0o1777);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

interface RunResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** The `unshare` command line that runs the image's binary in the staged root as the Deployment would. */
function sandboxCommand(
  root: string,
  spec: ImageSpec,
  args: string[],
  env: Record<string, string> = {},
): string[] {
  const chroot = which("chroot")!;
  const q = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;
  const devices = ["null", "zero", "full", "random", "urandom"]
    .map((d) => `touch ${q(`${root}/dev/${d}`)} && mount --bind /dev/${d} ${q(`${root}/dev/${d}`)}`)
    .join(" && ");
  const script = [
    `mount --bind ${q(root)} ${q(root)}`,
    `mount -t proc proc ${q(`${root}/proc`)}`,
    `mount -t tmpfs -o size=64k,mode=755 tmpfs ${q(`${root}/dev`)}`,
    devices,
    `mount -o remount,bind,ro ${q(root)}`,
    `mount -t tmpfs -o size=1m,mode=1777 tmpfs ${q(`${root}/tmp/certs`)}`,
    // The image's environment only: distroless sets PATH and SSL_CERT_FILE, the runtime HOME.
    `exec env -i PATH=/usr/local/bin:/usr/bin:/bin SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt ` +
    `HOME=/home/nonroot ${
      Object.entries(env).map(([k, v]) => `${k}=${q(v)} `).join("")
    }${chroot} --userspec=${NONROOT} ${q(root)} ` +
    [spec.binaryPath, ...args].map(q).join(" "),
  ].join(" && ");
  // No --fork: sh, env and chroot exec in turn, so the spawned process is the binary itself and
  // a signal sent to it reaches the adapter (a forked child would lose --kill-child to chroot's
  // change of user).
  return ["unshare", "--mount", "--", "sh", "-c", script];
}

/** Runs the image's binary in the staged root to its end. */
function runInImage(root: string, spec: ImageSpec, args: string[]): RunResult {
  const [cmd, ...argv] = sandboxCommand(root, spec, args);
  const r = spawnSync(cmd, argv, { encoding: "utf8", timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/** GET over HTTPS without verifying the (self-signed) certificate: status and body, or null. */
function httpsGet(port: number, path: string): Promise<{ status: number; body: string } | null> {
  return new Promise((resolve) => {
    const req = request(
      { host: "127.0.0.1", port, path, rejectUnauthorized: false, timeout: 2000 },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (d) => (body += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", () => resolve(null));
    req.on("timeout", () => req.destroy());
    req.end();
  });
}

const HPA = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: checkout
  namespace: shop
  annotations:
    metric-config.pods.requests-per-second.json-path/json-key: "$.rps"
    metric-config.pods.requests-per-second.json-path/port: "9090"
    metric-config.pods.requests-per-second.json-path/interval: "15s"
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: checkout}
  maxReplicas: 10
  metrics:
    - type: Pods
      pods:
        metric: {name: requests-per-second}
        target: {type: AverageValue, averageValue: "100"}
`;

// New York's 09:00 is 14:00Z before the 2024 DST switch (Sunday 10 March) and 13:00Z after it:
// a binary without time zone data, or with stale rules, gets these wrong or fails.
const SCHEDULE = `apiVersion: zalando.org/v1
kind: ScalingSchedule
metadata: {name: office-hours, namespace: shop}
spec:
  scalingWindowDurationMinutes: 0
  schedules:
    - type: Repeating
      period: {days: [Mon, Tue, Wed, Thu, Fri], startTime: "09:00", timezone: America/New_York}
      durationMinutes: 60
      value: 30
---
apiVersion: zalando.org/v1
kind: ClusterScalingSchedule
metadata: {name: berlin-evening}
spec:
  scalingWindowDurationMinutes: 0
  schedules:
    - type: Repeating
      period: {days: [Fri], startTime: "18:00"}
      durationMinutes: 60
      value: 7
`;

describe("image (deploy/Dockerfile) without a container engine", () => {
  it("has root, unshare and chroot to build the sandbox", () => {
    assert.equal(process.getuid?.(), 0, "image_test needs root (unshare --mount, chroot)");
    assert.ok(which("unshare"), "image_test needs unshare (util-linux)");
    assert.ok(which("chroot"), "image_test needs chroot (coreutils)");
    assert.ok(which("ldd"), "image_test needs ldd (libc-bin)");
  });

  const spec = readDockerfile();

  it("runs the binary as nonroot with serve as the entrypoint", () => {
    assert.equal(spec.user, NONROOT);
    assert.deepEqual(spec.entrypoint, [spec.binaryPath, "serve"]);
  });

  it("needs no shared library that the base image lacks", () => {
    ensureBinary();
    const provided = BASE_LIBRARIES[spec.base.replace(/:[^/]*$/, "")];
    assert.ok(provided, `unknown base image "${spec.base}": list its libraries in image_test.ts`);
    const missing = sharedLibraries(BINARY).map((l) => l.soname).filter((s) =>
      !provided.includes(s)
    );
    assert.deepEqual(missing, [], `${spec.base} lacks ${missing.join(", ")}`);
  });

  describe("in an empty root with the image's files only", () => {
    let root = "";
    const setUp = (): string => {
      if (root) return root;
      ensureBinary();
      root = stageRoot(spec, { "work/hpas.yaml": HPA, "work/schedules.yaml": SCHEDULE });
      return root;
    };

    it("prints its version", () => {
      const r = runInImage(setUp(), spec, ["version"]);
      assert.equal(r.stderr, "");
      assert.match(r.stdout, /^hpa-metrics-adapter \d+\.\d+\.\d+\S* \((bun|node) [\d.]+\)\n$/);
      assert.equal(r.status, 0);
    });

    it("plans a copied HPA manifest", () => {
      const r = runInImage(setUp(), spec, ["plan", "-f", "/work/hpas.yaml", "--output", "json"]);
      assert.equal(r.stderr, "");
      assert.equal(r.status, 0);
      const [plan, ...more] = JSON.parse(r.stdout);
      assert.deepEqual(more, []);
      assert.deepEqual(
        {
          hpa: plan.hpa,
          metricType: plan.metricType,
          metricName: plan.metricName,
          collector: plan.collector,
          intervalSeconds: plan.intervalSeconds,
          config: plan.config,
          error: plan.error,
        },
        {
          hpa: "shop/checkout",
          metricType: "Pods",
          metricName: "requests-per-second",
          collector: "json-path",
          intervalSeconds: 15,
          config: { "json-key": "$.rps", port: "9090" },
          error: null,
        },
      );
    });

    it("plans the same as the binary outside the sandbox", () => {
      const inside = runInImage(setUp(), spec, ["plan", "-f", "/work/hpas.yaml"]);
      const outside = spawnSync(BINARY, ["plan", "-f", join(setUp(), "work/hpas.yaml")], {
        cwd: tmpdir(),
        encoding: "utf8",
      });
      assert.equal(inside.stdout, outside.stdout);
      assert.equal(inside.status, 0);
    });

    const values: [string, string, string][] = [
      ["office-hours", "2024-03-08T13:30:00Z", "0\n"], // 08:30 EST
      ["office-hours", "2024-03-08T14:30:00Z", "30\n"], // 09:30 EST
      ["office-hours", "2024-03-11T13:30:00Z", "30\n"], // 09:30 EDT
      ["office-hours", "2024-03-11T14:30:00Z", "0\n"], // 10:30 EDT
      ["berlin-evening", "2024-03-29T17:30:00Z", "7\n"], // 18:30 CET, default time zone
      ["berlin-evening", "2024-04-05T17:30:00Z", "0\n"], // 19:30 CEST
      ["berlin-evening", "2024-04-05T16:30:00Z", "7\n"], // 18:30 CEST
    ];
    for (const [name, at, want] of values) {
      it(`evaluates schedule ${name} at ${at} with the binary's own time zone data`, () => {
        const r = runInImage(setUp(), spec, [
          "schedule",
          "value",
          "-f",
          "/work/schedules.yaml",
          "--name",
          name,
          "--at",
          at,
        ]);
        assert.deepEqual({ status: r.status, stdout: r.stdout, stderr: r.stderr }, {
          status: 0,
          stdout: want,
          stderr: "",
        });
      });
    }

    /** Runs serve in the sandbox until /livez answers, hands its PID to `check`, stops it. */
    async function whileServing(
      env: Record<string, string>,
      check: (pid: number, stderr: () => string) => void | Promise<void>,
    ): Promise<void> {
      const [port, metricsPort] = [await freePort(), await freePort()];
      const [cmd, ...argv] = sandboxCommand(setUp(), spec, [
        "serve",
        "--manifests",
        "/work/hpas.yaml",
        "--bind-address=127.0.0.1",
        `--secure-port=${port}`,
        "--cert-dir=/tmp/certs",
        `--metrics-address=127.0.0.1:${metricsPort}`,
      ], env);
      const child = spawn(cmd, argv, { stdio: ["ignore", "ignore", "pipe"] });
      let stderr = "";
      child.stderr!.setEncoding("utf8");
      child.stderr!.on("data", (d) => (stderr += d));
      const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
      try {
        let live = null;
        for (let i = 0; i < 100 && live?.status !== 200; i++) {
          if (child.exitCode !== null) break;
          await new Promise((r) => setTimeout(r, 100));
          live = await httpsGet(port, "/livez");
        }
        assert.deepEqual(live, { status: 200, body: "ok" }, `serve did not come up:\n${stderr}`);
        assert.deepEqual(await httpsGet(port, "/readyz"), { status: 200, body: "ok" });
        await check(child.pid!, () => stderr);
      } finally {
        child.kill("SIGTERM");
        const stopped = await Promise.race([
          exited.then(() => true),
          new Promise<boolean>((r) => setTimeout(() => r(false), 5000)),
        ]);
        if (!stopped) {
          child.kill("SIGKILL");
          await exited;
        }
        assert.ok(stopped, `serve did not stop within 5 s of SIGTERM:\n${stderr}`);
      }
    }

    /** The process's environment variables and command line, from /proc. */
    function processOf(pid: number): { env: Map<string, string>; cmdline: string[] } {
      const env = new Map<string, string>();
      for (const kv of readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")) {
        const eq = kv.indexOf("=");
        if (eq > 0) env.set(kv.slice(0, eq), kv.slice(eq + 1));
      }
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").slice(0, -1);
      return { env, cmdline };
    }

    /** Whether the image's binary is Bun's (else Node's): run `version` once, when first asked. */
    let bunBinary: boolean | undefined;
    const isBunBinary = (): boolean =>
      bunBinary ??= / \(bun [\d.]+\)\n$/.test(runInImage(setUp(), spec, ["version"]).stdout);

    it("serves /livez and /readyz over HTTPS with a self-signed certificate in --cert-dir", async () => {
      await whileServing({}, () => {});
    });

    // src/runtime/heap_growth.ts: the compiled Bun binary's serve executes itself again, in the
    // same process, with JavaScriptCore's heap growth set (Bun would exit at once on an option
    // its JavaScriptCore does not know); an operator's value is kept.
    it("serves with JavaScriptCore's heap growth set, in the PID it was started as", async () => {
      const bun = isBunBinary();
      await whileServing({}, (pid, stderr) => {
        const { env, cmdline } = processOf(pid);
        assert.equal(env.get("BUN_JSC_heapGrowthMaxIncrease"), bun ? "0.4" : undefined);
        assert.equal(env.get("BUN_JSC_minEdenToOldGenerationRatio"), bun ? "0.2" : undefined);
        assert.equal(env.get("HOME"), "/home/nonroot");
        assert.deepEqual(cmdline.slice(0, 3), [spec.binaryPath, "serve", "--manifests"]);
        assert.doesNotMatch(stderr(), /could not run again/);
      });
    });

    it("keeps the operator's BUN_JSC_heapGrowthMaxIncrease", async () => {
      await whileServing({ BUN_JSC_heapGrowthMaxIncrease: "2" }, (pid) => {
        const { env } = processOf(pid);
        assert.equal(env.get("BUN_JSC_heapGrowthMaxIncrease"), "2");
        assert.equal(
          env.get("BUN_JSC_minEdenToOldGenerationRatio"),
          isBunBinary() ? "0.2" : undefined,
        );
      });
    });

    it("removes the staged root", () => {
      if (root) rmSync(root, { recursive: true, force: true });
      root = "";
    });
  });
});
