/**
 * The service controller wired to the real bare-metal LoadBalancer (allocator rebuilt from the
 * API) on the fake cluster: what the integration tests check against a real API server, at unit
 * speed.
 */
import assert from "node:assert/strict";
import type { V1Service } from "@kubernetes/client-node";
import type { Config } from "../../../../src/config/types.ts";
import { handlesService } from "../../../../src/cloud/load_balancer_class.ts";
import { createLoadBalancer } from "../../../../providers/baremetal/load_balancer.ts";
import { testConfig } from "../../_fakes/test_inventory.ts";
import {
  ingressOf,
  lbService,
  type Running,
  ServiceCluster,
  settle,
  startController,
} from "./_harness.ts";

const POOL = ["10.20.0.100", "10.20.0.101", "10.20.0.102"];

function inventory(): Config {
  return testConfig({
    machines: [{ name: "cp-1", role: "control-plane", internal_ips: ["10.0.0.11"] }],
    pools: [{ name: "public", addresses: ["10.20.0.100-10.20.0.102"] }],
  });
}

function newCluster(): ServiceCluster {
  const cluster = new ServiceCluster();
  cluster.addNode({ metadata: { name: "cp-1" }, spec: { providerID: "baremetal://cp-1" } });
  return cluster;
}

async function startReal(cluster: ServiceCluster, config = inventory()): Promise<Running> {
  const loadBalancer = createLoadBalancer({
    config: () => config,
    services: cluster.services,
    hasSynced: () => cluster.services.hasSynced(),
  });
  return await startController(cluster, loadBalancer, {
    handles: (service) => handlesService(config, service),
  });
}

function allIngress(cluster: ServiceCluster): string[] {
  return cluster.services.list().flatMap((service) =>
    (service.status?.loadBalancer?.ingress ?? []).map((entry) => entry.ip ?? "")
  );
}

function withAnnotation(service: V1Service, key: string, value: string): V1Service {
  service.metadata!.annotations = { ...service.metadata!.annotations, [key]: value };
  return service;
}

Deno.test("ServiceController with the bare-metal LoadBalancer gives each Service its own pool address and records the pool", async () => {
  const cluster = newCluster();
  cluster.addService(lbService("a"));
  cluster.addService(lbService("b"));
  const running = await startReal(cluster);
  try {
    const [a] = ingressOf(cluster, "default/a");
    const [b] = ingressOf(cluster, "default/b");
    assert.ok(a && POOL.includes(a) && b && POOL.includes(b) && a !== b, `${a} ${b}`);
    const service = cluster.services.get("default/a")!;
    assert.equal(service.status?.loadBalancer?.ingress?.[0]?.ipMode, "VIP");
    assert.equal(service.metadata?.annotations?.["keelson.io/allocated-from-pool"], "public");
  } finally {
    await running.stop();
  }
});

Deno.test("ServiceController with the bare-metal LoadBalancer honours spec.loadBalancerIP and the request annotations", async () => {
  const cluster = newCluster();
  cluster.addService(lbService("spec", { ip: "10.20.0.102" }));
  cluster.addService(
    withAnnotation(lbService("keelson"), "keelson.io/load-balancer-ips", "10.20.0.101"),
  );
  cluster.addService(
    withAnnotation(lbService("metallb"), "metallb.io/loadBalancerIPs", "10.20.0.100"),
  );
  const running = await startReal(cluster);
  try {
    assert.deepEqual(ingressOf(cluster, "default/spec"), ["10.20.0.102"]);
    assert.deepEqual(ingressOf(cluster, "default/keelson"), ["10.20.0.101"]);
    assert.deepEqual(ingressOf(cluster, "default/metallb"), ["10.20.0.100"]);
  } finally {
    await running.stop();
  }
});

Deno.test("ServiceController with the bare-metal LoadBalancer keeps a Service asking for a taken address pending with a Warning until the holder is deleted", async () => {
  const cluster = newCluster();
  cluster.addService(lbService("holder", { ip: "10.20.0.101" }));
  const running = await startReal(cluster);
  try {
    cluster.addService(lbService("wanting", { ip: "10.20.0.101" }));
    await settle();
    assert.deepEqual(ingressOf(cluster, "default/wanting"), [], "never silently another address");
    const warning = running.events.withReason("AllocationFailed")
      .find((event) => event.object === "Service/default/wanting");
    assert.equal(warning?.type, "Warning");
    assert.match(warning?.message ?? "", /AddressInUse/);
    assert.match(warning?.message ?? "", /10\.20\.0\.101/);
    cluster.deleteService("default/holder");
    await settle();
    assert.equal(cluster.services.get("default/holder"), undefined);
    assert.deepEqual(ingressOf(cluster, "default/wanting"), ["10.20.0.101"]);
  } finally {
    await running.stop();
  }
});

