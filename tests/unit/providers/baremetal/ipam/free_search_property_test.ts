/**
 * Property-style tests of the incremental lowest-free-address search: on random pools (several
 * ranges, CIDRs with network/broadcast, reserved addresses, both families, namespace limits) and
 * random sequences of restores, assignments and releases (with sharing keys), the allocator picks
 * exactly the address a plain scan from each pool's first address picks. Seeded: a failure names
 * a reproducible seed.
 */
import assert from "node:assert/strict";
import { Allocator } from "../../../../../providers/baremetal/ipam/allocator.ts";
import { FreeSearch } from "../../../../../providers/baremetal/ipam/_free_search.ts";
import type { AddressPool, Span } from "../../../../../providers/baremetal/ipam/pools.ts";
import type { SharingProfile } from "../../../../../providers/baremetal/ipam/service_requests.ts";
import { sharingConflict } from "../../../../../providers/baremetal/ipam/sharing.ts";
import { formatIp, type IpFamily, parseIp } from "../../../../../src/net/ip.ts";
import { pools, type PoolSpec, req, type SvcSpec } from "./_helpers.ts";

/** mulberry32: small, fast, seeded. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Rand = () => number;
const int = (rand: Rand, low: number, high: number) => low + Math.floor(rand() * (high - low + 1));

Deno.test("FreeSearch.lowestFree() equals a scan from the first address under random holds and releases", () => {
  for (let seed = 1; seed <= 300; seed++) {
    const rand = random(seed);
    // sorted, disjoint, non-adjacent spans
    const spans: Span[] = [];
    let next = BigInt(int(rand, 0, 5));
    for (let i = int(rand, 1, 4); i > 0; i--) {
      const first = next;
      const last = first + BigInt(int(rand, 0, 12));
      spans.push({ first, last });
      next = last + BigInt(int(rand, 2, 6));
    }
    const all = spans.flatMap((s) =>
      Array.from({ length: Number(s.last - s.first) + 1 }, (_, i) => s.first + BigInt(i))
    );
    const held = new Set<bigint>();
    const search = new FreeSearch(spans);
    for (let step = 0; step < 120; step++) {
      const r = rand();
      if (r < 0.45) {
        // allocate what the search says, as the allocator does
        const value = search.lowestFree((v) => held.has(v));
        if (value !== undefined) held.add(value);
      } else if (r < 0.65) {
        held.add(all[int(rand, 0, all.length - 1)]!); // a restore anywhere
      } else if (held.size > 0) {
        const value = [...held][int(rand, 0, held.size - 1)]!;
        held.delete(value);
        search.released(value);
      }
      const expected = all.find((v) => !held.has(v));
      assert.equal(search.lowestFree((v) => held.has(v)), expected, `seed ${seed} step ${step}`);
    }
  }
});

/** Random, valid, non-overlapping pools: pool i lives in 172.16.i.0/24 and 2001:db8:i::/64. */
function randomPools(rand: Rand): PoolSpec[] {
  const specs: PoolSpec[] = [];
  for (let i = 0; i < int(rand, 1, 3); i++) {
    const addresses: string[] = [];
    const reserved: string[] = [];
    let base = int(rand, 0, 8);
    for (let r = int(rand, 1, 3); r > 0; r--) {
      if (rand() < 0.3) {
        // a small CIDR: its network and broadcast addresses are not usable
        const aligned = Math.ceil((base + 1) / 8) * 8;
        addresses.push(`172.16.${i}.${aligned}/29`);
        base = aligned + 8 + int(rand, 1, 4);
      } else {
        const last = base + int(rand, 0, 10);
        addresses.push(`172.16.${i}.${base}-172.16.${i}.${last}`);
        if (rand() < 0.5) reserved.push(`172.16.${i}.${int(rand, base, last)}`);
        base = last + int(rand, 2, 5);
      }
    }
    if (rand() < 0.5) {
      const first = int(rand, 1, 20);
      addresses.push(
        `2001:db8:${i}::${first.toString(16)}-2001:db8:${i}::${
          (first + int(rand, 0, 8)).toString(16)
        }`,
      );
    }
    specs.push({
      name: `p${i}`,
      addresses,
      reserved: [...new Set(reserved)],
      auto_assign: rand() < 0.8,
      ...(rand() < 0.2 ? { namespaces: ["x"] } : {}),
    });
  }
  return specs;
}

