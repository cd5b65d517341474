import assert from "node:assert/strict";
import { Registry } from "prom-client";
import {
  declarePowerMetrics,
  PowerMonitor,
} from "../../../../../providers/baremetal/power/power_monitor.ts";
import {
  type PowerReading,
  powerStateOf,
  RedfishError,
} from "../../../../../providers/baremetal/power/redfish_client.ts";
import { createBaremetalProvider } from "../../../../../providers/baremetal/mod.ts";
import { createBaremetalPower } from "../../../../../providers/baremetal/power/power_control.ts";
import type { Machine } from "../../../../../src/config/types.ts";
import { testConfig } from "../../../_fakes/test_inventory.ts";
import { FakeClock } from "../../../_fakes/fake_clock.ts";
import { holdsFor, pollUntil } from "../../../../_support/poll.ts";

const BMC = {
  endpoint: "https://10.0.9.11",
  system: "/redfish/v1/Systems/1",
  "username_file": "/etc/keelson/bmc/user",
  "password_file": "/etc/keelson/bmc/password",
  "poll_interval": "1s",
};

function config() {
  return testConfig({
    machines: [
      { name: "w-1", bmc: BMC },
      { name: "w-2", state: "maintenance", bmc: BMC },
      { name: "w-3" },
    ],
  });
}

/** A scripted BMC: each read takes the next answer (a reading, or an error to throw). */
function scripted(answers: Record<string, (PowerReading["state"] | Error)[]>) {
  let reads = 0;
  return {
    reads: () => reads,
    read: (machine: Machine): Promise<PowerReading> => {
      reads++;
      const next = answers[machine.name]?.shift() ?? answers[machine.name]?.at(-1);
      if (next === undefined || next instanceof Error) {
        return Promise.reject(next ?? new RedfishError("unreachable", "no script"));
      }
      const detail = next === "on" ? 'PowerState "On"' : next === "off" ? 'PowerState "Off"' : "x";
      return Promise.resolve({ state: next, detail, system: "/redfish/v1/Systems/1" });
    },
  };
}

/** Polls are 1 s apart on the real timer: a generous bound, a judge every 20 ms. */
const JUDGED = { timeoutMs: 20_000, intervalMs: 20 };

Deno.test('powerStateOf: only exactly "Off" is off; PoweringOff, Paused, null and others are unknown', () => {
  assert.equal(powerStateOf("On").state, "on");
  assert.equal(powerStateOf("Off").state, "off");
  for (const value of ["PoweringOff", "PoweringOn", "Paused", "off", "OFF", null, undefined, 0]) {
    assert.equal(powerStateOf(value).state, "unknown", String(value));
  }
  assert.match(powerStateOf("PoweringOff").detail, /not off yet/);
  // a hostile value is cut and made printable
  assert.equal(powerStateOf("\x1b[2J" + "x".repeat(100)).detail.includes("\x1b"), false);
});

Deno.test("PowerMonitor: Off counts only after two answers in a row; a failure or a flap starts over", async () => {
  const bmc = scripted({
    "w-1": ["off", new RedfishError("timeout", "slow"), "off", "on", "off", "off"],
  });
  const registry = new Registry();
  const monitor = new PowerMonitor({
    config: () => testConfig({ machines: [{ name: "w-1", bmc: BMC }] }),
    metrics: declarePowerMetrics(registry),
    readPower: bmc.read,
  });
  const machine = testConfig({ machines: [{ name: "w-1", bmc: BMC }] }).machines[0]!;
  const stop = new AbortController();
  monitor.start(stop.signal);
  try {
    // (reads so far, confirmed off) judged every 20 ms; reads are 1 s apart
    const seen: [number, boolean][] = [];
    await pollUntil("confirmed off", () => {
      seen.push([bmc.reads(), monitor.confirmedOff(machine)]);
      return monitor.confirmedOff(machine);
    }, JUDGED);
    // off, timeout, off, on, off: never confirmed; the sixth answer (off again) confirms
    const early = seen.filter(([reads, confirmed]) => confirmed && reads < 6);
    assert.deepEqual(early, [], "confirmed off before two Off answers in a row");
    assert.ok(seen.some(([reads]) => reads === 3), "the judge ran between the reads");
    const observation = monitor.observation("w-1")!;
    assert.equal(observation.state, "off");
    assert.ok(observation.answeredAtMs! >= observation.sinceMs);
    const metrics = await registry.getMetricsAsJSON();
    const errors = metrics.find((m) => m.name === "keelson_bmc_request_errors_total")!;
    assert.deepEqual(
      errors.values.map((v) => [v.labels.reason, v.value]),
      [["timeout", 1]],
    );
  } finally {
    stop.abort();
  }
  // the end of the term forgets what was seen, and the series go
  assert.equal(monitor.observation("w-1")!.state, "unknown");
  assert.equal(monitor.observed().length, 0);
  assert.equal(
    (await registry.getMetricsAsJSON()).find((m) => m.name === "keelson_bmc_up")!.values.length,
    0,
  );
});

