/**
 * Cross-field checks on `[bgp]`, `[[bgp.peers]]`, `announce = "bgp"` pools and machines' `bgp`
 * tables: timers that BIRD accepts but that make no sense (`keepalive >= hold`), communities out
 * of range, peers naming unknown hosts or pools, control-plane hosts without a router id.
 * Folder-internal.
 *
 * @module
 */
import { parseIp, parseRange, rangeHolds } from "../net/ip.ts";
import type { RawIssue } from "./_schema_issues.ts";
import { duplicateName } from "./_duplicate_name.ts";
import { checkBgpAddresses } from "./_check_bgp_addresses.ts";
import type { BgpConfig } from "./bgp_schema.ts";
import {
  bgpHosts,
  parseCommunity,
  peerHosts,
  peerTimers,
  resolveCommunity,
  routerIdOf,
} from "./bgp_values.ts";
import type { Config, Machine, Pool } from "./types.ts";

/** What these checks read; a section is undefined when it failed the schema. */
export interface BgpView {
  bgp: BgpConfig | undefined;
  /** Whether the raw file has a `[bgp]` table at all (it may have failed the schema). */
  bgpWritten: boolean;
  machines: readonly (Machine | undefined)[];
  pools: readonly (Pool | undefined)[];
  controlPlane: Config["control_plane"] | undefined;
}

/**
 * Runs every BGP check.
 * @param view the sections that passed the schema
 * @returns one issue per problem
 */
export function checkBgp(view: BgpView): RawIssue[] {
  const issues: RawIssue[] = [];
  const bgp = view.bgp;
  const wantsBgp = view.pools.some((p) => p?.announce === "bgp") ||
    view.controlPlane?.announce === "bgp";
  if (!bgp) {
    if (!view.bgpWritten) {
      for (const [i, pool] of view.pools.entries()) {
        if (pool?.announce !== "bgp") continue;
        issues.push({
          path: ["pools", i, "announce"],
          message: `pool "${pool.name}" is announced over BGP but the file has no [bgp] table; ` +
            'add [bgp] with asn and at least one [[bgp.peers]], or use announce = "vrrp"',
        });
      }
      if (view.controlPlane?.announce === "bgp") {
        issues.push({
          path: ["control_plane", "announce"],
          message: "the control-plane VIP is announced over BGP but the file has no [bgp] " +
            'table; add [bgp] with at least one [[bgp.peers]], or use announce = "vrrp"',
        });
      }
    }
    return issues;
  }
  if (wantsBgp && bgp.peers.length === 0) {
    issues.push({
      path: ["bgp"],
      message: 'announce = "bgp" is used but [bgp] has no [[bgp.peers]]; add the routers',
    });
  }
  issues.push(...checkTimers(bgp));
  for (const [alias, value] of Object.entries(bgp.communities)) {
    const parsed = parseCommunity(value);
    if ("error" in parsed) {
      issues.push({ path: ["bgp", "communities", alias], message: parsed.error });
    }
  }
  for (const [j, family] of bgp.families.entries()) {
    if (bgp.families.indexOf(family) < j) {
      issues.push({
        path: ["bgp", "families", j],
        message: `"${family}" is listed twice; list each family once (BIRD refuses a second ` +
          "channel of one family)",
      });
    }
  }
  if (
    view.controlPlane?.announce === "bgp" && view.controlPlane.vip.length > 0 &&
    bgp.peers.length > 0 &&
    !bgp.peers.some((p) => p.control_plane && peerHosts(p, view.machines).length > 0)
  ) {
    issues.push({
      path: ["control_plane", "announce"],
      message: "the control-plane VIP is announced over BGP but no [[bgp.peers]] entry that a " +
        "control-plane host peers with has control_plane = true, so no router would learn it; " +
        'set control_plane = true on the routers that should carry it, or use announce = "vrrp"',
    });
  }
  issues.push(...checkPeers(bgp, view));
  issues.push(...checkHosts(bgp, view));
  issues.push(...checkFamilies(bgp, view));
  issues.push(...checkBgpAddresses(bgp, view));
  return issues;
}

function checkTimers(bgp: BgpConfig): RawIssue[] {
  const issues: RawIssue[] = [];
  if (bgp.keepalive_time >= bgp.hold_time) {
    issues.push({
      path: ["bgp", "keepalive_time"],
      message: `${bgp.keepalive_time} must be less than hold_time (${bgp.hold_time}); ` +
        "a third of it is usual",
    });
  }
  const [min, max] = bgp.error_wait_time;
  if (min > max) {
    issues.push({
      path: ["bgp", "error_wait_time"],
      message: `[${min}, ${max}]: the minimum must not exceed the maximum`,
    });
  }
  if (bgp.connect_delay_time > bgp.connect_retry_time) {
    issues.push({
      path: ["bgp", "connect_delay_time"],
      message: `${bgp.connect_delay_time} must not exceed connect_retry_time ` +
        `(${bgp.connect_retry_time})`,
    });
  }
  return issues;
}

