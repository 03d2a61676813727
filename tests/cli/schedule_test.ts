import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { scheduleCommand } from "../../src/cli/schedule.ts";
import { UsageError } from "../../src/cli/command.ts";

// The README's example, plus a namespaced schedule with a midnight-crossing window.
const EXAMPLE = `apiVersion: zalando.org/v1
kind: ClusterScalingSchedule
metadata:
  name: scheduling-event
spec:
  schedules:
  - type: OneTime
    date: "2021-10-02T08:08:08+02:00"
    durationMinutes: 30
    value: 100
  - type: Repeating
    durationMinutes: 10
    value: 120
    period:
      startTime: "15:45"
      timezone: Europe/Berlin
      days: [Mon, Wed, Fri]
`;

const SEVERAL = `${EXAMPLE}---
apiVersion: zalando.org/v1
kind: ScalingSchedule
metadata:
  name: night
  namespace: shop
spec:
  scalingWindowDurationMinutes: 20
  schedules:
  - type: Repeating
    value: 40
    period:
      startTime: "22:00"
      endTime: "02:00"
      timezone: America/New_York
      days: [Fri]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: unrelated
`;

const INVALID = `apiVersion: zalando.org/v1
kind: ScalingSchedule
metadata:
  name: broken
  namespace: shop
spec:
  schedules:
  - type: Repeating
    durationMinutes: 10
    value: 5
`;

const TWINS = `apiVersion: zalando.org/v1
kind: ScalingSchedule
metadata: {name: peak, namespace: a}
spec: {schedules: []}
---
apiVersion: zalando.org/v1
kind: ScalingSchedule
metadata: {name: peak, namespace: b}
spec: {schedules: [{type: OneTime, date: "2024-06-10T10:00:00Z", durationMinutes: 60, value: 9}]}
`;

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(args: string[], now = Date.parse("2024-06-10T13:20:00Z")): Promise<Result> {
  let stdout = "";
  let stderr = "";
  const code = await scheduleCommand.run(args, {
    stdout: (t) => void (stdout += t),
    stderr: (t) => void (stderr += t),
    env: {},
    now: () => now,
  });
  return { code, stdout, stderr };
}

