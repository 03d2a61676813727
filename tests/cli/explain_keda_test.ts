/**
 * `explain` on an HPA a KEDA ScaledObject controls (issue 48): the ScaledObject section of the
 * status document (who serves it, Ready, the scale loop's Active, last active time, cooldown end
 * and next action, each trigger's metric, activation threshold and activity), read from a status
 * endpoint that answers a document of this adapter's own format.
 */
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { runCommandLine } from "../../src/cli/commands.ts";
import { REPLICA_NOTE, type StatusReport } from "../../src/api/status_model.ts";
import { captureIO } from "./capture_io.ts";

const DOC: StatusReport = {
  version: 1,
  generatedAt: "2026-11-29T10:00:00.000Z",
  schedules: [],
  hpas: [{
    namespace: "shop",
    name: "keda-hpa-web",
    scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "web" },
    minReplicas: 1,
    maxReplicas: 10,
    state: "none",
    errors: [],
    warnings: [],
    replicas: { current: 0, desired: 0, computed: null, reasons: [], note: REPLICA_NOTE },
    replicaGuard: null,
    scaledObject: {
      name: "web",
      owner: "hpa-metrics-adapter",
      ready: {
        status: "True",
        reason: "ScaledObjectReady",
        message: "ScaledObject is defined correctly and is ready for scaling",
      },
      triggers: [
        {
          index: 0,
          type: "prometheus",
          name: "rps",
          metricName: "s0-prometheus",
          activation: 2.5,
          active: false,
        },
        { index: 1, type: "cpu", name: null, metricName: null, activation: null, active: null },
      ],
      loop: {
        active: { status: "False", reason: "ScalerCooldown" },
        lastActiveTime: "2026-11-29T09:59:00Z",
        cooldownEndsAt: "2026-11-29T10:04:00Z",
        next: "scale to 0 when the cooldown ends (2026-11-29T10:04:00.000Z)",
      },
    },
    metrics: [],
  }],
};

describe("explain: the ScaledObject behind an HPA", () => {
  let server: Server;
  let base = "";
  before(async () => {
    server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(DOC));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise<void>((r) => server.close(() => r()));
  });

  it("prints who serves it, its conditions, the loop's state and each trigger", async () => {
    const io = captureIO();
    await runCommandLine(["explain", "shop/keda-hpa-web", "--status-url", base], io);
    const out = io.out();
    const section = out.slice(out.indexOf("ScaledObject web\n"));
    assert.equal(
      section.slice(0, section.indexOf("  trigger 1:")),
      [
        "ScaledObject web",
        "  served by:    this adapter (--keda-scaled-objects)",
        "  Ready:        True ScaledObjectReady: ScaledObject is defined correctly and is ready for scaling",
        "  Active:       False ScalerCooldown",
        "  last active:  2026-11-29T09:59:00Z",
        "  cooldown end: 2026-11-29T10:04:00Z",
        "  next:         scale to 0 when the cooldown ends (2026-11-29T10:04:00.000Z)",
        "  trigger 0:    prometheus (rps): s0-prometheus, active above 2.5, inactive",
        "",
      ].join("\n"),
    );
    assert.ok(section.includes("  trigger 1:    cpu\n"));
  });
});
