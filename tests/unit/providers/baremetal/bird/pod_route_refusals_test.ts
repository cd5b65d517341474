/**
 * The run path of pod routes with hostile Nodes: the route controller over this host's BIRD
 * routes and announcer (the file captured, sessions up). A Node refused by `decidePodRoutes` gets
 * a `FailedToCreateRoute` Warning naming why, and nothing else changes: the other Nodes' routes
 * stay as they were. Fails before: the intruder's next hop replaced w-1's in the file.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { V1Node, V1Service } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { BirdAnnouncer } from "../../../../../providers/baremetal/bird/announcer.ts";
import type { BirdApplyResult } from "../../../../../providers/baremetal/bird/config_applier.ts";
import { BirdRoutes } from "../../../../../providers/baremetal/bird/routes.ts";
import { RouteController } from "../../../../../src/controllers/route/route_controller.ts";
import { reset } from "@logtape/logtape";
import { captureLogs } from "../../../_fakes/captured_logs.ts";
import { FakeCluster, FakeInformer } from "../../../_fakes/fake_cluster.ts";
import { bgpConfig } from "./_inventory.ts";

function node(name: string, cidrs: string[], ips: string[]): V1Node {
  return {
    metadata: { name, uid: `uid-${name}` },
    spec: { podCIDRs: cidrs },
    status: { addresses: ips.map((address) => ({ type: "InternalIP", address })) },
  };
}

async function setup() {
  const config = await bgpConfig();
  const texts: string[] = [];
  const cluster = new FakeCluster();
  const announcer = new BirdAnnouncer({
    config: () => config,
    configFile: config.bgp!.config_file,
    host: "cp-1",
    applier: {
      apply(text: string): Promise<BirdApplyResult> {
        texts.push(text);
        return Promise.resolve({ result: "success", configured: true, message: "captured" });
      },
    },
    readPasswords: () => Promise.resolve(new Map()),
  });
  await announcer.setClusterSource({
    services: new FakeInformer<V1Service>(),
    nodes: cluster.nodes,
    hasSynced: () => true,
  });
  const routes = new BirdRoutes({
    announcer,
    sessions: { established: () => true, poll: () => Promise.resolve() },
    waitMs: 300,
    config: () => config,
  });
  const controller = new RouteController({
    nodes: cluster.nodes,
    routes,
    writer: cluster,
    events: cluster.events,
    registry: new Registry(),
  }, { clusterName: "kubernetes" });
  const podLines = () =>
    (texts.at(-1) ?? "").split("\n").filter((l) => l.includes("bgp_next_hop")).map((l) => l.trim());
  const failed = (name: string) =>
    cluster.events.withReason("FailedToCreateRoute").filter((e) => e.object === `Node/${name}`)
      .map((e) => e.message);
  const condition = (name: string) =>
    cluster.nodes.get(name)?.status?.conditions?.find((c) => c.type === "NetworkUnavailable")
      ?.reason;
  return { cluster, controller, podLines, failed, condition };
}

Deno.test("route controller over BIRD: refused Nodes get a FailedToCreateRoute Warning and change no other route", async () => {
  const { cluster, controller, podLines, failed, condition } = await setup();
  cluster.addNode(node("w-1", ["10.244.1.0/24"], ["10.0.0.21"]));
  await controller.reconcile();
  const before = podLines();
  assert.deepEqual(before, ["route 10.244.1.0/24 blackhole { bgp_next_hop = 10.0.0.21; };"]);
  assert.equal(condition("w-1"), "RouteCreated");

  // a Node in no inventory claiming w-1's CIDR, with a lower next hop (it won before)
  cluster.addNode(node("intruder", ["10.244.1.0/24"], ["10.0.0.2"]));
  // a Node of the inventory whose pod CIDR is the whole cluster_cidr
  cluster.addNode(node("cp-2", ["10.244.0.0/16"], ["10.0.0.12"]));
  // two Nodes of the inventory claiming one CIDR
  cluster.addNode(node("w-b", ["10.244.3.0/24"], ["10.0.1.21"]));
  cluster.addNode(node("far", ["10.244.3.0/25"], ["10.0.7.21"]));
  // a Node of the inventory reporting the router's, a VIP's and a multicast address
  cluster.addNode(node("cp-3", ["10.244.4.0/24"], ["10.0.0.1", "10.0.0.10", "224.0.0.5"]));
  await controller.reconcile();

  assert.deepEqual(podLines(), [
    // cp-3's own address (its machine's), not one it reports (protocol keelson_pods4_any)
    "route 10.244.4.0/24 blackhole { bgp_next_hop = 10.0.1.13; };",
    ...before,
  ], "w-1's route changed, or a refused one was written");
  assert.equal(condition("w-1"), "RouteCreated");
  assert.deepEqual(failed("w-1"), []);
  assert.match(failed("intruder")[0] ?? "", /its machine is not in the inventory/);
  assert.match(failed("cp-2")[0] ?? "", /whole of \[cluster\] cluster_cidr "10\.244\.0\.0\/16"/);
  assert.match(failed("w-b")[0] ?? "", /overlaps 10\.244\.3\.0\/25 of Node "far"/);
  assert.match(failed("far")[0] ?? "", /overlaps 10\.244\.3\.0\/24 of Node "w-b"/);
  for (const name of ["intruder", "cp-2", "w-b", "far"]) {
    assert.equal(condition(name), "NoRouteCreated", name);
  }
  // tor-a's subnet (10.0.0.0/24) does not hold cp-3's address: cp-1 exports it to no peer
  assert.match(failed("cp-3")[0] ?? "", /no \[\[bgp\.peers\]\] entry with pod_cidrs/);
});

Deno.test("the announcer logs a refused pod CIDR once while it lasts, not at every render", async () => {
  const records = await captureLogs();
  try {
    const { cluster, controller } = await setup();
    cluster.addNode(node("intruder", ["10.244.1.0/24"], ["10.0.0.2"]));
    await controller.reconcile();
    await controller.reconcile();
    const said = () =>
      records.filter((r) => r.level === "warning" && /intruder/.test(JSON.stringify(r.properties)))
        .length;
    assert.equal(said(), 1);
    cluster.updateNode("intruder", (n) => n.spec = { podCIDRs: ["10.244.2.0/24"] });
    await controller.reconcile();
    assert.equal(said(), 2, "a changed refusal is said again");
  } finally {
    await reset();
  }
});

Deno.test("a leader that runs no BIRD (routes judged from heartbeats) refuses a route with the decision's reason, kept current by Node events", async () => {
  const { ProviderRegistry } = await import("../../../../../src/cloud/registry.ts");
  const { registerBaremetal } = await import("../../../../../providers/baremetal/mod.ts");
  const config = await bgpConfig();
  const registry = new ProviderRegistry();
  registerBaremetal(registry);
  const provider = registry.create(config);
  const nodes = new FakeInformer<V1Node>();
  const services = new FakeInformer<V1Service>();
  nodes.upsert(node("intruder", ["10.244.1.0/24"], ["10.0.0.2"]));
  nodes.upsert(node("w-1", ["10.244.2.0/24"], ["10.0.0.21"]));
  nodes.upsert(node("w-b", ["10.244.2.0/24"], ["10.0.1.21"]));
  const stop = new AbortController();
  provider.connect!({ nodes, services, signal: stop.signal });
  await provider.initialize!({
    nodes,
    services,
    heartbeats: { list: () => [] },
    signal: stop.signal,
  });
  const create = (targetNode: string, destinationCIDR: string) =>
    provider.routes!.createRoute("kubernetes", "uid", { name: "", targetNode, destinationCIDR });
  try {
    await assert.rejects(
      create("intruder", "10.244.1.0/24"),
      /Not announcing 10\.244\.1\.0\/24 for Node "intruder": its machine is not in the inventory/,
    );
    await assert.rejects(
      create("w-1", "10.244.2.0/24"),
      /overlaps 10\.244\.2\.0\/24 of Node "w-b"/,
    );
    // w-b gives the prefix up: w-1's route is no longer refused, only not yet reported
    nodes.upsert(node("w-b", ["10.244.3.0/24"], ["10.0.1.21"]));
    await assert.rejects(create("w-1", "10.244.2.0/24"), /No host reports 10\.244\.2\.0\/24/);
  } finally {
    stop.abort();
  }
});
