/**
 * Cross-field checks on `[[pools]]`: ranges that do not parse or hold addresses that are not
 * unicast host addresses, overlaps between pools, pools that hold a machine's address, reserved
 * addresses outside their pool, duplicate names. O(n log n) in the number of entries: a pool of
 * 100k single addresses is checked by sorting, never by comparing every pair. Folder-internal.
 *
 * @module
 */
import {
  canonicalIp,
  compareRangeStarts,
  compareValues,
  type IpFamily,
  type IpRange,
  nonUnicastProblem,
  parseIp,
  parseRange,
  rangeHolds,
} from "../net/ip.ts";
import { ADDRESS_KEYS } from "./_check_machines.ts";
import type { RawIssue } from "./_schema_issues.ts";
import { duplicateName } from "./_duplicate_name.ts";
import { mergeIntervals } from "./pool_size.ts";
import { matchesServedBy } from "./pool_serving.ts";
import type { Machine, Pool } from "./types.ts";

/** A parsed pool entry with where it came from. */
export interface PoolRange {
  pool: number;
  entry: number;
  range: IpRange;
}

/**
 * Checks pools against each other and against machine addresses.
 * @param pools pools by index; undefined where the entry failed the schema
 * @param machines machines by index; undefined where the entry failed the schema
 * @returns the issues, and every pool range that parsed (for the control-plane checks)
 */
export function checkPools(
  pools: readonly (Pool | undefined)[],
  machines: readonly (Machine | undefined)[],
): { issues: RawIssue[]; ranges: PoolRange[] } {
  const issues: RawIssue[] = [];
  const ranges: PoolRange[] = [];
  const names = new Map<string, number>();
  for (const [i, pool] of pools.entries()) {
    if (pool === undefined) continue;
    const dupName = duplicateName(names, ["pools"], "pool", pool.name, i);
    if (dupName) issues.push(dupName.issue);

    const own: PoolRange[] = [];
    for (const [j, text] of pool.addresses.entries()) {
      const range = parseRange(text);
      if ("error" in range) {
        issues.push({
          path: ["pools", i, "addresses", j],
          message: `"${text}" is not an IP range: ${range.error}; ` +
            'expected a CIDR ("192.0.2.0/28"), a range ("192.0.2.10-192.0.2.20") or one address',
        });
        continue;
      }
      const special = nonUnicastProblem(range);
      if (special !== undefined) {
        issues.push({
          path: ["pools", i, "addresses", j],
          message: `"${text}" cannot be in a pool: ${special}; pools hold only unicast ` +
            "addresses that hosts and routers forward",
        });
        continue;
      }
      own.push({ pool: i, entry: j, range });
    }
    ranges.push(...own);
    issues.push(...checkReserved(pool, i, own.map((r) => r.range)));
    issues.push(...checkServedBy(pool, i, machines));
  }
  issues.push(...checkOverlaps(ranges, pools));
  issues.push(...checkMachineAddresses(ranges, pools, machines));
  return { issues, ranges };
}

/**
 * A `[pools.served_by]` that names a machine the inventory lacks, or selects no machine at all.
 * Retired machines count as selected: retiring one must not invalidate the file.
 */
function checkServedBy(
  pool: Pool,
  index: number,
  machines: readonly (Machine | undefined)[],
): RawIssue[] {
  if (pool.served_by === undefined) return [];
  const issues: RawIssue[] = [];
  const known = machines.filter((m): m is Machine => m !== undefined);
  for (const [k, name] of (pool.served_by.machines ?? []).entries()) {
    if (!known.some((m) => m.name === name)) {
      issues.push({
        path: ["pools", index, "served_by", "machines", k],
        message: `names machine "${name}", which no [[machines]] entry has; add the machine ` +
          "or remove the name",
      });
    }
  }
  if (issues.length === 0 && !known.some((m) => matchesServedBy(m, pool))) {
    issues.push({
      path: ["pools", index, "served_by"],
      message: `selects no machine, so nothing would serve pool "${pool.name}"; match at least ` +
        "one [[machines]] entry by name, role or labels",
    });
  }
  return issues;
}

/**
 * Overlapping entries, by one sort and a sweep: each entry that overlaps an earlier one (in
 * address order) is reported once, against the earlier entry reaching furthest.
 */
