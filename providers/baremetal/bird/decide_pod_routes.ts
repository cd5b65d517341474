/**
 * Which Nodes' pod CIDRs are announced over BGP, with which next hop, and why the others are not.
 * A Node object is input from the API: anything that can write Nodes could otherwise have the
 * hosts announce any prefix towards any address. Pure and deterministic; `run` (the BIRD model
 * every host renders, the route provider, the routes judged from heartbeats), `render bird` and
 * `plan` all decide through it.
 *
 * Rules, in order:
 * - The Node's machine is in the inventory, found by `spec.providerID` or by name (hostname and
 *   InternalIP are what a Node reports about itself: such a Node's routes wait until the
 *   cloud-node controller has given it its providerID), the machine is not `retired`, and no
 *   other Node resolves to the same machine (then neither gets routes).
 * - Each CIDR parses, lies inside `[cluster] cluster_cidr` and is not the whole of it, is of a
 *   family in `[bgp] families`, and is the Node's only one of its family.
 * - The next hop is one of the machine's own `internal_ips` of that family (one the Node reports
 *   as InternalIP first), never a VIP (any pool address, the control-plane VIP), a router (a
 *   `[[bgp.peers]]` address) or an address that is not unicast (unspecified, loopback,
 *   link-local, multicast, broadcast and reserved).
 * - No prefix is announced for two Nodes: CIDRs of different Nodes that overlap are refused for
 *   every one of them (the contested prefix for neither), each naming the other, so the route
 *   controller's Warning reaches both Nodes. Only routes that pass the rules above contest: a Node
 *   outside the inventory claiming another Node's CIDR changes nothing.
 *
 * @module
 */
import type { V1Node } from "@kubernetes/client-node";
import { type Config, type Machine, machineId } from "../../../src/config/types.ts";
import { clusterCidrRanges } from "../../../src/config/cluster_cidr.ts";
import {
  compareRangeStarts,
  compareValues,
  formatIp,
  type IpFamily,
  type IpRange,
  nonUnicastProblem,
  parseIp,
  parseRange,
  rangeHolds,
} from "../../../src/net/ip.ts";
import { compareCodeUnits } from "../../../src/text/code_unit_order.ts";
import { matchMachine } from "../machine_matcher.ts";

/** A pod route to announce: canonical CIDR and next hop, and the machine behind the Node. */
export interface AnnouncedPodRoute {
  node: string;
  machine: string;
  /** Canonical CIDR, e.g. `10.244.1.0/24`. */
  cidr: string;
  /** Canonical next hop, one of the machine's `internal_ips`. */
  nextHop: string;
}

/** The kinds of refusal, for tests and tools (the reason says it in words). */
export type PodRouteRefusal =
  | "no-machine"
  | "not-initialized"
  | "machine-retired"
  | "machine-contested"
  | "bad-cidr"
  | "outside-cluster-cidr"
  | "whole-cluster-cidr"
  | "family"
  | "no-next-hop"
  | "bad-next-hop"
  | "contested";

/** A pod CIDR that is not announced, and why. */
export interface RefusedPodRoute {
  node: string;
  /** The CIDR as the Node wrote it. */
  cidr: string;
  kind: PodRouteRefusal;
  /** A sentence without the Node's name, e.g. `it overlaps 10.244.1.0/24 of Node "w-1" …`. */
  reason: string;
}

/** The decision for every Node. */
export interface PodRouteDecision {
  /** Sorted by Node name. */
  announced: AnnouncedPodRoute[];
  /** Sorted by Node name. */
  refused: RefusedPodRoute[];
}

/** Inputs of `decidePodRoutes`. */
export interface PodRouteDecisionInput {
  config: Config;
  /** Every Node (a lister's or a snapshot's); Nodes being deleted are left out. */
  nodes: readonly V1Node[];
}

interface Candidate extends AnnouncedPodRoute {
  written: string;
  range: IpRange;
}

/**
 * Decides every Node's pod routes.
 * @param input the inventory in force and the Nodes
 * @returns what is announced and what is refused, with the reason
 */
