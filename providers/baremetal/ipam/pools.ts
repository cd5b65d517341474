/**
 * Address pools as the allocator sees them: the `[[pools]]` entries of the inventory turned into
 * sorted, merged spans of usable addresses per family, computed by `poolUsableIntervals`
 * (src/config/pool_size.ts) so `keelson check`, the metrics and the allocator count alike: reserved
 * addresses and the network and broadcast addresses of IPv4 CIDRs shorter than /31 are cut out.
 * Pure: no I/O.
 *
 * @module
 */
import type { Pool } from "../../../src/config/types.ts";
import { poolCapacity, poolUsableIntervals } from "../../../src/config/pool_size.ts";
import { type IpFamily, type IpRange, parseRange, rangeHolds } from "../../../src/net/ip.ts";
import { compareCodeUnits } from "../../../src/text/code_unit_order.ts";
import type { LabelSelector } from "../../../src/kube/label_selector.ts";

/** An inclusive span of address values of one family. */
export interface Span {
  first: bigint;
  last: bigint;
}

/** Why an address of a pool's ranges cannot be handed out. */
export type ExcludedWhy = "reserved" | "network" | "broadcast";

/** One pool, ready for allocation. */
export interface AddressPool {
  /** The pool's name from the inventory. */
  readonly name: string;
  /** Whether Services without a pool or address request may get addresses from it. */
  readonly autoAssign: boolean;
  /** Where the pool stands in the inventory file (0 = first): the last tie-break of the order. */
  readonly order: number;
  /** `service_allocation.priority`: lower is tried first; undefined comes after every number. */
  readonly priority: number | undefined;
  /**
   * Whether the pool has a `service_allocation` table (or the older pool-level `namespaces`):
   * such a pool serves only the Services it selects, and is tried before pools without one.
   */
  readonly selects: boolean;
  /** Namespaces whose Services may use the pool; empty = every namespace. */
  readonly namespaces: readonly string[];
  /** Service label selectors; the Service must match one of them. Empty = every Service. */
  readonly serviceSelectors: readonly LabelSelector[];
  /** The ranges as written, parsed (for messages and membership). */
  readonly ranges: readonly IpRange[];
  /** Usable addresses per family: sorted, merged, without excluded ones. */
  readonly usable: { readonly 4: readonly Span[]; readonly 6: readonly Span[] };
  /** Number of usable addresses per family (`poolCapacity` of src/config/pool_size.ts). */
  readonly capacity: { readonly 4: bigint; readonly 6: bigint };
  /** Addresses inside the ranges that are never handed out, with why. */
  readonly excluded: ReadonlyMap<string, ExcludedWhy>;
  /** Excluded reserved ranges (reserved entries may be ranges or CIDRs). */
  readonly reserved: readonly IpRange[];
  /** Entries that did not parse; validation should have rejected them, so they are skipped. */
  readonly problems: readonly string[];
}

/**
 * Builds allocation pools from the inventory's pools, sorted by name so listings and stats are
 * stable; the order in which pools are tried is `poolsToTry` (pool_order.ts), not this one.
 * @param pools the validated `[[pools]]` entries, in file order
 * @returns one `AddressPool` per entry, sorted by name
 */
export function buildPools(pools: readonly Pool[]): AddressPool[] {
  return pools.map((pool, order) => buildPool(pool, order)).sort((a, b) =>
    compareCodeUnits(a.name, b.name)
  );
}

/**
 * Builds one allocation pool.
 * @param pool one validated `[[pools]]` entry
 * @param order its index among the file's pools. @default 0
 * @returns the pool with its usable spans
 */
