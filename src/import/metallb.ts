/**
 * `keelson import metallb`: MetalLB's IPAddressPools, L2Advertisements, BGPAdvertisements,
 * BGPPeers, Communities and BFDProfiles translated into a Keelson inventory. Every MetalLB field
 * is either written as the Keelson key that does the same (`METALLB_FIELDS`) or left as a comment
 * where that key would be, saying what it was and what to do instead; nothing is dropped without
 * a word. Pools keep exactly the addresses MetalLB handed out (`pool_addresses.ts`). Pure: the
 * Nodes are read by the caller.
 *
 * @module
 */
import type { V1Node } from "@kubernetes/client-node";
import { BGP_NAME_REGEXP } from "../config/bgp_schema.ts";
import type { AddressInterval } from "../config/pool_size.ts";
import { parseIp } from "../net/ip.ts";
import { errorMessage } from "../log/error_message.ts";
import { selectorText, selects } from "./label_match.ts";
import { isNamespaceName, isObjectName, isValidSelector, shellQuote } from "./shell_command.ts";
import {
  CONTROL_PLANE_LABELS,
  type ImportedMachine,
  importedMachines,
  writeMachinePlaceholder,
  writeNodeMachines,
} from "./machines.ts";
import {
  type BfdProfile,
  type BgpAdvertisement,
  type BgpPeer,
  type Community,
  type IpAddressPool,
  type L2Advertisement,
  METALLB_KINDS,
  METALLB_SPECS,
  type MetallbSelector,
} from "./metallb_schema.ts";
import { markBgpHosts, type NodeSelection, poolServing, writeServedBy } from "./node_selectors.ts";
import { dotZeroAndBroadcast, keelsonAddresses } from "./pool_addresses.ts";
import { readMetallbObjects } from "./metallb_legacy.ts";
import { ImportError, parseObject, type SourceObject } from "./source_objects.ts";
import { TomlLines, type TomlValue } from "./toml_text.ts";

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
  "L2Advertisement.nodeSelectors": "comment",
  "L2Advertisement.interfaces": "keepalived.interface",
  "L2Advertisement.serviceSelectors": "comment",
  "L2Advertisement.preferredNodeSelectors": "comment",
  "BGPAdvertisement.aggregationLength": "comment",
  "BGPAdvertisement.aggregationLengthV6": "comment",
  "BGPAdvertisement.localPref": "bgp.peers.local_preference",
  "BGPAdvertisement.communities": "bgp.peers.communities",
  "BGPAdvertisement.ipAddressPools": 'pools.announce = "bgp"',
  "BGPAdvertisement.ipAddressPoolSelectors": 'pools.announce = "bgp"',
  "BGPAdvertisement.nodeSelectors": "comment",
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
  "BGPPeer.nodeSelectors": "bgp.peers.hosts / bgp.peers.zones",
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

interface Parsed {
  pools: { object: SourceObject; pool: IpAddressPool }[];
  l2: { object: SourceObject; ad: L2Advertisement }[];
  bgpAds: { object: SourceObject; ad: BgpAdvertisement }[];
  peers: { object: SourceObject; peer: BgpPeer }[];
  communities: { object: SourceObject; community: Community }[];
  bfd: Map<string, { object: SourceObject; profile: BfdProfile }>;
  ignored: Map<string, number>;
  /** Restrictions the inventory cannot keep, one sentence each (see `restrictionsLost`). */
  lost: string[];
}

const FRR_MULTIHOP_TTL = 255;
const BGP_PORT = 179;

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
  const parsed = parse(objects);
  if (parsed.pools.length === 0 && parsed.peers.length === 0) {
    throw new ImportError(
      `${options.source}: holds no MetalLB IPAddressPool or BGPPeer (it holds ` +
        `${heldText(parsed)}), so no pool or router to import; export every MetalLB resource ` +
        `together (${EXPORT_HINT})`,
    );
  }
  const out = new TomlLines();
  header(out, options.source, parsed);
  for (const sentence of converted) out.comment(sentence);
  const announce = decideAnnounce(parsed);
  unusedAdvertisements(out, parsed, announce);
  writeKeepalived(out, parsed);
  const bgpPools = parsed.pools.map((p) => announce.get(p.pool.metadata.name)!);
  writeBgp(
    out,
    parsed,
    announce,
    markBgpHosts(importedMachines(options.nodes ?? []), bgpPools, parsed.peers),
  );
  const machineLabels = writePools(out, parsed, announce, importedMachines(options.nodes ?? []));
  if (options.nodes) writeNodeMachines(out, options.nodes, machineLabels);
  else writeMachinePlaceholder(out);
  options.restrictionsLost?.push(...parsed.lost);
  return out.text();
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
function unusedAdvertisements(
  out: TomlLines,
  parsed: Parsed,
  announce: Map<string, PoolAnnounce>,
): void {
  const used = new Set(
    [...announce.values()].flatMap((a) => [...a.l2, ...a.bgp].map((x) => x.object)),
  );
  for (const { object } of [...parsed.l2, ...parsed.bgpAds]) {
    if (used.has(object)) continue;
    out.comment(
      `MetalLB ${object.kind} "${object.name}" selects no IPAddressPool of the file; nothing ` +
        "to import from it.",
    );
  }
}

