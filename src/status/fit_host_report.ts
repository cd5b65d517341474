/**
 * Cutting a heartbeat report to its bounds (`host_report_limits.ts`) instead of refusing it: a host
 * beyond them still renews its heartbeat, with the lists cut and `omitted` counting what was left
 * out. First to the entry counts, then to the byte size, leaving out first what others also tell
 * (pool usage, which every host reports), then the machines' power (the leader's), then detail
 * (each announcement's VIP list, then the longest BGP peer lists), last the host's own VIPs and
 * announcements (`omitted` counts them as `instances`, the name older readers know). Each list
 * keeps its first entries, so the cut is the same at every renewal while nothing changes.
 *
 * @module
 */
import type { HostReport } from "./host_report.ts";
import {
  MAX_REPORT_BYTES,
  type Omitted,
  OMITTED_RESERVE_BYTES,
  REPORT_LIST_LIMITS as MAX,
} from "./host_report_limits.ts";

/**
 * The report cut to the bounds; the same report (a copy) when within them.
 * @param report the full report
 * @param maxBytes the size to fit in. @default MAX_REPORT_BYTES
 * @returns a report whose lists and JSON size are within the bounds, with `omitted` counts when
 *   anything was left out
 */
export function fitHostReport(report: HostReport, maxBytes = MAX_REPORT_BYTES): HostReport {
  const omitted: Omitted = { ...report.omitted };
  const leftOut = (key: keyof Omitted, n: number) => {
    if (n > 0) omitted[key] = (omitted[key] ?? 0) + n;
  };
  const cut = <T>(list: readonly T[], max: number, key: keyof Omitted): T[] => {
    leftOut(key, Math.max(0, list.length - max));
    return list.slice(0, max);
  };
  // an announcement or peer left out takes its VIPs or routes with it: they are counted too
  const instanceGone = (i: HostReport["announcements"][number]) =>
    leftOut("instance_vips", i.vips.length);
  const peerGone = (p: NonNullable<HostReport["bgp"]>[number]) =>
    leftOut("routes", p.routes.length);
  const { omitted: _, ...rest } = report;
  const restart = report.reload.restart && cut(report.reload.restart, MAX.restart, "restart");
  report.announcements.slice(MAX.instances).forEach(instanceGone);
  report.bgp?.slice(MAX.peers).forEach(peerGone);
  const fitted: HostReport = {
    ...rest,
    announcements: cut(report.announcements, MAX.instances, "instances").map((i) => ({
      ...i,
      vips: cut(i.vips, MAX.instanceVips, "instance_vips"),
    })),
    vips: cut(report.vips, MAX.vips, "vips"),
    reload: { ...report.reload, ...(restart ? { restart } : {}) },
    pools: cut(report.pools, MAX.pools, "pools"),
    ...(report.power ? { power: cut(report.power, MAX.power, "power") } : {}),
    ...(report.bgp
      ? {
        bgp: cut(report.bgp, MAX.peers, "peers").map((p) => ({
          ...p,
          routes: cut(p.routes, MAX.routes, "routes"),
        })),
      }
      : {}),
  };

  let excess = JSON.stringify(fitted).length - (maxBytes - OMITTED_RESERVE_BYTES);
  // cuts the end of `list` until the excess is gone (a JSON array of n entries holds n - 1 commas)
  const shrink = <T>(list: T[], key: keyof Omitted, gone: (entry: T) => void = () => {}) => {
    if (excess <= 0 || list.length === 0) return;
    const prefix = prefixSums(list.map((entry) => JSON.stringify(entry).length));
    const bytes = (k: number) => prefix[k]! + Math.max(0, k - 1);
    let keep = list.length;
    while (keep > 0 && bytes(list.length) - bytes(keep) < excess) keep--;
    excess -= bytes(list.length) - bytes(keep);
    for (const entry of list.splice(keep)) {
      leftOut(key, 1);
      gone(entry);
    }
  };
  if (excess > 0) shrink(fitted.pools, "pools");
  if (excess > 0 && fitted.power) shrink(fitted.power, "power");
  for (let i = fitted.announcements.length - 1; i >= 0 && excess > 0; i--) {
    shrink(fitted.announcements[i]!.vips, "instance_vips");
  }
  if (excess > 0 && fitted.bgp) cutRoutesEvenly(fitted.bgp);
  if (excess > 0) shrink(fitted.vips, "vips");
  if (excess > 0) shrink(fitted.announcements, "instances", instanceGone);
  if (excess > 0 && fitted.bgp) shrink(fitted.bgp, "peers", peerGone);
  if (excess > 0 && fitted.reload.restart) {
    shrink(fitted.reload.restart, "restart");
    if (fitted.reload.restart.length === 0) delete fitted.reload.restart;
  }

  /** Cuts every peer's routes to one length, the longest that frees enough. */
  function cutRoutesEvenly(peers: NonNullable<HostReport["bgp"]>): void {
    const prefix = peers.map((p) => prefixSums(p.routes.map((r) => JSON.stringify(r).length)));
    const bytes = (p: number, k: number) => prefix[p]![k]! + Math.max(0, k - 1);
    const freed = (level: number) =>
      peers.reduce(
        (n, peer, p) =>
          n + bytes(p, peer.routes.length) - bytes(p, Math.min(peer.routes.length, level)),
        0,
      );
    // the longest level that frees at least the excess (level 0 frees everything)
    let lo = 0, hi = Math.max(...peers.map((p) => p.routes.length));
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (freed(mid) >= excess) lo = mid;
      else hi = mid - 1;
    }
    excess -= freed(lo);
    for (const peer of peers) leftOut("routes", peer.routes.splice(lo).length);
  }
  return Object.keys(omitted).length > 0 ? { ...fitted, omitted } : fitted;
}

/** `[0, a, a+b, a+b+c, …]`: the sum of the first k values at index k. */
function prefixSums(values: readonly number[]): number[] {
  const sums = [0];
  for (const v of values) sums.push(sums.at(-1)! + v);
  return sums;
}
