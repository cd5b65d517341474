/**
 * A pool's addresses as another controller hands them out, written as Keelson `addresses` and
 * `reserved` entries that hold exactly the same addresses. MetalLB and kube-vip hand out a CIDR's
 * network and broadcast addresses unless told otherwise, while a Keelson CIDR never does; MetalLB's
 * `avoidBuggyIPs` and kube-vip skip every IPv4 address ending in .0 or .255, which Keelson has only
 * as `reserved` entries. So each entry is written as a CIDR only where Keelson's reading of it is
 * the source's, and as a range otherwise; what the source skipped inside becomes `reserved`. Pure.
 *
 * @module
 */
import { type AddressInterval, mergeIntervals } from "../config/pool_size.ts";
import { compareRangeStarts, formatIp, formatSpan, type IpFamily, rangeHolds } from "../net/ip.ts";

/** The most IPv4 addresses whose .0 and .255 are listed one by one (a /8). */
export const MAX_SKIPPED_SPAN = 1n << 24n;

/** A pool's entries in Keelson's words. */
export interface KeelsonAddresses {
  addresses: string[];
  reserved: string[];
}

/**
 * Addresses ending in .0 or .255 inside IPv4 intervals (IPv6 intervals hold none), as intervals:
 * an x.255 and the x+1.0 after it form one.
 * @param intervals the pool's intervals
 * @returns the skipped addresses, sorted and merged
 * @throws {RangeError} when an interval is larger than a /8 (the list would be unbounded)
 */
export function dotZeroAndBroadcast(intervals: readonly AddressInterval[]): AddressInterval[] {
  const out: AddressInterval[] = [];
  for (const { family, first, last } of mergeIntervals(intervals)) {
    if (family !== 4) continue;
    if (last - first + 1n > MAX_SKIPPED_SPAN) {
      throw new RangeError(
        `${formatIp(4, first)}-${formatIp(4, last)} is larger than a /8; its .0 and .255 ` +
          "addresses would be listed one by one",
      );
    }
    for (let block = first >> 8n; block <= last >> 8n; block++) {
      for (const value of [block << 8n, (block << 8n) + 255n]) {
        if (value >= first && value <= last) out.push({ family: 4, first: value, last: value });
      }
    }
  }
  return mergeIntervals(out);
}

/**
 * Writes a pool for Keelson: overlapping entries merged, each block as a CIDR when Keelson's
 * CIDR reading (network and broadcast, or IPv6's all-zero host, never handed out) matches what
 * the source skips, else as a range or single address; the skipped addresses left over as
 * `reserved`.
 * @param intervals the source pool's entries as intervals (any order, may overlap)
 * @param skipped addresses inside them the source never hands out
 * @returns entries whose usable addresses are exactly `intervals` minus `skipped`
 */
export function keelsonAddresses(
  intervals: readonly AddressInterval[],
  skipped: readonly AddressInterval[],
): KeelsonAddresses {
  const blocks = mergeOverlapping(intervals);
  const excluded = mergeIntervals(skipped);
  const isExcluded = (family: IpFamily, value: bigint) =>
    excluded.some((e) => rangeHolds(e, { family, value }));
  const addresses: string[] = [];
  const covered: AddressInterval[] = [];
  for (const block of blocks) {
    const prefix = prefixOf(block);
    const width = block.family === 4 ? 32 : 128;
    const cutByCidr = prefix === undefined || prefix >= width - 1
      ? []
      : block.family === 4
      ? [block.first, block.last]
      : [block.first];
    if (
      prefix !== undefined && cutByCidr.length > 0 &&
      cutByCidr.every((v) => isExcluded(block.family, v))
    ) {
      addresses.push(`${formatIp(block.family, block.first)}/${prefix}`);
      for (const v of cutByCidr) covered.push({ family: block.family, first: v, last: v });
    } else addresses.push(formatSpan(block));
  }
  const reserved = subtractIntervals(excluded, mergeIntervals(covered)).map(formatSpan);
  return { addresses, reserved };
}

/** The prefix length when the interval is exactly one CIDR. */
function prefixOf(span: AddressInterval): number | undefined {
  const size = span.last - span.first + 1n;
  if ((size & (size - 1n)) !== 0n || span.first % size !== 0n) return undefined;
  const width = span.family === 4 ? 32 : 128;
  return width - (size.toString(2).length - 1);
}

/**
 * Merges intervals that share an address; adjacent ones stay apart, and the result keeps the
 * order they were written in (by each block's first entry).
 */
function mergeOverlapping(intervals: readonly AddressInterval[]): AddressInterval[] {
  const sorted = intervals.map((i, order) => ({ ...i, order })).sort((a, b) =>
    compareRangeStarts(a, b)
  );
  const out: (AddressInterval & { order: number })[] = [];
  for (const interval of sorted) {
    const last = out.at(-1);
    if (last && last.family === interval.family && interval.first <= last.last) {
      if (interval.last > last.last) last.last = interval.last;
      last.order = Math.min(last.order, interval.order);
    } else out.push(interval);
  }
  return out.sort((a, b) => a.order - b.order)
    .map(({ family, first, last }) => ({ family, first, last }));
}

/**
 * The addresses of `a` that no interval of `cuts` holds.
 * @param a intervals
 * @param cuts the addresses to leave out
 * @returns what is left of each interval of `a`, in `a`'s order
 */
export function subtractIntervals(
  a: readonly AddressInterval[],
  cuts: readonly AddressInterval[],
): AddressInterval[] {
  const out: AddressInterval[] = [];
  for (const interval of a) {
    let pieces = [{ ...interval }];
    for (const cut of cuts) {
      if (cut.family !== interval.family) continue;
      pieces = pieces.flatMap((p) => {
        if (cut.last < p.first || cut.first > p.last) return [p];
        const left = cut.first > p.first ? [{ ...p, last: cut.first - 1n }] : [];
        const right = cut.last < p.last ? [{ ...p, first: cut.last + 1n }] : [];
        return [...left, ...right];
      });
    }
    out.push(...pieces);
  }
  return out;
}

/**
 * The addresses both `a` and `b` hold.
 * @param a intervals
 * @param b intervals
 * @returns the shared addresses, sorted and merged
 */
export function intersectIntervals(
  a: readonly AddressInterval[],
  b: readonly AddressInterval[],
): AddressInterval[] {
  const out: AddressInterval[] = [];
  for (const x of a) {
    for (const y of b) {
      if (x.family !== y.family) continue;
      const first = x.first > y.first ? x.first : y.first;
      const last = x.last < y.last ? x.last : y.last;
      if (first <= last) out.push({ family: x.family, first, last });
    }
  }
  return mergeIntervals(out);
}