function parse(objects: SourceObject[]): Parsed {
  const parsed: Parsed = {
    pools: [],
    l2: [],
    bgpAds: [],
    peers: [],
    communities: [],
    bfd: new Map(),
    ignored: new Map(),
    lost: [],
  };
  for (const object of objects) {
    const metallb = object.apiVersion.startsWith("metallb.io/");
    switch (metallb ? object.kind : "") {
      case "IPAddressPool": {
        const pool = parseObject(object, METALLB_KINDS.IPAddressPool);
        parsed.pools.push({ object, pool });
        break;
      }
      case "L2Advertisement":
        parsed.l2.push({ object, ad: parseObject(object, METALLB_KINDS.L2Advertisement) });
        break;
      case "BGPAdvertisement":
        parsed.bgpAds.push({ object, ad: parseObject(object, METALLB_KINDS.BGPAdvertisement) });
        break;
      case "BGPPeer":
        parsed.peers.push({ object, peer: parseObject(object, METALLB_KINDS.BGPPeer) });
        break;
      case "Community":
        parsed.communities.push({
          object,
          community: parseObject(object, METALLB_KINDS.Community),
        });
        break;
      case "BFDProfile": {
        const profile = parseObject(object, METALLB_KINDS.BFDProfile);
        parsed.bfd.set(profile.metadata.name, { object, profile });
        break;
      }
      default: {
        const kind = metallb
          ? object.kind
          : `${object.kind} (${object.apiVersion || "no apiVersion"})`;
        parsed.ignored.set(kind, (parsed.ignored.get(kind) ?? 0) + 1);
      }
    }
  }
  return parsed;
}

function header(out: TomlLines, source: string, parsed: Parsed): void {
  out.comment(
    `Keelson inventory imported from MetalLB (${source}) by keelson import metallb. Review ` +
      'every comment that starts with "MetalLB": each is a setting Keelson has no equivalent ' +
      "for, with what to do instead. Then: keelson check --config THIS_FILE, and keelson plan " +
      "--config THIS_FILE --current none --kubeconfig FILE (exit 0: every Service kept) before " +
      "Keelson takes over (docs/migration.md).\n\n" +
      "How Keelson serves what MetalLB served: addresses of L2 pools are held by keepalived " +
      "(VRRP, gratuitous ARP / unsolicited NA) on the control-plane machines, not by a speaker " +
      "on every Node; addresses of BGP pools are announced by BIRD on every healthy " +
      "control-plane machine (ECMP at the routers). Services keep the addresses MetalLB gave " +
      "them: Keelson reads metallb.io/* and metallb.universe.tf/* annotations.",
  );
  if (parsed.ignored.size > 0) {
    out.comment(
      "Not read (no Keelson equivalent, or not MetalLB configuration): " +
        [...parsed.ignored].map(([k, n]) => `${n} ${k}`).join(", ") + ".",
    );
  }
}

/** Unknown spec fields (a newer MetalLB): named in a comment, never dropped silently. */
function unknownFields(
  out: TomlLines,
  object: SourceObject,
  spec: Record<string, unknown>,
  known: Record<string, unknown>,
): void {
  for (const key of Object.keys(spec)) {
    if (Object.hasOwn(known, key)) continue;
    out.comment(
      `MetalLB ${object.kind} "${object.name}" spec.${key} = ${JSON.stringify(spec[key])}: ` +
        "a field this importer does not know (newer MetalLB?); find its Keelson equivalent " +
        "in the README or drop it knowingly.",
    );
  }
}

function mlb(object: SourceObject, field: string, value: unknown): string {
  return `MetalLB ${object.kind} "${object.name}" spec.${field} = ${JSON.stringify(value)}`;
}

// ---------------------------------------------------------------- announcement

interface PoolAnnounce {
  l2: { object: SourceObject; ad: L2Advertisement }[];
  bgp: { object: SourceObject; ad: BgpAdvertisement }[];
}

function selectedPools(
  ad: { ipAddressPools?: string[] | null; ipAddressPoolSelectors?: MetallbSelector[] | null },
  pools: Parsed["pools"],
): Set<string> {
  const names = ad.ipAddressPools ?? [];
  const selectors = ad.ipAddressPoolSelectors ?? [];
  if (names.length === 0 && selectors.length === 0) {
    return new Set(pools.map((p) => p.pool.metadata.name));
  }
  const out = new Set(names);
  for (const { pool } of pools) {
    const labels = pool.metadata.labels ?? {};
    if (selectors.some((s) => selects(s, labels))) out.add(pool.metadata.name);
  }
  return out;
}

function decideAnnounce(parsed: Parsed): Map<string, PoolAnnounce> {
  const out = new Map<string, PoolAnnounce>(
    parsed.pools.map((p) => [p.pool.metadata.name, { l2: [], bgp: [] }]),
  );
  for (const l2 of parsed.l2) {
    for (const name of selectedPools(l2.ad.spec, parsed.pools)) out.get(name)?.l2.push(l2);
  }
  for (const bgp of parsed.bgpAds) {
    for (const name of selectedPools(bgp.ad.spec, parsed.pools)) out.get(name)?.bgp.push(bgp);
  }
  return out;
}

// ---------------------------------------------------------------- keepalived

function writeKeepalived(out: TomlLines, parsed: Parsed): void {
  if (parsed.l2.length === 0) return;
  const interfaces = new Set(parsed.l2.flatMap((l2) => l2.ad.spec.interfaces ?? []));
  out.table("[keepalived]");
  if (interfaces.size === 1) {
    const [only] = interfaces;
    out.comment(
      "From the L2Advertisements' spec.interfaces: the interface keepalived holds the VIPs on.",
    ).set("interface", only!);
    return;
  }
  out.comment(
    interfaces.size === 0
      ? "MetalLB L2Advertisement spec.interfaces was empty (MetalLB answered ARP/NDP on every " +
        "interface): set the interface keepalived holds the VIPs on; it must carry the " +
        "machines' internal_ips."
      : `MetalLB L2Advertisement spec.interfaces named ${
        [...interfaces].map((i) => `"${i}"`).join(", ")
      }; keepalived holds all VIPs on one interface: set the one that carries the ` +
        "machines' internal_ips.",
  ).raw('# interface = "eth0"');
}

// ---------------------------------------------------------------- BGP

/** Go's time.ParseDuration for what the API prints ("90s", "1m30s", "1h", "500ms"). */
function goDurationSeconds(text: string): number | undefined {
  if (text === "0") return 0;
  const unit: Record<string, number> = {
    h: 3600,
    m: 60,
    s: 1,
    ms: 1e-3,
    us: 1e-6,
    "µs": 1e-6,
    ns: 1e-9,
  };
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us|\u00b5s|ns)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== text) return undefined;
  return parts.reduce((sum, p) => sum + Number(p[1]) * unit[p[2]!]!, 0);
}