export function decidePodRoutes(input: PodRouteDecisionInput): PodRouteDecision {
  const { config } = input;
  const view = routeInventory(config);
  const refused: RefusedPodRoute[] = [];
  const nodes = input.nodes.filter((n) => n.metadata?.name && !n.metadata.deletionTimestamp)
    .sort((a, b) => compareCodeUnits(a.metadata!.name!, b.metadata!.name!));
  const holders = new Map<string, string>();
  for (const node of nodes) {
    const id = node.spec?.providerID;
    if (typeof id === "string" && id !== "" && !holders.has(id)) {
      holders.set(id, node.metadata!.name!);
    }
  }

  // each Node with pod CIDRs to its machine, or a refusal of all its CIDRs
  const withCidrs: { node: V1Node; name: string; cidrs: string[]; machine: Machine }[] = [];
  const nodesOf = new Map<Machine, string[]>();
  const refuseAll = (name: string, cidrs: string[], kind: PodRouteRefusal, reason: string) => {
    for (const cidr of cidrs) refused.push({ node: name, cidr, kind, reason });
  };
  for (const node of nodes) {
    const cidrs = podCidrsOf(node);
    if (cidrs.length === 0) continue;
    const name = node.metadata!.name!;
    const found = findMachine(node, config, view, holders);
    if ("kind" in found) {
      refuseAll(name, cidrs, found.kind, found.reason);
      continue;
    }
    withCidrs.push({ node, name, cidrs, machine: found.machine });
    const names = nodesOf.get(found.machine);
    if (names) names.push(name);
    else nodesOf.set(found.machine, [name]);
  }

  const candidates: Candidate[] = [];
  for (const { node, name, cidrs, machine } of withCidrs) {
    const others = nodesOf.get(machine)!.filter((n) => n !== name);
    if (others.length > 0) {
      refuseAll(
        name,
        cidrs,
        "machine-contested",
        `machine "${machine.name}" is claimed by Node${others.length > 1 ? "s" : ""} ` +
          `${others.map((n) => `"${n}"`).join(", ")} too; the pod routes of such a machine are ` +
          "announced for none of its Nodes until only one remains",
      );
      continue;
    }
    const seenFamilies = new Set<IpFamily>();
    for (const cidr of cidrs) {
      const refuse = (kind: PodRouteRefusal, reason: string) =>
        refused.push({ node: name, cidr, kind, reason });
      const range = parseRange(cidr);
      if ("error" in range || range.prefix === undefined || !cidr.includes("/")) {
        refuse("bad-cidr", `"${cidr}" is not a CIDR${"error" in range ? `: ${range.error}` : ""}`);
        continue;
      }
      if (seenFamilies.has(range.family)) {
        refuse(
          "bad-cidr",
          `it is a second IPv${range.family} pod CIDR of the Node; a Node has one per family`,
        );
        continue;
      }
      seenFamilies.add(range.family);
      const inside = view.clusterRanges.find((r) =>
        r.family === range.family && r.first <= range.first && range.last <= r.last
      );
      if (!inside) {
        refuse(
          "outside-cluster-cidr",
          `its pod CIDR is outside [cluster] cluster_cidr (${
            config.cluster.cluster_cidr.join(", ") || "none set"
          }); only pod CIDRs inside it are announced`,
        );
        continue;
      }
      if (inside.first === range.first && inside.last === range.last) {
        refuse(
          "whole-cluster-cidr",
          `it is the whole of [cluster] cluster_cidr "${inside.source}"; a Node's pod CIDR is ` +
            "one part of the pods' range, and this one would take every other Node's pods",
        );
        continue;
      }
      if (!view.families.has(range.family)) {
        refuse("family", `IPv${range.family} is not in [bgp] families`);
        continue;
      }
      const hop = chooseNextHop(node, machine, range.family, view);
      if ("kind" in hop) {
        refuse(hop.kind, hop.reason);
        continue;
      }
      candidates.push({
        node: name,
        machine: machine.name,
        cidr: `${formatIp(range.family, range.first)}/${range.prefix}`,
        nextHop: hop.nextHop,
        written: cidr,
        range,
      });
    }
  }

  const { announced, contested } = settleOverlaps(candidates);
  refused.push(...contested);
  const byNode = (a: { node: string }, b: { node: string }) => compareCodeUnits(a.node, b.node);
  return { announced: announced.sort(byNode), refused: refused.sort(byNode) };
}

/** One of a machine's `internal_ips` as a next hop: canonical text, and why not, if so. */
interface HopCandidate {
  text: string;
  key: string;
  problem: string | undefined;
}

/** What the decision reads from one inventory, derived once per configuration. */
interface RouteInventory {
  byId: Map<string, Machine>;
  byName: Map<string, Machine>;
  /** Per machine: its providerID. */
  providerIds: Map<Machine, string>;
  /** Per machine and family: its `internal_ips` as next-hop candidates, in inventory order. */
  hops: Map<Machine, Map<IpFamily, { all: HopCandidate[]; allowed: HopCandidate[] }>>;
  families: Set<IpFamily>;
  clusterRanges: IpRange[];
}

// a parsed configuration is never changed (a reload parses a new one): one view per object, so a
// decision over thousands of Nodes parses each machine's addresses once, not once per Node
const VIEWS = new WeakMap<Config, RouteInventory>();

