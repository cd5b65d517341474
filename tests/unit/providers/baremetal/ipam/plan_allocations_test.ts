import assert from "node:assert/strict";
import { planAllocations } from "../../../../../providers/baremetal/ipam/plan_allocations.ts";
import { configWith, svc } from "./_helpers.ts";

Deno.test("planAllocations() keeps statuses, serves new Services oldest first and explains pending ones", () => {
  const config = configWith([{ name: "lan", addresses: ["10.0.0.1-10.0.0.3"] }]);
  const plan = planAllocations(config, [
    svc({ key: "a/kept", ingress: ["10.0.0.2"] }),
    svc({ key: "a/young", created: "2026-01-02T00:00:00Z" }),
    svc({ key: "z/old", created: "2026-01-01T00:00:00Z" }),
    svc({ key: "a/late", created: "2026-01-03T00:00:00Z" }),
    svc({ key: "a/bad", loadBalancerIP: "not-an-ip" }),
    svc({ key: "a/orphan", ingress: ["192.0.2.1"] }),
    svc({ key: "a/classed", loadBalancerClass: "other.io/lb" }),
    svc({ key: "a/plain", type: "ClusterIP" }),
  ]);
  assert.deepEqual(
    plan.services.map((
      s,
    ) => [s.serviceKey, s.outcome, s.ips.join(","), s.pool ?? "", s.reason ?? ""]),
    [
      ["a/bad", "pending", "", "", "InvalidRequest"],
      ["a/kept", "kept", "10.0.0.2", "lan", ""],
      ["a/late", "pending", "", "", "PoolExhausted"],
      ["a/orphan", "kept", "192.0.2.1", "", ""],
      ["a/young", "allocated", "10.0.0.3", "lan", ""],
      ["z/old", "allocated", "10.0.0.1", "lan", ""],
    ],
  );
  assert.match(plan.services[2]!.message!, /pool "lan" has no free IPv4 addresses \(3 of 3 used\)/);
  assert.deepEqual(plan.orphans.map((o) => `${o.serviceKey} ${o.ip} ${o.why}`), [
    "a/orphan 192.0.2.1 outside",
  ]);
  assert.deepEqual(plan.stats, [{ pool: "lan", family: 4, total: 3n, used: 3 }]);
  assert.deepEqual(plan.problems, []);
});

Deno.test("planAllocations() serves the configured class and, without default_class, only it", () => {
  const config = configWith([{ name: "lan", addresses: ["10.0.0.1-10.0.0.3"] }], {
    default_class: false,
    class: "keelson.io/vip",
  });
  const plan = planAllocations(config, [
    svc({ key: "a/unclassed" }),
    svc({ key: "a/ours", loadBalancerClass: "keelson.io/vip" }),
    // another implementation's status still blocks its address
    svc({ key: "a/theirs", loadBalancerClass: "other.io/lb", ingress: ["10.0.0.1"] }),
  ]);
  assert.deepEqual(plan.services.map((s) => [s.serviceKey, s.ips.join(",")]), [[
    "a/ours",
    "10.0.0.2",
  ]]);
  assert.deepEqual(plan.orphans, []);
});

Deno.test("planAllocations(): two statuses with one address, the older Service keeps it", () => {
  const config = configWith([{ name: "lan", addresses: ["10.0.0.1-10.0.0.3"] }]);
  // the older one sorts after the younger by key, so age, not key order, decides
  const plan = planAllocations(config, [
    svc({ key: "z/older", created: "2026-01-01T00:00:00Z", ingress: ["10.0.0.2"] }),
    svc({ key: "a/younger", created: "2026-02-01T00:00:00Z", ingress: ["10.0.0.2"] }),
  ]);
  const byKey = new Map(plan.services.map((s) => [s.serviceKey, s]));
  assert.equal(byKey.get("z/older")!.outcome, "kept");
  assert.deepEqual(byKey.get("z/older")!.ips, ["10.0.0.2"]);
  assert.equal(byKey.get("a/younger")!.outcome, "allocated");
  assert.notDeepEqual(byKey.get("a/younger")!.ips, ["10.0.0.2"]);
});

Deno.test("planAllocations() refuses ipFamilies [IPv4, IPv4] instead of giving one address twice", () => {
  const config = configWith([{ name: "lan", addresses: ["10.0.0.1-10.0.0.3"] }]);
  const [plan] = planAllocations(config, [
    svc({ key: "a/twice", ipFamilies: ["IPv4", "IPv4"], policy: "PreferDualStack" }),
  ]).services;
  assert.equal(plan!.outcome, "pending");
  assert.equal(plan!.reason, "InvalidRequest");
  assert.match(plan!.message!, /lists IPv4 twice/);
});

Deno.test("planAllocations() reports the pool of each address of a dual-stack pair", () => {
  const config = configWith([
    { name: "public", addresses: ["10.0.0.1-10.0.0.3"] },
    { name: "v6", addresses: ["2001:db8::1-2001:db8::3"] },
  ]);
  const [plan] = planAllocations(config, [
    svc({
      key: "a/ds",
      ipFamilies: ["IPv4", "IPv6"],
      policy: "RequireDualStack",
      annotations: { "keelson.io/load-balancer-ips": "10.0.0.2,2001:db8::2" },
    }),
  ]).services;
  assert.equal(plan!.outcome, "allocated");
  assert.deepEqual(plan!.ips, ["10.0.0.2", "2001:db8::2"]);
  assert.deepEqual(plan!.pools, ["public", "v6"]);
});