function communityValue(text: string): string | undefined {
  if (/^\d{1,5}:\d{1,5}$/.test(text)) return text;
  const large = /^large:(\d{1,10}:\d{1,10}:\d{1,10})$/.exec(text);
  return large ? large[1] : undefined;
}

interface PeerPlan {
  object: SourceObject;
  peer: BgpPeer;
  pools: string[];
}

function writeBgp(
  out: TomlLines,
  parsed: Parsed,
  announce: Map<string, PoolAnnounce>,
  machines: readonly ImportedMachine[],
): void {
  const bgpPools = [...announce].filter(([, a]) => a.bgp.length > 0).map(([name]) => name);
  if (parsed.peers.length === 0 && bgpPools.length === 0) {
    for (const { object } of [...parsed.communities, ...parsed.bfd.values()]) {
      out.comment(
        `MetalLB ${object.kind} "${object.name}": unused, as no pool is announced ` +
          "over BGP; nothing to import from it.",
      );
    }
    return;
  }
  out.table("[bgp]");
  // the ASN most peers used is the hosts' ASN; others are named at their peer
  const counts = new Map<number, number>();
  for (const { peer } of parsed.peers) {
    counts.set(peer.spec.myASN, (counts.get(peer.spec.myASN) ?? 0) + 1);
  }
  const asn = [...counts].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0]?.[0];
  if (asn === undefined) {
    out.comment(
      "MetalLB has BGPAdvertisements but no BGPPeer: set the hosts' ASN and add the routers.",
    )
      .raw("# asn = 64512");
  } else out.comment("From the BGPPeers' spec.myASN: the control-plane hosts' AS.").set("asn", asn);

  // families: MetalLB opens an IPv4 session to an IPv4 peer and an IPv6 one to an IPv6 peer,
  // each carrying its own family unless dualStackAddressFamily
  const families = new Set<string>();
  for (const { peer } of parsed.peers) {
    const family = parseIp(peer.spec.peerAddress ?? "")?.family;
    if (family) families.add(`ipv${family}`);
    if (peer.spec.dualStackAddressFamily) ["ipv4", "ipv6"].forEach((f) => families.add(f));
  }
  if (families.size > 0) {
    const list = ["ipv4", "ipv6"].filter((f) => families.has(f));
    out.comment(
      "From the peers' address families (and spec.dualStackAddressFamily): every session\n" +
        "carries these families (MP-BGP).",
    ).set("families", list);
    if (list.length === 2 && !parsed.peers.every((p) => p.peer.spec.dualStackAddressFamily)) {
      out.comment(
        "MetalLB sent each peer only the family of its session unless " +
          "spec.dualStackAddressFamily; Keelson sends both families over every session. If a " +
          "router refuses the other family, list one family here.",
      );
    }
  }

  writeBfd(out, parsed);
  const aliases = writeCommunities(out, parsed);
  const plans: PeerPlan[] = parsed.peers.map(({ object, peer }) => ({
    object,
    peer,
    pools: bgpPools.filter((pool) =>
      announce.get(pool)!.bgp.some(({ ad }) =>
        (ad.spec.peers ?? []).length === 0 || ad.spec.peers!.includes(peer.metadata.name)
      )
    ),
  }));
  const applied = new Set<SourceObject>();
  for (const plan of plans) {
    writePeer(out, plan, asn, bgpPools, announce, aliases, machines, parsed.lost, applied);
  }
  unappliedAttributes(out, parsed, announce, applied);
}

/**
 * The communities and local preference of BGPAdvertisements that reached no peer written here
 * (no BGPPeer in the file, or only peers their spec.peers does not name): kept as comments to
 * set on the peers once they are added.
 */
function unappliedAttributes(
  out: TomlLines,
  parsed: Parsed,
  announce: Map<string, PoolAnnounce>,
  applied: Set<SourceObject>,
): void {
  for (const { object, ad } of parsed.bgpAds) {
    if (applied.has(object)) continue;
    const pools = [...announce].filter(([, a]) => a.bgp.some((b) => b.object === object))
      .map(([name]) => name);
    if (pools.length === 0) continue; // said in the header: selects no pool
    const s = ad.spec;
    const peers = (s.peers ?? []).length > 0
      ? `the peers it names (${s.peers!.join(", ")}), which this file does not hold`
      : "any peer (this file holds no BGPPeer)";
    if ((s.communities ?? []).length > 0) {
      out.comment(
        `${mlb(object, "communities", s.communities)}: tagged the routes of pool ` +
          `${pools.map((p) => `"${p}"`).join(", ")} to ${peers}. Set communities = [...] on ` +
          "each [[bgp.peers]] that should receive them (aliases from the Community resources " +
          "go in [bgp] communities).",
      );
    }
    if (s.localPref !== undefined && s.localPref !== null) {
      out.comment(
        `${mlb(object, "localPref", s.localPref)}: sent with the routes of pool ` +
          `${pools.map((p) => `"${p}"`).join(", ")} to ${peers}. Set local_preference on each ` +
          "iBGP [[bgp.peers]] that should receive it.",
      );
    }
  }
}

