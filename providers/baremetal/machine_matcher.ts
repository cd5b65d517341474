/**
 * Finds the inventory machine behind a Node, in a fixed order of evidence: `spec.providerID`, then
 * machine name = Node name, then hostname, then an InternalIP the kubelet reported. The first
 * step that matches decides; two machines matching at one step is an error, never a guess.
 *
 * @module
 */
import type { V1Node } from "@kubernetes/client-node";
import { type Machine, machineId } from "../../src/config/types.ts";
import { canonicalIp } from "../../src/net/ip.ts";

/** The annotation kubelet writes with its `--node-ip` (one IP or a dual-stack pair). */
export const PROVIDED_NODE_IP_ANNOTATION = "alpha.kubernetes.io/provided-node-ip";

/** Which evidence matched. */
export type MatchStep = "providerID" | "name" | "hostname" | "internalIP";

/** The outcome of matching one Node. */
export type MachineMatch =
  | { kind: "matched"; machine: Machine; step: MatchStep }
  | { kind: "absent"; tried: string }
  | { kind: "ambiguous"; step: MatchStep; machines: [Machine, Machine]; tried: string }
  | { kind: "foreign"; providerID: string }
  /** The only machine the evidence points at already belongs to another Node. */
  | { kind: "claimed"; machine: Machine; step: MatchStep; holder: string; tried: string };

/**
 * Which Node holds a providerID: the name of a Node whose `spec.providerID` is it, or undefined.
 * A machine whose providerID another Node holds is never matched again by name, hostname or IP,
 * so a Node reporting another machine's InternalIP cannot take its identity.
 */
export type ProviderIdHolder = (providerID: string) => string | undefined;

/**
 * Matches `node` against `machines`.
 * @param node the Node as the API has it
 * @param machines the inventory
 * @param scheme the providerID scheme (`[cluster] provider`), e.g. `baremetal`
 * @returns the machine and the step that found it, or why there is none
 */
export function matchMachine(
  node: V1Node,
  machines: Machine[],
  scheme: string,
  holderOf: ProviderIdHolder = () => undefined,
): MachineMatch {
  const name = node.metadata?.name ?? "";
  const providerID = node.spec?.providerID ?? "";
  const index = machineIndex(machines);
  if (providerID !== "") {
    const prefix = `${scheme}://`;
    if (!providerID.startsWith(prefix)) return { kind: "foreign", providerID };
    const id = providerID.slice(prefix.length);
    const found = index.byId.get(id) ?? [];
    // A providerID is the machine's identity: an unknown id is "absent", never a name lookup.
    if (found.length === 0) return { kind: "absent", tried: `providerID "${providerID}"` };
    return pick(found, "providerID", `providerID "${providerID}"`);
  }
  const hostnames = nodeHostnames(node);
  const ips = nodeInternalIps(node);
  const tried = describeTried(name, hostnames, ips);
  const steps: [MatchStep, () => Machine[]][] = [
    ["name", () => index.byName.get(name) ?? []],
    ["hostname", () => index.lookup(index.byHostname, hostnames)],
    ["internalIP", () => index.lookup(index.byInternalIp, ips)],
  ];
  let claimed: Extract<MachineMatch, { kind: "claimed" }> | undefined;
  for (const [step, candidates] of steps) {
    const found = candidates();
    const free = found.filter((machine) => {
      const holder = holderOf(`${scheme}://${machineId(machine)}`);
      if (holder === undefined || holder === name) return true;
      claimed ??= { kind: "claimed", machine, step, holder, tried };
      return false;
    });
    if (free.length > 0) return pick(free, step, tried);
  }
  return claimed ?? { kind: "absent", tried };
}

/** The inventory's machines by each kind of evidence, each list in inventory order. */
interface MachineIndex {
  byId: Map<string, Machine[]>;
  byName: Map<string, Machine[]>;
  /** Lower-cased hostname. */
  byHostname: Map<string, Machine[]>;
  /** Canonical InternalIP. */
  byInternalIp: Map<string, Machine[]>;
  /** The machines any of `keys` names, once each, in inventory order. */
  lookup(map: Map<string, Machine[]>, keys: Set<string>): Machine[];
}

// One index per inventory: a parsed inventory is never changed (a reload parses a new one), and
// a linear scan of every machine (parsing each IP) per lookup cost O(machines) per Node event.
const INDEXES = new WeakMap<readonly Machine[], MachineIndex>();

function machineIndex(machines: readonly Machine[]): MachineIndex {
  const known = INDEXES.get(machines);
  if (known) return known;
  const position = new Map<Machine, number>();
  const add = (map: Map<string, Machine[]>, key: string, machine: Machine) => {
    const list = map.get(key);
    if (list === undefined) map.set(key, [machine]);
    else if (list[list.length - 1] !== machine) list.push(machine);
  };
  const index: MachineIndex = {
    byId: new Map(),
    byName: new Map(),
    byHostname: new Map(),
    byInternalIp: new Map(),
    lookup(map, keys) {
      const found = new Set<Machine>();
      for (const key of keys) for (const machine of map.get(key) ?? []) found.add(machine);
      return [...found].sort((a, b) => position.get(a)! - position.get(b)!);
    },
  };
  machines.forEach((machine, i) => {
    position.set(machine, i);
    add(index.byId, machineId(machine), machine);
    add(index.byName, machine.name, machine);
    if (machine.hostname !== undefined) {
      add(index.byHostname, machine.hostname.toLowerCase(), machine);
    }
    for (const ip of machine.internal_ips) add(index.byInternalIp, canonicalOrSelf(ip), machine);
  });
  INDEXES.set(machines, index);
  return index;
}

function pick(found: Machine[], step: MatchStep, tried: string): MachineMatch {
  const [first, second] = found;
  if (second !== undefined && first !== undefined) {
    return { kind: "ambiguous", step, machines: [first, second], tried };
  }
  return { kind: "matched", machine: first as Machine, step };
}

/** The Node name and its kubelet-reported Hostname addresses, lower-cased. */
function nodeHostnames(node: V1Node): Set<string> {
  const names = new Set<string>();
  if (node.metadata?.name) names.add(node.metadata.name.toLowerCase());
  for (const address of node.status?.addresses ?? []) {
    if (address.type === "Hostname") names.add(address.address.toLowerCase());
  }
  return names;
}

/** InternalIPs the kubelet reported (status and the provided-node-ip annotation), canonical. */
function nodeInternalIps(node: V1Node): Set<string> {
  const ips = new Set<string>();
  for (const address of node.status?.addresses ?? []) {
    if (address.type === "InternalIP") ips.add(canonicalOrSelf(address.address));
  }
  const provided = node.metadata?.annotations?.[PROVIDED_NODE_IP_ANNOTATION];
  for (const ip of provided?.split(",") ?? []) {
    if (ip.trim() !== "") ips.add(canonicalOrSelf(ip.trim()));
  }
  return ips;
}

function canonicalOrSelf(ip: string): string {
  return canonicalIp(ip) ?? ip;
}

function describeTried(name: string, hostnames: Set<string>, ips: Set<string>): string {
  const parts = [`no providerID`, `name "${name}"`];
  const others = [...hostnames].filter((h) => h !== name.toLowerCase());
  parts.push(
    others.length > 0 ? `hostnames ${others.map((h) => `"${h}"`).join(", ")}` : "no other hostname",
  );
  parts.push(ips.size > 0 ? `InternalIPs ${[...ips].join(", ")}` : "no InternalIP");
  return parts.join(", ");
}
