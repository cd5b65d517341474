/**
 * MetalLB's BGP side as Keelson's `[bgp]`: the hosts' AS (the one most BGPPeers spoke as), the
 * address families, one BFD setting from the BFDProfiles, the Community aliases, one
 * `[[bgp.peers]]` per BGPPeer (`metallb_peer.ts`), and a note for each advertisement attribute
 * that reached no peer written. Pure.
 *
 * @module
 */
import { BGP_NAME_REGEXP } from "../config/bgp_schema.ts";
import { parseIp } from "../net/ip.ts";
import { type Block, type Entry, keyEntry, type Note, noteEntry } from "./inventory_fragments.ts";
import type { ImportedMachine } from "./machines.ts";
import { mlb, type Parsed, type PoolAnnounce, unknownFieldNotes } from "./metallb_parsed.ts";
import { communityValue, peerFragment, type PeerSetting } from "./metallb_peer.ts";
import { METALLB_SPECS } from "./metallb_schema.ts";
import type { SourceObject } from "./source_objects.ts";

/**
 * `[bgp]` and its peers, or the notes saying why the BGP objects are unused.
 * @param parsed the objects
 * @param announce the advertisements of each pool
 * @param machines the machines the Nodes became (empty without Nodes)
 * @param lost receives the restrictions the peers cannot keep
 * @returns the blocks, in the order written
 */
export function bgpBlocks(
  parsed: Parsed,
  announce: ReadonlyMap<string, PoolAnnounce>,
  machines: readonly ImportedMachine[],
  lost: string[],
): Block[] {
  const bgpPools = [...announce].filter(([, a]) => a.bgp.length > 0).map(([name]) => name);
  if (parsed.peers.length === 0 && bgpPools.length === 0) {
    return [{
      blankBefore: false,
      notes: [...parsed.communities, ...parsed.bfd.values()].map(({ object }) => ({
        text: `MetalLB ${object.kind} "${object.name}": unused, as no pool is announced ` +
          "over BGP; nothing to import from it.",
      })),
    }];
  }
  const entries: Entry[] = [];
  // the ASN most peers used is the hosts' ASN; others are named at their peer
  const counts = new Map<number, number>();
  for (const { peer } of parsed.peers) {
    counts.set(peer.spec.myASN, (counts.get(peer.spec.myASN) ?? 0) + 1);
  }
  const asn = [...counts].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0]?.[0];
  if (asn === undefined) {
    entries.push(noteEntry(
      "MetalLB has BGPAdvertisements but no BGPPeer: set the hosts' ASN and add the routers.",
      "# asn = 64512",
    ));
  } else {
    entries.push(
      noteEntry("From the BGPPeers' spec.myASN: the control-plane hosts' AS."),
      keyEntry("asn", asn),
    );
  }
  entries.push(...familyEntries(parsed), ...bfdEntries(parsed));
  const { entries: communityEntries, aliases } = communities(parsed);
  entries.push(...communityEntries);

  const setting: PeerSetting = {
    hostAsn: asn,
    bgpPools,
    announce,
    aliases,
    machines,
    lost,
    applied: new Set(),
  };
  const peers = parsed.peers.map(({ object, peer }) => peerFragment(object, peer, setting));
  return [
    { header: "[bgp]", notes: [], entries },
    ...peers,
    { blankBefore: false, notes: unappliedAttributes(parsed, announce, setting.applied) },
  ];
}

/**
 * families: MetalLB opens an IPv4 session to an IPv4 peer and an IPv6 one to an IPv6 peer, each
 * carrying its own family unless dualStackAddressFamily.
 */
function familyEntries(parsed: Parsed): Entry[] {
  const families = new Set<string>();
  for (const { peer } of parsed.peers) {
    const family = parseIp(peer.spec.peerAddress ?? "")?.family;
    if (family) families.add(`ipv${family}`);
    if (peer.spec.dualStackAddressFamily) ["ipv4", "ipv6"].forEach((f) => families.add(f));
  }
  if (families.size === 0) return [];
  const list = ["ipv4", "ipv6"].filter((f) => families.has(f));
  const entries = [
    noteEntry(
      "From the peers' address families (and spec.dualStackAddressFamily): every session\n" +
        "carries these families (MP-BGP).",
    ),
    keyEntry("families", list),
  ];
  if (list.length === 2 && !parsed.peers.every((p) => p.peer.spec.dualStackAddressFamily)) {
    entries.push(noteEntry(
      "MetalLB sent each peer only the family of its session unless " +
        "spec.dualStackAddressFamily; Keelson sends both families over every session. If a " +
        "router refuses the other family, list one family here.",
    ));
  }
  return entries;
}

