/**
 * IP addresses and ranges as numbers, for pools, overlap checks and allocation. IPv4 and IPv6
 * are both held as `bigint` with their family beside them, so one code path serves both.
 *
 * @module
 */
import { isIP } from "node:net";
import { compareCodeUnits } from "../text/code_unit_order.ts";

/** 4 or 6. */
export type IpFamily = 4 | 6;

/** One address: its family and its value. */
export interface IpAddress {
  family: IpFamily;
  value: bigint;
}

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
 * Parses one address to its family and value. Strict: the whole text must be one address, with
 * no surrounding space and no zone id (`fe80::1%eth0`); an IPv4-mapped IPv6 address
 * (`::ffff:10.0.0.1`) is the IPv4 address it maps, so duplicates and overlaps are seen.
 * @returns undefined when `text` is not exactly one IP address
 */
export function parseIp(text: string): IpAddress | undefined {
  if (typeof text !== "string" || text.length > 45) return undefined;
  const family = isIP(text);
  if (family === 4) {
    const value = text.split(".").reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
    return { family: 4, value };
  }
  // isIP accepts a zone id; an address with one names a link, not a host, so it is refused
  if (family !== 6 || text.includes("%")) return undefined;
  const value = parseIpv6(text);
  if (value >> 32n === 0xffffn) return { family: 4, value: value & 0xffffffffn };
  return { family: 6, value };
}

