/**
 * Cross-field checks on the addresses BIRD is given: each peer's address, each machine's
 * `source_address` and router id, and the address families the hosts announce. `bird -p` refuses
 * some of them (an IPv6 link-local neighbor without an interface, `::`), so the file would never
 * reach BIRD; it takes the others (a neighbor that is a host itself, a VIP or a broadcast
 * address; a source address of the other family; router id 0.0.0.0), and then the session never
 * comes up or announces the wrong thing. Folder-internal.
 *
 * @module
 */
import {
  canonicalIp,
  formatIp,
  type IpAddress,
  type IpFamily,
  type IpRange,
  nonUnicastProblem,
  parseIp,
  parseRange,
  rangeHolds,
} from "../net/ip.ts";
import type { RawIssue } from "./_schema_issues.ts";
import type { BgpConfig, BgpPeer } from "./bgp_schema.ts";
import { peerHosts, routerIdOf } from "./bgp_values.ts";
import type { Config, Machine, Pool } from "./types.ts";

/** What these checks read; an entry is undefined when it failed the schema. */
export interface BgpAddressView {
  machines: readonly (Machine | undefined)[];
  pools: readonly (Pool | undefined)[];
  controlPlane: Config["control_plane"] | undefined;
}

/** Who else holds an address: a machine, the control-plane VIP or a pool. */
interface AddressBook {
  machineOf: Map<string, { machine: Machine; index: number }>;
  controlPlane: Set<string>;
  /** Pool entries, with their pool's reserved ranges (never handed out, so never a VIP). */
  pools: { pool: Pool; range: IpRange; reserved: IpRange[] }[];
}

function addressBook(view: BgpAddressView): AddressBook {
  const machineOf = new Map<string, { machine: Machine; index: number }>();
  const own = (machine: Machine) => [...machine.internal_ips, ...machine.external_ips];
  const source = (machine: Machine) => machine.bgp?.source_address ?? [];
  // every machine's own addresses before any source_address: a source_address set to another
  // machine's address must not claim it for the machine it is set on, whatever the file order
  for (const addressesOf of [own, source]) {
    for (const [index, machine] of view.machines.entries()) {
      if (!machine) continue;
      for (const text of [addressesOf(machine)].flat()) {
        const key = canonicalIp(text);
        if (key !== undefined && !machineOf.has(key)) machineOf.set(key, { machine, index });
      }
    }
  }
  const controlPlane = new Set(
    (view.controlPlane?.vip ?? []).flatMap((v) => canonicalIp(v) ?? []),
  );
  const pools = view.pools.flatMap((pool) => {
    if (pool === undefined) return [];
    const reserved = pool.reserved.map((r) => parseRange(r))
      .filter((r): r is IpRange => !("error" in r));
    return pool.addresses.flatMap((text) => {
      const range = parseRange(text);
      return "error" in range ? [] : [{ pool, range, reserved }];
    });
  });
  return { machineOf, controlPlane, pools };
}

/**
 * Why an address is a VIP: the control-plane VIP or a pool address a Service may get (a
 * reserved one is never handed out, as for machine addresses); undefined otherwise.
 */
function vipProblem(book: AddressBook, ip: IpAddress): string | undefined {
  if (book.controlPlane.has(formatIp(ip.family, ip.value))) return "is the control-plane VIP";
  const holds = (range: IpRange) => rangeHolds(range, ip);
  const holder = book.pools.find(({ range, reserved }) => holds(range) && !reserved.some(holds));
  if (holder) return `lies in pool "${holder.pool.name}" ("${holder.range.source}")`;
  return undefined;
}

const isV6LinkLocal = (ip: IpAddress) => ip.family === 6 && ip.value >> 118n === 0x3fan;
const isV4LinkLocal = (ip: IpAddress) => ip.family === 4 && ip.value >> 16n === 0xa9fen;

/**
 * Why an address cannot be used for a BGP session at all: not unicast (IPv4 link-local stays
 * allowed: BIRD takes it on a direct link), or IPv6 link-local (BIRD needs the interface).
 */
function sessionAddressProblem(ip: IpAddress): string | undefined {
  if (isV6LinkLocal(ip)) {
    return "is link-local: BIRD needs an interface for such an address, which Keelson does not " +
      "configure";
  }
  if (isV4LinkLocal(ip)) return undefined;
  const special = nonUnicastProblem({ family: ip.family, first: ip.value, last: ip.value });
  return special && `cannot be used for a BGP session: ${special}`;
}

