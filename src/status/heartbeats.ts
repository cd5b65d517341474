/**
 * Reading heartbeat Leases back: which host wrote each, whether this reader sees it renewed
 * (`observed_freshness.ts`: by when the record changed under this reader's eyes, never by the
 * writer's clock), and its parsed report. Shared by the leader (VIP-host Events, pod routes) and
 * `keelson status`.
 *
 * @module
 */
import type { V1Lease } from "@kubernetes/client-node";
import { NAME_REGEXP } from "../config/schema.ts";
import type { Lister } from "../kube/ports.ts";
import {
  bgpAnnouncedAddresses,
  decodeHostReport,
  HEARTBEAT_LEASE_PREFIX,
  HOST_REPORT_ANNOTATION,
  type HostReport,
} from "./host_report.ts";
import { leaseRecordKey, type Observation, type RecordObserver } from "./observed_freshness.ts";

/** One host's heartbeat Lease as read, not yet judged. */
export interface HeartbeatRecord {
  host: string;
  /**
   * The renewal time the host wrote (ms since the epoch), by the host's own clock: shown as its
   * claim, never judged; undefined when the Lease has none.
   */
  claimedRenewMs: number | undefined;
  /** How long the heartbeat stays fresh after a renewal. */
  durationMs: number;
  /** The parsed report, or why it could not be parsed. */
  report: HostReport | { error: string };
  /** The Lease's record (`leaseRecordKey`): it changes at every renewal. */
  recordKey: string;
  /** The Lease's resourceVersion as read (opaque; "" when absent). */
  resourceVersion: string;
}

/** One host's heartbeat, judged by this reader's observation (`observed_freshness.ts`). */
export interface Heartbeat extends HeartbeatRecord {
  observed: Observation;
}

/**
 * Reads one Lease as a heartbeat.
 * @param lease any Lease
 * @returns the heartbeat, or undefined when the Lease is not a heartbeat Lease
 */
export function parseHeartbeatLease(lease: V1Lease): HeartbeatRecord | undefined {
  const name = lease.metadata?.name ?? "";
  if (!name.startsWith(HEARTBEAT_LEASE_PREFIX)) return undefined;
  const host = name.slice(HEARTBEAT_LEASE_PREFIX.length);
  if (!NAME_REGEXP.test(host)) return undefined;
  const annotation = lease.metadata?.annotations?.[HOST_REPORT_ANNOTATION];
  let report: Heartbeat["report"] = annotation === undefined
    ? { error: `no ${HOST_REPORT_ANNOTATION} annotation` }
    : decodeHostReport(annotation);
  if (!("error" in report) && report.host !== host) {
    report = { error: `the report names host "${report.host}", the Lease "${host}"` };
  }
  const seconds = lease.spec?.leaseDurationSeconds;
  return {
    host,
    claimedRenewMs: timeMs(lease.spec?.renewTime),
    durationMs: (typeof seconds === "number" && seconds > 0 && seconds <= 3600 ? seconds : 15) *
      1000,
    report,
    recordKey: leaseRecordKey(lease),
    resourceVersion: lease.metadata?.resourceVersion ?? "",
  };
}

/**
 * Reads heartbeat Leases and judges each by `observer`: what this read returned is noted first
 * (a heartbeat whose record changed since the last read was renewed now).
 * @param leases Leases of the heartbeat namespace (others are ignored)
 * @param observer the reader's memory of when each record last changed
 * @param complete the list holds every Lease there is (see `RecordObserver.see`)
 * @returns the heartbeats, judged now
 */
export function observeHeartbeats(
  leases: readonly V1Lease[],
  observer: RecordObserver,
  complete: boolean,
): Heartbeat[] {
  const records = leases.map(parseHeartbeatLease).filter((h) => h !== undefined);
  observer.see(
    HEARTBEATS,
    records.map((h) => ({
      id: h.host,
      key: h.recordKey,
      members: "error" in h.report ? [] : h.report.vips.map((v) => v.ip),
    })),
    complete,
  );
  return records.map((h) => ({ ...h, observed: observer.judge(HEARTBEATS, h.host, h.durationMs) }));
}

