/**
 * Which Nodes' pod routes some host announces, judged from every host's heartbeat:
 * with per-rack peers the leader may not talk to a Node's routers, so its own BIRD cannot tell.
 * A Node's pod CIDR counts as routed when a host whose heartbeat is not silent reports it exported
 * over an Established session to a peer eligible for that Node: the peer receives pod CIDRs
 * (`pod_cidrs = true`) and its `subnet` holds the Node's InternalIP, or it is multihop (it
 * resolves next hops recursively; the model exports every pod route to it). Only what
 * `decidePodRoutes` accepts counts: a Node outside the inventory claiming a CIDR another host
 * reports is never judged routed.
 *
 * Silent is this leader's observation (the heartbeat seen unchanged for its lease duration), never
 * the writer's clock: a host whose clock runs fast does not keep its routes after it died. A
 * heartbeat not yet judged (this leader just started) still counts, as a new leader trusts the
 * Lease it finds for one lease duration: so a change of leader does not mark every Node
 * NetworkUnavailable for the seconds it takes to see each host renew.
 *
 * A report cut at its size limit (`omitted` routes or peers) lists only part of what its host
 * exports: its Established peers eligible for a Node are taken to carry that Node's route (the
 * host's model exports every pod route to every eligible peer), rather than every Node beyond
 * the cut being marked NetworkUnavailable.
 *
 * @module
 */
import type { V1Node } from "@kubernetes/client-node";
import type { Route } from "../../../src/cloud/provider.ts";
import type { Config } from "../../../src/config/types.ts";
import { parseIp } from "../../../src/net/ip.ts";
import { type Heartbeat, isSilent } from "../../../src/status/heartbeats.ts";
import { decidePodRoutes, type PodRouteDecision } from "./decide_pod_routes.ts";
import { parsePrefix } from "./model.ts";

type BgpPeer = NonNullable<Config["bgp"]>["peers"][number];

/** Inputs of `reportedRoutes`. */
export interface ReportedRoutesInput {
  config: Config;
  /** Every heartbeat, judged by this process's observation. */
  heartbeats: readonly Heartbeat[];
  nodes: readonly V1Node[];
  /** `decidePodRoutes` over these Nodes, when the caller keeps one. @default decided here */
  decision?: PodRouteDecision;
}

/**
 * The Nodes' pod routes some eligible host reports announced.
 * @param input inventory, judged heartbeats and Nodes
 * @returns the routes, as `listRoutes` returns them
 */
export function reportedRoutes(input: ReportedRoutesInput): Route[] {
  const peers = input.config.bgp?.peers ?? [];
  // peer name -> prefixes exported over an Established session, by hosts not silent
  const live = new Map<string, Set<string>>();
  // Established peers of hosts whose report left routes out: they may carry any pod route
  const cut = new Set<string>();
  for (const h of input.heartbeats) {
    if (isSilent(h) || "error" in h.report) continue;
    const partial = (h.report.omitted?.routes ?? 0) + (h.report.omitted?.peers ?? 0) > 0;
    for (const p of h.report.bgp ?? []) {
      if (!p.established) continue;
      const set = live.get(p.peer) ?? new Set<string>();
      for (const r of p.routes) set.add(r);
      live.set(p.peer, set);
      if (partial) cut.add(p.peer);
    }
  }
  const routes: Route[] = [];
  const decision = input.decision ??
    decidePodRoutes({ config: input.config, nodes: input.nodes });
  for (const pod of decision.announced) {
    const cidr = pod.cidr;
    const routed = peers.some((peer) =>
      eligible(peer, pod.nextHop) &&
      ((live.get(peer.name)?.has(cidr) ?? false) || cut.has(peer.name))
    );
    if (routed) {
      routes.push({ name: `${pod.node}/${cidr}`, targetNode: pod.node, destinationCIDR: cidr });
    }
  }
  return routes;
}

/**
 * Whether `peer` may carry the pod routes of a Node with InternalIP `nodeIp`.
 * @param peer a `[[bgp.peers]]` entry
 * @param nodeIp the Node's InternalIP of the route's family
 */
export function eligible(peer: BgpPeer, nodeIp: string): boolean {
  if (!peer.pod_cidrs) return false;
  if (peer.multihop > 0) return true;
  if (peer.subnet === undefined) return false;
  const subnet = parsePrefix(peer.subnet);
  const ip = parseIp(nodeIp);
  if (!subnet || !ip || subnet.family !== ip.family) return false;
  const shift = BigInt((ip.family === 4 ? 32 : 128) - subnet.length);
  return (ip.value >> shift) === (subnet.value >> shift);
}
