import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { NodeController } from "../../../../src/controllers/node/node_controller.ts";
import { KubeApiError } from "../../../../src/kube/ports.ts";
import { createBaremetalProvider } from "../../../../providers/baremetal/mod.ts";
import { FakeCluster } from "../../_fakes/fake_cluster.ts";
import { sampleConfig } from "../../_fakes/test_inventory.ts";
import { pollUntil } from "../../../_support/poll.ts";

const TAINT = {
  key: "node.cloudprovider.kubernetes.io/uninitialized",
  value: "true",
  effect: "NoSchedule",
};

function kubeletNode(name: string, extra: { providerID?: string; nodeIp?: string } = {}): V1Node {
  return {
    metadata: {
      name,
      creationTimestamp: new Date(0),
      labels: { "kubernetes.io/hostname": name },
      ...(extra.nodeIp
        ? { annotations: { "alpha.kubernetes.io/provided-node-ip": extra.nodeIp } }
        : {}),
    },
    spec: {
      taints: [TAINT, { key: "node.kubernetes.io/not-ready", effect: "NoSchedule" }],
      ...(extra.providerID ? { providerID: extra.providerID } : {}),
    },
    status: extra.nodeIp ? { addresses: [{ type: "InternalIP", address: extra.nodeIp }] } : {},
  };
}

function setup(realSleep = false) {
  const cluster = new FakeCluster();
  const registry = new Registry();
  const provider = createBaremetalProvider(() => ({ config: sampleConfig(), healthy: true }));
  const controller = new NodeController(
    {
      nodes: cluster.nodes,
      writer: cluster,
      events: cluster.events,
      instances: provider.instancesV2,
      registry,
    },
    realSleep ? {} : { now: () => 10_000, sleep: () => Promise.resolve() },
  );
  return { cluster, controller, registry };
}

Deno.test("NodeController.sync initializes a tainted Node with one PUT, then addresses and a Synced event", async () => {
  const { cluster, controller, registry } = setup();
  cluster.addNode(kubeletNode("cp-1", { nodeIp: "10.0.0.11" }));
  assert.deepEqual(await controller.sync("cp-1"), { kind: "done" });
  const node = cluster.nodes.get("cp-1")!;
  assert.equal(node.spec?.providerID, "baremetal://SN-1");
  assert.deepEqual(node.spec?.taints?.map((t) => t.key), ["node.kubernetes.io/not-ready"]);
  assert.deepEqual(node.metadata?.labels, {
    "kubernetes.io/hostname": "cp-1",
    "node.kubernetes.io/instance-type": "r650",
    "beta.kubernetes.io/instance-type": "r650",
    "topology.kubernetes.io/zone": "dc1-a",
    "failure-domain.beta.kubernetes.io/zone": "dc1-a",
    "topology.kubernetes.io/region": "dc1",
    "failure-domain.beta.kubernetes.io/region": "dc1",
    "example.com/storage": "nvme",
  });
  // provided-node-ip 10.0.0.11 drops the other InternalIP (fd00::11), keeps External and Hostname.
  assert.deepEqual(node.status?.addresses, [
    { type: "InternalIP", address: "10.0.0.11" },
    { type: "ExternalIP", address: "203.0.113.11" },
    { type: "Hostname", address: "cp-1.dc1.example.net" },
  ]);
  assert.equal(cluster.writesOf("replace").length, 1);
  assert.equal(cluster.writesOf("patchStatus").length, 1);
  assert.equal(cluster.writes.length, 2);
  assert.deepEqual(cluster.events.events, [
    { object: "Node/cp-1", type: "Normal", reason: "Synced", message: "Node synced successfully" },
  ]);
  const metrics = await registry.metrics();
  assert.match(metrics, /node_controller_cloud_provider_taint_removal_delay_seconds_count 1/);
  assert.match(metrics, /node_controller_initial_node_sync_delay_seconds_bucket\{le="16"\} 1/);
});

