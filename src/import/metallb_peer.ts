/**
 * One MetalLB BGPPeer as a Keelson `[[bgp.peers]]`: its address, AS, the control-plane machines
 * that peer with it (from its node selectors), multihop, BFD, password file, the pools it
 * received and the communities and local preference its advertisements sent, its timers; a note
 * for every setting Keelson has not. A peer Keelson cannot take as written (no address, no AS,
 * node selectors it cannot resolve) is left out: written commented out under the note saying what
 * to fill in. Pure.
 *
 * @module
 */
import {
  type Entry,
  keyEntry,
  type Note,
  noteEntry,
  type TableFragment,
} from "./inventory_fragments.ts";
import { selectorText, selects } from "./label_match.ts";
import type { ImportedMachine } from "./machines.ts";
import { holdsControlPlane, mlb, type PoolAnnounce, unknownFieldNotes } from "./metallb_parsed.ts";
import { type BgpPeer, METALLB_SPECS, type MetallbSelector } from "./metallb_schema.ts";
import { isNamespaceName, isObjectName, shellQuote } from "./shell_command.ts";
import type { SourceObject } from "./source_objects.ts";

const FRR_MULTIHOP_TTL = 255;
const BGP_PORT = 179;

/** What every peer is translated against. */
export interface PeerSetting {
  /** `[bgp] asn`; undefined when no BGPPeer gave one. */
  hostAsn: number | undefined;
  /** The pools announced over BGP, in file order. */
  bgpPools: readonly string[];
  /** The advertisements of each pool. */
  announce: ReadonlyMap<string, PoolAnnounce>;
  /** Community aliases and values by MetalLB's name. */
  aliases: ReadonlyMap<string, string>;
  /** The machines the Nodes became (empty without Nodes). */
  machines: readonly ImportedMachine[];
  /** Receives the restrictions a peer cannot keep. */
  lost: string[];
  /** Receives the BGPAdvertisements whose attributes a peer took. */
  applied: Set<SourceObject>;
}

/** A peer being translated: the keys, the notes above them, why it is left out. */
interface PeerDraft {
  object: SourceObject;
  peer: BgpPeer;
  /** The pools MetalLB announced to this peer. */
  pools: string[];
  body: Entry[];
  notes: Note[];
  /** The first reason the peer cannot be in force as written. */
  disabled: string | undefined;
}

/**
 * One `[[bgp.peers]]`.
 * @param object the BGPPeer as read
 * @param peer its spec
 * @param setting what every peer is translated against
 * @returns the table; left out (commented) when Keelson cannot take it as written
 */
export function peerFragment(
  object: SourceObject,
  peer: BgpPeer,
  setting: PeerSetting,
): TableFragment {
  const draft: PeerDraft = {
    object,
    peer,
    pools: setting.bgpPools.filter((pool) =>
      setting.announce.get(pool)!.bgp.some(({ ad }) =>
        (ad.spec.peers ?? []).length === 0 || ad.spec.peers!.includes(peer.metadata.name)
      )
    ),
    body: [],
    notes: [],
    disabled: undefined,
  };
  addressAndAsn(draft, setting.hostAsn);
  peerHosts(draft, setting);
  const spec = peer.spec;
  if (spec.ebgpMultiHop) {
    draft.notes.push({
      text: `From spec.ebgpMultiHop: multihop with FRR's default TTL ${FRR_MULTIHOP_TTL}.`,
    });
    draft.body.push(keyEntry("multihop", FRR_MULTIHOP_TTL));
  }
  if (spec.bfdProfile) {
    draft.body.push(keyEntry("bfd", true));
    draft.notes.push({ text: `From spec.bfdProfile "${spec.bfdProfile}": timers in [bgp] bfd.` });
  }
  draft.body.push(...passwordEntries(object, spec));
  peerPools(draft, setting.bgpPools);
  peerAttributes(draft, setting);
  timers(draft);
  draft.notes.push(
    ...unsupportedNotes(object, spec),
    ...unknownFieldNotes(object, spec, METALLB_SPECS.BGPPeer.shape),
  );
  return {
    header: "[[bgp.peers]]",
    notes: draft.notes,
    entries: draft.body,
    ...(draft.disabled === undefined
      ? {}
      : { leftOut: { text: `${draft.disabled}\nThis peer is left out until then:` } }),
  };
}

