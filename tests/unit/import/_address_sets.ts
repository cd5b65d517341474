/**
 * Address sets for the import tests: what Keelson's allocator may hand out from an imported pool
 * (the inventory schema and the allocator's pool model), as `family:value` keys, and their
 * comparison with a model of the source controller.
 */
import assert from "node:assert/strict";
import { parse } from "smol-toml";
import { PoolSchema } from "../../../src/config/schema.ts";
import { buildPool } from "../../../providers/baremetal/ipam/pools.ts";

/** Adds `first`..`last` of the family to the set. */
export function enumerate(family: 4 | 6, first: bigint, last: bigint, into: Set<string>): void {
  for (let v = first; v <= last; v++) into.add(`${family}:${v}`);
}

/** The addresses Keelson's allocator may hand out from the imported pool. */
export function keelsonSet(inventory: string, name: string): Set<string> {
  const pools = (parse(inventory) as { pools: unknown[] }).pools;
  const raw = pools.find((p) => (p as { name: string }).name === name);
  assert.ok(raw, `the inventory has a pool named ${name}`);
  const pool = buildPool(PoolSchema.parse(raw));
  assert.deepEqual(pool.problems, []);
  const out = new Set<string>();
  for (const family of [4, 6] as const) {
    for (const span of pool.usable[family]) enumerate(family, span.first, span.last, out);
  }
  return out;
}

/** Whether the key is an IPv4 address ending in .0 or .255. */
export const buggy = (key: string): boolean => {
  const [family, value] = key.split(":");
  return family === "4" && [0n, 255n].includes(BigInt(value!) % 256n);
};

/** Asserts the two sets are equal, naming a few addresses that differ. */
export function sameSet(actual: Set<string>, expected: Set<string>, what: string): void {
  const missing = [...expected].filter((k) => !actual.has(k)).slice(0, 5);
  const extra = [...actual].filter((k) => !expected.has(k)).slice(0, 5);
  assert.deepEqual({ missing, extra }, { missing: [], extra: [] }, what);
}