/** What a plain scan picks: the lowest acceptable address of the first auto pool to try that has one. */
function referencePick(
  built: readonly AddressPool[],
  allocator: Allocator,
  profiles: ReadonlyMap<string, SharingProfile>,
  serviceKey: string,
  namespace: string,
  sharing: SharingProfile,
  family: IpFamily,
): string | undefined {
  const owners = new Map<string, string[]>();
  for (const key of allocator.serviceKeys()) {
    for (const ip of allocator.holding(key)!.ips) owners.set(ip, [...(owners.get(ip) ?? []), key]);
  }
  const acceptable = (value: bigint) =>
    (owners.get(formatIp(family, value)) ?? []).every((owner) =>
      owner === serviceKey || sharingConflict(owner, profiles.get(owner), sharing) === undefined
    );
  // pools that list namespaces are tried first, then the rest, each group in file order
  const rank = (p: AddressPool) => (p.namespaces.length > 0 ? 0 : 1);
  const candidates = [...built].sort((a, b) => rank(a) - rank(b) || a.order - b.order).filter((
    p,
  ) => p.autoAssign && (p.namespaces.length === 0 || p.namespaces.includes(namespace)));
  for (const pool of candidates) {
    if (pool.usable[family].length === 0) continue;
    for (const span of pool.usable[family]) {
      for (let v = span.first; v <= span.last; v++) if (acceptable(v)) return formatIp(family, v);
    }
  }
  return undefined;
}

Deno.test("Allocator's incremental search picks what a scan from each pool's first address picks (random pools, sharing, releases, reloads)", () => {
  let compared = 0;
  let shared = 0;
  for (let seed = 1; seed <= 150; seed++) {
    const rand = random(seed);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
    const allocator = new Allocator();
    let specs = randomPools(rand);
    let built = pools(...specs);
    allocator.setPools(built);
    const profiles = new Map<string, SharingProfile>();
    for (let step = 0; step < 60; step++) {
      const namespace = pick(["x", "y"]);
      const key = `${namespace}/s${int(rand, 0, 11)}`;
      const op = rand();
      const sharingKey = pick([undefined, undefined, "k1", "k2"]);
      const spec: SvcSpec = {
        key,
        ports: [pick(["TCP/80", "TCP/443", "UDP/53"])],
        ...(sharingKey && { annotations: { "keelson.io/allow-shared-ip": sharingKey } }),
      };
      if (op < 0.2) {
        // restore an address from a status, anywhere in (or out of) the pools
        const ip = `172.16.${int(rand, 0, 2)}.${int(rand, 0, 40)}`;
        const sharing = req(spec).sharing;
        allocator.restore(key, [ip], { sharing });
        profiles.set(key, sharing);
      } else if (op < 0.75) {
        const family: IpFamily = rand() < 0.75 ? 4 : 6;
        const request = req({ ...spec, ipFamilies: [family === 4 ? "IPv4" : "IPv6"] });
        // a fresh choice, not "keep what it holds"
        allocator.release(key);
        profiles.delete(key);
        const expected = referencePick(
          built,
          allocator,
          profiles,
          key,
          namespace,
          request.sharing,
          family,
        );
        const result = allocator.assign(key, request);
        assert.equal(
          result.ok ? result.ips[0] : undefined,
          expected,
          `seed ${seed} step ${step}: ${key} IPv${family} ${JSON.stringify(specs)}`,
        );
        compared++;
        if (result.ok) {
          profiles.set(key, request.sharing);
          const ip = parseIp(result.ips[0]!)!;
          const holders = allocator.serviceKeys().filter((k) =>
            allocator.holding(k)!.ips.includes(formatIp(ip.family, ip.value))
          );
          if (holders.length > 1) shared++;
        }
      } else if (op < 0.95) {
        allocator.release(key);
        profiles.delete(key);
      } else {
        specs = randomPools(rand);
        built = pools(...specs);
        allocator.setPools(built);
      }
    }
  }
  assert.ok(compared > 3000, `only ${compared} choices compared`);
  assert.ok(shared > 0, "sharing was exercised");
});
