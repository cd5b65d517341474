/**
 * A machine whose BMC system reports another machine's serial number is unknown power, never off,
 * and says why everywhere an operator looks: the `identity` reason of
 * keelson_bmc_request_errors_total, the power detail the heartbeat publishes (and `keelson status`
 * prints), and one Warning Event on the machine's Node. ForceOff sends nothing. The provider's
 * real power part polls a loopback Redfish server.
 */
import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import {
  createBaremetalPower,
  REASON_BMC_IDENTITY_MISMATCH,
} from "../../../../../providers/baremetal/power/power_control.ts";
import { hostReport } from "../../../../../src/agent/heartbeat.ts";
import { pollUntil } from "../../../../_support/poll.ts";
import { RecordingEventRecorder } from "../../../_fakes/recording_event_recorder.ts";
import { testConfig } from "../../../_fakes/test_inventory.ts";
import { computerSystem, startFakeRedfish } from "./_fake_redfish.ts";

const S1 = "/redfish/v1/Systems/1";
const CA_FILE = new URL("../../../server/testdata/ca.pem", import.meta.url).pathname;

async function errorsOf(registry: Registry, reason: string): Promise<number> {
  const family = (await registry.getMetricsAsJSON())
    .find((m) => m.name === "keelson_bmc_request_errors_total");
  return family?.values.find((v) => v.labels.machine === "w-1" && v.labels.reason === reason)
    ?.value ?? 0;
}

Deno.test("identity: another machine's serial is unknown power with the reason in the metric, the heartbeat and one Event; ForceOff sends nothing", async () => {
  const dir = await Deno.makeTempDir();
  await using bmc = startFakeRedfish("SN-W1");
  const stop = new AbortController();
  try {
    await Deno.writeTextFile(`${dir}/user`, "admin\n", { mode: 0o600 });
    await Deno.writeTextFile(`${dir}/password`, "s3cret\n", { mode: 0o600 });
    const config = testConfig({
      machines: [{
        name: "w-1",
        id: "SN-W1",
        bmc: {
          endpoint: bmc.endpoint,
          system: S1,
          username_file: `${dir}/user`,
          password_file: `${dir}/password`,
          ca_file: CA_FILE,
          poll_interval: "1s",
        },
      }],
    });
    const machine = config.machines[0]!;
    const node: V1Node = { metadata: { name: "w-1", uid: "uid-w-1" } };
    const events = new RecordingEventRecorder();
    const registry = new Registry();
    const power = createBaremetalPower(() => config, registry, {
      events: () => events,
      nodeOf: (m) => m.name === "w-1" ? node : undefined,
    });
    bmc.serve({
      [S1]: computerSystem({
        PowerState: "Off",
        SerialNumber: "SN-W7",
        Actions: {
          "#ComputerSystem.Reset": { target: `${S1}/Actions/ComputerSystem.Reset` },
        },
      }),
    });
    power.monitor.start(stop.signal);
    await pollUntil(
      "three identity failures",
      async () => (await errorsOf(registry, "identity")) >= 3,
      {
        timeoutMs: 30_000,
      },
    );
    const observation = power.monitor.observation("w-1")!;
    assert.equal(observation.state, "unknown");
    assert.equal(power.confirmedOff(machine), false);
    assert.match(
      observation.detail,
      /^identity: \/redfish\/v1\/Systems\/1 reports SerialNumber "SN-W7", not the machine's id "SN-W1"/,
    );
    // the heartbeat's power: the reason leads the detail, inside its 200 characters
    const report = hostReport({
      host: "cp-1",
      dataPlane: undefined,
      reloads: { lastReloadSucceeded: () => true, lastSuccessAt: () => new Date(0) },
      power: () => power.monitor.observed(),
    });
    assert.equal(report.power?.[0]?.state, "unknown");
    assert.match(
      report.power![0]!.detail,
      /^identity: .*SerialNumber "SN-W7", not the machine's id "SN-W1"/,
    );
    // one Warning for the cause, on the machine's Node, however many polls saw it
    assert.deepEqual(events.events.map((e) => [e.object, e.type, e.reason]), [
      ["Node/w-1", "Warning", REASON_BMC_IDENTITY_MISMATCH],
    ]);
    assert.match(events.events[0]!.message ?? "", /power is unknown .*SerialNumber "SN-W7"/);
    // ForceOff reads the system again, judges it, and posts nothing
    const control = power.control(() => machine);
    await assert.rejects(control.forceOff(node), /SerialNumber "SN-W7", not the machine's id/);
    assert.deepEqual(bmc.requests.filter((r) => r.method === "POST"), []);
    // the right system answers: the machine's power is read again
    bmc.serve({ [S1]: computerSystem({ PowerState: "Off", SerialNumber: "SN-W1" }) });
    await pollUntil("w-1 confirmed off", () => power.confirmedOff(machine), { timeoutMs: 30_000 });
    assert.equal(events.events.length, 1);
  } finally {
    stop.abort();
    await Deno.remove(dir, { recursive: true });
  }
});
