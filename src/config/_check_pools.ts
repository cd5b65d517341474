/**
 * Cross-field checks on `[[pools]]`: ranges that do not parse, overlaps between pools, pools that
 * hold a machine's address, reserved addresses outside their pool, duplicate names.
 * Folder-internal.
 *
 * @module
 */
import { canonicalIp, type IpRange, parseIp, parseRange, rangesOverlap } from "../net/ip.ts";
import { ADDRESS_KEYS } from "./_check_machines.ts";
import type { RawIssue } from "./_schema_issues.ts";
import { mergeIntervals } from "./pool_size.ts";
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
    const seen = names.get(pool.name);
    if (seen !== undefined) {
      issues.push({
        path: ["pools", i, "name"],
        message: `duplicate pool name "${pool.name}": pools[${seen}] has it too`,
      });
    } else names.set(pool.name, i);

    const own: IpRange[] = [];
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
      for (const other of ranges) {
        if (!rangesOverlap(other.range, range)) continue;
        const otherPool = pools[other.pool]!;
        issues.push({
          path: ["pools", i, "addresses", j],
          message: `"${text}" of pool "${pool.name}" overlaps "${other.range.source}" of ` +
            `${other.pool === i ? "the same pool" : `pool "${otherPool.name}"`} ` +
            `(pools[${other.pool}].addresses[${other.entry}]); pools must not share addresses`,
        });
      }
      ranges.push({ pool: i, entry: j, range });
      own.push(range);
    }
    issues.push(...checkReserved(pool, i, own));
    issues.push(...checkMachineAddresses(pool, i, own, machines));
  }
  return { issues, ranges };
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
    const inside = covered.some((c) =>
      c.family === range.family && c.first <= range.first && range.last <= c.last
    );
    if (!inside) {
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
  pool: Pool,
  index: number,
  own: IpRange[],
  machines: readonly (Machine | undefined)[],
): RawIssue[] {
  const issues: RawIssue[] = [];
  const reserved = pool.reserved.map(parseRange).filter((r): r is IpRange => !("error" in r));
  for (const [m, machine] of machines.entries()) {
    if (machine === undefined) continue;
    for (const [key, words] of ADDRESS_KEYS) {
      for (const [j, ip] of machine[key].entries()) {
        const parsed = parseIp(ip);
        if (parsed === undefined) continue;
        const isIn = (r: IpRange): boolean =>
          r.family === parsed.family && r.first <= parsed.value && parsed.value <= r.last;
        // a reserved address is never handed out, so a pool may span a machine that sits on it
        if (reserved.some(isIn)) continue;
        const entry = own.findIndex(isIn);
        if (entry < 0) continue;
        issues.push({
          path: ["pools", index, "addresses", pool.addresses.indexOf(own[entry]!.source)],
          message:
            `"${own[entry]!.source}" of pool "${pool.name}" contains "${canonicalIp(ip)}", ` +
            `the ${words} of machine "${machine.name}" (machines[${m}].${key}[${j}]); ` +
            "narrow the pool or add the address to its reserved list",
        });
      }
    }
  }
  return issues;
}
