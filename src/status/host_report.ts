/**
 * What each host publishes about its own data plane in its heartbeat Lease
 * (`kube-system/keelson-host-<host>`): each announcer's instances with a protocol-neutral state
 * (`announcements`), the VIPs present on its interface, its configuration-reload state, its version
 * and the pool usage it sees. Written as one compact JSON annotation and parsed strictly when read:
 * a Lease that does not parse is reported as unreadable, never half-used. Its bounds are
 * `host_report_limits.ts`: a report beyond them is cut by the writer (`fit_host_report.ts`), with
 * counts of what it left out, so every report a host publishes is one every reader accepts.
 *
 * @module
 */
import * as z from "zod/v4";
import { BGP_NAME_REGEXP } from "../config/bgp_schema.ts";
import { NAME_REGEXP } from "../config/schema.ts";
import { canonicalIp } from "../net/ip.ts";
import {
  APPLY_STATES,
  fromLegacyFields,
  LEGACY_RELOAD_FIELDS,
  LEGACY_REPORT_FIELDS,
} from "./legacy_report_fields.ts";
import {
  MAX_REPORT_BYTES,
  type Omitted,
  OMITTED_KEYS,
  REPORT_LIST_LIMITS as MAX,
} from "./host_report_limits.ts";

/** The annotation holding the report on the heartbeat Lease. */
export const HOST_REPORT_ANNOTATION = "keelson.io/data-plane";
/** Prefix of heartbeat Lease names; the host's machine name follows. */
export const HEARTBEAT_LEASE_PREFIX = "keelson-host-";
/** Namespace of the heartbeat Leases (next to the leader's Lease). */
export const HEARTBEAT_NAMESPACE = "kube-system";
/** Label on every heartbeat Lease (lets `keelson status` and the leader select them). */
export const HEARTBEAT_LABEL = "keelson.io/heartbeat";
/**
 * Largest annotation accepted when reading, and written (`host_report_limits.ts`). A host holding
 * 1000 IPv4 VIPs, 20 to a VRRP instance, writes about 95 KiB (75 without the older readers'
 * repetition of keepalived's instances); about 2,000 fit whole.
 */
export { MAX_REPORT_BYTES };

const isoTime = z.iso.datetime({ offset: true });
/** A start-only setting's name, e.g. `[bgp] socket`: printable, from a small alphabet. */
const START_ONLY_NAME_REGEXP = /^[A-Za-z0-9_ .,()[\]-]{1,80}$/;
const ip = z.string().max(45).refine((v) => canonicalIp(v) === v, "not a canonical IP");

/** An announcer's name, as its provider calls it. */
const ANNOUNCER_NAME = z.string().regex(/^[a-z][a-z0-9_-]{0,31}$/);

/**
 * Where an announcement stands on this host, in words that fit every way of announcing an
 * address, so that a reader needs no daemon's vocabulary (they are the contract's roles,
 * `src/cloud/host_data_plane.ts`):
 *
 * - `holding`: this host draws the addresses' traffic now (VRRP: the instance is master; BGP: the
 *   routes are exported over an Established session; several BGP hosts holding is normal);
 * - `standby`: ready to draw it, and not drawing it (VRRP: backup; BGP: not reported, a VIP
 *   withdrawn on purpose, e.g. no local endpoint, is in no announcement);
 * - `failed`: cannot draw it until something is repaired (VRRP: fault, an interface or a tracked
 *   check down; BGP: no session it is exported over Established, or no peer takes it);
 * - `stopped`: the daemon stopped announcing it (VRRP: stop; BGP: not reported);
 * - `unknown`: not told, and not to be guessed (BGP: BIRD did not answer the last poll).
 *
 * BIRD's mapping is `providers/baremetal/bird/bgp_announcements.ts`'s.
 *
 * "announced"/"withdrawn" were not chosen: a VRRP backup withdraws nothing and a fault is not a
 * withdrawal on purpose, so the pair would merge what an operator must tell apart.
 */
export const ANNOUNCEMENT_STATES = ["holding", "standby", "failed", "stopped", "unknown"] as const;

/** Schema of one announcement: an instance of an announcer (e.g. a VRRP instance), its state. */
export const AnnouncementReportSchema = z.strictObject({
  /** The announcer that runs it (an entry of `announcers`). */
  announcer: ANNOUNCER_NAME,
  /** Its name in its announcer's file. */
  name: z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/),
  state: z.enum(ANNOUNCEMENT_STATES),
  /** Where the state came from: the daemon told it, or inferred from the addresses. */
  observed: z.enum(["daemon", "addresses"]),
  since: isoTime,
  /** The VIPs it announces (drawn here while `holding`). */
  vips: z.array(ip).max(MAX.instanceVips),
  /** What its VIPs are: the control-plane VIP, or (also when absent) Services' VIPs. */
  serves: z.enum(["control-plane", "services"]).optional(),
});

