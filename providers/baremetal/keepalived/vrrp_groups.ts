/**
 * The VRRP groups of Service VIPs, for the whole segment: which machines form each group (the
 * serving hosts of the VIP's pool, `src/config/pool_serving.ts`), which VRID it uses, and which
 * VIPs it holds. Every host computes the same plan from the same inventory and VIPs, and renders
 * the groups it is a member of. Pure and deterministic.
 *
 * Decisions:
 * - A VIP's group is keyed by its pool's serving hosts and `serviceGroupOf(address)`, so with one
 *   set of serving hosts (every pool served by the control-plane machines, the default) the plan
 *   is exactly the one-set plan: same VRIDs, same members.
 * - Two groups may share a VRID only when no machine is in both and VRRP is unicast: unicast
 *   adverts reach only the group's own peers. A host cannot run two instances with one VRID, and
 *   multicast adverts reach every host of the segment, so such groups are told apart: sets are
 *   taken in the order of their member lists, and a later set's group whose VRID an earlier
 *   overlapping set already uses moves to the next free one (wrapping). A group that finds none
 *   is left out, with the reason.
 *
 * @module
 */
import type { Config, Machine } from "../../../src/config/types.ts";
import { poolServers } from "../../../src/config/pool_serving.ts";
import { compareIps, formatIp, type IpAddress, type IpFamily } from "../../../src/net/ip.ts";
import { compareCodeUnits } from "../../../src/text/code_unit_order.ts";
import { ownerOf } from "../ipam/address_owner.ts";

/** One VRRP group of Service VIPs. */
export interface ServiceGroup {
  /** The serving hosts of its VIPs' pools, sorted by name (the VRRP peers). */
  members: Machine[];
  family: IpFamily;
  /** 0-based: the VRID is `vrid_range[0] + 2 + index`. */
  index: number;
  /** Sorted, unique. */
  vips: IpAddress[];
}

/** The plan of every Service group, with the VIPs that could not be placed. */
export interface ServiceGroupPlan {
  groups: ServiceGroup[];
  skipped: { value: string; reason: string }[];
}

/**
 * Plans every Service group of the segment.
 * @param config the validated inventory
 * @param vips the Service VIPs keepalived serves (already checked: VRRP pools' usable addresses)
 * @param groupIndexOf the natural group of a VIP (`serviceGroupOf` with the group count)
 * @param groupCount the number of Service VRIDs (>= 1)
 */
export function planServiceGroups(
  config: Config,
  vips: readonly IpAddress[],
  groupIndexOf: (ip: IpAddress) => number,
  groupCount: number,
): ServiceGroupPlan {
  const skipped: ServiceGroupPlan["skipped"] = [];
  // the members of each pool, once
  const membersByPool = new Map<number, Machine[]>();
  const membersOf = (poolIndex: number): Machine[] => {
    let members = membersByPool.get(poolIndex);
    if (!members) {
      members = poolServers(config, config.pools[poolIndex]!)
        .sort((a, b) => compareCodeUnits(a.name, b.name));
      membersByPool.set(poolIndex, members);
    }
    return members;
  };
  // natural groups per set of serving hosts
  const sets = new Map<string, { members: Machine[]; natural: Map<string, IpAddress[]> }>();
  for (const ip of vips) {
    const owner = ownerOf(config, ip.family, ip.value);
    if (!owner) continue; // checked by the caller; a guard only
    const members = membersOf(owner.index);
    if (members.length === 0) {
      skipped.push({
        value: formatIp(ip.family, ip.value),
        reason: `no machine serves pool "${owner.pool}" (every machine its served_by selects ` +
          "is retired)",
      });
      continue;
    }
    const key = members.map((m) => m.name).join("\n");
    const set = sets.get(key) ?? { members, natural: new Map() };
    sets.set(key, set);
    const groupKey = `${ip.family}/${groupIndexOf(ip)}`;
    set.natural.set(groupKey, [...(set.natural.get(groupKey) ?? []), ip]);
  }

  const groups: ServiceGroup[] = [];
  const unicast = config.keepalived.unicast;
  for (const key of [...sets.keys()].sort(compareCodeUnits)) {
    const { members, natural } = sets.get(key)!;
    const names = new Set(members.map((m) => m.name));
    // VRIDs this set may not use, per family: those of earlier groups sharing a member (or the
    // segment, with multicast)
    const blocked = (family: IpFamily): Set<number> =>
      new Set(
        groups.filter((g) =>
          g.family === family && (!unicast || g.members.some((m) => names.has(m.name)))
        ).map((g) => g.index),
      );
    for (const family of [4, 6] as const) {
      const naturals = [...natural.entries()]
        .filter(([k]) => k.startsWith(`${family}/`))
        .map(([k, ips]) => ({ index: Number(k.slice(2)), ips }))
        .sort((a, b) => a.index - b.index);
      if (naturals.length === 0) continue;
      const taken = blocked(family);
      const own = new Set(naturals.map((n) => n.index));
      for (const { index, ips } of naturals) {
        let chosen: number | undefined = taken.has(index) ? undefined : index;
        for (let step = 1; chosen === undefined && step < groupCount; step++) {
          const candidate = (index + step) % groupCount;
          if (!taken.has(candidate) && !own.has(candidate)) chosen = candidate;
        }
        const sorted = dedupe(ips);
        if (chosen === undefined) {
          for (const ip of sorted) {
            skipped.push({
              value: formatIp(ip.family, ip.value),
              reason: "no VRID of [keepalived] vrid_range is free for its serving hosts " +
                `(${members.map((m) => m.name).join(", ")}); widen vrid_range`,
            });
          }
          continue;
        }
        own.add(chosen);
        taken.add(chosen);
        groups.push({ members, family, index: chosen, vips: sorted });
      }
    }
  }
  groups.sort((a, b) => a.family - b.family || a.index - b.index);
  return { groups, skipped };
}

function dedupe(ips: IpAddress[]): IpAddress[] {
  const sorted = [...ips].sort(compareIps);
  return sorted.filter((ip, i) => i === 0 || compareIps(ip, sorted[i - 1]!) !== 0);
}
