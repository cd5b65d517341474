/**
 * Cross-field checks on the settings around the control plane: the apiserver VIP, keepalived's
 * VRID range and peers, the TLS pair and leader election timings. Folder-internal.
 *
 * @module
 */
import { canonicalIp, type IpFamily, nonUnicastProblem, parseIp, rangeHolds } from "../net/ip.ts";
import type { PoolRange } from "./_check_pools.ts";
import { ADDRESS_KEYS } from "./_check_machines.ts";
import type { RawIssue } from "./_schema_issues.ts";
import { MAX_VRRP_PEERS } from "./schema.ts";
import type { Config, Machine, Pool } from "./types.ts";

/** What these checks read; a section is undefined when it failed the schema. */
export interface ControlPlaneView {
  machines: readonly (Machine | undefined)[];
  pools: readonly (Pool | undefined)[];
  poolRanges: readonly PoolRange[];
  keepalived: Config["keepalived"] | undefined;
  controlPlane: Config["control_plane"] | undefined;
  server: Config["server"] | undefined;
  leaderElection: Config["leader_election"] | undefined;
}

/** client-go's leader elector requires renew_deadline > JITTER_FACTOR × retry_period. */
const JITTER_FACTOR = 1.2;

/**
 * Runs every control-plane check.
 * @param view the sections that passed the schema
 * @returns one issue per problem
 */
export function checkControlPlane(view: ControlPlaneView): RawIssue[] {
  return [
    ...checkVips(view),
    ...checkKeepalived(view),
    ...checkTls(view.server),
    ...checkLeaderElection(view.leaderElection),
  ];
}

/** One of `checkControlPlane`'s checks (run alone by `parse_config.ts`). */
export function checkVips(view: ControlPlaneView): RawIssue[] {
  const issues: RawIssue[] = [];
  const byFamily = new Map<IpFamily, number>();
  for (const [k, vip] of (view.controlPlane?.vip ?? []).entries()) {
    const parsed = parseIp(vip);
    if (parsed === undefined) continue;
    const path = ["control_plane", "vip", k];
    const special = nonUnicastProblem({ ...parsed, first: parsed.value, last: parsed.value });
    if (special !== undefined) {
      issues.push({
        path,
        message: `"${vip}" cannot be the control-plane VIP: ${special}; use a unicast address ` +
          "of the control-plane machines' subnet",
      });
    }
    const first = byFamily.get(parsed.family);
    if (first !== undefined) {
      issues.push({
        path,
        message: `"${vip}" is a second IPv${parsed.family} VIP besides ` +
          `"${
            view.controlPlane!.vip[first]
          }" (control_plane.vip[${first}]); at most one per family`,
      });
    } else byFamily.set(parsed.family, k);
    for (const { pool, entry, range } of view.poolRanges) {
      if (!rangeHolds(range, parsed)) continue;
      issues.push({
        path,
        message: `"${vip}" lies inside "${range.source}" of pool "${view.pools[pool]!.name}" ` +
          `(pools[${pool}].addresses[${entry}]); the control-plane VIP must be outside every pool`,
      });
    }
    for (const [m, machine] of view.machines.entries()) {
      for (const [key, words] of ADDRESS_KEYS) {
        for (const [j, ip] of (machine?.[key] ?? []).entries()) {
          if (canonicalIp(ip) !== canonicalIp(vip)) continue;
          issues.push({
            path,
            message: `"${vip}" is also the ${words} of machine "${machine!.name}" ` +
              `(machines[${m}].${key}[${j}]); the VIP must be an address no machine owns`,
          });
        }
      }
    }
  }
  return issues;
}

/** One of `checkControlPlane`'s checks: the VRID range and the VRRP peers. */
export function checkKeepalived(view: ControlPlaneView): RawIssue[] {
  return [...checkVridRange(view), ...checkKeepalivedPeers(view)];
}

/**
 * The VRID range: in 1..255, in order, room for the groups the model needs. Run alone by
 * `parse_config.ts`, so a bad machine entry does not hide it.
 */
export function checkVridRange(view: ControlPlaneView): RawIssue[] {
  const keepalived = view.keepalived;
  if (keepalived === undefined) return [];
  const issues: RawIssue[] = [];
  const [first, last] = keepalived.vrid_range;
  const path = ["keepalived", "vrid_range"];
  const shown = `[${first}, ${last}]`;
  if (first < 1 || first > 255 || last < 1 || last > 255) {
    issues.push({ path, message: `${shown} is out of range; VRIDs are 1 to 255` });
  } else if (first > last) {
    issues.push({ path, message: `${shown} is reversed; the first VRID must not exceed the last` });
  } else if (keepalived.enabled) {
    const poolFamilies = new Set(view.poolRanges.map((r) => r.range.family));
    // the model reserves the two lowest VRIDs for the control-plane VIPs (one per family) whether
    // or not they are set, and needs at least one Service group after them
    const needed = 2 + Math.max(1, poolFamilies.size);
    const size = last - first + 1;
    if (size < needed) {
      issues.push({
        path,
        message: `${shown} holds ${size} VRID${size === 1 ? "" : "s"} but at least ${needed} ` +
          `are needed: 2 for control_plane.vip and ${needed - 2} for ` +
          "the address families of the pools",
      });
    }
  }
  return issues;
}

