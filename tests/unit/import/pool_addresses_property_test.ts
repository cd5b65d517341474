/**
 * Property: a pool `keelson import metallb` writes holds exactly the addresses MetalLB would hand
 * out from the source pool. Random IPAddressPools (CIDRs with host bits, ranges, single-address
 * CIDRs, IPv4 and IPv6, overlapping or not, avoidBuggyIPs on or off) go through the whole import;
 * the written pool goes through the inventory schema and the allocator's pool model
 * (`buildPool`), whose usable addresses are compared, address by address, with MetalLB's model:
 * every address of every entry (a CIDR's network and broadcast included), minus the IPv4
 * addresses ending in .0 or .255 when avoidBuggyIPs is set. The same for kube-vip's ConfigMap,
 * whose model skips .0/.255 always and, with skip-end-ips-in-cidr, the ends of each CIDR.
 * Seeded, so a failure repeats.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { importKubeVip } from "../../../src/import/kube_vip.ts";
import { importMetallb, metallbEntry } from "../../../src/import/metallb.ts";
import { formatIp } from "../../../src/net/ip.ts";
import { buggy, enumerate, keelsonSet, sameSet } from "./_address_sets.ts";

const RUNS = 300;
const V4_BASE = 0x0a400000n; // 10.64.0.0
const V6_BASE = 0x20010db8000000000000000000000000n; // 2001:db8::

/** One MetalLB `addresses` entry near the bases (small, so both sides can be enumerated). */
const v4Entry = fc.oneof(
  fc.record({ at: fc.integer({ min: 0, max: 2047 }), prefix: fc.integer({ min: 22, max: 32 }) })
    .map(({ at, prefix }) => `${formatIp(4, V4_BASE + BigInt(at))}/${prefix}`),
  fc.record({ at: fc.integer({ min: 0, max: 2047 }), size: fc.integer({ min: 0, max: 700 }) })
    .map(({ at, size }) =>
      `${formatIp(4, V4_BASE + BigInt(at))}-${formatIp(4, V4_BASE + BigInt(at + size))}`
    ),
);
const v6Entry = fc.oneof(
  fc.record({ at: fc.integer({ min: 0, max: 4095 }), prefix: fc.integer({ min: 119, max: 128 }) })
    .map(({ at, prefix }) => `${formatIp(6, V6_BASE + BigInt(at))}/${prefix}`),
  fc.record({ at: fc.integer({ min: 0, max: 4095 }), size: fc.integer({ min: 0, max: 300 }) })
    .map(({ at, size }) =>
      `${formatIp(6, V6_BASE + BigInt(at))}-${formatIp(6, V6_BASE + BigInt(at + size))}`
    ),
);

Deno.test("property: an imported MetalLB pool holds exactly the source pool's addresses", () => {
  let checked = 0;
  fc.assert(
    fc.property(
      fc.array(fc.oneof(v4Entry, v6Entry), { minLength: 1, maxLength: 6 }),
      fc.boolean(),
      (addresses, avoidBuggyIPs) => {
        const source = JSON.stringify({
          apiVersion: "v1",
          kind: "List",
          items: [{
            apiVersion: "metallb.io/v1beta1",
            kind: "IPAddressPool",
            metadata: { name: "p" },
            spec: { addresses, avoidBuggyIPs },
          }],
        });
        const expected = new Set<string>();
        for (const entry of addresses) {
          const i = metallbEntry(entry)!;
          enumerate(i.family, i.first, i.last, expected);
        }
        if (avoidBuggyIPs) { for (const k of [...expected]) if (buggy(k)) expected.delete(k); }
        const inventory = importMetallb(source, { source: "p.json" });
        sameSet(keelsonSet(inventory, "p"), expected, JSON.stringify({ addresses, avoidBuggyIPs }));
        checked++;
      },
    ),
    { numRuns: RUNS, seed: 2604 },
  );
  assert.equal(checked, RUNS);
});

Deno.test("property: an imported kube-vip pool holds exactly the addresses kube-vip hands out", () => {
  let checked = 0;
  const cidr = fc.record({
    at: fc.integer({ min: 0, max: 2047 }),
    prefix: fc.integer({ min: 22, max: 32 }),
  });
  fc.assert(
    fc.property(
      fc.array(cidr, { minLength: 1, maxLength: 5 }),
      fc.boolean(),
      (entries, skipEnds) => {
        const texts = entries.map((e) => {
          const size = 1n << BigInt(32 - e.prefix);
          return { first: ((V4_BASE + BigInt(e.at)) / size) * size, size, prefix: e.prefix };
        });
        const data: Record<string, string> = {
          "cidr-global": texts.map((t) => `${formatIp(4, t.first)}/${t.prefix}`).join(","),
        };
        if (skipEnds) data["skip-end-ips-in-cidr"] = "true";
        // kube-vip's model: the union split into the fewest prefixes; each IPv4 prefix shorter
        // than /31 loses its ends with skip-end-ips-in-cidr; .0 and .255 are never handed out
        const union = new Set<bigint>();
        for (const t of texts) for (let v = t.first; v < t.first + t.size; v++) union.add(v);
        const sorted = [...union].sort((a, b) => a < b ? -1 : 1);
        const expected = new Set<string>();
        let i = 0;
        while (i < sorted.length) {
          let size = 1n;
          const start = sorted[i]!;
          const run = (n: bigint) => union.has(start + n - 1n);
          while (
            start % (size * 2n) === 0n &&
            [...Array(Number(size))].every((_, k) => run(size + BigInt(k) + 1n))
          ) {
            size *= 2n;
          }
          for (let v = start; v < start + size; v++) {
            const end = v === start || v === start + size - 1n;
            if (skipEnds && size >= 4n && end) continue;
            if (v % 256n === 0n || v % 256n === 255n) continue;
            expected.add(`4:${v}`);
          }
          i += Number(size);
        }
        const inventory = importKubeVip(
          JSON.stringify({ kind: "ConfigMap", metadata: { name: "kubevip" }, data }),
          { source: "kubevip.json" },
        );
        sameSet(keelsonSet(inventory, "global"), expected, JSON.stringify(data));
        checked++;
      },
    ),
    { numRuns: RUNS, seed: 2605 },
  );
  assert.equal(checked, RUNS);
});
