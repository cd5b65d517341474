import assert from "node:assert/strict";
import type { Config, Machine } from "../../../../../src/config/types.ts";
import { keepalivedWithdrawal } from "../../../../../providers/baremetal/keepalived/withdrawal.ts";
import { testConfig } from "./_inventory.ts";

function withMachine(config: Config, name: string, change: Partial<Machine>): Config {
  return {
    ...config,
    machines: config.machines.map((m) => (m.name === name ? { ...m, ...change } : m)),
  };
}

Deno.test("keepalivedWithdrawal(): an active control-plane machine serves", () => {
  assert.equal(keepalivedWithdrawal(testConfig(), "cp-1"), undefined);
});

Deno.test("keepalivedWithdrawal(): maintenance and shutdown machines stay VRRP peers, as the model has them", () => {
  for (const state of ["maintenance", "shutdown"] as const) {
    assert.equal(
      keepalivedWithdrawal(withMachine(testConfig(), "cp-1", { state }), "cp-1"),
      undefined,
    );
  }
});

Deno.test("keepalivedWithdrawal(): retired, another role, removed, or keepalived off, each with its reason", () => {
  const config = testConfig();
  assert.deepEqual(
    keepalivedWithdrawal(withMachine(config, "cp-1", { state: "retired" }), "cp-1"),
    {
      reason: 'machine "cp-1" is retired',
      restartNeeded: false, // keepalived's side keeps running: the machine may come back
    },
  );
  assert.deepEqual(keepalivedWithdrawal(withMachine(config, "cp-1", { role: "worker" }), "cp-1"), {
    reason: 'machine "cp-1" now has role "worker"',
    restartNeeded: true,
  });
  const removed = { ...config, machines: config.machines.filter((m) => m.name !== "cp-1") };
  assert.deepEqual(keepalivedWithdrawal(removed, "cp-1"), {
    reason: 'machine "cp-1" is no longer in the inventory',
    restartNeeded: true,
  });
  const off = { ...config, keepalived: { ...config.keepalived, enabled: false } };
  assert.deepEqual(keepalivedWithdrawal(off, "cp-1"), {
    reason: "[keepalived] enabled = false",
    restartNeeded: true,
  });
});
