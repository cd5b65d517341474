/**
 * The BIRD model of one host: which routes it originates (VIPs of the `announce = "bgp"` pools it
 * serves, and on a control-plane host the control-plane VIP and Nodes' pod CIDRs) and which sessions it opens, with which timers
 * and export policy. Pure and deterministic, built from parsed values only: an address reaches the
 * model only as a parsed number and only if a BGP pool holds it (or it is the control-plane VIP,
 * or a pod CIDR whose next hop is a Node's InternalIP).
 *
 * Decisions:
 * - Protocol and filter names are generated (`keelson_peer_<peer name>`, `keelson_vips4_p<pool>`)
 *   from checked values only. A peer's protocol is named for the peer, not its place in the list:
 *   BIRD restarts a protocol whose neighbor changes, so with index names removing or inserting a
 *   peer ahead of another reset that other session on every host at once (measured: the VIP gone
 *   from the ToR for 3.6 s). A static protocol keeps its pool's index: renaming one re-sends
 *   identical routes, which the routers ignore.
 * - Every route is a `blackhole` static route: BIRD never programs the host's kernel (there is no
 *   `protocol kernel`), and the routers see the session's address (VIPs) or the Node's
 *   InternalIP (`bgp_next_hop`, pod CIDRs) as next hop.
 * - Which pod CIDRs are announced, with which next hop, is `decidePodRoutes`'s decision (the
 *   Node's machine in the inventory, the next hop one of its addresses, no prefix for two Nodes);
 *   the model renders what it accepts and keeps the refusals for the route provider and logs.
 * - Pod CIDRs are grouped into one static protocol per peer subnet that holds the Node's IP, so a
 *   directly connected router only gets next hops it can reach, and adding a Node changes a
 *   protocol's routes, never a filter (a filter change re-sends every route).
 * - A host withdraws its VIPs (`announceServices` false) when it drains or is unhealthy; pod routes
 *   stay, as other hosts announce the same ones and a Node's route does not depend on this host.
 * - A `retired` host announces nothing at all (no pod routes either) but keeps its sessions, so the
 *   routers get an explicit withdrawal, as for a `[bgp]` removed at a reload.
 *
 * @module
 */
import {
  bgpHosts,
  type Community,
  peerHosts,
  peerTimers,
  resolveCommunity,
  routerIdOf,
} from "../../../src/config/bgp_values.ts";
import type { Config } from "../../../src/config/types.ts";
import { servesPool } from "../../../src/config/pool_serving.ts";
import {
  compareIps,
  firstIpOfFamily,
  formatIp,
  type IpAddress as ModelIp,
  type IpFamily,
  parseIp,
  parseRange,
} from "../../../src/net/ip.ts";
import { ownerOf } from "../ipam/address_owner.ts";
import { compareCodeUnits } from "../../../src/text/code_unit_order.ts";
import type { V1Node } from "@kubernetes/client-node";
import { decidePodRoutes, type PodRouteDecision } from "./decide_pod_routes.ts";

/** One parsed address (`src/net/ip.ts`). */
export type { ModelIp };

/** One parsed prefix (network bits only). */
export interface ModelPrefix extends ModelIp {
  length: number;
}

/** One static route: a blackhole, with a third-party next hop for pod CIDRs. */
export interface StaticRoute {
  prefix: ModelPrefix;
  nextHop?: ModelIp;
  /** The Node a pod route belongs to (never rendered; for the route provider). */
  node?: string;
}

/** One `protocol static`. */
export interface StaticProtocol {
  /** `keelson_vips4_p0`, `keelson_cp6`, `keelson_pods4_s1`, `keelson_pods4_any`. */
  name: string;
  /** What its routes are: Service VIPs of a pool, the control-plane VIP, or pod CIDRs. */
  kind: "service" | "control-plane" | "pod";
  /** The pool whose VIPs it holds (`service` protocols). */
  pool?: string;
  family: IpFamily;
  routes: StaticRoute[];
}

/** One `protocol bgp`. */
export interface PeerModel {
  /** `keelson_peer_<its name in [[bgp.peers]]>` (`BGP_NAME_REGEXP`: rendered quoted). */
  name: string;
  /** The inventory's name (its alphabet is `BGP_NAME_REGEXP`); also in a comment. */
  label: string;
  neighbor: ModelIp;
  asn: number;
  localAsn: number;
  localAddress?: ModelIp;
  holdS: number;
  keepaliveS: number;
  connectRetryS: number;
  connectDelayS: number;
  errorWaitS: [number, number];
  /** 0: `direct`; otherwise the TTL. */
  multihop: number;
  bfd: boolean;
  gracefulRestart: "aware" | "on";
  gracefulRestartS: number;
  password?: string;
  families: IpFamily[];
  /** Static protocols whose routes it receives (sorted). */
  exports: string[];
  communities: Community[];
  localPreference?: number;
}

