/**
 * MetalLB's IPAddressPools and L2/BGPAdvertisements as Keelson `[[pools]]` and `[keepalived]`:
 * each pool keeps exactly the addresses MetalLB handed out (`pool_addresses.ts`), is announced
 * the way its advertisements did (BGP over L2 when both), and carries a note for every
 * advertisement setting Keelson cannot keep; a restriction it cannot keep is also reported (the
 * pool is written narrower, never wider). Pure.
 *
 * @module
 */
import type { AddressInterval } from "../config/pool_size.ts";
import { errorMessage } from "../log/error_message.ts";
import { parseRange } from "../net/ip.ts";
import {
  type Entry,
  keyEntry,
  type Note,
  noteEntry,
  type PoolFragment,
  type TableFragment,
} from "./inventory_fragments.ts";
import { selectorText } from "./label_match.ts";
import type { ImportedMachine } from "./machines.ts";
import {
  holdsControlPlane,
  mlb,
  type Parsed,
  type PoolAnnounce,
  unknownFieldNotes,
} from "./metallb_parsed.ts";
import { type IpAddressPool, METALLB_SPECS, type MetallbSelector } from "./metallb_schema.ts";
import { type NodeSelection, poolServing, servingMachinesOf } from "./node_selectors.ts";
import { dotZeroAndBroadcast, keelsonAddresses } from "./pool_addresses.ts";
import { isValidSelector, shellQuote } from "./shell_command.ts";
import { ImportError, type SourceObject } from "./source_objects.ts";
import type { TomlValue } from "./toml_text.ts";

/**
 * `[keepalived]` from the L2Advertisements' interfaces; undefined without an L2Advertisement.
 * @param parsed the objects
 * @returns the table
 */
export function keepalivedTable(parsed: Parsed): TableFragment | undefined {
  if (parsed.l2.length === 0) return undefined;
  const interfaces = new Set(parsed.l2.flatMap((l2) => l2.ad.spec.interfaces ?? []));
  if (interfaces.size === 1) {
    const [only] = interfaces;
    return {
      header: "[keepalived]",
      notes: [],
      entries: [
        noteEntry(
          "From the L2Advertisements' spec.interfaces: the interface keepalived holds the VIPs on.",
        ),
        keyEntry("interface", only!),
      ],
    };
  }
  return {
    header: "[keepalived]",
    notes: [],
    entries: [noteEntry(
      interfaces.size === 0
        ? "MetalLB L2Advertisement spec.interfaces was empty (MetalLB answered ARP/NDP on every " +
          "interface): set the interface keepalived holds the VIPs on; it must carry the " +
          "machines' internal_ips."
        : `MetalLB L2Advertisement spec.interfaces named ${
          [...interfaces].map((i) => `"${i}"`).join(", ")
        }; keepalived holds all VIPs on one interface: set the one that carries the ` +
          "machines' internal_ips.",
      '# interface = "eth0"',
    )],
  };
}

/**
 * MetalLB's reading of one `addresses` entry: a CIDR (Go's net.ParseCIDR masks host bits) or a
 * range of two addresses; a single address is neither.
 * @param text the entry
 * @returns the addresses, or undefined when MetalLB would refuse it
 */
export function metallbEntry(text: string): AddressInterval | undefined {
  const trimmed = text.trim();
  if (!trimmed.includes("/") && !trimmed.includes("-")) return undefined;
  const range = parseRange(trimmed, { hostBits: "mask" });
  return "error" in range
    ? undefined
    : { family: range.family, first: range.first, last: range.last };
}

/**
 * One `[[pools]]` per IPAddressPool.
 * @param parsed the objects
 * @param announce the advertisements of each pool
 * @param machines the machines the Nodes became (empty without Nodes)
 * @param lost receives the restrictions the pools cannot keep
 * @returns the pools, in file order
 * @throws {ImportError} naming the field when an address entry is not MetalLB's
 */
