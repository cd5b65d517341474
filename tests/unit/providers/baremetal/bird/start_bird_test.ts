import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import { hostNodeReady } from "../../../../../providers/baremetal/bird/start_bird.ts";

function cache(nodes: V1Node[], synced = true) {
  return {
    get: (key: string) => nodes.find((n) => n.metadata?.name === key),
    hasSynced: () => synced,
  };
}

Deno.test("hostNodeReady() withdraws only for a known Node whose Ready is not True", () => {
  const ready = (status: string): V1Node => ({
    metadata: { name: "cp-1" },
    status: { conditions: [{ type: "Ready", status }] },
  });
  assert.equal(hostNodeReady(undefined, "cp-1"), true, "no cache yet");
  assert.equal(hostNodeReady(cache([], false), "cp-1"), true, "cache not synced");
  assert.equal(hostNodeReady(cache([]), "cp-1"), true, "no Node yet");
  assert.equal(hostNodeReady(cache([ready("True")]), "cp-1"), true);
  assert.equal(hostNodeReady(cache([ready("False")]), "cp-1"), false);
  assert.equal(hostNodeReady(cache([ready("Unknown")]), "cp-1"), false);
});
