/**
 * Reading heartbeat Leases back: which host wrote each, when it was last renewed, whether it is
 * still fresh, and its parsed report. Shared by the leader (VIP-host Events) and `keelson status`.
 *
 * @module
 */
import type { V1Lease } from "@kubernetes/client-node";
import { NAME_REGEXP } from "../config/schema.ts";
import {
  bgpAnnouncedAddresses,
  decodeHostReport,
  HEARTBEAT_LEASE_PREFIX,
  HOST_REPORT_ANNOTATION,
  type HostReport,
} from "./host_report.ts";

/** One host's heartbeat as read from the API. */
export interface Heartbeat {
  host: string;
  /** Last renewal (ms since the epoch); undefined when the Lease has none. */
  renewMs: number | undefined;
  /** How long the heartbeat stays fresh after a renewal. */
  durationMs: number;
  /** The parsed report, or why it could not be parsed. */
  report: HostReport | { error: string };
}

/**
 * Reads one Lease as a heartbeat.
 * @param lease any Lease
 * @returns the heartbeat, or undefined when the Lease is not a heartbeat Lease
 */
export function parseHeartbeatLease(lease: V1Lease): Heartbeat | undefined {
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
    renewMs: timeMs(lease.spec?.renewTime),
    durationMs: (typeof seconds === "number" && seconds > 0 && seconds <= 3600 ? seconds : 15) *
      1000,
    report,
  };
}

/**
 * Whether a heartbeat was renewed within its duration.
 * @param heartbeat the heartbeat
 * @param nowMs current time
 * @returns true while fresh
 */
export function isFresh(heartbeat: Heartbeat, nowMs: number): boolean {
  return heartbeat.renewMs !== undefined && nowMs - heartbeat.renewMs <= heartbeat.durationMs;
}

/**
 * For each VIP, the hosts with a fresh, readable heartbeat that report serving it.
 * @param heartbeats every heartbeat
 * @param nowMs current time
 * @returns VIP -> sorted host names
 */
export function servingHostsByVip(
  heartbeats: readonly Heartbeat[],
  nowMs: number,
): Map<string, string[]> {
  return hostsByAddress(heartbeats, nowMs, (report) => report.vips.map((vip) => vip.ip));
}

/**
 * For each VIP, the hosts with a fresh, readable heartbeat that export it (a /32 or /128) to an
 * Established BGP peer. Several hosts is normal: the routers spread flows over them (ECMP).
 * @param heartbeats every heartbeat
 * @param nowMs current time
 * @returns VIP -> sorted host names
 */
export function bgpHostsByVip(
  heartbeats: readonly Heartbeat[],
  nowMs: number,
): Map<string, string[]> {
  return hostsByAddress(heartbeats, nowMs, (report) => bgpAnnouncedAddresses(report.bgp ?? []));
}

/** Groups the fresh, readable heartbeats' hosts by the addresses `addresses` picks from each. */
function hostsByAddress(
  heartbeats: readonly Heartbeat[],
  nowMs: number,
  addresses: (report: HostReport) => Iterable<string>,
): Map<string, string[]> {
  const result = new Map<string, string[]>();
  for (const heartbeat of heartbeats) {
    if (!isFresh(heartbeat, nowMs) || "error" in heartbeat.report) continue;
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
 * For each VIP, the silent hosts (heartbeat older than its lease) whose last report listed it:
 * the VIP may still be there (Keelson stopped, keepalived did not) or gone with the host.
 * @param heartbeats every heartbeat
 * @param nowMs current time
 * @returns VIP -> sorted host names
 */
export function lastSeenOnSilentHosts(
  heartbeats: readonly Heartbeat[],
  nowMs: number,
): Map<string, string[]> {
  return servingHostsByVip(
    heartbeats.filter((h) => !isFresh(h, nowMs)).map((h) => ({
      ...h,
      renewMs: nowMs,
    })),
    nowMs,
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
 * silent still shows that keepalived runs in this cluster) listing a keepalived instance. Without
 * one (Keelson runs without keepalived, e.g. in-cluster with keepalived from elsewhere) nobody
 * reports VIPs, and "served by no host" would be a false alarm.
 * @param heartbeats every heartbeat
 * @returns true when at least one host reports a data plane
 */
export function anyDataPlaneReported(heartbeats: readonly Heartbeat[]): boolean {
  return heartbeats.some((h) => !("error" in h.report) && h.report.instances.length > 0);
}
