import assert from "node:assert/strict";
import { type IpFamily, parseIp } from "../../../../../src/net/ip.ts";
import { chooseAddresses } from "../../../../../providers/baremetal/ipam/_choose.ts";
import { pools, type PoolSpec, req, type SvcSpec } from "./_helpers.ts";

const POOL = "keelson.io/address-pool";
const IPS = "keelson.io/load-balancer-ips";

const lan: PoolSpec = { name: "lan", addresses: ["10.0.0.1-10.0.0.3"], reserved: ["10.0.0.2"] };
const v6: PoolSpec = { name: "v6", addresses: ["2001:db8::1-2001:db8::2"] };
const dual: PoolSpec = { name: "dual", addresses: ["10.1.0.1", "2001:db8:1::1"] };
const manual: PoolSpec = { name: "manual", addresses: ["10.2.0.0/30"], "auto_assign": false };
const team: PoolSpec = { name: "team", addresses: ["10.3.0.1"], namespaces: ["team-a"] };

interface Case {
  name: string;
  pools: PoolSpec[];
  service: SvcSpec;
  /** Addresses already taken by another Service (no sharing). */
  taken?: string[];
  /** `ok pool ip,ip` or `Reason /message pattern/`. */
  expected: string | [reason: string, message: RegExp];
}

