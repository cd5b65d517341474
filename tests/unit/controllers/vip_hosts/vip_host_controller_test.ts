import assert from "node:assert/strict";
import type { V1Lease, V1Service } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { VipHostController } from "../../../../src/controllers/vip_hosts/vip_host_controller.ts";
import { FakeEventRecorder, FakeInformer } from "../../_fakes/fake_cluster.ts";
import { heartbeatLease, lbService, NOW, report } from "../../status/_leases.ts";

function setup(inventory?: Set<string>) {
  const services = new FakeInformer<V1Service>();
  const leases = new FakeInformer<V1Lease>();
  const events = new FakeEventRecorder();
  const registry = new Registry();
  let now = NOW;
  const controller = new VipHostController({
    services,
    leases,
    events,
    handles: (s) => s.metadata?.name !== "other-class",
    registry,
    inventory: () => inventory,
    now: () => now,
  }, { graceMs: 3000 });
  return { services, leases, events, registry, controller, advance: (ms: number) => now += ms };
}

Deno.test("VipHostController: Events on the Service and the serving-hosts gauge follow the heartbeats", async () => {
  const { services, leases, events, registry, controller, advance } = setup();
  services.upsert(lbService("shop", "web", ["10.0.0.150"]));
  services.upsert(lbService("shop", "other-class", ["10.0.0.160"]));
  leases.upsert(heartbeatLease("cp-1", report("cp-1", ["10.0.0.150"])));
  leases.upsert(heartbeatLease("cp-2", report("cp-2", [])));
  const first = controller.evaluate();
  assert.deepEqual(first.map((o) => [o.vip, o.hosts]), [["10.0.0.150", ["cp-1"]]]);
  assert.deepEqual(events.events, []);
  assert.match(
    await registry.metrics(),
    /keelson_vip_serving_hosts\{vip="10.0.0.150",service="shop\/web"\} 1/,
  );

  leases.upsert(heartbeatLease("cp-1", report("cp-1", [])));
  leases.upsert(heartbeatLease("cp-2", report("cp-2", ["10.0.0.150"])));
  controller.evaluate();
  assert.deepEqual(events.events, [{
    object: "Service/shop/web",
    type: "Normal",
    reason: "VIPHostChanged",
    message: "VIP 10.0.0.150 now served by cp-2",
  }]);
  assert.match(
    await registry.metrics(),
    /keelson_vip_host_changes_total\{vip="10.0.0.150",service="shop\/web"\} 1/,
  );

  // split brain, reported after the grace period
  leases.upsert(heartbeatLease("cp-1", report("cp-1", ["10.0.0.150"])));
  controller.evaluate();
  assert.match(
    await registry.metrics(),
    /keelson_vip_serving_hosts\{vip="10.0.0.150",service="shop\/web"\} 2/,
  );
  assert.equal(events.withReason("VIPSplitBrain").length, 0);
  advance(3000);
  controller.evaluate();
  assert.equal(events.withReason("VIPSplitBrain").length, 1);
  assert.equal(events.withReason("VIPSplitBrain")[0]!.type, "Warning");
  assert.match(
    await registry.metrics(),
    /keelson_vip_warnings_total\{vip="10.0.0.150",service="shop\/web",reason="VIPSplitBrain"\} 1/,
  );
});

Deno.test("VipHostController: a VIP whose only host went silent is unknown, one nobody lists is not served", async () => {
  const { services, leases, events, registry, controller, advance } = setup();
  services.upsert(lbService("shop", "web", ["10.0.0.150"]));
  services.upsert(lbService("shop", "api", ["10.0.0.151"]));
  leases.upsert(heartbeatLease("cp-1", report("cp-1", ["10.0.0.150"], { all: ["10.0.0.150"] })));
  leases.upsert(heartbeatLease("cp-2", report("cp-2", [], { all: ["10.0.0.150", "10.0.0.151"] })));
  controller.evaluate();
  advance(16_000); // past cp-1's 15 s lease; cp-2 keeps renewing
  leases.upsert(
    heartbeatLease("cp-2", report("cp-2", [], { all: ["10.0.0.150", "10.0.0.151"] }), -16_000),
  );
  const seen = controller.evaluate();
  assert.deepEqual(seen.map((o) => [o.vip, o.hosts, o.lastSeenOn]), [
    ["10.0.0.150", [], ["cp-1"]],
    ["10.0.0.151", [], []],
  ]);
  assert.match(await registry.metrics(), /keelson_host_heartbeat_age_seconds\{host="cp-1"\} 17/);
  advance(3000);
  leases.upsert(
    heartbeatLease("cp-2", report("cp-2", [], { all: ["10.0.0.150", "10.0.0.151"] }), -19_000),
  );
  controller.evaluate();
  // unknown is no Warning (the missing heartbeat is its own alert); nobody at all is
  assert.deepEqual(events.events.map((e) => [e.object, e.reason]), [
    ["Service/shop/api", "VIPNotServed"],
  ]);
});