/** The kind of record heartbeats are to an observer. */
export const HEARTBEATS = "heartbeats";

/**
 * Whether this reader saw the heartbeat renewed within its duration.
 * @param heartbeat the judged heartbeat
 * @returns true while fresh
 */
export function isFresh(heartbeat: Heartbeat): boolean {
  return heartbeat.observed.freshness === "fresh";
}

/**
 * Whether the heartbeat stayed unchanged, under this reader's eyes, for longer than its duration.
 * @param heartbeat the judged heartbeat
 * @returns true when silent
 */
export function isSilent(heartbeat: Heartbeat): boolean {
  return heartbeat.observed.freshness === "silent";
}

/**
 * For each VIP, the hosts with a fresh, readable heartbeat that report serving it, each claim
 * weighed against the others: a host counts only if this reader saw it renew after every other
 * host listing the VIP began to (`vipClaims`).
 * @param heartbeats every heartbeat
 * @returns VIP -> sorted host names
 */
export function servingHostsByVip(heartbeats: readonly Heartbeat[]): Map<string, string[]> {
  const result = new Map<string, string[]>();
  for (const [vip, claims] of vipClaims(heartbeats)) result.set(vip, claims.serving);
  return result;
}

/** The fresh hosts listing one VIP. */
export interface VipClaims {
  /** Hosts that renewed after every other claim began: serving, as far as anyone can tell. */
  serving: string[];
  /**
   * Hosts that have not renewed since another host began to list the VIP: a host that died
   * (its Lease still fresh for up to its duration) looks like this, and so, for up to one
   * renewal period, does a real split brain; neither serving nor not until it renews.
   */
  superseded: string[];
  /**
   * When (this reader's clock) a second host began to list it, while this reader watched:
   * the start of a split brain if the earlier host turns out to be still serving. Undefined with
   * fewer than two listers, or when the second claim began before this reader watched.
   */
  contestedSinceMs: number | undefined;
}

/**
 * For each VIP listed by a fresh, readable heartbeat: which of those hosts serve it. A VIP taken
 * over (VRRP failover) is listed by the new host at once, while the old host's Lease stays fresh
 * for up to its duration if it died: that is no split brain. Its claim is superseded until it
 * renews, still listing the VIP (then both serve it: a split brain), or goes silent.
 * @param heartbeats every heartbeat
 * @returns VIP -> claims, host names sorted
 */
export function vipClaims(heartbeats: readonly Heartbeat[]): Map<string, VipClaims> {
  const listers = hostsByAddress(heartbeats, (report) => report.vips.map((vip) => vip.ip));
  const byHost = new Map(heartbeats.map((h) => [h.host, h]));
  const result = new Map<string, VipClaims>();
  for (const [vip, hosts] of listers) {
    const since = (host: string) => byHost.get(host)!.observed.memberSince.get(vip) ?? -Infinity;
    const renewed = (host: string) => byHost.get(host)!.observed.changedAtMs ?? -Infinity;
    const starts = hosts.map(since).sort((a, b) => a - b);
    const second = starts[1];
    const claims: VipClaims = {
      serving: [],
      superseded: [],
      contestedSinceMs: second !== undefined && Number.isFinite(second) ? second : undefined,
    };
    for (const host of hosts) {
      const current = hosts.every((other) => other === host || since(other) <= renewed(host));
      (current ? claims.serving : claims.superseded).push(host);
    }
    result.set(vip, claims);
  }
  return result;
}

/**
 * For each VIP, the hosts with a fresh, readable heartbeat that export it (a /32 or /128) to an
 * Established BGP peer. Several hosts is normal: the routers spread flows over them (ECMP).
 * @param heartbeats every heartbeat
 * @returns VIP -> sorted host names
 */
