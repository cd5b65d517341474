/**
 * How many addresses a pool can hand out, per family. Pure; shared by `keelson check`'s summary,
 * IPAM and the pool metrics.
 *
 * @module
 */
import { compareRangeStarts, type IpFamily, type IpRange, parseRange } from "../net/ip.ts";
import type { Pool } from "./types.ts";

/** An inclusive interval of one family. */
export interface AddressInterval {
  family: IpFamily;
  first: bigint;
  last: bigint;
}

/**
 * The addresses a pool may allocate, as sorted, disjoint intervals: its ranges merged, without
 * the network and broadcast addresses of IPv4 CIDRs shorter than /31, without the subnet-router
 * anycast address (the all-zero host, RFC 4291 §2.6.1) of IPv6 CIDRs shorter than /127, without
 * reserved addresses. O(n log n) in the number of entries.
 * Entries that do not parse are skipped (the config check reports them).
 * @param pool a pool from the validated config
 * @returns intervals sorted by family, then first address
 */
export function poolUsableIntervals(pool: Pool): AddressInterval[] {
  const usable: AddressInterval[] = [];
  for (const text of pool.addresses) {
    const range = parseRange(text);
    if ("error" in range) continue;
    usable.push(usableInterval(range));
  }
  const reserved = pool.reserved.map((r) => parseRange(r)).filter((r): r is IpRange =>
    !("error" in r)
  );
  return subtract(mergeIntervals(usable), mergeIntervals(reserved));
}

/**
 * Usable addresses of a pool per family (see `poolUsableIntervals`).
 * @param pool a pool from the validated config
 * @returns counts per family
 * @example
 * ```ts
 * poolCapacity({ name: "p", addresses: ["192.0.2.0/24"], reserved: ["192.0.2.1"],
 *   auto_assign: true, namespaces: [] }); // { ipv4: 253n, ipv6: 0n }
 * ```
 */
export function poolCapacity(pool: Pool): { ipv4: bigint; ipv6: bigint } {
  const total = { ipv4: 0n, ipv6: 0n };
  for (const interval of poolUsableIntervals(pool)) {
    const size = interval.last - interval.first + 1n;
    if (interval.family === 4) total.ipv4 += size;
    else total.ipv6 += size;
  }
  return total;
}

/**
 * Sorts and merges overlapping or adjacent intervals of the same family.
 * @param intervals any intervals
 * @returns disjoint intervals sorted by family, then first address
 */
export function mergeIntervals(intervals: readonly AddressInterval[]): AddressInterval[] {
  const sorted = intervals
    .filter((r) => r.first <= r.last)
    .map((r) => ({ family: r.family, first: r.first, last: r.last }))
    .sort(compareRangeStarts);
  const merged: AddressInterval[] = [];
  for (const interval of sorted) {
    const last = merged[merged.length - 1];
    if (last && last.family === interval.family && interval.first <= last.last + 1n) {
      if (interval.last > last.last) last.last = interval.last;
    } else merged.push(interval);
  }
  return merged;
}

function usableInterval(range: IpRange): AddressInterval {
  // an IPv4 CIDR shorter than /31 has network and broadcast addresses no host can use
  if (range.family === 4 && range.prefix !== undefined && range.prefix < 31) {
    return { family: 4, first: range.first + 1n, last: range.last - 1n };
  }
  // an IPv6 CIDR's all-zero host is the subnet-router anycast address every router answers
  if (range.family === 6 && range.prefix !== undefined && range.prefix < 127) {
    return { family: 6, first: range.first + 1n, last: range.last };
  }
  return { family: range.family, first: range.first, last: range.last };
}

/** `intervals` minus `holes`, both sorted and disjoint (`mergeIntervals`): one sweep. */
function subtract(
  intervals: readonly AddressInterval[],
  holes: readonly AddressInterval[],
): AddressInterval[] {
  const out: AddressInterval[] = [];
  let h = 0;
  for (const interval of intervals) {
    let piece: AddressInterval | undefined = { ...interval };
    // holes wholly before this interval can be passed for good: intervals are sorted too
    while (
      h < holes.length && compareRangeStarts(holes[h]!, piece) < 0 && !touches(holes[h]!, piece)
    ) h++;
    for (let k = h; k < holes.length && piece !== undefined; k++) {
      const hole = holes[k]!;
      if (hole.family !== piece.family || hole.first > piece.last) break;
      if (hole.last < piece.first) continue;
      if (hole.first > piece.first) out.push({ ...piece, last: hole.first - 1n });
      piece = hole.last < piece.last ? { ...piece, first: hole.last + 1n } : undefined;
    }
    if (piece !== undefined) out.push(piece);
  }
  return out;
}

function touches(hole: AddressInterval, piece: AddressInterval): boolean {
  return hole.family === piece.family && hole.last >= piece.first;
}
