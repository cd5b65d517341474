import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import { hostNode } from "../../../src/agent/data_plane.ts";
import { FakeInformer } from "../_fakes/fake_cluster.ts";

Deno.test("hostNode(): the host's Node uid from the cache, absent without one, unknown before the cache synced", () => {
  const nodes = new FakeInformer<V1Node>();
  nodes.setSynced(false);
  nodes.upsert({ metadata: { name: "n-1", uid: "u-1" } });
  assert.equal(hostNode(nodes, "n-1"), "unknown");
  nodes.setSynced(true);
  assert.deepEqual(hostNode(nodes, "n-1"), { uid: "u-1" });
  // a control-plane host without kubelet has no Node
  assert.equal(hostNode(nodes, "cp-1"), "absent");
});
