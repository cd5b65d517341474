/**
 * Allocator scenarios, in the manner of MetalLB's TestAssignment: each table is a story of steps
 * applied in order to one allocator.
 */
import assert from "node:assert/strict";
import {
  type AllocationFailure,
  Allocator,
} from "../../../../../providers/baremetal/ipam/allocator.ts";
import { pools, type PoolSpec, req, type SvcSpec } from "./_helpers.ts";

type Step =
  & { desc: string }
  & (
    | { assign: SvcSpec; ips?: string[]; pool?: string; reason?: AllocationFailure; says?: RegExp }
    | { release: string }
    | { restore: string; ips: string[]; pool?: string; sharingOf?: SvcSpec }
    | { setPools: PoolSpec[]; orphans?: string[] }
    | { inUse: string; expect: boolean }
  );

function run(initial: PoolSpec[], steps: Step[]): Allocator {
  const allocator = new Allocator();
  allocator.setPools(pools(...initial));
  for (const step of steps) {
    if ("assign" in step) {
      const key = step.assign.key.includes("/") ? step.assign.key : `default/${step.assign.key}`;
      const result = allocator.assign(key, req(step.assign));
      if (step.reason) {
        assert.equal(
          result.ok,
          false,
          `${step.desc}: expected ${step.reason}, got ${JSON.stringify(result)}`,
        );
        if (!result.ok) {
          assert.equal(result.reason, step.reason, `${step.desc}: ${result.message}`);
          if (step.says) assert.match(result.message, step.says, step.desc);
        }
      } else {
        assert.ok(result.ok, `${step.desc}: ${!result.ok && result.message}`);
        if (result.ok) {
          assert.deepEqual(result.ips, step.ips, step.desc);
          if (step.pool) assert.equal(result.pool, step.pool, step.desc);
        }
      }
    } else if ("release" in step) {
      allocator.release(step.release);
    } else if ("restore" in step) {
      allocator.restore(step.restore, step.ips, {
        pool: step.pool,
        sharing: step.sharingOf && req(step.sharingOf).sharing,
      });
    } else if ("setPools" in step) {
      const orphans = allocator.setPools(pools(...step.setPools));
      assert.deepEqual(
        orphans.map((o) => `${o.serviceKey} ${o.ip} ${o.pool} ${o.why}`),
        step.orphans ?? [],
        step.desc,
      );
    } else {
      assert.equal(allocator.inUse(step.inUse), step.expect, step.desc);
    }
  }
  return allocator;
}

Deno.test("Allocator.assign() takes the lowest free address, skips network and broadcast, and is idempotent", () => {
  run([{ name: "a", addresses: ["10.0.0.0/30"] }], [
    { desc: "s1 gets the first host address", assign: { key: "s1" }, ips: ["10.0.0.1"], pool: "a" },
    { desc: "s2 gets the next one", assign: { key: "s2" }, ips: ["10.0.0.2"] },
    { desc: "s1 asks again and keeps its address", assign: { key: "s1" }, ips: ["10.0.0.1"] },
    {
      desc: "s3 finds the pool full (broadcast is not offered)",
      assign: { key: "s3" },
      reason: "PoolExhausted",
      says: /service "default\/s3": pool "a" has no free IPv4 addresses \(2 of 2 used\)/,
    },
    { desc: "s1 frees its address", release: "default/s1" },
    { desc: "s3 takes the freed address", assign: { key: "s3" }, ips: ["10.0.0.1"] },
    {
      desc: "the network address is refused",
      assign: { key: "s4", loadBalancerIP: "10.0.0.0" },
      reason: "AddressReserved",
      says: /"10\.0\.0\.0" is the network address/,
    },
    {
      desc: "the broadcast address is refused",
      assign: { key: "s4", loadBalancerIP: "10.0.0.3" },
      reason: "AddressReserved",
      says: /broadcast/,
    },
  ]);
});

