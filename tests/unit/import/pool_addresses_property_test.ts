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
import { parse } from "smol-toml";
import { importKubeVip } from "../../../src/import/kube_vip.ts";
import { importMetallb } from "../../../src/import/metallb.ts";
import { metallbEntry } from "../../../src/import/metallb_pools.ts";
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

/** kube-vip's addresses of one value (ipam's addressbuilder, then FindFreeAddress's .0/.255). */
function kubeVipModel(value: string, skipEnds: boolean): Set<string> {
  const union = new Set<bigint>();
  const out = new Set<string>();
  if (value.includes("/")) {
    for (const entry of value.split(",")) {
      const [addr, bits] = entry.split("/");
      const size = 1n << BigInt(32 - Number(bits));
      const first = (metallbEntry(`${addr}/32`)!.first / size) * size;
      for (let v = first; v < first + size; v++) union.add(v);
    }
    // the union as the fewest prefixes; with skipEnds each of /30 or wider loses its ends
    const sorted = [...union].sort((a, b) => a < b ? -1 : 1);
    let i = 0;
    while (i < sorted.length) {
      const start = sorted[i]!;
      let size = 1n;
      while (start % (size * 2n) === 0n) {
        let whole = true;
        for (let v = start + size; v < start + size * 2n; v++) if (!union.has(v)) whole = false;
        if (!whole) break;
        size *= 2n;
      }
      for (let v = start; v < start + size; v++) {
        if (skipEnds && size >= 4n && (v === start || v === start + size - 1n)) continue;
        out.add(`4:${v}`);
      }
      i += Number(size);
    }
  } else {
    for (const entry of value.split(",")) {
      const [a, b] = entry.split("-").map((t) => metallbEntry(`${t}/32`)!.first);
      for (let v = a!; v <= b!; v++) out.add(`4:${v}`);
    }
  }
  for (const k of [...out]) if (buggy(k)) out.delete(k);
  return out;
}

Deno.test("property: kube-vip's lookup order and reading, namespace by namespace", () => {
  const KEYS = ["cidr-global", "range-global", "cidr-a", "range-a", "cidr-b", "range-b"];
  const at = fc.integer({ min: 0, max: 1023 });
  const cidrList = fc.array(
    fc.record({ at, prefix: fc.integer({ min: 26, max: 32 }) }).map(({ at, prefix }) =>
      `${formatIp(4, V4_BASE + BigInt(at))}/${prefix}`
    ),
    { minLength: 1, maxLength: 3 },
  ).map((l) => l.join(","));
  const rangeList = fc.array(
    fc.record({ at, size: fc.integer({ min: 0, max: 60 }) }).map(({ at, size }) =>
      `${formatIp(4, V4_BASE + BigInt(at))}-${formatIp(4, V4_BASE + BigInt(at + size))}`
    ),
    { minLength: 1, maxLength: 3 },
  ).map((l) => l.join(","));
  let imported = 0, refused = 0;
  fc.assert(
    fc.property(
      fc.dictionary(fc.constantFrom(...KEYS), fc.oneof(cidrList, rangeList), { minKeys: 1 }),
      fc.boolean(),
      (pools, skipEnds) => {
        const data: Record<string, string> = { ...pools };
        if (skipEnds) data["skip-end-ips-in-cidr"] = "true";
        const first = (ns: string) =>
          [`cidr-${ns}`, "cidr-global", `range-${ns}`, "range-global"].find((k) => k in pools);
        // the key each namespace takes, and the address set it gives
        const chosen = new Map<string, string>();
        for (const ns of ["a", "b", "other"]) {
          const key = first(ns);
          if (key !== undefined) chosen.set(ns, key);
        }
        const sets = new Map(
          [...new Set(chosen.values())].map((k) => [k, kubeVipModel(pools[k]!, skipEnds)]),
        );
        const keys = [...sets.keys()];
        const overlap = keys.some((k, i) =>
          keys.slice(i + 1).some((l) => [...sets.get(k)!].some((x) => sets.get(l)!.has(x)))
        );
        let inventory: string;
        try {
          inventory = importKubeVip(
            JSON.stringify({ kind: "ConfigMap", metadata: { name: "kubevip" }, data }),
            { source: "kubevip.json" },
          );
        } catch (error) {
          // refused only for an overlap the model sees too, or a pool with no usable address
          const message = (error as Error).message;
          const empty = [...sets.values()].some((s) => s.size === 0);
          assert.ok(
            (overlap && / share /.test(message)) || (empty && /holds no address/.test(message)),
            `${message}\n${JSON.stringify(data)}`,
          );
          refused++;
          return;
        }
        assert.ok(!overlap, `overlap not refused: ${JSON.stringify(data)}`);
        const names = (parse(inventory) as { pools: { name: string }[] }).pools.map((p) => p.name);
        for (const [ns, key] of chosen) {
          const pool = names.includes(ns) ? ns : "global";
          assert.equal(pool === "global", key.endsWith("-global"), `${ns} takes ${key}`);
          sameSet(keelsonSet(inventory, pool), sets.get(key)!, `${ns}: ${JSON.stringify(data)}`);
        }
        imported++;
      },
    ),
    { numRuns: RUNS, seed: 2606 },
  );
  // both outcomes were exercised
  assert.ok(imported > 50 && refused > 10, `${imported} imported, ${refused} refused`);
});

