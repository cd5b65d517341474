/**
 * This host's BGP side for its heartbeat Lease: per peer of the model BIRD accepted, whether the
 * session is Established and the prefixes exported to it (Service VIPs, the control-plane VIP,
 * pod CIDRs). The leader judges Nodes' routes from these reports, and `keelson status` shows
 * which hosts announce each BGP VIP.
 *
 * @module
 */
import type { BgpPeerReport } from "../../../src/status/host_report.ts";
import { formatIp } from "../../../src/net/ip.ts";
import type { BirdModel } from "./model.ts";
import { compareCodeUnits } from "../../../src/text/code_unit_order.ts";

/**
 * Builds the per-peer report.
 * @param model the model BIRD accepted (undefined: nothing configured yet)
 * @param sessions the session states by peer index
 * @returns one entry per peer of this host, sorted by peer name; prefixes sorted
 */
export function bgpPeerReports(
  model: BirdModel | undefined,
  sessions: { established(peer: string): boolean },
): BgpPeerReport[] {
  if (!model) return [];
  const byProtocol = new Map(model.statics.map((s) => [s.name, s]));
  const reports = model.peers.map((peer) => {
    const routes = new Set<string>();
    for (const name of peer.exports) {
      for (const r of byProtocol.get(name)?.routes ?? []) {
        routes.add(`${formatIp(r.prefix.family, r.prefix.value)}/${r.prefix.length}`);
      }
    }
    return {
      peer: peer.label,
      established: sessions.established(peer.label),
      routes: [...routes].sort(),
    };
  });
  return reports.sort((a, b) => compareCodeUnits(a.peer, b.peer));
}