Deno.test("Allocator.assign() keeps every address of /31 and /32 CIDRs and tries pools in file order", () => {
  run([
    { name: "b", addresses: ["10.0.1.0/31"] },
    { name: "a", addresses: ["10.0.2.7/32"] },
  ], [
    { desc: "pool b comes first in the file", assign: { key: "s1" }, ips: ["10.0.1.0"], pool: "b" },
    { desc: "and its last address", assign: { key: "s2" }, ips: ["10.0.1.1"], pool: "b" },
    { desc: "then pool a", assign: { key: "s3" }, ips: ["10.0.2.7"], pool: "a" },
    {
      desc: "then nothing",
      assign: { key: "s4" },
      reason: "PoolExhausted",
      says: /pool "b".*; pool "a"/,
    },
  ]);
});

Deno.test("Allocator.assign() never hands out reserved addresses and grows with its pool", () => {
  run([{ name: "a", addresses: ["10.0.0.10-10.0.0.13"], reserved: ["10.0.0.10", "10.0.0.12"] }], [
    { desc: "s1 skips reserved .10", assign: { key: "s1" }, ips: ["10.0.0.11"] },
    { desc: "s2 skips reserved .12", assign: { key: "s2" }, ips: ["10.0.0.13"] },
    {
      desc: "a reserved address asked for by name is refused",
      assign: { key: "s3", loadBalancerIP: "10.0.0.12" },
      reason: "AddressReserved",
      says: /"10\.0\.0\.12" is reserved in pool "a"/,
    },
    { desc: "s3 finds the pool exhausted", assign: { key: "s3" }, reason: "PoolExhausted" },
    {
      desc: "the pool grows; nothing is orphaned",
      setPools: [{
        name: "a",
        addresses: ["10.0.0.10-10.0.0.14"],
        reserved: ["10.0.0.10", "10.0.0.12"],
      }],
    },
    { desc: "s3 gets the new address", assign: { key: "s3" }, ips: ["10.0.0.14"] },
    { desc: "s1 keeps its address", assign: { key: "s1" }, ips: ["10.0.0.11"] },
  ]);
});

Deno.test("Allocator.assign() gives requested addresses exactly or says why not", () => {
  run([
    { name: "a", addresses: ["10.0.0.1-10.0.0.5"] },
    { name: "manual", addresses: ["10.0.9.1-10.0.9.3"], auto_assign: false },
  ], [
    {
      desc: "s1 asks for .3",
      assign: { key: "s1", loadBalancerIP: "10.0.0.3" },
      ips: ["10.0.0.3"],
    },
    {
      desc: "s2 can't grab s1's address",
      assign: { key: "s2", loadBalancerIP: "10.0.0.3" },
      reason: "AddressInUse",
      says: /address "10\.0\.0\.3" is in use: service "default\/s1" holds it without a sharing key/,
    },
    {
      desc: "an address outside every pool is refused",
      assign: { key: "s2", loadBalancerIP: "192.0.2.1" },
      reason: "AddressNotInPool",
      says: /"192\.0\.2\.1" is not in any pool \(pools: "a", "manual"\)/,
    },
    {
      desc: "auto-assignment skips the manual pool",
      assign: { key: "s3" },
      ips: ["10.0.0.1"],
      pool: "a",
    },
    {
      desc: "a manual pool address can be asked for",
      assign: { key: "s4", loadBalancerIP: "10.0.9.2" },
      ips: ["10.0.9.2"],
      pool: "manual",
    },
    {
      desc: "a manual pool can be named",
      assign: { key: "s5", annotations: { "keelson.io/address-pool": "manual" } },
      ips: ["10.0.9.1"],
      pool: "manual",
    },
    {
      desc: "an unknown pool is refused",
      assign: { key: "s6", annotations: { "keelson.io/address-pool": "nope" } },
      reason: "UnknownPool",
      says: /pool "nope" does not exist \(pools: "a", "manual"\)/,
    },
    {
      desc: "an address outside the named pool is refused",
      assign: {
        key: "s6",
        loadBalancerIP: "10.0.0.4",
        annotations: { "keelson.io/address-pool": "manual" },
      },
      reason: "AddressNotInPool",
      says: /"10\.0\.0\.4" is not in pool "manual" \("10\.0\.9\.1-10\.0\.9\.3"\)/,
    },
    {
      desc: "s1 moves to .4 when it asks for it",
      assign: { key: "s1", loadBalancerIP: "10.0.0.4" },
      ips: ["10.0.0.4"],
    },
    { desc: ".3 is free again", inUse: "10.0.0.3", expect: false },
    {
      desc: "s1 asks for s3's .1: refused, and it keeps .4",
      assign: { key: "s1", loadBalancerIP: "10.0.0.1" },
      reason: "AddressInUse",
    },
    { desc: "s1 still holds .4", inUse: "10.0.0.4", expect: true },
  ]);
});