function writeBfd(out: TomlLines, parsed: Parsed): void {
  const used = new Set(parsed.peers.map((p) => p.peer.spec.bfdProfile).filter((n) => !!n));
  const profiles = [...used].map((n) => parsed.bfd.get(n!)).filter((p) => p !== undefined);
  for (const { object, profile } of parsed.bfd.values()) {
    const spec = profile.spec;
    unknownFields(out, object, spec, METALLB_SPECS.BFDProfile.shape);
    for (const field of ["echoInterval", "echoMode", "passiveMode", "minimumTtl"] as const) {
      if (spec[field] === undefined || spec[field] === null) continue;
      out.comment(
        `${mlb(object, field, spec[field])}: Keelson's BFD has no such setting (BIRD's ` +
          "defaults apply: no echo, active, single-hop TTL 255).",
      );
    }
  }
  if (profiles.length === 0) return;
  const timers = profiles.map(({ profile }) => ({
    rx: profile.spec.receiveInterval ?? 300,
    tx: profile.spec.transmitInterval ?? 300,
    multiplier: profile.spec.detectMultiplier ?? 3,
  }));
  const first = timers[0]!;
  const interval = Math.max(first.rx, first.tx);
  out.comment(
    `From BFDProfile "${profiles[0]!.object.name}" (receiveInterval ${first.rx}, ` +
      `transmitInterval ${first.tx}, detectMultiplier ${first.multiplier}): one interval for ` +
      "both directions.",
  ).set("bfd", { interval_ms: interval, multiplier: first.multiplier });
  const differing = profiles.filter((_, i) =>
    Math.max(timers[i]!.rx, timers[i]!.tx) !== interval ||
    timers[i]!.multiplier !== first.multiplier
  );
  for (const { object } of differing) {
    out.comment(
      `MetalLB BFDProfile "${object.name}" has other timers; Keelson has one BFD setting for ` +
        "every peer (the one above).",
    );
  }
}

function writeCommunities(out: TomlLines, parsed: Parsed): Map<string, string> {
  const aliases = new Map<string, string>();
  const table: Record<string, string> = {};
  for (const { object, community } of parsed.communities) {
    unknownFields(out, object, community.spec, METALLB_SPECS.Community.shape);
    for (const entry of community.spec.communities ?? []) {
      const value = communityValue(entry.value ?? "");
      const name = entry.name ?? "";
      if (value === undefined) {
        out.comment(
          `${mlb(object, "communities", entry)}: not a community value Keelson reads; ` +
            'write it as "A:B" or "A:B:C".',
        );
        continue;
      }
      aliases.set(name, BGP_NAME_REGEXP.test(name) ? name : value);
      if (BGP_NAME_REGEXP.test(name)) table[name] = value;
    }
  }
  if (Object.keys(table).length > 0) {
    out.comment("From the Community resources: alias = value.").set("communities", table);
  }
  return aliases;
}

function writePeer(
  out: TomlLines,
  plan: PeerPlan,
  hostAsn: number | undefined,
  bgpPools: readonly string[],
  announce: Map<string, PoolAnnounce>,
  aliases: Map<string, string>,
  machines: readonly ImportedMachine[],
  lost: string[],
  applied: Set<SourceObject>,
): void {
  const { object, peer } = plan;
  const spec = peer.spec;
  const body = new TomlLines();
  const notes = new TomlLines();
  let disabled: string | undefined;
  body.set("name", peer.metadata.name);
  if (spec.peerAddress) body.set("address", spec.peerAddress);
  else if (spec.interface) {
    disabled = `${mlb(object, "interface", spec.interface)}: an unnumbered session over an ` +
      "interface; Keelson peers with an address only. Write the router's address and uncomment.";
    body.raw('address = "192.0.2.1"');
  }
  if (spec.peerASN) body.set("asn", spec.peerASN);
  else if (spec.dynamicASN === "internal" && hostAsn !== undefined) {
    notes.comment(
      `${mlb(object, "dynamicASN", "internal")}: an iBGP peer, so its AS is the hosts'.`,
    );
    body.set("asn", spec.myASN);
  } else {
    disabled ??= spec.dynamicASN
      ? `${mlb(object, "dynamicASN", spec.dynamicASN)}: Keelson needs the peer's AS number; ` +
        "write it and uncomment."
      : `MetalLB BGPPeer "${object.name}" has no spec.peerASN; write the peer's AS number and ` +
        "uncomment.";
    body.raw("asn = 64512");
  }
  if (hostAsn !== undefined && spec.myASN !== hostAsn) {
    notes.comment(
      `${mlb(object, "myASN", spec.myASN)}: MetalLB spoke as another AS to this peer. ` +
        `Keelson's hosts speak as [bgp] asn (${hostAsn}), or per machine with ` +
        "bgp = { asn = … } on the machines that peer with it.",
    );
  }
  if (spec.localASN) {
    notes.comment(
      `${mlb(object, "localASN", spec.localASN)}: no per-peer local-as in Keelson; ` +
        "set bgp = { asn = … } on the machines that peer with it instead.",
    );
  }
  writePeerHosts(
    body,
    notes,
    object,
    spec.nodeSelectors ?? [],
    machines,
    (why) => disabled ??= why,
    lost,
  );
  if (spec.ebgpMultiHop) {
    notes.comment(`From spec.ebgpMultiHop: multihop with FRR's default TTL ${FRR_MULTIHOP_TTL}.`);
    body.set("multihop", FRR_MULTIHOP_TTL);
  }
  if (spec.bfdProfile) {
    body.set("bfd", true);
    notes.comment(`From spec.bfdProfile "${spec.bfdProfile}": timers in [bgp] bfd.`);
  }
  writePassword(body, object, spec);
  writePeerPools(body, notes, plan, bgpPools);
  writePeerAttributes(body, notes, plan, hostAsn, announce, aliases, applied);
  writeTimers(body, notes, object, spec);
  const comment = (field: keyof typeof spec, what: string) => {
    const value = spec[field];
    if (value === undefined || value === null || value === false || value === "") return;
    notes.comment(`${mlb(object, field, value)}: ${what}`);
  };
  if (
    spec.peerPort !== undefined && spec.peerPort !== null && spec.peerPort !== 0 &&
    spec.peerPort !== BGP_PORT
  ) {
    comment(
      "peerPort",
      "Keelson (BIRD) always connects to port 179; make the router listen there.",
    );
  }
  comment(
    "sourceAddress",
    "set bgp = { source_address = … } on each machine that peers with it (one address per host).",
  );
  comment(
    "routerID",
    "Keelson's router id is per machine: bgp = { router_id = … } (default: its first internal " +
      "IPv4).",
  );
  comment(
    "connectTime",
    "Keelson has one retry timer for every peer: [bgp] connect_retry_time (seconds).",
  );
  comment(
    "enableGracefulRestart",
    "Keelson is graceful-restart aware by default; to restart gracefully itself set [bgp] " +
      'graceful_restart = "on" and start BIRD with -R (deploy/systemd/bird.service.d/).',
  );
  comment("vrf", "Keelson peers from the hosts' default VRF only; route the peer there.");
  comment(
    "disableMP",
    "Keelson always runs MP-BGP, all [bgp] families over one session per peer.",
  );
  unknownFields(notes, object, spec, METALLB_SPECS.BGPPeer.shape);

  const lines = [...notes.text().trimEnd().split("\n").filter((l) => l !== "")];
  if (disabled !== undefined) {
    out.blank().raw(...lines).comment(`${disabled}\nThis peer is left out until then:`);
    out.raw("# [[bgp.peers]]", ...body.text().trimEnd().split("\n").map((l) => `# ${l}`));
    return;
  }
  out.table("[[bgp.peers]]").raw(...lines, ...body.text().trimEnd().split("\n"));
}

