/**
 * Address ownership, decided once: which pool holds an address as a usable one (what IPAM could
 * have handed out: no reserved address, no network or broadcast address, `poolUsableIntervals`),
 * and so which announcer serves it — keepalived for a pool with `announce = "vrrp"`, BIRD for
 * `announce = "bgp"`. Pools never overlap (config validation), so at most one pool holds an
 * address. Each announcer asks this, never the other announcer. Pure.
 *
 * @module
 */
import { type AddressInterval, poolUsableIntervals } from "../../../src/config/pool_size.ts";
import type { Config, Pool } from "../../../src/config/types.ts";
import { compareRangeStarts, type IpFamily, parseIp } from "../../../src/net/ip.ts";

/** The pool that holds an address, and the announcer that serves it. */
export interface AddressOwner {
  /** The pool's name. */
  pool: string;
  /** The pool's place among the inventory's `[[pools]]` (0 = first). */
  index: number;
  /** How the pool's addresses are announced: `vrrp` (keepalived) or `bgp` (BIRD). */
  announce: Pool["announce"];
}

interface OwnedInterval extends AddressInterval {
  owner: AddressOwner;
}

/** Per configuration (a reload replaces the object): asked for every VIP of every render. */
const intervalsMemo = new WeakMap<Config, readonly OwnedInterval[]>();

function ownedIntervals(config: Config): readonly OwnedInterval[] {
  let intervals = intervalsMemo.get(config);
  if (!intervals) {
    intervals = config.pools.flatMap((pool, index) =>
      poolUsableIntervals(pool).map((interval) => ({
        ...interval,
        // anything but "bgp" is keepalived's, as the schema's default
        owner: {
          pool: pool.name,
          index,
          announce: pool.announce === "bgp" ? "bgp" : "vrrp",
        } as const,
      }))
    ).sort(compareRangeStarts);
    intervalsMemo.set(config, intervals);
  }
  return intervals;
}

/**
 * The pool that holds `address` as a usable one, and its announcer (binary search over the
 * pools' merged intervals).
 * @param config the configuration in force
 * @param address an IP as text, exactly (anything else, spaces included, has no owner)
 * @returns the owner, or undefined when no pool offers the address
 */
export function addressOwner(config: Config, address: string): AddressOwner | undefined {
  const ip = parseIp(address);
  return ip ? ownerOf(config, ip.family, ip.value) : undefined;
}

/**
 * `addressOwner` for a parsed address.
 * @param config the configuration in force
 * @param family 4 or 6
 * @param value the address value
 * @returns the owner, or undefined when no pool offers the address
 */
export function ownerOf(config: Config, family: IpFamily, value: bigint): AddressOwner | undefined {
  const usable = ownedIntervals(config);
  let lo = 0, hi = usable.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const c = usable[mid]!;
    if (c.family > family || (c.family === family && c.first > value)) hi = mid - 1;
    else if (c.family === family && value <= c.last) return c.owner;
    else lo = mid + 1;
  }
  return undefined;
}