function checkOverlaps(
  ranges: readonly PoolRange[],
  pools: readonly (Pool | undefined)[],
): RawIssue[] {
  const issues: RawIssue[] = [];
  // address order; on a tie, file order, so the entry written later is the one reported
  const sorted = [...ranges].sort((a, b) =>
    compareRangeStarts(a.range, b.range) || a.pool - b.pool || a.entry - b.entry
  );
  let reach: PoolRange | undefined;
  for (const current of sorted) {
    if (
      reach !== undefined && reach.range.family === current.range.family &&
      current.range.first <= reach.range.last
    ) {
      // report on the entry later in the file, naming the earlier one
      const [earlier, later] = before(reach, current) ? [reach, current] : [current, reach];
      const laterPool = pools[later.pool]!;
      issues.push({
        path: ["pools", later.pool, "addresses", later.entry],
        message:
          `"${later.range.source}" of pool "${laterPool.name}" overlaps "${earlier.range.source}" of ` +
          `${
            earlier.pool === later.pool ? "the same pool" : `pool "${pools[earlier.pool]!.name}"`
          } ` +
          `(pools[${earlier.pool}].addresses[${earlier.entry}]); pools must not share addresses`,
      });
    }
    if (
      reach === undefined || reach.range.family !== current.range.family ||
      current.range.last > reach.range.last
    ) {
      reach = current;
    }
  }
  return issues;
}

function before(a: PoolRange, b: PoolRange): boolean {
  return a.pool < b.pool || (a.pool === b.pool && a.entry < b.entry);
}

function checkReserved(pool: Pool, index: number, own: IpRange[]): RawIssue[] {
  const issues: RawIssue[] = [];
  const covered = mergeIntervals(own);
  for (const [k, text] of pool.reserved.entries()) {
    const range = parseRange(text);
    if ("error" in range) {
      issues.push({
        path: ["pools", index, "reserved", k],
        message: `"${text}" is not an IP address or range: ${range.error}`,
      });
      continue;
    }
    // merged intervals are sorted and disjoint, so the holder is the one containing the start
    const c = findHolder(covered, range.family, range.first);
    if (c === undefined || range.last > c.last) {
      issues.push({
        path: ["pools", index, "reserved", k],
        message: `reserved "${text}" lies outside pool "${pool.name}" ` +
          `(${pool.addresses.map((a) => `"${a}"`).join(", ")}); reserve only addresses of the pool`,
      });
    }
  }
  return issues;
}

function checkMachineAddresses(
  ranges: readonly PoolRange[],
  pools: readonly (Pool | undefined)[],
  machines: readonly (Machine | undefined)[],
): RawIssue[] {
  const issues: RawIssue[] = [];
  // pools do not overlap once valid; when they do, the first entry holding an address is named
  const byStart = [...ranges].sort((a, b) => compareRangeStarts(a.range, b.range)).map((r) => ({
    ...r,
    family: r.range.family,
    first: r.range.first,
    last: r.range.last,
  }));
  const reservedOf = new Map<number, IpRange[]>();
  const reserved = (pool: number): IpRange[] => {
    let list = reservedOf.get(pool);
    if (list === undefined) {
      list = pools[pool]!.reserved.map((r) => parseRange(r))
        .filter((r): r is IpRange => !("error" in r));
      reservedOf.set(pool, list);
    }
    return list;
  };
  for (const [m, machine] of machines.entries()) {
    if (machine === undefined) continue;
    for (const [key, words] of ADDRESS_KEYS) {
      for (const [j, ip] of machine[key].entries()) {
        const parsed = parseIp(ip);
        if (parsed === undefined) continue;
        const holder = findHolder(byStart, parsed.family, parsed.value);
        if (holder === undefined) continue;
        // a reserved address is never handed out, so a pool may span a machine that sits on it
        if (reserved(holder.pool).some((r) => rangeHolds(r, parsed))) continue;
        const pool = pools[holder.pool]!;
        issues.push({
          path: ["pools", holder.pool, "addresses", holder.entry],
          message:
            `"${holder.range.source}" of pool "${pool.name}" contains "${canonicalIp(ip)}", ` +
            `the ${words} of machine "${machine.name}" (machines[${m}].${key}[${j}]); ` +
            "narrow the pool or add the address to its reserved list",
        });
      }
    }
  }
  return issues;
}

/**
 * An entry holding the address among entries sorted by start: the last entry starting at or
 * before it, or, when entries overlap (already an issue), any earlier one reaching it.
 */
function findHolder<T extends { family: IpFamily; first: bigint; last: bigint }>(
  sorted: readonly T[],
  family: IpFamily,
  value: bigint,
): T | undefined {
  let lo = 0, hi = sorted.length - 1, at = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const c = sorted[mid]!;
    if ((c.family - family || compareValues(c.first, value)) <= 0) [at, lo] = [mid, mid + 1];
    else hi = mid - 1;
  }
  for (let k = at; k >= 0 && k > at - 64; k--) {
    const c = sorted[k]!;
    if (c.family !== family) break;
    if (value <= c.last) return c;
  }
  return undefined;
}
