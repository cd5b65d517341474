import assert from "node:assert/strict";
import { poolCapacity, poolUsableIntervals } from "../../../src/config/pool_size.ts";
import type { Pool } from "../../../src/config/types.ts";

function pool(addresses: string[], reserved: string[] = []): Pool {
  return { name: "p", addresses, reserved, auto_assign: true, namespaces: [], announce: "vrrp" };
}

const CASES: [addresses: string[], reserved: string[], ipv4: bigint, ipv6: bigint][] = [
  [["192.0.2.0/24"], [], 254n, 0n],
  [["192.0.2.0/24"], ["192.0.2.1", "192.0.2.10-192.0.2.19"], 243n, 0n],
  [["192.0.2.0/31"], [], 2n, 0n],
  [["192.0.2.7/32"], [], 1n, 0n],
  [["192.0.2.10-192.0.2.20"], ["192.0.2.10"], 10n, 0n],
  // an IPv6 CIDR's subnet-router anycast address (all-zero host) is never handed out
  [["2001:db8::/120"], [], 0n, 255n],
  [["2001:db8::/127"], [], 0n, 2n],
  [["2001:db8::0-2001:db8::ff"], [], 0n, 256n],
  [["192.0.2.0/28", "2001:db8::/126"], ["2001:db8::1"], 14n, 2n],
  // overlapping entries are counted once
  [["192.0.2.10-192.0.2.20", "192.0.2.15-192.0.2.25"], [], 0n + 16n, 0n],
  // a reserved address outside the pool changes nothing
  [["192.0.2.0/30"], ["198.51.100.1"], 2n, 0n],
];

for (const [addresses, reserved, ipv4, ipv6] of CASES) {
  Deno.test(`poolCapacity() of ${addresses.join(", ")} minus [${reserved.join(", ")}]`, () => {
    assert.deepEqual(poolCapacity(pool(addresses, reserved)), { ipv4, ipv6 });
  });
}

Deno.test("poolUsableIntervals() leaves out network, broadcast and reserved addresses", () => {
  const intervals = poolUsableIntervals(pool(["192.0.2.0/29"], ["192.0.2.3"]));
  assert.deepEqual(intervals.map((i) => [i.first & 0xffn, i.last & 0xffn]), [[1n, 2n], [4n, 6n]]);
});

Deno.test("poolUsableIntervals() is O(n log n): 100k reserved singles in a /16", () => {
  const reserved = Array.from(
    { length: 100_000 },
    (_, i) => `10.${1 + (i >> 8) % 200}.${i & 255}.0`,
  )
    .filter((_, i) => i < 50_000);
  const intervals = poolUsableIntervals(pool(["10.0.0.0/8"], reserved));
  const total = intervals.reduce((n, i) => n + i.last - i.first + 1n, 0n);
  assert.equal(total, (1n << 24n) - 2n - BigInt(new Set(reserved).size));
});