Deno.test("Allocator.assign() reads every annotation family the same way", () => {
  const cases: [string, Record<string, string> | undefined, string | undefined][] = [
    ["keelson.io/load-balancer-ips", { "keelson.io/load-balancer-ips": "10.0.0.2" }, undefined],
    ["metallb.io/loadBalancerIPs", { "metallb.io/loadBalancerIPs": "10.0.0.2" }, undefined],
    [
      "metallb.universe.tf/loadBalancerIPs",
      { "metallb.universe.tf/loadBalancerIPs": "10.0.0.2" },
      undefined,
    ],
    ["kube-vip.io/loadbalancerIPs", { "kube-vip.io/loadbalancerIPs": "10.0.0.2" }, undefined],
    ["spec.loadBalancerIP", undefined, "10.0.0.2"],
  ];
  for (const [desc, annotations, loadBalancerIP] of cases) {
    const spec: SvcSpec = {
      key: "s1",
      ...(annotations && { annotations }),
      ...(loadBalancerIP && { loadBalancerIP }),
    };
    run([{ name: "a", addresses: ["10.0.0.1-10.0.0.5"] }], [{
      desc,
      assign: spec,
      ips: ["10.0.0.2"],
    }]);
  }
  for (
    const prefix of [
      "keelson.io/address-pool",
      "metallb.io/address-pool",
      "metallb.universe.tf/address-pool",
    ]
  ) {
    run([{ name: "a", addresses: ["10.0.0.1"] }, { name: "b", addresses: ["10.0.1.1"] }], [
      {
        desc: prefix,
        assign: { key: "s1", annotations: { [prefix]: "b" } },
        ips: ["10.0.1.1"],
        pool: "b",
      },
    ]);
  }
  for (
    const prefix of [
      "keelson.io/allow-shared-ip",
      "metallb.io/allow-shared-ip",
      "metallb.universe.tf/allow-shared-ip",
    ]
  ) {
    run([{ name: "a", addresses: ["10.0.0.1-10.0.0.2"] }], [
      {
        desc: `${prefix} s1`,
        assign: { key: "s1", annotations: { [prefix]: "k" }, ports: ["TCP/80"] },
        ips: ["10.0.0.1"],
      },
      {
        desc: `${prefix} s2 shares`,
        assign: { key: "s2", annotations: { [prefix]: "k" }, ports: ["TCP/443"] },
        ips: ["10.0.0.1"],
      },
    ]);
  }
});