/**
 * Schema of one BGP session's state (BIRD hosts): the peer's inventory name, whether the session
 * is Established, and the prefixes this host exports to it (VIPs and pod CIDRs, canonical).
 */
export const BgpPeerReportSchema = z.strictObject({
  peer: z.string().regex(BGP_NAME_REGEXP),
  established: z.boolean(),
  routes: z.array(
    z.string().max(49).refine((v) => canonicalPrefix(v) === v, "not a canonical prefix"),
  ).max(MAX.routes),
});

/**
 * Schema of one announcer's last config apply: its name (as its provider calls it) and the
 * outcome; `not_running`: the file was written but no daemon runs to load it.
 */
export const AnnouncerReportSchema = z.strictObject({
  name: ANNOUNCER_NAME,
  apply: z.enum(APPLY_STATES),
});

/** The longest power detail published (an error message, cut). */
export const MAX_POWER_DETAIL = 200;

/**
 * Schema of one machine's power as the publishing host (the leader, which polls the BMCs)
 * observed it; `since` and `answered` are by the host's own clock.
 */
export const PowerReportSchema = z.strictObject({
  machine: z.string().regex(NAME_REGEXP).max(63),
  state: z.enum(["on", "off", "unknown"]),
  /** When the host first saw the current state. */
  since: isoTime,
  /** When the BMC last gave a valid answer; absent when never. */
  answered: isoTime.optional(),
  /** What was seen: printable ASCII, cut by the writer. */
  detail: z.string().max(MAX_POWER_DETAIL).regex(/^[\x20-\x7e]*$/),
});

/**
 * Schema of the report. Fields a reader does not know, at the top and in `reload`, are dropped
 * rather than refused: a newer host may add optional fields (as `bgp` and `power` were added)
 * without every older reader calling its report unreadable during a rolling upgrade. Every field
 * a reader knows is checked strictly; an incompatible change bumps `v`.
 */
export const HostReportSchema = z.object({
  v: z.literal(1),
  host: z.string().regex(NAME_REGEXP).max(63),
  version: z.string().regex(/^[0-9A-Za-z.+-]{1,64}$/),
  /**
   * Each announcer's instances with their states, in the announcers' start order; empty on a host
   * that announces nothing. Older reports list keepalived's in `instances` instead (VRRP's words):
   * the reader fills this in from it (`decodeHostReport`).
   */
  announcements: z.array(AnnouncementReportSchema).max(MAX.instances).optional(),
  /** The field of reports before `announcements` (`legacy_report_fields.ts`). */
  ...LEGACY_REPORT_FIELDS,
  /** VIPs present on the interface, each with the time it appeared. */
  vips: z.array(z.strictObject({ ip, since: isoTime })).max(MAX.vips),
  /** Configuration reload state of this host. */
  reload: z.object({
    ok: z.boolean(),
    /** Last successful load of the inventory. */
    at: isoTime.optional(),
    /** The field of reports before `announcers` (`legacy_report_fields.ts`). */
    ...LEGACY_RELOAD_FIELDS,
    /**
     * Start-only settings the file changed since the host started (`restart_settings.ts`
     * names them): they apply after a restart. Absent when none (and in older reports).
     */
    restart: z.array(z.string().regex(START_ONLY_NAME_REGEXP)).min(1).max(MAX.restart)
      .optional(),
  }),
  /**
   * The inventory in force on this host: the SHA-256 of its file's bytes (`sha256sum`), and when
   * a file with that digest took effect (by the host's clock). Absent in older reports.
   */
  inventory: z.strictObject({
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
    since: isoTime,
  }).optional(),
  /** Pool usage as this host computes it. */
  pools: z.array(z.strictObject({
    pool: z.string().regex(NAME_REGEXP).max(63),
    family: z.enum(["IPv4", "IPv6"]),
    total: z.number().nonnegative(),
    used: z.number().int().nonnegative(),
  })).max(MAX.pools),
  /**
   * Each announcer running on this host with the outcome of its last config apply, in start
   * order; empty on a host that announces nothing. Older reports carry one announcer's outcome
   * in `reload` instead: the reader fills this in from it (`decodeHostReport`).
   */
  announcers: z.array(AnnouncerReportSchema).max(MAX.announcers).optional(),
  /** BGP sessions of this host; absent where BIRD does not run (and in older reports). */
  bgp: z.array(BgpPeerReportSchema).max(MAX.peers).optional(),
  /** Machines' power (the leader, with `[machines.bmc]`); absent when none (and older reports). */
  power: z.array(PowerReportSchema).max(MAX.power).optional(),
  /**
   * Present when the writer cut the report at its bounds: per list, how many entries it left
   * out (`instances` counts announcements; `instance_vips` and `routes` are summed over the
   * announcements and peers). What is not listed is
   * unknown to readers, never absent.
   */
  omitted: z.strictObject(
    Object.fromEntries(OMITTED_KEYS.map((k) => [k, z.number().int().positive().optional()])) as {
      [K in keyof Omitted]-?: z.ZodOptional<z.ZodNumber>;
    },
  ).optional(),
});

