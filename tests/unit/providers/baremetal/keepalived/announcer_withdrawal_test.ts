/**
 * The keepalived announcer when a reload takes this host out of VRRP: a file with no instance,
 * applied, the VIPs confirmed gone, one warning; the host back serves again.
 */
import assert from "node:assert/strict";
import { type LogRecord, reset } from "@logtape/logtape";
import { Registry } from "prom-client";
import {
  KeepalivedAnnouncer,
  renderHostKeepalived,
  serviceVipsInFile,
} from "../../../../../providers/baremetal/keepalived/announcer.ts";
import type { ApplyResult } from "../../../../../providers/baremetal/keepalived/config_applier.ts";
import { instancesInFile } from "../../../../../providers/baremetal/keepalived/vrrp_state.ts";
import type { Config, Machine } from "../../../../../src/config/types.ts";
import { captureLogs } from "../../../_fakes/captured_logs.ts";
import { testConfig } from "./_inventory.ts";

const CP_VIP = "10.250.0.100";
const SERVICE_VIPS = ["10.250.0.150", "10.250.0.151"];

function withMachine(config: Config, change: Partial<Machine>, name = "cp-1"): Config {
  return {
    ...config,
    machines: config.machines.map((m) => (m.name === name ? { ...m, ...change } : m)),
  };
}

function text(record: LogRecord): string {
  return record.message.map((part) => String(part)).join("");
}

function services(vips: readonly string[]) {
  return vips.map((ip, i) => ({
    metadata: { name: `s${i}`, namespace: "default" },
    spec: { type: "LoadBalancer" },
    status: { loadBalancer: { ingress: [{ ip }] } },
  }));
}

/**
 * An announcer whose applier writes the file, and an interface where this host holds every VIP of
 * the file; the VIPs a new file drops leave it after `lingeringReads` reads (keepalived after
 * SIGHUP); `stuck` VIPs never leave (a keepalived that was not told).
 */
async function setup(options: {
  synced: boolean;
  result?: () => ApplyResult["result"];
  lingeringReads?: number;
  withdrawTimeoutMs?: number;
  signal?: AbortSignal;
}) {
  const dir = await Deno.makeTempDir({ prefix: "keelson-withdraw-" });
  const file = `${dir}/keelson.conf`;
  const registry = new Registry();
  const state = {
    config: testConfig({ keepalived: { config_file: file } }),
    onInterface: new Set<string>(),
    leaving: new Set<string>(),
    leaveAfter: 0,
    stuck: new Set<string>(),
    reads: 0,
  };
  const applied: string[] = [];
  const announcer = new KeepalivedAnnouncer({
    config: () => state.config,
    configFile: file,
    host: "cp-1",
    registry,
    withdrawTimeoutMs: options.withdrawTimeoutMs ?? 10_000,
    ...(options.signal ? { signal: options.signal } : {}),
    applier: {
      apply: async (text) => {
        const result = options.result?.() ?? "success";
        // not_running: written, but no keepalived reads it (the interface stays as it is)
        if (result === "not_running") {
          await Deno.writeTextFile(file, text);
          applied.push(text);
        }
        if (result === "success") {
          await Deno.writeTextFile(file, text);
          applied.push(text);
          const now = new Set([...instancesInFile(text).values()].flat());
          state.leaving = new Set([...state.onInterface].filter((v) => !now.has(v)));
          state.leaveAfter = options.lingeringReads ?? 2;
          for (const v of now) state.onInterface.add(v);
        }
        return { result, reloaded: result === "success", message: `fake ${result}` };
      },
    },
    readAddresses: (iface) => {
      assert.equal(iface, "eth0");
      state.reads++;
      if (state.leaving.size > 0 && state.leaveAfter-- <= 0) {
        for (const v of state.leaving) state.onInterface.delete(v);
        state.leaving.clear();
      }
      return Promise.resolve(["10.250.0.11", ...state.onInterface, ...state.stuck].sort());
    },
  });
  if (options.synced) {
    await announcer.setServiceSource({
      services: { list: () => services(SERVICE_VIPS), get: () => undefined },
      hasSynced: () => true,
    });
  }
  return { dir, file, registry, announcer, applied, state };
}

async function skippedGauge(registry: Registry): Promise<number | undefined> {
  const metric = registry.getSingleMetric("keelson_keepalived_skipped_addresses");
  return (await metric?.get())?.values[0]?.value;
}