export function poolFragments(
  parsed: Parsed,
  announce: ReadonlyMap<string, PoolAnnounce>,
  machines: readonly ImportedMachine[],
  lost: string[],
): PoolFragment[] {
  return parsed.pools.map(({ object, pool }) => {
    const spec = pool.spec;
    const entries: Entry[] = [
      keyEntry("name", pool.metadata.name),
      ...addressEntries(object, pool),
    ];
    const allocation = spec.serviceAllocation;
    // MetalLB offers the pool to the listed namespaces OR those the selectors match; without a
    // list, Keelson would offer it to every namespace, so it is assigned from on request only
    const unlisted = (allocation?.namespaceSelectors ?? []).length > 0 &&
      (allocation?.namespaces ?? []).length === 0;
    if (unlisted && (spec.autoAssign ?? true)) {
      entries.push(
        noteEntry(
          "auto_assign = false: MetalLB offered this pool only to the namespaces its " +
            "spec.serviceAllocation.namespaceSelectors match, which Keelson cannot select; list " +
            "them in [pools.service_allocation] namespaces, then set auto_assign = true.",
        ),
        keyEntry("auto_assign", false),
      );
    } else entries.push(keyEntry("auto_assign", spec.autoAssign ?? true));
    const how = announce.get(pool.metadata.name)!;
    const { selection, fromPeers, note } = poolServing(how, parsed.peers, machines);
    entries.push(...announceEntries(how, lost, machines, selection));
    if (note !== undefined) entries.push(noteEntry(note));
    if (fromPeers && selection.kind === "inexpressible") {
      entries.push(noteEntry(
        `MetalLB BGPPeers' spec.nodeSelectors (the Nodes that announce this pool): ` +
          unservedText(selection),
      ));
    }
    return {
      header: "[[pools]]",
      name: pool.metadata.name,
      notes: unknownFieldNotes(object, spec, METALLB_SPECS.IPAddressPool.shape),
      entries,
      servingMachines: servingMachinesOf(selection),
      ...(allocation ? { serviceAllocation: serviceAllocation(object, allocation, lost) } : {}),
    };
  });
}

/** `addresses` and `reserved`: exactly the addresses MetalLB handed out. */
function addressEntries(object: SourceObject, pool: IpAddressPool): Entry[] {
  const spec = pool.spec;
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
  const entries: Entry[] = [];
  if (addresses.join() !== spec.addresses.join()) {
    entries.push(noteEntry(
      `From spec.addresses ${JSON.stringify(spec.addresses)}: a CIDR is written as a range ` +
        "where MetalLB handed out its first and last addresses (a Keelson CIDR never does); " +
        "overlapping entries are merged.",
    ));
  }
  entries.push(keyEntry("addresses", addresses));
  if (reserved.length > 0) {
    entries.push(
      noteEntry(
        "From spec.avoidBuggyIPs: the addresses ending in .0 and .255 MetalLB never handed out.",
      ),
      keyEntry("reserved", reserved),
    );
  }
  return entries;
}

/**
 * `announce`, and a note for every advertisement setting Keelson cannot keep; the restrictions
 * among them go to `lost` too (an advertisement of several pools once).
 */