Deno.test("NodeController.sync keeps an existing providerID and writes nothing more on a second sync", async () => {
  const { cluster, controller } = setup();
  cluster.addNode(kubeletNode("w-2", { providerID: "baremetal://w-2" }));
  await controller.sync("w-2");
  await controller.sync("w-2");
  assert.equal(cluster.nodes.get("w-2")?.spec?.providerID, "baremetal://w-2");
  assert.equal(cluster.writesOf("replace").length, 1);
  assert.equal(cluster.writes.length, 2);
});

Deno.test("NodeController.sync keeps the taint of an unknown machine and emits a Warning naming what was tried", async () => {
  const { cluster, controller } = setup();
  cluster.addNode(kubeletNode("ghost", { nodeIp: "10.9.9.9" }));
  const result = await controller.sync("ghost");
  assert.equal(result.kind === "failed" && result.retriable, true);
  assert.equal(cluster.writes.length, 0);
  const [event] = cluster.events.events;
  assert.equal(event?.type, "Warning");
  assert.equal(event?.reason, "InstanceNotFound");
  assert.match(event?.message ?? "", /name "ghost".*10\.9\.9\.9/);
});

Deno.test("NodeController.sync fails and keeps the taint when provided-node-ip matches no inventory address", async () => {
  const { cluster, controller } = setup();
  cluster.addNode({
    ...kubeletNode("w-1"),
    metadata: { name: "w-1", annotations: { "alpha.kubernetes.io/provided-node-ip": "10.0.0.99" } },
  });
  const result = await controller.sync("w-1");
  assert.equal(result.kind, "failed");
  assert.equal(cluster.writes.length, 0);
  assert.equal(cluster.events.events[0]?.reason, "InitializationFailed");
  assert.match(cluster.events.events[0]?.message ?? "", /provided node ip is not valid/);
});

Deno.test("NodeController.sync retries the PUT on a conflict, re-reading the Node", async () => {
  const { cluster, controller } = setup();
  cluster.addNode(kubeletNode("w-1"));
  cluster.failOnce("replaceNode", new KubeApiError("conflict", { code: 409 }));
  cluster.failOnce("replaceNode", new KubeApiError("conflict", { code: 409 }));
  assert.deepEqual(await controller.sync("w-1"), { kind: "done" });
  assert.equal(cluster.nodes.get("w-1")?.spec?.providerID, "baremetal://w-1");
  assert.equal(cluster.events.withReason("Synced").length, 1);
});

Deno.test("NodeController.sync reconciles GA labels from beta labels on an initialized Node", async () => {
  const { cluster, controller } = setup();
  cluster.addNode({
    metadata: {
      name: "w-1",
      labels: {
        "failure-domain.beta.kubernetes.io/zone": "z",
        "topology.kubernetes.io/zone": "edited",
      },
    },
  });
  await controller.sync("w-1");
  assert.equal(cluster.nodes.get("w-1")?.metadata?.labels?.["topology.kubernetes.io/zone"], "z");
  assert.equal(cluster.writes.length, 1);
  await controller.sync("w-1");
  assert.equal(cluster.writes.length, 1);
});

Deno.test("NodeController.syncAddresses refreshes untainted Nodes only and keeps kubelet's Hostname when the cloud has none", async () => {
  const { cluster, controller } = setup();
  cluster.addNode(kubeletNode("w-2"));
  cluster.addNode({
    metadata: { name: "w-1" },
    status: { addresses: [{ type: "InternalIP", address: "10.0.0.99" }] },
  });
  await controller.syncAddresses();
  assert.equal(cluster.writes.length, 1);
  assert.deepEqual(cluster.nodes.get("w-1")?.status?.addresses, [
    { type: "InternalIP", address: "10.0.0.21" },
    { type: "Hostname", address: "w1.example.net" },
  ]);
  await controller.syncAddresses();
  assert.equal(cluster.writes.length, 1);
});

Deno.test("NodeController.run initializes Nodes added after start and stops on abort", async () => {
  const { cluster, controller } = setup(true);
  cluster.addNode(kubeletNode("w-1"));
  const abort = new AbortController();
  const running = controller.run(abort.signal);
  cluster.addNode(kubeletNode("w-2"));
  await pollUntil("two Synced events", () => cluster.events.withReason("Synced").length >= 2, {
    intervalMs: 1,
  });
  abort.abort();
  await running;
  assert.equal(cluster.events.withReason("Synced").length, 2);
});
