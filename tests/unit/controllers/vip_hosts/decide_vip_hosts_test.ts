import assert from "node:assert/strict";
import {
  VipHostDecider,
  type VipObservation,
} from "../../../../src/controllers/vip_hosts/decide_vip_hosts.ts";

const obs = (hosts: string[], vip = "10.0.20.100", services = ["shop/web"]): VipObservation => ({
  vip,
  services,
  hosts,
});

Deno.test("VipHostDecider: the first look records hosts silently; a move is a Normal event", () => {
  const d = new VipHostDecider(3000);
  assert.deepEqual(d.step([obs(["cp-1"])], 0), []);
  assert.deepEqual(d.step([obs(["cp-1"])], 1000), []);
  assert.deepEqual(d.step([obs(["cp-2"])], 2000), [{
    service: "shop/web",
    vip: "10.0.20.100",
    type: "Normal",
    reason: "VIPHostChanged",
    message: "VIP 10.0.20.100 now served by cp-2",
  }]);
  // a VIP that appears after the first look (a new Service) is announced, on every Service using it
  const events = d.step([obs(["cp-2"]), obs(["cp-3"], "10.0.20.101", ["a/x", "b/y"])], 3000);
  assert.deepEqual(events.map((e) => [e.service, e.message]), [
    ["a/x", "VIP 10.0.20.101 now served by cp-3"],
    ["b/y", "VIP 10.0.20.101 now served by cp-3"],
  ]);
});

Deno.test("VipHostDecider: a failover gap shorter than the grace period is no Warning", () => {
  const d = new VipHostDecider(3000);
  d.step([obs(["cp-1"])], 0);
  assert.deepEqual(d.step([obs([])], 1000), []);
  assert.equal(d.nextDeadline(), 4000);
  const events = d.step([obs(["cp-2"])], 1500);
  assert.deepEqual(events.map((e) => e.reason), ["VIPHostChanged"]);
  assert.equal(d.nextDeadline(), undefined);
});

Deno.test("VipHostDecider: no host and split brain warn once after the grace period, and clear", () => {
  const d = new VipHostDecider(3000);
  d.step([obs(["cp-1"])], 0);
  assert.deepEqual(d.step([obs([])], 1000), []);
  const none = d.step([obs([])], 4000);
  assert.deepEqual(none.map((e) => [e.type, e.reason, e.message]), [
    ["Warning", "VIPNotServed", "VIP 10.0.20.100 is served by no host"],
  ]);
  assert.deepEqual(d.step([obs([])], 9000), [], "once per problem");
  // no host turns into two hosts: a new problem, with its own grace period
  assert.deepEqual(d.step([obs(["cp-1", "cp-2"])], 9500), []);
  const split = d.step([obs(["cp-1", "cp-2"])], 12_500);
  assert.deepEqual(split.map((e) => [e.type, e.reason, e.message]), [
    [
      "Warning",
      "VIPSplitBrain",
      "VIP 10.0.20.100 is served by 2 hosts at once (split brain): cp-1, cp-2",
    ],
  ]);
  // healed on the same host as before: still announced, so the Events show the end of it
  assert.deepEqual(d.step([obs(["cp-1"])], 13_000).map((e) => e.message), [
    "VIP 10.0.20.100 now served by cp-1",
  ]);
});

Deno.test("VipHostDecider: a VIP gone from every Service is forgotten", () => {
  const d = new VipHostDecider(3000);
  d.step([obs([])], 0);
  d.step([], 1000);
  assert.equal(d.nextDeadline(), undefined);
  // back later: a new VIP (not the first look any more), announced when served
  assert.deepEqual(d.step([obs(["cp-1"])], 2000).map((e) => e.reason), ["VIPHostChanged"]);
});