Deno.test("Allocator.assign() shares an address only by MetalLB's rules", () => {
  const shared = (
    key: string,
    ports: string[],
    sharingKey = "web",
    extra: Partial<SvcSpec> = {},
  ): SvcSpec => ({
    key,
    ports,
    annotations: { "keelson.io/allow-shared-ip": sharingKey },
    ...extra,
  });
  run([{ name: "a", addresses: ["10.0.0.1-10.0.0.3"] }], [
    { desc: "s1 takes .1 with key web", assign: shared("s1", ["TCP/80"]), ips: ["10.0.0.1"] },
    {
      desc: "s2, same key and other port, shares .1 (lowest acceptable)",
      assign: shared("s2", ["TCP/443"]),
      ips: ["10.0.0.1"],
    },
    {
      desc: "s3 asks for .1 with the same key and port 80: refused",
      assign: shared("s3", ["TCP/80"], "web", { loadBalancerIP: "10.0.0.1" }),
      reason: "AddressInUse",
      says: /also uses port "TCP\/80"/,
    },
    {
      desc: "s3 auto-assigned with port 80 gets its own address",
      assign: shared("s3", ["TCP/80"]),
      ips: ["10.0.0.2"],
    },
    {
      desc: "UDP/80 does not overlap TCP/80",
      assign: shared("s4", ["UDP/80"], "web", { loadBalancerIP: "10.0.0.1" }),
      ips: ["10.0.0.1"],
    },
    {
      desc: "another key is refused",
      assign: shared("s5", ["TCP/8080"], "other", { loadBalancerIP: "10.0.0.1" }),
      reason: "AddressInUse",
      says: /sharing key "web", not "other"/,
    },
    {
      desc: "no key is refused",
      assign: { key: "s6", ports: ["TCP/8080"], loadBalancerIP: "10.0.0.1" },
      reason: "AddressInUse",
      says: /this service has no sharing key/,
    },
    {
      desc: "Local traffic with another selector is refused",
      assign: shared("s7", ["TCP/9000"], "web", {
        loadBalancerIP: "10.0.0.1",
        etpLocal: { app: "x" },
      }),
      reason: "AddressInUse",
      says: /backends differ/,
    },
    { desc: "s1 leaves; the others keep sharing", release: "default/s1" },
    { desc: ".1 is still in use", inUse: "10.0.0.1", expect: true },
  ]);
  run([{ name: "a", addresses: ["10.0.0.1-10.0.0.3"] }], [
    {
      desc: "Local s1",
      assign: shared("s1", ["TCP/80"], "k", { etpLocal: { app: "web" } }),
      ips: ["10.0.0.1"],
    },
    {
      desc: "Local s2 with the same selector shares",
      assign: shared("s2", ["TCP/81"], "k", { etpLocal: { app: "web" } }),
      ips: ["10.0.0.1"],
    },
    { desc: "Cluster s3 does not", assign: shared("s3", ["TCP/82"], "k"), ips: ["10.0.0.2"] },
  ]);
});

Deno.test("Allocator.assign() follows spec.ipFamilyPolicy", () => {
  const dual: PoolSpec = {
    name: "dual",
    addresses: ["10.0.0.1-10.0.0.2", "2001:db8::1-2001:db8::2"],
  };
  const v4: PoolSpec = { name: "v4", addresses: ["10.1.0.1"] };
  run([dual], [
    {
      desc: "SingleStack IPv6",
      assign: { key: "s1", ipFamilies: ["IPv6"], policy: "SingleStack" },
      ips: ["2001:db8::1"],
    },
    { desc: "SingleStack IPv4", assign: { key: "s2", ipFamilies: ["IPv4"] }, ips: ["10.0.0.1"] },
    {
      desc: "PreferDualStack takes both",
      assign: { key: "s3", ipFamilies: ["IPv6", "IPv4"], policy: "PreferDualStack" },
      ips: ["2001:db8::2", "10.0.0.2"],
    },
    {
      desc: "RequireDualStack finds a family exhausted",
      assign: { key: "s4", ipFamilies: ["IPv4", "IPv6"], policy: "RequireDualStack" },
      reason: "PoolExhausted",
      says: /no free IPv4 addresses \(2 of 2 used\); pool "dual" has no free IPv6/,
    },
    { desc: "s2 leaves", release: "default/s2" },
    {
      desc: "PreferDualStack settles for IPv4",
      assign: { key: "s4", ipFamilies: ["IPv4", "IPv6"], policy: "PreferDualStack" },
      ips: ["10.0.0.1"],
    },
  ]);
  run([v4], [
    {
      desc: "RequireDualStack without an IPv6 pool",
      assign: { key: "s1", ipFamilies: ["IPv4", "IPv6"], policy: "RequireDualStack" },
      reason: "FamilyUnavailable",
      says: /no usable pool offers IPv4 and IPv6/,
    },
    {
      desc: "SingleStack IPv6 without an IPv6 pool",
      assign: { key: "s1", ipFamilies: ["IPv6"] },
      reason: "FamilyUnavailable",
    },
    {
      desc: "PreferDualStack with IPv4 only",
      assign: { key: "s1", ipFamilies: ["IPv4", "IPv6"], policy: "PreferDualStack" },
      ips: ["10.1.0.1"],
    },
  ]);
  run([v4, dual], [
    {
      desc: "RequireDualStack skips the IPv4-only pool",
      assign: { key: "s1", ipFamilies: ["IPv4", "IPv6"], policy: "RequireDualStack" },
      ips: ["10.0.0.1", "2001:db8::1"],
      pool: "dual",
    },
    {
      desc: "requested dual-stack pair",
      assign: {
        key: "s2",
        ipFamilies: ["IPv4", "IPv6"],
        policy: "RequireDualStack",
        annotations: { "keelson.io/load-balancer-ips": "2001:db8::2,10.0.0.2" },
      },
      ips: ["10.0.0.2", "2001:db8::2"],
    },
  ]);
  // pools are tried by name: the IPv4-only pool comes first here
  run([{ name: "a-v4", addresses: ["10.1.0.1"] }, {
    name: "b-dual",
    addresses: ["10.2.0.1", "2001:db8::1"],
  }], [
    {
      desc: "PreferDualStack passes over a single-family pool while a pool has both free",
      assign: { key: "s1", ipFamilies: ["IPv4", "IPv6"], policy: "PreferDualStack" },
      ips: ["10.2.0.1", "2001:db8::1"],
      pool: "b-dual",
    },
    {
      desc: "PreferDualStack settles for the single-family pool once no pool has both",
      assign: { key: "s2", ipFamilies: ["IPv4", "IPv6"], policy: "PreferDualStack" },
      ips: ["10.1.0.1"],
      pool: "a-v4",
    },
  ]);
});