/** Whether keepalived has peers to serve with (run alone by `parse_config.ts`). */
export function checkKeepalivedPeers(view: ControlPlaneView): RawIssue[] {
  const keepalived = view.keepalived;
  if (keepalived === undefined) return [];
  const issues: RawIssue[] = [];
  const poolCount = view.pools.filter((p) => p !== undefined).length;
  const vipCount = view.controlPlane?.vip.length ?? 0;
  const hasPeer = view.machines.some((m) =>
    m !== undefined && m.role === "control-plane" && m.state !== "retired" &&
    m.internal_ips.length > 0
  );
  // with a machine that failed the schema, "no peer" could be a false alarm
  const allMachinesValid = view.machines.every((m) => m !== undefined);
  if (keepalived.enabled && (poolCount > 0 || vipCount > 0) && !hasPeer && allMachinesValid) {
    issues.push({
      path: ["keepalived", "enabled"],
      message: `keepalived is enabled for ${poolCount} pool(s) and ${vipCount} control-plane ` +
        "VIP(s) but no control-plane machine (other than retired ones) has internal_ips to act " +
        "as a VRRP peer; add internal_ips to the control-plane machines or set enabled = false",
    });
  } else if (keepalived.enabled) {
    issues.push(...checkVrrpPeers(view));
  }
  return issues;
}

/**
 * What each control-plane host needs to render its keepalived file: with unicast VRRP, an
 * internal IP of every family it serves (it is the source address and every other host's peer);
 * and few enough hosts that each gets its own VRRP priority.
 */
function checkVrrpPeers(view: ControlPlaneView): RawIssue[] {
  const issues: RawIssue[] = [];
  const peers = [...view.machines.entries()].filter(([, m]) =>
    m !== undefined && m.role === "control-plane" && m.state !== "retired"
  ) as [number, Machine][];
  if (peers.length > MAX_VRRP_PEERS) {
    const [index] = peers[MAX_VRRP_PEERS]!;
    issues.push({
      path: ["machines", index, "role"],
      message: `is the control-plane machine number ${MAX_VRRP_PEERS + 1} (not counting ` +
        `retired ones); VRRP priorities give at most ${MAX_VRRP_PEERS} hosts a rank of their own`,
    });
  }
  if (!view.keepalived!.unicast) return issues;
  const families = new Map<IpFamily, string>();
  // addresses announced over BGP are BIRD's: VRRP needs no peer address for them
  const cpOverVrrp = view.controlPlane?.announce !== "bgp";
  for (const vip of cpOverVrrp ? view.controlPlane?.vip ?? [] : []) {
    const family = parseIp(vip)?.family;
    if (family !== undefined) families.set(family, `control_plane.vip "${vip}"`);
  }
  for (const { pool, range } of view.poolRanges) {
    if (view.pools[pool]?.announce === "bgp") continue;
    if (!families.has(range.family)) {
      families.set(range.family, `pool "${view.pools[pool]!.name}" ("${range.source}")`);
    }
  }
  for (const [index, machine] of peers) {
    const own = new Set(machine.internal_ips.map((ip) => parseIp(ip)?.family));
    for (const [family, why] of [...families].sort(([a], [b]) => a - b)) {
      if (own.has(family)) continue;
      issues.push({
        path: ["machines", index, "internal_ips"],
        message: `control-plane machine "${machine.name}" has no IPv${family} address, which ` +
          `unicast VRRP needs as its source and as the other hosts' peer for the IPv${family} ` +
          `VIPs of ${why}; add one, or set [keepalived] unicast = false`,
      });
    }
  }
  return issues;
}

/** One of `checkControlPlane`'s checks (run alone by `parse_config.ts`). */
export function checkTls(server: Config["server"] | undefined): RawIssue[] {
  if (server === undefined) return [];
  const cert = server.tls_cert_file, key = server.tls_key_file;
  if (cert !== undefined && key === undefined) {
    return [{
      path: ["server", "tls_cert_file"],
      message: `is set to "${cert}" but tls_key_file is not; set both or neither`,
    }];
  }
  if (key !== undefined && cert === undefined) {
    return [{
      path: ["server", "tls_key_file"],
      message: `is set to "${key}" but tls_cert_file is not; set both or neither`,
    }];
  }
  return [];
}

/** One of `checkControlPlane`'s checks (run alone by `parse_config.ts`). */
export function checkLeaderElection(election: Config["leader_election"] | undefined): RawIssue[] {
  if (election === undefined || !election.enabled) return [];
  const issues: RawIssue[] = [];
  const { lease_duration: lease, renew_deadline: renew, retry_period: retry } = election;
  if (lease.ms <= renew.ms) {
    issues.push({
      path: ["leader_election", "lease_duration"],
      message: `"${lease.text}" must be longer than renew_deadline "${renew.text}"`,
    });
  }
  if (renew.ms <= JITTER_FACTOR * retry.ms) {
    issues.push({
      path: ["leader_election", "renew_deadline"],
      message:
        `"${renew.text}" must be longer than ${JITTER_FACTOR} × retry_period "${retry.text}" ` +
        `(${JITTER_FACTOR * retry.ms}ms), as client-go's leader election requires`,
    });
  }
  if (retry.ms <= 0) {
    issues.push({
      path: ["leader_election", "retry_period"],
      message: `"${retry.text}" must be above 0`,
    });
  }
  return issues;
}