function writePeerHosts(
  body: TomlLines,
  notes: TomlLines,
  object: SourceObject,
  selectors: MetallbSelector[],
  machines: readonly ImportedMachine[],
  disable: (why: string) => void,
  lost: string[],
): void {
  if (selectors.length === 0) return;
  const shown = selectors.map(selectorText).join(" OR ");
  const controlPlane = machines.filter((m) => m.role === "control-plane" || m.runsBird);
  if (machines.length > 0) {
    const hosts = controlPlane.filter((m) => selectors.some((s) => selects(s, m.labels)));
    if (hosts.length === controlPlane.length) {
      notes.comment(`From spec.nodeSelectors (${shown}): every control-plane machine peers.`);
    } else if (hosts.length === 0) {
      disable(
        `${mlb(object, "nodeSelectors", shown)}: selects no control-plane Node nor one a BGP ` +
          "pool's served_by selects, and only those run BIRD in Keelson. Name the hosts that " +
          "should peer and uncomment.",
      );
      body.set("hosts", []);
    } else {
      notes.comment(`From spec.nodeSelectors (${shown}): the Nodes it selected that run BIRD.`);
      body.set("hosts", hosts.map((m) => m.name));
    }
    return;
  }
  // no Nodes read: a selector on the control-plane role label selects the machines that peer
  if (holdsControlPlane(selectors, [])) {
    notes.comment(`From spec.nodeSelectors (${shown}): every control-plane machine peers.`);
    return;
  }
  // a selector on the zone label alone still says which zones peer
  const zones = zoneSelection(selectors);
  if (zones !== undefined) {
    notes.comment(`From spec.nodeSelectors (${shown}).`);
    body.set("zones", zones);
    return;
  }
  // every control-plane machine would peer: wider than the selector, so the peer waits
  disable(
    `${mlb(object, "nodeSelectors", shown)}: import with --kubeconfig to resolve it, or list ` +
      "the control-plane machines that peer with it in hosts, and uncomment.",
  );
  lost.push(
    `${object.at(["spec", "nodeSelectors"])}: BGPPeer "${object.name}" spec.nodeSelectors ` +
      `(${shown}) cannot be resolved without the cluster's Nodes; the peer is written ` +
      "commented out (every control-plane machine would peer with it otherwise). Import with " +
      "--kubeconfig, or name its hosts.",
  );
}

function zoneSelection(selectors: MetallbSelector[]): string[] | undefined {
  const zone = "topology.kubernetes.io/zone";
  const zones: string[] = [];
  for (const s of selectors) {
    const labels = Object.entries(s.matchLabels ?? {});
    const expressions = s.matchExpressions ?? [];
    if (labels.length === 1 && labels[0]![0] === zone && expressions.length === 0) {
      zones.push(labels[0]![1]);
    } else if (
      labels.length === 0 && expressions.length === 1 && expressions[0]!.key === zone &&
      expressions[0]!.operator === "In"
    ) zones.push(...expressions[0]!.values ?? []);
    else return undefined;
  }
  return zones;
}

function writePassword(body: TomlLines, object: SourceObject, spec: BgpPeer["spec"]): void {
  const file = `/etc/keelson/bgp/${object.name.replace(/[^A-Za-z0-9._-]/g, "_")}.key`;
  if (spec.password) {
    body.comment(
      `MetalLB BGPPeer "${object.name}" spec.password (not copied here): write it to ${file}\n` +
        "(mode 0600, owner keelson, the password alone), then uncomment:",
    ).raw(`# password_file = "${file}"`);
  } else if (spec.passwordSecret?.name) {
    const ns = spec.passwordSecret.namespace ?? "metallb-system";
    const secret = spec.passwordSecret.name;
    body.comment(
      `MetalLB BGPPeer "${object.name}" spec.passwordSecret ${
        JSON.stringify(`${ns}/${secret}`)
      }: ` +
        "write the password to the file, then uncomment" +
        (isObjectName(secret) && isNamespaceName(ns)
          ? ":"
          : " (no command printed: the name or namespace is not one Kubernetes accepts)."),
    );
    if (isObjectName(secret) && isNamespaceName(ns)) {
      const target = shellQuote(file);
      body.raw(
        `#   kubectl get secret -n ${shellQuote(ns)} ${shellQuote(secret)} ` +
          `-o jsonpath='{.data.password}' | base64 -d > ${target} && chmod 0600 ${target}`,
      );
    }
    body.raw(`# password_file = "${file}"`);
  }
}

function writePeerPools(
  body: TomlLines,
  notes: TomlLines,
  plan: PeerPlan,
  bgpPools: readonly string[],
): void {
  if (plan.pools.length === bgpPools.length) return;
  if (plan.pools.length === 0) {
    notes.comment(
      `MetalLB announced no pool to BGPPeer "${plan.object.name}" (every BGPAdvertisement's ` +
        "spec.peers names other peers); Keelson sends a peer every BGP pool unless pools lists " +
        "some. Remove this peer if it should get none.",
    );
    return;
  }
  body.comment("From the BGPAdvertisements' spec.peers: the pools this peer received.")
    .set("pools", plan.pools);
}

