/**
 * Reading `[bgp]` values the same way in `check` and in the BIRD model: communities (literal or
 * alias), a peer's timers after its overrides, which hosts peer with it, a
 * machine's router id.
 *
 * @module
 */
import { parseIp } from "../net/ip.ts";
import type { BgpConfig } from "./bgp_schema.ts";
import type { Machine, Pool } from "./types.ts";
import { matchesServedBy } from "./pool_serving.ts";

/** A parsed community: standard (two 16-bit numbers) or large (three 32-bit numbers). */
export type Community = { kind: "standard"; values: [number, number] } | {
  kind: "large";
  values: [number, number, number];
};

/**
 * Parses `"A:B"` (16-bit each) or `"A:B:C"` (32-bit each).
 * @param text the value
 * @returns the community, or `{ error }` saying what is wrong
 */
export function parseCommunity(text: string): Community | { error: string } {
  const parts = text.split(":");
  if (!parts.every((p) => /^\d{1,10}$/.test(p)) || parts.length < 2 || parts.length > 3) {
    return { error: `"${text}" is not a community; expected "A:B" or "A:B:C" (decimal numbers)` };
  }
  const values = parts.map(Number);
  if (values.length === 2) {
    if (values.some((v) => v > 65535)) {
      return { error: `"${text}": a standard community is two numbers of 0-65535` };
    }
    return { kind: "standard", values: values as [number, number] };
  }
  if (values.some((v) => v > 4294967295)) {
    return { error: `"${text}": a large community is three numbers of 0-4294967295` };
  }
  return { kind: "large", values: values as [number, number, number] };
}

/**
 * Resolves a peer's community entry: an alias of `[bgp.communities]` or a literal.
 * @returns the community, or `{ error }`
 */
export function resolveCommunity(
  bgp: Pick<BgpConfig, "communities">,
  entry: string,
): Community | { error: string } {
  if (/^\d/.test(entry)) return parseCommunity(entry);
  const alias = bgp.communities[entry];
  if (alias === undefined) {
    const known = Object.keys(bgp.communities);
    return {
      error: `"${entry}" is neither "A:B", "A:B:C" nor an alias of [bgp.communities]` +
        (known.length ? ` (aliases: ${known.map((k) => `"${k}"`).join(", ")})` : ""),
    };
  }
  return parseCommunity(alias);
}

/** Hold time and keepalive of one peer, after its overrides. */
export function peerTimers(
  bgp: BgpConfig,
  peer: BgpConfig["peers"][number],
): { hold: number; keepalive: number } {
  return {
    hold: peer.hold_time ?? bgp.hold_time,
    keepalive: peer.keepalive_time ?? bgp.keepalive_time,
  };
}

/**
 * The machines that run BIRD and so may open sessions: the control-plane machines, and the
 * machines a BGP pool's `served_by` selects; retired ones left out.
 * @param machines the inventory's machines (undefined: failed the schema)
 * @param pools the inventory's pools (undefined: failed the schema)
 */
export function bgpHosts(
  machines: readonly (Machine | undefined)[],
  pools: readonly (Pool | undefined)[],
): Machine[] {
  const bgpPools = pools.filter((p): p is Pool => p !== undefined && p.announce === "bgp");
  return machines.filter((m): m is Machine =>
    m !== undefined && m.state !== "retired" &&
    (m.role === "control-plane" || bgpPools.some((p) => matchesServedBy(m, p)))
  );
}

/**
 * The machines that open a session to `peer`: of the BGP hosts (`bgpHosts`), those named in
 * `hosts`, or in the listed `zones`, or every one when both are empty.
 * @param peer the `[[bgp.peers]]` entry
 * @param machines the inventory's machines
 * @param pools the inventory's pools, whose `served_by` add BGP hosts beyond the control plane
 */
export function peerHosts(
  peer: BgpConfig["peers"][number],
  machines: readonly (Machine | undefined)[],
  pools: readonly (Pool | undefined)[] = [],
): Machine[] {
  const hosts = bgpHosts(machines, pools);
  if (peer.hosts.length === 0 && peer.zones.length === 0) return hosts;
  return hosts.filter((m) => peer.hosts.includes(m.name) || peer.zones.includes(m.zone));
}

/** The IPv4 router id of a machine: `bgp.router_id`, else its first internal IPv4. */
export function routerIdOf(machine: Machine): string | undefined {
  return machine.bgp?.router_id ?? machine.internal_ips.find((ip) => parseIp(ip)?.family === 4);
}