/** `bfd` from the first BFDProfile a peer uses; notes for every setting Keelson has not. */
function bfdEntries(parsed: Parsed): Entry[] {
  const entries: Entry[] = [];
  const used = new Set(parsed.peers.map((p) => p.peer.spec.bfdProfile).filter((n) => !!n));
  const profiles = [...used].map((n) => parsed.bfd.get(n!)).filter((p) => p !== undefined);
  for (const { object, profile } of parsed.bfd.values()) {
    const spec = profile.spec;
    entries.push(
      ...unknownFieldNotes(object, spec, METALLB_SPECS.BFDProfile.shape).map((note) => ({ note })),
    );
    for (const field of ["echoInterval", "echoMode", "passiveMode", "minimumTtl"] as const) {
      if (spec[field] === undefined || spec[field] === null) continue;
      entries.push(noteEntry(
        `${mlb(object, field, spec[field])}: Keelson's BFD has no such setting (BIRD's ` +
          "defaults apply: no echo, active, single-hop TTL 255).",
      ));
    }
  }
  if (profiles.length === 0) return entries;
  const timers = profiles.map(({ profile }) => ({
    rx: profile.spec.receiveInterval ?? 300,
    tx: profile.spec.transmitInterval ?? 300,
    multiplier: profile.spec.detectMultiplier ?? 3,
  }));
  const first = timers[0]!;
  const interval = Math.max(first.rx, first.tx);
  entries.push(
    noteEntry(
      `From BFDProfile "${profiles[0]!.object.name}" (receiveInterval ${first.rx}, ` +
        `transmitInterval ${first.tx}, detectMultiplier ${first.multiplier}): one interval for ` +
        "both directions.",
    ),
    keyEntry("bfd", { interval_ms: interval, multiplier: first.multiplier }),
  );
  const differing = profiles.filter((_, i) =>
    Math.max(timers[i]!.rx, timers[i]!.tx) !== interval ||
    timers[i]!.multiplier !== first.multiplier
  );
  for (const { object } of differing) {
    entries.push(noteEntry(
      `MetalLB BFDProfile "${object.name}" has other timers; Keelson has one BFD setting for ` +
        "every peer (the one above).",
    ));
  }
  return entries;
}

/** `communities` (alias = value) from the Community resources, and each alias's value. */
function communities(parsed: Parsed): { entries: Entry[]; aliases: Map<string, string> } {
  const entries: Entry[] = [];
  const aliases = new Map<string, string>();
  const table: Record<string, string> = {};
  for (const { object, community } of parsed.communities) {
    entries.push(
      ...unknownFieldNotes(object, community.spec, METALLB_SPECS.Community.shape)
        .map((note) => ({ note })),
    );
    for (const entry of community.spec.communities ?? []) {
      const value = communityValue(entry.value ?? "");
      const name = entry.name ?? "";
      if (value === undefined) {
        entries.push(noteEntry(
          `${mlb(object, "communities", entry)}: not a community value Keelson reads; ` +
            'write it as "A:B" or "A:B:C".',
        ));
        continue;
      }
      aliases.set(name, BGP_NAME_REGEXP.test(name) ? name : value);
      if (BGP_NAME_REGEXP.test(name)) table[name] = value;
    }
  }
  if (Object.keys(table).length > 0) {
    entries.push(
      noteEntry("From the Community resources: alias = value."),
      keyEntry("communities", table),
    );
  }
  return { entries, aliases };
}

/**
 * The communities and local preference of BGPAdvertisements that reached no peer written here
 * (no BGPPeer in the file, or only peers their spec.peers does not name): kept as notes to set
 * on the peers once they are added.
 */
function unappliedAttributes(
  parsed: Parsed,
  announce: ReadonlyMap<string, PoolAnnounce>,
  applied: ReadonlySet<SourceObject>,
): Note[] {
  const notes: Note[] = [];
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
      notes.push({
        text: `${mlb(object, "communities", s.communities)}: tagged the routes of pool ` +
          `${pools.map((p) => `"${p}"`).join(", ")} to ${peers}. Set communities = [...] on ` +
          "each [[bgp.peers]] that should receive them (aliases from the Community resources " +
          "go in [bgp] communities).",
      });
    }
    if (s.localPref !== undefined && s.localPref !== null) {
      notes.push({
        text: `${mlb(object, "localPref", s.localPref)}: sent with the routes of pool ` +
          `${pools.map((p) => `"${p}"`).join(", ")} to ${peers}. Set local_preference on each ` +
          "iBGP [[bgp.peers]] that should receive it.",
      });
    }
  }
  return notes;
}