function writePeerAttributes(
  body: TomlLines,
  notes: TomlLines,
  plan: PeerPlan,
  hostAsn: number | undefined,
  announce: Map<string, PoolAnnounce>,
  aliases: Map<string, string>,
  applied: Set<SourceObject>,
): void {
  const ads = plan.pools.flatMap((pool) =>
    announce.get(pool)!.bgp.filter(({ ad }) =>
      (ad.spec.peers ?? []).length === 0 || ad.spec.peers!.includes(plan.object.name)
    ).map((a) => ({ pool, ...a }))
  );
  if (ads.length === 0) return;
  for (const { object } of ads) applied.add(object);
  const resolve = (c: string) => aliases.get(c) ?? communityValue(c);
  const sets = ads.map(({ ad }) =>
    new Set((ad.spec.communities ?? []).map((c) => resolve(c) ?? c))
  );
  const common = [...sets[0]!].filter((c) => sets.every((s) => s.has(c)));
  if (common.length > 0) {
    body.comment("From the BGPAdvertisements' spec.communities (Keelson tags per peer).")
      .set("communities", common);
  }
  for (const [i, { object, pool }] of ads.entries()) {
    const extra = [...sets[i]!].filter((c) => !common.includes(c));
    if (extra.length > 0) {
      notes.comment(
        `${mlb(object, "communities", extra)}: only on pool "${pool}"; Keelson tags every ` +
          "route to a peer alike. Split the pools onto peers, or tag them at the router.",
      );
    }
  }
  const prefs = new Set(ads.map(({ ad }) => ad.spec.localPref ?? 0));
  const [pref] = prefs;
  const ibgp = plan.peer.spec.peerASN === hostAsn || plan.peer.spec.dynamicASN === "internal";
  if (prefs.size === 1 && pref !== 0 && ibgp) {
    body.comment("From the BGPAdvertisements' spec.localPref.").set("local_preference", pref!);
  } else if (prefs.size > 1 || (pref !== 0 && !ibgp)) {
    notes.comment(
      `MetalLB BGPAdvertisements spec.localPref = ${[...prefs].join(", ")} toward this peer: ` +
        "Keelson sends one local preference per peer, and only to iBGP peers.",
    );
  }
}

function writeTimers(
  body: TomlLines,
  notes: TomlLines,
  object: SourceObject,
  spec: BgpPeer["spec"],
): void {
  // v1beta1's timers are not pointers: the API prints "0s" for one never set
  const unset = (text: string | null | undefined) =>
    !text || (object.apiVersion === "metallb.io/v1beta1" && goDurationSeconds(text) === 0);
  const hold = unset(spec.holdTime) ? undefined : goDurationSeconds(spec.holdTime!);
  const keep = unset(spec.keepaliveTime) ? undefined : goDurationSeconds(spec.keepaliveTime!);
  if (!unset(spec.holdTime) && hold === undefined) {
    notes.comment(`${mlb(object, "holdTime", spec.holdTime)}: not a duration this importer reads.`);
  }
  if (!unset(spec.keepaliveTime) && keep === undefined) {
    notes.comment(
      `${mlb(object, "keepaliveTime", spec.keepaliveTime)}: not a duration this importer reads.`,
    );
  }
  if (hold === undefined && keep === undefined) {
    if (unset(spec.holdTime) && unset(spec.keepaliveTime)) {
      notes.comment(
        "MetalLB left this peer's holdTime and keepaliveTime to its BGP daemon; Keelson uses " +
          "[bgp] hold_time and keepalive_time (9 s and 3 s by default).",
      );
    }
    return;
  }
  // MetalLB derives the missing one: keepalive = hold / 3, hold = keepalive × 3
  const holdSeconds = Math.floor(hold ?? keep! * 3);
  const keepSeconds = Math.floor(keep ?? (hold! / 3));
  if (holdSeconds === 0) {
    notes.comment(
      `${mlb(object, "holdTime", spec.holdTime ?? "")}: 0 turns keepalives off; Keelson ` +
        "always keeps them (hold_time 3 s at least). [bgp] hold_time applies.",
    );
    return;
  }
  body.set("hold_time", holdSeconds);
  if (keepSeconds >= 1) body.set("keepalive_time", keepSeconds);
  if (holdSeconds !== hold || (keep !== undefined && keepSeconds !== keep)) {
    notes.comment(
      `${mlb(object, "holdTime", spec.holdTime ?? "")}: rounded down to whole seconds.`,
    );
  }
}

// ---------------------------------------------------------------- pools

/** MetalLB's reading of one `addresses` entry (Go's net.ParseCIDR masks host bits). */
export function metallbEntry(text: string): AddressInterval | undefined {
  const trimmed = text.trim();
  if (trimmed.includes("-")) {
    const [a, b, ...rest] = trimmed.split("-").map((s) => s.trim());
    const first = parseIp(a ?? ""), last = parseIp(b ?? "");
    if (rest.length > 0 || !first || !last || first.family !== last.family) return undefined;
    if (first.value > last.value) return undefined;
    return { family: first.family, first: first.value, last: last.value };
  }
  const [addr, bits, ...rest] = trimmed.split("/");
  const ip = parseIp(addr ?? "");
  if (!ip || rest.length > 0 || bits === undefined || !/^\d{1,3}$/.test(bits)) return undefined;
  const width = ip.family === 4 ? 32 : 128;
  const prefix = Number(bits) - (ip.family === 4 && addr!.includes(":") ? 96 : 0);
  if (prefix < 0 || prefix > width) return undefined;
  const host = BigInt(width - prefix);
  const first = (ip.value >> host) << host;
  return { family: ip.family, first, last: first + (1n << host) - 1n };
}

