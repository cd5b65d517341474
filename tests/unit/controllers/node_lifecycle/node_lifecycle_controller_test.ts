import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import {
  NodeLifecycleController,
  type NodeLifecyclePolicy,
} from "../../../../src/controllers/node_lifecycle/node_lifecycle_controller.ts";
import { ReloadDeletionGuard } from "../../../../src/controllers/node_lifecycle/deletion_guards.ts";
import type { Config } from "../../../../src/config/types.ts";
import { KubeApiError } from "../../../../src/kube/ports.ts";
import { createBaremetalProvider } from "../../../../providers/baremetal/mod.ts";
import { FakeCluster } from "../../_fakes/fake_cluster.ts";
import { testConfig } from "../../_fakes/test_inventory.ts";
import { firstTermLedger, holdLease, termLedger } from "../../_fakes/memory_leases.ts";

function node(name: string, ready: "True" | "False" | undefined, taints: string[] = []): V1Node {
  return {
    metadata: { name },
    spec: {
      providerID: `baremetal://${name}`,
      ...(taints.length ? { taints: taints.map((key) => ({ key, effect: "NoSchedule" })) } : {}),
    },
    status: ready ? { conditions: [{ type: "Ready", status: ready }] } : {},
  };
}

const MACHINES = [
  { name: "a1" },
  { name: "a2" },
  { name: "old1", state: "retired" },
  { name: "old2", state: "retired" },
  { name: "off", state: "shutdown" },
  { name: "fix", state: "maintenance" },
];

function setup(options: {
  policy?: Partial<NodeLifecyclePolicy>;
  healthy?: boolean;
  guard?: { ok: boolean; reason?: string };
  reloadGuard?: ReloadDeletionGuard;
} = {}) {
  const cluster = new FakeCluster();
  const registry = new Registry();
  let now = 1_000_000;
  const { leases, ledger } = firstTermLedger(() => now);
  const state: { config: Config; healthy: boolean } = {
    config: testConfig({ machines: MACHINES }),
    healthy: options.healthy ?? true,
  };
  const provider = createBaremetalProvider(() => state);
  const controller = new NodeLifecycleController({
    nodes: cluster.nodes,
    writer: cluster,
    events: cluster.events,
    instances: provider.instancesV2,
    registry,
    ...(options.guard ? { guard: { deletionsAllowed: () => options.guard! } } : {}),
    ...(options.reloadGuard ? { guard: options.reloadGuard } : {}),
    ledger,
  }, {
    now: () => now,
    policy: () => ({
      dryRun: false,
      maxDeletionsPerInterval: 1,
      deletionIntervalMs: 60_000,
      ...options.policy,
    }),
  });
  const metric = async (result: string): Promise<number> => {
    const text = await registry.metrics();
    const match = new RegExp(`keelson_node_deletions_total\\{result="${result}"\\} (\\d+)`).exec(
      text,
    );
    return Number(match?.[1] ?? 0);
  };
  return { cluster, controller, state, metric, leases, advance: (ms: number) => (now += ms) };
}

Deno.test("NodeLifecycleController.monitorNodes deletes a NotReady Node of a retired machine with a DeletingNode event", async () => {
  const { cluster, controller, metric } = setup();
  cluster.addNode(node("old1", "False"));
  await controller.monitorNodes();
  assert.equal(cluster.nodes.get("old1"), undefined);
  assert.equal(cluster.events.withReason("DeletingNode").length, 1);
  assert.equal(await metric("deleted"), 1);
});

Deno.test("NodeLifecycleController.monitorNodes deletes at most max_deletions_per_interval per interval", async () => {
  const { cluster, controller, metric, advance } = setup();
  cluster.addNode(node("old1", "False"));
  cluster.addNode(node("old2", "Unknown" as "False"));
  await controller.monitorNodes();
  assert.equal(cluster.writesOf("delete").length, 1);
  assert.equal(cluster.events.withReason("DeletionRateLimited").length, 1);
  assert.equal(await metric("rate_limited"), 1);
  advance(30_000);
  await controller.monitorNodes();
  assert.equal(cluster.writesOf("delete").length, 1);
  advance(31_000);
  await controller.monitorNodes();
  assert.equal(cluster.writesOf("delete").length, 2);
  assert.equal(cluster.nodes.list().length, 0);
});

Deno.test("NodeLifecycleController: a new leader counts its predecessor's deletions (no fresh window)", async () => {
  const { cluster, controller, state, leases, advance } = setup();
  cluster.addNode(node("old1", "False"));
  cluster.addNode(node("old2", "False"));
  await controller.monitorNodes();
  assert.equal(cluster.writesOf("delete").length, 1);
  // the leader restarts; the new process leads 5 s later, on the same cluster
  let now = 1_000_000 + advance(5_000) - 1_000_000;
  const clock = () => now;
  holdLease(leases, "host-b_2", 1);
  const next = new NodeLifecycleController({
    nodes: cluster.nodes,
    writer: cluster,
    events: cluster.events,
    instances: createBaremetalProvider(() => state).instancesV2,
    registry: new Registry(),
    ledger: termLedger(leases, "host-b_2", clock),
  }, {
    now: clock,
    policy: () => ({ dryRun: false, maxDeletionsPerInterval: 1, deletionIntervalMs: 60_000 }),
  });
  await next.monitorNodes();
  assert.equal(cluster.writesOf("delete").length, 1, "the first deletion still counts");
  assert.equal(cluster.events.withReason("DeletionRateLimited").length, 2);
  now += 60_000;
  await next.monitorNodes();
  assert.equal(cluster.writesOf("delete").length, 2);
});