Deno.test("ServiceController with the bare-metal LoadBalancer warns and keeps pending a request outside every pool", async () => {
  const cluster = newCluster();
  cluster.addService(lbService("outside", { ip: "192.0.2.7" }));
  const running = await startReal(cluster);
  try {
    assert.deepEqual(ingressOf(cluster, "default/outside"), []);
    assert.equal(running.events.withReason("AllocationFailed").length, 1);
    assert.equal(running.events.withReason("SyncLoadBalancerFailed").length, 1);
  } finally {
    await running.stop();
  }
});

Deno.test("ServiceController with the bare-metal LoadBalancer returns a deleted Service's address to the pool for a Service pending on exhaustion", async () => {
  const cluster = newCluster();
  for (const name of ["a", "b", "c"]) cluster.addService(lbService(name));
  const running = await startReal(cluster);
  try {
    cluster.addService(lbService("d"));
    await settle();
    assert.deepEqual(ingressOf(cluster, "default/d"), []);
    const freed = ingressOf(cluster, "default/b")[0];
    cluster.deleteService("default/b");
    await settle();
    assert.deepEqual(ingressOf(cluster, "default/d"), [freed]);
    assert.equal(new Set(allIngress(cluster)).size, 3);
  } finally {
    await running.stop();
  }
});

Deno.test("ServiceController with the bare-metal LoadBalancer gives no address twice across a restart with Services pending", async () => {
  const cluster = newCluster();
  for (const name of ["a", "b", "c", "d"]) cluster.addService(lbService(name));
  const first = await startReal(cluster);
  await first.stop();
  const before = allIngress(cluster);
  assert.equal(before.length, 3);
  const pending = ["a", "b", "c", "d"].find((name) =>
    ingressOf(cluster, `default/${name}`).length === 0
  )!;
  // a new leader: new provider, new controller, same API state; one more Service meanwhile
  cluster.addService(lbService("e"));
  const second = await startReal(cluster);
  try {
    assert.deepEqual(allIngress(cluster).sort(), before.sort());
    assert.deepEqual(ingressOf(cluster, `default/${pending}`), []);
    assert.deepEqual(ingressOf(cluster, "default/e"), []);
    const holder = ["a", "b", "c", "d"].find((name) => name !== pending)!;
    const freed = ingressOf(cluster, `default/${holder}`)[0];
    cluster.deleteService(`default/${holder}`);
    await settle();
    const after = allIngress(cluster);
    assert.equal(new Set(after).size, after.length, `duplicate in ${after.join(",")}`);
    assert.ok(after.includes(freed!));
  } finally {
    await second.stop();
  }
});

Deno.test("ServiceController with the bare-metal LoadBalancer says the allocation failure once, and tells a pending Service nothing about new hosts", async () => {
  const cluster = newCluster();
  cluster.addService(lbService("legacy", { ip: "192.0.2.7" }));
  cluster.addService(lbService("web"));
  const running = await startReal(cluster);
  try {
    const [failed] = running.events.withReason("AllocationFailed");
    // before: 'Cannot allocate an address for service "default/legacy" (AddressNotInPool):
    // Cannot allocate an address for service "default/legacy": ...'
    assert.match(
      failed?.message ?? "",
      /^Cannot allocate an address for service "default\/legacy" \(AddressNotInPool\): /,
    );
    assert.equal((failed?.message ?? "").split("Cannot allocate an address").length - 1, 1);
    // a new eligible Node: the served Service is updated, the pending one is not told anything
    cluster.addNode({ metadata: { name: "w-2" }, spec: { providerID: "baremetal://w-2" } });
    await settle();
    const updated = running.events.withReason("UpdatedLoadBalancer").map((event) => event.object);
    assert.deepEqual(updated, ["Service/default/web"]);
    assert.deepEqual(ingressOf(cluster, "default/legacy"), []);
  } finally {
    await running.stop();
  }
});