/** One pool written in each form MetalLB has read over its versions. */
function metallbSource(
  form: "IPAddressPool" | "AddressPool" | "ConfigMap" | "config",
  protocol: "bgp" | "layer2",
  addresses: string[],
  avoidBuggyIPs: boolean,
  autoAssign: boolean,
): string {
  const list = (...items: unknown[]) => JSON.stringify({ apiVersion: "v1", kind: "List", items });
  const spec = { addresses, avoidBuggyIPs, autoAssign };
  const config = "address-pools:\n- name: p\n  protocol: " + protocol +
    `\n  avoid-buggy-ips: ${avoidBuggyIPs}\n  auto-assign: ${autoAssign}\n  addresses:\n` +
    addresses.map((a) => `  - ${a}\n`).join("");
  switch (form) {
    case "IPAddressPool":
      return list(
        { apiVersion: "metallb.io/v1beta1", kind: "IPAddressPool", metadata: { name: "p" }, spec },
        {
          apiVersion: "metallb.io/v1beta1",
          kind: protocol === "bgp" ? "BGPAdvertisement" : "L2Advertisement",
          metadata: { name: "a" },
        },
      );
    case "AddressPool":
      return list({
        apiVersion: "metallb.io/v1beta1",
        kind: "AddressPool",
        metadata: { name: "p" },
        spec: { ...spec, protocol },
      });
    case "ConfigMap":
      return list({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "config", namespace: "metallb-system" },
        data: { config },
      });
    case "config":
      return config;
  }
}

Deno.test("property: every MetalLB form (0.12 ConfigMap, its text, AddressPool, IPAddressPool) keeps the pool", () => {
  let checked = 0;
  fc.assert(
    fc.property(
      fc.constantFrom("IPAddressPool", "AddressPool", "ConfigMap", "config") as fc.Arbitrary<
        "IPAddressPool" | "AddressPool" | "ConfigMap" | "config"
      >,
      fc.constantFrom("bgp", "layer2") as fc.Arbitrary<"bgp" | "layer2">,
      fc.array(fc.oneof(v4Entry, v6Entry), { minLength: 1, maxLength: 4 }),
      fc.boolean(),
      fc.boolean(),
      (form, protocol, addresses, avoidBuggyIPs, autoAssign) => {
        const inventory = importMetallb(
          metallbSource(form, protocol, addresses, avoidBuggyIPs, autoAssign),
          { source: "p" },
        );
        const expected = new Set<string>();
        for (const entry of addresses) {
          const i = metallbEntry(entry)!;
          enumerate(i.family, i.first, i.last, expected);
        }
        if (avoidBuggyIPs) { for (const k of [...expected]) if (buggy(k)) expected.delete(k); }
        const what = JSON.stringify({ form, protocol, addresses, avoidBuggyIPs, autoAssign });
        sameSet(keelsonSet(inventory, "p"), expected, what);
        const pool = (parse(inventory) as {
          pools: { name: string; announce: string; auto_assign: boolean }[];
        }).pools.find((p) => p.name === "p")!;
        assert.equal(pool.announce, protocol === "bgp" ? "bgp" : "vrrp", what);
        assert.equal(pool.auto_assign, autoAssign, what);
        checked++;
      },
    ),
    { numRuns: RUNS, seed: 2607 },
  );
  assert.equal(checked, RUNS);
});

Deno.test("property: a pool restricted by namespace selectors is never offered wider", () => {
  let checked = 0;
  fc.assert(
    fc.property(
      fc.subarray(["web", "shop", "ops"]),
      fc.boolean(),
      fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
      (namespaces, autoAssign, priority) => {
        const lost: string[] = [];
        const inventory = importMetallb(
          JSON.stringify({
            kind: "List",
            items: [{
              apiVersion: "metallb.io/v1beta1",
              kind: "IPAddressPool",
              metadata: { name: "p" },
              spec: {
                addresses: ["192.0.2.0/28"],
                autoAssign,
                serviceAllocation: {
                  priority,
                  namespaces,
                  namespaceSelectors: [{ matchLabels: { tier: "gold" } }],
                },
              },
            }],
          }),
          { source: "p", restrictionsLost: lost },
        );
        const pool = (parse(inventory) as {
          pools: { auto_assign: boolean; service_allocation?: { namespaces?: string[] } }[];
        }).pools[0]!;
        const offered = pool.service_allocation?.namespaces ?? [];
        // MetalLB offered it to the listed namespaces OR the selected ones: Keelson offers it
        // automatically only to listed ones, or to none
        if (pool.auto_assign) {
          assert.ok(
            autoAssign && offered.length > 0 && offered.every((n) => namespaces.includes(n)),
          );
        }
        assert.equal(lost.length, 1);
        checked++;
      },
    ),
    { numRuns: 100, seed: 2608 },
  );
  assert.equal(checked, 100);
});