function parseIpv6(text: string): bigint {
  let body = text;
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

/** How `parseRange` reads a CIDR whose address has host bits set (`10.0.0.5/24`). */
export interface ParseRangeOptions {
  /**
   * `refuse`: a mistake (the inventory's reading); `mask`: the network it lies in, as Go's
   * `net.ParseCIDR` and `netip.Prefix.Masked` read it (MetalLB's and kube-vip's pools).
   * @default "refuse"
   */
  hostBits?: "refuse" | "mask";
}

/**
 * Parses `a.b.c.d/n`, `a::/n`, `first-last` or a single address into a range. Strict: nothing
 * may follow the range (`10.0.0.0/24/x` is refused); spaces are allowed only around the text and
 * around `-`. An IPv4-mapped IPv6 CIDR of /96 or longer is the IPv4 CIDR it maps.
 * @param text the text
 * @param options how to read host bits in a CIDR
 * @returns the range, or a sentence saying why it is not one
 */
export function parseRange(
  text: string,
  options: ParseRangeOptions = {},
): IpRange | { error: string } {
  if (typeof text !== "string") return { error: "it is not text" };
  const trimmed = text.trim();
  if (trimmed.includes("/")) {
    const parts = trimmed.split("/");
    if (parts.length !== 2) return { error: 'a CIDR holds exactly one "/"' };
    const [addr, bits] = parts as [string, string];
    const ip = parseIp(addr);
    if (!ip) return { error: `"${addr}" is not an IP address` };
    // a mapped address parses as IPv4, but its prefix counts 128 bits
    const mapped = ip.family === 4 && addr.includes(":");
    const written = mapped ? 128 : ip.family === 4 ? 32 : 128;
    if (!/^\d{1,3}$/.test(bits) || Number(bits) > written) {
      return {
        error: `"/${bits}" is not a prefix length for IPv${mapped ? 6 : ip.family} (0-${written})`,
      };
    }
    if (mapped && Number(bits) < 96) {
      return { error: `"/${bits}" is shorter than /96, which an IPv4-mapped address needs` };
    }
    const prefix = Number(bits) - (mapped ? 96 : 0);
    const width = ip.family === 4 ? 32 : 128;
    const hostBits = BigInt(width - prefix);
    const first = (ip.value >> hostBits) << hostBits;
    if (first !== ip.value && options.hostBits !== "mask") {
      return {
        error: `host bits are set; the network is ${formatIp(ip.family, first)}/${prefix}`,
      };
    }
    return { family: ip.family, first, last: first + (1n << hostBits) - 1n, source: text, prefix };
  }
  if (trimmed.includes("-")) {
    const parts = trimmed.split("-").map((s) => s.trim());
    if (parts.length !== 2) return { error: 'a range holds exactly one "-"' };
    const [a, b] = parts as [string, string];
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

/** A block of addresses no pool, VIP or machine may use, with the word for it. */
interface SpecialBlock {
  family: IpFamily;
  first: bigint;
  last: bigint;
  what: string;
}

function block(family: IpFamily, cidr: string, what: string): SpecialBlock {
  const range = parseRange(cidr) as IpRange;
  return { family, first: range.first, last: range.last, what };
}

/**
 * Addresses that are not unicast host addresses a LoadBalancer VIP could be (RFC 6890): a
 * kernel would treat them specially, or no router forwards them.
 */
const NOT_UNICAST: readonly SpecialBlock[] = [
  block(4, "0.0.0.0/8", 'the unspecified ("this network") block 0.0.0.0/8'),
  block(4, "127.0.0.0/8", "the loopback block 127.0.0.0/8"),
  block(4, "169.254.0.0/16", "the link-local block 169.254.0.0/16"),
  block(4, "224.0.0.0/4", "the multicast block 224.0.0.0/4"),
  block(4, "240.0.0.0/4", "the reserved block 240.0.0.0/4 (with the broadcast 255.255.255.255)"),
  block(6, "::/128", "the unspecified address ::"),
  block(6, "::1/128", "the loopback address ::1"),
  block(6, "fe80::/10", "the link-local block fe80::/10"),
  block(6, "ff00::/8", "the multicast block ff00::/8"),
];

/**
 * Why a range holds an address that is not a routable unicast host address, or undefined when
 * every address in it is one.
 * @param range a parsed range
 * @returns e.g. `it overlaps the loopback block 127.0.0.0/8`
 */
export function nonUnicastProblem(
  range: Pick<IpRange, "family" | "first" | "last">,
): string | undefined {
  for (const special of NOT_UNICAST) {
    if (special.family !== range.family) continue;
    if (range.first <= special.last && special.first <= range.last) {
      return range.first === range.last
        ? `it is in ${special.what}`
        : `it overlaps ${special.what}`;
    }
  }
  return undefined;
}

/** True when the two ranges share at least one address. */
export function rangesOverlap(a: IpRange, b: IpRange): boolean {
  return a.family === b.family && a.first <= b.last && b.first <= a.last;
}

/** Number of addresses in the range. */
export function rangeSize(range: IpRange): bigint {
  return range.last - range.first + 1n;
}

/** Orders two address values ascending (a comparator for `sort`): -1, 0 or 1. */
export function compareValues(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Orders addresses numerically, IPv4 before IPv6 (a comparator for `sort`). */
export function compareIps(a: IpAddress, b: IpAddress): number {
  return a.family - b.family || compareValues(a.value, b.value);
}

/** Orders ranges by where they start, IPv4 before IPv6 (a comparator for `sort`). */
export function compareRangeStarts(
  a: Pick<IpRange, "family" | "first">,
  b: Pick<IpRange, "family" | "first">,
): number {
  return a.family - b.family || compareValues(a.first, b.first);
}

/** True when the range holds the address (same family, between its ends inclusive). */
export function rangeHolds(
  range: Pick<IpRange, "family" | "first" | "last">,
  ip: IpAddress,
): boolean {
  return range.family === ip.family && range.first <= ip.value && ip.value <= range.last;
}

/**
 * The first address of a family in a list of texts (a machine's `internal_ips`), parsed.
 * @returns undefined when none of the texts is an address of that family
 */
export function firstIpOfFamily(texts: readonly string[], family: IpFamily): IpAddress | undefined {
  for (const text of texts) {
    const ip = parseIp(text);
    if (ip?.family === family) return ip;
  }
  return undefined;
}

/**
 * Orders address texts numerically, IPv4 before IPv6 (a comparator for `sort`); a text that is
 * not an address comes after every address, in code-unit order.
 */
export function compareIpTexts(a: string, b: string): number {
  const pa = parseIp(a), pb = parseIp(b);
  if (pa && pb) return compareIps(pa, pb);
  if (pa || pb) return pa ? -1 : 1;
  return compareCodeUnits(a, b);
}

/**
 * A span of addresses as text: one address, or `first-last`.
 * @param span the span
 * @returns e.g. `10.0.0.5` or `10.0.0.5-10.0.0.9`
 */
export function formatSpan(span: Pick<IpRange, "family" | "first" | "last">): string {
  const first = formatIp(span.family, span.first);
  return span.first === span.last ? first : `${first}-${formatIp(span.family, span.last)}`;
}