export function bgpHostsByVip(heartbeats: readonly Heartbeat[]): Map<string, string[]> {
  return hostsByAddress(heartbeats, (report) => bgpAnnouncedAddresses(report.bgp ?? []));
}

/** Groups the fresh, readable heartbeats' hosts by the addresses `addresses` picks from each. */
function hostsByAddress(
  heartbeats: readonly Heartbeat[],
  addresses: (report: HostReport) => Iterable<string>,
  counts: (heartbeat: Heartbeat) => boolean = isFresh,
): Map<string, string[]> {
  const result = new Map<string, string[]>();
  for (const heartbeat of heartbeats) {
    if (!counts(heartbeat) || "error" in heartbeat.report) continue;
    for (const address of addresses(heartbeat.report)) {
      const hosts = result.get(address) ?? [];
      hosts.push(heartbeat.host);
      result.set(address, hosts);
    }
  }
  for (const hosts of result.values()) hosts.sort();
  return result;
}

/**
 * For each VIP, the hosts not seen renewing (silent, or not yet seen renewing since this reader
 * started) whose last report listed it: the VIP may still be there (Keelson stopped, keepalived
 * did not; or the host is fine and this reader just started) or gone with the host.
 * @param heartbeats every heartbeat
 * @returns VIP -> sorted host names
 */
export function lastSeenOnSilentHosts(heartbeats: readonly Heartbeat[]): Map<string, string[]> {
  return hostsByAddress(
    heartbeats,
    (report) => report.vips.map((vip) => vip.ip),
    (h) => !isFresh(h),
  );
}

/**
 * A MicroTime/Date/string field as milliseconds.
 * @param value a Lease time field
 * @returns ms since the epoch, or undefined
 */
export function timeMs(value: unknown): number | undefined {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : value.getTime();
  if (typeof value === "string") {
    const ms = Date.parse(value);
    return Number.isNaN(ms) ? undefined : ms;
  }
  return undefined;
}

/**
 * Whether any host announces VIPs at all: a readable heartbeat (fresh or not: a host that went
 * silent still shows that an announcer runs in this cluster) listing an announcement (a
 * keepalived instance, a BIRD static protocol). Without one (Keelson runs without its
 * announcers, e.g. in-cluster with keepalived from elsewhere) nobody reports VIPs, and "served
 * by no host" would be a false alarm.
 * @param heartbeats every heartbeat
 * @returns true when at least one host reports a data plane
 */
export function anyDataPlaneReported(heartbeats: readonly Heartbeat[]): boolean {
  return heartbeats.some((h) => !("error" in h.report) && h.report.announcements.length > 0);
}

/** Every host's heartbeat as one reader judges it. */
export interface HeartbeatSource {
  /** @returns every heartbeat Lease, judged now */
  list(): Heartbeat[];
}

/**
 * The heartbeats of a Lease cache judged by one observer, which every reader in the process
 * shares (the VIP-host Events, the pod routes judged from reports): they agree, and each read
 * refines the one memory of when each Lease last changed.
 * @param leases the heartbeat Lease cache
 * @param observer the shared observer
 * @returns the source
 */
export function observedHeartbeats(
  leases: Lister<V1Lease> & { hasSynced(): boolean },
  observer: RecordObserver,
): HeartbeatSource {
  return { list: () => observeHeartbeats(leases.list(), observer, leases.hasSynced()) };
}

/**
 * The fresh hosts whose report was cut at its bounds where VIPs are listed (`omitted` VIPs, BGP
 * routes or peers): a VIP nobody lists may be among what they left out, so it is unknown, never
 * unserved.
 * @param heartbeats every heartbeat
 * @returns host names, sorted
 */
export function partialHosts(heartbeats: readonly Heartbeat[]): string[] {
  return heartbeats.filter((h) => {
    if (!isFresh(h) || "error" in h.report) return false;
    const o = h.report.omitted;
    return (o?.vips ?? 0) + (o?.routes ?? 0) + (o?.peers ?? 0) > 0;
  }).map((h) => h.host).sort();
}
