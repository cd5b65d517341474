import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import {
  hostNodeReady,
  nodeIsReady,
  servingHold,
} from "../../../../providers/baremetal/serving_hold.ts";
import type { Machine } from "../../../../src/config/types.ts";

const config = (state: Machine["state"]) => ({
  machines: [{ name: "w-1", state } as Machine],
});

Deno.test("servingHold(): the machine's state holds every VIP back, a NotReady Node the Service VIPs only, a drain everything", () => {
  assert.equal(servingHold(config("active"), "w-1"), undefined);
  assert.equal(servingHold(config("active"), "w-1", { nodeReady: true }), undefined);
  for (const state of ["maintenance", "shutdown", "retired"] as const) {
    assert.deepEqual(servingHold(config(state), "w-1", { nodeReady: true }), {
      reason: `machine "w-1" is in state "${state}", not "active"`,
      controlPlane: true,
    });
  }
  assert.deepEqual(servingHold(config("active"), "w-1", { nodeReady: false }), {
    reason: 'Node "w-1" is not Ready',
    controlPlane: false,
  });
  // the operator's word wins over the Node's readiness: both hold back, the state says more
  assert.equal(
    servingHold(config("maintenance"), "w-1", { nodeReady: false })?.controlPlane,
    true,
  );
  assert.deepEqual(servingHold(config("active"), "w-1", { draining: true }), {
    reason: "Keelson is stopping (drain)",
    controlPlane: true,
  });
  // a host the inventory lacks is judged elsewhere (it renders nothing at all)
  assert.equal(servingHold(config("active"), "other", {}), undefined);
});

Deno.test("hostNodeReady() and nodeIsReady() withhold only for a known Node whose Ready is not True", () => {
  const node = (status?: string): V1Node => ({
    metadata: { name: "cp-1" },
    status: { conditions: status === undefined ? [] : [{ type: "Ready", status }] },
  });
  const cache = (nodes: V1Node[], synced = true) => ({
    get: (key: string) => nodes.find((n) => n.metadata?.name === key),
    hasSynced: () => synced,
  });
  assert.equal(hostNodeReady(undefined, "cp-1"), true, "no cache yet");
  assert.equal(hostNodeReady(cache([node("False")], false), "cp-1"), true, "not synced");
  assert.equal(hostNodeReady(cache([]), "cp-1"), true, "no Node yet");
  assert.equal(hostNodeReady(cache([node("True")]), "cp-1"), true);
  assert.equal(hostNodeReady(cache([node("False")]), "cp-1"), false);
  assert.equal(hostNodeReady(cache([node("Unknown")]), "cp-1"), false);
  assert.equal(nodeIsReady(node()), true, "no Ready condition");
  assert.equal(nodeIsReady(undefined), true);
});