export function buildPool(pool: Pool, order = 0): AddressPool {
  const problems: string[] = [];
  const ranges = parseAll(pool.addresses, `pool "${pool.name}" address`, problems);
  const reserved = parseAll(pool.reserved, `pool "${pool.name}" reserved address`, problems);
  const excluded = new Map<string, ExcludedWhy>();
  for (const range of ranges) {
    // mirrors poolUsableIntervals: IPv4 CIDRs shorter than /31 lose network and broadcast
    if (range.family === 4 && range.prefix !== undefined && range.prefix < 31) {
      excluded.set(key(4, range.first), "network");
      excluded.set(key(4, range.last), "broadcast");
    }
    // and IPv6 CIDRs shorter than /127 lose the subnet-router anycast address (all-zero host)
    if (range.family === 6 && range.prefix !== undefined && range.prefix < 127) {
      excluded.set(key(6, range.first), "network");
    }
  }
  for (const r of reserved.filter((r) => r.first === r.last)) {
    excluded.set(key(r.family, r.first), "reserved");
  }
  const intervals = poolUsableIntervals(pool);
  const usable = {
    4: intervals.filter((i) => i.family === 4).map(({ first, last }) => ({ first, last })),
    6: intervals.filter((i) => i.family === 6).map(({ first, last }) => ({ first, last })),
  };
  const { ipv4, ipv6 } = poolCapacity(pool);
  const allocation = pool.service_allocation;
  return {
    name: pool.name,
    autoAssign: pool.auto_assign,
    order,
    priority: allocation?.priority,
    selects: allocation !== undefined || pool.namespaces.length > 0,
    // the schema refuses both lists at once, so one of them is empty
    namespaces: [...pool.namespaces, ...(allocation?.namespaces ?? [])],
    serviceSelectors: allocation?.service_selectors ?? [],
    ranges,
    usable,
    capacity: { 4: ipv4, 6: ipv6 },
    excluded,
    reserved,
    problems,
  };
}

/**
 * Where an address stands in a pool.
 * @param pool a built pool
 * @param family the address family
 * @param value the address value
 * @returns `usable`, `outside` (not in the pool's ranges), or why it is excluded
 */
export function addressStanding(
  pool: AddressPool,
  family: IpFamily,
  value: bigint,
): "usable" | "outside" | ExcludedWhy {
  if (!pool.ranges.some((r) => rangeHolds(r, { family, value }))) {
    return "outside";
  }
  if (isUsable(pool, family, value)) return "usable";
  return pool.excluded.get(key(family, value)) ?? "reserved";
}

/**
 * Whether the pool may hand out the address (binary search over its usable spans).
 * @param pool a built pool
 * @param family the address family
 * @param value the address value
 * @returns true when a usable span holds it
 */
export function isUsable(pool: AddressPool, family: IpFamily, value: bigint): boolean {
  const spans = pool.usable[family];
  let low = 0;
  let high = spans.length - 1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    const span = spans[mid]!;
    if (value < span.first) high = mid - 1;
    else if (value > span.last) low = mid + 1;
    else return true;
  }
  return false;
}

/**
 * True when Services of `namespace` may take addresses from the pool.
 * @param pool a built pool
 * @param namespace the Service's namespace
 * @returns whether the pool's namespace list is empty or names it
 */
export function poolAllowsNamespace(pool: AddressPool, namespace: string): boolean {
  return pool.namespaces.length === 0 || pool.namespaces.includes(namespace);
}

/**
 * Whether the pool has any usable address of `family`.
 * @param pool a built pool
 * @param family 4 or 6
 * @returns true when at least one usable span exists
 */
export function poolHasFamily(pool: AddressPool, family: IpFamily): boolean {
  return pool.usable[family].length > 0;
}

/**
 * The map key of an address: family and value, independent of how the text was written.
 * @param family 4 or 6
 * @param value the address value
 * @returns e.g. `4:167772161`
 */
export function key(family: IpFamily, value: bigint): string {
  return `${family}:${value}`;
}

function parseAll(texts: readonly string[], what: string, problems: string[]): IpRange[] {
  const out: IpRange[] = [];
  for (const text of texts) {
    const range = parseRange(text);
    if ("error" in range) problems.push(`Cannot read ${what} "${text}": ${range.error}`);
    else out.push(range);
  }
  return out;
}