Deno.test("KeepalivedAnnouncer: a reload retiring this host gives keepalived a file with no VRRP instance, waits for the VIPs to leave, warns once; active again it serves again", async () => {
  const records = await captureLogs();
  const t = await setup({ synced: true });
  try {
    assert.equal(t.applied.length, 1);
    assert.deepEqual(t.state.onInterface.size, 3, "serving the control-plane VIP and two Services");
    const active = t.state.config;

    t.state.config = withMachine(active, { state: "retired" });
    const result = await t.announcer.sync("configuration reloaded");
    assert.equal(result?.result, "success");
    const withdrawn = t.applied.at(-1)!;
    assert.equal(instancesInFile(withdrawn).size, 0);
    assert.doesNotMatch(withdrawn, /vrrp_instance|global_defs|track_file|10\.250\./);
    assert.equal(await Deno.readTextFile(t.file), withdrawn);
    assert.deepEqual([...t.state.onInterface], [], "the VIPs left before sync() resolved");
    assert.ok(t.state.reads >= 3, "it polled until they were gone");
    assert.equal(t.announcer.withdrawalFailed, false);
    assert.deepEqual(t.announcer.serviceVips(), [], "claims no Service VIP");
    assert.equal(t.announcer.withdrawal()?.reason, 'machine "cp-1" is retired');
    assert.equal(await skippedGauge(t.registry), 0);
    const warnings = records.filter((r) => r.level === "warning").map(text);
    assert.equal(warnings.length, 1, warnings.join("\n"));
    assert.match(
      warnings[0]!,
      /no longer serves VIPs through keepalived \(machine "cp-1" is retired\)/,
    );
    assert.match(warnings[0]!, /no VRRP instance/);
    assert.match(warnings[0]!, /3 VIP\(s\) not on eth0/);
    assert.match(warnings[0]!, /systemctl disable --now keepalived/);
    assert.doesNotMatch(warnings[0]!, /Restart keelson/, "retired: nothing to restart for");

    // further renders (Service changes, reloads) keep it withdrawn without another warning
    await t.announcer.sync("services changed");
    assert.equal(instancesInFile(t.applied.at(-1)!).size, 0);
    assert.equal(records.filter((r) => r.level === "warning").length, 1);

    t.state.config = active;
    await t.announcer.sync("configuration reloaded");
    const back = t.applied.at(-1)!;
    assert.deepEqual(serviceVipsInFile(back).sort(), SERVICE_VIPS);
    assert.match(back, /vrrp_instance keelson_cp_v4 \{/);
    assert.equal(t.announcer.withdrawal(), undefined);
    assert.deepEqual(t.announcer.serviceVips(), SERVICE_VIPS);
    assert.ok(
      records.some((r) =>
        r.level === "info" && /serves VIPs through keepalived again/.test(text(r))
      ),
    );
    assert.equal(records.filter((r) => r.level === "error").length, 0);
  } finally {
    await reset();
    await Deno.remove(t.dir, { recursive: true });
  }
});

Deno.test("KeepalivedAnnouncer: another role, a removed machine or [keepalived] enabled = false withdraw too, and say a restart is needed", async () => {
  const cases: [string, (c: Config) => Config, RegExp][] = [
    ["role", (c) => withMachine(c, { role: "worker" }), /now has role "worker"/],
    [
      "removed",
      (c) => ({ ...c, machines: c.machines.filter((m) => m.name !== "cp-1") }),
      /is no longer in the inventory/,
    ],
    [
      "enabled",
      (c) => ({ ...c, keepalived: { ...c.keepalived, enabled: false } }),
      /\[keepalived\] enabled = false/,
    ],
  ];
  for (const [name, edit, reason] of cases) {
    const records = await captureLogs();
    const t = await setup({ synced: true });
    try {
      t.state.config = edit(t.state.config);
      await t.announcer.sync("configuration reloaded");
      assert.equal(instancesInFile(t.applied.at(-1)!).size, 0, name);
      assert.deepEqual([...t.state.onInterface], [], name);
      const warnings = records.filter((r) => r.level === "warning").map(text);
      assert.equal(warnings.length, 1, name);
      assert.match(warnings[0]!, reason, name);
      assert.match(warnings[0]!, /Restart keelson to apply the new setting/, name);
      assert.match(warnings[0]!, /systemctl disable --now keepalived/, name);
    } finally {
      await reset();
      await Deno.remove(t.dir, { recursive: true });
    }
  }
});

Deno.test("KeepalivedAnnouncer: a host back before the Service cache synced serves the Service VIPs of the file the withdrawal replaced", async () => {
  const t = await setup({ synced: false });
  try {
    const active = t.state.config;
    // the file keepalived ran before keelson started (e.g. after a keelson restart)
    const before = renderHostKeepalived({
      config: active,
      host: "cp-1",
      serviceVips: SERVICE_VIPS,
    });
    assert.ok(!("error" in before));
    await Deno.writeTextFile(t.file, before.text);
    t.state.config = withMachine(active, { state: "retired" });
    await t.announcer.sync("configuration reloaded");
    assert.deepEqual(serviceVipsInFile(await Deno.readTextFile(t.file)), []);
    t.state.config = active;
    await t.announcer.sync("configuration reloaded");
    assert.deepEqual(serviceVipsInFile(t.applied.at(-1)!).sort(), SERVICE_VIPS);
  } finally {
    await Deno.remove(t.dir, { recursive: true });
  }
});

Deno.test("KeepalivedAnnouncer: a withdrawal whose VIPs stay, or that keepalived rejects, is an error and is tried again", async () => {
  const records = await captureLogs();
  let outcome: ApplyResult["result"] = "success";
  const t = await setup({ synced: true, withdrawTimeoutMs: 200, result: () => outcome });
  try {
    t.state.stuck.add(CP_VIP); // keepalived was not told (e.g. it runs under another pid)
    t.state.config = withMachine(t.state.config, { state: "retired" });
    await t.announcer.sync("configuration reloaded");
    assert.equal(t.announcer.withdrawalFailed, true);
    const errors = records.filter((r) => r.level === "error").map(text);
    assert.equal(errors.length, 1);
    assert.match(errors[0]!, /must serve no VIP through keepalived \(machine "cp-1" is retired\)/);
    assert.match(errors[0]!, /10\.250\.0\.100 still on eth0 after \d+ ms/);
    assert.match(errors[0]!, /retrying every 10 s/);
    assert.equal(records.filter((r) => r.level === "warning").length, 0);

    // the same failure again says nothing new; once the VIP is gone the warning follows
    await t.announcer.sync("retrying the withdrawal");
    assert.equal(
      t.announcer.withdrawalFailed,
      true,
      "the file on disk is withdrawn, the VIP is not",
    );
    assert.equal(records.filter((r) => r.level === "error").length, 1);
    assert.equal(records.filter((r) => r.level === "warning").length, 0);
    t.state.stuck.clear();
    await t.announcer.sync("retrying the withdrawal");
    assert.equal(t.announcer.withdrawalFailed, false);
    assert.equal(records.filter((r) => r.level === "warning").length, 1);

    // back, then withdrawn again with a check that rejects the file: nothing confirmed
    t.state.config = testConfig({ keepalived: { config_file: t.file } });
    await t.announcer.sync("configuration reloaded");
    outcome = "invalid";
    t.state.config = withMachine(t.state.config, { role: "worker" });
    await t.announcer.sync("configuration reloaded");
    assert.equal(t.announcer.withdrawalFailed, true);
    assert.match(
      records.filter((r) => r.level === "error").map(text).at(-1)!,
      /keepalived did not take the file \(invalid: fake invalid\)/,
    );
  } finally {
    await reset();
    await Deno.remove(t.dir, { recursive: true });
  }
});

Deno.test("KeepalivedAnnouncer: back from a failed withdrawal, nothing is retried; a VIP still on the interface is watched until a file is taken", async () => {
  const records = await captureLogs();
  let outcome: ApplyResult["result"] = "success";
  const t = await setup({ synced: true, withdrawTimeoutMs: 200, result: () => outcome });
  try {
    const active = t.state.config;
    t.state.stuck.add(CP_VIP);
    t.state.config = withMachine(active, { state: "retired" });
    await t.announcer.sync("configuration reloaded");
    assert.equal(t.announcer.withdrawalFailed, true);
    // what the VIP-role gauge observes meanwhile (start_keepalived.ts)
    assert.ok(t.announcer.leavingVips().includes(CP_VIP), t.announcer.leavingVips().join());

    // active again, but keepalived refuses the file: no withdrawal is left to retry, and the
    // host does not claim to serve again
    outcome = "invalid";
    t.state.config = active;
    await t.announcer.sync("configuration reloaded");
    assert.equal(t.announcer.withdrawalFailed, false);
    const again = () => records.filter((r) => /serves VIPs through keepalived again/.test(text(r)));
    assert.equal(again().length, 0);

    // retired once more while the VIP is still stuck: the withdrawal still waits for it
    t.state.config = withMachine(active, { state: "retired" });
    outcome = "success";
    await t.announcer.sync("configuration reloaded");
    assert.equal(t.announcer.withdrawalFailed, true, "the stuck VIP is still seen");
    assert.match(
      records.filter((r) => r.level === "error").map(text).at(-1)!,
      /10\.250\.0\.100 still on eth0/,
    );

    // active with a file keepalived takes: said once
    t.state.stuck.clear();
    t.state.config = active;
    await t.announcer.sync("configuration reloaded");
    assert.equal(again().length, 1);
    assert.equal(t.announcer.withdrawalFailed, false);
    assert.deepEqual(t.announcer.leavingVips(), []);
  } finally {
    await reset();
    await Deno.remove(t.dir, { recursive: true });
  }
});

Deno.test("KeepalivedAnnouncer: once the withdrawal is confirmed, later renders of the empty file read no addresses", async () => {
  const records = await captureLogs();
  const t = await setup({ synced: true });
  try {
    t.state.config = withMachine(t.state.config, { state: "retired" });
    await t.announcer.sync("configuration reloaded");
    assert.equal(t.announcer.withdrawalFailed, false);
    const reads = t.state.reads;
    assert.ok(reads > 0, "the first withdrawal watches the VIPs leave");
    await t.announcer.sync("service changed");
    await t.announcer.sync("service changed");
    assert.equal(t.state.reads, reads, "nothing held: no `ip` run");
    assert.equal(records.filter((r) => r.level === "warning").length, 1);
  } finally {
    await reset();
    await Deno.remove(t.dir, { recursive: true });
  }
});

Deno.test("KeepalivedAnnouncer: the agent's stop ends the wait for a VIP that stays", async () => {
  const records = await captureLogs();
  const stop = new AbortController();
  const t = await setup({ synced: true, withdrawTimeoutMs: 60_000, signal: stop.signal });
  try {
    t.state.stuck.add(CP_VIP);
    t.state.config = withMachine(t.state.config, { state: "retired" });
    const started = performance.now();
    const syncing = t.announcer.sync("configuration reloaded");
    setTimeout(() => stop.abort(), 100);
    await syncing;
    // far below the 60 s bound: the stop ended it (generous for a loaded machine)
    assert.ok(performance.now() - started < 30_000);
    assert.equal(t.announcer.withdrawalFailed, true, "not confirmed: the VIP is still there");
    assert.equal(records.filter((r) => r.level === "error").length, 1);
  } finally {
    await reset();
    await Deno.remove(t.dir, { recursive: true });
  }
});

Deno.test("KeepalivedAnnouncer: with no keepalived running, a withdrawal is confirmed by the interface alone, and a file written then does not count as served again", async () => {
  const records = await captureLogs();
  let outcome: ApplyResult["result"] = "success";
  const t = await setup({ synced: true, withdrawTimeoutMs: 200, result: () => outcome });
  try {
    const active = t.state.config;
    // keepalived stopped: its VIPs left with it, except one a killed keepalived left behind
    outcome = "not_running";
    t.state.onInterface.clear();
    t.state.stuck.add(CP_VIP);
    t.state.config = withMachine(active, { state: "retired" });
    await t.announcer.sync("configuration reloaded");
    assert.equal(instancesInFile(await Deno.readTextFile(t.file)).size, 0, "the file is written");
    assert.equal(t.announcer.withdrawalFailed, true, "a VIP is still on the interface");
    assert.match(
      records.filter((r) => r.level === "error").map(text).at(-1)!,
      /10\.250\.0\.100 still on eth0/,
    );
    t.state.stuck.clear();
    await t.announcer.sync("retrying the withdrawal");
    assert.equal(t.announcer.withdrawalFailed, false, "nothing left on the interface");
    const warning = records.filter((r) => r.level === "warning").map(text).at(-1)!;
    assert.match(warning, /its keepalived file has no VRRP instance \(fake not_running\)/);

    // active again while keepalived still does not run: written, not served
    t.state.config = active;
    await t.announcer.sync("configuration reloaded");
    assert.equal(instancesInFile(await Deno.readTextFile(t.file)).size > 0, true);
    const again = () => records.filter((r) => /serves VIPs through keepalived again/.test(text(r)));
    assert.equal(again().length, 0, "no keepalived runs: it serves nothing");
    outcome = "success";
    await t.announcer.sync("keepalived was not running");
    assert.equal(again().length, 1);
  } finally {
    await reset();
    await Deno.remove(t.dir, { recursive: true });
  }
});