function checkPeers(bgp: BgpConfig, view: BgpView): RawIssue[] {
  const issues: RawIssue[] = [];
  const names = new Map<string, number>();
  const addresses = new Map<string, number>();
  const machinesByName = new Map(
    view.machines.filter((m): m is Machine => m !== undefined).map((m) => [m.name, m]),
  );
  // retired machines too: a peer naming one is no mistake (it peers again once active)
  const bgpHostNames = new Set(
    bgpHosts(view.machines.map((m) => m && { ...m, state: "active" as const }), view.pools)
      .map((m) => m.name),
  );
  const runsBirdIn = (m: Machine) => bgpHostNames.has(m.name);
  const bgpPools = new Map(
    view.pools.filter((p): p is Pool => p !== undefined).map((p) => [p.name, p]),
  );
  for (const [i, peer] of bgp.peers.entries()) {
    const at = (...rest: (string | number)[]) => ["bgp", "peers", i, ...rest];
    const dupName = duplicateName(names, ["bgp", "peers"], "peer", peer.name, i);
    if (dupName) issues.push(dupName.issue);
    const ip = parseIp(peer.address);
    if (!ip) continue; // the schema refused it (a zone id, junk)
    const key = `${ip.family}/${ip.value}`;
    const other = addresses.get(key);
    if (other !== undefined) {
      issues.push({
        path: at("address"),
        message:
          `"${peer.address}" is also the address of bgp.peers[${other}]; one entry per router`,
      });
    } else addresses.set(key, i);
    const { hold, keepalive } = peerTimers(bgp, peer);
    if (keepalive >= hold) {
      issues.push({
        path: at(peer.keepalive_time !== undefined ? "keepalive_time" : "hold_time"),
        message: `keepalive ${keepalive} must be less than hold ${hold}`,
      });
    }
    for (const [j, host] of peer.hosts.entries()) {
      const machine = machinesByName.get(host);
      if (!machine || !runsBirdIn(machine)) {
        issues.push({
          path: at("hosts", j),
          message: `"${host}" is not a control-plane machine of the inventory nor one a BGP ` +
            "pool's served_by selects; only those hosts run BIRD",
        });
      }
    }
    for (const [j, zone] of peer.zones.entries()) {
      const any = [...machinesByName.values()].some((m) => runsBirdIn(m) && m.zone === zone);
      if (!any) {
        issues.push({
          path: at("zones", j),
          message: `no machine that runs BIRD (control-plane, or selected by a BGP pool's ` +
            `served_by) has zone "${zone}"; the peer would get no session`,
        });
      }
    }
    for (const [j, name] of peer.pools.entries()) {
      const pool = bgpPools.get(name);
      if (!pool) {
        issues.push({ path: at("pools", j), message: `there is no pool "${name}"` });
      } else if (pool.announce !== "bgp") {
        issues.push({
          path: at("pools", j),
          message: `pool "${name}" has announce = "vrrp"; set announce = "bgp" on it`,
        });
      }
    }
    for (const [j, entry] of peer.communities.entries()) {
      const parsed = resolveCommunity(bgp, entry);
      if ("error" in parsed) issues.push({ path: at("communities", j), message: parsed.error });
    }
    if (peer.local_preference !== undefined && peer.asn !== bgp.asn) {
      issues.push({
        path: at("local_preference"),
        message: `local preference is only sent to iBGP peers (asn ${bgp.asn}); ` +
          `"${peer.name}" is eBGP (asn ${peer.asn}): remove it or use communities`,
      });
    }
    if (peer.subnet !== undefined) {
      const range = parseRange(peer.subnet);
      if ("error" in range || range.prefix === undefined) {
        issues.push({
          path: at("subnet"),
          message: `"${peer.subnet}" is not a CIDR` + ("error" in range ? `: ${range.error}` : ""),
        });
      } else if (!rangeHolds(range, ip)) {
        issues.push({
          path: at("subnet"),
          message: `"${peer.subnet}" does not hold the peer's address "${peer.address}"`,
        });
      }
    } else if (peer.pod_cidrs && peer.multihop === 0) {
      issues.push({
        path: at("pod_cidrs"),
        message: `peer "${peer.name}" receives pod CIDRs over a direct session: set subnet ` +
          '(e.g. "10.0.0.0/24") so only Nodes on its segment are announced to it',
      });
    }
  }
  return issues;
}

function checkHosts(bgp: BgpConfig, view: BgpView): RawIssue[] {
  const issues: RawIssue[] = [];
  const peered = new Set<string>();
  for (const peer of bgp.peers) {
    for (const m of peerHosts(peer, view.machines, view.pools)) peered.add(m.name);
  }
  for (const [i, machine] of view.machines.entries()) {
    if (!machine || !peered.has(machine.name)) continue;
    if (routerIdOf(machine) === undefined) {
      issues.push({
        path: ["machines", i, "internal_ips"],
        message: `machine "${machine.name}" peers over BGP but has no IPv4 address for ` +
          'BIRD\'s router id; add bgp = { router_id = "x.x.x.x" }',
      });
    }
  }
  return issues;
}

function checkFamilies(bgp: BgpConfig, view: BgpView): RawIssue[] {
  const issues: RawIssue[] = [];
  for (const [i, pool] of view.pools.entries()) {
    if (pool?.announce !== "bgp") continue;
    for (const [j, text] of pool.addresses.entries()) {
      const range = parseRange(text);
      if ("error" in range) continue;
      const family = range.family === 4 ? "ipv4" : "ipv6";
      if (!bgp.families.includes(family)) {
        issues.push({
          path: ["pools", i, "addresses", j],
          message: `"${text}" is IPv${range.family} but bgp.families does not include "${family}"`,
        });
      }
    }
  }
  return issues;
}
