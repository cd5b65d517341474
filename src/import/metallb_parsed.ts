/**
 * MetalLB's objects read into their kinds (`metallb_schema.ts`), and what the translation decides
 * from them before any pool or peer: which advertisements announce which pool, whether node
 * selectors hold the control-plane machines, the words for a field Keelson cannot keep. Pure.
 *
 * @module
 */
import type { Note } from "./inventory_fragments.ts";
import { selects } from "./label_match.ts";
import { CONTROL_PLANE_LABELS, type ImportedMachine } from "./machines.ts";
import {
  type BfdProfile,
  type BgpAdvertisement,
  type BgpPeer,
  type Community,
  type IpAddressPool,
  type L2Advertisement,
  METALLB_KINDS,
  type MetallbSelector,
} from "./metallb_schema.ts";
import { parseObject, type SourceObject } from "./source_objects.ts";

/** MetalLB's objects of one file, by kind. */
export interface Parsed {
  pools: { object: SourceObject; pool: IpAddressPool }[];
  l2: { object: SourceObject; ad: L2Advertisement }[];
  bgpAds: { object: SourceObject; ad: BgpAdvertisement }[];
  peers: { object: SourceObject; peer: BgpPeer }[];
  communities: { object: SourceObject; community: Community }[];
  bfd: Map<string, { object: SourceObject; profile: BfdProfile }>;
  /** Objects of other kinds, counted by kind. */
  ignored: Map<string, number>;
}

/**
 * Reads MetalLB's objects into their kinds, each through its schema.
 * @param objects the file's objects
 * @returns them by kind
 * @throws {ImportError} naming file, line and field when an object does not parse
 */
export function parseMetallb(objects: SourceObject[]): Parsed {
  const parsed: Parsed = {
    pools: [],
    l2: [],
    bgpAds: [],
    peers: [],
    communities: [],
    bfd: new Map(),
    ignored: new Map(),
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

/** The advertisements that announce a pool. */
export interface PoolAnnounce {
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

/**
 * Which advertisements select each pool (by name or by label), as MetalLB matches them.
 * @param parsed the objects
 * @returns by pool name
 */
export function decideAnnounce(parsed: Parsed): Map<string, PoolAnnounce> {
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

/**
 * The words for a MetalLB field and its value, that start every note on one.
 * @param object the object
 * @param field the field below spec, e.g. `nodeSelectors`
 * @param value its value
 * @returns e.g. `MetalLB BGPPeer "tor" spec.vrf = "red"`
 */
export function mlb(object: SourceObject, field: string, value: unknown): string {
  return `MetalLB ${object.kind} "${object.name}" spec.${field} = ${JSON.stringify(value)}`;
}

/**
 * Unknown spec fields (a newer MetalLB): each named in a note, never dropped silently.
 * @param object the object
 * @param spec its spec as read
 * @param known the fields the schema knows
 * @returns one note per unknown field
 */
export function unknownFieldNotes(
  object: SourceObject,
  spec: Record<string, unknown>,
  known: Record<string, unknown>,
): Note[] {
  return Object.keys(spec).filter((key) => !Object.hasOwn(known, key)).map((key) => ({
    text: `MetalLB ${object.kind} "${object.name}" spec.${key} = ${JSON.stringify(spec[key])}: ` +
      "a field this importer does not know (newer MetalLB?); find its Keelson equivalent " +
      "in the README or drop it knowingly.",
  }));
}

/**
 * Whether the Nodes an advertisement's selectors choose include every control-plane machine,
 * the ones Keelson announces from: then Keelson's announcers are among MetalLB's, never others.
 * Without the cluster's Nodes, only a selector on the control-plane role label is known to.
 */
export function holdsControlPlane(
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