Deno.test("PowerMonitor: a flapping BMC never confirms Off", async () => {
  const flips: ("on" | "off")[] = [];
  for (let i = 0; i < 8; i++) flips.push(i % 2 === 0 ? "off" : "on");
  const bmc = scripted({ "w-1": [...flips] });
  const monitor = new PowerMonitor({
    config: () => testConfig({ machines: [{ name: "w-1", bmc: BMC }] }),
    metrics: declarePowerMetrics(new Registry()),
    readPower: bmc.read,
  });
  const machine = testConfig({ machines: [{ name: "w-1", bmc: BMC }] }).machines[0]!;
  const stop = new AbortController();
  monitor.start(stop.signal);
  const confirmed: boolean[] = [];
  const sinces = new Set<number>();
  try {
    // judged after every read (reads are 1 s apart; checked every 20 ms)
    await pollUntil("seven reads", () => {
      confirmed.push(monitor.confirmedOff(machine));
      const o = monitor.observed()[0]?.observation;
      if (o) sinces.add(o.sinceMs);
      return bmc.reads() >= 7;
    }, JUDGED);
  } finally {
    stop.abort();
  }
  assert.ok(!confirmed.includes(true), "a flapping state must never count as off");
  // sinceMs restarted at every change
  assert.ok(sinces.size >= 6, `sinceMs values: ${sinces.size}`);
});

Deno.test("instanceState/instanceShutdown: an active machine its BMC confirmed off is shutdown; maintenance stays; existence never changes", async () => {
  const power = createBaremetalPower(config, new Registry());
  const off = new Set(["w-1", "w-2", "w-3"]);
  const provider = createBaremetalProvider(() => ({ config: config(), healthy: true }), {
    power: { ...power, confirmedOff: (m) => off.has(m.name) },
  });
  const node = (name: string) => ({ metadata: { name } });
  assert.equal(await provider.instancesV2.instanceState(node("w-1")), "shutdown");
  assert.equal(await provider.instancesV2.instanceShutdown(node("w-1")), true);
  assert.equal(await provider.instancesV2.instanceExists(node("w-1")), true);
  assert.equal(await provider.instancesV2.instanceState(node("w-2")), "maintenance");
  off.clear();
  assert.equal(await provider.instancesV2.instanceState(node("w-1")), "active");
  assert.equal(await provider.instancesV2.instanceShutdown(node("w-1")), false);
  // provider.power: null without a [machines.bmc]; unknown (not polled) with one, never off
  assert.equal(await provider.power!.powerState(node("w-3")), null);
  assert.equal((await provider.power!.powerState(node("w-1")))!.state, "unknown");
  await assert.rejects(provider.power!.forceOff(node("w-3")), /has no \[machines.bmc\]/);
});

Deno.test("PowerMonitor.sync: a machine whose [machines.bmc] a reload removed is no longer polled or reported", async () => {
  let current = testConfig({ machines: [{ name: "w-1", bmc: BMC }] });
  const bmc = scripted({ "w-1": ["on"] });
  const registry = new Registry();
  const monitor = new PowerMonitor({
    config: () => current,
    metrics: declarePowerMetrics(registry),
    readPower: bmc.read,
  });
  const stop = new AbortController();
  monitor.start(stop.signal);
  try {
    await pollUntil("w-1 observed", () => monitor.observed().length === 1, JUDGED);
    current = testConfig({ machines: [{ name: "w-1" }] });
    monitor.sync();
    assert.equal(monitor.observed().length, 0);
    assert.equal(monitor.observation("w-1"), null);
    const reads = bmc.reads();
    // reads are 1 s apart: a window of one and a half
    await holdsFor("no read after the reload", () => bmc.reads() === reads, { forMs: 1_500 });
    const up = (await registry.getMetricsAsJSON()).find((m) => m.name === "keelson_bmc_up")!;
    assert.equal(up.values.length, 0);
  } finally {
    stop.abort();
  }
});

Deno.test("PowerMonitor: polls on the injected clock and tells listeners of each change a decision reads, not of each answer", async () => {
  const bmc = scripted({
    "w-1": ["on", "on", "on", "off", "off", "off", new RedfishError("timeout", "slow"), "off"],
  });
  const clock = new FakeClock();
  const monitor = new PowerMonitor({
    config: () => testConfig({ machines: [{ name: "w-1", bmc: BMC }] }),
    metrics: declarePowerMetrics(new Registry()),
    readPower: bmc.read,
    clock,
  });
  const told: number[] = [];
  const stopTelling = monitor.onChange((machine) => {
    assert.equal(machine, "w-1");
    told.push(bmc.reads());
  });
  const stop = new AbortController();
  monitor.start(stop.signal);
  try {
    for (let read = 1; read <= 8; read++) {
      await pollUntil(`answer ${read}`, () => bmc.reads() === read && clock.pendingTimers() > 0);
      // the next read waits for the injected clock's poll interval (1 s), not the real one
      clock.advance(999);
      assert.equal(bmc.reads(), read);
      clock.advance(1);
    }
  } finally {
    stop.abort();
    stopTelling();
  }
  // new state (1), second On (2), Off (4), Off confirmed (5), no answer (7), Off again (8)
  assert.deepEqual(told, [1, 2, 4, 5, 7, 8]);
});