/**
 * Runs the address checks.
 * @param bgp the `[bgp]` table (passed the schema)
 * @param view the machines, pools and control plane that passed the schema
 * @returns one issue per problem
 */
export function checkBgpAddresses(bgp: BgpConfig, view: BgpAddressView): RawIssue[] {
  const book = addressBook(view);
  return [
    ...checkPeerAddresses(bgp, book),
    ...checkSourceAddresses(bgp, view, book),
    ...checkRouterIds(bgp, view),
    ...checkAnnouncedFamilies(bgp, view),
  ];
}

function checkPeerAddresses(bgp: BgpConfig, book: AddressBook): RawIssue[] {
  const issues: RawIssue[] = [];
  for (const [i, peer] of bgp.peers.entries()) {
    const ip = parseIp(peer.address);
    if (!ip) continue; // the schema said so
    const path = ["bgp", "peers", i, "address"];
    const session = sessionAddressProblem(ip);
    if (session) {
      const extras = [
        ...(peer.subnet !== undefined ? ["subnet"] : []),
        ...(peer.multihop > 0 ? ["multihop"] : []),
      ];
      issues.push({
        path,
        message: `"${peer.address}" ${session}` +
          (isV6LinkLocal(ip) && extras.length > 0
            ? ` (and a link-local peer takes no ${extras.join(" or ")})`
            : "") +
          "; write the router's global or unique-local unicast address",
      });
      continue;
    }
    const owner = book.machineOf.get(formatIp(ip.family, ip.value));
    if (owner) {
      issues.push({
        path,
        message: `"${peer.address}" is an address of machine "${owner.machine.name}": a ` +
          "Keelson host is never a BGP peer (BIRD would connect to itself or to another " +
          "host); write the router's address",
      });
      continue;
    }
    const vip = vipProblem(book, ip);
    if (vip) {
      issues.push({
        path,
        message: `"${peer.address}" ${vip}: the hosts would announce the router's own ` +
          "address as a VIP and never reach it; " +
          (vip.startsWith("lies in pool")
            ? "narrow the pool or add the address to its reserved list"
            : "write the router's address"),
      });
    }
  }
  return issues;
}

function checkSourceAddresses(
  bgp: BgpConfig,
  view: BgpAddressView,
  book: AddressBook,
): RawIssue[] {
  const issues: RawIssue[] = [];
  for (const [index, machine] of view.machines.entries()) {
    const text = machine?.bgp?.source_address;
    if (!machine || text === undefined) continue;
    const ip = parseIp(text);
    if (!ip) continue;
    const path = ["machines", index, "bgp", "source_address"];
    const problem = sessionAddressProblem(ip);
    const owner = book.machineOf.get(formatIp(ip.family, ip.value));
    const vip = vipProblem(book, ip);
    if (problem) {
      issues.push({ path, message: `"${text}" ${problem}; use an address of this host` });
    } else if (owner && owner.machine !== machine) {
      issues.push({
        path,
        message: `"${text}" is an address of machine "${owner.machine.name}", not of ` +
          `"${machine.name}": BIRD could not bind its sessions to it; use this host's address`,
      });
    } else if (vip) {
      issues.push({
        path,
        message: `"${text}" ${vip}: a VIP moves between hosts, so the sessions would break ` +
          "with it; use this host's own address",
      });
    } else {
      // one source address serves every session of the host: each peer must be of its family
      const peers = bgp.peers.filter((peer) =>
        peerHosts(peer, view.machines, view.pools).some((m) => m === machine)
      );
      const other = peers.find((peer) => parseIp(peer.address)?.family !== ip.family);
      if (other) {
        const family = ip.family === 4 ? 6 : 4;
        issues.push({
          path,
          message: `"${text}" is IPv${ip.family} but peer "${other.name}" (${other.address}) ` +
            `is IPv${family}: BIRD uses source_address for every session of this host, and ` +
            `that one would never come up; remove source_address, or peer over IPv${ip.family}`,
        });
      }
    }
  }
  return issues;
}

