import assert from "node:assert/strict";
import { FakeCluster } from "./fake_cluster.ts";
import { isConflict } from "../../../src/kube/ports.ts";

Deno.test("FakeCluster.replaceNode rejects a stale resourceVersion with 409", async () => {
  const cluster = new FakeCluster();
  const node = cluster.addNode({ metadata: { name: "n1" } });
  cluster.updateNode("n1", (n) => (n.metadata!.labels = { a: "b" }));
  await assert.rejects(cluster.replaceNode(node), (e) => isConflict(e));
  const fresh = cluster.nodes.get("n1")!;
  fresh.spec = { providerID: "baremetal://n1" };
  const written = await cluster.replaceNode(fresh);
  assert.equal(written.spec?.providerID, "baremetal://n1");
  assert.equal(cluster.writesOf("replace").length, 2);
});

Deno.test("FakeCluster.patchNodeStatus merges conditions by type and replaces addresses under $patch", async () => {
  const cluster = new FakeCluster();
  cluster.addNode({
    metadata: { name: "n1" },
    status: {
      conditions: [{ type: "Ready", status: "False" }, { type: "DiskPressure", status: "False" }],
      addresses: [{ type: "InternalIP", address: "10.0.0.1" }],
    },
  });
  await cluster.patchNodeStatus("n1", {
    status: { conditions: [{ type: "Ready", status: "True" }] },
  }, "strategic");
  await cluster.patchNodeStatus("n1", {
    status: { addresses: [{ type: "Hostname", address: "n1" }] },
  }, "merge");
  const node = cluster.nodes.get("n1")!;
  assert.deepEqual(node.status?.conditions?.map((c) => c.status), ["True", "False"]);
  assert.deepEqual(node.status?.addresses, [{ type: "Hostname", address: "n1" }]);
});

Deno.test("FakeCluster.patchNode applies a JSON patch and leaves status alone", async () => {
  const cluster = new FakeCluster();
  cluster.addNode({
    metadata: { name: "n1" },
    spec: { taints: [{ key: "a", effect: "NoSchedule" }] },
    status: { phase: "Running" },
  });
  await cluster.patchNode("n1", [{
    op: "add",
    path: "/spec/taints/-",
    value: { key: "b", effect: "NoSchedule" },
  }], "json");
  await cluster.patchNode(
    "n1",
    { metadata: { finalizers: ["x"] }, status: { phase: "Gone" } },
    "strategic",
  );
  const node = cluster.nodes.get("n1")!;
  assert.deepEqual(node.spec?.taints?.map((t) => t.key), ["a", "b"]);
  assert.deepEqual(node.metadata?.finalizers, ["x"]);
  assert.equal(node.status?.phase, "Running");
});

Deno.test("FakeCluster notifies subscribers of adds, updates and deletes", async () => {
  const cluster = new FakeCluster();
  const seen: string[] = [];
  cluster.nodes.subscribe((event) => seen.push(`${event.type}:${event.object.metadata?.name}`));
  cluster.addNode({ metadata: { name: "n1" } });
  await cluster.patchNode("n1", { metadata: { labels: { a: "1" } } }, "merge");
  await cluster.deleteNode("n1");
  assert.deepEqual(seen, ["add:n1", "update:n1", "delete:n1"]);
});
