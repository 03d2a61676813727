import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  FileClusterSource,
  type FileClusterSourceOptions,
  type RecordedEvent,
} from "../../src/cluster/file_source.ts";
import type { Kind, KubeObject, WatchEventType } from "../../src/cluster/types.ts";

const T0 = Date.parse("2026-01-15T12:00:00Z");

interface Harness {
  dir: string;
  source: FileClusterSource;
  errors: string[];
  debug: string[];
  logged: RecordedEvent[];
  write(name: string, text: string): Promise<void>;
}

async function withFiles(
  files: Record<string, string>,
  options: Partial<FileClusterSourceOptions>,
  body: (h: Harness) => Promise<void>,
): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "file-source-"));
  const write = async (name: string, text: string): Promise<void> => {
    await mkdir(join(dir, name, ".."), { recursive: true });
    await writeFile(join(dir, name), text);
  };
  for (const [name, text] of Object.entries(files)) await write(name, text);
  const errors: string[] = [];
  const debug: string[] = [];
  const logged: RecordedEvent[] = [];
  const source = new FileClusterSource({
    paths: [dir],
    pollIntervalMs: 0,
    onError: (m) => errors.push(m.replaceAll(dir, "DIR")),
    onDebug: (m) => debug.push(m.replaceAll(dir, "DIR")),
    onEvent: (e) => logged.push(e),
    now: () => T0,
    ...options,
  });
  try {
    await body({ dir, source, errors, debug, logged, write });
  } finally {
    await source.close();
    await rm(dir, { recursive: true, force: true });
  }
}

type Seen = [WatchEventType, string, string];

/** Records every event of the given kinds as [type, "Kind ns/name", summary]. */
function record(source: FileClusterSource, kinds: Kind[]): Seen[] {
  const seen: Seen[] = [];
  for (const kind of kinds) {
    source.watch(kind, (type, obj, old) => {
      const id = `${kind} ${obj.metadata.namespace ?? ""}/${obj.metadata.name}`;
      const summary = type === "MODIFIED"
        ? `${old?.spec?.replicas}->${obj.spec?.replicas}`
        : String(obj.spec?.replicas);
      seen.push([type, id, summary]);
    });
  }
  return seen;
}

const DEPLOYMENTS = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: {replicas: 2}
status: {replicas: 2}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: team-a}
spec: {replicas: 3}
`;

function deploymentYaml(name: string, replicas: number, extra = ""): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata: {name: ${name}}
spec: {replicas: ${replicas}}
${extra}`;
}

const MIXED = `apiVersion: v1
kind: Pod
metadata: {name: web-1, labels: {app: web}}
status:
  phase: Running
  podIP: 10.0.0.7
  conditions: [{type: Ready, status: "True"}]
---
apiVersion: v1
kind: Service
metadata: {name: settings}
---
apiVersion: v1
kind: Service
metadata: {name: other}
---
apiVersion: zalando.org/v1
kind: ClusterScalingSchedule
metadata: {name: global, namespace: ignored}
spec: {schedules: []}
---
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: old-api}
`;

const HPA_JSON = JSON.stringify({
  apiVersion: "v1",
  kind: "List",
  items: [{
    apiVersion: "autoscaling/v2",
    kind: "HorizontalPodAutoscaler",
    metadata: { name: "web", namespace: "default", resourceVersion: "999" },
    spec: { minReplicas: 1, maxReplicas: 5 },
  }],
});

function ids(objs: KubeObject[]): string[] {
  return objs.map((o) => `${o.metadata.namespace ?? "-"}/${o.metadata.name}`);
}