function writePools(
  out: TomlLines,
  parsed: Parsed,
  announce: Map<string, PoolAnnounce>,
  machines: readonly ImportedMachine[],
): Map<string, Record<string, string>> {
  const machineLabels = new Map<string, Record<string, string>>();
  if (parsed.pools.length > 0) {
    out.blank().comment("Address pools, one per IPAddressPool.");
  }
  for (const { object, pool } of parsed.pools) {
    const spec = pool.spec;
    out.table("[[pools]]");
    unknownFields(out, object, spec, METALLB_SPECS.IPAddressPool.shape);
    out.set("name", pool.metadata.name);
    const intervals = spec.addresses.map((text, i) => {
      const interval = metallbEntry(text);
      if (!interval) {
        throw new ImportError(
          `${object.at(["spec", "addresses", i])}: IPAddressPool "${object.name}" ` +
            `spec.addresses[${i}]: "${text}" is not a CIDR or a range of two addresses`,
        );
      }
      return interval;
    });
    let skipped: AddressInterval[];
    try {
      skipped = spec.avoidBuggyIPs ? dotZeroAndBroadcast(intervals) : [];
    } catch (error) {
      throw new ImportError(
        `${object.at(["spec", "avoidBuggyIPs"])}: IPAddressPool "${object.name}" ` +
          `spec.avoidBuggyIPs: ${errorMessage(error)}; split the pool`,
      );
    }
    const { addresses, reserved } = keelsonAddresses(intervals, skipped);
    if (addresses.join() !== spec.addresses.join()) {
      out.comment(
        `From spec.addresses ${JSON.stringify(spec.addresses)}: a CIDR is written as a range ` +
          "where MetalLB handed out its first and last addresses (a Keelson CIDR never does); " +
          "overlapping entries are merged.",
      );
    }
    out.set("addresses", addresses);
    if (reserved.length > 0) {
      out.comment(
        "From spec.avoidBuggyIPs: the addresses ending in .0 and .255 MetalLB never handed out.",
      ).set("reserved", reserved);
    }
    const allocation = spec.serviceAllocation;
    // MetalLB offers the pool to the listed namespaces OR those the selectors match; without a
    // list, Keelson would offer it to every namespace, so it is assigned from on request only
    const unlisted = (allocation?.namespaceSelectors ?? []).length > 0 &&
      (allocation?.namespaces ?? []).length === 0;
    if (unlisted && (spec.autoAssign ?? true)) {
      out.comment(
        "auto_assign = false: MetalLB offered this pool only to the namespaces its " +
          "spec.serviceAllocation.namespaceSelectors match, which Keelson cannot select; list " +
          "them in [pools.service_allocation] namespaces, then set auto_assign = true.",
      );
      out.set("auto_assign", false);
    } else out.set("auto_assign", spec.autoAssign ?? true);
    const how = announce.get(pool.metadata.name)!;
    const { selection, fromPeers, note } = poolServing(how, parsed.peers, machines);
    writeAnnounce(out, how, parsed.lost, machines, selection);
    if (note !== undefined) out.comment(note);
    if (fromPeers && selection.kind === "inexpressible") {
      out.comment(
        `MetalLB BGPPeers' spec.nodeSelectors (the Nodes that announce this pool): ` +
          unservedText(selection),
      );
    }
    writeServedBy(out, selection, machineLabels);
    if (allocation) writeServiceAllocation(out, object, allocation, parsed.lost);
  }
  return machineLabels;
}

/**
 * Whether the Nodes an advertisement's selectors choose include every control-plane machine,
 * the ones Keelson announces from: then Keelson's announcers are among MetalLB's, never others.
 * Without the cluster's Nodes, only a selector on the control-plane role label is known to.
 */
function holdsControlPlane(
  selectors: readonly MetallbSelector[],
  machines: readonly ImportedMachine[],
): boolean {
  const controlPlane = machines.filter((m) => m.role === "control-plane");
  if (controlPlane.length > 0) {
    return controlPlane.every((m) => selectors.some((s) => selects(s, m.labels)));
  }
  return selectors.some((s) =>
    CONTROL_PLANE_LABELS.some((label) =>
      selects(s, { [label]: "" }) && Object.keys(s.matchLabels ?? {}).every((k) => k === label) &&
      (s.matchExpressions ?? []).every((e) => e.key === label)
    )
  );
}