let dir = "";
const file = (name: string): string => join(dir, name);

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "schedule-test-"));
  await writeFile(file("example.yaml"), EXAMPLE);
  await writeFile(file("several.yaml"), SEVERAL);
  await writeFile(file("invalid.yaml"), INVALID);
  await writeFile(file("twins.yaml"), TWINS);
  await writeFile(file("empty.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n");
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("schedule value", () => {
  const cases: [at: string, expected: string][] = [
    ["2024-06-10T15:34:59+02:00", "0\n"], // Mon, before the ramp
    ["2024-06-10T15:40:00+02:00", "60\n"], // ramp-up halfway
    ["2024-06-10T15:45:00+02:00", "120\n"],
    ["2024-06-10T15:56:00+02:00", "108\n"], // ramp-down: 9 steps of 12 left
    ["2024-06-11T15:45:00+02:00", "0\n"], // Tue
    ["2021-10-02T08:20:00+02:00", "100\n"], // the OneTime schedule
  ];
  for (const [at, expected] of cases) {
    it(`prints ${expected.trim()} at ${at}`, async () => {
      assert.deepEqual(await run(["value", "-f", file("example.yaml"), "--at", at]), {
        code: 0,
        stdout: expected,
        stderr: "",
      });
    });
  }

  it("applies --scaling-window, --ramp-steps and --default-time-zone", async () => {
    const at = ["--at", "2024-06-10T15:40:00+02:00"];
    const f = ["-f", file("example.yaml")];
    assert.equal((await run(["value", ...f, ...at, "--scaling-window", "0s"])).stdout, "0\n");
    assert.equal((await run(["value", ...f, ...at, "--scaling-window", "20m"])).stdout, "84\n");
    assert.equal((await run(["value", ...f, ...at, "--ramp-steps", "4"])).stdout, "60\n");
    assert.equal(
      (await run(["value", ...f, "--at", "2024-06-10T15:42:00+02:00", "--ramp-steps", "4"]))
        .stdout,
      "60\n",
    );
    // The object names its zone, so the default does not change this one.
    assert.equal(
      (await run(["value", ...f, ...at, "--default-time-zone", "Asia/Tokyo"])).stdout,
      "60\n",
    );
  });

  it("picks one of several documents with --name, by name or namespace/name", async () => {
    const f = ["-f", file("several.yaml")];
    // Sat 01:00 in New York: the Fri 22:00-02:00 window crosses midnight.
    const at = ["--at", "2024-06-15T05:00:00Z"];
    assert.equal((await run(["value", ...f, "--name", "night", ...at])).stdout, "40\n");
    assert.equal((await run(["value", ...f, "--name", "shop/night", ...at])).stdout, "40\n");
    assert.equal(
      (await run(["value", ...f, "--name", "scheduling-event", ...at])).stdout,
      "0\n",
    );
  });

  it("rejects several schedules without --name, listing their names", async () => {
    await assert.rejects(
      run(["value", "-f", file("several.yaml"), "--at", "2024-06-15T05:00:00Z"]),
      new UsageError(
        `${
          file("several.yaml")
        } holds 2 schedules, pick one with --name: ClusterScalingSchedule scheduling-event, ScalingSchedule shop/night`,
      ),
    );
  });

  it("rejects a --name that matches schedules in two namespaces", async () => {
    await assert.rejects(
      run(["value", "-f", file("twins.yaml"), "--name", "peak", "--at", "2024-06-10T10:00:00Z"]),
      new UsageError(
        '--name "peak" matches 2 schedules, use NAMESPACE/NAME: ScalingSchedule a/peak, ScalingSchedule b/peak',
      ),
    );
    assert.equal(
      (await run([
        "value",
        "-f",
        file("twins.yaml"),
        "--name",
        "b/peak",
        "--at",
        "2024-06-10T10:00:00Z",
      ])).stdout,
      "9\n",
    );
  });

  it("fails with 1 for an unknown --name, listing what there is", async () => {
    assert.deepEqual(
      await run([
        "value",
        "-f",
        file("several.yaml"),
        "--name",
        "day",
        "--at",
        "2024-06-10T10:00:00Z",
      ]),
      {
        code: 1,
        stdout: "",
        stderr: `no ScalingSchedule or ClusterScalingSchedule named "day" in ${
          file("several.yaml")
        } (found: ClusterScalingSchedule scheduling-event, ScalingSchedule shop/night)\n`,
      },
    );
  });

  it("fails with 1 when the file holds no schedule", async () => {
    assert.deepEqual(
      await run(["value", "-f", file("empty.yaml"), "--at", "2024-06-10T10:00:00Z"]),
      {
        code: 1,
        stdout: "",
        stderr: `no ScalingSchedule or ClusterScalingSchedule in ${file("empty.yaml")}\n`,
      },
    );
  });

  it("prints the validation error and fails with 1 for an invalid schedule", async () => {
    assert.deepEqual(
      await run(["value", "-f", file("invalid.yaml"), "--at", "2024-06-10T10:00:00Z"]),
      {
        code: 1,
        stdout: "",
        stderr: `${
          file("invalid.yaml")
        }: invalid ScalingSchedule shop/broken: spec.schedules[0].period: required for a Repeating schedule\n`,
      },
    );
  });

  it("fails with 1 for a file that cannot be read", async () => {
    assert.deepEqual(
      await run(["value", "-f", file("missing.yaml"), "--at", "2024-06-10T10:00:00Z"]),
      { code: 1, stdout: "", stderr: `${file("missing.yaml")}: no such file or directory\n` },
    );
  });

  const usage: [name: string, args: string[], message: string][] = [
    ["no subcommand", [], "missing subcommand: value or preview"],
    [
      "an unknown subcommand",
      ["show"],
      'unknown subcommand "show" for schedule: want value or preview',
    ],
    ["no -f", ["value", "--at", "2024-06-10T10:00:00Z"], "missing -f FILE"],
    ["no --at", ["value", "-f", "x.yaml"], "missing --at TIME (RFC3339)"],
    [
      "a bad --at",
      ["value", "-f", "x.yaml", "--at", "monday"],
      'invalid value "monday" for --at: want an RFC3339 time such as 2024-06-10T08:00:00+02:00',
    ],
    [
      "--ramp-steps 0",
      ["value", "-f", "x.yaml", "--at", "2024-06-10T10:00:00Z", "--ramp-steps", "0"],
      'invalid value "0" for --ramp-steps: want at least 1',
    ],
    [
      "an unknown --default-time-zone",
      ["value", "-f", "x.yaml", "--at", "2024-06-10T10:00:00Z", "--default-time-zone", "Mars/Base"],
      'unknown time zone "Mars/Base" for --default-time-zone',
    ],
    [
      "a bad --scaling-window",
      ["value", "-f", "x.yaml", "--at", "2024-06-10T10:00:00Z", "--scaling-window", "10"],
      'invalid value "10" for --scaling-window: want a duration like 30s, 5m, 1h',
    ],
    ["a preview flag", ["value", "--step", "5m"], "unknown flag --step"],
    ["an extra argument", ["value", "extra"], 'unexpected argument "extra"'],
  ];
  for (const [name, args, message] of usage) {
    it(`is a usage error: ${name}`, async () => {
      await assert.rejects(run(args), new UsageError(message));
    });
  }
});

describe("schedule preview", () => {
  it("prints a table in the schedule's zone with value, active and a bar per row", async () => {
    const r = await run([
      "preview",
      "-f",
      file("example.yaml"),
      "--from",
      "2024-06-10T13:30:00Z",
      "--to",
      "2024-06-10T14:10:00Z",
      "--step",
      "5m",
    ]);
    assert.deepEqual(r, {
      code: 0,
      stderr: "",
      stdout: [
        "ClusterScalingSchedule scheduling-event: times in Europe/Berlin, scaling window 10m0s, 10 ramp steps",
        "TIME                     VALUE  ACTIVE",
        "2024-06-10 15:30 +02:00      0  no",
        "2024-06-10 15:35 +02:00      0  yes",
        "2024-06-10 15:40 +02:00     60  yes     ####################",
        "2024-06-10 15:45 +02:00    120  yes     ########################################",
        "2024-06-10 15:50 +02:00    120  yes     ########################################",
        "2024-06-10 15:55 +02:00    120  yes     ########################################",
        "2024-06-10 16:00 +02:00     60  yes     ####################",
        "2024-06-10 16:05 +02:00      0  no",
        "2024-06-10 16:10 +02:00      0  no",
        "",
      ].join("\n"),
    });
  });

  it("shows the ramps step by step, seconds when the step needs them", async () => {
    const r = await run([
      "preview",
      "-f",
      file("several.yaml"),
      "--name",
      "night",
      "--from",
      "2024-06-14T21:40:00-04:00",
      "--to",
      "2024-06-14T22:00:00-04:00",
      "--step",
      "2m30s",
      "--ramp-steps",
      "4",
    ]);
    assert.equal(
      r.stdout,
      [
        "ScalingSchedule shop/night: times in America/New_York, scaling window 20m0s, 4 ramp steps",
        "TIME                        VALUE  ACTIVE",
        "2024-06-14 21:40:00 -04:00      0  yes",
        "2024-06-14 21:42:30 -04:00      0  yes",
        "2024-06-14 21:45:00 -04:00     10  yes     ##########",
        "2024-06-14 21:47:30 -04:00     10  yes     ##########",
        "2024-06-14 21:50:00 -04:00     20  yes     ####################",
        "2024-06-14 21:52:30 -04:00     20  yes     ####################",
        "2024-06-14 21:55:00 -04:00     30  yes     ##############################",
        "2024-06-14 21:57:30 -04:00     30  yes     ##############################",
        "2024-06-14 22:00:00 -04:00     40  yes     ########################################",
        "",
      ].join("\n"),
    );
  });

  it("defaults to 24 hours from now rounded down to the hour, in 15-minute steps", async () => {
    // now is 15:20 CEST: the preview starts at 15:00 and ends at 15:00 the next day.
    const r = await run(["preview", "-f", file("example.yaml")]);
    const lines = r.stdout.trimEnd().split("\n");
    assert.equal(r.code, 0);
    assert.equal(lines.length, 2 + 97);
    assert.equal(lines[2], "2024-06-10 15:00 +02:00      0  no");
    assert.equal(lines[5], "2024-06-10 15:45 +02:00    120  yes     " + "#".repeat(40));
    assert.equal(lines.at(-1), "2024-06-11 15:00 +02:00      0  no");
  });

  it("has no bars when the value stays 0", async () => {
    const r = await run([
      "preview",
      "-f",
      file("example.yaml"),
      "--from",
      "2024-06-11T12:00:00Z",
      "--to",
      "2024-06-11T12:15:00Z",
    ]);
    assert.equal(
      r.stdout,
      [
        "ClusterScalingSchedule scheduling-event: times in Europe/Berlin, scaling window 10m0s, 10 ramp steps",
        "TIME                     VALUE  ACTIVE",
        "2024-06-11 14:00 +02:00      0  no",
        "2024-06-11 14:15 +02:00      0  no",
        "",
      ].join("\n"),
    );
  });

  it("fails with 1 for an invalid schedule", async () => {
    const r = await run(["preview", "-f", file("invalid.yaml")]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /spec\.schedules\[0\]\.period: required for a Repeating schedule\n$/);
  });

  const usage: [name: string, args: string[], message: string][] = [
    [
      "more than 10,000 rows",
      ["--step", "1s"],
      "86401 rows from --from to --to in steps of 1s, more than 10000: use a larger --step or a shorter range",
    ],
    [
      "--to before --from",
      ["--from", "2024-06-10T10:00:00Z", "--to", "2024-06-10T09:00:00Z"],
      "--to 2024-06-10T09:00:00Z is before --from 2024-06-10T10:00:00Z",
    ],
    ["a zero --step", ["--step", "0s"], 'invalid value "0s" for --step: want at least 1ms'],
    [
      "a bad --from",
      ["--from", "yesterday"],
      'invalid value "yesterday" for --from: want an RFC3339 time such as 2024-06-10T08:00:00+02:00',
    ],
    ["--at", ["--at", "2024-06-10T10:00:00Z"], "unknown flag --at"],
  ];
  for (const [name, args, message] of usage) {
    it(`is a usage error: ${name}`, async () => {
      await assert.rejects(
        run(["preview", "-f", file("example.yaml"), ...args]),
        new UsageError(message),
      );
    });
  }
});