describe("FileClusterSource", () => {
  it("reads the known kinds from multi-document YAML and JSON lists", async () => {
    await withFiles(
      { "a/deployments.yaml": DEPLOYMENTS, "b/mixed.yml": MIXED, "c/hpa.json": HPA_JSON },
      {},
      async ({ source, debug, errors }) => {
        await source.ensure("Deployment");
        assert.deepEqual(ids(source.list("Deployment")), ["default/web", "team-a/api"]);
        assert.deepEqual(ids(source.list("Deployment", "team-a")), ["team-a/api"]);
        assert.deepEqual(ids(source.list("ClusterScalingSchedule", "x")), ["-/global"]);
        // the autoscaling/v1 one converted to v2, as kube-apiserver serves it
        assert.deepEqual(ids(source.list("HorizontalPodAutoscaler")), [
          "default/old-api",
          "default/web",
        ]);
        const pod = source.get("Pod", undefined, "web-1");
        assert.deepEqual(pod?.status, {
          phase: "Running",
          podIP: "10.0.0.7",
          conditions: [{ type: "Ready", status: "True" }],
        });
        assert.equal(
          source.get("ClusterScalingSchedule", "any", "global")?.metadata.name,
          "global",
        );
        assert.deepEqual(
          [
            source.get("Deployment", "default", "web")?.metadata.resourceVersion,
            source.get("Deployment", "team-a", "api")?.metadata.resourceVersion,
            source.get("HorizontalPodAutoscaler", "default", "web")?.metadata.resourceVersion,
          ],
          // numbered in the order of the kinds (HorizontalPodAutoscaler, Pod, Deployment, ...):
          // old-api is the first HPA
          ["4", "5", "2"],
        );
        assert.deepEqual(debug, [
          "ignoring v1 Service objects (first in DIR/b/mixed.yml): not a kind the adapter reads",
        ]);
        assert.deepEqual(errors, []);
        assert.deepEqual(source.list("Ingress"), []);
      },
    );
  });

  it("emits exactly what changed when files are edited, added and removed", async () => {
    await withFiles({ "one.yaml": DEPLOYMENTS }, {}, async ({ source, write, dir }) => {
      const seen = record(source, ["Deployment", "HorizontalPodAutoscaler"]);
      await source.ensure("Deployment");
      assert.deepEqual(seen, [
        ["ADDED", "Deployment default/web", "2"],
        ["ADDED", "Deployment team-a/api", "3"],
      ]);
      seen.length = 0;

      // same objects, different formatting: nothing changed
      await write("one.yaml", DEPLOYMENTS.replace("{replicas: 2}", "{ replicas: 2 }") + "\n\n");
      await source.refresh();
      assert.deepEqual(seen, []);

      await write("one.yaml", deploymentYaml("web", 4, "status: {replicas: 2}\n"));
      await write("two.json", HPA_JSON);
      await source.refresh();
      assert.deepEqual(seen, [
        ["ADDED", "HorizontalPodAutoscaler default/web", "undefined"],
        ["MODIFIED", "Deployment default/web", "2->4"],
        ["DELETED", "Deployment team-a/api", "3"],
      ]);
      seen.length = 0;

      await rm(join(dir, "two.json"));
      await source.refresh();
      assert.deepEqual(seen, [["DELETED", "HorizontalPodAutoscaler default/web", "undefined"]]);
      assert.equal(source.get("Deployment", "default", "web")?.metadata.resourceVersion, "4");
    });
  });

  it("changes a kind's version in a namespace exactly when an object there changes", async () => {
    await withFiles({ "one.yaml": DEPLOYMENTS }, {}, async ({ source, write }) => {
      await source.ensure("Deployment");
      const versions = (): number[] => [
        source.version("Deployment", "default"),
        source.version("Deployment", "team-a"),
        source.version("Pod", "default"),
      ];
      const start = versions();
      assert.deepEqual(start.map((v) => v > 0), [true, true, false]);
      await source.refresh();
      assert.deepEqual(versions(), start);
      await write("one.yaml", DEPLOYMENTS.replace("{replicas: 2}", "{replicas: 5}"));
      await source.refresh();
      assert.deepEqual(versions(), [start[0] + 1, start[1], start[2]]);
    });
  });

  it("rebuilds no object when a poll finds every file unchanged", async () => {
    await withFiles({ "one.yaml": DEPLOYMENTS }, {}, async ({ source }) => {
      await source.ensure("Deployment");
      const stringify = JSON.stringify;
      let calls = 0;
      JSON.stringify = ((...args: Parameters<typeof stringify>) => {
        calls++;
        return stringify(...args);
      }) as typeof JSON.stringify;
      try {
        await source.refresh();
        await source.refresh();
      } finally {
        JSON.stringify = stringify;
      }
      assert.equal(calls, 0);
      assert.equal(source.get("Deployment", "default", "web")?.spec?.replicas, 2);
    });
  });

  it("keeps a broken file's objects and reports the error once until it is fixed", async () => {
    await withFiles({ "one.yaml": DEPLOYMENTS }, {}, async ({ source, write, errors }) => {
      const seen = record(source, ["Deployment"]);
      await source.ensure("Deployment");
      seen.length = 0;
      await write("one.yaml", "apiVersion: apps/v1\nkind: [unclosed\n");
      await source.refresh();
      await source.refresh();
      assert.deepEqual(ids(source.list("Deployment")), ["default/web", "team-a/api"]);
      assert.deepEqual(seen, []);
      assert.equal(errors.length, 1);
      assert.match(errors[0], /^DIR\/one\.yaml: invalid YAML: /);
      assert.equal(source.errors().length, 1);

      await write("one.yaml", deploymentYaml("web", 2, "status: {replicas: 2}\n"));
      await source.refresh();
      assert.deepEqual(source.errors(), []);
      assert.deepEqual(seen, [["DELETED", "Deployment team-a/api", "3"]]);
    });
  });

  it("reports duplicates and missing paths, keeping the first definition", async () => {
    await withFiles(
      { "a.yaml": deploymentYaml("web", 1), "b.yaml": deploymentYaml("web", 9) },
      {},
      async ({ source, errors, dir }) => {
        await source.ensure("Deployment");
        assert.equal(source.get("Deployment", "default", "web")?.spec.replicas, 1);
        assert.deepEqual(errors, [
          'DIR/b.yaml: duplicate Deployment "default/web" ignored (first defined in DIR/a.yaml)',
        ]);
        const missing = new FileClusterSource({ paths: [join(dir, "nope")], pollIntervalMs: 0 });
        await missing.ensure("Pod");
        assert.deepEqual(missing.errors(), [`${join(dir, "nope")}: no such file or directory`]);
        await missing.close();
      },
    );
  });

  it("keeps a status written in memory across reloads until the file changes that status", async () => {
    await withFiles({ "one.yaml": DEPLOYMENTS }, {}, async ({ source, write }) => {
      const seen = record(source, ["Deployment"]);
      await source.ensure("Deployment");
      seen.length = 0;
      await source.updateStatus("Deployment", "default", "web", { replicas: 2, note: "mine" });
      assert.deepEqual(source.get("Deployment", "default", "web")?.status, {
        replicas: 2,
        note: "mine",
      });
      // writing the same status again changes nothing
      await source.updateStatus("Deployment", "default", "web", { replicas: 2, note: "mine" });
      assert.deepEqual(seen, [["MODIFIED", "Deployment default/web", "2->2"]]);

      // the file changes the spec only: the written status stays
      await write(
        "one.yaml",
        DEPLOYMENTS.replace("{replicas: 2}\nstatus", "{replicas: 5}\nstatus"),
      );
      await source.refresh();
      assert.deepEqual(source.get("Deployment", "default", "web")?.spec.replicas, 5);
      assert.deepEqual(source.get("Deployment", "default", "web")?.status, {
        replicas: 2,
        note: "mine",
      });
      // a write after the file changed applies to the file's new object (replicas 5)
      await source.updateStatus("Deployment", "default", "web", { replicas: 3 });
      assert.equal(source.get("Deployment", "default", "web")?.spec.replicas, 5);
      assert.deepEqual(source.get("Deployment", "default", "web")?.status, { replicas: 3 });
      await source.setScale("Deployment", "default", "web", 6);
      assert.equal(source.get("Deployment", "default", "web")?.spec.replicas, 6);
      assert.deepEqual(await source.getScale("Deployment", "default", "web"), {
        specReplicas: 6,
        statusReplicas: 6,
      });

      // the file changes the status: the file wins
      await write("one.yaml", deploymentYaml("web", 5, "status: {replicas: 4}\n"));
      await source.refresh();
      assert.deepEqual(source.get("Deployment", "default", "web")?.status, { replicas: 4 });
      await assert.rejects(
        source.updateStatus("Deployment", "default", "nope", {}),
        /^Error: update status of Deployment default\/nope: not found$/,
      );
    });
  });

  it("sees a same-size edit whose timestamps did not change while they are close to the read", async () => {
    // a write in the same tick of the file-system clock leaves mtime, ctime, size and inode as
    // they were: only the text shows the change
    const stamp = { mtimeMs: T0, ctimeMs: T0, size: 1, ino: 1 };
    let wall = T0 + 5;
    const options = { stat: () => Promise.resolve(stamp), wallClock: () => wall };
    await withFiles(
      { "one.yaml": deploymentYaml("web", 2) },
      options,
      async ({ source, write }) => {
        await source.ensure("Deployment");
        const seen = record(source, ["Deployment"]);
        await write("one.yaml", deploymentYaml("web", 5));
        await source.refresh();
        assert.equal(source.get("Deployment", "default", "web")?.spec.replicas, 5);
        assert.deepEqual(seen.map(([type, name]) => [type, name]), [
          ["MODIFIED", "Deployment default/web"],
        ]);

        // read again once the timestamps are older than any clock tick: the text matches, and
        // from then on the unchanged stamp is trusted (the file is not read)
        wall = T0 + 60_000;
        await source.refresh();
        await write("one.yaml", deploymentYaml("web", 7));
        await source.refresh();
        assert.equal(source.get("Deployment", "default", "web")?.spec.replicas, 5);
        assert.equal(seen.length, 1);
      },
    );
  });

  it("sets spec and status replicas through the scale methods", async () => {
    await withFiles({ "one.yaml": DEPLOYMENTS }, {}, async ({ source, write }) => {
      const seen = record(source, ["Deployment"]);
      await source.ensure("Deployment");
      seen.length = 0;
      assert.deepEqual(await source.getScale("Deployment", "team-a", "api"), {
        specReplicas: 3,
        statusReplicas: 3,
      });
      await source.setScale("Deployment", "default", "web", 6);
      assert.deepEqual(seen, [["MODIFIED", "Deployment default/web", "2->6"]]);
      assert.deepEqual(await source.getScale("Deployment", "default", "web"), {
        specReplicas: 6,
        statusReplicas: 6,
      });
      // a reload that leaves replicas alone keeps the scale
      await write("one.yaml", DEPLOYMENTS + "# comment\n");
      await source.refresh();
      assert.equal(source.get("Deployment", "default", "web")?.spec.replicas, 6);
      await assert.rejects(source.setScale("Pod", "default", "x", 1), /kind "Pod" has no scale/);
      await assert.rejects(
        source.setScale("Deployment", "default", "web", -1),
        /^Error: invalid replicas -1 for Deployment default\/web$/,
      );
    });
  });

  it("records events in memory and passes them to the log hook", async () => {
    await withFiles({ "one.yaml": DEPLOYMENTS }, {}, async ({ source, logged }) => {
      await source.ensure("Deployment");
      const web = source.get("Deployment", "default", "web")!;
      await source.emitEvent("Deployment", web, {
        type: "Warning",
        reason: "ScaleFailed",
        message: "no",
      });
      const want: RecordedEvent = {
        kind: "Deployment",
        namespace: "default",
        name: "web",
        type: "Warning",
        reason: "ScaleFailed",
        message: "no",
        timestamp: "2026-01-15T12:00:00Z",
      };
      assert.deepEqual(source.events(), [want]);
      assert.deepEqual(logged, [want]);
    });
  });

  it("picks up edits by polling on its own", async () => {
    await withFiles(
      { "one.yaml": DEPLOYMENTS },
      { pollIntervalMs: 20 },
      async ({ source, write }) => {
        const seen = record(source, ["Deployment"]);
        await source.ensure("Deployment");
        await write("one.yaml", deploymentYaml("web", 7, "status: {replicas: 2}\n"));
        const end = Date.now() + 5000;
        while (seen.length < 4 && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
        assert.deepEqual(seen.slice(2), [
          ["MODIFIED", "Deployment default/web", "2->7"],
          ["DELETED", "Deployment team-a/api", "3"],
        ]);
      },
    );
  });
});
