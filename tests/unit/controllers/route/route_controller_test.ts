import assert from "node:assert/strict";
import type { V1Node } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import type { Route, Routes } from "../../../../src/cloud/provider.ts";
import { RouteController } from "../../../../src/controllers/route/route_controller.ts";
import { reset } from "@logtape/logtape";
import { FakeCluster } from "../../_fakes/fake_cluster.ts";
import { captureLogs } from "../../_fakes/captured_logs.ts";
import { pollUntil } from "../../../_support/poll.ts";

function node(name: string, cidrs: string[], ip: string): V1Node {
  return {
    metadata: { name, uid: `uid-${name}` },
    spec: { podCIDRs: cidrs },
    status: { addresses: [{ type: "InternalIP", address: ip }] },
  };
}

/** Routes that "exist" once created, unless the node is in `failing`. */
class FakeRoutes implements Routes {
  routes: Route[] = [];
  failing = new Set<string>();
  created: string[] = [];
  deleted: string[] = [];
  listRoutes(): Promise<Route[]> {
    return Promise.resolve(this.routes.map((r) => ({ ...r })));
  }
  createRoute(_c: string, _hint: string, route: Route): Promise<void> {
    this.created.push(`${route.targetNode} ${route.destinationCIDR}`);
    if (this.failing.has(route.targetNode)) {
      return Promise.reject(new Error('no Established session to "tor-a"'));
    }
    this.routes.push({ ...route, name: route.targetNode });
    return Promise.resolve();
  }
  deleteRoute(_c: string, route: Route): Promise<void> {
    this.deleted.push(`${route.targetNode} ${route.destinationCIDR}`);
    this.routes = this.routes.filter((r) =>
      r !== route && r.destinationCIDR !== route.destinationCIDR
    );
    return Promise.resolve();
  }
}

function setup() {
  const cluster = new FakeCluster();
  const routes = new FakeRoutes();
  const controller = new RouteController({
    nodes: cluster.nodes,
    routes,
    writer: cluster,
    events: cluster.events,
    registry: new Registry(),
  }, { clusterName: "kubernetes" });
  return { cluster, routes, controller };
}

function condition(cluster: FakeCluster, name: string) {
  return cluster.nodes.get(name)?.status?.conditions?.find((c) => c.type === "NetworkUnavailable");
}

Deno.test("route controller creates routes and sets NetworkUnavailable=False/RouteCreated", async () => {
  const { cluster, routes, controller } = setup();
  cluster.addNode(node("w-1", ["10.244.1.0/24"], "10.0.0.21"));
  cluster.addNode({ metadata: { name: "no-cidr" }, spec: {}, status: {} });
  await controller.reconcile();
  assert.deepEqual(routes.created, ["w-1 10.244.1.0/24"]);
  const c = condition(cluster, "w-1");
  assert.equal(c?.status, "False");
  assert.equal(c?.reason, "RouteCreated");
  assert.equal(c?.message, "RouteController created a route");
  assert.equal(condition(cluster, "no-cidr"), undefined);
  // a second pass writes nothing: same status and reason
  const writes = cluster.writesOf("patchStatus").length;
  await controller.reconcile();
  assert.equal(cluster.writesOf("patchStatus").length, writes);
  assert.deepEqual(routes.created, ["w-1 10.244.1.0/24"]);
});

Deno.test("a route that cannot be created gives True/NoRouteCreated and a FailedToCreateRoute event", async () => {
  const { cluster, routes, controller } = setup();
  routes.failing.add("w-2");
  cluster.addNode(node("w-2", ["10.244.2.0/24"], "10.0.7.22"));
  await controller.reconcile();
  assert.equal(condition(cluster, "w-2")?.status, "True");
  assert.equal(condition(cluster, "w-2")?.reason, "NoRouteCreated");
  const events = cluster.events.withReason("FailedToCreateRoute");
  assert.equal(events.length, 1);
  assert.match(events[0]!.message ?? "", /10\.244\.2\.0\/24.*tor-a/);
  // once it works, the condition flips
  routes.failing.clear();
  await controller.reconcile();
  assert.equal(condition(cluster, "w-2")?.reason, "RouteCreated");
});

Deno.test("routes of deleted Nodes and of CIDRs a Node no longer holds are deleted", async () => {
  const { cluster, routes, controller } = setup();
  cluster.addNode(node("w-1", ["10.244.1.0/24"], "10.0.0.21"));
  routes.routes.push(
    { name: "x", targetNode: "gone", destinationCIDR: "10.244.9.0/24" },
    { name: "y", targetNode: "w-1", destinationCIDR: "10.244.8.0/24" },
  );
  await controller.reconcile();
  assert.deepEqual(routes.deleted.sort(), ["gone 10.244.9.0/24", "w-1 10.244.8.0/24"]);
  assert.deepEqual(routes.routes.map((r) => r.destinationCIDR), ["10.244.1.0/24"]);
});

Deno.test("the controller reconciles soon after a Node gets a pod CIDR and stops on abort", async () => {
  const { cluster, routes, controller } = setup();
  const stop = new AbortController();
  const running = controller.run(stop.signal);
  cluster.addNode(node("w-3", [], "10.0.0.23"));
  cluster.updateNode("w-3", (n) => n.spec = { podCIDRs: ["10.244.3.0/24"] });
  await pollUntil(
    "RouteCreated on w-3",
    () => condition(cluster, "w-3")?.reason === "RouteCreated",
  );
  assert.equal(condition(cluster, "w-3")?.reason, "RouteCreated");
  assert.deepEqual(routes.created, ["w-3 10.244.3.0/24"]);
  stop.abort();
  await running;
});

Deno.test("a failure that repeats every pass is logged once, counted every time, and again after a success", async () => {
  const records = await captureLogs();
  const cluster = new FakeCluster();
  const routes = new FakeRoutes();
  let failing = true;
  routes.listRoutes = () =>
    failing ? Promise.reject(new Error("[bgp] was removed")) : Promise.resolve([]);
  const registry = new Registry();
  const controller = new RouteController({
    nodes: cluster.nodes,
    routes,
    writer: cluster,
    events: cluster.events,
    registry,
  }, { clusterName: "kubernetes", periodMs: 20, debounceMs: 5 });
  const errors = () => records.filter((r) => r.level === "error");
  const passes = async (result: string) =>
    (await registry.getSingleMetric("route_controller_route_sync_total")?.get())?.values
      .find((v) => v.labels.result === result)?.value ?? 0;
  const stop = new AbortController();
  const running = controller.run(stop.signal);
  try {
    await pollUntil("four failed passes", async () => await passes("error") >= 4);
    assert.equal(errors().length, 1, "the same cause is said once");
    failing = false;
    await pollUntil("a successful pass", async () => await passes("success") >= 1);
    failing = true;
    await pollUntil("the cause said again", () => errors().length === 2);
  } finally {
    stop.abort();
    await running;
    await reset();
  }
});
