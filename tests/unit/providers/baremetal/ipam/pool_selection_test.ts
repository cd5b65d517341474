/** How auto-assignment picks a pool: service_allocation priority, selectors, and the tie-break. */
import assert from "node:assert/strict";
import { Allocator } from "../../../../../providers/baremetal/ipam/allocator.ts";
import { planAllocations } from "../../../../../providers/baremetal/ipam/plan_allocations.ts";
import { poolsToTry } from "../../../../../providers/baremetal/ipam/pool_order.ts";
import { configWith, pools, type PoolSpec, req, svc, type SvcSpec } from "./_helpers.ts";

/** The pool a fresh allocator with these pools gives the Service. */
function poolFor(specs: PoolSpec[], service: SvcSpec): string {
  const allocator = new Allocator();
  allocator.setPools(pools(...specs));
  const result = allocator.assign(service.key, req(service));
  if (!result.ok) return `${result.reason}: ${result.message}`;
  return result.pool;
}

Deno.test("pool selection: without priorities, pools are tried in file order, not name order", () => {
  // "vrrp" comes first in the file; by name "bgp" would win
  const specs = [
    { name: "vrrp", addresses: ["10.0.1.0/30"] },
    { name: "bgp", addresses: ["10.0.2.0/30"] },
  ];
  assert.equal(poolFor(specs, { key: "web/s" }), "vrrp");
});

Deno.test("pool selection: a lower service_allocation.priority is tried first; pools without one come last", () => {
  const specs = [
    { name: "plain", addresses: ["10.0.0.0/30"] },
    { name: "second", addresses: ["10.0.1.0/30"], service_allocation: { priority: 20 } },
    { name: "first", addresses: ["10.0.2.0/30"], service_allocation: { priority: 10 } },
  ];
  assert.equal(poolFor(specs, { key: "web/s" }), "first");
  assert.deepEqual(
    poolsToTry(pools(...specs), { namespace: "web", labels: {} }).map((p) => p.name),
    ["first", "second", "plain"],
  );
});

Deno.test("pool selection: equal priorities fall back to file order, then selecting pools before plain ones", () => {
  const specs = [
    { name: "z-plain", addresses: ["10.0.0.0/30"] },
    {
      name: "m-selecting",
      addresses: ["10.0.3.0/30"],
      service_allocation: { namespaces: ["web"] },
    },
    { name: "b-tied", addresses: ["10.0.1.0/30"], service_allocation: { priority: 5 } },
    { name: "a-tied", addresses: ["10.0.2.0/30"], service_allocation: { priority: 5 } },
  ];
  assert.deepEqual(
    poolsToTry(pools(...specs), { namespace: "web", labels: {} }).map((p) => p.name),
    ["b-tied", "a-tied", "m-selecting", "z-plain"],
  );
  // a Service outside "web" never sees the selecting pool
  assert.deepEqual(
    poolsToTry(pools(...specs), { namespace: "other", labels: {} }).map((p) => p.name),
    ["b-tied", "a-tied", "z-plain"],
  );
});

Deno.test("pool selection: a full pool passes the Service on to the next in order", () => {
  const specs = [
    { name: "small", addresses: ["10.0.0.1"], service_allocation: { priority: 1 } },
    { name: "big", addresses: ["10.0.1.0/29"], service_allocation: { priority: 2 } },
  ];
  const allocator = new Allocator();
  allocator.setPools(pools(...specs));
  assert.equal(
    (allocator.assign("a/one", req({ key: "a/one" })) as { pool: string }).pool,
    "small",
  );
  assert.equal((allocator.assign("a/two", req({ key: "a/two" })) as { pool: string }).pool, "big");
});

Deno.test("pool selection: service_selectors admit only matching Services (match_labels, match_expressions)", () => {
  const specs = [
    { name: "shared", addresses: ["10.0.0.0/29"] },
    {
      name: "public",
      addresses: ["10.0.1.0/29"],
      service_allocation: {
        service_selectors: [
          { match_labels: { exposure: "public" } },
          {
            match_expressions: [
              { key: "tier", operator: "In", values: ["edge", "dmz"] },
              { key: "legacy", operator: "DoesNotExist" },
            ],
          },
        ],
      },
    },
  ];
  assert.equal(poolFor(specs, { key: "a/s", labels: { exposure: "public" } }), "public");
  assert.equal(poolFor(specs, { key: "a/s", labels: { tier: "dmz" } }), "public");
  assert.equal(poolFor(specs, { key: "a/s", labels: { tier: "dmz", legacy: "" } }), "shared");
  assert.equal(poolFor(specs, { key: "a/s", labels: { exposure: "private" } }), "shared");
  assert.equal(poolFor(specs, { key: "a/s" }), "shared");
  // naming the pool does not bypass its selectors (MetalLB checks them on requests too)
  assert.match(
    poolFor(specs, { key: "a/s", annotations: { "keelson.io/address-pool": "public" } }),
    /^PoolNotAllowed: .*pool "public" serves Services matching "exposure=public" or "tier in \(edge,dmz\),!legacy", and this Service's labels match none/,
  );
  assert.match(
    poolFor(specs, { key: "a/s", loadBalancerIP: "10.0.1.2" }),
    /^PoolNotAllowed: .*address "10\.0\.1\.2" is in pool "public" serves/,
  );
});

Deno.test("pool selection: service_allocation.namespaces restricts like the pool-level list and pins the pool", () => {
  const specs = [
    { name: "a-shared", addresses: ["10.0.0.0/29"] },
    { name: "z-team", addresses: ["10.0.1.0/29"], service_allocation: { namespaces: ["team"] } },
  ];
  // a selecting pool comes before a plain one even though it is later in the file
  assert.equal(poolFor(specs, { key: "team/s" }), "z-team");
  assert.equal(poolFor(specs, { key: "other/s" }), "a-shared");
});

Deno.test("plan shows the pool auto-assignment chose by priority and selectors", () => {
  const config = configWith([
    { name: "vrrp", addresses: ["10.0.1.0/29"] },
    { name: "bgp", addresses: ["10.0.2.0/29"], service_allocation: { priority: 1 } },
    {
      name: "edge",
      addresses: ["10.0.3.0/29"],
      service_allocation: { priority: 0, service_selectors: [{ match_labels: { tier: "edge" } }] },
    },
  ]);
  const plan = planAllocations(config, [
    svc({ key: "web/plain" }),
    svc({ key: "web/edge", labels: { tier: "edge" } }),
  ]);
  assert.deepEqual(plan.services.map((s) => [s.serviceKey, s.pool, s.ips.join(",")]), [
    ["web/edge", "edge", "10.0.3.1"],
    ["web/plain", "bgp", "10.0.2.1"],
  ]);
});