function routeInventory(config: Config): RouteInventory {
  const known = VIEWS.get(config);
  if (known) return known;
  const forbidden = nextHopProblems(config);
  const byId = new Map<string, Machine>();
  const byName = new Map<string, Machine>();
  const hops: RouteInventory["hops"] = new Map();
  const providerIds = new Map<Machine, string>();
  for (const machine of config.machines) {
    if (!byId.has(machineId(machine))) byId.set(machineId(machine), machine);
    if (!byName.has(machine.name)) byName.set(machine.name, machine);
    providerIds.set(machine, `${config.cluster.provider}://${machineId(machine)}`);
    const byFamily = new Map<IpFamily, { all: HopCandidate[]; allowed: HopCandidate[] }>();
    for (const address of machine.internal_ips) {
      const ip = parseIp(address);
      if (!ip) continue;
      const text = formatIp(ip.family, ip.value);
      const special = nonUnicastProblem({ family: ip.family, first: ip.value, last: ip.value });
      const problem = (special && `is not a unicast host address (${special})`) ??
        forbidden.exact.get(text) ?? poolProblem(forbidden.pools, ip);
      const lists = byFamily.get(ip.family) ?? { all: [], allowed: [] };
      const candidate = { text, key: `${ip.family}/${ip.value}`, problem };
      lists.all.push(candidate);
      if (problem === undefined) lists.allowed.push(candidate);
      byFamily.set(ip.family, lists);
    }
    hops.set(machine, byFamily);
  }
  const view: RouteInventory = {
    byId,
    byName,
    providerIds,
    hops,
    families: new Set((config.bgp?.families ?? []).map((f) => (f === "ipv4" ? 4 : 6))),
    clusterRanges: clusterCidrRanges(config),
  };
  VIEWS.set(config, view);
  return view;
}

/** The Node's pod CIDRs as written (`spec.podCIDRs`, else `spec.podCIDR`); strings only. */
function podCidrsOf(node: V1Node): string[] {
  const list = node.spec?.podCIDRs ?? (node.spec?.podCIDR ? [node.spec.podCIDR] : []);
  return Array.isArray(list) ? list.filter((c): c is string => typeof c === "string") : [];
}

/**
 * The Node's machine, found by `spec.providerID` or by name (a machine whose providerID another
 * Node holds is not found by name); otherwise the matcher's answer says why there is none.
 */
function findMachine(
  node: V1Node,
  config: Config,
  view: RouteInventory,
  holders: Map<string, string>,
): { machine: Machine } | { kind: PodRouteRefusal; reason: string } {
  const scheme = config.cluster.provider;
  const name = node.metadata!.name!;
  const providerID = node.spec?.providerID;
  let machine: Machine | undefined;
  if (typeof providerID === "string" && providerID !== "") {
    if (providerID.startsWith(`${scheme}://`)) {
      machine = view.byId.get(providerID.slice(scheme.length + 3));
    }
  } else {
    machine = view.byName.get(name);
    const holder = machine && holders.get(view.providerIds.get(machine)!);
    if (holder !== undefined && holder !== name) machine = undefined;
  }
  if (machine) return usable(machine);
  // not found by providerID or name: the matcher says why (absent, foreign, claimed, or found
  // only by what the Node reports)
  return machineRefusal(
    matchMachine(node, config.machines, scheme, (id) => holders.get(id)),
    scheme,
  );
}

function usable(
  machine: Machine,
): { machine: Machine } | { kind: PodRouteRefusal; reason: string } {
  if (machine.state === "retired") {
    return { kind: "machine-retired", reason: `machine "${machine.name}" is retired` };
  }
  return { machine };
}

function machineRefusal(
  match: ReturnType<typeof matchMachine>,
  scheme: string,
): { machine: Machine } | { kind: PodRouteRefusal; reason: string } {
  switch (match.kind) {
    case "absent":
      return {
        kind: "no-machine",
        reason: `its machine is not in the inventory (${match.tried}); pod routes are ` +
          "announced only for Nodes of inventory machines",
      };
    case "foreign":
      return {
        kind: "no-machine",
        reason: `its providerID "${match.providerID}" does not start with "${scheme}://", so ` +
          "no inventory machine is behind it",
      };
    case "claimed":
      return {
        kind: "no-machine",
        reason: `machine "${match.machine.name}" (matched by ${match.step}) belongs to Node ` +
          `"${match.holder}", which holds its providerID`,
      };
    case "ambiguous":
      return {
        kind: "no-machine",
        reason: `machines "${match.machines[0].name}" and "${match.machines[1].name}" both ` +
          `match it by ${match.step}`,
      };
    case "matched":
      if (match.step === "hostname" || match.step === "internalIP") {
        return {
          kind: "not-initialized",
          reason:
            `it matches machine "${match.machine.name}" only by ${
              match.step === "hostname" ? "a hostname" : "an InternalIP"
            } it reports itself; its pod routes wait until it is initialized (spec.providerID ` +
            `${scheme}://${machineId(match.machine)})`,
        };
      }
      return usable(match.machine);
  }
}