/** The whole BIRD configuration of one host. */
export interface BirdModel {
  host: string;
  routerId: ModelIp;
  /** Present when some peer of this host uses BFD. */
  bfd?: { intervalMs: number; multiplier: number };
  statics: StaticProtocol[];
  peers: PeerModel[];
  /** Values left out, with the reason (never rendered; for logs). */
  skipped: { value: string; reason: string }[];
  /**
   * The pod-route decision the statics follow (never rendered; for the route provider); absent
   * when this host announces no pod routes (no peer receives them, retired, or no Nodes given).
   */
  podRoutes?: PodRouteDecision;
}

/** Input of `buildBirdModel`. */
export interface BirdModelInput {
  config: Config;
  /** This machine's name. */
  host: string;
  /** Ingress IPs of the Services Keelson handles; only those of BGP pools are kept. */
  serviceVips: readonly string[];
  /**
   * Every Node, whose pod CIDRs `decidePodRoutes` judges (route controller); absent or empty
   * when it is off.
   */
  nodes?: readonly V1Node[];
  /** false while draining or unhealthy: no Service VIPs. @default true */
  announceServices?: boolean;
  /** The local kube-apiserver answers /readyz: announce the control-plane VIP. @default false */
  controlPlaneHealthy?: boolean;
  /** Passwords by `password_file`, as read by `readBgpSecrets`. */
  passwords?: ReadonlyMap<string, string>;
}

/**
 * Builds the BIRD model of one control-plane host.
 * @param input configuration, host and the dynamic inputs
 * @returns the model, or `{ error }` naming the host and what is missing
 */
