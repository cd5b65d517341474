/**
 * IP addresses and ranges as numbers, for pools, overlap checks and allocation. IPv4 and IPv6
 * are both held as `bigint` with their family beside them, so one code path serves both.
 *
 * @module
 */
import { isIP } from "node:net";

/** 4 or 6. */
export type IpFamily = 4 | 6;

/** An inclusive range of addresses of one family. */
export interface IpRange {
  family: IpFamily;
  first: bigint;
  last: bigint;
  /** The text it was parsed from, for messages. */
  source: string;
  /** Prefix length when written as a CIDR. */
  prefix?: number;
}

/**
 * Parses one address to its family and value.
 * @returns undefined when `text` is not an IP address
 */
export function parseIp(text: string): { family: IpFamily; value: bigint } | undefined {
  const family = isIP(text);
  if (family === 4) {
    const value = text.split(".").reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
    return { family: 4, value };
  }
  if (family === 6) return { family: 6, value: parseIpv6(text) };
  return undefined;
}

function parseIpv6(text: string): bigint {
  let body = text.split("%")[0]!;
  // an embedded IPv4 tail (::ffff:1.2.3.4) becomes two hextets
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(body);
  if (v4) {
    const n = parseIp(v4[1]!)!.value;
    body = body.slice(0, -v4[1]!.length) +
      `${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head, tail] = body.includes("::")
    ? body.split("::") as [string, string]
    : [body, undefined];
  const headParts = head ? head.split(":") : [];
  const tailParts = tail ? tail.split(":") : [];
  const missing = 8 - headParts.length - tailParts.length;
  const parts = [...headParts, ...Array(tail === undefined ? 0 : missing).fill("0"), ...tailParts];
  return parts.reduce((acc, part) => (acc << 16n) | BigInt(parseInt(part, 16)), 0n);
}

/** Formats a value of a family back to canonical text (RFC 5952 for IPv6). */
export function formatIp(family: IpFamily, value: bigint): string {
  if (family === 4) {
    return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join(".");
  }
  const hextets = Array.from(
    { length: 8 },
    (_, i) => Number((value >> BigInt(112 - 16 * i)) & 0xffffn),
  );
  // the longest run of two or more zero hextets becomes "::"
  let bestStart = -1, bestLength = 0;
  for (let i = 0; i < 8;) {
    if (hextets[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && hextets[j] === 0) j++;
    if (j - i > bestLength && j - i >= 2) [bestStart, bestLength] = [i, j - i];
    i = j;
  }
  const hex = hextets.map((h) => h.toString(16));
  if (bestStart < 0) return hex.join(":");
  return `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLength).join(":")}`;
}

/** Canonical text of an address (`::0001` → `::1`), or undefined when it is not one. */
export function canonicalIp(text: string): string | undefined {
  const parsed = parseIp(text);
  return parsed && formatIp(parsed.family, parsed.value);
}

/**
 * Parses `a.b.c.d/n`, `a::/n`, `first-last` or a single address into a range.
 * @returns the range, or a sentence saying why it is not one
 */
export function parseRange(text: string): IpRange | { error: string } {
  const trimmed = text.trim();
  if (trimmed.includes("/")) {
    const [addr, bits] = trimmed.split("/") as [string, string];
    const ip = parseIp(addr);
    const width = ip?.family === 4 ? 32 : 128;
    if (!ip) return { error: `"${addr}" is not an IP address` };
    if (!/^\d{1,3}$/.test(bits) || Number(bits) > width) {
      return { error: `"/${bits}" is not a prefix length for IPv${ip.family} (0-${width})` };
    }
    const prefix = Number(bits);
    const hostBits = BigInt(width - prefix);
    const first = (ip.value >> hostBits) << hostBits;
    if (first !== ip.value) {
      return {
        error: `host bits are set; the network is ${formatIp(ip.family, first)}/${prefix}`,
      };
    }
    return { family: ip.family, first, last: first + (1n << hostBits) - 1n, source: text, prefix };
  }
  if (trimmed.includes("-")) {
    const [a, b] = trimmed.split("-").map((s) => s.trim()) as [string, string];
    const first = parseIp(a), last = parseIp(b);
    if (!first) return { error: `"${a}" is not an IP address` };
    if (!last) return { error: `"${b}" is not an IP address` };
    if (first.family !== last.family) return { error: "the two ends are of different families" };
    if (first.value > last.value) return { error: `"${a}" comes after "${b}"` };
    return { family: first.family, first: first.value, last: last.value, source: text };
  }
  const ip = parseIp(trimmed);
  if (!ip) return { error: `"${trimmed}" is not an IP address, CIDR or range` };
  return { family: ip.family, first: ip.value, last: ip.value, source: text };
}

/** True when the two ranges share at least one address. */
export function rangesOverlap(a: IpRange, b: IpRange): boolean {
  return a.family === b.family && a.first <= b.last && b.first <= a.last;
}

/** Number of addresses in the range. */
export function rangeSize(range: IpRange): bigint {
  return range.last - range.first + 1n;
}