function announceEntries(
  how: PoolAnnounce,
  lost: string[],
  machines: readonly ImportedMachine[],
  selection: NodeSelection,
): Entry[] {
  const entries: Entry[] = [];
  const note = (text: string) => entries.push(noteEntry(text));
  const restriction = (object: SourceObject, field: string, shown: string, what: string) => {
    const sentence = `${object.at(["spec", field])}: ${object.kind} "${object.name}" ` +
      `spec.${field} (${shown}): ${what}`;
    if (!lost.includes(sentence)) lost.push(sentence);
  };
  if (how.bgp.length > 0) {
    note(`From BGPAdvertisement ${how.bgp.map((b) => `"${b.object.name}"`).join(", ")}.`);
    entries.push(keyEntry("announce", "bgp"));
    if (how.l2.length > 0) {
      note(
        `MetalLB announced this pool over L2 as well (L2Advertisement ${
          how.l2.map((l) => `"${l.object.name}"`).join(", ")
        }); Keelson announces a pool one way: BGP here. Write announce = "vrrp" to hold its ` +
          "addresses with keepalived instead.",
      );
    }
  } else if (how.l2.length > 0) {
    note(
      `From L2Advertisement ${how.l2.map((l) => `"${l.object.name}"`).join(", ")}: held by ` +
        "keepalived (VRRP).",
    );
    entries.push(keyEntry("announce", "vrrp"));
  } else {
    note(
      "MetalLB announced this pool nowhere (no L2Advertisement or BGPAdvertisement selected " +
        "it): it assigned its addresses without making them reachable. Keelson serves every " +
        "pool (here with keepalived); remove the pool, or set auto_assign = false, if it " +
        "should stay unreachable.",
    );
    entries.push(keyEntry("announce", "vrrp"));
  }
  // node selectors that did not become served_by: a note, and a restriction where they leave
  // out a control-plane machine that will serve the pool
  const unservedSelectors = (
    object: SourceObject,
    selectors: readonly MetallbSelector[] | null | undefined,
    served: NodeSelection,
    advice: string,
  ) => {
    if ((selectors ?? []).length === 0 || served.kind === "served_by") return;
    note(`${mlb(object, "nodeSelectors", selectors!.map(selectorText))}: ${unservedText(served)}`);
    if (!holdsControlPlane(selectors!, machines)) {
      restriction(
        object,
        "nodeSelectors",
        selectors!.map(selectorText).join(" OR "),
        unservedText(served) + advice,
      );
    }
  };
  // service selectors: Keelson serves every Service of a pool, so a selection is a note and a
  // restriction (the others must move to a pool of their own first)
  const selectedServices = (
    object: SourceObject,
    selectors: readonly MetallbSelector[] | null | undefined,
    advice: string,
  ) => {
    if ((selectors ?? []).length === 0) return;
    note(`${mlb(object, "serviceSelectors", selectors!.map(selectorText))}: ${advice}`);
    restriction(
      object,
      "serviceSelectors",
      selectors!.map(selectorText).join(" OR "),
      "Keelson announces every Service of the pool, not only those selected; move the " +
        "others to a pool of their own before Keelson takes over.",
    );
  };
  for (const { object, ad } of how.l2) {
    entries.push(
      ...unknownFieldNotes(object, ad.spec, METALLB_SPECS.L2Advertisement.shape)
        .map((n) => ({ note: n })),
    );
    const s = ad.spec;
    // a pool announced over BGP is served as its BGP advertisements say
    const l2Selection: NodeSelection = how.bgp.length > 0 ? { kind: "default" } : selection;
    unservedSelectors(
      object,
      s.nodeSelectors,
      l2Selection,
      " Check that they may, or give those Services another pool.",
    );
    selectedServices(
      object,
      s.serviceSelectors,
      "Keelson serves every Service of the pool; move unannounced Services to a pool of their own.",
    );
    if ((s.preferredNodeSelectors ?? []).length > 0) {
      note(
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
    entries.push(
      ...unknownFieldNotes(object, ad.spec, METALLB_SPECS.BGPAdvertisement.shape)
        .map((n) => ({ note: n })),
    );
    const s = ad.spec;
    if (
      s.aggregationLength !== undefined && s.aggregationLength !== null &&
      s.aggregationLength !== 32
    ) {
      note(
        `${mlb(object, "aggregationLength", s.aggregationLength)}: Keelson announces ` +
          "each address as a /32; aggregate at the router.",
      );
    }
    if (
      s.aggregationLengthV6 !== undefined && s.aggregationLengthV6 !== null &&
      s.aggregationLengthV6 !== 128
    ) {
      note(
        `${mlb(object, "aggregationLengthV6", s.aggregationLengthV6)}: Keelson ` +
          "announces each address as a /128; aggregate at the router.",
      );
    }
    unservedSelectors(
      object,
      s.nodeSelectors,
      selection,
      " Choose the serving machines with [pools.served_by].",
    );
    selectedServices(
      object,
      s.serviceSelectors,
      "Keelson announces every Service of the pool; move the others to a pool of their own.",
    );
  }
  return entries;
}

/** What a pool whose node selectors did not become `served_by` is served by, and why. */
function unservedText(selection: NodeSelection): string {
  if (selection.kind === "inexpressible") {
    return `${selection.reason}; the control-plane machines serve the pool.`;
  }
  return "the control-plane machines serve the pool (Keelson's default).";
}

/** `[pools.service_allocation]` from spec.serviceAllocation. */
function serviceAllocation(
  object: SourceObject,
  allocation: NonNullable<IpAddressPool["spec"]["serviceAllocation"]>,
  lost: string[],
): TableFragment {
  const notes: Note[] = [
    { text: "From spec.serviceAllocation." },
    ...unknownFieldNotes(object, allocation, {
      ...METALLB_SPECS.IPAddressPool.shape.serviceAllocation.unwrap().unwrap().shape,
    }),
  ];
  const entries: Entry[] = [];
  if (allocation.priority) entries.push(keyEntry("priority", allocation.priority));
  if ((allocation.namespaces ?? []).length > 0) {
    entries.push(keyEntry("namespaces", allocation.namespaces!));
  }
  const selectors = allocation.serviceSelectors ?? [];
  if (selectors.length > 0) {
    entries.push(keyEntry(
      "service_selectors",
      selectors.map((s): TomlValue => ({
        match_labels: s.matchLabels ?? {},
        match_expressions: (s.matchExpressions ?? []).map((e) => ({
          key: e.key,
          operator: e.operator,
          values: e.values ?? [],
        })),
      })),
    ));
  }
  if ((allocation.namespaceSelectors ?? []).length > 0) {
    const selectors = allocation.namespaceSelectors!;
    const shown = selectors.map(selectorText);
    const printable = selectors.every(isValidSelector);
    entries.push(noteEntry(
      `${mlb(object, "serviceAllocation.namespaceSelectors", shown)}: Keelson does not watch ` +
        "Namespaces; list the namespaces it selects in namespaces" +
        (printable
          ? ` (one command per selector):`
          : " (no command printed: a label key or value is not one Kubernetes accepts)."),
      ...(printable
        ? shown.map((text) => `#   kubectl get namespaces -l ${shellQuote(text)} -o name`)
        : []),
    ));
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
  return { header: "[pools.service_allocation]", notes, entries };
}