export function buildBirdModel(input: BirdModelInput): BirdModel | { error: string } {
  const { config, host } = input;
  const bgp = config.bgp;
  if (!bgp) return { error: `Cannot render BIRD: the inventory has no [bgp] table` };
  const machine = config.machines.find((m) => m.name === host);
  // retired machines count: a retired host keeps its sessions (below)
  const birdHosts = bgpHosts(
    config.machines.map((m) => ({ ...m, state: "active" as const })),
    config.pools,
  );
  if (!machine || !birdHosts.some((m) => m.name === host)) {
    const names = birdHosts.map((m) => `"${m.name}"`);
    return {
      error: `Cannot render BIRD for host "${host}": it is not a control-plane machine of the ` +
        `inventory nor one a BGP pool's served_by selects (BIRD hosts: ` +
        `${names.join(", ") || "none"})`,
    };
  }
  // the control-plane VIP and the Nodes' pod CIDRs are the control-plane hosts' to announce;
  // a host that only serves pools announces those pools' VIPs
  const controlPlane = machine.role === "control-plane";
  const routerText = routerIdOf(machine);
  const routerId = routerText === undefined ? undefined : parseIp(routerText);
  if (!routerId || routerId.family !== 4) {
    return { error: `Cannot render BIRD for host "${host}": it has no IPv4 router id` };
  }
  const skipped: BirdModel["skipped"] = [];
  // a retired host keeps its sessions and announces nothing: the routers get an explicit
  // withdrawal instead of a Cease, whose routes a router may keep for its graceful-restart time
  // (the same as a `[bgp]` removed at a reload, announcer.ts); `active` again resumes over them
  const retired = machine.state === "retired";
  const families = bgp.families.map((f) => (f === "ipv4" ? 4 : 6) as IpFamily);
  const statics: StaticProtocol[] = [];

  // Service VIPs of BGP pools, one protocol per pool and family
  const bgpPools = config.pools.map((pool, index) => ({ pool, index }))
    .filter(({ pool }) => pool.announce === "bgp" && servesPool(machine, pool));
  const vipsByPool = new Map<number, ModelIp[]>();
  const cpVips = config.control_plane.vip.map((v) => parseIp(v)).filter((v) => v !== undefined);
  for (const value of input.serviceVips) {
    const ip = parseIp(value);
    if (!ip) {
      skipped.push({ value, reason: "not an IP address" });
      continue;
    }
    if (cpVips.some((c) => c.family === ip.family && c.value === ip.value)) {
      skipped.push({ value, reason: "is the control-plane VIP" });
      continue;
    }
    const holder = ownerOf(config, ip.family, ip.value);
    // a VRRP pool's VIP, or no pool at all: keepalived's or nobody's
    if (holder?.announce !== "bgp") continue;
    if (!families.includes(ip.family)) {
      skipped.push({ value, reason: `IPv${ip.family} is not in bgp.families` });
      continue;
    }
    vipsByPool.set(holder.index, [...(vipsByPool.get(holder.index) ?? []), ip]);
  }
  if (!retired && (input.announceServices ?? true)) {
    for (const { index } of bgpPools) {
      for (const family of families) {
        const ips = dedupe((vipsByPool.get(index) ?? []).filter((ip) => ip.family === family));
        if (ips.length === 0) continue;
        statics.push({
          name: `keelson_vips${family}_p${index}`,
          kind: "service",
          pool: config.pools[index]!.name,
          family,
          routes: ips.map((ip) => ({ prefix: hostPrefix(ip) })),
        });
      }
    }
  }

  // the control-plane VIP, while the local apiserver is ready
  if (
    !retired && controlPlane && config.control_plane.announce === "bgp" &&
    input.controlPlaneHealthy === true
  ) {
    for (const family of families) {
      const ips = dedupe(cpVips.filter((ip) => ip.family === family));
      if (ips.length === 0) continue;
      statics.push({
        name: `keelson_cp${family}`,
        kind: "control-plane",
        family,
        routes: ips.map((ip) => ({ prefix: hostPrefix(ip) })),
      });
    }
  }

  // pod CIDRs, grouped by the peer subnet that holds the Node's InternalIP
  // peerHosts leaves retired machines out; this one keeps the peers it had while active
  const asActive = retired ? [{ ...machine, state: "active" as const }] : [machine];
  const hostPeers = bgp.peers.map((peer, index) => ({ peer, index }))
    .filter(({ peer }) => peerHosts(peer, asActive, config.pools).length > 0);
  const subnets = uniqueSubnets(
    hostPeers.filter(({ peer }) => peer.pod_cidrs).map(({ peer }) => peer.subnet),
  );
  const podStatics = new Map<string, StaticProtocol>();
  const anyPodPeer = controlPlane && hostPeers.some(({ peer }) => peer.pod_cidrs);
  const decision = anyPodPeer && !retired && (input.nodes?.length ?? 0) > 0
    ? decidePodRoutes({ config, nodes: input.nodes! })
    : undefined;
  for (const refused of decision?.refused ?? []) {
    skipped.push({ value: refused.cidr, reason: `Node "${refused.node}": ${refused.reason}` });
  }
  for (const route of decision?.announced ?? []) {
    // parsed again (defence in depth): only numbers reach the file
    const prefix = parsePrefix(route.cidr);
    const nextHop = parseIp(route.nextHop);
    if (!prefix || !nextHop || prefix.family !== nextHop.family) continue;
    const subnet = mostSpecific(subnets, nextHop);
    const name = `keelson_pods${prefix.family}_${subnet === undefined ? "any" : `s${subnet}`}`;
    const protocol: StaticProtocol = podStatics.get(name) ??
      { name, kind: "pod", family: prefix.family, routes: [] };
    protocol.routes.push({ prefix, nextHop, node: route.node });
    podStatics.set(name, protocol);
  }
  for (const protocol of podStatics.values()) {
    protocol.routes = dedupeRoutes(protocol.routes);
    statics.push(protocol);
  }
  statics.sort((a, b) => compareCodeUnits(a.name, b.name));

  const peers: PeerModel[] = [];
  let bfd = false;
  for (const { peer } of hostPeers) {
    const neighbor = parseIp(peer.address)!;
    let password: string | undefined;
    if (peer.password_file !== undefined) {
      password = input.passwords?.get(peer.password_file);
      if (password === undefined) {
        skipped.push({
          value: peer.name,
          reason: `its password file "${peer.password_file}" could not be read or validated; ` +
            "no session to this peer until it can",
        });
        continue;
      }
    }
    const exports: string[] = [];
    for (const s of statics) {
      if (s.kind === "service") {
        if (peer.pools.length === 0 || peer.pools.includes(s.pool!)) exports.push(s.name);
      } else if (s.kind === "control-plane") {
        if (peer.control_plane) exports.push(s.name);
      } else if (peer.pod_cidrs) {
        const subnet = peer.subnet === undefined
          ? undefined
          : subnets.findIndex((n) => n.source === canonicalSubnet(peer.subnet!));
        // a multihop peer resolves next hops recursively: it may take every pod route
        if (peer.multihop > 0 || s.name.endsWith(`_s${subnet}`)) exports.push(s.name);
      }
    }
    const { hold, keepalive } = peerTimers(bgp, peer);
    const localAddress = machine.bgp?.source_address !== undefined
      ? parseIp(machine.bgp.source_address)
      : firstIpOfFamily(machine.internal_ips, neighbor.family);
    bfd ||= peer.bfd;
    peers.push({
      name: peerProtocolName(peer.name),
      label: peer.name,
      neighbor,
      asn: peer.asn,
      localAsn: machine.bgp?.asn ?? bgp.asn,
      ...(localAddress ? { localAddress } : {}),
      holdS: hold,
      keepaliveS: keepalive,
      connectRetryS: bgp.connect_retry_time,
      connectDelayS: bgp.connect_delay_time,
      errorWaitS: [...bgp.error_wait_time],
      multihop: peer.multihop,
      bfd: peer.bfd,
      gracefulRestart: bgp.graceful_restart,
      gracefulRestartS: bgp.graceful_restart_time,
      ...(password !== undefined ? { password } : {}),
      families,
      exports: exports.sort(),
      communities: peer.communities.map((c) => resolveCommunity(bgp, c))
        .filter((c): c is Community => !("error" in c)),
      ...(peer.local_preference !== undefined ? { localPreference: peer.local_preference } : {}),
    });
  }
  return {
    host,
    routerId,
    ...(bfd ? { bfd: { intervalMs: bgp.bfd.interval_ms, multiplier: bgp.bfd.multiplier } } : {}),
    statics,
    peers,
    skipped,
    ...(decision ? { podRoutes: decision } : {}),
  };
}

