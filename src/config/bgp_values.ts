/**
 * Reading `[bgp]` values the same way in `check` and in the BIRD model: communities (literal or
 * alias), a peer's timers after its overrides, which control-plane hosts peer with it, a
 * machine's router id.
 *
 * @module
 */
import { parseIp } from "../net/ip.ts";
import type { BgpConfig } from "./bgp_schema.ts";
import type { Machine } from "./types.ts";

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
 * The control-plane machines that open a session to `peer`: those named in `hosts`, or in the
 * listed `zones`, or every active control-plane machine when both are empty.
 */
export function peerHosts(
  peer: BgpConfig["peers"][number],
  machines: readonly (Machine | undefined)[],
): Machine[] {
  const cps = machines.filter((m): m is Machine =>
    m !== undefined && m.role === "control-plane" && m.state !== "retired"
  );
  if (peer.hosts.length === 0 && peer.zones.length === 0) return cps;
  return cps.filter((m) => peer.hosts.includes(m.name) || peer.zones.includes(m.zone));
}

/** The IPv4 router id of a machine: `bgp.router_id`, else its first internal IPv4. */
export function routerIdOf(machine: Machine): string | undefined {
  return machine.bgp?.router_id ?? machine.internal_ips.find((ip) => parseIp(ip)?.family === 4);
}
