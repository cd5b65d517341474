/**
 * Cross-field checks on `[cluster] cluster_cidr`: each entry a CIDR, at most one per family
 * (upstream: one CIDR or a dual-stack pair), none overlapping a pool or the control-plane VIP
 * (a Node could then have a Service VIP announced as its pod route), and present whenever a BGP
 * peer receives pod CIDRs (upstream exits when the route controller has no cluster CIDR).
 * Folder-internal.
 *
 * @module
 */
import { parseRange, rangesOverlap } from "../net/ip.ts";
import type { PoolRange } from "./_check_pools.ts";
import type { RawIssue } from "./_schema_issues.ts";
import type { BgpConfig } from "./bgp_schema.ts";
import type { Config, Pool } from "./types.ts";

/** What these checks read; a section is undefined when it failed the schema. */
export interface ClusterCidrView {
  cluster: Config["cluster"] | undefined;
  pools: readonly (Pool | undefined)[];
  poolRanges: readonly PoolRange[];
  controlPlane: Config["control_plane"] | undefined;
  bgp: BgpConfig | undefined;
}

/**
 * Runs the cluster CIDR checks.
 * @param view the sections that passed the schema
 * @returns one issue per problem
 */
export function checkClusterCidr(view: ClusterCidrView): RawIssue[] {
  const issues: RawIssue[] = [];
  const entries = view.cluster?.cluster_cidr ?? [];
  const families = new Set<number>();
  for (const [i, text] of entries.entries()) {
    const path = ["cluster", "cluster_cidr", i];
    const range = parseRange(text);
    if ("error" in range || range.prefix === undefined) {
      issues.push({
        path,
        message: `"${text}" is not a CIDR` + ("error" in range ? `: ${range.error}` : "") +
          ' (write the pods\' range as e.g. "10.244.0.0/16")',
      });
      continue;
    }
    if (families.has(range.family)) {
      issues.push({
        path,
        message: `a second IPv${range.family} CIDR; cluster_cidr holds one CIDR per family ` +
          "(one, or an IPv4 and IPv6 dual-stack pair, as upstream --cluster-cidr)",
      });
    }
    families.add(range.family);
    for (const pool of view.poolRanges) {
      if (!rangesOverlap(range, pool.range)) continue;
      issues.push({
        path,
        message: `"${text}" overlaps pool "${view.pools[pool.pool]?.name}" ` +
          `("${pool.range.source}"): pods and Service VIPs need separate ranges`,
      });
    }
    for (const vip of view.controlPlane?.vip ?? []) {
      const address = parseRange(vip);
      if (!("error" in address) && rangesOverlap(range, address)) {
        issues.push({
          path,
          message: `"${text}" holds the control-plane VIP ${vip}: pods need their own range`,
        });
      }
    }
  }
  if (entries.length === 0) {
    for (const [i, peer] of (view.bgp?.peers ?? []).entries()) {
      if (!peer.pod_cidrs) continue;
      issues.push({
        path: ["bgp", "peers", i, "pod_cidrs"],
        message: `peer "${peer.name}" receives pod CIDRs, so Keelson needs the pods' range: ` +
          'set [cluster] cluster_cidr (e.g. ["10.244.0.0/16"], upstream --cluster-cidr); only ' +
          "pod CIDRs inside it are announced",
      });
    }
  }
  return issues;
}