function checkRouterIds(bgp: BgpConfig, view: BgpAddressView): RawIssue[] {
  const issues: RawIssue[] = [];
  const peered = new Set<Machine>();
  for (const peer of bgp.peers) {
    for (const m of peerHosts(peer, view.machines, view.pools)) peered.add(m);
  }
  const seen = new Map<bigint, Machine>();
  for (const [index, machine] of view.machines.entries()) {
    if (!machine) continue;
    const explicit = machine.bgp?.router_id !== undefined;
    const text = routerIdOf(machine);
    const id = text === undefined ? undefined : parseIp(text);
    if (!id || id.family !== 4) continue; // no router id: _check_bgp.ts says so
    const path = explicit ? ["machines", index, "bgp", "router_id"] : [
      "machines",
      index,
      "internal_ips",
    ];
    if (id.value === 0n) {
      issues.push({
        path,
        message: `"${text}" is not a BGP identifier: it must be non-zero (RFC 6286), and ` +
          "routers refuse the session; use one of this host's IPv4 addresses",
      });
      continue;
    }
    if (!peered.has(machine)) continue;
    const other = seen.get(id.value);
    if (other) {
      issues.push({
        path,
        message: `router id "${text}" is also the router id of machine "${other.name}": ` +
          "each host's BIRD needs its own BGP identifier (routers and route reflectors take " +
          'two hosts with one for one); set bgp = { router_id = "…" } to a unique IPv4 address',
      });
    } else seen.set(id.value, machine);
  }
  return issues;
}

/**
 * A host announces a route of family F only when it has an address of F for the next hop (an
 * IPv6 VIP over an IPv4 session takes the host's IPv6 address on that link): without one, BIRD
 * logs "Missing next hop address" and announces none of them.
 */
function checkAnnouncedFamilies(bgp: BgpConfig, view: BgpAddressView): RawIssue[] {
  const issues: RawIssue[] = [];
  const lacking = (peers: readonly BgpPeer[], family: IpFamily): string[] => {
    const hosts = new Map<string, Machine>();
    for (const peer of peers) {
      for (const m of peerHosts(peer, view.machines, view.pools)) hosts.set(m.name, m);
    }
    return [...hosts.values()].filter((m) =>
      ![...m.internal_ips, ...(m.bgp?.source_address ? [m.bgp.source_address] : [])]
        .some((text) => parseIp(text)?.family === family)
    ).map((m) => m.name);
  };
  const message = (text: string, family: IpFamily, hosts: string[]) =>
    `"${text}" is IPv${family}, but ${hosts.length === 1 ? "host" : "hosts"} ${
      hosts.map((h) => `"${h}"`).join(", ")
    } ${hosts.length === 1 ? "has" : "have"} no IPv${family} address in internal_ips ` +
    `(nor source_address): BIRD would have no IPv${family} next hop there and announce none ` +
    `of these routes; add one, or keep such hosts from the peers that receive it`;
  const families = new Set(bgp.families.map((f) => (f === "ipv4" ? 4 : 6)));
  // the session itself: a host opens it from an address of the peer's family
  for (const [i, peer] of bgp.peers.entries()) {
    const ip = parseIp(peer.address);
    if (!ip) continue;
    const hosts = lacking([peer], ip.family);
    if (hosts.length > 0) {
      issues.push({
        path: ["bgp", "peers", i, "address"],
        message:
          `"${peer.address}" is IPv${ip.family}, but ${hosts.length === 1 ? "host" : "hosts"} ${
            hosts.map((h) => `"${h}"`).join(", ")
          } peering with it ${
            hosts.length === 1 ? "has" : "have"
          } no IPv${ip.family} address in internal_ips (nor source_address), so the session ` +
          `could not come up; add one, or limit the peer with hosts or zones`,
      });
    }
  }
  for (const [i, pool] of view.pools.entries()) {
    if (pool?.announce !== "bgp") continue;
    const receivers = bgp.peers.filter((p) => p.pools.length === 0 || p.pools.includes(pool.name));
    for (const [j, text] of pool.addresses.entries()) {
      const range = parseRange(text);
      if ("error" in range || !families.has(range.family)) continue;
      const hosts = lacking(receivers, range.family);
      if (hosts.length > 0) {
        issues.push({
          path: ["pools", i, "addresses", j],
          message: message(text, range.family, hosts),
        });
      }
    }
  }
  const cp = view.controlPlane;
  if (cp?.announce === "bgp") {
    const receivers = bgp.peers.filter((p) => p.control_plane);
    for (const [j, text] of cp.vip.entries()) {
      const ip = parseIp(text);
      if (!ip) continue;
      const path = ["control_plane", "vip", j];
      if (!families.has(ip.family)) {
        issues.push({
          path,
          message: `"${text}" is IPv${ip.family} but bgp.families does not include ` +
            `"ipv${ip.family}": no session would carry it`,
        });
        continue;
      }
      const hosts = lacking(receivers, ip.family);
      if (hosts.length > 0) issues.push({ path, message: message(text, ip.family, hosts) });
    }
  }
  return issues;
}