Deno.test("Allocator.assign() keeps pools to their namespaces", () => {
  run([
    { name: "a-team", addresses: ["10.0.1.1"], namespaces: ["team-a"] },
    { name: "b-shared", addresses: ["10.0.2.1"] },
  ], [
    {
      desc: "team-a gets its own pool first",
      assign: { key: "team-a/s1" },
      ips: ["10.0.1.1"],
      pool: "a-team",
    },
    { desc: "team-b skips it", assign: { key: "team-b/s1" }, ips: ["10.0.2.1"], pool: "b-shared" },
    {
      desc: "team-b may not name it",
      assign: { key: "team-b/s2", annotations: { "keelson.io/address-pool": "a-team" } },
      reason: "PoolNotAllowed",
      says: /pool "a-team" allows namespaces "team-a" but not "team-b"/,
    },
    {
      desc: "nor ask for its address",
      assign: { key: "team-b/s2", loadBalancerIP: "10.0.1.1" },
      reason: "PoolNotAllowed",
    },
  ]);
  run([{ name: "only-a", addresses: ["10.0.1.1"], namespaces: ["team-a"] }], [
    {
      desc: "no auto-assign pool allows team-b",
      assign: { key: "team-b/s1" },
      reason: "PoolNotAllowed",
      says:
        /no auto-assign pool serves this Service \(pool "[a-z-]+" allows namespaces "team-a" but not "team-b"/,
    },
  ]);
});

Deno.test("Allocator.restore() blocks addresses from status, even outside every pool", () => {
  run([{ name: "a", addresses: ["10.0.0.1-10.0.0.3"] }], [
    { desc: "s1's status shows .1", restore: "default/s1", ips: ["10.0.0.1"], pool: "a" },
    { desc: "a foreign status shows an outside address", restore: "other/x", ips: ["192.0.2.9"] },
    { desc: "s2 does not get .1", assign: { key: "s2" }, ips: ["10.0.0.2"] },
    {
      desc: "s3 cannot ask for .1",
      assign: { key: "s3", loadBalancerIP: "10.0.0.1" },
      reason: "AddressInUse",
    },
    { desc: "the outside address counts as in use", inUse: "192.0.2.9", expect: true },
    { desc: "s1 ensured again keeps .1", assign: { key: "s1" }, ips: ["10.0.0.1"] },
    {
      desc: "restored with its sharing key, s4 may share",
      restore: "default/s4",
      ips: ["10.0.0.3"],
      sharingOf: { key: "s4", annotations: { "keelson.io/allow-shared-ip": "k" } },
    },
    {
      desc: "s5 shares with s4",
      assign: {
        key: "s5",
        ports: ["TCP/81"],
        annotations: { "keelson.io/allow-shared-ip": "k" },
        loadBalancerIP: "10.0.0.3",
      },
      ips: ["10.0.0.3"],
    },
  ]);
});

Deno.test("Allocator.setPools() keeps addresses of removed or shrunk pools and reports them", () => {
  const allocator = run([{ name: "a", addresses: ["10.0.0.1-10.0.0.3"] }, {
    name: "b",
    addresses: ["10.0.1.1"],
  }], [
    { desc: "s1 takes .1", assign: { key: "s1" }, ips: ["10.0.0.1"] },
    { desc: "s2 takes .2", assign: { key: "s2" }, ips: ["10.0.0.2"] },
    {
      desc: ".2 becomes reserved",
      setPools: [{ name: "a", addresses: ["10.0.0.1-10.0.0.3"], reserved: ["10.0.0.2"] }, {
        name: "b",
        addresses: ["10.0.1.1"],
      }],
      orphans: ["default/s2 10.0.0.2 a reserved"],
    },
    {
      desc: "pool a is removed",
      setPools: [{ name: "b", addresses: ["10.0.1.1"] }],
      orphans: ["default/s1 10.0.0.1 a outside", "default/s2 10.0.0.2 a outside"],
    },
    { desc: "s1 keeps its address", assign: { key: "s1" }, ips: ["10.0.0.1"] },
    { desc: "s3 gets pool b", assign: { key: "s3" }, ips: ["10.0.1.1"] },
    { desc: "s1 frees its orphan", release: "default/s1" },
  ]);
  assert.deepEqual(allocator.orphanedAllocations().map((o) => o.ip), ["10.0.0.2"]);
});

Deno.test("Allocator.assign() answers with canonical IPv6 text", () => {
  run([{ name: "v6", addresses: ["2001:db8::/126"] }], [
    // the all-zero host is the subnet-router anycast address (RFC 4291), never a Service's
    {
      desc: "a /126 starts after its anycast address",
      assign: { key: "s1" },
      ips: ["2001:db8::1"],
    },
    {
      desc: "the subnet-router anycast address is never handed out",
      assign: { key: "s0", loadBalancerIP: "2001:db8::" },
      reason: "AddressReserved",
      says: /network address/,
    },
    {
      desc: "a long form is canonicalised",
      assign: { key: "s2", loadBalancerIP: "2001:0db8:0000:0000:0000:0000:0000:0003" },
      ips: ["2001:db8::3"],
    },
    { desc: "inUse accepts any form", inUse: "2001:db8:0:0::3", expect: true },
    {
      desc: "the same address in another form is taken",
      assign: { key: "s3", loadBalancerIP: "2001:DB8::3" },
      reason: "AddressInUse",
      says: /"2001:db8::3"/,
    },
  ]);
});

Deno.test("Allocator.stats() counts usable and used addresses per pool and family, shared ones once", () => {
  const allocator = run([{
    name: "d",
    addresses: ["10.0.0.0/29", "2001:db8::/64"],
    reserved: ["10.0.0.1"],
  }], [
    {
      desc: "s1",
      assign: { key: "s1", annotations: { "keelson.io/allow-shared-ip": "k" } },
      ips: ["10.0.0.2"],
    },
    {
      desc: "s2 shares",
      assign: { key: "s2", ports: ["TCP/81"], annotations: { "keelson.io/allow-shared-ip": "k" } },
      ips: ["10.0.0.2"],
    },
    { desc: "s3 v6", assign: { key: "s3", ipFamilies: ["IPv6"] }, ips: ["2001:db8::1"] },
  ]);
  assert.deepEqual(allocator.stats(), [
    { pool: "d", family: 4, total: 5n, used: 1 },
    { pool: "d", family: 6, total: (1n << 64n) - 1n, used: 1 },
  ]);
});
