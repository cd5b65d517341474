/**
 * `keelson import metallb`: MetalLB's IPAddressPools, L2Advertisements, BGPAdvertisements,
 * BGPPeers, Communities and BFDProfiles translated into a Keelson inventory, in three steps: the
 * objects read through their schemas (`metallb_parsed.ts`); the inventory decided from them as
 * fragments — the pools (`metallb_pools.ts`), `[bgp]` and its peers (`metallb_bgp.ts`,
 * `metallb_peer.ts`), the machines (`machines.ts`) — each with its notes; the text written by the
 * one writer (`inventory_writer.ts`). Every MetalLB field is either written as the Keelson key
 * that does the same (`METALLB_FIELDS`) or left as a note where that key would be, saying what it
 * was and what to do instead; nothing is dropped without a word. Pure: the Nodes are read by the
 * caller.
 *
 * @module
 */
import type { V1Node } from "@kubernetes/client-node";
import type { InventoryFragments, Note } from "./inventory_fragments.ts";
import { writeInventory } from "./inventory_writer.ts";
import { importedMachines, machinePlaceholder, nodeMachines } from "./machines.ts";
import { bgpBlocks } from "./metallb_bgp.ts";
import { readMetallbObjects } from "./metallb_legacy.ts";
import { decideAnnounce, type Parsed, parseMetallb, type PoolAnnounce } from "./metallb_parsed.ts";
import { keepalivedTable, poolFragments } from "./metallb_pools.ts";
import { markBgpHosts, servedByLabels } from "./node_selectors.ts";
import { ImportError } from "./source_objects.ts";

/**
 * Where each MetalLB spec field goes: the Keelson key that does the same, or "comment" when
 * Keelson has no equivalent and the output says so beside the nearest key. The mapping test
 * walks the schemas in `metallb_schema.ts` and requires every field here.
 */
export const METALLB_FIELDS: Readonly<Record<string, string>> = {
  "IPAddressPool.addresses": "pools.addresses (+ pools.reserved)",
  "IPAddressPool.autoAssign": "pools.auto_assign",
  "IPAddressPool.avoidBuggyIPs": "pools.reserved",
  "IPAddressPool.serviceAllocation": "pools.service_allocation",
  "IPAddressPool.serviceAllocation.priority": "pools.service_allocation.priority",
  "IPAddressPool.serviceAllocation.namespaces": "pools.service_allocation.namespaces",
  "IPAddressPool.serviceAllocation.namespaceSelectors": "comment",
  "IPAddressPool.serviceAllocation.serviceSelectors": "pools.service_allocation.service_selectors",
  "L2Advertisement.ipAddressPools": 'pools.announce = "vrrp"',
  "L2Advertisement.ipAddressPoolSelectors": 'pools.announce = "vrrp"',
  "L2Advertisement.nodeSelectors": "pools.served_by",
  "L2Advertisement.interfaces": "keepalived.interface",
  "L2Advertisement.serviceSelectors": "comment",
  "L2Advertisement.preferredNodeSelectors": "comment",
  "BGPAdvertisement.aggregationLength": "comment",
  "BGPAdvertisement.aggregationLengthV6": "comment",
  "BGPAdvertisement.localPref": "bgp.peers.local_preference",
  "BGPAdvertisement.communities": "bgp.peers.communities",
  "BGPAdvertisement.ipAddressPools": 'pools.announce = "bgp"',
  "BGPAdvertisement.ipAddressPoolSelectors": 'pools.announce = "bgp"',
  "BGPAdvertisement.nodeSelectors": "pools.served_by",
  "BGPAdvertisement.peers": "bgp.peers.pools",
  "BGPAdvertisement.serviceSelectors": "comment",
  "BGPPeer.myASN": "bgp.asn",
  "BGPPeer.peerASN": "bgp.peers.asn",
  "BGPPeer.localASN": "comment",
  "BGPPeer.dynamicASN": "bgp.peers.asn (internal) / comment (external)",
  "BGPPeer.peerAddress": "bgp.peers.address",
  "BGPPeer.interface": "comment",
  "BGPPeer.sourceAddress": "comment",
  "BGPPeer.peerPort": "comment",
  "BGPPeer.holdTime": "bgp.peers.hold_time",
  "BGPPeer.keepaliveTime": "bgp.peers.keepalive_time",
  "BGPPeer.connectTime": "comment",
  "BGPPeer.routerID": "comment",
  "BGPPeer.nodeSelectors": "bgp.peers.hosts / bgp.peers.zones / pools.served_by",
  "BGPPeer.password": "bgp.peers.password_file",
  "BGPPeer.passwordSecret": "bgp.peers.password_file",
  "BGPPeer.bfdProfile": "bgp.peers.bfd",
  "BGPPeer.enableGracefulRestart": "comment",
  "BGPPeer.ebgpMultiHop": "bgp.peers.multihop",
  "BGPPeer.vrf": "comment",
  "BGPPeer.disableMP": "comment",
  "BGPPeer.dualStackAddressFamily": "bgp.families",
  "Community.communities": "bgp.communities",
  "BFDProfile.receiveInterval": "bgp.bfd.interval_ms",
  "BFDProfile.transmitInterval": "bgp.bfd.interval_ms",
  "BFDProfile.detectMultiplier": "bgp.bfd.multiplier",
  "BFDProfile.echoInterval": "comment",
  "BFDProfile.echoMode": "comment",
  "BFDProfile.passiveMode": "comment",
  "BFDProfile.minimumTtl": "comment",
};

