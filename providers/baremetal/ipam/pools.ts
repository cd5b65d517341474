/**
 * Address pools as the allocator sees them: the `[[pools]]` entries of the inventory turned into
 * sorted, merged spans of usable addresses per family. Reserved addresses, and the network and
 * broadcast addresses of IPv4 CIDRs shorter than /31, are cut out of the spans, so "usable" and
 * "capacity" are one computation. Pure: no I/O.
 *
 * @module
 */
import type { Pool } from "../../../src/config/types.ts";
import { type IpFamily, type IpRange, parseRange } from "../../../src/net/ip.ts";

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
  /** Namespaces whose Services may use the pool; empty = every namespace. */
  readonly namespaces: readonly string[];
  /** The ranges as written, parsed (for messages and membership). */
  readonly ranges: readonly IpRange[];
  /** Usable addresses per family: sorted, merged, without excluded ones. */
  readonly usable: { readonly 4: readonly Span[]; readonly 6: readonly Span[] };
  /** Addresses inside the ranges that are never handed out, with why. */
  readonly excluded: ReadonlyMap<string, ExcludedWhy>;
  /** Excluded reserved ranges (reserved entries may be ranges or CIDRs). */
  readonly reserved: readonly IpRange[];
  /** Entries that did not parse; validation should have rejected them, so they are skipped. */
  readonly problems: readonly string[];
}

/**
 * Builds allocation pools from the inventory's pools, sorted by name so choices are deterministic.
 * @param pools the validated `[[pools]]` entries
 * @returns one `AddressPool` per entry, sorted by name
 */
export function buildPools(pools: readonly Pool[]): AddressPool[] {
  return pools.map(buildPool).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * Builds one allocation pool.
 * @param pool one validated `[[pools]]` entry
 * @returns the pool with its usable spans
 */
export function buildPool(pool: Pool): AddressPool {
  const problems: string[] = [];
  const ranges = parseAll(pool.addresses, `pool "${pool.name}" address`, problems);
  const reserved = parseAll(pool.reserved, `pool "${pool.name}" reserved address`, problems);
  const excluded = new Map<string, ExcludedWhy>();
  const usable = { 4: [] as Span[], 6: [] as Span[] };
  for (const family of [4, 6] as const) {
    const cut: Span[] = reserved.filter((r) => r.family === family);
    for (const range of ranges.filter((r) => r.family === family)) {
      // IPv4 networks of /30 and wider lose their network and broadcast addresses; /31 and /32
      // (RFC 3021 point-to-point, single hosts) keep every address
      if (family === 4 && range.prefix !== undefined && range.prefix < 31) {
        cut.push({ first: range.first, last: range.first }, {
          first: range.last,
          last: range.last,
        });
        excluded.set(key(4, range.first), "network");
        excluded.set(key(4, range.last), "broadcast");
      }
    }
    for (const r of reserved.filter((r) => r.family === family && r.first === r.last)) {
      excluded.set(key(family, r.first), "reserved");
    }
    usable[family] = subtractSpans(
      mergeSpans(ranges.filter((r) => r.family === family)),
      mergeSpans(cut),
    );
  }
  return {
    name: pool.name,
    autoAssign: pool.auto_assign,
    namespaces: [...pool.namespaces],
    ranges,
    usable,
    excluded,
    reserved,
    problems,
  };
}

/**
 * Number of addresses a pool can hand out, per family (reserved, network and broadcast excluded).
 * @param pool a built pool
 * @returns the usable address count of each family
 */
export function poolCapacity(pool: AddressPool): { 4: bigint; 6: bigint } {
  const count = (spans: readonly Span[]) =>
    spans.reduce((sum, s) => sum + (s.last - s.first + 1n), 0n);
  return { 4: count(pool.usable[4]), 6: count(pool.usable[6]) };
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
  if (!pool.ranges.some((r) => r.family === family && r.first <= value && value <= r.last)) {
    return "outside";
  }
  if (pool.usable[family].some((s) => s.first <= value && value <= s.last)) return "usable";
  return pool.excluded.get(key(family, value)) ?? "reserved";
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
 * Sorts and merges overlapping or adjacent spans.
 * @param spans any spans of one family
 * @returns sorted disjoint spans covering the same addresses
 */
export function mergeSpans(spans: readonly Span[]): Span[] {
  const sorted = [...spans].sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
  const out: Span[] = [];
  for (const s of sorted) {
    const last = out[out.length - 1];
    if (last && s.first <= last.last + 1n) {
      if (s.last > last.last) last.last = s.last;
    } else {
      out.push({ first: s.first, last: s.last });
    }
  }
  return out;
}

/**
 * The addresses of `from` that are not in `cut`.
 * @param from sorted disjoint spans
 * @param cut sorted disjoint spans
 * @returns sorted disjoint spans
 */
export function subtractSpans(from: readonly Span[], cut: readonly Span[]): Span[] {
  const out: Span[] = [];
  for (const span of from) {
    let first = span.first;
    for (const c of cut) {
      if (c.last < first || c.first > span.last) continue;
      if (c.first > first) out.push({ first, last: c.first - 1n });
      first = c.last + 1n;
      if (first > span.last) break;
    }
    if (first <= span.last) out.push({ first, last: span.last });
  }
  return out;
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