/** Canonical address -> why it is never a next hop (VIPs, routers). */
function nextHopProblems(config: Config): {
  exact: Map<string, string>;
  pools: { name: string; range: IpRange }[];
} {
  const exact = new Map<string, string>();
  for (const peer of config.bgp?.peers ?? []) {
    const ip = parseIp(peer.address);
    if (ip) {
      exact.set(
        formatIp(ip.family, ip.value),
        `is the address of [[bgp.peers]] "${peer.name}" (the router itself)`,
      );
    }
  }
  for (const vip of config.control_plane.vip) {
    const ip = parseIp(vip);
    if (ip) exact.set(formatIp(ip.family, ip.value), "is the control-plane VIP");
  }
  const pools = config.pools.flatMap((pool) =>
    pool.addresses.flatMap((text) => {
      const range = parseRange(text);
      return "error" in range ? [] : [{ name: pool.name, range }];
    })
  );
  return { exact, pools };
}

/**
 * The next hop of a pod CIDR: the machine's first `internal_ips` entry of the family that may be
 * one, one the Node reports as InternalIP first.
 */
function chooseNextHop(
  node: V1Node,
  machine: Machine,
  family: IpFamily,
  view: RouteInventory,
): { nextHop: string } | { kind: PodRouteRefusal; reason: string } {
  const { all: own, allowed } = view.hops.get(machine)?.get(family) ?? { all: [], allowed: [] };
  if (own.length === 0) {
    return {
      kind: "no-next-hop",
      reason: `machine "${machine.name}" has no IPv${family} address in internal_ips for a ` +
        "next hop",
    };
  }
  if (allowed.length === 0) {
    return {
      kind: "bad-next-hop",
      reason: `its next hop would be ${own[0]!.text} (machine "${machine.name}"), which ` +
        `${own[0]!.problem}; a next hop is a unicast address of the Node's own machine, never a ` +
        "VIP or a router",
    };
  }
  if (allowed.length === 1) return { nextHop: allowed[0]!.text };
  // several: the one the Node uses, if it reports one of them
  const reported = new Set(
    (node.status?.addresses ?? []).filter((a) => a?.type === "InternalIP").flatMap((a) => {
      const ip = typeof a.address === "string" ? parseIp(a.address) : undefined;
      return ip ? [`${ip.family}/${ip.value}`] : [];
    }),
  );
  return { nextHop: (allowed.find((c) => reported.has(c.key)) ?? allowed[0]!).text };
}

function poolProblem(
  pools: readonly { name: string; range: IpRange }[],
  ip: { family: IpFamily; value: bigint },
): string | undefined {
  const holder = pools.find(({ range }) => rangeHolds(range, ip));
  return holder && `lies in pool "${holder.name}" ("${holder.range.source}"): a VIP`;
}

/**
 * Splits the candidates into those announced and those contested: CIDRs of different Nodes that
 * overlap are all refused. CIDRs nest or are disjoint, so one sweep in address order finds each
 * group of overlapping ones.
 */
function settleOverlaps(candidates: readonly Candidate[]): {
  announced: AnnouncedPodRoute[];
  contested: RefusedPodRoute[];
} {
  const sorted = [...candidates].sort((a, b) =>
    compareRangeStarts(a.range, b.range) || compareValues(b.range.last, a.range.last) ||
    compareCodeUnits(a.node, b.node)
  );
  const announced: AnnouncedPodRoute[] = [];
  const contested: RefusedPodRoute[] = [];
  const settle = (group: Candidate[]) => {
    const nodes = new Set(group.map((c) => c.node));
    if (nodes.size <= 1) {
      for (const c of group) {
        announced.push({ node: c.node, machine: c.machine, cidr: c.cidr, nextHop: c.nextHop });
      }
      return;
    }
    for (const c of group) {
      const others = group.filter((o) =>
        o.node !== c.node && o.range.first <= c.range.last && c.range.first <= o.range.last
      );
      const named = others.slice(0, 3).map((o) => `${o.cidr} of Node "${o.node}"`).join(", ") +
        (others.length > 3 ? ` and ${others.length - 3} more` : "");
      contested.push({
        node: c.node,
        cidr: c.written,
        kind: "contested",
        reason: `it overlaps ${named}; a contested pod CIDR is announced for none of the Nodes ` +
          "claiming it until only one does",
      });
    }
  };
  let group: Candidate[] = [];
  let reach = -1n;
  for (const c of sorted) {
    if (group.length > 0 && c.range.family === group[0]!.range.family && c.range.first <= reach) {
      group.push(c);
      if (c.range.last > reach) reach = c.range.last;
      continue;
    }
    if (group.length > 0) settle(group);
    group = [c];
    reach = c.range.last;
  }
  if (group.length > 0) settle(group);
  return { announced, contested };
}