/** What the translation needs besides the file. */
export interface MetallbImportOptions {
  /** The file name, for messages and the header. */
  source: string;
  /** The cluster's Nodes, when a kubeconfig was given; else the machines are a placeholder. */
  nodes?: readonly V1Node[];
  /**
   * Receives one sentence per restriction of MetalLB's the inventory cannot keep (a selector
   * Keelson has no equivalent for), each naming the object, the field and what was written
   * instead; the caller prints them and exits non-zero, so a pool is never silently widened.
   */
  restrictionsLost?: string[];
}

/**
 * Translates MetalLB's exported resources into an inventory.
 * @param text the file `kubectl get ipaddresspools,l2advertisements,bgpadvertisements,bgppeers,
 *   communities,bfdprofiles -A -o yaml` wrote
 * @param options the file name and, when read, the Nodes
 * @returns the inventory text
 * @throws {ImportError} naming file, line and field when the file cannot be read as MetalLB's
 */
export function importMetallb(text: string, options: MetallbImportOptions): string {
  const { objects, converted } = readMetallbObjects(text, options.source);
  const parsed = parseMetallb(objects);
  if (parsed.pools.length === 0 && parsed.peers.length === 0) {
    throw new ImportError(
      `${options.source}: holds no MetalLB IPAddressPool or BGPPeer (it holds ` +
        `${heldText(parsed)}), so no pool or router to import; export every MetalLB resource ` +
        `together (${EXPORT_HINT})`,
    );
  }
  const { inventory, restrictionsLost } = metallbInventory(parsed, {
    source: options.source,
    converted,
    ...(options.nodes ? { nodes: options.nodes } : {}),
  });
  options.restrictionsLost?.push(...restrictionsLost);
  return writeInventory(inventory);
}

/**
 * Decides the inventory MetalLB's objects become.
 * @param parsed the objects, by kind
 * @param options the file name, the sentences on an older format converted, and the Nodes
 * @returns the fragments, and the restrictions of MetalLB's they cannot keep
 * @throws {ImportError} naming the field when an address entry is not MetalLB's
 */
