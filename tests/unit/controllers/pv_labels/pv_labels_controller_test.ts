import assert from "node:assert/strict";
import type { V1PersistentVolume } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { PvLabelsController } from "../../../../src/controllers/pv_labels/pv_labels_controller.ts";
import { pinnedNode } from "../../../../src/controllers/pv_labels/pv_zone_labels.ts";
import { FakeCluster } from "../../_fakes/fake_cluster.ts";

function localPv(name: string, terms: unknown[]): V1PersistentVolume {
  return {
    metadata: { name },
    spec: { nodeAffinity: { required: { nodeSelectorTerms: terms as never } } },
  };
}
const byHostname = (...values: string[]) => ({
  matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values }],
});

Deno.test("pinnedNode finds one hostname or metadata.name, and nothing for several", () => {
  assert.deepEqual(pinnedNode(localPv("a", [byHostname("w-1")])), { by: "hostname", value: "w-1" });
  assert.deepEqual(
    pinnedNode(
      localPv("b", [{ matchFields: [{ key: "metadata.name", operator: "In", values: ["w-2"] }] }]),
    ),
    { by: "name", value: "w-2" },
  );
  assert.equal(pinnedNode(localPv("c", [byHostname("w-1", "w-2")])), undefined);
  assert.equal(pinnedNode(localPv("d", [byHostname("w-1"), byHostname("w-2")])), undefined);
  assert.equal(pinnedNode({ metadata: { name: "e" } }), undefined);
});

Deno.test("PvLabelsController.sync copies the Node's zone and region once", async () => {
  const cluster = new FakeCluster();
  cluster.addNode({
    metadata: {
      name: "w-1",
      labels: {
        "kubernetes.io/hostname": "w-1",
        "topology.kubernetes.io/zone": "dc1-b",
        "topology.kubernetes.io/region": "dc1",
      },
    },
  });
  cluster.addPersistentVolume(localPv("pv-1", [byHostname("w-1")]));
  cluster.addPersistentVolume(localPv("pv-2", [byHostname("elsewhere")]));
  const controller = new PvLabelsController({
    volumes: cluster.persistentVolumes,
    nodes: cluster.nodes,
    writer: cluster,
    registry: new Registry(),
  });
  await controller.sync("pv-1");
  await controller.sync("pv-1");
  await controller.sync("pv-2");
  assert.deepEqual(cluster.persistentVolumes.get("pv-1")?.metadata?.labels, {
    "topology.kubernetes.io/zone": "dc1-b",
    "topology.kubernetes.io/region": "dc1",
  });
  assert.equal(cluster.writes.length, 1);
});