/** `name`, `address` and `asn`, or placeholders and the reason the peer is left out. */
function addressAndAsn(draft: PeerDraft, hostAsn: number | undefined): void {
  const { object, peer, body, notes } = draft;
  const spec = peer.spec;
  body.push(keyEntry("name", peer.metadata.name));
  if (spec.peerAddress) body.push(keyEntry("address", spec.peerAddress));
  else if (spec.interface) {
    draft.disabled = `${mlb(object, "interface", spec.interface)}: an unnumbered session over ` +
      "an interface; Keelson peers with an address only. Write the router's address and " +
      "uncomment.";
    body.push(keyEntry("address", "192.0.2.1"));
  }
  if (spec.peerASN) body.push(keyEntry("asn", spec.peerASN));
  else if (spec.dynamicASN === "internal" && hostAsn !== undefined) {
    notes.push({
      text: `${mlb(object, "dynamicASN", "internal")}: an iBGP peer, so its AS is the hosts'.`,
    });
    body.push(keyEntry("asn", spec.myASN));
  } else {
    draft.disabled ??= spec.dynamicASN
      ? `${mlb(object, "dynamicASN", spec.dynamicASN)}: Keelson needs the peer's AS number; ` +
        "write it and uncomment."
      : `MetalLB BGPPeer "${object.name}" has no spec.peerASN; write the peer's AS number and ` +
        "uncomment.";
    body.push(keyEntry("asn", 64512));
  }
  if (hostAsn !== undefined && spec.myASN !== hostAsn) {
    notes.push({
      text: `${mlb(object, "myASN", spec.myASN)}: MetalLB spoke as another AS to this peer. ` +
        `Keelson's hosts speak as [bgp] asn (${hostAsn}), or per machine with ` +
        "bgp = { asn = … } on the machines that peer with it.",
    });
  }
  if (spec.localASN) {
    notes.push({
      text: `${mlb(object, "localASN", spec.localASN)}: no per-peer local-as in Keelson; ` +
        "set bgp = { asn = … } on the machines that peer with it instead.",
    });
  }
}