export function metallbInventory(
  parsed: Parsed,
  options: { source: string; converted: readonly string[]; nodes?: readonly V1Node[] },
): { inventory: InventoryFragments; restrictionsLost: string[] } {
  const lost: string[] = [];
  const announce = decideAnnounce(parsed);
  const machines = importedMachines(options.nodes ?? []);
  const keepalived = keepalivedTable(parsed);
  // workers a BGP pool's served_by selects run BIRD, so they may peer
  const bgp = bgpBlocks(
    parsed,
    announce,
    markBgpHosts(machines, [...announce.values()], parsed.peers),
    lost,
  );
  const pools = poolFragments(parsed, announce, machines, lost);
  const inventory: InventoryFragments = {
    header: [
      ...headerNotes(options.source, parsed),
      ...options.converted.map((text) => ({ text })),
      ...unusedAdvertisements(parsed, announce),
    ],
    settings: [...(keepalived ? [keepalived] : []), ...bgp],
    pools: [
      ...(pools.length > 0
        ? [{ blankBefore: true, notes: [{ text: "Address pools, one per IPAddressPool." }] }]
        : []),
      ...pools,
    ],
    machines: options.nodes
      ? nodeMachines(options.nodes, servedByLabels(pools.map((p) => p.servingMachines)))
      : machinePlaceholder(),
  };
  return { inventory, restrictionsLost: lost };
}

/** How to export MetalLB's configuration, for messages. */
const EXPORT_HINT = "MetalLB 0.14 and later: kubectl get ipaddresspools,l2advertisements," +
  "bgpadvertisements,bgppeers,communities,bfdprofiles -A -o yaml; MetalLB 0.13: the same list " +
  "with addresspools added; MetalLB 0.12 and earlier: kubectl get configmap config -n " +
  "metallb-system -o yaml";

/** What the file holds, by kind: "2 BGPAdvertisement, 1 Community". */
function heldText(parsed: Parsed): string {
  const counts: [string, number][] = [
    ["L2Advertisement", parsed.l2.length],
    ["BGPAdvertisement", parsed.bgpAds.length],
    ["Community", parsed.communities.length],
    ["BFDProfile", parsed.bfd.size],
    ...parsed.ignored,
  ];
  return counts.filter(([, n]) => n > 0).map(([k, n]) => `${n} ${k}`).join(", ") || "no object";
}

/** Advertisements that select no pool: said in the header, as MetalLB ignored them too. */
function unusedAdvertisements(parsed: Parsed, announce: Map<string, PoolAnnounce>): Note[] {
  const used = new Set(
    [...announce.values()].flatMap((a) => [...a.l2, ...a.bgp].map((x) => x.object)),
  );
  return [...parsed.l2, ...parsed.bgpAds].filter(({ object }) => !used.has(object)).map((
    { object },
  ) => ({
    text: `MetalLB ${object.kind} "${object.name}" selects no IPAddressPool of the file; ` +
      "nothing to import from it.",
  }));
}

function headerNotes(source: string, parsed: Parsed): Note[] {
  const notes: Note[] = [{
    text: `Keelson inventory imported from MetalLB (${source}) by keelson import metallb. Review ` +
      'every comment that starts with "MetalLB": each is a setting Keelson has no equivalent ' +
      "for, with what to do instead. Then: keelson check --config THIS_FILE, and keelson plan " +
      "--config THIS_FILE --current none --kubeconfig FILE (exit 0: every Service kept) before " +
      "Keelson takes over (docs/migration.md).\n\n" +
      "How Keelson serves what MetalLB served: addresses of L2 pools are held by keepalived " +
      "(VRRP, gratuitous ARP / unsolicited NA) on the control-plane machines, not by a speaker " +
      "on every Node; addresses of BGP pools are announced by BIRD on every healthy " +
      "control-plane machine (ECMP at the routers). Services keep the addresses MetalLB gave " +
      "them: Keelson reads metallb.io/* and metallb.universe.tf/* annotations.",
  }];
  if (parsed.ignored.size > 0) {
    notes.push({
      text: "Not read (no Keelson equivalent, or not MetalLB configuration): " +
        [...parsed.ignored].map(([k, n]) => `${n} ${k}`).join(", ") + ".",
    });
  }
  return notes;
}