/**
 * The VIPs a model announces, as text (for logs, events and tests).
 * @param model a built model
 * @returns sorted addresses of the `keelson_vips*` protocols
 */
export function announcedVips(model: BirdModel): string[] {
  return model.statics.filter((s) => s.kind === "service")
    .flatMap((s) => s.routes.map((r) => formatIp(r.prefix.family, r.prefix.value))).sort();
}

/**
 * The BIRD protocol of a `[[bgp.peers]]` entry: named for the peer, not its place in the list
 * (BIRD restarts a protocol whose neighbor changes, see the module's notes).
 * @param peer the peer's name in the inventory (`BGP_NAME_REGEXP`)
 */
export function peerProtocolName(peer: string): string {
  return `keelson_peer_${peer}`;
}

function hostPrefix(ip: ModelIp): ModelPrefix {
  return { ...ip, length: ip.family === 4 ? 32 : 128 };
}

/**
 * Parses a CIDR with its host bits clear.
 * @param text e.g. `10.244.1.0/24`
 * @returns the prefix, or undefined
 */
export function parsePrefix(text: string): ModelPrefix | undefined {
  if (!text.includes("/")) return undefined;
  const range = parseRange(text);
  if ("error" in range || range.prefix === undefined) return undefined;
  return { family: range.family, value: range.first, length: range.prefix };
}

interface Subnet {
  source: string;
  prefix: ModelPrefix;
}

function canonicalSubnet(text: string): string {
  const p = parsePrefix(text);
  return p ? `${formatIp(p.family, p.value)}/${p.length}` : text;
}

function uniqueSubnets(texts: (string | undefined)[]): Subnet[] {
  const out = new Map<string, Subnet>();
  for (const text of texts) {
    if (text === undefined) continue;
    const prefix = parsePrefix(text);
    if (!prefix) continue;
    const source = `${formatIp(prefix.family, prefix.value)}/${prefix.length}`;
    out.set(source, { source, prefix });
  }
  return [...out.values()].sort((a, b) => compareCodeUnits(a.source, b.source));
}

function mostSpecific(subnets: Subnet[], ip: ModelIp): number | undefined {
  let best: number | undefined;
  for (const [i, s] of subnets.entries()) {
    if (s.prefix.family !== ip.family) continue;
    const width = ip.family === 4 ? 32 : 128;
    const shift = BigInt(width - s.prefix.length);
    if ((ip.value >> shift) !== (s.prefix.value >> shift)) continue;
    if (best === undefined || s.prefix.length > subnets[best]!.prefix.length) best = i;
  }
  return best;
}

function dedupe(ips: ModelIp[]): ModelIp[] {
  const sorted = [...ips].sort(compareIps);
  return sorted.filter((ip, i) => i === 0 || compareIps(ip, sorted[i - 1]!) !== 0);
}

function dedupeRoutes(routes: StaticRoute[]): StaticRoute[] {
  // in address order, one route per prefix (decidePodRoutes gives no prefix to two Nodes; this
  // stays a guard: the file must never announce one prefix towards two next hops)
  const sorted = [...routes].sort((a, b) =>
    compareIps(a.prefix, b.prefix) || a.prefix.length - b.prefix.length ||
    compareIps(a.nextHop!, b.nextHop!)
  );
  return sorted.filter((r, i) => {
    const prev = sorted[i - 1];
    return !prev || compareIps(prev.prefix, r.prefix) !== 0 ||
      prev.prefix.length !== r.prefix.length;
  });
}