/** `hosts` or `zones` from spec.nodeSelectors: the machines that run BIRD and peer. */
function peerHosts(draft: PeerDraft, setting: PeerSetting): void {
  const { object, body, notes } = draft;
  const selectors = draft.peer.spec.nodeSelectors ?? [];
  const disable = (why: string) => draft.disabled ??= why;
  if (selectors.length === 0) return;
  const shown = selectors.map(selectorText).join(" OR ");
  const { machines } = setting;
  const controlPlane = machines.filter((m) => m.role === "control-plane" || m.runsBird);
  if (machines.length > 0) {
    const hosts = controlPlane.filter((m) => selectors.some((s) => selects(s, m.labels)));
    if (hosts.length === controlPlane.length) {
      notes.push({
        text: `From spec.nodeSelectors (${shown}): every control-plane machine peers.`,
      });
    } else if (hosts.length === 0) {
      disable(
        `${mlb(object, "nodeSelectors", shown)}: selects no control-plane Node nor one a BGP ` +
          "pool's served_by selects, and only those run BIRD in Keelson. Name the hosts that " +
          "should peer and uncomment.",
      );
      body.push(keyEntry("hosts", []));
    } else {
      notes.push({
        text: `From spec.nodeSelectors (${shown}): the Nodes it selected that run BIRD.`,
      });
      body.push(keyEntry("hosts", hosts.map((m) => m.name)));
    }
    return;
  }
  // no Nodes read: a selector on the control-plane role label selects the machines that peer
  if (holdsControlPlane(selectors, [])) {
    notes.push({ text: `From spec.nodeSelectors (${shown}): every control-plane machine peers.` });
    return;
  }
  // a selector on the zone label alone still says which zones peer
  const zones = zoneSelection(selectors);
  if (zones !== undefined) {
    notes.push({ text: `From spec.nodeSelectors (${shown}).` });
    body.push(keyEntry("zones", zones));
    return;
  }
  // every control-plane machine would peer: wider than the selector, so the peer waits
  disable(
    `${mlb(object, "nodeSelectors", shown)}: import with --kubeconfig to resolve it, or list ` +
      "the control-plane machines that peer with it in hosts, and uncomment.",
  );
  setting.lost.push(
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

/** Where to write the password, and the command that does it from the Secret. */
function passwordEntries(object: SourceObject, spec: BgpPeer["spec"]): Entry[] {
  const file = `/etc/keelson/bgp/${object.name.replace(/[^A-Za-z0-9._-]/g, "_")}.key`;
  if (spec.password) {
    return [noteEntry(
      `MetalLB BGPPeer "${object.name}" spec.password (not copied here): write it to ${file}\n` +
        "(mode 0600, owner keelson, the password alone), then uncomment:",
      `# password_file = "${file}"`,
    )];
  }
  if (!spec.passwordSecret?.name) return [];
  const ns = spec.passwordSecret.namespace ?? "metallb-system";
  const secret = spec.passwordSecret.name;
  const printable = isObjectName(secret) && isNamespaceName(ns);
  const target = shellQuote(file);
  return [noteEntry(
    `MetalLB BGPPeer "${object.name}" spec.passwordSecret ${JSON.stringify(`${ns}/${secret}`)}: ` +
      "write the password to the file, then uncomment" +
      (printable
        ? ":"
        : " (no command printed: the name or namespace is not one Kubernetes accepts)."),
    ...(printable
      ? [
        `#   kubectl get secret -n ${shellQuote(ns)} ${shellQuote(secret)} ` +
        `-o jsonpath='{.data.password}' | base64 -d > ${target} && chmod 0600 ${target}`,
      ]
      : []),
    `# password_file = "${file}"`,
  )];
}

/** `pools`: the BGP pools this peer received, when not all. */
function peerPools(draft: PeerDraft, bgpPools: readonly string[]): void {
  if (draft.pools.length === bgpPools.length) return;
  if (draft.pools.length === 0) {
    draft.notes.push({
      text: `MetalLB announced no pool to BGPPeer "${draft.object.name}" (every ` +
        "BGPAdvertisement's spec.peers names other peers); Keelson sends a peer every BGP pool " +
        "unless pools lists some. Remove this peer if it should get none.",
    });
    return;
  }
  draft.body.push(
    noteEntry("From the BGPAdvertisements' spec.peers: the pools this peer received."),
    keyEntry("pools", draft.pools),
  );
}

/** `communities` and `local_preference` from the advertisements of this peer's pools. */
function peerAttributes(draft: PeerDraft, setting: PeerSetting): void {
  const ads = draft.pools.flatMap((pool) =>
    setting.announce.get(pool)!.bgp.filter(({ ad }) =>
      (ad.spec.peers ?? []).length === 0 || ad.spec.peers!.includes(draft.object.name)
    ).map((a) => ({ pool, ...a }))
  );
  if (ads.length === 0) return;
  for (const { object } of ads) setting.applied.add(object);
  const resolve = (c: string) => setting.aliases.get(c) ?? communityValue(c);
  const sets = ads.map(({ ad }) =>
    new Set((ad.spec.communities ?? []).map((c) => resolve(c) ?? c))
  );
  const common = [...sets[0]!].filter((c) => sets.every((s) => s.has(c)));
  if (common.length > 0) {
    draft.body.push(
      noteEntry("From the BGPAdvertisements' spec.communities (Keelson tags per peer)."),
      keyEntry("communities", common),
    );
  }
  for (const [i, { object, pool }] of ads.entries()) {
    const extra = [...sets[i]!].filter((c) => !common.includes(c));
    if (extra.length > 0) {
      draft.notes.push({
        text: `${mlb(object, "communities", extra)}: only on pool "${pool}"; Keelson tags ` +
          "every route to a peer alike. Split the pools onto peers, or tag them at the router.",
      });
    }
  }
  const prefs = new Set(ads.map(({ ad }) => ad.spec.localPref ?? 0));
  const [pref] = prefs;
  const spec = draft.peer.spec;
  const ibgp = spec.peerASN === setting.hostAsn || spec.dynamicASN === "internal";
  if (prefs.size === 1 && pref !== 0 && ibgp) {
    draft.body.push(
      noteEntry("From the BGPAdvertisements' spec.localPref."),
      keyEntry("local_preference", pref!),
    );
  } else if (prefs.size > 1 || (pref !== 0 && !ibgp)) {
    draft.notes.push({
      text: `MetalLB BGPAdvertisements spec.localPref = ${[...prefs].join(", ")} toward this ` +
        "peer: Keelson sends one local preference per peer, and only to iBGP peers.",
    });
  }
}

/** `hold_time` and `keepalive_time`, as MetalLB derived them. */
function timers(draft: PeerDraft): void {
  const { object, body, notes } = draft;
  const spec = draft.peer.spec;
  // v1beta1's timers are not pointers: the API prints "0s" for one never set
  const unset = (text: string | null | undefined) =>
    !text || (object.apiVersion === "metallb.io/v1beta1" && goDurationSeconds(text) === 0);
  const hold = unset(spec.holdTime) ? undefined : goDurationSeconds(spec.holdTime!);
  const keep = unset(spec.keepaliveTime) ? undefined : goDurationSeconds(spec.keepaliveTime!);
  if (!unset(spec.holdTime) && hold === undefined) {
    notes.push({
      text: `${mlb(object, "holdTime", spec.holdTime)}: not a duration this importer reads.`,
    });
  }
  if (!unset(spec.keepaliveTime) && keep === undefined) {
    notes.push({
      text: `${
        mlb(object, "keepaliveTime", spec.keepaliveTime)
      }: not a duration this importer reads.`,
    });
  }
  if (hold === undefined && keep === undefined) {
    if (unset(spec.holdTime) && unset(spec.keepaliveTime)) {
      notes.push({
        text: "MetalLB left this peer's holdTime and keepaliveTime to its BGP daemon; Keelson " +
          "uses [bgp] hold_time and keepalive_time (9 s and 3 s by default).",
      });
    }
    return;
  }
  // MetalLB derives the missing one: keepalive = hold / 3, hold = keepalive × 3
  const holdSeconds = Math.floor(hold ?? keep! * 3);
  const keepSeconds = Math.floor(keep ?? (hold! / 3));
  if (holdSeconds === 0) {
    notes.push({
      text: `${mlb(object, "holdTime", spec.holdTime ?? "")}: 0 turns keepalives off; Keelson ` +
        "always keeps them (hold_time 3 s at least). [bgp] hold_time applies.",
    });
    return;
  }
  body.push(keyEntry("hold_time", holdSeconds));
  if (keepSeconds >= 1) body.push(keyEntry("keepalive_time", keepSeconds));
  if (holdSeconds !== hold || (keep !== undefined && keepSeconds !== keep)) {
    notes.push({
      text: `${mlb(object, "holdTime", spec.holdTime ?? "")}: rounded down to whole seconds.`,
    });
  }
}

/** Notes for the BGPPeer settings Keelson has no key for, each with what to do instead. */
function unsupportedNotes(object: SourceObject, spec: BgpPeer["spec"]): Note[] {
  const notes: Note[] = [];
  const note = (field: keyof typeof spec, what: string) => {
    const value = spec[field];
    if (value === undefined || value === null || value === false || value === "") return;
    notes.push({ text: `${mlb(object, field, value)}: ${what}` });
  };
  if (
    spec.peerPort !== undefined && spec.peerPort !== null && spec.peerPort !== 0 &&
    spec.peerPort !== BGP_PORT
  ) {
    note("peerPort", "Keelson (BIRD) always connects to port 179; make the router listen there.");
  }
  note(
    "sourceAddress",
    "set bgp = { source_address = … } on each machine that peers with it (one address per host).",
  );
  note(
    "routerID",
    "Keelson's router id is per machine: bgp = { router_id = … } (default: its first internal " +
      "IPv4).",
  );
  note(
    "connectTime",
    "Keelson has one retry timer for every peer: [bgp] connect_retry_time (seconds).",
  );
  note(
    "enableGracefulRestart",
    "Keelson is graceful-restart aware by default; to restart gracefully itself set [bgp] " +
      'graceful_restart = "on" and start BIRD with -R (deploy/systemd/bird.service.d/).',
  );
  note("vrf", "Keelson peers from the hosts' default VRF only; route the peer there.");
  note("disableMP", "Keelson always runs MP-BGP, all [bgp] families over one session per peer.");
  return notes;
}

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

/**
 * A MetalLB community value as Keelson writes it: `A:B`, or `A:B:C` for `large:A:B:C`.
 * @param text the value
 * @returns the value, or undefined when it is neither
 */
export function communityValue(text: string): string | undefined {
  if (/^\d{1,5}:\d{1,5}$/.test(text)) return text;
  const large = /^large:(\d{1,10}:\d{1,10}:\d{1,10})$/.exec(text);
  return large ? large[1] : undefined;
}