Deno.test("chooseAddresses() picks the requested or lowest acceptable addresses, or names the reason", () => {
  const cases: Case[] = [
    {
      name: "lowest usable address",
      pools: [lan],
      service: { key: "s" },
      expected: "lan 10.0.0.1",
    },
    {
      name: "a taken address is skipped, and so is a reserved one",
      pools: [lan],
      service: { key: "s" },
      taken: ["10.0.0.1"],
      expected: "lan 10.0.0.3",
    },
    {
      name: "every usable address taken: exhausted, with the count",
      pools: [lan],
      service: { key: "s" },
      taken: ["10.0.0.1", "10.0.0.3"],
      expected: ["PoolExhausted", /pool "lan" has no free IPv4 addresses \(2 of 2 used\)/],
    },
    {
      name: "pools are tried by name: the first with room wins",
      pools: [{ name: "b", addresses: ["10.9.0.1"] }, { name: "a", addresses: ["10.8.0.1"] }],
      service: { key: "s" },
      taken: ["10.8.0.1"],
      expected: "b 10.9.0.1",
    },
    {
      name: "a pool without auto_assign is not used unless named",
      pools: [manual],
      service: { key: "s" },
      expected: ["PoolExhausted", /no pool has auto_assign enabled/],
    },
    {
      name: "a named pool without auto_assign is used",
      pools: [manual],
      service: { key: "s", annotations: { [POOL]: "manual" } },
      expected: "manual 10.2.0.1",
    },
    {
      name: "an unknown pool",
      pools: [lan],
      service: { key: "s", annotations: { [POOL]: "nope" } },
      expected: ["UnknownPool", /pool "nope" does not exist \(pools: "lan"\)/],
    },
    {
      name: "a requested address",
      pools: [lan],
      service: { key: "s", annotations: { [IPS]: "10.0.0.3" } },
      expected: "lan 10.0.0.3",
    },
    {
      name: "a requested address outside every pool",
      pools: [lan],
      service: { key: "s", loadBalancerIP: "192.0.2.1" },
      expected: ["AddressNotInPool", /"192\.0\.2\.1" is not in any pool/],
    },
    {
      name: "a requested address outside the named pool",
      pools: [lan, manual],
      service: { key: "s", annotations: { [IPS]: "10.0.0.1", [POOL]: "manual" } },
      expected: ["AddressNotInPool", /not in pool "manual" \("10\.2\.0\.0\/30"\)/],
    },
    {
      name: "a requested reserved address",
      pools: [lan],
      service: { key: "s", annotations: { [IPS]: "10.0.0.2" } },
      expected: ["AddressReserved", /"10\.0\.0\.2" is reserved in pool "lan"/],
    },
    {
      name: "a requested network address of a CIDR",
      pools: [manual],
      service: { key: "s", annotations: { [IPS]: "10.2.0.0" } },
      expected: ["AddressReserved", /the network address of a CIDR/],
    },
    {
      name: "a requested address in use",
      pools: [lan],
      service: { key: "s", annotations: { [IPS]: "10.0.0.1" } },
      taken: ["10.0.0.1"],
      expected: ["AddressInUse", /"10\.0\.0\.1" is in use: taken/],
    },
    {
      name: "a namespace the pool does not allow (requested address)",
      pools: [team],
      service: { key: "team-b/s", annotations: { [IPS]: "10.3.0.1" } },
      expected: ["PoolNotAllowed", /allows namespaces "team-a" but not "team-b"/],
    },
    {
      name: "a namespace no auto-assign pool allows",
      pools: [team],
      service: { key: "team-b/s" },
      expected: ["PoolNotAllowed", /no auto-assign pool serves this Service \(.*but not "team-b"/],
    },
    {
      name: "a namespace the pool allows",
      pools: [team],
      service: { key: "team-a/s" },
      expected: "team 10.3.0.1",
    },
    {
      name: "IPv6 single stack",
      pools: [lan, v6],
      service: { key: "s", ipFamilies: ["IPv6"] },
      expected: "v6 2001:db8::1",
    },
    {
      name: "a family no pool offers",
      pools: [lan],
      service: { key: "s", ipFamilies: ["IPv6"] },
      expected: ["FamilyUnavailable", /no usable pool offers IPv6/],
    },
    {
      name: "RequireDualStack takes both families from one pool",
      pools: [lan, dual],
      service: { key: "s", ipFamilies: ["IPv4", "IPv6"], policy: "RequireDualStack" },
      expected: "dual 10.1.0.1,2001:db8:1::1",
    },
    {
      name: "RequireDualStack without a dual-stack pool",
      pools: [lan, v6],
      service: { key: "s", ipFamilies: ["IPv4", "IPv6"], policy: "RequireDualStack" },
      expected: ["FamilyUnavailable", /IPv4 and IPv6/],
    },
    {
      name: "PreferDualStack prefers a pool with both families",
      pools: [{ name: "a", addresses: ["10.4.0.1"] }, dual],
      service: { key: "s", ipFamilies: ["IPv4", "IPv6"], policy: "PreferDualStack" },
      expected: "dual 10.1.0.1,2001:db8:1::1",
    },
    {
      name: "PreferDualStack settles for one family when no pool has both free",
      pools: [{ name: "a", addresses: ["10.4.0.1"] }, dual],
      service: { key: "s", ipFamilies: ["IPv4", "IPv6"], policy: "PreferDualStack" },
      taken: ["2001:db8:1::1"],
      expected: "a 10.4.0.1",
    },
  ];
  for (const c of cases) {
    const taken = new Set((c.taken ?? []).map((ip) => key(ip)));
    const choice = chooseAddresses({
      pools: pools(...c.pools),
      request: req(c.service),
      conflict: (family, value) => taken.has(`${family}/${value}`) ? "taken" : undefined,
      // the plain scan from each pool's first address (the allocator's search is tested against
      // it in free_search_property_test.ts)
      lowest: (pool, family) => {
        for (const span of pool.usable[family]) {
          for (let v = span.first; v <= span.last; v++) {
            if (!taken.has(`${family}/${v}`)) return v;
          }
        }
        return undefined;
      },
      used: (pool, family) =>
        [...taken].filter((k) => k.startsWith(`${family}/`) && inPool(pool, family, k)).length,
    });
    if (typeof c.expected === "string") {
      assert.ok(choice.ok, `${c.name}: ${choice.ok ? "" : choice.message}`);
      assert.equal(`${choice.pool} ${choice.ips.map((h) => h.text).join(",")}`, c.expected, c.name);
    } else {
      assert.ok(!choice.ok, `${c.name}: expected ${c.expected[0]}`);
      assert.equal(choice.reason, c.expected[0], `${c.name}: ${choice.message}`);
      assert.match(choice.message, c.expected[1], c.name);
      assert.match(choice.message, /^Cannot allocate an address for service "[^"]+": /, c.name);
    }
  }
});

function key(text: string): string {
  const ip = parseIp(text);
  if (!ip) throw new Error(`test address ${text} does not parse`);
  return `${ip.family}/${ip.value}`;
}

function inPool(
  pool: ReturnType<typeof pools>[number],
  family: IpFamily,
  k: string,
): boolean {
  const value = BigInt(k.slice(2));
  return pool.usable[family].some((span) => span.first <= value && value <= span.last);
}
