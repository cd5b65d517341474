import assert from "node:assert/strict";
import type { V1Lease, V1Service } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { VipHostController } from "../../../../src/controllers/vip_hosts/vip_host_controller.ts";
import { FakeEventRecorder, FakeInformer } from "../../_fakes/fake_cluster.ts";
import type { HostReport } from "../../../../src/status/host_report.ts";
import { heartbeatLease, lbService, report } from "../../status/_leases.ts";
import { pollUntil } from "../../../_support/poll.ts";

function setup(inventory?: Set<string>) {
  const services = new FakeInformer<V1Service>();
  const leases = new FakeInformer<V1Lease>();
  const events = new FakeEventRecorder();
  const registry = new Registry();
  let now = 1_000_000; // the leader's monotonic clock
  const controller = new VipHostController({
    services,
    leases,
    events,
    handles: (s) => s.metadata?.name !== "other-class",
    registry,
    inventory: () => inventory,
    now: () => now,
  }, { graceMs: 3000 });
  // each write of a heartbeat carries a new renewTime (what the host's clock says does not matter)
  let writes = 0;
  const renew = (host: string, rep: HostReport) =>
    leases.upsert(heartbeatLease(host, rep, -(++writes) * 1000));
  return {
    services,
    leases,
    events,
    registry,
    controller,
    renew,
    advance: (ms: number) => now += ms,
  };
}

Deno.test("VipHostController: Events on the Service and the serving-hosts gauge follow the heartbeats", async () => {
  const { services, leases, events, registry, controller, renew, advance } = setup();
  services.upsert(lbService("shop", "web", ["10.0.0.150"]));
  services.upsert(lbService("shop", "other-class", ["10.0.0.160"]));
  leases.upsert(heartbeatLease("cp-1", report("cp-1", ["10.0.0.150"])));
  leases.upsert(heartbeatLease("cp-2", report("cp-2", [])));
  // as the leader starts, nobody is seen renewing yet: whether the VIP is served is unknown
  const first = controller.evaluate();
  assert.deepEqual(first.map((o) => [o.vip, o.hosts, o.lastSeenOn]), [
    ["10.0.0.150", [], ["cp-1"]],
  ]);
  advance(1000);
  renew("cp-1", report("cp-1", ["10.0.0.150"]));
  renew("cp-2", report("cp-2", []));
  const second = controller.evaluate();
  assert.deepEqual(second.map((o) => [o.vip, o.hosts]), [["10.0.0.150", ["cp-1"]]]);
  // the host seen first is no change this leader saw: no Event
  assert.deepEqual(events.events, []);
  assert.match(
    await registry.metrics(),
    /keelson_vip_serving_hosts\{vip="10.0.0.150",service="shop\/web"\} 1/,
  );

  advance(1000);
  renew("cp-1", report("cp-1", []));
  renew("cp-2", report("cp-2", ["10.0.0.150"]));
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

  // split brain: cp-1 takes the VIP too; cp-2, not renewed since, could have died: once it
  // renews still holding it, both serve it, reported after the grace period
  advance(1000);
  renew("cp-1", report("cp-1", ["10.0.0.150"]));
  assert.deepEqual(controller.evaluate().map((o) => o.hosts), [["cp-1"]]);
  advance(1000);
  renew("cp-2", report("cp-2", ["10.0.0.150"]));
  assert.deepEqual(controller.evaluate().map((o) => o.hosts), [["cp-1", "cp-2"]]);
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
  const { services, events, registry, controller, renew, advance } = setup();
  services.upsert(lbService("shop", "web", ["10.0.0.150"]));
  services.upsert(lbService("shop", "api", ["10.0.0.151"]));
  controller.evaluate(); // the leader starts watching: no heartbeat yet
  renew("cp-1", report("cp-1", ["10.0.0.150"], { all: ["10.0.0.150"] }));
  renew("cp-2", report("cp-2", [], { all: ["10.0.0.150", "10.0.0.151"] }));
  controller.evaluate();
  advance(16_000); // cp-1 stops; past its 15 s lease; cp-2 keeps renewing
  renew("cp-2", report("cp-2", [], { all: ["10.0.0.150", "10.0.0.151"] }));
  const seen = controller.evaluate();
  assert.deepEqual(seen.map((o) => [o.vip, o.hosts, o.lastSeenOn]), [
    ["10.0.0.150", [], ["cp-1"]],
    ["10.0.0.151", [], []],
  ]);
  assert.match(await registry.metrics(), /keelson_host_heartbeat_age_seconds\{host="cp-1"\} 16/);
  advance(3000);
  renew("cp-2", report("cp-2", [], { all: ["10.0.0.150", "10.0.0.151"] }));
  controller.evaluate();
  // unknown is no Warning (the missing heartbeat is its own alert); nobody at all is
  assert.deepEqual(events.events.map((e) => [e.object, e.reason]), [
    ["Service/shop/api", "VIPNotServed"],
  ]);
});