function writeAnnounce(
  out: TomlLines,
  how: PoolAnnounce,
  lost: string[],
  machines: readonly ImportedMachine[],
  selection: NodeSelection,
): void {
  // an advertisement of several pools is reported once
  const restriction = (object: SourceObject, field: string, shown: string, what: string) => {
    const sentence = `${object.at(["spec", field])}: ${object.kind} "${object.name}" ` +
      `spec.${field} (${shown}): ${what}`;
    if (!lost.includes(sentence)) lost.push(sentence);
  };
  if (how.bgp.length > 0) {
    out.comment(
      `From BGPAdvertisement ${how.bgp.map((b) => `"${b.object.name}"`).join(", ")}.`,
    ).set("announce", "bgp");
    if (how.l2.length > 0) {
      out.comment(
        `MetalLB announced this pool over L2 as well (L2Advertisement ${
          how.l2.map((l) => `"${l.object.name}"`).join(", ")
        }); Keelson announces a pool one way: BGP here. Write announce = "vrrp" to hold its ` +
          "addresses with keepalived instead.",
      );
    }
  } else if (how.l2.length > 0) {
    out.comment(
      `From L2Advertisement ${how.l2.map((l) => `"${l.object.name}"`).join(", ")}: held by ` +
        "keepalived (VRRP).",
    ).set("announce", "vrrp");
  } else {
    out.comment(
      "MetalLB announced this pool nowhere (no L2Advertisement or BGPAdvertisement selected " +
        "it): it assigned its addresses without making them reachable. Keelson serves every " +
        "pool (here with keepalived); remove the pool, or set auto_assign = false, if it " +
        "should stay unreachable.",
    ).set("announce", "vrrp");
  }
  for (const { object, ad } of how.l2) {
    unknownFields(out, object, ad.spec, METALLB_SPECS.L2Advertisement.shape);
    const s = ad.spec;
    // a pool announced over BGP is served as its BGP advertisements say
    const l2Selection: NodeSelection = how.bgp.length > 0 ? { kind: "default" } : selection;
    if ((s.nodeSelectors ?? []).length > 0 && l2Selection.kind !== "served_by") {
      out.comment(
        `${mlb(object, "nodeSelectors", s.nodeSelectors!.map(selectorText))}: ` +
          unservedText(l2Selection),
      );
      if (!holdsControlPlane(s.nodeSelectors!, machines)) {
        restriction(
          object,
          "nodeSelectors",
          s.nodeSelectors!.map(selectorText).join(" OR "),
          unservedText(l2Selection) + " Check that they may, or give those Services another pool.",
        );
      }
    }
    if ((s.serviceSelectors ?? []).length > 0) {
      out.comment(
        `${mlb(object, "serviceSelectors", s.serviceSelectors!.map(selectorText))}: ` +
          "Keelson serves every Service of the pool; move unannounced Services to a pool of their own.",
      );
      restriction(
        object,
        "serviceSelectors",
        s.serviceSelectors!.map(selectorText).join(" OR "),
        "Keelson announces every Service of the pool, not only those selected; move the " +
          "others to a pool of their own before Keelson takes over.",
      );
    }
    if ((s.preferredNodeSelectors ?? []).length > 0) {
      out.comment(
        `${
          mlb(
            object,
            "preferredNodeSelectors",
            s.preferredNodeSelectors!.map((p) => `${p.weight}:${selectorText(p.preference)}`),
          )
        }: Keelson spreads VIP groups over the control-plane hosts by VRRP priority; pin a ` +
          "host with keepalived_priority on its machine.",
      );
    }
  }
  for (const { object, ad } of how.bgp) {
    unknownFields(out, object, ad.spec, METALLB_SPECS.BGPAdvertisement.shape);
    const s = ad.spec;
    if (
      s.aggregationLength !== undefined && s.aggregationLength !== null &&
      s.aggregationLength !== 32
    ) {
      out.comment(
        `${mlb(object, "aggregationLength", s.aggregationLength)}: Keelson announces ` +
          "each address as a /32; aggregate at the router.",
      );
    }
    if (
      s.aggregationLengthV6 !== undefined && s.aggregationLengthV6 !== null &&
      s.aggregationLengthV6 !== 128
    ) {
      out.comment(
        `${mlb(object, "aggregationLengthV6", s.aggregationLengthV6)}: Keelson ` +
          "announces each address as a /128; aggregate at the router.",
      );
    }
    if ((s.nodeSelectors ?? []).length > 0 && selection.kind !== "served_by") {
      out.comment(
        `${mlb(object, "nodeSelectors", s.nodeSelectors!.map(selectorText))}: ` +
          unservedText(selection),
      );
      if (!holdsControlPlane(s.nodeSelectors!, machines)) {
        restriction(
          object,
          "nodeSelectors",
          s.nodeSelectors!.map(selectorText).join(" OR "),
          unservedText(selection) + " Choose the serving machines with [pools.served_by].",
        );
      }
    }
    if ((s.serviceSelectors ?? []).length > 0) {
      out.comment(
        `${mlb(object, "serviceSelectors", s.serviceSelectors!.map(selectorText))}: ` +
          "Keelson announces every Service of the pool; move the others to a pool of their own.",
      );
      restriction(
        object,
        "serviceSelectors",
        s.serviceSelectors!.map(selectorText).join(" OR "),
        "Keelson announces every Service of the pool, not only those selected; move the " +
          "others to a pool of their own before Keelson takes over.",
      );
    }
  }
}

/** What a pool whose node selectors did not become `served_by` is served by, and why. */
function unservedText(selection: NodeSelection): string {
  if (selection.kind === "inexpressible") {
    return `${selection.reason}; the control-plane machines serve the pool.`;
  }
  return "the control-plane machines serve the pool (Keelson's default).";
}

function writeServiceAllocation(
  out: TomlLines,
  object: SourceObject,
  allocation: NonNullable<IpAddressPool["spec"]["serviceAllocation"]>,
  lost: string[],
): void {
  out.table("[pools.service_allocation]");
  out.comment("From spec.serviceAllocation.");
  unknownFields(out, object, allocation, {
    ...METALLB_SPECS.IPAddressPool.shape.serviceAllocation.unwrap().unwrap().shape,
  });
  if (allocation.priority) out.set("priority", allocation.priority);
  if ((allocation.namespaces ?? []).length > 0) out.set("namespaces", allocation.namespaces!);
  const selectors = allocation.serviceSelectors ?? [];
  if (selectors.length > 0) {
    out.set(
      "service_selectors",
      selectors.map((s): TomlValue => ({
        match_labels: s.matchLabels ?? {},
        match_expressions: (s.matchExpressions ?? []).map((e) => ({
          key: e.key,
          operator: e.operator,
          values: e.values ?? [],
        })),
      })),
    );
  }
  if ((allocation.namespaceSelectors ?? []).length > 0) {
    const selectors = allocation.namespaceSelectors!;
    const shown = selectors.map(selectorText);
    const printable = selectors.every(isValidSelector);
    out.comment(
      `${mlb(object, "serviceAllocation.namespaceSelectors", shown)}: Keelson does not watch ` +
        "Namespaces; list the namespaces it selects in namespaces" +
        (printable
          ? ` (one command per selector):`
          : " (no command printed: a label key or value is not one Kubernetes accepts)."),
    );
    if (printable) {
      for (const text of shown) {
        out.raw(`#   kubectl get namespaces -l ${shellQuote(text)} -o name`);
      }
    }
    const listed = (allocation.namespaces ?? []).length > 0;
    lost.push(
      `${object.at(["spec", "serviceAllocation", "namespaceSelectors"])}: IPAddressPool ` +
        `"${object.name}" spec.serviceAllocation.namespaceSelectors (${shown.join(" OR ")}): ` +
        "Keelson cannot select namespaces by label; " +
        (listed
          ? "the pool is offered only to the namespaces listed in spec.serviceAllocation." +
            "namespaces. Add the namespaces the selectors match to namespaces."
          : "the pool is written with auto_assign = false (nothing is assigned from it unless " +
            "a Service asks for it). List the namespaces the selectors match in namespaces, " +
            "then set auto_assign = true."),
    );
  }
}
