import assert from "node:assert/strict";
import type { V1Service } from "@kubernetes/client-node";
import { ProviderRegistry } from "../../../../src/cloud/registry.ts";
import type { Config } from "../../../../src/config/types.ts";
import { registerBuiltInProviders } from "../../../../providers/mod.ts";
import { FakeCluster } from "../../_fakes/fake_cluster.ts";
import { testConfig } from "../../_fakes/test_inventory.ts";

function inventory(pool: string): Config {
  return testConfig({
    keepalived: { interface: "eth0" },
    pools: [{ name: "lan", addresses: [pool] }],
    machines: [
      { name: "cp-1", role: "control-plane", internal_ips: ["10.250.0.11"] },
      { name: "w-1", role: "worker", internal_ips: ["10.250.0.21"] },
    ],
  });
}

function web(ip?: string): V1Service {
  return {
    metadata: { name: "web", namespace: "shop", uid: "uid-web", creationTimestamp: new Date(0) },
    spec: { type: "LoadBalancer", ports: [{ port: 80, protocol: "TCP" }] },
    status: { loadBalancer: { ingress: ip ? [{ ip, ipMode: "VIP" }] : [] } },
  };
}

function provider(config: Config) {
  const registry = new ProviderRegistry();
  registerBuiltInProviders(registry);
  return registry.create(config);
}

Deno.test("the bare-metal registry entry exports the registry entry and the inventory-only provider, none of its internals", async () => {
  const entry = await import("../../../../providers/baremetal/mod.ts");
  assert.deepEqual(Object.keys(entry).sort(), [
    "BAREMETAL_PROVIDER_NAME",
    "createBaremetalProvider",
    "registerBaremetal",
  ]);
  const builtIn = await import("../../../../providers/mod.ts");
  assert.deepEqual(Object.keys(builtIn), ["registerBuiltInProviders"]);
  const registry = new ProviderRegistry();
  registerBuiltInProviders(registry);
  assert.deepEqual(registry.names(), ["baremetal"]);
});

Deno.test("ProviderRegistry.recordedPool(): the pool the bare-metal provider recorded, read without building it", () => {
  const registry = new ProviderRegistry();
  registerBuiltInProviders(registry);
  const recorded = web("192.0.2.2");
  recorded.metadata!.annotations = { "keelson.io/allocated-from-pool": "lan" };
  assert.equal(registry.recordedPool(recorded), "lan");
  assert.equal(registry.recordedPool(web("192.0.2.2")), undefined);
  // a pool asked for is no record of where the address came from
  const asked = web();
  asked.metadata!.annotations = { "keelson.io/address-pool": "lan" };
  assert.equal(registry.recordedPool(asked), undefined);
});

Deno.test("validateReload: a reload taking a held address from every pool is refused once the provider sees the Services", () => {
  const config = inventory("192.0.2.0/29");
  const p = provider(config);
  const shrunk = inventory("192.0.2.8/29");
  assert.deepEqual(p.validateReload!(shrunk, config, "/etc/keelson/keelson.toml"), []);
  const cluster = new FakeCluster();
  cluster.addService(web("192.0.2.2"));
  const stop = new AbortController();
  p.connect!({ nodes: cluster.nodes, services: cluster.services, signal: stop.signal });
  try {
    const issues = p.validateReload!(shrunk, config, "/etc/keelson/keelson.toml");
    assert.equal(issues.length, 1);
    assert.equal(issues[0]!.file, "/etc/keelson/keelson.toml");
    assert.match(
      issues[0]!.message,
      /would strand 1 address .*192\.0\.2\.2 \(service "shop\/web"\)/,
    );
    assert.deepEqual(p.validateReload!(inventory("192.0.2.0/28"), config, "f"), []);
  } finally {
    stop.abort();
  }
});

Deno.test("renderHostFile renders each announcer's file offline and names the announcers it has", async () => {
  const p = provider(inventory("192.0.2.0/29"));
  const snapshot = { file: "state.yaml", services: [web()], nodes: [], endpointSlices: [] };
  const keepalived = await p.renderHostFile!({
    announcer: "keepalived",
    host: "cp-1",
    configFile: "keelson.toml",
    snapshot,
  });
  assert.ok("text" in keepalived, JSON.stringify(keepalived));
  // the pending Service gets the address the plan gives it
  assert.match(keepalived.text, /192\.0\.2\.1\b/);
  const worker = await p.renderHostFile!({
    announcer: "keepalived",
    host: "w-1",
    configFile: "keelson.toml",
  });
  assert.ok("error" in worker && !worker.usage);
  assert.match(worker.error, /its role is "worker"/);
  const badUser = await p.renderHostFile!({
    announcer: "keepalived",
    host: "cp-1",
    configFile: "keelson.toml",
    runAsUser: "Not A User",
  });
  assert.deepEqual(badUser, { error: '--fifo-user "Not A User" is not a user name', usage: true });
  const bird = await p.renderHostFile!({ announcer: "bird", host: "cp-1", configFile: "k.toml" });
  assert.deepEqual(bird, {
    error: "Cannot render BIRD: k.toml has no [bgp] table, so no host runs BIRD",
  });
  const other = await p.renderHostFile!({ announcer: "gobgp", host: "cp-1", configFile: "k" });
  assert.ok("error" in other && other.usage);
  assert.match(other.error, /no announcer "gobgp" \(announcers: keepalived, bird\)/);
});

Deno.test("planCluster plans machines and addresses from a snapshot; pod routes only with a pod_cidrs peer", async () => {
  const p = provider(inventory("192.0.2.0/29"));
  const node = { metadata: { name: "w-1" }, status: { addresses: [] } };
  const plan = p.planCluster!({ nodes: [node], services: [web()] });
  assert.deepEqual(
    plan.allocations.services.map((s) => [s.serviceKey, s.outcome, s.ips]),
    [["shop/web", "allocated", ["192.0.2.1"]]],
  );
  assert.equal(plan.podRoutes, undefined);
  assert.equal(await plan.instances.instanceExists(node), true);
});