/** A report as the annotation holds it, older fields included. */
type PublishedReport = z.infer<typeof HostReportSchema>;
/**
 * One host's data plane, as a host builds it and a reader gets it from `decodeHostReport`: the
 * current shape, without the older fields (`encodeHostReport` adds them).
 */
export type HostReport = Omit<PublishedReport, "instances" | "announcements"> & {
  announcements: AnnouncementReport[];
};
/** One machine's power, as published. */
export type PowerReport = z.infer<typeof PowerReportSchema>;
/** One BGP session's state, as published. */
export type BgpPeerReport = z.infer<typeof BgpPeerReportSchema>;
/** One announcer's last config apply, as published. */
export type AnnouncerReport = z.infer<typeof AnnouncerReportSchema>;
/** One announcement with its state, as published. */
export type AnnouncementReport = z.infer<typeof AnnouncementReportSchema>;
/** Where an announcement stands on its host. */
export type AnnouncementState = (typeof ANNOUNCEMENT_STATES)[number];

/**
 * A prefix with its address in canonical text (`10.0.0.0/24`), or undefined.
 * @param text `address/length`
 */
export function canonicalPrefix(text: string): string | undefined {
  const slash = text.indexOf("/");
  if (slash < 0) return undefined;
  const ip = canonicalIp(text.slice(0, slash));
  const lengthText = text.slice(slash + 1);
  if (!ip || !/^[0-9]{1,3}$/.test(lengthText)) return undefined;
  const length = Number(lengthText);
  if (length > (ip.includes(":") ? 128 : 32)) return undefined;
  return `${ip}/${length}`;
}

/**
 * The addresses a host announces over BGP: host prefixes (/32, /128) exported over an Established
 * session (pod CIDRs are shorter prefixes).
 * @param peers a report's BGP sessions
 * @returns the addresses, each once
 */
export function bgpAnnouncedAddresses(peers: readonly BgpPeerReport[]): string[] {
  const vips = new Set<string>();
  for (const peer of peers) {
    if (!peer.established) continue;
    for (const prefix of peer.routes) {
      const [ip, length] = prefix.split("/");
      if (length === (ip!.includes(":") ? "128" : "32")) vips.add(ip!);
    }
  }
  return [...vips];
}

/**
 * Parses an annotation value strictly.
 * @param text the annotation value
 * @returns the report, or a sentence saying why it is not one
 */
export function decodeHostReport(text: string): HostReport | { error: string } {
  const known = recentlyDecoded.get(text);
  if (known) return known;
  const decoded = decodeUncached(text);
  // a bound, not an eviction order: past it the memo starts again empty
  if (
    recentlyDecoded.size >= RECENTLY_DECODED_MAX ||
    recentlyDecodedChars + text.length > RECENTLY_DECODED_MAX_CHARS
  ) {
    recentlyDecoded.clear();
    recentlyDecodedChars = 0;
  }
  recentlyDecoded.set(text, decoded);
  recentlyDecodedChars += text.length;
  return decoded;
}

/**
 * Decoded annotations by their text. A host renews every two seconds with the same report, and
 * the leader reads every heartbeat at each evaluation (at least once a second): without the memo
 * it would parse and validate the same text over and over while nothing happens. Decoding is pure
 * and its results are never modified, so a text's result can be handed out again.
 */
const recentlyDecoded = new Map<string, HostReport | { error: string }>();
/** Texts remembered at most: a few per host. */
const RECENTLY_DECODED_MAX = 64;
/** Their total length at most: four of the largest a host may write. */
const RECENTLY_DECODED_MAX_CHARS = 4 * MAX_REPORT_BYTES;
let recentlyDecodedChars = 0;

function decodeUncached(text: string): HostReport | { error: string } {
  if (text.length > MAX_REPORT_BYTES) return { error: `larger than ${MAX_REPORT_BYTES} bytes` };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { error: "not JSON" };
  }
  const parsed = HostReportSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { error: `${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}` };
  }
  return fromLegacyFields(parsed.data);
}

/**
 * The heartbeat Lease name of a host.
 * @param host machine name
 * @returns e.g. `keelson-host-cp-1`
 */
export function heartbeatLeaseName(host: string): string {
  return `${HEARTBEAT_LEASE_PREFIX}${host}`;
}