Deno.test("VipHostController.run() evaluates on informer changes and stops on abort", async () => {
  const { services, leases, events, controller } = setup();
  services.upsert(lbService("shop", "web", ["10.0.0.150"]));
  leases.upsert(heartbeatLease("cp-1", report("cp-1", ["10.0.0.150"])));
  const stop = new AbortController();
  const running = controller.run(stop.signal);
  await new Promise((r) => setTimeout(r, 50));
  leases.upsert(heartbeatLease("cp-1", report("cp-1", [])));
  leases.upsert(heartbeatLease("cp-2", report("cp-2", ["10.0.0.150"])));
  for (let i = 0; i < 200 && events.events.length === 0; i++) {
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.equal(events.events[0]?.message, "VIP 10.0.0.150 now served by cp-2");
  stop.abort();
  await running;
});

Deno.test("VipHostController: no Warning while no host runs keepalived under Keelson", () => {
  const { services, leases, events, controller, advance } = setup();
  services.upsert(lbService("shop", "web", ["10.0.0.150"]));
  leases.upsert(heartbeatLease("cp-1", report("cp-1", [], { all: [] })));
  controller.evaluate();
  advance(5000);
  leases.upsert(heartbeatLease("cp-1", report("cp-1", [], { all: [] }), 0));
  assert.deepEqual(controller.evaluate(), []);
  assert.deepEqual(events.events, []);
});

Deno.test("VipHostController: a VIP announced over BGP by several hosts is ECMP, not split brain", async () => {
  const { services, leases, events, registry, controller, advance } = setup();
  services.upsert(lbService("shop", "web", ["10.0.0.150"]));
  services.upsert(lbService("shop", "bgp", ["10.0.30.10"], "bgp"));
  const bgp = [{ peer: "tor-a", established: true, routes: ["10.0.30.10/32"] }];
  leases.upsert(heartbeatLease("cp-1", { ...report("cp-1", ["10.0.0.150"]), bgp }));
  leases.upsert(heartbeatLease("cp-2", { ...report("cp-2", []), bgp }));
  controller.evaluate();
  advance(5000);
  const observed = controller.evaluate();
  assert.deepEqual(observed.map((o) => o.vip), ["10.0.0.150"]);
  assert.deepEqual(events.events.filter((e) => e.type === "Warning"), []);
  assert.match(
    await registry.metrics(),
    /keelson_vip_serving_hosts\{vip="10.0.30.10",service="shop\/bgp"\} 2/,
  );
});

Deno.test("VipHostController: a retired host's heartbeat has no age series, no unknown VIP, no Warning; the retired gauge names it", async () => {
  const { services, leases, events, registry, controller, advance } = setup(new Set(["cp-1"]));
  services.upsert(lbService("shop", "web", ["10.0.0.150"]));
  leases.upsert(heartbeatLease("cp-1", report("cp-1", ["10.0.0.150"], { all: ["10.0.0.150"] })));
  // removed from the inventory and powered off days ago: its Lease stayed, still listing the VIP
  leases.upsert(
    heartbeatLease("cp-9", report("cp-9", ["10.0.0.150"], { all: ["10.0.0.150"] }), 86_400_000),
  );
  const seen = controller.evaluate();
  assert.deepEqual(seen.map((o) => [o.vip, o.hosts, o.lastSeenOn]), [["10.0.0.150", ["cp-1"], []]]);
  const metrics = await registry.metrics();
  assert.match(metrics, /keelson_host_heartbeat_age_seconds\{host="cp-1"\} 1\n/);
  assert.doesNotMatch(metrics, /keelson_host_heartbeat_age_seconds\{host="cp-9"\}/);
  assert.match(metrics, /keelson_host_heartbeat_retired\{host="cp-9"\} 1\n/);
  assert.doesNotMatch(metrics, /keelson_host_heartbeat_retired\{host="cp-1"\}/);
  advance(5000);
  leases.upsert(
    heartbeatLease("cp-1", report("cp-1", ["10.0.0.150"], { all: ["10.0.0.150"] }), -5000),
  );
  controller.evaluate();
  assert.deepEqual(events.events, []);

  // the Lease deleted by hand: the retired series goes with it
  leases.remove("kube-system/keelson-host-cp-9");
  controller.evaluate();
  assert.doesNotMatch(await registry.metrics(), /keelson_host_heartbeat_retired\{/);
});

Deno.test("VipHostController: without an inventory (or for a host of it) a silent heartbeat keeps its age series", async () => {
  for (const inventory of [undefined, new Set(["cp-1", "cp-9"])]) {
    const { leases, registry, controller } = setup(inventory);
    leases.upsert(heartbeatLease("cp-1", report("cp-1", [], { all: ["10.0.0.150"] })));
    leases.upsert(heartbeatLease("cp-9", report("cp-9", []), 60_000));
    controller.evaluate();
    const metrics = await registry.metrics();
    assert.match(metrics, /keelson_host_heartbeat_age_seconds\{host="cp-9"\} 60\n/);
    assert.doesNotMatch(metrics, /keelson_host_heartbeat_retired\{/);
  }
});