Deno.test("NodeLifecycleController deletes nothing when the deletion cannot be recorded", async () => {
  const { cluster, controller, leases, metric } = setup();
  cluster.addNode(node("old1", "False"));
  leases.down = true;
  await controller.monitorNodes();
  assert.equal(cluster.writesOf("delete").length, 0);
  const [blocked] = cluster.events.withReason("DeletionBlocked");
  assert.match(blocked?.message ?? "", /cannot be recorded for its rate limit: Cannot read/);
  assert.equal(await metric("blocked"), 1);
});

Deno.test("NodeLifecycleController.monitorNodes deletes nothing while the last reload is rejected", async () => {
  let succeeded = false;
  const guard = new ReloadDeletionGuard({ lastReloadSucceeded: () => succeeded });
  const { cluster, controller } = setup({ healthy: false, reloadGuard: guard });
  cluster.addNode(node("old1", "False"));
  cluster.addNode(node("ghost", "False"));
  await controller.monitorNodes();
  assert.equal(cluster.writes.length, 0);
  assert.match(
    cluster.events.withReason("DeletionBlocked")[0]?.message ?? "",
    /failed validation on its last reload/,
  );
  // fixed file: deletions resume
  succeeded = true;
  await controller.monitorNodes();
  assert.ok(cluster.writes.length > 0);
});

Deno.test("NodeLifecycleController.monitorNodes deletes nothing when the guard blocks, with a DeletionBlocked event", async () => {
  const { cluster, controller, metric } = setup({
    guard: { ok: false, reason: "too many removed" },
  });
  cluster.addNode(node("old1", "False"));
  await controller.monitorNodes();
  assert.equal(cluster.writes.length, 0);
  assert.match(cluster.events.withReason("DeletionBlocked")[0]?.message ?? "", /too many removed/);
  assert.equal(await metric("blocked"), 1);
});

Deno.test("NodeLifecycleController.monitorNodes only records an event in dry-run mode", async () => {
  const { cluster, controller, metric } = setup({ policy: { dryRun: true } });
  cluster.addNode(node("ghost", "False"));
  await controller.monitorNodes();
  assert.equal(cluster.writes.length, 0);
  assert.match(
    cluster.events.withReason("DeletingNodeDryRun")[0]?.message ?? "",
    /Would delete node ghost/,
  );
  assert.equal(await metric("dry_run"), 1);
});

Deno.test("NodeLifecycleController.monitorNodes does not delete a never-initialized Node of an unknown machine", async () => {
  const { cluster, controller } = setup();
  const fresh = node("ghost", undefined, ["node.cloudprovider.kubernetes.io/uninitialized"]);
  delete fresh.spec!.providerID;
  cluster.addNode(fresh);
  await controller.monitorNodes();
  assert.equal(cluster.writes.length, 0);
  assert.equal(cluster.events.withReason("DeletionBlocked").length, 1);
});

Deno.test("NodeLifecycleController.monitorNodes taints a retired machine's Ready Node instead of deleting it", async () => {
  const { cluster, controller } = setup();
  cluster.addNode(node("old1", "True"));
  await controller.monitorNodes();
  assert.deepEqual(cluster.nodes.get("old1")?.spec?.taints, [{
    key: "keelson.io/retired",
    effect: "NoSchedule",
  }]);
  assert.equal(cluster.events.withReason("MachineRetired")[0]?.type, "Warning");
  await controller.monitorNodes();
  assert.equal(cluster.writes.length, 1);
});

Deno.test("NodeLifecycleController.monitorNodes taints shutdown while NotReady and untaints when Ready", async () => {
  const { cluster, controller, state } = setup();
  cluster.addNode(node("off", "False"));
  await controller.monitorNodes();
  assert.deepEqual(cluster.nodes.get("off")?.spec?.taints?.map((t) => t.key), [
    "node.cloudprovider.kubernetes.io/shutdown",
  ]);
  state.config = testConfig({ machines: MACHINES.map((m) => ({ ...m, state: "active" })) });
  await controller.monitorNodes();
  assert.equal(cluster.nodes.get("off")?.spec?.taints?.length, 1, "stays while NotReady");
  cluster.updateNode(
    "off",
    (n) => (n.status = { conditions: [{ type: "Ready", status: "True" }] }),
  );
  await controller.monitorNodes();
  assert.deepEqual(cluster.nodes.get("off")?.spec?.taints, []);
});

Deno.test("NodeLifecycleController.monitorNodes taints maintenance machines and untaints them when active again", async () => {
  const { cluster, controller, state } = setup();
  cluster.addNode(node("fix", "True", ["other"]));
  await controller.monitorNodes();
  assert.deepEqual(cluster.nodes.get("fix")?.spec?.taints?.map((t) => t.key), [
    "other",
    "keelson.io/maintenance",
  ]);
  state.config = testConfig({ machines: MACHINES.map((m) => ({ ...m, state: "active" })) });
  await controller.monitorNodes();
  assert.deepEqual(cluster.nodes.get("fix")?.spec?.taints?.map((t) => t.key), ["other"]);
});

Deno.test("NodeLifecycleController.monitorNodes records DeletingNodeFailed when the DELETE fails", async () => {
  const { cluster, controller, metric } = setup();
  cluster.addNode(node("old1", "False"));
  cluster.failOnce("deleteNode", new KubeApiError("forbidden", { code: 403 }));
  await controller.monitorNodes();
  assert.equal(cluster.events.withReason("DeletingNodeFailed").length, 1);
  assert.equal(await metric("failed"), 1);
});

Deno.test("NodeLifecycleController.monitorNodes leaves Ready Nodes of active machines alone", async () => {
  const { cluster, controller } = setup();
  cluster.addNode(node("a1", "True"));
  cluster.addNode(node("a2", "False"));
  await controller.monitorNodes();
  assert.equal(cluster.writes.length, 0);
  assert.equal(cluster.events.events.length, 0);
});