Deno.test("VipHostController.run() evaluates on informer changes and stops on abort", async () => {
  const { services, leases, events, registry, controller, renew } = setup();
  services.upsert(lbService("shop", "web", ["10.0.0.150"]));
  leases.upsert(heartbeatLease("cp-1", report("cp-1", ["10.0.0.150"])));
  const stop = new AbortController();
  const running = controller.run(stop.signal);
  const servingHosts = async () =>
    /keelson_vip_serving_hosts\{vip="10\.0\.0\.150",service="shop\/web"\} (\d+)/
      .exec(await registry.metrics())?.[1];
  await pollUntil("the first evaluation", servingHosts);
  renew("cp-1", report("cp-1", ["10.0.0.150"])); // seen renewing: cp-1 serves it
  await pollUntil("cp-1 seen serving", async () => await servingHosts() === "1");
  renew("cp-1", report("cp-1", []));
  renew("cp-2", report("cp-2", ["10.0.0.150"]));
  await pollUntil("an Event", () => events.events.length > 0);
  assert.equal(events.events[0]?.message, "VIP 10.0.0.150 now served by cp-2");
  stop.abort();
  await running;
});

Deno.test("VipHostController: no Warning while no host runs keepalived under Keelson", () => {
  const { services, leases, events, controller, renew, advance } = setup();
  services.upsert(lbService("shop", "web", ["10.0.0.150"]));
  leases.upsert(heartbeatLease("cp-1", report("cp-1", [], { all: [] })));
  controller.evaluate();
  advance(5000);
  renew("cp-1", report("cp-1", [], { all: [] }));
  assert.deepEqual(controller.evaluate(), []);
  assert.deepEqual(events.events, []);
});

Deno.test("VipHostController: a VIP announced over BGP by several hosts is ECMP, not split brain", async () => {
  const { services, events, registry, controller, renew, advance } = setup();
  services.upsert(lbService("shop", "web", ["10.0.0.150"]));
  services.upsert(lbService("shop", "bgp", ["10.0.30.10"], "bgp"));
  const bgp = [{ peer: "tor-a", established: true, routes: ["10.0.30.10/32"] }];
  controller.evaluate();
  renew("cp-1", { ...report("cp-1", ["10.0.0.150"]), bgp });
  renew("cp-2", { ...report("cp-2", []), bgp });
  controller.evaluate();
  advance(5000);
  renew("cp-1", { ...report("cp-1", ["10.0.0.150"]), bgp });
  renew("cp-2", { ...report("cp-2", []), bgp });
  const observed = controller.evaluate();
  assert.deepEqual(observed.map((o) => o.vip), ["10.0.0.150"]);
  assert.deepEqual(events.events.filter((e) => e.type === "Warning"), []);
  assert.match(
    await registry.metrics(),
    /keelson_vip_serving_hosts\{vip="10.0.30.10",service="shop\/bgp"\} 2/,
  );
});

Deno.test("VipHostController: a retired host's heartbeat has no age series, no unknown VIP, no Warning; the retired gauge names it", async () => {
  const { services, leases, events, registry, controller, renew, advance } = setup(
    new Set(["cp-1"]),
  );
  services.upsert(lbService("shop", "web", ["10.0.0.150"]));
  const cp1 = report("cp-1", ["10.0.0.150"], { all: ["10.0.0.150"] });
  leases.upsert(heartbeatLease("cp-1", cp1));
  // removed from the inventory and powered off days ago: its Lease stayed, still listing the VIP
  leases.upsert(
    heartbeatLease("cp-9", report("cp-9", ["10.0.0.150"], { all: ["10.0.0.150"] }), 86_400_000),
  );
  // the leader starts: neither is judged yet, the VIP is unknown, nothing is said
  assert.deepEqual(controller.evaluate().map((o) => [o.vip, o.hosts, o.lastSeenOn]), [
    ["10.0.0.150", [], ["cp-1", "cp-9"]],
  ]);
  for (let i = 0; i < 4; i++) {
    advance(5000);
    renew("cp-1", cp1);
    controller.evaluate();
  }
  // 20 s later: cp-9 stayed unchanged past its lease, cp-1 renewed
  const seen = controller.evaluate();
  assert.deepEqual(seen.map((o) => [o.vip, o.hosts, o.lastSeenOn]), [["10.0.0.150", ["cp-1"], []]]);
  const metrics = await registry.metrics();
  assert.match(metrics, /keelson_host_heartbeat_age_seconds\{host="cp-1"\} 0\n/);
  assert.doesNotMatch(metrics, /keelson_host_heartbeat_age_seconds\{host="cp-9"\}/);
  assert.match(metrics, /keelson_host_heartbeat_retired\{host="cp-9"\} 1\n/);
  assert.doesNotMatch(metrics, /keelson_host_heartbeat_retired\{host="cp-1"\}/);
  assert.deepEqual(events.events, []);

  // the Lease deleted by hand: the retired series goes with it
  leases.remove("kube-system/keelson-host-cp-9");
  controller.evaluate();
  assert.doesNotMatch(await registry.metrics(), /keelson_host_heartbeat_retired\{/);
});

Deno.test("VipHostController: without an inventory (or for a host of it) a silent heartbeat keeps its age series", async () => {
  for (const inventory of [undefined, new Set(["cp-1", "cp-9"])]) {
    const { leases, registry, controller, renew, advance } = setup(inventory);
    leases.upsert(heartbeatLease("cp-9", report("cp-9", []), 60_000));
    controller.evaluate();
    advance(16_000);
    renew("cp-1", report("cp-1", [], { all: ["10.0.0.150"] }));
    controller.evaluate();
    const metrics = await registry.metrics();
    // by this leader's watch: unchanged for the 16 s it has looked (its own clock says 60 s)
    assert.match(metrics, /keelson_host_heartbeat_age_seconds\{host="cp-9"\} 16\n/);
    assert.doesNotMatch(metrics, /keelson_host_heartbeat_retired\{/);
  }
});
